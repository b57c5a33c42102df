package main

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/journal"
	"github.com/paddock-dev/paddock/policy"
	"github.com/paddock-dev/paddock/supervisor"
)

// runReport is the --report JSON document.
type runReport struct {
	Session  string             `json:"session"`
	Command  []string           `json:"command"`
	ExitCode int                `json:"exit_code"`
	Status   int                `json:"command_status"`
	Strict   bool               `json:"strict"`
	Started  time.Time          `json:"started"`
	Finished time.Time          `json:"finished"`
	Cleanup  supervisor.Cleanup `json:"cleanup"`
	supervisor.Summary
}

// writeReport writes the run's summary to path as JSON or JUnit XML.
func writeReport(path, format string, r runReport) error {
	var b []byte
	var err error
	switch format {
	case "json":
		b, err = json.MarshalIndent(r, "", "  ")
	case "junit":
		b, err = junit(r)
	default:
		return fmt.Errorf("--report-format %q: want json or junit", format)
	}
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	// Never through a link the agent planted: a regular file of paddock's
	// own, truncated only once checked (journal.OpenOwned).
	fl, err := journal.OpenOwned(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := fl.Truncate(0); err != nil {
		fl.Close()
		return fmt.Errorf("report %s: %w", path, err)
	}
	if _, err := fl.Write(append(b, '\n')); err != nil {
		fl.Close()
		return fmt.Errorf("report %s: write: %w", path, err)
	}
	if err := fl.Close(); err != nil {
		return fmt.Errorf("report %s: %w", path, err)
	}
	return nil
}

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// junit renders the report for CI systems that show JUnit: one failed test
// case per refusal, or one passing case when nothing was refused.
func junit(r runReport) ([]byte, error) {
	s := junitSuite{Name: "paddock run " + strings.Join(r.Command, " "), Time: fmt.Sprintf("%.3f", r.Finished.Sub(r.Started).Seconds())}
	seen := map[string]int{}
	for _, it := range r.Items {
		// Case names hold no pids, so that CI tracks the same refusal
		// across runs; a repeat within one run gets a number.
		what := it.Syscall
		switch {
		case it.Path != "":
			what += " " + strings.Join(it.Argv, " ")
		case it.Signal != 0:
			what = fmt.Sprintf("%s(%s)", it.Syscall, policy.SignalName(it.Signal))
		}
		name := fmt.Sprintf("refused %s (%s)", what, it.Rule)
		if seen[name]++; seen[name] > 1 {
			name += fmt.Sprintf(" #%d", seen[name])
		}
		s.Cases = append(s.Cases, junitCase{
			Name:      name,
			ClassName: "paddock." + it.Rule,
			Failure:   &junitFailure{Message: it.Message, Type: it.Rule, Text: it.Message},
		})
	}
	if n := r.Refusals - len(r.Items); n > 0 {
		s.Cases = append(s.Cases, junitCase{Name: fmt.Sprintf("%d more refusals", n), ClassName: "paddock.more",
			Failure: &junitFailure{Message: fmt.Sprintf("%d refusals not listed one by one (see the journal)", n), Type: "more"}})
	}
	if len(s.Cases) == 0 {
		s.Cases = append(s.Cases, junitCase{Name: "no refusals", ClassName: "paddock"})
	}
	s.Tests = len(s.Cases)
	for _, c := range s.Cases {
		if c.Failure != nil {
			s.Failures++
		}
	}
	b, err := xml.MarshalIndent(junitSuites{Suites: []junitSuite{s}}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), b...), nil
}

// summaryLine is the one line paddock prints about refusals at exit.
func summaryLine(s supervisor.Summary) string {
	if s.Refusals == 0 {
		return "no refusals"
	}
	rules := make([]string, 0, len(s.ByRule))
	for r, n := range s.ByRule {
		rules = append(rules, fmt.Sprintf("%s %d", r, n))
	}
	sort.Strings(rules)
	noun := "refusals"
	if s.Refusals == 1 {
		noun = "refusal"
	}
	return fmt.Sprintf("%d %s (%s); paddock journal shows them", s.Refusals, noun, strings.Join(rules, ", "))
}
