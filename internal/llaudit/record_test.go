package llaudit

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

// The records below are as Linux 6.18 wrote them (multicast copies read by
// this package's reader), but for those marked made up, written the way
// the kernel writes untrusted strings (hexadecimal when they hold a space).

func TestSplitStamp(t *testing.T) {
	tests := []struct {
		text   string
		serial uint64
		when   time.Time
		body   string
		bad    bool
	}{
		{text: `audit(1796471403.571:10): domain=1384abd7f blockers=ptrace`, serial: 10,
			when: time.Unix(1796471403, 571e6), body: "domain=1384abd7f blockers=ptrace"},
		{text: `audit(1796471403.579:11): `, serial: 11, when: time.Unix(1796471403, 579e6), body: ""},
		{text: `audit(1796471403.579:11):`, serial: 11, when: time.Unix(1796471403, 579e6), body: ""},
		{text: `type=1423 audit(1.000:1): x=1`, bad: true},
		{text: `audit(1796471403:10): x=1`, bad: true},
		{text: `audit(1796471403.57:10): x=1`, bad: true},
		{text: `audit(1796471403.571): x=1`, bad: true},
		{text: `audit(1796471403.571:10 x=1`, bad: true},
	}
	for _, tt := range tests {
		st, body, err := splitStamp(tt.text)
		if tt.bad {
			if !errors.Is(err, errMalformed) {
				t.Errorf("splitStamp(%q) = %v, %q, %v; want errMalformed", tt.text, st, body, err)
			}
			continue
		}
		if err != nil || st.Serial != tt.serial || !st.When.Equal(tt.when) || body != tt.body {
			t.Errorf("splitStamp(%q) = %v, %q, %v; want serial %d at %v, %q", tt.text, st, body, err, tt.serial, tt.when, tt.body)
		}
	}
}

func TestParseAccess(t *testing.T) {
	tests := []struct {
		body string
		want Denial
		bad  bool
	}{
		{body: `domain=1384abd7f blockers=ptrace opid=4562 ocomm="sleep"`,
			want: Denial{Domain: 0x1384abd7f, Blockers: []string{"ptrace"}, Target: 4562, TargetComm: "sleep"}},
		{body: `domain=1384abd7f blockers=scope.signal opid=4562 ocomm="sleep"`,
			want: Denial{Domain: 0x1384abd7f, Blockers: []string{"scope.signal"}, Target: 4562, TargetComm: "sleep"}},
		{body: `domain=1384abd80 blockers=fs.write_file path="/proc/4562/oom_score_adj" dev="proc" ino=7144836`,
			want: Denial{Domain: 0x1384abd80, Blockers: []string{"fs.write_file"}, Path: "/proc/4562/oom_score_adj", Dev: "proc", Ino: 7144836}},
		{body: `domain=1384abd89 blockers=scope.abstract_unix_socket path=00706164646F636B2D626561636F6E2D78797A`,
			want: Denial{Domain: 0x1384abd89, Blockers: []string{"scope.abstract_unix_socket"}, Path: "@paddock-beacon-xyz"}},
		// Made up: a name with a space is hexadecimal, unquoted.
		{body: `domain=1 blockers=ptrace opid=7 ocomm=6D7920636F6D6D`,
			want: Denial{Domain: 1, Blockers: []string{"ptrace"}, Target: 7, TargetComm: "my comm"}},
		{body: `domain=2 blockers=fs.write_file,fs.truncate path=2F746D702F6120622F63 dev="vda" ino=12`,
			want: Denial{Domain: 2, Blockers: []string{"fs.write_file", "fs.truncate"}, Path: "/tmp/a b/c", Dev: "vda", Ino: 12}},
		// Made up: no path= key, no path.
		{body: `domain=3 blockers=fs.change_topology name="/mnt" dev="tmpfs" ino=1`,
			want: Denial{Domain: 3, Blockers: []string{"fs.change_topology"}, Dev: "tmpfs", Ino: 1}},
		{body: `blockers=ptrace opid=1`, bad: true},
		{body: `domain=zz blockers=ptrace`, bad: true},
		{body: `domain=1`, bad: true},
	}
	for _, tt := range tests {
		got, err := parseAccess(Stamp{}, tt.body)
		if tt.bad {
			if !errors.Is(err, errMalformed) {
				t.Errorf("parseAccess(%q) = %+v, %v; want errMalformed", tt.body, got, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseAccess(%q) = %+v, %v\nwant %+v", tt.body, got, err, tt.want)
		}
	}
}

func TestParseDomain(t *testing.T) {
	got, err := parseDomain(Stamp{}, `domain=1384abd7f status=allocated mode=enforcing pid=4577 uid=65534 exe="/tmp/llexp/ll" comm="ll"`)
	want := Domain{ID: 0x1384abd7f, Status: "allocated", Pid: 4577, UID: 65534, Exe: "/tmp/llexp/ll", Comm: "ll"}
	if err != nil || got != want {
		t.Errorf("allocated: %+v, %v; want %+v", got, err, want)
	}
	got, err = parseDomain(Stamp{}, `domain=1384abd7f status=deallocated denials=2`)
	want = Domain{ID: 0x1384abd7f, Status: "deallocated", Denials: 2}
	if err != nil || got != want {
		t.Errorf("deallocated: %+v, %v; want %+v", got, err, want)
	}
	if _, err := parseDomain(Stamp{}, `status=allocated pid=1`); !errors.Is(err, errMalformed) {
		t.Errorf("a record without domain: %v, want errMalformed", err)
	}
}

func TestParseSyscall(t *testing.T) {
	got, err := parseSyscall(`arch=c000003e syscall=257 success=no exit=-13 a0=ffffff9c a1=7f4a84ffb680 a2=80002 a3=0 items=0 ppid=4583 pid=4584 auid=4294967295 uid=65534 comm="python3" exe="/usr/bin/python3.11" key=(null)`)
	want := syscallFacts{pid: 4584, comm: "python3", exe: "/usr/bin/python3.11", arch: 0xc000003e, nr: 257, exit: -13}
	if err != nil || got != want {
		t.Errorf("parseSyscall = %+v, %v; want %+v", got, err, want)
	}
	if _, err := parseSyscall(`arch=c000003e syscall=257 pid=0`); !errors.Is(err, errMalformed) {
		t.Errorf("a record without a pid: %v, want errMalformed", err)
	}
}

func TestParseListener(t *testing.T) {
	got := parseListener(`pid=14679 uid=0 auid=4294967295 tty=(none) ses=4294967295 comm="ll" exe="/tmp/llexp/ll" nl-mcgrp=1 op=connect res=1`)
	if got != (listener{pid: 14679, comm: "ll", op: "connect"}) {
		t.Errorf("parseListener = %+v", got)
	}
}
