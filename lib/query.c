/* SPDX-License-Identifier: ISC */
/*
 * query: the one room that sends queries and reads their answers, single
 * statements and pipelines, each read bounded in time, cancelled when it
 * must be; lock, slots, counter, runs, delay and table keep only their SQL
 * and their rows.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "query.h"
#include "said.h"
#include "sig.h"

int
conn_queue(PGconn *c, const char *sql, int n, const char *const *params)
{
	return PQenterPipelineMode(c) &&
	    PQsendQueryParams(c, sql, n, NULL, params, NULL, NULL, 0) ? 0 : -1;
}

int
conn_queue_text(PGconn *c, const char *sql, int n, const char *const *params)
{
	static const Oid text[8] = { 25, 25, 25, 25, 25, 25, 25, 25 };

	return n <= 8 && PQenterPipelineMode(c) &&
	    PQsendQueryParams(c, sql, n, text, params, NULL, NULL, 0) ? 0 : -1;
}

int
conn_pipe_begin(PGconn *c)
{
	return PQenterPipelineMode(c) ? 0 : -1;
}

int
conn_sync(PGconn *c)
{
	return PQpipelineSync(c) ? 0 : -1;
}

int
conn_flush(PGconn *c)
{
	return PQsendFlushRequest(c) ? 0 : -1;
}

int
conn_pipe_leave(PGconn *c)
{
	return PQexitPipelineMode(c) ? 0 : -1;
}

int
conn_take_input(PGconn *c)
{
	/* PQisBusy parses what came, such as a FATAL notice. */
	if (!PQconsumeInput(c)) {
		(void)PQisBusy(c);
		return -1;
	}
	return PQisBusy(c);
}

PGresult *
conn_result_by(PGconn *c, mono_t by, enum conn_ready *ready)
{
	*ready = conn_await(c, by);
	return *ready == CONN_READY ? PQgetResult(c) : NULL;
}

PGresult *
conn_exec(PGconn *c, const char *sql, const char *const *params, long ms,
    struct err *err)
{
	PGresult *res = NULL, *next;
	mono_t by = deadline_in(ms);
	int n = 0;

	while (params != NULL && params[n] != NULL)
		n++;
	/* Left in a pipeline or busy (a query not read to its end): not now. */
	if (PQpipelineStatus(c) != PQ_PIPELINE_OFF || PQisBusy(c)) {
		err_set(err, "the connection is still busy with an "
		    "earlier query");
		return NULL;
	}
	if (!PQsendQueryParams(c, sql, n, NULL, params, NULL, NULL, 0)) {
		conn_reason(c, err);
		return NULL;
	}
	/* Each result, and the end after them, may come later: await each. */
	for (;;) {
		switch (conn_await(c, by)) {
		case CONN_LATE:
			err_set(err, "the server did not answer within "
			    "%ld s", (ms + 999) / 1000);
			PQclear(res);
			return NULL;
		case CONN_BROKEN:
			conn_reason(c, err);
			PQclear(res);
			return NULL;
		case CONN_READY:
			break;
		}
		if ((next = PQgetResult(c)) == NULL)
			break;
		if (res == NULL)
			res = next;
		else
			PQclear(next);
	}
	if (res == NULL)
		conn_reason(c, err);
	return res;
}

/* Did the server end the session with res (FATAL, PANIC), answering nothing? */
static int
ends_session(const PGresult *res)
{
	const char *sev = PQresultErrorField(res,
	    PG_DIAG_SEVERITY_NONLOCALIZED);

	return sev != NULL && (strcmp(sev, "FATAL") == 0 ||
	    strcmp(sev, "PANIC") == 0);
}

int
conn_settle(PGconn *c)
{
	PGresult *res;
	mono_t by = deadline_in(2000);

	if (PQstatus(c) != CONNECTION_OK)
		return -1;
	if (!PQisBusy(c))
		return 0;
	conn_cancel(c);
	for (;;) {
		if (conn_await(c, by) != CONN_READY)
			return -1;
		if ((res = PQgetResult(c)) == NULL)
			break;
		PQclear(res);
	}
	return PQstatus(c) == CONNECTION_OK ? 0 : -1;
}

