package guard

import (
	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/cmdline"

	"path"
	"path/filepath"
	"slices"
	"strings"
)

// finding is why a command is guarded.
type finding struct {
	rule   audit.Rule
	effect string   // "reboot this machine" (power and session rules)
	verb   string   // systemctl verb, for protected services
	units  []string // protected units hit
	// session: every unit hit is a session unit (sessionUnits), not one
	// of services_to_survive
	session bool
	target  string // isolate target
	hint    string // one more sentence of way out, "" if none
}

func powerF(effect string) *finding   { return &finding{rule: RulePowerControl, effect: effect} }
func sessionF(effect string) *finding { return &finding{rule: RuleSessionControl, effect: effect} }

const (
	effReboot     = "reboot this machine"
	effPoweroff   = "power off this machine"
	effHalt       = "halt this machine"
	effShutdown   = "shut down (power off, halt or reboot) this machine"
	effKexec      = "boot straight into another kernel (a reboot)"
	effSoft       = "soft-reboot userspace, ending every process and session on this machine"
	effSuspend    = "suspend this machine"
	effHibernate  = "hibernate this machine"
	effRescue     = "switch this machine to rescue mode, stopping the user's session and most services"
	effEmergency  = "switch this machine to emergency mode, stopping the user's session and nearly every service"
	effSysrq      = "trigger a magic SysRq action (b reboots, o powers off, c crashes the kernel) at once"
	effPowerFile  = "suspend or hibernate this machine through /sys/power"
	effLogout     = "log the user out, ending their desktop session"
	effSession    = "end the user's login sessions and every process in them"
	effCgroupKill = "SIGKILL every process in that cgroup and its children at once, past any per-process check " +
		"(user.slice, a user-UID.slice, user@UID.service or a session-N.scope holds the user's whole desktop session)"
	hintCgroupKill = "To stop processes this session started, signal them by PID (`paddock kill PID`, or kill PID under paddock run); " +
		"to stop a unit, use systemctl, which paddock checks unit by unit."
	effCgroupFreeze = "freeze every process in that cgroup and its children at once " +
		"(user.slice, a user-UID.slice, user@UID.service or a session-N.scope holds the user's whole desktop session)"
	effOOMScore  = "change which process the kernel's OOM killer picks: raised, that process is killed first when memory runs short"
	hintOOMScore = "Set the agent's own processes' score through /proc/self/oom_score_adj, or start them with `choom -n N -- CMD`."
)

// isOOMFile reports whether name is a /proc/PID file that sets a
// process's OOM score.
func isOOMFile(name string) bool { return name == "oom_score_adj" || name == "oom_adj" }

// oomTarget reports whether p is /proc/PID/oom_score_adj (or oom_adj) of a
// process other than the writer itself (self, thread-self, $$, $BASHPID).
func oomTarget(p string) bool {
	dir, file := path.Split(filepath.Clean(p))
	if !isOOMFile(file) {
		return false
	}
	parent, pid := path.Split(strings.TrimSuffix(dir, "/"))
	if parent != "/proc/" {
		return false
	}
	switch pid {
	case "self", "thread-self", "$$", "${$}", "$BASHPID", "${BASHPID}":
		return false
	}
	return true
}

// cgroupKill is the cgroup v2 file whose write kills the whole cgroup. It
// is guarded under any directory: the shell's working directory is not
// known, and no other file bears the name.
const cgroupKill = "cgroup.kill"

// guardedFile reports whether writing to p is power or session control.
func guardedFile(p string) bool {
	switch filepath.Clean(p) {
	case "/proc/sysrq-trigger", "/sys/power/state":
		return true
	}
	return path.Base(p) == cgroupKill || path.Base(p) == cgroupFreeze || oomTarget(p)
}

// cgroupFreeze is the cgroup v2 file whose write freezes the whole cgroup,
// guarded as cgroup.kill is.
const cgroupFreeze = "cgroup.freeze"

