package features

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/filter"
	"github.com/paddock-dev/paddock/internal/reexec"
	"github.com/paddock-dev/paddock/internal/seccomp"
)

// ProbeArg is argv[1] of the re-executed binary that runs the listener
// probe (see ProbeChild).
const ProbeArg = "__paddock_probe"

// envProbeChild marks the probe child's environment. A binary that does not
// serve ProbeChild runs its ordinary main in the child instead; if that
// main probes again, Probe sees the mark and stops there instead of
// starting children without end (a test binary would run its tests).
const envProbeChild = "PADDOCK_PROBE_CHILD"

// probeTimeout bounds the probe child: it does three syscalls and prints.
const probeTimeout = 5 * time.Second

// ListenerProbe is what the probe child found (see ProbeChild). Errno
// fields hold the kernel's names ("EBUSY"); a nil flag was not tried.
type ListenerProbe struct {
	// Error is set when the probe could not be run or did not answer; then
	// nothing else here is known.
	Error                 string `json:"error,omitempty"`
	Listener              bool   `json:"listener"`
	ListenerErrno         string `json:"listener_errno,omitempty"`
	ListenerError         string `json:"listener_error,omitempty"`
	WaitKillableRecv      *bool  `json:"wait_killable_recv"`
	WaitKillableRecvErrno string `json:"wait_killable_recv_errno,omitempty"`
	SyncWakeUp            *bool  `json:"sync_wake_up"`
	SyncWakeUpErrno       string `json:"sync_wake_up_errno,omitempty"`
}

// ProbeChild is the listener probe as a job of package reexec. Every binary
// whose path is given to Probe must serve it: reexec.Run(features.ProbeChild(),
// ...) first thing in main (or TestMain).
//
// The child sets no_new_privs, installs on its locked thread a
// one-instruction filter that allows everything with
// SECCOMP_FILTER_FLAG_NEW_LISTENER|SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
// (without WAIT_KILLABLE_RECV if the kernel answers EINVAL), asks for
// SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP on the listener, prints a
// ListenerProbe as one JSON object on stdout and exits 0. The filter traps
// nothing, so nothing in the child ever waits on the listener.
func ProbeChild() reexec.Child {
	return reexec.Child{Name: ProbeArg, Main: probeMain}
}

// probeMain is the probe child's main.
func probeMain([]string) int {
	if err := json.NewEncoder(os.Stdout).Encode(probeListener()); err != nil {
		fmt.Fprintf(os.Stderr, "paddock: listener probe: write the result: %v\n", err)
		return 1
	}
	return 0
}

// probeListener installs a listener on the calling thread, which it locks
// for good: the filter cannot be removed, so the thread must not go back to
// the Go scheduler's pool. Only the probe child may call it.
func probeListener() ListenerProbe {
	runtime.LockOSThread()
	var p ListenerProbe
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		p.ListenerErrno, p.ListenerError = errnoName(err), fmt.Sprintf("prctl(PR_SET_NO_NEW_PRIVS): %v", err)
		return p
	}
	prog := []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW}}
	// Before 5.19 WAIT_KILLABLE_RECV is unknown; without it the kernel may
	// still take the listener (or reject it too: no user notification).
	fd, unkillable, err := filter.InstallListener(prog, filter.Install)
	killable, killableErrno := unkillable == nil, ""
	if unkillable != nil {
		killableErrno = errnoName(unkillable)
	}
	if err != nil {
		p.ListenerErrno, p.ListenerError = errnoName(err), err.Error()
		return p
	}
	defer unix.Close(fd)
	p.Listener = true
	p.WaitKillableRecv, p.WaitKillableRecvErrno = &killable, killableErrno
	sync := true
	if err := seccomp.SetSyncWakeUp(fd); err != nil {
		sync, p.SyncWakeUpErrno = false, errValue(err)
	}
	p.SyncWakeUp = &sync
	return p
}

// runProbe executes self with ProbeArg from the calling thread and reads
// its answer. Every way it can fail is an Error, never a success.
func runProbe(self string) ListenerProbe {
	if os.Getenv(envProbeChild) != "" {
		return ListenerProbe{Error: fmt.Sprintf("this process is itself a probe child that did not run the probe (%s=%s is set): its binary does not serve features.ProbeChild (reexec.Run first thing in main)", envProbeChild, os.Getenv(envProbeChild))}
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	cmd := reexec.CommandContext(ctx, ProbeArg)
	if self != "" {
		cmd.Path, cmd.Args[0] = self, self
	}
	path := cmd.Path
	cmd.Env = append(os.Environ(), envProbeChild+"=1")
	var stdout, stderr capped
	stdout.max, stderr.max = 64<<10, 4<<10
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Its own process group, so that a child gone wrong is killed whole.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return unix.Kill(-cmd.Process.Pid, unix.SIGKILL) }
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	switch {
	case ctx.Err() != nil:
		return ListenerProbe{Error: fmt.Sprintf("the probe child %s did not answer within %v and was killed", path, probeTimeout)}
	case err != nil:
		return ListenerProbe{Error: fmt.Sprintf("the probe child %s %s: %v%s", path, ProbeArg, err, tail(stderr.b.String()))}
	}
	var p ListenerProbe
	dec := json.NewDecoder(bytes.NewReader(stdout.b.Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return ListenerProbe{Error: fmt.Sprintf("the probe child %s %s printed no result (%v); does the binary serve features.ProbeChild (reexec.Run first thing in main)?", path, ProbeArg, err)}
	}
	if p.Error != "" || !p.Listener && p.ListenerErrno == "" && p.ListenerError == "" {
		return ListenerProbe{Error: fmt.Sprintf("the probe child %s %s printed an incomplete result: %s", path, ProbeArg, strings.TrimSpace(stdout.b.String()))}
	}
	return p
}

// tail quotes the last line of a child's stderr for an error message.
func tail(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return " (stderr: " + s + ")"
}

// capped keeps the first max bytes written to it and drops the rest.
type capped struct {
	b   bytes.Buffer
	max int
}

// Write implements io.Writer; it never fails, so the child never blocks.
func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.b.Len(); room > 0 {
		c.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
