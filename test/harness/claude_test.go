package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// claudeCode is the pinned Claude Code: its native binary (the npm
// package's postinstall copies it over bin/claude.exe; no node launcher).
func claudeCode(t *testing.T) string {
	t.Helper()
	// Claude Code 2.1 makes it at every run, whatever TMPDIR says.
	removeMadeDir(t, "/tmp/cc-daemon-"+itoa(nobody))
	return filepath.Join(installed(t, "@anthropic-ai/claude-code"), "bin", "claude.exe")
}

// claudeKey is the dummy API key Claude Code is given.
const claudeKey = "sk-ant-api03-paddock-harness-test-key"

// claudeEnv points Claude Code at the server with a dummy key, every
// update check, telemetry and report off.
func claudeEnv(srv *modelServer) []string {
	return []string{
		"ANTHROPIC_BASE_URL=" + srv.url,
		"ANTHROPIC_API_KEY=" + claudeKey,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"DISABLE_BUG_COMMAND=1",
	}
}

// claudePrint is Claude Code's print mode on prompt, its Bash tool allowed.
func claudePrint(bin, prompt string) []string {
	return []string{bin, "-p", prompt, "--dangerously-skip-permissions"}
}

// claudeCodeKillRefused: a Bash tool call that kills the foreign sleep
// is refused, and the model sees paddock's refusal word for word in the
// tool result; the conversation ends with the final text.
func claudeCodeKillRefused(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			u := newUser(t)
			bin := claudeCode(t)
			f := u.startForeign(t)
			srv := newModelServer(t, anthropic{}, shell("kill -TERM "+itoa(f.Pid())), text("all done"))
			o := u.run(t, session{backend: b, argv: claudePrint(bin, "kill the sleep"), env: claudeEnv(srv)})
			res := srv.conversed(t, o)
			saidAllDone(t, "Claude Code", o)
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

// launchers are the ways a harness is started: bare, and behind a plain
// `sh -c` launcher that stays its parent (the session's lifelines are
// then paddock's child, the shell, and the harness).
var launchers = []struct {
	name string
	wrap func(argv []string) []string
}{
	{"bare", func(argv []string) []string { return argv }},
	{"sh", func(argv []string) []string {
		return append([]string{"sh", "-c", `"$0" "$@"; exit $?`}, argv...)
	}},
}

// claudeCodeSurvivesItsTools: a Bash tool call's `pkill -f claude...`
// (its pattern matching Claude Code, its launcher and paddock of this
// session alone) and `kill -9 $PPID` (Claude Code itself) leave Claude
// Code finishing its conversation: the server gets the request after the
// tool result, and Claude Code exits 0 with the final text.
func claudeCodeSurvivesItsTools(t *testing.T) {
	for _, b := range backends {
		for _, l := range launchers {
			for _, c := range []struct {
				name    string
				command func(u *user) string
				want    []string
			}{
				// env: Claude Code's shell has a pkill function of its own
				// that refuses a pattern matching Claude Code; the real
				// pkill is what a script or any other program runs.
				{"pkill", func(u *user) string { return "env pkill -f '" + u.ownPattern("claude") + "'; echo pkill=$?" },
					[]string{"paddock refused kill(SIGTERM) of pid", "(claude.exe)", "the agent itself", "(paddock)", "pkill=1"}},
				{"kill-parent", func(*user) string { return "kill -9 $PPID; echo kill=$?" },
					[]string{"paddock refused kill(SIGKILL) of pid", "(claude.exe)", "the agent itself", "kill=1"}},
			} {
				t.Run(b+"/"+l.name+"/"+c.name, func(t *testing.T) {
					u := newUser(t)
					bin := claudeCode(t)
					f := u.startForeign(t)
					srv := newModelServer(t, anthropic{}, shell(c.command(u)), text("all done"))
					o := u.run(t, session{backend: b, argv: l.wrap(claudePrint(bin, "end yourself, "+u.tag())), env: claudeEnv(srv)})
					res := srv.conversed(t, o)
					saidAllDone(t, "Claude Code", o)
					for _, w := range c.want {
						if !strings.Contains(res[0], w) {
							t.Errorf("the tool result lacks %q:\n%s", w, res[0])
						}
					}
					requireAlive(t, f)
				})
			}
		}
	}
}

// claudeCodeSandbox: with Claude Code's own sandbox on (bubblewrap,
// with a PID namespace of its own), a command inside it kills its own
// child (`sleep 300 & kill $!` exits 0), and a kill of the foreign sleep
// fails and leaves it alive.
func claudeCodeSandbox(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			u := newUser(t)
			bin := claudeCode(t)
			f := u.startForeign(t)
			u.writeFile(t, ".claude/settings.json", `{"sandbox": {"enabled": true, "autoAllowBashIfSandboxed": true}}`)
			srv := newModelServer(t, anthropic{}, shell(sandboxKills(f)), text("all done"))
			o := u.run(t, session{backend: b, argv: claudePrint(bin, "kill your sleep"), env: claudeEnv(srv)})
			res := srv.conversed(t, o)
			saidAllDone(t, "Claude Code", o)
			checkSandboxKills(t, res[0], o, f)
		})
	}
}

