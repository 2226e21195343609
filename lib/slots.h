/* SPDX-License-Identifier: ISC */
/*
 * slots: --slots N, one of N advisory locks on a KEY, taken in the order
 * the waiters came.
 */
#ifndef PGLOCK_SLOTS_H
#define PGLOCK_SLOTS_H

#include <libpq-fe.h>

#include "err.h"
#include "key.h"
#include "lock.h"

/*
 * Take the first free of r->slots locks (slots_key 1..N), waiters queueing in
 * arrival order on slots_key 0, held only by the first of them while it waits.
 * Then held (r itself, if the caller keeps one struct) is r as held:
 * held->slot says which, held->key is its key, the lock verified as by
 * lock_verify(); release it with lock_release(). Results as lock_wait()'s.
 */
enum lock_result slots_take(PGconn *c, const struct lock_req *r,
    struct lock_req *held, int *backend_pid, int *sig, struct err *err);

/* The most slots a KEY may have (--slots N). */
#define SLOTS_MAX 1000

/*
 * lock_status() of every slot of base, whatever N its holders were given, and
 * of the queue of its waiters (slot 0): how many rows, or -1 (err).
 */
int slots_status(PGconn *c, const struct key *base, struct lock_row **rows,
    struct err *err);

/* The key of slot i (1..N) of base; i = 0: the queue of its waiters. */
void slots_key(const struct key *base, int i, struct key *out);

#endif
