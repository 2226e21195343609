#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Once: a job that runs once per slot of the server's clock (--once-per),
# or once ever (--once), across machines, with its record in the database.
# A long period (1000d: the next slot begins in July 2027) keeps a test
# inside one slot.

load helper

runs() { [ -e "$1" ] && wc -l <"$1" || echo 0; }

# The -w of a waiter that must time out behind a holder: under valgrind a
# pglock may take most of a second to connect, which -w bounds too.
w=1
[ -z "${PGLOCK_VG_DIR:-}" ] || w=5

# slot_code MS: how a record keeps the --once-per MS slot of the server's
# now, its start and its length: 2^62 | bits(MS) << 56 | index << bits(MS) | MS.
slot_code() {
	local ms=$1 bits=0 now
	while (( ms >> bits )); do bits=$((bits + 1)); done
	now=$(sql "SELECT floor(extract(epoch FROM now()) * 1000)::bigint")
	echo $(( (1 << 62) | (bits << 56) | ((now / ms) << bits) | ms ))
}

# The record of KEY, as the table has it.
record() {
	sql "SELECT coalesce(ok_slot::text, '-') || ' ' || coalesce(failed_status::text, '-')
	     FROM pglock_runs WHERE key = '$1'"
}

@test "three cron runs of a fast job, 0.8 s apart: one run, and all exit 0" {
	log=$BATS_TEST_TMPDIR/log
	for m in 1 2 3; do
		bg "m$m" pglock --once-per 1000d cron-k sh -c 'echo run >>"$0"; sleep 0.3' "$log"
		sleep 0.8	# not to synchronise: cron on machines whose clocks differ
	done
	for m in 1 2 3; do
		bgwait "m$m" 20
		[ "$bg_status" -eq 0 ]
	done
	[ "$(runs "$log")" -eq 1 ]
}

# One run after another, as on machines whose clocks differ by more than
# the job lasts: the later runs find the slot done (the next tests try -n
# and -E 0 behind a run still going).
@test "the issue's cron runs with -n -q -E 0, one after another: one run, all exit 0, nothing said" {
	log=$BATS_TEST_TMPDIR/log
	for m in 1 2 3; do
		run -0 --separate-stderr timeout 20 "$PGLOCK" -n -q -E 0 --once-per 1000d cron-n sh -c 'echo run >>"$0"; sleep 0.3' "$log"
		assert_output ''
		assert_equal "$stderr" ''
	done
	[ "$(runs "$log")" -eq 1 ]
	[ "$(record cron-n)" = "$(slot_code 86400000000) -" ]
}

# first_run KEY: a --once run of KEY that logs "first" to $d/log and then
# goes on until finish_first; d is the test's directory.
first_run() {
	d=$BATS_TEST_TMPDIR
	mkfifo "$d/fifo"
	bg first pglock --once "$1" sh -c 'echo first >>"$0/log"; read x <"$0/fifo"' "$d"
	wait_until 10 held "$(sha_id "$1")"
	wait_until 10 test -s "$d/log"
}

# finish_first KEY: the first run succeeds, and its success is recorded.
finish_first() {
	fifo_go "$d/fifo"
	bgwait first 20
	[ "$bg_status" -eq 0 ]
	[ "$(record "$1")" = "0 -" ]
}

@test "--once behind a run still going: -w exits 1 without running; after its success -n exits 0 without running" {
	first_run busy-k
	run -1 --separate-stderr timeout 20 "$PGLOCK" -w "$w" --once busy-k sh -c 'echo w >>"$0/log"' "$d"
	assert_output ''
	[[ "$stderr" =~ ^"pglock: busy-k: timed out after ${w}s waiting for the lock, held by server pid "[0-9]+" (pglock: busy-k, local, user "[^,]+", for "[0-9]+"s)"$ ]]
	[ "$(sql "SELECT count(*) FROM pglock_runs WHERE key = 'busy-k'")" -eq 0 ]
	finish_first busy-k
	run -0 --separate-stderr timeout 20 "$PGLOCK" -n --once busy-k sh -c 'echo n >>"$0/log"' "$d"
	assert_output ''
	assert_equal "$stderr" ''
	run -0 cat "$d/log"
	assert_output first
}

@test "--once with -E 0 behind a run still going: -n and -w exit 0 without running, and the step is not done" {
	first_run busyz-k
	for wait in -n "-w $w"; do
		# shellcheck disable=SC2086
		run -0 --separate-stderr timeout 20 "$PGLOCK" -q $wait -E 0 --once busyz-k sh -c 'echo z >>"$0/log"' "$d"
		assert_output ''
		assert_equal "$stderr" ''
	done
	# Not -q: said held by the first run, not in a lock-delay (a run that
	# took the lock for held would find the first run's witness).
	run -0 --separate-stderr timeout 20 "$PGLOCK" -n -E 0 --once busyz-k sh -c 'echo z >>"$0/log"' "$d"
	assert_output ''
	[[ "$stderr" =~ ^"pglock: busyz-k: the lock is held by server pid "[0-9]+" (pglock: busyz-k, " ]]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[ "$(sql "SELECT count(*) FROM pglock_runs WHERE key = 'busyz-k'")" -eq 0 ]
	finish_first busyz-k
	run -0 cat "$d/log"
	assert_output first
}

