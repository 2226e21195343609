/* SPDX-License-Identifier: ISC */
/*
 * run: one run of a command under its lock, read top to bottom. One struct
 * run owns the connection, lock request, command (its shim) and lease start.
 * run_lock() (pglock KEY COMMAND, --hold, --once*) takes these steps:
 *
 *   acquire   choose the scope; send the lock; begin the witness's
 *             connection beside it; wait
 *   spawn     granted: fork the shim, the command's parent and watchdog,
 *             which waits at its gate (--fence, a record: at watch)
 *   verify    pg_locks shows the lock held by this very session
 *   delay     the lock-delay: no earlier holder's command may still run
 *   witness   a second session keeps the lock-delay while the command lives
 *   watch     open the gate; check the lock (the lease) while it runs
 *   record    --once*, --record: the outcome, before the release
 *   release   let the witness go; unlock, or commit the lock's transaction
 *
 * run_counter() (--version-counter) allocates under the tenant's lock, then
 * watches its command alike. This file prints and exits; lib/ does neither.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "lib/child.h"
#include "lib/clock.h"
#include "lib/conn.h"
#include "lib/counter.h"
#include "lib/delay.h"
#include "lib/exits.h"
#include "lib/lease.h"
#include "lib/lock.h"
#include "lib/proof.h"
#include "lib/query.h"
#include "lib/runs.h"
#include "lib/said.h"
#include "lib/sig.h"
#include "lib/slots.h"
#include "lib/tail.h"
#include "out.h"
#include "pglock.h"
#include "run.h"

/* A step's "held elsewhere"; not the conflict code, which -E may make 0. */
#define NOT_GOT (-2)

static int
step_exit(const struct opts *o, int status)
{
	return status == NOT_GOT ? o->conflict_exit : status;
}

/*
 * A run's plan, derived once from its options (plan_of()): what the steps do,
 * read instead of options recombined in each.
 */
struct plan {
	int shim;		/* a forked command below its shim (not -F) */
	int hold;		/* --hold: the caller's script is told */
	int read_early;		/* --once*: the record read before the lock */
	int with_lock;		/* the look, the record's read ride with the
				   lock: its id known first (no --hash
				   hashtext*, --namespace), no --slots, and
				   --fence's count not first */
	int spawn_at_grant;	/* the command forked at its gate as the lock
				   is granted: nothing to read first (no
				   --fence, no record) */
	int allocates;		/* --version-counter: the lock is the open
				   transaction's that allocated the version
				   (its checks, a session's: lk.xact 0) */
};

static struct plan
plan_of(const struct opts *o)
{
	struct plan p = {
		.shim = !o->no_fork,
		.hold = o->mode == MODE_HOLD,
		/* --spread's offset needs KEY's id: not the server's */
		.read_early = o->once && (o->lock.key.sql == NULL ||
		    o->spread_s <= 0),
		.with_lock = o->lock.slots == 0 && o->lock.key.sql == NULL &&
		    !o->fence,
		.spawn_at_grant = !o->no_fork && !o->fence && !o->record,
		.allocates = o->mode == MODE_COUNTER,
	};

	return p;
}

struct run {
	const struct opts *o;
	struct plan plan;
	PGconn *c;
	PGconn *w;		/* the witness (lib/delay.h), or NULL */
	struct conn_opening wo;	/* the witness, opened beside the lock */
	struct lock_req lk;	/* asked for; then what was granted */
	struct child ch;	/* the shim, the command (pid -1: none); not -F */
	int shown;		/* -v's live "waiting Ns" line: end it */
	int backend_pid;	/* the server process holding the lock */
	char id[48];		/* the lock's id, as PGLOCK_ID shows it */
	double t0;		/* mono_seconds() when the wait began */
	mono_t since;		/* mono_ms() the lease runs from */
	long long slot;		/* --once*: the slot a success counts for */
	double ok_before;	/* the success read under the lock (ms); -1: none */
	double ran_s;		/* how long the command ran, as recorded */
	double ran_at;		/* mono_seconds() as it was started */
	int streak;		/* the record's table counts failures */
	int history;		/* its history table exists */
	int table_seen;		/* the record's table was read: it exists */
	int history_said;	/* -v said there is none to write */
	int read_queued;	/* the record's read rides with the lock */
	struct tail tail;	/* --keep-output: the command's output, its
				   last bytes kept for the record, once
				   ch.tail points at it */
};

/* Is the lock held in an open transaction: the lock-delay's, the witness's? */
static int
in_xact(const struct run *r)
{
	return r->lk.xact || r->plan.allocates;
}

/* How long the server has to answer a release or a commit: lease.h's R. */
static long
answer_ms(const struct opts *o)
{
	return lease_of(o->check_ms).reply_ms;
}

/* The history table runs are kept in, or NULL (--keep-history 0). */
static const char *
history_of(const struct opts *o)
{
	return o->keep_history > 0 ? o->history_sql : NULL;
}

/*
 * The record's tables, made unless there (runs_table()): 0, or -1 (why). A
 * history this role may not make is none: said under -v, with what to run.
 */
static int
tables(struct run *r, const struct budget *b, struct err *why)
{
	const struct opts *o = r->o;
	int rc = runs_table(r->c, o->runs_sql, history_of(o), b, why);

	if (rc == 1 && o->verbose) {
		say("%s: runs are recorded without a history (%s)", o->label,
		    why->msg);
		r->history_said = 1;
	}
	return rc == -1 ? -1 : 0;
}

/* -w bounds all that comes before the command: what is left of it. */
static long
wait_left(const struct opts *o)
{
	if (o->lock.wait_ms <= 0)
		return o->lock.wait_ms;
	return bound_left(o->conn.deadline_ms);
}

/*
 * The server ends a holder silent this long (lease.h's S), and its lock;
 * never under -F, where nobody checks the lock to renew it.
 */
static long
lease_ms(const struct opts *o)
{
	return o->no_fork ? 0 : lease_of(o->check_ms).server_ms;
}

/* ---- acquire ----------------------------------------------------------- */

static int again_or_err(const struct run *, const char *);
static int pause_until(mono_t);

/* When again_or_err() stops retrying standby or read-only answers. */
static mono_t role_by = NEVER;

/* --scope session on a path not proven direct: 69, before anything runs. */
static int
unproven_or_err(const struct run *r)
{
	return again_or_err(r, "--scope session: the connection is not "
	    "proven to reach the server directly (a pooler between?): use "
	    "--scope auto or transaction");
}

/*
 * A session lock only where no pooler can hand the session on: auto and
 * session prove the path, over TCP by the server in the lock's pipeline
 * (--slots: a round trip first); where that fails, auto takes a transaction's
 * lock and session none. 0, or RUN_AGAIN; dies when session is unproven.
 */
static int
choose_scope(struct run *r)
{
	const struct opts *o = r->o;
	enum conn_path path = o->scope == SCOPE_TRANSACTION ? CONN_UNPROVEN :
	    conn_direct(r->c, r->lk.slots > 0, budget_ms(r->lk.budget,
	    CONN_ANSWER_MS));

	r->lk.prove = o->scope != SCOPE_TRANSACTION && path == CONN_TCP;
	r->lk.prove_only = o->scope == SCOPE_SESSION;
	r->lk.xact = o->scope == SCOPE_TRANSACTION ||
	    (o->scope == SCOPE_AUTO && path == CONN_UNPROVEN);
	r->lk.local = path == CONN_DIRECT_LOCAL;
	if (r->lk.prove_only && path == CONN_UNPROVEN)
		return unproven_or_err(r);
	return 0;
}

/* -v on a terminal: a live "waiting Ns" line, rewritten every second. */
static void
show_waiting(void *arg)
{
	struct run *r = arg;

	live_line("%s: waiting %.0fs", r->o->label, mono_seconds() - r->t0);
	r->shown = 1;
}

