package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/paddock-dev/paddock/journal"
	"github.com/paddock-dev/paddock/policy"
	"github.com/paddock-dev/paddock/report"
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
	report.Summary
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

// The JUnit document: testsuites > testsuite > testcase > failure. It is
// written by junitXML rather than encoding/xml, which would be linked into
// every paddock binary (and its package initialisation run at every start,
// paddock being a container's init) for this one report.
type junitSuite struct {
	Name     string
	Tests    int
	Failures int
	Time     string
	Cases    []junitCase
}

type junitCase struct {
	Name      string
	ClassName string
	Failure   *junitFailure
}

type junitFailure struct {
	Message string
	Type    string
	Text    string
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
	// Adoptions and honoured opt-ins: what the agent let itself do, which
	// a reviewer must see as a refusal is seen (and --strict fails on).
	for _, p := range r.Permitted {
		what := p.Comm
		if p.Action != "adopted" {
			what = p.OptIn + " " + p.Syscall
			if p.Path != "" {
				what = p.OptIn + " " + strings.Join(p.Argv, " ")
			}
		}
		name := fmt.Sprintf("%s %s", p.Action, what)
		if seen[name]++; seen[name] > 1 {
			name += fmt.Sprintf(" #%d", seen[name])
		}
		s.Cases = append(s.Cases, junitCase{Name: name, ClassName: "paddock." + p.Action,
			Failure: &junitFailure{Message: p.Message, Type: p.Action, Text: p.Message}})
	}
	if n := r.Adoptions + r.OptIns - len(r.Permitted); n > 0 {
		s.Cases = append(s.Cases, junitCase{Name: fmt.Sprintf("%d more adoptions and opt-ins", n), ClassName: "paddock.more_permitted",
			Failure: &junitFailure{Message: fmt.Sprintf("%d adoptions and opt-ins not listed one by one (see the journal)", n), Type: "more_permitted"}})
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
	return junitXML(s), nil
}

// junitXML writes the document as encoding/xml's MarshalIndent with a
// two-space indent would, after the XML declaration: elements are never
// self-closed, attribute values and text escaped by xmlEscape.
func junitXML(s junitSuite) []byte {
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n")
	fmt.Fprintf(&b, "  <testsuite name=\"%s\" tests=\"%d\" failures=\"%d\" time=\"%s\">",
		xmlEscape(s.Name), s.Tests, s.Failures, xmlEscape(s.Time))
	for _, c := range s.Cases {
		fmt.Fprintf(&b, "\n    <testcase name=\"%s\" classname=\"%s\">", xmlEscape(c.Name), xmlEscape(c.ClassName))
		if f := c.Failure; f != nil {
			fmt.Fprintf(&b, "\n      <failure message=\"%s\" type=\"%s\">%s</failure>\n    ",
				xmlEscape(f.Message), xmlEscape(f.Type), xmlEscape(f.Text))
		}
		b.WriteString("</testcase>")
	}
	if len(s.Cases) > 0 {
		b.WriteString("\n  ")
	}
	b.WriteString("</testsuite>\n</testsuites>")
	return []byte(b.String())
}

// xmlEscape escapes s for an XML attribute value or character data as
// encoding/xml does: the five markup characters as entities, tab, newline
// and carriage return as character references (a parser would fold them
// into spaces in an attribute), and what is not an XML character, or not
// UTF-8, as U+FFFD.
func xmlEscape(s string) string {
	var b strings.Builder
	for i, w := 0, 0; i < len(s); i += w {
		r, n := utf8.DecodeRuneInString(s[i:])
		w = n
		switch {
		case r == '"':
			b.WriteString("&#34;")
		case r == '\'':
			b.WriteString("&#39;")
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '\t':
			b.WriteString("&#x9;")
		case r == '\n':
			b.WriteString("&#xA;")
		case r == '\r':
			b.WriteString("&#xD;")
		case r == utf8.RuneError && n == 1, !xmlChar(r):
			b.WriteString("\uFFFD")
		default:
			b.WriteString(s[i : i+n])
		}
	}
	return b.String()
}

// xmlChar reports whether r may appear in an XML document (XML 1.0, Char).
func xmlChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD ||
		r >= 0x10000 && r <= 0x10FFFF
}

// summaryLine is the one line paddock prints about refusals, adoptions
// and honoured opt-ins at exit.
func summaryLine(s report.Summary) string {
	line := "no refusals"
	if s.Refusals > 0 {
		rules := make([]string, 0, len(s.ByRule))
		for r, n := range s.ByRule {
			rules = append(rules, fmt.Sprintf("%s %d", r, n))
		}
		sort.Strings(rules)
		line = fmt.Sprintf("%s (%s)", counted(s.Refusals, "refusal", "refusals"), strings.Join(rules, ", "))
	}
	if s.Widened() {
		line += fmt.Sprintf("; %s, %s", counted(s.Adoptions, "adoption", "adoptions"), counted(s.OptIns, "opt-in honoured", "opt-ins honoured"))
	}
	if s.Refusals > 0 || s.Widened() {
		line += "; paddock journal shows them"
	}
	return line
}

// counted is "1 refusal" or "N refusals".
func counted(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
