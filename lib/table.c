/* SPDX-License-Identifier: ISC */
/*
 * table: first use creates the table. Concurrent CREATE TABLE IF NOT
 * EXISTS can still collide in the catalog, so first users queue on a lock
 * of their own, in a transaction of their own.
 */
#include <stdio.h>
#include <string.h>

#include "query.h"
#include "said.h"
#include "table.h"

void
table_denied(PGconn *c, const char *q, const char *columns,
    const char *privs, struct err *err)
{
	char *role = PQescapeIdentifier(c, PQuser(c), strlen(PQuser(c)));

	err_set(err, "table %s does not exist and this role may not create "
	    "it; have an administrator run: CREATE TABLE %s %s; GRANT %s ON %s "
	    "TO %s", q, q, columns, privs, q, role != NULL ? role : PQuser(c));
	PQfreemem(role);
}

int
table_create(PGconn *c, const char *q, const char *columns,
    const char *privs, const struct budget *b, struct err *err)
{
	char sql[1024];
	struct err why;
	const char *params[2] = { q, NULL };
	PGresult *res;
	int rc = -1;

	if ((res = conn_exec(c, "BEGIN", NULL, budget_ms(b, CONN_ANSWER_MS),
	    err)) == NULL)
		return -1;
	PQclear(res);
	if ((res = conn_exec(c, "SELECT pg_catalog.pg_advisory_xact_lock("
	    "pg_catalog.hashtextextended('pglock-create ' || $1, 0))", params,
	    budget_ms(b, CONN_ANSWER_MS), err)) == NULL)
		return -1;
	PQclear(res);
	snprintf(sql, sizeof(sql), "CREATE TABLE IF NOT EXISTS %s %s", q,
	    columns);
	if ((res = conn_exec(c, sql, NULL, budget_ms(b, CONN_ANSWER_MS),
	    err)) == NULL)
		return -1;
	if (PQresultStatus(res) == PGRES_COMMAND_OK) {
		rc = 0;
	} else if (conn_is_state(res, "42501")) {
		table_denied(c, q, columns, privs, err);
	} else {
		conn_result_error(res, err);
	}
	PQclear(res);
	if (rc == 0)
		return conn_end(c, 1, budget_ms(b, CONN_ANSWER_MS), err);
	(void)conn_end(c, 0, budget_ms(b, CONN_ANSWER_MS), &why);
	return rc;
}
