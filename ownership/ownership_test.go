// Tests for package ownership. Most run against a fake /proc built in a
// temporary directory (procfs.FS{Root: dir}): one directory per pid with a
// stat line in the kernel's 52-field format and a status file. Races are
// simulated with a FIFO in place of a stat file: when the walk opens it, the
// test changes the fake /proc (a parent exits, a pid is reused) before the
// read is answered. TestRealProc runs against the host's /proc, with the test
// process (or a re-executed helper that is a child subreaper under a
// seccomp filter) playing the supervisor.
package ownership_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/internal/features"
	"github.com/paddock-dev/paddock/internal/features/featuretest"
	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/internal/reexec"
	"github.com/paddock-dev/paddock/internal/sys"
	"github.com/paddock-dev/paddock/ownership"
)

// ---------------------------------------------------------------------------
// A fake /proc in a temporary directory.
// ---------------------------------------------------------------------------

// proc is one process of a fake /proc.
type proc struct {
	pid, ppid int
	start     uint64 // field 22, clock ticks since boot
	comm      string // "p<pid>" when empty
	filtered  bool   // under a seccomp filter (status "Seccomp: 2"), as the agent's processes are
}

func (p proc) name() string {
	if p.comm == "" {
		return "p" + strconv.Itoa(p.pid)
	}
	return p.comm
}

// statLine formats /proc/PID/stat as Linux writes it: 52 space-separated
// fields, comm in parentheses, a trailing newline.
func statLine(p proc) string {
	f := []string{
		strconv.Itoa(p.pid),  // 1 pid
		"(" + p.name() + ")", // 2 comm
		"S",                  // 3 state
		strconv.Itoa(p.ppid), // 4 ppid
		strconv.Itoa(p.pid),  // 5 pgrp
		strconv.Itoa(p.pid),  // 6 session
		"0",                  // 7 tty_nr
		"-1",                 // 8 tpgid
		"4194560",            // 9 flags: PF_RANDOMIZE|PF_SUPERPRIV, not PF_KTHREAD
		"120", "0", "0", "0", // 10-13 minflt cminflt majflt cmajflt
		"3", "1", "0", "0", // 14-17 utime stime cutime cstime
		"20", "0", "1", "0", // 18-21 priority nice num_threads itrealvalue
		strconv.FormatUint(p.start, 10),          // 22 starttime
		"2547712", "220", "18446744073709551615", // 23-25 vsize rss rsslim
		"1", "1", "0", "0", "0", // 26-30 startcode endcode startstack kstkesp kstkeip
		"0", "0", "0", "0", // 31-34 signal blocked sigignore sigcatch
		"1", "0", "0", // 35-37 wchan nswap cnswap
		"17", "0", "0", "0", // 38-41 exit_signal processor rt_priority policy
		"0", "0", "0", // 42-44 delayacct_blkio_ticks guest_time cguest_time
		"0", "0", "0", // 45-47 start_data end_data start_brk
		"0", "0", "0", "0", // 48-51 arg_start arg_end env_start env_end
		"0", // 52 exit_code
	}
	if len(f) != 52 {
		panic(fmt.Sprintf("statLine: %d fields", len(f)))
	}
	return strings.Join(f, " ") + "\n"
}

// statusFile formats the lines of /proc/PID/status around the ones paddock
// reads (Tgid, Seccomp).
func statusFile(p proc) string {
	mode, filters, nnp := 0, 0, 0
	if p.filtered {
		mode, filters, nnp = 2, 1, 1
	}
	return fmt.Sprintf("Name:\t%s\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t%d\nNgid:\t0\nPid:\t%d\nPPid:\t%d\nTracerPid:\t0\n"+
		"NoNewPrivs:\t%d\nSeccomp:\t%d\nSeccomp_filters:\t%d\nSpeculation_Store_Bypass:\tthread vulnerable\n",
		p.name(), p.pid, p.pid, p.ppid, nnp, mode, filters)
}

// fakeProc is a directory laid out like /proc: one directory per pid with a
// stat and a status file. Its methods report problems with t.Errorf (never
// FailNow) so that they may also run on the FIFO-serving goroutine.
type fakeProc struct {
	t    *testing.T
	root string
}

