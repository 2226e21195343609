#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Never run unlocked: real faults (a terminated backend, a server restart,
# a frozen backend, a killed waiter) while the command runs; a cut network
# and a stopped pglock are tests/lease.bats'.

load helper

# ms since the epoch
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

@test "each session is judged by its own errors: one refused a write (read-only), another ended by pg_terminate_backend (cut, and why)" {
	two=${TWO_SESSIONS:-$BATS_TEST_DIRNAME/two_sessions}
	[ -x "$two" ] || fail "$two: not built (make tests/two_sessions)"
	run -0 timeout 30 "$two"
	assert_output "14 passed, 0 failed"
}

@test "pg_terminate_backend on the holder: command and its child gone, exit 75 within 2 s" {
	id=$(sha_id term-k)
	bg runner pglock term-k sh -c 'sleep 60 & echo $! >"$0.child"; echo $$ >"$0"; wait' "$BATS_TEST_TMPDIR/cmd"
	wait_until 10 test -s "$BATS_TEST_TMPDIR/cmd.child"
	wait_until 10 test -s "$BATS_TEST_TMPDIR/cmd"
	cmd=$(cat "$BATS_TEST_TMPDIR/cmd") child=$(cat "$BATS_TEST_TMPDIR/cmd.child")
	wait_until 10 held "$id"
	start=$(now_ms)
	run -0 sql "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) = $id"
	bgwait runner 5
	elapsed=$(( $(now_ms) - start ))
	[ "$bg_status" -eq 75 ]
	[ "$elapsed" -lt 2000 ]
	wait_until 2 gone "$cmd"
	wait_until 2 gone "$child"
	run cat "$BATS_TEST_TMPDIR/runner.err"
	assert_output "pglock: term-k: lock lost while the command ran (terminating connection due to administrator command); the command was stopped"
	run -0 pglock -n term-k true
}

@test "a lock lost under --once: exit 75, no success recorded, and the next run runs" {
	for scope in session transaction; do
		key=lonce-$scope id=$(sha_id "lonce-$scope") log=$BATS_TEST_TMPDIR/lonce-$scope.log
		# The command exits 0 when stopped: no success to record either.
		bg runner pglock --scope "$scope" --once "$key" sh -c 'trap "exit 0" TERM; echo run >>"$0"; sleep 60 & wait' "$log"
		wait_until 10 held "$id"
		wait_until 10 test -s "$log"
		sql "SELECT pg_terminate_backend($(locks_on "$id" | cut -d: -f2))"
		bgwait runner 10
		[ "$bg_status" -eq 75 ]
		run cat "$BATS_TEST_TMPDIR/runner.err"
		assert_output "pglock: $key: lock lost while the command ran (terminating connection due to administrator command); the command was stopped"
		[ "$(sql "SELECT count(*) FROM pglock_runs WHERE key = '$key'")" -eq 0 ]
		run -0 timeout 20 "$PGLOCK" --scope "$scope" --once "$key" sh -c 'echo run >>"$0"' "$log"
		[ "$(wc -l <"$log")" -eq 2 ]
		[ "$(sql "SELECT ok_slot || ' ' || coalesce(failed_status::text, '-') FROM pglock_runs WHERE key = '$key'")" = "0 -" ]
	done
}

@test "a backend that stops answering is caught by the periodic check alone: exit 75, the check's reason" {
	id=$(sha_id silent-k)
	bg runner pglock --check-interval 1 silent-k sh -c ': >"$0"; exec sleep 60' "$BATS_TEST_TMPDIR/ran"
	wait_until 10 held "$id"
	# The command runs: the lock-delay's look after the grant was answered.
	wait_until 10 test -e "$BATS_TEST_TMPDIR/ran"
	pid=$(locks_on "$id" | cut -d: -f2)
	# Stopped, the backend keeps its socket open: only the check sees it.
	CLEANUP="kill -CONT $pid"
	kill -STOP "$pid"
	bgwait runner 20
	kill -CONT "$pid"
	[ "$bg_status" -eq 75 ]
	run cat "$BATS_TEST_TMPDIR/runner.err"
	assert_output "pglock: silent-k: lock lost while the command ran (the server did not answer the lock check within 1 s); the command was stopped"
}

