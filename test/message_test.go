package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/internal/ptytest"
)

// refusalMessage is the start of paddock's message for a refused kill of
// pid: the tests look for it in what the agent's harness captured, never in
// paddock's own log (which goes to paddock's stderr, not the harness's).
func refusalMessage(pid int) string {
	return "paddock refused kill(SIGTERM) of pid " + itoa(pid)
}

// messageThroughHarnessPipes: a refused kill's message reaches the agent's
// harness through whatever the harness gave the child as its standard
// error: Node's child_process pipes (socketpairs) and a Python socketpair.
func messageThroughHarnessPipes(t *testing.T, b backend) {
	b.require(t)
	f := startForeign(t, "sleep", "300")
	kill := "kill -TERM " + itoa(f.Pid())
	harnesses := []struct{ name, tool, script string }{
		{"node child_process", "node", `const cp = require("child_process");
const c = cp.spawn("bash", ["-c", "` + kill + `; echo after >&2"], {stdio: ["ignore", "pipe", "pipe"]});
let e = "";
c.stderr.on("data", d => e += d);
c.on("close", () => process.stdout.write("CAPTURED<<" + e + ">>\n"));`},
		{"python socketpair", "python3", `import socket, subprocess, sys
a, b = socket.socketpair()
p = subprocess.Popen(["bash", "-c", "` + kill + `; echo after >&2"], stderr=b)
b.close()
p.wait()
data = b""
while True:
    chunk = a.recv(65536)
    if not chunk:
        break
    data += chunk
sys.stdout.write("CAPTURED<<" + data.decode() + ">>\n")`},
	}
	for _, h := range harnesses {
		t.Run(h.name, func(t *testing.T) {
			tool, err := exec.LookPath(h.tool)
			if err != nil {
				t.Skipf("needs %s: %v", h.tool, err)
			}
			flag := "-e"
			if h.tool == "python3" {
				flag = "-c"
			}
			r := b.runPaddock(t, "--", tool, flag, h.script)
			i, j := strings.Index(r.stdout, "CAPTURED<<"), strings.LastIndex(r.stdout, ">>")
			if i < 0 || j < i {
				t.Fatalf("the harness printed nothing captured\n%s", r)
			}
			got := r.stdout[i+len("CAPTURED<<") : j]
			if !strings.Contains(got, refusalMessage(f.Pid())) || !strings.Contains(got, "Way out:") || !strings.Contains(got, "after") {
				t.Fatalf("the child's standard error, as the harness captured it, lacks the whole message: %q\n%s", got, r)
			}
			if !f.Alive(t) {
				t.Fatal("the foreign process was killed")
			}
		})
	}
}

// messageInRedirectedFile: with standard error redirected to a file (not
// in append mode), the agent's output before the refusal, the message and
// its output after it are all in the file, whole and in order.
func messageInRedirectedFile(t *testing.T, b backend) {
	b.require(t)
	f := startForeign(t, "sleep", "300")
	log := filepath.Join(t.TempDir(), "build.log")
	r := b.sh(t, `exec 2>`+log+`; echo before >&2; kill -TERM `+itoa(f.Pid())+`; echo after >&2`)
	got := readFile(log)
	before, msg, after := strings.Index(got, "before\n"), strings.Index(got, refusalMessage(f.Pid())), strings.Index(got, "after\n")
	if before != 0 || msg < 0 || after < msg {
		t.Fatalf("the file holds %q; want before, the message, after, in that order\n%s", got, r)
	}
	if line := got[msg : strings.Index(got[msg:], "\n")+msg]; !strings.Contains(line, "Way out:") {
		t.Fatalf("the message was cut or overwritten: %q", line)
	}
}

// noMessageIntoReadOnlyStderr: an agent whose descriptor 2 is a file open
// for reading gets no message written into that file, even by a root
// paddock that could open the file for writing itself.
func noMessageIntoReadOnlyStderr(t *testing.T, b backend) {
	b.require(t)
	f := startForeign(t, "sleep", "300")
	ro := filepath.Join(t.TempDir(), "readonly")
	const content = "the agent may only read this\n"
	if err := os.WriteFile(ro, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	r := b.sh(t, `exec 2<`+ro+`; kill -TERM `+itoa(f.Pid())+`; echo "status $?"`)
	if !strings.Contains(r.stdout, "status 1") {
		t.Fatalf("the kill was not refused\n%s", r)
	}
	if got := readFile(ro); got != content {
		t.Fatalf("paddock wrote into the agent's read-only descriptor: %q", got)
	}
}

// oneLinePerRefusalOnSharedTerminal: when paddock's stderr and the agent's
// are the same terminal (an interactive session), a refusal shows there
// once, as the message the agent sees; paddock's log line for it would only
// repeat it. (The journal still has it.) The same holds with the agent on
// its own pty relayed onto that terminal (the default) and on the terminal
// itself (--no-pty).
func oneLinePerRefusalOnSharedTerminal(t *testing.T, b backend) {
	b.require(t)
	for name, args := range map[string][]string{"pty": nil, "no-pty": {"--no-pty"}} {
		t.Run(name, func(t *testing.T) {
			f := startForeign(t, "sleep", "300")
			master, slave := ptytest.Open(t)
			cmd, journal := b.paddockCmd(t, append(args, "--", "bash", "-c", "kill -TERM "+itoa(f.Pid())+"; echo done")...)
			cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			slave.Close()
			out := readAll(t, master)
			_ = cmd.Wait()
			if n := strings.Count(out, refusalMessage(f.Pid())); n != 1 || !strings.Contains(out, "done") {
				t.Fatalf("the terminal shows the refusal %d times, want once:\n%s", n, out)
			}
			if !strings.Contains(readFile(journal), `"action":"signal_denied"`) {
				t.Fatalf("the journal lacks the refusal:\n%s", readFile(journal))
			}
		})
	}
}