/* k's holder, "server pid N (app, client, user U, for Ns)", or "" (none). */
static const char *
holder(PGconn *c, const struct lock_req *lk, char *buf, size_t len)
{
	struct lock_row *rows;
	struct err why;
	int i, n;

	/* Raw: say() escapes the whole line (a field() would double '\'). */
	buf[0] = '\0';
	if ((n = lock_status(c, &lk->key, budget_ms(lk->budget,
	    CONN_ANSWER_MS), &rows, &why)) == -1)
		return buf;
	for (i = 0; i < n && !rows[i].held; i++)
		;
	if (i < n && rows[i].hidden)
		snprintf(buf, len, "server pid %d (%s, user %s; the server "
		    "hides the rest from this role)", rows[i].pid, rows[i].app,
		    rows[i].user);
	else if (i < n)
		snprintf(buf, len, "server pid %d (%s, %s, user %s, for %lds)",
		    rows[i].pid, rows[i].app, rows[i].client, rows[i].user,
		    rows[i].seconds);
	free(rows);
	return buf;
}

/* -n or -w did not get the lock: say so, and by whom it is held. */
static void
report_busy(const struct run *r)
{
	const struct opts *o = r->o;
	char who[512] = "";
	struct err why;

	if (o->quiet)
		return;
	/* A timed-out wait aborted the transaction that waited. */
	if (r->lk.xact)
		(void)conn_end(r->c, 0, CONN_ANSWER_MS, &why);
	if (r->lk.slots > 0) {
		say("%s: all %d slots are held%s", o->label, r->lk.slots,
		    o->lock.wait_ms == 0 ? "" : ", to the end of -w");
		return;
	}
	(void)holder(r->c, &r->lk, who, sizeof(who));
	if (o->lock.wait_ms == 0)
		say("%s: the lock is held by %s", o->label,
		    *who != '\0' ? who : "another session");
	else
		say("%s: timed out after %.3gs waiting for the lock%s%s",
		    o->label, (double)o->lock.wait_ms / 1000.0,
		    *who != '\0' ? ", held by " : "", who);
}

/*
 * Session c failed before anything ran (why): if the server cut it (a
 * restart) or answered as a standby or read-only (a pooler's other server,
 * a role about to change), --connect-timeout is not 0 and -w leaves time, say
 * so under -v and return RUN_AGAIN, for main() to connect again with a budget
 * that runs from this loss (a waiter may have waited longer than
 * --connect-timeout); else die. A standby's or read-only answer comes on a
 * connection that succeeded: retried a quarter second apart, for
 * --connect-timeout from the first (or to the end of -w). 128 + a signal that
 * came meanwhile.
 */
/* A fence's connection routed elsewhere than the lock's: a role change. */
static const char fence_elsewhere_said[] = "fence: its connection reached "
    "another server than the lock's (through a proxy?): a number there fences "
    "nothing";

static int
again_on_or_err(const struct run *r, PGconn *c, const char *why)
{
	const struct opts *o = r->o;
	mono_t retry_at = deadline_in(250);
	int role, sig;

	/* Read what came last (a FATAL, or end of file) to know. */
	(void)conn_take_input(c);
	role = conn_read_only(c) || strcmp(why, lock_standby_said) == 0 ||
	    strcmp(why, fence_elsewhere_said) == 0;
	/* A run of role answers: the first sets their bound. */
	if (!role)
		role_by = NEVER;
	else if (role_by == NEVER)
		role_by = deadline_in(o->conn.connect_ms);
	/* -w: no time left for another try is none. */
	if ((!conn_cut(c) && !role) || o->conn.connect_ms == 0 ||
	    deadline_passed(o->conn.deadline_ms) || (role &&
	    o->conn.deadline_ms != NEVER && retry_at >= o->conn.deadline_ms))
		die(EXIT_UNAVAILABLE, "%s: %s", o->label, why);
	if (role && o->conn.deadline_ms == NEVER && deadline_passed(role_by))
		die(EXIT_UNAVAILABLE, "%s: %s (retried for %.1fs: "
		    "--connect-timeout)", o->label, why,
		    (double)o->conn.connect_ms / 1000.0);
	if (o->verbose)
		say("%s: %s; connecting again", o->label, why);
	if (role && (sig = pause_until(retry_at)) != 0)
		return 128 + sig;
	return RUN_AGAIN;
}

/* The lock's session failed before anything ran: again_on_or_err() of it. */
static int
again_or_err(const struct run *r, const char *why)
{
	return again_on_or_err(r, r->c, why);
}

/* What the command's shim is told of the run, and of session c. */
static void
prepare_child(const struct run *r, PGconn *c, struct child *ch)
{
	const struct opts *o = r->o;

	ch->lost_sig = o->lost_sig;
	ch->kill_after_ms = o->kill_after_ms;
	ch->notify = r->plan.hold ? o->caller : 0;
	ch->session_fd = PQsocket(c);
	ch->witness_fd = -1;	/* handed over once made: watch_or_err() */
	ch->kill_by = NEVER;
	ch->pid = -1;
	ch->gate = -1;
}

/* ---- spawn ------------------------------------------------------------- */

/* The command's environment: what it holds, for logs and fencing. */
static void
export_lock_env_or_err(const struct run *r)
{
	char pid[16];

	snprintf(pid, sizeof(pid), "%d", r->backend_pid);
	setenv_or_err("PGLOCK_KEY", r->o->key);
	setenv_or_err("PGLOCK_ID", r->id);
	setenv_or_err("PGLOCK_MODE", r->lk.shared ? "shared" : "exclusive");
	setenv_or_err("PGLOCK_SCOPE", r->lk.xact ? "transaction" : "session");
	setenv_or_err("PGLOCK_BACKEND_PID", pid);
	if (r->lk.slots > 0) {
		snprintf(pid, sizeof(pid), "%d", r->lk.slot);
		setenv_or_err("PGLOCK_SLOT", pid);
	}
}

static void
spawn_or_err(struct run *r)
{
	const struct opts *o = r->o;
	struct err why;

	/* --keep-output: the command's output through pglock, kept. */
	if (o->keep_output > 0 && r->ch.tail == NULL) {
		if (tail_open(&r->tail, o->keep_output, &why) == -1) {
			child_abort(&r->ch);
			die(EXIT_OSERR, "%s: the command was not started: %s",
			    o->label, why.msg);
		}
		r->ch.tail = &r->tail;
	}
	if (child_spawn(o->argv, &r->ch, &why) == -1) {
		child_abort(&r->ch);
		die(EXIT_OSERR, "%s: the command was not started: %s",
		    o->label, why.msg);
	}
}

static int once_queue(struct run *r, struct err *why);

/* The witness's connection options: the host the lock's session found. */
static struct conn_opts
witness_opts(const struct run *r, mono_t by)
{
	struct conn_opts co = r->o->conn;

	co.host = PQhost(r->c);
	co.port = PQport(r->c);
	co.deadline_ms = by;
	co.connect_ms = 0;
	return co;
}

/*
 * Begin the witness's connection as the lock is asked for, its handshake
 * beside the lock's round trip (conn_beside()): a holder's, granted at once,
 * finds it (nearly) open. A waiter's, not granted within 0.2 s of the ask,
 * is closed once open, and opened again after the grant. Only where the
 * look rides with the lock: not under --slots (whose wait does not advance
 * it), nor --fence (whose connection, after the grant, is the one checked
 * against the lock's server first).
 */
static void
witness_start(struct run *r)
{
	struct conn_opts co = witness_opts(r, NEVER);
	struct err why;

	/* One that cannot start (r->wo.c NULL) is opened after the grant. */
	if (r->plan.shim && r->plan.with_lock && r->wo.c == NULL)
		(void)conn_start(&co, &r->wo, &why);
}

/*
 * Take the lock: 0 once held (maybe the command forked at its gate),
 * NOT_GOT, 128 + a signal that cut the wait, or RUN_AGAIN; dies on errors.
 */
