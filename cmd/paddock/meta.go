package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
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
		Long: `completion prints a completion script for bash, zsh or fish. The bash script
needs the bash-completion package (without it every TAB prints
"_get_comp_words_by_ref: command not found"); the .deb recommends it, and the
packages install the scripts where each shell looks for them. Flag values
complete too: backends, formats, log levels, signal names, journal actions.`,
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
...) into DIR, made from the same text as --help: the description, the
options, the exit statuses, the environment, the files and the examples.`,
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
