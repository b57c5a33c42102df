// Package guard decides whether a command may run: power control (reboot,
// poweroff, suspend, ... in every spelling paddock knows), protected desktop
// services (systemctl stop|restart|mask|kill|... of a unit in the host
// profile's services_to_survive or of the session units that hold the
// user's login session, systemctl isolate), session-ending commands
// (loginctl kill-session, writes to cgroup.kill, ...), and, when no
// supervisor decides per target, broad kill commands.
//
// It answers two kinds of question:
//
//   - CheckCommand: one exec, as the kernel trap sees it (path, argv,
//     environment). Argv-style wrappers (sudo, env, nohup, timeout, nice,
//     busybox, ...) are unwrapped; a nested shell string (sh -c '...') is
//     not, because the shell's own execs are trapped one by one.
//   - ExplainShell and CheckArgv: a shell string or an argv before it runs
//     (paddock check, agent-harness hooks). The string is parsed with a real
//     shell parser (mvdan.cc/sh): env-assignment prefixes, wrappers, nested
//     sh -c / bash -lc / eval strings, chains, pipelines, subshells, command
//     substitutions, loops over literal words and here-documents fed to a
//     shell are all followed.
//
// The reading itself (the shell parser, the option scanner, the wrappers
// seen through) is package cmdline's, which the VRAM preflight reads
// command lines with too, so that both see through exactly the same
// wrappers.
//
// Explicit user intent is PADDOCK_ALLOW_POWER_CONTROL=1 (aliases
// RLM_ALLOW_POWER_CONTROL, PRIME_ALLOW_POWER_CONTROL) in the environment the
// command would run with; it is honoured only when Policy.AllowOptIn is set.
// Broad kill commands have no opt-in: under paddock run the kernel decides
// each target (Policy.Supervised), elsewhere they are refused.
//
// The package performs no I/O: every fact comes from its arguments.
package guard

import (
	"fmt"
	"maps"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/cmdline"
	"github.com/paddock-dev/paddock/internal/textwrap"
)

// Command is one exec: the resolved path, argv and environment ("KEY=VALUE").
// For commands read from a shell string, Path is argv[0] as written and Env
// holds only what the string itself sets (assignment prefixes, exports,
// env/sudo VAR=VALUE arguments).
type Command struct {
	Path string
	Argv []string
	Env  []string
}

// Policy is what the guard needs from the host profile. Build it with
// profile.Profile.GuardPolicy; the zero Policy honours no opt-in.
type Policy struct {
	// ServicesToSurvive lists the protected units ("gdm", "pipewire.service",
	// globs like "user@*"); with no entry that protects, DefaultServices.
	// The session units (SessionUnits) are protected either way. An entry
	// "!PATTERN" protects nothing: it drops every protected name it equals
	// or matches as a glob ("!app-*.scope", "!sshd"). EffectiveServices
	// gives the list that results.
	ServicesToSurvive []string
	// AllowOptIn honours PADDOCK_ALLOW_POWER_CONTROL=1 (profile key allow_opt_in).
	AllowOptIn bool
	// DefaultTarget is the result of `systemctl get-default`, "" if unknown.
	DefaultTarget string
	// Supervised is true under paddock run: broad kill commands pass, because
	// the kernel-level rule decides each target.
	Supervised bool
	// Profile names the profile file, for messages ("" when none was read).
	Profile string
}

// Verdict is the guard's answer for one command or shell string.
type Verdict struct {
	Allow bool
	// Rule is "" for an ordinary command, else one of the Rule* constants
	// (also set when an opt-in allowed the command).
	Rule audit.Rule
	// Message explains a refusal (what, why, way out), or records which
	// opt-in allowed a guarded command; "" for an ordinary allowed command.
	Message string
	// OptIn is the environment variable that was honoured, "" if none. The
	// caller journals every honoured opt-in as opt_in_used.
	OptIn string
}

// Rules, as journaled (package audit holds the vocabulary).
const (
	RulePowerControl     = audit.RulePowerControl     // reboot, poweroff, suspend, ...
	RuleProtectedService = audit.RuleProtectedService // systemctl stop gdm, ...
	RuleIsolate          = audit.RuleIsolate          // systemctl isolate multi-user.target
	RuleSessionControl   = audit.RuleSessionControl   // loginctl terminate-user, gnome-session-quit, ...
	RuleBroadKill        = audit.RuleBroadKill        // pkill, killall, kill PID without a supervisor
	RuleUnparsable       = audit.RuleUnparsable       // a shell string paddock cannot read
)