// guardedTarget returns the file a write to w reaches when writing to it
// is guarded: a known path, or a path only partly known that ends in
// cgroup.kill after its last run-time part ("$CG/cgroup.kill",
// "$dir"cgroup.kill).
func guardedTarget(w cmdline.Word) (string, bool) {
	if s, ok := w.Literal(); ok {
		if guardedFile(s) {
			return filepath.Clean(s), true
		}
		return "", false
	}
	tail := w.Value[min(w.DynamicEnd, len(w.Value)):]
	for _, f := range []string{cgroupKill, cgroupFreeze} {
		if tail == f || strings.HasSuffix(tail, "/"+f) {
			return w.Value, true
		}
	}
	// /proc/$PID/oom_score_adj: the pid only known at run time (the raw
	// cmdline.Word keeps $$ and $BASHPID, the writer itself).
	if oomTarget(strings.Trim(w.Source, `"`)) && strings.HasPrefix(w.Value, "/proc/") {
		return w.Value, true
	}
	return "", false
}

// fileFinding says why writing to the guarded file p is refused.
func fileFinding(p string) *finding {
	switch {
	case strings.HasSuffix(p, cgroupKill): // guarded, so cgroup.kill itself
		f := sessionF(effCgroupKill)
		f.hint = hintCgroupKill
		return f
	case strings.HasSuffix(p, cgroupFreeze):
		f := sessionF(effCgroupFreeze)
		f.hint = hintCgroupKill
		return f
	case isOOMFile(path.Base(p)):
		f := sessionF(effOOMScore)
		f.hint = hintOOMScore
		return f
	case filepath.Clean(p) == "/proc/sysrq-trigger":
		return powerF(effSysrq)
	}
	return powerF(effPowerFile)
}

type decider func(c *cmdline.Cmd, args []cmdline.Word, p *Policy) *finding

var deciders map[string]decider

func always(effect string) decider {
	return func(*cmdline.Cmd, []cmdline.Word, *Policy) *finding { return powerF(effect) }
}

func init() {
	deciders = map[string]decider{
		"reboot":               always(effReboot),
		"poweroff":             always(effPoweroff),
		"halt":                 always(effHalt),
		"shutdown":             always(effShutdown),
		"kexec":                always(effKexec),
		"pm-suspend":           always(effSuspend),
		"pm-suspend-hybrid":    always(effSuspend),
		"pm-hibernate":         always(effHibernate),
		"s2ram":                always(effSuspend),
		"s2both":               always(effSuspend),
		"s2disk":               always(effHibernate),
		"zzz":                  always(effSuspend),
		"ZZZ":                  always(effHibernate),
		"systemd-sleep":        always(effSuspend),
		"init":                 decideInit,
		"telinit":              decideInit,
		"systemctl":            decideSystemctl,
		"loginctl":             decideLoginctl,
		"busctl":               decideDbus,
		"dbus-send":            decideDbus,
		"gdbus":                decideDbus,
		"qdbus":                decideDbus,
		"qdbus6":               decideDbus,
		"qdbus-qt5":            decideDbus,
		"qdbus-qt6":            decideDbus,
		"rtcwake":              decideRtcwake,
		"gnome-session-quit":   decideSessionQuit,
		"xfce4-session-logout": decideSessionQuit,
		"lxqt-leave":           decideSessionQuit,
		"swaymsg":              decideWMExit,
		"i3-msg":               decideWMExit,
		"hyprctl":              decideWMExit,
		"service":              decideService,
		"invoke-rc.d":          decideService,
		"rc-service":           decideService,
		"tee":                  decideTee,
		"dd":                   decideDd,
		"kill":                 decideKill,
		"pkill":                decidePkill,
		"killall":              decideKillall,
		"killall5":             decideKillall5,
		"skill":                decideKillall,
		"fuser":                decideFuser,
		"renice":               decideRetarget,
		"taskset":              decideRetarget,
		"prlimit":              decideRetarget,
		"ionice":               decideRetarget,
		"chrt":                 decideRetarget,
	}
}

// decide returns why c is guarded, or nil.
func decide(c *cmdline.Cmd, p *Policy) *finding {
	for _, w := range c.Writes {
		return fileFinding(w)
	}
	if c.Pseudo || len(c.Argv) == 0 {
		return nil
	}
	if name, ok := c.Name(knownNames()); ok {
		if d := deciders[name]; d != nil {
			if f := d(c, c.Argv[1:], p); f != nil {
				return f
			}
		}
	}
	// /etc/init.d/gdm3 stop
	if s, ok := c.Argv[0].Literal(); ok && strings.Contains(s, "/") {
		if dir := path.Base(path.Dir(s)); dir == "init.d" || dir == "rc.d" {
			if len(c.Argv) > 1 {
				return serviceAction(path.Base(s), c.Argv[1], p)
			}
		}
	}
	return nil
}

