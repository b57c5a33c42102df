package textwrap

import (
	"slices"
	"testing"
)

func TestLines(t *testing.T) {
	for _, tc := range []struct {
		text  string
		width int
		want  []string
	}{
		{"", 10, nil},
		{"   ", 10, nil},
		{"one two three", 7, []string{"one two", "three"}},
		{"one  two\nthree", 80, []string{"one two three"}},
		{"a unbreakableword b", 5, []string{"a", "unbreakableword", "b"}},
	} {
		if got := Lines(tc.text, tc.width); !slices.Equal(got, tc.want) {
			t.Errorf("Lines(%q, %d) = %q, want %q", tc.text, tc.width, got, tc.want)
		}
	}
}

func TestOneLine(t *testing.T) {
	for in, want := range map[string]string{"a\nb\r\nc": "a b  c", "plain": "plain", "tab\tgoes": "tab goes", "esc\x1b[31mred": "esc[31mred", "del\x7f": "del", "ünïcode": "ünïcode"} {
		if got := OneLine(in); got != want {
			t.Errorf("OneLine(%q) = %q, want %q", in, got, want)
		}
	}
}
