package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/control"
)

// Exit statuses of the control-socket clients (adopt, release, ps, kill).
const (
	exitRefused     = 1 // the supervisor refused, or the request failed
	exitUsage       = 2
	exitUnreachable = 3 // no supervisor answered
)

// addSocketFlag gives a client command its --socket flag.
func addSocketFlag(cmd *cobra.Command, path *string) {
	cmd.Flags().StringVar(path, "socket", "", "control socket of the session to talk to (default $"+control.SocketEnv+", set by paddock run for the agent)")
}

// call sends req to the session's supervisor. Refusals are printed on
// stderr and become exit status 1; an unreachable supervisor, status 3.
func call(verb, socket string, req control.Request) (control.Response, error) {
	fromEnv := socket == ""
	if fromEnv {
		socket = os.Getenv(control.SocketEnv)
	}
	if socket == "" {
		fmt.Fprintf(os.Stderr, "paddock %s: no paddock supervisor is reachable: $%s is not set. Run this inside `paddock run` (the agent's environment has it), or pass --socket PATH of a running session (its supervisor logs the path at start).\n", verb, control.SocketEnv)
		return control.Response{}, exitError{code: exitUnreachable}
	}
	resp, err := control.Call(socket, req)
	if err != nil {
		fmt.Fprintf(os.Stderr, "paddock %s: %v\n", verb, err)
		if fromEnv {
			fmt.Fprint(os.Stderr, unreachableInside(verb, socket))
		}
		return resp, exitError{code: exitUnreachable}
	}
	if !resp.OK {
		fmt.Fprintln(os.Stderr, resp.Error)
		return resp, exitError{code: exitRefused}
	}
	return resp, nil
}

// printJSON writes v as indented JSON on stdout.
func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// unreachableInside is the way out when the session's own socket, named by
// the agent's environment, cannot be reached: a harness's sandbox
// (bubblewrap, a seccomp or Landlock sandbox of its own) may hide it or
// refuse the connection. The user can still reach it from outside.
func unreachableInside(verb, socket string) string {
	return fmt.Sprintf("The session's control socket %s is not reachable from here: a harness's sandbox (bubblewrap, Codex's or Claude Code's sandbox) may hide it or refuse the connection. Way out: ask the user to run `paddock %s ... --socket %s` from their own terminal, outside the sandbox, giving a process by paddock's pid (the second number in paddock's refusal message where the sandbox numbers processes its own way; docs/harness.md).\n",
		socket, verb, socket)
}
