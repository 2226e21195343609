/* SPDX-License-Identifier: ISC */
/*
 * key: turn a KEY string (under one of several hash schemes, --namespace N,
 * or as a raw --id) into a PostgreSQL advisory lock id and describe that
 * id the way pg_locks shows it.
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
	 * Server-side: SQL for id (bigint) or b (pair) from $1 = text, in the
	 * lock statement; id or b is this host's estimate until the server's.
	 */
	const char *sql;
	const char *text;
};

/* Default scheme: first 8 bytes of SHA-256 of KEY, big-endian, signed. */
int key_hash(const char *key, size_t len, struct key *out, struct err *err);

/*
 * A row of the scheme table: a --hash scheme (NULL: sha256, the default), "id"
 * (--id: KEY is the id) or "namespace" (--namespace N: (ns, hashtext(KEY))).
 */
struct key_how {
	const char *scheme;
	int32_t ns;		/* "namespace": N */
};

/* key_make's failures. */
enum {
	KEY_BAD = -1,		/* the caller's: not an id, or not UTF-8 for
				   a server-side scheme */
	KEY_UNKNOWN = -2	/* no such scheme, or not in this build */
};

/*
 * KEY (len bytes, then a NUL: --id parses it, a server-side scheme keeps it
 * in out->text for $1) -> id under how, into out: 0, or KEY_BAD or
 * KEY_UNKNOWN, the reason in err (unknown scheme: the valid names).
 */
int key_make(const struct key_how *how, const char *key, size_t len,
    struct key *out, struct err *err);

/* Is scheme a --hash scheme's name? 0, or -1 with the valid ones in err. */
int key_scheme_check(const char *scheme, struct err *err);

/* The scheme's row name ("sha256" for NULL), or NULL if unknown. */
const char *key_how_name(const struct key_how *how);

/*
 * --explain's line on how into buf (len bytes): who chooses the scheme,
 * what it matches and its formula. snprintf's return; -1 if unknown.
 */
int key_how_describe(const struct key_how *how, char *buf, size_t len);

/*
 * The name KEY's record of runs goes by: the lock's, so another scheme or
 * namespace for the same text is another job ("md5:KEY", "namespace 7:KEY") and
 * --id 42 and 042 one ("id:42"); KEY itself under the default scheme, or ":KEY"
 * if KEY begins with ':' or reads as one of those, so no two locks share a
 * name. snprintf's return; -1 if KEY is no id or how is unknown.
 */
int key_record_name(const struct key_how *how, const char *key, char *buf,
    size_t len);

/* A server-side scheme's SQL ("hashtext($1)", $1: KEY); else NULL. */
const char *key_scheme_sql(const char *scheme);

/* Is scheme the default, sha256, by name or as NULL? 1 or 0. */
int key_scheme_is_default(const char *scheme);

/* What any row matches (library or pattern), its formula; NULL if unknown. */
const char *key_scheme_describe(const char *scheme);

/* The i-th --hash scheme's name, for help text, or NULL past the end. */
const char *key_scheme_name(size_t i);

/* Parse a raw id: "N" (bigint) or "A,B" (two int4). Returns 0 or -1. */
int key_parse_id(const char *s, struct key *out, struct err *err);

/* Write the id as PGLOCK_ID shows it: "N" or "A,B". */
void key_format(const struct key *k, char *buf, size_t len);

/* pg_locks' classid, objid (oids, unsigned) and objsubid (1 bigint, 2 pair). */
void key_locktag(const struct key *k, uint32_t *classid, uint32_t *objid,
    int *objsubid);

/* The lock function's arguments as decimal text: how many (1 or 2) written. */
int key_params(const struct key *k, char vals[2][24]);

/* Is s (len bytes) valid UTF-8, as a server-side scheme's text must be? 1/0. */
int key_utf8_ok(const char *s, size_t len);

#endif
