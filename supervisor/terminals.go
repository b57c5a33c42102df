package supervisor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/internal/callerio"
	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/policy"
	"github.com/paddock-dev/paddock/terminal"
)

// termSet is what a session knows of terminals from its start, for the
// terminal ioctls (policy.Term): the session's own terminals (the pty
// between the agent and the user; without one, the terminals the agent's
// standard descriptors are on) and those paddock itself runs on (its
// standard descriptors and its controlling terminal), by device number as
// the kernel encodes it.
type termSet struct {
	session, supervisor []uint64
	// resize carries out a setting of the session's pty's size
	// (Config.Resize; nil: the kernel does).
	resize func(*unix.Winsize) error
}

// newTermSet reads the session's terminals and paddock's own from cfg and
// this process.
func newTermSet(cfg Config, fs procfs.FS) *termSet {
	ts := &termSet{}
	if cfg.Terminal != nil {
		ts.resize = cfg.Resize
	}
	add := func(to *[]uint64, dev uint64) {
		if dev != 0 && !slices.Contains(*to, dev) {
			*to = append(*to, dev)
		}
	}
	if cfg.Terminal != nil {
		add(&ts.session, uint64(terminal.DeviceBehind(int(cfg.Terminal.Fd()))))
	} else {
		for i, f := range []*os.File{cfg.Stdin, cfg.Stdout, cfg.Stderr} {
			if f == nil {
				f = []*os.File{os.Stdin, os.Stdout, os.Stderr}[i]
			}
			add(&ts.session, uint64(terminal.DeviceBehind(int(f.Fd()))))
		}
	}
	for _, f := range []*os.File{os.Stdin, os.Stdout, os.Stderr} {
		add(&ts.supervisor, uint64(terminal.DeviceBehind(int(f.Fd()))))
	}
	if st, err := fs.Stat(os.Getpid()); err == nil {
		add(&ts.supervisor, st.TtyNr)
	}
	return ts
}

// maxForeignHolders bounds the processes a terminal's reading lists.
const maxForeignHolders = 6

// ptmx is the device number of /dev/ptmx (and /dev/pts/ptmx): a descriptor
// with it is a pty's master.
var ptmx = unix.Mkdev(5, 2)

// terminal says which terminal descriptor fd of thread tid reaches and
// whose it is (policy.Terminals.Terminal), from a copy of the descriptor:
// the device it reaches (TIOCGDEV), whether it is a pty's master, whether
// the session or paddock is on it, and otherwise which processes outside
// the session have it as their controlling terminal.
func (w *liveWorld) terminal(tid, fd int) (policy.Term, error) {
	if w.terms == nil {
		return policy.Term{}, errors.New("this front end does not know the session's terminals")
	}
	local, err := callerio.Take(w.fs, tid, fd)
	if err != nil {
		return policy.Term{}, err
	}
	defer unix.Close(local)
	dev := uint64(terminal.DeviceBehind(local))
	if dev == 0 {
		return policy.Term{}, nil
	}
	t := policy.Term{Dev: dev}
	var st unix.Stat_t
	if unix.Fstat(local, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == ptmx {
		t.Master = true
		return t, nil
	}
	t.Session = slices.Contains(w.terms.session, dev)
	if t.Session {
		return t, nil
	}
	// Not the agent's own: the name is for the message of a refusal.
	if name, err := os.Readlink(procfs.FdPath(local)); err == nil {
		t.Name = name
	}
	if t.Supervisor = slices.Contains(w.terms.supervisor, dev); t.Supervisor {
		return t, nil
	}
	holders, err := w.fs.TerminalHolders(dev)
	if err != nil {
		return t, fmt.Errorf("the processes on %s: %w", t.Name, err)
	}
	for _, h := range holders {
		rel, err := w.tree.ClassifyStat(h)
		if err != nil && len(t.Foreign) > 0 {
			t.ForeignTotal = 0 // refused either way; the count is not known
			break
		}
		if err != nil {
			return t, fmt.Errorf("pid %d on %s: %w", h.Pid, t.Name, err)
		}
		switch rel {
		case audit.RelOwned, audit.RelAgentRoot, audit.RelGone:
			continue
		}
		t.ForeignTotal++
		if len(t.Foreign) < maxForeignHolders {
			t.Foreign = append(t.Foreign, policy.Target{Pid: h.Pid, Comm: h.Comm, StartTime: h.StartTime, Rel: rel})
		}
	}
	return t, nil
}

// resize carries out an allowed TIOCSWINSZ on the session's pty
// (policy.Decision.Resize) through the relay, which orders it with its
// copies of the user's size; ok is false when there is no relay to.
func (w *liveWorld) resize(mem []byte) (errno unix.Errno, ok bool) {
	if w.terms == nil || w.terms.resize == nil || len(mem) != policy.WinsizeLen {
		return 0, false
	}
	ws := unix.Winsize{
		Row:    binary.NativeEndian.Uint16(mem[0:]),
		Col:    binary.NativeEndian.Uint16(mem[2:]),
		Xpixel: binary.NativeEndian.Uint16(mem[4:]),
		Ypixel: binary.NativeEndian.Uint16(mem[6:]),
	}
	err := w.terms.resize(&ws)
	if err == nil {
		return 0, true
	}
	if !errors.As(err, &errno) {
		errno = unix.EIO
	}
	return errno, true
}
