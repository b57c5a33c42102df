package test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Root agent hardening: what the agent's init takes from a root agent
// before it execs (supervisor/harden.go), and what --keep-caps leaves.

// capSysPtrace and capSysAdmin are bit numbers in /proc/PID/status Cap* masks.
const (
	capSysPtrace = 19
	capSysAdmin  = 21
)

// sysrqTrigger is the file the mount namespace of a root agent makes read-only.
const sysrqTrigger = "/proc/sysrq-trigger"

// requireRootWith skips unless the test runs as root with the given
// capabilities in its effective set (a root agent has them to lose only then).
func requireRootWith(t *testing.T, caps ...int) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the hardening is for a root agent")
	}
	eff, err := capMask(readFile("/proc/self/status"), "CapEff")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range caps {
		if eff&(1<<c) == 0 {
			t.Skipf("needs capability %d in the test's effective set (CapEff %#x): nothing for paddock to take away", c, eff)
		}
	}
}

// capMask parses a Cap* line of /proc/PID/status.
func capMask(status, name string) (uint64, error) {
	sc := bufio.NewScanner(strings.NewReader(status))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+":"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, &os.PathError{Op: "find " + name, Path: "/proc/PID/status", Err: syscall.ENOENT}
}

// rootProbeScript reports, as key=value lines, what the agent can reach
// of its supervisor ($PPID, non-dumpable, root with every capability):
// its own capability masks, /proc/$PPID/mem opened and read at the first
// mapped address (the supervisor's text), the /proc/$PPID/cwd link, and
// /proc/$PPID/environ read by a child without CAP_SYS_ADMIN and
// CAP_PERFMON (with either the kernel grants read access to any process's
// mm, environ included: kernel/fork.c may_access_mm), and its mount
// namespace. A refusal prints the error text (strerror).
const rootProbeScript = `probe() { if err=$("$@" 2>&1 >/dev/null); then echo ok; else echo "refused: ${err##*: }"; fi; }
s=$PPID
grep -E '^Cap(Bnd|Eff):' /proc/self/status | tr -d ' \t' | sed 's/:/=/'
addr=$(head -n1 /proc/$s/maps 2>/dev/null | cut -d- -f1)
echo "mem=$(probe dd if=/proc/$s/mem of=/dev/null bs=16 count=1 skip=$((16#${addr:-400000})) iflag=skip_bytes status=none)"
echo "cwd=$(probe readlink -v /proc/$s/cwd)"
echo "environ=$(probe setpriv --bounding-set -sys_admin,-perfmon cat /proc/$s/environ)"
echo "mntns=$(readlink /proc/self/ns/mnt)"`

// probeValues runs rootProbeScript under paddock with extra run flags.
func probeValues(t *testing.T, b backend, flags ...string) (map[string]string, result) {
	t.Helper()
	for _, tool := range []string{"setpriv", "dd", "readlink"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s: %v", tool, err)
		}
	}
	r := b.runPaddock(t, append(flags, "--", "bash", "-c", rootProbeScript)...)
	if r.code != 0 {
		t.Fatalf("probe script failed\n%s", r)
	}
	vals := map[string]string{}
	for _, line := range strings.Split(r.stdout, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			vals[k] = v
		}
	}
	return vals, r
}

// rootAgentLosesPtraceCapability: by default a root agent runs without
// CAP_SYS_PTRACE (bounding and effective sets), so the kernel refuses it
// /proc/$PPID/mem, the /proc/$PPID/cwd link and (once CAP_SYS_ADMIN and
// CAP_PERFMON are gone too) /proc/$PPID/environ of its non-dumpable
// supervisor with EACCES. Without the drop (`paddock run --keep-caps`,
// rootAgentKeepCaps) every one of them is readable.
func rootAgentLosesPtraceCapability(t *testing.T, b backend) {
	b.require(t)
	requireRootWith(t, capSysPtrace)
	v, r := probeValues(t, b)
	for _, set := range []string{"CapBnd", "CapEff"} {
		mask, err := strconv.ParseUint(v[set], 16, 64)
		if err != nil {
			t.Fatalf("no %s in the agent's output: %v\n%s", set, err, r)
		}
		if mask&(1<<capSysPtrace) != 0 {
			t.Errorf("the root agent's %s %#x has CAP_SYS_PTRACE (bit %d)\n%s", set, mask, capSysPtrace, r)
		}
	}
	for _, k := range []string{"mem", "cwd", "environ"} {
		if got := v[k]; got != "refused: Permission denied" && got != "refused: Operation not permitted" {
			t.Errorf("/proc/$PPID/%s of the supervisor: %q, want refused (EACCES or EPERM)\n%s", k, got, r)
		}
	}
}

