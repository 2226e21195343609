/* SPDX-License-Identifier: ISC */
/*
 * fuzz_arg: libFuzzer target for lib/arg.c. Every input is tried as a
 * duration, as an integer under the ranges pglock uses, and as a signal.
 */
#include <ctype.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/arg.h"
#include "check.h"


/* A failed parse must leave one readable line, whatever the input. */
static void
check_err(const struct err *err)
{
	CHECK(memchr(err->msg, '\0', sizeof(err->msg)) != NULL);
	CHECK(err->msg[0] != '\0');
}

/*
 * A second, deliberately different reading of the duration grammar
 * ([0-9]*[.[0-9]*], at least one digit, rounded up to the millisecond),
 * in 64-bit arithmetic, so a disagreement points at one of the two.
 */
static int
ref_duration_ms(const char *s, long long *ms)
{
	size_t nwhole = strspn(s, "0123456789"), nfrac = 0, i;
	const char *frac = NULL, *end = s + nwhole;
	long long whole = 0, part = 0;
	int below = 0;

	if (*end == '.') {
		frac = end + 1;
		nfrac = strspn(frac, "0123456789");
		end = frac + nfrac;
	}
	if (nwhole + nfrac == 0 || *end != '\0')
		return -1;
	for (i = 0; i < nwhole; i++) {
		whole = whole * 10 + (s[i] - '0');
		if (whole > ARG_MAX_MS)
			return 1;	/* too long; the exact value is moot */
	}
	for (i = 0; i < 3; i++)
		part = part * 10 + (i < nfrac ? frac[i] - '0' : 0);
	for (i = 3; i < nfrac; i++)
		if (frac[i] != '0')
			below = 1;
	*ms = whole * 1000 + part + below;
	return *ms > ARG_MAX_MS ? 1 : 0;
}

static void
fuzz_duration(const char *s, struct err *err)
{
	char again[32];
	long ms = -7, ms2 = -7;
	long long ref = -7;
	int rc, want;

	rc = arg_duration_ms(s, &ms, err);
	want = ref_duration_ms(s, &ref);
	if (rc == -1) {
		check_err(err);
		CHECK(want != 0);
		return;
	}
	CHECK(rc == 0);
	CHECK(want == 0);
	CHECK(ms >= 0 && ms <= ARG_MAX_MS);
	CHECK((long long)ms == ref);
	/* What pglock would print (whole ms) must read back unchanged. */
	snprintf(again, sizeof(again), "%ld.%03ld", ms / 1000, ms % 1000);
	CHECK(arg_duration_ms(again, &ms2, err) == 0);
	CHECK(ms2 == ms);
}

static void
fuzz_long(const char *s, long lo, long hi, struct err *err)
{
	char again[32];
	const char *p = s;
	long v = -7, v2 = -7;

	if (arg_long(s, lo, hi, &v, err) == -1) {
		check_err(err);
		return;
	}
	CHECK(v >= lo && v <= hi);
	/* Only [+-]digits gets this far: no spaces, no base prefixes. */
	if (*p == '+' || *p == '-')
		p++;
	CHECK(*p != '\0' && strspn(p, "0123456789") == strlen(p));
	snprintf(again, sizeof(again), "%ld", v);
	CHECK(arg_long(again, lo, hi, &v2, err) == 0 && v2 == v);
}

static void
fuzz_signal(const char *s, struct err *err)
{
	char again[32], upper[16];
	size_t i, n;
	int sig = -7, sig2 = -7;

	if (arg_signal(s, &sig, err) == -1) {
		check_err(err);
		return;
	}
	CHECK(sig >= 1 && sig <= 64);
	/* The number always names the same signal as the name did. */
	snprintf(again, sizeof(again), "%d", sig);
	CHECK(arg_signal(again, &sig2, err) == 0 && sig2 == sig);
	if (isdigit((unsigned char)s[0]))
		return;
	/* Names are short and case does not matter. */
	n = strlen(s);
	CHECK(n < sizeof(upper));
	for (i = 0; i <= n; i++)
		upper[i] = (char)toupper((unsigned char)s[i]);
	sig2 = -7;
	CHECK(arg_signal(upper, &sig2, err) == 0 && sig2 == sig);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* On the heap, so ASan sees any write past err's end. */
	char *s;
	struct err *err;

	if ((s = malloc(size + 1)) == NULL ||
	    (err = malloc(sizeof(*err))) == NULL)
		abort();
	/* argv strings end at the first NUL: so does the copy. */
	memcpy(s, data, size);
	s[size] = '\0';

	fuzz_duration(s, err);
	fuzz_long(s, 0, 255, err);		/* -E */
	fuzz_long(s, INT32_MIN, INT32_MAX, err); /* --namespace */
	fuzz_long(s, 1, 64, err);		/* signal numbers */
	fuzz_long(s, LONG_MIN, LONG_MAX, err);
	fuzz_signal(s, err);

	free(err);
	free(s);
	return 0;
}
