#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Bad input, table-driven: every case gets its documented exit status and
# exactly one "pglock: ..." line on stderr, nothing on stdout, no command
# run, no crash and no hang (each run is bounded by timeout).

load helper

# expect STATUS ARGS...: run pglock (bounded), check the status, one
# stderr line, empty stdout, and that the command (touch ran) did not run.
expect() {
	local want=$1
	shift
	run -"$want" --separate-stderr timeout 20 "$PGLOCK" "$@"
	[ -z "$output" ] || { echo "stdout: $output"; false; }
	[ "${#stderr_lines[@]}" -eq 1 ] || { echo "stderr: $stderr"; false; }
	[[ "$stderr" == "pglock: "* ]]
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

RAN='touch "$BATS_TEST_TMPDIR/ran"'

# The matrix: status, then arguments; "@CMD" stands for the command.
MATRIX='64|-w|
64|-w||k|@CMD
64|-w|-1|k|@CMD
64|-w|-0.5|k|@CMD
64|-w|abc|k|@CMD
64|-w|1e3|k|@CMD
64|-w|0x10|k|@CMD
64|-w|5sec|k|@CMD
64|-w|1.5.2|k|@CMD
64|-w|inf|k|@CMD
64|-w|nan|k|@CMD
64|-w|99999999999999999999|k|@CMD
64|-w|2147484|k|@CMD
64|-E||k|@CMD
64|-E|256|k|@CMD
64|-E|-1|k|@CMD
64|-E|1x|k|@CMD
64|-E|99999999999999999999|k|@CMD
64|-E| 1|k|@CMD
64|--check-interval|0|k|@CMD
64|--check-interval|-1|k|@CMD
64|--check-interval|x|k|@CMD
64|--kill-after|-3|k|@CMD
64|--kill-after|3x|k|@CMD
64|--lost-signal|CONT|k|@CMD
64|--lost-signal|FOO|k|@CMD
64|--lost-signal|0|k|@CMD
64|--lost-signal|65|k|@CMD
64|--lost-signal||k|@CMD
64|--lost-signal|STOP|k|@CMD
64|--lost-signal|20|k|@CMD
64|--lost-signal|32|k|@CMD
64|--id|x|@CMD
64|--id||@CMD
64|--id|1,|@CMD
64|--id|,2|@CMD
64|--id|1,2,3|@CMD
64|--id|9223372036854775808|@CMD
64|--id|-9223372036854775809|@CMD
64|--id|2147483648,1|@CMD
64|--id|1 |@CMD
64|--hash|nope|k|@CMD
64|--hash||k|@CMD
64|--namespace|x|k|@CMD
64|--namespace|2147483648|k|@CMD
64|--hash|md5|--namespace|1|k|@CMD
64|--id|--hash|md5|1|@CMD
64|--counter-table|bad;name|--version-counter|t
64|--counter-table||--version-counter|t
64|--counter-table|1abc|--version-counter|t
64|--counter-table|a.b.c|--version-counter|t
64|--peek|k|@CMD
64|--version-counter|--peek|t|@CMD
64|--version-counter|-s|t
64|--version-counter|-F|t
64|--version-counter|--fence|t
64|--require-sync|k|@CMD
64|--require-sync|--version-counter|--peek|t
64|--status|--explain|k
64|--explain
64|--explain|a|b
64|k
64|
64|-c|true|k|@CMD
64|k|-c
64|k|-c|a|b
64|--frobnicate|k|@CMD
64|--id=5|@CMD
64|--exclusive=1|k|@CMD
64|-Z|k|@CMD
64|-d|host=x =y|k|@CMD
64|-d|postgresql://[bad|k|@CMD
64|-d|postgresql://h:99999999999/db|k|@CMD'

@test "the bad-input matrix: at least 60 cases, each with its status and one line" {
	n=0
	while IFS= read -r row; do
		IFS='|' read -r -a f <<<"$row"
		want=${f[0]}
		args=()
		for a in "${f[@]:1}"; do
			if [ "$a" = @CMD ]; then
				args+=(sh -c "$RAN")
			else
				args+=("$a")
			fi
		done
		expect "$want" "${args[@]}" || { echo "case: $row"; false; }
		n=$((n + 1))
	done <<<"$MATRIX"
	[ "$n" -ge 60 ]
}

@test "an empty key, a key of binary bytes and a key at the argument size limit" {
	expect 64 '' sh -c "$RAN"
	k=$(printf '\001\002\377\376 \t\033[0m')
	run -0 pglock "$k" sh -c 'printf %s "$PGLOCK_KEY" | od -An -tx1 | tr -d " \n"'
	assert_output "$(printf %s "$k" | od -An -tx1 | tr -d ' \n')"
	# Linux caps one argument, and one environment string, at 128 KiB.
	big=$(head -c 131000 /dev/zero | tr '\0' 'k')
	run -0 pglock "$big" sh -c 'echo ${#PGLOCK_KEY}'
	assert_output 131000
}

@test "stdout on /dev/full fails --version-counter, --status, --explain and --help with 71" {
	for args in "--version-counter full-out" "--status" "--explain k" "--help" "--version"; do
		run -71 --separate-stderr bash -c "\"\$PGLOCK\" $args >/dev/full"
		[[ "$stderr" == "pglock: stdout"*": No space left on device" ]] || { echo "$args: $stderr"; false; }
	done
	run -0 pglock --version-counter --peek full-out
	assert_output 0
}

@test "stdout on /dev/full fails --status --metrics with 71, with or without KEY" {
	run -0 pglock --record full-metrics true
	for args in "--status --metrics" "--status --metrics full-metrics"; do
		run -71 --separate-stderr bash -c "\"\$PGLOCK\" $args >/dev/full"
		assert_equal "$stderr" "pglock: stdout: No space left on device"
	done
}

@test "a closed stdin or stderr does not let the command write to the database socket" {
	# ls lists its own descriptors, the command's: the shell's own come and go
	# (under valgrind, as it forks), and ls would miss one it had listed.
	run -0 bash -c '"$PGLOCK" closed-in sh -c "ls -l /proc/self/fd | grep -c socket || true" <&-'
	assert_output 0
	run -0 bash -c '"$PGLOCK" closed-err sh -c "echo ok" 2>&-'
	assert_output ok
}

@test "a missing or unreadable \$SHELL gives 127 or 126 with one line" {
	SHELL=/nonexistent/sh expect 127 k -c "$RAN"
	touch "$BATS_TEST_TMPDIR/noexec"
	SHELL=$BATS_TEST_TMPDIR/noexec expect 126 k -c "$RAN"
}

@test "an unreachable server gives 69 with one line" {
	expect 69 --connect-timeout 0 -h /nonexistent k sh -c "$RAN"
	expect 69 --connect-timeout 0 -h 127.0.0.1 -p 1 k sh -c "$RAN"
	expect 69 -d "host=$PGHOST port=$PGPORT dbname=no_such_db" k sh -c "$RAN"
	expect 69 -U no_such_role k sh -c "$RAN"
}

@test "a server that accepts TCP but never answers: connect_timeout gives 69 in time" {
	port=$(( PGPORT + 2000 ))
	bg listener "$PYTHON" -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8)
conns = []
while True:
    c, _ = s.accept(); conns.append(c)' "$port"
	wait_until 10 bash -c "ss -Hltn 'sport = :$port' | grep -q ."
	start=$(date +%s)
	expect 69 -d "host=127.0.0.1 port=$port connect_timeout=2" k sh -c "$RAN"
	[ $(( $(date +%s) - start )) -lt 10 ]
	[[ "$stderr" == *"timeout expired"* ]]
}

