#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Never on a standby: a streaming standby of the suite's server, a host
# list that names it first, and a failover of a pair the test owns; a
# standby promoted while pglock retries, and a synchronous standby promoted
# while the old primary serves on; --require-sync's refusal without one.

load helper

setup_file() {
	export SB=$PGLOCK_TEST_DIR/standby
	pg_sh standby "$SB" "$PGHOST"
}

teardown_file() {
	"$BATS_TEST_DIRNAME/pg.sh" stop "$SB"
}

pg_ctl() { runuser -u postgres -- "$PGLOCK_TEST_PGBIN/pg_ctl" "$@"; }

# sync_pair P S: a primary in P and its standby in S, synchronous.
sync_pair() {
	pg_sh start "$1"
	pg_sh standby "$2" "$1"
	pg_on "$1" sql "ALTER SYSTEM SET synchronous_standby_names = '*'" >/dev/null
	pg_on "$1" sql "SELECT pg_reload_conf()" >/dev/null
	wait_until 10 bash -c ". '$1/env'; [ \"\$(psql -XAtc \"SELECT sync_state FROM pg_stat_replication\")\" = sync ]"
}

@test "a standby is refused with 69 before the command runs" {
	[ "$(pg_on "$SB" sql 'SELECT pg_is_in_recovery()')" = t ]
	sport=$(pg_on "$SB" printenv PGPORT)
	run -69 --separate-stderr timeout 20 "$PGLOCK" --connect-timeout 0 -h "$SB" -p "$sport" sb-k touch "$BATS_TEST_TMPDIR/ran"
	[ "$stderr" = "pglock: connection to server on socket \"$SB/.s.PGSQL.$sport\" failed: server is in hot standby mode" ]
	# Where the user asks libpq for any server, pglock still refuses.
	PGTARGETSESSIONATTRS=any run -69 --separate-stderr timeout 20 "$PGLOCK" --connect-timeout 0 -h "$SB" -p "$sport" sb-k touch "$BATS_TEST_TMPDIR/ran"
	[ "$stderr" = "pglock: $SB:$sport: the server is a standby (in recovery), where an advisory lock excludes nobody" ]
	run -69 --separate-stderr timeout 20 "$PGLOCK" --connect-timeout 0 -d "host=$SB port=$sport target_session_attrs=any" sb-k touch "$BATS_TEST_TMPDIR/ran"
	[ "$stderr" = "pglock: $SB:$sport: the server is a standby (in recovery), where an advisory lock excludes nobody" ]
	# A standby is retried as a refusal, within --connect-timeout.
	run -69 --separate-stderr timeout 20 "$PGLOCK" --connect-timeout 0.5 -d "host=$SB port=$sport target_session_attrs=any" sb-k touch "$BATS_TEST_TMPDIR/ran"
	[[ "$stderr" =~ ^"pglock: $SB:$sport: the server is a standby (in recovery), where an advisory lock excludes nobody (gave up after "[0-9]+" attempts in "[0-9.]+"s)"$ ]]
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	[ -z "$(pg_on "$SB" sql "SELECT 1 FROM pg_locks WHERE locktype = 'advisory'")" ]
}

