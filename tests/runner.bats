#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The lock runner: pglock KEY COMMAND against a real server (issue: "pglock
# KEY COMMAND"). One behaviour per test.

load helper

@test "pglock K true exits 0 and prints nothing" {
	run -0 --separate-stderr pglock k-true true
	assert_output ''
	[ -z "$stderr" ]
}

@test "the command's exit status passes through" {
	run -7 pglock k-exit sh -c 'exit 7'
}

@test "a command killed by signal N gives 128+N" {
	run -143 pglock k-sig sh -c 'kill -TERM $$'
	run -137 pglock k-sig sh -c 'kill -KILL $$'
}

@test "-n exits 1 without running the command when another session holds the key" {
	bg holder pglock busy sleep 60
	wait_until 10 held "$(sha_id busy)"
	run -1 --separate-stderr pglock -n busy touch "$BATS_TEST_TMPDIR/ran"
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	assert_output ''
	holder=$(locks_on "$(sha_id busy)" | cut -d: -f2)
	[[ "$stderr" =~ ^"pglock: busy: the lock is held by server pid $holder (pglock: busy, local, user postgres, for "[0-9]+"s)"$ ]]
}

@test "-E 42 sets the conflict exit code" {
	bg holder pglock busy sleep 60
	wait_until 10 held "$(sha_id busy)"
	run -42 pglock -E 42 -n busy true
}

@test "-q silences the conflict message" {
	bg holder pglock busy sleep 60
	wait_until 10 held "$(sha_id busy)"
	run -1 --separate-stderr pglock -q -n busy true
	[ -z "$stderr" ]
}

@test "-w 0.5 gives up after about half a second with the conflict code" {
	bg holder pglock busy sleep 60
	wait_until 10 held "$(sha_id busy)"
	# Under valgrind (make valgrind) start-up alone takes seconds, and -w
	# bounds connecting too (a busy CI machine once took more than 0.5 s).
	w=0.5 least=500 limit=2000
	[ -z "${PGLOCK_VG_DIR:-}" ] || w=5 least=5000 limit=30000
	start=$(date +%s%N)
	run -1 --separate-stderr pglock -w "$w" busy touch "$BATS_TEST_TMPDIR/ran"
	ms=$(( ($(date +%s%N) - start) / 1000000 ))
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	[[ "$stderr" =~ ^"pglock: busy: timed out after ${w}s waiting for the lock, held by server pid "[0-9]+" (pglock: busy, local, user postgres, for "[0-9]+"s)"$ ]]
	[ "$ms" -ge "$least" ]
	[ "$ms" -lt "$limit" ]
	# The waiter left the queue: only the holder remains.
	[ "$(locks_on "$(sha_id busy)" | wc -l)" -eq 1 ]
}

@test "-w 0 behaves like -n" {
	bg holder pglock busy sleep 60
	wait_until 10 held "$(sha_id busy)"
	run -1 --separate-stderr pglock -w 0 busy true
	[[ "$stderr" == "pglock: busy: the lock is held by server pid "*" (pglock: busy, local, user postgres, for "*"s)" ]]
}

@test "-w 5 succeeds once the holder releases" {
	# The fifo first: a holder faster than this shell would find none.
	mkfifo "$BATS_TEST_TMPDIR/fifo"
	bg holder pglock busy sh -c 'read x <"$0"' "$BATS_TEST_TMPDIR/fifo"
	wait_until 10 held "$(sha_id busy)"
	bg waiter pglock -w 5 busy sh -c 'echo got >"$0"' "$BATS_TEST_TMPDIR/got"
	wait_until 10 waiting "$(sha_id busy)"
	[ ! -e "$BATS_TEST_TMPDIR/got" ]
	fifo_go "$BATS_TEST_TMPDIR/fifo"
	bgwait waiter 10
	[ "$bg_status" -eq 0 ]
	[ "$(cat "$BATS_TEST_TMPDIR/got")" = got ]
}

@test "two -s holders run at once" {
	bg s1 pglock -s shared-k sleep 60
	wait_until 10 held "$(sha_id shared-k)"
	# Holders' locks, not their witnesses' (each keeps one, shared).
	q="SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE l.locktype = 'advisory' AND l.granted AND l.mode = 'ShareLock' AND a.application_name <> 'pglock witness'"
	run -0 pglock -s -n shared-k psql -XAtc "$q"
	assert_output 2
}

