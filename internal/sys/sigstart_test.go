package sys

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMain answers for the test binary started by TestIgnoredAtStart: the
// mask IgnoredAtStart reads, on stdout.
func TestMain(m *testing.M) {
	if os.Getenv("PADDOCK_TEST_IGNORED_AT_START") == "1" {
		mask, err := IgnoredAtStart()
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString(strconv.FormatUint(mask, 16) + "\n")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestIgnoredAtStart: a process started by a shell after `trap "" SIG` on some
// signals reads exactly those as ignored at its start, though the Go
// runtime has replaced all but SIGHUP and SIGINT with its own handler, in
// a fixed and in a position-independent executable.
func TestIgnoredAtStart(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skipf("needs sh: %v", err)
	}
	// What this test's children start with ignored whatever the trap (the
	// suite run under nohup ignores SIGHUP): the kernel's SigIgn of a
	// program sh starts, which every case adds to what it traps.
	st, err := exec.Command(sh, "-c", "exec cat /proc/self/status").Output()
	if err != nil {
		t.Fatal(err)
	}
	var inherited uint64
	for _, line := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(line, "SigIgn:"); ok {
			if inherited, err = strconv.ParseUint(strings.TrimSpace(v), 16, 64); err != nil {
				t.Fatalf("SigIgn %q: %v", v, err)
			}
		}
	}
	for _, pie := range []bool{false, true} {
		t.Run("pie="+strconv.FormatBool(pie), func(t *testing.T) {
			// Built anew: the binary `go test` runs is linked without
			// a symbol table.
			bin := t.TempDir() + "/sys.test"
			args := []string{"test", "-c", "-o", bin}
			if pie {
				args = append(args, "-buildmode=pie")
			}
			build := exec.Command("go", append(args, ".")...)
			build.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := build.CombinedOutput(); err != nil {
				t.Skipf("needs a test binary with a symbol table (pie=%v): %v\n%s", pie, err, out)
			}
			for _, c := range []struct {
				trap string
				want uint64
			}{
				{"", 0},
				{"HUP INT", 1<<(unix.SIGHUP-1) | 1<<(unix.SIGINT-1)},
				{"PIPE QUIT TERM USR2 ALRM", 1<<(unix.SIGPIPE-1) | 1<<(unix.SIGQUIT-1) | 1<<(unix.SIGTERM-1) | 1<<(unix.SIGUSR2-1) | 1<<(unix.SIGALRM-1)},
			} {
				script := "exec \"$0\""
				if c.trap != "" {
					script = "trap '' " + c.trap + "; " + script
				}
				cmd := exec.Command(sh, "-c", script, bin)
				cmd.Env = append(os.Environ(), "PADDOCK_TEST_IGNORED_AT_START=1")
				var stderr strings.Builder
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("trap '' %s: %v\n%s%s", c.trap, err, out, stderr.String())
				}
				got, err := strconv.ParseUint(strings.TrimSpace(string(out)), 16, 64)
				if err != nil {
					t.Fatalf("trap '' %s: %q: %v", c.trap, out, err)
				}
				if want := c.want | inherited; got != want {
					t.Errorf("trap '' %s: IgnoredAtStart %016x, want %016x (%016x inherited)", c.trap, got, want, inherited)
				}
			}
		})
	}
}

// TestIgnoredAtStartStripped: a binary without a symbol table gives an
// error that says so, not a mask of nothing ignored.
func TestIgnoredAtStartStripped(t *testing.T) {
	bin := t.TempDir() + "/sys.test"
	build := exec.Command("go", "test", "-c", "-ldflags=-s", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Skipf("needs a stripped test binary: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PADDOCK_TEST_IGNORED_AT_START=1")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no symbol table") {
		t.Errorf("stripped binary: %v, %q; want an error saying it has no symbol table", err, out)
	}
}

// BenchmarkIgnoredAtStart: what reading the runtime's record costs each
// paddock start.
func BenchmarkIgnoredAtStart(b *testing.B) {
	if _, err := IgnoredAtStart(); err != nil {
		b.Skipf("needs a binary with a symbol table (go test -c): %v", err)
	}
	for b.Loop() {
		if _, err := IgnoredAtStart(); err != nil {
			b.Fatal(err)
		}
	}
}
