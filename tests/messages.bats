#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# What pglock says: whole lines, each one write(2), so that jobs sharing
# a log never splice; and no PGLOCK_* variable the caller forged.

load helper

@test "every write pglock makes to stderr is one whole line" {
	command -v strace >/dev/null
	id=$(sha_id lines-k)
	bg holder pglock lines-k sleep 60
	wait_until 10 held "$id"
	# -v: waiting (and for whom), then the -w failure; a usage error.
	run -1 strace -f -qq -s 4096 -e trace=write -e signal=none -o "$BATS_TEST_TMPDIR/trace" "$PGLOCK" -v -w 2 lines-k true
	run -64 strace -qq -s 4096 -e trace=write -e signal=none -o "$BATS_TEST_TMPDIR/trace2" "$PGLOCK" --frobnicate
	run -0 strace -f -qq -s 4096 -e trace=write -e signal=none -o "$BATS_TEST_TMPDIR/trace3" "$PGLOCK" -v lines-free true
	cat "$BATS_TEST_TMPDIR"/trace* | grep -E 'write\(2, ' >"$BATS_TEST_TMPDIR/writes"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/writes")" -ge 5 ]
	# Each write to fd 2 is one line: "pglock: ...\n", whole.
	run grep -Ev '^([0-9]+ +)?write\(2, "pglock: [^"]*\\n", [0-9]+\) = [0-9]+$' "$BATS_TEST_TMPDIR/writes"
	assert_output ''
}

@test "20 waiters sharing one stderr file: every line is one of pglock's, whole" {
	id=$(sha_id share-k)
	mkfifo "$BATS_TEST_TMPDIR/fifo"
	bg holder pglock share-k sh -c 'read x <"$0"' "$BATS_TEST_TMPDIR/fifo"
	wait_until 10 held "$id"
	log=$BATS_TEST_TMPDIR/log
	: >"$log"
	for i in $(seq 20); do
		timeout 60 "$PGLOCK" -v share-k true 2>>"$log" &
	done
	wait_until 30 waiting "$id" 20
	fifo_go "$BATS_TEST_TMPDIR/fifo"
	wait
	[ "$(wc -l <"$log")" -eq 60 ]
	run grep -Ev '^pglock: share-k: (held by server pid [0-9]+ \(.*\); waiting|acquired after [0-9.]+s \(server pid [0-9]+, session lock\)|released after [0-9.]+s)$' "$log"
	assert_output ''
}

@test "an environment entry PGLOCK_X without '=' (execve allows it) is dropped, and pglock goes on" {
	run -0 --separate-stderr timeout 10 "$PYTHON" -c '
import ctypes, os, sys
libc = ctypes.CDLL(None)
args = [sys.argv[1].encode(), b"noeq-k", b"env"]
env = [b"PGLOCK_X", b"PGLOCK_Y=1", b"OTHER"]
env += [("%s=%s" % kv).encode() for kv in os.environ.items()]
argv = (ctypes.c_char_p * (len(args) + 1))(*args, None)
envp = (ctypes.c_char_p * (len(env) + 1))(*env, None)
libc.execve(args[0], argv, envp)
sys.exit("execve failed")' "$PGLOCK"
	refute_output --partial PGLOCK_X
	refute_output --partial PGLOCK_Y
	assert_output --partial "PGLOCK_KEY=noeq-k"
}

@test "PGLOCK_* variables the caller set do not reach the command" {
	run -0 env PGLOCK_FENCE=99 PGLOCK_VERSION=77 PGLOCK_TENANT=zz PGLOCK_SLOT=3 PGLOCK_X=1 "$PGLOCK" env-k sh -c 'env | grep "^PGLOCK_" | sort'
	assert_output "PGLOCK_BACKEND_PID=${lines[0]#PGLOCK_BACKEND_PID=}
PGLOCK_ID=$(sha_id env-k)
PGLOCK_KEY=env-k
PGLOCK_MODE=exclusive
PGLOCK_NODE=$(hostname)
PGLOCK_SCOPE=session"
	run -0 env PGLOCK_FENCE=99 "$PGLOCK" --fence env-k sh -c 'echo "$PGLOCK_FENCE"'
	[ "$output" != 99 ]
	run -0 env PGLOCK_VERSION=77 PGLOCK_FENCE=5 "$PGLOCK" --version-counter env-t sh -c 'echo "$PGLOCK_VERSION ${PGLOCK_FENCE:-none}"'
	assert_output "1 none"
}

