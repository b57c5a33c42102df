package dbusproxy

import (
	"fmt"
	"os"
	"path"
	"strings"
	"sync"

	"github.com/paddock-dev/paddock/internal/dbuswire"
	"github.com/paddock-dev/paddock/internal/textwrap"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/guard"
	"github.com/paddock-dev/paddock/internal/procfs"
)

// Policy says what the relay refuses.
type Policy struct {
	// AllowPower: PADDOCK_ALLOW_POWER_CONTROL=1 was given, so login1's
	// and systemd's power and session-ending methods pass (and starting
	// poweroff.target, and isolating a target).
	AllowPower bool
	// NoOptIn: the host profile sets allow_opt_in = false, so no opt-in
	// is honoured; a refusal's way out says so instead of naming
	// PADDOCK_ALLOW_POWER_CONTROL.
	NoOptIn bool
	// OwnsUnit reports whether a systemd unit belongs to the agent's
	// session. Nil: none does, except the transient units started
	// through this relay, which the relay remembers itself. It is called
	// from the relay's goroutine, once for each unit a call names.
	OwnsUnit func(unit string) bool
	// OwnsPID reports whether a process (by its pid in paddock's PID
	// namespace) belongs to the agent's session. It decides the calls
	// that move processes into a unit (AttachProcessesToUnit, and the
	// PIDs and PIDFDs of StartTransientUnit). Nil: none does.
	OwnsPID func(pid int) bool
}

// Refusal describes one refused method call, for paddock's journal, its
// log and the caller's error message.
type Refusal struct {
	Bus         string // the bus, as Relay was told ("system", "session")
	Destination string // the call's DESTINATION header field
	Path        string // its PATH
	Interface   string // its INTERFACE; where the call had none, the interface the relay took it for
	Member      string // its MEMBER
	Unit        string // the systemd unit it acts on, where it acts on one
	Rule        string // why: one of the Rule constants
	Message     string // paddock's message, the body of the error the caller gets
}

// Rules a Refusal names, the words of paddock's journal.
const (
	// RulePowerControl: a call that powers off, reboots, halts, suspends
	// or hibernates the machine (or starts a unit that does).
	RulePowerControl = string(audit.RulePowerControl)
	// RuleSessionControl: a call that ends login sessions, logs the user
	// out, unlocks a screen or stops the user's service manager.
	RuleSessionControl = string(audit.RuleSessionControl)
	// RuleIsolate: a start in job mode "isolate", which stops every unit
	// the started one does not pull in.
	RuleIsolate = string(audit.RuleIsolate)
	// RuleUnitNotOwned: a call that stops, kills, restarts, freezes,
	// reconfigures or disables a unit the session does not own.
	RuleUnitNotOwned = string(audit.RuleUnitNotOwned)
	// RuleProcessNotOwned: a call that moves a process the session does
	// not own into a unit.
	RuleProcessNotOwned = string(audit.RuleNotOwned)
)

// The relay's errors are D-Bus's AccessDenied: what a bus policy's denial
// gives, which every client shows with its message.
const errAccessDenied = "org.freedesktop.DBus.Error.AccessDenied"

// kind is how a method is decided.
type kind int

const (
	kindPower     kind = iota + 1 // refused unless AllowPower
	kindSession                   // refused unless AllowPower
	kindUnit                      // refused for a unit the session does not own
	kindStart                     // starting a power unit, or isolating, is power control
	kindRestart                   // kindStart, then kindUnit
	kindJob                       // by the job type: a stop is kindUnit, a start kindStart, a restart both
	kindTransient                 // kindStart; on success the unit is the session's
	kindAttach                    // the unit (unless new) and every process must be the session's
)

// noArg marks an argument a method does not have.
const noArg = -1

