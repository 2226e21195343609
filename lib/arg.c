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

int
arg_duration_ms(const char *s, long *ms, struct err *err)
{
	const char *p = s;
	long whole = 0, frac = 0, scale = 100;
	int digits = 0;

	/* Digits by hand: strtod would take "inf", "nan", hex and exponents. */
	for (; isdigit((unsigned char)*p); p++, digits++) {
		if (whole > ARG_MAX_MS / 1000)
			goto range;
		whole = whole * 10 + (*p - '0');
	}
	if (*p == '.') {
		int below_ms = 0;

		for (p++; isdigit((unsigned char)*p); p++, digits++) {
			if (scale > 0) {
				frac += (*p - '0') * scale;
				scale /= 10;
			} else if (*p != '0') {
				below_ms = 1;
			}
		}
		/* A fraction of a millisecond rounds up: 0.0001 must not be 0. */
		frac += below_ms;
	}
	if (digits == 0 || *p != '\0') {
		err_set(err, "'%s' is not a number of seconds", s);
		return -1;
	}
	if (frac > 999) {
		whole++;
		frac = 0;
	}
	/* Subtract, not add: whole * 1000 + frac overflows a 32-bit long. */
	if (whole > ARG_MAX_MS / 1000 || frac > ARG_MAX_MS - whole * 1000)
		goto range;
	*ms = whole * 1000 + frac;
	return 0;
range:
	err_set(err, "'%s' seconds is too long (at most %ld)", s,
	    ARG_MAX_MS / 1000);
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
 * A "DIGITS[.DIGITS]" arg_duration_ms() took, times unit_ms: exact to a
 * billionth of the unit, then rounded up to a ms (0.0001d is 8640 ms).
 */
static long long
times_unit(const char *num, long long unit_ms)
{
	long long whole = 0, frac = 0, scale = 100000000;
	const char *p = num;
	int rest = 0;

	for (; isdigit((unsigned char)*p); p++)
		whole = whole * 10 + (*p - '0');
	for (p += *p == '.'; *p != '\0'; p++) {
		if (scale > 0) {
			frac += (*p - '0') * scale;
			scale /= 10;
		} else if (*p != '0') {
			rest = 1;
		}
	}
	return whole * unit_ms + ((frac + rest) * unit_ms + 999999999) /
	    1000000000;
}

int
arg_period_ms(const char *s, long long *ms, struct err *err)
{
	static const char units[] = "smhd";
	static const long long unit_s[] = { 1, 60, 3600, 86400 };
	char num[64];
	size_t n = strlen(s);
	const char *u = n > 0 ? strchr(units, s[n - 1]) : NULL;
	long part = 0;

	/* SECS as -w takes them, or with a unit: 90s, 5m, 1.5h, 1d. */
	if (u != NULL)
		n--;
	snprintf(num, sizeof(num), "%.*s", (int)(n < sizeof(num) ? n : 0), s);
	if (n >= sizeof(num) || arg_duration_ms(num, &part, err) == -1) {
		err_set(err, "'%s' is not a duration (SECS, or a "
		    "number with s, m, h or d)", s);
		return -1;
	}
	*ms = u != NULL ? times_unit(num, unit_s[u - units] * 1000) : part;
	return 0;
}
