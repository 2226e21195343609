/* SPDX-License-Identifier: ISC */
/*
 * check.h: what every fuzz target shares: the libFuzzer entry point's
 * prototype and CHECK, which aborts (so the fuzzer keeps the input).
 */
#ifndef PGLOCK_FUZZ_CHECK_H
#define PGLOCK_FUZZ_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* abort() rather than assert(): the checks must survive -DNDEBUG. */
#define CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: check failed: %s\n",	\
			    __FILE__, __LINE__, #cond);			\
			abort();					\
		}							\
	} while (0)

#endif