@test "a standby promoted while pglock retries: the command runs once, on the promoted server, exit 0" {
	s=$PGLOCK_TEST_DIR/promoted
	CLEANUP="'$BATS_TEST_DIRNAME/pg.sh' stop '$s'"
	pg_sh standby "$s" "$PGHOST"
	sport=$(pg_on "$s" printenv PGPORT)
	# The command says where it holds the lock: recovery, and its lock.
	# shellcheck disable=SC2016
	cmd='echo ran >>"$0"; psql -h "$1" -p "$2" -XAtc "SELECT pg_is_in_recovery(), count(*) FROM pg_locks WHERE locktype = '\''advisory'\'' AND granted AND pid = $PGLOCK_BACKEND_PID"'
	# libpq's refusal (target_session_attrs=primary), and pglock's own
	# of a session libpq let through (any): both are retried. A short
	# lease, should a promotion's lock-delay keep them waiting for it.
	bg libpq pglock -v --check-interval 0.2 -h "$s" -p "$sport" pr-k sh -c "$cmd" "$BATS_TEST_TMPDIR/libpq.ran" "$s" "$sport"
	bg any pglock -v --check-interval 0.2 -d "host=$s port=$sport target_session_attrs=any" pr-k2 sh -c "$cmd" "$BATS_TEST_TMPDIR/any.ran" "$s" "$sport"
	wait_until 10 grep -q 'retrying for up to' "$BATS_TEST_TMPDIR/libpq.err"
	wait_until 10 grep -q 'retrying for up to' "$BATS_TEST_TMPDIR/any.err"
	pg_ctl -D "$s/data" -w promote >/dev/null
	bgwait libpq 30
	[ "$bg_status" -eq 0 ]
	bgwait any 30
	[ "$bg_status" -eq 0 ]
	for j in libpq any; do
		[ "$(cat "$BATS_TEST_TMPDIR/$j.out")" = "f|1" ]
		[ "$(cat "$BATS_TEST_TMPDIR/$j.ran")" = ran ]
	done
	run cat "$BATS_TEST_TMPDIR/libpq.err"
	# Up to 30 s from the start: a little less once the first try is made.
	assert_line --index 0 --regexp "^pglock: connection to server on socket \"$s/\.s\.PGSQL\.$sport\" failed: server is in hot standby mode; retrying for up to (30\.0|29\.[0-9])s \(--connect-timeout\)$"
	run cat "$BATS_TEST_TMPDIR/any.err"
	assert_line --index 0 --regexp "^pglock: $s:$sport: the server is a standby \(in recovery\), where an advisory lock excludes nobody; retrying for up to (30\.0|29\.[0-9])s \(--connect-timeout\)$"
}

@test "a host list with the standby first locks on the primary" {
	sport=$(pg_on "$SB" printenv PGPORT)
	id=$(sha_id list-k)
	# psql reaches the primary (PGHOST): the lock is there, held by
	# the backend pglock names.
	run -0 timeout 20 "$PGLOCK" -d "host=$SB,$PGHOST port=$sport,$PGPORT" list-k sh -c 'psql -XAtc "SELECT pg_is_in_recovery(), count(*) FROM pg_locks WHERE locktype = '\''advisory'\'' AND granted AND pid = $PGLOCK_BACKEND_PID"'
	assert_output "f|1"
}

@test "failover: the holder exits 75, and the next pglock with the host list locks on the promoted standby" {
	p=$PGLOCK_TEST_DIR/fo-primary s=$PGLOCK_TEST_DIR/fo-standby
	CLEANUP="'$BATS_TEST_DIRNAME/pg.sh' stop '$s'; '$BATS_TEST_DIRNAME/pg.sh' stop '$p'"
	pg_sh start "$p"
	pg_sh standby "$s" "$p"
	pport=$(pg_on "$p" printenv PGPORT) sport=$(pg_on "$s" printenv PGPORT)
	hosts="host=$p,$s port=$pport,$sport dbname=postgres"
	id=$(sha_id fo-k)
	# Servers just started: each new holder's command waits out the
	# lock-delay, the lease of --check-interval 0.2 (3.2 s).
	bg holder pglock --check-interval 0.2 -d "$hosts" fo-k sh -c 'touch "$0"; sleep 60' "$BATS_TEST_TMPDIR/ran"
	PGHOST=$p PGPORT=$pport wait_until 10 held "$id"
	wait_until 10 test -e "$BATS_TEST_TMPDIR/ran"
	pg_ctl -D "$p/data" -m immediate -w stop >/dev/null
	bgwait holder 10
	[ "$bg_status" -eq 75 ]
	grep -q "lock lost while the command ran" "$BATS_TEST_TMPDIR/holder.err"
	# The next job starts before the promotion: it retries until then.
	bg next pglock --check-interval 0.2 -d "$hosts" fo-k sh -c 'psql -h "$0" -p "$1" -XAtc "SELECT pg_is_in_recovery(), count(*) FROM pg_locks WHERE locktype = '\''advisory'\'' AND granted AND pid = $PGLOCK_BACKEND_PID"' "$s" "$sport"
	pg_ctl -D "$s/data" -w promote >/dev/null
	bgwait next 30
	[ "$bg_status" -eq 0 ]
	[ "$(cat "$BATS_TEST_TMPDIR/next.out")" = "f|1" ]
	PGHOST=$s PGPORT=$sport free "$id"
}

