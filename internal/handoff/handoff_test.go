package handoff

import (
	"errors"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func pair(t *testing.T) (int, int) {
	t.Helper()
	p, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(p[0]); unix.Close(p[1]) })
	return p[0], p[1]
}

func TestRoundTrip(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "listener")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, b := pair(t)
	tests := []Msg{
		{Kind: Listener, Fd: int(f.Fd())},
		{Kind: Listener, Fd: int(f.Fd()), Wall: "landlock_restrict_self: EPERM"},
		{Kind: Trace, Tid: 4242, Why: "seccomp listener unavailable: EBUSY"},
		{Kind: Trace, Tid: 4242, Why: "--backend ptrace", Wall: "the kernel has no Landlock"},
		{Kind: GoAhead},
	}
	for _, m := range tests {
		if err := Send(a, m); err != nil {
			t.Fatal(err)
		}
		got, err := Recv(b)
		if err != nil {
			t.Fatalf("%v: %v", m.Kind, err)
		}
		if got.Kind != m.Kind || got.Tid != m.Tid || got.Why != m.Why || got.Wall != m.Wall {
			t.Fatalf("sent %+v, received %+v", m, got)
		}
		if m.Kind != Listener {
			if got.Fd != -1 {
				t.Fatalf("%v: a descriptor %d came with it", m.Kind, got.Fd)
			}
			continue
		}
		var st1, st2 unix.Stat_t
		if got.Fd < 0 || unix.Fstat(got.Fd, &st2) != nil || unix.Fstat(m.Fd, &st1) != nil || st1.Ino != st2.Ino {
			t.Fatalf("listener: received descriptor %d is not the file sent", got.Fd)
		}
		if flags, _ := unix.FcntlInt(uintptr(got.Fd), unix.F_GETFD, 0); flags&unix.FD_CLOEXEC == 0 {
			t.Error("the received listener is not close-on-exec")
		}
		unix.Close(got.Fd)
	}
}

func TestRecvRejects(t *testing.T) {
	tests := []struct {
		name string
		raw  []byte
		want string
	}{
		{"unknown kind", []byte{'X'}, "malformed unknown message"},
		{"listener without descriptor", []byte{'L'}, "malformed listener"},
		{"short trace", []byte{'T', 1, 2}, "malformed trace request"},
		{"go-ahead with junk", []byte{'G', 'G'}, "malformed go-ahead"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := pair(t)
			if _, err := unix.Write(a, tc.raw); err != nil {
				t.Fatal(err)
			}
			if _, err := Recv(b); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Recv = %v, want an error with %q", err, tc.want)
			}
		})
	}
	p, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[1])
	unix.Close(p[0])
	if _, err := Recv(p[1]); !errors.Is(err, ErrClosed) {
		t.Fatalf("Recv after close = %v, want ErrClosed", err)
	}
	if err := Send(p[1], Msg{Kind: 'Z'}); err == nil {
		t.Fatal("Send of an unknown kind succeeded")
	}
}
