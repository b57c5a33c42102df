package procfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Identity names a process so that another process can tell later, even
// after a crash, whether it still runs: its pid and start time (which
// together survive pid reuse), the boot it ran in (start times count from
// boot), and its PID namespace (pids mean something only in one). paddock
// records its own in the files a killed paddock leaves behind (a session
// directory's owner record, the journal's session_started record), so
// that a later paddock can tell them from a live session's.
type Identity struct {
	Pid       int    `json:"pid"`
	StartTime uint64 `json:"start_time"`
	// BootID is /proc/sys/kernel/random/boot_id ("" when it cannot be read).
	BootID string `json:"boot_id,omitempty"`
	// PidNS is the inode of the PID namespace whose pids Pid and the /proc
	// read are in (0: not known, e.g. /proc is another namespace's).
	PidNS uint64 `json:"pid_ns,omitempty"`
}

// Liveness is whether the process an Identity names still runs.
type Liveness int

// What Liveness can tell.
const (
	// Unknown: it cannot be told from here (another PID namespace, an
	// identity without its namespace, /proc unreadable).
	Unknown Liveness = iota
	// Running: a process with that pid and start time runs in this boot.
	Running
	// Gone: it ran in another boot, or no process of this namespace has
	// that pid and start time (or it is a zombie: it has exited).
	Gone
)

func (l Liveness) String() string {
	switch l {
	case Running:
		return "running"
	case Gone:
		return "gone"
	}
	return "unknown"
}

// Self is the calling process's Identity. Its pid is the one /proc shows
// for it; when that is not os.Getpid() (a /proc mounted for another PID
// namespace), PidNS is left 0, so that nobody judges it by that pid.
func (fs FS) Self() (Identity, error) {
	var buf [1024]byte
	n, err := readSmall(fs.Root+"/self/stat", buf[:])
	if err != nil {
		return Identity{}, err
	}
	st, err := ParseStat(buf[:n])
	if err != nil {
		return Identity{}, fmt.Errorf("read %s/self/stat: %w", fs.Root, err)
	}
	id := Identity{Pid: st.Pid, StartTime: st.StartTime, BootID: fs.BootID()}
	if st.Pid == os.Getpid() {
		var ns unix.Stat_t
		if unix.Stat(fs.Root+"/self/ns/pid", &ns) == nil {
			id.PidNS = ns.Ino
		}
	}
	return id, nil
}

// BootID is this boot's id (/proc/sys/kernel/random/boot_id), or "" when it
// cannot be read.
func (fs FS) BootID() string {
	var buf [64]byte
	n, err := readSmall(fs.Root+"/sys/kernel/random/boot_id", buf[:])
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(buf[:n]))
}

// Liveness says whether the process id names still runs, as seen by self
// (the caller's own Identity, from Self). An identity of another boot is
// Gone; one of another PID namespace, or whose namespace is not known on
// either side, is Unknown; otherwise /proc says.
func (fs FS) Liveness(id, self Identity) Liveness {
	if id.BootID != "" && self.BootID != "" && id.BootID != self.BootID {
		return Gone
	}
	if id.PidNS == 0 || self.PidNS == 0 || id.PidNS != self.PidNS || id.Pid <= 0 {
		return Unknown
	}
	if id.Pid == self.Pid {
		if id.StartTime == self.StartTime {
			return Running
		}
		return Gone
	}
	st, err := fs.Stat(id.Pid)
	switch {
	case errors.Is(err, ErrNotFound):
		return Gone
	case err != nil:
		return Unknown
	case st.StartTime != id.StartTime || st.State == 'Z' || st.State == 'X':
		return Gone
	}
	return Running
}