# eight SCOPE-ARGS...: 8 runs at once of a job that takes 0.5 s, all
# blocking; exactly one runs it, all exit 0.
eight() {
	local key=$1 i
	shift
	log=$BATS_TEST_TMPDIR/$key.log
	for i in 1 2 3 4 5 6 7 8; do
		bg "$key$i" pglock "$@" --once-per 1000d "$key" sh -c 'echo run >>"$0"; sleep 0.5' "$log"
	done
	for i in 1 2 3 4 5 6 7 8; do
		bgwait "$key$i" 30
		[ "$bg_status" -eq 0 ] || { cat "$BATS_TEST_TMPDIR/$key$i.err"; false; }
	done
	[ "$(runs "$log")" -eq 1 ]
}

@test "8 concurrent blocking runs: one run, all exit 0" {
	eight eight-k
}

@test "8 concurrent blocking runs holding the lock in a transaction: one run, all exit 0" {
	eight eight-x --scope transaction
	[ "$(record eight-x)" = "$(slot_code 86400000000) -" ]
}

@test "8 concurrent blocking runs through PgBouncer: one run, all exit 0" {
	start_pgbouncer transaction
	eight eight-p -h 127.0.0.1 -p "$PGB_PORT"
	stop_pgbouncer
}

@test "a failed run consumes nothing: it is recorded as failed, and the next run in the slot runs" {
	log=$BATS_TEST_TMPDIR/log
	run -3 pglock --once-per 1000d fail-k sh -c 'echo run >>"$0"; exit 3' "$log"
	[ "$(record fail-k)" = "- 3" ]
	run -0 pglock --once-per 1000d fail-k sh -c 'echo run >>"$0"' "$log"
	run -0 pglock --once-per 1000d fail-k sh -c 'echo run >>"$0"' "$log"
	[ "$(runs "$log")" -eq 2 ]
	[[ "$(record fail-k)" =~ ^[0-9]+\ 3$ ]]
}

@test "through PgBouncer, a failed run is recorded in the lock's transaction and consumes nothing" {
	start_pgbouncer transaction
	log=$BATS_TEST_TMPDIR/log
	run -4 pglock -h 127.0.0.1 -p "$PGB_PORT" --once pfail-k sh -c 'echo run >>"$0"; exit 4' "$log"
	[ "$(record pfail-k)" = "- 4" ]
	run -0 pglock -h 127.0.0.1 -p "$PGB_PORT" --once pfail-k sh -c 'echo run >>"$0"' "$log"
	run -0 pglock -h 127.0.0.1 -p "$PGB_PORT" --once pfail-k sh -c 'echo run >>"$0"' "$log"
	[ "$(runs "$log")" -eq 2 ]
	[ "$(record pfail-k)" = "0 4" ]
	stop_pgbouncer
}

@test "--once: waiters return 0 only after the first run finished, without running" {
	d=$BATS_TEST_TMPDIR
	mkfifo "$d/fifo"
	bg first pglock --once once-k sh -c 'echo run >>"$0/log"; read x <"$0/fifo"; echo done >"$0/done"' "$d"
	wait_until 10 held "$(sha_id once-k)"
	for i in 1 2 3; do
		bg "w$i" bash -c '"$PGLOCK" --once once-k sh -c "echo run >>\"\$0/log\"" "$1"; rc=$?; [ -e "$1/done" ] && echo "after $rc"' w "$d"
	done
	wait_until 10 waiting "$(sha_id once-k)" 3
	fifo_go "$d/fifo"
	bgwait first 20
	[ "$bg_status" -eq 0 ]
	for i in 1 2 3; do
		bgwait "w$i" 20
		[ "$(cat "$d/w$i.out")" = "after 0" ]
	done
	[ "$(runs "$d/log")" -eq 1 ]
}

@test "--forget: exit 0 and --once runs again; 1 when there is no record" {
	log=$BATS_TEST_TMPDIR/log
	run -0 pglock --once forget-k sh -c 'echo run >>"$0"' "$log"
	run -0 pglock --once forget-k sh -c 'echo run >>"$0"' "$log"
	[ "$(runs "$log")" -eq 1 ]
	run -0 --separate-stderr pglock --forget forget-k
	assert_output ''
	run -0 pglock --once forget-k sh -c 'echo run >>"$0"' "$log"
	[ "$(runs "$log")" -eq 2 ]
	run -0 pglock --forget forget-k
	run -1 --separate-stderr pglock --forget forget-k
	assert_equal "$stderr" "pglock: forget-k: no record to forget"
}

