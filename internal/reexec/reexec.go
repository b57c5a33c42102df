// Package reexec runs this binary again as a child with another job: the
// supervisor's init, the features listener probe, and the kernel tests'
// children that install seccomp filters (a filter can never be removed, so
// it must go on a throwaway process). One protocol for all of them: the
// child is /proc/self/exe with argv[1] naming the job, and every binary
// that can be re-executed calls Run with the jobs it serves first thing in
// main (or TestMain), before any other work.
//
// The jobs are passed to Run, not registered in a package-level table, so
// that no global state exists and each main says in one line which children
// it can become.
package reexec

import (
	"context"
	"os"
	"os/exec"
)

// Self is the binary a child is executed from: this very binary, even if
// it was replaced or deleted on disk after it started.
const Self = "/proc/self/exe"

// Child is one job this binary can be re-executed for.
type Child struct {
	// Name is argv[1] of the child. Names start with "__" so that they
	// cannot be mistaken for a subcommand or a test flag.
	Name string
	// Main runs the job with the arguments after the name and returns the
	// exit status.
	Main func(args []string) int
}

// Run returns when this process is not a child of one of the jobs. When
// os.Args[1] names one, it runs that job and exits with its status: it
// never returns then.
func Run(children ...Child) {
	if c, ok := Find(os.Args, children...); ok {
		os.Exit(c.Main(os.Args[2:]))
	}
}

// Find returns the job argv (a process's arguments) starts, and whether
// there is one.
func Find(argv []string, children ...Child) (Child, bool) {
	if len(argv) < 2 {
		return Child{}, false
	}
	for _, c := range children {
		if c.Name == argv[1] {
			return c, true
		}
	}
	return Child{}, false
}

// Argv returns the path and argv that re-execute this binary as job name
// with args, for callers that start the child themselves (syscall.ForkExec
// from a locked thread, for ptrace). argv[0] is this process's own: a
// multi-call binary (testscript's copies of a test binary) dispatches on it.
func Argv(name string, args ...string) (path string, argv []string) {
	argv0 := "paddock"
	if len(os.Args) > 0 {
		argv0 = os.Args[0]
	}
	return Self, append([]string{argv0, name}, args...)
}

// Command returns a command that re-executes this binary as job name with
// args; the caller sets its environment, files and the like.
func Command(name string, args ...string) *exec.Cmd {
	return CommandContext(context.Background(), name, args...)
}

// CommandContext is Command killed when ctx is done.
func CommandContext(ctx context.Context, name string, args ...string) *exec.Cmd {
	path, argv := Argv(name, args...)
	cmd := exec.CommandContext(ctx, path, argv[1:]...)
	cmd.Args[0] = argv[0]
	return cmd
}