@test "a check left unanswered when the command exits: exit 75, and not 'stopped'" {
	id=$(sha_id late-k)
	mkfifo "$BATS_TEST_TMPDIR/fifo"
	bg runner pglock --check-interval 0.2 late-k sh -c ': >"$0.ran"; read x <"$0"' "$BATS_TEST_TMPDIR/fifo"
	wait_until 10 held "$id"
	# The command runs: the server has answered all that came before it
	# (the lock-delay's look after the grant too).
	wait_until 10 test -e "$BATS_TEST_TMPDIR/fifo.ran"
	pid=$(locks_on "$id" | cut -d: -f2)
	CLEANUP="kill -CONT $pid"
	kill -STOP "$pid"
	sleep 0.5	# not to synchronise: checks go out and stay unanswered
	fifo_go "$BATS_TEST_TMPDIR/fifo"
	bgwait runner 20
	kill -CONT "$pid"
	[ "$bg_status" -eq 75 ]
	run cat "$BATS_TEST_TMPDIR/runner.err"
	assert_output "pglock: late-k: lock lost while the command ran (the server did not answer the lock check within 1 s); the command had exited already"
}

@test "a backend that freezes as the command exits: the release goes unanswered, exit 75 in about 10 s, not a hang" {
	# On a Unix socket no keepalive notices a stopped backend: only the
	# bound on the release's answer does.
	for scope in session transaction; do
		bg runner pglock --scope "$scope" frz-k sh -c 'kill -STOP $PGLOCK_BACKEND_PID; echo "$PGLOCK_BACKEND_PID" >"$0"' "$BATS_TEST_TMPDIR/pid"
		wait_until 10 test -s "$BATS_TEST_TMPDIR/pid"
		pid=$(cat "$BATS_TEST_TMPDIR/pid")
		CLEANUP="kill -CONT $pid"
		bgwait runner 25
		kill -CONT "$pid"
		[ "$bg_status" -eq 75 ]
		run cat "$BATS_TEST_TMPDIR/runner.err"
		assert_output "pglock: frz-k: the release does not show the lock held to the end: it may have been lost (the server did not answer within 10 s)"
		rm "$BATS_TEST_TMPDIR/pid"
	done
}

@test "a backend that freezes before --version-counter commits: exit 75 in about 10 s, not confirmed, and no number skipped" {
	# shellcheck disable=SC2016
	bg runner pglock --version-counter frz-t sh -c 'p=$(psql -XAtc "SELECT pid FROM pg_stat_activity WHERE application_name = '\''pglock: frz-t'\''"); kill -STOP "$p"; echo "$p" >"$0"' "$BATS_TEST_TMPDIR/pid"
	wait_until 10 test -s "$BATS_TEST_TMPDIR/pid"
	pid=$(cat "$BATS_TEST_TMPDIR/pid")
	CLEANUP="kill -CONT $pid"
	bgwait runner 25
	[ "$bg_status" -eq 75 ]
	run cat "$BATS_TEST_TMPDIR/runner.err"
	assert_output "pglock: frz-t: the commit of version 1 is not confirmed (the server did not answer within 10 s): check with --peek"
	# The COMMIT was sent: continued, the backend may still carry it out,
	# as the message says. Either way the next version follows the last.
	kill -CONT "$pid"
	wait_until 10 bash -c "! psql -XAtc 'SELECT 1 FROM pg_stat_activity WHERE pid = $pid' | grep -q 1"
	run -0 pglock --version-counter --peek frz-t
	last=$output
	[[ "$last" == 0 || "$last" == 1 ]]
	run -0 pglock --version-counter frz-t
	assert_output "$((last + 1))"
}

@test "a server restart while the command runs: exit 75 within the check interval + 2 s" {
	own_server
	# The command runs once the new server's lock-delay (its lease, 8 s,
	# from the start) has passed.
	bg runner pglock --check-interval 2 restart-k sh -c 'echo >"$0"; exec sleep 60' "$BATS_TEST_TMPDIR/ran"
	wait_until 20 test -s "$BATS_TEST_TMPDIR/ran"
	held "$(sha_id restart-k)"
	start=$(now_ms)
	"$BATS_TEST_DIRNAME/pg.sh" restart "$OWN"
	bgwait runner 10
	elapsed=$(( $(now_ms) - start ))
	[ "$bg_status" -eq 75 ]
	[ "$elapsed" -lt 4000 ]
	grep -q "lock lost while the command ran" "$BATS_TEST_TMPDIR/runner.err"
}

