/* SPDX-License-Identifier: ISC */
/*
 * said: what the server and libpq said, as one line, and what a session's
 * last error tells of it: cut, read-only.
 */
#ifndef PGLOCK_SAID_H
#define PGLOCK_SAID_H

#include <libpq-fe.h>

#include "err.h"

/*
 * Was c's session ended by the server, not refused: a shutdown, a crash, an
 * administrator (57P01 to 57P03), an idle timeout (57P05, 25P03: a waiter
 * granted while stopped), or closed with no word? What it had not answered
 * was not done, and a new session may ask again.
 */
int conn_cut(PGconn *c);

/*
 * Was the last error c's server sent a read-only server's (25006): a standby
 * behind a pooler or proxy, or a primary being demoted? Nothing was written.
 */
int conn_read_only(const PGconn *c);

/* Why c failed, one line: why the server hung up if it said, else libpq's. */
void conn_reason(PGconn *c, struct err *err);

/* Is res an error with this SQLSTATE? */
int conn_is_state(const PGresult *res, const char *state);

/* Copy a libpq message into err as one line, without the trailing newline. */
void conn_oneline(const char *msg, struct err *err);

/*
 * A failed result's error as one line: the server's message, without
 * libpq's "FATAL:  " or "ERROR:  " in front, and its detail if any.
 */
void conn_result_error(const PGresult *res, struct err *err);

/*
 * Keep, with c (every session, from its start), what its server says: its
 * errors, in results and outside a query (why it hung up), for conn_reason(),
 * conn_cut() and conn_read_only(); each session's own, never another's.
 * Also stops libpq printing notices itself. 0, or -1 (out of memory).
 */
int conn_said_watch(PGconn *c);

#endif
