package test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/ptytest"
)

// onPty is paddock run driven on a pty the way a user's terminal emulator
// (or expect, or tmux) drives it: paddock leads the pty's session and is
// its foreground job, so that a resize of the pty signals it SIGWINCH.
type onPty struct {
	t             *testing.T
	master, slave *os.File
	cmd           *exec.Cmd
	journal       string
	done          chan error

	mu   sync.Mutex
	out  bytes.Buffer
	seen int           // out up to here was matched by expect
	more chan struct{} // a token when out grew
}

// startOnPty starts `paddock run ARGS...` on a new pty of rows x cols.
func startOnPty(t *testing.T, b backend, rows, cols uint16, args ...string) *onPty {
	t.Helper()
	master, slave := ptytest.Open(t)
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
		t.Fatalf("set the pty's size: %v", err)
	}
	return startOnPtyPair(t, b, master, slave, args...)
}

// startOnPtyPair starts `paddock run ARGS...` on the pty master/slave.
func startOnPtyPair(t *testing.T, b backend, master, slave *os.File, args ...string) *onPty {
	t.Helper()
	cmd, journal := b.paddockCmd(t, args...)
	return startCmdOnPty(t, cmd, journal, master, slave)
}

// startCmdOnPty starts cmd leading a session whose controlling terminal is
// the pty slave (a program in a terminal emulator), reading what it writes
// from the master.
func startCmdOnPty(t *testing.T, cmd *exec.Cmd, journal string, master, slave *os.File) *onPty {
	t.Helper()
	cmd.Env = append(cmd.Env, "PS1=$ ", "HISTFILE=/dev/null", "TERM=xterm")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	p := &onPty{t: t, master: master, slave: slave, cmd: cmd, journal: journal, done: make(chan error, 1), more: make(chan struct{}, 1)}
	go p.read()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	})
	return p
}

// read collects what paddock writes on the terminal.
func (p *onPty) read() {
	buf := make([]byte, 4096)
	for {
		n, err := p.master.Read(buf)
		if n > 0 {
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			select {
			case p.more <- struct{}{}:
			default:
			}
		}
		if err != nil {
			return
		}
	}
}

// output is everything written on the terminal so far.
func (p *onPty) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// send types s.
func (p *onPty) send(s string) {
	p.t.Helper()
	if _, err := p.master.Write([]byte(s)); err != nil {
		p.t.Fatalf("type %q: %v", s, err)
	}
}

// expect waits for output matching re after what the last expect matched
// and returns the match's first group (or the whole match); 30 s at most,
// as a safety.
func (p *onPty) expect(re string) string {
	p.t.Helper()
	rx := regexp.MustCompile(re)
	safety := time.After(30 * time.Second)
	for {
		p.mu.Lock()
		s := p.out.String()
		if loc := rx.FindStringSubmatchIndex(s[p.seen:]); loc != nil {
			m := s[p.seen+loc[0] : p.seen+loc[1]]
			if len(loc) >= 4 && loc[2] >= 0 {
				m = s[p.seen+loc[2] : p.seen+loc[3]]
			}
			p.seen += loc[1]
			p.mu.Unlock()
			return m
		}
		p.mu.Unlock()
		select {
		case <-p.more:
		case <-safety:
			p.t.Fatalf("the terminal never showed %q; it shows:\n%q", re, s)
		}
	}
}

// wait waits for paddock to exit (30 s at most, as a safety) and returns
// its exit status; paddock itself must not have died of a signal. All that
// was written on the terminal before it exited is in output by then.
func (p *onPty) wait() int {
	p.t.Helper()
	select {
	case err := <-p.done:
		p.drain()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			p.t.Fatalf("paddock: %v", err)
		}
		ws := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			p.t.Fatalf("paddock died of %v; the terminal shows:\n%q", ws.Signal(), p.output())
		}
		return ws.ExitStatus()
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		p.t.Fatalf("paddock did not exit; the terminal shows:\n%q", p.output())
		return -1
	}
}

