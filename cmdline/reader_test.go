package cmdline

import (
	"errors"
	"strings"
	"testing"
)

func read(s string) *Reader {
	r := NewReader(Options{Deep: true})
	r.Script(s, nil)
	return r
}

// TestLimits: each limit stops the reading with an error just past its
// edge, and not at it.
func TestLimits(t *testing.T) {
	for _, tc := range []struct {
		name      string
		at, past  string
		errSubstr string
	}{
		{"depth", strings.Repeat("eval ", maxDepth) + "true", strings.Repeat("eval ", maxDepth+1) + "true", "nested more than"},
		{"commands", strings.Repeat("true; ", maxCommands), strings.Repeat("true; ", maxCommands+1), "commands"},
		{"length", "true #" + strings.Repeat("x", maxScript-len("true #")), "true #" + strings.Repeat("x", maxScript-len("true #")+1), "longer than"},
		{"brackets", strings.Repeat("(", maxNesting) + "true" + strings.Repeat(")", maxNesting),
			strings.Repeat("(", maxNesting+1) + "true" + strings.Repeat(")", maxNesting+1), "brackets nested"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := read(tc.at).Err(); err != nil {
				t.Errorf("at the limit: %v", err)
			}
			err := read(tc.past).Err()
			if err == nil || !strings.Contains(err.Error(), tc.errSubstr) {
				t.Errorf("past the limit: err = %v, want one saying %q", err, tc.errSubstr)
			}
		})
	}
	loops := "for a in 1 2 3 4 5 6 7 8 9; do for b in 1 2 3 4 5 6 7 8; do for c in 1 2 3 4 5 6 7 8; do for d in 1 2 3 4 5 6 7 8; do true; done; done; done; done"
	if err := read(loops).Err(); err == nil {
		t.Errorf("4608 loop iterations: no error")
	}
}

func TestUnparsable(t *testing.T) {
	r := read("echo 'x")
	if err := r.Err(); !errors.Is(err, ErrUnparsable) {
		t.Errorf("err = %v, want one wrapping ErrUnparsable", err)
	}
}
