//go:build ignore

/*
 * storm: a refusal storm. THREADS threads call kill(PID, SIGTERM) in a
 * tight loop, CALLS calls in all, and every return is counted.
 *
 *   storm PID THREADS CALLS [eperm|ok]
 *
 * Under `paddock run`, PID is a process the agent does not own, so every
 * call must fail with EPERM (the default expectation); "ok" is for a bare
 * run against a process of one's own that ignores SIGTERM. SIGTERM is used
 * so that nothing is harmed if a refusal fails. Signal 0 is never used:
 * paddock answers it in its BPF filter without a refusal.
 *
 * Prints one line of key=value pairs on stdout:
 *   threads calls eperm ok esrch other   what every call returned
 *   wall_s per_s                          the storm, from the threads' common
 *                                         start to the last one's end
 *   self_cpu_s                            this process's CPU time (all threads)
 *   parent_pid parent_comm                the parent (paddock, when storm is
 *                                         the agent itself)
 *   parent_cpu_s                          the parent's utime+stime during the
 *                                         storm (/proc/PPID/stat)
 *   parent_hwm_kb                         the parent's VmHWM after the storm
 * Exits 1 when any call returned something other than expected.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

struct worker {
	pthread_t th;
	long n;
	long eperm, ok, esrch, other;
	int first_other; /* first unexpected errno, for the error line */
};

static pid_t target;
static pthread_barrier_t start;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	pthread_barrier_wait(&start);
	for (long i = 0; i < w->n; i++) {
		if (kill(target, SIGTERM) == 0) {
			w->ok++;
			continue;
		}
		switch (errno) {
		case EPERM:
			w->eperm++;
			break;
		case ESRCH:
			w->esrch++;
			break;
		default:
			if (w->other++ == 0)
				w->first_other = errno;
		}
	}
	return NULL;
}

/* parent_stat reads the parent's comm and utime+stime (in seconds); -1 when
 * it cannot. */
static double parent_stat(pid_t ppid, char *comm, size_t commlen)
{
	char path[64], buf[4096];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)ppid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t len = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[len] = 0;
	char *open = strchr(buf, '('), *close = strrchr(buf, ')');
	if (!open || !close || close < open)
		return -1;
	if (comm) {
		size_t cl = (size_t)(close - open - 1);
		if (cl >= commlen)
			cl = commlen - 1;
		memcpy(comm, open + 1, cl);
		comm[cl] = 0;
		for (char *c = comm; *c; c++)
			if (*c == ' ' || *c == '=')
				*c = '_'; /* keep the key=value line parseable */
	}
	/* After ") ": state(3) ppid(4) pgrp(5) session(6) tty_nr(7) tpgid(8)
	 * flags(9) minflt(10) cminflt(11) majflt(12) cmajflt(13) utime(14)
	 * stime(15). */
	unsigned long long utime, stime;
	if (sscanf(close + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2)
		return -1;
	return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

static long parent_hwm_kb(pid_t ppid)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/status", (int)ppid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	long kb = -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

int main(int argc, char **argv)
{
	if (argc < 4 || argc > 5) {
		fprintf(stderr, "usage: storm PID THREADS CALLS [eperm|ok]\n");
		return 2;
	}
	target = (pid_t)strtol(argv[1], NULL, 10);
	long threads = strtol(argv[2], NULL, 10), calls = strtol(argv[3], NULL, 10);
	int expect_ok = argc == 5 && strcmp(argv[4], "ok") == 0;
	if (argc == 5 && !expect_ok && strcmp(argv[4], "eperm") != 0) {
		fprintf(stderr, "storm: expectation must be eperm or ok, not %s\n", argv[4]);
		return 2;
	}
	/* Never pid <= 1: kill(0), kill(-1) and kill(1) are not what this measures. */
	if (target <= 1 || threads <= 0 || calls < threads) {
		fprintf(stderr, "storm: need PID > 1, THREADS > 0 and CALLS >= THREADS\n");
		return 2;
	}

	struct worker *ws = calloc((size_t)threads, sizeof *ws);
	if (!ws) {
		perror("calloc");
		return 1;
	}
	pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
	for (long i = 0; i < threads; i++) {
		ws[i].n = calls / threads + (i < calls % threads ? 1 : 0);
		int err = pthread_create(&ws[i].th, NULL, run, &ws[i]);
		if (err) {
			fprintf(stderr, "storm: pthread_create: %s\n", strerror(err));
			return 1;
		}
	}

	pid_t ppid = getppid();
	char comm[64] = "?";
	double pcpu0 = parent_stat(ppid, comm, sizeof comm);
	pthread_barrier_wait(&start);
	double t0 = now_s();
	for (long i = 0; i < threads; i++)
		pthread_join(ws[i].th, NULL);
	double wall = now_s() - t0;
	double pcpu1 = parent_stat(ppid, NULL, 0);
	long hwm = parent_hwm_kb(ppid);

	long eperm = 0, ok = 0, esrch = 0, other = 0;
	int first_other = 0;
	for (long i = 0; i < threads; i++) {
		eperm += ws[i].eperm;
		ok += ws[i].ok;
		esrch += ws[i].esrch;
		if (ws[i].other && !first_other)
			first_other = ws[i].first_other;
		other += ws[i].other;
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double self_cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
			  (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;

	printf("threads=%ld calls=%ld eperm=%ld ok=%ld esrch=%ld other=%ld wall_s=%.6f per_s=%.0f "
	       "self_cpu_s=%.2f parent_pid=%d parent_comm=%s parent_cpu_s=%.2f parent_hwm_kb=%ld\n",
	       threads, eperm + ok + esrch + other, eperm, ok, esrch, other, wall, (double)calls / wall,
	       self_cpu, (int)ppid, comm, pcpu0 >= 0 && pcpu1 >= 0 ? pcpu1 - pcpu0 : -1.0, hwm);
	fflush(stdout);

	long expected = expect_ok ? ok : eperm;
	if (expected != calls || eperm + ok + esrch + other != calls) {
		fprintf(stderr, "storm: %ld of %ld calls did not return %s (ok=%ld eperm=%ld esrch=%ld other=%ld, first other errno %d: %s)\n",
			calls - expected, calls, expect_ok ? "0" : "EPERM", ok, eperm, esrch, other,
			first_other, first_other ? strerror(first_other) : "-");
		return 1;
	}
	return 0;
}
