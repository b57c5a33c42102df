package dbuswire

import "strings"

// UnixPath is the socket path of a D-Bus server address's first
// unix:path= entry ("unix:path=/run/dbus/system_bus_socket", as
// DBUS_SYSTEM_BUS_ADDRESS and DBUS_SESSION_BUS_ADDRESS name a bus), or ""
// where it has none (tcp:, unix:abstract=, an empty address): the one
// kind of bus address paddock's wall and the tests' client connect to.
// It reads the path as written, without the %XX escapes of the
// specification, which a path with only the usual characters has no use
// for.
func UnixPath(addr string) string {
	for _, a := range strings.Split(addr, ";") {
		rest, ok := strings.CutPrefix(a, "unix:")
		if !ok {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if p, ok := strings.CutPrefix(kv, "path="); ok {
				return p
			}
		}
	}
	return ""
}