func newFakeProc(t *testing.T, procs ...proc) *fakeProc {
	t.Helper()
	f := &fakeProc{t: t, root: t.TempDir()}
	// Files /proc has besides pid directories; Pids must skip them.
	for _, name := range []string{"self", "uptime", "sys"} {
		if err := os.WriteFile(filepath.Join(f.root, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range procs {
		// Plain writes: nothing reads the fake /proc yet.
		dir := f.dir(p.pid)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(statLine(p)), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "status"), []byte(statusFile(p)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func (f *fakeProc) FS() procfs.FS { return procfs.FS{Root: f.root} }

func (f *fakeProc) dir(pid int) string { return filepath.Join(f.root, strconv.Itoa(pid)) }

// writeAtomic replaces a file by rename, as a process's stat changes at once.
func (f *fakeProc) writeAtomic(path, content string) {
	f.t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		f.t.Errorf("fake /proc: %v", err)
		return
	}
	if err := os.Rename(tmp, path); err != nil {
		f.t.Errorf("fake /proc: %v", err)
	}
}

// put creates or replaces process p (a pid reused, a ppid changed).
func (f *fakeProc) put(p proc) {
	f.t.Helper()
	if err := os.MkdirAll(f.dir(p.pid), 0o755); err != nil {
		f.t.Errorf("fake /proc: %v", err)
		return
	}
	f.writeAtomic(filepath.Join(f.dir(p.pid), "stat"), statLine(p))
	f.writeAtomic(filepath.Join(f.dir(p.pid), "status"), statusFile(p))
}

// putRaw gives pid a stat file with arbitrary contents.
func (f *fakeProc) putRaw(pid int, stat string) {
	f.t.Helper()
	if err := os.MkdirAll(f.dir(pid), 0o755); err != nil {
		f.t.Errorf("fake /proc: %v", err)
		return
	}
	f.writeAtomic(filepath.Join(f.dir(pid), "stat"), stat)
}

// putStatus gives pid a status file with arbitrary contents.
func (f *fakeProc) putStatus(pid int, status string) {
	f.t.Helper()
	if err := os.MkdirAll(f.dir(pid), 0o755); err != nil {
		f.t.Errorf("fake /proc: %v", err)
		return
	}
	f.writeAtomic(filepath.Join(f.dir(pid), "status"), status)
}

// unreadable makes pid's stat a directory: open succeeds, read fails with
// EISDIR (root ignores file modes, a directory cannot be read by anyone).
func (f *fakeProc) unreadable(pid int) {
	f.t.Helper()
	if err := os.MkdirAll(filepath.Join(f.dir(pid), "stat"), 0o755); err != nil {
		f.t.Errorf("fake /proc: %v", err)
	}
}

// remove makes pid vanish (exited and reaped).
func (f *fakeProc) remove(pid int) {
	f.t.Helper()
	if err := os.RemoveAll(f.dir(pid)); err != nil {
		f.t.Errorf("fake /proc: %v", err)
	}
}

// onFirstRead turns pid's stat into a FIFO so that a test can change the fake
// /proc in the middle of an ancestry walk, the way a racing exit changes the
// real one. The first time the code under test opens the file, act runs while
// that reader waits; then the reader gets served as the file's contents (""
// reads as empty, which procfs reports as a vanished process). If act left
// the FIFO in place, it is removed afterwards (the process is gone), so no
// later read can block. The returned channel is closed once the read was
// served.
func (f *fakeProc) onFirstRead(pid int, served string, act func()) <-chan struct{} {
	f.t.Helper()
	path := filepath.Join(f.dir(pid), "stat")
	if err := os.MkdirAll(f.dir(pid), 0o755); err != nil {
		f.t.Fatal(err)
	}
	_ = os.Remove(path)
	if err := unix.Mkfifo(path, 0o644); err != nil {
		f.t.Skipf("cannot make a FIFO in %s: %v", f.root, err)
	}
	var fifo unix.Stat_t
	if err := unix.Lstat(path, &fifo); err != nil {
		f.t.Fatal(err)
	}
	fired := make(chan struct{})
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			// A non-blocking open for writing fails with ENXIO until a
			// reader has the FIFO open (or is blocked opening it).
			fd, err := unix.Open(path, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
			if errors.Is(err, unix.ENXIO) || errors.Is(err, unix.EINTR) {
				select {
				case <-done:
					return
				case <-time.After(100 * time.Microsecond):
				}
				continue
			}
			if err != nil {
				f.t.Errorf("fake /proc: FIFO for pid %d: %v", pid, err)
				return
			}
			act()
			var now unix.Stat_t
			if unix.Lstat(path, &now) == nil && now.Ino == fifo.Ino {
				_ = os.Remove(path)
			}
			// Signal before the write: a reader that gets a whole line
			// stops reading at once, without waiting for EOF.
			close(fired)
			for b := []byte(served); len(b) > 0; {
				n, err := unix.Write(fd, b)
				if err != nil {
					f.t.Errorf("fake /proc: FIFO for pid %d: write: %v", pid, err)
					break
				}
				b = b[n:]
			}
			unix.Close(fd)
			return
		}
	}()
	f.t.Cleanup(func() { close(done); wg.Wait() })
	return fired
}

// ---------------------------------------------------------------------------
// The fake session used by most tests.
// ---------------------------------------------------------------------------

const (
	pidInit       = 1
	pidKthreadd   = 2
	pidKworker    = 3
	pidLogin      = 50  // supervisor's grandparent
	pidShell      = 60  // supervisor's parent
	pidSupervisor = 100 // paddock
	pidRoot       = 200 // agent root
	pidChild      = 201 // root -> child
	pidGrandchild = 202 // root -> child -> grandchild
	pidDeepFirst  = 1001
	deepDepth     = 50  // pidDeepFirst+d-1 is at depth d below the root
	pidOrphan     = 300 // re-parented to the supervisor (a subreaper)
	pidOrphanKid  = 301
	pidHostChild  = 310 // the supervisor's own child, no seccomp filter
	pidHostKid    = 311
	pidForeign    = 400 // under PID 1
	pidForeignKid = 401
	pidSibling    = 410 // another command of the user's shell
	pidSiblingKid = 411
	pidOutside    = 420 // ppid 0: parent outside our pid namespace
	pidOutsideKid = 421
	pidMissing    = 77777
)

var rootID = ownership.Identity{Pid: pidRoot, StartTime: 200, Comm: "agent"}

func baseProcs() []proc {
	ps := []proc{
		{pid: pidInit, ppid: 0, start: 1, comm: "systemd"},
		{pid: pidKthreadd, ppid: 0, start: 1, comm: "kthreadd"},
		{pid: pidKworker, ppid: pidKthreadd, start: 2, comm: "kworker/0:0"},
		{pid: pidLogin, ppid: pidInit, start: 10, comm: "login"},
		{pid: pidShell, ppid: pidLogin, start: 20, comm: "bash"},
		{pid: pidSupervisor, ppid: pidShell, start: 100, comm: "paddock"},
		{pid: pidRoot, ppid: pidSupervisor, start: 200, comm: "agent", filtered: true},
		{pid: pidChild, ppid: pidRoot, start: 201, comm: "python3", filtered: true},
		{pid: pidGrandchild, ppid: pidChild, start: 202, comm: "make", filtered: true},
		{pid: pidOrphan, ppid: pidSupervisor, start: 300, comm: "daemon", filtered: true},
		{pid: pidOrphanKid, ppid: pidOrphan, start: 301, comm: "worker", filtered: true},
		{pid: pidHostChild, ppid: pidSupervisor, start: 310, comm: "nvidia-smi"},
		{pid: pidHostKid, ppid: pidHostChild, start: 311, comm: "helper"},
		{pid: pidForeign, ppid: pidInit, start: 400, comm: "sshd"},
		{pid: pidForeignKid, ppid: pidForeign, start: 401, comm: "sshd-session"},
		{pid: pidSibling, ppid: pidShell, start: 410, comm: "vim"},
		{pid: pidSiblingKid, ppid: pidSibling, start: 411, comm: "gopls"},
		{pid: pidOutside, ppid: 0, start: 5, comm: "containerd-shim"},
		{pid: pidOutsideKid, ppid: pidOutside, start: 421, comm: "nginx"},
	}
	for d := 1; d <= deepDepth; d++ {
		ppid := pidDeepFirst + d - 2
		if d == 1 {
			ppid = pidGrandchild
		}
		ps = append(ps, proc{pid: pidDeepFirst + d - 1, ppid: ppid, start: uint64(1000 + d), comm: "sh", filtered: true})
	}
	return ps
}

// ownedPids are the processes of baseProcs the session owns (root included).
func ownedPids() []int {
	out := []int{pidRoot, pidChild, pidGrandchild, pidOrphan, pidOrphanKid}
	for d := 1; d <= deepDepth; d++ {
		out = append(out, pidDeepFirst+d-1)
	}
	slices.Sort(out)
	return out
}

// newSession builds the base fake /proc, a Tree for its supervisor, and sets
// the agent root.
func newSession(t *testing.T, extra ...proc) (*fakeProc, *ownership.Tree) {
	t.Helper()
	f := newFakeProc(t, append(baseProcs(), extra...)...)
	tr, err := ownership.NewTree(f.FS(), pidSupervisor)
	if err != nil {
		t.Fatalf("NewTree: %v", err)
	}
	tr.SetRoot(rootID)
	return f, tr
}

type classified struct {
	rel audit.Relation
	st  procfs.Stat
	err error
}

// classify runs tr.Classify with a deadline, so that an unbounded walk or
// retry loop fails the test instead of hanging it.
func classify(t *testing.T, tr *ownership.Tree, pid int) classified {
	t.Helper()
	ch := make(chan classified, 1)
	go func() {
		rel, st, err := tr.Classify(pid)
		ch <- classified{rel, st, err}
	}()
	select {
	case c := <-ch:
		return c
	case <-time.After(20 * time.Second):
		t.Fatalf("Classify(%d) still running after 20s: unbounded ancestry walk or retry loop", pid)
		return classified{}
	}
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

func TestStatLineHelper(t *testing.T) {
	p := proc{pid: 4242, ppid: 7, start: 987654, comm: "a) b (c"}
	st, err := procfs.ParseStat([]byte(statLine(p)))
	if err != nil {
		t.Fatal(err)
	}
	want := procfs.Stat{Pid: 4242, Comm: "a) b (c", State: 'S', PPid: 7, Pgrp: 4242, Session: 4242, Flags: 4194560, StartTime: 987654}
	if st != want {
		t.Fatalf("ParseStat(statLine) = %+v, want %+v", st, want)
	}
	// Same number of fields after comm as the running kernel writes.
	real, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	tail := func(s string) int { return len(strings.Fields(s[strings.LastIndexByte(s, ')')+1:])) }
	if got, want := tail(statLine(p)), tail(string(real)); got != want {
		t.Errorf("statLine has %d fields after comm, /proc/self/stat has %d", got, want)
	}
}

func TestNewTree(t *testing.T) {
	f := newFakeProc(t, baseProcs()...)
	tr, err := ownership.NewTree(f.FS(), pidSupervisor)
	if err != nil {
		t.Fatal(err)
	}
	want := ownership.Identity{Pid: pidSupervisor, StartTime: 100, Comm: "paddock"}
	if got := tr.Supervisor(); got != want {
		t.Errorf("Supervisor() = %+v, want %+v", got, want)
	}
	if got := tr.Root(); got != (ownership.Identity{}) {
		t.Errorf("Root() before SetRoot = %+v, want zero", got)
	}
	tr.SetRoot(rootID)
	if got := tr.Root(); got != rootID {
		t.Errorf("Root() = %+v, want %+v", got, rootID)
	}

	if _, err := ownership.NewTree(f.FS(), pidMissing); err == nil {
		t.Error("NewTree with a nonexistent supervisor: nil error")
	}
	f.putRaw(pidMissing, "garbage")
	if _, err := ownership.NewTree(f.FS(), pidMissing); err == nil {
		t.Error("NewTree with a garbled supervisor stat: nil error")
	}
}

// TestNewTreeAncestryCycle: NewTree must return on a cyclic ancestry (which
// a racy read of /proc during pid reuse can show). It follows the parent
// links with no bound and no visited set, so today it loops forever.
func TestNewTreeAncestryCycle(t *testing.T) {
	f := newFakeProc(t,
		proc{pid: pidSupervisor, ppid: pidShell, start: 100},
		proc{pid: pidShell, ppid: pidLogin, start: 20},
		proc{pid: pidLogin, ppid: pidShell, start: 10},
	)
	ch := make(chan error, 1)
	go func() {
		_, err := ownership.NewTree(f.FS(), pidSupervisor)
		ch <- err
	}()
	select {
	case <-ch: // an error or a tree: either way it returned
	case <-time.After(20 * time.Second):
		t.Fatal("NewTree still running after 20s on a cyclic ancestry")
	}
}

func TestClassify(t *testing.T) {
	type row struct {
		name  string
		extra []proc // added to baseProcs before NewTree
		// setup runs after NewTree and SetRoot(rootID): it changes the
		// fake /proc (exits, pid reuse) or the root. It returns the
		// channel of an onFirstRead hook, or nil.
		setup   func(f *fakeProc, tr *ownership.Tree) <-chan struct{}
		pid     int
		want    audit.Relation
		wantErr string // "" for a nil error, else a substring of the error
	}
	rows := []row{
		// Lifelines.
		{name: "supervisor itself", pid: pidSupervisor, want: audit.RelSupervisor},
		{name: "PID 1", pid: pidInit, want: audit.RelInit},
		{name: "supervisor's parent shell", pid: pidShell, want: audit.RelSupervisorAncestor},
		{name: "supervisor's grandparent", pid: pidLogin, want: audit.RelSupervisorAncestor},
		{
			name: "ancestor pid reused by a foreign process after NewTree is not an ancestor",
			setup: func(f *fakeProc, _ *ownership.Tree) <-chan struct{} {
				f.put(proc{pid: pidLogin, ppid: pidInit, start: 5000})
				return nil
			},
			pid: pidLogin, want: audit.RelForeign,
		},
		{
			name: "ancestor pid reused by the agent's child after NewTree is owned",
			setup: func(f *fakeProc, _ *ownership.Tree) <-chan struct{} {
				f.put(proc{pid: pidShell, ppid: pidChild, start: 6000})
				return nil
			},
			pid: pidShell, want: audit.RelOwned,
		},
		{
			name: "child of an ancestor pid reused by the agent is owned",
			setup: func(f *fakeProc, _ *ownership.Tree) <-chan struct{} {
				f.put(proc{pid: pidShell, ppid: pidChild, start: 6000})
				f.put(proc{pid: 6001, ppid: pidShell, start: 6001})
				return nil
			},
			pid: 6001, want: audit.RelOwned,
		},
		{
			name: "ancestor that exited after NewTree is gone",
			setup: func(f *fakeProc, _ *ownership.Tree) <-chan struct{} {
				f.remove(pidLogin)
				return nil
			},
			pid: pidLogin, want: audit.RelGone,
		},

		// The agent root.
		{name: "agent root by pid and start time", pid: pidRoot, want: audit.RelAgentRoot},
		{
			// Process 200 is still a child of the supervisor under the
			// agent's filter, so it is owned, but it is not the root the
			// session started.
			name: "root's pid with another start time is not the agent root",
			setup: func(_ *fakeProc, tr *ownership.Tree) <-chan struct{} {
				tr.SetRoot(ownership.Identity{Pid: pidRoot, StartTime: 150, Comm: "agent"})
				return nil
			},
			pid: pidRoot, want: audit.RelOwned,
		},
		{
			name: "root's pid reused by a foreign process",
			setup: func(f *fakeProc, tr *ownership.Tree) <-chan struct{} {
				tr.RootExited() // the supervisor says so before it reaps the root
				f.put(proc{pid: pidRoot, ppid: pidInit, start: 9000, comm: "cron"})
				return nil
			},
			pid: pidRoot, want: audit.RelForeign,
		},
		{
			name: "child of a foreign process that reused the root's pid is foreign",
			setup: func(f *fakeProc, tr *ownership.Tree) <-chan struct{} {
				tr.RootExited()
				f.put(proc{pid: pidRoot, ppid: pidInit, start: 9000, comm: "cron"})
				f.put(proc{pid: 9001, ppid: pidRoot, start: 9001, comm: "backup"})
				return nil
			},
			pid: 9001, want: audit.RelForeign,
		},
		{
			// The root exited and the host program's next child got its
			// pid: no filter, so not the agent's.
			name: "unfiltered child of the supervisor on the root's old pid is foreign",
			setup: func(f *fakeProc, _ *ownership.Tree) <-chan struct{} {
				f.put(proc{pid: pidRoot, ppid: pidSupervisor, start: 9000, comm: "nvidia-smi"})
				return nil
			},
			pid: pidRoot, want: audit.RelForeign,
		},
		{
			name: "before SetRoot the root is a child of the supervisor",
			setup: func(_ *fakeProc, tr *ownership.Tree) <-chan struct{} {
				tr.SetRoot(ownership.Identity{})
				return nil
			},
			pid: pidRoot, want: audit.RelOwned,
		},
		{
			name: "before SetRoot the root's grandchild is owned",
			setup: func(_ *fakeProc, tr *ownership.Tree) <-chan struct{} {
				tr.SetRoot(ownership.Identity{})
				return nil
			},
			pid: pidGrandchild, want: audit.RelOwned,
		},

		// Owned.
		{name: "direct child of the root", pid: pidChild, want: audit.RelOwned},
		{name: "grandchild of the root", pid: pidGrandchild, want: audit.RelOwned},
		{name: "descendant at depth 50", pid: pidDeepFirst + deepDepth - 1, want: audit.RelOwned},
		{
			// Start times count clock ticks: a fast fork shares its parent's.
			name:  "child started in the same clock tick as its parent",
			extra: []proc{{pid: 600, ppid: pidChild, start: 201}},
			pid:   600, want: audit.RelOwned,
		},
		{name: "orphan re-parented to the supervisor (subreaper)", pid: pidOrphan, want: audit.RelOwned},
		{name: "child of that orphan", pid: pidOrphanKid, want: audit.RelOwned},
		{
			// The walk stops at the root (by pid and start time): what the
			// root starts is owned whatever its filter status.
			name: "child of an agent root that has no seccomp filter",
			setup: func(f *fakeProc, _ *ownership.Tree) <-chan struct{} {
				f.put(proc{pid: pidRoot, ppid: pidSupervisor, start: 200, comm: "agent"})
				return nil
			},
			pid: pidChild, want: audit.RelOwned,
		},
		{
			// The walk stops at the root: descendants need no filter check.
			name:  "unfiltered child of the root",
			extra: []proc{{pid: 605, ppid: pidRoot, start: 605}},
			pid:   605, want: audit.RelOwned,
		},

		// Children of the supervisor: the agent's (under its seccomp
		// filter) or the host program's own (no filter).
		{name: "unfiltered child of the supervisor (the host program's)", pid: pidHostChild, want: audit.RelForeign},
		{name: "child of the host program's child", pid: pidHostKid, want: audit.RelForeign},
		{
			name:  "supervisor child under a strict-mode seccomp",
			extra: []proc{{pid: 620, ppid: pidSupervisor, start: 620}},
			setup: func(f *fakeProc, _ *ownership.Tree) <-chan struct{} {
				f.putStatus(620, strings.Replace(statusFile(proc{pid: 620, ppid: pidSupervisor}), "Seccomp:\t0", "Seccomp:\t1", 1))
				return nil
			},
			pid: 620, want: audit.RelForeign,
		},
		{
			name:  "supervisor child whose status has no Seccomp line",
			extra: []proc{{pid: 621, ppid: pidSupervisor, start: 621}},
			setup: func(f *fakeProc, _ *ownership.Tree) <-chan struct{} {
				f.putStatus(621, "Name:\tx\nPid:\t621\n")
				return nil
			},
			pid: 621, want: audit.RelForeign, wantErr: "no Seccomp line",
		},
		{
			name:  "supervisor child whose Seccomp line is garbled",
			extra: []proc{{pid: 622, ppid: pidSupervisor, start: 622}},
			setup: func(f *fakeProc, _ *ownership.Tree) <-chan struct{} {
				f.putStatus(622, "Name:\tx\nSeccomp:\tfilter\n")
				return nil
			},
			pid: 622, want: audit.RelForeign, wantErr: "invalid syntax",
		},
		{
			// A missing status reads as a process that exited mid-walk:
			// retried, and with its stat still there, given up on.
			name:  "supervisor child whose status file is missing",
			extra: []proc{{pid: 623, ppid: pidSupervisor, start: 623}},
			setup: func(f *fakeProc, _ *ownership.Tree) <-chan struct{} {
				if err := os.Remove(filepath.Join(f.dir(623), "status")); err != nil {
					f.t.Errorf("fake /proc: %v", err)
				}
				return nil
			},
			pid: 623, want: audit.RelForeign, wantErr: "kept changing",
		},
		{
			name:  "filtered process under PID 1 (a filter alone owns nothing)",
			extra: []proc{{pid: 625, ppid: pidInit, start: 625, filtered: true}},
			pid:   625, want: audit.RelForeign,
		},

		// Foreign.
		{name: "process under PID 1", pid: pidForeign, want: audit.RelForeign},
		{name: "grandchild of PID 1", pid: pidForeignKid, want: audit.RelForeign},
		{name: "sibling of the supervisor under its shell", pid: pidSibling, want: audit.RelForeign},
		{name: "child of that sibling", pid: pidSiblingKid, want: audit.RelForeign},
		{name: "parent chain ends at ppid 0", pid: pidOutside, want: audit.RelForeign},
		{name: "grandparent chain ends at ppid 0", pid: pidOutsideKid, want: audit.RelForeign},
		{name: "kthreadd", pid: pidKthreadd, want: audit.RelForeign},
		{name: "kernel thread", pid: pidKworker, want: audit.RelForeign},

		// Gone.
		{name: "nonexistent pid", pid: pidMissing, want: audit.RelGone},

		// Races, static: /proc shows an inconsistent chain and stays that
		// way. The walk refuses to trust a parent that started after its
		// child (its pid was reused) or that vanished; ClassifyStat re-reads
		// the child and walks again, up to maxRetries (8) walks, and then
		// gives up with an error: never Owned.
		{
			name: "parent pid reused by a later child of the supervisor",
			extra: []proc{
				{pid: 700, ppid: 701, start: 700},
				{pid: 701, ppid: pidSupervisor, start: 750},
			},
			pid: 700, want: audit.RelForeign, wantErr: "kept changing",
		},
		{
			name: "parent pid reused by a later child of the agent root",
			extra: []proc{
				{pid: 710, ppid: 711, start: 710},
				{pid: 711, ppid: pidRoot, start: 760},
			},
			pid: 710, want: audit.RelForeign, wantErr: "kept changing",
		},
		{
			name: "grandparent pid reused by a later child of the agent root",
			extra: []proc{
				{pid: 715, ppid: 716, start: 715},
				{pid: 716, ppid: 717, start: 712},
				{pid: 717, ppid: pidRoot, start: 765},
			},
			pid: 715, want: audit.RelForeign, wantErr: "kept changing",
		},
		{
			name: "parent missing and child never re-parented",
			extra: []proc{
				{pid: 720, ppid: 721, start: 720},
			},
			pid: 720, want: audit.RelForeign, wantErr: "kept changing",
		},
		{
			name: "grandparent missing mid-walk",
			extra: []proc{
				{pid: 725, ppid: 726, start: 725},
				{pid: 726, ppid: 727, start: 722},
			},
			pid: 725, want: audit.RelForeign, wantErr: "kept changing",
		},

		// Races, live: the fake /proc changes while Classify walks (a FIFO
		// stat file runs the change when the walk reads it).
		{
			// The kernel shows parent 0 for a process it is releasing.
			name:  "target being reaped reads parent 0, then is gone",
			extra: []proc{{pid: 760, ppid: pidChild, start: 760, comm: "true", filtered: true}},
			setup: func(f *fakeProc, _ *ownership.Tree) <-chan struct{} {
				return f.onFirstRead(760, statLine(proc{pid: 760, ppid: 0, start: 760, comm: "true"}), func() {})
			},
			pid: 760, want: audit.RelGone,
		},
		{
			name:  "ancestor being reaped reads parent 0, child re-parented to the supervisor",
			extra: []proc{{pid: 761, ppid: 762, start: 763, filtered: true}, {pid: 762, ppid: pidRoot, start: 762, filtered: true}},
			setup: func(f *fakeProc, _ *ownership.Tree) <-chan struct{} {
				return f.onFirstRead(762, statLine(proc{pid: 762, ppid: 0, start: 762}), func() {
					f.put(proc{pid: 761, ppid: pidSupervisor, start: 763, filtered: true})
				})
			},
			pid: 761, want: audit.RelOwned,
		},
		{
			name:  "parent exits mid-walk, child re-parented to the supervisor",
			extra: []proc{{pid: 740, ppid: 741, start: 740}},
			setup: func(f *fakeProc, _ *ownership.Tree) <-chan struct{} {
				return f.onFirstRead(741, "", func() {
					f.put(proc{pid: 740, ppid: pidSupervisor, start: 740, filtered: true})
				})
			},
			pid: 740, want: audit.RelOwned,
		},
		{
			name:  "parent exits mid-walk, child re-parented to the agent root",
			extra: []proc{{pid: 740, ppid: 741, start: 740}},
			setup: func(f *fakeProc, _ *ownership.Tree) <-chan struct{} {
				return f.onFirstRead(741, "", func() {
					f.put(proc{pid: 740, ppid: pidRoot, start: 740, filtered: true})
				})
			},
			pid: 740, want: audit.RelOwned,
		},
		{
			name:  "parent exits mid-walk, child re-parented to PID 1",
			extra: []proc{{pid: 740, ppid: 741, start: 740}},
			setup: func(f *fakeProc, _ *ownership.Tree) <-chan struct{} {
				return f.onFirstRead(741, "", func() {
					f.put(proc{pid: 740, ppid: pidInit, start: 740, filtered: true})
				})
			},
			pid: 740, want: audit.RelForeign,
		},
		{
			// The walk reads the reused 751 (a child of the supervisor,
			// started after 750): a naive walk would answer Owned.
			name:  "parent exits mid-walk and its pid is reused by a child of the supervisor",
			extra: []proc{{pid: 750, ppid: 751, start: 750}},
			setup: func(f *fakeProc, _ *ownership.Tree) <-chan struct{} {
				reused := proc{pid: 751, ppid: pidSupervisor, start: 790, filtered: true}
				return f.onFirstRead(751, statLine(reused), func() {
					f.put(proc{pid: 750, ppid: pidInit, start: 750})
					f.put(reused)
				})
			},
			pid: 750, want: audit.RelForeign,
		},
		{
			name:  "grandparent exits mid-walk and its pid is reused by the root's child",
			extra: []proc{{pid: 755, ppid: 756, start: 755}, {pid: 756, ppid: 757, start: 752}},
			setup: func(f *fakeProc, _ *ownership.Tree) <-chan struct{} {
				reused := proc{pid: 757, ppid: pidRoot, start: 795}
				return f.onFirstRead(757, statLine(reused), func() {
					f.put(proc{pid: 756, ppid: pidInit, start: 752})
					f.put(reused)
				})
			},
			pid: 755, want: audit.RelForeign,
		},
		{
			name:  "child exits while the walk retries",
			extra: []proc{{pid: 760, ppid: 761, start: 760}},
			setup: func(f *fakeProc, _ *ownership.Tree) <-chan struct{} {
				return f.onFirstRead(761, "", func() { f.remove(760) })
			},
			pid: 760, want: audit.RelGone,
		},
		{
			name:  "child's pid reused while the walk retries",
			extra: []proc{{pid: 760, ppid: 761, start: 760}},
			setup: func(f *fakeProc, _ *ownership.Tree) <-chan struct{} {
				return f.onFirstRead(761, "", func() {
					f.put(proc{pid: 760, ppid: pidSupervisor, start: 7600, filtered: true})
				})
			},
			pid: 760, want: audit.RelGone,
		},
		{
			name:  "child's stat garbled on the re-read",
			extra: []proc{{pid: 760, ppid: 761, start: 760}},
			setup: func(f *fakeProc, _ *ownership.Tree) <-chan struct{} {
				return f.onFirstRead(761, "", func() { f.putRaw(760, "760 (x") })
			},
			pid: 760, want: audit.RelForeign, wantErr: "parse stat",
		},

		// Unreadable or garbled stat files: an error, so callers fail closed.
		{
			name:  "parent's stat garbled",
			extra: []proc{{pid: 800, ppid: 801, start: 800}},
			setup: func(f *fakeProc, _ *ownership.Tree) <-chan struct{} {
				f.putRaw(801, "801 (x) S")
				return nil
			},
			pid: 800, want: audit.RelForeign, wantErr: "parse stat",
		},
		{
			name:  "grandparent's stat has a bad ppid",
			extra: []proc{{pid: 805, ppid: 806, start: 805}, {pid: 806, ppid: 807, start: 803}},
			setup: func(f *fakeProc, _ *ownership.Tree) <-chan struct{} {
				f.putRaw(807, strings.Replace(statLine(proc{pid: 807, ppid: pidRoot, start: 801}), " S 200 ", " S 2x0 ", 1))
				return nil
			},
			pid: 805, want: audit.RelForeign, wantErr: "parse stat",
		},
		{
			name:  "parent's stat unreadable",
			extra: []proc{{pid: 810, ppid: 811, start: 810}},
			setup: func(f *fakeProc, _ *ownership.Tree) <-chan struct{} {
				f.unreadable(811)
				return nil
			},
			pid: 810, want: audit.RelForeign, wantErr: "is a directory",
		},
		{
			name: "own stat garbled",
			setup: func(f *fakeProc, _ *ownership.Tree) <-chan struct{} {
				f.putRaw(830, "830 (x")
				return nil
			},
			pid: 830, want: audit.RelForeign, wantErr: "parse stat",
		},
		{
			name: "own stat unreadable",
			setup: func(f *fakeProc, _ *ownership.Tree) <-chan struct{} {
				f.unreadable(831)
				return nil
			},
			pid: 831, want: audit.RelForeign, wantErr: "is a directory",
		},

		// Cycles in ppid links end with an error, never hang, never Owned.
		{
			// Equal start times pass the parent-before-child check, so
			// only the depth bound (4096) stops the walk.
			name: "two-process cycle, same start time",
			extra: []proc{
				{pid: 840, ppid: 841, start: 840},
				{pid: 841, ppid: 840, start: 840},
			},
			pid: 840, want: audit.RelForeign, wantErr: "deeper than",
		},
		{
			name: "process is its own parent",
			extra: []proc{
				{pid: 845, ppid: 845, start: 845},
			},
			pid: 845, want: audit.RelForeign, wantErr: "deeper than",
		},
		{
			// One link goes from an earlier to a later start: that is
			// taken as pid reuse, the walk retries and gives up.
			name: "two-process cycle, different start times",
			extra: []proc{
				{pid: 850, ppid: 851, start: 850},
				{pid: 851, ppid: 850, start: 845},
			},
			pid: 850, want: audit.RelForeign, wantErr: "kept changing",
		},
		{
			name: "chain that runs into a two-process cycle",
			extra: []proc{
				{pid: 855, ppid: 856, start: 855},
				{pid: 856, ppid: 857, start: 855},
				{pid: 857, ppid: 856, start: 855},
			},
			pid: 855, want: audit.RelForeign, wantErr: "deeper than",
		},
	}

	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each row has its own fake /proc
			f, tr := newSession(t, tc.extra...)
			var fired <-chan struct{}
			if tc.setup != nil {
				fired = tc.setup(f, tr)
			}
			got := classify(t, tr, tc.pid)
			if got.rel != tc.want {
				t.Errorf("Classify(%d) relation = %v, want %v (err %v)", tc.pid, got.rel, tc.want, got.err)
			}
			switch {
			case tc.wantErr == "" && got.err != nil:
				t.Errorf("Classify(%d) error = %v, want nil", tc.pid, got.err)
			case tc.wantErr != "" && got.err == nil:
				t.Errorf("Classify(%d) error = nil, want one containing %q", tc.pid, tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(got.err.Error(), tc.wantErr):
				t.Errorf("Classify(%d) error = %v, want one containing %q", tc.pid, got.err, tc.wantErr)
			}
			if got.rel == audit.RelOwned && (tc.want != audit.RelOwned || got.err != nil) {
				t.Errorf("Classify(%d) = audit.RelOwned (err %v): a process the session does not own would be signalable", tc.pid, got.err)
			}
			if fired != nil {
				select {
				case <-fired:
				default:
					t.Fatalf("the walk never read the stat file that simulates the race")
				}
				return // the race is spent; ClassifyStat cannot replay it
			}
			// Classify returns the stat it read, and ClassifyStat agrees
			// with it on the same stat.
			st, err := f.FS().Stat(tc.pid)
			if err != nil {
				return
			}
			if got.st != st {
				t.Errorf("Classify(%d) stat = %+v, want %+v", tc.pid, got.st, st)
			}
			rel, err := tr.ClassifyStat(st)
			if rel != got.rel || (err == nil) != (got.err == nil) {
				t.Errorf("ClassifyStat = %v, %v; Classify = %v, %v", rel, err, got.rel, got.err)
			}
		})
	}
}

// TestClassifyStatAgrees checks ClassifyStat against Classify for every
// process of the fake session, root set and not.
func TestClassifyStatAgrees(t *testing.T) {
	f, tr := newSession(t)
	pids, err := f.FS().Pids()
	if err != nil {
		t.Fatal(err)
	}
	if len(pids) != len(baseProcs()) {
		t.Fatalf("Pids() = %d pids, want %d", len(pids), len(baseProcs()))
	}
	for _, root := range []ownership.Identity{rootID, {}} {
		tr.SetRoot(root)
		counts := map[audit.Relation]int{}
		for _, pid := range pids {
			st, err := f.FS().Stat(pid)
			if err != nil {
				t.Fatal(err)
			}
			want := classify(t, tr, pid)
			rel, err := tr.ClassifyStat(st)
			if rel != want.rel || (err == nil) != (want.err == nil) {
				t.Errorf("root %+v, pid %d: ClassifyStat = %v, %v; Classify = %v, %v", root, pid, rel, err, want.rel, want.err)
			}
			counts[rel]++
		}
		// The comparison must not be vacuous: every kind of answer occurs.
		for _, r := range []audit.Relation{audit.RelForeign, audit.RelOwned, audit.RelSupervisor, audit.RelSupervisorAncestor, audit.RelInit} {
			if counts[r] == 0 {
				t.Errorf("root %+v: no process classified %v", root, r)
			}
		}
		if root == rootID && counts[audit.RelAgentRoot] != 1 {
			t.Errorf("%d processes classified as the agent root, want 1", counts[audit.RelAgentRoot])
		}
	}
	// A stat of a process that has exited since it was read: classified
	// from the stat while the walk needs nothing of the process itself; a
	// child of the supervisor needs its seccomp status, and is then Gone.
	rel, err := tr.ClassifyStat(procfs.Stat{Pid: pidMissing, PPid: pidRoot, StartTime: 9999})
	if rel != audit.RelOwned || err != nil {
		t.Errorf("ClassifyStat(stale child of the root) = %v, %v; want owned, nil", rel, err)
	}
	rel, err = tr.ClassifyStat(procfs.Stat{Pid: pidMissing, PPid: pidSupervisor, StartTime: 9999})
	if rel != audit.RelGone || err != nil {
		t.Errorf("ClassifyStat(stale child of the supervisor) = %v, %v; want gone, nil", rel, err)
	}
}

func TestOwned(t *testing.T) {
	all := ownedPids()
	identities := func(ids []ownership.Identity) []int {
		var pids []int
		for _, id := range ids {
			pids = append(pids, id.Pid)
		}
		slices.Sort(pids)
		return pids
	}
	tests := []struct {
		name string
		max  int
		want int // how many processes; all of them owned
	}{
		{"unbounded", 1000, len(all)},
		{"exactly all", len(all), len(all)},
		{"one", 1, 1},
		{"five", 5, 5},
		{"zero", 0, 0},
		{"negative", -1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, tr := newSession(t)
			// Noise that must be skipped: a garbled and an unreadable stat.
			f.putRaw(880, "garbage")
			f.unreadable(881)
			got, total, err := tr.Owned(tc.max)
			if err != nil {
				t.Fatalf("Owned(%d): %v", tc.max, err)
			}
			if total != len(all) {
				t.Errorf("Owned(%d) counts %d processes, want %d", tc.max, total, len(all))
			}
			if tc.want > 0 && got[0] != rootID {
				t.Errorf("Owned(%d) lists %+v first, want the agent root %+v", tc.max, got[0], rootID)
			}
			if len(got) != tc.want {
				t.Fatalf("Owned(%d) = %d processes %v, want %d", tc.max, len(got), identities(got), tc.want)
			}
			byPid := map[int]proc{}
			for _, p := range baseProcs() {
				byPid[p.pid] = p
			}
			seen := map[int]bool{}
			for _, id := range got {
				p := byPid[id.Pid]
				if !slices.Contains(all, id.Pid) {
					t.Errorf("Owned(%d) lists pid %d, which the session does not own", tc.max, id.Pid)
				} else if id.StartTime != p.start || id.Comm != p.name() {
					t.Errorf("Owned(%d) lists %+v, want start %d comm %q", tc.max, id, p.start, p.name())
				}
				if seen[id.Pid] {
					t.Errorf("Owned(%d) lists pid %d twice", tc.max, id.Pid)
				}
				seen[id.Pid] = true
			}
			if tc.want == len(all) && !slices.Equal(identities(got), all) {
				t.Errorf("Owned(%d) = %v, want %v", tc.max, identities(got), all)
			}
		})
	}

	t.Run("root included, lifelines and foreign excluded", func(t *testing.T) {
		_, tr := newSession(t)
		got, _, err := tr.Owned(1000)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(got, rootID) {
			t.Errorf("audit.RelOwned lacks the agent root %+v: %v", rootID, got)
		}
	})
	t.Run("root exited", func(t *testing.T) {
		f, tr := newSession(t)
		f.remove(pidRoot)
		f.put(proc{pid: pidChild, ppid: pidSupervisor, start: 201, comm: "python3", filtered: true}) // re-parented
		got, _, err := tr.Owned(1000)
		if err != nil {
			t.Fatal(err)
		}
		want := slices.DeleteFunc(ownedPids(), func(p int) bool { return p == pidRoot })
		if !slices.Equal(identities(got), want) {
			t.Errorf("audit.RelOwned = %v, want %v", identities(got), want)
		}
	})
	t.Run("unlistable /proc", func(t *testing.T) {
		f, tr := newSession(t)
		if err := os.RemoveAll(f.root); err != nil {
			t.Fatal(err)
		}
		if got, _, err := tr.Owned(10); err == nil {
			t.Errorf("audit.RelOwned on a missing /proc = %v, nil error", got)
		}
	})
}

// TestConcurrentSetRoot runs Classify while the root changes; with -race it
// checks that the root is guarded.
func TestConcurrentSetRoot(t *testing.T) {
	_, tr := newSession(t)
	var wg sync.WaitGroup
	var sets atomic.Int64
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%2 == 0 {
				tr.SetRoot(rootID)
			} else {
				tr.SetRoot(ownership.Identity{})
			}
			sets.Add(1)
		}
	}()
	// Classify until the setter has clearly run alongside (it may start
	// late on a loaded machine), and at least 200 times.
	deadline := time.Now().Add(10 * time.Second)
	for n := 0; n < 200 || (sets.Load() < 1000 && time.Now().Before(deadline)); n++ {
		rel, _, err := tr.Classify(pidRoot)
		if err != nil || (rel != audit.RelAgentRoot && rel != audit.RelOwned) {
			t.Errorf("Classify(root) = %v, %v", rel, err)
		}
		if rel, _, err := tr.Classify(pidGrandchild); rel != audit.RelOwned || err != nil {
			t.Errorf("Classify(grandchild) = %v, %v", rel, err)
		}
		_ = tr.Root()
	}
	close(stop)
	wg.Wait()
}

