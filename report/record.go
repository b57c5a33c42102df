package report

import (
	"strconv"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/journal"
)

// Bounds on an exec's argv as journaled.
const (
	journalArgs     = 64
	journalArgBytes = 4096
)

// Record renders a reported decision as its journal record: what was
// called, the rule, the message, and where the caller is (its labels).
func Record(ev Event) journal.Record {
	d := ev.Decision
	fields := map[string]any{"syscall": d.Syscall, "rule": string(d.Rule), "abi": ev.ABI}
	switch {
	case d.Exec != nil && (d.Action == audit.ExecDenied || d.Exec.Path != ""):
		fields["path"] = d.Exec.Path
		fields["argv"] = boundedArgv(d.Exec.Argv)
		if d.Exec.Truncated {
			fields["truncated"] = true
		}
	case d.Action == audit.SignalDenied:
		fields["target"], fields["signal"] = d.Target, d.Signal
	case d.Action == audit.WallDenied && d.Target != 0:
		fields["target"] = d.Target
	}
	if d.Message != "" {
		fields["message"] = d.Message
	}
	if d.Action == audit.OptInUsed {
		fields["opt_in"] = d.OptIn
	}
	if d.Unread && d.Exec != nil && d.Exec.Err != nil {
		fields["why"] = d.Exec.Err.Error()
	}
	for _, l := range ev.Labels {
		if l.Value != "" {
			fields[l.Key] = l.Value
		}
	}
	return journal.Record{TS: ev.When, Action: d.Action, Pid: ev.Caller, Fields: fields}
}

// boundedArgv keeps a journal record of a huge argv readable.
func boundedArgv(argv []string) []string {
	out := make([]string, 0, min(len(argv), journalArgs+1))
	total := 0
	for i, a := range argv {
		if i == journalArgs || total >= journalArgBytes {
			out = append(out, "...("+strconv.Itoa(len(argv)-i)+" more)")
			break
		}
		if len(a) > journalArgBytes-total {
			a = a[:journalArgBytes-total] + "..."
		}
		total += len(a)
		out = append(out, a)
	}
	return out
}
