package control

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// SocketEnv names the environment variable that tells the agent (and the
// paddock clients it runs) where its supervisor's control socket is.
const SocketEnv = "PADDOCK_SOCKET"

// Op names what a request asks of the session.
type Op string

// The operations a session serves.
const (
	// OpAdopt makes a process, and its descendants, owned by the session.
	OpAdopt Op = "adopt"
	// OpRelease drops an adoption.
	OpRelease Op = "release"
	// OpPs lists the processes the session owns.
	OpPs Op = "ps"
	// OpKill signals an owned process (or its wholly owned group).
	OpKill Op = "kill"
)

// Request is one control-socket request: one JSON object per connection.
type Request struct {
	Op         Op     `json:"op"`
	Pid        int    `json:"pid,omitempty"`
	Reason     string `json:"reason,omitempty"`
	LifelineOK bool   `json:"lifeline_ok,omitempty"`
	Signal     int    `json:"signal,omitempty"`
}

// Response is the supervisor's answer. Error holds a refusal's message.
type Response struct {
	OK        bool        `json:"ok"`
	Error     string      `json:"error,omitempty"`
	Lease     *LeaseInfo  `json:"lease,omitempty"`
	Processes []Process   `json:"processes,omitempty"`
	Signalled *Signalled  `json:"signalled,omitempty"`
	Released  *LeaseInfo  `json:"released,omitempty"`
	Session   SessionInfo `json:"session"`
}

// SessionInfo identifies the answering supervisor.
type SessionInfo struct {
	Supervisor int `json:"supervisor_pid"`
	Agent      int `json:"agent_pid"`
	// Ended is set by the keeper of a session that ended and left
	// processes running (paddock run --keep-orphans, package leftover).
	Ended *Ended `json:"ended,omitempty"`
}

// Ended says which session a keeper serves the leftovers of, and when it
// ended.
type Ended struct {
	Session string    `json:"session"`
	At      time.Time `json:"at"`
}

// LeaseInfo is a lease as reported to clients.
type LeaseInfo struct {
	Pid              int       `json:"pid"`
	Comm             string    `json:"comm"`
	StartTime        uint64    `json:"start_time"`
	Reason           string    `json:"reason"`
	AdoptedBy        string    `json:"adopted_by"`
	AdoptedAt        time.Time `json:"adopted_at"`
	LifelineOverride bool      `json:"lifeline_override,omitempty"`
}

// Process is one owned process as `paddock ps` shows it.
type Process struct {
	Pid       int        `json:"pid"`
	PPid      int        `json:"ppid"`
	Comm      string     `json:"comm"`
	StartTime uint64     `json:"start_time"`
	OwnedBy   string     `json:"owned_by"` // "tree" or "adopted"
	Agent     bool       `json:"agent,omitempty"`
	Reason    string     `json:"reason,omitempty"`
	AdoptedAt *time.Time `json:"adopted_at,omitempty"`
	Lease     int        `json:"lease,omitempty"` // the adopted ancestor it is owned through
}

// Signalled reports what `paddock kill` signalled.
type Signalled struct {
	Pid     int    `json:"pid"`
	Signal  int    `json:"signal"`
	Group   bool   `json:"group"`
	Members []int  `json:"members,omitempty"`
	Comm    string `json:"comm"`
}

const (
	// maxRequest bounds one request's size, its '\n' not counted.
	maxRequest = 64 << 10
	// maxSignal is the largest signal number on Linux (SIGRTMAX, _NSIG-1).
	maxSignal = 64
)

// readRequest reads one request: a JSON object on one line, at most
// maxRequest bytes. The '\n' may be left out by a client that closes its
// side of the connection after the object. timeout is what a read deadline
// on r was set to, for the error.
func readRequest(r io.Reader, timeout time.Duration) (Request, error) {
	line, err := bufio.NewReader(io.LimitReader(r, maxRequest+1)).ReadBytes('\n')
	body := bytes.TrimSuffix(line, []byte{'\n'})
	switch {
	case len(body) > maxRequest:
		return Request{}, fmt.Errorf("bad request: larger than %d KiB (a request is one JSON object on one line)", maxRequest>>10)
	case err == nil, errors.Is(err, io.EOF) && len(body) > 0:
	case errors.Is(err, os.ErrDeadlineExceeded):
		return Request{}, fmt.Errorf("bad request: no complete request within %v (send one JSON object, then a newline)", timeout)
	case errors.Is(err, io.EOF):
		return Request{}, errors.New("bad request: empty (the client sent nothing before closing its side)")
	default:
		return Request{}, fmt.Errorf("bad request: read: %w", err)
	}
	return decodeRequest(body)
}

// decodeRequest parses and checks one request line.
func decodeRequest(b []byte) (Request, error) {
	var req Request
	if err := json.Unmarshal(b, &req); err != nil {
		return Request{}, fmt.Errorf("bad request: not a JSON request object: %v", err)
	}
	switch req.Op {
	case OpAdopt, OpRelease, OpPs:
	case OpKill:
		if req.Signal < 0 || req.Signal > maxSignal {
			return Request{}, fmt.Errorf("bad request: signal %d is not a signal number (0 to %d)", req.Signal, maxSignal)
		}
	default:
		return Request{}, unknownOp(req.Op)
	}
	return req, nil
}

// unknownOp refuses an op no session serves, quoting at most 32 bytes of it.
func unknownOp(op Op) error {
	s := string(op)
	if len(s) > 32 {
		s = s[:32] + "..."
	}
	return fmt.Errorf("bad request: unknown op %q (want adopt, release, ps or kill)", s)
}
