package harness

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// gemini is the Gemini API (POST /v1beta/models/MODEL:streamGenerateContent
// ?alt=sse, and :generateContent unstreamed), a candidate per data event:
// a functionCall part for a tool call, a text part for the final text.
// Its shell tool is Gemini CLI's run_shell_command.
type gemini struct{}

// geminiRequest is the part of a generateContent request the server reads.
type geminiRequest struct {
	Contents []struct {
		Role  string       `json:"role"`
		Parts []geminiPart `json:"parts"`
	} `json:"contents"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig struct {
		ResponseMimeType string `json:"responseMimeType"`
	} `json:"generationConfig"`
}

// geminiPart is a part of a content.
type geminiPart struct {
	Text             string `json:"text,omitempty"`
	FunctionResponse *struct {
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse,omitempty"`
}

// geminiShell is Gemini CLI's shell tool.
const geminiShell = "run_shell_command"

func parseGemini(body []byte) geminiRequest {
	var r geminiRequest
	_ = json.Unmarshal(body, &r)
	return r
}

func (gemini) conversation(body []byte) bool {
	for _, tool := range parseGemini(body).Tools {
		for _, f := range tool.FunctionDeclarations {
			if f.Name == geminiShell {
				return true
			}
		}
	}
	return false
}

func (gemini) results(body []byte) []string {
	var out []string
	for _, c := range parseGemini(body).Contents {
		for _, p := range c.Parts {
			if p.FunctionResponse == nil || p.FunctionResponse.Name != geminiShell {
				continue
			}
			// {"output": "..."} as Gemini CLI sends it; anything else as JSON.
			var resp struct {
				Output *string `json:"output"`
			}
			if json.Unmarshal(p.FunctionResponse.Response, &resp) == nil && resp.Output != nil {
				out = append(out, *resp.Output)
			} else {
				out = append(out, string(p.FunctionResponse.Response))
			}
		}
	}
	return out
}

func (gemini) answer(w http.ResponseWriter, r *http.Request, body []byte, i int, tr turn) {
	req := parseGemini(body)
	var part map[string]any
	switch {
	case tr.command != "":
		args := map[string]any{"command": tr.command, "description": "Run the command"}
		part = map[string]any{"functionCall": map[string]any{"name": geminiShell, "args": args, "id": "call_" + strconv.Itoa(i+1)}}
	case req.GenerationConfig.ResponseMimeType == "application/json":
		// A side request that wants JSON: the fields of each Gemini CLI
		// asks for (the model router's complexity, the next-speaker check's
		// "the user speaks next") in one object.
		part = map[string]any{"text": `{"complexity_reasoning": "a scripted turn", "complexity_score": 1,
  "reasoning": "the model has finished", "next_speaker": "user"}`}
	default:
		part = map[string]any{"text": tr.text}
	}
	resp := map[string]any{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": []any{part}},
			"finishReason": "STOP",
			"index":        0,
		}},
		"usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
		"modelVersion":  "gemini-2.5-pro",
	}
	if !strings.Contains(r.URL.Path, ":streamGenerateContent") {
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(r.URL.Path, ":countTokens") {
			_ = json.NewEncoder(w).Encode(map[string]any{"totalTokens": 10})
			return
		}
		_ = json.NewEncoder(w).Encode(resp)
		return
	}
	newSSE(w).event("", resp)
}

// geminiCLI is the pinned Gemini CLI's entry point (bundle/gemini.js, a
// node script that relaunches itself as a child node process).
func geminiCLI(t *testing.T) string {
	t.Helper()
	return installed(t, "@google/gemini-cli") + "/bundle/gemini.js"
}

// geminiSetUp writes Gemini CLI's settings (API-key auth, no telemetry,
// no update check; security and tools are JSON members the test adds to
// those two objects) and returns the environment that points it at srv.
func geminiSetUp(t *testing.T, u *user, srv *modelServer, security, tools string) []string {
	t.Helper()
	u.writeFile(t, ".gemini/settings.json", `{
  "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}`+security+`},
  "tools": {"shell": {"showColor": false`+tools+`}},
  "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false}
}`)
	return []string{
		"GOOGLE_GEMINI_BASE_URL=" + srv.url,
		"GEMINI_API_KEY=paddock-harness-test-key",
		"GEMINI_CLI_TRUST_WORKSPACE=true",
	}
}

