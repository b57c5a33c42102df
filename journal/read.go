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
	br := bufio.NewReader(r)
	var corrupt []int
	var pending []byte // last complete line that failed to parse
	pendingLine := 0
	for lineNo := 1; ; lineNo++ {
		line, rerr := br.ReadBytes('\n')
		if rerr != nil && rerr != io.EOF {
			return recs, "", fmt.Errorf("journal: read: %w", rerr)
		}
		if rerr == io.EOF {
			// A blank fragment is a blank line, skipped like the others.
			if len(bytes.TrimSpace(line)) > 0 {
				// Last line without '\n': torn, even if it parses,
				// since the writer never finished it. An earlier
				// bad line is then not the last one after all.
				if pending != nil {
					corrupt = append(corrupt, pendingLine)
				}
				torn = string(line)
			} else if pending != nil {
				torn = string(pending)
			}
			break
		}
		if pending != nil {
			corrupt = append(corrupt, pendingLine)
			pending = nil
		}
		body := bytes.TrimSuffix(line, []byte{'\n'})
		if len(bytes.TrimSpace(body)) == 0 {
			continue
		}
		var rec map[string]any
		if json.Unmarshal(body, &rec) != nil || rec == nil {
			pending, pendingLine = body, lineNo
			continue
		}
		recs = append(recs, rec)
	}
	if len(corrupt) > 0 {
		return recs, torn, &CorruptError{Lines: corrupt}
	}
	return recs, torn, nil
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
