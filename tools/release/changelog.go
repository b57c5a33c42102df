package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/internal/textwrap"
)

// changelogName is the changelog in the repository's root, from which the
// packages' changelogs are made.
const changelogName = "CHANGELOG.md"

// packageRelease is the packages' release (Debian revision): paddock's
// packages are made by paddock itself, once per version.
const packageRelease = "1"

// changeEntry is one version's section of CHANGELOG.md.
type changeEntry struct {
	version string    // v0.1.0
	date    time.Time // the section's date, or SOURCE_DATE_EPOCH for Unreleased
	items   []string  // each list item, its lines joined by spaces
}

// versionHeadingRE is a released version's heading: ## vX.Y.Z - YYYY-MM-DD.
var versionHeadingRE = regexp.MustCompile(`^## (v[^ ]+) - ([0-9]{4}-[0-9]{2}-[0-9]{2})$`)

// parseChangelog reads CHANGELOG.md's text: free text up to the first "## "
// heading, then "## Unreleased" (first, once), then one "## vX.Y.Z -
// YYYY-MM-DD" per release, newest first, holding list items only ("- "
// and continuation lines indented by two spaces). It returns the
// Unreleased items and the released sections, in the file's order.
func parseChangelog(text string) (unreleased []string, released []changeEntry, err error) {
	var cur *[]string
	seen := map[string]int{}
	var last time.Time
	sawUnreleased := false
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i, line := range lines {
		n := i + 1
		bad := func(format string, a ...any) error {
			return fmt.Errorf("%s:%d: %s", changelogName, n, fmt.Sprintf(format, a...))
		}
		switch {
		case strings.HasPrefix(line, "## "):
			if line == "## Unreleased" {
				if sawUnreleased || len(released) > 0 {
					return nil, nil, bad("## Unreleased must come once, before every release's section")
				}
				sawUnreleased, cur = true, &unreleased
				continue
			}
			m := versionHeadingRE.FindStringSubmatch(line)
			if m == nil || !versionRE.MatchString(m[1]) {
				return nil, nil, bad("heading %q: want \"## Unreleased\" or \"## vX.Y.Z - YYYY-MM-DD\" (a release version and its date)", line)
			}
			if !sawUnreleased {
				return nil, nil, bad("%s comes before \"## Unreleased\", which must be the first section", m[1])
			}
			date, derr := time.Parse("2006-01-02", m[2])
			if derr != nil {
				return nil, nil, bad("%s: date %q: %v", m[1], m[2], derr)
			}
			if at, dup := seen[m[1]]; dup {
				return nil, nil, bad("%s has a section already, at line %d", m[1], at)
			}
			if len(released) > 0 && date.After(last) {
				return nil, nil, bad("%s is dated %s, after the section above it (%s): newest first", m[1], m[2], last.Format("2006-01-02"))
			}
			seen[m[1]], last = n, date
			released = append(released, changeEntry{version: m[1], date: date})
			cur = &released[len(released)-1].items
		case cur == nil:
			// The text before the first section.
		case strings.TrimSpace(line) == "":
		case strings.HasPrefix(line, "- "):
			*cur = append(*cur, strings.TrimSpace(line[2:]))
		case strings.HasPrefix(line, "  ") && len(*cur) > 0:
			(*cur)[len(*cur)-1] += " " + strings.TrimSpace(line)
		default:
			return nil, nil, bad("%q: a section holds list items only (\"- \" and lines indented by two spaces)", line)
		}
	}
	if !sawUnreleased {
		return nil, nil, fmt.Errorf("%s has no \"## Unreleased\" section", changelogName)
	}
	for _, e := range released {
		if len(e.items) == 0 {
			return nil, nil, fmt.Errorf("%s: %s has no items", changelogName, e.version)
		}
	}
	return unreleased, released, nil
}

