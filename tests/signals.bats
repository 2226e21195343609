#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Signals and lifetime: forwarded exactly once, cancelled waits, a killed
# pglock takes its command with it, -F hands the lock to the command.

load helper

# A command that counts the TERMs it gets, and exits 0 half a second after
# the first, so that a second one would be counted.
count_term='trap "echo TERM >>\"\$0\"; n=10" TERM; echo ready >"$0.ready"; n=-1; while [ "$n" -ne 0 ]; do sleep 0.05; [ "$n" -gt 0 ] && n=$((n - 1)); done'

@test "TERM to pglock reaches the command once, pglock exits with its status, lock released" {
	out=$BATS_TEST_TMPDIR/terms
	bg runner pglock sig-k sh -c "$count_term" "$out"
	wait_until 10 test -e "$out.ready"
	kill -TERM "$(bgpid runner)"
	bgwait runner 10
	[ "$bg_status" -eq 0 ]
	[ "$(cat "$out")" = TERM ]
	free "$(sha_id sig-k)"
}

@test "TERM kills a plain command and pglock exits 143" {
	bg runner pglock sig-k sleep 60
	wait_until 10 held "$(sha_id sig-k)"
	kill -TERM "$(bgpid runner)"
	bgwait runner 10
	[ "$bg_status" -eq 143 ]
	free "$(sha_id sig-k)"
}

@test "HUP, QUIT, USR1, USR2 and INT are forwarded to the command" {
	for s in HUP QUIT USR1 USR2 INT; do
		out=$BATS_TEST_TMPDIR/$s
		bg "r$s" pglock sig-$s sh -c "trap 'echo $s >>\"\$0\"; exit 0' $s; echo >\"\$0.ready\"; while :; do sleep 0.05; done" "$out"
		wait_until 10 test -e "$out.ready"
		kill -"$s" "$(bgpid "r$s")"
		bgwait "r$s" 10
		[ "$bg_status" -eq 0 ]
		[ "$(cat "$out")" = "$s" ]
	done
}

@test "TERM reaches the command's own children through its process group" {
	bg runner pglock grp-k sh -c 'sleep 60 & echo $! >"$0"; wait' "$BATS_TEST_TMPDIR/grandchild"
	wait_until 10 test -s "$BATS_TEST_TMPDIR/grandchild"
	gc=$(cat "$BATS_TEST_TMPDIR/grandchild")
	kill -TERM "$(bgpid runner)"
	bgwait runner 10
	[ "$bg_status" -eq 143 ]
	wait_until 5 bash -c "! kill -0 $gc 2>/dev/null"
}

