/* SPDX-License-Identifier: ISC */
/*
 * inspect: --explain, --status, --break, and the record's --forget, --pause and
 * --resume: the modes that look at locks (and end holders) rather than take
 * one; their TSV and JSON output.
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

#include "inspect.h"
#include "lib/delay.h"
#include "lib/exits.h"
#include "lib/key.h"
#include "lib/lease.h"
#include "lib/lock.h"
#include "lib/query.h"
#include "lib/runs.h"
#include "lib/said.h"
#include "lib/slots.h"
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
	long long spread;

	resolve_key_or_err(o, o->key, &k);
	spread = runs_spread_ms(&k, o->spread_s) / 1000;
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
		printf("]");
		if (o->spread_s > 0)
			printf(", \"spread_seconds\": %lld", spread);
		printf("}\n");
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
		if (o->spread_s > 0)
			printf("spread\t%llds of --spread %llds: ((id %% s) + s)"
			    " %% s, added to --after\n", spread, o->spread_s);
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

	if ((n = lock_status(c, k, CONN_ANSWER_MS, rows, &why)) == -1)
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
 * held? The lock whose id is queue (--slots' waiters, or NULL) is waited in
 * even when held: its holder waits for a slot, as --metrics counts it.
 */
static int
print_rows(FILE *f, const struct opts *o, struct lock_row *rows, int n,
    const char *key, const char *queue, int *printed)
{
	int i, held = 0;

	for (i = 0; i < n; i++, (*printed)++) {
		if (queue != NULL && strcmp(rows[i].id, queue) == 0)
			rows[i].held = 0;
		print_lock(f, o, &rows[i], row_key(&rows[i], key),
		    *printed > 0 ? ",\n  " : "\n  ");
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

/* n as text in buf, or none when n is -1 (a table that does not count). */
static const char *
count(long n, char *buf, size_t len, const char *none)
{
	if (n < 0)
		return none;
	snprintf(buf, len, "%ld", n);
	return buf;
}

/* s as a JSON string, or null when empty. */
static void
put_text(FILE *f, const char *s)
{
	if (*s != '\0')
		json_put(f, s);
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
 * KEY's record as lines: last_ok, last_failed with the streak (? where the
 * table does not count it), paused (until - when until --resume).
 */
static void
runs_lines(FILE *f, const char *key, const struct runs_row *r)
{
	char k[1024], host[512], num[24], why[4 * RUNS_REASON_MAX + 1];

	(void)field(key, k, sizeof(k));
	if (r->has_ok)
		fprintf(f, "%s\tlast_ok\t%s\t%s\t%.3f\n", k, r->ok_at,
		    field(r->ok_host, host, sizeof(host)), r->ok_seconds);
	if (r->has_failed)
		fprintf(f, "%s\tlast_failed\t%s\t%s\t%d\t%s\n", k,
		    r->failed_at, field(r->failed_host, host, sizeof(host)),
		    r->failed_status, count(r->failures, num, sizeof(num), "?"));
	if (r->paused)
		fprintf(f, "%s\tpaused\t%s\t%s\t%s\t%s\n", k, r->paused_at,
		    field(r->paused_host, host, sizeof(host)),
		    *r->paused_until != '\0' ? r->paused_until : "-",
		    field(r->paused_reason, why, sizeof(why)));
}

/* KEY's record as a "runs" object, after sep ("hidden" when not read). */
static void
runs_object(FILE *f, const char *key, const struct runs_row *r,
    const char *sep)
{
	char num[24];

	fprintf(f, "%s{\"key\": ", sep);
	json_put(f, key);
	/* Hidden is not never: no last_ok, rather than a null. */
	if (r->denied) {
		fprintf(f, ", \"hidden\": true}");
		return;
	}
	fprintf(f, ", \"last_ok\": ");
	if (r->has_ok) {
		put_at(f, r->ok_at);
		json_put(f, r->ok_host);
		fprintf(f, ", \"seconds\": ");
		put_number(f, r->ok_seconds);
		fprintf(f, "}");
	} else {
		fprintf(f, "null");
	}
	fprintf(f, ", \"last_failed\": ");
	if (r->has_failed) {
		put_at(f, r->failed_at);
		json_put(f, r->failed_host);
		fprintf(f, ", \"status\": %d}", r->failed_status);
	} else {
		fprintf(f, "null");
	}
	fprintf(f, ", \"failures\": %s, \"paused\": ", count(r->failures,
	    num, sizeof(num), "null"));
	if (!r->paused) {
		fprintf(f, "null}");
		return;
	}
	/* until null: until --resume; reason null: none given. */
	put_at(f, r->paused_at);
	json_put(f, r->paused_host);
	fprintf(f, ", \"until\": ");
	put_text(f, r->paused_until);
	fprintf(f, ", \"reason\": ");
	put_text(f, r->paused_reason);
	fprintf(f, "}}");
}

/*
 * KEY's runs, after its locks, to f: lines, or (--json) a "runs" object after
 * the n-th; did it succeed within --ok-within, or is it paused (no alarm)?
 */
static int
print_runs(FILE *f, const struct opts *o, PGconn *c, const char *key, int n)
{
	struct runs_row r;
	struct err why;
	char *name = record_key(o, key);

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
	if (o->json)
		runs_object(f, key, &r, n > 0 ? ",\n  " : "\n  ");
	else
		runs_lines(f, key, &r);
	return r.paused || runs_recent(o, &r);
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
	char host[1024], shown[1024], said[6144];
	char ago[32], within[32], *name = record_key(o, key);

	memset(&r, 0, sizeof(r));
	if (key_utf8_ok(name, strlen(name)) &&
	    runs_read(c, o->runs_sql, name, &r, &why) == -1)
		die(EXIT_UNAVAILABLE, "--status: %s", why.msg);
	free(name);
	if (r.denied)
		die(EXIT_UNAVAILABLE, "--status: %s", why.msg);
	(void)span(r.now_ms - r.ok_ms, ago, sizeof(ago));
	(void)span((double)o->ok_within_ms, within, sizeof(within));
	/* A paused job is no alarm: say so, and until when. */
	if (r.paused) {
		if (!o->quiet)
			printf("%s: %s\n", field(key, shown, sizeof(shown)),
			    pause_said(r.paused_until, r.paused_host,
			    r.paused_reason, said, sizeof(said)));
		flush_stdout_or_err();
		return 0;
	}
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

/* ---- --status --metrics: Prometheus' text exposition format ---------- */

/* One KEY of --metrics: its label, record, and its lock's sessions. */
struct metric_key {
	const char *label;	/* KEY as named, or the record's name */
	struct runs_row r;
	int holders, waiters;	/* -1: not counted (KEY not named) */
	int named;		/* named: a last success always (0: never) */
	double last_run;	/* the last run's seconds, in the history */
	int has_last_run;
};

/* The families, in the order printed; sample() knows each by its index. */
static const struct family {
	const char *name, *help;
	int decimals;		/* as printed: timestamps to the microsecond */
} families[] = {
	{ "pglock_last_success_timestamp_seconds", "When the key's job last "
	    "succeeded, by the database server's clock (Unix time).", 6 },
	{ "pglock_last_failure_timestamp_seconds", "When the key's job last "
	    "failed, by the database server's clock (Unix time).", 6 },
	{ "pglock_last_success_duration_seconds", "How long the key's last "
	    "successful run took.", 3 },
	{ "pglock_consecutive_failures", "Runs of the key's job that failed "
	    "since its last success.", 0 },
	{ "pglock_paused", "1 while the key's recorded runs are paused "
	    "(pglock --pause), else 0.", 0 },
	{ "pglock_lock_holders", "Sessions that hold the key's lock.", 0 },
	{ "pglock_lock_waiters", "Sessions that wait for the key's lock.",
	    0 },
	{ "pglock_last_run_duration_seconds", "How long the key's last run "
	    "in its history took, whatever its outcome.", 3 },
};

/* Key m's sample of family i into *v: 1, or 0 when it has none. */
static int
sample(size_t i, const struct metric_key *m, double *v)
{
	const struct runs_row *r = &m->r;
	/* A KEY named always has a last success: 0 if never, for alerts. */
	int named = m->named;
	const double values[] = { r->has_ok ? r->ok_ms / 1000.0 : 0,
	    r->failed_ms / 1000.0, r->ok_seconds, (double)r->failures,
	    r->paused, m->holders, m->waiters, m->last_run };
	const int has[] = { r->has_ok || named, r->has_failed, r->has_ok,
	    r->failures >= 0, 1, m->holders >= 0, m->waiters >= 0,
	    m->has_last_run };

	*v = values[i];
	return has[i];
}

/* A label value as the format escapes it: backslash, quote, newline. */
static void
put_label(FILE *f, const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s == '\\' || *s == '"')
			putc('\\', f);
		if (*s == '\n')
			fputs("\\n", f);
		else
			putc(*s, f);
	}
}

/* Every family's HELP and TYPE, then each key's sample of it. */
static void
put_metrics(FILE *f, const struct metric_key *keys, int n)
{
	size_t i;
	double v;
	int j;

	for (i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", families[i].name,
		    families[i].help, families[i].name);
		for (j = 0; j < n; j++) {
			if (!sample(i, &keys[j], &v))
				continue;
			fprintf(f, "%s{key=\"", families[i].name);
			put_label(f, keys[j].label);
			fputs("\"} ", f);
			if (isnan(v))
				fputs("NaN", f);
			else if (isinf(v))
				fputs(v > 0 ? "+Inf" : "-Inf", f);
			else
				fprintf(f, "%.*f", families[i].decimals, v);
			putc('\n', f);
		}
	}
	/* Which node ran the last success: an info metric, as its label. */
	fputs("# HELP pglock_last_success_info The node (pglock --node) whose "
	    "run was the key's last success.\n# TYPE pglock_last_success_info "
	    "gauge\n", f);
	for (j = 0; j < n; j++) {
		if (!keys[j].r.has_ok)
			continue;
		fputs("pglock_last_success_info{key=\"", f);
		put_label(f, keys[j].label);
		fputs("\",node=\"", f);
		put_label(f, keys[j].r.ok_host);
		fputs("\"} 1\n", f);
	}
}

