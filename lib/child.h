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
	/* Set by the caller before child_fork_watchdog(): */
	int lost_sig;		/* for the command if pglock dies */
	long kill_after_ms;	/* then KILL, this much later */
	pid_t notify;		/* gets lost_sig too (--hold's script, and
				   its group if it leads one), or 0 */
	int session_fd;		/* the database socket, which the watchdog
				   keeps open till the command is gone, or -1 */
	int witness_fd;		/* the witness's socket, kept alike (handed to
				   the watchdog as it is armed), or -1; may be
				   set until child_open_gate() */
	mono_t kill_by;		/* mono_ms() of the lease's end: the watchdog
				   KILLs the group then unless child_wait()
				   renews it; -1: never */
	struct tail *tail;	/* set before child_spawn(): the command's
				   stdout and stderr go through it (opened),
				   copied on by child_wait(); NULL: pglock's */
	/* Kept by the functions below: */
	pid_t pid;		/* the shim, the command's parent: on Linux
				   a subreaper, all it started stays below */
	pid_t pgrp;		/* its group: the first watchdog's pid */
	pid_t watchdog_pid;	/* the watchdog now; -1 once reaped */
	int watchdog_fd;	/* pglock's end of the watchdog's socket */
	int witness_kept;	/* the watchdog has its copy of witness_fd */
	mono_t guard_at;	/* a new watchdog is due then (its fork
				   failed); NEVER: none */
	int foreground;		/* the group was handed the terminal */
	int gate;		/* child_open_gate() lets the command exec;
				   then the shim's word on it; -1: none */
	int stopped;		/* child_wait stopped it: the lock was lost */
	int told;		/* child_wait sent notify lost_sig: it was
				   pglock's parent still */
};

/* A struct child before anything is forked: child_reap() has nothing to do. */
#define CHILD_NONE { .pid = -1, .watchdog_pid = -1, .watchdog_fd = -1, \
	.gate = -1, .session_fd = -1, .witness_fd = -1, .guard_at = NEVER }

enum child_start {
	CHILD_STARTED,
	CHILD_NOEXEC,		/* exec failed: *status is 126 or 127 */
	CHILD_OSERR		/* the command could not be started */
};

/*
 * Fork the watchdog that will lead the command's process group. Once armed by
 * child_open_gate(), if pglock dies (even by SIGKILL), it sends lost_sig to
 * notify (the shim sends it to all the command started), then SIGKILL to all
 * below the shim kill_after_ms later or at kill_by if sooner, and closes its
 * copies of witness_fd and session_fd only once the shim has exited, all it
 * reaped gone (-1 or closed: no copy, for a lock lost already). Unarmed, it
 * just exits. Returns 0, or -1 with the reason in err.
 */
int child_fork_watchdog(struct child *ch, struct err *err);

/*
 * After child_fork_watchdog(): fork the shim into the watchdog's group, held
 * at a gate until child_open_gate() or child_abort() (at the gate it exits if
 * pglock dies); then it forks the command (argv, searched in PATH) and reaps
 * all below it (a subreaper, on Linux) till none is left; if pglock dies it
 * sends lost_sig to all below it, SIGKILL kill_after_ms later. pglock becomes
 * a subreaper too. With argv NULL (--hold) the "command" waits for end of file
 * on standard input, then exits 0. With ch->tail, the command's fd 1 and 2 are
 * its pipes, whose write ends pglock then closes. Returns 0, or -1 with the
 * reason in err.
 */
int child_spawn(char *const argv[], struct child *ch, struct err *err);

/*
 * Open the gate: the command execs, with the terminal if pglock had it; exec
 * errors (named after cmd) are reported here, in err, and the command reaped.
 */
enum child_start child_open_gate(struct child *ch, const char *cmd, int *status,
    struct err *err);

/* Close the gate, if spawned: reap the command unrun; dismiss the watchdog. */
void child_abort(struct child *ch);

/*
 * After child_open_gate(): KILL all below the shim, then the whole group, the
 * watchdog with it, and reap them, telling nobody (no lost_sig, no notify):
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
	/*
	 * A watchdog that died could not be replaced (why): told once till
	 * one is; another is tried each second. NULL: quiet.
	 */
	void (*unguarded)(void *waiting_arg, const char *why);
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

/* Reap the watchdog child_wait() dismissed; slow: release the lock first. */
void child_reap(struct child *ch);

#endif