@test "TERM while waiting exits 143 and leaves no waiter in pg_locks" {
	id=$(sha_id wait-k)
	bg holder pglock wait-k sleep 60
	wait_until 10 held "$id"
	bg waiter pglock wait-k touch "$BATS_TEST_TMPDIR/ran"
	wait_until 10 waiting "$id"
	kill -TERM "$(bgpid waiter)"
	bgwait waiter 10
	[ "$bg_status" -eq 143 ]
	[ "$(locks_on "$id")" = "t:$(locks_on "$id" | cut -d: -f2)" ]
	[ "$(locks_on "$id" | wc -l)" -eq 1 ]
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "INT while waiting exits 130" {
	id=$(sha_id wait-k)
	bg holder pglock wait-k sleep 60
	wait_until 10 held "$id"
	bg waiter pglock wait-k true
	wait_until 10 waiting "$id"
	kill -INT "$(bgpid waiter)"
	bgwait waiter 10
	[ "$bg_status" -eq 130 ]
	! waiting "$id"
}

@test "KILL on pglock: the command is gone within 2 s and the lock is released" {
	id=$(sha_id kill-k)
	bg runner pglock kill-k sh -c 'echo $$ >"$0"; exec sleep 60' "$BATS_TEST_TMPDIR/cmd"
	wait_until 10 test -s "$BATS_TEST_TMPDIR/cmd"
	cmd=$(cat "$BATS_TEST_TMPDIR/cmd")
	wait_until 10 held "$id"
	kill -KILL "$(bgpid runner)"
	wait_until 2 bash -c "! kill -0 $cmd 2>/dev/null"
	wait_until 5 free "$id"
}

@test "KILL on pglock: the command's children get --lost-signal too, KILL after --kill-after" {
	id=$(sha_id kill-k)
	bg runner pglock --lost-signal USR1 --kill-after 1 kill-k sh -c '
		sleep 60 & echo $! >"$0.sleep"
		sh -c "trap \"echo USR1 >>$0.stubborn\" USR1; echo \$\$ >$0.pid; while :; do sleep 0.1; done" &
		wait' "$BATS_TEST_TMPDIR/gc"
	wait_until 10 test -s "$BATS_TEST_TMPDIR/gc.sleep"
	wait_until 10 test -s "$BATS_TEST_TMPDIR/gc.pid"
	wait_until 10 held "$id"
	sleeper=$(cat "$BATS_TEST_TMPDIR/gc.sleep")
	stubborn=$(cat "$BATS_TEST_TMPDIR/gc.pid")
	kill -KILL "$(bgpid runner)"
	wait_until 2 bash -c "! kill -0 $sleeper 2>/dev/null"
	wait_until 5 free "$id"
	# It caught USR1 once and ran on until the KILL a second later.
	wait_until 5 bash -c "! kill -0 $stubborn 2>/dev/null"
	[ "$(cat "$BATS_TEST_TMPDIR/gc.stubborn")" = USR1 ]
}

@test "KILL on pglock: its lock is held until the command is gone, so a waiter's command never runs beside it" {
	id=$(sha_id kill-k)
	d=$BATS_TEST_TMPDIR
	# A command that ignores TERM: only --kill-after's KILL ends it.
	bg runner pglock --kill-after 3 kill-k sh -c 'trap "" TERM; echo $$ >"$0"; while :; do sleep 0.1; done' "$d/cmd"
	wait_until 10 test -s "$d/cmd"
	wait_until 10 held "$id"
	# The waiter's command looks at the holder's: running (S, R), or gone.
	bg waiter pglock kill-k sh -c 's=$(cut -d" " -f3 "/proc/$1/stat" 2>/dev/null); echo "${s:-gone}" >"$0"' "$d/seen" "$(cat "$d/cmd")"
	wait_until 10 waiting "$id"
	kill -KILL "$(bgpid runner)"
	# The lock itself stays the old holder's (the shim keeps its
	# session), not only its lock-delay: the waiter still waits.
	sleep 1
	waiting "$id"
	bgwait waiter 15
	[ "$bg_status" -eq 0 ]
	run cat "$d/seen"
	[[ "$output" =~ ^(gone|Z|X)$ ]]
}

@test "KILL on pglock under a reaper that never reaps: the lock is held while the command runs on TERM, and goes once it has exited (a zombie), not --kill-after later" {
	id=$(sha_id zombie-k)
	d=$BATS_TEST_TMPDIR
	mkfifo "$d/cmd.go"
	# On TERM, the command says so and exits only when the test says.
	cat >"$d/cmd.sh" <<'SH'
trap 'echo term >"$1.term"; read x <"$1.go"; exit 0' TERM
echo $$ >"$1"
while :; do sleep 0.1; done
SH
	# PR_SET_CHILD_SUBREAPER (36): the command, orphaned, comes to this
	# process, which waits for pglock alone.
	bg reaper python3 -c '
import ctypes, subprocess, sys, time
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)
p = subprocess.Popen([sys.argv[1], "--kill-after", "30", "zombie-k", "sh", sys.argv[2] + "/cmd.sh", sys.argv[2] + "/cmd"])
open(sys.argv[2] + "/pglock", "w").write(str(p.pid))
p.wait()
time.sleep(60)' "$PGLOCK" "$d"
	wait_until 10 test -s "$d/cmd"
	wait_until 10 held "$id"
	shim=$(ps -o ppid= -p "$(cat "$d/cmd")" | tr -d ' ')
	kill -KILL "$(cat "$d/pglock")"
	wait_until 5 test -s "$d/cmd.term"
	# pglock is gone and the command runs on: the lock stays.
	sleep 1
	held "$id"
	fifo_go "$d/cmd.go"
	wait_until 5 free "$id"
	# Free while pglock's shim, which reaped the command, is a zombie.
	gone "$(cat "$d/cmd")"
	[ "$(cut -d' ' -f3 "/proc/$shim/stat")" = Z ]
	kill "$(bgpid reaper)"
}

