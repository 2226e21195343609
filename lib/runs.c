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
#include "query.h"
#include "runs.h"
#include "said.h"
#include "table.h"

/*
 * The table as this build creates it. A column added since its first version
 * (failures, paused_*) is read through to_jsonb(r), null where a table an
 * earlier build made lacks it; failures is written only where pg_attribute
 * shows it, and a pause there is refused with the ALTER to run: so one
 * statement serves both. pglock never ALTERs a table: a role that may only
 * read and write it cannot, and the ALTER's lock would queue every run behind
 * the longest transaction that reads it.
 */
#define COLUMNS "(key text PRIMARY KEY, lock_id text NOT NULL, " \
	"ok_at timestamptz, ok_host text, ok_seconds double precision, " \
	"ok_slot bigint, failed_at timestamptz, failed_host text, " \
	"failed_status integer, failures integer, paused_at timestamptz, " \
	"paused_until timestamptz, paused_host text, paused_reason text)"
#define ADDED "ADD COLUMN IF NOT EXISTS failures integer, ADD COLUMN IF " \
	"NOT EXISTS paused_at timestamptz, ADD COLUMN IF NOT EXISTS " \
	"paused_until timestamptz, ADD COLUMN IF NOT EXISTS paused_host text, " \
	"ADD COLUMN IF NOT EXISTS paused_reason text"

/* Has the table that param names column col (one an earlier build lacks)? */
#define HAS(param, col) "EXISTS (SELECT FROM pg_catalog.pg_attribute WHERE" \
	" attrelid = pg_catalog.to_regclass(" param ") AND attname = '" col \
	"' AND NOT attisdropped)"

#define ISO "'YYYY-MM-DD\"T\"HH24:MI:SSTZH:TZM'"

/*
 * A key's runs, newest last (id), one row each, trimmed to --keep-history as
 * each is written; ended is the server's clock, started that less seconds.
 * Its identity needs no grant on a sequence to insert.
 */
#define HISTORY "(key text NOT NULL, id bigint GENERATED ALWAYS AS" \
	" IDENTITY, node text, started timestamptz, ended timestamptz NOT" \
	" NULL, seconds double precision, status integer NOT NULL, slot" \
	" bigint, output bytea, PRIMARY KEY (key, id))"

void
runs_history_sql(const char *runs_sql, char *out, size_t len)
{
	size_t n = strlen(runs_sql);

	/* The last identifier's closing quote: counter_table_sql() adds it. */
	snprintf(out, len, "%.*s_history\"", (int)(n > 0 ? n - 1 : 0),
	    runs_sql);
}

/* s with each ' doubled, for a literal in a DO block, into buf. */
static const char *
literal(const char *s, char *buf, size_t len)
{
	size_t n = 0;

	for (; *s != '\0' && n + 2 < len; s++) {
		if (*s == '\'')
			buf[n++] = '\'';
		buf[n++] = *s;
	}
	buf[n] = '\0';
	return buf;
}

/*
 * A history just made: each role that may write the table of records (its
 * INSERT grantees, PUBLIC too) may write it, so that a fleet's other roles
 * go on recording after the first run of this build made it. A failure
 * (the table another role's, made meanwhile) leaves it as it is: a role
 * without the grant is told what to run when it records.
 */
static void
grants_copy(PGconn *c, const char *table, const char *history,
    const struct budget *b)
{
	char sql[2048], t[700], h[700];
	struct err why;
	PGresult *res;

	snprintf(sql, sizeof(sql), "DO $pglock$DECLARE g record; BEGIN FOR g"
	    " IN SELECT DISTINCT a.grantee FROM pg_catalog.pg_class r,"
	    " pg_catalog.aclexplode(r.relacl) a WHERE r.oid ="
	    " pg_catalog.to_regclass('%s') AND a.privilege_type = 'INSERT'"
	    " LOOP EXECUTE pg_catalog.format('GRANT SELECT, INSERT, DELETE ON"
	    " %%s TO %%s', '%s', CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE"
	    " g.grantee::pg_catalog.regrole::text END); END LOOP; END$pglock$",
	    literal(table, t, sizeof(t)), literal(history, h, sizeof(h)));
	if ((res = conn_exec(c, sql, NULL, budget_ms(b, CONN_ANSWER_MS),
	    &why)) != NULL)
		PQclear(res);
}

int
runs_table(PGconn *c, const char *table, const char *history,
    const struct budget *b, struct err *err)
{
	/* conn_exec() counts its parameters to the first NULL. */
	const char *params[3] = { table, history != NULL ? history : "",
	    NULL };
	PGresult *res;
	int there[3] = { 0, 0, 1 };

	if ((res = conn_exec(c, "SELECT pg_catalog.to_regclass($1) IS NOT "
	    "NULL, $2 = '' OR pg_catalog.to_regclass(nullif($2, '')) IS NOT "
	    "NULL, " TABLE_MAY_CREATE("nullif($2, '')"), params,
	    budget_ms(b, CONN_ANSWER_MS), err)) == NULL)
		return -1;
	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
	    PQnfields(res) == 3) {
		there[0] = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
		there[1] = strcmp(PQgetvalue(res, 0, 1), "t") == 0;
		there[2] = strcmp(PQgetvalue(res, 0, 2), "t") == 0;
	}
	PQclear(res);
	if (!there[0] && table_create(c, table, COLUMNS,
	    "SELECT, INSERT, UPDATE, DELETE", b, err) == -1)
		return -1;
	if (there[1] || history == NULL)
		return 0;
	/* Not tried where it would fail: each run would pay its trips. */
	if (!there[2]) {
		runs_history_denied(c, history, err);
		return 1;
	}
	if (table_create(c, history, HISTORY, "SELECT, INSERT, DELETE", b,
	    err) == 0) {
		grants_copy(c, table, history, b);
		return 0;
	}
	/* Runs are recorded without a history this role may not make. */
	return PQstatus(c) == CONNECTION_OK &&
	    PQtransactionStatus(c) == PQTRANS_IDLE ? 1 : -1;
}