// geminiPrint is Gemini CLI's non-interactive mode on prompt, every tool allowed.
func geminiPrint(cli, prompt string) []string {
	return []string{"node", cli, "-p", prompt, "--yolo"}
}

// geminiLaunchers are the ways Gemini CLI is started here: as it starts
// itself (gemini.js relaunches itself as a child node process, with a
// bigger heap, and waits for it), without its relaunch
// (GEMINI_CLI_NO_RELAUNCH), and behind a plain sh -c.
var geminiLaunchers = []struct {
	name  string
	env   []string
	wrap  func(argv []string) []string
	nodes int // the node processes of Gemini CLI
}{
	{"relaunch", nil, launchers[0].wrap, 2},
	{"no-relaunch", []string{"GEMINI_CLI_NO_RELAUNCH=true"}, launchers[0].wrap, 1},
	{"sh", nil, launchers[1].wrap, 2},
}

// geminiCLITools: under each launcher, a run_shell_command call that
// kills the foreign sleep is refused, and the model sees paddock's refusal
// word for word in the function response; the real `pkill -f gemini...`
// (its pattern matching Gemini CLI, its launchers and paddock of this
// session alone) and `kill -9
// $PPID` are refused too, and Gemini CLI finishes its conversation: it
// sends the function responses and exits 0 with the final text.
func geminiCLITools(t *testing.T) {
	for _, b := range backends {
		for _, l := range geminiLaunchers {
			t.Run(b+"/"+l.name, func(t *testing.T) {
				u := newUser(t)
				cli := geminiCLI(t)
				f := u.startForeign(t)
				srv := newModelServer(t, gemini{}, shell("kill -TERM "+itoa(f.Pid())),
					shell("env pkill -f '"+u.ownPattern("gemini")+"'; echo pkill=$?"), shell("kill -9 $PPID; echo kill=$?"), text("all done"))
				o := u.run(t, session{backend: b, argv: l.wrap(geminiPrint(cli, "kill the sleep, then yourself, "+u.tag())),
					env: append(geminiSetUp(t, u, srv, "", ""), l.env...)})
				res := srv.conversed(t, o)
				saidAllDone(t, "Gemini CLI", o)
				for i, want := range [][]string{
					{refusal("SIGTERM", f.Pid())},
					{"paddock refused kill(SIGTERM) of pid", "(node)", "the agent itself", "(paddock)", "pkill=1"},
					{"paddock refused kill(SIGKILL) of pid", "the agent itself", "kill=1"},
				} {
					for _, w := range want {
						if !strings.Contains(res[i], w) {
							t.Errorf("tool result %d lacks %q:\n%s", i+1, w, res[i])
						}
					}
				}
				// pkill tried each of Gemini CLI's node processes: all refused.
				if n := len(regexp.MustCompile(`paddock refused kill\(SIGTERM\) of pid \d+ \(node\)`).FindAllString(res[1], -1)); n != l.nodes {
					t.Errorf("pkill's tool result has %d refusals of a node process, Gemini CLI runs %d:\n%s", n, l.nodes, res[1])
				}
				requireAlive(t, f)
			})
		}
	}
}

// geminiCLISandbox: with Gemini CLI's own tool sandbox on
// (security.toolSandboxing: each command in bubblewrap, --unshare-all, a
// PID namespace of its own), a command inside it kills its own child
// (`sleep 300 & kill $!` exits 0), and a kill of the foreign sleep fails
// and leaves it alive.
func geminiCLISandbox(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			u := newUser(t)
			cli := geminiCLI(t)
			f := u.startForeign(t)
			srv := newModelServer(t, gemini{}, shell(sandboxKills(f)), text("all done"))
			o := u.run(t, session{backend: b, argv: geminiPrint(cli, "kill your sleep"),
				env: geminiSetUp(t, u, srv, `, "toolSandboxing": true`, "")})
			res := srv.conversed(t, o)
			saidAllDone(t, "Gemini CLI", o)
			checkSandboxKills(t, res[0], o, f)
		})
	}
}

