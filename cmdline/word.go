package cmdline

import (
	"path"
	"path/filepath"
	"strings"
)

// Word is one argument as far as it can be known before run time.
type Word struct {
	// Value is the argument's value; parts only known at run time appear
	// as their source text.
	Value string
	// Dynamic: some part is only known at run time ($VAR, $(cmd), ~).
	Dynamic bool
	// DynamicEnd is the index in Value just after the last dynamic part.
	DynamicEnd int
	// Glob: the word has unquoted pattern characters (* ? [).
	Glob bool
	// Source is the word's source text, as written.
	Source string
}

// Lit is a word whose value is s, fully known (an argv element).
func Lit(s string) Word { return Word{Value: s, Source: s} }

// Base returns the last path element when it is known.
func (w Word) Base() (string, bool) {
	s := w.Value
	if w.Dynamic {
		i := strings.LastIndexByte(s, '/')
		if i < w.DynamicEnd || i+1 >= len(s) {
			return "", false
		}
		return s[i+1:], true
	}
	if s == "" {
		return "", false
	}
	b := filepath.Base(s)
	if b == "/" || b == "." {
		return "", false
	}
	return b, true
}

// Literal returns the value when it is fully known.
func (w Word) Literal() (string, bool) { return w.Value, !w.Dynamic }

// joinWords is the one word that ws joined by spaces make (what watch and
// eval hand to a shell).
func joinWords(ws []Word) Word {
	var out Word
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = w.Value
		if w.Dynamic {
			out.Dynamic = true
		}
	}
	out.Value = strings.Join(parts, " ")
	out.Source = out.Value
	if out.Dynamic {
		out.DynamicEnd = len(out.Value)
	}
	return out
}

// Cmd is one simple command as a reader sees it.
type Cmd struct {
	// Argv is the command and its arguments.
	Argv []Word
	// Env is the environment it runs with.
	Env map[string]string
	// ResetBy names the wrapper that replaced the environment (sudo,
	// env -i, ...), "" when none did.
	ResetBy string
	// Stdin is a script fed on stdin (here-document, echo ... |), when known.
	Stdin *string
	// Xargs: more arguments arrive on stdin (xargs).
	Xargs bool
	// Writes are the files its redirections write to, of those the
	// reader's Options.Watch picks.
	Writes []string
	// Pseudo: not a command but a compound command's (or a bare
	// assignment's) redirection, carried for its Writes; Argv[0] is its
	// source text.
	Pseudo bool
}

// NewCmd is the command argv (fully known words) run with env.
func NewCmd(argv []string, env map[string]string) Cmd {
	ws := make([]Word, len(argv))
	for i, a := range argv {
		ws[i] = Lit(a)
	}
	return Cmd{Argv: ws, Env: env}
}

// WithArgv returns c running argv instead (a wrapper's inner command).
func (c Cmd) WithArgv(argv []Word) Cmd {
	c.Argv = argv
	return c
}

// Name is the program c runs, by the last element of argv[0]. An unquoted
// pattern (/sbin/reb??t) stands for the one name of known it matches;
// known is the sorted list of names the caller treats specially.
func (c *Cmd) Name(known []string) (string, bool) {
	names := c.Names(known)
	if len(names) != 1 {
		return "", false
	}
	return names[0], true
}

// Names are the programs c may run: the last element of argv[0], or, for
// an unquoted pattern, every name of known it matches.
func (c *Cmd) Names(known []string) []string {
	if len(c.Argv) == 0 {
		return nil
	}
	w := c.Argv[0]
	b, ok := w.Base()
	if !ok {
		return nil
	}
	if !w.Glob {
		return []string{b}
	}
	var out []string
	for _, n := range known {
		if m, _ := path.Match(b, n); m {
			out = append(out, n)
		}
	}
	return out
}