@test "a value given to an option that takes none is named as such" {
	run -64 --separate-stderr pglock --id=5 true
	[ "$stderr" = "pglock: --id=5: takes no value (see pglock --help)" ]
	run -64 --separate-stderr pglock --wait
	[ "$stderr" = "pglock: --wait: needs a value (see pglock --help)" ]
}

@test "-h alone, taken for help, says it is the host (as in psql) and where help is: 64, one line" {
	run -64 --separate-stderr pglock -h
	assert_output ''
	[ "$stderr" = "pglock: -h: needs a value: -h is the server's host, as in psql (see pglock --help)" ]
	run -64 --separate-stderr pglock --host
	[ "$stderr" = "pglock: --host: needs a value (see pglock --help)" ]
}

@test "a -d value libpq cannot parse, a URI in upper case or one without its scheme never shows its password: 64, masked" {
	for d in 'postgresql://alice:SECRET@[::1/app' 'postgresql://alice:SE%ZZRET@host/app' \
	    'postgresql://alice@[::1/app?password=SECRET' "host=x password='SECRET" \
	    'POSTGRESQL://alice:SECRET@host/app' 'Postgres://alice:SECRET@host/app' \
	    'alice:SECRET@host/app' 'alice:SECRET@host:5432/app' 'alice:@host' \
	    'alice:SECRET@host/app?sslmode=require' 'alice:SECRETc2Vj==@host/app'; do
		run -64 --separate-stderr pglock -d "$d" k true
		[ "${#lines[@]}" -eq 0 ]
		[[ "$stderr" == "pglock: -d: "* ]]
		[[ "$stderr" != *SE* ]] || { echo "$d: $stderr"; false; }
		[[ "$stderr" != *$'\n'* ]]
	done
	run -64 --separate-stderr pglock -d 'postgresql://alice:SECRET@[::1/app' k true
	assert_equal "$stderr" 'pglock: -d: end of string reached when looking for matching "]" in IPv6 host address in URI: "postgresql://alice:xxxxxx@[::1/app" (see pglock --help)'
	run -64 --separate-stderr pglock -d 'alice:SECRET@host/app' k true
	assert_equal "$stderr" 'pglock: -d: user:password@... is a URI only after postgresql:// (libpq would take this one for a database name) (see pglock --help)'
	# A database so named is still reached, by name; one with '@' only
	# after a '/' or with no ':' before it is a name as before.
	for d in "dbname='a:b@c'" 'a/b:c@d' 'alice@host' "host=$PGHOST dbname=x password=a:b@c"; do
		run -69 --separate-stderr pglock -d "$d" k true
		[[ "$stderr" == *'does not exist'* ]] || { echo "$d: $stderr"; false; }
	done
}
