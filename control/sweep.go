package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/procfs"
)

// A paddock killed with SIGKILL (an OOM kill, a CI runner cancelling a
// job) leaves its session directory behind: the dead socket, the owner
// record and the paddock link, in RAM where the base is a tmpfs. Sweep
// removes those of sessions that are gone. It errs on the side of
// keeping: a directory is removed only when it is the caller's own, a
// real directory made the way paddock makes them, its owner is known to
// be gone, and its socket refuses a connection (nothing listens there).

// dirPrefix starts a session directory's name; os.MkdirTemp adds digits.
const dirPrefix = "paddock-"

// ownerName is the owner record in a session directory: the Identity, as
// JSON, of the paddock that made it, written before the directory takes
// its session name (listenIn).
const ownerName = "owner"

// stagingPrefix starts the name of a session directory being made by
// the paddock owner, before it takes its session name: "paddock-new-", the
// PID namespace, pid and start time, each followed by "-" (os.MkdirTemp
// adds digits). The name alone says whose it is (stagingOwner).
func stagingPrefix(owner procfs.Identity) string {
	return fmt.Sprintf("%snew-%d-%d-%d-", dirPrefix, owner.PidNS, owner.Pid, owner.StartTime)
}

// stagingOwner reads the owner from a staging directory's name.
func stagingOwner(name string) (procfs.Identity, bool) {
	rest, ok := strings.CutPrefix(name, dirPrefix+"new-")
	if !ok {
		return procfs.Identity{}, false
	}
	f := strings.Split(rest, "-")
	if len(f) != 4 {
		return procfs.Identity{}, false
	}
	var n [4]uint64
	for i, s := range f {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return procfs.Identity{}, false
		}
		n[i] = v
	}
	if n[1] == 0 || n[1] > 1<<22 {
		return procfs.Identity{}, false
	}
	return procfs.Identity{PidNS: n[0], Pid: int(n[1]), StartTime: n[2]}, true
}

// LinkName is the name of the link to the paddock binary that a session
// may put in its socket's directory, which goes first on the agent's PATH
// (package supervisor); Sweep counts it among what paddock puts there.
const LinkName = "paddock"

// unknownOwnerAge is how long a directory whose owner cannot be judged
// (no owner record: an older paddock's, or what a removal killed halfway
// left; or an owner in another PID namespace) must have been left
// unchanged before it is taken for stale, nothing listening on its
// socket: a live session's socket refuses connections only for a moment,
// between its bind and its listen, and is there from then on.
const unknownOwnerAge = time.Minute

// maxSweepDepth bounds how deep Sweep removes what an agent may have put
// in its session's directory (it is on the agent's PATH).
const maxSweepDepth = 16

// Swept is what Sweep found under the runtime directories.
type Swept struct {
	// Bases are the directories looked in.
	Bases []string `json:"bases"`
	// Found counts the session directories of sessions that are gone.
	Found int `json:"found"`
	// Removed counts those of Found that are no longer there.
	Removed int `json:"removed"`
	// Kept counts the session directories of the caller's left alone:
	// in use, or not known to be gone.
	Kept int `json:"kept"`
	// Errors say why a base could not be looked in, or a directory of
	// Found could not be removed.
	Errors []string `json:"errors,omitempty"`
}

// Sweep removes, under each directory a session directory may be made in
// (runtimeDirs: $XDG_RUNTIME_DIR, else $TMPDIR, else /dev/shm and /tmp),
// the session directories left by paddocks that are gone (sweepBase says
// which).
func Sweep() Swept {
	var sw Swept
	self, err := procfs.Default().Self()
	if err != nil {
		sw.Errors = append(sw.Errors, fmt.Sprintf("session directories: who am I: %v", err))
		return sw
	}
	seen := map[string]bool{}
	for _, base := range runtimeDirs() {
		if seen[base] {
			continue
		}
		seen[base] = true
		sw.Bases = append(sw.Bases, base)
		sweepBase(base, sweeper{fs: procfs.Default(), self: self, euid: os.Geteuid(), now: time.Now()}, &sw)
	}
	return sw
}

// sweeper is who sweeps, and when.
type sweeper struct {
	fs   procfs.FS
	self procfs.Identity
	euid int
	now  time.Time
	halt func(removeStep) bool // tests only: see removeSession
}

