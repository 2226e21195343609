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
 * SECS, non-negative decimal seconds with an optional fraction, into ms rounded
 * up (0.0001 is 1 ms, not 0): 0, or -1 with the reason in err.
 */
int arg_duration_ms(const char *s, long *ms, struct err *err);

/*
 * A period, SECS as arg_duration_ms() takes them or a number with a unit s, m,
 * h or d (5m, 1.5h, 1d), into ms: 0, or -1 with the reason in err.
 */
int arg_period_ms(const char *s, long long *ms, struct err *err);

/*
 * A span of a schedule or a pause (--once-per, --after, --ok-within, ...): a
 * period as arg_period_ms() takes it, but with its unit (a bare number but 0
 * is refused, naming the forms it may have meant): 0, or -1 (reason in err).
 */
int arg_span_ms(const char *s, long long *ms, struct err *err);

/*
 * A time for an option of seconds (-w, --max-time, ...): a period as
 * arg_period_ms() takes it, at most ARG_MAX_MS: 0, or -1 (reason in err).
 */
int arg_time_ms(const char *s, long *ms, struct err *err);

/* Parse a decimal integer in [lo, hi]. Returns 0, or -1 with the reason. */
int arg_long(const char *s, long lo, long hi, long *out, struct err *err);

/*
 * A size in bytes: a decimal number, or one with k or K (1024 bytes), from 1 to
 * max: 0, or -1 with the reason in err.
 */
int arg_size(const char *s, long max, long *out, struct err *err);

/* Signal name (TERM, SIGTERM, any case) or number: 0, or -1, reason in err. */
int arg_signal(const char *s, int *sig, struct err *err);

#endif
