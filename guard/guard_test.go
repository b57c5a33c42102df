package guard

import (
	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/cmdline"

	"reflect"
	"slices"
	"strings"
	"testing"
)

// The seed's set_host_profile for section 2's service test and section 5.
var (
	seedDesktop  = Policy{ServicesToSurvive: []string{"display-manager", "sway", "hyprland", "pipewire"}, AllowOptIn: true}
	seedRestart  = Policy{ServicesToSurvive: []string{"display-manager", "gdm", "logind"}, AllowOptIn: true}
	seedUnrelate = Policy{ServicesToSurvive: []string{"display-manager", "gdm"}, AllowOptIn: true}
	defaults     = Policy{AllowOptIn: true}
)

func mustContain(t *testing.T, msg string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(msg, s) {
			t.Errorf("message lacks %q:\n%s", s, msg)
		}
	}
}

// shellVerdict is ExplainShell's verdict on the whole string.
func shellVerdict(s string, env []string, p Policy) (Verdict, error) {
	_, v, err := ExplainShell(s, env, p)
	return v, err
}

func checkShell(t *testing.T, s string, env []string, p Policy) Verdict {
	t.Helper()
	v, err := shellVerdict(s, env, p)
	if err != nil {
		t.Fatalf("ExplainShell(%q): %v", s, err)
	}
	return v
}

// seed: test_power_control_commands_refused_without_explicit_intent
func TestSeedPowerControlRefusedWithoutIntent(t *testing.T) {
	for _, cmd := range []string{
		"reboot", "poweroff", "shutdown -h now", "halt", "init 0", "init 6",
		"systemctl reboot", "systemctl poweroff", "systemctl halt", "systemctl suspend", "systemctl hibernate",
		"sudo reboot", "sudo systemctl poweroff",
	} {
		t.Run(cmd, func(t *testing.T) {
			v := checkShell(t, cmd, nil, defaults)
			if v.Allow || v.Rule != RulePowerControl {
				t.Fatalf("got %+v, want a power_control refusal", v)
			}
			mustContain(t, v.Message, "power-control commands", "require explicit user intent", "PADDOCK_ALLOW_POWER_CONTROL=1", "Way out:")
		})
	}
}

// seed: test_power_control_permitted_with_explicit_intent
func TestSeedPowerControlPermittedWithIntent(t *testing.T) {
	for _, tc := range []struct{ cmd, optIn string }{
		{"RLM_ALLOW_POWER_CONTROL=1 reboot", "RLM_ALLOW_POWER_CONTROL"},
		{"RLM_ALLOW_POWER_CONTROL=1 systemctl poweroff", "RLM_ALLOW_POWER_CONTROL"},
		{"PRIME_ALLOW_POWER_CONTROL=1 shutdown -h now", "PRIME_ALLOW_POWER_CONTROL"},
		{"PADDOCK_ALLOW_POWER_CONTROL=1 reboot", "PADDOCK_ALLOW_POWER_CONTROL"},
		{"PADDOCK_ALLOW_POWER_CONTROL=1 systemctl poweroff", "PADDOCK_ALLOW_POWER_CONTROL"},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			v := checkShell(t, tc.cmd, nil, defaults)
			if !v.Allow || v.OptIn != tc.optIn || v.Rule != RulePowerControl {
				t.Fatalf("got %+v, want allowed through %s", v, tc.optIn)
			}
			mustContain(t, v.Message, tc.optIn+"=1", "explicit user intent", "opt_in_used")
		})
	}
}

// seed: test_protected_services_cannot_be_disabled_without_explicit_intent
func TestSeedProtectedServicesRefused(t *testing.T) {
	for _, cmd := range []string{
		"systemctl disable display-manager",
		"systemctl stop sway",
		"systemctl mask pipewire.service",
	} {
		t.Run(cmd, func(t *testing.T) {
			v := checkShell(t, cmd, nil, seedDesktop)
			if v.Allow || v.Rule != RuleProtectedService {
				t.Fatalf("got %+v, want a protected_service refusal", v)
			}
			mustContain(t, v.Message, "protected desktop service", "PADDOCK_ALLOW_POWER_CONTROL=1", "services_to_survive", "Way out:")
			unit := strings.Fields(cmd)[2]
			mustContain(t, v.Message, unit)
		})
	}
}

// seed: test_systemctl_restart_verbs_refused_on_desktop_services
func TestSeedSystemctlRestartVerbsRefused(t *testing.T) {
	for _, verb := range []string{"restart", "try-restart", "reload-or-restart", "isolate"} {
		for _, target := range []string{"display-manager", "gdm.service", "logind"} {
			cmd := "systemctl " + verb + " " + target
			t.Run(cmd, func(t *testing.T) {
				v := checkShell(t, cmd, nil, seedRestart)
				if v.Allow {
					t.Fatalf("allowed: %+v", v)
				}
				want := RuleProtectedService
				if verb == "isolate" {
					want = RuleIsolate
				}
				if v.Rule != want {
					t.Errorf("rule %q, want %q", v.Rule, want)
				}
				mustContain(t, v.Message, "protected desktop service", "PADDOCK_ALLOW_POWER_CONTROL=1", "Way out:")
			})
		}
	}
}

// seed: test_systemctl_restart_permitted_for_unrelated_services
func TestSeedSystemctlRestartUnrelatedPermitted(t *testing.T) {
	for _, cmd := range []string{"systemctl restart nginx", "systemctl try-restart my-worker.service"} {
		t.Run(cmd, func(t *testing.T) {
			if v := checkShell(t, cmd, nil, seedUnrelate); !v.Allow || v.Rule != "" || v.Message != "" {
				t.Fatalf("got %+v, want plainly allowed", v)
			}
		})
	}
}

// seed: test_bash_refusal_names_scoped_process_control (and the kill half of
// test_pid_1_and_unrelated_process_refused's _check_command_guards("kill 12345"))
func TestSeedBroadKillNamesScopedProcessControl(t *testing.T) {
	for _, cmd := range []string{"pkill -f cargo", "killall node", "kill 12345"} {
		t.Run(cmd, func(t *testing.T) {
			v := checkShell(t, cmd, nil, defaults)
			if v.Allow || v.Rule != RuleBroadKill {
				t.Fatalf("got %+v, want a broad_kill refusal", v)
			}
			mustContain(t, v.Message, "paddock kill PID", "paddock adopt PID --reason", "h.Kill()", "paddock run", "Way out:")
			sup := defaults
			sup.Supervised = true
			if v := checkShell(t, cmd, nil, sup); !v.Allow {
				t.Errorf("supervised: refused: %+v (the kernel decides each target under paddock run)", v)
			}
		})
	}
}

type shellCase struct {
	cmd    string
	env    []string
	pol    *Policy
	allow  bool
	rule   audit.Rule
	optIn  string
	reason string // what the case pins
}

func runShellCases(t *testing.T, cases []shellCase) {
	t.Helper()
	for _, tc := range cases {
		name := tc.cmd
		if tc.reason != "" {
			name = tc.reason + ": " + tc.cmd
		}
		t.Run(name, func(t *testing.T) {
			p := defaults
			if tc.pol != nil {
				p = *tc.pol
			}
			v := checkShell(t, tc.cmd, tc.env, p)
			if v.Allow != tc.allow || v.Rule != tc.rule || v.OptIn != tc.optIn {
				t.Fatalf("got allow=%v rule=%q optIn=%q, want allow=%v rule=%q optIn=%q\n%s",
					v.Allow, v.Rule, v.OptIn, tc.allow, tc.rule, tc.optIn, v.Message)
			}
			if !v.Allow {
				if !strings.HasPrefix(v.Message, "paddock refused ") || !strings.Contains(v.Message, "Way out:") {
					t.Errorf("refusal message lacks what/way out:\n%s", v.Message)
				}
			}
		})
	}
}

