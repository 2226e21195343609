/* SPDX-License-Identifier: ISC */
/*
 * pglock: flock(1) for a fleet. Take a PostgreSQL advisory lock on KEY, run
 * COMMAND while holding it, release it when COMMAND exits.
 *
 * Design. main() reads top to bottom: parse the options, check them, turn KEY
 * into a lock id (lib/key), connect (lib/conn), hand the connection to the
 * mode. run.c takes a run through its steps: the lock in one round trip,
 * verified in pg_locks (lib/lock), the command in its own process group,
 * watched with the signals and the connection in one poll() loop (lib/child)
 * while the lease's checks run (lib/lease). The lock lives as long as the
 * session: if that goes, the command is stopped and pglock exits 75. The modes
 * that only look (--status, --explain, --break) or change only the record
 * of runs (--forget, --pause, --resume) are in inspect.c.
 * lib/ returns errors; the files above it print and exit, through out.c.
 *
 * Copyright (c) 2026 The pglock authors. Permission to use, copy, modify
 * and distribute this software for any purpose is granted under the terms
 * of the ISC licence in COPYING.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "inspect.h"
#include "lib/arg.h"
#include "lib/clock.h"
#include "lib/conn.h"
#include "lib/counter.h"
#include "lib/exits.h"
#include "lib/key.h"
#include "lib/lock.h"
#include "lib/mask.h"
#include "lib/query.h"
#include "lib/runs.h"
#include "lib/said.h"
#include "lib/sig.h"
#include "lib/slots.h"
#include "lib/tail.h"
#include "out.h"
#include "pglock.h"
#include "run.h"

#define PGLOCK_VERSION "0.1.0"



static const char usage_text[] =
    "usage: pglock [options] KEY COMMAND [ARG ...]\n"
    "       pglock [options] KEY -c SHELL-COMMAND\n"
    "       pglock [options] --once-per DURATION [--tz ZONE] [--after OFFSET]\n"
    "              [--spread SPREAD] KEY COMMAND [ARG ...]\n"
    "       pglock [options] --once KEY COMMAND [ARG ...]\n"
    "       pglock [options] --forget KEY\n"
    "       pglock [options] --pause [--new] [--for DURATION] [--reason TEXT] KEY\n"
    "       pglock [options] --resume KEY\n"
    "       pglock [options] --hold KEY\n"
    "       pglock [options] --status [KEY ...]\n"
    "       pglock [options] --status --ok-within DURATION KEY\n"
    "       pglock [options] --status --metrics [KEY ...]\n"
    "       pglock [options] --status --history KEY ...\n"
    "       pglock [options] --explain KEY\n"
    "       pglock [options] --break KEY\n"
    "       pglock [options] --version-counter [--peek] TENANT"
    " [COMMAND [ARG ...]]\n";

/*
 * -? and --help: the synopsis, then (on stdout) the help. Over 80 lines,
 * but text: split, it would be harder to keep in step with the man page.
 */
