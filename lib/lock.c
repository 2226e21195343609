/* SPDX-License-Identifier: ISC */
/*
 * lock: the SQL side of an advisory lock. Acquisition is one pipeline ([BEGIN;]
 * settings; lock; verify in pg_locks): one round trip. A session lock is for a
 * connection proven direct (over TCP, in the same pipeline); elsewhere the lock
 * is a transaction's, which pins the server connection in any pooler and goes
 * with a rollback or a dropped connection. The lease's periodic check is read
 * by a reader of its own that never waits: lib/child's loop calls it once the
 * answer is in.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "conn.h"
#include "lock.h"
#include "proof.h"
#include "query.h"
#include "said.h"

/*
 * The SQL of a key: the lock function's arguments ("$1::bigint", or for a
 * server-side scheme "(hashtext($1))::bigint") and their parameters. Only
 * fixed text from the scheme table goes into SQL; the key stays a parameter.
 */
struct args {
	char e[2][64];		/* one expression per argument */
	char num[2][24];
	const char *params[3];	/* NULL-terminated */
	int n;
};

static void
key_args(const struct key *k, struct args *a)
{
	a->n = key_params(k, a->num);
	if (k->sql == NULL) {
		a->params[0] = a->num[0];
		a->params[1] = a->num[1];
		snprintf(a->e[0], sizeof(a->e[0]), k->space == KEY_BIGINT ?
		    "$1::bigint" : "$1::int4");
		snprintf(a->e[1], sizeof(a->e[1]), "$2::int4");
	} else if (k->space == KEY_BIGINT) {
		a->params[0] = k->text;
		snprintf(a->e[0], sizeof(a->e[0]), "(%s)::bigint", k->sql);
	} else {
		/* --namespace: (A, hashtext(KEY)); the key text is $1. */
		a->params[0] = k->text;
		a->params[1] = a->num[0];
		snprintf(a->e[0], sizeof(a->e[0]), "$2::int4");
		snprintf(a->e[1], sizeof(a->e[1]), "(%s)::int4", k->sql);
	}
	a->params[a->n] = NULL;
}

/* The pg_locks condition (alias l) that matches the key's lock. */
static void
tag_sql(const struct args *a, char *sql, size_t len)
{
	/* pg_locks keeps the two halves of the id as unsigned oids. */
	if (a->n == 1)
		snprintf(sql, len, "l.objsubid = 1"
		    " AND l.classid = ((%s >> 32) & 4294967295)::oid"
		    " AND l.objid = (%s & 4294967295)::oid", a->e[0], a->e[0]);
	else
		snprintf(sql, len, "l.objsubid = 2"
		    " AND l.classid = ((%s)::bigint & 4294967295)::oid"
		    " AND l.objid = ((%s)::bigint & 4294967295)::oid",
		    a->e[0], a->e[1]);
}

/*
 * In a transaction a SELECT's unnamed portal keeps its snapshot (backend_xmin)
 * until the next statement: a utility one, which takes none, lets vacuum on. It
 * sets again what must not change: the lease's idle timeout.
 */
static int
send_portal_closer(PGconn *c, const struct lock_req *r)
{
	char sql[96];

	snprintf(sql, sizeof(sql), "SET LOCAL "
	    "idle_in_transaction_session_timeout = %ld", r->lease_ms);
	return !r->xact || conn_queue(c, sql, 0, NULL) == 0;
}

/* The server has synchronous standbys. */
#define SYNC_SQL "pg_catalog.current_setting('synchronous_standby_names') <> ''"

/*
 * A commit that writes this, a few dozen bytes of WAL and no table, must wait
 * for a synchronous standby (synchronous_commit on: conn.h). PostgreSQL 17
 * gave the function a fourth argument, with a default.
 */
#define EMIT_SQL "pg_catalog.pg_logical_emit_message(true, 'pglock', '')"
#define EMIT_ALLOWED "pg_catalog.has_function_privilege(coalesce(" \
	"pg_catalog.to_regprocedure('pg_catalog.pg_logical_emit_message(" \
	"boolean, text, text, boolean)'), pg_catalog.to_regprocedure(" \
	"'pg_catalog.pg_logical_emit_message(boolean, text, text)')), 'EXECUTE')"

