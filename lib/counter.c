/* SPDX-License-Identifier: ISC */
/*
 * counter: read-and-bump under a per-tenant transaction-scoped advisory
 * lock, in one READ COMMITTED transaction, so the lock and the number commit
 * or roll back together: a failed writer burns no number, two writers never
 * share one, and tenants never wait for each other. One row per tenant, so
 * an allocation costs the same after a million versions as after one.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "counter.h"
#include "key.h"
#include "query.h"
#include "said.h"
#include "table.h"

/*
 * One SQL identifier at *p as PostgreSQL reads it ("quoted", "" a quote, keeps
 * its case; else ASCII folds to lower case), into out quoted: the bytes of out
 * used, or 0 if *p is none or longer than PostgreSQL keeps.
 */
static size_t
ident(const char **p, char *out, size_t len)
{
	const char *s = *p;
	size_t n = 0, o = 1;

	if (len < 3)
		return 0;
	out[0] = '"';
	if (*s == '"') {
		for (s++; *s != '\0' && (*s != '"' || s[1] == '"'); s++, n++) {
			if (o + 4 >= len)
				return 0;
			if (*s == '"')
				out[o++] = *s++;	/* "" in, "" out */
			out[o++] = *s;
		}
		if (*s++ != '"')
			return 0;
	} else {
		/* A letter, _ or a byte past ASCII; then digits and $ too. */
		for (; isalpha((unsigned char)*s) || *s == '_' ||
		    (unsigned char)*s >= 0x80 || (n > 0 &&
		    (isdigit((unsigned char)*s) || *s == '$')); s++, n++) {
			if (o + 4 >= len)
				return 0;
			out[o++] = (char)tolower((unsigned char)*s);
		}
	}
	if (n == 0 || n > 63)
		return 0;
	out[o++] = '"';
	out[o] = '\0';
	*p = s;
	return o;
}

int
counter_table_sql(const char *name, char *out, size_t len)
{
	const char *p = name;
	size_t n;

	if ((n = ident(&p, out, len)) == 0)
		return -1;
	if (*p == '.') {
		p++;
		out[n] = '.';
		if (ident(&p, out + n + 1, len - n - 1) == 0)
			return -1;
	}
	return *p == '\0' ? 0 : -1;
}

int
counter_lock(const char *table, const char *tenant, long wait_ms,
    struct counter_req *out)
{
	size_t tl = strlen(table), n = strlen(tenant);
	char *s = malloc(16 + tl + n);
	struct err err;
	int rc;

	if (s == NULL)
		return -1;
	/* NUL separators: no KEY given on the command line can equal this. */
	memcpy(s, "pglock-counter", 15);
	memcpy(s + 15, table, tl + 1);
	/* NOLINTNEXTLINE(bugprone-not-null-terminated-result): hashed by length */
	memcpy(s + 16 + tl, tenant, n);
	memset(out, 0, sizeof(*out));
	out->table = table;
	out->tenant = tenant;
	rc = key_hash(s, 16 + tl + n, &out->lock.key, &err);
	out->lock.wait_ms = wait_ms;
	free(s);
	return rc;
}

int
counter_peek(PGconn *c, const char *table, const char *tenant,
    long long *version, struct err *err)
{
	char sql[640];
	const char *params[2] = { tenant, NULL };
	PGresult *res;
	int rc = -1;

	snprintf(sql, sizeof(sql), "SELECT version FROM %s WHERE tenant = $1",
	    table);
	if ((res = conn_exec(c, sql, params, CONN_ANSWER_MS, err)) == NULL)
		return -1;
	if (PQresultStatus(res) == PGRES_TUPLES_OK) {
		*version = PQntuples(res) == 1 ?
		    strtoll(PQgetvalue(res, 0, 0), NULL, 10) : 0;
		rc = 0;
	} else if (conn_is_state(res, "42P01")) {
		*version = 0;	/* no table yet: nobody has a version */
		rc = 0;
	} else {
		conn_result_error(res, err);
	}
	PQclear(res);
	return rc;
}

/*
 * One round trip: BEGIN (first, so its isolation level holds for all that
 * follows), the settings, then one statement that takes the tenant's lock and
 * only then bumps the row; with -n a lock not got bumps nothing: no row. Its
 * second column: a failover could repeat the number, as the server has
 * standbys (WAL senders but logical ones) and none of them synchronous
 * (asked under require_sync only).
 */
struct bumped {
	long long version;
	int pid;		/* the server process that holds the lock */
	int sig;		/* the signal that cancelled the wait */
	int no_table;		/* the table is missing: create it, retry */
};