func pol(f func(*Policy)) *Policy {
	p := defaults
	f(&p)
	return &p
}

var (
	power   = RulePowerControl
	service = RuleProtectedService
	iso     = RuleIsolate
	sess    = RuleSessionControl
	kill    = RuleBroadKill
	optIn   = "PADDOCK_ALLOW_POWER_CONTROL"
)

func TestCheckShellWrappers(t *testing.T) {
	runShellCases(t, []shellCase{
		{cmd: "sudo -u root reboot", rule: power},
		{cmd: "sudo -E reboot", rule: power},
		{cmd: "sudo --user=root -- systemctl poweroff", rule: power},
		{cmd: "doas reboot", rule: power},
		{cmd: "pkexec reboot", rule: power},
		{cmd: "run0 systemctl reboot", rule: power},
		{cmd: "env reboot", rule: power},
		{cmd: "env -u HOME -C / reboot", rule: power},
		{cmd: "env -S 'systemctl poweroff'", rule: power},
		{cmd: "nohup reboot &", rule: power},
		{cmd: "timeout 5 reboot", rule: power},
		{cmd: "timeout -s KILL --kill-after=3 10s systemctl reboot", rule: power},
		{cmd: "nice -n 10 reboot", rule: power},
		{cmd: "nice -10 poweroff", rule: power},
		{cmd: "ionice -c3 reboot", rule: power},
		{cmd: "ionice -c3 -p 1234", rule: kill, reason: "ionice -p runs nothing, but aims at pid 1234 (no supervisor here)"},
		{cmd: "prlimit --pid 1234 --nofile=1:1", rule: kill, reason: "a limit set on pid 1234 (no supervisor here)"},
		{cmd: "prlimit -p1234 -n1", rule: kill, reason: "short options, value attached (getopt's optional argument)"},
		{cmd: "prlimit --pid=1234 -t10:20", rule: kill},
		{cmd: "prlimit -p 1234 -vn1024", rule: kill, reason: "-v takes n1024 as its value"},
		{cmd: "prlimit -n1 -p1234", rule: kill},
		{cmd: "prlimit -p 1234 -n", allow: true, reason: "-n without a value reads the limit"},
		{cmd: "prlimit -p1234", allow: true, reason: "reads every limit"},
		{cmd: "prlimit -n1 true", allow: true, reason: "its own command, not another pid"},
		{cmd: "setsid -f reboot", rule: power},
		{cmd: "stdbuf -oL reboot", rule: power},
		{cmd: "exec reboot", rule: power},
		{cmd: "exec -a foo reboot", rule: power},
		{cmd: "uv run --with x reboot", rule: power, reason: "package runners run their command"},
		{cmd: "uvx --from x systemctl poweroff", rule: power},
		{cmd: "pipx run --spec x systemctl reboot", rule: power},
		{cmd: "poetry run sudo reboot", rule: power},
		{cmd: "conda run -n gpu reboot", rule: power},
		{cmd: "uv pip install reboot", allow: true, reason: "uv without run runs nothing inside"},
		{cmd: "command reboot", rule: power},
		{cmd: "command -v reboot", allow: true, reason: "command -v only looks it up"},
		{cmd: "builtin kill 1234", rule: kill},
		{cmd: "time reboot", rule: power},
		{cmd: "/usr/bin/time -f %e reboot", rule: power},
		{cmd: "xargs reboot < /dev/null", rule: power},
		{cmd: "chroot /mnt reboot", rule: power},
		{cmd: "unshare -m reboot", rule: power},
		{cmd: "nsenter -t 1 -m reboot", rule: power},
		{cmd: "flock /tmp/l reboot", rule: power},
		{cmd: "flock /tmp/l -c 'systemctl poweroff'", rule: power},
		{cmd: "watch -n 5 systemctl suspend", rule: power},
		{cmd: "su -c 'reboot'", rule: power},
		{cmd: "su - root -c 'systemctl poweroff'", rule: power},
		{cmd: "runuser -u nobody -- reboot", rule: power},
		{cmd: "strace -f -o /tmp/t reboot", rule: power},
		{cmd: "systemd-run --on-active=1h reboot", rule: power},
		{cmd: "systemd-inhibit --why=x reboot", rule: power},
		{cmd: "chrt -f 10 reboot", rule: power},
		{cmd: "taskset -c 0 reboot", rule: power},
		{cmd: "/lib64/ld-linux-x86-64.so.2 /sbin/reboot", rule: power},
		{cmd: "sudo sudo env nohup nice timeout 1 reboot", rule: power, reason: "wrappers stack"},
		{cmd: "sudo -l reboot", allow: true, reason: "sudo -l only lists"},
		{cmd: "sudo -v", allow: true},
		{cmd: "find / -name x -exec reboot \\;", rule: power},
		{cmd: "find /etc -name '*.conf' -exec cat {} +", allow: true},
	})
}

func TestCheckShellNestingChainsPaths(t *testing.T) {
	runShellCases(t, []shellCase{
		{cmd: "sh -c 'reboot'", rule: power},
		{cmd: "bash -lc 'sudo systemctl poweroff'", rule: power},
		{cmd: "bash -c -l \"echo hi; reboot\"", rule: power},
		{cmd: "bash -o pipefail -ec 'true && poweroff'", rule: power},
		{cmd: "sh -c \"bash -c 'sh -c reboot'\"", rule: power, reason: "three levels"},
		{cmd: "zsh -c 'systemctl suspend'", rule: power},
		{cmd: "busybox sh -c 'busybox reboot'", rule: power},
		{cmd: "eval 'systemctl poweroff'", rule: power},
		{cmd: "bash script.sh", allow: true, reason: "a script file is not read"},
		{cmd: "echo ok; reboot", rule: power},
		{cmd: "make && sudo reboot", rule: power},
		{cmd: "false || poweroff", rule: power},
		{cmd: "ls | xargs echo; halt", rule: power},
		{cmd: "(cd /; reboot)", rule: power},
		{cmd: "{ sync; reboot; }", rule: power},
		{cmd: "if true; then reboot; fi", rule: power},
		{cmd: "while true; do sleep 1; done; poweroff", rule: power},
		{cmd: "case x in x) reboot;; esac", rule: power},
		{cmd: "f() { reboot; }; f", rule: power},
		{cmd: "echo $(reboot)", rule: power, reason: "command substitution runs"},
		{cmd: "cat <(systemctl poweroff)", rule: power, reason: "process substitution runs"},
		{cmd: "echo `halt`", rule: power},
		{cmd: "x=$(poweroff)", rule: power},
		{cmd: "/sbin/reboot", rule: power},
		{cmd: "/usr/sbin/shutdown -r +5", rule: power},
		{cmd: "./reboot", rule: power},
		{cmd: "../../bin/systemctl reboot", rule: power},
		{cmd: "\\reboot", rule: power, reason: "a backslash bypasses aliases, not paddock"},
		{cmd: "'reboot'", rule: power},
		{cmd: "re\"boot\"", rule: power},
		{cmd: "$'\\x72eboot'", rule: power},
		{cmd: "/sbin/reb??t", rule: power, reason: "a pattern that can only be reboot"},
		{cmd: "$(which reboot)", rule: power},
		{cmd: "\"$(command -v systemctl)\" poweroff", rule: power},
		{cmd: "$HOME/bin/reboot", rule: power, reason: "a known last element"},
		{cmd: "X=reboot; $X", rule: power, reason: "a variable set in the string"},
		{cmd: "CMD='systemctl stop gdm'; $CMD", rule: service, reason: "word splitting"},
		{cmd: "for u in nginx gdm; do systemctl restart $u; done", rule: service, reason: "loops over literal words"},
		{cmd: "systemctl restart {nginx,sshd}", rule: service, reason: "brace expansion"},
		{cmd: "echo reboot | sh", rule: power, reason: "a script piped into a shell"},
		{cmd: "bash <<'EOF'\nsystemctl poweroff\nEOF", rule: power, reason: "a here-document fed to a shell"},
		{cmd: "sh <<< 'reboot'", rule: power},
		{cmd: "echo b > /proc/sysrq-trigger", rule: power},
		{cmd: "echo mem | sudo tee /sys/power/state", rule: power},
		{cmd: "dd if=/dev/zero of=/proc/sysrq-trigger bs=1 count=1", rule: power},
		{cmd: "cat /sys/power/state", allow: true, reason: "reading is harmless"},
		{cmd: "$CMD reboot", allow: true, reason: "unknown program"},
		{cmd: "echo reboot", allow: true},
		{cmd: "grep -r poweroff /etc", allow: true},
		{cmd: "man shutdown", allow: true},
		{cmd: "git commit -m 'reboot the thing'", allow: true},
		{cmd: "# reboot", allow: true},
		{cmd: "", allow: true},
	})
}

