/* SPDX-License-Identifier: ISC */
/*
 * rmw: the critical section of the contended benchmarks. A deliberately
 * non-atomic read-increment-write of a counter file, so that any lapse in
 * mutual exclusion loses an increment, and the start and end times
 * (CLOCK_MONOTONIC, ns) appended to a log, from which run.sh derives the
 * handoff latency between one holder's exit and the next one's start.
 *
 *	usage: rmw COUNTER LOG
 *
 * Copyright (c) 2026 The pglock authors. Permission to use, copy, modify
 * and distribute this software for any purpose is granted under the terms
 * of the ISC licence in COPYING.
 */
#include <err.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int
main(int argc, char **argv)
{
	char buf[64];
	long long start, n;
	ssize_t len;
	int fd;

	start = now_ns();
	if (argc != 3) {
		fputs("usage: rmw COUNTER LOG\n", stderr);
		return 64;
	}
	if ((fd = open(argv[1], O_RDWR)) == -1)
		err(1, "%s", argv[1]);
	memset(buf, 0, sizeof(buf));
	if (read(fd, buf, sizeof(buf) - 1) == -1)
		err(1, "%s", argv[1]);
	n = strtoll(buf, NULL, 10);
	/* Read, then write back later: a second holder would lose a count. */
	len = snprintf(buf, sizeof(buf), "%lld\n", n + 1);
	if (pwrite(fd, buf, (size_t)len, 0) != len || close(fd) == -1)
		err(1, "%s", argv[1]);

	if ((fd = open(argv[2], O_WRONLY | O_APPEND | O_CREAT, 0644)) == -1)
		err(1, "%s", argv[2]);
	len = snprintf(buf, sizeof(buf), "%lld %lld\n", start, now_ns());
	if (write(fd, buf, (size_t)len) != len || close(fd) == -1)
		err(1, "%s", argv[2]);
	return 0;
}
