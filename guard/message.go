package guard

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/paddock-dev/paddock/cmdline"
	"github.com/paddock-dev/paddock/internal/textwrap"
)

// decideAll decides every command a reader collected; caller is the
// environment the reading started with (Command.Env shows what differs).
func decideAll(cmds []cmdline.Cmd, caller map[string]string, p *Policy) []Checked {
	out := make([]Checked, 0, len(cmds))
	for i := range cmds {
		c := &cmds[i]
		v := Verdict{Allow: true}
		if f := decide(c, p); f != nil {
			text := commandText(c)
			v = verdictFor(f, "exec of `"+text+"`", text, c.Env, c.ResetBy, p, false)
		}
		out = append(out, Checked{Command: public(*c, caller), Verdict: v})
	}
	return out
}

// findOptIn returns the first opt-in variable set to a true value in env.
func findOptIn(env map[string]string) (string, string) {
	for _, k := range optInVars {
		if v, ok := env[k]; ok && cmdline.OptInValue(v) {
			return k, v
		}
	}
	return "", ""
}

const powerList = "reboot, poweroff, halt, shutdown, suspend, hibernate, kexec, init 0/6, systemctl and loginctl power verbs, login1 power calls over D-Bus"

// verdictFor turns a finding into a verdict: the opt-in rule, and the
// message. what is "exec of `CMD`" or "reboot(2)"; text is the command for
// examples ("" when there is none to show).
func verdictFor(f *finding, what, text string, env map[string]string, resetBy string, p *Policy, syscall bool) Verdict {
	if f.rule == RuleBroadKill {
		return Verdict{Rule: f.rule, Message: textwrap.OneLine(fmt.Sprintf(
			"paddock refused %s: broad kill commands (pkill, killall, killall5, kill PID) can reach processes this session does not own, "+
				"and no paddock supervisor is reachable here ($PADDOCK_SOCKET is not set) to decide each target. "+
				"Way out: signal a process the session owns with `paddock kill PID`; to control one it did not start, adopt it first with "+
				"`paddock adopt PID --reason \"...\"`; or run the agent under `paddock run`, where the kernel lets such commands reach exactly "+
				"the processes the session owns. (A program that started the process through paddock's Go library signals it with its "+
				"session handle's Kill, h.Kill().) renice, taskset, prlimit, ionice and chrt aimed at a pid count as kill commands here: "+
				"a CPU or file-size limit makes the kernel kill its target.",
			what))}
	}
	name, val := findOptIn(env)
	if name != "" && p.AllowOptIn {
		return Verdict{Allow: true, Rule: f.rule, OptIn: name, Message: textwrap.OneLine(fmt.Sprintf(
			"paddock allowed %s (%s) because %s=%s in its environment declares explicit user intent; the use is journaled as opt_in_used.",
			what, ruleNoun(f), name, showValue(val)))}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "paddock refused %s: ", what)
	switch f.rule {
	case RulePowerControl:
		fmt.Fprintf(&b, "power-control commands (%s) require explicit user intent; this one would %s.", powerList, f.effect)
		if strings.Contains(f.effect, "suspend") || strings.Contains(f.effect, "hibernate") {
			b.WriteString(" A suspended desktop is a dead session for the user, and every job on the machine stops with it.")
		}
	case RuleSessionControl:
		fmt.Fprintf(&b, "session-ending commands require explicit user intent, like power-control commands; this one would %s.", f.effect)
	case RuleProtectedService:
		verb := "is"
		if len(f.units) > 1 {
			verb = "are"
		}
		if f.session {
			fmt.Fprintf(&b, "%s %s a unit that holds the user's login session (session units, protected by default: %s); %s it ends the user's desktop session and every program in it, as surely as stopping the display manager, so it requires explicit user intent.",
				strings.Join(f.units, ", "), verb, sessionList(p), f.verb)
			break
		}
		fmt.Fprintf(&b, "%s %s a protected desktop service (services_to_survive %s: %s); %s it can end the user's desktop session or cut remote access, so it requires explicit user intent.",
			strings.Join(f.units, ", "), verb, servicesSource(p), servicesList(p), f.verb)
	case RuleIsolate:
		def := p.DefaultTarget
		if def == "" {
			def = "unknown here"
		}
		fmt.Fprintf(&b, "systemctl isolate %s stops every unit that %s does not pull in, including the protected desktop services (the display manager, the user's session, sshd: services_to_survive %s); only the default target (%s) and graphical.target may be isolated without explicit user intent.",
			f.target, f.target, servicesSource(p), def)
	}
	b.WriteString(" Way out: ")
	switch {
	case !p.AllowOptIn && name != "":
		fmt.Fprintf(&b, "%s=%s is set, but this host's profile sets allow_opt_in = false, so paddock honours no opt-in (PADDOCK_ALLOW_POWER_CONTROL=1) here; ask the user to do this themselves, outside paddock.", name, showValue(val))
	case !p.AllowOptIn:
		b.WriteString("this host's profile sets allow_opt_in = false, so not even PADDOCK_ALLOW_POWER_CONTROL=1 is honoured here; ask the user to do this themselves, outside paddock.")
	case syscall:
		b.WriteString("if the user really asked for this, run the program with PADDOCK_ALLOW_POWER_CONTROL=1 in its environment; otherwise leave it to the user.")
	default:
		ex, note := example(text, resetBy)
		fmt.Fprintf(&b, "if the user really asked for this, run it with PADDOCK_ALLOW_POWER_CONTROL=1 in its environment: `%s`%s; otherwise leave it to the user.", ex, note)
	}
	if f.hint != "" {
		b.WriteString(" " + f.hint)
	}
	switch f.rule {
	case RuleProtectedService:
		if f.session {
			where := "the host profile"
			if p.Profile != "" {
				where = p.Profile
			}
			fmt.Fprintf(&b, " Which units are protected is set by services_to_survive in %s; an entry \"!PATTERN\" there (\"!app-*.scope\") drops a session unit.", where)
			break
		}
		if p.Profile != "" {
			fmt.Fprintf(&b, " Which services are protected is set by services_to_survive in %s.", p.Profile)
		} else {
			b.WriteString(" Which services are protected is set by services_to_survive in the host profile (paddock profile shows it).")
		}
	case RuleIsolate:
		b.WriteString(" To start a unit without stopping the others, use `systemctl start UNIT`.")
	}
	return Verdict{Rule: f.rule, Message: textwrap.OneLine(b.String())}
}

