package test

import (
	"strings"
	"testing"
)

// signalsThroughDescriptors: the signal paths that go through a file
// descriptor instead of a signal syscall. Making a foreign process the owner
// of a descriptor (F_SETOWN, F_SETOWN_EX, FIOSETOWN) would have the kernel
// send it a signal of the agent's choosing (F_SETSIG, here SIGKILL) on the
// next I/O; each is refused with EPERM and the foreign process lives.
// Owning one's own child still works. TIOCSTI (typing into a terminal) is
// refused; TIOCSIG on a pty whose foreground group is the agent's own works.
func signalsThroughDescriptors(t *testing.T, b backend) {
	b.require(t)
	f := startForeign(t, "sleep", "300")
	F := itoa(f.pid())
	r := b.sh(t, `for how in setown setown-ex fiosetown; do echo "$how: $($AGENTHELPER $how `+F+` 9)"; done
sleep 300 & c=$!
$AGENTHELPER setown $c 15; wait $c; echo owned=$?
echo "tiocsti: $($AGENTHELPER tiocsti 0)"
$AGENTHELPER tiocsig-own-pty 2
`)
	if !f.alive() {
		t.Fatalf("foreign process %d died: a descriptor owner let a signal through\n%s", f.pid(), r)
	}
	for _, want := range []string{"setown: err EPERM", "setown-ex: err EPERM", "fiosetown: err EPERM", "owned=143",
		"tiocsti: err EPERM", "child: signal: interrupt"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("agent output lacks %q\n%s", want, r)
		}
	}
	for _, want := range []string{"fcntl(F_SETOWN) of pid " + F, "fcntl(F_SETOWN_EX) of pid " + F, "ioctl(FIOSETOWN) of pid " + F, "ioctl(TIOCSTI)"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks the refusal %q\n%s", want, r)
		}
	}
	n := 0
	for _, rec := range r.records(t) {
		if rec["action"] == "signal_denied" && rec["target"] == float64(f.pid()) && (rec["syscall"] == "fcntl" || rec["syscall"] == "ioctl") {
			n++
		}
	}
	if n != 3 {
		t.Errorf("want 3 journal records of descriptor-owner refusals aimed at %d, got %d:\n%s", f.pid(), n, r.journal)
	}
}
