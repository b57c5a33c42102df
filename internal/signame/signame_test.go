package signame

import "testing"

func TestName(t *testing.T) {
	for _, tc := range []struct {
		sig  int
		want string
		ok   bool
	}{
		{1, "SIGHUP", true},
		{2, "SIGINT", true},
		{9, "SIGKILL", true},
		{15, "SIGTERM", true},
		{18, "SIGCONT", true},
		{31, "SIGSYS", true},
		{34, "SIGRTMIN+0", true},
		{40, "SIGRTMIN+6", true},
		{64, "SIGRTMIN+30", true},
		{0, "", false},
		{-1, "", false},
		{65, "", false},
	} {
		if got, ok := Name(tc.sig); got != tc.want || ok != tc.ok {
			t.Errorf("Name(%d) = %q, %v; want %q, %v", tc.sig, got, ok, tc.want, tc.ok)
		}
	}
}

func TestNumber(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"TERM", 15, true},
		{"SIGTERM", 15, true},
		{"sigterm", 15, true},
		{"term", 15, true},
		{"HUP", 1, true},
		{"KILL", 9, true},
		{"15", 15, true},
		{"0", 0, true},
		{"64", 64, true},
		{"RTMIN", 34, true},
		{"SIGRTMIN+3", 37, true},
		{"rtmax", 64, true},
		{"RTMAX-2", 62, true},
		{"65", 0, false},
		{"-1", 0, false},
		{"RTMIN+31", 0, false},
		{"RTMIN+-1", 0, false},
		{"RTMIN-1", 0, false},
		{"RTMAX+1", 0, false},
		{"RTMIN+", 0, false},
		{"BOGUS", 0, false},
		{"SIG", 0, false},
		{"", 0, false},
	} {
		if got, ok := Number(tc.in); ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("Number(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// Every named signal reads back as itself: the two directions share one
// table.
func TestRoundTrip(t *testing.T) {
	for sig := 1; sig <= 64; sig++ {
		name, ok := Name(sig)
		if !ok {
			continue
		}
		if got, ok := Number(name); !ok || got != sig {
			t.Errorf("Number(Name(%d) = %q) = %d, %v", sig, name, got, ok)
		}
	}
}
