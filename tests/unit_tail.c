/* SPDX-License-Identifier: ISC */
/*
 * unit_tail: lib/tail.c's kept bytes. Chunks of every size go through the
 * pipes, both streams in turn; after each, what is kept must be the last
 * `keep` bytes of all that was written, in the order it was read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/tail.h"

static int failed, passed;

static void
expect(int ok, const char *what, size_t keep, size_t n)
{
	if (ok) {
		passed++;
		return;
	}
	failed++;
	printf("FAIL: %s (keep %zu, after %zu bytes)\n", what, keep, n);
}

/* Byte i of what is written: no run repeats within a window. */
static char
byte_at(size_t i)
{
	return (char)('!' + (i * 7 + i / 91) % 90);
}

/* Write n bytes from *at into stream s and read them in: kept, not copied. */
static void
pass(struct tail *t, int s, size_t n, size_t *at)
{
	char buf[6000];
	size_t i;

	for (i = 0; i < n; i++)
		buf[i] = byte_at(*at + i);
	if (write(t->s[s].out, buf, n) != (ssize_t)n) {
		perror("write");
		exit(1);
	}
	*at += n;
	tail_drain(t);
}

static void
check_keep(size_t keep)
{
	static const size_t sizes[] = { 1, 7, 4096, 100, 5000, 3, 4095, 2 };
	struct tail t;
	struct err err;
	const char *kept;
	size_t at = 0, len, i, k, want;
	int ok;

	if (tail_open(&t, keep, &err) == -1) {
		printf("tail_open: %s\n", err.msg);
		exit(1);
	}
	t.s[0].to = t.s[1].to = -1;
	for (k = 0; k < 200; k++) {
		pass(&t, (int)(k % 2), sizes[k % 8], &at);
		kept = tail_kept(&t, &len);
		want = at < keep ? at : keep;
		ok = len == want;
		for (i = 0; ok && i < len; i++)
			ok = kept[i] == byte_at(at - len + i);
		expect(ok, "the last bytes kept", keep, at);
	}
	tail_close(&t);
}

int
main(void)
{
	check_keep(1);
	check_keep(10);
	check_keep(4096);
	check_keep(5000);
	check_keep(TAIL_MAX);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