// claudeCodeTimeout: the Bash tool's own timeout kills its command:
// the tool result says so, the command ends (the model's next command
// waits for its pid to be gone, tail --pid: on a loaded machine the
// harness may reap it after it has answered), and paddock refused
// nothing. A command paddock kept from being killed would outlast the
// next command's own timeout. Claude Code moves a command
// that outlives its timeout to the background instead, and print mode
// then waits for it (10 minutes; bare too), unless background tasks are
// off (CLAUDE_CODE_DISABLE_BACKGROUND_TASKS=1), as here.
func claudeCodeTimeout(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			u := newUser(t)
			bin := claudeCode(t)
			pidfile := filepath.Join(u.work, "command.pid")
			// Claude Code refuses a sleep this long: tail stands in.
			long := shell("echo $$ > " + pidfile + "; exec tail -f /dev/null")
			long.timeout = 2 * time.Second
			srv := newModelServer(t, anthropic{}, long, shell("p=$(cat "+pidfile+"); tail --pid=$p -s 0.1 -f /dev/null; kill -0 $p; echo alive=$?"), text("all done"))
			o := u.run(t, session{backend: b, argv: claudePrint(bin, "wait forever"),
				env: append(claudeEnv(srv), "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS=1")})
			res := srv.conversed(t, o)
			saidAllDone(t, "Claude Code", o)
			if !strings.Contains(res[0], "timed out") {
				t.Errorf("the tool result does not say the command timed out:\n%s", res[0])
			}
			if !strings.Contains(res[1], "No such process") || !strings.HasSuffix(strings.TrimSpace(res[1]), "alive=1") {
				t.Errorf("the timed-out command did not end:\n%s", res[1])
			}
			if n := o.refusals(t); n != 0 {
				t.Errorf("paddock refused %d calls of the harness's timeout:\n%s", n, o.journal)
			}
		})
	}
}

// claudeTrusted is ~/.claude.json for an interactive Claude Code that
// starts at its prompt: onboarding done, the work directory trusted, the
// test's API key approved.
func claudeTrusted(u *user) string {
	key := claudeKey
	return fmt.Sprintf(`{"hasCompletedOnboarding": true, "theme": "dark", "autoUpdates": false,
  "projects": {%q: {"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true}},
  "customApiKeyResponses": {"approved": [%q], "rejected": []}}`, u.work, key[len(key)-20:])
}

// claudeCodeTUI: Claude Code's TUI on a pty, under paddock: while a
// Bash tool call's kill of the foreign sleep is refused, and until Claude
// Code exits, the terminal shows no line of paddock's own (no log line, no
// start line); the refusal reaches the model.
func claudeCodeTUI(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			u := newUser(t)
			bin := claudeCode(t)
			f := u.startForeign(t)
			u.writeFile(t, ".claude.json", claudeTrusted(u))
			// One word: the TUI draws spaces as cursor moves.
			srv := newModelServer(t, anthropic{}, shell("kill -TERM "+itoa(f.Pid())), text("finished-ok"))
			p := u.startOnPty(t, session{backend: b, env: claudeEnv(srv),
				argv: []string{bin, "kill the sleep", "--permission-mode", "default", "--allowedTools", "Bash"}}, 40, 120)
			res := srv.waitResults(t, 1)
			p.expect("finished-ok")
			during := plain(p.output())
			if want := refusal("SIGTERM", f.Pid()); !strings.Contains(res[0], want) {
				t.Errorf("the tool result lacks %q:\n%s", want, res[0])
			}
			if m := paddockLine.FindString(during); m != "" {
				t.Errorf("while Claude Code ran, the terminal showed paddock's own output (%q):\n%s", m, during)
			}
			p.send("/exit\r")
			if code := p.wait(); code != 0 {
				t.Errorf("Claude Code exited %d after /exit, not 0", code)
			}
			// At exit paddock writes one closing line.
			after := strings.TrimPrefix(plain(p.output()), during)
			if n := len(paddockLine.FindAllString(after, -1)); n != 1 || !strings.Contains(after, "paddock: 1 refusal") {
				t.Errorf("after Claude Code exited, the terminal showed %d lines of paddock's, not its one closing line:\n%s", n, after)
			}
			requireAlive(t, f)
		})
	}
}