// ---------------------------------------------------------------------------
// Against the real /proc.
// ---------------------------------------------------------------------------

// subreaperChild is the job of the re-executed test binary that plays a
// supervisor (see subreaperHelper).
const subreaperChild = "__ownership_test_subreaper"

func TestMain(m *testing.M) {
	reexec.Run(reexec.Child{Name: subreaperChild, Main: func([]string) int { return subreaperHelper() }})
	os.Exit(m.Run())
}

// startSleep starts `sleep 30` as a child and kills it when the test ends.
func startSleep(t *testing.T, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(name, args...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// pinForeign pins pid (not our child) with a pidfd, checks that it is the
// sleep we started, and SIGKILLs it through the pidfd when the test ends, so a reused
// pid is never hit.
func pinForeign(t *testing.T, pid int) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("pidfd_open(%d): %v", pid, err)
	}
	// $! is printed right after the fork, possibly before the child has
	// exec'd sleep.
	var st procfs.Stat
	for deadline := time.Now().Add(10 * time.Second); ; {
		st, err = procfs.Default().Stat(pid)
		if err == nil && st.Comm == "sleep" {
			break
		}
		if err != nil || time.Now().After(deadline) {
			unix.Close(fd)
			t.Fatalf("pid %d is not the sleep we started: %+v, %v", pid, st, err)
		}
		time.Sleep(time.Millisecond)
	}
	t.Cleanup(func() {
		_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		unix.Close(fd)
	})
}

