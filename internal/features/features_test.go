package features

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/filter"
	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/internal/reexec"
)

// listenerChild is the job of a test child that installs a listener on
// its thread, then probes (underListener).
const listenerChild = "__features_test_listener"

func TestMain(m *testing.M) {
	reexec.Run(ProbeChild(), reexec.Child{Name: listenerChild, Main: underListener})
	os.Exit(m.Run())
}

// helperOut is what underListener prints: why it could not set up, or the
// report it got.
type helperOut struct {
	Skip   string  `json:"skip,omitempty"`
	Report *Report `json:"report,omitempty"`
}

// underListener plays a process that already holds a listener (paddock run
// under paddock run): it installs an allow-all filter with NEW_LISTENER on
// its locked thread, keeps the listener open, and probes from that same
// thread, so the probe child inherits the filter and its listener.
func underListener([]string) int {
	runtime.LockOSThread()
	var out helperOut
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		out.Skip = fmt.Sprintf("prctl(PR_SET_NO_NEW_PRIVS): %v", err)
	} else {
		prog := []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW}}
		fd, err := filter.Install(prog, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER)
		if err != nil {
			out.Skip = err.Error()
		} else {
			r := Probe(os.Args[0])
			out.Report = &r
			defer unix.Close(fd) // open until the probe has answered
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintf(os.Stderr, "helper: %v\n", err)
		return 1
	}
	return 0
}

// needUserNotif skips a test on kernels without seccomp user notification,
// and fails it on kernels that must have it: featuretest.Require, which
// this package's own tests cannot import (it imports features).
func needUserNotif(t *testing.T) {
	t.Helper()
	err := ProbeLocal().Need(IDUserNotif)
	var u *Unavailable
	switch {
	case err == nil:
	case errors.As(err, &u) && !u.MustHave:
		t.Skipf("needs seccomp user notification: %v", err)
	default:
		t.Fatalf("needs seccomp user notification: %v", err)
	}
}

func item(t *testing.T, r Report, id string) Item {
	t.Helper()
	it, ok := r.Item(id)
	if !ok {
		t.Fatalf("report has no %s item: %+v", id, r.Items)
	}
	return it
}

// allIDs is every item, in the order Probe lists them.
var allIDs = []string{IDKernel, IDSeccompActions, IDUserNotif, IDRetTrace, IDNotifContinue, IDListener,
	IDWaitKillableRecv, IDSyncWakeUp, IDPidfdOpen, IDPidfdSendSignal, IDPidfdGetfd, IDChildSubreaper,
	IDLandlock, IDWallSeen, IDCgroup2, IDIA32Emulation, IDPtrace, IDUnderSeccomp, IDUnderListener, IDBPFLSM}

// checkShape checks what holds for every report: every item once, in
// order, named, with a value, and a note on every item that is not ok.
func checkShape(t *testing.T, r Report) {
	t.Helper()
	if len(r.Items) != len(allIDs) {
		t.Errorf("%d items, want %d", len(r.Items), len(allIDs))
	}
	for i, it := range r.Items {
		if i < len(allIDs) && it.ID != allIDs[i] {
			t.Errorf("item %d is %s, want %s", i, it.ID, allIDs[i])
		}
		if it.Name == "" || it.Value == "" {
			t.Errorf("item %s lacks a name or a value: %+v", it.ID, it)
		}
		switch it.Status {
		case OK:
		case Missing, Unknown, NotApplicable:
			if it.Note == "" {
				t.Errorf("item %s is %s without a note", it.ID, it.Status)
			}
		default:
			t.Errorf("item %s has status %q", it.ID, it.Status)
		}
	}
	switch r.Backend.Name {
	case "seccomp", "ptrace":
	case "none":
		if !strings.HasPrefix(r.Backend.Reason, "paddock cannot enforce here: ") {
			t.Errorf("backend none, reason %q does not say paddock cannot enforce", r.Backend.Reason)
		}
	default:
		t.Errorf("backend %q", r.Backend.Name)
	}
	if r.Backend.Reason == "" {
		t.Errorf("backend %s without a reason", r.Backend.Name)
	}
}

