package guard

import (
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// opt is one parsed command-line option.
type opt struct {
	name   string // "-u" or "--user"
	val    string
	hasVal bool
}

// optSpec describes a program's options for scanOpts.
type optSpec struct {
	short    string          // short options that take a value (attached or next argument)
	optional string          // short options with an optional, attached-only value
	long     map[string]bool // long options that take a value as the next argument when no '=' is given
	plus     bool            // +o style options exist (shells)
	permute  bool            // options may follow operands (GNU getopt without '+')
}

func longs(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// scanOpts splits args into options and operands. Without permute it stops
// at the first operand and returns the rest as operands.
func scanOpts(args []word, spec optSpec) (opts []opt, operands []word) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		s := a.s
		if a.dyn || len(s) < 2 || (s[0] != '-' && !(spec.plus && s[0] == '+')) {
			if !spec.permute {
				return opts, append(operands, args[i:]...)
			}
			operands = append(operands, a)
			continue
		}
		if s == "--" {
			return opts, append(operands, args[i+1:]...)
		}
		if strings.HasPrefix(s, "--") {
			name, val, eq := strings.Cut(s[2:], "=")
			o := opt{name: "--" + name, val: val, hasVal: eq}
			if !eq && spec.long[name] && i+1 < len(args) {
				o.val, o.hasVal = args[i+1].s, true
				i++
			}
			opts = append(opts, o)
			continue
		}
		prefix := s[:1]
		for j := 1; j < len(s); j++ {
			ch := s[j]
			name := prefix + string(ch)
			if strings.IndexByte(spec.optional, ch) >= 0 {
				opts = append(opts, opt{name: name, val: s[j+1:], hasVal: j+1 < len(s)})
				break
			}
			if strings.IndexByte(spec.short, ch) >= 0 {
				o := opt{name: name, hasVal: true}
				if j+1 < len(s) {
					o.val = s[j+1:]
				} else if i+1 < len(args) {
					o.val = args[i+1].s
					i++
				} else {
					o.hasVal = false
				}
				opts = append(opts, o)
				break
			}
			opts = append(opts, opt{name: name})
		}
	}
	return opts, operands
}

func has(opts []opt, names ...string) bool {
	for _, o := range opts {
		for _, n := range names {
			if o.name == n {
				return true
			}
		}
	}
	return false
}

func values(opts []opt, names ...string) []string {
	var out []string
	for _, o := range opts {
		for _, n := range names {
			if o.name == n && o.hasVal {
				out = append(out, o.val)
			}
		}
	}
	return out
}

// outcome of a wrapper handler.
type outcome int

const (
	none   outcome = iota // no command runs inside: the wrapper is the command
	inner                 // the returned command runs inside
	nested                // the handler already followed what runs inside
)

type wrapper func(r *reader, c cmd) (cmd, outcome)

var wrappers map[string]wrapper

