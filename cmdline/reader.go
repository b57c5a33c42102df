package cmdline

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Limits that keep a hostile or huge string from costing more than a
// moment: past them the string is reported as unparsable (and refused).
const (
	maxDepth     = 16       // nested shell strings (sh -c "sh -c '...'")
	maxScript    = 1 << 20  // bytes of one shell string
	maxCommands  = 1024     // simple commands, loop iterations included
	maxBraces    = 64       // words from one brace expansion
	maxBraceOpen = 32       // brace groups in one word that are expanded
	maxLoopItems = 64       // literal items of one for loop that are followed
	maxSteps     = 10000    // statements walked, loop iterations included
	maxWords     = 200000   // words evaluated
	maxValue     = 64 << 10 // bytes of a variable's or a word's known value
	maxNesting   = 256      // brackets open at once (the parser recurses on each)
)

// scope is the shell state that matters: variables with known values and
// which of them are exported.
type scope struct {
	vars     map[string]string
	unknown  map[string]bool // assigned a value only known at run time
	exported map[string]bool
	resetBy  string // inherited by commands of a nested shell
}

func newScope(env map[string]string) *scope {
	s := &scope{vars: map[string]string{}, unknown: map[string]bool{}, exported: map[string]bool{}}
	for k, v := range env {
		s.vars[k] = v
		s.exported[k] = true
	}
	return s
}

func (s *scope) copy() *scope {
	c := &scope{vars: copyEnv(s.vars), unknown: make(map[string]bool, len(s.unknown)),
		exported: make(map[string]bool, len(s.exported)), resetBy: s.resetBy}
	for k := range s.unknown {
		c.unknown[k] = true
	}
	for k := range s.exported {
		c.exported[k] = true
	}
	return c
}

func (s *scope) lookup(name string) (string, bool) {
	if s.unknown[name] {
		return "", false
	}
	v, ok := s.vars[name]
	return v, ok
}

func (s *scope) set(name string, w Word, appendTo bool) {
	if w.Dynamic || (appendTo && s.unknown[name]) {
		delete(s.vars, name)
		s.unknown[name] = true
		return
	}
	v := w.Value
	if appendTo {
		v = s.vars[name] + v
	}
	if len(v) > maxValue {
		delete(s.vars, name)
		s.unknown[name] = true
		return
	}
	s.vars[name] = v
	delete(s.unknown, name)
}

func (s *scope) unset(name string) {
	delete(s.vars, name)
	delete(s.unknown, name)
	delete(s.exported, name)
}

// environ is the environment a command started from this scope gets.
func (s *scope) environ() map[string]string {
	m := make(map[string]string, len(s.exported))
	for k := range s.exported {
		if v, ok := s.lookup(k); ok {
			m[k] = v
		}
	}
	return m
}

// ErrUnparsable wraps the parser's complaint about a shell string.
var ErrUnparsable = errors.New("cannot parse shell string")

// Options say how a Reader reads.
type Options struct {
	// Deep follows nested shell strings (sh -c '...', su -c, eval, watch,
	// flock -c, a script fed to a shell on stdin): a text-level reading,
	// before anything runs. Without it (the exec-level reading) a shell
	// is the command that runs: its own execs are seen when they happen.
	Deep bool
	// Known lists, sorted, the program names an unquoted pattern in a
	// command's name may stand for (/sbin/reb??t is reboot when reboot is
	// the one known name it matches): the names the caller treats
	// specially. Programs gives those the reader itself sees through.
	Known []string
	// Watch picks the targets of write redirections (> FILE) to record in
	// Cmd.Writes, and says how to name each; nil records none. A statement
	// that is not a simple command but writes a watched file is read as a
	// Pseudo command that carries the writes.
	Watch func(target Word) (name string, ok bool)
}

// Reader walks shell syntax and argv, collecting the simple commands that
// would run: Script reads a shell string, Follow an argv, and Commands
// gives what they found.
type Reader struct {
	deep   bool
	known  []string
	watch  func(Word) (string, bool)
	out    []Cmd
	err    error
	src    string // the string being walked, for source text
	depth  int
	steps  int
	words  int
	pipeIn map[*syntax.Stmt]string
}