static void
usage(FILE *f)
{
	fputs(usage_text, f);
	if (f == stderr)
		return;
	fputs("\n"
	    "Take a PostgreSQL advisory lock on KEY, run COMMAND while holding"
	    " it,\nand release it when COMMAND exits.\n"
	    "\nLock options:\n"
	    "  -x, -e, --exclusive        exclusive lock (default)\n"
	    "  -s, --shared               shared lock\n"
	    "  -n, --nonblock, --nb       fail at once if the lock is held\n"
	    "  -w, --wait, --timeout SECS wait at most SECS (0 = -n)\n"
	    "  -E, --conflict-exit-code N exit status when not acquired"
	    " (default 1)\n"
	    "  -c, --command STRING       run STRING with $SHELL -c\n"
	    "  -F, --no-fork              exec COMMAND in place of pglock\n"
	    "      --id                   KEY is a lock id: N or A,B\n"
	    "      --hash SCHEME          how KEY becomes an id (default"
	    " sha256; see --explain)\n"
	    "      --namespace N          lock the pair (N, hashtext(KEY))\n"
	    "      --fence                give the command PGLOCK_FENCE, a"
	    " number that\n"
	    "                             grows with every acquisition of KEY\n"
	    "      --check-interval SECS  check the lock is held every SECS"
	    " (default 5)\n"
	    "      --lost-signal SIG      signal for the command if the lock"
	    " is lost (TERM)\n"
	    "      --kill-after SECS      then KILL after SECS (default 10)\n"
	    "      --max-time SECS        stop COMMAND after SECS, as for a lost"
	    " lock;\n"
	    "                             then exit 124\n"
	    "      --slots N              at most N holders of KEY at once"
	    " (2-1000)\n"
	    "      --hold                 no COMMAND: hold KEY until standard"
	    " input ends\n"
	    "                             (or TERM, INT); print KEY and id"
	    " when held\n"
	    "      --scope SCOPE          session, transaction or auto"
	    " (default): hold\n"
	    "                             the lock by the session only on a"
	    " direct\n"
	    "                             connection, else by a transaction\n"
	    "  -v, --verbose              report waiting, acquiring,"
	    " releasing\n"
	    "  -q, --quiet                no diagnostics except errors\n"
	    "\nOnce (the outcome recorded in the database):\n"
	    "      --once-per DURATION    run COMMAND unless KEY succeeded in"
	    " this slot of\n"
	    "                             the server's clock (DURATION, with"
	    " its unit: 90s,\n"
	    "                             5m, 1h, 1d)\n"
	    "      --tz ZONE              --once-per's slots by ZONE's wall"
	    " clock, from its\n"
	    "                             midnight (DURATION dividing a day,"
	    " 1d or 1w)\n"
	    "      --after OFFSET         --once-per: due only once OFFSET of"
	    " the slot has\n"
	    "                             passed; before, run nothing and"
	    " exit 0\n"
	    "      --spread SPREAD        add KEY's own offset below SPREAD to"
	    " --after\n"
	    "      --jitter DURATION      start this node's and KEY's own time"
	    " below DURATION\n"
	    "                             from now: a fleet's hosts do not"
	    " connect at once\n"
	    "      --once                 run COMMAND unless KEY ever"
	    " succeeded\n"
	    "      --record               record the outcome of a plain run\n"
	    "      --keep-output SIZE     keep the last SIZE bytes (4k, at most"
	    " 64k) of\n"
	    "                             COMMAND's output with a failed run\n"
	    "      --keep-output-always   a success's too\n"
	    "      --forget KEY           delete KEY's record: --once runs"
	    " again\n"
	    "      --runs-table NAME      where runs are recorded (default"
	    " pglock_runs)\n"
	    "      --keep-history N       keep KEY's last N runs in NAME_history"
	    " (default 50;\n"
	    "                             0: none)\n"
	    "      --node NAME            this machine's name in records"
	    " (PGLOCK_NODE;\n"
	    "                             default: the host name)\n"
	    "      --pause KEY            --once, --once-per and --record runs"
	    " of KEY run\n"
	    "                             nothing (--record's: exit 1, -E,"
	    " saying so)\n"
	    "      --new                  with --pause: KEY has no record yet"
	    " (else refused)\n"
	    "      --for DURATION         with --pause: the pause ends by itself"
	    " after it\n"
	    "      --reason TEXT          with --pause: why, for the line the"
	    " runs print\n"
	    "      --resume KEY           end KEY's pause\n"
	    "      --ok-within DURATION   with --status KEY: exit 0 if KEY"
	    " succeeded\n"
	    "                             within DURATION, else 1\n", f);
	/* Two strings: a C99 compiler need take no more than 4095 bytes. */
	fputs("\nVersion counter:\n"
	    "      --version-counter      allocate TENANT's next version:"
	    " print it, or\n"
	    "                             run COMMAND with PGLOCK_VERSION and"
	    " commit\n"
	    "                             only if it exits 0\n"
	    "      --peek                 print TENANT's current version\n"
	    "      --counter-table NAME   where versions live"
	    " (default pglock_versions)\n"
	    "      --require-sync         with it or --fence: refuse (69) a"
	    " number a\n"
	    "                             failover could repeat: standbys,"
	    " none synchronous\n", f);
	/* C99 compilers need take no literal over 4095 bytes: two. */
	fputs("\nInspection:\n"
	    "      --status [KEY ...]     list advisory locks held or awaited,"
	    " and by whom;\n"
	    "                             with KEYs, exit 0 if all are held,"
	    " 1 if not\n"
	    "      --explain KEY          show KEY's id, its pg_locks columns"
	    " and the SQL\n"
	    "                             that takes the same lock\n"
	    "      --break KEY            end KEY's holders, then keep its"
	    " lock-delay\n"
	    "      --json                 --status, --explain, --peek: one"
	    " JSON document\n"
	    "      --metrics              with --status: the records (every"
	    " one, or the\n"
	    "                             KEYs' with their locks' sessions) in"
	    " Prometheus'\n"
	    "                             text format\n"
	    "      --history              with --status: each KEY's runs, newest"
	    " first\n"
	    "\nConnection options:\n"
	    "  -d, --dbname CONNINFO      database name, conninfo or URI\n"
	    "  -h, --host HOST            server host or socket directory\n"
	    "  -p, --port PORT            server port\n"
	    "  -U, --username USER        user name\n"
	    "      --connect-timeout SECS retry refused connections this"
	    " long (default 30)\n"
	    "\n"
	    "  -?, --help                 show this help, then exit\n"
	    "  -V, --version              show the version, then exit\n"
	    "\nExit status: the command's; 1 (or -E N) when the lock is not"
	    " acquired;\n64 usage, 69 server unavailable, 70 internal,"
	    " 71 system error,\n75 lock lost, 77 --break not allowed,"
	    " 124 --max-time reached,\n126/127 command not executable"
	    "/not found.\nSee pglock(1).\n", f);
}

/*
 * --lost-signal must end the command: not a stop signal (the command would wait
 * for KILL; a CONT could wake it unlocked), nor CONT, whose default is to do
 * nothing, nor libc's own (glibc: 32, 33).
 */
static void
lost_signal_or_err(const char *arg, int sig)
{
	if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN ||
	    sig == SIGTTOU)
		usage_err("--lost-signal: '%s' stops a process instead of "
		    "ending it", arg);
	if (sig == SIGCONT)
		usage_err("--lost-signal: '%s' ends nothing: it continues a "
		    "stopped process", arg);
	if (sig > 31 && sig < SIGRTMIN)
		usage_err("--lost-signal: '%s' is reserved by the C library",
		    arg);
}


/* The long options without a letter; a mode's is OPT_MODE + its mode. */
enum {
	OPT_ID = 256, OPT_CHECK, OPT_LOST_SIG, OPT_KILL_AFTER, OPT_PEEK,
	OPT_TABLE, OPT_FENCE, OPT_HASH, OPT_NAMESPACE, OPT_SCOPE,
	OPT_CONNECT_TIMEOUT, OPT_HELP, OPT_MAX_TIME, OPT_JSON, OPT_SLOTS,
	OPT_ONCE, OPT_ONCE_PER, OPT_RECORD, OPT_RUNS_TABLE, OPT_OK_WITHIN,
	OPT_FOR, OPT_REASON, OPT_NEW, OPT_METRICS, OPT_NODE,
	OPT_TZ, OPT_AFTER, OPT_SPREAD, OPT_REQUIRE_SYNC, OPT_JITTER,
	OPT_KEEP_HISTORY, OPT_HISTORY, OPT_KEEP_OUTPUT, OPT_KEEP_ALWAYS,
	OPT_MODE = 512
};

