package features

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/btf"
	"github.com/paddock-dev/paddock/internal/sys"
)

// IDBPFLSM is the item that says whether BPF programs can be attached to
// LSM hooks here: what a backend deciding in the kernel needs (see
// docs/backends.md, "Decisions in the kernel").
const IDBPFLSM = "bpf_lsm"

// Where the BPF LSM facts are read.
const (
	lsmPath        = "/sys/kernel/security/lsm"
	securityfsPath = "/sys/kernel/security"
	// privateBPFPath is a sysctl that stock kernels lack; the kernels of
	// this project's machines have it, and refuse trampoline programs.
	privateBPFPath = "/proc/sys/kernel/init_private_bpf"
	// lsmHook is the hook the probe attaches its program to.
	lsmHook = "bpf_lsm_task_kill"
)

// Capabilities a BPF LSM program's loader needs (linux/capability.h; the
// x/sys names lack CAP_BPF on some platforms).
const (
	capPerfmon = 38
	capBPF     = 39
)

// bpfLSM is what was found out about BPF LSM. Without tried, nothing was
// (ProbeLocal).
type bpfLSM struct {
	tried bool
	// lsms is the active LSM list and lsmFrom where it was read; lsmErr
	// says why it could not be (securityfs not mounted).
	lsms    []string
	lsmFrom string
	lsmErr  error
	btfErr  error // kernel BTF or the hook's id in it
	// caps: CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN of this process.
	capBPF, capPerfmon, capSysAdmin bool
	loadErr, attachErr              error
	privateBPF                      string // the value of privateBPFPath, "" without it
}

// gatherBPFLSM tries what a backend in the kernel would do: read the
// active LSM list, find the task_kill hook in the kernel's BTF, load a
// program that allows everything (r0 = 0) for that hook and attach it for
// an instant.
func gatherBPFLSM() bpfLSM {
	b := bpfLSM{tried: true}
	if status, err := os.ReadFile("/proc/self/status"); err == nil {
		if mask, ok := capEff(status); ok {
			b.capBPF, b.capPerfmon, b.capSysAdmin = mask&(1<<capBPF) != 0, mask&(1<<capPerfmon) != 0, mask&(1<<unix.CAP_SYS_ADMIN) != 0
		}
	}
	if v, err := os.ReadFile(privateBPFPath); err == nil {
		b.privateBPF = strings.TrimSpace(string(v))
	}
	if v, err := os.ReadFile(lsmPath); err == nil {
		b.lsms, b.lsmFrom = strings.Split(strings.TrimSpace(string(v)), ","), lsmPath
	} else {
		b.lsmErr = err
	}
	id, err := btf.FuncID(lsmHook)
	if err != nil {
		b.btfErr = err
		return b
	}
	if !b.loaderCaps() {
		return b
	}
	prog, err := sys.BPFProgLoadBTF(sys.BPFProgTypeLSM, sys.BPFLSMMac, id, sys.BPFReturnZero())
	if err != nil {
		b.loadErr = fmt.Errorf("bpf(BPF_PROG_LOAD) of an LSM program for %s: %w", lsmHook, err)
		return b
	}
	defer unix.Close(prog)
	l, err := sys.BPFLinkCreate(prog, sys.BPFLSMMac)
	if err != nil {
		b.attachErr = fmt.Errorf("bpf(BPF_LINK_CREATE) of that program: %w", err)
		return b
	}
	unix.Close(l)
	return b
}

// loaderCaps reports whether this process may load and attach an LSM
// program: CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN, which covers both.
func (b bpfLSM) loaderCaps() bool { return b.capSysAdmin || (b.capBPF && b.capPerfmon) }

// active reports whether bpf is in the active LSM list, and whether that
// is known.
func (b bpfLSM) active() (on, known bool) {
	if b.lsms == nil {
		return false, false
	}
	for _, l := range b.lsms {
		if l == "bpf" {
			return true, true
		}
	}
	return false, true
}

// bpfLSMItem is the item for b; backend is what auto picks instead.
func bpfLSMItem(b bpfLSM, backend string) Item {
	it := Item{ID: IDBPFLSM, Name: "BPF LSM"}
	instead := fmt.Sprintf("; paddock decides in user space (no backend of paddock's attaches to LSM hooks yet), and auto picks %s", backend)
	on, known := b.active()
	switch {
	case !b.tried:
		it.Status, it.Value, it.Note = Unknown, "not probed", "ProbeLocal does not load BPF programs"
	case b.btfErr != nil && errors.Is(b.btfErr, os.ErrNotExist):
		it.Status, it.Value = Missing, "no kernel BTF"
		it.Note = "no " + btf.VmlinuxPath + " (CONFIG_DEBUG_INFO_BTF): LSM programs attach to a hook by its BTF id" + instead
	case b.btfErr != nil && errors.Is(b.btfErr, btf.ErrNotFound):
		it.Status, it.Value = Missing, "no "+lsmHook
		it.Note = "the kernel's BTF has no " + lsmHook + ": it was built without CONFIG_BPF_LSM" + instead
	case b.btfErr != nil:
		it.Status, it.Value, it.Note = Unknown, "unknown", b.btfErr.Error()+instead
	case known && !on:
		it.Status, it.Value = Missing, "bpf not in the active LSMs ("+strings.Join(b.lsms, ",")+")"
		it.Note = "programs would load but never run: boot with lsm=" + strings.Join(append(append([]string(nil), b.lsms...), "bpf"), ",") + " (the kernel has CONFIG_BPF_LSM)" + instead
	case !b.loaderCaps():
		it.Status, it.Value = Missing, "no CAP_BPF and CAP_PERFMON"
		it.Note = "loading an LSM program needs CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN), and this process lacks them: run paddock doctor as root to see whether root could" + instead
	case b.loadErr != nil:
		it.Status, it.Value = Missing, "refused: "+errValue(b.loadErr)
		it.Note = b.loadErr.Error() + ", although this process holds CAP_BPF and CAP_PERFMON"
		if errors.Is(b.loadErr, unix.EPERM) {
			it.Note += ": this kernel forbids trampoline programs (LSM and fentry) to everyone"
			if b.privateBPF != "" {
				it.Note += " (it has the non-standard sysctl kernel.init_private_bpf, now " + b.privateBPF + ", which root cannot change)"
			}
		}
		it.Note += instead
	case b.attachErr != nil:
		it.Status, it.Value = Missing, "attach refused: "+errValue(b.attachErr)
		it.Note = b.attachErr.Error() + ": the kernel loads LSM programs but will not attach them (no BPF trampolines here?)" + instead
	case !known:
		it.Status, it.Value = Unknown, "an LSM program loaded and attached"
		it.Note = "but whether it would run is not known: " + securityfsPath + " is not mounted (mount -t securityfs securityfs " + securityfsPath + "), so the active LSM list cannot be read" + instead
	default:
		it.Status, it.Value = OK, "yes (bpf in the active LSMs; an LSM program loaded and attached)"
		it.Note = "paddock has no backend that uses it yet (docs/backends.md)"
	}
	return it
}
