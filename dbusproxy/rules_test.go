package dbusproxy

import (
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/guard"
	"github.com/paddock-dev/paddock/internal/dbuswire"
)

const (
	login1  = "org.freedesktop.login1"
	l1Mgr   = "org.freedesktop.login1.Manager"
	systemd = "org.freedesktop.systemd1"
	sdMgr   = "org.freedesktop.systemd1.Manager"
	sdUnit  = "org.freedesktop.systemd1.Unit"
)

// mine is the unit the tests' OwnsUnit says the session owns.
const mine = "paddock-agent.scope"

func ownsMine(u string) bool { return u == mine }

func TestDecide(t *testing.T) {
	type tc struct {
		name string
		msg  []byte
		p    Policy
		rule string // "": passes
		unit string
	}
	noProps := []any{}
	cases := []tc{
		// login1: power, opt-in.
		{"PowerOff", callMsg(login1, "/org/freedesktop/login1", l1Mgr, "PowerOff", "b", false), Policy{}, RulePowerControl, ""},
		{"PowerOff with the opt-in", callMsg(login1, "/org/freedesktop/login1", l1Mgr, "PowerOff", "b", false), Policy{AllowPower: true}, "", ""},
		{"PowerOff to logind's unique name", callMsg(":1.7", "/org/freedesktop/login1", l1Mgr, "PowerOff", "b", false), Policy{}, RulePowerControl, ""},
		{"PowerOff without an interface", callMsg(login1, "/org/freedesktop/login1", "", "PowerOff", "b", false), Policy{}, RulePowerControl, ""},
		{"PowerOff without an interface elsewhere", callMsg("org.example.Player", "/org/example/Player", "", "PowerOff", ""), Policy{}, "", ""},
		{"RebootWithFlags", callMsg(login1, "/org/freedesktop/login1", l1Mgr, "RebootWithFlags", "t", 0), Policy{}, RulePowerControl, ""},
		{"Suspend", callMsg(login1, "/org/freedesktop/login1", l1Mgr, "Suspend", "b", false), Policy{}, RulePowerControl, ""},
		{"ScheduleShutdown", callMsg(login1, "/org/freedesktop/login1", l1Mgr, "ScheduleShutdown", "st", "poweroff", 0), Policy{}, RulePowerControl, ""},
		{"CanPowerOff", callMsg(login1, "/org/freedesktop/login1", l1Mgr, "CanPowerOff", ""), Policy{}, "", ""},
		{"CancelScheduledShutdown", callMsg(login1, "/org/freedesktop/login1", l1Mgr, "CancelScheduledShutdown", ""), Policy{}, "", ""},
		{"Inhibit", callMsg(login1, "/org/freedesktop/login1", l1Mgr, "Inhibit", "ssss", "sleep", "agent", "build", "block"), Policy{}, "", ""},
		{"LockSessions", callMsg(login1, "/org/freedesktop/login1", l1Mgr, "LockSessions", ""), Policy{}, "", ""},
		{"UnlockSessions", callMsg(login1, "/org/freedesktop/login1", l1Mgr, "UnlockSessions", ""), Policy{}, RuleSessionControl, ""},
		{"TerminateUser", callMsg(login1, "/org/freedesktop/login1", l1Mgr, "TerminateUser", "u", 1000), Policy{}, RuleSessionControl, ""},
		{"KillSession", callMsg(login1, "/org/freedesktop/login1", l1Mgr, "KillSession", "ssi", "2", "all", 9), Policy{}, RuleSessionControl, ""},
		{"KillSession with the opt-in", callMsg(login1, "/org/freedesktop/login1", l1Mgr, "KillSession", "ssi", "2", "all", 9), Policy{AllowPower: true}, "", ""},
		{"Session.Terminate", callMsg(login1, "/org/freedesktop/login1/session/_32", "org.freedesktop.login1.Session", "Terminate", ""), Policy{}, RuleSessionControl, ""},
		{"Session.Terminate without an interface", callMsg(login1, "/org/freedesktop/login1/session/auto", "", "Terminate", ""), Policy{}, RuleSessionControl, ""},
		{"Session.Lock", callMsg(login1, "/org/freedesktop/login1/session/auto", "org.freedesktop.login1.Session", "Lock", ""), Policy{}, "", ""},
		{"Session.Activate", callMsg(login1, "/org/freedesktop/login1/session/auto", "org.freedesktop.login1.Session", "Activate", ""), Policy{}, "", ""},
		{"User.Kill", callMsg(login1, "/org/freedesktop/login1/user/_1000", "org.freedesktop.login1.User", "Kill", "i", 15), Policy{}, RuleSessionControl, ""},
		{"Seat.Terminate", callMsg(login1, "/org/freedesktop/login1/seat/seat0", "", "Terminate", ""), Policy{}, RuleSessionControl, ""},
		{"Seat.SwitchTo", callMsg(login1, "/org/freedesktop/login1/seat/seat0", "org.freedesktop.login1.Seat", "SwitchTo", "u", 2), Policy{}, "", ""},

		// systemd: power, and units.
		{"systemd PowerOff", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "PowerOff", ""), Policy{}, RulePowerControl, ""},
		{"systemd Exit", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "Exit", ""), Policy{}, RuleSessionControl, ""},
		{"systemd Exit with the opt-in", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "Exit", ""), Policy{AllowPower: true}, "", ""},
		{"StopUnit", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "StopUnit", "ss", "gdm.service", "replace"), Policy{}, RuleUnitNotOwned, "gdm.service"},
		{"StopUnit with the opt-in", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "StopUnit", "ss", "gdm.service", "replace"), Policy{AllowPower: true}, RuleUnitNotOwned, "gdm.service"},
		{"StopUnit of an owned unit", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "StopUnit", "ss", mine, "replace"), Policy{OwnsUnit: ownsMine}, "", ""},
		{"StopUnit of the caller's unit", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "StopUnit", "ss", "", "replace"), Policy{OwnsUnit: func(string) bool { return true }}, RuleUnitNotOwned, ""},
		{"StopUnit unreadable", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "StopUnit", "us", 1, "replace"), Policy{OwnsUnit: func(string) bool { return true }}, RuleUnitNotOwned, ""},
		{"KillUnit", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "KillUnit", "ssi", "pipewire.service", "all", 9), Policy{}, RuleUnitNotOwned, "pipewire.service"},
		{"FreezeUnit", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "FreezeUnit", "s", "firefox.scope"), Policy{}, RuleUnitNotOwned, "firefox.scope"},
		{"ThawUnit", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "ThawUnit", "s", "firefox.scope"), Policy{}, "", ""},
		{"ReloadUnit", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "ReloadUnit", "ss", "nginx.service", "replace"), Policy{}, "", ""},
		{"RestartUnit", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "RestartUnit", "ss", "sshd.service", "replace"), Policy{}, RuleUnitNotOwned, "sshd.service"},
		{"RestartUnit of reboot.target", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "RestartUnit", "ss", "reboot.target", "replace"), Policy{}, RulePowerControl, "reboot.target"},
		{"CleanUnit", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "CleanUnit", "sas", "gdm.service", []any{"all"}), Policy{}, RuleUnitNotOwned, "gdm.service"},
		{"SetUnitProperties", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "SetUnitProperties", "sba(sv)", "gdm.service", true, []any{[]any{"MemoryMax", variant("t", 1)}}), Policy{}, RuleUnitNotOwned, "gdm.service"},
		{"StartUnit", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "StartUnit", "ss", "nginx.service", "replace"), Policy{}, "", ""},
		{"StartUnit poweroff.target", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "StartUnit", "ss", "poweroff.target", "replace-irreversibly"), Policy{}, RulePowerControl, "poweroff.target"},
		{"StartUnit poweroff.target with the opt-in", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "StartUnit", "ss", "poweroff.target", "replace-irreversibly"), Policy{AllowPower: true}, "", ""},
		{"StartUnit rescue.target", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "StartUnit", "ss", "rescue.target", "replace"), Policy{}, RulePowerControl, "rescue.target"},
		{"StartUnit exit.target", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "StartUnit", "ss", "exit.target", "replace"), Policy{}, RuleSessionControl, "exit.target"},
		{"StartUnit isolate", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "StartUnit", "ss", "multi-user.target", "isolate"), Policy{}, RuleIsolate, "multi-user.target"},
		{"StartUnitReplace", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "StartUnitReplace", "sss", "a.service", "systemd-reboot.service", "replace"), Policy{}, RulePowerControl, "systemd-reboot.service"},
		{"EnqueueUnitJob stop", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "EnqueueUnitJob", "sss", "gdm.service", "stop", "replace"), Policy{}, RuleUnitNotOwned, "gdm.service"},
		{"EnqueueUnitJob start", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "EnqueueUnitJob", "sss", "gdm.service", "start", "replace"), Policy{}, "", ""},
		{"EnqueueUnitJob start halt.target", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "EnqueueUnitJob", "sss", "halt.target", "start", "replace"), Policy{}, RulePowerControl, "halt.target"},
		{"EnqueueUnitJob of a new type", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "EnqueueUnitJob", "sss", "gdm.service", "obliterate", "replace"), Policy{}, RuleUnitNotOwned, "gdm.service"},
		{"EnqueueUnitJobMany", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "EnqueueUnitJobMany", "asss", []any{mine, "gdm.service"}, "stop", "replace"), Policy{OwnsUnit: ownsMine}, RuleUnitNotOwned, "gdm.service"},
		{"EnqueueUnitJobMany owned", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "EnqueueUnitJobMany", "asss", []any{mine}, "stop", "replace"), Policy{OwnsUnit: ownsMine}, "", ""},
		{"EnqueueMarkedJobs", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "EnqueueMarkedJobs", ""), Policy{OwnsUnit: func(string) bool { return true }}, RuleUnitNotOwned, ""},
		{"MaskUnitFiles", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "MaskUnitFiles", "asbb", []any{"/etc/systemd/system/gdm.service"}, false, false), Policy{}, RuleUnitNotOwned, "gdm.service"},
		{"EnableUnitFiles", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "EnableUnitFiles", "asbb", []any{"gdm.service"}, false, false), Policy{}, "", ""},
		{"SetDefaultTarget", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "SetDefaultTarget", "sb", "multi-user.target", true), Policy{}, RuleUnitNotOwned, "multi-user.target"},
		{"GetUnit", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "GetUnit", "s", "gdm.service"), Policy{}, "", ""},
		{"StartTransientUnit", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "StartTransientUnit", "ssa(sv)a(sa(sv))", "run-u1.service", "fail", noProps, []any{}), Policy{}, "", ""},
		{"StartTransientUnit isolate", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "StartTransientUnit", "ssa(sv)a(sa(sv))", "run-u1.service", "isolate", noProps, []any{}), Policy{}, RuleIsolate, "run-u1.service"},
		{"AttachProcessesToUnit", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "AttachProcessesToUnit", "ssau", mine, "", []any{4242}), Policy{OwnsUnit: ownsMine}, RuleProcessNotOwned, mine},
		{"AttachProcessesToUnit owned", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "AttachProcessesToUnit", "ssau", mine, "", []any{4242}), Policy{OwnsUnit: ownsMine, OwnsPID: func(p int) bool { return p == 4242 }}, "", ""},
		{"AttachProcessesToUnit into a foreign unit", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "AttachProcessesToUnit", "ssau", "gdm.service", "", []any{4242}), Policy{OwnsPID: func(int) bool { return true }}, RuleUnitNotOwned, "gdm.service"},
		{"AttachProcessesToUnit pid 0", callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "AttachProcessesToUnit", "ssau", mine, "", []any{0}), Policy{OwnsUnit: ownsMine, OwnsPID: func(int) bool { return true }}, RuleProcessNotOwned, mine},

		// systemd's unit objects.
		{"Unit.Stop", callMsg(systemd, "/org/freedesktop/systemd1/unit/gdm_2eservice", sdUnit, "Stop", "s", "replace"), Policy{}, RuleUnitNotOwned, "gdm.service"},
		{"Unit.Stop without an interface", callMsg(systemd, "/org/freedesktop/systemd1/unit/gdm_2eservice", "", "Stop", "s", "replace"), Policy{}, RuleUnitNotOwned, "gdm.service"},
		{"Unit.Stop owned", callMsg(systemd, "/org/freedesktop/systemd1/unit/paddock_2dagent_2escope", sdUnit, "Stop", "s", "replace"), Policy{OwnsUnit: ownsMine}, "", ""},
		{"Unit.Stop of self", callMsg(systemd, "/org/freedesktop/systemd1/unit/self", sdUnit, "Stop", "s", "replace"), Policy{OwnsUnit: ownsMine}, RuleUnitNotOwned, "self"},
		{"Unit.Kill", callMsg(systemd, "/org/freedesktop/systemd1/unit/gdm_2eservice", sdUnit, "Kill", "si", "all", 9), Policy{}, RuleUnitNotOwned, "gdm.service"},
		{"Unit.Freeze", callMsg(systemd, "/org/freedesktop/systemd1/unit/gdm_2eservice", sdUnit, "Freeze", ""), Policy{}, RuleUnitNotOwned, "gdm.service"},
		{"Unit.Thaw", callMsg(systemd, "/org/freedesktop/systemd1/unit/gdm_2eservice", sdUnit, "Thaw", ""), Policy{}, "", ""},
		{"Unit.Start poweroff.target", callMsg(systemd, "/org/freedesktop/systemd1/unit/poweroff_2etarget", sdUnit, "Start", "s", "replace"), Policy{}, RulePowerControl, "poweroff.target"},
		{"Unit.Start poweroff.target NUL", callMsg(systemd, "/org/freedesktop/systemd1/unit/poweroff_2etarget_00x", sdUnit, "Start", "s", "replace"), Policy{}, RulePowerControl, "poweroff.target"},
		{"Unit.Start nginx", callMsg(systemd, "/org/freedesktop/systemd1/unit/nginx_2eservice", sdUnit, "Start", "s", "replace"), Policy{}, "", ""},
		{"Unit.EnqueueJob restart", callMsg(systemd, "/org/freedesktop/systemd1/unit/gdm_2eservice", sdUnit, "EnqueueJob", "ss", "restart", "replace"), Policy{}, RuleUnitNotOwned, "gdm.service"},
		{"Unit properties", callMsg(systemd, "/org/freedesktop/systemd1/unit/gdm_2eservice", "org.freedesktop.DBus.Properties", "GetAll", "s", sdUnit), Policy{}, "", ""},
		{"Scope.AttachProcesses", callMsg(systemd, "/org/freedesktop/systemd1/unit/paddock_2dagent_2escope", "org.freedesktop.systemd1.Scope", "AttachProcesses", "sau", "", []any{1}), Policy{OwnsUnit: ownsMine}, RuleProcessNotOwned, mine},
		{"Scope.Abandon", callMsg(systemd, "/org/freedesktop/systemd1/unit/x_2escope", "org.freedesktop.systemd1.Scope", "Abandon", ""), Policy{}, "", ""},

		// Desktop session managers.
		{"GNOME Logout", callMsg("org.gnome.SessionManager", "/org/gnome/SessionManager", "org.gnome.SessionManager", "Logout", "u", 1), Policy{}, RuleSessionControl, ""},
		{"GNOME Inhibit", callMsg("org.gnome.SessionManager", "/org/gnome/SessionManager", "org.gnome.SessionManager", "Inhibit", "susu", "a", 0, "b", 4), Policy{}, "", ""},
		{"KDE logout without an interface", callMsg("org.kde.ksmserver", "/KSMServer", "", "logout", "iii", 0, 0, 0), Policy{}, RuleSessionControl, ""},
		{"XFCE Shutdown", callMsg("org.xfce.SessionManager", "/org/xfce/SessionManager", "org.xfce.Session.Manager", "Shutdown", "b", true), Policy{}, RulePowerControl, ""},

		// The rest passes.
		{"Notify", callMsg("org.freedesktop.Notifications", "/org/freedesktop/Notifications", "org.freedesktop.Notifications", "Notify", "susssasa{sv}i", "paddock", 0, "", "done", "", []any{}, []any{}, 5000), Policy{}, "", ""},
		{"secrets", callMsg("org.freedesktop.secrets", "/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "OpenSession", "sv", "plain", variant("s", "")), Policy{}, "", ""},
		{"portal", callMsg("org.freedesktop.portal.Desktop", "/org/freedesktop/portal/desktop", "org.freedesktop.portal.OpenURI", "OpenURI", "ssa{sv}", "", "https://example.org", []any{}), Policy{}, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, err := parseHeader(c.msg)
			if err != nil {
				t.Fatal(err)
			}
			d := newDecider("system", c.p)
			r := d.decide(&h, c.msg, nil)
			if c.rule == "" {
				if r != nil {
					t.Fatalf("refused (%s): %s", r.Rule, r.Message)
				}
				return
			}
			if r == nil {
				t.Fatalf("passed, want a refusal under %s", c.rule)
			}
			if r.Rule != c.rule || r.Unit != c.unit {
				t.Errorf("rule %q unit %q, want %q %q: %s", r.Rule, r.Unit, c.rule, c.unit, r.Message)
			}
			checkMessage(t, r)
			if r.Bus != "system" || r.Member != h.member || r.Path != h.path || r.Destination != h.dest || r.Interface == "" {
				t.Errorf("refusal %+v does not describe the call %+v", r, h)
			}
		})
	}
}

