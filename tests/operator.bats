#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# What operators asked for (issue 14): --hold across a script, --slots,
# --break, --max-time and --json, against the throwaway cluster.

load helper

# hold_script BREAK ARGS...: run, as a script, pglock --hold ARGS... in a
# coprocess; once held, --break BREAK (- for none); then wait for the
# script's TERM. Exits 3 with "script got TERM; hold exited N", or 0 with
# "not signalled". The trap only notes the signal, and the script polls for
# it in the foreground: bash 5.2's wait builtin, cut short by a trap while
# the hold is reaped, can lose the hold's status (wait then says -1: 1 run
# in 10 under load; CI's chroot saw it once more with 'sleep 20 & wait $!'
# where this loop is).
hold_script() {
	cat >"$BATS_TEST_TMPDIR/script" <<-'EOF'
	trap 'got=TERM' TERM
	then=$1
	shift
	coproc LOCK { exec "$PGLOCK" --hold "$@"; }
	lock_pid=$LOCK_PID
	read -r held <&"${LOCK[0]}" || exit 1
	[ "$then" = - ] || "$PGLOCK" --check-interval 0.1 --break -q "$then" >/dev/null
	for _ in $(seq 200); do [ -n "${got:-}" ] && break; sleep 0.1; done
	[ -n "${got:-}" ] || { echo "not signalled"; exit 0; }
	wait "$lock_pid"
	echo "script got TERM; hold exited $?"
	exit 3
	EOF
	timeout 60 bash "$BATS_TEST_TMPDIR/script" "$@"
}

ROUNDS=5 HOLD=0.1
# Under valgrind a pglock takes a second to start: fewer rounds, and
# holds long enough that three of them still meet.
[ -z "${PGLOCK_VG_DIR:-}" ] || { ROUNDS=2 HOLD=1; }

# The id pglock's slot I of KEY has, as --status --slots shows it.
slot_ids() {
	pglock --status --slots "$2" "$1" | awk -F'\t' 'NR > 1 { print $1 }'
}

@test "--hold: the coproc holds the lock across two steps; -n fails between them and succeeds after" {
	cat >"$BATS_TEST_TMPDIR/script" <<-'EOF'
	coproc LOCK { exec "$PGLOCK" --hold hold-k; }
	lock_pid=$LOCK_PID
	read -r held <&"${LOCK[0]}" || exit 1
	echo "held: $held"
	"$PGLOCK" -n -q hold-k true; echo "step 1: $?"
	"$PGLOCK" -n -q hold-k true; echo "step 2: $?"
	exec {LOCK[1]}>&-; wait "$lock_pid"; echo "hold: $?"
	"$PGLOCK" -n -q hold-k true; echo "after: $?"
	EOF
	run -0 timeout 60 bash "$BATS_TEST_TMPDIR/script"
	assert_output "held: hold-k	$(sha_id hold-k)
step 1: 1
step 2: 1
hold: 0
after: 0"
}

@test "--hold --fence: the line carries the fencing token" {
	run -0 --separate-stderr timeout 30 "$PGLOCK" --hold --fence hold-f </dev/null
	[[ "$output" =~ ^hold-f$'\t'"$(sha_id hold-f)"$'\t'[1-9][0-9]*$ ]]
}

@test "--hold: TERM releases the lock and exits 0" {
	bg h bash -c 'exec "$PGLOCK" --hold hold-t < <(sleep 60)'
	# The line says the lock is held; pg_locks says so before pglock knows,
	# and a TERM then cancels the wait (143).
	wait_until 10 test -s "$BATS_TEST_TMPDIR/h.out"
	pid=$(bgpid h)
	kill -TERM "$pid"
	wait_until 10 gone "$pid"
	bgwait h 10
	[ "$bg_status" -eq 0 ]
	free "$(sha_id hold-t)"
	run -0 cat "$BATS_TEST_TMPDIR/h.out"
	assert_output "hold-t	$(sha_id hold-t)"
}

@test "--hold: a lost lock signals the script (its parent) and exits 75" {
	run -3 --separate-stderr hold_script hold-l hold-l
	assert_output "script got TERM; hold exited 75"
	[[ "$stderr" == *"pglock: hold-l: lock lost while held ("*"); sent signal 15 to pid "* ]]
}

