package main

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/paddock-dev/paddock/internal/features"
	"github.com/paddock-dev/paddock/internal/reexec"
	"github.com/paddock-dev/paddock/supervisor"
)

func TestMain(m *testing.M) {
	reexec.Run(supervisor.InitChild(), features.ProbeChild())
	os.Exit(testscript.RunMain(m, map[string]func() int{"paddock": func() int { return execute(os.Args[1:]) }}))
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata", Cmds: map[string]func(*testscript.TestScript, bool, []string){
		"foreign":     cmdForeign,
		"reportcheck": cmdReportCheck,
	}, Condition: condition})
}

// condition answers the scripts' own conditions: [bash-completion], the
// bash-completion package (which paddock's bash completion script needs)
// is installed; [hybrid-cgroups], /sys/fs/cgroup is the hybrid layout,
// which crun refuses (doctor says so); [root], the scripts run as root
// (paddock agent's socket has a default for a user only).
func condition(cond string) (bool, error) {
	switch cond {
	case "root":
		return os.Geteuid() == 0, nil
	case "bash-completion":
		_, err := os.Stat("/usr/share/bash-completion/bash_completion")
		return err == nil, nil
	case "hybrid-cgroups":
		return features.HybridCgroups(), nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}

// cmdForeign starts `sleep 300` outside paddock and sets $NAME to its pid:
// a process the agent does not own. It is killed when the script ends.
// Usage: foreign NAME
func cmdForeign(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: foreign NAME")
	}
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		ts.Fatalf("start foreign: %v", err)
	}
	ts.Defer(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ts.Setenv(args[0], strconv.Itoa(cmd.Process.Pid))
}

// cmdReportCheck parses a --report file (json or junit) and prints what it
// holds in one normalized line, so scripts can match on it.
// Usage: reportcheck json|junit FILE
func cmdReportCheck(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: reportcheck json|junit FILE")
	}
	data := ts.ReadFile(args[1])
	switch args[0] {
	case "json":
		var r struct {
			ExitCode int            `json:"exit_code"`
			Status   int            `json:"command_status"`
			Refusals int            `json:"refusals"`
			ByRule   map[string]int `json:"by_rule"`
			Items    []struct {
				Caller  int    `json:"caller"`
				Target  int    `json:"target"`
				Rule    string `json:"rule"`
				Message string `json:"message"`
			} `json:"items"`
			Adoptions int `json:"adoptions"`
			OptIns    int `json:"opt_ins"`
			Permitted []struct {
				Action  string `json:"action"`
				Pid     int    `json:"pid"`
				Message string `json:"message"`
			} `json:"permitted"`
		}
		if err := json.Unmarshal([]byte(data), &r); err != nil {
			ts.Fatalf("report %s is not JSON: %v", args[1], err)
		}
		var rules []string
		for k, v := range r.ByRule {
			rules = append(rules, fmt.Sprintf("%s:%d", k, v))
		}
		sort.Strings(rules)
		var permitted []string
		for _, p := range r.Permitted {
			if p.Pid == 0 || p.Message == "" {
				ts.Fatalf("report's permitted item lacks pid or message: %+v", p)
			}
			permitted = append(permitted, p.Action)
		}
		fmt.Fprintf(ts.Stdout(), "exit=%d status=%d refusals=%d items=%d by_rule=%s adoptions=%d opt_ins=%d permitted=%s\n",
			r.ExitCode, r.Status, r.Refusals, len(r.Items), strings.Join(rules, ","), r.Adoptions, r.OptIns, strings.Join(permitted, ","))
		for _, it := range r.Items {
			if it.Caller == 0 || it.Message == "" || it.Rule == "" {
				ts.Fatalf("report item lacks caller, rule or message: %+v", it)
			}
		}
	case "junit":
		var s struct {
			Suites []struct {
				Tests    int `xml:"tests,attr"`
				Failures int `xml:"failures,attr"`
				Cases    []struct {
					Name    string `xml:"name,attr"`
					Failure *struct {
						Message string `xml:"message,attr"`
					} `xml:"failure"`
				} `xml:"testcase"`
			} `xml:"testsuite"`
		}
		if err := xml.Unmarshal([]byte(data), &s); err != nil {
			ts.Fatalf("report %s is not XML: %v", args[1], err)
		}
		if len(s.Suites) != 1 {
			ts.Fatalf("want one testsuite, got %d", len(s.Suites))
		}
		su := s.Suites[0]
		fails := 0
		for _, c := range su.Cases {
			if c.Failure != nil {
				fails++
			}
		}
		if fails != su.Failures || len(su.Cases) != su.Tests {
			ts.Fatalf("junit counts disagree: tests=%d cases=%d failures=%d failed cases=%d", su.Tests, len(su.Cases), su.Failures, fails)
		}
		fmt.Fprintf(ts.Stdout(), "tests=%d failures=%d\n", su.Tests, su.Failures)
		for _, c := range su.Cases {
			fmt.Fprintf(ts.Stdout(), "case %s\n", c.Name)
		}
	default:
		ts.Fatalf("reportcheck: unknown format %q", args[0])
	}
}