@test "-x -n fails while a -s holder runs" {
	bg s1 pglock -s shared-k sleep 60
	wait_until 10 held "$(sha_id shared-k)"
	run -1 pglock -x -n shared-k true
	run -1 pglock -n shared-k true
}

@test "the last of -s and -x wins" {
	run -0 pglock -s -x mode-k sh -c 'echo $PGLOCK_MODE'
	assert_output exclusive
	run -0 pglock -x -s mode-k sh -c 'echo $PGLOCK_MODE'
	assert_output shared
}

@test "a psql session holding the documented SQL id blocks pglock -n deploy" {
	bg psql psql -XAtq -c "SELECT pg_advisory_lock(('x'||left(encode(sha256(convert_to('deploy','UTF8')),'hex'),16))::bit(64)::bigint)" -c "SELECT pg_sleep(60)"
	wait_until 10 held -5206911306292520180
	run -1 pglock -n deploy true
}

@test "--id 42 interlocks with pg_advisory_lock(42)" {
	bg psql psql -XAtq -c "SELECT pg_advisory_lock(42)" -c "SELECT pg_sleep(60)"
	wait_until 10 held 42
	run -1 pglock --id -n 42 true
	run -1 pglock -n --id 42 true
	run -0 pglock -n --id 43 true
}

@test "--id 1,2 interlocks with pg_advisory_lock(1,2) and not with bigint ids" {
	bg psql psql -XAtq -c "SELECT pg_advisory_lock(1, 2)" -c "SELECT pg_sleep(60)"
	wait_until 10 bash -c '[ "$(psql -XAtc "SELECT count(*) FROM pg_locks WHERE locktype = '"'advisory'"' AND objsubid = 2 AND classid = 1 AND objid = 2 AND granted")" = 1 ]'
	run -1 pglock -n --id 1,2 true
	# objid 2 in classid 1 as a bigint is 4294967298: the other key space.
	run -0 pglock -n --id 4294967298 true
}

@test "inside the command the lock is granted to PGLOCK_BACKEND_PID; after it, gone" {
	id=$(sha_id visible)
	run -0 pglock visible sh -c 'echo "$PGLOCK_BACKEND_PID"; psql -XAtc "SELECT CASE WHEN granted THEN '"'t'"' ELSE '"'f'"' END || '"':'"' || pid FROM pg_locks WHERE locktype = '"'advisory'"' AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) = $PGLOCK_ID"'
	[ "${lines[1]}" = "t:${lines[0]}" ]
	[ "${#lines[@]}" -eq 2 ]
	free "$id"
}

@test "the command gets PGLOCK_KEY, PGLOCK_ID and PGLOCK_MODE" {
	run -0 pglock 'env k' sh -c 'printf "%s|%s|%s\n" "$PGLOCK_KEY" "$PGLOCK_ID" "$PGLOCK_MODE"'
	assert_output "env k|$(sha_id 'env k')|exclusive"
	run -0 pglock -s --id 7,-8 sh -c 'printf "%s|%s\n" "$PGLOCK_ID" "$PGLOCK_MODE"'
	assert_output "7,-8|shared"
}

@test "stdin, stdout and stderr reach the command untouched" {
	run -0 --separate-stderr pglock io sh -c 'cat; echo err >&2' <<<"hello"
	assert_output hello
	[ "$stderr" = err ]
}

@test "the database connection is not inherited by the command" {
	run -0 pglock fds sh -c 'ls -l /proc/$$/fd 2>/dev/null | grep -c socket || true'
	assert_output 0
}

@test "8 workers x 25 runs of a non-atomic increment end at exactly 200" {
	# Under valgrind a run takes a second or more: as many workers, 2 runs.
	runs=25
	[ -z "${PGLOCK_VG_DIR:-}" ] || runs=2
	echo 0 >"$BATS_TEST_TMPDIR/n"
	for w in 1 2 3 4 5 6 7 8; do
		(for i in $(seq "$runs"); do
			"$PGLOCK" counter sh -c 'n=$(cat "$0"); sleep 0.001; echo $((n + 1)) >"$0"' "$BATS_TEST_TMPDIR/n" || exit 1
		done) &
	done
	fail=0
	for w in 1 2 3 4 5 6 7 8; do wait -n || fail=1; done
	[ "$fail" -eq 0 ]
	[ "$(cat "$BATS_TEST_TMPDIR/n")" -eq $((8 * runs)) ]
}