// sweepBase sweeps one base into sw. A base paddock would not make its
// directory in (checkBase) is not swept either.
func sweepBase(base string, sp sweeper, sw *Swept) {
	if err := checkBase(base, sp.euid); err != nil {
		if !errors.Is(err, unix.ENOENT) {
			sw.Errors = append(sw.Errors, err.Error())
		}
		return
	}
	bfd, err := unix.Open(base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		sw.Errors = append(sw.Errors, fmt.Sprintf("session directories: open %s: %v", base, err))
		return
	}
	defer unix.Close(bfd)
	names, err := dirNames(bfd)
	if err != nil {
		sw.Errors = append(sw.Errors, fmt.Sprintf("session directories: read %s: %v", base, err))
		return
	}
	for _, name := range names {
		_, staging := stagingOwner(name)
		if !sessionDirName(name) && !staging {
			continue
		}
		switch v := sp.judge(bfd, name); v {
		case notOurs:
		case keep:
			sw.Kept++
		case stale:
			sw.Found++
			if err := removeSession(bfd, name, sp.self, sp.halt); err != nil {
				sw.Errors = append(sw.Errors, fmt.Sprintf("session directory %s: %v", filepath.Join(base, name), err))
				continue
			}
			sw.Removed++
		}
	}
}

// sessionDirName reports whether name is one os.MkdirTemp(base, dirPrefix)
// makes: the prefix and digits only.
func sessionDirName(name string) bool {
	digits, ok := strings.CutPrefix(name, dirPrefix)
	if !ok || digits == "" {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// verdict is what judge decided about one name.
type verdict int

const (
	notOurs verdict = iota // not a session directory of the caller's
	keep                   // the caller's, in use or not known to be gone
	stale                  // the caller's, and its session is gone
)

// judge decides about name under the base open as bfd. Not ours: anything
// but a real directory (a symlink is never followed) owned by the caller's
// euid with mode 0700, as listenIn makes it. Stale: nothing listens on
// its socket (or it has none) and its owner (the staging name's, else the
// owner record's) is a paddock that is gone; or, with no owner to judge
// by (an older paddock's directory, an owner in another PID namespace, or
// a removal killed halfway), it has no socket or one that refuses a
// connection, it holds nothing paddock does not put there, and it has
// been left unchanged for unknownOwnerAge (a socket refuses for a moment
// after it is bound, before it listens). Everything else is kept.
func (sp sweeper) judge(bfd int, name string) verdict {
	dfd, fst, ok := openOwnDir(bfd, name, sp.euid)
	if !ok {
		return notOurs
	}
	defer unix.Close(dfd)
	owner, hasOwner := stagingOwner(name)
	if !hasOwner {
		owner, hasOwner = readOwner(dfd, sp.euid)
	}
	live := procfs.Unknown
	if hasOwner {
		live = sp.fs.Liveness(owner, sp.self)
	}
	if live == procfs.Running {
		return keep
	}
	sock := socketState(dfd)
	if sock == sockListening || sock == sockOther && live != procfs.Gone {
		return keep
	}
	if live == procfs.Gone {
		return stale
	}
	// Nothing to judge the owner by: only a directory left unchanged for
	// a while, holding nothing but what paddock makes, with no socket or
	// one that refuses (an older paddock's, killed; or what a sweep or a
	// session's own removal killed halfway left).
	if sock != sockRefused && sock != sockNone || sp.now.Sub(time.Unix(fst.Mtim.Unix())) < unknownOwnerAge {
		return keep
	}
	names, err := dirNames(dfd)
	if err != nil {
		return keep
	}
	for _, n := range names {
		if n != socketName && n != LinkName && n != ownerName {
			return keep
		}
	}
	return stale
}

// openOwnDir opens name under the base open as bfd when it is a session
// directory as listenIn makes them: a real directory (a symlink is never
// followed) owned by euid with mode 0700. It returns the directory's
// descriptor (the caller closes it) and what fstat says of it.
func openOwnDir(bfd int, name string, euid int) (int, unix.Stat_t, bool) {
	var lst, fst unix.Stat_t
	if err := unix.Fstatat(bfd, name, &lst, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return -1, fst, false
	}
	if lst.Mode&unix.S_IFMT != unix.S_IFDIR || int64(lst.Uid) != int64(euid) || lst.Mode&0o7777 != 0o700 {
		return -1, fst, false
	}
	dfd, err := openBeneath(bfd, name, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return -1, fst, false // a mount point among them: what is mounted there is not paddock's
	}
	if err := unix.Fstat(dfd, &fst); err != nil || fst.Dev != lst.Dev || fst.Ino != lst.Ino {
		unix.Close(dfd)
		return -1, fst, false
	}
	return dfd, fst, true
}

// readOwner reads the owner record in the directory open as dfd: a
// regular file of euid's, never through a link or a mount point. What it
// is is checked before it is opened for reading, through a descriptor
// that opens nothing (O_PATH), which is then opened again through
// /proc: a device node or FIFO an agent planted there (a root agent can
// make any) is never opened.
func readOwner(dfd, euid int) (procfs.Identity, bool) {
	pfd, err := openBeneath(dfd, ownerName, unix.O_PATH)
	if err != nil {
		return procfs.Identity{}, false
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || int64(st.Uid) != int64(euid) {
		return procfs.Identity{}, false
	}
	fd, err := unix.Open(procfs.FdPath(pfd), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return procfs.Identity{}, false
	}
	defer unix.Close(fd)
	buf := make([]byte, 4096)
	n, err := unix.Read(fd, buf)
	if err != nil || n <= 0 {
		return procfs.Identity{}, false
	}
	var id procfs.Identity
	if json.Unmarshal(buf[:n], &id) != nil || id.Pid <= 0 {
		return procfs.Identity{}, false
	}
	return id, true
}

// writeOwner writes the owner record into the fresh directory open as dfd.
func writeOwner(dfd int, id procfs.Identity) error {
	b, err := json.Marshal(id)
	if err != nil {
		return err
	}
	fd, err := unix.Openat(dfd, ownerName, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("create %s: %w", ownerName, err)
	}
	defer unix.Close(fd)
	b = append(b, '\n')
	if n, err := unix.Write(fd, b); err != nil || n != len(b) {
		return fmt.Errorf("write %s: %d of %d bytes: %v", ownerName, n, len(b), err)
	}
	return nil
}

// sockState is what became of a session directory's socket.
type sockState int

const (
	sockNone      sockState = iota // no socket there
	sockRefused                    // a socket nothing listens on
	sockListening                  // a socket that takes connections (or may: busy)
	sockOther                      // something else has its name, or it cannot be told
)

// socketState connects to the socket in the directory open as dfd,
// without blocking and never through a link: a socket whose paddock is
// gone refuses (ECONNREFUSED); a live session's takes the connection,
// which is closed at once (its server answers an empty request and moves on).
func socketState(dfd int) sockState {
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, socketName, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return sockNone
		}
		return sockOther
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return sockOther
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return sockOther
	}
	defer unix.Close(fd)
	via := procfs.FdPath(dfd) + "/" + socketName
	switch err := unix.Connect(fd, &unix.SockaddrUnix{Name: via}); {
	case err == nil, errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINPROGRESS):
		return sockListening
	case errors.Is(err, unix.ECONNREFUSED):
		return sockRefused
	}
	return sockOther
}

