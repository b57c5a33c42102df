package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/agent"
	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/internal/signame"
	"github.com/paddock-dev/paddock/journal"
	"github.com/paddock-dev/paddock/supervisor"
)

// Flag values that are one of a few words complete to those words in every
// shell's completion script (cobra asks the binary: paddock __complete).

// logLevels are the values --log-level takes.
func logLevels() []string { return []string{"debug", "info", "warn", "error"} }

// signalNames are the signals as kill -l names them (TERM, ..., RTMIN+N),
// which paddock kill -s and paddock run --pdeathsig take.
func signalNames() []string {
	var names []string
	for n := 1; n <= 64; n++ {
		if name, ok := signame.Name(n); ok {
			names = append(names, strings.TrimPrefix(name, "SIG"))
		}
	}
	return names
}

// journalActions are the values of paddock journal --action.
func journalActions() []string {
	var names []string
	for _, a := range audit.Actions() {
		names = append(names, string(a))
	}
	return names
}

// completeFlagValues makes each named flag of c complete to its words
// (and to no file name).
func completeFlagValues(c *cobra.Command, values map[string][]string) {
	for name, words := range values {
		words := words
		err := c.RegisterFlagCompletionFunc(name, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return words, cobra.ShellCompDirectiveNoFileComp
		})
		if err != nil {
			panic("completion of --" + name + " of " + c.Name() + ": " + err.Error()) // a flag the command does not have: a bug here
		}
	}
}

// installCompletions registers the flag values of every command that has
// flags with a fixed set of values.
func installCompletions(root *cobra.Command) {
	backends := []string{string(supervisor.BackendAuto), string(supervisor.BackendSeccomp), string(supervisor.BackendPtrace)}
	mirrors := []string{string(journal.MirrorJournald), string(journal.MirrorSyslog), "none"}
	per := map[string]map[string][]string{
		"paddock run": {
			"backend": backends, "log-format": {"console", "json"}, "log-level": logLevels(),
			"report-format": {"json", "junit"}, "journal-mirror": mirrors, "pdeathsig": signalNames(),
		},
		"paddock kill":          {"signal": signalNames()},
		"paddock journal":       {"action": journalActions()},
		"paddock check":         {"hook": {"claude-code"}},
		"paddock preflight":     {"headless": {"auto", "true", "false"}},
		"paddock agent":         {"log-format": {"console", "json"}, "log-level": logLevels()},
		"paddock agent profile": {"format": agent.Formats()},
	}
	walkVisible(root, func(c *cobra.Command) {
		if values, ok := per[c.CommandPath()]; ok {
			completeFlagValues(c, values)
		}
	})
}
