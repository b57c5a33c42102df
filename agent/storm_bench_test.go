package agent

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// benchChild is a container program of the benchmarks: benchChild
// allowed N, or benchChild storm.
const benchChild = "__agent_bench"

// benchMain runs in a container the harness serves.
//
//	allowed N: kill(SIGCONT) of a sleep of its own, N times, each decided
//	           and allowed; prints ns_per_kill=
//	storm:     kill(SIGTERM) of its container's pid 1, a lifeline, for
//	           ever, each refused with a message on its stderr; prints
//	           "storming" after the first refusal
func benchMain(args []string) int {
	if len(args) == 2 && args[0] == "allowed" {
		n, err := strconv.Atoi(args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		sleep := exec.Command("sleep", "1000")
		if err := sleep.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer func() { _ = sleep.Process.Kill(); _ = sleep.Wait() }()
		start := time.Now()
		for range n {
			if err := unix.Kill(sleep.Process.Pid, unix.SIGCONT); err != nil {
				fmt.Fprintln(os.Stderr, "kill(SIGCONT) of its own sleep:", err)
				return 1
			}
		}
		fmt.Printf("ns_per_kill=%d\n", time.Since(start).Nanoseconds()/int64(max(n, 1)))
		return 0
	}
	if len(args) == 1 && args[0] == "storm" {
		for first := true; ; first = false {
			if err := unix.Kill(1, unix.SIGTERM); !errors.Is(err, unix.EPERM) {
				fmt.Fprintln(os.Stderr, "kill(1, SIGTERM):", err)
				return 1
			}
			if first {
				fmt.Println("storming")
			}
		}
	}
	fmt.Fprintln(os.Stderr, "usage: allowed N | storm")
	return 2
}

// BenchmarkFleetAllowedKill is the cost of a container's allowed, decided
// kill on a quiet node and beside another container's refusal storm, both
// served by one agent; the storm's stderr is a file, so that each message
// it is allowed goes through the pipeline's teller (a pipe would take it at
// once). docs/perf.md: the storm may cost the other container at most
// 1.5x. Metric: ns/kill, measured inside container B.
func BenchmarkFleetAllowedKill(b *testing.B) {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	for _, storm := range []bool{false, true} {
		name := "quiet"
		if storm {
			name = "storm"
		}
		b.Run(name, func(b *testing.B) {
			h := startHarness(b)
			if storm {
				errs, err := os.Create(filepath.Join(b.TempDir(), "storm.stderr"))
				if err != nil {
					b.Fatal(err)
				}
				defer errs.Close()
				rd, wr, err := os.Pipe()
				if err != nil {
					b.Fatal(err)
				}
				// sh stays pid 1, the storm its child.
				a := h.start(b, "A", fmt.Sprintf("%s %s storm; exit $?", self, benchChild), wr, errs)
				wr.Close()
				defer func() { _ = a.Process.Kill(); _ = a.Wait(); rd.Close() }()
				line, err := bufio.NewReader(rd).ReadString('\n')
				if line != "storming\n" {
					got, _ := os.ReadFile(errs.Name())
					b.Fatalf("the storm did not start: %q %v\n%s", line, err, got)
				}
			}
			before := journalLines(h.journal)
			start := time.Now()
			b.ResetTimer()
			out := h.container(b, "B", fmt.Sprintf("exec %s %s allowed %d", self, benchChild, b.N))
			b.StopTimer()
			if storm {
				// What the storm got answered meanwhile (each refusal is journaled).
				b.ReportMetric(float64(journalLines(h.journal)-before)/time.Since(start).Seconds(), "refusals/s")
			}
			i := strings.Index(out, "ns_per_kill=")
			if i < 0 {
				b.Fatalf("container B: %s", out)
			}
			ns, err := strconv.ParseFloat(strings.TrimSpace(out[i+len("ns_per_kill="):]), 64)
			if err != nil {
				b.Fatalf("container B: %s", out)
			}
			b.ReportMetric(ns, "ns/kill")
		})
	}
}

// journalLines counts the records in the journal at path.
func journalLines(path string) int {
	b, _ := os.ReadFile(path)
	return strings.Count(string(b), "\n")
}