# killed_then_run KEY ARGS...: a --once run of KEY (with ARGS) killed by
# SIGKILL while it runs is not recorded and leaves no lock; the next runs.
killed_then_run() {
	local key=$1 log=$BATS_TEST_TMPDIR/$1.log
	shift
	bg runner pglock "$@" --once "$key" sh -c 'echo run >>"$0"; sleep 60' "$log"
	wait_until 10 held "$(sha_id "$key")"
	wait_until 10 test -s "$log"
	kill -KILL "$(bgpid runner)"
	wait_until 10 free "$(sha_id "$key")"
	[ "$(sql "SELECT count(*) FROM pglock_runs WHERE key = '$key'")" -eq 0 ]
	run -0 timeout 20 "$PGLOCK" "$@" --once "$key" sh -c 'echo run >>"$0"' "$log"
	[ "$(runs "$log")" -eq 2 ]
	[ "$(record "$key")" = "0 -" ]
}

@test "a SIGKILLed run is not recorded and leaves no lock: the next run runs" {
	for scope in session transaction; do
		killed_then_run "kill-$scope" --scope "$scope"
	done
}

@test "through PgBouncer, a SIGKILLed run is not recorded and leaves no lock: the next run runs" {
	start_pgbouncer transaction
	killed_then_run pkill-k -h 127.0.0.1 -p "$PGB_PORT"
	stop_pgbouncer
}

@test "--once-per: the next slot of the server's clock runs again" {
	log=$BATS_TEST_TMPDIR/log
	slot() { psql -XAtc "SELECT floor(extract(epoch FROM now()) / 10)::bigint"; }
	# Two runs in one 10 s slot of the server's clock (tried again if a
	# slow machine let the slot turn between them): the second skips.
	for try in 1 2 3; do
		s0=$(slot)
		run -0 pglock --once-per 10s slot-k sh -c 'echo run >>"$0"' "$log"
		run -0 --separate-stderr pglock -v --once-per 10s slot-k sh -c 'echo run >>"$0"' "$log"
		[ "$(slot)" = "$s0" ] && break
		run -0 pglock --forget slot-k
		rm -f "$log"
	done
	[[ "$stderr" == *"pglock: slot-k: succeeded in this slot already (at "*" on $(hostname)): not run again"* ]]
	[ "$(runs "$log")" -eq 1 ]
	wait_until 15 bash -c "[ \"\$(psql -XAtc 'SELECT floor(extract(epoch FROM now()) / 10)::bigint')\" != $s0 ]"
	run -0 pglock --once-per 10s slot-k sh -c 'echo run >>"$0"' "$log"
	[ "$(runs "$log")" -eq 2 ]
}

@test "--status KEY shows the last success and failure, under a header of their own; --json as objects; --ok-within is a dead-man check" {
	run -0 pglock --record st-k sh -c 'sleep 0.2'
	run -5 pglock --record st-k sh -c 'exit 5'
	host=$(hostname)
	run -1 --separate-stderr pglock --status st-k
	assert_line --index 0 "id	mode	state	pid	user	client	application_name	since	scope	key"
	# The record's lines under a header of their own.
	assert_line --index 1 "key	record	at	host	values"
	assert_line --index 2 --regexp "^st-k	last_ok	[0-9-]+T[0-9:]+[+-][0-9]{2}:[0-9]{2}	$host	[0-9]+\.[0-9]{3}$"
	assert_line --index 3 --regexp "^st-k	last_failed	[0-9-]+T[0-9:]+[+-][0-9]{2}:[0-9]{2}	$host	5	1$"
	run -1 --separate-stderr pglock --status --json st-k
	"$PYTHON" -c '
import json, sys
runs = json.loads(sys.argv[1])["runs"]
assert len(runs) == 1 and runs[0]["key"] == "st-k", runs
ok, failed = runs[0]["last_ok"], runs[0]["last_failed"]
assert sorted(ok) == ["at", "host", "seconds"] and ok["host"] == sys.argv[2] and 0.2 <= ok["seconds"] < 5, ok
assert sorted(failed) == ["at", "host", "status"] and failed["status"] == 5, failed' "$output" "$host"
	run -0 pglock --status --ok-within 1h st-k
	run -1 pglock --status --ok-within 0.001s st-k
	run -1 pglock --status --ok-within 1d never-k
	run -1 --separate-stderr pglock --status --json never-k
	[[ "$output" == *'"runs": ['*'{"key": "never-k", "last_ok": null, "last_failed": null, "failures": 0, "paused": null}'* ]]
}

