package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// codexCLI is the pinned Codex CLI: the npm package's node entry point
// (bin/codex.js, which on Node older than 22.15 spawns the native binary
// as its child, and execs it on newer ones) and the native binary itself,
// from the platform package npm installs beside it.
type codexCLI struct {
	launcher string // bin/codex.js
	native   string // the native codex binary
}

func codex(t *testing.T) codexCLI {
	t.Helper()
	dir := installed(t, "@openai/codex")
	triple := map[string]string{"amd64": "x86_64-unknown-linux-musl", "arm64": "aarch64-unknown-linux-musl"}[runtime.GOARCH]
	platform := map[string]string{"amd64": "codex-linux-x64", "arm64": "codex-linux-arm64"}[runtime.GOARCH]
	if triple == "" {
		t.Skipf("Codex CLI has no Linux build for %s", runtime.GOARCH)
	}
	// Codex 0.171 keeps its daemons' sockets there, whatever TMPDIR says.
	removeMadeDir(t, "/tmp/codex-daemon-"+itoa(nobody))
	return codexCLI{
		launcher: filepath.Join(dir, "bin", "codex.js"),
		native:   filepath.Join(filepath.Dir(dir), platform, "vendor", triple, "bin", "codex"),
	}
}

// codexLaunchers are the ways a user starts Codex, each the argv before
// Codex's own arguments: the native binary run directly, the npm entry
// point under node (a launcher process in front on this machine's Node
// 20), and a plain `sh -c` launcher that stays in front of it.
func (c codexCLI) launchers() map[string][]string {
	return map[string][]string{
		"native": {c.native},
		"node":   {"node", c.launcher},
		"sh":     {"sh", "-c", `"$0" "$@"; exit $?`, c.native},
	}
}

// codexEnv writes the user's Codex config, pointing Codex at srv through
// a model provider of its own (Responses API, a dummy key from the
// environment, no retries), with the update check and analytics off and
// the work directory trusted (the TUI asks otherwise), and returns
// Codex's environment. CODEX_HOME is under HOME, not under TMPDIR: Codex
// refuses to put its sandbox helper under a temporary directory, and its
// sandboxed commands then fail (bwrap: execvp codex-linux-sandbox).
func codexEnv(t *testing.T, u *user, srv *modelServer) []string {
	t.Helper()
	u.writeFile(t, ".codex/config.toml", `model = "gpt-test"
model_provider = "scripted"
check_for_update_on_startup = false

[model_providers.scripted]
name = "scripted"
base_url = "`+srv.url+`/v1"
wire_api = "responses"
env_key = "SCRIPTED_API_KEY"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[projects."`+u.work+`"]
trust_level = "trusted"
`)
	return []string{"CODEX_HOME=" + filepath.Join(u.home, ".codex"), "SCRIPTED_API_KEY=sk-paddock-test"}
}

// codexExec is `codex exec` on prompt with the sandbox mode given
// ("danger-full-access": none; "read-only", its default, and
// "workspace-write" run each command in bubblewrap with a PID namespace
// of its own), after the launcher's argv.
func codexExec(launcher []string, sandbox, prompt string) []string {
	return append(append([]string(nil), launcher...), "exec", "--skip-git-repo-check", "--color", "never", "-s", sandbox, prompt)
}

// codexKillRefused: with Codex's sandbox off, a tool call that kills
// the foreign sleep is refused, and the model sees paddock's refusal word
// for word in the tool result; the conversation ends with the final text.
func codexKillRefused(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			u := newUser(t)
			c := codex(t)
			f := u.startForeign(t)
			srv := newModelServer(t, responsesDialect{}, shell("kill -TERM "+itoa(f.Pid())), text("all done"))
			o := u.run(t, session{backend: b, argv: codexExec([]string{c.native}, "danger-full-access", "kill the sleep"), env: codexEnv(t, u, srv)})
			res := srv.conversed(t, o)
			t.Logf("tool results: %q", res)
			saidAllDone(t, "Codex", o)
			if want := refusal("SIGTERM", f.Pid()); !strings.Contains(res[0], want) {
				t.Errorf("the tool result lacks %q:\n%s", want, res[0])
			}
			if !o.denied(t, f.Pid()) {
				t.Errorf("the journal has no refusal of pid %d:\n%s", f.Pid(), o.journal)
			}
			requireAlive(t, f)
		})
	}
}

