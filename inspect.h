/* SPDX-License-Identifier: ISC */
/*
 * inspect: the modes that look at locks rather than take one: --explain,
 * --status, --break, and the record's --forget, --pause and --resume, with
 * their text and JSON output.
 */
#ifndef PGLOCK_INSPECT_H
#define PGLOCK_INSPECT_H

#include <libpq-fe.h>

#include "pglock.h"

/* --explain KEY: the id, where pg_locks shows it, the SQL to take it. */
int explain(const struct opts *o);

/*
 * --status [KEY ...]: the locks, then each KEY's recorded runs; 1 if a KEY is
 * not held (with --ok-within: if KEY did not succeed within it), else 0.
 */
int show_status(const struct opts *o, PGconn *c);

/*
 * --break KEY: end every session that holds KEY, and wait until each has
 * gone (up to 5 s, on PostgreSQL 14 and later). 0, 1 when nobody held it,
 * 77 when this role may not end a holder, 69 when one did not end.
 */
int break_holders(const struct opts *o, PGconn *c);

/* --forget KEY: delete its record of runs; 0, or 1 when there was none. */
int forget(const struct opts *o, PGconn *c);

/* --pause KEY: pause its recorded runs (--for, --reason); 0. */
int pause_key(const struct opts *o, PGconn *c);

/* --resume KEY: end its pause; 0, or 1 when none was in force. */
int resume_key(const struct opts *o, PGconn *c);

#endif
