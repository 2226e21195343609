/* SPDX-License-Identifier: ISC */
/*
 * conn: open the database session pglock locks through, with settings that
 * make a dead peer noticed in seconds, and render libpq's errors as one line.
 */
#ifndef PGLOCK_CONN_H
#define PGLOCK_CONN_H

#include <libpq-fe.h>

#include "clock.h"
#include "err.h"
#include "query.h"

struct conn_opts {
	const char *dbname;	/* -d: a database name, conninfo or URI */
	const char *host;	/* -h */
	const char *port;	/* -p */
	const char *user;	/* -U */
	const char *appname;	/* fallback application_name */
	long connect_ms;	/* retry refusals this long; 0: one try */
	mono_t deadline_ms;	/* mono_ms() by which to give up; NEVER: none */
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

/*
 * One try of conn_open()'s, begun without waiting: 0, op->c under way (see
 * conn_beside()), or -1 (err).
 */
int conn_start(const struct conn_opts *o, struct conn_opening *op,
    struct err *err);

/*
 * End the try conn_start() began, by by (mono_ms(); -1: never): the
 * connection to a primary, or NULL (the reason in err); op->c NULL after.
 */
PGconn *conn_finish(struct conn_opening *op, mono_t by, struct err *err);

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
 * idle_ms (0: off; a lock's lease, lease_ms, but for a witness, delay.h), the
 * server's tcp_user_timeout to lease_ms (10 s without
 * one), synchronous_commit to on (unless remote_apply) and dead-peer detection
 * unless the user set it (keepalives give up no sooner than lease_ms where the
 * server lacks tcp_user_timeout). Settings not
 * the session's are SET LOCAL: nothing leaks into a pooler's server connection.
 * Those the server lacks are skipped: old servers work. Returns 0 or -1.
 */
int conn_send_setup(PGconn *c, long wait_ms, long idle_ms, long lease_ms,
    enum conn_scope scope, struct err *err);

/* Does the answer to conn_send_setup()'s statement say "a standby"? */
int conn_setup_standby(const PGresult *res);

/* A standby? 1, 0 or -1 (reason in err); servers 14+ tell it at connection. */
int conn_standby(PGconn *c, long ms, struct err *err);

/* The value of keyword in o (PQconninfo()'s, PQconninfoParse()'s), or NULL. */
const char *conn_option(const PQconninfoOption *o, const char *keyword);

#endif
