package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
)

// buildEnv is what a release build sets, whatever the caller's environment
// says: a static binary for the baseline of each architecture, no flags or
// experiments from GOFLAGS and GOEXPERIMENT.
var buildEnv = []string{"CGO_ENABLED=0", "GOOS=linux", "GOFLAGS=", "GOEXPERIMENT=", "GOAMD64=v1", "GOARM64=v8.0"}

// build writes the release into cfg.out and returns the names of the files
// it wrote, SHA256SUMS last. Progress goes to log.
func build(cfg config, log io.Writer) ([]string, error) {
	work, err := os.MkdirTemp("", "paddock-release-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)

	// Every binary first, before anything is written into cfg.out, which
	// may be inside the checkout: the go command records whether the
	// checkout had changes (vcs.modified).
	bins := map[string]string{}
	for _, arch := range cfg.arches {
		bins[arch] = filepath.Join(work, arch, "paddock")
		if err := goBuild(cfg, arch, bins[arch]); err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "built linux/%s paddock %s\n", arch, cfg.version)
	}
	host, ok := bins[runtime.GOARCH]
	if !ok {
		host = filepath.Join(work, "host", "paddock")
		if err := goBuild(cfg, runtime.GOARCH, host); err != nil {
			return nil, err
		}
	}
	d, err := writeDocs(cfg, host, filepath.Join(work, "docs"))
	if err != nil {
		return nil, err
	}

	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	var names []string
	for _, arch := range cfg.arches {
		linked, err := linkedLicenses(cfg.root, bins[arch])
		if err != nil {
			return nil, err
		}
		copyright := filepath.Join(work, arch, "copyright")
		if err := writeFile(copyright, copyrightFile(cfg.maintainer, cfg.epoch.Year(), linked)); err != nil {
			return nil, err
		}
		tarball, err := writeTarball(cfg, arch, bins[arch], copyright, d)
		if err != nil {
			return nil, err
		}
		pkgs, err := writePackages(cfg, arch, bins[arch], copyright, d)
		if err != nil {
			return nil, err
		}
		sbom, err := writeSBOM(cfg, arch, bins[arch], linked)
		if err != nil {
			return nil, err
		}
		names = append(append(names, tarball), append(pkgs, sbom)...)
		fmt.Fprintf(log, "packaged linux/%s: %s\n", arch, strings.Join(append([]string{tarball}, append(pkgs, sbom)...), ", "))
	}
	if err := writeSums(cfg.out, names); err != nil {
		return nil, err
	}
	return append(names, sumsName), nil
}

// goBuild builds cmd/paddock for linux/arch into out, stamped with the
// release version.
func goBuild(cfg config, arch, out string) error {
	// -w drops DWARF but not the symbol table, which paddock reads at run
	// time (see .ci/run and the Dockerfile): never -s.
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=auto",
		"-ldflags=-w -X main.releaseVersion="+cfg.version, "-o", out, "./cmd/paddock")
	cmd.Dir = cfg.root
	cmd.Env = append(withoutKeys(os.Environ(), buildEnv), append(slices.Clone(buildEnv), "GOARCH="+arch)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build for linux/%s: %w\n%s", arch, err, b)
	}
	return nil
}

// withoutKeys is env less GOARCH and the variables that set names.
func withoutKeys(env, set []string) []string {
	drop := map[string]bool{"GOARCH": true}
	for _, kv := range set {
		k, _, _ := strings.Cut(kv, "=")
		drop[k] = true
	}
	var out []string
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); !drop[k] {
			out = append(out, kv)
		}
	}
	return out
}

// docs are the architecture-independent files of a release, written by
// the paddock that runs here or read from the repository.
type docs struct {
	man          []string          // man1/*.1, sorted
	manGz        map[string]string // page name -> its gzipped copy, for the packages
	completions  map[string]string // shell -> its completion script
	pages        []docPage         // README.md, CHANGELOG.md, the docs/ pages
	license      string            // LICENSE
	entries      []changeEntry     // the release's changelog entries, newest first
	debChangelog string            // changelog.Debian.gz, made from entries
	upstreamGz   string            // CHANGELOG.md gzipped: the .deb's changelog.gz
	rpmChangelog string            // the .rpm's changelog in chglog's format
	overrides    string            // the .deb's lintian overrides
}

// docPage is one file of the documentation a release ships: its path in
// the repository, which is its path under the packages' doc directory and
// in the tarball, so that the README's links (docs/limits.md) resolve.
type docPage struct {
	src, rel string
}

// completionFiles are the completion scripts' names in the tarball, by
// shell, as each shell looks them up.
var completionFiles = map[string]string{"bash": "paddock.bash", "zsh": "_paddock", "fish": "paddock.fish"}

