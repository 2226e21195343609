/* SPDX-License-Identifier: ISC */
/*
 * conn: libpq connection set-up. Client keepalives and tcp_user_timeout come
 * first in the keyword list: -d, -h, -p, -U or the environment override them.
 */
#ifdef __linux__
/* struct ucred, for SO_PEERCRED: glibc shows it to _GNU_SOURCE only. */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier,cert-dcl37-c,cert-dcl51-cpp) */
#endif
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "conn.h"
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

/* The last message the server sent outside a query, e.g. why it hung up. */
static struct err server_said;

/* conn_deadline()'s by and ms; by 0: passed already, and cancelled. */
static long wait_by = -1, wait_bound_ms;

/* The SQLSTATE of the last error the server sent, for conn_cut(). */
static char last_state[6];

static void
keep_state(const PGresult *res)
{
	const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

	snprintf(last_state, sizeof(last_state), "%s", state != NULL ?
	    state : "");
}

static void
on_notice(void *arg, const PGresult *res)
{
	const char *sev = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
	const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

	(void)arg;
	/* Only errors matter: FATAL arrives here when the backend is killed. */
	if (msg != NULL && sev != NULL && (strcmp(sev, "ERROR") == 0 ||
	    strcmp(sev, "FATAL") == 0 || strcmp(sev, "PANIC") == 0)) {
		conn_oneline(msg, &server_said);
		keep_state(res);
	}
}

int
conn_is_state(const PGresult *res, const char *state)
{
	const char *s = PQresultErrorField(res, PG_DIAG_SQLSTATE);

	return s != NULL && strcmp(s, state) == 0;
}

void
conn_oneline(const char *msg, struct err *err)
{
	size_t i, j = 0;

	/* libpq ends with "\n" and puts hints on "\n\t..." lines. */
	for (i = 0; msg[i] != '\0' && j + 3 < sizeof(err->msg); i++) {
		if (msg[i] == '\n') {
			while (msg[i + 1] == '\t' || msg[i + 1] == ' ')
				i++;
			if (msg[i + 1] != '\0') {
				err->msg[j++] = ';';
				err->msg[j++] = ' ';
			}
			continue;
		}
		err->msg[j++] = msg[i];
	}
	err->msg[j] = '\0';
}

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

static const char *
option(const PQconninfoOption *o, const char *keyword)
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
	const char *val = option(info, "connect_timeout");
	long secs = val != NULL ? strtol(val, NULL, 10) : 0;

	PQconninfoFree(info);
	/* As libpq reads it: whole seconds, 2 at least, 0 none. */
	if (secs <= 0 || secs >= 1000000)
		return -1;
	return (secs < 2 ? 2 : secs) * 1000;
}

/*
 * One try, until until_ms (-1: never) or connect_timeout: the connection, or
 * NULL with the reason in err and *retry set if a later try may win.
 */
