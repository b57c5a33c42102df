package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The test binary doubles as a helper process: with JOURNAL_TEST_HELPER set,
// TestMain runs the helper instead of the tests. This is how the tests get
// several real OS processes writing one journal.
const (
	envHelper   = "JOURNAL_TEST_HELPER"
	envPath     = "JOURNAL_TEST_PATH"
	envWriter   = "JOURNAL_TEST_WRITER"
	envCount    = "JOURNAL_TEST_COUNT"
	envMaxBytes = "JOURNAL_TEST_MAXBYTES"
	envKeep     = "JOURNAL_TEST_KEEP"
	envLimit    = "JOURNAL_TEST_FSIZE"
)

func TestMain(m *testing.M) {
	switch os.Getenv(envHelper) {
	case "":
		os.Exit(m.Run())
	case "writer":
		os.Exit(helperWriter())
	case "fsize":
		os.Exit(helperFsize())
	default:
		fmt.Fprintf(os.Stderr, "unknown %s=%q\n", envHelper, os.Getenv(envHelper))
		os.Exit(2)
	}
}

func envInt(name string) int64 {
	v, err := strconv.ParseInt(os.Getenv(name), 10, 64)
	if err != nil {
		return 0
	}
	return v
}

// helperWriter appends JOURNAL_TEST_COUNT sequenced records as writer
// JOURNAL_TEST_WRITER.
func helperWriter() int {
	j, err := Open(os.Getenv(envPath), Options{MaxBytes: envInt(envMaxBytes), Keep: int(envInt(envKeep))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := writeSeq(j, int(envInt(envWriter)), int(envInt(envCount))); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := j.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// helperFsize appends under RLIMIT_FSIZE until a write comes up short, then
// prints how many records were appended and the error. (The Go runtime
// ignores SIGXFSZ, so the limit shows up as a short write, then EFBIG.)
func helperFsize() int {
	lim := uint64(envInt(envLimit))
	if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: lim, Max: lim}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	j, err := Open(os.Getenv(envPath), Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for i := 0; i < 1000; i++ {
		err := j.Append(fsizeRecord(i))
		if err != nil {
			fmt.Printf("%d\n%v\n", i, err)
			return 0
		}
	}
	fmt.Fprintln(os.Stderr, "no write failed under RLIMIT_FSIZE")
	return 1
}

func seqRecord(writer, seq int) Record {
	return Record{
		Action: "test",
		Pid:    os.Getpid(),
		Fields: map[string]any{
			"writer":  writer,
			"seq":     seq,
			"message": "refused kill(SIGKILL) of pid 4242: not owned by the agent; run `paddock adopt 4242` first",
		},
	}
}

// fsizeRecord returns records that all encode to the same length.
func fsizeRecord(i int) Record {
	return Record{
		TS:     time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC),
		Action: "fsize",
		Pid:    4242,
		Fields: map[string]any{"seq": i % 10},
	}
}

func writeSeq(j *Journal, writer, n int) error {
	for i := 0; i < n; i++ {
		if err := j.Append(seqRecord(writer, i)); err != nil {
			return err
		}
	}
	return nil
}

// spawnWriters runs n helper processes, each appending count records.
func spawnWriters(t *testing.T, path string, n, count int, o Options) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmds := make([]*exec.Cmd, n)
	outs := make([]*bytes.Buffer, n)
	for w := range n {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(),
			envHelper+"=writer",
			envPath+"="+path,
			envWriter+"="+strconv.Itoa(w),
			envCount+"="+strconv.Itoa(count),
			envMaxBytes+"="+strconv.FormatInt(o.MaxBytes, 10),
			envKeep+"="+strconv.Itoa(o.Keep),
		)
		outs[w] = new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = outs[w], outs[w]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[w] = cmd
	}
	for w, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("writer process %d: %v\n%s", w, err, outs[w])
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// runGoroutineWriters runs n goroutines, each with its own Journal (own fd).
func runGoroutineWriters(t *testing.T, path string, n, count int, o Options) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for w := range n {
		wg.Go(func() {
			j, err := Open(path, o)
			if err != nil {
				errs[w] = err
				return
			}
			defer j.Close()
			errs[w] = writeSeq(j, w, count)
		})
	}
	wg.Wait()
	for w, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", w, err)
		}
	}
}

