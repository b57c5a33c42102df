package bench

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/rs/zerolog"

	"github.com/paddock-dev/paddock/internal/reexec"
	"github.com/paddock-dev/paddock/supervisor"
)

// superviseArg makes the compiled test binary (go test -c) a minimal
// supervisor that traps only the signal and process-control syscalls, not
// exec: `bench.test __bench_supervise_signals -- CMD ARG...`. paddock run
// always traps exec; bench/run.sh uses this mode to measure the filter and
// notify loop with only signals trapped, the configuration the fork+exec
// target was set for.
const superviseArg = "__bench_supervise_signals"

func TestMain(m *testing.M) {
	// The supervisor re-executes this binary as the agent's init.
	reexec.Run(supervisor.InitChild(), reexec.Child{Name: superviseArg, Main: superviseSignalsOnly})
	os.Exit(m.Run())
}

func superviseSignalsOnly(args []string) int {
	if len(args) < 2 || args[0] != "--" {
		fmt.Fprintf(os.Stderr, "usage: %s %s -- CMD [ARG...]\n", os.Args[0], superviseArg)
		return 2
	}
	args = args[1:]
	path, err := exec.LookPath(args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", args[0], err)
		return 127
	}
	backend, err := supervisor.ParseBackend(os.Getenv("PADDOCK_BACKEND"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "supervise: PADDOCK_BACKEND: %v\n", err)
		return 2
	}
	s, err := supervisor.Start(supervisor.Config{Path: path, Args: args, Log: zerolog.Nop(), Backend: backend})
	if err != nil {
		fmt.Fprintf(os.Stderr, "supervise: %v\n", err)
		return 1
	}
	return s.Wait()
}
