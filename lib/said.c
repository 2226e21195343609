/* SPDX-License-Identifier: ISC */
/*
 * said: what the server and libpq said, as one line, and the SQLSTATE of the
 * server's last error: the error text every room gives.
 */
#include <stdio.h>
#include <string.h>

#include "said.h"

/* The last message the server sent outside a query, e.g. why it hung up. */
static struct err server_said;

/* The SQLSTATE of the last error the server sent, for conn_cut(). */
static char last_state[6];

static void
keep_state(const PGresult *res)
{
	const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

	snprintf(last_state, sizeof(last_state), "%s", state != NULL ?
	    state : "");
}

void
conn_said_notice(void *arg, const PGresult *res)
{
	const char *sev = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
	const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

	(void)arg;
	/* Only errors matter: FATAL arrives here when the backend is killed. */
	if (msg != NULL && sev != NULL && (strcmp(sev, "ERROR") == 0 ||
	    strcmp(sev, "FATAL") == 0 || strcmp(sev, "PANIC") == 0)) {
		conn_oneline(msg, &server_said);
		keep_state(res);
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

	keep_state(res);
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
	return PQstatus(c) == CONNECTION_BAD && (last_state[0] == '\0' ||
	    strncmp(last_state, "57P0", 4) == 0 ||
	    strcmp(last_state, "25P03") == 0);
}

int
conn_read_only(void)
{
	return strcmp(last_state, "25006") == 0;
}

void
conn_reason(PGconn *c, struct err *err)
{
	if (server_said.msg[0] != '\0')
		*err = server_said;
	else
		conn_oneline(PQerrorMessage(c), err);
}

void
conn_said_reset(void)
{
	server_said.msg[0] = '\0';
	last_state[0] = '\0';
}
