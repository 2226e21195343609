#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Never on a standby: a streaming standby of the suite's server, a host
# list that names it first, and a failover of a pair the test owns.

load helper

setup_file() {
	export SB=$PGLOCK_TEST_DIR/standby
	"$BATS_TEST_DIRNAME/pg.sh" standby "$SB" "$PGHOST"
}

teardown_file() {
	"$BATS_TEST_DIRNAME/pg.sh" stop "$SB"
}

pg_ctl() { runuser -u postgres -- "$PGLOCK_TEST_PGBIN/pg_ctl" "$@"; }

@test "a standby is refused with 69 before the command runs" {
	[ "$(pg_on "$SB" sql 'SELECT pg_is_in_recovery()')" = t ]
	sport=$(pg_on "$SB" printenv PGPORT)
	run -69 --separate-stderr timeout 20 "$PGLOCK" --connect-timeout 0 -h "$SB" -p "$sport" sb-k touch "$BATS_TEST_TMPDIR/ran"
	[ "$stderr" = "pglock: connection to server on socket \"$SB/.s.PGSQL.$sport\" failed: server is in hot standby mode" ]
	# Where the user asks libpq for any server, pglock still refuses.
	PGTARGETSESSIONATTRS=any run -69 --separate-stderr timeout 20 "$PGLOCK" -h "$SB" -p "$sport" sb-k touch "$BATS_TEST_TMPDIR/ran"
	[ "$stderr" = "pglock: $SB:$sport: the server is a standby (in recovery), where an advisory lock excludes nobody" ]
	run -69 --separate-stderr timeout 20 "$PGLOCK" -d "host=$SB port=$sport target_session_attrs=any" sb-k touch "$BATS_TEST_TMPDIR/ran"
	[ "$stderr" = "pglock: $SB:$sport: the server is a standby (in recovery), where an advisory lock excludes nobody" ]
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	[ -z "$(pg_on "$SB" sql "SELECT 1 FROM pg_locks WHERE locktype = 'advisory'")" ]
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
	"$BATS_TEST_DIRNAME/pg.sh" start "$p"
	"$BATS_TEST_DIRNAME/pg.sh" standby "$s" "$p"
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
	"$BATS_TEST_DIRNAME/pg.sh" start "$p"
	pport=$(pg_on "$p" printenv PGPORT)
	# The promoted server's first checkpoint, paced over up to 27 s, has
	# a table's pages to write: the lock-delay sees the promotion while
	# pg_control is still on the old timeline.
	pg_on "$p" sql "ALTER SYSTEM SET checkpoint_timeout = '30s'"
	"$BATS_TEST_DIRNAME/pg.sh" standby "$s" "$p"
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

@test "PgBouncer over a primary,standby host list never grants two exclusive holders" {
	# PgBouncer takes one port for its host list: a standby of the
	# primary's port number, in a socket directory of its own.
	SB2=$PGLOCK_TEST_DIR/standby2
	PG_PORT=$PGPORT PG_UNIX_ONLY=1 "$BATS_TEST_DIRNAME/pg.sh" standby "$SB2" "$PGHOST"
	CLEANUP="'$BATS_TEST_DIRNAME/pg.sh' stop '$SB2'"
	start_pgbouncer transaction 127.0.0.1 "host=$PGHOST,$SB2 port=$PGPORT"
	# A busy pool, with server connections to both: a client's next
	# transaction may land on either.
	echo 'SELECT 1;' >"$BATS_TEST_TMPDIR/one.sql"
	bg load timeout 120 "$PGLOCK_TEST_PGBIN/pgbench" -n -h 127.0.0.1 -p "$PGB_PORT" -f "$BATS_TEST_TMPDIR/one.sql" -c 8 -T 110 postgres
	bg holder pglock twice-k sleep 120
	wait_until 10 held "$(sha_id twice-k)"
	# Each run lands on the standby about 2 times in 3: 10 runs (under
	# valgrind, each some seconds) miss it 1 time in 30,000.
	runs=20
	[ -z "${PGLOCK_VG_DIR:-}" ] || runs=10
	for i in $(seq "$runs"); do
		rc=0
		timeout 20 "$PGLOCK" -q -h 127.0.0.1 -p "$PGB_PORT" -n twice-k touch "$BATS_TEST_TMPDIR/ran.$i" 2>"$BATS_TEST_TMPDIR/err.$i" || rc=$?
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
	# The load may have ended already (its -T).
	kill -TERM "$(bgpid load)" 2>/dev/null || true
	stop_pgbouncer
}
