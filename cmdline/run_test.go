package cmdline

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func TestUnwrap(t *testing.T) {
	for _, tc := range []struct {
		argv   string   // split on spaces
		words  []string // the argv instead, where a word holds a space
		env    []string
		want   string            // Argv, space-joined
		module string            // Module
		args   string            // Args, space-joined
		vars   map[string]string // Env must hold these ("" value: must not hold it)
	}{
		{argv: "ls -l", want: "ls -l", args: "-l"},
		{argv: "", want: ""},
		{argv: "nohup nice -n 5 timeout 10 vllm serve m", want: "vllm serve m", args: "serve m"},
		{argv: "chrt -f 10 vllm serve m", want: "vllm serve m", args: "serve m"},
		{argv: "systemd-run --scope --user vllm serve m", want: "vllm serve m", args: "serve m"},
		{argv: "flock /tmp/L vllm serve m", want: "vllm serve m", args: "serve m"},
		{argv: "unshare -U vllm serve m", want: "vllm serve m", args: "serve m"},
		{argv: "busybox env vllm serve m", want: "vllm serve m", args: "serve m"},
		{argv: "uv run --with vllm vllm serve m", want: "vllm serve m", args: "serve m"},
		{argv: "uv pip install vllm", want: "uv pip install vllm", args: "pip install vllm"},
		{argv: "conda run -n gpu vllm serve m", want: "vllm serve m", args: "serve m"},
		{argv: "sh -c vllm", want: "sh -c vllm", args: "-c vllm"},
		{argv: "python3 -m vllm.entrypoints.openai.api_server --model m", want: "python3 -m vllm.entrypoints.openai.api_server --model m",
			module: "vllm.entrypoints.openai.api_server", args: "--model m"},
		{argv: "python -u -X dev -mvllm serve m", want: "python -u -X dev -mvllm serve m", module: "vllm", args: "serve m"},
		{argv: "python3 -um sglang.launch_server", want: "python3 -um sglang.launch_server", module: "sglang.launch_server", args: ""},
		{argv: "python3 -c import", want: "python3 -c import", args: "-c import"},
		{argv: "python3 -W ignore /usr/bin/vllm serve m", want: "/usr/bin/vllm serve m", args: "serve m"},
		{argv: "python3.12 -- train.py -m x", want: "train.py -m x", args: "-m x"},
		{argv: "sudo -E env -i A=1 python3 -m vllm", want: "python3 -m vllm", module: "vllm", args: "", vars: map[string]string{"A": "1", "HOME": ""}},
		{argv: "CUDA_VISIBLE_DEVICES=1 vllm serve m", env: []string{"HOME=/h"}, want: "vllm serve m", args: "serve m",
			vars: map[string]string{"CUDA_VISIBLE_DEVICES": "1", "HOME": "/h"}},
		{argv: "nohup env CUDA_VISIBLE_DEVICES=1 vllm", env: []string{"CUDA_VISIBLE_DEVICES=0", "CUDA_VISIBLE_DEVICES=2"}, want: "vllm",
			vars: map[string]string{"CUDA_VISIBLE_DEVICES": "1"}},
		{argv: "sudo vllm serve m", env: []string{"CUDA_VISIBLE_DEVICES=1"}, want: "vllm serve m", args: "serve m",
			vars: map[string]string{"CUDA_VISIBLE_DEVICES": ""}},
		{argv: "sudo -E vllm", env: []string{"CUDA_VISIBLE_DEVICES=1"}, want: "vllm", vars: map[string]string{"CUDA_VISIBLE_DEVICES": "1"}},
		{argv: "sudo CUDA_VISIBLE_DEVICES=3 vllm", env: []string{"CUDA_VISIBLE_DEVICES=1"}, want: "vllm", vars: map[string]string{"CUDA_VISIBLE_DEVICES": "3"}},
		{argv: "systemd-run --setenv=X=2 vllm", env: []string{"Y=1"}, want: "vllm", vars: map[string]string{"X": "2", "Y": ""}},
		{argv: "env -S", words: []string{"env", "-S", "X=1 vllm", "serve"}, want: "vllm serve", args: "serve", vars: map[string]string{"X": "1"}},
	} {
		t.Run(tc.argv, func(t *testing.T) {
			argv := strings.Fields(tc.argv)
			if tc.words != nil {
				argv = tc.words
			}
			got := Unwrap(argv, tc.env)
			if g := strings.Join(got.Argv, " "); g != tc.want {
				t.Errorf("Argv = %q, want %q", g, tc.want)
			}
			if got.Module != tc.module {
				t.Errorf("Module = %q, want %q", got.Module, tc.module)
			}
			if g := strings.Join(got.Args, " "); g != tc.args {
				t.Errorf("Args = %q, want %q", g, tc.args)
			}
			for k, v := range tc.vars {
				if gv, ok := got.Env[k]; gv != v || ok != (v != "") {
					t.Errorf("Env[%s] = %q (set %v), want %q", k, gv, ok, v)
				}
			}
		})
	}
}

// Unwrap and the reader read one table: every wrapper is seen through by
// both (the guard checks that it watches each one).
func TestWrappersAreUnwrapped(t *testing.T) {
	names := Wrappers()
	if len(names) < 30 || !sortedUnique(names) {
		t.Fatalf("Wrappers() = %q: want the whole table, sorted", names)
	}
	for _, n := range names {
		if !unwraps(n) || !Follows(n) {
			t.Errorf("%s: unwraps=%v Follows=%v, want both", n, unwraps(n), Follows(n))
		}
	}
}

func sortedUnique(s []string) bool {
	for i := 1; i < len(s); i++ {
		if s[i-1] >= s[i] {
			return false
		}
	}
	return true
}

// TestWordMatchers: the hand-written matchers on the exec path agree with
// the regular expressions they stand for.
func TestWordMatchers(t *testing.T) {
	assign := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
	python := regexp.MustCompile(`^python(\d(\.\d+)?)?$`)
	words := []string{"", "=", "=x", "A=", "A=1", "_=", "a_b9=x=y", "9A=1", "A-B=1", "AB", "A B=1", "é=1", "CUDA_VISIBLE_DEVICES=0",
		"python", "python3", "python3.12", "python3.", "python3.x", "python31", "python3.12.1", "pythonw", "ipython", "python2.7", "Python3", "python.3"}
	for _, w := range words {
		k, _, eq := strings.Cut(w, "=")
		if got, want := eq && validName(k), assign.MatchString(w); got != want {
			t.Errorf("validName(%q) = %v, want %v", k, got, want)
		}
		if got, want := isPython(w), python.MatchString(w); got != want {
			t.Errorf("isPython(%q) = %v, want %v", w, got, want)
		}
	}
}

func TestWrappersIsACopy(t *testing.T) {
	a := Wrappers()
	a[0] = "changed"
	if b := Wrappers(); reflect.DeepEqual(a, b) {
		t.Error("Wrappers returned the table itself")
	}
}