func TestKernelVersion(t *testing.T) {
	for _, tc := range []struct {
		release      string
		major, minor int
		ok           bool
	}{
		{"6.18.44-fc-v1098", 6, 18, true},
		{"5.15.0-91-generic", 5, 15, true},
		{"6.6", 6, 6, true},
		{"5.4.0", 5, 4, true},
		{"4.19.0+", 4, 19, true},
		{"6.10-rc1", 6, 10, true},
		{"", 0, 0, false},
		{"6", 0, 0, false},
		{"x.y", 0, 0, false},
		{"6.x", 0, 0, false},
	} {
		major, minor, ok := kernelVersion(tc.release)
		if major != tc.major || minor != tc.minor || ok != tc.ok {
			t.Errorf("kernelVersion(%q) = %d, %d, %v; want %d, %d, %v", tc.release, major, minor, ok, tc.major, tc.minor, tc.ok)
		}
	}
	for _, tc := range []struct {
		major, minor, wantMajor, wantMinor int
		want                               bool
	}{
		{6, 18, 5, 9, true}, {5, 9, 5, 9, true}, {5, 8, 5, 9, false}, {4, 20, 5, 0, false}, {6, 0, 5, 19, true},
	} {
		if got := atLeast(tc.major, tc.minor, tc.wantMajor, tc.wantMinor); got != tc.want {
			t.Errorf("atLeast(%d.%d, %d.%d) = %v", tc.major, tc.minor, tc.wantMajor, tc.wantMinor, got)
		}
	}
}

func TestIA32State(t *testing.T) {
	for _, tc := range []struct {
		name, config, cmdline string
		state                 string
	}{
		{"on", "CONFIG_X86_64=y\nCONFIG_IA32_EMULATION=y\n# CONFIG_IA32_EMULATION_DEFAULT_DISABLED is not set\n", "quiet", "on"},
		{"not set", "CONFIG_X86_64=y\n# CONFIG_IA32_EMULATION is not set\n", "", "off"},
		{"absent", "CONFIG_X86_64=y\n", "", "off"},
		{"default disabled", "CONFIG_IA32_EMULATION=y\nCONFIG_IA32_EMULATION_DEFAULT_DISABLED=y\n", "quiet", "off"},
		{"default disabled, enabled at boot", "CONFIG_IA32_EMULATION=y\nCONFIG_IA32_EMULATION_DEFAULT_DISABLED=y\n", "quiet ia32_emulation=1", "on"},
		{"disabled at boot", "CONFIG_IA32_EMULATION=y\n", "ia32_emulation=false ro", "off"},
		{"init's argument is not the kernel's", "CONFIG_IA32_EMULATION=y\n", "ro -- ia32_emulation=0", "on"},
		{"not a boolean", "CONFIG_IA32_EMULATION=y\n", "ia32_emulation=maybe", "on"},
		{"config not set wins", "# CONFIG_IA32_EMULATION is not set\n", "ia32_emulation=1", "off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseConfig(strings.NewReader(tc.config))
			if err != nil {
				t.Fatal(err)
			}
			got := ia32State(c, "test-config", tc.cmdline)
			if got.state != tc.state || !strings.Contains(got.from, "test-config") {
				t.Errorf("got %+v, want state %q, from naming test-config", got, tc.state)
			}
		})
	}
}

func TestKernelBool(t *testing.T) {
	for in, want := range map[string][2]bool{
		"1": {true, true}, "Y": {true, true}, "on": {true, true}, "true": {true, true},
		"0": {false, true}, "n": {false, true}, "off": {false, true}, "False": {false, true},
		"": {false, false}, "2": {false, false},
	} {
		if v, ok := kernelBool(in); v != want[0] || ok != want[1] {
			t.Errorf("kernelBool(%q) = %v, %v; want %v, %v", in, v, ok, want[0], want[1])
		}
	}
}

