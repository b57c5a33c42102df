package agent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRuntimeBundle(t *testing.T) {
	tests := []struct {
		name        string
		args        []string
		cmd, bundle string
	}{
		{"containerd's shim", []string{"--root", "/run/containerd/runc/moby", "--log", "/run/x/log.json", "--log-format", "json", "create", "--bundle", "/run/b", "--pid-file", "/run/b/init.pid", "id"}, "create", "/run/b"},
		{"flags with =", []string{"--root=/r", "--systemd-cgroup", "create", "--bundle=/b", "id"}, "create", "/b"},
		{"-b", []string{"run", "-b", "/b2", "id"}, "run", "/b2"},
		{"no bundle: the working directory", []string{"--root", "/r", "run", "id"}, "run", "/work"},
		{"a relative bundle", []string{"create", "--bundle", "b", "id"}, "create", "/work/b"},
		{"exec: no bundle", []string{"--root", "/r", "exec", "--process", "/p.json", "id"}, "exec", ""},
		{"a flag's value named create", []string{"--log", "create", "start", "id"}, "start", ""},
		{"nothing", []string{"--version"}, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd, bundle := RuntimeBundle(tc.args, "/work")
			if cmd != tc.cmd || bundle != tc.bundle {
				t.Errorf("RuntimeBundle(%q) = %q, %q; want %q, %q", tc.args, cmd, bundle, tc.cmd, tc.bundle)
			}
		})
	}
}

// TestPatchBundle: a profile with NOTIFY rules and no listenerPath (as
// Docker 20.10 leaves it) gets the socket and the metadata, every other
// field kept (a number too large for a float64 included); one with a
// listenerPath, or without NOTIFY rules, or without seccomp, is left
// alone; a config.json that is not JSON is an error.
func TestPatchBundle(t *testing.T) {
	notify := `{"ociVersion":"1.0.2","process":{"rlimits":[{"type":"RLIMIT_NOFILE","hard":18446744073709551615,"soft":1024}]},` +
		`"linux":{"seccomp":{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["kill"],"action":"SCMP_ACT_NOTIFY"}]}}}`
	tests := []struct {
		name, config string
		patched      bool
		err          string
	}{
		{"Docker 20.10's", notify, true, ""},
		{"has a listener", strings.Replace(notify, `"defaultAction"`, `"listenerPath":"/other.sock","defaultAction"`, 1), false, ""},
		{"no NOTIFY rule", strings.Replace(notify, "SCMP_ACT_NOTIFY", "SCMP_ACT_ERRNO", 1), false, ""},
		{"no seccomp", `{"ociVersion":"1.0.2","linux":{}}`, false, ""},
		{"not JSON", `{"ociVersion"`, false, "config.json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "config.json")
			if err := os.WriteFile(path, []byte(tc.config), 0o600); err != nil {
				t.Fatal(err)
			}
			patched, err := PatchBundle(dir, "/run/paddock/agent.sock", "docker")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("PatchBundle: %v, want an error naming %q", err, tc.err)
				}
				return
			}
			if err != nil || patched != tc.patched {
				t.Fatalf("PatchBundle = %v, %v; want %v", patched, err, tc.patched)
			}
			got, _ := os.ReadFile(path)
			if !patched {
				if string(got) != tc.config {
					t.Errorf("config.json changed though not patched:\n%s", got)
				}
				return
			}
			var cfg struct {
				Process struct {
					Rlimits []struct {
						Hard json.Number `json:"hard"`
					} `json:"rlimits"`
				} `json:"process"`
				Linux struct {
					Seccomp struct {
						ListenerPath, ListenerMetadata string
						Syscalls                       []struct{ Action string }
					} `json:"seccomp"`
				} `json:"linux"`
			}
			if err := json.Unmarshal(got, &cfg); err != nil {
				t.Fatal(err)
			}
			sc := cfg.Linux.Seccomp
			if sc.ListenerPath != "/run/paddock/agent.sock" || sc.ListenerMetadata != "docker" || len(sc.Syscalls) != 1 || sc.Syscalls[0].Action != "SCMP_ACT_NOTIFY" {
				t.Errorf("patched seccomp = %+v", sc)
			}
			if len(cfg.Process.Rlimits) != 1 || cfg.Process.Rlimits[0].Hard != "18446744073709551615" {
				t.Errorf("another field changed: %+v", cfg.Process)
			}
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("config.json's mode: %v, %v; want 0600 as it was", fi.Mode(), err)
			}
		})
	}
	if _, err := PatchBundle(t.TempDir(), "relative.sock", ""); err == nil {
		t.Error("PatchBundle took a relative socket path")
	}
}
