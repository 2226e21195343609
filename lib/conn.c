/* SPDX-License-Identifier: ISC */
/*
 * conn: libpq connection set-up. Client-side TCP keepalives and
 * tcp_user_timeout come first in the keyword list so that anything the user
 * gives in -d, -h, -p, -U or the environment overrides them.
 */
#include <errno.h>
#include <sys/socket.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "conn.h"
#include "sig.h"

/* The last message the server sent outside a query, e.g. why it hung up. */
static char server_said[512];

static void
on_notice(void *arg, const PGresult *res)
{
	const char *sev = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
	const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

	(void)arg;
	/* Only errors matter: FATAL arrives here when the backend is killed. */
	if (msg != NULL && sev != NULL && strcmp(sev, "NOTICE") != 0 &&
	    strcmp(sev, "WARNING") != 0 && strcmp(sev, "INFO") != 0 &&
	    strcmp(sev, "LOG") != 0 && strncmp(sev, "DEBUG", 5) != 0)
		conn_oneline(msg, server_said, sizeof(server_said));
}

void
conn_oneline(const char *msg, char *err, size_t errlen)
{
	size_t i, j = 0;

	/* libpq ends with "\n" and puts hints on "\n\t..." lines. */
	for (i = 0; msg[i] != '\0' && j + 3 < errlen; i++) {
		if (msg[i] == '\n') {
			while (msg[i + 1] == '\t' || msg[i + 1] == ' ')
				i++;
			if (msg[i + 1] != '\0') {
				err[j++] = ';';
				err[j++] = ' ';
			}
			continue;
		}
		err[j++] = msg[i];
	}
	err[j] = '\0';
}

PGconn *
conn_open(const struct conn_opts *o, char *err, size_t errlen)
{
	const char *keys[16], *vals[16];
	PGconn *c;
	int n = 0;

#define SET(k, v) do { keys[n] = (k); vals[n++] = (v); } while (0)
#define KV(k, v) do { if ((v) != NULL) SET(k, v); } while (0)
	KV("fallback_application_name", o->appname);
	SET("keepalives", "1");
	SET("keepalives_idle", "5");
	SET("keepalives_interval", "2");
	SET("keepalives_count", "3");
	SET("tcp_user_timeout", "10000");
	KV("dbname", o->dbname);
	KV("host", o->host);
	KV("port", o->port);
	KV("user", o->user);
#undef KV
#undef SET
	keys[n] = NULL;
	vals[n] = NULL;

	c = PQconnectdbParams(keys, vals, 1);
	if (c == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (PQstatus(c) != CONNECTION_OK) {
		conn_oneline(PQerrorMessage(c), err, errlen);
		PQfinish(c);
		return NULL;
	}
	PQsetNoticeReceiver(c, on_notice, NULL);
	return c;
}

/*
 * pglock's session settings. Timeouts are always forced off (lock_timeout
 * is -w); dead-peer detection is left alone where the user chose it in the
 * connection's options (options=-c ... or PGOPTIONS). Settings older
 * servers lack are not sent, and TCP ones not on a Unix socket, so that
 * the statement stays a handful of set_config() calls: cheap for a fresh
 * backend, unlike a join with pg_settings.
 */
static const struct setting {
	const char *name;
	const char *value;	/* NULL: $1, the lock timeout */
	int since;		/* server version that has it */
	int forced;
	int tcp;		/* meaningful on TCP connections only */
} settings[] = {
	{ "statement_timeout", "0", 0, 1, 0 },
	{ "idle_in_transaction_session_timeout", "0", 0, 1, 0 },
	{ "idle_session_timeout", "0", 140000, 1, 0 },
	{ "lock_timeout", NULL, 0, 1, 0 },
	{ "client_connection_check_interval", "2000", 140000, 0, 0 },
	{ "tcp_keepalives_idle", "5", 0, 0, 1 },
	{ "tcp_keepalives_interval", "2", 0, 0, 1 },
	{ "tcp_keepalives_count", "3", 0, 0, 1 },
	{ "tcp_user_timeout", "10000", 120000, 0, 1 },
};

/* Did the user set NAME in the connection's startup options? */
static int
user_set(PQconninfoOption *info, const char *name)
{
	PQconninfoOption *o;

	for (o = info; o != NULL && o->keyword != NULL; o++)
		if (strcmp(o->keyword, "options") == 0 && o->val != NULL)
			return strstr(o->val, name) != NULL;
	return 0;
}

static int
is_tcp(PGconn *c)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	return getsockname(PQsocket(c), (struct sockaddr *)&ss, &len) == 0 &&
	    ss.ss_family != AF_UNIX;
}

