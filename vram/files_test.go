package vram

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fileCases makes the files SafeFiles is tested on, in dir: a GGUF model,
// a FIFO without a writer, a directory, a symbolic link to the FIFO, and
// names /dev/zero and a missing file.
func fileCases(t *testing.T, dir string) {
	t.Helper()
	writeGGUF(t, filepath.Join(dir, "model.gguf"))
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "dir.gguf"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("fifo", filepath.Join(dir, "link.gguf")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("model.gguf", filepath.Join(dir, "linked-model.gguf")); err != nil {
		t.Fatal(err)
	}
}

func TestSafeFiles(t *testing.T) {
	dir := t.TempDir()
	fileCases(t, dir)
	st, err := os.Stat(filepath.Join(dir, "model.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string // relative: under dir, through resolve
		size    int64
		errHas  string // "" : the GGUF reads
		notReg  bool
		missing bool
	}{
		{name: "regular GGUF", path: "model.gguf", size: st.Size()},
		{name: "symlink to the GGUF", path: "linked-model.gguf", size: st.Size()},
		{name: "FIFO without a writer", path: "fifo", errHas: "fifo is a named pipe, not a regular file", notReg: true},
		{name: "symlink to a FIFO", path: "link.gguf", errHas: "link.gguf is a named pipe, not a regular file", notReg: true},
		{name: "directory", path: "dir.gguf", errHas: "dir.gguf is a directory, not a regular file", notReg: true},
		{name: "/dev/zero", path: "/dev/zero", errHas: "/dev/zero is a character device, not a regular file", notReg: true},
		{name: "/dev/urandom", path: "/dev/urandom", errHas: "/dev/urandom is a character device, not a regular file", notReg: true},
		{name: "missing", path: "nothing.gguf", errHas: "nothing.gguf: no such file or directory", missing: true},
	}
	resolve := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	const timeout = 5 * time.Second
	f := SafeFiles(resolve, ReadLimits{Timeout: timeout})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			size, serr := f.Size(tc.path)
			var info GGUFInfo
			r, oerr := f.Open(tc.path)
			if oerr == nil {
				info, oerr = ReadGGUF(r)
				if err := r.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			}
			// Promptly: long before the deadline (a plain open of the FIFO
			// never returns, a plain read of /dev/zero reads 64 MiB).
			if d := time.Since(start); d > timeout/2 {
				t.Errorf("took %v", d)
			}
			for _, c := range []struct {
				what string
				err  error
			}{{"Size", serr}, {"Open", oerr}} {
				if tc.errHas == "" {
					if c.err != nil {
						t.Errorf("%s: %v", c.what, c.err)
					}
					continue
				}
				if c.err == nil || !strings.Contains(c.err.Error(), tc.errHas) {
					t.Errorf("%s: error %v, want one containing %q", c.what, c.err, tc.errHas)
					continue
				}
				if strings.Contains(c.err.Error(), dir) {
					t.Errorf("%s: error %q names the resolved path", c.what, c.err)
				}
				if errors.Is(c.err, ErrNotRegular) != tc.notReg || errors.Is(c.err, os.ErrNotExist) != tc.missing {
					t.Errorf("%s: error %v: ErrNotRegular %v, ErrNotExist %v", c.what, c.err, errors.Is(c.err, ErrNotRegular), errors.Is(c.err, os.ErrNotExist))
				}
			}
			if tc.errHas == "" {
				if size != tc.size {
					t.Errorf("Size = %d, want %d", size, tc.size)
				}
				if info.BlockCount != 32 || info.HeadCountKV != 8 {
					t.Errorf("GGUF %+v", info)
				}
			}
		})
	}
}

// A FIFO that has a writer opens without blocking even for a plain open;
// SafeFiles must still refuse it (reading it would wait on the writer).
func TestSafeFilesFIFOWithWriter(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(p, os.O_RDWR, 0) // RDWR: does not wait for a reader
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := SafeFiles(nil, ReadLimits{}).Open(p)
	if err == nil {
		r.Close()
		t.Fatal("FIFO with a writer opened")
	}
	if !errors.Is(err, ErrNotRegular) {
		t.Errorf("error %v, want ErrNotRegular", err)
	}
}

func TestSafeFilesByteBound(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m.gguf")
	writeGGUF(t, p)
	tests := []struct {
		max    int64
		errHas string
	}{
		{max: 10, errHas: "stopped after 10 bytes"},
		{max: 0}, // the default bound: the whole header
	}
	for _, tc := range tests {
		r, err := SafeFiles(nil, ReadLimits{MaxBytes: tc.max}).Open(p)
		if err != nil {
			t.Fatal(err)
		}
		_, err = ReadGGUF(r)
		r.Close()
		if tc.errHas == "" && err != nil || tc.errHas != "" && (err == nil || !strings.Contains(err.Error(), tc.errHas)) {
			t.Errorf("max %d: error %v, want %q", tc.max, err, tc.errHas)
		}
	}
}