// doubleFork runs `sh -c 'sleep 30 & echo $!'` to completion and returns the
// pid of the sleep it left behind, re-parented to the nearest subreaper.
func doubleFork() (int, error) {
	out, err := exec.Command("sh", "-c", "sleep 30 </dev/null >/dev/null 2>&1 & echo $!").Output()
	if err != nil {
		return 0, fmt.Errorf("sh: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		return 0, fmt.Errorf("sh printed %q: %v", out, err)
	}
	return pid, nil
}

func TestRealProc(t *testing.T) {
	fs := procfs.Default()
	if _, err := fs.Stat(os.Getpid()); err != nil {
		t.Skipf("no usable /proc: %v", err)
	}
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep(1)")
	}
	if os.Getpid() == 1 {
		t.Skip("the test process is PID 1")
	}
	tr, err := ownership.NewTree(fs, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	expect := func(t *testing.T, pid int, want audit.Relation) {
		t.Helper()
		got := classify(t, tr, pid)
		if got.rel != want || got.err != nil {
			t.Errorf("Classify(%d) = %v, %v; want %v, nil", pid, got.rel, got.err, want)
		}
	}

	t.Run("supervisor", func(t *testing.T) { expect(t, os.Getpid(), audit.RelSupervisor) })
	t.Run("PID 1", func(t *testing.T) { expect(t, 1, audit.RelInit) })
	t.Run("test's parent", func(t *testing.T) {
		if os.Getppid() == 1 {
			expect(t, 1, audit.RelInit)
			return
		}
		expect(t, os.Getppid(), audit.RelSupervisorAncestor)
	})
	t.Run("nonexistent pid", func(t *testing.T) {
		// Above pid_max (at most 2^22), so it cannot exist.
		expect(t, 1<<22+1, audit.RelGone)
	})

	// The agent root: a shell that starts a background sleep and then
	// becomes a sleep itself (same pid, same start time).
	root := exec.Command("sh", "-c", "sleep 30 </dev/null >/dev/null 2>&1 & echo $!; exec sleep 30")
	stdout, err := root.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := root.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = root.Process.Kill()
		_ = root.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the root's output: %v", err)
	}
	rootKid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("root printed %q", line)
	}
	pinForeign(t, rootKid)

	// A child of the supervisor is the agent's only under a seccomp filter;
	// the test's children have one only if the test process does.
	childRel := func(t *testing.T, pid int) audit.Relation {
		t.Helper()
		mode, filters, err := fs.Seccomp(pid)
		if err != nil {
			t.Fatal(err)
		}
		_, own, err := fs.Seccomp(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if mode == 2 && filters > own {
			return audit.RelOwned
		}
		return audit.RelForeign
	}
	t.Run("root before SetRoot is the supervisor's child", func(t *testing.T) {
		expect(t, root.Process.Pid, childRel(t, root.Process.Pid))
	})
	st, err := fs.Stat(root.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	tr.SetRoot(ownership.IdentityOf(st))
	t.Run("agent root", func(t *testing.T) { expect(t, root.Process.Pid, audit.RelAgentRoot) })
	t.Run("child of the agent root", func(t *testing.T) { expect(t, rootKid, audit.RelOwned) })

	direct := startSleep(t, "sleep", "30")
	t.Run("direct child sleep", func(t *testing.T) { expect(t, direct.Process.Pid, childRel(t, direct.Process.Pid)) })

	t.Run("audit.RelOwned lists the root", func(t *testing.T) {
		ids, _, err := tr.Owned(1 << 16)
		if err != nil {
			t.Fatal(err)
		}
		var pids []int
		for _, id := range ids {
			pids = append(pids, id.Pid)
		}
		for _, pid := range []int{root.Process.Pid, rootKid} {
			if !slices.Contains(pids, pid) {
				t.Errorf("Owned() = %v, lacks %d", pids, pid)
			}
		}
		if want := childRel(t, direct.Process.Pid) == audit.RelOwned; slices.Contains(pids, direct.Process.Pid) != want {
			t.Errorf("Owned() = %v: direct child %d listed = %v, want %v", pids, direct.Process.Pid, !want, want)
		}
		for _, pid := range []int{1, os.Getpid(), os.Getppid()} {
			if slices.Contains(pids, pid) {
				t.Errorf("Owned() = %v, lists lifeline %d", pids, pid)
			}
		}
	})

	t.Run("double-forked sleep without a subreaper", func(t *testing.T) {
		if is, err := sys.ChildSubreaper(); err == nil && is {
			t.Skip("the test process is a child subreaper")
		}
		pid, err := doubleFork()
		if err != nil {
			t.Fatal(err)
		}
		pinForeign(t, pid)
		st, err := fs.Stat(pid)
		if err != nil {
			t.Fatal(err)
		}
		if st.PPid == os.Getpid() {
			t.Fatalf("orphan %d was re-parented to the test process", pid)
		}
		// Its new parent is PID 1 or a subreaper above the test process:
		// outside the session.
		expect(t, pid, audit.RelForeign)
	})

	t.Run("double-forked sleep under a subreaper", func(t *testing.T) {
		featuretest.Require(t, features.IDChildSubreaper)
		out, err := reexec.Command(subreaperChild).CombinedOutput()
		if err != nil {
			t.Fatalf("helper: %v\n%s", err, out)
		}
		res := map[string]string{}
		for _, l := range strings.Split(string(out), "\n") {
			if k, v, ok := strings.Cut(l, "="); ok {
				res[k] = v
			}
		}
		if why, ok := res["skip"]; ok {
			t.Fatalf("helper: %s, though the test process has a child subreaper", why)
		}
		if res["orphan_ppid"] == "" || res["orphan_ppid"] != res["supervisor"] {
			t.Errorf("orphan re-parented to %q, want the helper %q\n%s", res["orphan_ppid"], res["supervisor"], out)
		}
		for k, want := range map[string]string{
			"supervisor_rel": audit.RelSupervisor.String(),
			"root":           audit.RelAgentRoot.String(),
			"orphan":         audit.RelOwned.String(),
			"orphan_seccomp": "2",
			"direct":         audit.RelOwned.String(),
			"unfiltered":     audit.RelForeign.String(),
		} {
			if res[k] != want {
				t.Errorf("helper: %s = %q, want %q\n%s", k, res[k], want, out)
			}
		}
	})
}

// allowAllFilter puts every thread of this process under a seccomp filter
// that allows everything, so that its children carry a filter as the agent's
// processes do.
func allowAllFilter() error {
	runtime.LockOSThread() // no_new_privs is per thread; TSYNC copies it to the others
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	insns := []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW}}
	r, err := sys.SeccompSetModeFilter(insns, unix.SECCOMP_FILTER_FLAG_TSYNC)
	if err != nil {
		return fmt.Errorf("seccomp(SET_MODE_FILTER, TSYNC): %w", err)
	}
	if r != 0 {
		return fmt.Errorf("seccomp(SET_MODE_FILTER, TSYNC): thread %d could not be synchronized", r)
	}
	return nil
}

