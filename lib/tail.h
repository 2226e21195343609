/* SPDX-License-Identifier: ISC */
/*
 * tail: --keep-output. The command writes its stdout and stderr into two
 * pipes; pglock reads what each holds as soon as it is there (stdout first),
 * keeps the last bytes of both in the order it read them, and copies each on
 * to its own fd 1 and 2 as poll() allows.
 */
#ifndef PGLOCK_TAIL_H
#define PGLOCK_TAIL_H

#include <limits.h>
#include <poll.h>
#include <stddef.h>

#include "err.h"

/* The most --keep-output keeps: 64 KiB, as the man page says. */
#define TAIL_MAX 65536

/* The pollfds tail_poll() fills: a stream's pipe, then its fd out. */
#define TAIL_NFDS 4

/*
 * What a stream holds read and not yet written on: a pipe's worth. Full, the
 * pipe is no longer read: a slow reader of pglock's output slows the command.
 */
#define TAIL_BUF 65536

/* One stream: its pipe, and what was read from it not yet written on. */
struct tail_stream {
	int in;			/* the pipe's read end; -1: ended */
	int out;		/* its write end, the command's; -1: closed */
	int to;			/* pglock's own fd (1, 2); -1: not copied */
	size_t off, len;	/* buf[off..len) is yet to be written */
	char buf[TAIL_BUF];
};

struct tail {
	struct tail_stream s[2];	/* stdout, stderr */
	char *win;		/* the kept bytes: a window of 2 * keep */
	size_t keep, used;
};

/*
 * Make the two pipes (close-on-exec, the read ends non-blocking) and room to
 * keep the last keep (1 to TAIL_MAX) bytes: 0, or -1 with the reason in err.
 */
int tail_open(struct tail *t, size_t keep, struct err *err);

/* In the command, before exec: the write ends become its fd 1 and 2. */
void tail_child(const struct tail *t);

/* In pglock once the command's side is forked: close the write ends. */
void tail_parent(struct tail *t);

/*
 * Fill p[0..TAIL_NFDS-1]: each stream's read end while it has room, and its
 * fd out while it holds something to write.
 */
void tail_poll(const struct tail *t, struct pollfd p[TAIL_NFDS]);

/*
 * Act on what poll() said of tail_poll()'s p: read what each pipe holds, as
 * room allows (stdout first: what both held at once, stdout wrote first as
 * often as not), then one write each.
 */
void tail_pump(struct tail *t, const struct pollfd p[TAIL_NFDS]);

/*
 * Is something still to copy on: held, or in a pipe (or its end to see)? The
 * command reaped, child_wait() goes on with the lock's checks till it is not:
 * a reader that reads slowly keeps the lock held, as the command would have
 * without --keep-output. t NULL: 0.
 */
int tail_busy(const struct tail *t);

/*
 * (tests/unit_tail's pump.) All writers gone (the command reaped): copy on what is left, waiting for
 * pglock's fd 1 and 2 if need be, till end of file (or nothing more now). At
 * most two pipes' worth; but a reader that stops reading holds pglock here,
 * with no check of the lock running, as it would hold the command without
 * --keep-output.
 */
void tail_drain(struct tail *t);

/* The kept bytes, oldest first: at most keep of them, *len how many. */
const char *tail_kept(const struct tail *t, size_t *len);

/* Close what is open and free the window. */
void tail_close(struct tail *t);

#endif