static const struct option longopts[] = {
	{ "exclusive", no_argument, NULL, 'x' },
	{ "shared", no_argument, NULL, 's' },
	{ "nonblock", no_argument, NULL, 'n' },
	{ "nb", no_argument, NULL, 'n' },
	{ "wait", required_argument, NULL, 'w' },
	{ "timeout", required_argument, NULL, 'w' },
	{ "conflict-exit-code", required_argument, NULL, 'E' },
	{ "command", required_argument, NULL, 'c' },
	{ "no-fork", no_argument, NULL, 'F' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "dbname", required_argument, NULL, 'd' },
	{ "host", required_argument, NULL, 'h' },
	{ "port", required_argument, NULL, 'p' },
	{ "username", required_argument, NULL, 'U' },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, 'V' },
	{ "id", no_argument, NULL, OPT_ID },
	{ "check-interval", required_argument, NULL, OPT_CHECK },
	{ "lost-signal", required_argument, NULL, OPT_LOST_SIG },
	{ "kill-after", required_argument, NULL, OPT_KILL_AFTER },
	{ "version-counter", no_argument, NULL, OPT_MODE + MODE_COUNTER },
	{ "peek", no_argument, NULL, OPT_PEEK },
	{ "counter-table", required_argument, NULL, OPT_TABLE },
	{ "fence", no_argument, NULL, OPT_FENCE },
	{ "require-sync", no_argument, NULL, OPT_REQUIRE_SYNC },
	{ "hash", required_argument, NULL, OPT_HASH },
	{ "namespace", required_argument, NULL, OPT_NAMESPACE },
	{ "status", no_argument, NULL, OPT_MODE + MODE_STATUS },
	{ "explain", no_argument, NULL, OPT_MODE + MODE_EXPLAIN },
	{ "scope", required_argument, NULL, OPT_SCOPE },
	{ "connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT },
	{ "hold", no_argument, NULL, OPT_MODE + MODE_HOLD },
	{ "break", no_argument, NULL, OPT_MODE + MODE_BREAK },
	{ "max-time", required_argument, NULL, OPT_MAX_TIME },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "slots", required_argument, NULL, OPT_SLOTS },
	{ "once", no_argument, NULL, OPT_ONCE },
	{ "once-per", required_argument, NULL, OPT_ONCE_PER },
	{ "record", no_argument, NULL, OPT_RECORD },
	{ "keep-output", required_argument, NULL, OPT_KEEP_OUTPUT },
	{ "keep-output-always", no_argument, NULL, OPT_KEEP_ALWAYS },
	{ "forget", no_argument, NULL, OPT_MODE + MODE_FORGET },
	{ "runs-table", required_argument, NULL, OPT_RUNS_TABLE },
	{ "keep-history", required_argument, NULL, OPT_KEEP_HISTORY },
	{ "history", no_argument, NULL, OPT_HISTORY },
	{ "ok-within", required_argument, NULL, OPT_OK_WITHIN },
	{ "pause", no_argument, NULL, OPT_MODE + MODE_PAUSE },
	{ "resume", no_argument, NULL, OPT_MODE + MODE_RESUME },
	{ "for", required_argument, NULL, OPT_FOR },
	{ "reason", required_argument, NULL, OPT_REASON },
	{ "new", no_argument, NULL, OPT_NEW },
	{ "node", required_argument, NULL, OPT_NODE },
	{ "metrics", no_argument, NULL, OPT_METRICS },
	{ "tz", required_argument, NULL, OPT_TZ },
	{ "after", required_argument, NULL, OPT_AFTER },
	{ "spread", required_argument, NULL, OPT_SPREAD },
	{ "jitter", required_argument, NULL, OPT_JITTER },
	{ NULL, 0, NULL, 0 }
};

static long
duration_or_err(const char *opt, const char *s)
{
	struct err why;
	long ms;

	if (arg_time_ms(s, &ms, &why) == -1)
		usage_err("%s: %s", opt, why.msg);
	return ms;
}

/*
 * A machine's name as records keep it (--node, PGLOCK_NODE): UTF-8 (a text
 * column), not empty, at most as long as a host name may be.
 */
static const char *
node_or_err(const char *from, const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 255 || !key_utf8_ok(name, n))
		usage_err("%s: a node's name must be UTF-8 of 1 to 255 bytes",
		    from);
	return name;
}

/*
 * The node, unless --node named it: PGLOCK_NODE (read before scrub_env()),
 * else the host name; the command gets it as PGLOCK_NODE, so that a pglock
 * it runs records the same.
 */
static void
node_of_or_err(struct opts *o)
{
	static char host[256];
	const char *env = getenv("PGLOCK_NODE");

	if (o->node == NULL && env != NULL && *env != '\0')
		o->node = node_or_err("PGLOCK_NODE", env);
	if (o->node == NULL) {
		if (gethostname(host, sizeof(host)) == -1)
			snprintf(host, sizeof(host), "?");
		host[sizeof(host) - 1] = '\0';
		o->node = host;
	}
}

/*
 * 64 bits of "node NUL key" (FNV-1a, then splitmix64's finalizer, so that
 * names alike, web-1 and web-2, land far apart): the same on every run.
 */
static uint64_t
node_key_bits(const char *node, const char *key)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	const char *s[2] = { node, key };
	size_t i, j;

	for (i = 0; i < 2; i++)
		for (j = 0; j <= strlen(s[i]); j++)
			h = (h ^ (unsigned char)s[i][j]) * 0x100000001b3ULL;
	h = (h ^ h >> 30) * 0xbf58476d1ce4e5b9ULL;
	h = (h ^ h >> 27) * 0x94d049bb133111ebULL;
	return h ^ h >> 31;
}

/*
 * --jitter: sleep a time below o->jitter_ms that is the node's and KEY's own,
 * the same each run (a host's job keeps its minute), said under -v.
 */
static void
jitter(const struct opts *o)
{
	long long ms = (long long)(node_key_bits(o->node, o->key) %
	    (uint64_t)o->jitter_ms);

	if (o->verbose)
		say("%s: --jitter: starting in %.3fs (this node's and KEY's)",
		    o->label, (double)ms / 1000.0);
	sleep_ms(ms);
}

/* A schedule's or a pause's DURATION, with its unit (arg_span_ms()). */
static long long
span_or_err(const char *opt, const char *s)
{
	struct err why;
	long long ms;

	if (arg_span_ms(s, &ms, &why) == -1)
		usage_err("%s: %s", opt, why.msg);
	return ms;
}

/* --counter-table, --runs-table: NAME as SQL, into sql. */
static void
table_or_err(const char *opt, const char *name, char *sql, size_t len)
{
	if (counter_table_sql(name, sql, len) == -1)
		usage_err("%s: '%s' is not a table name ([schema.]table, as in "
		    "SQL: \"Quoted\" keeps its case)", opt, printable(name));
}

/* argv for -c: $SHELL -c STRING, with /bin/sh when SHELL is unset. */
static char **
shell_argv(char *cmd)
{
	static char binsh[] = "/bin/sh", dash_c[] = "-c";
	static char *sh_argv[4];
	char *sh = getenv("SHELL");

	sh_argv[0] = sh != NULL && *sh != '\0' ? sh : binsh;
	sh_argv[1] = dash_c;
	sh_argv[2] = cmd;
	sh_argv[3] = NULL;
	return sh_argv;
}

/*
 * What a command line asks for, as bits, so the rules on what goes with what
 * are a table: the mode, then options that some modes or options refuse.
 */