// NewReader returns a reader that reads as o says.
func NewReader(o Options) *Reader {
	return &Reader{deep: o.Deep, known: o.Known, watch: o.Watch, pipeIn: map[*syntax.Stmt]string{}}
}

// Script reads the shell string s run with the environment env (exported
// variables); a string it cannot parse, or one past the reader's limits,
// is an error (Err).
func (r *Reader) Script(s string, env map[string]string) {
	r.parseScript(s, newScope(env), 0)
}

// Follow reads the command c: wrappers are followed down to what runs
// inside them (and, reading Deep, the shell strings they run).
func (r *Reader) Follow(c Cmd) { r.unwrap(c) }

// Commands are the simple commands read so far, in the order they would
// run, each with the environment it would run with.
func (r *Reader) Commands() []Cmd { return r.out }

// Err is why the reading stopped: a string that cannot be parsed (it wraps
// ErrUnparsable) or one past the limits that keep a hostile string cheap;
// nil when all was read.
func (r *Reader) Err() error { return r.err }

func (r *Reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *Reader) emit(c Cmd) {
	if r.err != nil {
		return
	}
	if len(r.out) >= maxCommands {
		r.fail(fmt.Errorf("more than %d commands", maxCommands))
		return
	}
	r.out = append(r.out, c)
}

// parseScript reads s as a shell script run with the variables of sc.
func (r *Reader) parseScript(s string, sc *scope, depth int) {
	if r.err != nil {
		return
	}
	if depth > maxDepth {
		r.fail(fmt.Errorf("shell strings nested more than %d deep", maxDepth))
		return
	}
	if len(s) > maxScript {
		r.fail(fmt.Errorf("shell string longer than %d bytes", maxScript))
		return
	}
	if n := nesting(s); n > maxNesting {
		r.fail(fmt.Errorf("brackets nested %d deep, more than %d", n, maxNesting))
		return
	}
	if !utf8.ValidString(s) {
		// The parser accepts any bytes, but messages must stay printable.
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(s), "")
	if err != nil {
		r.fail(fmt.Errorf("%w: %v", ErrUnparsable, err))
		return
	}
	oldSrc, oldDepth := r.src, r.depth
	r.src, r.depth = s, depth
	r.stmts(f.Stmts, sc)
	r.src, r.depth = oldSrc, oldDepth
}

func (r *Reader) text(n syntax.Node) string {
	if n == nil {
		return ""
	}
	a, b := n.Pos(), n.End()
	if !a.IsValid() || !b.IsValid() {
		return ""
	}
	i, j := int(a.Offset()), int(b.Offset())
	if i < 0 || j > len(r.src) || i > j {
		return ""
	}
	return r.src[i:j]
}

func (r *Reader) stmts(ss []*syntax.Stmt, sc *scope) {
	for _, s := range ss {
		if r.err != nil {
			return
		}
		r.stmt(s, sc)
	}
}

// writeOps are the redirections that write to their target.
func isWrite(op syntax.RedirOperator) bool {
	switch op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrInOut, syntax.RdrClob, syntax.AppClob,
		syntax.RdrAll, syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob:
		return true
	}
	return false
}

