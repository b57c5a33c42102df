package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/control"
)

// applyManuals attaches each command's manual (manual.go) to it, by its
// path; TestManualForEveryCommand checks that every visible command has
// one, with its exit statuses and an example.
func applyManuals(root *cobra.Command) {
	ms := manuals()
	var visit func(*cobra.Command)
	visit = func(c *cobra.Command) {
		if m, ok := ms[c.CommandPath()]; ok {
			m.apply(c)
		}
		for _, sub := range c.Commands() {
			visit(sub)
		}
	}
	visit(root)
}

// The entries several manuals share, written once.

func envProfile() term {
	return term{"PADDOCK_PROFILE", "the host profile (TOML) when --profile is not given (docs/profile.md)"}
}

func envConfigHome() term {
	return term{"XDG_CONFIG_HOME", "the host profile is $XDG_CONFIG_HOME/paddock/profile.toml when neither --profile nor PADDOCK_PROFILE names one (default ~/.config)"}
}

func envJournal() term {
	return term{"PADDOCK_JOURNAL", "the audit journal when --journal is not given"}
}

func envStateHome() term {
	return term{"XDG_STATE_HOME", "the audit journal is $XDG_STATE_HOME/paddock/journal.jsonl when neither --journal nor PADDOCK_JOURNAL names one (default ~/.local/state)"}
}

func envSocket() term {
	return term{control.SocketEnv, "the control socket of the session to talk to when --socket is not given; paddock run sets it for CMD"}
}

func envRuntimeDir() term {
	return term{"XDG_RUNTIME_DIR", "where session directories go: $XDG_RUNTIME_DIR when set, else $TMPDIR, else /dev/shm (a tmpfs) or /tmp"}
}

func envTmpdir() term {
	return term{"TMPDIR", "where session directories go when XDG_RUNTIME_DIR is not set"}
}

func envAllowPower() term {
	return term{"PADDOCK_ALLOW_POWER_CONTROL", "=1 in the environment of the command itself: the user asked for this power-control or protected-service command, which is then allowed and journaled (unless the profile sets allow_opt_in = false)"}
}

func envAllowVRAM() term {
	return term{"PADDOCK_ALLOW_OVERBUDGET_VRAM", "=1 in the environment of a GPU workload: start it even though it does not fit the VRAM budget (journaled; alias RLM_ALLOW_OVERBUDGET_VRAM)"}
}

func fileProfile() term {
	return term{"~/.config/paddock/profile.toml", "the host profile, when there is one ($XDG_CONFIG_HOME/paddock/profile.toml; docs/profile.md)"}
}

func fileJournal() term {
	return term{"~/.local/state/paddock/journal.jsonl", "the audit journal, JSON Lines, with its rotated files journal.jsonl.1 ... .N ($XDG_STATE_HOME/paddock/journal.jsonl; docs/journal.md)"}
}

func fileSessionDir() term {
	return term{"$XDG_RUNTIME_DIR/paddock-N/", "a running session's directory, mode 0700: control.sock (its control socket), owner (who runs it) and paddock (a link to the binary, first on CMD's PATH); under $TMPDIR, /dev/shm or /tmp when XDG_RUNTIME_DIR is not set. Removed when the session ends, or by the next paddock run or paddock doctor when paddock was killed"}
}

// clientExits are the exit statuses of the commands that talk to a
// session (adopt, release, ps, kill), ok saying what 0 means.
func clientExits(ok, refused string) []term {
	return []term{
		{"0", ok},
		{fmt.Sprint(exitRefused), refused},
		{fmt.Sprint(exitUsage), "usage error (a bad PID, flag or signal)"},
		{fmt.Sprint(exitUnreachable), "no paddock supervisor is reachable: " + control.SocketEnv + " is unset and --socket not given, or nothing answers on the socket"},
	}
}

// usageExit is status 2 as most commands have it.
func usageExit(what string) term { return term{"2", what} }

