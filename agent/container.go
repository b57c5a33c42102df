package agent

import (
	"errors"
	"fmt"
	"sync"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/paddock-dev/paddock/internal/pidns"
	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/policy"
	"github.com/paddock-dev/paddock/report"
)

// container is one container the agent serves: who it is (from the
// runtime's state), which processes are its own (those in its PID
// namespace and its cgroup), and its lifelines (its first process, and
// the first process of each `runc exec` session, against their own
// descendants). Pid arguments of its calls are numbers of its PID
// namespace; the agent reads /proc in its own, so every lookup
// translates (host), and every answer speaks the container's numbers.
type container struct {
	fs procfs.FS
	// id, bundle, annotations and metadata name the container in the
	// journal.
	id, bundle, metadata string
	annotations          map[string]string
	// pidns is the inode of the container's PID namespace, shared says it
	// is the agent's own (a hostPID pod), and cgroup is the first
	// process's /proc/PID/cgroup: a process is the container's when both
	// match.
	pidns  uint64
	shared bool
	cgroup string
	// byDescent says the cgroup is not the container's own: it shares
	// the agent's PID namespace and other processes were in its cgroup
	// when it was created (a rootless engine on cgroup v1, which makes no
	// cgroup per container, or --cgroups=disabled). Its processes are
	// then the descendants of its sessions' first processes (descends):
	// the cgroup would make the user's or the node's processes its own.
	byDescent bool
	// refused, when set, says why the handoff of this listener was
	// refused (Server.refuse): nothing is known of it but what the
	// runtime sent, and each of its calls is refused.
	refused string
	// ns is the container's PID namespace, held open (nil where it
	// shares the node's): the translation of its numbers, the one
	// paddock run uses for a caller in a namespace of its own (package
	// pidns). closeNS releases it when the container is gone.
	ns *pidns.NS

	mu sync.Mutex
	// lifelines maps the host pid of each session's first process to its
	// start time.
	lifelines map[int]uint64
	// hosts caches container pid -> host pid, checked at each use.
	hosts map[int]int
	// listeners counts the container's open listeners (one per session).
	listeners int
	// first is the host pid of the container's first process; shim says
	// it is an init shim (podman's --init, tini), whose first child is a
	// lifeline too, once shimPlaced (shim.go).
	first            int
	shim, shimPlaced bool
	// pending holds the listeners of sessions whose first process is not
	// known yet (crun's exec sends no pid): the first call on one places
	// it (session.go).
	pending map[int]bool
	// listing is the last listing of its processes (at most listingMax),
	// made at listingAt (listed).
	listing    []policy.Target
	listingAt  time.Time
	listingMax int
	listingAll int // how many processes the listing counted

	// report carries out what follows each decision (Server.startReporting),
	// and names are the labels its events carry.
	report *report.Pipeline
	names  []report.Label
}

// labels name the container in each decision's log line (its id) and
// journal record (its id, bundle, listener metadata and pod names).
func (c *container) labels() []report.Label {
	l := []report.Label{{Key: "container", Value: c.id, Logged: true}, {Key: "bundle", Value: c.bundle},
		{Key: "listener_metadata", Value: c.metadata}}
	for _, field := range []string{"pod_namespace", "pod_name", "container_name"} {
		for _, k := range criAnnotations()[field] {
			if v := c.annotations[k]; v != "" {
				l = append(l, report.Label{Key: field, Value: v})
				break
			}
		}
	}
	return l
}

