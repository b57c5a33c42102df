package journal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/audit"
)

// rechain rewrites the journal file at path as an agent of its user can:
// drop removes the records for which it says so, and every later "prev" is
// recomputed, so that the chain is intact again. inPlace keeps the file
// (truncate and write); otherwise a new file is renamed over it.
func rechain(t *testing.T, path string, drop func(map[string]any) bool, inPlace bool) {
	t.Helper()
	data, err := os.ReadFile(path)
	must(t, err)
	var out []byte
	prev := genesis
	for _, l := range bytes.SplitAfter(data, []byte{'\n'}) {
		raw := bytes.TrimSuffix(l, []byte{'\n'})
		rec, ok := ParseLine(raw)
		if !ok {
			continue
		}
		if drop(rec) {
			continue
		}
		p, _ := rec["prev"].(string)
		line := bytes.Replace(raw, []byte(`"prev":"`+p+`"`), []byte(`"prev":"`+prev+`"`), 1)
		out = append(out, line...)
		out = append(out, '\n')
		prev = hashLine(line)
	}
	if inPlace {
		must(t, os.WriteFile(path, out, 0o600))
		return
	}
	must(t, os.WriteFile(path+".new", out, 0o600))
	must(t, os.Rename(path+".new", path))
}

func actionIs(a string) func(map[string]any) bool {
	return func(r map[string]any) bool { return r["action"] == a }
}

// TestHeadCheck: before each append, a Journal checks the file against the
// record it wrote last. A chain rewritten around a removed record (in place
// or as a new file), records cut off the end, and a journal removed are each
// recorded by a journal_rewritten record ahead of the next one, which links
// onto the file as it is; another writer's records and rotations are not.
func TestHeadCheck(t *testing.T) {
	tests := []struct {
		name string
		// meddle acts on the journal at path between two appends of j;
		// other is another writer of the same journal.
		meddle func(t *testing.T, path string, other *Journal)
		want   string // in the journal_rewritten message; "" for none
	}{
		{"another writer appends", func(t *testing.T, path string, other *Journal) {
			must(t, writeSeq(other, 9, 3))
		}, ""},
		{"another writer rotates twice", func(t *testing.T, path string, other *Journal) {
			// Each record is over half MaxBytes: every one rotates.
			for i := 0; i < 2; i++ {
				must(t, other.Append(Record{Action: "big", Fields: map[string]any{"pad": strings.Repeat("x", 600)}}))
			}
		}, ""},
		{"another writer rotates it out", func(t *testing.T, path string, other *Journal) {
			// Four rotations and three kept: j's file is dropped, and
			// the oldest kept no longer links to it. Said as such.
			for i := 0; i < 5; i++ {
				must(t, other.Append(Record{Action: "big", Fields: map[string]any{"pad": strings.Repeat("x", 600)}}))
			}
		}, "rotated out of the 3 kept files"},
		{"a record removed, the chain recomputed in place", func(t *testing.T, path string, _ *Journal) {
			rechain(t, path, actionIs("adopted"), true)
		}, "no longer holds that record"},
		{"a record removed, the chain recomputed in a new file", func(t *testing.T, path string, _ *Journal) {
			rechain(t, path, actionIs("adopted"), false)
		}, "or the journal was replaced or removed"},
		{"records cut off the end", func(t *testing.T, path string, _ *Journal) {
			data, _ := os.ReadFile(path)
			lines := bytes.SplitAfter(data, []byte{'\n'})
			must(t, os.WriteFile(path, bytes.Join(lines[:1], nil), 0o600))
		}, "no longer holds that record"},
		{"the journal removed", func(t *testing.T, path string, _ *Journal) {
			must(t, os.Remove(path))
		}, "removed or emptied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "j.jsonl")
			o := Options{Session: "s1", MaxBytes: 1024, Keep: 3}
			var told []error
			o.Rewritten = func(err error) { told = append(told, err) }
			j, err := Open(path, o)
			must(t, err)
			defer j.Close()
			other, err := Open(path, Options{MaxBytes: 1024, Keep: 3})
			must(t, err)
			defer other.Close()
			must(t, j.Append(Record{Action: audit.SessionStarted}))
			must(t, j.Append(Record{Action: audit.Adopted, Pid: 7}))
			must(t, j.Append(Record{Action: audit.SignalDenied, Pid: 8}))
			tt.meddle(t, path, other)
			must(t, j.Append(Record{Action: "next", Pid: 1}))
			recs := readFile(t, path)
			var rw []map[string]any
			for _, r := range recs {
				if r["action"] == "journal_rewritten" {
					rw = append(rw, r)
				}
			}
			if tt.want == "" {
				if len(rw) > 0 || len(told) > 0 || j.Rewrites() != 0 {
					t.Fatalf("a false alarm: %v, told %v", rw, told)
				}
				return
			}
			if len(rw) != 1 || len(told) != 1 || j.Rewrites() != 1 {
				t.Fatalf("journal_rewritten records %v, told %v, Rewrites %d; want one of each", rw, told, j.Rewrites())
			}
			msg, _ := rw[0]["message"].(string)
			if !strings.Contains(msg, tt.want) || rw[0]["session"] != "s1" || !IsHash(rw[0]["head"].(string)) {
				t.Errorf("journal_rewritten = %v, want its message to say %q, with the session and head", rw[0], tt.want)
			}
			if !errors.As(told[0], new(*RewriteError)) {
				t.Errorf("told %T, want a *RewriteError", told[0])
			}
			// The record goes first, and the next one links onto it.
			if n := len(recs); recs[n-1]["action"] != "next" || recs[n-2]["action"] != "journal_rewritten" {
				t.Errorf("last records %v, want journal_rewritten then next", recs[max(0, n-2):])
			}
			// And once the file is checked again, nothing more.
			must(t, j.Check())
			must(t, j.Append(Record{Action: "after"}))
			if j.Rewrites() != 1 {
				t.Errorf("Rewrites %d after a clean append, want 1", j.Rewrites())
			}
		})
	}
}

