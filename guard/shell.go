package guard

import (
	"fmt"
	"path/filepath"
	"sort"
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

// word is one argument as far as it can be known before run time.
type word struct {
	s      string // the value; dynamic parts appear as their source text
	dyn    bool   // some part is only known at run time ($VAR, $(cmd), ~)
	dynEnd int    // index in s just after the last dynamic part
	glob   bool   // has unquoted pattern characters (* ? [)
	raw    string // the source text of the word
}

func litWord(s string) word { return word{s: s, raw: s} }

// base returns the last path element when it is known.
func (w word) base() (string, bool) {
	s := w.s
	if w.dyn {
		i := strings.LastIndexByte(s, '/')
		if i < w.dynEnd || i+1 >= len(s) {
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

// lit returns the value when it is fully known.
func (w word) lit() (string, bool) { return w.s, !w.dyn }

// cmd is one simple command as the guard sees it.
type cmd struct {
	argv    []word
	env     map[string]string // the environment it runs with
	resetBy string            // the wrapper that replaced the environment (sudo, env -i, ...)
	stdin   *string           // a script fed on stdin (here-document, echo ... |), when known
	xargs   bool              // more arguments arrive on stdin (xargs)
	writes  []string          // guarded files written by its redirections
	pseudo  bool              // not a command: a compound command's redirection
}

func literalCmd(argv []string, env map[string]string) cmd {
	ws := make([]word, len(argv))
	for i, a := range argv {
		ws[i] = litWord(a)
	}
	return cmd{argv: ws, env: env}
}

// withArgv returns c running argv instead (a wrapper's inner command).
func (c cmd) withArgv(argv []word) cmd {
	c.argv = argv
	return c
}

// public renders c as a Command; Env holds what differs from caller.
func (c cmd) public(caller map[string]string) Command {
	out := Command{Argv: make([]string, len(c.argv))}
	for i, w := range c.argv {
		out.Argv[i] = w.s
	}
	if len(out.Argv) > 0 {
		out.Path = out.Argv[0]
	}
	keys := make([]string, 0, len(c.env))
	for k, v := range c.env {
		if cv, ok := caller[k]; ok && cv == v {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out.Env = append(out.Env, k+"="+c.env[k])
	}
	return out
}

// EnvMap turns KEY=VALUE strings into a map; the first occurrence of a key
// wins, as in getenv(3), and entries without "=" or without a key are left
// out. Callers that read an environment beside the guard (the VRAM
// preflight's opt-in) use it so that both read the same value.
func EnvMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		if _, dup := m[k]; !dup {
			m[k] = v
		}
	}
	return m
}

func copyEnv(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

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

func (s *scope) set(name string, w word, appendTo bool) {
	if w.dyn || (appendTo && s.unknown[name]) {
		delete(s.vars, name)
		s.unknown[name] = true
		return
	}
	v := w.s
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

// env is the environment a command started from this scope gets.
func (s *scope) env() map[string]string {
	m := make(map[string]string, len(s.exported))
	for k := range s.exported {
		if v, ok := s.lookup(k); ok {
			m[k] = v
		}
	}
	return m
}

// reader walks shell syntax and argv, collecting the simple commands.
type reader struct {
	deep   bool // follow nested shell strings (text-level checks)
	out    []cmd
	err    error
	src    string // the string being walked, for source text
	depth  int
	steps  int
	words  int
	pipeIn map[*syntax.Stmt]string
	caller map[string]string
}

func newReader(deep bool) *reader {
	return &reader{deep: deep, pipeIn: map[*syntax.Stmt]string{}}
}

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *reader) emit(c cmd) {
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
func (r *reader) parseScript(s string, sc *scope, depth int) {
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

func (r *reader) text(n syntax.Node) string {
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

func (r *reader) stmts(ss []*syntax.Stmt, sc *scope) {
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
func (r *reader) stmt(s *syntax.Stmt, sc *scope) {
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
			if t, ok := guardedTarget(r.lit(rd.Word, sc, false)); ok {
				writes = append(writes, t)
			}
		case (rd.Op == syntax.Hdoc || rd.Op == syntax.DashHdoc) && rd.Hdoc != nil:
			if t, ok := r.heredoc(rd, sc); ok {
				stdin = &t
			} else {
				stdin = nil
			}
		case rd.Op == syntax.WordHdoc && rd.Word != nil:
			if t, ok := r.lit(rd.Word, sc, false).lit(); ok {
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
		r.emit(cmd{argv: []word{litWord(r.text(s))}, env: sc.env(), writes: writes, pseudo: true})
	}
}

// heredoc returns a here-document's body: verbatim when its delimiter is
// quoted, expanded (as far as known) otherwise.
func (r *reader) heredoc(rd *syntax.Redirect, sc *scope) (string, bool) {
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
		return r.lit(rd.Hdoc, sc, true).lit()
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

func (r *reader) ifClause(x *syntax.IfClause, sc *scope) {
	for ; x != nil && r.err == nil; x = x.Else {
		c := sc.copy()
		r.stmts(x.Cond, c)
		r.stmts(x.Then, c)
	}
}

func (r *reader) forClause(x *syntax.ForClause, sc *scope) {
	switch l := x.Loop.(type) {
	case *syntax.WordIter:
		name := ""
		if l.Name != nil {
			name = l.Name.Value
		}
		var items []word
		known := l.InPos.IsValid() // "for x; do" iterates "$@": unknown
		for _, w := range l.Items {
			r.substs(w, sc)
			for _, f := range r.fields(w, sc) {
				if f.dyn || f.glob {
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
		c.set(name, word{dyn: true}, false)
		r.stmts(x.Do, c)
	case *syntax.CStyleLoop:
		r.substs(l, sc)
		r.stmts(x.Do, sc.copy())
	default:
		r.stmts(x.Do, sc.copy())
	}
}

// decl handles export/declare/local/readonly/typeset/nameref.
func (r *reader) decl(x *syntax.DeclClause, sc *scope) {
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
				if f, ok := r.lit(a.Value, sc, false).lit(); ok && strings.HasPrefix(f, "-") {
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
			sc.set(name, word{dyn: true}, false)
		case a.Naked:
			// "export NAME": exports the current value
		case a.Value != nil:
			sc.set(name, r.lit(a.Value, sc, false), a.Append)
		default:
			sc.set(name, word{}, a.Append)
		}
		switch {
		case unexport:
			delete(sc.exported, name)
		case export:
			sc.exported[name] = true
		}
	}
}

func (r *reader) call(x *syntax.CallExpr, sc *scope, stdin *string, writes []string) {
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
				sc.set(a.Name.Value, word{dyn: a.Array != nil || a.Index != nil}, a.Append)
				continue
			}
			sc.set(a.Name.Value, r.lit(a.Value, sc, false), a.Append)
		}
		if len(writes) > 0 {
			r.emit(cmd{argv: []word{litWord(r.text(x))}, env: sc.env(), writes: writes, pseudo: true})
		}
		return
	}
	env := sc.env()
	for _, a := range x.Assigns {
		if a == nil || a.Name == nil {
			continue
		}
		name := a.Name.Value
		var w word
		if a.Value != nil && a.Array == nil && a.Index == nil {
			w = r.lit(a.Value, sc, false)
		} else if a.Value != nil || a.Array != nil || a.Index != nil {
			w.dyn = true
		}
		switch {
		case w.dyn:
			delete(env, name)
		case a.Append:
			env[name] += w.s
		default:
			env[name] = w.s
		}
	}
	var argv []word
	for _, w := range x.Args {
		argv = append(argv, r.fields(w, sc)...)
	}
	if len(argv) == 0 {
		return
	}
	c := cmd{argv: argv, env: env, resetBy: sc.resetBy, stdin: stdin, writes: writes}
	if name, ok := argv[0].lit(); ok && name == "unset" {
		for _, a := range argv[1:] {
			if v, ok := a.lit(); ok && !strings.HasPrefix(v, "-") {
				sc.unset(v)
			}
		}
	}
	r.unwrap(c)
}

// echoed returns what `echo WORDS` or `printf WORD` writes, when X is one.
func (r *reader) echoed(s *syntax.Stmt) (string, bool) {
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
			v, ok := f.lit()
			if !ok || f.glob {
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
func (r *reader) substs(n syntax.Node, sc *scope) {
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
func (r *reader) fields(w *syntax.Word, sc *scope) []word {
	if w == nil || len(w.Parts) == 0 {
		return nil
	}
	if len(w.Parts) == 1 {
		if pe, ok := w.Parts[0].(*syntax.ParamExp); ok && simpleParam(pe) {
			if v, ok := sc.lookup(pe.Param.Value); ok {
				var out []word
				for _, f := range strings.Fields(v) {
					out = append(out, word{s: f, raw: r.text(w)})
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
		return []word{{s: t, dyn: true, dynEnd: len(t), raw: t}}
	}
	cp := *w
	if !syntax.SplitBraces(&cp) {
		return []word{r.lit(w, sc, false)}
	}
	var out []word
	func() {
		defer func() {
			// Brace expansion of pathological input must not take the guard down.
			if recover() != nil {
				out = []word{{s: r.text(w), dyn: true, dynEnd: len(r.text(w)), raw: r.text(w)}}
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
func (r *reader) lit(w *syntax.Word, sc *scope, heredoc bool) word {
	out := word{raw: r.text(w)}
	if w == nil {
		return out
	}
	if r.words++; r.words > maxWords {
		r.fail(fmt.Errorf("more than %d words to evaluate", maxWords))
	}
	var b strings.Builder
	dynamic := func(n syntax.Node) {
		b.WriteString(r.text(n))
		out.dyn = true
		out.dynEnd = b.Len()
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
				out.dyn = true
				out.dynEnd = b.Len()
				v = v[end:]
			}
			unescape(&b, v, quoted || heredoc, &out.glob)
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
			out.s, out.dyn, out.dynEnd = out.raw, true, len(out.raw)
			return out
		}
	}
	out.s = b.String()
	return out
}

// lookupSubst knows $(which X), $(command -v X) and $(type -P X): X's path,
// whose last element is X.
func (r *reader) lookupSubst(x *syntax.CmdSubst, sc *scope) (string, bool) {
	if len(x.Stmts) != 1 || x.Stmts[0] == nil || len(x.Stmts[0].Redirs) > 0 {
		return "", false
	}
	call, ok := x.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) > 0 || len(call.Args) < 2 {
		return "", false
	}
	var args []string
	for _, w := range call.Args {
		v, ok := r.lit(w, sc, false).lit()
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
