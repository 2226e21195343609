/* SPDX-License-Identifier: ISC */
/*
 * table: create one of pglock's tables (the version counter's, the runs'
 * record) on first use, without a race, or say which statements to run.
 */
#ifndef PGLOCK_TABLE_H
#define PGLOCK_TABLE_H

#include <libpq-fe.h>

#include "err.h"
#include "query.h"

/*
 * SQL: may this role create table name (a text expression, quoted as
 * counter_table_sql() writes it) in its schema, or in the first of the
 * search path if unqualified (or NULL)? false where that schema is not.
 */
#define TABLE_MAY_CREATE(name) \
	"coalesce((SELECT pg_catalog.has_schema_privilege(n.oid, 'CREATE')" \
	" FROM pg_catalog.pg_namespace n, pg_catalog.parse_ident(" name ") i" \
	" WHERE n.nspname = CASE WHEN pg_catalog.cardinality(i) > 1 THEN" \
	" i[pg_catalog.cardinality(i) - 1] ELSE pg_catalog.current_schema()" \
	" END), false)"

/*
 * err: table q does not exist and this role may not create it, with the
 * CREATE TABLE and the GRANT privs an administrator runs.
 */
void table_denied(PGconn *c, const char *q, const char *columns,
    const char *privs, struct err *err);

/*
 * Create table q (quoted, as counter_table_sql() writes it) with columns (SQL,
 * in parentheses) unless it exists, in its own transaction: 0, or -1, the
 * reason in err (if the role may not: the CREATE TABLE and GRANT privs to run).
 * Each statement is answered within b (budget_ms(); NULL: CONN_ANSWER_MS).
 */
int table_create(PGconn *c, const char *q, const char *columns,
    const char *privs, const struct budget *b, struct err *err);

#endif