@test "a promotion: the next holder's command starts once the old primary's TERM-ignoring one is dead (the lock-delay)" {
	p=$PGLOCK_TEST_DIR/pd-primary s=$PGLOCK_TEST_DIR/pd-standby d=$BATS_TEST_TMPDIR
	CLEANUP="'$BATS_TEST_DIRNAME/pg.sh' stop '$s'; '$BATS_TEST_DIRNAME/pg.sh' stop '$p'"
	pg_sh start "$p"
	pport=$(pg_on "$p" printenv PGPORT)
	# The promoted server's first checkpoint, paced over up to 27 s, has
	# a table's pages to write: the lock-delay sees the promotion while
	# pg_control is still on the old timeline.
	pg_on "$p" sql "ALTER SYSTEM SET checkpoint_timeout = '30s'"
	pg_sh standby "$s" "$p"
	sport=$(pg_on "$s" printenv PGPORT)
	pg_on "$p" sql "CREATE TABLE pd AS SELECT generate_series(1, 200000) g"
	lsn=$(pg_on "$p" sql "SELECT pg_current_wal_lsn()")
	wait_until 20 pg_on "$s" bash -c "[ \"\$(psql -XAtc \"SELECT pg_last_wal_replay_lsn() >= '$lsn'\")\" = t ]"
	old='trap "" TERM; echo $$ >"$0.pid"; while :; do echo old >>"$0"; sleep 0.05; done'
	new='s=$(cut -d" " -f3 "/proc/$(cat "$0.pid")/stat" 2>/dev/null); [ -n "$s" ] && [ "$s" != Z ] && echo "new, old alive" >>"$0" || echo "new, old dead" >>"$0"'
	# A lease of 4 s: the old command is KILLed by its end, 3 s after
	# its last answered check.
	PGHOST=$p PGPORT=$pport bg old pglock --check-interval 1 --kill-after 60 pd-k sh -c "$old" "$d/log"
	wait_until 20 test -s "$d/log"
	pg_ctl -D "$p/data" -m immediate -w stop >/dev/null
	pg_ctl -D "$s/data" -w promote >/dev/null
	PGHOST=$s PGPORT=$sport bg new pglock -v --check-interval 1 pd-k sh -c "$new" "$d/log"
	bgwait old 20
	[ "$bg_status" -eq 75 ]
	bgwait new 30
	[ "$bg_status" -eq 0 ]
	[ "$(tail -n 1 "$d/log")" = "new, old dead" ]
	grep -q "^pglock: pd-k: lock-delay: the server was promoted moments ago; waiting 4.0s more" "$d/new.err"
}

