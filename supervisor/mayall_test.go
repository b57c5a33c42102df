package supervisor

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/procfs"
)

// A caller may all paddock may only with paddock's filesystem ids and
// groups and none of its access capabilities missing; other capabilities
// (a root agent has no CAP_SYS_PTRACE) do not count.
func TestMayAll(t *testing.T) {
	const all = 0x1ffffffffff
	root := procfs.Creds{Uid: [4]uint32{0, 0, 0, 0}, Gid: [4]uint32{0, 0, 0, 0}, Groups: []uint32{0, 27}, CapEff: all}
	with := func(f func(*procfs.Creds)) procfs.Creds {
		c := root
		c.Groups = append([]uint32(nil), root.Groups...)
		f(&c)
		return c
	}
	for _, tc := range []struct {
		name string
		cr   procfs.Creds
		want bool
	}{
		{"the same", root, true},
		{"groups in another order", with(func(c *procfs.Creds) { c.Groups = []uint32{27, 0} }), true},
		{"no CAP_SYS_PTRACE (a root agent)", with(func(c *procfs.Creds) { c.CapEff &^= 1 << unix.CAP_SYS_PTRACE }), true},
		{"dropped to nobody", with(func(c *procfs.Creds) {
			c.Uid, c.Gid, c.Groups, c.CapEff = [4]uint32{65534, 65534, 65534, 65534}, [4]uint32{65534, 65534, 65534, 65534}, nil, 0
		}), false},
		{"another filesystem uid", with(func(c *procfs.Creds) { c.Uid[3] = 1000 }), false},
		{"another filesystem gid", with(func(c *procfs.Creds) { c.Gid[3] = 1000 }), false},
		{"a group fewer", with(func(c *procfs.Creds) { c.Groups = []uint32{0} }), false},
		{"no CAP_DAC_OVERRIDE", with(func(c *procfs.Creds) { c.CapEff &^= 1 << unix.CAP_DAC_OVERRIDE }), false},
		{"no CAP_SYS_ADMIN", with(func(c *procfs.Creds) { c.CapEff &^= 1 << unix.CAP_SYS_ADMIN }), false},
	} {
		if got := mayAll(tc.cr, root); got != tc.want {
			t.Errorf("%s: mayAll = %v, want %v", tc.name, got, tc.want)
		}
	}
}