func init() {
	condaRun := subcommand("run", optSpec{short: "np", long: longs("name", "prefix", "cwd")})
	wrappers = map[string]wrapper{
		"sudo":                  wrapSudo,
		"doas":                  wrapDoas,
		"pkexec":                wrapPkexec,
		"run0":                  wrapRun0,
		"systemd-run":           wrapSystemdRun,
		"su":                    wrapSu,
		"runuser":               wrapSu,
		"env":                   wrapEnv,
		"nohup":                 simple(optSpec{}),
		"setsid":                simple(optSpec{}),
		"builtin":               func(r *reader, c cmd) (cmd, outcome) { return c.withArgv(c.argv[1:]), inner },
		"exec":                  simple(optSpec{short: "a"}),
		"command":               wrapCommand,
		"timeout":               skipOperands(optSpec{short: "ks", long: longs("signal", "kill-after")}, 1),
		"nice":                  simple(optSpec{short: "n", long: longs("adjustment")}),
		"ionice":                unless(optSpec{short: "cnpPu", long: longs("class", "classdata", "pid", "pgid", "uid")}, 0, "-p", "-P", "-u", "--pid", "--pgid", "--uid"),
		"stdbuf":                simple(optSpec{short: "ioe", long: longs("input", "output", "error")}),
		"chrt":                  unless(optSpec{short: "TPD", long: longs("sched-runtime", "sched-period", "sched-deadline")}, 1, "-p", "--pid", "-m", "--max", "-h", "--help"),
		"taskset":               unless(optSpec{}, 1, "-p", "--pid", "-h", "--help"),
		"time":                  simple(optSpec{short: "fo", long: longs("format", "output")}),
		"xargs":                 wrapXargs,
		"chroot":                skipOperands(optSpec{long: longs("userspec", "groups")}, 1),
		"unshare":               simple(optSpec{short: "SGRw", long: longs("setuid", "setgid", "root", "wd", "propagation", "setgroups", "map-user", "map-group", "map-users", "map-groups", "load-interp", "monotonic", "boottime")}),
		"nsenter":               simple(optSpec{short: "tSG", optional: "muinpUCTrw", long: longs("target", "setuid", "setgid")}),
		"flock":                 wrapFlock,
		"watch":                 wrapWatch,
		"strace":                unless(optSpec{short: "abeEIoOpPsSuX"}, 0, "-p", "--attach"),
		"systemd-inhibit":       simple(optSpec{long: longs("what", "who", "why", "mode")}),
		"dbus-run-session":      simple(optSpec{long: longs("config-file", "dbus-daemon")}),
		"flatpak-spawn":         wrapFlatpakSpawn,
		"distrobox-host-exec":   simple(optSpec{}),
		"busybox":               wrapBusybox,
		"eval":                  wrapEval,
		"uv":                    subcommand("run", optSpec{short: "p", long: longs("with", "with-editable", "with-requirements", "python", "project", "directory", "env-file", "group", "extra", "package", "index", "default-index", "index-url", "extra-index-url", "script")}),
		"uvx":                   simple(optSpec{short: "p", long: longs("from", "with", "with-editable", "with-requirements", "python", "index", "index-url", "extra-index-url")}),
		"pipx":                  subcommand("run", optSpec{long: longs("spec", "python", "index-url", "pip-args")}),
		"poetry":                subcommand("run", optSpec{short: "eC", long: longs("environment", "directory", "project")}),
		"pdm":                   subcommand("run", optSpec{short: "p", long: longs("project", "venv")}),
		"hatch":                 subcommand("run", optSpec{short: "e", long: longs("env")}),
		"pixi":                  subcommand("run", optSpec{short: "e", long: longs("environment", "manifest-path")}),
		"conda":                 condaRun,
		"mamba":                 condaRun,
		"micromamba":            condaRun,
		"ld.so":                 wrapLoader,
		"ld-linux.so.2":         wrapLoader,
		"ld-linux-x86-64.so.2":  wrapLoader,
		"ld-linux-aarch64.so.1": wrapLoader,
	}
}

// simple: options, then the command.
func simple(spec optSpec) wrapper { return skipOperands(spec, 0) }

// skipOperands: options, n operands of the wrapper's own, then the command.
func skipOperands(spec optSpec, n int) wrapper {
	return func(r *reader, c cmd) (cmd, outcome) {
		_, ops := scanOpts(c.argv[1:], spec)
		if len(ops) <= n {
			return c, none
		}
		return c.withArgv(ops[n:]), inner
	}
}

// subcommand: `PROGRAM SUB options COMMAND...` runs COMMAND (uv run, pipx
// run, conda run); any other use of the program runs nothing inside.
func subcommand(sub string, spec optSpec) wrapper {
	inside := simple(spec)
	return func(r *reader, c cmd) (cmd, outcome) {
		if len(c.argv) < 2 || c.argv[1].dyn || c.argv[1].s != sub {
			return c, none
		}
		next, how := inside(r, c.withArgv(c.argv[1:]))
		if how == none {
			return c, none
		}
		return next, how
	}
}

