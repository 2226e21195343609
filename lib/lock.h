/* SPDX-License-Identifier: ISC */
/*
 * lock: take, verify, check and release one advisory lock on an open
 * connection, held by the session or by a transaction left open.
 */
#ifndef PGLOCK_LOCK_H
#define PGLOCK_LOCK_H

#include <libpq-fe.h>

#include "err.h"
#include "key.h"
#include "query.h"

struct conn_opts;

/*
 * A lock: as asked (lock_send(), lock_wait(), slots_take() take it const),
 * and, filled in by them, as held (the server's id, the scope a pooler left
 * it, the slot), which verifying, checking and releasing it read.
 */
struct lock_req {
	struct key key;
	int shared;		/* pg_advisory_lock_shared, not exclusive */
	int xact;		/* held by an open transaction, not the session */
	int prove;		/* over TCP: the session's if the server proves
				   it direct in the lock's own pipeline, else
				   lock_wait() sets xact and asks again */
	int prove_only;		/* under prove, not proven is LOCK_UNPROVEN:
				   a session's lock or none (--scope session) */
	int local;		/* the backend is proven the server's own child */
	long wait_ms;		/* -1: wait for ever; 0: try once; >0: bound */
	long lease_ms;		/* the server ends a holder silent this long
				   (lease.h's S); 0: never */
	int then;		/* the caller queued statements and this many
				   syncs of its own after lock_send()'s: a lock
				   granted and verified with no recheck leaves
				   them to it (conn_piped()); a signal may
				   leave them; any other outcome reads them
				   away (held->then 0 after lock_wait()'s) */
	int slots;		/* --slots N: one of N locks; 0: the key's */
	int slot;		/* held: which one, 1..N (slots_take()) */
	struct budget *budget;	/* bounds each answer until the lock is
				   held (-w, -n); NULL: none */
	void (*waiting)(void *);	/* if set, called each second of waiting */
	void *waiting_arg;
};

enum lock_result {
	LOCK_ACQUIRED,		/* granted; after lock_verify(), verified */
	LOCK_BUSY,		/* held by another session (-n) or timed out */
	LOCK_INTERRUPTED,	/* a signal cancelled the wait */
	LOCK_NOT_REAL,		/* granted, but not held by this session */
	LOCK_UNPROVEN,		/* prove_only, and the path is not proven
				   direct: nothing was taken */
	LOCK_ERROR		/* the server or the connection failed */
};

/*
 * Queue in one round trip the session's set-up, the lock, and a check that
 * pg_locks shows it held by this very backend (poolers and look-alikes fake
 * locks), unless r->local proved the backend the server's own child. 0, or -1,
 * the reason in err; lock_wait(), lock_verify() read the answers.
 */
int lock_send(PGconn *c, const struct lock_req *r, struct err *err);

/*
 * Wait for the answer to lock_send(c, r). The request stays as asked; what is
 * held comes in *held (r itself, if the caller keeps one struct): r as the
 * server granted it. LOCK_ACQUIRED: granted to server process *backend_pid,
 * held->key the id the server computed; lock_verify(c, held, ...) reads the
 * check (the caller may get the command ready first). Under r->prove, a path
 * not proven direct gets a transaction's lock (held->xact set, held->then 0),
 * or under r->prove_only none: LOCK_UNPROVEN. A forwarded signal (sig.h)
 * cancels the wait on the server; *sig tells which.
 */
enum lock_result lock_wait(PGconn *c, const struct lock_req *r,
    struct lock_req *held, int *backend_pid, int *sig, struct err *err);

/*
 * After lock_wait()'s LOCK_ACQUIRED, read the check: LOCK_ACQUIRED if the lock
 * is verified held by backend_pid (through a pooler, checked again in a
 * transaction of its own), else LOCK_NOT_REAL, LOCK_INTERRUPTED or LOCK_ERROR.
 * r is the lock as held; its then segments stay queued as lock_req says.
 */
enum lock_result lock_verify(PGconn *c, const struct lock_req *r,
    int backend_pid, int *sig, struct err *err);

/* Send the "is it still mine?" query without waiting for the answer. */
int lock_check_send(PGconn *c, const struct lock_req *r, struct err *err);