@test "-c runs a shell command with \$SHELL" {
	SHELL=/bin/bash run -0 pglock shk -c 'echo "$0" "$PGLOCK_KEY"'
	assert_output "/bin/bash shk"
	SHELL=/bin/sh run -3 pglock shk -c 'exit 3'
	SHELL= run -0 pglock shk -c 'echo $0'
	assert_output /bin/sh
	run -0 env -u SHELL "$PGLOCK" shk -c 'echo $0'
	assert_output /bin/sh
	run -0 pglock -c 'echo before' shk
	assert_output before
}

@test "a missing \$SHELL gives 127 and an unexecutable one 126" {
	SHELL=/nonexistent/sh run -127 --separate-stderr pglock shk -c true
	[ "$stderr" = "pglock: /nonexistent/sh: No such file or directory" ]
	SHELL=/etc/passwd run -126 pglock shk -c true
}

@test "a missing command gives 127, an unexecutable one 126, both release the lock" {
	run -127 --separate-stderr pglock nocmd /nonexistent/cmd
	[ "$stderr" = "pglock: /nonexistent/cmd: No such file or directory" ]
	run -127 pglock nocmd no-such-command-anywhere
	run -126 pglock nocmd /etc/passwd
	free "$(sha_id nocmd)"
}

@test "an option given after KEY is taken for COMMAND: 127, and the message says options go before KEY (TENANT), with -F too" {
	run -127 --separate-stderr pglock after-k -v ./report.sh
	[ "$stderr" = "pglock: -v: No such file or directory (options go before KEY)" ]
	run -127 --separate-stderr pglock -F after-k --json
	[ "$stderr" = "pglock: --json: No such file or directory (options go before KEY)" ]
	run -127 --separate-stderr pglock --version-counter after-t --peek
	[ "$stderr" = "pglock: --peek: No such file or directory (options go before TENANT)" ]
	run -0 pglock --version-counter --peek after-t
	assert_output 0
	free "$(sha_id after-k)"
}

@test "a KEY with a space left unquoted: its second word taken for COMMAND, not found: 127, and the line says how the command line was read; not for a path, -c or a lone word" {
	run -127 --separate-stderr pglock nightly backup ./backup.sh
	assert_equal "$stderr" "pglock: backup: No such file or directory (read as KEY 'nightly' and COMMAND 'backup ...': quote a KEY that has a space)"
	run -127 --separate-stderr pglock -F nightly backup ./backup.sh
	assert_equal "$stderr" "pglock: backup: No such file or directory (read as KEY 'nightly' and COMMAND 'backup ...': quote a KEY that has a space)"
	run -127 --separate-stderr pglock --version-counter build ids echo
	assert_equal "$stderr" "pglock: ids: No such file or directory (read as TENANT 'build' and COMMAND 'ids ...': quote a TENANT that has a space)"
	run -127 --separate-stderr pglock nightly ./no-such.sh x
	assert_equal "$stderr" "pglock: ./no-such.sh: No such file or directory"
	run -127 --separate-stderr pglock nightly no-such
	assert_equal "$stderr" "pglock: no-such: No such file or directory"
	run -0 pglock "nightly backup" true
}

@test "keys with quotes, semicolons, newlines, UTF-8 or 100 KB work" {
	for k in "it's \"quoted\"" "a; DROP TABLE x; --" $'line1\nline2' 'ключ-é-✓'; do
		run -0 pglock "$k" sh -c 'printf %s "$PGLOCK_KEY"'
		[ "$output" = "$k" ]
		run -0 pglock "$k" sh -c 'echo $PGLOCK_ID'
		[ "$output" = "$(echo "SELECT ('x' || left(encode(sha256(convert_to(:'k', 'UTF8')), 'hex'), 16))::bit(64)::bigint" | psql -XAt -v k="$k")" ]
	done
	big=$(head -c 102400 /dev/zero | tr '\0' 'k')
	run -0 pglock "$big" sh -c 'echo ${#PGLOCK_KEY}'
	assert_output 102400
}

@test "a key with control bytes stays one line in messages, raw in PGLOCK_KEY" {
	k=$'two\nlines\tand\001'
	run -0 --separate-stderr pglock -v "$k" sh -c 'printf %s "$PGLOCK_KEY"'
	[ "$output" = "$k" ]
	[ "${#stderr_lines[@]}" -eq 2 ]
	[[ "${stderr_lines[0]}" == 'pglock: two\nlines\tand\x01: acquired after '* ]]
	run -0 pglock --explain "$k"
	assert_line 'key	two\nlines\tand\x01'
}