int
conn_send_settings(PGconn *c, long lock_ms, char *err, size_t errlen)
{
	char sql[1024], ms[32];
	const char *params[1] = { ms };
	PQconninfoOption *info = PQconninfo(c);
	size_t i, n;
	int tcp = is_tcp(c), version = PQserverVersion(c);

	n = (size_t)snprintf(sql, sizeof(sql), "SELECT 1");
	for (i = 0; i < sizeof(settings) / sizeof(settings[0]); i++) {
		const struct setting *s = &settings[i];

		if (version < s->since || (s->tcp && !tcp) ||
		    (!s->forced && user_set(info, s->name)))
			continue;
		n += (size_t)snprintf(sql + n, sizeof(sql) - n,
		    ", set_config('%s', %s%s%s, false)", s->name,
		    s->value != NULL ? "'" : "",
		    s->value != NULL ? s->value : "$1::text",
		    s->value != NULL ? "'" : "");
	}
	PQconninfoFree(info);
	snprintf(ms, sizeof(ms), "%ld", lock_ms);
	if (!PQsendQueryParams(c, sql, 1, NULL, params, NULL, NULL, 0)) {
		conn_oneline(PQerrorMessage(c), err, errlen);
		return -1;
	}
	return 0;
}

void
conn_reason(PGconn *c, char *err, size_t errlen)
{
	if (server_said[0] != '\0')
		snprintf(err, errlen, "%s", server_said);
	else
		conn_oneline(PQerrorMessage(c), err, errlen);
}

/*
 * Wait until a result can be read without blocking. Returns 0 when ready,
 * a forwarded signal (unless cancelled: a cancel was sent, so wait at most
 * 5 s for its answer), -1 when the connection failed, or -2 when tick_ms
 * passed first (-1: no tick).
 */
static int
conn_wait(PGconn *c, int cancelled, int tick_ms)
{
	struct pollfd p[2];
	double give_up = mono_seconds() + 5;
	int sig, n;

	while (PQisBusy(c)) {
		p[0].fd = PQsocket(c);
		p[0].events = POLLIN;
		p[0].revents = 0;
		p[1].fd = sig_fd();
		p[1].events = POLLIN;
		p[1].revents = 0;
		/* After a cancel the server answers at once, or never. */
		n = poll(p, 2, cancelled ? 1000 : tick_ms);
		if (n == -1 && errno != EINTR)
			return -1;
		if (cancelled && mono_seconds() > give_up)
			return -1;
		if (n == 0 && !cancelled)
			return -2;
		if (p[1].revents & POLLIN) {
			while ((sig = sig_take()) != 0)
				if (!cancelled && sig_forwarded(sig))
					return sig;
		}
		if ((p[0].revents & (POLLIN | POLLERR | POLLHUP)) &&
		    !PQconsumeInput(c))
			return -1;
	}
	return 0;
}

void
conn_cancel(PGconn *c)
{
	char buf[256];
	PGcancel *cn = PQgetCancel(c);

	if (cn != NULL) {
		(void)PQcancel(cn, buf, sizeof(buf));
		PQfreeCancel(cn);
	}
}

int
conn_check(const char *conninfo, char *err, size_t errlen)
{
	PQconninfoOption *opts;
	char *msg = NULL;

	/* A plain database name is not parsed: any string is a name. */
	if (strchr(conninfo, '=') == NULL &&
	    strncmp(conninfo, "postgres://", 11) != 0 &&
	    strncmp(conninfo, "postgresql://", 13) != 0)
		return 0;
	if ((opts = PQconninfoParse(conninfo, &msg)) == NULL) {
		conn_oneline(msg != NULL ? msg : "out of memory", err, errlen);
		PQfreemem(msg);
		return -1;
	}
	PQconninfoFree(opts);
	return 0;
}

/* Mask the value that starts at p: quoted, or up to a space or '&'. */
static void
mask_value(char *p)
{
	char q = '\0';

	if (*p == '\'')
		q = *p++;

	for (; *p != '\0'; p++) {
		if (q != '\0' && *p == '\\' && p[1] != '\0') {
			*p++ = 'x';
		} else if (q != '\0' ? *p == q :
		    (*p == ' ' || *p == '\t' || *p == '&')) {
			break;
		}
		*p = 'x';
	}
}

void
conn_hide_password(char *s)
{
	char *p, *at, *colon, *end;

	/* URI: scheme://user:PASSWORD@host... */
	if ((p = strstr(s, "://")) != NULL) {
		p += 3;
		end = p + strcspn(p, "/?");
		at = memchr(p, '@', (size_t)(end - p));
		colon = at != NULL ? memchr(p, ':', (size_t)(at - p)) : NULL;
		if (colon != NULL)
			memset(colon + 1, 'x', (size_t)(at - colon - 1));
	}
	/* key=value, in a conninfo string or a URI's query. */
	for (p = s; (p = strstr(p, "password")) != NULL; p += 8) {
		end = p + 8;
		while (*end == ' ' || *end == '\t')
			end++;
		if (*end != '=')
			continue;
		end++;
		while (*end == ' ' || *end == '\t')
			end++;
		mask_value(end);
	}
}

PGresult *
conn_next(PGconn *c, int *sig, void (*tick)(void *), void *arg, int *failed,
    char *err, size_t errlen)
{
	int s;

	*failed = 0;
	for (;;) {
		s = conn_wait(c, *sig != 0, tick != NULL ? 1000 : -1);
		if (s == 0)
			return PQgetResult(c);
		if (s == -2 && tick != NULL) {
			tick(arg);
		} else if (s > 0) {
			/* Cancel once; the server then forgets the waiter. */
			*sig = s;
			conn_cancel(c);
		} else if (s == -1) {
			conn_reason(c, err, errlen);
			*failed = 1;
			return NULL;
		}
	}
}
