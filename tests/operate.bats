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
	assert_line --index 2 --regexp "^streak-k	last_failed	[0-9-]+T[0-9:]+[+-][0-9]{2}:[0-9]{2}	$(hostname)	4	2$"
	[ "$(json_failures streak-k)" = 2 ]
	run -0 pglock --once streak-k true
	[ "$(failures streak-k)" = 0 ]
	run -1 --separate-stderr pglock --status streak-k
	assert_line --index 3 --regexp "^streak-k	last_failed	.*	4	0$"
	[ "$(json_failures streak-k)" = 0 ]
	run -5 pglock --record streak-k sh -c 'exit 5'
	[ "$(failures streak-k)" = 1 ]
	run -0 pglock --once-per 1000d streak-p true
	[ "$(failures streak-p)" = 0 ]
	[ "$(json_failures streak-p)" = 0 ]
}

@test "the streak through PgBouncer, in the lock's transaction: 1, 2, then 0; a pause there runs nothing and leaves no lock" {
	start_pgbouncer transaction
	for want in 1 2; do
		run -7 pglock -h 127.0.0.1 -p "$PGB_PORT" --record streak-x sh -c 'exit 7'
		[ "$(failures streak-x)" = "$want" ]
	done
	run -0 pglock -h 127.0.0.1 -p "$PGB_PORT" --record streak-x true
	[ "$(failures streak-x)" = 0 ]
	run -0 pglock -h 127.0.0.1 -p "$PGB_PORT" --pause --reason pooled streak-x
	run -1 --separate-stderr timeout 20 "$PGLOCK" -h 127.0.0.1 -p "$PGB_PORT" --record streak-x touch "$BATS_TEST_TMPDIR/ran"
	assert_equal "$stderr" "pglock: streak-x is paused until --resume by $(hostname): pooled"
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	free "$(sha_id streak-x)"
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
	assert_line --index 3 --regexp "^old-k	last_failed	.*	3	\?$"
	run -1 --separate-stderr pglock -U pglock_o_writer --runs-table pglock_o_old --status --json old-k
	"$PYTHON" -c '
import json, sys
r = json.loads(sys.argv[1])["runs"][0]
assert r["failures"] is None and r["last_failed"]["status"] == 3, r' "$output"
}

# paused_line KEY UNTIL REASON: what a paused run says.
paused_line() {
	echo "pglock: $1 is paused until $2 by $(hostname)${3:+: $3}"
}

@test "a pause's reason reaches a paused run's line, and --ok-within's, escaped: one line, no ESC" {
	run -0 pglock --record pe-k true
	run -0 pglock --pause --reason $'red \e[31m\nnow' pe-k
	run -1 --separate-stderr timeout 20 "$PGLOCK" --record pe-k true
	assert_equal "$stderr" "$(paused_line pe-k --resume 'red \x1b[31m\nnow')"
	run -0 --separate-stderr timeout 20 "$PGLOCK" --status --ok-within 1h pe-k
	assert_output "pe-k: paused until --resume by $(hostname): red \x1b[31m\nnow"
}

