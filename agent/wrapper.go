package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The runtime wrapper: Docker 20.10 drops listenerPath and
// listenerMetadata from a container's seccomp profile (its profile type
// has no such fields) and keeps the SCMP_ACT_NOTIFY rules, so runc refuses
// the container ("seccomp: listenerPath is not set") and crun runs it
// unserved (each trapped call ENOSYS). `paddock agent runtime-wrapper`
// stands in for the runtime Docker calls: before `create` or `run` it
// writes listenerPath (and listenerMetadata) back into the bundle's
// config.json where the profile has NOTIFY rules and no listener, then
// execs the real runtime with the same arguments.

// runtimeValueFlags are the global flags of runc and crun that take a
// value as the next argument (a value given as --flag=value needs none).
var runtimeValueFlags = map[string]bool{
	"--root": true, "--log": true, "--log-format": true, "--log-level": true, "--criu": true,
	"--rootless": true, "--cgroup-manager": true,
}

// RuntimeBundle reads a runtime's command line (its arguments after the
// program's name): the subcommand, and for `create` and `run` the bundle
// directory (--bundle, -b, or dir, the runtime's working directory, as
// runc and crun default to).
func RuntimeBundle(args []string, dir string) (cmd, bundle string) {
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") {
			break
		}
		if !strings.Contains(a, "=") && runtimeValueFlags[a] {
			i++
		}
	}
	if i >= len(args) || args[i] == "--" {
		return "", ""
	}
	cmd = args[i]
	if cmd != "create" && cmd != "run" {
		return cmd, ""
	}
	bundle = dir
	for _, a := range args[i+1:] {
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, "--bundle="); ok {
			bundle = v
		} else if v, ok := strings.CutPrefix(a, "-b="); ok {
			bundle = v
		}
	}
	for j := i + 1; j+1 < len(args); j++ {
		if args[j] == "--" {
			break
		}
		if args[j] == "--bundle" || args[j] == "-b" {
			bundle = args[j+1]
		}
	}
	if !filepath.IsAbs(bundle) {
		bundle = filepath.Join(dir, bundle)
	}
	return cmd, bundle
}

// PatchBundle gives the seccomp profile of the bundle's config.json the
// agent's socket as its listenerPath (and metadata as its
// listenerMetadata, where it has none) when it has SCMP_ACT_NOTIFY rules
// and no listenerPath; it reports whether it changed the file, which it
// replaces whole (a temporary file and a rename), keeping every other
// field as it was. A config.json that cannot be read or parsed is an
// error: the container is not started unserved.
func PatchBundle(bundle, socket, metadata string) (bool, error) {
	if err := checkSocket(socket); err != nil {
		return false, err
	}
	path := filepath.Join(bundle, "config.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("runtime wrapper: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // numbers as written: no float rounding of large ones
	var cfg map[string]any
	if err := dec.Decode(&cfg); err != nil {
		return false, fmt.Errorf("runtime wrapper: %s: %w", path, err)
	}
	linux, _ := cfg["linux"].(map[string]any)
	seccomp, _ := linux["seccomp"].(map[string]any)
	if seccomp == nil || !notifies(seccomp) {
		return false, nil
	}
	if lp, _ := seccomp["listenerPath"].(string); lp != "" {
		return false, nil
	}
	seccomp["listenerPath"] = socket
	if md, _ := seccomp["listenerMetadata"].(string); md == "" && metadata != "" {
		seccomp["listenerMetadata"] = metadata
	}
	out, err := json.Marshal(cfg)
	if err != nil {
		return false, fmt.Errorf("runtime wrapper: %s: %w", path, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return false, fmt.Errorf("runtime wrapper: %w", err)
	}
	tmp, err := os.CreateTemp(bundle, ".config.json.*")
	if err != nil {
		return false, fmt.Errorf("runtime wrapper: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing there
	_, werr := tmp.Write(out)
	cerr := tmp.Chmod(fi.Mode().Perm())
	if err := errors.Join(werr, cerr, tmp.Close()); err != nil {
		return false, fmt.Errorf("runtime wrapper: %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return false, fmt.Errorf("runtime wrapper: %w", err)
	}
	return true, nil
}

// notifies reports whether a seccomp profile (as JSON) has a rule whose
// action, or its default action, is SCMP_ACT_NOTIFY.
func notifies(seccomp map[string]any) bool {
	if seccomp["defaultAction"] == "SCMP_ACT_NOTIFY" {
		return true
	}
	rules, _ := seccomp["syscalls"].([]any)
	for _, r := range rules {
		if m, _ := r.(map[string]any); m["action"] == "SCMP_ACT_NOTIFY" {
			return true
		}
	}
	return false
}