// method is what the relay does with one method of one interface.
type method struct {
	kind   kind
	effect string // power and session: what the call would do; units: the gerund ("stopping %s")
	unit   int    // the argument naming the unit (a string); noArg: the object path names it
	units  bool   // the unit argument is an array of names or unit file paths
	whole  string // set: the call acts on units it does not name, this is what it acts on
	mode   int    // the job mode argument
	job    int    // the job type argument
	pids   int    // kindAttach: the argument holding the processes
	pidfds bool   // kindAttach: they are pidfds ("ah"), not pids ("au")
	fresh  bool   // kindAttach: the unit is a new one (no owner to check)
}

func power(effect string) method   { return method{kind: kindPower, effect: effect} }
func session(effect string) method { return method{kind: kindSession, effect: effect} }

func unitAt(gerund string, arg int) method {
	return method{kind: kindUnit, effect: gerund, unit: arg, mode: noArg, job: noArg}
}

func unitFiles(gerund string) method {
	m := unitAt(gerund, 0)
	m.units = true
	return m
}

func whole(gerund, what string) method {
	m := unitAt(gerund, noArg)
	m.whole = what
	return m
}

func start(k kind, unit, mode int) method {
	return method{kind: k, effect: "restarting %s", unit: unit, mode: mode, job: noArg}
}

func job(unit, jobArg, mode int, many bool) method {
	return method{kind: kindJob, unit: unit, units: many, mode: mode, job: jobArg}
}

func attach(unit, pids int, pidfds, fresh bool) method {
	return method{kind: kindAttach, effect: "moving processes into %s", unit: unit, mode: noArg, job: noArg, pids: pids, pidfds: pidfds, fresh: fresh}
}

// systemd's unit interfaces whose methods act on the unit of their object
// path, besides org.freedesktop.systemd1.Unit.
var unitTypeIfaces = []string{
	"org.freedesktop.systemd1.Service", "org.freedesktop.systemd1.Scope", "org.freedesktop.systemd1.Slice",
	"org.freedesktop.systemd1.Socket", "org.freedesktop.systemd1.Mount", "org.freedesktop.systemd1.Swap",
}