// claudeCodeHook: `paddock check --hook claude-code` as Claude Code's
// PreToolUse hook under paddock run blocks a Bash call of `systemctl
// reboot` before it runs (a stand-in systemctl, first on PATH, records
// any run), with paddock's reason in the tool result, and lets `echo` run,
// and a pkill, which it allows only where the session's supervisor
// answers on the PADDOCK_SOCKET the hook inherited.
func claudeCodeHook(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			u := newUser(t)
			bin := claudeCode(t)
			stub := filepath.Join(u.dir, "bin")
			ran := filepath.Join(u.work, "systemctl-ran")
			if err := os.Mkdir(stub, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(stub, "systemctl"), []byte("#!/bin/sh\necho \"$@\" >> "+ran+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			u.writeFile(t, ".claude/settings.json", `{"hooks": {"PreToolUse": [{"matcher": "Bash",
  "hooks": [{"type": "command", "command": "\"${PADDOCK_BIN:-paddock}\" check --hook claude-code"}]}]}}`)
			// The hook lets a broad kill through only when the session's
			// supervisor answers on the PADDOCK_SOCKET it inherited.
			srv := newModelServer(t, anthropic{}, shell("systemctl reboot"), shell("echo hook-let-me-run"),
				shell("pkill -f 'paddock-harness-[n]o-such-process'; echo pkill=$?"), text("all done"))
			o := u.run(t, session{backend: b, argv: claudePrint(bin, "reboot"),
				env: append(claudeEnv(srv), "PATH="+stub+":/usr/local/bin:/usr/bin:/bin")})
			res := srv.conversed(t, o)
			saidAllDone(t, "Claude Code", o)
			// Claude Code's words for a call its hook blocked, then paddock's.
			if want := "PreToolUse:Bash hook error: "; !strings.HasPrefix(res[0], want) {
				t.Errorf("the tool result does not start with %q:\n%s", want, res[0])
			}
			if want := "paddock refused exec of `systemctl reboot`: power-control commands"; !strings.Contains(res[0], want) {
				t.Errorf("the tool result lacks %q:\n%s", want, res[0])
			}
			if !strings.Contains(res[1], "hook-let-me-run") {
				t.Errorf("the hook did not let echo run:\n%s", res[1])
			}
			if strings.TrimSpace(res[2]) != "pkill=1" {
				t.Errorf("the hook did not let a pkill run inside the session (pkill=1: nothing matched):\n%s", res[2])
			}
			if b, err := os.ReadFile(ran); err == nil {
				t.Errorf("the stand-in systemctl ran: %q", b)
			}
		})
	}
}

// TestClaudeCode runs Claude Code's scenarios one after another, beside the other
// harnesses' (each harness is a parallel test of its own): the suite then
// takes a larger share of a busy machine's CPU and ends within go test's
// time for a package, and one harness's directories outside the test's
// own (removeMadeDir) are never removed under another of its runs.
func TestClaudeCode(t *testing.T) {
	t.Parallel()
	for _, sc := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"KillRefused", claudeCodeKillRefused},
		{"SurvivesItsTools", claudeCodeSurvivesItsTools},
		{"Sandbox", claudeCodeSandbox},
		{"Timeout", claudeCodeTimeout},
		{"TUI", claudeCodeTUI},
		{"Hook", claudeCodeHook},
	} {
		t.Run(sc.name, sc.run)
	}
}