/* Add n rows to m's holders and waiters, freeing them; queue: as print_rows. */
static void
count_rows(struct metric_key *m, struct lock_row *rows, int n,
    const char *queue)
{
	int i;

	for (i = 0; i < n; i++)
		*(rows[i].held && (queue == NULL || strcmp(rows[i].id,
		    queue) != 0) ? &m->holders : &m->waiters) += 1;
	free(rows);
}

/*
 * Count the sessions that hold and that wait for KEY, and for its slots
 * whatever N they were given (as --status KEY finds them): a session holding
 * the slots' queue waits.
 */
static void
count_sessions(const struct opts *o, PGconn *c, struct metric_key *m)
{
	struct key k, queue;
	struct lock_row *rows;
	struct err why;
	char id[48];
	int n;

	resolve_key_or_err(o, m->label, &k);
	m->holders = m->waiters = 0;
	n = locks_or_err("--status --metrics", c, &k, &rows);
	count_rows(m, rows, n, NULL);
	if ((n = slots_status(c, &k, &rows, &why)) == -1)
		die(EXIT_UNAVAILABLE, "--status --metrics: %s", why.msg);
	slots_key(&k, 0, &queue);
	key_format(&queue, id, sizeof(id));
	count_rows(m, rows, n, id);
}

/* The named KEYs, each once, read: their count. */
static int
named_keys(const struct opts *o, PGconn *c, struct metric_key *keys)
{
	struct err why;
	char *name;
	int i, j, n = 0;

	for (i = 0; o->keys[i] != NULL; i++) {
		for (j = 0; j < n && strcmp(keys[j].label, o->keys[i]) != 0; j++)
			;
		if (j < n)	/* named twice: one series */
			continue;
		keys[n].label = o->keys[i];
		keys[n].named = 1;
		name = record_key(o, o->keys[i]);
		if (runs_read(c, o->runs_sql, name, &keys[n].r, &why) == -1 ||
		    keys[n].r.denied)
			die(EXIT_UNAVAILABLE, "--status --metrics: %s",
			    why.msg);
		free(name);
		count_sessions(o, c, &keys[n++]);
	}
	return n;
}

