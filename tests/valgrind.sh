#!/bin/sh
# SPDX-License-Identifier: ISC
# valgrind.sh: pglock under memcheck, for `make valgrind`, which points the
# bats suites' PGLOCK here. Any error makes the process exit 99 and leaves
# a non-empty log in tests/.vg. (Not a PGLOCK_* variable: pglock drops
# those from its command's environment, and a nested pglock runs this too.)
# Inlined frames are not read into stack traces: a sixth of each start.
exec valgrind -q --error-exitcode=99 --leak-check=no --read-inline-info=no \
	--log-file="$(cd "$(dirname "$0")" && pwd)/.vg/vg.%p" \
	"$(dirname "$0")/../pglock" "$@"