@test "a database with idle_session_timeout = 1s does not break pglock K sleep 3" {
	sql "CREATE DATABASE idle_db"
	sql "ALTER DATABASE idle_db SET idle_session_timeout = '1s'"
	# The default check interval (5 s): the session really idles.
	run -0 pglock -d idle_db idle-k sleep 3
	sql "DROP DATABASE idle_db"
}

@test "a lock check still in flight when the command exits does not fail the release" {
	# The command stops its server process and exits: the check sent
	# meanwhile (every 0.05 s) is unanswered at the exit, and answered
	# once the test lets the process go on, within the answer bound (1 s).
	# Should the test fail first, teardown lets it go on.
	CLEANUP="kill -CONT \$(cat '$BATS_TEST_TMPDIR/pid')"
	for scope in session transaction; do
		rm -f "$BATS_TEST_TMPDIR/pid"
		bg cont sh -c 'until [ -s "$0" ]; do sleep 0.01; done; sleep 0.4; kill -CONT "$(cat "$0")"' "$BATS_TEST_TMPDIR/pid"
		run -0 timeout 20 "$PGLOCK" --scope "$scope" --check-interval 0.05 inflight-k \
		    sh -c 'kill -STOP "$PGLOCK_BACKEND_PID"; echo "$PGLOCK_BACKEND_PID" >"$0.tmp"; mv "$0.tmp" "$0"; sleep 0.2' \
		    "$BATS_TEST_TMPDIR/pid"
		bgwait cont 10
		[ "$bg_status" -eq 0 ]
	done
	free "$(sha_id inflight-k)"
}

@test "a direct connection holds a session lock, over a Unix socket or TCP; --scope transaction and -v say otherwise" {
	run -0 timeout 20 "$PGLOCK" scope-k sh -c 'echo "$PGLOCK_SCOPE"'
	assert_output session
	run -0 timeout 20 "$PGLOCK" -h 127.0.0.1 scope-k sh -c 'echo "$PGLOCK_SCOPE"; psql -XAtc "SELECT state FROM pg_stat_activity WHERE pid = $PGLOCK_BACKEND_PID"'
	assert_output "session
idle"
	run -0 --separate-stderr timeout 20 "$PGLOCK" -v --scope transaction -h 127.0.0.1 scope-k sh -c 'echo "$PGLOCK_SCOPE"; psql -XAtc "SELECT state FROM pg_stat_activity WHERE pid = $PGLOCK_BACKEND_PID"'
	assert_output "transaction
idle in transaction"
	[[ "${stderr_lines[0]}" == *", transaction lock)" ]]
	run -0 timeout 20 "$PGLOCK" --explain --scope transaction scope-k
	assert_line $'scope\ttransaction: held by a transaction left open'
}

@test "--scope session on a direct connection is proven and held by the session, over a Unix socket or TCP, --slots too" {
	for host in "$PGHOST" 127.0.0.1; do
		for slots in "" "--slots 2"; do
			# shellcheck disable=SC2086
			run -0 --separate-stderr timeout 20 "$PGLOCK" -v --scope session $slots -h "$host" sess-d sh -c 'echo "$PGLOCK_SCOPE"'
			assert_output session
			[[ "${stderr_lines[0]}" == *", session lock)" ]]
		done
	done
}

@test "over IPv6 link-local, whose address names a zone (fe80::1%veth), the path is proven direct too" {
	netns_up
	ip -6 addr add fe80::213:1/64 dev "$host" nodad ||
		skip "no IPv6 on this machine's links"
	ip netns exec "$ns" ip -6 addr add fe80::213:2/64 dev "$peer" nodad
	hba=$PGLOCK_TEST_PGDATA/pg_hba.conf
	cp "$hba" "$BATS_TEST_TMPDIR/hba"
	CLEANUP="cp '$BATS_TEST_TMPDIR/hba' '$hba'; psql -XAtqc 'SELECT pg_reload_conf()'"
	echo "host all all fe80::213:2/128 trust" >>"$hba"
	sql "SELECT pg_reload_conf()" >/dev/null
	# The proof compares inet values, which take no zone: it failed, and
	# the run with it (69), where a failed proof means a transaction's lock.
	run -0 --separate-stderr timeout 20 ip netns exec "$ns" "$PGLOCK" -h "fe80::213:1%$peer" -p "$PGPORT" zone-k sh -c 'echo "$PGLOCK_SCOPE"'
	assert_output session
	run -0 --separate-stderr timeout 20 ip netns exec "$ns" "$PGLOCK" --slots 2 -h "fe80::213:1%$peer" -p "$PGPORT" zone-k sh -c 'echo "$PGLOCK_SCOPE"'
	assert_output session
	free "$(sha_id zone-k)"
}