@test "KILL on pglock: a command whose first thread exited while another runs (Z in /proc) holds its lock until that one ends" {
	id=$(sha_id thread-k)
	d=$BATS_TEST_TMPDIR
	mkfifo "$d/go"
	cc -pthread -o "$d/threads" "$BATS_TEST_DIRNAME/threads.c"
	bg runner pglock --kill-after 30 thread-k "$d/threads" "$d/go"
	wait_until 10 test -s "$d/runner.out"
	cmd=$(head -1 "$d/runner.out")
	wait_until 10 held "$id"
	wait_until 5 bash -c "[ \"\$(cut -d' ' -f3 /proc/$cmd/stat)\" = Z ]"
	kill -KILL "$(bgpid runner)"
	sleep 1
	held "$id"
	fifo_go "$d/go"
	wait_until 5 free "$id"
}

@test "KILL on pglock: a reader of its output sees the end at once, not --kill-after later" {
	f=$BATS_TEST_TMPDIR/cmd
	bg reader bash -c '"$PGLOCK" kill-out-k sh -c "echo \$\$ >\"\$0\"; exec sleep 60" "$1" | cat >"$1.out"; echo done >"$1.done"' _ "$f"
	wait_until 10 test -s "$f"
	# pglock is the parent of the shim, the command's parent.
	shim=$(ps -o ppid= -p "$(cat "$f")" | tr -d ' ')
	kill -KILL "$(ps -o ppid= -p "$shim" | tr -d ' ')"
	wait_until 3 test -e "$f.done"
}

