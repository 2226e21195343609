/* SPDX-License-Identifier: ISC */
/*
 * lease: a lock held is a lease, renewed by a periodic check that it is still
 * this session's. Its numbers all derive here alone from the check interval,
 * in an order that cannot invert: the command dies before the lock may go.
 */
#ifndef PGLOCK_LEASE_H
#define PGLOCK_LEASE_H

#include <libpq-fe.h>

#include "clock.h"
#include "err.h"
#include "lock.h"
#include "query.h"

/*
 * lease_of(C): a check that the lock is held every C, answered within A =
 * max(C, 1 s) or counted as a loss. A loss is seen at most C + A after the
 * last answered check was sent, and the command KILLed by D = C + 2A; the
 * server ends a session (or transaction) silent for S = C + 3A, and its lock:
 * the last A is the margin for an answer's way back and for scheduling.
 * Outside the checks (a release, a commit, a record's write, the lock-delay's
 * look), an answer is awaited R = max(C, CONN_ANSWER_MS): a frozen server
 * must not hang pglock, nor a slow one be taken for frozen sooner than a
 * check would.
 */
struct lease {
	long check_ms;	/* C */
	long answer_ms;	/* A */
	long dead_ms;	/* D */
	long server_ms;	/* S */
	long reply_ms;	/* R */
};

static inline struct lease
lease_of(long check_ms)
{
	struct lease l;

	l.check_ms = check_ms;
	l.answer_ms = check_ms > 1000 ? check_ms : 1000;
	l.dead_ms = check_ms + 2 * l.answer_ms;
	l.server_ms = check_ms + 3 * l.answer_ms;
	l.reply_ms = check_ms > CONN_ANSWER_MS ? check_ms : CONN_ANSWER_MS;
	return l;
}

/*
 * A transaction's lock where the server has synchronous standbys keeps no xid,
 * and its checks commit nothing a standby confirms: each is renewed on a
 * connection of its own (lock_renew_aside), opened with conn, where the lock
 * is held by the server process pid. Only through a path that passes the
 * session through (a TCP proxy: libpq's backend pid is the server's); through
 * a pooler, a connection of its own would wait for one its holders pin.
 */
struct lease_aside {
	const struct conn_opts *conn;
	int pid;
};

/*
 * Before the command's gate, on the lease of lk held on c since *since (the
 * mono_ms() the last request the server answered holding it was sent): 1 if
 * less than A has gone since, so the command starts with at least C + A left
 * before the KILL, as after any answered check (with aside, never: a grant
 * is not a renewal); else after a check sent now and answered (and renewed
 * aside) within A, its sending in *since. 0 if that check finds the lock
 * lost or comes late (the reason in err): the command must not start.
 */
int lease_fresh(PGconn *c, const struct lock_req *lk,
    const struct lease_aside *aside, long check_ms, mono_t *since,
    struct err *err);

/* The checks of one held lock: what is in flight, and what is due. */
struct lease_check {
	PGconn *conn;			/* the session that holds the lock */
	const struct lock_req *lock;
	const struct lease_aside *aside;	/* NULL: renewed by the checks */
	struct lease lease;
	mono_t sent;	/* mono_ms() the check in flight was sent; NEVER: none */
	mono_t next;	/* when the next check is due */
	mono_t answered;	/* when the last answered check was sent (at
			   first, lease_start()'s since) */
};

/* Checks of lk, held on c since (mono_ms()), every check_ms. */
void lease_start(struct lease_check *k, PGconn *c, const struct lock_req *lk,
    const struct lease_aside *aside, long check_ms, mono_t since);

/* mono_ms() by which the command must be dead unless a check renews it. */
mono_t lease_end(const struct lease_check *k);

/*
 * A child_watch's step (lib/child.h) on k, a struct lease_check: read an
 * answer, which renews the lease, or send the check due. 0 when the lock is
 * lost or unproven (reason in err); *end is what lease_end() says now.
 */
int lease_step(void *k, int readable, mono_t *due, mono_t *end,
    struct err *err);

/*
 * After the command exited: read a check still in flight, within its bound,
 * freeing the session for the release: 1 while held, 0 if found lost (err).
 */
int lease_finish(void *k, struct err *err);

#endif
