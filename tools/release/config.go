package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	// modulePath is the module whose cmd/paddock a release builds.
	modulePath = "github.com/paddock-dev/paddock"
	// defaultMaintainer fills the packages' Maintainer (deb) and Packager
	// (rpm) fields unless --maintainer says otherwise.
	defaultMaintainer = "paddock developers <paddock@paddock.dev>"
)

// supportedArches are the Linux architectures paddock has syscall tables
// for (filter/tables_*.go); defaultArches are those a release builds.
var (
	supportedArches = []string{"amd64", "arm64"}
	defaultArches   = supportedArches
)

// versionRE is a release version: v, then semantic versioning's
// MAJOR.MINOR.PATCH with an optional -PRERELEASE (no +BUILD metadata).
var versionRE = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

// config is one release build, its inputs checked.
type config struct {
	version    string    // the release version, v0.1.0
	out        string    // the directory the artifacts go into
	arches     []string  // GOARCH values, in the order given
	maintainer string    // the packages' Maintainer/Packager
	epoch      time.Time // SOURCE_DATE_EPOCH: every timestamp in the artifacts
	root       string    // the module's root directory
}

// fileVersion is the version as the file names carry it: without the v
// (paddock_0.1.0_linux_amd64.tar.gz), as the .deb and .rpm versions do.
func (c config) fileVersion() string { return strings.TrimPrefix(c.version, "v") }

// newConfig checks the flags' values and finds the module root and
// SOURCE_DATE_EPOCH (getenv reads the environment).
func newConfig(version, out, arches, maintainer string, getenv func(string) string) (config, error) {
	if runtime.GOOS != "linux" {
		return config{}, fmt.Errorf("runs on Linux only (it runs the paddock it built to write the man pages and completions), not on %s", runtime.GOOS)
	}
	c := config{version: version, out: out, maintainer: strings.TrimSpace(maintainer)}
	if !versionRE.MatchString(version) {
		return config{}, fmt.Errorf("--version %q: want vMAJOR.MINOR.PATCH with an optional -PRERELEASE, such as v0.1.0 or v0.2.0-rc.1", version)
	}
	if out == "" {
		return config{}, errors.New("--out is required: the directory to write the artifacts into (new or empty)")
	}
	if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
		return config{}, fmt.Errorf("--out %s: the directory is not empty (it holds %s, ...); want a new or empty directory, so that nothing of an earlier build is mixed in or overwritten", out, entries[0].Name())
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return config{}, fmt.Errorf("--out %s: %w", out, err)
	}
	for _, a := range strings.Split(arches, ",") {
		a = strings.TrimSpace(a)
		if !slices.Contains(supportedArches, a) {
			return config{}, fmt.Errorf("--arch %q: unknown architecture %q; want a comma-separated list of %s", arches, a, strings.Join(supportedArches, ", "))
		}
		if !slices.Contains(c.arches, a) {
			c.arches = append(c.arches, a)
		}
	}
	if c.maintainer == "" {
		return config{}, errors.New("--maintainer is empty: the .deb and .rpm need one (name <contact>)")
	}
	root, err := moduleRoot()
	if err != nil {
		return config{}, err
	}
	c.root = root
	if c.epoch, err = sourceDateEpoch(root, getenv); err != nil {
		return config{}, err
	}
	return c, nil
}

// moduleRoot is the directory of paddock's go.mod, as the go command finds
// it from the working directory.
func moduleRoot() (string, error) {
	b, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(b))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("the working directory is not inside the %s module: run the release from a checkout of it", modulePath)
	}
	mod, err := os.ReadFile(gomod)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", gomod, err)
	}
	if !bytes.HasPrefix(mod, []byte("module "+modulePath+"\n")) {
		return "", fmt.Errorf("%s is not the %s module's: run the release from a checkout of paddock", gomod, modulePath)
	}
	return filepath.Dir(gomod), nil
}

// sourceDateEpoch is $SOURCE_DATE_EPOCH (Unix seconds) when set, else the
// commit time of the checked-out commit (git log -1 --format=%ct).
func sourceDateEpoch(root string, getenv func(string) string) (time.Time, error) {
	if s := getenv("SOURCE_DATE_EPOCH"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want a Unix time in seconds (0 or more), such as the output of git log -1 --format=%%ct", s)
		}
		return time.Unix(n, 0).UTC(), nil
	}
	cmd := exec.Command("git", "log", "-1", "--format=%ct")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH is not set and git log -1 --format=%%ct in %s failed (%v: %s): set SOURCE_DATE_EPOCH to the release commit's Unix time", root, err, strings.TrimSpace(stderr.String()))
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("git log -1 --format=%%ct in %s printed %q, not a Unix time: set SOURCE_DATE_EPOCH", root, b)
	}
	return time.Unix(n, 0).UTC(), nil
}
