#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Connection storms and servers that cannot answer, against a server of
# the test's own: 300 clients at once against max_connections = 200 (the
# suite's server has 120). Under valgrind or ASan, where each client costs
# far more, 30 against 20: still a storm, with a tenth of the processes.

load helper

if [ -n "${PGLOCK_VG_DIR:-}" ] || [ -n "${ASAN_OPTIONS:-}" ]; then
	MAXCONN=20 CLIENTS=30
else
	MAXCONN=200 CLIENTS=300
fi

setup_file() {
	export STORM=$PGLOCK_TEST_DIR/storm
	PG_MAX_CONNECTIONS=$MAXCONN pg_sh start "$STORM"
}

teardown_file() {
	"$BATS_TEST_DIRNAME/pg.sh" stop "$STORM"
}

# ms since the epoch
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# storm N ARGS...: N pglocks at once against the storm server, each
# running a critical section that notes any overlap; $ok, $codes.
storm() {
	local n=$1 i
	shift
	d=$BATS_TEST_TMPDIR
	echo 0 >"$d/n"
	for i in $(seq "$n"); do
		pg_on "$STORM" timeout 120 "$PGLOCK" "$@" storm-k sh -c '
		    mkdir "$0/in" || echo overlap >>"$0/bad"
		    n=$(cat "$0/n"); echo $((n + 1)) >"$0/n"
		    rmdir "$0/in"' "$d" 2>"$d/err.$i" &
	done
	ok=0 codes=
	for i in $(seq "$n"); do
		s=0
		wait -n || s=$?
		[ "$s" -eq 0 ] && ok=$((ok + 1)) || codes="$codes $s"
	done
}

@test "$CLIENTS blocking clients at once against max_connections = $MAXCONN all run, none overlapping" {
	[ "$(pg_on "$STORM" sql 'SHOW max_connections')" -eq "$MAXCONN" ]
	# Past the start's lock-delay: the storms' tests, and only they, take
	# the lock (a mutant's run of one of the others waits for none).
	pg_on "$STORM" settle
	storm "$CLIENTS"
	echo "ran $ok; other exit codes:${codes:- none}" >&3
	[ -z "$codes" ] || { sort -u "$BATS_TEST_TMPDIR"/err.* | head; false; }
	[ "$ok" -eq "$CLIENTS" ]
	[ ! -e "$BATS_TEST_TMPDIR/bad" ]
	[ "$(cat "$BATS_TEST_TMPDIR/n")" -eq "$CLIENTS" ]
}

@test "$CLIENTS -n clients at once against max_connections = $MAXCONN: each runs or is told the lock is held, none gets 69" {
	pg_on "$STORM" settle
	storm "$CLIENTS" -n
	echo "ran $ok; $(echo "$codes" | wc -w) told the lock is held" >&3
	[ "$ok" -ge 1 ]
	[ -z "$(echo "$codes" | tr ' ' '\n' | grep -vx '1' | grep .)" ]
	[ ! -e "$BATS_TEST_TMPDIR/bad" ]
	[ "$(cat "$BATS_TEST_TMPDIR/n")" -eq "$ok" ]
}