PGresult *
conn_pipe_result(PGconn *c, mono_t by, long ms, struct err *err)
{
	PGresult *res = NULL, *next;
	enum conn_ready ready;
	int ends = 0;

	for (;;) {
		next = conn_result_by(c, by, &ready);
		if (ready == CONN_LATE) {
			err_set(err, "the server did not answer within "
			    "%ld s", (ms + 999) / 1000);
			break;
		}
		if (ready == CONN_BROKEN || (next == NULL &&
		    PQstatus(c) == CONNECTION_BAD)) {
			PQclear(next);
			conn_reason(c, err);
			break;
		}
		if (next == NULL && res != NULL && ends_session(res)) {
			conn_result_error(res, err);
			break;
		}
		if (next == NULL) {
			if (res != NULL)
				return res;	/* the statement's end */
			/* A statement's end read before: one, then none due. */
			if (ends++ == 0)
				continue;
			err_set(err, "no answer is due");
			break;
		}
		if (res == NULL && PQresultStatus(next) == PGRES_PIPELINE_SYNC)
			return next;
		if (res == NULL)
			res = next;
		else
			PQclear(next);
	}
	PQclear(res);
	return NULL;
}

int
conn_pipe_discard(PGconn *c, mono_t by, long ms, struct err *err)
{
	mono_t quick = mono_min(by, deadline_in(CONN_DISCARD_MS));

	if (conn_pipe_skip(c, quick, ms, err) == 0)
		return 0;
	if (PQstatus(c) != CONNECTION_OK || deadline_passed(by))
		return -1;
	conn_cancel(c);		/* waiting: a table locked */
	return conn_pipe_skip(c, by, ms, err);
}

int
conn_pipe_skip(PGconn *c, mono_t by, long ms, struct err *err)
{
	PGresult *res;
	int synced;

	do {
		if ((res = conn_pipe_result(c, by, ms, err)) == NULL)
			return -1;
		synced = PQresultStatus(res) == PGRES_PIPELINE_SYNC;
		PQclear(res);
	} while (!synced);
	return 0;
}

int
conn_end(PGconn *c, int commit, long ms, struct err *err)
{
	const char *what = commit ? "COMMIT" : "ROLLBACK";
	PGresult *res = conn_exec(c, what, NULL, ms, err);
	int rc = -1;

	/* COMMIT of a failed transaction answers ROLLBACK, not an error. */
	if (res == NULL)
		return -1;
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		conn_result_error(res, err);
	else if (strcmp(PQcmdStatus(res), what) != 0)
		err_set(err, "the transaction was rolled back");
	else
		rc = 0;
	PQclear(res);
	return rc;
}

struct budget
budget_of(mono_t by, long ms)
{
	struct budget b = { .by = by, .ms = ms, .over = 0 };

	return b;
}

long
budget_ms(const struct budget *b, long ms)
{
	long left;

	if (b == NULL || b->by == NEVER || b->over)
		return ms;
	left = bound_left(b->by);
	return left < ms ? left : ms;
}
/* What ended a conn_wait(). */
enum conn_event {
	EV_READY,		/* a result can be read without blocking */
	EV_SIGNAL,		/* a signal to forward came (in *sig) */
	EV_BROKEN,		/* the connection failed */
	EV_TICK,		/* tick_ms passed */
	EV_DEADLINE		/* by came */
};

/*
 * The connection conn_beside() named: advanced by every wait for an answer.
 * A waiter's is closed once open and the answer is still awaited by
 * beside_close: a lock granted at once but answered late (a loaded machine)
 * keeps it, and is not opened again after the grant.
 */
#define BESIDE_GRACE_MS 200
static struct conn_opening *beside;
static mono_t beside_close = NEVER;

void
conn_beside(struct conn_opening *o, mono_t asked)
{
	beside = o;
	beside_close = asked == NEVER ? NEVER : mono_after(asked,
	    BESIDE_GRACE_MS);
}

