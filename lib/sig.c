/* SPDX-License-Identifier: ISC */
/*
 * sig: the self-pipe trick. Handlers only set a flag and write one byte;
 * the event loops poll the pipe and do the work outside signal context.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "sig.h"

static const int handled[] = {
	SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD
};
#define NHANDLED (sizeof(handled) / sizeof(handled[0]))

static volatile sig_atomic_t pending[NHANDLED];
static int caught[NHANDLED];	/* a handler is installed */
static int pipe_ignored;	/* SIGPIPE, by pglock and not its caller */
static int wake[2] = { -1, -1 };

static void
on_signal(int sig)
{
	int saved = errno;
	size_t i;

	for (i = 0; i < NHANDLED; i++)
		if (handled[i] == sig)
			pending[i] = 1;
	/* A full pipe already means "wake up": the lost byte is harmless. */
	(void)!write(wake[1], "", 1);
	errno = saved;
}

static int
set_flags(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl == -1 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1)
		return -1;
	return fcntl(fd, F_SETFD, FD_CLOEXEC);
}

int
sig_init(struct err *err)
{
	struct sigaction sa, pipe_was;
	size_t i;

	if (pipe(wake) == -1 || set_flags(wake[0]) == -1 ||
	    set_flags(wake[1]) == -1) {
		err_set(err, "pipe: %s", strerror(errno));
		return -1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < NHANDLED; i++) {
		struct sigaction old;

		/* Ignored by the caller (nohup, cmd &): stays so, for both. */
		if (sigaction(handled[i], NULL, &old) == 0 &&
		    old.sa_handler == SIG_IGN && handled[i] != SIGCHLD)
			continue;
		if (sigaction(handled[i], &sa, NULL) == -1) {
			err_set(err, "sigaction: %s", strerror(errno));
			return -1;
		}
		caught[i] = 1;
	}
	/*
	 * A reader of -v's stderr or of a --hold's line that went away must
	 * not kill pglock while it holds the lock: write() fails instead,
	 * stdout's with 71. The command gets the caller's SIGPIPE back.
	 */
	if (sigaction(SIGPIPE, NULL, &pipe_was) == 0 &&
	    pipe_was.sa_handler != SIG_IGN) {
		signal(SIGPIPE, SIG_IGN);
		pipe_ignored = 1;
	}
	return 0;
}

int
sig_fd(void)
{
	return wake[0];
}

int
sig_take(void)
{
	char buf[64];
	size_t i;

	while (read(wake[0], buf, sizeof(buf)) > 0)
		;
	for (i = 0; i < NHANDLED; i++) {
		if (pending[i]) {
			pending[i] = 0;
			return handled[i];
		}
	}
	return 0;
}

int
sig_forwarded(int sig)
{
	return sig != SIGCHLD && sig != 0;
}

void
sig_reset(void)
{
	size_t i;

	for (i = 0; i < NHANDLED; i++)
		if (caught[i])
			signal(handled[i], SIG_DFL);
	if (pipe_ignored)
		signal(SIGPIPE, SIG_DFL);
}

void
sig_ignore(int also)
{
	size_t i;

	for (i = 0; i < NHANDLED; i++)
		signal(handled[i], handled[i] == SIGCHLD ? SIG_DFL : SIG_IGN);
	if (also != SIGKILL && also != SIGSTOP && also != SIGCHLD)
		signal(also, SIG_IGN);
}

void
sig_block(sigset_t *old)
{
	sigset_t set;
	size_t i;

	sigemptyset(&set);
	for (i = 0; i < NHANDLED; i++)
		sigaddset(&set, handled[i]);
	/* Ctrl-Z must not stop the shim before it can block it. */
	sigaddset(&set, SIGTSTP);
	sigaddset(&set, SIGTTIN);
	sigaddset(&set, SIGTTOU);
	sigprocmask(SIG_BLOCK, &set, old);
}
