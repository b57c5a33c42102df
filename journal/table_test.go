package journal

import (
	"github.com/paddock-dev/paddock/audit"

	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// rec decodes one JSON object the way Read does.
func rec(t *testing.T, s string) map[string]any {
	t.Helper()
	r, ok := ParseLine([]byte(s))
	if !ok {
		t.Fatalf("not a JSON object: %s", s)
	}
	return r
}

func TestSummary(t *testing.T) {
	for _, tc := range []struct {
		name, rec, want string
	}{
		{"signal denied",
			`{"ts":"2026-12-02T13:43:31Z","action":"signal_denied","pid":11031,"abi":"x86_64","message":"m","rule":"lifeline","signal":15,"syscall":"kill","target":1}`,
			`kill(SIGTERM) pid 1 rule=lifeline`},
		{"journal rewritten: its message, not its head",
			`{"action":"journal_rewritten","pid":1,"head":"9f2c","message":"the journal was rewritten\u001b[2J","session":"s"}`,
			`the journal was rewritten\x1b[2J session=s`},
		{"session records: the sums and the journal are for --verify",
			`{"action":"session_ended","pid":1,"records":3,"records_sha256":"ab","status":0,"journal":"/j"}`,
			`records=3 status=0`},
		{"broadcast through a compat ABI",
			`{"action":"signal_denied","pid":1,"abi":"i386","rule":"broadcast","signal":9,"syscall":"kill","target":-1}`,
			`kill(SIGKILL) every process (-1) rule=broadcast abi=i386`},
		{"process group",
			`{"action":"signal_denied","pid":1,"rule":"group_not_owned","signal":2,"syscall":"kill","target":-4242}`,
			`kill(SIGINT) process group 4242 rule=group_not_owned`},
		{"own group",
			`{"action":"signal_denied","pid":1,"signal":1,"syscall":"kill","target":0}`,
			`kill(SIGHUP) own process group (0)`},
		{"signal 0 to a signal syscall is shown",
			`{"action":"signal_denied","pid":1,"signal":0,"syscall":"tgkill","target":5}`,
			`tgkill(0) pid 5`},
		{"signal 0 to ptrace is not",
			`{"action":"signal_denied","pid":1,"signal":0,"syscall":"ptrace","target":5}`,
			`ptrace pid 5`},
		{"realtime and unknown signals",
			`{"action":"signal_denied","pid":1,"signal":36,"syscall":"kill","target":5,"x":[1,2]}`,
			`kill(SIGRTMIN+2) pid 5 x="[1,2]"`},
		{"signal without syscall",
			`{"action":"signal_denied","pid":1,"signal":15}`,
			`signal SIGTERM`},
		{"adopted with a reason",
			`{"action":"adopted","pid":900,"target":4242,"reason":"restart the dev server"}`,
			`pid 4242 reason="restart the dev server"`},
		{"exec with argv and path",
			`{"action":"exec_denied","pid":1,"path":"/usr/sbin/shutdown","argv":["shutdown","-h","now"],"rule":"power_control"}`,
			`exec shutdown -h now (/usr/sbin/shutdown) rule=power_control`},
		{"exec whose argv[0] is the path",
			`{"action":"exec_denied","pid":1,"path":"/sbin/reboot","argv":["/sbin/reboot"]}`,
			`exec /sbin/reboot`},
		{"exec with path only",
			`{"action":"exec_denied","pid":1,"path":"/sbin/my reboot"}`,
			`exec "/sbin/my reboot"`},
		{"argv words are quoted when needed",
			`{"action":"exec_denied","pid":1,"argv":["sh","-c","systemctl poweroff",""]}`,
			`exec sh -c "systemctl poweroff" ""`},
		{"unknown fields as key=value, sorted",
			`{"action":"opt_in_used","pid":1,"var":"PADDOCK_ALLOW_POWER_CONTROL","count":2,"ok":true,"none":null,"f":1.5}`,
			`count=2 f=1.5 none=null ok=true var=PADDOCK_ALLOW_POWER_CONTROL`},
		{"a session's start: its command, not the chain's link nor how its paddock is told apart",
			`{"action":"session_started","pid":7,"boot_id":"b","command":["bash","-c","make test"],"pid_ns":4026531836,"session":"s1","start_time":77,"prev":"00"}`,
			`command bash -c "make test" session=s1 start_time=77`},
		{"a session's end",
			`{"action":"session_ended","pid":7,"refusals":1,"session":"s1","status":0,"prev":"00"}`,
			`refusals=1 session=s1 status=0`},
		{"only a message",
			`{"action":"released","pid":1,"message":"released 4242"}`,
			`released 4242`},
		{"nothing at all",
			`{"action":"released","pid":1}`,
			``},
		{"terminal escapes are escaped",
			`{"action":"adopted","pid":1,"reason":"x\u001b[2J\ny","argv":["a\u202eb","c\td"]}`,
			`exec "a\u202eb" "c\td" reason="x\x1b[2J\ny"`},
		{"odd values do not panic",
			`{"action":"exec_denied","pid":1,"path":{"a":1},"argv":[{"b":2}],"target":"x y","signal":"TERM"}`,
			`signal TERM target "x y" exec "{\"b\":2}" ("{\"a\":1}")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Summary(rec(t, tc.rec)); got != tc.want {
				t.Errorf("Summary:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestTable: rows streamed one at a time line up under one header, each
// cut to TableWidth columns.
func TestTable(t *testing.T) {
	lines := []string{
		`{"ts":"2026-12-02T13:43:31.048572589Z","action":"signal_denied","pid":11031,"abi":"x86_64","message":"paddock refused kill(SIGTERM) of pid 1","rule":"lifeline","signal":15,"syscall":"kill","target":1}`,
		`{"ts":"2026-12-02T14:43:31+01:00","action":"self_lifeline_override","pid":4194304,"signal":9,"syscall":"kill","target":11031}`,
		`{"ts":"yesterday","action":"exec_denied","pid":7,"argv":["sh","-c","echo aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"]}`,
		`{"action":"a_new_action_nobody_knows_yet","message":"m"}`,
	}
	var recs []map[string]any
	for _, l := range lines {
		recs = append(recs, rec(t, l))
	}
	var buf bytes.Buffer
	tb := &Table{W: &buf}
	for _, r := range recs {
		if err := tb.Row(r); err != nil {
			t.Fatal(err)
		}
	}
	want := strings.Join([]string{
		"TIME                  ACTION                      PID  SUMMARY",
		"2026-12-02T13:43:31Z  signal_denied             11031  kill(SIGTERM) pid 1 rule=lifeline",
		"2026-12-02T13:43:31Z  self_lifeline_override  4194304  kill(SIGKILL) pid 11031",
		`yesterday             exec_denied                   7  exec sh -c "echo aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa…`,
		"-                     a_new_action_nobody_k…        -  m",
		"",
	}, "\n")
	if buf.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", buf.String(), want)
	}
	for _, l := range strings.Split(buf.String(), "\n") {
		if n := utf8.RuneCountInString(l); n > TableWidth {
			t.Errorf("row of %d columns, more than %d: %s", n, TableWidth, l)
		}
	}
}

