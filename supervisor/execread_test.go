package supervisor

import (
	"encoding/binary"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/filter"
)

// fakeMem is an address space holding data at base; everything else is unmapped.
type fakeMem struct {
	base uint64
	data []byte
}

func (f fakeMem) readPages(pages []uint64, dst [][]byte) (int, error) {
	total := 0
	for i, addr := range pages {
		if addr < f.base || addr >= f.base+uint64(len(f.data)) {
			return total, unix.EFAULT
		}
		n := copy(dst[i], f.data[addr-f.base:])
		total += n
		if n < len(dst[i]) {
			return total, nil
		}
	}
	return total, nil
}

// layout builds a process image: strings, then the argv and envp arrays.
type layout struct {
	ps   int
	base uint64
	buf  []byte
}

func (l *layout) str(s string) uint64 {
	at := l.base + uint64(len(l.buf))
	l.buf = append(l.buf, s...)
	l.buf = append(l.buf, 0)
	return at
}

func (l *layout) vec(ptrs ...uint64) uint64 {
	at := l.base + uint64(len(l.buf))
	for _, p := range append(ptrs, 0) {
		if l.ps == 4 {
			l.buf = binary.LittleEndian.AppendUint32(l.buf, uint32(p))
		} else {
			l.buf = binary.LittleEndian.AppendUint64(l.buf, p)
		}
	}
	return at
}

func TestDecodeExec(t *testing.T) {
	for _, ps := range []int{8, 4} {
		l := &layout{ps: ps, base: 0x10000}
		path := l.str("/usr/bin/vllm")
		a0, a1, a2 := l.str("vllm"), l.str("serve"), l.str("caf\xe9 \xff not utf-8")
		e0 := l.str("PADDOCK_ALLOW_OVERBUDGET_VRAM=1")
		argv := l.vec(a0, a1, a2)
		envp := l.vec(e0)
		mem := fakeMem{base: l.base, data: l.buf}
		e := decodeExec(mem, filter.Execve, ps, [6]uint64{path, argv, envp}, make([]byte, execBufSize), nil)
		if e.Err != nil || e.Path != "/usr/bin/vllm" || len(e.Argv) != 3 || e.Argv[2] != "caf\xe9 \xff not utf-8" || len(e.Env) != 1 || e.Truncated {
			t.Fatalf("ps %d: decoded %+v", ps, e)
		}
		// execveat takes its path, argv and envp one argument later.
		e = decodeExec(mem, filter.Execveat, ps, [6]uint64{uint64(0xffffff9c), path, argv, envp}, make([]byte, execBufSize), nil)
		if e.Err != nil || e.Path != "/usr/bin/vllm" || len(e.Argv) != 3 {
			t.Fatalf("ps %d: execveat decoded %+v", ps, e)
		}
		// The environment is left unread when the decision will not look at it.
		skip := func(string, []string) bool { return false }
		e = decodeExec(mem, filter.Execve, ps, [6]uint64{path, argv, envp}, make([]byte, execBufSize), skip)
		if e.Err != nil || len(e.Argv) != 3 || e.Env != nil || e.Watched {
			t.Fatalf("ps %d: decoded %+v with the environment skipped", ps, e)
		}
		// ...and read, and the exec marked as watched, when it will.
		watch := func(string, []string) bool { return true }
		e = decodeExec(mem, filter.Execve, ps, [6]uint64{path, argv, envp}, make([]byte, execBufSize), watch)
		if e.Err != nil || len(e.Env) != 1 || !e.Watched {
			t.Fatalf("ps %d: decoded %+v for a decision that looks at the environment", ps, e)
		}
		// A NULL argv and envp are empty (Linux accepts them).
		e = decodeExec(mem, filter.Execve, ps, [6]uint64{path, 0, 0}, make([]byte, execBufSize), nil)
		if e.Err != nil || len(e.Argv) != 0 || len(e.Env) != 0 {
			t.Fatalf("ps %d: NULL vectors decoded %+v", ps, e)
		}
		// A pointer into unmapped memory is an error: the exec is refused.
		e = decodeExec(mem, filter.Execve, ps, [6]uint64{0xdead0000, argv, envp}, make([]byte, execBufSize), nil)
		if e.Err == nil {
			t.Fatalf("ps %d: a bad path pointer decoded without error: %+v", ps, e)
		}
	}
	// With 4-byte pointers the upper half of a register is ignored, as the kernel does.
	l := &layout{ps: 4, base: 0x10000}
	path := l.str("/bin/true")
	mem := fakeMem{base: l.base, data: l.buf}
	if e := decodeExec(mem, filter.Execve, 4, [6]uint64{0xffffffff00000000 | path}, make([]byte, execBufSize), nil); e.Err != nil || e.Path != "/bin/true" {
		t.Fatalf("compat path with junk upper bits: %+v", e)
	}
}