// drain waits until the reader has taken in everything written on the
// terminal so far: the reader may still be behind when paddock has exited.
// A marker written through the slave now comes out of the master after all
// of it (a terminal keeps the order), and is taken out of the output again.
// 30 s at most, as a safety.
func (p *onPty) drain() {
	p.t.Helper()
	const marker = "<paddock-test-drained>"
	if _, err := p.slave.Write([]byte(marker)); err != nil {
		p.t.Fatalf("write through the terminal after paddock exited: %v", err)
	}
	safety := time.After(30 * time.Second)
	for {
		p.mu.Lock()
		s := p.out.String()
		if i := strings.LastIndex(s, marker); i >= 0 {
			p.out.Reset()
			p.out.WriteString(s[:i] + s[i+len(marker):])
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		select {
		case <-p.more:
		case <-safety:
			p.t.Fatalf("the terminal never passed on a marker written after paddock exited; it shows:\n%q", s)
		}
	}
}

// awaitForeground waits until a process of paddock's (pid) whose command
// line is argv runs as its terminal's foreground job, and returns its pid.
func awaitForeground(t *testing.T, paddock int, argv ...string) int {
	t.Helper()
	want := strings.Join(argv, "\x00") + "\x00"
	found := 0
	waitFor(t, strings.Join(argv, " ")+" in the agent's foreground", func() bool {
		dirs, _ := os.ReadDir("/proc")
		for _, d := range dirs {
			pid := 0
			for _, c := range d.Name() {
				if c < '0' || c > '9' {
					pid = 0
					break
				}
				pid = pid*10 + int(c-'0')
			}
			if pid == 0 || readFile("/proc/"+d.Name()+"/cmdline") != want || !descends(pid, paddock) {
				continue
			}
			f := statFields(pid)
			// state, ppid, pgrp, session, tty_nr, tpgid
			if len(f) > 5 && f[0] == "S" && f[2] == f[5] {
				found = pid
				return true
			}
		}
		return false
	})
	return found
}

// statFields are the fields of /proc/PID/stat after the command name.
func statFields(pid int) []string {
	b := readFile("/proc/" + itoa(pid) + "/stat")
	i := strings.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(b[i+1:])
}

// descends reports whether pid is ancestor or one of its descendants.
func descends(pid, ancestor int) bool {
	for n := 0; pid > 1 && n < 64; n++ {
		if pid == ancestor {
			return true
		}
		f := statFields(pid)
		if len(f) < 2 {
			return false
		}
		pid = atoi(f[1])
	}
	return false
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// termios is the terminal's settings.
func termios(t *testing.T, f *os.File) unix.Termios {
	t.Helper()
	tio, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatalf("tcgetattr: %v", err)
	}
	return *tio
}

// requireBash skips where there is no bash.
func requireBash(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skipf("needs bash: %v", err)
	}
}

