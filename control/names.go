package control

import (
	"errors"
	"fmt"

	"github.com/paddock-dev/paddock/internal/pidns"
	"github.com/paddock-dev/paddock/internal/procfs"
)

// peerHost reads id, a pid a client sent (paddock adopt PID, release,
// kill), in the client's PID namespace, and returns paddock's number of
// that process: a client inside `unshare --pid`, bubblewrap's
// --unshare-pid or a harness's sandbox numbers processes its own way, and
// its PID names the process of that number there, never paddock's process
// of the same number. A number that names nothing in the client's
// namespace is refused.
func peerHost(fs procfs.FS, peer, id int) (int, error) {
	if id <= 0 {
		return id, nil // not a process: the operation refuses it
	}
	if peer <= 0 {
		return 0, fmt.Errorf("paddock refused pid %d: the client is in a PID namespace paddock does not see, so paddock cannot tell which process its pid %d is. Way out: run the command from the session's own PID namespace, or from your own terminal with paddock's number of the process", id, id)
	}
	self, err := fs.Namespace(0, "pid")
	if err != nil {
		return 0, fmt.Errorf("paddock refused pid %d: paddock's own PID namespace: %w", id, err)
	}
	same, err := pidns.Same(fs, peer, self)
	if err != nil {
		if errors.Is(err, procfs.ErrNotFound) {
			return 0, fmt.Errorf("paddock refused pid %d: the client (pid %d) exited before its request was read", id, peer)
		}
		if cr, cerr := fs.Creds(peer); cerr == nil && len(cr.NSpid) == 1 {
			same, err = true, nil
		} else {
			return 0, fmt.Errorf("paddock refused pid %d: paddock could not read the client's PID namespace (%v), in which its pid is a number", id, err)
		}
	}
	if same {
		return id, nil
	}
	ns, err := pidns.Of(fs, peer)
	if err != nil {
		return 0, fmt.Errorf("paddock refused pid %d: paddock could not read the client's PID namespace (%v), in which its pid is a number", id, err)
	}
	defer ns.Close()
	h, err := ns.Host(id)
	if err != nil {
		return 0, fmt.Errorf("paddock refused pid %d: %w", id, err)
	}
	if h == 0 {
		return 0, fmt.Errorf("paddock refused pid %d: no process has pid %d in the client's PID namespace (it runs in one of its own, as unshare --pid and bwrap --unshare-pid make, where pids are numbered apart from paddock's), and paddock never takes it for paddock's process of the same number. Way out: give the pid the process has in the client's namespace (ps there), or adopt from your own terminal, outside the namespace, by paddock's number: paddock adopt PID --reason \"...\" --socket SOCKET (paddock sessions lists the sockets)", id, id)
	}
	return h, nil
}
