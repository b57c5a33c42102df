package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/internal/dbustest"
)

// dbusCall makes one D-Bus method call the way an agent's program would:
// in its own code, over its own connection to the bus, with no command
// run. args: system|session DEST PATH INTERFACE.MEMBER [SIGNATURE ARG...].
// The bus is DBUS_SYSTEM_BUS_ADDRESS's (else the usual system socket) or
// DBUS_SESSION_BUS_ADDRESS's. Each ARG is written as its type's text (a
// number, true/false, a string); an array only as [], empty. It prints
// "reply" and the reply's values, or returns the error reply.
func dbusCall(args []string) error {
	if len(args) < 4 {
		return fmt.Errorf("usage: agenthelper dbus-call system|session DEST PATH INTERFACE.MEMBER [SIGNATURE ARG...]")
	}
	var addr string
	switch args[0] {
	case "system":
		addr = os.Getenv("DBUS_SYSTEM_BUS_ADDRESS")
		if addr == "" {
			addr = "unix:path=/run/dbus/system_bus_socket"
		}
	case "session":
		addr = os.Getenv("DBUS_SESSION_BUS_ADDRESS")
	default:
		return fmt.Errorf("bus %q: want system or session", args[0])
	}
	dot := strings.LastIndexByte(args[3], '.')
	if dot <= 0 {
		return fmt.Errorf("method %q: want INTERFACE.MEMBER", args[3])
	}
	var sig string
	var values []any
	if len(args) > 4 {
		sig = args[4]
		var err error
		if values, err = dbusArgs(sig, args[5:]); err != nil {
			return err
		}
	}
	c, _, err := dbustest.DialAddress(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	// A bound on a bus that never answers, so that a broken test fails
	// rather than hangs; nothing waits for it to pass.
	if err := c.UnixConn().SetDeadline(time.Now().Add(time.Minute)); err != nil {
		return fmt.Errorf("set a deadline on the bus connection: %w", err)
	}
	r, err := c.Call(dbustest.MethodCall(args[1], args[2], args[3][:dot], args[3][dot+1:], sig, values...))
	if err != nil {
		return err
	}
	if err := r.Err(); err != nil {
		return err
	}
	out := []string{"reply"}
	for _, v := range r.Body {
		out = append(out, fmt.Sprint(v))
	}
	fmt.Println(strings.Join(out, " "))
	return nil
}

// dbusArgs reads the text of each argument as its type in sig.
func dbusArgs(sig string, args []string) ([]any, error) {
	types, err := dbustest.Types(sig)
	if err != nil {
		return nil, err
	}
	if len(types) != len(args) {
		return nil, fmt.Errorf("signature %q takes %d arguments, given %d", sig, len(types), len(args))
	}
	values := make([]any, len(args))
	for i, a := range args {
		var err error
		switch t := types[i]; t[0] {
		case 'b':
			values[i], err = strconv.ParseBool(a)
		case 'y', 'n', 'i', 'x':
			values[i], err = strconv.ParseInt(a, 0, 64)
		case 'q', 'u', 'h', 't':
			values[i], err = strconv.ParseUint(a, 0, 64)
		case 'd':
			values[i], err = strconv.ParseFloat(a, 64)
		case 's', 'o', 'g':
			values[i] = a
		case 'a':
			if a != "[]" {
				err = fmt.Errorf("only [], an empty array, is written here")
			}
			values[i] = []any{}
		default:
			err = fmt.Errorf("type %s is not written here (only basic types and empty arrays)", t)
		}
		if err != nil {
			return nil, fmt.Errorf("argument %d (%s) %q: %w", i+1, types[i], a, err)
		}
	}
	return values, nil
}
