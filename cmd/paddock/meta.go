package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// releaseVersion is the version a release build stamps into the binary
// (go build -ldflags "-X main.releaseVersion=v0.1.0", tools/release). It is
// empty in any other build, where the module version the Go toolchain
// recorded is shown instead.
var releaseVersion string

// versionString says which paddock this is: the release version or the
// module version, and the VCS revision it was built from, as the Go
// toolchain recorded them.
func versionString() string {
	info, ok := debug.ReadBuildInfo()
	return formatVersion(releaseVersion, info, ok)
}

// formatVersion is versionString's text for a stamped release version
// (empty when none) and the binary's build information.
func formatVersion(stamped string, info *debug.BuildInfo, ok bool) string {
	if !ok {
		if stamped != "" {
			return "paddock " + stamped + " (no build information)"
		}
		return "paddock (no build information)"
	}
	version := info.Main.Version
	if stamped != "" {
		version = stamped
	}
	if version == "" {
		version = "(devel)"
	}
	var rev, at, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	out := "paddock " + version
	switch {
	case rev == "":
		out += ", revision unknown (built outside a git checkout, or with -buildvcs=false)"
	default:
		out += ", revision " + rev
		if at != "" {
			out += " (" + at + ")"
		}
		if modified == "true" {
			out += ", with uncommitted changes"
		}
	}
	return out + ", " + info.GoVersion
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print paddock's version: release (or module) version, VCS revision, Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionString())
			return err
		},
	}
}

// completionShells are the shells `paddock completion` writes scripts for.
func completionShells() []string { return []string{"bash", "zsh", "fish"} }

func newCompletionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "Print a shell completion script",
		Long: `completion prints a completion script for bash, zsh or fish. For example:

  source <(paddock completion bash)                   # this bash session
  paddock completion zsh > "${fpath[1]}/_paddock"     # zsh, from the next shell
  paddock completion fish > ~/.config/fish/completions/paddock.fish`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError(fmt.Sprintf("completion takes one shell (%s), got %d arguments", strings.Join(completionShells(), ", "), len(args)))
			}
			return nil
		},
		ValidArgs: completionShells(),
		RunE: func(cmd *cobra.Command, args []string) error {
			root, out := cmd.Root(), cmd.OutOrStdout()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(out, true)
			case "zsh":
				return root.GenZshCompletion(out)
			case "fish":
				return root.GenFishCompletion(out, true)
			}
			return usageError(fmt.Sprintf("completion: unknown shell %q (want one of %s)", args[0], strings.Join(completionShells(), ", ")))
		},
	}
}

func newManCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "man DIR",
		Short: "Write a man page for each command into DIR",
		Long: `man writes paddock.1 and one page per command (paddock-run.1, paddock-journal.1,
...) into DIR, made from the same text as --help. For example:

  paddock man /usr/local/share/man/man1 && man paddock-run`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError(fmt.Sprintf("man takes one directory, got %d arguments", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := writeManPages(cmd.Root(), args[0])
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "wrote %d man pages into %s\n", n, args[0])
			return err
		},
	}
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
		if c.Hidden || c.Name() == "help" {
			return nil
		}
		name := strings.ReplaceAll(c.CommandPath(), " ", "-")
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

// manPage writes c's page in roff (man(7)).
func manPage(w io.Writer, c *cobra.Command) error {
	name := strings.ReplaceAll(c.CommandPath(), " ", "-")
	var b strings.Builder
	fmt.Fprintf(&b, ".TH %s 1 \"\" \"paddock\" \"paddock manual\"\n", strings.ToUpper(name))
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
			head := "\\-\\-" + roff(f.Name)
			if f.Shorthand != "" {
				head = "\\-" + f.Shorthand + ", " + head
			}
			fmt.Fprintf(&b, ".TP\n%s\n%s\n", head, roff(f.Usage))
		})
	}
	var also []string
	if p := c.Parent(); p != nil {
		also = append(also, strings.ReplaceAll(p.CommandPath(), " ", "-")+"(1)")
	}
	for _, sub := range c.Commands() {
		if !sub.Hidden && sub.Name() != "help" {
			also = append(also, strings.ReplaceAll(sub.CommandPath(), " ", "-")+"(1)")
		}
	}
	if len(also) > 0 {
		fmt.Fprintf(&b, ".SH SEE ALSO\n%s\n", strings.Join(also, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// roff escapes text for a roff body: backslashes, and lines that would
// start with a control character.
func roff(s string) string {
	s = strings.ReplaceAll(s, "\\", "\\e")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			lines[i] = "\\&" + l
		}
	}
	return strings.Join(lines, "\n")
}
