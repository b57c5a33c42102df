package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeOpening: the README opens with exactly two commands, one that
// runs paddock on a real command and one that runs the tests (what .ci/run
// runs); the first, as written, builds a binary that passes the command's
// exit status through (which `go run` would not: it says "exit status N"
// and exits 1).
func TestReadmeOpening(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "```sh\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("README.md has no ```sh block")
	}
	var cmds []string
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		cmd, _, _ := strings.Cut(line, "#")
		cmds = append(cmds, strings.Join(strings.Fields(cmd), " "))
	}
	if len(cmds) != 2 || cmds[1] != "go test ./..." {
		t.Fatalf("the README's first block is %q; want two commands, the second `go test ./...`", cmds)
	}
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ci), "\n"+cmds[1]+"\n") {
		t.Errorf(".ci/run does not run the README's test command %q", cmds[1])
	}
	build, run, ok := strings.Cut(cmds[0], " && ")
	bargs, rargs := strings.Fields(build), strings.Fields(run)
	if !ok || len(bargs) != 5 || strings.Join(bargs[:3], " ") != "go build -o" || bargs[4] != "./cmd/paddock" ||
		len(rargs) < 4 || rargs[0] != "./"+bargs[3] || rargs[1] != "run" || rargs[2] != "--" {
		t.Fatalf("the README's first command is %q; want `go build -o NAME ./cmd/paddock && ./NAME run -- CMD`", cmds[0])
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("needs go to build the README's binary: %v", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, bargs[3])
	b := exec.Command(goBin, "build", "-o", bin, "./cmd/paddock")
	b.Dir = "../.."
	if out, err := b.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", build, err, out)
	}
	r := exec.Command(bin, "run", "--journal", filepath.Join(dir, "j.jsonl"), "--", "sh", "-c", "exit 7")
	xdg := filepath.Join(dir, "xdg")
	r.Env = append(os.Environ(), "XDG_STATE_HOME="+xdg, "XDG_CONFIG_HOME="+xdg)
	out, err := r.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("%s run -- sh -c 'exit 7': %v, want exit status 7\n%s", bin, err, out)
	}
}
