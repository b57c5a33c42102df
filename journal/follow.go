package journal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// This file is the reading side that tools such as `paddock journal` need
// beyond Read and ReadLines (read.go): the rotated files in order, and
// following the journal as it grows, across rotations.

// CutShort reports whether line, which is not a JSON object, is the
// beginning of a record as paddock writes them: what a writer killed in
// the middle of a record leaves, once the next record's write has ended it
// with a newline (Append does, so that it cannot swallow the new record).
// It is not a record, and the chain passes over it.
func CutShort(line []byte) bool {
	return bytes.HasPrefix(line, []byte(`{"ts":"`))
}

// TornLineError reports a file whose last line is incomplete: what a writer
// interrupted in the middle of a record leaves behind.
type TornLineError struct {
	Path string // the file, by the name it had when it was read
	Line []byte // the incomplete line
}

func (e *TornLineError) Error() string {
	return fmt.Sprintf("journal %s: last line is incomplete (a writer was interrupted): %s", e.Path, Excerpt(e.Line, 200))
}

// Excerpt renders b for a terminal: characters that are not printable
// (control characters, invalid UTF-8, bidi overrides) are escaped as in a Go
// string literal, and the result is cut to max runes with "…".
func Excerpt(b []byte, max int) string {
	return truncate(sanitize(string(b)), max)
}

// RotatedNames returns the rotated files of the journal at path that exist
// now (path.1, path.2, ...; any positive number, gaps allowed), newest first.
func RotatedNames(path string) ([]string, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	type numbered struct {
		n    uint64
		name string
	}
	var found []numbered
	for _, e := range ents {
		suffix, ok := strings.CutPrefix(e.Name(), base+".")
		if !ok || suffix == "" || suffix[0] == '0' {
			continue
		}
		n, err := strconv.ParseUint(suffix, 10, 63)
		if err != nil {
			continue
		}
		found = append(found, numbered{n, filepath.Join(filepath.Dir(path), e.Name())})
	}
	sort.Slice(found, func(i, j int) bool { return found[i].n < found[j].n })
	names := make([]string, len(found))
	for i, f := range found {
		names[i] = f.name
	}
	return names, nil
}

// histFile is one file of a journal's history as seen at one moment.
type histFile struct {
	name string
	fi   os.FileInfo
}

// snapshot stats the journal at path and its rotated files and returns
// those that exist, oldest first (path.N, ..., path.1, path). The files are
// statted newest first: a rotation running meanwhile moves files towards
// older names, so a file may be seen twice (use distinct) but is not
// skipped, except one moved to a name the directory listing did not have
// yet; callers that must not miss any compare two snapshots (sameSnapshot).
func snapshot(path string) ([]histFile, error) {
	rotated, err := RotatedNames(path)
	if err != nil {
		return nil, err
	}
	var hist []histFile
	for _, name := range append([]string{path}, rotated...) {
		fi, err := os.Stat(name)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		hist = append(hist, histFile{name, fi})
	}
	for i, j := 0, len(hist)-1; i < j; i, j = i+1, j-1 {
		hist[i], hist[j] = hist[j], hist[i]
	}
	return hist, nil
}

func sameSnapshot(a, b []histFile) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].name != b[i].name || !os.SameFile(a[i].fi, b[i].fi) {
			return false
		}
	}
	return true
}

// find returns the index in hist of the file fi, or -1.
func find(hist []histFile, fi os.FileInfo) int {
	for i, h := range hist {
		if os.SameFile(h.fi, fi) {
			return i
		}
	}
	return -1
}

// OpenHistory opens the journal at path and its rotated files for reading,
// and returns them oldest first: path.N, ..., path.1 (any positive numbers,
// gaps allowed), then path itself when it exists (check the last file's
// Name). A path with no files at all gives an empty slice and no error.
//
// If the journal rotates while OpenHistory runs, it tries again, so that the
// files it returns are one consistent moment of the history: no record
// twice, none missing. The caller closes the files.
func OpenHistory(path string) ([]*os.File, error) {
	for attempt := 1; ; attempt++ {
		files, stable, err := openHistory(path)
		if err != nil || stable || attempt == 10 {
			return files, err
		}
		closeAll(files)
	}
}

