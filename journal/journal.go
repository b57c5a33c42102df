// Package journal is paddock's append-only audit journal: one JSON object per
// line (JSON Lines), recording every refusal, adoption and other decision the
// supervisor makes.
//
// The journal must never silently lose or garble a record, even when several
// paddock processes share one file. To that end every record is written with a
// single write(2) on a descriptor opened with O_APPEND, while holding an
// exclusive flock(2) on the file; the file is rotated under the same lock, and
// a writer that finds the path now names a different file (another process
// rotated it, or someone removed it) reopens the path before writing. Within
// one process, a mutex serialises goroutines sharing a Journal.
//
// The records form a hash chain (see chain.go): each carries, as "prev", the
// SHA-256 of the record before it, so that Verify finds a record removed,
// edited, reordered or inserted. And since an agent may share the journal's
// directory, the journal never follows a symbolic link and appends only to a
// regular file of paddock's own (see owner.go).
package journal

import (
	"github.com/paddock-dev/paddock/audit"

	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Defaults applied by Open to zero (or negative) Options fields.
const (
	// DefaultMaxBytes is the size at which a journal file is rotated when
	// Options.MaxBytes is not set: large enough to hold months of decisions,
	// small enough to read whole.
	DefaultMaxBytes int64 = 64 << 20
	// DefaultKeep is how many rotated files (path.1 .. path.N) are kept when
	// Options.Keep is not set.
	DefaultKeep = 3
)

// Record is one journal entry. TS, Action and Pid are always written (keys
// "ts", "action", "pid"), in that order; Fields holds the rest (for example
// "target", "signal", "syscall", "rule", "message", "reason"), written after
// them sorted by key; the journal itself adds "prev", last, which links the
// record to the one before it (chain.go).
type Record struct {
	// TS is when the event happened; the zero value means "now". It is
	// written as RFC 3339 in UTC with nanoseconds (time.RFC3339Nano).
	TS time.Time
	// Action names what happened (package audit lists paddock's). It must
	// not be empty: a record without an action cannot be audited.
	Action audit.Action
	// Pid is the process the record is about (usually the caller).
	Pid int
	// Fields holds every other key. It must not contain "ts", "action",
	// "pid" or "prev"; values are encoded with encoding/json (HTML characters are not
	// escaped, so messages such as "kill <pid>" stay readable).
	Fields map[string]any
}

// SessionKey is the record key that names the session (Options.Session).
const SessionKey = "session"

// Options tunes a Journal. The zero value is usable: 64 MiB files, three
// rotated files kept, no fsync per record.
type Options struct {
	// Session, when set, names the session whose records these are: every
	// record gets it as the key "session", so that one journal shared by
	// several sessions can be read one session at a time.
	Session string
	// MaxBytes is the largest a journal file may grow: a record that would
	// take the file past it goes to a fresh file instead. A single record
	// larger than MaxBytes is still written, alone in its own file, rather
	// than dropped. Zero or negative means DefaultMaxBytes.
	MaxBytes int64
	// Keep is how many rotated files are kept (path.1 is the newest,
	// path.Keep the oldest); older ones are overwritten. Zero or negative
	// means DefaultKeep.
	Keep int
	// Sync makes Append fsync the file after every record, so that an
	// acknowledged record survives a crash of the machine. Without it, call
	// Journal.Sync where durability matters.
	Sync bool
	// Mirror also sends every record, once written, to a log the agent
	// cannot rewrite (journald or syslog; see mirror.go). Empty: none.
	Mirror MirrorKind
	// MirrorSocket is the socket the mirror sends to; empty means the
	// kind's standard one (JournaldSocket, SyslogSocket). Tests set it.
	MirrorSocket string
	// MirrorError is told when the mirror fails to send a record, once per
	// outage (the next failure after a success), so a dead log daemon does
	// not flood the caller. A mirror failure never fails Append. Nil: not
	// told.
	MirrorError func(error)
	// LockWait bounds each wait for the journal's lock (lock.go): past it
	// the record is not written, and Append and Open fail with a
	// *LockError naming who holds the lock. Zero or negative means
	// DefaultLockWait.
	LockWait time.Duration
	// Rewritten is told each time the journal file is found not to hold
	// what this Journal wrote last (head.go), after the journal_rewritten
	// record saying so was written (or could not be). Nil: not told.
	Rewritten func(error)
}

// Journal appends records to one journal file. It is safe for concurrent use
// by several goroutines, and several processes (or several Journals in one
// process) may append to the same path at once without interleaving.
type Journal struct {
	mu      sync.Mutex
	session string // Options.Session
	path    string
	dir     string
	base    string // the file's name in dir
	dirfd   int    // dir, opened once: later opens and renames never resolve dir's path again
	max     int64
	keep    int
	sync    bool
	euid    int
	fd      int    // -1 once closed
	dirty   bool   // records written to fd since its last fsync
	head    string // hash of the last record this Journal wrote, or found at Open
	mirror  *mirror

	lockWaitMax time.Duration // Options.LockWait
	lockStuck   *LockError    // the last wait timed out, and no lock since (lock.go)

	// What this Journal wrote, to check the file against (head.go).
	last      written // where its last record is
	curDev    uint64  // the file j.fd holds, as lockCurrent found it
	curIno    uint64
	lastFd    int       // the file last holds, when j.fd is another since; else -1
	own       int       // how many records it wrote
	ownSum    hash.Hash // SHA-256 over those records' lines, '\n' included
	rewrites  int       // how many times the file was found rewritten
	rewritten func(error)
}

// fileFlags are the flags every journal file is opened with: appends only,
// created if missing, never inherited by the agent or any other exec'd child,
// never through a symbolic link, and never blocking (a FIFO fails instead).
// It is opened for reading too, because each record links to the last one
// in the file (chain.go).
const fileFlags = unix.O_RDWR | unix.O_APPEND | unix.O_CREAT | unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NONBLOCK

// Open opens (creating it if needed) the journal file at path for appending.
// Missing parent directories are created with mode 0700 and a new file with
// mode 0600, since the journal records what the agent tried to do. Open
// refuses anything that is not a regular file of paddock's own (OpenOwned's
// rules: no symbolic link, owned by the effective user, one link), because
// rotation renames it and an agent could plant one; run as root, it also
// refuses a directory other users may write (CheckDir). Open reads the
// file's last record, so that Head is the chain's head from the start.
func Open(path string, o Options) (*Journal, error) {
	if path == "" {
		return nil, errors.New("journal: empty path")
	}
	if path[len(path)-1] == '/' {
		return nil, fmt.Errorf("journal %s: is a directory, not a journal file", path)
	}
	j := &Journal{
		path:    path,
		dir:     filepath.Dir(path),
		base:    filepath.Base(path),
		max:     o.MaxBytes,
		keep:    o.Keep,
		sync:    o.Sync,
		session: o.Session,
		euid:    os.Geteuid(),
		fd:      -1,
		dirfd:   -1,
		lastFd:  -1,

		lockWaitMax: o.LockWait,
		ownSum:      sha256.New(),
		rewritten:   o.Rewritten,
	}
	if j.lockWaitMax <= 0 {
		j.lockWaitMax = DefaultLockWait
	}
	m, err := newMirror(o)
	if err != nil {
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	j.mirror = m
	if j.max <= 0 {
		j.max = DefaultMaxBytes
	}
	if j.keep <= 0 {
		j.keep = DefaultKeep
	}
	if err := os.MkdirAll(j.dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal %s: create directory: %w", path, err)
	}
	err = retryEINTR(func() (err error) {
		j.dirfd, err = unix.Open(j.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("journal %s: open directory %s: %w", path, j.dir, err)
	}
	fail := func(err error) (*Journal, error) {
		if j.fd >= 0 {
			unix.Close(j.fd)
		}
		unix.Close(j.dirfd)
		return nil, err
	}
	var dst unix.Stat_t
	if err := unix.Fstat(j.dirfd, &dst); err != nil {
		return fail(fmt.Errorf("journal %s: stat directory %s: %w", path, j.dir, err))
	}
	if err := checkDir(j.dir, &dst, j.euid); err != nil {
		return fail(fmt.Errorf("journal %s: %w", path, err))
	}
	var lst unix.Stat_t
	statErr := unix.Fstatat(j.dirfd, j.base, &lst, unix.AT_SYMLINK_NOFOLLOW)
	if j.fd, err = j.openFile(); err != nil {
		return fail(err)
	}
	size, err := j.lockCurrent()
	if err != nil {
		return fail(err)
	}
	j.head, err = j.link(size)
	j.unlock()
	if err != nil {
		return fail(err)
	}
	// Make a new file's directory entry durable, so a record later fsynced
	// by Sync cannot be lost with a directory that forgot the file. (An
	// existing journal's entry already is; paddock starts often.)
	if !errors.Is(statErr, unix.ENOENT) {
		return j, nil
	}
	if err := syncDir(j.dirfd); err != nil {
		return fail(fmt.Errorf("journal %s: sync directory: %w", path, err))
	}
	return j, nil
}

// openFile opens j.path (relative to the directory opened at Open) and
// checks that it is a regular file of paddock's own.
//
// A file with no link left was removed after the open: another writer's
// rotations moved it down the line and dropped it (many writers and a small
// --journal-max-bytes make that a matter of milliseconds). The name then
// leads to a newer file: opened again, a few times at most.
func (j *Journal) openFile() (int, error) {
	for try := 0; ; try++ {
		var fd int
		err := retryEINTR(func() (err error) {
			fd, err = unix.Openat(j.dirfd, j.base, fileFlags, 0o600)
			return err
		})
		if err != nil {
			return -1, openErr(j.path, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("journal %s: stat: %w", j.path, err)
		}
		if st.Nlink == 0 && try < maxReopens {
			unix.Close(fd)
			continue
		}
		if err := checkOwned(j.path, &st, j.euid); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("journal %s: open: %w", j.path, err)
		}
		return fd, nil
	}
}

// maxReopens bounds openFile's opens again of a file removed under it.
const maxReopens = 8

// Head returns the hash of the chain's last record as this Journal knows it:
// the record it last appended, or before its first Append the file's last
// record found at Open (64 zeros for an empty journal). paddock run prints it
// at start and exit, so that a journal cut short or rewritten afterwards can
// be told from the one paddock left (Verify's Head).
func (j *Journal) Head() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.head
}

// Path returns the path the journal was opened with (the live file; rotated
// files are Path()+".1" and so on).
func (j *Journal) Path() string { return j.path }

// Append writes r as one line. The line is written with a single write(2)
// while holding an exclusive flock on the file, so concurrent writers, in
// this process or others, never interleave; a short write is reported as an
// error and the partial line is cut off again. If the record would take the
// file past Options.MaxBytes, the file is rotated first. With Options.Sync
// the file is fsynced before Append returns.
//
// The record is linked to the file's last record (its "prev", chain.go),
// read under the lock, so that concurrent writers still form one chain.
// Before it, the file is checked against what this Journal wrote last, and
// a journal_rewritten record goes first when it no longer holds it
// (head.go).
//
// Every record goes to Options.Mirror, whatever became of the file write:
// once written, as written; a record the file could not take, with the key
// "journal_error" saying why (and no "prev"). A mirror failure never fails
// Append. When the file could not take the record, the error is a
// *FileError, which says whether the mirror took it.
func (j *Journal) Append(r Record) error {
	return j.append(r, j.sync)
}

// AppendSync is Append, then an fsync of the file, so that the record is
// durable in the file when AppendSync returns nil. Otherwise the error is a
// *FileError whose Mirrored says whether the record is in the mirror
// (durable there, as far as a log daemon that took the datagram is), or an
// error of the record itself (an empty action, a reserved field), which
// went nowhere. Callers that must not act before their record is durable
// somewhere (an adoption) use it.
func (j *Journal) AppendSync(r Record) error {
	return j.append(r, true)
}

// FileError is the error of an Append whose record did not reach the
// journal file, or was written but could not be fsynced.
type FileError struct {
	// Err says what failed.
	Err error
	// Written says the record is in the file, but its fsync failed.
	Written bool
	// Mirrored says the mirror took the record (Options.Mirror): it is
	// recorded there, and the mirrored copy says journal_error when it
	// is not in the file.
	Mirrored bool
}

func (e *FileError) Error() string {
	where := "the journal mirror has it"
	if !e.Mirrored {
		where = "no journal mirror has it"
	}
	return fmt.Sprintf("%v (%s)", e.Err, where)
}

func (e *FileError) Unwrap() error { return e.Err }

func (j *Journal) append(r Record, sync bool) error {
	line, err := j.prepare(r)
	if err != nil {
		return err
	}
	j.mu.Lock()
	if j.fd < 0 {
		j.mu.Unlock()
		return fmt.Errorf("journal %s: append: %w", j.path, os.ErrClosed)
	}
	rewrite, err := j.appendMirrored(line, sync)
	tell := j.rewritten
	j.mu.Unlock()
	if rewrite != nil && tell != nil {
		tell(rewrite)
	}
	return err
}

// prepare encodes r with the session's key.
func (j *Journal) prepare(r Record) ([]byte, error) {
	if j.session != "" {
		if _, ok := r.Fields[SessionKey]; ok {
			return nil, fmt.Errorf("journal %s: field %q is reserved: the journal's Options.Session sets it", j.path, SessionKey)
		}
		fields := make(map[string]any, len(r.Fields)+1)
		for k, v := range r.Fields {
			fields[k] = v
		}
		fields[SessionKey] = j.session
		r.Fields = fields
	}
	line, err := encode(r)
	if err != nil {
		return nil, fmt.Errorf("journal %s: %w", j.path, err)
	}
	return line, nil
}

// appendMirrored writes line (nil: only the head check) with
// appendLocked, fsyncs when sync says so, and mirrors what it wrote, or
// what it could not write. It returns the rewrite found, if any, and the
// error (a *FileError when the file failed). j.mu must be held.
func (j *Journal) appendMirrored(line []byte, sync bool) (rewrite, err error) {
	res := j.appendLocked(line)
	err = res.err
	if err == nil && sync && j.dirty {
		if serr := unix.Fsync(j.fd); serr != nil {
			err = fmt.Errorf("journal %s: sync: %w", j.path, serr)
		} else {
			j.dirty = false
		}
	}
	mirrored := j.mirror != nil
	for _, w := range res.written {
		if j.mirror.send(w) != nil {
			mirrored = false
		}
	}
	if res.err != nil {
		for _, u := range res.unwritten {
			if j.mirror.send(withField(u, "journal_error", res.err.Error())) != nil {
				mirrored = false
			}
		}
	}
	if err != nil {
		err = &FileError{Err: err, Written: res.err == nil, Mirrored: mirrored}
	}
	return res.rewrite, err
}

// appended is what appendLocked did.
type appended struct {
	written   [][]byte // the records written, as written (with "prev")
	unwritten [][]byte // the records not written, without "prev"
	rewrite   error    // the file did not hold what this Journal wrote last
	err       error    // the write failed
}

// appendLocked writes line (a record from prepare; nil: none), linked to
// the chain, after a journal_rewritten record when the file no longer
// holds what this Journal wrote last (checkHead). Both go in one write(2).
// j.mu must be held.
func (j *Journal) appendLocked(line []byte) (res appended) {
	var size int64
	var err error
	var lead []byte // "\n" to end a torn last line, so it cannot swallow ours
	var recs [][]byte
	fail := func(err error) appended {
		res.err, res.unwritten = err, recs
		if len(recs) == 0 && line != nil {
			res.unwritten = [][]byte{line}
		}
		return res
	}
	for {
		size, err = j.lockCurrent()
		if err != nil {
			return fail(err)
		}
		lead = nil
		if size > 0 {
			end, err := j.lastByte(size)
			if err != nil {
				j.unlock()
				return fail(err)
			}
			if end != '\n' {
				lead = []byte{'\n'}
			}
		}
		recs = recs[:0]
		if res.rewrite == nil {
			// Once found, kept: the check after a rotation of ours
			// would describe the same rewrite from the rotated file.
			res.rewrite = j.checkHead(size)
		}
		if res.rewrite != nil {
			pre, err := j.prepare(Record{Action: audit.JournalRewritten, Pid: os.Getpid(), Fields: map[string]any{
				"message": "the journal was rewritten while paddock ran: " + res.rewrite.(*RewriteError).What, "head": j.head,
			}})
			if err != nil {
				j.unlock()
				return fail(err)
			}
			recs = append(recs, pre)
		}
		if line != nil {
			recs = append(recs, line)
		}
		if len(recs) == 0 {
			j.unlock()
			return res
		}
		total := int64(len(lead))
		for _, r := range recs {
			total += int64(len(r) + prevLen)
		}
		if size == 0 || size+total <= j.max {
			break
		}
		// Rotate, then loop: lockCurrent notices the path is free, opens
		// and locks the fresh file, and we check its size again (another
		// process may have filled it in between).
		if err := j.rotate(); err != nil {
			j.unlock()
			return fail(err)
		}
	}
	defer j.unlock()
	if res.rewrite != nil {
		j.rewrites++ // once, whatever the rotations in between
	}

	prev, err := j.link(size)
	if err != nil {
		return fail(err)
	}
	out := lead
	var linked [][]byte
	for _, r := range recs {
		l := withPrev(r, prev)
		prev = hashLine(l[:len(l)-1])
		linked = append(linked, l)
		out = append(out, l...)
	}
	n, err := unix.Write(j.fd, out)
	if n < 0 {
		n = 0
	}
	if err == nil && n != len(out) {
		err = fmt.Errorf("%w (%d of %d bytes)", io.ErrShortWrite, n, len(out))
	}
	if err != nil {
		if n > 0 {
			// Cut the fragment off so the next record starts on a
			// line of its own. We hold the lock, so size is still
			// where this record began.
			if terr := unix.Ftruncate(j.fd, size); terr != nil {
				err = fmt.Errorf("%w (and removing the partial record: %v)", err, terr)
			}
		}
		return fail(fmt.Errorf("journal %s: write: %w", j.path, err))
	}
	j.dirty = true
	j.wrote(linked, size+int64(len(out)))
	res.written = linked
	return res
}

// Sync flushes the records written so far to stable storage. Callers fsync
// before acknowledging anything that must survive a crash, such as an
// adoption.
func (j *Journal) Sync() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.fd < 0 {
		return fmt.Errorf("journal %s: sync: %w", j.path, os.ErrClosed)
	}
	if err := unix.Fsync(j.fd); err != nil {
		return fmt.Errorf("journal %s: sync: %w", j.path, err)
	}
	j.dirty = false
	return nil
}

// Close closes the journal file. It does not fsync; call Sync first where
// durability matters. Appending to a closed Journal returns an error that
// wraps os.ErrClosed; closing it again returns nil.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.fd < 0 {
		return nil
	}
	err := unix.Close(j.fd)
	j.fd = -1
	if j.lastFd >= 0 {
		unix.Close(j.lastFd)
		j.lastFd = -1
	}
	unix.Close(j.dirfd)
	j.mirror.close()
	if err != nil {
		return fmt.Errorf("journal %s: close: %w", j.path, err)
	}
	return nil
}

