/* SPDX-License-Identifier: ISC */
/*
 * mask: a -d conninfo or URI checked before use, and its password hidden
 * from ps(1).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conn.h"
#include "mask.h"
#include "said.h"

/* Does libpq take a -d value as a conninfo string or URI (not a name)? */
static int
is_conninfo(const char *s)
{
	return strchr(s, '=') != NULL || strncmp(s, "postgres://", 11) == 0 ||
	    strncmp(s, "postgresql://", 13) == 0;
}

/*
 * 'x' over each password written in s, found by hand (libpq may not parse
 * s): a URI's user:password@ and every password= value, quoted or not.
 */
static void
mask_written(char *s)
{
	char *p, *at = NULL, *end, *colon;
	size_t n;

	if ((p = strstr(s, "://")) != NULL) {
		p += 3;
		end = p + strcspn(p, "/?#");
		for (; p < end; p++)
			if (*p == '@')
				at = p;
		p = at != NULL ? strstr(s, "://") + 3 : NULL;
		if (p != NULL && (colon = memchr(p, ':', (size_t)(at - p))) != NULL)
			memset(colon + 1, 'x', (size_t)(at - colon - 1));
	}
	for (p = s; (p = strstr(p, "password=")) != NULL; p += n) {
		p += 9;
		n = *p == '\'' ? 1 + strcspn(p + 1, "'") : strcspn(p, "& \t\n");
		memset(p, 'x', n);
	}
}

int
conn_check(const char *conninfo, struct err *err)
{
	PQconninfoOption *opts;
	char *msg = NULL, *masked, *p;
	size_t i, j, len = strlen(conninfo);

	/* libpq takes "POSTGRESQL://..." for a database name, sent as is. */
	if (strncasecmp(conninfo, "postgres", 8) == 0 &&
	    !is_conninfo(conninfo) && (strncmp(conninfo + 8, "://", 3) == 0 ||
	    strncasecmp(conninfo + 8, "ql://", 5) == 0)) {
		err_set(err, "a URI begins with postgresql:// or "
		    "postgres://, in lower case (libpq would take this one for "
		    "a database name)");
		return -1;
	}
	/*
	 * Nor "user:password@host/db": libpq would send it, password and all,
	 * as a database name, or quote it in its reason (with an '=' after it).
	 */
	if (strncmp(conninfo, "postgres://", 11) != 0 &&
	    strncmp(conninfo, "postgresql://", 13) != 0 &&
	    conninfo[strcspn(conninfo, ":/=@ \t")] == ':' &&
	    strchr(conninfo, '@') != NULL) {
		err_set(err, "user:password@... is a URI only after "
		    "postgresql:// (libpq would take this one for a database "
		    "name)");
		return -1;
	}
	/* A plain database name is not parsed: any string is a name. */
	if (!is_conninfo(conninfo))
		return 0;
	if ((opts = PQconninfoParse(conninfo, &msg)) != NULL) {
		PQconninfoFree(opts);
		return 0;
	}
	if (msg == NULL || (masked = strdup(conninfo)) == NULL) {
		err_set(err, "out of memory");
		PQfreemem(msg);
		return -1;
	}
	/* Where libpq's reason quotes a password, it becomes x's, as in ps. */
	mask_written(masked);
	for (p = msg; (p = strstr(p, conninfo)) != NULL && len > 0; p += len)
		memcpy(p, masked, len);
	for (i = 0; i < len; i = j) {
		for (j = i; j < len && masked[j] != conninfo[j]; j++)
			;
		if (j > i) {
			char *run = strndup(conninfo + i, j - i);

			for (p = msg; run != NULL && (p = strstr(p, run)) !=
			    NULL; p += j - i)
				memset(p, 'x', j - i);
			free(run);
		}
		j += j == i;
	}
	conn_oneline(msg, err);
	free(masked);
	PQfreemem(msg);
	return -1;
}

void
conn_hide_password(char *conninfo)
{
	PQconninfoOption *opts;
	const char *pw;
	int secret;

	/*
	 * Only libpq's parser finds a password in all its forms (user:pw@,
	 * ?password=, percent-encoded, quoted, escaped, twice): all of it goes.
	 */
	if (!is_conninfo(conninfo) ||
	    (opts = PQconninfoParse(conninfo, NULL)) == NULL)
		return;
	pw = conn_option(opts, "password");
	secret = pw != NULL && *pw != '\0';
	PQconninfoFree(opts);
	if (secret)
		memset(conninfo, 'x', strlen(conninfo));
}
