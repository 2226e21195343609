/* SPDX-License-Identifier: ISC */
/*
 * inspect: --explain, --status, --break, --forget: the modes that look at locks
 * (and end holders) rather than take one; their TSV and JSON output.
 *
 * Copyright (c) 2026 The pglock authors. Permission to use, copy, modify
 * and distribute this software for any purpose is granted under the terms
 * of the ISC licence in COPYING.
 */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "lib/conn.h"
#include "lib/exits.h"
#include "lib/key.h"
#include "lib/lock.h"
#include "lib/runs.h"
#include "lib/slots.h"
#include "inspect.h"
#include "out.h"
#include "pglock.h"

/*
 * s as an SQL string literal, quotes doubled; a KEY with bytes that messages
 * escape as an escape string, E'...', in those escapes (\n, \xHH, \uHHHH; a
 * backslash as \\): no control byte shows, and the SQL takes the same key.
 */
static void
put_literal(FILE *f, const char *s)
{
	size_t n = strlen(s), i, j = 0;
	char *bs = malloc(2 * n + 1), *shown = malloc(12 * n + 1);
	const char *q;
	int esc;

	if (bs == NULL || shown == NULL)
		die_errno(EXIT_OSERR, "malloc");
	for (i = 0; i < n; i++) {
		if (s[i] == '\\')
			bs[j++] = '\\';
		bs[j++] = s[i];
	}
	bs[j] = '\0';
	/* field() doubles a backslash too: E'' only if it escapes more. */
	esc = strcmp(field(s, shown, 12 * n + 1), bs) != 0;
	fputs(esc ? "E'" : "'", f);
	for (q = esc ? shown : s; *q != '\0'; q++) {
		if (*q == '\'')
			putc('\'', f);
		putc(*q, f);
	}
	putc('\'', f);
	free(bs);
	free(shown);
}

/* The SQL that takes k, for --explain: sql[0], and sql[1] or NULL. */
static void
explain_sql(const struct opts *o, const struct key *k, const char *id,
    char *sql[2])
{
	size_t len;
	FILE *f;
	int i;

	sql[0] = sql[1] = NULL;
	for (i = 0; i < 2; i++) {
		if ((f = open_memstream(&sql[i], &len)) == NULL)
			die_errno(EXIT_OSERR, "open_memstream");
		if (i == 0 && k->sql == NULL) {
			/* Only the id: the same lock, whatever computes it. */
			fprintf(f, "SELECT pg_advisory_lock(%s);", id);
		} else if (i == 0) {
			fputs("SELECT pg_advisory_lock(", f);
			if (k->space == KEY_PAIR)
				fprintf(f, "%" PRId32 ", ", k->a);
			fprintf(f, "%.*s", (int)(strchr(k->sql, '$') - k->sql),
			    k->sql);
			put_literal(f, o->key);
			fprintf(f, "%s);", strchr(k->sql, '$') + 2);
		} else if (key_scheme_is_default(o->how.scheme)) {
			fputs("SELECT pg_advisory_lock(('x' || left(encode("
			    "sha256(convert_to(", f);
			put_literal(f, o->key);
			fputs(", 'UTF8')), 'hex'), 16))::bit(64)::bigint);", f);
		}
		if (fclose(f) == EOF)
			die_errno(EXIT_OSERR, "open_memstream");
	}
	if (*sql[1] == '\0') {
		free(sql[1]);
		sql[1] = NULL;
	}
}

