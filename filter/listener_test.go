package filter

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// TestInstallListenerFallsBackWithoutKillableWait: the flags InstallListener
// asks for, and what it reports, for each answer a kernel may give.
func TestInstallListenerFallsBackWithoutKillableWait(t *testing.T) {
	const both = unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
	for _, tc := range []struct {
		name           string
		answers        map[uint]error // by flags; nil: fd 7
		wantFlags      []uint
		wantFd         int
		wantUnkillable error
		wantErr        error
	}{
		{"5.19+ takes both", map[uint]error{}, []uint{both}, 7, nil, nil},
		{"older: EINVAL, then the listener alone", map[uint]error{both: unix.EINVAL},
			[]uint{both, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER}, 7, unix.EINVAL, nil},
		{"no user notification at all", map[uint]error{both: unix.EINVAL, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER: unix.EINVAL},
			[]uint{both, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER}, -1, unix.EINVAL, unix.EINVAL},
		{"another listener: no retry", map[uint]error{both: unix.EBUSY}, []uint{both}, -1, nil, unix.EBUSY},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked []uint
			install := func(_ []unix.SockFilter, flags uint) (int, error) {
				asked = append(asked, flags)
				if err := tc.answers[flags]; err != nil {
					return -1, err
				}
				return 7, nil
			}
			fd, unkillable, err := InstallListener([]unix.SockFilter{{}}, install)
			if fd != tc.wantFd || !errors.Is(unkillable, tc.wantUnkillable) || (unkillable == nil) != (tc.wantUnkillable == nil) ||
				!errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Errorf("InstallListener = %d, %v, %v; want %d, %v, %v", fd, unkillable, err, tc.wantFd, tc.wantUnkillable, tc.wantErr)
			}
			if len(asked) != len(tc.wantFlags) {
				t.Fatalf("asked for flags %#x, want %#x", asked, tc.wantFlags)
			}
			for i := range asked {
				if asked[i] != tc.wantFlags[i] {
					t.Errorf("call %d: flags %#x, want %#x", i, asked[i], tc.wantFlags[i])
				}
			}
		})
	}
}
