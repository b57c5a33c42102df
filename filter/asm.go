package filter

import (
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// A tiny classic-BPF assembler with symbolic labels. Conditional jumps in
// classic BPF carry 8-bit forward offsets; the assembler resolves labels and
// reports an error for a backward, undefined or out-of-range jump instead of
// emitting a program that would jump somewhere else.

// insn is one instruction before its labels are resolved.
type insn struct {
	code   uint16
	k      uint32
	jt, jf string // conditional jump targets; "" is the next instruction
	ja     string // target of an unconditional jump
}

type assembler struct {
	insns  []insn
	labels map[string]int
	err    error
	nlabel int
}

// newLabel returns a fresh label name that cannot clash with a fixed one.
func (a *assembler) newLabel() string {
	a.nlabel++
	return "." + strconv.Itoa(a.nlabel)
}

// label defines name at the next instruction emitted.
func (a *assembler) label(name string) {
	if a.labels == nil {
		a.labels = make(map[string]int)
	}
	if _, dup := a.labels[name]; dup && a.err == nil {
		a.err = fmt.Errorf("filter: label %q defined twice", name)
	}
	a.labels[name] = len(a.insns)
}

// loadAbs loads the 32-bit word at offset off of struct seccomp_data.
func (a *assembler) loadAbs(off uint32) {
	a.insns = append(a.insns, insn{code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: off})
}

// and masks the accumulator with k.
func (a *assembler) and(k uint32) {
	a.insns = append(a.insns, insn{code: unix.BPF_ALU | unix.BPF_AND | unix.BPF_K, k: k})
}

// jump emits a conditional jump (op is unix.BPF_JEQ, BPF_JGE, BPF_JGT or
// BPF_JSET) comparing the accumulator with k.
func (a *assembler) jump(op uint16, k uint32, jt, jf string) {
	a.insns = append(a.insns, insn{code: unix.BPF_JMP | op | unix.BPF_K, k: k, jt: jt, jf: jf})
}

// goTo emits an unconditional jump.
func (a *assembler) goTo(target string) {
	a.insns = append(a.insns, insn{code: unix.BPF_JMP | unix.BPF_JA, ja: target})
}

// ret returns k.
func (a *assembler) ret(k uint32) {
	a.insns = append(a.insns, insn{code: unix.BPF_RET | unix.BPF_K, k: k})
}

// assemble resolves the labels and returns the program.
func (a *assembler) assemble() ([]unix.SockFilter, error) {
	if a.err != nil {
		return nil, a.err
	}
	if len(a.insns) == 0 {
		return nil, fmt.Errorf("filter: empty program")
	}
	if len(a.insns) > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("filter: program has %d instructions, the kernel accepts at most %d", len(a.insns), unix.BPF_MAXINSNS)
	}
	out := make([]unix.SockFilter, len(a.insns))
	for i, in := range a.insns {
		f := unix.SockFilter{Code: in.code, K: in.k}
		switch {
		case in.code == unix.BPF_JMP|unix.BPF_JA:
			off, err := a.offset(i, in.ja, 1<<32-1)
			if err != nil {
				return nil, err
			}
			f.K = off
		case in.code&0x07 == unix.BPF_JMP:
			jt, err := a.offset(i, in.jt, 0xff)
			if err != nil {
				return nil, err
			}
			jf, err := a.offset(i, in.jf, 0xff)
			if err != nil {
				return nil, err
			}
			f.Jt, f.Jf = uint8(jt), uint8(jf)
		}
		out[i] = f
	}
	// The kernel rejects a program whose last instruction is not a return
	// (it could run off the end); say so here, where the cause is known.
	if last := out[len(out)-1]; last.Code&0x07 != unix.BPF_RET {
		return nil, fmt.Errorf("filter: program does not end with a return")
	}
	return out, nil
}

// offset returns how many instructions a jump at from skips to reach label.
func (a *assembler) offset(from int, label string, max uint32) (uint32, error) {
	if label == "" {
		return 0, nil
	}
	to, ok := a.labels[label]
	if !ok {
		return 0, fmt.Errorf("filter: jump at %d to undefined label %q", from, label)
	}
	if to >= len(a.insns) {
		return 0, fmt.Errorf("filter: label %q is past the last instruction", label)
	}
	d := to - (from + 1)
	if d < 0 {
		return 0, fmt.Errorf("filter: jump at %d to %q goes backward; classic BPF only jumps forward", from, label)
	}
	if uint64(d) > uint64(max) {
		return 0, fmt.Errorf("filter: jump at %d to %q spans %d instructions, more than the %d a classic BPF jump can encode", from, label, d, max)
	}
	return uint32(d), nil
}
