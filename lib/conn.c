/* SPDX-License-Identifier: ISC */
/*
 * conn: open the session (connect, retry what a later attempt can win, refuse
 * a standby) and set it up (conn_send_setup()). Client keepalives and
 * tcp_user_timeout come first in the keyword list: -d, -h, -p, -U or the
 * environment override them. Queries go through lib/query.c, errors are
 * told by lib/said.c, the proof of a direct path is lib/proof.c's and a
 * conninfo's password is masked by lib/mask.c.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "conn.h"
#include "proof.h"
#include "query.h"
#include "said.h"
#include "sig.h"

/* TCP's bound on unacked data, ms: pglock's end; the server's with no lease. */
#define TCP_USER_TIMEOUT "10000"

/*
 * Keepalives, both ends: IDLE s of silence (on the server's, with a lease,
 * derived from it: setup_params()), then COUNT probes INTERVAL s apart.
 */
#define KA_IDLE 5
#define KA_INTERVAL 2
#define KA_COUNT 3
#define STR_(x) #x
#define STR(x) STR_(x)

/*
 * Can a later attempt win: the server is full (53300), starting or stopping
 * (57P03, or 57P01 and a closed connection: a restart caught it), a standby, a
 * pooler is full, or nobody listens yet (refused, or no Unix socket during a
 * restart)?
 * pglock runs in the C locale, so libpq's words are English; the server's may
 * not be, hence its SQLSTATE, which the verbose error form carries.
 */
/*
 * A Unix socket's directory that does not exist: no restart makes the socket
 * appear there, unlike a socket file missing from its directory.
 */
static int
no_socket_dir(const char *msg)
{
	const char *p = strstr(msg, "on socket \""), *end;
	char dir[1024];
	struct stat st;

	if (p == NULL || (end = strstr(p + 11, "/.s.PGSQL.")) == NULL ||
	    (size_t)(end - p - 11) >= sizeof(dir))
		return 0;
	snprintf(dir, sizeof(dir), "%.*s", (int)(end - p - 11), p + 11);
	return *dir != '\0' && stat(dir, &st) == -1 && (errno == ENOENT ||
	    errno == ENOTDIR);
}

static int
retryable(const char *msg)
{
	char refused[128], absent[128];

	/* libpq's "connection to server ... failed: <strerror>" */
	snprintf(refused, sizeof(refused), "failed: %s", strerror(ECONNREFUSED));
	snprintf(absent, sizeof(absent), "failed: %s", strerror(ENOENT));
	/*
	 * A standby where target_session_attrs asks for a primary (or for
	 * read-write): a promotion, or a proxy's next route, may end it.
	 */
	return strstr(msg, ":  53300: ") != NULL ||
	    strstr(msg, "failed: server is in hot standby mode") != NULL ||
	    strstr(msg, "failed: session is read-only") != NULL ||
	    strstr(msg, ":  57P03: ") != NULL ||
	    strstr(msg, ":  57P01: ") != NULL ||
	    strstr(msg, "server closed the connection unexpectedly") != NULL ||
	    strstr(msg, "no more connections allowed") != NULL ||
	    strstr(msg, refused) != NULL || (strstr(msg, absent) != NULL &&
	    !no_socket_dir(msg));
}

