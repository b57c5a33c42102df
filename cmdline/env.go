package cmdline

import "strings"

// EnvMap turns KEY=VALUE strings into a map; the first occurrence of a key
// wins, as in getenv(3), and entries without "=" or without a key are left
// out. Every reader of a command's environment (the guard's opt-in, the
// VRAM preflight's) uses it, so that all read the same value.
func EnvMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		if _, dup := m[k]; !dup {
			m[k] = v
		}
	}
	return m
}

func copyEnv(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// OptInValue is the one rule for every opt-in variable paddock reads in a
// command's environment (power control, protected services, the VRAM
// budget): 1, true, yes or on, in any case and with surrounding blanks,
// declare the intent; anything else (0, false, no, off, empty) does not.
func OptInValue(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}