func readFile(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, torn, err := Read(f)
	if err != nil {
		t.Fatalf("Read(%s): %v", path, err)
	}
	if torn != "" {
		t.Fatalf("Read(%s): torn line %q", path, torn)
	}
	return recs
}

// seqsByWriter collects each writer's sequence numbers in file order.
func seqsByWriter(t *testing.T, recs []map[string]any) map[int][]int {
	t.Helper()
	got := map[int][]int{}
	for i, r := range recs {
		if r["action"] == "journal_rewritten" {
			// Writers sharing a tiny journal (rotated every few
			// records, three kept) may see the file they last wrote
			// to rotated out with the ones after it between two of
			// their records: the head check says it cannot tell that
			// from a replaced journal. Anything else is a false alarm.
			if m, _ := r["message"].(string); !strings.Contains(m, "rotated out of the") {
				t.Errorf("record %d: a journal_rewritten where nothing was rewritten: %v", i, r)
			}
			continue
		}
		w, ok1 := r["writer"].(float64)
		s, ok2 := r["seq"].(float64)
		if !ok1 || !ok2 {
			t.Fatalf("record %d lacks writer/seq: %v", i, r)
		}
		got[int(w)] = append(got[int(w)], int(s))
	}
	return got
}

func TestRecordFormat(t *testing.T) {
	fixed := time.Date(2025, 3, 4, 7, 6, 7, 123456789, time.FixedZone("CET+2", 2*3600))
	tests := []struct {
		name       string
		rec        Record
		wantTS     string // "" means "now"
		wantFields map[string]any
		wantKeys   []string
		wantRaw    string // substring of the raw line
	}{
		{
			name:     "zero time means now, no fields",
			rec:      Record{Action: "start", Pid: 1},
			wantKeys: []string{"ts", "action", "pid"},
		},
		{
			name:     "explicit time in another zone is written in UTC with nanoseconds",
			rec:      Record{TS: fixed, Action: "deny", Pid: 42},
			wantTS:   "2025-03-04T05:06:07.123456789Z",
			wantKeys: []string{"ts", "action", "pid"},
		},
		{
			name: "fields round-trip and follow the fixed keys, sorted",
			rec: Record{TS: fixed, Action: "deny", Pid: 4242, Fields: map[string]any{
				"target":  7,
				"signal":  "SIGKILL",
				"syscall": "kill",
				"rule":    "not-owned",
				"message": "refused: run `paddock adopt 7` first\nthen retry <pid> & \"quote\" ünïcode",
				"nested":  map[string]any{"b": []any{1, "x", true, nil}, "a": 1.5},
				"ok":      false,
				"none":    nil,
			}},
			wantTS: "2025-03-04T05:06:07.123456789Z",
			wantFields: map[string]any{
				"target":  float64(7),
				"signal":  "SIGKILL",
				"syscall": "kill",
				"rule":    "not-owned",
				"message": "refused: run `paddock adopt 7` first\nthen retry <pid> & \"quote\" ünïcode",
				"nested":  map[string]any{"b": []any{float64(1), "x", true, nil}, "a": 1.5},
				"ok":      false,
				"none":    nil,
			},
			wantKeys: []string{"ts", "action", "pid", "message", "nested", "none", "ok", "rule", "signal", "syscall", "target"},
			wantRaw:  `retry <pid> & \"quote\"`,
		},
		{
			name:       "negative pid and empty-string key",
			rec:        Record{TS: fixed, Action: "x", Pid: -1, Fields: map[string]any{"": "empty"}},
			wantTS:     "2025-03-04T05:06:07.123456789Z",
			wantFields: map[string]any{"": "empty"},
			wantKeys:   []string{"ts", "action", "pid", ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, path := openTemp(t)
			before := time.Now()
			if err := j.Append(tt.rec); err != nil {
				t.Fatal(err)
			}
			after := time.Now()

			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Count(raw, []byte{'\n'}) != 1 || raw[len(raw)-1] != '\n' {
				t.Fatalf("want exactly one newline-terminated line, got %q", raw)
			}
			if tt.wantRaw != "" && !bytes.Contains(raw, []byte(tt.wantRaw)) {
				t.Errorf("raw line %s lacks %s", raw, tt.wantRaw)
			}
			// The journal adds "prev" last: a fresh journal's first
			// record links to genesis.
			wantKeys := append(slices.Clone(tt.wantKeys), "prev")
			if got := keyOrder(t, raw); !reflect.DeepEqual(got, wantKeys) {
				t.Errorf("key order = %q, want %q", got, wantKeys)
			}

			recs := readFile(t, path)
			if len(recs) != 1 {
				t.Fatalf("got %d records", len(recs))
			}
			rec := recs[0]
			ts, ok := rec["ts"].(string)
			if !ok {
				t.Fatalf("ts = %#v, want string", rec["ts"])
			}
			parsed, err := time.Parse(time.RFC3339Nano, ts)
			if err != nil {
				t.Fatalf("ts %q: %v", ts, err)
			}
			if !strings.HasSuffix(ts, "Z") || parsed.Location() != time.UTC {
				t.Errorf("ts %q is not UTC", ts)
			}
			if tt.wantTS != "" {
				if ts != tt.wantTS {
					t.Errorf("ts = %q, want %q", ts, tt.wantTS)
				}
			} else if parsed.Before(before.Truncate(time.Microsecond)) || parsed.After(after) {
				t.Errorf("ts %v not within [%v, %v]", parsed, before, after)
			}
			if rec["action"] != string(tt.rec.Action) {
				t.Errorf("action = %#v, want %q", rec["action"], tt.rec.Action)
			}
			if rec["pid"] != float64(tt.rec.Pid) {
				t.Errorf("pid = %#v, want %d", rec["pid"], tt.rec.Pid)
			}
			fields := map[string]any{}
			for k, v := range rec {
				if k != "ts" && k != "action" && k != "pid" && k != "prev" {
					fields[k] = v
				}
			}
			if rec["prev"] != genesis {
				t.Errorf("prev = %#v, want genesis", rec["prev"])
			}
			want := tt.wantFields
			if want == nil {
				want = map[string]any{}
			}
			if !reflect.DeepEqual(fields, want) {
				t.Errorf("fields = %#v\nwant %#v", fields, want)
			}
		})
	}
}

