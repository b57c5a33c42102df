package journal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"time"
)

// Checking the journal file against its mirror.
//
// The chain and the session records (Verify) show an edit to the file,
// unless whoever made it also forged what paddock would have written: a
// session_ended for a session whose paddock was killed with SIGKILL (which
// wrote none), say, with the records of the session summed as it likes.
// Only a copy the agent cannot write shows that: the mirror. CompareMirror
// reads what a mirror kept and compares it with the file, session by
// session.

// MirrorRecord is one record as a mirror kept it.
type MirrorRecord struct {
	// Raw is the record's line: journald's PADDOCK_RECORD, or the JSON
	// a syslog message carries.
	Raw []byte
	// Rec is Raw parsed.
	Rec map[string]any
}

// Unwritten returns why the journal file could not take the record (its
// "journal_error"), or "" for a record written to the file.
func (m MirrorRecord) Unwritten() string {
	if _, ok := m.Rec["prev"]; ok {
		return ""
	}
	s, _ := m.Rec["journal_error"].(string)
	return s
}

// ReadMirror reads the records a mirror kept, one a line, in either form:
//
//   - journald's, as `journalctl -o json --all SYSLOG_IDENTIFIER=paddock`
//     prints them: a JSON object per entry, whose PADDOCK_RECORD is the
//     record (a string, or an array of bytes);
//   - syslog's, as a log file holds them: a line whose message, from the
//     first `{"ts":`, is the record (the RFC 5424 message paddock sends,
//     or a daemon's own rendering of it).
//
// Lines of neither form (other programs' messages, journald entries
// without PADDOCK_RECORD) are passed over; unreadable counts the lines
// that name paddock's records but cannot be read (a record cut short by a
// daemon's message size limit, or a character it escaped).
func ReadMirror(r io.Reader) (recs []MirrorRecord, unreadable int, err error) {
	br := bufio.NewReader(r)
	for {
		line, rerr := br.ReadBytes('\n')
		if rerr != nil && rerr != io.EOF {
			return recs, unreadable, fmt.Errorf("read the mirror: %w", rerr)
		}
		line = bytes.TrimRight(line, "\r\n")
		if raw, ok := mirrorLine(line); ok {
			if rec, ok := ParseLine(raw); ok {
				recs = append(recs, MirrorRecord{Raw: raw, Rec: rec})
			} else {
				unreadable++
			}
		}
		if rerr == io.EOF {
			return recs, unreadable, nil
		}
	}
}

// mirrorLine returns the record a mirror's line carries, in either form;
// ok is false for a line that names none.
func mirrorLine(line []byte) (raw []byte, ok bool) {
	if bytes.HasPrefix(bytes.TrimSpace(line), []byte("{")) {
		var entry map[string]json.RawMessage
		if json.Unmarshal(line, &entry) == nil {
			v, has := entry["PADDOCK_RECORD"]
			if !has {
				return nil, false
			}
			var s string
			if json.Unmarshal(v, &s) == nil {
				return []byte(s), true
			}
			var b []byte // journalctl renders a field that is not text as its bytes
			var nums []int
			if json.Unmarshal(v, &nums) == nil {
				for _, n := range nums {
					b = append(b, byte(n))
				}
				return b, true
			}
			return []byte{}, true // unreadable
		}
	}
	i := bytes.Index(line, []byte(`{"ts":`))
	if i < 0 {
		return nil, false
	}
	return line[i:], true
}

// MirrorFinding is one difference between the journal file and its mirror.
type MirrorFinding struct {
	// Session is the record's session.
	Session string
	// Action and TS are the record's.
	Action, TS string
	// Hash is its chain hash (a record not written to the file: empty).
	Hash string
	// Where is the file and line of a record in the file.
	Where string
	// Why is the file's error, for a record the file could not take.
	Why string
}

// MirrorComparison is what CompareMirror found.
type MirrorComparison struct {
	// Sessions counts the sessions compared: those with a record in the
	// file, or whose session_started in the mirror names this journal.
	Sessions int
	// Records counts the mirrored records of those sessions.
	Records int
	// Other counts the sessions in the mirror that belong to other
	// journals, passed over.
	Other int
	// Missing are records the mirror holds, written to the file, that the
	// file lacks: removed, or rewritten (the chain recomputed).
	Missing []MirrorFinding
	// Extra are records of a session the mirror followed from its start
	// that the mirror lacks: added to the file (a session_ended forged for
	// a session killed with SIGKILL, say), or dropped by the mirror (a
	// send fails when the log daemon is down or its socket full; paddock
	// logs "the journal mirror failed" then).
	Extra []MirrorFinding
	// Unwritten are records the file could not take (journal_error), in
	// the mirror only: not tampering found here, but records the file
	// lacks, an adoption's, say, whose record the agent kept out of the
	// file by holding its lock.
	Unwritten []MirrorFinding
	// Older counts mirrored records older than the file's kept history
	// (rotated out), not compared.
	Older int
}

