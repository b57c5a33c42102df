package control

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

// chunkReader hands out its data n bytes at a time, as a socket may.
type chunkReader struct {
	data []byte
	n    int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	k := min(c.n, len(p), len(c.data))
	copy(p, c.data[:k])
	c.data = c.data[k:]
	return k, nil
}

// FuzzControlRequest: any bytes a control-socket client sends, read and
// carried out against a recorder standing in for the session. No panic; an
// answer is either OK or one bounded line of error; a request past 64 KiB,
// malformed, or naming an unknown op or an impossible signal is refused as
// "bad request" without touching the session; a well-formed one makes
// exactly the one call it names, with its arguments unchanged; the answer
// survives the wire; how the bytes arrive does not matter; and what Call
// sends for a request is read back as that request.
func FuzzControlRequest(f *testing.F) {
	for _, s := range []string{
		`{"op":"adopt","pid":4242,"reason":"vllm server started by hand","lifeline_ok":true}` + "\n",
		`{"op":"release","pid":4242}` + "\n",
		`{"op":"ps"}`,
		`{"op":"kill","pid":7,"signal":15}` + "\n" + `{"op":"kill","pid":1,"signal":9}` + "\n",
		`{"op":"kill","pid":-1,"signal":65}`,
		`{"op":"kill","pid":9223372036854775807,"signal":-1}`,
		`{"op":"adopt","pid":1e3,"reason":"\u0000\n\u202e"}`,
		`{"OP":"PS","Pid":"1"}`,
		`{"op":"ps","op":"kill","pid":1}`,
		"null\n", "[]\n", "\n", "", "{\"op\":\"ps\"} {}\n", "\xff\xfe{",
	} {
		f.Add([]byte(s), uint8(len(s)))
	}
	f.Fuzz(func(t *testing.T, raw []byte, mode uint8) {
		rec := &recorder{}
		if mode&1 == 1 {
			rec.err = errors.New("refused by the test")
		}
		const by = "pid 4242 (bash) uid 1000"
		resp := serveRequest(bytes.NewReader(raw), time.Second, rec, client{pid: 4242, by: func() string { return by }})

		if resp.OK == (resp.Error != "") {
			t.Fatalf("answer %+v is neither plainly OK nor plainly an error", resp)
		}
		if strings.ContainsAny(resp.Error, "\n\r") || len(resp.Error) > 512 {
			t.Fatalf("error of %d bytes, or spanning lines: %.300q", len(resp.Error), resp.Error)
		}
		if len(rec.calls) > 1 {
			t.Fatalf("one request made %d calls: %q", len(rec.calls), rec.calls)
		}

		// What the request should have been, decoded independently.
		line, _, _ := bytes.Cut(raw, []byte{'\n'})
		var want Request
		wellFormed := len(line) <= maxRequest && len(line) > 0 && json.Unmarshal(line, &want) == nil
		switch {
		case !wellFormed:
		case want.Op == OpAdopt, want.Op == OpRelease, want.Op == OpPs:
		case want.Op == OpKill && want.Signal >= 0 && want.Signal <= maxSignal:
		default:
			wellFormed = false
		}
		if !wellFormed {
			if len(rec.calls) != 0 || !strings.HasPrefix(resp.Error, "bad request: ") {
				t.Fatalf("bad request %.200q: calls %q, answer %+v", raw, rec.calls, resp)
			}
			if len(line) > maxRequest && !strings.HasPrefix(resp.Error, "bad request: larger than 64 KiB") {
				t.Fatalf("request of %d bytes: %q, want it refused as too large", len(line), resp.Error)
			}
		} else {
			var call string
			switch want.Op {
			case OpAdopt:
				call = fmt.Sprintf("adopt %d %q %v by %s", want.Pid, want.Reason, want.LifelineOK, by)
			case OpRelease:
				call = fmt.Sprintf("release %d by %s", want.Pid, by)
			case OpPs:
				call = "ps"
			case OpKill:
				call = fmt.Sprintf("kill %d %d from 4242", want.Pid, want.Signal)
			}
			if len(rec.calls) != 1 || rec.calls[0] != call {
				t.Fatalf("request %.200q: calls %q, want %q", raw, rec.calls, call)
			}
			if rec.err != nil && resp.Error != rec.err.Error() {
				t.Fatalf("the session's refusal came back as %q", resp.Error)
			}
			if rec.err == nil && want.Op == OpAdopt && (resp.Lease == nil || resp.Lease.Reason != want.Reason || resp.Lease.Pid != want.Pid) {
				t.Fatalf("adopt answer %+v, want the lease of %d for %q", resp.Lease, want.Pid, want.Reason)
			}

			// What Call sends for this request is read back as it.
			b, err := json.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			back, err := readRequest(bytes.NewReader(append(b, '\n')), time.Second)
			if err != nil || back != want {
				t.Fatalf("Call's encoding %s reads back as %+v, %v; want %+v", b, back, err, want)
			}
		}

		// The answer survives the wire.
		wire, err := json.Marshal(resp)
		if err != nil {
			t.Fatalf("answer %+v does not encode: %v", resp, err)
		}
		var got Response
		if err := json.Unmarshal(wire, &got); err != nil {
			t.Fatalf("answer %s does not decode: %v", wire, err)
		}
		if again, _ := json.Marshal(got); !bytes.Equal(again, wire) {
			t.Fatalf("answer %s came back as %s", wire, again)
		}

		// How the bytes arrive does not matter.
		rec2 := &recorder{err: rec.err}
		resp2 := serveRequest(&chunkReader{data: raw, n: int(mode)%13 + 1}, time.Second, rec2, client{pid: 4242, by: func() string { return by }})
		if !reflect.DeepEqual(resp2, resp) || !reflect.DeepEqual(rec2.calls, rec.calls) {
			t.Fatalf("in chunks of %d: %+v, calls %q; at once: %+v, calls %q", int(mode)%13+1, resp2, rec2.calls, resp, rec.calls)
		}
	})
}
