package filter

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/filter/filtertest"
)

// The tests run programs through filtertest's interpreter.
type (
	seccompData = filtertest.Data
	result      = filtertest.Result
)

func interpret(prog []unix.SockFilter, d seccompData, constOnly bool) (result, error) {
	return filtertest.Run(prog, d, constOnly)
}

var errArgLoad = filtertest.ErrArgLoad

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
