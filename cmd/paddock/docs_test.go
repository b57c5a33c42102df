package main

import (
	"os"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestDocsCoverEveryFlag keeps docs/cli.md and the README in step with the
// binary: every command has a section in docs/cli.md and is named in the
// README, and every flag of every command is documented in its section.
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
	for _, c := range root.Commands() {
		if c.Hidden || c.Name() == "help" {
			continue
		}
		head := "## paddock " + c.Name() + "\n"
		i := strings.Index(string(ref), head)
		if i < 0 {
			t.Errorf("docs/cli.md has no %q section", strings.TrimSpace(head))
			continue
		}
		section := string(ref[i+len(head):])
		if j := strings.Index(section, "\n## "); j >= 0 {
			section = section[:j]
		}
		if !strings.Contains(string(readme), "paddock "+c.Name()) {
			t.Errorf("README.md does not mention paddock %s", c.Name())
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden || f.Name == "help" {
				return
			}
			if !strings.Contains(section, "--"+f.Name+" ") {
				t.Errorf("docs/cli.md section of paddock %s lacks --%s (regenerate it from paddock %s --help)", c.Name(), f.Name, c.Name())
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
		if c, _, err := root.Find([]string{name}); err != nil || c == root {
			t.Errorf("docs/cli.md documents paddock %s, which the binary does not have", name)
		}
	}
}