// docPatterns are the documentation a release ships, relative to the
// repository's root: what the README and the docs link to. (docs/lsm-spike
// is a spike's code, docs/gen-cli.sh a maintainer's script: not shipped.)
var docPatterns = []string{"README.md", "CHANGELOG.md", "Dockerfile", "docs/*.md", "docs/examples/*"}

// lintianOverrides are the lintian tags the .deb draws on purpose, each
// with its reason (lintian shows the comments with --show-overrides).
const lintianOverrides = `# paddock is one static Go binary (CGO_ENABLED=0) by design: it runs as the
# init of containers whose images have no libc (docs/container.md), and it
# needs no shared library to be there when it supervises an agent.
paddock: statically-linked-binary [usr/bin/paddock]
# The symbol table is kept on purpose (-ldflags=-w, never -s): paddock reads
# it at run time to learn which signals it was started with ignored, to pass
# them on to the agent as tini does (docs/release.md). DWARF is dropped.
paddock: unstripped-binary-or-object [usr/bin/paddock]
# paddock's packages are made and published by paddock itself, not uploaded
# to Debian's archive: there is no ITP bug for a first version to close.
paddock: initial-upload-closes-no-bugs
`

// writeDocs runs bin (the release paddock for this machine) to write the
// man pages and completion scripts into dir, and gathers the documentation
// and the changelogs.
func writeDocs(cfg config, bin, dir string) (docs, error) {
	var d docs
	manDir := filepath.Join(dir, "man1")
	// A fixed environment: nothing of the caller's may reach the text.
	env := []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "LC_ALL=C"}
	cmd := exec.Command(bin, "man", manDir)
	cmd.Env = env
	if b, err := cmd.CombinedOutput(); err != nil {
		return d, fmt.Errorf("paddock man: %w\n%s", err, b)
	}
	pages, err := os.ReadDir(manDir)
	if err != nil {
		return d, err
	}
	d.manGz = map[string]string{}
	for _, p := range pages {
		src := filepath.Join(manDir, p.Name())
		d.man = append(d.man, src)
		gz := filepath.Join(dir, "man1.gz", p.Name()+".gz")
		if err := gzipFile(src, gz); err != nil {
			return d, err
		}
		d.manGz[p.Name()] = gz
	}
	d.completions = map[string]string{}
	for shell, name := range completionFiles {
		cmd := exec.Command(bin, "completion", shell)
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		b, err := cmd.Output()
		if err != nil {
			return d, fmt.Errorf("paddock completion %s: %w\n%s", shell, err, stderr.Bytes())
		}
		d.completions[shell] = filepath.Join(dir, "completions", name)
		if err := writeFile(d.completions[shell], b); err != nil {
			return d, err
		}
	}
	if d.pages, err = docPages(cfg.root); err != nil {
		return d, err
	}
	d.license = filepath.Join(cfg.root, "LICENSE")
	if _, err := os.Stat(d.license); err != nil {
		return d, fmt.Errorf("the repository's LICENSE: %w (a release ships paddock's licence)", err)
	}
	if d.entries, err = readReleaseEntries(cfg.root, cfg.version, cfg.epoch); err != nil {
		return d, err
	}
	d.debChangelog = filepath.Join(dir, "changelog.Debian.gz")
	if err := writeGzipBytes(d.debChangelog, debianChangelog(d.entries, cfg.maintainer)); err != nil {
		return d, err
	}
	d.upstreamGz = filepath.Join(dir, "changelog.gz")
	if err := gzipFile(filepath.Join(cfg.root, changelogName), d.upstreamGz); err != nil {
		return d, err
	}
	b, err := rpmChangelog(d.entries, cfg.maintainer)
	if err != nil {
		return d, err
	}
	d.rpmChangelog = filepath.Join(dir, "changelog.rpm.yaml")
	if err := writeFile(d.rpmChangelog, b); err != nil {
		return d, err
	}
	d.overrides = filepath.Join(dir, "lintian-overrides")
	if err := writeFile(d.overrides, []byte(lintianOverrides)); err != nil {
		return d, err
	}
	return d, nil
}

// docPages are the files of docPatterns in root, sorted; each pattern
// must match something (a renamed page must not drop out unnoticed).
func docPages(root string) ([]docPage, error) {
	var out []docPage
	for _, pat := range docPatterns {
		matches, err := filepath.Glob(filepath.Join(root, pat))
		if err != nil {
			return nil, err
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("docs: nothing in %s matches %s, which a release ships", root, pat)
		}
		for _, m := range matches {
			st, err := os.Stat(m)
			if err != nil {
				return nil, err
			}
			if !st.Mode().IsRegular() {
				continue
			}
			rel, err := filepath.Rel(root, m)
			if err != nil {
				return nil, err
			}
			out = append(out, docPage{src: m, rel: filepath.ToSlash(rel)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rel < out[j].rel })
	return out, nil
}

// writeFile writes b to path, making its directory.
func writeFile(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