int
explain(const struct opts *o)
{
	static const char *const scopes[] = { ("auto: held by the session "
	    "on a connection proven direct, else by a transaction left open"),
	    "session: held by the session",
	    "transaction: held by a transaction left open" };
	struct key k;
	char id[48], scheme[512], *sql[2], *shown;
	const char *name = key_how_name(&o->how);
	size_t len;
	const char *space;
	uint32_t classid, objid;
	int objsubid, i;

	resolve_key_or_err(o, o->key, &k);
	key_format(&k, id, sizeof(id));
	key_locktag(&k, &classid, &objid, &objsubid);
	space = k.space == KEY_BIGINT ? "bigint" : "int4 pair";
	explain_sql(o, &k, id, sql);
	(void)key_how_describe(&o->how, scheme, sizeof(scheme));
	if (o->json) {
		printf("{\"key\": ");
		json_str(o->key);
		printf(", \"scheme\": \"%s\", ", name);
		if (strcmp(name, "namespace") == 0)
			printf("\"namespace\": %" PRId32 ", ", o->how.ns);
		printf("\"space\": \"%s\", \"scope\": \"%s\", \"id\": \"%s\", "
		    "\"server_computed\": %s, \"classid\": %lu, \"objid\": %lu, "
		    "\"objsubid\": %d, \"sql\": [", space, scope_names[o->scope],
		    id, k.sql != NULL ? "true" : "false",
		    (unsigned long)classid, (unsigned long)objid, objsubid);
		for (i = 0; i < 2 && sql[i] != NULL; i++) {
			printf(i > 0 ? ", " : "");
			json_str(sql[i]);
		}
		printf("]}\n");
	} else {
		len = 4 * strlen(o->key) + 1;	/* \xHH a byte at most */
		if ((shown = malloc(len)) == NULL)
			die_errno(EXIT_OSERR, "malloc");
		printf("key\t%s\nscheme\t%s\nspace\t%s\nscope\t%s\n",
		    field(o->key, shown, len), scheme, space, scopes[o->scope]);
		free(shown);
		printf("id\t%s%s\n", id, k.sql == NULL ? "" : " (computed by "
		    "the server; this value assumes a little-endian server "
		    "and a UTF8 database)");
		printf("pg_locks\tlocktype=advisory classid=%lu objid=%lu "
		    "objsubid=%d\n", (unsigned long)classid,
		    (unsigned long)objid, objsubid);
		for (i = 0; i < 2 && sql[i] != NULL; i++)
			printf("sql\t%s\n", sql[i]);
	}
	free(sql[0]);
	free(sql[1]);
	flush_stdout_or_err();
	return 0;
}

/* The locks on k (all locks when NULL), from lock_status(); dies on error. */
static int
locks_or_err(const char *what, PGconn *c, const struct key *k,
    struct lock_row **rows)
{
	struct err why;
	int n;

	if ((n = lock_status(c, k, rows, &why)) == -1)
		die(EXIT_UNAVAILABLE, "%s: %s", what, why.msg);
	return n;
}

/*
 * The KEY a lock is for: the one asked about, else what a pglock's fallback
 * application_name says ("pglock: KEY"), unless the server may have cut it (63
 * bytes) or changed it ('?' for a byte not printable ASCII): NULL, unknown.
 */
static const char *
row_key(const struct lock_row *r, const char *asked)
{
	if (asked != NULL)
		return asked;
	if (strncmp(r->app, "pglock: ", 8) != 0 || strlen(r->app) >= 63 ||
	    strchr(r->app, '?') != NULL || r->app[8] == '\0')
		return NULL;
	return r->app + 8;
}

/*
 * One lock for --status, to f as a line or (--json) an object after sep; key
 * is what row_key() says of it.
 */
static void
print_lock(FILE *f, const struct opts *o, const struct lock_row *r,
    const char *key, const char *sep)
{
	const char *mode = r->shared ? "shared" : "exclusive";
	const char *state = r->held ? "held" : "waiting";
	const char *scope = r->xact < 0 ? "?" : r->xact ? "transaction" :
	    "session";
	char user[256], app[256], *shown;
	size_t len = key != NULL ? 4 * strlen(key) + 1 : 2;

	if (!o->json) {
		if ((shown = malloc(len)) == NULL)
			die_errno(EXIT_OSERR, "malloc");
		fprintf(f, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r->id,
		    mode, state, r->pid, field(r->user, user, sizeof(user)),
		    r->client, field(r->app, app, sizeof(app)), r->since,
		    scope, key != NULL ? field(key, shown, len) : "?");
		free(shown);
		return;
	}
	fprintf(f, "%s{\"id\": \"%s\", \"key\": ", sep, r->id);
	if (key != NULL)
		json_put(f, key);
	else
		fprintf(f, "null");
	fprintf(f, ", \"mode\": \"%s\", \"state\": \"%s\", \"pid\": %d, "
	    "\"user\": ", mode, state, r->pid);
	json_put(f, r->user);
	fprintf(f, ", \"client\": ");
	if (r->hidden)
		fprintf(f, "null");		/* unknown, not "local" */
	else
		json_put(f, r->client);
	fprintf(f, ", \"application_name\": ");
	json_put(f, r->app);
	if (r->hidden)
		fprintf(f, ", \"since\": null, \"seconds\": null, \"scope\": "
		    "null}");
	else
		fprintf(f, ", \"since\": \"%s\", \"seconds\": %ld, \"scope\": "
		    "\"%s\"}", r->since, r->seconds, scope);
}