// geminiCLITimeout: the shell tool's own inactivity timeout
// (tools.shell.inactivityTimeout, seconds without output) kills its
// command: the command ends (the model's next command waits for its pid
// to be gone, tail --pid: on a loaded machine the harness may reap it
// after it has answered), and paddock refused nothing.
func geminiCLITimeout(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			u := newUser(t)
			cli := geminiCLI(t)
			pidfile := filepath.Join(u.work, "command.pid")
			srv := newModelServer(t, gemini{}, shell("echo $$ > "+pidfile+"; exec tail -f /dev/null"),
				// Gemini CLI refuses $(...) in a command.
				shell("read pid < "+pidfile+"; tail --pid=$pid -s 0.1 -f /dev/null; kill -0 $pid; echo alive=$?"), text("all done"))
			o := u.run(t, session{backend: b, argv: geminiPrint(cli, "wait forever"),
				env: geminiSetUp(t, u, srv, "", `, "inactivityTimeout": 2`)})
			res := srv.conversed(t, o)
			saidAllDone(t, "Gemini CLI", o)
			if !strings.Contains(res[0], "cancelled because it exceeded the timeout") {
				t.Errorf("the tool result does not say the command timed out:\n%s", res[0])
			}
			if !strings.Contains(res[1], "No such process") || !strings.Contains(res[1], "alive=1") {
				t.Errorf("the timed-out command did not end:\n%s", res[1])
			}
			if n := o.refusals(t); n != 0 {
				t.Errorf("paddock refused %d calls of the harness's timeout:\n%s", n, o.journal)
			}
		})
	}
}

// geminiCLITUI: Gemini CLI's TUI on a pty, under paddock: while a
// run_shell_command kill of the foreign sleep is refused, and until Gemini
// CLI exits, the terminal shows no line of paddock's own; the refusal
// reaches the model.
func geminiCLITUI(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			u := newUser(t)
			cli := geminiCLI(t)
			f := u.startForeign(t)
			srv := newModelServer(t, gemini{}, shell("kill -TERM "+itoa(f.Pid())), text("finished-ok"))
			p := u.startOnPty(t, session{backend: b, env: geminiSetUp(t, u, srv, "", ""),
				argv: []string{"node", cli, "--prompt-interactive", "kill the sleep", "--yolo"}}, 40, 120)
			res := srv.waitResults(t, 1)
			p.expect("finished-ok")
			during := plain(p.output())
			if want := refusal("SIGTERM", f.Pid()); !strings.Contains(res[0], want) {
				t.Errorf("the tool result lacks %q:\n%s", want, res[0])
			}
			if m := paddockLine.FindString(during); m != "" {
				t.Errorf("while Gemini CLI ran, the terminal showed paddock's own output (%q):\n%s", m, during)
			}
			// Enter typed with the text would be part of a paste.
			p.send("/quit")
			p.expect(`\* /quit`)
			p.send("\r")
			if code := p.wait(); code != 0 {
				t.Errorf("Gemini CLI exited %d after /quit, not 0", code)
			}
			after := strings.TrimPrefix(plain(p.output()), during)
			if n := len(paddockLine.FindAllString(after, -1)); n != 1 || !strings.Contains(after, "paddock: 1 refusal") {
				t.Errorf("after Gemini CLI exited, the terminal showed %d lines of paddock's, not its one closing line:\n%s", n, after)
			}
			requireAlive(t, f)
		})
	}
}

// TestGeminiCLI runs Gemini CLI's scenarios one after another, beside the other
// harnesses' (each harness is a parallel test of its own): the suite then
// takes a larger share of a busy machine's CPU and ends within go test's
// time for a package, and one harness's directories outside the test's
// own (removeMadeDir) are never removed under another of its runs.
func TestGeminiCLI(t *testing.T) {
	t.Parallel()
	for _, sc := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"Tools", geminiCLITools},
		{"Sandbox", geminiCLISandbox},
		{"Timeout", geminiCLITimeout},
		{"TUI", geminiCLITUI},
	} {
		t.Run(sc.name, sc.run)
	}
}
