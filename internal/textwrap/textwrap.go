// Package textwrap fills running text into lines of a given width, for the
// text paddock prints in columns of its own: the commands' manual (help,
// man pages, docs/cli.md) and the release's changelogs; and keeps a message
// on one line (OneLine).
package textwrap

import "strings"

// Lines fills text's words into lines of at most width bytes (a word
// longer than width gets a line of its own); none for text without words.
func Lines(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		switch {
		case line == "":
			line = w
		case len(line)+1+len(w) <= width:
			line += " " + w
		default:
			lines = append(lines, line)
			line = w
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// OneLine keeps a message that quotes text from elsewhere (a reason, an
// argv, a command line, a profile's strings) on one line and free of
// terminal controls: line breaks and tabs become spaces, and the other
// control characters (an escape sequence's ESC among them) are dropped.
func OneLine(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t' || r == '\r':
			return ' '
		case r < 0x20 || r == 0x7f:
			return -1
		}
		return r
	}, s)
}
