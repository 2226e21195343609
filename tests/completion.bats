#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Shell completion: the bash one driven as bash does (complete -p, then its
# function with COMP_WORDS/COMP_CWORD); every option pglock knows in all
# three files. No server, and no zsh or fish needed (tests/deb.sh runs
# those shells when it can install them).

load helper

COMPLETIONS=$BATS_TEST_DIRNAME/../completions

setup() {
	# shellcheck disable=SC1091
	. "$COMPLETIONS/pglock.bash"
}

# comp WORD...: what TAB offers with the cursor at the end of the last
# WORD (pass '' to complete an empty word), one per line, sorted.
comp() {
	local spec fn
	spec=$(complete -p pglock) || return 1
	fn=${spec#*-F }
	fn=${fn%% *}
	COMP_WORDS=(pglock "$@")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMP_LINE="${COMP_WORDS[*]}"
	COMP_POINT=${#COMP_LINE}
	COMPREPLY=()
	"$fn" pglock "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
	[ "${#COMPREPLY[@]}" -eq 0 ] || printf '%s\n' "${COMPREPLY[@]}" | LC_ALL=C sort
}

# long_options [HAS_ARG]: every long option in pglock.c's getopt table (or
# those whose has_arg is HAS_ARG), one per line.
long_options() {
	sed -n '/struct option longopts/,/^};/p' "$BATS_TEST_DIRNAME/../pglock.c" |
	    grep "${1:-.}" | grep -o '{ "[^"]*"' | sed 's/^{ "\(.*\)"$/\1/'
}

# Every short option pglock --help lists ("  -x, -e, --exclusive").
short_options() {
	pglock --help | grep -o '^  -[^-, ]\(, -[^-, ]\)*' | grep -o -- '-[^, ]' |
	    cut -c2
}

@test "bash completion is the function of the command pglock" {
	run complete -p pglock
	assert_output 'complete -F _pglock pglock'
}

@test "--sc completes to --scope" {
	run comp --sc
	assert_output --scope
}

@test "--scope offers exactly auto, session and transaction" {
	run comp --scope ''
	assert_output "$(printf '%s\n' auto session transaction)"
}

@test "--scope= offers the scopes whether or not = breaks words" {
	run comp --scope = se
	assert_output session
	run comp --scope=t
	assert_output --scope=transaction
}

@test "--hash offers exactly the schemes pglock knows" {
	local stderr
	# pglock names every scheme when it is given an unknown one.
	run -64 --separate-stderr timeout 10 "$PGLOCK" --hash no-such-scheme k true
	[[ $stderr == *"(one of: "*")"* ]]
	local known=${stderr#*(one of: }
	known=${known%%)*}
	run comp --hash ''
	# shellcheck disable=SC2086
	assert_output "$(printf '%s\n' ${known//,/} | LC_ALL=C sort)"
	[ "${#lines[@]}" -ge 10 ]
}

@test "--hash md completes to the md5 schemes" {
	run comp --hash md
	assert_output "$(printf '%s\n' md5 md5-60)"
}

@test "--lost-signal offers exactly the signal names pglock accepts there" {
	local s accepted=() bin=$PGLOCK
	# What the parser accepts, not how it uses memory: under valgrind,
	# whose start costs a second a run, the plain build answers.
	[ -z "${PGLOCK_VG_DIR:-}" ] || bin=$BATS_TEST_DIRNAME/../pglock
	# Every name bash knows, less the real-time ones (pglock takes those
	# by number only): each either runs true under the lock or is refused.
	for s in $(kill -l | grep -o 'SIG[A-Z0-9]*' | grep -v '^SIGRT'); do
		run timeout 20 "$bin" -n --lost-signal "${s#SIG}" completion-sig true
		case $status in
		0) accepted+=("${s#SIG}") ;;
		64) ;;
		*) fail "--lost-signal ${s#SIG}: exit $status: $output" ;;
		esac
	done
	[ "${#accepted[@]}" -ge 8 ]
	run comp --lost-signal ''
	assert_output "$(printf '%s\n' "${accepted[@]}" | LC_ALL=C sort)"
	refute_line STOP
}

@test "every long option of pglock.c's table is offered by the bash completion" {
	local o missing=()
	run long_options
	[ "${#lines[@]}" -ge 25 ]
	local opts=("${lines[@]}")
	run comp -
	for o in "${opts[@]}"; do
		printf '%s\n' "${lines[@]}" | grep -qxF -- "--$o" || missing+=("--$o")
	done
	[ "${#missing[@]}" -eq 0 ] || fail "not offered: ${missing[*]}"
}

@test "every short option of pglock --help is offered by the bash completion" {
	local c missing=()
	run short_options
	[ "${#lines[@]}" -ge 14 ]
	local opts=("${lines[@]}")
	run comp -
	for c in "${opts[@]}"; do
		printf '%s\n' "${lines[@]}" | grep -qxF -- "-$c" || missing+=("-$c")
	done
	[ "${#missing[@]}" -eq 0 ] || fail "not offered: ${missing[*]}"
}

