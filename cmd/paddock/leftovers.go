package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/paddock-dev/paddock/internal/reexec"
	"github.com/paddock-dev/paddock/journal"
	"github.com/paddock-dev/paddock/leftover"
	"github.com/paddock-dev/paddock/ownership"
	"github.com/paddock-dev/paddock/supervisor"
)

// keeperJob is the re-executed child that answers the calls of what a
// --keep-orphans session left running (package leftover).
const keeperJob = "__leftovers"

// keeperChild is the keeper's reexec job: the listener on descriptor 3,
// the socket's path written to descriptor 4 once it serves.
func keeperChild() reexec.Child { return reexec.Child{Name: keeperJob, Main: keeperMain} }

// keeperArgs is what paddock run tells its keeper.
type keeperArgs struct {
	session, journal, log string
	logFormat, logLevel   string
	ended                 time.Time
	left                  []ownership.Identity
	opts                  journal.Options
	notify                bool
}

func (a keeperArgs) argv() []string {
	left := make([]string, len(a.left))
	for i, p := range a.left {
		left[i] = fmt.Sprintf("%d:%d", p.Pid, p.StartTime)
	}
	return []string{"-session", a.session, "-ended", strconv.FormatInt(a.ended.UnixNano(), 10),
		"-journal", a.journal, "-journal-max-bytes", strconv.FormatInt(a.opts.MaxBytes, 10),
		"-journal-keep", strconv.Itoa(a.opts.Keep), "-journal-lock-wait", a.opts.LockWait.String(),
		"-log", a.log, "-log-format", a.logFormat, "-log-level", a.logLevel, "-notify=" + strconv.FormatBool(a.notify), "-left", strings.Join(left, ",")}
}

func parseKeeperArgs(args []string) (keeperArgs, error) {
	var a keeperArgs
	var ended int64
	var left string
	fl := flag.NewFlagSet(keeperJob, flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	fl.StringVar(&a.session, "session", "", "")
	fl.Int64Var(&ended, "ended", 0, "")
	fl.StringVar(&a.journal, "journal", "", "")
	fl.Int64Var(&a.opts.MaxBytes, "journal-max-bytes", 0, "")
	fl.IntVar(&a.opts.Keep, "journal-keep", 0, "")
	fl.DurationVar(&a.opts.LockWait, "journal-lock-wait", 0, "")
	fl.StringVar(&a.log, "log", "", "")
	fl.StringVar(&a.logFormat, "log-format", "console", "")
	fl.StringVar(&a.logLevel, "log-level", "info", "")
	fl.BoolVar(&a.notify, "notify", true, "")
	fl.StringVar(&left, "left", "", "")
	if err := fl.Parse(args); err != nil {
		return a, err
	}
	a.ended = time.Unix(0, ended)
	for _, f := range strings.Split(left, ",") {
		pid, start, ok := strings.Cut(f, ":")
		p, err1 := strconv.Atoi(pid)
		s, err2 := strconv.ParseUint(start, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return a, fmt.Errorf("-left %q: want PID:START_TIME,...", left)
		}
		a.left = append(a.left, ownership.Identity{Pid: p, StartTime: s})
	}
	return a, nil
}

// keeperMain serves the leftovers until none carries the filter.
func keeperMain(args []string) int {
	ready := os.NewFile(4, "ready")
	a, err := parseKeeperArgs(args)
	if err != nil {
		fmt.Fprintf(ready, "error: %v\n", err)
		return 2
	}
	log := zerolog.Nop()
	if a.log != "" {
		if f, err := os.OpenFile(a.log, os.O_WRONLY|os.O_APPEND, 0); err == nil {
			defer f.Close()
			if log, err = newLoggerTo(f, false, a.logFormat, a.logLevel); err != nil {
				log = zerolog.Nop()
			}
		}
	}
	log = log.With().Str("keeper_of", a.session).Logger()
	var rec *sessionRecords
	var j *journal.Journal
	if a.journal != "" {
		id, err := newSessionID()
		if err == nil {
			a.opts.Session = id
			j, err = journal.Open(a.journal, a.opts)
		}
		if err != nil {
			// Refusals are still made, and logged; the ending paddock
			// said where its journal is.
			log.Error().Err(err).Msg("the keeper of what the session left running has no journal")
		} else {
			defer j.Close()
			rec = journalStart(j, log, []string{"(what paddock session " + a.session + " left running)"})
		}
	}
	sum, err := leftover.Serve(leftover.Config{
		Listener: os.NewFile(3, "seccomp-listener"), Session: a.session, Ended: a.ended, Processes: a.left,
		Journal: j, Log: log, NotifyStderr: a.notify,
		Ready: func(socket string) { fmt.Fprintln(ready, socket); ready.Close() },
	})
	status := 0
	if err != nil {
		log.Error().Err(err).Msg("the keeper of what the session left running stopped")
		fmt.Fprintf(ready, "error: %v\n", err) // when Ready was not reached
		status = 1
	}
	rec.end(map[string]any{"status": status, "refusals": sum.Refusals})
	return status
}

// handOver starts a keeper for what a --keep-orphans session left
// running, when anything was, and says so in the log: its pid, the
// control socket it serves and how many processes it took.
func handOver(s *supervisor.Session, a keeperArgs, log zerolog.Logger) {
	left, err := s.HandOver()
	if errors.Is(err, supervisor.ErrNothingLeft) {
		return
	}
	if err != nil {
		log.Warn().Err(err).Msg("what the agent left running keeps paddock's filter with nobody to answer it: its kills and execs will fail with ENOSYS")
		return
	}
	defer left.Listener.Close()
	a.left, a.ended = left.Processes, time.Now()
	r, w, err := os.Pipe()
	if err != nil {
		log.Warn().Err(err).Msg("no keeper for what the agent left running")
		return
	}
	defer r.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		w.Close()
		log.Warn().Err(err).Msg("no keeper for what the agent left running")
		return
	}
	defer null.Close()
	cmd := exec.Command(reexec.Self, append([]string{keeperJob}, a.argv()...)...)
	cmd.Args[0] = "paddock"
	// Not the caller's stdio (a $(paddock run ...) would wait for it) nor
	// its terminal or process group: a session of its own.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = null, null, null
	cmd.ExtraFiles = []*os.File{left.Listener, w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	w.Close()
	if err != nil {
		log.Warn().Err(err).Msg("no keeper for what the agent left running: its kills and execs will fail with ENOSYS")
		return
	}
	line, _ := bufio.NewReader(r).ReadString('\n')
	line = strings.TrimSpace(line)
	pid := cmd.Process.Pid
	_ = cmd.Process.Release()
	if line == "" || strings.HasPrefix(line, "error: ") {
		log.Warn().Str("keeper_error", strings.TrimPrefix(line, "error: ")).Int("keeper", pid).
			Msg("the keeper of what the agent left running did not start: their kills and execs will fail with ENOSYS")
		return
	}
	names := make([]string, 0, len(left.Processes))
	for _, p := range left.Processes {
		names = append(names, fmt.Sprintf("%d (%s)", p.Pid, left.Comms[p.Pid]))
	}
	log.Warn().Int("keeper", pid).Str("socket", line).Str("left", strings.Join(names, ", ")).
		Msg("the agent left processes running (--keep-orphans); from now on a keeper refuses their kills, ptrace and execs with a message saying why (paddock sessions lists it; paddock ps --socket SOCKET lists them)")
}
