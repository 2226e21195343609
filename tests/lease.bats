#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# A lock is a lease: with the link cut, the server frozen or pglock itself
# stopped, the command is dead before the server can give the lock away.
# Every test runs pglock with its default settings (--check-interval 5:
# the server ends a silent holder after S = 20 s, pglock has KILLed its
# command 15 s after the last answered check was sent), unless the test
# is about the interval.

load helper

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# Under valgrind a pglock takes a second or two more to start and to end.
slack=0
[ -z "${PGLOCK_VG_DIR:-}" ] || slack=3000
# The -w of the tests that freeze or cut a waiter: the fault must come
# before the server's own lock_timeout answers, and under valgrind and
# load a pglock's start alone may take most of 2 s (the answer then came
# first, and the run ended 1: CI, stop 24).
w=2
[ -z "${PGLOCK_VG_DIR:-}" ] || w=6

# beats FILE: a command, deaf to TERM, that writes the time (ms) to FILE
# every 50 ms for as long as it lives.
beats='trap "" TERM; while :; do echo $(( $(date +%s%N) / 1000000 )) >"$0.tmp"; mv "$0.tmp" "$0"; sleep 0.05; done'

@test "a cut link: the holder's command, deaf to TERM, is dead before the waiter's starts; the holder exits 75" {
	netns_up
	id=$(sha_id cut-k)
	# --kill-after 60: only the lease's bound can KILL it in time.
	bg holder ip netns exec "$ns" "$PGLOCK" --kill-after 60 -h "$net.1" -p "$PGPORT" cut-k sh -c "$beats" "$BATS_TEST_TMPDIR/beat"
	wait_until 10 held "$id"
	wait_until 10 test -s "$BATS_TEST_TMPDIR/beat"
	bg waiter pglock cut-k sh -c 'echo $(( $(date +%s%N) / 1000000 )) >"$0"' "$BATS_TEST_TMPDIR/started"
	wait_until 10 waiting "$id"
	start=$(now_ms)
	netns_cut
	bgwait holder 30
	[ "$bg_status" -eq 75 ]
	bgwait waiter 40
	[ "$bg_status" -eq 0 ]
	last=$(cat "$BATS_TEST_TMPDIR/beat") started=$(cat "$BATS_TEST_TMPDIR/started")
	echo "holder's command last beat at +$((last - start)) ms, waiter's began at +$((started - start)) ms" >&3
	[ "$last" -lt "$started" ]
	# The lease's order, with its margin: KILLed by 15 s after the last
	# check (at most 5 s before the cut), the server waits 20.
	[ $((started - last)) -ge 1000 ]
	run cat "$BATS_TEST_TMPDIR/holder.err"
	assert_output --regexp "^pglock: cut-k: lock lost while the command ran \(.*\); the command was stopped$"
}

@test "a cut link through PgBouncer: the holder exits 75, and the server frees the lock within S of the cut" {
	netns_up
	start_pgbouncer transaction "127.0.0.1,$net.1"
	id=$(sha_id cutpool-k)
	bg holder ip netns exec "$ns" "$PGLOCK" -h "$net.1" -p "$PGB_PORT" cutpool-k sleep 120
	wait_until 10 held "$id"
	start=$(now_ms)
	netns_cut
	bgwait holder 30
	[ "$bg_status" -eq 75 ]
	# PgBouncer keeps its server connection; the lease's
	# idle_in_transaction_session_timeout ends it (20 s, and a poll).
	wait_until 30 free "$id"
	freed=$(( $(now_ms) - start ))
	echo "the server freed the lock $freed ms after the cut" >&3
	[ "$freed" -le 22000 ]
	stop_pgbouncer
}

