package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestParseChangelogRefuses: CHANGELOG.md keeps to the one form the
// packages' changelogs are made from; anything else is an error naming
// the line.
func TestParseChangelogRefuses(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"no unreleased", "# C\n\n## v0.1.0 - 2026-12-01\n- a\n", `CHANGELOG.md:3: v0.1.0 comes before "## Unreleased"`},
		{"unreleased twice", "## Unreleased\n## Unreleased\n", "CHANGELOG.md:2: ## Unreleased must come once"},
		{"unreleased after a release", "## Unreleased\n## v0.1.0 - 2026-12-01\n- a\n## Unreleased\n", "CHANGELOG.md:4: ## Unreleased must come once"},
		{"bad heading", "## Unreleased\n## 0.1.0 (Dec 1)\n", `CHANGELOG.md:2: heading "## 0.1.0 (Dec 1)"`},
		{"bad version", "## Unreleased\n## v0.1 - 2026-12-01\n", `CHANGELOG.md:2: heading "## v0.1 - 2026-12-01"`},
		{"bad date", "## Unreleased\n## v0.1.0 - 2026-13-01\n", "CHANGELOG.md:2: v0.1.0: date \"2026-13-01\""},
		{"duplicate", "## Unreleased\n## v0.1.0 - 2026-12-01\n- a\n## v0.1.0 - 2026-11-01\n- b\n", "CHANGELOG.md:4: v0.1.0 has a section already, at line 2"},
		{"oldest first", "## Unreleased\n## v0.1.0 - 2026-11-01\n- a\n## v0.2.0 - 2026-12-01\n- b\n", "CHANGELOG.md:4: v0.2.0 is dated 2026-12-01, after the section above it (2026-11-01): newest first"},
		{"prose", "## Unreleased\nSome prose.\n", `CHANGELOG.md:2: "Some prose.": a section holds list items only`},
		{"empty release", "## Unreleased\n## v0.1.0 - 2026-12-01\n", "CHANGELOG.md: v0.1.0 has no items"},
		{"nothing", "# Changelog\n", `CHANGELOG.md has no "## Unreleased" section`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := parseChangelog(tc.text)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("parseChangelog: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

const sampleChangelog = `# Changelog

Free text before the sections.

## Unreleased

- Next thing, its text
  continued on a second line.

## v0.2.0 - 2026-12-01

- Second release.

## v0.1.0 - 2026-11-01

- First release.
- Another item.
`

// TestReleaseEntries: a release takes its own section and the older ones;
// a prerelease without a section takes the Unreleased items at the build
// time; a release without a section is refused.
func TestReleaseEntries(t *testing.T) {
	at := time.Unix(1764547200, 0).UTC()
	for _, tc := range []struct {
		version  string
		versions []string
		first    []string
	}{
		{"v0.2.0", []string{"v0.2.0", "v0.1.0"}, []string{"Second release."}},
		{"v0.1.0", []string{"v0.1.0"}, []string{"First release.", "Another item."}},
		{"v0.3.0-rc.1", []string{"v0.3.0-rc.1", "v0.2.0", "v0.1.0"}, []string{"Next thing, its text continued on a second line."}},
	} {
		entries, err := releaseEntries(sampleChangelog, tc.version, at)
		if err != nil {
			t.Fatalf("%s: %v", tc.version, err)
		}
		var got []string
		for _, e := range entries {
			got = append(got, e.version)
		}
		if strings.Join(got, " ") != strings.Join(tc.versions, " ") {
			t.Errorf("%s: entries %q, want %q", tc.version, got, tc.versions)
		}
		if strings.Join(entries[0].items, "|") != strings.Join(tc.first, "|") {
			t.Errorf("%s: items %q, want %q", tc.version, entries[0].items, tc.first)
		}
	}
	if e, _ := releaseEntries(sampleChangelog, "v0.3.0-rc.1", at); !e[0].date.Equal(at) || !e[1].date.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("dates %v, %v: want the build time for the prerelease, the section's date for v0.2.0", e[0].date, e[1].date)
	}
	_, err := releaseEntries(sampleChangelog, "v0.3.0", at)
	if err == nil || !strings.Contains(err.Error(), `no section for v0.3.0: add "## v0.3.0 - YYYY-MM-DD"`) {
		t.Errorf("a release without a section: %v, want it refused, saying what to add", err)
	}
	empty := strings.Replace(sampleChangelog, "- Next thing, its text\n  continued on a second line.\n", "", 1)
	e, err := releaseEntries(empty, "v0.3.0-rc.1", at)
	if err != nil || len(e[0].items) != 1 || !strings.Contains(e[0].items[0], "no changes since v0.2.0 listed") {
		t.Errorf("a prerelease with nothing unreleased: %+v, %v", e, err)
	}
}

// TestRepositoryChangelog: the repository's own CHANGELOG.md keeps the
// form, so that a release can be built from it.
func TestRepositoryChangelog(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, changelogName))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := parseChangelog(string(b)); err != nil {
		t.Fatal(err)
	}
}