@test "a frozen server with -w 2: exit 69 within 4 s, saying it did not answer" {
	pm=$(head -n 1 "$STORM/data/postmaster.pid")
	CLEANUP="kill -CONT $pm"
	kill -STOP "$pm"
	start=$(now_ms)
	run -69 --separate-stderr pg_on "$STORM" timeout 20 "$PGLOCK" -w 2 frozen-k touch "$BATS_TEST_TMPDIR/ran"
	elapsed=$(( $(now_ms) - start ))
	kill -CONT "$pm"
	echo "exit after $elapsed ms" >&3
	[ "$elapsed" -ge 1900 ]
	[ "$elapsed" -lt 4000 ]
	[ "$stderr" = "pglock: server $STORM port $(pg_on "$STORM" printenv PGPORT) did not answer in time (timeout expired)" ]
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "a frozen server with -n: exit 69 after 10 s, not --connect-timeout's 30, saying it did not answer" {
	pm=$(head -n 1 "$STORM/data/postmaster.pid")
	CLEANUP="kill -CONT $pm"
	kill -STOP "$pm"
	start=$(now_ms)
	run -69 --separate-stderr pg_on "$STORM" timeout 25 "$PGLOCK" -n frozen-k touch "$BATS_TEST_TMPDIR/ran"
	elapsed=$(( $(now_ms) - start ))
	kill -CONT "$pm"
	echo "exit after $elapsed ms" >&3
	[ "$elapsed" -ge 9500 ]
	[ "$elapsed" -lt 20000 ]
	[ "$stderr" = "pglock: server $STORM port $(pg_on "$STORM" printenv PGPORT) did not answer in time (timeout expired)" ]
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "a refused connection is retried until --connect-timeout, then 69 with the reason" {
	start=$(now_ms)
	run -69 --separate-stderr timeout 20 "$PGLOCK" --connect-timeout 1.5 -h 127.0.0.1 -p 1 k true
	elapsed=$(( $(now_ms) - start ))
	[ "$elapsed" -ge 1000 ]
	[ "$elapsed" -lt 4000 ]
	[[ "$stderr" =~ ^'pglock: connection to server at "127.0.0.1", port 1 failed: Connection refused; Is the server running on that host and accepting TCP/IP connections? (gave up after '[0-9]+' attempts in 1.'[0-9]s\)$ ]]
	# Once with --connect-timeout 0: no "gave up after N attempts".
	run -69 --separate-stderr timeout 20 "$PGLOCK" --connect-timeout 0 -h 127.0.0.1 -p 1 k true
	[ "$stderr" = 'pglock: connection to server at "127.0.0.1", port 1 failed: Connection refused; Is the server running on that host and accepting TCP/IP connections?' ]
}

@test "-v says at the first refused attempt that it retries, and how long for; without -v (stderr not a terminal) only the last line" {
	bg retry pglock -v --connect-timeout 20 -h 127.0.0.1 -p 1 k true
	# Said while it still retries, not after the 20 s.
	wait_until 10 grep -q . "$BATS_TEST_TMPDIR/retry.err"
	kill -TERM "$(bgpid retry)"
	bgwait retry
	[[ "$(head -n 1 "$BATS_TEST_TMPDIR/retry.err")" =~ ^'pglock: connection to server at "127.0.0.1", port 1 failed: Connection refused; Is the server running on that host and accepting TCP/IP connections?; retrying for up to '(20.0|19.9)'s (--connect-timeout)'$ ]]
	run -69 --separate-stderr timeout 20 "$PGLOCK" --connect-timeout 1 -h 127.0.0.1 -p 1 k true
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" == *"(gave up after "* ]]
}

@test "stderr a terminal, without -v: at the first refused attempt it says that it retries, and how long for; with -q only the last line" {
	command -v script >/dev/null || skip "script(1) is not installed"
	refused='pglock: connection to server at "127.0.0.1", port 1 failed: Connection refused; Is the server running on that host and accepting TCP/IP connections?'
	bg tty script -qec "$PGLOCK --connect-timeout 5 -h 127.0.0.1 -p 1 k true" /dev/null
	# Said while it still retries, not after the 5 s.
	wait_until 10 grep -q retrying "$BATS_TEST_TMPDIR/tty.out"
	run ! gone "$(bgpid tty)"
	bgwait tty 20
	[ "$bg_status" -eq 69 ]
	run -0 tr -d '\r' <"$BATS_TEST_TMPDIR/tty.out"
	[ "${#lines[@]}" -eq 2 ]
	[[ "${lines[0]}" =~ ^"$refused; retrying for up to "(5.0|4.9)'s (--connect-timeout)'$ ]]
	[[ "${lines[1]}" =~ ^"$refused (gave up after "[0-9]+' attempts in '[45].[0-9]'s)'$ ]]
	run -69 timeout 20 script -qec "$PGLOCK -q --connect-timeout 1 -h 127.0.0.1 -p 1 k true" /dev/null
	output=${output//$'\r'/}
	[[ "$output" =~ ^"$refused (gave up after "[0-9]+' attempts in '[01].[0-9]'s)'$ ]]
}

@test "a host name that cannot exist is not retried: 69 at once, with libpq's reason" {
	# .invalid never resolves (RFC 6761); with no resolver to reach,
	# libpq says so as soon (a temporary failure, not retried either).
	start=$(now_ms)
	run -69 --separate-stderr env RES_OPTIONS='timeout:1 attempts:1' timeout 10 "$PGLOCK" -v --connect-timeout 20 -h no-such-host.invalid k true
	elapsed=$(( $(now_ms) - start ))
	echo "exit after $elapsed ms" >&3
	[ "$elapsed" -lt 5000 ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" =~ ^'pglock: could not translate host name "no-such-host.invalid" to address: '(Name or service not known|Temporary failure in name resolution)$ ]]
}

@test "a socket directory that does not exist is not retried: 69 at once, saying so" {
	run -69 --separate-stderr timeout 10 "$PGLOCK" --connect-timeout 60 -h "$BATS_TEST_TMPDIR/no-such-dir" k true
	[[ "$stderr" == 'pglock: connection to server on socket "'"$BATS_TEST_TMPDIR"'/no-such-dir/.s.PGSQL.'*'" failed: No such file or directory; '*' (no such socket directory)' ]]
	# A directory that exists, without the socket (a restart), is retried.
	run -69 --separate-stderr timeout 10 "$PGLOCK" --connect-timeout 1 -h "$BATS_TEST_TMPDIR" -p 1 k true
	[[ "$stderr" == *"(gave up after "* ]]
}

@test "-w bounds connection retries too" {
	# Given up by -w's second (by pglock's own clock), not after
	# --connect-timeout's default 30 s.
	run -69 --separate-stderr timeout 20 "$PGLOCK" -w 1 -h 127.0.0.1 -p 1 k true
	[[ "$stderr" =~ '(gave up after '[0-9]+' attempts in '[01]'.'[0-9]'s)'$ ]]
}

@test "a server that is starting up is waited for: the job runs once it accepts connections" {
	pg_on "$STORM" runuser -u postgres -- "$PGLOCK_TEST_PGBIN/pg_ctl" -D "$STORM/data" -m fast -w stop >/dev/null
	CLEANUP="pg_on '$STORM' runuser -u postgres -- '$PGLOCK_TEST_PGBIN/pg_ctl' -D '$STORM/data' -l '$STORM/log' -w start"
	# It starts after the start's lock-delay, --check-interval 1's lease.
	bg job env PGHOST="$STORM" PGPORT="$(pg_on "$STORM" printenv PGPORT)" "$PGLOCK" --check-interval 1 startup-k echo ran
	sleep 1		# not to synchronise: a second of refusals for the job
	pg_on "$STORM" runuser -u postgres -- "$PGLOCK_TEST_PGBIN/pg_ctl" -D "$STORM/data" -l "$STORM/log" -w start >/dev/null
	bgwait job 30
	[ "$bg_status" -eq 0 ]
	[ "$(cat "$BATS_TEST_TMPDIR/job.out")" = ran ]
}

@test "an authentication failure is not retried" {
	start=$(now_ms)
	run -69 --separate-stderr timeout 20 "$PGLOCK" -U no_such_role k true
	[ $(( $(now_ms) - start )) -lt 2000 ]
	[[ "$stderr" == *'role "no_such_role" does not exist' ]]
}
