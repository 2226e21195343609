/* SPDX-License-Identifier: ISC */
/*
 * failfork: a fork(2) that fails, for tests of what pglock does then. Loaded
 * with LD_PRELOAD; FAILFORK="N[,M...]" makes the Nth (Mth, ...) fork() call
 * of a process named pglock (however started: valgrind runs it by that name
 * too) fail with EAGAIN, as a process limit makes it fail. Its children (no
 * exec) and other programs fork as usual. STOPFORK=N stops the child of its
 * Nth fork at once (SIGSTOP), as one that never runs again.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static pid_t (*real_fork)(void);
static pid_t owner;
static int calls;
static char fail[128];
static int stop;

__attribute__((constructor)) static void
load(void)
{
	const char *s = getenv("FAILFORK");

	/* POSIX's way to a function from dlsym()'s object pointer. */
	*(void **)&real_fork = dlsym(RTLD_NEXT, "fork");
	/* Another program forks as usual: owner stays 0. */
	if (strcmp(program_invocation_short_name, "pglock") != 0)
		return;
	owner = getpid();
	if (s != NULL)
		snprintf(fail, sizeof(fail), ",%s,", s);
	if ((s = getenv("STOPFORK")) != NULL)
		stop = atoi(s);
}

pid_t
fork(void)
{
	char n[16];
	pid_t pid;

	if (getpid() != owner)
		return real_fork();
	snprintf(n, sizeof(n), ",%d,", ++calls);
	if (strstr(fail, n) != NULL) {
		errno = EAGAIN;
		return -1;
	}
	pid = real_fork();
	if (pid == 0 && calls == stop)
		(void)raise(SIGSTOP);
	return pid;
}
