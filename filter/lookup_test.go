package filter

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestSyscallString(t *testing.T) {
	want := map[Syscall]string{
		Unknown: "unknown", Kill: "kill", Tkill: "tkill", Tgkill: "tgkill",
		RtSigqueueinfo: "rt_sigqueueinfo", RtTgsigqueueinfo: "rt_tgsigqueueinfo",
		PidfdSendSignal: "pidfd_send_signal", Ptrace: "ptrace", ProcessVMWritev: "process_vm_writev",
		PidfdGetfd: "pidfd_getfd", Execve: "execve", Execveat: "execveat", Reboot: "reboot",
		KexecLoad: "kexec_load", KexecFileLoad: "kexec_file_load",
		Syscall(-1): "Syscall(-1)", numSyscalls: "Syscall(" + strconv.Itoa(int(numSyscalls)) + ")",
	}
	for s, w := range want {
		if got := s.String(); got != w {
			t.Errorf("Syscall(%d).String() = %q, want %q", int(s), got, w)
		}
	}
}

func TestSignalArg(t *testing.T) {
	want := map[Syscall]int{Kill: 1, Tkill: 1, Tgkill: 2, RtSigqueueinfo: 1, RtTgsigqueueinfo: 2, PidfdSendSignal: 1}
	for s := Unknown; s <= numSyscalls; s++ {
		i, ok := s.SignalArg()
		w, wok := want[s]
		if ok != wok || i != w {
			t.Errorf("%s.SignalArg() = %d, %v; want %d, %v", s, i, ok, w, wok)
		}
	}
}

func TestSignalsTargets(t *testing.T) {
	var sigs, others, channels, affecting []Syscall
	isAffecting := func(s Syscall) bool { return s >= Prlimit64 && s <= Vhangup }
	for s := Syscall(1); s < numSyscalls; s++ {
		if _, ok := s.SignalArg(); ok {
			sigs = append(sigs, s)
		} else if _, _, ok := s.ArgFilter(); ok {
			channels = append(channels, s)
		} else if isAffecting(s) {
			affecting = append(affecting, s)
		} else if s == Seccomp {
			// trapped for a listener only (TestProgram)
		} else if optsBase.trapped(s) {
			others = append(others, s)
		}
	}
	if want := []Syscall{Kill, Tkill, Tgkill, RtSigqueueinfo, RtTgsigqueueinfo, PidfdSendSignal}; !equalSet(sigs, want) {
		t.Errorf("the signal syscalls are %v, want %v", sigs, want)
	}
	// What acts on another process without a signal, always trapped.
	if want := []Syscall{Ptrace, ProcessVMWritev, PidfdGetfd}; !equalSet(others, want) {
		t.Errorf("the syscalls always trapped besides signals are %v, want %v", others, want)
	}
	if !equalSet(Affecting(), affecting) {
		t.Errorf("Affecting = %v, want %v", Affecting(), affecting)
	}
	for _, s := range affecting {
		if !optsBase.trapped(s) {
			t.Errorf("%s is not trapped by the base options", s)
		}
	}
	if !equalSet(Channels(), channels) {
		t.Errorf("Channels = %v, want the syscalls trapped by argument: %v", Channels(), channels)
	}
}

func equalSet(a, b []Syscall) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[Syscall]bool{}
	for _, s := range a {
		m[s] = true
	}
	for _, s := range b {
		if !m[s] {
			return false
		}
	}
	return true
}

// TestTables compares the package's tables with the independently written
// expectations, both ways, through Lookup.
func TestTables(t *testing.T) {
	if len(host.tables()) != len(wantTables) {
		t.Fatalf("package has %d ABIs, tests expect %d", len(host.tables()), len(wantTables))
	}
	for i, w := range wantTables {
		got := host.tables()[i].abi
		want := ABI{Name: w.name, Arch: w.arch, X32: w.x32, Compat: w.compat}
		if got != want {
			t.Errorf("ABI %d = %+v, want %+v", i, got, want)
		}
		for s := Syscall(1); s < numSyscalls; s++ {
			n, has := w.nrs[s]
			if !has {
				// Nothing may map to it (i386 has no kexec_file_load).
				for m := uint32(0); m < 1200; m++ {
					if got, _, ok := Lookup(w.arch, w.nr(m)); ok && got == s {
						if _, leg := w.legacy[s]; !leg {
							t.Errorf("%s: Lookup(nr %d) = %s, which this ABI does not have", w.name, m, s)
						}
					}
				}
				continue
			}
			gotS, abi, ok := Lookup(w.arch, w.nr(n))
			if !ok || gotS != s || abi != want {
				t.Errorf("Lookup(%s, %d) = %s, %+v, %v; want %s, %+v, true", w.name, n, gotS, abi, ok, s, want)
			}
		}
		for s, n := range w.legacy {
			if gotS, _, ok := Lookup(w.arch, w.nr(n)); !ok || gotS != s {
				t.Errorf("Lookup(%s, legacy %d) = %s, %v; want %s", w.name, n, gotS, ok, s)
			}
		}
		for name, n := range w.untrapped {
			if gotS, _, ok := Lookup(w.arch, w.nr(n)); ok {
				t.Errorf("Lookup(%s, %s=%d) = %s, want not found", w.name, name, n, gotS)
			}
		}
	}
}

