package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/internal/signame"
	"github.com/paddock-dev/paddock/internal/sys"
)

// tini's options and variables, so that an image can switch
// ENTRYPOINT ["tini", "--"] to paddock by changing one word
// (docs/container.md has the table).

// tiniFlags are the run flags that stand for tini's options.
type tiniFlags struct {
	remapExit  []int
	pdeathsig  string
	warnOnReap bool
	subreaper  bool
}

// addTiniFlags adds tini's options to paddock run.
func addTiniFlags(cmd *cobra.Command, t *tiniFlags) {
	cmd.Flags().IntSliceVarP(&t.remapExit, "remap-exit", "e", nil, "exit 0 when CMD exits with `CODE` (repeatable; tini -e)")
	cmd.Flags().StringVarP(&t.pdeathsig, "pdeathsig", "p", "", "paddock gets `SIG` when its parent dies, and forwards it like any other (tini -p)")
	cmd.Flags().BoolVarP(&t.warnOnReap, "warn-on-reap", "w", false, "log each process other than CMD that paddock reaps (tini -w)")
	cmd.Flags().BoolVarP(&t.subreaper, "subreaper", "s", false, "accepted for tini's -s: paddock is always a child subreaper")
}

// tiniArgs makes `paddock -- CMD` and `paddock -e 143 -- CMD` (tini's
// command lines with the binary's name changed) mean paddock run.
func tiniArgs(args []string) []string {
	if len(args) == 0 {
		return args
	}
	a := args[0]
	if a == "--" || (len(a) == 2 && a[0] == '-' && strings.ContainsRune("epwsg", rune(a[1]))) {
		return append([]string{"run"}, args...)
	}
	return args
}

// applyTiniEnv reads tini's variables: TINI_KILL_PROCESS_GROUP (as
// --forward-to-group), TINI_VERBOSITY (0 to 3, as --log-level when that
// was not given) and TINI_SUBREAPER (accepted: paddock always is one).
func applyTiniEnv(cmd *cobra.Command, f *runFlags) error {
	if v := os.Getenv("TINI_KILL_PROCESS_GROUP"); v != "" {
		f.forwardToGroup = true
	}
	if v, ok := os.LookupEnv("TINI_VERBOSITY"); ok && !cmd.Flags().Changed("log-level") {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return usageError(fmt.Sprintf("TINI_VERBOSITY=%q: want 0 (errors), 1 (warnings), 2 (info) or 3 (debug)", v))
		}
		f.logLevel = []string{"error", "warn", "info", "debug"}[min(n, 3)]
	}
	return nil
}

// setPdeathsig asks the kernel to send sig to paddock when its parent
// dies (prctl PR_SET_PDEATHSIG).
func setPdeathsig(s string) error {
	if s == "" {
		return nil
	}
	n, ok := signame.Number(s)
	if !ok || n <= 0 {
		return usageError(fmt.Sprintf("--pdeathsig %q: want a signal name or number (TERM, SIGKILL, 15)", s))
	}
	if err := sys.SetPdeathsig(n); err != nil {
		return fmt.Errorf("--pdeathsig %s: prctl(PR_SET_PDEATHSIG): %w", s, err)
	}
	return nil
}

// remapped is code, or 0 when it is one of remap (tini -e).
func remapped(code int, remap []int) int {
	for _, r := range remap {
		if code == r {
			return 0
		}
	}
	return code
}
