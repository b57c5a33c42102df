package procfs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/ptytest"
)

func TestParseStat(t *testing.T) {
	tail := " 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
	tests := []struct {
		name    string
		in      string
		want    Stat
		wantErr bool
	}{
		{"plain", "42 (sleep) S 7 42 7 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 987654 1000 2" + tail,
			Stat{Pid: 42, Comm: "sleep", State: 'S', PPid: 7, Pgrp: 42, Session: 7, Flags: 4194560, StartTime: 987654}, false},
		{"on a terminal", "42 (bash) S 7 42 42 34821 42 4194560 1 2 3 4 5 6 7 8 20 0 1 0 987654 1000 2" + tail,
			Stat{Pid: 42, Comm: "bash", State: 'S', PPid: 7, Pgrp: 42, Session: 42, TtyNr: 34821, Flags: 4194560, StartTime: 987654}, false},
		{"comm with spaces and parens", "9 (a) b (c) d) R 1 9 9 0 -1 2097216 0 0 0 0 0 0 0 0 20 0 1 0 55 0 0" + tail,
			Stat{Pid: 9, Comm: "a) b (c) d", State: 'R', PPid: 1, Pgrp: 9, Session: 9, Flags: 2097216, StartTime: 55}, false},
		{"no comm", "9 sleep S 1", Stat{}, true},
		{"too short", "9 (x) S 1 2 3", Stat{}, true},
		{"bad ppid", "9 (x) S z 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 55 0 0" + tail, Stat{}, true},
		{"empty", "", Stat{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseStat([]byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if !tc.wantErr && got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestKernelThread(t *testing.T) {
	if !(Stat{Flags: PFKthread}).KernelThread() || (Stat{Flags: 0x400100}).KernelThread() {
		t.Fatal("KernelThread misreads PF_KTHREAD")
	}
}

func TestParseFdinfoPid(t *testing.T) {
	tests := []struct {
		in   string
		want int
		err  error
	}{
		{"pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t1\nPid:\t1234\nNSpid:\t1234\n", 1234, nil},
		{"pos:\t0\nPid:\t-1\n", -1, nil},
		{"pos:\t0\nflags:\t0100002\n", 0, ErrNotPidfd},
	}
	for _, tc := range tests {
		got, err := ParseFdinfoPid([]byte(tc.in))
		if !errors.Is(err, tc.err) || got != tc.want {
			t.Errorf("ParseFdinfoPid(%q) = %d, %v; want %d, %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestParseStatus(t *testing.T) {
	tests := []struct {
		name          string
		in            string
		tgid          int
		tgidErr       string // substring; "" = no error
		mode, filters int
		seccompErr    string
	}{
		{"thread of 4301", "Name:\tbash\nTgid:\t4301\nPid:\t4302\nSeccomp:\t2\nSeccomp_filters:\t1\n", 4301, "", 2, 1, ""},
		{"no filters line (before 5.9)", "Tgid:\t7\nSeccomp:\t0\n", 7, "", 0, 0, ""},
		{"escaped name cannot forge a line", "Name:\tx\\nTgid:\t1\nTgid:\t99\nSeccomp:\t2\n", 99, "", 2, 0, ""},
		{"no lines", "Name:\tx\n", 0, "no Tgid line", 0, 0, "no Seccomp line"},
		{"not numbers", "Tgid:\tx\nSeccomp:\ty\n", 0, `Tgid "x": invalid syntax`, 0, 0, `Seccomp "y": invalid syntax`},
		{"zero tgid", "Tgid:\t0\nSeccomp:\t2\nSeccomp_filters:\tz\n", 0, "Tgid 0: not a process id", 0, 0, `Seccomp_filters "z"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseTgid([]byte(tc.in))
			if !errMatches(err, tc.tgidErr) || got != tc.tgid {
				t.Errorf("ParseTgid = %d, %v; want %d, error %q", got, err, tc.tgid, tc.tgidErr)
			}
			mode, filters, err := ParseSeccomp([]byte(tc.in))
			if !errMatches(err, tc.seccompErr) || mode != tc.mode || filters != tc.filters {
				t.Errorf("ParseSeccomp = %d, %d, %v; want %d, %d, error %q", mode, filters, err, tc.mode, tc.filters, tc.seccompErr)
			}
		})
	}
}

// errMatches reports whether err is nil when want is "", else holds want.
func errMatches(err error, want string) bool {
	if want == "" {
		return err == nil
	}
	return err != nil && strings.Contains(err.Error(), want)
}

func TestParseStatErrorsAreBounded(t *testing.T) {
	long := strings.Repeat("1", 100000)
	for _, in := range []string{
		long + " (x) S 1 1 1",
		"1 (x) S " + long + " 1 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0",
		"1 (x) S 1 1 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 " + long, // field 22
	} {
		_, err := ParseStat([]byte(in))
		if err == nil || len(err.Error()) > 300 {
			t.Errorf("ParseStat of %d bytes: error of %d bytes: %.120v", len(in), len(fmt.Sprint(err)), err)
		}
	}
}

func TestParseCmdline(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"sleep\x0030\x00", []string{"sleep", "30"}},
		{"sh\x00-c\x00\x00", []string{"sh", "-c"}},
		{"\x00a\x00\x00b", []string{"", "a", "", "b"}},
		{"rewritten by setproctitle", []string{"rewritten by setproctitle"}},
		{"\x00\x00", nil},
		{"", nil},
	}
	for _, tc := range tests {
		if got := ParseCmdline([]byte(tc.in)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseCmdline(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRealProc(t *testing.T) {
	fs := Default()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	st, err := fs.Stat(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if st.PPid != os.Getpid() || st.Comm != "sleep" || st.StartTime == 0 {
		t.Fatalf("stat of child = %+v, want ppid %d comm sleep", st, os.Getpid())
	}
	tgid, err := fs.Tgid(cmd.Process.Pid)
	if err != nil || tgid != cmd.Process.Pid {
		t.Fatalf("Tgid = %d, %v", tgid, err)
	}
	members, err := fs.GroupMembers(st.Pgrp)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range members {
		found = found || m.Pid == cmd.Process.Pid
	}
	if !found {
		t.Fatalf("group %d members %v lack child %d", st.Pgrp, members, cmd.Process.Pid)
	}
	args, err := fs.Cmdline(cmd.Process.Pid, 4096)
	if err != nil || len(args) != 2 || args[1] != "30" {
		t.Fatalf("Cmdline = %q, %v", args, err)
	}
	if _, err := fs.Stat(1 << 30); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Stat of absent pid: err = %v, want ErrNotFound", err)
	}
	// This test process's threads: its main thread and the locked one are
	// among them.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tids, err := fs.Threads(os.Getpid())
	if err != nil || !slices.Contains(tids, os.Getpid()) || !slices.Contains(tids, unix.Gettid()) {
		t.Fatalf("Threads(self) = %v, %v; want %d and %d among them", tids, err, os.Getpid(), unix.Gettid())
	}
	if _, err := fs.Threads(1 << 30); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Threads of absent pid: err = %v, want ErrNotFound", err)
	}
}

func TestFdPidOfProcDirAndPidfd(t *testing.T) {
	fs := Default()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	dir, err := os.Open("/proc/" + strconv.Itoa(pid))
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Skipf("needs pidfd_open: %v", err)
	}
	defer unix.Close(pidfd)
	plain, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	self := os.Getpid()
	if got, err := fs.FdPid(self, int(dir.Fd())); err != nil || got != pid {
		t.Errorf("FdPid(/proc/%d dir) = %d, %v; want %d", pid, got, err, pid)
	}
	if got, err := fs.FdPid(self, pidfd); err != nil || got != pid {
		t.Errorf("FdPid(pidfd) = %d, %v; want %d", got, err, pid)
	}
	if _, err := fs.FdPid(self, int(plain.Fd())); !errors.Is(err, ErrNotPidfd) {
		t.Errorf("FdPid(/dev/null) err = %v, want ErrNotPidfd", err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if got, err := fs.FdPid(self, int(dir.Fd())); err != nil || got != -1 {
		t.Errorf("FdPid(dir of reaped process) = %d, %v; want -1", got, err)
	}
	if got, err := fs.FdPid(self, pidfd); err != nil || got != -1 {
		t.Errorf("FdPid(pidfd of reaped process) = %d, %v; want -1", got, err)
	}
}

// TestTerminalHolders: a process whose controlling terminal is a pty is
// listed among its holders, with tty_nr the pty's st_rdev; another pty
// has none.
func TestTerminalHolders(t *testing.T) {
	_, slave := ptytest.Open(t)
	_, other := ptytest.Open(t)
	cmd := exec.Command("sleep", "30")
	cmd.Stdin = slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	rdev := func(f *os.File) uint64 {
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil {
			t.Fatal(err)
		}
		return st.Rdev
	}
	fs := Default()
	holders, err := fs.TerminalHolders(rdev(slave))
	if err != nil {
		t.Fatal(err)
	}
	if len(holders) != 1 || holders[0].Pid != cmd.Process.Pid || holders[0].TtyNr != rdev(slave) {
		t.Errorf("holders of the pty = %+v, want only sleep %d", holders, cmd.Process.Pid)
	}
	if holders, err := fs.TerminalHolders(rdev(other)); err != nil || len(holders) != 0 {
		t.Errorf("holders of an unused pty = %+v, %v; want none", holders, err)
	}
	if holders, err := fs.TerminalHolders(0); err != nil || len(holders) != 0 {
		t.Errorf("holders of no terminal = %d processes, %v; want none", len(holders), err)
	}
}

// TestPidsInNumberOrder: a listing of /proc is in number order, so that
// what is listed from it (the owned processes a message names) is too;
// the directory's own order is the names', 10000 before 9993.
func TestPidsInNumberOrder(t *testing.T) {
	root := t.TempDir()
	for _, name := range []string{"10000", "9993", "1", "self", "200", "net"} {
		if err := os.Mkdir(filepath.Join(root, name), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	got, err := FS{Root: root}.Pids()
	if want := []int{1, 200, 9993, 10000}; err != nil || !slices.Equal(got, want) {
		t.Errorf("Pids() = %v, %v; want %v", got, err, want)
	}
}
