#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# History: every run --record, --once and --once-per record is a row of its
# key's history (pglock_runs_history), the last --keep-history of them,
# written in the release's own round trip (tests/native.bats counts them),
# and read back by --status --history.

load helper

# KEY's history as the table has it, oldest first: "node status" lines.
rows() {
	sql "SELECT node || ' ' || status FROM pglock_runs_history WHERE key = '$1' ORDER BY id"
}

@test "each recorded run is a row, newest first in --status --history: its node, status (128+N for a signal), duration and times by the server's clock, and its slot" {
	run -0 timeout 20 "$PGLOCK" --node web-1 --record h-k sh -c 'sleep 0.2'
	run -3 timeout 20 "$PGLOCK" --node web-2 --record h-k sh -c 'exit 3'
	run -143 timeout 20 "$PGLOCK" --node web-3 --record h-k sh -c 'kill -TERM $$'
	assert_equal "$(rows h-k)" "$(printf 'web-1 0\nweb-2 3\nweb-3 143')"
	# Ended by the server's clock; started is that less the duration.
	[ "$(sql "SELECT bool_and(ended <= now() AND ended > now() - interval '1 minute' AND started = ended - seconds * interval '1 second') FROM pglock_runs_history WHERE key = 'h-k'")" = t ]
	[ "$(sql "SELECT seconds >= 0.2 FROM pglock_runs_history WHERE key = 'h-k' AND node = 'web-1'")" = t ]
	run -0 --separate-stderr timeout 20 "$PGLOCK" --status --history h-k
	assert_equal "$stderr" ""
	[ "${#lines[@]}" -eq 4 ]
	assert_line --index 0 "key	ended	node	seconds	status	output"
	assert_line --index 1 --regexp "^h-k	[0-9-]+T[0-9:]+[+-][0-9]{2}:[0-9]{2}	web-3	[0-9]+\.[0-9]{3}	143	-$"
	assert_line --index 2 --regexp "^h-k	.*	web-2	[0-9.]+	3	-$"
	assert_line --index 3 --regexp "^h-k	.*	web-1	[0-9]+\.[0-9]{3}	0	-$"
	# --json: the whole rows; a --once-per run keeps its slot.
	run -0 timeout 20 "$PGLOCK" --node web-4 --once-per 1000d hs-k true
	run -0 --separate-stderr timeout 20 "$PGLOCK" --status --history --json h-k hs-k
	"$PYTHON" -c '
import json, sys
h = json.loads(sys.argv[1])["history"]
assert [k["key"] for k in h] == ["h-k", "hs-k"], h
runs = h[0]["runs"]
assert [(r["node"], r["status"]) for r in runs] == [("web-3", 143), ("web-2", 3), ("web-1", 0)], runs
assert all(r["slot"] is None and r["output"] is None and r["started"] <= r["ended"] for r in runs), runs
assert runs[2]["seconds"] >= 0.2, runs
s = h[1]["runs"]
assert len(s) == 1 and s[0]["node"] == "web-4" and s[0]["slot"] > 2 ** 62, s' "$output"
}

@test "a key keeps its last 50 runs, or --keep-history N: each write trims its key's oldest in the same statement; other keys keep theirs" {
	# 59 runs before, then one more: real runs, but under valgrind (slow)
	# the first alone, the rest written as pglock writes them.
	n=59
	[ -z "${PGLOCK_VG_DIR:-}" ] || n=1
	# Another key's row, older than all of b-k's: a trim leaves it.
	run -0 timeout 20 "$PGLOCK" --record other-k true
	for i in $(seq 1 "$n"); do
		run -0 timeout 20 "$PGLOCK" --node "old-$i" --record b-k true
	done
	[ "$n" -eq 59 ] || sql "INSERT INTO pglock_runs_history (key, node, started, ended, seconds, status)
	     SELECT 'b-k', 'old-' || i, now(), now(), 0, 0 FROM generate_series(2, 59) i ORDER BY i"
	run -0 timeout 20 "$PGLOCK" --node last --record b-k true
	[ "$(sql "SELECT count(*) FROM pglock_runs_history WHERE key = 'b-k'")" -eq 50 ]
	# The newest 50: the 10 oldest went (old-1 to old-10).
	[ "$(sql "SELECT count(*) FILTER (WHERE node LIKE 'old-%'), count(*) FILTER (WHERE node = 'last') FROM pglock_runs_history WHERE key = 'b-k'")" = "49|1" ]
	[ "$(sql "SELECT node FROM pglock_runs_history WHERE key = 'b-k' ORDER BY id LIMIT 1")" = old-11 ]
	[ "$(sql "SELECT count(*) FROM pglock_runs_history WHERE key = 'other-k'")" -eq 1 ]
	# A smaller bound trims to it at the next run; real runs, in order.
	for i in 1 2 3 4; do
		run -"$((i % 2))" timeout 20 "$PGLOCK" --node "n$i" --keep-history 3 --record b-k sh -c "exit $((i % 2))"
	done
	assert_equal "$(rows b-k)" "$(printf 'n2 0\nn3 1\nn4 0')"
	# 0 keeps nothing more, and leaves what is there.
	run -0 timeout 20 "$PGLOCK" --node n5 --keep-history 0 --record b-k true
	assert_equal "$(rows b-k)" "$(printf 'n2 0\nn3 1\nn4 0')"
	[ "$(sql "SELECT ok_host FROM pglock_runs WHERE key = 'b-k'")" = n5 ]
}

