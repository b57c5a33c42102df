package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/internal/sched"
	"github.com/paddock-dev/paddock/journal"
	"github.com/paddock-dev/paddock/profile"
	"github.com/paddock-dev/paddock/supervisor"
	"github.com/paddock-dev/paddock/terminal"
	"github.com/paddock-dev/paddock/vram"
)

type runFlags struct {
	tini           tiniFlags
	profile        string
	journal        string
	journalMax     int64
	journalKeep    int
	journalMirror  string
	journalLock    time.Duration
	logFormat      string
	logFile        string
	logLevel       string
	noNotifyStderr bool
	init           bool
	forwardToGroup bool
	grace          time.Duration
	keepOrphans    bool
	strict         bool
	report         string
	reportFormat   string
	backend        string
	keepCaps       bool
	strictWall     bool
	strictExec     bool
	noPty          bool
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run [flags] -- CMD [ARG...]",
		Short: "Run CMD under paddock's supervision",
		Long: `Run CMD under paddock's supervision and exit with its status, or 128+N when it
died of signal N. SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 and
SIGWINCH sent to paddock are forwarded to CMD (SIGWINCH not when CMD is on a
pty of its own, which gets the new size instead). If paddock itself dies, CMD
is killed and the trapped syscalls of anything CMD left behind fail (ENOSYS).

When any of paddock's standard descriptors is a terminal, CMD runs on a pty
of its own, in a session of its own, and paddock relays between it and your
terminal (input, output, window size, ^C/^Z), as sudo, script, tmux and ssh
do: CMD cannot push input into your shell or hang up your terminal, and its
kill(0) reaches only its own processes. Opened by its path, your terminal
is not CMD's to change either: its settings, line discipline, exclusive mode,
flow and size stay yours (refused, rule terminal_control), and paddock puts
them back when it exits; a terminal that takes no output does not hold
paddock's exit up (what it does not take within 3s is given up, with a note).
--no-pty (or the profile's pty = false) keeps CMD on your terminal.

While CMD has your terminal (paddock's stderr is a terminal), paddock writes
nothing of its own on it but a fatal error: its log (a line per refusal, the
start line, warnings) goes to $XDG_STATE_HOME/paddock/log/SESSION.log
(~/.local/state/paddock/log/SESSION.log, beside the default journal; the
newest 100 are kept), and at exit one line on stderr says what was refused
and where the journal and the log are. A refused process still gets the
refusal's message on its own stderr. --log-file FILE puts the log in FILE,
--log-file - on stderr (on the terminal, as without one); where the state
directory cannot take the log, it goes on stderr, after a line saying why.
Without a terminal the log goes to stderr, and a refusal whose message went to
that same pipe or file gets no log line repeating it.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError("run: no command given\nusage: paddock run [flags] -- CMD [ARG...]   (paddock run --help lists the flags; paddock run -- bash starts a supervised shell)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := applyTiniEnv(cmd, &f); err != nil {
				return err
			}
			return runRun(f, args)
		},
	}
	cmd.Flags().SetInterspersed(false)
	cmd.Flags().StringVar(&f.profile, "profile", "", "host profile `FILE` (TOML; default $PADDOCK_PROFILE, else $XDG_CONFIG_HOME/paddock/profile.toml); a broken profile stops paddock before CMD starts")
	cmd.Flags().StringVar(&f.journal, "journal", "", "append audit records (JSON Lines) to `FILE` (default $PADDOCK_JOURNAL, else $XDG_STATE_HOME/paddock/journal.jsonl)")
	cmd.Flags().Int64Var(&f.journalMax, "journal-max-bytes", journal.DefaultMaxBytes, "rotate the journal when it would grow past `BYTES`")
	cmd.Flags().IntVar(&f.journalKeep, "journal-keep", journal.DefaultKeep, "rotated journal files to keep (FILE.1 .. FILE.N)")
	cmd.Flags().StringVar(&f.journalMirror, "journal-mirror", "", "also send every journal record to `LOG`: journald or syslog (/dev/log), a copy an agent running as your user cannot rewrite (default $PADDOCK_JOURNAL_MIRROR, else none)")
	cmd.Flags().DurationVar(&f.journalLock, "journal-lock-wait", journal.DefaultLockWait, "wait at most `DURATION` for the journal's lock (another process holding it): past it the record is not written to the file (the mirror still gets it), an adoption is refused unless the mirror took its record, and paddock names the holder; at start, CMD is not started")
	cmd.Flags().StringVar(&f.logFormat, "log-format", "console", "log format: json or console")
	cmd.Flags().StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error (debug adds the start's details: backend reason, profile, socket, journal head, kernel wall)")
	cmd.Flags().StringVar(&f.logFile, "log-file", "", "write paddock's log to `FILE` (appended), or - for stderr (default: stderr, or $XDG_STATE_HOME/paddock/log/SESSION.log while paddock's stderr is a terminal, which CMD then has)")
	cmd.Flags().BoolVar(&f.noNotifyStderr, "no-notify-stderr", false, "do not write refusal messages to the refused process's stderr")
	cmd.Flags().BoolVar(&f.init, "init", false, "act as a container init even when not PID 1: forward every signal tini forwards (on by itself as PID 1)")
	cmd.Flags().BoolVarP(&f.forwardToGroup, "forward-to-group", "g", false, "start CMD in its own process group and forward signals to the whole group (tini -g; also $TINI_KILL_PROCESS_GROUP)")
	cmd.Flags().DurationVar(&f.grace, "grace", supervisor.DefaultGrace, "when CMD exits, processes it left running get SIGTERM, then SIGKILL after `DURATION` (0: at once); paddock exits as soon as none is left")
	cmd.Flags().BoolVar(&f.keepOrphans, "keep-orphans", false, "leave the processes CMD left running alone when it exits; a keeper then refuses their kills, ptrace and execs with a message (paddock sessions lists it)")
	cmd.Flags().BoolVar(&f.strictExec, "strict-exec", false, "refuse an exec paddock may not read (a caller that made itself non-dumpable) instead of letting it run journaled as exec_unread")
	cmd.Flags().BoolVar(&f.strict, "strict", false, "exit non-zero (1, or CMD's own non-zero status) when anything was refused, adopted (paddock adopt) or allowed by an opt-in, even if CMD succeeded (CI mode)")
	cmd.Flags().StringVar(&f.report, "report", "", "write a summary of the refusals to `FILE` at exit")
	cmd.Flags().StringVar(&f.reportFormat, "report-format", "json", "format of --report: json or junit")
	cmd.Flags().StringVar(&f.backend, "backend", "", "how trapped syscalls reach paddock: `auto` (seccomp listener when one can be installed, else ptrace), seccomp or ptrace (default $PADDOCK_BACKEND, else auto)")
	cmd.Flags().BoolVar(&f.noPty, "no-pty", false, "run CMD on your own terminal instead of a pty of its own: it shares paddock's session, so its kill(0) is refused, and it can push input into your shell (TIOCSTI) or hang up your terminal (docs/limits.md)")
	addTiniFlags(cmd, &f.tini)
	cmd.Flags().BoolVar(&f.strictWall, "strict-wall", false, "also have the kernel (Landlock) refuse the agent writes to /proc/PID files (oom_score_adj, ...) and cgroup files (cgroup.kill, cgroup.freeze, ...), its own included; mount(2) is refused too, so bwrap, unshare -m and rootless containers fail inside it (the profile's strict_wall = true does the same; docs/threat-model.md)")
	cmd.Flags().BoolVar(&f.keepCaps, "keep-caps", false, "leave a root agent as it is: keep CAP_SYS_PTRACE in its capability bounding set, and no mount namespace of its own with a read-only /proc/sysrq-trigger; also no Landlock domain (for any agent)")
	return cmd
}

// vramPrefetchDelay is how long after the start GPU detection begins in the
// background (a GPU workload's exec that comes sooner starts it at once).
const vramPrefetchDelay = 100 * time.Millisecond

// newLogger builds the supervisor's logger from the flags, rejecting values
// it does not know; it writes to stderr.
func newLogger(format, level string) (zerolog.Logger, error) {
	return newLoggerTo(os.Stderr, colour(os.Stderr, os.Getenv), format, level)
}

// newLoggerTo is newLogger writing to w, with colours or not (console).
func newLoggerTo(w io.Writer, colours bool, format, level string) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		return zerolog.Logger{}, fmt.Errorf("--log-level %q: want one of debug, info, warn, error", level)
	}
	var l zerolog.Logger
	switch format {
	case "json":
		l = zerolog.New(w)
	case "console":
		l = zerolog.New(zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05.000", NoColor: !colours, FormatPrepare: printableMessage})
	default:
		return zerolog.Logger{}, fmt.Errorf("--log-format %q: want json or console", format)
	}
	return l.Level(lvl).Hook(timeHook{}).With().Str("component", "paddock").Logger(), nil
}

// timeHook stamps each log line with its time in RFC 3339 with
// nanoseconds, in UTC: refusals a few milliseconds apart stay apart.
type timeHook struct{}

// Run implements zerolog.Hook.
func (timeHook) Run(e *zerolog.Event, _ zerolog.Level, _ string) {
	e.Str(zerolog.TimestampFieldName, time.Now().UTC().Format(time.RFC3339Nano))
}

// colour says whether console logs to f get colours: only on a terminal,
// and never when NO_COLOR is set (https://no-color.org).
func colour(f *os.File, getenv func(string) string) bool {
	if getenv("NO_COLOR") != "" {
		return false
	}
	return terminal.DeviceOf(f) != 0
}

// openJournal opens the journal: a path given with --journal must work, the
// default location is best effort (a warning, not a failure), unless its
// lock is held: a process that holds it (a leftover of an earlier agent,
// say) must not be able to have sessions run without their journal.
func openJournal(flagValue string, opts journal.Options, log zerolog.Logger) (*journal.Journal, error) {
	home, _ := os.UserHomeDir()
	path, err := journal.DefaultPath(flagValue, os.Getenv, home)
	if err == nil {
		var j *journal.Journal
		j, err = journal.Open(path, opts)
		if err == nil {
			return j, nil
		}
	}
	if flagValue != "" || os.Getenv("PADDOCK_JOURNAL") != "" {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if errors.As(err, new(*journal.LockError)) {
		return nil, fmt.Errorf("journal: %w; paddock does not start without it (end the holder, or give --journal another FILE)", err)
	}
	log.Warn().Err(err).Msg("no audit journal: refusals are still enforced and logged, but not journaled; set --journal FILE")
	return nil, nil
}

func runRun(f runFlags, args []string) error {
	// Before anything of the session: inside another, none starts (nest.go).
	if s, ok := findEnclosingSession(procfs.Default(), os.Getenv); ok {
		return nestedError(s)
	}
	if err := setPdeathsig(f.tini.pdeathsig); err != nil {
		return err
	}
	log, err := newLogger(f.logFormat, f.logLevel)
	if err != nil {
		return err
	}
	// First: catching an init's signals is most of its start, and goes on
	// beside the rest (see supervisor.CatchSignals).
	sigs := supervisor.CatchSignals(f.init, log)
	prof, err := loadProfile(f.profile)
	if err != nil {
		return err
	}
	// With a terminal, the agent gets a pty of its own (package terminal)
	// unless --no-pty or the profile's pty = false; nothing changes on the
	// user's terminal before relay.Start.
	var relay *terminal.Relay
	if !f.noPty && prof.Pty {
		if relay, err = terminal.New(os.Stdin, os.Stdout, os.Stderr); err != nil {
			return err
		}
	}
	if relay != nil {
		// Restores the user's terminal on every way out of here.
		defer relay.Close()
	}
	session, err := newSessionID()
	if err != nil {
		return err
	}
	// The log: a file of the session's own while CMD has the terminal
	// (runlog.go), else stderr.
	home, _ := os.UserHomeDir()
	rl, err := openRunLog(f.logFile, session, stderrIsTerminal(), os.Getenv, home)
	if err != nil {
		return err
	}
	errs := &errorCount{}
	logFile := os.Stderr
	// What paddock says on stderr itself when its log is in a file: on a
	// terminal, never waiting on one that takes nothing for longer than
	// the relay's bound.
	var say io.Writer = os.Stderr
	if relay != nil {
		say = relay.LogWriter(os.Stderr)
	}
	switch {
	case rl.file != nil:
		defer rl.close()
		logFile = rl.file
		if log, err = newLoggerTo(rl.file, false, f.logFormat, f.logLevel); err != nil {
			return err
		}
		log = log.Hook(errs)
	case relay != nil:
		// paddock's own lines, while the terminal is raw, need "\r\n".
		if log, err = newLoggerTo(relay.LogWriter(os.Stderr), colour(os.Stderr, os.Getenv), f.logFormat, f.logLevel); err != nil {
			return err
		}
	}
	if rl.fallback != nil {
		log.Warn().Err(rl.fallback).Msg("paddock's log cannot go to its file in the state directory; it goes to this terminal instead (--log-file FILE puts it elsewhere)")
	}
	// GPU detection (nvidia-smi, sysfs, a scan for display servers) runs
	// in the background from vramPrefetchDelay after the start (so that a
	// short command never shares the CPU with it), then every
	// vram.DefaultBudgetRefresh. A GPU workload's exec takes the latest
	// budget and never runs detection itself: before the first detection
	// ends it waits at most vram.DefaultBudgetWait, then gets the
	// conservative defaults.
	lastErr := ""
	budgets := vram.NewBudgetCache(vram.LiveSources(), vramSettings(prof), vram.CacheOptions{
		Delay: vramPrefetchDelay,
		Report: func(b vram.Budget, err error, took time.Duration) {
			// Once per distinct failure: refreshes repeat it every minute.
			if err != nil && err.Error() != lastErr {
				log.Warn().Err(err).Msg("VRAM detection failed; the VRAM preflight uses conservative defaults")
			}
			lastErr = ""
			if err != nil {
				lastErr = err.Error()
			}
			log.Debug().Str("vram", b.Describe()).Dur("took", took).Msg("VRAM budget")
		},
	})
	defer budgets.Close()
	gp := prof.GuardPolicy()
	gp.Supervised = true
	path, err := exec.LookPath(args[0])
	if err != nil {
		// As shells answer: 127 for a command that is not there, 126 for
		// one that is but cannot be executed (a directory, a 0644 file).
		code := 127
		if _, serr := os.Stat(args[0]); errors.Is(err, fs.ErrPermission) || (strings.Contains(args[0], "/") && serr == nil) {
			code = 126
		}
		fmt.Fprintf(os.Stderr, "paddock: %s: %v\n", args[0], errUnwrapExec(err))
		return exitError{code: code}
	}
	if f.reportFormat != "json" && f.reportFormat != "junit" {
		return usageError(fmt.Sprintf("--report-format %q: want json or junit", f.reportFormat))
	}
	bv := f.backend
	if bv == "" {
		bv = os.Getenv("PADDOCK_BACKEND")
	}
	backend, err := supervisor.ParseBackend(bv)
	if err != nil {
		return usageError("--backend: " + err.Error())
	}
	strictWall := f.strictWall || prof.StrictWall
	if strictWall && f.keepCaps {
		from := "--strict-wall"
		if !f.strictWall {
			from = "the profile's strict_wall = true (" + prof.Sources[profile.KeyStrictWall] + ")"
		}
		return usageError(from + " needs the kernel's wall, which --keep-caps turns off: use one of them")
	}
	if f.grace < 0 {
		return usageError(fmt.Sprintf("--grace %v: want a duration of 0 or more", f.grace))
	}
	if f.journalMax <= 0 || f.journalKeep <= 0 {
		return usageError(fmt.Sprintf("--journal-max-bytes %d / --journal-keep %d: both must be positive", f.journalMax, f.journalKeep))
	}
	if f.journalLock <= 0 {
		return usageError(fmt.Sprintf("--journal-lock-wait %v: want a positive duration (1s, 500ms)", f.journalLock))
	}
	if f.journalMax < minJournalBytes {
		return usageError(fmt.Sprintf("--journal-max-bytes %d: want at least %d (a file that small would rotate at nearly every record)", f.journalMax, minJournalBytes))
	}
	mv := f.journalMirror
	if mv == "" {
		mv = os.Getenv(journal.EnvMirror)
	}
	mirror, err := journal.ParseMirror(mv)
	if err != nil {
		return usageError("--journal-mirror: " + err.Error())
	}
	if f.report != "" {
		// Refuse now, not after the agent ran, a report directory other
		// users could plant a link in (a root paddock only).
		if err := journal.CheckDir(filepath.Dir(f.report)); err != nil {
			return fmt.Errorf("--report %s: %w", f.report, err)
		}
	}
	j, err := openJournal(f.journal, journal.Options{
		Session:  session,
		MaxBytes: f.journalMax, Keep: f.journalKeep, Mirror: mirror, LockWait: f.journalLock,
		MirrorError: func(err error) { log.Warn().Err(err).Msg("the journal mirror failed") },
		Rewritten: func(err error) {
			log.Error().Err(err).Msg("the audit journal was rewritten during this session; journaled as journal_rewritten (paddock journal --verify, docs/journal.md)")
		},
	}, log)
	if err != nil {
		return err
	}
	if j != nil {
		defer j.Close()
	}
	var stdio [3]*os.File
	var ctty *os.File
	var resize func(*unix.Winsize) error
	if relay != nil {
		stdio[0], stdio[1], stdio[2] = relay.Agent()
		ctty, resize = relay.Slave(), relay.AgentResize
		if err := relay.Start(); err != nil {
			return err
		}
	}
	// The session's start record, then the head at start, both before the
	// agent runs: its first refusal may be journaled before the start is logged.
	rec := journalStart(j, log, args)
	journalPath, head := "none", ""
	if j != nil {
		journalPath, head = j.Path(), j.Head()
	}
	s, err := supervisor.Start(supervisor.Config{
		Stdin: stdio[0], Stdout: stdio[1], Stderr: stdio[2], Terminal: ctty, Resize: resize,
		Path: path, Args: args, Journal: j, Log: log, NotifyStderr: !f.noNotifyStderr,
		TrapExec: true, StrictExec: f.strictExec, Adoption: supervisor.Adoption(prof.Adoption), Guard: gp, VRAM: budgets.Budget, LogFile: logFile,
		Init: f.init, ForwardToGroup: f.forwardToGroup, Grace: graceOf(f.grace), Bin: selfBin(), WarnOnReap: f.tini.warnOnReap, KeepOrphans: f.keepOrphans,
		Signals: sigs, Backend: backend, KeepCaps: f.keepCaps, StrictWall: strictWall, Slice: sched.SupervisorSlice, Boost: sched.SupervisorBoost,
		OOMScoreAdj: supervisor.SupervisorOOMScoreAdj,
	})
	if err != nil {
		rec.end(map[string]any{"error": err.Error()})
		return err
	}
	swept := sweepBeside(log)
	if relay != nil && !f.init && os.Getpid() != 1 && s.Pid() > 0 {
		// An init has no job-control shell above it to stop for.
		relay.Follow(s.Pid())
	}
	profName := prof.Path
	if profName == "" {
		profName = "defaults"
	}
	used, why := s.Backend()
	msg := "agent started"
	if s.Pid() == 0 {
		// Its exec failed (the error is on stderr); the status says how.
		msg = "agent command could not be executed"
	}
	unreadExec := "allowed, journaled as exec_unread (--strict-exec refuses them)"
	if f.strictExec {
		unreadExec = "refused (--strict-exec)"
	}
	// A short line; the details at debug (paddock doctor explains the
	// backend and the kernel's wall).
	log.Info().Str("session", session).Int("pid", s.Pid()).Str("backend", string(used)).Str("journal", journalPath).
		Str("command", strings.Join(args, " ")).Msg(msg)
	log.Debug().Str("session", session).Str("backend_reason", why).Str("profile", profName).Str("socket", s.SocketPath()).
		Str("journal_head", head).Str("unreadable_execs", unreadExec).Str("kernel_wall", s.KernelWall()).Msg("session details")
	started := time.Now()
	status := s.Wait()
	if f.keepOrphans {
		// What the agent left running carries the session's filter: a
		// keeper answers its calls once this paddock has exited.
		ka := keeperArgs{session: session, logFormat: f.logFormat, logLevel: f.logLevel, notify: !f.noNotifyStderr,
			opts: journal.Options{MaxBytes: f.journalMax, Keep: f.journalKeep, LockWait: f.journalLock}}
		if j != nil {
			ka.journal = j.Path()
		}
		if rl.file != nil {
			ka.log = rl.path
		}
		handOver(s, ka, log)
	}
	if relay != nil {
		// The agent's last output, then the user's terminal as it was,
		// before paddock's summary; never waiting without bound on a
		// terminal that takes nothing.
		if err := relay.Close(); err != nil {
			log.Warn().Err(err).Msg("the agent's last output was cut short")
			if rl.file != nil {
				// About the terminal itself: said there, the terminal
				// being the user's again.
				fmt.Fprintf(say, "paddock: the agent's last output was cut short: %v\n", err)
			}
		}
	}
	swept()
	sum := s.Summary()
	rec.end(map[string]any{"status": status, "refusals": sum.Refusals})
	line := log.Info().Str("session", session).Int("status", status)
	if j != nil {
		// The file is checked once more after the session's last record
		// (each append checked it before), then the chain's head as this
		// session left it: `paddock journal --verify --head` checks the
		// journal still holds this record.
		if err := j.Check(); err != nil && !errors.As(err, new(*journal.RewriteError)) {
			log.Error().Err(err).Msg("paddock could not check the audit journal at exit")
		}
		head = j.Head()
		if n := j.Rewrites(); n > 0 {
			line = log.Error().Str("session", session).Int("status", status).Int("journal_rewrites", n)
		}
	}
	line.Str("journal_head", head).Msg(summaryLine(sum))
	code := remapped(status, f.tini.remapExit)
	if f.strict && code == 0 && (sum.Refusals > 0 || sum.Widened()) {
		// An adoption or an honoured opt-in fails a strict run too: it is
		// the agent widening what it may do, on its own say-so.
		code = 1
	}
	if f.report != "" {
		rep := runReport{Session: session, Command: args, ExitCode: code, Status: status, Strict: f.strict, Started: started, Finished: time.Now(), Cleanup: s.Cleaned(), Summary: sum}
		if err := writeReport(f.report, f.reportFormat, rep); err != nil {
			log.Error().Err(err).Msg("could not write the report")
			if code == 0 {
				code = 1
			}
		}
	}
	if rl.file != nil {
		// The log is in its file; the user's terminal (stderr) gets one line,
		// last.
		jp := ""
		if j != nil {
			jp = j.Path()
		}
		fmt.Fprintln(say, closingLine(summaryLine(sum), errs.n.Load(), session, jp, rl.path, home))
	}
	return exitError{code: code}
}

// minJournalBytes is the smallest --journal-max-bytes: one record is a few
// hundred bytes to a few KiB.
const minJournalBytes = 64 << 10

// newSessionID names one paddock run: 12 random hex digits, in every
// journal record of the session and in its start and summary lines
// (`paddock journal --session ID` reads one session's records).
func newSessionID() (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("session id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// errUnwrapExec turns exec.LookPath's error into the plain reason.
func errUnwrapExec(err error) error {
	if e, ok := err.(*exec.Error); ok {
		return e.Err
	}
	return err
}

// graceOf is the supervisor's Grace for --grace d: 0 there means the
// library's default, and --grace 0 means none.
func graceOf(d time.Duration) time.Duration {
	if d == 0 {
		return supervisor.NoGrace
	}
	return d
}

// selfBin is this binary, for the agent's PATH ("" when it cannot be told).
func selfBin() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return exe
}
