/* SPDX-License-Identifier: ISC */
/*
 * two_sessions: lib/said.c against a real server (libpq's environment:
 * PGHOST, PGPORT, PGDATABASE): two sessions of one process, each judged by
 * its own errors. One's statement fails on a read-only transaction (25006)
 * while the other is ended by pg_terminate_backend() (57P01), from a third:
 * the first is read-only, not cut; the second is cut, not read-only, and
 * says why the server hung up (its FATAL, not an error before it). Prints
 * "N passed, M failed"; exits 1 on a failure, 2 if the server cannot be
 * reached.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/said.h"

static int passed, failed;

static void
expect(int ok, const char *what)
{
	if (ok) {
		passed++;
		return;
	}
	failed++;
	printf("FAIL: %s\n", what);
}

static PGconn *
session(void)
{
	PGconn *c = PQconnectdb("");

	if (PQstatus(c) != CONNECTION_OK || conn_said_watch(c) == -1) {
		fprintf(stderr, "two_sessions: %s", PQerrorMessage(c));
		exit(2);
	}
	return c;
}

/* Run sql on c; its status. */
static ExecStatusType
run(PGconn *c, const char *sql)
{
	PGresult *res = PQexec(c, sql);
	ExecStatusType st = PQresultStatus(res);

	PQclear(res);
	return st;
}

int
main(void)
{
	PGconn *cut = session(), *ro = session(), *admin = session();
	struct err why;
	char sql[128];

	expect(run(ro, "SET default_transaction_read_only = on") ==
	    PGRES_COMMAND_OK, "read-only set");
	expect(run(ro, "CREATE TEMP TABLE t ()") == PGRES_FATAL_ERROR,
	    "a write refused");
	expect(conn_read_only(ro), "the refused session is read-only");
	expect(!conn_read_only(cut), "the other one is not");

	/* An error handled first (a table made on first use) stays no cut's. */
	expect(run(cut, "SELECT * FROM no_such_table") == PGRES_FATAL_ERROR,
	    "an error on the other one");
	snprintf(sql, sizeof(sql), "SELECT pg_terminate_backend(%d, 10000)",
	    PQbackendPID(cut));
	expect(run(admin, sql) == PGRES_TUPLES_OK, "the other one ended");
	expect(run(cut, "SELECT 1") == PGRES_FATAL_ERROR, "its query fails");
	expect(conn_cut(cut), "the ended session is cut");
	expect(!conn_read_only(cut), "... not read-only");
	conn_reason(cut, &why);
	expect(strstr(why.msg, "terminating connection due to administrator "
	    "command") != NULL, "... and says why the server hung up");
	expect(conn_read_only(ro), "the refused one is read-only still");
	expect(!conn_cut(ro), "... and not cut");
	conn_reason(ro, &why);
	expect(strstr(why.msg, "administrator") == NULL,
	    "... nor says the other's reason");
	expect(run(ro, "SELECT 1") == PGRES_TUPLES_OK && conn_read_only(ro),
	    "a success after it leaves the refusal its last error");

	PQfinish(cut);
	PQfinish(ro);
	PQfinish(admin);
	printf("%d passed, %d failed\n", passed, failed);
	return failed > 0;
}