func TestLookupEdges(t *testing.T) {
	native := wantTables[0]
	for _, arch := range foreignArches {
		if s, abi, ok := Lookup(arch, int32(native.nrs[Kill])); ok || s != Unknown || abi != (ABI{}) {
			t.Errorf("Lookup(foreign arch %#x) = %s, %+v, %v; want unknown, zero ABI, false", arch, s, abi, ok)
		}
	}
	for _, nr := range []int32{-1, int32(^uint32(0) >> 1), int32(native.nrs[Kill] | 0x10000)} {
		if s, _, ok := Lookup(native.arch, nr); ok {
			t.Errorf("Lookup(%s, %#x) = %s, want not found", native.name, uint32(nr), s)
		}
	}
	for _, w := range wantTables {
		if !w.x32 {
			continue
		}
		// Any high bit besides the x32 bit spoils the number.
		for _, nr := range []uint32{0x80000000 | x32Bit | w.nrs[Kill], x32Bit | 0x100 | w.nrs[Kill]} {
			if s, abi, ok := Lookup(w.arch, int32(nr)); ok || abi.Name != w.name {
				t.Errorf("Lookup(%s, %#x) = %s, %s, %v; want not found in %s", w.name, nr, s, abi.Name, ok, w.name)
			}
		}
		// Without the bit, an x32-only number is nothing.
		if s, abi, ok := Lookup(w.arch, int32(w.nrs[Ptrace])); ok || abi.X32 {
			t.Errorf("Lookup(%#x, %d) = %s, %+v, %v; the x32 ptrace number without the x32 bit is not a syscall", w.arch, w.nrs[Ptrace], s, abi, ok)
		}
	}
}

func TestPointerSize(t *testing.T) {
	for _, w := range wantTables {
		_, abi, _ := Lookup(w.arch, w.nr(0))
		want := 8
		if w.x32 || w.compat {
			want = 4
		}
		if got := abi.PointerSize(); got != want {
			t.Errorf("%s: PointerSize = %d, want %d", w.name, got, want)
		}
	}
}

// TestTablesMatchXSys checks every table that has a golang.org/x/sys/unix
// counterpart (x32 has none) against that file's SYS_* numbers, read from
// the module's source, so the compat tables get a second source too.
func TestTablesMatchXSys(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "golang.org/x/sys").Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		t.Skipf("needs the golang.org/x/sys source (go list -m): %v", err)
	}
	re := regexp.MustCompile(`(?m)^\s*(SYS_\w+)\s*=\s*(\d+)\s*$`)
	for _, w := range wantTables {
		if w.xsys == "" {
			continue
		}
		src, err := os.ReadFile(filepath.Join(dir, "unix", "zsysnum_linux_"+w.xsys+".go"))
		if err != nil {
			t.Skipf("needs golang.org/x/sys source: %v", err)
		}
		sys := map[string]uint32{}
		for _, m := range re.FindAllStringSubmatch(string(src), -1) {
			n, _ := strconv.ParseUint(m[2], 10, 32)
			sys[m[1]] = uint32(n)
		}
		var tab *table
		for _, tt := range host.tables() {
			if tt.abi.Name == w.name {
				tab = tt
			}
		}
		for s := Syscall(1); s < numSyscalls; s++ {
			name := "SYS_" + strings.ToUpper(s.String())
			xn, inX := sys[name]
			n, inT := tab.nrs[s]
			if inX != inT || xn != n {
				t.Errorf("%s %s: table %d (present %v), x/sys %s %d (present %v)", w.name, s, n, inT, name, xn, inX)
			}
		}
	}
}