func TestCheckShellPowerForms(t *testing.T) {
	runShellCases(t, []shellCase{
		{cmd: "shutdown -c", rule: power, reason: "shutdown with any arguments"},
		{cmd: "reboot --help", rule: power},
		{cmd: "telinit 0", rule: power},
		{cmd: "init 1", rule: power},
		{cmd: "telinit 3", rule: iso},
		{cmd: "telinit 5", allow: true},
		{cmd: "init q", allow: true},
		{cmd: "busybox reboot", rule: power},
		{cmd: "busybox poweroff -f", rule: power},
		{cmd: "busybox ls", allow: true},
		{cmd: "kexec -e", rule: power},
		{cmd: "systemctl kexec", rule: power},
		{cmd: "systemctl soft-reboot", rule: power},
		{cmd: "systemctl hybrid-sleep", rule: power},
		{cmd: "systemctl suspend-then-hibernate", rule: power},
		{cmd: "systemctl emergency", rule: power},
		{cmd: "systemctl rescue", rule: power},
		{cmd: "systemctl --force --force reboot", rule: power},
		{cmd: "systemctl -i poweroff", rule: power},
		{cmd: "systemctl start reboot.target", rule: power},
		{cmd: "systemctl isolate poweroff.target", rule: power},
		{cmd: "systemctl status", allow: true},
		{cmd: "systemctl list-units --type=service", allow: true},
		{cmd: "systemctl is-active gdm", allow: true},
		{cmd: "systemctl", allow: true},
		{cmd: "loginctl poweroff", rule: power},
		{cmd: "loginctl suspend", rule: power},
		{cmd: "loginctl reboot --ignore-inhibitors", rule: power},
		{cmd: "loginctl terminate-user alice", rule: sess},
		{cmd: "loginctl list-sessions", allow: true},
		{cmd: "busctl call org.freedesktop.login1 /org/freedesktop/login1 org.freedesktop.login1.Manager PowerOff b false", rule: power},
		{cmd: "busctl --system call org.freedesktop.login1 /org/freedesktop/login1 org.freedesktop.login1.Manager Suspend b true", rule: power},
		{cmd: "busctl call org.freedesktop.login1 /org/freedesktop/login1 org.freedesktop.login1.Manager CanPowerOff", allow: true},
		{cmd: "dbus-send --system --print-reply --dest=org.freedesktop.login1 /org/freedesktop/login1 org.freedesktop.login1.Manager.Reboot boolean:true", rule: power},
		{cmd: "dbus-send --system --dest=org.freedesktop.login1 /org/freedesktop/login1 org.freedesktop.login1.Manager.Hibernate boolean:true", rule: power},
		{cmd: "gdbus call --system --dest org.freedesktop.login1 --object-path /org/freedesktop/login1 --method org.freedesktop.login1.Manager.PowerOff true", rule: power},
		{cmd: "gdbus call -y -d org.freedesktop.login1 -o /org/freedesktop/login1 -m org.freedesktop.login1.Manager.Suspend true", rule: power},
		{cmd: "busctl call org.freedesktop.systemd1 /org/freedesktop/systemd1 org.freedesktop.systemd1.Manager StopUnit ss gdm.service replace", rule: service},
		{cmd: "busctl call org.freedesktop.systemd1 /org/freedesktop/systemd1 org.freedesktop.systemd1.Manager StartUnit ss reboot.target replace", rule: power},
		{cmd: "busctl call org.freedesktop.systemd1 /org/freedesktop/systemd1 org.freedesktop.systemd1.Manager RestartUnit ss nginx.service replace", allow: true},
		{cmd: "gdbus call --session --dest org.gnome.SessionManager --object-path /org/gnome/SessionManager --method org.gnome.SessionManager.Logout 1", rule: sess},
		{cmd: "qdbus org.kde.Shutdown /Shutdown logoutAndReboot", rule: power},
		{cmd: "busctl tree org.freedesktop.login1", allow: true},
		{cmd: "rtcwake -m mem -s 60", rule: power},
		{cmd: "rtcwake -m show", allow: true},
		{cmd: "rtcwake -m no -s 60", allow: true},
		{cmd: "pm-suspend", rule: power},
		{cmd: "gnome-session-quit --power-off --no-prompt", rule: power},
		{cmd: "gnome-session-quit --no-prompt", rule: sess},
		{cmd: "swaymsg exit", rule: sess},
		{cmd: "swaymsg reload", allow: true},
		{cmd: "hyprctl dispatch exit", rule: sess},
	})
}

func TestCheckShellServices(t *testing.T) {
	server := pol(func(p *Policy) { p.DefaultTarget = "multi-user.target" })
	desktop := pol(func(p *Policy) { p.DefaultTarget = "graphical.target" })
	custom := pol(func(p *Policy) { p.ServicesToSurvive = []string{"my-app", "user@*"} })
	runShellCases(t, []shellCase{
		{cmd: "systemctl stop gdm", rule: service},
		{cmd: "systemctl stop gdm3.service", rule: service},
		{cmd: "systemctl restart display-manager.service", rule: service},
		{cmd: "systemctl disable --now sddm", rule: service},
		{cmd: "systemctl --now mask lightdm", rule: service},
		{cmd: "systemctl kill -s KILL gnome-shell", rule: service},
		{cmd: "systemctl freeze plasmashell", rule: service},
		{cmd: "systemctl try-reload-or-restart NetworkManager", rule: service},
		{cmd: "systemctl reload-or-restart polkit", rule: service},
		{cmd: "systemctl condrestart sshd", rule: service},
		{cmd: "systemctl force-reload dbus", rule: service},
		{cmd: "systemctl stop ssh", rule: service, reason: "sshd's Debian name"},
		{cmd: "systemctl stop dbus-broker", rule: service, reason: "dbus's implementation"},
		{cmd: "systemctl --user restart pipewire pipewire-pulse wireplumber", rule: service, reason: "--user units, several in one call"},
		{cmd: "systemctl --user stop wireplumber.service", rule: service},
		{cmd: "systemctl stop nginx gdm", rule: service, reason: "one protected among several"},
		{cmd: "systemctl stop 'gdm*'", rule: service, reason: "systemctl matches patterns"},
		{cmd: "systemctl stop '*.service'", rule: service},
		{cmd: "systemctl stop -- sshd", rule: service},
		{cmd: "systemctl stop systemd-logind.service", rule: service},
		{cmd: "systemctl start gdm", allow: true, reason: "starting is harmless"},
		{cmd: "systemctl reload sshd", allow: true},
		{cmd: "systemctl enable --now gdm", allow: true},
		{cmd: "systemctl status gdm", allow: true},
		{cmd: "systemctl restart nginx", allow: true},
		{cmd: "systemctl stop $UNIT", allow: true, reason: "unknown unit"},
		{cmd: "service gdm3 stop", rule: service},
		{cmd: "service nginx restart", allow: true},
		{cmd: "/etc/init.d/gdm3 restart", rule: service},
		{cmd: "invoke-rc.d lightdm stop", rule: service},
		{cmd: "rc-service sshd stop", rule: service},
		{cmd: "systemctl isolate multi-user.target", rule: iso},
		{cmd: "systemctl isolate multi-user", rule: iso, reason: "isolate adds .target"},
		{cmd: "systemctl isolate rescue.target", rule: power},
		{cmd: "systemctl isolate emergency", rule: power},
		{cmd: "systemctl isolate graphical.target", allow: true},
		{cmd: "systemctl isolate default.target", allow: true},
		{cmd: "systemctl isolate multi-user.target", pol: server, allow: true, reason: "the default target of a server"},
		{cmd: "systemctl isolate multi-user.target", pol: desktop, rule: iso},
		{cmd: "systemctl isolate runlevel3.target", rule: iso},
		{cmd: "systemctl isolate $T", rule: iso, reason: "an unknown target is not known to be safe"},
		{cmd: "systemctl stop my-app", pol: custom, rule: service},
		{cmd: "systemctl stop user@1000.service", pol: custom, rule: service, reason: "globs in services_to_survive"},
		{cmd: "systemctl stop gdm", pol: custom, allow: true, reason: "the profile's list replaces the defaults"},
	})
}

