package cmdline

import (
	"path/filepath"
	"sort"
	"strings"
)

// Run is what an argv runs once the wrappers a Reader sees through are
// unwrapped: the program that does the work, and the environment it gets.
// The guard and the VRAM preflight read command lines through this one
// package, so that nothing paddock understands hides a workload from one
// of them and not from the other.
type Run struct {
	// Argv is the innermost program and its arguments, as it runs them.
	// For a Python interpreter running a script (python3 ./serve.py ...)
	// it is the script and its arguments: the script is the program.
	Argv []string
	// Env is the environment the program runs with: the caller's, with what
	// the command line changes applied (leading NAME=VALUE words, env VAR=x,
	// env -i, sudo resetting it unless -E, systemd-run --setenv, ...).
	Env map[string]string
	// Module is MODULE when Argv is a Python interpreter run as
	// `python -m MODULE` (python3 -m vllm.entrypoints.openai.api_server),
	// else "".
	Module string
	// Args are the arguments the program reads: Argv[1:], or for a Module
	// what follows -m MODULE.
	Args []string
}

// maxScripts bounds the interpreter-runs-a-script steps Unwrap follows
// (python3 $(which vllm) ...): a script is one program, not a chain.
const maxScripts = 4

// Unwrap reads argv as the guard's exec check does (the exec-level view:
// a Reader without Deep) and returns what finally runs. env is the
// caller's environment (KEY=VALUE). Leading NAME=VALUE words of argv are
// assignments, as a shell prefix would be: argv is read as a command line
// (paddock preflight -- X=1 vllm ...). A shell string (sh -c '...', su -c,
// eval) is not followed: at exec level the shell's own execs are trapped
// when they happen, so the shell is what runs.
func Unwrap(argv, env []string) Run {
	vars := EnvMap(env)
	if len(argv) == 0 {
		return Run{Env: vars}
	}
	if !unwraps(argv[0]) {
		// The common case on the exec path: nothing to see through.
		return Run{Argv: argv, Env: vars, Args: argv[1:]}
	}
	c := NewCmd(argv, vars)
	c.Argv = assignments(c.Argv, c.Env, false)
	for i := 0; ; i++ {
		r := NewReader(Options{})
		r.unwrap(c)
		if len(r.out) == 0 {
			return Run{Env: c.Env}
		}
		c = r.out[0]
		module, args, script := python(c.Argv)
		if module != "" || !script || i == maxScripts {
			out := Run{Argv: make([]string, len(c.Argv)), Env: c.Env, Module: module}
			for j, w := range c.Argv {
				out.Argv[j] = w.Value
			}
			out.Args = out.Argv[1:]
			if module != "" {
				out.Args = out.Argv[len(out.Argv)-len(args):]
			}
			return out
		}
		c = c.WithArgv(args)
	}
}

// unwraps reports whether Unwrap may see through the program argv0 names,
// or argv0 is an assignment.
func unwraps(argv0 string) bool {
	b := filepath.Base(argv0)
	return wrappers[b] != nil || IsLoader(b) || isPython(b) || strings.Contains(argv0, "=")
}

// Wrappers returns the names of the programs Unwrap (and every Reader)
// sees through, sorted: a caller's tests can check that it handles each one.
// Dynamic loaders other than the named ones (ld-musl-*.so.1, ...) are seen
// through too.
func Wrappers() []string {
	out := make([]string, 0, len(wrappers))
	for n := range wrappers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// python reads a Python interpreter's command line: the module of
// `-m MODULE` and its arguments, or the script and its arguments
// (script=true). Inline code (-c, or - for stdin) and an argv that is not
// Python's give neither.
func python(argv []Word) (module string, args []Word, script bool) {
	if len(argv) == 0 {
		return "", nil, false
	}
	if b, ok := argv[0].Base(); !ok || !isPython(b) {
		return "", nil, false
	}
	a := argv[1:]
	for len(a) > 0 {
		s := a[0].Value
		if a[0].Dynamic || s == "-" || !strings.HasPrefix(s, "-") {
			break
		}
		a = a[1:]
		if s == "--" || strings.HasPrefix(s, "--") {
			if s == "--" {
				break
			}
			continue // --version, --help: the interpreter's own
		}
		for j := 1; j < len(s); j++ {
			ch := s[j]
			if !strings.ContainsRune("cmWX", rune(ch)) {
				continue
			}
			val := s[j+1:]
			if val == "" && len(a) > 0 {
				val, a = a[0].Value, a[1:]
			}
			switch ch {
			case 'c':
				return "", nil, false
			case 'm':
				return val, a, false
			}
			break
		}
	}
	if len(a) == 0 || a[0].Value == "-" {
		return "", nil, false
	}
	return "", a, true
}

// isPython reports whether base names a Python interpreter: python,
// python3, python3.12.
func isPython(base string) bool {
	v, ok := strings.CutPrefix(base, "python")
	if !ok {
		return false
	}
	if v == "" {
		return true
	}
	major, minor, dotted := strings.Cut(v, ".")
	if len(major) != 1 || major[0] < '0' || major[0] > '9' {
		return false
	}
	if !dotted {
		return true
	}
	if minor == "" {
		return false
	}
	for i := 0; i < len(minor); i++ {
		if minor[i] < '0' || minor[i] > '9' {
			return false
		}
	}
	return true
}