static int
acquire_or_err(struct run *r)
{
	const struct opts *o = r->o;
	enum lock_result got;
	struct err why;
	mono_t asked = mono_ms();	/* the ask: a waiter's grace from it */
	int sig = 0;

	/*
	 * While the server checks the lock, fork the command, held at its
	 * gate till the check passed; not under --fence (its environment is
	 * not complete yet) nor --once*, --record (its record is read first).
	 */
	r->lk.then = 0;
	if (r->lk.slots == 0 && lock_send(r->c, &r->lk, &why) == -1)
		return again_or_err(r, why.msg);
	/*
	 * The lock-delay's look rides with the lock, where its id is known
	 * before the server's answer; not under --fence, counted first.
	 */
	if (r->plan.with_lock) {
		key_format(&r->lk.key, r->id, sizeof(r->id));
		if (delay_queue(r->c, r->id, r->lk.shared, r->lk.lease_ms,
		    r->lk.xact, &why) == -1)
			return again_or_err(r, why.msg);
		r->lk.then = 1;
		/* And the record's read under it: one round trip for all. */
		if (o->record && once_queue(r, &why) == -1)
			return again_or_err(r, why.msg);
		r->lk.then += r->read_queued;
	}
	witness_start(r);
	if (r->plan.shim)
		prepare_child(r, r->c, &r->ch);
	conn_beside(&r->wo, asked);
	got = r->lk.slots > 0 ?
	    slots_take(r->c, &r->lk, &r->lk, &r->backend_pid, &sig, &why) :
	    lock_wait(r->c, &r->lk, &r->lk, &r->backend_pid, &sig, &why);
	/* Held: its handshake goes on while the lock's answers are read. */
	conn_beside(&r->wo, NEVER);
	if (got == LOCK_ACQUIRED) {
		key_format(&r->lk.key, r->id, sizeof(r->id));
		export_lock_env_or_err(r);
	}
	if (got == LOCK_ACQUIRED && r->lk.slots == 0) {
		if (r->plan.spawn_at_grant)
			spawn_or_err(r);
		/* ---- verify ---- */
		got = lock_verify(r->c, &r->lk, r->backend_pid, &sig, &why);
	}
	if (got != LOCK_ACQUIRED && r->plan.shim)
		child_abort(&r->ch);
	/* What rode with the lock is yet to be read, or was read away. */
	if (!conn_piped(r->c))
		r->read_queued = 0;
	/* The budget was for the wait: what follows has its own bounds. */
	r->lk.budget = NULL;
	if (r->shown)
		(void)!write(STDERR_FILENO, "\n", 1);	/* end the live line */
	switch (got) {
	case LOCK_ACQUIRED:
		return 0;
	case LOCK_BUSY:
		report_busy(r);
		return NOT_GOT;
	case LOCK_INTERRUPTED:
		if (o->verbose)
			say("%s: wait cancelled by signal %d", o->label, sig);
		return 128 + sig;
	case LOCK_UNPROVEN:
		return unproven_or_err(r);
	case LOCK_NOT_REAL:
		die(EXIT_UNAVAILABLE, "%s: the server granted the lock but "
		    "this session does not hold it: advisory locks that are "
		    "not real", o->label);
	case LOCK_ERROR:
		break;
	}
	return again_or_err(r, why.msg);
}

static void
say_acquired(const struct run *r)
{
	char slot[32] = "";

	if (r->lk.slots > 0)
		snprintf(slot, sizeof(slot), "slot %d of %d ", r->lk.slot,
		    r->lk.slots);
	say("%s: acquired %safter %.2fs (server pid %d, %s lock)", r->o->label,
	    slot, mono_seconds() - r->t0, r->backend_pid, r->lk.xact ?
	    "transaction" : "session");
}

/*
 * Allocate TENANT's next version into *v, in a transaction left open under
 * r's lock (held by server process *pid), for the caller to commit or roll
 * back. Returns 0, NOT_GOT,
 * 128 + the signal that cancelled the wait, or RUN_AGAIN (again_or_err():
 * on run's own session, cut or answered by a standby); dies on errors.
 */
static int
allocate_or_err(const struct run *run, PGconn *c, const char *tenant,
    long wait_ms, struct counter_req *r, long long *v, int *pid)
{
	const struct opts *o = run->o;
	struct err why;
	int sig = 0;

	if (counter_lock(o->table_sql, tenant, wait_ms, r) == -1)
		die_errno(EXIT_OSERR, "malloc");
	r->lock.budget = run->lk.budget;	/* NULL under a lock held */
	r->lock.lease_ms = lease_ms(o);
	r->require_sync = o->require_sync;
	switch (counter_next(c, r, v, pid, &sig, &why)) {
	case COUNTER_OK:
		return 0;
	case COUNTER_UNSAFE:
		die(EXIT_UNAVAILABLE, "%s: the server has standbys, none of them "
		    "synchronous: a failover could hand the number out again "
		    "(--require-sync)", o->label);
	case COUNTER_BUSY:
		if (!o->quiet)
			say("%s: another allocation holds the tenant's "
			    "lock", o->label);
		return NOT_GOT;
	case COUNTER_INTERRUPTED:
		return 128 + sig;
	case COUNTER_ERROR:
		/* Cut, or a standby's answer, before anything ran. */
		if (c == run->c)
			return again_or_err(run, why.msg);
		break;
	}
	die(EXIT_UNAVAILABLE, "%s: %s", o->label, why.msg);
}

/*
 * --fence: a number that grows with every acquisition of KEY, kept as a tenant
 * of its own (sharing tenant KEY's lock would let "pglock --version-counter K
 * pglock --fence K" deadlock) and committed at once. Under a transaction's
 * lock that commit would release the lock, and the open transaction keep the
 * row locked: a connection of its own, whose allocation commits only if its
 * transaction's server shows the lock (a proxy or pooler may route it to
 * another). Returns 0, RUN_AGAIN, or 128+N of a signal that came meanwhile.
 */
static int
fence_or_err(const struct run *r)
{
	const struct opts *o = r->o;
	struct counter_req cr;
	struct conn_opts co = o->conn;
	struct err why;
	char num[32], *tenant;
	size_t len = sizeof("pglock-fence:") + strlen(o->key);
	long long v;
	PGconn *fc;
	int status, seen, pid;

	if ((tenant = malloc(len)) == NULL)
		die_errno(EXIT_OSERR, "malloc");
	snprintf(tenant, len, "pglock-fence:%s", o->key);
	/* Its own connection is not bound by -w: the lock is held already. */
	co.deadline_ms = -1;
	fc = r->lk.xact ? conn_open(&co, &why) : r->c;
	if (fc == NULL)
		die(EXIT_UNAVAILABLE, "%s: fence: %s", o->label, why.msg);
	status = allocate_or_err(r, fc, tenant, -1, &cr, &v, &pid);
	free(tenant);
	if (status != 0) {
		if (fc != r->c)
			PQfinish(fc);
		return status;
	}
	/*
	 * In the allocation's transaction: the server it committed on. Another
	 * (a failover a proxy follows) is a role change: the number rolled
	 * back, lock and fence are taken again on new connections, within -w.
	 */
	if (fc != r->c && (seen = lock_seen(fc, &r->lk, r->backend_pid,
	    answer_ms(o), &why)) != 1) {
		(void)conn_end(fc, 0, answer_ms(o), &why);
		PQfinish(fc);
		if (seen == -1)
			die(EXIT_UNAVAILABLE, "%s: fence: %s", o->label,
			    why.msg);
		return again_on_or_err(r, r->c, fence_elsewhere_said);
	}
	if (conn_end(fc, 1, answer_ms(o), &why) == -1)
		die(EXIT_UNAVAILABLE, "%s: fence: %s", o->label, why.msg);
	if (fc != r->c)
		PQfinish(fc);
	snprintf(num, sizeof(num), "%lld", v);
	setenv_or_err("PGLOCK_FENCE", num);
	return 0;
}