func TestCheckShellOptIns(t *testing.T) {
	noOpt := pol(func(p *Policy) { p.AllowOptIn = false })
	runShellCases(t, []shellCase{
		{cmd: "reboot", env: []string{"PADDOCK_ALLOW_POWER_CONTROL=1"}, allow: true, rule: power, optIn: optIn, reason: "opt-in in the environment"},
		{cmd: "reboot", env: []string{"RLM_ALLOW_POWER_CONTROL=1"}, allow: true, rule: power, optIn: "RLM_ALLOW_POWER_CONTROL"},
		{cmd: "reboot", env: []string{"PADDOCK_ALLOW_POWER_CONTROL=0"}, rule: power, reason: "0 is not intent"},
		{cmd: "reboot", env: []string{"PADDOCK_ALLOW_POWER_CONTROL="}, rule: power},
		{cmd: "PADDOCK_ALLOW_POWER_CONTROL=true reboot", allow: true, rule: power, optIn: optIn},
		{cmd: "PADDOCK_ALLOW_POWER_CONTROL=1 systemctl stop gdm", allow: true, rule: service, optIn: optIn},
		{cmd: "PADDOCK_ALLOW_POWER_CONTROL=1 systemctl isolate multi-user.target", allow: true, rule: iso, optIn: optIn},
		{cmd: "export PADDOCK_ALLOW_POWER_CONTROL=1; reboot", allow: true, rule: power, optIn: optIn},
		{cmd: "export PADDOCK_ALLOW_POWER_CONTROL=1 && sudo -E reboot", allow: true, rule: power, optIn: optIn},
		{cmd: "PADDOCK_ALLOW_POWER_CONTROL=1; reboot", rule: power, reason: "a shell variable is not in the environment"},
		{cmd: "PADDOCK_ALLOW_POWER_CONTROL=1 true; reboot", rule: power, reason: "a prefix applies to its command only"},
		{cmd: "PADDOCK_ALLOW_POWER_CONTROL=1 sudo reboot", rule: power, reason: "sudo resets the environment"},
		{cmd: "sudo PADDOCK_ALLOW_POWER_CONTROL=1 reboot", allow: true, rule: power, optIn: optIn},
		{cmd: "PADDOCK_ALLOW_POWER_CONTROL=1 sudo --preserve-env=PADDOCK_ALLOW_POWER_CONTROL reboot", allow: true, rule: power, optIn: optIn},
		{cmd: "env PADDOCK_ALLOW_POWER_CONTROL=1 reboot", allow: true, rule: power, optIn: optIn},
		{cmd: "PADDOCK_ALLOW_POWER_CONTROL=1 env -i reboot", rule: power, reason: "env -i clears it"},
		{cmd: "PADDOCK_ALLOW_POWER_CONTROL=1 env -u PADDOCK_ALLOW_POWER_CONTROL reboot", rule: power},
		{cmd: "reboot", env: []string{"PADDOCK_ALLOW_POWER_CONTROL=1"}, pol: noOpt, rule: power, reason: "allow_opt_in = false"},
		{cmd: "PADDOCK_ALLOW_POWER_CONTROL=1 systemctl stop gdm", pol: noOpt, rule: service},
		{cmd: "PADDOCK_ALLOW_POWER_CONTROL=1 bash -c 'reboot'", allow: true, rule: power, optIn: optIn, reason: "a nested shell inherits the environment"},
		{cmd: "PADDOCK_ALLOW_POWER_CONTROL=1 pkill -f x", rule: kill, reason: "no opt-in for broad kills"},
		{cmd: "ls; PADDOCK_ALLOW_POWER_CONTROL=1 reboot; systemctl stop gdm", rule: service, reason: "one opt-in does not cover another command"},
	})
}

func TestCheckShellKill(t *testing.T) {
	sup := pol(func(p *Policy) { p.Supervised = true })
	runShellCases(t, []shellCase{
		{cmd: "kill -9 12345", rule: kill},
		{cmd: "kill -s TERM 12345", rule: kill},
		{cmd: "kill -- -1", rule: kill},
		{cmd: "kill $(pgrep node)", rule: kill},
		{cmd: "pgrep node | xargs kill", rule: kill},
		{cmd: "killall5 -9", rule: kill},
		{cmd: "killall -u alice", rule: kill},
		{cmd: "fuser -k 8080/tcp", rule: kill},
		{cmd: "sudo pkill -9 python", rule: kill},
		{cmd: "kill -0 12345", allow: true, reason: "signal 0 is an existence probe"},
		{cmd: "kill -l", allow: true},
		{cmd: "sleep 100 & kill $!", allow: true, reason: "the shell's own job"},
		{cmd: "kill %1", allow: true},
		{cmd: "kill -TERM $$", allow: true, reason: "the shell itself"},
		{cmd: "kill $PPID", rule: kill},
		{cmd: "killall -l", allow: true},
		{cmd: "pgrep -f cargo", allow: true},
		{cmd: "fuser -v 8080/tcp", allow: true},
		{cmd: "kill 12345", pol: sup, allow: true},
		{cmd: "pkill -f cargo", pol: sup, allow: true},
		{cmd: "killall5 -9", pol: sup, allow: true},
		{cmd: "pkill -f cargo; reboot", pol: sup, rule: power},
	})
}