@test "--hold orphaned before it started signals nobody when the lock is lost, not init (a container's PID 1): exit 75's message" {
	pidns_or_skip
	d=$BATS_TEST_TMPDIR
	mkfifo "$d/in"
	# PID 1 of a PID namespace, as a container's init; the hold is its
	# grandchild, whose parent is gone before it starts.
	cat >"$d/init" <<-'EOF'
	trap 'got=TERM' TERM
	exec 7<>"$1/in"
	# The hold starts once its parent, the middle subshell, is gone.
	( mid=$BASHPID
	  ( while kill -0 "$mid" 2>/dev/null; do sleep 0.05; done
	    exec "$PGLOCK" --hold orphan-k <&7 >"$1/out" 2>"$1/err" ) & )
	until [ -e "$1/done" ]; do sleep 0.1; done
	[ -z "${got:-}" ] || exit 3
	EOF
	bg init unshare --fork --pid bash "$d/init" "$d"
	wait_until 20 held "$(sha_id orphan-k)"
	run -0 pglock --check-interval 0.1 --break -q orphan-k
	# The signal, if any, was sent before the message was written.
	wait_until 20 grep -q 'lock lost' "$d/err"
	touch "$d/done"
	bgwait init 10
	[ "$bg_status" -eq 0 ]
	[[ "$(cat "$d/err")" == "pglock: orphan-k: lock lost while held ("*"); the script that started pglock is gone" ]]
}

@test "--hold as a PID namespace's init (its parent outside, pid 0 to it) signals nobody when the lock is lost: 75" {
	pidns_or_skip
	d=$BATS_TEST_TMPDIR
	mkfifo "$d/in"
	# kill(0, ...) would reach the script: it is in the hold's group.
	bg script bash -c 'trap "echo TERM >>\"\$0/got\"" TERM
	    exec 7<>"$0/in"
	    unshare --fork --pid "$PGLOCK" --hold ns-k <&7 >/dev/null 2>"$0/err"
	    echo $? >"$0/rc"' "$d"
	wait_until 20 held "$(sha_id ns-k)"
	run -0 pglock --check-interval 0.1 --break -q ns-k
	wait_until 20 test -s "$d/rc"
	[ "$(cat "$d/rc")" = 75 ]
	[ ! -e "$d/got" ]
	[[ "$(cat "$d/err")" == "pglock: ns-k: lock lost while held ("*"); the script that started pglock is gone" ]]
}

@test "--hold whose standard input is empty (/dev/null, as for 'pglock --hold KEY &' in a script; an empty file; a pipe closed empty, as 'true | pglock --hold KEY') says why it ended at once; -q, or input that ends later, says nothing" {
	said="pglock: empty-k: the hold ended with its standard input, which was empty (see EXAMPLES in pglock(1) for a hold across a script's steps)"
	run -0 --separate-stderr timeout 20 "$PGLOCK" --hold empty-k </dev/null
	assert_output "$(printf 'empty-k\t%s' "$(sha_id empty-k)")"
	[ "$stderr" = "$said" ]
	: >"$BATS_TEST_TMPDIR/empty"
	run -0 --separate-stderr timeout 20 "$PGLOCK" --hold empty-k <"$BATS_TEST_TMPDIR/empty"
	[ "$stderr" = "$said" ]
	# A pipe whose writer closed it, with nothing in it, before the hold
	# (as 'true |' once true is gone, here without the race).
	run -0 --separate-stderr "$PYTHON" -c 'import os, subprocess, sys
r, w = os.pipe()
os.close(w)
sys.exit(subprocess.call(sys.argv[1:], stdin=r))' timeout 20 "$PGLOCK" --hold empty-k
	assert_output "$(printf 'empty-k\t%s' "$(sha_id empty-k)")"
	[ "$stderr" = "$said" ]
	run -0 --separate-stderr timeout 20 "$PGLOCK" -q --hold empty-k </dev/null
	[ "$stderr" = "" ]
	# A pipe closed once the hold has begun (its line is out): its end.
	run -0 --separate-stderr bash -c 'timeout 20 sh -c "until [ -s \"\$0\" ]; do sleep 0.05; done" "$0" |
	    timeout 20 "$PGLOCK" --hold empty-k >"$0"' "$BATS_TEST_TMPDIR/line"
	[ "$stderr" = "" ]
	[ "$(cat "$BATS_TEST_TMPDIR/line")" = "$(printf 'empty-k\t%s' "$(sha_id empty-k)")" ]
	free "$(sha_id empty-k)"
}