/*
 * Where the server has synchronous standbys, a session's lock is renewed only
 * by a commit one of them confirmed. The check's implicit transaction commits
 * at the pipeline's sync, before which the server sends no answer: a primary
 * cut off from its synchronous standbys (a stale one, after a failover)
 * leaves the check unanswered, and the lease ends. A transaction's lock,
 * which keeps no xid, is renewed on a connection of its own
 * (lock_renew_aside). Not where the role may not call it.
 */
#define RENEW_SQL " FROM (SELECT CASE WHEN " SYNC_SQL " AND " EMIT_ALLOWED \
	" THEN " EMIT_SQL " END) renew"

/* Queue the check's query on a connection in pipeline mode. */
static int
send_check(PGconn *c, const struct lock_req *r, struct err *err)
{
	char sql[2048], tag[512];
	struct args a;

	key_args(&r->key, &a);
	tag_sql(&a, tag, sizeof(tag));
	/*
	 * Held, granted, to this backend? pg_lock_status() is pg_locks without
	 * the view a new backend must load; its locks are all in its database.
	 */
	snprintf(sql, sizeof(sql), "SELECT pg_catalog.pg_backend_pid(),"
	    " EXISTS (SELECT FROM pg_catalog.pg_lock_status() l WHERE"
	    " l.locktype = 'advisory' AND l.pid = pg_catalog.pg_backend_pid()"
	    " AND l.granted AND l.mode = '%s' AND %s), " SYNC_SQL "%s",
	    r->shared ? "ShareLock" : "ExclusiveLock", tag, r->xact ? "" :
	    RENEW_SQL);
	if (conn_queue(c, sql, a.n, a.params) == -1 ||
	    !send_portal_closer(c, r)) {
		conn_oneline(PQerrorMessage(c), err);
		return -1;
	}
	return 0;
}

int
lock_check_send(PGconn *c, const struct lock_req *r, struct err *err)
{
	if (conn_pipe_begin(c) == -1 || send_check(c, r, err) == -1 ||
	    conn_sync(c) == -1) {
		conn_oneline(PQerrorMessage(c), err);
		return -1;
	}
	return 0;
}

int
lock_result_pid(PGresult *res, int col, int *pid, struct err *err)
{
	char *end;
	long v;

	/* A stub or a pooler may answer anything: atoi would be UB. */
	errno = 0;
	v = strtol(PQgetvalue(res, 0, col), &end, 10);
	if (errno != 0 || *end != '\0' || v <= 0 || v > INT_MAX) {
		err_set(err, "the server sent a bad backend pid");
		return -1;
	}
	*pid = (int)v;
	return 0;
}

/*
 * A check's result: 1 held, 0 not, -1 error; the backend's pid unless NULL,
 * and whether the server has synchronous standbys unless NULL.
 */
static int
check_result(PGresult *res, int *pid, int *sync, struct err *err)
{
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		conn_result_error(res, err);
		return -1;
	}
	if (PQntuples(res) != 1 || PQnfields(res) != 3) {
		err_set(err, "the server's answer to the lock check "
		    "is not PostgreSQL's");
		return -1;
	}
	if (pid != NULL && lock_result_pid(res, 0, pid, err) == -1)
		return -1;
	if (sync != NULL)
		*sync = strcmp(PQgetvalue(res, 0, 2), "t") == 0;
	if (strcmp(PQgetvalue(res, 0, 1), "t") != 0) {
		err_set(err, "the lock is not held by this session");
		return 0;
	}
	return 1;
}

int
lock_check_read(PGconn *c, mono_t by, int *pid, int *sync, struct err *err)
{
	PGresult *res;
	enum conn_ready ready;
	int held = -1, n = 0;

	for (;;) {
		/* A result, a statement's end, the sync: each may come later. */
		res = conn_result_by(c, by, &ready);
		if (ready == CONN_LATE) {
			err_set(err, "the server did not answer the lock check "
			    "in time");
			held = -1;
			break;
		}
		if (res == NULL && (ready == CONN_BROKEN ||
		    PQstatus(c) == CONNECTION_BAD)) {
			if (n == 0 || held != -1)
				conn_reason(c, err);
			held = -1;
			break;
		}
		if (res == NULL)
			continue;	/* the end of one statement */
		if (PQresultStatus(res) == PGRES_PIPELINE_SYNC) {
			PQclear(res);
			break;
		}
		if (n++ == 0)
			held = check_result(res, pid, sync, err);
		PQclear(res);
	}
	(void)conn_pipe_leave(c);
	return held;
}

