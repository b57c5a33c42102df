package test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The GitHub Action (action.yml at the repository's root) run as GitHub
// runs a composite action's steps: each run: script, its ${{ }}
// expressions substituted, in a file run by bash --noprofile --norc -eo
// pipefail, with GITHUB_OUTPUT, GITHUB_STEP_SUMMARY (fresh for each step),
// GITHUB_PATH, GITHUB_ENV, RUNNER_TEMP and GITHUB_ACTION_PATH set, the
// outputs of earlier steps readable, PATH grown by GITHUB_PATH, and the
// steps after a failed one skipped. The job runs as an unprivileged user,
// as a runner's does, and installs paddock from a release built here by
// tools/release, through the action's download-url input.

// actionFile is the part of action.yml the runner below reads; strict
// decoding fails the test on any key it does not know (an if: it would
// ignore, say).
type actionFile struct {
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Author      string            `json:"author"`
	Branding    map[string]string `json:"branding"`
	Inputs      map[string]struct {
		Description string `json:"description"`
		Required    bool   `json:"required"`
		Default     string `json:"default"`
	} `json:"inputs"`
	Outputs map[string]struct {
		Description string `json:"description"`
		Value       string `json:"value"`
	} `json:"outputs"`
	Runs struct {
		Using string       `json:"using"`
		Steps []actionStep `json:"steps"`
	} `json:"runs"`
}

type actionStep struct {
	ID    string            `json:"id"`
	Name  string            `json:"name"`
	Shell string            `json:"shell"`
	Env   map[string]string `json:"env"`
	Run   string            `json:"run"`
}

// actionRunner runs the action's steps for one job.
type actionRunner struct {
	action    actionFile
	actionDir string // GITHUB_ACTION_PATH: a copy of action.yml and action/
	dir       string // the job's files, nobody's
}

// jobResult is what a job left: the failed step (if any) and its status,
// the step summaries, the action's outputs, the steps' output, and the
// workspace.
type jobResult struct {
	failed    string
	code      int
	summary   string
	outputs   map[string]string
	log       string
	workspace string
}

// exprRE is a ${{ expression }}.
var exprRE = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)