@test "a run whose lock was lost is in the history with 75, written on a session of its own" {
	id=$(sha_id hl-k)
	run -0 timeout 20 "$PGLOCK" --record hl-k true
	bg runner pglock --node lost-node --record hl-k sh -c 'echo $$ >"$0"; exec sleep 60' "$BATS_TEST_TMPDIR/cmd"
	wait_until 10 test -s "$BATS_TEST_TMPDIR/cmd"
	wait_until 10 held "$id"
	sql "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) = $id" >/dev/null
	bgwait runner 20
	[ "$bg_status" -eq 75 ]
	[ "$(sql "SELECT node || ' ' || status FROM pglock_runs_history WHERE key = 'hl-k' ORDER BY id DESC LIMIT 1")" = "lost-node 75" ]
	# Its record is not written: the key's next holder may be running.
	[ "$(sql "SELECT failed_at IS NULL FROM pglock_runs WHERE key = 'hl-k'")" = t ]
}

held() { [ -n "$(locks_on "$1" | grep '^t:')" ]; }

@test "a role that may not write the history gets one line naming the GRANTs, and nothing is written: not its record either" {
	run -0 timeout 20 "$PGLOCK" --record hg-k true
	sql "DROP ROLE IF EXISTS pglock_h_nohist; CREATE ROLE pglock_h_nohist LOGIN;
	     GRANT SELECT, INSERT, UPDATE, DELETE ON pglock_runs TO pglock_h_nohist;
	     GRANT SELECT ON pglock_runs_history TO pglock_h_nohist"
	before=$(sql "SELECT ok_at FROM pglock_runs WHERE key = 'hg-k'")
	run -75 --separate-stderr timeout 20 "$PGLOCK" -U pglock_h_nohist --record hg-k true
	assert_equal "$stderr" 'pglock: hg-k: the command succeeded, but its success could not be recorded (permission denied for table pglock_runs_history; a role that records runs needs: GRANT SELECT, INSERT, UPDATE, DELETE ON "pglock_runs" TO "pglock_h_nohist"; GRANT SELECT, INSERT, DELETE ON "pglock_runs_history" TO "pglock_h_nohist" (or --keep-history 0)): it counts as not done'
	[ "$(sql "SELECT ok_at FROM pglock_runs WHERE key = 'hg-k'")" = "$before" ]
	[ "$(sql "SELECT count(*) FROM pglock_runs_history WHERE key = 'hg-k'")" -eq 1 ]
	# --keep-history 0, as the line says: recorded, without a history.
	run -0 --separate-stderr timeout 20 "$PGLOCK" -U pglock_h_nohist --keep-history 0 --record hg-k true
	assert_equal "$stderr" ""
	[ "$(sql "SELECT ok_at > '$before' FROM pglock_runs WHERE key = 'hg-k'")" = t ]
}

