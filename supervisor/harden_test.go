package supervisor

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestHardenRoot runs hardenRoot in a child process (this test binary
// again, as TestHardenRootChild) and checks what the thread that ran it is
// left with: CAP_SYS_PTRACE out of the bounding set, a mount namespace of
// its own, and /proc/sysrq-trigger read-only there when the kernel has
// one. The end-to-end scenarios in test/rootcaps_test.go check the agent.
func TestHardenRoot(t *testing.T) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var caps [2]unix.CapUserData
	if err := unix.Capget(&hdr, &caps[0]); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 || !hasCap(caps, unix.CAP_SETPCAP) || !hasCap(caps, unix.CAP_SYS_ADMIN) {
		t.Skip("needs root with CAP_SETPCAP and CAP_SYS_ADMIN")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHardenRootChild$", "-test.v")
	cmd.Env = append(os.Environ(), hardenChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	vals := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			vals[k] = v
		}
	}
	if vals["bounding"] != "0" {
		t.Errorf("CAP_SYS_PTRACE in the hardened thread's bounding set: %q, want 0\n%s", vals["bounding"], out)
	}
	if vals["after"] == "" || vals["after"] == vals["before"] {
		t.Errorf("mount namespace before %q, after %q: want another\n%s", vals["before"], vals["after"], out)
	}
	if _, err := os.Stat(sysrqTrigger); err != nil {
		t.Logf("no %s here (%v): only the namespace is checked", sysrqTrigger, err)
		return
	}
	if m := vals["sysrq"]; !strings.HasPrefix(m+",", "ro,") {
		t.Errorf("last mount on %s in the hardened namespace has options %q, want read-only\n%s", sysrqTrigger, m, out)
	}
}

// hardenChildEnv makes TestHardenRootChild run.
const hardenChildEnv = "PADDOCK_TEST_HARDEN_CHILD"

// TestHardenRootChild is TestHardenRoot's child: it hardens one locked
// thread and prints what that thread sees, as key=value lines.
func TestHardenRootChild(t *testing.T) {
	if os.Getenv(hardenChildEnv) == "" {
		t.Skip("run by TestHardenRoot")
	}
	runtime.LockOSThread() // never unlocked: the hardened thread serves nothing else
	before, _ := os.Readlink("/proc/thread-self/ns/mnt")
	if err := hardenRoot(); err != nil {
		t.Fatal(err)
	}
	bounding, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, unix.CAP_SYS_PTRACE, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.Readlink("/proc/thread-self/ns/mnt")
	sysrq := ""
	b, _ := os.ReadFile("/proc/thread-self/mountinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 5 && f[4] == sysrqTrigger {
			sysrq = f[5]
		}
	}
	fmt.Printf("before=%s\nafter=%s\nbounding=%d\nsysrq=%s\n", before, after, bounding, sysrq)
}