/*
 * The record's verdict on this run (row: KEY's record, read with its slot):
 * give the command its facts; has KEY succeeded in this slot, or is the slot
 * not due yet (--after)? 1, not to run. r->slot: the slot this run counts
 * for. KEY paused (any of them): NOT_GOT, said in one line.
 */
static int
once_verdict(struct run *r, const struct runs_row *row, long long spread)
{
	const struct opts *o = r->o;
	char said[6144];

	/*
	 * A --once* run is a skip, as a slot done (cron mails nothing for
	 * the whole window); a --record run fails loudly (a deploy freeze).
	 */
	if (row->paused) {
		if (o->once ? o->verbose : !o->quiet)
			say("%s is %s%s", o->label, pause_said(row->paused_until,
			    row->paused_host, row->paused_reason, said,
			    sizeof(said)), o->once ? ": not run" : "");
		return o->once ? 1 : NOT_GOT;
	}
	setenv_or_err("PGLOCK_LAST_OK", row->last_ok);
	if (o->period_ms > 0) {
		setenv_or_err("PGLOCK_SLOT_START", row->slot_start);
		setenv_or_err("PGLOCK_SLOT_END", row->slot_end);
	}
	if (!o->once)
		return 0;
	r->slot = o->period_ms > 0 ? row->slot : 0;
	if (runs_done(row, o->period_ms)) {
		if (o->verbose)
			say("%s: succeeded %s already (at %s on %s): not run "
			    "again", o->label, o->period_ms > 0 ?
			    "in this slot" : "once", row->ok_at, row->ok_host);
		return 1;
	}
	if (o->period_ms > 0 && !row->due) {
		if (o->verbose && o->spread_s == 0)
			say("%s: not due until %s (--after): not run",
			    o->label, row->due_at);
		else if (o->verbose)
			say("%s: not due until %s (%s--spread's %llds): not "
			    "run", o->label, row->due_at, o->after_ms >= 0 ?
			    "--after, " : "", spread / 1000);
		return 1;
	}
	return 0;
}

/* KEY's record and its slot (bounded by -w too before the lock). */
static int
once_read(const struct run *r, long long spread, struct runs_row *row,
    struct err *why)
{
	const struct opts *o = r->o;
	struct runs_when w = { .period_ms = o->period_ms, .zone = o->tz,
	    .after_ms = (o->after_ms > 0 ? o->after_ms : 0) + spread };
	char *name;
	long ms = answer_ms(o);
	int rc;

	if (r->read_queued)
		return runs_read_queued(r->c, &w, deadline_in(ms), ms, row,
		    why);
	name = record_key(o, o->key);
	rc = runs_read_when(r->c, o->runs_sql, history_of(o), name, &w,
	    budget_ms(r->lk.budget, CONN_ANSWER_MS), row, why);
	free(name);
	return rc;
}

/* The same read, queued behind the lock (runs_queue_read()): 0, or -1. */
static int
once_queue(struct run *r, struct err *why)
{
	const struct opts *o = r->o;
	struct runs_when w = { .period_ms = o->period_ms, .zone = o->tz,
	    .after_ms = (o->after_ms > 0 ? o->after_ms : 0) +
	    runs_spread_ms(&r->lk.key, o->spread_s) };
	char *name = record_key(o, o->key);
	int rc;

	rc = runs_queue_read(r->c, o->runs_sql, history_of(o), name, &w,
	    r->lk.xact, why);
	free(name);
	r->read_queued = rc == 0;
	return rc;
}

/*
 * What rode with the lock and is not read (the record's read after a look
 * that found a lock-delay): read it away by by (mono_ms()), cancelled if it
 * waits, and leave pipeline mode. 0, or -1 (why) if that failed.
 */
static int
after_drop(struct run *r, mono_t by, struct err *why)
{
	if (r->read_queued && conn_pipe_discard(r->c, by, bound_left(by),
	    why) == -1)
		return -1;
	r->read_queued = 0;
	if (conn_pipe_leave(r->c) == -1) {
		conn_oneline(PQerrorMessage(r->c), why);
		return -1;
	}
	return 0;
}

/*
 * --once*, --record, lock held: read KEY's record and, in the same query, the
 * slot of the server's clock (runs_read_when()), and give its verdict (as
 * once_verdict()). r->streak: whether the table counts failures.
 */
static int
once_done_or_err(struct run *r)
{
	const struct opts *o = r->o;
	long long spread = runs_spread_ms(&r->lk.key, o->spread_s);
	struct runs_row row;
	struct err why;
	int rc;

	/* First use: no table, so no server clock read yet either. */
	rc = once_read(r, spread, &row, &why);
	if (r->read_queued) {	/* read to its sync: the pipeline's last */
		r->read_queued = 0;
		if (conn_pipe_leave(r->c) == -1 && rc != -1) {
			conn_oneline(PQerrorMessage(r->c), &why);
			rc = -1;
		}
	}
	/*
	 * A table missing: first use, or the history an earlier build did not
	 * make (a transaction's lock found both before it was taken).
	 */
	if (rc == -1 || ((row.no_table || (history_of(o) != NULL &&
	    !row.history && !row.history_denied && !row.denied &&
	    !r->lk.xact)) && (tables(r, NULL, &why) == -1 ||
	    once_read(r, spread, &row, &why) == -1)) ||
	    row.denied) {
		if (row.zone_bad)
			die(EXIT_USAGE, "--tz: %s", why.msg);
		die(EXIT_UNAVAILABLE, "%s: %s", o->label, why.msg);
	}
	if (row.no_table)	/* dropped meanwhile: no clock read */
		die(EXIT_UNAVAILABLE, "%s: table %s went away", o->label,
		    o->runs_sql);
	/* Not tried (tables()), so said here: a history this role may not make. */
	if (history_of(o) != NULL && row.history_denied && o->verbose &&
	    !r->history_said) {
		runs_history_denied(r->c, history_of(o), &why);
		say("%s: runs are recorded without a history (%s)", o->label,
		    why.msg);
	}
	r->streak = row.failures >= 0;
	r->history = row.history;
	r->ok_before = row.has_ok ? row.ok_ms : -1;
	return once_verdict(r, &row, spread);
}

/*
 * --once*, before the lock: a success in this slot is final, and a pause or a
 * slot not yet due is the operator's and the clock's, so a read of the record
 * alone (one round trip after the connection) may skip the run without the
 * lock. 1 or NOT_GOT as once_verdict(); 0: take the lock and read again under
 * it (a run may end meanwhile), as when the table is missing or the read
 * fails (the read under the lock says why). KEY's id decides --spread: not
 * read here when the server hashes KEY (this host has an estimate only).
 */
static int
once_early(struct run *r)
{
	const struct opts *o = r->o;
	long long spread = runs_spread_ms(&r->lk.key, o->spread_s);
	struct runs_row row;
	struct err why;

	if (!r->plan.read_early)
		return 0;
	if (once_read(r, spread, &row, &why) == -1) {
		if (row.zone_bad)
			die(EXIT_USAGE, "--tz: %s", why.msg);
		/* Not answered in time: its answer goes before the lock's. */
		if (PQstatus(r->c) == CONNECTION_OK && conn_settle(r->c) == -1)
			die(EXIT_UNAVAILABLE, "%s: %s", o->label, why.msg);
		return 0;
	}
	if (row.no_table || row.denied)
		return 0;
	/* A history missing is made before a transaction's lock. */
	r->table_seen = history_of(o) == NULL || row.history ||
	    row.history_denied;
	return once_verdict(r, &row, spread);
}

/* ---- watch ------------------------------------------------------------- */

/*
 * --hold: KEY, id and fence, tab-separated: the line its script waits for.
 * Not written (a closed pipe): the hold ends, 71, and the shim with it, which
 * would otherwise signal the script as if pglock had died.
 */
