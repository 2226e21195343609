/* SPDX-License-Identifier: ISC */
/*
 * sig: catch the signals pglock forwards or acts on, as a readable descriptor
 * for the one poll() loop that also sees the child and the database socket.
 */
#ifndef PGLOCK_SIG_H
#define PGLOCK_SIG_H

#include <signal.h>

#include "err.h"

/*
 * Install the handlers (not for a signal the caller ignores) and the wake-up
 * pipe, and ignore SIGPIPE. Returns 0, or -1 with the reason in err.
 */
int sig_init(struct err *err);

/* The descriptor that becomes readable when a signal has arrived. */
int sig_fd(void);

/*
 * Return one pending signal and clear it, or 0 when none is pending.
 * Drains the wake-up pipe first, so call it until it returns 0.
 */
int sig_take(void);

/* Is sig one of those a signal to pglock is passed on to the command for? */
int sig_forwarded(int sig);

/* Before exec: the caught signals, and SIGPIPE, get their default action. */
void sig_reset(void);

/*
 * For the shim, which must outlast what reaches its process group: ignore
 * the handled signals and also (if it can be). The terminal's stop signals
 * are left as they are, for the command: the shim blocks them instead.
 */
void sig_ignore(int also);

/*
 * Around fork(): block the handled and the terminal's stop signals, the old
 * mask into *old, so none reaches the child before sig_reset() or sig_ignore().
 */
void sig_block(sigset_t *old);

#endif