/*
 * Each key's last run in the history (none where this role may not read it):
 * named keys (named) by their record's name, listed ones by their label.
 */
static void
last_runs(const struct opts *o, PGconn *c, struct metric_key *keys, int n,
    int named)
{
	struct err why;
	char **names, *name;
	const char *want;
	double *seconds;
	int i, j, m, rc;

	rc = runs_last_durations(c, o->history_sql, &names, &seconds, &m, &why);
	if (rc == -1)
		die(EXIT_UNAVAILABLE, "--status --metrics: %s", why.msg);
	for (i = 0; i < n; i++) {
		name = named ? record_key(o, keys[i].label) : NULL;
		want = name != NULL ? name : keys[i].label;
		for (j = 0; want != NULL && j < m; j++)
			if (names[j] != NULL && strcmp(names[j], want) == 0) {
				keys[i].last_run = seconds[j];
				keys[i].has_last_run = 1;
			}
		free(name);
	}
	for (j = 0; j < m; j++)
		free(names[j]);
	free(names);
	free(seconds);
}

/*
 * --status --metrics [KEY ...]: each named KEY's record and lock sessions, or
 * every record in the table; built whole, then written. 0; dies on an error.
 */
static int
show_metrics(const struct opts *o, PGconn *c)
{
	struct metric_key *keys;
	struct runs_row *rows = NULL;
	struct err why;
	char **names = NULL, *doc = NULL;
	size_t len = 0;
	FILE *f;
	int i, n = 0;

	for (i = 0; o->keys[i] != NULL; i++)
		;
	if (i == 0 && runs_list(c, o->runs_sql, &names, &rows, &n, &why) != 0)
		die(EXIT_UNAVAILABLE, "--status --metrics: %s", why.msg);
	if ((keys = calloc((size_t)(i > n ? i : n) + 1, sizeof(*keys))) ==
	    NULL || (f = open_memstream(&doc, &len)) == NULL)
		die_errno(EXIT_OSERR, "--status --metrics");
	if (i > 0)
		n = named_keys(o, c, keys);
	for (i = 0; names != NULL && i < n; i++) {
		keys[i].label = names[i];
		keys[i].r = rows[i];
		keys[i].holders = keys[i].waiters = -1;
	}
	last_runs(o, c, keys, n, names == NULL);
	put_metrics(f, keys, n);
	if (fclose(f) == EOF)
		die_errno(EXIT_OSERR, "open_memstream");
	(void)fwrite(doc, 1, len, stdout);
	flush_stdout_or_err();
	for (i = 0; names != NULL && i < n; i++)
		free(names[i]);
	free(names);
	free(rows);
	free(keys);
	free(doc);
	return 0;
}

