package control

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/procfs"
)

// SessionDir is a running session of the caller's, as its directory shows
// it: found from outside the session, by anyone running as its user.
type SessionDir struct {
	// Dir is the session directory.
	Dir string `json:"dir"`
	// Socket is its control socket, which takes connections.
	Socket string `json:"socket"`
	// Owner is the paddock that runs the session, from the directory's
	// owner record (zero when the record cannot be read: an older
	// paddock's directory).
	Owner procfs.Identity `json:"owner"`
}

// SessionBases are the directories a session directory of this user may
// be in, whatever the environment of the paddock that made it
// (runtimeDirs reads the caller's): $XDG_RUNTIME_DIR, /run/user/EUID,
// $TMPDIR, /dev/shm and /tmp, those that exist, each once.
func SessionBases() []string {
	var cands []string
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) {
		cands = append(cands, d)
	}
	cands = append(cands, "/run/user/"+strconv.Itoa(os.Geteuid()))
	if os.Getenv("TMPDIR") != "" {
		cands = append(cands, os.TempDir())
	}
	cands = append(cands, shmDir, "/tmp")
	var out []string
	seen := map[string]bool{}
	for _, d := range cands {
		d = filepath.Clean(d)
		if seen[d] {
			continue
		}
		seen[d] = true
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			out = append(out, d)
		}
	}
	return out
}

// Sessions lists the caller's running sessions under bases: the session
// directories paddock makes (a real directory of the caller's euid, mode
// 0700, named paddock-DIGITS) whose control socket takes a connection.
// Staging directories, and directories whose socket refuses (their paddock
// is gone: Sweep's), are left out. errs say which bases could not be read.
func Sessions(bases []string) (found []SessionDir, errs []string) {
	euid := os.Geteuid()
	for _, base := range bases {
		bfd, err := unix.Open(base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			if !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Sprintf("sessions: open %s: %v", base, err))
			}
			continue
		}
		names, err := dirNames(bfd)
		if err != nil {
			errs = append(errs, fmt.Sprintf("sessions: read %s: %v", base, err))
			unix.Close(bfd)
			continue
		}
		sort.Strings(names)
		for _, name := range names {
			if !sessionDirName(name) {
				continue
			}
			dfd, _, ok := openOwnDir(bfd, name, euid)
			if !ok {
				continue
			}
			if socketState(dfd) == sockListening {
				s := SessionDir{Dir: filepath.Join(base, name), Socket: filepath.Join(base, name, socketName)}
				s.Owner, _ = readOwner(dfd, euid)
				found = append(found, s)
			}
			unix.Close(dfd)
		}
		unix.Close(bfd)
	}
	return found, errs
}