@test "a waiter whose backend is terminated: with --connect-timeout 0, exit 69 and the server's reason, one line" {
	id=$(sha_id tw-k)
	bg holder pglock tw-k sleep 60
	wait_until 10 held "$id"
	bg waiter pglock --connect-timeout 0 tw-k touch "$BATS_TEST_TMPDIR/ran"
	wait_until 10 waiting "$id"
	sql "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
	bgwait waiter 10
	[ "$bg_status" -eq 69 ]
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	run cat "$BATS_TEST_TMPDIR/waiter.err"
	assert_output "pglock: tw-k: terminating connection due to administrator command"
}

@test "a waiter whose backend is terminated (as a restart does) connects again and waits: nothing had run" {
	id=$(sha_id tw2-k)
	mkfifo "$BATS_TEST_TMPDIR/fifo"
	bg holder pglock tw2-k sh -c 'read x <"$0"' "$BATS_TEST_TMPDIR/fifo"
	wait_until 10 held "$id"
	bg waiter pglock -v tw2-k touch "$BATS_TEST_TMPDIR/ran"
	wait_until 10 waiting "$id"
	old=$(locks_on "$id" | grep '^f:' | cut -d: -f2)
	sql "SELECT pg_terminate_backend($old)"
	wait_until 10 bash -c "locks_on() { psql -XAtc \"SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND pid <> $old\"; }; [ -n \"\$(locks_on)\" ]"
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	fifo_go "$BATS_TEST_TMPDIR/fifo"
	bgwait waiter 20
	[ "$bg_status" -eq 0 ]
	[ -e "$BATS_TEST_TMPDIR/ran" ]
	grep -qx "pglock: tw2-k: terminating connection due to administrator command; connecting again" "$BATS_TEST_TMPDIR/waiter.err"
}

@test "a waiting --version-counter whose backend is terminated connects again and allocates after the holder: nothing had run" {
	mkfifo "$BATS_TEST_TMPDIR/fifo"
	bg holder pglock --version-counter tw-t sh -c 'read x <"$0"' "$BATS_TEST_TMPDIR/fifo"
	# The tenant's lock (its witness keeps a shared one beside it).
	wait_until 10 bash -c '[ "$(psql -XAtc "SELECT count(*) FROM pg_locks WHERE locktype = '\''advisory'\'' AND granted AND mode = '\''ExclusiveLock'\''")" = 1 ]'
	bg waiter pglock -v --version-counter tw-t sh -c 'echo "$PGLOCK_VERSION" >"$0"' "$BATS_TEST_TMPDIR/ran"
	wait_until 10 bash -c '[ -n "$(psql -XAtc "SELECT pid FROM pg_locks WHERE locktype = '\''advisory'\'' AND NOT granted")" ]'
	old=$(sql "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
	sql "SELECT pg_terminate_backend($old)"
	wait_until 10 bash -c "[ -n \"\$(psql -XAtc \"SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND pid <> $old\")\" ]"
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	fifo_go "$BATS_TEST_TMPDIR/fifo"
	bgwait holder 20
	[ "$bg_status" -eq 0 ]
	bgwait waiter 20
	[ "$bg_status" -eq 0 ]
	[ "$(cat "$BATS_TEST_TMPDIR/ran")" = 2 ]
	grep -qx "pglock: tw-t: terminating connection due to administrator command; connecting again" "$BATS_TEST_TMPDIR/waiter.err"
	run -0 timeout 20 "$PGLOCK" --version-counter --peek tw-t
	assert_output 2
}

