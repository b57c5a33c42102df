package journal

import (
	"bytes"
	"encoding/binary"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/audit"
)

// listenDgram creates a unix datagram socket in a fresh directory, standing
// in for journald's or syslog's.
func listenDgram(t *testing.T) (*net.UnixConn, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "log.sock")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, path
}

func recvDgram(t *testing.T, c *net.UnixConn) []byte {
	t.Helper()
	buf := make([]byte, 1<<16)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _, err := c.ReadFromUnix(buf)
	if err != nil {
		t.Fatalf("no datagram from the mirror: %v", err)
	}
	return buf[:n]
}

// parseJournald decodes a journald native-protocol datagram into its fields,
// in order, both forms (KEY=VALUE and the binary-safe one).
func parseJournald(t *testing.T, b []byte) [][2]string {
	t.Helper()
	var out [][2]string
	for len(b) > 0 {
		nl := bytes.IndexByte(b, '\n')
		if nl < 0 {
			t.Fatalf("field without its newline: %q", b)
		}
		line := b[:nl]
		if k, v, ok := bytes.Cut(line, []byte{'='}); ok {
			out = append(out, [2]string{string(k), string(v)})
			b = b[nl+1:]
			continue
		}
		b = b[nl+1:]
		if len(b) < 8 {
			t.Fatalf("binary field %s without its length", line)
		}
		n := binary.LittleEndian.Uint64(b)
		if uint64(len(b)) < 8+n+1 || b[8+n] != '\n' {
			t.Fatalf("binary field %s: bad length %d", line, n)
		}
		out = append(out, [2]string{string(line), string(b[8 : 8+n])})
		b = b[8+n+1:]
	}
	return out
}

func TestMirrorJournald(t *testing.T) {
	ts := time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC)
	tests := []struct {
		name   string
		rec    Record
		fields [][2]string // every field expected, in order; "*" matches any value
	}{
		{"refusal with a multi-line message", Record{TS: ts, Action: audit.SignalDenied, Pid: 42, Fields: map[string]any{
			"rule": "not_owned", "target": 7, "signal": "SIGKILL", "message": "refused\nkill 7",
		}}, [][2]string{
			{"MESSAGE", "refused\nkill 7"}, {"PRIORITY", "4"}, {"SYSLOG_IDENTIFIER", "paddock"}, {"SYSLOG_FACILITY", "10"},
			{"PADDOCK_ACTION", "signal_denied"}, {"PADDOCK_MESSAGE", "refused\nkill 7"}, {"PADDOCK_PID", "42"},
			{"PADDOCK_PREV", genesis}, {"PADDOCK_RULE", "not_owned"}, {"PADDOCK_SIGNAL", "SIGKILL"}, {"PADDOCK_TARGET", "7"},
			{"PADDOCK_TS", "2026-03-04T05:06:07.000000008Z"}, {"PADDOCK_HASH", "*"}, {"PADDOCK_RECORD", "*"},
		}},
		{"adoption without a message", Record{TS: ts, Action: audit.Adopted, Pid: 9, Fields: map[string]any{
			"comm": "sleep", "argv-0": []string{"a"},
		}}, [][2]string{
			{"MESSAGE", "paddock: adopted pid 9"}, {"PRIORITY", "5"}, {"SYSLOG_IDENTIFIER", "paddock"}, {"SYSLOG_FACILITY", "10"},
			{"PADDOCK_ACTION", "adopted"}, {"PADDOCK_ARGV_0", `["a"]`}, {"PADDOCK_COMM", "sleep"}, {"PADDOCK_PID", "9"},
			{"PADDOCK_PREV", genesis}, {"PADDOCK_TS", "2026-03-04T05:06:07.000000008Z"}, {"PADDOCK_HASH", "*"}, {"PADDOCK_RECORD", "*"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, sock := listenDgram(t)
			path := filepath.Join(t.TempDir(), "j.jsonl")
			j, err := Open(path, Options{Mirror: MirrorJournald, MirrorSocket: sock, MirrorError: func(err error) { t.Errorf("mirror: %v", err) }})
			must(t, err)
			defer j.Close()
			must(t, j.Append(tt.rec))
			got := parseJournald(t, recvDgram(t, c))
			lines := fileLines(t, path)
			raw := bytes.TrimSuffix(lines[0], []byte{'\n'})
			if len(got) != len(tt.fields) {
				t.Fatalf("fields %q\nwant %q", got, tt.fields)
			}
			for i, f := range tt.fields {
				switch f[0] {
				case "PADDOCK_HASH":
					f[1] = j.Head()
				case "PADDOCK_RECORD":
					f[1] = string(raw)
				}
				if got[i] != f {
					t.Errorf("field %d = %q, want %q", i, got[i], f)
				}
			}
		})
	}
}

func TestMirrorSyslog(t *testing.T) {
	c, sock := listenDgram(t)
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := Open(path, Options{Mirror: MirrorSyslog, MirrorSocket: sock})
	must(t, err)
	defer j.Close()
	must(t, j.Append(Record{Action: audit.ExecDenied, Pid: 5, Fields: map[string]any{"rule": "fork_bomb"}}))
	got := string(recvDgram(t, c))
	raw := strings.TrimSuffix(string(fileLines(t, path)[0]), "\n")
	host := "-"
	if h, err := os.Hostname(); err == nil && h != "" {
		host = h
	}
	// <authpriv*8+warning>1 TIMESTAMP HOST paddock PID MSGID - MSG
	want := regexp.MustCompile(`^<84>1 \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z ` + regexp.QuoteMeta(host) +
		` paddock ` + strconv.Itoa(os.Getpid()) + ` exec_denied - ` + regexp.QuoteMeta(raw) + `$`)
	if !want.MatchString(got) {
		t.Errorf("syslog message %q\ndoes not match %s", got, want)
	}
}

// TestMirrorFailure: a mirror that cannot send is reported once per outage
// and fails nothing; every record still reaches the journal.
func TestMirrorFailure(t *testing.T) {
	var reports []error
	path := filepath.Join(t.TempDir(), "j.jsonl")
	sock := filepath.Join(t.TempDir(), "nobody-listens.sock")
	j, err := Open(path, Options{Mirror: MirrorJournald, MirrorSocket: sock, MirrorError: func(err error) { reports = append(reports, err) }})
	must(t, err)
	defer j.Close()
	must(t, writeSeq(j, 0, 3))
	if len(reports) != 1 || !strings.Contains(reports[0].Error(), sock) {
		t.Errorf("reports %v; want one naming %s", reports, sock)
	}
	if v := verifyClean(t, path); v.Records != 3 {
		t.Errorf("%d records in the journal, want 3", v.Records)
	}
	if _, err := Open(path, Options{Mirror: "kafka"}); err == nil || !strings.Contains(err.Error(), "want journald, syslog or none") {
		t.Errorf("Open with an unknown mirror: %v", err)
	}
}