/*
 * Read lock_check_send's answer, each part awaited until by (mono_ms(); -1:
 * no bound), the backend's pid into *pid and whether the server has
 * synchronous standbys into *sync unless NULL: 1 still held, 0 gone, -1 error
 * or late; the reason in err.
 */
int lock_check_read(PGconn *c, mono_t by, int *pid, int *sync,
    struct err *err);

/*
 * Release the lock (unlock, or COMMIT its transaction), answered within ms: 0,
 * or -1 when it was no longer held (maybe lost while the command ran), the
 * connection failed or the server did not answer.
 */
int lock_release(PGconn *c, const struct lock_req *r, long ms, struct err *err);

/*
 * The same in two halves, for a pipeline: queue the release on c (0, or -1
 * with the reason in err: nothing was sent), then read its answer, res: 0, or
 * -1 as lock_release().
 */
int lock_queue_release(PGconn *c, const struct lock_req *r, struct err *err);
int lock_released(PGresult *res, const struct lock_req *r, struct err *err);

/* For lib/slots, which builds its own statements on the same parts: */

/* The lock function: [pg_try_]advisory[_xact]_lock[_shared], qualified. */
const char *lock_fn(int xact, int try, int shared);

/* Column col of a one-row result as a backend pid: 0, or -1 if not one. */
int lock_result_pid(PGresult *res, int col, int *pid, struct err *err);

/*
 * Through a pooler, PQbackendPID() is the pooler's invention: check again,
 * in a transaction of its own, that backend pid holds r's lock; read as
 * lock_wait() reads (conn_pipe_next()), so a forwarded signal cancels it
 * (LOCK_INTERRUPTED, *sig, which must be 0 on entry) and -w bounds it.
 */
enum lock_result lock_recheck(PGconn *c, const struct lock_req *r, int pid,
    int *sig, struct err *err);

/*
 * Does c's server show r's lock granted to server process pid: is c on the
 * lock's server (another connection may reach another, through a proxy)?
 * Answered within ms: 1, 0, or -1 (err).
 */
int lock_seen(PGconn *c, const struct lock_req *r, int pid, long ms,
    struct err *err);

/*
 * A transaction's lock r, held by the server process pid, where the server
 * has synchronous standbys: renew its lease on a connection of its own (o's,
 * no retry, given up at by), by a commit a synchronous standby confirmed and
 * that saw the lock on its server. 1, or 0 with the reason in err: not
 * renewed (a stale primary's commit waits; a proxy may route the connection
 * to the new one, where the lock is not).
 */
int lock_renew_aside(const struct conn_opts *o, const struct lock_req *r,
    int pid, mono_t by, struct err *err);

/* The reason given when the server is a standby. */
extern const char lock_standby_said[];

/* One advisory lock held or awaited, and by whom, as --status lists it. */
struct lock_row {
	char id[48];		/* as PGLOCK_ID shows it: N, or A,B */
	int shared;
	int held;		/* granted; else waiting */
	int pid;		/* the server process */
	int xact;		/* held in (or awaited by) a transaction */
	long seconds;		/* since it was taken, or asked for */
	char user[64];
	char client[64];	/* address, or "local" */
	char app[64];		/* application_name */
	char since[32];		/* RFC 3339 */
	int hidden;		/* hidden from this role (no pg_read_all_stats):
				   client, since "?"; seconds, xact -1 */
};

/* The application_name of a holder's witness (delay.h): not a holder. */
#define LOCK_WITNESS_APP "pglock witness"

/*
 * Every advisory lock held or awaited in this database (only k's unless k is
 * NULL), by id, held first, then oldest first, answered within ms: the number
 * of rows in *rows (the caller frees them), or -1, the reason in err. A
 * witness's (LOCK_WITNESS_APP) are left out.
 */
int lock_status(PGconn *c, const struct key *k, long ms,
    struct lock_row **rows, struct err *err);

/* lock_status() of the bigint ids of the array literal ids, "{1,2}". */
int lock_status_ids(PGconn *c, const char *ids, struct lock_row **rows,
    struct err *err);

#endif
