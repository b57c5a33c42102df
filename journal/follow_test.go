package journal

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestTornLineError(t *testing.T) {
	err := &TornLineError{Path: "/j", Line: []byte("{\"ts\":\"x\x1b[2J" + strings.Repeat("a", 300))}
	msg := err.Error()
	if !strings.HasPrefix(msg, `journal /j: last line is incomplete (a writer was interrupted): {"ts":"x\x1b[2Jaaa`) {
		t.Errorf("message %q", msg)
	}
	if strings.ContainsRune(msg, 0x1b) || !strings.HasSuffix(msg, "…") {
		t.Errorf("message not made safe or not cut: %q", msg)
	}
}

func writeFile(t *testing.T, name, data string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t *testing.T, name, data string) {
	t.Helper()
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
}

func TestOpenHistory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "j.jsonl")
	names := func(files []*os.File) []string {
		var out []string
		for _, f := range files {
			out = append(out, filepath.Base(f.Name()))
			f.Close()
		}
		return out
	}

	files, err := OpenHistory(path)
	if err != nil || len(files) != 0 {
		t.Fatalf("no journal: OpenHistory = %v, %v; want nothing", names(files), err)
	}

	for _, n := range []string{"j.jsonl.1", "j.jsonl.2", "j.jsonl.10", "j.jsonl.01", "j.jsonl.bak", "j.jsonl.", "xj.jsonl.3", "j.jsonl.-1"} {
		writeFile(t, filepath.Join(dir, n), n+"\n")
	}
	files, err = OpenHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(files), []string{"j.jsonl.10", "j.jsonl.2", "j.jsonl.1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("without live file: %v, want %v", got, want)
	}

	writeFile(t, path, "live\n")
	files, err = OpenHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(files), []string{"j.jsonl.10", "j.jsonl.2", "j.jsonl.1", "j.jsonl"}; !reflect.DeepEqual(got, want) {
		t.Errorf("with live file: %v, want %v", got, want)
	}

	// A file reachable by two names (a hard link stands for a file seen
	// twice mid-rotation) is returned once.
	if err := os.Link(path, path+".3"); err != nil {
		t.Fatal(err)
	}
	files, err = OpenHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(files); len(got) != 4 {
		t.Errorf("hard-linked file returned twice: %v", got)
	}

	bad := filepath.Join(dir, "d")
	if err := os.Mkdir(bad, 0o700); err != nil {
		t.Fatal(err)
	}
	if files, err := OpenHistory(bad); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory: OpenHistory = %v, %v; want an error", names(files), err)
	}
}

// follower runs a Follower in the background and collects its lines.
type follower struct {
	t      *testing.T
	cancel context.CancelFunc
	done   chan error
	mu     sync.Mutex
	lines  []string
	warns  []error
}

func startFollow(t *testing.T, fl *Follower, run func(ctx context.Context, emit func([]byte) error) error) *follower {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	fw := &follower{t: t, cancel: cancel, done: make(chan error, 1)}
	if fl.Poll == 0 {
		fl.Poll = 5 * time.Millisecond
	}
	fl.Warn = func(err error) {
		fw.mu.Lock()
		defer fw.mu.Unlock()
		fw.warns = append(fw.warns, err)
	}
	go func() {
		fw.done <- run(ctx, func(line []byte) error {
			fw.mu.Lock()
			defer fw.mu.Unlock()
			fw.lines = append(fw.lines, string(line))
			return nil
		})
	}()
	t.Cleanup(func() { fw.stop() })
	return fw
}

// waitLines waits until n lines have been emitted and returns them.
func (fw *follower) waitLines(n int) []string {
	fw.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		fw.mu.Lock()
		got := append([]string(nil), fw.lines...)
		fw.mu.Unlock()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			shown := got
			if len(shown) > 20 {
				shown = shown[len(shown)-20:] // the last ones: where it stopped
			}
			fw.t.Fatalf("after 10s, %d lines, want %d; the last of them: %q", len(got), n, shown)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (fw *follower) snapshot() ([]string, []error) {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	return append([]string(nil), fw.lines...), append([]error(nil), fw.warns...)
}

// stop cancels the follower and checks that it returns nil promptly.
func (fw *follower) stop() {
	fw.t.Helper()
	if fw.cancel == nil {
		return
	}
	fw.cancel()
	fw.cancel = nil
	select {
	case err := <-fw.done:
		if err != nil {
			fw.t.Errorf("Follow returned %v after cancel, want nil", err)
		}
	case <-time.After(5 * time.Second):
		fw.t.Errorf("Follow did not return within 5s of cancel")
	}
}

func TestFollowAppend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	writeFile(t, path, "one\ntwo\n")
	fl := &Follower{Path: path}
	fw := startFollow(t, fl, func(ctx context.Context, emit func([]byte) error) error {
		return fl.Follow(ctx, int64(len("one\n")), emit)
	})
	fw.waitLines(1)
	appendFile(t, path, "three\n\nfour\n")
	got := fw.waitLines(4)
	fw.stop()
	if want := []string{"two", "three", "", "four"}; !reflect.DeepEqual(got, want) {
		t.Errorf("lines %q, want %q", got, want)
	}
}

