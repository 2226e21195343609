/* SPDX-License-Identifier: ISC */
/*
 * delay: the lock-delay's SQL. A holder's witness, and --break, keep a
 * companion lock of the lock's (shared, so that they never wait for each
 * other), which every new holder looks for in pg_locks before its command
 * starts; the server's start, crash recovery and
 * promotion are read from what any role may see: pg_postmaster_start_time(),
 * pg_last_xact_replay_timestamp() and, where the role may call it,
 * pg_control_checkpoint().
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "conn.h"
#include "delay.h"
#include "key.h"
#include "lock.h"
#include "query.h"
#include "said.h"

/* The role may not call pg_control_checkpoint(): look without it. */
static int no_control;

/*
 * id's companion lock, as a bigint parameter: a key no user KEY names. Two
 * of them: an exclusive holder's witness, and --break, keep the first, which
 * a new holder of either mode waits for; a shared holder's witness keeps the
 * second, which only a new exclusive holder waits for (shared holders run
 * together).
 */
static int
companion(const char *id, int shared, char num[24], struct err *err)
{
	char name[96];
	struct key k;

	snprintf(name, sizeof(name), "pglock-delay%s:%s",
	    shared ? "-shared" : "", id);
	if (key_hash(name, strlen(name), &k, err) == -1)
		return -1;
	snprintf(num, 24, "%" PRId64, k.id);
	return 0;
}

/*
 * Nobody keeps the companions ($1, the first; $2, the second for an
 * exclusive holder, else the first again), as pg_locks shows them: read, not
 * tried, so that shared holders granted together do not see each other's
 * looks; ms since the start;
 * since the end of crash recovery after the start (an end-of-recovery
 * checkpoint: a shutdown one, oldest_active_xid 0, newer than the start and
 * not after now: one ahead of the clock is a clean stop's before the clock
 * was set back, not a crash; its time is in whole seconds: one more); a promotion whose first
 * checkpoint is not done (pg_control still on the old timeline); ms since
 * the last transaction replayed before a promotion (or in crash recovery).
 * With synchronous standbys an old holder's every renewal is such a
 * transaction (lock.c), and its lease ends at most S after the last one: a
 * promoted server's new holders wait until then, even once the promotion's
 * checkpoint is done. It is the old primary's clock against this one's.
 */
#define REPLAYED_SQL "(extract(epoch FROM pg_catalog.clock_timestamp() - " \
    "pg_catalog.pg_last_xact_replay_timestamp()) * 1000)::bigint"

#define BOTH_FREE_SQL "NOT EXISTS (SELECT FROM pg_catalog.pg_lock_status() " \
    "l WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND " \
    "l.database = (SELECT d.oid FROM pg_catalog.pg_database d WHERE " \
    "d.datname = pg_catalog.current_database()) AND " \
    "((l.classid::bigint << 32) | l.objid::bigint) IN ($1::bigint, " \
    "$2::bigint))"

/* The holder ($2, a server process) still holds the lock tagged $3 to $5. */
#define HELD_SQL "SELECT EXISTS (SELECT FROM pg_catalog.pg_lock_status() l " \
    "WHERE l.locktype = 'advisory' AND l.granted AND l.pid = $2::int AND " \
    "l.objsubid = $3::int AND l.classid = $4::oid AND l.objid = $5::oid)"

static const char look_sql[] = "SELECT " BOTH_FREE_SQL ", "
    "(extract(epoch FROM pg_catalog.clock_timestamp() - "
    "pg_catalog.pg_postmaster_start_time()) * 1000)::bigint, "
    "CASE WHEN k.oldest_active_xid = '0'::xid AND k.checkpoint_time >= "
    "pg_catalog.pg_postmaster_start_time() AND k.checkpoint_time <= "
    "pg_catalog.clock_timestamp() THEN (extract(epoch FROM "
    "pg_catalog.clock_timestamp() - k.checkpoint_time) * 1000)::bigint "
    "- 1000 END, k.timeline_id <> ('x' || left(pg_catalog.pg_walfile_name("
    "pg_catalog.pg_current_wal_lsn()), 8))::bit(32)::int, " REPLAYED_SQL
    " FROM pg_catalog.pg_control_checkpoint() k";