@test "--hold takes no COMMAND and no -F" {
	run -64 --separate-stderr pglock --hold k true
	assert_equal "$stderr" "pglock: --hold runs no COMMAND (and no -F): it holds KEY until its standard input ends (see pglock --help)"
	run -64 pglock --hold -F k
}

@test "--slots 3: 9 workers x 5 runs never have more than 3 holders, each on its own valid slot" {
	log=$BATS_TEST_TMPDIR/log
	: >"$log"
	for w in 1 2 3 4 5 6 7 8 9; do
		bg "w$w" bash -c 'for i in $(seq "$1"); do "$PGLOCK" --slots 3 slot-k sh -c "echo \"+ \$PGLOCK_SLOT \$\$\" >>$2; sleep $3; echo \"- \$PGLOCK_SLOT \$\$\" >>$2" || exit; done' w "$ROUNDS" "$log" "$HOLD"
	done
	for w in 1 2 3 4 5 6 7 8 9; do
		bgwait "w$w" 300
		[ "$bg_status" -eq 0 ]
	done
	run -0 awk '
	    $1 == "+" { if ($2 < 1 || $2 > 3 || busy[$2]) { print "bad slot " $2; exit 1 }
			busy[$2] = 1; if (++n > max) max = n; starts++ }
	    $1 == "-" { busy[$2] = 0; n-- }
	    END { print starts, max }' "$log"
	assert_output "$((9 * ROUNDS)) 3"
}

@test "--slots: PGLOCK_SLOT and PGLOCK_ID name the slot; -n fails when all are held; --status lists them" {
	bg a pglock --slots 2 slot-n sleep 30
	bg b pglock --slots 2 slot-n sleep 30
	wait_until 10 bash -c "[ \$($PGLOCK --status --slots 2 slot-n | grep -c held) -eq 2 ]"
	run -1 --separate-stderr pglock -n --slots 2 slot-n true
	assert_equal "$stderr" "pglock: slot-n: all 2 slots are held"
	run -0 pglock --status --slots 2 slot-n
	[ "${#lines[@]}" -eq 3 ]
	kill -TERM "$(bgpid a)"
	wait_until 10 gone "$(bgpid a)"
	wait_until 10 bash -c "[ \$($PGLOCK --status --slots 2 slot-n | grep -c held) -eq 1 ]"
	run -0 pglock -n --slots 2 slot-n sh -c 'echo "$PGLOCK_SLOT $PGLOCK_ID"; "$PGLOCK" --status --slots 2 slot-n | tail -n +2 | cut -f1'
	read -r slot id <<<"${lines[0]}"
	[[ "$slot" =~ ^[12]$ ]]
	[ "${#lines[@]}" -eq 3 ]
	[ "$id" = "${lines[1]}" ] || [ "$id" = "${lines[2]}" ]
	[ "${lines[1]}" != "${lines[2]}" ]
}

@test "--status KEY finds a --slots KEY's holders and waiters without being told N: 2 held, 2 waiting (as --metrics counts them), exit 0" {
	bg a pglock --slots 2 slot-s sleep 30
	bg b pglock --slots 2 slot-s sleep 30
	wait_until 10 bash -c "[ \$($PGLOCK --status slot-s | grep -c '	held	') -eq 2 ]"
	bg w1 pglock --slots 2 slot-s true
	wait_until 10 bash -c "[ \$(psql -XAtc \"SELECT count(*) FROM pg_locks JOIN pg_stat_activity USING (pid) WHERE locktype = 'advisory' AND granted AND mode = 'ExclusiveLock' AND application_name = 'pglock: slot-s'\") -eq 3 ]"
	bg w2 pglock --slots 2 slot-s true
	# The first waiter holds the queue (slot 0) while it waits: it waits
	# for KEY all the same; the second waits for the queue.
	wait_until 10 bash -c "[ \$(psql -XAtc \"SELECT count(*) FROM pg_locks JOIN pg_stat_activity USING (pid) WHERE locktype = 'advisory' AND NOT granted AND application_name = 'pglock: slot-s'\") -eq 1 ]"
	run -0 --separate-stderr pglock --status slot-s
	[ "$(echo "$output" | tail -n +2 | awk -F'\t' '$10 == "slot-s"' | wc -l)" -eq "$(( ${#lines[@]} - 1 ))" ]
	[ "$(echo "$output" | grep -c '	held	')" -eq 2 ]
	[ "$(echo "$output" | grep -c '	waiting	')" -eq 2 ]
	[ "${#lines[@]}" -eq 5 ]
	run -0 pglock --status --metrics slot-s
	assert_line 'pglock_lock_holders{key="slot-s"} 2'
	assert_line 'pglock_lock_waiters{key="slot-s"} 2'
	kill -TERM "$(bgpid a)" "$(bgpid b)"
	bgwait w1 20
	bgwait w2 20
	wait_until 10 bash -c "[ \$($PGLOCK --status slot-s | wc -l) -eq 1 ]"
	run -1 pglock --status slot-s
	assert_output "id	mode	state	pid	user	client	application_name	since	scope	key"
}