// interactiveShellOnPty: an interactive shell under paddock, on a terminal,
// runs behind a pty of its own as it would on the terminal itself: it sees
// the terminal's size and its changes, writes colours, suspends a job on
// ^Z and resumes it
// with fg, interrupts it on ^C, reads a password from /dev/tty without
// echoing it, and exits with its status, which paddock exits with; the
// user's terminal settings are the same afterwards.
func interactiveShellOnPty(t *testing.T, b backend) {
	b.require(t)
	requireBash(t)
	p := startOnPty(t, b, 40, 100, "--", "bash", "--norc", "--noprofile", "-i")
	before := termios(t, p.slave)

	size := `echo "S$(stty size | tr ' ' x)E"` + "\r"
	p.send(size)
	if got := p.expect(`S(\d+x\d+)E`); got != "40x100" {
		t.Fatalf("stty size inside: %s, want 40x100", got)
	}
	if err := unix.IoctlSetWinsize(int(p.slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 50, Col: 120}); err != nil {
		t.Fatalf("resize the terminal: %v", err)
	}
	// paddock copies the new size on its SIGWINCH, which may come after
	// the next command has run: ask until it shows, 200 times at most (a
	// lost resize once hung this loop).
	for got, tries := "", 0; got != "50x120"; tries++ {
		if tries == 200 {
			t.Fatalf("the agent's pty kept the old size after %d asks: the resize was lost", tries)
		}
		p.send(size)
		got = p.expect(`S(\d+x\d+)E`)
		if got != "40x100" && got != "50x120" {
			t.Fatalf("stty size after the resize: %s, want 50x120", got)
		}
	}

	// Colours: escape sequences pass through as written.
	p.send(`printf '\033[31mC%sE\033[0m\n' OLOUR` + "\r")
	p.expect("\x1b\\[31mCOLOURE\x1b\\[0m")

	p.send("sleep 1001\r")
	awaitForeground(t, p.cmd.Process.Pid, "sleep", "1001")
	p.send("\x1a")
	p.expect(`Stopped\s+sleep 1001`)
	p.send("jobs -l; echo J$?E\r")
	p.expect(`Stopped\s+sleep 1001[\s\S]*J0E`)
	p.send("fg\r")
	awaitForeground(t, p.cmd.Process.Pid, "sleep", "1001")
	p.send("\x03")
	p.send("echo R$?E\r")
	if got := p.expect(`R(\d+)E`); got != "130" {
		t.Fatalf("sleep after fg and ^C: status %s, want 130 (SIGINT)", got)
	}

	// As a password prompt does it: echo off on /dev/tty before the
	// prompt, so that nothing typed after the prompt shows.
	// (The prompt is built, so that the echoed command line does not match.)
	p.send(`(stty -echo; printf 'P%sW: ' ASS; read -r pw; stty echo; echo "L${#pw}E") < /dev/tty > /dev/tty` + "\r")
	p.expect(`PASSW: `)
	p.send("hunter2\r")
	if got := p.expect(`L(\d+)E`); got != "7" {
		t.Fatalf("read -s from /dev/tty got %s characters, want 7", got)
	}
	if strings.Contains(p.output(), "hunter2") {
		t.Fatalf("the password was echoed:\n%q", p.output())
	}

	p.send("exit 3\r")
	if code := p.wait(); code != 3 {
		t.Fatalf("paddock exited %d, want the shell's 3; the terminal shows:\n%q", code, p.output())
	}
	if after := termios(t, p.slave); after != before {
		t.Fatalf("the terminal's settings changed:\nbefore %+v\nafter  %+v", before, after)
	}
	if strings.Contains(p.output(), "refused") {
		t.Fatalf("something was refused:\n%q", p.output())
	}
}

// killZeroOnTerminal: on a terminal too the agent root leads a session of
// its own (its pty's), so its `kill 0` reaches only its own processes and
// is allowed, not refused for addressing paddock's group.
func killZeroOnTerminal(t *testing.T, b backend) {
	b.require(t)
	requireBash(t)
	p := startOnPty(t, b, 24, 80, "--", "bash", "-c", `trap 'echo got=TERM' TERM
sleep 300 & c=$!
test "$(ps -o sid= -p $$ | tr -d ' ')" = "$$" && echo own-session
kill -TERM 0; echo rc=$?
wait $c; echo child=$?`)
	code := p.wait()
	out := p.output()
	for _, want := range []string{"own-session", "got=TERM", "rc=0", "child=143"} {
		if !strings.Contains(out, want) {
			t.Fatalf("the terminal lacks %q (exit %d):\n%s", want, code, out)
		}
	}
	if strings.Contains(out, "refused") {
		t.Fatalf("kill 0 from the agent root was refused:\n%s", out)
	}
}

