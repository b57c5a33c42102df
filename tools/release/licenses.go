package main

import (
	"bytes"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// projectLicense is paddock's licence, by its SPDX identifier: the .rpm's
// License field, the SBOM's, and the copyright file's first paragraph.
const projectLicense = "Apache-2.0"

// linkedLicense is the licence of one body of code linked into a paddock
// binary: the Go standard library or a Go module. Their notices travel with
// the binary (the copyright file), as the MIT and BSD licences ask.
type linkedLicense struct {
	module    string   // the module path, or "stdlib"
	version   string   // as the build information has it
	spdx      string   // MIT, BSD-2-Clause, BSD-3-Clause, Apache-2.0
	copyright []string // the copyright lines, as the code states them
	text      string   // the licence file's text (MIT and BSD: the notice itself)
}

// licenseFileRE names the files in a module's root that hold its licence.
var licenseFileRE = regexp.MustCompile(`(?i)^(licen[cs]e|copying)(\.md|\.txt)?$`)

// copyrightLineRE is a copyright line in a licence or at the top of a
// source file: "Copyright (c) 2017 Olivier Poitrey", "// Copyright 2013-2023 The Cobra Authors".
var copyrightLineRE = regexp.MustCompile(`^(?://\s*)?(Copyright\b.*\S)\s*$`)

// linkedLicenses reads the licences of what is linked into bin: the Go
// standard library of the toolchain that built it and each module its build
// information lists (the replacement, where one is), found in the module
// cache. A module whose licence cannot be told is an error: nothing is
// shipped without its notice.
func linkedLicenses(root, bin string) ([]linkedLicense, error) {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("licences: %w", err)
	}
	goroot, err := goEnv(root, "GOROOT")
	if err != nil {
		return nil, err
	}
	std, err := readLicense("stdlib", info.GoVersion, goroot)
	if err != nil {
		return nil, err
	}
	out := []linkedLicense{std}
	var want []string
	for _, d := range info.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		want = append(want, d.Path+"@"+d.Version)
	}
	dirs, err := moduleDirs(root, want)
	if err != nil {
		return nil, err
	}
	for _, mv := range want {
		path, version, _ := strings.Cut(mv, "@")
		l, err := readLicense(path, version, dirs[mv])
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

// goEnv is one value of go env, run in root.
func goEnv(root, key string) (string, error) {
	cmd := exec.Command("go", "env", key)
	cmd.Dir = root
	b, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env %s: %w", key, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// moduleDirs finds each module@version of mods in the module cache (go mod
// download, which the build before it has filled: GOPROXY=off, so that
// nothing is fetched that the binary was not built from).
func moduleDirs(root string, mods []string) (map[string]string, error) {
	dirs := map[string]string{}
	if len(mods) == 0 {
		return dirs, nil
	}
	cmd := exec.Command("go", append([]string{"mod", "download", "-json"}, mods...)...)
	cmd.Dir = root
	cmd.Env = append(withoutKeys(os.Environ(), []string{"GOPROXY=", "GOFLAGS="}), "GOPROXY=off", "GOFLAGS=-mod=mod")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		var m struct{ Path, Version, Dir, Error string }
		if derr := dec.Decode(&m); errors.Is(derr, io.EOF) {
			break
		} else if derr != nil {
			return nil, fmt.Errorf("licences: go mod download -json: %w", derr)
		}
		if m.Error != "" || m.Dir == "" {
			return nil, fmt.Errorf("licences: %s@%s is not in the module cache (%s): run go mod download", m.Path, m.Version, m.Error)
		}
		dirs[m.Path+"@"+m.Version] = m.Dir
	}
	if err != nil {
		return nil, fmt.Errorf("licences: go mod download -json: %w\n%s", err, stderr.Bytes())
	}
	for _, mv := range mods {
		if dirs[mv] == "" {
			return nil, fmt.Errorf("licences: go mod download did not report %s", mv)
		}
	}
	return dirs, nil
}

// readLicense reads the licence in dir, the root of module (or of GOROOT).
func readLicense(module, version, dir string) (linkedLicense, error) {
	l := linkedLicense{module: module, version: version}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return l, fmt.Errorf("licences: %s: %w", module, err)
	}
	var file string
	for _, e := range entries {
		if licenseFileRE.MatchString(e.Name()) && e.Type().IsRegular() {
			if file != "" {
				return l, fmt.Errorf("licences: %s has two licence files, %s and %s: say in tools/release which applies", module, file, e.Name())
			}
			file = e.Name()
		}
	}
	if file == "" {
		return l, fmt.Errorf("licences: %s %s has no LICENSE, LICENCE or COPYING file in %s: its licence cannot be shipped with the binary", module, version, dir)
	}
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return l, fmt.Errorf("licences: %w", err)
	}
	l.text = strings.TrimSpace(strings.ReplaceAll(string(b), "\r\n", "\n"))
	if l.spdx = classifyLicense(l.text); l.spdx == "" {
		return l, fmt.Errorf("licences: the licence of %s %s (%s) is none tools/release knows (MIT, BSD-2-Clause, BSD-3-Clause, Apache-2.0): add it to classifyLicense, with its notice", module, version, filepath.Join(dir, file))
	}
	l.copyright = copyrightLines(l.text)
	if len(l.copyright) == 0 {
		// An Apache licence file names nobody; the sources' headers do.
		l.copyright = sourceCopyrights(dir)
	}
	return l, nil
}

