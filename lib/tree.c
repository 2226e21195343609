/* SPDX-License-Identifier: ISC */
/*
 * tree: walk /proc for the processes below a root, by parent, and signal
 * them; one pass a call, as the callers' loops come back while any is left.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tree.h"

struct proc {
	pid_t pid, ppid, pgrp;
	int live;		/* not exited: running, stopped, or a zombie
				   leader whose other threads run */
	int below;		/* below the root: how deep (1: a child) */
};

/*
 * Read pid's parent, group and state from /proc/PID/stat: 0, or -1 if it is
 * gone (or there is no /proc). The state comes after the last ')', as the
 * name may hold some; num_threads is proc(5)'s field 20, 17 after it.
 */
static int
read_stat(pid_t pid, struct proc *p)
{
	char path[32], buf[1024], *s;
	ssize_t n;
	int fd, i, zombie;
	long threads = 0;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if ((fd = open(path, O_RDONLY)) == -1)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	(void)close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	s = strrchr(buf, ')');
	if (s == NULL || s[1] != ' ' || s[2] == '\0')
		return -1;
	zombie = s[2] == 'Z' || s[2] == 'X';
	s += 3;
	p->pid = pid;
	p->ppid = (pid_t)strtol(s, &s, 10);
	p->pgrp = (pid_t)strtol(s, &s, 10);
	for (i = 2; i < 17; i++)
		threads = strtol(s, &s, 10);
	p->live = !zombie || threads > 1;
	p->below = 0;
	return 0;
}

static int
by_pid(const void *a, const void *b)
{
	const struct proc *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Every process in /proc, sorted by pid, into *out: how many, or -1. */
static long
list_procs(struct proc **out)
{
	struct proc *ps = NULL, *more;
	size_t n = 0, cap = 0;
	struct dirent *e;
	DIR *d;
	char *end;
	long pid;

	if ((d = opendir("/proc")) == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		pid = strtol(e->d_name, &end, 10);
		if (*end != '\0' || pid <= 0)
			continue;
		if (n == cap) {
			cap = cap == 0 ? 256 : cap * 2;
			if ((more = realloc(ps, cap * sizeof(*ps))) == NULL)
				break;	/* what fits: the caller comes back */
			ps = more;
		}
		if (read_stat((pid_t)pid, &ps[n]) == 0)
			n++;
	}
	(void)closedir(d);
	if (n > 0)
		qsort(ps, n, sizeof(*ps), by_pid);
	*out = ps;
	return (long)n;
}

/*
 * Mark what is below root, not spare nor below it, with its depth: pass after
 * pass, by parent. The deepest: how deep.
 */
static int
mark_below(struct proc *ps, long n, pid_t root, pid_t spare)
{
	struct proc key = { 0, 0, 0, 0, 0 }, *parent;
	int more = 1, deepest = 0;
	long i;

	while (more) {
		more = 0;
		for (i = 0; i < n; i++) {
			if (ps[i].below || ps[i].pid == spare ||
			    ps[i].pid == root)
				continue;
			key.pid = ps[i].ppid;
			parent = bsearch(&key, ps, (size_t)n, sizeof(*ps),
			    by_pid);
			if (ps[i].ppid == root)
				ps[i].below = 1;
			else if (parent != NULL && parent->below)
				ps[i].below = parent->below + 1;
			else
				continue;
			more = 1;
			if (ps[i].below > deepest)
				deepest = ps[i].below;
		}
	}
	return deepest;
}

int
tree_signal(pid_t root, int sig, pid_t pgrp, pid_t spare)
{
	struct proc *ps;
	long n, i;
	int found = 0, depth, deepest, cont = sig != 0 && sig != SIGKILL &&
	    sig != SIGCONT && sig != SIGUSR1 && sig != SIGUSR2;

	if ((n = list_procs(&ps)) < 0)
		return -1;
	deepest = mark_below(ps, n, root, spare);
	/*
	 * A parent before its children (pids wrap: not by pid): a shell KILLed
	 * first cannot say "Killed" of a child KILLed before it.
	 */
	for (depth = 1; depth <= deepest; depth++)
		for (i = 0; i < n; i++) {
			if (ps[i].below != depth || !ps[i].live ||
			    (pgrp != 0 && ps[i].pgrp == pgrp))
				continue;
			found++;
			if (sig != 0)
				(void)kill(ps[i].pid, sig);
		}
	for (i = 0; cont && i < n; i++)
		if (ps[i].below && ps[i].live && (pgrp == 0 ||
		    ps[i].pgrp != pgrp))
			(void)kill(ps[i].pid, SIGCONT);
	free(ps);
	return found;
}