// newContainer describes the container of a handoff from the agent's view
// of /proc: the handoff's pid is a host pid (the runtime runs in the
// agent's PID namespace).
func newContainer(fs procfs.FS, st specs.ContainerProcessState) (*container, error) {
	c := &container{fs: fs, id: st.State.ID, bundle: st.State.Bundle, metadata: st.Metadata,
		annotations: st.State.Annotations, lifelines: map[int]uint64{}, hosts: map[int]int{}}
	ns, err := fs.Namespace(st.Pid, "pid")
	if err != nil {
		return nil, fmt.Errorf("container %s: %w", c.id, err)
	}
	self, err := fs.Namespace(0, "pid")
	if err != nil {
		return nil, fmt.Errorf("container %s: %w", c.id, err)
	}
	c.pidns, c.shared = ns, ns == self
	if c.cgroup, err = fs.Cgroup(st.Pid); err != nil {
		return nil, fmt.Errorf("container %s: %w", c.id, err)
	}
	if !c.shared {
		if c.ns, err = pidns.Of(fs, st.Pid); err != nil {
			return nil, fmt.Errorf("container %s: %w", c.id, err)
		}
		if c.ns.Ino != c.pidns {
			c.closeNS()
			return nil, fmt.Errorf("container %s: its first process %d left (its pid names another process now)", c.id, st.Pid)
		}
	}
	if err := c.addSession(st.Pid); err != nil {
		c.closeNS()
		return nil, err
	}
	c.first, c.shim = st.Pid, isShim(c.annotations, c.bundleArgs())
	if c.shared {
		if c.byDescent, err = c.cgroupShared(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// cgroupShared reports whether a process other than the container's
// first process and its descendants is in the container's cgroup: then
// the cgroup is not the container's own (a rootless engine on cgroup v1
// runs the container in the cgroup of its monitor and its user's
// session), and in a container that shares the node's PID namespace it
// cannot tell the container's processes from anyone else's.
func (c *container) cgroupShared() (bool, error) {
	pids, err := c.fs.Pids()
	if err != nil {
		return false, fmt.Errorf("container %s: %w", c.id, err)
	}
	for _, p := range pids {
		if cg, err := c.fs.Cgroup(p); err == nil && cg == c.cgroup && !c.descends(p) {
			return true, nil
		}
	}
	return false, nil
}

// descends reports whether host process pid is one of the container's
// sessions' first processes or a descendant of one: each process on the
// way up started no earlier than its parent (a parent's pid reused by a
// younger process ends the walk: the chain is not the process's own). A
// process reparented away from the container's tree (to a subreaper or
// the node's init) is not the container's any more, which fails closed:
// its signals from the container are refused.
func (c *container) descends(pid int) bool {
	st, err := c.fs.Stat(pid)
	if err != nil {
		return false
	}
	for range walkLimit {
		if c.lifeline(pid, st.StartTime) {
			return true
		}
		if st.PPid <= 1 {
			return false
		}
		parent, err := c.fs.Stat(st.PPid)
		if err != nil || parent.StartTime > st.StartTime {
			return false
		}
		pid, st = st.PPid, parent
	}
	return false
}

// closeNS releases the container's PID namespace.
func (c *container) closeNS() {
	if c.ns != nil {
		c.ns.Close()
	}
}

// addSession records the first process of a session (the container's own,
// or a `runc exec`'s) as a lifeline.
func (c *container) addSession(hostPid int) error {
	st, err := c.fs.Stat(hostPid)
	if err != nil {
		return fmt.Errorf("container %s: session process %d: %w", c.id, hostPid, err)
	}
	c.mu.Lock()
	c.lifelines[hostPid] = st.StartTime
	c.listeners++
	c.mu.Unlock()
	return nil
}

// lifeline reports whether the host process pid (started at start) is the
// first process of one of the container's sessions.
func (c *container) lifeline(pid int, start uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.lifelines[pid]
	return ok && s == start
}

// member reports whether host process pid is one of the container's: in
// its PID namespace and its cgroup (its sessions' tree where the cgroup is
// not its own: byDescent).
func (c *container) member(pid int) bool { return c.inPidNS(pid) && c.inGroup(pid) }

// inGroup reports whether host process pid is in the container's cgroup,
// or, where that is not the container's own (byDescent), descends from
// one of its sessions' first processes.
func (c *container) inGroup(pid int) bool {
	if c.byDescent {
		return c.descends(pid)
	}
	return c.inCgroup(pid)
}

// inPidNS reports whether host process pid is in the container's PID
// namespace.
func (c *container) inPidNS(pid int) bool {
	ns, err := c.fs.Namespace(pid, "pid")
	return err == nil && ns == c.pidns
}

// inCgroup reports whether host process pid is in the container's cgroup.
func (c *container) inCgroup(pid int) bool {
	cg, err := c.fs.Cgroup(pid)
	return err == nil && cg == c.cgroup
}

// exitedOwn reports whether the process whose stat is st, exiting or a
// zombie, is the container's by its parent: on cgroup v1 hierarchies
// /proc/PID/cgroup shows such a process in the root cgroup (the kernel's
// proc_cgroup_show), so its own cgroup cannot be read any more; a process
// not yet reaped still has its parent, and the parent (a subreaper or the
// namespace's init included) is the container's if it was. Signalling it
// does nothing, and the kernel answers 0: so does paddock.
func (c *container) exitedOwn(st procfs.Stat) bool {
	return st.Exiting() && st.PPid > 0 && c.member(st.PPid)
}

// local is host process pid's number in the container's PID namespace (0
// when it has none there): a process of its namespace, or of one the
// container made inside itself, which numbers it there too.
func (c *container) local(pid int) (int, error) {
	if c.shared {
		return pid, nil
	}
	if c.ns != nil {
		return c.ns.Local(pid)
	}
	if !c.inPidNS(pid) {
		// Above the container's namespace (the agent's own, a pause
		// process), or in one nested in it: not a number of the
		// container's this way.
		return 0, nil
	}
	return c.innermost(pid)
}

// caller places the caller of a trapped call, node pid pid (as the
// kernel named it to the agent; 0 when the caller is in no PID namespace
// the agent sees): its number in the container's PID namespace; or nested,
// a caller in a PID namespace nested in the container's (one the container
// made inside itself), whose pid arguments name only that namespace's
// processes, all the container's; or an error, a caller that cannot be
// placed: its /proc entry unreadable, no pid, or, in a container that
// shares the node's PID namespace, a namespace of its own (every other
// container's is nested in the node's, so its pids could be anyone's).
// A call whose caller cannot be placed is refused (fail closed).
func (c *container) caller(pid int) (n int, nested bool, err error) {
	if pid <= 0 {
		return 0, false, errors.New("the kernel gave no pid for it: it is in no PID namespace the agent sees (the agent must run in the node's, hostPID)")
	}
	ns, err := c.fs.Namespace(pid, "pid")
	if err != nil {
		return 0, false, fmt.Errorf("its PID namespace: %w", err)
	}
	if ns == c.pidns {
		if c.shared {
			return pid, false, nil
		}
		if n, err = c.innermost(pid); err != nil {
			return 0, false, fmt.Errorf("its number in the container: %w", err)
		}
		return n, false, nil
	}
	if c.shared {
		return 0, false, fmt.Errorf("node pid %d is in a PID namespace other than the node's, which the container shares: its pid arguments cannot be placed", pid)
	}
	within, err := c.fs.PidNSWithin(pid, c.pidns)
	if err != nil {
		return 0, false, fmt.Errorf("its PID namespace: %w", err)
	}
	if !within {
		return 0, false, fmt.Errorf("node pid %d is in a PID namespace outside the container's", pid)
	}
	return 0, true, nil
}

// innermost is id's number in its own PID namespace, for an id known to be
// in the container's.
func (c *container) innermost(id int) (int, error) {
	cr, err := c.fs.Creds(id)
	if err != nil {
		return 0, err
	}
	return cr.NSpid[len(cr.NSpid)-1], nil
}

// host is the host pid of the container's process or thread id n, or 0
// when the container has none.
func (c *container) host(n int) (int, error) {
	if n <= 0 {
		return 0, nil
	}
	if c.shared {
		return n, nil
	}
	if h := c.cached(n); h != 0 {
		if l, err := c.local(h); err == nil && l == n {
			return h, nil
		}
	}
	h, err := c.scan(n)
	if err != nil || h == 0 {
		return 0, err
	}
	c.remember(n, h)
	return h, nil
}

// cached is the host pid last found for the container's process or thread
// n, unchecked (0: none); in a container that shares the node's PID
// namespace, n itself.
func (c *container) cached(n int) int {
	if n <= 0 {
		return 0
	}
	if c.shared {
		return n
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hosts[n]
}

// remember caches h as the host pid of the container's n (host checks it
// at each use).
func (c *container) remember(n, h int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.hosts) > 4096 {
		clear(c.hosts)
	}
	c.hosts[n] = h
}

// reopenNS opens the PID namespace of a container taken over from
// another agent, which handed over its inode only: through one of its
// sessions' first processes still in it. Where none is, ns stays nil and
// scan reads /proc alone.
func (c *container) reopenNS() {
	if c.shared || c.ns != nil {
		return
	}
	for pid, start := range c.lifelines {
		ns, err := pidns.Of(c.fs, pid)
		if err != nil {
			continue
		}
		if st, err := c.fs.Stat(pid); err == nil && st.StartTime == start && ns.Ino == c.pidns {
			c.ns = ns
			return
		}
		ns.Close()
	}
}

// scan finds the host id of the container's process or thread n (0: the
// container has none), through the translation paddock run uses too
// (pidns.NS.Host: the kernel's, or /proc's where the kernel has none);
// where the namespace is not held open, by reading /proc: the processes
// first, then their threads.
func (c *container) scan(n int) (int, error) {
	if c.ns != nil {
		return c.ns.Host(n)
	}
	pids, err := c.fs.Pids()
	if err != nil {
		return 0, err
	}
	var mine []int
	for _, p := range pids {
		if ns, err := c.fs.Namespace(p, "pid"); err != nil || ns != c.pidns {
			continue
		}
		mine = append(mine, p)
		if l, err := c.innermost(p); err == nil && l == n {
			return p, nil
		}
	}
	for _, p := range mine {
		tids, err := c.fs.Threads(p)
		if err != nil {
			continue
		}
		for _, tid := range tids {
			if tid == p {
				continue
			}
			if l, err := c.innermost(tid); err == nil && l == n { // a thread shares its process's namespace
				return tid, nil
			}
		}
	}
	return 0, nil
}

// members lists the host pids of the container's processes.
func (c *container) members() ([]int, error) {
	pids, err := c.fs.Pids()
	if err != nil {
		return nil, err
	}
	var out []int
	for _, p := range pids {
		if c.member(p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// listedFor bounds how long a listing of the container's processes is
// used again for refusal messages.
const listedFor = 250 * time.Millisecond

// listed is list(max), the container's processes for a refusal message's
// "active owned PIDs" (never for a decision), from a listing at most
// listedFor old: a listing reads every process of the node, and a storm
// of refusals would otherwise read them all once per refusal.
func (c *container) listed(max int, list func(max int) ([]policy.Target, int)) ([]policy.Target, int) {
	now := time.Now()
	c.mu.Lock()
	if c.listingMax == max && now.Sub(c.listingAt) < listedFor {
		l, n := c.listing, c.listingAll
		c.mu.Unlock()
		return l, n
	}
	c.mu.Unlock()
	l, n := list(max)
	c.mu.Lock()
	c.listing, c.listingAt, c.listingMax, c.listingAll = l, now, max, n
	c.mu.Unlock()
	return l, n
}

// criAnnotations are the annotations that name a container's pod, as
// containerd's CRI plugin and CRI-O set them, by journal field.
func criAnnotations() map[string][]string {
	return map[string][]string{
		"pod_namespace":  {"io.kubernetes.cri.sandbox-namespace", "io.kubernetes.pod.namespace"},
		"pod_name":       {"io.kubernetes.cri.sandbox-name", "io.kubernetes.pod.name"},
		"container_name": {"io.kubernetes.cri.container-name", "io.kubernetes.container.name"},
	}
}

// nestedNames is policy.Names for a caller in a PID namespace nested in the
// container's (one the container made inside itself: unshare --pid,
// bubblewrap): its pids are numbers of its own namespace, translated to the
// node's through that namespace and then to the container's, which the
// container's world speaks.
type nestedNames struct {
	c  *container
	ns *pidns.NS
}

// nested opens the PID namespace of node pid pid, a caller container.caller
// placed in a namespace nested in the container's, and returns its names
// and the caller's number in the container's namespace.
func (c *container) nested(pid int) (*nestedNames, int, error) {
	if c.ns == nil {
		return nil, 0, errors.New("the container's PID namespace is not held open, and a caller in one nested in it cannot be placed")
	}
	ns, err := pidns.Of(c.fs, pid)
	if err != nil {
		return nil, 0, fmt.Errorf("its PID namespace: %w", err)
	}
	n, err := c.ns.Local(pid)
	if err == nil && n == 0 {
		err = fmt.Errorf("node pid %d has no number in the container's PID namespace", pid)
	}
	if err != nil {
		ns.Close()
		return nil, 0, err
	}
	return &nestedNames{c: c, ns: ns}, n, nil
}

// close releases the caller's namespace.
func (n *nestedNames) close() { n.ns.Close() }

// Host implements policy.Names: the container's number of what the
// caller's namespace numbers id.
func (n *nestedNames) Host(id int) (int, error) {
	h, err := n.ns.Host(id)
	if err != nil || h == 0 {
		return 0, err
	}
	return n.c.local(h)
}

// Local implements policy.Names: the caller's number of the container's
// process cn (0: none in the caller's namespace).
func (n *nestedNames) Local(cn int) (int, error) {
	h, err := n.c.host(cn)
	if err != nil || h == 0 {
		return 0, err
	}
	return n.ns.Local(h)
}
