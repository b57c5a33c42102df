package harness

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// opencode is the pinned opencode's native binary: the npm package's
// postinstall puts it at bin/opencode.exe (a link to the platform
// package's binary); there is no node launcher in front of it. Where npm
// did not run the postinstall (--ignore-scripts, or an npm that wants
// install scripts allowed first), bin/opencode.exe is a shell stub that
// fails, and the platform package's binary is taken instead.
func opencode(t *testing.T) string {
	t.Helper()
	dir := installed(t, "opencode-ai")
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	candidates := []string{
		filepath.Join(dir, "bin", "opencode.exe"),
		filepath.Join(filepath.Dir(dir), "opencode-linux-"+arch, "bin", "opencode"),
		filepath.Join(filepath.Dir(dir), "opencode-linux-"+arch+"-baseline", "bin", "opencode"),
	}
	for _, c := range candidates {
		if isELF(c) {
			return c
		}
	}
	t.Fatalf("no opencode binary among %q: the postinstall of opencode-ai did not run and no platform package is installed", candidates)
	return ""
}

// isELF reports whether path is an ELF executable (not a script or stub).
func isELF(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	magic := make([]byte, 4)
	_, err = io.ReadFull(f, magic)
	return err == nil && bytes.Equal(magic, []byte("\x7fELF"))
}

