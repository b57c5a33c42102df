package main

import (
	"fmt"
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