/* ---- --status --history: each KEY's runs, newest first --------------- */

/*
 * The last line of a kept output with anything on it (a NUL ends a line
 * too), escaped as a field into buf; "-" for none.
 */
static const char *
last_line(const struct runs_run *run, char *buf, size_t len)
{
	char line[1024];
	size_t end = run->output_len, start, n;

	while (end > 0 && (run->output[end - 1] == '\n' ||
	    run->output[end - 1] == '\0'))
		end--;
	for (start = end; start > 0 && run->output[start - 1] != '\n' &&
	    run->output[start - 1] != '\0'; start--)
		;
	if (run->output == NULL || end == 0)
		return "-";
	n = end - start < sizeof(line) - 1 ? end - start : sizeof(line) - 1;
	memcpy(line, run->output + end - n, n);
	line[n] = '\0';
	return field(line, buf, len);
}

/* A run of key's as a line, or (--json) an object after sep. */
static void
print_run(FILE *f, const struct opts *o, const char *key,
    const struct runs_run *run, const char *sep)
{
	char k[1024], node[1024], out[4096];

	if (!o->json) {
		fprintf(f, "%s\t%s\t%s\t%.3f\t%d\t%s\n", field(key, k,
		    sizeof(k)), run->ended, field(run->node, node,
		    sizeof(node)), run->seconds, run->status, last_line(run,
		    out, sizeof(out)));
		return;
	}
	fprintf(f, "%s{\"started\": ", sep);
	put_text(f, run->started);
	fprintf(f, ", \"ended\": \"%s\", \"node\": ", run->ended);
	json_put(f, run->node);
	fprintf(f, ", \"seconds\": ");
	put_number(f, run->seconds);
	fprintf(f, ", \"status\": %d, \"slot\": ", run->status);
	if (run->slot >= 0)
		fprintf(f, "%lld", run->slot);
	else
		fprintf(f, "null");
	fprintf(f, ", \"output\": ");
	if (run->output != NULL)
		json_putn(f, run->output, run->output_len);
	else
		fprintf(f, "null");
	fprintf(f, "}");
}