// keyOrder returns the top-level keys of one JSON object line, in order.
func keyOrder(t *testing.T, line []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("line %s does not start an object: %v %v", line, tok, err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func TestAppendRejects(t *testing.T) {
	tests := []struct {
		name    string
		rec     Record
		wantErr string
	}{
		{"ts in Fields", Record{Action: "a", Fields: map[string]any{"ts": "x"}}, `"ts"`},
		{"action in Fields", Record{Action: "a", Fields: map[string]any{"action": "x"}}, `"action"`},
		{"pid in Fields", Record{Action: "a", Fields: map[string]any{"pid": 3, "ok": 1}}, `"pid"`},
		{"empty action", Record{Pid: 1}, "empty action"},
		{"unencodable value", Record{Action: "a", Fields: map[string]any{"ch": make(chan int)}}, `"ch"`},
		{"NaN", Record{Action: "a", Fields: map[string]any{"ratio": math.NaN()}}, `"ratio"`},
		{"year past 9999", Record{Action: "a", TS: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, "RFC 3339"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, path := openTemp(t)
			err := j.Append(tt.rec)
			if err == nil {
				t.Fatal("Append succeeded, want error")
			}
			if !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), path) {
				t.Errorf("error %q should name %s and the path", err, tt.wantErr)
			}
			if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
				t.Errorf("rejected record left the file at %v bytes (err %v)", fi.Size(), err)
			}
		})
	}
}

const (
	concWriters = 8
	concRecords = 1000
)

