package test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/ptytest"
)

// nobodyOnPty starts `paddock run ARGS...` as nobody, leading the session
// of a new pty that nobody owns: a user's own terminal, which an agent of
// the same user may open by its path. The journal goes to dir (nobodyDir).
func nobodyOnPty(t *testing.T, b backend, dir string, args ...string) *onPty {
	t.Helper()
	master, slave := ptytest.Open(t)
	if err := os.Chown(slave.Name(), 65534, -1); err != nil {
		t.Fatalf("give the terminal to nobody: %v", err)
	}
	journal := filepath.Join(dir, "j.jsonl")
	full := append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", bins.paddock, "run", "--backend", string(b),
		"--journal", journal, "--log-format", "json"}, args...)
	cmd := exec.Command("setpriv", full...)
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_STATE_HOME="+dir, "XDG_RUNTIME_DIR=", "TMPDIR="+dir,
		"AGENTHELPER="+bins.helper)
	return startCmdOnPty(t, cmd, journal, master, slave)
}

// terminalState reads what everyone on terminal f shares: its line
// discipline and whether it is in exclusive mode.
func terminalState(t *testing.T, f *os.File) (ldisc, excl int) {
	t.Helper()
	ldisc, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGETD)
	if err != nil {
		t.Fatalf("TIOCGETD: %v", err)
	}
	excl, err = unix.IoctlGetInt(int(f.Fd()), unix.TIOCGEXCL)
	if err != nil {
		t.Fatalf("TIOCGEXCL: %v", err)
	}
	return ldisc, excl
}

// terminalControlRefused: an agent of the user's own uid opens the user's
// terminal by its path (from paddock's tty_nr) and tries what leaves it
// dead for the user's shell: output stopped (TCXONC TCOOFF), exclusive
// mode (TIOCEXCL: later opens fail with EBUSY), line discipline N_NULL
// (TIOCSETD: nothing read or written any more), and the settings and
// window size under the shell. Each is refused with EPERM, paddock's
// message and a journal record (rule terminal_control), and paddock exits
// with the terminal as it was; the same calls on the agent's own pty
// (/dev/tty) and on a pty it opened itself succeed. Agent and paddock run
// as nobody, the terminal is nobody's.
func terminalControlRefused(t *testing.T, b backend) {
	b.require(t)
	requireBash(t)
	dir := nobodyDir(t)
	p := nobodyOnPty(t, b, dir, "--", "bash", "-c",
		`$AGENTHELPER termctl $PPID harm; $AGENTHELPER termctl tty same; $AGENTHELPER termctl pty same; echo D$((1+1))E`)
	code := p.wait()
	out := p.output()
	if code != 0 || !strings.Contains(out, "D2E") {
		t.Fatalf("paddock exited %d:\n%s", code, out)
	}
	path := regexp.MustCompile(`path (/dev/pts/\d+)`).FindStringSubmatch(out)
	if path == nil || path[1] != p.slave.Name() {
		t.Fatalf("the agent did not find the user's terminal %s:\n%s", p.slave.Name(), out)
	}
	for _, name := range []string{"TCSETS", "TIOCSWINSZ", "TCXONC", "TIOCEXCL", "TIOCSETD"} {
		if !strings.Contains(out, "user "+name+" err EPERM") {
			t.Errorf("%s on the user's terminal was not refused:\n%s", name, out)
		}
		if !strings.Contains(out, "paddock refused ioctl("+name+") on "+p.slave.Name()) {
			t.Errorf("no refusal message for %s on %s:\n%s", name, p.slave.Name(), out)
		}
	}
	for _, name := range []string{"TCSETS", "TIOCSWINSZ", "TCXONC", "TIOCNXCL", "TIOCSETD"} {
		for _, own := range []string{"tty", "pty"} {
			if !strings.Contains(out, own+" "+name+" ok") {
				t.Errorf("%s on the agent's own %s failed:\n%s", name, own, out)
			}
		}
	}
	if ldisc, excl := terminalState(t, p.slave); ldisc != 0 || excl != 0 {
		t.Errorf("the user's terminal has line discipline %d and exclusive mode %d after paddock, want 0 (N_TTY) and 0", ldisc, excl)
	}
	refused := 0
	for _, line := range strings.Split(readFile(p.journal), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["action"] == "signal_denied" && rec["rule"] == "terminal_control" && rec["syscall"] == "ioctl" {
			refused++
		}
	}
	if refused != 5 {
		t.Errorf("the journal has %d terminal_control refusals, want 5:\n%s", refused, readFile(p.journal))
	}
}

// frozenTerminalDoesNotHoldPaddock: the user's terminal stops taking
// output (tcflow(TCOOFF), here from outside the session, as a descriptor
// swapped past paddock's look could do from inside) while the agent's last
// words are on their way, and the agent exits. paddock gives up what the
// terminal does not take within its bound, says so, restarts the
// terminal's output, journals the session's end and exits; before, its
// relay waited on the terminal for ever. Agent and paddock run as nobody.
func frozenTerminalDoesNotHoldPaddock(t *testing.T, b backend) {
	b.require(t)
	requireBash(t)
	dir := nobodyDir(t)
	fifo := filepath.Join(dir, "go")
	if err := unix.Mkfifo(fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	p := nobodyOnPty(t, b, dir, "--", "bash", "-c", `echo R$((1+1))E; read -r x < `+fifo+`; echo last-words; exit 0`)
	p.expect("R2E")
	if err := unix.IoctlSetInt(int(p.slave.Fd()), unix.TCXONC, unix.TCOOFF); err != nil {
		t.Fatalf("stop the terminal's output: %v", err)
	}
	if err := os.WriteFile(fifo, []byte("go\n"), 0); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		p.done <- err
	case <-time.After(time.Minute):
		_ = p.cmd.Process.Kill()
		t.Fatalf("paddock did not exit in a minute after its agent, on a terminal whose output is stopped; the terminal shows:\n%q\n%s", p.output(), threads(p.cmd.Process.Pid))
	}
	// The terminal takes output again: a write that must not wait goes through.
	nb, err := os.OpenFile(p.slave.Name(), os.O_WRONLY|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	if _, err := unix.Write(int(nb.Fd()), []byte("flowing\n")); err != nil {
		t.Errorf("the terminal's output is still stopped after paddock: %v", err)
		_ = unix.IoctlSetInt(int(p.slave.Fd()), unix.TCXONC, unix.TCOON)
	}
	if code := p.wait(); code != 0 {
		t.Errorf("paddock exited %d, want the agent's 0", code)
	}
	out := p.output()
	if !strings.Contains(out, "took no output") || !strings.Contains(out, "given up") {
		t.Errorf("paddock did not say what it gave up:\n%q", out)
	}
	if !strings.Contains(readFile(p.journal), `"session_ended"`) {
		t.Errorf("no session_ended in the journal:\n%s", readFile(p.journal))
	}
}

// threads describes each thread of pid (its state and where it waits in
// the kernel), for the message of a test that found the process hung.
func threads(pid int) string {
	var b strings.Builder
	tasks, _ := os.ReadDir("/proc/" + itoa(pid) + "/task")
	for _, tk := range tasks {
		dir := "/proc/" + itoa(pid) + "/task/" + tk.Name()
		fmt.Fprintf(&b, "thread %s: %s, waiting in %s\n", tk.Name(), strings.Fields(statLine(dir))[0], strings.TrimSpace(readFile(dir+"/wchan")))
	}
	return b.String()
}

// statLine is the part of a stat file after the command name.
func statLine(dir string) string {
	s := readFile(dir + "/stat")
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2:]
	}
	return "?"
}
