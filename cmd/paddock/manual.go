package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/paddock-dev/paddock/internal/textwrap"
)

// A command's documentation is written once, on the command: its Short and
// Long text, its flags' usage, and its manual: exit statuses, the
// environment it reads (or sets for CMD), the files it uses, and examples.
// --help prints all of it (the manual after the flags), paddock man writes
// the same text as man pages (EXIT STATUS, ENVIRONMENT, FILES, EXAMPLES),
// and docs/cli.md is --help (docs/gen-cli.sh; a test keeps it current): the
// three cannot drift apart.

// manual is the part of a command's documentation beyond its description
// and flags.
type manual struct {
	Exit     []term `json:"exit,omitempty"`     // each exit status, and when
	Env      []term `json:"env,omitempty"`      // each variable, and what it does
	Files    []term `json:"files,omitempty"`    // each path, and what it is
	Examples []term `json:"examples,omitempty"` // a command line, and what it does
}

// term is one entry of a manual's list: a name (a status, a variable, a
// path, a command line) and its text.
type term struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

// manualKey is the annotation a command's manual is kept in, as JSON.
const manualKey = "paddock.manual"

// apply attaches m to c (and its examples as c's Example, which cobra's
// --help prints before the flags) and returns c.
func (m manual) apply(c *cobra.Command) *cobra.Command {
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("manual of %s: %v", c.Name(), err)) // plain strings always marshal
	}
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[manualKey] = string(b)
	var ex strings.Builder
	for i, e := range m.Examples {
		if i > 0 {
			ex.WriteString("\n")
		}
		for _, line := range textwrap.Lines(e.Text, 80-4) {
			fmt.Fprintf(&ex, "  # %s\n", line)
		}
		fmt.Fprintf(&ex, "  %s\n", e.Name)
	}
	c.Example = strings.TrimSuffix(ex.String(), "\n")
	return c
}

// manualOf is the manual attached to c (an empty one when none is).
func manualOf(c *cobra.Command) manual {
	var m manual
	if s := c.Annotations[manualKey]; s != "" {
		_ = json.Unmarshal([]byte(s), &m) // written by apply
	}
	return m
}

// installHelp makes --help (and paddock help CMD) print a command's exit
// statuses, environment and files after cobra's usage text.
func installHelp(root *cobra.Command) {
	usage := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		usage(c, args)
		writeHelpManual(c.OutOrStdout(), manualOf(c))
	})
}

// writeHelpManual writes m's lists as --help shows them: a heading, then
// each name with its text beside it (below it when the name is long),
// wrapped to 80 columns.
func writeHelpManual(w io.Writer, m manual) {
	var b strings.Builder
	for _, sec := range []struct {
		title string
		terms []term
	}{{"Exit status", m.Exit}, {"Environment", m.Env}, {"Files", m.Files}} {
		if len(sec.terms) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n%s:\n", sec.title)
		col := 0
		for _, t := range sec.terms {
			if n := len(t.Name); n <= 24 && n > col {
				col = n
			}
		}
		col += 4 // two spaces before, two after
		for _, t := range sec.terms {
			lines := textwrap.Lines(t.Text, 80-col)
			if len(lines) == 0 {
				lines = []string{""} // the name alone
			}
			if len(t.Name)+4 > col {
				fmt.Fprintf(&b, "  %s\n", t.Name)
				for _, l := range lines {
					fmt.Fprintf(&b, "%s%s\n", strings.Repeat(" ", col), l)
				}
				continue
			}
			for i, l := range lines {
				name := ""
				if i == 0 {
					name = t.Name
				}
				fmt.Fprintf(&b, "  %-*s%s\n", col-2, name, l)
			}
		}
	}
	_, _ = io.WriteString(w, b.String())
}

// writeManPages writes a page for c and each of its visible subcommands
// into dir, and returns how many it wrote.
func writeManPages(c *cobra.Command, dir string) (int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, fmt.Errorf("man: %w", err)
	}
	n := 0
	var visit func(*cobra.Command) error
	visit = func(c *cobra.Command) error {
		if !visible(c) {
			return nil
		}
		name := pageName(c)
		f, err := os.Create(filepath.Join(dir, name+".1"))
		if err != nil {
			return fmt.Errorf("man: %w", err)
		}
		werr := manPage(f, c)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return fmt.Errorf("man: write %s: %w", f.Name(), werr)
		}
		n++
		for _, sub := range c.Commands() {
			if err := visit(sub); err != nil {
				return err
			}
		}
		return nil
	}
	return n, visit(c)
}

// visible says whether c has a page (and a section in docs/cli.md).
func visible(c *cobra.Command) bool { return !c.Hidden && c.Name() != "help" }

// pageName is c's man page: paddock-run for paddock run.
func pageName(c *cobra.Command) string { return strings.ReplaceAll(c.CommandPath(), " ", "-") }