static void
hold_line_or_err(struct run *r)
{
	const char *fence = getenv("PGLOCK_FENCE");
	int e;

	printf("%s\t%s%s%s\n", r->o->label, r->id, r->o->fence ? "\t" : "",
	    r->o->fence ? fence : "");
	if (fflush(stdout) == EOF || ferror(stdout)) {
		e = errno;
		child_kill(&r->ch);
		errno = e;
		die_errno(EXIT_OSERR, "stdout");
	}
}

/*
 * An exec error: a COMMAND not found that looks like an option was one; a
 * word not found with words after it may be a KEY's second word, unquoted
 * ("pglock nightly backup ./backup.sh"): say how the line was read.
 */
static void
say_exec_error(const struct opts *o, const char *msg, int status)
{
	const char *word = o->argv != NULL ? o->argv[0] : "";

	if (status == EXIT_NOTFOUND && word[0] == '-')
		say("%s (options go before %s)", msg,
		    o->mode == MODE_COUNTER ? "TENANT" : "KEY");
	else if (status == EXIT_NOTFOUND && o->shell_cmd == NULL &&
	    o->argv != NULL && o->argv[1] != NULL && strchr(word, '/') == NULL)
		say("%s (read as %s '%s' and COMMAND '%s ...': quote a %s "
		    "that has a space)", msg, o->mode == MODE_COUNTER ?
		    "TENANT" : "KEY", o->label, printable(word),
		    o->mode == MODE_COUNTER ? "TENANT" : "KEY");
	else
		say("%s", msg);
}

/* -F: the command replaces pglock, and the socket stays open in it. */
static int
exec_or_err(const struct run *r)
{
	int fl = fcntl(PQsocket(r->c), F_GETFD), status = 0;
	struct err why;

	if (fl == -1 || fcntl(PQsocket(r->c), F_SETFD, fl & ~FD_CLOEXEC) == -1)
		die_errno(EXIT_OSERR, "fcntl");
	child_exec(r->o->argv, &status, &why);
	say_exec_error(r->o, why.msg, status);
	return status;
}

/* The watch's end other than an exit: say so, and exit or return. */
static void
lost_history(const struct run *r);

static int
watch_ended_or_err(const struct run *r, enum child_end end, const char *why)
{
	const struct opts *o = r->o;
	int told;

	/*
	 * A hold's script must not go on as if it still held the lock, nor
	 * the step it runs: child_wait() told it, and its group if it leads
	 * one, before it stopped the hold.
	 */
	told = r->ch.told;
	switch (end) {
	case CHILD_EXITED:
		break;
	case CHILD_LATE:
		if (!o->quiet)
			say("%s: the %s ran past --max-time %.3gs: stopped",
			    o->label, o->argv != NULL ? "command" : "hold",
			    (double)o->max_ms / 1000.0);
		return EXIT_TIMEOUT;
	case CHILD_LOST:
		if (r->plan.hold && told)
			die(EXIT_LOST, "%s: lock lost while held (%s); sent "
			    "signal %d to pid %ld", o->label, why, o->lost_sig,
			    (long)o->caller);
		if (r->plan.hold)
			die(EXIT_LOST, "%s: lock lost while held (%s); the "
			    "script that started pglock is gone", o->label, why);
		if (o->record)
			lost_history(r);
		die(EXIT_LOST, "%s: lock lost while the command ran (%s); "
		    "the command %s", o->label, why, r->ch.stopped ?
		    "was stopped" : "had exited already");
	case CHILD_FAILED:
		die(EXIT_OSERR, "%s", why);
	}
	return -1;
}

/* -v: the command exited, and what it started is waited for. */
static void
say_waiting(void *arg, int n)
{
	const struct run *r = arg;

	say("%s: the command exited; waiting for %d process%s it started",
	    r->o->label, n, n == 1 ? "" : "es");
}

/*
 * A transaction's lock over TCP on a path that passes the session through
 * (libpq's backend pid is the lock's server process: a TCP proxy, not a
 * pooler) is renewed aside where the server has synchronous standbys
 * (lease.h); into a, or NULL. Not over a Unix socket: no proxy there.
 */
static const struct lease_aside *
aside_of(const struct run *r, struct lease_aside *a)
{
	struct conn_ends e;

	if (!r->lk.xact || PQbackendPID(r->c) != r->backend_pid ||
	    conn_ends(r->c, 1, &e) == -1)
		return NULL;
	a->conn = &r->o->conn;
	a->pid = r->backend_pid;
	return a;
}

/* The lock was lost (why) before the command or the hold began: exits 75. */
static void
lost_before_or_err(struct run *r, const char *why)
{
	const struct opts *o = r->o;

	child_abort(&r->ch);
	if (r->plan.hold)
		die(EXIT_LOST, "%s: lock lost before the hold began (%s)",
		    o->label, why);
	die(EXIT_LOST, "%s: lock lost before the command started (%s); the "
	    "command did not run", o->label, why);
}

/*
 * The gate opens only on a lease that leaves the command its time: a grant
 * read late (pglock stopped, a slow answer) or a slow read of pglock's
 * tables is checked again first. Lost: exits 75, the command unrun.
 */
static void
fresh_or_err(struct run *r, const struct lease_aside *aside)
{
	struct err why;

	if (!lease_fresh(r->c, &r->lk, aside, r->o->check_ms, &r->since, &why))
		lost_before_or_err(r, why.msg);
}

/*
 * Run the command under r->lk (its lease from r->since), watching for its
 * loss; the command may be at its gate already. Returns the command's
 * status; exits 75 on a loss.
 */
static int
watch_or_err(struct run *r)
{
	const struct opts *o = r->o;
	struct lease_check check;
	struct lease_aside a;
	const struct lease_aside *aside;
	struct child_watch w = { .fd = PQsocket(r->c), .step = lease_step,
	    .finish = lease_finish, .arg = &check, .max_ms = o->max_ms,
	    .waiting = o->verbose ? say_waiting : NULL, .waiting_arg = r };
	enum child_end end;
	struct err why;
	int status = 0;

	if (!r->plan.shim)
		return exec_or_err(r);
	/* Once: the gate's check and the lease's checks renew alike. */
	aside = aside_of(r, &a);
	fresh_or_err(r, aside);
	if (r->ch.pid == -1)
		spawn_or_err(r);
	lease_start(&check, r->c, &r->lk, aside, o->check_ms, r->since);
	r->ch.kill_by = lease_end(&check);
	/* Kept by the shim too: a SIGKILL of pglock keeps the delay. */
	r->ch.witness_fd = r->w != NULL ? PQsocket(r->w) : -1;
	switch (child_open_gate(&r->ch, o->argv != NULL ? o->argv[0] :
	    "--hold", &status, &why)) {
	case CHILD_STARTED:
		/* The shim is armed: a SIGKILL now tells the script. */
		if (r->plan.hold)
			hold_line_or_err(r);
		break;
	case CHILD_NOEXEC:
		say_exec_error(o, why.msg, status);
		return status;
	case CHILD_OSERR:
		die(EXIT_OSERR, "%s: the command was not started: %s", o->label,
		    why.msg);
	}
	end = child_wait(&r->ch, &w, &status, &why);
	return end == CHILD_EXITED ? status :
	    watch_ended_or_err(r, end, why.msg);
}

/* ---- record ------------------------------------------------------------ */

/*
 * A success's record (or the commit that makes it) was sent and its answer
 * lost (why): ask a new session whether it landed, and return if it did; else
 * it may be done or not, which no "not done" may hide: exit 75, saying so.
 */