func decideInit(c *cmdline.Cmd, args []cmdline.Word, p *Policy) *finding {
	_, ops := cmdline.ScanOpts(args, cmdline.OptSpec{})
	if len(ops) == 0 {
		return nil
	}
	v, ok := ops[0].Literal()
	if !ok {
		return nil
	}
	switch v {
	case "0":
		return powerF(effPoweroff)
	case "6":
		return powerF(effReboot)
	case "1", "s", "S", "single":
		return powerF(effRescue)
	case "2", "3", "4":
		return isolate("multi-user.target", p)
	}
	return nil
}

// systemctl verbs.
var (
	systemctlPower = map[string]string{
		"reboot": effReboot, "poweroff": effPoweroff, "halt": effHalt, "kexec": effKexec,
		"soft-reboot": effSoft, "suspend": effSuspend, "hibernate": effHibernate,
		"hybrid-sleep": effSuspend, "suspend-then-hibernate": effSuspend, "sleep": effSuspend,
		"emergency": effEmergency, "rescue": effRescue,
	}
	// verbs that stop, disable or restart the units they name
	protectVerbs = map[string]string{
		"stop": "stopping", "disable": "disabling", "mask": "masking", "kill": "killing",
		"restart": "restarting", "try-restart": "restarting", "reload-or-restart": "restarting",
		"try-reload-or-restart": "restarting", "reload-or-try-restart": "restarting",
		"condrestart": "restarting", "condreload": "restarting", "force-reload": "restarting",
		"condstop": "stopping", "freeze": "freezing",
	}
	// verbs that start the units they name
	startVerbs = map[string]bool{
		"start": true, "restart": true, "try-restart": true, "reload-or-restart": true,
		"try-reload-or-restart": true, "reload-or-try-restart": true, "condrestart": true,
		"condreload": true, "force-reload": true,
	}
	// units whose start is power control
	powerUnits = map[string]string{
		"poweroff.target": effPoweroff, "reboot.target": effReboot, "halt.target": effHalt,
		"kexec.target": effKexec, "soft-reboot.target": effSoft, "ctrl-alt-del.target": effReboot,
		"suspend.target": effSuspend, "hibernate.target": effHibernate, "hybrid-sleep.target": effSuspend,
		"suspend-then-hibernate.target": effSuspend, "sleep.target": effSuspend,
		"rescue.target": effRescue, "emergency.target": effEmergency,
		"runlevel0.target": effPoweroff, "runlevel1.target": effRescue, "runlevel6.target": effReboot,
		"systemd-poweroff.service": effPoweroff, "systemd-reboot.service": effReboot,
		"systemd-halt.service": effHalt, "systemd-kexec.service": effKexec,
		"systemd-soft-reboot.service": effSoft, "systemd-suspend.service": effSuspend,
		"systemd-hibernate.service": effHibernate, "systemd-hybrid-sleep.service": effSuspend,
		"systemd-suspend-then-hibernate.service": effSuspend,
		"rescue.service":                         effRescue, "emergency.service": effEmergency,
	}
)

var systemctlSpec = cmdline.OptSpec{Short: "tspPHMnoC", Permute: true,
	Long: cmdline.Longs("type", "state", "signal", "property", "host", "machine", "lines", "output", "root", "image",
		"job-mode", "kill-whom", "kill-value", "what", "preset-mode", "timestamp", "message", "when", "drop-in",
		"reboot-argument", "boot-loader-menu", "boot-loader-entry", "check-inhibitors", "image-policy", "capsule")}