@test "--slots: waiters come in arrival order, and -w bounds the wait" {
	bg a pglock --slots 2 slot-o sleep 30
	bg b pglock --slots 2 slot-o sleep 30
	wait_until 10 bash -c "[ \$($PGLOCK --status --slots 2 slot-o | grep -c held) -eq 2 ]"
	log=$BATS_TEST_TMPDIR/order
	bg w1 pglock --slots 2 slot-o sh -c "echo first >>$log"
	wait_until 10 bash -c "[ \$(psql -XAtc \"SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pglock: slot-o'\") -eq 3 ]"
	bg w2 pglock --slots 2 slot-o sh -c "echo second >>$log"
	wait_until 10 bash -c "[ \$(psql -XAtc \"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted\") -ge 1 ]"
	run -1 --separate-stderr pglock -w 2 --slots 2 slot-o true
	assert_equal "$stderr" "pglock: slot-o: all 2 slots are held, to the end of -w"
	kill -TERM "$(bgpid a)"
	bgwait w1 20
	[ "$bg_status" -eq 0 ]
	kill -TERM "$(bgpid b)"
	bgwait w2 20
	[ "$bg_status" -eq 0 ]
	run cat "$log"
	assert_output "first
second"
}

@test "--slots takes 2 to 1000, and no -s" {
	run -64 --separate-stderr pglock --slots 1 k true
	[[ "$stderr" == "pglock: --slots: "* ]]
	run -64 pglock --slots 1001 k true
	run -64 --separate-stderr pglock --slots 3 -s k true
	assert_equal "$stderr" "pglock: --slots counts holders of a KEY: no -s, --explain or --version-counter (see pglock --help)"
}

@test "--break ends the holder, which stops its command and exits 75; the lock is free" {
	bg a pglock brk-k sleep 60
	wait_until 10 held "$(sha_id brk-k)"
	holder_pid=$(locks_on "$(sha_id brk-k)" | cut -d: -f2)
	run -0 pglock --check-interval 0.1 --break brk-k
	[[ "$output" =~ ^$holder_pid$'\t'postgres$'\t'local$'\t'"pglock: brk-k"$'\t'[0-9-]+T ]]
	bgwait a 20
	[ "$bg_status" -eq 75 ]
	grep -q "lock lost while the command ran" "$BATS_TEST_TMPDIR/a.err"
	free "$(sha_id brk-k)"
}

# old_and_new DIR: the commands of a lock-delay test. $old ignores TERM and
# ticks in DIR/log; $new notes in DIR/log whether the old one was alive (not
# gone or a zombie) when it started.
old_and_new() {
	old='trap "" TERM; echo $$ >"$0.pid"; while :; do echo old >>"$0"; sleep 0.05; done'
	new='s=$(cut -d" " -f3 "/proc/$(cat "$0.pid")/stat" 2>/dev/null); [ -n "$s" ] && [ "$s" != Z ] && echo "new, old alive" >>"$0" || echo "new, old dead" >>"$0"'
}

# new_after_old: old exits 75, new 0, and the old command ticked, then died;
# then the new one started, once.
new_after_old() {
	bgwait old 20
	[ "$bg_status" -eq 75 ]
	bgwait new 20
	[ "$bg_status" -eq 0 ]
	[ "$(tail -n 1 "$d/log")" = "new, old dead" ]
	[ "$(grep -c new "$d/log")" -eq 1 ]
}

