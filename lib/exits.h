/* SPDX-License-Identifier: ISC */
/*
 * exits: pglock's exit statuses, sysexits(3) values and the shell's, as
 * the man page lists them. pglock.c turns outcomes into them; lib/ uses
 * them only in the processes it forks.
 */
#ifndef PGLOCK_EXITS_H
#define PGLOCK_EXITS_H

enum {
	EXIT_CONFLICT = 1,	/* default for "lock not acquired" (-E) */
	EXIT_USAGE = 64,
	EXIT_UNAVAILABLE = 69,
	EXIT_SOFTWARE = 70,
	EXIT_OSERR = 71,
	EXIT_LOST = 75,
	EXIT_NOPERM = 77,	/* --break may not end a holder */
	EXIT_TIMEOUT = 124,	/* --max-time, as timeout(1) */
	EXIT_NOEXEC = 126,
	EXIT_NOTFOUND = 127
};

#endif