/*
 * A pooler may run this check on a server process other than the lock's.
 * Read as the lock's answer: -w bounds it, a forwarded signal cancels it.
 */
enum lock_result
lock_recheck(PGconn *c, const struct lock_req *r, int pid, int *sig,
    struct err *err)
{
	PGresult *res;
	int held, pid2 = 0;

	if (lock_check_send(c, r, err) == -1)
		return LOCK_ERROR;
	if ((res = conn_pipe_next(c, r->budget, sig, NULL, NULL, err)) == NULL)
		return *sig != 0 ? LOCK_INTERRUPTED : LOCK_ERROR;
	held = check_result(res, &pid2, NULL, err);
	PQclear(res);
	if (conn_pipe_end(c, r->budget, sig, held == -1 ? NULL : err) == -1)
		held = -1;
	if (*sig != 0)
		return LOCK_INTERRUPTED;
	if (held == -1)
		return LOCK_ERROR;
	return held == 1 && pid2 == pid ? LOCK_ACQUIRED : LOCK_NOT_REAL;
}

/* lock_seen(), and under renew the synchronous commit's set-up and WAL. */
static int
seen(PGconn *c, const struct lock_req *r, int pid, int renew, long ms,
    struct err *err)
{
	char sql[2048], tag[512], num[16];
	const char *params[4];
	struct args a;
	PGresult *res;
	int rc = -1;

	key_args(&r->key, &a);
	tag_sql(&a, tag, sizeof(tag));
	memcpy(params, a.params, sizeof(a.params));
	snprintf(num, sizeof(num), "%d", pid);
	params[a.n] = num;
	params[a.n + 1] = NULL;
	snprintf(sql, sizeof(sql), "SELECT EXISTS (SELECT FROM "
	    "pg_catalog.pg_lock_status() l WHERE l.locktype = 'advisory' AND "
	    "l.granted AND l.pid = $%d::int4 AND %s)%s", a.n + 1, tag, renew ?
	    ", pg_catalog.set_config('synchronous_commit', CASE "
	    "pg_catalog.current_setting('synchronous_commit') WHEN "
	    "'remote_apply' THEN 'remote_apply' ELSE 'on' END, true), CASE "
	    "WHEN " EMIT_ALLOWED " THEN " EMIT_SQL " END" : "");
	if ((res = conn_exec(c, sql, params, ms, err)) == NULL)
		return -1;
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		conn_result_error(res, err);
	else if (PQntuples(res) != 1 || PQnfields(res) != (renew ? 3 : 1))
		err_set(err, "the server's answer to the lock's look-up is "
		    "not PostgreSQL's");
	else
		rc = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);
	return rc;
}

int
lock_seen(PGconn *c, const struct lock_req *r, int pid, long ms,
    struct err *err)
{
	return seen(c, r, pid, 0, ms, err);
}

int
lock_renew_aside(const struct conn_opts *co, const struct lock_req *r,
    int pid, mono_t by, struct err *err)
{
	struct conn_opts o = *co;
	PGresult *res;
	PGconn *c;
	int rc = 0;

	/* A refusal for load is retried, within the check's bound. */
	o.connect_ms = (long)deadline_left(by);
	o.deadline_ms = by;
	o.attempt_ms = 0;
	o.retrying = NULL;
	if ((c = conn_open(&o, err)) == NULL)
		return 0;
	if ((res = conn_exec(c, "BEGIN", NULL, (long)deadline_left(by),
	    err)) != NULL &&
	    PQresultStatus(res) != PGRES_COMMAND_OK)
		conn_result_error(res, err);
	else if (res != NULL && (rc = seen(c, r, pid, 1,
	    (long)deadline_left(by), err)) == 0)
		err_set(err, "the lock's renewal reached another server than "
		    "the lock's (through a proxy?)");
	PQclear(res);
	if (rc == 1 && conn_end(c, 1, (long)deadline_left(by), err) == -1) {
		rc = 0;
		/* The commit waits on: let its server process go. */
		if (deadline_passed(by)) {
			conn_cancel(c);
			err_set(err, "its commit was not confirmed in time (a "
			    "primary cut off from its synchronous standbys?)");
		}
	}
	PQfinish(c);
	return rc == 1;
}