void
runs_history_denied(PGconn *c, const char *history, struct err *err)
{
	table_denied(c, history, HISTORY, "SELECT, INSERT, DELETE", err);
}

void
runs_grant_hint(PGconn *c, const PGresult *res, const char *table,
    const char *history, struct err *err)
{
	char *role;

	if (!conn_is_state(res, "42501"))
		return;
	role = PQescapeIdentifier(c, PQuser(c), strlen(PQuser(c)));
	err_add(err, "; a role that records runs needs: GRANT SELECT, INSERT, "
	    "UPDATE, DELETE ON %s TO %s", table, role != NULL ? role :
	    PQuser(c));
	if (history != NULL)
		err_add(err, "; GRANT SELECT, INSERT, DELETE ON %s TO %s (or "
		    "--keep-history 0)", history, role != NULL ? role :
		    PQuser(c));
	PQfreemem(role);
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
	if (row->ok_slot >= 0 && row->ok_slot < 1LL << 62 && period_ms > 0 &&
	    row->slot >= 0)
		return row->ok_slot == (long long)(row->now_ms /
		    (double)period_ms);
	return row->ok_slot == (row->slot != 0 ? row->slot :
	    runs_slot(row->now_ms, period_ms));
}

/* A time as RFC 3339 in the session's zone, to the second. */
#define AS_ISO(t) "pg_catalog.to_char(" t ", " ISO ")"

/*
 * A time as RFC 3339 in zone n0.dz, to the second (that of --tz, so that a
 * run's every time is in one zone); NULL for infinity or NULL.
 */
#define IN_ZONE(t) "CASE WHEN pg_catalog.isfinite(" t ") THEN" \
	" pg_catalog.to_char(" t " AT TIME ZONE n0.dz," \
	" 'YYYY-MM-DD\"T\"HH24:MI:SS') || (SELECT CASE WHEN f.o < 0 THEN '-'" \
	" ELSE '+' END || pg_catalog.to_char(pg_catalog.make_interval(secs =>" \
	" abs(f.o)), 'HH24:MI') FROM (SELECT extract(epoch FROM (" t " AT" \
	" TIME ZONE n0.dz) - (" t " AT TIME ZONE 'UTC'))::float8 AS o) f) END"

/*
 * A record's columns (with the server's clock first) over r, a row of the table
 * or none, and x.j, to_jsonb(r); param names the table, T formats a time.
 * RECORD_FIELDS of them.
 */
#define RECORD(param, T) "extract(epoch FROM" \
	" pg_catalog.statement_timestamp()) * 1000, r.ok_at IS NOT NULL, " \
	T("r.ok_at") ", extract(epoch FROM r.ok_at)" \
	" * 1000, r.ok_host, r.ok_seconds, coalesce(r.ok_slot, -1)," \
	" r.failed_at IS NOT NULL, " T("r.failed_at") "," \
	" extract(epoch FROM r.failed_at) * 1000, r.failed_host," \
	" r.failed_status, CASE WHEN " HAS(param, "failures") " THEN" \
	" coalesce((x.j ->> 'failures')::int, 0) ELSE -1 END, p.at IS NOT" \
	" NULL AND (p.until IS NULL OR p.until >" \
	" pg_catalog.statement_timestamp()), " T("p.at") ", " T("p.until") \
	", x.j ->> 'paused_host'," \
	" x.j ->> 'paused_reason'"
#define RECORD_FIELDS 18
#define JSONB ", LATERAL (SELECT pg_catalog.to_jsonb(r) AS j) x, LATERAL" \
	" (SELECT (x.j ->> 'paused_at')::timestamptz AS at," \
	" (x.j ->> 'paused_until')::timestamptz AS until) p"

/*
 * SQL text s in lower case, as the server matches zone names and
 * abbreviations: ASCII's (a Turkish locale's lower('I') is not 'i').
 */
#define LOWER(s) "pg_catalog.lower(" s " COLLATE \"C\")"

/*
 * Is zone (SQL text; '': none) a name AT TIME ZONE reads as an abbreviation,
 * a fixed offset? It looks among the abbreviations first (SET TimeZone does
 * not look there at all): CEST is +02:00 all year, IST is Israel's, and CET,
 * a zone name too, loses its zone's clock changes. The view lists what it
 * looks among (since PostgreSQL 18, the session zone's own too); a new
 * session reads it in some 3 ms, so not for an Area/Location name: no
 * abbreviation has a '/'. UTC and its other names (GMT, UT, Z, Zulu: no
 * clock changes) mean the same either way.
 */
#define ABBREV(zone) "CASE WHEN " LOWER(zone) " IN ('', 'utc', 'gmt', 'ut'," \
	" 'z', 'zulu') OR" \
	" pg_catalog.strpos(" zone ", '/') > 0 THEN false ELSE EXISTS (SELECT" \
	" FROM pg_catalog.pg_timezone_abbrevs v WHERE " LOWER("v.abbrev") " = " \
	LOWER(zone) ") END"

/*
 * The instant of the slot's wall-clock time wall (ms, as if UTC) in zone
 * n0.z: of a time the clocks show twice (they went back), the first (a
 * start: min) or, of those the clock reaches from below, the last (an end:
 * max), so a repeated hour is one slot that spans both and the slot before
 * it ends where it begins; of a time they skip, the server's reading. The
 * zone's offset a day either side is a candidate's: no zone moves twice in
 * 50 hours.
 */
