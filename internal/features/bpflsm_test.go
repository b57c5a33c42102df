package features

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/btf"
)

func TestBPFLSMItem(t *testing.T) {
	// ready is a root process on a kernel where everything works.
	ready := func() bpfLSM {
		return bpfLSM{tried: true, lsms: []string{"lockdown", "capability", "landlock", "bpf"}, lsmFrom: lsmPath,
			capBPF: true, capPerfmon: true, capSysAdmin: true}
	}
	for _, tc := range []struct {
		name   string
		change func(*bpfLSM)
		status Status
		value  string // a substring of the value
		note   string // a substring of the note
	}{
		{"not probed", func(b *bpfLSM) { *b = bpfLSM{} }, Unknown, "not probed", "ProbeLocal"},
		{"works", func(*bpfLSM) {}, OK, "loaded and attached", "no backend that uses it yet"},
		{"no BTF", func(b *bpfLSM) { b.btfErr = fmt.Errorf("read: %w", fs.ErrNotExist) }, Missing, "no kernel BTF", "CONFIG_DEBUG_INFO_BTF"},
		{"no hook", func(b *bpfLSM) { b.btfErr = fmt.Errorf("x: %w", btf.ErrNotFound) }, Missing, "no bpf_lsm_task_kill", "without CONFIG_BPF_LSM"},
		{"bpf not active", func(b *bpfLSM) { b.lsms = []string{"lockdown", "capability", "apparmor"} }, Missing,
			"bpf not in the active LSMs (lockdown,capability,apparmor)", "boot with lsm=lockdown,capability,apparmor,bpf"},
		{"unprivileged", func(b *bpfLSM) { b.capBPF, b.capPerfmon, b.capSysAdmin = false, false, false }, Missing,
			"no CAP_BPF", "run paddock doctor as root"},
		{"CAP_BPF and CAP_PERFMON are enough", func(b *bpfLSM) { b.capSysAdmin = false }, OK, "loaded", ""},
		{"CAP_BPF alone is not", func(b *bpfLSM) { b.capSysAdmin, b.capPerfmon = false, false }, Missing, "no CAP_BPF", ""},
		{"load refused, PVM guest", func(b *bpfLSM) {
			b.loadErr = fmt.Errorf("bpf(BPF_PROG_LOAD): %w", unix.EPERM)
			b.privateBPF = "0"
		}, Missing, "refused: EPERM", "forbids trampoline programs (LSM and fentry) to everyone (it has the non-standard sysctl kernel.init_private_bpf, now 0"},
		{"load refused otherwise", func(b *bpfLSM) { b.loadErr = fmt.Errorf("bpf(BPF_PROG_LOAD): %w", unix.EINVAL) }, Missing, "refused: EINVAL", "although this process holds"},
		{"attach refused", func(b *bpfLSM) { b.attachErr = fmt.Errorf("bpf(BPF_LINK_CREATE): %w", unix.EOPNOTSUPP) }, Missing, "attach refused", "will not attach"},
		{"securityfs not mounted", func(b *bpfLSM) { b.lsms, b.lsmErr = nil, fs.ErrNotExist }, Unknown, "loaded and attached", "mount -t securityfs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := ready()
			tc.change(&b)
			it := bpfLSMItem(b, "seccomp")
			if it.ID != IDBPFLSM || it.Status != tc.status || !strings.Contains(it.Value, tc.value) || !strings.Contains(it.Note, tc.note) {
				t.Errorf("got %+v\nwant status %s, value with %q, note with %q", it, tc.status, tc.value, tc.note)
			}
			if it.Status != OK && !strings.Contains(it.Note, "auto picks seccomp") && tc.name != "not probed" {
				t.Errorf("the note of a %s item does not say what auto picks instead: %q", it.Status, it.Note)
			}
		})
	}
}