// TestDebianChangelog: deb-changelog(5)'s form, lines within 80 columns,
// the package's version, newest first.
func TestDebianChangelog(t *testing.T) {
	entries, err := releaseEntries(sampleChangelog+"", "v0.3.0-rc.1", time.Unix(1764547200, 0))
	if err != nil {
		t.Fatal(err)
	}
	entries[0].items = append(entries[0].items, strings.Repeat("long words ", 20))
	got := string(debianChangelog(entries, "paddock developers <paddock@paddock.dev>"))
	for _, want := range []string{
		"paddock (0.3.0~rc.1-1) unstable; urgency=medium\n\n  * Next thing, its text continued on a second line.\n  * long words",
		"\n -- paddock developers <paddock@paddock.dev>  Mon, 01 Dec 2025 00:00:00 +0000\n\npaddock (0.2.0-1) unstable; urgency=medium\n",
		"\n  * First release.\n  * Another item.\n\n -- paddock developers <paddock@paddock.dev>  Sun, 01 Nov 2026 00:00:00 +0000\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the Debian changelog lacks %q:\n%s", want, got)
		}
	}
	for _, line := range strings.Split(got, "\n") {
		if len(line) > 80 {
			t.Errorf("line of %d columns: %q", len(line), line)
		}
		if strings.HasPrefix(line, "    ") && strings.HasPrefix(strings.TrimSpace(line), "*") {
			t.Errorf("a continuation line reads as an item: %q", line)
		}
	}
}

// TestRPMChangelog: the entries nfpm writes into the .rpm, in chglog's
// format, titled with the .rpm's version-release.
func TestRPMChangelog(t *testing.T) {
	entries, err := releaseEntries(sampleChangelog, "v0.3.0-rc-2.1", time.Unix(1764547200, 0))
	if err != nil {
		t.Fatal(err)
	}
	b, err := rpmChangelog(entries, "m <m@example.org>")
	if err != nil {
		t.Fatal(err)
	}
	var got []chglogEntry
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Semver != "0.3.0~rc_2.1-1" || got[1].Semver != "0.2.0-1" || got[0].Packager != "m <m@example.org>" || len(got[2].Changes) != 2 {
		t.Errorf("rpm changelog %+v", got)
	}
}

// TestPackageVersions: the versions nfpm gives the .deb and the .rpm.
func TestPackageVersions(t *testing.T) {
	for _, tc := range []struct{ v, deb, rpm string }{
		{"v0.1.0", "0.1.0-1", "0.1.0-1"},
		{"v0.2.0-rc.1", "0.2.0~rc.1-1", "0.2.0~rc.1-1"},
		{"v1.0.0-beta-2", "1.0.0~beta-2-1", "1.0.0~beta_2-1"},
	} {
		if got := debVersion(tc.v); got != tc.deb {
			t.Errorf("debVersion(%s) = %s, want %s", tc.v, got, tc.deb)
		}
		if got := rpmVersion(tc.v); got != tc.rpm {
			t.Errorf("rpmVersion(%s) = %s, want %s", tc.v, got, tc.rpm)
		}
	}
}