static void
instant_sql(char *buf, size_t len, const char *agg, const char *wall)
{
	const char *end = strcmp(agg, "max") == 0 ? " AND (v.x - interval"
	    " '1 millisecond') AT TIME ZONE n0.z < a.w" : "";

	snprintf(buf, len, "(SELECT coalesce(%s(v.x) FILTER (WHERE v.x AT"
	    " TIME ZONE n0.z = a.w%s), min(b.c)) FROM (SELECT"
	    " pg_catalog.to_timestamp((%s) / 1000.0) AT TIME ZONE 'UTC' AS w) a"
	    " CROSS JOIN LATERAL (SELECT a.w AT TIME ZONE n0.z AS c) b"
	    " CROSS JOIN LATERAL (VALUES (b.c), (a.w AT TIME ZONE 'UTC' -"
	    " ((b.c - interval '25 hours') AT TIME ZONE n0.z -"
	    " (b.c - interval '25 hours') AT TIME ZONE 'UTC')),"
	    " (a.w AT TIME ZONE 'UTC' - ((b.c + interval '25 hours') AT TIME"
	    " ZONE n0.z - (b.c + interval '25 hours') AT TIME ZONE 'UTC')))"
	    " v(x))", agg, end, wall);
}

/*
 * The instant t as RFC 3339 in zone n0.dz: its offset, ms when not whole;
 * NULL for infinity, which a hand-edited record may hold.
 */
static void
rfc3339_sql(char *buf, size_t len, const char *t)
{
	snprintf(buf, len, "CASE WHEN pg_catalog.isfinite(%s) THEN"
	    " pg_catalog.to_char(%s AT TIME ZONE n0.dz,"
	    " 'YYYY-MM-DD\"T\"HH24:MI:SS') || CASE WHEN pg_catalog.date_part("
	    "'milliseconds', %s)::numeric %% 1000 >= 1 THEN pg_catalog.to_char("
	    "%s AT TIME ZONE n0.dz, '.MS') ELSE '' END || (SELECT CASE WHEN"
	    " f.o < 0 THEN '-' ELSE '+' END || pg_catalog.to_char("
	    "pg_catalog.make_interval(secs => abs(f.o)), 'HH24:MI') FROM"
	    " (SELECT extract(epoch FROM (%s AT TIME ZONE n0.dz) - (%s AT TIME"
	    " ZONE 'UTC'))::float8 AS o) f) END", t, t, t, t, t, t);
}

/*
 * The record's columns, then the slot's: the wall clock's time (ms, as if
 * UTC: the epoch's without a zone) is cut into period_ms from ZONE's local
 * midnight (1w: from Monday's, 4 days after the epoch's Thursday); the slot
 * is due once after_ms of its wall clock have passed; its identity for a
 * zone is a digest of zone (in lower case: the server finds Europe/Berlin as
 * europe/berlin, one zone, one slot), length and wall-clock start. Last,
 * whether ZONE is one AT TIME ZONE reads as an abbreviation (see ABBREV).
 */
static void
read_sql(char *sql, size_t len, const char *table)
{
	char t[7][1024];

	rfc3339_sql(t[0], sizeof(t[0]), "r.ok_at");
	rfc3339_sql(t[1], sizeof(t[1]), "n3.s");
	rfc3339_sql(t[2], sizeof(t[2]), "n3.e");
	rfc3339_sql(t[3], sizeof(t[3]), "n3.d");
	instant_sql(t[4], sizeof(t[4]), "min", "n2.ls");
	instant_sql(t[5], sizeof(t[5]), "max", "n2.ls + n0.p");
	instant_sql(t[6], sizeof(t[6]), "min", "n2.ls + n0.a");
	snprintf(sql, len, "SELECT " RECORD("$5", IN_ZONE) ","
	    " %s, n2.ls, ('x' || left(pg_catalog.encode(pg_catalog.sha256("
	    "pg_catalog.convert_to(n0.tz || ' ' || n0.p || ' ' || n2.ls,"
	    " 'UTF8')), 'hex'), 16))::bit(64)::bigint, %s, %s, n2.due, %s,"
	    " n0.ab, CASE WHEN pg_catalog.to_regclass(nullif($6::text, ''))"
	    " IS NOT NULL THEN 't' WHEN " TABLE_MAY_CREATE("nullif($6::text,"
	    " '')") " THEN 'f' ELSE 'n' END"
	    " FROM (SELECT pg_catalog.statement_timestamp() AS t,"
	    " nullif($2::bigint, 0) AS p, " LOWER("nullif($3::text, '')")
	    " AS tz,"
	    " coalesce(nullif($3::text, ''), 'UTC') AS z, $4::bigint AS a,"
	    " coalesce(nullif($3::text, ''), pg_catalog.current_setting("
	    "'TimeZone')) AS dz,"
	    " " ABBREV("$3::text") " AS ab) n0"
	    " CROSS JOIN LATERAL (SELECT extract(epoch FROM n0.t AT TIME ZONE"
	    " n0.z)::numeric * 1000 AS wall, CASE WHEN n0.tz IS NOT NULL AND"
	    " n0.p = 604800000 THEN 345600000 ELSE 0 END AS sh) n1"
	    " CROSS JOIN LATERAL (SELECT (floor((n1.wall - n1.sh) / n0.p) *"
	    " n0.p + n1.sh)::bigint AS ls) l"
	    " CROSS JOIN LATERAL (SELECT l.ls, n1.wall >= l.ls + n0.a AS due) n2"
	    " CROSS JOIN LATERAL (SELECT %s AS s, %s AS e, (SELECT %s) AS d) n3"
	    " LEFT JOIN %s r ON r.key = $1" JSONB, t[0], t[1], t[2], t[3], t[4],
	    t[5], t[6], table);
}

/* RECORD()'s, then the slot's 7, ABBREV()'s, and the history's. */
#define READ_COLUMNS (RECORD_FIELDS + 9)
#define ABBREV_COLUMN (RECORD_FIELDS + 7)
#define HISTORY_COLUMN (RECORD_FIELDS + 8)

/* The slot's columns of runs_read_when()'s answer, from column S, into row. */
#define S RECORD_FIELDS
static void
read_slot(const PGresult *res, const struct runs_when *w,
    struct runs_row *row)
{
	long long digest;