func TestCheckCommandExec(t *testing.T) {
	cases := []struct {
		name  string
		c     Command
		p     Policy
		allow bool
		rule  audit.Rule
		optIn string
	}{
		{"reboot", Command{Path: "/usr/sbin/reboot", Argv: []string{"reboot"}}, defaults, false, power, ""},
		{"busybox symlink named reboot", Command{Path: "/bin/busybox", Argv: []string{"reboot"}}, defaults, false, power, ""},
		{"busybox applet", Command{Path: "/bin/busybox", Argv: []string{"busybox", "poweroff"}}, defaults, false, power, ""},
		{"systemctl symlink named poweroff", Command{Path: "/usr/bin/systemctl", Argv: []string{"poweroff"}}, defaults, false, power, ""},
		{"argv[0] renamed", Command{Path: "/usr/sbin/reboot", Argv: []string{"foo"}}, defaults, false, power, ""},
		{"opt-in in envp", Command{Path: "/usr/sbin/reboot", Argv: []string{"reboot"}, Env: []string{"PATH=/bin", "PADDOCK_ALLOW_POWER_CONTROL=1"}}, defaults, true, power, optIn},
		{"alias opt-in", Command{Path: "/usr/bin/systemctl", Argv: []string{"systemctl", "poweroff"}, Env: []string{"PRIME_ALLOW_POWER_CONTROL=1"}}, defaults, true, power, "PRIME_ALLOW_POWER_CONTROL"},
		{"first occurrence wins", Command{Path: "/sbin/reboot", Argv: []string{"reboot"}, Env: []string{"PADDOCK_ALLOW_POWER_CONTROL=0", "PADDOCK_ALLOW_POWER_CONTROL=1"}}, defaults, false, power, ""},
		{"opt-in refused by profile", Command{Path: "/sbin/reboot", Argv: []string{"reboot"}, Env: []string{"PADDOCK_ALLOW_POWER_CONTROL=1"}}, Policy{}, false, power, ""},
		{"sudo", Command{Path: "/usr/bin/sudo", Argv: []string{"sudo", "systemctl", "stop", "gdm"}}, defaults, false, service, ""},
		{"env -i drops the opt-in", Command{Path: "/usr/bin/env", Argv: []string{"env", "-i", "reboot"}, Env: []string{"PADDOCK_ALLOW_POWER_CONTROL=1"}}, defaults, false, power, ""},
		{"shell strings wait for their own execs", Command{Path: "/bin/bash", Argv: []string{"bash", "-c", "reboot"}}, defaults, true, "", ""},
		{"restart unrelated", Command{Path: "/usr/bin/systemctl", Argv: []string{"systemctl", "restart", "nginx"}}, seedUnrelate, true, "", ""},
		{"kill supervised", Command{Path: "/usr/bin/kill", Argv: []string{"kill", "12345"}}, Policy{Supervised: true}, true, "", ""},
		{"pkill supervised", Command{Path: "/usr/bin/pkill", Argv: []string{"pkill", "-f", "x"}}, Policy{Supervised: true}, true, "", ""},
		{"ordinary", Command{Path: "/usr/bin/ls", Argv: []string{"ls", "-l"}}, defaults, true, "", ""},
		{"empty argv", Command{Path: "/usr/sbin/halt"}, defaults, false, power, ""},
		{"isolate default", Command{Path: "/usr/bin/systemctl", Argv: []string{"systemctl", "isolate", "multi-user.target"}}, Policy{DefaultTarget: "multi-user.target"}, true, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := CheckCommand(tc.c, tc.p)
			if v.Allow != tc.allow || v.Rule != tc.rule || v.OptIn != tc.optIn {
				t.Fatalf("got %+v, want allow=%v rule=%q optIn=%q", v, tc.allow, tc.rule, tc.optIn)
			}
		})
	}
}

func TestCheckArgvFollowsShellStrings(t *testing.T) {
	_, v, err := CheckArgv([]string{"bash", "-lc", "sudo systemctl poweroff"}, nil, defaults)
	if err != nil || v.Allow || v.Rule != power {
		t.Fatalf("got %+v, %v", v, err)
	}
	_, v, err = CheckArgv([]string{"sh", "-c", "echo ${"}, nil, defaults)
	if err == nil || v.Allow || v.Rule != RuleUnparsable {
		t.Fatalf("unparsable nested string: got %+v, %v", v, err)
	}
	all, v, err := CheckArgv([]string{"env", "A=1", "ls"}, []string{"A=1", "B=2"}, defaults)
	if err != nil || !v.Allow || len(all) != 1 || !reflect.DeepEqual(all[0].Command.Argv, []string{"ls"}) || len(all[0].Command.Env) != 0 {
		t.Fatalf("got %+v, %+v, %v", all, v, err)
	}
}

func TestCheckShellUnparsable(t *testing.T) {
	for _, s := range []string{"echo 'unterminated", "if then fi", "reboot (", "echo ${"} {
		v, err := shellVerdict(s, nil, defaults)
		if err == nil || v.Allow || v.Rule != RuleUnparsable {
			t.Errorf("%q: got %+v, %v; want an unparsable refusal", s, v, err)
			continue
		}
		mustContain(t, v.Message, "paddock refused", "could not read", "Way out:")
	}
}

func TestCheckPower(t *testing.T) {
	for _, sc := range []string{"reboot", "kexec_load", "kexec_file_load"} {
		v := CheckPowerEnv(sc, nil, Policy{})
		if v.Allow || v.Rule != power {
			t.Errorf("%s: %+v", sc, v)
		}
		mustContain(t, v.Message, "paddock refused "+sc+"(2)", "power-control commands", "require explicit user intent", "PADDOCK_ALLOW_POWER_CONTROL=1")
	}
	if v := CheckPowerEnv("reboot", []string{"PADDOCK_ALLOW_POWER_CONTROL=1"}, defaults); !v.Allow || v.OptIn != optIn {
		t.Errorf("with opt-in: %+v", v)
	}
	if v := CheckPowerEnv("reboot", []string{"PADDOCK_ALLOW_POWER_CONTROL=1"}, Policy{}); v.Allow {
		t.Errorf("with opt-in but allow_opt_in false: %+v", v)
	}
}

func TestMessages(t *testing.T) {
	v := checkShell(t, "sudo reboot", nil, defaults)
	mustContain(t, v.Message, "paddock refused exec of `reboot`", "would reboot this machine",
		"`sudo PADDOCK_ALLOW_POWER_CONTROL=1 reboot`", "sudo resets the environment")
	v = checkShell(t, "systemctl suspend", nil, defaults)
	mustContain(t, v.Message, "suspended desktop is a dead session")
	v = checkShell(t, "systemctl stop sway pipewire", nil, *pol(func(p *Policy) {
		p.ServicesToSurvive = []string{"sway", "pipewire"}
		p.Profile = "/etc/paddock.toml"
	}))
	mustContain(t, v.Message, "sway, pipewire are a protected desktop service", "services_to_survive in /etc/paddock.toml: sway, pipewire",
		"stopping it", "`PADDOCK_ALLOW_POWER_CONTROL=1 systemctl stop sway pipewire`")
	v = checkShell(t, "systemctl isolate multi-user.target", nil, *pol(func(p *Policy) { p.DefaultTarget = "graphical.target" }))
	mustContain(t, v.Message, "systemctl isolate multi-user.target stops every unit", "default target (graphical.target)", "systemctl start UNIT")
	v = checkShell(t, "reboot", []string{"PADDOCK_ALLOW_POWER_CONTROL=1"}, Policy{})
	mustContain(t, v.Message, "allow_opt_in = false", "PADDOCK_ALLOW_POWER_CONTROL=1 is set")
	v = checkShell(t, "echo b > /proc/sysrq-trigger", nil, defaults)
	mustContain(t, v.Message, "`echo b > /proc/sysrq-trigger`", "SysRq")
	v = CheckCommand(Command{Path: "/usr/bin/systemctl", Argv: []string{"systemctl", "isolate", "a\nb"}}, defaults)
	if v.Allow || strings.ContainsAny(v.Message, "\n\r") {
		t.Errorf("isolate of a name with a newline: %q", v.Message)
	}
	v = checkShell(t, "reboot", []string{"PADDOCK_ALLOW_POWER_CONTROL=1\r"}, defaults)
	mustContain(t, v.Message, `PADDOCK_ALLOW_POWER_CONTROL="1\r"`)
	v = checkShell(t, "printf 'a\\nb' && shutdown -r now `echo`", nil, defaults)
	if strings.ContainsAny(v.Message, "\n\r") {
		t.Errorf("message spans lines: %q", v.Message)
	}
}