// releaseEntries are the changelog entries of a release of version,
// newest first: version's own section and those below it. A prerelease
// without a section of its own takes the Unreleased items, dated at
// (SOURCE_DATE_EPOCH), above every released section; a release without
// one is refused.
func releaseEntries(text, version string, at time.Time) ([]changeEntry, error) {
	unreleased, released, err := parseChangelog(text)
	if err != nil {
		return nil, err
	}
	for i, e := range released {
		if e.version == version {
			return released[i:], nil
		}
	}
	if !strings.Contains(version, "-") {
		return nil, fmt.Errorf("%s has no section for %s: add \"## %s - YYYY-MM-DD\" above the older releases, with the items of \"## Unreleased\" moved under it", changelogName, version, version)
	}
	items := unreleased
	if len(items) == 0 {
		since := "the first release"
		if len(released) > 0 {
			since = released[0].version
		}
		items = []string{fmt.Sprintf("Prerelease %s: no changes since %s listed in %s yet.", version, since, changelogName)}
	}
	return append([]changeEntry{{version: version, date: at.UTC(), items: items}}, released...), nil
}

// readReleaseEntries reads root's CHANGELOG.md for a release of version
// (releaseEntries).
func readReleaseEntries(root, version string, at time.Time) ([]changeEntry, error) {
	b, err := os.ReadFile(filepath.Join(root, changelogName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("the repository has no %s: the packages' changelogs are made from it", changelogName)
	}
	if err != nil {
		return nil, err
	}
	entries, err := releaseEntries(string(b), version, at)
	if err != nil {
		return nil, fmt.Errorf("changelog: %w", err)
	}
	return entries, nil
}

// debVersion is version as the .deb carries it (nfpm's deb packager):
// v0.2.0-rc.1 is 0.2.0~rc.1-1, so that it sorts before 0.2.0-1.
func debVersion(version string) string {
	v, pre, ok := strings.Cut(strings.TrimPrefix(version, "v"), "-")
	if ok {
		v += "~" + pre
	}
	return v + "-" + packageRelease
}

// rpmVersion is version-release as the .rpm carries it (nfpm's rpm
// packager): v0.2.0-rc.1 is 0.2.0~rc.1-1, a prerelease's own - becoming _.
func rpmVersion(version string) string {
	v, pre, ok := strings.Cut(strings.TrimPrefix(version, "v"), "-")
	if ok {
		v += "~" + strings.ReplaceAll(pre, "-", "_")
	}
	return v + "-" + packageRelease
}

// debianChangelog is the .deb's changelog.Debian in Debian's format
// (deb-changelog(5)), lines at most 80 columns.
func debianChangelog(entries []changeEntry, maintainer string) []byte {
	var b bytes.Buffer
	for i, e := range entries {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "paddock (%s) unstable; urgency=medium\n\n", debVersion(e.version))
		for _, item := range e.items {
			for j, line := range textwrap.Lines(item, 80-4) {
				if j == 0 {
					fmt.Fprintf(&b, "  * %s\n", line)
				} else {
					fmt.Fprintf(&b, "    %s\n", line)
				}
			}
		}
		fmt.Fprintf(&b, "\n -- %s  %s\n", maintainer, e.date.UTC().Format("Mon, 02 Jan 2006 15:04:05 -0700"))
	}
	return b.Bytes()
}

// chglogEntry is one entry of the changelog nfpm reads for the .rpm
// (github.com/goreleaser/chglog's YAML format, written as JSON, which YAML
// reads as it is).
type chglogEntry struct {
	Semver   string         `json:"semver"`
	Date     time.Time      `json:"date"`
	Packager string         `json:"packager"`
	Changes  []chglogChange `json:"changes"`
}

type chglogChange struct {
	Note string `json:"note"`
}

// rpmChangelogYAML is the changelog nfpm writes into the .rpm's header
// (%changelog, newest first), in chglog's format: each entry titled
// "maintainer - version-release", each item wrapped to 78 columns.
func rpmChangelog(entries []changeEntry, maintainer string) ([]byte, error) {
	out := make([]chglogEntry, 0, len(entries))
	for _, e := range entries {
		ce := chglogEntry{Semver: rpmVersion(e.version), Date: e.date.UTC(), Packager: maintainer}
		for _, item := range e.items {
			ce.Changes = append(ce.Changes, chglogChange{Note: strings.Join(textwrap.Lines(item, 78-2), "\n  ")})
		}
		out = append(out, ce)
	}
	return json.MarshalIndent(out, "", "  ")
}
