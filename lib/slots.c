/* SPDX-License-Identifier: ISC */
/*
 * slots: only the holder of the queue's lock tries the slots, at once and
 * then every tenth of a second, on the server, so a freed slot goes to the
 * longest waiter. Each try is a pipeline of its own, read by conn_pipe_next().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "conn.h"
#include "lock.h"
#include "query.h"
#include "said.h"
#include "slots.h"

void
slots_key(const struct key *base, int i, struct key *out)
{
	char id[48], buf[96];
	struct err err;
	int n;

	key_format(base, id, sizeof(id));
	/* NULs apart, as the counter's: no KEY on a command line is this. */
	n = snprintf(buf, sizeof(buf), "pglock-slot%c%s%c%d", '\0', id, '\0',
	    i);
	(void)key_hash(buf, (size_t)n, out, &err);
}

/* One wait for slots: the connection, the request, and where errors go. */
struct slotter {
	PGconn *c;
	struct lock_req *r;
	int *sig;
	struct err *err;
};

/*
 * Run sql (params NULL-terminated) as its own pipeline, after BEGIN and the
 * settings if first: its answer, or NULL (reason in err); a signal in *s->sig.
 */
static PGresult *
exchange(const struct slotter *s, const char *sql, const char **params,
    int first)
{
	const struct lock_req *r = s->r;
	PGresult *res;
	int n = 0, steps;

	while (params[n] != NULL)
		n++;
	steps = first ? 1 + r->xact : 0;
	if (conn_pipe_begin(s->c) == -1 || (first &&
	    conn_send_setup(s->c, r->wait_ms, r->lease_ms, r->lease_ms,
	    r->xact ? CONN_XACT : CONN_SESSION, s->err) == -1) ||
	    conn_queue(s->c, sql, n, params) == -1 ||
	    conn_sync(s->c) == -1) {
		conn_oneline(PQerrorMessage(s->c), s->err);
		return NULL;
	}
	/* BEGIN and the settings answer first; the first error is kept. */
	while ((res = conn_pipe_next(s->c, r->budget, s->sig, r->waiting,
	    r->waiting_arg, s->err)) != NULL && steps-- > 0) {
		if (PQresultStatus(res) != PGRES_COMMAND_OK &&
		    PQresultStatus(res) != PGRES_TUPLES_OK) {
			conn_result_error(res, s->err);
		} else if (conn_setup_standby(res)) {
			err_set(s->err, "%s", lock_standby_said);
		} else {
			PQclear(res);
			continue;
		}
		PQclear(res);
		(void)conn_pipe_end(s->c, r->budget, s->sig, NULL);
		return NULL;
	}
	if (res == NULL || conn_pipe_end(s->c, r->budget, s->sig, NULL) == -1) {
		PQclear(res);
		return NULL;
	}
	return res;
}

/* Where the slots' loop stands after a round. */
enum slot_state {
	SLOT_FAILED = -1,	/* the reason is in err */
	SLOT_NONE,		/* none free: done for -n, or at -w's end */
	SLOT_WAITING,		/* in the queue: try the slots (again) */
	SLOT_GOT		/* r->slot is this session's */
};

/* The slot statement's answer: SLOT_GOT, SLOT_NONE or SLOT_FAILED. */
static enum slot_state
slot_answer(PGresult *res, struct lock_req *r, int *pid, struct err *err)
{
	enum slot_state got = SLOT_FAILED;

	if (res == NULL)
		return SLOT_FAILED;
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		conn_result_error(res, err);
	else if (PQntuples(res) == 0)
		got = SLOT_NONE;
	else if (PQnfields(res) != 3 || strcmp(PQgetvalue(res, 0, 2), "t") != 0)
		err_set(err, "the server's answer to the slot call is "
		    "not PostgreSQL's");
	else if (lock_result_pid(res, 1, pid, err) == 0) {
		r->slot = (int)strtol(PQgetvalue(res, 0, 0), NULL, 10);
		got = SLOT_GOT;
	}
	PQclear(res);
	return got;
}

/*
 * Waiters queue in arrival order on the queue's lock, a session's even in
 * a transaction (which pins a pooler's server connection until it is
 * unlocked): SLOT_WAITING once in it, SLOT_NONE if -w ran out first.
 */
static enum slot_state
join_queue(const struct slotter *s, const char **qparams)
{
	PGresult *res = exchange(s, "SELECT true FROM pg_catalog."
	    "pg_advisory_lock($1::bigint)", qparams, 1);
	enum slot_state got = SLOT_FAILED;

	if (res != NULL && PQresultStatus(res) == PGRES_TUPLES_OK)
		got = SLOT_WAITING;
	else if (conn_is_state(res, "55P03"))	/* lock_timeout */
		got = SLOT_NONE;
	else if (res != NULL)
		conn_result_error(res, s->err);
	PQclear(res);
	return got;
}

/* A tenth of a second between two tries, on the server: 0, or -1. */
static int
nap(const struct slotter *s)
{
	const char *none[1] = { NULL };
	PGresult *res = exchange(s, "SELECT pg_catalog.pg_sleep(0.1)", none, 0);
	int rc = res != NULL && PQresultStatus(res) == PGRES_TUPLES_OK ? 0 : -1;

	if (res != NULL && rc == -1)
		conn_result_error(res, s->err);
	PQclear(res);
	return rc;
}