static PGconn *
connect_once(const char *const *keys, const char *const *vals,
    long until_ms, int *retry, struct err *err)
{
	PostgresPollingStatusType st = PGRES_POLLING_WRITING;
	struct pollfd p;
	long now, limit, user_ms;
	PGconn *c;

	*retry = 0;
	if ((c = PQconnectStartParams(keys, vals, 1)) == NULL) {
		err_set(err, "out of memory");
		return NULL;
	}
	/* The SQLSTATE tells a full server from a wrong password. */
	PQsetErrorVerbosity(c, PQERRORS_VERBOSE);
	/* From the start: libpq's default would print its own lines. */
	PQsetNoticeReceiver(c, on_notice, NULL);
	user_ms = user_timeout_ms(c);
	limit = user_ms < 0 ? until_ms : mono_ms() + user_ms;
	if (until_ms >= 0 && until_ms < limit)
		limit = until_ms;
	while (PQstatus(c) != CONNECTION_BAD && st != PGRES_POLLING_OK &&
	    st != PGRES_POLLING_FAILED) {
		p = (struct pollfd){ .fd = PQsocket(c), .events =
		    st == PGRES_POLLING_READING ? POLLIN : POLLOUT };
		now = mono_ms();
		if (limit >= 0 && now >= limit) {
			err_set(err, "server %s port %s did not answer "
			    "in time (timeout expired)", PQhost(c), PQport(c));
			PQfinish(c);
			return NULL;
		}
		if (poll(&p, 1, limit < 0 ? -1 : (int)(limit - now)) == -1 &&
		    errno != EINTR) {
			err_set(err, "poll: %s", strerror(errno));
			PQfinish(c);
			return NULL;
		}
		if (p.revents != 0)
			st = PQconnectPoll(c);
	}
	if (PQstatus(c) != CONNECTION_OK) {
		*retry = retryable(PQerrorMessage(c));
		plain_error(PQerrorMessage(c), err);
		if (no_socket_dir(PQerrorMessage(c)))
			err_add(err, " (no such socket directory)");
		/* Unattended, pglock never asks: say where a password goes. */
		if (PQconnectionNeedsPassword(c))
			err_add(err, " (pglock never prompts for a password: "
			    "put it in ~/.pgpass, or name a service in "
			    "PGSERVICE)");
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
primary_only(PGconn *c, int *retry, struct err *err)
{
	switch (conn_standby(c, err)) {
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

void
conn_result_error(const PGresult *res, struct err *err)
{
	const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	const char *detail = PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL);
	char buf[1024];

	keep_state(res);
	if (msg == NULL) {
		/* Not the server's: libpq's own text (a lost connection). */
		conn_oneline(PQresultErrorMessage(res), err);
		return;
	}
	snprintf(buf, sizeof(buf), "%s%s%s", msg, detail != NULL ? "; " : "",
	    detail != NULL ? detail : "");
	conn_oneline(buf, err);
}

PGconn *
conn_open(const struct conn_opts *o, struct err *err)
{
	const char *keys[16], *vals[16];
	long start = mono_ms(), until = -1, by, pause;
	PGconn *c;
	int n = 0, attempt, retry;

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

	/* Why an earlier session (cut by a restart) hung up is past. */
	server_said.msg[0] = '\0';
	last_state[0] = '\0';
	/* Retries end at --connect-timeout; everything ends at -w. */
	if (o->connect_ms > 0)
		until = start + o->connect_ms;
	if (o->deadline_ms >= 0 && (until < 0 || o->deadline_ms < until))
		until = o->deadline_ms;
	srandom((unsigned)getpid() ^ (unsigned)start);
	for (attempt = 0;; attempt++) {
		/* -n: an attempt waits no longer for an answer than a query. */
		by = until;
		if (o->attempt_ms > 0 &&
		    (by < 0 || by > mono_ms() + o->attempt_ms))
			by = mono_ms() + o->attempt_ms;
		c = connect_once(keys, vals, by, &retry, err);
		if (c != NULL && (c = primary_only(c, &retry, err)) != NULL)
			break;
		if (!retry || o->connect_ms == 0)
			return NULL;
		if (attempt == 0 && o->retrying != NULL && until >= 0)
			o->retrying(err->msg, until - mono_ms());
		/*
		 * Full jitter: a fleet that failed together spreads out. The
		 * last attempt leaves itself 100 ms before the window closes.
		 */
		pause = random() % ((attempt < 6 ? 50L << attempt : 2000) + 1);
		if (mono_ms() + pause > until - 100)
			pause = until - 100 - mono_ms();
		if (pause < 0) {
			err_add(err, " (gave up after %d attempts in %.1fs)",
			    attempt + 1, (double)(mono_ms() - start) / 1000.0);
			return NULL;
		}
		sleep_until(mono_ms() + pause);
	}
	return c;
}

/* ms: $1 lock_timeout, $2 lease, $3 tcp_user_timeout; s: $4 keepalives_idle */
static void
setup_params(char val[4][32], long wait_ms, long lease_ms)
{
	long idle;

	snprintf(val[0], sizeof(val[0]), "%ld", wait_ms > 0 ? wait_ms : 0);
	snprintf(val[1], sizeof(val[1]), "%ld", lease_ms);
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
conn_send_setup(PGconn *c, long wait_ms, long lease_ms, enum conn_scope scope,
    struct err *err)
{
	char sql[2048], val[4][32];
	const char *params[8] = { val[0], val[1], val[2], val[3] };
	const Oid text[8] = { 25, 25, 25, 25, 25, 25, 25, 25 };	/* TEXTOID */
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
	opts = option(info, "options");
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
	setup_params(val, wait_ms, lease_ms);
	if ((scope == CONN_XACT && !PQsendQueryParams(c, "BEGIN ISOLATION "
	    "LEVEL READ COMMITTED", 0, NULL, NULL, NULL, NULL, 0)) ||
	    !PQsendQueryParams(c, sql, scope == CONN_PROVE ? 8 : 4, text,
	    params, NULL, NULL, 0)) {
		conn_oneline(PQerrorMessage(c), err);
		return -1;
	}
	return 0;
}

int
conn_queue(PGconn *c, const char *sql, int n, const char *const *params)
{
	return PQenterPipelineMode(c) &&
	    PQsendQueryParams(c, sql, n, NULL, params, NULL, NULL, 0) ? 0 : -1;
}

int
conn_pipe_begin(PGconn *c)
{
	return PQenterPipelineMode(c) ? 0 : -1;
}

int
conn_sync(PGconn *c)
{
	return PQpipelineSync(c) ? 0 : -1;
}

int
conn_flush(PGconn *c)
{
	return PQsendFlushRequest(c) ? 0 : -1;
}

int
conn_pipe_leave(PGconn *c)
{
	return PQexitPipelineMode(c) ? 0 : -1;
}

int
conn_take_input(PGconn *c)
{
	/* PQisBusy parses what came, such as a FATAL notice. */
	if (!PQconsumeInput(c)) {
		(void)PQisBusy(c);
		return -1;
	}
	return PQisBusy(c);
}

PGresult *
conn_result_by(PGconn *c, long by, enum conn_ready *ready)
{
	*ready = conn_await(c, by);
	return *ready == CONN_READY ? PQgetResult(c) : NULL;
}

int
conn_setup_standby(const PGresult *res)
{
	return PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
	    strcmp(PQgetvalue(res, 0, 0), "t") == 0;
}

PGresult *
conn_exec(PGconn *c, const char *sql, const char *const *params, long ms,
    struct err *err)
{
	PGresult *res = NULL, *next;
	long by = mono_ms() + ms;
	int n = 0;

	/* Before the lock, -w (conn_deadline) bounds these too. */
	if (wait_by > 0 && wait_by < by) {
		by = wait_by;
		ms = wait_bound_ms;
	}

	while (params != NULL && params[n] != NULL)
		n++;
	/* Left in a pipeline or busy (a query not read to its end): not now. */
	if (PQpipelineStatus(c) != PQ_PIPELINE_OFF || PQisBusy(c)) {
		err_set(err, "the connection is still busy with an "
		    "earlier query");
		return NULL;
	}
	if (!PQsendQueryParams(c, sql, n, NULL, params, NULL, NULL, 0)) {
		conn_reason(c, err);
		return NULL;
	}
	/* Each result, and the end after them, may come later: await each. */
	for (;;) {
		switch (conn_await(c, by)) {
		case CONN_LATE:
			err_set(err, "the server did not answer within "
			    "%ld s", ms / 1000);
			PQclear(res);
			return NULL;
		case CONN_BROKEN:
			conn_reason(c, err);
			PQclear(res);
			return NULL;
		case CONN_READY:
			break;
		}
		if ((next = PQgetResult(c)) == NULL)
			break;
		if (res == NULL)
			res = next;
		else
			PQclear(next);
	}
	if (res == NULL)
		conn_reason(c, err);
	return res;
}

/* Did the server end the session with res (FATAL, PANIC), answering nothing? */
static int
ends_session(const PGresult *res)
{
	const char *sev = PQresultErrorField(res,
	    PG_DIAG_SEVERITY_NONLOCALIZED);

	return sev != NULL && (strcmp(sev, "FATAL") == 0 ||
	    strcmp(sev, "PANIC") == 0);
}

int
conn_settle(PGconn *c)
{
	PGresult *res;
	long by = mono_ms() + 2000;

	if (PQstatus(c) != CONNECTION_OK)
		return -1;
	if (!PQisBusy(c))
		return 0;
	conn_cancel(c);
	for (;;) {
		if (conn_await(c, by) != CONN_READY)
			return -1;
		if ((res = PQgetResult(c)) == NULL)
			break;
		PQclear(res);
	}
	return PQstatus(c) == CONNECTION_OK ? 0 : -1;
}

PGresult *
conn_pipe_result(PGconn *c, long by, long ms, struct err *err)
{
	PGresult *res = NULL, *next;
	enum conn_ready ready;

	for (;;) {
		next = conn_result_by(c, by, &ready);
		if (ready == CONN_LATE) {
			err_set(err, "the server did not answer within "
			    "%ld s", ms / 1000);
			break;
		}
		if (ready == CONN_BROKEN || (next == NULL &&
		    PQstatus(c) == CONNECTION_BAD)) {
			PQclear(next);
			conn_reason(c, err);
			break;
		}
		if (next == NULL && res != NULL && ends_session(res)) {
			conn_result_error(res, err);
			break;
		}
		if (next == NULL) {
			if (res != NULL)
				return res;	/* the statement's end */
			continue;
		}
		if (res == NULL && PQresultStatus(next) == PGRES_PIPELINE_SYNC)
			return next;
		if (res == NULL)
			res = next;
		else
			PQclear(next);
	}
	PQclear(res);
	return NULL;
}

int
conn_end(PGconn *c, int commit, long ms, struct err *err)
{
	const char *what = commit ? "COMMIT" : "ROLLBACK";
	PGresult *res = conn_exec(c, what, NULL, ms, err);
	int rc = -1;

	/* COMMIT of a failed transaction answers ROLLBACK, not an error. */
	if (res == NULL)
		return -1;
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		conn_result_error(res, err);
	else if (strcmp(PQcmdStatus(res), what) != 0)
		err_set(err, "the transaction was rolled back");
	else
		rc = 0;
	PQclear(res);
	return rc;
}

int
conn_cut(PGconn *c)
{
	return PQstatus(c) == CONNECTION_BAD && (last_state[0] == '\0' ||
	    strncmp(last_state, "57P0", 4) == 0);
}

int
conn_read_only(void)
{
	return strcmp(last_state, "25006") == 0;
}

void
conn_reason(PGconn *c, struct err *err)
{
	if (server_said.msg[0] != '\0')
		*err = server_said;
	else
		conn_oneline(PQerrorMessage(c), err);
}

void
conn_deadline(long by, long ms)
{
	wait_by = by;
	wait_bound_ms = ms;
}

/* What ended a conn_wait(). */
enum conn_event {
	EV_READY,		/* a result can be read without blocking */
	EV_SIGNAL,		/* a signal to forward came (in *sig) */
	EV_BROKEN,		/* the connection failed */
	EV_TICK,		/* tick_ms passed */
	EV_DEADLINE		/* by came */
};

/*
 * Wait until by (mono_ms(); -1: never) for a result readable without blocking,
 * or another event. Signals are watched unless sig is NULL, and not returned
 * once cancelled; the answer is then waited for 5 s at most.
 */
static enum conn_event
conn_wait(PGconn *c, long by, int cancelled, int tick_ms, int *sig)
{
	struct pollfd p[2];
	double give_up = mono_seconds() + 5;
	long t;
	int n, ms;

	while (PQisBusy(c)) {
		p[0] = (struct pollfd){ .fd = PQsocket(c), .events = POLLIN };
		p[1] = (struct pollfd){ .fd = sig != NULL ? sig_fd() : -1,
		    .events = POLLIN };
		/* After a cancel the server answers at once, or never. */
		ms = cancelled ? 1000 : tick_ms;
		t = mono_ms();
		if (by >= 0 && t >= by)
			return EV_DEADLINE;
		if (by >= 0 && (ms < 0 || by - t < ms))
			ms = (int)(by - t);
		n = poll(p, 2, ms);
		if (n == -1 && errno != EINTR)
			return EV_BROKEN;
		if (cancelled && mono_seconds() > give_up)
			return EV_BROKEN;
		if (n == 0 && !cancelled && tick_ms >= 0)
			return EV_TICK;
		if (sig != NULL && (p[1].revents & POLLIN)) {
			while ((*sig = sig_take()) != 0)
				if (!cancelled && sig_forwarded(*sig))
					return EV_SIGNAL;
		}
		/* Any event, POLLNVAL too: libpq's read says what it was. */
		if (p[0].revents != 0 && !PQconsumeInput(c))
			return EV_BROKEN;
	}
	return EV_READY;
}

enum conn_ready
conn_await(PGconn *c, long by)
{
	enum conn_event ev = conn_wait(c, by, 0, -1, NULL);

	if (ev == EV_READY)
		return CONN_READY;
	return ev == EV_DEADLINE ? CONN_LATE : CONN_BROKEN;
}

void
conn_cancel(PGconn *c)
{
	char buf[256];
	PGcancel *cn = PQgetCancel(c);
	pid_t pid;

	if (cn == NULL)
		return;
	/*
	 * PQcancel() has no time limit (minutes for a server out of reach): a
	 * child, where it is safe as in a handler, sends it; its alarm ends it.
	 */
	if ((pid = fork()) == 0) {
		sigset_t alrm;

		/* Even if the caller runs pglock with SIGALRM blocked. */
		sigemptyset(&alrm);
		sigaddset(&alrm, SIGALRM);
		(void)sigprocmask(SIG_UNBLOCK, &alrm, NULL);
		(void)signal(SIGALRM, SIG_DFL);
		(void)alarm(2);
		(void)PQcancel(cn, buf, sizeof(buf));
		_exit(0);
	}
	while (pid > 0 && waitpid(pid, NULL, 0) == -1 && errno == EINTR)
		;
	PQfreeCancel(cn);
}

/* Does libpq take a -d value as a conninfo string or URI (not a name)? */
static int
is_conninfo(const char *s)
{
	return strchr(s, '=') != NULL || strncmp(s, "postgres://", 11) == 0 ||
	    strncmp(s, "postgresql://", 13) == 0;
}

/*
 * 'x' over each password written in s, found by hand (libpq may not parse
 * s): a URI's user:password@ and every password= value, quoted or not.
 */
static void
mask_written(char *s)
{
	char *p, *at = NULL, *end, *colon;
	size_t n;

	if ((p = strstr(s, "://")) != NULL) {
		p += 3;
		end = p + strcspn(p, "/?#");
		for (; p < end; p++)
			if (*p == '@')
				at = p;
		p = at != NULL ? strstr(s, "://") + 3 : NULL;
		if (p != NULL && (colon = memchr(p, ':', (size_t)(at - p))) != NULL)
			memset(colon + 1, 'x', (size_t)(at - colon - 1));
	}
	for (p = s; (p = strstr(p, "password=")) != NULL; p += n) {
		p += 9;
		n = *p == '\'' ? 1 + strcspn(p + 1, "'") : strcspn(p, "& \t\n");
		memset(p, 'x', n);
	}
}

int
conn_check(const char *conninfo, struct err *err)
{
	PQconninfoOption *opts;
	char *msg = NULL, *masked, *p;
	size_t i, j, len = strlen(conninfo);

	/* libpq takes "POSTGRESQL://..." for a database name, sent as is. */
	if (strncasecmp(conninfo, "postgres", 8) == 0 &&
	    !is_conninfo(conninfo) && (strncmp(conninfo + 8, "://", 3) == 0 ||
	    strncasecmp(conninfo + 8, "ql://", 5) == 0)) {
		err_set(err, "a URI begins with postgresql:// or "
		    "postgres://, in lower case (libpq would take this one for "
		    "a database name)");
		return -1;
	}
	/*
	 * Nor "user:password@host/db": libpq would send it, password and all,
	 * as a database name, or quote it in its reason (with an '=' after it).
	 */
	if (strncmp(conninfo, "postgres://", 11) != 0 &&
	    strncmp(conninfo, "postgresql://", 13) != 0 &&
	    conninfo[strcspn(conninfo, ":/=@ \t")] == ':' &&
	    strchr(conninfo, '@') != NULL) {
		err_set(err, "user:password@... is a URI only after "
		    "postgresql:// (libpq would take this one for a database "
		    "name)");
		return -1;
	}
	/* A plain database name is not parsed: any string is a name. */
	if (!is_conninfo(conninfo))
		return 0;
	if ((opts = PQconninfoParse(conninfo, &msg)) != NULL) {
		PQconninfoFree(opts);
		return 0;
	}
	if (msg == NULL || (masked = strdup(conninfo)) == NULL) {
		err_set(err, "out of memory");
		PQfreemem(msg);
		return -1;
	}
	/* Where libpq's reason quotes a password, it becomes x's, as in ps. */
	mask_written(masked);
	for (p = msg; (p = strstr(p, conninfo)) != NULL && len > 0; p += len)
		memcpy(p, masked, len);
	for (i = 0; i < len; i = j) {
		for (j = i; j < len && masked[j] != conninfo[j]; j++)
			;
		if (j > i) {
			char *run = strndup(conninfo + i, j - i);

			for (p = msg; run != NULL && (p = strstr(p, run)) !=
			    NULL; p += j - i)
				memset(p, 'x', j - i);
			free(run);
		}
		j += j == i;
	}
	conn_oneline(msg, err);
	free(masked);
	PQfreemem(msg);
	return -1;
}

void
conn_hide_password(char *conninfo)
{
	PQconninfoOption *opts;
	const char *pw;
	int secret;

	/*
	 * Only libpq's parser finds a password in all its forms (user:pw@,
	 * ?password=, percent-encoded, quoted, escaped, twice): all of it goes.
	 */
	if (!is_conninfo(conninfo) ||
	    (opts = PQconninfoParse(conninfo, NULL)) == NULL)
		return;
	pw = option(opts, "password");
	secret = pw != NULL && *pw != '\0';
	PQconninfoFree(opts);
	if (secret)
		memset(conninfo, 'x', strlen(conninfo));
}

/*
 * The next result of the query or pipeline in progress, NULL at a statement's
 * end, waited for as conn_pipe_next() says; *failed set, the reason in err, if
 * the connection fails (or a cancel gets no answer in 5 s).
 */
static PGresult *
conn_next(PGconn *c, int *sig, void (*tick)(void *), void *arg, int *failed,
    struct err *err)
{
	int s;

	*failed = 0;
	for (;;) {
		switch (conn_wait(c, wait_by, *sig != 0,
		    tick != NULL ? 1000 : -1, &s)) {
		case EV_READY:
			return PQgetResult(c);
		case EV_TICK:	/* only with a tick */
			if (tick != NULL)
				tick(arg);
			break;
		case EV_SIGNAL:
			/* Cancel once; the server then forgets the waiter. */
			*sig = s;
			conn_cancel(c);
			break;
		case EV_DEADLINE:
			/* Once: later waits fail at once, with no cancel. */
			if (wait_by > 0)
				conn_cancel(c);
			wait_by = 0;
			err_set(err, "the server did not answer within "
			    "%.3gs", (double)wait_bound_ms / 1000.0);
			*failed = 1;
			return NULL;
		case EV_BROKEN:
			conn_reason(c, err);
			*failed = 1;
			return NULL;
		}
	}
}

PGresult *
conn_pipe_next(PGconn *c, int *sig, void (*tick)(void *), void *arg,
    struct err *err)
{
	PGresult *res, *more;
	int failed;

	res = conn_next(c, sig, tick, arg, &failed, err);
	if (res == NULL && !failed)
		conn_reason(c, err);
	if (res == NULL || PQresultStatus(res) == PGRES_PIPELINE_SYNC)
		return res;
	while ((more = conn_next(c, sig, NULL, NULL, &failed, err)) != NULL)
		PQclear(more);
	if (failed) {
		/* Why it hung up, such as a pooler's refusal, came first. */
		if (PQresultStatus(res) == PGRES_FATAL_ERROR)
			conn_result_error(res, err);
		PQclear(res);
		return NULL;
	}
	return res;
}

int
conn_pipe_end(PGconn *c, int *sig, struct err *err)
{
	PGresult *res;
	struct err later;
	int synced;

	do {
		if ((res = conn_pipe_next(c, sig, NULL, NULL, err != NULL ?
		    err : &later)) == NULL)
			return -1;
		synced = PQresultStatus(res) == PGRES_PIPELINE_SYNC;
		PQclear(res);
	} while (!synced);
	(void)PQexitPipelineMode(c);
	return 0;
}

int
conn_standby(PGconn *c, struct err *err)
{
	const char *hot = PQparameterStatus(c, "in_hot_standby");
	PGresult *res;
	int rc = -1;

	if (hot != NULL)
		return strcmp(hot, "on") == 0;
	/* Servers before 14 (or a pooler that does not pass it on): ask. */
	res = conn_exec(c, "SELECT pg_catalog.pg_is_in_recovery()", NULL,
	    CONN_ANSWER_MS, err);
	if (res == NULL)
		return -1;
	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
		rc = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	else
		conn_result_error(res, err);
	PQclear(res);
	return rc;
}

/* The parent of process pid, from /proc; -1 if unknown. */
static long
parent_of(int pid)
{
	char path[64], buf[512], *p, *end;
	FILE *f;
	size_t n;
	long ppid;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* "pid (comm) state ppid ...": comm may hold spaces and parentheses. */
	if ((p = strrchr(buf, ')')) == NULL || strlen(p) < 5)
		return -1;
	ppid = strtol(p + 4, &end, 10);
	return end != p + 4 && *end == ' ' ? ppid : -1;
}

/* Is libpq's backend pid a child of the socket's listener (the postmaster)? */
static int
unix_direct(PGconn *c)
{
#ifdef SO_PEERCRED
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(PQsocket(c), SOL_SOCKET, SO_PEERCRED, &cr, &len) == -1 ||
	    cr.pid <= 0)
		return 0;
	return parent_of(PQbackendPID(c)) == (long)cr.pid;
#else
	(void)c;
	return 0;
#endif
}

int
conn_ends(PGconn *c, int first, struct conn_ends *e)
{
	struct sockaddr_storage ss[2];
	socklen_t len[2] = { sizeof(ss[0]), sizeof(ss[1]) };
	int fd = PQsocket(c);
	size_t i;

	memset(ss, 0, sizeof(ss));
	if (getsockname(fd, (struct sockaddr *)&ss[0], &len[0]) == -1 ||
	    ss[0].ss_family == AF_UNIX ||
	    getpeername(fd, (struct sockaddr *)&ss[1], &len[1]) == -1)
		return -1;
	for (i = 0; i < 2; i++) {
		if (getnameinfo((struct sockaddr *)&ss[i], len[i], e->addr[i],
		    sizeof(e->addr[i]), e->port[i], sizeof(e->port[i]),
		    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
			return -1;
		/* A link-local zone ("fe80::1%eth0"): inet takes none. */
		e->addr[i][strcspn(e->addr[i], "%")] = '\0';
		e->params[2 * i] = e->addr[i];
		e->params[2 * i + 1] = e->port[i];
	}
	/*
	 * Both ends: one alone could be a pooler's connection that happens to
	 * have the same local port, towards another destination.
	 */
	snprintf(e->proof, sizeof(e->proof), "(pg_catalog.inet_client_addr() ="
	    " $%d::inet AND pg_catalog.inet_client_port() = $%d::int AND"
	    " pg_catalog.inet_server_addr() = $%d::inet AND"
	    " pg_catalog.inet_server_port() = $%d::int)", first, first + 1,
	    first + 2, first + 3);
	return 0;
}

enum conn_path
conn_direct(PGconn *c, int ask)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct conn_ends e;
	const char *params[5];
	char sql[512];
	struct err why;
	PGresult *res;
	int direct;

	memset(&ss, 0, sizeof(ss));
	if (getsockname(PQsocket(c), (struct sockaddr *)&ss, &len) == -1)
		return CONN_UNPROVEN;
	if (ss.ss_family == AF_UNIX)
		return unix_direct(c) ? CONN_DIRECT_LOCAL : CONN_UNPROVEN;
	if (conn_ends(c, 1, &e) == -1)
		return CONN_UNPROVEN;
	if (!ask)
		return CONN_TCP;
	memcpy(params, e.params, sizeof(e.params));
	params[4] = NULL;
	snprintf(sql, sizeof(sql), "SELECT %s", e.proof);
	res = conn_exec(c, sql, params, CONN_ANSWER_MS, &why);
	direct = PQresultStatus(res) == PGRES_TUPLES_OK &&
	    PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);
	return direct ? CONN_DIRECT_TCP : CONN_UNPROVEN;
}
