package supervisor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/filter"
	"github.com/paddock-dev/paddock/internal/llaudit"
	"github.com/paddock-dev/paddock/internal/sys"
	"github.com/paddock-dev/paddock/policy"
	"github.com/paddock-dev/paddock/report"
)

// The kernel's own wall behind the supervisor: the agent starts in a
// Landlock domain of its own. A process in a Landlock domain may not
// ptrace, nor open /proc/PID/mem or other ptrace-guarded files of, nor
// process_vm_* or pidfd_getfd into, any process outside its domain, by
// whatever path the call comes (io_uring included), whatever it holds in
// capabilities. Every process the agent starts inherits the domain; the
// supervisor, the user's processes and adopted processes stay outside it.
//
// The ruleset handles no filesystem or network access: a domain that
// handles filesystem rights also forbids mount(2), which root agents and
// rootless containers (bwrap, podman) inside the agent need. A ruleset must
// restrict something to exist, and the least of what Landlock offers is the
// abstract unix socket scope (Landlock ABI 6, Linux 6.12): the agent may
// not connect to abstract sockets that processes outside its domain bound
// (X11 clients fall back to the socket file; the session bus lives in
// /run/user).
//
// Signals are scoped too (LANDLOCK_SCOPE_SIGNAL, the same ABI): the kernel
// refuses every signal from the agent's processes to a process outside the
// domain (SIGIO and SIGURG of a file owner included), whatever the
// supervisor decided. Two things then come to the supervisor instead
// (deliver.go): a signal to an adopted process, which lives outside the
// domain and which the supervisor delivers itself after deciding; and a
// probe (signal 0) of a process outside the domain, which the filter then
// traps and the supervisor answers.

// Where the kernel has Landlock ABI 7 (Linux 6.15), the domain also asks
// the kernel to log its denials after exec
// (LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON): by default the kernel logs a
// domain's denials only until the thread that made it execs, and every
// process of the agent's runs a program exec'd since. The records go to
// the kernel's audit subsystem (AUDIT_LANDLOCK_ACCESS, and
// AUDIT_LANDLOCK_DOMAIN the first time a domain shows up), where paddock
// reads those of this domain where it may (wallaudit, internal/llaudit):
// a refusal of the kernel's wall is then journaled, counted and explained
// like the supervisor's own. What it costs: while auditing is on (auditd,
// or auditctl -e 1), one record per denial in the system's audit log, and,
// when no audit daemon listens, in the kernel's log (dmesg), which the
// kernel rate-limits (printk_ratelimit). Only the agent's domain asks for
// it; docs/limits.md says how to filter them out.

// landlockLogABI is the Landlock ABI that has the logging flags.
const landlockLogABI = 7

// restrictFlags are the landlock_restrict_self flags for the agent's
// domain on a kernel of Landlock ABI abi.
func restrictFlags(abi int) uint32 {
	if abi >= landlockLogABI {
		return unix.LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON
	}
	return 0
}

// landlockScopes is what the agent's ruleset restricts.
const landlockScopes = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL

// landlockMinABI is the Landlock ABI that has scopes.
const landlockMinABI = 6

// errLandlockOld says the kernel's Landlock lacks scopes.
var errLandlockOld = errors.New("Landlock before ABI 6 (Linux 6.12) has no scope to restrict without also forbidding mount(2)")

// enterLandlockDomain puts the calling thread, which is about to start the
// agent, in a Landlock domain of its own; with strict, one that also
// refuses writes to processes' and cgroups' files (strictRuleset). With
// keepCaps, or where the kernel has no Landlock or one without scopes, it
// returns an error landlockMissing recognizes: the seccomp traps then hold
// alone (a strict wall's caller refuses to start instead).
func enterLandlockDomain(keepCaps, strict bool) error {
	if err := landlockReady(keepCaps); err != nil {
		return err
	}
	abi, err := sys.LandlockABI()
	if err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	var ruleset int
	if strict {
		ruleset, err = strictRuleset("/", mountinfoPath)
	} else {
		ruleset, err = sys.LandlockCreateRuleset(0, landlockScopes)
	}
	if err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	defer unix.Close(ruleset)
	flags := restrictFlags(abi)
	err = sys.LandlockRestrict(ruleset, flags)
	if errors.Is(err, unix.EPERM) {
		// Neither CAP_SYS_ADMIN nor no_new_privs: set the latter, as the
		// filter's install does.
		if perr := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); perr != nil {
			return fmt.Errorf("landlock: prctl(PR_SET_NO_NEW_PRIVS): %w", perr)
		}
		err = sys.LandlockRestrict(ruleset, flags)
	}
	if err != nil {
		return fmt.Errorf("landlock: landlock_restrict_self: %w", err)
	}
	return nil
}