func openHistory(path string) (files []*os.File, stable bool, err error) {
	before, err := snapshot(path)
	if err != nil {
		return nil, false, fileErr(path, err)
	}
	stable = true
	for _, h := range before {
		f, err := openRegular(h.name)
		if errors.Is(err, os.ErrNotExist) {
			stable = false // rotated away since the snapshot
			continue
		}
		if err != nil {
			closeAll(files)
			return nil, false, fileErr(h.name, err)
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			closeAll(files)
			return nil, false, fileErr(h.name, err)
		}
		if !os.SameFile(fi, h.fi) {
			stable = false
		}
		dup := false
		for _, g := range files {
			if gi, err := g.Stat(); err == nil && os.SameFile(fi, gi) {
				dup = true
			}
		}
		if dup {
			f.Close()
			continue
		}
		files = append(files, f)
	}
	after, err := snapshot(path)
	if err != nil {
		closeAll(files)
		return nil, false, fileErr(path, err)
	}
	return files, stable && sameSnapshot(before, after), nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// openRegular opens name for reading, refusing anything but a regular file
// (opening a FIFO would block).
func openRegular(name string) (*os.File, error) {
	notRegular := func(fi os.FileInfo) error {
		if fi.IsDir() {
			return fmt.Errorf("journal %s: is a directory, not a journal file", name)
		}
		return fmt.Errorf("journal %s: not a regular file (%v)", name, fi.Mode().Type())
	}
	fi, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular(fi)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	if fi, err = f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = notRegular(fi)
		}
		return nil, err
	}
	return f, nil
}

// fileErr words an error met reading the journal file name: an error from
// emit passes through as it is, an error already naming the file too.
func fileErr(name string, err error) error {
	var ee errEmit
	if errors.As(err, &ee) {
		return ee.err
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("journal %s: %s: %w", pe.Path, pe.Op, pe.Err)
	}
	if strings.HasPrefix(err.Error(), "journal ") {
		return err
	}
	return fmt.Errorf("journal %s: %w", name, err)
}

// DefaultPoll is how often a Follower looks for new data when Poll is unset.
const DefaultPoll = 200 * time.Millisecond

// Follower follows a journal as it grows, like tail -F: it survives
// rotation (path renamed to path.1 and a new path created) and removal, and
// waits for a missing file to appear.
type Follower struct {
	// Path is the live journal file.
	Path string
	// Poll is how often the file is checked for new data, rotation and
	// truncation. Zero means DefaultPoll.
	Poll time.Duration
	// Warn, if set, is told about what the Follower cannot fix but the
	// reader should know: a file left behind with an incomplete last line
	// (a *TornLineError), a file truncated under it.
	Warn func(error)

	// snap, when set, lists the journal's history instead of snapshot
	// (tests give the views a rotation can show).
	snap func(path string) ([]histFile, error)
}

// Follow opens fl.Path, waiting for it to appear if it does not exist yet,
// and follows it from byte offset from (from 0 if the file is shorter than
// that, or appeared only after Follow was called). See FollowFile.
func (fl *Follower) Follow(ctx context.Context, from int64, emit func(line []byte) error) error {
	f, err := openRegular(fl.Path)
	if errors.Is(err, os.ErrNotExist) {
		from = 0 // the file that appears is not the one from was about
		f, err = fl.waitOpen(ctx)
	}
	if f == nil || err != nil {
		return fl.wrapNil(err)
	}
	if fi, err := f.Stat(); err == nil && from > 0 && from <= fi.Size() {
		if _, err := f.Seek(from, io.SeekStart); err != nil {
			f.Close()
			return fmt.Errorf("journal %s: %w", fl.Path, err)
		}
	}
	return fl.FollowFile(ctx, f, emit)
}

