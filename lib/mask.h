/* SPDX-License-Identifier: ISC */
/*
 * mask: a -d conninfo or URI checked before use, and its password hidden.
 */
#ifndef PGLOCK_MASK_H
#define PGLOCK_MASK_H

#include "err.h"

/* Check that a -d conninfo or URI parses: 0, or -1 with the reason in err. */
int conn_check(const char *conninfo, struct err *err);

/*
 * Overwrite with 'x', in place, a conninfo or URI holding a password (as libpq
 * parses it), so ps(1) shows it in no form; the caller connects with a copy.
 */
void conn_hide_password(char *conninfo);

#endif