// optInVars are the environment variables that declare explicit user
// intent for power control and protected services, preferred first.
var optInVars = [...]string{"PADDOCK_ALLOW_POWER_CONTROL", "RLM_ALLOW_POWER_CONTROL", "PRIME_ALLOW_POWER_CONTROL"}

// defaultServices is the protected list used when the profile sets none.
var defaultServices = [...]string{
	"display-manager", "gdm", "gdm3", "sddm", "lightdm", "gnome-shell", "plasmashell", "sway",
	"hyprland", "pipewire", "pipewire-pulse", "wireplumber", "systemd-logind", "dbus",
	"NetworkManager", "polkit", "sshd",
}

// DefaultServices returns a copy of the units protected when the profile
// sets no services_to_survive.
func DefaultServices() []string { return append([]string(nil), defaultServices[:]...) }

// sessionUnits hold the user's login session: stopping, killing, masking or
// restarting one ends the desktop session as surely as stopping the display
// manager. They are protected whatever services_to_survive lists, unless a
// "!" entry drops them.
var sessionUnits = [...]string{
	"user@*.service", "session-*.scope", "graphical-session.target", "gnome-session*", "plasma-*", "app-*.scope",
}

// SessionUnits returns a copy of the session units, protected in addition
// to services_to_survive (or the defaults) unless the profile drops one with
// a "!" entry.
func SessionUnits() []string { return append([]string(nil), sessionUnits[:]...) }

// EffectiveServices returns the units protected under a services_to_survive
// list, in a fresh slice: the list's entries (or DefaultServices when it has
// no entry that protects), then the session units, less every name that a
// "!PATTERN" entry equals or matches; a name already listed (with or
// without .service) is not repeated.
func EffectiveServices(servicesToSurvive []string) []string {
	base, drop := splitServices(servicesToSurvive)
	var out []string
	seen := map[string]bool{}
	for _, list := range [][]string{base, sessionUnits[:]} {
		for _, e := range list {
			n := trimUnit(e)
			if seen[n] || dropped(n, drop) {
				continue
			}
			seen[n] = true
			out = append(out, e)
		}
	}
	return out
}

// Checked is one command of a shell string and the guard's verdict on it.
type Checked struct {
	Command Command
	Verdict Verdict
}

// CheckCommand decides one exec (what the kernel trap reports): argv-style
// wrappers and busybox applets are unwrapped, nested shell strings are not
// (the shell's own execs are trapped when they happen). Both argv[0] and the
// executable's path count: a busybox or systemctl symlink named reboot is
// reboot.
func CheckCommand(c Command, p Policy) Verdict {
	if !Watches(c.Path, c.Argv) {
		return Verdict{Allow: true} // the common case: nothing the guard knows
	}
	r := newReader(false)
	env := cmdline.EnvMap(c.Env)
	argv := c.Argv
	if len(argv) == 0 {
		argv = []string{c.Path}
	}
	r.Follow(cmdline.NewCmd(argv, env))
	if c.Path != "" && len(c.Argv) > 0 && filepath.Base(c.Path) != filepath.Base(c.Argv[0]) {
		alt := append([]string{c.Path}, c.Argv[1:]...)
		r.Follow(cmdline.NewCmd(alt, env))
	}
	return combine(decideAll(r.Commands(), nil, &p)).Verdict
}

// Watches reports whether CheckCommand has anything to say about an exec
// of path with argv: a program it knows by name (power control, service
// managers, wrappers, shells, loaders) as the path or as argv[0]. Any other
// exec is allowed without a look at its environment, so a backend may skip
// reading it.
func Watches(path string, argv []string) bool {
	return interesting(path) || (len(argv) > 0 && interesting(argv[0]))
}

// CheckArgv decides an argv the way `paddock check -- CMD ARG...` does:
// like CheckCommand, and also everything a nested shell string
// (sh -c '...', su -c, watch, flock -c, ...) would run. env is the
// environment it would run with.
func CheckArgv(argv []string, env []string, p Policy) ([]Checked, Verdict, error) {
	r := newReader(true)
	if len(argv) == 0 {
		return nil, Verdict{Allow: true}, nil
	}
	caller := cmdline.EnvMap(env)
	r.Follow(cmdline.NewCmd(argv, maps.Clone(caller)))
	if err := r.Err(); err != nil {
		return nil, unparsable(strings.Join(argv, " "), err), err
	}
	all := decideAll(r.Commands(), caller, &p)
	return all, combine(all).Verdict, nil
}

