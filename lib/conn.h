/* SPDX-License-Identifier: ISC */
/*
 * conn: open the database session pglock locks through, with settings that
 * make a dead peer noticed in seconds, and render libpq's errors as one line.
 */
#ifndef PGLOCK_CONN_H
#define PGLOCK_CONN_H

#include <libpq-fe.h>

#include "err.h"

struct conn_opts {
	const char *dbname;	/* -d: a database name, conninfo or URI */
	const char *host;	/* -h */
	const char *port;	/* -p */
	const char *user;	/* -U */
	const char *appname;	/* fallback application_name */
	long connect_ms;	/* retry refusals this long; 0: one try */
	long deadline_ms;	/* mono_ms() by which to give up; -1: none */
	long attempt_ms;	/* an attempt unanswered this long is given
				   up (-n); 0: none but the above */
	/* Told once, at the first refusal retried: why, and for how long. */
	void (*retrying)(const char *why, long left_ms);
};

/*
 * Connect (no password prompt) to a primary, asking libpq for one unless the
 * user chose target_session_attrs, and refusing a standby all the same; those
 * refusals and others for load or state (too many clients, starting up,
 * refused) are retried with jittered backoff for connect_ms, no attempt
 * outliving deadline_ms or lasting over attempt_ms. The connection, or NULL
 * with the reason in err.
 */
PGconn *conn_open(const struct conn_opts *o, struct err *err);

/* Why a standby is refused, as conn_open() and the lock's check say it. */
#define CONN_STANDBY_SAID "the server is a standby (in recovery), where an " \
	"advisory lock excludes nobody"

/* Whose the lock's settings are: see conn_send_setup(). */
enum conn_scope {
	CONN_SESSION,		/* the session's */
	CONN_XACT,		/* an open transaction's (BEGIN first) */
	CONN_PROVE		/* if conn_ends()' proof holds, the session's;
				   else the implicit transaction's, to sync */
};

/*
 * Queue, on c in pipeline mode, what comes before a lock call: under CONN_XACT,
 * BEGIN ISOLATION LEVEL READ COMMITTED; then a statement that asks if the
 * server is a standby (see conn_setup_standby()) and sets statement_timeout
 * off, lock_timeout to wait_ms (none unless over 0), the idle timeouts to
 * lease_ms (0: off), the server's tcp_user_timeout to lease_ms (10 s without
 * one), synchronous_commit to on (unless remote_apply) and dead-peer detection
 * unless the user set it (keepalives give up no sooner than lease_ms where the
 * server lacks tcp_user_timeout). Settings not
 * the session's are SET LOCAL: nothing leaks into a pooler's server connection.
 * Those the server lacks are skipped: old servers work. Returns 0 or -1.
 */
int conn_send_setup(PGconn *c, long wait_ms, long lease_ms,
    enum conn_scope scope, struct err *err);

/*
 * Queue sql with its n params on c, in pipeline mode (entered if need be), for
 * conn_pipe_next() to read: 0, or -1 with the reason in PQerrorMessage(c).
 */
int conn_queue(PGconn *c, const char *sql, int n, const char *const *params);

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

/* Does the answer to conn_send_setup()'s statement say "a standby"? */
int conn_setup_standby(const PGresult *res);

/*
 * From now on, conn_pipe_next() waits for an answer until by (mono_ms(); -1:
 * never), then cancels the query and fails with "the server did not answer
 * within" ms/1000 s: no frozen or unreachable server may outlast -w or -n.
 */
void conn_deadline(long by, long ms);

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
enum conn_ready conn_await(PGconn *c, long by);

/*
 * conn_await(c, by) into *ready, then, if CONN_READY, the next result (NULL:
 * a statement's end, or the connection failed).
 */
PGresult *conn_result_by(PGconn *c, long by, enum conn_ready *ready);

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
PGresult *conn_pipe_result(PGconn *c, long by, long ms, struct err *err);

/*
 * End the open transaction (COMMIT if commit, else ROLLBACK) within ms: 0, or
 * -1 with the reason if it failed, went unanswered or a COMMIT rolled back.
 */
int conn_end(PGconn *c, int commit, long ms, struct err *err);

/* A standby? 1, 0 or -1 (reason in err); servers 14+ tell it at connection. */
int conn_standby(PGconn *c, struct err *err);

enum conn_path {
	CONN_UNPROVEN,		/* maybe a pooler: anything not proven */
	CONN_TCP,		/* TCP, not asked: conn_ends()'s proof asks */
	CONN_DIRECT_TCP,	/* the backend sees pglock's address and port */
	CONN_DIRECT_LOCAL	/* the backend is the socket listener's child */
};

/*
 * Can c be proven to reach a backend directly, no pooler between? Over TCP
 * (with ask, one round trip) the backend sees pglock's address and port; over a
 * Unix socket (Linux, no round trip) the backend pid libpq was given is a child
 * of the socket's listener. Without ask, TCP is CONN_TCP (CONN_UNPROVEN if
 * conn_ends() fails): the caller asks, with its proof, in a query of its own.
 */
enum conn_path conn_direct(PGconn *c, int ask);

/*
 * Both ends of a TCP connection as numeric text, and proof: an SQL condition on
 * params $first to $first + 3, true when the backend sees them as pglock does.
 */
struct conn_ends {
	char addr[2][64];	/* pglock's, the server's (as pglock sees it) */
	char port[2][16];
	const char *params[4];	/* addr[0], port[0], addr[1], port[1] */
	char proof[256];
};

/* Fill e with c's two ends: 0, or -1 when c is not TCP or they are unknown. */
int conn_ends(PGconn *c, int first, struct conn_ends *e);

/*
 * Was c's session ended by the server, not refused: a shutdown, a crash, an
 * administrator (57P01 to 57P03), or closed with no word? What it had not
 * answered was not done, and a new session may ask again.
 */
int conn_cut(PGconn *c);

/*
 * Was the last error the server sent a read-only server's (25006): a standby
 * behind a pooler or proxy, or a primary being demoted? Nothing was written.
 */
int conn_read_only(void);

/* Why c failed, one line: why the server hung up if it said, else libpq's. */
void conn_reason(PGconn *c, struct err *err);

/*
 * The one reader of pipelines: the next statement's result, with the NULL that
 * ends it read too, or the PGRES_PIPELINE_SYNC; NULL (the reason in err) if the
 * connection failed. While waiting, the first forwarded signal (sig.h) cancels
 * the query and is kept in *sig, and tick(arg), if set, is called every second.
 */
PGresult *conn_pipe_next(PGconn *c, int *sig, void (*tick)(void *),
    void *arg, struct err *err);

/*
 * Read the pipeline to its sync, leave pipeline mode: 0, or -1 if the
 * connection failed (err NULL: the caller has the first reason, which counts).
 */
int conn_pipe_end(PGconn *c, int *sig, struct err *err);

/* Check that a -d conninfo or URI parses: 0, or -1 with the reason in err. */
int conn_check(const char *conninfo, struct err *err);

/*
 * Overwrite with 'x', in place, a conninfo or URI holding a password (as libpq
 * parses it), so ps(1) shows it in no form; the caller connects with a copy.
 */
void conn_hide_password(char *conninfo);

/* Is res an error with this SQLSTATE? */
int conn_is_state(const PGresult *res, const char *state);

/* Copy a libpq message into err as one line, without the trailing newline. */
void conn_oneline(const char *msg, struct err *err);

/*
 * A failed result's error as one line: the server's message, without
 * libpq's "FATAL:  " or "ERROR:  " in front, and its detail if any.
 */
void conn_result_error(const PGresult *res, struct err *err);

#endif
