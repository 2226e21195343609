/* SPDX-License-Identifier: ISC */
/*
 * arg: parse the values of command-line options (durations, bounded
 * integers, signal names) strictly: no trailing garbage, no overflow.
 */
#ifndef PGLOCK_ARG_H
#define PGLOCK_ARG_H

#include "err.h"

/* Longest duration accepted, in milliseconds (what lock_timeout can hold). */
#define ARG_MAX_MS 2147483647L

/*
 * Parse SECS, a non-negative decimal number of seconds with an optional
 * fraction, into milliseconds rounded up (so 0.0001 is 1 ms, never 0).
 * Returns 0, or -1 with the reason in err.
 */
int arg_duration_ms(const char *s, long *ms, struct err *err);

/*
 * Parse a period: SECS as arg_duration_ms() takes them, or a number with
 * a unit s, m, h or d (5m, 1.5h, 1d), into milliseconds. Returns 0, or -1
 * with the reason in err.
 */
int arg_period_ms(const char *s, long long *ms, struct err *err);

/* Parse a decimal integer in [lo, hi]. Returns 0, or -1 with the reason. */
int arg_long(const char *s, long lo, long hi, long *out, struct err *err);

/*
 * Parse a signal given as a name (TERM, SIGTERM, any case) or a number.
 * Returns 0, or -1 with the reason in err.
 */
int arg_signal(const char *s, int *sig, struct err *err);

#endif
