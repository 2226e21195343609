/* SPDX-License-Identifier: ISC */
/*
 * child: the command's lifetime. One poll() loop sees the signal pipe, the
 * database socket, the shim and the timers (check, KILL, --max-time). The
 * shim, a subreaper, keeps all the command starts below it, and is its
 * watchdog: it outlives pglock till all of it is gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "child.h"
#include "clock.h"
#include "exits.h"
#include "sig.h"
#include "tree.h"

static void
exec_error(const char *cmd, int e, int *status, struct err *err)
{
	*status = (e == ENOENT || e == ENOTDIR) ? EXIT_NOTFOUND : EXIT_NOEXEC;
	err_set(err, "%s: %s", cmd, strerror(e));
}

/*
 * Signal the process group pgrp (0: the caller's), then continue it: a
 * stopped process acts on a signal only once continued, as timeout(1) knows,
 * and one stopped in the background (SIGTTIN) would outlive a TERM. Not after
 * USR1 and USR2, which ask for work, not an end: one stopped on purpose stays.
 */
static void
signal_group(pid_t pgrp, int sig)
{
	(void)kill(-pgrp, sig);
	if (sig != SIGKILL && sig != SIGCONT && sig != SIGUSR1 &&
	    sig != SIGUSR2)
		(void)kill(-pgrp, SIGCONT);
}

