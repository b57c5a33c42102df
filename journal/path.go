package journal

import (
	"errors"
	"path/filepath"
)

// EnvJournal names the environment variable that overrides the journal path.
const EnvJournal = "PADDOCK_JOURNAL"

// DefaultPath resolves where the journal lives, first match wins:
//
//  1. flagValue, if non-empty (the --journal flag);
//  2. $PADDOCK_JOURNAL, if non-empty;
//  3. $XDG_STATE_HOME/paddock/journal.jsonl, if XDG_STATE_HOME is an
//     absolute path (the XDG spec says relative values are to be ignored);
//  4. home/.local/state/paddock/journal.jsonl.
//
// Its inputs are explicit (getenv, typically os.Getenv, and the home
// directory) so that callers and tests control them; a nil getenv reads no
// environment. It fails only when none of the four applies, naming the ways
// to set a path.
func DefaultPath(flagValue string, getenv func(string) string, home string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	if p := getenv(EnvJournal); p != "" {
		return p, nil
	}
	if s := getenv("XDG_STATE_HOME"); s != "" && filepath.IsAbs(s) {
		return filepath.Join(s, "paddock", "journal.jsonl"), nil
	}
	if home != "" && filepath.IsAbs(home) {
		return filepath.Join(home, ".local", "state", "paddock", "journal.jsonl"), nil
	}
	return "", errors.New("journal: no journal path: pass --journal, or set PADDOCK_JOURNAL, XDG_STATE_HOME or HOME to an absolute path")
}