// countingMem counts the reads a decode makes.
type countingMem struct {
	fakeMem
	calls int
}

func (c *countingMem) readPages(pages []uint64, dst [][]byte) (int, error) {
	c.calls++
	return c.fakeMem.readPages(pages, dst)
}

// TestDecodeExecReadsTogether: the path's page and the argv array's are read
// in one call, and the strings' pages in one more when they are elsewhere;
// each read is a process_vm_readv, the largest cost of an exec's decision.
func TestDecodeExecReadsTogether(t *testing.T) {
	for _, tc := range []struct {
		name      string
		stringsAt uint64 // page offset of the argv strings: 0 with the path, 2 on a page of their own
		want      int
	}{
		{"strings beside the path", 0, 1},
		{"strings on a third page", 2, 2},
	} {
		data := make([]byte, 3*pageSize)
		base := uint64(0x10000)
		put := func(off uint64, s string) uint64 {
			copy(data[off:], s+"\x00")
			return base + off
		}
		path := put(0, "/usr/bin/true")
		a0 := put(tc.stringsAt*pageSize+64, "true")
		a1 := put(tc.stringsAt*pageSize+96, "--version")
		argv := uint64(pageSize + 128) // the array, on the second page
		binary.LittleEndian.PutUint64(data[argv:], a0)
		binary.LittleEndian.PutUint64(data[argv+8:], a1)
		mem := &countingMem{fakeMem: fakeMem{base: base, data: data}}
		e := decodeExec(mem, filter.Execve, 8, [6]uint64{path, base + argv, 0}, make([]byte, execBufSize), nil)
		if e.Err != nil || e.Path != "/usr/bin/true" || len(e.Argv) != 2 || e.Argv[1] != "--version" {
			t.Fatalf("%s: decoded %+v", tc.name, e)
		}
		if mem.calls != tc.want {
			t.Errorf("%s: %d reads, want %d", tc.name, mem.calls, tc.want)
		}
	}
}

// TestDecodeExecBounds: a 3 MiB argv is read up to the bounds, not crashed on.
func TestDecodeExecBounds(t *testing.T) {
	l := &layout{ps: 8, base: 0x10000}
	path := l.str("/bin/echo")
	big := l.str(strings.Repeat("x", 200<<10)) // longer than MAX_ARG_STRLEN
	var ptrs []uint64
	ptrs = append(ptrs, l.str("echo"))
	for i := 0; i < 20; i++ {
		ptrs = append(ptrs, big)
	}
	argv := l.vec(ptrs...)
	mem := fakeMem{base: l.base, data: l.buf}
	e := decodeExec(mem, filter.Execve, 8, [6]uint64{path, argv, 0}, make([]byte, execBufSize), nil)
	if e.Err != nil || !e.Truncated || e.Argv[0] != "echo" {
		t.Fatalf("decoded %v, truncated %v, %d args", e.Err, e.Truncated, len(e.Argv))
	}
	total := 0
	for _, a := range e.Argv {
		total += len(a)
	}
	if total > maxBytes || len(e.Argv) > maxStrings {
		t.Fatalf("read %d bytes in %d strings, past the bounds", total, len(e.Argv))
	}
}

// FuzzDecodeExec: the decoder takes any memory and any pointers without
// panicking, and never reads past its bounds.
func FuzzDecodeExec(f *testing.F) {
	l := &layout{ps: 8, base: 0x10000}
	p := l.str("/bin/sh")
	a := l.vec(l.str("sh"), l.str("-c"), l.str("reboot"))
	f.Add(l.buf, uint64(p), uint64(a), uint64(0), false)
	f.Add([]byte{0, 0, 0, 0}, uint64(0x10000), uint64(0x10000), uint64(0x10000), true)
	f.Add([]byte("no nul anywhere"), uint64(0x10000), uint64(0x10004), uint64(0), false)
	f.Fuzz(func(t *testing.T, data []byte, path, argv, envp uint64, compat bool) {
		ps := 8
		if compat {
			ps = 4
		}
		e := decodeExec(fakeMem{base: 0x10000, data: data}, filter.Execve, ps, [6]uint64{path, argv, envp}, make([]byte, execBufSize), nil)
		if e == nil {
			t.Fatal("nil result")
		}
		if len(e.Path) > maxPath || len(e.Argv)+len(e.Env) > maxStrings {
			t.Fatalf("past the bounds: path %d bytes, %d strings", len(e.Path), len(e.Argv)+len(e.Env))
		}
		total := 0
		for _, s := range append(append([]string{}, e.Argv...), e.Env...) {
			total += len(s)
		}
		if total > maxBytes {
			t.Fatalf("read %d bytes of strings, past %d", total, maxBytes)
		}
	})
}