// TestLimits: a string past the reader's limits (package cmdline tests
// each limit at its edge) is refused with the reader's error, and a limit
// of one part of a string hides nothing else in it.
func TestLimits(t *testing.T) {
	deep := strings.Repeat("eval ", 100) + "reboot" // each eval is one more level
	if v, err := shellVerdict(deep, nil, defaults); err == nil || v.Allow || v.Rule != RuleUnparsable {
		t.Errorf("nesting past the limit: %+v, %v", v, err)
	}
	many := strings.Repeat("true; ", 5000)
	if v, err := shellVerdict(many, nil, defaults); err == nil || v.Allow || v.Rule != RuleUnparsable {
		t.Errorf("too many commands: %+v, %v", v, err)
	}
	loops := "for a in 1 2 3 4 5 6 7 8 9; do for b in 1 2 3 4 5 6 7 8; do for c in 1 2 3 4 5 6 7 8; do for d in 1 2 3 4 5 6 7 8; do true; done; done; done; done"
	if _, err := shellVerdict(loops, nil, defaults); err == nil {
		t.Errorf("4608 loop iterations: no error")
	}
	if v := checkShell(t, "echo {1..100000}; reboot", nil, defaults); v.Allow {
		t.Errorf("brace blow-up hid a reboot")
	}
}

func BenchmarkCheckCommand(b *testing.B) {
	env := make([]string, 50)
	for i := range env {
		env[i] = "VAR" + strings.Repeat("X", i%7) + "=" + strings.Repeat("v", 40)
	}
	c := Command{Path: "/usr/bin/ls", Argv: []string{"ls", "-la", "/tmp"}, Env: env}
	p := Policy{AllowOptIn: true, Supervised: true}
	for i := 0; i < b.N; i++ {
		CheckCommand(c, p)
	}
}

func BenchmarkExplainShell(b *testing.B) {
	p := Policy{AllowOptIn: true}
	for i := 0; i < b.N; i++ {
		shellVerdict("cd /src && CUDA_VISIBLE_DEVICES=0 timeout 600 python train.py --epochs 3 2>&1 | tee log.txt", nil, p)
	}
}

func TestDefaultServicesIsACopy(t *testing.T) {
	d := DefaultServices()
	d[0] = "changed"
	if DefaultServices()[0] != "display-manager" {
		t.Fatal("DefaultServices shares its backing array")
	}
	if len(d) != 17 {
		t.Fatalf("%d default services, want the issue's 17", len(d))
	}
}

// ANSI-C strings decode as bash decodes them, and a NUL ends the string
// (bash keeps C strings): $'reboot\x00x' runs reboot.
func TestCheckShellANSIC(t *testing.T) {
	runShellCases(t, []shellCase{
		{cmd: `$'reb\x6fot'`, rule: power, reason: "hex escape"},
		{cmd: `$'reb\157ot'`, rule: power, reason: "octal escape"},
		{cmd: `$'reb\u006fot'`, rule: power, reason: "unicode escape"},
		{cmd: `$'reboot\x00x'`, rule: power, reason: "NUL ends the string"},
		{cmd: `$'reboot\0'`, rule: power, reason: "octal NUL ends the string"},
		{cmd: `$'reb\x00oot'`, allow: true, reason: "NUL cuts the name to reb"},
		{cmd: `$'reb\x00'oot`, rule: power, reason: "the cut ends the quoted part only"},
		{cmd: `systemctl $'poweroff\x00 --help'`, rule: power, reason: "NUL cuts the argument"},
		{cmd: `$'\x00'reboot`, rule: power, reason: "an empty quoted part"},
	})
}