// removeSession removes the session directory name under the base open
// as bfd, and what is in it, relative to descriptors and never through a
// link, for self (the paddock removing it). First the directory takes a
// staging name of self's (stagingPrefix): a remover killed at any step
// after that leaves a directory whose name says its owner is gone, so the
// next sweep removes it at once, emptied or not; before that, the
// directory is as it was. (Without the rename, a remover killed between
// the owner record's removal and the directory's left an empty directory
// that a sweep must keep for unknownOwnerAge.) The name is removed only
// while it still names the directory emptied. A directory another remover
// removed first counts as removed. halt, in tests, stops the removal after
// the step it names, as a kill there would (nil: never).
func removeSession(bfd int, name string, self procfs.Identity, halt func(removeStep) bool) error {
	dfd, err := openBeneath(bfd, name, unix.O_RDONLY|unix.O_DIRECTORY)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer unix.Close(dfd)
	var fst unix.Stat_t
	if err := unix.Fstat(dfd, &fst); err != nil {
		return fmt.Errorf("stat: %w", err)
	}
	if name, err = takeRemoverName(bfd, name, self, fst); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil // another remover has it
		}
		return err
	}
	if halt != nil && halt(stepRenamed) {
		return errHalted
	}
	// The owner record goes last: where the rename could not be made, a
	// remover killed halfway leaves it, and with it what the next sweep
	// needs to know the directory is stale.
	if err := removeContents(dfd, maxSweepDepth, ownerName); err != nil {
		return err
	}
	if halt != nil && halt(stepEmptied) {
		return errHalted
	}
	if err := unix.Unlinkat(dfd, ownerName, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("%s: %w", ownerName, err)
	}
	if halt != nil && halt(stepOwnerRemoved) {
		return errHalted
	}
	if err := sameEntry(bfd, name, fst); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	if err := unix.Unlinkat(bfd, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove: %w", err)
	}
	return nil
}

// removeDir removes the session directory dir for self, as a sweep
// would (removeSession): killed halfway, it leaves what the next sweep
// removes at once.
func removeDir(dir string, self procfs.Identity) error {
	bfd, err := unix.Open(filepath.Dir(dir), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", filepath.Dir(dir), err)
	}
	defer unix.Close(bfd)
	if err := removeSession(bfd, filepath.Base(dir), self, nil); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}

