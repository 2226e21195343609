/* SPDX-License-Identifier: ISC */
/*
 * pglock.h: what pglock.c shares with run.c and inspect.c, the modes: the
 * parsed options, and (opts.c) KEY's resolution under them. How to print and
 * exit is out.h's.
 */
#ifndef PGLOCK_H
#define PGLOCK_H

#include <sys/types.h>

#include "lib/conn.h"
#include "lib/key.h"
#include "lib/lock.h"

/* --scope: where the lock lives; auto proves the connection direct first. */
enum { SCOPE_AUTO, SCOPE_SESSION, SCOPE_TRANSACTION };
/* By SCOPE_*, as --scope takes them. */
extern const char *const scope_names[3];

/* What pglock does: one of the usage lines. */
enum mode {
	MODE_RUN, MODE_HOLD, MODE_STATUS, MODE_EXPLAIN, MODE_BREAK,
	MODE_COUNTER, MODE_FORGET, MODE_PAUSE, MODE_RESUME
};

/* The command line, as parsed and checked; main() resolves lock.key. */
struct opts {
	enum mode mode;
	struct lock_req lock;	/* the key, -s, and -n/-w's wait; its budget
				   points at budget */
	struct budget budget;	/* -w's, -n's: bound_wait() derives it */
	struct conn_opts conn;
	const char *key;	/* KEY, or TENANT */
	const char *label;	/* KEY for messages: control bytes escaped */
	char **keys;		/* --status: the KEYs, NULL-terminated */
	char **argv;		/* COMMAND [ARG ...], or $SHELL -c STRING */
	char *shell_cmd;	/* -c */
	struct key_how how;	/* --hash, --id or --namespace N */
	unsigned key_opts;	/* A_ID, A_HASH, A_NS (pglock.c): which given */
	int scope;		/* SCOPE_*: --scope */
	int conflict_exit;
	int no_fork;
	int verbose;
	int quiet;
	long check_ms;
	int lost_sig;
	long kill_after_ms;
	long max_ms;		/* --max-time; 0: none */
	int json;
	int peek;
	int fence;
	int require_sync;	/* refuse a number a failover could repeat */
	char table_sql[300];	/* --counter-table as SQL: "schema"."table" */
	int once;		/* --once*: skip a slot's second success */
	long long period_ms;	/* --once-per; 0: one slot for ever (--once) */
	int record;		/* record the outcome (--record, --once*) */
	int record_opt;		/* which of those was given (an OPT_*), or 0 */
	char runs_sql[300];	/* --runs-table, as table_sql */
	char history_sql[320];	/* its history table (runs_history_sql()) */
	int keep_history;	/* --keep-history: rows a key keeps; 0: none */
	int keep_history_set;	/* --keep-history was given */
	int history;		/* --status --history */
	int keep_output_always;	/* --keep-output-always: a success's too */
	size_t keep_output;	/* --keep-output: the output's last bytes
				   kept for the record; 0: none */
	long long ok_within_ms;	/* --status --ok-within; -1: none */
	pid_t caller;		/* parent at start: --hold's script; 0: init */
	long long pause_ms;	/* --pause --for; -1: until --resume */
	int pause_new;		/* --pause --new: KEY may have no record */
	const char *reason;	/* --pause --reason; NULL: none */
	const char *node;	/* this machine's name in records: --node,
				   PGLOCK_NODE or the host name */
	int metrics;		/* --status --metrics */
	const char *tz;		/* --tz: slots of ZONE's wall clock; NULL */
	long long after_ms;	/* --after: due this far into a slot */
	long long spread_s;	/* --spread, whole seconds; 0: none */
	long long jitter_ms;	/* --jitter: start up to this much later */
};

/* KEY -> lock id under --id, --namespace or --hash; bad input exits 64. */
void resolve_key_or_err(const struct opts *o, const char *text, struct key *k);

/* The name a resolved KEY's record of runs goes by (malloc'd). */
char *record_key(const struct opts *o, const char *text);

#endif