// rootAgentKeepCaps: with --keep-caps a root agent keeps CAP_SYS_PTRACE and
// paddock's mount namespace, and can read its supervisor's memory: what
// the default hardening takes away.
func rootAgentKeepCaps(t *testing.T, b backend) {
	b.require(t)
	requireRootWith(t, capSysPtrace)
	v, r := probeValues(t, b, "--keep-caps")
	mask, err := strconv.ParseUint(v["CapBnd"], 16, 64)
	if err != nil {
		t.Fatalf("no CapBnd in the agent's output: %v\n%s", err, r)
	}
	if mask&(1<<capSysPtrace) == 0 {
		t.Errorf("with --keep-caps the agent's CapBnd %#x lacks CAP_SYS_PTRACE\n%s", mask, r)
	}
	for _, k := range []string{"mem", "cwd", "environ"} {
		if v[k] != "ok" {
			t.Errorf("with --keep-caps /proc/$PPID/%s: %q, want ok\n%s", k, v[k], r)
		}
	}
	if own, _ := os.Readlink("/proc/self/ns/mnt"); v["mntns"] != own {
		t.Errorf("with --keep-caps the agent's mount namespace is %s, want paddock's %s\n%s", v["mntns"], own, r)
	}
}

// sysrqTriggerReadOnly: a root agent sees /proc/sysrq-trigger mounted
// read-only, and opening it for writing fails with EROFS. The agent opens
// it O_WRONLY|O_APPEND and closes it without writing a byte (`: >>`), so
// nothing is triggered even where the defence is missing; the test's own
// mount namespace is left as it was.
func sysrqTriggerReadOnly(t *testing.T, b backend) {
	b.require(t)
	requireRootWith(t, capSysAdmin)
	if _, err := os.Stat(sysrqTrigger); err != nil {
		t.Skipf("this kernel has no %s (CONFIG_MAGIC_SYSRQ off): %v", sysrqTrigger, err)
	}
	before := mountsAt(t, "/proc/self/mountinfo", sysrqTrigger)
	r := b.sh(t, `grep -F ' `+sysrqTrigger+` ' /proc/self/mountinfo | cut -d' ' -f5,6 | sed 's/^/mount=/'
if err=$( { : >> `+sysrqTrigger+`; } 2>&1 ); then echo open=ok; else echo "open=refused: ${err##*: }"; fi`)
	if r.code != 0 {
		t.Fatalf("agent failed\n%s", r)
	}
	// The last mount on the file is the one the agent opens: paddock's
	// bind, on top of what paddock's own namespace has there (Docker
	// already binds it read-only).
	var mounts []string
	for _, line := range strings.Split(r.stdout, "\n") {
		if m, ok := strings.CutPrefix(line, "mount="+sysrqTrigger+" "); ok {
			mounts = append(mounts, m)
		}
	}
	if n := len(mounts); n <= before || !strings.HasPrefix(mounts[n-1]+",", "ro,") {
		t.Errorf("the agent's mounts on %s: %q (paddock's namespace has %d), want a read-only one on top\n%s", sysrqTrigger, mounts, before, r)
	}
	if !strings.Contains(r.stdout, "open=refused: Read-only file system") {
		t.Errorf("opening %s for writing was not refused with EROFS\n%s", sysrqTrigger, r)
	}
	if after := mountsAt(t, "/proc/self/mountinfo", sysrqTrigger); after != before {
		t.Errorf("the agent's mount on %s reached paddock's namespace: %d mounts before, %d after", sysrqTrigger, before, after)
	}
}

// agentMountsStayPrivate: a root agent runs in a mount namespace of its own
// (the one holding the read-only /proc/sysrq-trigger), where `mount --bind`
// works as before; what it mounts stays there, and is gone from the host
// when it exits, even when it does not unmount it.
func agentMountsStayPrivate(t *testing.T, b backend) {
	b.require(t)
	requireRootWith(t, capSysAdmin)
	if _, err := exec.LookPath("mount"); err != nil {
		t.Skipf("needs mount: %v", err)
	}
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	for _, d := range []string{src, dst} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(src, "marker"), []byte("bound\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Only if the defence failed: the agent's mount is then paddock's.
		for mountsAt(t, "/proc/self/mountinfo", dst) > 0 {
			if err := syscall.Unmount(dst, syscall.MNT_DETACH); err != nil {
				t.Errorf("unmount %s: %v", dst, err)
				return
			}
		}
	})
	r := b.sh(t, `readlink /proc/self/ns/mnt | sed 's/^/mntns=/'
mount --bind `+src+` `+dst+` && echo "read=$(cat `+dst+`/marker)"`)
	if r.code != 0 || !strings.Contains(r.stdout, "read=bound") {
		t.Fatalf("mount --bind did not work for the agent\n%s", r)
	}
	own, _ := os.Readlink("/proc/self/ns/mnt")
	if strings.Contains(r.stdout, "mntns="+own+"\n") {
		t.Errorf("the root agent runs in paddock's own mount namespace %s\n%s", own, r)
	}
	if n := mountsAt(t, "/proc/self/mountinfo", dst); n > 0 {
		t.Errorf("the agent's bind mount on %s is in paddock's mount namespace (%d mounts)\n%s", dst, n, r)
	}
}

// mountsAt counts the mounts on mountpoint listed in a mountinfo file.
func mountsAt(t *testing.T, mountinfo, mountpoint string) int {
	t.Helper()
	n := 0
	sc := bufio.NewScanner(strings.NewReader(readFile(mountinfo)))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 4 && f[4] == mountpoint {
			n++
		}
	}
	return n
}