// lockCurrent takes the flock on the file that j.path names now, reopening
// the path if another process rotated the file we hold (or it was removed),
// and returns that file's size. On success the caller must call j.unlock.
// It waits for the lock at most Options.LockWait (lock.go). j.mu must be
// held.
func (j *Journal) lockCurrent() (int64, error) {
	for {
		if err := j.lockWait(j.fd); err != nil {
			return 0, err
		}
		var fst, pst unix.Stat_t
		if err := unix.Fstat(j.fd, &fst); err != nil {
			j.unlock()
			return 0, fmt.Errorf("journal %s: stat: %w", j.path, err)
		}
		err := unix.Fstatat(j.dirfd, j.base, &pst, unix.AT_SYMLINK_NOFOLLOW)
		if err == nil && fst.Dev == pst.Dev && fst.Ino == pst.Ino {
			j.curDev, j.curIno = fst.Dev, fst.Ino
			return fst.Size, nil
		}
		if err != nil && !errors.Is(err, unix.ENOENT) {
			j.unlock()
			return 0, fmt.Errorf("journal %s: stat: %w", j.path, err)
		}
		// Our file was rotated away or removed: write to the path's
		// current file instead, so no record goes to a file nobody reads.
		if err := j.reopen(); err != nil {
			j.unlock()
			return 0, err
		}
	}
}

