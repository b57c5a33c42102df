//go:build ignore

/*
 * killloop: measures the cost of kill(2) on an owned child, the syscall
 * paddock traps and decides in user space.
 *
 *   killloop [N]          hot loop: N back-to-back kill(child, SIGCONT)
 *                         (default 20000); prints ns_per_op=<float>
 *   killloop [N] spaced   the same calls spaced 300 us apart (nanosleep);
 *                         prints p50_us, p99_us (and min/max) of each call
 *
 * The child is a fork of this process (so under paddock it is owned) that
 * blocks in pause(); SIGCONT is caught by an empty handler, so every kill is
 * a real delivery that wakes it harmlessly. Signal 0 is never used: paddock
 * answers it in its BPF filter, so it would not measure the decision path.
 * Any kill() that fails makes the program exit 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void on_cont(int sig) { (void)sig; }

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static pid_t child;

static void stop_child(void)
{
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		child = 0;
	}
}

static void die_kill(long i)
{
	int e = errno;
	fprintf(stderr, "killloop: kill(%d, SIGCONT) #%ld failed: %s\n", (int)child, i, strerror(e));
	stop_child();
	exit(1);
}

int main(int argc, char **argv)
{
	long n = 20000;
	int spaced = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "spaced") == 0) {
			spaced = 1;
		} else {
			char *end;
			n = strtol(argv[i], &end, 10);
			if (*end != '\0' || n <= 0) {
				fprintf(stderr, "usage: killloop [N] [spaced]\n");
				return 2;
			}
		}
	}

	/* Installed before fork, so the child inherits it: SIGCONT's default
	 * action is harmless anyway, but a handler makes each delivery wake the
	 * child and run code in it, as a real workload's signals would. */
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_cont;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGCONT, &sa, NULL) != 0) {
		perror("killloop: sigaction");
		return 1;
	}

	child = fork();
	if (child < 0) {
		perror("killloop: fork");
		return 1;
	}
	if (child == 0) {
		for (;;)
			pause();
	}

	/* Warm up (page faults, first decisions, caches). */
	for (long i = 0; i < 100; i++)
		if (kill(child, SIGCONT) == -1)
			die_kill(i);

	if (!spaced) {
		double t0 = now_ns();
		for (long i = 0; i < n; i++)
			if (kill(child, SIGCONT) == -1)
				die_kill(i);
		double t1 = now_ns();
		printf("ns_per_op=%.1f\n", (t1 - t0) / (double)n);
	} else {
		double *lat = malloc(sizeof(double) * (size_t)n);
		if (lat == NULL) {
			perror("killloop: malloc");
			stop_child();
			return 1;
		}
		struct timespec gap = {0, 300 * 1000};
		for (long i = 0; i < n; i++) {
			nanosleep(&gap, NULL);
			double t0 = now_ns();
			int r = kill(child, SIGCONT);
			double t1 = now_ns();
			if (r == -1)
				die_kill(i);
			lat[i] = (t1 - t0) / 1e3;
		}
		qsort(lat, (size_t)n, sizeof(double), cmp_double);
		long i50 = (n * 50) / 100, i99 = (n * 99) / 100;
		if (i99 >= n)
			i99 = n - 1;
		printf("p50_us=%.2f p99_us=%.2f min_us=%.2f max_us=%.2f n=%ld\n",
		       lat[i50], lat[i99], lat[0], lat[n - 1], n);
		free(lat);
	}
	stop_child();
	return 0;
}