// codexLifeline: a tool call's `pkill -f codex...` (which matches the
// harness, its launcher and paddock) and then one's `kill -9 $PPID` (the
// process that ran the command: Codex) do not end the session: the
// harness, however it was launched, gets each tool result back, sends it
// to the model and exits 0 with the final text. The pattern is the
// user's ownPattern: it matches this test's processes only. Both calls
// are in one conversation, which costs one start of the harness.
func codexLifeline(t *testing.T) {
	if out, err := exec.Command("node", "--version").Output(); err == nil {
		t.Logf("node %s: the npm entry point %s", strings.TrimSpace(string(out)),
			"spawns the native binary as its child before Node 22.15, and execs it from then on")
	}
	for _, b := range backends {
		for _, l := range []string{"native", "node", "sh"} {
			t.Run(b+"/"+l, func(t *testing.T) {
				u := newUser(t)
				prompt := "stop codex " + filepath.Base(u.dir)
				commands := []string{"pkill -f '" + u.ownPattern("codex") + "'", "kill -9 $PPID"}
				c := codex(t)
				launcher := c.launchers()[l]
				if l == "node" {
					if _, err := exec.LookPath("node"); err != nil {
						t.Skipf("needs node for Codex's npm entry point: %v", err)
					}
				}
				f := u.startForeign(t)
				srv := newModelServer(t, responsesDialect{}, shell(commands[0]), shell(commands[1]), text("all done"))
				o := u.run(t, session{backend: b, argv: codexExec(launcher, "danger-full-access", prompt), env: codexEnv(t, u, srv)})
				res := srv.conversed(t, o)
				t.Logf("tool results: %q", res)
				if o.code != 0 || !strings.Contains(o.stdout, "all done") {
					t.Errorf("Codex did not finish its conversation with the final text after %q:\n%v\ntool results:\n%q", commands, o, res)
				}
				for i, command := range commands {
					if want := "paddock refused kill(SIG"; !strings.Contains(res[i], want) {
						t.Errorf("the tool result of %q lacks %q:\n%s", command, want, res[i])
					}
				}
				if l != "native" {
					// The launcher is in front of Codex, and pkill's pattern matches it.
					if want := regexp.MustCompile(`paddock refused kill\(SIGTERM\) of pid \d+ \(` + launcher[0] + `\)`); !want.MatchString(res[0]) {
						t.Errorf("the tool result of %q has no refusal of the %s launcher in front of Codex:\n%s", commands[0], l, res[0])
					}
				}
				requireAlive(t, f)
			})
		}
	}
}

// pidNS matches the PID namespace a command printed with `readlink
// /proc/self/ns/pid`.
var pidNS = regexp.MustCompile(`pid:\[\d+\]`)

// codexSandbox: Codex's own sandbox on (`codex exec`'s default
// read-only mode, and workspace-write), which runs each command in
// bubblewrap with a PID namespace of its own: inside it, `sleep 300 &
// kill $!` works, and a kill of the foreign sleep's pid, which names
// nothing in that namespace, fails and leaves it alive.
func codexSandbox(t *testing.T) {
	for _, b := range backends {
		for _, mode := range []string{"read-only", "workspace-write"} {
			t.Run(b+"/"+mode, func(t *testing.T) {
				u := newUser(t)
				c := codex(t)
				f := u.startForeign(t)
				host, err := os.Readlink("/proc/self/ns/pid")
				if err != nil {
					t.Fatalf("read the test's PID namespace: %v", err)
				}
				srv := newModelServer(t, responsesDialect{},
					shell("readlink /proc/self/ns/pid; sleep 300 & kill $! && echo killed-own-child"),
					shell("kill -TERM "+itoa(f.Pid())),
					text("all done"))
				o := u.run(t, session{backend: b, argv: codexExec([]string{c.native}, mode, "kill a child"), env: codexEnv(t, u, srv)})
				res := srv.conversed(t, o)
				t.Logf("tool results: %q", res)
				saidAllDone(t, "Codex", o)
				if ns := pidNS.FindString(res[0]); ns == "" || ns == host {
					t.Errorf("the command did not run in a PID namespace of its own (the test's is %s):\n%s", host, res[0])
				}
				if !strings.Contains(res[0], "killed-own-child") || !strings.Contains(res[0], "exited with code 0") {
					t.Errorf("`sleep 300 & kill $!` did not work in Codex's sandbox:\n%s", res[0])
				}
				if strings.Contains(res[1], "exited with code 0") ||
					!(strings.Contains(res[1], "No such process") || strings.Contains(res[1], refusal("SIGTERM", f.Pid()))) {
					t.Errorf("the kill of the foreign pid %d from Codex's sandbox was neither refused nor ESRCH:\n%s", f.Pid(), res[1])
				}
				requireAlive(t, f)
			})
		}
	}
}

