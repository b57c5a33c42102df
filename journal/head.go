package journal

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// The head check: a chain rewritten while paddock runs.
//
// The chain (chain.go) shows a record removed, edited or inserted, unless
// whoever did it also recomputed every later "prev": an agent of the
// journal's user can. A paddock whose journal was rewritten that way would
// link its next record onto the rewritten chain, and the heads it logs would
// verify. So a Journal remembers where the record it wrote last is, and
// before each append (and at Check) makes sure the file still holds that
// record, byte for byte, and that every record after it links to the one
// before. When it does not, a journal_rewritten record goes first (with the
// head this Journal wrote last and what was found), Options.Rewritten is
// told, and Rewrites counts it. The records a Journal wrote are also
// counted and summed (Own), so that the session's last record can say which
// records were its own, and Verify can tell when they changed afterwards.

// written is where the record a Journal wrote last is.
type written struct {
	ok       bool   // a record was written
	dev, ino uint64 // the file it was written to
	off      int64  // where it starts in that file
	n        int    // its length, '\n' included
}

// RewriteError says that the journal file no longer holds the record this
// Journal wrote last, or that a record after it no longer links to the one
// before.
type RewriteError struct {
	// Path is the journal file.
	Path string
	// Head is the hash of the record this Journal wrote last.
	Head string
	// What says what was found instead.
	What string
}

func (e *RewriteError) Error() string {
	return fmt.Sprintf("journal %s was rewritten while paddock ran: %s (the record paddock wrote last hashes to %s); paddock links its next record onto the file as it is, and this record says so", e.Path, e.What, e.Head)
}

// wrote notes the records just written (linked, as written), the last of
// them ending at end of the file j.fd (locked: lockCurrent noted which file
// it is). j.mu must be held.
func (j *Journal) wrote(linked [][]byte, end int64) {
	last := linked[len(linked)-1]
	j.head = hashLine(last[:len(last)-1])
	j.last = written{ok: true, dev: j.curDev, ino: j.curIno, off: end - int64(len(last)), n: len(last)}
	for _, l := range linked {
		j.own++
		j.ownSum.Write(l)
	}
	if j.lastFd >= 0 {
		unix.Close(j.lastFd)
		j.lastFd = -1
	}
}

// keepLast closes fd, a journal file the Journal no longer writes to
// (another writer rotated it, or it was removed), unless it holds the
// record this Journal wrote last: then it is kept open (unlocked) as
// j.lastFd until the next record is written, so that checkLast can still
// read that record, and its inode number names that file and no other.
func (j *Journal) keepLast(fd int) {
	var st unix.Stat_t
	if j.last.ok && unix.Fstat(fd, &st) == nil && st.Dev == j.last.dev && st.Ino == j.last.ino {
		j.unlockFd(fd)
		if j.lastFd >= 0 {
			unix.Close(j.lastFd)
		}
		j.lastFd = fd
		return
	}
	unix.Close(fd)
}

// Own returns how many records this Journal wrote to the file, and the
// SHA-256 (hex) over their lines as written, in order, each with its '\n'.
// paddock run puts them in session_ended as "records" and
// "records_sha256": Verify recomputes them from the session's records.
func (j *Journal) Own() (n int, sum string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.own, hex.EncodeToString(j.ownSum.Sum(nil))
}

// Rewrites returns how many times the journal file was found rewritten
// (journal_rewritten records written, or attempted).
func (j *Journal) Rewrites() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.rewrites
}

// Check checks the journal file against the record this Journal wrote last,
// as Append does before each record, and writes a journal_rewritten record
// when it no longer holds it. It returns the *RewriteError found (nil when
// none), or the error that kept it from checking or recording.
func (j *Journal) Check() error {
	j.mu.Lock()
	if j.fd < 0 {
		j.mu.Unlock()
		return fmt.Errorf("journal %s: check: closed", j.path)
	}
	rewrite, err := j.appendMirrored(nil, j.sync)
	tell := j.rewritten
	j.mu.Unlock()
	if rewrite != nil && tell != nil {
		tell(rewrite)
	}
	if rewrite != nil {
		return rewrite
	}
	return err
}

// checkHead checks that the file (j.fd, locked, of size bytes) or one of
// its rotated files still holds the record this Journal wrote last, and
// that the records after it form a chain to the end; a *RewriteError when
// not. j.mu and the lock must be held.
func (j *Journal) checkHead(size int64) error {
	if !j.last.ok {
		return nil
	}
	err := j.checkLast(size)
	if err == nil {
		return nil
	}
	return &RewriteError{Path: j.path, Head: j.head, What: err.Error()}
}

// segment is a part of a journal file to check: bytes [from, to) of fd.
type segment struct {
	name     string
	fd       int
	from, to int64
	tail     bool // a last line without '\n' counts (the live file)
}