static void
landed_or_err(const struct run *r, const char *why)
{
	const struct opts *o = r->o;
	char *name = record_key(o, o->key);
	struct runs_outcome out = { .key = name, .slot = r->slot,
	    .seconds = r->ran_s, .node = o->node };
	struct conn_opts co = o->conn;
	struct err how;
	int rc;

	co.deadline_ms = -1;	/* -w was for the wait */
	rc = runs_landed(&co, o->runs_sql, &out, r->ok_before, &how);
	free(name);
	if (rc == 1) {
		if (!o->quiet)
			say("%s: the answer to the success's record was lost "
			    "(%s); a new session finds it recorded", o->label,
			    why);
		return;
	}
	if (rc == 0)
		die(EXIT_LOST, "%s: the command succeeded, but the answer to "
		    "its record was lost (%s) and a new session does not find "
		    "it: the outcome is unknown (the record may still land)",
		    o->label, why);
	die(EXIT_LOST, "%s: the command succeeded, but the answer to its "
	    "record was lost (%s) and a new session could not look (%s): the "
	    "outcome is unknown", o->label, why, how.msg);
}

/*
 * A run whose lock was lost has no record to write (its key's next holder may
 * be running), but a row in its history: 75, on a session of its own, one
 * try, within a reply's bound. What fails is said under -v alone: the exit
 * says what counts.
 */
static void
lost_history(const struct run *r)
{
	const struct opts *o = r->o;
	char *name = record_key(o, o->key);
	struct runs_outcome out = { .key = name, .id = r->id,
	    .status = EXIT_LOST, .seconds = mono_seconds() - r->ran_at,
	    .slot = r->slot, .node = o->node, .history = history_of(o),
	    .keep = o->keep_history };
	struct conn_opts co = o->conn;
	long ms = answer_ms(o);
	struct err why;
	PGresult *res = NULL;
	PGconn *c;
	int rc = -1;

	if (r->ch.tail != NULL)
		out.output = tail_kept(r->ch.tail, &out.output_len);
	co.connect_ms = 0;
	co.deadline_ms = deadline_in(ms);
	co.retrying = NULL;
	if (out.history != NULL && r->history &&
	    (c = conn_open(&co, &why)) != NULL) {
		if (runs_queue_history(c, &out, &why) == 0 &&
		    conn_sync(c) == 0 && (res = conn_pipe_result(c,
		    co.deadline_ms, ms, &why)) != NULL)
			rc = runs_written(res, &why);
		PQclear(res);
		PQfinish(c);
	}
	if (rc == -1 && r->history && o->verbose)
		say("%s: the lost run is not in the history (%s)", o->label,
		    why.msg);
	free(name);
}

/* What the record's write and the release it rides with were answered. */
struct ending {
	int wrote;		/* 0, written; -1, refused; RUNS_UNCONFIRMED */
	int released;		/* 0, or -1: not shown released */
	int release_lost;	/* the release's answer never came */
	struct err write_why, release_why;
};

/*
 * Record KEY's outcome (status, after seconds; a success counts for r->slot)
 * and release the lock, in one round trip: the write; its commit (a sync, or
 * the lock's transaction's COMMIT, which is the release); the release; a sync.
 * The record lands before the lock goes. What was answered goes into e.
 */
static void
record_release(struct run *r, int status, double seconds, struct ending *e)
{
	const struct opts *o = r->o;
	char *name = record_key(o, o->key);
	struct runs_outcome out = { .key = name, .id = r->id, .status = status,
	    .seconds = seconds, .slot = r->slot, .streak = r->streak,
	    .node = o->node, .history = r->history ? history_of(o) : NULL,
	    .keep = o->keep_history };
	long ms = answer_ms(o);
	mono_t by;
	struct err late;
	PGresult *res;
	int rc;

	*e = (struct ending){ .wrote = -1, .released = -1, .release_lost = 1 };
	/* A failure's output: what the morning after asks for. */
	if (r->ch.tail != NULL && (status != 0 || o->keep_output_always))
		out.output = tail_kept(r->ch.tail, &out.output_len);
	r->ran_s = seconds;
	rc = runs_queue_write(r->c, o->runs_sql, &out, &e->write_why);
	free(name);
	e->release_why = e->write_why;
	if (rc == -1)
		return;		/* nothing sent; the session goes with pglock */
	e->wrote = RUNS_UNCONFIRMED;
	if ((!r->lk.xact && conn_sync(r->c) == -1) || lock_queue_release(r->c,
	    &r->lk, &e->release_why) == -1 || conn_sync(r->c) == -1) {
		conn_reason(r->c, &e->write_why);
		e->release_why = e->write_why;
		return;
	}
	by = deadline_in(ms);
	if ((res = conn_pipe_result(r->c, by, ms, &e->write_why)) == NULL) {
		e->release_why = e->write_why;
		return;
	}
	if ((e->wrote = runs_written(res, &e->write_why)) == -1)
		runs_grant_hint(r->c, res, o->runs_sql, out.history,
		    &e->write_why);
	PQclear(res);
	/* A session's write commits at its own sync: done is its answer. */
	if (!r->lk.xact &&
	    (res = conn_pipe_result(r->c, by, ms, &e->release_why)) == NULL) {
		if (e->wrote == 0) {
			e->wrote = RUNS_UNCONFIRMED;
			e->write_why = e->release_why;
		}
		return;
	}
	if (!r->lk.xact)
		PQclear(res);
	if ((res = conn_pipe_result(r->c, by, ms, &e->release_why)) == NULL)
		return;
	e->release_lost = 0;
	e->released = lock_released(res, &r->lk, &e->release_why);
	PQclear(res);
	/* The sync that ends the pipeline (the release said what counts). */
	if ((res = conn_pipe_result(r->c, by, ms, &late)) != NULL)
		(void)conn_pipe_leave(r->c);
	PQclear(res);
}

/*
 * Record and release (record_release()), and act on the answers. A success
 * refused counts as not done (exit 75); one unanswered, or whose commit went
 * unanswered, is looked for on a new session (1: it landed, the session is
 * gone). A failure not recorded is said; a transaction it ended is rolled
 * back (1). A release not shown exits 75. 0: recorded and released.
 */
static int
record_release_or_err(struct run *r, int status, double seconds)
{
	const struct opts *o = r->o;
	struct ending e;
	struct err why;

	record_release(r, status, seconds, &e);
	if (status == 0 && (e.wrote == RUNS_UNCONFIRMED || (r->lk.xact &&
	    e.wrote == 0 && e.release_lost))) {
		landed_or_err(r, e.wrote == 0 ? e.release_why.msg :
		    e.write_why.msg);
		return 1;
	}
	if (status == 0 && e.wrote == -1)
		die(EXIT_LOST, "%s: the command succeeded, but its success "
		    "could not be recorded (%s): it counts as not done",
		    o->label, e.write_why.msg);
	if (e.wrote != 0)
		say("%s: the command's failure could not be recorded (%s)",
		    o->label, e.write_why.msg);
	/* In the lock's transaction, it ended that: roll it back. */
	if (e.wrote != 0 && r->lk.xact) {
		(void)conn_end(r->c, 0, answer_ms(o), &why);
		return 1;
	}
	if (e.released == -1)
		die(EXIT_LOST, "%s: the release does not show the lock held to "
		    "the end: it may have been lost (%s)", o->label,
		    e.release_why.msg);
	return 0;
}

/* ---- delay ------------------------------------------------------------- */

/* Sleep until t (mono_ms()) unless a signal to forward comes: 0, or it. */
static int
pause_until(mono_t t)
{
	struct pollfd p = { .fd = sig_fd(), .events = POLLIN };
	int sig;

	while (!deadline_passed(t)) {
		if (poll(&p, 1, poll_ms(t)) < 1)
			continue;
		while ((sig = sig_take()) != 0)
			if (sig_forwarded(sig))
				return sig;
	}
	return 0;
}

/* The lock is in its lock-delay (why) to the end of -w, or -n: NOT_GOT. */
static int
in_delay(struct run *r, const char *why)
{
	const struct opts *o = r->o;

	if (r->plan.shim)
		child_abort(&r->ch);
	if (!o->quiet)
		say("%s: the lock is in its lock-delay (%s)%s", o->label, why,
		    o->lock.wait_ms == 0 ? "" : ", to the end of -w");
	return NOT_GOT;
}