// stmt walks one statement; sc is mutated by what the statement does to the
// shell's variables (callers pass a copy where effects must not leak).
func (r *Reader) stmt(s *syntax.Stmt, sc *scope) {
	if s == nil || r.err != nil {
		return
	}
	if len(r.out) >= maxCommands {
		r.fail(fmt.Errorf("more than %d commands", maxCommands))
		return
	}
	if r.steps++; r.steps > maxSteps {
		r.fail(fmt.Errorf("more than %d statements to follow", maxSteps))
		return
	}
	var stdin *string
	if in, ok := r.pipeIn[s]; ok {
		stdin = &in
	}
	var writes []string
	for _, rd := range s.Redirs {
		if rd == nil {
			continue
		}
		r.substs(rd.Word, sc)
		r.substs(rd.Hdoc, sc)
		switch {
		case isWrite(rd.Op) && rd.Word != nil:
			if r.watch == nil {
				break
			}
			if t, ok := r.watch(r.lit(rd.Word, sc, false)); ok {
				writes = append(writes, t)
			}
		case (rd.Op == syntax.Hdoc || rd.Op == syntax.DashHdoc) && rd.Hdoc != nil:
			if t, ok := r.heredoc(rd, sc); ok {
				stdin = &t
			} else {
				stdin = nil
			}
		case rd.Op == syntax.WordHdoc && rd.Word != nil:
			if t, ok := r.lit(rd.Word, sc, false).Literal(); ok {
				t += "\n"
				stdin = &t
			} else {
				stdin = nil
			}
		case rd.Op == syntax.RdrIn:
			stdin = nil
		}
	}
	switch x := s.Cmd.(type) {
	case *syntax.CallExpr:
		r.call(x, sc, stdin, writes)
		return
	case nil:
	case *syntax.BinaryCmd:
		switch x.Op {
		case syntax.AndStmt:
			// Y runs only after X succeeded: it sees what X did.
			c := sc.copy()
			r.stmt(x.X, c)
			r.stmt(x.Y, c)
		case syntax.OrStmt:
			r.stmt(x.X, sc.copy())
			r.stmt(x.Y, sc.copy())
		default: // pipes: each side in its own subshell
			if text, ok := r.echoed(x.X); ok && x.Y != nil {
				r.pipeIn[x.Y] = text
			}
			r.stmt(x.X, sc.copy())
			r.stmt(x.Y, sc.copy())
		}
	case *syntax.Subshell:
		r.stmts(x.Stmts, sc.copy())
	case *syntax.Block:
		r.stmts(x.Stmts, sc.copy())
	case *syntax.IfClause:
		r.ifClause(x, sc)
	case *syntax.WhileClause:
		c := sc.copy()
		r.stmts(x.Cond, c)
		r.stmts(x.Do, c)
	case *syntax.ForClause:
		r.forClause(x, sc)
	case *syntax.CaseClause:
		r.substs(x.Word, sc)
		for _, it := range x.Items {
			if it == nil {
				continue
			}
			for _, p := range it.Patterns {
				r.substs(p, sc)
			}
			r.stmts(it.Stmts, sc.copy())
		}
	case *syntax.FuncDecl:
		// The body may run later: check it as if it ran here.
		r.stmt(x.Body, sc.copy())
	case *syntax.ArithmCmd, *syntax.LetClause, *syntax.TestClause:
		r.substs(x, sc)
	case *syntax.DeclClause:
		r.decl(x, sc)
	case *syntax.TimeClause:
		r.stmt(x.Stmt, sc)
	case *syntax.CoprocClause:
		r.stmt(x.Stmt, sc.copy())
	case *syntax.TestDecl:
		r.stmt(x.Body, sc.copy())
	}
	if len(writes) > 0 {
		r.emit(Cmd{Argv: []Word{Lit(r.text(s))}, Env: sc.environ(), Writes: writes, Pseudo: true})
	}
}

// heredoc returns a here-document's body: verbatim when its delimiter is
// quoted, expanded (as far as known) otherwise.
func (r *Reader) heredoc(rd *syntax.Redirect, sc *scope) (string, bool) {
	quoted := rd.Word == nil
	if rd.Word != nil {
		for _, p := range rd.Word.Parts {
			switch x := p.(type) {
			case *syntax.Lit:
				quoted = quoted || strings.ContainsRune(x.Value, '\\')
			default:
				quoted = true
			}
		}
	}
	if !quoted {
		return r.lit(rd.Hdoc, sc, true).Literal()
	}
	var b strings.Builder
	for _, p := range rd.Hdoc.Parts {
		l, ok := p.(*syntax.Lit)
		if !ok {
			return "", false
		}
		b.WriteString(l.Value)
	}
	return b.String(), true
}

