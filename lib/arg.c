/* SPDX-License-Identifier: ISC */
/*
 * arg: strict parsers for option values. Every function accepts the whole
 * string or nothing, so "5s", "1e3" or " 7" are errors, not 5, 1000 or 7.
 */
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "arg.h"

/*
 * "DIGITS[.DIGITS]" (by hand: strtod would take "inf", "nan", hex and
 * exponents) times unit_ms, into *ms: exact to a billionth of the unit,
 * then rounded up to a ms, so that 0.0001 is not 0 and 0.0001d is 8640.
 * 0; -1 if s is no such number; 1 if its whole part passes max.
 */
static int
decimal_ms(const char *s, long long unit_ms, long long max, long long *ms)
{
	const char *p = s;
	long long whole = 0, frac = 0, scale = 100000000;
	int digits = 0, rest = 0;

	for (; isdigit((unsigned char)*p); p++, digits++) {
		if (whole > max)
			return 1;
		whole = whole * 10 + (*p - '0');
	}
	for (p += *p == '.'; isdigit((unsigned char)*p); p++, digits++) {
		if (scale > 0) {
			frac += (*p - '0') * scale;
			scale /= 10;
		} else if (*p != '0') {
			rest = 1;
		}
	}
	if (digits == 0 || *p != '\0')
		return -1;
	if (whole > max)
		return 1;
	*ms = whole * unit_ms + ((frac + rest) * unit_ms + 999999999) /
	    1000000000;
	return 0;
}

int
arg_duration_ms(const char *s, long *ms, struct err *err)
{
	long long v = 0;

	switch (decimal_ms(s, 1000, ARG_MAX_MS / 1000, &v)) {
	case -1:
		err_set(err, "'%s' is not a number of seconds", s);
		return -1;
	case 0:
		if (v <= ARG_MAX_MS) {
			*ms = (long)v;
			return 0;
		}
	}
	err_set(err, "'%s' seconds is too long (at most %ld.%03ld)", s,
	    ARG_MAX_MS / 1000, ARG_MAX_MS % 1000);
	return -1;
}

