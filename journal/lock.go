package journal

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The journal's lock.
//
// Every writer holds an exclusive flock(2) on the journal file while it
// appends a record (microseconds) or rotates the file. flock has no
// timeout, and any process of the journal's user can take the lock too (an
// agent running as that user can open the file): a writer that waited for
// it without bound would hang, so that paddock run would never start and an
// adoption waiting for its record would wait for ever. So a Journal polls
// for the lock for at most Options.LockWait, and then gives up with a
// *LockError naming the processes that hold it. After a wait that timed
// out, the next ones do not wait at all (a single try) until the lock is
// taken again: a hostile holder costs one LockWait, not one per record.

// DefaultLockWait is how long a Journal waits for the journal's lock when
// Options.LockWait is not set. Writers hold it for microseconds; a second
// and more means someone holds it on purpose, or is stuck.
const DefaultLockWait = 5 * time.Second

// The polling of a held lock: the first retry after lockPollMin, then twice
// as long each time, up to lockPollMax.
const (
	lockPollMin = 50 * time.Microsecond
	lockPollMax = 10 * time.Millisecond
)

// LockError says that the journal's lock was held by another process for
// longer than a Journal waits (Options.LockWait), and by whom.
type LockError struct {
	// Path is the journal file.
	Path string
	// Waited is how long the Journal waited (0: it did not wait, because
	// the wait before this one timed out and the lock has not been taken
	// since).
	Waited time.Duration
	// Holders are the processes found holding the lock: each has the file
	// open, with the lock, on one of its descriptors (/proc/PID/fdinfo).
	// Empty when none could be found (a process of another user, or in
	// another PID namespace).
	Holders []Holder
	// Taker is the pid /proc/locks names for the lock: the process that
	// took it, which may have exited since, leaving it to the processes
	// it shared the open file with (a shell's `flock 9`). 0: not found.
	Taker int
}

// Holder is a process that holds the journal's lock.
type Holder struct {
	Pid  int
	Comm string // its /proc/PID/comm, as the process set it
}

func (e *LockError) Error() string {
	var who string
	switch {
	case len(e.Holders) > 0:
		var names []string
		for _, h := range e.Holders {
			// %q: a process chooses its own name, escape sequences included.
			name := fmt.Sprintf("pid %d (%q)", h.Pid, h.Comm)
			if h.Pid == os.Getpid() {
				name += ", this paddock, through a descriptor it inherited"
			}
			names = append(names, name)
		}
		who = "held by " + strings.Join(names, ", ")
	case e.Taker > 0:
		who = fmt.Sprintf("taken by pid %d, which paddock cannot see holding it now (another user's, or it handed the open file on)", e.Taker)
	default:
		who = "held by a process paddock cannot see (another user's, or in another PID namespace)"
	}
	if e.Waited == 0 {
		return fmt.Sprintf("journal %s: lock: still %s, as at the last wait, which timed out: not written (paddock waits again once it has had the lock)", e.Path, who)
	}
	return fmt.Sprintf("journal %s: lock: %s for more than %v: not written (writers hold the journal's lock for microseconds; paddock waits at most %v, --journal-lock-wait)", e.Path, who, e.Waited, e.Waited)
}

// lockWait takes the exclusive flock on fd (the file at j.path), polling
// for at most j.lockWait; a *LockError when another holds it longer.
// j.mu must be held.
func (j *Journal) lockWait(fd int) error {
	try := func() error {
		return retryEINTR(func() error { return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) })
	}
	err := try()
	if err == nil {
		j.lockStuck = nil
		return nil
	}
	if !errors.Is(err, unix.EWOULDBLOCK) {
		return fmt.Errorf("journal %s: lock: %w", j.path, err)
	}
	if j.lockStuck != nil {
		// The last wait timed out and nobody took the lock since: no
		// second wait for the same holder.
		e := *j.lockStuck
		e.Waited = 0
		return &e
	}
	deadline := time.Now().Add(j.lockWaitMax)
	for pause := lockPollMin; ; pause = min(2*pause, lockPollMax) {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		time.Sleep(min(pause, left))
		if err = try(); err == nil {
			return nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return fmt.Errorf("journal %s: lock: %w", j.path, err)
		}
	}
	e := &LockError{Path: j.path, Waited: j.lockWaitMax}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil {
		e.Taker, e.Holders = lockHolders("/proc", st.Dev, st.Ino)
	}
	j.lockStuck = e
	return e
}

// lockHolders finds who holds a flock on the file dev/ino, under the /proc
// at root: the pid /proc/locks names (the process that took the lock), and
// the processes holding it now, found by their descriptors' fdinfo "lock:"
// lines (a descriptor's fdinfo shows the locks of its open file, since
// Linux 4.1). Processes paddock may not read are passed over. It runs only
// once a wait has timed out.
func lockHolders(root string, dev, ino uint64) (taker int, holders []Holder) {
	id := fmt.Sprintf("%02x:%02x:%d", unix.Major(dev), unix.Minor(dev), ino)
	ours := func(line string) (pid int, ok bool) {
		// "1: FLOCK  ADVISORY  WRITE 31375 fe:00:9978054 0 EOF"; a waiter's
		// line has "->" after the number.
		f := strings.Fields(line)
		if len(f) < 6 || f[1] != "FLOCK" || f[5] != id {
			return 0, false
		}
		pid, err := strconv.Atoi(f[4])
		return pid, err == nil
	}
	if b, err := os.ReadFile(filepath.Join(root, "locks")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if pid, ok := ours(line); ok {
				taker = pid
				break
			}
		}
	}
	procs, _ := os.ReadDir(root)
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		// fdinfo only: stat(2) of a descriptor's file could call into a
		// FUSE daemon, which the holder may be.
		fds, _ := os.ReadDir(filepath.Join(root, p.Name(), "fdinfo"))
		for _, fd := range fds {
			info, err := os.ReadFile(filepath.Join(root, p.Name(), "fdinfo", fd.Name()))
			if err != nil || !holdsLock(info, ours) {
				continue
			}
			comm, _ := os.ReadFile(filepath.Join(root, p.Name(), "comm"))
			holders = append(holders, Holder{Pid: pid, Comm: strings.TrimSuffix(string(comm), "\n")})
			break
		}
	}
	// In pid order: ReadDir's is the names', which puts 10000 before 9993.
	slices.SortFunc(holders, func(a, b Holder) int { return a.Pid - b.Pid })
	return taker, holders
}

// holdsLock says whether an fdinfo file has a "lock:" line of the flock
// that ours recognises, held (not waited for).
func holdsLock(info []byte, ours func(string) (int, bool)) bool {
	sc := bufio.NewScanner(bytes.NewReader(info))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "lock:")
		if !ok || strings.Contains(rest, "->") {
			continue
		}
		if _, ok := ours(strings.TrimSpace(rest)); ok {
			return true
		}
	}
	return false
}