func (j *Journal) checkLast(size int64) error {
	var segs []segment
	found := true
	if j.curDev == j.last.dev && j.curIno == j.last.ino {
		segs = []segment{{j.base, j.fd, j.last.off, size, true}}
	} else {
		if j.lastFd < 0 {
			return fmt.Errorf("the file paddock wrote its last record to (inode %d) was not kept open: it cannot be checked", j.last.ino)
		}
		// Rotated since (by this Journal or another writer), or replaced
		// or removed: lastFd still holds the file, and no other file can
		// have its inode number while it does. Check the file, then each
		// kept file newer than it.
		var lst unix.Stat_t
		if err := unix.Fstat(j.lastFd, &lst); err != nil {
			return fmt.Errorf("the file paddock wrote its last record to cannot be checked: %v", err)
		}
		segs = append(segs, segment{j.base + " (the file paddock last wrote to)", j.lastFd, j.last.off, lst.Size, false})
		var newer []segment
		found = false
		for i := 1; i <= j.keep && !found; i++ {
			name := j.base + "." + strconv.Itoa(i)
			fd, err := j.openKept(name)
			if err != nil {
				break
			}
			defer unix.Close(fd)
			var rst unix.Stat_t
			if unix.Fstat(fd, &rst) != nil || rst.Mode&unix.S_IFMT != unix.S_IFREG {
				break
			}
			if rst.Dev == lst.Dev && rst.Ino == lst.Ino {
				found = true
				break
			}
			newer = append([]segment{{name, fd, 0, rst.Size, false}}, newer...)
		}
		segs = append(segs, newer...)
		segs = append(segs, segment{j.base, j.fd, 0, size, true})
		if !found {
			// The file is no longer the journal nor a rotated file: the
			// rotations since dropped it (then the oldest kept file links
			// to its last record, unless they dropped more), or someone
			// replaced or removed it.
			segs[0].name = fmt.Sprintf("the file paddock last wrote to (inode %d)", lst.Ino)
		}
	}
	err := j.walk(segs, size, len(segs) > 1)
	if err != nil && !found {
		err = fmt.Errorf("%v (the file paddock last wrote to is gone from the journal's directory: rotated out of the %d kept files along with the files after it, or the journal was replaced or removed)", err, j.keep)
	}
	return err
}

// walk checks segs, the first starting at the record this Journal wrote
// last, as checkLast says; relink says to check that the next record will
// link to where the walk ended (when the walk crossed files: within one
// file it does by construction).
func (j *Journal) walk(segs []segment, size int64, relink bool) error {
	first := segs[0]
	mine := make([]byte, j.last.n)
	if first.to-first.from < int64(j.last.n) || preadFull(first.fd, mine, first.from) != nil || mine[len(mine)-1] != '\n' || hashLine(mine[:len(mine)-1]) != j.head {
		return fmt.Errorf("%s no longer holds that record at offset %d: a record before it was removed, edited or inserted, and the chain recomputed, or the file was cut", first.name, first.from)
	}
	segs[0].from += int64(j.last.n)
	prev := j.head
	for _, sg := range segs {
		if sg.to < sg.from {
			return fmt.Errorf("%s is shorter than paddock left it: records were cut off", sg.name)
		}
		data := make([]byte, sg.to-sg.from)
		if err := preadFull(sg.fd, data, sg.from); err != nil {
			return fmt.Errorf("%s cannot be read back: %v", sg.name, err)
		}
		var err error
		if prev, err = chainFrom(prev, data, sg.tail); err != nil {
			return fmt.Errorf("%s, after the record paddock wrote last: %v", sg.name, err)
		}
	}
	if !relink {
		return nil
	}
	// What the next record will link to must be where the walk ended: a
	// journal removed, or cut back to before the records checked, starts
	// a chain of its own.
	next, err := j.link(size)
	if err != nil {
		return fmt.Errorf("the journal file cannot be checked: %v", err)
	}
	if next != prev && next == genesis {
		return fmt.Errorf("the journal holds no record after it, not even the ones before: it was removed or emptied")
	}
	if next != prev {
		return fmt.Errorf("the journal's last record (%s) is not the last one that follows the record paddock wrote last (%s): the records after it were removed, or the journal replaced", short(next), short(prev))
	}
	return nil
}

// chainFrom checks that the records of data (lines; the last one without
// '\n' only when tail) each link to the one before, the first to prev, and
// returns the last one's hash. Lines that are not records are passed over,
// as Verify does.
func chainFrom(prev string, data []byte, tail bool) (string, error) {
	lines := bytes.Split(data, []byte{'\n'})
	if !tail || len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	for _, l := range lines {
		rec, ok := ParseLine(l)
		if !ok {
			continue
		}
		p, _ := rec["prev"].(string)
		if p != prev {
			return "", fmt.Errorf("the record %s links to %s, not to the record before it (%s): a record was removed, edited or inserted", Excerpt(l, 80), short(p), short(prev))
		}
		prev = hashLine(l)
	}
	return prev, nil
}