func TestConcurrentWriters(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, path string, n, count int, o Options)
	}{
		{"goroutines each with own Journal", runGoroutineWriters},
		{"separate processes", spawnWriters},
		{"goroutines sharing one Journal", func(t *testing.T, path string, n, count int, o Options) {
			j, err := Open(path, o)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			var wg sync.WaitGroup
			errs := make([]error, n)
			for w := range n {
				wg.Go(func() { errs[w] = writeSeq(j, w, count) })
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "j.jsonl")
			tt.run(t, path, concWriters, concRecords, Options{})
			recs := readFile(t, path)
			if len(recs) != concWriters*concRecords {
				t.Fatalf("got %d records, want %d", len(recs), concWriters*concRecords)
			}
			got := seqsByWriter(t, recs)
			if len(got) != concWriters {
				t.Fatalf("got records from %d writers, want %d", len(got), concWriters)
			}
			for w, seqs := range got {
				for i, s := range seqs {
					if s != i {
						t.Fatalf("writer %d: record %d has seq %d (each writer's records must all be there, in order)", w, i, s)
					}
				}
			}
			for _, name := range []string{path + ".1"} {
				if _, err := os.Stat(name); err == nil {
					t.Errorf("%s exists: no rotation expected at the default MaxBytes", name)
				}
			}
			// Every writer linked its records under the lock: one chain.
			if v := verifyClean(t, path); v.Records != concWriters*concRecords || v.Anchor != "" {
				t.Errorf("Verify: %d records, anchor %q; want %d, none", v.Records, v.Anchor, concWriters*concRecords)
			}
		})
	}
}

func TestRotation(t *testing.T) {
	const maxBytes, keep = 4096, 3
	tests := []struct {
		name    string
		writers int
		count   int
		run     func(t *testing.T, path string, n, count int, o Options)
	}{
		{"one writer", 1, 600, runGoroutineWriters},
		{"goroutines each with own Journal", 4, 300, runGoroutineWriters},
		{"separate processes", 4, 300, spawnWriters},
		{"eight separate processes", concWriters, 150, spawnWriters},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "j.jsonl")
			o := Options{MaxBytes: maxBytes, Keep: keep}
			tt.run(t, path, tt.writers, tt.count, o)

			if _, err := os.Stat(fmt.Sprintf("%s.%d", path, keep+1)); err == nil {
				t.Errorf("%s.%d exists; Keep is %d", path, keep+1, keep)
			}
			// Oldest first: path.Keep .. path.1, path.
			var all []map[string]any
			sizes := make([]int, keep+1)
			startsRewritten := make([]bool, keep+1)
			maxLine := 0
			for i := keep; i >= 0; i-- {
				name := path
				if i > 0 {
					name = fmt.Sprintf("%s.%d", path, i)
				}
				raw, err := os.ReadFile(name)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				sizes[i] = len(raw)
				if len(raw) > maxBytes {
					t.Errorf("%s is %d bytes, over MaxBytes %d", name, len(raw), maxBytes)
				}
				if len(raw) == 0 || raw[len(raw)-1] != '\n' {
					t.Errorf("%s does not end with a whole line", name)
				}
				for _, l := range bytes.SplitAfter(raw, []byte{'\n'}) {
					if !bytes.Contains(l, []byte(`"action":"journal_rewritten"`)) {
						maxLine = max(maxLine, len(l))
					}
				}
				recs := readFile(t, name)
				startsRewritten[i] = len(recs) > 0 && recs[0]["action"] == "journal_rewritten"
				all = append(all, recs...)
			}
			// A file is rotated only when the next record would not fit
			// (or the next two: a journal_rewritten record and the one
			// it came before, seqsByWriter).
			for i := 1; i <= keep; i++ {
				if startsRewritten[i-1] {
					continue
				}
				if sizes[i]+maxLine <= maxBytes {
					t.Errorf("%s.%d rotated at %d bytes, though a %d-byte record still fit", path, i, sizes[i], maxLine)
				}
			}
			got := seqsByWriter(t, all)
			if len(got) == 0 {
				t.Fatal("no records kept")
			}
			// Only the oldest records are rotated out: each writer's
			// kept records are a gapless run ending with its last one.
			for w, seqs := range got {
				for i := 1; i < len(seqs); i++ {
					if seqs[i] != seqs[i-1]+1 {
						t.Fatalf("writer %d: seq %d follows %d: records lost or reordered", w, seqs[i], seqs[i-1])
					}
				}
				if last := seqs[len(seqs)-1]; last != tt.count-1 {
					t.Errorf("writer %d: last kept seq %d, want %d", w, last, tt.count-1)
				}
			}
			// One chain across the files, whose start was rotated out.
			if v := verifyClean(t, path); v.Anchor == "" || v.Records != len(all) {
				t.Errorf("Verify: %d records, anchor %q; want %d, and an anchor (the oldest files are gone)", v.Records, v.Anchor, len(all))
			}
		})
	}
}

func TestRotationOversizedRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := Open(path, Options{MaxBytes: 200, Keep: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	small := Record{Action: "small", Pid: 1}
	big := Record{Action: "big", Pid: 1, Fields: map[string]any{"message": strings.Repeat("x", 500)}}
	for _, r := range []Record{small, big, small} {
		if err := j.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	// The big record is written, alone, rather than dropped.
	for name, want := range map[string]string{path + ".2": "small", path + ".1": "big", path: "small"} {
		recs := readFile(t, name)
		if len(recs) != 1 || recs[0]["action"] != want {
			t.Errorf("%s holds %v, want one %q record", name, recs, want)
		}
	}
}

func TestAppendAfterRemoval(t *testing.T) {
	j, path := openTemp(t)
	if err := j.Append(Record{Action: "one"}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := j.Append(Record{Action: "two"}); err != nil {
		t.Fatal(err)
	}
	// The journal was removed under the writer: the record written after
	// it goes to a fresh file, after one saying so (head.go).
	recs := readFile(t, path)
	if len(recs) != 2 || recs[0]["action"] != "journal_rewritten" || recs[1]["action"] != "two" ||
		!strings.Contains(recs[0]["message"].(string), "removed or emptied") {
		t.Errorf("after removal the path holds %v, want journal_rewritten and the record written after it", recs)
	}
	if j.Rewrites() != 1 {
		t.Errorf("Rewrites() = %d, want 1", j.Rewrites())
	}
}

func TestShortWriteLeavesNoFragment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	line, err := encode(fsizeRecord(0))
	if err != nil {
		t.Fatal(err)
	}
	line = withPrev(line, genesis)     // every record links to one: same length
	limit := 5*len(line) + len(line)/2 // the 6th record is cut mid-line
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), envHelper+"=fsize", envPath+"="+path, envLimit+"="+strconv.Itoa(limit))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, stderr.Bytes())
	}
	n, msg, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if n != "5" {
		t.Errorf("appended %s records before failing, want 5", n)
	}
	if !strings.Contains(msg, "short write") || !strings.Contains(msg, path) {
		t.Errorf("error %q should report a short write and name the path", msg)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != 5*len(line) {
		t.Errorf("file is %d bytes, want %d: the partial record was not removed", len(raw), 5*len(line))
	}
	if recs := readFile(t, path); len(recs) != 5 {
		t.Errorf("got %d records, want 5", len(recs))
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "regular")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
	}{
		{"FIFO (would block)", fifo},
		{"parent is a regular file", filepath.Join(file, "j.jsonl")},
		{"grandparent is a regular file", filepath.Join(file, "sub", "j.jsonl")},
		{"directory under /proc", "/proc/self/paddock-journal-test/j.jsonl"},
		{"file in /proc", "/proc/self/paddock-journal-test.jsonl"},
		{"path is a directory", dir},
		{"not a regular file", "/dev/null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, err := Open(tt.path, Options{})
			if err == nil {
				j.Close()
				t.Fatalf("Open(%s) succeeded", tt.path)
			}
			if !strings.Contains(err.Error(), tt.path) {
				t.Errorf("error %q does not name %s", err, tt.path)
			}
		})
	}
	if _, err := Open("", Options{}); err == nil {
		t.Error("Open(\"\") succeeded")
	}
}

