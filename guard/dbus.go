package guard

import (
	"slices"

	"github.com/paddock-dev/paddock/audit"
)

// DBusControl is a D-Bus method that is power or session control: the
// same methods are refused whether an exec'd tool (busctl, dbus-send,
// gdbus, qdbus) or a library call on the bus relay (package dbusproxy)
// makes the call, so both read this one table.
type DBusControl struct {
	// Service is the well-known name that serves the method; Interface
	// declares it, Member names it.
	Service, Interface, Member string
	// Rule is RulePowerControl or RuleSessionControl.
	Rule audit.Rule
	// Effect says what the call would do, in the words of the refusal's
	// message ("power off this machine").
	Effect string
}

// What the D-Bus power and session methods would do.
const (
	effSchedule   = "schedule this machine's power-off, halt or reboot"
	effSoftReboot = "soft-reboot userspace, ending every process and session on this machine"
	effSwitchRoot = "switch this machine to another root file system, ending every process"
	effOneSession = "end a login session and every process in it"
	effUser       = "end every login session of a user and every process in them"
	effSeat       = "end every login session on a seat"
	effUnlock     = "unlock a locked screen, opening the user's desktop to whoever is at it"
)

// EffectExit is what stopping the service manager would do: systemd's
// Exit, and starting a unit that ends the session (exit.target).
const EffectExit = "stop the service manager (on the session bus: every service of the user's session)"

// DBusControls lists the D-Bus methods that are power or session
// control, in the order in which a command line naming several is
// decided.
func DBusControls() []DBusControl { return slices.Clone(dbusControls) }

// dbusControls is DBusControls' table.
var dbusControls = func() []DBusControl {
	var t []DBusControl
	add := func(service, iface string, rule audit.Rule, effect string, members ...string) {
		for _, m := range members {
			t = append(t, DBusControl{Service: service, Interface: iface, Member: m, Rule: rule, Effect: effect})
		}
	}
	const (
		login1  = "org.freedesktop.login1"
		systemd = "org.freedesktop.systemd1"
	)
	power, session := RulePowerControl, RuleSessionControl
	add(login1, login1+".Manager", power, effPoweroff, "PowerOff", "PowerOffWithFlags")
	add(login1, login1+".Manager", power, effReboot, "Reboot", "RebootWithFlags")
	add(login1, login1+".Manager", power, effHalt, "Halt", "HaltWithFlags")
	add(login1, login1+".Manager", power, effSuspend, "Suspend", "SuspendWithFlags", "HybridSleep", "HybridSleepWithFlags",
		"SuspendThenHibernate", "SuspendThenHibernateWithFlags", "Sleep")
	add(login1, login1+".Manager", power, effHibernate, "Hibernate", "HibernateWithFlags")
	add(login1, login1+".Manager", power, effSchedule, "ScheduleShutdown")
	add(login1, login1+".Manager", session, effOneSession, "TerminateSession", "KillSession")
	add(login1, login1+".Manager", session, effUser, "TerminateUser", "KillUser")
	add(login1, login1+".Manager", session, effSeat, "TerminateSeat")
	add(login1, login1+".Manager", session, effUnlock, "UnlockSession", "UnlockSessions")
	add(login1, login1+".Session", session, effOneSession, "Terminate", "Kill")
	add(login1, login1+".Session", session, effUnlock, "Unlock")
	add(login1, login1+".User", session, effUser, "Terminate", "Kill")
	add(login1, login1+".Seat", session, effSeat, "Terminate")
	add(systemd, systemd+".Manager", power, effPoweroff, "PowerOff")
	add(systemd, systemd+".Manager", power, effReboot, "Reboot")
	add(systemd, systemd+".Manager", power, effHalt, "Halt")
	add(systemd, systemd+".Manager", power, effKexec, "KExec")
	add(systemd, systemd+".Manager", power, effSoftReboot, "SoftReboot")
	add(systemd, systemd+".Manager", power, effSwitchRoot, "SwitchRoot")
	add(systemd, systemd+".Manager", session, EffectExit, "Exit")
	const gnome = "org.gnome.SessionManager"
	add(gnome, gnome, session, effLogout, "Logout")
	add(gnome, gnome, power, effShutdown, "Shutdown", "RequestShutdown")
	add(gnome, gnome, power, effReboot, "Reboot", "RequestReboot")
	add("org.kde.Shutdown", "org.kde.Shutdown", session, effLogout, "logout")
	add("org.kde.Shutdown", "org.kde.Shutdown", power, effPoweroff, "logoutAndShutdown")
	add("org.kde.Shutdown", "org.kde.Shutdown", power, effReboot, "logoutAndReboot")
	add("org.kde.ksmserver", "org.kde.KSMServerInterface", session, effLogout, "logout")
	const xfce = "org.xfce.SessionManager"
	add(xfce, "org.xfce.Session.Manager", session, effLogout, "Logout")
	add(xfce, "org.xfce.Session.Manager", power, effShutdown, "Shutdown")
	add(xfce, "org.xfce.Session.Manager", power, effReboot, "Restart")
	add(xfce, "org.xfce.Session.Manager", power, effSuspend, "Suspend", "HybridSleep")
	add(xfce, "org.xfce.Session.Manager", power, effHibernate, "Hibernate")
	return t
}()
