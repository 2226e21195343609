/* SPDX-License-Identifier: ISC */
/*
 * runs: a key's last success and last failure, in one table (default
 * pglock_runs) created on first use. The clock is the server's: the slot
 * of --once-per, the time a run is recorded, and --ok-within's now.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "conn.h"
#include "runs.h"
#include "table.h"

#define COLUMNS "(key text PRIMARY KEY, lock_id text NOT NULL, " \
	"ok_at timestamptz, ok_host text, ok_seconds double precision, " \
	"ok_slot bigint, failed_at timestamptz, failed_host text, " \
	"failed_status integer)"

#define ISO "'YYYY-MM-DD\"T\"HH24:MI:SSTZH:TZM'"

int
runs_table(PGconn *c, const char *table, struct err *err)
{
	const char *params[2] = { table, NULL };
	PGresult *res;
	int there;

	if ((res = conn_exec(c, "SELECT pg_catalog.to_regclass($1) IS NOT NULL",
	    params, CONN_ANSWER_MS, err)) == NULL)
		return -1;
	there = PQresultStatus(res) == PGRES_TUPLES_OK &&
	    PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);
	return there ? 0 : table_create(c, table, COLUMNS,
	    "SELECT, INSERT, UPDATE, DELETE", err);
}

/*
 * 2^62 | bits(length) << 56 | index << bits(length) | length: exact, as the
 * length (at most 2147483.647 days) is below 2^48 and the index below
 * 2^(56 - bits(length)) until 2^55 ms (the year 1,140,000); the clock is past
 * the epoch, so the cast is floor(). A column of its own would need ALTER
 * TABLE, which a role that may only write the table cannot run.
 */
long long
runs_slot(double now_ms, long long period_ms)
{
	long long index;
	int bits = 0;

	if (period_ms <= 0)
		return 0;
	while (bits < 48 && period_ms >> bits != 0)
		bits++;
	index = (long long)(now_ms / (double)period_ms);
	return (1LL << 62) | (long long)bits << 56 | index << bits | period_ms;
}

int
runs_done(const struct runs_row *row, long long period_ms)
{
	if (!row->has_ok)
		return 0;
	if (row->ok_slot >= 0 && row->ok_slot < 1LL << 62 && period_ms > 0)
		return row->ok_slot == (long long)(row->now_ms /
		    (double)period_ms);
	return row->ok_slot == runs_slot(row->now_ms, period_ms);
}

int
runs_read(PGconn *c, const char *table, const char *key,
    struct runs_row *row, struct err *err)
{
	char sql[1024];
	const char *params[2] = { key, NULL };
	PGresult *res;
	int rc = 0;

	memset(row, 0, sizeof(*row));
	row->ok_slot = -1;
	snprintf(sql, sizeof(sql), "SELECT extract(epoch FROM"
	    " pg_catalog.statement_timestamp()) * 1000, r.ok_at IS NOT NULL,"
	    " pg_catalog.to_char(r.ok_at, " ISO "),"
	    " extract(epoch FROM r.ok_at) * 1000,"
	    " r.ok_host, r.ok_seconds, coalesce(r.ok_slot, -1),"
	    " r.failed_at IS NOT NULL, pg_catalog.to_char(r.failed_at, " ISO "),"
	    " r.failed_host, r.failed_status"
	    " FROM (SELECT 1) n LEFT JOIN %s r ON r.key = $1", table);
	if ((res = conn_exec(c, sql, params, CONN_ANSWER_MS, err)) == NULL)
		return -1;
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1 ||
	    PQnfields(res) != 11) {
		/* No table yet, or not this role's to read: no record. */
		row->no_table = conn_is_state(res, "42P01");
		row->denied = conn_is_state(res, "42501");
		if (!row->no_table) {
			conn_result_error(res, err);
			rc = row->denied ? 0 : -1;
		}
		PQclear(res);
		return rc;
	}
	/* In a transaction a utility statement ends the portal's snapshot. */
	if (PQtransactionStatus(c) == PQTRANS_INTRANS)
		PQclear(conn_exec(c, "SET LOCAL statement_timeout = 0", NULL,
		    CONN_ANSWER_MS, err));
	row->now_ms = strtod(PQgetvalue(res, 0, 0), NULL);
	if ((row->has_ok = *PQgetvalue(res, 0, 1) == 't')) {
		snprintf(row->ok_at, sizeof(row->ok_at), "%s",
		    PQgetvalue(res, 0, 2));
		row->ok_ms = strtod(PQgetvalue(res, 0, 3), NULL);
		snprintf(row->ok_host, sizeof(row->ok_host), "%s",
		    PQgetvalue(res, 0, 4));
		row->ok_seconds = strtod(PQgetvalue(res, 0, 5), NULL);
		row->ok_slot = strtoll(PQgetvalue(res, 0, 6), NULL, 10);
	}
	if ((row->has_failed = *PQgetvalue(res, 0, 7) == 't')) {
		snprintf(row->failed_at, sizeof(row->failed_at), "%s",
		    PQgetvalue(res, 0, 8));
		snprintf(row->failed_host, sizeof(row->failed_host), "%s",
		    PQgetvalue(res, 0, 9));
		row->failed_status = (int)strtol(PQgetvalue(res, 0, 10), NULL,
		    10);
	}
	PQclear(res);
	return 0;
}