const char lock_standby_said[] = CONN_STANDBY_SAID;

/* [xact][try][shared] */
static const char *const lock_fns[2][2][2] = {
	{ { "pg_catalog.pg_advisory_lock",
	    "pg_catalog.pg_advisory_lock_shared" },
	  { "pg_catalog.pg_try_advisory_lock",
	    "pg_catalog.pg_try_advisory_lock_shared" } },
	{ { "pg_catalog.pg_advisory_xact_lock",
	    "pg_catalog.pg_advisory_xact_lock_shared" },
	  { "pg_catalog.pg_try_advisory_xact_lock",
	    "pg_catalog.pg_try_advisory_xact_lock_shared" } }
};

const char *
lock_fn(int xact, int try, int shared)
{
	return lock_fns[xact != 0][try != 0][shared != 0];
}

/* Granted (held->key: the server's id), busy or error: the lock's answer. */
static enum lock_result
lock_answer(PGresult *res, struct lock_req *held, int *backend_pid,
    struct err *err)
{
	struct key k;
	struct err why;

	if (conn_is_state(res, "55P03"))	/* lock_not_available: lock_timeout */
		return LOCK_BUSY;
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		conn_result_error(res, err);
		return LOCK_ERROR;
	}
	if (PQntuples(res) != 1 || PQnfields(res) != 3 + held->prove) {
		err_set(err, "the server's answer to the lock call "
		    "is not PostgreSQL's");
		return LOCK_ERROR;
	}
	if (strcmp(PQgetvalue(res, 0, 0), "f") == 0)
		return LOCK_BUSY;
	if (lock_result_pid(res, 1, backend_pid, err) == -1)
		return LOCK_ERROR;
	if (key_parse_id(PQgetvalue(res, 0, 2), &k, &why) == 0) {
		held->key.id = k.id;
		held->key.a = k.a;
		held->key.b = k.b;
	}
	return LOCK_ACQUIRED;
}

int
lock_send(PGconn *c, const struct lock_req *r, struct err *err)
{
	char sql[1024];
	const char *proof = "";
	const char *params[6];
	struct conn_ends e;
	struct args a;
	int n = 0;

	key_args(&r->key, &a);
	memcpy(params, a.params, sizeof(a.params));
	/*
	 * Under prove, a session lock only where the backend proves the link
	 * direct; else none, and lock_wait() asks for a transaction's.
	 */
	if (r->prove) {
		if (conn_ends(c, a.n + 1, &e) == -1) {
			err_set(err, "no TCP connection to prove direct");
			return -1;
		}
		memcpy(params + a.n, e.params, sizeof(e.params));
		proof = e.proof;
		n = snprintf(sql, sizeof(sql), "SELECT CASE WHEN %s THEN ",
		    proof);
	} else {
		n = snprintf(sql, sizeof(sql), "SELECT ");
	}
	/* The lock, then the backend's pid and the id, as text. */
	n += snprintf(sql + n, sizeof(sql) - (size_t)n, "%s(%s%s%s)%s, "
	    "pg_catalog.pg_backend_pid(), %s%s%s%s%s",
	    lock_fn(r->xact, r->wait_ms == 0, r->shared), a.e[0],
	    a.n == 1 ? "" : ", ", a.n == 1 ? "" : a.e[1], r->prove ? " END" :
	    "", a.e[0], a.n == 1 ? "" : "::text || ',' || ", a.n == 1 ? "" :
	    a.e[1], r->prove ? ", " : "", proof);
	if ((size_t)n >= sizeof(sql)) {
		err_set(err, "the lock statement is too long");
		return -1;
	}
	/*
	 * One round trip; the flush has the lock's answer come at once, not
	 * with the check's. A transaction's lock keeps no snapshot (READ
	 * COMMITTED, only lock calls) nor xid: vacuum goes on.
	 */
	if (conn_pipe_begin(c) == -1) {
		conn_oneline(PQerrorMessage(c), err);
		return -1;
	}
	if (conn_send_setup(c, r->wait_ms, r->lease_ms, r->lease_ms,
	    r->prove ? CONN_PROVE : r->xact ? CONN_XACT : CONN_SESSION,
	    err) == -1)
		return -1;
	if (conn_queue(c, sql, a.n + (r->prove ? 4 : 0), params) == -1 ||
	    conn_flush(c) == -1 ||
	    (!r->local && send_check(c, r, err) == -1) ||
	    conn_sync(c) == -1) {
		conn_oneline(PQerrorMessage(c), err);
		return -1;
	}
	return 0;
}