// terminalOutOfAgentsReach: the agent's terminal is its pty, not the
// user's: its controlling terminal and standard descriptors are the pty,
// TIOCSTI is refused and leaves nothing in the user's input, and vhangup
// (root has CAP_SYS_TTY_CONFIG) hangs up only the pty, while paddock and the
// user's terminal carry on. With --no-pty the agent is on the user's
// terminal, and the same vhangup is refused by paddock (vhangup is
// trapped and decided like a signal to the caller's session).
func terminalOutOfAgentsReach(t *testing.T, b backend) {
	b.require(t)
	requireBash(t)
	p := startOnPty(t, b, 24, 80, "--", "bash", "-c", `echo "ctty=/dev/$(ps -o tty= -p $$ | tr -d ' ')"
for f in 0 1 2; do echo "fd$f=$(readlink /proc/$$/fd/$f)"; done
echo "tiocsti: $($AGENTHELPER tiocsti 0)"`)
	if code := p.wait(); code != 0 {
		t.Fatalf("paddock exited %d:\n%s", code, p.output())
	}
	out := p.output()
	m := regexp.MustCompile(`ctty=(/dev/pts/\d+)`).FindStringSubmatch(out)
	if m == nil || m[1] == p.slave.Name() {
		t.Fatalf("want the agent's controlling terminal a pty other than the user's %s:\n%s", p.slave.Name(), out)
	}
	for _, fd := range []string{"fd0", "fd1", "fd2"} {
		if !strings.Contains(out, fd+"="+m[1]) {
			t.Errorf("want %s on the agent's pty %s:\n%s", fd, m[1], out)
		}
	}
	if !strings.Contains(out, "tiocsti: err EPERM") {
		t.Errorf("want TIOCSTI refused:\n%s", out)
	}
	if n, err := unix.IoctlGetInt(int(p.slave.Fd()), unix.TIOCINQ); err != nil || n != 0 {
		t.Errorf("the user's terminal has %d bytes of input waiting (%v), want none", n, err)
	}

	hangup := func(args ...string) (*onPty, string, int) {
		marker := filepath.Join(t.TempDir(), "vhangup")
		args = append(args, "--", "bash", "-c", `trap "" HUP; exec $AGENTHELPER vhangup > `+marker+` 2>&1`)
		p := startOnPty(t, b, 24, 80, args...)
		code := p.wait()
		return p, strings.TrimSpace(readFile(marker)), code
	}
	p, got, code := hangup()
	if got != "ok" {
		t.Skipf("needs vhangup (CAP_SYS_TTY_CONFIG): %s", got)
	}
	if code != 0 {
		t.Errorf("paddock exited %d after the agent's vhangup, want 0:\n%s", code, p.output())
	}
	if _, err := unix.IoctlGetTermios(int(p.slave.Fd()), unix.TCGETS); err != nil {
		t.Errorf("the user's terminal after the agent's vhangup: %v", err)
	}
	if _, err := p.slave.Write([]byte("still-here\n")); err != nil {
		t.Fatalf("the agent's vhangup hung up the user's terminal: %v", err)
	}
	p.expect("still-here")

	// With --no-pty the agent is on the user's terminal, in paddock's
	// session: vhangup would hang it up, and is refused.
	p, got, _ = hangup("--no-pty")
	// The agent's stderr holds paddock's message, then the helper's line.
	if !strings.HasSuffix(got, "\nerr EPERM") || !strings.Contains(got, "paddock refused vhangup from pid") {
		t.Errorf("vhangup with --no-pty: %q, want paddock's refusal and err EPERM\n%s", got, p.output())
	}
	if _, err := p.slave.Write([]byte("still-here\n")); err != nil {
		t.Fatalf("with --no-pty the agent's vhangup hung up the user's terminal: %v", err)
	}
}

