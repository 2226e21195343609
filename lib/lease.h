/* SPDX-License-Identifier: ISC */
/*
 * lease: a lock held is a lease. Its numbers all derive, here and only
 * here, from the check interval, so that their order cannot invert: the
 * command is dead before the server may give the lock away.
 */
#ifndef PGLOCK_LEASE_H
#define PGLOCK_LEASE_H

struct lease {
	long check_ms;	/* C: a check that the lock is held, every C */
	long answer_ms;	/* A = max(C, 1 s): a check not answered by then
			   counts as a loss */
	long dead_ms;	/* C + 2A after the last answered check was sent,
			   the command has been KILLed */
	long server_ms;	/* S = C + 3A: the server ends a session (or a
			   transaction) silent that long, and its lock */
};

/*
 * The lease of a check interval: a loss is seen at most C + A after the
 * last answered check was sent, the KILL follows at most A later, and the
 * server waits A more, the margin for an answer's way back and for
 * scheduling.
 */
static inline struct lease
lease_of(long check_ms)
{
	struct lease l;

	l.check_ms = check_ms;
	l.answer_ms = check_ms > 1000 ? check_ms : 1000;
	l.dead_ms = check_ms + 2 * l.answer_ms;
	l.server_ms = check_ms + 3 * l.answer_ms;
	return l;
}

#endif