// reopen replaces j.fd with a fresh descriptor for j.path. Records written
// to the old file and not yet fsynced are flushed first, so a later Sync
// still covers them. Closing the old descriptor releases its lock.
func (j *Journal) reopen() error {
	if j.dirty {
		if err := unix.Fsync(j.fd); err != nil {
			return fmt.Errorf("journal %s: sync: %w", j.path, err)
		}
		j.dirty = false
	}
	fd, err := j.openFile()
	if err != nil {
		return err
	}
	j.keepLast(j.fd)
	j.fd = fd
	return nil
}

// rotate shifts path.(Keep-1) to path.Keep, ..., path to path.1 and releases
// the lock; the caller then opens a fresh file through lockCurrent. It runs
// with the lock held on the file at j.path, which every other rotating writer
// must also hold, so rotations never overlap. j.mu must be held.
func (j *Journal) rotate() error {
	for i := j.keep - 1; i >= 1; i-- {
		from, to := j.base+"."+strconv.Itoa(i), j.base+"."+strconv.Itoa(i+1)
		if err := unix.Renameat(j.dirfd, from, j.dirfd, to); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("journal %s: rotate %s to %s: %w", j.path, from, to, err)
		}
	}
	if err := unix.Renameat(j.dirfd, j.base, j.dirfd, j.base+".1"); err != nil {
		return fmt.Errorf("journal %s: rotate to %s.1: %w", j.path, j.base, err)
	}
	if err := syncDir(j.dirfd); err != nil {
		return fmt.Errorf("journal %s: rotate: sync directory: %w", j.path, err)
	}
	return nil
}

