package procfs

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
)

func TestParseCreds(t *testing.T) {
	full := "Name:\tsleep\nTgid:\t4301\nPid:\t4302\nUid:\t1000\t0\t0\t1000\nCapEff:\t0000000000000020\nNSpid:\t4302\t7\nNSpgid:\t4300\t5\nNSsid:\t4000\t0\nSeccomp:\t2\nSeccomp_filters:\t3\n"
	tests := []struct {
		name string
		in   string
		want Creds
		err  string // substring; "" = no error
	}{
		{"thread in a child PID namespace", full, Creds{Tgid: 4301, Uid: [4]uint32{1000, 0, 0, 1000}, CapEff: 0x20, NSpid: []int{4302, 7}, NSpgid: []int{4300, 5}, NSsid: []int{4000, 0}, SeccompFilters: 3}, ""},
		{"before NSpid and Seccomp_filters", "Tgid:\t9\nUid:\t0\t0\t0\t0\nCapEff:\t000001ffffffffff\n", Creds{Tgid: 9, CapEff: 0x1ffffffffff, NSpid: []int{9}}, ""},
		{"no Uid", "Tgid:\t9\nCapEff:\t0\n", Creds{}, "no Uid line"},
		{"three ids", "Tgid:\t9\nUid:\t1\t2\t3\nCapEff:\t0\n", Creds{}, "want 4 ids"},
		{"uid not a number", "Tgid:\t9\nUid:\t1\t2\tx\t4\nCapEff:\t0\n", Creds{}, `Uid "1\t2\tx\t4"`},
		{"no CapEff", "Tgid:\t9\nUid:\t1\t2\t3\t4\n", Creds{}, "no CapEff line"},
		{"CapEff not hex", "Tgid:\t9\nUid:\t1\t2\t3\t4\nCapEff:\tzz\n", Creds{}, `CapEff "zz"`},
		{"NSpid garbage", "Tgid:\t9\nUid:\t1\t2\t3\t4\nCapEff:\t0\nNSpid:\t9\t-1\n", Creds{}, "NSpid \"9\\t-1\": not a list of ids"},
		{"no Tgid", "Uid:\t1\t2\t3\t4\n", Creds{}, "no Tgid line"},
		{"supplementary groups", "Tgid:\t9\nUid:\t1\t1\t1\t1\nGid:\t5\t5\t5\t5\nGroups:\t27 100 \nCapEff:\t0\n", Creds{Tgid: 9, Uid: [4]uint32{1, 1, 1, 1}, Gid: [4]uint32{5, 5, 5, 5}, Groups: []uint32{27, 100}, NSpid: []int{9}}, ""},
		{"no supplementary groups", "Tgid:\t9\nUid:\t1\t1\t1\t1\nGroups:\t\nCapEff:\t0\n", Creds{Tgid: 9, Uid: [4]uint32{1, 1, 1, 1}, NSpid: []int{9}}, ""},
		{"groups garbage", "Tgid:\t9\nUid:\t1\t1\t1\t1\nGroups:\t27 x\nCapEff:\t0\n", Creds{}, `Groups "27 x"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseCreds([]byte(tc.in))
			if !errMatches(err, tc.err) {
				t.Fatalf("ParseCreds error %v, want %q", err, tc.err)
			}
			if tc.err != "" {
				return
			}
			if got.Tgid != tc.want.Tgid || got.Uid != tc.want.Uid || got.CapEff != tc.want.CapEff ||
				!slices.Equal(got.NSpid, tc.want.NSpid) || !slices.Equal(got.NSpgid, tc.want.NSpgid) ||
				!slices.Equal(got.NSsid, tc.want.NSsid) || got.SeccompFilters != tc.want.SeccompFilters ||
				got.Gid != tc.want.Gid || !slices.Equal(got.Groups, tc.want.Groups) {
				t.Errorf("ParseCreds = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestCredsOfSelf(t *testing.T) {
	c, err := Default().Creds(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if c.Tgid != os.Getpid() || c.Uid[0] != uint32(os.Getuid()) || c.Uid[1] != uint32(os.Geteuid()) {
		t.Errorf("Creds(self) = %+v; want tgid %d, uid %d, euid %d", c, os.Getpid(), os.Getuid(), os.Geteuid())
	}
	if _, err := Default().Creds(-3); err == nil {
		t.Error("Creds(-3) succeeded")
	}
}

func TestNamespace(t *testing.T) {
	self, err := Default().Namespace(0, "pid")
	if err != nil {
		t.Fatal(err)
	}
	mine, err := Default().Namespace(os.Getpid(), "pid")
	if err != nil || mine != self || self == 0 {
		t.Errorf("Namespace(self) = %d, Namespace(%d) = %d, %v: want the same inode", self, os.Getpid(), mine, err)
	}
	if _, err := Default().Namespace(os.Getpid(), "nosuch"); err == nil {
		t.Error("Namespace of an unknown kind succeeded")
	}
}

// TestPidNSWithin: a process is within its own PID namespace; a child in a
// PID namespace of its own is within the parent's, and the parent is not
// within the child's.
func TestPidNSWithin(t *testing.T) {
	fs := Default()
	self, err := fs.Namespace(0, "pid")
	if err != nil {
		t.Fatal(err)
	}
	if in, err := fs.PidNSWithin(os.Getpid(), self); !in || err != nil {
		t.Errorf("PidNSWithin(self, own namespace) = %v, %v; want true", in, err)
	}
	if _, err := fs.PidNSWithin(-5, self); !errors.Is(err, ErrNotFound) {
		t.Errorf("PidNSWithin(-5) = %v; want ErrNotFound", err)
	}
	cmd := exec.Command("sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	if err := cmd.Start(); err != nil {
		t.Skipf("needs a new PID namespace (root): %v", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	child, err := fs.Namespace(cmd.Process.Pid, "pid")
	if err != nil || child == self {
		t.Fatalf("the child's namespace: %d, %v (own %d)", child, err, self)
	}
	if in, err := fs.PidNSWithin(cmd.Process.Pid, self); !in || err != nil {
		t.Errorf("PidNSWithin(child, parent's namespace) = %v, %v; want true", in, err)
	}
	if in, err := fs.PidNSWithin(os.Getpid(), child); in || err != nil {
		t.Errorf("PidNSWithin(parent, child's namespace) = %v, %v; want false", in, err)
	}
}
