#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# COMMAND is everything it starts (issue 30): whatever group or session a
# descendant moves to (timeout(1), setsid), it is stopped on a lost lock, at
# --max-time and when pglock is killed; the lock is held until all of it is
# gone, a background job left behind included; --hold's running step stops
# with its script.

load helper

# A loop that ignores TERM and writes its pid to $0: only a KILL ends it.
# Run by QUIET WRAPPER (timeout 30, setsid), whose output goes nowhere: one
# left running (before the fix) must not keep bats's pipe open, and
# teardown KILLs it (helper.bash runs CLEANUP).
LOOP='trap "" TERM; echo $$ >"$0"; while :; do sleep 0.1; done'
QUIET=(sh -c 'exec "$@" >/dev/null 2>&1' quiet)
# shellcheck disable=SC2016
LOOPS_CLEANUP='for f in "$BATS_TEST_TMPDIR"/loop-*; do kill -KILL "$(cat "$f")"; done'

# ms since the epoch
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

@test "--max-time stops a TERM-ignoring loop under timeout(1) and under setsid: exit 124, none left" {
	CLEANUP=$LOOPS_CLEANUP
	for wrap in "timeout 30" setsid; do
		f=$BATS_TEST_TMPDIR/loop-${wrap%% *}
		start=$(now_ms)
		# Bounded: before the fix the loop ran on, and pglock waited.
		run -124 --separate-stderr timeout -s KILL 20 "$PGLOCK" --max-time 1 --kill-after 1 whole-max \
		    "${QUIET[@]}" $wrap sh -c "$LOOP" "$f"
		[ $(( $(now_ms) - start )) -lt 10000 ]
		[ "$stderr" = "pglock: whole-max: the command ran past --max-time 1s: stopped" ]
		gone "$(cat "$f")"
	done
	free "$(sha_id whole-max)"
}

@test "a lost lock (pg_terminate_backend) stops a TERM-ignoring loop under timeout(1) and under setsid: exit 75, none left" {
	id=$(sha_id whole-lost)
	CLEANUP=$LOOPS_CLEANUP
	for wrap in "timeout 30" setsid; do
		f=$BATS_TEST_TMPDIR/loop-${wrap%% *}
		rm -f "$f"
		bg runner pglock --kill-after 1 whole-lost "${QUIET[@]}" $wrap sh -c "$LOOP" "$f"
		wait_until 10 test -s "$f"
		wait_until 10 held "$id"
		sql "SELECT pg_terminate_backend($(locks_on "$id" | cut -d: -f2))" >/dev/null
		bgwait runner 10
		[ "$bg_status" -eq 75 ]
		gone "$(cat "$f")"
		run cat "$BATS_TEST_TMPDIR/runner.err"
		assert_output "pglock: whole-lost: lock lost while the command ran (terminating connection due to administrator command); the command was stopped"
	done
}

@test "KILL on pglock stops a TERM-ignoring loop under timeout(1) and under setsid, and holds the lock until it is gone" {
	id=$(sha_id whole-kill)
	CLEANUP=$LOOPS_CLEANUP
	for wrap in "timeout 30" setsid; do
		f=$BATS_TEST_TMPDIR/loop-${wrap%% *}
		rm -f "$f"
		bg runner pglock --kill-after 1 whole-kill "${QUIET[@]}" $wrap sh -c "$LOOP" "$f"
		wait_until 10 test -s "$f"
		wait_until 10 held "$id"
		kill -KILL "$(bgpid runner)"
		wait_until 10 free "$id"
		# Free only once the loop is gone: no wait here.
		gone "$(cat "$f")"
	done
}

@test "the shim KILLed alone: what it had comes to pglock, which KILLs it, exits 137 and leaves nothing" {
	CLEANUP=$LOOPS_CLEANUP
	f=$BATS_TEST_TMPDIR/loop-setsid
	bg runner pglock whole-shim sh -c 'echo $$ >"$0.cmd"; "$@" & wait' "$f" "${QUIET[@]}" setsid sh -c "$LOOP" "$f"
	wait_until 10 test -s "$f"
	wait_until 10 held "$(sha_id whole-shim)"
	shim=$(ps -o ppid= -p "$(cat "$f.cmd")" | tr -d ' ')
	[ "$(ps -o ppid= -p "$shim" | tr -d ' ')" = "$(bgpid runner)" ]
	kill -KILL "$shim"
	bgwait runner 10
	[ "$bg_status" -eq 137 ]
	gone "$(cat "$f")"
	gone "$(cat "$f.cmd")"
	free "$(sha_id whole-shim)"
}

@test "the shim KILLed after the command exited, while a job it left runs: pglock KILLs the job before the lock goes, and exits with the command's status" {
	f=$BATS_TEST_TMPDIR/job
	bg runner pglock -v whole-left sh -c 'sleep 60 & echo $! >"$0"; exit 3' "$f"
	wait_until 10 grep -q "waiting for 1 process" "$BATS_TEST_TMPDIR/runner.err"
	job=$(cat "$f")
	shim=$(ps -o ppid= -p "$job" | tr -d ' ')
	[ "$(ps -o ppid= -p "$shim" | tr -d ' ')" = "$(bgpid runner)" ]
	kill -KILL "$shim"
	bgwait runner 10
	[ "$bg_status" -eq 3 ]
	gone "$job"
	free "$(sha_id whole-left)"
}