// unlock releases the flock on j.fd. An error here cannot lose data (the
// lock also goes with the descriptor), so it is ignored.
func (j *Journal) unlock() { j.unlockFd(j.fd) }

// unlockFd releases the flock on fd.
func (j *Journal) unlockFd(fd int) {
	_ = retryEINTR(func() error { return unix.Flock(fd, unix.LOCK_UN) })
}

// encode renders r as one JSON line ending in '\n': ts, action, pid, then
// the Fields sorted by key.
func encode(r Record) ([]byte, error) {
	if r.Action == "" {
		return nil, errors.New("record has an empty action")
	}
	ts := r.TS
	if ts.IsZero() {
		ts = time.Now()
	}
	ts = ts.UTC()
	if y := ts.Year(); y < 0 || y > 9999 {
		return nil, fmt.Errorf("record time %v is outside RFC 3339's years 0000-9999", ts)
	}
	keys := make([]string, 0, len(r.Fields))
	for k := range r.Fields {
		switch k {
		case "ts", "action", "pid", "prev":
			return nil, fmt.Errorf("field %q is reserved: set it through Record's own field", k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)

	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	put := func(v any) error {
		if err := enc.Encode(v); err != nil {
			return err
		}
		buf.Truncate(buf.Len() - 1) // Encode's trailing '\n'
		return nil
	}
	buf.WriteString(`{"ts":`)
	put(ts.Format(time.RFC3339Nano)) // strings always encode
	buf.WriteString(`,"action":`)
	put(r.Action)
	buf.WriteString(`,"pid":`)
	buf.WriteString(strconv.Itoa(r.Pid))
	for _, k := range keys {
		buf.WriteByte(',')
		put(k)
		buf.WriteByte(':')
		if err := put(r.Fields[k]); err != nil {
			return nil, fmt.Errorf("field %q: %w", k, err)
		}
	}
	buf.WriteByte('}')
	// encoding/json escapes control characters in strings and compacts
	// Marshaler output, so a newline here would be a bug; refuse rather
	// than write a record readers would split in two.
	if bytes.IndexByte(buf.Bytes(), '\n') >= 0 {
		return nil, errors.New("record encodes with a newline")
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// syncDir fsyncs a directory so that creations and renames in it survive a
// crash. Filesystems that cannot fsync directories are tolerated.
func syncDir(fd int) error {
	if err := unix.Fsync(fd); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOTSUP) {
		return err
	}
	return nil
}

func retryEINTR(f func() error) error {
	for {
		if err := f(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
