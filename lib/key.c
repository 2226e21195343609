/* SPDX-License-Identifier: ISC */
/*
 * key: KEY -> lock id. The default scheme is reproducible by any client in
 * plain SQL (PostgreSQL 11+), so applications can take the same lock:
 *   ('x' || left(encode(sha256(convert_to(KEY, 'UTF8')), 'hex'), 16))
 *       ::bit(64)::bigint
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "key.h"

int
key_hash(const char *key, size_t len, struct key *out, char *err,
    size_t errlen)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen;
	uint64_t v = 0;
	int i;

	if (EVP_Digest(key, len, md, &mdlen, EVP_sha256(), NULL) != 1) {
		snprintf(err, errlen, "sha256 is not available");
		return -1;
	}
	for (i = 0; i < 8; i++)
		v = v << 8 | md[i];
	out->space = KEY_BIGINT;
	/* Two's complement reinterpretation, as ::bit(64)::bigint does. */
	out->id = v > INT64_MAX ? -(int64_t)(UINT64_MAX - v) - 1 : (int64_t)v;
	return 0;
}

/* One strict signed decimal in [lo, hi]; end points past it. */
static int
parse_num(const char *s, const char **end, long long lo, long long hi,
    long long *out)
{
	char *e;
	long long v;

	if (*s != '-' && (*s < '0' || *s > '9'))
		return -1;
	errno = 0;
	v = strtoll(s, &e, 10);
	if (e == s || errno == ERANGE || v < lo || v > hi)
		return -1;
	*end = e;
	*out = v;
	return 0;
}

int
key_parse_id(const char *s, struct key *out, char *err, size_t errlen)
{
	const char *e;
	long long a, b;

	if (parse_num(s, &e, INT64_MIN, INT64_MAX, &a) == 0 && *e == '\0') {
		out->space = KEY_BIGINT;
		out->id = a;
		return 0;
	}
	if (parse_num(s, &e, INT32_MIN, INT32_MAX, &a) == 0 && *e == ',' &&
	    parse_num(e + 1, &e, INT32_MIN, INT32_MAX, &b) == 0 &&
	    *e == '\0') {
		out->space = KEY_PAIR;
		out->a = (int32_t)a;
		out->b = (int32_t)b;
		return 0;
	}
	snprintf(err, errlen,
	    "'%s' is not a lock id (a bigint N, or two int4 A,B)", s);
	return -1;
}

void
key_format(const struct key *k, char *buf, size_t len)
{
	if (k->space == KEY_BIGINT)
		snprintf(buf, len, "%" PRId64, k->id);
	else
		snprintf(buf, len, "%" PRId32 ",%" PRId32, k->a, k->b);
}

int
key_params(const struct key *k, char vals[2][24])
{
	if (k->space == KEY_BIGINT) {
		snprintf(vals[0], sizeof(vals[0]), "%" PRId64, k->id);
		return 1;
	}
	snprintf(vals[0], sizeof(vals[0]), "%" PRId32, k->a);
	snprintf(vals[1], sizeof(vals[1]), "%" PRId32, k->b);
	return 2;
}

void
key_locktag(const struct key *k, uint32_t *classid, uint32_t *objid,
    int *objsubid)
{
	/* The server stores the halves as oids: high word first. */
	if (k->space == KEY_BIGINT) {
		*classid = (uint32_t)((uint64_t)k->id >> 32);
		*objid = (uint32_t)((uint64_t)k->id & 0xffffffffu);
		*objsubid = 1;
	} else {
		*classid = (uint32_t)k->a;
		*objid = (uint32_t)k->b;
		*objsubid = 2;
	}
}
