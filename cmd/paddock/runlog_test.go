package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Where paddock run logs: a file of the session's own in the state
// directory while stderr is a terminal, else stderr; --log-file FILE and
// --log-file - say otherwise; a state directory that cannot take the log
// falls back to stderr, saying why, and a --log-file that cannot be
// opened stops paddock.
func TestOpenRunLog(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	env := func(k string) string {
		if k == "XDG_STATE_HOME" {
			return state
		}
		return ""
	}
	const session = "0123456789ab"

	rl, err := openRunLog("", session, true, env, "/nonexistent-home")
	if err != nil || rl.file == nil || rl.fallback != nil {
		t.Fatalf("on a terminal: %+v, %v; want the session's file", rl, err)
	}
	want := filepath.Join(state, "paddock", "log", session+".log")
	if rl.path != want {
		t.Errorf("on a terminal the log is %s, want %s", rl.path, want)
	}
	if fi, err := os.Stat(filepath.Dir(want)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the log directory: %v, %v; want mode 0700", fi, err)
	}
	if fi, err := os.Stat(want); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the log file: %v, %v; want mode 0600", fi, err)
	}
	// Nothing written (paddock stopped before its first line): removed.
	rl.close()
	if _, err := os.Stat(want); !os.IsNotExist(err) {
		t.Errorf("an empty log of the session's own stays: %v", err)
	}

	// Without XDG_STATE_HOME: under HOME.
	home := filepath.Join(dir, "home")
	rl, err = openRunLog("", "ba9876543210", true, func(string) string { return "" }, home)
	if err != nil || rl.path != filepath.Join(home, ".local", "state", "paddock", "log", "ba9876543210.log") {
		t.Errorf("under HOME: %+v, %v", rl, err)
	}
	if rl.file != nil {
		rl.file.Close()
	}

	if rl, err := openRunLog("", session, false, env, home); err != nil || rl.file != nil || rl.fallback != nil {
		t.Errorf("without a terminal: %+v, %v; want stderr", rl, err)
	}
	if rl, err := openRunLog("-", session, true, env, home); err != nil || rl.file != nil || rl.fallback != nil {
		t.Errorf("--log-file - on a terminal: %+v, %v; want stderr", rl, err)
	}

	// --log-file FILE appends, terminal or not.
	named := filepath.Join(dir, "named.log")
	if err := os.WriteFile(named, []byte("before\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rl, err = openRunLog(named, session, false, env, home)
	if err != nil || rl.file == nil || rl.path != named {
		t.Fatalf("--log-file %s: %+v, %v", named, rl, err)
	}
	if _, err := rl.file.WriteString("after\n"); err != nil {
		t.Fatal(err)
	}
	rl.close()
	if b, _ := os.ReadFile(named); string(b) != "before\nafter\n" {
		t.Errorf("--log-file did not append: %q", b)
	}

	// A state directory that cannot be made (a file stands in its way,
	// which stops root too): stderr, and why.
	blocked := filepath.Join(dir, "blocked")
	if err := os.WriteFile(blocked, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	rl, err = openRunLog("", session, true, func(k string) string {
		if k == "XDG_STATE_HOME" {
			return blocked
		}
		return ""
	}, home)
	if err != nil || rl.file != nil || rl.fallback == nil || !strings.Contains(rl.fallback.Error(), blocked) {
		t.Errorf("an unusable state directory: %+v, %v; want stderr and the reason, naming the directory", rl, err)
	}
	if _, err := openRunLog(filepath.Join(blocked, "x.log"), session, true, env, home); err == nil || !strings.Contains(err.Error(), "--log-file "+blocked) {
		t.Errorf("--log-file that cannot be opened: %v; want an error naming it", err)
	}
	// A symbolic link is not followed.
	link := filepath.Join(dir, "link.log")
	if err := os.Symlink(named, link); err != nil {
		t.Fatal(err)
	}
	if _, err := openRunLog(link, session, true, env, home); err == nil {
		t.Errorf("--log-file followed a symbolic link")
	}
	// Nor a hard link to another file.
	hard := filepath.Join(dir, "hard.log")
	if err := os.Link(named, hard); err != nil {
		t.Fatal(err)
	}
	if _, err := openRunLog(hard, session, true, env, home); err == nil || !strings.Contains(err.Error(), "2 links") {
		t.Errorf("--log-file opened a file with two links: %v", err)
	}
}

// The log directory keeps the newest session logs; a log whose session
// still runs (locked) stays however old, and other files are not touched.
func TestPruneLogs(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	var names []string
	for i := range 6 {
		name := "00000000000" + strconv.Itoa(i) + ".log"
		names = append(names, name)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		mod := old.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(p, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	// The oldest is a running session's.
	running, err := openLogFile(filepath.Join(dir, names[0]), unix.O_APPEND)
	if err != nil {
		t.Fatal(err)
	}
	defer running.Close()
	other := filepath.Join(dir, "notes.log")
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	pruneLogs(dir, 3)
	for i, name := range names {
		_, err := os.Stat(filepath.Join(dir, name))
		kept := i == 0 || i >= 3
		if (err == nil) != kept {
			t.Errorf("%s: kept %v, want %v", name, err == nil, kept)
		}
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("a file that is no session log was removed: %v", err)
	}
}

// The closing line: the summary, the errors logged, the session and where
// its journal and log are, under HOME as ~/.
func TestClosingLine(t *testing.T) {
	got := closingLine("1 refusal (not_owned 1); paddock journal shows them", 2, "3f2a9c1b7d4e",
		"/home/u/.local/state/paddock/journal.jsonl", "/home/u/.local/state/paddock/log/3f2a9c1b7d4e.log", "/home/u")
	want := "paddock: 1 refusal (not_owned 1); paddock journal shows them; 2 errors in its log. Session 3f2a9c1b7d4e: " +
		"journal ~/.local/state/paddock/journal.jsonl, log ~/.local/state/paddock/log/3f2a9c1b7d4e.log"
	if got != want {
		t.Errorf("closing line\n%s\nwant\n%s", got, want)
	}
	got = closingLine("no refusals", 0, "3f2a9c1b7d4e", "", "/var/log/p.log", "/home/u")
	if want := "paddock: no refusals. Session 3f2a9c1b7d4e: journal none, log /var/log/p.log"; got != want {
		t.Errorf("closing line\n%s\nwant\n%s", got, want)
	}
	if got := tildePath("/home/u/a b/x.log", "/home/u"); got != "/home/u/a b/x.log" {
		t.Errorf("a path a shell would split is abbreviated: %s", got)
	}
}
