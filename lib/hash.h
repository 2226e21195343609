/* SPDX-License-Identifier: ISC */
/*
 * hash: the hash functions that no library we link provides, written from
 * their published descriptions so pglock can reproduce other tools' keys.
 */
#ifndef PGLOCK_HASH_H
#define PGLOCK_HASH_H

#include <stddef.h>
#include <stdint.h>

/*
 * PostgreSQL's hash_bytes() and hash_bytes_extended() (lookup3-based) as a
 * little-endian server computes them; hashtext(k) is the first cast to int4,
 * hashtextextended(k, seed) the second cast to int8.
 */
uint32_t hash_pg_bytes(const void *buf, size_t len);
uint64_t hash_pg_bytes_extended(const void *buf, size_t len, uint64_t seed);

/*
 * Java's String.hashCode() of the string whose UTF-8 bytes are buf, over UTF-16
 * code units; each maximal ill-formed byte sequence counts as one U+FFFD.
 */
int32_t hash_java_string(const void *buf, size_t len);

#define HASH_UTF8_BAD 0xffffffffu

/*
 * The code point of the UTF-8 sequence at p (len > 0 bytes), its length in
 * *used; HASH_UTF8_BAD if ill-formed, *used then its maximal ill-formed prefix
 * (at least one byte, as Unicode recommends: a stray byte never swallows the
 * valid text after it). No overlongs, surrogates, or code points past U+10FFFF.
 */
uint32_t hash_utf8_next(const unsigned char *p, size_t len, size_t *used);

#endif
