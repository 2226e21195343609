#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# --keep-output: the command's stdout and stderr go through pglock, which
# keeps their last bytes for the run's record; they still reach pglock's
# caller whole, in order per stream, as they come, at the reader's pace.

load helper

@test "the issue's example: --record --keep-output 1k passes both streams through whole and the status on" {
	run -3 --separate-stderr timeout 60 "$PGLOCK" --record --keep-output 1k out-issue sh -c 'seq 5000; echo "disk full" >&2; exit 3'
	[ "$output" = "$(seq 5000)" ]
	[ "$stderr" = "disk full" ]
}

@test "interleaved writes to stdout and stderr keep each stream's own order" {
	run -0 --separate-stderr timeout 60 "$PGLOCK" --once --keep-output 4k out-mixed sh -c 'i=0; while [ $i -lt 3000 ]; do i=$((i + 1)); echo "o$i"; echo "e$i" >&2; done'
	[ "$output" = "$(seq -f 'o%g' 3000)" ]
	[ "$stderr" = "$(seq -f 'e%g' 3000)" ]
}

@test "more than a pipe holds, read slowly by pglock's reader, is neither lost nor reordered" {
	d=$BATS_TEST_TMPDIR
	# About 590 KB on stdout, 290 KB on stderr: pglock's stdout is read
	# only 2 s later, so the command waits on its pipe meanwhile.
	run -0 timeout 60 bash -c '"$PGLOCK" --record --keep-output 64k out-slow sh -c "seq 100000; seq 50000 >&2" 2>"$1/err" | (sleep 2; cat) >"$1/out"' slow "$d"
	cmp "$d/out" <(seq 100000)
	cmp "$d/err" <(seq 50000)
}

@test "what the command wrote as it exited, still in its pipe, reaches a slow reader" {
	d=$BATS_TEST_TMPDIR
	# About 106 KiB: pglock's stdout (a pipe of 64 KiB) fills, and the
	# rest waits in the command's pipe while the command exits.
	run -0 timeout 60 bash -c '"$PGLOCK" --record --keep-output 1k out-last seq 20000 | (sleep 2; cat) >"$1/out"' last "$d"
	cmp "$d/out" <(seq 20000)
}

@test "a reader slower than the lease after the command exited: the lock is kept, its checks going, till the output is written on; the success is recorded" {
	d=$BATS_TEST_TMPDIR
	# --check-interval 0.5: a lease of 3.5 s; the reader starts 6 s later.
	run -0 timeout 60 bash -c '"$PGLOCK" --check-interval 0.5 --record --keep-output 1k out-lease seq 100000 | (sleep 6; cat) >"$1/out"; echo "${PIPESTATUS[0]}" >"$1/rc"' lease "$d"
	cmp "$d/out" <(seq 100000)
	[ "$(cat "$d/rc")" -eq 0 ]
	[ "$(sql "SELECT ok_at IS NOT NULL FROM pglock_runs WHERE key = 'out-lease'")" = t ]
}

@test "the output reaches pglock's caller as it comes, while the command still runs" {
	bg live pglock --record --keep-output 1k out-live sh -c 'echo first; echo second >&2; exec sleep 30'
	wait_until 10 grep -qx first "$BATS_TEST_TMPDIR/live.out"
	wait_until 10 grep -qx second "$BATS_TEST_TMPDIR/live.err"
	! gone "$(bgpid live)"
}

@test "a reader of pglock's stdout that goes away ends the command by SIGPIPE, as without --keep-output" {
	run -0 timeout 30 bash -c '"$PGLOCK" --record --keep-output 1k out-pipe yes | head -3; echo "${PIPESTATUS[0]}"'
	assert_output "$(printf 'y\ny\ny\n141')"
	run -0 timeout 30 bash -c '"$PGLOCK" --record out-pipe yes | head -3; echo "${PIPESTATUS[0]}"'
	assert_output "$(printf 'y\ny\ny\n141')"
}

@test "a stdout pglock cannot write is no longer copied, and the command is not blocked" {
	# Under valgrind a closed fd 1 is valgrind's own business.
	[ -z "${PGLOCK_VG_DIR:-}" ] || skip "valgrind and a closed stdout"
	run -0 --separate-stderr timeout 60 bash -c '"$PGLOCK" --record --keep-output 1k out-closed sh -c "seq 100000; echo done >&2" >&-'
	[ "$stderr" = done ]
}

@test "without --keep-output the command's stdout is pglock's own; with it, a pipe" {
	f=$BATS_TEST_TMPDIR/fd1
	run -0 timeout 30 bash -c '"$PGLOCK" --record out-fd sh -c "readlink /proc/\$\$/fd/1" >"$1"' fd "$f"
	[ "$(cat "$f")" = "$f" ]
	run -0 timeout 30 bash -c '"$PGLOCK" out-fd sh -c "readlink /proc/\$\$/fd/1" >"$1"' fd "$f"
	[ "$(cat "$f")" = "$f" ]
	run -0 timeout 30 bash -c '"$PGLOCK" --record --keep-output 1k out-fd sh -c "readlink /proc/\$\$/fd/1" >"$1"' fd "$f"
	[[ "$(cat "$f")" == pipe:* ]]
}

# keep_error WANT ARG...: pglock ARG... exits 64 with the one line WANT.
keep_error() {
	local want=$1
	shift
	run -64 --separate-stderr timeout 30 "$PGLOCK" "$@"
	assert_output ''
	[ "$stderr" = "pglock: $want (see pglock --help)" ]
}

@test "a bad --keep-output SIZE is a usage error of one line" {
	local r="is out of range (1 to 65536 bytes)" n="is not a size (bytes, or k for 1024: 4k)"
	keep_error "--keep-output: '0' $r" --record --keep-output 0 k true
	keep_error "--keep-output: '65537' $r" --record --keep-output 65537 k true
	keep_error "--keep-output: '65k' $r" --once --keep-output 65k k true
	keep_error "--keep-output: '-1' $n" --record --keep-output -1 k true
	keep_error "--keep-output: '1x' $n" --record --keep-output 1x k true
	keep_error "--keep-output: '1m' $n" --record --keep-output 1m k true
	keep_error "--keep-output: '' $n" --record --keep-output '' k true
}

@test "--keep-output without --record, --once or --once-per is a usage error" {
	local want="--keep-output keeps a COMMAND's output with its record: it needs --record, --once or --once-per"
	keep_error "$want" --keep-output 1k k true
	keep_error "$want" --keep-output 64k --hold k
	keep_error "$want" --keep-output 4K --version-counter t true
	run -0 timeout 30 "$PGLOCK" --once-per 1000d --keep-output 65536 out-ok true
}
