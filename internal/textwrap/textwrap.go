// Package textwrap fills running text into lines of a given width, for the
// text paddock prints in columns of its own: the commands' manual (help,
// man pages, docs/cli.md) and the release's changelogs.
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
