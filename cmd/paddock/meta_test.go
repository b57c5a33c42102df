package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestManPageForEveryCommand: paddock man writes a page for the root and
// for every visible command, each with its name, synopsis and options.
func TestManPageForEveryCommand(t *testing.T) {
	dir := t.TempDir()
	root := newRootCmd()
	n, err := writeManPages(root, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	var visit func(*cobra.Command)
	visit = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		want++
		page := filepath.Join(dir, strings.ReplaceAll(c.CommandPath(), " ", "-")+".1")
		b, err := os.ReadFile(page)
		if err != nil {
			t.Errorf("no page for %q: %v", c.CommandPath(), err)
			return
		}
		for _, s := range []string{".SH NAME", ".SH SYNOPSIS", c.Name()} {
			if !strings.Contains(string(b), s) {
				t.Errorf("%s lacks %q", page, s)
			}
		}
		for _, sub := range c.Commands() {
			visit(sub)
		}
	}
	visit(root)
	if n != want {
		t.Errorf("wrote %d pages, want %d", n, want)
	}
}