enum {
	M_RUN = 1 << MODE_RUN, M_HOLD = 1 << MODE_HOLD,
	M_STATUS = 1 << MODE_STATUS, M_EXPLAIN = 1 << MODE_EXPLAIN,
	M_COUNTER = 1 << MODE_COUNTER,
	A_HASH = 1 << 8, A_NS = 1 << 9, A_ID = 1 << 10, A_JSON = 1 << 11,
	A_MAX_TIME = 1 << 12, A_NO_FORK = 1 << 13, A_SLOTS = 1 << 14,
	A_SHARED = 1 << 15, A_RECORD = 1 << 16, A_ONCE = 1 << 17,
	A_PEEK = 1 << 18, A_FENCE = 1 << 19, A_SCOPE = 1 << 20,
	A_SYNC = 1 << 21, A_JITTER = 1 << 23, A_HISTORY = 1 << 24,
	A_KEEP = 1 << 25, A_OUTPUT = 1 << 26,
	A_COMMAND = 1 << 22	/* known once the arguments are read */
};

/* --hash, --id and --namespace: the last one given chooses the row. */
static void
choose_scheme(struct opts *o, const char *scheme, unsigned opt)
{
	o->how.scheme = scheme;
	o->key_opts |= opt;
}

static void
set_mode(struct opts *o, enum mode m)
{
	if (o->mode != MODE_RUN && o->mode != m)
		usage_err("%s", "choose one of --hold, --status, --explain, "
		    "--break, --forget, --pause, --resume and "
		    "--version-counter");
	o->mode = m;
}

/* The lock's options: which lock, how it is taken. 1 if c is one of them. */
static int
lock_option_or_err(struct opts *o, int c, char *arg)
{
	struct err why;
	long n;

	switch (c) {
	case 'x':
	case 'e':
		o->lock.shared = 0;
		break;
	case 's':
		o->lock.shared = 1;
		break;
	case 'n':
		o->lock.wait_ms = 0;
		break;
	case 'w':
		o->lock.wait_ms = duration_or_err("-w", arg);
		break;
	case 'E':
		if (arg_long(arg, 0, 255, &n, &why) == -1)
			usage_err("-E: %s", why.msg);
		o->conflict_exit = (int)n;
		break;
	case OPT_ID:
		choose_scheme(o, "id", A_ID);
		break;
	case OPT_HASH:
		if (key_scheme_check(arg, &why) == -1)
			usage_err("--hash: %s", why.msg);
		choose_scheme(o, arg, A_HASH);
		break;
	case OPT_NAMESPACE:
		if (arg_long(arg, INT32_MIN, INT32_MAX, &n, &why) == -1)
			usage_err("--namespace: %s", why.msg);
		choose_scheme(o, "namespace", A_NS);
		o->how.ns = (int32_t)n;
		break;
	case OPT_FENCE:
		o->fence = 1;
		break;
	case OPT_REQUIRE_SYNC:
		o->require_sync = 1;
		break;
	case OPT_SCOPE:
		for (n = 2; n >= 0 && strcmp(arg, scope_names[n]) != 0; n--)
			;
		if (n < 0)
			usage_err("--scope: '%s' is not session, transaction "
			    "or auto", arg);
		o->scope = (int)n;
		break;
	case OPT_SLOTS:
		if (arg_long(arg, 2, SLOTS_MAX, &n, &why) == -1)
			usage_err("--slots: %s", why.msg);
		o->lock.slots = (int)n;
		break;
	default:
		return 0;
	}
	return 1;
}

/* The connection's options. 1 if c is one of them. */
static int
conn_option_or_err(struct opts *o, int c, char *arg)
{
	struct err why;

	switch (c) {
	case 'd':
		if (conn_check(arg, &why) == -1)
			usage_err("-d: %s", why.msg);
		/* Connect with a copy; ps shows the masked original. */
		if ((o->conn.dbname = strdup(arg)) == NULL)
			die_errno(EXIT_OSERR, "strdup");
		conn_hide_password(arg);
		break;
	case 'h':
		o->conn.host = arg;
		break;
	case 'p':
		o->conn.port = arg;
		break;
	case 'U':
		o->conn.user = arg;
		break;
	case OPT_CONNECT_TIMEOUT:
		o->conn.connect_ms = duration_or_err("--connect-timeout", arg);
		break;
	default:
		return 0;
	}
	return 1;
}

/* --once, --once-per and --record are three ways to record: one at a time. */
static void
record_by(struct opts *o, int c)
{
	if (o->record_opt != 0 && o->record_opt != c)
		usage_err("%s", "choose one of --once, --once-per and --record");
	o->record_opt = c;
	o->record = 1;
}

/*
 * Could s be an IANA zone name? The server has the last word; this refuses
 * what it would read as a POSIX TZ string ("+05", "UTC+3", "<+0530>-5:30"),
 * whose offset counts west: Etc/GMT+3 is the one name with a signed number.
 */
static int
zone_name(const char *s)
{
	const char *p;

	if (*s == '\0' || strchr("+-0123456789", *s) != NULL ||
	    strpbrk(s, ":<>,") != NULL)
		return 0;
	for (p = s; (p = strpbrk(p, "+-")) != NULL; p++)
		if (isdigit((unsigned char)p[1]) && strncmp(s, "Etc/", 4) != 0)
			return 0;
	return 1;
}

/* --keep-history, --keep-output*: what a run's history keeps. 1 if c is one. */
static int
keep_option_or_err(struct opts *o, int c, char *arg)
{
	struct err why;
	long n;

	switch (c) {
	case OPT_KEEP_HISTORY:
		if (arg_long(arg, 0, RUNS_KEEP_MAX, &n, &why) == -1)
			usage_err("--keep-history: %s", why.msg);
		o->keep_history = (int)n;
		o->keep_history_set = 1;
		break;
	case OPT_KEEP_OUTPUT:
		if (arg_size(arg, TAIL_MAX, &n, &why) == -1)
			usage_err("--keep-output: %s", why.msg);
		o->keep_output = (size_t)n;
		break;
	case OPT_KEEP_ALWAYS:
		o->keep_output_always = 1;
		break;
	default:
		return 0;
	}
	return 1;
}