@test "--pause: --once and --once-per runs of KEY skip (exit 0, silent but under -v), --record runs say so in one line and exit 1, in either scope; none runs; a plain run still runs; --resume ends it" {
	run -0 --separate-stderr pglock --pause --new --reason 'disk swap, see #ops' p-k
	assert_output ''
	assert_equal "$stderr" 'pglock: p-k: paused until --resume'
	for scope in session transaction; do
		for opt in --once '--once-per 1000d'; do
			# shellcheck disable=SC2086
			run -0 --separate-stderr timeout 20 "$PGLOCK" --scope "$scope" $opt p-k touch "$BATS_TEST_TMPDIR/ran"
			assert_output ''
			assert_equal "$stderr" ''
			# shellcheck disable=SC2086
			run -0 --separate-stderr timeout 20 "$PGLOCK" -v --scope "$scope" $opt p-k touch "$BATS_TEST_TMPDIR/ran"
			assert_equal "$stderr" "$(paused_line p-k --resume 'disk swap, see #ops'): not run"
		done
		run -1 --separate-stderr timeout 20 "$PGLOCK" --scope "$scope" --record p-k touch "$BATS_TEST_TMPDIR/ran"
		assert_output ''
		assert_equal "$stderr" "$(paused_line p-k --resume 'disk swap, see #ops')"
	done
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	free "$(sha_id p-k)"
	# Nothing recorded: a pause is no failure.
	[ "$(sql "SELECT (ok_at IS NULL) || ' ' || (failed_at IS NULL) || ' ' || coalesce(failures, 0) FROM pglock_runs WHERE key = 'p-k'")" = "true true 0" ]
	run -0 timeout 20 "$PGLOCK" p-k touch "$BATS_TEST_TMPDIR/ran"
	[ -e "$BATS_TEST_TMPDIR/ran" ]
	run -0 --separate-stderr pglock --resume p-k
	assert_equal "$stderr" ''
	run -0 --separate-stderr timeout 20 "$PGLOCK" --once p-k echo ran
	assert_output ran
	run -1 --separate-stderr pglock --resume p-k
	assert_equal "$stderr" 'pglock: p-k: not paused'
	run -1 --separate-stderr pglock -q --resume p-k
	assert_equal "$stderr" ''
}

