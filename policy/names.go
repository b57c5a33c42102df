package policy

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"syscall"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/filter"
)

// Names is how the caller's PID namespace numbers processes, where it is
// not the front end's own (a caller inside `unshare --pid`, bubblewrap's
// --unshare-pid, a harness's sandbox): every pid the caller writes is a
// number of its namespace, and means nothing in the front end's.
type Names interface {
	// Host is the front end's number of the process, thread, process
	// group or session that the caller's namespace numbers id: 0 with a
	// nil error when it numbers nothing id (the kernel answers ESRCH
	// there). An error means it could not be read.
	Host(id int) (int, error)
	// Local is the number the caller's namespace gives the front end's
	// process or thread h: 0 when it has none there (h lies above it).
	Local(h int) (int, error)
}

// Translate turns the pids in r's arguments (and in the memory a pointer
// argument names: F_SETOWN_EX's owner, FIOSETOWN's) from the caller's PID
// namespace, whose numbers n gives, into the front end's, so that Decide,
// and whatever the front end does itself with the request (a deputy's
// delivery, a probe), read them as the kernel will in the caller's
// namespace. The result keeps n (Request.Names) and the caller's own
// arguments (Request.Said), so that messages name each process by the pid
// the caller used. done is true when the translation is the answer: a pid
// that names nothing in the caller's namespace is ESRCH there, as the
// kernel says (never another process of the same number), and a pid that
// could not be translated is refused as undecidable.
func Translate(r Request, n Names, w World) (out Request, d Decision, done bool) {
	out = r
	out.Names, out.Said = n, r.Args
	d = Decision{Syscall: r.Syscall.String()}
	if si, ok := r.Syscall.SignalArg(); ok {
		d.Signal = arg32(r, si)
	}
	fail := func(said int, err error) (Request, Decision, bool) {
		d.Target = said
		if err != nil {
			return r, undecidable(out, w, d, fmt.Errorf("what pid %d names in the caller's PID namespace: %w", said, err)), true
		}
		d.Errno, d.Rule = syscall.ESRCH, audit.RuleNoSuchTarget
		return r, d, true
	}
	// arg translates argument i: a pid when positive; a group when
	// negative and group is set (kill's -pgid, F_SETOWN's); 0 and -1 are
	// the caller itself or everyone, the same in every namespace.
	arg := func(i int, group bool) (int, error, bool) {
		v := arg32(r, i)
		switch {
		case v > 0:
			h, err := n.Host(v)
			if err == nil && h > 0 {
				out.Args[i] = uint64(int64(h))
			}
			return v, err, err == nil && h > 0
		case v < -1 && group:
			h, err := n.Host(-v)
			if err == nil && h > 0 {
				out.Args[i] = uint64(int64(-h))
			}
			return v, err, err == nil && h > 0
		}
		return v, nil, true
	}
	switch r.Syscall {
	case filter.Kill, filter.Tkill, filter.RtSigqueueinfo, filter.Tgkill, filter.RtTgsigqueueinfo,
		filter.ProcessVMWritev, filter.Prlimit64, filter.SchedSetaffinity, filter.SchedSetscheduler,
		filter.SchedSetparam, filter.SchedSetattr, filter.MigratePages, filter.MovePages:
		i, _ := r.Syscall.PidArg()
		if v, err, ok := arg(i, r.Syscall == filter.Kill); !ok {
			return fail(v, err)
		}
		if i, ok := r.Syscall.ThreadArg(); ok {
			if v, err, ok := arg(i, false); !ok {
				return fail(v, err)
			}
		}
	case filter.Ptrace:
		if r.Args[0] != ptraceTraceme {
			if v, err, ok := arg(1, false); !ok {
				return fail(v, err)
			}
		}
	case filter.PerfEventOpen:
		if r.Args[4]&perfFlagPidCgroup == 0 {
			if v, err, ok := arg(1, false); !ok {
				return fail(v, err)
			}
		}
	case filter.Setpriority, filter.IoprioSet:
		process, group := filter.PrioProcess, filter.PrioPgrp
		if r.Syscall == filter.IoprioSet {
			process, group = filter.IoprioWhoProcess, filter.IoprioWhoPgrp
		}
		if w := arg32(r, 0); w == process || w == group {
			if v, err, ok := arg(1, false); !ok {
				return fail(v, err)
			}
		}
	case filter.Fcntl, filter.Fcntl64, filter.Ioctl:
		switch cmd := uint32(r.Args[1]); {
		case r.Syscall != filter.Ioctl && cmd == filter.FSetown:
			if v, err, ok := arg(2, true); !ok {
				return fail(v, err)
			}
		case r.Syscall != filter.Ioctl && cmd == filter.FSetownEx,
			r.Syscall == filter.Ioctl && (cmd == filter.FIOSETOWN || cmd == filter.SIOCSPGRP):
			_, size := PtrArg(r.Syscall, r.Args)
			if r.MemErr != nil || len(r.Mem) < size {
				break // refused as unread by Decide
			}
			off := 0
			if size == 8 {
				off = 4 // struct f_owner_ex { int type; pid_t pid; }
			}
			v := int(int32(binary.LittleEndian.Uint32(r.Mem[off:])))
			neg := v < 0 && size == 4
			if neg {
				v = -v
			}
			if v <= 0 {
				break
			}
			h, err := n.Host(v)
			if err != nil || h == 0 {
				if neg {
					v = -v
				}
				return fail(v, err)
			}
			if neg {
				h = -h
			}
			out.Mem = append([]byte(nil), r.Mem...)
			binary.LittleEndian.PutUint32(out.Mem[off:], uint32(int32(h)))
		}
	}
	return out, Decision{}, false
}

