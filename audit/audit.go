// Package audit is the vocabulary of paddock's audit trail: the actions a
// journal record names (what happened) and the rules a decision names (why
// it went that way). Every package that decides (policy, guard, vram) names
// its rules with the one Rule type, and everything that journals names its
// actions with the one Action type, so that the journal's schema is written
// down here once and a record can only carry a word listed here.
//
// The package has no dependencies; the words are part of the journal's
// format (docs/cli.md, `paddock journal --action`), so they never change
// once released.
package audit

// Action names what a journal record records.
type Action string

// The actions paddock journals.
const (
	// Adopted: a process was made the session's own (paddock adopt).
	Adopted Action = "adopted"
	// Released: an adoption ended (paddock release).
	Released Action = "released"
	// LeaseExpired: an adopted process went away and its lease with it.
	LeaseExpired Action = "lease_expired"
	// SignalDenied: a call aimed at another process was refused: a signal,
	// ptrace, process_vm_writev, pidfd_getfd, an owner-setting call, one
	// that harms without a signal (prlimit64, setpriority, sched_*,
	// ioprio_set, perf_event_open, migrate_pages, move_pages,
	// process_madvise, vhangup), or a terminal ioctl aimed at a terminal
	// that is not the session's (TIOCSTI, TIOCSETD, ...); its syscall
	// field names which.
	SignalDenied Action = "signal_denied"
	// SelfLifelineOverride: a lifeline was adopted with --lifeline-ok.
	SelfLifelineOverride Action = "self_lifeline_override"
	// ExecDenied: an exec was refused (guard or VRAM preflight).
	ExecDenied Action = "exec_denied"
	// PowerDenied: a reboot or kexec syscall was refused.
	PowerDenied Action = "power_denied"
	// SeccompDenied: a seccomp filter the agent tried to install was refused.
	SeccompDenied Action = "seccomp_denied"
	// DeputyDenied: a connect or sendto to a deputy (a tmux or screen
	// server the agent did not start, a container engine's API) or a call
	// through a D-Bus bus (login1's power methods, systemd's unit
	// killing) was refused; its syscall field names which.
	DeputyDenied Action = "deputy_denied"
	// WriteDenied: an open for writing of another process's /proc/PID
	// file, or of a cgroup's file holding processes not the agent's, was
	// refused.
	WriteDenied Action = "write_denied"
	// WallUnread: an open for writing or a unix connect ran that paddock
	// could not read (a non-dumpable caller), so nothing decided it.
	WallUnread Action = "wall_unread"
	// OptInUsed: an explicit opt-in let a guarded call through.
	OptInUsed Action = "opt_in_used"
	// ExecUnread: an exec ran that paddock could not read (a non-dumpable
	// caller), so no guard looked at it.
	ExecUnread Action = "exec_unread"
	// WallDenied: the kernel's wall behind the supervisor (the agent's
	// Landlock domain) refused a call that the supervisor never decided,
	// as the kernel's audit record of the denial says: ptrace-class access
	// to a process outside the session (its /proc/PID/mem or environ, say),
	// a signal to one, a connection to an abstract unix socket bound outside
	// the session, or, under --strict-wall, a write to a process's or
	// cgroup's file or a mount. Its blockers field names what refused, in
	// Landlock's words (ptrace, scope.signal, fs.write_file, ...). Seen
	// after the call had failed, and only where paddock may read the
	// kernel's audit records (docs/limits.md).
	WallDenied Action = "wall_denied"
	// SessionStarted: paddock run began a session (before its agent
	// starts); pid is paddock's own, with its start_time, boot_id and
	// pid_ns, so that a reader can tell later whether it still runs.
	SessionStarted Action = "session_started"
	// SessionEnded: the session ended (its agent's status, or why it
	// could not start). A session_started with no session_ended whose
	// paddock is gone ended abnormally (killed, or its machine stopped).
	SessionEnded Action = "session_ended"
	// JournalRewritten: paddock found that the journal file no longer held
	// the record it wrote last, or that a record after it no longer linked
	// to the one before: the file was rewritten (the chain recomputed) or
	// cut while paddock ran. Written by the journal itself, before the
	// record it was about to append; its head is the hash paddock wrote
	// last, its message what was found.
	JournalRewritten Action = "journal_rewritten"
)

// actions lists every Action, in the order documentation shows them.
var actions = [...]Action{Adopted, Released, LeaseExpired, SignalDenied, SelfLifelineOverride, ExecDenied, PowerDenied, SeccompDenied, DeputyDenied, WriteDenied, OptInUsed, ExecUnread, WallUnread, WallDenied, SessionStarted, SessionEnded, JournalRewritten}

