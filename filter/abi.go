package filter

import "fmt"

// ABI describes one syscall ABI the kernel may be entered through. The
// supervisor needs it to decode a notification the way the kernel will: the
// same syscall has different numbers, and pointers in user memory have
// different sizes, under different ABIs.
type ABI struct {
	// Name is "x86_64", "x32", "i386", "aarch64" or "arm".
	Name string
	// Arch is the AUDIT_ARCH_* value the kernel puts in seccomp_data.arch.
	// x32 shares AUDIT_ARCH_X86_64 with x86_64 and is told apart by nr.
	Arch uint32
	// X32 marks the x32 ABI: seccomp_data.nr carries bit 0x40000000, the
	// registers are 64-bit, but pointers and longs in user memory are 32-bit.
	X32 bool
	// Compat marks a 32-bit ABI of a different audit arch on a 64-bit kernel
	// (i386 on x86_64, arm on arm64): the kernel reads only the low 32 bits
	// of each argument register, and pointers in user memory are 32-bit.
	Compat bool
}

// String names the ABI as messages and the journal do: its Name, or its
// audit arch where no table of this build knows it.
func (a ABI) String() string {
	if a.Name == "" {
		return fmt.Sprintf("arch %#x", a.Arch)
	}
	return a.Name
}

// PointerSize returns the size in bytes of a pointer or long in the
// caller's memory under this ABI (for example the entries of execve's argv
// array): 4 for Compat and X32, 8 otherwise.
func (a ABI) PointerSize() int {
	if a.Compat || a.X32 {
		return 4
	}
	return 8
}

// x32Bit is __X32_SYSCALL_BIT: set in nr for syscalls made through the x32
// ABI on x86_64.
const x32Bit = 0x40000000

// table maps the syscalls of one ABI to that ABI's numbers.
type table struct {
	abi ABI
	nrs map[Syscall]uint32
	// legacy names a second table whose numbers also reach this ABI's
	// syscalls. x32 uses it for the x86_64 numbers: older kernels (before
	// the x32 table was split out, around 5.4) dispatched x32 calls through
	// the 64-bit table, so 0x40000000|129 still ran rt_sigqueueinfo.
	legacy *table
	// byNr is nrs inverted, built by index.
	byNr map[uint32]Syscall
}

// lookup returns the syscall numbered nr in t (or its legacy table).
func (t *table) lookup(nr uint32) (Syscall, bool) {
	if s, ok := t.byNr[nr]; ok {
		return s, true
	}
	if t.legacy != nil {
		return t.legacy.lookup(nr)
	}
	return Unknown, false
}

// archSpec is everything the program and Lookup need for one GOARCH.
type archSpec struct {
	native *table   // the kernel's own ABI
	x32    *table   // nil except on amd64
	compat []*table // other audit arches the kernel may accept
}

// Lookup maps the (arch, nr) pair from struct seccomp_data (or the
// seccomp_notif that carries it) to a Syscall and the ABI it came through.
//
// ok is true when nr names one of this package's syscalls under that ABI,
// whether or not a given Options traps it. The ABI is filled in whenever
// arch is one this build knows, even when ok is false, and is the zero ABI
// for any other arch (the program traps those; refuse them).
//
// On x86_64 every nr at or above 0x40000000 (as unsigned) is x32, as in the
// program: the x32 number is nr with that bit cleared, and both the x32
// numbers and the x86_64 numbers count, because kernels from before the x32
// syscall table was split out (around Linux 5.4) ran 64-bit-only entries
// for x32 callers too (0x40000000|129 was rt_sigqueueinfo). Current kernels
// answer those with ENOSYS, so trapping them costs nothing.
func Lookup(arch uint32, nr int32) (Syscall, ABI, bool) {
	return host.lookup(arch, nr)
}

func (h archSpec) lookup(arch uint32, nr int32) (Syscall, ABI, bool) {
	n := uint32(nr)
	if h.native != nil && arch == h.native.abi.Arch {
		if h.x32 != nil && n >= x32Bit {
			s, ok := h.x32.lookup(n &^ x32Bit)
			return s, h.x32.abi, ok
		}
		s, ok := h.native.lookup(n)
		return s, h.native.abi, ok
	}
	for _, t := range h.compat {
		if arch == t.abi.Arch {
			s, ok := t.lookup(n)
			return s, t.abi, ok
		}
	}
	return Unknown, ABI{}, false
}

func (h archSpec) tables() []*table {
	var out []*table
	if h.native != nil {
		out = append(out, h.native)
	}
	if h.x32 != nil {
		out = append(out, h.x32)
	}
	return append(out, h.compat...)
}

func init() {
	for _, t := range host.tables() {
		t.index()
	}
}

// index builds t.byNr and panics if two syscalls share a number: the tables
// are constant, so this is a programming error caught by any test run.
func (t *table) index() {
	t.byNr = make(map[uint32]Syscall, len(t.nrs))
	for s, n := range t.nrs {
		if prev, dup := t.byNr[n]; dup {
			panic("filter: " + t.abi.Name + " table gives " + prev.String() + " and " + s.String() + " the same number")
		}
		t.byNr[n] = s
	}
}