	snprintf(row->last_ok, sizeof(row->last_ok), "%s",
	    PQgetvalue(res, 0, S + 0));
	if (w == NULL || w->period_ms <= 0)
		return;
	if (w->zone != NULL) {
		/* Negative, below -1: no epoch slot's number nor "none". */
		digest = strtoll(PQgetvalue(res, 0, S + 2), NULL, 10);
		row->slot = -((1LL << 62) | (digest & ((1LL << 62) - 1)));
	} else {
		row->slot = runs_slot(strtod(PQgetvalue(res, 0, S + 1), NULL),
		    w->period_ms);
	}
	snprintf(row->slot_start, sizeof(row->slot_start), "%s",
	    PQgetvalue(res, 0, S + 3));
	snprintf(row->slot_end, sizeof(row->slot_end), "%s",
	    PQgetvalue(res, 0, S + 4));
	row->due = *PQgetvalue(res, 0, S + 5) == 't';
	snprintf(row->due_at, sizeof(row->due_at), "%s",
	    PQgetvalue(res, 0, S + 6));
}


/*
 * Did res (runs_read_when()'s answer) find w's zone an abbreviation? 1 with
 * zone_bad set and the reason in err; else 0.
 */
static int
zone_abbrev(const PGresult *res, const struct runs_when *w,
    struct runs_row *row, struct err *err)
{
	if (w == NULL || w->zone == NULL ||
	    *PQgetvalue(res, 0, ABBREV_COLUMN) != 't')
		return 0;
	row->zone_bad = 1;
	err_set(err, "the server reads '%s' as an abbreviation (a fixed "
	    "offset), not as a time zone name (as Europe/Berlin)", w->zone);
	return 1;
}

/* dst (a char array) gets value v, cut to fit. */
#define COPY(dst, v) snprintf((dst), sizeof(dst), "%s", (v))

/* Row i of res, RECORD()'s columns from column b, into *row. */
static void
record_get(const PGresult *res, int i, int b, struct runs_row *row)
{
	row->now_ms = strtod(PQgetvalue(res, i, b), NULL);
	if ((row->has_ok = *PQgetvalue(res, i, b + 1) == 't')) {
		COPY(row->ok_at, PQgetvalue(res, i, b + 2));
		row->ok_ms = strtod(PQgetvalue(res, i, b + 3), NULL);
		COPY(row->ok_host, PQgetvalue(res, i, b + 4));
		row->ok_seconds = strtod(PQgetvalue(res, i, b + 5), NULL);
		row->ok_slot = strtoll(PQgetvalue(res, i, b + 6), NULL, 10);
	}
	if ((row->has_failed = *PQgetvalue(res, i, b + 7) == 't')) {
		COPY(row->failed_at, PQgetvalue(res, i, b + 8));
		row->failed_ms = strtod(PQgetvalue(res, i, b + 9), NULL);
		COPY(row->failed_host, PQgetvalue(res, i, b + 10));
		row->failed_status = (int)strtol(PQgetvalue(res, i, b + 11),
		    NULL, 10);
	}
	row->failures = strtol(PQgetvalue(res, i, b + 12), NULL, 10);
	if ((row->paused = *PQgetvalue(res, i, b + 13) == 't')) {
		COPY(row->paused_at, PQgetvalue(res, i, b + 14));
		COPY(row->paused_until, PQgetvalue(res, i, b + 15));
		COPY(row->paused_host, PQgetvalue(res, i, b + 16));
		COPY(row->paused_reason, PQgetvalue(res, i, b + 17));
	}
}
#undef S

int
runs_read(PGconn *c, const char *table, const char *key,
    struct runs_row *row, struct err *err)
{
	return runs_read_when(c, table, NULL, key, NULL, CONN_ANSWER_MS, row,
	    err);
}

/* runs_read_when()'s statement and its parameters. */
struct read_query {
	char sql[12288];
	char num[2][32];
	const char *params[7];
};

static void
read_query(struct read_query *q, const char *table, const char *history,
    const char *key, const struct runs_when *w)
{
	q->params[0] = key;
	q->params[1] = q->num[0];
	q->params[2] = w != NULL && w->zone != NULL ? w->zone : "";
	q->params[3] = q->num[1];
	q->params[4] = table;
	q->params[5] = history != NULL ? history : "";	/* "": none */
	q->params[6] = NULL;
	snprintf(q->num[0], sizeof(q->num[0]), "%lld", w != NULL ?
	    w->period_ms : 0);
	snprintf(q->num[1], sizeof(q->num[1]), "%lld", w != NULL ?
	    w->after_ms : 0);
	read_sql(q->sql, sizeof(q->sql), table);
}

/* No record yet: what a failed read leaves in *row. */
static void
row_init(struct runs_row *row)
{
	memset(row, 0, sizeof(*row));
	row->ok_slot = -1;
	row->failures = -1;
}

/* The read's answer res (cleared) into *row, as runs_read_when(). */
static int
read_answer(PGresult *res, const struct runs_when *w, struct runs_row *row,
    struct err *err)
{
	int rc = 0;

	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1 ||
	    PQnfields(res) != READ_COLUMNS) {
		/* No table yet, or not this role's to read: no record. */
		row->no_table = conn_is_state(res, "42P01");
		row->denied = conn_is_state(res, "42501");
		row->zone_bad = w != NULL && w->zone != NULL &&
		    conn_is_state(res, "22023");
		if (row->no_table) {
			row->failures = 0;	/* nothing failed */
		} else {
			conn_result_error(res, err);
			rc = row->denied ? 0 : -1;
		}
	} else if (zone_abbrev(res, w, row, err)) {
		rc = -1;
	} else {
		record_get(res, 0, 0, row);
		read_slot(res, w, row);
		row->history = *PQgetvalue(res, 0, HISTORY_COLUMN) == 't';
		row->history_denied = *PQgetvalue(res, 0, HISTORY_COLUMN) ==
		    'n';
	}
	PQclear(res);
	return rc;
}

