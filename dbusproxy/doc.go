// Package dbusproxy is paddock's D-Bus filter: a relay between an agent's
// connection to a D-Bus bus and the bus, which passes everything unchanged
// except the method calls that would power off, reboot or suspend the
// machine, end the user's sessions, or stop, kill, restart, freeze,
// reconfigure or disable systemd units the agent's session does not own.
// Those it answers itself, with an AccessDenied error carrying paddock's
// message, and reports (for paddock's journal).
//
// It is paddock's own rather than xdg-dbus-proxy (Flatpak's), for two
// reasons. xdg-dbus-proxy's policy is an allow-list: per bus name see,
// talk or own, or calls allowed by method and object path
// (--call=NAME=RULE); it has no rule that refuses and never reads a
// call's arguments. "Everything except login1's power methods" could only
// be written as a list of every other method (which the next systemd
// release breaks), and "StopUnit of the units the session started, not of
// the others" not at all. And paddock ships as one static binary with no
// runtime dependency; the relay is about 2,000 lines of Go.
//
// # Wire
//
// Authentication (the NUL byte, then AUTH, DATA, NEGOTIATE_UNIX_FD,
// AGREE_UNIX_FD, OK, REJECTED, ERROR, BEGIN lines) passes through in both
// directions unchanged. After the client's BEGIN both directions are
// framed into messages (both endiannesses; 128 MiB a message, 64 MiB of
// header fields, as the specification bounds them; memory grows with the
// bytes that arrive, not with the lengths they claim). Unix descriptors
// (SCM_RIGHTS) are queued as they arrive and go, in order, with the
// message whose UNIX_FDS header field claims them, sent with that
// message's first bytes as dbus-daemon sends them; a refused call's are
// closed. A client message the relay cannot read (bad endianness,
// version, lengths, a known header field of the wrong type or given twice,
// a name with a NUL, not UTF-8 or empty, a required field missing) ends the
// connection with an error naming it: the bus would refuse it too, and the
// relay never reads a message otherwise than the bus does.
//
// A refusal's error reply: ERROR, REPLY_SERIAL the call's serial,
// ERROR_NAME org.freedesktop.DBus.Error.AccessDenied, DESTINATION the
// client's unique name (from the bus's reply to its Hello; the error waits
// for that reply to be delivered, since sd-bus takes any other first
// message for a broken bus), SENDER the name the call was sent to,
// SIGNATURE "s", the message as body, NO_REPLY_EXPECTED. A call sent with
// NO_REPLY_EXPECTED gets none. Its serial is the relay's, counted down from
// 2^32-1: a message's serial is unique only among its sender's messages,
// and clients match an error to its call by REPLY_SERIAL alone (GLib's
// gdbus, libdbus's dbus-send and sd-bus's busctl are tested against a real
// dbus-daemon). gdbus and dbus-send print paddock's message; sd-bus prints
// "Access denied" for every AccessDenied error, whatever its text
// (systemd's bus_error_message does so on purpose), so busctl, systemctl
// and loginctl show only that; the refusal and its message are in paddock's
// journal. A connection whose first message is not a Hello to the bus
// (peer-to-peer D-Bus, as systemd's private socket speaks) gets its errors
// at once, without a DESTINATION.
//
// # Decisions
//
// A call is matched by its INTERFACE and MEMBER, whatever its DESTINATION
// (a unique name reaches logind as surely as org.freedesktop.login1). A
// call without an INTERFACE (the callee then picks any interface of the
// object with that member) is taken for each table interface of its object
// path (/org/freedesktop/login1 and its session/, user/, seat/ objects,
// /org/freedesktop/systemd1 and its unit/ objects, the desktop session
// managers' paths) and, for the desktop session managers, of its
// well-known DESTINATION. Opt-in means Policy.AllowPower
// (PADDOCK_ALLOW_POWER_CONTROL=1) lets the call through; "owned" means
// Policy.OwnsUnit says the unit is the session's, or the relay saw this
// client start it (StartTransientUnit, below).
//
// The power and session rows are guard.DBusControls, the table that
// decides the same methods called by an exec'd busctl, dbus-send, gdbus
// or qdbus.
//
//	interface, members                                     decision
//	login1.Manager PowerOff, Reboot, Halt, Suspend,        refused, opt-in (power_control)
//	  Hibernate, HybridSleep, SuspendThenHibernate,
//	  their *WithFlags, Sleep, ScheduleShutdown
//	login1.Manager Can* (CanPowerOff, ...)                 pass: queries
//	login1.Manager CancelScheduledShutdown, Inhibit,       pass: they prevent power actions or ask
//	  SetReboot* (next reboot's target), SetWallMessage      nothing of the machine now
//	login1.Manager TerminateSession, TerminateUser,        refused, opt-in (session_control)
//	  TerminateSeat, KillSession, KillUser
//	login1.Session Terminate, Kill; User Terminate, Kill;  refused, opt-in (session_control)
//	  Seat Terminate
//	login1 LockSession, LockSessions, Session.Lock         pass: the user's own idle lock does the same;
//	                                                         nothing is lost, their password undoes it
//	login1 UnlockSession, UnlockSessions, Session.Unlock   refused, opt-in (session_control): it opens
//	                                                         the user's locked desktop to whoever is at it
//	login1 Activate*, SwitchTo*, SetIdleHint, ...          pass: switching is undone by switching back
//	systemd1.Manager PowerOff, Reboot, Halt, KExec,        refused, opt-in (power_control)
//	  SoftReboot, SwitchRoot
//	systemd1.Manager Exit                                  refused, opt-in (session_control): on the
//	                                                         session bus it stops every user service
//	systemd1.Manager StopUnit, KillUnit, KillUnitSubgroup, refused unless owned (unit_not_owned)
//	  QueueSignalUnit, CleanUnit, FreezeUnit,
//	  SetUnitProperties (MemoryMax=1 kills as surely),
//	  RemoveSubgroupFromUnit, BindMountUnit, MountImageUnit
//	systemd1.Manager RestartUnit, TryRestartUnit,          a power unit: refused, opt-in; else refused
//	  ReloadOrRestartUnit, ReloadOrTryRestartUnit            unless owned
//	systemd1.Manager StartUnit, StartUnitWithFlags,        a power unit (poweroff.target, reboot.target,
//	  StartUnitReplace (its new unit)                        rescue.target, systemd-poweroff.service, ...:
//	                                                         guard.PowerUnit's list) or job mode "isolate":
//	                                                         refused, opt-in (power_control, isolate); of
//	                                                         exit.target or systemd-exit.service (the user
//	                                                         manager's Exit): refused, opt-in
//	                                                         (session_control); else pass
//	systemd1.Manager EnqueueUnitJob, EnqueueUnitJobMany    by job type: start, verify-active like StartUnit;
//	                                                         stop like StopUnit; restart and its kin like
//	                                                         RestartUnit; reload, try-reload, nop pass; a type
//	                                                         the table does not know is taken for a restart
//	systemd1.Manager EnqueueMarkedJobs                     refused: restarts units it does not name
//	systemd1.Manager DisableUnitFiles*, MaskUnitFiles,     refused unless every unit named is owned: a
//	  PresetUnitFiles*, RevertUnitFiles, SetDefaultTarget;   display manager disabled or masked does not come
//	  PresetAllUnitFiles                                     back at the next boot; PresetAll names none
//	systemd1.Manager EnableUnitFiles, ReenableUnitFiles,   pass: they add, nothing stops
//	  LinkUnitFiles, UnmaskUnitFiles, AddDependencyUnitFiles
//	systemd1.Manager ThawUnit, ReloadUnit, ResetFailed*,   pass: thawing resumes, a reload keeps the service
//	  Ref/UnrefUnit, AbandonScope, CancelJob, ClearJobs,     running; the rest changes no running unit
//	  Reload, Reexecute, Set/UnsetEnvironment, Get*, List*
//	systemd1.Manager StartTransientUnit                    isolate: refused, opt-in; else pass, and once the
//	                                                         bus's reply addressed to this client says it
//	                                                         started, its unit is owned; not on an error (a
//	                                                         unit of that name existed), not when sent with
//	                                                         NO_REPLY_EXPECTED, not when its PIDs or PIDFDs
//	                                                         name a process Policy.OwnsPID does not vouch
//	                                                         for (that would make a foreign process stoppable);
//	                                                         its auxiliary units never
//	systemd1.Manager AttachProcessesToUnit;                refused unless the unit is owned and every process
//	  Service/Scope/Slice/Socket/Mount/Swap                  is the session's (Policy.OwnsPID; pid 0, the
//	  AttachProcesses; StartAuxiliaryScope                   caller, is paddock's relay: not owned); for
//	                                                         StartAuxiliaryScope, a new unit, the processes only
//	                                                         (process_not_owned)
//	systemd1.Unit (at /org/freedesktop/systemd1/unit/N)    as the Manager's method of the same verb, for the
//	  Stop, Kill, KillSubgroup, QueueSignal, Clean,          unit N (systemd's path escaping undone as systemd
//	  Freeze, SetProperties, Start, Restart, TryRestart,     does: "_2e" is '.', the name ends at a NUL);
//	  ReloadOrRestart, ReloadOrTryRestart, EnqueueJob;       Thaw, Reload, ResetFailed, Ref, Unref pass
//	  Service/Scope/... RemoveSubgroup, BindMount, MountImage
//	a unit named "" or "self", or unreadable               never owned: systemd takes "" and "self" for the
//	                                                         unit of the bus connection's peer, which is
//	                                                         paddock's connection, not the agent's
//	org.gnome.SessionManager Logout; org.kde.Shutdown      refused, opt-in (session_control), as the guard
//	  logout; org.kde.KSMServerInterface logout;             refuses gnome-session-quit and qdbus calls of them
//	  org.xfce.Session.Manager Logout
//	org.gnome.SessionManager Shutdown, Reboot,             refused, opt-in (power_control)
//	  Request*; org.kde.Shutdown logoutAndShutdown,
//	  logoutAndReboot; org.xfce.Session.Manager Shutdown,
//	  Restart, Suspend, Hibernate, HybridSleep
//	everything else (notifications, secrets, portals,      pass
//	  properties, introspection, signals, replies, the
//	  bus's own methods)
//
// Refusals name the rule (Refusal.Rule, the journal's words) and say what
// the call would do and the way out. The relay keeps no global state; what
// it learns (the client's unique name, the transient units it started) is
// per connection and bounded (1024 starts awaiting their reply, 16384
// units; past the bounds it forgets, and a forgotten unit is not owned).
//
// # What it cannot see
//
// It decides only the connections paddock routes through it: a client
// that reaches the bus socket by another way (a raw connect paddock did
// not route, another bus address, systemd's private sockets
// /run/systemd/private and $XDG_RUNTIME_DIR/systemd/private, which speak
// peer-to-peer D-Bus the relay can filter when routed to it) is the
// supervisor's business. Within a connection it sees calls, not their
// consequences: a unit started passes, and whatever that unit runs, or
// stops through its own Conflicts=, happens under systemd, outside the
// session's process tree; a third service that calls logind or systemd
// for the caller (a deputy's deputy) is judged as that service's call,
// not the agent's; session managers other than GNOME's, KDE's and XFCE's
// (MATE, Cinnamon, LXQt, ConsoleKit2) are not in the table.
package dbusproxy
