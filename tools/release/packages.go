package main

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the deb packager
	"github.com/goreleaser/nfpm/v2/files"
	_ "github.com/goreleaser/nfpm/v2/rpm" // registers the rpm packager
)

// packageFormats are the distribution packages a release holds per
// architecture.
var packageFormats = []string{"deb", "rpm"}

// completionDirs are where each distribution family looks for completion
// scripts, by shell; zsh's differs (Debian's vendor-completions, Fedora's
// site-functions), the others are shared.
var completionDirs = map[string]map[string]string{
	"deb": {
		"bash": "/usr/share/bash-completion/completions/paddock",
		"zsh":  "/usr/share/zsh/vendor-completions/_paddock",
		"fish": "/usr/share/fish/vendor_completions.d/paddock.fish",
	},
	"rpm": {
		"bash": "/usr/share/bash-completion/completions/paddock",
		"zsh":  "/usr/share/zsh/site-functions/_paddock",
		"fish": "/usr/share/fish/vendor_completions.d/paddock.fish",
	},
}

// summary is the packages' one-line summary (the .deb's synopsis, the
// .rpm's Summary): the root command's Short, under lintian's 80 columns
// and rpmlint's 79.
const summary = "Run an agent so it can only signal, trace or write into what it owns"

// description is the packages' description: the summary line, then more.
const description = summary + `
paddock runs a command under a seccomp filter whose user-notification
listener is held by its supervisor (or under ptrace where seccomp
notification is unavailable): every process-control syscall is decided
against the command's ownership tree, and refusals are explained to the
caller, logged and journaled.`

// docDir is the packages' documentation directory.
const docDir = "/usr/share/doc/paddock"

// writePackages writes the .deb and the .rpm of one architecture into
// cfg.out and returns their names, paddock_0.1.0_linux_amd64.deb and .rpm:
// named as the tarballs are rather than by each distribution's convention
// (paddock-0.1.0~rc.1-1.x86_64.rpm), whose ~ GitHub would rename on upload.
// copyright is the notices file of bin (copyrightFile).
func writePackages(cfg config, arch, bin, copyright string, d docs) ([]string, error) {
	var names []string
	for _, format := range packageFormats {
		pkgr, err := nfpm.Get(format)
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("paddock_%s_linux_%s.%s", cfg.fileVersion(), arch, format)
		f, err := os.Create(filepath.Join(cfg.out, name))
		if err != nil {
			return nil, err
		}
		err = pkgr.Package(packageInfo(cfg, arch, format, bin, copyright, d), f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("%s for linux/%s: %w", format, arch, err)
		}
		names = append(names, name)
	}
	return names, nil
}

// packageInfo describes the package of one format and architecture: the
// binary in /usr/bin, the man pages (gzipped), the completion scripts where
// the distributions look for them, the documentation in docDir with the
// README's links resolving there, the licence and the notices of what the
// binary links, and the changelog made from CHANGELOG.md; no maintainer
// scripts.
//
// The .deb has Debian's copyright file (DEP-5), changelog.Debian.gz and the
// upstream changelog.gz, and its lintian overrides; it recommends
// bash-completion, without which bash's completion of paddock fails
// (_get_comp_words_by_ref: command not found). The .rpm marks the
// documentation %doc and the licences %license, owns its own directories,
// and carries the changelog in its header.
func packageInfo(cfg config, arch, format, bin, copyright string, d docs) *nfpm.Info {
	file := func(src, dst string, mode os.FileMode, typ string) *files.Content {
		return &files.Content{Source: src, Destination: dst, Type: typ,
			FileInfo: &files.ContentFileInfo{Owner: "root", Group: "root", Mode: mode, MTime: cfg.epoch}}
	}
	dir := func(dst string) *files.Content {
		return &files.Content{Destination: dst, Type: files.TypeDir,
			FileInfo: &files.ContentFileInfo{Owner: "root", Group: "root", Mode: 0o755, MTime: cfg.epoch}}
	}
	doc, license := files.TypeFile, files.TypeFile
	if format == "rpm" {
		doc, license = files.TypeRPMDoc, files.TypeRPMLicense
	}
	contents := files.Contents{file(bin, "/usr/bin/paddock", 0o755, files.TypeFile)}
	pages := make([]string, 0, len(d.manGz))
	for page := range d.manGz {
		pages = append(pages, page)
	}
	sort.Strings(pages)
	for _, page := range pages {
		contents = append(contents, file(d.manGz[page], "/usr/share/man/man1/"+page+".gz", 0o644, doc))
	}
	for shell, src := range d.completions {
		contents = append(contents, file(src, completionDirs[format][shell], 0o644, files.TypeFile))
	}
	docDirs := map[string]bool{docDir: true}
	for _, p := range d.pages {
		if format == "deb" && p.rel == changelogName {
			continue // Debian's name for it: changelog.gz, below
		}
		dst := docDir + "/" + p.rel
		for dd := path.Dir(dst); dd != docDir; dd = path.Dir(dd) {
			docDirs[dd] = true
		}
		contents = append(contents, file(p.src, dst, 0o644, doc))
	}
	switch format {
	case "deb":
		contents = append(contents,
			file(copyright, docDir+"/copyright", 0o644, files.TypeFile),
			file(d.debChangelog, docDir+"/changelog.Debian.gz", 0o644, files.TypeFile),
			file(d.upstreamGz, docDir+"/changelog.gz", 0o644, files.TypeFile),
			file(d.overrides, "/usr/share/lintian/overrides/paddock", 0o644, files.TypeFile))
	case "rpm":
		// Fedora's place for licences; the notices travel with them.
		contents = append(contents, dir(licenseDir),
			file(d.license, licenseDir+"/LICENSE", 0o644, license),
			file(copyright, licenseDir+"/copyright", 0o644, license))
		for dd := range docDirs {
			contents = append(contents, dir(dd))
		}
	}
	sort.Sort(contents)
	info := &nfpm.Info{
		Name:        "paddock",
		Arch:        arch,
		Platform:    "linux",
		Version:     cfg.version,
		Release:     packageRelease,
		Section:     "utils",
		Priority:    "optional",
		Maintainer:  cfg.maintainer,
		Description: description,
		Homepage:    "https://github.com/paddock-dev/paddock",
		License:     projectLicense,
		MTime:       cfg.epoch,
		Overridables: nfpm.Overridables{
			Contents: contents,
			Umask:    0o022,
			// The build host is in the rpm header: a fixed name, not this machine's.
			RPM: nfpm.RPM{BuildHost: "paddock-release", Packager: cfg.maintainer, Group: "Applications/System", Summary: summary},
		},
	}
	switch format {
	case "deb":
		info.Recommends = []string{"bash-completion"}
	case "rpm":
		info.Changelog = d.rpmChangelog
	}
	return nfpm.WithDefaults(info)
}

// licenseDir is where the .rpm puts its licences (%license).
const licenseDir = "/usr/share/licenses/paddock"
