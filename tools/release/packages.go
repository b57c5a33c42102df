package main

import (
	"fmt"
	"os"
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

// description is the packages' description: a summary line, then more.
const description = `Run an AI agent or CI job so it can only signal, trace or write into the processes it owns
paddock runs a command under a seccomp filter whose user-notification
listener is held by its supervisor (or under ptrace where seccomp
notification is unavailable): every process-control syscall is decided
against the command's ownership tree, and refusals are explained to the
caller, logged and journaled.`

// writePackages writes the .deb and the .rpm of one architecture into
// cfg.out and returns their names, paddock_0.1.0_linux_amd64.deb and .rpm:
// named as the tarballs are rather than by each distribution's convention
// (paddock-0.1.0~rc.1-1.x86_64.rpm), whose ~ GitHub would rename on upload.
func writePackages(cfg config, arch, bin string, d docs) ([]string, error) {
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
		err = pkgr.Package(packageInfo(cfg, arch, format, bin, d), f)
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
// the distributions look for them, README and LICENSE in the package's doc
// directory; no maintainer scripts.
func packageInfo(cfg config, arch, format, bin string, d docs) *nfpm.Info {
	file := func(src, dst string, mode os.FileMode) *files.Content {
		return &files.Content{Source: src, Destination: dst, Type: files.TypeFile,
			FileInfo: &files.ContentFileInfo{Owner: "root", Group: "root", Mode: mode, MTime: cfg.epoch}}
	}
	contents := files.Contents{file(bin, "/usr/bin/paddock", 0o755)}
	pages := make([]string, 0, len(d.manGz))
	for page := range d.manGz {
		pages = append(pages, page)
	}
	sort.Strings(pages)
	for _, page := range pages {
		contents = append(contents, file(d.manGz[page], "/usr/share/man/man1/"+page+".gz", 0o644))
	}
	for shell, src := range d.completions {
		contents = append(contents, file(src, completionDirs[format][shell], 0o644))
	}
	for _, p := range d.extra {
		contents = append(contents, file(p, "/usr/share/doc/paddock/"+filepath.Base(p), 0o644))
	}
	sort.Sort(contents)
	info := &nfpm.Info{
		Name:        "paddock",
		Arch:        arch,
		Platform:    "linux",
		Version:     cfg.version,
		Section:     "utils",
		Priority:    "optional",
		Maintainer:  cfg.maintainer,
		Description: description,
		Homepage:    "https://github.com/paddock-dev/paddock",
		MTime:       cfg.epoch,
		Overridables: nfpm.Overridables{
			Contents: contents,
			Umask:    0o022,
			// The build host is in the rpm header: a fixed name, not this machine's.
			RPM: nfpm.RPM{BuildHost: "paddock-release", Packager: cfg.maintainer, Group: "Applications/System"},
		},
	}
	return nfpm.WithDefaults(info)
}
