/* SPDX-License-Identifier: ISC */
/*
 * hash: PostgreSQL's hash_bytes family and Java's String.hashCode, which no
 * library we link provides. Input words are read little-endian explicitly,
 * so results do not depend on the host's byte order.
 */
#include <stddef.h>
#include <stdint.h>

#include "hash.h"

static uint32_t
le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

static uint32_t
rotl32(uint32_t x, int n)
{
	return x << n | x >> (32 - n);
}

static void
pg_mix(uint32_t *a, uint32_t *b, uint32_t *c)
{
	*a -= *c;
	*a ^= rotl32(*c, 4);
	*c += *b;
	*b -= *a;
	*b ^= rotl32(*a, 6);
	*a += *c;
	*c -= *b;
	*c ^= rotl32(*b, 8);
	*b += *a;
	*a -= *c;
	*a ^= rotl32(*c, 16);
	*c += *b;
	*b -= *a;
	*b ^= rotl32(*a, 19);
	*a += *c;
	*c -= *b;
	*c ^= rotl32(*b, 4);
	*b += *a;
}

/* lookup3 final(): PostgreSQL runs it even for empty input. */
static void
pg_final(uint32_t *a, uint32_t *b, uint32_t *c)
{
	*c ^= *b;
	*c -= rotl32(*b, 14);
	*a ^= *c;
	*a -= rotl32(*c, 11);
	*b ^= *a;
	*b -= rotl32(*a, 25);
	*c ^= *b;
	*c -= rotl32(*b, 16);
	*a ^= *c;
	*a -= rotl32(*c, 4);
	*b ^= *a;
	*b -= rotl32(*a, 14);
	*c ^= *b;
	*c -= rotl32(*b, 24);
}

uint64_t
hash_pg_bytes_extended(const void *buf, size_t len, uint64_t seed)
{
	const unsigned char *k = buf;
	uint32_t a, b, c;
	size_t i;

	/* PostgreSQL folds the length in as a uint32, wrapping if need be. */
	a = b = c = 0x9e3779b9u + (uint32_t)len + 3923095u;
	if (seed != 0) {
		a += (uint32_t)(seed >> 32);
		b += (uint32_t)seed;
		pg_mix(&a, &b, &c);
	}
	for (; len >= 12; k += 12, len -= 12) {
		a += le32(k);
		b += le32(k + 4);
		c += le32(k + 8);
		pg_mix(&a, &b, &c);
	}
	/*
	 * Tail, little-endian: bytes 0-3 fill a, 4-7 b, from the low end; bytes
	 * 8-10 go to c's bits 8, 16, 24 (PostgreSQL leaves the low byte out).
	 */
	for (i = 0; i < len; i++) {
		if (i < 4)
			a += (uint32_t)k[i] << (8 * i);
		else if (i < 8)
			b += (uint32_t)k[i] << (8 * (i - 4));
		else
			c += (uint32_t)k[i] << (8 * (i - 7));
	}
	pg_final(&a, &b, &c);
	return (uint64_t)b << 32 | c;
}

/* hash_bytes is hash_bytes_extended's low word, where seed 0 adds nothing. */
uint32_t
hash_pg_bytes(const void *buf, size_t len)
{
	return (uint32_t)hash_pg_bytes_extended(buf, len, 0);
}

uint32_t
hash_utf8_next(const unsigned char *p, size_t len, size_t *used)
{
	/* The second byte's range rules out overlongs, surrogates, > U+10FFFF. */
	unsigned char lo = p[0] == 0xe0 ? 0xa0 : p[0] == 0xf0 ? 0x90 : 0x80;
	unsigned char hi = p[0] == 0xed ? 0x9f : p[0] == 0xf4 ? 0x8f : 0xbf;
	size_t n = p[0] >= 0xf0 ? 3 : p[0] >= 0xe0 ? 2 : 1, j;
	uint32_t cp = p[0] & (0x3fu >> n);

	*used = 1;
	if (p[0] < 0x80)
		return p[0];
	if (p[0] < 0xc2 || p[0] > 0xf4)
		return HASH_UTF8_BAD;
	for (j = 1; j <= n; j++) {
		if (j >= len || p[j] < lo || p[j] > hi) {
			*used = j;
			return HASH_UTF8_BAD;
		}
		cp = cp << 6 | (p[j] & 0x3f);
		lo = 0x80;
		hi = 0xbf;
	}
	*used = n + 1;
	return cp;
}

int32_t
hash_java_string(const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint32_t h = 0, cp;
	size_t used;

	/* Java sums UTF-16 code units: astral characters count twice. */
	while (len > 0) {
		cp = hash_utf8_next(p, len, &used);
		p += used;
		len -= used;
		if (cp == HASH_UTF8_BAD)
			cp = 0xfffd;	/* Java's replacement character */
		if (cp >= 0x10000) {
			cp -= 0x10000;
			h = 31 * h + (0xd800 + (cp >> 10));
			h = 31 * h + (0xdc00 + (cp & 0x3ff));
		} else
			h = 31 * h + cp;
	}
	/* Two's complement reinterpretation, as Java's int overflow does. */
	return h > INT32_MAX ? -(int32_t)(UINT32_MAX - h) - 1 : (int32_t)h;
}