/* Hand the terminal to pgrp, SIGTTOU blocked: it stops a background caller. */
static void
give_terminal(pid_t pgrp)
{
	sigset_t block, old;

	sigemptyset(&block);
	sigaddset(&block, SIGTTOU);
	sigprocmask(SIG_BLOCK, &block, &old);
	(void)tcsetpgrp(STDIN_FILENO, pgrp);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/*
 * Close every descriptor but keep[0..n-1] (n at most 3), which become 3, 4,
 * ... in order (one -1 or closed already leaves its number closed): above
 * all the database sessions, which must close when pglock dies (the shim's
 * copies once the command is gone) so the lock goes too, and the standard
 * ones, maybe a pipe that a reader waits on.
 */
static void
close_others(const int *keep, int n)
{
	int tmp[3], i;
	long fd, max;

	/* Above every number to fill first, so that none is overwritten. */
	for (i = 0; i < n; i++) {
		tmp[i] = keep[i] == -1 ? -1 : fcntl(keep[i], F_DUPFD, 3 + n);
		if (tmp[i] == -1 && keep[i] != -1 && errno != EBADF)
			_exit(EXIT_SOFTWARE);
	}
	for (fd = 0; fd < 3 + n; fd++)
		(void)close((int)fd);
	for (i = 0; i < n; i++)
		if (tmp[i] != -1 && dup2(tmp[i], 3 + i) == -1)
			_exit(EXIT_SOFTWARE);
	fd = 3 + n;
#ifdef SYS_close_range
	if (syscall(SYS_close_range, (unsigned)fd, ~0U, 0U) == 0)
		return;
#endif
	/* Without close_range: pglock's own descriptors are all far below. */
	max = sysconf(_SC_OPEN_MAX);
	if (max < 0 || max > 65536)
		max = 65536;
	for (; fd < max; fd++)
		(void)close((int)fd);
}

/*
 * --hold's command: wait for end of file on standard input (kept as 3) with
 * nothing else open (close_others). Reading a terminal from the background
 * stops it (SIGTTIN) until a signal ends it (signal_group's SIGCONT) or fg.
 */
static __attribute__((noreturn)) void
hold_stdin(void)
{
	char buf[512];
	int in = STDIN_FILENO;
	ssize_t n;

	close_others(&in, 1);
	do
		n = read(3, buf, sizeof(buf));
	while (n > 0 || (n == -1 && errno == EINTR));
	_exit(0);
}

/*
 * What pglock tells the shim, one message each: the first opens the gate
 * (with the witness's session, if any), each later one renews the lease.
 */
struct arm {
	mono_t kill_by;		/* the lease's end: all of it dead by then */
};

/*
 * Tell --hold's script: sig to pid, or to its process group if it leads one
 * (a script run from a shell, and the step it runs): 0, or -1 (errno).
 */
static int
notify(pid_t pid, int sig)
{
	pid_t pgrp = getpgid(pid);

	if (pgrp != pid)
		return kill(pid, sig);
	/* In that group too (a coproc): go on to say why, then exit. */
	if (pgrp == getpgrp() && sig != SIGKILL)
		signal(sig, SIG_IGN);
	return kill(sig == SIGKILL && pgrp == getpgrp() ? pid : -pid, sig);
}

/* Room for one descriptor passed with a message (SCM_RIGHTS). */
union one_fd {
	struct cmsghdr h;
	char buf[CMSG_SPACE(sizeof(int))];
};

/*
 * The shim's read of an arm message from gate (recvmsg()'s flags) into *msg;
 * a descriptor with it (the witness's session, close-on-exec) into *fd.
 * recvmsg()'s count.
 */
static ssize_t
read_arm(int gate, struct arm *msg, int *fd, int flags)
{
	union one_fd u;
	struct iovec iov = { msg, sizeof(*msg) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
	    .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *h;
	ssize_t n = recvmsg(gate, &mh, flags);

	for (h = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL; h != NULL;
	    h = CMSG_NXTHDR(&mh, h)) {
		if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
			continue;
		memcpy(fd, CMSG_DATA(h), sizeof(*fd));
		/* Before the command's fork: it must not inherit it. */
		(void)fcntl(*fd, F_SETFD, FD_CLOEXEC);
	}
	return n;
}

/* A failed fork's reason: errno e, and for EAGAIN which limit it meets. */
static void
fork_err(int e, struct err *err)
{
	err_set(err, "fork: %s%s", strerror(e), e == EAGAIN ? " (a limit on "
	    "processes: ulimit -u, or a container's pids.max)" : "");
}

/* A socketpair, for MSG_NOSIGNAL; SOCK_SEQPACKET's messages arrive whole. */
static int
cloexec_pair(int type, int sv[2], struct err *err)
{
	if (socketpair(AF_UNIX, type, 0, sv) == -1) {
		err_set(err, "socketpair: %s", strerror(errno));
		return -1;
	}
	if (fcntl(sv[0], F_SETFD, FD_CLOEXEC) == -1 ||
	    fcntl(sv[1], F_SETFD, FD_CLOEXEC) == -1) {
		err_set(err, "fcntl: %s", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	return 0;
}

/*
 * Tell the shim ch->kill_by, and hand it fd (-1: none), its copy of the
 * witness's session: the first time, it opens the gate.
 */
static int
send_arm(const struct child *ch, int fd)
{
	struct arm msg = { ch->kill_by };
	struct iovec iov = { &msg, sizeof(msg) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	union one_fd u;

	if (fd != -1) {
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof(u.buf);
		u.h.cmsg_level = SOL_SOCKET;
		u.h.cmsg_type = SCM_RIGHTS;
		u.h.cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(&u.h), &fd, sizeof(int));
	}
	/* MSG_NOSIGNAL: a shim that was killed must not kill pglock. */
	return sendmsg(ch->gate, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) ==
	    (ssize_t)sizeof(msg) ? 0 : -1;
}

static void
take_terminal(const struct child *ch)
{
	if (ch->foreground && tcgetpgrp(STDIN_FILENO) == ch->pgrp)
		give_terminal(getpgrp());
}

/*
 * The command, which had the terminal, was stopped (Ctrl-Z): stop pglock too,
 * so that the shell sees its job stop and takes the terminal back. Continued,
 * hand the terminal on again if the shell gave it to pglock (fg, not bg).
 * Without a shell doing job control above pglock (its parent in this session,
 * in another process group; not so under "ssh -t host pglock ..." or "tmux
 * new pglock ..."), nobody would continue a stopped pglock: continue at once.
 */
static void
suspend(const struct child *ch)
{
	pid_t pp = getppid();

	if (getpgid(pp) != getpgrp() && getsid(pp) == getsid(0)) {
		take_terminal(ch);
		(void)kill(getpid(), SIGSTOP);
		if (tcgetpgrp(STDIN_FILENO) == getpgrp())
			give_terminal(ch->pgrp);
	}
	(void)kill(-ch->pgrp, SIGCONT);
}

/* What the shim tells pglock on the gate socket, one message each. */
enum gate_kind {
	GATE_STARTED,		/* the command exec'd */
	GATE_NOEXEC,		/* exec failed: val is errno */
	GATE_SETPGID,		/* joining the group failed: errno */
	GATE_FORK,		/* forking the command failed: errno */
	GATE_STATUS,		/* the command's wait status */
	GATE_STOPPED		/* the command, which has the terminal, stopped
				   (Ctrl-Z): pglock stops too */
};

struct gate_msg {
	int kind;
	int val;
};

/* A stop is a hint: it must never block the shim's watch (pglock stopped). */
static void
tell(int gate, int kind, int val)
{
	struct gate_msg m = { kind, val };

	(void)send(gate, &m, sizeof(m), MSG_NOSIGNAL |
	    (kind == GATE_STOPPED ? MSG_DONTWAIT : 0));
}

/* SIGCHLD only wakes the shim's pselect(). */
static void
on_child(int sig)
{
	(void)sig;
}

/*
 * In the shim: fork the command, which execs argv (--hold: NULL) with the
 * terminal, lost_sig as the caller left it (was) and the signals pglock
 * caught at their default; its pid, or -1. *e: errno of a failed exec, or 0.
 */
static pid_t
fork_command(char *const argv[], const struct child *ch, int gate,
    const sigset_t *mask, const struct sigaction *was, int *e)
{
	pid_t self = getpid(), pid;
	int ep[2];
	ssize_t n;

	*e = 0;
	if (pipe(ep) == -1 || fcntl(ep[0], F_SETFD, FD_CLOEXEC) == -1 ||
	    fcntl(ep[1], F_SETFD, FD_CLOEXEC) == -1) {
		*e = errno;
		return -1;
	}
	if ((pid = fork()) == 0) {
		close(gate);
		close(ep[0]);
#ifdef __linux__
		/* Its own guard, if pkill -9 pglock kills the shim too. */
		(void)prctl(PR_SET_PDEATHSIG, ch->lost_sig);
		if (getppid() != self)
			_exit(128 + ch->lost_sig);
#else
		(void)self;
#endif
		if (ch->foreground)
			give_terminal(ch->pgrp);
		(void)sigaction(ch->lost_sig, was, NULL);
		sig_reset();
		sigprocmask(SIG_SETMASK, mask, NULL);
		if (argv == NULL)
			hold_stdin();
		if (ch->tail != NULL)
			tail_child(ch->tail);
		execvp(argv[0], argv);
		*e = errno;
		(void)!write(ep[1], e, sizeof(*e));
		_exit(EXIT_NOTFOUND);
	}
	*e = pid == -1 ? errno : 0;
	close(ep[1]);
	/* End of file: exec'd. */
	do
		n = pid == -1 ? 0 : read(ep[0], e, sizeof(*e));
	while (n == -1 && errno == EINTR);
	if (n != (ssize_t)sizeof(*e) && pid != -1)
		*e = 0;
	close(ep[0]);
	return pid;
}

/* Signal all below the shim; where there is no /proc to look, its group. */
static void
signal_below(int sig)
{
	if (tree_signal(getpid(), sig, 0, 0) != -1)
		return;
	if (sig == SIGKILL)
		(void)kill(0, SIGKILL);
	else
		signal_group(0, sig);
}

/* Tell --hold's script, once (*told). */
static void
tell_once(const struct child *ch, int *told)
{
	if (ch->notify > 0 && !*told)
		(void)notify(ch->notify, ch->lost_sig);
	*told = 1;
}

/*
 * The shim's wait, SIGCHLD let in (during), for pglock's word on the gate
 * (3), unless watch is 0, or till t: what came, as read_arm()'s count; -1
 * with errno EAGAIN if nothing did.
 */
static ssize_t
shim_wait(int watch, mono_t t, const sigset_t *during, struct arm *msg)
{
	struct timespec ts;
	fd_set in;
	ssize_t n;
	int fd = -1;

	FD_ZERO(&in);
	if (watch)
		FD_SET(3, &in);
	if (pselect(4, &in, NULL, NULL, deadline_ts(t, &ts), during) != 1) {
		errno = EAGAIN;
		return -1;
	}
	n = read_arm(3, msg, &fd, MSG_DONTWAIT);
	if (fd != -1)
		(void)close(fd);	/* the witness's came with the first */
	return n;
}

/*
 * The shim's life once the command runs: reap every child (the command's
 * status to pglock) till none is left, then close the witness's session (5)
 * and the lock's (4) and exit. Its watch over pglock: if pglock dies (end of
 * file on the gate, 3), lost_sig to all below, once, and KILL kill_after_ms
 * later; KILL at the lease's end (kill_by, which pglock renews) if that
 * comes first, or if pglock, stopped, did not renew it. SIGCHLD is taken in
 * pselect() alone; quiet is the mask besides. The command stopped on a
 * terminal it leads (Ctrl-Z) is told to pglock, which stops; the shim never
 * stops, so that it KILLs all below it at the lease's end even then.
 */
static __attribute__((noreturn)) void
shim_reap(const struct child *ch, pid_t cmd, const sigset_t *quiet,
    mono_t kill_by)
{
	mono_t kill_at = NEVER;
	sigset_t during = *quiet, outside = *quiet;
	struct arm msg;
	int alone = 0, told = 0, st;
	ssize_t n;
	pid_t r;

	sigdelset(&during, SIGCHLD);
	sigaddset(&outside, SIGCHLD);
	sigprocmask(SIG_SETMASK, &outside, NULL);
	for (;;) {
		while ((r = waitpid(-1, &st, WNOHANG | WUNTRACED)) > 0) {
			if (WIFSTOPPED(st) && r == cmd && ch->foreground)
				tell(3, GATE_STOPPED, 0);
			else if (r == cmd && !WIFSTOPPED(st))
				tell(3, GATE_STATUS, st);
		}
		if (r == -1 && errno == ECHILD) {
			/* All is gone: the witness first, then the lock may go. */
			(void)close(5);
			(void)close(4);
			_exit(0);
		}
		/* Not renewed, pglock stopped: the server may free the lock. */
		if (deadline_passed(kill_by)) {
			tell_once(ch, &told);
			kill_by = NEVER;
			kill_at = deadline_in(0);
		}
		if (deadline_passed(kill_at)) {
			/* Again and again: a fork may race a pass. */
			signal_below(SIGKILL);
			kill_at = deadline_in(10);
		}
		n = shim_wait(!alone, mono_min(kill_at, kill_by), &during,
		    &msg);
		if (n == (ssize_t)sizeof(msg)) {	/* read only till alone */
			kill_by = msg.kill_by;
		} else if (n == 0 || (n == -1 && errno != EAGAIN &&
		    errno != EINTR)) {
			/* End of file: pglock died. */
			alone = 1;
			tell_once(ch, &told);
			signal_below(ch->lost_sig);
			kill_at = mono_min(kill_at,
			    deadline_in(ch->kill_after_ms));
		}
	}
}

/*
 * The shim (child.h): leads the command's group, ignores what pglock passes
 * on to it, waits at the gate, forks the command, and reaps all below it
 * till the end, its watchdog meanwhile. A subreaper, it keeps every orphan
 * of the command below it (Linux). The terminal's stop signals, which the
 * group gets, are blocked (so the command still gets them at their
 * default): the shim never stops on them.
 */
static __attribute__((noreturn)) void
shim(char *const argv[], const struct child *parent, int gate,
    const sigset_t *mask)
{
	struct child ch = *parent;
	struct sigaction was, sa;
	sigset_t quiet = *mask, blocked;
	struct arm msg;
	pid_t cmd;
	ssize_t n;
	int e, keep[3] = { gate, ch.session_fd, -1 };

	ch.pgrp = getpid();
	if (setpgid(0, 0) == -1) {
		tell(gate, GATE_SETPGID, errno);
		_exit(EXIT_NOTFOUND);
	}
	(void)sigaction(ch.lost_sig, NULL, &was);
	sig_ignore(ch.lost_sig);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_child;
	sigemptyset(&sa.sa_mask);
	(void)sigaction(SIGCHLD, &sa, NULL);
	sigaddset(&quiet, SIGTSTP);
	sigaddset(&quiet, SIGTTIN);
	sigaddset(&quiet, SIGTTOU);
	blocked = quiet;
	sigaddset(&blocked, SIGCHLD);
	sigprocmask(SIG_SETMASK, &blocked, NULL);
#ifdef __linux__
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
#endif
	/* The gate: no word (pglock gave up, or died), no command. */
	do
		n = read_arm(gate, &msg, &keep[2], 0);
	while (n == -1 && errno == EINTR);
	if (n != (ssize_t)sizeof(msg))
		_exit(0);
	if ((cmd = fork_command(argv, &ch, gate, mask, &was, &e)) == -1) {
		tell(gate, GATE_FORK, e);
		_exit(EXIT_OSERR);
	}
	tell(gate, e != 0 ? GATE_NOEXEC : GATE_STARTED, e);
	if (e != 0) {
		(void)waitpid(cmd, NULL, 0);
		_exit(0);
	}
	/*
	 * Nothing of pglock's kept (its output's reader must see the end) but
	 * the gate and the sessions, which hold the lock while the command
	 * lives: 3, 4 and 5.
	 */
	close_others(keep, 3);
	shim_reap(&ch, cmd, &quiet, msg.kill_by);
}

int
child_spawn(char *const argv[], struct child *ch, struct err *err)
{
	int sp[2];
	sigset_t mask;

	/*
	 * Hand the terminal over only when pglock is alone on it: in
	 * "pglock k cmd | less", less would lose it. Asked now, not when
	 * the wait began: the shell may have put pglock in the background.
	 */
	ch->foreground = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO) &&
	    tcgetpgrp(STDIN_FILENO) == getpgrp();
#ifdef __linux__
	/* If the shim is killed, what it reaped for comes to pglock. */
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
#endif
	/*
	 * The gate, both ways: pglock's first word lets the shim fork the
	 * command, later ones renew the lease, and the shim answers how the
	 * start went, then the command's status.
	 */
	if (cloexec_pair(SOCK_SEQPACKET, sp, err) == -1)
		return -1;
	sig_block(&mask);
	ch->pid = fork();
	if (ch->pid == 0) {
		close(sp[0]);
		shim(argv, ch, sp[1], &mask);
	}
	/* Both sides set the group, so no signal races ahead of it. */
	ch->pgrp = ch->pid;
	if (ch->pid != -1)
		(void)setpgid(ch->pid, ch->pgrp);
	sigprocmask(SIG_SETMASK, &mask, NULL);
	close(sp[1]);
	if (ch->tail != NULL)
		tail_parent(ch->tail);
	if (ch->pid == -1) {
		fork_err(errno, err);
		close(sp[0]);
		return -1;
	}
	ch->gate = sp[0];
	return 0;
}

/*
 * KILL all below the shim, pass after pass while any is found (a fork may
 * race a pass), for at most about a second; where there is no /proc, the
 * group. The shim then reaps it all and exits.
 */
static void
kill_command(const struct child *ch)
{
	int i, n;

	for (i = 0; i < 100; i++) {
		if ((n = tree_signal(ch->pid, SIGKILL, 0, 0)) == 0)
			return;
		if (n == -1) {
			(void)kill(-ch->pgrp, SIGKILL);
			return;
		}
		sleep_ms(10);
	}
}

/*
 * The shim's word on the command's start, into *m: recv()'s count; -2 if none
 * came by the lease's end (ch->kill_by), past which nothing may start.
 */
static ssize_t
read_start(const struct child *ch, struct gate_msg *m)
{
	struct pollfd p = { .fd = ch->gate, .events = POLLIN };
	ssize_t n;
	int rc;

	do {
		rc = poll(&p, 1, poll_ms(ch->kill_by));
		if (rc == 0 && deadline_passed(ch->kill_by))
			return -2;
		n = rc < 1 ? -1 : recv(ch->gate, m, sizeof(*m), MSG_DONTWAIT);
	} while (n == -1 && (errno == EINTR || errno == EAGAIN || rc == 0));
	return n;
}

enum child_start
child_open_gate(struct child *ch, const char *cmd, int *status, struct err *err)
{
	struct gate_msg m = { GATE_STARTED, 0 };
	ssize_t n;

	/* A shim killed at the gate: read_start() reads its end. */
	if (send_arm(ch, ch->witness_fd) == -1 && errno != EPIPE &&
	    errno != ECONNRESET) {
		err_set(err, "the gate: %s", strerror(errno));
		child_abort(ch);
		return CHILD_OSERR;
	}
	n = read_start(ch, &m);
	/* A shim killed at the gate: child_wait() reaps it, its status. */
	if (n == 0 || (n == (ssize_t)sizeof(m) && m.kind == GATE_STARTED))
		return CHILD_STARTED;
	/*
	 * Nothing of it may outlive this: all below the shim, then it, before
	 * its gate closes (which it would take for pglock's death).
	 */
	kill_command(ch);
	(void)kill(ch->pid, SIGKILL);
	(void)waitpid(ch->pid, NULL, 0);
	close(ch->gate);
	ch->gate = -1;
	ch->pid = -1;
	take_terminal(ch);
	if (n == -2) {
		err_set(err, "%s: its start did not end within the lease",
		    cmd);
		return CHILD_OSERR;
	}
	if (n != (ssize_t)sizeof(m)) {
		err_set(err, "%s: did not start", cmd);
		return CHILD_OSERR;
	}
	if (m.kind == GATE_NOEXEC) {
		exec_error(cmd, m.val, status, err);
		return CHILD_NOEXEC;
	}
	if (m.kind == GATE_FORK)
		fork_err(m.val, err);
	else
		err_set(err, "setpgid: %s", strerror(m.val));
	return CHILD_OSERR;
}

void
child_abort(struct child *ch)
{
	if (ch->pid != -1) {
		close(ch->gate);
		ch->gate = -1;
		(void)waitpid(ch->pid, NULL, 0);
		ch->pid = -1;	/* reaped: its pid may be another's now */
	}
}

void
child_kill(struct child *ch)
{
	kill_command(ch);
	(void)kill(-ch->pgrp, SIGKILL);
	(void)waitpid(ch->pid, NULL, 0);
	close(ch->gate);
	ch->gate = -1;
	ch->pid = -1;
	take_terminal(ch);
}

void
child_exec(char *const argv[], int *status, struct err *err)
{
	sigset_t mask;

	sig_block(&mask);
	sig_reset();
	sigprocmask(SIG_SETMASK, &mask, NULL);
	execvp(argv[0], argv);
	exec_error(argv[0], errno, status, err);
}

/* How many pollfds wait_events() fills: three, then the tail's. */
#define NPOLL (3 + TAIL_NFDS)

/*
 * Wait for a signal, input on fd (-1: none), the shim's word, the command's
 * output or pglock's room for it (ch->tail), or the first time at[0..2]
 * (NEVER: none; at NULL: just look), in p: 0, or -1 (err). The output is
 * copied on at once, a chunk at a time, as poll() says it may be: never
 * waited for, lest the lock's checks wait.
 */
static int
wait_events(const struct child *ch, int fd, const mono_t *at,
    struct pollfd p[NPOLL], struct err *err)
{
	mono_t first = NEVER;
	int i;

	/* A time already past is due now: 0, never "none". */
	for (i = 0; at != NULL && i < 3; i++)
		first = mono_min(first, at[i]);
	/* After EINTR poll() leaves revents alone: clear them first. */
	memset(p, 0, NPOLL * sizeof(p[0]));
	p[0].fd = sig_fd();
	p[1].fd = fd;
	p[2].fd = ch->gate;
	p[0].events = p[1].events = p[2].events = POLLIN;
	if (ch->tail != NULL)
		tail_poll(ch->tail, p + 3);
	else
		for (i = 3; i < NPOLL; i++)
			p[i].fd = -1;
	if (poll(p, NPOLL, at == NULL ? 0 : poll_ms(first)) == -1 &&
	    errno != EINTR) {
		err_set(err, "poll: %s", strerror(errno));
		return -1;
	}
	if (ch->tail != NULL)
		tail_pump(ch->tail, p + 3);
	return 0;
}

/*
 * Pass the signals that came on to the group, and look at the command: 1 if
 * it exited (*st says how), else 0; -1 if waitpid failed (reason in err).
 */
static int
forward_and_reap(const struct child *ch, int reaped, int *st,
    struct err *err)
{
	pid_t r;
	int sig;

	/* Once the shim is reaped its group may be gone, its id reused. */
	while ((sig = sig_take()) != 0) {
		if (sig_forwarded(sig) && !reaped)
			signal_group(ch->pgrp, sig);
	}
	if (reaped)
		return 1;
	r = waitpid(ch->pid, st, WNOHANG);
	if (r == -1 && errno != EINTR) {
		err_set(err, "waitpid: %s", strerror(errno));
		return -1;
	}
	return r == ch->pid;
}

/*
 * Signal all of the command: its group, and what is below the shim in other
 * groups (as timeout(1) and setsid move to), so that each gets sig once.
 */
static void
signal_command(const struct child *ch, int sig)
{
	signal_group(ch->pgrp, sig);
	(void)tree_signal(ch->pid, sig, ch->pgrp, 0);
}

/*
 * Lost or late: tell --hold's script, once, at once, if it is still pglock's
 * parent (never init, nor a subreaper that took pglock on).
 */
static void
tell_script(struct child *ch)
{
	if (ch->notify > 0 && !ch->told && getppid() == ch->notify)
		ch->told = notify(ch->notify, ch->lost_sig) == 0;
}

static void
stop_command(struct child *ch)
{
	tell_script(ch);
	signal_command(ch, ch->lost_sig);
}

/* Lost: stop the command; its KILL (*kill_at) comes by end, the lease's end. */
static void
stop_group(struct child *ch, mono_t end, mono_t *kill_at)
{
	ch->stopped = 1;
	stop_command(ch);
	*kill_at = mono_min(mono_min(*kill_at, deadline_in(ch->kill_after_ms)),
	    end);
}

/*
 * What the shim said: 1 if the command's status came (in *cst); *halt set if
 * the command stopped on the terminal; its end of file (it exited, or was
 * killed) closes the gate.
 */
static int
read_gate(struct child *ch, int *cst, int *halt)
{
	struct gate_msg m;
	ssize_t n;
	int got = 0;

	while (ch->gate != -1) {
		n = recv(ch->gate, &m, sizeof(m), MSG_DONTWAIT);
		if (n == (ssize_t)sizeof(m)) {
			if (m.kind == GATE_STATUS) {
				*cst = m.val;
				got = 1;
			}
			*halt |= m.kind == GATE_STOPPED;
		} else if (n == -1 && errno == EINTR) {
			continue;
		} else if (n == -1 && (errno == EAGAIN ||
		    errno == EWOULDBLOCK)) {
			break;
		} else {
			close(ch->gate);
			ch->gate = -1;
		}
	}
	return got;
}

/* The command exited: say how many it left, that the shim waits for. */
static void
leftovers(const struct child *ch, const struct child_watch *w)
{
	int n;

	if (w->waiting != NULL && (n = tree_signal(ch->pid, 0, 0, 0)) > 0)
		w->waiting(w->waiting_arg, n);
}

/*
 * The shim was killed: what was below it came to pglock, a subreaper. KILL
 * and reap it all, lest it run on without the lock.
 */
static void
end_orphans(void)
{
	int i, n;

	for (i = 0; i < 500; i++) {
		n = tree_signal(getpid(), SIGKILL, 0, 0);
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		if (n <= 0)
			return;
		sleep_ms(10);
	}
}

/*
 * The shim is reaped (st): *status is the command's (have: cst), or the
 * shim's if it was killed, and then what it left came to pglock: end it.
 */
static void
command_status(struct child *ch, int st, int have, int cst, int *status)
{
	int halt = 0;

	/* The shim said it before it exited; nothing said: it was killed. */
	if (!have)
		have = read_gate(ch, &cst, &halt);
	if (ch->gate != -1)
		close(ch->gate);
	ch->gate = -1;
	/* Killed, maybe after the command's status: what it had is pglock's. */
	if (WIFSIGNALED(st))
		end_orphans();
	take_terminal(ch);
	if (have)
		st = cst;
	*status = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
}

/* --max-time's end, and the KILL after a stop, when their time comes. */
static void
act_on_times(struct child *ch, int lost, mono_t *end_at, mono_t *kill_at,
    int *late)
{
	if (deadline_passed(*end_at)) {
		/* --max-time: as timeout(1) does, then KILL later. */
		*end_at = NEVER;
		if (!lost) {
			*late = 1;
			stop_command(ch);
			*kill_at = deadline_in(ch->kill_after_ms);
		}
	}
	if (deadline_passed(*kill_at)) {
		kill_command(ch);
		*kill_at = deadline_in(100);	/* till the shim is gone */
	}
}

enum child_end
child_wait(struct child *ch, const struct child_watch *w, int *status,
    struct err *err)
{
	struct pollfd p[NPOLL];
	mono_t due = NEVER, end = ch->kill_by, kill_at = NEVER, at[3];
	mono_t end_at = w->max_ms > 0 ? deadline_in(w->max_ms) : NEVER;
	int watching = w->fd != -1, lost = 0, late = 0, st = 0, r, cst = 0;
	int have = 0, reaped = 0, halt = 0;
	/*
	 * Look once first: the lock's wait may have taken a SIGCHLD from the
	 * shim at its gate, and the check's first step tells when it is due.
	 */
	int look = 1;

	ch->stopped = 0;
	ch->told = 0;
	for (;;) {
		at[0] = watching ? due : NEVER;
		at[1] = kill_at;
		at[2] = end_at;
		if (wait_events(ch, watching ? w->fd : -1, look ? NULL : at, p,
		    err) == -1)
			return CHILD_FAILED;

		if ((p[2].revents & (POLLIN | POLLHUP)) &&
		    read_gate(ch, &cst, &halt) && !have++)
			leftovers(ch, w);
		/* Ctrl-Z: stop too, unless the lock is lost (KILL is due). */
		if (halt && !lost)
			suspend(ch);
		halt = 0;
		if ((p[0].revents & POLLIN) || look) {
			look = 0;
			if ((r = forward_and_reap(ch, reaped, &st,
			    err)) == -1)
				return CHILD_FAILED;
			reaped = r;
		}
		/* Its output, still in hand, goes on with the checks. */
		if (reaped && !tail_busy(ch->tail))
			break;
		if (watching && w->step(w->arg, (p[1].revents & (POLLIN |
		    POLLERR | POLLHUP)) != 0, &due, &end, err)) {
			/* An answered check: the shim's lease too. */
			if (end != ch->kill_by) {
				ch->kill_by = end;
				(void)send_arm(ch, -1);
			}
		} else if (watching) {
			watching = 0;
			lost = 1;
			if (reaped)	/* all gone: its output is still written */
				tell_script(ch);
			else
				stop_group(ch, end, &kill_at);
		}
		if (!reaped)
			act_on_times(ch, lost, &end_at, &kill_at, &late);
	}
	command_status(ch, st, have, cst, status);
	/* A lock the check in flight finds gone was lost as the command ran. */
	if (watching && !w->finish(w->arg, err)) {
		lost = 1;
		tell_script(ch);
	}
#ifndef __linux__
	/*
	 * Leave nothing of the command running without the lock: with no
	 * subreaper, orphans may be left in its group (which they keep).
	 */
	if (lost)
		(void)kill(-ch->pgrp, SIGKILL);
#endif
	return lost ? CHILD_LOST : late ? CHILD_LATE : CHILD_EXITED;
}