@test "a read-only server's refusal of an allocation is retried a quarter second apart for --connect-timeout (or to the end of -w), then 69 saying so; nothing allocated" {
	run -0 timeout 20 "$PGLOCK" --version-counter ro-t
	assert_output 1
	said="pglock: ro-t: cannot execute INSERT in a read-only transaction"
	PGOPTIONS="-c default_transaction_read_only=on" run -69 --separate-stderr timeout 20 "$PGLOCK" -v --connect-timeout 1 --version-counter ro-t
	assert_equal "$output" ""
	n=${#stderr_lines[@]}
	[ "${stderr_lines[n - 1]}" = "$said (retried for 1.0s: --connect-timeout)" ]
	[ "$n" -ge 2 ]
	[ "$n" -le 6 ]
	for line in "${stderr_lines[@]:0:n-1}"; do
		[ "$line" = "$said; connecting again" ]
	done
	# -w 3: under valgrind on a loaded machine the connection alone may
	# take a second, and -w bounds it too.
	PGOPTIONS="-c default_transaction_read_only=on" run -69 --separate-stderr timeout 20 "$PGLOCK" -w 3 --version-counter ro-t
	assert_equal "$stderr" "$said"
	run -0 timeout 20 "$PGLOCK" --version-counter --peek ro-t
	assert_output 1
}

@test "a key that is not UTF-8 under a server-side scheme is the caller's error: 64, escaped" {
	run -64 --separate-stderr timeout 20 "$PGLOCK" --hash hashtext "$(printf 'a\377b')" touch "$BATS_TEST_TMPDIR/ran"
	[ "$stderr" = 'pglock: a\xffb: not valid UTF-8, which the server-side scheme hashtext needs (see pglock --help)' ]
	run -64 --separate-stderr timeout 20 "$PGLOCK" --namespace 7 "$(printf 'x\xc3')" true
	[ "$stderr" = 'pglock: x\xc3: not valid UTF-8, which the server-side scheme --namespace needs (see pglock --help)' ]
	# Overlong forms and surrogates are not UTF-8 either; real UTF-8 is.
	run -64 timeout 20 "$PGLOCK" --hash hashtext "$(printf '\xc0\xaf')" true
	run -64 timeout 20 "$PGLOCK" --hash hashtext "$(printf '\xed\xa0\x80')" true
	run -0 timeout 20 "$PGLOCK" --hash hashtext "$(printf 'caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80')" true
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

# raw_free FILE: no byte that steers a terminal or a reader: ESC, BEL, a C1
# control (U+009B) or a bidirectional override (U+202E).
raw_free() {
	! LC_ALL=C grep -qaP '\x1b|\x07|\xc2\x9b|\xe2\x80\xae' "$1"
}

@test "a role's name from the server reaches the terminal escaped: no ESC, BEL, C1, override or forged line" {
	# U+009B and U+202E as UTF-8 bytes: bash writes $'\u...' so only
	# in a UTF-8 locale, which a minimal system lacks.
	role=$'ev\e[2J\e]0;pwned\ail\nFAKE: line\xc2\x9b\xe2\x80\xae'
	printf 'DROP ROLE IF EXISTS :"r";\nCREATE ROLE :"r" LOGIN;\n' | psql -XAtq -v ON_ERROR_STOP=1 -v r="$role"
	id=$(sha_id inj-k)
	bg holder psql -XAtq -U "$role" -c "SELECT pg_advisory_lock($id), pg_sleep(60)"
	wait_until 10 held "$id"
	d=$BATS_TEST_TMPDIR
	run -1 timeout 20 "$PGLOCK" -n inj-k true
	timeout 20 "$PGLOCK" -n inj-k true 2>"$d/n.err" || true
	timeout 20 "$PGLOCK" -v -w 1 inj-k true 2>"$d/v.err" || true
	timeout 20 "$PGLOCK" --status inj-k >"$d/status.out" 2>&1 || true
	timeout 20 "$PGLOCK" --check-interval 0.1 --break inj-k >"$d/break.out" 2>&1 || true
	for f in n.err v.err status.out break.out; do
		raw_free "$d/$f" || { echo "$f: raw bytes"; od -c "$d/$f" | head; false; }
	done
	# One line each; the name shows, escaped.
	[ "$(wc -l <"$d/n.err")" -eq 1 ]
	grep -qF 'user ev\x1b[2J\x1b]0;pwned\x07il\nFAKE: line\u009b\u202e' "$d/n.err"
	[ "$(wc -l <"$d/v.err")" -eq 2 ]
	[ "$(wc -l <"$d/status.out")" -eq 2 ]
	grep -qF 'ev\x1b[2J\x1b]0;pwned\x07il\nFAKE: line\u009b\u202e' "$d/status.out"
	[ "$(wc -l <"$d/break.out")" -eq 1 ]
	wait_until 10 free "$id"
}

@test "control bytes and overrides in KEY and in an option's value are escaped in messages" {
	run -64 --separate-stderr pglock --scope $'\e]0;x\a\xe2\x80\xae' k true
	assert_equal "$stderr" 'pglock: --scope: '\''\x1b]0;x\x07\u202e'\'' is not session, transaction or auto (see pglock --help)'
	bg holder pglock $'k\e[31m\xc2\x9b' sleep 60
	wait_until 10 held "$(sha_id $'k\e[31m\xc2\x9b')"
	run -1 --separate-stderr timeout 20 "$PGLOCK" -n $'k\e[31m\xc2\x9b' true
	[[ "$stderr" == 'pglock: k\x1b[31m\u009b: the lock is held by server pid '* ]]
}

@test "--explain escapes control bytes in KEY, and its SQL, an escape string, still takes the same lock" {
	key=$'k\e[31m\n\\x\'q\xc2\x9b\xe2\x80\xae'
	# The default scheme shows two SQL lines (the id, the expression);
	# a server-side one, one.
	for scheme in :8 hashtextextended:7; do
		hash=()
		[ -z "${scheme%:*}" ] || hash=(--hash "${scheme%:*}")
		run -0 --separate-stderr pglock --explain "${hash[@]}" "$key"
		[ "${#lines[@]}" -eq "${scheme#*:}" ]
		out=$output
		assert_line --index 0 $'key\tk\\x1b[31m\\n\\\\x\'q\\u009b\\u202e'
		run -1 env LC_ALL=C grep -c $'[\x01-\x08\x0b-\x1f\x7f]\\|\xc2[\x80-\x9f]\\|\xe2\x80\xae' <<<"${out//$'\n'/ }"
		id=$(sed -n 's/^id\t\(-\{0,1\}[0-9]*\).*/\1/p' <<<"$out")
		expr=$(sed -n '$s/^sql\tSELECT pg_advisory_lock(\(.*\));$/\1/p' <<<"$out")
		[[ "$expr" == *"E'k\\x1b[31m\\n\\\\x''q\\u009b\\u202e'"* ]]
		[ -n "$id" ]
		[ "$(sql "SELECT $expr")" = "$id" ]
	done
}

@test "a tab-separated field doubles a backslash: a key that holds \\t is not one that holds a tab" {
	run -0 pglock --record 'bs\t-k' true
	run -0 pglock --record $'bs\t-k' true
	run -1 --separate-stderr pglock --status 'bs\t-k' $'bs\t-k'
	assert_line --index 2 --regexp '^bs\\\\t-k	last_ok	'
	assert_line --index 3 --regexp '^bs\\t-k	last_ok	'
	run -0 --separate-stderr pglock --explain 'C:\jobs'
	assert_line --index 0 $'key\tC:\\\\jobs'
	# SQL writes it plainly: no control byte asks for an escape string.
	assert_line --partial "convert_to('C:\\jobs', 'UTF8')"
	# A message keeps it: the holder's application name as it is.
	bg holder pglock 'C:\jobs' sleep 60
	wait_until 10 held "$(sha_id 'C:\jobs')"
	run -1 --separate-stderr pglock -n 'C:\jobs' true
	[[ "$stderr" == 'pglock: C:\jobs: the lock is held by server pid '*' (pglock: C:\jobs, '* ]]
}

# frozen_server CMD...: CMD while the server's backends take 15 s over
# their second write (strace's delay on sendto): the first answers a new
# session's start, the second its first query. No psql meanwhile.
frozen_server() {
	local pm st
	pm=$(head -n 1 "$PGLOCK_TEST_PGDATA/postmaster.pid")
	strace -f -qq -p "$pm" -e trace=sendto -e inject=sendto:delay_enter=15000000:when=2 -o /dev/null &
	st=$!
	CLEANUP="kill $st"
	sleep 1	# not to synchronise: strace attaching to every process
	start=$(( $(date +%s%N) / 1000000 ))
	run --separate-stderr timeout 30 "$@"
	elapsed=$(( $(date +%s%N) / 1000000 - start ))
	kill "$st"
	wait "$st" || true
}

@test "a backend frozen during --status or --break: 69 within the answer bound, not a hang" {
	command -v strace >/dev/null || skip "strace is not installed"
	# 10 s and a margin; valgrind's start under strace -f, on a loaded
	# machine, takes seconds more (a hang is timeout's 124 at 30 s).
	local bound=14000
	[ -z "${PGLOCK_VG_DIR:-}" ] || bound=22000
	frozen_server "$PGLOCK" --status frz-status
	[ "$status" -eq 69 ]
	assert_equal "$stderr" "pglock: --status: the server did not answer within 10 s"
	[ "$elapsed" -lt "$bound" ]
	frozen_server "$PGLOCK" --break frz-status
	[ "$status" -eq 69 ]
	assert_equal "$stderr" "pglock: --break: the server did not answer within 10 s"
	[ "$elapsed" -lt "$bound" ]
}

@test "a server that wants a password: 69, and the line says pglock never prompts and where a password goes, or what a password file's line must match" {
	sql "DROP ROLE IF EXISTS pw_wanted; CREATE ROLE pw_wanted LOGIN PASSWORD 'right'"
	hba=$PGLOCK_TEST_PGDATA/pg_hba.conf
	cp "$hba" "$BATS_TEST_TMPDIR/hba"
	{ echo "local all pw_wanted scram-sha-256"; cat "$BATS_TEST_TMPDIR/hba"; } >"$hba"
	sql "SELECT pg_reload_conf()"
	# Checked once pg_hba.conf is back as it was, for the other tests.
	run --separate-stderr env -u PGPASSWORD PGPASSFILE=/nonexistent timeout 20 "$PGLOCK" -U pw_wanted pw-k true
	cp "$BATS_TEST_TMPDIR/hba" "$hba"
	sql "SELECT pg_reload_conf()"
	[ "$status" -eq 69 ]
	assert_output ''
	[[ "$stderr" == "pglock: "*"fe_sendauth: no password supplied (pglock never prompts for a password: put it in ~/.pgpass, or name a service in PGSERVICE)" ]]
	# A password file whose one line is for another database: the line
	# names what a line must match, not ~/.pgpass.
	printf '*:*:reports:pw_wanted:right\n' >"$BATS_TEST_TMPDIR/pgpass"
	chmod 600 "$BATS_TEST_TMPDIR/pgpass"
	{ echo "local all pw_wanted scram-sha-256"; cat "$BATS_TEST_TMPDIR/hba"; } >"$hba"
	sql "SELECT pg_reload_conf()"
	run --separate-stderr env -u PGPASSWORD PGPASSFILE="$BATS_TEST_TMPDIR/pgpass" timeout 20 "$PGLOCK" -U pw_wanted pw-k true
	cp "$BATS_TEST_TMPDIR/hba" "$hba"
	sql "SELECT pg_reload_conf()"
	[ "$status" -eq 69 ]
	[[ "$stderr" == "pglock: "*"fe_sendauth: no password supplied (pglock never prompts for a password: no line of $BATS_TEST_TMPDIR/pgpass is for host $PGHOST, port $PGPORT, database $PGDATABASE, user pw_wanted; a field there matches exactly, or is *)" ]]
	# With the password where the line says, the same run takes the lock.
	printf '*:*:*:pw_wanted:right\n' >"$BATS_TEST_TMPDIR/pgpass"
	chmod 600 "$BATS_TEST_TMPDIR/pgpass"
	{ echo "local all pw_wanted scram-sha-256"; cat "$BATS_TEST_TMPDIR/hba"; } >"$hba"
	sql "SELECT pg_reload_conf()"
	run env PGPASSFILE="$BATS_TEST_TMPDIR/pgpass" timeout 20 "$PGLOCK" -U pw_wanted pw-k echo ran
	cp "$BATS_TEST_TMPDIR/hba" "$hba"
	sql "SELECT pg_reload_conf()"
	[ "$status" -eq 0 ]
	assert_output ran
}
