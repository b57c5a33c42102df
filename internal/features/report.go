package features

import (
	"fmt"
	"strings"
)

// Status says what an Item found.
type Status string

// The statuses of an Item.
const (
	OK            Status = "ok"      // present, or nothing in the way
	Missing       Status = "missing" // absent or in the way; Item.Note says what it costs
	Unknown       Status = "unknown" // could not be found out; Item.Note says why
	NotApplicable Status = "n/a"     // does not apply to this architecture
)

// The IDs of the items of a Report, in the order Probe lists them.
const (
	IDKernel           = "kernel"             // uname release and machine
	IDSeccompActions   = "seccomp_actions"    // /proc/sys/kernel/seccomp/actions_avail
	IDUserNotif        = "user_notif"         // SECCOMP_RET_USER_NOTIF
	IDRetTrace         = "ret_trace"          // SECCOMP_RET_TRACE
	IDNotifContinue    = "notif_continue"     // SECCOMP_USER_NOTIF_FLAG_CONTINUE, by kernel version
	IDListener         = "listener"           // a listener could be installed (probe child)
	IDWaitKillableRecv = "wait_killable_recv" // SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (probe child)
	IDSyncWakeUp       = "sync_wake_up"       // SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (probe child)
	IDPidfdOpen        = "pidfd_open"         // pidfd_open(self)
	IDPidfdSendSignal  = "pidfd_send_signal"  // pidfd_send_signal(self, 0)
	IDPidfdGetfd       = "pidfd_getfd"        // pidfd_getfd(self, its own pidfd)
	IDChildSubreaper   = "child_subreaper"    // prctl(PR_GET_CHILD_SUBREAPER)
	IDLandlock         = "landlock"           // landlock_create_ruleset(NULL, 0, VERSION)
	IDWallSeen         = "wall_seen"          // a Landlock denial's audit record came back (llaudit.Probe; probe child runs only)
	IDCgroup2          = "cgroup2"            // /sys/fs/cgroup/cgroup.controllers
	IDIA32Emulation    = "ia32_emulation"     // CONFIG_IA32_EMULATION (amd64 only)
	IDPtrace           = "ptrace"             // Yama ptrace_scope
	IDUnderSeccomp     = "under_seccomp"      // Seccomp, Seccomp_filters of this thread
	IDUnderListener    = "under_listener"     // the probe's EBUSY
	// IDBPFLSM (bpflsm.go) comes last.
)

// Item is one probed feature.
type Item struct {
	ID     string `json:"id"`     // stable key, one of the ID constants
	Name   string `json:"name"`   // what it is, for people
	Status Status `json:"status"` // ok, missing, unknown or n/a
	Value  string `json:"value"`  // what was found
	// Note says what is missing and what that costs the user, or why the
	// item is unknown; on an ok item, a caveat (often empty).
	Note string `json:"note,omitempty"`
}

// Report is what Probe found: the kernel, one Item per feature, the raw
// listener probe, and the backend auto would pick.
type Report struct {
	Kernel  string        `json:"kernel"`  // uname release ("" if uname failed)
	Machine string        `json:"machine"` // uname machine
	Arch    string        `json:"arch"`    // GOARCH of this binary
	Items   []Item        `json:"items"`
	Probe   ListenerProbe `json:"listener_probe"`
	Backend Backend       `json:"backend"`
}

// Item returns the item with id, and whether the report has one.
func (r Report) Item(id string) (Item, bool) {
	for _, it := range r.Items {
		if it.ID == id {
			return it, true
		}
	}
	return Item{}, false
}

// Unavailable is why a Report lacks a feature (see Report.Need).
type Unavailable struct {
	Item Item
	// Kernel is the running kernel's version; Since the version from
	// which the feature is always there (zero when it has none).
	Kernel, Since Version
	// MustHave is set when the kernel is at least Since, the item is
	// Missing, and nothing in the environment (EPERM, EACCES: a filter or
	// LSM above) explains it: the kernel should have the feature, so
	// something is broken.
	MustHave bool
}

// Error says what is missing and why.
func (u *Unavailable) Error() string {
	msg := fmt.Sprintf("%s is %s (%s)", u.Item.Name, u.Item.Status, u.Item.Value)
	if u.Item.Note != "" {
		msg += ": " + u.Item.Note
	}
	if u.MustHave {
		msg += fmt.Sprintf("; but Linux %v has it since %v", u.Kernel, u.Since)
	}
	return msg
}

// Need returns nil when the report has feature id, else an *Unavailable
// saying why not and whether the kernel is new enough that it must be
// there. An id the report does not list is an error too.
func (r Report) Need(id string) error {
	it, ok := r.Item(id)
	if !ok {
		return fmt.Errorf("features: no item %q", id)
	}
	if it.Status == OK {
		return nil
	}
	u := &Unavailable{Item: it}
	major, minor, verOK := kernelVersion(r.Kernel)
	u.Kernel = Version{major, minor}
	since, has := Since(id)
	if has {
		u.Since = since
	}
	refused := strings.Contains(it.Value, "EPERM") || strings.Contains(it.Value, "EACCES")
	u.MustHave = has && verOK && it.Status == Missing && !refused && u.Kernel.AtLeast(since)
	return u
}