// The strict wall (paddock run --strict-wall) closes what signals and
// ptrace scoping leave open to an agent that runs as the same user as the
// processes it would harm: files that act on a process or a group of
// processes when written, which the kernel guards by file owner alone.
// /proc/PID/oom_score_adj (raised to 1000, it makes the process the OOM
// killer's first victim), and a delegated cgroup's cgroup.kill,
// cgroup.freeze, cgroup.procs (moving a process into a cgroup the agent
// then kills) and its limits (memory.max). Its ruleset handles writing
// and truncating files, and moving or linking them across directories
// (which a ruleset that handles any filesystem access refuses unless it is
// granted), and grants all three everywhere but in the mounts of procfs
// and of cgroupfs (v1 and v2), where only procfs's entries that are not
// processes (/proc/sys, ...) keep them, /proc/sysrq-trigger excepted.
//
// What it costs the agent, which is why it is asked for and not the
// default: no file of any process, its own included, may be written
// (/proc/self/uid_map for a user namespace, /proc/self/oom_score_adj),
// no cgroup of its own managed, no file created directly in / written;
// and, as in any domain that handles filesystem access, mount(2),
// umount(2) and pivot_root(2) are refused: bwrap, unshare -m and rootless
// containers fail inside it.

// strictAccess is what a strict wall handles, and grants on a directory;
// strictFileAccess what it grants on a file.
const (
	strictFileAccess = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE
	strictAccess     = strictFileAccess | unix.LANDLOCK_ACCESS_FS_REFER
)

// mountinfoPath lists the mounts the strict wall's thread sees.
const mountinfoPath = "/proc/thread-self/mountinfo"

// strictRuleset builds the strict wall's ruleset for the tree at root:
// the scopes, and strictAccess granted on each of strictGrants.
func strictRuleset(root, mountinfo string) (int, error) {
	sealed, err := sealedMounts(mountinfo, root)
	if err != nil {
		return -1, err
	}
	grants, err := strictGrants(root, sealed)
	if err != nil {
		return -1, err
	}
	ruleset, err := sys.LandlockCreateRuleset(strictAccess, landlockScopes)
	if err != nil {
		return -1, fmt.Errorf("landlock_create_ruleset: %w", err)
	}
	for _, g := range grants {
		fd, err := unix.Open(g.path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			// Gone since it was listed, or not ours to reach: it stays
			// unwritable, which fails closed.
			continue
		}
		access := uint64(strictFileAccess)
		if g.dir {
			access = strictAccess
		}
		err = sys.LandlockAddPathRule(ruleset, fd, access)
		unix.Close(fd)
		if err != nil {
			unix.Close(ruleset)
			return -1, fmt.Errorf("landlock_add_rule %s: %w", g.path, err)
		}
	}
	return ruleset, nil
}

// wallGrant is a file, or a directory and what lies beneath it, that the
// strict wall leaves writable.
type wallGrant struct {
	path string
	dir  bool
}

// strictGrants lists what a strict wall grants under root: every entry
// of every directory on the way from root to a sealed mount (sealed maps
// its path to whether it is a procfs), but the sealed mounts themselves
// and symbolic links (what one leads to is granted or not where it lies);
// and in a procfs, every entry that is neither a process (a number, self,
// thread-self) nor sysrq-trigger.
func strictGrants(root string, sealed map[string]bool) ([]wallGrant, error) {
	var grants []wallGrant
	var walk func(dir string) error
	walk = func(dir string) error {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("strict wall: %w", err)
		}
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			if proc, ok := sealed[p]; ok {
				if proc {
					grants = append(grants, procGrants(p)...)
				}
				continue
			}
			if e.Type()&fs.ModeSymlink != 0 {
				continue
			}
			if e.IsDir() && holdsSealed(p, sealed) {
				if err := walk(p); err != nil {
					return err
				}
				continue
			}
			grants = append(grants, wallGrant{path: p, dir: e.IsDir()})
		}
		return nil
	}
	if err := walk(root); err != nil {
		return nil, err
	}
	return grants, nil
}