// unless: like skipOperands, but any of the named options means no command runs.
func unless(spec optSpec, n int, stop ...string) wrapper {
	return func(r *reader, c cmd) (cmd, outcome) {
		opts, ops := scanOpts(c.argv[1:], spec)
		if has(opts, stop...) || len(ops) <= n {
			return c, none
		}
		return c.withArgv(ops[n:]), inner
	}
}

// assignments consumes leading NAME=VALUE operands into env.
func assignments(ops []word, env map[string]string, anyName bool) []word {
	for len(ops) > 0 {
		v, ok := ops[0].lit()
		if !ok {
			return ops
		}
		k, val, eq := strings.Cut(v, "=")
		if !eq || k == "" || (!anyName && !validName(k)) {
			return ops
		}
		env[k] = val
		ops = ops[1:]
	}
	return ops
}

func validName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9')) {
			return false
		}
	}
	return s != ""
}

func wrapSudo(r *reader, c cmd) (cmd, outcome) {
	opts, ops := scanOpts(c.argv[1:], optSpec{short: "CDgpRrtTUu",
		long: longs("user", "group", "host", "prompt", "close-from", "chdir", "role", "type", "other-user", "command-timeout", "chroot")})
	if has(opts, "-l", "--list", "-e", "--edit", "-V", "--version", "-h", "--help", "-K", "--remove-timestamp") {
		return c, none
	}
	env := map[string]string{}
	preserveAll := false
	for _, o := range opts {
		switch {
		case o.name == "-E" || (o.name == "--preserve-env" && !o.hasVal):
			preserveAll = true
		case o.name == "--preserve-env":
			for _, k := range strings.Split(o.val, ",") {
				if v, ok := c.env[k]; ok {
					env[k] = v
				}
			}
		}
	}
	if preserveAll {
		env = copyEnv(c.env)
	} else {
		c.resetBy = "sudo"
	}
	ops = assignments(ops, env, false)
	if len(ops) == 0 {
		return c, none
	}
	c.env = env
	return c.withArgv(ops), inner
}

func resetEnv(c cmd, by string) cmd {
	c.env = map[string]string{}
	c.resetBy = by
	return c
}

func wrapDoas(r *reader, c cmd) (cmd, outcome) {
	opts, ops := scanOpts(c.argv[1:], optSpec{short: "uC"})
	if has(opts, "-C", "-s", "-L") || len(ops) == 0 {
		return c, none
	}
	return resetEnv(c, "doas").withArgv(ops), inner
}

func wrapPkexec(r *reader, c cmd) (cmd, outcome) {
	_, ops := scanOpts(c.argv[1:], optSpec{long: longs("user")})
	if len(ops) == 0 {
		return c, none
	}
	return resetEnv(c, "pkexec").withArgv(ops), inner
}

// setenvs applies systemd-style --setenv=K=V / -E K=V / --setenv=K options.
func setenvs(opts []opt, from, to map[string]string, names ...string) {
	for _, v := range values(opts, names...) {
		k, val, eq := strings.Cut(v, "=")
		if k == "" {
			continue
		}
		if !eq {
			var ok bool
			if val, ok = from[k]; !ok {
				continue
			}
		}
		to[k] = val
	}
}

func wrapRun0(r *reader, c cmd) (cmd, outcome) {
	opts, ops := scanOpts(c.argv[1:], optSpec{short: "ugD",
		long: longs("user", "group", "nice", "chdir", "setenv", "unit", "property", "description", "slice", "machine", "background", "shell-prompt-prefix")})
	if len(ops) == 0 {
		return c, none
	}
	from := c.env
	c = resetEnv(c, "run0")
	setenvs(opts, from, c.env, "--setenv")
	return c.withArgv(ops), inner
}

