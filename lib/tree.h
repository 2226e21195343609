/* SPDX-License-Identifier: ISC */
/*
 * tree: the processes below a process, whatever group or session they moved
 * to, found by their parents in Linux's /proc. Under a child subreaper at the
 * root, an orphan stays below it, so nothing the command started gets away.
 */
#ifndef PGLOCK_TREE_H
#define PGLOCK_TREE_H

#include <sys/types.h>

/*
 * Send sig (0: none, just count) to every process below root that has not
 * exited, except those in process group pgrp (0: none) and spare with all
 * below it (0: none), then SIGCONT to them unless sig is KILL, CONT, USR1 or
 * USR2 (a stopped process acts on a signal only once continued). Returns
 * how many it found not exited, or -1 where there is no /proc to read.
 */
int tree_signal(pid_t root, int sig, pid_t pgrp, pid_t spare);

#endif