static const char look_plain_sql[] = "SELECT " BOTH_FREE_SQL ", "
    "(extract(epoch FROM pg_catalog.clock_timestamp() - "
    "pg_catalog.pg_postmaster_start_time()) * 1000)::bigint, NULL, false, "
    REPLAYED_SQL;

/*
 * An event ago_ms ago, lease_ms long: wait out the rest, if it is longer.
 * One the server's clock puts in the future (stepped back since) is taken
 * as now: the wait is the lease at most, whatever the clock says.
 */
static void
event(struct delay_look *out, long lease_ms, const char *what, long ago_ms)
{
	long ago = ago_ms > 0 ? ago_ms : 0;

	if (ago >= lease_ms || lease_ms - ago <= out->wait_ms)
		return;
	out->wait_ms = lease_ms - ago;
	if (ago_ms < 0)
		snprintf(out->why, sizeof(out->why), "%s moments ago", what);
	else
		snprintf(out->why, sizeof(out->why), "%s %.1f s ago", what,
		    (double)ago_ms / 1000.0);
}

/* Column col of a one-row result as a number into *v: 0, or -1. */
static int
number(const PGresult *res, int col, long *v)
{
	const char *s = PQgetvalue(res, 0, col);
	char *end;

	errno = 0;
	*v = strtol(s, &end, 10);
	return errno == 0 && end != s && *end == '\0' ? 0 : -1;
}

static int
read_look(PGresult *res, long lease_ms, struct delay_look *out,
    struct err *err)
{
	long started, recovered = 0, replayed = 0;

	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		conn_result_error(res, err);
		return -1;
	}
	if (PQntuples(res) != 1 || PQnfields(res) != 5 ||
	    number(res, 1, &started) == -1 || (!PQgetisnull(res, 0, 2) &&
	    number(res, 2, &recovered) == -1) || (!PQgetisnull(res, 0, 4) &&
	    number(res, 4, &replayed) == -1)) {
		err_set(err, "the server's answer to the lock-delay's look is "
		    "not PostgreSQL's");
		return -1;
	}
	out->broken = strcmp(PQgetvalue(res, 0, 0), "t") != 0;
	out->wait_ms = 0;
	out->why[0] = '\0';
	event(out, lease_ms, "the server started", started);
	if (!PQgetisnull(res, 0, 2))
		event(out, lease_ms, "the server ended crash recovery",
		    recovered);
	if (strcmp(PQgetvalue(res, 0, 3), "t") == 0)
		event(out, lease_ms, "the server was promoted", -1);
	/* Its time is the old primary's: ahead of this one's, not future. */
	if (!PQgetisnull(res, 0, 4))
		event(out, lease_ms, "the server replayed its last transaction "
		    "in recovery", replayed > 0 ? replayed : 0);
	return 0;
}

/* The SET LOCAL that ends a transaction's look: its snapshot goes. */
static void
set_local_sql(char *sql, size_t len, long lease_ms)
{
	snprintf(sql, len, "SET LOCAL "
	    "idle_in_transaction_session_timeout = %ld", lease_ms);
}

/*
 * The look's parameters: the companions a holder in this mode waits for,
 * the first, then the second (exclusive) or the first again (shared).
 */
static int
look_params(const char *id, int shared, char num[2][24], struct err *err)
{
	return companion(id, 0, num[0], err) == -1 ||
	    companion(id, !shared, num[1], err) == -1 ? -1 : 0;
}

int
delay_queue(PGconn *c, const char *id, int shared, long idle_ms, int xact,
    struct err *err)
{
	char num[2][24], sql[96];
	const char *params[3] = { num[0], num[1], NULL };

