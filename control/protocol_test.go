package control

import (
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// countingReader counts what is read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestReadRequest(t *testing.T) {
	atLimit := `{"op":"ps"}` + strings.Repeat(" ", maxRequest-len(`{"op":"ps"}`))
	tests := []struct {
		name string
		in   string
		want Request
		err  string // substring; "" = no error
	}{
		{"adopt", `{"op":"adopt","pid":42,"reason":"vllm server","lifeline_ok":true}` + "\n", Request{Op: OpAdopt, Pid: 42, Reason: "vllm server", LifelineOK: true}, ""},
		{"no newline, then closed", `{"op":"kill","pid":7,"signal":15}`, Request{Op: OpKill, Pid: 7, Signal: 15}, ""},
		{"only the first line counts", `{"op":"ps"}` + "\n" + `{"op":"kill"`, Request{Op: OpPs}, ""},
		{"exactly the limit", atLimit + "\n", Request{Op: OpPs}, ""},
		{"one byte past the limit", atLimit + " \n", Request{}, "bad request: larger than 64 KiB"},
		{"huge", strings.Repeat("a", 1<<20), Request{}, "bad request: larger than 64 KiB"},
		{"empty", "", Request{}, "bad request: empty"},
		{"blank line", "\n", Request{}, "bad request: not a JSON request object"},
		{"malformed", `{"op":"ps"` + "\n", Request{}, "bad request: not a JSON request object: unexpected end of JSON input"},
		{"not an object", `[1,2]` + "\n", Request{}, "bad request: not a JSON request object"},
		{"trailing junk", `{"op":"ps"} x` + "\n", Request{}, "bad request: not a JSON request object"},
		{"wrong type", `{"op":"kill","pid":"1"}` + "\n", Request{}, "bad request: not a JSON request object"},
		{"op not a string", `{"op":1}` + "\n", Request{}, "bad request: not a JSON request object"},
		{"pid out of range", `{"op":"kill","pid":1e30}` + "\n", Request{}, "bad request: not a JSON request object"},
		{"null", "null\n", Request{}, `bad request: unknown op ""`},
		{"unknown op", `{"op":"shutdown"}` + "\n", Request{}, `bad request: unknown op "shutdown" (want adopt, release, ps or kill)`},
		{"ops are lower case", `{"op":"PS"}` + "\n", Request{}, `bad request: unknown op "PS"`},
		{"long unknown op", `{"op":"` + strings.Repeat("x", 5000) + `"}`, Request{}, `bad request: unknown op "` + strings.Repeat("x", 32) + `..."`},
		{"negative signal", `{"op":"kill","pid":7,"signal":-9}`, Request{}, "bad request: signal -9 is not a signal number (0 to 64)"},
		{"signal past SIGRTMAX", `{"op":"kill","pid":7,"signal":65}`, Request{}, "bad request: signal 65 is not a signal number"},
		{"signal 0 is a probe", `{"op":"kill","pid":7,"signal":0}`, Request{Op: OpKill, Pid: 7}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cr := &countingReader{r: strings.NewReader(tc.in)}
			got, err := readRequest(cr, time.Second)
			if tc.err == "" && (err != nil || got != tc.want) {
				t.Fatalf("readRequest = %+v, %v; want %+v", got, err, tc.want)
			}
			if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("readRequest = %+v, %v; want an error with %q", got, err, tc.err)
			}
			if cr.n > maxRequest+1 {
				t.Fatalf("read %d bytes, past the %d-byte bound", cr.n, maxRequest+1)
			}
		})
	}
}

// timeoutReader fails as a connection past its read deadline does.
type timeoutReader struct{ data io.Reader }

func (r timeoutReader) Read(p []byte) (int, error) {
	if n, err := r.data.Read(p); err == nil {
		return n, nil
	}
	return 0, os.ErrDeadlineExceeded
}

func TestReadRequestTimeout(t *testing.T) {
	_, err := readRequest(timeoutReader{strings.NewReader(`{"op":"p`)}, 5*time.Second)
	if err == nil || err.Error() != "bad request: no complete request within 5s (send one JSON object, then a newline)" {
		t.Fatalf("err = %v", err)
	}
}

// The wire format is what clients of other versions speak: its field names
// and omissions do not change.
func TestWireFormat(t *testing.T) {
	at := time.Date(2025, 12, 2, 13, 26, 51, 0, time.UTC)
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"request", Request{Op: OpAdopt, Pid: 42, Reason: "r", LifelineOK: true, Signal: 15},
			`{"op":"adopt","pid":42,"reason":"r","lifeline_ok":true,"signal":15}`},
		{"bare request", Request{Op: OpPs}, `{"op":"ps"}`},
		{"refusal", Response{Error: "no", Session: SessionInfo{Supervisor: 1, Agent: 2}},
			`{"ok":false,"error":"no","session":{"supervisor_pid":1,"agent_pid":2}}`},
		{"lease", Response{OK: true, Lease: &LeaseInfo{Pid: 42, Comm: "vllm", StartTime: 7, Reason: "r", AdoptedBy: "pid 9 (sh) uid 0", AdoptedAt: at, LifelineOverride: true}},
			`{"ok":true,"lease":{"pid":42,"comm":"vllm","start_time":7,"reason":"r","adopted_by":"pid 9 (sh) uid 0","adopted_at":"2025-12-02T13:26:51Z","lifeline_override":true},"session":{"supervisor_pid":0,"agent_pid":0}}`},
		{"released", Response{OK: true, Released: &LeaseInfo{Pid: 42, AdoptedAt: at}},
			`{"ok":true,"released":{"pid":42,"comm":"","start_time":0,"reason":"","adopted_by":"","adopted_at":"2025-12-02T13:26:51Z"},"session":{"supervisor_pid":0,"agent_pid":0}}`},
		{"ps", Response{OK: true, Processes: []Process{
			{Pid: 1, PPid: 0, Comm: "sh", StartTime: 3, OwnedBy: "tree", Agent: true},
			{Pid: 5, PPid: 1, Comm: "x", OwnedBy: "adopted", Reason: "r", AdoptedAt: &at},
			{Pid: 6, PPid: 5, Comm: "y", OwnedBy: "adopted", Reason: "r", Lease: 5},
		}}, `{"ok":true,"processes":[` +
			`{"pid":1,"ppid":0,"comm":"sh","start_time":3,"owned_by":"tree","agent":true},` +
			`{"pid":5,"ppid":1,"comm":"x","start_time":0,"owned_by":"adopted","reason":"r","adopted_at":"2025-12-02T13:26:51Z"},` +
			`{"pid":6,"ppid":5,"comm":"y","start_time":0,"owned_by":"adopted","reason":"r","lease":5}],` +
			`"session":{"supervisor_pid":0,"agent_pid":0}}`},
		{"signalled", Response{OK: true, Signalled: &Signalled{Pid: 5, Signal: 15, Group: true, Members: []int{5, 6}, Comm: "x"}},
			`{"ok":true,"signalled":{"pid":5,"signal":15,"group":true,"members":[5,6],"comm":"x"},"session":{"supervisor_pid":0,"agent_pid":0}}`},
	}
	for _, tc := range tests {
		b, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, b, tc.want)
		}
	}
}