// subreaperHelper runs in a re-executed test binary and plays the
// supervisor: it becomes a child subreaper and starts its children under a
// seccomp filter, as paddock does, double-forks a sleep and classifies it.
// It prints key=value lines; the exit status is 0 unless something failed.
func subreaperHelper() int {
	fail := func(format string, args ...any) int {
		fmt.Printf("error="+format+"\n", args...)
		return 1
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Printf("skip=prctl(PR_SET_CHILD_SUBREAPER): %v\n", err)
		return 0
	}
	fs := procfs.Default()
	me := os.Getpid()

	// Before the filter: a child without one is the host program's own.
	unfiltered := exec.Command("sleep", "30")
	if err := unfiltered.Start(); err != nil {
		return fail("start unfiltered child: %v", err)
	}
	defer func() { _ = unfiltered.Process.Kill(); _ = unfiltered.Wait() }()
	// The tree is made before the filter, as paddock's supervisor is: the
	// agent's processes carry one filter more than the supervisor.
	tr, err := ownership.NewTree(fs, me)
	if err != nil {
		return fail("NewTree: %v", err)
	}
	if err := allowAllFilter(); err != nil {
		fmt.Printf("skip=%v\n", err)
		return 0
	}
	fmt.Printf("supervisor=%d\n", me)
	rel, _, err := tr.Classify(me)
	fmt.Printf("supervisor_rel=%v\n", rel)
	if err != nil {
		return fail("Classify(self): %v", err)
	}

	root := exec.Command("sleep", "30")
	if err := root.Start(); err != nil {
		return fail("start root: %v", err)
	}
	defer func() { _ = root.Process.Kill(); _ = root.Wait() }()
	st, err := fs.Stat(root.Process.Pid)
	if err != nil {
		return fail("stat root: %v", err)
	}
	tr.SetRoot(ownership.IdentityOf(st))
	rel, _, err = tr.Classify(root.Process.Pid)
	fmt.Printf("root=%v\n", rel)
	if err != nil {
		return fail("Classify(root): %v", err)
	}

	// Started before the filter: the host program's own child.
	rel, _, err = tr.Classify(unfiltered.Process.Pid)
	fmt.Printf("unfiltered=%v\n", rel)
	if err != nil {
		return fail("Classify(unfiltered): %v", err)
	}

	direct := exec.Command("sleep", "30")
	if err := direct.Start(); err != nil {
		return fail("start direct child: %v", err)
	}
	defer func() { _ = direct.Process.Kill(); _ = direct.Wait() }()
	rel, _, err = tr.Classify(direct.Process.Pid)
	fmt.Printf("direct=%v\n", rel)
	if err != nil {
		return fail("Classify(direct): %v", err)
	}

	pid, err := doubleFork()
	if err != nil {
		return fail("%v", err)
	}
	// The orphan is our child now: kill and reap it by pid only once done.
	defer func() {
		_ = unix.Kill(pid, unix.SIGKILL)
		var ws unix.WaitStatus
		_, _ = unix.Wait4(pid, &ws, 0, nil)
	}()
	st, err = fs.Stat(pid)
	if err != nil {
		return fail("stat orphan: %v", err)
	}
	fmt.Printf("orphan_ppid=%d\n", st.PPid)
	mode, _, err := fs.Seccomp(pid)
	fmt.Printf("orphan_seccomp=%d\n", mode)
	if err != nil {
		return fail("orphan's seccomp mode: %v", err)
	}
	rel, _, err = tr.Classify(pid)
	fmt.Printf("orphan=%v\n", rel)
	if err != nil {
		return fail("Classify(orphan): %v", err)
	}
	return 0
}

