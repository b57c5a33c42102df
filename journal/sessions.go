package journal

import (
	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/internal/procfs"
)

// A session paddock run journals begins with a session_started record,
// before its agent starts, and ends with a session_ended record. A
// session_started with no session_ended after it is a session that has
// not ended yet, or one whose paddock died without its last word (killed
// with SIGKILL, an OOM kill, a machine that stopped); the start record
// names paddock by pid, start time, boot and PID namespace, so that a
// reader can tell the two apart (procfs.Liveness).

// Record keys of a session_started record, beside pid: together they are
// the procfs.Identity of the paddock that ran the session.
const (
	KeyStartTime = "start_time"
	KeyBootID    = "boot_id"
	KeyPidNS     = "pid_ns"
)

// IdentityFields are the fields a session_started record carries for id
// (its pid is the record's own).
func IdentityFields(id procfs.Identity) map[string]any {
	f := map[string]any{KeyStartTime: id.StartTime}
	if id.BootID != "" {
		f[KeyBootID] = id.BootID
	}
	if id.PidNS != 0 {
		f[KeyPidNS] = id.PidNS
	}
	return f
}

// Unfinished is a session that started and has no end record (so far).
type Unfinished struct {
	// ID is the session's id (the records' "session").
	ID string
	// Paddock is who ran it, as its start record says; Known is false
	// when the record does not say (then Liveness is Unknown).
	Paddock procfs.Identity
	Known   bool
	// Last is the session's last record, and At where it was, as the
	// caller numbered it in Add.
	Last map[string]any
	At   Pos
}

// Pos is where a record was read: the index of its file in the history and
// its line number in that file.
type Pos struct{ File, Line int }

// Sessions follows sessions through records read in order (oldest first)
// and says which have started and not ended. Records of no session, and
// sessions whose start record was not read, are not followed.
type Sessions struct {
	open  map[string]*Unfinished
	order []string // ids of open sessions, as started
}

// Add takes the next record, read at pos.
func (s *Sessions) Add(pos Pos, rec map[string]any) {
	id, _ := rec[SessionKey].(string)
	if id == "" {
		return
	}
	switch action, _ := rec["action"].(string); audit.Action(action) {
	case audit.SessionStarted:
		if s.open == nil {
			s.open = map[string]*Unfinished{}
		}
		s.order = append(s.order, id)
		u := &Unfinished{ID: id}
		u.Paddock, u.Known = identityOf(rec)
		s.open[id] = u
	case audit.SessionEnded:
		delete(s.open, id)
		return
	}
	if u, ok := s.open[id]; ok {
		u.Last, u.At = rec, pos
	}
}

// Unfinished lists the sessions started and not ended, in the order they started.
func (s *Sessions) Unfinished() []Unfinished {
	var out []Unfinished
	listed := map[string]bool{}
	for _, id := range s.order {
		if u, ok := s.open[id]; ok && !listed[id] {
			listed[id] = true
			out = append(out, *u)
		}
	}
	return out
}

// identityOf reads the paddock identity of a session_started record.
func identityOf(rec map[string]any) (procfs.Identity, bool) {
	pid, ok1 := integer(rec["pid"])
	start, ok2 := integer(rec[KeyStartTime])
	if !ok1 || !ok2 || pid <= 0 || start < 0 {
		return procfs.Identity{}, false
	}
	id := procfs.Identity{Pid: int(pid), StartTime: uint64(start)}
	id.BootID, _ = rec[KeyBootID].(string)
	if ns, ok := integer(rec[KeyPidNS]); ok && ns > 0 {
		id.PidNS = uint64(ns)
	}
	return id, true
}