func decideSystemctl(c *cmdline.Cmd, args []cmdline.Word, p *Policy) *finding {
	opts, ops := cmdline.ScanOpts(args, systemctlSpec)
	if len(ops) == 0 {
		return nil
	}
	verb, ok := ops[0].Literal()
	if !ok {
		return nil
	}
	units := ops[1:]
	if eff, ok := systemctlPower[verb]; ok {
		return powerF(eff)
	}
	switch verb {
	case "isolate":
		if len(units) == 0 {
			return nil
		}
		t, ok := units[0].Literal()
		if !ok {
			return &finding{rule: RuleIsolate, target: units[0].Value}
		}
		return isolate(t, p)
	case "exit":
		return sessionF("stop the service manager (with --user: every service of the user's session)")
	}
	if startVerbs[verb] || ((verb == "enable" || verb == "reenable") && cmdline.Has(opts, "--now")) {
		for _, u := range units {
			if s, ok := u.Literal(); ok {
				if eff, ok := powerUnits[unitName(s, ".service")]; ok {
					return powerF(eff)
				}
			}
		}
	}
	gerund, ok := protectVerbs[verb]
	if !ok {
		return nil
	}
	if verb == "disable" && cmdline.Has(opts, "--now") {
		gerund = "disabling and stopping"
	}
	if verb == "mask" && cmdline.Has(opts, "--now") {
		gerund = "masking and stopping"
	}
	return protectedFinding(units, gerund, p)
}

// unitName adds suffix to a unit name that has none.
func unitName(u, suffix string) string {
	if strings.ContainsRune(u, '.') && !strings.HasSuffix(u, ".") {
		return u
	}
	return strings.TrimSuffix(u, ".") + suffix
}

// isolate decides `systemctl isolate T`: only the default target and
// graphical.target keep the user's session and remote access.
func isolate(t string, p *Policy) *finding {
	t = unitName(t, ".target")
	switch t {
	case "runlevel2.target", "runlevel3.target", "runlevel4.target":
		t = "multi-user.target"
	case "runlevel5.target":
		t = "graphical.target"
	}
	if eff, ok := powerUnits[t]; ok {
		return powerF(eff)
	}
	if t == "graphical.target" || t == "default.target" {
		return nil
	}
	if p.DefaultTarget != "" && t == unitName(p.DefaultTarget, ".target") {
		return nil
	}
	return &finding{rule: RuleIsolate, target: t}
}

// aliases: other names of a protected unit (a unit protected under one
// name is protected under the others).
var aliases = map[string][]string{
	"display-manager": {"gdm", "gdm3", "sddm", "lightdm", "lxdm", "xdm", "slim", "greetd", "ly", "cosmic-greeter"},
	"gdm":             {"gdm3", "display-manager"},
	"gdm3":            {"gdm", "display-manager"},
	"sddm":            {"display-manager"},
	"lightdm":         {"display-manager"},
	"sshd":            {"ssh"},
	"ssh":             {"sshd"},
	"dbus":            {"dbus-broker", "messagebus"},
	"systemd-logind":  {"logind"},
	"logind":          {"systemd-logind"},
	"NetworkManager":  {"network-manager"},
	"polkit":          {"polkitd"},
	"gnome-shell":     {"org.gnome.Shell@wayland", "org.gnome.Shell@x11", "gnome-shell-wayland", "gnome-shell-x11"},
	"plasmashell":     {"plasma-plasmashell"},
}

// trimUnit drops the .service or .socket suffix a protected name may carry.
func trimUnit(u string) string {
	for _, s := range []string{".service", ".socket"} {
		if strings.HasSuffix(u, s) && len(u) > len(s) {
			return strings.TrimSuffix(u, s)
		}
	}
	return u
}

func isPattern(s string) bool { return strings.ContainsAny(s, "*?[") }

// ownServices returns the entries of a services_to_survive list that
// protect (not the "!" ones), as written.
func ownServices(list []string) []string {
	var out []string
	for _, e := range list {
		if e = strings.TrimSpace(e); e != "" && !strings.HasPrefix(e, "!") {
			out = append(out, e)
		}
	}
	return out
}

// splitServices reads a services_to_survive list: the entries that protect
// (DefaultServices when there are none), as written, and the names its "!"
// entries drop, without .service or .socket.
func splitServices(list []string) (base, drop []string) {
	base = ownServices(list)
	if len(base) == 0 {
		base = defaultServices[:]
	}
	for _, e := range list {
		if t, ok := strings.CutPrefix(strings.TrimSpace(e), "!"); ok {
			if t = trimUnit(strings.TrimSpace(t)); t != "" {
				drop = append(drop, t)
			}
		}
	}
	return base, drop
}