@test "a runs table an earlier build made, whose history this role may not create: runs are recorded without one, -v says what to run" {
	old_runs_table pglock_h_old pglock_h_writer
	for scope in session transaction; do
		run -0 --separate-stderr timeout 20 "$PGLOCK" -U pglock_h_writer --scope "$scope" --runs-table pglock_h_old --record "ho-$scope" true
		assert_equal "$stderr" ""
		run -0 --separate-stderr timeout 20 "$PGLOCK" -v -U pglock_h_writer --scope "$scope" --runs-table pglock_h_old --record "ho-$scope" true
		[[ "$stderr" == *"pglock: ho-$scope: runs are recorded without a history (table \"pglock_h_old_history\" does not exist and this role may not create it; have an administrator run: CREATE TABLE \"pglock_h_old_history\" (key text NOT NULL, "*"; GRANT SELECT, INSERT, DELETE ON \"pglock_h_old_history\" TO \"pglock_h_writer\")"* ]]
		[ "$(sql "SELECT ok_at IS NOT NULL FROM pglock_h_old WHERE key = 'ho-$scope'")" = t ]
	done
	# Its owner makes it at its next run: the history begins.
	run -0 timeout 20 "$PGLOCK" --runs-table pglock_h_old --record ho-session true
	[ "$(sql "SELECT count(*) FROM pglock_h_old_history WHERE key = 'ho-session'")" -eq 1 ]
	run -1 --separate-stderr timeout 20 "$PGLOCK" --runs-table pglock_h_old --status --history ho-transaction
	assert_equal "$stderr" 'pglock: --status --history: ho-transaction: no runs in "pglock_h_old_history"'
	assert_output "key	ended	node	seconds	status	output"
}

@test "the history the first role to run makes is writable by every role the table of records lets write: a fleet's other roles go on recording" {
	sql "CREATE TABLE pglock_h_fleet (key text PRIMARY KEY, lock_id text NOT NULL,
	     ok_at timestamptz, ok_host text, ok_seconds double precision,
	     ok_slot bigint, failed_at timestamptz, failed_host text,
	     failed_status integer, failures integer)"
	sql "DROP ROLE IF EXISTS pglock_h_first; DROP ROLE IF EXISTS pglock_h_second;
	     CREATE ROLE pglock_h_first LOGIN; CREATE ROLE pglock_h_second LOGIN;
	     GRANT CREATE ON SCHEMA public TO pglock_h_first;
	     GRANT SELECT, INSERT, UPDATE, DELETE ON pglock_h_fleet TO pglock_h_first, pglock_h_second"
	CLEANUP="sql 'REVOKE CREATE ON SCHEMA public FROM pglock_h_first'"
	run -0 --separate-stderr timeout 20 "$PGLOCK" -U pglock_h_first --runs-table pglock_h_fleet --once hf-1 true
	assert_equal "$stderr" ""
	[ "$(sql "SELECT tableowner FROM pg_tables WHERE tablename = 'pglock_h_fleet_history'")" = pglock_h_first ]
	run -0 --separate-stderr timeout 20 "$PGLOCK" -U pglock_h_second --runs-table pglock_h_fleet --once hf-2 true
	assert_equal "$stderr" ""
	[ "$(sql "SELECT string_agg(key, ' ' ORDER BY id) FROM pglock_h_fleet_history")" = "hf-1 hf-2" ]
	[ "$(sql "SELECT count(*) FROM pglock_h_fleet WHERE ok_at IS NOT NULL")" -eq 2 ]
}

@test "--status --metrics: pglock_last_run_duration_seconds, the last run's whatever its outcome, for named and listed keys" {
	run -0 timeout 20 "$PGLOCK" --record m-k true
	run -3 timeout 20 "$PGLOCK" --record m-k sh -c 'sleep 0.3; exit 3'
	# The failure's 0.3 s and more, not the success's before it.
	for named in m-k ''; do
		run -0 --separate-stderr timeout 20 "$PGLOCK" --status --metrics $named
		v=$(echo "$output" | sed -n 's/^pglock_last_run_duration_seconds{key="m-k"} //p')
		[ -n "$v" ]
		awk -v v="$v" 'BEGIN { exit !(v >= 0.3) }'
	done
	# A key that never ran has none.
	run -0 --separate-stderr timeout 20 "$PGLOCK" --status --metrics never-ran-k
	refute_line --partial 'pglock_last_run_duration_seconds{key="never-ran-k"}'
}

@test "--keep-history and --history refuse what they cannot do: 64, one line" {
	for bad in -1 10001 x 1.5; do
		run -64 --separate-stderr timeout 10 "$PGLOCK" --keep-history "$bad" --record k true
		[ "${#stderr_lines[@]}" -eq 1 ]
		[[ "$stderr" == "pglock: --keep-history: "* ]]
	done
	run -64 --separate-stderr timeout 10 "$PGLOCK" --keep-history 5 k true
	assert_equal "$stderr" "pglock: --keep-history bounds what --once, --once-per and --record keep (see pglock --help)"
	run -64 --separate-stderr timeout 10 "$PGLOCK" --history k true
	assert_equal "$stderr" "pglock: --history is for --status (see pglock --help)"
	run -64 --separate-stderr timeout 10 "$PGLOCK" --status --history
	assert_equal "$stderr" "pglock: --status --history takes KEYs, and no --metrics or --ok-within (see pglock --help)"
	run -64 timeout 10 "$PGLOCK" --status --history --metrics k
	run -64 --separate-stderr timeout 10 "$PGLOCK" --record --keep-history 0 --keep-output 1k k true
	assert_equal "$stderr" "pglock: --keep-output keeps the output in the history: not with --keep-history 0 (see pglock --help)"
	run -64 --separate-stderr timeout 10 "$PGLOCK" --record --keep-output-always k true
	assert_equal "$stderr" "pglock: --keep-output-always needs --keep-output SIZE (see pglock --help)"
}