func wrapSystemdRun(r *reader, c cmd) (cmd, outcome) {
	opts, ops := scanOpts(c.argv[1:], optSpec{short: "upEHM",
		long: longs("unit", "property", "description", "slice", "setenv", "uid", "gid", "nice", "working-directory",
			"service-type", "on-active", "on-boot", "on-startup", "on-unit-active", "on-unit-inactive", "on-calendar",
			"timer-property", "path-property", "socket-property", "machine", "host", "background")})
	if len(ops) == 0 {
		return c, none
	}
	from := c.env
	c = resetEnv(c, "systemd-run")
	setenvs(opts, from, c.env, "--setenv", "-E")
	return c.withArgv(ops), inner
}

// wrapSu handles su and runuser: -c STRING runs through the user's shell;
// runuser -u USER -- CMD runs an argv.
func wrapSu(r *reader, c cmd) (cmd, outcome) {
	name, _ := c.argv[0].base()
	spec := optSpec{short: "cgGsw", long: longs("command", "session-command", "group", "supp-group", "shell", "whitelist-environment")}
	if name == "runuser" {
		spec.short += "u"
		spec.long["user"] = true
	}
	// "-" alone means a login shell.
	var args []word
	login := false
	for _, a := range c.argv[1:] {
		if a.s == "-" && !a.dyn {
			login = true
			continue
		}
		args = append(args, a)
	}
	spec.permute = true // su's options may follow the user name
	opts, ops := scanOpts(args, spec)
	if login || has(opts, "-l", "--login") {
		c = resetEnv(c, "su -")
	}
	if name == "runuser" && has(opts, "-u", "--user") {
		if len(ops) == 0 {
			return c, none
		}
		return c.withArgv(ops), inner
	}
	cmds := values(opts, "-c", "--command", "--session-command")
	if len(cmds) == 0 {
		return c, none
	}
	return r.shellString(c, word{s: cmds[len(cmds)-1]})
}

func wrapEnv(r *reader, c cmd) (cmd, outcome) {
	env := copyEnv(c.env)
	args := append([]word(nil), c.argv[1:]...)
	i := 0
	reset := func() {
		env = map[string]string{}
		c.resetBy = "env -i"
	}
	split := func(s string, at int) {
		var fs []word
		for _, f := range strings.Fields(s) {
			fs = append(fs, litWord(f))
		}
		args = append(fs, args[at:]...)
		i = 0
	}
loop:
	for i < len(args) {
		a := args[i]
		s := a.s
		switch {
		case a.dyn:
			break loop
		case s == "--":
			i++
			break loop
		case s == "-":
			reset()
			i++
		case strings.HasPrefix(s, "--"):
			name, val, eq := strings.Cut(s[2:], "=")
			switch name {
			case "ignore-environment":
				reset()
			case "unset", "chdir", "split-string":
				if !eq && i+1 < len(args) {
					val = args[i+1].s
					i++
				}
				if name == "unset" {
					delete(env, val)
				}
				if name == "split-string" {
					split(val, i+1)
					continue
				}
			}
			i++
		case strings.HasPrefix(s, "-") && len(s) > 1:
			i++
			for j := 1; j < len(s); j++ {
				switch s[j] {
				case 'i':
					reset()
					continue
				case 'u', 'C', 'S':
					val := s[j+1:]
					if val == "" && i < len(args) {
						val = args[i].s
						i++
					}
					switch s[j] {
					case 'u':
						delete(env, val)
					case 'S':
						split(val, i)
					}
				default:
					continue
				}
				break
			}
		default:
			break loop
		}
	}
	ops := assignments(args[i:], env, true)
	c.env = env
	if len(ops) == 0 {
		return c, none
	}
	return c.withArgv(ops), inner
}

func wrapCommand(r *reader, c cmd) (cmd, outcome) {
	opts, ops := scanOpts(c.argv[1:], optSpec{})
	if has(opts, "-v", "-V") || len(ops) == 0 {
		return c, none
	}
	return c.withArgv(ops), inner
}

func wrapXargs(r *reader, c cmd) (cmd, outcome) {
	opts, ops := scanOpts(c.argv[1:], optSpec{short: "aEIdLnPs", optional: "eil",
		long: longs("arg-file", "delimiter", "eof", "replace", "max-lines", "max-args", "max-procs", "max-chars", "process-slot-var")})
	_ = opts
	if len(ops) == 0 {
		ops = []word{litWord("echo")}
	}
	c.xargs = true
	return c.withArgv(ops), inner
}

