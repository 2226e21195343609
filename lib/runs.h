/* SPDX-License-Identifier: ISC */
/*
 * runs: the record of a key's runs (--once, --once-per, --record): one row
 * a key in one table, written by the database that holds the lock, dated
 * by its clock.
 */
#ifndef PGLOCK_RUNS_H
#define PGLOCK_RUNS_H

#include <libpq-fe.h>

#include "conn.h"
#include "err.h"

/* Longest record name: the table's btree key takes ~2.7 kB raw text. */
#define RUNS_NAME_MAX 2600

/* A key's record as read, and the server's clock when it was read. */
struct runs_row {
	int no_table;		/* the table does not exist (yet) */
	int denied;		/* this role may not read it */
	double now_ms;		/* the server's clock, ms since the epoch */
	int has_ok;		/* a success is recorded: */
	char ok_at[40];		/* ISO 8601 */
	double ok_ms;		/* the same, ms since the epoch */
	char ok_host[256];
	double ok_seconds;
	long long ok_slot;	/* runs_slot()'s; -1: none (--record) */
	int has_failed;		/* a failure is recorded: */
	char failed_at[40];
	char failed_host[256];
	int failed_status;
};

/*
 * Create table (quoted, as counter_table_sql() writes it) unless it exists: 0,
 * or -1, the reason in err (for a role that may not: the statements to run).
 */
int runs_table(PGconn *c, const char *table, struct err *err);

/*
 * Read key's record into *row (zeroed when there is none; no_table set when
 * there is no table yet, denied when this role may not read it, with the reason
 * in err), with the server's clock. Returns 0, or -1 with the reason.
 */
int runs_read(PGconn *c, const char *table, const char *key,
    struct runs_row *row, struct err *err);

/*
 * The slot of period_ms at now_ms as a record keeps it: 0 for --once (period
 * 0, one slot for ever); else its start and its length, which name it, in one
 * bigint above 2^62, which no slot number of earlier builds reaches.
 */
long long runs_slot(double now_ms, long long period_ms);

/*
 * Does row's success count for the slot of period_ms at row->now_ms? A number
 * an earlier build wrote (below 2^62, its length unknown) counts as it did.
 */
int runs_done(const struct runs_row *row, long long period_ms);

/* One outcome of a run, to record. */
struct runs_outcome {
	const char *key;
	const char *id;		/* the lock id, as PGLOCK_ID shows it */
	int status;		/* 0: success; else the exit status */
	double seconds;		/* how long the command ran */
	long long slot;		/* runs_slot() a success counts for; -1: none */
};

/* runs_write()'s answer when the write was sent but its answer was lost. */
#define RUNS_UNCONFIRMED (-2)

/*
 * Record o as its key's last success (at the server's clock, with this host's
 * name) or last failure, in the lock's transaction if any; outside one, a
 * missing table is created first. 0; -1, the server refused it (nothing
 * written); RUNS_UNCONFIRMED, it may have been written. The reason in err.
 */
int runs_write(PGconn *c, const char *table, const struct runs_outcome *o,
    struct err *err);

/*
 * Did c's last exchange end unanswered (timed out, or the session ended before
 * the server said it was done), so that what it wrote may have landed? 1/0.
 */
int runs_unanswered(PGconn *c);

/*
 * On a new session (co: its bounds), is o's success, sent at mono_ms() since,
 * recorded: under its slot, or (slot -1) dated at or after since? 1 yes, 0 not
 * (or not yet), -1 could not tell (err).
 */
int runs_landed(const struct conn_opts *co, const char *table,
    const struct runs_outcome *o, long since, struct err *err);

/* Delete key's record: 1 when there was one, 0 none, -1 error (err). */
int runs_forget(PGconn *c, const char *table, const char *key, struct err *err);

#endif
