package journal

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A mirror sends every record, as it is written, to a log the agent cannot
// rewrite: journald or syslog, which belong to root. The journal file stays
// the primary copy; the mirror is the one to compare it with (a same-user
// agent can rewrite the file, and even fix the chain up, but not the
// system's log). Sends never block: a datagram the daemon cannot take now
// is dropped and reported (Options.MirrorError), and never fails Append.
// The mirror gets every record, whatever became of its write to the file:
// a record the file could not take is sent with the key "journal_error"
// saying why (Journal.Append), so that an agent that breaks the file (holds
// its lock, swaps it for a link) cannot keep a record out of both.

// MirrorKind names where a mirror sends the records.
type MirrorKind string

// The mirrors.
const (
	// MirrorJournald sends each record to systemd-journald's native socket
	// as one entry with a field per key (see journaldEntry).
	MirrorJournald MirrorKind = "journald"
	// MirrorSyslog sends each record to the syslog socket as an RFC 5424
	// message whose MSG is the record's JSON line.
	MirrorSyslog MirrorKind = "syslog"
)

// The standard sockets of the mirrors.
const (
	// JournaldSocket is systemd-journald's native protocol socket.
	JournaldSocket = "/run/systemd/journal/socket"
	// SyslogSocket is the local syslog socket.
	SyslogSocket = "/dev/log"
)

// EnvMirror names the environment variable that picks a mirror when
// paddock run is given no --journal-mirror.
const EnvMirror = "PADDOCK_JOURNAL_MIRROR"

// syslogFacility is LOG_AUTHPRIV: security messages, which syslog daemons
// usually keep in a file only root reads (/var/log/auth.log, /var/log/secure).
const syslogFacility = 10

// ParseMirror reads a mirror's name: "journald", "syslog", or "" or "none"
// for none.
func ParseMirror(s string) (MirrorKind, error) {
	switch s {
	case "", "none":
		return "", nil
	case string(MirrorJournald), string(MirrorSyslog):
		return MirrorKind(s), nil
	}
	return "", fmt.Errorf("journal mirror %q: want journald, syslog or none", s)
}

// mirror is an Options.Mirror in use. A nil *mirror sends nothing.
type mirror struct {
	kind    MirrorKind
	addr    string
	fd      int
	host    string
	pid     int
	report  func(error)
	failing bool // the last send failed (report once per outage)
}

// newMirror returns o's mirror, or nil when there is none.
func newMirror(o Options) (*mirror, error) {
	kind, err := ParseMirror(string(o.Mirror))
	if err != nil || kind == "" {
		return nil, err
	}
	m := &mirror{kind: kind, addr: o.MirrorSocket, pid: os.Getpid(), report: o.MirrorError, host: "-"}
	if m.addr == "" {
		m.addr = map[MirrorKind]string{MirrorJournald: JournaldSocket, MirrorSyslog: SyslogSocket}[kind]
	}
	if h, err := os.Hostname(); err == nil && h != "" && !strings.ContainsFunc(h, func(r rune) bool { return r <= ' ' || r > '~' }) {
		m.host = h
	}
	m.fd, err = unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("mirror to %s: socket: %w", kind, err)
	}
	return m, nil
}

// send mirrors line, one record as written (with its '\n'). It returns
// the send's error (nil without a mirror).
func (m *mirror) send(line []byte) error {
	if m == nil {
		return nil
	}
	raw := bytes.TrimSuffix(line, []byte{'\n'})
	var msg []byte
	if m.kind == MirrorJournald {
		msg = journaldEntry(raw)
	} else {
		msg = m.syslogMessage(raw, time.Now())
	}
	err := retryEINTR(func() error {
		return unix.Sendto(m.fd, msg, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, &unix.SockaddrUnix{Name: m.addr})
	})
	if err == nil {
		m.failing = false
		return nil
	}
	if !m.failing && m.report != nil {
		m.report(fmt.Errorf("journal mirror to %s (%s): %w; records still go to the journal file, and this is reported once until a send succeeds again", m.kind, m.addr, err))
	}
	m.failing = true
	return err
}

// withField returns line (a JSON object and '\n', from encode) with key
// and the string value added as its last key: a record the file could not
// take, as mirrored.
func withField(line []byte, key, value string) []byte {
	v, _ := json.Marshal(value) // a string always encodes
	out := make([]byte, 0, len(line)+len(key)+len(v)+4)
	out = append(out, line[:len(line)-2]...) // "}\n"
	out = append(out, ',', '"')
	out = append(out, key...)
	out = append(out, '"', ':')
	out = append(out, v...)
	return append(out, "}\n"...)
}

