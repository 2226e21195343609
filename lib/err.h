/* SPDX-License-Identifier: ISC */
/*
 * err: why a call failed, one line for pglock.c, run.c or inspect.c to
 * print. lib/ fills it (err_set) and never prints it.
 */
#ifndef PGLOCK_ERR_H
#define PGLOCK_ERR_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct err {
	char msg[1024];
};

/* Set e's reason, printf-style, cut to fit. */
static inline void __attribute__((format(printf, 2, 3)))
err_set(struct err *e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	/* Only written: cppcheck takes e->msg for a read of *e. */
	/* cppcheck-suppress ctuuninitvar */
	(void)vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
}

/* Add to e's reason, printf-style; nothing once it is cut. */
static inline void __attribute__((format(printf, 2, 3)))
err_add(struct err *e, const char *fmt, ...)
{
	size_t n = strlen(e->msg);
	va_list ap;

	va_start(ap, fmt);
	if (n + 1 < sizeof(e->msg))
		(void)vsnprintf(e->msg + n, sizeof(e->msg) - n, fmt, ap);
	va_end(ap);
}

#endif
