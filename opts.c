/* SPDX-License-Identifier: ISC */
/*
 * opts: what the parsed options (pglock.h) give run.c and inspect.c beside
 * their fields: --scope's names, KEY's lock id under the options' scheme and
 * the name its record of runs goes by; bad input exits, as out.h's helpers.
 * Beneath pglock.c, run.c and inspect.c alike: none of them calls up.
 *
 * Copyright (c) 2026 The pglock authors. Permission to use, copy, modify
 * and distribute this software for any purpose is granted under the terms
 * of the ISC licence in COPYING.
 */
#include <stdlib.h>
#include <string.h>

#include "lib/exits.h"
#include "lib/key.h"
#include "out.h"
#include "pglock.h"

const char *const scope_names[3] = { "auto", "session", "transaction" };

void
resolve_key_or_err(const struct opts *o, const char *text, struct key *k)
{
	struct err why;

	switch (key_make(&o->how, text, strlen(text), k, &why)) {
	case 0:
		return;
	case KEY_BAD:
		usage_err("%s", why.msg);
	default:
		die(EXIT_SOFTWARE, "%s", why.msg);
	}
}

char *
record_key(const struct opts *o, const char *text)
{
	size_t len = strlen(text) + 64;
	char *name = malloc(len);
	int n;

	if (name == NULL)
		die_errno(EXIT_OSERR, "malloc");
	n = key_record_name(&o->how, text, name, len);
	if (n < 0 || (size_t)n >= len)
		die(EXIT_SOFTWARE, "no record name for '%s'", text);
	return name;
}
