/* SPDX-License-Identifier: ISC */
/*
 * clock: the one clock pglock's timers and messages read, monotonic, so
 * that setting the wall clock moves no deadline; and the one deadline type,
 * mono_t, with every sum and difference of times and the one clamp to
 * poll()'s int. Nothing outside adds to mono_ms() or subtracts from it.
 */
#ifndef PGLOCK_CLOCK_H
#define PGLOCK_CLOCK_H

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <time.h>

/*
 * A time on the monotonic clock in ms: a start, or a deadline (NEVER: none).
 * 64 bits: a long would wrap after 24.8 days of uptime on 32-bit machines.
 */
typedef int64_t mono_t;
#define NEVER ((mono_t)-1)

/* Seconds since an arbitrary start: for intervals only. */
static inline double
mono_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The same clock in whole milliseconds. */
static inline mono_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (mono_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The pure forms, of a given now (tests/unit_clock.c runs them past 2^31). */

/* ms after t; ms below 0: NEVER. */
static inline mono_t
mono_after(mono_t t, int64_t ms)
{
	return ms < 0 ? NEVER : t + ms;
}

/* What is left from now until by: 0 once it came, -1 for NEVER. */
static inline int64_t
mono_left(mono_t by, mono_t now)
{
	if (by == NEVER)
		return -1;
	return by > now ? by - now : 0;
}

/* The same as poll()'s timeout: -1, or 0 to INT_MAX. */
static inline int
mono_poll(mono_t by, mono_t now)
{
	int64_t left = mono_left(by, now);

	return left > INT_MAX ? INT_MAX : (int)left;
}

/* The earlier of two deadlines; NEVER is the latest. */
static inline mono_t
mono_min(mono_t a, mono_t b)
{
	if (a == NEVER)
		return b;
	return b == NEVER || a < b ? a : b;
}

/* The same, of now. */

/* The deadline ms from now (ms below 0: NEVER). */
static inline mono_t
deadline_in(int64_t ms)
{
	return mono_after(mono_ms(), ms);
}

/* What is left until by: 0 once it came, -1 for NEVER. */
static inline int64_t
deadline_left(mono_t by)
{
	return mono_left(by, mono_ms());
}

/*
 * What is left until by (not NEVER) as the bound of a wait: 1 ms at least,
 * so that an answer due now is still given a moment.
 */
static inline long
bound_left(mono_t by)
{
	int64_t left = deadline_left(by);

	return left > LONG_MAX ? LONG_MAX : left > 1 ? (long)left : 1;
}

/* Has by come (never, for NEVER)? */
static inline int
deadline_passed(mono_t by)
{
	return by != NEVER && mono_ms() >= by;
}

/* What is left until by as poll()'s timeout: -1 for NEVER. */
static inline int
poll_ms(mono_t by)
{
	return mono_poll(by, mono_ms());
}

/* ms since t0. */
static inline int64_t
ms_since(mono_t t0)
{
	return mono_ms() - t0;
}

/* What is left until by as pselect()'s timeout, in *ts: ts; NULL for NEVER. */
static inline struct timespec *
deadline_ts(mono_t by, struct timespec *ts)
{
	int64_t d = deadline_left(by);

	if (by == NEVER)
		return NULL;
	ts->tv_sec = (time_t)(d / 1000);
	ts->tv_nsec = (long)(d % 1000) * 1000000;
	return ts;
}

/* Sleep until by, EINTR or not: a signal keeps its action. */
static inline void
sleep_until(mono_t by)
{
	struct timespec ts;

	if (by == NEVER || deadline_left(by) <= 0)
		return;
	(void)deadline_ts(by, &ts);
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* Sleep ms: a pass of a loop that looks again. */
static inline void
sleep_ms(int64_t ms)
{
	sleep_until(deadline_in(ms));
}

#endif
