/* SPDX-License-Identifier: ISC */
/*
 * unit_clock: the deadline type of lib/clock.h, at times a long of 32 bits
 * cannot hold (2^31 ms is 24.8 days of uptime): sums, what is left, poll()'s
 * clamp, NEVER. Prints "N passed, M failed".
 */
#include <limits.h>
#include <stdio.h>

#include "../lib/clock.h"

static int passed, failed;

static void
expect(int ok, const char *what, long long at)
{
	if (ok) {
		passed++;
		return;
	}
	failed++;
	printf("FAIL: %s at %lld\n", what, at);
}

int
main(void)
{
	static const mono_t nows[] = { 0, 1000, INT32_MAX - 5, INT32_MAX,
	    (mono_t)INT32_MAX + 1, (mono_t)UINT32_MAX + 7, (mono_t)1 << 40,
	    (mono_t)1 << 52 };
	size_t i;

	for (i = 0; i < sizeof(nows) / sizeof(nows[0]); i++) {
		mono_t now = nows[i], by = mono_after(now, 10000);

		expect(by > now && by - now == 10000, "a sum", now);
		expect(mono_left(by, now) == 10000, "what is left", now);
		expect(mono_poll(by, now) == 10000, "poll's timeout", now);
		expect(mono_left(now, by) == 0 && mono_poll(now, by) == 0,
		    "a time passed is 0, never negative", now);
		expect(mono_after(now, -1) == NEVER, "a negative ms", now);
		expect(mono_left(NEVER, now) == -1 &&
		    mono_poll(NEVER, now) == -1, "NEVER waits for ever", now);
		expect(mono_min(NEVER, by) == by && mono_min(by, NEVER) == by,
		    "NEVER is the latest", now);
		expect(mono_min(now, by) == now && mono_min(by, now) == now,
		    "the earlier", now);
		/* The longest -w (ARG_MAX_MS), and beyond: clamped, not cut. */
		by = mono_after(now, INT32_MAX);
		expect(mono_poll(by, now) == INT_MAX, "-w's longest", now);
		by = mono_after(now, (int64_t)INT32_MAX * 3);
		expect(mono_poll(by, now) == INT_MAX &&
		    mono_left(by, now) == (int64_t)INT32_MAX * 3,
		    "beyond poll's int", now);
	}
	/* The clock itself goes on in 64 bits. */
	expect(mono_ms() > 0 && deadline_left(deadline_in(60000)) > 59000 &&
	    !deadline_passed(deadline_in(60000)) && deadline_passed(0) &&
	    !deadline_passed(NEVER), "now", mono_ms());
	expect(bound_left(0) == 1 && bound_left(deadline_in(60000)) > 59000,
	    "a wait's bound: 1 ms at least", mono_ms());
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