/* In a transaction a utility statement ends the portal's snapshot. */
static const char snapshot_end_sql[] = "SET LOCAL statement_timeout = 0";

int
runs_read_when(PGconn *c, const char *table, const char *history,
    const char *key, const struct runs_when *w, long ms, struct runs_row *row,
    struct err *err)
{
	struct read_query q;
	PGresult *res;
	int rc;

	row_init(row);
	read_query(&q, table, history, key, w);
	if ((res = conn_exec(c, q.sql, q.params, ms, err)) == NULL)
		return -1;
	rc = read_answer(res, w, row, err);
	if (rc == 0 && !row->no_table && !row->denied &&
	    PQtransactionStatus(c) == PQTRANS_INTRANS) {
		/* Unanswered or refused, the transaction is not one to go on. */
		res = conn_exec(c, snapshot_end_sql, NULL, ms, err);
		if (res != NULL && PQresultStatus(res) != PGRES_COMMAND_OK)
			conn_result_error(res, err);
		if (res == NULL || PQresultStatus(res) != PGRES_COMMAND_OK)
			rc = -1;
		PQclear(res);
	}
	return rc;
}

int
runs_queue_read(PGconn *c, const char *table, const char *history,
    const char *key, const struct runs_when *w, int xact, struct err *err)
{
	struct read_query q;

	read_query(&q, table, history, key, w);
	if (conn_queue(c, q.sql, 6, q.params) == -1 || (xact &&
	    conn_queue(c, snapshot_end_sql, 0, NULL) == -1) ||
	    conn_sync(c) == -1) {
		conn_oneline(PQerrorMessage(c), err);
		return -1;
	}
	return 0;
}

int
runs_read_queued(PGconn *c, const struct runs_when *w, mono_t by, long ms,
    struct runs_row *row, struct err *err)
{
	PGresult *res;
	struct err later;
	int rc;

	row_init(row);
	if ((res = conn_pipe_result(c, by, ms, err)) == NULL)
		return -1;
	rc = read_answer(res, w, row, err);
	if (conn_pipe_skip(c, by, ms, rc == 0 ? err : &later) == -1)
		return -1;
	return rc;
}

/* Read res's rows (a name, then RECORD()) into *names and *rows: 0, or -1. */
static int
list_get(const PGresult *res, char ***names, struct runs_row **rows, int *n,
    struct err *err)
{
	int i;

	*n = PQntuples(res);
	*names = calloc((size_t)*n + 1, sizeof(**names));
	*rows = calloc((size_t)*n + 1, sizeof(**rows));
	if (*names == NULL || *rows == NULL) {
		err_set(err, "out of memory for %d records", *n);
		return -1;
	}
	for (i = 0; i < *n; i++) {
		if (((*names)[i] = strdup(PQgetvalue(res, i, 0))) == NULL) {
			err_set(err, "out of memory for %d records", *n);
			return -1;
		}
		(*rows)[i].ok_slot = -1;
		record_get(res, i, 1, &(*rows)[i]);
	}
	return 0;
}

int
runs_list(PGconn *c, const char *table, char ***names,
    struct runs_row **rows, int *n, struct err *err)
{
	char sql[2048];
	const char *params[2] = { table, NULL };
	PGresult *res;
	int rc = -1;

	*names = NULL;
	*rows = NULL;
	*n = 0;
	snprintf(sql, sizeof(sql), "SELECT r.key, " RECORD("$1", AS_ISO) " FROM %s r"
	    JSONB " ORDER BY r.key", table);
	if ((res = conn_exec(c, sql, params, CONN_ANSWER_MS, err)) == NULL)
		return -1;
	if (PQresultStatus(res) == PGRES_TUPLES_OK &&
	    PQnfields(res) == RECORD_FIELDS + 1) {
		rc = list_get(res, names, rows, n, err);
	} else if (conn_is_state(res, "42P01")) {
		rc = 0;		/* no table: no records */
	} else {
		conn_result_error(res, err);
		rc = conn_is_state(res, "42501") ? 1 : -1;
	}
	PQclear(res);
	return rc;
}

/*
 * The history's part of a write: o's row ($1 key, $3 node, $4 seconds, $5
 * slot, $6 status, $8 output in hex), and the key's oldest rows deleted but
 * o->keep - 1 (the statement's snapshot does not see its own row), as WITH
 * items the statement they lead runs too; "" without a history.
 */
static void
history_sql(char *sql, size_t len, const struct runs_outcome *o)
{
	if (o->history == NULL) {
		*sql = '\0';
		return;
	}
	snprintf(sql, len, "WITH h AS (INSERT INTO %s (key, node, started,"
	    " ended, seconds, status, slot, output) VALUES ($1, $3,"
	    " pg_catalog.statement_timestamp() - $4::float8 * interval"
	    " '1 second', pg_catalog.statement_timestamp(), $4::float8,"
	    " $6::int, nullif($5::bigint, -1), pg_catalog.decode($8, 'hex'))),"
	    " t AS (DELETE FROM %s d WHERE d.key = $1 AND d.id <= (SELECT o.id"
	    " FROM %s o WHERE o.key = $1 ORDER BY o.id DESC OFFSET"
	    " ($7::int - 1) LIMIT 1)) ", o->history, o->history, o->history);
}

