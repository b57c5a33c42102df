package llaudit

import (
	"encoding/binary"
	"reflect"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// nlmsg is one netlink message of type typ holding text, unpadded, as the
// kernel's multicast copies of audit records are.
func nlmsg(typ uint16, text string) []byte {
	b := make([]byte, unix.NLMSG_HDRLEN+len(text))
	binary.NativeEndian.PutUint32(b[0:4], uint32(len(b)))
	binary.NativeEndian.PutUint16(b[4:6], typ)
	copy(b[unix.NLMSG_HDRLEN:], text)
	return b
}

// rec is one record as the reader gets it.
type rec struct {
	typ  uint16
	text string
}

// TestEvents: the reader ties each denial to its domain and to the
// process its event's AUDIT_SYSCALL record names, and hands on only the
// denials of the domains Ours claims, once their event is complete: at
// its AUDIT_EOE, or, for an event without an audit context (no SYSCALL,
// no EOE), when its hold is over. The sequences are as Linux 6.18 logged
// them.
func TestEvents(t *testing.T) {
	const (
		ours  = `domain=1384abd7f status=allocated mode=enforcing pid=4577 uid=65534 exe="/usr/bin/paddock" comm="paddock"`
		other = `domain=99 status=allocated mode=enforcing pid=12 uid=0 exe="/usr/bin/codex" comm="codex"`
	)
	tests := []struct {
		name    string
		records []rec
		expire  bool // the holds are over at the end
		want    []Denial
	}{
		{name: "with a context: ACCESS, DOMAIN, SYSCALL, PROCTITLE, EOE",
			records: []rec{
				{typeAccess, `audit(1796471403.571:10): domain=1384abd7f blockers=ptrace opid=4562 ocomm="sleep"`},
				{typeDomain, `audit(1796471403.571:10): ` + ours},
				{typeSyscall, `audit(1796471403.571:10): arch=c000003e syscall=257 success=no exit=-13 ppid=4583 pid=4584 uid=65534 comm="python3" exe="/usr/bin/python3.11" key=(null)`},
				{unix.AUDIT_PROCTITLE, `audit(1796471403.571:10): proctitle=707974686F6E33`},
				{typeEOE, `audit(1796471403.571:10): `},
			},
			want: []Denial{{Stamp: Stamp{When: time.Unix(1796471403, 571e6), Serial: 10}, Domain: 0x1384abd7f, Blockers: []string{"ptrace"},
				Target: 4562, TargetComm: "sleep", Caller: 4584, Comm: "python3", Exe: "/usr/bin/python3.11", Arch: 0xc000003e, Syscall: 257, Exit: -13}},
		},
		{name: "without a context: each record its own serial, handed on when the hold is over",
			records: []rec{
				{typeAccess, `audit(1796471403.571:10): domain=1384abd7f blockers=scope.signal opid=4562 ocomm="sleep"`},
				{typeDomain, `audit(1796471403.571:11): ` + ours},
			},
			expire: true,
			want: []Denial{{Stamp: Stamp{When: time.Unix(1796471403, 571e6), Serial: 10}, Domain: 0x1384abd7f, Blockers: []string{"scope.signal"},
				Target: 4562, TargetComm: "sleep"}},
		},
		{name: "without a context, the hold not over: nothing yet",
			records: []rec{
				{typeAccess, `audit(1796471403.571:10): domain=1384abd7f blockers=scope.signal opid=4562 ocomm="sleep"`},
				{typeDomain, `audit(1796471403.571:11): ` + ours},
			},
		},
		{name: "another domain (the agent's own nested sandbox) is not handed on",
			records: []rec{
				{typeAccess, `audit(1.000:20): domain=99 blockers=fs.read_file path="/etc/shadow" dev="vda" ino=5`},
				{typeDomain, `audit(1.000:20): ` + other},
				{typeEOE, `audit(1.000:20): `},
			},
		},
		{name: "a domain whose allocated record never came is not handed on",
			records: []rec{
				{typeAccess, `audit(1.000:20): domain=42 blockers=ptrace opid=1 ocomm="systemd"`},
				{typeEOE, `audit(1.000:20): `},
			},
		},
		{name: "interleaved events of two processes, later denials of a known domain",
			records: []rec{
				{typeAccess, `audit(1.000:30): domain=1384abd7f blockers=ptrace opid=5 ocomm="a"`},
				{typeDomain, `audit(1.000:30): ` + ours},
				{typeAccess, `audit(1.001:31): domain=1384abd7f blockers=ptrace opid=6 ocomm="b"`},
				{typeSyscall, `audit(1.001:31): arch=c000003e syscall=257 exit=-13 pid=71 comm="ps"`},
				{typeSyscall, `audit(1.000:30): arch=c000003e syscall=257 exit=-13 pid=70 comm="cat"`},
				{typeEOE, `audit(1.001:31): `},
				{typeEOE, `audit(1.000:30): `},
				{typeAccess, `audit(1.002:32): domain=99 blockers=ptrace opid=7 ocomm="c"`},
				{typeEOE, `audit(1.002:32): `},
			},
			want: []Denial{
				{Stamp: Stamp{When: time.Unix(1, 1e6), Serial: 31}, Domain: 0x1384abd7f, Blockers: []string{"ptrace"}, Target: 6, TargetComm: "b",
					Caller: 71, Comm: "ps", Arch: 0xc000003e, Syscall: 257, Exit: -13},
				{Stamp: Stamp{When: time.Unix(1, 0), Serial: 30}, Domain: 0x1384abd7f, Blockers: []string{"ptrace"}, Target: 5, TargetComm: "a",
					Caller: 70, Comm: "cat", Arch: 0xc000003e, Syscall: 257, Exit: -13},
			},
		},
		{name: "garbage is skipped",
			records: []rec{
				{typeAccess, `not a record`},
				{typeSyscall, `audit(1.000:40): pid=1`},
				{typeEOE, `audit(x): `},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []Denial
			r := &Reader{domains: map[uint64]bool{}, marks: map[string]chan struct{}{}, o: Options{
				Ours:   func(d Domain) bool { return d.Pid == 4577 && d.Exe == "/usr/bin/paddock" },
				Denied: func(d Denial) { got = append(got, d) },
			}}
			for _, rc := range tt.records {
				r.messages(nlmsg(rc.typ, rc.text))
			}
			if tt.expire {
				r.completeDue(time.Now().Add(holdEvent))
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("handed on\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

// TestMark: the AUDIT_EVENT_LISTENER record of a Sync's own bind (its
// thread named for it) hands on every held event, whatever its hold, and
// releases that Sync; one of another thread, or a disconnect, does
// neither.
func TestMark(t *testing.T) {
	var got []Denial
	r := &Reader{domains: map[uint64]bool{0x10: true}, marks: map[string]chan struct{}{}, o: Options{Denied: func(d Denial) { got = append(got, d) }}}
	mark := make(chan struct{})
	r.marks["paddock-s1"] = mark
	r.messages(nlmsg(typeAccess, `audit(1.000:1): domain=10 blockers=ptrace opid=5 ocomm="a"`))
	r.messages(nlmsg(typeListener, `audit(1.000:2): pid=77 uid=0 comm="paddock" nl-mcgrp=1 op=connect res=1`))
	r.messages(nlmsg(typeListener, `audit(1.000:3): pid=77 uid=0 comm="paddock-s1" nl-mcgrp=1 op=disconnect res=1`))
	select {
	case <-mark:
		t.Fatal("released by another thread's record, or a disconnect")
	default:
	}
	if len(got) != 0 {
		t.Fatalf("handed on before the mark: %+v", got)
	}
	r.messages(nlmsg(typeListener, `audit(1.000:4): pid=77 uid=0 auid=4294967295 tty=(none) ses=4294967295 comm="paddock-s1" exe="/usr/bin/paddock" nl-mcgrp=1 op=connect res=1`))
	select {
	case <-mark:
	default:
		t.Fatal("the Sync's own record did not release it")
	}
	if len(got) != 1 || got[0].Target != 5 {
		t.Errorf("handed on %+v, want the held denial of opid 5", got)
	}
}

// TestMessages: a datagram of several messages, padded to the netlink
// alignment as replies are, is read message by message; a length past
// the datagram is cut to it.
func TestMessages(t *testing.T) {
	var got []int
	r := &Reader{domains: map[uint64]bool{1: true}, marks: map[string]chan struct{}{}, o: Options{Denied: func(d Denial) { got = append(got, d.Target) }}}
	a := nlmsg(typeAccess, `audit(1.000:1): domain=1 blockers=ptrace opid=5 ocomm="a"`)
	for len(a)%unix.NLMSG_ALIGNTO != 0 {
		a = append(a, 0)
	}
	b := nlmsg(typeEOE, `audit(1.000:1): `)
	binary.NativeEndian.PutUint32(b[0:4], uint32(len(b)+100))
	r.messages(append(a, b...))
	if !reflect.DeepEqual(got, []int{5}) {
		t.Errorf("handed on %v, want [5]", got)
	}
}