// dropped reports whether a "!" entry drops the protected name n: it
// equals n, or matches it as a glob.
func dropped(n string, drop []string) bool {
	for _, d := range drop {
		if d == n {
			return true
		}
		if m, _ := path.Match(d, n); m {
			return true
		}
	}
	return false
}

// protectedNames returns the protected names with their aliases, less those
// the profile drops: services_to_survive's (or the defaults), and apart the
// session units.
func protectedNames(p *Policy) (names, session []string) {
	base, drop := splitServices(p.ServicesToSurvive)
	add := func(out []string, e string) []string {
		e = trimUnit(strings.TrimSpace(e))
		if e == "" {
			return out
		}
		for _, n := range append([]string{e}, aliases[e]...) {
			if !dropped(n, drop) {
				out = append(out, n)
			}
		}
		return out
	}
	for _, e := range base {
		names = add(names, e)
	}
	for _, e := range sessionUnits {
		session = add(session, e)
	}
	return names, session
}

// protectedFinding returns why acting (gerund) on the units us is refused,
// or nil when the policy protects none of them. A unit argument may itself
// be a pattern, as systemctl matches them.
func protectedFinding(us []cmdline.Word, gerund string, p *Policy) *finding {
	names, session := protectedNames(p)
	var hit []string
	onlySession := true
	for _, u := range us {
		s, ok := u.Literal()
		if !ok || strings.HasPrefix(s, "-") {
			continue
		}
		t := trimUnit(s)
		inBase := matchUnit(t, names)
		if inBase || matchUnit(t, session) {
			hit = append(hit, s)
			onlySession = onlySession && !inBase
		}
	}
	if len(hit) == 0 {
		return nil
	}
	return &finding{rule: RuleProtectedService, verb: gerund, units: hit, session: onlySession}
}

func matchUnit(u string, names []string) bool {
	for _, n := range names {
		switch {
		case u == n:
			return true
		case isPattern(n):
			if m, _ := path.Match(n, u); m {
				return true
			}
		}
		if isPattern(u) {
			if m, _ := path.Match(u, n); m {
				return true
			}
			if m, _ := path.Match(u, n+".service"); m {
				return true
			}
		}
	}
	return false
}

var loginctlSpec = cmdline.OptSpec{Short: "pPsHMno", Permute: true, Long: cmdline.Longs("property", "signal", "host", "machine", "lines", "output", "kill-whom")}

func decideLoginctl(c *cmdline.Cmd, args []cmdline.Word, p *Policy) *finding {
	_, ops := cmdline.ScanOpts(args, loginctlSpec)
	if len(ops) == 0 {
		return nil
	}
	verb, _ := ops[0].Literal()
	switch verb {
	case "reboot":
		return powerF(effReboot)
	case "poweroff":
		return powerF(effPoweroff)
	case "halt":
		return powerF(effHalt)
	case "suspend", "hybrid-sleep", "suspend-then-hibernate", "sleep":
		return powerF(effSuspend)
	case "hibernate":
		return powerF(effHibernate)
	case "terminate-session", "terminate-user", "terminate-seat", "kill-session", "kill-user":
		return sessionF(effSession)
	}
	return nil
}

// systemd1 Manager methods that stop or restart the unit they name.
var dbusUnitMethods = map[string]string{
	"StopUnit": "stopping", "RestartUnit": "restarting", "TryRestartUnit": "restarting",
	"ReloadOrRestartUnit": "restarting", "ReloadOrTryRestartUnit": "restarting", "KillUnit": "killing",
	"DisableUnitFiles": "disabling", "DisableUnitFilesWithFlags": "disabling", "MaskUnitFiles": "masking",
	"FreezeUnit": "freezing", "StartUnit": "", "EnqueueUnitJob": "",
}