func (r *Reader) ifClause(x *syntax.IfClause, sc *scope) {
	for ; x != nil && r.err == nil; x = x.Else {
		c := sc.copy()
		r.stmts(x.Cond, c)
		r.stmts(x.Then, c)
	}
}

func (r *Reader) forClause(x *syntax.ForClause, sc *scope) {
	switch l := x.Loop.(type) {
	case *syntax.WordIter:
		name := ""
		if l.Name != nil {
			name = l.Name.Value
		}
		var items []Word
		known := l.InPos.IsValid() // "for x; do" iterates "$@": unknown
		for _, w := range l.Items {
			r.substs(w, sc)
			for _, f := range r.fields(w, sc) {
				if f.Dynamic || f.Glob {
					known = false
				}
				items = append(items, f)
			}
		}
		if known && len(items) > 0 {
			if len(items) > maxLoopItems {
				items = items[:maxLoopItems]
			}
			for _, it := range items {
				c := sc.copy()
				c.set(name, it, false)
				r.stmts(x.Do, c)
				if r.err != nil {
					return
				}
			}
			return
		}
		c := sc.copy()
		c.set(name, Word{Dynamic: true}, false)
		r.stmts(x.Do, c)
	case *syntax.CStyleLoop:
		r.substs(l, sc)
		r.stmts(x.Do, sc.copy())
	default:
		r.stmts(x.Do, sc.copy())
	}
}

// decl handles export/declare/local/readonly/typeset/nameref.
func (r *Reader) decl(x *syntax.DeclClause, sc *scope) {
	variant := ""
	if x.Variant != nil {
		variant = x.Variant.Value
	}
	export := variant == "export"
	unexport := false
	for _, a := range x.Args {
		if a == nil {
			continue
		}
		r.substs(a.Value, sc)
		if a.Array != nil {
			r.substs(a.Array, sc)
		}
		if a.Name == nil {
			// a flag (-x, -n) or a word only known at run time
			if a.Value != nil {
				if f, ok := r.lit(a.Value, sc, false).Literal(); ok && strings.HasPrefix(f, "-") {
					if strings.Contains(f, "x") && variant != "export" {
						export = true
					}
					if variant == "export" && strings.Contains(f, "n") {
						unexport = true
					}
				} else if ok && f != "" && export {
					sc.exported[f] = true
				}
			}
			continue
		}
		name := a.Name.Value
		switch {
		case a.Array != nil || a.Index != nil:
			sc.set(name, Word{Dynamic: true}, false)
		case a.Naked:
			// "export NAME": exports the current value
		case a.Value != nil:
			sc.set(name, r.lit(a.Value, sc, false), a.Append)
		default:
			sc.set(name, Word{}, a.Append)
		}
		switch {
		case unexport:
			delete(sc.exported, name)
		case export:
			sc.exported[name] = true
		}
	}
}

func (r *Reader) call(x *syntax.CallExpr, sc *scope, stdin *string, writes []string) {
	for _, a := range x.Assigns {
		if a != nil {
			r.substs(a.Value, sc)
			if a.Array != nil {
				r.substs(a.Array, sc)
			}
		}
	}
	for _, w := range x.Args {
		r.substs(w, sc)
	}
	if len(x.Args) == 0 {
		// NAME=VALUE alone sets shell variables; an exported one stays exported.
		for _, a := range x.Assigns {
			if a == nil || a.Name == nil {
				continue
			}
			if a.Array != nil || a.Index != nil || a.Value == nil {
				sc.set(a.Name.Value, Word{Dynamic: a.Array != nil || a.Index != nil}, a.Append)
				continue
			}
			sc.set(a.Name.Value, r.lit(a.Value, sc, false), a.Append)
		}
		if len(writes) > 0 {
			r.emit(Cmd{Argv: []Word{Lit(r.text(x))}, Env: sc.environ(), Writes: writes, Pseudo: true})
		}
		return
	}
	env := sc.environ()
	for _, a := range x.Assigns {
		if a == nil || a.Name == nil {
			continue
		}
		name := a.Name.Value
		var w Word
		if a.Value != nil && a.Array == nil && a.Index == nil {
			w = r.lit(a.Value, sc, false)
		} else if a.Value != nil || a.Array != nil || a.Index != nil {
			w.Dynamic = true
		}
		switch {
		case w.Dynamic:
			delete(env, name)
		case a.Append:
			env[name] += w.Value
		default:
			env[name] = w.Value
		}
	}
	var argv []Word
	for _, w := range x.Args {
		argv = append(argv, r.fields(w, sc)...)
	}
	if len(argv) == 0 {
		return
	}
	c := Cmd{Argv: argv, Env: env, ResetBy: sc.resetBy, Stdin: stdin, Writes: writes}
	if name, ok := argv[0].Literal(); ok && name == "unset" {
		for _, a := range argv[1:] {
			if v, ok := a.Literal(); ok && !strings.HasPrefix(v, "-") {
				sc.unset(v)
			}
		}
	}
	r.unwrap(c)
}