@test "PgBouncer over a primary,standby host list never grants two exclusive holders, nor hands out a version twice" {
	# PgBouncer takes one port for its host list: a standby of the
	# primary's port number, in a socket directory of its own.
	SB2=$PGLOCK_TEST_DIR/standby2
	PG_PORT=$PGPORT PG_UNIX_ONLY=1 "$BATS_TEST_DIRNAME/pg.sh" standby "$SB2" "$PGHOST"
	CLEANUP="'$BATS_TEST_DIRNAME/pg.sh' stop '$SB2'"
	start_pgbouncer transaction 127.0.0.1 "host=$PGHOST,$SB2 port=$PGPORT"
	# A busy pool, with server connections to both: a client's next
	# transaction may land on either.
	echo 'SELECT 1;' >"$BATS_TEST_TMPDIR/one.sql"
	bg load timeout 120 "$PGLOCK_TEST_PGBIN/pgbench" -n -h 127.0.0.1 -p "$PGB_PORT" -f "$BATS_TEST_TMPDIR/one.sql" -c 8 -T 110 "$PGDATABASE"
	# The version counter too: an allocation the standby answers (at the
	# settings, or read-only at the bump) allocated nothing, and is
	# retried; each number is handed out once, in order. Allocations go
	# on (40 at most) until three were answered by the standby.
	said='the server is a standby \(in recovery\), where an advisory lock excludes nobody(; connecting again|; retrying for up to)'
	n=0
	touch "$BATS_TEST_TMPDIR/counter.err"
	while [ "$(grep -cE "$said" "$BATS_TEST_TMPDIR/counter.err")" -lt 3 ] && [ "$n" -lt 40 ]; do
		n=$((n + 1))
		timeout 60 "$PGLOCK" -v -h 127.0.0.1 -p "$PGB_PORT" --version-counter pgb-t 2>>"$BATS_TEST_TMPDIR/counter.err" >>"$BATS_TEST_TMPDIR/versions" ||
		    { cat "$BATS_TEST_TMPDIR/counter.err"; false; }
	done
	grep -cE "$said" "$BATS_TEST_TMPDIR/counter.err" >&3
	[ "$(grep -cE "$said" "$BATS_TEST_TMPDIR/counter.err")" -ge 3 ]
	run cat "$BATS_TEST_TMPDIR/versions"
	assert_output "$(seq "$n")"
	kill -0 "$(bgpid load)"	# all of it under load
	bg holder pglock twice-k sleep 120
	wait_until 10 held "$(sha_id twice-k)"
	# Each run lands on the standby about 2 times in 3: 10 runs (under
	# valgrind, each some seconds) miss it 1 time in 30,000.
	runs=20
	[ -z "${PGLOCK_VG_DIR:-}" ] || runs=10
	for i in $(seq "$runs"); do
		rc=0
		# One try: a standby's answer is otherwise retried (below).
		timeout 20 "$PGLOCK" -q --connect-timeout 0 -h 127.0.0.1 -p "$PGB_PORT" -n twice-k touch "$BATS_TEST_TMPDIR/ran.$i" 2>"$BATS_TEST_TMPDIR/err.$i" || rc=$?
		echo "$rc" >>"$BATS_TEST_TMPDIR/rcs"
		# A 69 is the standby's refusal, not any other failure.
		[ "$rc" -ne 69 ] || grep -q 'the server is a standby (in recovery)' "$BATS_TEST_TMPDIR/err.$i" ||
			{ cat "$BATS_TEST_TMPDIR/err.$i"; false; }
	done
	sort "$BATS_TEST_TMPDIR/rcs" | uniq -c >&3
	run ls "$BATS_TEST_TMPDIR"
	refute_output --partial ran.
	run grep -cvE '^(1|69)$' "$BATS_TEST_TMPDIR/rcs"
	assert_output 0
	# Some runs did reach the standby, and were refused there.
	[ "$(grep -c '^69$' "$BATS_TEST_TMPDIR/rcs")" -ge 1 ]
	# Retried (--connect-timeout's default), a run that reaches the
	# standby connects again until it reaches the primary: the key is
	# held there, so every run ends 1.
	for i in $(seq 8); do
		rc=0
		timeout 60 "$PGLOCK" -v -h 127.0.0.1 -p "$PGB_PORT" -n twice-k touch "$BATS_TEST_TMPDIR/ran.$i" 2>>"$BATS_TEST_TMPDIR/retried.err" || rc=$?
		echo "$rc" >>"$BATS_TEST_TMPDIR/retried"
	done
	run cat "$BATS_TEST_TMPDIR/retried"
	assert_output "$(printf '1\n%.0s' $(seq 8))"
	# Each -v says it connects again (or, the standby's answer coming at
	# connection, that it retries), and nothing ran.
	grep -qE 'the server is a standby \(in recovery\), where an advisory lock excludes nobody(; connecting again|; retrying for up to)' "$BATS_TEST_TMPDIR/retried.err"
	run ls "$BATS_TEST_TMPDIR"
	refute_output --partial ran.
	# The load may have ended already (its -T).
	kill -TERM "$(bgpid load)" 2>/dev/null || true
	stop_pgbouncer
}