# after_fault FAULT: on a cluster of the test's own ($p), a holder whose
# command ignores TERM (a lease of 3.5 s: KILLed at its end, not after
# --kill-after), then FAULT, which ends its session, then the next holder
# (-v), whose command notes in $d/log whether the old one (not gone or a
# zombie) was alive when it started.
after_fault() {
	p=$PGLOCK_TEST_DIR/fault-$BATS_TEST_NUMBER d=$BATS_TEST_TMPDIR
	CLEANUP="'$BATS_TEST_DIRNAME/pg.sh' stop '$p'"
	pg_sh start "$p"
	pport=$(pg_on "$p" printenv PGPORT)
	old='trap "" TERM; echo $$ >"$0.pid"; while :; do echo old >>"$0"; sleep 0.05; done'
	new='s=$(cut -d" " -f3 "/proc/$(cat "$0.pid")/stat" 2>/dev/null); [ -n "$s" ] && [ "$s" != Z ] && echo "new, old alive" >>"$0" || echo "new, old dead" >>"$0"'
	PGHOST=$p PGPORT=$pport bg old pglock --check-interval 0.5 --kill-after 60 fault-k sh -c "$old" "$d/log"
	wait_until 20 test -s "$d/log"
	# The next holder waits before the fault, so that it looks at the
	# server as soon as it is back: started after it (a slow start, as
	# under valgrind), it could find the lease already over.
	PGHOST=$p PGPORT=$pport bg new pglock -v --check-interval 0.5 fault-k sh -c "$new" "$d/log"
	PGHOST=$p PGPORT=$pport wait_until 20 eval '[ "$(locks_on "$(sha_id fault-k)" | grep -c "^f:")" -eq 1 ]'
	"$1"
	bgwait old 20
	[ "$bg_status" -eq 75 ]
	bgwait new 30
	[ "$bg_status" -eq 0 ]
	[ "$(tail -n 1 "$d/log")" = "new, old dead" ]
}

@test "a role that may not call pg_control_checkpoint() takes the lock in each scope: the lock-delay looks without it" {
	sql "DROP ROLE IF EXISTS pglock_nc; CREATE ROLE pglock_nc LOGIN; REVOKE EXECUTE ON FUNCTION pg_control_checkpoint() FROM PUBLIC"
	CLEANUP="sql 'GRANT EXECUTE ON FUNCTION pg_control_checkpoint() TO PUBLIC; DROP ROLE IF EXISTS pglock_nc'"
	for scope in session transaction; do
		run -0 --separate-stderr timeout 20 "$PGLOCK" -U pglock_nc --scope "$scope" nc-k echo ran
		assert_output ran
		assert_equal "$stderr" ""
	done
}

restart_it() { "$BATS_TEST_DIRNAME/pg.sh" restart "$p"; }

# A server process KILLed: the postmaster ends every session, recovers.
victim_pid() {
	local v
	v=$(sql "SELECT pid FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(60)'")
	[ -n "$v" ] && echo "$v"
}
crash_it() {
	PGHOST=$p PGPORT=$pport bg victim psql -XAtc 'SELECT pg_sleep(60)'
	PGHOST=$p PGPORT=$pport wait_until 10 victim_pid
	kill -KILL "$(PGHOST=$p PGPORT=$pport victim_pid)"
}

@test "after a server restart the next holder's command starts once the TERM-ignoring old one is dead (the lock-delay)" {
	after_fault restart_it
	grep -q "^pglock: fault-k: lock-delay: the server started [0-9.]* s ago; waiting [0-9.]*s more, to the end of the lease of --check-interval 0.5s (3.5s)$" "$d/new.err"
}

@test "after a crash of a server process the next holder's command starts once the TERM-ignoring old one is dead (the lock-delay)" {
	after_fault crash_it
	grep -q "^pglock: fault-k: lock-delay: the server ended crash recovery .*; waiting [0-9.]*s more, to the end of the lease of --check-interval 0.5s (3.5s)$" "$d/new.err"
}