// checkMessage checks what every refusal's message holds.
func checkMessage(t *testing.T, r *Refusal) {
	t.Helper()
	m := r.Message
	if !strings.HasPrefix(m, "paddock refused "+r.Interface+"."+r.Member) || !strings.Contains(m, " on the "+r.Bus+" bus: ") ||
		!strings.Contains(m, "Way out: ") || !strings.Contains(m, "docs/deputies.md") || strings.ContainsAny(m, "\r\n") {
		t.Errorf("message %q: want one line \"paddock refused IFACE.MEMBER ... on the BUS bus: ... Way out: ... (docs/deputies.md)\"", m)
	}
	switch r.Rule {
	case RulePowerControl, RuleSessionControl, RuleIsolate:
		if !strings.Contains(m, "PADDOCK_ALLOW_POWER_CONTROL=1") {
			t.Errorf("message %q does not name the opt-in", m)
		}
	case RuleUnitNotOwned:
		if !strings.Contains(m, "does not own") && !strings.Contains(m, "cannot tell which units") && !strings.Contains(m, "cannot vouch for") {
			t.Errorf("message %q does not say the session does not own the unit", m)
		}
		if r.Unit != "" && !strings.Contains(m, r.Unit) {
			t.Errorf("message %q does not name %s", m, r.Unit)
		}
	}
}