@test "a synchronous standby promoted while the old primary stays up: its holder is stopped, it grants no lock, its allocations are never confirmed" {
	p=$PGLOCK_TEST_DIR/sync-primary s=$PGLOCK_TEST_DIR/sync-standby
	CLEANUP="'$BATS_TEST_DIRNAME/pg.sh' stop '$s'; '$BATS_TEST_DIRNAME/pg.sh' stop '$p'"
	# pg.sh's servers commit with synchronous_commit = off: pglock's
	# allocations must not.
	sync_pair "$p" "$s"
	run -0 pg_on "$p" "$PGLOCK" --version-counter sync-t
	assert_output 1
	# A short lease throughout, should a server start's or a promotion's
	# lock-delay keep a new holder waiting for it.
	run -0 pg_on "$p" "$PGLOCK" --check-interval 0.2 --fence sync-k sh -c 'echo "$PGLOCK_FENCE"'
	assert_output 1
	wait_until 10 bash -c ". '$s/env'; [ \"\$(psql -XAtc \"SELECT count(*) FROM pglock_versions WHERE version = 1\")\" = 2 ]"
	# A holder, its lease renewed every second by a synchronous commit.
	bg holder env -u PGHOST -u PGPORT sh -c '. "$0/env"; exec "$1" --check-interval 1 sync-h sh -c "touch \"\$0\"; sleep 60" "$2"' "$p" "$PGLOCK" "$BATS_TEST_TMPDIR/held"
	wait_until 15 test -e "$BATS_TEST_TMPDIR/held"
	# The old primary keeps serving, cut off from its synchronous standby.
	pg_ctl -D "$s/data" -w promote >/dev/null
	bgwait holder 15
	[ "$bg_status" -eq 75 ]
	run cat "$BATS_TEST_TMPDIR/holder.err"
	assert_output "pglock: sync-h: lock lost while the command ran (the server did not answer the lock check within 1 s); the command was stopped"
	# Over TCP the grant is checked in its round trip: the check, not
	# answered there, keeps the command from running (-w bounds it).
	pport=$(pg_on "$p" printenv PGPORT)
	run -69 --separate-stderr timeout 20 "$PGLOCK" --check-interval 0.2 -h 127.0.0.1 -p "$pport" -w 2 sync-g touch "$BATS_TEST_TMPDIR/ran"
	[ "$stderr" = "pglock: sync-g: the server did not answer within 2s" ]
	bg counter env -u PGHOST -u PGPORT sh -c '. "$0/env"; exec "$1" --version-counter sync-t' "$p" "$PGLOCK"
	bg fence env -u PGHOST -u PGPORT sh -c '. "$0/env"; exec "$1" --check-interval 0.2 --fence sync-k touch "$2"' "$p" "$PGLOCK" "$BATS_TEST_TMPDIR/ran"
	bgwait counter 30
	[ "$bg_status" -eq 75 ]
	run cat "$BATS_TEST_TMPDIR/counter.err"
	assert_output "pglock: sync-t: the commit of version 2 is not confirmed (the server did not answer within 10 s): check with --peek"
	bgwait fence 30
	[ "$bg_status" -eq 69 ]
	run cat "$BATS_TEST_TMPDIR/fence.err"
	assert_output "pglock: sync-k: fence: the server did not answer within 10 s"
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	# The new primary hands out 2, once.
	run -0 pg_on "$s" "$PGLOCK" --version-counter sync-t
	assert_output 2
	run -0 pg_on "$s" "$PGLOCK" --check-interval 0.2 --fence sync-k sh -c 'echo "$PGLOCK_FENCE"'
	assert_output 2
}

