package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/control"
	"github.com/paddock-dev/paddock/guard"
	"github.com/paddock-dev/paddock/policy"
	"github.com/paddock-dev/paddock/vram"
)

type checkFlags struct {
	profile string
	json    bool
	shell   string
	hook    string
}

func newCheckCmd() *cobra.Command {
	var f checkFlags
	cmd := &cobra.Command{
		Use:   "check [--profile FILE] [--json] (-- CMD [ARG...] | --shell STRING | --hook claude-code)",
		Short: "Say whether paddock's command guards would let a command run",
		Long: `Say whether paddock's command guards would let a command run: power control
(reboot, poweroff, suspend, ...), protected desktop services (systemctl stop,
restart, mask, kill, ... of a unit in services_to_survive or of the user's
session: user@*.service, session-*.scope, graphical-session.target, ...;
systemctl isolate), session-ending commands (loginctl kill-session, writes to
cgroup.kill, ...), and, when no paddock supervisor answers on $PADDOCK_SOCKET
(unset, or a session that has ended), broad kill commands (pkill, killall,
kill PID).

  -- CMD [ARG...]   an argv, with paddock check's own environment
  --shell STRING    a shell command line: wrappers (sudo, env, nohup, timeout,
                    ...), VAR=value prefixes, sh -c / bash -lc nesting, chains,
                    pipes and subshells are followed
  --hook claude-code
                    read a Claude Code PreToolUse event on stdin and answer in
                    that protocol: exit 0 lets the Bash call run, exit 2 blocks
                    it with the reason on stderr (anything paddock cannot read
                    is blocked too)

PADDOCK_ALLOW_POWER_CONTROL=1 in the environment, or as a prefix in the
string, declares explicit user intent (unless the profile sets
allow_opt_in = false).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCheck(f, cmd.Flags().Changed("shell"), args, os.Stdin, os.Stdout, os.Stderr)
		},
	}
	cmd.Flags().SetInterspersed(false)
	cmd.Flags().StringVar(&f.profile, "profile", "", "host profile `FILE` (default $PADDOCK_PROFILE, else $XDG_CONFIG_HOME/paddock/profile.toml)")
	cmd.Flags().BoolVar(&f.json, "json", false, "print the verdict as a JSON object on stdout")
	cmd.Flags().StringVar(&f.shell, "shell", "", "check shell command line `STRING`")
	cmd.Flags().StringVar(&f.hook, "hook", "", "answer an agent harness's hook on stdin; `PROTOCOL`: claude-code")
	return cmd
}

type checkedJSON struct {
	Argv    []string   `json:"argv"`
	Env     []string   `json:"env,omitempty"`
	Allowed bool       `json:"allowed"`
	Rule    audit.Rule `json:"rule,omitempty"`
	OptIn   string     `json:"opt_in,omitempty"`
}

type verdictJSON struct {
	Allowed  bool          `json:"allowed"`
	Rule     audit.Rule    `json:"rule,omitempty"`
	Message  string        `json:"message,omitempty"`
	OptIn    string        `json:"opt_in,omitempty"`
	Commands []checkedJSON `json:"commands"`
}

func runCheck(f checkFlags, shellSet bool, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if f.hook != "" {
		if shellSet || len(args) > 0 || f.json {
			return errors.New("check: --hook reads the command from stdin; it takes no --shell, --json or CMD")
		}
		if f.hook != "claude-code" {
			return fmt.Errorf("check: --hook %q: the supported protocol is claude-code", f.hook)
		}
		return checkHook(f, stdin, stderr)
	}
	switch {
	case shellSet && len(args) > 0:
		return errors.New("check: give either --shell STRING or -- CMD [ARG...], not both")
	case !shellSet && len(args) == 0:
		return errors.New("check: nothing to check; usage: paddock check [--profile FILE] [--json] (-- CMD [ARG...] | --shell STRING | --hook claude-code)")
	}
	pol, budget, err := checkPolicy(f.profile)
	if err != nil {
		return err
	}
	var all []guard.Checked
	var v guard.Verdict
	if shellSet {
		all, v, _ = guard.ExplainShell(f.shell, os.Environ(), pol)
	} else {
		all, v, _ = guard.CheckArgv(args, os.Environ(), pol)
	}
	v = checkVRAM(all, v, budget, pol.AllowOptIn)
	if f.json {
		out := verdictJSON{Allowed: v.Allow, Rule: v.Rule, Message: v.Message, OptIn: v.OptIn, Commands: []checkedJSON{}}
		for _, c := range all {
			out.Commands = append(out.Commands, checkedJSON{Argv: c.Command.Argv, Env: c.Command.Env,
				Allowed: c.Verdict.Allow, Rule: c.Verdict.Rule, OptIn: c.Verdict.OptIn})
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	}
	if !v.Allow {
		fmt.Fprintln(stderr, v.Message)
		return exitError{code: 1}
	}
	if !f.json {
		if v.Message != "" {
			fmt.Fprintln(stdout, v.Message)
		} else {
			fmt.Fprintln(stdout, "allowed")
		}
	}
	return nil
}

// checkPolicy loads the profile, says whether a supervisor decides kills,
// and computes the VRAM budget GPU commands are checked against.
func checkPolicy(flagValue string) (guard.Policy, vram.Budget, error) {
	prof, err := loadProfile(flagValue)
	if err != nil {
		return guard.Policy{}, vram.Budget{}, err
	}
	pol := prof.GuardPolicy()
	pol.Supervised = supervisorReachable()
	budget, _ := hostBudget(vram.LiveSources(), vramSettings(prof))
	return pol, budget, nil
}

// supervisorReachable reports whether a paddock supervisor answers on
// $PADDOCK_SOCKET: only then does the kernel decide each kill's targets. A
// variable left behind by a session that ended (or set by hand) names a
// socket nobody answers on, and counts as no supervisor.
func supervisorReachable() bool {
	socket := os.Getenv(control.SocketEnv)
	if socket == "" {
		return false
	}
	_, err := control.Call(socket, control.Request{Op: control.OpPs})
	return err == nil
}

// checkVRAM runs the VRAM preflight on each command the guard let through:
// the first over-budget GPU workload turns the verdict into a refusal.
func checkVRAM(all []guard.Checked, v guard.Verdict, b vram.Budget, allowOptIn bool) guard.Verdict {
	budget := func() *vram.Budget { return &b }
	for _, c := range all {
		v = policy.WithVRAM(v, c.Command.Argv, append(os.Environ(), c.Command.Env...), budget, vram.SafeFiles(nil, vram.ReadLimits{}), allowOptIn)
	}
	return v
}

// maxHookEvent bounds what --hook reads from stdin.
const maxHookEvent = 16 << 20

// checkHook answers a Claude Code PreToolUse hook: exit 0 lets the call go
// on through the normal permission flow, exit 2 blocks it and stderr is the
// reason the model sees. Every other failure also exits 2: Claude Code
// treats any other status as a non-blocking error, which would let the call
// run unchecked.
func checkHook(f checkFlags, stdin io.Reader, stderr io.Writer) error {
	block := func(format string, a ...any) error {
		fmt.Fprintf(stderr, format+"\n", a...)
		return exitError{code: 2}
	}
	data, err := io.ReadAll(io.LimitReader(stdin, maxHookEvent+1))
	if err != nil {
		return block("paddock check --hook claude-code: cannot read the hook event on stdin (%v); the call is blocked because paddock cannot tell what it would run.", err)
	}
	if len(data) > maxHookEvent {
		return block("paddock check --hook claude-code: the hook event is larger than %d bytes; the call is blocked because paddock does not read it all.", maxHookEvent)
	}
	var ev struct {
		HookEventName string          `json:"hook_event_name"`
		ToolName      string          `json:"tool_name"`
		ToolInput     json.RawMessage `json:"tool_input"`
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		return block("paddock check --hook claude-code: the hook event on stdin is not JSON (%v); the call is blocked because paddock cannot tell what it would run. Way out: register paddock as a PreToolUse command hook (see docs/profile.md).", err)
	}
	if ev.HookEventName != "" && ev.HookEventName != "PreToolUse" {
		return nil // paddock only has something to say before a tool runs
	}
	if ev.ToolName != "Bash" {
		return nil
	}
	var in struct {
		Command *string `json:"command"`
	}
	if err := json.Unmarshal(ev.ToolInput, &in); err != nil || in.Command == nil {
		return block("paddock check --hook claude-code: the Bash event has no tool_input.command string; the call is blocked because paddock cannot tell what it would run.")
	}
	pol, budget, err := checkPolicy(f.profile)
	if err != nil {
		return block("paddock: %v (every Bash call is blocked until the profile is fixed: paddock does not guess a host policy).", err)
	}
	all, v, _ := guard.ExplainShell(*in.Command, os.Environ(), pol)
	v = checkVRAM(all, v, budget, pol.AllowOptIn)
	if !v.Allow {
		return block("%s", strings.TrimSpace(v.Message))
	}
	return nil
}