// holdsSealed reports whether a sealed mount lies beneath dir.
func holdsSealed(dir string, sealed map[string]bool) bool {
	for p := range sealed {
		if strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}

// procGrants are the entries of the procfs at dir that a strict wall
// leaves writable (see strictGrants). Unreadable, it leaves none.
func procGrants(dir string) []wallGrant {
	entries, _ := os.ReadDir(dir)
	var grants []wallGrant
	for _, e := range entries {
		name := e.Name()
		if e.Type()&fs.ModeSymlink != 0 || name == "sysrq-trigger" || strings.Trim(name, "0123456789") == "" {
			continue
		}
		grants = append(grants, wallGrant{path: filepath.Join(dir, name), dir: e.IsDir()})
	}
	return grants
}

// sealedMounts reads the mounts of procfs and cgroupfs under root from a
// mountinfo file (proc(5)): their paths, each mapped to whether it is a
// procfs.
func sealedMounts(mountinfo, root string) (map[string]bool, error) {
	b, err := os.ReadFile(mountinfo)
	if err != nil {
		return nil, fmt.Errorf("strict wall: %w", err)
	}
	sealed := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPEROPTIONS
		fields := strings.Fields(line)
		sep := slices.Index(fields, "-")
		if sep < 5 || sep+1 >= len(fields) {
			continue
		}
		switch fields[sep+1] {
		case "proc", "cgroup", "cgroup2":
		default:
			continue
		}
		p := unescapeMount(fields[4])
		if root != "/" && !strings.HasPrefix(p, root+"/") {
			continue
		}
		sealed[p] = fields[sep+1] == "proc"
	}
	return sealed, nil
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// errKeepCaps is why an agent started with --keep-caps is outside a domain:
// it asked for the access a root agent has, ptrace of anything included.
var errKeepCaps = errors.New("--keep-caps: the agent starts without it, as without the rest of the hardening")

// landlockReady says why the agent will not enter a Landlock domain (nil:
// it will): --keep-caps, or a kernel without Landlock or without scopes.
func landlockReady(keepCaps bool) error {
	if keepCaps {
		return fmt.Errorf("landlock: %w", errKeepCaps)
	}
	abi, err := sys.LandlockABI()
	if err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	if abi < landlockMinABI {
		return fmt.Errorf("landlock: ABI %d: %w", abi, errLandlockOld)
	}
	return nil
}

// scopesSignals reports whether the agent will start in a domain that
// scopes signals: the filter then traps probes (filter.Options.Probes).
func scopesSignals(keepCaps bool) bool { return landlockReady(keepCaps) == nil }

// landlockMissing reports whether err says this kernel has no Landlock to
// enter (not built, not enabled, or its syscalls filtered away by a
// container runtime), rather than that entering it failed.
func landlockMissing(err error) bool {
	return errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, errLandlockOld) || errors.Is(err, errKeepCaps)
}

// KernelWall says what the kernel enforces for this session behind the
// supervisor's decisions, for the start line and paddock doctor.
func (s *Session) KernelWall() string {
	wall := s.kernelWall()
	if forceAllow {
		wall += "; TEST BUILD (paddock_forceallow): the supervisor allows every call it would refuse"
	}
	return wall
}

func (s *Session) kernelWall() string {
	switch {
	case s.wallErr == nil && s.backend != "" && s.cfg.StrictWall:
		return "landlock, strict: the kernel keeps ptrace, /proc/PID/mem, process_vm_*, pidfd_getfd and signals inside the agent's processes, and refuses the agent writes to /proc/PID and cgroup files, and mount(2)"
	case s.wallErr == nil && s.backend != "":
		return "landlock: the kernel keeps ptrace, /proc/PID/mem, process_vm_*, pidfd_getfd and signals inside the agent's processes"
	case s.wallErr == nil:
		return "unknown: the agent has not started"
	case landlockMissing(s.wallErr):
		return fmt.Sprintf("none: %v; the supervisor's traps hold alone (docs/threat-model.md)", s.wallErr)
	}
	return fmt.Sprintf("none: %v", s.wallErr)
}