@test "--status --ok-within: one line on stdout when KEY succeeded within it (nothing with -q); else one line on stderr: never, or when and that it is older" {
	run -0 pglock --record ow-k true
	host=$(hostname)
	run -0 --separate-stderr pglock --status --ok-within 1h ow-k
	[[ "$output" =~ ^"ow-k: last succeeded at "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}[+-][0-9]{2}:[0-9]{2}" on $host, "[0-9]+"s ago (within 1h)"$ ]]
	[ "$stderr" = "" ]
	run -0 --separate-stderr pglock -q --status --ok-within 1h ow-k
	[ "$output" = "" ]
	[ "$stderr" = "" ]
	run -1 --separate-stderr pglock --status --ok-within 1d ow-never
	[ "$output" = "" ]
	[ "$stderr" = "pglock: ow-never: never succeeded (--ok-within 1d)" ]
	sql "UPDATE pglock_runs SET ok_at = ok_at - interval '2 hours 3 minutes' WHERE key = 'ow-k'"
	run -1 --separate-stderr pglock --status --ok-within 90m ow-k
	[ "$output" = "" ]
	[[ "$stderr" =~ ^"pglock: ow-k: last succeeded at "[0-9T:+-]+" on $host, 2h3m ago: longer ago than 1h30m"$ ]]
	run -1 --separate-stderr pglock -q --status --ok-within 90m ow-k
	[ "$output" = "" ]
	[ "$stderr" = "" ]
}

@test "--runs-table in a new schema, 8 first users at once: one run, all exit 0; --status --runs-table reads it" {
	sql "CREATE SCHEMA s_runs"
	CLEANUP="psql -XAtqc 'DROP SCHEMA s_runs CASCADE'"
	eight rt-k --runs-table s_runs.t
	# A transaction's lock creates the table before the lock: the 8
	# create it at once.
	eight rt-x --scope transaction --runs-table s_runs.x
	[ "$(sql "SELECT key || ' ' || (ok_slot IS NOT NULL) || ' ' || (failed_at IS NULL) FROM s_runs.t")" = "rt-k true true" ]
	[ "$(sql "SELECT key || ' ' || (ok_slot IS NOT NULL) || ' ' || (failed_at IS NULL) FROM s_runs.x")" = "rt-x true true" ]
	run -1 --separate-stderr pglock --status --runs-table s_runs.t rt-k
	[ "${#lines[@]}" -eq 3 ]
	assert_line --index 0 "id	mode	state	pid	user	client	application_name	since	scope	key"
	assert_line --index 2 --regexp "^rt-k	last_ok	[0-9-]+T[0-9:]+[+-][0-9]{2}:[0-9]{2}	$(hostname)	[0-9]+\.[0-9]{3}$"
}

@test "a role that may not create the runs table gets one line naming the statements: 69" {
	sql "DROP ROLE IF EXISTS pglock_o_nocreate; CREATE ROLE pglock_o_nocreate LOGIN"
	run -69 --separate-stderr pglock -U pglock_o_nocreate --runs-table pglock_o_private --once priv-k touch "$BATS_TEST_TMPDIR/ran"
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" == "pglock: priv-k: table \"pglock_o_private\" does not exist and this role may not create it; have an administrator run: CREATE TABLE \"pglock_o_private\" (key text PRIMARY KEY, "*"; GRANT SELECT, INSERT, UPDATE, DELETE ON \"pglock_o_private\" TO \"pglock_o_nocreate\"" ]]
}

@test "--once and --once-per refuse -s, --slots, -F and --hold; --ok-within needs --status, one KEY and a unit: 64" {
	run -64 pglock --once -s k true
	run -64 pglock --once-per 1h --slots 2 k true
	run -64 pglock --once -F k true
	run -64 pglock --once --hold k
	run -64 pglock --record --version-counter t true
	run -64 pglock --ok-within 1h k true
	run -64 pglock --status --ok-within 1h a b
	run -64 --separate-stderr pglock --once-per 0 k true
	assert_equal "$stderr" "pglock: --once-per: must be more than 0 (see pglock --help)"
	run -64 --separate-stderr pglock --once-per 5x k true
	assert_equal "$stderr" "pglock: --once-per: '5x' is not a duration (numbers with s, m, h, d or w: 90s, 5m, 2h30m, 1w) (see pglock --help)"
	run -64 --separate-stderr pglock --status --ok-within 26 k
	assert_equal "$stderr" "pglock: --ok-within: '26' needs a unit: 26h, 26m or 26s (see pglock --help)"
	run -64 pglock --forget
	run -64 pglock --forget k true
}