// TestCheckAtExit: Check finds a rewrite with no record to append, and
// writes the journal_rewritten record itself.
func TestCheckAtExit(t *testing.T) {
	c, sock := listenDgram(t)
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := Open(path, Options{Mirror: MirrorJournald, MirrorSocket: sock})
	must(t, err)
	defer j.Close()
	must(t, writeSeq(j, 0, 3))
	recvN(t, c, 3)
	must(t, j.Check())
	rechain(t, path, func(r map[string]any) bool { return r["seq"] == float64(1) }, true)
	err = j.Check()
	if !errors.As(err, new(*RewriteError)) {
		t.Fatalf("Check after a rewrite: %v, want a *RewriteError", err)
	}
	// Mirrored, as written.
	if d := string(recvDgram(t, c)); !strings.Contains(d, "PADDOCK_ACTION=journal_rewritten\n") || !strings.Contains(d, "PADDOCK_HASH=") {
		t.Errorf("the mirror got %q, want the journal_rewritten record", d)
	}
	recs := readFile(t, path)
	if len(recs) != 3 || recs[2]["action"] != "journal_rewritten" {
		t.Errorf("journal holds %v, want the two records left and journal_rewritten", recs)
	}
	// Verify counts the record as tampering found.
	v, err := Verify(path, "")
	must(t, err)
	if len(v.Breaks) > 0 || len(v.Rewritten) != 1 || v.Rewritten[0].Line != 3 {
		t.Errorf("Verify: breaks %v, rewritten %v; want no break, and the journal_rewritten at line 3", v.Breaks, v.Rewritten)
	}
}

// TestOwnAndVerifySessions: a session_ended that carries Own's count and
// sum makes Verify check the session's records: a record of the session
// removed with the chain recomputed passes the chain, and not this check.
func TestOwnAndVerifySessions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := Open(path, Options{Session: "s1"})
	must(t, err)
	other, err := Open(path, Options{Session: "s2"})
	must(t, err)
	// s2's records come before s1's adoption: the rewrite below changes
	// the bytes of every record after the one it removes, s1's
	// session_ended alone here.
	must(t, j.Append(Record{Action: audit.SessionStarted}))
	must(t, other.Append(Record{Action: audit.SessionStarted}))
	must(t, other.Append(Record{Action: audit.SignalDenied}))
	n2, sum2 := other.Own()
	must(t, other.Append(Record{Action: audit.SessionEnded, Fields: map[string]any{"records": n2, "records_sha256": sum2}}))
	other.Close()
	must(t, j.Append(Record{Action: audit.Adopted, Pid: 7}))
	n, sum := j.Own()
	if n != 2 || !IsHash(sum) {
		t.Fatalf("Own() = %d, %q; want 2 and a SHA-256", n, sum)
	}
	must(t, j.Append(Record{Action: audit.SessionEnded, Fields: map[string]any{"records": n, "records_sha256": sum}}))
	j.Close()
	v, err := Verify(path, "")
	must(t, err)
	if len(v.Breaks) > 0 || len(v.Differing) > 0 || v.Sessions != 2 {
		t.Fatalf("clean journal: breaks %v, differing %v, sessions %d; want none, none, 2", v.Breaks, v.Differing, v.Sessions)
	}
	rechain(t, path, actionIs("adopted"), true)
	v, err = Verify(path, "")
	must(t, err)
	if len(v.Breaks) > 0 {
		t.Fatalf("the rechained journal breaks the chain: %v (the test's rewrite is wrong)", v.Breaks)
	}
	if len(v.Differing) != 1 || !strings.Contains(v.Differing[0].Msg, "session s1: its session_ended says paddock wrote 2 records") || v.Sessions != 1 {
		t.Errorf("differing %v, sessions %d; want session s1 named, and s2 matching", v.Differing, v.Sessions)
	}
}

