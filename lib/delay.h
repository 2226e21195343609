/* SPDX-License-Identifier: ISC */
/*
 * delay: the lock-delay. A lock the server frees early (--break,
 * pg_terminate_backend(), a restart, a crash, a promotion) may leave a holder
 * whose command runs on until its lease's end; what the server shows of such
 * an event: a holder's witness, --break's hold, the server's start.
 */
#ifndef PGLOCK_DELAY_H
#define PGLOCK_DELAY_H

#include <libpq-fe.h>

#include "err.h"
#include "key.h"

/* What one look at the server says: why a new holder must wait, and how long. */
struct delay_look {
	int broken;		/* a witness or a --break keeps a companion */
	long wait_ms;		/* the rest of the lease after the event */
	char why[128];		/* the event, for -v: "the server started" */
};

/*
 * Queue the look on c, in pipeline mode after a lock's statements, with a
 * sync of its own (lock_req's then): the server looks as it grants the lock,
 * in the same round trip. 0, or -1 (err). idle_ms: as delay_look()'s.
 */
int delay_queue(PGconn *c, const char *id, int shared, long idle_ms,
    int xact, struct err *err);

/*
 * Look, answered within ms (read from the pipeline, to its sync, where
 * delay_queue() queued it: the caller leaves pipeline mode), at what a waiter
 * granted the lock whose id (as PGLOCK_ID shows it) is id may not use yet: a
 * --break's hold on it, and a start, crash recovery or promotion of the
 * server less than lease_ms ago; a holder's witness still kept (the
 * companion of a shared lock's only where this holder's is exclusive).
 * xact: in the lock's transaction, which keeps no snapshot after it and idles
 * idle_ms at most (the lock's lease; 0: -F, for ever). 0, or -1 with the
 * reason in err (an error in a transaction ends the lock; a queued look may
 * be left unread, the connection not to be used again); when
 * the role may not read pg_control, -2 in a transaction (its lock is gone: the
 * next look, on a new one, does without), else -3: look again, without.
 */
int delay_look(PGconn *c, const char *id, int shared, long lease_ms,
    long idle_ms, int xact, long ms, struct delay_look *out,
    struct err *err);

/*
 * --break, before ending id's holder: keep its lock-delay on session c, within
 * ms (shared with the holder's witness and any other --break's). 0, or -1.
 */
int delay_hold(PGconn *c, const char *id, long ms, struct err *err);

/* --break, after: keep what delay_hold() took for ms more, then let go. */
int delay_keep(PGconn *c, long ms, struct err *err);

/*
 * The witness: on w, a session of the holder's own, opened once the lock is
 * held and before its command starts, keep the companion of the lock on k (a
 * shared lock's, for a shared one), in a transaction left open where xact,
 * till delay_witness_end(), once all of the command is gone; then check that
 * server process pid still holds the lock: should its session end early
 * (pg_terminate_backend(), --break), a new holder's look finds the companion
 * kept, and waits. Nothing ends w's session for idling; a dead peer ends it
 * as it ends the lock's (lease_ms). Answered within ms: 0; -1 (err); -2 if
 * the lock was gone before the companion was kept (err says so).
 */
int delay_witness(PGconn *w, const struct key *k, int pid, int shared,
    int xact, long lease_ms, long ms, struct err *err);

/* Let the witness's companion go, answered within ms: 0, or -1 (err). */
int delay_witness_end(PGconn *w, int xact, long ms, struct err *err);

#endif