// Issue 17 item 4: the units that hold the user's login session are
// protected by default, through every verb that stops, kills, masks,
// freezes or restarts them, in every spelling of the user manager.
func TestCheckShellSessionUnits(t *testing.T) {
	own := pol(func(p *Policy) { p.ServicesToSurvive = []string{"my-app"} })
	dropApps := pol(func(p *Policy) { p.ServicesToSurvive = []string{"my-app", "!app-*.scope"} })
	dropTarget := pol(func(p *Policy) { p.ServicesToSurvive = []string{"!graphical-session.target"} })
	dropGdm := pol(func(p *Policy) { p.ServicesToSurvive = []string{"!gdm"} })
	noOpt := pol(func(p *Policy) { p.AllowOptIn = false })
	runShellCases(t, []shellCase{
		// The four commands.
		{cmd: "systemctl stop user@1000.service", rule: service},
		{cmd: "systemctl kill -s KILL session-2.scope", rule: service},
		{cmd: "systemctl --user stop graphical-session.target", rule: service},
		{cmd: "systemctl --user kill app-gnome-org.gnome.Terminal-4242.scope", rule: service},
		// Every unit, every verb.
		{cmd: "systemctl stop user@1000", rule: service, reason: "no suffix means .service"},
		{cmd: "systemctl restart user@1000.service", rule: service},
		{cmd: "systemctl try-restart user@1000.service", rule: service},
		{cmd: "systemctl reload-or-restart user@1000.service", rule: service},
		{cmd: "systemctl disable --now user@1000.service", rule: service},
		{cmd: "systemctl mask --now user@.service", rule: service},
		{cmd: "systemctl freeze session-2.scope", rule: service, reason: "a frozen session is a dead session"},
		{cmd: "systemctl stop session-c1.scope", rule: service},
		{cmd: "systemctl kill --signal=KILL session-2.scope", rule: service},
		{cmd: "systemctl kill --signal KILL --kill-whom=all session-2.scope", rule: service},
		{cmd: "systemctl kill --kill-whom main -s SIGKILL session-2.scope", rule: service},
		{cmd: "systemctl kill -sKILL --kill-value=9 session-2.scope", rule: service},
		{cmd: "systemctl --user restart graphical-session.target", rule: service},
		{cmd: "systemctl --user stop gnome-session-manager@gnome.service", rule: service},
		{cmd: "systemctl --user mask --now gnome-session-x11-services.target", rule: service},
		{cmd: "systemctl --user stop plasma-kwin_wayland.service", rule: service},
		{cmd: "systemctl --user restart plasma-workspace.target", rule: service},
		{cmd: "systemctl --user kill -s 9 app-org.kde.konsole@abc.scope", rule: service},
		{cmd: "systemctl --user freeze app-firefox-1.scope", rule: service},
		{cmd: "systemctl stop 'session-*'", rule: service, reason: "systemctl matches patterns"},
		{cmd: "systemctl --user stop 'app-*'", rule: service},
		{cmd: "systemctl stop nginx user@1000.service", rule: service, reason: "one protected among several"},
		{cmd: "systemctl isolate graphical-session.target", rule: iso, reason: "isolate as before"},
		// Every spelling of the user manager, wrappers and shell strings.
		{cmd: "systemctl -M user@ --user stop graphical-session.target", rule: service},
		{cmd: "systemctl --machine=user@.host --user stop graphical-session.target", rule: service},
		{cmd: "systemctl --user -M alice@ kill app-x.scope", rule: service},
		{cmd: "sudo systemctl stop user@1000.service", rule: service},
		{cmd: "sudo -u alice systemctl --user stop graphical-session.target", rule: service},
		{cmd: "env XDG_RUNTIME_DIR=/run/user/1000 systemctl --user stop graphical-session.target", rule: service},
		{cmd: "XDG_RUNTIME_DIR=/run/user/1000 systemctl --user kill -s KILL app-x.scope", rule: service},
		{cmd: "sh -c 'systemctl --user stop graphical-session.target'", rule: service},
		{cmd: "bash -lc \"systemctl kill -s KILL session-2.scope\"", rule: service},
		{cmd: "timeout 5 sudo systemctl kill --signal=KILL session-2.scope", rule: service},
		{cmd: "for s in 1 2; do systemctl stop session-$s.scope; done", rule: service},
		{cmd: "busctl call org.freedesktop.systemd1 /org/freedesktop/systemd1 org.freedesktop.systemd1.Manager StopUnit ss user@1000.service replace", rule: service},
		{cmd: "service user@1000 stop", rule: service},
		// loginctl, as before.
		{cmd: "loginctl kill-session 2 -s KILL", rule: sess},
		{cmd: "loginctl kill-user 1000 --signal=KILL", rule: sess},
		{cmd: "sudo loginctl kill-session --kill-whom=leader 2", rule: sess},
		{cmd: "loginctl terminate-session 2", rule: sess},
		{cmd: "loginctl terminate-user alice", rule: sess},
		// Neighbours that stay allowed.
		{cmd: "systemctl status user@1000.service", allow: true},
		{cmd: "systemctl show -p ControlGroup session-2.scope", allow: true},
		{cmd: "systemctl list-units 'session-*'", allow: true},
		{cmd: "systemctl --user status graphical-session.target", allow: true},
		{cmd: "systemctl --user start graphical-session.target", allow: true, reason: "starting is harmless"},
		{cmd: "systemctl --user stop my-app.service", allow: true, reason: "a plain user service"},
		{cmd: "systemctl --user restart my-app", allow: true},
		{cmd: "systemctl --user kill -s KILL my-app.service", allow: true},
		{cmd: "systemctl --user stop app-foo.service", allow: true, reason: "app-*.scope only"},
		{cmd: "systemctl --user stop session-manager.service", allow: true, reason: "session-*.scope only"},
		{cmd: "systemctl --user stop graphical-session", allow: true, reason: "that is graphical-session.service"},
		{cmd: "loginctl list-sessions", allow: true},
		{cmd: "loginctl show-session 2", allow: true},
		{cmd: "loginctl lock-session", allow: true},
		// The profile: its own list keeps the session units; "!" drops.
		{cmd: "systemctl --user stop graphical-session.target", pol: own, rule: service, reason: "an own list keeps the session units"},
		{cmd: "systemctl stop gdm", pol: own, allow: true, reason: "an own list replaces the defaults"},
		{cmd: "systemctl --user kill app-x.scope", pol: dropApps, allow: true, reason: "dropped by !app-*.scope"},
		{cmd: "systemctl --user stop graphical-session.target", pol: dropApps, rule: service},
		{cmd: "systemctl stop my-app", pol: dropApps, rule: service},
		{cmd: "systemctl --user stop graphical-session.target", pol: dropTarget, allow: true},
		{cmd: "systemctl stop gdm", pol: dropTarget, rule: service, reason: "drops only: the defaults stay"},
		{cmd: "systemctl stop gdm", pol: dropGdm, allow: true, reason: "a drop reaches the aliases"},
		{cmd: "systemctl stop sshd", pol: dropGdm, rule: service},
		// The opt-in, as for every protected service.
		{cmd: "PADDOCK_ALLOW_POWER_CONTROL=1 systemctl --user stop graphical-session.target", allow: true, rule: service, optIn: optIn},
		{cmd: "sudo PADDOCK_ALLOW_POWER_CONTROL=1 systemctl stop user@1000.service", allow: true, rule: service, optIn: optIn},
		{cmd: "PADDOCK_ALLOW_POWER_CONTROL=1 sudo systemctl stop user@1000.service", rule: service, reason: "sudo resets the environment"},
		{cmd: "systemctl kill -s KILL session-2.scope", env: []string{"PADDOCK_ALLOW_POWER_CONTROL=1"}, allow: true, rule: service, optIn: optIn},
		{cmd: "PADDOCK_ALLOW_POWER_CONTROL=1 systemctl --user stop graphical-session.target", pol: noOpt, rule: service, reason: "allow_opt_in = false"},
		{cmd: "PADDOCK_ALLOW_POWER_CONTROL=1 loginctl kill-session 2", allow: true, rule: sess, optIn: optIn},
	})
}

// Writing to a cgroup v2 cgroup.kill SIGKILLs the whole cgroup, past the
// per-process checks: refused like a session-ending command.
func TestCheckShellCgroupKill(t *testing.T) {
	noOpt := pol(func(p *Policy) { p.AllowOptIn = false })
	const user = "/sys/fs/cgroup/user.slice/user-1000.slice"
	runShellCases(t, []shellCase{
		{cmd: "echo 1 > " + user + "/cgroup.kill", rule: sess},
		{cmd: "echo 1 >> " + user + "/cgroup.kill", rule: sess},
		{cmd: "printf 1 >| " + user + "/session-2.scope/cgroup.kill", rule: sess},
		{cmd: "echo 1 &> " + user + "/cgroup.kill", rule: sess},
		{cmd: "echo 1 1<> " + user + "/cgroup.kill", rule: sess},
		{cmd: "echo 1 > /sys/fs/cgroup/user.slice/../user.slice/cgroup.kill", rule: sess},
		{cmd: "echo 1 | tee " + user + "/cgroup.kill", rule: sess},
		{cmd: "echo 1 | sudo tee -a " + user + "/user@1000.service/cgroup.kill >/dev/null", rule: sess},
		{cmd: "dd of=" + user + "/cgroup.kill <<< 1", rule: sess},
		{cmd: "sh -c 'echo 1 > " + user + "/cgroup.kill'", rule: sess},
		{cmd: "bash -lc \"echo 1 > " + user + "/cgroup.kill\"", rule: sess},
		{cmd: "cd " + user + " && echo 1 > cgroup.kill", rule: sess, reason: "any directory: the working directory is not known"},
		{cmd: "echo 1 > \"$CG/cgroup.kill\"", rule: sess, reason: "a known last element"},
		{cmd: "for c in " + user + "/*/; do echo 1 > \"$c\"cgroup.kill; done", rule: sess},
		{cmd: "echo 1 | tee $CG/cgroup.kill", rule: sess},
		{cmd: "{ echo 1; } > " + user + "/cgroup.kill", rule: sess, reason: "a compound command's redirection"},
		{cmd: "cat " + user + "/cgroup.kill", allow: true, reason: "reading is harmless"},
		{cmd: "cat < " + user + "/cgroup.kill", allow: true},
		{cmd: "tee < " + user + "/cgroup.kill", allow: true},
		{cmd: "echo $$ > " + user + "/cgroup.procs", allow: true},
		{cmd: "echo 1 > cgroup.kill.txt", allow: true},
		{cmd: "echo 1 > /tmp/cgroup.killer", allow: true},
		{cmd: "grep -r cgroup.kill docs", allow: true},
		{cmd: "PADDOCK_ALLOW_POWER_CONTROL=1 sh -c 'echo 1 > " + user + "/cgroup.kill'", allow: true, rule: sess, optIn: optIn},
		{cmd: "echo 1 | sudo PADDOCK_ALLOW_POWER_CONTROL=1 tee " + user + "/cgroup.kill", allow: true, rule: sess, optIn: optIn},
		{cmd: "PADDOCK_ALLOW_POWER_CONTROL=1 sh -c 'echo 1 > " + user + "/cgroup.kill'", pol: noOpt, rule: sess},
		// cgroup.freeze freezes the same processes; oom_score_adj of
		// another process makes it the OOM killer's first pick.
		{cmd: "echo 1 > " + user + "/cgroup.freeze", rule: sess},
		{cmd: "echo 1 | tee \"$CG/cgroup.freeze\"", rule: sess},
		{cmd: "echo 0 > " + user + "/cgroup.freeze.txt", allow: true},
		{cmd: "echo 1000 > /proc/1234/oom_score_adj", rule: sess},
		{cmd: "echo 15 > /proc/1234/oom_adj", rule: sess},
		{cmd: "echo 1000 | tee /proc/$pid/oom_score_adj", rule: sess},
		{cmd: "for p in $(pgrep code); do echo 1000 > /proc/$p/oom_score_adj; done", rule: sess},
		{cmd: "echo 500 > /proc/self/oom_score_adj", allow: true, reason: "its own score"},
		{cmd: "echo 500 > /proc/$$/oom_score_adj", allow: true, reason: "the shell's own"},
		{cmd: "cat /proc/1234/oom_score_adj", allow: true},
	})
}