@test "a synchronous standby promoted while the old primary serves on: a new holder there waits out the old holder's lease from its last renewal, its checkpoint done or not" {
	p=$PGLOCK_TEST_DIR/rp-primary s=$PGLOCK_TEST_DIR/rp-standby d=$BATS_TEST_TMPDIR
	CLEANUP="'$BATS_TEST_DIRNAME/pg.sh' stop '$s'; '$BATS_TEST_DIRNAME/pg.sh' stop '$p'"
	sync_pair "$p" "$s"
	sport=$(pg_on "$s" printenv PGPORT)
	old='trap "" TERM; echo $$ >"$0.pid"; while :; do echo old >>"$0"; sleep 0.05; done'
	new='s=$(cut -d" " -f3 "/proc/$(cat "$0.pid")/stat" 2>/dev/null); [ -n "$s" ] && [ "$s" != Z ] && echo "new, old alive" >>"$0" || echo "new, old dead" >>"$0"'
	# A lease of 8 s, renewed every 2 s by a synchronous commit: the old
	# command is KILLed 6 s after its last answered check (a margin for
	# valgrind's slow start of the new holder, which must still see it).
	bg old env -u PGHOST -u PGPORT sh -c '. "$0/env"; exec "$1" --check-interval 2 --kill-after 60 rp-k sh -c "$2" "$3"' "$p" "$PGLOCK" "$old" "$d/log"
	wait_until 20 test -s "$d/log"
	sleep 2.5
	# The old primary serves on, cut off from its synchronous standby; the
	# promoted server's first checkpoint is done at once: the promotion
	# itself leaves no trace but the last transaction it replayed.
	pg_ctl -D "$s/data" -w promote >/dev/null
	PGHOST=$s PGPORT=$sport run -0 psql -XAtqc CHECKPOINT
	PGHOST=$s PGPORT=$sport bg new pglock -v -w 30 --check-interval 2 rp-k sh -c "$new" "$d/log"
	bgwait old 30
	[ "$bg_status" -eq 75 ]
	bgwait new 30
	[ "$bg_status" -eq 0 ]
	[ "$(tail -n 1 "$d/log")" = "new, old dead" ]
	grep -Eq "^pglock: rp-k: lock-delay: the server replayed its last transaction in recovery [0-9.]+ s ago; waiting [0-9.]+s more" "$d/new.err"
}

@test "a transaction's lock through a TCP proxy, its synchronous standby promoted while the old primary serves on: renewed aside, the holder is stopped, a waiter granted there never runs" {
	p=$PGLOCK_TEST_DIR/ap-primary s=$PGLOCK_TEST_DIR/ap-standby d=$BATS_TEST_TMPDIR
	CLEANUP="'$BATS_TEST_DIRNAME/pg.sh' stop '$s'; '$BATS_TEST_DIRNAME/pg.sh' stop '$p'"
	sync_pair "$p" "$s"
	pport=$(pg_on "$p" printenv PGPORT)
	# A TCP proxy, as HAProxy is: the path is not proven direct, so the
	# lock is a transaction's, which commits nothing a standby confirms.
	mkdir "$d/proxy"
	bg proxy "$PYTHON" "$BATS_TEST_DIRNAME/alternate.py" "$d/proxy" "$p/.s.PGSQL.$pport"
	wait_until 10 test -s "$d/proxy/port"
	port=$(cat "$d/proxy/port")
	bg holder "$PGLOCK" -h 127.0.0.1 -p "$port" --check-interval 2 ap-k sh -c 'echo "$PGLOCK_SCOPE" >"$0"; sleep 60' "$d/held"
	wait_until 15 test -s "$d/held"
	[ "$(cat "$d/held")" = transaction ]
	bg waiter "$PGLOCK" -h 127.0.0.1 -p "$port" -w 30 --check-interval 2 ap-k touch "$d/ran"
	wait_until 10 bash -c ". '$p/env'; [ \"\$(psql -XAtc \"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted\")\" = 1 ]"
	# The old primary serves on, cut off from its synchronous standby.
	pg_ctl -D "$s/data" -w promote >/dev/null
	bgwait holder 15
	[ "$bg_status" -eq 75 ]
	run cat "$d/holder.err"
	assert_output "pglock: ap-k: lock lost while the command ran (the lease was not renewed within 2 s by a commit a synchronous standby confirmed: its commit was not confirmed in time (a primary cut off from its synchronous standbys?)); the command was stopped"
	# Granted there once the holder is gone: its gate is a renewal too.
	bgwait waiter 30
	[ "$bg_status" -eq 75 ]
	run cat "$d/waiter.err"
	assert_output "pglock: ap-k: lock lost before the command started (the lease was not renewed within 2 s by a commit a synchronous standby confirmed: its commit was not confirmed in time (a primary cut off from its synchronous standbys?)); the command did not run"
	# Granted at once, as fresh as a grant gets, is renewed all the same
	# (a transaction's lock by choice: auto's proof there, over TCP, asks
	# what a session's check asks, and waits for its commit, within -w).
	run -75 --separate-stderr timeout 20 "$PGLOCK" --scope transaction -h 127.0.0.1 -p "$port" --check-interval 2 ap-k touch "$d/ran"
	assert_equal "$stderr" "pglock: ap-k: lock lost before the command started (the lease was not renewed within 2 s by a commit a synchronous standby confirmed: its commit was not confirmed in time (a primary cut off from its synchronous standbys?)); the command did not run"
	[ ! -e "$d/ran" ]
	# No renewal's server process is left waiting for the standby.
	wait_until 10 bash -c ". '$p/env'; [ \"\$(psql -XAtc \"SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'\")\" = 0 ]"
}