// codexTUI: Codex's TUI on a pty, the prompt given on its command
// line: the refusal reaches the model, the TUI shows the final text, and
// while it runs nothing of paddock's own (a log line, a "paddock:" line) is
// written on the terminal; at exit, one summary line at most. The TUI runs
// its commands in a `codex app-server` daemon it starts itself (a child of
// the TUI, in a session of its own): it is the app-server's command that is
// refused. One Ctrl-C, once the turn is over, quits the TUI.
func codexTUI(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			u := newUser(t)
			c := codex(t)
			f := u.startForeign(t)
			// The TUI draws words apart (cursor moves between them): a final text of one word.
			srv := newModelServer(t, responsesDialect{}, shell("kill -TERM "+itoa(f.Pid())), text("scripted-final-text"))
			codexHome := filepath.Join(u.home, ".codex")
			t.Cleanup(func() { endLeftovers(t, codexHome) })
			p := u.startOnPty(t, session{backend: b, argv: []string{c.native, "-s", "danger-full-access", "kill the sleep"}, env: codexEnv(t, u, srv)}, 40, 120)
			res := srv.waitResults(t, 1)
			expectAnswering(p, `scripted-final-text`)
			expectAnswering(p, `Worked for`) // the turn is over
			during := p.output()
			p.send("\x03")
			if code := p.wait(); code != 0 {
				t.Errorf("the TUI exited %d after Ctrl-C:\n%s", code, plain(p.output()))
			}
			if want := refusal("SIGTERM", f.Pid()); !strings.Contains(res[0], want) {
				t.Errorf("the tool result lacks %q:\n%s", want, res[0])
			}
			if m := paddockLine.FindString(plain(during)); m != "" {
				t.Errorf("paddock wrote %q on the TUI's terminal while Codex ran:\n%s", m, plain(during))
			}
			after := strings.TrimPrefix(p.output(), during)
			if n := len(paddockLine.FindAllString(plain(after), -1)); n > 1 {
				t.Errorf("paddock wrote %d lines of its own on the terminal at exit, not one summary at most:\n%s", n, plain(after))
			}
			t.Logf("the terminal after the TUI quit:\n%s", plain(after))
			// Bare, the TUI's app-server daemon outlives it (Codex says "Any
			// running work continues"); paddock ends it with the session
			// unless --keep-orphans (issue 33, item 5).
			if left := leftovers(t, codexHome); len(left) > 0 {
				t.Logf("the session left running (the test ends them): %v", left)
			}
			requireAlive(t, f)
		})
	}
}

// cursorQuery is a terminal's cursor position request (DSR 6), which
// Codex's TUI sends and waits on.
const cursorQuery = "\x1b[6n"

// expectAnswering waits, as onPty.expect does, until the terminal's text
// matches re, answering each cursor position request as a terminal
// emulator would (the cursor at the top left corner).
func expectAnswering(p *onPty, re string) {
	p.t.Helper()
	rx := regexp.MustCompile(re)
	safety := time.After(time.Minute)
	answered := 0
	for {
		out := p.output()
		for ; answered < strings.Count(out, cursorQuery); answered++ {
			p.send("\x1b[1;1R")
		}
		if rx.MatchString(plain(out)) {
			return
		}
		select {
		case <-p.more:
		case <-safety:
			p.t.Fatalf("the terminal never showed %q:\n%s", re, plain(p.output()))
		}
	}
}

// leftovers are the pids of the processes whose command line starts with
// dir: what this test's harness installed there and left running (Codex's
// TUI copies the app-server daemon it starts under CODEX_HOME).
func leftovers(t *testing.T, dir string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("list processes: %v", err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.HasPrefix(string(b), dir+"/") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// endLeftovers kills what this test's harness left running from dir
// (leftovers), so that no test's daemon outlives it.
func endLeftovers(t *testing.T, dir string) {
	t.Helper()
	for _, pid := range leftovers(t, dir) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// codexEndsItsCommand: Codex's shell tool has no timeout, but a command
// still running when its yield time is up stays a session of Codex's, and
// `codex exec` ends it when the turn is over: under paddock that kill of
// its own child is allowed, nothing is refused, and paddock finds nothing
// left to clean up at exit.
func codexEndsItsCommand(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			u := newUser(t)
			c := codex(t)
			srv := newModelServer(t, responsesDialect{},
				turn{command: "echo started; sleep 300; echo not-reached", timeout: 250 * time.Millisecond},
				text("all done"))
			o := u.run(t, session{backend: b, argv: codexExec([]string{c.native}, "danger-full-access", "sleep"), env: codexEnv(t, u, srv)})
			res := srv.conversed(t, o)
			t.Logf("tool results: %q\nstderr:\n%s", res, o.stderr)
			saidAllDone(t, "Codex", o)
			if !strings.Contains(res[0], "started") || !strings.Contains(res[0], "session ID") {
				t.Errorf("the command did not outlive its yield time as a session of Codex's:\n%s", res[0])
			}
			if n := o.refusals(t); n != 0 {
				t.Errorf("paddock refused %d calls; Codex ends its own command:\n%s", n, o.journal)
			}
			// paddock logs its cleanup only when the agent left something running.
			if strings.Contains(o.stderr, "cleaned up the processes the agent left running") {
				t.Errorf("Codex left its command running for paddock to end:\n%s", o.stderr)
			}
		})
	}
}

// TestCodex runs Codex CLI's scenarios one after another, beside the other
// harnesses' (each harness is a parallel test of its own): the suite then
// takes a larger share of a busy machine's CPU and ends within go test's
// time for a package, and one harness's directories outside the test's
// own (removeMadeDir) are never removed under another of its runs.
func TestCodex(t *testing.T) {
	t.Parallel()
	for _, sc := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"KillRefused", codexKillRefused},
		{"Lifeline", codexLifeline},
		{"Sandbox", codexSandbox},
		{"TUI", codexTUI},
		{"EndsItsCommand", codexEndsItsCommand},
	} {
		t.Run(sc.name, sc.run)
	}
}