func TestFollowJournalAppend(t *testing.T) {
	j, path := openTemp(t)
	fl := &Follower{Path: path}
	fw := startFollow(t, fl, func(ctx context.Context, emit func([]byte) error) error {
		return fl.Follow(ctx, 0, emit)
	})
	for i := range 5 {
		if err := j.Append(seqRecord(0, i)); err != nil {
			t.Fatal(err)
		}
	}
	got := fw.waitLines(5)
	for i, l := range got {
		r, ok := ParseLine([]byte(l))
		if !ok || r["seq"] != float64(i) {
			t.Errorf("line %d: %q, want seq %d", i, l, i)
		}
	}
}

func TestFollowPartialLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	writeFile(t, path, "")
	fl := &Follower{Path: path}
	fw := startFollow(t, fl, func(ctx context.Context, emit func([]byte) error) error {
		return fl.Follow(ctx, 0, emit)
	})
	line := `{"ts":"2026-12-02T13:43:31Z","action":"signal_denied","pid":1}`
	appendFile(t, path, line[:20])
	time.Sleep(50 * time.Millisecond) // ten polls
	if got, _ := fw.snapshot(); len(got) != 0 {
		t.Fatalf("half a line emitted: %q", got)
	}
	appendFile(t, path, line[20:]+"\n"+line[:5])
	time.Sleep(50 * time.Millisecond)
	appendFile(t, path, line[5:]+"\n")
	got := fw.waitLines(2)
	if want := []string{line, line}; !reflect.DeepEqual(got, want) {
		t.Errorf("lines %q, want %q", got, want)
	}
}

func TestFollowRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := Open(path, Options{MaxBytes: 600, Keep: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	fl := &Follower{Path: path}
	fw := startFollow(t, fl, func(ctx context.Context, emit func([]byte) error) error {
		return fl.Follow(ctx, 0, emit)
	})
	// One record at a time, each seen before the next is written: the
	// journal rotates every few records under the follower.
	const n = 20
	for i := range n {
		if err := j.Append(seqRecord(0, i)); err != nil {
			t.Fatal(err)
		}
		fw.waitLines(i + 1)
	}
	if _, err := os.Stat(path + ".2"); err != nil {
		t.Fatalf("the journal did not rotate twice: %v", err)
	}
	time.Sleep(20 * time.Millisecond)
	got, warns := fw.snapshot()
	checkSeqs(t, got, n)
	if len(warns) != 0 {
		t.Errorf("warnings: %v", warns)
	}
}

// checkSeqs checks that lines are seqRecords 0..n-1 of writer 0, in order,
// each once.
func checkSeqs(t *testing.T, lines []string, n int) {
	t.Helper()
	if len(lines) != n {
		t.Errorf("%d lines, want %d", len(lines), n)
	}
	for i, l := range lines {
		r, ok := ParseLine([]byte(l))
		if !ok || r["seq"] != float64(i) {
			t.Fatalf("line %d is %q, want seq %d", i, l, i)
		}
	}
}

// TestFollowCatchUp rotates the journal twice while the follower is not
// looking: it must read the file in between before the new live file.
func TestFollowCatchUp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	writeFile(t, path, "a1\na2\n")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(3, 0); err != nil { // "a1\n" consumed
		t.Fatal(err)
	}
	appendFile(t, path, "a3\npartial")
	rename := func(from, to string) {
		if err := os.Rename(from, to); err != nil {
			t.Fatal(err)
		}
	}
	rename(path, path+".1")
	writeFile(t, path, "b1\n")
	rename(path+".1", path+".2")
	rename(path, path+".1")
	writeFile(t, path, "c1\n")

	fl := &Follower{Path: path}
	fw := startFollow(t, fl, func(ctx context.Context, emit func([]byte) error) error {
		return fl.FollowFile(ctx, f, emit)
	})
	got := fw.waitLines(4)
	appendFile(t, path, "c2\n")
	got = fw.waitLines(5)
	fw.stop()
	if want := []string{"a2", "a3", "b1", "c1", "c2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("lines %q, want %q", got, want)
	}
	_, warns := fw.snapshot()
	var te *TornLineError
	if len(warns) != 1 || !errors.As(warns[0], &te) || te.Path != path+".2" || string(te.Line) != "partial" {
		t.Errorf("warnings %v, want the torn line of %s.2", warns, path)
	}
}

func TestFollowMissingFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "j.jsonl")
	fl := &Follower{Path: path}
	fw := startFollow(t, fl, func(ctx context.Context, emit func([]byte) error) error {
		return fl.Follow(ctx, 100, emit) // from is about a file that did not exist
	})
	time.Sleep(20 * time.Millisecond)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, "first\n")
	if got := fw.waitLines(1); got[0] != "first" {
		t.Errorf("lines %q, want first", got)
	}
}

func TestFollowRemovedAndRecreated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	writeFile(t, path, "old\n")
	fl := &Follower{Path: path}
	fw := startFollow(t, fl, func(ctx context.Context, emit func([]byte) error) error {
		return fl.Follow(ctx, 0, emit)
	})
	fw.waitLines(1)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	writeFile(t, path, "new\n")
	got := fw.waitLines(2)
	if want := []string{"old", "new"}; !reflect.DeepEqual(got, want) {
		t.Errorf("lines %q, want %q", got, want)
	}
}

// TestFollowDropsCutFragment mimics Append after a short write: the
// fragment is cut off again, and the next record must not be glued to it.
func TestFollowDropsCutFragment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	writeFile(t, path, "one\n")
	fl := &Follower{Path: path}
	fw := startFollow(t, fl, func(ctx context.Context, emit func([]byte) error) error {
		return fl.Follow(ctx, 0, emit)
	})
	fw.waitLines(1)
	appendFile(t, path, "frag")
	time.Sleep(30 * time.Millisecond) // the follower buffers "frag"
	if err := os.Truncate(path, 4); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond)
	appendFile(t, path, "two\n")
	got := fw.waitLines(2)
	if want := []string{"one", "two"}; !reflect.DeepEqual(got, want) {
		t.Errorf("lines %q, want %q", got, want)
	}
	if _, warns := fw.snapshot(); len(warns) != 0 {
		t.Errorf("warnings %v", warns)
	}
}

func TestFollowTruncated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	writeFile(t, path, "one\ntwo\n")
	fl := &Follower{Path: path}
	fw := startFollow(t, fl, func(ctx context.Context, emit func([]byte) error) error {
		return fl.Follow(ctx, 0, emit)
	})
	fw.waitLines(2)
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond)
	appendFile(t, path, "three\n")
	got := fw.waitLines(3)
	if want := []string{"one", "two", "three"}; !reflect.DeepEqual(got, want) {
		t.Errorf("lines %q, want %q", got, want)
	}
	if _, warns := fw.snapshot(); len(warns) != 1 || !strings.Contains(warns[0].Error(), "truncated") {
		t.Errorf("warnings %v, want one about truncation", warns)
	}
}

func TestFollowEmitError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	writeFile(t, path, "one\ntwo\n")
	stop := errors.New("stop here")
	var got []string
	err := (&Follower{Path: path}).Follow(context.Background(), 0, func(line []byte) error {
		got = append(got, string(line))
		return stop
	})
	if err != stop {
		t.Errorf("Follow = %v, want emit's error as it is", err)
	}
	if !reflect.DeepEqual(got, []string{"one"}) {
		t.Errorf("lines %q, want one", got)
	}
}

func TestFollowCancelWhileWaiting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "never.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := (&Follower{Path: path}).Follow(ctx, 0, func([]byte) error { return nil }); err != nil {
		t.Errorf("Follow = %v, want nil", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Follow took %v to notice cancellation", d)
	}
}

func TestFollowNotRegular(t *testing.T) {
	dir := t.TempDir()
	err := (&Follower{Path: dir}).Follow(context.Background(), 0, func([]byte) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("Follow(directory) = %v, want an error", err)
	}
}

