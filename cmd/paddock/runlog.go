package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/journal"
	"github.com/paddock-dev/paddock/terminal"
)

// Where paddock run's own log goes.
//
// While CMD has the user's terminal, paddock writes nothing of its own on
// it but a fatal error and, at exit, one line: its log (each refusal's
// line, the start line, warnings) would be drawn over the agent's screen
// (Claude Code's, Codex's TUI). So when paddock's stderr is a terminal,
// the log goes to a file of the session's own in paddock's state
// directory, beside the default journal: $XDG_STATE_HOME/paddock/log/
// SESSION.log (~/.local/state/paddock/log/SESSION.log). --log-file FILE
// puts it in FILE, --log-file - on stderr, as without a terminal.

// logStderr is the --log-file value for paddock's stderr.
const logStderr = "-"

// keepLogs is how many session logs the log directory keeps: each
// paddock run that makes one removes the oldest beyond it (never the log
// of a session still running).
const keepLogs = 100

// runLog is where a paddock run logs.
type runLog struct {
	// file is the log file; nil: paddock's stderr.
	file *os.File
	// path names file ("" with stderr).
	path string
	// fallback says why the default file could not be had, when the log
	// went to stderr instead of it.
	fallback error
	// own: file is the session's own (the default), made for this run.
	own bool
}

// close closes the log file; the session's own file is removed when
// nothing was written to it (paddock stopped before its first line: a
// command not found, a bad flag).
func (l runLog) close() {
	if l.file == nil {
		return
	}
	if fi, err := l.file.Stat(); l.own && err == nil && fi.Size() == 0 {
		_ = os.Remove(l.path)
	}
	_ = l.file.Close()
}

// logDir is the directory session logs go in by default: paddock's state
// directory, where the default journal is.
func logDir(getenv func(string) string, home string) (string, error) {
	if s := getenv("XDG_STATE_HOME"); s != "" && filepath.IsAbs(s) {
		return filepath.Join(s, "paddock", "log"), nil
	}
	if home != "" && filepath.IsAbs(home) {
		return filepath.Join(home, ".local", "state", "paddock", "log"), nil
	}
	return "", errors.New("no state directory: XDG_STATE_HOME and HOME are not absolute paths")
}

// openRunLog opens the log of session as --log-file (flagValue) says:
// "-" is stderr; a FILE must open, or paddock does not start; by default
// the log goes to the session's file in logDir when stderr is a terminal
// (stderrTTY), else to stderr. A default file that cannot be had is not
// fatal: the log goes to stderr, and fallback says why.
func openRunLog(flagValue, session string, stderrTTY bool, getenv func(string) string, home string) (runLog, error) {
	switch {
	case flagValue == logStderr:
		return runLog{}, nil
	case flagValue != "":
		err := journal.CheckDir(filepath.Dir(flagValue))
		var f *os.File
		if err == nil {
			f, err = openLogFile(flagValue, unix.O_APPEND)
		}
		if err != nil {
			return runLog{}, fmt.Errorf("--log-file %s: %w", flagValue, err)
		}
		return runLog{file: f, path: flagValue}, nil
	case !stderrTTY:
		return runLog{}, nil
	}
	dir, err := logDir(getenv, home)
	if err == nil {
		err = os.MkdirAll(dir, 0o700)
	}
	if err == nil {
		err = journal.CheckDir(dir)
	}
	if err != nil {
		return runLog{fallback: fmt.Errorf("log directory: %w", err)}, nil
	}
	path := filepath.Join(dir, session+".log")
	f, err := openLogFile(path, unix.O_EXCL)
	if err != nil {
		return runLog{fallback: err}, nil
	}
	pruneLogs(dir, keepLogs)
	return runLog{file: f, path: path, own: true}, nil
}

// openLogFile opens path for writing (created 0600), with extra flags
// (O_APPEND, O_EXCL), under the rules of every file paddock writes
// (docs/journal.md): no symbolic link followed, and only a regular file of
// paddock's effective uid with one link. It holds a shared lock on it while
// paddock runs: pruneLogs leaves a locked log alone.
func openLogFile(path string, extra int) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK|extra, 0o600)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	err = unix.Fstat(fd, &st)
	switch {
	case err != nil:
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		err = errors.New("not a regular file")
	case int(st.Uid) != os.Geteuid():
		err = fmt.Errorf("owned by uid %d, not by paddock's effective uid %d: refusing a file another user controls", st.Uid, os.Geteuid())
	case st.Nlink != 1:
		err = fmt.Errorf("%d links: refusing a file with another name", st.Nlink)
	}
	if err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	// Back to blocking: O_NONBLOCK only kept the open from waiting on a FIFO.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	_ = unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB)
	return os.NewFile(uintptr(fd), path), nil
}

// pruneLogs removes the oldest session logs (SESSION.log, by modification
// time) in dir beyond the newest keep, skipping any whose session still
// runs (it holds a lock on its log). Best effort: what cannot be removed
// stays.
func pruneLogs(dir string, keep int) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type logFile struct {
		name string
		mod  int64
	}
	var logs []logFile
	for _, e := range entries {
		if !e.Type().IsRegular() || !isSessionLog(e.Name()) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		logs = append(logs, logFile{e.Name(), info.ModTime().UnixNano()})
	}
	if len(logs) <= keep {
		return
	}
	sort.Slice(logs, func(i, j int) bool { return logs[i].mod > logs[j].mod })
	for _, l := range logs[keep:] {
		path := filepath.Join(dir, l.name)
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			continue
		}
		if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil {
			_ = os.Remove(path)
		}
		unix.Close(fd)
	}
}

// isSessionLog reports whether name is a session's log: a session id
// (newSessionID: 12 hex digits) and ".log".
func isSessionLog(name string) bool {
	id, ok := strings.CutSuffix(name, ".log")
	if !ok || len(id) != 12 {
		return false
	}
	for _, c := range id {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// errorCount counts the log's lines at error level and above, for the
// closing line on the terminal.
type errorCount struct{ n atomic.Int64 }

// Run implements zerolog.Hook.
func (c *errorCount) Run(_ *zerolog.Event, level zerolog.Level, _ string) {
	if level >= zerolog.ErrorLevel && level < zerolog.NoLevel {
		c.n.Add(1)
	}
}

// closingLine is the one line paddock writes on its stderr at exit when
// its log went to a file: the summary (summaryLine), the errors its log
// holds, the session and where its journal and log are.
func closingLine(summary string, errs int64, session, journalPath, logPath, home string) string {
	line := "paddock: " + summary
	if errs > 0 {
		line += "; " + counted(int(errs), "error", "errors") + " in its log"
	}
	j := "none"
	if journalPath != "" {
		j = tildePath(journalPath, home)
	}
	return fmt.Sprintf("%s. Session %s: journal %s, log %s", line, session, j, tildePath(logPath, home))
}

// tildePath writes path under home as ~/..., as a shell takes it back.
func tildePath(path, home string) string {
	if home == "" || home == "/" || !filepath.IsAbs(path) {
		return path
	}
	if rest, ok := strings.CutPrefix(path, strings.TrimSuffix(home, "/")+"/"); ok && !strings.ContainsAny(rest, " \t\n'\"\\$`") {
		return "~/" + rest
	}
	return path
}

// stderrIsTerminal reports whether paddock's stderr is a terminal (the
// user's, which CMD is about to have).
func stderrIsTerminal() bool { return terminal.DeviceOf(os.Stderr) != 0 }