func ruleNoun(f *finding) string {
	switch f.rule {
	case RulePowerControl:
		return "a power-control command"
	case RuleSessionControl:
		return "a session-ending command"
	case RuleProtectedService:
		if f.session {
			return f.verb + " session unit " + strings.Join(f.units, ", ")
		}
		return f.verb + " protected desktop service " + strings.Join(f.units, ", ")
	case RuleIsolate:
		return "systemctl isolate " + f.target
	}
	return string(f.rule)
}

func servicesSource(p *Policy) string {
	switch {
	case len(ownServices(p.ServicesToSurvive)) == 0:
		return "by default"
	case p.Profile != "":
		return "in " + p.Profile
	}
	return "in the host profile"
}

// servicesList is services_to_survive's own list (or the defaults) less
// what its "!" entries drop.
func servicesList(p *Policy) string {
	base, drop := splitServices(p.ServicesToSurvive)
	return strings.Join(keep(base, drop), ", ")
}

// sessionList is the session units less what the profile drops.
func sessionList(p *Policy) string {
	_, drop := splitServices(p.ServicesToSurvive)
	return strings.Join(keep(sessionUnits[:], drop), ", ")
}

func keep(list, drop []string) []string {
	var out []string
	for _, e := range list {
		if !dropped(trimUnit(e), drop) {
			out = append(out, e)
		}
	}
	return out
}

// example shows the command with the opt-in where it reaches the command:
// after a wrapper that resets the environment, not before it.
func example(text, resetBy string) (string, string) {
	const opt = "PADDOCK_ALLOW_POWER_CONTROL=1"
	note := " (" + resetBy + " resets the environment, so the opt-in goes after it)"
	switch resetBy {
	case "":
		return opt + " " + text, ""
	case "sudo":
		return "sudo " + opt + " " + text, note
	case "run0", "systemd-run":
		return resetBy + " --setenv=" + opt + " " + text, note
	case "env -i":
		return "env -i " + opt + " " + text, note
	case "su -":
		return "su - -c " + quote(opt+" "+text), note
	}
	return resetBy + " env " + opt + " " + text, note
}

// commandText renders c's argv the way a shell user would type it.
func commandText(c *cmdline.Cmd) string {
	parts := make([]string, len(c.Argv))
	for i, w := range c.Argv {
		if w.Dynamic {
			parts[i] = w.Value
		} else {
			parts[i] = quote(w.Value)
		}
	}
	if c.Pseudo {
		parts = parts[:0]
		if len(c.Argv) > 0 {
			parts = append(parts, c.Argv[0].Value)
		}
	}
	for _, w := range c.Writes {
		if !c.Pseudo {
			parts = append(parts, ">", w)
		}
	}
	return display(strings.Join(parts, " "))
}

// display shortens s for a message and keeps it on one line.
func display(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || r == '\r' {
			return ' '
		}
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
	s = strings.ReplaceAll(s, "`", "'")
	const max = 200
	if len(s) > max {
		cut := max
		for cut > 0 && s[cut]&0xc0 == 0x80 {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}

// showValue renders an environment value for a one-line message.
func showValue(v string) string {
	if quote(v) == v {
		return v
	}
	return strconv.Quote(v)
}

func quote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == '-' || c == '.' || c == '/' || c == '=' || c == ':' || c == ',' || c == '+' || c == '@' || c == '%' ||
			(c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// OptedIn reports whether env (NAME=VALUE entries, a process's
// environment) declares explicit intent to control power: an opt-in
// variable set to a true value, and which. Policy.AllowOptIn decides
// whether it is honoured.
func OptedIn(env []string) (string, bool) {
	m := make(map[string]string, len(optInVars))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	k, _ := findOptIn(m)
	return k, k != ""
}
