package main

import (
	"maps"
	"os"

	"github.com/rs/zerolog"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/journal"
)

// sessionRecords journals a session's start and its end, so that the
// journal can show a session whose paddock died without its last word
// (paddock journal: "ended abnormally").
type sessionRecords struct {
	j   *journal.Journal
	log zerolog.Logger
}

// journalStart appends the session_started record for a session running
// command: paddock's pid with its start time, boot and PID namespace
// (journal.IdentityFields), by which a reader tells whether it still runs.
// It returns nil without a journal.
func journalStart(j *journal.Journal, log zerolog.Logger, command []string) *sessionRecords {
	if j == nil {
		return nil
	}
	fields := map[string]any{"command": command}
	if id, err := procfs.Default().Self(); err != nil {
		log.Debug().Err(err).Msg("the session's start record does not say who runs it")
	} else {
		maps.Copy(fields, journal.IdentityFields(id))
	}
	sr := &sessionRecords{j: j, log: log}
	sr.append(audit.SessionStarted, fields)
	return sr
}

// end appends the session_ended record, with fields saying how it ended.
func (sr *sessionRecords) end(fields map[string]any) {
	if sr != nil {
		sr.append(audit.SessionEnded, fields)
	}
}

func (sr *sessionRecords) append(a audit.Action, fields map[string]any) {
	if err := sr.j.Append(journal.Record{Action: a, Pid: os.Getpid(), Fields: fields}); err != nil {
		sr.log.Error().Err(err).Str("action", string(a)).Msg("paddock could not write the audit journal")
	}
}
