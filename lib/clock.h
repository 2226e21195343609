/* SPDX-License-Identifier: ISC */
/*
 * clock: the one clock pglock's timers and messages read, monotonic, so
 * that setting the wall clock moves no deadline.
 */
#ifndef PGLOCK_CLOCK_H
#define PGLOCK_CLOCK_H

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

#endif
