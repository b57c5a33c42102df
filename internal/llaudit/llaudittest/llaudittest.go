// Package llaudittest lets a test depend on the kernel's audit records
// of Landlock denials (package llaudit): it skips, with the reason, where
// they cannot be read, and turns auditing on for the test's run where it
// is off and the one who runs the tests has allowed that.
package llaudittest

import (
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/llaudit"
	"github.com/paddock-dev/paddock/internal/sys"
)

// AllowEnv names the variable that lets a test turn auditing on for its
// run where it is off: "on". Off by default, because turning auditing on
// once leaves every process forked afterwards with an audit context until
// reboot (each of its syscalls then takes the kernel's slower path, even
// once auditing is off again): .ci/run allows it on its throwaway
// machine.
const AllowEnv = "PADDOCK_TEST_AUDIT"

// Require skips tb unless this process may read the kernel's records of
// Landlock denials: root (CAP_AUDIT_READ), Landlock ABI 7, a kernel with
// audit, and auditing on, or off and turned on for tb's run (AllowEnv),
// then off again at its end. Tests that call it run one at a time, in
// every test binary.
func Require(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("needs root: reading the kernel's audit records needs CAP_AUDIT_READ")
	}
	if abi, err := sys.LandlockABI(); err != nil || abi < llaudit.MinABI {
		tb.Skipf("needs Landlock ABI %d (Linux 6.15+), whose denials the kernel logs to audit: ABI %d, %v", llaudit.MinABI, abi, err)
	}
	// The temporary directory itself is the lock that serializes the tests
	// that need auditing on, across test binaries (the one that turned it
	// on turns it off when done, and none may do so under another): a
	// lock file there would outlive the tests.
	lock, err := os.Open(os.TempDir())
	if err != nil {
		tb.Fatalf("the audit tests' lock: %v", err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		lock.Close()
		tb.Fatalf("the audit tests' lock: %v", err)
	}
	tb.Cleanup(func() { lock.Close() })
	on, _, err := llaudit.Status()
	switch {
	case errors.Is(err, llaudit.ErrNoAudit):
		tb.Skipf("needs the kernel's audit (CONFIG_AUDIT): %v", err)
	case err != nil:
		tb.Skipf("needs the kernel's audit status (AUDIT_GET): %v", err)
	case on:
		return
	case os.Getenv(AllowEnv) != "on":
		tb.Skipf("needs auditing on (auditctl -e 1), which is off; %s=on lets the test turn it on for its run (every process forked afterwards then keeps an audit context until reboot)", AllowEnv)
	}
	if err := llaudit.SetEnabled(true); err != nil {
		tb.Skipf("needs auditing on, which is off and could not be turned on: %v", err)
	}
	tb.Logf("auditing turned on for this test (%s=on); it is turned off again at its end", AllowEnv)
	// Registered after the lock's: cleanups run last-in first-out, so
	// auditing is off again before the lock goes.
	tb.Cleanup(func() {
		if err := llaudit.SetEnabled(false); err != nil {
			tb.Errorf("turn auditing off again: %v", err)
		}
	})
}