@test "an outcome that cannot be recorded: a success is 75 and counts as not done; a failure keeps its status, in a transaction too" {
	run -0 pglock --record rw-k true
	sql "DROP ROLE IF EXISTS pglock_o_ro; CREATE ROLE pglock_o_ro LOGIN; GRANT SELECT ON pglock_runs TO pglock_o_ro"
	for scope in session transaction; do
		run -75 --separate-stderr pglock -U pglock_o_ro --scope "$scope" --once ro-k true
		grants='a role that records runs needs: GRANT SELECT, INSERT, UPDATE, DELETE ON "pglock_runs" TO "pglock_o_ro"; GRANT SELECT, INSERT, DELETE ON "pglock_runs_history" TO "pglock_o_ro" (or --keep-history 0)'
		assert_equal "$stderr" "pglock: ro-k: the command succeeded, but its success could not be recorded (permission denied for table pglock_runs; $grants): it counts as not done"
		run -3 --separate-stderr pglock -U pglock_o_ro --scope "$scope" --once ro-k sh -c 'exit 3'
		assert_equal "$stderr" "pglock: ro-k: the command's failure could not be recorded (permission denied for table pglock_runs; $grants)"
	done
	[ -z "$(record ro-k)" ]
	free "$(sha_id ro-k)"
}

@test "the record is the lock's: another namespace or scheme for one KEY text is another job; --id 42 and 042 are one" {
	log=$BATS_TEST_TMPDIR/log
	run -0 pglock --namespace 1 --once sch-k sh -c 'echo ns1 >>"$0"' "$log"
	run -0 pglock --namespace 2 --once sch-k sh -c 'echo ns2 >>"$0"' "$log"
	run -0 pglock --hash hashtext --once sch-k sh -c 'echo hashtext >>"$0"' "$log"
	run -0 pglock --once sch-k sh -c 'echo sha256 >>"$0"' "$log"
	run -0 pglock --namespace 1 --once sch-k sh -c 'echo ns1-again >>"$0"' "$log"
	run -0 pglock --id --once 4242 sh -c 'echo id >>"$0"' "$log"
	run -0 pglock --id --once 04242 sh -c 'echo id-again >>"$0"' "$log"
	run -0 cat "$log"
	assert_output "ns1
ns2
hashtext
sha256
id"
	run -0 pglock --id --forget 04242
	[ "$(sql "SELECT string_agg(key, ' ' ORDER BY key) FROM pglock_runs WHERE key LIKE '%sch-k'")" = "hashtext:sch-k namespace 1:sch-k namespace 2:sch-k sch-k" ]
}

@test "a default KEY that reads like another scheme's record ('id:4343', 'namespace 3:k') is still its own job" {
	log=$BATS_TEST_TMPDIR/log
	run -0 pglock --once 'id:4343' sh -c 'echo text-id >>"$0"' "$log"
	run -0 pglock --id --once 4343 sh -c 'echo id >>"$0"' "$log"
	run -0 pglock --once 'namespace 3:lk-k' sh -c 'echo text-ns >>"$0"' "$log"
	run -0 pglock --namespace 3 --once lk-k sh -c 'echo ns >>"$0"' "$log"
	run -0 pglock --once 'hashtext:lk-k' sh -c 'echo text-hashtext >>"$0"' "$log"
	run -0 pglock --hash hashtext --once lk-k sh -c 'echo hashtext >>"$0"' "$log"
	run -0 pglock --once ':id:4343' sh -c 'echo colon >>"$0"' "$log"
	run -0 cat "$log"
	assert_output "text-id
id
text-ns
ns
text-hashtext
hashtext
colon"
	# --forget and --status find each job's own record, and no other.
	run -0 pglock --id --forget 4343
	run -0 pglock --once 'id:4343' sh -c 'echo text-id-again >>"$0"' "$log"
	[ "$(runs "$log")" -eq 7 ]
	run -1 --separate-stderr pglock --status --id 4343
	refute_output --partial last_ok
	[ "$(sql "SELECT string_agg(key, ' ' ORDER BY key) FROM pglock_runs WHERE key LIKE '%4343' OR key LIKE '%lk-k'")" = "::id:4343 :hashtext:lk-k :id:4343 :namespace 3:lk-k hashtext:lk-k namespace 3:lk-k" ]
}

@test "a KEY too long for the record's index is refused before anything runs: 64; a plain run and --status still take it" {
	long=$(head -c 3000 /dev/zero | tr '\0' 'k')
	for opt in --once --record "--once-per 1h"; do
		# shellcheck disable=SC2086
		run -64 --separate-stderr pglock $opt "$long" sh -c 'echo ran'
		[ -z "$output" ]
		[ "$stderr" = "pglock: KEY's record name is 3000 bytes: a record of runs takes at most 2600 (see pglock --help)" ]
	done
	# The name counts, prefix and all.
	run -64 --separate-stderr pglock --namespace 7 --once "${long:0:2590}" true
	[ "$stderr" = "pglock: KEY's record name is 2602 bytes: a record of runs takes at most 2600 (see pglock --help)" ]
	run -0 --separate-stderr pglock "$long" sh -c 'echo ran'
	assert_output ran
	run -1 --separate-stderr pglock --status "$long"
	# 2600 bytes that do not compress fit, and are recorded.
	fits=$(head -c 2600 /dev/urandom | od -An -tx1 | tr -d ' \n' | head -c 2600)
	run -0 --separate-stderr pglock --once "$fits" sh -c 'echo ran'
	assert_output ran
	run -0 --separate-stderr pglock --once "$fits" sh -c 'echo ran'
	assert_output ''
}