@test "--require-sync: where the server's standbys are all asynchronous, no number is handed out (69, rolled back, nothing run); with a synchronous one, or none, it is" {
	# SB streams from the suite's server, asynchronously.
	wait_until 10 bash -c '[ "$(psql -XAtc "SELECT count(*) FROM pg_stat_replication")" -ge 1 ]'
	msg="the server has standbys, none of them synchronous: a failover could hand the number out again (--require-sync)"
	run -69 --separate-stderr timeout 20 "$PGLOCK" --require-sync --version-counter rs-t touch "$BATS_TEST_TMPDIR/ran"
	assert_equal "$stderr" "pglock: rs-t: $msg"
	run -69 --separate-stderr timeout 20 "$PGLOCK" --require-sync --version-counter rs-t
	assert_equal "$output" ""
	run -69 --separate-stderr timeout 20 "$PGLOCK" --require-sync --fence rs-k touch "$BATS_TEST_TMPDIR/ran"
	assert_equal "$stderr" "pglock: rs-k: $msg"
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	free "$(sha_id rs-k)"
	# Nothing was allocated; without the option, the first number.
	run -0 timeout 20 "$PGLOCK" --version-counter --peek rs-t
	assert_output 0
	run -0 timeout 20 "$PGLOCK" --version-counter rs-t
	assert_output 1
	# A synchronous standby: the next number, and a fence.
	CLEANUP="sql 'ALTER SYSTEM RESET synchronous_standby_names'; sql 'SELECT pg_reload_conf()'"
	sql "ALTER SYSTEM SET synchronous_standby_names = '*'" >/dev/null
	sql "SELECT pg_reload_conf()" >/dev/null
	wait_until 10 bash -c '[ "$(psql -XAtc "SELECT sync_state FROM pg_stat_replication")" = sync ]'
	run -0 timeout 20 "$PGLOCK" --require-sync --version-counter rs-t
	assert_output 2
	run -0 timeout 20 "$PGLOCK" --require-sync --fence rs-k sh -c 'echo "$PGLOCK_FENCE"'
	assert_output 1
	sql 'ALTER SYSTEM RESET synchronous_standby_names' >/dev/null
	sql 'SELECT pg_reload_conf()' >/dev/null
	wait_until 10 bash -c '[ "$(psql -XAtc "SELECT sync_state FROM pg_stat_replication")" = async ]'
	# No standby at all: nothing a failover could promote.
	own_server
	run -0 timeout 20 "$PGLOCK" --require-sync --version-counter rs-t
	assert_output 1
}