// Seeing the kernel's refusals. A call the supervisor never decides (an
// open of /proc/PID/mem, a signal the filter lets through to a process
// outside the domain, a connection to an abstract socket, and under the
// strict wall a write to a process's file or a mount) is refused by the
// kernel with a bare EACCES or EPERM. Where the kernel logs the domain's
// denials (Landlock ABI 7, auditing on) and paddock may read the records
// (CAP_AUDIT_READ: root), a reader (package llaudit) hands each denial of
// the agent's domain to the session's report pipeline as a refusal, after
// the call has failed: journaled (wall_denied, rule kernel_wall), logged,
// counted for --strict and --report, and told on the caller's stderr
// where the caller is known and still one of the session's processes. The
// message comes late, after the program's own error line or after the
// program has exited (then it is not written), but it is the only word
// the agent gets of why: a bare "Permission denied" on another process's
// file reads like a permission to fix (chmod, sudo), not a wall; the
// pipeline's limits per caller keep a program that meets the wall many
// times (ps, which reads every process's environ) to one message or a
// few a second. Elsewhere these refusals stay silent (docs/limits.md).

// wallBurst is how many refusals of the kernel's wall a Window are handed
// to the pipeline one by one; the rest of a storm is counted
// (report.Pipeline.Overflowed).
const wallBurst = 100

// wallSyncWait bounds how long the session's end waits for the kernel's
// records of what the agent did last; wallSyncUnknown where paddock could
// not tell whether auditing is on.
const (
	wallSyncWait    = 2 * time.Second
	wallSyncUnknown = 250 * time.Millisecond
)

// wallAudit reads the records of the agent's domain's denials.
type wallAudit struct {
	s *Session
	r *llaudit.Reader
	// exes are the programs that may have made the agent's domain:
	// paddock's own (a direct launch), and the init's (a launch through
	// it).
	exes []string
	// auditOn is what the kernel said of auditing: 0 not yet, or it would
	// not say; 1 on; 2 off.
	auditOn atomic.Int32
	// lost counts the times the socket overflowed.
	lost atomic.Int64
	// windowStart and sent rate-limit the refusals handed on (the
	// reader's goroutine only).
	windowStart time.Time
	sent        int
}

// startWallAudit starts reading the kernel's records of the agent's
// domain's denials, before the agent starts, where they can be read, and
// says at debug level whether they are (once the kernel has said whether
// auditing is on).
func (s *Session) startWallAudit() {
	log := s.cfg.Log
	const unseen = "refusals of the kernel's wall are not seen (a bare EACCES or EPERM to the agent, with no message, record or count; docs/limits.md)"
	if err := landlockReady(s.cfg.KeepCaps); err != nil {
		return // no wall: nothing to see
	}
	if abi, err := sys.LandlockABI(); err != nil || abi < llaudit.MinABI {
		log.Debug().Int("landlock_abi", abi).Msg(unseen + ": the kernel logs no Landlock denial before ABI 7 (Linux 6.15)")
		return
	}
	w := &wallAudit{s: s, exes: wallExes(s.cfg.Self)}
	r, err := llaudit.Open(llaudit.Options{
		Ours:   w.ours,
		Denied: w.denied,
		Audit: func(on bool, err error) {
			switch {
			case err != nil:
				// Not told: the end waits for its records a short while.
				log.Debug().Err(err).Msg("refusals of the kernel's wall are read from its audit records where it writes them; paddock could not ask whether auditing is on (that needs CAP_AUDIT_CONTROL), and sees none while it is off")
			case on:
				w.auditOn.Store(1)
				log.Debug().Msg("refusals of the kernel's wall are read from its audit records: each is journaled (wall_denied), counted and told to its caller")
			default:
				w.auditOn.Store(2)
				log.Debug().Msg(unseen + ": auditing is off (an audit daemon, or auditctl -e 1, turns it on)")
			}
		},
		Lost: func() {
			if w.lost.Add(1) == 1 {
				log.Warn().Msg("the kernel's audit records came faster than paddock read them: some refusals of the kernel's wall were lost (counted at the session's end)")
			}
		},
	})
	if err != nil {
		log.Debug().Err(err).Msg(unseen)
		return
	}
	w.r = r
	s.kernelAudit = w
}