func TestNoOptInMessage(t *testing.T) {
	msg := callMsg(login1, "/org/freedesktop/login1", l1Mgr, "Reboot", "b", false)
	h, _ := parseHeader(msg)
	r := newDecider("system", Policy{NoOptIn: true}).decide(&h, msg, nil)
	if r == nil || !strings.Contains(r.Message, "allow_opt_in = false") {
		t.Fatalf("refusal %+v: want a message saying the profile honours no opt-in", r)
	}
}

// TestTransient: a StartTransientUnit's unit is the session's once the
// bus's reply, addressed to this client, says it started; not on an
// error, not from a reply to another client, not when the call moves a
// process into it the session does not own.
func TestTransient(t *testing.T) {
	d := newDecider("session", Policy{OwnsPID: func(p int) bool { return p == 100 }})
	helloCall := uint32(1)
	reply := func(typ byte, serial uint32, dest string) {
		fields := []field{{code: dbuswire.FieldReplySerial, typ: 'u', u: serial}, {code: dbuswire.FieldDestination, typ: 's', s: dest}, {code: dbuswire.FieldSender, typ: 's', s: ":1.1"}}
		if typ == dbuswire.TypeError {
			fields = append(fields, field{code: dbuswire.FieldErrorName, typ: 's', s: "org.freedesktop.systemd1.UnitExists"})
		}
		m := encodeMessage(typ, 0, 9, fields, nil)
		h, err := parseHeader(m)
		if err != nil {
			t.Fatal(err)
		}
		d.learn(&h, m, helloCall)
	}
	// The Hello reply names the client.
	hello := encodeMessage(dbuswire.TypeMethodReturn, 0, 1, []field{{code: dbuswire.FieldReplySerial, typ: 'u', u: 1}, {code: dbuswire.FieldDestination, typ: 's', s: ":1.5"}, {code: dbuswire.FieldSender, typ: 's', s: "org.freedesktop.DBus"}, {code: dbuswire.FieldSignature, typ: 'g', s: "s"}}, encodeBody("s", ":1.5"))
	hh, _ := parseHeader(hello)
	if !d.learn(&hh, hello, helloCall) || d.uniqueName() != ":1.5" {
		t.Fatalf("the Hello reply: unique name %q", d.uniqueName())
	}
	start := func(serial uint32, unit string, props []any, flags byte) {
		m := callMsgFlags(flags, serial, systemd, "/org/freedesktop/systemd1", sdMgr, "StartTransientUnit", "ssa(sv)a(sa(sv))", unit, "fail", props, []any{})
		h, _ := parseHeader(m)
		if r := d.decide(&h, m, nil); r != nil {
			t.Fatalf("StartTransientUnit %s refused: %s", unit, r.Message)
		}
	}
	stop := func(unit string) *Refusal {
		m := callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "StopUnit", "ss", unit, "replace")
		h, _ := parseHeader(m)
		return d.decide(&h, m, nil)
	}
	start(10, "ok.service", []any{[]any{"ExecStart", variant("a(sasb)", []any{[]any{"/bin/true", []any{"/bin/true"}, false}})}}, 0)
	start(11, "exists.service", []any{}, 0)
	start(12, "other.service", []any{}, 0)
	start(13, "foreign.scope", []any{[]any{"PIDs", variant("au", []any{100, 200})}}, 0)
	start(14, "own.scope", []any{[]any{"PIDs", variant("au", []any{100})}}, 0)
	start(15, "noreply.service", []any{}, dbuswire.FlagNoReplyExpected)
	if stop("ok.service") == nil {
		t.Fatal("StopUnit of a transient unit passed before its start was confirmed")
	}
	reply(dbuswire.TypeMethodReturn, 10, ":1.5")
	reply(dbuswire.TypeError, 11, ":1.5")
	reply(dbuswire.TypeMethodReturn, 12, ":1.99") // another client's reply, eavesdropped
	reply(dbuswire.TypeMethodReturn, 13, ":1.5")
	reply(dbuswire.TypeMethodReturn, 14, ":1.5")
	reply(dbuswire.TypeMethodReturn, 15, ":1.5")
	for unit, owned := range map[string]bool{"ok.service": true, "exists.service": false, "other.service": false, "foreign.scope": false, "own.scope": true, "noreply.service": false} {
		if r := stop(unit); (r == nil) != owned {
			t.Errorf("StopUnit %s: refusal %v, want owned=%v", unit, r, owned)
		}
	}
}

