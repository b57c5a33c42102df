//go:build ignore

// floor.c: the least a seccomp-notify supervisor can do, as the floor that
// issue 8's hot-loop target is measured against. It runs CMD under a filter
// that sends the same signal syscalls paddock traps to a listener (signal 0
// excepted, as in paddock's BPF), turns on SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP,
// and answers every notification CONTINUE without looking at it: no /proc
// read, no pidfd, no decision, no NOTIF_ID_VALID. With FLOOR_EXEC=1 in its
// environment it traps execve and execveat too (the floor of workload c'),
// and with FLOOR_WALL=1 what paddock's default wall traps (issue 35): a
// connect with an address that is not IPv4's or IPv6's, and an open or
// openat for writing without O_CREAT|O_EXCL (bench/work.sh's FLOOR=1).
//
// Usage: floor CMD [ARG...]   (x86_64 native ABI only; exits with CMD's status)
// Build: gcc -O2 -Wall -o bench/out/floor bench/floor.c
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

#define ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i))

// trap_sig: trap syscall NR unless its signal argument (index ARG) is 0.
#define TRAP_SIG(nr, arg, next)                                                                  \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 4),                                         \
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(arg)),                                     \
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW), \
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF)

// install: the signal syscalls always; execve and execveat with trap_exec;
// with trap_wall what paddock's default wall traps (filter/build.go):
// connect with an address of any length but an IPv4 or IPv6 one's, and
// open and openat for writing unless with O_CREAT|O_EXCL.
static int install(int trap_exec, int trap_wall) {
	struct sock_filter prog[64];
	int n = 0;
#define PUT(x) (prog[n++] = (struct sock_filter)x)
	PUT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
	PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0));
	PUT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
	struct sock_filter sigs[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    TRAP_SIG(SYS_kill, 1, 0),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    TRAP_SIG(SYS_tgkill, 2, 0),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    TRAP_SIG(SYS_tkill, 1, 0),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	};
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		PUT(sigs[i]);
	if (trap_exec) {
		PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_execve, 0, 1));
		PUT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF));
		PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_execveat, 0, 1));
		PUT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF));
	}
	if (trap_wall) {
		// connect: its address length, argument 2.
		PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_connect, 0, 5));
		PUT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(2)));
		PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 16, 2, 0));
		PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 28, 1, 0));
		PUT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF));
		PUT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
		// open (flags in argument 1) and openat (argument 2): trapped for
		// writing, unless with O_CREAT|O_EXCL.
		PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_open, 0, 2));
		PUT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(1)));
		PUT(BPF_JUMP(BPF_JMP | BPF_JA | BPF_K, 2, 0, 0));
		PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 0, 4));
		PUT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(2)));
		PUT(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 3, 0, 2));
		PUT(BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0300));
		PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0300, 0, 1));
		PUT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
		PUT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF));
	} else {
		PUT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
	}
#undef PUT
	struct sock_fprog fprog = {.len = n, .filter = prog};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &fprog);
}

// on reports whether environment variable name is "1".
static int on(const char *name) {
	const char *e = getenv(name);
	return e != NULL && strcmp(e, "1") == 0;
}

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: floor CMD [ARG...]\n");
		return 2;
	}
	int sv[2], go[2];
	if (pipe(sv) || pipe(go)) {
		perror("pipe");
		return 1;
	}
	pid_t child = fork();
	if (child == 0) {
		int fd = install(on("FLOOR_EXEC"), on("FLOOR_WALL"));
		if (fd < 0) {
			perror("floor: seccomp");
			_exit(126);
		}
		if (write(sv[1], &fd, sizeof fd) != sizeof fd)
			_exit(126);
		char c;
		if (read(go[0], &c, 1) != 1)
			_exit(126);
		close(fd);
		// In a session of its own, as paddock starts its agent without a
		// terminal: where the kernel groups each session for the scheduler
		// (autogroup), the floor's supervisor then shares its caller's
		// group, and the command has one of its own, as under paddock.
		setsid();
		execvp(argv[1], argv + 1);
		perror("floor: exec");
		_exit(127);
	}
	int childfd;
	if (read(sv[0], &childfd, sizeof childfd) != sizeof childfd) {
		fprintf(stderr, "floor: child failed before installing the filter\n");
		return 1;
	}
	int pidfd = syscall(SYS_pidfd_open, child, 0);
	int listener = pidfd < 0 ? -1 : syscall(SYS_pidfd_getfd, pidfd, childfd, 0);
	if (listener < 0) {
		perror("floor: pidfd_getfd");
		return 1;
	}
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP))
		perror("floor: sync wake-up unavailable");
	if (write(go[1], "g", 1) != 1)
		return 1;
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;
	for (;;) {
		memset(&req, 0, sizeof req);
		if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req)) {
			if (errno == EINTR)
				continue;
			if (errno == ENOENT) {
				int st;
				pid_t r = waitpid(child, &st, WNOHANG);
				if (r == child)
					return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
				continue;
			}
			perror("floor: NOTIF_RECV");
			break;
		}
		memset(&resp, 0, sizeof resp);
		resp.id = req.id;
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) && errno != ENOENT)
			perror("floor: NOTIF_SEND");
	}
	int st;
	waitpid(child, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
