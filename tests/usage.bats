#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Bad input: exit 64 and one "pglock: ..." line on stderr, nothing on stdout.
# Help and version.

load helper

usage_error() {
	run -64 --separate-stderr pglock "$@"
	assert_output ''
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" == "pglock: "*" (see pglock --help)" ]]
}

@test "no arguments is a usage error" { usage_error; }
@test "a missing command is a usage error" { usage_error k; }
@test "-w abc is a usage error" { usage_error -w abc k true; }
@test "-w -1 is a usage error" { usage_error -w -1 k true; }
@test "-w 1e3 is a usage error" { usage_error -w 1e3 k true; }
@test "-w with trailing garbage is a usage error" { usage_error -w 5x k true; }
@test "-w beyond 24 days is a usage error" { usage_error -w 99999999999 k true; }

@test "the largest -w and --check-interval are the ones the message and the man page name" {
	usage_error -w 2147483.648 k true
	[ "$stderr" = "pglock: -w: '2147483.648' is too long (at most 2147483.647s) (see pglock --help)" ]
	grep -q 'at most 2147483.647s;' "$BATS_TEST_DIRNAME/../man/pglock.1"
	usage_error -w 596.6524h k true
	[ "$stderr" = "pglock: -w: '596.6524h' is too long (at most 2147483.647s) (see pglock --help)" ]
	usage_error --check-interval 536870.912 k true
	[ "$stderr" = "pglock: --check-interval: at most 536870.911s (see pglock --help)" ]
	grep -q 'at most 536870.911)' "$BATS_TEST_DIRNAME/../man/pglock.1"
	# The bounds themselves are taken (--explain: no server needed).
	run -0 pglock -w 2147483.647 --check-interval 536870.911 --explain k
}
@test "every option of seconds takes a DURATION's units too: -w 10m, --max-time 2h, --kill-after 5s, --check-interval 1m, --connect-timeout 2m" {
	run -0 --separate-stderr pglock -w 10m --max-time 2h --kill-after 5s \
	    --check-interval 1m --connect-timeout 2m units-k sh -c 'echo ran'
	assert_output ran
	[ "$stderr" = "" ]
	# 596.5h is 2147400 s, within -w's bound.
	run -0 pglock -w 596.5h --check-interval 0.5m --explain units-k
}
@test "two ways to record at once are a usage error, whichever comes first" {
	for args in "--once|--once-per|5m" "--once-per|5m|--once" "--record|--once" \
	    "--once-per|1h|--record"; do
		IFS='|' read -r -a a <<<"$args"
		usage_error "${a[@]}" k true
		[ "$stderr" = "pglock: choose one of --once, --once-per and --record (see pglock --help)" ]
	done
}
@test "--lost-signal CONT is refused: it ends nothing" {
	usage_error --lost-signal CONT k true
	[ "$stderr" = "pglock: --lost-signal: 'CONT' ends nothing: it continues a stopped process (see pglock --help)" ]
}
@test "-E 300 is a usage error" { usage_error -E 300 k true; }
@test "-E -1 is a usage error" { usage_error -E -1 k true; }
@test "-E x is a usage error" { usage_error -E x k true; }
@test "an empty key is a usage error" { usage_error '' true; }
@test "--lost-signal TSTP, TTIN or TTOU, by name or number, is refused for stopping a process" {
	for sig in TSTP SIGTTIN ttou 20; do
		run -64 --separate-stderr pglock --lost-signal "$sig" k true
		[ "$stderr" = "pglock: --lost-signal: '$sig' stops a process instead of ending it (see pglock --help)" ]
	done
}

@test "an empty key is a usage error in every mode: --status (any of its KEYs), --forget, --break, --explain, --hold, --version-counter" {
	for args in "--status|" "--status|k|" "--forget|" "--break|" "--explain|" \
	    "--hold|"; do
		IFS='|' read -r -a a <<<"$args"
		usage_error "${a[@]}" ''
		[ "$stderr" = "pglock: KEY is empty (see pglock --help)" ]
	done
	usage_error --version-counter ''
	[ "$stderr" = "pglock: TENANT is empty (see pglock --help)" ]
}
@test "an unknown option is a usage error" { usage_error --frobnicate k true; }
@test "an unknown short option is a usage error" { usage_error -Z k true; }
@test "an option without its value is a usage error" { usage_error -w; }
@test "--id x is a usage error" { usage_error --id x true; }
@test "--id with an int4 overflow in a pair is a usage error" { usage_error --id 1,2147483648 true; }
@test "--id beyond bigint is a usage error" { usage_error --id 9223372036854775808 true; }
@test "--lost-signal FOO is a usage error" { usage_error --lost-signal FOO k true; }
@test "--check-interval 0 is a usage error" { usage_error --check-interval 0 k true; }
@test "-c with a COMMAND too is a usage error" { usage_error -c 'echo' k true; }
@test "KEY -c without a string is a usage error" { usage_error k -c; }

@test "usage errors do not connect" {
	run -64 pglock -h /nonexistent -w abc k true
}

