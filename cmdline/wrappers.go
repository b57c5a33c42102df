package cmdline

import (
	"sort"
	"strings"
)

// outcome of a wrapper handler.
type outcome int

const (
	none   outcome = iota // no command runs inside: the wrapper is the command
	inner                 // the returned command runs inside
	nested                // the handler already followed what runs inside
)

type wrapper func(r *Reader, c Cmd) (Cmd, outcome)

var wrappers map[string]wrapper

func init() {
	condaRun := subcommand("run", OptSpec{Short: "np", Long: Longs("name", "prefix", "cwd")})
	wrappers = map[string]wrapper{
		"sudo":                  wrapSudo,
		"doas":                  wrapDoas,
		"pkexec":                wrapPkexec,
		"run0":                  wrapRun0,
		"systemd-run":           wrapSystemdRun,
		"su":                    wrapSu,
		"runuser":               wrapSu,
		"env":                   wrapEnv,
		"nohup":                 simple(OptSpec{}),
		"setsid":                simple(OptSpec{}),
		"builtin":               func(r *Reader, c Cmd) (Cmd, outcome) { return c.WithArgv(c.Argv[1:]), inner },
		"exec":                  simple(OptSpec{Short: "a"}),
		"command":               wrapCommand,
		"timeout":               skipOperands(OptSpec{Short: "ks", Long: Longs("signal", "kill-after")}, 1),
		"nice":                  simple(OptSpec{Short: "n", Long: Longs("adjustment")}),
		"ionice":                unless(OptSpec{Short: "cnpPu", Long: Longs("class", "classdata", "pid", "pgid", "uid")}, 0, "-p", "-P", "-u", "--pid", "--pgid", "--uid"),
		"stdbuf":                simple(OptSpec{Short: "ioe", Long: Longs("input", "output", "error")}),
		"chrt":                  unless(OptSpec{Short: "TPD", Long: Longs("sched-runtime", "sched-period", "sched-deadline")}, 1, "-p", "--pid", "-m", "--max", "-h", "--help"),
		"taskset":               unless(OptSpec{}, 1, "-p", "--pid", "-h", "--help"),
		"time":                  simple(OptSpec{Short: "fo", Long: Longs("format", "output")}),
		"xargs":                 wrapXargs,
		"chroot":                skipOperands(OptSpec{Long: Longs("userspec", "groups")}, 1),
		"unshare":               simple(OptSpec{Short: "SGRw", Long: Longs("setuid", "setgid", "root", "wd", "propagation", "setgroups", "map-user", "map-group", "map-users", "map-groups", "load-interp", "monotonic", "boottime")}),
		"nsenter":               simple(OptSpec{Short: "tSG", Optional: "muinpUCTrw", Long: Longs("target", "setuid", "setgid")}),
		"flock":                 wrapFlock,
		"watch":                 wrapWatch,
		"strace":                unless(OptSpec{Short: "abeEIoOpPsSuX"}, 0, "-p", "--attach"),
		"systemd-inhibit":       simple(OptSpec{Long: Longs("what", "who", "why", "mode")}),
		"dbus-run-session":      simple(OptSpec{Long: Longs("config-file", "dbus-daemon")}),
		"flatpak-spawn":         wrapFlatpakSpawn,
		"distrobox-host-exec":   simple(OptSpec{}),
		"busybox":               wrapBusybox,
		"eval":                  wrapEval,
		"uv":                    subcommand("run", OptSpec{Short: "p", Long: Longs("with", "with-editable", "with-requirements", "python", "project", "directory", "env-file", "group", "extra", "package", "index", "default-index", "index-url", "extra-index-url", "script")}),
		"uvx":                   simple(OptSpec{Short: "p", Long: Longs("from", "with", "with-editable", "with-requirements", "python", "index", "index-url", "extra-index-url")}),
		"pipx":                  subcommand("run", OptSpec{Long: Longs("spec", "python", "index-url", "pip-args")}),
		"poetry":                subcommand("run", OptSpec{Short: "eC", Long: Longs("environment", "directory", "project")}),
		"pdm":                   subcommand("run", OptSpec{Short: "p", Long: Longs("project", "venv")}),
		"hatch":                 subcommand("run", OptSpec{Short: "e", Long: Longs("env")}),
		"pixi":                  subcommand("run", OptSpec{Short: "e", Long: Longs("environment", "manifest-path")}),
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
func simple(spec OptSpec) wrapper { return skipOperands(spec, 0) }

// skipOperands: options, n operands of the wrapper's own, then the command.
func skipOperands(spec OptSpec, n int) wrapper {
	return func(r *Reader, c Cmd) (Cmd, outcome) {
		_, ops := ScanOpts(c.Argv[1:], spec)
		if len(ops) <= n {
			return c, none
		}
		return c.WithArgv(ops[n:]), inner
	}
}

// subcommand: `PROGRAM SUB options COMMAND...` runs COMMAND (uv run, pipx
// run, conda run); any other use of the program runs nothing inside.
func subcommand(sub string, spec OptSpec) wrapper {
	inside := simple(spec)
	return func(r *Reader, c Cmd) (Cmd, outcome) {
		if len(c.Argv) < 2 || c.Argv[1].Dynamic || c.Argv[1].Value != sub {
			return c, none
		}
		next, how := inside(r, c.WithArgv(c.Argv[1:]))
		if how == none {
			return c, none
		}
		return next, how
	}
}

// unless: like skipOperands, but any of the named options means no command runs.
func unless(spec OptSpec, n int, stop ...string) wrapper {
	return func(r *Reader, c Cmd) (Cmd, outcome) {
		opts, ops := ScanOpts(c.Argv[1:], spec)
		if Has(opts, stop...) || len(ops) <= n {
			return c, none
		}
		return c.WithArgv(ops[n:]), inner
	}
}

// assignments consumes leading NAME=VALUE operands into env.
func assignments(ops []Word, env map[string]string, anyName bool) []Word {
	for len(ops) > 0 {
		v, ok := ops[0].Literal()
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

func wrapSudo(r *Reader, c Cmd) (Cmd, outcome) {
	opts, ops := ScanOpts(c.Argv[1:], OptSpec{Short: "CDgpRrtTUu",
		Long: Longs("user", "group", "host", "prompt", "close-from", "chdir", "role", "type", "other-user", "command-timeout", "chroot")})
	if Has(opts, "-l", "--list", "-e", "--edit", "-V", "--version", "-h", "--help", "-K", "--remove-timestamp") {
		return c, none
	}
	env := map[string]string{}
	preserveAll := false
	for _, o := range opts {
		switch {
		case o.Name == "-E" || (o.Name == "--preserve-env" && !o.HasValue):
			preserveAll = true
		case o.Name == "--preserve-env":
			for _, k := range strings.Split(o.Value, ",") {
				if v, ok := c.Env[k]; ok {
					env[k] = v
				}
			}
		}
	}
	if preserveAll {
		env = copyEnv(c.Env)
	} else {
		c.ResetBy = "sudo"
	}
	ops = assignments(ops, env, false)
	if len(ops) == 0 {
		return c, none
	}
	c.Env = env
	return c.WithArgv(ops), inner
}

func resetEnv(c Cmd, by string) Cmd {
	c.Env = map[string]string{}
	c.ResetBy = by
	return c
}

func wrapDoas(r *Reader, c Cmd) (Cmd, outcome) {
	opts, ops := ScanOpts(c.Argv[1:], OptSpec{Short: "uC"})
	if Has(opts, "-C", "-s", "-L") || len(ops) == 0 {
		return c, none
	}
	return resetEnv(c, "doas").WithArgv(ops), inner
}

func wrapPkexec(r *Reader, c Cmd) (Cmd, outcome) {
	_, ops := ScanOpts(c.Argv[1:], OptSpec{Long: Longs("user")})
	if len(ops) == 0 {
		return c, none
	}
	return resetEnv(c, "pkexec").WithArgv(ops), inner
}

// setenvs applies systemd-style --setenv=K=V / -E K=V / --setenv=K options.
func setenvs(opts []Opt, from, to map[string]string, names ...string) {
	for _, v := range Values(opts, names...) {
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

func wrapRun0(r *Reader, c Cmd) (Cmd, outcome) {
	opts, ops := ScanOpts(c.Argv[1:], OptSpec{Short: "ugD",
		Long: Longs("user", "group", "nice", "chdir", "setenv", "unit", "property", "description", "slice", "machine", "background", "shell-prompt-prefix")})
	if len(ops) == 0 {
		return c, none
	}
	from := c.Env
	c = resetEnv(c, "run0")
	setenvs(opts, from, c.Env, "--setenv")
	return c.WithArgv(ops), inner
}

func wrapSystemdRun(r *Reader, c Cmd) (Cmd, outcome) {
	opts, ops := ScanOpts(c.Argv[1:], OptSpec{Short: "upEHM",
		Long: Longs("unit", "property", "description", "slice", "setenv", "uid", "gid", "nice", "working-directory",
			"service-type", "on-active", "on-boot", "on-startup", "on-unit-active", "on-unit-inactive", "on-calendar",
			"timer-property", "path-property", "socket-property", "machine", "host", "background")})
	if len(ops) == 0 {
		return c, none
	}
	from := c.Env
	c = resetEnv(c, "systemd-run")
	setenvs(opts, from, c.Env, "--setenv", "-E")
	return c.WithArgv(ops), inner
}

// wrapSu handles su and runuser: -c STRING runs through the user's shell;
// runuser -u USER -- CMD runs an argv.
func wrapSu(r *Reader, c Cmd) (Cmd, outcome) {
	name, _ := c.Argv[0].Base()
	spec := OptSpec{Short: "cgGsw", Long: Longs("command", "session-command", "group", "supp-group", "shell", "whitelist-environment")}
	if name == "runuser" {
		spec.Short += "u"
		spec.Long["user"] = true
	}
	// "-" alone means a login shell.
	var args []Word
	login := false
	for _, a := range c.Argv[1:] {
		if a.Value == "-" && !a.Dynamic {
			login = true
			continue
		}
		args = append(args, a)
	}
	spec.Permute = true // su's options may follow the user name
	opts, ops := ScanOpts(args, spec)
	if login || Has(opts, "-l", "--login") {
		c = resetEnv(c, "su -")
	}
	if name == "runuser" && Has(opts, "-u", "--user") {
		if len(ops) == 0 {
			return c, none
		}
		return c.WithArgv(ops), inner
	}
	cmds := Values(opts, "-c", "--command", "--session-command")
	if len(cmds) == 0 {
		return c, none
	}
	return r.shellString(c, Word{Value: cmds[len(cmds)-1]})
}

func wrapEnv(r *Reader, c Cmd) (Cmd, outcome) {
	env := copyEnv(c.Env)
	args := append([]Word(nil), c.Argv[1:]...)
	i := 0
	reset := func() {
		env = map[string]string{}
		c.ResetBy = "env -i"
	}
	split := func(s string, at int) {
		var fs []Word
		for _, f := range strings.Fields(s) {
			fs = append(fs, Lit(f))
		}
		args = append(fs, args[at:]...)
		i = 0
	}
loop:
	for i < len(args) {
		a := args[i]
		s := a.Value
		switch {
		case a.Dynamic:
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
					val = args[i+1].Value
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
						val = args[i].Value
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
	c.Env = env
	if len(ops) == 0 {
		return c, none
	}
	return c.WithArgv(ops), inner
}

func wrapCommand(r *Reader, c Cmd) (Cmd, outcome) {
	opts, ops := ScanOpts(c.Argv[1:], OptSpec{})
	if Has(opts, "-v", "-V") || len(ops) == 0 {
		return c, none
	}
	return c.WithArgv(ops), inner
}

func wrapXargs(r *Reader, c Cmd) (Cmd, outcome) {
	opts, ops := ScanOpts(c.Argv[1:], OptSpec{Short: "aEIdLnPs", Optional: "eil",
		Long: Longs("arg-file", "delimiter", "eof", "replace", "max-lines", "max-args", "max-procs", "max-chars", "process-slot-var")})
	_ = opts
	if len(ops) == 0 {
		ops = []Word{Lit("echo")}
	}
	c.Xargs = true
	return c.WithArgv(ops), inner
}

func wrapFlock(r *Reader, c Cmd) (Cmd, outcome) {
	spec := OptSpec{Short: "wEc", Long: Longs("timeout", "wait", "conflict-exit-code", "command")}
	opts, ops := ScanOpts(c.Argv[1:], spec)
	if len(ops) == 0 {
		return c, none
	}
	rest := ops[1:] // after the lock file
	if len(rest) > 0 && !rest[0].Dynamic && (rest[0].Value == "-c" || rest[0].Value == "--command") {
		if len(rest) < 2 {
			return c, none
		}
		return r.shellString(c, rest[1])
	}
	if s := Values(opts, "-c", "--command"); len(s) > 0 {
		return r.shellString(c, Word{Value: s[len(s)-1]})
	}
	if len(rest) == 0 {
		return c, none
	}
	return c.WithArgv(rest), inner
}

func wrapWatch(r *Reader, c Cmd) (Cmd, outcome) {
	opts, ops := ScanOpts(c.Argv[1:], OptSpec{Short: "nq", Optional: "d", Long: Longs("interval", "equexit")})
	if len(ops) == 0 {
		return c, none
	}
	if Has(opts, "-x", "--exec") {
		return c.WithArgv(ops), inner
	}
	// watch runs its arguments, joined by spaces, through sh -c.
	return r.shellString(c, joinWords(ops))
}

func wrapEval(r *Reader, c Cmd) (Cmd, outcome) {
	args := c.Argv[1:]
	if len(args) > 0 && !args[0].Dynamic && args[0].Value == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return c, none
	}
	return r.shellString(c, joinWords(args))
}

func wrapFlatpakSpawn(r *Reader, c Cmd) (Cmd, outcome) {
	opts, ops := ScanOpts(c.Argv[1:], OptSpec{Long: Longs("env", "directory", "forward-fd", "app-path", "usr-path", "sandbox-expose", "sandbox-expose-ro", "sandbox-flag")})
	if len(ops) == 0 {
		return c, none
	}
	c.Env = copyEnv(c.Env)
	setenvs(opts, c.Env, c.Env, "--env")
	return c.WithArgv(ops), inner
}

func wrapBusybox(r *Reader, c Cmd) (Cmd, outcome) {
	if len(c.Argv) < 2 || c.Argv[1].Dynamic || strings.HasPrefix(c.Argv[1].Value, "-") {
		return c, none
	}
	return c.WithArgv(c.Argv[1:]), inner
}

func wrapLoader(r *Reader, c Cmd) (Cmd, outcome) {
	opts, ops := ScanOpts(c.Argv[1:], OptSpec{Long: Longs("library-path", "preload", "audit", "argv0", "inhibit-rpath", "glibc-hwcaps-prefix", "glibc-hwcaps-mask")})
	if Has(opts, "--list", "--verify", "--help", "--version") || len(ops) == 0 {
		return c, none
	}
	return c.WithArgv(ops), inner
}

// shellString follows a string run by a shell (sh -c, su -c, eval, watch,
// flock -c) with c's environment. At exec level (not deep) the shell's own
// execs are trapped as they happen, so nothing is followed here.
func (r *Reader) shellString(c Cmd, script Word) (Cmd, outcome) {
	if !r.deep || script.Dynamic {
		return c, none
	}
	sc := newScope(c.Env)
	sc.resetBy = c.ResetBy
	r.parseScript(script.Value, sc, r.depth+1)
	return c, nested
}

// shells are the programs whose -c string is a shell script paddock reads.
var shells = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "ksh93": true, "mksh": true, "lksh": true,
	"ash": true, "yash": true, "rbash": true, "hush": true, "posh": true,
}

// shell follows `sh -c STRING`, `bash -lc STRING` and a script fed on stdin.
func (r *Reader) shell(c Cmd) (Cmd, outcome) {
	if !r.deep {
		return c, none
	}
	opts, ops := ScanOpts(c.Argv[1:], OptSpec{Short: "oO", Plus: true, Long: Longs("rcfile", "init-file")})
	if Has(opts, "-c") {
		if len(ops) == 0 {
			return c, none
		}
		return r.shellString(c, ops[0])
	}
	if len(ops) > 0 && !Has(opts, "-s") {
		return c, none // runs a script file paddock does not read
	}
	if c.Stdin != nil {
		return r.shellString(c, Lit(*c.Stdin))
	}
	return c, none
}

// unwrap follows wrappers down to the commands that run, and emits them.
func (r *Reader) unwrap(c Cmd) {
	for iter := 0; iter < 256 && r.err == nil; iter++ {
		if len(c.Argv) == 0 {
			return
		}
		name, ok := c.Name(r.known)
		if !ok {
			r.emit(c)
			return
		}
		var next Cmd
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
		case IsLoader(name):
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

// IsLoader reports whether name (a base name) is a dynamic loader that
// runs the program named by its first operand (ld-linux-x86-64.so.2,
// ld-musl-x86_64.so.1, ld64.so.2).
func IsLoader(name string) bool {
	return (strings.HasPrefix(name, "ld-linux") || strings.HasPrefix(name, "ld-musl") || strings.HasPrefix(name, "ld64.so")) && strings.Contains(name, ".so")
}

// findExec follows find's -exec/-execdir/-ok/-okdir commands.
func (r *Reader) findExec(c Cmd) {
	args := c.Argv[1:]
	for i := 0; i < len(args); i++ {
		switch args[i].Value {
		case "-exec", "-execdir", "-ok", "-okdir":
		default:
			continue
		}
		j := i + 1
		for j < len(args) && args[j].Value != ";" && args[j].Value != "+" {
			j++
		}
		if j > i+1 {
			r.unwrap(c.WithArgv(append([]Word(nil), args[i+1:j]...)))
		}
		i = j
	}
}

// Programs lists, sorted, the names of the programs the reader sees
// through by name: the wrappers and the shells. A caller that matches
// patterns against program names (Options.Known) includes them.
func Programs() []string {
	out := make([]string, 0, len(wrappers)+len(shells))
	for n := range wrappers {
		out = append(out, n)
	}
	for n := range shells {
		if wrappers[n] == nil {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Follows reports whether the reader looks inside an exec of the program
// named base: a wrapper, a shell, a dynamic loader, or find (its -exec).
// Any other program is the command that runs.
func Follows(base string) bool {
	return wrappers[base] != nil || shells[base] || IsLoader(base) || base == "find"
}