// TestFollowConcurrentWriters follows a journal that several processes
// append to, rotating it every few dozen records: every record must come
// out exactly once, each writer's in order.
func TestFollowConcurrentWriters(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns writer processes")
	}
	path := filepath.Join(t.TempDir(), "j.jsonl")
	// Keep is large so that no file is rotated out of existence before
	// the follower gets to it.
	o := Options{MaxBytes: 4096, Keep: 1000}
	// The follower holds the first file before any writer starts: the
	// goroutine that runs it may start only after the writers have rotated
	// (on one CPU it did), and a Follow started then begins at the file the
	// path names by that time.
	writeFile(t, path, "")
	f, err := openRegular(path)
	if err != nil {
		t.Fatal(err)
	}
	fl := &Follower{Path: path, Poll: time.Millisecond}
	fw := startFollow(t, fl, func(ctx context.Context, emit func([]byte) error) error {
		return fl.FollowFile(ctx, f, emit)
	})
	const writers, count = 4, 300
	spawnWriters(t, path, writers, count, o)
	got := fw.waitLines(writers * count)
	time.Sleep(20 * time.Millisecond)
	got, warns := fw.snapshot()
	fw.stop()
	if len(warns) != 0 {
		t.Errorf("warnings: %v", warns)
	}
	if len(got) != writers*count {
		t.Errorf("%d lines, want %d", len(got), writers*count)
	}
	var recs []map[string]any
	for _, l := range got {
		r, ok := ParseLine([]byte(l))
		if !ok {
			t.Fatalf("line %q is not a record", l)
		}
		recs = append(recs, r)
	}
	for w, seqs := range seqsByWriter(t, recs) {
		for i, s := range seqs {
			if s != i {
				t.Fatalf("writer %d: record %d has seq %d: lost, repeated or reordered", w, i, s)
			}
		}
	}
	if _, err := os.Stat(path + ".5"); err != nil {
		t.Errorf("the journal rotated fewer than 5 times: %v", err)
	}
}

func TestExcerpt(t *testing.T) {
	if got := Excerpt([]byte("ab\ncd"), 4); got != `ab\…` {
		t.Errorf("Excerpt = %q", got)
	}
	if got := Excerpt(bytes.Repeat([]byte("x"), 3), 10); got != "xxx" {
		t.Errorf("Excerpt = %q", got)
	}
}

// TestFollowWaitsOutRotation: when the file the follower finished with
// is missing from a listing of the history, next looks again until two
// listings agree, instead of going on to the live file and skipping the
// rotated files between (lines lost with writers rotating fast). The views
// are what listings taken during rotations can show: A, then A and B,
// missing. And a follower that waited for the journal to appear starts at
// the first file that appeared, even when the journal rotated before it
// looked (the first file lost with writers filling it fast).
func TestFollowWaitsOutRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "j")
	stat := func(name, data string) histFile {
		writeFile(t, name, data)
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		return histFile{name, fi}
	}
	a, b, c := stat(path+".2", "a\n"), stat(path+".1", "b\n"), stat(path, "c\n")
	views := func(v ...[]histFile) func(string) ([]histFile, error) {
		calls := 0
		return func(string) ([]histFile, error) {
			h := v[min(calls, len(v)-1)]
			calls++
			return h, nil
		}
	}
	for _, tc := range []struct {
		name string
		snap func(string) ([]histFile, error)
		open func(fl *Follower) (*os.File, error)
		want string // the file opened
	}{
		{"next: missed while rotating", views([]histFile{c}, []histFile{b, c}, []histFile{b, c}, []histFile{a, b, c}, []histFile{a, b, c}),
			func(fl *Follower) (*os.File, error) { f, _, _, err := fl.next(a.fi); return f, err }, b.name},
		{"next: gone", views([]histFile{b, c}, []histFile{b, c}),
			func(fl *Follower) (*os.File, error) { f, _, _, err := fl.next(a.fi); return f, err }, c.name},
		// Nothing before the wait; then B and C, A missed by the first
		// listing.
		{"wait: rotated before the poll", views(nil, []histFile{b, c}, []histFile{a, b, c}, []histFile{a, b, c}, []histFile{a, b, c}),
			func(fl *Follower) (*os.File, error) { return fl.waitOpen(context.Background()) }, a.name},
		// A was there before the wait: B is the first new file.
		{"wait: older files kept", views([]histFile{a}, []histFile{a, b, c}, []histFile{a, b, c}),
			func(fl *Follower) (*os.File, error) { return fl.waitOpen(context.Background()) }, b.name},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fl := &Follower{Path: path, snap: tc.snap}
			f, err := tc.open(fl)
			if err != nil || f == nil {
				t.Fatalf("opened %v, %v", f, err)
			}
			defer f.Close()
			if f.Name() != tc.want {
				t.Errorf("opened %s, want %s", f.Name(), tc.want)
			}
		})
	}
}