func TestOpenModes(t *testing.T) {
	old := unix.Umask(0o022)
	defer unix.Umask(old)
	dir := filepath.Join(t.TempDir(), "state", "paddock")
	path := filepath.Join(dir, "journal.jsonl")
	j, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if j.Path() != path {
		t.Errorf("Path() = %q, want %q", j.Path(), path)
	}
	for name, want := range map[string]os.FileMode{
		dir:               os.ModeDir | 0o700,
		filepath.Dir(dir): os.ModeDir | 0o700,
		path:              0o600,
	} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s mode = %v, want %v", name, fi.Mode(), want)
		}
	}
	// The descriptor is append-only and close-on-exec (read-write: Append reads the last record to link to it).
	fl, err := unix.FcntlInt(uintptr(j.fd), unix.F_GETFL, 0)
	if err != nil {
		t.Fatal(err)
	}
	if fl&unix.O_ACCMODE != unix.O_RDWR || fl&unix.O_APPEND == 0 {
		t.Errorf("file flags %#o, want O_RDWR|O_APPEND (read: the last record, to link to)", fl)
	}
	fdfl, err := unix.FcntlInt(uintptr(j.fd), unix.F_GETFD, 0)
	if err != nil {
		t.Fatal(err)
	}
	if fdfl&unix.FD_CLOEXEC == 0 {
		t.Error("journal fd is not close-on-exec")
	}
}

func TestSyncAndClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	for _, o := range []Options{{}, {Sync: true}} {
		j, err := Open(path, o)
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Append(Record{Action: "adopt", Pid: 9}); err != nil {
			t.Fatal(err)
		}
		if err := j.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		if err := j.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		if err := j.Append(Record{Action: "late"}); !errors.Is(err, os.ErrClosed) {
			t.Errorf("Append after Close = %v, want os.ErrClosed", err)
		}
		if err := j.Sync(); !errors.Is(err, os.ErrClosed) {
			t.Errorf("Sync after Close = %v, want os.ErrClosed", err)
		}
	}
	if recs := readFile(t, path); len(recs) != 2 {
		t.Errorf("got %d records, want 2 (reopening must append, not truncate)", len(recs))
	}
}

func TestDefaultPath(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	tests := []struct {
		name    string
		flag    string
		getenv  func(string) string
		home    string
		want    string
		wantErr bool
	}{
		{"flag wins", "/f/j", env("PADDOCK_JOURNAL", "/e/j", "XDG_STATE_HOME", "/x"), "/home/u", "/f/j", false},
		{"relative flag kept as given", "j.jsonl", env("PADDOCK_JOURNAL", "/e/j"), "/home/u", "j.jsonl", false},
		{"PADDOCK_JOURNAL next", "", env("PADDOCK_JOURNAL", "/e/j", "XDG_STATE_HOME", "/x"), "/home/u", "/e/j", false},
		{"XDG_STATE_HOME next", "", env("XDG_STATE_HOME", "/x"), "/home/u", "/x/paddock/journal.jsonl", false},
		{"empty PADDOCK_JOURNAL ignored", "", env("PADDOCK_JOURNAL", "", "XDG_STATE_HOME", "/x"), "/home/u", "/x/paddock/journal.jsonl", false},
		{"relative XDG_STATE_HOME ignored", "", env("XDG_STATE_HOME", "state"), "/home/u", "/home/u/.local/state/paddock/journal.jsonl", false},
		{"home last", "", env(), "/home/u", "/home/u/.local/state/paddock/journal.jsonl", false},
		{"nil getenv", "", nil, "/root", "/root/.local/state/paddock/journal.jsonl", false},
		{"nothing set", "", env(), "", "", true},
		{"relative home", "", env(), "home", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DefaultPath(tt.flag, tt.getenv, tt.home)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func BenchmarkAppend(b *testing.B) {
	rec := seqRecord(1, 1)
	for _, bc := range []struct {
		name     string
		o        Options
		parallel bool
	}{
		{"nosync", Options{}, false},
		{"sync", Options{Sync: true}, false},
		{"nosync-parallel", Options{}, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			j, err := Open(filepath.Join(b.TempDir(), "j.jsonl"), bc.o)
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			if bc.parallel {
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := j.Append(rec); err != nil {
							b.Error(err)
							return
						}
					}
				})
				return
			}
			for b.Loop() {
				if err := j.Append(rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// openTemp opens a journal with default options in a fresh temporary
// directory, closed when the test ends.
func openTemp(t *testing.T) (*Journal, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j, path
}
