//go:build ignore

/*
 * openloop: measures opens for writing of an existing file, the calls the
 * default wall traps and paddock carries out for its caller (issue 35).
 *
 *   openloop [N] [PATH]   N cycles (default 5000) of open(PATH,
 *                         O_WRONLY|O_CREAT|O_TRUNC) and close; PATH
 *                         defaults to a file in a directory of its own
 *                         (mkdtemp under $TMPDIR or /tmp), removed at the
 *                         end; prints ns_per_open=<float> n=N
 *
 * Any call that fails makes the program exit 1.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 5000;
	char dir[4096] = "", path[4200];
	if (argc > 2) {
		snprintf(path, sizeof path, "%s", argv[2]);
	} else {
		const char *tmp = getenv("TMPDIR");
		snprintf(dir, sizeof dir, "%s/openloop.XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(dir)) {
			perror("openloop: mkdtemp");
			return 1;
		}
		snprintf(path, sizeof path, "%s/f", dir);
	}
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < n; i++) {
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0) {
			perror("openloop: open");
			return 1;
		}
		close(fd);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("ns_per_open=%.1f n=%d\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n, n);
	if (*dir) {
		unlink(path);
		rmdir(dir);
	}
	return 0;
}
