package journal

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/internal/signame"
)

// TableWidth is the width, in columns, that a table row fits in unless the
// Table is Wide.
const TableWidth = 120

// Column widths. They are fixed, not sized to the records, so that rows
// printed one at a time (while following the journal) line up with those
// printed before: TIME holds an RFC 3339 UTC time to the second, ACTION the
// longest known action, PID the largest pid Linux hands out (4194304).
const (
	timeWidth   = len("2006-01-02T15:04:05Z")
	actionWidth = len("self_lifeline_override")
	pidWidth    = 7
	gap         = "  "
)

// Table prints journal records as a table for people: a header, then one
// row per record with the time (UTC, RFC 3339, to the second), the action,
// the pid, and a one-line summary built from the record's other fields. The
// record's message is left out (unless Wide), since the summary already
// carries its facts; --json shows records whole.
//
// Everything taken from a record is made safe for a terminal: control
// characters, invalid UTF-8 and invisible formatting characters such as
// bidi overrides are escaped, so a record quoting an agent's argv cannot
// move the cursor or hide text.
type Table struct {
	// W receives the table.
	W io.Writer
	// Wide prints the whole summary followed by the record's message,
	// instead of cutting rows to TableWidth columns.
	Wide bool

	headerDone bool
}

// Row writes one record, preceded by the header if it is the first row.
func (t *Table) Row(rec map[string]any) error {
	return t.write(FormatTime(rec["ts"]), text(rec["action"]), FormatPid(rec["pid"]), t.summary(rec))
}

// What a table shows, in its ACTION column, for a session with a start
// record and no end record (Unfinished). Neither is an action: no such
// record is stored; the row stands where the session's end record would be.
const (
	// EndedAbnormally: its paddock is gone (killed, or its machine stopped).
	EndedAbnormally = "ended abnormally"
	// NoEndRecord: whether its paddock still runs cannot be told here.
	NoEndRecord = "no end record"
)

// Unfinished writes the row for u, a session with a start record and no
// end record, whose paddock is gone (live is procfs.Gone: "ended
// abnormally") or may still run, for all that can be told here (Unknown:
// "no end record"). Its time is that of the session's last record. A
// session whose paddock runs has not ended: it gets no row.
func (t *Table) Unfinished(u Unfinished, live procfs.Liveness) error {
	pid := FormatPid(u.Last["pid"])
	if u.Known {
		pid = strconv.Itoa(u.Paddock.Pid)
	}
	last := fmt.Sprintf("; its last record: %s at %s", text(u.Last["action"]), text(u.Last["ts"]))
	switch live {
	case procfs.Gone:
		return t.write(FormatTime(u.Last["ts"]), EndedAbnormally, pid,
			"session "+word(u.ID)+": its paddock (pid "+pid+") is gone without a session_ended record"+last)
	case procfs.Unknown:
		return t.write(FormatTime(u.Last["ts"]), NoEndRecord, pid,
			"session "+word(u.ID)+": no session_ended record, and whether its paddock (pid "+pid+") still runs cannot be told here (another PID namespace, or its start record does not say)"+last)
	}
	return nil
}

// write writes one row, preceded by the header if it is the first.
func (t *Table) write(ts, action, pid, summary string) error {
	var b strings.Builder
	if !t.headerDone {
		b.WriteString(t.line("TIME", "ACTION", "PID", "SUMMARY"))
		b.WriteByte('\n')
	}
	b.WriteString(t.line(ts, action, pid, summary))
	b.WriteByte('\n')
	if _, err := io.WriteString(t.W, b.String()); err != nil {
		return err
	}
	t.headerDone = true
	return nil
}

func (t *Table) summary(rec map[string]any) string {
	s := Summary(rec)
	if t.Wide {
		if m, ok := rec["message"]; ok && s != text(m) {
			if s == "" {
				return text(m)
			}
			s += " — " + text(m)
		}
	}
	return s
}

func (t *Table) line(ts, action, pid, summary string) string {
	if !t.Wide {
		ts = truncate(ts, timeWidth)
		action = truncate(action, actionWidth)
		pid = truncate(pid, pidWidth)
	}
	s := pad(ts, timeWidth) + gap + pad(action, actionWidth) + gap +
		strings.Repeat(" ", max(0, pidWidth-utf8.RuneCountInString(pid))) + pid + gap
	if !t.Wide {
		summary = truncate(summary, TableWidth-utf8.RuneCountInString(s))
	}
	return strings.TrimRight(s+summary, " ")
}

func pad(s string, width int) string {
	if n := utf8.RuneCountInString(s); n < width {
		return s + strings.Repeat(" ", width-n)
	}
	return s
}

// truncate cuts s to at most n runes, ending it with "…" when it was longer.
func truncate(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// FormatTime renders a record's "ts" as RFC 3339 in UTC to the second; a
// value that is not an RFC 3339 time is shown as it is (made safe), and a
// missing one as "-".
func FormatTime(v any) string {
	s, ok := v.(string)
	if !ok {
		if v == nil {
			return "-"
		}
		return text(v)
	}
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return sanitize(s)
	}
	return ts.UTC().Format("2006-01-02T15:04:05Z")
}

// FormatPid renders a record's "pid": an integer, or "-" when missing.
func FormatPid(v any) string {
	if v == nil {
		return "-"
	}
	return text(v)
}

