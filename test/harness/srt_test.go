package harness

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestSandboxRuntime: Anthropic's sandbox-runtime (srt, from npm) under
// paddock run --strict as nobody: `srt
// /bin/true` exits 0 with nothing refused (srt's own cleanup, which kills
// its children, included), and a command inside it kills its own child
// (`sleep 300 & kill $!`, in its PID namespace) while a kill of the
// foreign sleep, whose pid names nothing there, fails and leaves it alive.
func TestSandboxRuntime(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			u := newUser(t)
			cli := installed(t, "@anthropic-ai/sandbox-runtime") + "/dist/cli.js"
			for _, tool := range []string{"bwrap", "socat", "rg"} {
				if _, err := exec.LookPath(tool); err != nil {
					t.Skipf("needs %s, without which srt refuses to start (.ci/run installs it): %v", tool, err)
				}
			}
			f := u.startForeign(t)
			o := u.run(t, session{backend: b, flags: []string{"--strict"}, argv: []string{"node", cli, "/bin/true"}})
			if o.code != 0 || o.refusals(t) != 0 {
				t.Errorf("paddock run --strict -- srt /bin/true exited %d, %d refusals (want 0, 0):\n%v\n%s", o.code, o.refusals(t), o, o.journal)
			}
			script := "readlink /proc/self/ns/pid; sleep 300 & kill $!; echo own=$?; kill -TERM " + itoa(f.pid()) + "; echo foreign=$?"
			o = u.run(t, session{backend: b, argv: []string{"node", cli, "sh", "-c", script}})
			if o.code != 0 {
				t.Errorf("srt sh -c SCRIPT exited %d, not 0:\n%v", o.code, o)
			}
			host, err := os.Readlink("/proc/self/ns/pid")
			if err != nil {
				t.Fatal(err)
			}
			if ns := regexp.MustCompile(`pid:\[\d+\]`).FindString(o.stdout); ns == "" || ns == host {
				t.Fatalf("srt's command did not run in a PID namespace of its own (%q, the host's is %s):\n%v", ns, host, o)
			}
			for _, w := range []string{"\nown=0\n", "\nforeign=1\n"} {
				if !strings.Contains(o.stdout, w) {
					t.Errorf("srt's command did not print %q:\n%v", w, o)
				}
			}
			f.requireAlive(t)
		})
	}
}