func TestCapEff(t *testing.T) {
	for _, tc := range []struct {
		status string
		mask   uint64
		ok     bool
	}{
		{"Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\nCapBnd:\t0\n", 0x1ffffffffff, true},
		{"CapEff:\t0000000000000000\n", 0, true},
		{"Name:\tx\n", 0, false},
		{"CapEff:\tzz\n", 0, false},
	} {
		mask, ok := capEff([]byte(tc.status))
		if mask != tc.mask || ok != tc.ok {
			t.Errorf("capEff(%q) = %#x, %v; want %#x, %v", tc.status, mask, ok, tc.mask, tc.ok)
		}
	}
}

func TestReadPtraceScope(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		path    string
		want    int
		wantErr bool
	}{
		{filepath.Join(dir, "absent"), -1, false},
		{write("one", "1\n"), 1, false},
		{write("three", "3\n"), 3, false},
		{write("junk", "x\n"), -1, true},
	} {
		got, err := readPtraceScope(tc.path)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("readPtraceScope(%s) = %d, %v; want %d, error %v", tc.path, got, err, tc.want, tc.wantErr)
		}
	}
}

// good is the facts of a kernel and process that give paddock everything.
func good() facts {
	yes := true
	return facts{
		arch: "amd64", release: "6.18.44-fc-v1098", machine: "x86_64",
		actions: strings.Fields("kill_process kill_thread trap errno user_notif trace log allow"),
		probe:   ListenerProbe{Listener: true, WaitKillableRecv: &yes, SyncWakeUp: &yes},
		ia32:    ia32{state: "on", from: "CONFIG_IA32_EMULATION=y in /proc/config.gz"},
		// No Yama, not under seccomp, every call works.
		ptraceScope: -1, landlockABI: 6,
	}
}