/* A verbose error as the default form shows it: no SQLSTATE, no LOCATION. */
static void
plain_error(const char *msg, struct err *err)
{
	char buf[1024];
	const char *p = msg, *nl;
	size_t n = 0, len;

	while (*p != '\0' && n + 1 < sizeof(buf)) {
		nl = strchr(p, '\n');
		len = nl != NULL ? (size_t)(nl - p + 1) : strlen(p);
		if (strncmp(p, "LOCATION:", 9) != 0) {
			const char *sev = strstr(p, ":  ");

			/* "FATAL:  53300: text" -> "FATAL:  text" */
			if (sev != NULL && sev < p + len && sev + 9 < p + len &&
			    strspn(sev + 3, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ")
			    == 5 && strncmp(sev + 8, ": ", 2) == 0) {
				n += (size_t)snprintf(buf + n, sizeof(buf) - n,
				    "%.*s", (int)(sev + 3 - p), p);
				len -= (size_t)(sev + 10 - p);
				p = sev + 10;
			}
			if (n < sizeof(buf))
				n += (size_t)snprintf(buf + n, sizeof(buf) - n,
				    "%.*s", (int)len, p);
		}
		p += len;
	}
	buf[n < sizeof(buf) ? n : sizeof(buf) - 1] = '\0';
	conn_oneline(buf, err);
}

const char *
conn_option(const PQconninfoOption *o, const char *keyword)
{
	for (; o != NULL && o->keyword != NULL; o++)
		if (strcmp(o->keyword, keyword) == 0)
			return o->val;
	return NULL;
}

/* libpq's connect_timeout, if the user set one (-d, PGCONNECT_TIMEOUT). */
static long
user_timeout_ms(PGconn *c)
{
	PQconninfoOption *info = PQconninfo(c);
	const char *val = conn_option(info, "connect_timeout");
	long secs = val != NULL ? strtol(val, NULL, 10) : 0;

	PQconninfoFree(info);
	/* As libpq reads it: whole seconds, 2 at least, 0 none. */
	if (secs <= 0 || secs >= 1000000)
		return -1;
	return (secs < 2 ? 2 : secs) * 1000;
}

/* Begin one try, without waiting: o->c under way, or NULL (out of memory). */
static void
start_once(const char *const *keys, const char *const *vals,
    struct conn_opening *o)
{
	o->st = PGRES_POLLING_WRITING;
	if ((o->c = PQconnectStartParams(keys, vals, 1)) == NULL)
		return;
	/* The SQLSTATE tells a full server from a wrong password. */
	PQsetErrorVerbosity(o->c, PQERRORS_VERBOSE);
	/* From the start: its own errors (libpq would print notices). */
	if (conn_said_watch(o->c) == -1) {
		PQfinish(o->c);
		o->c = NULL;
	}
}

/*
 * Where the password c needed goes. A password file that exists had no line
 * for c's host, port, database and user: name them, as it must (a database
 * name mistyped, or one line for another database, is what it then is).
 */
static void
password_hint(PGconn *c, struct err *err)
{
	const char *file = getenv("PGPASSFILE"), *home = getenv("HOME");
	char dflt[4096];

	if (file == NULL && home != NULL) {
		snprintf(dflt, sizeof(dflt), "%s/.pgpass", home);
		file = dflt;
	}
	if (file == NULL || access(file, R_OK) == -1) {
		err_add(err, " (pglock never prompts for a password: put it in "
		    "~/.pgpass, or name a service in PGSERVICE)");
		return;
	}
	err_add(err, " (pglock never prompts for a password: no line of %s "
	    "is for host %s, port %s, database %s, user %s; a field there "
	    "matches exactly, or is *)", file, PQhost(c), PQport(c), PQdb(c),
	    PQuser(c));
}

/*
 * End the try start_once() began, until until_ms (NEVER: never) or
 * connect_timeout: the connection, or NULL (o->c finished) with the reason in
 * err and *retry set if a later try may win. o->c is NULL after.
 */
static PGconn *
end_once(struct conn_opening *o, mono_t until_ms, int *retry,
    struct err *err)
{
	PGconn *c = o->c;
	enum conn_ready ready;
	mono_t limit;
	long user_ms;

	*retry = 0;
	if (c == NULL) {
		err_set(err, "out of memory");
		return NULL;
	}
	user_ms = user_timeout_ms(c);
	limit = mono_min(until_ms, deadline_in(user_ms));
	ready = conn_opening_wait(o, limit);
	o->c = NULL;
	if (ready == CONN_LATE)
		err_set(err, "server %s port %s did not answer in time "
		    "(timeout expired)", PQhost(c), PQport(c));
	else if (ready == CONN_BROKEN)
		err_set(err, "poll: %s", strerror(errno));
	if (ready != CONN_READY) {
		PQfinish(c);
		return NULL;
	}
	if (PQstatus(c) != CONNECTION_OK) {
		*retry = retryable(PQerrorMessage(c));
		plain_error(PQerrorMessage(c), err);
		if (no_socket_dir(PQerrorMessage(c)))
			err_add(err, " (no such socket directory)");
		/* Unattended, pglock never asks: say where a password goes. */
		if (PQconnectionNeedsPassword(c))
			password_hint(c, err);
		PQfinish(c);
		return NULL;
	}
	PQsetErrorVerbosity(c, PQERRORS_DEFAULT);
	return c;
}

/*
 * c, or NULL (c finished, the reason in err) if it is a standby, which libpq
 * lets through under target_session_attrs=any, or a pooler from another
 * server: *retry set, as for libpq's "server is in hot standby mode".
 */
static PGconn *
primary_only(PGconn *c, mono_t by, int *retry, struct err *err)
{
	struct budget b = budget_of(by, CONN_ANSWER_MS);

	switch (conn_standby(c, budget_ms(&b, CONN_ANSWER_MS), err)) {
	case 0:
		return c;
	case 1:
		err_set(err, "%s:%s: %s", PQhost(c), PQport(c),
		    CONN_STANDBY_SAID);
		*retry = 1;
		break;
	default:
		*retry = 0;
	}
	PQfinish(c);
	return NULL;
}

/* libpq's keywords and values for o (NULL-terminated, 16 at most). */
static void
conn_keys(const struct conn_opts *o, const char *keys[16],
    const char *vals[16])
{
	int n = 0;

#define SET(k, v) do { keys[n] = (k); vals[n++] = (v); } while (0)
#define KV(k, v) do { if ((v) != NULL) SET(k, v); } while (0)
	KV("fallback_application_name", o->appname);
	SET("keepalives", "1");
	SET("keepalives_idle", STR(KA_IDLE));
	SET("keepalives_interval", STR(KA_INTERVAL));
	SET("keepalives_count", STR(KA_COUNT));
	SET("tcp_user_timeout", TCP_USER_TIMEOUT);
	/* Locks on a standby exclude nobody: a host list finds the primary. */
	if (getenv("PGTARGETSESSIONATTRS") == NULL)
		SET("target_session_attrs", "primary");
	KV("dbname", o->dbname);
	KV("host", o->host);
	KV("port", o->port);
	KV("user", o->user);
#undef KV
#undef SET
	keys[n] = vals[n] = NULL;
}

int
conn_start(const struct conn_opts *o, struct conn_opening *op,
    struct err *err)
{
	const char *keys[16], *vals[16];

	conn_keys(o, keys, vals);
	start_once(keys, vals, op);
	if (op->c == NULL) {
		err_set(err, "out of memory");
		return -1;
	}
	return 0;
}

PGconn *
conn_finish(struct conn_opening *op, mono_t by, struct err *err)
{
	PGconn *c;
	int retry;

	if ((c = end_once(op, by, &retry, err)) == NULL)
		return NULL;
	return primary_only(c, by, &retry, err);
}

PGconn *
conn_open(const struct conn_opts *o, struct err *err)
{
	const char *keys[16], *vals[16];
	struct conn_opening op;
	mono_t start = mono_ms(), until = NEVER, by;
	long pause;
	int64_t left;
	PGconn *c;
	int attempt, retry;

	conn_keys(o, keys, vals);
	/* Retries end at --connect-timeout; everything ends at -w. */
	if (o->connect_ms > 0)
		until = mono_after(start, o->connect_ms);
	until = mono_min(until, o->deadline_ms);
	srandom((unsigned)getpid() ^ (unsigned)start);
	for (attempt = 0;; attempt++) {
		/* -n: an attempt waits no longer for an answer than a query. */
		by = until;
		if (o->attempt_ms > 0)
			by = mono_min(by, deadline_in(o->attempt_ms));
		start_once(keys, vals, &op);
		c = end_once(&op, by, &retry, err);
		if (c != NULL && (c = primary_only(c, by, &retry, err)) != NULL)
			break;
		if (!retry || o->connect_ms == 0)
			return NULL;
		if (attempt == 0 && o->retrying != NULL && until != NEVER)
			o->retrying(err->msg, (long)deadline_left(until));
		/*
		 * Full jitter: a fleet that failed together spreads out. The
		 * last attempt leaves itself 100 ms before the window closes.
		 */
		pause = random() % ((attempt < 6 ? 50L << attempt : 2000) + 1);
		left = deadline_left(until) - 100;
		if (pause > left)
			pause = (long)left;
		if (pause < 0) {
			err_add(err, " (gave up after %d attempts in %.1fs)",
			    attempt + 1, (double)ms_since(start) / 1000.0);
			return NULL;
		}
		sleep_ms(pause);
	}
	return c;
}

/*
 * ms: $1 lock_timeout, $2 the idle timeouts, $3 tcp_user_timeout; s: $4
 * keepalives_idle
 */
static void
setup_params(char val[4][32], long wait_ms, long idle_ms, long lease_ms)
{
	long idle;

	snprintf(val[0], sizeof(val[0]), "%ld", wait_ms > 0 ? wait_ms : 0);
	snprintf(val[1], sizeof(val[1]), "%ld", idle_ms);
	if (lease_ms > 0) {
		idle = (lease_ms + 999) / 1000 - (long)KA_COUNT * KA_INTERVAL;
		/* Linux takes at most 32767 s: tcp_user_timeout bounds it. */
		if (idle > 32767)
			idle = 32767;
		snprintf(val[2], sizeof(val[2]), "%ld", lease_ms);
		snprintf(val[3], sizeof(val[3]), "%ld", idle > 1 ? idle : 1);
	} else {
		snprintf(val[2], sizeof(val[2]), "%s", TCP_USER_TIMEOUT);
		snprintf(val[3], sizeof(val[3]), "%d", KA_IDLE);
	}
}

/*
 * Timeouts are forced: lock_timeout is -w's; the lease's (idle timeouts and
 * tcp_user_timeout, after which the server ends a silent holder's session or
 * transaction) must not be shortened; so is synchronous_commit, on at least. Other dead-peer settings yield to the
 * user's options=-c ... or PGOPTIONS. Settings old servers lack, and TCP ones
 * on a Unix socket, are left out here, not by a join with pg_settings: a few
 * set_config() calls are cheap for a fresh backend.
 */
static const struct setting {
	const char *name;
	const char *value;	/* SQL: $1 to $4 are conn_send_setup()'s */
	int since;		/* server version that has it */
	int forced;
	int tcp;		/* meaningful on TCP connections only */
} settings[] = {
	{ "statement_timeout", "'0'", 0, 1, 0 },
	{ "idle_in_transaction_session_timeout", "$2::text", 0, 1, 0 },
	{ "idle_session_timeout", "$2::text", 140000, 1, 0 },
	{ "transaction_timeout", "'0'", 170000, 1, 0 },
	{ "lock_timeout", "$1::text", 0, 1, 0 },
	{ "client_connection_check_interval", "'2000'", 140000, 0, 0 },
	{ "tcp_keepalives_idle", "$4::text", 0, 0, 1 },
	{ "tcp_keepalives_interval", "'" STR(KA_INTERVAL) "'", 0, 0, 1 },
	{ "tcp_keepalives_count", "'" STR(KA_COUNT) "'", 0, 0, 1 },
	{ "tcp_user_timeout", "$3::text", 120000, 1, 1 },
	/*
	 * A number or a record committed is kept: flushed, and where there
	 * are synchronous standbys, on one of them, so that a primary cut off
	 * from them (a stale one, after a failover) cannot confirm it.
	 */
	{ "synchronous_commit", "CASE pg_catalog.current_setting("
	    "'synchronous_commit') WHEN 'remote_apply' THEN 'remote_apply' "
	    "ELSE 'on' END", 0, 1, 0 },
};

int
conn_send_setup(PGconn *c, long wait_ms, long idle_ms, long lease_ms,
    enum conn_scope scope, struct err *err)
{
	char sql[2048], val[4][32];
	const char *params[8] = { val[0], val[1], val[2], val[3] };
	const char *local = scope == CONN_XACT ? "true" : "false";
	PQconninfoOption *info;
	const char *opts;
	struct conn_ends e;
	size_t i, n;
	/* The proof's parameters are $5 to $8, after the settings' four. */
	int tcp = conn_ends(c, 5, &e) == 0;

	if (scope == CONN_PROVE) {
		if (!tcp) {
			err_set(err, "no TCP connection to prove direct");
			return -1;
		}
		memcpy(params + 4, e.params, sizeof(e.params));
		/*
		 * A pooler on the server's Unix socket makes the proof NULL,
		 * which set_config() would take for false.
		 */
		local = "p.direct IS NOT TRUE";
	}
	/*
	 * First, in the lock's transaction: is this a standby? Through a
	 * pooler, the answer at connection may have come from another server.
	 */
	n = (size_t)snprintf(sql, sizeof(sql),
	    "SELECT pg_catalog.pg_is_in_recovery()");
	info = PQconninfo(c);
	opts = conn_option(info, "options");
	for (i = 0; i < sizeof(settings) / sizeof(settings[0]); i++) {
		const struct setting *s = &settings[i];

		if (PQserverVersion(c) < s->since || (s->tcp && !tcp) ||
		    (!s->forced && opts != NULL &&
		    strstr(opts, s->name) != NULL))
			continue;
		n += (size_t)snprintf(sql + n, sizeof(sql) - n,
		    ", pg_catalog.set_config('%s', %s, %s)", s->name, s->value,
		    local);
	}
	PQconninfoFree(info);
	if (scope == CONN_PROVE) {
		n += (size_t)snprintf(sql + n, sizeof(sql) - n,
		    ", p.direct FROM (SELECT %s AS direct) p", e.proof);
	}
	if (n >= sizeof(sql)) {
		err_set(err, "the set-up statement is too long");
		return -1;
	}
	setup_params(val, wait_ms, idle_ms, lease_ms);
	if ((scope == CONN_XACT && conn_queue(c, "BEGIN ISOLATION LEVEL READ "
	    "COMMITTED", 0, NULL) == -1) || conn_queue_text(c, sql,
	    scope == CONN_PROVE ? 8 : 4, params) == -1) {
		conn_oneline(PQerrorMessage(c), err);
		return -1;
	}
	return 0;
}

int
conn_setup_standby(const PGresult *res)
{
	return PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
	    strcmp(PQgetvalue(res, 0, 0), "t") == 0;
}

int
conn_standby(PGconn *c, long ms, struct err *err)
{
	const char *hot = PQparameterStatus(c, "in_hot_standby");
	PGresult *res;
	int rc = -1;

	if (hot != NULL)
		return strcmp(hot, "on") == 0;
	/* Servers before 14 (or a pooler that does not pass it on): ask. */
	res = conn_exec(c, "SELECT pg_catalog.pg_is_in_recovery()", NULL,
	    ms, err);
	if (res == NULL)
		return -1;
	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
		rc = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	else
		conn_result_error(res, err);
	PQclear(res);
	return rc;
}
