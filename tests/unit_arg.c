/* SPDX-License-Identifier: ISC */
/*
 * unit_arg: vectors for the option-value parsers in lib/arg.c (durations,
 * bounded integers, signal names). Prints "N passed, M failed".
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "../lib/arg.h"

static int passed, failed;

static void
expect(int ok, const char *what, const char *in)
{
	if (ok) {
		passed++;
		return;
	}
	failed++;
	printf("FAIL: %s: '%s'\n", what, in);
}

int
main(void)
{
	static const struct {
		const char *in;
		long long ms;	/* -1: must be rejected */
	} periods[] = {
		{ "90", 90000 }, { "90s", 90000 }, { "5m", 300000 },
		{ "1.5h", 5400000 }, { "1d", 86400000 }, { "0.5s", 500 },
		{ "2147483d", 2147483LL * 86400000 }, { "0", 0 },
		{ "5x", -1 }, { "m", -1 }, { "", -1 }, { "1dd", -1 },
		{ "-1m", -1 }, { "1 m", -1 }, { "1M", -1 }, { "2147484d", -1 },
		/* The unit first, then the rounding up to a ms. */
		{ "0.0001d", 8640 }, { "0.0025h", 9000 }, { "0.00000001d", 1 },
		{ "1.0000000001d", 86400001 }, { "0.0001s", 1 }, { "0.5m", 30000 },
		{ "2147483.647d", 2147483647LL * 86400 },
		/* Weeks, and parts from the largest unit down, each once. */
		{ "1w", 604800000 }, { "2h30m", 9000000 }, { "1d12h", 129600000 },
		{ "1w1d1h1m1s", 694861000 }, { "1h0.5m", 3630000 },
		{ "30m2h", -1 }, { "1h1h", -1 }, { "1h30", -1 }, { "2h 30m", -1 },
		{ "1hm", -1 }, { "306783w", 306783LL * 604800000 },
		{ "306784w", -1 }, { "2147483.647d1s", -1 },
	};
	static const struct {
		const char *in;
		long long ms;	/* -1: must be rejected */
		const char *msg;	/* its reason, if so */
	} spans[] = {
		{ "90s", 90000, NULL }, { "26h", 93600000, NULL },
		{ "2h30m", 9000000, NULL }, { "0", 0, NULL },
		{ "26", -1, "'26' needs a unit: 26h, 26m or 26s" },
		{ "1.5", -1, "'1.5' needs a unit: 1.5h, 1.5m or 1.5s" },
		{ "5x", -1, "'5x' is not a duration (numbers with s, m, h, d or "
		    "w: 90s, 5m, 2h30m, 1w)" },
		{ "2147484d", -1, "'2147484d' is too long (at most "
		    "2147483.647d)" },
	};
	static const struct {
		const char *in;
		long ms;	/* -1: must be rejected */
	} durations[] = {
		{ "0", 0 }, { "1", 1000 }, { "0.5", 500 }, { "1.25", 1250 },
		{ ".5", 500 }, { "5.", 5000 }, { "0.0001", 1 }, { "0.0010", 1 },
		{ "0.0011", 2 }, { "0.9999", 1000 }, { "0.000", 0 },
		{ "2147483", 2147483000 }, { "2147483.647", 2147483647 },
		{ "2147483.648", -1 }, { "2147484", -1 },
		{ "99999999999999999999", -1 }, { "", -1 }, { ".", -1 },
		{ "-1", -1 }, { "+1", -1 }, { " 1", -1 }, { "1 ", -1 },
		{ "1s", -1 }, { "1e3", -1 }, { "inf", -1 }, { "nan", -1 },
		{ "0x10", -1 }, { "1.2.3", -1 }, { "abc", -1 },
	};
	static const struct {
		const char *in;
		long ms;	/* -1: must be rejected */
	} times[] = {
		{ "90", 90000 }, { "10m", 600000 }, { "2h", 7200000 },
		{ "5s", 5000 }, { "0.5", 500 }, { "24d", 2073600000 },
		{ "2147483.647", 2147483647 }, { "2147483.647s", 2147483647 },
		{ "2147483.648", -1 }, { "25d", -1 }, { "596.6524h", -1 },
		{ "5x", -1 }, { "", -1 }, { "-1m", -1 }, { "1e3", -1 },
	};
	static const struct {
		const char *in;
		long v;		/* -1: must be rejected (range is 0..255) */
	} longs[] = {
		{ "0", 0 }, { "255", 255 }, { "42", 42 }, { "256", -1 },
		{ "-1", -1 }, { "", -1 }, { " 1", -1 }, { "1x", -1 },
		{ "99999999999999999999999", -1 }, { "x", -1 },
	};
	static const struct {
		const char *in;
		long v;		/* -1: must be rejected (range is 1..65536) */
	} sizes[] = {
		{ "1", 1 }, { "4096", 4096 }, { "4k", 4096 }, { "4K", 4096 },
		{ "64k", 65536 }, { "65536", 65536 }, { "65537", -1 },
		{ "65k", -1 }, { "0", -1 }, { "0k", -1 }, { "-1", -1 },
		{ "+1", -1 }, { " 1", -1 }, { "1x", -1 }, { "1kb", -1 },
		{ "1m", -1 }, { "k", -1 }, { "", -1 }, { "1.5k", -1 },
		{ "99999999999999999999999k", -1 },
	};
	static const struct {
		const char *in;
		int sig;	/* 0: must be rejected */
	} sigs[] = {
		{ "TERM", SIGTERM }, { "SIGTERM", SIGTERM }, { "term", SIGTERM },
		{ "KILL", SIGKILL }, { "9", SIGKILL }, { "HUP", SIGHUP },
		{ "sigusr1", SIGUSR1 }, { "INT", SIGINT }, { "FOO", 0 },
		{ "", 0 }, { "0", 0 }, { "65", 0 }, { "9x", 0 }, { "SIG", 0 },
	};
	struct err err;
	size_t i;
	long ms, v;
	int sig, rc;

	for (i = 0; i < sizeof(periods) / sizeof(periods[0]); i++) {
		long long pms = -1;

		rc = arg_period_ms(periods[i].in, &pms, &err);
		expect(periods[i].ms < 0 ? rc == -1 && err.msg[0] != '\0' :
		    rc == 0 && pms == periods[i].ms, "period", periods[i].in);
	}
	for (i = 0; i < sizeof(spans) / sizeof(spans[0]); i++) {
		long long sms = -1;

		rc = arg_span_ms(spans[i].in, &sms, &err);
		expect(spans[i].ms < 0 ? rc == -1 &&
		    strcmp(err.msg, spans[i].msg) == 0 :
		    rc == 0 && sms == spans[i].ms, "span", spans[i].in);
	}
	for (i = 0; i < sizeof(durations) / sizeof(durations[0]); i++) {
		ms = -7;
		rc = arg_duration_ms(durations[i].in, &ms, &err);
		if (durations[i].ms < 0)
			expect(rc == -1 && err.msg[0] != '\0',
			    "duration rejected",
			    durations[i].in);
		else
			expect(rc == 0 && ms == durations[i].ms,
			    "duration value", durations[i].in);
	}
	for (i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		ms = -7;
		rc = arg_time_ms(times[i].in, &ms, &err);
		expect(times[i].ms < 0 ? rc == -1 && err.msg[0] != '\0' :
		    rc == 0 && ms == times[i].ms, "time", times[i].in);
	}
	for (i = 0; i < sizeof(longs) / sizeof(longs[0]); i++) {
		rc = arg_long(longs[i].in, 0, 255, &v, &err);
		if (longs[i].v < 0)
			expect(rc == -1, "integer rejected", longs[i].in);
		else
			expect(rc == 0 && v == longs[i].v, "integer value",
			    longs[i].in);
	}
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		v = -7;
		rc = arg_size(sizes[i].in, 65536, &v, &err);
		expect(sizes[i].v < 0 ? rc == -1 && err.msg[0] != '\0' :
		    rc == 0 && v == sizes[i].v, "size", sizes[i].in);
	}
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		rc = arg_signal(sigs[i].in, &sig, &err);
		if (sigs[i].sig == 0)
			expect(rc == -1, "signal rejected", sigs[i].in);
		else
			expect(rc == 0 && sig == sigs[i].sig, "signal value",
			    sigs[i].in);
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
