package test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/journal"
)

// TestJournalPlantedLinks: a root paddock whose journal directory an
// unprivileged agent can write to. In a root-owned sticky directory (as
// /tmp) the agent cannot swap paddock's journal.jsonl for a symlink to a
// root-owned file, and its refusal is journaled in an intact chain; a
// directory the agent owns is refused before the agent starts.
func TestJournalPlantedLinks(t *testing.T) {
	b := backend("seccomp")
	b.require(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root: a root paddock and an unprivileged agent (setpriv)")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skipf("needs setpriv: %v", err)
	}
	const agentUID = 65534
	tests := []struct {
		name    string
		dirMode os.FileMode
		dirUID  int
		want    []string // lines the agent prints
		refused string   // words of paddock's refusal at start; "" when it runs
	}{
		{"root-owned sticky directory (as /tmp)", os.ModeSticky | 0o777, 0,
			[]string{"swapped=no", "replaced=no", "kill=1"}, ""},
		{"directory owned by the agent's user", 0o755, agentUID,
			nil, "is owned by uid 65534, not root: that user could replace paddock's files in it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			// The agent must reach the shared directory: open the way.
			for _, d := range []string{filepath.Dir(base), base} {
				if err := os.Chmod(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			target := filepath.Join(base, "root-owned")
			const precious = "root's file\n"
			if err := os.WriteFile(target, []byte(precious), 0o644); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(base, "shared")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, tt.dirMode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(dir, tt.dirUID, tt.dirUID); err != nil {
				t.Fatal(err)
			}
			jpath := filepath.Join(dir, "journal.jsonl")
			f := startForeign(t, "sleep", "300")
			// The agent, as nobody, first tries to replace paddock's
			// journal with a symlink to the root-owned file, then does
			// something paddock refuses (and journals).
			script := `J='` + jpath + `' T='` + target + `'
ln -sf "$T" "$J" 2>/dev/null && echo swapped=yes || echo swapped=no
ln -s "$T" "$J.new" && mv -f "$J.new" "$J" 2>/dev/null && echo replaced=yes || echo replaced=no
kill -TERM ` + itoa(f.Pid()) + ` 2>/dev/null; echo kill=$?`
			r := b.runPaddock(t, "--journal", jpath, "--",
				"setpriv", "--reuid="+itoa(agentUID), "--regid="+itoa(agentUID), "--clear-groups", "sh", "-c", script)
			if got, _ := os.ReadFile(target); string(got) != precious {
				t.Errorf("the root-owned file changed: %q\n%s", got, r)
			}
			if tt.refused != "" {
				if r.code == 0 || !strings.Contains(r.stderr, tt.refused) || strings.Contains(r.stdout, "kill=") {
					t.Fatalf("want paddock to refuse the directory before the agent runs, saying %q\n%s", tt.refused, r)
				}
				return
			}
			lines := strings.Split(r.stdout, "\n")
			for _, w := range tt.want {
				if !contains(lines, w) {
					t.Errorf("agent output lacks %q\n%s", w, r)
				}
			}
			if fi, err := os.Lstat(jpath); err != nil || !fi.Mode().IsRegular() {
				t.Fatalf("%s is no longer paddock's regular file: %v %v\n%s", jpath, fi, err, r)
			}
			// The refusal is in the journal, in an intact chain.
			b, _ := os.ReadFile(jpath)
			r.journal = string(b)
			if rec := r.denial(t, f.Pid()); rec["rule"] != "not_owned" {
				t.Errorf("refusal record %v, want rule not_owned", rec)
			}
			v, err := journal.Verify(jpath, "")
			if err != nil || len(v.Breaks) > 0 || len(v.Warnings) > 0 {
				t.Errorf("Verify: %v, breaks %v, warnings %v", err, v.Breaks, v.Warnings)
			}
			if strings.Contains(r.stderr, "could not write the audit journal") {
				t.Errorf("paddock could not journal\n%s", r)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// TestJournalConcurrentSessionsVerify: eight paddock runs at once, each
// refused a kill, share one journal; their records form one chain, which
// `paddock journal --verify` finds intact, and whose head is the last head
// a session printed or later.
func TestJournalConcurrentSessionsVerify(t *testing.T) {
	b := backend("seccomp")
	b.require(t)
	f := startForeign(t, "sleep", "300")
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	const sessions = 8
	errs := make(chan error, sessions)
	for i := 0; i < sessions; i++ {
		go func() {
			cmd := exec.Command(bins.paddock, "run", "--journal", path, "--log-level", "error", "--",
				"bash", "-c", "for i in 1 2 3; do kill -TERM "+itoa(f.Pid())+" 2>/dev/null; done; true")
			out, err := cmd.CombinedOutput()
			if err != nil {
				err = fmt.Errorf("%v: %s", err, out)
			}
			errs <- err
		}()
	}
	for i := 0; i < sessions; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if !f.Alive(t) {
		t.Fatal("the foreign process was killed")
	}
	if n := strings.Count(readFile(path), `"action":"signal_denied"`); n != 3*sessions {
		t.Fatalf("%d refusal records, want %d", n, 3*sessions)
	}
	out, err := exec.Command(bins.paddock, "journal", "--verify", "--journal", path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "chain intact") {
		t.Fatalf("paddock journal --verify: %v\n%s", err, out)
	}
}

// TestJournalSessions: every record names its session, the start and
// summary lines print the same id, and `paddock journal --session ID`
// reads one session's records out of a journal two sessions share: its
// start record, its refusal and its end record.
func TestJournalSessions(t *testing.T) {
	b := backend("seccomp")
	b.require(t)
	f := startForeign(t, "sleep", "300")
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	ids := make([]string, 2)
	for i := range ids {
		out, err := exec.Command(bins.paddock, "run", "--journal", path, "--log-format", "json", "--",
			"bash", "-c", "kill -TERM "+itoa(f.Pid())+" 2>/dev/null; true").CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var started, summary string
		for _, line := range strings.Split(string(out), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) != nil {
				continue
			}
			id, _ := rec["session"].(string)
			msg, _ := rec["message"].(string)
			switch {
			case msg == "agent started":
				started = id
			case strings.HasPrefix(msg, "1 refusal ("):
				summary = id
			}
		}
		if started == "" || started != summary {
			t.Fatalf("session %d: start line names %q, summary %q\n%s", i, started, summary, out)
		}
		ids[i] = started
	}
	if ids[0] == ids[1] {
		t.Fatalf("two sessions share the id %q", ids[0])
	}
	for _, id := range ids {
		out, err := exec.Command(bins.paddock, "journal", "--journal", path, "--session", id, "--json").Output()
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		want := []string{"session_started", "signal_denied", "session_ended"}
		ok := len(lines) == len(want)
		for i := 0; ok && i < len(want); i++ {
			ok = strings.Contains(lines[i], `"session":"`+id+`"`) && strings.Contains(lines[i], `"action":"`+want[i]+`"`)
		}
		if !ok {
			t.Fatalf("paddock journal --session %s: want its start, its one refusal and its end, got:\n%s", id, out)
		}
	}
}
