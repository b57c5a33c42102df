package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/internal/features"
)

func TestRuntimeItem(t *testing.T) {
	tests := []struct {
		name     string
		found    map[string]string // runtime -> --version output ("" : fails)
		status   features.Status
		valueHas string
	}{
		{"Debian 12 runc", map[string]string{"runc": "runc version 1.1.5+ds1\ncommit: 1.1.5+ds1-1+deb12u1\nspec: 1.0.2-dev\n"}, features.OK, "runc 1.1.5"},
		{"old runc", map[string]string{"runc": "runc version 1.0.3\n"}, features.Missing, "runc 1.0.3 (listenerPath needs 1.1.0+)"},
		{"crun only", map[string]string{"crun": "crun version 1.8.1\ncommit: abc\n+SYSTEMD +SECCOMP\n"}, features.OK, "crun 1.8.1"},
		{"old runc, new crun", map[string]string{"runc": "runc version 1.0.0-rc93\n", "crun": "crun version 0.19\n"}, features.OK, "crun 0.19.0"},
		{"unreadable", map[string]string{"runc": ""}, features.Missing, "(version unreadable)"},
		{"none", map[string]string{}, features.Missing, "no runc or crun found"},
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
			it := runtimeItem(look, ver)
			if it.ID != idOCIRuntime || it.Status != tc.status || !strings.Contains(it.Value, tc.valueHas) || it.Note == "" {
				t.Errorf("runtimeItem = %+v; want status %s, value with %q, a note", it, tc.status, tc.valueHas)
			}
		})
	}
}
