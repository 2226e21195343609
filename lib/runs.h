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
#include "key.h"

/* Longest record name: the table's btree key takes ~2.7 kB raw text. */
#define RUNS_NAME_MAX 2600

/* Longest --reason a pause keeps, in bytes. */
#define RUNS_REASON_MAX 1000

/* A key's record as read, and the server's clock when it was read. */
struct runs_row {
	int no_table;		/* the table does not exist (yet) */
	int denied;		/* this role may not read it */
	double now_ms;		/* the server's clock, ms since the epoch */
	int has_ok;		/* a success is recorded: */
	char ok_at[40];		/* RFC 3339 */
	double ok_ms;		/* the same, ms since the epoch */
	char ok_host[256];
	double ok_seconds;
	long long ok_slot;	/* runs_slot()'s; -1: none (--record) */
	int has_failed;		/* a failure is recorded: */
	char failed_at[40];
	double failed_ms;
	char failed_host[256];
	int failed_status;
	long failures;		/* since the last success; -1: not counted */
	int paused;		/* a pause in force by the server's clock: */
	char paused_at[40];
	char paused_until[40];	/* "": until resumed */
	char paused_host[256];
	char paused_reason[RUNS_REASON_MAX + 1];	/* "": none given */
	/* runs_read_when()'s; the times RFC 3339, in its zone: */
	char last_ok[64];	/* the success, or "" */
	int zone_bad;		/* no zone the server knows (err says) */
	long long slot;		/* the slot's identity, as runs_slot() */
	char slot_start[64], slot_end[64], due_at[64];
	int due;		/* the slot's offset (--after) has passed */
	int history;		/* the history table exists (the read's) */
	int history_denied;	/* it does not, and this role may not make
				   it (runs_history_denied() says) */
};

/* The slot of a --once-per run, as the server's clock and zone data make it. */
struct runs_when {
	long long period_ms;	/* DURATION; 0: no slot (--once, --record) */
	const char *zone;	/* --tz ZONE's wall clock; NULL: the epoch's */
	long long after_ms;	/* due from this far into the slot */
};

/* Longest history table name as SQL: the runs table's, and "_history". */
#define RUNS_HISTORY_SQL_MAX 320

/* Most rows a key's history keeps (--keep-history), and the default. */
#define RUNS_KEEP_MAX 10000
#define RUNS_KEEP_DEFAULT 50

/*
 * The history table of the runs table runs_sql (as counter_table_sql()
 * writes it): the same name, in the same schema, with "_history" added.
 */
void runs_history_sql(const char *runs_sql, char *out, size_t len);

/*
 * Create table (quoted, as counter_table_sql() writes it) and its history
 * table (NULL: none) unless they exist: 0, or -1, the reason in err (for a
 * role that may not: the statements to run); 1 when only the history could
 * not be made (err says why; not tried where this role may not create it):
 * runs are recorded without it. Each statement
 * is answered within b (budget_ms(); NULL: CONN_ANSWER_MS).
 */
int runs_table(PGconn *c, const char *table, const char *history,
    const struct budget *b, struct err *err);

/*
 * Read key's record into *row (zeroed when there is none; no_table set when
 * there is no table yet, denied when this role may not read it, with the reason
 * in err), with the server's clock. Returns 0, or -1 with the reason.
 */
int runs_read(PGconn *c, const char *table, const char *key,
    struct runs_row *row, struct err *err);

/*
 * Every record of table, by name: *names and *rows (malloc'd, *n of each; the
 * caller frees each name, then both arrays). 0 (none when there is no table);
 * 1, this role may not read it; -1, error. The reason in err.
 */
int runs_list(PGconn *c, const char *table, char ***names,
    struct runs_row **rows, int *n, struct err *err);

/*
 * runs_read(), and in the same query the slot of w (NULL: none) around the
 * server's now, and whether history (NULL: none asked) exists; a zone the
 * server does not know, or reads as an abbreviation (a fixed offset: CEST),
 * sets zone_bad and returns -1.
 */
int runs_read_when(PGconn *c, const char *table, const char *history,
    const char *key, const struct runs_when *w, long ms, struct runs_row *row,
    struct err *err);

/*
 * The same in two halves, for the lock's round trip: queue the read on c in
 * pipeline mode, with a sync of its own (xact: in the lock's transaction,
 * whose snapshot it then ends): 0, or -1 (err). Then read its answer, to its
 * sync, by by (mono_ms()), ms being what by allowed: as runs_read_when().
 */
int runs_queue_read(PGconn *c, const char *table, const char *history,
    const char *key, const struct runs_when *w, int xact, struct err *err);
int runs_read_queued(PGconn *c, const struct runs_when *w, mono_t by, long ms,
    struct runs_row *row, struct err *err);

/*
 * The slot of period_ms at now_ms as a record keeps it: 0 for --once (period
 * 0, one slot for ever); else its start and its length, which name it, in one
 * bigint above 2^62, which no slot number of earlier builds reaches.
 */
long long runs_slot(double now_ms, long long period_ms);

/*
 * Does row's success count for its slot (runs_read_when()'s), or else the slot
 * of period_ms at row->now_ms? A number an earlier build wrote (below 2^62,
 * its length unknown) counts as it did, for a slot of the epoch's clock.
 */
int runs_done(const struct runs_row *row, long long period_ms);