# sync_never: the commits of role pglock_o_sync wait for a synchronous
# standby that never comes, as when the only standby is down (every other
# session commits locally); teardown undoes it.
sync_never() {
	sql "DROP ROLE IF EXISTS pglock_o_sync; CREATE ROLE pglock_o_sync LOGIN;
	     GRANT SELECT, INSERT, UPDATE, DELETE ON pglock_runs TO pglock_o_sync;
	     GRANT SELECT, INSERT, DELETE ON pglock_runs_history TO pglock_o_sync;
	     ALTER ROLE pglock_o_sync SET synchronous_commit = on"
	CLEANUP="psql -XAtq -c 'ALTER SYSTEM RESET synchronous_standby_names' -c 'ALTER SYSTEM RESET synchronous_commit' -c 'SELECT pg_reload_conf()'"
	sql "ALTER SYSTEM SET synchronous_commit = local"
	sql "ALTER SYSTEM SET synchronous_standby_names = 'pglock_nobody'"
	sql "SELECT pg_reload_conf()" >/dev/null
	wait_until 10 bash -c '[ "$(psql -XAtc "SHOW synchronous_standby_names")" = pglock_nobody ]'
}

sync_waiting() {
	[ -n "$(sql "SELECT pid FROM pg_stat_activity WHERE usename = 'pglock_o_sync' AND wait_event = 'SyncRep'")" ]
}