/* Did --status print a row the server hid from this role? */
static int hidden;

/*
 * Print n rows to f (they are for key, NULL: each says), freeing them; is any
 * held, but the lock whose id is queue (--slots' waiters, or NULL)?
 */
static int
print_rows(FILE *f, const struct opts *o, struct lock_row *rows, int n,
    const char *key, const char *queue, int *printed)
{
	int i, held = 0;

	for (i = 0; i < n; i++, (*printed)++) {
		print_lock(f, o, &rows[i], row_key(&rows[i], key),
		    *printed > 0 ? ",\n  " : "\n  ");
		if (queue == NULL || strcmp(rows[i].id, queue) != 0)
			held |= rows[i].held;
		hidden |= rows[i].hidden;
	}
	free(rows);
	return held;
}

/*
 * Print the locks of KEY text (k), and of its slots whatever N its holders
 * were given (--slots); all locks when text is NULL. Is KEY held?
 */
static int
print_locks(FILE *f, const struct opts *o, PGconn *c, const char *text,
    const struct key *k, int *printed)
{
	struct lock_row *rows;
	struct key queue;
	struct err why;
	char id[48];
	int n, held;

	n = locks_or_err("--status", c, k, &rows);
	held = print_rows(f, o, rows, n, text, NULL, printed);
	if (k == NULL)
		return held;
	if ((n = slots_status(c, k, &rows, &why)) == -1)
		die(EXIT_UNAVAILABLE, "--status: %s", why.msg);
	slots_key(k, 0, &queue);
	key_format(&queue, id, sizeof(id));
	return print_rows(f, o, rows, n, text, id, printed) | held;
}

/* Open a record's object: "at" (null for no finite time), then "host". */
static void
put_at(FILE *f, const char *at)
{
	if (*at != '\0')
		fprintf(f, "{\"at\": \"%s\", \"host\": ", at);
	else
		fprintf(f, "{\"at\": null, \"host\": ");
}

/* A number, or null: JSON has no NaN or Infinity (a table may hold them). */
static void
put_number(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.3f", v);
	else
		fprintf(f, "null");
}

/* The server's now: a dead-man check that host clocks cannot fool. */
static int
runs_recent(const struct opts *o, const struct runs_row *r)
{
	return r->has_ok && r->ok_ms >= r->now_ms - (double)o->ok_within_ms;
}

/*
 * KEY's runs, after its locks, to f: a line for its last success, one for its
 * last failure (--json: a "runs" object; "hidden" when this role may not read
 * them); did it succeed within --ok-within?
 */
