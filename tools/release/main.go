// Command release builds paddock's release artifacts into an empty
// directory, reproducibly: for each architecture a tarball (the binary, man
// pages, shell completions, README and LICENSE when the repository has one),
// a .deb and an .rpm (made with nfpm), and a CycloneDX SBOM of the Go
// modules linked into the binary; then SHA256SUMS over all of them.
//
//	go run ./tools/release --version v0.1.0 --out dist
//
// The same tree, toolchain and SOURCE_DATE_EPOCH give the same bytes: the
// binaries are built with -trimpath, CGO_ENABLED=0 and a fixed environment,
// and every timestamp in the archives is SOURCE_DATE_EPOCH (taken from the
// environment, else from the time of the checked-out commit). See
// docs/release.md.
//
// nfpm is imported here only, never by cmd/paddock: the release test checks
// that it is not linked into the paddock binary.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main with its arguments and output streams: 0 when the release
// was built, 1 when building failed, 2 on a usage error.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	fs.SetOutput(stderr)
	version := fs.String("version", "", "the release version, vMAJOR.MINOR.PATCH[-PRERELEASE] (required)")
	out := fs.String("out", "", "the directory to write the artifacts into; it must be new or empty (required)")
	arches := fs.String("arch", strings.Join(defaultArches, ","), "the architectures to build, comma-separated ("+strings.Join(supportedArches, ", ")+")")
	maintainer := fs.String("maintainer", defaultMaintainer, "the Maintainer/Packager field of the .deb and .rpm")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: go run ./tools/release --version vX.Y.Z --out DIR [--arch amd64,arm64] [--maintainer TEXT]\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "release: unexpected arguments %q (every input is a flag)\n", fs.Args())
		return 2
	}
	cfg, err := newConfig(*version, *out, *arches, *maintainer, os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "release: %v\n", err)
		return 2
	}
	files, err := build(cfg, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "release: %v\n", err)
		return 1
	}
	for _, f := range files {
		fmt.Fprintln(stdout, f)
	}
	return 0
}