// The deadline is tested on a read that really blocks in the kernel: the
// reader is given the read end of an empty pipe whose writer stays open (a
// descriptor SafeFiles itself would refuse, standing in for a stalled FUSE
// or NFS file). Read must answer at the deadline; the stuck goroutine must
// close the descriptor once its read returns.
func TestSafeReaderDeadline(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[1])
	const timeout = 200 * time.Millisecond
	r := &safeReader{fd: p[0], path: "/m/model.gguf", deadline: time.Now().Add(timeout), timeout: timeout, max: 1 << 20, left: 1 << 20}
	start := time.Now()
	n, err := r.Read(make([]byte, 16))
	took := time.Since(start)
	if n != 0 || err == nil || err.Error() != "reading /m/model.gguf: gave up after 200ms" {
		t.Fatalf("Read = %d, %v; want the deadline error", n, err)
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("%v is not os.ErrDeadlineExceeded", err)
	}
	if took < timeout || took > timeout+time.Second {
		t.Errorf("Read returned after %v, want about %v", took, timeout)
	}
	if _, err2 := r.Read(make([]byte, 16)); err2 != err {
		t.Errorf("second Read: %v, want the same error", err2)
	}
	if err := r.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	// The read end is still open: the abandoned read holds it.
	if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_GETFD, 0); err != nil {
		t.Fatalf("read end closed under the stuck read: %v", err)
	}
	// Release the stuck read: its goroutine closes the read end.
	if _, err := unix.Write(p[1], []byte("x")); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_GETFD, 0); err == unix.EBADF {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the abandoned read did not close its descriptor")
		}
	}
}

func TestWithin(t *testing.T) {
	release := make(chan struct{})
	abandoned := make(chan int, 1)
	start := time.Now()
	_, ok, _ := within(nil, time.Now().Add(50*time.Millisecond), func() int { <-release; return 7 }, func(v int) { abandoned <- v })
	if ok || time.Since(start) > time.Second {
		t.Fatalf("within = %v after %v, want false at the deadline", ok, time.Since(start))
	}
	close(release)
	select {
	case v := <-abandoned:
		if v != 7 {
			t.Errorf("abandoned %d, want 7", v)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("abandon not called")
	}
	if v, ok, _ := within(nil, time.Now().Add(time.Second), func() int { return 3 }, nil); !ok || v != 3 {
		t.Errorf("within = %d, %v; want 3, true", v, ok)
	}
}

// Stalled reads are bounded: with every slot held by a read the kernel
// has not returned (a FIFO with no writer, read blocking, stands in for a
// stalled FUSE file), the next Size fails at once saying why, and a slot
// is free again once a stalled read returns.
func TestReadSlotsBoundStalledReads(t *testing.T) {
	slots := NewReadSlots(2)
	release := make(chan struct{})
	for range 2 {
		if _, ok, busy := within(slots, time.Now().Add(10*time.Millisecond), func() int { <-release; return 0 }, nil); ok || busy {
			t.Fatalf("a stalled call: ok %v busy %v, want given up at its deadline", ok, busy)
		}
	}
	path := filepath.Join(t.TempDir(), "model.gguf")
	if err := os.WriteFile(path, []byte("GGUF"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := SafeFiles(nil, ReadLimits{Slots: slots})
	_, err := f.Size(path)
	var be *busyError
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "2 reads of files are still waiting") {
		t.Fatalf("Size with every slot stalled: %v; want it refused at once, saying why", err)
	}
	close(release) // the stalled calls return; their slots come back
	for range 2 {
		slots.c <- struct{}{} // blocks until a slot is free: the event, not a wait
	}
	<-slots.c
	<-slots.c
	if n, err := f.Size(path); err != nil || n != 4 {
		t.Errorf("Size once the stalls ended: %d, %v", n, err)
	}
}

// The estimator's sentence with SafeFiles' errors, and no hang on a FIFO.
func TestEstimateLlamaCppUnreadableModel(t *testing.T) {
	dir := t.TempDir()
	fileCases(t, dir)
	tests := []struct {
		model, warn string
	}{
		{filepath.Join(dir, "fifo"), "cannot read the model file " + dir + "/fifo (" + dir + "/fifo is a named pipe, not a regular file): estimated from its name"},
		{"/dev/zero", "cannot read the model file /dev/zero (/dev/zero is a character device, not a regular file): estimated from its name"},
		{filepath.Join(dir, "none.gguf"), "cannot read the model file " + dir + "/none.gguf (stat " + dir + "/none.gguf: no such file or directory): estimated from its name"},
	}
	for _, tc := range tests {
		done := make(chan Estimate, 1)
		go func() {
			est, _ := estimateCommand([]string{"llama-server", "-m", tc.model, "-ngl", "99"}, nil, NewBudget(Host{}, Settings{}), SafeFiles(nil, ReadLimits{}))
			done <- est
		}()
		select {
		case est := <-done:
			if !strings.Contains(strings.Join(est.Warnings, "\n"), tc.warn) {
				t.Errorf("%s: warnings %q, want %q", tc.model, est.Warnings, tc.warn)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: estimate still running after 10s", tc.model)
		}
	}
}

var _ io.ReadCloser = (*safeReader)(nil)
