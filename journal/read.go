package journal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// Read parses a journal from r. It returns the records in file order and,
// separately, a torn final line: a last line that lacks its '\n' or does not
// parse as a JSON object, which is what a crash in the middle of a write
// leaves behind (a last line of blanks only is skipped, like any blank
// line). Readers report the torn line instead of failing on it.
//
// Values decode as encoding/json does into an any (numbers, pid included,
// are float64). Empty lines are skipped. A line other than the last that
// does not parse is corruption, not a torn write: Read keeps going, returns
// every good record, and reports the bad lines in err (as a *CorruptError).
// err is also set, with the records read so far, if r fails.
func Read(r io.Reader) (recs []map[string]any, torn string, err error) {
	var corrupt []int
	t, err := scanLines(r, func(l Line) {
		if l.Rec == nil {
			corrupt = append(corrupt, l.No)
			return
		}
		recs = append(recs, l.Rec)
	})
	if err != nil {
		return recs, "", err
	}
	if len(corrupt) > 0 {
		return recs, string(t), &CorruptError{Lines: corrupt}
	}
	return recs, string(t), nil
}

// CorruptError reports journal lines, other than the last, that are not JSON
// objects. paddock never writes such lines, so they mean the file was edited
// or damaged; Read still returns every good record around them.
type CorruptError struct {
	Lines []int // 1-based line numbers
}

// Error names the first bad line and how many there are.
func (e *CorruptError) Error() string {
	if len(e.Lines) == 1 {
		return fmt.Sprintf("journal: line %d is not a JSON object", e.Lines[0])
	}
	return fmt.Sprintf("journal: %d lines are not JSON objects (first: line %d)", len(e.Lines), e.Lines[0])
}

// Line is one non-blank line of a journal file, as stored.
type Line struct {
	No  int            // 1-based line number in its file
	Raw []byte         // the line without its '\n'
	Rec map[string]any // the parsed record; nil when the line is not a JSON object
}

// ParseLine parses one journal line (without its '\n') the way Read does: it
// must be a JSON object.
func ParseLine(line []byte) (map[string]any, bool) {
	var rec map[string]any
	if json.Unmarshal(line, &rec) != nil || rec == nil {
		return nil, false
	}
	return rec, true
}

// ReadLines is Read for callers that must reproduce records exactly as
// stored. It applies Read's rules: blank lines are skipped; a last line that
// lacks its '\n' or does not parse is returned as torn, not in lines; any
// other line that does not parse is returned with a nil Rec (what Read
// reports as a *CorruptError). err is set only when r fails, with the lines
// read so far.
func ReadLines(r io.Reader) (lines []Line, torn []byte, err error) {
	torn, err = scanLines(r, func(l Line) { lines = append(lines, l) })
	return lines, torn, err
}

// scanLines is the one reading of a journal's lines under the torn-line
// rules, which Read and ReadLines share. It calls each with every line that
// is neither blank nor torn, in file order, Rec nil for one that does not
// parse (corruption: it is not the last line). torn is the last line when
// it lacks its '\n' (even if it parses: its writer never finished it) or
// does not parse; a last line of blanks only is a blank line, skipped. err
// is set only when r fails, with each called for the lines before.
func scanLines(r io.Reader, each func(Line)) (torn []byte, err error) {
	br := bufio.NewReader(r)
	var pending *Line // the last complete line, when it failed to parse
	for no := 1; ; no++ {
		b, rerr := br.ReadBytes('\n')
		if rerr != nil && rerr != io.EOF {
			return nil, fmt.Errorf("journal: read: %w", rerr)
		}
		if rerr == io.EOF {
			if len(bytes.TrimSpace(b)) > 0 {
				// An earlier bad line is not the last one after all.
				if pending != nil {
					each(*pending)
				}
				return b, nil
			}
			if pending != nil {
				return pending.Raw, nil
			}
			return nil, nil
		}
		if pending != nil {
			each(*pending)
			pending = nil
		}
		body := b[:len(b)-1]
		if len(bytes.TrimSpace(body)) == 0 {
			continue
		}
		rec, ok := ParseLine(body)
		if !ok {
			pending = &Line{No: no, Raw: body}
			continue
		}
		each(Line{No: no, Raw: body, Rec: rec})
	}
}
