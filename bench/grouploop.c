//go:build ignore

/*
 * grouploop: measures the cost of a signal to a whole process group against
 * a signal to one process, in the same run, the way an agent's tools send
 * them (GNU timeout's kill(0), a shell's kill %1, os.killpg).
 *
 *   grouploop [N]    N back-to-back calls of each kind (default 20000);
 *                    prints one line:
 *                    single_ns=... zero_ns=... pgid_ns=... root_zero_ns=...
 *
 * The process forks a worker that makes a process group of its own and
 * forks two children: one in the worker's group, one in a group of its own.
 * The worker then times, each with SIGCONT (caught by an empty handler, so
 * every call is a real delivery that wakes its receivers harmlessly):
 *
 *   single   kill(child, SIGCONT): one owned process;
 *   zero     kill(0, SIGCONT): the worker's own group (itself and a child);
 *   pgid     kill(-pgid, SIGCONT): the other child's group.
 *
 * and the first process times root_zero, kill(0, SIGCONT) of its own group
 * (under paddock run it is the agent root, which leads its own session).
 * Signal 0 is never used: paddock answers it in its BPF filter. A failed
 * call in the worker makes the program exit 1; a refused root_zero is
 * printed as root_zero_ns=refused.
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

static pid_t spawn_pauser(int own_group)
{
	pid_t p = fork();
	if (p < 0) {
		perror("grouploop: fork");
		exit(1);
	}
	if (p == 0) {
		if (own_group && setpgid(0, 0) != 0) {
			perror("grouploop: setpgid");
			_exit(1);
		}
		for (;;)
			pause();
	}
	if (own_group)
		setpgid(p, p); /* both sides, so that it holds before the first kill */
	return p;
}

/* timed runs n calls of kill(target, SIGCONT) after a warm-up and returns
 * the mean cost in ns, or -1 when a call fails (with a message). */
static double timed(const char *what, pid_t target, long n)
{
	for (long i = 0; i < 100; i++)
		if (kill(target, SIGCONT) == -1)
			goto fail;
	double t0 = now_ns();
	for (long i = 0; i < n; i++)
		if (kill(target, SIGCONT) == -1)
			goto fail;
	return (now_ns() - t0) / (double)n;
fail:
	fprintf(stderr, "grouploop: %s: kill(%d, SIGCONT) failed: %s\n", what, (int)target, strerror(errno));
	return -1;
}

int main(int argc, char **argv)
{
	long n = 20000;
	if (argc > 1) {
		char *end;
		n = strtol(argv[1], &end, 10);
		if (*end != '\0' || n <= 0) {
			fprintf(stderr, "usage: grouploop [N]\n");
			return 2;
		}
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_cont;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGCONT, &sa, NULL) != 0) {
		perror("grouploop: sigaction");
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	int out[2];
	if (pipe(out) != 0) {
		perror("grouploop: pipe");
		return 1;
	}
	pid_t worker = fork();
	if (worker < 0) {
		perror("grouploop: fork");
		return 1;
	}
	if (worker == 0) {
		close(out[0]);
		if (setpgid(0, 0) != 0) {
			perror("grouploop: worker setpgid");
			_exit(1);
		}
		pid_t member = spawn_pauser(0);
		pid_t other = spawn_pauser(1);
		double single = timed("single", member, n);
		double zero = timed("zero", 0, n);
		double pgid = timed("pgid", -other, n);
		int failed = single < 0 || zero < 0 || pgid < 0;
		kill(member, SIGKILL);
		kill(other, SIGKILL);
		waitpid(member, NULL, 0);
		waitpid(other, NULL, 0);
		if (failed)
			_exit(1);
		dprintf(out[1], "single_ns=%.1f zero_ns=%.1f pgid_ns=%.1f", single, zero, pgid);
		_exit(0);
	}
	close(out[1]);
	char buf[256];
	ssize_t got = 0, r;
	while ((r = read(out[0], buf + got, sizeof buf - 1 - (size_t)got)) > 0)
		got += r;
	buf[got] = '\0';
	int st;
	if (waitpid(worker, &st, 0) != worker || !WIFEXITED(st) || WEXITSTATUS(st) != 0 || got == 0) {
		fprintf(stderr, "grouploop: the worker failed\n");
		return 1;
	}
	/* An older paddock refuses this one (the agent root shared paddock's
	 * group): reported as refused, not a failure of the run. */
	double root_zero = timed("root_zero", 0, n);
	if (root_zero < 0)
		printf("%s root_zero_ns=refused\n", buf);
	else
		printf("%s root_zero_ns=%.1f\n", buf, root_zero);
	return 0;
}
