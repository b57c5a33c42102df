package journal

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/audit"
)

// journalctlJSON renders journald datagrams as `journalctl -o json` prints
// the entries journald made of them: one JSON object a line, a field per
// key (what journald adds of its own is left out; ReadMirror ignores it).
func journalctlJSON(t *testing.T, dgrams [][]byte) []byte {
	t.Helper()
	var out bytes.Buffer
	for _, d := range dgrams {
		entry := map[string]any{"__CURSOR": "s=0;i=1", "_UID": "65534"}
		for _, kv := range parseJournald(t, d) {
			entry[kv[0]] = kv[1]
		}
		b, err := json.Marshal(entry)
		must(t, err)
		out.Write(append(b, '\n'))
	}
	return out.Bytes()
}

// recvN reads the n datagrams the mirror sent (the sends are done: Append
// returned).
func recvN(t *testing.T, c *net.UnixConn, n int) [][]byte {
	t.Helper()
	var out [][]byte
	for range n {
		out = append(out, recvDgram(t, c))
	}
	return out
}

// TestCompareMirror: the journal file compared with the journald copy, as
// `paddock journal --verify --mirror` does, session by session.
func TestCompareMirror(t *testing.T) {
	type want struct{ missing, extra, unwritten, other, sessions int }
	tests := []struct {
		name   string
		meddle func(t *testing.T, path string) // after the sessions ran
		want   want
	}{
		{"the file as paddock left it", func(*testing.T, string) {}, want{sessions: 2, other: 1}},
		{"the adoption removed and the chain recomputed", func(t *testing.T, path string) {
			rechain(t, path, actionIs("adopted"), true)
		}, want{sessions: 2, other: 1,
			// The adoption, and every record after it, rewritten.
			missing: 3, extra: 2}},
		{"a session_ended forged for the killed session", func(t *testing.T, path string) {
			forgeEnd(t, path, "killed")
		}, want{sessions: 2, other: 1, extra: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, sock := listenDgram(t)
			dir := t.TempDir()
			path := filepath.Join(dir, "j.jsonl")
			abs, _ := filepath.Abs(path)
			open := func(session string) *Journal {
				j, err := Open(path, Options{Session: session, Mirror: MirrorJournald, MirrorSocket: sock})
				must(t, err)
				return j
			}
			// A session that ends, one killed before its end record, and
			// one of another journal, sharing the mirror.
			ok := open("ended")
			must(t, ok.Append(Record{Action: audit.SessionStarted, Fields: map[string]any{"journal": abs}}))
			killed := open("killed")
			must(t, killed.Append(Record{Action: audit.SessionStarted, Fields: map[string]any{"journal": abs}}))
			must(t, ok.Append(Record{Action: audit.Adopted, Pid: 7}))
			must(t, killed.Append(Record{Action: audit.SignalDenied, Pid: 8}))
			must(t, ok.Append(Record{Action: audit.SessionEnded}))
			killed.Close()
			ok.Close()
			elsewhere, err := Open(filepath.Join(dir, "other.jsonl"), Options{Session: "elsewhere", Mirror: MirrorJournald, MirrorSocket: sock})
			must(t, err)
			must(t, elsewhere.Append(Record{Action: audit.SessionStarted, Fields: map[string]any{"journal": filepath.Join(dir, "other.jsonl")}}))
			elsewhere.Close()

			tt.meddle(t, path)
			recs, unreadable, err := ReadMirror(bytes.NewReader(journalctlJSON(t, recvN(t, c, 6))))
			must(t, err)
			if unreadable != 0 || len(recs) != 6 {
				t.Fatalf("ReadMirror: %d records, %d unreadable; want 6, 0", len(recs), unreadable)
			}
			cmp, err := CompareMirror(path, recs)
			must(t, err)
			got := want{len(cmp.Missing), len(cmp.Extra), len(cmp.Unwritten), cmp.Other, cmp.Sessions}
			if got != tt.want {
				t.Errorf("CompareMirror = %+v\nmissing %+v\nextra %+v", got, cmp.Missing, cmp.Extra)
			}
			if cmp.Differs() != (tt.want.missing+tt.want.extra > 0) {
				t.Errorf("Differs() = %v", cmp.Differs())
			}
			if tt.want.extra == 1 && (cmp.Extra[0].Action != "session_ended" || cmp.Extra[0].Session != "killed" || !strings.Contains(cmp.Extra[0].Where, "line ")) {
				t.Errorf("extra %+v, want the forged session_ended of session killed, with its line", cmp.Extra[0])
			}
		})
	}
}

