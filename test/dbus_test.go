package test

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/paddock-dev/paddock/internal/dbustest"
)

// The D-Bus filter end to end (docs/deputies.md): a bus of the user's
// (nobody's dbus-daemon, outside paddock) with stand-in login1 and
// Notifications services, named to paddock as the system bus by
// DBUS_SYSTEM_BUS_ADDRESS; the agent, as nobody under paddock, calls them.

// notifyID is the id the stand-in Notifications service answers Notify
// with.
const notifyID = 7351

// busCall is a call a stand-in service got.
type busCall struct{ member, arg string }

// introspection is what the stand-ins answer Introspect with: gdbus reads
// a method's argument types from it.
const introspection = `<!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
<node>
  <interface name="org.freedesktop.login1.Manager">
    <method name="PowerOff"><arg name="interactive" type="b" direction="in"/></method>
    <method name="UnlockSessions"/>
  </interface>
  <interface name="org.freedesktop.Notifications">
    <method name="Notify">
      <arg type="s" direction="in"/><arg type="u" direction="in"/><arg type="s" direction="in"/>
      <arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="as" direction="in"/>
      <arg type="a{sv}" direction="in"/><arg type="i" direction="in"/><arg type="u" direction="out"/>
    </method>
  </interface>
</node>
`

// dbusBus starts a bus of nobody's in a directory nobody may write, with
// stand-in org.freedesktop.login1 and org.freedesktop.Notifications
// services served from the test process (services of the user's, foreign
// to the agent), and names it to the paddock the test runs next as the
// system bus (paddock reads DBUS_SYSTEM_BUS_ADDRESS at start, DefaultWall,
// and the agent inherits it). It returns the directory (nobodyRun's) and
// the calls the stand-ins get: each is sent before its reply goes, so
// once the agent has had its reply the call is there. PowerOff and
// UnlockSessions answer nothing, Notify the id notifyID.
func dbusBus(t *testing.T) (string, <-chan busCall) {
	t.Helper()
	dir := wallNobody(t)
	bus := dbustest.StartBus(t, dbustest.BusOptions{Dir: dir, Credential: &syscall.Credential{Uid: 65534, Gid: 65534}})
	calls := make(chan busCall, 256)
	for _, name := range []string{"org.freedesktop.login1", "org.freedesktop.Notifications"} {
		dbustest.StandIn(t, bus.Path, name, func(m *dbustest.Message) *dbustest.Message {
			call := busCall{member: m.Member}
			if m.Member == "Notify" && len(m.Body) > 3 {
				call.arg, _ = m.Body[3].(string)
			}
			calls <- call
			switch m.Interface + "." + m.Member {
			case "org.freedesktop.DBus.Introspectable.Introspect":
				return dbustest.Return("s", introspection)
			case "org.freedesktop.login1.Manager.PowerOff", "org.freedesktop.login1.Manager.UnlockSessions":
				return dbustest.Return("")
			case "org.freedesktop.Notifications.Notify":
				return dbustest.Return("u", notifyID)
			}
			return dbustest.ErrorReply("org.freedesktop.DBus.Error.UnknownMethod", "no method "+m.Interface+"."+m.Member)
		})
	}
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", bus.Address)
	return dir, calls
}

// standInsGot drains the calls the stand-ins got, but for gdbus's
// introspection, as "MEMBER ARG" lines.
func standInsGot(calls <-chan busCall) string {
	var got []string
	for len(calls) > 0 {
		c := <-calls
		if c.member != "Introspect" {
			got = append(got, c.member+" "+c.arg)
		}
	}
	return strings.Join(got, "\n")
}

// refusedByRelay checks the relay's refusal of the agent's call of method
// (INTERFACE.MEMBER; of unit, where it names one): what the client printed (file said in dir, after its
// prefix) is the AccessDenied error with paddock's message, paddock's own
// line is on the caller's stderr (file stderr), and the journal has one
// deputy_denied record of it.
func refusedByRelay(t *testing.T, dir, method, unit, said, prefix, stderr, why string) {
	t.Helper()
	named := method
	if unit != "" {
		named += "(" + unit + ")"
	}
	refusal := "paddock refused " + named + " on the system bus: " + why
	if s := readFile(filepath.Join(dir, said)); !strings.Contains(s, prefix+refusal) || !strings.Contains(s, "Way out: ") {
		t.Errorf("the client's %s holds\n%s\nwant the AccessDenied error with paddock's message (%q, and its way out)", said, s, prefix+refusal)
	}
	// paddock's line on the caller's stderr, apart from what the client
	// printed of the error.
	if s := readFile(filepath.Join(dir, stderr)); !hasLinePrefix(s, refusal) {
		t.Errorf("the caller's stderr holds\n%s\nwant paddock's line %q...", s, refusal)
	}
	// The record names the bus and the method in fields of their own.
	if n := journalCount(t, dir, "deputy_denied", `"method":"`+method+`"`); n != 1 || !journalHas(t, dir, "deputy_denied", `"bus":"system"`) {
		t.Errorf("%d deputy_denied records with method %s in the journal, want 1 (and bus system)\n%s", n, method, readFile(filepath.Join(dir, "j.jsonl")))
	}
}