// manPage writes c's page in roff (man(7)): NAME, SYNOPSIS, DESCRIPTION
// (the Long text), OPTIONS (its flags, -h included), for the root page
// COMMANDS, then EXIT STATUS, ENVIRONMENT, FILES and EXAMPLES from its
// manual (the root's ENVIRONMENT and FILES are every command's together),
// and SEE ALSO.
func manPage(w io.Writer, c *cobra.Command) error {
	c.InitDefaultHelpFlag()
	name := pageName(c)
	var b strings.Builder
	fmt.Fprintf(&b, ".TH %s 1 \"\" \"paddock\" \"paddock manual\"\n", strings.ToUpper(name))
	// Left-aligned, never hyphenated: paths and variables stay whole.
	b.WriteString(".nh\n.ad l\n")
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n", roff(name), roff(c.Short))
	fmt.Fprintf(&b, ".SH SYNOPSIS\n.nf\n%s\n.fi\n", roff(c.UseLine()))
	desc := c.Long
	if desc == "" {
		desc = c.Short
	}
	fmt.Fprintf(&b, ".SH DESCRIPTION\n.nf\n%s\n.fi\n", roff(desc))
	if flags := c.NonInheritedFlags(); flags.HasAvailableFlags() {
		b.WriteString(".SH OPTIONS\n")
		flags.VisitAll(func(f *pflag.Flag) {
			if f.Hidden {
				return
			}
			varname, usage := pflag.UnquoteUsage(f)
			head := "\\fB\\-\\-" + roff(f.Name) + "\\fR"
			if f.Shorthand != "" {
				head = "\\fB\\-" + roff(f.Shorthand) + "\\fR, " + head
			}
			if varname != "" {
				head += " \\fI" + roff(varname) + "\\fR"
			}
			if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "[]" {
				usage += " (default " + f.DefValue + ")"
			}
			fmt.Fprintf(&b, ".TP\n%s\n%s\n", head, roff(usage))
		})
	}
	m := manualOf(c)
	if !c.HasParent() {
		b.WriteString(".SH COMMANDS\n")
		walkVisible(c, func(sub *cobra.Command) {
			fmt.Fprintf(&b, ".TP\n\\fB%s\\fR\n%s (%s(1))\n", roff(sub.CommandPath()), roff(sub.Short), roff(pageName(sub)))
		})
		walkVisible(c, func(sub *cobra.Command) {
			sm := manualOf(sub)
			m.Env, m.Files = mergeTerms(m.Env, sm.Env), mergeTerms(m.Files, sm.Files)
		})
	}
	manTerms(&b, "EXIT STATUS", m.Exit, "\\fB%s\\fR")
	manTerms(&b, "ENVIRONMENT", m.Env, "\\fB%s\\fR")
	manTerms(&b, "FILES", m.Files, "\\fI%s\\fR")
	if len(m.Examples) > 0 {
		b.WriteString(".SH EXAMPLES\n")
		for _, e := range m.Examples {
			fmt.Fprintf(&b, ".PP\n%s\n.PP\n.RS 4\n.nf\n%s\n.fi\n.RE\n", roff(e.Text), roff(e.Name))
		}
	}
	var also []string
	if p := c.Parent(); p != nil {
		also = append(also, pageName(p)+"(1)")
	}
	for _, sub := range c.Commands() {
		if visible(sub) {
			also = append(also, pageName(sub)+"(1)")
		}
	}
	if len(also) > 0 {
		fmt.Fprintf(&b, ".SH SEE ALSO\n%s\n", strings.Join(also, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// walkVisible calls fn for every visible command under c, depth first, in
// cobra's (sorted) order.
func walkVisible(c *cobra.Command, fn func(*cobra.Command)) {
	for _, sub := range c.Commands() {
		if visible(sub) {
			fn(sub)
			walkVisible(sub, fn)
		}
	}
}

// mergeTerms adds to have the terms of more whose names it lacks, and
// sorts the result by name.
func mergeTerms(have, more []term) []term {
	seen := map[string]bool{}
	for _, t := range have {
		seen[t.Name] = true
	}
	for _, t := range more {
		if !seen[t.Name] {
			seen[t.Name] = true
			have = append(have, t)
		}
	}
	sort.SliceStable(have, func(i, j int) bool { return have[i].Name < have[j].Name })
	return have
}

// manTerms writes a section of tagged paragraphs, each name set in format.
func manTerms(b *strings.Builder, title string, terms []term, format string) {
	if len(terms) == 0 {
		return
	}
	fmt.Fprintf(b, ".SH %s\n", title)
	for _, t := range terms {
		fmt.Fprintf(b, ".TP\n"+format+"\n%s\n", roff(t.Name), roff(t.Text))
	}
}

// roff escapes text for a roff body: backslashes, hyphens (a minus sign
// in roff, as options and command lines mean them), and lines that would
// start with a control character.
func roff(s string) string {
	s = strings.ReplaceAll(s, "\\", "\\e")
	s = strings.ReplaceAll(s, "-", "\\-")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			lines[i] = "\\&" + l
		}
	}
	return strings.Join(lines, "\n")
}