// ExplainShell decides a shell string (a Bash tool call, `paddock check
// --shell`), and gives the verdict on each of its commands too. env is the
// environment the shell would start with; its opt-in, or one set by the
// string itself (an assignment prefix, an export, env or sudo VAR=VALUE),
// declares explicit intent. A string paddock cannot parse is refused (rule
// "unparsable") and the parser's error is returned too: paddock does not
// let through what it cannot read.
func ExplainShell(s string, env []string, p Policy) ([]Checked, Verdict, error) {
	r := newReader(true)
	caller := cmdline.EnvMap(env)
	r.Script(s, caller)
	if err := r.Err(); err != nil {
		return nil, unparsable(s, err), err
	}
	all := decideAll(r.Commands(), caller, &p)
	return all, combine(all).Verdict, nil
}

// CheckPowerEnv decides the reboot and kexec syscalls themselves
// ("reboot", "kexec_load", "kexec_file_load") with the caller's environment
// and the policy's opt-in rule, so that the opt-in works for programs that
// call reboot(2) directly. With no environment and the zero Policy they
// are always refused.
func CheckPowerEnv(syscall string, env []string, p Policy) Verdict {
	what := syscall + "(2)"
	effect := "reboot, power off or halt this machine"
	if strings.HasPrefix(syscall, "kexec") {
		effect = "load a kernel to boot into (kexec), which ends in a reboot"
	}
	f := &finding{rule: RulePowerControl, effect: effect}
	return verdictFor(f, what, "a program that calls "+syscall+"(2)", cmdline.EnvMap(env), "", &p, true)
}

func unparsable(s string, err error) Verdict {
	return Verdict{Rule: RuleUnparsable, Message: textwrap.OneLine(fmt.Sprintf(
		"paddock refused `%s`: paddock could not read this shell string (%v), and it does not let through what it cannot read. "+
			"Way out: simplify the command (one command per line, plain quoting), or run it under paddock run, where each exec is checked as it happens.",
		display(s), err))}
}

// combine folds the per-command verdicts: the first refusal wins; else the
// first honoured opt-in; else allowed.
func combine(all []Checked) Checked {
	var opt *Checked
	for i := range all {
		if !all[i].Verdict.Allow {
			return all[i]
		}
		if opt == nil && all[i].Verdict.OptIn != "" {
			opt = &all[i]
		}
	}
	if opt != nil {
		return *opt
	}
	return Checked{Verdict: Verdict{Allow: true}}
}

// newReader is a command-line reader as the guard reads: patterns in a
// command's name matched against every name the guard knows, and the
// writes to guarded files recorded.
func newReader(deep bool) *cmdline.Reader {
	return cmdline.NewReader(cmdline.Options{Deep: deep, Known: knownNames(), Watch: guardedTarget})
}

// public renders c as a Command; Env holds what differs from caller.
func public(c cmdline.Cmd, caller map[string]string) Command {
	out := Command{Argv: make([]string, len(c.Argv))}
	for i, w := range c.Argv {
		out.Argv[i] = w.Value
	}
	if len(out.Argv) > 0 {
		out.Path = out.Argv[0]
	}
	keys := make([]string, 0, len(c.Env))
	for k, v := range c.Env {
		if cv, ok := caller[k]; ok && cv == v {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out.Env = append(out.Env, k+"="+c.Env[k])
	}
	return out
}

var (
	knownOnce sync.Once
	known     []string
	knownSet  map[string]bool
)

// knownNames lists, sorted, every program name the guard treats
// specially: the programs the reader sees through and those the guard
// decides.
func knownNames() []string {
	knownOnce.Do(func() {
		set := map[string]bool{}
		for _, n := range cmdline.Programs() {
			set[n] = true
		}
		for n := range deciders {
			set[n] = true
		}
		known = make([]string, 0, len(set))
		for n := range set {
			known = append(known, n)
		}
		sort.Strings(known)
		knownSet = set
	})
	return known
}

// interesting reports whether an exec of program p (a path or a name) can
// matter to the guard: a known name, one the reader looks inside (a
// loader, find), or an init script.
func interesting(p string) bool {
	if p == "" {
		return false
	}
	knownNames()
	b := filepath.Base(p)
	if knownSet[b] || cmdline.Follows(b) {
		return true
	}
	switch filepath.Base(filepath.Dir(p)) {
	case "init.d", "rc.d":
		return true
	}
	return false
}