/* The runs table's part: o as its key's last success or last failure. */
static void
record_sql(char *sql, size_t len, const char *table,
    const struct runs_outcome *o)
{
	/* Only a table that counts failures is told of them. */
	const char *streak[3] = { "", "", "" };

	if (o->streak) {
		streak[0] = ", failures";
		streak[1] = o->status == 0 ? ", 0" : ", 1";
		streak[2] = o->status == 0 ? ", failures = 0" :
		    ", failures = coalesce(r.failures, 0) + 1";
	}
	if (o->status == 0)
		snprintf(sql, len, "INSERT INTO %s AS r (key, lock_id,"
		    " ok_at, ok_host, ok_seconds, ok_slot%s) VALUES ($1, $2,"
		    " pg_catalog.statement_timestamp(), $3, $4::float8,"
		    " nullif($5::bigint, -1)%s) ON CONFLICT (key) DO UPDATE SET"
		    " lock_id = EXCLUDED.lock_id, ok_at = EXCLUDED.ok_at,"
		    " ok_host = EXCLUDED.ok_host, ok_seconds ="
		    " EXCLUDED.ok_seconds, ok_slot = coalesce(EXCLUDED.ok_slot,"
		    " r.ok_slot)%s", table, streak[0], streak[1], streak[2]);
	else
		snprintf(sql, len, "INSERT INTO %s AS r (key, lock_id,"
		    " failed_at, failed_host, failed_status%s) VALUES ($1, $2,"
		    " pg_catalog.statement_timestamp(), $3, $6::int%s)"
		    " ON CONFLICT (key) DO UPDATE SET lock_id ="
		    " EXCLUDED.lock_id, failed_at = EXCLUDED.failed_at,"
		    " failed_host = EXCLUDED.failed_host, failed_status ="
		    " EXCLUDED.failed_status%s", table, streak[0], streak[1],
		    streak[2]);
}

/* Queue sql (history_sql()'s and the rest) with o's 8 parameters. */
static int
queue_outcome(PGconn *c, const char *sql, const struct runs_outcome *o,
    struct err *err)
{
	static const char hex[] = "0123456789abcdef";
	char num[4][32], *out = NULL;
	const char *params[8] = { o->key, o->id != NULL ? o->id : "", o->node,
	    num[0], num[1], num[2], num[3], NULL };
	size_t i;
	int rc;

	/* A session known to be gone sends nothing: nothing can land. */
	if (PQstatus(c) != CONNECTION_OK) {
		conn_reason(c, err);
		return -1;
	}
	snprintf(num[0], sizeof(num[0]), "%.3f", o->seconds);
	snprintf(num[1], sizeof(num[1]), "%lld", o->slot);
	snprintf(num[2], sizeof(num[2]), "%d", o->status);
	snprintf(num[3], sizeof(num[3]), "%d", o->keep > 0 ? o->keep : 1);
	if (o->output != NULL) {
		if ((out = malloc(2 * o->output_len + 1)) == NULL) {
			err_set(err, "out of memory for the output's tail");
			return -1;
		}
		for (i = 0; i < o->output_len; i++) {
			out[2 * i] = hex[(unsigned char)o->output[i] >> 4];
			out[2 * i + 1] = hex[(unsigned char)o->output[i] & 15];
		}
		out[2 * o->output_len] = '\0';
		params[7] = out;
	}
	rc = conn_queue_text(c, sql, 8, params);
	free(out);
	if (rc == -1)
		conn_oneline(PQerrorMessage(c), err);
	return rc;
}

int
runs_queue_write(PGconn *c, const char *table, const struct runs_outcome *o,
    struct err *err)
{
	char sql[4096];
	size_t n;

	history_sql(sql, sizeof(sql), o);
	n = strlen(sql);
	record_sql(sql + n, sizeof(sql) - n, table, o);
	return queue_outcome(c, sql, o, err);
}

int
runs_queue_history(PGconn *c, const struct runs_outcome *o, struct err *err)
{
	char sql[4096];

	history_sql(sql, sizeof(sql), o);
	snprintf(sql + strlen(sql), sizeof(sql) - strlen(sql), "SELECT");
	return queue_outcome(c, sql, o, err);
}

int
runs_written(const PGresult *res, struct err *err)
{
	/* runs_queue_history()'s WITH ... SELECT answers with no rows. */
	if (PQresultStatus(res) == PGRES_COMMAND_OK ||
	    PQresultStatus(res) == PGRES_TUPLES_OK)
		return 0;
	conn_result_error(res, err);
	return -1;
}

int
runs_landed(const struct conn_opts *co, const char *table,
    const struct runs_outcome *o, double before_ms, struct err *err)
{
	char had[32], ran[32];
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
	/*
	 * Another success than the one read under the lock, by this host, of
	 * this run's length: not the server's clock against ours (a
	 * millisecond's rounding there once said "not found" of a success that
	 * had landed), nor another -s holder's success.
	 */
	snprintf(had, sizeof(had), "%.3f", row.ok_seconds);
	snprintf(ran, sizeof(ran), "%.3f", o->seconds);
	return row.has_ok && row.ok_ms != before_ms &&
	    strcmp(row.ok_host, o->node) == 0 && strcmp(had, ran) == 0;
}

long long
runs_spread_ms(const struct key *k, long long s)
{
	int64_t id = k->space == KEY_BIGINT ? k->id : (int64_t)((uint64_t)
	    (uint32_t)k->a << 32 | (uint32_t)k->b);

	/* C's % keeps the sign of a negative id: shifted into [0, s). */
	return s > 0 ? ((id % s) + s) % s * 1000 : 0;
}

/* Run sql, a DELETE or UPDATE of key's row: 1 one changed, 0 none, -1. */
static int
changed(PGconn *c, const char *sql, const char *key, struct err *err)
{
	const char *params[2] = { key, NULL };
	PGresult *res;
	int rc = -1;

	if ((res = conn_exec(c, sql, params, CONN_ANSWER_MS, err)) == NULL)
		return -1;
	if (PQresultStatus(res) == PGRES_COMMAND_OK)
		rc = strcmp(PQcmdTuples(res), "0") != 0;
	else if (conn_is_state(res, "42P01") || conn_is_state(res, "42703"))
		rc = 0;		/* no table; no pause in one of an earlier build */
	else
		conn_result_error(res, err);
	PQclear(res);
	return rc;
}

/*
 * The row goes, unless it holds a pause (the operator's, not the job's: kept,
 * the runs cleared).
 */
