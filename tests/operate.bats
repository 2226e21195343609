#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Operating a fleet's jobs through their record (issue 34): the failure
# streak, a pause with an expiry and a reason, and metrics in Prometheus'
# text format.

load helper

# The streak as the table has it.
failures() {
	sql "SELECT coalesce(failures::text, '-') FROM pglock_runs WHERE key = '$1'"
}

# The "failures" member of KEY's --status --json runs object.
json_failures() {
	run -1 --separate-stderr pglock --status --json "$1"
	"$PYTHON" -c '
import json, sys
print(json.loads(sys.argv[1])["runs"][0]["failures"])' "$output"
}

@test "the record counts failures since the last success: 1, 2, then 0 after a success, then 1" {
	run -3 pglock --record streak-k sh -c 'exit 3'
	[ "$(failures streak-k)" = 1 ]
	run -4 pglock --once streak-k sh -c 'exit 4'
	[ "$(failures streak-k)" = 2 ]
	run -1 --separate-stderr pglock --status streak-k
	assert_line --index 1 --regexp "^streak-k	last_failed	[0-9-]+T[0-9:]+[+-][0-9]+	$(hostname)	4	2$"
	[ "$(json_failures streak-k)" = 2 ]
	run -0 pglock --once streak-k true
	[ "$(failures streak-k)" = 0 ]
	run -1 --separate-stderr pglock --status streak-k
	assert_line --index 2 --regexp "^streak-k	last_failed	.*	4	0$"
	[ "$(json_failures streak-k)" = 0 ]
	run -5 pglock --record streak-k sh -c 'exit 5'
	[ "$(failures streak-k)" = 1 ]
	run -0 pglock --once-per 1000d streak-p true
	[ "$(failures streak-p)" = 0 ]
	[ "$(json_failures streak-p)" = 0 ]
}

@test "the streak through PgBouncer, in the lock's transaction: 1, 2, then 0" {
	start_pgbouncer transaction
	for want in 1 2; do
		run -7 pglock -h 127.0.0.1 -p "$PGB_PORT" --record streak-x sh -c 'exit 7'
		[ "$(failures streak-x)" = "$want" ]
	done
	run -0 pglock -h 127.0.0.1 -p "$PGB_PORT" --record streak-x true
	[ "$(failures streak-x)" = 0 ]
	stop_pgbouncer
}

# The table as the build before the streak made it.
old_table() {
	sql "CREATE TABLE $1 (key text PRIMARY KEY, lock_id text NOT NULL,
	     ok_at timestamptz, ok_host text, ok_seconds double precision,
	     ok_slot bigint, failed_at timestamptz, failed_host text,
	     failed_status integer)"
}

@test "a table an earlier build made, which a writer may not ALTER, keeps working: no streak is counted, --status shows it unknown (? and null)" {
	old_table pglock_o_old
	sql "DROP ROLE IF EXISTS pglock_o_writer; CREATE ROLE pglock_o_writer LOGIN;
	     GRANT SELECT, INSERT, UPDATE, DELETE ON pglock_o_old TO pglock_o_writer"
	log=$BATS_TEST_TMPDIR/log
	run -3 pglock -U pglock_o_writer --runs-table pglock_o_old --once old-k sh -c 'echo run >>"$0"; exit 3' "$log"
	run -0 pglock -U pglock_o_writer --runs-table pglock_o_old --once old-k sh -c 'echo run >>"$0"' "$log"
	run -0 pglock -U pglock_o_writer --runs-table pglock_o_old --once old-k sh -c 'echo run >>"$0"' "$log"
	[ "$(wc -l <"$log")" -eq 2 ]
	[ "$(sql "SELECT failed_status || ' ' || (ok_slot IS NOT NULL) FROM pglock_o_old")" = "3 true" ]
	run -1 --separate-stderr pglock -U pglock_o_writer --runs-table pglock_o_old --status old-k
	assert_line --index 2 --regexp "^old-k	last_failed	.*	3	\?$"
	run -1 --separate-stderr pglock -U pglock_o_writer --runs-table pglock_o_old --status --json old-k
	"$PYTHON" -c '
import json, sys
r = json.loads(sys.argv[1])["runs"][0]
assert r["failures"] is None and r["last_failed"]["status"] == 3, r' "$output"
}