	if (look_params(id, shared, num, err) == -1)
		return -1;
	set_local_sql(sql, sizeof(sql), idle_ms);
	if (conn_queue(c, no_control ? look_plain_sql : look_sql, 2,
	    params) == -1 || (xact && conn_queue(c, sql, 0, NULL) == -1) ||
	    conn_sync(c) == -1) {
		conn_oneline(PQerrorMessage(c), err);
		return -1;
	}
	return 0;
}

/*
 * The next answer to the look: from the pipeline, where delay_queue() sent
 * it, else sql run now; by by (mono_ms()), ms being what it allowed.
 */
static PGresult *
answer(PGconn *c, int queued, const char *sql, const char *const *params,
    mono_t by, long ms, struct err *err)
{
	if (queued)
		return conn_pipe_result(c, by, ms, err);
	return conn_exec(c, sql, params, bound_left(by), err);
}

int
delay_look(PGconn *c, const char *id, int shared, long lease_ms, long idle_ms,
    int xact, long ms, struct delay_look *out, struct err *err)
{
	char num[2][24], sql[96];
	const char *params[3] = { num[0], num[1], NULL };
	int queued = conn_piped(c), rc;
	mono_t by = deadline_in(ms);
	PGresult *res;
	struct err late;

	if (!queued && look_params(id, shared, num, err) == -1)
		return -1;
	if ((res = answer(c, queued, no_control ? look_plain_sql : look_sql,
	    params, by, ms, err)) == NULL)
		return -1;
	/* Not allowed: a session's lock stays; a transaction's is gone. */
	if (conn_is_state(res, "42501") && !no_control) {
		no_control = 1;
		conn_result_error(res, err);
		PQclear(res);
		if (queued && conn_pipe_skip(c, by, ms, &late) == -1)
			return -1;
		return xact ? -2 : -3;
	}
	rc = read_look(res, lease_ms, out, err);
	PQclear(res);
	if (rc == 0 && xact) {
		/* The SELECT's snapshot goes with the next statement. */
		set_local_sql(sql, sizeof(sql), idle_ms);
		if ((res = answer(c, queued, sql, NULL, by, ms, err)) == NULL)
			return -1;
		if (PQresultStatus(res) != PGRES_COMMAND_OK) {
			conn_result_error(res, err);
			rc = -1;
		}
		PQclear(res);
	}
	if (queued && conn_pipe_skip(c, by, ms, rc == 0 ? err : &late) == -1)
		return -1;
	return rc;
}

/* Run sql ($1: id's companion) within ms: 0, or -1 (err). */
static int
run(PGconn *c, const char *sql, const char *id, long ms, struct err *err)
{
	char num[24];
	const char *params[2] = { num, NULL };
	PGresult *res;
	int rc = 0;

	if (id != NULL && companion(id, 0, num, err) == -1)
		return -1;
	if ((res = conn_exec(c, sql, id != NULL ? params : NULL, ms, err)) ==
	    NULL)
		return -1;
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		conn_result_error(res, err);
		rc = -1;
	}
	PQclear(res);
	return rc;
}

int
delay_hold(PGconn *c, const char *id, long ms, struct err *err)
{
	/* Waited for within ms, not the user's lock_timeout. */
	return run(c, "SELECT pg_catalog.set_config('lock_timeout', '0', "
	    "false), pg_catalog.set_config('statement_timeout', '0', false), "
	    "pg_catalog.pg_advisory_lock_shared($1::bigint)", id, ms, err);
}

/*
 * The witness's statements, each a step of its pipeline after the settings:
 * name the session; keep the companion ($1); is the lock still the holder's
 * ($2, its server process; $3 to $5, its pg_locks tag)? A transaction's
 * then closes the check's portal, which would keep its snapshot (vacuum
 * waits) while the command runs: any utility statement does (its idle
 * timeout stays off: the settings').
 */
