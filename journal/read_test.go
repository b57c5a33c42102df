package journal

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
)

// readers are the two callers of the torn-line rules (scanLines): Read,
// and ReadLines as a caller that reproduces records as stored sees them.
// Each gives the records, the corrupt lines' numbers and the torn line.
var readers = []struct {
	name string
	read func(io.Reader) (recs []map[string]any, corrupt []int, torn string, err error)
}{
	{"Read", func(r io.Reader) ([]map[string]any, []int, string, error) {
		recs, torn, err := Read(r)
		var ce *CorruptError
		if errors.As(err, &ce) {
			return recs, ce.Lines, torn, nil
		}
		return recs, nil, torn, err
	}},
	{"ReadLines", func(r io.Reader) ([]map[string]any, []int, string, error) {
		lines, torn, err := ReadLines(r)
		var recs []map[string]any
		var corrupt []int
		for _, l := range lines {
			if l.Rec == nil {
				corrupt = append(corrupt, l.No)
				continue
			}
			recs = append(recs, l.Rec)
		}
		return recs, corrupt, string(torn), err
	}},
}

func TestRead(t *testing.T) {
	const a = `{"ts":"2025-01-01T00:00:00Z","action":"a","pid":1}`
	const b = `{"ts":"2025-01-01T00:00:01Z","action":"b","pid":2,"target":3}`
	tests := []struct {
		name        string
		in          string
		wantActions []string
		wantTorn    string
		wantCorrupt []int
	}{
		{"empty", "", nil, "", nil},
		{"whole lines", a + "\n" + b + "\n", []string{"a", "b"}, "", nil},
		{"torn mid-record", a + "\n" + b[:20], []string{"a"}, b[:20], nil},
		{"last line parses but lacks newline", a + "\n" + b, []string{"a"}, b, nil},
		{"last line garbled with newline", a + "\n" + `{"ts":` + "\n", []string{"a"}, `{"ts":`, nil},
		{"last line not an object", a + "\n42\n", []string{"a"}, "42", nil},
		{"only a torn line", b[:10], nil, b[:10], nil},
		{"blank lines skipped", a + "\n\n" + b + "\n", []string{"a", "b"}, "", nil},
		{"corrupt middle line", a + "\nnot json\n" + b + "\n", []string{"a", "b"}, "", []int{2}},
		{"corrupt middle and torn last", "null\n" + a + "\n" + b[:5], []string{"a"}, b[:5], []int{1}},
		{"garbled line then torn", a + "\n{\n" + b[:5], []string{"a"}, b[:5], []int{2}},
		{"unterminated blanks are a blank line", a + "\n \t", []string{"a"}, "", nil},
		{"garbled last line before unterminated blanks", "00000\n ", nil, "00000", nil},
		{"garbled line before blank lines is not the last", a + "\nbad\n\n  \n", []string{"a"}, "", []int{2}},
		{"two garbled lines, the last torn", "bad1\nbad2\n", nil, "bad2", []int{1}},
	}
	for _, rd := range readers {
		for _, tt := range tests {
			t.Run(rd.name+"/"+tt.name, func(t *testing.T) {
				recs, corrupt, torn, err := rd.read(strings.NewReader(tt.in))
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				if !reflect.DeepEqual(corrupt, tt.wantCorrupt) {
					t.Errorf("corrupt lines = %v, want %v", corrupt, tt.wantCorrupt)
				}
				var actions []string
				for _, r := range recs {
					actions = append(actions, r["action"].(string))
				}
				if !reflect.DeepEqual(actions, tt.wantActions) {
					t.Errorf("actions = %q, want %q", actions, tt.wantActions)
				}
				if torn != tt.wantTorn {
					t.Errorf("torn = %q, want %q", torn, tt.wantTorn)
				}
			})
		}
	}
}

type failingReader struct{ data io.Reader }

func (f failingReader) Read(p []byte) (int, error) {
	n, err := f.data.Read(p)
	if err == io.EOF {
		return n, errors.New("disk on fire")
	}
	return n, err
}

// TestReadError: a failing reader's error comes back, with what was read
// before it, and no torn line (the end was never seen).
func TestReadError(t *testing.T) {
	for _, rd := range readers {
		t.Run(rd.name, func(t *testing.T) {
			recs, _, torn, err := rd.read(failingReader{strings.NewReader(`{"action":"a"}` + "\n" + `{"act`)})
			if err == nil || !strings.Contains(err.Error(), "disk on fire") {
				t.Fatalf("err = %v, want the reader's error", err)
			}
			if len(recs) != 1 || torn != "" {
				t.Errorf("got %d records and torn %q before the error, want 1 and none", len(recs), torn)
			}
		})
	}
}

func TestReadLinesAgreesWithRead(t *testing.T) {
	for _, in := range []string{
		"",
		"\n\n",
		`{"a":1}` + "\n",
		`{"a":1}` + "\n" + `{"b":2}`,
		`{"a":1}` + "\n" + `{"b":` + "\n",
		`{"a":1}` + "\n" + `nope` + "\n" + `{"b":2}` + "\n",
		`nope` + "\n" + `nope2` + "\n" + `{"b":2}` + "\n" + `{"c"`,
		`nope` + "\n" + `[1]` + "\n" + `null` + "\n",
		`{"a":1}` + "\n   \n" + `{"b": 2 }` + "\n",
		`{"a":1}` + "\n" + `bad` + "\n\n",
	} {
		t.Run(fmt.Sprintf("%q", in), func(t *testing.T) {
			recs, torn, rerr := Read(strings.NewReader(in))
			lines, ltorn, err := ReadLines(strings.NewReader(in))
			if err != nil {
				t.Fatal(err)
			}
			var got []map[string]any
			var bad []int
			for _, l := range lines {
				if l.Rec == nil {
					bad = append(bad, l.No)
					continue
				}
				got = append(got, l.Rec)
				if r, ok := ParseLine(l.Raw); !ok || !reflect.DeepEqual(r, l.Rec) {
					t.Errorf("line %d: Raw %q does not parse to Rec", l.No, l.Raw)
				}
			}
			if !reflect.DeepEqual(got, recs) {
				t.Errorf("records %v, Read says %v", got, recs)
			}
			if string(ltorn) != torn {
				t.Errorf("torn %q, Read says %q", ltorn, torn)
			}
			var ce *CorruptError
			var want []int
			if errors.As(rerr, &ce) {
				want = ce.Lines
			}
			if !reflect.DeepEqual(bad, want) {
				t.Errorf("corrupt lines %v, Read says %v", bad, want)
			}
		})
	}
}

func TestReadLinesKeepsRawBytes(t *testing.T) {
	in := "{ \"z\" : 1, \"a\":\"\\u00e9\" }\n{\"pid\":1e3}\n"
	lines, torn, err := ReadLines(strings.NewReader(in))
	if err != nil || torn != nil || len(lines) != 2 {
		t.Fatalf("ReadLines = %v, %q, %v", lines, torn, err)
	}
	if string(lines[0].Raw) != `{ "z" : 1, "a":"\u00e9" }` || string(lines[1].Raw) != `{"pid":1e3}` {
		t.Errorf("raw lines changed: %q %q", lines[0].Raw, lines[1].Raw)
	}
	if lines[1].No != 2 {
		t.Errorf("line number %d, want 2", lines[1].No)
	}
}