static int
print_runs(FILE *f, const struct opts *o, PGconn *c, const char *key, int n)
{
	struct runs_row r;
	struct err why;
	char k[1024], host[512], *name = record_key(o, key);

	/* A name not UTF-8 is never recorded (pglock refuses it): none. */
	memset(&r, 0, sizeof(r));
	if (key_utf8_ok(name, strlen(name)) &&
	    runs_read(c, o->runs_sql, name, &r, &why) == -1)
		die(EXIT_UNAVAILABLE, "--status: %s", why.msg);
	/* Another role's table this one may not read: no record shown. */
	if (r.denied && o->ok_within_ms >= 0)
		die(EXIT_UNAVAILABLE, "--status: %s", why.msg);
	free(name);
	if (r.denied && n == 0 && !o->quiet)
		say("--status: this role may not read the record of runs (%s): "
		    "none is shown", why.msg);
	if (!o->json) {
		if (r.has_ok)
			fprintf(f, "%s\tlast_ok\t%s\t%s\t%.3f\n", field(key, k,
			    sizeof(k)), r.ok_at, field(r.ok_host, host,
			    sizeof(host)), r.ok_seconds);
		if (r.has_failed)
			fprintf(f, "%s\tlast_failed\t%s\t%s\t%d\n", field(key,
			    k, sizeof(k)), r.failed_at, field(r.failed_host,
			    host, sizeof(host)), r.failed_status);
		return runs_recent(o, &r);
	}
	fprintf(f, "%s{\"key\": ", n > 0 ? ",\n  " : "\n  ");
	json_put(f, key);
	/* Hidden is not never: no last_ok, rather than a null. */
	if (r.denied) {
		fprintf(f, ", \"hidden\": true}");
		return 0;
	}
	fprintf(f, ", \"last_ok\": ");
	if (r.has_ok) {
		put_at(f, r.ok_at);
		json_put(f, r.ok_host);
		fprintf(f, ", \"seconds\": ");
		put_number(f, r.ok_seconds);
		fprintf(f, "}");
	} else {
		fprintf(f, "null");
	}
	fprintf(f, ", \"last_failed\": ");
	if (r.has_failed) {
		put_at(f, r.failed_at);
		json_put(f, r.failed_host);
		fprintf(f, ", \"status\": %d}}", r.failed_status);
	} else {
		fprintf(f, "null}");
	}
	return runs_recent(o, &r);
}
/* ms as a person reads a span: 2d3h, 1h, 5m12s, 42s (rounded down). */
static const char *
span(double ms, char *buf, size_t len)
{
	long long t = ms > 0 ? (long long)(ms / 1000) : 0;

	static const struct {
		long long s;
		char unit;
	} units[] = { { 86400, 'd' }, { 3600, 'h' }, { 60, 'm' }, { 1, 's' } };
	size_t i = 0, n;

	while (i < 3 && t < units[i].s)
		i++;
	n = (size_t)snprintf(buf, len, "%lld%c", t / units[i].s, units[i].unit);
	/* The next unit too, unless it is 0: 1h, 3h12m. */
	if (i < 3 && t % units[i].s / units[i + 1].s > 0 && n < len)
		snprintf(buf + n, len - n, "%lld%c", t % units[i].s /
		    units[i + 1].s, units[i + 1].unit);
	return buf;
}

/*
 * --status --ok-within D KEY, the dead-man check: a recent success is one
 * line on stdout (when, where, how long ago); none, one on stderr saying so.
 * Nothing with -q: the exit status, 0 or 1, is the answer.
 */
static int
ok_within(const struct opts *o, PGconn *c)
{
	struct runs_row r;
	struct err why;
	const char *key = o->keys[0];
	char host[512], shown[1024], ago[32], within[32];
	char *name = record_key(o, key);

	memset(&r, 0, sizeof(r));
	if (key_utf8_ok(name, strlen(name)) &&
	    runs_read(c, o->runs_sql, name, &r, &why) == -1)
		die(EXIT_UNAVAILABLE, "--status: %s", why.msg);
	free(name);
	if (r.denied)
		die(EXIT_UNAVAILABLE, "--status: %s", why.msg);
	(void)span(r.now_ms - r.ok_ms, ago, sizeof(ago));
	(void)span((double)o->ok_within_ms, within, sizeof(within));
	if (runs_recent(o, &r)) {
		if (!o->quiet)
			printf("%s: last succeeded at %s on %s, %s ago (within "
			    "%s)\n", field(key, shown, sizeof(shown)), r.ok_at,
			    field(r.ok_host, host, sizeof(host)), ago, within);
		flush_stdout_or_err();
		return 0;
	}
	if (o->quiet)
		return 1;
	if (!r.has_ok)
		say("%s: never succeeded (--ok-within %s)", key, within);
	else
		say("%s: last succeeded at %s on %s, %s ago: longer ago than "
		    "%s", key, r.ok_at, r.ok_host, ago, within);
	return 1;
}

/*
 * A header, a line a lock (--json: an object, its array "locks"), runs: all
 * built first, then written at once, so that an error midway prints nothing.
 */
