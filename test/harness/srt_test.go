package harness

import (
	"os/exec"
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
			o = u.run(t, session{backend: b, argv: []string{"node", cli, "sh", "-c", sandboxKills(f)}})
			if o.code != 0 {
				t.Errorf("srt sh -c SCRIPT exited %d, not 0:\n%v", o.code, o)
			}
			checkSandboxKills(t, o.stdout, o, f)
		})
	}
}