// sharedTerminalNoPty: with --no-pty (or the profile's pty = false) the
// agent is on the user's terminal itself, in paddock's session, as before
// the pty: the cost is that its kill(0) addresses paddock's group and is
// refused.
func sharedTerminalNoPty(t *testing.T, b backend) {
	b.require(t)
	requireBash(t)
	prof := filepath.Join(t.TempDir(), "profile.toml")
	if err := os.WriteFile(prof, []byte("pty = false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{"flag": {"--no-pty"}, "profile": {"--profile", prof}} {
		t.Run(name, func(t *testing.T) {
			p := startOnPty(t, b, 24, 80, append(args, "--", "bash", "-c", `echo "ctty=/dev/$(ps -o tty= -p $$ | tr -d ' ')"
kill -TERM 0; echo rc=$?`)...)
			p.wait()
			out := p.output()
			if !strings.Contains(out, "ctty="+p.slave.Name()) {
				t.Errorf("want the agent on the user's terminal %s:\n%s", p.slave.Name(), out)
			}
			if !strings.Contains(out, "rc=1") || !strings.Contains(out, "refused") {
				t.Errorf("want kill 0 refused on the shared terminal:\n%s", out)
			}
		})
	}
}

// shellQuote quotes args for bash.
func shellQuote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// agentRootStopsWithPaddock: when the agent root itself stops (here cat on
// ^Z, and on a SIGSTOP from outside), paddock gives the user's shell its
// terminal back as it was and stops too, so that the shell shows the job
// stopped; fg puts the terminal back in raw mode and continues the agent,
// as sudo does. The shell is an interactive bash on the pty, paddock one
// of its jobs.
func agentRootStopsWithPaddock(t *testing.T, b backend) {
	b.require(t)
	requireBash(t)
	p, pcmd := startShellOnPty(t, b, "--", "cat")
	cmd := p.cmd

	settings := `echo "T$(stty -g)E"` + "\r"
	p.send(settings)
	before := p.expect(`T([0-9a-f:]+)E`)
	p.send(shellQuote(pcmd.Args) + "\r")
	awaitForeground(t, cmd.Process.Pid, "cat")
	p.send("hello\r")
	p.expect(`hello[\s\S]*hello`)
	p.send("\x1a")
	p.expect(`Stopped\s+\S*paddock`)
	p.send(settings)
	if got := p.expect(`T([0-9a-f:]+)E`); got != before {
		t.Fatalf("while paddock is stopped the terminal is %s, want it as it was: %s", got, before)
	}
	p.send("fg\r")
	catPid := awaitForeground(t, cmd.Process.Pid, "cat")
	awaitRaw(t, p)
	p.send("again\r")
	p.expect(`again[\s\S]*again`)
	if b != "ptrace" {
		// Stopped from outside: paddock follows. (Under ptrace a stopped
		// root is in a tracing stop, which paddock does not follow:
		// docs/limits.md.)
		if err := syscall.Kill(catPid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		p.expect(`Stopped[\s\S]*\$ $`)
		p.send("fg\r")
		awaitForeground(t, cmd.Process.Pid, "cat")
		p.send("third\r")
		p.expect(`third[\s\S]*third`)
	}
	endCat(t, p, settings, before)
}

// startShellOnPty starts an interactive bash on a new pty, leading its
// session (a user's shell in a terminal emulator), and prepares the
// command line of `paddock run ARGS...` for it to run.
func startShellOnPty(t *testing.T, b backend, args ...string) (*onPty, *exec.Cmd) {
	t.Helper()
	master, slave := ptytest.Open(t)
	pcmd, journal := b.paddockCmd(t, args...)
	cmd := exec.Command("bash", "--norc", "--noprofile", "-i")
	cmd.Env = pcmd.Env
	return startCmdOnPty(t, cmd, journal, master, slave), pcmd
}

// paddockInTheBackground: paddock started in the background of the user's
// shell (`&`) neither reads the terminal (which would stop it with SIGTTIN,
// though the agent never reads) nor changes its settings, and runs to the
// end; brought to the foreground with fg, it puts the terminal in raw mode
// and relays the user's input to the agent.
func paddockInTheBackground(t *testing.T, b backend) {
	b.require(t)
	requireBash(t)
	p, pcmd := startShellOnPty(t, b, "--", "sh", "-c", "echo B$((40+2))E")
	settings := `echo "T$(stty -g)E"` + "\r"
	p.send(settings)
	before := p.expect(`T([0-9a-f:]+)E`)
	p.send(shellQuote(pcmd.Args) + ` & wait $!; echo "W$?E"` + "\r")
	p.expect(`B42E`)
	if got := p.expect(`W(\d+)E`); got != "0" {
		t.Fatalf("paddock in the background: status %s, want 0:\n%q", got, p.output())
	}
	p.send(settings)
	if got := p.expect(`T([0-9a-f:]+)E`); got != before {
		t.Fatalf("after paddock in the background the terminal is %s, want it as it was: %s", got, before)
	}

	args := append([]string(nil), pcmd.Args...)
	args[len(args)-3] = "cat"
	p.send(shellQuote(args[:len(args)-2]) + " &\r")
	awaitForeground(t, p.cmd.Process.Pid, "cat")
	p.send("fg\r")
	awaitRaw(t, p)
	p.send("hello\r")
	p.expect(`hello[\s\S]*hello`)
	endCat(t, p, settings, before)
}

// awaitRaw waits for paddock, brought to the foreground of the terminal
// on p, to have put it in raw mode: keys typed before then go to the user's
// line discipline (a ^D there ends paddock's input). Raw as paddock makes
// it: without ISIG too, which readline's mode at the shell's prompt keeps,
// so that the mode of a shell yet to run fg does not pass for it.
func awaitRaw(t *testing.T, p *onPty) {
	t.Helper()
	waitFor(t, "paddock in the foreground to make the terminal raw", func() bool {
		tio, err := unix.IoctlGetTermios(int(p.slave.Fd()), unix.TCGETS)
		return err == nil && tio.Lflag&(unix.ICANON|unix.ISIG) == 0
	})
}

// endCat ends a `paddock run -- cat` in the shell on p with EOF, and checks
// that paddock exited 0 and left the terminal's settings as they were
// (before, as the settings command prints them); then the shell exits.
func endCat(t *testing.T, p *onPty, settings, before string) {
	t.Helper()
	p.send("\x04")
	// paddock's summary: what is typed before paddock exits goes to the pty.
	p.expect(`no refusals`)
	p.send(`echo "X$?E"` + "\r")
	if got := p.expect(`X(\d+)E`); got != "0" {
		t.Fatalf("paddock exited %s after cat's EOF, want 0:\n%q", got, p.output())
	}
	p.send(settings)
	if got := p.expect(`T([0-9a-f:]+)E`); got != before {
		t.Fatalf("after paddock the terminal is %s, want it as it was: %s", got, before)
	}
	p.send("exit 0\r")
	p.wait()
}

// terminalRestoredOnEveryExit: however the session ends (the agent killed
// by a signal, or paddock sent SIGTERM, SIGINT or SIGHUP, which it
// forwards), paddock exits with 128+N and the user's terminal has its
// settings back.
func terminalRestoredOnEveryExit(t *testing.T, b backend) {
	b.require(t)
	requireBash(t)
	for _, tc := range []struct {
		name   string
		script string
		send   syscall.Signal
		code   int
	}{
		{"agent killed", "echo R$((1+1))E; kill -KILL $$", 0, 137},
		{"SIGTERM", "echo R$((1+1))E; exec sleep 300", syscall.SIGTERM, 143},
		{"SIGINT", "echo R$((1+1))E; exec sleep 300", syscall.SIGINT, 130},
		{"SIGHUP", "echo R$((1+1))E; exec sleep 300", syscall.SIGHUP, 129},
	} {
		t.Run(tc.name, func(t *testing.T) {
			master, slave := ptytest.Open(t)
			before := termios(t, slave)
			p := startOnPtyPair(t, b, master, slave, "--", "bash", "-c", tc.script)
			p.expect("R2E")
			if tc.send != 0 {
				if tio := termios(t, slave); tio.Lflag&unix.ICANON != 0 {
					t.Errorf("the terminal is not raw while the agent runs: lflag %#x", tio.Lflag)
				}
				if err := p.cmd.Process.Signal(tc.send); err != nil {
					t.Fatal(err)
				}
			}
			if code := p.wait(); code != tc.code {
				t.Errorf("paddock exited %d, want %d:\n%q", code, tc.code, p.output())
			}
			if after := termios(t, slave); after != before {
				t.Errorf("the terminal's settings changed:\nbefore %+v\nafter  %+v", before, after)
			}
		})
	}
}

// terminalBelongsToTheAgent: while the agent has the user's terminal (a
// TUI, here a script that is refused a kill and then waits for a key),
// paddock writes nothing of its own on it: no start line, no log line for
// the refusal, only the refused process's own message (the agent's tool
// output); its log goes to the session's file in the state directory
// ($XDG_STATE_HOME, the test's own), which has them; at exit one line says
// what was refused and where the journal and the log are. Before, the
// start line and the refusal's log line were drawn over the agent's screen.
func terminalBelongsToTheAgent(t *testing.T, b backend) {
	b.require(t)
	requireBash(t)
	f := startForeign(t, "sleep", "300")
	state := t.TempDir()
	master, slave := ptytest.Open(t)
	cmd, journal := b.paddockCmd(t, "--", "bash", "-c", `printf 'TUI-START\n'; kill -TERM `+itoa(f.Pid())+`; echo R$((1+1))E; read -r k; echo "got-$k"`)
	cmd.Env = append(cmd.Env, "XDG_STATE_HOME="+state)
	p := startCmdOnPty(t, cmd, journal, master, slave)
	p.expect("R2E")
	// The refusal is journaled after its log line is written; then all
	// paddock wrote on the terminal so far is in the output.
	waitFor(t, "the refusal in the journal", func() bool { return strings.Contains(readFile(journal), `"action":"signal_denied"`) })
	p.drain()
	during := p.output()
	if strings.Contains(during, `"component":"paddock"`) || strings.Contains(during, `"level":`) {
		t.Errorf("while the agent runs, paddock wrote on its terminal:\n%q", during)
	}
	if n := strings.Count(during, refusalMessage(f.Pid())); n != 1 {
		t.Errorf("the terminal shows the refused process's message %d times, want once:\n%q", n, during)
	}
	p.send("q\r")
	p.expect("got-q")
	if code := p.wait(); code != 0 {
		t.Fatalf("paddock exited %d:\n%q", code, p.output())
	}
	out := p.output()
	logs, _ := filepath.Glob(filepath.Join(state, "paddock", "log", "*.log"))
	if len(logs) != 1 {
		t.Fatalf("want one log in %s/paddock/log, have %q; the terminal shows:\n%q", state, logs, out)
	}
	after := out[strings.Index(out, "got-q"):]
	closing := regexp.MustCompile(`(?m)^paddock: 1 refusal \(not_owned 1\); paddock journal shows them\. Session [0-9a-f]{12}: journal (\S+), log (\S+)\r?$`).FindStringSubmatch(after)
	if closing == nil || closing[1] != journal || closing[2] != logs[0] {
		t.Errorf("want one closing line naming the journal %s and the log %s after the agent's last output:\n%q", journal, logs[0], out)
	}
	if strings.Contains(out, `"component":"paddock"`) || strings.Count(out, "paddock: ") != 1 {
		t.Errorf("paddock wrote more than its closing line on the terminal:\n%q", out)
	}
	log := readFile(logs[0])
	for _, want := range []string{`"message":"agent started"`, `"level":"warn"`, refusalMessage(f.Pid()), `"message":"1 refusal (not_owned 1)`} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}

	// A fatal error still reaches the terminal: a log file that cannot be
	// opened stops paddock before the agent runs, saying so there.
	bad := filepath.Join(t.TempDir(), "nodir", "paddock.log")
	master, slave = ptytest.Open(t)
	cmd, journal = b.paddockCmd(t, "--log-file", bad, "--", "bash", "-c", "echo AGENT-$((1+1))-RAN")
	cmd.Env = append(cmd.Env, "XDG_STATE_HOME="+state)
	p = startCmdOnPty(t, cmd, journal, master, slave)
	if code := p.wait(); code != 2 || !strings.Contains(p.output(), "paddock: --log-file "+bad+": ") || strings.Contains(p.output(), "AGENT-2-RAN") {
		t.Errorf("an unusable --log-file: exit %d, want 2, the error on the terminal and no agent:\n%q", code, p.output())
	}
}