/* --tz, --after, --spread, --jitter: when a run starts. 1 if c is one. */
static int
schedule_option_or_err(struct opts *o, int c, char *arg)
{
	switch (c) {
	case OPT_TZ:
		if (!zone_name(arg))
			usage_err("--tz: '%s' is not a time zone name (as "
			    "Europe/Berlin)", printable(arg));
		o->tz = arg;
		break;
	case OPT_AFTER:
		o->after_ms = span_or_err("--after", arg);
		break;
	case OPT_JITTER:
		o->jitter_ms = span_or_err("--jitter", arg);
		break;
	case OPT_SPREAD:
		o->spread_s = span_or_err("--spread", arg);
		if (o->spread_s < 1000 || o->spread_s % 1000 != 0)
			usage_err("--spread: '%s' is not whole seconds, at "
			    "least 1", printable(arg));
		o->spread_s /= 1000;
		break;
	default:
		return 0;
	}
	return 1;
}

/* How the command runs, is watched and recorded. 1 if c is one of them. */
static int
run_option_or_err(struct opts *o, int c, char *arg)
{
	struct err why;

	switch (c) {
	case 'c':
		o->shell_cmd = arg;
		break;
	case 'F':
		o->no_fork = 1;
		break;
	case 'v':
		o->verbose = 1;
		o->quiet = 0;
		break;
	case 'q':
		o->quiet = 1;
		o->verbose = 0;
		break;
	case OPT_CHECK:
		o->check_ms = duration_or_err("--check-interval", arg);
		if (o->check_ms == 0)
			usage_err("%s", "--check-interval: must be more than 0");
		/* The lease (4 intervals) is an int of ms for the server. */
		if (o->check_ms > ARG_MAX_MS / 4)
			usage_err("--check-interval: at most %ld.%03lds",
			    ARG_MAX_MS / 4000, ARG_MAX_MS / 4 % 1000);
		break;
	case OPT_LOST_SIG:
		if (arg_signal(arg, &o->lost_sig, &why) == -1)
			usage_err("--lost-signal: %s", why.msg);
		lost_signal_or_err(arg, o->lost_sig);
		break;
	case OPT_KILL_AFTER:
		o->kill_after_ms = duration_or_err("--kill-after", arg);
		break;
	case OPT_MAX_TIME:
		o->max_ms = duration_or_err("--max-time", arg);
		if (o->max_ms == 0)
			usage_err("%s", "--max-time: must be more than 0");
		break;
	case OPT_ONCE_PER:
		o->period_ms = span_or_err("--once-per", arg);
		if (o->period_ms == 0)
			usage_err("%s", "--once-per: must be more than 0");
		record_by(o, c);
		o->once = 1;
		break;
	case OPT_ONCE:
		record_by(o, c);
		o->period_ms = 0;
		o->once = 1;
		break;
	case OPT_RECORD:
		record_by(o, c);
		break;
	case OPT_RUNS_TABLE:
		table_or_err("--runs-table", arg, o->runs_sql,
		    sizeof(o->runs_sql));
		break;
	case OPT_HISTORY:
		o->history = 1;
		break;
	default:
		return 0;
	}
	return 1;
}

/* The modes but running a command, and their options: 1 if c is one. */
static int
mode_option_or_err(struct opts *o, int c, char *arg)
{
	if (c >= OPT_MODE) {
		set_mode(o, (enum mode)(c - OPT_MODE));
		return 1;
	}
	switch (c) {
	case OPT_PEEK:
		o->peek = 1;
		break;
	case OPT_TABLE:
		table_or_err("--counter-table", arg, o->table_sql,
		    sizeof(o->table_sql));
		break;
	case OPT_JSON:
		o->json = 1;
		break;
	case OPT_OK_WITHIN:
		o->ok_within_ms = span_or_err("--ok-within", arg);
		break;
	case OPT_METRICS:
		o->metrics = 1;
		break;
	case OPT_FOR:
		o->pause_ms = span_or_err("--for", arg);
		if (o->pause_ms == 0)
			usage_err("%s", "--for: must be more than 0");
		break;
	case OPT_REASON:
		/* A text column keeps it: UTF-8, and not without end. */
		if (!key_utf8_ok(arg, strlen(arg)) ||
		    strlen(arg) > RUNS_REASON_MAX)
			usage_err("--reason: must be UTF-8 of at most %d bytes",
			    RUNS_REASON_MAX);
		o->reason = arg;
		break;
	case OPT_NEW:
		o->pause_new = 1;
		break;
	case OPT_NODE:
		o->node = node_or_err("--node", arg);
		break;
	default:
		return 0;
	}
	return 1;
}

/* Option c (getopt_long's) by its group; name as written, for messages. */
static void
record_or_err(struct opts *o, int c, char *arg, const char *name)
{
	if (lock_option_or_err(o, c, arg) || conn_option_or_err(o, c, arg) ||
	    run_option_or_err(o, c, arg) || mode_option_or_err(o, c, arg) ||
	    schedule_option_or_err(o, c, arg) || keep_option_or_err(o, c, arg))
		return;
	/* '?': getopt sets optopt to what it could not use; -? is help. */
	if (c == OPT_HELP || (c == '?' && optopt == '?')) {
		usage(stdout);
		flush_stdout_or_err();
		exit(0);
	}
	switch (c) {
	case 'V':
		printf("pglock %s (libpq %d.%d)\n", PGLOCK_VERSION,
		    PQlibVersion() / 10000, PQlibVersion() % 10000);
		flush_stdout_or_err();
		exit(0);
	case ':':
		/* As in psql, -h is the host: help is --help (or -?). */
		if (strcmp(name, "-h") == 0)
			usage_err("-h: needs a value: -h is the server's host, "
			    "as in psql");
		usage_err("%s: needs a value", name);
	default:
		if (optopt == 0 || optopt >= 256)
			usage_err("%s: %s", name, optopt == 0 ?
			    "unknown option" : "takes no value");
		usage_err("-%c: unknown option", optopt);
	}
}

