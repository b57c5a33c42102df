package llaudit

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/sys"
)

// MinABI is the Landlock ABI whose denials the kernel logs to audit
// (Linux 6.15).
const MinABI = 7

// Why a Probe saw no record.
var (
	// ErrLandlockOld: the kernel's Landlock logs no denial (before ABI 7).
	ErrLandlockOld = errors.New("Landlock before ABI 7 (Linux 6.15) logs no denial to audit")
	// ErrAuditOff: auditing is disabled, so the kernel logs nothing.
	ErrAuditOff = errors.New("auditing is disabled (no audit daemon turned it on; auditctl -e 1 does)")
	// ErrNoRecord: auditing may be on, but the probe's denial did not
	// come.
	ErrNoRecord = errors.New("the probe's own Landlock denial never came (another network namespace than the initial one gets no audit record, and an audit rule may filter them out)")
)

// Probe finds out whether this process sees the kernel's records of
// Landlock denials, as a session's reader would: it opens a reader, has a
// throwaway thread enter a Landlock domain of its own and be refused a
// connection to an abstract unix socket this process bound outside it
// (the kernel logs the denials of a domain's own program), and waits at
// most timeout for that denial's record. nil: it came. Otherwise the
// error says why not (ErrLandlockOld, ErrNoAudit, ErrNotPermitted,
// ErrAuditOff, ErrNoRecord, or what failed). The denial stays in the
// system's audit log, and in the kernel's log where no audit daemon
// listens.
func Probe(timeout time.Duration) error {
	abi, err := sys.LandlockABI()
	if err != nil {
		return fmt.Errorf("llaudit: Landlock: %w", err)
	}
	if abi < MinABI {
		return fmt.Errorf("llaudit: ABI %d: %w", abi, ErrLandlockOld)
	}
	var nonce [8]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return fmt.Errorf("llaudit: %w", err)
	}
	name := fmt.Sprintf("paddock-llaudit-probe-%d-%s", os.Getpid(), hex.EncodeToString(nonce[:]))
	seen := make(chan struct{})
	off := make(chan error, 1)
	r, err := Open(Options{
		Ours: func(d Domain) bool { return d.Pid == os.Getpid() },
		Denied: func(d Denial) {
			if d.Path == "@"+name && slices.Contains(d.Blockers, "scope.abstract_unix_socket") {
				close(seen)
			}
		},
		Audit: func(enabled bool, err error) {
			if err == nil && !enabled {
				off <- ErrAuditOff
			}
		},
	})
	if err != nil {
		return err
	}
	defer r.Close()
	if err := refusedConnect(name); err != nil {
		return err
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-seen:
		return nil
	case err := <-off:
		return fmt.Errorf("llaudit: %w", err)
	case <-t.C:
		return fmt.Errorf("llaudit: %w", ErrNoRecord)
	}
}

// refusedConnect binds the abstract unix socket @name on this thread and
// has a throwaway thread, in a Landlock domain that scopes abstract
// sockets, try to connect to it: the kernel refuses and logs it.
func refusedConnect(name string) error {
	l, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("llaudit: probe socket: %w", err)
	}
	defer unix.Close(l)
	if err := unix.Bind(l, &unix.SockaddrUnix{Name: "@" + name}); err != nil {
		return fmt.Errorf("llaudit: bind @%s: %w", name, err)
	}
	if err := unix.Listen(l, 1); err != nil {
		return fmt.Errorf("llaudit: listen @%s: %w", name, err)
	}
	res := make(chan error, 1)
	go func() {
		// Never unlocked: the thread, in its domain, ends with this
		// goroutine.
		runtime.LockOSThread()
		res <- connectFromDomain(name)
	}()
	return <-res
}

// connectFromDomain enters a Landlock domain scoping abstract sockets on
// the calling thread, then connects to @name, which must be refused.
func connectFromDomain(name string) error {
	rs, err := sys.LandlockCreateRuleset(0, unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET)
	if err != nil {
		return fmt.Errorf("llaudit: landlock_create_ruleset: %w", err)
	}
	defer unix.Close(rs)
	err = sys.LandlockRestrict(rs, 0)
	if errors.Is(err, unix.EPERM) {
		// Without CAP_SYS_ADMIN: no_new_privs, on this thread alone.
		if perr := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); perr != nil {
			return fmt.Errorf("llaudit: prctl(PR_SET_NO_NEW_PRIVS): %w", perr)
		}
		err = sys.LandlockRestrict(rs, 0)
	}
	if err != nil {
		return fmt.Errorf("llaudit: landlock_restrict_self: %w", err)
	}
	c, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("llaudit: probe socket: %w", err)
	}
	defer unix.Close(c)
	if err := unix.Connect(c, &unix.SockaddrUnix{Name: "@" + name}); !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("llaudit: the probe's connect from its domain returned %v, not the scope's EPERM", err)
	}
	return nil
}