// stopWallAudit waits, within bounds, for the records of what the agent
// did before now, hands them on, and stops reading.
func (s *Session) stopWallAudit() {
	w := s.kernelAudit
	if w == nil {
		return
	}
	switch w.auditOn.Load() {
	case 1:
		if !w.r.Sync(wallSyncWait) {
			s.cfg.Log.Debug().Msg("the kernel's audit records of the session's last moments did not come in time; a refusal of the kernel's wall then may be missing")
		}
	case 0:
		w.r.Sync(wallSyncUnknown)
	}
	w.r.Close()
	if n := w.lost.Load(); n > 0 {
		s.cfg.Log.Warn().Int64("overflows", n).Msg("the kernel's audit records came faster than paddock read them this many times: refusals of the kernel's wall among them were lost, uncounted")
	}
}

// wallExes are the programs that may have made the agent's domain:
// this process's, and the init's where self names another.
func wallExes(self string) []string {
	var exes []string
	if exe, err := os.Executable(); err == nil {
		exes = append(exes, exe)
	}
	if self != "" {
		if p, err := filepath.EvalSymlinks(self); err == nil {
			exes = append(exes, p)
		}
	}
	return exes
}

// ours reports whether d is the agent's domain: made by this process (a
// direct launch) or by the agent root before its exec (the init), while it
// ran paddock's program. The agent's own nested domains (a harness that
// sandboxes itself with Landlock) are made by its programs, not paddock's.
func (w *wallAudit) ours(d llaudit.Domain) bool {
	if d.Pid <= 0 || (d.Pid != os.Getpid() && d.Pid != w.s.tree.Root().Pid) {
		return false
	}
	exe := strings.TrimSuffix(d.Exe, " (deleted)")
	return len(w.exes) == 0 || slices.ContainsFunc(w.exes, func(e string) bool { return strings.TrimSuffix(e, " (deleted)") == exe })
}

// denied hands a denial of the agent's domain to the pipeline as a
// refusal (on the reader's goroutine).
func (w *wallAudit) denied(d llaudit.Denial) {
	if d.When.Sub(w.windowStart) >= report.Window {
		w.windowStart, w.sent = d.When, 0
	}
	if w.sent >= wallBurst {
		w.s.pipeline.Overflowed(1)
		return
	}
	w.sent++
	_ = w.s.pipeline.Decided(w.s.wallEvent(d))
}

// wallEvent is the report of a denial of the agent's domain.
func (s *Session) wallEvent(d llaudit.Denial) report.Event {
	wall := "landlock"
	if s.cfg.StrictWall {
		wall = "landlock, strict"
	}
	blockers := strings.Join(d.Blockers, ",")
	call, abi := deniedCall(d)
	caller := "a process of the agent's"
	if d.Caller > 0 {
		caller = fmt.Sprintf("pid %d (%s)", d.Caller, d.Comm)
	}
	dec := policy.Decision{Errno: unix.Errno(-d.Exit), Rule: audit.RuleKernelWall, Refusal: true, Action: audit.WallDenied,
		Syscall: call, Target: d.Target, Message: wallMessage(d, caller)}
	if d.Exit >= 0 {
		dec.Errno = 0
	}
	all := []report.Label{{Key: "wall", Value: wall}, {Key: "blockers", Value: blockers, Logged: true},
		{Key: "target_comm", Value: d.TargetComm}, {Key: "object", Value: d.Path, Logged: true},
		{Key: "comm", Value: d.Comm}, {Key: "exe", Value: d.Exe}, {Key: "domain", Value: strconv.FormatUint(d.Domain, 16)}}
	if d.Caller <= 0 {
		all = append(all, report.Label{Key: "caller", Value: "unknown: the kernel wrote no syscall record for it (a process without an audit context)"})
	}
	if d.Arch != 0 {
		all = append(all, report.Label{Key: "syscall_nr", Value: strconv.Itoa(d.Syscall)})
	}
	var labels []report.Label
	for _, l := range all {
		if l.Value != "" {
			labels = append(labels, l)
		}
	}
	// The caller is told where it is known and is still the session's
	// own: a pid read from a record may have been reused by the time the
	// record is read.
	quiet := true
	if d.Caller > 0 {
		if rel, _, err := s.tree.Classify(d.Caller); err == nil && (rel == audit.RelOwned || rel == audit.RelAgentRoot) {
			quiet = false
		}
	}
	return report.Event{When: d.When, Caller: d.Caller, ABI: abi, Decision: dec, Quiet: quiet, Labels: labels}
}