@test "every long option of pglock.c's table is in the zsh completion" {
	local o missing=()
	run long_options
	[ "${#lines[@]}" -ge 25 ]
	for o in "${lines[@]}"; do
		grep -qE -- "[{,'()]--${o}[]=,}[]" "$COMPLETIONS/_pglock" ||
			missing+=("--$o")
	done
	[ "${#missing[@]}" -eq 0 ] || fail "not in _pglock: ${missing[*]}"
}

@test "every short option of pglock --help is in the zsh completion" {
	local c missing=()
	run short_options
	[ "${#lines[@]}" -ge 14 ]
	for c in "${lines[@]}"; do
		[ "$c" = '?' ] && c='\\\?'
		grep -qE -- "[{,'(]-${c}[]+,}[']" "$COMPLETIONS/_pglock" ||
			missing+=("-$c")
	done
	[ "${#missing[@]}" -eq 0 ] || fail "not in _pglock: ${missing[*]}"
}

@test "every long option of pglock.c's table is in the fish completion" {
	local o missing=()
	run long_options
	[ "${#lines[@]}" -ge 25 ]
	for o in "${lines[@]}"; do
		grep -qE -- "^complete -c pglock .*-l $o( |$)" \
		    "$COMPLETIONS/pglock.fish" || missing+=("--$o")
	done
	[ "${#missing[@]}" -eq 0 ] || fail "not in pglock.fish: ${missing[*]}"
}

@test "every short option of pglock --help is in the fish completion" {
	local c missing=()
	run short_options
	[ "${#lines[@]}" -ge 14 ]
	for c in "${lines[@]}"; do
		[ "$c" = '?' ] && c="'\\?'"
		grep -qE -- "^complete -c pglock .*-s $c( |$)" \
		    "$COMPLETIONS/pglock.fish" || missing+=("-$c")
	done
	[ "${#missing[@]}" -eq 0 ] || fail "not in pglock.fish: ${missing[*]}"
}

@test "the schemes, signals and scopes are the same in all three files" {
	local list
	# shellcheck disable=SC2154 # set by completions/pglock.bash
	for list in "$_pglock_schemes" "$_pglock_signals" "$_pglock_scopes"; do
		# shellcheck disable=SC2086
		set -- $list
		grep -qF -- "$*" "$COMPLETIONS/pglock.fish"
		grep -qF -- "$*" <(tr -s ' \t\n' ' ' <"$COMPLETIONS/_pglock")
	done
}

@test "the value of an option is not taken for KEY" {
	run comp -w 5 --sc
	assert_output --scope
	run comp -nw 5 --sc
	assert_output --scope
	run comp --scope = auto --sc
	assert_output --scope
}

@test "the value of every option that takes one is not taken for KEY" {
	local o bad=()
	run long_options required_argument
	[ "${#lines[@]}" -ge 15 ]
	for o in "${lines[@]}"; do
		[ "$(comp "--$o" x --sc)" = --scope ] || bad+=("--$o")
	done
	[ "${#bad[@]}" -eq 0 ] || fail "value taken for KEY: ${bad[*]}"
}

@test "a number option offers nothing" {
	run comp -w ''
	assert_output ''
	run comp --kill-after ''
	assert_output ''
}

@test "options stop at KEY: after it, only -c or a command" {
	run comp k --
	assert_output --command
	run comp k --sc
	assert_output ''
}

@test "after KEY the command is completed" {
	run comp -n k bat
	assert_line bats
	run comp -- -k bat
	assert_line bats
	run comp k -c bat
	assert_line bats
}

@test "after KEY and a command, its arguments are files" {
	cd "$BATS_TEST_TMPDIR"
	touch report.sh
	run comp k ls rep
	assert_output report.sh
}

@test "--status takes only KEYs and --explain one KEY: no command" {
	run comp --status k ''
	assert_output ''
	run comp --explain k ''
	assert_output ''
}

@test "-c before KEY: nothing after KEY" {
	run comp -c 'echo hi' k ''
	assert_output ''
	run comp -nc 'echo hi' k ''
	assert_output ''
	run comp --command='echo hi' k ''
	assert_output ''
	run comp --command = 'echo hi' k ''
	assert_output ''
}

@test "--pause, --resume and --forget take one KEY: no command after it; --for's and --reason's values are not taken for KEY" {
	run comp --pa
	assert_output --pause
	run comp --res
	assert_output --resume
	for mode in --pause --resume --forget; do
		run comp "$mode" k ''
		assert_output ''
	done
	run comp --pause --for 1h --reason maintenance --q
	assert_output --quiet
	run comp --pause --for 1h --reason maintenance k ''
	assert_output ''
	run comp --for
	assert_output "$(printf '%s\n' --for --forget)"
	run comp --rea
	assert_output --reason
}

@test "--tz, --after and --spread (issue 33) are offered, and their values are not taken for KEY" {
	run comp --af
	assert_output --after
	run comp --sp
	assert_output --spread
	run comp --once-per 1d --tz Europe/Berlin --after 2h30m --spread 10m --sc
	assert_output --scope
}
