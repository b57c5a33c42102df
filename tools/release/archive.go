package main

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"time"
)

// tarEntry is one member of a tarball: a directory, or a file copied from
// src.
type tarEntry struct {
	name string // path in the archive; directories end in /
	mode int64
	src  string // "" for a directory
}

// tarballName is the tarball of one architecture.
func tarballName(cfg config, arch string) string {
	return fmt.Sprintf("paddock_%s_linux_%s.tar.gz", cfg.fileVersion(), arch)
}

// writeTarball writes paddock_VERSION_linux_ARCH.tar.gz: one top directory
// of the same name holding the binary, LICENSE and copyright (the notices
// of what the binary links), README.md, CHANGELOG.md and the docs (docs/,
// as the README links them), man/man1/*.1 and completions/.
func writeTarball(cfg config, arch, bin, copyright string, d docs) (string, error) {
	name := tarballName(cfg, arch)
	top := name[:len(name)-len(".tar.gz")] + "/"
	entries := []tarEntry{{name: top, mode: 0o755}, {name: top + "paddock", mode: 0o755, src: bin},
		{name: top + "LICENSE", mode: 0o644, src: d.license}, {name: top + "copyright", mode: 0o644, src: copyright}}
	dirs := map[string]bool{}
	for _, p := range d.pages {
		if dir := path.Dir(p.rel); dir != "." && !dirs[dir] {
			for _, parent := range parentsOf(dir) {
				if !dirs[parent] {
					dirs[parent] = true
					entries = append(entries, tarEntry{name: top + parent + "/", mode: 0o755})
				}
			}
		}
		entries = append(entries, tarEntry{name: top + p.rel, mode: 0o644, src: p.src})
	}
	entries = append(entries, tarEntry{name: top + "completions/", mode: 0o755})
	shells := make([]string, 0, len(d.completions))
	for shell := range d.completions {
		shells = append(shells, shell)
	}
	sort.Strings(shells)
	for _, shell := range shells {
		entries = append(entries, tarEntry{name: top + "completions/" + completionFiles[shell], mode: 0o644, src: d.completions[shell]})
	}
	entries = append(entries, tarEntry{name: top + "man/", mode: 0o755}, tarEntry{name: top + "man/man1/", mode: 0o755})
	for _, p := range d.man {
		entries = append(entries, tarEntry{name: top + "man/man1/" + filepath.Base(p), mode: 0o644, src: p})
	}
	return name, writeTarGz(filepath.Join(cfg.out, name), entries, cfg.epoch)
}

// parentsOf lists dir and the directories above it, the outermost first:
// docs/examples gives docs, docs/examples.
func parentsOf(dir string) []string {
	var out []string
	for d := dir; d != "." && d != "/"; d = path.Dir(d) {
		out = append([]string{d}, out...)
	}
	return out
}

// writeTarGz writes entries, in their order, as a gzipped ustar archive in
// which every member is root's and has the time mtime (the gzip header has
// none): the same entries give the same bytes.
func writeTarGz(name string, entries []tarEntry, mtime time.Time) error {
	return writeGzip(name, func(w io.Writer) error {
		tw := tar.NewWriter(w)
		for _, e := range entries {
			h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: mtime, Uname: "root", Gname: "root", Format: tar.FormatUSTAR}
			var f *os.File
			if e.src == "" {
				h.Typeflag = tar.TypeDir
			} else {
				var err error
				if f, err = os.Open(e.src); err != nil {
					return err
				}
				st, err := f.Stat()
				if err != nil {
					f.Close()
					return err
				}
				h.Typeflag, h.Size = tar.TypeReg, st.Size()
			}
			err := tw.WriteHeader(h)
			if err == nil && f != nil {
				_, err = io.Copy(tw, f)
			}
			if f != nil {
				f.Close()
			}
			if err != nil {
				return fmt.Errorf("%s: %w", e.name, err)
			}
		}
		return tw.Close()
	})
}

// gzipFile writes src gzipped to dst (a man page for the packages).
func gzipFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return writeGzipBytes(dst, b)
}

// writeGzipBytes writes b gzipped to dst, making its directory.
func writeGzipBytes(dst string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return writeGzip(dst, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// writeGzip creates name and writes what fill writes into it through gzip
// at its best compression, with no name and no time in the header (a
// timestamp there is what lintian's package-contains-timestamped-gzip
// finds; the bytes depend on the content alone).
func writeGzip(name string, fill func(io.Writer) error) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	zw, err := gzip.NewWriterLevel(f, gzip.BestCompression)
	if err != nil {
		f.Close()
		return err
	}
	err = fill(zw)
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}