@test "a stopped pglock: its shim KILLs the command at the lease's end, before the server frees the lock" {
	id=$(sha_id stopped-k)
	bg holder pglock --check-interval 1 stopped-k sh -c "$beats" "$BATS_TEST_TMPDIR/beat"
	wait_until 10 held "$id"
	wait_until 10 test -s "$BATS_TEST_TMPDIR/beat"
	# The same job's next run, with its options: the stopped holder keeps
	# its witness, which the waiter waits for as long as its own lease.
	bg waiter pglock --check-interval 1 stopped-k sh -c 'echo $(( $(date +%s%N) / 1000000 )) >"$0"' "$BATS_TEST_TMPDIR/started"
	wait_until 10 waiting "$id"
	pid=$(bgpid holder)
	CLEANUP="kill -CONT $pid"
	kill -STOP "$pid"
	stopped=$(now_ms)
	# The command still ran when pglock stopped (no loss came before).
	[ $((stopped - $(cat "$BATS_TEST_TMPDIR/beat"))) -lt 1000 ]
	# --check-interval 1: S = 4 s, the command KILLed 3 s after the last check.
	bgwait waiter 20
	[ "$bg_status" -eq 0 ]
	# Its command is dead once pglock, let go on, exits: the last beat is
	# final then (read before, it could be one that had yet to come).
	kill -CONT "$pid"
	bgwait holder 10
	[ "$bg_status" -eq 75 ]
	last=$(cat "$BATS_TEST_TMPDIR/beat") started=$(cat "$BATS_TEST_TMPDIR/started")
	echo "stopped at 0; command's last beat +$((last - stopped)) ms; waiter's command +$((started - stopped)) ms" >&3
	[ "$last" -lt "$started" ]
	[ $((last - stopped)) -le 3500 ]
}

# A holder that lets go of KEY when told, and a waiter whose backend the
# test then freezes (SIGSTOP): -w must end by pglock's own clock.
frozen_waiter() {
	local key=$1 pid start
	shift
	id=$(sha_id "$key")
	bg holder pglock "$key" sleep 60
	wait_until 10 held "$id"
	bg waiter pglock "$@" -w "$w" "$key" touch "$BATS_TEST_TMPDIR/ran"
	start=$(now_ms)
	wait_until 10 waiting "$id"
	pid=$(locks_on "$id" | grep '^f:' | cut -d: -f2)
	CLEANUP="kill -CONT $pid"
	kill -STOP "$pid"
	bgwait waiter 20
	elapsed=$(( $(now_ms) - start ))
	kill -CONT "$pid"
	echo "-w $w ended after $elapsed ms" >&3
	[ "$bg_status" -eq 69 ]
	[ "$elapsed" -lt $((w * 1000 + 4000 + slack)) ]
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	run cat "$BATS_TEST_TMPDIR/waiter.err"
	assert_output "pglock: $key: the server did not answer within ${w}s"
}

@test "-w 2 on a Unix socket whose waiting backend freezes: 69 within a few seconds of 2" {
	frozen_waiter frozen-unix
}

@test "-w 2 over TCP whose waiting backend freezes: 69 within a few seconds of 2" {
	frozen_waiter frozen-tcp -h 127.0.0.1
}

@test "-w 2 through PgBouncer whose waiting backend freezes: 69 within a few seconds of 2" {
	start_pgbouncer transaction
	frozen_waiter frozen-pool -h 127.0.0.1 -p "$PGB_PORT"
	stop_pgbouncer
}

# frozen_recheck ARGS...: pglock ARGS --slots 2 --scope transaction, through
# a relay (tests/holdback.py) that holds back the check that follows the
# slot's grant until the test has frozen (SIGSTOP) the waiter's backend;
# then lets it go on. $start: when pglock started (ms).
frozen_recheck() {
	local d=$BATS_TEST_TMPDIR/relay pid
	mkdir "$d"
	bg relay "$PYTHON" "$BATS_TEST_DIRNAME/holdback.py" "$d" "$PGHOST/.s.PGSQL.$PGPORT" pg_lock_status
	wait_until 10 test -s "$d/port"
	start=$(now_ms)
	bg waiter pglock "$@" --slots 2 --scope transaction -h 127.0.0.1 -p "$(cat "$d/port")" rechk-k touch "$BATS_TEST_TMPDIR/ran"
	wait_until 10 test -e "$d/held"
	pid=$(sql "SELECT pid FROM pg_stat_activity WHERE application_name = 'pglock: rechk-k'")
	CLEANUP="kill -CONT $pid"
	kill -STOP "$pid"
	touch "$d/go"
}

