package sys

import (
	"bytes"
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
//
// The ELF file is read by hand (the header, the section and program
// headers, the symbol table and a few names of its string table) rather
// than with debug/elf, which would link debug/dwarf, compress/zlib and
// internal/zstd into every paddock binary and start with their package
// initialisation: paddock is a container's PID 1, where each page of the
// binary touched at start is resident for the container's life.
func symbolAddress(exe, name string, size uint64) (uint64, error) {
	f, err := os.Open(exe)
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", exe, err)
	}
	defer f.Close()
	h, err := readELFHeader(f)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", exe, err)
	}
	symtab, strtab, err := h.symbolTables(f)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", exe, err)
	}
	if symtab == nil {
		return 0, fmt.Errorf("%s has no symbol table (linked with -s?)", exe)
	}
	value, err := findObject(symtab, strtab, h.order, name, size)
	if err != nil {
		return 0, fmt.Errorf("%s: %s: %w", exe, name, err)
	}
	if h.typ == etExec {
		return value, nil
	}
	vaddr, align, err := h.firstLoad(f)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", exe, err)
	}
	bias, err := loadBias(vaddr, align)
	if err != nil {
		return 0, err
	}
	return value + bias, nil
}

// The parts of the ELF64 format (the System V ABI's gABI, elf(5)) that
// symbolAddress reads.
const (
	elfHeaderSize = 64 // Elf64_Ehdr
	shdrSize      = 64 // Elf64_Shdr
	phdrSize      = 56 // Elf64_Phdr
	symSize       = 24 // Elf64_Sym

	elfClass64  = 2 // EI_CLASS: ELFCLASS64
	elfDataLSB  = 1 // EI_DATA: ELFDATA2LSB
	elfDataMSB  = 2 // EI_DATA: ELFDATA2MSB
	etExec      = 2 // e_type: ET_EXEC, linked at a fixed address
	shtSymtab   = 2 // sh_type: SHT_SYMTAB
	shnXindex   = 0xffff
	ptLoad      = 1 // p_type: PT_LOAD
	sttObject   = 1 // ST_TYPE of st_info: STT_OBJECT
	maxSections = 1 << 16
)

// elfHeader is what symbolAddress needs of an ELF64 file header.
type elfHeader struct {
	order     binary.ByteOrder
	typ       uint16
	phoff     uint64
	shoff     uint64
	phentsize uint16
	phnum     uint16
	shentsize uint16
	shnum     uint64
}

// readELFHeader reads and checks the file header of a 64-bit ELF file.
func readELFHeader(r io.ReaderAt) (elfHeader, error) {
	var b [elfHeaderSize]byte
	if _, err := r.ReadAt(b[:], 0); err != nil {
		return elfHeader{}, fmt.Errorf("read ELF header: %w", err)
	}
	if string(b[:4]) != "\x7fELF" {
		return elfHeader{}, errors.New("not an ELF file")
	}
	if b[4] != elfClass64 {
		return elfHeader{}, fmt.Errorf("an ELF class %d executable: only 64-bit ones are read", b[4])
	}
	var h elfHeader
	switch b[5] {
	case elfDataLSB:
		h.order = binary.LittleEndian
	case elfDataMSB:
		h.order = binary.BigEndian
	default:
		return elfHeader{}, fmt.Errorf("ELF data encoding %d unknown", b[5])
	}
	h.typ = h.order.Uint16(b[16:])
	h.phoff = h.order.Uint64(b[32:])
	h.shoff = h.order.Uint64(b[40:])
	h.phentsize = h.order.Uint16(b[54:])
	h.phnum = h.order.Uint16(b[56:])
	h.shentsize = h.order.Uint16(b[58:])
	h.shnum = uint64(h.order.Uint16(b[60:]))
	if h.shoff != 0 && h.shentsize < shdrSize {
		return elfHeader{}, fmt.Errorf("section header entries of %d bytes, want %d", h.shentsize, shdrSize)
	}
	if h.phoff != 0 && h.phnum > 0 && h.phentsize < phdrSize {
		return elfHeader{}, fmt.Errorf("program header entries of %d bytes, want %d", h.phentsize, phdrSize)
	}
	return h, nil
}

