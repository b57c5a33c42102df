package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/internal/features"
)

func TestRuntimeItem(t *testing.T) {
	runc, crun := "runc version 1.1.5+ds1\ncommit: 1.1.5+ds1-1+deb12u1\nspec: 1.0.2-dev\n", "crun version 1.8.1\ncommit: abc\n+SYSTEMD +SECCOMP\n"
	tests := []struct {
		name     string
		found    map[string]string // runtime -> --version output ("" : fails)
		hybrid   bool
		status   features.Status
		valueHas string
		noteHas  string
	}{
		{"Debian 12 runc", map[string]string{"runc": runc}, false, features.OK, "runc 1.1.5", "are served by it"},
		{"old runc", map[string]string{"runc": "runc version 1.0.3\n"}, false, features.Missing, "runc 1.0.3 at /usr/sbin/runc (listenerPath needs 1.1.0+)", "runc 1.1+"},
		{"crun only", map[string]string{"crun": crun}, false, features.OK, "crun 1.8.1", "without its pid (pid 0"},
		{"crun under the hybrid layout", map[string]string{"crun": crun}, true, features.Missing, "(not under this hybrid cgroup layout)", "cgroups in hybrid mode not supported"},
		{"runc and crun, hybrid", map[string]string{"runc": runc, "crun": crun}, true, features.OK, "runc 1.1.5", "crun refuses this node's hybrid cgroup layout"},
		{"old runc, new crun", map[string]string{"runc": "runc version 1.0.0-rc93\n", "crun": "crun version 0.19\n"}, false, features.OK, "crun 0.19.0", "hung for ever"},
		{"unreadable", map[string]string{"runc": ""}, false, features.Missing, "(version unreadable)", "runc 1.1+"},
		{"none", map[string]string{}, false, features.Missing, "no runc or crun found", "needs runc"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			look := func(name string) (string, error) {
				if _, ok := tc.found[name]; ok {
					return "/usr/sbin/" + name, nil
				}
				return "", errors.New("not found")
			}
			ver := func(path string) (string, error) {
				out := tc.found[path[strings.LastIndexByte(path, '/')+1:]]
				if out == "" {
					return "", errors.New("exit status 1")
				}
				return out, nil
			}
			it := runtimeItem(look, ver, tc.hybrid)
			if it.ID != idOCIRuntime || it.Status != tc.status || !strings.Contains(it.Value, tc.valueHas) || !strings.Contains(it.Note, tc.noteHas) {
				t.Errorf("runtimeItem = %+v; want status %s, value with %q, a note with %q", it, tc.status, tc.valueHas, tc.noteHas)
			}
		})
	}
}

// TestLookRuntime: PATH first, then the fallback directories in order,
// where only an executable regular file counts.
func TestLookRuntime(t *testing.T) {
	dir := t.TempDir()
	mk := func(rel string, mode os.FileMode) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	mk("sbin/runc", 0o755)
	mk("bin/runc", 0o755)
	mk("sbin/crun", 0o644) // not executable
	mk("bin/crun", 0o755)
	if err := os.MkdirAll(filepath.Join(dir, "sbin/youki"), 0o755); err != nil { // a directory
		t.Fatal(err)
	}
	dirs := []string{filepath.Join(dir, "sbin"), filepath.Join(dir, "bin")}
	onPath := func(string) (string, error) { return "/on/path/runc", nil }
	notOnPath := func(name string) (string, error) { return "", errors.New(name + ": not found") }
	tests := []struct {
		name, runtime string
		lookPath      func(string) (string, error)
		want          string // "" : not found
	}{
		{"PATH wins", "runc", onPath, "/on/path/runc"},
		{"first fallback directory", "runc", notOnPath, filepath.Join(dir, "sbin/runc")},
		{"a non-executable file is skipped", "crun", notOnPath, filepath.Join(dir, "bin/crun")},
		{"a directory is skipped", "youki", notOnPath, ""},
		{"nowhere", "kata", notOnPath, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := lookRuntime(tc.lookPath, dirs)(tc.runtime)
			switch {
			case tc.want == "" && (err == nil || !strings.Contains(err.Error(), "not on PATH nor in "+dirs[0])):
				t.Errorf("lookRuntime(%s) = %q, %v; want an error naming where it looked", tc.runtime, got, err)
			case tc.want != "" && (err != nil || got != tc.want):
				t.Errorf("lookRuntime(%s) = %q, %v; want %q", tc.runtime, got, err, tc.want)
			}
		})
	}
}
