/* SPDX-License-Identifier: ISC */
/*
 * proof: does a connection reach a backend directly, no pooler between?
 */
#ifndef PGLOCK_PROOF_H
#define PGLOCK_PROOF_H

#include <libpq-fe.h>

enum conn_path {
	CONN_UNPROVEN,		/* maybe a pooler: anything not proven */
	CONN_TCP,		/* TCP, not asked: conn_ends()'s proof asks */
	CONN_DIRECT_TCP,	/* the backend sees pglock's address and port */
	CONN_DIRECT_LOCAL	/* the backend is the socket listener's child */
};

/*
 * Can c be proven to reach a backend directly, no pooler between? Over TCP
 * (with ask, one round trip) the backend sees pglock's address and port; over a
 * Unix socket (Linux, no round trip) the backend pid libpq was given is a child
 * of the socket's listener. Without ask, TCP is CONN_TCP (CONN_UNPROVEN if
 * conn_ends() fails): the caller asks, with its proof, in a query of its own.
 */
enum conn_path conn_direct(PGconn *c, int ask, long ms);

/*
 * Both ends of a TCP connection as numeric text, and proof: an SQL condition on
 * params $first to $first + 3, true when the backend sees them as pglock does.
 */
struct conn_ends {
	char addr[2][64];	/* pglock's, the server's (as pglock sees it) */
	char port[2][16];
	const char *params[4];	/* addr[0], port[0], addr[1], port[1] */
	char proof[256];
};

/* Fill e with c's two ends: 0, or -1 when c is not TCP or they are unknown. */
int conn_ends(PGconn *c, int first, struct conn_ends *e);

#endif
