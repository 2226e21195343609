/* SPDX-License-Identifier: ISC */
/*
 * lock: the SQL side of a session advisory lock. Acquisition is one
 * pipeline (settings; lock; verify in pg_locks) so that pglock pays a single
 * round trip on a direct connection. Through a pooler the verification is
 * repeated in a transaction of its own, where a transaction pooler shows.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "lock.h"

/* Is this lock held, granted, by the backend running the query? */
static const char check_sql[] =
    "SELECT pg_backend_pid(), EXISTS (SELECT FROM pg_catalog.pg_locks"
    " WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted"
    " AND database = (SELECT oid FROM pg_catalog.pg_database"
    "  WHERE datname = current_database())"
    " AND classid = $1::oid AND objid = $2::oid AND objsubid = $3::int2"
    " AND mode = $4)";

/* [try][shared][pair] */
static const char *const lock_sql[2][2][2] = {
	{ { "SELECT pg_advisory_lock($1::bigint)",
	    "SELECT pg_advisory_lock($1::int4, $2::int4)" },
	  { "SELECT pg_advisory_lock_shared($1::bigint)",
	    "SELECT pg_advisory_lock_shared($1::int4, $2::int4)" } },
	{ { "SELECT pg_try_advisory_lock($1::bigint)",
	    "SELECT pg_try_advisory_lock($1::int4, $2::int4)" },
	  { "SELECT pg_try_advisory_lock_shared($1::bigint)",
	    "SELECT pg_try_advisory_lock_shared($1::int4, $2::int4)" } },
};

static const char *const unlock_sql[2][2] = {
	{ "SELECT pg_advisory_unlock($1::bigint)",
	  "SELECT pg_advisory_unlock($1::int4, $2::int4)" },
	{ "SELECT pg_advisory_unlock_shared($1::bigint)",
	  "SELECT pg_advisory_unlock_shared($1::int4, $2::int4)" },
};

int
lock_check_send(PGconn *c, const struct lock_req *r, char *err,
    size_t errlen)
{
	char cls[16], obj[16], sub[4];
	const char *params[4] = { cls, obj, sub, NULL };
	uint32_t classid, objid;
	int objsubid;

	key_locktag(&r->key, &classid, &objid, &objsubid);
	snprintf(cls, sizeof(cls), "%" PRIu32, classid);
	snprintf(obj, sizeof(obj), "%" PRIu32, objid);
	snprintf(sub, sizeof(sub), "%d", objsubid);
	params[3] = r->shared ? "ShareLock" : "ExclusiveLock";
	if (!PQsendQueryParams(c, check_sql, 4, NULL, params, NULL, NULL, 0)) {
		conn_oneline(PQerrorMessage(c), err, errlen);
		return -1;
	}
	return 0;
}

/* Interpret one check result: 1 held, 0 not held, -1 error. */
static int
check_result(PGresult *res, int *backend_pid, char *err, size_t errlen)
{
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
		conn_oneline(PQresultErrorMessage(res), err, errlen);
		return -1;
	}
	if (backend_pid != NULL)
		*backend_pid = atoi(PQgetvalue(res, 0, 0));
	if (strcmp(PQgetvalue(res, 0, 1), "t") != 0) {
		snprintf(err, errlen, "the lock is not held by this session");
		return 0;
	}
	return 1;
}

static int
lock_check_read_pid(PGconn *c, int *pid, char *err, size_t errlen)
{
	PGresult *res;
	int held = -1, n = 0;

	while ((res = PQgetResult(c)) != NULL) {
		if (n++ == 0)
			held = check_result(res, pid, err, errlen);
		PQclear(res);
	}
	if (n == 0)
		conn_reason(c, err, errlen);
	return held;
}

int
lock_check_read(PGconn *c, char *err, size_t errlen)
{
	return lock_check_read_pid(c, NULL, err, errlen);
}

/*
 * Through a pooler, PQbackendPID() is the pooler's invention, not the
 * server's pid. Then check again in a transaction of its own: a
 * transaction pooler may hand that one to another server process, which
 * does not hold the lock.
 */