static const char *const witness_sql[2][4] = {
	{ "SELECT pg_catalog.set_config('application_name', '"
	    LOCK_WITNESS_APP "', false)",
	  "SELECT pg_catalog.pg_advisory_lock_shared($1::bigint)",
	  HELD_SQL, NULL },
	{ "SELECT pg_catalog.set_config('application_name', '"
	    LOCK_WITNESS_APP "', true)",
	  "SELECT pg_catalog.pg_advisory_xact_lock_shared($1::bigint)",
	  HELD_SQL, "SET LOCAL lock_timeout = 0" },
};

int
delay_witness(PGconn *w, const struct key *k, int pid, int shared, int xact,
    long lease_ms, long ms, struct err *err)
{
	char id[48], num[24], tag[4][24];
	const char *params[6] = { num, tag[0], tag[1], tag[2], tag[3], NULL };
	mono_t by = deadline_in(ms);
	uint32_t classid, objid;
	int objsubid, i, n = 0, held = 0, rc = 0;
	PGresult *res;
	struct err late;

	key_format(k, id, sizeof(id));
	key_locktag(k, &classid, &objid, &objsubid);
	snprintf(tag[0], sizeof(tag[0]), "%d", pid);
	snprintf(tag[1], sizeof(tag[1]), "%d", objsubid);
	snprintf(tag[2], sizeof(tag[2]), "%" PRIu32, classid);
	snprintf(tag[3], sizeof(tag[3]), "%" PRIu32, objid);
	if (companion(id, shared, num, err) == -1)
		return -1;
	/* A dead peer ends it as it ends the lock's session; idling never. */
	if (conn_pipe_begin(w) == -1) {
		conn_oneline(PQerrorMessage(w), err);
		return -1;
	}
	if (conn_send_setup(w, 0, 0, lease_ms, xact ? CONN_XACT :
	    CONN_SESSION, err) == -1)
		return -1;
	for (i = 0; i < 4 && witness_sql[xact != 0][i] != NULL; i++, n++) {
		if (conn_queue_text(w, witness_sql[xact != 0][i], i == 1 ? 1 :
		    i == 2 ? 5 : 0, params) == -1) {
			conn_oneline(PQerrorMessage(w), err);
			return -1;
		}
	}
	if (conn_sync(w) == -1) {
		conn_oneline(PQerrorMessage(w), err);
		return -1;
	}
	/* BEGIN (a transaction's), the settings, the statements; the sync. */
	for (i = 0; i < 1 + xact + n; i++) {
		if ((res = conn_pipe_result(w, by, ms, rc == 0 ? err :
		    &late)) == NULL)
			return -1;
		if (rc == 0 && PQresultStatus(res) != PGRES_COMMAND_OK &&
		    PQresultStatus(res) != PGRES_TUPLES_OK) {
			conn_result_error(res, err);
			rc = -1;
		} else if (i == xact + 3) {
			held = PQntuples(res) == 1 &&
			    strcmp(PQgetvalue(res, 0, 0), "t") == 0;
		}
		PQclear(res);
	}
	if (conn_pipe_skip(w, by, ms, rc == 0 ? err : &late) == -1)
		return -1;
	if (conn_pipe_leave(w) == -1) {
		conn_oneline(PQerrorMessage(w), err);
		return -1;
	}
	if (rc == 0 && !held) {
		err_set(err, "server process %d no longer holds the lock", pid);
		return -2;
	}
	return rc;
}

int
delay_witness_end(PGconn *w, int xact, long ms, struct err *err)
{
	if (xact)
		return conn_end(w, 0, ms, err);
	return run(w, "SELECT pg_catalog.pg_advisory_unlock_all()", NULL, ms,
	    err);
}

int
delay_keep(PGconn *c, long ms, struct err *err)
{
	char sql[96];

	/* On the server, which an idle_session_timeout cannot cut short. */
	snprintf(sql, sizeof(sql), "SELECT pg_catalog.pg_sleep(%ld.%03ld), "
	    "pg_catalog.pg_advisory_unlock_all()", ms / 1000, ms % 1000);
	return run(c, sql, NULL, ms + CONN_ANSWER_MS, err);
}