// Actions returns every action paddock journals, for tools that filter on
// them (a fresh copy).
func Actions() []Action { return append([]Action(nil), actions[:]...) }

// Known reports whether a is an action paddock journals.
func (a Action) Known() bool {
	for _, k := range actions {
		if a == k {
			return true
		}
	}
	return false
}

// Rule names why a decision went the way it did; it is the journal's "rule".
type Rule string

// Rules of the ownership decision (package policy).
const (
	RuleOwned        Rule = "owned"
	RuleSelf         Rule = "self"
	RuleSignalZero   Rule = "signal_zero"
	RuleNoSuchTarget Rule = "no_such_process"
	RuleNotOwned     Rule = "not_owned"
	RuleLifeline     Rule = "lifeline"
	RuleBroadcast    Rule = "broadcast"
	RuleGroup        Rule = "group_not_owned"
	RuleUndecidable  Rule = "undecidable"
	RuleNotTrapped   Rule = "not_trapped"
	// RuleAllowedExec: an exec the guard has nothing against.
	RuleAllowedExec Rule = "exec"
	// RuleTerminalInput: TIOCSTI, typing into a terminal.
	RuleTerminalInput Rule = "terminal_input"
	// RuleTerminalControl: an ioctl that changes a terminal for everyone
	// on it (settings, line discipline, exclusive mode, flow, window size,
	// ...) made on a terminal that is not the session's (the user's).
	RuleTerminalControl Rule = "terminal_control"
	// RuleShadowListener: a seccomp listener the agent tried to install,
	// which under the ptrace backend would answer ahead of paddock.
	RuleShadowListener Rule = "shadow_listener"
	// RuleExecUnread: an exec allowed without its strings read (a
	// non-dumpable caller), as configured.
	RuleExecUnread Rule = "exec_unread"
	// RuleSessionEnded: a call of a process a --keep-orphans session left
	// running, after the session ended (package leftover).
	RuleSessionEnded Rule = "session_ended"
	// RuleDeputy: a socket (or FIFO) reaching a deputy: refused for a
	// tmux or screen server the agent did not start and a container
	// engine the profile does not open; a D-Bus bus passes through
	// paddock's filter, whose refusals have this rule too.
	RuleDeputy Rule = "deputy"
	// RuleStrictWall: a write into a /proc/PID or cgroup file under
	// --strict-wall, refused whoever's it is.
	RuleStrictWall Rule = "strict_wall"
	// RuleWallPassed: a walled call (a unix connect, an open for writing)
	// whose target is nothing paddock guards, carried out on the caller's
	// behalf.
	RuleWallPassed Rule = "wall_passed"
	// RuleUnitNotOwned: a D-Bus call through paddock's filter that stops,
	// kills, restarts, freezes, reconfigures or disables a systemd unit
	// the session does not own (package dbusproxy).
	RuleUnitNotOwned Rule = "unit_not_owned"
	// RuleKernelWall: refused by the kernel's wall behind the supervisor
	// (the agent's Landlock domain), not by a decision of paddock's
	// (WallDenied).
	RuleKernelWall Rule = "kernel_wall"
)

// Rules of the command guards (package guard).
const (
	RulePowerControl     Rule = "power_control"     // reboot, poweroff, suspend, ...
	RuleProtectedService Rule = "protected_service" // systemctl stop gdm, ...
	RuleIsolate          Rule = "isolate"           // systemctl isolate multi-user.target
	RuleSessionControl   Rule = "session_control"   // loginctl terminate-user, gnome-session-quit, ...
	RuleBroadKill        Rule = "broad_kill"        // pkill, killall, kill PID without a supervisor
	RuleUnparsable       Rule = "unparsable"        // a shell string paddock cannot read
)

// Rules of the VRAM preflight (package vram).
const (
	RuleVRAMWithinBudget Rule = "vram_within_budget"
	RuleVRAMOverBudget   Rule = "vram_over_budget"
	// RuleVRAMUnconfigured: over the conservative default budget of a host
	// whose VRAM is neither configured nor detected.
	RuleVRAMUnconfigured Rule = "vram_unconfigured"
	// RuleVRAMOptIn: over budget, allowed by the explicit opt-in.
	RuleVRAMOptIn Rule = "vram_opt_in"
	// RuleNotGPU: not a GPU workload paddock knows; nothing was checked.
	RuleNotGPU Rule = "not_gpu_workload"
	// RuleVRAMUndecidable: a GPU workload whose size paddock cannot
	// estimate (its model file exists but cannot be read, and its name
	// gives no size): refused, failing closed.
	RuleVRAMUndecidable Rule = "vram_undecidable"
)