/* --resume asks what --pause does (MODE_RESUME's bit would be A_HASH's). */
static unsigned
asked(const struct opts *o)
{
	return 1U << (o->mode == MODE_RESUME ? MODE_PAUSE : o->mode) |
	    o->key_opts | (o->json ? A_JSON : 0) |
	    (o->max_ms > 0 ? A_MAX_TIME : 0) |
	    (o->no_fork ? A_NO_FORK : 0) | (o->lock.slots > 0 ? A_SLOTS : 0) |
	    (o->lock.shared ? A_SHARED : 0) | (o->record ? A_RECORD : 0) |
	    (o->once ? A_ONCE : 0) | (o->peek ? A_PEEK : 0) |
	    (o->fence ? A_FENCE : 0) | (o->scope != SCOPE_AUTO ? A_SCOPE : 0) |
	    (o->require_sync ? A_SYNC : 0) | (o->argv != NULL ? A_COMMAND : 0) |
	    (o->jitter_ms > 0 ? A_JITTER : 0) | (o->history ? A_HISTORY : 0) |
	    (o->keep_history_set ? A_KEEP : 0) |
	    (o->keep_output > 0 ? A_OUTPUT : 0);
}

/*
 * A rule: if all of `when` is asked, one of `needs` (if any) must be too and
 * none of `refuses`, else usage error `says`. The first broken one is reported.
 */
struct rule {
	unsigned when, needs, refuses;
	const char *says;
};

/* Before the arguments are read. */
static const struct rule option_rules[] = {
	{ A_HASH, 0, A_NS, "--namespace hashes with hashtext: no --hash" },
	{ A_ID, 0, A_HASH | A_NS,
	    "--id takes an id: no --hash or --namespace" },
	{ A_JSON, M_STATUS | M_EXPLAIN | A_PEEK, 0,
	    "--json is for --status, --explain and --peek" },
	{ A_MAX_TIME, M_RUN | M_HOLD | M_COUNTER, A_NO_FORK,
	    "--max-time bounds a COMMAND that pglock watches: not with -F, "
	    "--status, --explain or --break" },
	{ A_SLOTS, 0, A_SHARED | M_EXPLAIN | M_COUNTER,
	    "--slots counts holders of a KEY: no -s, --explain or "
	    "--version-counter" },
	{ A_RECORD, M_RUN, A_NO_FORK,
	    "--once, --once-per and --record record a COMMAND's outcome: not "
	    "with -F, --hold, --status, --explain, --break, --forget or "
	    "--version-counter" },
	{ A_OUTPUT, A_RECORD, 0,
	    "--keep-output keeps a COMMAND's output with its record: it needs "
	    "--record, --once or --once-per" },
	{ A_ONCE, 0, A_SHARED | A_SLOTS,
	    "--once and --once-per run one COMMAND for KEY: no -s or --slots" },
	{ A_SYNC, M_COUNTER | A_FENCE, A_PEEK,
	    "--require-sync is for the numbers --version-counter and --fence "
	    "hand out" },
	{ A_JITTER, M_RUN | M_HOLD | M_COUNTER, 0,
	    "--jitter delays a run's start: not with --status, --explain, "
	    "--break, --forget, --pause or --resume" },
	{ A_HISTORY, M_STATUS, 0, "--history is for --status" },
	{ A_KEEP, A_RECORD, 0,
	    "--keep-history bounds what --once, --once-per and --record keep" },
};

/* Once KEY and COMMAND are known. */
static const struct rule command_rules[] = {
	{ M_HOLD, 0, A_COMMAND | A_NO_FORK,
	    "--hold runs no COMMAND (and no -F): it holds KEY until its "
	    "standard input ends" },
	{ M_COUNTER | A_MAX_TIME, A_COMMAND, 0,
	    "--max-time bounds a COMMAND: none given" },
	{ A_PEEK, M_COUNTER, 0, "--peek needs --version-counter" },
	{ A_PEEK, 0, A_COMMAND, "--peek runs no COMMAND" },
	{ M_COUNTER, 0, A_FENCE,
	    "--fence is for locks, not --version-counter" },
	{ M_COUNTER, 0, A_SHARED,
	    "--version-counter takes no shared lock (-s)" },
	{ M_COUNTER, 0, A_NO_FORK,
	    "--version-counter must commit after COMMAND: no -F" },
	{ M_COUNTER, 0, A_ID,
	    "--version-counter takes a TENANT name, not --id" },
	{ M_COUNTER, 0, A_HASH | A_NS,
	    "--version-counter locks a TENANT its own way: no --hash or "
	    "--namespace" },
	{ M_COUNTER, 0, A_SCOPE,
	    "--version-counter always holds its lock in a transaction: no "
	    "--scope" },
};

static void
rules_or_err(const struct opts *o, const struct rule *r, size_t n)
{
	unsigned got = asked(o);

	for (; n-- > 0; r++)
		if ((got & r->when) == r->when && ((r->needs != 0 &&
		    (got & r->needs) == 0) || (got & r->refuses) != 0))
			usage_err("%s", r->says);
}

/* The modes that take one KEY and no COMMAND, by name. */
/* What a mode takes after its options. */
enum arity {
	ONE_KEY,		/* one KEY, no COMMAND */
	KEYS,			/* any number of KEYs (none: all) */
	KEY_COMMAND,		/* KEY, then COMMAND or -c */
	KEY_MAYBE		/* KEY, maybe a COMMAND (or -c) */
};

/*
 * The modes, as data: the option that chose it, the name its session shows in
 * pg_stat_activity (NULL: KEY, as its waiters see it), what it takes (and
 * names KEY), whether KEY names a lock (its id resolved before connecting)
 * and a record (whose name must fit), whether it forwards signals to a
 * command (else it dies by them, as psql), and what runs it: RUN_AGAIN from
 * that connects again and runs it again. NULL: --explain, which asks no
 * server.
 */
static const struct mode_rule {
	const char *option;
	const char *app;
	const char *key;
	int (*run)(const struct opts *, PGconn *);
	enum arity arity;
	int resolves;
	int record;
	int signals;
} modes[] = {
	[MODE_RUN] = { .option = "", .key = "KEY", .run = run_lock,
	    .arity = KEY_COMMAND, .resolves = 1, .signals = 1 },
	[MODE_HOLD] = { .option = "--hold", .key = "KEY", .run = run_lock,
	    .arity = KEY_MAYBE, .resolves = 1, .signals = 1 },
	[MODE_COUNTER] = { .option = "--version-counter", .key = "TENANT",
	    .run = run_counter, .arity = KEY_MAYBE, .resolves = 1,
	    .signals = 1 },
	[MODE_STATUS] = { .option = "--status", .app = "--status", .key = "KEY",
	    .run = show_status, .arity = KEYS },
	[MODE_EXPLAIN] = { .option = "--explain", .key = "KEY",
	    .arity = ONE_KEY, .resolves = 1 },
	[MODE_BREAK] = { .option = "--break", .app = "--break", .key = "KEY",
	    .run = break_holders, .arity = ONE_KEY, .resolves = 1 },
	[MODE_FORGET] = { .option = "--forget", .app = "--forget", .key = "KEY",
	    .run = forget, .arity = ONE_KEY, .resolves = 1 },
	[MODE_PAUSE] = { .option = "--pause", .key = "KEY", .run = pause_key,
	    .arity = ONE_KEY, .resolves = 1, .record = 1 },
	[MODE_RESUME] = { .option = "--resume", .key = "KEY",
	    .run = resume_key, .arity = ONE_KEY, .resolves = 1, .record = 1 },
};