int
runs_forget(PGconn *c, const char *table, const char *key, struct err *err)
{
	char sql[1024];
	int rc;

	snprintf(sql, sizeof(sql), "DELETE FROM %s AS r WHERE r.key = $1 AND"
	    " pg_catalog.to_jsonb(r) ->> 'paused_at' IS NULL", table);
	if ((rc = changed(c, sql, key, err)) != 0)
		return rc;
	snprintf(sql, sizeof(sql), "UPDATE %s SET ok_at = NULL, ok_host = NULL,"
	    " ok_seconds = NULL, ok_slot = NULL, failed_at = NULL, failed_host"
	    " = NULL, failed_status = NULL, failures = 0 WHERE key = $1 AND"
	    " (ok_at IS NOT NULL OR failed_at IS NOT NULL)", table);
	return changed(c, sql, key, err);
}

/* A pause's columns: from now, for $3 ms (-1: until resumed), by $4, why $5. */
#define PAUSE_VALUES "pg_catalog.statement_timestamp()," \
	" pg_catalog.statement_timestamp() + nullif($3::bigint, -1) *" \
	" interval '1 millisecond', $4, nullif($5, '')"

int
runs_pause(PGconn *c, const char *table, const struct runs_pause *p,
    char until[40], struct err *err)
{
	char sql[2048], num[32];
	const char *params[6] = { p->key, p->id, num, p->node, p->reason,
	    NULL };
	PGresult *res;
	int rc = -1;

	snprintf(num, sizeof(num), "%lld", p->for_ms);
	/* Without create, an UPDATE: a key with no record gets none. */
	if (p->create)
		snprintf(sql, sizeof(sql), "INSERT INTO %s AS r (key, lock_id,"
		    " paused_at, paused_until, paused_host, paused_reason)"
		    " VALUES ($1, $2, " PAUSE_VALUES ") ON CONFLICT (key) DO"
		    " UPDATE SET paused_at = EXCLUDED.paused_at, paused_until ="
		    " EXCLUDED.paused_until, paused_host = EXCLUDED.paused_host,"
		    " paused_reason = EXCLUDED.paused_reason RETURNING"
		    " coalesce(pg_catalog.to_char(paused_until, " ISO "), '')",
		    table);
	else
		snprintf(sql, sizeof(sql), "UPDATE %s AS r SET (lock_id,"
		    " paused_at, paused_until, paused_host, paused_reason) ="
		    " ROW($2, " PAUSE_VALUES ") WHERE r.key = $1 RETURNING"
		    " coalesce(pg_catalog.to_char(paused_until, " ISO "), '')",
		    table);
	if ((res = conn_exec(c, sql, params, CONN_ANSWER_MS, err)) == NULL)
		return -1;
	if (!p->create && conn_is_state(res, "42P01")) {
		PQclear(res);
		return 1;	/* no table: no record */
	}
	if (!p->create && PQresultStatus(res) == PGRES_TUPLES_OK &&
	    PQntuples(res) == 0) {
		PQclear(res);
		return 1;
	}
	if (conn_is_state(res, "42P01")) {
		PQclear(res);
		if (runs_table(c, table, NULL, NULL, err) == -1 ||
		    (res = conn_exec(c, sql,
		    params, CONN_ANSWER_MS, err)) == NULL)
			return -1;
	}
	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1) {
		snprintf(until, 40, "%s", PQgetvalue(res, 0, 0));
		rc = 0;
	} else if (conn_is_state(res, "42703")) {
		err_set(err, "table %s has no columns for pauses (an earlier "
		    "pglock created it); have its owner run: ALTER TABLE %s "
		    ADDED, table, table);
	} else {
		conn_result_error(res, err);
	}
	PQclear(res);
	return rc;
}

/* The edit distance of a and b, counted up to cap (then cap). */
static size_t
distance(const char *a, const char *b, size_t cap)
{
	size_t la = strlen(a), lb = strlen(b), i, j, d = cap, *row, diag, up;

	if ((la > lb ? la - lb : lb - la) >= cap ||
	    (row = malloc((lb + 1) * sizeof(*row))) == NULL)
		return cap;
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		diag = row[0];
		row[0] = i;
		for (j = 1; j <= lb; j++) {
			up = row[j];
			row[j] = a[i - 1] == b[j - 1] ? diag : 1 + (diag <
			    up ? (diag < row[j - 1] ? diag : row[j - 1]) :
			    (up < row[j - 1] ? up : row[j - 1]));
			diag = up;
		}
	}
	if (row[lb] < cap)
		d = row[lb];
	free(row);
	return d;
}

int
runs_near(PGconn *c, const char *table, const char *key, char **near, int n,
    struct err *err)
{
	char sql[512];
	const char *params[2] = { key, NULL };
	/* A typo: a few edits, and fewer than half the key's length. */
	size_t cap = strlen(key) / 2 < 4 ? strlen(key) / 2 + 1 : 4, d[8];
	PGresult *res;
	int i, j, k, found = 0;

	for (i = 0; i < n; i++)
		near[i] = NULL;
	if (n > 8)
		n = 8;
	/* In key order, 20,000 at most: a fleet has far fewer jobs. */
	snprintf(sql, sizeof(sql), "SELECT key FROM %s WHERE key <> $1 ORDER"
	    " BY key LIMIT 20000", table);
	if ((res = conn_exec(c, sql, params, CONN_ANSWER_MS, err)) == NULL)
		return -1;
	if (conn_is_state(res, "42P01")) {
		PQclear(res);
		return 0;
	}
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		conn_result_error(res, err);
		PQclear(res);
		return -1;
	}
	/* Kept nearest first; a tie keeps the order read. */
	for (i = 0; i < PQntuples(res); i++) {
		size_t e = distance(key, PQgetvalue(res, i, 0), cap);

		for (j = 0; j < found && d[j] <= e; j++)
			;
		if (e >= cap || j >= n)
			continue;
		if (found == n)
			free(near[--found]);
		for (k = found; k > j; k--) {
			near[k] = near[k - 1];
			d[k] = d[k - 1];
		}
		if ((near[j] = strdup(PQgetvalue(res, i, 0))) == NULL)
			break;
		d[j] = e;
		found++;
	}
	PQclear(res);
	return found;
}