// TestLockWait: a lock held past Options.LockWait fails Open and Append
// with a *LockError naming its holder; the wait after one that timed out
// does not wait again; the lock let go, records are written again.
func TestLockWait(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	must(t, os.WriteFile(path, nil, 0o600))
	hold := func() *os.File {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		must(t, err)
		must(t, unix.Flock(int(f.Fd()), unix.LOCK_EX))
		return f
	}
	held := hold()
	_, err := Open(path, Options{LockWait: 100 * time.Millisecond})
	var le *LockError
	if !errors.As(err, &le) || le.Waited != 100*time.Millisecond || len(le.Holders) != 1 || le.Holders[0].Pid != os.Getpid() {
		t.Fatalf("Open with the lock held: %v (%+v), want a *LockError naming this process", err, le)
	}
	if !strings.Contains(err.Error(), "held by pid ") || !strings.Contains(err.Error(), "for more than 100ms") {
		t.Errorf("message %q does not say who holds the lock and how long paddock waited", err)
	}
	held.Close()

	c, sock := listenDgram(t)
	j, err := Open(path, Options{LockWait: 100 * time.Millisecond, Session: "s", Mirror: MirrorJournald, MirrorSocket: sock})
	must(t, err)
	defer j.Close()
	must(t, j.Append(Record{Action: "one"}))
	recvDgram(t, c)
	held = hold()
	for i, waited := range []time.Duration{100 * time.Millisecond, 0} {
		err := j.Append(Record{Action: audit.Adopted, Pid: 7})
		var fe *FileError
		if !errors.As(err, &fe) || !fe.Mirrored || fe.Written || !errors.As(err, &le) || le.Waited != waited {
			t.Fatalf("append %d with the lock held: %v, want a *FileError (mirrored) of a *LockError that waited %v", i, err, waited)
		}
		// The mirror has the record the file could not take, saying why.
		f := map[string]string{}
		for _, kv := range parseJournald(t, recvDgram(t, c)) {
			f[kv[0]] = kv[1]
		}
		if f["PADDOCK_ACTION"] != "adopted" || !strings.Contains(f["PADDOCK_JOURNAL_ERROR"], "held by pid") || f["PADDOCK_HASH"] != "" || f["PADDOCK_PREV"] != "" || f["PADDOCK_SESSION"] != "s" {
			t.Errorf("mirrored %v, want the adoption with journal_error, no prev, no hash", f)
		}
		rec, ok := ParseLine([]byte(f["PADDOCK_RECORD"]))
		if !ok || (MirrorRecord{Rec: rec}).Unwritten() == "" {
			t.Errorf("PADDOCK_RECORD %q is not a record the file could not take", f["PADDOCK_RECORD"])
		}
	}
	held.Close()
	must(t, j.Append(Record{Action: "two"}))
	if recs := readFile(t, path); len(recs) != 2 || recs[1]["action"] != "two" {
		t.Errorf("journal holds %v, want one and two", recs)
	}
}

// TestLockHolders: lockHolders finds the holder through its descriptor
// even when the process that took the lock is gone (a shell's `flock 9`),
// from a /proc of its own making.
func TestLockHolders(t *testing.T) {
	root := t.TempDir()
	write := func(name, s string) {
		p := filepath.Join(root, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o700))
		must(t, os.WriteFile(p, []byte(s), 0o600))
	}
	dev := unix.Mkdev(0xfe, 0)
	write("locks", "1: POSIX  ADVISORY  WRITE 11 fe:00:42 0 EOF\n2: FLOCK  ADVISORY  WRITE 31375 fe:00:42 0 EOF\n2: -> FLOCK  ADVISORY  WRITE 99 fe:00:42 0 EOF\n")
	write("200/fdinfo/9", "pos:\t0\nflags:\t0102001\nlock:\t1: FLOCK  ADVISORY  WRITE 31375 fe:00:42 0 EOF\n")
	write("200/comm", "bash\n")
	write("201/fdinfo/3", "pos:\t0\nlock:\t1: -> FLOCK  ADVISORY  WRITE 201 fe:00:42 0 EOF\n") // a waiter
	write("201/comm", "paddock\n")
	write("202/fdinfo/4", "pos:\t0\nlock:\t1: FLOCK  ADVISORY  WRITE 202 fe:00:43 0 EOF\n") // another file
	write("202/comm", "other\n")
	// A child that inherited the shell's descriptor holds it too, and is
	// listed after the shell: pids in number order, not name order.
	write("1000/fdinfo/9", "pos:\t0\nflags:\t0102001\nlock:\t1: FLOCK  ADVISORY  WRITE 31375 fe:00:42 0 EOF\n")
	write("1000/comm", "paddock\n")
	taker, holders := lockHolders(root, dev, 42)
	if want := []Holder{{200, "bash"}, {1000, "paddock"}}; taker != 31375 || !slices.Equal(holders, want) {
		t.Errorf("lockHolders = %d, %v; want 31375 and %v", taker, holders, want)
	}
	e := &LockError{Path: "j", Waited: time.Second, Holders: []Holder{{200, "\x1b[2Jevil"}}}
	if strings.ContainsRune(e.Error(), 0x1b) {
		t.Errorf("a holder's name reaches the message raw: %q", e.Error())
	}
}