func TestBuild(t *testing.T) {
	no := false
	ebusy := ListenerProbe{ListenerErrno: "EBUSY", ListenerError: "filter: seccomp(...): device or resource busy"}
	for _, tc := range []struct {
		name    string
		change  func(*facts)
		backend string
		status  map[string]Status // items checked, by id
		notes   map[string]string // a substring of the note, by id
		reason  string            // a substring of the backend's reason
	}{
		{
			name: "everything", change: func(*facts) {}, backend: "seccomp",
			status: map[string]Status{IDKernel: OK, IDUserNotif: OK, IDRetTrace: OK, IDNotifContinue: OK, IDListener: OK,
				IDWaitKillableRecv: OK, IDSyncWakeUp: OK, IDPidfdOpen: OK, IDPidfdSendSignal: OK, IDPidfdGetfd: OK,
				IDChildSubreaper: OK, IDLandlock: OK, IDCgroup2: OK, IDIA32Emulation: OK, IDPtrace: OK,
				IDUnderSeccomp: OK, IDUnderListener: OK},
			reason: "a seccomp listener can be installed",
		},
		{
			name: "6.1: no sync wake-up", backend: "seccomp",
			change: func(f *facts) {
				f.release = "6.1.0-13-amd64"
				f.probe.SyncWakeUp, f.probe.SyncWakeUpErrno = &no, "EINVAL"
			},
			status: map[string]Status{IDSyncWakeUp: Missing, IDWaitKillableRecv: OK, IDListener: OK},
			notes:  map[string]string{IDSyncWakeUp: "no SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (Linux 6.6+): each decision costs an extra scheduler wake-up, ~30 us"},
			reason: "~30 us more",
		},
		{
			name: "Landlock before ABI 6: no wall", backend: "seccomp",
			change: func(f *facts) {
				f.landlockABI = 5
			},
			status: map[string]Status{IDLandlock: Missing},
			notes:  map[string]string{IDLandlock: "needs Landlock ABI 6"},
		},
		{
			name: "5.15: no killable wait either", backend: "seccomp",
			change: func(f *facts) {
				f.release = "5.15.0-91-generic"
				f.probe = ListenerProbe{Listener: true, WaitKillableRecv: &no, WaitKillableRecvErrno: "EINVAL", SyncWakeUp: &no, SyncWakeUpErrno: "EINVAL"}
			},
			status: map[string]Status{IDWaitKillableRecv: Missing, IDSyncWakeUp: Missing, IDNotifContinue: OK},
			notes:  map[string]string{IDWaitKillableRecv: "(Linux 5.19+)"},
		},
		{
			name: "under another listener", change: func(f *facts) { f.probe = ebusy; f.seccompMode, f.seccompFilters = 2, 1 },
			backend: "ptrace",
			status:  map[string]Status{IDListener: Missing, IDUnderListener: Missing, IDWaitKillableRecv: Unknown, IDSyncWakeUp: Unknown, IDUnderSeccomp: OK},
			notes:   map[string]string{IDUnderListener: "a filter chain takes one listener"},
			reason:  "EBUSY",
		},
		{
			name: "under another listener, ptrace disabled", backend: "none",
			change: func(f *facts) { f.probe = ebusy; f.ptraceScope = 3 },
			status: map[string]Status{IDPtrace: Missing},
			reason: "ptrace_scope 3",
		},
		{
			name: "under another listener, admin-only ptrace without the capability", backend: "none",
			change: func(f *facts) { f.probe = ebusy; f.ptraceScope = 2 },
			status: map[string]Status{IDPtrace: Missing},
			reason: "CAP_SYS_PTRACE",
		},
		{
			name: "under another listener, admin-only ptrace with the capability", backend: "ptrace",
			change: func(f *facts) { f.probe = ebusy; f.ptraceScope, f.capSysPtrace = 2, true },
			status: map[string]Status{IDPtrace: OK},
		},
		{
			name: "under another listener, relational Yama", backend: "ptrace",
			change: func(f *facts) { f.probe = ebusy; f.ptraceScope = 1 },
			status: map[string]Status{IDPtrace: OK},
		},
		{
			name: "under another listener, no RET_TRACE", backend: "none",
			change: func(f *facts) { f.probe = ebusy; f.actions = []string{"kill_process", "errno", "user_notif", "allow"} },
			status: map[string]Status{IDRetTrace: Missing},
			reason: "no SECCOMP_RET_TRACE",
		},
		{
			name: "4.19: no user notification", backend: "ptrace",
			change: func(f *facts) {
				f.release = "4.19.0-27-amd64"
				f.actions = strings.Fields("kill_process kill_thread trap errno trace log allow")
				f.probe = ListenerProbe{ListenerErrno: "EINVAL", ListenerError: "filter: ...: invalid argument"}
				f.pidfdOpen, f.pidfdSendSignal, f.pidfdGetfd = fmt.Errorf("pidfd_open(self): %w", unix.ENOSYS), errNotTried, errNotTried
				f.landlockErr = fmt.Errorf("landlock: %w", unix.ENOSYS)
			},
			status: map[string]Status{IDKernel: Missing, IDUserNotif: Missing, IDNotifContinue: Missing, IDListener: Missing,
				IDUnderListener: Unknown, IDPidfdOpen: Missing, IDPidfdSendSignal: Unknown, IDPidfdGetfd: Unknown, IDLandlock: Missing},
			notes:  map[string]string{IDPidfdOpen: "no pidfd_open (Linux 5.3+)", IDNotifContinue: "(Linux 5.5+)", IDLandlock: "seccomp traps hold alone"},
			reason: "no seccomp user notification",
		},
		{
			name: "probe failed", backend: "ptrace",
			change: func(f *facts) {
				f.probe = ListenerProbe{Error: "the probe child x did not answer within 5s and was killed"}
			},
			status: map[string]Status{IDListener: Unknown, IDUnderListener: Unknown, IDWaitKillableRecv: Unknown, IDSyncWakeUp: Unknown},
			notes:  map[string]string{IDListener: "did not answer"},
			reason: "the listener probe failed",
		},
		{
			name: "probe failed, ptrace disabled", backend: "none",
			change: func(f *facts) { f.probe = ListenerProbe{Error: "boom"}; f.ptraceScope = 3 },
			reason: "paddock cannot enforce here: the listener probe failed (boom)",
		},
		{
			name: "no seccomp at all", backend: "none",
			change: func(f *facts) {
				f.actions, f.actionsErr = nil, &os.PathError{Op: "open", Path: actionsPath, Err: os.ErrNotExist}
				f.probe = ListenerProbe{ListenerErrno: "EINVAL", ListenerError: "invalid argument"}
			},
			status: map[string]Status{IDSeccompActions: Missing, IDUserNotif: Unknown, IDRetTrace: Unknown},
			reason: "SECCOMP_RET_TRACE is unknown",
		},
		{
			name: "seccomp refused by a filter above", backend: "none",
			change: func(f *facts) {
				f.probe = ListenerProbe{ListenerErrno: "EPERM", ListenerError: "operation not permitted"}
				f.pidfdGetfd = fmt.Errorf("pidfd_getfd(self, 3): %w", unix.EPERM)
			},
			status: map[string]Status{IDListener: Missing, IDUnderListener: Unknown, IDPidfdGetfd: Missing},
			notes:  map[string]string{IDPidfdGetfd: "refused", IDListener: "EPERM"},
			reason: "falls back to ptrace only for EBUSY or EINVAL",
		},
		{
			name: "arm64, no config, cgroup v1, unreadable yama", backend: "seccomp",
			change: func(f *facts) {
				f.arch, f.machine, f.ia32 = "arm64", "aarch64", ia32{}
				f.cgroup2Err = &os.PathError{Op: "stat", Path: cgroup2Path, Err: os.ErrNotExist}
				f.ptraceScopeErr = errors.New("permission denied")
				f.subreaper = fmt.Errorf("prctl(PR_GET_CHILD_SUBREAPER): %w", unix.EINVAL)
			},
			status: map[string]Status{IDIA32Emulation: NotApplicable, IDCgroup2: Missing, IDPtrace: Unknown, IDChildSubreaper: Missing},
			notes:  map[string]string{IDChildSubreaper: "paddock run cannot start"},
		},
		{
			name: "amd64, config unreadable", backend: "seccomp",
			change: func(f *facts) { f.ia32 = ia32{from: "open /proc/config.gz: no such file or directory"} },
			status: map[string]Status{IDIA32Emulation: Unknown},
			notes:  map[string]string{IDIA32Emulation: "/proc/config.gz"},
		},
		{
			name: "garbled release", backend: "seccomp",
			change: func(f *facts) { f.release = "weird" },
			status: map[string]Status{IDKernel: Unknown, IDNotifContinue: Unknown},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := good()
			tc.change(&f)
			r := build(f)
			checkShape(t, r)
			for id, want := range tc.status {
				if got := item(t, r, id); got.Status != want {
					t.Errorf("%s: %s, want %s: %+v", id, got.Status, want, got)
				}
			}
			for id, want := range tc.notes {
				if got := item(t, r, id); !strings.Contains(got.Note, want) {
					t.Errorf("%s: note %q lacks %q", id, got.Note, want)
				}
			}
			if r.Backend.Name != tc.backend || !strings.Contains(r.Backend.Reason, tc.reason) {
				t.Errorf("backend %+v, want %s with a reason containing %q", r.Backend, tc.backend, tc.reason)
			}
		})
	}
}

