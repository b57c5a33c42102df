package filter

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// A classic-BPF interpreter for the opcodes Build emits, written from the
// kernel's semantics (net/core/filter.c, kernel/seccomp.c) and independent
// of the assembler, so a wrong jump or load in the program shows up as a
// wrong verdict.

// seccompData mirrors struct seccomp_data (64 bytes).
type seccompData struct {
	Nr   int32
	Arch uint32
	IP   uint64
	Args [6]uint64
}

func (d seccompData) bytes() []byte {
	b := make([]byte, 64)
	binary.NativeEndian.PutUint32(b[0:], uint32(d.Nr))
	binary.NativeEndian.PutUint32(b[4:], d.Arch)
	binary.NativeEndian.PutUint64(b[8:], d.IP)
	for i, a := range d.Args {
		binary.NativeEndian.PutUint64(b[16+8*i:], a)
	}
	return b
}

// result is one run of the interpreter.
type result struct {
	ret      uint32 // the filter's return value
	steps    int    // instructions executed
	loadsArg bool   // whether the run read anything but nr and arch
}

// errArgLoad is returned in constOnly mode when the program reads an
// argument or the instruction pointer.
var errArgLoad = fmt.Errorf("program loads a non-constant field")

// interpret runs prog on d. With constOnly it refuses to load anything but
// nr and arch, as the kernel's seccomp_is_const_allow does when it decides
// which syscalls may skip the filter.
func interpret(prog []unix.SockFilter, d seccompData, constOnly bool) (result, error) {
	var r result
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
		r.steps++
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			if in.K%4 != 0 || in.K+4 > uint32(len(data)) {
				return r, fmt.Errorf("pc %d: load at offset %d is outside seccomp_data or unaligned", pc, in.K)
			}
			if in.K != 0 && in.K != 4 {
				r.loadsArg = true
				if constOnly {
					return r, errArgLoad
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
			r.ret = in.K
			return r, nil
		default:
			return r, fmt.Errorf("pc %d: opcode %#x not supported", pc, in.Code)
		}
	}
}

// disasm renders prog one instruction a line, with absolute jump targets,
// for test logs.
func disasm(prog []unix.SockFilter) string {
	var b []byte
	for pc, in := range prog {
		var s string
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			s = fmt.Sprintf("ld  [%d]", in.K)
		case unix.BPF_ALU | unix.BPF_AND | unix.BPF_K:
			s = fmt.Sprintf("and #%#x", in.K)
		case unix.BPF_JMP | unix.BPF_JA:
			s = fmt.Sprintf("ja  %d", pc+1+int(in.K))
		case unix.BPF_RET | unix.BPF_K:
			s = fmt.Sprintf("ret #%#x", in.K)
		default:
			op := map[uint16]string{unix.BPF_JEQ: "jeq", unix.BPF_JGE: "jge", unix.BPF_JGT: "jgt", unix.BPF_JSET: "jset"}[in.Code&^(unix.BPF_JMP|unix.BPF_K)]
			s = fmt.Sprintf("%-4s#%#x, %d, %d", op, in.K, pc+1+int(in.Jt), pc+1+int(in.Jf))
		}
		b = fmt.Appendf(b, "%3d: %s\n", pc, s)
	}
	return string(b)
}