static enum counter_result
bump(PGconn *c, const struct counter_req *r, struct bumped *b, struct err *err)
{
	const struct lock_req *lk = &r->lock;
	char sql[1280], id[2][24];
	const char *params[2] = { r->tenant, id[0] };
	enum counter_result out = COUNTER_ERROR;
	PGresult *res;
	int step, errors = 0;

	(void)key_params(&lk->key, id);
	snprintf(sql, sizeof(sql), "WITH l AS (%s)"
	    " INSERT INTO %s AS t (tenant, version) SELECT $1, 1 FROM l"
	    " WHERE l.got ON CONFLICT (tenant) DO UPDATE"
	    " SET version = t.version + 1 RETURNING t.version, %s,"
	    " pg_catalog.pg_backend_pid()",
	    lk->wait_ms == 0 ?
	    "SELECT pg_catalog.pg_try_advisory_xact_lock($2::bigint) AS got" :
	    "SELECT true AS got FROM pg_catalog.pg_advisory_xact_lock($2::bigint)",
	    r->table, r->require_sync ? "pg_catalog.current_setting("
	    "'synchronous_standby_names') = '' AND EXISTS (SELECT FROM "
	    "pg_catalog.pg_stat_replication w WHERE NOT EXISTS (SELECT FROM "
	    "pg_catalog.pg_replication_slots s WHERE s.active_pid = w.pid AND "
	    "s.slot_type = 'logical'))" : "false");
	if (conn_pipe_begin(c) == -1 ||
	    conn_send_setup(c, lk->wait_ms, lk->lease_ms, lk->lease_ms,
	    CONN_XACT, err) == -1 ||
	    conn_queue(c, sql, 2, params) == -1 ||
	    conn_sync(c) == -1) {
		conn_oneline(PQerrorMessage(c), err);
		return COUNTER_ERROR;
	}
	/* BEGIN, the settings, the bump; then the sync. */
	for (step = 0; step < 3; step++) {
		if ((res = conn_pipe_next(c, lk->budget, &b->sig, NULL, NULL,
		    err)) == NULL)
			return b->sig != 0 ? COUNTER_INTERRUPTED : COUNTER_ERROR;
		if (step == 1 && conn_setup_standby(res) && !errors++) {
			/* A standby (pooled): the bump fails read-only. */
			err_set(err, "%s", CONN_STANDBY_SAID);
		} else if (PQresultStatus(res) == PGRES_FATAL_ERROR &&
		    !errors++) {
			/* The first error is the one that matters. */
			if (conn_is_state(res, "55P03"))
				out = COUNTER_BUSY;
			else if (conn_is_state(res, "42P01"))
				b->no_table = 1;
			else
				conn_result_error(res, err);
		} else if (step == 2 && PQresultStatus(res) == PGRES_TUPLES_OK) {
			if (PQntuples(res) == 0) {
				out = COUNTER_BUSY;
			} else if (strcmp(PQgetvalue(res, 0, 1), "f") != 0) {
				out = COUNTER_UNSAFE;
			} else {
				b->version = strtoll(PQgetvalue(res, 0, 0),
				    NULL, 10);
				b->pid = (int)strtol(PQgetvalue(res, 0, 2),
				    NULL, 10);
				out = COUNTER_OK;
			}
		}
		PQclear(res);
	}
	if (conn_pipe_end(c, lk->budget, &b->sig, NULL) == -1 || b->sig != 0)
		return b->sig != 0 ? COUNTER_INTERRUPTED : COUNTER_ERROR;
	return out;
}

enum counter_result
counter_next(PGconn *c, const struct counter_req *r, long long *version,
    int *pid, int *sig, struct err *err)
{
	struct bumped b = { 0, 0, 0, 0 };
	struct err why;
	enum counter_result res;

	res = bump(c, r, &b, err);
	if (res != COUNTER_OK && b.no_table) {
		if (conn_end(c, 0, budget_ms(r->lock.budget, CONN_ANSWER_MS),
		    err) == -1 || table_create(c, r->table, "(tenant text "
		    "PRIMARY KEY, version bigint NOT NULL)", "SELECT, INSERT, "
		    "UPDATE", r->lock.budget, err) == -1)
			return COUNTER_ERROR;
		b.no_table = 0;
		res = bump(c, r, &b, err);
	}
	if (res != COUNTER_OK)
		(void)conn_end(c, 0, CONN_ANSWER_MS, &why);
	*version = b.version;
	*pid = b.pid;
	*sig = b.sig;
	return res;
}
