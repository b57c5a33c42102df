package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestDocsCoverEveryFlag keeps docs/cli.md and the README in step with the
// binary: every command and subcommand has a section in docs/cli.md and is
// named in the README, and every flag of every command is documented in its
// section.
func TestDocsCoverEveryFlag(t *testing.T) {
	ref, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	root := newRootCmd()
	var all []*cobra.Command
	var walk func(*cobra.Command)
	walk = func(p *cobra.Command) {
		for _, c := range p.Commands() {
			if c.Hidden || c.Name() == "help" {
				continue
			}
			all = append(all, c)
			walk(c)
		}
	}
	walk(root)
	for _, c := range all {
		name := strings.TrimPrefix(c.CommandPath(), "paddock ")
		head := "## paddock " + name + "\n"
		i := strings.Index(string(ref), head)
		if i < 0 {
			t.Errorf("docs/cli.md has no %q section", strings.TrimSpace(head))
			continue
		}
		section := string(ref[i+len(head):])
		if j := strings.Index(section, "\n## "); j >= 0 {
			section = section[:j]
		}
		if !strings.Contains(string(readme), "paddock "+name) {
			t.Errorf("README.md does not mention paddock %s", name)
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden || f.Name == "help" {
				return
			}
			if !strings.Contains(section, "--"+f.Name+" ") {
				t.Errorf("docs/cli.md section of paddock %s lacks --%s (regenerate it from paddock %s --help)", name, f.Name, name)
			}
		})
	}
	var docCmds []string
	for _, line := range strings.Split(string(ref), "\n") {
		if strings.HasPrefix(line, "## paddock ") {
			docCmds = append(docCmds, strings.TrimPrefix(line, "## paddock "))
		}
	}
	for _, name := range docCmds {
		if c, _, err := root.Find(strings.Fields(name)); err != nil || c == root || c.CommandPath() != "paddock "+name {
			t.Errorf("docs/cli.md documents paddock %s, which the binary does not have", name)
		}
	}
}

// TestCLIDocIsHelp: each command's section of docs/cli.md is exactly what
// its --help prints (the manual's exit statuses, environment and files
// included), as docs/gen-cli.sh writes it: the reference, --help and the
// man pages are one text.
func TestCLIDocIsHelp(t *testing.T) {
	ref, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	walkVisible(newRootCmd(), func(c *cobra.Command) {
		name := strings.TrimPrefix(c.CommandPath(), "paddock ")
		root := newRootCmd()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(append(strings.Fields(name), "--help"))
		if err := root.Execute(); err != nil {
			t.Fatalf("paddock %s --help: %v", name, err)
		}
		want := "## paddock " + name + "\n\n```\n" + out.String() + "```\n"
		if !strings.Contains(string(ref), want) {
			t.Errorf("docs/cli.md's section of paddock %s is not what paddock %s --help prints: run docs/gen-cli.sh", name, name)
		}
	})
}