int
runs_resume(PGconn *c, const char *table, const char *key, struct err *err)
{
	char sql[1024];
	const char *params[2] = { key, NULL };
	PGresult *res;
	int rc = -1;

	/* An ended pause is cleared too, and counts as none. */
	snprintf(sql, sizeof(sql), "WITH o AS (SELECT key, paused_at IS NOT"
	    " NULL AND (paused_until IS NULL OR paused_until >"
	    " pg_catalog.statement_timestamp()) AS was FROM %s WHERE key = $1"
	    " FOR UPDATE) UPDATE %s AS r SET paused_at = NULL, paused_until ="
	    " NULL, paused_host = NULL, paused_reason = NULL FROM o WHERE"
	    " r.key = o.key RETURNING o.was", table, table);
	if ((res = conn_exec(c, sql, params, CONN_ANSWER_MS, err)) == NULL)
		return -1;
	if (PQresultStatus(res) == PGRES_TUPLES_OK)
		rc = PQntuples(res) == 1 && *PQgetvalue(res, 0, 0) == 't';
	else if (conn_is_state(res, "42P01") || conn_is_state(res, "42703"))
		rc = 0;		/* no table, or one that cannot pause */
	else
		conn_result_error(res, err);
	PQclear(res);
	return rc;
}

/* A hex digit's value (encode()'s are lower case). */
static int
nibble(char h)
{
	return h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ?
	    h - 'a' + 10 : 0;
}

/* The bytes of hex (an even count of hex digits) into a malloc'd buffer. */
static char *
unhex(const char *hex, size_t *len)
{
	size_t i, n = strlen(hex) / 2;
	char *out = malloc(n + 1);

	if (out == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		out[i] = (char)(nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]));
	out[n] = '\0';
	*len = n;
	return out;
}

/* Row i of runs_history()'s answer into *run: 0, or -1 out of memory. */
static int
run_get(const PGresult *res, int i, struct runs_run *run)
{
	COPY(run->ended, PQgetvalue(res, i, 0));
	COPY(run->started, PQgetvalue(res, i, 6));
	run->seconds = strtod(PQgetvalue(res, i, 2), NULL);
	run->status = (int)strtol(PQgetvalue(res, i, 3), NULL, 10);
	run->slot = strtoll(PQgetvalue(res, i, 4), NULL, 10);
	if ((run->node = strdup(PQgetvalue(res, i, 1))) == NULL)
		return -1;
	if (!PQgetisnull(res, i, 5) && (run->output = unhex(PQgetvalue(res,
	    i, 5), &run->output_len)) == NULL)
		return -1;
	return 0;
}

/* A read of a table that may be missing or denied: 0 none, 1, -1. */
static int
read_refused(const PGresult *res, struct err *err)
{
	if (conn_is_state(res, "42P01"))
		return 0;
	conn_result_error(res, err);
	return conn_is_state(res, "42501") ? 1 : -1;
}

int
runs_history(PGconn *c, const char *history, const char *key,
    struct runs_run **runs, int *n, struct err *err)
{
	char sql[1024];
	const char *params[2] = { key, NULL };
	PGresult *res;
	int i, rc = 0;

	*runs = NULL;
	*n = 0;
	snprintf(sql, sizeof(sql), "SELECT " AS_ISO("ended") ","
	    " coalesce(node, ''), seconds, status, coalesce(slot, -1),"
	    " pg_catalog.encode(output, 'hex'), coalesce(" AS_ISO("started")
	    ", '') FROM %s WHERE key = $1 ORDER BY id DESC", history);
	if ((res = conn_exec(c, sql, params, CONN_ANSWER_MS, err)) == NULL)
		return -1;
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQnfields(res) != 7) {
		rc = read_refused(res, err);
		PQclear(res);
		return rc;
	}
	if ((*runs = calloc((size_t)PQntuples(res) + 1, sizeof(**runs))) ==
	    NULL)
		rc = -1;
	for (i = 0; rc == 0 && i < PQntuples(res); i++, (*n)++)
		rc = run_get(res, i, &(*runs)[i]);
	if (rc == -1)
		err_set(err, "out of memory for %d runs", PQntuples(res));
	PQclear(res);
	return rc;
}

void
runs_free(struct runs_run *runs, int n)
{
	int i;

	for (i = 0; runs != NULL && i <= n; i++) {
		free(runs[i].node);
		free(runs[i].output);
	}
	free(runs);
}

int
runs_last_durations(PGconn *c, const char *history, char ***names,
    double **seconds, int *n, struct err *err)
{
	char sql[512];
	PGresult *res;
	int i, rc = 0;

	*names = NULL;
	*seconds = NULL;
	*n = 0;
	snprintf(sql, sizeof(sql), "SELECT DISTINCT ON (key) key, seconds"
	    " FROM %s ORDER BY key, id DESC", history);
	if ((res = conn_exec(c, sql, NULL, CONN_ANSWER_MS, err)) == NULL)
		return -1;
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQnfields(res) != 2) {
		rc = read_refused(res, err);
		PQclear(res);
		return rc;
	}
	*names = calloc((size_t)PQntuples(res) + 1, sizeof(**names));
	*seconds = calloc((size_t)PQntuples(res) + 1, sizeof(**seconds));
	if (*names == NULL || *seconds == NULL)
		rc = -1;
	for (i = 0; rc == 0 && i < PQntuples(res); i++, (*n)++) {
		(*seconds)[i] = strtod(PQgetvalue(res, i, 1), NULL);
		if (((*names)[i] = strdup(PQgetvalue(res, i, 0))) == NULL)
			rc = -1;
	}
	if (rc == -1)
		err_set(err, "out of memory for %d keys", PQntuples(res));
	PQclear(res);
	return rc;
}