// classifyLicense tells a licence by its text: its SPDX identifier, or "".
func classifyLicense(text string) string {
	flat := strings.Join(strings.Fields(text), " ")
	switch {
	case strings.Contains(flat, "Apache License") && strings.Contains(flat, "Version 2.0"):
		return "Apache-2.0"
	case strings.Contains(flat, "Permission is hereby granted, free of charge, to any person obtaining a copy"):
		return "MIT"
	case strings.Contains(flat, "Redistribution and use in source and binary forms"):
		if strings.Contains(flat, "Neither the name") || strings.Contains(flat, "names of its contributors") {
			return "BSD-3-Clause"
		}
		return "BSD-2-Clause"
	}
	return ""
}

// copyrightLines are text's copyright lines, each once, in order.
func copyrightLines(text string) []string {
	var out []string
	seen := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		if m := copyrightLineRE.FindStringSubmatch(strings.TrimSpace(line)); m != nil && !seen[m[1]] {
			seen[m[1]] = true
			out = append(out, m[1])
		}
	}
	return out
}

// sourceCopyrights are the copyright lines at the top of the .go files in
// dir (not its subdirectories), each once, sorted.
func sourceCopyrights(dir string) []string {
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	seen := map[string]bool{}
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		head := strings.SplitN(string(b), "\n", 6)
		for _, c := range copyrightLines(strings.Join(head[:min(len(head), 5)], "\n")) {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	sort.Strings(out)
	return out
}

// debianLicenseName is an SPDX identifier as Debian's copyright format
// names the licence (its short names: MIT is Expat there).
func debianLicenseName(spdx string) string {
	if spdx == "MIT" {
		return "Expat"
	}
	return spdx
}

// copyrightFile is the .deb's /usr/share/doc/paddock/copyright in Debian's
// machine-readable format (DEP-5): paddock's own code under the Apache
// License 2.0, whose text every Debian system has in
// /usr/share/common-licenses, then one paragraph per body of code linked
// into the binary, its Files named by module path, with its notice.
func copyrightFile(maintainer string, year int, linked []linkedLicense) []byte {
	var b strings.Builder
	field := func(name, value string) {
		lines := strings.Split(value, "\n")
		fmt.Fprintf(&b, "%s: %s\n", name, lines[0])
		for _, l := range lines[1:] {
			if strings.TrimSpace(l) == "" {
				b.WriteString(" .\n")
			} else {
				b.WriteString(" " + l + "\n")
			}
		}
	}
	field("Format", "https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/")
	field("Upstream-Name", "paddock")
	field("Upstream-Contact", maintainer)
	field("Source", "https://github.com/paddock-dev/paddock")
	field("Comment", "/usr/bin/paddock is a static Go binary: besides paddock's own code it\n"+
		"holds the Go standard library and the Go modules of the paragraphs\n"+
		"below, whose Files fields name them by module path. The SBOM of the\n"+
		"release (paddock_VERSION_linux_ARCH.sbom.cdx.json) lists each with its\n"+
		"version and hash.")
	b.WriteString("\n")
	field("Files", "*")
	field("Copyright", fmt.Sprintf("%d paddock developers", year))
	field("License", projectLicense)
	for _, l := range linked {
		b.WriteString("\n")
		files := l.module + "/*"
		if l.module == "stdlib" {
			files = "go/src/*"
		}
		field("Files", files)
		holders := strings.Join(l.copyright, "\n")
		if holders == "" {
			holders = "the authors of " + l.module + " (its licence names no holder)"
		}
		field("Copyright", holders)
		name := debianLicenseName(l.spdx)
		if l.spdx == "Apache-2.0" {
			field("License", name)
		} else {
			field("License", name+"\n"+l.text)
		}
		what := l.module + " " + l.version
		if l.module == "stdlib" {
			what = "the Go standard library, " + l.version
		}
		field("Comment", "Linked into /usr/bin/paddock: "+what+".")
	}
	b.WriteString("\n")
	field("License", projectLicense+"\n"+apacheNotice)
	return []byte(b.String())
}

// apacheNotice is the standalone Apache-2.0 paragraph's text: the
// licence's own notice, and where Debian keeps its full text.
const apacheNotice = `Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.

On Debian systems, the complete text of the Apache License, Version 2.0
can be found in "/usr/share/common-licenses/Apache-2.0".`
