package journal

import (
	"github.com/paddock-dev/paddock/audit"

	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"
	"unicode"
	"unicode/utf8"
)

// readSeeds are journal files as paddock writes them, and as crashes, edits
// and hostile records leave them.
var readSeeds = []string{
	"",
	`{"ts":"2026-12-02T13:43:31.048572589Z","action":"signal_denied","pid":11031,"abi":"x86_64","message":"paddock refused kill(SIGTERM) of pid 1","rule":"lifeline","signal":15,"syscall":"kill","target":1}` + "\n",
	`{"ts":"2026-12-02T13:43:31Z","action":"exec_denied","pid":7,"argv":["sh","-c","reboot\u001b[2J"],"path":"/bin/sh"}` + "\n" + `{"ts":"2026-12-02T13:43:3`,
	"not json\n{}\n\n  \n[1,2]\n{\"a\":1}",
	`{"action":"adopted","pid":1e400}` + "\n" + `{"reason":"\u202egnp.exe","pid":-0.5,"ts":7}` + "\n{\n",
	"{\"action\":\"x\\ny\",\"k\\u0000\":\"\xff\xfe\"}\r\n\n",
	"null\n\"s\"\n{\"a\":{\"b\":[{}]}}\n",
}

// FuzzRead: Read, ReadLines and the follower's line splitter on any bytes.
// They must not panic and must agree with each other; every non-blank line
// is a record, a corrupt line or the torn last line, nothing else; records
// survive re-encoding; reading one byte at a time changes nothing; and the
// table `paddock journal` prints of the records holds no character a
// terminal would act on.
func FuzzRead(f *testing.F) {
	for i, s := range readSeeds {
		f.Add([]byte(s), uint8(i))
	}
	f.Fuzz(func(t *testing.T, raw []byte, chunk uint8) {
		recs, torn, err := Read(bytes.NewReader(raw))
		var ce *CorruptError
		if err != nil && !errors.As(err, &ce) {
			t.Fatalf("Read: error %v is not a *CorruptError", err)
		}
		lines, ltorn, lerr := ReadLines(bytes.NewReader(raw))
		if lerr != nil || string(ltorn) != torn {
			t.Fatalf("ReadLines torn %q, err %v; Read torn %q", ltorn, lerr, torn)
		}

		// Read and ReadLines agree, record for record and line for line.
		var fromLines []map[string]any
		var bad []int
		for _, l := range lines {
			if l.Rec == nil {
				bad = append(bad, l.No)
				continue
			}
			fromLines = append(fromLines, l.Rec)
		}
		if !reflect.DeepEqual(fromLines, recs) {
			t.Fatalf("ReadLines records %v, Read records %v", fromLines, recs)
		}
		if (ce == nil) != (len(bad) == 0) || (ce != nil && !reflect.DeepEqual(ce.Lines, bad)) {
			t.Fatalf("corrupt lines: Read %v, ReadLines %v", err, bad)
		}
		if ce != nil && !strings.Contains(ce.Error(), "line ") {
			t.Fatalf("CorruptError %q names no line", ce)
		}

		// Every non-blank line is accounted for exactly once, at its number.
		split := strings.Split(string(raw), "\n")
		last := split[len(split)-1] // "" when raw ends with '\n'
		nonBlank := 0
		for _, s := range split {
			if strings.TrimSpace(s) != "" {
				nonBlank++
			}
		}
		tornCount := 0
		if torn != "" {
			tornCount = 1
		}
		if len(lines)+tornCount != nonBlank {
			t.Fatalf("%d non-blank lines, but %d lines and %d torn", nonBlank, len(lines), tornCount)
		}
		for _, l := range lines {
			if l.No < 1 || l.No > len(split) || split[l.No-1] != string(l.Raw) {
				t.Fatalf("line %d %q is not line %d of the input", l.No, l.Raw, l.No)
			}
		}
		if strings.TrimSpace(last) != "" && torn != last {
			t.Fatalf("input ends without a newline in %q, but torn = %q", last, torn)
		}
		if torn != "" && strings.TrimSpace(last) == "" {
			if _, ok := ParseLine([]byte(torn)); ok {
				t.Fatalf("torn %q parses, yet it ended with a newline", torn)
			}
		}

		// Records survive re-encoding: as lines of a fresh file, nothing is
		// torn or corrupt, and the records come back equal.
		var again bytes.Buffer
		for _, r := range recs {
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatalf("record %v does not re-encode: %v", r, err)
			}
			again.Write(b)
			again.WriteByte('\n')
		}
		back, btorn, berr := Read(&again)
		if berr != nil || btorn != "" || !reflect.DeepEqual(back, recs) {
			t.Fatalf("re-encoded records read back as %v, torn %q, %v; want %v", back, btorn, berr, recs)
		}

		// The reader's buffering does not matter.
		slow, storn, _ := Read(iotest.OneByteReader(bytes.NewReader(raw)))
		if !reflect.DeepEqual(slow, recs) || storn != torn {
			t.Fatalf("one byte at a time: %v, torn %q; want %v, torn %q", slow, storn, recs, torn)
		}

		// The follower's splitter, fed in chunks, emits the complete lines
		// and keeps the unterminated rest.
		var emitted []string
		lr := &lineReader{emit: func(l []byte) error { emitted = append(emitted, string(l)); return nil }}
		size := int(chunk)%17 + 1
		for b := raw; len(b) > 0; {
			n := min(size, len(b))
			if err := lr.feed(b[:n]); err != nil {
				t.Fatal(err)
			}
			b = b[n:]
		}
		if want := split[:len(split)-1]; !(len(emitted) == 0 && len(want) == 0) && !reflect.DeepEqual(emitted, want) {
			t.Fatalf("follower emitted %q, want %q", emitted, want)
		}
		if string(lr.partial) != last {
			t.Fatalf("follower kept %q, want %q", lr.partial, last)
		}

		// The table shows records without a character a terminal would act on.
		for _, wide := range []bool{false, true} {
			var out strings.Builder
			tab := &Table{W: &out, Wide: wide}
			for _, r := range recs {
				if err := tab.Row(r); err != nil {
					t.Fatal(err)
				}
			}
			rows := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if len(recs) > 0 && len(rows) != len(recs)+1 {
				t.Fatalf("table of %d records has %d lines:\n%s", len(recs), len(rows), out.String())
			}
			for _, row := range rows {
				if !utf8.ValidString(row) {
					t.Fatalf("table row %q is not valid UTF-8", row)
				}
				for _, r := range row {
					if !unicode.IsPrint(r) {
						t.Fatalf("table row %q holds %U", row, r)
					}
				}
			}
		}
	})
}

