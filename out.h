/* SPDX-License-Identifier: ISC */
/*
 * out: what pglock writes (out.c): diagnostic lines, the exits that follow
 * them, fields and JSON strings. Only pglock.c, run.c and inspect.c use it;
 * lib/ never prints.
 */
#ifndef PGLOCK_OUT_H
#define PGLOCK_OUT_H

#include <stdio.h>

/* A diagnostic line on stderr, as "pglock: ...", written at once. */
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A diagnostic line, then exit with status. */
void die(int status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

/* The same, with errno's reason, as err(3). */
void die_errno(int status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

/* s as a tab-separated field, escaped into buf (len bytes). */
const char *field(const char *s, char *buf, size_t len);

/*
 * A pause, as --pause's runs and --status --ok-within say it: "paused until
 * UNTIL ("": --resume) by HOST[: REASON]", host and reason escaped, into buf.
 */
const char *pause_said(const char *until, const char *host,
    const char *reason, char *buf, size_t len);

/* Print s as a JSON string, valid even where s is not UTF-8. */
void json_str(const char *s);

/* The same, to f. */
void json_put(FILE *f, const char *s);

/* The same for n bytes, which may hold NUL. */
void json_putn(FILE *f, const char *s, size_t n);

/* The terminal's live line: rewritten in place, ended by the next say(). */
void live_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A usage error: one line on stderr, then exit 64. */
void usage_err(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));

/* s (KEY, an option's value) as messages show it, escaped (malloc'd). */
const char *printable(const char *s);

/* setenv(3), or exit 71. */
void setenv_or_err(const char *name, const char *value);

/* Flush stdout; a write error exits 71, as in flock(1). */
void flush_stdout_or_err(void);

#endif