@test "a server whose clock is a day behind its last checkpoint is no crash: the run waits out its start's lock-delay alone, S at most" {
	local lib
	for lib in /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1; do
		[ -e "$lib" ] && break
	done
	[ -e "$lib" ] || skip "no libfaketime"
	# Its last checkpoint, a clean stop's, dated a day ahead; then started
	# again on the real clock (pg.sh restart does not preload faketime).
	OWN=$PGLOCK_TEST_DIR/own-$BATS_TEST_NUMBER
	CLEANUP="'$BATS_TEST_DIRNAME/pg.sh' stop '$OWN'"
	faketime_sweep
	LD_PRELOAD=$lib FAKETIME=+1d pg_sh start "$OWN"
	"$BATS_TEST_DIRNAME/pg.sh" restart "$OWN"
	# shellcheck disable=SC1091
	. "$OWN/env"
	[ "$(sql "SELECT (pg_control_checkpoint()).checkpoint_time > now() + interval '23 h'")" = t ]
	start=$(now_ms)
	# S = 4 s; a day's wait would be the timeout's 124 instead.
	run -0 --separate-stderr timeout 30 "$PGLOCK" -v --check-interval 1 behind-k echo ran
	elapsed=$(( $(now_ms) - start ))
	assert_output ran
	[[ $stderr == *"pglock: behind-k: lock-delay: the server started "*" s ago; waiting "*"s more, to the end of the lease of --check-interval 1s (4s)"* ]]
	[[ $stderr != *"crash recovery"* ]]
	# Within S of the start, and a margin for valgrind's slower start.
	[ "$elapsed" -lt 10000 ]
}