// TestProbeHere probes this very process. Where the kernel has user
// notification and the test runs under no seccomp filter at all, nothing
// can hold a listener above it, so auto must pick seccomp.
func TestProbeHere(t *testing.T) {
	r := Probe(os.Args[0])
	checkShape(t, r)
	t.Logf("backend %s: %s", r.Backend.Name, r.Backend.Reason)
	for _, it := range r.Items {
		t.Logf("%-8s %-22s %s -- %s", it.Status, it.Name, it.Value, it.Note)
	}
	if r.Probe.Error != "" {
		t.Fatalf("the listener probe failed: %s", r.Probe.Error)
	}
	if r.Kernel == "" || r.Arch != runtime.GOARCH {
		t.Errorf("kernel %q, arch %q", r.Kernel, r.Arch)
	}
	for _, id := range []string{IDPidfdOpen, IDPidfdSendSignal, IDPidfdGetfd, IDChildSubreaper} {
		// Everything a 5.9+ kernel has, unless a filter above refuses it.
		if it := item(t, r, id); it.Status != OK && !strings.Contains(it.Note, "refused") {
			t.Errorf("%s: %+v", id, it)
		}
	}
	needUserNotif(t)
	mode, filters, err := procfs.FS{Root: "/proc/self/task"}.Seccomp(unix.Gettid())
	if err != nil {
		t.Fatal(err)
	}
	if mode != 0 {
		t.Skipf("this test runs under %d seccomp filter(s); one of them may hold a listener", filters)
	}
	if r.Backend.Name != "seccomp" || !r.Probe.Listener {
		t.Errorf("no filter above this process and user_notif available, yet backend %+v, probe %+v", r.Backend, r.Probe)
	}
	for _, id := range []string{IDListener, IDUnderListener, IDUserNotif, IDUnderSeccomp} {
		if it := item(t, r, id); it.Status != OK {
			t.Errorf("%s: %+v", id, it)
		}
	}
}