/* Is the connection beside open, and to be closed (a waiter's)? */
static int
beside_open(void)
{
	return beside_close != NEVER && beside != NULL && beside->c != NULL &&
	    beside->st == PGRES_POLLING_OK;
}

/* Is o's handshake under way? Its socket, polled as its next step needs. */
static int
opening_fd(const struct conn_opening *o, struct pollfd *p)
{
	int on = o != NULL && o->c != NULL && PQstatus(o->c) != CONNECTION_BAD &&
	    o->st != PGRES_POLLING_OK && o->st != PGRES_POLLING_FAILED;

	/* Read each time: a host list's next address is a new socket. */
	*p = (struct pollfd){ .fd = on ? PQsocket(o->c) : -1, .events = on &&
	    o->st == PGRES_POLLING_READING ? POLLIN : POLLOUT };
	return on;
}

/* A step of o's handshake, if poll found its socket ready. */
static void
opening_step(struct conn_opening *o, const struct pollfd *p)
{
	if (p->fd >= 0 && p->revents != 0)
		o->st = PQconnectPoll(o->c);
}

enum conn_ready
conn_opening_wait(struct conn_opening *o, mono_t by)
{
	struct pollfd p;

	while (opening_fd(o, &p)) {
		if (deadline_passed(by))
			return CONN_LATE;
		if (poll(&p, 1, poll_ms(by)) == -1 && errno != EINTR)
			return CONN_BROKEN;
		opening_step(o, &p);
	}
	return CONN_READY;
}

/*
 * Wait until by (mono_ms(); -1: never) for a result readable without blocking,
 * or another event. Signals are watched unless sig is NULL, and not returned
 * once cancelled; the answer is then waited for 5 s at most.
 */
static enum conn_event
conn_wait(PGconn *c, mono_t by, int cancelled, int tick_ms, int *sig)
{
	struct pollfd p[3];
	double give_up = mono_seconds() + 5;
	int n, ms;

	while (PQisBusy(c)) {
		p[0] = (struct pollfd){ .fd = PQsocket(c), .events = POLLIN };
		p[1] = (struct pollfd){ .fd = sig != NULL ? sig_fd() : -1,
		    .events = POLLIN };
		(void)opening_fd(beside, &p[2]);
		/* After a cancel the server answers at once, or never. */
		ms = cancelled ? 1000 : tick_ms;
		if (deadline_passed(by))
			return EV_DEADLINE;
		if (by != NEVER && (ms < 0 || poll_ms(by) < ms))
			ms = poll_ms(by);
		if (beside_open() && (ms < 0 || poll_ms(beside_close) < ms))
			ms = poll_ms(beside_close);
		n = poll(p, 3, ms);
		if (n == -1 && errno != EINTR)
			return EV_BROKEN;
		if (n > 0)
			opening_step(beside, &p[2]);
		/* Open, and the answer still awaited past the grace: a waiter. */
		if (beside_open() && deadline_passed(beside_close)) {
			PQfinish(beside->c);
			beside->c = NULL;
			if (n == 0)
				continue;	/* woken for this, not a tick */
		}
		if (cancelled && mono_seconds() > give_up)
			return EV_BROKEN;
		if (n == 0 && !cancelled && tick_ms >= 0)
			return EV_TICK;
		if (sig != NULL && (p[1].revents & POLLIN)) {
			while ((*sig = sig_take()) != 0)
				if (!cancelled && sig_forwarded(*sig))
					return EV_SIGNAL;
		}
		/* Any event, POLLNVAL too: libpq's read says what it was. */
		if (p[0].revents != 0 && !PQconsumeInput(c))
			return EV_BROKEN;
	}
	return EV_READY;
}

enum conn_ready
conn_await(PGconn *c, mono_t by)
{
	enum conn_event ev = conn_wait(c, by, 0, -1, NULL);

	if (ev == EV_READY)
		return CONN_READY;
	return ev == EV_DEADLINE ? CONN_LATE : CONN_BROKEN;
}

