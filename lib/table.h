/* SPDX-License-Identifier: ISC */
/*
 * table: create one of pglock's tables (the version counter's, the runs'
 * record) on first use, without a race, or say which statements to run.
 */
#ifndef PGLOCK_TABLE_H
#define PGLOCK_TABLE_H

#include <libpq-fe.h>

#include "err.h"

/*
 * Create table q (quoted, as counter_table_sql() writes it) with columns
 * (SQL, in parentheses) if it does not exist, in a transaction of its own.
 * Returns 0, or -1 with the reason in err: when the role may not create
 * it, the CREATE TABLE and the GRANT of privs to run.
 */
int table_create(PGconn *c, const char *q, const char *columns,
    const char *privs, struct err *err);

#endif