/* KEY's runs to f: 1 if it has any. */
static int
print_history(FILE *f, const struct opts *o, PGconn *c, const char *key,
    int n)
{
	char *name = record_key(o, key);
	struct runs_run *runs = NULL;
	struct err why;
	int i, n_runs = 0, rc = 0;

	/* A name not UTF-8 is never recorded (pglock refuses it): none. */
	if (key_utf8_ok(name, strlen(name)))
		rc = runs_history(c, o->history_sql, name, &runs, &n_runs,
		    &why);
	free(name);
	if (rc != 0)
		die(EXIT_UNAVAILABLE, "--status --history: %s", why.msg);
	if (o->json) {
		fprintf(f, "%s{\"key\": ", n > 0 ? ",\n  " : "\n  ");
		json_put(f, key);
		fprintf(f, ", \"runs\": [");
	}
	for (i = 0; i < n_runs; i++)
		print_run(f, o, key, &runs[i], i > 0 ? ",\n    " : "\n    ");
	if (o->json)
		fprintf(f, "%s]}", n_runs > 0 ? "\n  " : "");
	runs_free(runs, n_runs);
	return n_runs > 0;
}

/*
 * --status --history KEY...: a header, then each KEY's runs, newest first,
 * built first, then written at once. 1 when a KEY has none, saying so.
 */
static int
show_history(const struct opts *o, PGconn *c)
{
	char *doc = NULL;
	size_t len = 0;
	FILE *f;
	int i, all = 1;

	if ((f = open_memstream(&doc, &len)) == NULL)
		die_errno(EXIT_OSERR, "open_memstream");
	fprintf(f, o->json ? "{\"history\": [" :
	    "key\tended\tnode\tseconds\tstatus\toutput\n");
	for (i = 0; o->keys[i] != NULL; i++)
		if (!print_history(f, o, c, o->keys[i], i)) {
			all = 0;
			if (!o->quiet)
				say("--status --history: %s: no runs in %s",
				    printable(o->keys[i]), o->history_sql);
		}
	if (o->json)
		fprintf(f, "\n]}\n");
	if (fclose(f) == EOF)
		die_errno(EXIT_OSERR, "open_memstream");
	(void)fwrite(doc, 1, len, stdout);
	free(doc);
	flush_stdout_or_err();
	return all ? 0 : 1;
}

/*
 * A header, a line a lock (--json: an object, its array "locks"), runs: all
 * built first, then written at once, so that an error midway prints nothing.
 */