@test "-w $w with --slots 2 --scope transaction whose backend freezes at the check after the grant: 69 within a few seconds of $w" {
	frozen_recheck -w "$w"
	bgwait waiter 30
	elapsed=$(( $(now_ms) - start ))
	echo "-w $w ended after $elapsed ms" >&3
	[ "$bg_status" -eq 69 ]
	[ "$elapsed" -lt $((w * 1000 + 4000 + slack)) ]
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	run cat "$BATS_TEST_TMPDIR/waiter.err"
	assert_output "pglock: rechk-k: the server did not answer within ${w}s"
}

@test "SIGTERM to a --slots 2 --scope transaction waiter whose backend freezes at the check after the grant: 143 within seconds" {
	frozen_recheck
	kill -TERM "$(bgpid waiter)"
	termed=$(now_ms)
	bgwait waiter 30
	elapsed=$(( $(now_ms) - termed ))
	echo "exit $bg_status $elapsed ms after TERM" >&3
	[ "$bg_status" -eq 143 ]
	# The cancel reaches a frozen backend: its answer is waited for 5 s.
	[ "$elapsed" -lt $((8000 + slack)) ]
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "-w 2 waiting on a link that is cut: 69 within a few seconds of 2, the cancel bounded too" {
	netns_up
	id=$(sha_id cutwait-k)
	bg holder pglock cutwait-k sleep 60
	wait_until 10 held "$id"
	bg waiter ip netns exec "$ns" "$PGLOCK" -h "$net.1" -p "$PGPORT" -w "$w" cutwait-k touch "$BATS_TEST_TMPDIR/ran"
	start=$(now_ms)
	wait_until 10 waiting "$id"
	netns_cut
	bgwait waiter 20
	elapsed=$(( $(now_ms) - start ))
	echo "-w $w ended after $elapsed ms" >&3
	[ "$bg_status" -eq 69 ]
	[ "$elapsed" -lt $((w * 1000 + 5000 + slack)) ]
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "-w 2 behind a holder, server well: still the conflict code, 1" {
	bg holder pglock busyw-k sleep 60
	wait_until 10 held "$(sha_id busyw-k)"
	run -1 --separate-stderr timeout 20 "$PGLOCK" -w 2 busyw-k true
	[[ "$stderr" == "pglock: busyw-k: timed out after 2s waiting for the lock, held by server pid "* ]]
}

@test "--hold killed by SIGKILL: its shim signals the script that holds through it" {
	cat >"$BATS_TEST_TMPDIR/script" <<-'EOF'
	trap 'echo "script got TERM"; exit 3' TERM
	coproc LOCK { exec "$PGLOCK" --hold hold-kill; }
	read -r held <&"${LOCK[0]}" || exit 1
	kill -KILL "$LOCK_PID"
	sleep 20 & wait $!
	echo "not signalled"
	EOF
	run -3 --separate-stderr timeout 60 bash "$BATS_TEST_TMPDIR/script"
	assert_output "script got TERM"
	wait_until 10 free "$(sha_id hold-kill)"
}

@test "the server's TCP keepalives give up no sooner than S: idle S - 6 s (at least 1 s), then 3 probes 2 s apart" {
	# The server's log shows the set-up statement's parameters ($2 and
	# $3: S; $4: the keepalives' idle part) for this role only.
	sql "DROP ROLE IF EXISTS pglock_ka; CREATE ROLE pglock_ka LOGIN; ALTER ROLE pglock_ka SET log_statement = 'all'"
	log=$PGLOCK_TEST_DIR/pg/log
	# C:S:tcp_user_timeout:idle. S rounds up to whole seconds (C 2.1 s:
	# S 8.4 s, idle 3 s, not 2). Without a lease (-F) S is 0,
	# tcp_user_timeout libpq's 10 s and the idle part 5 s. The witness's
	# session alike, but that it never idles out ($2 0); none under -F.
	for c_s_t_idle in 5:20000:20000:14 10:40000:40000:34 0.5:3500:3500:1 2.1:8400:8400:3 -F:0:10000:5; do
		IFS=: read -r c s t idle <<<"$c_s_t_idle"
		args=(--check-interval "$c") sessions=2
		[ "$c" != -F ] || args=(-F) sessions=1
		n=$(wc -l <"$log")
		run -0 pglock -h 127.0.0.1 -U pglock_ka "${args[@]}" ka-k true
		run -0 grep -c "parameters: .*\$2 = '$s', \$3 = '$t', \$4 = '$idle', \$5 = " <(tail -n +"$((n + 1))" "$log")
		assert_output 1
		run grep -c "parameters: \$1 = '0', \$2 = '0', \$3 = '$t', \$4 = '$idle'\$" <(tail -n +"$((n + 1))" "$log")
		assert_output $((sessions - 1))
		run -0 grep -c "set_config('tcp_keepalives_idle', \$4::text" <(tail -n +"$((n + 1))" "$log")
		assert_output $sessions
	done
	# Keepalives the connection's options set are the user's: not set.
	n=$(wc -l <"$log")
	PGOPTIONS='-c tcp_keepalives_idle=77' run -0 pglock -h 127.0.0.1 -U pglock_ka ka-k true
	run -1 grep -c "set_config('tcp_keepalives_idle'" <(tail -n +"$((n + 1))" "$log")
	assert_output 0
}

# The advisory locks of pglock's sessions for KEY (or TENANT), by their
# application_name: "granted:pid" lines, held first.
app_locks() {
	sql "SELECT CASE WHEN l.granted THEN 't' ELSE 'f' END || ':' || l.pid
	     FROM pg_locks l JOIN pg_stat_activity a USING (pid)
	     WHERE l.locktype = 'advisory' AND a.application_name = 'pglock: $1'
	     ORDER BY l.granted DESC, l.pid"
}
app_held() { app_locks "$1" | grep -q '^t:'; }
app_waiting() { app_locks "$1" | grep -q '^f:'; }
app_held_by() { [ "$(app_locks "$1")" = "t:$2" ]; }
sql_true() { [ "$(sql "$1")" = t ]; }

# late_grant KEY REASON [OPTION ...]: a waiter is stopped (SIGSTOP) while it
# waits; the holder lets go, so the server grants the stopped waiter, whose
# silent session it ends after S (--check-interval 1: 4 s) and grants the
# next waiter, which runs. Let go on, the stopped waiter must not run its
# command: it exits 75, saying REASON. Each command appends its name (and
# PGLOCK_VERSION) to log, left in $output.
# The late waiter's TERM is ignored from before its exec (pglock keeps it
# so for the command): a command that started, however soon pglock saw
# the loss, has written its line.
late_grant() {
	local key=$1 reason=$2 pid backend log=$BATS_TEST_TMPDIR/log
	shift 2
	bg holder pglock "$@" "$key" sh -c 'echo "holder${PGLOCK_VERSION:+ $PGLOCK_VERSION}" >>"$0"; until [ -e "$1" ]; do sleep 0.05; done' "$log" "$BATS_TEST_TMPDIR/go"
	wait_until 10 app_held "$key"
	bg late env --ignore-signal=TERM "$PGLOCK" --check-interval 1 "$@" "$key" sh -c 'echo "late${PGLOCK_VERSION:+ $PGLOCK_VERSION}" >>"$0"' "$log"
	wait_until 10 app_waiting "$key"
	backend=$(app_locks "$key" | grep '^f:' | cut -d: -f2)
	pid=$(bgpid late)
	CLEANUP="kill -CONT $pid"
	kill -STOP "$pid"
	touch "$BATS_TEST_TMPDIR/go"
	bgwait holder 10
	[ "$bg_status" -eq 0 ]
	# Granted to the stopped waiter: its answer waits in the socket.
	wait_until 10 app_held_by "$key" "$backend"
	# It waits for the stopped waiter's session, which the server ends.
	bg next pglock "$@" "$key" sh -c 'echo "next${PGLOCK_VERSION:+ $PGLOCK_VERSION}" >>"$0"' "$log"
	bgwait next 30
	[ "$bg_status" -eq 0 ]
	[ -z "${LATE_BEFORE_CONT:-}" ] || "$LATE_BEFORE_CONT"
	kill -CONT "$pid"
	bgwait late 30
	run cat "$BATS_TEST_TMPDIR/late.err"
	echo "late waiter: $bg_status: $output" >&3
	# Either it gives up (75), or, where the lock-delay's look after the
	# grant finds the session cut first, it connects again as any waiter
	# whose session was cut before its command (exit 0): its line comes
	# after next's, which had ended before it was let go on.
	if [ "$bg_status" -eq 75 ]; then
		assert_output "pglock: $key: lock lost before the command started ($reason); the command did not run"
		run cat "$log"
	else
		[ "$bg_status" -eq 0 ]
		run cat "$log"
		[ "${lines[2]}" = "late${lines[2]#late}" ]
		[ "${#lines[@]}" -eq 3 ]
		run head -n 2 "$log"
	fi
}

@test "a waiter granted while stopped, whose session the server ended, never runs its command: 75, the next holder's ran alone" {
	late_grant late-k 'terminating connection due to idle-session timeout'
	assert_output "holder
next"
}

@test "over TCP: a waiter granted while stopped, whose session the server ended, never runs its command: 75" {
	late_grant late-tcp 'terminating connection due to idle-session timeout' -h 127.0.0.1
	assert_output "holder
next"
}

# take_three: pglock_three's three sessions, taken (the late waiter's lock's,
# which the server ended, counts no more).
three_taken() { [ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE usename = 'pglock_three'")" -eq 3 ]; }
take_three() {
	local i
	for i in 1 2 3; do
		bg "three$i" psql -U pglock_three -XAtc 'SELECT pg_sleep(60)'
	done
	wait_until 10 three_taken
}

@test "without a witness (its role's sessions all taken), a waiter granted while stopped never runs its command either: the lease runs from the lock's sending" {
	# Three sessions: the holder's two and the late waiter's lock's; the
	# test takes all three before the late waiter goes on.
	sql "DROP ROLE IF EXISTS pglock_three; CREATE ROLE pglock_three LOGIN CONNECTION LIMIT 3"
	# -q: no line that it runs without a witness, which the role has no
	# session left for.
	LATE_BEFORE_CONT=take_three late_grant late-nw 'terminating connection due to idle-session timeout' -q -U pglock_three
	assert_output "holder
next"
}

@test "--version-counter: a waiter granted while stopped never runs with the version the next holder got: it gives up (75) or allocates again, after" {
	late_grant late-vc 'terminating connection due to idle-in-transaction timeout' --version-counter
	assert_output "holder 1
next 2"
	# A late waiter that connected again ran after, with the next version.
	run -0 pglock --version-counter --peek late-vc
	assert_output "$(wc -l <"$BATS_TEST_TMPDIR/log")"
	[ "$(sed -n 3p "$BATS_TEST_TMPDIR/log")" = "$([ "$output" -eq 3 ] && echo "late 3")" ]
}

@test "--record whose runs-table read under the lock outlasts the lease: no command is killed before it started; it runs, and its success is recorded" {
	local log=$BATS_TEST_TMPDIR/log
	# --record reads the record under the lock only (--once reads it
	# before the lock too, where no lease runs yet).
	run -0 pglock --record slowread-setup true
	# The table locked for longer than the lease (--check-interval 1:
	# KILL 3 s after the read was sent), until the test ends the locker.
	bg locker psql -XAtq -c "BEGIN; LOCK TABLE pglock_runs IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(120)"
	wait_until 10 sql_true "SELECT EXISTS (SELECT FROM pg_locks WHERE relation = 'pglock_runs'::regclass AND mode = 'AccessExclusiveLock' AND granted)"
	bg slow pglock --check-interval 1 --record slowread-k sh -c 'echo ran >>"$0"' "$log"
	wait_until 30 sql_true "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE application_name = 'pglock: slowread-k' AND wait_event_type = 'Lock' AND now() - query_start > interval '5 s')"
	sql "SELECT pg_terminate_backend(l.pid) FROM pg_locks l WHERE l.relation = 'pglock_runs'::regclass AND l.mode = 'AccessExclusiveLock' AND l.granted" >/dev/null
	bgwait slow 20
	run cat "$BATS_TEST_TMPDIR/slow.err"
	echo "pglock: $bg_status: $output" >&3
	[ "$bg_status" -eq 0 ]
	assert_output ""
	run cat "$log"
	assert_output ran
	# One success recorded (--record: no slot); no failure.
	run sql "SELECT lock_id, ok_host, ok_at IS NOT NULL, ok_slot IS NULL, failed_at IS NULL, failed_host IS NULL, failed_status IS NULL FROM pglock_runs WHERE key = 'slowread-k'"
	assert_output "$(sha_id slowread-k)|$(hostname)|t|t|t|t|t"
}