// The supervisor's own filter count is read from its calling thread when it
// is this process: a thread that launched an earlier agent may have been
// the main thread, whose /proc/PID/status then shows the agent's filter,
// and the agent's processes, with one filter, must still carry more than
// the supervisor.
func TestSupervisorFiltersFromThread(t *testing.T) {
	self := os.Getpid()
	f := newFakeProc(t, proc{pid: self, ppid: 0, start: 100, filtered: true})
	thread := filepath.Join(f.root, "thread-self")
	if err := os.Remove(thread); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if err := os.Mkdir(thread, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(thread, "status"), []byte(statusFile(proc{pid: self})), 0o644); err != nil {
		t.Fatal(err)
	}
	tree, err := ownership.NewTree(f.FS(), self)
	if err != nil {
		t.Fatal(err)
	}
	if !tree.CarriesAgentFilter(1) {
		t.Error("one filter does not carry the agent's: the supervisor's count came from its main thread's filtered status")
	}
	// Another pid than this process's is read from its own status.
	other := newFakeProc(t, proc{pid: 4242, ppid: 0, start: 100, filtered: true})
	if tree, err = ownership.NewTree(other.FS(), 4242); err != nil {
		t.Fatal(err)
	}
	if tree.CarriesAgentFilter(1) {
		t.Error("a supervisor at pid 4242 with one filter: one filter carries the agent's")
	}
}
