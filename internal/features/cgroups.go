package features

import "golang.org/x/sys/unix"

// HybridCgroups reports whether /sys/fs/cgroup is the hybrid layout:
// cgroup v1 hierarchies with a cgroup2 mount at unified, which crun
// refuses ("cgroups in hybrid mode not supported"); doctor says so, and
// the fleet tests run crun where it can run (docs/fleet.md).
func HybridCgroups() bool {
	var root, unified unix.Statfs_t
	if unix.Statfs("/sys/fs/cgroup", &root) != nil || unix.Statfs("/sys/fs/cgroup/unified", &unified) != nil {
		return false
	}
	return root.Type != unix.CGROUP2_SUPER_MAGIC && unified.Type == unix.CGROUP2_SUPER_MAGIC
}
