/* SPDX-License-Identifier: ISC */
/*
 * fuzz_counter: libFuzzer target for the offline half of lib/counter.c:
 * which --counter-table names are accepted, and the per-tenant lock id.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/arg.h"
#include "../lib/counter.h"
#include "../lib/key.h"
#include "check.h"


#define LETTERS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_"
#define DIGITS "0123456789"

/* One identifier: [A-Za-z_][A-Za-z0-9_]*, spelled out, not <ctype.h>. */
static size_t
ident_len(const char *p)
{
	if (*p == '\0' || strchr(LETTERS, *p) == NULL)
		return 0;
	return 1 + strspn(p + 1, LETTERS DIGITS);
}

/*
 * The documented rule, written independently: ident or ident.ident, each
 * at most 63 bytes (PostgreSQL would cut a longer one short).
 */
static int
ref_table_ok(const char *name)
{
	size_t n;

	if ((n = ident_len(name)) == 0 || n > 63)
		return 0;
	if (name[n] == '\0')
		return 1;
	if (name[n] != '.' || (name += n + 1, n = ident_len(name)) == 0 ||
	    n > 63)
		return 0;
	return name[n] == '\0';
}

static void
fuzz_table(const char *name)
{
	int ok = counter_table_ok(name);
	const char *dot;

	CHECK(ok == 0 || ok == 1);
	CHECK(ok == ref_table_ok(name));
	if (!ok)
		return;
	/* Safe to quote part by part: nothing but [A-Za-z0-9_] and a dot. */
	CHECK(strspn(name, LETTERS DIGITS ".") == strlen(name));
	dot = strchr(name, '.');
	CHECK(dot == NULL || strchr(dot + 1, '.') == NULL);
	CHECK(strchr(DIGITS, name[0]) == NULL);
}

/*
 * The tenant lock is SHA-256 over "pglock-counter\0TABLE\0TENANT", a
 * bigint, and never the lock pglock would take for KEY = TENANT.
 */
static void
fuzz_lock(const char *table, const char *tenant, long wait_ms)
{
	struct lock_req lk, lk2;
	struct key plain;
	char err[128], *buf;
	size_t tl = strlen(table), nl = strlen(tenant);

	memset(&lk, 0x5a, sizeof(lk));
	CHECK(counter_lock(table, tenant, wait_ms, &lk) == 0);
	CHECK(lk.key.space == KEY_BIGINT);
	CHECK(lk.key.sql == NULL && lk.key.text == NULL);
	CHECK(lk.wait_ms == wait_ms && lk.shared == 0);

	memset(&lk2, 0xa5, sizeof(lk2));
	CHECK(counter_lock(table, tenant, wait_ms, &lk2) == 0);
	CHECK(lk2.key.id == lk.key.id);

	if ((buf = malloc(16 + tl + nl)) == NULL)
		abort();
	memcpy(buf, "pglock-counter", 15);
	memcpy(buf + 15, table, tl + 1);
	memcpy(buf + 16 + tl, tenant, nl);
	CHECK(key_hash(buf, 16 + tl + nl, &plain, err, sizeof(err)) == 0);
	CHECK(plain.id == lk.key.id);
	free(buf);

	CHECK(key_hash(tenant, nl, &plain, err, sizeof(err)) == 0);
	CHECK(plain.id != lk.key.id);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const long waits[] = { -1, 0, 1, ARG_MAX_MS };
	const char *tenant;
	char *s;
	size_t tl;

	/* Two NUL-terminated strings: TABLE, then TENANT after a NUL. */
	if ((s = malloc(size + 2)) == NULL)
		abort();
	memcpy(s, data, size);
	s[size] = s[size + 1] = '\0';
	tl = strlen(s);
	tenant = s + tl + (tl < size ? 1 : 0);

	fuzz_table(s);
	fuzz_table(tenant);
	fuzz_lock(s, tenant, waits[size % 4]);

	free(s);
	return 0;
}