func wrapFlock(r *reader, c cmd) (cmd, outcome) {
	spec := optSpec{short: "wEc", long: longs("timeout", "wait", "conflict-exit-code", "command")}
	opts, ops := scanOpts(c.argv[1:], spec)
	if len(ops) == 0 {
		return c, none
	}
	rest := ops[1:] // after the lock file
	if len(rest) > 0 && !rest[0].dyn && (rest[0].s == "-c" || rest[0].s == "--command") {
		if len(rest) < 2 {
			return c, none
		}
		return r.shellString(c, rest[1])
	}
	if s := values(opts, "-c", "--command"); len(s) > 0 {
		return r.shellString(c, word{s: s[len(s)-1]})
	}
	if len(rest) == 0 {
		return c, none
	}
	return c.withArgv(rest), inner
}

func wrapWatch(r *reader, c cmd) (cmd, outcome) {
	opts, ops := scanOpts(c.argv[1:], optSpec{short: "nq", optional: "d", long: longs("interval", "equexit")})
	if len(ops) == 0 {
		return c, none
	}
	if has(opts, "-x", "--exec") {
		return c.withArgv(ops), inner
	}
	// watch runs its arguments, joined by spaces, through sh -c.
	return r.shellString(c, joinWords(ops))
}

func wrapEval(r *reader, c cmd) (cmd, outcome) {
	args := c.argv[1:]
	if len(args) > 0 && !args[0].dyn && args[0].s == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return c, none
	}
	return r.shellString(c, joinWords(args))
}

func wrapFlatpakSpawn(r *reader, c cmd) (cmd, outcome) {
	opts, ops := scanOpts(c.argv[1:], optSpec{long: longs("env", "directory", "forward-fd", "app-path", "usr-path", "sandbox-expose", "sandbox-expose-ro", "sandbox-flag")})
	if len(ops) == 0 {
		return c, none
	}
	c.env = copyEnv(c.env)
	setenvs(opts, c.env, c.env, "--env")
	return c.withArgv(ops), inner
}

func wrapBusybox(r *reader, c cmd) (cmd, outcome) {
	if len(c.argv) < 2 || c.argv[1].dyn || strings.HasPrefix(c.argv[1].s, "-") {
		return c, none
	}
	return c.withArgv(c.argv[1:]), inner
}

func wrapLoader(r *reader, c cmd) (cmd, outcome) {
	opts, ops := scanOpts(c.argv[1:], optSpec{long: longs("library-path", "preload", "audit", "argv0", "inhibit-rpath", "glibc-hwcaps-prefix", "glibc-hwcaps-mask")})
	if has(opts, "--list", "--verify", "--help", "--version") || len(ops) == 0 {
		return c, none
	}
	return c.withArgv(ops), inner
}

func joinWords(ws []word) word {
	var out word
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = w.s
		if w.dyn {
			out.dyn = true
		}
	}
	out.s = strings.Join(parts, " ")
	out.raw = out.s
	if out.dyn {
		out.dynEnd = len(out.s)
	}
	return out
}

// shellString follows a string run by a shell (sh -c, su -c, eval, watch,
// flock -c) with c's environment. At exec level (not deep) the shell's own
// execs are trapped as they happen, so nothing is followed here.
func (r *reader) shellString(c cmd, script word) (cmd, outcome) {
	if !r.deep || script.dyn {
		return c, none
	}
	sc := newScope(c.env)
	sc.resetBy = c.resetBy
	r.parseScript(script.s, sc, r.depth+1)
	return c, nested
}

// shells are the programs whose -c string is a shell script paddock reads.
var shells = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "ksh93": true, "mksh": true, "lksh": true,
	"ash": true, "yash": true, "rbash": true, "hush": true, "posh": true,
}