/*
 * Read the pipeline to its end: the lock's answers, then the r->then
 * segments the caller queued after them, which the server ran whatever the
 * lock's answer (one that waits is cancelled: conn_pipe_discard()). 0, or -1
 * if the connection failed (err as conn_pipe_end()'s).
 */
static int
drain(PGconn *c, const struct lock_req *r, int *sig, struct err *err)
{
	long ms = budget_ms(r->budget, CONN_ANSWER_MS);
	struct err later;
	int i;

	if (r->then == 0)
		return conn_pipe_end(c, r->budget, sig, err);
	if (conn_pipe_to_sync(c, r->budget, sig, err != NULL ? err : &later) ==
	    -1)
		return -1;
	for (i = 0; i < r->then; i++)
		if (conn_pipe_discard(c, deadline_in(ms), ms, err != NULL ? err :
		    &later) == -1)
			return -1;
	(void)conn_pipe_leave(c);
	return 0;
}

/* lock_wait(), on what is to be held: r, changed as the server answers. */
static enum lock_result
wait_held(PGconn *c, struct lock_req *r, int *backend_pid, int *sig,
    struct err *err)
{
	enum lock_result out;
	PGresult *res;
	int set, unproven;

	*sig = 0;
	res = conn_pipe_next(c, r->budget, sig, r->waiting, r->waiting_arg,
	    err);
	if (res != NULL && r->xact && PQresultStatus(res) == PGRES_COMMAND_OK) {
		/* BEGIN; then the settings */
		PQclear(res);
		res = conn_pipe_next(c, r->budget, sig, r->waiting,
		    r->waiting_arg, err);
	}
	if (res == NULL)
		return *sig != 0 ? LOCK_INTERRUPTED : LOCK_ERROR;
	set = PQresultStatus(res) == PGRES_TUPLES_OK;
	if (!set)		/* the lock's answer is then ABORTED */
		conn_result_error(res, err);
	else if ((set = !conn_setup_standby(res)) == 0)
		err_set(err, "%s", lock_standby_said);
	PQclear(res);
	if ((res = conn_pipe_next(c, r->budget, sig, r->waiting, r->waiting_arg,
	    err)) == NULL)
		return *sig != 0 ? LOCK_INTERRUPTED : LOCK_ERROR;
	/* Under prove, maybe a pooler: then nothing was taken. */
	unproven = set && r->prove && PQresultStatus(res) == PGRES_TUPLES_OK &&
	    PQntuples(res) == 1 && PQnfields(res) == 4 &&
	    strcmp(PQgetvalue(res, 0, 3), "t") != 0;
	out = set && !unproven ? lock_answer(res, r, backend_pid, err) :
	    LOCK_ERROR;
	PQclear(res);
	if (out == LOCK_ACQUIRED && *sig == 0)
		return LOCK_ACQUIRED;
	if (drain(c, r, sig, out == LOCK_ERROR && !unproven ? NULL : err) ==
	    -1) {
		out = LOCK_ERROR;
		unproven = 0;
	}
	r->then = 0;		/* read away, or asked again without them */
	if (*sig != 0)
		return LOCK_INTERRUPTED;
	if (!unproven)
		return out;
	if (r->prove_only)
		return LOCK_UNPROVEN;
	/* Maybe a pooler: a transaction's lock, asked for now. */
	r->prove = 0;
	r->xact = 1;
	if (lock_send(c, r, err) == -1)
		return LOCK_ERROR;
	return wait_held(c, r, backend_pid, sig, err);
}

enum lock_result
lock_wait(PGconn *c, const struct lock_req *r, struct lock_req *held,
    int *backend_pid, int *sig, struct err *err)
{
	if (held != r)
		*held = *r;
	return wait_held(c, held, backend_pid, sig, err);
}

enum lock_result
lock_verify(PGconn *c, const struct lock_req *r, int backend_pid, int *sig,
    struct err *err)
{
	enum lock_result out = LOCK_ERROR;
	PGresult *res;
	int held, recheck;