int
show_status(const struct opts *o, PGconn *c)
{
	struct key k;
	char *doc = NULL, *rdoc = NULL;
	size_t len = 0, rlen = 0;
	FILE *f, *rf;
	int i, all_held = 1, printed = 0, ok = 0;

	if (o->metrics)
		return show_metrics(o, c);
	if (o->history)
		return show_history(o, c);
	if (o->ok_within_ms >= 0 && !o->json)
		return ok_within(o, c);
	if ((f = open_memstream(&doc, &len)) == NULL ||
	    (rf = open_memstream(&rdoc, &rlen)) == NULL)
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
		ok = print_runs(o->json ? f : rf, o, c, o->keys[i], i);
	if (o->json && o->keys[0] != NULL)
		fprintf(f, "\n]}\n");
	/* The records' lines under a header of their own, if any. */
	if (fclose(rf) == EOF)
		die_errno(EXIT_OSERR, "open_memstream");
	if (rlen > 0)
		fprintf(f, "key\trecord\tat\thost\tvalues\n%s", rdoc);
	free(rdoc);
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

/*
 * The lock-delay: an ended holder's command may run on to the end of its
 * lease (lease.h's D, before the server's S), and the lock, freed at once,
 * would let the next waiter's command start beside it. delay_hold() took
 * the lock's companion before the end, which every new holder looks at
 * before its command starts: keep it for the lease of this --check-interval.
 */
static void
keep_or_err(const struct opts *o, PGconn *c, long lease)
{
	struct err why;

	if (o->verbose)
		say("%s: --break keeps the lock-delay %.3gs, the lease of "
		    "--check-interval %.3gs", o->label, (double)lease / 1000.0,
		    (double)o->check_ms / 1000.0);
	if (delay_keep(c, lease, &why) == -1)
		die(EXIT_UNAVAILABLE, "%s: --break: the lock-delay was cut "
		    "short: %s", o->label, why.msg);
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
	long lease = lease_of(o->check_ms).server_ms;
	int i, j, n, held = 0, ended = 0, status = 0;

	/* --slots N: each of KEY's slots, 1 to N. */
	for (j = o->lock.slots > 0 ? 1 : 0; j <= o->lock.slots; j++) {
		if (o->lock.slots > 0)
			slots_key(&o->lock.key, j, &k);
		n = locks_or_err("--break", c, &k, &rows);
		for (i = 0; i < n; i++) {
			if (!rows[i].held)
				continue;
			held++;
			/*
			 * Before the end, which grants the lock at once: the
			 * new holder must find the delay kept.
			 */
			if (delay_hold(c, rows[i].id, lease + CONN_ANSWER_MS,
			    &why) == -1)
				die(EXIT_UNAVAILABLE, "%s: --break: %s",
				    o->label, why.msg);
			snprintf(pid, sizeof(pid), "%d", rows[i].pid);
			if ((res = conn_exec(c, sql, params, CONN_ANSWER_MS,
			    &why)) == NULL)
				die(EXIT_UNAVAILABLE, "%s: --break: %s",
				    o->label, why.msg);
			conn_result_error(res, &why);
			/* Not ended within 5 s, it may end later: delayed too. */
			ended += PQresultStatus(res) == PGRES_TUPLES_OK;
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
	if (ended > 0)
		keep_or_err(o, c, lease);
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

/*
 * --pause of a KEY with no record, refused: a typo must not pause nothing in
 * silence. Say which recorded keys are near it.
 */
static void
say_unrecorded(const struct opts *o, PGconn *c, const char *name)
{
	char *near[3], buf[256], list[1024] = "";
	struct err why;
	int i, n = runs_near(c, o->runs_sql, name, near, 3, &why);
	size_t len = 0;

	for (i = 0; i < n; i++) {
		if (len < sizeof(list))
			len += (size_t)snprintf(list + len, sizeof(list) - len,
			    "%s%s", i == 0 ? "; did you mean " : " or ",
			    field(near[i], buf, sizeof(buf)));
		free(near[i]);
	}
	if (!o->quiet)
		say("%s: no record to pause, nothing paused (a typo?)%s%s "
		    "(--pause --new pauses a job before its first run)",
		    o->label, list, n > 0 ? "?" : "");
}

int
pause_key(const struct opts *o, PGconn *c)
{
	struct err why;
	char id[48], until[40], *name = record_key(o, o->key);
	struct runs_pause p = { .key = name, .id = id, .for_ms = o->pause_ms,
	    .reason = o->reason != NULL ? o->reason : "",
	    .create = o->pause_new, .node = o->node };
	int rc;

	key_format(&o->lock.key, id, sizeof(id));
	rc = runs_pause(c, o->runs_sql, &p, until, &why);
	if (rc == 1)
		say_unrecorded(o, c, name);
	free(name);
	if (rc == -1)
		die(EXIT_UNAVAILABLE, "%s: --pause: %s", o->label, why.msg);
	if (rc == 1)
		return 1;
	if (!o->quiet)
		say("%s: paused until %s", o->label, *until != '\0' ? until :
		    "--resume");
	return 0;
}

int
resume_key(const struct opts *o, PGconn *c)
{
	struct err why;
	char *name = record_key(o, o->key);
	int rc = runs_resume(c, o->runs_sql, name, &why);

	free(name);
	if (rc == -1)
		die(EXIT_UNAVAILABLE, "%s: --resume: %s", o->label, why.msg);
	if (rc == 0 && !o->quiet)
		say("%s: not paused", o->label);
	return rc == 1 ? 0 : 1;
}