/*
 * --tz, --after and --spread shape --once-per's slots (--spread: --explain
 * shows its offset too); the offsets leave some of each slot.
 */
static void
schedule_or_err(const struct opts *o)
{
	long long per = o->period_ms, after = o->after_ms > 0 ? o->after_ms : 0;

	if (per == 0 && (o->tz != NULL || o->after_ms >= 0 ||
	    (o->spread_s > 0 && o->mode != MODE_EXPLAIN)))
		usage_err("%s shapes the slots of --once-per DURATION: none "
		    "given", o->tz != NULL ? "--tz" : o->after_ms >= 0 ?
		    "--after" : "--spread");
	if (o->tz != NULL && 86400000 % per != 0 && per != 604800000)
		usage_err("%s", "--tz: --once-per's DURATION must divide a day "
		    "(5m, 1h, 6h ...), or be 1d or 1w");
	if (per > 0 && after >= per)
		usage_err("%s", "--after: OFFSET must be less than --once-per's "
		    "DURATION");
	if (per > 0 && after + o->spread_s * 1000 >= per)
		usage_err("%s", "--after + --spread must be less than "
		    "--once-per's DURATION");
}

/* The arguments after the options, and what may not go together. */
static void
check_or_err(struct opts *o, int argc, char **argv)
{
	const struct mode_rule *mode = &modes[o->mode];
	const char *what = mode->key;

	rules_or_err(o, option_rules, sizeof(option_rules) /
	    sizeof(option_rules[0]));
	schedule_or_err(o);
	if (o->ok_within_ms >= 0 && (o->mode != MODE_STATUS || argc != 1))
		usage_err("%s", "--ok-within is for --status with one KEY");
	if (o->metrics && (o->mode != MODE_STATUS || o->json ||
	    o->ok_within_ms >= 0))
		usage_err("%s", "--metrics is for --status, without --json or "
		    "--ok-within");
	if (o->keep_output_always && o->keep_output == 0)
		usage_err("%s", "--keep-output-always needs --keep-output SIZE");
	if (o->keep_output > 0 && o->keep_history == 0)
		usage_err("%s", "--keep-output keeps the output in the history: "
		    "not with --keep-history 0");
	if (o->history && (o->metrics || o->ok_within_ms >= 0 || argc < 1))
		usage_err("%s", "--status --history takes KEYs, and no "
		    "--metrics or --ok-within");
	runs_history_sql(o->runs_sql, o->history_sql, sizeof(o->history_sql));
	if (mode->arity == KEYS) {
		o->keys = argv;		/* every argument is a KEY */
		for (; argc > 0; argc--, argv++)
			if (*argv[0] == '\0')
				usage_err("%s is empty", what);
			else if (o->metrics && !key_utf8_ok(*argv,
			    strlen(*argv)))
				usage_err("%s: not valid UTF-8, which a "
				    "metric's label needs", printable(*argv));
		return;
	}
	if ((o->pause_ms >= 0 || o->reason != NULL || o->pause_new) &&
	    o->mode != MODE_PAUSE)
		usage_err("%s", "--for, --reason and --new are for --pause");
	if (mode->arity == ONE_KEY && argc != 1)
		usage_err("%s takes one KEY and no COMMAND", mode->option);
	if (argc < 1)
		usage_err("missing %s", what);
	if (*argv[0] == '\0')
		usage_err("%s is empty", what);
	o->key = argv[0];
	o->label = printable(o->key);
	argc--;
	argv++;
	/* flock(1) style: KEY -c STRING. */
	if (argc >= 1 && (strcmp(argv[0], "-c") == 0 ||
	    strcmp(argv[0], "--command") == 0)) {
		if (o->shell_cmd != NULL)
			usage_err("%s", "-c given twice");
		if (argc != 2)
			usage_err("%s", "-c takes one SHELL-COMMAND and "
			    "nothing after it");
		o->shell_cmd = argv[1];
		argc = 0;
	}
	if (o->shell_cmd != NULL && argc > 0)
		usage_err("%s", "both -c and a COMMAND given");
	if (o->shell_cmd == NULL && argc == 0 && mode->arity == KEY_COMMAND)
		usage_err("%s", "missing COMMAND");
	o->argv = o->shell_cmd != NULL ? shell_argv(o->shell_cmd) :
	    argc > 0 ? argv : NULL;
	rules_or_err(o, command_rules, sizeof(command_rules) /
	    sizeof(command_rules[0]));
}

/* One getopt loop records the options; then one function checks them. */
static void
parse_or_err(int argc, char **argv, struct opts *o)
{
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:xesnw:E:c:Fvqd:h:p:U:V",
	    longopts, NULL)) != -1)
		record_or_err(o, c, optarg, argv[optind - 1]);
	check_or_err(o, argc - optind, argv + optind);
}

/*
 * PGLOCK_* variables come from pglock alone: a caller's PGLOCK_FENCE or
 * PGLOCK_VERSION would be a forged or stale token. Cut from environ itself:
 * execve(2) may put entries without '=' there, which unsetenv() cannot name.
 */
static void
scrub_env(void)
{
	extern char **environ;
	size_t i, kept = 0;

	for (i = 0; environ[i] != NULL; i++)
		if (strncmp(environ[i], "PGLOCK_", 7) != 0)
			environ[kept++] = environ[i];
	environ[kept] = NULL;
}

