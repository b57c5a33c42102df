package main

import (
	"github.com/paddock-dev/paddock/audit"

	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/journal"
)

type journalFlags struct {
	journal string
	json    bool
	follow  bool
	wide    bool
	since   string
	actions []string
	session string
	verify  bool
	head    string
	mirror  string
}

func newJournalCmd() *cobra.Command {
	var f journalFlags
	cmd := &cobra.Command{
		Use:   "journal [flags]",
		Short: "Print the audit journal",
		Long: `Print the audit journal that paddock run writes, oldest record first. The
rotated files are read too (FILE.N, ..., FILE.1, then FILE), so history
survives rotation.

The table shows, per record: the time in UTC (RFC 3339, to the second), the
action, the pid the record is about, and a summary built from the record's
fields (call and signal, target, exec argv, rule, reason, ...), cut to 120
columns with "…". --wide prints whole rows, with the record's message.
--json prints the records exactly as stored, one JSON object per line.
Anything a record quotes (an agent's argv, say) is shown with control
characters escaped, so it cannot drive the terminal.

Each session paddock run starts is bracketed by a session_started record
(paddock's pid, start time, boot id and PID namespace, and the command) and a
session_ended record (the command's status and the refusals). A session with
a start record and no end record whose paddock is gone (killed with SIGKILL,
an OOM kill, a machine that stopped) gets a row of its own right after its
last record, at that record's time: "ended abnormally". Where it cannot be
told whether its paddock still runs (another PID namespace), the row says
"no end record". These rows are not records: --json leaves them out, and the
filters take them as session_ended records of their session at their time.
docs/journal.md says how to tell such a session from records cut off the
journal's end.

--since takes a duration back from now (90s, 10m, 2h, 24h, or days: 7d) or an
RFC 3339 time (2026-12-02T13:00:00Z). Records whose time cannot be read are
shown rather than hidden. --action takes one or more of these (repeat the
flag or separate them with commas):
  ` + actionList() + `

--follow keeps printing records as they are appended, across rotations, until
interrupted (SIGINT or SIGTERM); a journal that does not exist yet is waited for.

--verify checks the journal's hash chain instead of printing it: every record
carries, as "prev", the SHA-256 (hex) of the record before it, its bytes as
stored with the trailing newline, across rotated files (oldest first). It
names each record after which the chain breaks, that is where a record was
removed, edited, reordered or inserted ("FILE: line 7: prev is X, but line 6
hashes to Y"). Records without prev at the very start (written before the
chain existed) are accepted as unchained legacy records; one after a chained
record is tampering. A torn last line (a write cut short), a record cut short
that the next write ended (a writer killed mid-record), and a line that is
not JSON but that the chain passes over are warnings, not tampering; so is a
session with no end record. The chain
cannot show records cut off its end, nor a chain rewritten with fresh hashes:
--head HASH (the head paddock run logged) checks that the chain still holds
that record, and --journal-mirror keeps a copy the agent cannot rewrite.
Each session_ended paddock run writes says how many records the session
wrote and their SHA-256: --verify checks them, so that a record of a
session removed and the chain recomputed around it shows.

--mirror SOURCE compares the journal with what paddock run
--journal-mirror sent: journald (runs journalctl -o json --all
SYSLOG_IDENTIFIER=paddock), or a FILE of that output or of the syslog lines
(- reads stdin). Sessions are compared when the file has their records, or
their mirrored session_started names this journal. A record the mirror has
that the file lacks (removed, rewritten) and a record of a session the
mirror followed that the mirror lacks (added to the file: a session_ended
forged for a session killed with SIGKILL, which only the mirror shows; or a
datagram the mirror dropped, which paddock logged) are mismatches; a record
the file could not take (journal_error) is a warning.

A journal_rewritten record (paddock found, while it ran, that the file no
longer held the record it wrote last) is tampering to --verify too.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runJournal(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.journal, "journal", "", "read the journal at `FILE` (default $PADDOCK_JOURNAL, else $XDG_STATE_HOME/paddock/journal.jsonl)")
	fl.BoolVar(&f.json, "json", false, "print the records as stored (JSON Lines)")
	fl.BoolVarP(&f.follow, "follow", "f", false, "keep printing records as they are appended, until interrupted")
	fl.BoolVar(&f.wide, "wide", false, "do not cut table rows; add each record's message")
	fl.StringVar(&f.since, "since", "", "only records from the last `DURATION` (10m, 2h, 7d) or since an RFC 3339 time")
	fl.StringSliceVar(&f.actions, "action", nil, "only records with action `A` (repeatable, or comma-separated)")
	fl.StringVar(&f.session, "session", "", "only the records of session `ID` (the session id paddock run logs at start)")
	fl.BoolVar(&f.verify, "verify", false, "check the journal's hash chain instead of printing it; exit 1 naming the first break")
	fl.StringVar(&f.head, "head", "", "with --verify: also check that the record with this chain `HASH` (logged by paddock run) is in the chain")
	fl.StringVar(&f.mirror, "mirror", "", "with --verify: also compare the journal with the copy its mirror kept: `SOURCE` is journald (read with journalctl), or a file (- for stdin) of `journalctl -o json` output or of syslog lines")
	return cmd
}

// recordFilter selects records by action, session and time.
type recordFilter struct {
	actions map[string]bool // nil: any
	session string          // "": any
	since   time.Time       // zero: any
}

func (rf recordFilter) match(rec map[string]any) bool {
	if rf.session != "" {
		if s, _ := rec[journal.SessionKey].(string); s != rf.session {
			return false
		}
	}
	if rf.actions != nil {
		a, _ := rec["action"].(string)
		if !rf.actions[a] {
			return false
		}
	}
	if !rf.since.IsZero() {
		s, _ := rec["ts"].(string)
		if ts, err := time.Parse(time.RFC3339Nano, s); err == nil && ts.Before(rf.since) {
			return false
		}
	}
	return true
}

// parseSince reads --since: a Go duration, a number of days ("7d"), or an
// RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		if days, ok := strings.CutSuffix(s, "d"); ok {
			const day = 24 * time.Hour
			if n, perr := strconv.ParseUint(days, 10, 63); perr == nil && n <= uint64(math.MaxInt64/day) {
				d, err = time.Duration(n)*day, nil
			}
		}
	}
	if err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("--since %q: want a duration back from now (10m, 2h, 7d), not a negative one", s)
		}
		return now.Add(-d), nil
	}
	if t, terr := time.Parse(time.RFC3339Nano, s); terr == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--since %q: want a duration (90s, 10m, 2h, 24h, 7d) or an RFC 3339 time (2026-12-02T13:00:00Z)", s)
}

// actionList is every journaled action, comma-separated, for help and errors.
func actionList() string {
	var names []string
	for _, a := range audit.Actions() {
		names = append(names, string(a))
	}
	return strings.Join(names, ", ")
}

func parseActions(list []string) (map[string]bool, error) {
	if len(list) == 0 {
		return nil, nil
	}
	set := map[string]bool{}
	for _, a := range list {
		a = strings.TrimSpace(a)
		if !audit.Action(a).Known() {
			return nil, fmt.Errorf("--action %q: unknown action; known actions: %s", a, actionList())
		}
		set[a] = true
	}
	return set, nil
}

// journalPrinter prints records as they are read, counting what it saw.
type journalPrinter struct {
	out     *bufio.Writer
	errw    io.Writer
	json    bool
	table   *journal.Table
	filter  recordFilter
	total   int  // records read
	shown   int  // records (and rows standing for missing end records) printed
	corrupt bool // a line other than the last was not a JSON object
	// unended are the sessions with a start record and no end record whose
	// paddock does not run, by where their last record is (unendedSessions).
	unended map[journal.Pos]unended
}

// unended is a session with a start record and no end record, and whether
// its paddock is gone or that cannot be told.
type unended struct {
	journal.Unfinished
	live procfs.Liveness
}

// unendedSessions reads the history once, from the start of each file, to
// find the sessions that started, have no end record, and whose paddock
// is not running, and leaves each file at its start again.
func unendedSessions(files []*os.File) (map[journal.Pos]unended, error) {
	var ss journal.Sessions
	for i, f := range files {
		data, err := io.ReadAll(f)
		if err != nil {
			return nil, fmt.Errorf("journal %s: read: %w", f.Name(), err)
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("journal %s: %w", f.Name(), err)
		}
		lines, _, _ := journal.ReadLines(bytes.NewReader(data))
		for _, l := range lines {
			if l.Rec != nil {
				ss.Add(journal.Pos{File: i, Line: l.No}, l.Rec)
			}
		}
	}
	fs := procfs.Default()
	self, _ := fs.Self() // unreadable: every paddock's fate is unknown
	out := map[journal.Pos]unended{}
	for _, u := range ss.Unfinished() {
		live := procfs.Unknown
		if u.Known {
			live = fs.Liveness(u.Paddock, self)
		}
		if live != procfs.Running {
			out[u.At] = unended{u, live}
		}
	}
	return out, nil
}

// ending prints the row that stands for the end record u never wrote, if
// the filters take a session_ended record of its session at its last
// record's time.
func (p *journalPrinter) ending(u unended) error {
	if !p.filter.match(map[string]any{"ts": u.Last["ts"], "action": string(audit.SessionEnded), journal.SessionKey: u.ID}) {
		return nil
	}
	p.shown++
	return p.table.Unfinished(u.Unfinished, u.live)
}

// record prints one good line if it passes the filter.
func (p *journalPrinter) record(raw []byte, rec map[string]any) error {
	p.total++
	if !p.filter.match(rec) {
		return nil
	}
	p.shown++
	if p.json {
		p.out.Write(raw)
		return p.out.WriteByte('\n')
	}
	return p.table.Row(rec)
}

// warn reports a problem on stderr, after what was printed before it.
func (p *journalPrinter) warn(format string, args ...any) {
	p.out.Flush()
	fmt.Fprintf(p.errw, "paddock: "+format+"\n", args...)
}

// badLine reports a line, other than the last, that is not a record. The
// beginning of a record, ended by the next write, is what a writer killed
// in the middle of a record leaves (journal.CutShort): reported, and not
// counted as damage. Anything else paddock never writes.
func (p *journalPrinter) badLine(file string, no int, raw []byte) {
	where := "a line"
	if no > 0 {
		where = "line " + strconv.Itoa(no)
	}
	if journal.CutShort(raw) {
		p.warn("journal %s: %s is a record cut short (a writer was killed in the middle of it; the next record starts on the next line): %s",
			file, where, journal.Excerpt(raw, 200))
		return
	}
	p.corrupt = true
	p.warn("journal %s: %s is not a JSON object (paddock never writes one: the file was edited or damaged): %s",
		file, where, journal.Excerpt(raw, 200))
}

// readFile prints the records of one whole file, the i-th of the history,
// each followed by the row of a session it was the last record of (see
// unended), and reports its bad lines.
// It returns the offset just past the file's last '\n', where following it
// resumes: an incomplete last line is reported now and printed later if its
// writer finishes it.
func (p *journalPrinter) readFile(i int, f *os.File) (int64, error) {
	data, err := io.ReadAll(f)
	if err != nil {
		return 0, fmt.Errorf("journal %s: read: %w", f.Name(), err)
	}
	lines, torn, _ := journal.ReadLines(bytes.NewReader(data))
	for _, l := range lines {
		if l.Rec == nil {
			p.badLine(f.Name(), l.No, l.Raw)
			continue
		}
		if err := p.record(l.Raw, l.Rec); err != nil {
			return 0, err
		}
		if u, ok := p.unended[journal.Pos{File: i, Line: l.No}]; ok {
			if err := p.ending(u); err != nil {
				return 0, err
			}
		}
	}
	if torn != nil && len(lines) == 0 && !bytes.HasPrefix(bytes.TrimLeft(torn, " \t"), []byte("{")) {
		// Not a record being written: no record at all, and not even the
		// start of a JSON object. A binary or foreign file is damage.
		p.warn("journal %s is not a paddock journal: it holds no record, and what it holds does not start like one (a JSON object)", f.Name())
		p.corrupt = true
	} else if torn != nil {
		p.warn("%v", &journal.TornLineError{Path: f.Name(), Line: torn})
	}
	return int64(bytes.LastIndexByte(data, '\n') + 1), nil
}

func runJournal(cmd *cobra.Command, f journalFlags) error {
	if f.verify {
		if f.json || f.follow || f.wide || f.since != "" || len(f.actions) > 0 || f.session != "" {
			return usageError("--verify checks the whole journal: it takes only --journal, --head and --mirror")
		}
		return runVerify(cmd, f)
	}
	if f.head != "" {
		return usageError("--head goes with --verify")
	}
	if f.mirror != "" {
		return usageError("--mirror goes with --verify")
	}
	actions, err := parseActions(f.actions)
	if err != nil {
		return err
	}
	filter := recordFilter{actions: actions, session: f.session}
	if f.since != "" {
		if filter.since, err = parseSince(f.since, time.Now()); err != nil {
			return err
		}
	}
	home, _ := os.UserHomeDir()
	path, err := journal.DefaultPath(f.journal, os.Getenv, home)
	if err != nil {
		return err
	}

	out := bufio.NewWriter(cmd.OutOrStdout())
	defer out.Flush()
	p := &journalPrinter{
		out: out, errw: cmd.ErrOrStderr(), json: f.json, filter: filter,
		table: &journal.Table{W: out, Wide: f.wide},
	}
	fail := func(err error) error {
		p.warn("%v", err)
		return exitError{code: 1}
	}
	status := func() error {
		if err := out.Flush(); err != nil {
			return fail(fmt.Errorf("write: %w", err))
		}
		if p.corrupt {
			return exitError{code: 1}
		}
		return nil
	}

	files, err := journal.OpenHistory(path)
	if err != nil {
		return fail(err)
	}
	var live *os.File // the live file, when following it
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	if !f.json {
		if p.unended, err = unendedSessions(files); err != nil {
			return fail(err)
		}
	}
	for i, file := range files {
		isLive := f.follow && i == len(files)-1 && file.Name() == path
		off, err := p.readFile(i, file)
		if err != nil {
			return fail(err)
		}
		if isLive {
			if _, err := file.Seek(off, io.SeekStart); err != nil {
				return fail(fmt.Errorf("journal %s: %w", path, err))
			}
			live = file
			files = files[:i] // FollowFile closes it
		}
	}
	if err := out.Flush(); err != nil {
		return fail(fmt.Errorf("write: %w", err))
	}
	switch {
	case len(files) == 0 && live == nil && f.follow:
		p.warn("no journal at %s yet (nothing has been recorded; paddock run writes it); waiting for it", path)
	case len(files) == 0 && live == nil:
		p.warn("no journal at %s yet (nothing has been recorded; paddock run writes it)", path)
	case p.shown == 0 && p.total == 0:
		p.warn("journal %s has no records", path)
	case p.shown == 0:
		p.warn("none of the %d records in journal %s match the filters", p.total, path)
	}
	if !f.follow {
		return status()
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	follower := &journal.Follower{Path: path, Warn: func(err error) { p.warn("%v", err) }}
	emit := func(line []byte) error {
		if len(bytes.TrimSpace(line)) == 0 {
			return nil
		}
		rec, ok := journal.ParseLine(line)
		if !ok {
			p.badLine(path, 0, line)
			return nil
		}
		if err := p.record(line, rec); err != nil {
			return err
		}
		return out.Flush()
	}
	if live != nil {
		err = follower.FollowFile(ctx, live, emit)
	} else {
		err = follower.Follow(ctx, 0, emit)
	}
	if err != nil {
		return fail(err)
	}
	return status()
}

// runVerify is paddock journal --verify: the chain's findings on stderr, a
// summary on stdout.
func runVerify(cmd *cobra.Command, f journalFlags) error {
	if f.head != "" && !journal.IsHash(f.head) {
		return usageError(fmt.Sprintf("--head %q: want a SHA-256 in lowercase hex (64 characters), as paddock run logs it", f.head))
	}
	home, _ := os.UserHomeDir()
	path, err := journal.DefaultPath(f.journal, os.Getenv, home)
	if err != nil {
		return err
	}
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	v, err := journal.Verify(path, f.head)
	if err != nil {
		fmt.Fprintf(stderr, "paddock: %v\n", err)
		return exitError{code: 1}
	}
	for _, w := range v.Warnings {
		fmt.Fprintf(stderr, "paddock: warning: %v\n", w)
	}
	for _, b := range v.Breaks {
		fmt.Fprintf(stderr, "paddock: %v\n", b)
	}
	for _, d := range v.Differing {
		fmt.Fprintf(stderr, "paddock: %v\n", d)
	}
	for _, r := range v.Rewritten {
		fmt.Fprintf(stderr, "paddock: %v\n", r)
	}
	fmt.Fprintf(stdout, "journal %s: %d records in %d files\n", path, v.Records, len(v.Files))
	if v.Legacy > 0 {
		fmt.Fprintf(stdout, "%d unchained legacy records at the start (written before the journal was chained)\n", v.Legacy)
	}
	if v.Anchor != "" {
		fmt.Fprintf(stdout, "the first chained record links to %s, a record in a rotated file no longer kept\n", v.Anchor)
	}
	if v.Head != "" {
		fmt.Fprintf(stdout, "head %s\n", v.Head)
	}
	if v.Sessions > 0 {
		fmt.Fprintf(stdout, "%d sessions' records match their session_ended\n", v.Sessions)
	}
	bad := false
	if len(v.Breaks) > 0 {
		first := v.Breaks[0]
		times := "once"
		if n := len(v.Breaks); n > 1 {
			times = strconv.Itoa(n) + " times"
		}
		fmt.Fprintf(stdout, "TAMPERED: the chain breaks %s; the first break is at %s line %d\n", times, first.File, first.Line)
		bad = true
	}
	if len(v.Differing) > 0 {
		fmt.Fprintf(stdout, "TAMPERED: the records of %d sessions differ from what their session_ended says; the first is at %s line %d\n", len(v.Differing), v.Differing[0].File, v.Differing[0].Line)
		bad = true
	}
	if len(v.Rewritten) > 0 {
		fmt.Fprintf(stdout, "TAMPERED: paddock found the journal rewritten %d times while it ran (journal_rewritten); the first record saying so is at %s line %d\n", len(v.Rewritten), v.Rewritten[0].File, v.Rewritten[0].Line)
		bad = true
	}
	if f.head != "" && !v.HeadFound {
		fmt.Fprintf(stdout, "TAMPERED: no record hashes to --head %s: records were cut off the end, or the chain was rewritten\n", f.head)
		bad = true
	}
	if f.mirror != "" {
		differs, err := verifyMirror(cmd, path, f.mirror)
		if err != nil {
			fmt.Fprintf(stderr, "paddock: --mirror %s: %v\n", f.mirror, err)
			return exitError{code: 1}
		}
		bad = bad || differs
	}
	if bad {
		return exitError{code: 1}
	}
	if f.head != "" {
		fmt.Fprintf(stdout, "the record with head %s is in the chain\n", f.head)
	}
	fmt.Fprintln(stdout, "chain intact")
	return nil
}

// verifyMirror is --verify --mirror SOURCE: the journal at path compared
// with the records the mirror kept; differs when they disagree.
func verifyMirror(cmd *cobra.Command, path, source string) (differs bool, err error) {
	var r io.Reader
	switch source {
	case "journald":
		jc := exec.Command("journalctl", "-o", "json", "--all", "--no-pager", "SYSLOG_IDENTIFIER=paddock")
		var errb bytes.Buffer
		jc.Stderr = &errb
		out, err := jc.Output()
		if err != nil {
			return false, fmt.Errorf("journalctl: %v: %s (read journald's copy as a user who may: root, or a member of systemd-journal or adm; or give a file of `journalctl -o json --all SYSLOG_IDENTIFIER=paddock` output)", err, bytes.TrimSpace(errb.Bytes()))
		}
		r = bytes.NewReader(out)
	case "syslog":
		return false, errors.New("give the file syslog keeps paddock's messages in (/var/log/auth.log, /var/log/secure, ...: facility authpriv), not syslog")
	case "-":
		r = cmd.InOrStdin()
	default:
		fh, err := os.Open(source)
		if err != nil {
			return false, err
		}
		defer fh.Close()
		r = fh
	}
	recs, unreadable, err := journal.ReadMirror(r)
	if err != nil {
		return false, err
	}
	c, err := journal.CompareMirror(path, recs)
	if err != nil {
		return false, err
	}
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	name := func(f journal.MirrorFinding) string {
		return fmt.Sprintf("session %s: %s at %s", journal.Excerpt([]byte(f.Session), 40), journal.Excerpt([]byte(f.Action), 40), journal.Excerpt([]byte(f.TS), 40))
	}
	if unreadable > 0 {
		fmt.Fprintf(stderr, "paddock: warning: mirror: %d lines name a record that cannot be read (cut short or escaped by the log daemon): not compared\n", unreadable)
	}
	for _, f := range c.Unwritten {
		fmt.Fprintf(stderr, "paddock: warning: mirror: %s is in the mirror only: the journal file could not take it (%s)\n", name(f), journal.Excerpt([]byte(f.Why), 300))
	}
	for _, f := range c.Missing {
		fmt.Fprintf(stderr, "paddock: mirror: %s (hash %s) is in the mirror, not in the journal: removed, or the chain rewritten\n", name(f), f.Hash)
	}
	for _, f := range c.Extra {
		fmt.Fprintf(stderr, "paddock: mirror: %s (%s) is in the journal, not in the mirror: added to the file (a session_ended forged for a session killed with SIGKILL, say), or the mirror dropped it (paddock run then logged \"the journal mirror failed\")\n", name(f), f.Where)
	}
	fmt.Fprintf(stdout, "mirror %s: %d records of %d sessions compared", source, c.Records, c.Sessions)
	if c.Other > 0 {
		fmt.Fprintf(stdout, "; %d sessions of other journals passed over", c.Other)
	}
	if c.Older > 0 {
		fmt.Fprintf(stdout, "; %d records older than the journal's kept files passed over", c.Older)
	}
	fmt.Fprintln(stdout)
	if c.Differs() {
		fmt.Fprintf(stdout, "MISMATCH with the mirror: %d records the journal lacks, %d the mirror lacks\n", len(c.Missing), len(c.Extra))
		return true, nil
	}
	if c.Sessions == 0 {
		fmt.Fprintf(stdout, "MISMATCH with the mirror: it holds no session of this journal (was paddock run given --journal-mirror?)\n")
		return true, nil
	}
	fmt.Fprintln(stdout, "the mirror agrees")
	return false, nil
}