@test "a background job the command leaves keeps the lock until it ends; pglock exits with the command's status; -v says how many it waits for" {
	id=$(sha_id whole-bg)
	d=$BATS_TEST_TMPDIR
	mkfifo "$d/go"
	# Two jobs, one of them in a session of its own; the command exits 3.
	bg runner pglock -v whole-bg sh -c '
		(read x <"$0"; echo done >"$0.done") &
		setsid sh -c "read x <\"\$0\"" "$0" &
		echo ready >"$0.ready"; exit 3' "$d/go"
	wait_until 10 test -s "$d/go.ready"
	wait_until 10 grep -q "waiting for" "$d/runner.err"
	held "$id"
	run -1 pglock -n -q whole-bg true
	kill -0 "$(bgpid runner)"
	fifo_go "$d/go"
	bgwait runner 10
	[ "$bg_status" -eq 3 ]
	[ "$(cat "$d/go.done")" = done ]
	free "$id"
	run grep -c "pglock: whole-bg: the command exited; waiting for 2 processes it started" "$d/runner.err"
	assert_output 1
}

@test "-v counts only what runs on: an exited child its parent never reaped (a zombie) is not waited for" {
	# sleep 2 is the parent of sleep 0.2, whose end it never reaps.
	run -0 --separate-stderr pglock -v whole-zombie sh -c '(sleep 0.2 & exec sleep 2) & sleep 1'
	[[ "$stderr" == *"whole-zombie: the command exited; waiting for 1 process it started"* ]]
}

@test "a command that leaves nothing: pglock says nothing of leftovers under -v" {
	run -0 --separate-stderr pglock -v whole-none true
	[[ "$stderr" != *"waiting for"* ]]
}

# The man page's --hold EXAMPLE, as the reader copies it, run from a shell
# (the script leads its process group), its steps stub scripts.
hold_example() {
	sed -n '/^\.Sh EXAMPLES/,/^\.Sh /p' "$BATS_TEST_DIRNAME/../man/pglock.1" |
	    awk '/^\.Bd -literal/ { on = 1; n++; next } /^\.Ed/ { on = 0; next } on && n == 1' |
	    sed 's/\\(dq/"/g; s/\\e/\\/g; s/^\\&//'
}

# example_dir: the EXAMPLE in $d/example.sh, a pglock on PATH that runs
# $PGLOCK, and its steps: ./deploy.sh, long, writes its pid (TERM ends it).
example_dir() {
	d=$BATS_TEST_TMPDIR/ex
	mkdir -p "$d/bin"
	hold_example >"$d/example.sh"
	grep -q 'coproc LOCK { exec pglock --hold deploy; }' "$d/example.sh"
	printf '#!/bin/sh\nexec "%s" "$@"\n' "$PGLOCK" >"$d/bin/pglock"
	printf '#!/bin/sh\necho $$ >"$0.pid"\nwhile :; do sleep 0.1; done\n' >"$d/deploy.sh"
	printf '#!/bin/sh\necho report\n' >"$d/report.sh"
	chmod +x "$d/bin/pglock" "$d/deploy.sh" "$d/report.sh"
	bg script bash -c 'cd "$0" && PATH="$0/bin:$PATH" exec bash example.sh' "$d"
	wait_until 10 test -s "$d/deploy.sh.pid"
	wait_until 10 held "$(sha_id deploy)"
	step=$(cat "$d/deploy.sh.pid")
}

@test "the --hold EXAMPLE, its pglock killed: the step the script runs stops with it, before the next holder's command starts" {
	example_dir
	id=$(sha_id deploy)
	# The next holder's command looks at the step: running, or gone.
	bg waiter pglock deploy sh -c 's=$(cut -d" " -f3 "/proc/$1/stat" 2>/dev/null); echo "${s:-gone}" >"$0"' "$d/seen" "$step"
	wait_until 10 waiting "$id"
	kill -KILL "$(pgrep -f -P "$(bgpid script)" 'pglock --hold deploy')"
	bgwait waiter 15
	[ "$bg_status" -eq 0 ]
	run cat "$d/seen"
	[[ "$output" =~ ^(gone|Z|X)$ ]]
	bgwait script 10
	[ "$bg_status" -eq 143 ]
}

@test "the --hold EXAMPLE, its lock lost (pg_terminate_backend): the step the script runs stops with it, and pglock says it told the script" {
	example_dir
	id=$(sha_id deploy)
	hold=$(pgrep -f -P "$(bgpid script)" 'pglock --hold deploy')
	# The server frees the lock at once: that the next holder waits for
	# the step is the lock-delay's (issue 30, item 4), not shown here.
	sql "SELECT pg_terminate_backend($(locks_on "$id" | cut -d: -f2))" >/dev/null
	wait_until 2 gone "$step"
	bgwait script 10
	[ "$bg_status" -eq 143 ]
	wait_until 5 gone "$hold"
	run cat "$BATS_TEST_TMPDIR/script.err"
	assert_output "pglock: deploy: lock lost while held (terminating connection due to administrator command); sent signal 15 to pid $(bgpid script)"
}