/* Why the lock-delay waits, and how much longer (left ms, unless broken). */
static void
say_delay(const struct opts *o, const struct delay_look *look, int64_t left)
{
	if (look->broken)
		say("%s: lock-delay: %s; waiting", o->label, look->why);
	else
		say("%s: lock-delay: %s; waiting %.1fs more, to the end of the "
		    "lease of --check-interval %.3gs (%.3gs)", o->label,
		    look->why, (double)left / 1000.0,
		    (double)o->check_ms / 1000.0,
		    (double)lease_of(o->check_ms).server_ms / 1000.0);
}

/* A look's bound from t: a check's, and -w's, but always given a second. */
static mono_t
look_by(const struct opts *o, mono_t t)
{
	mono_t by = mono_after(t, answer_ms(o)), second = mono_after(t, 1000);

	if (o->lock.wait_ms > 0 && by > o->conn.deadline_ms)
		by = o->conn.deadline_ms > second ? o->conn.deadline_ms : second;
	return by;
}

/*
 * The lock-delay (lib/delay.h), after the grant, before the gate: a lock the
 * server freed early may have had a holder whose command runs on to its
 * lease's end, that of this run's --check-interval; an ended holder's
 * witness, or a --break, keeps it while the old command is stopped, waited
 * for as long (a frozen old holder keeps its witness). Wait it out, looking
 * again at least every second (a transaction's lock must not idle), within
 * -w, as the wait for the lock; the lease then runs from the last look,
 * answered while holding the lock. A look is answered within a check's bound
 * and -w's, but always given a second: -w may end as the grant comes. 0,
 * NOT_GOT, 128 + a signal or RUN_AGAIN.
 */
static int
delay_or_err(struct run *r)
{
	const struct opts *o = r->o;
	long lease = lease_of(o->check_ms).server_ms;
	mono_t until = 0, kept = NEVER, cap = NEVER, sent, t, by;
	struct delay_look look;
	struct err why;
	int rc, said = 0, sig;

	for (;;) {
		t = mono_ms();
		/* The first look may have been sent with the lock. */
		sent = conn_piped(r->c) ? r->since : t;
		by = look_by(o, t);
		rc = delay_look(r->c, r->id, r->lk.shared, lease,
		    r->lk.lease_ms, in_xact(r), (long)mono_left(by, t), &look,
		    &why);
		/*
		 * The record's read queued with the lock waits, if no delay.
		 * A look that failed leaves the connection to again_or_err().
		 */
		if (rc != -1 && conn_piped(r->c) && (rc != 0 || look.broken ||
		    look.wait_ms > 0 || !r->read_queued) &&
		    after_drop(r, by, &why) == -1)
			rc = -1;
		if (rc == -3)
			continue;	/* not allowed pg_control: without */
		if (rc != 0 && r->plan.shim)
			child_abort(&r->ch);
		if (rc == -2)
			return RUN_AGAIN;	/* nothing ran: ask again */
		if (rc == -1)
			return again_or_err(r, why.msg);
		t = mono_ms();
		/* Every event seen was before the first look: S from it. */
		if (cap == NEVER)
			cap = mono_after(t, lease);
		if (look.wait_ms > 0 && mono_after(t, look.wait_ms) > until)
			until = mono_min(mono_after(t, look.wait_ms), cap);
		if (look.broken && kept == NEVER)
			kept = mono_after(t, lease);
		if ((!look.broken || t >= kept) && t >= until) {
			if (sent > r->since)
				r->since = sent;
			return 0;
		}
		if (look.broken)
			snprintf(look.why, sizeof(look.why), "a --break, or an "
			    "ended holder's witness, keeps it while the old "
			    "command is stopped");
		if (o->lock.wait_ms == 0 ||
		    (o->lock.wait_ms > 0 && t >= o->conn.deadline_ms))
			return in_delay(r, look.why);
		/* Said on a terminal too, as a connect retry is: no silence. */
		if (!said && (o->verbose || (!o->quiet &&
		    isatty(STDERR_FILENO))))
			say_delay(o, &look, mono_left(until, t));
		said = 1;
		/* Looked at again: a transaction's lock must not idle. */
		by = look.broken ? mono_after(t, 250) : mono_min(until,
		    mono_after(t, 1000));
		if (o->lock.wait_ms > 0)
			by = mono_min(by, o->conn.deadline_ms);
		if ((sig = pause_until(by)) != 0) {
			if (r->plan.shim)
				child_abort(&r->ch);
			if (o->verbose)
				say("%s: wait cancelled by signal %d", o->label,
				    sig);
			return 128 + sig;
		}
		/* -w is over: no look for it (the delay was on at the last). */
		if (o->lock.wait_ms > 0 && deadline_passed(o->conn.deadline_ms) &&
		    (look.broken || !deadline_passed(until)))
			return in_delay(r, look.why);
	}
}

/*
 * The witness (lib/delay.h), before the gate: a session of its own keeps the
 * lock-delay while the command lives, so that a lock its session loses early
 * (pg_terminate_backend(), --break) keeps the next holder waiting until all
 * of the command is gone. Its server is the lock's (of a host list, the one
 * the lock's session found); not under -F (nobody stays to let it go). One
 * try, answered within the lease's A: a server, role or pool with no session
 * to spare (waiters hold them all, in a storm) has the command run without,
 * saying so. Once it keeps the delay, it checks that the lock is still this
 * run's: a lock lost before is one no look could see kept, and the command
 * must not start (75). 0; RUN_AGAIN (again_on_or_err()) if a restart cut
 * it, nothing having run.
 */
static int
witness_or_err(struct run *r)
{
	const struct opts *o = r->o;
	struct err why;
	char msg[sizeof(why.msg) + 32];
	mono_t by = deadline_in(lease_of(o->check_ms).answer_ms);
	struct conn_opts co = witness_opts(r, by);
	int status = 0, rc = -1;

	/* Begun beside the lock; else, or if that try failed, one now. */
	if (r->wo.c != NULL)
		r->w = conn_finish(&r->wo, by, &why);
	if (r->w == NULL)
		r->w = conn_open(&co, &why);
	if (r->w != NULL) {
		rc = delay_witness(r->w, &r->lk.key, r->backend_pid,
		    r->lk.shared, in_xact(r), r->lk.lease_ms, bound_left(by),
		    &why);
	}
	if (rc == 0)
		return 0;
	if (rc == -2) {
		/* Why, as the lock's session says it, if it says. */
		if (conn_take_input(r->c) == -1)
			conn_reason(r->c, &why);
		lost_before_or_err(r, why.msg);
	}
	snprintf(msg, sizeof(msg), "the witness's session: %s", why.msg);
	if (r->w != NULL && conn_cut(r->w)) {
		child_abort(&r->ch);
		status = again_on_or_err(r, r->w, msg);
	} else if (!o->quiet) {
		say("%s: no witness: the lock-delay will not cover an early "
		    "end of its session (%s)", o->label, why.msg);
	}
	PQfinish(r->w);
	r->w = NULL;
	return status;
}

/*
 * Let the witness go, all of the command gone, before the lock: the next
 * holder finds it gone. One that does not answer is closed all the same.
 */
static void
witness_end(struct run *r)
{
	struct err why;

	if (r->w == NULL)
		return;
	(void)delay_witness_end(r->w, in_xact(r), answer_ms(r->o), &why);
	PQfinish(r->w);
	r->w = NULL;
}

/* ---- the run ----------------------------------------------------------- */

