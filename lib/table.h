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
 * Create table q (quoted, as counter_table_sql() writes it) with columns (SQL,
 * in parentheses) unless it exists, in its own transaction: 0, or -1, the
 * reason in err (if the role may not: the CREATE TABLE and GRANT privs to run).
 * Each statement is answered within b (budget_ms(); NULL: CONN_ANSWER_MS).
 */
int table_create(PGconn *c, const char *q, const char *columns,
    const char *privs, const struct budget *b, struct err *err);

#endif
