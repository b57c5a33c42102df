package main

import (
	"os"
	"testing"

	"github.com/paddock-dev/paddock/internal/ptytest"
)

// colour is on for a terminal only, and never with NO_COLOR.
func TestColour(t *testing.T) {
	_, tty := ptytest.Open(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	file, err := os.Create(t.TempDir() + "/log")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	env := func(noColor string) func(string) string {
		return func(k string) string {
			if k == "NO_COLOR" {
				return noColor
			}
			return ""
		}
	}
	tests := []struct {
		name    string
		f       *os.File
		noColor string
		want    bool
	}{
		{"terminal", tty, "", true},
		{"terminal with NO_COLOR", tty, "1", false},
		{"pipe", w, "", false},
		{"file", file, "", false},
	}
	for _, tc := range tests {
		if got := colour(tc.f, env(tc.noColor)); got != tc.want {
			t.Errorf("%s: colour = %v, want %v", tc.name, got, tc.want)
		}
	}
}
