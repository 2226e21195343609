/* SPDX-License-Identifier: ISC */
/*
 * floor: the least work a PostgreSQL lock runner can do, the yardstick the
 * benchmarks hold pglock against. Connect, take one session advisory lock,
 * run COMMAND, wait for it, disconnect (the server then drops the lock).
 *
 *	usage: floor CONNINFO ID COMMAND [ARG ...]
 *
 * No settings, no verification, no signal forwarding, no lock-loss watch:
 * everything pglock does beyond this is what its extra time pays for.
 *
 * Copyright (c) 2026 The pglock authors. Permission to use, copy, modify
 * and distribute this software for any purpose is granted under the terms
 * of the ISC licence in COPYING.
 */
#include <err.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libpq-fe.h>

enum {
	EXIT_USAGE = 64,
	EXIT_UNAVAILABLE = 69,
	EXIT_OSERR = 71
};

/* libpq ends its messages with a newline; err(3) adds its own. */
static const char *
oneline(const char *msg)
{
	static char buf[512];
	size_t n;

	snprintf(buf, sizeof(buf), "%s", msg);
	n = strlen(buf);
	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return buf;
}

int
main(int argc, char **argv)
{
	const char *params[1];
	PGconn *c;
	PGresult *res;
	pid_t pid;
	int st;

	if (argc < 4) {
		fputs("usage: floor CONNINFO ID COMMAND [ARG ...]\n", stderr);
		return EXIT_USAGE;
	}
	c = PQconnectdb(argv[1]);
	if (PQstatus(c) != CONNECTION_OK)
		errx(EXIT_UNAVAILABLE, "%s", oneline(PQerrorMessage(c)));

	/* The server resolves the untyped parameter to the bigint form. */
	params[0] = argv[2];
	res = PQexecParams(c, "SELECT pg_advisory_lock($1)", 1, NULL, params,
	    NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		errx(EXIT_UNAVAILABLE, "%s",
		    oneline(PQresultErrorMessage(res)));
	PQclear(res);

	/* The socket is not inherited: libpq opens it close-on-exec. */
	if ((pid = fork()) == -1)
		err(EXIT_OSERR, "fork");
	if (pid == 0) {
		execvp(argv[3], argv + 3);
		warn("%s", argv[3]);
		_exit(errno == ENOENT ? 127 : 126);
	}
	while (waitpid(pid, &st, 0) == -1)
		if (errno != EINTR)
			err(EXIT_OSERR, "waitpid");

	PQfinish(c);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return WEXITSTATUS(st);
}
