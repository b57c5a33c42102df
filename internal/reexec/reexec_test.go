package reexec_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/internal/reexec"
)

const (
	echoChild = "__reexec_test_echo"
	exitChild = "__reexec_test_exit"
)

var children = []reexec.Child{
	{Name: echoChild, Main: func(args []string) int { fmt.Println(strings.Join(args, ",")); return 0 }},
	{Name: exitChild, Main: func([]string) int { return 7 }},
}

func TestMain(m *testing.M) {
	reexec.Run(children...)
	os.Exit(m.Run())
}

func TestFind(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want string // "" = none
	}{
		{nil, ""},
		{[]string{"bin"}, ""},
		{[]string{"bin", echoChild}, echoChild},
		{[]string{"bin", exitChild, "x"}, exitChild},
		{[]string{"bin", "-test.run=x", echoChild}, ""},
		{[]string{"bin", "__other"}, ""},
	} {
		c, ok := reexec.Find(tc.argv, children...)
		if ok != (tc.want != "") || c.Name != tc.want {
			t.Errorf("Find(%q) = %q, %v; want %q", tc.argv, c.Name, ok, tc.want)
		}
	}
}

func TestCommand(t *testing.T) {
	out, err := reexec.Command(echoChild, "a", "b").Output()
	if err != nil {
		t.Fatalf("%s: %v", echoChild, err)
	}
	if got := strings.TrimSpace(string(out)); got != "a,b" {
		t.Errorf("%s printed %q, want %q", echoChild, got, "a,b")
	}
	err = reexec.Command(exitChild).Run()
	if code := exitCode(err); code != 7 {
		t.Errorf("%s exited %d (%v), want 7", exitChild, code, err)
	}
}

func exitCode(err error) int {
	if e, ok := err.(interface{ ExitCode() int }); ok {
		return e.ExitCode()
	}
	if err == nil {
		return 0
	}
	return -1
}
