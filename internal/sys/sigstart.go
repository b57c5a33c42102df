package sys

import (
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
// that execs others (an init, a wrapper under nohup or a shell's `trap "" PIPE`)
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

// symbolAddress returns the run-time address of the data symbol name of
// size bytes in the executable exe of this process: a runtime whose table
// has another shape is not read.
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
	value, err := findObject(symtab.Open(), f.Sections[symtab.Link], f.ByteOrder, name, size)
	if err != nil {
		return 0, fmt.Errorf("%s: %s: %w", exe, name, err)
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

// findObject returns the value of the ELF64 data symbol name of the given
// size. Only the few symbols of that size have their names read, so that
// the string table is never read whole.
func findObject(symtab io.Reader, strtab *elf.Section, order binary.ByteOrder, name string, size uint64) (uint64, error) {
	const entSize = 24 // Elf64_Sym
	buf := make([]byte, 256*entSize)
	want := []byte(name + "\x00")
	got := make([]byte, len(want))
	for {
		n, err := io.ReadFull(symtab, buf)
		for ent := buf[:n-n%entSize]; len(ent) >= entSize; ent = ent[entSize:] {
			if elf.ST_TYPE(ent[4]) != elf.STT_OBJECT || order.Uint64(ent[16:]) != size {
				continue
			}
			if _, err := strtab.ReadAt(got, int64(order.Uint32(ent[0:]))); err != nil {
				continue // a name at the table's end, shorter than name
			}
			if bytes.Equal(got, want) {
				return order.Uint64(ent[8:]), nil
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return 0, fmt.Errorf("no data symbol of %d bytes by that name", size)
			}
			return 0, fmt.Errorf("read symbol table: %w", err)
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