@test "a paused --record run: -E 0 exits 0 and -E 3 exits 3, saying so; -q says nothing; no --reason, no colon; a paused --once* run exits 0 whatever -E" {
	run -0 pglock --pause --new e-k
	run -0 --separate-stderr timeout 20 "$PGLOCK" -E 0 --record e-k touch "$BATS_TEST_TMPDIR/ran"
	assert_equal "$stderr" "$(paused_line e-k --resume)"
	run -3 --separate-stderr timeout 20 "$PGLOCK" -E 3 --record e-k touch "$BATS_TEST_TMPDIR/ran"
	assert_equal "$stderr" "$(paused_line e-k --resume)"
	run -1 --separate-stderr timeout 20 "$PGLOCK" -q --record e-k touch "$BATS_TEST_TMPDIR/ran"
	assert_equal "$stderr" ''
	run -0 --separate-stderr timeout 20 "$PGLOCK" -E 3 --once-per 1h e-k touch "$BATS_TEST_TMPDIR/ran"
	assert_equal "$stderr" ''
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "--pause --for ends by itself, by the server's clock: until is the server's now plus DURATION, and once past it the run runs" {
	run -0 --separate-stderr pglock -v --pause --new --for 2s --reason short f-k
	[ "$(sql "SELECT paused_until - paused_at FROM pglock_runs WHERE key = 'f-k'")" = 00:00:02 ]
	until=$(sql "SELECT to_char(paused_until, 'YYYY-MM-DD\"T\"HH24:MI:SSTZH:TZM') FROM pglock_runs WHERE key = 'f-k'")
	assert_equal "$stderr" "pglock: f-k: paused until $until"
	run -0 pglock --pause --new --for 1h --reason long h-k
	run -1 --separate-stderr timeout 20 "$PGLOCK" --record h-k touch "$BATS_TEST_TMPDIR/ran"
	assert_equal "$stderr" "$(paused_line h-k "$(sql "SELECT to_char(paused_until, 'YYYY-MM-DD\"T\"HH24:MI:SSTZH:TZM') FROM pglock_runs WHERE key = 'h-k'")" long)"
	wait_until 20 bash -c "[ \"\$(psql -XAtc \"SELECT paused_until < now() FROM pglock_runs WHERE key = 'f-k'\")\" = t ]"
	run -0 --separate-stderr timeout 20 "$PGLOCK" --once f-k echo ran
	assert_output ran
	# An ended pause is no pause to resume.
	run -1 --separate-stderr pglock --resume f-k
	assert_equal "$stderr" 'pglock: f-k: not paused'
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "a waiter that gets the lock after KEY was paused runs nothing: the pause is read under the lock" {
	d=$BATS_TEST_TMPDIR
	mkfifo "$d/fifo"
	bg first pglock --record drain-k sh -c 'read x <"$0"' "$d/fifo"
	wait_until 10 held "$(sha_id drain-k)"
	bg second pglock --record drain-k touch "$d/ran"
	wait_until 10 waiting "$(sha_id drain-k)"
	run -0 pglock --pause --new --reason drain drain-k
	fifo_go "$d/fifo"
	bgwait first 20
	[ "$bg_status" -eq 0 ]
	bgwait second 20
	[ "$bg_status" -eq 1 ]
	[ "$(cat "$d/second.err")" = "$(paused_line drain-k --resume drain)" ]
	[ ! -e "$d/ran" ]
}

@test "--forget keeps a pause: the runs go, the pause stays" {
	run -0 pglock --once fp-k true
	run -0 pglock --pause fp-k
	run -0 pglock --forget fp-k
	[ "$(sql "SELECT (ok_at IS NULL) || ' ' || (paused_at IS NOT NULL) FROM pglock_runs WHERE key = 'fp-k'")" = "true true" ]
	run -1 timeout 20 "$PGLOCK" --record fp-k true
	run -0 pglock --resume fp-k
	run -0 pglock --forget fp-k
	[ -z "$(sql "SELECT key FROM pglock_runs WHERE key = 'fp-k'")" ]
}

@test "pausing needs the table's UPDATE grant, as recording does: without it --pause and --resume are 69 and change nothing" {
	run -0 pglock --record grant-k true
	run -0 pglock --pause grant-k
	sql "DROP ROLE IF EXISTS pglock_o_insert; CREATE ROLE pglock_o_insert LOGIN;
	     GRANT SELECT, INSERT ON pglock_runs TO pglock_o_insert"
	run -69 --separate-stderr pglock -U pglock_o_insert --resume grant-k
	assert_equal "$stderr" "pglock: grant-k: --resume: permission denied for table pglock_runs"
	run -69 --separate-stderr pglock -U pglock_o_insert --pause grant-j
	assert_equal "$stderr" "pglock: grant-j: --pause: permission denied for table pglock_runs"
	[ "$(sql "SELECT string_agg(key || ' ' || (paused_at IS NOT NULL), ',') FROM pglock_runs WHERE key LIKE 'grant-%'")" = "grant-k true" ]
	sql "GRANT UPDATE ON pglock_runs TO pglock_o_insert"
	run -0 pglock -U pglock_o_insert --pause --new grant-j
	run -0 pglock -U pglock_o_insert --resume grant-k
}

@test "--pause on a table an earlier build made: 69 naming the ALTER TABLE its owner runs; after it, the writer pauses" {
	old_table pglock_o_old2
	sql "DROP ROLE IF EXISTS pglock_o_writer2; CREATE ROLE pglock_o_writer2 LOGIN;
	     GRANT SELECT, INSERT, UPDATE, DELETE ON pglock_o_old2 TO pglock_o_writer2"
	run -69 --separate-stderr pglock -U pglock_o_writer2 --runs-table pglock_o_old2 --pause old2-k
	assert_equal "$stderr" 'pglock: old2-k: --pause: table "pglock_o_old2" has no columns for pauses (an earlier pglock created it); have its owner run: ALTER TABLE "pglock_o_old2" ADD COLUMN IF NOT EXISTS failures integer, ADD COLUMN IF NOT EXISTS paused_at timestamptz, ADD COLUMN IF NOT EXISTS paused_until timestamptz, ADD COLUMN IF NOT EXISTS paused_host text, ADD COLUMN IF NOT EXISTS paused_reason text'
	alter=${stderr#*run: }
	run -1 --separate-stderr pglock -U pglock_o_writer2 --runs-table pglock_o_old2 --resume old2-k
	assert_equal "$stderr" 'pglock: old2-k: not paused'
	run -0 timeout 20 "$PGLOCK" -U pglock_o_writer2 --runs-table pglock_o_old2 --once old2-k true
	sql "$alter"
	run -0 pglock -U pglock_o_writer2 --runs-table pglock_o_old2 --pause old2-k
	run -1 timeout 20 "$PGLOCK" -U pglock_o_writer2 --runs-table pglock_o_old2 --record old2-k true
	run -0 pglock -U pglock_o_writer2 --runs-table pglock_o_old2 --resume old2-k
}

@test "--pause of a KEY with no record (a typo) is refused: exit 1, one line naming the recorded keys near it, nothing written; -q says nothing; --new pauses a job before its first run; a pause done says until when, but under -q" {
	t="--runs-table pglock_o_typo"
	# shellcheck disable=SC2086
	{
		run -1 --separate-stderr pglock $t --pause nightly-backup
		assert_equal "$stderr" "pglock: nightly-backup: no record to pause, nothing paused (a typo?) (--pause --new pauses a job before its first run)"
		# Not even the table: nothing is written.
		[ -z "$(sql "SELECT to_regclass('pglock_o_typo')")" ]
		run -0 pglock $t --record nightly-backup true
		run -0 pglock $t --record nightly-backup-eu true
		run -0 pglock $t --record weekly-report true
		run -1 --separate-stderr pglock $t --pause --for 2h --reason swap nightly-bakup
		assert_equal "$stderr" "pglock: nightly-bakup: no record to pause, nothing paused (a typo?); did you mean nightly-backup? (--pause --new pauses a job before its first run)"
		run -1 --separate-stderr pglock $t -q --pause nightly-bakup
		assert_equal "$stderr" ''
		[ "$(sql "SELECT count(*) || ' ' || count(paused_at) FROM pglock_o_typo")" = "3 0" ]
		# The real job pauses; --new pauses one not yet run.
		run -0 --separate-stderr pglock $t --pause nightly-backup
		assert_equal "$stderr" 'pglock: nightly-backup: paused until --resume'
		run -0 --separate-stderr pglock $t -q --pause nightly-backup
		assert_equal "$stderr" ''
		run -0 --separate-stderr pglock $t --pause --new first-run
		[ "$(sql "SELECT string_agg(key, ',' ORDER BY key) FROM pglock_o_typo WHERE paused_at IS NOT NULL")" = "first-run,nightly-backup" ]
		run -0 --separate-stderr timeout 20 "$PGLOCK" $t --once first-run touch "$BATS_TEST_TMPDIR/ran"
		[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	}
}

@test "--pause and --resume take one KEY; --for and --reason only with --pause; --for 0, a --for without a unit and a --reason not UTF-8 are refused: 64" {
	run -64 pglock --pause
	run -64 pglock --pause k true
	run -64 pglock --resume a b
	run -64 --separate-stderr pglock --pause --resume k
	assert_equal "$stderr" "pglock: choose one of --hold, --status, --explain, --break, --forget, --pause, --resume and --version-counter (see pglock --help)"
	run -64 --separate-stderr pglock --for 1h --once k true
	assert_equal "$stderr" "pglock: --for, --reason and --new are for --pause (see pglock --help)"
	run -64 pglock --reason x --resume k
	run -64 --separate-stderr pglock --pause --for 0 k
	assert_equal "$stderr" "pglock: --for: must be more than 0 (see pglock --help)"
	run -64 --separate-stderr pglock --pause --for 2 k
	assert_equal "$stderr" "pglock: --for: '2' needs a unit: 2h, 2m or 2s (see pglock --help)"
	run -64 pglock --pause --reason $'a\xffb' k
	run -64 pglock --pause --reason "$(head -c 1001 /dev/zero | tr '\0' r)" k
	run -64 pglock --pause --json k
	run -64 pglock --pause $'a\xffb'
}

# until_of KEY: the pause's end as pglock prints it; until_re KEY: the same
# as a regular expression.
until_of() {
	sql "SELECT to_char(paused_until, 'YYYY-MM-DD\"T\"HH24:MI:SSTZH:TZM') FROM pglock_runs WHERE key = '$1'"
}
until_re() {
	local u
	u=$(until_of "$1")
	echo "${u//+/\\+}"
}

@test "--status KEY shows a pause: a line (until - when open-ended, the reason escaped); JSON \"paused\" {at, until, host, reason}, until null when open-ended, null when not paused" {
	run -0 pglock --record sp-k true
	run -0 pglock --pause --reason $'swap\tdisks\nnow' sp-k
	host=$(hostname)
	run -1 --separate-stderr pglock --status sp-k
	[ "${#lines[@]}" -eq 4 ]
	assert_line --index 3 --regexp "^sp-k	paused	[0-9-]+T[0-9:]+[+-][0-9]{2}:[0-9]{2}	$host	-	swap\\\\tdisks\\\\nnow$"
	run -0 pglock --pause --for 1h sp-k
	run -1 --separate-stderr pglock --status sp-k
	assert_line --index 3 --regexp "^sp-k	paused	[0-9-]+T[0-9:]+[+-][0-9]{2}:[0-9]{2}	$host	$(until_re sp-k)	$"
	run -0 pglock --pause --reason $'swap\tdisks\nnow' sp-k
	run -0 pglock --pause --new --for 2h --reason 'until then' sp-j
	run -1 --separate-stderr pglock --status --json sp-k sp-j sp-none
	"$PYTHON" -c '
import json, sys
runs = json.loads(sys.argv[1])["runs"]
p = runs[0]["paused"]
assert sorted(p) == ["at", "host", "reason", "until"], p
assert p["until"] is None and p["host"] == sys.argv[2] and p["reason"] == "swap\tdisks\nnow" and p["at"], p
assert runs[0]["last_ok"] is not None, runs
p = runs[1]["paused"]
assert p["until"] == sys.argv[3] and p["reason"] == "until then", p
assert runs[2]["paused"] is None, runs' "$output" "$host" "$(until_of sp-j)"
	run -0 pglock --resume sp-k
	run -1 --separate-stderr pglock --status --json sp-k
	"$PYTHON" -c '
import json, sys
assert json.loads(sys.argv[1])["runs"][0]["paused"] is None' "$output"
	run -1 --separate-stderr pglock --status sp-k
	refute_output --partial paused
}

@test "--node and PGLOCK_NODE name the machine in records (success, failure, pause) and the command gets PGLOCK_NODE; the option wins; the host name without; an empty or non-UTF-8 name is 64" {
	run -0 --separate-stderr pglock --node web-1 --record node-k sh -c 'echo "$PGLOCK_NODE"'
	assert_output web-1
	PGLOCK_NODE=pod-7 run -3 --separate-stderr pglock --record node-k sh -c 'echo "$PGLOCK_NODE"; exit 3'
	assert_output pod-7
	PGLOCK_NODE=pod-7 run -0 pglock --node ops --pause --for 1h node-k
	run -1 --separate-stderr pglock --status --json node-k
	"$PYTHON" -c '
import json, sys
r = json.loads(sys.argv[1])["runs"][0]
assert r["last_ok"]["host"] == "web-1", r
assert r["last_failed"]["host"] == "pod-7", r
assert r["paused"]["host"] == "ops", r
' "$output"
	# The metrics name the node of the last success, as an info metric.
	run -0 --separate-stderr pglock --status --metrics node-k
	assert_line 'pglock_last_success_info{key="node-k",node="web-1"} 1'
	# Nested: the inner pglock records the node the outer one was given.
	run -0 pglock --node batch-3 node-outer "$PGLOCK" --once node-j true
	run -1 --separate-stderr pglock --status node-j
	assert_line --index 2 --regexp "^node-j	last_ok	[^	]+	batch-3	"
	PGLOCK_NODE= run -0 pglock --once node-h true
	run -1 --separate-stderr pglock --status node-h
	assert_line --index 2 --regexp "^node-h	last_ok	[^	]+	$(hostname)	"
	run -64 --separate-stderr pglock --node '' --record node-k true
	assert_equal "$stderr" "pglock: --node: a node's name must be UTF-8 of 1 to 255 bytes (see pglock --help)"
	PGLOCK_NODE=$'a\xffb' run -64 --separate-stderr pglock --record node-k true
	assert_equal "$stderr" "pglock: PGLOCK_NODE: a node's name must be UTF-8 of 1 to 255 bytes (see pglock --help)"
}

@test "--status --ok-within of a paused KEY exits 0 (a paused job is no alarm) and its line says paused and until when; resumed, it is 1 again" {
	run -1 pglock --status --ok-within 1h ow-k
	run -0 pglock --pause --new --for 1h --reason maintenance ow-k
	run -0 --separate-stderr pglock --status --ok-within 1h ow-k
	assert_output --regexp "^ow-k: paused until $(until_re ow-k) by $(hostname): maintenance$"
	run -0 --separate-stderr pglock -q --status --ok-within 1h ow-k
	assert_output ""
	run -0 --separate-stderr pglock --status --json --ok-within 1h ow-k
	run -0 pglock --resume ow-k
	run -1 pglock --status --ok-within 1h ow-k
	# An ended pause is no pause: the check alarms again.
	run -0 pglock --pause --for 1s ow-k
	wait_until 20 bash -c "[ \"\$(psql -XAtc \"SELECT paused_until < now() FROM pglock_runs WHERE key = 'ow-k'\")\" = t ]"
	run -1 --separate-stderr pglock --status --ok-within 1h ow-k
	refute_output --partial paused
}

@test "a pause ends by the server's clock, not the client's: 2 hours ahead, a 1-hour pause still refuses a run and --ok-within says paused; 1 hour behind, an ended one no longer does" {
	export FAKETIME_DONT_FAKE_MONOTONIC=1
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
	# Not through valgrind (make valgrind), which faketime's preload upsets.
	ahead=(faketime -f '+2h') behind=(faketime -f '-1h')
	[ -z "${PGLOCK_VG_DIR:-}" ] || ahead=() behind=()
	run -0 pglock --pause --new --for 1h skew-on
	run -1 --separate-stderr "${ahead[@]}" "$PGLOCK" --record skew-on touch "$BATS_TEST_TMPDIR/ran"
	assert_equal "$stderr" "$(paused_line skew-on "$(until_of skew-on)")"
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	run -0 --separate-stderr "${ahead[@]}" "$PGLOCK" --status --ok-within 1h skew-on
	assert_output "skew-on: paused until $(until_of skew-on) by $(hostname)"
	run -0 pglock --pause --new --for 1s skew-off
	wait_until 20 bash -c "[ \"\$(psql -XAtc \"SELECT paused_until < now() FROM pglock_runs WHERE key = 'skew-off'\")\" = t ]"
	run -1 --separate-stderr "${behind[@]}" "$PGLOCK" --status --ok-within 1h skew-off
	assert_equal "$stderr" "pglock: skew-off: never succeeded (--ok-within 1h)"
	run -0 "${behind[@]}" "$PGLOCK" --once skew-off touch "$BATS_TEST_TMPDIR/ran"
	[ -e "$BATS_TEST_TMPDIR/ran" ]
	# faketime did move the clock.
	if [ -z "${PGLOCK_VG_DIR:-}" ]; then
		run -0 faketime -f '+2h' date +%s
		[ $((output - $(date +%s))) -ge 7100 ]
		run -0 faketime -f '-1h' date +%s
		[ $(($(date +%s) - output)) -ge 3500 ]
	fi
}

# metrics ARGS...: `pglock --status --metrics ARGS` (exit 0, nothing on
# stderr), parsed by the Prometheus client library's own parser, as
# "family key value" lines, sorted.
metrics() {
	local prom
	prom=$("$PGLOCK" --status --metrics "$@" 2>"$BATS_TEST_TMPDIR/metrics.err") || return 1
	[ ! -s "$BATS_TEST_TMPDIR/metrics.err" ] || return 1
	"$PYTHON" -c '
import sys
from prometheus_client.parser import text_string_to_metric_families
out = []
for fam in text_string_to_metric_families(sys.argv[1]):
    assert fam.type == "gauge", fam
    assert fam.documentation, fam
    for s in fam.samples:
        # Which node ran the last success: checked by the --node test.
        if s.name == "pglock_last_success_info":
            assert sorted(s.labels) == ["key", "node"] and s.value == 1, s
            continue
        assert s.name == fam.name and list(s.labels) == ["key"], s
        out.append("%s %r %r" % (s.name, s.labels["key"], s.value))
print("\n".join(sorted(out)))' "$prom"
}

# record_metrics TABLE KEY: the record's own values, as metrics() shows them.
record_metrics() {
	sql "SELECT 'pglock_last_success_timestamp_seconds ''$2'' ' || extract(epoch FROM ok_at)::float8,
	            'pglock_last_failure_timestamp_seconds ''$2'' ' || extract(epoch FROM failed_at)::float8,
	            'pglock_last_success_duration_seconds ''$2'' ' || ok_seconds,
	            'pglock_consecutive_failures ''$2'' ' || failures::float8
	     FROM $1 WHERE key = '$2'" | tr '|' '\n' | grep .
	# The last run's, whatever its outcome, from the history.
	sql "SELECT 'pglock_last_run_duration_seconds ''$2'' ' || seconds
	     FROM ${1}_history WHERE key = '$2' ORDER BY id DESC LIMIT 1"
}

@test "--status --metrics: the Prometheus text format that its client library parses, every record's gauges equal to the record, 0" {
	t="--runs-table pglock_o_m1"
	# shellcheck disable=SC2086
	{
		run -0 pglock $t --record m-ok sh -c 'sleep 0.2'
		run -3 pglock $t --record m-bad sh -c 'exit 3'
		run -3 pglock $t --record m-bad sh -c 'exit 3'
		run -0 pglock $t --record m-both true
		run -4 pglock $t --record m-both sh -c 'exit 4'
		run -0 pglock $t --pause --for 1h m-ok
		run -0 metrics $t
	}
	# Every sample, every value: the record's (timestamps to the microsecond).
	"$PYTHON" -c '
import sys
got = {l.rsplit(" ", 1)[0]: float(l.rsplit(" ", 1)[1]) for l in sys.argv[1].splitlines()}
want = {}
for l in sys.argv[2].splitlines():
    k, v = l.rsplit(" ", 1)
    want[k] = float(v)
for k in ("ok", "bad", "both"):
    want["pglock_paused %r" % ("m-" + k)] = 1.0 if k == "ok" else 0.0
assert sorted(got) == sorted(want), (sorted(got), sorted(want))
for k, v in want.items():
    assert abs(got[k] - v) < 2e-6, (k, got[k], v)' "$output" "$(for k in m-ok m-bad m-both; do record_metrics pglock_o_m1 "$k"; done)"
	[[ "$output" == *"pglock_consecutive_failures 'm-bad' 2.0"* ]]
	# Holders and waiters only for KEYs named.
	run -0 pglock --status --metrics --runs-table pglock_o_m1
	assert_line '# TYPE pglock_lock_holders gauge'
	refute_output --partial 'pglock_lock_holders{'
	# No table yet: the families, no sample.
	run -0 metrics --runs-table pglock_o_none
	assert_output ''
}

@test "--status --metrics: a hostile KEY (quote, backslash, newline) is one well-formed label, named or listed" {
	key=$'a"b\\c\nd\\n'
	run -0 pglock --runs-table pglock_o_m2 --record "$key" true
	run -0 pglock --runs-table pglock_o_m2 --record plain-k true
	run -0 pglock --status --metrics --runs-table pglock_o_m2
	assert_line 'pglock_paused{key="a\"b\\c\nd\\n"} 0'
	run -0 metrics --runs-table pglock_o_m2
	"$PYTHON" -c '
import sys
lines = sys.argv[1].splitlines()
assert len(lines) == 10, lines
assert sum(1 for l in lines if l.split(" ")[1] == repr(sys.argv[2])) == 5, lines' "$output" "$key"
	run -0 metrics --runs-table pglock_o_m2 "$key"
	"$PYTHON" -c '
import sys
keys = {eval(l.split(" ")[1]) for l in sys.argv[1].splitlines()}
assert keys == {sys.argv[2]}, keys' "$output" "$key"
}

@test "--status --metrics KEY: the lock's holders and waiters, over its slots too; a KEY named twice is one series; an unrecorded KEY is not paused, has no failures, and its last success is 0" {
	bg holder pglock held-k sleep 60
	wait_until 10 held "$(sha_id held-k)"
	bg waiter pglock held-k true
	wait_until 10 waiting "$(sha_id held-k)"
	run -0 metrics held-k held-k free-k
	assert_output "pglock_consecutive_failures 'free-k' 0.0
pglock_consecutive_failures 'held-k' 0.0
pglock_last_success_timestamp_seconds 'free-k' 0.0
pglock_last_success_timestamp_seconds 'held-k' 0.0
pglock_lock_holders 'free-k' 0.0
pglock_lock_holders 'held-k' 1.0
pglock_lock_waiters 'free-k' 0.0
pglock_lock_waiters 'held-k' 1.0
pglock_paused 'free-k' 0.0
pglock_paused 'held-k' 0.0"
	bg s1 pglock --slots 3 slot-k sleep 60
	bg s2 pglock --slots 3 slot-k sleep 60
	wait_until 10 bash -c "[ \"\$($PGLOCK --status --metrics --slots 3 slot-k | grep '^pglock_lock_holders')\" = 'pglock_lock_holders{key=\"slot-k\"} 2' ]"
	# Without N too, as --status KEY finds them.
	run -0 pglock --status --metrics slot-k
	assert_line 'pglock_lock_holders{key="slot-k"} 2'
	assert_line 'pglock_lock_waiters{key="slot-k"} 0'
	# Slots full: a waiter holds their queue, and waits.
	bg s3 pglock --slots 2 full-k sleep 60
	bg s4 pglock --slots 2 full-k sleep 60
	wait_until 10 bash -c "$PGLOCK --status --metrics full-k | grep -qx 'pglock_lock_holders{key=\"full-k\"} 2'"
	bg w pglock --slots 2 full-k true
	wait_until 10 bash -c "$PGLOCK --status --metrics full-k | grep -qx 'pglock_lock_waiters{key=\"full-k\"} 1'"
	run -0 pglock --status --metrics full-k
	assert_line 'pglock_lock_holders{key="full-k"} 2'
	assert_line 'pglock_lock_waiters{key="full-k"} 1'
}

@test "--metrics is for --status, without --json or --ok-within; a KEY not UTF-8 cannot be a label: 64" {
	run -64 pglock --metrics k true
	run -64 pglock --status --metrics --json
	run -64 pglock --status --metrics --ok-within 1h k
	run -64 --separate-stderr pglock --status --metrics $'a\xffb'
	assert_equal "$stderr" 'pglock: a\xffb: not valid UTF-8, which a metric'"'"'s label needs (see pglock --help)'
}

@test "--status --metrics: a record this role may not read is an error, not an absence: 69, nothing on standard output" {
	run -0 pglock --record mh-k true
	sql "DROP ROLE IF EXISTS pglock_o_blind2; CREATE ROLE pglock_o_blind2 LOGIN"
	for keys in '' mh-k; do
		# shellcheck disable=SC2086
		run -69 --separate-stderr pglock -U pglock_o_blind2 --status --metrics $keys
		assert_output ''
		assert_equal "$stderr" 'pglock: --status --metrics: permission denied for table pglock_runs'
	done
}