// decideDbus looks at busctl, dbus-send, gdbus and qdbus calls.
func decideDbus(c *cmdline.Cmd, args []cmdline.Word, p *Policy) *finding {
	var toks []string
	for _, a := range args {
		s, ok := a.Literal()
		if !ok {
			continue
		}
		if i := strings.IndexByte(s, '='); i >= 0 && strings.HasPrefix(s, "-") {
			s = s[i+1:]
		}
		// dbus-send's "string:gdm.service", gdbus's "'gdm.service'"
		if i := strings.IndexByte(s, ':'); i >= 0 && !strings.HasPrefix(s, "/") {
			switch s[:i] {
			case "string", "objpath", "boolean", "uint32", "int32", "uint64", "int64", "variant":
				s = s[i+1:]
			}
		}
		s = strings.Trim(s, `'"`)
		toks = append(toks, s)
	}
	member := func(t string) string {
		if i := strings.LastIndexByte(t, '.'); i >= 0 {
			return t[i+1:]
		}
		return t
	}
	// A method of the table, named bare or as INTERFACE.MEMBER, in a call
	// that names its interface; else in one that names its service only
	// (qdbus names no interface; login1's Session, User and Seat share
	// member names).
	for _, byIface := range []bool{true, false} {
		for _, m := range dbusControls {
			if byIface && !containsAny(toks, m.Interface) || !byIface && !containsAny(toks, m.Service) {
				continue
			}
			for _, t := range toks {
				if member(t) == m.Member && (t == m.Member || strings.HasPrefix(t, m.Service+".") || strings.HasPrefix(t, m.Interface+".")) {
					return &finding{rule: m.Rule, effect: m.Effect}
				}
			}
		}
	}
	if containsAny(toks, "org.freedesktop.systemd1") {
		for _, t := range toks {
			gerund, ok := dbusUnitMethods[member(t)]
			if !ok {
				continue
			}
			var units []cmdline.Word
			for _, u := range toks {
				units = append(units, cmdline.Lit(u))
				if eff, ok := powerUnits[u]; ok && (gerund == "" || gerund == "restarting") {
					return powerF(eff)
				}
			}
			if gerund == "" {
				continue
			}
			if f := protectedFinding(units, gerund, p); f != nil {
				return f
			}
		}
	}
	return nil
}

func containsAny(toks []string, sub string) bool {
	for _, t := range toks {
		if strings.Contains(t, sub) {
			return true
		}
	}
	return false
}

func decideRtcwake(c *cmdline.Cmd, args []cmdline.Word, p *Policy) *finding {
	opts, _ := cmdline.ScanOpts(args, cmdline.OptSpec{Short: "dmstA", Permute: true, Long: cmdline.Longs("device", "mode", "seconds", "time", "date", "adjfile")})
	if cmdline.Has(opts, "-n", "--dry-run", "-h", "--help", "-V", "--version") {
		return nil
	}
	mode := "standby"
	if m := cmdline.Values(opts, "-m", "--mode"); len(m) > 0 {
		mode = m[len(m)-1]
	}
	switch mode {
	case "no", "on", "disable", "show":
		return nil
	case "off":
		return powerF(effPoweroff)
	case "disk":
		return powerF(effHibernate)
	}
	return powerF(effSuspend)
}

func decideSessionQuit(c *cmdline.Cmd, args []cmdline.Word, p *Policy) *finding {
	for _, a := range args {
		switch s, _ := a.Literal(); s {
		case "--power-off", "--halt", "--shutdown", "-h":
			return powerF(effPoweroff)
		case "--reboot", "-r":
			return powerF(effReboot)
		case "--suspend":
			return powerF(effSuspend)
		case "--hibernate", "--hybrid-sleep":
			return powerF(effHibernate)
		case "--logout", "-l":
			return sessionF(effLogout)
		}
	}
	if name, _ := c.Name(knownNames()); name == "gnome-session-quit" {
		return sessionF(effLogout) // its default is to log out
	}
	return nil
}

func decideWMExit(c *cmdline.Cmd, args []cmdline.Word, p *Policy) *finding {
	for _, a := range args {
		if s, ok := a.Literal(); ok && (s == "exit" || strings.HasPrefix(s, "exit ") || strings.HasSuffix(s, " exit")) {
			return sessionF("end the user's desktop session (the compositor exits, and every window with it)")
		}
	}
	return nil
}

// decideService handles `service NAME ACTION`, invoke-rc.d and rc-service.
func decideService(c *cmdline.Cmd, args []cmdline.Word, p *Policy) *finding {
	_, ops := cmdline.ScanOpts(args, cmdline.OptSpec{})
	if len(ops) < 2 {
		return nil
	}
	name, ok := ops[0].Literal()
	if !ok {
		return nil
	}
	return serviceAction(name, ops[1], p)
}