@test "a run in a new server's lock-delay says why at once on a terminal, as a connect retry does; not off one, nor under -q" {
	own_server
	# S = 8 s from the start: all three wait in it, side by side.
	bg plain pglock --check-interval 2 tty-a true
	bg quiet script -qec "'$PGLOCK' -q --check-interval 2 tty-b true" /dev/null
	run -0 timeout 30 script -qec "'$PGLOCK' --check-interval 2 tty-c true" /dev/null
	[[ ${output//$'\r'/} == "pglock: tty-c: lock-delay: the server started "*" s ago; waiting "*"s more, to the end of the lease of --check-interval 2s (8s)" ]]
	bgwait plain 30
	[ "$bg_status" -eq 0 ]
	[ ! -s "$BATS_TEST_TMPDIR/plain.err" ]
	bgwait quiet 30
	[ "$bg_status" -eq 0 ]
	[ ! -s "$BATS_TEST_TMPDIR/quiet.out" ]
}

@test "waiters that waited longer than --connect-timeout ride out a restart: each connects again, acquires and runs once" {
	own_server
	id=$(sha_id ride-k)
	mkfifo "$BATS_TEST_TMPDIR/fifo"
	# --check-interval 1: a short lease, should a restart's lock-delay
	# keep the next holder waiting for it.
	bg holder pglock --check-interval 1 ride-k sh -c 'read x <"$0"' "$BATS_TEST_TMPDIR/fifo"
	wait_until 10 held "$id"
	start=$(now_ms)
	# With -w, the rest of -w; without, --connect-timeout from the loss.
	bg waiter pglock -v --check-interval 1 -w 60 --connect-timeout 3 ride-k sh -c 'echo w >>"$0"' "$BATS_TEST_TMPDIR/ran"
	bg forever pglock -v --check-interval 1 --connect-timeout 4 ride-k sh -c 'echo f >>"$0"' "$BATS_TEST_TMPDIR/ran"
	wait_until 10 waiting "$id" 2
	# Not to synchronise: the wait must outlast --connect-timeout.
	wait_until 10 bash -c "[ \$(( \$(date +%s%N) / 1000000 )) -ge $((start + 4500)) ]"
	"$BATS_TEST_DIRNAME/pg.sh" restart "$OWN"
	# The holder's lock is lost: 75, as ever.
	bgwait holder 10
	[ "$bg_status" -eq 75 ]
	bgwait waiter 60
	[ "$bg_status" -eq 0 ]
	bgwait forever 60
	[ "$bg_status" -eq 0 ]
	[ "$(sort "$BATS_TEST_TMPDIR/ran" | tr -d '\n')" = fw ]
	for j in waiter forever; do
		run cat "$BATS_TEST_TMPDIR/$j.err"
		assert_line "pglock: ride-k: terminating connection due to administrator command; connecting again"
		assert_line --partial "pglock: ride-k: acquired after"
	done
	free "$id"
}

@test "a command that ignores TERM is KILLed after --kill-after 1; exit 75" {
	id=$(sha_id stubborn-k)
	bg runner pglock --kill-after 1 stubborn-k sh -c 'trap "" TERM; echo $$ >"$0"; while :; do sleep 0.1; done' "$BATS_TEST_TMPDIR/cmd"
	wait_until 10 test -s "$BATS_TEST_TMPDIR/cmd"
	wait_until 10 held "$id"
	start=$(now_ms)
	sql "SELECT pg_terminate_backend($(locks_on "$id" | cut -d: -f2))"
	bgwait runner 10
	elapsed=$(( $(now_ms) - start ))
	[ "$bg_status" -eq 75 ]
	[ "$elapsed" -ge 1000 ]
	[ "$elapsed" -lt 5000 ]
	wait_until 2 gone "$(cat "$BATS_TEST_TMPDIR/cmd")"
}

@test "--lost-signal chooses the signal the command gets" {
	id=$(sha_id lostsig-k)
	bg runner pglock --lost-signal USR1 lostsig-k sh -c 'trap "echo USR1 >\"\$0\"; exit 3" USR1; echo >"$0.ready"; while :; do sleep 0.05; done' "$BATS_TEST_TMPDIR/got"
	wait_until 10 test -e "$BATS_TEST_TMPDIR/got.ready"
	wait_until 10 held "$id"
	sql "SELECT pg_terminate_backend($(locks_on "$id" | cut -d: -f2))"
	bgwait runner 10
	[ "$bg_status" -eq 75 ]
	[ "$(cat "$BATS_TEST_TMPDIR/got")" = USR1 ]
}

@test "a waiter whose pglock is SIGKILLed leaves pg_locks within 5 s and never acquires" {
	id=$(sha_id waiter-k)
	mkfifo "$BATS_TEST_TMPDIR/fifo"
	bg holder pglock waiter-k sh -c 'read x <"$0"' "$BATS_TEST_TMPDIR/fifo"
	wait_until 10 held "$id"
	bg waiter pglock waiter-k touch "$BATS_TEST_TMPDIR/ran"
	wait_until 10 waiting "$id"
	kill -KILL "$(bgpid waiter)"
	wait_until 5 bash -c "! psql -XAtc \"SELECT 1 FROM pg_locks WHERE NOT granted AND locktype = 'advisory'\" | grep -q 1"
	fifo_go "$BATS_TEST_TMPDIR/fifo"
	bgwait holder 10
	[ "$bg_status" -eq 0 ]
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	free "$id"
}

@test "restarts while runs connect and ask for the lock: nothing has run, so each is retried; none exits 69; every line is pglock's" {
	d=$BATS_TEST_TMPDIR
	own_server
	settle 3.2	# the start's lock-delay, as each restart's below
	# Four loops of short runs; a run whose command ran when the restart
	# came ends 75 (the lock was lost), one cut before is tried again
	# (during a restart's lock-delay too: that of --check-interval 0.1).
	for w in 1 2 3 4; do
		bg "w$w" bash -c 'end=$((SECONDS + 12)); while [ $SECONDS -lt $end ]; do
			rc=0; "$PGLOCK" --check-interval 0.1 -q "rs-$1" true 2>>"$2/err.$1" || rc=$?; echo "$rc" >>"$2/rc.$1"; done' w "$w" "$d"
	done
	for r in 1 2 3; do
		sleep 1	# not to synchronise: runs under way when it comes
		"$BATS_TEST_DIRNAME/pg.sh" restart "$OWN"
	done
	for w in 1 2 3 4; do bgwait "w$w" 60; done
	cat "$d"/rc.* | sort | uniq -c >&3
	run grep -cvE '^(0|75)$' <(cat "$d"/rc.*)
	assert_output 0
	# Runs did happen (a second or two each under valgrind).
	[ "$(cat "$d"/rc.* | grep -c '^0$')" -gt "$([ -z "${PGLOCK_VG_DIR:-}" ] && echo 20 || echo 6)" ]
	# No line of libpq's own (its notice processor's FATAL, LOCATION).
	run grep -hv '^pglock: ' "$d"/err.*
	assert_output ''
}
