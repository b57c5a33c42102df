package test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The journal against an agent of its own user (issue 34): paddock, the
// agent and the process the agent goes after all run as nobody, the journal
// in a directory of nobody's.

// TestJournalLockHeldByAgent: the agent takes the journal's lock, asks for
// the adoption of a process of its own user in the background, and tries
// to kill it for as long as the adoption waits. Every kill is refused (the
// lease is not live before its record is durable); past --journal-lock-wait
// the adoption is refused, naming the agent's shell as the lock's holder;
// the process lives. Then, with the lock held by another process of the
// user, a new paddock run does not hang at start: it stops, saying who holds
// the lock.
func TestJournalLockHeldByAgent(t *testing.T) {
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skipf("needs flock(1): %v", err)
	}
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			b.require(t)
			dir := nobodyDir(t)
			j := filepath.Join(dir, "j.jsonl")
			victim := nobodyStart(t, "sleep", "300")
			V := itoa(victim.Pid())
			// The adoption's client gets no copy of descriptor 9: the
			// shell alone holds the lock (a copy would be named too).
			script := `exec 9>>` + j + `; flock -x 9; echo "holder=$$"
"$PADDOCK_BIN" adopt ` + V + ` --reason "while the agent holds the journal's lock" 9>&- > ` + dir + `/adopt.out 2>&1 & a=$!
tries=0
while kill -0 $a 2>/dev/null; do
  if kill -TERM ` + V + ` 2>/dev/null; then echo killed; break; fi
  tries=$((tries+1))
  # A guard against a paddock that waits for ever: the lock goes.
  if [ $SECONDS -ge 60 ]; then echo gave-up; break; fi
done
exec 9>&-
wait $a; echo "adopt=$?"
[ $tries -gt 0 ] && echo tried`
			out, lines := b.nobodyRun(t, bins.paddock, dir, script, "--journal-lock-wait", "1s")
			holder := ""
			for _, l := range lines {
				if h, ok := strings.CutPrefix(l, "holder="); ok {
					holder = h
				}
			}
			if !victim.Alive(t) {
				t.Fatalf("the agent killed pid %s while its adoption waited for the journal's lock\n%s", V, out)
			}
			if slices.Contains(lines, "gave-up") {
				t.Fatalf("the adoption waited for the journal's lock for a minute and more\n%s", out)
			}
			wantLines(t, out, lines, "adopt=1", "tried")
			adopt := readFile(filepath.Join(dir, "adopt.out"))
			if holder == "" || !strings.Contains(adopt, "adoption of pid "+V+" refused") || !strings.Contains(adopt, `held by pid `+holder+` ("bash")`) {
				t.Errorf("the adoption's answer does not refuse it naming the agent's shell (pid %s) as the lock's holder:\n%s", holder, adopt)
			}
			for _, l := range strings.Split(readFile(j), "\n") {
				if strings.Contains(l, `"action":"adopted"`) {
					t.Errorf("a refused adoption was journaled: %s", l)
				}
			}

			// Another process of the user holds the lock: paddock run
			// stops at start, naming it, instead of hanging.
			holderProc := nobodyStart(t, "flock", "-x", j, "sleep", "300")
			waitFor(t, "flock(1) to hold the journal's lock", func() bool {
				return strings.Contains(lockLines(t, j), "FLOCK  ADVISORY  WRITE "+itoa(holderProc.Pid())+" ")
			})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
				bins.paddock, "run", "--backend", string(b), "--journal", j, "--journal-lock-wait", "1s", "--", "true")
			cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_STATE_HOME="+dir, "XDG_RUNTIME_DIR=")
			start, err := cmd.CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("paddock run hung at start while another process held the journal's lock\n%s", start)
			}
			if err == nil || !strings.Contains(string(start), "lock: held by pid "+itoa(holderProc.Pid())+` ("flock")`) {
				t.Fatalf("paddock run with the journal's lock held: %v, want it to stop naming flock (pid %d)\n%s", err, holderProc.Pid(), start)
			}
		})
	}
}

