package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/internal/features"
)

// idOCIRuntime is the doctor item for fleet mode: whether this node's OCI
// runtime hands a container's seccomp listener to a socket (listenerPath).
const idOCIRuntime = "oci_runtime"

// runtimeRules are the OCI runtimes that support listenerPath, and from
// which version: runc since 1.1.0 (opencontainers/runc#2682), crun since
// 0.19 (containers/crun#627).
var runtimeRules = []struct {
	name  string
	since [3]int
}{{"runc", [3]int{1, 1, 0}}, {"crun", [3]int{0, 19, 0}}}

// crunNote is what doctor says of crun: what it sends that agents before
// this release refused, and that they hung it.
const crunNote = "crun sends an exec session's handoff without its pid (pid 0, bundle \".\"; 1.8.1 and its main branch): " +
	"this agent serves it by its listener, and answers the calls of any handoff it refuses; an agent before this release refused it " +
	"and closed the listener, and every podman exec into a crun container hung for ever in its first trapped call (ctr task exec failed after about 18 s): " +
	"upgrade the agent before a node runs crun (docs/fleet.md)"

// hybridNote is what doctor says of crun under the hybrid cgroup layout.
const hybridNote = "crun refuses this node's hybrid cgroup layout (cgroup v1 with cgroup2 at /sys/fs/cgroup/unified: " +
	"\"cgroups in hybrid mode not supported\"): no container starts with it, served or not"

// runtimeItem reports the OCI runtimes found with lookPath (lookRuntime:
// PATH, then runtimeDirs) and asked for their version with version (their
// `--version` output): ok when one of them supports listenerPath and can
// run containers here (crun cannot under the hybrid cgroup layout,
// hybrid). Of crun it says what it sends that older agents hung on.
func runtimeItem(lookPath func(string) (string, error), version func(path string) (string, error), hybrid bool) features.Item {
	it := features.Item{ID: idOCIRuntime, Name: "OCI runtime listenerPath (paddock agent)"}
	var found, ok, notes []string
	for _, r := range runtimeRules {
		path, err := lookPath(r.name)
		if err != nil {
			continue
		}
		out, err := version(path)
		v, perr := parseVersion(r.name, out)
		switch {
		case err != nil || perr != nil:
			found = append(found, fmt.Sprintf("%s (version unreadable)", path))
		case !atLeast(v, r.since):
			found = append(found, fmt.Sprintf("%s %d.%d.%d at %s (listenerPath needs %d.%d.%d+)", r.name, v[0], v[1], v[2], path, r.since[0], r.since[1], r.since[2]))
		case r.name == "crun" && hybrid:
			found = append(found, fmt.Sprintf("crun %d.%d.%d at %s (not under this hybrid cgroup layout)", v[0], v[1], v[2], path))
			notes = append(notes, hybridNote)
		default:
			s := fmt.Sprintf("%s %d.%d.%d at %s", r.name, v[0], v[1], v[2], path)
			found, ok = append(found, s), append(ok, s)
			if r.name == "crun" {
				notes = append(notes, crunNote)
			}
		}
	}
	switch {
	case len(ok) > 0:
		it.Status, it.Value = features.OK, strings.Join(found, ", ")
		it.Note = strings.Join(append([]string{"containers whose seccomp profile names paddock agent's socket (paddock agent profile) are served by it (docs/fleet.md)"}, notes...), "; ")
	case len(found) > 0:
		it.Status, it.Value = features.Missing, strings.Join(found, ", ")
		it.Note = strings.Join(append([]string{"no runtime here can hand a container's listener to paddock agent: runc 1.1+, or crun 0.19+ where the cgroup layout lets it run"}, notes...), "; ")
	default:
		it.Status, it.Value = features.Missing, "no runc or crun found (PATH, "+strings.Join(runtimeDirs, ", ")+")"
		it.Note = "fleet mode (paddock agent) needs runc 1.1+ or crun 0.19+ on the node; paddock run does not"
	}
	return it
}

// versionRE finds "NAME version X.Y[.Z]" in a runtime's --version output.
func versionRE(name string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` version (\d+)\.(\d+)(?:\.(\d+))?`)
}

// parseVersion reads runtime name's version from its --version output.
func parseVersion(name, out string) ([3]int, error) {
	var v [3]int
	m := versionRE(name).FindStringSubmatch(out)
	if m == nil {
		return v, fmt.Errorf("no %q version line in %q", name, out)
	}
	for i := range 3 {
		if m[i+1] != "" {
			v[i], _ = strconv.Atoi(m[i+1])
		}
	}
	return v, nil
}

// atLeast reports whether v >= min.
func atLeast(v, min [3]int) bool {
	for i := range 3 {
		if v[i] != min[i] {
			return v[i] > min[i]
		}
	}
	return true
}

// runtimeDirs are where doctor also looks for a runtime that PATH misses
// (doctor run under sudo's secure_path, or from a minimal environment):
// distributions put runc and crun in /usr/bin or /usr/sbin, containerd's
// release instructions put runc in /usr/local/sbin.
var runtimeDirs = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// lookRuntime returns a lookup that finds a runtime on PATH (lookPath),
// else as an executable regular file in one of dirs, in order.
func lookRuntime(lookPath func(string) (string, error), dirs []string) func(string) (string, error) {
	return func(name string) (string, error) {
		if p, err := lookPath(name); err == nil {
			return p, nil
		}
		for _, d := range dirs {
			p := filepath.Join(d, name)
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				return p, nil
			}
		}
		return "", fmt.Errorf("%s: not on PATH nor in %s", name, strings.Join(dirs, ", "))
	}
}

// runtimeTimeout bounds `RUNTIME --version`: a wedged runtime must not
// wedge doctor.
const runtimeTimeout = 5 * time.Second

// runtimeVersion runs PATH --version and returns its standard output.
// crun is given --root / too: `crun --version` makes its default state
// directory (/run/crun) when it is missing, and doctor changes nothing on
// the host; with an existing --root it makes nothing.
func runtimeVersion(path string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), runtimeTimeout)
	defer cancel()
	args := []string{"--version"}
	if filepath.Base(path) == "crun" {
		args = []string{"--root", "/", "--version"}
	}
	out, err := exec.CommandContext(ctx, path, args...).Output()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return string(out), fmt.Errorf("%s --version: no answer in %s", path, runtimeTimeout)
	}
	if err != nil {
		return string(out), fmt.Errorf("%s --version: %w", path, err)
	}
	return string(out), nil
}
