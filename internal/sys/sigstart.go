package sys

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// runtimeSigSymbol is where the Go runtime keeps, for each signal, the
// disposition the process started with (runtime/signal_unix.go, fwdSig):
// the runtime replaces most of them with its own handler before any
// package's code runs, and this table is the only record of the originals.
const runtimeSigSymbol = "runtime.fwdSig"

// sigTableLen is the number of entries of that table on Linux (_NSIG).
const sigTableLen = 65

// IgnoredAtStart reports the signals that were ignored (SIG_IGN) when this
// process started, as a mask with bit N-1 for signal N, so that a program
// that execs others (an init, a wrapper under nohup or a shell's `trap ”`)
// can pass them on as it got them. The Go runtime keeps an inherited
// SIG_IGN only for SIGHUP and SIGINT (os/signal.Ignored tells those);
// for the other signals it installs its own handler at start, and the
// original is read here from the runtime's table, found through the
// executable's symbol table. A binary without one (linked with -s) gives an
// error, and the caller knows only what os/signal.Ignored tells.
func IgnoredAtStart() (uint64, error) {
	addr, err := symbolAddress("/proc/self/exe", runtimeSigSymbol, sigTableLen*8)
	if err != nil {
		return 0, err
	}
	mem, err := os.Open("/proc/self/mem")
	if err != nil {
		return 0, fmt.Errorf("read the runtime's signal table: %w", err)
	}
	defer mem.Close()
	buf := make([]byte, sigTableLen*8)
	if _, err := mem.ReadAt(buf, int64(addr)); err != nil {
		return 0, fmt.Errorf("read the runtime's signal table at %#x: %w", addr, err)
	}
	var mask uint64
	for sig := 1; sig < sigTableLen; sig++ {
		if binary.NativeEndian.Uint64(buf[sig*8:]) == 1 { // SIG_IGN
			mask |= 1 << (sig - 1)
		}
	}
	return mask, nil
}

// symbolAddress returns the run-time address of the data symbol name in the
// executable exe of this process, checking that its size is size: a
// runtime whose table has another shape is not read.
func symbolAddress(exe, name string, size uint64) (uint64, error) {
	f, err := elf.Open(exe)
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", exe, err)
	}
	defer f.Close()
	if f.Class != elf.ELFCLASS64 {
		return 0, fmt.Errorf("%s: a %v executable: only 64-bit ones are read", exe, f.Class)
	}
	symtab := f.Section(".symtab")
	if symtab == nil || int(symtab.Link) >= len(f.Sections) {
		return 0, fmt.Errorf("%s has no symbol table (linked with -s?)", exe)
	}
	off, err := stringOffset(f.Sections[symtab.Link].Open(), name)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", exe, err)
	}
	value, symSize, err := findSymbol(symtab.Open(), f.ByteOrder, off)
	if err != nil {
		return 0, fmt.Errorf("%s: %s: %w", exe, name, err)
	}
	if symSize != size {
		return 0, fmt.Errorf("%s: %s has %d bytes, not the %d expected of this runtime", exe, name, symSize, size)
	}
	if f.Type == elf.ET_EXEC {
		return value, nil
	}
	bias, err := loadBias(f)
	if err != nil {
		return 0, err
	}
	return value + bias, nil
}

// stringOffset returns the offset of name in a string table, read in chunks
// so that the table is never held whole.
func stringOffset(r io.Reader, name string) (uint32, error) {
	want := []byte("\x00" + name + "\x00")
	const chunk = 64 << 10
	buf := make([]byte, 0, chunk+len(want))
	var base int64 // table offset of buf[0]
	for {
		n, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if i := bytes.Index(buf, want); i >= 0 {
			return uint32(base + int64(i) + 1), nil
		}
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return 0, fmt.Errorf("no symbol %s", name)
			}
			return 0, fmt.Errorf("read string table: %w", err)
		}
		// Keep the tail that may hold the start of a match.
		keep := len(want) - 1
		base += int64(len(buf) - keep)
		buf = append(buf[:0], buf[len(buf)-keep:]...)
	}
}

// findSymbol returns the value and size of the ELF64 symbol whose name is at
// string-table offset nameOff.
func findSymbol(r io.Reader, order binary.ByteOrder, nameOff uint32) (value, size uint64, err error) {
	const entSize = 24 // Elf64_Sym
	br := bufio.NewReaderSize(r, 64<<10)
	var ent [entSize]byte
	for {
		if _, err := io.ReadFull(br, ent[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return 0, 0, errors.New("not in the symbol table")
			}
			return 0, 0, fmt.Errorf("read symbol table: %w", err)
		}
		if order.Uint32(ent[0:]) == nameOff && elf.ST_TYPE(ent[4]) == elf.STT_OBJECT {
			return order.Uint64(ent[8:]), order.Uint64(ent[16:]), nil
		}
	}
}

// loadBias returns how far a position-independent executable was moved at
// load: where its first loadable segment is mapped (/proc/self/maps) less
// the address it was linked at.
func loadBias(f *elf.File) (uint64, error) {
	var first *elf.Prog
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			first = p
			break
		}
	}
	if first == nil {
		return 0, errors.New("executable has no loadable segment")
	}
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("read /proc/self/exe: %w", err)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, fmt.Errorf("read /proc/self/maps: %w", err)
	}
	for _, line := range strings.Split(string(maps), "\n") {
		// start-end perms offset dev inode path
		fields := strings.Fields(line)
		if len(fields) < 6 || fields[5] != exe || fields[2] != "00000000" {
			continue
		}
		start, err := strconv.ParseUint(strings.SplitN(fields[0], "-", 2)[0], 16, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/self/maps: %q: %w", line, err)
		}
		align := max(first.Align, 1)
		return start - (first.Vaddr &^ (align - 1)), nil
	}
	return 0, fmt.Errorf("/proc/self/maps has no mapping of %s at offset 0", exe)
}
