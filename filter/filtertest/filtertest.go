// Package filtertest runs a classic-BPF seccomp program on synthetic
// input, for the tests of the programs package filter builds and of what
// must agree with them (the fleet agent's seccomp profile). It knows the
// opcodes filter's assembler emits, written from the kernel's semantics
// (net/core/filter.c, kernel/seccomp.c) and independent of the assembler,
// so a wrong jump or load in a program shows up as a wrong verdict.
package filtertest

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Data mirrors struct seccomp_data (64 bytes): what the kernel hands a
// seccomp program for one call.
type Data struct {
	Nr   int32
	Arch uint32
	IP   uint64
	Args [6]uint64
}

func (d Data) bytes() []byte {
	b := make([]byte, 64)
	binary.NativeEndian.PutUint32(b[0:], uint32(d.Nr))
	binary.NativeEndian.PutUint32(b[4:], d.Arch)
	binary.NativeEndian.PutUint64(b[8:], d.IP)
	for i, a := range d.Args {
		binary.NativeEndian.PutUint64(b[16+8*i:], a)
	}
	return b
}

// Result is one run of a program.
type Result struct {
	Ret      uint32 // the program's return value
	Steps    int    // instructions executed
	LoadsArg bool   // whether the run read anything but nr and arch
}

// ErrArgLoad is returned in constOnly mode when the program reads an
// argument or the instruction pointer.
var ErrArgLoad = errors.New("program loads a non-constant field")

// Run runs prog on d. With constOnly it refuses to load anything but
// nr and arch, as the kernel's seccomp_is_const_allow does when it decides
// which syscalls may skip the filter.
func Run(prog []unix.SockFilter, d Data, constOnly bool) (Result, error) {
	var r Result
	if len(prog) == 0 || len(prog) > unix.BPF_MAXINSNS {
		return r, fmt.Errorf("program length %d", len(prog))
	}
	data := d.bytes()
	var acc uint32
	for pc := 0; ; pc++ {
		if pc >= len(prog) {
			return r, fmt.Errorf("ran off the end of the program")
		}
		in := prog[pc]
		r.Steps++
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			if in.K%4 != 0 || in.K+4 > uint32(len(data)) {
				return r, fmt.Errorf("pc %d: load at offset %d is outside seccomp_data or unaligned", pc, in.K)
			}
			if in.K != 0 && in.K != 4 {
				r.LoadsArg = true
				if constOnly {
					return r, ErrArgLoad
				}
			}
			acc = binary.NativeEndian.Uint32(data[in.K:])
		case unix.BPF_ALU | unix.BPF_AND | unix.BPF_K:
			acc &= in.K
		case unix.BPF_JMP | unix.BPF_JA:
			if uint64(pc)+1+uint64(in.K) >= uint64(len(prog)) {
				return r, fmt.Errorf("pc %d: ja %d leaves the program", pc, in.K)
			}
			pc += int(in.K)
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K,
			unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K,
			unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K,
			unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			if pc+1+int(max(in.Jt, in.Jf)) >= len(prog) {
				return r, fmt.Errorf("pc %d: jump leaves the program", pc)
			}
			var cond bool
			switch in.Code &^ (unix.BPF_JMP | unix.BPF_K) {
			case unix.BPF_JEQ:
				cond = acc == in.K
			case unix.BPF_JGE:
				cond = acc >= in.K
			case unix.BPF_JGT:
				cond = acc > in.K
			case unix.BPF_JSET:
				cond = acc&in.K != 0
			}
			if cond {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_RET | unix.BPF_K:
			r.Ret = in.K
			return r, nil
		default:
			return r, fmt.Errorf("pc %d: opcode %#x not supported", pc, in.Code)
		}
	}
}