/*
 * Give the queue's lock up when no slot was got, so the next waiter goes on.
 * Through a pooler the lock is the server connection's, this client's only
 * while the transaction is open: so unlock before it ends, after a ROLLBACK AND
 * CHAIN (open again, on the same server connection) of a failed one.
 */
static void
leave_queue(PGconn *c, const struct lock_req *r, const char *qparams[])
{
	struct err why;

	if (r->xact && PQtransactionStatus(c) == PQTRANS_INERROR)
		PQclear(conn_exec(c, "ROLLBACK AND CHAIN", NULL,
		    budget_ms(r->budget, CONN_ANSWER_MS), &why));
	PQclear(conn_exec(c, "SELECT pg_catalog.pg_advisory_unlock($1::bigint)",
	    qparams, budget_ms(r->budget, CONN_ANSWER_MS), &why));
}

/* The ids of slots from..n of base as an array literal, {id1,id2,...}. */
static char *
slot_array(const struct key *base, int from, int n)
{
	size_t len = (size_t)(n - from + 1) * 24 + 3, used = 0;
	char ids[2][24], *list;
	struct key k;
	int i;

	if ((list = malloc(len)) == NULL)
		return NULL;
	for (i = from; i <= n; i++) {
		slots_key(base, i, &k);
		(void)key_params(&k, ids);
		used += (size_t)snprintf(list + used, len - used, "%c%s",
		    i > from ? ',' : '{', ids[0]);
	}
	snprintf(list + used, len - used, "}");
	return list;
}

/* slots_take(), on what is to be held: r, changed as the server answers. */
static enum lock_result
take_held(PGconn *c, struct lock_req *r, int *backend_pid, int *sig,
    struct err *err)
{
	struct slotter s = { c, r, sig, err };
	struct key k;
	mono_t until = r->wait_ms > 0 ? deadline_in(r->wait_ms) : NEVER;
	char ids[2][24], sql[512], *list;
	const char *qparams[2] = { ids[0], NULL }, *params[3];
	enum slot_state got;
	int queued, rounds = 0;

	*sig = 0;
	slots_key(&r->key, 0, &k);
	(void)key_params(&k, ids);
	if ((list = slot_array(&r->key, 1, r->slots)) == NULL) {
		err_set(err, "malloc: %s", strerror(errno));
		return LOCK_ERROR;
	}
	params[0] = list;
	params[1] = r->wait_ms == 0 ? NULL : ids[0];
	params[2] = NULL;
	/* The first free slot, in order; waiters also unlock the queue. */
	snprintf(sql, sizeof(sql), "SELECT t.i, pg_catalog.pg_backend_pid(), %s"
	    " FROM (SELECT i FROM pg_catalog.unnest($1::bigint[]) WITH ORDINALITY AS"
	    " u(id, i) WHERE %s(id) LIMIT 1) t", r->wait_ms == 0 ? "true" :
	    "pg_catalog.pg_advisory_unlock($2::bigint)",
	    lock_fn(r->xact, 1, 0));
	/* -n: a free slot now, or none; no queue to wait in. */
	got = r->wait_ms == 0 ? slot_answer(exchange(&s, sql, params, 1), r,
	    backend_pid, err) : join_queue(&s, qparams);
	queued = got == SLOT_WAITING;
	while (got == SLOT_WAITING && *sig == 0) {
		if (rounds++ > 0) {
			if (nap(&s) == -1) {
				got = SLOT_FAILED;
				break;
			}
			if (r->waiting != NULL && rounds % 10 == 0)
				r->waiting(r->waiting_arg);
		}
		got = slot_answer(exchange(&s, sql, params, 0), r, backend_pid,
		    err);
		if (got == SLOT_GOT)
			queued = 0;
		else if (got == SLOT_NONE && !deadline_passed(until))
			got = SLOT_WAITING;
	}
	free(list);
	if (queued)
		leave_queue(c, r, qparams);
	if (*sig != 0)
		return LOCK_INTERRUPTED;
	if (got != SLOT_GOT)
		return got == SLOT_NONE ? LOCK_BUSY : LOCK_ERROR;
	slots_key(&r->key, r->slot, &r->key);
	/* As lock_verify: held by this very backend (and no snapshot kept). */
	if (r->local && !r->xact)
		return *backend_pid == PQbackendPID(c) ? LOCK_ACQUIRED :
		    LOCK_NOT_REAL;
	return lock_recheck(c, r, *backend_pid, sig, err);
}

enum lock_result
slots_take(PGconn *c, const struct lock_req *r, struct lock_req *held,
    int *backend_pid, int *sig, struct err *err)
{
	if (held != r)
		*held = *r;
	return take_held(c, held, backend_pid, sig, err);
}

int
slots_status(PGconn *c, const struct key *base, struct lock_row **rows,
    struct err *err)
{
	char *list = slot_array(base, 0, SLOTS_MAX);
	int n;

	if (list == NULL) {
		err_set(err, "malloc: %s", strerror(errno));
		return -1;
	}
	n = lock_status_ids(c, list, rows, err);
	free(list);
	return n;
}