@test "--break keeps the lock for the broken holder's lease: the next command starts after the TERM-ignoring old one is dead" {
	d=$BATS_TEST_TMPDIR id=$(sha_id brk-delay)
	old_and_new
	# A lease of 3.5 s: the old command is KILLed by its end (2.5 s after
	# the last answered check), not by --kill-after.
	bg old pglock --check-interval 0.5 --kill-after 60 brk-delay sh -c "$old" "$d/log"
	wait_until 10 test -s "$d/log"
	bg new pglock --check-interval 0.5 brk-delay sh -c "$new" "$d/log"
	wait_until 10 waiting "$id"
	run -0 timeout 20 "$PGLOCK" --check-interval 0.5 --break brk-delay
	[ "${#lines[@]}" -eq 1 ]
	new_after_old
}

@test "pg_terminate_backend on the holder, in either scope: the next command starts after the TERM-ignoring old one is dead (the holder's witness)" {
	d=$BATS_TEST_TMPDIR id=$(sha_id term-delay)
	old_and_new
	for scope in session transaction; do
		: >"$d/log"
		bg old pglock --scope $scope --check-interval 0.5 --kill-after 60 term-delay sh -c "$old" "$d/log"
		wait_until 10 test -s "$d/log"
		bg new pglock -v --scope $scope --check-interval 0.5 term-delay sh -c "$new" "$d/log"
		wait_until 10 waiting "$id"
		sql "SELECT pg_terminate_backend($(locks_on "$id" | grep '^t:' | cut -d: -f2))" >/dev/null
		new_after_old
		grep -qx "pglock: term-delay: lock-delay: a --break, or an ended holder's witness, keeps it while the old command is stopped; waiting" "$d/new.err"
	done
}

@test "KILL on pglock, then pg_terminate_backend on its lock's session: the next command starts after the TERM-ignoring old one is dead (the shim keeps the witness too)" {
	d=$BATS_TEST_TMPDIR id=$(sha_id kill-delay)
	old_and_new
	# A lease of 8 s (--check-interval 2): the old command, KILLed at its
	# end, outlives the new run's start even under valgrind.
	bg old pglock --check-interval 2 --kill-after 60 kill-delay sh -c "$old" "$d/log"
	wait_until 10 test -s "$d/log"
	kill -KILL "$(bgpid old)"
	bgwait old 5
	[ "$bg_status" -eq 137 ]
	# Its shim keeps the lock's session, and the witness's.
	held "$id"
	bg new pglock -v --check-interval 2 kill-delay sh -c "$new" "$d/log"
	wait_until 10 waiting "$id"
	sql "SELECT pg_terminate_backend($(locks_on "$id" | grep '^t:' | cut -d: -f2))" >/dev/null
	bgwait new 20
	[ "$bg_status" -eq 0 ]
	[ "$(tail -n 1 "$d/log")" = "new, old dead" ]
	[ "$(grep -c new "$d/log")" -eq 1 ]
	grep -qx "pglock: kill-delay: lock-delay: a --break, or an ended holder's witness, keeps it while the old command is stopped; waiting" "$d/new.err"
}

# wit_sessions N: wit-k's holders have N sessions, their witnesses' included.
wit_sessions() {
	[ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE application_name IN ('pglock: wit-k', 'pglock witness') AND datname = current_database()")" -eq "$1" ]
}

# wit_hold ARGS: a holds wit-k (pglock ARGS) until wit_hand_over.
wit_hold() {
	bg a pglock "$@" wit-k sh -c 'read x <"$0"' "$BATS_TEST_TMPDIR/fifo"
	wait_until 10 held "$(sha_id wit-k)"
}

# wit_hand_over: an exclusive waiter b gets wit-k from a, with no lock-delay:
# a's command, then its witness, went before its lock.
wit_hand_over() {
	bg b pglock -v wit-k true
	wait_until 10 waiting "$(sha_id wit-k)"
	fifo_go "$BATS_TEST_TMPDIR/fifo"
	bgwait a 10
	[ "$bg_status" -eq 0 ]
	bgwait b 10
	[ "$bg_status" -eq 0 ]
	! grep lock-delay "$BATS_TEST_TMPDIR/b.err"
}

@test "the witness keeps no holder waiting on a handover nor a shared holder beside another; it is gone with the lock" {
	mkfifo "$BATS_TEST_TMPDIR/fifo"
	wit_hold
	# The holder's two sessions: the lock's and its witness's, which
	# --status leaves out.
	wit_sessions 2
	run -0 pglock --status
	[ "${#lines[@]}" -eq 2 ]
	[[ "${lines[1]}" == *"	exclusive	held	"*"	pglock: wit-k	"* ]]
	wit_hand_over
	# Shared holders run together: one's witness keeps no other waiting;
	# an exclusive one waits for its command, not its witness.
	wit_hold --shared
	run -0 --separate-stderr pglock -v -n --shared wit-k echo beside
	assert_output beside
	[[ "$stderr" != *lock-delay* ]]
	wit_hand_over
	wait_until 10 wit_sessions 0
}

