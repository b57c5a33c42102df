//go:build ignore

/*
 * execloop: measures one trapped execve round trip, the exec guard's
 * decision path without the cost of running anything: each call execs a
 * path that does not exist, so the kernel answers ENOENT once the
 * supervisor has let the call through.
 *
 *   execloop [N]          N back-to-back calls (default 20000);
 *                         prints ns_per_op=<float>
 *
 * argv is {"true", "--version"}, as a shell would pass a command. Any call
 * that does not fail with ENOENT makes the program exit 1.
 * Build: gcc -O2 -Wall -o bench/out/execloop bench/execloop.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void one(long i)
{
	char *av[] = {"true", "--version", NULL};
	if (execve("/nonexistent/true", av, environ) != -1 || errno != ENOENT) {
		fprintf(stderr, "execloop: call #%ld: %s\n", i, strerror(errno));
		exit(1);
	}
}

int main(int argc, char **argv)
{
	long n = 20000;
	if (argc > 1) {
		char *end;
		n = strtol(argv[1], &end, 10);
		if (*end != '\0' || n <= 0) {
			fprintf(stderr, "usage: execloop [N]\n");
			return 2;
		}
	}
	for (long i = 0; i < 100; i++) /* warm up */
		one(i);
	double t0 = now_ns();
	for (long i = 0; i < n; i++)
		one(i);
	printf("ns_per_op=%.1f\n", (now_ns() - t0) / (double)n);
	return 0;
}