// deniedCall names the refused call: the syscall, where the record's
// SYSCALL record names one paddock knows, else what was refused.
func deniedCall(d llaudit.Denial) (call, abi string) {
	if d.Arch != 0 {
		sc, a, ok := filter.Lookup(d.Arch, int32(d.Syscall))
		abi = a.String()
		if ok {
			return sc.String(), abi
		}
	}
	switch {
	case slices.Contains(d.Blockers, "ptrace"):
		return "ptrace access", abi
	case slices.Contains(d.Blockers, "scope.signal"):
		return "signal", abi
	case slices.Contains(d.Blockers, "scope.abstract_unix_socket"):
		return "connect", abi
	case slices.Contains(d.Blockers, "fs.change_topology"):
		return "mount", abi
	case slices.Contains(d.Blockers, "fs.write_file"), slices.Contains(d.Blockers, "fs.truncate"):
		return "write", abi
	}
	return strings.Join(d.Blockers, ","), abi
}

// wallMessage explains a denial of the agent's domain to its caller.
func wallMessage(d llaudit.Denial, caller string) string {
	const seen = "paddock's Landlock wall; seen in the kernel's audit log after the call had failed"
	target := fmt.Sprintf("pid %d (%s)", d.Target, d.TargetComm)
	object := d.Path
	if object == "" {
		object = fmt.Sprintf("a file (inode %d on %s)", d.Ino, d.Dev)
	}
	switch {
	case slices.Contains(d.Blockers, "ptrace"):
		return fmt.Sprintf("paddock: the kernel refused %s ptrace-class access to %s, a process outside this session: the agent's processes may not trace it, nor read or write its memory, environment or descriptors (/proc/%d/mem, environ, fd, ...), whatever they ask (%s). Way out: work with the processes the agent started itself.",
			caller, target, d.Target, seen)
	case slices.Contains(d.Blockers, "scope.signal"):
		return fmt.Sprintf("paddock: the kernel refused a signal from %s to %s, a process outside this session: the agent's processes signal only their own (%s; a SIGIO or SIGURG of a descriptor's owner is one). Way out: signal the processes the agent started by their PID.",
			caller, target, seen)
	case slices.Contains(d.Blockers, "scope.abstract_unix_socket"):
		return fmt.Sprintf("paddock: the kernel refused %s a connection to the abstract unix socket %s, bound by a process outside this session (%s). Way out: connect through the server's socket file where it has one (X11: /tmp/.X11-unix/X0), or to a server the agent started itself.",
			caller, object, seen)
	case slices.Contains(d.Blockers, "fs.change_topology"):
		return fmt.Sprintf("paddock: the kernel refused %s a mount, unmount or pivot_root: under --strict-wall the agent's domain forbids them (%s). Way out: run the session without --strict-wall where the agent needs bwrap, unshare -m or a rootless container.",
			caller, seen)
	case slices.ContainsFunc(d.Blockers, func(b string) bool { return strings.HasPrefix(b, "fs.") }):
		return fmt.Sprintf("paddock: the kernel refused %s %s %s: under --strict-wall no process's file in /proc and no cgroup file may be written, the agent's own included (%s). Way out: run the session without --strict-wall where the agent must write such files.",
			caller, fsVerb(d.Blockers), object, seen)
	}
	return fmt.Sprintf("paddock: the kernel refused %s %s (%s).", caller, strings.Join(d.Blockers, ","), seen)
}

// fsVerb says what a strict wall's denial refused, from its blockers.
func fsVerb(blockers []string) string {
	switch {
	case slices.Contains(blockers, "fs.write_file"):
		return "writing"
	case slices.Contains(blockers, "fs.truncate"):
		return "truncating"
	case slices.Contains(blockers, "fs.refer"):
		return "moving or linking"
	}
	return strings.Join(blockers, ",") + " on"
}
