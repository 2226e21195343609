/* SPDX-License-Identifier: ISC */
/*
 * query: send queries and read their answers on an open session, single
 * statements and pipelines, each read bounded in time.
 */
#ifndef PGLOCK_QUERY_H
#define PGLOCK_QUERY_H

#include <libpq-fe.h>

#include "clock.h"
#include "err.h"

/*
 * Queue sql with its n params on c, in pipeline mode (entered if need be), for
 * conn_pipe_next() to read: 0, or -1 with the reason in PQerrorMessage(c).
 */
int conn_queue(PGconn *c, const char *sql, int n, const char *const *params);

/*
 * The same, its n (at most 8) parameters text: one the SQL leaves unused is
 * no error (TEXTOID, not inferred).
 */
int conn_queue_text(PGconn *c, const char *sql, int n,
    const char *const *params);

/*
 * The pipeline's other steps, each 0 or -1 (the reason in PQerrorMessage(c)):
 * enter pipeline mode; end what is queued with a sync (its own transaction's
 * end, where none is open); have the server send what it has answered so far
 * (a lock's answer, before the statements queued after it); leave.
 */
int conn_pipe_begin(PGconn *c);
int conn_sync(PGconn *c);
int conn_flush(PGconn *c);
int conn_pipe_leave(PGconn *c);

/*
 * Take in what came on c, without blocking: 0, a result can be read; 1, not
 * yet; -1, the connection failed (what the server said first is parsed, for
 * conn_reason()).
 */
int conn_take_input(PGconn *c);

/*
 * A run's time budget before its command, derived once (as lease_of() derives
 * the lease) and handed to every exchange up to the lock held: a pipeline's
 * answers are awaited until by at the latest, then the query is cancelled
 * (once) and the wait fails with "the server did not answer within" ms; a
 * single statement gets budget_ms(), what is left: no frozen or unreachable
 * server outlasts -w or -n.
 */
struct budget {
	mono_t by;		/* mono_ms(); NEVER: no bound */
	long ms;		/* what by allowed, for the message */
	int over;		/* by came, what ran was cancelled: later
				   waits fail at once, cancelling nothing */
};

/* The budget that ends at by (-1: none), ms being what it allows. */
struct budget budget_of(mono_t by, long ms);

/*
 * At most ms, and no more than what is left of b (1 at least): the bound of a
 * single statement. b NULL, or over (the reads of what it cancelled fail at
 * once; a statement after, such as a rollback, gets its own bound): ms.
 */
long budget_ms(const struct budget *b, long ms);

/*
 * The least pglock waits for the answer to a check, release or commit: a frozen
 * backend (on a Unix socket, no keepalive notices) must not hang pglock.
 */
#define CONN_ANSWER_MS 10000L

enum conn_ready {
	CONN_READY,		/* an answer can be read without blocking */
	CONN_LATE,		/* the time ran out first */
	CONN_BROKEN		/* the connection failed */
};

/*
 * Cancel c's running query (a lock waiter leaves the queue; a commit stops
 * waiting for a synchronous standby), the request bounded to 2 s.
 */
void conn_cancel(PGconn *c);

/* Wait, until mono_ms() reaches by, until an answer on c can be read. */
enum conn_ready conn_await(PGconn *c, mono_t by);

/*
 * A connection being opened without blocking (PQconnectStartParams()): its
 * handshake's next step waits for its socket as st, PQconnectPoll()'s last
 * answer, says. c NULL: none.
 */
struct conn_opening {
	PGconn *c;
	PostgresPollingStatusType st;
};

/*
 * Wait until by (mono_ms(); -1: never) for o's handshake to end: CONN_READY
 * (PQstatus() says how it ended), CONN_LATE, or CONN_BROKEN if poll failed.
 */
enum conn_ready conn_opening_wait(struct conn_opening *o, mono_t by);

/*
 * o (NULL: none) is opened beside the session whose answers pglock awaits,
 * without a wait of its own: every wait for an answer advances o's handshake
 * too. Unless asked is NEVER, it closes o (o->c NULL) once it is open and
 * the answer is still awaited 0.2 s after asked (mono_ms() of the lock's
 * ask): a lock's waiter keeps one session, not two.
 */
void conn_beside(struct conn_opening *o, mono_t asked);

/*
 * conn_await(c, by) into *ready, then, if CONN_READY, the next result (NULL:
 * a statement's end, or the connection failed).
 */
PGresult *conn_result_by(PGconn *c, mono_t by, enum conn_ready *ready);

/*
 * Run sql with params (NULL-terminated, or NULL), waiting at most ms: its first
 * result, or NULL with the reason in err (a failed connection, no answer).
 */
PGresult *conn_exec(PGconn *c, const char *sql, const char *const *params,
    long ms, struct err *err);

/*
 * After conn_exec() gave up on an answer: cancel the query and read what it
 * answers to its end, within 2 s. 0, c is free for the next query; -1, not.
 */
int conn_settle(PGconn *c);

/*
 * The next answer of a pipeline read to its end: a statement's result (the
 * NULL that ends it read too), or the PGRES_PIPELINE_SYNC of a sync; awaited
 * until by (mono_ms()), ms being what by allowed, for the message. NULL, the
 * reason in err: no answer in time, the connection failed, or the server
 * ended the session (a FATAL) instead of answering.
 */
PGresult *conn_pipe_result(PGconn *c, mono_t by, long ms, struct err *err);

/*
 * Read a pipeline's answers to its next sync, as conn_pipe_result(): 0, or -1
 * (the reason in err). c stays in pipeline mode.
 */
int conn_pipe_skip(PGconn *c, mono_t by, long ms, struct err *err);

/*
 * The same for answers nobody will read (statements queued behind a lock that
 * was not granted): what has not answered within CONN_DISCARD_MS (waiting,
 * say, on a table another session locked) is cancelled, and then read.
 */
int conn_pipe_discard(PGconn *c, mono_t by, long ms, struct err *err);
#define CONN_DISCARD_MS 500L

/*
 * End the open transaction (COMMIT if commit, else ROLLBACK) within ms: 0, or
 * -1 with the reason if it failed, went unanswered or a COMMIT rolled back.
 */
int conn_end(PGconn *c, int commit, long ms, struct err *err);

/*
 * The one reader of pipelines: the next statement's result, with the NULL that
 * ends it read too, or the PGRES_PIPELINE_SYNC; NULL (the reason in err) if the
 * connection failed or b (NULL: none) ran out. While waiting, the first
 * forwarded signal (sig.h) cancels the query and is kept in *sig, and
 * tick(arg), if set, is called every second.
 */
PGresult *conn_pipe_next(PGconn *c, struct budget *b, int *sig,
    void (*tick)(void *), void *arg, struct err *err);

/*
 * Read the pipeline to its sync, leave pipeline mode: 0, or -1 if the
 * connection failed (err NULL: the caller has the first reason, which counts).
 */
int conn_pipe_end(PGconn *c, struct budget *b, int *sig, struct err *err);

/* The same, staying in pipeline mode: what was queued after is yet to come. */
int conn_pipe_to_sync(PGconn *c, struct budget *b, int *sig,
    struct err *err);

/* Is c in pipeline mode: are answers queued after a lock's yet to be read? */
int conn_piped(PGconn *c);

#endif