@test "--help prints on stdout and exits 0" {
	run -0 --separate-stderr pglock --help
	[ -z "$stderr" ]
	[[ "${lines[0]}" == "usage: pglock [options] KEY COMMAND [ARG ...]" ]]
	run -0 pglock -'?'
	[[ "${lines[0]}" == "usage: pglock"* ]]
}

@test "--help and the man page list every long option pglock.c takes" {
	help=$(pglock --help)
	n=0
	for opt in $(sed -n 's/^\t{ "\([a-z-]*\)",.*/\1/p' "$BATS_TEST_DIRNAME/../pglock.c"); do
		[[ "$help" == *"--$opt"* ]] || { echo "--help misses --$opt"; false; }
		grep -q "Fl -$opt\( \|\$\)" "$BATS_TEST_DIRNAME/../man/pglock.1" || { echo "the man page misses --$opt"; false; }
		n=$((n + 1))
	done
	[ "$n" -ge 31 ]
}

@test "the usage text matches the man page SYNOPSIS" {
	# A line that does not begin with pglock goes on the one before.
	join='/^pglock/ { if (l != "") print l; l = $0; next } { l = l " " $0 } END { print l }'
	syn=$(mandoc -Tascii "$BATS_TEST_DIRNAME/../man/pglock.1" | col -b |
	    sed -n '/^SYNOPSIS/,/^DESCRIPTION/p' | sed '1d; $d; /^[[:space:]]*$/d' | tr '\t' ' ' | tr -s ' ' | sed 's/^ //' | awk "$join")
	use=$(pglock --help | sed -n '/^$/q;p' | sed 's/^usage: //; s/^ *//' | tr -s ' ' | awk "$join")
	[ "$(echo "$use" | wc -l)" -ge 11 ]
	[ "$syn" = "$use" ] || { diff <(echo "$syn") <(echo "$use"); false; }
}

@test "--version names pglock and libpq" {
	run -0 pglock --version
	[[ "$output" =~ ^pglock\ [0-9.]+\ \(libpq\ [0-9]+\.[0-9]+\)$ ]]
}

@test "a write error on stdout fails --help" {
	run -71 --separate-stderr bash -c '"$PGLOCK" --help >/dev/full'
	[ "$stderr" = "pglock: stdout: No space left on device" ]
	run -71 bash -c '"$PGLOCK" --version >/dev/full'

}

@test "--hash, --id and --namespace: one of them, in either order; --hash twice takes the last" {
	local id='pglock: --id takes an id: no --hash or --namespace (see pglock --help)'
	local ns='pglock: --namespace hashes with hashtext: no --hash (see pglock --help)'
	run -64 --separate-stderr pglock --id --hash md5 1 true
	[ "$stderr" = "$id" ]
	run -64 --separate-stderr pglock --hash md5 --id 1 true
	[ "$stderr" = "$id" ]
	run -64 --separate-stderr pglock --namespace 3 --id 1 true
	[ "$stderr" = "$id" ]
	run -64 --separate-stderr pglock --id --namespace 3 1 true
	[ "$stderr" = "$id" ]
	run -64 --separate-stderr pglock --hash sha256 --namespace 3 k true
	[ "$stderr" = "$ns" ]
	run -64 --separate-stderr pglock --namespace 3 --hash crc32 k true
	[ "$stderr" = "$ns" ]
	# --id and --namespace are rows of the scheme table, not --hash names.
	run -64 --separate-stderr pglock --hash id 1 true
	[[ "$stderr" == "pglock: --hash: unknown hash scheme 'id' (one of: sha256, "*", flyway) (see pglock --help)" ]]
	run -64 --separate-stderr pglock --hash namespace k true
	[[ "$stderr" == "pglock: --hash: unknown hash scheme 'namespace' (one of: sha256, "* ]]
	run -0 pglock --explain --hash md5 --hash crc32 k
	assert_line --index 1 --regexp $'^scheme\tcrc32: '
	run -0 pglock --explain --namespace 3 --namespace -4 k
	assert_line --index 1 $'scheme\t--namespace -4: the pair (N, hashtext(key)), as pg_advisory_lock(N, hashtext(key)) takes it'
	run -0 pglock --explain --id --id 042
	assert_line --index 1 $'scheme\t--id: the key is the lock id'
	# The rules come after the options are read: --help and -V answer.
	run -0 pglock --id --hash md5 --help
	assert_line --index 0 --partial 'usage: pglock'
	run -0 pglock --namespace 1 --hash md5 -V
	assert_line --index 0 --partial 'pglock '
}

@test "--version-counter refuses --hash and --namespace, which its tenant's lock does not use" {
	local want='pglock: --version-counter locks a TENANT its own way: no --hash or --namespace (see pglock --help)'
	run -64 --separate-stderr pglock --version-counter --hash md5 t
	assert_output ''
	[ "$stderr" = "$want" ]
	run -64 --separate-stderr pglock --namespace 1 --version-counter t true
	assert_output ''
	[ "$stderr" = "$want" ]
}