// job runs the action's steps with these inputs, as nobody.
func (r *actionRunner) job(t *testing.T, inputs map[string]string) jobResult {
	t.Helper()
	dir, err := os.MkdirTemp(r.dir, "job-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	workspace, temp := filepath.Join(dir, "workspace"), filepath.Join(dir, "runner-temp")
	pathFile, envFile := filepath.Join(dir, "github_path"), filepath.Join(dir, "github_env")
	nobodyOwns(t, workspace+"/", temp+"/", pathFile, envFile)
	for name := range inputs {
		if _, ok := r.action.Inputs[name]; !ok {
			t.Fatalf("action.yml has no input %q", name)
		}
	}
	stepOutputs := map[string]map[string]string{}
	eval := func(s string) string {
		return exprRE.ReplaceAllStringFunc(s, func(m string) string {
			expr := exprRE.FindStringSubmatch(m)[1]
			f := strings.Split(expr, ".")
			switch {
			case len(f) == 2 && f[0] == "inputs":
				in, ok := r.action.Inputs[f[1]]
				if !ok {
					t.Fatalf("action.yml uses ${{ %s }}, which it does not declare", expr)
				}
				if v, ok := inputs[f[1]]; ok {
					return v
				}
				if in.Required {
					t.Fatalf("the job does not give the required input %s", f[1])
				}
				return in.Default
			case len(f) == 4 && f[0] == "steps" && f[2] == "outputs":
				return stepOutputs[f[1]][f[3]]
			case expr == "github.action_path":
				return r.actionDir
			case expr == "runner.temp":
				return temp
			}
			t.Fatalf("action.yml uses ${{ %s }}, which this test's runner does not evaluate", expr)
			return ""
		})
	}
	res := jobResult{outputs: map[string]string{}, workspace: workspace}
	var log, summary strings.Builder
	for i, step := range r.action.Runs.Steps {
		if step.Shell != "bash" || step.Run == "" {
			t.Fatalf("step %d (%s): shell %q, run %q; this runner knows bash run: steps only", i, step.Name, step.Shell, step.Run)
		}
		script := filepath.Join(dir, fmt.Sprintf("step%d.sh", i))
		outFile, sumFile := filepath.Join(dir, fmt.Sprintf("output%d", i)), filepath.Join(dir, fmt.Sprintf("summary%d", i))
		if err := os.WriteFile(script, []byte(eval(step.Run)), 0o644); err != nil {
			t.Fatal(err)
		}
		nobodyOwns(t, outFile, sumFile)
		env := []string{
			"PATH=" + strings.Join(append(githubPath(pathFile), os.Getenv("PATH")), ":"),
			"HOME=" + dir, "XDG_CONFIG_HOME=" + dir, "XDG_STATE_HOME=" + dir, "XDG_RUNTIME_DIR=",
			"CI=true", "GITHUB_ACTIONS=true", "GITHUB_WORKSPACE=" + workspace, "RUNNER_TEMP=" + temp,
			"GITHUB_ACTION_PATH=" + r.actionDir, "GITHUB_OUTPUT=" + outFile, "GITHUB_STEP_SUMMARY=" + sumFile,
			"GITHUB_PATH=" + pathFile, "GITHUB_ENV=" + envFile,
		}
		env = append(env, keyValues(t, envFile)...)
		for k, v := range step.Env {
			env = append(env, k+"="+eval(v))
		}
		cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
			"bash", "--noprofile", "--norc", "-eo", "pipefail", script)
		cmd.Dir, cmd.Env = workspace, env
		out, err := cmd.CombinedOutput()
		fmt.Fprintf(&log, "--- step %s\n%s", step.Name, out)
		summary.WriteString(readFile(sumFile))
		if step.ID != "" {
			stepOutputs[step.ID] = map[string]string{}
			for _, kv := range keyValues(t, outFile) {
				k, v, _ := strings.Cut(kv, "=")
				stepOutputs[step.ID][k] = v
			}
		}
		if err != nil {
			res.failed, res.code = step.ID, exitCode(err)
			break
		}
	}
	for name, o := range r.action.Outputs {
		res.outputs[name] = eval(o.Value)
	}
	res.log, res.summary = log.String(), summary.String()
	return res
}

// githubPath is what the steps appended to GITHUB_PATH, newest first, as
// GitHub puts it before PATH.
func githubPath(file string) []string {
	lines := strings.Fields(readFile(file))
	slices.Reverse(lines)
	return lines
}

// keyValues reads a GITHUB_OUTPUT or GITHUB_ENV file: KEY=VALUE lines and
// KEY<<DELIMITER blocks, as KEY=VALUE.
func keyValues(t *testing.T, file string) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(strings.NewReader(readFile(file)))
	for sc.Scan() {
		line := sc.Text()
		if k, delim, ok := strings.Cut(line, "<<"); ok && !strings.Contains(k, "=") {
			var v []string
			for sc.Scan() && sc.Text() != delim {
				v = append(v, sc.Text())
			}
			out = append(out, k+"="+strings.Join(v, "\n"))
			continue
		}
		if !strings.Contains(line, "=") {
			t.Fatalf("%s: line %q is neither KEY=VALUE nor KEY<<DELIMITER", file, line)
		}
		out = append(out, line)
	}
	return out
}

