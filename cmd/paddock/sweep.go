package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/rs/zerolog"

	"github.com/paddock-dev/paddock/control"
	"github.com/paddock-dev/paddock/internal/features"
)

// sweepBeside sweeps the session directories of paddocks that are gone
// (control.Sweep) on a goroutine of its own, beside the session rather
// than before it, and returns what waits for it and logs what it did.
func sweepBeside(log zerolog.Logger) (wait func()) {
	done := make(chan control.Swept, 1)
	go func() { done <- control.Sweep() }()
	return func() {
		sw := <-done
		if sw.Removed > 0 {
			log.Info().Int("removed", sw.Removed).Strs("under", sw.Bases).
				Msg("removed the session directories of paddock runs that are gone (killed, or their machine restarted)")
		}
		for _, e := range sw.Errors {
			log.Debug().Str("error", e).Msg("a session directory of a paddock run that is gone could not be removed")
		}
	}
}

// idStaleSessions is the doctor item for the sweep.
const idStaleSessions = "stale_sessions"

// sweptItem reports a sweep as a doctor item: ok when every directory
// found was removed, unknown (with the errors) when a base could not be
// read or a directory removed.
func sweptItem(sw control.Swept) features.Item {
	it := features.Item{ID: idStaleSessions, Name: "stale session directories", Status: features.OK}
	it.Value = fmt.Sprintf("found %d, removed %d", sw.Found, sw.Removed)
	if sw.Kept > 0 {
		it.Value += fmt.Sprintf(", %d kept (in use, or not known to be gone)", sw.Kept)
	}
	if len(sw.Bases) > 0 {
		it.Value += " under " + strings.Join(sw.Bases, ", ")
	}
	if sw.Found > 0 {
		it.Note = "left by paddock runs that were killed (SIGKILL, an OOM kill) or whose machine restarted; removed now"
	}
	if len(sw.Errors) > 0 {
		it.Status, it.Note = features.Unknown, strings.Join(sw.Errors, "; ")
	}
	return it
}

// idControlSocket is the doctor item for the control socket.
const idControlSocket = "control_socket"

// controlItem says whether paddock run could make its control socket here,
// by making one, as a session would (listen), and closing it at once: a
// sandbox that refuses unix sockets (Codex's, sandbox-runtime's) lets the
// seccomp listener be installed, so every other item looks well, and
// paddock run still fails at its start.
func controlItem(listen func() (io.Closer, string, error)) features.Item {
	it := features.Item{ID: idControlSocket, Name: "control socket", Status: features.OK}
	c, path, err := listen()
	if err != nil {
		it.Status, it.Value = features.Missing, oneLine(err.Error())
		it.Note = "paddock run cannot start here: every session serves a unix socket (adopt, ps, kill), and this process may not make one (a sandbox that refuses unix sockets, such as Codex's or sandbox-runtime's, or no writable runtime directory); run paddock outside the sandbox, around the harness"
		return it
	}
	it.Value = "can be made (tried at " + path + ", removed)"
	_ = c.Close()
	return it
}

// listenControl makes a control socket the way a session does, serving
// nothing: what controlItem tries.
func listenControl() (io.Closer, string, error) {
	s, err := control.Listen(control.Options{}, probeOps{})
	if err != nil {
		return nil, "", err
	}
	return s, s.Path(), nil
}

// probeOps serves doctor's trial socket, which no one asks anything: it
// refuses every request.
type probeOps struct{}

var errProbe = errors.New("paddock doctor's trial socket serves no session")

func (probeOps) Adopt(int, string, bool, string, bool) (control.LeaseInfo, error) {
	return control.LeaseInfo{}, errProbe
}
func (probeOps) Release(int, string) (control.LeaseInfo, error) { return control.LeaseInfo{}, errProbe }
func (probeOps) Owned() ([]control.Process, error)              { return nil, errProbe }
func (probeOps) Kill(int, int, int) (control.Signalled, error)  { return control.Signalled{}, errProbe }
func (probeOps) Info() control.SessionInfo                      { return control.SessionInfo{} }
func (probeOps) Inside(int) (bool, error)                       { return false, nil }