// echoed returns what `echo WORDS` or `printf WORD` writes, when X is one.
func (r *Reader) echoed(s *syntax.Stmt) (string, bool) {
	if s == nil || len(s.Redirs) > 0 {
		return "", false
	}
	x, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || len(x.Args) < 2 {
		return "", false
	}
	sc := newScope(nil)
	var ws []string
	for _, w := range x.Args {
		for _, f := range r.fields(w, sc) {
			v, ok := f.Literal()
			if !ok || f.Glob {
				return "", false
			}
			ws = append(ws, v)
		}
	}
	if len(ws) < 2 {
		return "", false
	}
	switch ws[0] {
	case "echo":
		args := ws[1:]
		for len(args) > 0 && (args[0] == "-n" || args[0] == "-e" || args[0] == "-E") {
			args = args[1:]
		}
		return strings.Join(args, " ") + "\n", true
	case "printf":
		if len(ws) == 2 && !strings.Contains(ws[1], "%") {
			return strings.ReplaceAll(strings.ReplaceAll(ws[1], `\n`, "\n"), `\t`, "\t"), true
		}
	}
	return "", false
}

// substs walks the command and process substitutions inside n: they run
// before the command they are part of.
func (r *Reader) substs(n syntax.Node, sc *scope) {
	if n == nil || r.err != nil {
		return
	}
	switch v := n.(type) {
	case *syntax.Word:
		if v == nil {
			return
		}
	case *syntax.ArrayExpr:
		if v == nil {
			return
		}
	case *syntax.CStyleLoop:
		if v == nil {
			return
		}
	}
	syntax.Walk(n, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.CmdSubst:
			r.stmts(x.Stmts, sc.copy())
			return false
		case *syntax.ProcSubst:
			r.stmts(x.Stmts, sc.copy())
			return false
		}
		return r.err == nil
	})
}

// fields expands one word into the arguments it becomes: brace expansion,
// and word splitting of a lone unquoted $VAR with a known value.
func (r *Reader) fields(w *syntax.Word, sc *scope) []Word {
	if w == nil || len(w.Parts) == 0 {
		return nil
	}
	if len(w.Parts) == 1 {
		if pe, ok := w.Parts[0].(*syntax.ParamExp); ok && simpleParam(pe) {
			if v, ok := sc.lookup(pe.Param.Value); ok {
				var out []Word
				for _, f := range strings.Fields(v) {
					out = append(out, Word{Value: f, Source: r.text(w)})
				}
				return out
			}
		}
	}
	open := 0
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok {
			open += strings.Count(l.Value, "{")
		}
	}
	if open > maxBraceOpen {
		// Too many groups to expand cheaply: the word is not known.
		t := r.text(w)
		return []Word{{Value: t, Dynamic: true, DynamicEnd: len(t), Source: t}}
	}
	cp := *w
	if !syntax.SplitBraces(&cp) {
		return []Word{r.lit(w, sc, false)}
	}
	var out []Word
	func() {
		defer func() {
			// Brace expansion of pathological input must not take the guard down.
			if recover() != nil {
				out = []Word{{Value: r.text(w), Dynamic: true, DynamicEnd: len(r.text(w)), Source: r.text(w)}}
			}
		}()
		for bw, err := range expand.BracesSeq(nil, &cp) {
			if err != nil || len(out) >= maxBraces {
				break
			}
			out = append(out, r.lit(bw, sc, false))
		}
	}()
	return out
}

