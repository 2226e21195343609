/* SPDX-License-Identifier: ISC */
/*
 * lease: a lock held is a lease, renewed by a periodic check that the
 * lock is still this session's. Its numbers all derive, here and only
 * here, from the check interval, so that their order cannot invert: the
 * command is dead before the server may give the lock away.
 */
#ifndef PGLOCK_LEASE_H
#define PGLOCK_LEASE_H

#include <libpq-fe.h>

#include "err.h"
#include "lock.h"

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

/* The checks of one held lock: what is in flight, and what is due. */
struct lease_check {
	PGconn *conn;			/* the session that holds the lock */
	const struct lock_req *lock;
	struct lease lease;
	long sent;	/* mono_ms() the check in flight was sent; -1: none */
	long next;	/* when the next check is due */
	long answered;	/* when the last answered check was sent (at
			   first, when the lock was granted) */
};

/* Checks of lk, held on c since (mono_ms()), every check_ms. */
void lease_start(struct lease_check *k, PGconn *c, const struct lock_req *lk,
    long check_ms, long since);

/* mono_ms() by which the command must be dead unless a check renews it. */
long lease_end(const struct lease_check *k);

/*
 * One step of the checks (k is a struct lease_check), whenever the
 * session's socket is readable (readable 1) or a time it set in *due has
 * come: read an answer, which renews the lease, or send the check due.
 * Returns 1 while the lock is held, 0 when it is lost or unproven, with
 * the reason in err; *due is the next time to call without input, *end
 * what lease_end() says now. A child_watch's step (lib/child.h).
 */
int lease_step(void *k, int readable, long *due, long *end, struct err *err);

/*
 * After the command exited: read a check still in flight, within its
 * bound, so the session is free for the release. Returns 1 while the
 * lock is held, 0 when the check found it lost (reason in err).
 */
int lease_finish(void *k, struct err *err);

#endif
