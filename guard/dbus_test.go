package guard

import (
	"strings"
	"testing"
)

// Every D-Bus method of the table is refused, with its rule and in its
// words, when an exec'd tool calls it: busctl naming the service and the
// interface, dbus-send naming INTERFACE.MEMBER, qdbus naming the service
// and the bare member. (dbusproxy's relay reads the same table: its tests
// hold the relay to it.)
func TestDBusControlsRefusedFromCommandLines(t *testing.T) {
	controls := DBusControls()
	if len(controls) == 0 {
		t.Fatal("no D-Bus controls")
	}
	var cases []shellCase
	for _, c := range controls {
		path := "/" + strings.ReplaceAll(c.Service, ".", "/")
		for _, cmd := range []string{
			"busctl call " + c.Service + " " + path + " " + c.Interface + " " + c.Member,
			"dbus-send --print-reply --dest=" + c.Service + " " + path + " " + c.Interface + "." + c.Member,
			"qdbus " + c.Service + " " + path + " " + c.Member,
		} {
			cases = append(cases, shellCase{cmd: cmd, rule: c.Rule})
		}
	}
	runShellCases(t, cases)
	for _, c := range controls {
		cmd := "busctl call " + c.Service + " / " + c.Interface + " " + c.Member
		if v := checkShell(t, cmd, nil, defaults); !strings.Contains(v.Message, c.Effect) {
			t.Errorf("%s: the refusal does not say it would %q:\n%s", cmd, c.Effect, v.Message)
		}
	}
}
