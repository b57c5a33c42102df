package procfs

import (
	"os"
	"os/signal"
	"syscall"
	"testing"
)

func TestParseDispositions(t *testing.T) {
	for _, tc := range []struct {
		in              string
		caught, ignored uint64
		ok              bool
	}{
		{"Name:\tx\nSigIgn:\t0000000000300000\nSigCgt:\tfffffffd7fc3feff\n", 0xfffffffd7fc3feff, 0x300000, true},
		{"SigCgt:\t0000000000010002\nSigIgn:\t0000000000000000\n", 0x10002, 0, true},
		{"SigCgt:\t0000000000010002\n", 0, 0, false},
		{"SigCgt:\tzz\nSigIgn:\t0\n", 0, 0, false},
	} {
		c, i, err := ParseDispositions([]byte(tc.in))
		if (err == nil) != tc.ok || c != tc.caught || i != tc.ignored {
			t.Errorf("ParseDispositions(%q) = %#x, %#x, %v; want %#x, %#x, ok %v", tc.in, c, i, err, tc.caught, tc.ignored, tc.ok)
		}
	}
}

// TestDispositionsOfThisProcess: a signal this process catches shows as
// caught, one it ignores as ignored.
func TestDispositionsOfThisProcess(t *testing.T) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGUSR2)
	defer signal.Stop(c)
	signal.Ignore(syscall.SIGTTIN)
	defer signal.Reset(syscall.SIGTTIN)
	caught, ignored, err := Default().Dispositions(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if caught&(1<<(syscall.SIGUSR2-1)) == 0 || ignored&(1<<(syscall.SIGTTIN-1)) == 0 {
		t.Errorf("caught %#x ignored %#x: want SIGUSR2 caught and SIGTTIN ignored", caught, ignored)
	}
}