// FollowFile follows f, a file that fl.Path named when it was opened,
// positioned at the start of the first line not yet consumed. It calls emit
// with each complete line, without its '\n', never with part of a line: a
// line whose end has not been written yet waits until it is. The slice is
// valid only during the call. An error from emit stops FollowFile, which
// returns it as it is.
//
// When fl.Path comes to name another file (rotation) or nothing (removal),
// FollowFile reads f to its end (writers finish with a file before it is
// renamed away), then moves on to the next newer file of the journal's
// history: a rotated file, read whole, when the journal rotated more than
// once between two polls, and then the new live file, from its start,
// waiting for it to appear if need be. Files are recognised by identity
// (device and inode), not name, so renames during the move lose nothing;
// only files rotated out of existence (more than Keep rotations between two
// polls) or removed are missed. A file left behind with an incomplete last
// line is reported to fl.Warn.
//
// FollowFile closes f. It returns nil when ctx is done.
func (fl *Follower) FollowFile(ctx context.Context, f *os.File, emit func(line []byte) error) error {
	poll := fl.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	r := &lineReader{emit: emit, buf: make([]byte, 64<<10)}
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	if off, err := f.Seek(0, io.SeekCurrent); err == nil {
		r.off = off
	}
	// prev is the last file finished with, while f is nil. It is kept open
	// so that its inode number cannot be reused by a new file (tmpfs and
	// ext4 reuse freed ones at once), which would then pass for prev.
	var prev *os.File
	var prevInfo os.FileInfo
	setPrev := func(p *os.File) error {
		if prev != nil {
			prev.Close()
		}
		prev, prevInfo = p, nil
		if p != nil {
			fi, err := p.Stat()
			if err != nil {
				return fileErr(p.Name(), err)
			}
			prevInfo = fi
		}
		return nil
	}
	defer setPrev(nil)
	for {
		if ctx.Err() != nil {
			return nil
		}
		if f == nil {
			next, name, live, err := fl.next(prevInfo)
			if err != nil {
				return err
			}
			if next != nil {
				r.reset(0)
				if !live {
					// A rotated file: complete, read it whole.
					err := r.drain(next)
					if err == nil {
						err = setPrev(next)
					} else {
						next.Close()
					}
					if err != nil {
						return fileErr(name, err)
					}
					fl.finish(name, r)
					continue
				}
				f = next
				setPrev(nil)
			}
		}
		if f != nil {
			if err := r.drain(f); err != nil {
				return fl.wrap(err)
			}
			if err := fl.checkTruncated(f, r); err != nil {
				return err
			}
			moved, err := fl.moved(f)
			if err != nil {
				return err
			}
			if moved {
				// Writers finish with a file before they let it go:
				// what is there now is all it will ever hold.
				if err := r.drain(f); err != nil {
					return fl.wrap(err)
				}
				if err := setPrev(f); err != nil {
					return err
				}
				f = nil
				fl.finish(fl.nameOf(prevInfo), r)
				continue // the next file is usually there already
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// next opens the file that comes after prev in the journal's history (the
// live file when prev is nil or cannot be found any more), and says whether
// that is the live file. It returns a nil file when the live file is due but
// does not exist (yet).
func (fl *Follower) next(prev os.FileInfo) (f *os.File, name string, live bool, err error) {
	return fl.open(func(hist []histFile, settled func() (bool, error)) (int, bool, error) {
		i := len(hist) - 1 // the live file, unless prev says otherwise
		if i >= 0 && hist[i].name != fl.Path {
			i = len(hist) // no live file
		}
		if prev == nil {
			return i, false, nil
		}
		j := find(hist, prev)
		if j < 0 {
			// A rotation running while the history was listed can move
			// prev to a name the listing did not have. prev is gone
			// (rotated out of existence, or removed) only if a second
			// listing shows the same history; otherwise look again:
			// going on to the live file now would skip every file
			// between.
			ok, err := settled()
			return i, !ok, err
		}
		// The next file newer than prev; a file seen twice (mid-rotation)
		// is prev's later name, not a newer one.
		for j++; j < len(hist) && os.SameFile(hist[j].fi, prev); j++ {
		}
		return j, false, nil
	})
}

// firstNew opens the oldest file of the journal's history that is not
// among known (the history while the live file did not exist): the live
// file as a rule, or a rotated one when writers filled and rotated the
// journal before a poll saw it appear. It returns a nil file when there is
// none yet.
func (fl *Follower) firstNew(known []histFile) (*os.File, error) {
	f, _, _, err := fl.open(func(hist []histFile, settled func() (bool, error)) (int, bool, error) {
		// The oldest new file is the one a rotation moves to a name a
		// listing may not have: only a settled listing is believed.
		if ok, err := settled(); !ok || err != nil {
			return 0, true, err
		}
		for i, h := range hist {
			if find(known, h.fi) < 0 || h.name == fl.Path {
				return i, false, nil // a new file, or else the live one
			}
		}
		return len(hist), false, nil
	})
	return f, err
}

// history lists the journal's files as they are now (snapshot).
func (fl *Follower) history() ([]histFile, error) {
	if fl.snap != nil {
		return fl.snap(fl.Path)
	}
	return snapshot(fl.Path)
}

// maxLooks bounds the listings open takes while rotations keep changing the
// journal's history; past it, open finds nothing this time, and its caller
// tries again at the next poll.
const maxLooks = 50

// open lists the journal's history (oldest first), has choose pick a file
// from it (an index past the end: none yet), and opens that file, listing
// again when the file was renamed meanwhile; it says whether the file is the
// live one. choose may ask for another listing (again), for instance when
// settled, which compares the listing with a fresh one, says a rotation
// changed it while it was taken.
func (fl *Follower) open(choose func(hist []histFile, settled func() (bool, error)) (i int, again bool, err error)) (f *os.File, name string, live bool, err error) {
	for attempt := 1; ; attempt++ {
		hist, err := fl.history()
		if err != nil {
			return nil, "", false, fl.wrap(err)
		}
		settled := func() (bool, error) {
			again, err := fl.history()
			return err == nil && sameSnapshot(hist, again), err
		}
		i, again, err := choose(hist, settled)
		if err != nil {
			return nil, "", false, fl.wrap(err)
		}
		if again {
			if attempt >= maxLooks {
				return nil, "", false, nil
			}
			continue
		}
		if i < 0 || i >= len(hist) {
			return nil, "", false, nil // the live file is not there yet
		}
		h := hist[i]
		f, err := openRegular(h.name)
		if errors.Is(err, os.ErrNotExist) && attempt < 10 {
			continue
		}
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, "", false, nil
			}
			return nil, "", false, fileErr(h.name, err)
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, "", false, fileErr(h.name, err)
		}
		if !os.SameFile(fi, h.fi) && attempt < 10 {
			f.Close() // renamed meanwhile: look again
			continue
		}
		return f, h.name, h.name == fl.Path, nil
	}
}

// nameOf returns the name fi has in the journal's history now, or fl.Path.
func (fl *Follower) nameOf(fi os.FileInfo) string {
	if hist, err := snapshot(fl.Path); err == nil {
		if i := find(hist, fi); i >= 0 {
			return hist[i].name
		}
	}
	return fl.Path
}

// finish is done with a file: an incomplete last line is reported (one of
// blanks only is a blank line, skipped).
func (fl *Follower) finish(name string, r *lineReader) {
	if len(bytes.TrimSpace(r.partial)) > 0 {
		fl.warn(&TornLineError{Path: name, Line: bytes.Clone(r.partial)})
	}
	r.reset(0)
}

// waitOpen waits for fl.Path to exist, polling, and opens the first file
// of the journal's history that came since: the live file, or the first of
// those the journal rotated away before the poll saw it. It returns nil,
// nil when ctx is done first.
func (fl *Follower) waitOpen(ctx context.Context) (*os.File, error) {
	poll := fl.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	known, err := fl.history()
	if err != nil {
		return nil, fl.wrap(err)
	}
	for {
		_, err := os.Lstat(fl.Path)
		if err == nil {
			f, err := fl.firstNew(known)
			if f != nil || err != nil {
				return f, err
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, fl.wrap(err)
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-time.After(poll):
		}
	}
}

func (fl *Follower) wrap(err error) error { return fileErr(fl.Path, err) }

func (fl *Follower) wrapNil(err error) error {
	if err == nil {
		return nil
	}
	return fl.wrap(err)
}

func (fl *Follower) warn(err error) {
	if fl.Warn != nil {
		fl.Warn(err)
	}
}

// moved reports whether fl.Path no longer names f.
func (fl *Follower) moved(f *os.File) (bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return false, fl.wrap(err)
	}
	pi, err := os.Stat(fl.Path)
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, fl.wrap(err)
	}
	return !os.SameFile(fi, pi), nil
}

// checkTruncated handles a file that got shorter than what was read from it.
// paddock itself only ever cuts off the fragment of a failed write, which is
// still in the partial-line buffer: it is dropped and reading goes on. A
// file cut shorter than that was truncated by someone else; like tail, read
// it again from the start.
func (fl *Follower) checkTruncated(f *os.File, r *lineReader) error {
	fi, err := f.Stat()
	if err != nil {
		return fl.wrap(err)
	}
	size := fi.Size()
	if size >= r.off {
		return nil
	}
	lineStart := r.off - int64(len(r.partial))
	if size >= lineStart {
		r.partial = r.partial[:size-lineStart]
		r.off = size
	} else {
		fl.warn(fmt.Errorf("journal %s: file truncated; reading it again from the start", fl.Path))
		r.reset(0)
	}
	if _, err := f.Seek(r.off, io.SeekStart); err != nil {
		return fl.wrap(err)
	}
	return nil
}

// lineReader turns the bytes of a growing file into complete lines.
type lineReader struct {
	emit    func([]byte) error
	buf     []byte
	partial []byte // bytes after the last '\n' read so far
	off     int64  // file offset just past what was read
}

func (r *lineReader) reset(off int64) {
	r.partial = r.partial[:0]
	r.off = off
}

// drain reads f to its current end, emitting every complete line.
func (r *lineReader) drain(f *os.File) error {
	for {
		n, err := f.Read(r.buf)
		if n > 0 {
			r.off += int64(n)
			if err := r.feed(r.buf[:n]); err != nil {
				return err
			}
		}
		if err == io.EOF || (n == 0 && err == nil) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (r *lineReader) feed(b []byte) error {
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			r.partial = append(r.partial, b...)
			return nil
		}
		var line []byte
		if len(r.partial) > 0 {
			r.partial = append(r.partial, b[:i]...)
			line = r.partial
		} else {
			line = b[:i]
		}
		if err := r.emit(line); err != nil {
			return errEmit{err}
		}
		r.partial = r.partial[:0]
		b = b[i+1:]
	}
}

// errEmit marks an error returned by emit, so that it is passed through
// unwrapped.
type errEmit struct{ err error }

func (e errEmit) Error() string { return e.err.Error() }
func (e errEmit) Unwrap() error { return e.err }