// Summary is the one-line description of a record that a table row shows:
// the call and its target ("kill(SIGTERM) pid 4242"), an exec's argv, a
// session's command, the rule, the reason, then every other field as
// key=value, sorted. ts, action, pid and message are not repeated, nor the
// chain's prev (--verify reads it), nor a session_started record's boot_id,
// pid_ns (they only let a reader tell whether its paddock still runs) and
// journal, nor a session_ended record's records_sha256 or a
// journal_rewritten record's head (--verify reads them), whose message
// comes first instead; abi only when it is not a native one
// (a compat ABI, such as i386 through int 0x80, is worth a look). A record
// with none of these is summarised by its message.
func Summary(rec map[string]any) string {
	var parts []string
	used := map[string]bool{"ts": true, "action": true, "pid": true, "message": true, "prev": true, KeyBootID: true, KeyPidNS: true,
		"journal": true, "records_sha256": true, "head": true}
	take := func(k string) (any, bool) {
		v, ok := rec[k]
		used[k] = true
		return v, ok
	}

	sc, hasSC := take("syscall")
	sig, hasSig := take("signal")
	call := ""
	if hasSC {
		call = text(sc)
	}
	if hasSig && (signalSyscall(call) || !isZero(sig)) {
		if call == "" {
			call = "signal " + signalName(sig)
		} else {
			call += "(" + signalName(sig) + ")"
		}
	}
	if call != "" {
		parts = append(parts, call)
	}
	if v, ok := take("target"); ok {
		parts = append(parts, targetText(v))
	}

	argv, hasArgv := take("argv")
	path, hasPath := take("path")
	if hasArgv || hasPath {
		e := "exec"
		if hasArgv {
			e += " " + argvWords(argv)
		}
		if hasPath {
			if !hasArgv {
				e += " " + word(rawText(path))
			} else if list, _ := argv.([]any); len(list) == 0 || !sameString(list[0], path) {
				e += " (" + word(rawText(path)) + ")"
			}
		}
		parts = append(parts, e)
	}

	if v, ok := take("command"); ok {
		parts = append(parts, "command "+argvWords(v))
	}
	if rec["action"] == "journal_rewritten" {
		// What paddock found is the record's point.
		if m, ok := rec["message"]; ok {
			parts = append(parts, text(m))
		}
	}
	if v, ok := take("rule"); ok {
		parts = append(parts, "rule="+word(rawText(v)))
	}
	if v, ok := take("reason"); ok {
		parts = append(parts, "reason="+strconv.Quote(rawText(v)))
	}
	if v, ok := take("abi"); ok {
		if a := rawText(v); a != "x86_64" && a != "aarch64" && a != "" {
			parts = append(parts, "abi="+word(a))
		}
	}

	var rest []string
	for k := range rec {
		if !used[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		parts = append(parts, word(k)+"="+word(rawText(rec[k])))
	}
	if len(parts) == 0 {
		if m, ok := rec["message"]; ok {
			return text(m)
		}
	}
	return strings.Join(parts, " ")
}

func sameString(a, b any) bool {
	as, ok1 := a.(string)
	bs, ok2 := b.(string)
	return ok1 && ok2 && as == bs
}

// signalSyscall reports whether a signal number means something for call
// even when it is 0 (an existence probe).
func signalSyscall(call string) bool {
	switch call {
	case "kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_send_signal":
		return true
	}
	return false
}

func isZero(v any) bool {
	f, ok := v.(float64)
	return ok && f == 0
}

func signalName(v any) string {
	if n, ok := integer(v); ok {
		if n > 0 && n <= 64 {
			if name, ok := signame.Name(int(n)); ok {
				return name
			}
		}
		return strconv.FormatInt(n, 10)
	}
	return text(v)
}

func targetText(v any) string {
	n, ok := integer(v)
	switch {
	case !ok:
		return "target " + word(rawText(v))
	case n == -1:
		return "every process (-1)"
	case n == 0:
		return "own process group (0)"
	case n < 0:
		return "process group " + strconv.FormatInt(-n, 10)
	}
	return "pid " + strconv.FormatInt(n, 10)
}

func integer(v any) (int64, bool) {
	f, ok := v.(float64)
	if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

// argvWords renders an argv (a JSON array of strings) as shell-like words.
func argvWords(v any) string {
	list, ok := v.([]any)
	if !ok {
		return word(rawText(v))
	}
	words := make([]string, len(list))
	for i, a := range list {
		if s, ok := a.(string); ok {
			words[i] = word(s)
		} else {
			words[i] = word(rawText(a))
		}
	}
	return strings.Join(words, " ")
}

// word quotes s, Go style, unless it is made only of characters that need
// no quoting in a shell; the quoting also escapes anything unprintable.
func word(s string) string {
	if s == "" {
		return `""`
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_@%+=:,./-", r)) {
			return strconv.Quote(s)
		}
	}
	return s
}

// text renders a decoded JSON value on one line, safe for a terminal.
func text(v any) string { return sanitize(rawText(v)) }

// rawText renders a decoded JSON value on one line: strings as they are,
// integral numbers without exponent, anything else as compact JSON.
func rawText(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return v
	case float64:
		if n, ok := integer(v); ok {
			return strconv.FormatInt(n, 10)
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// sanitize escapes, as in a Go string literal, whatever a terminal would not
// show as itself: control characters (newlines and escape sequences
// included), invalid UTF-8, and invisible formatting characters such as the
// bidi overrides. Printable text, non-ASCII included, is kept.
func sanitize(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case unicode.IsPrint(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRune(r) // 'x' with x escaped
			b.WriteString(q[1 : len(q)-1])
		}
		s = s[size:]
	}
	return b.String()
}