// hasLinePrefix reports whether a line of s starts with prefix.
func hasLinePrefix(s, prefix string) bool {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

// TestDBusPowerOffLibraryCall: the acceptance of issue 35's D-Bus filter.
// A program of the agent's (agenthelper dbus-call: Go speaking D-Bus
// itself, internal/dbustest's client) calls login1's PowerOff on a bus
// with a stand-in login1, no command run that paddock's exec guard could
// read: the call gets AccessDenied with paddock's message, paddock's line
// is on the caller's stderr, the stand-in never sees the call, and the
// journal has a deputy_denied record. A Notify through the same bus gets
// the stand-in's id, and with PADDOCK_ALLOW_POWER_CONTROL=1 in the
// caller's environment PowerOff reaches the stand-in (after the Notify:
// the one it got is the opt-in's). Checked by routing no connection
// through the relay (Session.relayBus not set): PowerOff reaches the
// stand-in and the test fails.
func TestDBusPowerOffLibraryCall(t *testing.T) {
	dir, calls := dbusBus(t)
	const call = `"$AGENTHELPER" dbus-call system `
	const power = call + "org.freedesktop.login1 /org/freedesktop/login1 org.freedesktop.login1.Manager.PowerOff b false"
	script := power + ` >` + dir + `/power.out 2>` + dir + `/power.err; echo power=$?
` + call + `org.freedesktop.Notifications /org/freedesktop/Notifications org.freedesktop.Notifications.Notify 'susssasa{sv}i' agent 0 '' 'build done' '' '[]' '[]' 5000; echo notify=$?
export PADDOCK_ALLOW_POWER_CONTROL=1
` + power + `; echo optin=$?`
	out, lines := backend("seccomp").nobodyRun(t, bins.paddock, dir, script)
	wantLines(t, out, lines, "power=1", "reply 7351", "notify=0", "reply", "optin=0")
	refusedByRelay(t, dir, "org.freedesktop.login1.Manager.PowerOff", "", "power.out", "err org.freedesktop.DBus.Error.AccessDenied: ", "power.err",
		"power control needs the user's explicit intent")
	if got, want := standInsGot(calls), "Notify build done\nPowerOff "; got != want {
		t.Errorf("the stand-ins got\n%s\nwant\n%s\n(the refused PowerOff never, the opt-in's after Notify)\n%s", got, want, out)
	}
}

// TestDBusGdbus: GLib's client (gdbus, its library's calls) through the
// relay. Its PowerOff is refused before it runs: paddock's exec guard
// reads gdbus's command line (exec_denied), so the relay never sees it.
// systemd's StopUnit of a unit the session does not own (nginx.service),
// which the exec guard lets run (no protected service: the guard and the
// relay share the power and session methods, not the units' rule), is
// refused by the relay: gdbus prints AccessDenied with paddock's message,
// paddock's line is on its stderr and the journal has a deputy_denied
// record. Notify gets the stand-in's id; with PADDOCK_ALLOW_POWER_CONTROL=1
// exported, PowerOff passes the guard and the relay (the caller's
// environment's opt-in) and reaches the stand-in. Checked by routing no
// connection through the relay: StopUnit fails without paddock's message
// (the test bus has no systemd) and the test fails.
func TestDBusGdbus(t *testing.T) {
	needTool(t, "gdbus")
	dir, calls := dbusBus(t)
	const login1 = "gdbus call --system --dest org.freedesktop.login1 --object-path /org/freedesktop/login1 --method org.freedesktop.login1.Manager."
	script := login1 + `PowerOff false 2>` + dir + `/power.err; echo power=$?
gdbus call --system --dest org.freedesktop.systemd1 --object-path /org/freedesktop/systemd1 --method org.freedesktop.systemd1.Manager.StopUnit nginx.service replace >` + dir + `/stop.out 2>` + dir + `/stop.err; echo stop=$?
gdbus call --system --dest org.freedesktop.Notifications --object-path /org/freedesktop/Notifications --method org.freedesktop.Notifications.Notify agent 0 '' 'build done' '' '[]' '{}' 5000; echo notify=$?
export PADDOCK_ALLOW_POWER_CONTROL=1
` + login1 + `PowerOff false; echo optin=$?`
	out, lines := backend("seccomp").nobodyRun(t, bins.paddock, dir, script)
	wantLines(t, out, lines, "power=126", "stop=1", "(uint32 7351,)", "notify=0", "()", "optin=0")
	if s := readFile(filepath.Join(dir, "power.err")); !hasLinePrefix(s, "paddock refused exec of `gdbus call") {
		t.Errorf("gdbus's PowerOff: its stderr holds\n%s\nwant the exec guard's refusal", s)
	}
	if n := journalCount(t, dir, "exec_denied", "org.freedesktop.login1.Manager.PowerOff"); n != 1 {
		t.Errorf("%d exec_denied records of gdbus's PowerOff, want 1\n%s", n, readFile(filepath.Join(dir, "j.jsonl")))
	}
	refusedByRelay(t, dir, "org.freedesktop.systemd1.Manager.StopUnit", "nginx.service", "stop.err", "Error: GDBus.Error:org.freedesktop.DBus.Error.AccessDenied: ", "stop.err",
		"the session does not own nginx.service: stopping it could end or damage a service or program the user relies on.")
	if got, want := standInsGot(calls), "Notify build done\nPowerOff "; got != want {
		t.Errorf("the stand-ins got\n%s\nwant\n%s\n(the refused calls never)\n%s", got, want, out)
	}
}