// TestProbeUnderListener probes from a process that already holds a
// listener: the probe child inherits it, installing another fails with
// EBUSY, and auto falls back to ptrace.
func TestProbeUnderListener(t *testing.T) {
	needUserNotif(t)
	cmd := reexec.Command(listenerChild)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v\n%s%s", err, out, stderr.Bytes())
	}
	var h helperOut
	if err := json.Unmarshal(out, &h); err != nil {
		t.Fatalf("helper printed %q: %v", out, err)
	}
	if h.Skip != "" {
		t.Skipf("needs a seccomp listener in the helper: %v", h.Skip)
	}
	r := *h.Report
	checkShape(t, r)
	t.Logf("backend %s: %s", r.Backend.Name, r.Backend.Reason)
	if r.Probe.Error != "" || r.Probe.Listener || r.Probe.ListenerErrno != "EBUSY" {
		t.Fatalf("probe under a listener: %+v, want listener EBUSY", r.Probe)
	}
	if it := item(t, r, IDUnderListener); it.Status != Missing || !strings.Contains(it.Value, "EBUSY") {
		t.Errorf("under_listener: %+v", it)
	}
	if it := item(t, r, IDListener); it.Status != Missing || it.Value != "no (EBUSY)" {
		t.Errorf("listener: %+v", it)
	}
	if it := item(t, r, IDUnderSeccomp); it.Value == "none" {
		t.Errorf("under_seccomp: %+v, want the helper's filter counted", it)
	}
	want := "ptrace"
	if it := item(t, r, IDRetTrace); it.Status != OK {
		want = "none"
	}
	if it := item(t, r, IDPtrace); it.Status != OK {
		want = "none"
	}
	if r.Backend.Name != want || !strings.Contains(r.Backend.Reason, "EBUSY") {
		t.Errorf("backend %+v, want %s for EBUSY", r.Backend, want)
	}
}