// nobodyOwns creates each path, nobody's: a directory when the path ends
// in /, else an empty file.
func nobodyOwns(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		var err error
		if strings.HasSuffix(p, "/") {
			err = os.Mkdir(p, 0o755)
		} else {
			err = os.WriteFile(p, nil, 0o644)
		}
		if err == nil {
			err = os.Chown(p, 65534, 65534)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// newActionRunner reads action.yml, copies the action where nobody can
// read it, and builds a release of this tree for this machine with
// tools/release into DIR/releases/VERSION, laid out as GitHub's release
// downloads are.
func newActionRunner(t *testing.T, dir, version string) (*actionRunner, string) {
	t.Helper()
	b, err := os.ReadFile("../action.yml")
	if err != nil {
		t.Fatal(err)
	}
	r := &actionRunner{dir: dir, actionDir: filepath.Join(dir, "action-src")}
	if err := yaml.UnmarshalStrict(b, &r.action); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	if r.action.Runs.Using != "composite" {
		t.Fatalf("action.yml runs using %q, want composite", r.action.Runs.Using)
	}
	cp := exec.Command("cp", "-R", "../action.yml", "../action", r.actionDir)
	if err := os.Mkdir(r.actionDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := cp.CombinedOutput(); err != nil {
		t.Fatalf("copy the action: %v\n%s", err, out)
	}
	releases := filepath.Join(dir, "releases")
	build := exec.Command("go", "run", "./tools/release", "--version", version,
		"--out", filepath.Join(releases, version), "--arch", runtime.GOARCH)
	build.Dir = ".."
	build.Env = append(os.Environ(), "SOURCE_DATE_EPOCH=1764547200")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go run ./tools/release: %v\n%s", err, out)
	}
	return r, releases
}

// TestAction: a job whose command kills a process it did not start fails,
// the process survives, and the refusal is in the step summary and the
// JUnit report; a clean job passes; the step's status is the command's.
func TestAction(t *testing.T) {
	dir := nobodyDir(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skipf("needs curl, which the action downloads paddock with: %v", err)
	}
	const version = "v0.0.1-actiontest.1"
	r, releases := newActionRunner(t, dir, version)
	base := "file://" + releases
	with := func(command string, more ...string) map[string]string {
		in := map[string]string{"version": version, "download-url": base, "command": command}
		for i := 0; i+1 < len(more); i += 2 {
			in[more[i]] = more[i+1]
		}
		return in
	}
	// againstForeign runs a job whose command, commandf with the pid filled
	// in, aims at a sleep of the job's user started outside paddock, and
	// fails the test unless the sleep survives.
	againstForeign := func(t *testing.T, commandf string, more ...string) (jobResult, int) {
		t.Helper()
		foreign := nobodyStart(t, "sleep", "300")
		pid := foreign.Pid()
		res := r.job(t, with(fmt.Sprintf(commandf, pid), more...))
		if !foreign.Alive(t) {
			t.Fatalf("the foreign sleep %d did not survive the job\n%s", pid, res.log)
		}
		return res, pid
	}

	t.Run("kill of a foreign process fails the job", func(t *testing.T) {
		res, pid := againstForeign(t, "kill -TERM %d\ntouch went-on")
		if res.failed != "run" || res.code != 1 {
			t.Fatalf("the job failed at step %q with %d, want the run step with 1 (the command's kill failed)\n%s", res.failed, res.code, res.log)
		}
		if fileExists(filepath.Join(res.workspace, "went-on")) {
			t.Errorf("the command went on after its kill failed (bash -e)\n%s", res.log)
		}
		refusal := fmt.Sprintf("paddock refused kill(SIGTERM) of pid %d (sleep)", pid)
		for _, want := range []string{"### paddock: 1 refusal\n", "| 1 | not_owned | " + refusal} {
			if !strings.Contains(res.summary, want) {
				t.Errorf("the step summary lacks %q:\n%s", want, res.summary)
			}
		}
		report := readFile(filepath.Join(res.workspace, "paddock-report.xml"))
		if !strings.Contains(report, `<failure message="`+refusal) || !strings.Contains(report, `failures="1"`) {
			t.Errorf("paddock-report.xml lacks the refusal as a failed test case:\n%s", report)
		}
		if res.outputs["exit-code"] != "1" || res.outputs["refusals"] != "1" || res.outputs["report"] != "paddock-report.xml" {
			t.Errorf("outputs %v, want exit-code 1, refusals 1, report paddock-report.xml", res.outputs)
		}
		if !strings.Contains(res.log, "::error title=paddock refused (not_owned)::"+refusal) {
			t.Errorf("the log lacks the refusal's annotation\n%s", res.log)
		}
	})

	t.Run("clean job passes", func(t *testing.T) {
		res := r.job(t, with("echo built > out.txt\nsleep 0.1 &\nwait"))
		if res.failed != "" {
			t.Fatalf("step %q failed with %d\n%s", res.failed, res.code, res.log)
		}
		if got := readFile(filepath.Join(res.workspace, "out.txt")); got != "built\n" {
			t.Errorf("the command did not run in the workspace: out.txt holds %q", got)
		}
		if !strings.Contains(res.summary, "### paddock: no refusals\n") || strings.Contains(res.summary, "| 1 |") {
			t.Errorf("the step summary does not say no refusals:\n%s", res.summary)
		}
		report := readFile(filepath.Join(res.workspace, "paddock-report.xml"))
		if !strings.Contains(report, `<testcase name="no refusals"`) || !strings.Contains(report, `failures="0"`) {
			t.Errorf("paddock-report.xml is not a passing report:\n%s", report)
		}
		if res.outputs["exit-code"] != "0" || res.outputs["refusals"] != "0" {
			t.Errorf("outputs %v, want exit-code 0, refusals 0", res.outputs)
		}
		if !strings.HasSuffix(res.outputs["path"], "/paddock") || !strings.Contains(res.log, "paddock "+version+", ") {
			t.Errorf("the install step did not report paddock %s (path output %q)\n%s", version, res.outputs["path"], res.log)
		}
	})

	t.Run("the command's status is the step's", func(t *testing.T) {
		res := r.job(t, with("exit 3"))
		if res.failed != "run" || res.code != 3 || res.outputs["exit-code"] != "3" {
			t.Fatalf("step %q exited %d (outputs %v), want the run step with 3\n%s", res.failed, res.code, res.outputs, res.log)
		}
		if !strings.Contains(res.summary, "### paddock: no refusals\n") {
			t.Errorf("the step summary does not say no refusals:\n%s", res.summary)
		}
	})

	t.Run("strict fails a job whose command succeeded, json report", func(t *testing.T) {
		res, pid := againstForeign(t, "kill -HUP %d || true", "report-format", "json")
		if res.failed != "run" || res.code != 1 {
			t.Fatalf("the job failed at step %q with %d, want the run step with 1 (--strict)\n%s", res.failed, res.code, res.log)
		}
		refusal := fmt.Sprintf("paddock refused kill(SIGHUP) of pid %d (sleep)", pid)
		if !strings.Contains(res.summary, "| 1 | not_owned | "+refusal) {
			t.Errorf("the step summary lacks the refusal %q:\n%s", refusal, res.summary)
		}
		report := readFile(filepath.Join(res.workspace, "paddock-report.json"))
		if !strings.Contains(report, `"message": "`+refusal) || !strings.Contains(report, `"refusals": 1,`) {
			t.Errorf("paddock-report.json lacks the refusal:\n%s", report)
		}
	})

	t.Run("strict false passes, the refusal still summarised", func(t *testing.T) {
		res, _ := againstForeign(t, "kill -TERM %d || true", "strict", "false")
		if res.failed != "" {
			t.Fatalf("step %q failed with %d, want a passing job\n%s", res.failed, res.code, res.log)
		}
		if !strings.Contains(res.summary, "### paddock: 1 refusal\n") || res.outputs["refusals"] != "1" {
			t.Errorf("the refusal is not summarised (outputs %v):\n%s", res.outputs, res.summary)
		}
	})

	t.Run("a tarball that does not match SHA256SUMS is not installed", func(t *testing.T) {
		bad := filepath.Join(dir, "bad-releases")
		if out, err := exec.Command("cp", "-R", releases, bad).CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		sums := filepath.Join(bad, version, "SHA256SUMS")
		// Every hash's first digit changed: the files no longer match.
		b := regexp.MustCompile(`(?m)^.`).ReplaceAllStringFunc(readFile(sums), func(c string) string {
			return map[bool]string{true: "1", false: "0"}[c == "0"]
		})
		if err := os.WriteFile(sums, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
		in := with("true")
		in["download-url"] = "file://" + bad
		res := r.job(t, in)
		if res.failed != "install" || res.code != 1 || !strings.Contains(res.log, "checksum mismatch for paddock_") {
			t.Fatalf("step %q exited %d, want the install step to fail on the checksum\n%s", res.failed, res.code, res.log)
		}
		if res.outputs["path"] != "" {
			t.Errorf("the install step set path %q after a checksum mismatch", res.outputs["path"])
		}
	})

	t.Run("a line break in report or journal forges no output", func(t *testing.T) {
		for _, input := range []string{"report", "journal"} {
			res, _ := againstForeign(t, "kill -TERM %d", input, "paddock-"+input+"\nexit-code=0")
			if res.outputs["exit-code"] == "0" {
				t.Errorf("%s input with a line break: the exit-code output is 0 after a refused kill (outputs %v)\n%s", input, res.outputs, res.log)
			}
			if res.failed != "run" || res.code != 2 || !strings.Contains(res.log, input+` input "paddock-`+input+`\nexit-code=0": contains a line break`) {
				t.Errorf("%s input with a line break: step %q exited %d, want the run step to refuse it by name with 2\n%s", input, res.failed, res.code, res.log)
			}
		}
	})

	t.Run("an adoption fails a strict job and is summarised", func(t *testing.T) {
		// paddock adopt V; kill -9 V: V is the command's own once adopted,
		// so it dies, by design; what must not happen is a passing job
		// that says nothing of it.
		victim := nobodyStart(t, "sleep", "300")
		pid := victim.Pid()
		res := r.job(t, with(fmt.Sprintf("paddock adopt %d --reason test-subject\nkill -9 %d", pid, pid)))
		if res.failed != "run" || res.code != 1 {
			t.Fatalf("the job failed at step %q with %d, want the run step with 1 (--strict counts the adoption)\n%s", res.failed, res.code, res.log)
		}
		adopted := fmt.Sprintf("pid %d (sleep) adopted by ", pid)
		for _, want := range []string{"### paddock: no refusals, 1 adoption, 0 opt-ins honoured\n", "| 1 | adopted | " + adopted} {
			if !strings.Contains(res.summary, want) {
				t.Errorf("the step summary lacks %q:\n%s", want, res.summary)
			}
		}
		if res.outputs["adoptions"] != "1" || res.outputs["refusals"] != "0" || res.outputs["exit-code"] != "1" {
			t.Errorf("outputs %v, want adoptions 1, refusals 0, exit-code 1", res.outputs)
		}
		if !strings.Contains(res.log, "::error title=paddock allowed (adopted)::"+adopted) {
			t.Errorf("the log lacks the adoption's annotation\n%s", res.log)
		}
		report := readFile(filepath.Join(res.workspace, "paddock-report.xml"))
		if !strings.Contains(report, `type="adopted"`) || !strings.Contains(report, `failures="1"`) {
			t.Errorf("paddock-report.xml lacks the adoption as a failed test case:\n%s", report)
		}
	})

	t.Run("an adoption is summarised from a json report without strict", func(t *testing.T) {
		victim := nobodyStart(t, "sleep", "300")
		pid := victim.Pid()
		res := r.job(t, with(fmt.Sprintf("paddock adopt %d --reason test-subject\nkill -9 %d", pid, pid), "strict", "false", "report-format", "json"))
		if res.failed != "" {
			t.Fatalf("step %q failed with %d, want a passing job\n%s", res.failed, res.code, res.log)
		}
		if !strings.Contains(res.summary, "### paddock: no refusals, 1 adoption, 0 opt-ins honoured\n") ||
			!strings.Contains(res.summary, fmt.Sprintf("| 1 | adopted | pid %d (sleep) adopted by ", pid)) || res.outputs["adoptions"] != "1" {
			t.Errorf("the adoption is not summarised (outputs %v):\n%s", res.outputs, res.summary)
		}
	})

	t.Run("bad input is refused naming it", func(t *testing.T) {
		res := r.job(t, with("true", "strict", "yes"))
		if res.failed != "run" || res.code != 2 || !strings.Contains(res.log, `strict input "yes": want true or false`) {
			t.Fatalf("step %q exited %d, want the run step to refuse strict=yes with 2\n%s", res.failed, res.code, res.log)
		}
		res = r.job(t, with("true", "version", "latest"))
		if res.failed != "install" || !strings.Contains(res.log, `version input "latest": want a paddock release such as v0.1.0`) {
			t.Fatalf("step %q exited %d, want the install step to refuse version=latest\n%s", res.failed, res.code, res.log)
		}
		// An option where a URL belongs reaches no curl as an option.
		res = r.job(t, with("true", "download-url", "--config="+filepath.Join(dir, "curlrc")))
		if res.failed != "install" || !strings.Contains(res.log, `download-url input "--config=`) || !strings.Contains(res.log, "want an https:// or file:// URL") {
			t.Fatalf("step %q exited %d, want the install step to refuse an option as download-url\n%s", res.failed, res.code, res.log)
		}
	})
}