func simpleParam(p *syntax.ParamExp) bool {
	return p != nil && p.Param != nil && p.Flags == nil && !p.Excl && !p.Length && !p.Width && !p.IsSet &&
		p.Split == syntax.OptUnset && p.GlobSubst == syntax.OptUnset && p.RcExpand == syntax.OptUnset &&
		p.NestedParam == nil && p.Index == nil && len(p.Modifiers) == 0 && p.Slice == nil &&
		p.Repl == nil && p.Names == 0 && p.Exp == nil
}

// lit evaluates a word as far as it can be known before run time. heredoc
// selects here-document quoting (quotes are plain characters there).
func (r *Reader) lit(w *syntax.Word, sc *scope, heredoc bool) Word {
	out := Word{Source: r.text(w)}
	if w == nil {
		return out
	}
	if r.words++; r.words > maxWords {
		r.fail(fmt.Errorf("more than %d words to evaluate", maxWords))
	}
	var b strings.Builder
	dynamic := func(n syntax.Node) {
		b.WriteString(r.text(n))
		out.Dynamic = true
		out.DynamicEnd = b.Len()
	}
	var part func(p syntax.WordPart, quoted bool, first bool)
	part = func(p syntax.WordPart, quoted bool, first bool) {
		switch x := p.(type) {
		case *syntax.Lit:
			v := x.Value
			if !quoted && first && strings.HasPrefix(v, "~") && !heredoc {
				// ~ and ~user expand at run time
				end := strings.IndexByte(v, '/')
				if end < 0 {
					end = len(v)
				}
				b.WriteString(v[:end])
				out.Dynamic = true
				out.DynamicEnd = b.Len()
				v = v[end:]
			}
			unescape(&b, v, quoted || heredoc, &out.Glob)
		case *syntax.SglQuoted:
			if !x.Dollar {
				b.WriteString(x.Value)
			} else if v, ok := ansiC(x); ok {
				b.WriteString(v)
			} else {
				dynamic(x)
			}
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				part(q, true, false)
			}
		case *syntax.ParamExp:
			if simpleParam(x) {
				if v, ok := sc.lookup(x.Param.Value); ok {
					b.WriteString(v)
					return
				}
			}
			dynamic(x)
		case *syntax.CmdSubst:
			if v, ok := r.lookupSubst(x, sc); ok {
				b.WriteString(v)
				return
			}
			dynamic(x)
		default:
			dynamic(p)
		}
	}
	for i, p := range w.Parts {
		part(p, false, i == 0)
		if b.Len() > maxValue {
			// Too long to be a program, unit or target paddock knows.
			out.Value, out.Dynamic, out.DynamicEnd = out.Source, true, len(out.Source)
			return out
		}
	}
	out.Value = b.String()
	return out
}

// lookupSubst knows $(which X), $(command -v X) and $(type -P X): X's path,
// whose last element is X.
func (r *Reader) lookupSubst(x *syntax.CmdSubst, sc *scope) (string, bool) {
	if len(x.Stmts) != 1 || x.Stmts[0] == nil || len(x.Stmts[0].Redirs) > 0 {
		return "", false
	}
	call, ok := x.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) > 0 || len(call.Args) < 2 {
		return "", false
	}
	var args []string
	for _, w := range call.Args {
		v, ok := r.lit(w, sc, false).Literal()
		if !ok {
			return "", false
		}
		args = append(args, v)
	}
	switch {
	case len(args) == 2 && args[0] == "which":
	case len(args) == 3 && args[0] == "command" && args[1] == "-v":
	case len(args) == 3 && args[0] == "type" && (args[1] == "-P" || args[1] == "-p"):
	default:
		return "", false
	}
	v := args[len(args)-1]
	if v == "" || strings.HasPrefix(v, "-") {
		return "", false
	}
	return v, true
}

