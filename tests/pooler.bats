#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Through PgBouncer as users run it: its default pool settings, no warm-up
# clients, one quiet pool. Only the pool mode changes between tests.

load helper

pooled() { pglock -h 127.0.0.1 -p "$PGB_PORT" "$@"; }

@test "two holders through a transaction pool take turns" {
	start_pgbouncer transaction
	log=$BATS_TEST_TMPDIR/log
	bg a pglock -h 127.0.0.1 -p "$PGB_PORT" turn-k sh -c 'echo "a start $PGLOCK_SCOPE" >>"$0"; sleep 2; echo "a end" >>"$0"' "$log"
	wait_until 10 held "$(sha_id turn-k)"
	wait_until 10 grep -q "a start" "$log"
	bg b pglock -h 127.0.0.1 -p "$PGB_PORT" turn-k sh -c 'echo "b start" >>"$0"; echo "b end" >>"$0"' "$log"
	bgwait a 15
	[ "$bg_status" -eq 0 ]
	bgwait b 15
	[ "$bg_status" -eq 0 ]
	run cat "$log"
	assert_output "a start transaction
a end
b start
b end"
	stop_pgbouncer
}

@test "12 workers x 5 runs through a transaction pool all succeed, never overlapping" {
	start_pgbouncer transaction
	d=$BATS_TEST_TMPDIR
	echo 0 >"$d/n"
	# Under valgrind, whose start costs a second a run, 2 runs a worker.
	runs=5
	[ -z "${PGLOCK_VG_DIR:-}" ] || runs=2
	# One bound for all of a worker's runs: a leaked lock fails in 60 s.
	for w in $(seq 12); do
		timeout 60 sh -c 'for r in $(seq "$2"); do
			"$PGLOCK" -h 127.0.0.1 -p "$1" crowd-k sh -c "
			    mkdir \"\$0/in\" || echo overlap >>\"\$0/bad\"
			    n=\$(cat \"\$0/n\"); sleep 0.01; echo \$((n + 1)) >\"\$0/n\"
			    rmdir \"\$0/in\"" "$0" || echo "exit $?" >>"$0/bad"
		done' "$d" "$PGB_PORT" "$runs" || echo "worker $?" >>"$d/bad" &
	done
	wait
	[ ! -e "$d/bad" ] || { cat "$d/bad"; false; }
	[ "$(cat "$d/n")" -eq $((12 * runs)) ]
	stop_pgbouncer
}

@test "kill -9 of a holder through a transaction pool leaves no lock on the server" {
	start_pgbouncer transaction
	id=$(sha_id k9-k)
	bg holder pglock -h 127.0.0.1 -p "$PGB_PORT" k9-k sleep 60
	wait_until 10 held "$id"
	kill -KILL "$(bgpid holder)"
	wait_until 10 free "$id"
	run -0 timeout 20 "$PGLOCK" -n k9-k true
	run -0 timeout 20 "$PGLOCK" -n -h 127.0.0.1 -p "$PGB_PORT" k9-k true
	stop_pgbouncer
}

@test "statement pooling is refused with 69 before the command runs" {
	start_pgbouncer statement
	run -69 --separate-stderr timeout 20 "$PGLOCK" -h 127.0.0.1 -p "$PGB_PORT" st-k touch "$BATS_TEST_TMPDIR/ran"
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	[ "$stderr" = "pglock: st-k: transaction blocks not allowed in statement pooling mode" ]
	free "$(sha_id st-k)"
	stop_pgbouncer
}

# session_refused HOST: --scope session through the pool at HOST (an address
# or PgBouncer's socket directory) exits 69 before COMMAND runs, --slots
# (whose proof is a round trip of its own) too, and takes nothing.
session_refused() {
	local why='pglock: sess-k: --scope session: the connection is not proven to reach the server directly (a pooler between?): use --scope auto or transaction'
	run -69 --separate-stderr timeout 20 "$PGLOCK" --scope session -h "$1" -p "$PGB_PORT" sess-k touch "$BATS_TEST_TMPDIR/ran"
	[ "$stderr" = "$why" ]
	run -69 --separate-stderr timeout 20 "$PGLOCK" --scope session --slots 2 -h "$1" -p "$PGB_PORT" sess-k touch "$BATS_TEST_TMPDIR/ran"
	[ "$stderr" = "$why" ]
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	[ "$(sql "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")" -eq 0 ]
}

@test "--scope session through a transaction pool exits 69 before the command runs" {
	start_pgbouncer transaction
	session_refused 127.0.0.1
	stop_pgbouncer
}

@test "--scope session through a statement pool exits 69 before the command runs" {
	start_pgbouncer statement
	session_refused 127.0.0.1
	stop_pgbouncer
}

@test "--scope session on PgBouncer's Unix socket exits 69 before the command runs" {
	start_pgbouncer transaction 127.0.0.1 "" unix
	session_refused "$PGB_DIR"
	stop_pgbouncer
}

@test "--scope session through a session pool: two holders never run together, whatever the proof says" {
	start_pgbouncer session
	d=$BATS_TEST_TMPDIR
	# Each holder, if it runs, is alone for a second; or exits 69.
	for h in a b c; do
		bg "$h" pglock --scope session -h 127.0.0.1 -p "$PGB_PORT" pair-k sh -c '
		    mkdir "$0/in" || echo overlap >>"$0/bad"
		    sleep 1; rmdir "$0/in"' "$d"
	done
	for h in a b c; do
		bgwait "$h" 20
		[ "$bg_status" -eq 0 ] || [ "$bg_status" -eq 69 ]
	done
	[ ! -e "$d/bad" ]
	free "$(sha_id pair-k)"
	stop_pgbouncer
}

@test "a pooled hold outlives idle_in_transaction_session_timeout = 1s and keeps no snapshot" {
	sql "DROP DATABASE IF EXISTS pglock_iit"
	sql "CREATE DATABASE pglock_iit"
	sql "ALTER DATABASE pglock_iit SET idle_in_transaction_session_timeout = '1s'"
	start_pgbouncer transaction
	# Control: the timeout is in force for an idle transaction there.
	run psql -h 127.0.0.1 -p "$PGB_PORT" -d pglock_iit -XAtq <<-'SQL'
	BEGIN;
	SELECT 1;
	\! sleep 1.5
	SELECT 2;
	SQL
	[[ "$output" == *"idle-in-transaction timeout"* ]]
	id=$(sha_id iit-k)
	# The hold lasts until the test has looked (a fixed sleep ran out
	# first under ASan and load: CI, stop 26).
	mkfifo "$BATS_TEST_TMPDIR/go"
	bg holder pglock -h 127.0.0.1 -p "$PGB_PORT" -d pglock_iit iit-k sh -c 'echo $PGLOCK_BACKEND_PID >"$0"; read x <"$1"' "$BATS_TEST_TMPDIR/pid" "$BATS_TEST_TMPDIR/go"
	wait_until 10 test -s "$BATS_TEST_TMPDIR/pid"
	wait_until 10 held "$id"
	pid=$(cat "$BATS_TEST_TMPDIR/pid")
	sleep 1.5	# past the timeout: the hold must still be there
	run -0 sql "SELECT state, backend_xmin IS NULL, backend_xid IS NULL FROM pg_stat_activity WHERE pid = $pid"
	assert_output "idle in transaction|t|t"
	held "$id"
	fifo_go "$BATS_TEST_TMPDIR/go"
	bgwait holder 10
	[ "$bg_status" -eq 0 ]
	stop_pgbouncer
	sql "DROP DATABASE pglock_iit WITH (FORCE)"
}

@test "through a session pool the lock is a transaction's too: the path is not proven direct" {
	start_pgbouncer session
	run -0 timeout 20 "$PGLOCK" -v -h 127.0.0.1 -p "$PGB_PORT" sess-k sh -c 'echo $PGLOCK_SCOPE'
	assert_line transaction
	assert_line --regexp '^pglock: sess-k: acquired after [0-9.]+s \(server pid [0-9]+, transaction lock\)$'
	run -3 timeout 20 "$PGLOCK" -h 127.0.0.1 -p "$PGB_PORT" sess-k sh -c 'exit 3'
	stop_pgbouncer
}

@test "the proof of a direct path, in the lock's pipeline, leaves no setting on the pooled server connection" {
	# The pooler reaches the server over its Unix socket, then over TCP:
	# the proof is NULL, then false.
	for server in "host=$PGHOST port=$PGPORT" "host=127.0.0.1 port=$PGPORT"; do
		start_pgbouncer transaction 127.0.0.1 "$server"
		run -0 timeout 20 "$PGLOCK" -w 7 -h 127.0.0.1 -p "$PGB_PORT" leak-k sh -c 'echo $PGLOCK_SCOPE'
		assert_output transaction
		# A quiet pool hands its server connection to the next client.
		run -0 timeout 20 psql -h 127.0.0.1 -p "$PGB_PORT" -XAt -c 'SHOW lock_timeout' -c 'SHOW idle_session_timeout'
		assert_output $'0\n0'
		stop_pgbouncer
	done
}

@test "a lock through the pool excludes direct clients, and --status shows its scope" {
	start_pgbouncer transaction
	id=$(sha_id mix-k)
	mkfifo "$BATS_TEST_TMPDIR/fifo"
	bg holder pglock -h 127.0.0.1 -p "$PGB_PORT" mix-k sh -c 'read x <"$0"' "$BATS_TEST_TMPDIR/fifo"
	wait_until 10 held "$id"
	run -1 timeout 20 "$PGLOCK" -n mix-k touch "$BATS_TEST_TMPDIR/ran"
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	run -0 timeout 20 "$PGLOCK" --status mix-k
	assert_line --regexp "^$id"$'\texclusive\theld\t[0-9]+\tpostgres\tlocal\tpglock: mix-k\t[0-9]{4}-[^\t]*\ttransaction\tmix-k$'
	fifo_go "$BATS_TEST_TMPDIR/fifo"
	bgwait holder 10
	[ "$bg_status" -eq 0 ]
	free "$id"
	stop_pgbouncer
}

@test "--slots through a transaction pool: the first waiter killed -9 leaves no queue lock behind" {
	start_pgbouncer transaction
	bg a pglock -h 127.0.0.1 -p "$PGB_PORT" --slots 2 pool-slots sleep 60
	bg b pglock -h 127.0.0.1 -p "$PGB_PORT" --slots 2 pool-slots sleep 60
	wait_until 10 bash -c "[ \$($PGLOCK --status --slots 2 pool-slots | grep -c 'held.*transaction') -eq 2 ]"
	# The first waiter holds the queue's lock (a third exclusive advisory
	# lock; each holder's witness keeps a shared one).
	bg w pglock -h 127.0.0.1 -p "$PGB_PORT" --slots 2 pool-slots true
	wait_until 10 bash -c "[ \$(psql -XAtc \"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND mode = 'ExclusiveLock'\") -eq 3 ]"
	kill -KILL "$(bgpid w)"
	wait_until 10 bash -c "[ \$(psql -XAtc \"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND mode = 'ExclusiveLock'\") -eq 2 ]"
	# The next waiter gets the slot a leaves.
	bg n pglock -h 127.0.0.1 -p "$PGB_PORT" -w 20 --slots 2 pool-slots sh -c 'echo "slot $PGLOCK_SLOT"'
	wait_until 10 bash -c "[ \$(psql -XAtc \"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND mode = 'ExclusiveLock'\") -eq 3 ]"
	kill -TERM "$(bgpid a)"
	bgwait n 30
	[ "$bg_status" -eq 0 ]
	run cat "$BATS_TEST_TMPDIR/n.out"
	[[ "$output" =~ ^slot\ [12]$ ]]
}

# granted N: N exclusive advisory locks are granted in the database (each
# holder's witness keeps a shared one beside its lock: not counted).
granted() { [ "$(psql -XAtc "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND mode = 'ExclusiveLock'")" -eq "$1" ]; }

@test "--slots through a busy transaction pool: waiters cancelled by TERM leave no advisory lock behind" {
	start_pgbouncer transaction
	# 40 clients on the pool (20 server connections by default), in pglock's
	# database (a pool is a database's): a server connection handed back is
	# another client's at once.
	echo 'SELECT 1;' >"$BATS_TEST_TMPDIR/one.sql"
	bg load timeout 120 "$PGLOCK_TEST_PGBIN/pgbench" -n -h 127.0.0.1 -p "$PGB_PORT" -f "$BATS_TEST_TMPDIR/one.sql" -c 40 -T 110 "$PGDATABASE"
	bg a pglock -h 127.0.0.1 -p "$PGB_PORT" --slots 2 busy-slots sleep 120
	bg b pglock -h 127.0.0.1 -p "$PGB_PORT" --slots 2 busy-slots sleep 120
	wait_until 30 granted 2
	for round in 1 2 3 4; do
		# The first waiter holds the queue's lock (a third one), then TERM.
		bg "w$round" pglock -h 127.0.0.1 -p "$PGB_PORT" --slots 2 busy-slots touch "$BATS_TEST_TMPDIR/ran"
		wait_until 30 granted 3
		# TERM lands in its nap between two tries (the transaction the
		# cancel leaves in error is rolled back and chained, so that the
		# unlock runs on the same server connection).
		timeout 10 sh -c 'until [ "$(psql -XAtc "SELECT count(*) FROM pg_stat_activity
		    WHERE state = '\''active'\'' AND query = '\''SELECT pg_catalog.pg_sleep(0.1)'\''")" = 1 ]; do :; done'
		kill -TERM "$(bgpid "w$round")"
		bgwait "w$round" 30
		[ "$bg_status" -eq 143 ]
		wait_until 10 granted 2
	done
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	kill -TERM "$(bgpid a)" "$(bgpid b)"
	bgwait a 30
	bgwait b 30
	kill -TERM "$(bgpid load)"
	# Nothing left on any pooled server connection.
	wait_until 10 granted 0
	stop_pgbouncer
}