// removeStep names a step of removeSession, after which a test may halt it.
type removeStep int

const (
	stepRenamed      removeStep = iota // the directory has the remover's staging name
	stepEmptied                        // all but the owner record removed
	stepOwnerRemoved                   // empty, not yet removed
)

// errHalted is what a removal halted by a test returns.
var errHalted = errors.New("halted")

// takeRemoverName renames the directory name under the base open as bfd,
// whose descriptor fstat gave fst, to a staging name of self's, unless it
// has one, and returns its name now. A file system without
// RENAME_NOREPLACE keeps the name (the owner record is then what tells
// a remover killed halfway). A directory found to be another than fst
// after the rename (its name was moved meanwhile) is given its name back,
// and the removal stops.
func takeRemoverName(bfd int, name string, self procfs.Identity, fst unix.Stat_t) (string, error) {
	prefix := stagingPrefix(self)
	// A self whose staging name a sweep could not read back (no pid: a
	// Server made without Listen) keeps the name, as does one that has it.
	if _, ok := stagingOwner(prefix + "0"); !ok || strings.HasPrefix(name, prefix) {
		return name, nil
	}
	to, err := renameFresh(bfd, name, prefix)
	switch {
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS):
		return name, nil
	case err != nil:
		return "", err
	}
	if err := sameEntry(bfd, to, fst); err != nil {
		if rerr := unix.Renameat2(bfd, to, bfd, name, unix.RENAME_NOREPLACE); rerr != nil {
			return "", fmt.Errorf("%w; and it could not be given its name back from %s: %v", err, to, rerr)
		}
		return "", err
	}
	return to, nil
}

// sameEntry checks that name under the base open as bfd is, not through
// a link, the directory fstat described as fst.
func sameEntry(bfd int, name string, fst unix.Stat_t) error {
	var lst unix.Stat_t
	if err := unix.Fstatat(bfd, name, &lst, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("stat: %w", err)
	}
	if lst.Dev != fst.Dev || lst.Ino != fst.Ino {
		return errors.New("its name now leads elsewhere; left as it is")
	}
	return nil
}

// removeContents empties the directory open as dfd, depth levels deep at
// most, but for the entries named in keep. It never goes down into a
// mount point (openBeneath): a root agent with --keep-caps may have
// bind-mounted any directory of the machine into its session's, and what
// is mounted there is not the session's to remove; the directory is then
// left, with an error that says so.
func removeContents(dfd, depth int, keep ...string) error {
	names, err := dirNames(dfd)
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	for _, n := range names {
		if slices.Contains(keep, n) {
			continue
		}
		err := unix.Unlinkat(dfd, n, 0)
		if errors.Is(err, unix.EISDIR) {
			if depth == 0 {
				return fmt.Errorf("%s: nested too deep", n)
			}
			var sub int
			if sub, err = openBeneath(dfd, n, unix.O_RDONLY|unix.O_DIRECTORY); errors.Is(err, unix.EXDEV) {
				return fmt.Errorf("%s: a mount point; left as it is, with what holds it", n)
			}
			if err == nil {
				err = removeContents(sub, depth-1)
				unix.Close(sub)
				if err == nil {
					err = unix.Unlinkat(dfd, n, unix.AT_REMOVEDIR)
				}
			}
		}
		if err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("%s: %w", n, err)
		}
	}
	return nil
}

// openBeneath opens name, one entry of the directory open as dfd, with
// flags (and O_NOFOLLOW, O_CLOEXEC), neither through a link nor across a
// mount point: openat2 with RESOLVE_NO_XDEV (Linux 5.6) fails with EXDEV
// when name is a mount point, a bind mount of the same file system
// included, which st_dev alone would not show. A kernel without openat2
// gets an error too (ENOSYS): the sweep then keeps what it cannot judge.
func openBeneath(dfd int, name string, flags int) (int, error) {
	how := unix.OpenHow{
		Flags:   uint64(flags | unix.O_NOFOLLOW | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_XDEV | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	for try := 0; ; try++ {
		fd, err := unix.Openat2(dfd, name, &how)
		// EAGAIN: a rename elsewhere raced the lookup (RESOLVE_BENEATH).
		if (errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR)) && try < 8 {
			continue
		}
		return fd, err
	}
}

// dirNames lists the directory open as fd (from its start), without
// consuming fd: it reads through a descriptor of its own.
func dirNames(fd int) ([]string, error) {
	own, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(own), ".")
	defer f.Close()
	return f.Readdirnames(-1)
}