// forgeEnd appends a session_ended for session, linked to the file's last
// record, as an agent of the journal's user could.
func forgeEnd(t *testing.T, path, session string) {
	t.Helper()
	j, err := Open(path, Options{Session: session})
	must(t, err)
	defer j.Close()
	must(t, j.Append(Record{Action: audit.SessionEnded, Fields: map[string]any{"status": 0, "refusals": 0}}))
}

// TestReadMirrorForms: journald entries (the record as a string or as
// bytes) and syslog lines, among other programs' lines.
func TestReadMirrorForms(t *testing.T) {
	rec := `{"ts":"2026-12-04T16:33:50Z","action":"adopted","pid":7,"session":"s","prev":"` + genesis + `"}`
	bytesForm, _ := json.Marshal(map[string]any{"PADDOCK_RECORD": []int(func() []int {
		var b []int
		for _, c := range []byte(rec) {
			b = append(b, int(c))
		}
		return b
	}())})
	input := strings.Join([]string{
		`{"MESSAGE":"sshd: session opened","SYSLOG_IDENTIFIER":"sshd"}`,
		`{"PADDOCK_RECORD":` + string(mustJSON(t, rec)) + `,"SYSLOG_IDENTIFIER":"paddock"}`,
		string(bytesForm),
		`<85>1 2026-12-04T16:33:50.000000Z host paddock 2442 adopted - ` + rec,
		`Dec  4 16:33:50 host paddock[2442]: ` + rec,
		`Dec  4 16:33:50 host sshd[1]: Accepted publickey`,
		`Dec  4 16:33:50 host paddock[2442]: {"ts":"2026-12-04T16:33:50Z","action":"ado`, // cut short by the daemon
	}, "\n")
	recs, unreadable, err := ReadMirror(strings.NewReader(input))
	must(t, err)
	if len(recs) != 4 || unreadable != 1 {
		t.Fatalf("ReadMirror: %d records, %d unreadable; want 4, 1", len(recs), unreadable)
	}
	for i, r := range recs {
		if string(r.Raw) != rec || r.Unwritten() != "" {
			t.Errorf("record %d = %q, want %q", i, r.Raw, rec)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	must(t, err)
	return b
}

// TestCompareMirrorUnwritten: a record the file could not take is in the
// mirror only, saying why; it is reported, and is no mismatch.
func TestCompareMirrorUnwritten(t *testing.T) {
	c, sock := listenDgram(t)
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := Open(path, Options{Session: "s", Mirror: MirrorJournald, MirrorSocket: sock, LockWait: 50 * time.Millisecond})
	must(t, err)
	defer j.Close()
	must(t, j.Append(Record{Action: audit.SessionStarted}))
	held, err := os.OpenFile(path, os.O_RDWR, 0)
	must(t, err)
	must(t, unix.Flock(int(held.Fd()), unix.LOCK_EX))
	if err := j.Append(Record{Action: audit.Adopted, Pid: 7}); err == nil {
		t.Fatal("Append with the journal's lock held succeeded")
	}
	held.Close()
	must(t, j.Append(Record{Action: audit.SessionEnded}))
	recs, _, err := ReadMirror(bytes.NewReader(journalctlJSON(t, recvN(t, c, 3))))
	must(t, err)
	cmp, err := CompareMirror(path, recs)
	must(t, err)
	if cmp.Differs() || len(cmp.Unwritten) != 1 || cmp.Unwritten[0].Action != "adopted" || !strings.Contains(cmp.Unwritten[0].Why, "held by pid") {
		t.Errorf("CompareMirror: differs %v, unwritten %+v; want the adoption in the mirror only, saying why", cmp.Differs(), cmp.Unwritten)
	}
}