@test "KILL on pglock while it waits: it has forked nothing, and nothing runs" {
	id=$(sha_id dog-k)
	bg holder pglock dog-k sleep 60
	wait_until 10 held "$id"
	bg waiter pglock --kill-after 30 dog-k touch "$BATS_TEST_TMPDIR/ran"
	wait_until 10 waiting "$id"
	pid=$(bgpid waiter)
	# The shim is forked once the lock is granted: no child of pglock's.
	run -1 pgrep -P "$pid"
	kill -KILL "$pid"
	bgwait waiter 5
	[ "$bg_status" -eq 137 ]
	kill "$(bgpid holder)"
	bgwait holder 10
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "pglock forks one process of its own, the shim: the command's parent, which leads its group and keeps the lock's and the witness's sessions" {
	f=$BATS_TEST_TMPDIR/cmd
	bg runner pglock one-shim sh -c 'echo $$ >"$0"; exec sleep 60' "$f"
	wait_until 10 test -s "$f"
	cmd=$(cat "$f")
	pid=$(bgpid runner)
	shim=$(pgrep -P "$pid")
	[ "$(ps -o ppid= -p "$cmd" | tr -d ' ')" = "$shim" ]
	[ "$(ps -o pgid= -p "$cmd" | tr -d ' ')" = "$shim" ]
	[ "$(ps -o pgid= -p "$shim" | tr -d ' ')" = "$shim" ]
	# Its gate to pglock, and a copy of each session; nothing else open
	# (valgrind's own descriptors, far above, aside).
	run -0 bash -c "ls -l /proc/$shim/fd | grep -c 'socket:'"
	[ "$output" -eq 3 ]
	run -0 bash -c "ls /proc/$shim/fd | awk '\$1 < 1000' | wc -l"
	[ "$output" -eq 3 ]
	kill "$pid"
	bgwait runner 10
	[ "$bg_status" -eq 143 ]
}

@test "the shim's lease is renewed with each check: a command that runs three leases long runs to its end" {
	# --check-interval 0.5: a lease of 2 s, which the shim would end.
	run -0 --separate-stderr timeout 30 "$PGLOCK" --check-interval 0.5 renew-k sh -c 'sleep 6; echo done'
	assert_output done
}

# failfork: FF, the env(1) words that make pglock's forks fail where
# FAILFORK says (tests/failfork.c; ASan must then not insist on coming
# first).
failfork() {
	local so=$BATS_TEST_DIRNAME/failfork.so
	[ -e "$so" ] || fail "$so: not built (make tests/failfork.so)"
	FF=(env LD_PRELOAD="$so" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0")
}

@test "a fork that fails at each of pglock's sites (the shim, the shim's of the command): 71, one line naming the limit, nothing run, the lock free" {
	failfork
	run -71 --separate-stderr "${FF[@]}" FAILFORK=1 "$PGLOCK" forkfail-k touch "$BATS_TEST_TMPDIR/ran"
	assert_equal "$stderr" "pglock: forkfail-k: the command was not started: fork: Resource temporarily unavailable (a limit on processes: ulimit -u, or a container's pids.max)"
	# The shim's fork of the command, under a real limit: a user with no
	# process but pglock and its shim (root is never limited). Not
	# under valgrind, whose log that user may not write.
	if [ -z "${PGLOCK_VG_DIR:-}" ]; then
		# A copy that user may run, wherever the tree is (a home
		# directory of mode 700).
		bin=$(mktemp -d /tmp/pglock-nproc.XXXXXX)
		CLEANUP="rm -rf '$bin'"
		chmod 755 "$bin"
		cp "$PGLOCK" "$bin/pglock"
		run -71 --separate-stderr setpriv --reuid=64123 --regid=64123 --clear-groups prlimit --nproc=2 "$bin/pglock" forkfail-k touch "$BATS_TEST_TMPDIR/ran"
		assert_equal "$stderr" "pglock: forkfail-k: the command was not started: fork: Resource temporarily unavailable (a limit on processes: ulimit -u, or a container's pids.max)"
	fi
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	run -0 pglock -n forkfail-k true
}

@test "a shim that never answers at the gate (stopped as it was forked): pglock gives up at the lease's end, 71, one line, nothing run, the lock free" {
	failfork
	run -71 --separate-stderr timeout -k 5 30 "${FF[@]}" STOPFORK=1 "$PGLOCK" --check-interval 1 gate-k touch "$BATS_TEST_TMPDIR/ran"
	assert_equal "$stderr" "pglock: gate-k: the command was not started: touch: its start did not end within the lease"
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	run -0 pglock -n gate-k true
}

@test "KILL on pglock and its shim at once (pkill -9 pglock): the command still gets --lost-signal" {
	[ "$(uname -s)" = Linux ] || skip "the parent-death signal is Linux's"
	f=$BATS_TEST_TMPDIR/cmd
	bg runner pglock both-k sh -c 'echo $$ >"$0"; exec sleep 60' "$f"
	wait_until 10 test -s "$f"
	cmd=$(cat "$f")
	shim=$(ps -o ppid= "$cmd")
	kill -KILL "$(ps -o ppid= "$shim")" "$shim"
	# Exited: a zombie till init, its new parent, reaps it.
	wait_until 2 gone "$cmd"
}

@test "when the command exits, pglock leaves no process of its own behind" {
	run -0 pglock grp-k sh -c 'ps -o pgid= $$'
	pgid=$(echo "$output" | tr -d ' ')
	[ "$pgid" -gt 1 ]
	run -1 pgrep -g "$pgid"
	# Nor when the command could not be run.
	key=grp-k-$BATS_ROOT_PID
	run -127 pglock "$key" /nonexistent/cmd
	run -1 pgrep -f "pglock $key"
}

@test "-F: the command runs under pglock's own pid and holds the lock until it exits" {
	id=$(sha_id nofork-k)
	mkfifo "$BATS_TEST_TMPDIR/pid.fifo"
	bg runner pglock -F nofork-k sh -c 'echo $$ >"$0"; read x <"$0.fifo"' "$BATS_TEST_TMPDIR/pid"
	wait_until 10 test -s "$BATS_TEST_TMPDIR/pid"
	[ "$(cat "$BATS_TEST_TMPDIR/pid")" -eq "$(bgpid runner)" ]
	held "$id"
	run -1 pglock -n nofork-k true
	fifo_go "$BATS_TEST_TMPDIR/pid.fifo"
	bgwait runner 10
	[ "$bg_status" -eq 0 ]
	wait_until 5 free "$id"
}

@test "-F with a transaction's lock: the lock outlives the lease of --check-interval, nobody renewing it (the lock-delay's look re-arms no idle timeout)" {
	id=$(sha_id nofork-x)
	# S = 4 s for --check-interval 1s; the command idles in the lock's
	# transaction until told to end, 5 s past the grant at least (a
	# fifo, not a sleep: under valgrind the probe below takes seconds).
	mkfifo "$BATS_TEST_TMPDIR/go"
	bg runner pglock -F --scope transaction --check-interval 1 nofork-x sh -c 'read x <"$0"' "$BATS_TEST_TMPDIR/go"
	wait_until 10 held "$id"
	sleep 5
	held "$id"
	run -1 pglock -n nofork-x true
	fifo_go "$BATS_TEST_TMPDIR/go"
	bgwait runner 15
	[ "$bg_status" -eq 0 ]
	wait_until 5 free "$id"
}

@test "-F passes the command's exit status and exec errors" {
	run -5 pglock -F nofork-k sh -c 'exit 5'
	run -127 pglock -F nofork-k /nonexistent
}

@test "a signal the caller ignores (nohup) stays ignored, for pglock and the command" {
	out=$BATS_TEST_TMPDIR/survived
	bg runner bash -c 'trap "" HUP; exec "$PGLOCK" nohup-k sh -c "echo \$\$ >\"\$0.ready\"; sleep 1; echo survived >\"\$0\"" "$1"' _ "$out"
	wait_until 10 test -s "$out.ready"
	kill -HUP "$(bgpid runner)"
	# Straight to the command too: it must have kept HUP ignored.
	kill -HUP "$(cat "$out.ready")"
	bgwait runner 10
	[ "$bg_status" -eq 0 ]
	[ "$(cat "$out")" = survived ]
}

# closed FD CMD...: CMD with descriptor FD (1 or 2) a pipe nobody reads,
# SIGPIPE at its default (Python's subprocess restores it); prints CMD's
# exit status, negative for a signal.
closed() {
	"$PYTHON" -c '
import os, subprocess, sys
r, w = os.pipe()
os.close(r)
fds = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL}
fds["stdout" if sys.argv[1] == "1" else "stderr"] = w
print(subprocess.run(sys.argv[2:], timeout=20, **fds).returncode)' "$@"
}

@test "a reader of -v's stderr or of a version that went away does not kill pglock (SIGPIPE): the command's status, or 71" {
	d=$BATS_TEST_TMPDIR
	run -0 closed 2 "$PGLOCK" -v pipe-k sh -c 'echo ran >"$0"; exit 3' "$d/ran"
	assert_output 3
	[ "$(cat "$d/ran")" = ran ]
	run -0 --separate-stderr closed 1 "$PGLOCK" --version-counter pipe-t
	assert_output 71
	[ "$stderr" = "pglock: stdout: version 1 rolled back: Broken pipe" ]
	run -0 pglock --version-counter --peek pipe-t
	assert_output 0
	free "$(sha_id pipe-k)"
}

@test "--hold whose line cannot be written exits 71 and does not signal its script" {
	# Before the fix the watchdog (now the shim) took the 71 for a death
	# and sent the script TERM; it does that before it lets the session
	# go, so the script waits for the lock to be free, then says whether
	# it got one.
	# Its stdout is a pipe with no reader (a closed fd 1 would be taken by
	# valgrind's log under make valgrind); its stdin one kept open, so the
	# hold would go on but for pglock's end.
	run -0 --separate-stderr timeout 30 "$PYTHON" -c '
import os, signal, subprocess, sys, time
got = []
signal.signal(signal.SIGTERM, lambda *_: got.append(1))
r, w = os.pipe()
os.close(r)
keep, _ = os.pipe()
hold = subprocess.run([sys.argv[1], "--hold", "hold-line-k"],
                      stdin=keep, stdout=w)
for _ in range(200):
    if subprocess.run([sys.argv[1], "-n", "hold-line-k", "true"],
                      stderr=subprocess.DEVNULL).returncode == 0:
        break
    time.sleep(0.1)
print("status %d%s" % (hold.returncode, "; got TERM" if got else ""))' "$PGLOCK"
	assert_output 'status 71'
	[ "$stderr" = "pglock: stdout: Broken pipe" ]
}

@test "the command gets SIGPIPE as pglock's caller left it: default, or ignored" {
	# SigIgn's bit 12 is signal 13, SIGPIPE.
	ign='echo $(( 0x$(sed -n "s/^SigIgn:[[:space:]]*//p" /proc/$$/status) >> 12 & 1 ))'
	run -0 env --default-signal=PIPE "$PGLOCK" pipe-k sh -c "$ign"
	assert_output 0
	run -0 env --ignore-signal=PIPE "$PGLOCK" pipe-k sh -c "$ign"
	assert_output 1
	run -0 env --default-signal=PIPE "$PGLOCK" -F pipe-k sh -c "$ign"
	assert_output 0
}

@test "in a pipeline on a terminal, pglock leaves the terminal to the pipeline" {
	command -v script >/dev/null || skip "script(1) is not installed"
	run -0 timeout 20 script -qec "$PGLOCK pipe-k sleep 0.2 | (sleep 0.5; stty sane </dev/tty && echo OK)" /dev/null
	[[ "$output" == *OK* ]]
}

@test "on a terminal, the command gets the terminal and can read it" {
	command -v script >/dev/null || skip "script(1) is not installed"
	run -0 timeout 20 script -qec "$PGLOCK tty-k sh -c 'stty size </dev/tty >/dev/null && echo READ'" /dev/null
	[[ "$output" == *READ* ]]
}

@test "Ctrl-Z stops the command and pglock with it, the lock stays held, fg goes on" {
	run -0 timeout 60 "$BATS_TEST_DIRNAME/jobctl.py" "$PGLOCK" ctrlz-k "$(sha_id ctrlz-k)"
	assert_line "stopped, lock held"
	assert_line "continued, finished, status 0"
	wait_until 5 free "$(sha_id ctrlz-k)"
}

@test "Ctrl-Z for longer than the lease: the stopped command is KILLed at the lease's end, and fg ends pglock with 75" {
	run -0 timeout 60 "$BATS_TEST_DIRNAME/jobctl.py" "$PGLOCK" ctrlz-past "$(sha_id ctrlz-past)" --past-lease
	assert_line "stopped past the lease: the command is gone"
	assert_line "continued: 75"
}

@test "Ctrl-Z with no job control (pglock leads the terminal's session) does not hang" {
	run -0 timeout 60 "$BATS_TEST_DIRNAME/jobctl.py" "$PGLOCK" ctrlz-k "$(sha_id ctrlz-k)" --no-shell
	assert_line "no job control: Ctrl-Z passed, finished, status 0"
}

@test "a command stopped in the background by SIGTTIN still ends on the TERM pglock passes on" {
	# pglock KEY cmd & in an interactive shell: cmd reads the terminal,
	# which is not its to read, and stops. kill %1 must still end it.
	job_shell <<-'EOF2'
	"$PGLOCK" ttin-k sh -c 'echo $$ >"$0"; read x; echo "read $x"' "$0.cmd" &
	for i in $(seq 200); do [ -s "$0.cmd" ] && ps -o stat= -p "$(cat "$0.cmd")" | grep -q T && break; sleep 0.1; done
	ps -o stat= -p "$(cat "$0.cmd")" | grep -q T && echo "command stopped"
	kill %1; wait %1; echo "pglock: $?"
	"$PGLOCK" -n -q ttin-k true; echo "after: $?"
	EOF2
	assert_output "$(printf 'command stopped\npglock: 143\nafter: 0')"
}

@test "USR1 passed on leaves a command that was stopped on purpose stopped (no SIGCONT after it)" {
	# shellcheck disable=SC2016
	bg runner pglock usr-k sh -c 'trap "echo got >>\"\$0.log\"" USR1; echo $$ >"$0"; while :; do sleep 0.1; done' "$BATS_TEST_TMPDIR/cmd"
	wait_until 10 test -s "$BATS_TEST_TMPDIR/cmd"
	cmd=$(cat "$BATS_TEST_TMPDIR/cmd")
	CLEANUP="kill -CONT $cmd"
	kill -STOP "$cmd"
	wait_until 5 bash -c "ps -o stat= -p $cmd | grep -q T"
	kill -USR1 "$(bgpid runner)"
	sleep 0.5	# not to synchronise: a SIGCONT would have come by now
	run -0 ps -o stat= -p "$cmd"
	[[ "$output" == T* ]]
	kill -CONT "$cmd"
	wait_until 5 test -s "$BATS_TEST_TMPDIR/cmd.log"
	kill -TERM "$(bgpid runner)"
	bgwait runner 10
	[ "$bg_status" -eq 143 ]
}
