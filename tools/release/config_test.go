package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigRefusesBadInput: each bad flag or environment value is refused
// with an error naming it and what would be accepted.
func TestConfigRefusesBadInput(t *testing.T) {
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "old.tar.gz"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(t.TempDir(), "dist")
	env := func(epoch string) func(string) string {
		return func(k string) string {
			if k == "SOURCE_DATE_EPOCH" {
				return epoch
			}
			return ""
		}
	}
	for _, tc := range []struct {
		name, version, out, arch, maintainer, epoch string
		want                                        []string
	}{
		{"no v", "0.1.0", fresh, "amd64", "m", "1", []string{`--version "0.1.0"`, "v0.1.0"}},
		{"two parts", "v1.2", fresh, "amd64", "m", "1", []string{`--version "v1.2"`, "vMAJOR.MINOR.PATCH"}},
		{"build metadata", "v1.2.3+git", fresh, "amd64", "m", "1", []string{`--version "v1.2.3+git"`}},
		{"no out", "v0.1.0", "", "amd64", "m", "1", []string{"--out is required"}},
		{"out not empty", "v0.1.0", full, "amd64", "m", "1", []string{"--out " + full, "not empty", "old.tar.gz", "new or empty"}},
		{"unknown arch", "v0.1.0", fresh, "amd64,386", "m", "1", []string{`--arch "amd64,386"`, `"386"`, "amd64, arm64"}},
		{"no maintainer", "v0.1.0", fresh, "amd64", " ", "1", []string{"--maintainer is empty"}},
		{"bad epoch", "v0.1.0", fresh, "amd64", "m", "yesterday", []string{`SOURCE_DATE_EPOCH="yesterday"`, "Unix time in seconds"}},
		{"negative epoch", "v0.1.0", fresh, "amd64", "m", "-5", []string{`SOURCE_DATE_EPOCH="-5"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newConfig(tc.version, tc.out, tc.arch, tc.maintainer, env(tc.epoch))
			if err == nil {
				t.Fatalf("newConfig accepted it")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("a refused configuration created --out %s (%v)", fresh, err)
	}
}

// TestConfigAccepts: good input, the epoch from the environment, arches
// deduplicated in the order given.
func TestConfigAccepts(t *testing.T) {
	cfg, err := newConfig("v0.2.0-rc.1", filepath.Join(t.TempDir(), "dist"), "arm64, amd64,arm64", "m <m@example.org>",
		func(k string) string { return map[string]string{"SOURCE_DATE_EPOCH": "1764547200"}[k] })
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.arches, ","); got != "arm64,amd64" {
		t.Errorf("arches %q, want arm64,amd64", got)
	}
	if cfg.epoch.Unix() != 1764547200 {
		t.Errorf("epoch %v, want 1764547200", cfg.epoch.Unix())
	}
	if cfg.fileVersion() != "0.2.0-rc.1" {
		t.Errorf("fileVersion %q, want 0.2.0-rc.1", cfg.fileVersion())
	}
}

// TestPURL: module paths and versions become package URLs, with what a
// purl may not hold literally percent-encoded.
func TestPURL(t *testing.T) {
	for _, tc := range []struct{ path, version, want string }{
		{"github.com/spf13/cobra", "v1.10.2", "pkg:golang/github.com/spf13/cobra@v1.10.2"},
		{"github.com/BurntSushi/toml", "v1.6.0", "pkg:golang/github.com/BurntSushi/toml@v1.6.0"},
		{"example.com/old", "v2.0.0+incompatible", "pkg:golang/example.com/old@v2.0.0%2Bincompatible"},
		{"stdlib", "1.26.8", "pkg:golang/stdlib@1.26.8"},
	} {
		if got := purl(tc.path, tc.version); got != tc.want {
			t.Errorf("purl(%q, %q) = %q, want %q", tc.path, tc.version, got, tc.want)
		}
	}
}
