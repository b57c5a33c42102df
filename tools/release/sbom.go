package main

import (
	"bytes"
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The SBOM is CycloneDX 1.5 JSON (https://cyclonedx.org/docs/1.5/json/),
// made from the build information the Go toolchain wrote into the binary
// (what go version -m prints): the main module, the Go standard library and
// every module linked in, each with its package URL. No serial number: the
// document is the same for the same binary.
type cdxBOM struct {
	BOMFormat    string          `json:"bomFormat"`
	SpecVersion  string          `json:"specVersion"`
	Version      int             `json:"version"`
	Metadata     cdxMetadata     `json:"metadata"`
	Components   []cdxComponent  `json:"components"`
	Dependencies []cdxDependency `json:"dependencies"`
}

type cdxMetadata struct {
	Timestamp string       `json:"timestamp"`
	Tools     cdxTools     `json:"tools"`
	Component cdxComponent `json:"component"`
}

type cdxTools struct {
	Components []cdxComponent `json:"components"`
}

type cdxComponent struct {
	Type       string        `json:"type"`
	BOMRef     string        `json:"bom-ref,omitempty"`
	Name       string        `json:"name"`
	Version    string        `json:"version,omitempty"`
	PURL       string        `json:"purl,omitempty"`
	Licenses   []cdxLicense  `json:"licenses,omitempty"`
	Properties []cdxProperty `json:"properties,omitempty"`
}

// cdxLicense is a licence choice: a licence by its SPDX identifier.
type cdxLicense struct {
	License cdxLicenseID `json:"license"`
}

type cdxLicenseID struct {
	ID string `json:"id"`
}

// spdxLicenses is the licences field of a component under the licence id.
func spdxLicenses(id string) []cdxLicense {
	if id == "" {
		return nil
	}
	return []cdxLicense{{License: cdxLicenseID{ID: id}}}
}

type cdxProperty struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type cdxDependency struct {
	Ref       string   `json:"ref"`
	DependsOn []string `json:"dependsOn"`
}

// sbomName is the SBOM of one architecture's binary.
func sbomName(cfg config, arch string) string {
	return fmt.Sprintf("paddock_%s_linux_%s.sbom.cdx.json", cfg.fileVersion(), arch)
}

// writeSBOM writes the SBOM of bin into cfg.out and returns its name;
// linked are the licences of what bin links (linkedLicenses).
func writeSBOM(cfg config, arch, bin string, linked []linkedLicense) (string, error) {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "", fmt.Errorf("sbom: %w", err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the & of a purl's qualifiers as it is
	enc.SetIndent("", "  ")
	if err := enc.Encode(sbom(info, cfg.version, cfg.epoch, licenseIDs(linked))); err != nil {
		return "", fmt.Errorf("sbom: %w", err)
	}
	name := sbomName(cfg, arch)
	return name, os.WriteFile(filepath.Join(cfg.out, name), b.Bytes(), 0o644)
}

// licenseIDs maps "stdlib" and each module path@version to its licence's
// SPDX identifier.
func licenseIDs(linked []linkedLicense) map[string]string {
	ids := map[string]string{}
	for _, l := range linked {
		key := l.module + "@" + l.version
		if l.module == "stdlib" {
			key = "stdlib"
		}
		ids[key] = l.spdx
	}
	return ids
}

// sbom is the document for a binary with build information info, released
// as version at time at: paddock under projectLicense, the standard library
// and each module under the licence licenses names for it ("stdlib",
// path@version).
func sbom(info *buildinfo.BuildInfo, version string, at time.Time, licenses map[string]string) cdxBOM {
	var goos, goarch string
	var props []cdxProperty
	for _, s := range info.Settings {
		switch s.Key {
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			goarch = s.Value
		}
		props = append(props, cdxProperty{Name: "go:build:" + s.Key, Value: s.Value})
	}
	if info.Main.Version != "" {
		props = append(props, cdxProperty{Name: "go:module:version", Value: info.Main.Version})
	}
	mainRef := purl(info.Main.Path, version) + "?" + "goarch=" + goarch + "&goos=" + goos
	main := cdxComponent{Type: "application", BOMRef: mainRef, Name: info.Main.Path, Version: version, PURL: mainRef, Licenses: spdxLicenses(projectLicense), Properties: props}

	// The standard library as scanners name it: pkg:golang/stdlib@1.26.8.
	stdVersion, _, _ := strings.Cut(strings.TrimPrefix(info.GoVersion, "go"), " ")
	std := cdxComponent{Type: "library", Name: "stdlib", Version: info.GoVersion, PURL: purl("stdlib", stdVersion), Licenses: spdxLicenses(licenses["stdlib"])}
	std.BOMRef = std.PURL
	comps := []cdxComponent{std}
	for _, d := range info.Deps {
		mod := d
		var mprops []cdxProperty
		if d.Replace != nil {
			// What is linked in is the replacement.
			mod = d.Replace
			mprops = append(mprops, cdxProperty{Name: "go:replaces", Value: d.Path + "@" + d.Version})
		}
		if mod.Sum != "" {
			mprops = append(mprops, cdxProperty{Name: "go:sum", Value: mod.Sum})
		}
		c := cdxComponent{Type: "library", Name: mod.Path, Version: mod.Version, PURL: purl(mod.Path, mod.Version), Licenses: spdxLicenses(licenses[mod.Path+"@"+mod.Version]), Properties: mprops}
		c.BOMRef = c.PURL
		comps = append(comps, c)
	}
	deps := cdxDependency{Ref: main.BOMRef}
	for _, c := range comps {
		deps.DependsOn = append(deps.DependsOn, c.BOMRef)
	}
	return cdxBOM{
		BOMFormat:   "CycloneDX",
		SpecVersion: "1.5",
		Version:     1,
		Metadata: cdxMetadata{
			Timestamp: at.UTC().Format(time.RFC3339),
			Tools:     cdxTools{Components: []cdxComponent{{Type: "application", Name: modulePath + "/tools/release"}}},
			Component: main,
		},
		Components:   comps,
		Dependencies: []cdxDependency{deps},
	}
}

// purl is the package URL of a Go module (or "stdlib") at a version:
// pkg:golang/PATH@VERSION, percent-encoding what a purl may not hold
// literally (the + of +incompatible, say).
func purl(path, version string) string {
	return "pkg:golang/" + purlEscape(path, true) + "@" + purlEscape(version, false)
}

// purlEscape percent-encodes every byte but letters, digits and . - _ ~
// (and / between a path's segments when slash).
func purlEscape(s string, slash bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '-', c == '_', c == '~', slash && c == '/':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