	if (r->local) {
		/* No check: the lock call's own backend pid must be libpq's. */
		held = backend_pid == PQbackendPID(c);
		err_set(err, "the lock is not held by this session");
	} else {
		if ((res = conn_pipe_next(c, r->budget, sig, NULL, NULL,
		    err)) == NULL)
			return *sig != 0 ? LOCK_INTERRUPTED : LOCK_ERROR;
		held = check_result(res, NULL, NULL, err);
		PQclear(res);
	}
	if (held != -1)
		out = held == 1 ? LOCK_ACQUIRED : LOCK_NOT_REAL;
	/* A transaction's lock stays on its server connection, pooled or not. */
	recheck = out == LOCK_ACQUIRED && !r->xact &&
	    backend_pid != PQbackendPID(c);
	/* Held and no more to ask: the caller's statements are its own. */
	if (out == LOCK_ACQUIRED && r->then && !recheck) {
		if (conn_pipe_to_sync(c, r->budget, sig, err) == -1)
			out = LOCK_ERROR;
	} else if (drain(c, r, sig, out == LOCK_ERROR ? NULL : err) == -1) {
		out = LOCK_ERROR;
	}
	if (*sig != 0)
		return LOCK_INTERRUPTED;	/* the caller's may be pending */
	if (out == LOCK_ACQUIRED && recheck)
		out = lock_recheck(c, r, backend_pid, sig, err);
	return out;
}

/* The statement that releases r's lock (a, its arguments): COMMIT or unlock. */
static const char *
release_sql(const struct lock_req *r, struct args *a, char *sql, size_t len)
{
	if (r->xact)
		return "COMMIT";
	key_args(&r->key, a);
	snprintf(sql, len, "SELECT %s(%s%s%s)", r->shared ?
	    "pg_catalog.pg_advisory_unlock_shared" :
	    "pg_catalog.pg_advisory_unlock", a->e[0], a->n == 1 ? "" : ", ",
	    a->n == 1 ? "" : a->e[1]);
	return sql;
}

int
lock_release(PGconn *c, const struct lock_req *r, long ms, struct err *err)
{
	char buf[256];
	struct args a;
	const char *sql = release_sql(r, &a, buf, sizeof(buf));
	PGresult *res;
	int rc;

	if ((res = conn_exec(c, sql, r->xact ? NULL : a.params, ms, err)) ==
	    NULL)
		return -1;
	rc = lock_released(res, r, err);
	PQclear(res);
	return rc;
}

int
lock_queue_release(PGconn *c, const struct lock_req *r, struct err *err)
{
	char buf[256];
	struct args a;
	const char *sql = release_sql(r, &a, buf, sizeof(buf));

	if (conn_queue(c, sql, r->xact ? 0 : a.n, r->xact ? NULL :
	    a.params) == -1) {
		conn_oneline(PQerrorMessage(c), err);
		return -1;
	}
	return 0;
}

int
lock_released(PGresult *res, const struct lock_req *r, struct err *err)
{
	/* COMMIT of a failed transaction answers ROLLBACK, not an error. */
	if (PQresultStatus(res) != (r->xact ? PGRES_COMMAND_OK :
	    PGRES_TUPLES_OK))
		conn_result_error(res, err);
	else if (r->xact && strcmp(PQcmdStatus(res), "COMMIT") != 0)
		err_set(err, "the transaction was rolled back");
	else if (!r->xact && strcmp(PQgetvalue(res, 0, 0), "t") != 0)
		err_set(err, "the lock was no longer held");
	else
		return 0;
	return -1;
}

/* When the holder got it (its session began) or the waiter began waiting. */
#define SINCE_14 "CASE WHEN l.granted THEN a.backend_start" \
	" ELSE coalesce(l.waitstart, a.query_start) END"
#define SINCE_12 "CASE WHEN l.granted THEN a.backend_start" \
	" ELSE a.query_start END"

/* lock_status() of the locks that tag (alias l) matches, with params. */
static int
status_rows(PGconn *c, const char *tag, const char *const *params, long ms,
    struct lock_row **rows, struct err *err)
{
	char sql[2048];
	const char *since = PQserverVersion(c) >= 140000 ? SINCE_14 : SINCE_12;
	struct lock_row *r;
	PGresult *res;
	int i, n;

