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
@test "-w with trailing garbage is a usage error" { usage_error -w 5s k true; }
@test "-w beyond 24 days is a usage error" { usage_error -w 99999999999 k true; }
@test "-E 300 is a usage error" { usage_error -E 300 k true; }
@test "-E -1 is a usage error" { usage_error -E -1 k true; }
@test "-E x is a usage error" { usage_error -E x k true; }
@test "an empty key is a usage error" { usage_error '' true; }
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
	syn=$(mandoc -Tascii "$BATS_TEST_DIRNAME/../man/pglock.1" | col -b |
	    sed -n '/^SYNOPSIS/,/^DESCRIPTION/p' | grep 'pglock' | tr -s ' ' | sed 's/^ //')
	use=$(pglock --help | sed -n '/^$/q;p' | sed 's/^usage: //; s/^ *//' | tr -s ' ')
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