func TestTableWide(t *testing.T) {
	long := strings.Repeat("word ", 40)
	var buf bytes.Buffer
	tb := &Table{W: &buf, Wide: true}
	for _, r := range []map[string]any{
		rec(t, `{"ts":"2026-12-02T13:43:31Z","action":"signal_denied","pid":5,"syscall":"kill","signal":15,"target":1,"message":"`+long+`"}`),
		rec(t, `{"ts":"2026-12-02T13:43:32Z","action":"released","pid":5,"message":"only a message"}`),
	} {
		if err := tb.Row(r); err != nil {
			t.Fatal(err)
		}
	}
	got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(got) != 3 {
		t.Fatalf("want header and 2 rows, got:\n%s", buf.String())
	}
	if want := "kill(SIGTERM) pid 1 — " + strings.TrimSpace(long); !strings.HasSuffix(got[1], want) {
		t.Errorf("wide row %q\ndoes not end with %q", got[1], want)
	}
	if strings.Contains(got[1], "…") {
		t.Errorf("wide row was cut: %q", got[1])
	}
	if !strings.HasSuffix(got[2], "  only a message") || strings.Contains(got[2], "—") {
		t.Errorf("message-only wide row %q: want the message once", got[2])
	}
}

func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{
		"plain text":         "plain text",
		"naïve café ✓":       "naïve café ✓",
		"a\nb":               `a\nb`,
		"\x1b[31mred":        `\x1b[31mred`,
		"bidi\u202eevil":     `bidi\u202eevil`,
		"bad\xffutf8":        `bad\xffutf8`,
		"tab\there":          `tab\there`,
		"del\x7f":            `del\x7f`,
		"c1\u0085":           `c1\u0085`,
		`back\slash`:         `back\slash`,
		"zero\u200bwidthspc": `zero\u200bwidthspc`,
	} {
		if got := sanitize(in); got != want {
			t.Errorf("sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"hello", 5, "hello"},
		{"hello!", 5, "hell…"},
		{"héllo wörld", 6, "héllo…"},
		{"abc", 1, "…"},
		{"abc", 0, ""},
	} {
		if got := truncate(tc.in, tc.n); got != tc.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestFormatTimeAndPid(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{"2026-12-02T13:43:31.999999999Z", "2026-12-02T13:43:31Z"},
		{"2026-12-02T00:30:00+02:00", "2026-12-01T22:30:00Z"},
		{"not a time\n", `not a time\n`},
		{nil, "-"},
		{float64(5), "5"},
	} {
		if got := FormatTime(tc.v); got != tc.want {
			t.Errorf("FormatTime(%#v) = %q, want %q", tc.v, got, tc.want)
		}
	}
	for _, tc := range []struct {
		v    any
		want string
	}{
		{float64(11031), "11031"},
		{nil, "-"},
		{"x", "x"},
		{1.5, "1.5"},
	} {
		if got := FormatPid(tc.v); got != tc.want {
			t.Errorf("FormatPid(%#v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// TestSummaryOfWrittenRecords runs records as the journal writes them
// through the table, so that the summary keeps up with the writer's format.
func TestSummaryOfWrittenRecords(t *testing.T) {
	line, err := encode(Record{Action: "signal_denied", Pid: 11031, Fields: map[string]any{
		"target": 1, "signal": 15, "syscall": "kill", "rule": "lifeline", "message": "m", "abi": "x86_64",
	}})
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := json.Unmarshal(line, &r); err != nil {
		t.Fatal(err)
	}
	if got, want := Summary(r), "kill(SIGTERM) pid 1 rule=lifeline"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
}

func TestActionsFitTheColumn(t *testing.T) {
	for _, a := range audit.Actions() {
		if len(a) > actionWidth {
			t.Errorf("action %q is wider than the %d-column ACTION column", a, actionWidth)
		}
	}
}
