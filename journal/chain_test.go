package journal

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// verifyClean verifies the journal at path and fails the test on any break
// or warning.
func verifyClean(t *testing.T, path string) *Verification {
	t.Helper()
	v, err := Verify(path, "")
	if err != nil {
		t.Fatalf("Verify(%s): %v", path, err)
	}
	for _, p := range append(v.Breaks, v.Warnings...) {
		t.Errorf("Verify: %v", p)
	}
	return v
}

// fileLines reads a journal file as lines, each with its '\n'.
func fileLines(t *testing.T, name string) [][]byte {
	t.Helper()
	raw, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(raw, []byte{'\n'})
}

func writeLines(t *testing.T, name string, lines [][]byte) {
	t.Helper()
	if err := os.WriteFile(name, bytes.Join(lines, nil), 0o600); err != nil {
		t.Fatal(err)
	}
}

// editLines rewrites the file name through f, which gets its lines (each
// with its '\n'; the last element is what follows the last '\n').
func editLines(t *testing.T, name string, f func([][]byte) [][]byte) {
	t.Helper()
	writeLines(t, name, f(fileLines(t, name)))
}

// writeChained writes n records to a fresh journal that rotates every few
// records (three files: path.2, path.1, path) and returns its path.
func writeChained(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "j.jsonl")
	// One timestamp for all: RFC 3339 drops a timestamp's trailing zeros,
	// so records stamped now differ in length, and a first record a few
	// bytes short made files of 4 records now and then.
	ts := time.Date(2026, 12, 4, 8, 0, 0, 123456789, time.UTC)
	rec := func(seq int) Record { r := seqRecord(0, seq); r.TS = ts; return r }
	line, err := encode(rec(0))
	if err != nil {
		t.Fatal(err)
	}
	j, err := Open(path, Options{MaxBytes: int64(5 * (len(line) + prevLen + 2)), Keep: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for i := range n {
		if err := j.Append(rec(i)); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func TestVerify(t *testing.T) {
	legacy := []byte(`{"ts":"2025-01-01T00:00:00Z","action":"signal_denied","pid":7}` + "\n")
	tests := []struct {
		name   string
		tamper func(t *testing.T, path string)
		// the first break, if any: file suffix ("", ".1", ".2"), line,
		// and words of its message
		file    string
		line    int
		msg     string
		warn    string // words of a warning, if one is expected
		records int    // records Verify counts; 0: the 14 written
		legacy  int
	}{
		{name: "clean", tamper: func(*testing.T, string) {}},
		{name: "edited record in the live file", tamper: func(t *testing.T, p string) {
			editLines(t, p, func(l [][]byte) [][]byte {
				l[1] = bytes.Replace(l[1], []byte(`"seq":11`), []byte(`"seq":99`), 1)
				return l
			})
		}, line: 3, msg: "prev is"},
		{name: "removed record in the live file", tamper: func(t *testing.T, p string) {
			editLines(t, p, func(l [][]byte) [][]byte { return append(l[:1:1], l[2:]...) })
		}, line: 2, msg: "but line 1 hashes to", records: 13},
		{name: "reordered records", tamper: func(t *testing.T, p string) {
			editLines(t, p, func(l [][]byte) [][]byte { l[1], l[2] = l[2], l[1]; return l })
		}, line: 2, msg: "a record was removed, edited or inserted before this one"},
		{name: "inserted record with a copied prev", tamper: func(t *testing.T, p string) {
			editLines(t, p, func(l [][]byte) [][]byte {
				forged := bytes.Replace(l[1], []byte(`"seq":11`), []byte(`"seq":42`), 1)
				return append(l[:1:1], append([][]byte{forged}, l[1:]...)...)
			})
		}, line: 3, msg: "but line 2 hashes to", records: 15},
		{name: "inserted record without prev", tamper: func(t *testing.T, p string) {
			editLines(t, p, func(l [][]byte) [][]byte { return append(l[:1:1], append([][]byte{legacy}, l[1:]...)...) })
		}, line: 2, msg: "no prev, but line 1 before it is chained", records: 15},
		{name: "removed last record of the rotated file", tamper: func(t *testing.T, p string) {
			editLines(t, p+".1", func(l [][]byte) [][]byte { return append(l[:len(l)-2], l[len(l)-1]) })
		}, line: 1, msg: "but j.jsonl.1 line 4 hashes to", records: 13},
		{name: "edited record of the oldest file", tamper: func(t *testing.T, p string) {
			editLines(t, p+".2", func(l [][]byte) [][]byte {
				l[0] = bytes.Replace(l[0], []byte(`kill(SIGKILL)`), []byte(`kill(SIGTERM)`), 1)
				return l
			})
		}, file: ".2", line: 2, msg: "but line 1 hashes to"},
		{name: "rotated file removed", tamper: func(t *testing.T, p string) {
			if err := os.Remove(p + ".1"); err != nil {
				t.Fatal(err)
			}
		}, line: 1, msg: "but j.jsonl.2 line 5 hashes to", records: 9},
		{name: "records moved between files", tamper: func(t *testing.T, p string) {
			a, b := fileLines(t, p+".1"), fileLines(t, p)
			writeLines(t, p+".1", append(a[:len(a)-1:len(a)-1], b[0], a[len(a)-1]))
			writeLines(t, p, b[1:])
		}},
		{name: "prev edited into no hash", tamper: func(t *testing.T, p string) {
			editLines(t, p, func(l [][]byte) [][]byte {
				i := bytes.Index(l[2], []byte(`"prev":"`)) + len(`"prev":"`)
				l[2] = append(l[2][:i:i], []byte(`zz"}`+"\n")...)
				return l
			})
		}, line: 3, msg: "is not a SHA-256"},
		{name: "torn last line", tamper: func(t *testing.T, p string) {
			editLines(t, p, func(l [][]byte) [][]byte { return append(l, []byte(`{"ts":"2025-01-01T00:0`)) })
		}, warn: "torn last line: a write was cut short"},
		{name: "a record cut short, ended by the next write", tamper: func(t *testing.T, p string) {
			editLines(t, p, func(l [][]byte) [][]byte {
				return append(l[:1:1], append([][]byte{[]byte(`{"ts":"2025-01-01T00:0` + "\n")}, l[1:]...)...)
			})
		}, warn: "line 2: a record cut short (a writer was killed in the middle of it), ended by the next write: not a record, and no break in the chain"},
		{name: "a line that is no record inserted", tamper: func(t *testing.T, p string) {
			editLines(t, p, func(l [][]byte) [][]byte {
				return append(l[:1:1], append([][]byte{[]byte("typed by hand\n")}, l[1:]...)...)
			})
		}, warn: "line 2: not a JSON object, so not a record; the chain passes over it (a line inserted, or damage)"},
		{name: "unchained legacy records first", tamper: func(t *testing.T, p string) {
			// Verify the history paddock leaves when a journal of
			// legacy records gets chained: written for real below.
			for _, name := range []string{p, p + ".1", p + ".2"} {
				os.Remove(name)
			}
			writeLines(t, p, [][]byte{legacy, legacy, legacy})
			j, err := Open(p, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			if err := writeSeq(j, 0, 2); err != nil {
				t.Fatal(err)
			}
		}, records: 5, legacy: 3},
		{name: "legacy record after chained ones", tamper: func(t *testing.T, p string) {
			editLines(t, p+".1", func(l [][]byte) [][]byte { return append(l[:len(l)-1:len(l)-1], legacy, l[len(l)-1]) })
		}, file: ".1", line: 6, msg: "no prev", records: 15},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeChained(t, 14)
			if n := len(fileLines(t, path+".2")) - 1; n != 5 {
				t.Fatalf("setup: %s.2 has %d records, want 5 (the table's line numbers assume it)", path, n)
			}
			if _, err := os.Stat(path + ".3"); err == nil {
				t.Fatalf("setup: %s.3 exists: want three files", path)
			}
			tt.tamper(t, path)
			v, err := Verify(path, "")
			if err != nil {
				t.Fatal(err)
			}
			want := tt.records
			if want == 0 {
				want = 14
			}
			if v.Records != want || v.Legacy != tt.legacy {
				t.Errorf("%d records, %d legacy; want %d, %d", v.Records, v.Legacy, want, tt.legacy)
			}
			if tt.msg == "" {
				for _, p := range v.Breaks {
					t.Errorf("unexpected break: %v", p)
				}
			} else if len(v.Breaks) == 0 {
				t.Errorf("no break found; want one at %s%s line %d", filepath.Base(path), tt.file, tt.line)
			} else if b := v.Breaks[0]; b.File != path+tt.file || b.Line != tt.line || !strings.Contains(b.Msg, tt.msg) {
				t.Errorf("first break: %v\nwant %s%s line %d: ...%s...", b, path, tt.file, tt.line, tt.msg)
			}
			var warns []string
			for _, w := range v.Warnings {
				warns = append(warns, w.Error())
			}
			if got := strings.Join(warns, "\n"); (tt.warn == "") != (got == "") || !strings.Contains(got, tt.warn) {
				t.Errorf("warnings: %q, want %q", got, tt.warn)
			}
		})
	}
}

// TestHeadAndTornLine: Head follows what was written and what Open found;
// a writer after a torn last line ends it and links past it.
func TestHeadAndTornLine(t *testing.T) {
	j, path := openTemp(t)
	if j.Head() != genesis {
		t.Errorf("Head of an empty journal = %s, want genesis", j.Head())
	}
	if err := writeSeq(j, 0, 3); err != nil {
		t.Fatal(err)
	}
	v := verifyClean(t, path)
	if j.Head() != v.Head {
		t.Errorf("Head() = %s, Verify's head = %s", j.Head(), v.Head)
	}
	j2, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	if j2.Head() != v.Head {
		t.Errorf("Head() after Open = %s, want the last record's %s", j2.Head(), v.Head)
	}
	if v, _ := Verify(path, v.Head); !v.HeadFound {
		t.Error("Verify did not find the head it was given")
	}
	if v, _ := Verify(path, genesis); v.HeadFound {
		t.Error("Verify found a head that is not in the chain")
	}

	// A crash mid-write leaves a torn line; the next record ends it and
	// links to the record before it.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"ts":"2025-01-01T00:00:00Z","act`)
	f.Close()
	if err := writeSeq(j, 1, 2); err != nil {
		t.Fatal(err)
	}
	v, err = Verify(path, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Breaks) != 0 || v.Records != 5 || len(v.Warnings) != 1 || v.Warnings[0].Line != 4 || !strings.Contains(v.Warnings[0].Msg, "a record cut short") || !strings.Contains(v.Warnings[0].Msg, "no break in the chain") {
		t.Errorf("after a torn line: %d records, breaks %v, warnings %v; want 5, none, one at line 4", v.Records, v.Breaks, v.Warnings)
	}
	if _, err := Verify(filepath.Join(t.TempDir(), "none.jsonl"), ""); err == nil || !strings.Contains(err.Error(), "nothing to verify") {
		t.Errorf("Verify of no journal: %v, want an error saying there is nothing to verify", err)
	}
}

// genesis is a SHA-256 of zeros in hex: as long as every other prev.
func TestGenesis(t *testing.T) {
	if len(genesis) != sha256.Size*2 || strings.Trim(genesis, "0") != "" {
		t.Errorf("genesis %q: want %d zeros", genesis, sha256.Size*2)
	}
}