// TestProbeFailureIsNotSuccess runs probes that cannot answer: each is a
// failed probe, never a listener.
func TestProbeFailureIsNotSuccess(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name, self, want string
	}{
		{"missing binary", filepath.Join(dir, "nope"), "no such file"},
		{"exits 1", script("fail", "echo boom >&2; exit 1"), "exit status 1 (stderr: boom)"},
		{"prints nothing", script("silent", "exit 0"), "printed no result"},
		{"prints something else", script("other", "echo usage: paddock"), "printed no result"},
		{"prints an empty object", script("empty", "echo '{}'"), "incomplete result"},
		{"claims its own error", script("claims", `echo '{"error":"x","listener":true}'`), "incomplete result"},
	}
	if !testing.Short() {
		cases = append(cases, struct{ name, self, want string }{"hangs", script("hang", "exec sleep 60"), "did not answer within 5s"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			r := Probe(tc.self)
			if time.Since(start) > probeTimeout+3*time.Second {
				t.Errorf("Probe took %v", time.Since(start))
			}
			checkShape(t, r)
			if !strings.Contains(r.Probe.Error, tc.want) || r.Probe.Listener {
				t.Errorf("probe %+v, want an error containing %q", r.Probe, tc.want)
			}
			if it := item(t, r, IDListener); it.Status != Unknown || it.Value != "probe failed" {
				t.Errorf("listener: %+v", it)
			}
			if r.Backend.Name == "seccomp" {
				t.Errorf("backend %+v from a failed probe", r.Backend)
			}
		})
	}
}

// TestProbeChildDoesNotProbeAgain: a probe child whose binary runs its
// ordinary main instead of the probe must not start another.
func TestProbeChildDoesNotProbeAgain(t *testing.T) {
	t.Setenv(envProbeChild, "1")
	r := Probe(os.Args[0])
	if !strings.Contains(r.Probe.Error, "does not serve features.ProbeChild") {
		t.Errorf("probe %+v", r.Probe)
	}
}

// TestNeed checks when a missing feature is merely absent (a test skips)
// and when the kernel is new enough that it must be there (a test fails).
func TestNeed(t *testing.T) {
	for _, tc := range []struct {
		name     string
		change   func(f *facts)
		id       string
		ok       bool
		mustHave bool
	}{
		{name: "present", change: func(*facts) {}, id: IDPidfdGetfd, ok: true},
		{name: "absent on an old kernel", id: IDPidfdGetfd, change: func(f *facts) {
			f.release, f.pidfdGetfd = "5.4.0", fmt.Errorf("pidfd_getfd: %w", unix.ENOSYS)
		}},
		{name: "absent on a kernel that has it", id: IDPidfdGetfd, mustHave: true, change: func(f *facts) {
			f.pidfdGetfd = fmt.Errorf("pidfd_getfd: %w", unix.ENOSYS)
		}},
		{name: "refused by a filter above", id: IDPidfdGetfd, change: func(f *facts) {
			f.pidfdGetfd = fmt.Errorf("pidfd_getfd: %w", unix.EPERM)
		}},
		{name: "sync wake-up missing on 6.18", id: IDSyncWakeUp, mustHave: true, change: func(f *facts) {
			no := false
			f.probe.SyncWakeUp, f.probe.SyncWakeUpErrno = &no, "EINVAL"
		}},
		{name: "sync wake-up missing on 6.1", id: IDSyncWakeUp, change: func(f *facts) {
			no := false
			f.release, f.probe.SyncWakeUp, f.probe.SyncWakeUpErrno = "6.1.0", &no, "EINVAL"
		}},
		{name: "not probed is unknown, not missing", id: IDSyncWakeUp, change: func(f *facts) {
			f.probe = ListenerProbe{Error: errNotProbed}
		}},
		{name: "environmental: another listener", id: IDListener, change: func(f *facts) {
			f.probe = ListenerProbe{ListenerErrno: "EBUSY", ListenerError: "busy"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := good()
			tc.change(&f)
			err := build(f).Need(tc.id)
			if (err == nil) != tc.ok {
				t.Fatalf("Need(%s) = %v, want ok %v", tc.id, err, tc.ok)
			}
			if err == nil {
				return
			}
			var u *Unavailable
			if !errors.As(err, &u) || u.MustHave != tc.mustHave {
				t.Errorf("Need(%s) = %v (%+v), want MustHave %v", tc.id, err, u, tc.mustHave)
			}
		})
	}
	if err := build(good()).Need("no such id"); err == nil {
		t.Error("Need of an unknown id succeeded")
	}
}
