package supervisor

import (
	"strings"
	"testing"
)

// The start line of a session an init started says what the init said of
// its Landlock domain: where the kernel has Landlock for the session, a
// domain the init could not enter is reported, not assumed (it once was:
// the supervisor took the kernel's readiness for the init's domain).
func TestWallOf(t *testing.T) {
	for _, keepCaps := range []bool{false, true} {
		kernel := landlockReady(keepCaps)
		for _, said := range []string{"", "landlock: landlock_restrict_self: operation not permitted"} {
			got := wallOf(said, keepCaps)
			switch {
			case kernel != nil:
				if got == nil || got.Error() != kernel.Error() {
					t.Errorf("wallOf(%q, %v) = %v; want the kernel's own reason %v", said, keepCaps, got, kernel)
				}
			case said == "":
				if got != nil {
					t.Errorf("wallOf(%q, %v) = %v; want nil: the init is in its domain", said, keepCaps, got)
				}
			default:
				if got == nil || !strings.Contains(got.Error(), said) {
					t.Errorf("wallOf(%q, %v) = %v; want the init's reason", said, keepCaps, got)
				}
			}
		}
	}
}