@test "eight shared waiters granted together: none waits a lock-delay for another's witness or look" {
	mkfifo "$BATS_TEST_TMPDIR/fifo"
	wit_hold
	for i in 1 2 3 4 5 6 7 8; do
		bg "s$i" pglock -v --shared wit-k sleep 0.5
	done
	wait_until 10 waiting "$(sha_id wit-k)" 8
	fifo_go "$BATS_TEST_TMPDIR/fifo"
	for i in 1 2 3 4 5 6 7 8; do
		bgwait "s$i" 20
		[ "$bg_status" -eq 0 ]
		run ! grep lock-delay "$BATS_TEST_TMPDIR/s$i.err"
	done
}

@test "a witness that cannot be had (a role's CONNECTION LIMIT 1): at the first try the command runs without it, saying so; -q says nothing" {
	sql "DROP ROLE IF EXISTS pglock_one; CREATE ROLE pglock_one LOGIN CONNECTION LIMIT 1"
	CLEANUP="sql 'DROP ROLE IF EXISTS pglock_one'"
	run -0 --separate-stderr timeout 40 "$PGLOCK" -U pglock_one one-k echo ran
	assert_output ran
	[[ "$stderr" == "pglock: one-k: no witness: the lock-delay will not cover an early end of its session (connection to server "*"too many connections for role \"pglock_one\")" ]]
	[ "${#stderr_lines[@]}" -eq 1 ]
	run -0 --separate-stderr timeout 40 "$PGLOCK" -q -U pglock_one one-k echo ran
	assert_output ran
	assert_equal "$stderr" ""
	free "$(sha_id one-k)"
}

@test "-n and -w during a --break's lock-delay: the conflict code, saying so; after it, the lock is taken" {
	id=$(sha_id lkd-k)
	bg a pglock lkd-k sleep 60
	wait_until 10 held "$id"
	# A lease of 8 s: time for the two tries below, even under valgrind.
	bg brk pglock --check-interval 2 --break lkd-k
	wait_until 10 free "$id"
	run -1 --separate-stderr pglock -n lkd-k true
	assert_equal "$stderr" "pglock: lkd-k: the lock is in its lock-delay (a --break, or an ended holder's witness, keeps it while the old command is stopped)"
	run -7 --separate-stderr pglock -E 7 -w 0.5 lkd-k true
	assert_equal "$stderr" "pglock: lkd-k: the lock is in its lock-delay (a --break, or an ended holder's witness, keeps it while the old command is stopped), to the end of -w"
	bgwait brk 20
	[ "$bg_status" -eq 0 ]
	run -0 pglock -n lkd-k true
}

@test "--break: nobody holds it is 1; a role that may not end the holder is 77" {
	run -1 --separate-stderr pglock --break brk-none
	assert_equal "$stderr" "pglock: brk-none: nobody holds the lock"
	sql "DROP ROLE IF EXISTS pglock_weak; CREATE ROLE pglock_weak LOGIN"
	CLEANUP="sql 'DROP ROLE IF EXISTS pglock_weak'"
	bg a pglock brk-p sleep 60
	wait_until 10 held "$(sha_id brk-p)"
	run -77 --separate-stderr pglock -U pglock_weak --break brk-p
	[[ "$stderr" == "pglock: brk-p: may not end pid "*" of user postgres: "* ]]
	held "$(sha_id brk-p)"
}

@test "--max-time 1 on sleep 30: exit 124, the command stopped, the lock free" {
	run -124 --separate-stderr timeout -s KILL 20 "$PGLOCK" --max-time 1 mt-k sh -c 'echo $$ >"$0"; sleep 30' "$BATS_TEST_TMPDIR/pid"
	assert_equal "$stderr" "pglock: mt-k: the command ran past --max-time 1s: stopped"
	gone "$(cat "$BATS_TEST_TMPDIR/pid")"
	free "$(sha_id mt-k)"
	run -0 pglock -n mt-k true
}