@test "--keep-output 1k: the issue's job exits 3 with all 5,000 lines on stdout, and its history row holds the last 1 KiB of its output, ending in its error" {
	run -3 --separate-stderr timeout 20 "$PGLOCK" --record --keep-output 1k ko-k sh -c 'seq 5000; echo "disk full" >&2; exit 3'
	assert_equal "$output" "$(seq 5000)"
	assert_equal "$stderr" "disk full"
	run -0 --separate-stderr timeout 20 "$PGLOCK" --status --history --json ko-k
	"$PYTHON" -c '
import json, sys
r = json.loads(sys.argv[1])["history"][0]["runs"][0]
assert r["status"] == 3, r
out = r["output"]
assert len(out.encode()) == 1024 and out.endswith("4999\n5000\ndisk full\n"), out[-40:]' "$output"
	[ "$(sql "SELECT length(output) FROM pglock_runs_history WHERE key = 'ko-k'")" -eq 1024 ]
	# The line view: the last line with anything on it.
	run -0 timeout 20 "$PGLOCK" --status --history ko-k
	assert_line --index 1 --regexp "^ko-k	.*	3	disk full$"
}

@test "--keep-output keeps a failure's output, a success's only with --keep-output-always; bytes are stored as they came and escaped when shown" {
	run -0 timeout 20 "$PGLOCK" --record --keep-output 4k ka-k sh -c 'echo fine'
	[ "$(sql "SELECT output IS NULL FROM pglock_runs_history WHERE key = 'ka-k'")" = t ]
	run -0 timeout 20 "$PGLOCK" --record --keep-output 4k --keep-output-always ka-k sh -c 'echo fine'
	[ "$(sql "SELECT encode(output, 'escape') FROM pglock_runs_history WHERE key = 'ka-k' ORDER BY id DESC LIMIT 1")" = fine ]
	# Not UTF-8, a control byte, a tab, and UTF-8 cut by the tail's start.
	run -1 timeout 20 "$PGLOCK" --record --keep-output 11 ka-k sh -c 'printf "\303\251t\303\251\n\377\001x\ty\n"; exit 1'
	[ "$(sql "SELECT encode(output, 'hex') FROM pglock_runs_history WHERE key = 'ka-k' ORDER BY id DESC LIMIT 1")" = a974c3a90aff017809790a ]
	run -0 --separate-stderr timeout 20 "$PGLOCK" --status --history ka-k
	assert_line --index 1 --regexp '^ka-k	.*	1	\\xff\\x01x\\ty$'
	run -0 --separate-stderr timeout 20 "$PGLOCK" --status --history --json ka-k
	"$PYTHON" -c '
import json, sys
r = json.loads(sys.argv[1])["history"][0]["runs"][0]
assert r["output"] == "\u00a9t\u00e9\n\u00ff\u0001x\ty\n", repr(r["output"])' "$output"
	[[ "$output" == *'"output": "\u00a9t'$'\303\251''\u000a\u00ff\u0001x\u0009y\u000a"}'* ]]
}

@test "a run whose lock was lost keeps its output's tail with its 75" {
	id=$(sha_id hlo-k)
	bg runner pglock --record --keep-output 1k hlo-k sh -c 'echo "half done"; echo $$ >"$0"; exec sleep 60' "$BATS_TEST_TMPDIR/cmd"
	wait_until 10 test -s "$BATS_TEST_TMPDIR/cmd"
	wait_until 10 held "$id"
	sql "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) = $id" >/dev/null
	bgwait runner 20
	[ "$bg_status" -eq 75 ]
	[ "$(cat "$BATS_TEST_TMPDIR/runner.out")" = "half done" ]
	[ "$(sql "SELECT status || ' ' || encode(output, 'escape') FROM pglock_runs_history WHERE key = 'hlo-k'")" = "75 half done" ]
}
