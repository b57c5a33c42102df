package filter

import "testing"

// archProbes: a 64-bit arm64 process cannot enter the AArch32 ABI (that
// takes a 32-bit executable), so only native probes run; the arm section is
// covered by the interpreter tests.
func archProbes(probeEnv) []probe { return nil }

func childInt80() int { return 2 }

func int80Available(*testing.T) (bool, string) {
	return false, "a 64-bit arm64 process cannot make AArch32 syscalls"
}
