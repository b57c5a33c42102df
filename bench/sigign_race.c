//go:build ignore

/*
 * sigign_race: the race behind CPython's
 * test_signal.StressTest.test_stress_modifying_handlers, without Python
 * (docs/limits.md, "A signal to oneself can fail with EINTR").
 *
 *   sigign_race N GAP_C_NS GAP_IGN_NS
 *
 * The main thread swaps SIGUSR1 between a counting handler and SIG_IGN in a
 * loop, spinning GAP_C_NS after installing the handler and GAP_IGN_NS after
 * SIG_IGN. A second thread spins a pseudo-random 0-20 us, then raise(SIGUSR1),
 * N times. Setting SIG_IGN discards a pending SIGUSR1, so a raise reaches the
 * handler only when the raising thread takes its signal off its queue before
 * the main thread's next sigaction. Prints raises= delivered= ns_per_cycle=.
 *
 * Built with -shared -fPIC the same file gives delayed_raise(sig, ns) for
 * ctypes: spin ns nanoseconds (ctypes has released the GIL), then raise(sig).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile long delivered, stop;
static long n;

static uint64_t now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void spin(long ns)
{
	uint64_t end = now() + (uint64_t)ns;
	while (now() < end)
		;
}

int delayed_raise(int sig, long ns)
{
	spin(ns);
	return raise(sig);
}

static void handler(int sig)
{
	(void)sig;
	delivered++;
}

static void *sender(void *arg)
{
	unsigned r = 1;
	(void)arg;
	for (long i = 0; i < n; i++) {
		r = r * 1103515245u + 12345u;
		delayed_raise(SIGUSR1, (long)(r % 20000));
	}
	stop = 1;
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: sigign_race N GAP_C_NS GAP_IGN_NS\n");
		return 2;
	}
	n = atol(argv[1]);
	long gap_c = atol(argv[2]), gap_ign = atol(argv[3]);
	struct sigaction c = {.sa_handler = handler, .sa_flags = SA_ONSTACK};
	struct sigaction ign = {.sa_handler = SIG_IGN, .sa_flags = SA_ONSTACK};
	pthread_t t;
	long cycles = 0;

	sigaction(SIGUSR1, &c, NULL);
	uint64_t t0 = now();
	if (pthread_create(&t, NULL, sender, NULL) != 0)
		return 1;
	while (!stop) {
		sigaction(SIGUSR1, &c, NULL);
		spin(gap_c);
		sigaction(SIGUSR1, &ign, NULL);
		spin(gap_ign);
		cycles++;
	}
	pthread_join(t, NULL);
	printf("raises=%ld delivered=%ld ns_per_cycle=%.0f gap_c_ns=%ld gap_ign_ns=%ld\n", n,
	       delivered, (double)(now() - t0) / (double)cycles, gap_c, gap_ign);
	return 0;
}