func TestCheckCommandSessionUnits(t *testing.T) {
	cases := []struct {
		name  string
		c     Command
		allow bool
		rule  audit.Rule
		optIn string
	}{
		{"--user stop", Command{Path: "/usr/bin/systemctl", Argv: []string{"systemctl", "--user", "stop", "graphical-session.target"}}, false, service, ""},
		{"sudo kill -s KILL", Command{Path: "/usr/bin/sudo", Argv: []string{"sudo", "systemctl", "kill", "-s", "KILL", "session-2.scope"}}, false, service, ""},
		{"-M user@ --user kill", Command{Path: "/usr/bin/systemctl", Argv: []string{"systemctl", "-M", "user@", "--user", "kill", "app-x.scope"}}, false, service, ""},
		{"stop user@", Command{Path: "/usr/bin/systemctl", Argv: []string{"systemctl", "stop", "user@1000.service"}}, false, service, ""},
		{"loginctl kill-user", Command{Path: "/usr/bin/loginctl", Argv: []string{"loginctl", "kill-user", "1000"}}, false, sess, ""},
		{"tee cgroup.kill", Command{Path: "/usr/bin/tee", Argv: []string{"tee", "/sys/fs/cgroup/user.slice/cgroup.kill"}}, false, sess, ""},
		{"opt-in in envp", Command{Path: "/usr/bin/systemctl", Argv: []string{"systemctl", "stop", "user@1000.service"}, Env: []string{"PADDOCK_ALLOW_POWER_CONTROL=1"}}, true, service, optIn},
		{"status", Command{Path: "/usr/bin/systemctl", Argv: []string{"systemctl", "status", "user@1000.service"}}, true, "", ""},
		{"a plain user service", Command{Path: "/usr/bin/systemctl", Argv: []string{"systemctl", "--user", "stop", "my-app.service"}}, true, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := CheckCommand(tc.c, defaults)
			if v.Allow != tc.allow || v.Rule != tc.rule || v.OptIn != tc.optIn {
				t.Fatalf("got %+v, want allow=%v rule=%q optIn=%q", v, tc.allow, tc.rule, tc.optIn)
			}
		})
	}
}

func TestSessionUnitMessages(t *testing.T) {
	cases := []struct {
		name, cmd string
		env       []string
		p         Policy
		want      []string
	}{
		{"session unit", "systemctl --user stop graphical-session.target", nil, defaults, []string{
			"paddock refused exec of `systemctl --user stop graphical-session.target`",
			"graphical-session.target is a unit that holds the user's login session",
			"session units, protected by default: user@*.service, session-*.scope, graphical-session.target, gnome-session*, plasma-*, app-*.scope)",
			"stopping it ends the user's desktop session", "Way out:",
			"`PADDOCK_ALLOW_POWER_CONTROL=1 systemctl --user stop graphical-session.target`",
			`services_to_survive in the host profile; an entry "!PATTERN" there ("!app-*.scope") drops a session unit`}},
		{"dropped units are not listed", "systemctl kill -s KILL session-2.scope", nil,
			*pol(func(p *Policy) { p.ServicesToSurvive = []string{"!app-*.scope"}; p.Profile = "/etc/p.toml" }), []string{
				"killing it", "protected by default: user@*.service, session-*.scope, graphical-session.target, gnome-session*, plasma-*);",
				"services_to_survive in /etc/p.toml;"}},
		{"mixed with a desktop service", "systemctl stop gdm user@1000.service", nil, defaults, []string{
			"gdm, user@1000.service are a protected desktop service (services_to_survive by default: display-manager,"}},
		{"drops leave the own list", "systemctl stop sway", nil,
			*pol(func(p *Policy) { p.ServicesToSurvive = []string{"sway", "gdm", "!gdm"} }), []string{
				"(services_to_survive in the host profile: sway);"}},
		{"opt-in", "systemctl stop user@1000.service", []string{"PADDOCK_ALLOW_POWER_CONTROL=1"}, defaults, []string{
			"paddock allowed exec of `systemctl stop user@1000.service` (stopping session unit user@1000.service) because PADDOCK_ALLOW_POWER_CONTROL=1"}},
		{"cgroup.kill", "echo 1 > /sys/fs/cgroup/user.slice/cgroup.kill", nil, defaults, []string{
			"paddock refused exec of `echo 1 > /sys/fs/cgroup/user.slice/cgroup.kill`",
			"session-ending commands require explicit user intent", "SIGKILL every process in that cgroup",
			"the user's whole desktop session", "Way out:", "`paddock kill PID`", "use systemctl"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mustContain(t, checkShell(t, tc.cmd, tc.env, tc.p).Message, tc.want...)
		})
	}
}

func TestEffectiveServices(t *testing.T) {
	session := SessionUnits()
	cases := []struct {
		name string
		list []string
		want []string
	}{
		{"none", nil, append(DefaultServices(), session...)},
		{"own list", []string{"gdm", "my-app.service"}, append([]string{"gdm", "my-app.service"}, session...)},
		{"listed already", []string{"plasma-*", "user@*"}, []string{"plasma-*", "user@*", "session-*.scope", "graphical-session.target", "gnome-session*", "app-*.scope"}},
		{"drops only", []string{"!*"}, nil},
		{"drop by glob", []string{"gdm", "!*session*"}, []string{"gdm", "user@*.service", "plasma-*", "app-*.scope"}},
		{"drop with suffix", []string{"gdm", "!user@*.service", "!gdm.service"}, session[1:]},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := EffectiveServices(tc.list); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
	s := SessionUnits()
	s[0] = "changed"
	if SessionUnits()[0] != "user@*.service" {
		t.Error("SessionUnits shares its backing array")
	}
}

// TestWatchesWhatTheReaderFollows: every program the reader sees through
// is one the exec check looks at (else a wrapper would hide a reboot from
// CheckCommand), and a glob may name each.
func TestWatchesWhatTheReaderFollows(t *testing.T) {
	names := cmdline.Programs()
	if len(names) < 40 {
		t.Fatalf("cmdline.Programs() = %q: want the wrappers and the shells", names)
	}
	known := knownNames()
	for _, n := range append(names, "find", "ld-musl-x86_64.so.1") {
		if !Watches("/usr/bin/"+n, nil) || !Watches("", []string{n}) {
			t.Errorf("%s: not watched", n)
		}
	}
	for _, n := range names {
		if _, found := slices.BinarySearch(known, n); !found {
			t.Errorf("%s: not among the names a glob may stand for", n)
		}
	}
	for _, n := range []string{"ls", "python3", "vllm", ""} {
		if Watches("/usr/bin/"+n, []string{n}) {
			t.Errorf("%q: watched", n)
		}
	}
}
