//go:build ignore

/*
 * connloop: measures socket connects, the calls paddock traps when their
 * address is not an IPv4 or IPv6 one (issue 35).
 *
 *   connloop [N] [tcp|unix|both]   N cycles of each kind (default 5000,
 *                                  both); prints one line per kind:
 *                                  kind=tcp ns_per_connect=<float> n=N
 *
 * A cycle is socket(), connect() to a listener of this process's own, a
 * one-byte read of what the listener sends once it has accepted (so the
 * accept is part of every cycle and no backlog builds up), and close().
 * The listener is a thread that accepts, writes the byte and closes.
 *   tcp:  127.0.0.1 on a port the kernel picks (a 16-byte sockaddr_in,
 *         decided in the filter); the client closes with SO_LINGER 0, so
 *         no TIME_WAIT socket is left to use up the loopback's ports;
 *   unix: a pathname socket in a directory of its own (mkdtemp under
 *         $TMPDIR or /tmp), removed at the end.
 * Any call that fails makes the program exit 1.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what)
{
	fprintf(stderr, "connloop: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

struct server {
	int fd;
	long n;
};

/* serve accepts n connections, writing one byte to each and closing it. */
static void *serve(void *arg)
{
	struct server *s = arg;
	for (long i = 0; i < s->n; i++) {
		int c = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			die("accept");
		if (write(c, "x", 1) != 1)
			die("write");
		close(c);
	}
	return NULL;
}

/*
 * run times n cycles against a listener bound to addr (len bytes) of
 * family fam, and prints the kind's line.
 */
static void run(const char *kind, int fam, struct sockaddr *addr, socklen_t len, long n)
{
	int l = socket(fam, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0)
		die("socket (listener)");
	if (bind(l, addr, len) < 0)
		die("bind");
	if (listen(l, 128) < 0)
		die("listen");
	if (getsockname(l, addr, &len) < 0)
		die("getsockname");
	struct server s = {l, n};
	pthread_t th;
	if ((errno = pthread_create(&th, NULL, serve, &s)) != 0)
		die("pthread_create");
	struct linger lg = {1, 0};
	double t0 = now_ns();
	for (long i = 0; i < n; i++) {
		int c = socket(fam, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (c < 0)
			die("socket");
		if (connect(c, addr, len) < 0)
			die("connect");
		char b;
		if (read(c, &b, 1) != 1)
			die("read");
		if (fam == AF_INET && setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof lg) < 0)
			die("setsockopt(SO_LINGER)");
		close(c);
	}
	double t1 = now_ns();
	if ((errno = pthread_join(th, NULL)) != 0)
		die("pthread_join");
	close(l);
	printf("kind=%s ns_per_connect=%.1f n=%ld\n", kind, (t1 - t0) / (double)n, n);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 5000;
	const char *which = argc > 2 ? argv[2] : "both";
	int tcp = !strcmp(which, "tcp") || !strcmp(which, "both");
	int unx = !strcmp(which, "unix") || !strcmp(which, "both");
	if (n <= 0 || (!tcp && !unx)) {
		fprintf(stderr, "usage: connloop [N > 0] [tcp|unix|both], got %s %s\n",
			argc > 1 ? argv[1] : "", which);
		return 2;
	}
	if (tcp) {
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		run("tcp", AF_INET, (struct sockaddr *)&a, sizeof a, n);
	}
	if (unx) {
		const char *tmp = getenv("TMPDIR");
		char dir[sizeof(((struct sockaddr_un *)0)->sun_path) - 8];
		if (snprintf(dir, sizeof dir, "%s/connloop.XXXXXX", tmp && *tmp ? tmp : "/tmp") >= (int)sizeof dir) {
			fprintf(stderr, "connloop: TMPDIR %s is too long for a socket path\n", tmp);
			return 2;
		}
		if (!mkdtemp(dir))
			die("mkdtemp");
		struct sockaddr_un a = {.sun_family = AF_UNIX};
		snprintf(a.sun_path, sizeof a.sun_path, "%s/s", dir);
		run("unix", AF_UNIX, (struct sockaddr *)&a, sizeof a, n);
		unlink(a.sun_path);
		rmdir(dir);
	}
	return 0;
}