// Differs reports whether the file and the mirror disagree: a record
// missing from either.
func (c *MirrorComparison) Differs() bool { return len(c.Missing) > 0 || len(c.Extra) > 0 }

// CompareMirror compares the journal at path (its rotated files included)
// with the records a mirror kept (ReadMirror), session by session: the
// sessions with records in the file, and those whose session_started in
// the mirror names this journal (its "journal" key, an absolute path); a
// session whose mirrored start names another journal is passed over. The
// mirror may hold every paddock run's records on the host.
func CompareMirror(path string, mirrored []MirrorRecord) (*MirrorComparison, error) {
	files, err := OpenHistory(path)
	if err != nil {
		return nil, err
	}
	defer closeAll(files)
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	type fileRec struct {
		hash, where string
		rec         map[string]any
	}
	inFile := map[string]bool{} // hashes
	var fileRecs []fileRec
	fileSessions := map[string]bool{}
	var oldest time.Time
	anchored := false // the kept history starts at a record rotated out
	for _, f := range files {
		data, err := io.ReadAll(f)
		if err != nil {
			return nil, fmt.Errorf("journal %s: read: %w", f.Name(), err)
		}
		lines, _, _ := ReadLines(bytes.NewReader(data))
		for _, l := range lines {
			if l.Rec == nil {
				continue
			}
			h := hashLine(l.Raw)
			if len(fileRecs) == 0 {
				oldest, _ = time.Parse(time.RFC3339Nano, str(l.Rec["ts"]))
				p := str(l.Rec["prev"])
				anchored = p != "" && p != genesis
			}
			inFile[h] = true
			fileRecs = append(fileRecs, fileRec{h, fmt.Sprintf("%s line %d", filepath.Base(f.Name()), l.No), l.Rec})
			if s := str(l.Rec[SessionKey]); s != "" {
				fileSessions[s] = true
			}
		}
	}
	c := &MirrorComparison{}
	started := map[string]bool{} // sessions whose start the mirror has
	other := map[string]bool{}
	for _, m := range mirrored {
		if str(m.Rec["action"]) != "session_started" || m.Unwritten() != "" {
			continue
		}
		s := str(m.Rec[SessionKey])
		started[s] = true
		if j := str(m.Rec["journal"]); j != "" && j != abs && !fileSessions[s] {
			other[s] = true
		}
	}
	compared := map[string]bool{}
	inMirror := map[string]bool{}
	for _, m := range mirrored {
		s := str(m.Rec[SessionKey])
		if s == "" || other[s] {
			continue
		}
		if !fileSessions[s] && !started[s] {
			continue // a session of some journal, not known to be this one
		}
		compared[s] = true
		c.Records++
		f := MirrorFinding{Session: s, Action: str(m.Rec["action"]), TS: str(m.Rec["ts"])}
		if why := m.Unwritten(); why != "" {
			f.Why = why
			c.Unwritten = append(c.Unwritten, f)
			continue
		}
		f.Hash = hashLine(m.Raw)
		inMirror[f.Hash] = true
		if inFile[f.Hash] {
			continue
		}
		if ts, err := time.Parse(time.RFC3339Nano, f.TS); anchored && err == nil && ts.Before(oldest) {
			c.Older++
			continue
		}
		c.Missing = append(c.Missing, f)
	}
	for _, r := range fileRecs {
		s := str(r.rec[SessionKey])
		if !started[s] || inMirror[r.hash] {
			continue
		}
		compared[s] = true
		c.Extra = append(c.Extra, MirrorFinding{Session: s, Action: str(r.rec["action"]), TS: str(r.rec["ts"]), Hash: r.hash, Where: r.where})
	}
	c.Sessions, c.Other = len(compared), len(other)
	sort.SliceStable(c.Missing, func(i, j int) bool { return c.Missing[i].TS < c.Missing[j].TS })
	return c, nil
}

// str is v when it is a string, else "".
func str(v any) string {
	s, _ := v.(string)
	return s
}