@test "an unreachable server gives 69 with libpq's reason" {
	run -69 --separate-stderr pglock --connect-timeout 0 -h /nonexistent-dir k true
	assert_output ''
	[[ "$stderr" == "pglock: connection to server on socket \"/nonexistent-dir/.s.PGSQL.$PGPORT\" failed: No such file or directory"* ]]
	[ "$(printf '%s\n' "$stderr" | wc -l)" -eq 1 ]
}

@test "-d takes a conninfo string and a URI" {
	run -0 pglock -d "host=$PGHOST port=$PGPORT dbname=postgres application_name=mine" ci sh -c 'psql -XAtc "SELECT application_name FROM pg_stat_activity WHERE pid = $PGLOCK_BACKEND_PID"'
	assert_output mine
	# The URI alone names the server: the environment points elsewhere.
	run -0 env PGHOST=/nonexistent PGPORT=1 "$PGLOCK" -d "postgresql:///postgres?host=$PGHOST&port=$PGPORT" uri sh -c 'echo "$PGLOCK_KEY"'
	assert_output uri
}

@test "pglock names its key in application_name unless the user sets one" {
	run -0 pglock 'nightly report' sh -c 'psql -XAtc "SELECT application_name FROM pg_stat_activity WHERE pid = $PGLOCK_BACKEND_PID"'
	assert_output 'pglock: nightly report'
}

@test "a waiter outlasts statement_timeout = 1s set on its database" {
	sql "CREATE DATABASE stmt_db"
	sql "ALTER DATABASE stmt_db SET statement_timeout = '1s'"
	bg holder pglock -d stmt_db stmt-k sleep 2.5
	wait_until 10 held "$(sha_id stmt-k)"
	run -0 timeout 20 "$PGLOCK" -d stmt_db stmt-k echo ran
	assert_output ran
	run -0 timeout 20 "$PGLOCK" -d stmt_db --scope transaction stmt-k sleep 1.5
	sql "DROP DATABASE stmt_db WITH (FORCE)"
}

@test "a transaction-held lock outlasts idle_in_transaction_session_timeout = 1s set on its database" {
	sql "CREATE DATABASE iit_db"
	sql "ALTER DATABASE iit_db SET idle_in_transaction_session_timeout = '1s'"
	# Its witness's transaction too: still there as the command ends.
	run -0 timeout 20 "$PGLOCK" -d iit_db --scope transaction iit-k sh -c 'sleep 2.5; echo "$PGLOCK_SCOPE"; psql -d iit_db -XAtc "SELECT count(*) FROM pg_stat_activity WHERE application_name = '"'pglock witness'"'"'
	assert_output "transaction
1"
	# The version counter's transaction idles while its command runs.
	run -0 timeout 20 "$PGLOCK" -d iit_db --version-counter iit-t sleep 2.5
	run -0 timeout 20 "$PGLOCK" -d iit_db --version-counter --peek iit-t
	assert_output 1
	sql "DROP DATABASE iit_db WITH (FORCE)"
}

@test "-v reports acquired and released on stderr, and waiting only behind a holder" {
	run -0 --separate-stderr pglock -v verbose-k true
	assert_output ''
	[ "${#stderr_lines[@]}" -eq 2 ]
	[[ "${stderr_lines[0]}" == "pglock: verbose-k: acquired after "*"s (server pid "*", session lock)" ]]
	[[ "${stderr_lines[1]}" == "pglock: verbose-k: released after "*"s" ]]
	# The holder lets go only once the waiter waits: no race with a slow
	# (valgrind) start.
	bg holder pglock verbose-k sh -c 'until [ -e "$0" ]; do sleep 0.05; done' "$BATS_TEST_TMPDIR/go"
	wait_until 10 held "$(sha_id verbose-k)"
	bg waiter pglock -v verbose-k true
	wait_until 30 waiting "$(sha_id verbose-k)"
	touch "$BATS_TEST_TMPDIR/go"
	bgwait waiter 20
	[ "$bg_status" -eq 0 ]
	mapfile -t err <"$BATS_TEST_TMPDIR/waiter.err"
	[ "${#err[@]}" -eq 3 ]
	[[ "${err[0]}" =~ ^"pglock: verbose-k: held by server pid "[0-9]+" (pglock: verbose-k, local, user postgres, for "[0-9]+"s); waiting"$ ]]
}
