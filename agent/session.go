package agent

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/paddock-dev/paddock/internal/sys"
)

// A session without a pid. crun's exec sends its handoff with `pid: 0` and
// `bundle: "."` (crun 1.8.1 and its current branch: its exec path reads
// the pid from the wrong end of a pipe), with the container's id and a
// listener that only the exec session's processes use. The session joins
// the container it names, and its first process, the lifeline, is found by
// the listener: a member of the container that holds the same open file
// (kcmp), the exec'd process before its exec; failing that (it has exec'd
// already, which closes the listener, close-on-exec), the first caller on
// that listener, walked up to its topmost ancestor in the container.

// walkLimit bounds a walk up the process tree.
const walkLimit = 4096

// sessionRoot is the first process of the session host process pid (a
// member of c) belongs to: its topmost ancestor that is still the
// container's, whose parent is not (the runtime that started it). 0 when
// pid's ancestors lead to one of the container's lifelines first (the
// session's own first process exited, and its processes were reparented
// to the container's first process), or when a process on the way cannot
// be read.
func (c *container) sessionRoot(pid int) (int, error) {
	for range walkLimit {
		st, err := c.fs.Stat(pid)
		if err != nil {
			return 0, err
		}
		if c.lifeline(pid, st.StartTime) {
			return 0, nil
		}
		if st.PPid <= 0 || !c.member(st.PPid) {
			return pid, nil
		}
		pid = st.PPid
	}
	return 0, fmt.Errorf("node pid %d: over %d ancestors in the container", pid, walkLimit)
}

// holderOf finds the session root of listener (a descriptor of this
// process) among the container's processes: the topmost of those that
// hold the same open file (kcmp). 0 when none holds it any more.
func (c *container) holderOf(listener int) (int, error) {
	members, err := c.members()
	if err != nil {
		return 0, err
	}
	self := os.Getpid()
	for _, m := range members {
		ents, err := os.ReadDir(c.fs.Root + "/" + strconv.Itoa(m) + "/fd")
		if err != nil {
			continue
		}
		for _, e := range ents {
			fd, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if target, err := os.Readlink(c.fs.Root + "/" + strconv.Itoa(m) + "/fd/" + e.Name()); err != nil || target != "anon_inode:seccomp notify" {
				continue
			}
			if same, err := sys.SameFile(self, listener, m, fd); err == nil && same {
				return c.sessionRoot(m)
			}
		}
	}
	return 0, nil
}

// pendSession records that listener's session has no known first process
// yet: its first call places it (placeSession).
func (c *container) pendSession(listener int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending == nil {
		c.pending = map[int]bool{}
	}
	c.pending[listener] = true
	c.listeners++
}

// placeSession makes the session root of caller, the first caller on
// listener, a lifeline, if the listener's session was pending; it reports
// the root (0: none was placed).
func (c *container) placeSession(listener, caller int) (int, error) {
	c.mu.Lock()
	pending := c.pending[listener]
	delete(c.pending, listener)
	c.mu.Unlock()
	if !pending {
		return 0, nil
	}
	if caller <= 0 || !c.member(caller) {
		return 0, errors.New("the first caller is not the container's")
	}
	root, err := c.sessionRoot(caller)
	if err != nil || root == 0 {
		return 0, err
	}
	st, err := c.fs.Stat(root)
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	c.lifelines[root] = st.StartTime
	c.mu.Unlock()
	return root, nil
}

// forget drops listener's pending session (its listener closed).
func (c *container) forget(listener int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, listener)
}
