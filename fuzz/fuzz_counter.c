/* SPDX-License-Identifier: ISC */
/*
 * fuzz_counter: libFuzzer target for the offline half of lib/counter.c:
 * which --counter-table names are accepted and how they are quoted, and
 * the per-tenant lock id.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/arg.h"
#include "../lib/counter.h"
#include "../lib/key.h"
#include "check.h"


#define LOWER "abcdefghijklmnopqrstuvwxyz"
#define UPPER "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
#define DIGITS "0123456789"

/*
 * The oracle: a second reading of SQL's identifier rules, written apart
 * from lib/counter.c's, as a state machine over the bytes. Unquoted: a
 * letter, _ or a byte >= 0x80, then also digits and $, ASCII folded to
 * lower case; quoted: anything but NUL, "" for a quote. At most 63 bytes
 * a name, at most two names joined by a dot. The result is the quoted
 * form, or NULL.
 */
/* ASCII's upper case letters to lower case; every other byte as it is. */
static unsigned char
fold(unsigned char c)
{
	const char *u = c != 0 ? strchr(UPPER, c) : NULL;

	return u != NULL ? (unsigned char)LOWER[u - UPPER] : c;
}

static char *
ref_table_sql(const char *name)
{
	enum { START, BARE, QUOTED, QUOTE_SEEN } st = START;
	static unsigned char out[1024];
	size_t o = 0, len = 0;
	int parts = 1;
	const unsigned char *p;

	for (p = (const unsigned char *)name;; p++) {
		unsigned char c = *p;

		switch (st) {
		case START:
			if (c == '"') {
				out[o++] = '"';
				st = QUOTED;
			} else if (c >= 0x80 || c == '_' ||
			    (c != 0 && strchr(LOWER UPPER, c) != NULL)) {
				out[o++] = '"';
				out[o++] = fold(c);
				len = 1;
				st = BARE;
			} else {
				return NULL;
			}
			continue;
		case BARE:
			if (c >= 0x80 || c == '_' || c == '$' || (c != 0 &&
			    strchr(LOWER UPPER DIGITS, c) != NULL)) {
				out[o++] = fold(c);
				len++;
				continue;
			}
			out[o++] = '"';
			break;	/* the name ended: c is looked at below */
		case QUOTED:
			if (c == 0)
				return NULL;
			if (c == '"') {
				st = QUOTE_SEEN;
				continue;
			}
			out[o++] = c;
			len++;
			continue;
		case QUOTE_SEEN:
			if (c == '"') {		/* "" inside: one quote */
				out[o++] = '"';
				out[o++] = '"';
				len++;
				st = QUOTED;
				continue;
			}
			if (len == 0)
				return NULL;
			out[o++] = '"';
			break;
		}
		/* A name ended: then the end, or a dot before the second. */
		if (len > 63)
			return NULL;
		if (c == 0) {
			out[o] = '\0';
			return (char *)out;
		}
		if (c != '.' || parts++ == 2)
			return NULL;
		out[o++] = '.';
		len = 0;
		st = START;
	}
}

static void
fuzz_table(const char *name)
{
	char out[300], *ref;
	int rc;

	memset(out, 0x5a, sizeof(out));
	rc = counter_table_sql(name, out, sizeof(out));
	ref = strlen(name) < 400 ? ref_table_sql(name) : NULL;
	CHECK(rc == 0 || rc == -1);
	if (strlen(name) >= 400) {
		/* Too long for two 63-byte names, however quoted. */
		CHECK(rc == -1 || strlen(out) < sizeof(out));
		return;
	}
	CHECK((rc == 0) == (ref != NULL));
	if (rc == 0) {
		CHECK(strcmp(out, ref) == 0);
		/* Quoted: it starts and ends with a quote, no NUL inside. */
		CHECK(out[0] == '"' && out[strlen(out) - 1] == '"');
	}
}

/*
 * The tenant lock is SHA-256 over "pglock-counter\0TABLE\0TENANT", a
 * bigint, and never the lock pglock would take for KEY = TENANT.
 */
static void
fuzz_lock(const char *table, const char *tenant, long wait_ms)
{
	struct counter_req lk, lk2;
	struct key plain;
	struct err err;
	char *buf;
	size_t tl = strlen(table), nl = strlen(tenant);

	memset(&lk, 0x5a, sizeof(lk));
	CHECK(counter_lock(table, tenant, wait_ms, &lk) == 0);
	CHECK(lk.lock.key.space == KEY_BIGINT);
	CHECK(lk.lock.key.sql == NULL && lk.lock.key.text == NULL);
	CHECK(lk.lock.wait_ms == wait_ms && lk.lock.shared == 0);
	CHECK(lk.table == table && lk.tenant == tenant);

	memset(&lk2, 0xa5, sizeof(lk2));
	CHECK(counter_lock(table, tenant, wait_ms, &lk2) == 0);
	CHECK(lk2.lock.key.id == lk.lock.key.id);

	if ((buf = malloc(16 + tl + nl)) == NULL)
		abort();
	memcpy(buf, "pglock-counter", 15);
	memcpy(buf + 15, table, tl + 1);
	memcpy(buf + 16 + tl, tenant, nl);
	CHECK(key_hash(buf, 16 + tl + nl, &plain, &err) == 0);
	CHECK(plain.id == lk.lock.key.id);
	free(buf);

	CHECK(key_hash(tenant, nl, &plain, &err) == 0);
	CHECK(plain.id != lk.lock.key.id);
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
