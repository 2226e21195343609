/* SPDX-License-Identifier: ISC */
/*
 * out: what pglock writes, for pglock.c, run.c and inspect.c alike:
 * diagnostic lines on stderr (one write(2) a line, escaped), the exits that
 * follow them, tab-separated fields and JSON strings on stdout.
 *
 * Copyright (c) 2026 The pglock authors. Permission to use, copy, modify
 * and distribute this software for any purpose is granted under the terms
 * of the ISC licence in COPYING.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/exits.h"
#include "lib/key.h"
#include "out.h"

/* A C1 control, or a bidi mark or override: steers a terminal or a reader. */
static int
steers(unsigned long cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || cp == 0x61c || cp == 0x200e ||
	    cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
	    (cp >= 0x2066 && cp <= 0x2069);
}

/*
 * Copy s into out (len bytes, cut between characters) as one line a terminal
 * shows as it is: control bytes as \n, \t, \r or \xHH, bytes of a non-UTF-8
 * string as \xHH, what steers() as \uHHHH. All text pglock prints from the user
 * or the server goes through here (JSON has its own escapes). A field (tsv)
 * also doubles a backslash, as COPY's text format does, so its reader can undo
 * the escapes: a key holding "\t" is not one holding a tab.
 */
static const char *
escape(const char *s, char *out, size_t len, int tsv)
{
	const unsigned char *u = (const unsigned char *)s;
	int utf8 = key_utf8_ok(s, strlen(s));
	unsigned long cp;
	size_t n = 0, k, m;
	char e[8];

	while (*u != '\0') {
		k = 1;
		e[0] = '\0';
		if (*u == '\\' && tsv) {
			snprintf(e, sizeof(e), "\\\\");
		} else if (*u < 0x20 || *u == 0x7f || (*u >= 0x80 && !utf8)) {
			snprintf(e, sizeof(e), *u == '\n' ? "\\n" : *u == '\t' ?
			    "\\t" : *u == '\r' ? "\\r" : "\\x%02x", *u);
		} else if (*u >= 0xc0 && *u < 0xf0) {
			/* Two or three bytes: C1 and the marks are there. */
			k = *u < 0xe0 ? 2 : 3;
			cp = k == 2 ? (*u & 0x1fUL) << 6 | (u[1] & 0x3fUL) :
			    (*u & 0x0fUL) << 12 | (u[1] & 0x3fUL) << 6 |
			    (u[2] & 0x3fUL);
			if (steers(cp))
				snprintf(e, sizeof(e), "\\u%04lx", cp);
		} else if (*u >= 0xf0) {
			k = 4;
		}
		m = e[0] == '\0' ? k : strlen(e);
		if (n + m >= len)
			break;
		memcpy(out + n, e[0] == '\0' ? (const char *)u : e, m);
		n += m;
		u += k;
	}
	out[n] = '\0';
	return out;
}

/*
 * "pglock: " fmt, errnum's reason unless 0, then end ("\n", or "" for the live
 * line) in one write(2), not err(3)'s three: no spliced lines in a shared log.
 */
static void vline(const char *lead, const char *fmt, va_list ap, int errnum,
    const char *end) __attribute__((format(printf, 2, 0)));

static void
vline(const char *lead, const char *fmt, va_list ap, int errnum,
    const char *end)
{
	char msg[1024], shown[2048], buf[2200];
	int n;

	/*
	 * Cut at 1023 bytes, the message leaves room for the rest. Every caller
	 * va_start()s ap; clang-tidy 14 says otherwise of usage_err's only when
	 * it analyses several files in one run (out.c alone passes).
	 */
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	n = snprintf(buf, sizeof(buf), "%spglock: %s%s%s%s", lead,
	    escape(msg, shown, sizeof(shown), 0),
	    errnum != 0 ? ": " : "", errnum != 0 ? strerror(errnum) : "", end);
	if (n > 0)
		(void)!write(STDERR_FILENO, buf, (size_t)n < sizeof(buf) ?
		    (size_t)n : sizeof(buf) - 1);
}

void
say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline("", fmt, ap, 0, "\n");
	va_end(ap);
}

void
live_line(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline("\r", fmt, ap, 0, "");
	va_end(ap);
}

void
die(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline("", fmt, ap, 0, "\n");
	va_end(ap);
	exit(status);
}

void
die_errno(int status, const char *fmt, ...)
{
	va_list ap;
	int e = errno;

	va_start(ap, fmt);
	vline("", fmt, ap, e, "\n");
	va_end(ap);
	exit(status);
}

/* KEY (or an option's value) as messages show it: escape()d, kept. */
const char *
printable(const char *s)
{
	size_t len = 6 * strlen(s) + 1;
	char *out = malloc(len);

	if (out == NULL)
		die_errno(EXIT_OSERR, "malloc");
	return escape(s, out, len, 0);
}

const char *
field(const char *s, char *buf, size_t len)
{
	return escape(s, buf, len, 1);
}

const char *
pause_said(const char *until, const char *host, const char *reason, char *buf,
    size_t len)
{
	char h[1024], why[4096];

	snprintf(buf, len, "paused until %s by %s%s%s", *until != '\0' ? until :
	    "--resume", field(host, h, sizeof(h)), *reason != '\0' ? ": " : "",
	    field(reason, why, sizeof(why)));
	return buf;
}

/* Bytes not UTF-8 (a KEY may hold any) go out as code points of that value. */
void
json_put(FILE *f, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	int utf8 = key_utf8_ok(s, strlen(s));

	putc('"', f);
	for (; *u != '\0'; u++) {
		if (*u == '"' || *u == '\\')
			fprintf(f, "\\%c", *u);
		else if (*u < 0x20 || *u == 0x7f || (*u >= 0x80 && !utf8))
			fprintf(f, "\\u%04x", *u);
		else
			putc(*u, f);
	}
	putc('"', f);
}

/* The length of the UTF-8 sequence at u (before end), or 0: none valid. */
static size_t
utf8_at(const unsigned char *u, const unsigned char *end)
{
	size_t k = *u < 0x80 ? 1 : *u >= 0xf0 ? 4 : *u >= 0xe0 ? 3 :
	    *u >= 0xc0 ? 2 : 0;

	if (k == 0 || (size_t)(end - u) < k)
		return 0;
	return k == 1 || key_utf8_ok((const char *)u, k) ? k : 0;
}

/*
 * Bytes as they came (a command's output, cut anywhere): each UTF-8 sequence
 * as it is, each byte of none as the code point of its value.
 */
void
json_putn(FILE *f, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s, *end = u + n;
	size_t k;

	putc('"', f);
	for (; u < end; u += k) {
		k = utf8_at(u, end);
		if (*u == '"' || *u == '\\') {
			fprintf(f, "\\%c", *u);
		} else if (*u < 0x20 || *u == 0x7f || k == 0) {
			fprintf(f, "\\u%04x", *u);
			k = 1;
		} else {
			(void)fwrite(u, 1, k, f);
		}
	}
	putc('"', f);
}

void
json_str(const char *s)
{
	json_put(stdout, s);
}

void
usage_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline("", fmt, ap, 0, " (see pglock --help)\n");
	va_end(ap);
	exit(EXIT_USAGE);
}

void
flush_stdout_or_err(void)
{
	if (fflush(stdout) == EOF || ferror(stdout))
		die_errno(EXIT_OSERR, "stdout");
}

void
setenv_or_err(const char *name, const char *value)
{
	if (setenv(name, value, 1) == -1)
		die_errno(EXIT_OSERR, "setenv");
}
