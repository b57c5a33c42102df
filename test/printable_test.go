package test

import (
	"strings"
	"testing"
)

// TestLogEscapesAgentNames: an agent running as an unprivileged user names
// a process of its own with an escape sequence (a copy of sh called
// ESC[2Jevil, which clears a terminal) and has it kill a process of the
// same user started outside paddock. The refusal reaches paddock's
// console log, which goes to the user's terminal, with the name escaped
// as paddock journal shows it, and no raw escape byte; the foreign
// process lives. The refused caller's own stderr, where paddock tells it
// why, is /dev/null here: what the agent writes to its own output is its
// own.
func TestLogEscapesAgentNames(t *testing.T) {
	b := backend("seccomp")
	b.require(t)
	dir := nobodyDir(t)
	f := nobodyStart(t, "sleep", "300")
	out, _ := b.nobodyRun(t, bins.paddock, dir, `E="$(printf '\033[2Jevil')"
cp /bin/sh "$HOME/$E"
"$HOME/$E" -c "kill -TERM `+itoa(f.Pid())+`" 2>/dev/null; echo kill=$?`)
	if !strings.Contains(out, "kill=1\n") || !strings.Contains(out, `(\x1b[2Jevil)`) {
		t.Errorf("the refusal of the evil-named caller is not logged with its name escaped\n%q", out)
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("a raw escape byte reached paddock's console log\n%q", out)
	}
	if !f.Alive(t) {
		t.Error("the foreign process died")
	}
}