func (m *mirror) close() {
	if m != nil && m.fd >= 0 {
		unix.Close(m.fd)
		m.fd = -1
	}
}

// fields splits a record line into its keys, each with its value as text: a
// JSON string unquoted, anything else as its JSON.
func fields(raw []byte) map[string]string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return nil
	}
	out := make(map[string]string, len(obj))
	for k, v := range obj {
		var s string
		if len(v) > 0 && v[0] == '"' && json.Unmarshal(v, &s) == nil {
			out[k] = s
		} else {
			out[k] = string(v)
		}
	}
	return out
}

// priority is the syslog severity of a record: warning (4) for a refusal,
// notice (5) for anything else paddock journals.
func priority(action string) int {
	if strings.HasSuffix(action, "_denied") {
		return 4
	}
	return 5
}

// journaldEntry renders a record as a journald native-protocol datagram:
//
//	MESSAGE            the record's message, else "paddock: ACTION pid PID (rule RULE)"
//	PRIORITY           4 for a refusal (*_denied), else 5
//	SYSLOG_IDENTIFIER  paddock
//	SYSLOG_FACILITY    10 (authpriv)
//	PADDOCK_<KEY>      each key of the record, upper-cased, other characters
//	                   than A-Z, 0-9 and _ as _: PADDOCK_TS, PADDOCK_ACTION,
//	                   PADDOCK_PID, PADDOCK_RULE, PADDOCK_PREV, ...; strings
//	                   as they are, other values as JSON
//	PADDOCK_HASH       the record's chain hash (what the next record's prev
//	                   is); only for a record written to the file (one with
//	                   "prev")
//	PADDOCK_RECORD     the record's JSON line, exactly as written to the file
//	                   (a record the file could not take: as it would have
//	                   been, without "prev", with "journal_error" saying why,
//	                   which is also PADDOCK_JOURNAL_ERROR)
//
// A value holding a newline is sent in the protocol's binary-safe form.
func journaldEntry(raw []byte) []byte {
	f := fields(raw)
	msg := f["message"]
	if msg == "" {
		msg = "paddock: " + f["action"] + " pid " + f["pid"]
		if r := f["rule"]; r != "" {
			msg += " (rule " + r + ")"
		}
	}
	var b bytes.Buffer
	put := func(k, v string) {
		if !strings.Contains(v, "\n") {
			b.WriteString(k + "=" + v + "\n")
			return
		}
		b.WriteString(k + "\n")
		b.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(v))))
		b.WriteString(v + "\n")
	}
	put("MESSAGE", msg)
	put("PRIORITY", strconv.Itoa(priority(f["action"])))
	put("SYSLOG_IDENTIFIER", "paddock")
	put("SYSLOG_FACILITY", strconv.Itoa(syslogFacility))
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		put(journaldName(k), f[k])
	}
	if _, ok := f["prev"]; ok {
		put("PADDOCK_HASH", hashLine(raw))
	}
	put("PADDOCK_RECORD", string(raw))
	return b.Bytes()
}

// journaldName turns a record key into a journald field name: PADDOCK_ and
// the key upper-cased, characters other than A-Z, 0-9 and _ replaced by _,
// cut to journald's 64 characters.
func journaldName(key string) string {
	b := []byte("PADDOCK_" + strings.ToUpper(key))
	for i, c := range b {
		if !('A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b[:min(len(b), 64)])
}

// syslogMessage renders a record as an RFC 5424 message:
//
//	<PRI>1 TIMESTAMP HOSTNAME paddock PROCID MSGID - MSG
//
// PRI is facility authpriv (10) times 8 plus the record's priority,
// TIMESTAMP is now (UTC, microseconds), PROCID paddock's pid, MSGID the
// record's action, no structured data, and MSG the record's JSON line.
func (m *mirror) syslogMessage(raw []byte, now time.Time) []byte {
	f := fields(raw)
	action := f["action"]
	if action == "" || len(action) > 32 || strings.ContainsFunc(action, func(r rune) bool { return r <= ' ' || r > '~' }) {
		action = "-"
	}
	head := fmt.Sprintf("<%d>1 %s %s paddock %d %s - ", syslogFacility*8+priority(f["action"]),
		now.UTC().Format("2006-01-02T15:04:05.000000Z07:00"), m.host, m.pid, action)
	return append([]byte(head), raw...)
}
