/* SPDX-License-Identifier: ISC */
/*
 * clock: the one clock pglock's timers and messages read, monotonic, so
 * that setting the wall clock moves no deadline.
 */
#ifndef PGLOCK_CLOCK_H
#define PGLOCK_CLOCK_H

#include <errno.h>
#include <limits.h>
#include <time.h>

/* Seconds since an arbitrary start: for intervals only. */
static inline double
mono_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The same clock in whole milliseconds, for poll() deadlines. */
static inline long
mono_ms(void)
{
	return (long)(mono_seconds() * 1000);
}

/* What is left until by (mono_ms(); -1: never), as poll()'s timeout. */
static inline int
poll_ms(long by)
{
	long left;

	if (by < 0)
		return -1;
	left = by - mono_ms();
	return left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
}

/* Sleep until mono_ms() reaches t, EINTR or not: a signal keeps its action. */
static inline void
sleep_until(long t)
{
	struct timespec ts;
	long d = t - mono_ms();

	if (d <= 0)
		return;
	ts.tv_sec = d / 1000;
	ts.tv_nsec = d % 1000 * 1000000;
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

#endif
