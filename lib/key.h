/* SPDX-License-Identifier: ISC */
/*
 * key: turn a KEY string (under one of several hash schemes, or a raw --id)
 * into a PostgreSQL advisory lock id and describe that id the way pg_locks
 * shows it.
 */
#ifndef PGLOCK_KEY_H
#define PGLOCK_KEY_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* The two advisory-lock key spaces; they never conflict with each other. */
enum key_space {
	KEY_BIGINT,	/* pg_advisory_lock(bigint) */
	KEY_PAIR	/* pg_advisory_lock(int4, int4) */
};

struct key {
	enum key_space space;
	int64_t id;		/* KEY_BIGINT */
	int32_t a, b;		/* KEY_PAIR */
	/*
	 * Server-side schemes: SQL computing the id (bigint) or b (pair)
	 * from $1 = text, in the lock statement itself; id or b above is
	 * then this host's offline estimate until the server reports it.
	 */
	const char *sql;
	const char *text;
};

/* Default scheme: first 8 bytes of SHA-256 of KEY, big-endian, signed. */
int key_hash(const char *key, size_t len, struct key *out, struct err *err);

/* Is scheme a known scheme's name? 0, or -1 with the known ones in err. */
int key_scheme_check(const char *scheme, struct err *err);

/*
 * Hash KEY with the named scheme (NULL: the default, sha256) into out.
 * Returns 0, or -1 with the reason in err; for an unknown scheme the
 * reason lists the valid names.
 */
int key_hash_scheme(const char *scheme, const char *key, size_t len,
    struct key *out, struct err *err);

/*
 * The pair (ns, hashtext(KEY)) for --namespace, as
 * pg_advisory_lock(ns, hashtext(KEY)) takes it; hashtext as a little-endian
 * server with a UTF8 database computes it.
 */
void key_namespace(int32_t ns, const char *key, size_t len, struct key *out);

/*
 * The SQL expression, with $1 as the key text, for a scheme the server
 * computes in the lock statement ("hashtext($1)"); NULL for the others and
 * for an unknown scheme.
 */
const char *key_scheme_sql(const char *scheme);

/* Is scheme the default, sha256, by name or as NULL? 1 or 0. */
int key_scheme_is_default(const char *scheme);

/*
 * One line for --explain: what the scheme matches (library or pattern) and
 * its formula. NULL for an unknown scheme.
 */
const char *key_scheme_describe(const char *scheme);

/* The i-th scheme name, for help text, or NULL past the end. */
const char *key_scheme_name(size_t i);

/* Parse a raw id: "N" (bigint) or "A,B" (two int4). Returns 0 or -1. */
int key_parse_id(const char *s, struct key *out, struct err *err);

/* Write the id as PGLOCK_ID shows it: "N" or "A,B". */
void key_format(const struct key *k, char *buf, size_t len);

/*
 * The pg_locks columns that identify the lock: classid, objid (both oids,
 * i.e. unsigned 32-bit) and objsubid (1 for bigint, 2 for a pair).
 */
void key_locktag(const struct key *k, uint32_t *classid, uint32_t *objid,
    int *objsubid);

/*
 * The lock function's arguments as query parameters (decimal text): one for
 * a bigint, two for a pair. Returns how many were written.
 */
int key_params(const struct key *k, char vals[2][24]);

/*
 * Is s (len bytes) valid UTF-8, as the text a server-side scheme hashes
 * must be? 1 or 0.
 */
int key_utf8_ok(const char *s, size_t len);

#endif
