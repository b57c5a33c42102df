package main

import (
	"github.com/rs/zerolog"

	"github.com/paddock-dev/paddock/journal"
)

// maxPrintable bounds, in runes, one text paddock shows on a terminal
// (a log message, a process name or an adoption's reason).
const maxPrintable = 64 << 10

// printable renders s for a terminal as `paddock journal` does
// (journal.Excerpt: control characters, escape sequences and invalid
// UTF-8 escaped as in a Go string literal): text the agent chooses (a
// process's name, an adoption's reason) reaches the user's terminal in
// paddock's log and answers, and must not drive it.
func printable(s string) string { return journal.Excerpt([]byte(s), maxPrintable) }

// printableMessage is the console log's FormatPrepare: the message made
// printable. A refusal's message names processes by their comm, which the
// agent chooses; the console writer quotes the other fields' values
// itself (strconv.Quote) when they need it, but writes the message as it
// is.
func printableMessage(evt map[string]any) error {
	if m, ok := evt[zerolog.MessageFieldName].(string); ok {
		evt[zerolog.MessageFieldName] = printable(m)
	}
	return nil
}
