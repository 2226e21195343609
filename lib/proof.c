/* SPDX-License-Identifier: ISC */
/*
 * proof: does a connection reach the server's own backend, no pooler
 * between? The two ends of a TCP connection as both sides see them, and a
 * Unix socket's peer.
 */
#ifdef __linux__
/* struct ucred, for SO_PEERCRED: glibc shows it to _GNU_SOURCE only. */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier,cert-dcl37-c,cert-dcl51-cpp) */
#endif
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proof.h"
#include "query.h"

/* The parent of process pid, from /proc; -1 if unknown. */
static long
parent_of(int pid)
{
	char path[64], buf[512], *p, *end;
	FILE *f;
	size_t n;
	long ppid;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* "pid (comm) state ppid ...": comm may hold spaces and parentheses. */
	if ((p = strrchr(buf, ')')) == NULL || strlen(p) < 5)
		return -1;
	ppid = strtol(p + 4, &end, 10);
	return end != p + 4 && *end == ' ' ? ppid : -1;
}

/* Is libpq's backend pid a child of the socket's listener (the postmaster)? */
static int
unix_direct(PGconn *c)
{
#ifdef SO_PEERCRED
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(PQsocket(c), SOL_SOCKET, SO_PEERCRED, &cr, &len) == -1 ||
	    cr.pid <= 0)
		return 0;
	return parent_of(PQbackendPID(c)) == (long)cr.pid;
#else
	(void)c;
	return 0;
#endif
}

int
conn_ends(PGconn *c, int first, struct conn_ends *e)
{
	struct sockaddr_storage ss[2];
	socklen_t len[2] = { sizeof(ss[0]), sizeof(ss[1]) };
	int fd = PQsocket(c);
	size_t i;

	memset(ss, 0, sizeof(ss));
	if (getsockname(fd, (struct sockaddr *)&ss[0], &len[0]) == -1 ||
	    ss[0].ss_family == AF_UNIX ||
	    getpeername(fd, (struct sockaddr *)&ss[1], &len[1]) == -1)
		return -1;
	for (i = 0; i < 2; i++) {
		if (getnameinfo((struct sockaddr *)&ss[i], len[i], e->addr[i],
		    sizeof(e->addr[i]), e->port[i], sizeof(e->port[i]),
		    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
			return -1;
		/* A link-local zone ("fe80::1%eth0"): inet takes none. */
		e->addr[i][strcspn(e->addr[i], "%")] = '\0';
		e->params[2 * i] = e->addr[i];
		e->params[2 * i + 1] = e->port[i];
	}
	/*
	 * Both ends: one alone could be a pooler's connection that happens to
	 * have the same local port, towards another destination.
	 */
	snprintf(e->proof, sizeof(e->proof), "(pg_catalog.inet_client_addr() ="
	    " $%d::inet AND pg_catalog.inet_client_port() = $%d::int AND"
	    " pg_catalog.inet_server_addr() = $%d::inet AND"
	    " pg_catalog.inet_server_port() = $%d::int)", first, first + 1,
	    first + 2, first + 3);
	return 0;
}

enum conn_path
conn_direct(PGconn *c, int ask, long ms)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct conn_ends e;
	const char *params[5];
	char sql[512];
	struct err why;
	PGresult *res;
	int direct;

	memset(&ss, 0, sizeof(ss));
	if (getsockname(PQsocket(c), (struct sockaddr *)&ss, &len) == -1)
		return CONN_UNPROVEN;
	if (ss.ss_family == AF_UNIX)
		return unix_direct(c) ? CONN_DIRECT_LOCAL : CONN_UNPROVEN;
	if (conn_ends(c, 1, &e) == -1)
		return CONN_UNPROVEN;
	if (!ask)
		return CONN_TCP;
	memcpy(params, e.params, sizeof(e.params));
	params[4] = NULL;
	snprintf(sql, sizeof(sql), "SELECT %s", e.proof);
	res = conn_exec(c, sql, params, ms, &why);
	direct = PQresultStatus(res) == PGRES_TUPLES_OK &&
	    PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);
	return direct ? CONN_DIRECT_TCP : CONN_UNPROVEN;
}
