package main

import (
	"errors"
	"maps"
	"os"
	"path/filepath"

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
	if abs, err := filepath.Abs(j.Path()); err == nil {
		// Which journal the session writes to, for a mirror shared by
		// several (paddock journal --verify --mirror).
		fields["journal"] = abs
	}
	if id, err := procfs.Default().Self(); err != nil {
		log.Debug().Err(err).Msg("the session's start record does not say who runs it")
	} else {
		maps.Copy(fields, journal.IdentityFields(id))
	}
	sr := &sessionRecords{j: j, log: log}
	sr.append(audit.SessionStarted, fields)
	return sr
}

// end appends the session_ended record, with fields saying how it ended,
// and which records were the session's own: how many paddock wrote to the
// file before this one ("records") and the SHA-256 over them
// ("records_sha256", journal.Journal.Own), which paddock journal --verify
// checks against the session's records in the file, so that a record
// removed and the chain recomputed around it shows; with the times the
// file was found rewritten during the session ("journal_rewrites"), if any.
func (sr *sessionRecords) end(fields map[string]any) {
	if sr == nil {
		return
	}
	// The check Append would make first, now: a journal_rewritten it
	// writes is then among the records counted.
	if err := sr.j.Check(); err != nil && !errors.As(err, new(*journal.RewriteError)) {
		sr.log.Error().Err(err).Msg("paddock could not check the audit journal at the session's end")
	}
	fields["records"], fields["records_sha256"] = sr.j.Own()
	if n := sr.j.Rewrites(); n > 0 {
		fields["journal_rewrites"] = n
	}
	sr.append(audit.SessionEnded, fields)
}

func (sr *sessionRecords) append(a audit.Action, fields map[string]any) {
	if err := sr.j.Append(journal.Record{Action: a, Pid: os.Getpid(), Fields: fields}); err != nil {
		sr.log.Error().Err(err).Str("action", string(a)).Msg("paddock could not write the audit journal")
	}
}