// validUTF8 is s as encoding/json writes it: each byte of invalid UTF-8
// becomes U+FFFD.
func validUTF8(s string) string { return string([]rune(s)) }

// FuzzRecordRoundTrip: what Append writes (encode) is one line that Read
// takes back whole, whatever the action and the field values hold
// (newlines, NULs, quotes, invalid UTF-8, HTML, huge or odd numbers).
func FuzzRecordRoundTrip(f *testing.F) {
	f.Add("signal_denied", int32(11031), int64(1764682011048572589), "paddock refused kill(SIGTERM) of pid 1", "reason", 15.0, true)
	f.Add("x\ny", int32(-1), int64(0), "<pid>&\u2028\x00\xff", "k\"ey", math.MaxFloat64, false)
	f.Add("", int32(0), int64(-1), "", "", math.Copysign(0, -1), true)
	f.Add("a", int32(1), int64(math.MaxInt64), "\u202e", "ts", 1e-320, false)
	f.Fuzz(func(t *testing.T, action string, pid int32, nanos int64, msg, key string, num float64, flag bool) {
		switch key {
		case "message", "n", "flag", "list":
			key = "other"
		}
		rec := Record{TS: time.Unix(0, nanos), Action: audit.Action(action), Pid: int(pid), Fields: map[string]any{
			"message": msg, "n": num, "flag": flag, "list": []string{msg, key}, key: msg,
		}}
		line, err := encode(rec)
		if err != nil {
			switch {
			case action == "", key == "ts" || key == "action" || key == "pid":
			case math.IsNaN(num) || math.IsInf(num, 0):
			default:
				t.Fatalf("encode(%+v): %v", rec, err)
			}
			if err.Error() == "" || strings.ContainsRune(err.Error(), '\n') {
				t.Fatalf("encode error %q is not one descriptive line", err)
			}
			return
		}
		if bytes.IndexByte(line, '\n') != len(line)-1 {
			t.Fatalf("encoded record %q is not exactly one line", line)
		}
		if !bytes.HasPrefix(line, []byte(`{"ts":"`)) {
			t.Fatalf("encoded record %q does not start with ts", line)
		}
		recs, torn, rerr := Read(bytes.NewReader(line))
		if rerr != nil || torn != "" || len(recs) != 1 {
			t.Fatalf("Read(%q) = %v, torn %q, %v", line, recs, torn, rerr)
		}
		got := recs[0]
		if keyOrder(t, line)[1] != "action" || keyOrder(t, line)[2] != "pid" {
			t.Fatalf("keys of %q out of order", line)
		}
		ts, perr := time.Parse(time.RFC3339Nano, got["ts"].(string))
		if perr != nil || !ts.Equal(rec.TS) {
			t.Fatalf("ts %v (%v), want %v", got["ts"], perr, rec.TS)
		}
		if got["action"] != validUTF8(action) || got["pid"] != float64(pid) {
			t.Fatalf("action, pid = %q, %v; want %q, %d", got["action"], got["pid"], action, pid)
		}
		want := validUTF8(msg)
		if got["message"] != want || got[validUTF8(key)] != want || got["n"] != num || got["flag"] != flag {
			t.Fatalf("fields came back as %v from %q", got, line)
		}
		if l, ok := got["list"].([]any); !ok || len(l) != 2 || l[0] != want || l[1] != validUTF8(key) {
			t.Fatalf("list came back as %v", got["list"])
		}
	})
}