@test "--max-time: a command that ignores TERM is killed after --kill-after" {
	run -124 timeout -s KILL 10 "$PGLOCK" --max-time 0.5 --kill-after 0.5 mt-i sh -c 'trap "" TERM; echo $$ >"$0"; sleep 30' "$BATS_TEST_TMPDIR/pid"
	gone "$(cat "$BATS_TEST_TMPDIR/pid")"
	free "$(sha_id mt-i)"
}

@test "--max-time: a command that ends in time keeps its status" {
	run -3 pglock --max-time 10 mt-ok sh -c 'exit 3'
}

# The JSON as tab-separated lines, in --status's column order.
json_rows() {
	"$PYTHON" -c '
import json, sys
doc = json.load(sys.stdin)
for l in doc["locks"]:
    print("\t".join(str(l[k]) for k in ("id", "mode", "state", "pid", "user",
          "client", "application_name", "since", "scope", "key")))'
}

@test "--status --json parses and matches the columns" {
	bg a pglock js-k sleep 60
	bg b pglock -s --id 7,-9 sleep 60
	wait_until 10 held "$(sha_id js-k)"
	wait_until 10 bash -c "$PGLOCK --status --id 7,-9 >/dev/null"
	run -0 bash -c "$PGLOCK --status | tail -n +2"
	cols=$output
	[ "$(echo "$cols" | wc -l)" -eq 2 ]
	run -0 bash -c "$PGLOCK --status --json | { $(declare -f json_rows); PYTHON=$PYTHON json_rows; }"
	assert_output "$cols"
	run -0 bash -c "$PGLOCK --status --json js-k | $PYTHON -c 'import json, sys; d = json.load(sys.stdin); print(len(d[\"locks\"]), type(d[\"locks\"][0][\"pid\"]).__name__, type(d[\"locks\"][0][\"seconds\"]).__name__)'"
	assert_output "1 int int"
	run -0 bash -c "$PGLOCK --status --json nobody-holds-this | $PYTHON -c 'import json, sys; print(json.load(sys.stdin))'"
	assert_output "{'locks': [], 'runs': [{'key': 'nobody-holds-this', 'last_ok': None, 'last_failed': None, 'failures': 0, 'paused': None}]}"
}

# explain_both ARGS...: --explain's columns and --explain --json agree.
explain_both() {
	local cols want
	cols=$(pglock --explain "$@") || return 1
	want=$(echo "$cols" | awk -F'\t' '
	    $1 == "id" { split($2, a, " "); id = a[1] }
	    $1 == "space" { space = $2 }
	    $1 == "scope" { split($2, s, ":"); scope = s[1] }
	    $1 == "pg_locks" { split($2, p, /[ =]/); c = p[4]; o = p[6]; n = p[8] }
	    $1 == "sql" { sql = sql "sql " $2 "\n" }
	    END { printf "%s|%s|%s|%s|%s|%s\n%s", id, space, c, o, n, scope, sql }')
	run -0 bash -c '"$PGLOCK" --explain --json "$@" | "$0" -c "
import json, sys
d = json.load(sys.stdin)
print(\"|\".join(str(d[k]) for k in (\"id\", \"space\", \"classid\", \"objid\", \"objsubid\", \"scope\")))
for s in d[\"sql\"]:
    print(\"sql\", s)"' "$PYTHON" "$@"
	assert_output "$want"
}

@test "--explain --json parses and matches the columns" {
	explain_both deploy
	explain_both --hash hashtext "it's"
	explain_both --namespace 7 ns
	explain_both --id 1,2
	explain_both --scope transaction --hash crc32 x
	run -0 bash -c "$PGLOCK --explain --json --namespace -3 k | $PYTHON -c 'import json, sys; d = json.load(sys.stdin); print(d[\"scheme\"], d[\"namespace\"], d[\"server_computed\"])'"
	assert_output "namespace -3 True"
}

@test "--explain --json: a key that is not UTF-8 stays valid JSON" {
	run -0 bash -c "$PGLOCK --explain --json \$'a\\xffb' | $PYTHON -c 'import json, sys; print(ascii(json.load(sys.stdin)[\"key\"]))'"
	assert_output "'a\\xffb'"
}

@test "--peek --json parses and matches --peek" {
	run -0 pglock --version-counter js-t
	run -0 pglock --version-counter --peek js-t
	v=$output
	run -0 bash -c "$PGLOCK --version-counter --peek --json js-t | $PYTHON -c 'import json, sys; d = json.load(sys.stdin); print(d[\"tenant\"], d[\"version\"])'"
	assert_output "js-t $v"
}

@test "--json is only for --status, --explain and --peek" {
	run -64 --separate-stderr pglock --json k true
	assert_equal "$stderr" "pglock: --json is for --status, --explain and --peek (see pglock --help)"
	run -64 pglock --json --version-counter t
}

@test "--break --slots ends the holders of KEY's slots" {
	bg a pglock --slots 3 brk-s sleep 60
	bg b pglock --slots 3 brk-s sleep 60
	wait_until 10 bash -c "[ \$($PGLOCK --status --slots 3 brk-s | grep -c held) -eq 2 ]"
	run -0 pglock --check-interval 0.1 --break --slots 3 brk-s
	[ "${#lines[@]}" -eq 2 ]
	bgwait a 20
	[ "$bg_status" -eq 75 ]
	bgwait b 20
	[ "$bg_status" -eq 75 ]
	run -1 pglock --break --slots 3 brk-s
}

# The id of the lock KEY's --slots waiters queue on (slot 0).
queue_id() {
	sql "SELECT ('x' || left(encode(sha256('pglock-slot'::bytea || '\\x00'::bytea
	     || convert_to('$(sha_id "$1")', 'UTF8') || '\\x00'::bytea || '0'::bytea), 'hex'), 16))::bit(64)::bigint"
}