	/* Ids as PGLOCK_ID shows them: pairs as signed int4s. */
	snprintf(sql, sizeof(sql), "SELECT CASE l.objsubid WHEN 1 THEN"
	    " ((l.classid::bigint << 32) | l.objid::bigint)::text"
	    " ELSE (l.classid::bigint - CASE WHEN l.classid::bigint >="
	    " 2147483648 THEN 4294967296 ELSE 0 END)::text || ',' ||"
	    " (l.objid::bigint - CASE WHEN l.objid::bigint >= 2147483648"
	    " THEN 4294967296 ELSE 0 END)::text END,"
	    " l.mode = 'ShareLock', l.granted, l.pid,"
	    /* Held inside an open transaction, or waited for by an xact call. */
	    " (l.granted AND a.xact_start IS NOT NULL) OR"
	    " (NOT l.granted AND a.query LIKE '%%advisory_xact_lock%%'),"
	    " coalesce(pg_catalog.round(extract(epoch FROM"
	    " pg_catalog.now() - %s))::bigint, 0),"
	    " coalesce(a.usename::text, ''),"
	    " coalesce(pg_catalog.host(a.client_addr), 'local'),"
	    " coalesce(a.application_name, ''),"
	    " coalesce(pg_catalog.to_char(%s, 'YYYY-MM-DD\"T\"HH24:MI:SSTZH:TZM'),"
	    " '') AS since,"
	    /* What a role without pg_read_all_stats may not see. */
	    " a.backend_start IS NULL"
	    " FROM pg_catalog.pg_locks l"
	    " LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid"
	    " WHERE l.locktype = 'advisory' AND l.pid <> pg_catalog.pg_backend_pid()"
	    " AND a.application_name IS DISTINCT FROM '" LOCK_WITNESS_APP "'"
	    " AND l.database = (SELECT oid FROM pg_catalog.pg_database"
	    " WHERE datname = pg_catalog.current_database()) AND %s"
	    " ORDER BY 1, l.granted DESC, since, l.pid", since, since, tag);
	if ((res = conn_exec(c, sql, params, ms, err)) == NULL)
		return -1;
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQnfields(res) != 11) {
		conn_result_error(res, err);
		PQclear(res);
		return -1;
	}
	n = PQntuples(res);
	if ((*rows = r = calloc((size_t)n + 1, sizeof(*r))) == NULL) {
		err_set(err, "calloc: %s", strerror(errno));
		PQclear(res);
		return -1;
	}
	for (i = 0; i < n; i++, r++) {
		snprintf(r->id, sizeof(r->id), "%s", PQgetvalue(res, i, 0));
		r->shared = *PQgetvalue(res, i, 1) == 't';
		r->held = *PQgetvalue(res, i, 2) == 't';
		r->pid = (int)strtol(PQgetvalue(res, i, 3), NULL, 10);
		r->xact = *PQgetvalue(res, i, 4) == 't';
		r->seconds = strtol(PQgetvalue(res, i, 5), NULL, 10);
		snprintf(r->user, sizeof(r->user), "%s", PQgetvalue(res, i, 6));
		snprintf(r->client, sizeof(r->client), "%s",
		    PQgetvalue(res, i, 7));
		snprintf(r->app, sizeof(r->app), "%s", PQgetvalue(res, i, 8));
		snprintf(r->since, sizeof(r->since), "%s",
		    PQgetvalue(res, i, 9));
		if ((r->hidden = *PQgetvalue(res, i, 10) == 't')) {
			snprintf(r->client, sizeof(r->client), "?");
			snprintf(r->since, sizeof(r->since), "?");
			r->seconds = -1;
			r->xact = -1;
		}
	}
	PQclear(res);
	return n;
}

int
lock_status(PGconn *c, const struct key *k, long ms, struct lock_row **rows,
    struct err *err)
{
	char tag[512] = "true";
	struct args a = { .n = 0 };

	if (k != NULL) {
		key_args(k, &a);
		tag_sql(&a, tag, sizeof(tag));
	}
	return status_rows(c, tag, a.params, ms, rows, err);
}

int
lock_status_ids(PGconn *c, const char *ids, struct lock_row **rows,
    struct err *err)
{
	const char *params[2] = { ids, NULL };

	return status_rows(c, "l.objsubid = 1 AND ((l.classid::bigint << 32)"
	    " | l.objid::bigint) = ANY ($1::bigint[])", params, CONN_ANSWER_MS,
	    rows, err);
}