void
conn_cancel(PGconn *c)
{
	char buf[256];
	PGcancel *cn = PQgetCancel(c);
	pid_t pid;

	if (cn == NULL)
		return;
	/*
	 * PQcancel() has no time limit (minutes for a server out of reach): a
	 * child, where it is safe as in a handler, sends it; its alarm ends it.
	 */
	if ((pid = fork()) == 0) {
		sigset_t alrm;

		/* Even if the caller runs pglock with SIGALRM blocked. */
		sigemptyset(&alrm);
		sigaddset(&alrm, SIGALRM);
		(void)sigprocmask(SIG_UNBLOCK, &alrm, NULL);
		(void)signal(SIGALRM, SIG_DFL);
		(void)alarm(2);
		(void)PQcancel(cn, buf, sizeof(buf));
		_exit(0);
	}
	while (pid > 0 && waitpid(pid, NULL, 0) == -1 && errno == EINTR)
		;
	PQfreeCancel(cn);
}

/*
 * The next result of the query or pipeline in progress, NULL at a statement's
 * end, waited for as conn_pipe_next() says; *failed set, the reason in err, if
 * the connection fails (or a cancel gets no answer in 5 s).
 */
static PGresult *
conn_next(PGconn *c, struct budget *b, int *sig, void (*tick)(void *),
    void *arg, int *failed, struct err *err)
{
	mono_t by = b == NULL ? NEVER : b->over ? 0 : b->by;
	int s;

	*failed = 0;
	for (;;) {
		switch (conn_wait(c, by, *sig != 0, tick != NULL ? 1000 : -1,
		    &s)) {
		case EV_READY:
			return PQgetResult(c);
		case EV_TICK:	/* only with a tick */
			if (tick != NULL)
				tick(arg);
			break;
		case EV_SIGNAL:
			/* Cancel once; the server then forgets the waiter. */
			*sig = s;
			conn_cancel(c);
			break;
		case EV_DEADLINE:
			/* Once: later waits fail at once, with no cancel. */
			if (b == NULL)		/* by -1: never */
				break;
			if (!b->over)
				conn_cancel(c);
			b->over = 1;
			err_set(err, "the server did not answer within "
			    "%.3gs", (double)b->ms / 1000.0);
			*failed = 1;
			return NULL;
		case EV_BROKEN:
			conn_reason(c, err);
			*failed = 1;
			return NULL;
		}
	}
}

PGresult *
conn_pipe_next(PGconn *c, struct budget *b, int *sig, void (*tick)(void *),
    void *arg, struct err *err)
{
	PGresult *res, *more;
	int failed;

	res = conn_next(c, b, sig, tick, arg, &failed, err);
	if (res == NULL && !failed)
		conn_reason(c, err);
	if (res == NULL || PQresultStatus(res) == PGRES_PIPELINE_SYNC)
		return res;
	while ((more = conn_next(c, b, sig, NULL, NULL, &failed, err)) !=
	    NULL)
		PQclear(more);
	if (failed) {
		/* Why it hung up, such as a pooler's refusal, came first. */
		if (PQresultStatus(res) == PGRES_FATAL_ERROR)
			conn_result_error(res, err);
		PQclear(res);
		return NULL;
	}
	return res;
}

int
conn_pipe_to_sync(PGconn *c, struct budget *b, int *sig, struct err *err)
{
	PGresult *res;
	struct err later;
	int synced;

	do {
		if ((res = conn_pipe_next(c, b, sig, NULL, NULL, err != NULL ?
		    err : &later)) == NULL)
			return -1;
		synced = PQresultStatus(res) == PGRES_PIPELINE_SYNC;
		PQclear(res);
	} while (!synced);
	return 0;
}

int
conn_pipe_end(PGconn *c, struct budget *b, int *sig, struct err *err)
{
	if (conn_pipe_to_sync(c, b, sig, err) == -1)
		return -1;
	(void)PQexitPipelineMode(c);
	return 0;
}

int
conn_piped(PGconn *c)
{
	return PQpipelineStatus(c) != PQ_PIPELINE_OFF;
}
