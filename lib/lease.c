/* SPDX-License-Identifier: ISC */
/*
 * lease: the periodic check that keeps a held lock's lease, one step at a
 * time, for the poll loop that watches the command (lib/child.c).
 */
#include "clock.h"
#include "lease.h"
#include "query.h"
#include "said.h"

void
lease_start(struct lease_check *k, PGconn *c, const struct lock_req *lk,
    const struct lease_aside *aside, long check_ms, mono_t since)
{
	k->conn = c;
	k->lock = lk;
	k->aside = aside;
	k->lease = lease_of(check_ms);
	k->sent = NEVER;
	k->next = mono_after(since, check_ms);
	k->answered = since;
}

mono_t
lease_end(const struct lease_check *k)
{
	return mono_after(k->answered, k->lease.dead_ms);
}

static void
unanswered(const struct lease *l, struct err *err)
{
	err_set(err, "the server did not answer the lock check "
	    "within %.3g s", (double)l->answer_ms / 1000.0);
}

/*
 * The check sent at sent found the lock held, on a server with synchronous
 * standbys if sync: where it must (see lease_aside), renew it aside within
 * the check's bound. 1 renewed, else 0 (err): the lock counts as lost.
 */
static int
renewed(const struct lease_aside *aside, const struct lock_req *lk,
    const struct lease *l, int sync, mono_t sent, struct err *err)
{
	struct err why;

	if (aside == NULL || !sync || lock_renew_aside(aside->conn, lk,
	    aside->pid, mono_after(sent, l->answer_ms), &why))
		return 1;
	err_set(err, "the lease was not renewed within %.3g s by a commit a "
	    "synchronous standby confirmed: %s", (double)l->answer_ms / 1000.0,
	    why.msg);
	return 0;
}

/* Read what came: 1 held (an answer renews the lease), else 0. */
static int
take_answer(struct lease_check *k, struct err *err)
{
	int sync = 0;

	switch (conn_take_input(k->conn)) {
	case -1:
		conn_reason(k->conn, err);
		return 0;
	case 1:
		return 1;
	}
	if (k->sent == NEVER)
		return 1;
	if (lock_check_read(k->conn, mono_after(k->sent, k->lease.answer_ms),
	    NULL, &sync,
	    err) != 1 || !renewed(k->aside, k->lock, &k->lease, sync, k->sent,
	    err))
		return 0;
	/* The lease runs from the answered check's sending. */
	k->answered = k->sent;
	k->sent = NEVER;
	return 1;
}

int
lease_fresh(PGconn *c, const struct lock_req *lk,
    const struct lease_aside *aside, long check_ms, mono_t *since,
    struct err *err)
{
	const struct lease l = lease_of(check_ms);
	mono_t sent = mono_ms(), by = mono_after(sent, l.answer_ms);
	int sync = 0;

	/* Renewed aside or not, a grant's lease is the check's to say. */
	if (ms_since(*since) < l.answer_ms && aside == NULL)
		return 1;
	/* Parse what came meanwhile, such as why the server hung up. */
	(void)conn_take_input(c);
	if (lock_check_send(c, lk, err) == -1) {
		conn_reason(c, err);
		return 0;
	}
	switch (conn_await(c, by)) {
	case CONN_LATE:
		unanswered(&l, err);
		return 0;
	case CONN_BROKEN:
		conn_reason(c, err);
		return 0;
	case CONN_READY:
		break;
	}
	if (lock_check_read(c, by, NULL, &sync, err) != 1 ||
	    !renewed(aside, lk, &l, sync, sent, err))
		return 0;
	/* pglock itself may have been stopped since the answer came. */
	if (deadline_passed(by)) {
		err_set(err, "the lock check's answer was read only after "
		    "%.3g s", (double)ms_since(sent) / 1000.0);
		return 0;
	}
	*since = sent;
	return 1;
}

int
lease_step(void *arg, int readable, mono_t *due, mono_t *end,
    struct err *err)
{
	struct lease_check *k = arg;
	const struct lease *l = &k->lease;
	int held = !readable || take_answer(k, err);
	mono_t t;

	*end = lease_end(k);
	if (!held)
		return 0;
	t = mono_ms();
	if (t >= lease_end(k)) {
		/* pglock itself was stopped that long. */
		err_set(err, "no check was answered for %.3g s",
		    (double)l->dead_ms / 1000.0);
		return 0;
	}
	if (k->sent != NEVER && t >= mono_after(k->sent, l->answer_ms)) {
		unanswered(l, err);
		return 0;
	}
	if (k->sent == NEVER && t >= k->next) {
		if (lock_check_send(k->conn, k->lock, err) == -1)
			return 0;
		k->sent = t;
		k->next = mono_after(t, l->check_ms);
	}
	*due = k->sent != NEVER ? mono_after(k->sent, l->answer_ms) : k->next;
	return 1;
}

int
lease_finish(void *arg, struct err *err)
{
	struct lease_check *k = arg;

	if (k->sent == NEVER)
		return 1;
	switch (conn_await(k->conn, mono_after(k->sent, k->lease.answer_ms))) {
	case CONN_LATE:
		unanswered(&k->lease, err);
		return 0;
	case CONN_BROKEN:
		conn_reason(k->conn, err);
		return 0;
	case CONN_READY:
		break;
	}
	return lock_check_read(k->conn, mono_after(k->sent,
	    k->lease.answer_ms), NULL, NULL, err) == 1;
}