/* Before anything runs: a success that could not be recorded is lost. */
static void
record_fits_or_err(const struct opts *o)
{
	char *name = record_key(o, o->key);
	size_t n = strlen(name);

	/*
	 * A UTF8 database would refuse it, and only after COMMAND ran:
	 * whatever the database, refuse it first.
	 */
	if (!key_utf8_ok(name, n))
		usage_err("%s: not valid UTF-8, which a record of runs "
		    "(--once, --once-per, --record) needs", o->label);
	free(name);
	if (n > RUNS_NAME_MAX)
		usage_err("KEY's record name is %zu bytes: a record of runs "
		    "takes at most %d", n, RUNS_NAME_MAX);
}

/*
 * The run's time budget once connected, which every exchange up to the lock
 * held is handed (o->lock.budget): -w by pglock's own clock too, a second
 * after the server's lock_timeout; -n, CONN_ANSWER_MS from now: a frozen or
 * unreachable server ends the wait all the same. Connecting again derives it
 * again.
 */
static void
bound_wait(const struct opts *o)
{
	if (o->lock.wait_ms > 0)
		*o->lock.budget = budget_of(mono_after(o->conn.deadline_ms,
		    1000), o->lock.wait_ms);
	else if (o->lock.wait_ms == 0)
		*o->lock.budget = budget_of(deadline_in(CONN_ANSWER_MS),
		    CONN_ANSWER_MS);
	else
		*o->lock.budget = budget_of(NEVER, 0);
}

/* A retried refusal, said at once: without it, a wrong server is silence. */
static void
say_retrying(const char *why, long left_ms)
{
	say("%s; retrying for up to %.1fs (--connect-timeout)", why,
	    (double)left_ms / 1000.0);
}

/* Connect to a primary (conn_open() refuses a standby); exits 69 if not. */
static PGconn *
connect_or_err(const struct opts *o)
{
	struct err why;
	PGconn *c;

	if ((c = conn_open(&o->conn, &why)) == NULL)
		die(EXIT_UNAVAILABLE, "%s", why.msg);
	return c;
}

/* As say_retrying(), where the time is what is left of -w. */
static void
say_retrying_w(const char *why, long left_ms)
{
	say("%s; retrying for up to %.1fs (-w)", why, (double)left_ms / 1000.0);
}

/*
 * A run cut before it held the lock connects again, its budget running from
 * the loss: a waiter keeps waiting to -w's end (without -w, --connect-timeout
 * from now), whatever it waited already. Exits 69 when that fails.
 */
static PGconn *
reconnect_or_err(const struct opts *o)
{
	struct opts again = *o;
	PGconn *c;

	if (o->lock.wait_ms > 0) {
		again.conn.connect_ms = bound_left(o->conn.deadline_ms);
		if (o->conn.retrying != NULL)
			again.conn.retrying = say_retrying_w;
	}
	c = connect_or_err(&again);
	bound_wait(o);
	return c;
}

/* Every option's default, as the man page gives it; the rest is 0. */
static const struct opts defaults = {
	.lock = { .wait_ms = -1 },		/* wait for ever */
	.conn = { .connect_ms = 30000 },	/* --connect-timeout 30 */
	.conflict_exit = EXIT_CONFLICT,		/* -E 1 */
	.check_ms = 5000,			/* --check-interval 5 */
	.lost_sig = SIGTERM,			/* --lost-signal TERM */
	.kill_after_ms = 10000,			/* --kill-after 10 */
	.table_sql = "\"pglock_versions\"",	/* --counter-table */
	.runs_sql = "\"pglock_runs\"",		/* --runs-table */
	.keep_history = RUNS_KEEP_DEFAULT,	/* --keep-history 50 */
	.ok_within_ms = -1,			/* no --ok-within */
	.pause_ms = -1,				/* --pause: until --resume */
	.after_ms = -1,				/* no --after */
};

/*
 * With fd 0, 1 or 2 closed, the next open() (libpq's socket) would take it and
 * stdout's output would go to the server. /dev/null fills the gap, opened the
 * wrong way round, so using the stream fails as it would have.
 */
static void
guard_std_fds(void)
{
	int fd;

	for (fd = 0; fd <= 2; fd++)
		if (fcntl(fd, F_GETFD) == -1 &&
		    open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY) == -1)
			_exit(EXIT_OSERR);
}

int
main(int argc, char **argv)
{
	const struct mode_rule *mode;
	struct opts o;
	struct err why;
	char appname[64];
	PGconn *c;
	mono_t start;
	int status;

	guard_std_fds();
	o = defaults;
	/*
	 * Orphaned already (setsid -f), pglock has no script to tell: init
	 * is none, and a container stops when its init gets TERM; nor has
	 * a PID namespace's init (0: its parent is outside).
	 */
	o.caller = getppid() > 1 ? getppid() : 0;
	start = mono_ms();
	parse_or_err(argc, argv, &o);
	node_of_or_err(&o);
	/* -w, and all the rest, from the jitter's end. */
	if (o.jitter_ms > 0) {
		jitter(&o);
		start = mono_ms();
	}
	scrub_env();
	setenv_or_err("PGLOCK_NODE", o.node);

	mode = &modes[o.mode];
	if (mode->run == NULL)
		return explain(&o);
	if (mode->resolves)
		resolve_key_or_err(&o, o.key, &o.lock.key);
	if (o.record || mode->record)
		record_fits_or_err(&o);

	/* Name the key in pg_stat_activity, so a waiter can see the holder. */
	snprintf(appname, sizeof(appname), "pglock: %s",
	    mode->app != NULL ? mode->app : o.key);
	o.conn.appname = appname;
	/* -w bounds all that comes before the command: connecting too. */
	o.conn.deadline_ms = o.lock.wait_ms > 0 ? mono_after(start,
	    o.lock.wait_ms) : NEVER;
	/* -n: a server that does not answer is given up as a query would be. */
	if (o.lock.wait_ms == 0)
		o.conn.attempt_ms = CONN_ANSWER_MS;
	if (o.verbose || (!o.quiet && isatty(STDERR_FILENO)))
		o.conn.retrying = say_retrying;
	o.lock.budget = &o.budget;
	c = connect_or_err(&o);
	bound_wait(&o);
	/* A query that only reads or breaks dies by signal, as psql. */
	if (mode->signals && !o.peek && sig_init(&why) == -1)
		die(EXIT_OSERR, "%s", why.msg);

	while ((status = mode->run(&o, c)) == RUN_AGAIN) {
		PQfinish(c);
		c = reconnect_or_err(&o);
	}
	/* Closing the session releases whatever is still held. */
	PQfinish(c);
	return status;
}