static enum lock_result
recheck(PGconn *c, const struct lock_req *r, int pid, char *err,
    size_t errlen)
{
	int held, pid2 = 0;

	if (lock_check_send(c, r, err, errlen) == -1 ||
	    conn_wait(c, 0) != 0) {
		conn_reason(c, err, errlen);
		return LOCK_ERROR;
	}
	held = lock_check_read_pid(c, &pid2, err, errlen);
	if (held == -1)
		return LOCK_ERROR;
	return held == 1 && pid2 == pid ? LOCK_ACQUIRED : LOCK_NOT_REAL;
}

enum lock_result
lock_acquire(PGconn *c, const struct lock_req *r, int *backend_pid,
    int *sig, char *err, size_t errlen)
{
	char vals[2][24];
	const char *params[2] = { vals[0], vals[1] };
	enum lock_result out = LOCK_ERROR;
	PGresult *res;
	int nparams, step, s, held;
	const char *state;

	*sig = 0;
	nparams = key_params(&r->key, vals);
	if (!PQenterPipelineMode(c) ||
	    conn_send_settings(c, r->wait_ms > 0 ? r->wait_ms : 0, err,
	    errlen) == -1 ||
	    !PQsendQueryParams(c,
	    lock_sql[r->wait_ms == 0][r->shared][r->key.space == KEY_PAIR],
	    nparams, NULL, params, NULL, NULL, 0) ||
	    lock_check_send(c, r, err, errlen) == -1 || !PQpipelineSync(c)) {
		conn_oneline(PQerrorMessage(c), err, errlen);
		return LOCK_ERROR;
	}

	/*
	 * One transaction, one round trip: settings, lock, check, then the
	 * sync. Each statement's results end with a NULL.
	 */
	for (step = 0; step < 4;) {
		if ((s = conn_wait(c, *sig != 0)) > 0) {
			*sig = s;
			conn_cancel(c);
			continue;
		}
		if (s == -1) {
			conn_reason(c, err, errlen);
			return *sig != 0 ? LOCK_INTERRUPTED : LOCK_ERROR;
		}
		if ((res = PQgetResult(c)) == NULL) {
			if (step < 3)
				step++;
			continue;
		}
		switch (step) {
		case 0:		/* settings */
			if (PQresultStatus(res) != PGRES_TUPLES_OK)
				conn_oneline(PQresultErrorMessage(res), err,
				    errlen);
			break;
		case 1:		/* lock */
			if (PQresultStatus(res) == PGRES_TUPLES_OK) {
				out = strcmp(PQgetvalue(res, 0, 0), "f") == 0 ?
				    LOCK_BUSY : LOCK_ACQUIRED;
			} else if (PQresultStatus(res) == PGRES_FATAL_ERROR) {
				state = PQresultErrorField(res,
				    PG_DIAG_SQLSTATE);
				/* 55P03 lock_not_available: lock_timeout */
				if (state != NULL &&
				    strcmp(state, "55P03") == 0)
					out = LOCK_BUSY;
				else
					conn_oneline(PQresultErrorMessage(res),
					    err, errlen);
			}
			break;
		case 2:		/* check */
			if (out != LOCK_ACQUIRED)
				break;
			held = check_result(res, backend_pid, err, errlen);
			if (held != 1)
				out = held == 0 ? LOCK_NOT_REAL : LOCK_ERROR;
			break;
		case 3:		/* sync */
			if (PQresultStatus(res) == PGRES_PIPELINE_SYNC)
				step++;
			break;
		}
		PQclear(res);
	}
	(void)PQexitPipelineMode(c);
	if (*sig != 0)
		return LOCK_INTERRUPTED;
	if (out == LOCK_ACQUIRED && *backend_pid != PQbackendPID(c))
		out = recheck(c, r, *backend_pid, err, errlen);
	return out;
}

int
lock_release(PGconn *c, const struct lock_req *r, char *err, size_t errlen)
{
	char vals[2][24];
	const char *params[2] = { vals[0], vals[1] };
	PGresult *res;
	int n, rc = -1;

	n = key_params(&r->key, vals);
	res = PQexecParams(c, unlock_sql[r->shared][r->key.space == KEY_PAIR],
	    n, NULL, params, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		conn_reason(c, err, errlen);
	else if (strcmp(PQgetvalue(res, 0, 0), "t") != 0)
		snprintf(err, errlen, "the lock was no longer held");
	else
		rc = 0;
	PQclear(res);
	return rc;
}
