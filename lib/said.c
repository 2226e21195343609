/* SPDX-License-Identifier: ISC */
/*
 * said: what the server and libpq said, as one line, and what each session's
 * server said last (its SQLSTATE, why it hung up), kept with the session.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-events.h>

#include "said.h"

/*
 * What one session's server said, kept with its connection (libpq's instance
 * data, freed with it): never another session's word.
 */
struct said {
	struct err server;	/* its last message outside a query, e.g. why
				   it hung up */
	char state[6];		/* the SQLSTATE of its last error */
};

static int said_event(PGEventId id, void *info, void *pass);
static void said_notice(void *arg, const PGresult *res);

static struct said *
said_of(const PGconn *c)
{
	return c != NULL ? PQinstanceData(c, said_event) : NULL;
}

/* An error's SQLSTATE, as the session's last error. */
static void
keep_state(struct said *s, const PGresult *res)
{
	const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

	if (s != NULL)
		snprintf(s->state, sizeof(s->state), "%s", state != NULL ?
		    state : "");
}

/* libpq's events: a session's record made, its errors kept, freed. */
static int
said_event(PGEventId id, void *info, void *pass)
{
	struct said *s;

	(void)pass;
	switch (id) {
	case PGEVT_REGISTER:
		s = calloc(1, sizeof(*s));
		if (s == NULL || !PQsetInstanceData(
		    ((PGEventRegister *)info)->conn, said_event, s)) {
			free(s);
			return 0;
		}
		break;
	case PGEVT_RESULTCREATE: {
		const PGEventResultCreate *e = info;

		if (PQresultStatus(e->result) == PGRES_FATAL_ERROR)
			keep_state(said_of(e->conn), e->result);
		break;
	}
	case PGEVT_CONNDESTROY:
		free(said_of(((PGEventConnDestroy *)info)->conn));
		break;
	default:
		break;
	}
	return 1;
}

int
conn_said_watch(PGconn *c)
{
	if (!PQregisterEventProc(c, said_event, "pglock said", NULL))
		return -1;
	PQsetNoticeReceiver(c, said_notice, c);
	return 0;
}

static void
said_notice(void *arg, const PGresult *res)
{
	const char *sev = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
	const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	struct said *s;

	/*
	 * Only errors matter: FATAL arrives here when the backend is killed.
	 * Asked first: libpq's own notices (a result read out of range) may
	 * come after its connection is gone, and arg with it.
	 */
	if (msg == NULL || sev == NULL || (strcmp(sev, "ERROR") != 0 &&
	    strcmp(sev, "FATAL") != 0 && strcmp(sev, "PANIC") != 0))
		return;
	if ((s = said_of(arg)) != NULL) {
		conn_oneline(msg, &s->server);
		keep_state(s, res);
	}
}

int
conn_is_state(const PGresult *res, const char *state)
{
	const char *s = PQresultErrorField(res, PG_DIAG_SQLSTATE);

	return s != NULL && strcmp(s, state) == 0;
}

void
conn_oneline(const char *msg, struct err *err)
{
	size_t i, j = 0;

	/* libpq ends with "\n" and puts hints on "\n\t..." lines. */
	for (i = 0; msg[i] != '\0' && j + 3 < sizeof(err->msg); i++) {
		if (msg[i] == '\n') {
			while (msg[i + 1] == '\t' || msg[i + 1] == ' ')
				i++;
			if (msg[i + 1] != '\0') {
				err->msg[j++] = ';';
				err->msg[j++] = ' ';
			}
			continue;
		}
		err->msg[j++] = msg[i];
	}
	err->msg[j] = '\0';
}

void
conn_result_error(const PGresult *res, struct err *err)
{
	const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	const char *detail = PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL);
	char buf[1024];

	if (msg == NULL) {
		/* Not the server's: libpq's own text (a lost connection). */
		conn_oneline(PQresultErrorMessage(res), err);
		return;
	}
	snprintf(buf, sizeof(buf), "%s%s%s", msg, detail != NULL ? "; " : "",
	    detail != NULL ? detail : "");
	conn_oneline(buf, err);
}

int
conn_cut(PGconn *c)
{
	const struct said *s = said_of(c);
	const char *state = s != NULL ? s->state : "";

	/*
	 * A FATAL that ends every session (a shutdown, a terminate, an idle
	 * timeout) is a cut as soon as it is read: its end of file may come a
	 * read later (a restart's run read the one without the other, and
	 * exited 69). Else, ended as its last error says (a pooler's refusal
	 * is no cut).
	 */
	if (strncmp(state, "57P0", 4) == 0 || strcmp(state, "25P03") == 0)
		return 1;
	return PQstatus(c) == CONNECTION_BAD && state[0] == '\0';
}

int
conn_read_only(const PGconn *c)
{
	const struct said *s = said_of(c);

	return s != NULL && strcmp(s->state, "25006") == 0;
}

void
conn_reason(PGconn *c, struct err *err)
{
	const struct said *s = said_of(c);

	if (s != NULL && s->server.msg[0] != '\0')
		*err = s->server;
	else
		conn_oneline(PQerrorMessage(c), err);
}
