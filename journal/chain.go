package journal

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// The hash chain.
//
// Every record paddock writes ends with the key "prev": the SHA-256, in
// lowercase hex, of the exact bytes of the record before it in the journal,
// its trailing '\n' included (the bytes one write(2) appended, "prev" and
// all). Blank lines and lines that are not JSON objects are not records and
// are passed over. The record before is the last one in the file the record
// is appended to; in a file that is empty (fresh after a rotation) it is the
// last record of FILE.1 (or FILE.2, ... if FILE.1 holds none); in a journal
// with no record at all, prev is 64 zeros (genesis). Records written before
// the chain existed (no "prev") may stand at the start of the history and
// are linked to like any other.
//
// Writers compute the link under the journal's flock from the file's actual
// last record, never from memory, so that any number of sessions appending
// to one journal form one chain. A chain says that nothing between its first
// record and its head was removed, edited, reordered or inserted; it cannot
// say that records after the head were cut off, or that someone rewrote the
// whole chain after the point of change with fresh hashes: compare the head
// with one kept elsewhere (paddock run logs it at start and exit; a mirror
// holds every record).

// genesis is the "prev" of the first record of a journal that had none:
// as many zeros as a SHA-256 in hex has digits.
const genesis = "0000000000000000000000000000000000000000000000000000000000000000"

// prevLen is how much withPrev adds to a line: `,"prev":"` hex `"`.
const prevLen = len(`,"prev":""`) + sha256.Size*2

// hashLine returns the chain hash of a record stored as raw (without its
// '\n'): SHA-256 over raw and '\n'.
func hashLine(raw []byte) string {
	h := sha256.New()
	h.Write(raw)
	h.Write([]byte{'\n'})
	return hex.EncodeToString(h.Sum(nil))
}

// withPrev returns line (a JSON object and '\n', from encode) with "prev"
// added as its last key.
func withPrev(line []byte, prev string) []byte {
	out := make([]byte, 0, len(line)+prevLen)
	out = append(out, line[:len(line)-2]...) // "}\n"
	out = append(out, `,"prev":"`...)
	out = append(out, prev...)
	return append(out, "\"}\n"...)
}

// lastByte returns the last byte of the first size bytes of j.fd.
func (j *Journal) lastByte(size int64) (byte, error) {
	b := make([]byte, 1)
	if err := preadFull(j.fd, b, size-1); err != nil {
		return 0, fmt.Errorf("journal %s: read its last record: %w", j.path, err)
	}
	return b[0], nil
}

// link returns what the next record appended at offset size of j.fd must
// carry as "prev". The caller holds the lock on j.fd. An incomplete last
// line counts when it is a JSON object, since the write that follows ends
// it with '\n' (appendLocked). A rotated file that is not paddock's own
// (OpenOwned's rules) or cannot be read is passed over: the record then
// links to genesis, and Verify reports the break.
func (j *Journal) link(size int64) (string, error) {
	if size > 0 {
		h, ok, err := lastRecord(j.fd, size, true)
		if err != nil {
			return "", fmt.Errorf("journal %s: read its last record: %w", j.path, err)
		}
		if ok {
			return h, nil
		}
	}
	for i := 1; ; i++ {
		name := j.base + "." + strconv.Itoa(i)
		fd, err := j.openKept(name)
		if err != nil {
			return genesis, nil
		}
		var st unix.Stat_t
		h, ok := "", false
		if unix.Fstat(fd, &st) == nil && checkOwned(name, &st, j.euid) == nil {
			h, ok, err = lastRecord(fd, st.Size, false)
		}
		unix.Close(fd)
		if err != nil {
			return genesis, nil
		}
		if ok {
			return h, nil
		}
	}
}