@test "--slots: -n takes a free slot even while the queue is held; -w waits behind the queue" {
	q=$(queue_id slot-q)
	bg queue psql -XAtq -c "SELECT pg_advisory_lock($q)" -c "SELECT pg_sleep(60)"
	wait_until 10 held "$q"
	run -0 pglock -n --slots 2 slot-q sh -c 'echo "slot $PGLOCK_SLOT"'
	assert_output "slot 1"
	run -1 --separate-stderr pglock -w 2 --slots 2 slot-q true
	assert_equal "$stderr" "pglock: slot-q: all 2 slots are held, to the end of -w"
}

@test "--hold: --max-time ends the hold, signals the script and exits 124" {
	run -3 --separate-stderr hold_script - --max-time 1 hold-m
	assert_output "script got TERM; hold exited 124"
	assert_equal "$stderr" "pglock: hold-m: the hold ran past --max-time 1s: stopped"
	free "$(sha_id hold-m)"
}

@test "what the server hides from a role without pg_read_all_stats is shown as unknown, and why, once" {
	sql "DROP ROLE IF EXISTS pglock_blind; CREATE ROLE pglock_blind LOGIN"
	# A runs table it may not read either: --status goes on without it.
	run -0 pglock --record hid-rec true
	bg holder pglock hid-k sleep 60
	id=$(sha_id hid-k)
	wait_until 10 held "$id"
	pid=$(locks_on "$id" | cut -d: -f2)
	run -0 --separate-stderr pglock -U pglock_blind --status hid-k
	assert_output "id	mode	state	pid	user	client	application_name	since	scope	key
$id	exclusive	held	$pid	postgres	?	pglock: hid-k	?	?	hid-k"
	assert_equal "$stderr" "pglock: --status: this role may not read the record of runs (permission denied for table pglock_runs): none is shown
pglock: --status: the server hides some sessions' client, start and scope from this role (shown as ?): grant it pg_read_all_stats to see them"
	run -0 --separate-stderr pglock -U pglock_blind --status --json hid-k
	"$PYTHON" -c '
import json, sys
row = json.loads(sys.argv[1])["locks"][0]
assert [row[k] for k in ("client", "since", "seconds", "scope")] == [None] * 4, row
assert row["user"] == "postgres" and row["application_name"] == "pglock: hid-k", row' "$output"
	run -1 --separate-stderr pglock -U pglock_blind -n hid-k true
	assert_equal "$stderr" "pglock: hid-k: the lock is held by server pid $pid (pglock: hid-k, user postgres; the server hides the rest from this role)"
	# A role that may see them sees them.
	sql "GRANT pg_read_all_stats TO pglock_blind"
	run -0 --separate-stderr pglock -U pglock_blind --status hid-k
	[[ "${lines[1]}" == *$'\tlocal\tpglock: hid-k\t'*$'\tsession\thid-k' ]]
	assert_equal "$stderr" "pglock: --status: this role may not read the record of runs (permission denied for table pglock_runs): none is shown"
}