// methods is the relay's table: interface, member, decision. What is not
// here passes. The package doc's table says why each is here, and why
// some that might be are not.
var methods = func() map[string]map[string]method {
	m := map[string]map[string]method{
		"org.freedesktop.systemd1.Manager": {
			"StopUnit": unitAt("stopping %s", 0), "KillUnit": unitAt("killing %s", 0),
			"KillUnitSubgroup": unitAt("killing %s", 0), "QueueSignalUnit": unitAt("signalling %s", 0),
			"CleanUnit": unitAt("cleaning out %s", 0), "FreezeUnit": unitAt("freezing %s", 0),
			"SetUnitProperties":      unitAt("changing the properties of %s", 0),
			"RemoveSubgroupFromUnit": unitAt("removing a subgroup of %s", 0),
			"BindMountUnit":          unitAt("mounting into %s", 0), "MountImageUnit": unitAt("mounting into %s", 0),
			"EnqueueMarkedJobs": whole("restarting %s", "the units marked for a restart"),

			"DisableUnitFiles": unitFiles("disabling %s"), "DisableUnitFilesWithFlags": unitFiles("disabling %s"),
			"DisableUnitFilesWithFlagsAndInstallInfo": unitFiles("disabling %s"),
			"MaskUnitFiles":           unitFiles("masking %s"),
			"PresetUnitFiles":         unitFiles("presetting %s (which can disable units)"),
			"PresetUnitFilesWithMode": unitFiles("presetting %s (which can disable units)"),
			"RevertUnitFiles":         unitFiles("reverting the local changes to %s"),
			"PresetAllUnitFiles":      whole("presetting %s (which can disable units)", "every unit file"),
			"SetDefaultTarget":        unitAt("making %s the default target", 0),

			"StartUnit": start(kindStart, 0, 1), "StartUnitWithFlags": start(kindStart, 0, 1),
			"StartUnitReplace": start(kindStart, 1, 2),
			"RestartUnit":      start(kindRestart, 0, 1), "TryRestartUnit": start(kindRestart, 0, 1),
			"ReloadOrRestartUnit": start(kindRestart, 0, 1), "ReloadOrTryRestartUnit": start(kindRestart, 0, 1),
			"EnqueueUnitJob": job(0, 1, 2, false), "EnqueueUnitJobMany": job(0, 1, 2, true),
			"StartTransientUnit":    start(kindTransient, 0, 1),
			"AttachProcessesToUnit": attach(0, 2, false, false),
			"StartAuxiliaryScope":   attach(0, 1, true, true),
		},
		"org.freedesktop.systemd1.Unit": {
			"Stop": unitAt("stopping %s", noArg), "Kill": unitAt("killing %s", noArg),
			"KillSubgroup": unitAt("killing %s", noArg), "QueueSignal": unitAt("signalling %s", noArg),
			"Clean": unitAt("cleaning out %s", noArg), "Freeze": unitAt("freezing %s", noArg),
			"SetProperties": unitAt("changing the properties of %s", noArg),
			"Start":         start(kindStart, noArg, 0),
			"Restart":       start(kindRestart, noArg, 0), "TryRestart": start(kindRestart, noArg, 0),
			"ReloadOrRestart": start(kindRestart, noArg, 0), "ReloadOrTryRestart": start(kindRestart, noArg, 0),
			"EnqueueJob": job(noArg, 0, 1, false),
		},
	}
	// Power and session control: guard's table, which decides the same
	// calls made by an exec'd busctl, dbus-send, gdbus or qdbus.
	for _, c := range guard.DBusControls() {
		mk := power
		if c.Rule == audit.RuleSessionControl {
			mk = session
		}
		if m[c.Interface] == nil {
			m[c.Interface] = map[string]method{}
		}
		m[c.Interface][c.Member] = mk(c.Effect)
	}
	for _, i := range unitTypeIfaces {
		m[i] = map[string]method{
			"AttachProcesses": attach(noArg, 1, false, false),
			"RemoveSubgroup":  unitAt("removing a subgroup of %s", noArg),
		}
	}
	for _, k := range []string{"BindMount", "MountImage"} {
		m["org.freedesktop.systemd1.Service"][k] = unitAt("mounting into %s", noArg)
	}
	return m
}()

// Object paths, and well-known names, whose objects implement the table's
// interfaces: a call that names no interface is taken for a call of each
// interface its object has (the callee picks one with that member).
const (
	login1Path  = "/org/freedesktop/login1"
	systemdPath = "/org/freedesktop/systemd1"
	unitPrefix  = systemdPath + "/unit/"
)

// desktopNames are the desktop session managers by well-known name.
var desktopNames = map[string]string{
	"org.gnome.SessionManager": "org.gnome.SessionManager",
	"org.kde.Shutdown":         "org.kde.Shutdown",
	"org.kde.ksmserver":        "org.kde.KSMServerInterface",
	"org.xfce.SessionManager":  "org.xfce.Session.Manager",
}

// interfacesOf lists the table's interfaces that a call without an
// INTERFACE may reach.
func interfacesOf(h *header) []string {
	var out []string
	p := h.path
	switch {
	case p == login1Path:
		out = append(out, "org.freedesktop.login1.Manager")
	case strings.HasPrefix(p, login1Path+"/session/"):
		out = append(out, "org.freedesktop.login1.Session")
	case strings.HasPrefix(p, login1Path+"/user/"):
		out = append(out, "org.freedesktop.login1.User")
	case strings.HasPrefix(p, login1Path+"/seat/"):
		out = append(out, "org.freedesktop.login1.Seat")
	case p == systemdPath:
		out = append(out, "org.freedesktop.systemd1.Manager")
	case strings.HasPrefix(p, unitPrefix):
		out = append(append(out, "org.freedesktop.systemd1.Unit"), unitTypeIfaces...)
	case p == "/org/gnome/SessionManager":
		out = append(out, "org.gnome.SessionManager")
	case p == "/Shutdown":
		out = append(out, "org.kde.Shutdown")
	case p == "/KSMServer":
		out = append(out, "org.kde.KSMServerInterface")
	case p == "/org/xfce/SessionManager":
		out = append(out, "org.xfce.Session.Manager")
	}
	if i, ok := desktopNames[h.dest]; ok {
		out = append(out, i)
	}
	return out
}

