/* SPDX-License-Identifier: ISC */
/*
 * run: the runs that hold a lock while a command runs, each one struct run
 * taken through its steps in run.c.
 */
#ifndef PGLOCK_RUN_H
#define PGLOCK_RUN_H

#include <libpq-fe.h>

#include "pglock.h"

/*
 * run_lock()'s and run_counter()'s answer when the session was cut, or a
 * standby answered, before anything ran.
 */
#define RUN_AGAIN (-1)

/*
 * pglock KEY COMMAND, --hold, --once*: take o's lock on c, run the command
 * (or the hold) while watching the lock, record the outcome, release.
 * Returns the exit status, or RUN_AGAIN: connect again and call again.
 */
int run_lock(const struct opts *o, PGconn *c);

/*
 * --version-counter [--peek] TENANT [COMMAND ...]: print or export the
 * tenant's next version, committed once printed or once the command
 * succeeded. Returns the exit status, or RUN_AGAIN.
 */
int run_counter(const struct opts *o, PGconn *c);

#endif