func serviceAction(name string, action cmdline.Word, p *Policy) *finding {
	a, ok := action.Literal()
	if !ok {
		return nil
	}
	gerund := ""
	switch a {
	case "stop", "zap", "condstop":
		gerund = "stopping"
	case "restart", "force-reload", "try-restart", "condrestart", "reload-or-restart":
		gerund = "restarting"
	default:
		return nil
	}
	return protectedFinding([]cmdline.Word{cmdline.Lit(name)}, gerund, p)
}

func decideTee(c *cmdline.Cmd, args []cmdline.Word, p *Policy) *finding {
	_, ops := cmdline.ScanOpts(args, cmdline.OptSpec{Permute: true, Long: cmdline.Longs("output-error")})
	for _, o := range ops {
		if t, ok := guardedTarget(o); ok {
			return fileFinding(t)
		}
	}
	return nil
}

func decideDd(c *cmdline.Cmd, args []cmdline.Word, p *Policy) *finding {
	for _, a := range args {
		if !strings.HasPrefix(a.Value, "of=") {
			continue
		}
		of := a
		of.Value = a.Value[3:]
		of.DynamicEnd = max(0, a.DynamicEnd-3)
		if t, ok := guardedTarget(of); ok {
			return fileFinding(t)
		}
	}
	return nil
}

// Broad kill commands: refused only where no supervisor decides per target.

// retargetFlags are, per tool, the options that aim it at other processes
// by pid, group or user (renice, taskset, prlimit, ionice, chrt); what
// follows a bare "--" is a command to run, not a target.
var retargetFlags = map[string][]string{
	"renice":  {"-p", "--pid", "-g", "--pgrp", "-u", "--user"},
	"taskset": {"-p", "--pid", "-a", "--all-tasks"},
	"prlimit": {"-p", "--pid"},
	"ionice":  {"-p", "--pid", "-P", "--pgid", "-u", "--uid"},
	"chrt":    {"-p", "--pid", "-a", "--all-tasks"},
}

// decideRetarget refuses, where no supervisor decides per target, the tools
// that change another process's priority, affinity, limits or I/O class:
// RLIMIT_CPU or RLIMIT_FSIZE set on a stranger makes the kernel kill it, as
// a kill would. renice with bare numbers aims at pids too. A prlimit that
// only reads (no limit given) and the tools' own-command forms pass.
func decideRetarget(c *cmdline.Cmd, args []cmdline.Word, p *Policy) *finding {
	if p.Supervised {
		return nil
	}
	name, _ := c.Name(knownNames())
	flags := retargetFlags[name]
	limits := false
	aimed := name == "renice" // renice PRIO PID... without -p
	for _, a := range args {
		if a.Dynamic {
			continue
		}
		if a.Value == "--" {
			break
		}
		if name == "prlimit" && strings.HasPrefix(a.Value, "--") && a.Value != "--pid" && !strings.HasPrefix(a.Value, "--pid=") &&
			!slices.Contains([]string{"--output", "--noheadings", "--raw", "--verbose", "--help", "--version"}, strings.SplitN(a.Value, "=", 2)[0]) {
			limits = limits || strings.Contains(a.Value, "=")
		}
		if name == "prlimit" && len(a.Value) > 1 && a.Value[0] == '-' && a.Value[1] != '-' {
			limits = limits || prlimitShortSets(a.Value[1:])
		}
		for _, f := range flags {
			if a.Value == f || strings.HasPrefix(a.Value, f+"=") || (len(f) == 2 && strings.HasPrefix(a.Value, "-") && !strings.HasPrefix(a.Value, "--") && strings.Contains(a.Value[1:], f[1:])) {
				aimed = true
			}
		}
	}
	if name == "renice" && len(args) > 0 && !args[0].Dynamic && !strings.HasPrefix(args[0].Value, "-") {
		aimed = true
	}
	if !aimed || (name == "prlimit" && !limits) {
		return nil
	}
	return broadKill()
}