// unescape appends v with shell backslash quoting removed. Inside double
// quotes and here-documents a backslash only escapes $ ` " \ and newline.
func unescape(b *strings.Builder, v string, quoted bool, glob *bool) {
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\' && i+1 < len(v):
			n := v[i+1]
			if n == '\n' {
				i++
				continue
			}
			if quoted && !strings.ContainsRune("$`\"\\", rune(n)) {
				b.WriteByte(c)
				continue
			}
			b.WriteByte(n)
			i++
		case !quoted && (c == '*' || c == '?' || c == '['):
			*glob = true
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
}

// ansiC decodes a $'...' string the way bash does, with the expand
// package of the shell parser paddock reads with: escapes decoded, and the
// value cut at the first NUL (bash keeps C strings, so $'reboot\x00x' runs
// reboot).
// ok=false: expand could not decode it, so its value is not known.
func ansiC(q *syntax.SglQuoted) (string, bool) {
	v, err := expand.Literal(nil, &syntax.Word{Parts: []syntax.WordPart{q}})
	return v, err == nil
}

// nesting estimates how deeply s nests: brackets, $( and ${, and the
// if/while/until/for/case/select keywords, outside quotes, comments and
// here-document bodies. The parser recurses once per level, so a string
// nested thousands deep would cost seconds; this bound is taken first.
func nesting(s string) int {
	depth, max := 0, 0
	open := func() {
		depth++
		if depth > max {
			max = depth
		}
	}
	closeOne := func() {
		if depth > 0 {
			depth--
		}
	}
	var heredocs []string // delimiters whose bodies start at the next newline
	wordStart := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			i++
			wordStart = false
			continue
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return max
			}
			i += j + 1
		case c == '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		case c == '#' && wordStart:
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				return max
			}
			i += j - 1
		case c == '(' || c == '{' || c == '[':
			open()
		case c == ')' || c == '}' || c == ']':
			closeOne()
		case c == '<' && strings.HasPrefix(s[i:], "<<") && !strings.HasPrefix(s[i:], "<<<"):
			j := i + 2
			dash := j < len(s) && s[j] == '-'
			if dash {
				j++
			}
			for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
				j++
			}
			k := j
			for k < len(s) && !strings.ContainsRune(" \t\n;&|<>()", rune(s[k])) {
				k++
			}
			delim := strings.NewReplacer("'", "", "\"", "", "\\", "").Replace(s[j:k])
			if dash {
				delim = "-" + delim
			}
			heredocs = append(heredocs, delim)
			i = k - 1
		case c == '\n' && len(heredocs) > 0:
			i++
			for _, d := range heredocs {
				strip := strings.HasPrefix(d, "-")
				d = strings.TrimPrefix(d, "-")
				for i < len(s) {
					end := strings.IndexByte(s[i:], '\n')
					line := s[i:]
					if end >= 0 {
						line = s[i : i+end]
					}
					if strip {
						line = strings.TrimLeft(line, "\t")
					}
					if end < 0 {
						return max
					}
					i += end + 1
					if line == d {
						break
					}
				}
			}
			heredocs = heredocs[:0]
			i--
			wordStart = true
			continue
		case wordStart && isLetter(c):
			j := i
			for j < len(s) && (isLetter(s[j]) || s[j] == '_') {
				j++
			}
			if j == len(s) || strings.ContainsRune(" \t\n;&|()", rune(s[j])) {
				switch s[i:j] {
				case "if", "while", "until", "for", "case", "select":
					open()
				case "fi", "done", "esac":
					closeOne()
				}
			}
			i = j - 1
		}
		wordStart = strings.ContainsRune(" \t\n;&|(){}", rune(c))
	}
	return max
}

func isLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
