package features

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/llaudit"
)

// TestWallNamedOnlyByLandlock: whether the agent runs without the
// kernel's wall is said by the Landlock item alone, and only where
// Landlock is not up; the cgroup v2 item says what cgroups are to paddock
// (nothing it enforces with), whatever the state of Landlock. It once
// reused the Landlock item's "runs without the kernel's wall" where
// Landlock was up.
func TestWallNamedOnlyByLandlock(t *testing.T) {
	const noWall = "without the kernel's wall"
	landlock := []struct {
		name string
		abi  int
		err  error
		up   bool
	}{
		{name: "ABI 6", abi: 6, up: true},
		{name: "ABI 7", abi: 7, up: true},
		{name: "ABI 5", abi: 5},
		{name: "not enabled", err: unix.EOPNOTSUPP},
		{name: "not built", err: unix.ENOSYS},
		{name: "refused", err: unix.EPERM},
	}
	cgroup := []struct {
		name   string
		err    error
		status Status
		note   string // a substring of the note; "" for none at all
	}{
		{name: "v2", status: OK},
		{name: "no v2", err: &os.PathError{Op: "stat", Path: cgroup2Path, Err: os.ErrNotExist}, status: Missing,
			note: "is not a cgroup v2 hierarchy (v1, hybrid, or not mounted); nothing depends on it: paddock does not use cgroups"},
		{name: "unreadable", err: &os.PathError{Op: "stat", Path: cgroup2Path, Err: os.ErrPermission}, status: Unknown,
			note: "permission denied; nothing depends on it"},
	}
	for _, ll := range landlock {
		for _, cg := range cgroup {
			t.Run(ll.name+"/"+cg.name, func(t *testing.T) {
				f := good()
				f.landlockABI, f.landlockErr = ll.abi, nil
				if ll.err != nil {
					f.landlockABI, f.landlockErr = 0, errors.Join(errors.New("landlock_create_ruleset"), ll.err)
				}
				f.cgroup2Err = cg.err
				r := build(f)

				l := item(t, r, IDLandlock)
				if got := l.Status == OK; got != ll.up {
					t.Errorf("Landlock item %s, want up=%v: %+v", l.Status, ll.up, l)
				}
				if got := strings.Contains(l.Note, noWall); got == ll.up {
					t.Errorf("Landlock up=%v, but its note says %q: %v (%q)", ll.up, noWall, got, l.Note)
				}

				c := item(t, r, IDCgroup2)
				if c.Status != cg.status {
					t.Errorf("cgroup v2 item %s, want %s: %+v", c.Status, cg.status, c)
				}
				if cg.note == "" && c.Note != "" || !strings.Contains(c.Note, cg.note) {
					t.Errorf("cgroup v2 note %q, want one with %q", c.Note, cg.note)
				}
				for _, it := range r.Items {
					if it.ID != IDLandlock && strings.Contains(it.Note, noWall) {
						t.Errorf("%s item says %q: %q", it.ID, noWall, it.Note)
					}
				}
			})
		}
	}
}

// TestWallSeenItem: the kernel wall item says whether a probe's own
// Landlock denial came back, and otherwise why not and what stays silent
// then; without the probe child it is unknown, and without a wall there
// is nothing to see.
func TestWallSeenItem(t *testing.T) {
	tests := []struct {
		name   string
		abi    int
		err    error
		status Status
		value  string
		note   string // a substring of the note
	}{
		{"seen", 7, nil, OK, "yes (a probe's own Landlock denial came back)", "journals each refusal of the kernel's wall (wall_denied"},
		{"not probed", 7, errWallNotProbed, Unknown, "not probed", "ProbeLocal"},
		{"no wall", 5, llaudit.ErrLandlockOld, Missing, "no (no wall)", "no Landlock domain"},
		{"ABI 6", 6, fmt.Errorf("llaudit: ABI 6: %w", llaudit.ErrLandlockOld), Missing, "no (Landlock ABI 6)", "from ABI 7 (Linux 6.15): a refusal of the kernel's wall"},
		{"not root", 7, fmt.Errorf("llaudit: %w", llaudit.ErrNotPermitted), Missing, "no (needs CAP_AUDIT_READ)", "--strict and --report do not count it"},
		{"auditing off", 7, fmt.Errorf("llaudit: %w", llaudit.ErrAuditOff), Missing, "no (auditing is off)", "auditctl -e 1"},
		{"no audit", 7, fmt.Errorf("llaudit: %w", llaudit.ErrNoAudit), Missing, "no (no audit)", "CONFIG_AUDIT"},
		{"no record", 7, fmt.Errorf("llaudit: %w", llaudit.ErrNoRecord), Missing, "no (no record came)", "another network namespace"},
		{"something else", 7, fmt.Errorf("llaudit: socket(NETLINK_AUDIT): %w", unix.EMFILE), Unknown, "EMFILE", "too many open files"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := good()
			f.landlockABI, f.wallSeen = tt.abi, tt.err
			it := item(t, build(f), IDWallSeen)
			if it.Status != tt.status || it.Value != tt.value || !strings.Contains(it.Note, tt.note) {
				t.Errorf("item %+v; want %s, %q, a note with %q", it, tt.status, tt.value, tt.note)
			}
		})
	}
}
