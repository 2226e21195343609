#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The code's shape, as the house style (and issue 21) wants it: one path
# to the server, process mechanics apart from the lock, short functions.
# Read from the sources; no server.

load helper

SRC_DIR=$BATS_TEST_DIRNAME/..

# Each function of FILE... longer than 80 lines, as "file: name lines": in
# KNF a definition's name starts its line and its body ends at "}".
long_functions() {
	awk '/^[a-z_][a-z0-9_]*\(/ { name = $1; sub(/\(.*/, "", name); start = FNR }
	    /^}/ && start { if (FNR - start > 80) print FILENAME ": " name " " FNR - start; start = 0 }' "$@"
}

@test "one file sends the queries and reads their results: no libpq call that does so outside lib/query.c" {
	cd "$SRC_DIR"
	run grep -l 'PQexec\|PQsend\|PQgetResult\|PQpipelineSync\|PQenterPipelineMode\|PQexitPipelineMode\|PQconsumeInput\|PQisBusy\|PQflush\|PQgetCancel\|PQcancel' ./*.c lib/*.c
	assert_success
	assert_output 'lib/query.c'
}

@test "lib/child.c knows processes only: it includes neither lock.h, conn.h nor libpq" {
	cd "$SRC_DIR"
	run grep -h '#include' lib/child.c lib/child.h
	assert_success
	assert_output --partial '"sig.h"'
	run grep -c '"lock\.h"\|"conn\.h"\|"lease\.h"\|libpq' lib/child.c lib/child.h
	assert_output "$(printf 'lib/child.c:0\nlib/child.h:0')"
}

@test "a run reads in one file: only run.c takes, verifies, watches and releases a lock" {
	cd "$SRC_DIR"
	run grep -l 'lock_send(\|lock_wait(\|lock_verify(\|slots_take(\|child_spawn(\|child_open_gate(\|child_wait(\|lock_release(\|lease_start(' ./*.c
	assert_success
	assert_output './run.c'
}

# The calls between the files, "caller callee" a line: each file compiled
# alone, its undefined symbols against the others' definitions.
calls() {
	local d=$BATS_TEST_TMPDIR f o cflags
	cflags=$(pkg-config --cflags libpq 2>/dev/null || echo "-I$(pg_config --includedir)")
	: >"$d/defs"
	: >"$d/uses"
	for f in ./*.c lib/*.c; do
		f=${f#./}
		o=$d/$(echo "$f" | tr / _).o
		# shellcheck disable=SC2086
		cc -std=c99 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $cflags -c -o "$o" "$f" || return 1
		nm --defined-only "$o" | awk -v f="$f" '$2 ~ /^[TDBR]$/ { print $3, f }' >>"$d/defs"
		nm -u "$o" | awk -v f="$f" '{ print $2, f }' >>"$d/uses"
	done
	join <(sort "$d/uses") <(sort "$d/defs") | awk '$2 != $3 { print $2, $3 }' | sort -u
}

@test "no circle among the files: none calls up into a file that calls it, and nothing calls pglock.c" {
	cd "$SRC_DIR"
	calls >"$BATS_TEST_TMPDIR/edges"
	# Sanity: the calls are seen (main's down into run.c, run.c's into lib/).
	grep -qx 'pglock.c run.c' "$BATS_TEST_TMPDIR/edges"
	grep -qx 'run.c lib/lock.c' "$BATS_TEST_TMPDIR/edges"
	run awk '$2 == "pglock.c"' "$BATS_TEST_TMPDIR/edges"
	assert_output ''
	# lib/ calls nothing above it.
	run awk '$1 ~ /^lib\// && $2 !~ /^lib\//' "$BATS_TEST_TMPDIR/edges"
	assert_output ''
	run tsort "$BATS_TEST_TMPDIR/edges"
	assert_success
	refute_output --partial loop
}

@test "no function is over 80 lines but usage" {
	cd "$SRC_DIR"
	run long_functions ./*.c lib/*.c
	assert_success
	assert_output './pglock.c: usage 146'
}