// shell follows `sh -c STRING`, `bash -lc STRING` and a script fed on stdin.
func (r *reader) shell(c cmd) (cmd, outcome) {
	if !r.deep {
		return c, none
	}
	opts, ops := scanOpts(c.argv[1:], optSpec{short: "oO", plus: true, long: longs("rcfile", "init-file")})
	if has(opts, "-c") {
		if len(ops) == 0 {
			return c, none
		}
		return r.shellString(c, ops[0])
	}
	if len(ops) > 0 && !has(opts, "-s") {
		return c, none // runs a script file paddock does not read
	}
	if c.stdin != nil {
		return r.shellString(c, litWord(*c.stdin))
	}
	return c, none
}

// unwrap follows wrappers down to the commands that run, and emits them.
func (r *reader) unwrap(c cmd) {
	for iter := 0; iter < 256 && r.err == nil; iter++ {
		if len(c.argv) == 0 {
			return
		}
		name, ok := c.name()
		if !ok {
			r.emit(c)
			return
		}
		var next cmd
		var how outcome
		switch w := wrappers[name]; {
		case w != nil:
			next, how = w(r, c)
		case shells[name]:
			next, how = r.shell(c)
		case name == "find":
			r.emit(c)
			r.findExec(c)
			return
		case isLoader(name):
			next, how = wrapLoader(r, c)
		default:
			r.emit(c)
			return
		}
		switch how {
		case none:
			r.emit(c)
			return
		case nested:
			return
		}
		c = next
	}
}

func isLoader(name string) bool {
	return (strings.HasPrefix(name, "ld-linux") || strings.HasPrefix(name, "ld-musl") || strings.HasPrefix(name, "ld64.so")) && strings.Contains(name, ".so")
}

// findExec follows find's -exec/-execdir/-ok/-okdir commands.
func (r *reader) findExec(c cmd) {
	args := c.argv[1:]
	for i := 0; i < len(args); i++ {
		switch args[i].s {
		case "-exec", "-execdir", "-ok", "-okdir":
		default:
			continue
		}
		j := i + 1
		for j < len(args) && args[j].s != ";" && args[j].s != "+" {
			j++
		}
		if j > i+1 {
			r.unwrap(c.withArgv(append([]word(nil), args[i+1:j]...)))
		}
		i = j
	}
}

// name is the program c runs, by the last element of argv[0]. An unquoted
// pattern (/sbin/reb??t) stands for the one name paddock knows it matches.
func (c *cmd) name() (string, bool) {
	names := c.names()
	if len(names) != 1 {
		return "", false
	}
	return names[0], true
}

func (c *cmd) names() []string {
	if len(c.argv) == 0 {
		return nil
	}
	w := c.argv[0]
	b, ok := w.base()
	if !ok {
		return nil
	}
	if !w.glob {
		return []string{b}
	}
	var out []string
	for _, n := range knownNames() {
		if m, _ := path.Match(b, n); m {
			out = append(out, n)
		}
	}
	return out
}

var (
	knownOnce sync.Once
	known     []string
	knownSet  map[string]bool
)

// knownNames lists every program name the guard treats specially.
func knownNames() []string {
	knownOnce.Do(func() {
		known = collectNames()
		knownSet = make(map[string]bool, len(known))
		for _, n := range known {
			knownSet[n] = true
		}
	})
	return known
}

// interesting reports whether an exec of program p (a path or a name) can
// matter to the guard: a known name, a loader, or an init script.
func interesting(p string) bool {
	if p == "" {
		return false
	}
	knownNames()
	b := filepath.Base(p)
	if knownSet[b] || isLoader(b) || b == "find" {
		return true
	}
	switch filepath.Base(filepath.Dir(p)) {
	case "init.d", "rc.d":
		return true
	}
	return false
}

func collectNames() []string {
	set := map[string]bool{}
	for n := range wrappers {
		set[n] = true
	}
	for n := range shells {
		set[n] = true
	}
	for n := range deciders {
		set[n] = true
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