// lookup finds the table's entry for a method call, and the interface it
// was found under.
func lookup(h *header) (method, string, bool) {
	if h.iface != "" {
		m, ok := methods[h.iface][h.member]
		return m, h.iface, ok
	}
	for _, i := range interfacesOf(h) {
		if m, ok := methods[i][h.member]; ok {
			return m, i, true
		}
	}
	return method{}, "", false
}

// unitOfPath is the unit a systemd unit object path names, unescaped as
// systemd unescapes it (bus_label_unescape): "_2e" is '.', a '_' not
// followed by two hex digits is itself, "_" alone is the empty name, and
// the name ends at a NUL, as systemd's C string does.
func unitOfPath(p string) string {
	label, ok := strings.CutPrefix(p, unitPrefix)
	if !ok {
		return ""
	}
	if label == "_" {
		return ""
	}
	b := make([]byte, 0, len(label))
	for i := 0; i < len(label); i++ {
		c := label[i]
		if c == '_' && i+2 < len(label) {
			hi, lo := unhex(label[i+1]), unhex(label[i+2])
			if hi >= 0 && lo >= 0 {
				c = byte(hi<<4 | lo)
				i += 2
			}
		}
		if c == 0 {
			break
		}
		b = append(b, c)
	}
	return string(b)
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// Bounds on what the relay remembers: past them it forgets, and what it
// forgot is not owned (a stop of it is refused).
const (
	maxPending = 1024  // StartTransientUnit calls awaiting their reply
	maxOwned   = 16384 // transient units started through the relay
)

// decider holds one relay's rules and what it learned: the client's
// unique name and the transient units it started.
type decider struct {
	bus    string
	policy Policy
	pid    int // paddock's own pid, to read the pidfds calls carry

	mu      sync.Mutex
	unique  string            // the client's unique name, from the bus's reply to its Hello
	pending map[uint32]string // serial of a StartTransientUnit call → its unit
	owned   map[string]bool   // transient units the client started
}

func newDecider(bus string, p Policy) *decider {
	return &decider{bus: bus, policy: p, pid: os.Getpid(), pending: map[uint32]string{}, owned: map[string]bool{}}
}

// owns reports whether the session owns unit.
func (d *decider) owns(unit string) bool {
	d.mu.Lock()
	mine := d.owned[unit]
	d.mu.Unlock()
	return mine || (d.policy.OwnsUnit != nil && d.policy.OwnsUnit(unit))
}

// ownsPID reports whether the session owns process pid; 0 (which systemd
// takes for the caller, and the caller of the bus is paddock's relay) is
// not the session's.
func (d *decider) ownsPID(pid int) bool {
	return pid > 0 && d.policy.OwnsPID != nil && d.policy.OwnsPID(pid)
}

// pidOf is the pid of the process a pidfd the call carries refers to.
func (d *decider) pidOf(index uint32, fds []int) int {
	if int64(index) >= int64(len(fds)) {
		return 0
	}
	pid, err := procfs.Default().FdPid(d.pid, fds[index])
	if err != nil {
		return 0
	}
	return pid
}

// learn takes what a message from the bus tells the relay: the client's
// unique name (the reply to its Hello, whose serial is hello), and the
// outcome of a StartTransientUnit it let through. It runs before the
// message reaches the client, so the client's next call is decided
// knowing it. It reports whether the message is the reply to the Hello.
func (d *decider) learn(h *header, msg []byte, hello uint32) bool {
	if h.typ != dbuswire.TypeMethodReturn && h.typ != dbuswire.TypeError {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if hello != 0 && h.replySerial == hello && d.unique == "" && h.sender == "org.freedesktop.DBus" {
		if h.typ == dbuswire.TypeMethodReturn && h.sig == "s" {
			if name, err := newBody(h, msg).str(0); err == nil {
				d.unique = name
			}
		}
		return true
	}
	// Only a reply addressed to this client: one it eavesdrops on, to
	// another, may carry the same serial.
	if unit, ok := d.pending[h.replySerial]; ok && h.dest == d.unique {
		delete(d.pending, h.replySerial)
		if h.typ == dbuswire.TypeMethodReturn && len(d.owned) < maxOwned {
			d.owned[unit] = true
		}
	}
	return false
}

// uniqueName is the client's unique name, "" before the bus gave it.
func (d *decider) uniqueName() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.unique
}

// decide returns the refusal of the message h (whole: msg, carrying fds),
// or nil when it passes. A StartTransientUnit that passes is noted, and
// its unit is the session's once the reply says it started.
func (d *decider) decide(h *header, msg []byte, fds []int) *Refusal {
	if h.typ != dbuswire.TypeMethodCall {
		return nil
	}
	m, iface, ok := lookup(h)
	if !ok {
		return nil
	}
	c := call{d: d, h: h, m: m, iface: iface, b: newBody(h, msg), fds: fds}
	return c.decide()
}

// call is one method call being decided.
type call struct {
	d     *decider
	h     *header
	m     method
	iface string
	b     *body
	fds   []int
}

func (c *call) decide() *Refusal {
	switch c.m.kind {
	case kindPower:
		return c.optIn(RulePowerControl, "", "power control needs the user's explicit intent, and this call would "+c.m.effect+".")
	case kindSession:
		return c.optIn(RuleSessionControl, "", "ending sessions needs the user's explicit intent, like power control, and this call would "+c.m.effect+".")
	case kindUnit:
		return c.notOwned(c.m.effect, c.units())
	case kindStart, kindTransient:
		units := c.units()
		if r := c.starts(units, c.str(c.m.mode)); r != nil {
			return r
		}
		if c.m.kind == kindTransient {
			c.transient(units[0])
		}
		return nil
	case kindRestart:
		units := c.units()
		if r := c.starts(units, c.str(c.m.mode)); r != nil {
			return r
		}
		return c.notOwned("restarting %s", units)
	case kindJob:
		units := c.units()
		typ, mode := c.str(c.m.job), c.str(c.m.mode)
		stops, starts := jobKind(typ)
		if starts {
			if r := c.starts(units, mode); r != nil {
				return r
			}
		}
		if stops {
			return c.notOwned(jobGerund(typ), units)
		}
		return nil
	case kindAttach:
		return c.attach()
	}
	return nil
}

// jobKind says whether a job type stops its unit, starts it, or both (a
// restart). A type systemd may add later is taken for both.
func jobKind(typ string) (stops, starts bool) {
	switch typ {
	case "start", "verify-active", "verify-started":
		return false, true
	case "stop":
		return true, false
	case "restart", "try-restart", "reload-or-restart", "reload-or-try-restart", "try-reload-or-restart", "reload-or-start":
		return true, true
	case "reload", "try-reload", "nop":
		return false, false
	}
	return true, true
}

func jobGerund(typ string) string {
	if typ == "stop" {
		return "stopping %s"
	}
	return "restarting (job type " + quote(typ) + ")"
}

// str reads string argument i, "" where it cannot (the callee refuses
// such a call itself; here an unreadable unit is one the session does
// not own, and an unreadable mode no isolate).
func (c *call) str(i int) string {
	if i == noArg {
		return ""
	}
	s, err := c.b.str(i)
	if err != nil {
		return ""
	}
	return s
}

// units is the units the call names: from its object path or its
// argument, a unit file path taken for its file's name. It has one entry
// at least: an unreadable argument is the unit "".
func (c *call) units() []string {
	if c.m.whole != "" {
		return []string{""}
	}
	if c.m.unit == noArg {
		return []string{unitOfPath(c.h.path)}
	}
	if !c.m.units {
		return []string{c.str(c.m.unit)}
	}
	names, err := c.b.strs(c.m.unit)
	if err != nil || len(names) == 0 {
		return []string{""}
	}
	for i, n := range names {
		if strings.Contains(n, "/") {
			names[i] = path.Base(n)
		}
	}
	return names
}

// sessionUnits are the units whose start ends a session: the user
// manager's exit.target (and the service it pulls in) stop it and every
// user service, as Manager.Exit does.
var sessionUnits = map[string]bool{"exit.target": true, "systemd-exit.service": true}

// starts refuses a start of a power unit or of a unit that ends the
// session, and any isolate.
func (c *call) starts(units []string, mode string) *Refusal {
	for _, u := range units {
		if eff, ok := guard.PowerUnit(u); ok {
			return c.optIn(RulePowerControl, u, "power control needs the user's explicit intent, and starting "+u+" would "+eff+".")
		}
		if sessionUnits[u] {
			return c.optIn(RuleSessionControl, u, "ending sessions needs the user's explicit intent, like power control, and starting "+u+" would "+guard.EffectExit+".")
		}
	}
	if mode == "isolate" {
		return c.optIn(RuleIsolate, units[0], "starting "+units[0]+" in job mode \"isolate\" stops every unit it does not pull in, the user's session and services among them. To start it without stopping the others, use job mode \"replace\".")
	}
	return nil
}

// notOwned refuses the first unit the session does not own; does is what
// the call would do to it ("stopping %s").
func (c *call) notOwned(does string, units []string) *Refusal {
	for _, u := range units {
		if u != "" && c.m.whole == "" && c.d.owns(u) {
			continue
		}
		var why string
		switch {
		case c.m.whole != "":
			why = fmt.Sprintf(does, c.m.whole) + " could end or damage services or programs the user relies on, and paddock cannot tell which units that would touch."
		case u == "" || u == "self":
			why = "the call names no unit paddock can read, or \"self\", which systemd takes for the unit of the bus connection's peer, a unit paddock cannot vouch for: " +
				fmt.Sprintf(does, "it") + " could end or damage a service or program the user relies on."
		default:
			why = "the session does not own " + quote(u) + ": " + fmt.Sprintf(does, "it") + " could end or damage a service or program the user relies on. " +
				"paddock lets the agent stop, kill, restart, freeze, reconfigure or disable only the units the session owns: " +
				"the transient units it started itself through this bus (StartTransientUnit, as systemd-run does) and those paddock counts as the session's."
		}
		return c.refuse(RuleUnitNotOwned, u, why, "Way out: act only on units the session started itself; ask the user to do this one themselves, outside paddock (docs/deputies.md).")
	}
	return nil
}

// attach decides a call that moves processes into a unit.
func (c *call) attach() *Refusal {
	units := c.units()
	if !c.m.fresh {
		if r := c.notOwned(c.m.effect, units); r != nil {
			return r
		}
	}
	want := "au"
	if c.m.pidfds {
		want = "ah"
	}
	vals, err := c.b.u32s(c.m.pids, want)
	if err != nil {
		return c.refuse(RuleProcessNotOwned, units[0], "its processes cannot be read ("+err.Error()+"), and paddock moves only processes the session owns into a unit.", attachWayOut)
	}
	for _, v := range vals {
		pid := int(v)
		if c.m.pidfds {
			pid = c.d.pidOf(v, c.fds)
		}
		if !c.d.ownsPID(pid) {
			return c.refuse(RuleProcessNotOwned, units[0], fmt.Sprintf("process %d is not the session's: moved into a unit, a process takes on its limits and dies with a stop of it, so paddock lets the agent move only the session's own processes.", pid), attachWayOut)
		}
	}
	return nil
}

const attachWayOut = "Way out: move only the session's own processes; ask the user to move any other, outside paddock (docs/deputies.md)."

// transient notes a StartTransientUnit let through: its unit becomes the
// session's when the reply says it started, unless the call moves into it
// processes the session does not own (its PIDs or PIDFDs properties), or
// wants no reply (then the relay cannot tell it started).
func (c *call) transient(unit string) {
	if unit == "" || c.h.flags&dbuswire.FlagNoReplyExpected != 0 || !c.ownProcesses() {
		return
	}
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	if len(c.d.pending) < maxPending {
		c.d.pending[c.h.serial] = unit
	}
}

// ownProcesses reads StartTransientUnit's properties (argument 2,
// "a(sv)") and reports whether every process its PIDs and PIDFDs name is
// the session's; false where they cannot be read.
func (c *call) ownProcesses() bool {
	t, err := c.b.arg(2)
	if err != nil || t != "a(sv)" {
		return false
	}
	ok := true
	err = c.b.d.array(8, func(d *decoder) error {
		if err := d.Align(8); err != nil {
			return err
		}
		name, err := d.Str()
		if err != nil {
			return err
		}
		sig, err := d.Signature()
		if err != nil {
			return err
		}
		if err := dbuswire.SingleType(sig); err != nil {
			return err
		}
		if (name == "PIDs" && sig == "au") || (name == "PIDFDs" && sig == "ah") {
			return d.array(4, func(d *decoder) error {
				v, err := d.U32()
				pid := int(v)
				if sig == "ah" {
					pid = c.d.pidOf(v, c.fds)
				}
				ok = ok && c.d.ownsPID(pid)
				return err
			})
		}
		if name == "PIDs" || name == "PIDFDs" {
			ok = false
		}
		return d.skip(sig, 1)
	})
	return err == nil && ok
}

// optIn refuses a call that PADDOCK_ALLOW_POWER_CONTROL=1 lets through.
func (c *call) optIn(rule, unit, why string) *Refusal {
	if c.d.policy.AllowPower {
		return nil
	}
	way := "Way out: if the user asked for this, they can allow it for a session started with PADDOCK_ALLOW_POWER_CONTROL=1 " +
		"(PADDOCK_ALLOW_POWER_CONTROL=1 paddock run -- ...); otherwise leave it to the user (docs/deputies.md)."
	if c.d.policy.NoOptIn {
		way = "Way out: this host's profile sets allow_opt_in = false, so not even PADDOCK_ALLOW_POWER_CONTROL=1 is honoured here; ask the user to do this themselves, outside paddock (docs/deputies.md)."
	}
	return c.refuse(rule, unit, why, way)
}

// refuse builds the refusal and its message.
func (c *call) refuse(rule, unit, why, way string) *Refusal {
	name := c.iface + "." + c.h.member
	if unit != "" && c.m.unit != noArg {
		name += "(" + quote(unit) + ")"
	} else if unit != "" {
		name += " on " + quote(unit)
	}
	msg := fmt.Sprintf("paddock refused %s on the %s bus: %s %s", name, c.d.bus, why, way)
	return &Refusal{
		Bus: c.d.bus, Destination: c.h.dest, Path: c.h.path, Interface: c.iface, Member: c.h.member,
		Unit: unit, Rule: rule, Message: textwrap.OneLine(msg),
	}
}

// quote shows a name from the call as it is when it is plain, quoted
// (escapes and all) when it holds anything else.
func quote(s string) string {
	for _, r := range s {
		if r <= ' ' || r == '"' || r == '\\' || r > '~' {
			return fmt.Sprintf("%q", s)
		}
	}
	return s
}