int
show_status(const struct opts *o, PGconn *c)
{
	struct key k;
	char *doc = NULL;
	size_t len = 0;
	FILE *f;
	int i, all_held = 1, printed = 0, ok = 0;

	if (o->ok_within_ms >= 0 && !o->json)
		return ok_within(o, c);
	if ((f = open_memstream(&doc, &len)) == NULL)
		die_errno(EXIT_OSERR, "open_memstream");
	if (o->json)
		fprintf(f, "{\"locks\": [");
	else
		fprintf(f, "id\tmode\tstate\tpid\tuser\tclient\tapplication_name"
		    "\tsince\tscope\tkey\n");
	if (o->keys[0] == NULL)
		(void)print_locks(f, o, c, NULL, NULL, &printed);
	for (i = 0; o->keys[i] != NULL; i++) {
		resolve_key_or_err(o, o->keys[i], &k);
		all_held &= print_locks(f, o, c, o->keys[i], &k, &printed);
	}
	if (o->json)
		fprintf(f, "%s]%s", printed > 0 ? "\n" : "", o->keys[0] !=
		    NULL ? ", \"runs\": [" : "}\n");
	for (i = 0; o->keys[i] != NULL; i++)
		ok = print_runs(f, o, c, o->keys[i], i);
	if (o->json && o->keys[0] != NULL)
		fprintf(f, "\n]}\n");
	if (fclose(f) == EOF)
		die_errno(EXIT_OSERR, "open_memstream");
	(void)fwrite(doc, 1, len, stdout);
	free(doc);
	flush_stdout_or_err();
	if (hidden && !o->quiet)
		say("--status: the server hides some sessions' client, start "
		    "and scope from this role (shown as ?%s): grant it "
		    "pg_read_all_stats to see them", o->json ? ", null" : "");
	if (o->ok_within_ms >= 0)
		return ok ? 0 : 1;
	return all_held ? 0 : 1;
}

/* One line a session ended: pid, user, client, application_name, since. */
int
break_holders(const struct opts *o, PGconn *c)
{
	const char *sql = PQserverVersion(c) >= 140000 ?
	    "SELECT pg_catalog.pg_terminate_backend($1::int, 5000)" :
	    "SELECT pg_catalog.pg_terminate_backend($1::int)";
	char pid[16], user[256], app[256];
	struct err why;
	const char *params[2] = { pid, NULL };
	struct lock_row *rows;
	struct key k = o->lock.key;
	PGresult *res;
	int i, j, n, held = 0, status = 0;

	/* --slots N: each of KEY's slots, 1 to N. */
	for (j = o->lock.slots > 0 ? 1 : 0; j <= o->lock.slots; j++) {
		if (o->lock.slots > 0)
			slots_key(&o->lock.key, j, &k);
		n = locks_or_err("--break", c, &k, &rows);
		for (i = 0; i < n; i++) {
			if (!rows[i].held)
				continue;
			held++;
			snprintf(pid, sizeof(pid), "%d", rows[i].pid);
			if ((res = conn_exec(c, sql, params, CONN_ANSWER_MS,
			    &why)) == NULL)
				die(EXIT_UNAVAILABLE, "%s: --break: %s",
				    o->label, why.msg);
			conn_result_error(res, &why);
			if (PQresultStatus(res) == PGRES_TUPLES_OK &&
			    strcmp(PQgetvalue(res, 0, 0), "t") == 0) {
				printf("%d\t%s\t%s\t%s\t%s\n", rows[i].pid,
				    field(rows[i].user, user, sizeof(user)),
				    rows[i].client, field(rows[i].app, app,
				    sizeof(app)), rows[i].since);
			} else if (PQresultStatus(res) == PGRES_TUPLES_OK) {
				say("%s: pid %d did not end within 5 s (or had "
				    "ended already)", o->label, rows[i].pid);
				status = EXIT_UNAVAILABLE;
			} else if (conn_is_state(res, "42501")) {
				say("%s: may not end pid %d of user %s: %s",
				    o->label, rows[i].pid, rows[i].user,
				    why.msg);
				status = EXIT_NOPERM;
			} else {
				die(EXIT_UNAVAILABLE, "%s: --break: %s",
				    o->label, why.msg);
			}
			PQclear(res);
		}
		free(rows);
	}
	flush_stdout_or_err();
	if (held == 0 && !o->quiet)
		say("%s: nobody holds the lock", o->label);
	return held == 0 ? 1 : status;
}

int
forget(const struct opts *o, PGconn *c)
{
	struct err why;
	char *name = record_key(o, o->key);
	/* A name not UTF-8 is never recorded (pglock refuses it): none. */
	int rc = key_utf8_ok(name, strlen(name)) ? runs_forget(c, o->runs_sql,
	    name, &why) : 0;

	free(name);
	if (rc == -1)
		die(EXIT_UNAVAILABLE, "%s: --forget: %s", o->label, why.msg);
	if (rc == 0 && !o->quiet)
		say("%s: no record to forget", o->label);
	return rc == 1 ? 0 : 1;
}