// lockLines returns the lines of /proc/locks about the file at path.
func lockLines(t *testing.T, path string) string {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	ino := ":" + strconv.FormatUint(fi.Sys().(*syscall.Stat_t).Ino, 10) + " "
	var out []string
	for _, l := range strings.Split(readFile("/proc/locks"), "\n") {
		if strings.Contains(l, ino) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestJournalRewrittenByAgent: the agent adopts a process of its own user,
// kills it, then removes its adopted record from the journal and
// recomputes every later prev, so that the chain is intact. paddock's next
// append finds the file no longer holds what it wrote last: it journals
// journal_rewritten, logs it, and says so in its summary line; the
// session_ended sums the session's records, so `paddock journal --verify`
// fails although the chain is intact.
func TestJournalRewrittenByAgent(t *testing.T) {
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skipf("needs %s (a Python nobody may run): %v", py, err)
	}
	b := backend("seccomp")
	b.require(t)
	dir := nobodyDir(t)
	j := filepath.Join(dir, "j.jsonl")
	victim := nobodyStart(t, "sleep", "300")
	V := itoa(victim.Pid())
	rechain := `import hashlib, json, sys
p = sys.argv[1]
out, prev = [], "0" * 64
for l in open(p, "rb").read().split(b"\n"):
    if not l.strip():
        continue
    r = json.loads(l)
    if r.get("action") == "adopted":
        continue
    l = l.replace(('"prev":"%s"' % r["prev"]).encode(), ('"prev":"%s"' % prev).encode(), 1)
    out.append(l + b"\n")
    prev = hashlib.sha256(l + b"\n").hexdigest()
open(p, "wb").write(b"".join(out))`
	prog := filepath.Join(dir, "rechain.py")
	if err := os.WriteFile(prog, []byte(rechain), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `"$PADDOCK_BIN" adopt ` + V + ` --reason "test subject" >/dev/null && echo adopted
kill -KILL ` + V + ` && echo killed
` + py + ` ` + prog + ` ` + j + ` && echo rewritten
grep -q '"action":"adopted"' ` + j + ` || echo gone`
	out, lines := b.nobodyRun(t, bins.paddock, dir, script, "--log-format", "json")
	wantLines(t, out, lines, "adopted", "killed", "rewritten", "gone")
	var summary map[string]any
	sawLog := false
	for _, l := range lines {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil {
			continue
		}
		if _, ok := m["status"]; ok {
			summary = m
		}
		if strings.HasPrefix(str(m["message"]), "the audit journal was rewritten during this session") {
			sawLog = true
		}
	}
	if summary == nil || summary["journal_rewrites"] != float64(1) || summary["level"] != "error" || !sawLog {
		t.Errorf("paddock did not log the rewrite (a line, and journal_rewrites=1 in its summary %v)\n%s", summary, out)
	}
	var rewritten, ended map[string]any
	for _, l := range strings.Split(readFile(j), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil {
			continue
		}
		switch m["action"] {
		case "journal_rewritten":
			rewritten = m
		case "session_ended":
			ended = m
		}
	}
	if rewritten == nil || !strings.Contains(str(rewritten["message"]), "no longer holds that record") {
		t.Errorf("the journal has no journal_rewritten record saying what was found: %v\n%s", rewritten, readFile(j))
	}
	if ended == nil || ended["journal_rewrites"] != float64(1) || ended["records_sha256"] == nil {
		t.Errorf("session_ended %v lacks journal_rewrites=1 and the session's sum", ended)
	}
	v, err := exec.Command(bins.paddock, "journal", "--verify", "--journal", j).CombinedOutput()
	if exitCode(err) != 1 || !strings.Contains(string(v), "TAMPERED: the records of 1 sessions differ from what their session_ended says") ||
		!strings.Contains(string(v), "TAMPERED: paddock found the journal rewritten 1 times while it ran") {
		t.Errorf("paddock journal --verify of the rewritten journal: exit %d, want 1 and the session named\n%s", exitCode(err), v)
	}
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
