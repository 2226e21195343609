/* SPDX-License-Identifier: ISC */
/*
 * child: start the command in a process group of its own, below a shim that
 * reaps all it starts, pass signals on to it, and watch it, and the lock's
 * check (a callback), until all it started has exited.
 */
#ifndef PGLOCK_CHILD_H
#define PGLOCK_CHILD_H

#include <sys/types.h>

#include "clock.h"
#include "err.h"
#include "tail.h"

struct child {
	/* Set by the caller before child_spawn(): */
	int lost_sig;		/* for the command if pglock dies */
	long kill_after_ms;	/* then KILL, this much later */
	pid_t notify;		/* gets lost_sig too (--hold's script, and
				   its group if it leads one), or 0 */
	int session_fd;		/* the database socket, which the shim keeps
				   open till the command is gone, or -1 */
	int witness_fd;		/* the witness's socket, kept alike (handed to
				   the shim at the gate), or -1; may be set
				   until child_open_gate() */
	mono_t kill_by;		/* mono_ms() of the lease's end: the shim
				   KILLs all below it then unless child_wait()
				   renews it; set before child_open_gate() */
	struct tail *tail;	/* set before child_spawn(): the command's
				   stdout and stderr go through it (opened),
				   copied on by child_wait(); NULL: pglock's */
	/* Kept by the functions below: */
	pid_t pid;		/* the shim, the command's parent: on Linux
				   a subreaper, all it started stays below;
				   -1: none */
	pid_t pgrp;		/* its group, which it leads */
	int foreground;		/* the group was handed the terminal */
	int gate;		/* the shim's socket: child_open_gate() lets
				   the command exec, child_wait() renews the
				   lease; the shim's word on it; -1: none */
	int stopped;		/* child_wait stopped it: the lock was lost */
	int told;		/* child_wait sent notify lost_sig: it was
				   pglock's parent still */
};

/* A struct child before anything is forked: child_abort() has nothing to do. */
#define CHILD_NONE { .pid = -1, .gate = -1, .session_fd = -1, \
	.witness_fd = -1, .kill_by = NEVER }

enum child_start {
	CHILD_STARTED,
	CHILD_NOEXEC,		/* exec failed: *status is 126 or 127 */
	CHILD_OSERR		/* the command could not be started */
};

/*
 * Fork the shim, which leads a process group of its own, held at a gate
 * until child_open_gate() or child_abort() (at the gate it exits if pglock
 * dies); then it forks the command (argv, searched in PATH) and reaps all
 * below it (a subreaper, on Linux) till none is left, keeping its copies of
 * session_fd and witness_fd (-1: none) till then, so the lock and its delay
 * stay while any of the command lives. It is the command's watchdog too: if
 * pglock dies (even by SIGKILL), it sends lost_sig to notify and to all
 * below it, then SIGKILL kill_after_ms later or at kill_by if sooner; it
 * KILLs all below it at kill_by too if pglock, stopped, did not renew it.
 * pglock becomes a subreaper too. With argv NULL (--hold) the "command"
 * waits for end of file on standard input, then exits 0. With ch->tail, the
 * command's fd 1 and 2 are its pipes, whose write ends pglock then closes.
 * Returns 0, or -1 with the reason in err.
 */
int child_spawn(char *const argv[], struct child *ch, struct err *err);

/*
 * Open the gate (handing the shim kill_by and witness_fd): the command execs,
 * with the terminal if pglock had it; exec errors (named after cmd) are
 * reported here, in err, and the command reaped.
 */
enum child_start child_open_gate(struct child *ch, const char *cmd, int *status,
    struct err *err);

/* Close the gate, if spawned: reap the shim, the command unrun. */
void child_abort(struct child *ch);

/*
 * After child_open_gate(): KILL all below the shim, then the whole group, the
 * shim with it, and reap it, telling nobody (no lost_sig, no notify):
 * for a run that ends on an error of pglock's own before the command could
 * rely on the lock.
 */
void child_kill(struct child *ch);

/* -F's exec of argv: returns only on failure, *status 126 or 127 (err). */
void child_exec(char *const argv[], int *status, struct err *err);

/* The lock's check (lib/lease.c's), driven by child_wait() as a black box. */
struct child_watch {
	int fd;		/* polled for the check's input; -1: no check */
	/*
	 * Called with arg when fd is readable (readable 1) or a time it set
	 * in *due has come: 1 while the lock is held, 0 when lost (reason in
	 * err); *end: by when the command must be dead, renewed as it goes.
	 */
	int (*step)(void *arg, int readable, mono_t *due, mono_t *end,
	    struct err *err);
	/* After the command exited: 1 held to the end, 0 lost (err). */
	int (*finish)(void *arg, struct err *err);
	void *arg;
	long max_ms;	/* lost_sig when it runs longer; 0: no limit */
	/* The command exited leaving n processes, waited for; NULL: quiet. */
	void (*waiting)(void *waiting_arg, int n);
	void *waiting_arg;
};

enum child_end {
	CHILD_EXITED,		/* *status is its exit status (128+N) */
	CHILD_LOST,		/* lost; ch->stopped: the command was stopped */
	CHILD_LATE,		/* it ran past max_ms and was stopped */
	CHILD_FAILED		/* waitpid failed */
};

/*
 * Wait for the command and all it started (the shim's end) while forwarding
 * signals to its process group and stepping w's check; *status is the
 * command's (the shim's, if it was killed). A lost lock or max_ms: signal
 * notify (ch->told), if pglock's parent, then the group and all below the
 * shim with ch->lost_sig, KILL it all after
 * ch->kill_after_ms or at the check's end if sooner, and return CHILD_LOST
 * (err) or CHILD_LATE once the shim is reaped. A later end renews kill_by.
 * With ch->tail, the command's output is copied on as it comes, and the rest
 * once the shim is reaped, with the checks going (tail_busy()).
 */
enum child_end child_wait(struct child *ch, const struct child_watch *w,
    int *status, struct err *err);

#endif