/* Up to the lock held, and --fence: 0, or as acquire_or_err(). */
static int
take_or_err(struct run *r)
{
	const struct opts *o = r->o;
	struct err why;
	char who[512];
	int status;

	if ((status = choose_scope(r)) != 0)
		return status;
	/*
	 * The record's table before the lock: a transaction's lock cannot
	 * create it in its own transaction. Under a session's lock, the read
	 * under it creates it only when it finds it missing: a round trip
	 * saved. Under prove, the lock may yet be a transaction's (not under
	 * --scope session).
	 */
	if (o->record && !r->table_seen && (r->lk.xact || (r->lk.prove &&
	    !r->lk.prove_only)) && tables(r, r->lk.budget, &why) == -1)
		die(EXIT_UNAVAILABLE, "%s: %s", o->label, why.msg);
	if (o->verbose && r->lk.wait_ms != 0 &&
	    *holder(r->c, &r->lk, who, sizeof(who)) != '\0')
		say("%s: held by %s; waiting", o->label, who);
	r->t0 = mono_seconds();
	if (o->verbose && r->lk.wait_ms != 0 && isatty(STDERR_FILENO)) {
		r->lk.waiting = show_waiting;
		r->lk.waiting_arg = r;
	}
	/*
	 * The lease runs from the lock's sending: the server's idle clock,
	 * which ends a silent session, cannot have started before it.
	 */
	r->since = mono_ms();
	if ((status = acquire_or_err(r)) != 0)
		return status;
	if (o->verbose)
		say_acquired(r);
	if (o->fence && (status = fence_or_err(r)) != 0) {
		if (r->plan.shim)
			child_abort(&r->ch);
		return status;
	}
	role_by = NEVER;	/* all taken: the next role answer starts anew */
	return 0;
}

/*
 * Is standard input empty as the hold begins: /dev/null (a script's "pglock
 * --hold KEY &" gets it), a regular file read to its end, or a pipe its writer
 * closed with nothing in it ("true | pglock --hold KEY")? A hold there ends at
 * once. A pipe still open is not: its writer ends the hold by closing it.
 */
static int
stdin_empty(void)
{
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	struct stat in, null;

	if (fstat(STDIN_FILENO, &in) == -1)
		return 0;
	if (S_ISCHR(in.st_mode))
		return stat("/dev/null", &null) == 0 &&
		    in.st_rdev == null.st_rdev;
	/* Hung up with nothing to read: POLLIN too if anything is left. */
	if (S_ISFIFO(in.st_mode))
		return poll(&p, 1, 0) == 1 && p.revents == POLLHUP;
	return S_ISREG(in.st_mode) &&
	    lseek(STDIN_FILENO, 0, SEEK_CUR) >= in.st_size;
}

static int lock_run(struct run *r);

int
run_lock(const struct opts *o, PGconn *c)
{
	struct run r = { .o = o, .plan = plan_of(o), .c = c, .lk = o->lock,
	    .ch = CHILD_NONE, .slot = -1, .ok_before = -1 };
	int status = lock_run(&r);

	/* A witness begun beside a lock that ended up not used. */
	conn_beside(NULL, NEVER);
	PQfinish(r.wo.c);
	if (r.ch.tail != NULL)
		tail_close(r.ch.tail);
	return status;
}

static int
lock_run(struct run *r)
{
	const struct opts *o = r->o;
	PGconn *c = r->c;
	struct err why;
	double ran;
	int status, released = 0, no_input = 0;

	/* Nothing to run (done, not due, paused): no lock taken. */
	if ((status = once_early(r)) != 0)
		return status == NOT_GOT ? o->conflict_exit : 0;
	r->lk.wait_ms = wait_left(o);
	r->lk.lease_ms = lease_ms(o);
	if ((status = take_or_err(r)) != 0 ||
	    (status = delay_or_err(r)) != 0)
		return step_exit(o, status);
	/*
	 * Read under the lock: a run ending meanwhile counts. An answered read
	 * renewed the session (an expired one ends): the lease runs from it.
	 */
	if (o->record && !r->read_queued)
		r->since = mono_ms();
	if (o->record && (status = once_done_or_err(r)) != 0) {
		child_abort(&r->ch);
		status = status == NOT_GOT ? o->conflict_exit : 0;
	} else {
		/* As the hold begins: a pipe's writer may have closed it. */
		no_input = r->plan.hold && stdin_empty();
		if (r->plan.shim && (status = witness_or_err(r)) != 0)
			return status;
		ran = r->ran_at = mono_seconds();
		status = watch_or_err(r);
		if (!r->plan.shim)
			return status;
		witness_end(r);
		/* A hold ends at end of input, or when told to (TERM, INT). */
		if (r->plan.hold && (status == 128 + SIGTERM ||
		    status == 128 + SIGINT))
			status = 0;
		/*
		 * The record, then the release, in one round trip. A success
		 * found landed after its answer was lost: the session, cut or
		 * busy, is of no more use (main() closes it, which releases
		 * the lock); so is a transaction a failed write rolled back.
		 */
		if (o->record && record_release_or_err(r, status,
		    mono_seconds() - ran) == 1)
			return status;
		released = o->record;
	}
	/* ---- release ---- */
	if (!released && lock_release(c, &r->lk, answer_ms(o), &why) == -1)
		die(EXIT_LOST, "%s: the release does not show the lock held to "
		    "the end: it may have been lost (%s)", o->label, why.msg);
	if (o->verbose)
		say("%s: released after %.2fs", o->label,
		    mono_seconds() - r->t0);
	if (no_input && status == 0 && !o->quiet)
		say("%s: the hold ended with its standard input, which was "
		    "empty (see EXAMPLES in pglock(1) for a hold across a "
		    "script's steps)", o->label);
	return status;
}

/* --version-counter --peek TENANT: the last version, taking nothing. */
static int
peek_or_err(const struct opts *o, PGconn *c)
{
	struct err why;
	long long v;

	if (counter_peek(c, o->table_sql, o->key, &v, &why) == -1)
		die(EXIT_UNAVAILABLE, "%s: %s", o->label, why.msg);
	if (o->json) {
		printf("{\"tenant\": ");
		json_str(o->key);
		printf(", \"version\": %lld}\n", v);
	} else {
		printf("%lld\n", v);
	}
	flush_stdout_or_err();
	return 0;
}

int
run_counter(const struct opts *o, PGconn *c)
{
	struct counter_req cr;
	struct run r = { .o = o, .plan = plan_of(o), .c = c, .ch = CHILD_NONE,
	    .lk = { .budget = o->lock.budget } };
	struct err why;
	char num[32];
	long long v;
	int status;

	if (o->peek)
		return peek_or_err(o, c);
	r.since = mono_ms();	/* as run_lock(): the lock's sending */
	if ((status = allocate_or_err(&r, c, o->key, wait_left(o), &cr,
	    &v, &r.backend_pid)) != 0)
		return step_exit(o, status);
	role_by = NEVER;	/* the next role answer starts anew */
	if (o->argv == NULL) {
		/* Print first: a number nobody saw must not be committed. */
		printf("%lld\n", v);
		if (fflush(stdout) == EOF || ferror(stdout)) {
			int e = errno;

			(void)conn_end(c, 0, answer_ms(o), &why);
			errno = e;
			die_errno(EXIT_OSERR, "stdout: version %lld rolled back", v);
		}
	} else {
		r.lk = cr.lock;
		r.lk.budget = NULL;
		key_format(&r.lk.key, r.id, sizeof(r.id));
		snprintf(num, sizeof(num), "%lld", v);
		setenv_or_err("PGLOCK_VERSION", num);
		setenv_or_err("PGLOCK_TENANT", o->key);
		prepare_child(&r, c, &r.ch);
		/* As run_lock(): an earlier holder's command may still run. */
		if ((status = delay_or_err(&r)) != 0 ||
		    (status = witness_or_err(&r)) != 0) {
			(void)conn_end(c, 0, answer_ms(o), &why);
			return step_exit(o, status);
		}
		status = watch_or_err(&r);
		witness_end(&r);
	}
	/* A failed command consumes no number. */
	if (conn_end(c, status == 0, answer_ms(o), &why) == -1 && status == 0)
		die(EXIT_LOST, "%s: the commit of version %lld is not "
		    "confirmed (%s): check with --peek", o->label, v, why.msg);
	return status;
}