// said is how the caller names the front end's process h: its number in
// the caller's PID namespace, or "paddock's pid H" where it has none
// there.
func said(r Request, h int) string {
	if r.Names == nil || h <= 0 {
		return strconv.Itoa(h)
	}
	l, err := r.Names.Local(h)
	if err != nil || l <= 0 {
		return "paddock's pid " + strconv.Itoa(h)
	}
	return strconv.Itoa(l)
}

// procName names the front end's process h with its command for a
// message: "pid 4242 (sleep)"; for a caller in a PID namespace of its own,
// by the caller's number and paddock's: "pid 3 (sleep; paddock's pid 4242)".
func procName(r Request, h int, comm string) string {
	if r.Names == nil || h <= 0 {
		return fmt.Sprintf("pid %d (%s)", h, comm)
	}
	l, err := r.Names.Local(h)
	switch {
	case err != nil || l <= 0:
		return fmt.Sprintf("paddock's pid %d (%s; none in the caller's PID namespace)", h, comm)
	case l == h:
		return fmt.Sprintf("pid %d (%s)", h, comm)
	}
	return fmt.Sprintf("pid %d (%s; paddock's pid %d)", l, comm, h)
}

// groupName names the front end's process group g for a message, as
// procName names a process.
func groupName(r Request, g int) string {
	if r.Names == nil {
		return fmt.Sprintf("process group %d", g)
	}
	if l, err := r.Names.Local(g); err == nil && l > 0 && l != g {
		return fmt.Sprintf("process group %d (paddock's %d)", l, g)
	}
	// The group's leader may have exited: the caller's own number.
	if v := int(int32(uint32(r.Said[0]))); r.Syscall == filter.Kill && v < -1 {
		return fmt.Sprintf("process group %d (paddock's %d)", -v, g)
	}
	return fmt.Sprintf("process group %d", g)
}

// caller names the calling thread for a message (procName).
func caller(r Request, w World) string { return procName(r, r.Tid, commOf(w, r.Tid)) }

// pidSaid names the front end's process h as the caller knows it: "pid
// 5", or "paddock's pid 4242" where the caller's namespace has no number
// for it.
func pidSaid(r Request, h int) string {
	s := said(r, h)
	if s[0] == 'p' {
		return s // "paddock's pid H"
	}
	return "pid " + s
}

// adoptWay is a refusal's way out through adoption of the front end's
// process h: `paddock adopt PID` with the caller's number of it, which the
// control socket reads in the caller's PID namespace; for a caller in a
// namespace of its own, also the way from outside it (the user's terminal,
// where the session's control socket is not reachable from the caller's
// sandbox), by paddock's number.
func adoptWay(r Request, h int) string {
	plain := fmt.Sprintf("paddock adopt %d --reason \"...\".", h)
	if r.Names == nil {
		return plain
	}
	l, err := r.Names.Local(h)
	switch {
	case err != nil || l == h:
		return plain
	case l <= 0:
		return fmt.Sprintf("from outside the caller's PID namespace, which has no number for it (your own terminal): paddock adopt %d --reason \"...\" --socket SOCKET (paddock sessions lists the sockets).", h)
	}
	return fmt.Sprintf("paddock adopt %d --reason \"...\". From outside the caller's PID namespace (your own terminal, where the session's control socket is not reachable from the caller): paddock adopt %d --reason \"...\" --socket SOCKET (paddock sessions lists the sockets).", l, h)
}
