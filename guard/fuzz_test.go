package guard

import (
	"strings"
	"testing"
)

// checkMessage holds every verdict to the message contract.
func checkMessage(t *testing.T, what string, v Verdict) {
	t.Helper()
	if strings.ContainsAny(v.Message, "\n\r") {
		t.Fatalf("%s: message spans lines: %q", what, v.Message)
	}
	if v.Allow {
		if (v.OptIn == "") != (v.Message == "") || (v.OptIn == "") != (v.Rule == "") {
			t.Fatalf("%s: allowed verdict is inconsistent: %+v", what, v)
		}
		return
	}
	if v.Rule == "" || !strings.HasPrefix(v.Message, "paddock refused ") || !strings.Contains(v.Message, "Way out: ") || v.OptIn != "" {
		t.Fatalf("%s: refusal without rule, what or way out: %+v", what, v)
	}
}

// FuzzShell: the shell-string reader. It must not panic, must answer the
// same twice, must refuse exactly what it cannot parse, and may only refuse
// less with a supervisor or with opt-ins honoured.
func FuzzShell(f *testing.F) {
	for _, s := range []string{
		"reboot", "sudo systemctl poweroff", "RLM_ALLOW_POWER_CONTROL=1 reboot", "systemctl stop sway",
		"bash -lc 'sudo -E env PADDOCK_ALLOW_POWER_CONTROL=1 systemctl --now disable gdm'", "pkill -f cargo; kill 12345",
		"for u in a gdm; do systemctl restart $u; done", "echo reboot | sh", "X=reboot; $X", "echo {1..9}",
	} {
		f.Add(s, "PADDOCK_ALLOW_POWER_CONTROL=1")
	}
	f.Fuzz(func(t *testing.T, s, envs string) {
		env := strings.Split(envs, "\x00")
		base := Policy{ServicesToSurvive: []string{"gdm", "user@*"}, AllowOptIn: false, DefaultTarget: "graphical.target"}
		v, err := shellVerdict(s, env, base)
		if (err != nil) != (v.Rule == RuleUnparsable) || (err != nil && v.Allow) {
			t.Fatalf("error %v with verdict %+v", err, v)
		}
		checkMessage(t, "ExplainShell", v)
		v2, err2 := shellVerdict(s, env, base)
		if v2 != v || (err2 == nil) != (err == nil) {
			t.Fatalf("two answers: %+v / %+v", v, v2)
		}
		for _, mod := range []func(*Policy){
			func(p *Policy) { p.Supervised = true },
			func(p *Policy) { p.AllowOptIn = true },
		} {
			p := base
			mod(&p)
			w, _ := shellVerdict(s, env, p)
			checkMessage(t, "ExplainShell", w)
			if v.Allow && !w.Allow {
				t.Fatalf("a laxer policy %+v refused what %+v allowed: %+v", p, base, w)
			}
		}
		r := newReader(true)
		r.Script(s, nil)
		if (r.Err() == nil) != (err == nil) {
			t.Fatalf("reading without the caller's environment: error %v, with it %v", r.Err(), err)
		}
		for _, c := range r.Commands() {
			if pc := public(c, nil); !c.Pseudo && (len(pc.Argv) == 0 || pc.Path != pc.Argv[0]) {
				t.Fatalf("command without argv: %+v", pc)
			}
		}
	})
}

// FuzzCommand: the argv/env decision of one exec. It must not panic, the
// opt-in and a supervisor may only turn refusals into allowances, and the
// check of `paddock check -- ARGV` (which also follows nested shell
// strings) refuses at least what the exec-level check refuses.
func FuzzCommand(f *testing.F) {
	add := func(path string, argv []string, env []string) {
		f.Add(path, strings.Join(argv, "\x00"), strings.Join(env, "\x00"))
	}
	add("/sbin/reboot", []string{"reboot"}, nil)
	add("/bin/busybox", []string{"reboot", "-f"}, nil)
	add("/usr/bin/systemctl", []string{"systemctl", "--user", "restart", "pipewire.service", "wireplumber"}, []string{"HOME=/root"})
	add("/usr/bin/sudo", []string{"sudo", "-E", "systemctl", "isolate", "multi-user"}, []string{"PADDOCK_ALLOW_POWER_CONTROL=1"})
	add("/usr/bin/env", []string{"env", "-i", "A=1", "busybox", "poweroff"}, []string{"RLM_ALLOW_POWER_CONTROL=1"})
	add("/usr/bin/pkill", []string{"pkill", "-9", "-f", "node"}, nil)
	add("/usr/bin/busctl", []string{"busctl", "call", "org.freedesktop.login1", "/org/freedesktop/login1", "org.freedesktop.login1.Manager", "Reboot", "b", "false"}, nil)
	add("/bin/bash", []string{"bash", "-lc", "systemctl stop gdm"}, nil)
	f.Fuzz(func(t *testing.T, path, argvs, envs string) {
		argv := strings.Split(argvs, "\x00")
		var env []string
		if envs != "" {
			env = strings.Split(envs, "\x00")
		}
		base := Policy{AllowOptIn: true, DefaultTarget: "multi-user.target"}
		c := Command{Path: path, Argv: argv, Env: env}
		v := CheckCommand(c, base)
		checkMessage(t, "CheckCommand", v)
		if w := CheckCommand(c, base); w != v {
			t.Fatalf("two answers: %+v / %+v", v, w)
		}
		withOpt := c
		withOpt.Env = append([]string{"PADDOCK_ALLOW_POWER_CONTROL=1"}, env...)
		if w := CheckCommand(withOpt, base); v.Allow && !w.Allow {
			t.Fatalf("the opt-in made it refuse: %+v", w)
		}
		sup := base
		sup.Supervised = true
		if w := CheckCommand(c, sup); v.Allow && !w.Allow {
			t.Fatalf("a supervisor made it refuse: %+v", w)
		}
		shallow := CheckCommand(Command{Argv: argv, Env: env}, base)
		_, deep, _ := CheckArgv(argv, env, base)
		checkMessage(t, "CheckArgv", deep)
		if !shallow.Allow && deep.Allow {
			t.Fatalf("exec-level refused %+v but paddock check -- allowed it", shallow)
		}
	})
}