@test "a success whose record landed but whose answer was lost (a synchronous standby's wait, then the session ended): exit 0, and the next run skips" {
	run -0 pglock --record sync-init true
	# A success before: the lost one is found as another, not as any.
	run -0 pglock --record sync-sessionrecord true
	sync_never
	log=$BATS_TEST_TMPDIR/log
	for run in session:--once transaction:--once session:--record; do
		scope=${run%:*} opt=${run#*:} key=sync-${run//[:-]/}
		bg "$key" pglock -U pglock_o_sync --scope "$scope" "$opt" "$key" sh -c 'echo "$0" >>"$1"' "$key" "$log"
		# Committed here, not yet answered: the server ends the session.
		wait_until 20 sync_waiting
		sql "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'pglock_o_sync' AND wait_event = 'SyncRep'" >/dev/null
		bgwait "$key" 30
		[ "$bg_status" -eq 0 ] || { cat "$BATS_TEST_TMPDIR/$key.err"; false; }
		run -0 cat "$BATS_TEST_TMPDIR/$key.err"
		[[ "$output" == "pglock: $key: the answer to the success's record was lost ("*"); a new session finds it recorded" ]]
		[[ "$(record "$key")" == [0-]" -" ]]
	done
	for key in sync-sessiononce sync-transactiononce; do
		run -0 --separate-stderr timeout 20 "$PGLOCK" --once "$key" sh -c 'echo again >>"$0"' "$log"
	done
	run -0 cat "$log"
	assert_output "sync-sessiononce
sync-transactiononce
sync-sessionrecord"
}

@test "a success whose record is not answered (its server process frozen) and not found is an unknown outcome, not 'not done': 75; it lands later, and the next run skips" {
	log=$BATS_TEST_TMPDIR/log
	run -0 pglock --record freeze-init true
	CLEANUP="[ -s '$log.pid' ] && kill -CONT \$(cat '$log.pid')"
	# The command's last act freezes the session's server process: the
	# record is sent to it and not answered within 10 s. A --check-interval
	# of 10 s keeps the server from ending the session meanwhile.
	run -75 --separate-stderr timeout 60 "$PGLOCK" --check-interval 10 --once freeze-k sh -c 'echo run >>"$0"; echo "$PGLOCK_BACKEND_PID" >"$0.pid"; kill -STOP "$PGLOCK_BACKEND_PID"' "$log"
	assert_equal "$stderr" "pglock: freeze-k: the command succeeded, but the answer to its record was lost (the server did not answer within 10 s) and a new session does not find it: the outcome is unknown (the record may still land)"
	kill -CONT "$(cat "$log.pid")"
	wait_until 20 free "$(sha_id freeze-k)"
	[ "$(record freeze-k)" = "0 -" ]
	run -0 timeout 20 "$PGLOCK" --once freeze-k sh -c 'echo run >>"$0"' "$log"
	[ "$(runs "$log")" -eq 1 ]
	# --record, over an earlier success: that one is not taken for this.
	run -0 pglock --record freeze-r true
	: >"$log.pid"
	run -75 --separate-stderr timeout 60 "$PGLOCK" --check-interval 10 --record freeze-r sh -c 'echo "$PGLOCK_BACKEND_PID" >"$0.pid"; kill -STOP "$PGLOCK_BACKEND_PID"' "$log"
	assert_equal "$stderr" "pglock: freeze-r: the command succeeded, but the answer to its record was lost (the server did not answer within 10 s) and a new session does not find it: the outcome is unknown (the record may still land)"
	kill -CONT "$(cat "$log.pid")"
}

@test "a lost answer to a -s --record success is not taken as found from another holder's success meanwhile: 75" {
	log=$BATS_TEST_TMPDIR/log
	run -0 pglock --record shared-init true
	CLEANUP="[ -s '$log.pid' ] && kill -CONT \$(cat '$log.pid')"
	# A's command waits for B's success, then freezes A's server process:
	# A's record is sent to it and not answered within 10 s.
	bg a pglock -s --check-interval 10 --record shared-r sh -c 'touch "$0.a"; until [ -e "$0.b" ]; do sleep 0.1; done; echo "$PGLOCK_BACKEND_PID" >"$0.pid"; kill -STOP "$PGLOCK_BACKEND_PID"' "$log"
	# A's command runs: A read the record under its lock, before B's
	# success (run alone, on a server just started, after the start's
	# lock-delay of A's lease, 40 s).
	wait_until 60 test -e "$log.a"
	run -0 pglock -s --record shared-r sleep 0.5
	touch "$log.b"
	bgwait a 40
	[ "$bg_status" -eq 75 ]
	run -0 cat "$BATS_TEST_TMPDIR/a.err"
	assert_output "pglock: shared-r: the command succeeded, but the answer to its record was lost (the server did not answer within 10 s) and a new session does not find it: the outcome is unknown (the record may still land)"
	kill -CONT "$(cat "$log.pid")"
}

@test "-w bounds the record's read before the lock: a runs table locked past it is 69, said as the read's, and nothing runs" {
	run -0 pglock --record wread-init true
	bg locker psql -XAtqc "BEGIN; LOCK TABLE pglock_runs; SELECT pg_sleep(8); COMMIT"
	wait_until 10 bash -c "[ -n \"\$(psql -XAtc \"SELECT 1 FROM pg_locks WHERE relation = 'pglock_runs'::regclass AND mode = 'AccessExclusiveLock' AND granted\")\" ]"
	t0=$SECONDS
	run -69 --separate-stderr timeout 20 "$PGLOCK" -w 1 --once-per 1h wread-k touch "$BATS_TEST_TMPDIR/ran"
	assert_equal "$stderr" "pglock: wread-k: the server did not answer within 1s"
	# Given up at -w's end (and a second), not the table's 8 s.
	[ $((SECONDS - t0)) -lt 6 ]
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	# The read was cancelled: no session of pglock's waits on the table.
	wait_until 5 bash -c "[ -z \"\$(psql -XAtc \"SELECT 1 FROM pg_locks WHERE relation = 'pglock_runs'::regclass AND NOT granted\")\" ]"
}

@test "-n behind a holder while the runs table is locked: the conflict status at once, the record's read queued behind the lock cancelled, not waited for" {
	run -0 pglock --record nbusy-init true
	bg holder pglock nbusy-k sleep 30
	wait_until 10 held "$(sha_id nbusy-k)"
	bg locker psql -XAtqc "BEGIN; LOCK TABLE pglock_runs; SELECT pg_sleep(8); COMMIT"
	wait_until 10 bash -c "[ -n \"\$(psql -XAtc \"SELECT 1 FROM pg_locks WHERE relation = 'pglock_runs'::regclass AND mode = 'AccessExclusiveLock' AND granted\")\" ]"
	t0=$SECONDS
	run -1 --separate-stderr timeout 20 "$PGLOCK" -n --record nbusy-k touch "$BATS_TEST_TMPDIR/ran"
	[[ "$stderr" == "pglock: nbusy-k: the lock is held by server pid "* ]]
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	# Not the 10 s a read waited for -n's bound (then 69).
	[ $((SECONDS - t0)) -lt 6 ]
	# Nothing of pglock's waits on the table.
	wait_until 5 bash -c "[ -z \"\$(psql -XAtc \"SELECT 1 FROM pg_locks WHERE relation = 'pglock_runs'::regclass AND NOT granted\")\" ]"
}

# The issue's 1d then 86401s share slot 20418 only after 05:40 UTC; these
# share their slot number (20) until mid-2027, far from any boundary.
@test "a slot is its start and its length: --once-per 1000d, then 24001h, then 100000d (slot 0, as --once) each run again, then skip" {
	log=$BATS_TEST_TMPDIR/log
	run -0 pglock --once len-k sh -c 'echo once >>"$0"' "$log"
	for per in 1000d:86400000000 24001h:86403600000 100000d:8640000000000; do
		ms=${per#*:} per=${per%:*}
		run -0 timeout 20 "$PGLOCK" --once-per "$per" len-k sh -c 'echo "$0" >>"$1"' "$per" "$log"
		[ "$(record len-k)" = "$(slot_code "$ms") -" ]
		run -0 timeout 20 "$PGLOCK" --once-per "$per" len-k sh -c 'echo "$0 again" >>"$1"' "$per" "$log"
	done
	run -0 timeout 20 "$PGLOCK" --once len-k sh -c 'echo once >>"$0"' "$log"
	run -0 cat "$log"
	assert_output "once
1000d
24001h
100000d
once"
}

@test "a record an earlier build wrote (the slot's number, not its length) still counts: --once and --once-per skip" {
	run -0 pglock --record old-init true
	sql "INSERT INTO pglock_runs (key, lock_id, ok_at, ok_host, ok_seconds, ok_slot) VALUES
	     ('old-once', '1', now(), 'h', 1, 0),
	     ('old-per', '1', now(), 'h', 1, floor(extract(epoch FROM now()) / 86400000)::bigint)"
	run -0 --separate-stderr pglock --once old-once touch "$BATS_TEST_TMPDIR/ran"
	run -0 --separate-stderr pglock --once-per 1000d old-per touch "$BATS_TEST_TMPDIR/ran"
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "--status --json: an error midway (a runs table without its columns) prints nothing on standard output: 69" {
	sql "DROP TABLE IF EXISTS pglock_o_bare; CREATE TABLE pglock_o_bare (key text PRIMARY KEY)"
	bg holder pglock bare-k sleep 60
	wait_until 10 held "$(sha_id bare-k)"
	for json in --json ''; do
		# shellcheck disable=SC2086
		run -69 --separate-stderr timeout 20 "$PGLOCK" --status $json --runs-table pglock_o_bare bare-k
		assert_output ''
		assert_equal "$stderr" "pglock: --status: column r.ok_at does not exist"
	done
}

@test "--status --json: NaN and Infinity in a record (seconds, time) are null, and the document parses" {
	run -0 pglock --record nan-k true
	run -0 pglock --record inf-k true
	sql "UPDATE pglock_runs SET ok_seconds = 'NaN' WHERE key = 'nan-k'"
	sql "UPDATE pglock_runs SET ok_seconds = '-Infinity', ok_at = 'infinity' WHERE key = 'inf-k'"
	run -1 --separate-stderr pglock --status --json nan-k inf-k
	"$PYTHON" -c '
import json, sys
def refuse(c):
    raise ValueError("not JSON: " + c)
runs = json.loads(sys.argv[1], parse_constant=refuse)["runs"]
assert runs[0]["last_ok"]["seconds"] is None and runs[0]["last_ok"]["at"] is not None, runs
assert runs[1]["last_ok"]["seconds"] is None and runs[1]["last_ok"]["at"] is None, runs' "$output"
}

@test "--status --json: a record this role may not read says \"hidden\": true, not null (never)" {
	run -0 pglock --record hidden-k true
	sql "DROP ROLE IF EXISTS pglock_o_blind; CREATE ROLE pglock_o_blind LOGIN"
	run -1 --separate-stderr pglock -U pglock_o_blind --status --json hidden-k
	"$PYTHON" -c '
import json, sys
runs = json.loads(sys.argv[1])["runs"]
assert runs == [{"key": "hidden-k", "hidden": True}], runs' "$output"
	assert_equal "$stderr" "pglock: --status: this role may not read the record of runs (permission denied for table pglock_runs): none is shown"
}

@test "a KEY that is not UTF-8 cannot be recorded: --once, --once-per and --record refuse it before COMMAND runs: 64; --status and --forget find no record" {
	for opt in --once --record "--once-per 1h"; do
		# shellcheck disable=SC2086
		run -64 --separate-stderr timeout 20 "$PGLOCK" $opt $'a\xffb' touch "$BATS_TEST_TMPDIR/ran"
		[ ! -e "$BATS_TEST_TMPDIR/ran" ]
		assert_output ''
		assert_equal "$stderr" 'pglock: a\xffb: not valid UTF-8, which a record of runs (--once, --once-per, --record) needs (see pglock --help)'
	done
	run -0 timeout 20 "$PGLOCK" $'a\xffb' touch "$BATS_TEST_TMPDIR/ran"
	[ -e "$BATS_TEST_TMPDIR/ran" ]
	run -1 --separate-stderr pglock --status $'a\xffb'
	assert_output "id	mode	state	pid	user	client	application_name	since	scope	key"
	run -1 --separate-stderr pglock --forget $'a\xffb'
	assert_equal "$stderr" 'pglock: a\xffb: no record to forget'
}