// TestPIDFDs: the processes of StartTransientUnit's PIDFDs are read from
// the pidfds the call carries.
func TestPIDFDs(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skipf("needs sleep: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pidfd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
	if err != nil {
		t.Skipf("needs pidfd_open: %v", err)
	}
	defer unix.Close(pidfd)
	for _, owned := range []bool{true, false} {
		d := newDecider("session", Policy{OwnsPID: func(p int) bool { return owned && p == cmd.Process.Pid }})
		m := callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "StartTransientUnit", "ssa(sv)a(sa(sv))", "run-x.scope", "fail", []any{[]any{"PIDFDs", variant("ah", []any{0})}}, []any{})
		h, _ := parseHeader(m)
		if r := d.decide(&h, m, []int{pidfd}); r != nil {
			t.Fatal(r.Message)
		}
		ret := encodeMessage(dbuswire.TypeMethodReturn, 0, 9, []field{{code: dbuswire.FieldReplySerial, typ: 'u', u: 7}}, nil)
		rh, _ := parseHeader(ret)
		d.learn(&rh, ret, 0)
		if got := d.owns("run-x.scope"); got != owned {
			t.Errorf("OwnsPID(the sleep)=%v: the scope of its pidfd owned=%v", owned, got)
		}
	}
}

// The relay refuses every power and session method of guard's table, as
// guard refuses an exec'd tool's call of it, with the same words.
func TestMethodsHoldGuardsDBusControls(t *testing.T) {
	controls := guard.DBusControls()
	if len(controls) == 0 {
		t.Fatal("guard has no D-Bus controls")
	}
	for _, c := range controls {
		m, ok := methods[c.Interface][c.Member]
		want := kindPower
		if c.Rule == audit.RuleSessionControl {
			want = kindSession
		}
		if !ok || m.kind != want || m.effect != c.Effect {
			t.Errorf("%s.%s: the relay's table has %+v (present %v), want kind %v, effect %q", c.Interface, c.Member, m, ok, want, c.Effect)
		}
	}
}