// opencodeEnv points opencode at srv through a provider of its own on the
// OpenAI-compatible SDK (bundled in opencode: nothing is downloaded for
// it), its bash tool allowed without asking, the models.dev fetch, the
// update check, sharing and LSP downloads off. opencode also npm-installs
// @opencode-ai/plugin into its config directory in the background, which
// nothing here needs: npm_config_offline keeps that off the network.
func opencodeEnv(t *testing.T, srv *modelServer) []string {
	t.Helper()
	config, err := json.Marshal(map[string]any{
		"$schema":    "https://opencode.ai/config.json",
		"autoupdate": false,
		"share":      "disabled",
		"model":      "scripted/scripted-model",
		"provider": map[string]any{"scripted": map[string]any{
			"npm":     "@ai-sdk/openai-compatible",
			"name":    "Scripted",
			"options": map[string]any{"baseURL": srv.url + "/v1", "apiKey": "sk-paddock-test"},
			"models":  map[string]any{"scripted-model": map[string]any{"name": "Scripted model"}},
		}},
		"permission": map[string]any{"bash": "allow", "edit": "allow"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return []string{
		"OPENCODE_CONFIG_CONTENT=" + string(config),
		"OPENCODE_DISABLE_MODELS_FETCH=1",
		"OPENCODE_DISABLE_AUTOUPDATE=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_SHARE=1",
		"npm_config_offline=true",
	}
}

// opencodeLaunchers are the ways the tests start opencode: its binary run
// directly, and behind a plain `sh -c` launcher that stays in front of it.
func opencodeLaunchers(bin string) map[string][]string {
	return map[string][]string{
		"native": {bin},
		"sh":     {"sh", "-c", `"$0" "$@"; exit $?`, bin},
	}
}

// opencodeRun is `opencode run` on prompt after the launcher's argv.
func opencodeRun(launcher []string, prompt string) []string {
	return append(append([]string(nil), launcher...), "run", prompt)
}

// opencodeKillRefused: a bash tool call that kills the foreign sleep
// is refused, and the model sees paddock's refusal word for word in the
// tool result; the conversation ends with the final text.
func opencodeKillRefused(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			u := newUser(t)
			bin := opencode(t)
			f := u.startForeign(t)
			srv := newModelServer(t, chatDialect{}, shell("kill -TERM "+itoa(f.Pid())), text("all done"))
			o := u.run(t, session{backend: b, argv: opencodeRun([]string{bin}, "kill the sleep"), env: opencodeEnv(t, srv)})
			res := srv.conversed(t, o)
			t.Logf("tool results: %q", res)
			saidAllDone(t, "opencode", o)
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

// opencodeLifeline: a bash tool call's `pkill -f opencode...` (which
// matches opencode, its launcher and paddock: ownPattern) and then one's
// `kill -9 $PPID` (opencode itself, which runs the command's shell) do not
// end the session: opencode gets each tool result back, sends it to the
// model and exits 0 with the final text, bare and behind `sh -c`. Both
// calls are in one conversation, which costs one start of opencode.
func opencodeLifeline(t *testing.T) {
	for _, b := range backends {
		for _, l := range []string{"native", "sh"} {
			t.Run(b+"/"+l, func(t *testing.T) {
				u := newUser(t)
				prompt := "stop opencode " + filepath.Base(u.dir)
				commands := []string{"pkill -f '" + u.ownPattern("opencode") + "'", "kill -9 $PPID"}
				launcher := opencodeLaunchers(opencode(t))[l]
				f := u.startForeign(t)
				srv := newModelServer(t, chatDialect{}, shell(commands[0]), shell(commands[1]), text("all done"))
				o := u.run(t, session{backend: b, argv: opencodeRun(launcher, prompt), env: opencodeEnv(t, srv)})
				res := srv.conversed(t, o)
				t.Logf("tool results: %q", res)
				if o.code != 0 || !strings.Contains(o.stdout, "all done") {
					t.Errorf("opencode did not finish its conversation with the final text after %q:\n%v\ntool results:\n%q", commands, o, res)
				}
				for i, command := range commands {
					if want := "paddock refused kill(SIG"; !strings.Contains(res[i], want) {
						t.Errorf("the tool result of %q lacks %q:\n%s", command, want, res[i])
					}
				}
				if l == "sh" {
					if want := regexp.MustCompile(`paddock refused kill\(SIGTERM\) of pid \d+ \(sh\)`); !want.MatchString(res[0]) {
						t.Errorf("the tool result of %q has no refusal of the sh launcher in front of opencode:\n%s", commands[0], res[0])
					}
				}
				requireAlive(t, f)
			})
		}
	}
}

// opencodeOneBackend is where the scenarios that do not depend on
// paddock's backend (the harness's own timeout, its TUI) run for opencode:
// the other harnesses run them on both, but opencode is the slowest to
// start (about 10 s of CPU a run, three times that beside two busy loops),
// and the package must stay within go test's time on a busy machine.
var opencodeOneBackend = []string{"seccomp"}

// opencodeTimeout: the bash tool's own timeout parameter ends its
// command under paddock (opencode signals the command it started, which
// paddock allows): the tool result says the command was stopped by the
// timeout, the conversation goes on, nothing is refused.
func opencodeTimeout(t *testing.T) {
	for _, b := range opencodeOneBackend {
		t.Run(b, func(t *testing.T) {
			u := newUser(t)
			bin := opencode(t)
			f := u.startForeign(t)
			srv := newModelServer(t, chatDialect{},
				turn{command: "echo started; sleep 300; echo not-reached", timeout: time.Second},
				text("all done"))
			o := u.run(t, session{backend: b, argv: opencodeRun([]string{bin}, "sleep"), env: opencodeEnv(t, srv)})
			res := srv.conversed(t, o)
			t.Logf("tool results: %q", res)
			saidAllDone(t, "opencode", o)
			if !strings.Contains(res[0], "started") || strings.Contains(res[0], "not-reached") || !strings.Contains(strings.ToLower(res[0]), "timeout") {
				t.Errorf("the tool result does not say the bash tool's timeout ended the command:\n%s", res[0])
			}
			if n := o.refusals(t); n != 0 {
				t.Errorf("paddock refused %d calls; opencode's timeout signals its own command:\n%s", n, o.journal)
			}
			requireAlive(t, f)
		})
	}
}

// opencodeTUI: opencode's TUI on a pty, the prompt given with
// --prompt: the refusal reaches the model, the TUI shows the final text,
// and while it runs nothing of paddock's own (a log line, a "paddock:"
// line) is written on the terminal; at exit, one summary line at most.
// Ctrl-C quits the TUI.
func opencodeTUI(t *testing.T) {
	for _, b := range opencodeOneBackend {
		t.Run(b, func(t *testing.T) {
			u := newUser(t)
			bin := opencode(t)
			f := u.startForeign(t)
			srv := newModelServer(t, chatDialect{}, shell("kill -TERM "+itoa(f.Pid())), text("scripted-final-text"))
			p := u.startOnPty(t, session{backend: b, argv: []string{bin, "--prompt", "kill the sleep"}, env: opencodeEnv(t, srv)}, 40, 120)
			res := srv.waitResults(t, 1)
			expectAnswering(p, `scripted-final-text`)
			during := p.output()
			p.send("\x03")
			if code := p.wait(); code != 0 {
				t.Errorf("the TUI exited %d after Ctrl-C:\n%s", code, plain(p.output()))
			}
			if want := refusal("SIGTERM", f.Pid()); !strings.Contains(res[0], want) {
				t.Errorf("the tool result lacks %q:\n%s", want, res[0])
			}
			if m := paddockLine.FindString(plain(during)); m != "" {
				t.Errorf("paddock wrote %q on the TUI's terminal while opencode ran:\n%s", m, plain(during))
			}
			after := strings.TrimPrefix(p.output(), during)
			if n := len(paddockLine.FindAllString(plain(after), -1)); n > 1 {
				t.Errorf("paddock wrote %d lines of its own on the terminal at exit, not one summary at most:\n%s", n, plain(after))
			}
			requireAlive(t, f)
		})
	}
}

// TestOpencode runs opencode's scenarios one after another, beside the other
// harnesses' (each harness is a parallel test of its own): the suite then
// takes a larger share of a busy machine's CPU and ends within go test's
// time for a package, and one harness's directories outside the test's
// own (removeMadeDir) are never removed under another of its runs.
func TestOpencode(t *testing.T) {
	t.Parallel()
	for _, sc := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"KillRefused", opencodeKillRefused},
		{"Lifeline", opencodeLifeline},
		{"Timeout", opencodeTimeout},
		{"TUI", opencodeTUI},
	} {
		t.Run(sc.name, sc.run)
	}
}
