//go:build ignore

/*
 * syscost: the unit costs behind one paddock decision, measured on this
 * machine, so that docs/perf.md can say where a supervised kill's time goes.
 *
 *   syscost [N]   (default 20000 iterations per line)
 *
 * Prints ns per operation for: a trivial syscall (getppid); kill(child,
 * SIGCONT) bare; pidfd_open + close; pidfd_send_signal(pidfd, 0); reading
 * /proc/CHILD/stat the way internal/procfs does (open, read until EOF,
 * close) and with a single read; and a same-CPU pipe ping-pong between two
 * processes (two context switches per round trip, the floor of any
 * user-space supervisor's answer).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void on_cont(int sig) { (void)sig; }

static void fail(const char *what)
{
	perror(what);
	exit(1);
}

#define TIME(label, n, body)                                              \
	do {                                                              \
		double t0_ = now_ns();                                    \
		for (long i_ = 0; i_ < (n); i_++) {                       \
			body;                                             \
		}                                                         \
		printf("%-44s %10.1f ns/op\n", label, (now_ns() - t0_) / (double)(n)); \
	} while (0)

int main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 20000;
	if (n <= 0) {
		fprintf(stderr, "usage: syscost [N]\n");
		return 2;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_cont;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGCONT, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);

	pid_t child = fork();
	if (child < 0)
		fail("fork");
	if (child == 0)
		for (;;)
			pause();

	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)child);

	TIME("getppid (syscall floor)", n, syscall(SYS_getppid));
	TIME("kill(child, SIGCONT)", n, if (kill(child, SIGCONT) != 0) fail("kill"));
	TIME("pidfd_open + close", n, {
		int fd = (int)syscall(SYS_pidfd_open, child, 0);
		if (fd < 0)
			fail("pidfd_open");
		close(fd);
	});
	int pfd = (int)syscall(SYS_pidfd_open, child, 0);
	if (pfd < 0)
		fail("pidfd_open");
	TIME("pidfd_send_signal(pidfd, 0)", n,
	     if (syscall(SYS_pidfd_send_signal, pfd, 0, NULL, 0) != 0) fail("pidfd_send_signal"));
	TIME("/proc/PID/stat: open, read to EOF, close", n, {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			fail("open");
		while (read(fd, buf, sizeof buf) > 0)
			;
		close(fd);
	});
	TIME("/proc/PID/stat: open, one read, close", n, {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			fail("open");
		if (read(fd, buf, sizeof buf) <= 0)
			fail("read");
		close(fd);
	});
	int sfd = open(path, O_RDONLY | O_CLOEXEC);
	if (sfd < 0)
		fail("open");
	TIME("/proc/PID/stat: pread on a kept fd", n,
	     if (pread(sfd, buf, sizeof buf, 0) <= 0) fail("pread"));
	close(sfd);

	/* Same-CPU ping-pong: both ends pinned to CPU 0. */
	int ab[2], ba[2];
	if (pipe(ab) != 0 || pipe(ba) != 0)
		fail("pipe");
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	pid_t echo = fork();
	if (echo < 0)
		fail("fork");
	if (echo == 0) {
		close(ab[1]);
		close(ba[0]);
		sched_setaffinity(0, sizeof set, &set);
		char c;
		while (read(ab[0], &c, 1) == 1)
			if (write(ba[1], &c, 1) != 1)
				_exit(1);
		_exit(0);
	}
	close(ab[0]);
	close(ba[1]);
	sched_setaffinity(0, sizeof set, &set);
	char c = 'x';
	for (int i = 0; i < 100; i++)
		if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
			fail("pipe warm-up");
	TIME("pipe ping-pong round trip, same CPU", n, {
		if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
			fail("pipe");
	});
	close(ab[1]);
	waitpid(echo, NULL, 0);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	return 0;
}
