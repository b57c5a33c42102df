package journal

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/internal/procfs"
)

// Sessions follows sessions by their start and end records: a session is
// unfinished from its session_started until its session_ended, its last
// record is the last one read with its id, and records of no session or
// of a session never seen starting are not followed.
func TestSessions(t *testing.T) {
	rec := func(action, session string, pid float64, more ...any) map[string]any {
		r := map[string]any{"ts": "2025-03-14T10:00:00Z", "action": action, "pid": pid}
		if session != "" {
			r[SessionKey] = session
		}
		for i := 0; i+1 < len(more); i += 2 {
			r[more[i].(string)] = more[i+1]
		}
		return r
	}
	id := []any{KeyStartTime, float64(77), KeyBootID, "b", KeyPidNS, float64(4026531836)}
	tests := []struct {
		name string
		recs []map[string]any
		want string // "id@line pid/start/boot/ns known" per unfinished session, in start order
	}{
		{"ended", []map[string]any{rec("session_started", "a", 10, id...), rec("signal_denied", "a", 11), rec("session_ended", "a", 10)}, ""},
		{"killed after a refusal", []map[string]any{rec("session_started", "a", 10, id...), rec("signal_denied", "a", 11)}, "a@2 10/77/b/4026531836 true"},
		{"killed at once", []map[string]any{rec("session_started", "a", 10, id...), rec("signal_denied", "", 11)}, "a@1 10/77/b/4026531836 true"},
		{"interleaved", []map[string]any{
			rec("session_started", "a", 10, id...), rec("session_started", "b", 20, KeyStartTime, float64(5)),
			rec("signal_denied", "b", 21), rec("session_ended", "a", 10), rec("signal_denied", "c", 31),
		}, "b@3 20/5//0 true"},
		{"start record that does not say who", []map[string]any{rec("session_started", "a", 10)}, "a@1 0/0//0 false"},
		{"no start record (an older paddock's session)", []map[string]any{rec("signal_denied", "a", 11)}, ""},
		{"an end without a start", []map[string]any{rec("session_ended", "a", 10)}, ""},
		{"the same id started twice", []map[string]any{rec("session_started", "a", 10, id...), rec("session_started", "a", 12, id...)}, "a@2 12/77/b/4026531836 true"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ss Sessions
			for i, r := range tc.recs {
				ss.Add(Pos{File: 0, Line: i + 1}, r)
			}
			var got []string
			for _, u := range ss.Unfinished() {
				p := u.Paddock
				got = append(got, strings.Join([]string{u.ID + "@" + strconv.Itoa(u.At.Line), strconv.Itoa(p.Pid) + "/" + strconv.Itoa(int(p.StartTime)) + "/" + p.BootID + "/" + strconv.Itoa(int(p.PidNS)), strconv.FormatBool(u.Known)}, " "))
			}
			if g := strings.Join(got, ", "); g != tc.want {
				t.Errorf("Unfinished = %q, want %q", g, tc.want)
			}
		})
	}
}

// IdentityFields and the start record's reading agree: what paddock run
// writes is what a reader judges by.
func TestIdentityFieldsRoundTrip(t *testing.T) {
	id := procfs.Identity{Pid: 4242, StartTime: 123456789, BootID: "6f9b", PidNS: 4026531836}
	var buf bytes.Buffer
	line, err := encode(Record{Action: "session_started", Pid: id.Pid, Fields: IdentityFields(id)})
	if err != nil {
		t.Fatal(err)
	}
	buf.Write(line)
	recs, _, err := Read(&buf)
	if err != nil || len(recs) != 1 {
		t.Fatalf("Read: %v, %d records", err, len(recs))
	}
	got, ok := identityOf(recs[0])
	if !ok || got != id {
		t.Errorf("identityOf(%s) = %+v, %v; want %+v", line, got, ok, id)
	}
}

// A session with no end record gets a row where its end record would be:
// "ended abnormally" when its paddock is gone, "no end record" when that
// cannot be told, none when its paddock runs; at its last record's time.
func TestTableUnfinished(t *testing.T) {
	u := Unfinished{ID: "s2", Known: true, Paddock: procfs.Identity{Pid: 200},
		Last: map[string]any{"ts": "2025-03-14T10:00:03.5Z", "action": "signal_denied", "pid": float64(201)}}
	tests := []struct {
		live procfs.Liveness
		want string
	}{
		{procfs.Gone, "2025-03-14T10:00:03Z  ended abnormally            200  session s2: its paddock (pid 200) is gone without a session_ended record; its last record: signal_denied at 2025-03-14T10:00:03.5Z\n"},
		{procfs.Unknown, "2025-03-14T10:00:03Z  no end record               200  session s2: no session_ended record, and whether its paddock (pid 200) still runs cannot be told here (another PID namespace, or its start record does not say); its last record: signal_denied at 2025-03-14T10:00:03.5Z\n"},
		{procfs.Running, ""},
	}
	for _, tc := range tests {
		var b strings.Builder
		tb := &Table{W: &b, Wide: true, headerDone: true}
		if err := tb.Unfinished(u, tc.live); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("%v:\n got %q\nwant %q", tc.live, b.String(), tc.want)
		}
	}
}