int
runs_write(PGconn *c, const char *table, const struct runs_outcome *o,
    struct err *err)
{
	char sql[1024], host[256], num[2][32];
	const char *params[6] = { o->key, o->id, host, num[0], num[1], NULL };
	PGresult *res;
	int rc = -1;

	/* A session known to be gone sends nothing: nothing can land. */
	if (PQstatus(c) != CONNECTION_OK) {
		conn_reason(c, err);
		return -1;
	}
	if (gethostname(host, sizeof(host)) == -1)
		snprintf(host, sizeof(host), "?");
	host[sizeof(host) - 1] = '\0';
	if (o->status == 0) {
		snprintf(num[0], sizeof(num[0]), "%.3f", o->seconds);
		snprintf(num[1], sizeof(num[1]), "%lld", o->slot);
		snprintf(sql, sizeof(sql), "INSERT INTO %s AS r (key, lock_id,"
		    " ok_at, ok_host, ok_seconds, ok_slot) VALUES ($1, $2,"
		    " pg_catalog.statement_timestamp(), $3, $4::float8,"
		    " nullif($5::bigint, -1)) ON CONFLICT (key) DO UPDATE SET"
		    " lock_id = EXCLUDED.lock_id, ok_at = EXCLUDED.ok_at,"
		    " ok_host = EXCLUDED.ok_host, ok_seconds ="
		    " EXCLUDED.ok_seconds, ok_slot = coalesce(EXCLUDED.ok_slot,"
		    " r.ok_slot)", table);
	} else {
		snprintf(num[0], sizeof(num[0]), "%d", o->status);
		params[4] = NULL;
		snprintf(sql, sizeof(sql), "INSERT INTO %s AS r (key, lock_id,"
		    " failed_at, failed_host, failed_status) VALUES ($1, $2,"
		    " pg_catalog.statement_timestamp(), $3, $4::int)"
		    " ON CONFLICT (key) DO UPDATE SET lock_id ="
		    " EXCLUDED.lock_id, failed_at = EXCLUDED.failed_at,"
		    " failed_host = EXCLUDED.failed_host, failed_status ="
		    " EXCLUDED.failed_status", table);
	}
	if ((res = conn_exec(c, sql, params, CONN_ANSWER_MS, err)) == NULL)
		return runs_unanswered(c) ? RUNS_UNCONFIRMED : -1;
	/* First use, outside a transaction: create the table, write again. */
	if (conn_is_state(res, "42P01") && PQtransactionStatus(c) == PQTRANS_IDLE) {
		PQclear(res);
		if (runs_table(c, table, err) == -1)
			return -1;
		if ((res = conn_exec(c, sql, params, CONN_ANSWER_MS, err)) == NULL)
			return runs_unanswered(c) ? RUNS_UNCONFIRMED : -1;
	}
	/*
	 * Done is the end of the exchange, after the commit, not the INSERT's
	 * own answer, which comes before it: a session ended in between (by a
	 * synchronous standby's wait cut short, say) may have written it.
	 */
	if (PQresultStatus(res) != PGRES_COMMAND_OK) {
		conn_result_error(res, err);
	} else if (runs_unanswered(c)) {
		conn_reason(c, err);
		rc = RUNS_UNCONFIRMED;
	} else {
		rc = 0;
	}
	PQclear(res);
	return rc;
}

int
runs_unanswered(PGconn *c)
{
	switch (PQtransactionStatus(c)) {
	case PQTRANS_IDLE:
	case PQTRANS_INTRANS:
	case PQTRANS_INERROR:
		return 0;
	default:
		return 1;
	}
}

int
runs_landed(const struct conn_opts *co, const char *table,
    const struct runs_outcome *o, long since, struct err *err)
{
	struct runs_row row;
	PGconn *c;
	int rc;

	if ((c = conn_open(co, err)) == NULL)
		return -1;
	rc = runs_read(c, table, o->key, &row, err);
	PQfinish(c);
	if (rc == -1 || row.denied)
		return -1;
	if (o->slot != -1)
		return row.has_ok && row.ok_slot == o->slot;
	/* The write's own clock is at least the server's now less our wait. */
	return row.has_ok && row.ok_ms >= row.now_ms - (double)(mono_ms() -
	    since);
}

int
runs_forget(PGconn *c, const char *table, const char *key, struct err *err)
{
	char sql[640];
	const char *params[2] = { key, NULL };
	PGresult *res;
	int rc = -1;

	snprintf(sql, sizeof(sql), "DELETE FROM %s WHERE key = $1", table);
	if ((res = conn_exec(c, sql, params, CONN_ANSWER_MS, err)) == NULL)
		return -1;
	if (PQresultStatus(res) == PGRES_COMMAND_OK)
		rc = strcmp(PQcmdTuples(res), "0") != 0;
	else if (conn_is_state(res, "42P01"))
		rc = 0;
	else
		conn_result_error(res, err);
	PQclear(res);
	return rc;
}