@test "--fence under --scope transaction, its own connection routed by a proxy to another server than the lock's, each time: taken again for --connect-timeout, then 69 before COMMAND, no number there" {
	ahost=$PGHOST aport=$PGPORT a="$PGHOST/.s.PGSQL.$PGPORT"
	own_server
	b="$OWN/.s.PGSQL.$PGPORT"
	d=$BATS_TEST_TMPDIR
	mkdir "$d/split" "$d/same"
	# Each new connection to the next server in turn; or both to one.
	bg split "$PYTHON" "$BATS_TEST_DIRNAME/alternate.py" "$d/split" "$a" "$b"
	bg same "$PYTHON" "$BATS_TEST_DIRNAME/alternate.py" "$d/same" "$a" "$a"
	wait_until 10 test -s "$d/split/port"
	wait_until 10 test -s "$d/same/port"
	for i in 1 2; do
		run -69 --separate-stderr timeout 20 "$PGLOCK" -h 127.0.0.1 -p "$(cat "$d/split/port")" --connect-timeout 2 --scope transaction --fence fx-k touch "$d/ran"
		assert_equal "$stderr" "pglock: fx-k: fence: its connection reached another server than the lock's (through a proxy?): a number there fences nothing (retried for 2.0s: --connect-timeout)"
	done
	# Within -w, not --connect-timeout, when -w is given.
	run -69 --separate-stderr timeout 20 "$PGLOCK" -h 127.0.0.1 -p "$(cat "$d/split/port")" -w 2 --scope transaction --fence fx-k touch "$d/ran"
	assert_equal "$stderr" "pglock: fx-k: fence: its connection reached another server than the lock's (through a proxy?): a number there fences nothing"
	[ ! -e "$d/ran" ]
	# The other server (libpq's environment now) kept no number: the
	# allocation there was rolled back.
	[ "$(sql "SELECT count(*) FROM pglock_versions")" = 0 ]
	run -0 timeout 20 "$PGLOCK" -h 127.0.0.1 -p "$(cat "$d/same/port")" --scope transaction --fence fx-k sh -c 'echo "$PGLOCK_FENCE"'
	fence=$output
	[ "$fence" -ge 1 ]
	run -0 psql -h "$ahost" -p "$aport" -XAtc "SELECT version FROM pglock_versions WHERE tenant = 'pglock-fence:fx-k'"
	assert_output "$fence"
}

@test "--fence whose connection reaches the new server while the lock's is on the old (a failover a proxy follows): lock and fence are taken again there within -w, the command runs with the new server's fence, and the old server's lock and number are let go" {
	ahost=$PGHOST aport=$PGPORT a="$PGHOST/.s.PGSQL.$PGPORT"
	own_server
	b="$OWN/.s.PGSQL.$PGPORT"
	d=$BATS_TEST_TMPDIR
	mkdir "$d/switch"
	# The first connection to the old server, every later one to the new.
	bg switch "$PYTHON" "$BATS_TEST_DIRNAME/alternate.py" "$d/switch" "$a" "$b" "$b" "$b" "$b" "$b" "$b" "$b" "$b" "$b" "$b" "$b"
	wait_until 10 test -s "$d/switch/port"
	run -0 --separate-stderr timeout 30 "$PGLOCK" -v -h 127.0.0.1 -p "$(cat "$d/switch/port")" -w 20 --scope transaction --fence fo-k sh -c 'echo "$PGLOCK_FENCE $PGLOCK_BACKEND_PID"'
	read -r fence pid <<<"$output"
	[[ $stderr == *"pglock: fo-k: fence: its connection reached another server than the lock's (through a proxy?): a number there fences nothing; connecting again"* ]]
	# The fence is the new server's (libpq's environment now), its
	# first; the command's lock was the new server's process.
	[ "$fence" = 1 ]
	[ "$(sql "SELECT version FROM pglock_versions WHERE tenant = 'pglock-fence:fo-k'")" = 1 ]
	# The old server holds no lock of it once the first session is gone.
	id=$(sha_id fo-k)
	wait_until 5 bash -c "[ \"\$(psql -h '$ahost' -p '$aport' -XAtc \"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND ((classid::bigint << 32) | objid::bigint) = $id\")\" = 0 ]"
}
