package cmdline

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func read(s string) *Reader {
	r := NewReader(Options{Deep: true})
	r.Script(s, nil)
	return r
}

// TestLimits: each limit stops the reading with an error just past its
// edge, and not at it.
func TestLimits(t *testing.T) {
	for _, tc := range []struct {
		name      string
		at, past  string
		errSubstr string
	}{
		{"depth", strings.Repeat("eval ", maxDepth) + "true", strings.Repeat("eval ", maxDepth+1) + "true", "nested more than"},
		{"commands", strings.Repeat("true; ", maxCommands), strings.Repeat("true; ", maxCommands+1), "commands"},
		{"length", "true #" + strings.Repeat("x", maxScript-len("true #")), "true #" + strings.Repeat("x", maxScript-len("true #")+1), "longer than"},
		{"brackets", strings.Repeat("(", maxNesting) + "true" + strings.Repeat(")", maxNesting),
			strings.Repeat("(", maxNesting+1) + "true" + strings.Repeat(")", maxNesting+1), "brackets nested"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := read(tc.at).Err(); err != nil {
				t.Errorf("at the limit: %v", err)
			}
			err := read(tc.past).Err()
			if err == nil || !strings.Contains(err.Error(), tc.errSubstr) {
				t.Errorf("past the limit: err = %v, want one saying %q", err, tc.errSubstr)
			}
		})
	}
	loops := "for a in 1 2 3 4 5 6 7 8 9; do for b in 1 2 3 4 5 6 7 8; do for c in 1 2 3 4 5 6 7 8; do for d in 1 2 3 4 5 6 7 8; do true; done; done; done; done"
	if err := read(loops).Err(); err == nil {
		t.Errorf("4608 loop iterations: no error")
	}
}

func TestUnparsable(t *testing.T) {
	r := read("echo 'x")
	if err := r.Err(); !errors.Is(err, ErrUnparsable) {
		t.Errorf("err = %v, want one wrapping ErrUnparsable", err)
	}
}

// TestScriptCommands: the simple commands of a shell string, wrappers and
// env prefixes unwrapped, nested shell strings followed, assignment
// prefixes and exports in Env, words only known at run time as written.
func TestScriptCommands(t *testing.T) {
	type command struct {
		argv []string
		env  map[string]string
	}
	cases := []struct {
		in   string
		want []command
	}{
		{"CUDA_VISIBLE_DEVICES=0 python serve.py --model x", []command{{[]string{"python", "serve.py", "--model", "x"}, map[string]string{"CUDA_VISIBLE_DEVICES": "0"}}}},
		{"sudo -u ml env HF_HOME=/d nohup vllm serve m --gpu-memory-utilization 0.9 &", []command{{[]string{"vllm", "serve", "m", "--gpu-memory-utilization", "0.9"}, map[string]string{"HF_HOME": "/d"}}}},
		{"export A=1; bash -lc 'B=2 timeout 5 python t.py'", []command{{[]string{"python", "t.py"}, map[string]string{"A": "1", "B": "2"}}}},
		{"ls | grep x && echo $HOME", []command{{[]string{"ls"}, map[string]string{}}, {[]string{"grep", "x"}, map[string]string{}}, {[]string{"echo", "$HOME"}, map[string]string{}}}},
		{"env", []command{{[]string{"env"}, map[string]string{}}}},
		{"bash <<'EOF'\necho 'x' a\\\\b $HOME\nEOF", []command{{[]string{"echo", "x", "a\\b", "$HOME"}, map[string]string{}}}},
		{"X=1; bash <<EOF\necho $X\nEOF", []command{{[]string{"echo", "1"}, map[string]string{}}}},
		// ANSI-C strings decode as bash decodes them; a NUL ends the string.
		{`$'reboot\x00x'`, []command{{[]string{"reboot"}, map[string]string{}}}},
		{`$'a\tb'`, []command{{[]string{"a\tb"}, map[string]string{}}}},
		{`$'it\'s'`, []command{{[]string{"it's"}, map[string]string{}}}},
		{`$'\q'`, []command{{[]string{`\q`}, map[string]string{}}}},
		{`$'\x'`, []command{{[]string{`\x`}, map[string]string{}}}},
	}
	for _, tc := range cases {
		r := read(tc.in)
		if err := r.Err(); err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		var got []command
		for _, c := range r.Commands() {
			if c.Pseudo {
				continue
			}
			argv := make([]string, len(c.Argv))
			for i, w := range c.Argv {
				argv[i] = w.Value
			}
			got = append(got, command{argv, c.Env})
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q:\n got %+v\nwant %+v", tc.in, got, tc.want)
		}
	}
}