// manuals are the commands' manuals, by command path.
func manuals() map[string]manual {
	return map[string]manual{
		"paddock": {
			Exit: []term{
				{"0", "success"},
				usageExit("usage error, or paddock could not do what was asked (each command's page says more)"),
			},
			Examples: []term{
				{"paddock run -- bash", "a shell whose processes can only signal, trace or write into the processes they started"},
				{"paddock sessions", "list your running sessions and their control sockets"},
				{"paddock journal --since 1h", "what was refused in the last hour"},
			},
		},
		"paddock run": {
			Exit: []term{
				{"N", "CMD exited with status N (0 included), whatever was refused"},
				{"128+N", "CMD died of signal N (143 for SIGTERM)"},
				{"1", "--strict and something was refused although CMD exited 0; or --report could not be written"},
				{"2", "usage error (a bad flag, a broken profile), or paddock could not start CMD under supervision (no backend here, already inside a paddock session); CMD did not run"},
				{"126", "CMD was found but could not be executed"},
				{"127", "CMD was not found"},
			},
			Env: []term{
				envProfile(), envConfigHome(), envJournal(),
				{"XDG_STATE_HOME", "the audit journal is $XDG_STATE_HOME/paddock/journal.jsonl when neither --journal nor PADDOCK_JOURNAL names one, and paddock's log, while paddock's stderr is a terminal, $XDG_STATE_HOME/paddock/log/SESSION.log unless --log-file names another (default ~/.local/state)"},
				{"PADDOCK_JOURNAL_MIRROR", "journald or syslog: as --journal-mirror"},
				{"PADDOCK_BACKEND", "auto, seccomp or ptrace: as --backend"},
				envRuntimeDir(), envTmpdir(),
				{"NO_COLOR", "set: console log lines without colours"},
				{"TINI_KILL_PROCESS_GROUP", "set: as --forward-to-group (tini's variable)"},
				{"TINI_VERBOSITY", "0 to 3: as --log-level error, warn, info or debug, unless --log-level is given (tini's variable)"},
				{control.SocketEnv, "set for CMD: the session's control socket, which paddock adopt, release, ps and kill use"},
				{"PADDOCK_BIN", "set for CMD: the paddock binary (a link to it is also first on CMD's PATH)"},
				envAllowPower(), envAllowVRAM(),
			},
			Files: []term{fileProfile(), fileJournal(),
				{"~/.local/state/paddock/log/SESSION.log", "paddock's log of one session, while its stderr is a terminal (which CMD then has); mode 0600, the newest 100 kept ($XDG_STATE_HOME/paddock/log; --log-file puts it elsewhere)"},
				fileSessionDir()},
			Examples: []term{
				{"paddock run -- bash", "a shell whose processes can only signal what they started"},
				{"paddock run --log-file - -- bash", "the same, with paddock's log lines on the terminal, among the shell's output"},
				{"paddock run --journal ~/agent.jsonl -- claude --continue", "an agent harness, with the journal in a file of your choice"},
				{"paddock run --strict --report refusals.xml --report-format junit -- make test", "a CI job that fails when anything was refused, with a JUnit report"},
				{`ENTRYPOINT ["/usr/local/bin/paddock", "run", "--"]`, "a container's init, in a Dockerfile (docs/container.md)"},
			},
		},
		"paddock adopt": {
			Exit: clientExits("adopted (one line says what)", "refused (the reason on stderr)"),
			Env:  []term{envSocket()},
			Examples: []term{
				{`paddock adopt 4242 --reason "user asked to stop the dev server it started earlier"`, "inside a session: let the agent signal process 4242 and its descendants"},
				{`paddock adopt --socket /dev/shm/paddock-123/control.sock 4242 --reason "..."`, "the same from outside the session (paddock sessions lists the sockets)"},
			},
		},
		"paddock release": {
			Exit: clientExits("released (one line says what)", "PID is not adopted by this session"),
			Env:  []term{envSocket()},
			Examples: []term{
				{"paddock release 4242", "end the adoption of process 4242"},
			},
		},
		"paddock ps": {
			Exit: clientExits("listed", "the request failed"),
			Env:  []term{envSocket()},
			Examples: []term{
				{"paddock ps", "inside a session: the processes it owns"},
				{"paddock ps --json --socket /dev/shm/paddock-123/control.sock", "from outside, as JSON"},
			},
		},
		"paddock kill": {
			Exit: clientExits("signalled (one line says what)", "refused: PID is not owned by the session (the reason on stderr)"),
			Env:  []term{envSocket()},
			Examples: []term{
				{"paddock kill 4242", "send SIGTERM to an owned process"},
				{"paddock kill -s KILL 4242", "send SIGKILL"},
			},
		},
		"paddock sessions": {
			Exit: []term{
				{"0", "listed (no sessions is not an error)"},
				usageExit("usage error, or a directory sessions go in could not be read"),
			},
			Env:   []term{envRuntimeDir(), envTmpdir()},
			Files: []term{fileSessionDir()},
			Examples: []term{
				{"paddock sessions", "your running sessions: paddock's pid, the command, its processes and the control socket"},
				{`paddock ps --socket "$(paddock sessions --json | jq -r '.[0].socket')"`, "the processes of the first session, from outside it"},
			},
		},
		"paddock journal": {
			Exit: []term{
				{"0", "the journal was read, also when it does not exist yet or its last line is incomplete (said on stderr); with --verify: the hash chain is intact (warnings on stderr)"},
				{"1", "the journal could not be read, or a line other than the last is not a JSON object (every good record is still printed, every bad line reported on stderr); with --verify: tampering found (each break on stderr, a journal_rewritten record among them), the --head record is not in the chain, the --mirror differs from the file, or there is no journal to verify or it (or the mirror) could not be read"},
				usageExit("usage error"),
			},
			Env:   []term{envJournal(), envStateHome()},
			Files: []term{fileJournal()},
			Examples: []term{
				{"paddock journal --since 1h --action signal_denied", "the kills refused in the last hour"},
				{"paddock journal --session 3f2a9c1b7d4e", "one session's records (its id is in paddock run's start line)"},
				{"paddock journal --verify --head 9f2c...", "check the hash chain, and that it still holds the head paddock run logged"},
			},
		},
		"paddock check": {
			Exit: []term{
				{"0", "allowed"},
				{"1", "refused (the reason on stderr)"},
				usageExit("usage or profile error; with --hook claude-code: refused, or the event could not be read (Claude Code blocks the call)"),
			},
			Env:   []term{envProfile(), envConfigHome(), envSocket(), envAllowPower()},
			Files: []term{fileProfile()},
			Examples: []term{
				{"paddock check -- systemctl reboot", "would this argv be refused?"},
				{`paddock check --shell 'sudo pkill -f node'`, "a shell command line, wrappers followed"},
				{"paddock check --hook claude-code", "as Claude Code's PreToolUse hook (docs/harness.md)"},
			},
		},
		"paddock profile": {
			Exit: []term{
				{"0", "printed"},
				usageExit("the profile is broken (unknown key, wrong type, impossible value; the message names the file, line and key)"),
			},
			Env:   []term{envProfile(), envConfigHome()},
			Files: []term{fileProfile()},
			Examples: []term{
				{"paddock profile", "each key, its value and where it came from"},
			},
		},
		"paddock preflight": {
			Exit: []term{
				{"0", "accepted (also: not a GPU workload paddock knows)"},
				{"1", "rejected (the message on stderr)"},
				usageExit("usage error"),
			},
			Env:   []term{envProfile(), envConfigHome(), envAllowVRAM()},
			Files: []term{fileProfile()},
			Examples: []term{
				{"paddock preflight --vram 16", "does a 16 GB request fit?"},
				{"paddock preflight --total-vram 24 --headroom 4 -- vllm serve meta-llama/Llama-3-8B --gpu-memory-utilization 0.7", "what a vLLM command line would claim, on a 24 GB card"},
				{"paddock preflight --json -- llama-server -m model.gguf -ngl 99", "a llama.cpp server, as JSON"},
			},
		},
		"paddock doctor": {
			Exit: []term{
				{"0", "the report was written, whatever it found"},
				{"1", "the report could not be written"},
			},
			Env:   []term{envRuntimeDir(), envTmpdir()},
			Files: []term{fileSessionDir()},
			Examples: []term{
				{"paddock doctor", "what this kernel gives paddock, and which backend it would use"},
			},
		},
		"paddock agent": {
			Exit: []term{
				{"0", "stopped by SIGTERM or SIGINT, or handed over to a --takeover"},
				usageExit("usage error, a broken profile, or the socket could not be served"),
			},
			Env:   []term{envProfile(), envConfigHome(), envJournal(), envStateHome()},
			Files: []term{fileProfile(), fileJournal()},
			Examples: []term{
				{"paddock agent --socket /run/paddock/agent.sock --journal /var/log/paddock/journal.jsonl", "serve the node's containers (docs/fleet.md)"},
				{"paddock agent --socket /run/paddock/agent.sock --takeover", "upgrade a running agent without breaking its containers"},
			},
		},
		"paddock agent profile": {
			Exit: []term{
				{"0", "printed (or written to --output)"},
				usageExit("usage error, or --output could not be written"),
			},
			Examples: []term{
				{"paddock agent profile --socket /run/paddock/agent.sock --format kubernetes -o /var/lib/kubelet/seccomp/paddock.json", "install the kubelet's Localhost profile"},
			},
		},
		"paddock agent runtime-wrapper": {
			Exit: []term{
				{"any", "the runtime's own (the wrapper execs it)"},
				{"1", "the bundle's config.json could not be read, parsed or written (the container is not started), or the runtime could not be executed"},
				usageExit("usage error"),
			},
			Examples: []term{
				{"paddock agent runtime-wrapper --socket /run/paddock/agent.sock --metadata docker -- --root /run/runc create --bundle /run/b c1", "what Docker's shim runs through it: listenerPath written into /run/b/config.json, then runc create"},
			},
		},
		"paddock version": {
			Exit:     []term{{"0", "printed"}},
			Examples: []term{{"paddock version", "paddock v0.1.0, revision ..., go1.26.8"}},
		},
		"paddock completion": {
			Exit: []term{{"0", "printed"}, usageExit("no shell, or one paddock has no script for")},
			Examples: []term{
				{"source <(paddock completion bash)", "completion in this bash session (the bash-completion package must be installed)"},
				{`paddock completion zsh > "${fpath[1]}/_paddock"`, "zsh, from the next shell"},
				{"paddock completion fish > ~/.config/fish/completions/paddock.fish", "fish"},
			},
		},
		"paddock man": {
			Exit:     []term{{"0", "written"}, usageExit("usage error, or a page could not be written")},
			Examples: []term{{"paddock man ~/.local/share/man/man1 && man paddock-run", "install the pages for your user"}},
		},
	}
}
