package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
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
		// roff writes a name's hyphens escaped (runtime-wrapper).
		name := strings.ReplaceAll(c.Name(), "-", "\\-")
		for _, s := range []string{".SH NAME", ".SH SYNOPSIS", name, ".SH OPTIONS", ".SH EXIT STATUS", ".SH EXAMPLES", "\\fB\\-\\-help\\fR"} {
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

// TestManualForEveryCommand: every visible command has a manual with its
// exit statuses and at least one example, each entry with a name and a
// text, and no manual is kept for a command that does not exist.
func TestManualForEveryCommand(t *testing.T) {
	root := newRootCmd()
	paths := map[string]bool{root.CommandPath(): true}
	check := func(c *cobra.Command) {
		m := manualOf(c)
		if len(m.Exit) == 0 || len(m.Examples) == 0 {
			t.Errorf("%s: its manual has %d exit statuses and %d examples; want both", c.CommandPath(), len(m.Exit), len(m.Examples))
		}
		for _, list := range [][]term{m.Exit, m.Env, m.Files, m.Examples} {
			for _, e := range list {
				if strings.TrimSpace(e.Name) == "" || strings.TrimSpace(e.Text) == "" {
					t.Errorf("%s: manual entry %+v lacks a name or a text", c.CommandPath(), e)
				}
			}
		}
	}
	check(root)
	walkVisible(root, func(c *cobra.Command) {
		paths[c.CommandPath()] = true
		check(c)
	})
	for p := range manuals() {
		if !paths[p] {
			t.Errorf("manuals() has a manual for %q, which is no command", p)
		}
	}
}

// TestHelpManual: --help ends with the manual's lists, the long names on
// a line of their own, every line within 80 columns.
func TestHelpManual(t *testing.T) {
	var b strings.Builder
	writeHelpManual(&b, manual{
		Exit: []term{{"0", "fine"}, {"1", strings.Repeat("word ", 30)}},
		Env:  []term{{"A_VERY_LONG_VARIABLE_NAME_INDEED", "long"}},
	})
	want := "\nExit status:\n  0  fine\n  1  "
	if !strings.HasPrefix(b.String(), want) {
		t.Errorf("help manual starts %q, want %q", b.String(), want)
	}
	if !strings.Contains(b.String(), "\nEnvironment:\n  A_VERY_LONG_VARIABLE_NAME_INDEED\n") {
		t.Errorf("a long name is not on a line of its own:\n%s", b.String())
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if len(line) > 80 {
			t.Errorf("line of %d columns: %q", len(line), line)
		}
	}
}

// TestFormatVersion: a release build's stamped version replaces the module
// version; the revision and Go version are shown either way.
func TestFormatVersion(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}}
	for _, tc := range []struct {
		name    string
		stamped string
		info    *debug.BuildInfo
		ok      bool
		want    string
	}{
		{"release", "v0.3.0", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261201100000-abc123"}, Settings: vcs},
			true, "paddock v0.3.0, revision abc123 (2026-12-01T10:00:00Z), go1.26.8"},
		{"module version", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261201100000-abc123"}, Settings: vcs},
			true, "paddock v0.0.0-20261201100000-abc123, revision abc123 (2026-12-01T10:00:00Z), go1.26.8"},
		{"devel, dirty", "", &debug.BuildInfo{GoVersion: "go1.26.8", Settings: append(vcs, debug.BuildSetting{Key: "vcs.modified", Value: "true"})},
			true, "paddock (devel), revision abc123 (2026-12-01T10:00:00Z), with uncommitted changes, go1.26.8"},
		{"no vcs", "v0.3.0", &debug.BuildInfo{GoVersion: "go1.26.8"},
			true, "paddock v0.3.0, revision unknown (built outside a git checkout, or with -buildvcs=false), go1.26.8"},
		{"no build info, release", "v0.3.0", nil, false, "paddock v0.3.0 (no build information)"},
		{"no build info", "", nil, false, "paddock (no build information)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := formatVersion(tc.stamped, tc.info, tc.ok); got != tc.want {
				t.Errorf("formatVersion(%q) = %q, want %q", tc.stamped, got, tc.want)
			}
		})
	}
}
