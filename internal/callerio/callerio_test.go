package callerio

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestWriteNow: a pipe with room takes the message at once; a full pipe,
// blocking as a caller's descriptor may be, leaves all of it for later
// instead of blocking.
func TestWriteNow(t *testing.T) {
	rd, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	defer wr.Close()
	raw, err := wr.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var fd int
	_ = raw.Control(func(f uintptr) { fd = int(f) })
	msg := []byte("paddock refused kill(SIGTERM) of pid 1: a test's message\n")
	if _, err := unix.Pwritev2(fd, [][]byte{msg[:1]}, -1, unix.RWF_NOWAIT); errors.Is(err, unix.EOPNOTSUPP) {
		t.Skipf("needs RWF_NOWAIT on pipes: %v", err)
	}
	if rest := WriteNow(fd, msg[1:]); len(rest) != 0 {
		t.Fatalf("a pipe with room left %q unwritten", rest)
	}
	got := make([]byte, len(msg))
	if _, err := rd.Read(got); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("the pipe holds %q (%v), want %q", got, err, msg)
	}

	// Fill the pipe without blocking, then make the description blocking
	// again, as the caller's would be.
	if err := unix.SetNonblock(fd, true); err != nil {
		t.Fatal(err)
	}
	fill := make([]byte, 4096)
	for {
		if _, err := unix.Write(fd, fill); err != nil {
			if !errors.Is(err, unix.EAGAIN) {
				t.Fatal(err)
			}
			break
		}
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		t.Fatal(err)
	}
	if rest := WriteNow(fd, msg); !bytes.Equal(rest, msg) {
		t.Errorf("a full pipe: %q left, want all of the message", rest)
	}
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK != 0 {
		t.Errorf("the description's flags after WriteNow: %#x, %v; want it blocking still", fl, err)
	}
}

// A descriptor nothing reads any more (a pipe whose reader closed) is not
// written: the write would raise SIGPIPE in paddock, which as an init
// passes it on to its agent. WriteAll says so instead of failing with
// EPIPE, and WriteNow leaves the message whole.
func TestNoReaderNotWritten(t *testing.T) {
	rd, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer wr.Close()
	rd.Close()
	fd := int(wr.Fd())
	if err := WriteAll(fd, []byte("paddock refused ...\n")); !errors.Is(err, ErrNoReader) {
		t.Errorf("WriteAll to a pipe nobody reads: %v, want ErrNoReader (not a write that fails with EPIPE)", err)
	}
	msg := []byte("paddock refused ...\n")
	if rest := WriteNow(fd, msg); len(rest) != len(msg) {
		t.Errorf("WriteNow to a pipe nobody reads left %d bytes, want all %d", len(rest), len(msg))
	}
}
