// Package llaudit reads the kernel's audit records of Landlock denials
// (Landlock ABI 7, Linux 6.15+), so that a refusal the kernel's wall makes
// behind paddock's supervisor is seen: the supervisor never decides such a
// call (an open of /proc/PID/mem, a signal the Landlock scope refuses, a
// connection to an abstract socket bound outside the agent's domain, and
// under --strict-wall a write to a process's or cgroup's file), the kernel
// refuses it with a bare EACCES or EPERM, and only its audit record says
// that it happened.
//
// A Reader binds a NETLINK_AUDIT socket to the read-only multicast group
// (AUDIT_NLGRP_READLOG, Linux 3.16+), which needs CAP_AUDIT_READ in the
// initial user namespace and gets only the records of the initial network
// namespace. The group is a copy of the record stream: it takes nothing
// from auditd (which reads its own unicast copy) or from journald (which
// reads the group too), and a reader that is not there loses nothing
// anyone else would have had. The kernel writes the records only while
// auditing is on (auditd, or auditctl -e 1), and writes a domain's denials
// after exec only where the domain asked for it
// (LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON, which paddock's domain does).
//
// The records (security/landlock/audit.c, include/uapi/linux/audit.h):
//
//	type=1423 AUDIT_LANDLOCK_ACCESS  domain=1a2b3c4d5 blockers=ptrace opid=4562 ocomm="sleep"
//	type=1424 AUDIT_LANDLOCK_DOMAIN  domain=1a2b3c4d5 status=allocated mode=enforcing pid=4577 uid=65534 exe="/usr/bin/paddock" comm="paddock"
//	type=1424 AUDIT_LANDLOCK_DOMAIN  domain=1a2b3c4d5 status=deallocated denials=2
//
// A denial names its domain (the youngest one that refused), what refused
// it (blockers: ptrace, scope.signal, scope.abstract_unix_socket,
// fs.write_file, fs.change_topology, ...) and the object (opid and ocomm for
// a process, path for a file or a socket), but not the process that was
// refused: that is in the AUDIT_SYSCALL record of the same event (the same
// serial), which the kernel writes at the call's exit only where the
// process has an audit context (auditing was on when it was forked, and no
// rule such as "-a task,never" turned it off). A domain's "allocated"
// record comes once, right after its first logged denial, and names the
// process that made the domain (its pid in the initial PID namespace, its
// executable): that is how a reader tells its own domain from others.
package llaudit

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Record types the reader uses (include/uapi/linux/audit.h; all in
// golang.org/x/sys/unix as AUDIT_*).
const (
	typeSyscall  = 1300 // AUDIT_SYSCALL
	typeEOE      = 1320 // AUDIT_EOE: the end of a multi-record event
	typeListener = 1335 // AUDIT_EVENT_LISTENER: a socket joined or left the group
	typeAccess   = 1423 // AUDIT_LANDLOCK_ACCESS
	typeDomain   = 1424 // AUDIT_LANDLOCK_DOMAIN
)

// Stamp is an audit event's identity: the time the kernel gave it and its
// serial. The records of one event share it.
type Stamp struct {
	When   time.Time
	Serial uint64
}

// Denial is one AUDIT_LANDLOCK_ACCESS record, with what the AUDIT_SYSCALL
// record of the same event adds where there is one.
type Denial struct {
	Stamp
	// Domain is the id of the domain that refused (hexadecimal in the
	// record).
	Domain uint64
	// Blockers are the accesses refused, in Landlock's words (ptrace,
	// scope.signal, scope.abstract_unix_socket, fs.write_file,
	// fs.truncate, fs.refer, fs.change_topology, net.connect_tcp, ...).
	Blockers []string
	// Target is the process aimed at (opid, in the initial PID namespace)
	// and TargetComm its name (ocomm), for ptrace and signals; 0 and ""
	// otherwise.
	Target     int
	TargetComm string
	// Path is the file or socket aimed at: a path, or an abstract socket's
	// name as "@name" ("" when the record names none).
	Path string
	// Dev and Ino name the file's filesystem and inode, where the record
	// has them.
	Dev string
	Ino uint64

	// Caller is the process that was refused, from the AUDIT_SYSCALL
	// record (0: the event had none); Comm and Exe its name and program,
	// Arch (AUDIT_ARCH_*) and Syscall the call, Exit what it returned.
	Caller  int
	Comm    string
	Exe     string
	Arch    uint32
	Syscall int
	Exit    int
}

// Domain is one AUDIT_LANDLOCK_DOMAIN record.
type Domain struct {
	Stamp
	ID uint64
	// Status is "allocated" (the domain's first logged denial) or
	// "deallocated" (its last process is gone).
	Status string
	// Pid is the process that made the domain (its thread group, in the
	// initial PID namespace), UID its user, Exe and Comm its program and
	// name then: of an allocated record.
	Pid       int
	UID       int
	Exe, Comm string
	// Denials is how many the domain refused in all, logged or not: of a
	// deallocated record.
	Denials uint64
}

// errMalformed marks a record that does not read as its type's.
var errMalformed = errors.New("malformed audit record")

// splitStamp reads the "audit(SECONDS.MILLIS:SERIAL): " head of a record's
// text and returns the stamp and the rest.
func splitStamp(text string) (Stamp, string, error) {
	rest, ok := strings.CutPrefix(text, "audit(")
	if !ok {
		return Stamp{}, "", fmt.Errorf("%w: no audit( head in %q", errMalformed, clip(text))
	}
	head, body, ok := strings.Cut(rest, "): ")
	if !ok {
		head, ok = strings.CutSuffix(rest, "):")
		if !ok {
			return Stamp{}, "", fmt.Errorf("%w: unterminated head in %q", errMalformed, clip(text))
		}
	}
	ts, serial, ok := strings.Cut(head, ":")
	if !ok {
		return Stamp{}, "", fmt.Errorf("%w: no serial in %q", errMalformed, clip(text))
	}
	sec, frac, _ := strings.Cut(ts, ".")
	s, err1 := strconv.ParseInt(sec, 10, 64)
	ms, err2 := strconv.ParseInt(frac, 10, 64)
	n, err3 := strconv.ParseUint(serial, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || len(frac) != 3 {
		return Stamp{}, "", fmt.Errorf("%w: bad head %q", errMalformed, head)
	}
	return Stamp{When: time.Unix(s, ms*int64(time.Millisecond)), Serial: n}, body, nil
}

// fields reads a record's key=value pairs. A value is a quoted string
// (the kernel quotes an untrusted string only when it holds no quote,
// space or control character), or runs to the next space.
func fields(body string) map[string]string {
	m := map[string]string{}
	for body != "" {
		body = strings.TrimLeft(body, " ")
		key, rest, ok := strings.Cut(body, "=")
		if !ok || key == "" || strings.ContainsRune(key, ' ') {
			break
		}
		var val string
		if strings.HasPrefix(rest, `"`) {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				break
			}
			val, rest = rest[:end+2], rest[end+2:]
		} else {
			val, rest, _ = strings.Cut(rest, " ")
		}
		if _, dup := m[key]; !dup {
			m[key] = val
		}
		body = rest
	}
	return m
}

// untrusted decodes a value the kernel wrote with
// audit_log_untrustedstring: quoted as it is, or hexadecimal where the
// string holds a quote, a space or a control character, or "(null)".
func untrusted(v string) string {
	switch {
	case v == "" || v == "(null)":
		return ""
	case len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"':
		return v[1 : len(v)-1]
	}
	b, err := hex.DecodeString(v)
	if err != nil {
		return v
	}
	return string(b)
}

// socketPath decodes a unix socket's path= value: a pathname, or an
// abstract name (hexadecimal, starting with a NUL byte), shown as "@name".
func socketPath(v string) string {
	p := untrusted(v)
	if strings.HasPrefix(p, "\x00") {
		return "@" + p[1:]
	}
	return p
}

// parseAccess reads an AUDIT_LANDLOCK_ACCESS record's body.
func parseAccess(st Stamp, body string) (Denial, error) {
	f := fields(body)
	d := Denial{Stamp: st}
	id, err := strconv.ParseUint(f["domain"], 16, 64)
	if err != nil || f["blockers"] == "" {
		return Denial{}, fmt.Errorf("%w: Landlock access record without domain or blockers: %q", errMalformed, clip(body))
	}
	d.Domain, d.Blockers = id, strings.Split(f["blockers"], ",")
	if v, ok := f["opid"]; ok {
		d.Target, _ = strconv.Atoi(v)
		d.TargetComm = untrusted(f["ocomm"])
	}
	if v, ok := f["path"]; ok {
		d.Path = socketPath(v)
	}
	d.Dev = untrusted(f["dev"])
	d.Ino, _ = strconv.ParseUint(f["ino"], 10, 64)
	return d, nil
}

// parseDomain reads an AUDIT_LANDLOCK_DOMAIN record's body.
func parseDomain(st Stamp, body string) (Domain, error) {
	f := fields(body)
	id, err := strconv.ParseUint(f["domain"], 16, 64)
	if err != nil || f["status"] == "" {
		return Domain{}, fmt.Errorf("%w: Landlock domain record without domain or status: %q", errMalformed, clip(body))
	}
	d := Domain{Stamp: st, ID: id, Status: f["status"]}
	d.Pid, _ = strconv.Atoi(f["pid"])
	d.UID, _ = strconv.Atoi(f["uid"])
	d.Exe, d.Comm = untrusted(f["exe"]), untrusted(f["comm"])
	d.Denials, _ = strconv.ParseUint(f["denials"], 10, 64)
	return d, nil
}

// syscallFacts is what an AUDIT_SYSCALL record says of the refused call.
type syscallFacts struct {
	pid       int
	comm, exe string
	arch      uint32
	nr, exit  int
}

// parseSyscall reads an AUDIT_SYSCALL record's body.
func parseSyscall(body string) (syscallFacts, error) {
	f := fields(body)
	var s syscallFacts
	var err error
	if s.pid, err = strconv.Atoi(f["pid"]); err != nil || s.pid <= 0 {
		return syscallFacts{}, fmt.Errorf("%w: syscall record without a pid: %q", errMalformed, clip(body))
	}
	arch, _ := strconv.ParseUint(f["arch"], 16, 32)
	s.arch = uint32(arch)
	s.nr, _ = strconv.Atoi(f["syscall"])
	s.exit, _ = strconv.Atoi(f["exit"])
	s.comm, s.exe = untrusted(f["comm"]), untrusted(f["exe"])
	return s, nil
}

// listener is what an AUDIT_EVENT_LISTENER record says: which process
// (and the name of its thread) joined or left the group.
type listener struct {
	pid  int
	comm string
	op   string
}

// parseListener reads an AUDIT_EVENT_LISTENER record's body.
func parseListener(body string) listener {
	f := fields(body)
	pid, _ := strconv.Atoi(f["pid"])
	return listener{pid: pid, comm: untrusted(f["comm"]), op: f["op"]}
}

// clip shortens a record's text for an error.
func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
