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

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/sys"
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
