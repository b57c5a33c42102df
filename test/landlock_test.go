package test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/internal/sys"
)

// kernelWallKeepsProcMemClosed: the agent runs in a Landlock domain of its
// own, so the kernel itself refuses it /proc/PID/mem of a foreign process
// run by the same unprivileged user (a path paddock's traps never see: an
// open, or io_uring's), while its own children's stay open to it and a
// `kill -0` probe of the foreign process still works. Without the domain,
// a same-user process opens the foreign mem read-write and can overwrite
// its code.
func kernelWallKeepsProcMemClosed(t *testing.T, b backend) {
	b.require(t)
	if abi, err := sys.LandlockABI(); err != nil || abi < 6 {
		t.Skipf("needs Landlock ABI 6 (Linux 6.12+, enabled in lsm=): ABI %d, %v", abi, err)
	}
	dir := nobodyDir(t)
	f := nobodyStart(t, "sleep", "300")
	fp := itoa(f.Pid())
	script := `exec 3<>/proc/` + fp + `/mem && echo foreign-mem=open || echo foreign-mem=closed
sleep 300 & c=$!
exec 4<>/proc/$c/mem && echo own-mem=open
kill $c
kill -0 ` + fp + ` && echo probe=ok`
	out, lines := b.nobodyRun(t, bins.paddock, dir, script, "--log-level", "debug")
	wantLines(t, out, lines, "foreign-mem=closed", "own-mem=open", "probe=ok")
	if !strings.Contains(out, "kernel_wall=\"landlock:") {
		t.Errorf("the start's details do not say the kernel's wall is up\n%s", out)
	}
	if !f.Alive(t) {
		t.Errorf("the foreign process died")
	}
}

// kernelWallBehindForcedAllow: with the supervisor's decisions forced to
// "allow" (a paddock built with the paddock_forceallow tag, which a release
// build cannot turn on), the kernel's wall alone still keeps a same-user
// foreign process out of the agent's ptrace-class reach: ptrace attach,
// pidfd_getfd and /proc/PID/mem are refused by Landlock. That the switch is
// on shows in the start line and in a renice of the foreign process, which
// the supervisor would refuse and now lets through. Signals are behind the
// wall too (LANDLOCK_SCOPE_SIGNAL): kill, tgkill, rt_sigqueueinfo and
// pidfd_send_signal of the foreign process are refused by the kernel, and
// a probe (signal 0) still says it exists.
func kernelWallBehindForcedAllow(t *testing.T, b backend) {
	b.require(t)
	if abi, err := sys.LandlockABI(); err != nil || abi < 6 {
		t.Skipf("needs Landlock ABI 6 (Linux 6.12+, enabled in lsm=): ABI %d, %v", abi, err)
	}
	if _, err := exec.LookPath("renice"); err != nil {
		t.Skipf("needs renice: %v", err)
	}
	dir := nobodyDir(t)
	f := nobodyStart(t, "sleep", "300")
	fp := itoa(f.Pid())
	script := `echo "attach=$($AGENTHELPER ptrace-attach ` + fp + `)"
echo "getfd=$($AGENTHELPER pidfd-getfd ` + fp + ` 0)"
exec 3<>/proc/` + fp + `/mem && echo mem=open || echo mem=closed
renice -n 1 -p ` + fp + ` >/dev/null && echo renice=ok
echo "kill=$($AGENTHELPER kill ` + fp + ` 9)"
echo "tgkill=$($AGENTHELPER tgkill ` + fp + ` ` + fp + ` 9)"
echo "sigqueue=$($AGENTHELPER sigqueue ` + fp + ` 9)"
echo "pidfd=$($AGENTHELPER pidfd ` + fp + ` 9)"
echo "probe=$($AGENTHELPER kill ` + fp + ` 0)"`
	out, lines := b.nobodyRun(t, bins.forceAllow, dir, script, "--log-level", "debug")
	wantLines(t, out, lines, "attach=err EPERM", "getfd=err EPERM", "mem=closed", "renice=ok",
		"kill=err EPERM", "tgkill=err EPERM", "sigqueue=err EPERM", "pidfd=err EPERM", "probe=ok")
	if !strings.Contains(out, "TEST BUILD (paddock_forceallow)") {
		t.Errorf("the start's details do not say the decisions are forced\n%s", out)
	}
	if !f.Alive(t) {
		t.Errorf("the foreign process died")
	}
}