// symbolTables returns the symbol table and the string table its names
// are in, or nil, nil when the file has no symbol table.
func (h elfHeader) symbolTables(f io.ReaderAt) (symtab, strtab *io.SectionReader, err error) {
	if h.shoff == 0 {
		return nil, nil, nil
	}
	n := h.shnum
	if n == 0 || n == shnXindex { // the count is in section 0's sh_size
		var b [shdrSize]byte
		if _, err := f.ReadAt(b[:], int64(h.shoff)); err != nil {
			return nil, nil, fmt.Errorf("read section header 0: %w", err)
		}
		n = h.order.Uint64(b[32:])
	}
	if n > maxSections {
		return nil, nil, fmt.Errorf("%d sections: too many", n)
	}
	ent := uint64(h.shentsize)
	tab := make([]byte, n*ent) // a few dozen entries in a Go binary
	if _, err := f.ReadAt(tab, int64(h.shoff)); err != nil {
		return nil, nil, fmt.Errorf("read %d section headers: %w", n, err)
	}
	section := func(i uint64) *io.SectionReader {
		b := tab[i*ent:]
		off, size := h.order.Uint64(b[24:]), h.order.Uint64(b[32:])
		return io.NewSectionReader(f, int64(off), int64(size))
	}
	for i := uint64(1); i < n; i++ {
		b := tab[i*ent:]
		if h.order.Uint32(b[4:]) != shtSymtab {
			continue
		}
		link := uint64(h.order.Uint32(b[40:]))
		if link == 0 || link >= n {
			return nil, nil, fmt.Errorf("symbol table's string table is section %d of %d", link, n)
		}
		return section(i), section(link), nil
	}
	return nil, nil, nil
}

// firstLoad returns the address and alignment of the first loadable
// segment.
func (h elfHeader) firstLoad(f io.ReaderAt) (vaddr, align uint64, err error) {
	b := make([]byte, phdrSize)
	for i := uint64(0); i < uint64(h.phnum); i++ {
		if _, err := f.ReadAt(b, int64(h.phoff+i*uint64(h.phentsize))); err != nil {
			return 0, 0, fmt.Errorf("read program header %d: %w", i, err)
		}
		if h.order.Uint32(b[0:]) == ptLoad {
			return h.order.Uint64(b[16:]), h.order.Uint64(b[48:]), nil
		}
	}
	return 0, 0, errors.New("executable has no loadable segment")
}

// findObject returns the value of the ELF64 data symbol name of the given
// size. Only the few symbols of that size have their names read, so that
// the string table is never read whole. The table is read from its end:
// the Go linker writes the data symbols after the functions, and the
// runtime's table is found within the last few thousand entries, not after
// all of them (a few reads instead of dozens, at every start).
func findObject(symtab *io.SectionReader, strtab io.ReaderAt, order binary.ByteOrder, name string, size uint64) (uint64, error) {
	buf := make([]byte, 256*symSize)
	want := []byte(name + "\x00")
	got := make([]byte, len(want))
	end := symtab.Size() - symtab.Size()%symSize
	for end > 0 {
		off := max(end-int64(len(buf)), 0)
		chunk := buf[:end-off]
		if _, err := symtab.ReadAt(chunk, off); err != nil {
			return 0, fmt.Errorf("read symbol table at %d: %w", off, err)
		}
		for ent := chunk; len(ent) >= symSize; ent = ent[symSize:] {
			if ent[4]&0xf != sttObject || order.Uint64(ent[16:]) != size {
				continue
			}
			if _, err := strtab.ReadAt(got, int64(order.Uint32(ent[0:]))); err != nil {
				continue // a name at the table's end, shorter than name
			}
			if bytes.Equal(got, want) {
				return order.Uint64(ent[8:]), nil
			}
		}
		end = off
	}
	return 0, fmt.Errorf("no data symbol of %d bytes by that name", size)
}

// loadBias returns how far a position-independent executable was moved at
// load: where its first loadable segment (linked at vaddr, aligned to
// align) is mapped (/proc/self/maps) less the address it was linked at.
func loadBias(vaddr, align uint64) (uint64, error) {
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
		align = max(align, 1)
		return start - (vaddr &^ (align - 1)), nil
	}
	return 0, fmt.Errorf("/proc/self/maps has no mapping of %s at offset 0", exe)
}
