#!/bin/sh
# SPDX-License-Identifier: ISC
# valgrind.sh: pglock under memcheck, for `make valgrind`, which points the
# bats suites' PGLOCK here. Any error makes the process exit 99 and leaves
# a non-empty log in PGLOCK_VG_DIR.
exec valgrind -q --error-exitcode=99 --leak-check=no \
	--log-file="${PGLOCK_VG_DIR:?}/vg.%p" \
	"$(dirname "$0")/../pglock" "$@"
