package profile

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// fuzzPath is the file name the fuzz targets parse under.
const fuzzPath = "/etc/paddock/profile.toml"

// FuzzParse: any bytes as a profile file. Parse must not panic and must
// answer the same twice. A refusal is an *Error naming the file, a line
// that exists and, for a key's problem, a line that holds the key, all on
// one line of text. An accepted profile respects the bounds paddock relies
// on (finite, non-negative GB, headroom within the total, unit names
// without blanks or slashes), every value set names its file line as its
// source, and it survives being written out as TOML and read back.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"# my workstation\nname = \"desktop\"\ntotal_vram_gb = 24\ndesktop_headroom_gb = 3.5\nservices_to_survive = [\"display-manager\", \"sway\", \"user@*\"]\nheadless = false\nallow_opt_in = false\n",
		"headless = \"auto\"\n",
		"name = \"x\"\n\nnmae = \"y\"\n",
		"Total_VRAM_GB = 24\n",
		"name = \"x\"\n[gpu]\ncount = 2\n",
		"[name]\nx = 1\n",
		"total_vram_gb = 8\n# comment\ndesktop_headroom_gb = 12\n",
		"total_vram_gb = nan\ndesktop_headroom_gb = -inf\n",
		"services_to_survive = [\"gdm\", 3, \"a b\", \"\"]\n",
		"name = \"x\ntotal_vram_gb = 1\n",
		"name = \"a\"\nname = \"b\"\n",
		"total_vram_gb = 1\n\"total_vram_gb,x\" = 1\n",
		"\"a\\nb\" = 2\n",
		"\"\\u001b[2J\\u202e\" = 1\n",
		"a.b.c = 1\n[[name]]\n",
		"name = '''\nmulti\nline'''\ntotal_vram_gb = 1e308\n",
		"headless = 2026-12-02T13:43:31Z\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(fuzzPath, data)
		p2, err2 := Parse(fuzzPath, data)
		if (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) {
			t.Fatalf("two answers: %v / %v", err, err2)
		}
		lines := bytes.Count(data, []byte{'\n'}) + 1
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T) is not a *profile.Error", err, err)
			}
			msg := err.Error()
			if pe.Path != fuzzPath || !strings.HasPrefix(msg, "profile "+fuzzPath) || pe.Msg == "" {
				t.Fatalf("error %q does not name the file and what is wrong", msg)
			}
			if strings.ContainsAny(msg, "\n\r") {
				t.Fatalf("error spans lines: %q", msg)
			}
			if pe.Line < 0 || pe.Line > lines {
				t.Fatalf("error %q names line %d of a %d-line file", msg, pe.Line, lines)
			}
			if pe.Key != "" && pe.Line > 0 && !strings.HasPrefix(pe.Msg, "not valid TOML") && isBare(pe.Key) {
				if l := strings.Split(string(data), "\n")[pe.Line-1]; !strings.Contains(l, pe.Key) {
					t.Fatalf("error %q: line %d %q does not hold key %q", msg, pe.Line, l, pe.Key)
				}
			}
			return
		}
		if !reflect.DeepEqual(p, p2) {
			t.Fatalf("two profiles: %+v / %+v", p, p2)
		}
		checkBounds(t, p)
		for _, k := range keys() {
			if src := p.Sources[k]; src != SourceDefault && !strings.HasPrefix(src, "file "+fuzzPath) {
				t.Fatalf("source of %s is %q", k, src)
			}
		}

		// Written out and read back, the profile is the same.
		out := map[string]any{KeyAllowOptIn: p.AllowOptIn, KeyName: p.Name}
		if p.TotalVRAMGB != nil {
			out[KeyTotalVRAMGB] = *p.TotalVRAMGB
		}
		if p.DesktopHeadroomGB != nil {
			out[KeyDesktopHeadroomGB] = *p.DesktopHeadroomGB
		}
		if p.ServicesToSurvive != nil {
			out[KeyServicesToSurvive] = p.ServicesToSurvive
		}
		if p.Headless != nil {
			out[KeyHeadless] = *p.Headless
		}
		var buf bytes.Buffer
		if err := toml.NewEncoder(&buf).Encode(out); err != nil {
			t.Fatalf("profile %+v does not encode: %v", p, err)
		}
		back, err := Parse(fuzzPath, buf.Bytes())
		if err != nil {
			t.Fatalf("profile %+v written as\n%s\nis refused: %v", p, buf.Bytes(), err)
		}
		if !sameValues(p, back) {
			t.Fatalf("profile %+v written as\n%s\nreads back as %+v", p, buf.Bytes(), back)
		}
	})
}

// isBare reports whether k is a TOML bare key (A-Za-z0-9_-), which a file
// can only spell as itself.
func isBare(k string) bool {
	return k != "" && strings.Trim(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") == ""
}

// checkBounds holds an accepted profile to what paddock's consumers assume.
func checkBounds(t *testing.T, p Profile) {
	t.Helper()
	for _, g := range []*float64{p.TotalVRAMGB, p.DesktopHeadroomGB} {
		if g != nil && (math.IsNaN(*g) || math.IsInf(*g, 0) || *g < 0) {
			t.Fatalf("accepted %v GB", *g)
		}
	}
	if p.TotalVRAMGB != nil && p.DesktopHeadroomGB != nil && *p.DesktopHeadroomGB > *p.TotalVRAMGB {
		t.Fatalf("accepted headroom %v above total %v", *p.DesktopHeadroomGB, *p.TotalVRAMGB)
	}
	if p.ServicesToSurvive != nil && len(p.ServicesToSurvive) == 0 {
		t.Fatal("accepted an empty services list")
	}
	for _, s := range p.ServicesToSurvive {
		if s == "" || strings.ContainsAny(s, " \t\n/\x00\x7f") {
			t.Fatalf("accepted unit name %q", s)
		}
	}
}

// sameValues compares the configured values of two profiles.
func sameValues(a, b Profile) bool {
	eqf := func(x, y *float64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	eqb := func(x, y *bool) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.Name == b.Name && eqf(a.TotalVRAMGB, b.TotalVRAMGB) && eqf(a.DesktopHeadroomGB, b.DesktopHeadroomGB) &&
		reflect.DeepEqual(a.ServicesToSurvive, b.ServicesToSurvive) && eqb(a.Headless, b.Headless) && a.AllowOptIn == b.AllowOptIn
}