// prlimitShortSets reports whether a cluster of prlimit's short options
// (what follows the "-") sets a limit: a resource's letter with its value
// attached (-n1, -vn1024 sets nofile, -t=10:20), as getopt reads an
// optional argument. -p and -o take the rest of the cluster as theirs.
func prlimitShortSets(cluster string) bool {
	for i, c := range cluster {
		switch {
		case c == 'p' || c == 'o':
			return false
		case strings.ContainsRune("cdefilmnqrstuvxy", c):
			return i+1 < len(cluster)
		}
	}
	return false
}

func broadKill() *finding { return &finding{rule: RuleBroadKill} }

func decideKill(c *cmdline.Cmd, args []cmdline.Word, p *Policy) *finding {
	if p.Supervised {
		return nil
	}
	targets := args
	sig := ""
	if len(args) > 0 && !args[0].Dynamic && strings.HasPrefix(args[0].Value, "-") && args[0].Value != "--" {
		a := args[0].Value
		switch {
		case a == "-l" || a == "-L" || a == "--list" || a == "--table" || a == "--help":
			return nil
		case a == "-s" || a == "-n" || a == "--signal":
			if len(args) > 1 {
				sig = args[1].Value
			}
			targets = args[min(2, len(args)):]
		default:
			sig = strings.TrimPrefix(a, "-")
			targets = args[1:]
		}
	}
	if len(targets) > 0 && targets[0].Value == "--" && !targets[0].Dynamic {
		targets = targets[1:]
	}
	if isSignalZero(sig) {
		return nil
	}
	if len(targets) == 0 {
		if c.Xargs {
			return broadKill()
		}
		return nil
	}
	for _, t := range targets {
		raw := strings.Trim(t.Source, `"`)
		switch {
		case strings.HasPrefix(t.Value, "%") && !t.Dynamic, raw == "$!", raw == "${!}", raw == "$$", raw == "${$}", raw == "$BASHPID":
			continue // the shell's own jobs, or the shell itself
		}
		return broadKill()
	}
	return nil
}

func isSignalZero(sig string) bool {
	s := strings.TrimPrefix(strings.ToUpper(sig), "SIG")
	return s == "0"
}

func decidePkill(c *cmdline.Cmd, args []cmdline.Word, p *Policy) *finding {
	if p.Supervised {
		return nil
	}
	opts, ops := cmdline.ScanOpts(args, cmdline.OptSpec{Short: "gGPsStuUF", Permute: true,
		Long: cmdline.Longs("signal", "group", "parent", "session", "terminal", "euid", "uid", "pidfile", "ns", "nslist", "runstates", "cgroup")})
	if cmdline.Has(opts, "-0", "-V", "--version", "-h", "--help") {
		return nil
	}
	for _, s := range cmdline.Values(opts, "--signal") {
		if isSignalZero(s) {
			return nil
		}
	}
	if len(ops) == 0 && len(opts) == 0 && !c.Xargs {
		return nil
	}
	return broadKill()
}

func decideKillall(c *cmdline.Cmd, args []cmdline.Word, p *Policy) *finding {
	if p.Supervised {
		return nil
	}
	opts, ops := cmdline.ScanOpts(args, cmdline.OptSpec{Short: "snuyoZ", Permute: true, Long: cmdline.Longs("signal", "user", "younger-than", "older-than", "context", "ns")})
	if cmdline.Has(opts, "-l", "-L", "--list", "-V", "--version", "-h", "--help", "-0") {
		return nil
	}
	for _, s := range cmdline.Values(opts, "-s", "--signal") {
		if isSignalZero(s) {
			return nil
		}
	}
	if len(ops) == 0 && !cmdline.Has(opts, "-u", "--user") && !c.Xargs {
		return nil
	}
	return broadKill()
}

func decideKillall5(c *cmdline.Cmd, args []cmdline.Word, p *Policy) *finding {
	if p.Supervised {
		return nil
	}
	return broadKill()
}

func decideFuser(c *cmdline.Cmd, args []cmdline.Word, p *Policy) *finding {
	if p.Supervised {
		return nil
	}
	for _, a := range args {
		s, ok := a.Literal()
		if !ok {
			continue
		}
		if s == "--kill" || (strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "--") && strings.ContainsRune(s, 'k')) {
			return broadKill()
		}
	}
	return nil
}
