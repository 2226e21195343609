/* SPDX-License-Identifier: ISC */
/*
 * counter: gap-free, monotonic version numbers per tenant (and the fencing
 * tokens of --fence), kept in one table with one row per tenant.
 */
#ifndef PGLOCK_COUNTER_H
#define PGLOCK_COUNTER_H

#include <stddef.h>

#include <libpq-fe.h>

#include "err.h"
#include "lock.h"

enum counter_result {
	COUNTER_OK,
	COUNTER_BUSY,		/* -n / -w: the tenant's lock was held */
	COUNTER_INTERRUPTED,	/* a signal cancelled the wait */
	COUNTER_UNSAFE,		/* require_sync: standbys, none synchronous */
	COUNTER_ERROR
};

/*
 * --counter-table NAME as SQL reads it ([schema.]table; "quoted" keeps its
 * case, else lower-cased) into out, quoted ("schema"."table") as the other
 * calls take table: 0, or -1 if NAME is no such name.
 */
int counter_table_sql(const char *name, char *out, size_t len);

/* One allocation: where, for whom, and the lock that serialises it. */
struct counter_req {
	const char *table;	/* as counter_table_sql() wrote it */
	const char *tenant;
	struct lock_req lock;
	int require_sync;	/* COUNTER_UNSAFE where a failover could repeat */
};

/*
 * Set up TENANT's next version's allocation, its lock not KEY = TENANT's so
 * "pglock T pglock --version-counter T" cannot deadlock: 0, or -1 (no memory).
 */
int counter_lock(const char *table, const char *tenant, long wait_ms,
    struct counter_req *out);

/* Read TENANT's current version: 0 for a new tenant (or no table yet). */
int counter_peek(PGconn *c, const char *table, const char *tenant,
    long long *version, struct err *err);

/*
 * Open a READ COMMITTED transaction, take the tenant's xact lock, create the
 * table on first use, bump its version into *version, and the server
 * process that holds the lock into *pid. The transaction stays open: end it
 * with conn_end(); a forwarded signal cancels the wait (*sig).
 */
enum counter_result counter_next(PGconn *c, const struct counter_req *r,
    long long *version, int *pid, int *sig, struct err *err);

#endif