int
arg_long(const char *s, long lo, long hi, long *out, struct err *err)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (*s == '\0' || isspace((unsigned char)*s) || *end != '\0') {
		err_set(err, "'%s' is not a number", s);
		return -1;
	}
	if (errno == ERANGE || v < lo || v > hi) {
		err_set(err, "'%s' is out of range (%ld to %ld)", s, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

int
arg_size(const char *s, long max, long *out, struct err *err)
{
	char *end = NULL;
	long v = 0, unit = 1;

	/* strtol() would take a sign or a space first: a digit, or nothing. */
	errno = 0;
	if (isdigit((unsigned char)*s))
		v = strtol(s, &end, 10);
	if (end != NULL && (*end == 'k' || *end == 'K')) {
		unit = 1024;
		end++;
	}
	if (end == NULL || *end != '\0') {
		err_set(err, "'%s' is not a size (bytes, or k for 1024: 4k)", s);
		return -1;
	}
	if (errno == ERANGE || v < 1 || v > max / unit) {
		err_set(err, "'%s' is out of range (1 to %ld bytes)", s, max);
		return -1;
	}
	*out = v * unit;
	return 0;
}

static const struct {
	const char *name;
	int sig;
} signames[] = {
	{ "HUP", SIGHUP }, { "INT", SIGINT }, { "QUIT", SIGQUIT },
	{ "KILL", SIGKILL }, { "USR1", SIGUSR1 }, { "USR2", SIGUSR2 },
	{ "ALRM", SIGALRM }, { "TERM", SIGTERM }, { "CONT", SIGCONT },
	{ "STOP", SIGSTOP }, { "ABRT", SIGABRT }, { "PIPE", SIGPIPE },
	/* Known, so that --lost-signal can say why it refuses them. */
	{ "TSTP", SIGTSTP }, { "TTIN", SIGTTIN }, { "TTOU", SIGTTOU },
};

int
arg_signal(const char *s, int *sig, struct err *err)
{
	const char *name = s;
	long n;
	size_t i;

	if (isdigit((unsigned char)*s)) {
		if (arg_long(s, 1, 64, &n, err) == -1)
			return -1;
		*sig = (int)n;
		return 0;
	}
	if (strncasecmp(name, "SIG", 3) == 0)
		name += 3;
	for (i = 0; i < sizeof(signames) / sizeof(signames[0]); i++) {
		if (strcasecmp(name, signames[i].name) == 0) {
			*sig = signames[i].sig;
			return 0;
		}
	}
	err_set(err, "'%s' is not a signal name", s);
	return -1;
}

/*
 * A part of a period ending at a unit or the string's end: its value in ms
 * into *ms, the unit's index into *unit (-1: none), *used its length. 0; 1,
 * past 2147483.647 of its unit; -1, no number.
 */
static int
period_part(const char *p, long long *ms, int *unit, size_t *used)
{
	static const char units[] = "smhdw";
	static const long long unit_s[] = { 1, 60, 3600, 86400, 604800 };
	char num[64];
	size_t n = strcspn(p, units);
	long long u;
	int rc;

	*unit = p[n] != '\0' ? (int)(strchr(units, p[n]) - units) : -1;
	*used = n + (*unit >= 0);
	u = *unit >= 0 ? unit_s[*unit] : 1;
	snprintf(num, sizeof(num), "%.*s", (int)(n < sizeof(num) ? n : 0), p);
	/* In its unit, exactly: 0.0025h is 9 s. */
	rc = n >= sizeof(num) ? -1 :
	    decimal_ms(num, u * 1000, ARG_MAX_MS / 1000, ms);
	return rc == 0 && *ms > ARG_MAX_MS * u ? 1 : rc;
}

/*
 * Parts with units from the largest down, each unit once (2h30m, 1d12h);
 * a bare number only alone (SECS). At most 2147483.647 days, which keeps a
 * slot's length below the 2^48 its record's number has room for. 0; 1, too
 * long (*shown: the unit to say it in); -1, not a period.
 */
static int
period_ms(const char *s, long long *ms, char *shown)
{
	static const char units[] = "smhdw";
	const char *p = s;
	long long part;
	size_t used;
	int unit, last = 5, rc;

	*ms = 0;
	*shown = 'd';
	do {
		rc = period_part(p, &part, &unit, &used);
		if (rc == 0 && (unit >= last || (unit < 0 && p != s)))
			rc = -1;
		*ms += rc == 0 ? part : 0;
		if (rc == 1)
			*shown = units[unit >= 0 ? unit : 0];	/* none: s */
		last = unit;
		p += used;
	} while (rc == 0 && *p != '\0');
	if (rc == 0 && *ms > ARG_MAX_MS * 86400LL)
		rc = 1;
	return rc;
}

/* A period's "too long" (rc 1) or "not a duration" (forms: what it may be). */
static int
period_err(const char *s, int rc, char shown, const char *forms,
    struct err *err)
{
	if (rc == 1)
		err_set(err, "'%s' is too long (at most %ld.%03ld%c)", s,
		    ARG_MAX_MS / 1000, ARG_MAX_MS % 1000, shown);
	else
		err_set(err, "'%s' is not a duration (%s)", s, forms);
	return -1;
}

int
arg_period_ms(const char *s, long long *ms, struct err *err)
{
	char shown;
	int rc = period_ms(s, ms, &shown);

	return rc == 0 ? 0 : period_err(s, rc, shown, "SECS, or numbers "
	    "with s, m, h, d or w: 5m, 2h30m, 1w", err);
}

int
arg_span_ms(const char *s, long long *ms, struct err *err)
{
	char shown;
	int rc = period_ms(s, ms, &shown);

	if (rc != 0)
		return period_err(s, rc, shown, "numbers with s, m, h, d or "
		    "w: 90s, 5m, 2h30m, 1w", err);
	/* A bare number is one a reader takes for hours as often as not. */
	if (strpbrk(s, "smhdw") == NULL && *ms != 0) {
		err_set(err, "'%s' needs a unit: %sh, %sm or %ss", s, s, s, s);
		return -1;
	}
	return 0;
}

int
arg_time_ms(const char *s, long *ms, struct err *err)
{
	long long v;

	if (arg_period_ms(s, &v, err) == -1)
		return -1;
	if (v > ARG_MAX_MS) {
		err_set(err, "'%s' is too long (at most %ld.%03lds)", s,
		    ARG_MAX_MS / 1000, ARG_MAX_MS % 1000);
		return -1;
	}
	*ms = (long)v;
	return 0;
}
