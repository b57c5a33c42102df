package supervisor

import (
	"errors"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/sys"
)

// An open for writing is decided and carried out on the notify loop itself
// where nothing in it can wait on another process, and by a worker
// otherwise (measured: the handoff to a worker cost a git workload about 8%
// under the default wall, in thread migrations; docs/perf.md). On the loop
// its path is looked up from the dentry cache alone and its object must lie
// on a filesystem whose calls wait on nothing but memory and disks, told
// from the mount table, never by asking the filesystem: a FUSE daemon
// (possibly the agent's own, which may itself be waiting on the loop), a
// network filesystem or a device could hold the loop, and every decision
// of the session behind it.

// localMagics are the filesystems an open is carried out for on the loop
// (statfs magics): disks' and memory's.
var localMagics = map[int64]bool{
	unix.EXT4_SUPER_MAGIC:  true, // ext2, ext3 and ext4
	unix.XFS_SUPER_MAGIC:   true,
	unix.BTRFS_SUPER_MAGIC: true,
	unix.TMPFS_MAGIC:       true, // tmpfs, and devtmpfs (/dev/null)
}

// maxMountMemo bounds the mounts a loop remembers; past it the memo
// starts again.
const maxMountMemo = 1024

// mountMemo remembers each mount's filesystem by its unique id (Linux
// 6.8), which no later mount takes.
type mountMemo map[uint64]int64

// local tells whether the object fd pins, resolved for thread tid (whose
// /proc is under proc), may be opened on the loop: a regular file or a
// directory (where a missing name is made) or /dev/null, on a filesystem
// of localMagics. It asks nothing of the filesystem (sys.MemoOf, and
// sys.MountMagic in paddock's mount namespace or else in tid's); magic is
// the filesystem's, for the wall's facts. A kernel without unique mount
// ids or statmount(2) vouches for nothing.
func (m mountMemo) local(fd int, proc string, tid int) (magic int64, ok bool) {
	memo, ok, err := sys.MemoOf(fd)
	if err != nil || !ok {
		return 0, false
	}
	switch memo.Mode & unix.S_IFMT {
	case unix.S_IFREG, unix.S_IFDIR:
	case unix.S_IFCHR:
		if memo.RdevMajor != 1 || memo.RdevMinor != 3 {
			return 0, false
		}
	default:
		return 0, false
	}
	magic, known := m[memo.Mount]
	if !known {
		if magic, err = mountMagicFor(memo.Mount, proc, tid); err != nil {
			return 0, false // not remembered: asked again next time
		}
		if len(m) >= maxMountMemo {
			clear(m)
		}
		m[memo.Mount] = magic
	}
	return magic, localMagics[magic]
}

// mountMagicFor is the magic of mount mnt, looked for in paddock's mount
// namespace and then in thread tid's (a root agent's own, a bwrap's).
func mountMagicFor(mnt uint64, proc string, tid int) (int64, error) {
	magic, err := sys.MountMagic(mnt, 0)
	if !errors.Is(err, unix.ENOENT) {
		return magic, err
	}
	nsfd, err := unix.Open(proc+"/"+strconv.Itoa(tid)+"/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(nsfd)
	ns, err := sys.MountNSID(nsfd)
	if err != nil {
		return 0, err
	}
	return sys.MountMagic(mnt, ns)
}

// wallHere reports whether c, read by a loop, is an open for writing to try
// on the loop first (decideWall then defers it where it might wait).
func (c *call) wallHere() bool {
	return c.req.Wall != nil && c.w.mounts != nil && !connectLike(c.req.Syscall)
}