/* One outcome of a run, to record. */
struct runs_outcome {
	const char *key;
	const char *id;		/* the lock id, as PGLOCK_ID shows it */
	int status;		/* 0: success; else the exit status */
	double seconds;		/* how long the command ran */
	long long slot;		/* runs_slot() a success counts for; -1: none */
	int streak;		/* the table counts failures (runs_row's >= 0) */
	const char *node;	/* this machine's name, as records keep it */
	/* Its row in the history: */
	const char *history;	/* the table (as runs_history_sql()); NULL:
				   none kept */
	int keep;		/* rows the key keeps there, this one too */
	const char *output;	/* --keep-output: the last output_len bytes
				   the command wrote (not UTF-8 perhaps, as
				   they came); NULL: none kept */
	size_t output_len;
};

/* A write sent whose answer was lost: it may have landed. */
#define RUNS_UNCONFIRMED (-2)

/*
 * Queue, in c's pipeline, the record of o as its key's last success (at the
 * server's clock, with o->node) or last failure: it lands with the
 * commit that follows it (a sync, or the lock's transaction's COMMIT). 0, or
 * -1 with the reason in err: nothing was sent.
 */
int runs_queue_write(PGconn *c, const char *table,
    const struct runs_outcome *o, struct err *err);

/*
 * Queue, in c's pipeline, o's row in its history alone (a run whose record
 * cannot be written: its lock was lost), trimmed to o->keep rows: 0, or -1.
 */
int runs_queue_history(PGconn *c, const struct runs_outcome *o,
    struct err *err);

/*
 * err: history (as runs_history_sql() writes it) does not exist and c's role
 * may not create it: the statements an administrator runs.
 */
void runs_history_denied(PGconn *c, const char *history, struct err *err);

/*
 * A write refused for want of a privilege (res): add to err the GRANTs that
 * c's role needs on table and history (NULL: none).
 */
void runs_grant_hint(PGconn *c, const PGresult *res, const char *table,
    const char *history, struct err *err);

/* The write's answer: 0, or -1, the server refused it (err says why). */
int runs_written(const PGresult *res, struct err *err);

/*
 * On a new session (co: its bounds), is o's success recorded: under its slot,
 * or (slot -1) as another success than the one read under the lock, at
 * before_ms (-1: none), by o->node, o->seconds long? 1 yes, 0 not (or not
 * yet), -1 could not tell (err).
 */
int runs_landed(const struct conn_opts *co, const char *table,
    const struct runs_outcome *o, double before_ms, struct err *err);

/*
 * --spread s (seconds): k's offset into its slots, ((id % s) + s) % s seconds,
 * in ms; id is k's bigint, and a pair A,B the bigint A * 2^32 + (B mod 2^32)
 * (pg_locks' classid and objid). 0 for s 0.
 */
long long runs_spread_ms(const struct key *k, long long s);

/* A pause of a key's runs, to record. */
struct runs_pause {
	const char *key;
	const char *id;		/* the lock id, as PGLOCK_ID shows it */
	long long for_ms;	/* from the server's now; -1: until resumed */
	const char *reason;	/* "": none */
	int create;		/* a key with no record too (--new) */
	const char *node;	/* this machine's name, as records keep it */
};

/*
 * Pause p->key from the server's now, with p->node: 0, with the end
 * (as runs_row's paused_until) in until; 1 if p->key has no record and not
 * p->create (nothing written: a typo pauses nothing); -1, the reason in err
 * (for a table an earlier build made, which lacks the columns: the ALTER
 * TABLE its owner can run). p->create makes the record, and the table first
 * when there is none.
 */
int runs_pause(PGconn *c, const char *table, const struct runs_pause *p,
    char until[40], struct err *err);

/*
 * The recorded keys nearest to key (by edit distance, a few edits at most),
 * up to n of them, each malloc'ed into near (the rest NULL): the number
 * found, or -1 (err). No table: 0.
 */
int runs_near(PGconn *c, const char *table, const char *key, char **near,
    int n, struct err *err);

/* End key's pause: 1 when one was in force, 0 none, -1 error (err). */
int runs_resume(PGconn *c, const char *table, const char *key,
    struct err *err);

/*
 * Delete key's record of runs (a pause stays): 1 when there was one, 0 none,
 * -1 error (err).
 */
int runs_forget(PGconn *c, const char *table, const char *key, struct err *err);

/* A run as its history keeps it. */
struct runs_run {
	char started[64];	/* RFC 3339, the session's zone; "": none */
	char ended[64];
	char *node;		/* malloc'd */
	double seconds;
	int status;		/* pglock's exit status: 128+N for signal N */
	long long slot;		/* -1: none */
	char *output;		/* malloc'd, output_len bytes; NULL: none */
	size_t output_len;
};

/*
 * KEY's runs in history, newest first, into *runs (malloc'd, *n of them:
 * runs_free() them): 0 (none when there is no table), 1 this role may not
 * read it, or -1 (err).
 */
int runs_history(PGconn *c, const char *history, const char *key,
    struct runs_run **runs, int *n, struct err *err);
void runs_free(struct runs_run *runs, int n);

/*
 * The last run's duration of every key in history, by key: names[i] took
 * seconds[i] (both malloc'd; each name too). 0, 1 not readable, -1 (err).
 */
int runs_last_durations(PGconn *c, const char *history, char ***names,
    double **seconds, int *n, struct err *err);

#endif