// openKept opens the journal's kept (rotated) file name for reading, in the
// journal's directory: no link followed, no wait on a FIFO planted there.
func (j *Journal) openKept(name string) (int, error) {
	var fd int
	err := retryEINTR(func() (err error) {
		fd, err = unix.Openat(j.dirfd, name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
		return err
	})
	return fd, err
}

// lastRecord returns the hash of the last record in the first size bytes of
// fd, reading backwards from the end; found is false when there is none.
// withTail says whether a last line without '\n' counts.
func lastRecord(fd int, size int64, withTail bool) (hash string, found bool, err error) {
	for n := int64(4096); ; n *= 2 {
		n = min(n, size)
		buf := make([]byte, n)
		if err := preadFull(fd, buf, size-n); err != nil {
			return "", false, err
		}
		if size > n {
			// The first line may begin before buf: skip it.
			i := bytes.IndexByte(buf, '\n')
			if i < 0 {
				continue
			}
			buf = buf[i+1:]
		}
		lines := bytes.Split(buf, []byte{'\n'})
		tail := lines[len(lines)-1] // after the last '\n'
		lines = lines[:len(lines)-1]
		if withTail {
			lines = append(lines, tail)
		}
		for i := len(lines) - 1; i >= 0; i-- {
			l := lines[i]
			if len(bytes.TrimSpace(l)) == 0 {
				continue
			}
			if _, ok := ParseLine(l); ok {
				return hashLine(l), true, nil
			}
		}
		if n == size {
			return "", false, nil
		}
	}
}

// preadFull fills b from fd at off.
func preadFull(fd int, b []byte, off int64) error {
	for len(b) > 0 {
		var n int
		err := retryEINTR(func() (err error) {
			n, err = unix.Pread(fd, b, off)
			return err
		})
		if err != nil {
			return err
		}
		if n == 0 {
			return io.ErrUnexpectedEOF
		}
		b, off = b[n:], off+int64(n)
	}
	return nil
}

// Verification is what Verify found in a journal's files.
type Verification struct {
	// Files are the files read, oldest first.
	Files []string
	// Records counts the records (lines that are JSON objects).
	Records int
	// Legacy counts the unchained records (no "prev") at the start of the
	// history: written before paddock chained its journal.
	Legacy int
	// Anchor is the "prev" of the history's first chained record when it
	// is not genesis (or the last legacy record's hash): the record it
	// links to is in a rotated file no longer kept. Empty otherwise.
	Anchor string
	// Head is the hash of the last record: what paddock run logged as the
	// journal's head when it wrote that record. Empty with no records.
	Head string
	// HeadFound is set when Verify was asked for a head (VerifyOptions)
	// and a record of the chain hashes to it.
	HeadFound bool
	// Breaks are the places where the chain is broken, in file order: a
	// record was removed, edited, reordered or inserted. None means the
	// chain is intact.
	Breaks []Problem
	// Warnings are lines that are not records but break nothing: a torn
	// last line (a write cut short), or a line that is not a JSON object
	// and that the chain passes over; and sessions whose records could not
	// be checked against their session_ended (their first records are in
	// rotated files no longer kept).
	Warnings []Problem
	// Sessions counts the sessions whose session_ended says which records
	// were the session's own ("records" and "records_sha256", written by
	// paddock run from Journal.Own), and whose records in the journal
	// match it.
	Sessions int
	// Differing are the session_ended records whose session's records in
	// the journal differ from what they say: records of the session were
	// removed, edited or added. That is tampering even when the chain was
	// recomputed around the change, which Breaks cannot show.
	Differing []Problem
	// Rewritten are the journal_rewritten records: paddock found, while
	// it ran, that the file no longer held the record it wrote last.
	Rewritten []Problem
}

// Problem is one finding of Verify, at a line of a file.
type Problem struct {
	File string // the file's name as read
	Line int    // 1-based line number
	Msg  string // what is wrong
}

// Error renders the problem as "FILE: line N: what".
func (p Problem) Error() string {
	return fmt.Sprintf("journal %s: line %d: %s", p.File, p.Line, p.Msg)
}

// short abbreviates a hash for messages.
func short(h string) string {
	if len(h) > 16 {
		return h[:16] + "…"
	}
	return h
}

// Verify checks the hash chain of the journal at path across all its files,
// rotated ones first (OpenHistory's order). Tampering is reported in
// Verification.Breaks, not as an error; err is set when the journal cannot
// be read (a journal with no file at all is such an error: nothing can be
// verified). head, when not empty, is a head logged earlier (by paddock run);
// Verification.HeadFound says whether a record of the chain hashes to it.
func Verify(path, head string) (*Verification, error) {
	files, err := OpenHistory(path)
	if err != nil {
		return nil, err
	}
	defer closeAll(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("journal %s: no such journal (nor rotated files): nothing to verify; if paddock run wrote one, it was removed", path)
	}
	v := &Verification{}
	own := map[string]*ownRecords{}
	var lastHash, lastFile string
	lastLine := 0
	chained := false
	where := func(file string, line int) string {
		if file == lastFile {
			return "line " + strconv.Itoa(line)
		}
		return filepath.Base(lastFile) + " line " + strconv.Itoa(line)
	}
	for fi, f := range files {
		name := f.Name()
		v.Files = append(v.Files, name)
		data, err := io.ReadAll(f)
		if err != nil {
			return nil, fmt.Errorf("journal %s: read: %w", name, err)
		}
		lines, torn, _ := ReadLines(bytes.NewReader(data))
		for _, l := range lines {
			if l.Rec == nil {
				msg := "not a JSON object, so not a record; the chain passes over it (a line inserted, or damage)"
				if CutShort(l.Raw) {
					msg = "a record cut short (a writer was killed in the middle of it), ended by the next write: not a record, and no break in the chain"
				}
				v.Warnings = append(v.Warnings, Problem{name, l.No, msg})
				continue
			}
			v.Records++
			h := hashLine(l.Raw)
			p, has := l.Rec["prev"]
			ps, isStr := p.(string)
			bad := func(msg string) { v.Breaks = append(v.Breaks, Problem{name, l.No, msg}) }
			switch {
			case !has && !chained:
				v.Legacy++
			case !has:
				bad(fmt.Sprintf("no prev, but %s before it is chained: an unchained record was inserted, or this one's prev removed", where(name, lastLine)))
			case !isStr || !IsHash(ps):
				bad(fmt.Sprintf("prev %s is not a SHA-256 in lowercase hex: the record was edited", Excerpt(fmt.Appendf(nil, "%v", p), 80)))
				chained = true
			case lastFile == "":
				if ps != genesis {
					v.Anchor = ps
				}
				chained = true
			case ps != lastHash:
				bad(fmt.Sprintf("prev is %s, but %s hashes to %s: a record was removed, edited or inserted before this one", short(ps), where(name, lastLine), short(lastHash)))
				chained = true
			default:
				chained = true
			}
			if head != "" && h == head {
				v.HeadFound = true
			}
			if l.Rec["action"] == "journal_rewritten" {
				m, _ := l.Rec["message"].(string)
				if id, ok := l.Rec[SessionKey].(string); ok {
					m = "session " + id + ": " + m
				}
				v.Rewritten = append(v.Rewritten, Problem{name, l.No, Excerpt([]byte(m), 600)})
			}
			if id, ok := l.Rec[SessionKey].(string); ok {
				o := own[id]
				if o == nil {
					o = &ownRecords{sum: sha256.New()}
					own[id] = o
				}
				if l.Rec["action"] == "session_ended" {
					checkOwn(v, id, o, l.Rec, Problem{name, l.No, ""})
				}
				if l.Rec["action"] == "session_started" {
					o.started = true
				}
				o.n++
				o.sum.Write(l.Raw)
				o.sum.Write([]byte{'\n'})
			}
			lastHash, lastFile, lastLine = h, name, l.No
		}
		if torn != nil {
			no := bytes.Count(data, []byte{'\n'})
			if len(data) > 0 && data[len(data)-1] != '\n' {
				no++
			}
			msg := "torn last line: a write was cut short (not a record, and no break in the chain)"
			if fi < len(files)-1 {
				msg = "torn last line, before a rotation: a write was cut short (not a record, and no break in the chain)"
			}
			v.Warnings = append(v.Warnings, Problem{name, no, msg})
		}
	}
	v.Head = lastHash
	return v, nil
}

// ownRecords are the records of one session that Verify has read so far.
type ownRecords struct {
	n       int
	sum     hash.Hash // SHA-256 over their lines, each with '\n'
	started bool      // its session_started is among them
}

// checkOwn checks a session_ended record against the records of its
// session before it (o), when it says which were its own (Journal.Own).
func checkOwn(v *Verification, id string, o *ownRecords, rec map[string]any, at Problem) {
	n, ok1 := rec["records"].(float64)
	sum, ok2 := rec["records_sha256"].(string)
	if !ok1 || !ok2 {
		return // written before paddock summed a session's records
	}
	got := hex.EncodeToString(o.sum.Sum(nil))
	if int(n) == o.n && sum == got {
		v.Sessions++
		return
	}
	if !o.started && v.Anchor != "" {
		at.Msg = fmt.Sprintf("session %s: its session_started is in a rotated file no longer kept, so its records cannot be checked against its session_ended", Excerpt([]byte(id), 40))
		v.Warnings = append(v.Warnings, at)
		return
	}
	at.Msg = fmt.Sprintf("session %s: its session_ended says paddock wrote %d records for it before this one (SHA-256 %s), but the journal holds %d (SHA-256 %s): records of the session were removed, edited or added", Excerpt([]byte(id), 40), int(n), short(sum), o.n, short(got))
	v.Differing = append(v.Differing, at)
}

// IsHash reports whether s has the form of a chain hash (and of a head): a
// SHA-256 in lowercase hex, 64 characters. Tools check --head with it.
func IsHash(s string) bool {
	if len(s) != sha256.Size*2 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
