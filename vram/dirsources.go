package vram

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// DirSources reads a host captured by testdata/capture.sh (or written by
// hand in its layout) instead of the machine: nvidia-smi's outputs from
// DIR/nvidia-smi/, sysfs paths under DIR, process names from DIR/comm and
// DISPLAY / WAYLAND_DISPLAY from DIR/env. Tests and `paddock preflight
// --host-fixture DIR` use it; see vram/testdata/README.md.
func DirSources(dir string) Sources { return dirSources{dir: dir} }

type dirSources struct{ dir string }

func (d dirSources) NvidiaSMI(args ...string) ([]byte, error) {
	if _, err := os.Stat(filepath.Join(d.dir, "nvidia-smi", "missing")); err == nil {
		return nil, fmt.Errorf("nvidia-smi: %w", exec.ErrNotFound)
	}
	var name string
	switch {
	case len(args) > 0 && strings.HasPrefix(args[0], "--query-gpu="):
		name = "query-gpu"
	case len(args) > 0 && strings.HasPrefix(args[0], "--query-compute-apps="):
		name = "query-compute-apps"
	default:
		return nil, fmt.Errorf("fixture has no answer for nvidia-smi %s", strings.Join(args, " "))
	}
	out, err := os.ReadFile(filepath.Join(d.dir, "nvidia-smi", name+".csv"))
	if err != nil {
		return nil, fmt.Errorf("nvidia-smi %s: fixture: %w", name, err)
	}
	if rc, err := os.ReadFile(filepath.Join(d.dir, "nvidia-smi", name+".exit")); err == nil {
		return out, fmt.Errorf("nvidia-smi: exit status %s: %s", strings.TrimSpace(string(rc)), firstLine(strings.TrimSpace(string(out))))
	}
	return out, nil
}

func (d dirSources) ReadFile(path string) ([]byte, error) {
	return os.ReadFile(filepath.Join(d.dir, path))
}

func (d dirSources) Glob(pattern string) ([]string, error) {
	root := filepath.Clean(d.dir)
	m, err := filepath.Glob(root + pattern)
	for i := range m {
		m[i] = strings.TrimPrefix(m[i], root)
	}
	return m, err
}

func (d dirSources) Getenv(k string) string {
	b, err := os.ReadFile(filepath.Join(d.dir, "env"))
	if err != nil {
		return ""
	}
	v := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if key, val, ok := strings.Cut(sc.Text(), "="); ok && key == k {
			v = val
		}
	}
	return v
}

func (d dirSources) Processes() ([]string, error) {
	b, err := os.ReadFile(filepath.Join(d.dir, "comm"))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			names = append(names, l)
		}
	}
	return names, nil
}
