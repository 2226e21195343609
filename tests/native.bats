#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# What only an uninstrumented pglock can show: its own CPU time, its own
# argument list in /proc (valgrind's process shows valgrind's), a closed
# descriptor 1 or 2 (valgrind's log takes it), a failed execve (valgrind
# cannot go on after one) and a --hold stopped by SIGTTIN (under valgrind
# the read is retried, the process never stops), a wall clock that
# faketime's LD_PRELOAD moves (not through valgrind), its round trips as
# strace sees them (valgrind's would be counted). `make valgrind` runs
# every suite but this one.

load helper

@test "a closed stdout fails --version-counter with 71 and rolls the version back" {
	run -0 pglock --version-counter --peek closed-out
	assert_output 0
	run -71 --separate-stderr bash -c '"$PGLOCK" --version-counter closed-out >&-'
	[ "$stderr" = "pglock: stdout: version 1 rolled back: Bad file descriptor" ]
	run -0 pglock --version-counter --peek closed-out
	assert_output 0
}

@test "a password given in -d shows neither in ps nor in any message" {
	run -0 pglock -d "host=$PGHOST dbname=postgres password=sekrit-1" pw-k sh -c 'tr "\0" " " </proc/$PPID/cmdline'
	[[ "$output" != *sekrit* ]]
	[[ "$output" == *" -d xxxxxxxx"* ]]
	run -0 pglock -d "postgresql://postgres:sekrit-2@/postgres?host=$PGHOST&port=$PGPORT" pw-k sh -c 'tr "\0" " " </proc/$PPID/cmdline'
	[[ "$output" != *sekrit* ]]
	run -69 --separate-stderr pglock -d "host=$PGHOST dbname=nope password=sekrit-3" pw-k true
	[[ "$stderr" != *sekrit* ]]
}

@test "a command that runs 30 s with nothing wrong costs pglock under 50 ms of CPU" {
	# The command reads its parent's (pglock's) CPU time just before it
	# exits: utime + stime, fields 14 and 15 of /proc/PID/stat, in ticks.
	run -0 timeout 60 "$PGLOCK" cpu-k sh -c 'sleep 30; cat /proc/$PPID/stat'
	ticks=$(echo "$output" | sed 's/.*) //' | awk '{ print $12 + $13 }')
	ms=$(( ticks * 1000 / $(getconf CLK_TCK) ))
	echo "pglock used $ms ms of CPU" >&3
	[ "$ms" -lt 50 ]
}

@test "a key too big for PGLOCK_KEY is exec's error: 126 with one line" {
	# The largest key a shell can pass does not fit in PGLOCK_KEY=...
	big=$(head -c 131071 /dev/zero | tr '\0' 'k')
	run -126 --separate-stderr pglock "$big" sh -c 'echo ran'
	[ "$stderr" = "pglock: sh: Argument list too long" ]
}

@test "-v with stderr closed writes nowhere near the database socket" {
	# With fd 2 closed, libpq's socket would take it: the -v lines would
	# go to the server. (Under valgrind its log file takes fd 2 instead.)
	run -0 timeout 20 bash -c '"$PGLOCK" -v closed-err true 2>&-'
	assert_output ''
}

# pw_hidden DSN: a running pglock given -d DSN shows no part of the secret
# S3cretPW (raw, percent-encoded or split) in /proc/PID/cmdline.
pw_hidden() {
	run -0 timeout 20 "$PGLOCK" -d "$1" pw-k sh -c 'tr "\0" " " </proc/$PPID/cmdline'
	[[ "$output" == *"pw-k sh -c"* ]]
	[[ "$output" != *S3cret* && "$output" != *"%53%33"* && "$output" != *"cret"* && "$output" != *PW* ]] ||
	    { echo "shown: $output"; false; }
}

@test "ps shows no part of a URI's user:password@" {
	pw_hidden "postgresql://postgres:S3cretPW@/postgres?host=$PGHOST&port=$PGPORT"
}

@test "ps shows no part of a URI's ?password=" {
	pw_hidden "postgresql:///postgres?host=$PGHOST&port=$PGPORT&password=S3cretPW"
}

@test "ps shows no part of a URI's percent-encoded parameter name (pass%77ord)" {
	pw_hidden "postgresql:///postgres?host=$PGHOST&port=$PGPORT&pass%77ord=S3cretPW"
}

@test "ps shows no part of a URI's percent-encoded value" {
	pw_hidden "postgresql:///postgres?host=$PGHOST&port=$PGPORT&password=%53%33cretPW"
}

@test "ps shows no part of a key=value password" {
	pw_hidden "host=$PGHOST port=$PGPORT dbname=postgres password=S3cretPW"
}

@test "ps shows no part of a quoted key=value password" {
	pw_hidden "host=$PGHOST port=$PGPORT dbname=postgres password='S3cret PW'"
}

@test "ps shows no part of an escaped key=value password" {
	pw_hidden "host=$PGHOST port=$PGPORT dbname=postgres password=S3cret\\ PW"
}

@test "ps shows no part of a password given twice" {
	pw_hidden "host=$PGHOST port=$PGPORT password=x1 dbname=postgres password=S3cretPW"
}

@test "ps shows no part of a quoted password with an escaped quote and spaces around =" {
	pw_hidden "host=$PGHOST port=$PGPORT dbname=postgres password = 'S3cret\\'PW'"
}

# cpu_ms PID: the process's CPU time so far, in ms (schedstat: ns).
cpu_ms() { echo $(( $(cut -d' ' -f1 "/proc/$1/schedstat") / 1000000 )); }

@test "--slots: waiting 5 s behind full slots costs each waiter under 20 ms of CPU" {
	bg a pglock --slots 2 cpu-slots sleep 30
	bg b pglock --slots 2 cpu-slots sleep 30
	wait_until 10 bash -c "[ \$($PGLOCK --status --slots 2 cpu-slots | grep -c held) -eq 2 ]"
	bg first pglock --slots 2 cpu-slots true
	bg second pglock --slots 2 cpu-slots true
	# Both wait: the first holds the queue's lock, the second waits for it.
	wait_until 10 bash -c "[ \$(psql -XAtc \"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted\") -eq 1 ]"
	f0=$(cpu_ms "$(bgpid first)") s0=$(cpu_ms "$(bgpid second)")
	sleep 5		# the measurement itself
	f1=$(cpu_ms "$(bgpid first)") s1=$(cpu_ms "$(bgpid second)")
	echo "first waiter $((f1 - f0)) ms, second $((s1 - s0)) ms of CPU in 5 s" >&3
	[ $((f1 - f0)) -lt 20 ]
	[ $((s1 - s0)) -lt 20 ]
	! gone "$(bgpid first)"
}

@test "--max-time 1 on sleep 30 ends within 2 s" {
	t0=$(date +%s%N)
	run -124 timeout 20 "$PGLOCK" --max-time 1 mt-fast sleep 30
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	echo "ended after $ms ms" >&3
	[ "$ms" -lt 2000 ]
}

@test "--hold in the background of an interactive shell holds until killed, then exits 0" {
	# Job control: the terminal is not the background job's to read, so
	# the hold is stopped (SIGTTIN); it must still end on kill %1's TERM.
	job_shell <<-'EOF2'
	"$PGLOCK" --hold hold-bg >/dev/null &
	# The hold is the child of pglock's shim, a child of pglock.
	hold() { ps -o stat= --ppid "$(pgrep -d, -P $!)" 2>/dev/null; }
	for i in $(seq 200); do hold | grep -q T && break; sleep 0.1; done
	hold | grep -q T && echo "hold stopped"
	"$PGLOCK" -n -q hold-bg true; echo "during: $?"
	kill %1; wait %1; echo "hold: $?"
	"$PGLOCK" -n -q hold-bg true; echo "after: $?"
	EOF2
	assert_output "$(printf 'hold stopped\nduring: 1\nhold: 0\nafter: 0')"
}

@test "--once-per counts the server's clock: clients 40 minutes off either way agree on the slot" {
	log=$BATS_TEST_TMPDIR/log
	# Not in an hour's last 10 s by the server's clock.
	wait_until 20 bash -c '[ "$(psql -XAtc "SELECT extract(epoch FROM now())::numeric % 3600 < 3590")" = t ]'
	# Monotonic clocks stay true: only the wall clock is off. (ASan, in
	# make sanitize, wants to come before faketime's preloaded library.)
	export FAKETIME_DONT_FAKE_MONOTONIC=1
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
	run -0 faketime -f '-40m' "$PGLOCK" --once-per 1h skew-k sh -c 'echo "run at $(date +%H:%M)" >>"$0"' "$log"
	run -0 faketime -f '+40m' "$PGLOCK" --once-per 1h skew-k sh -c 'echo "run at $(date +%H:%M)" >>"$0"' "$log"
	run -0 cat "$log"
	[ "${#lines[@]}" -eq 1 ]
	# faketime did move the clock: the commands see times 80 minutes apart.
	run -0 faketime -f '+40m' date +%s
	late=$output
	run -0 faketime -f '-40m' date +%s
	[ $((late - output)) -ge 4790 ]
}

# round_trips ARGS...: how many times `pglock ARGS rt-k true` waits for the
# server, as strace sees its socket: bursts of sends that an answer ends
# (the last, Terminate, has none). libpq's defaults: an SSL probe over TCP.
# RT_SESSION=last: on the last session's socket (the witness's: one begun
# beside a lock answered late, on a loaded machine, is closed and another
# opened after the grant), not the first's.
round_trips() {
	local log=$BATS_TEST_TMPDIR/rt.strace
	PGSSLMODE=prefer PGGSSENCMODE=disable timeout 20 strace -o "$log" \
	    -e trace=connect,sendto,recvfrom "$PGLOCK" "$@" rt-k true || return 1
	awk -v last_one="${RT_SESSION:+1}" '/^connect\(/ {
		split($0, a, /[(,]/)
		if (first == "") first = fd = a[2]
		else if (last_one && a[2] != first) {
			fd = a[2]; n = 0; sending = 0
		}
	}
	/^(sendto|recvfrom)\(/ {
		split($0, a, /[(,]/)
		if (a[2] != fd || $0 ~ /= -1 /) next
		if (a[1] == "sendto") sending = 1
		else if (sending) { n++; sending = 0 }
	} END { print n + 0 }' "$log"
}

@test "a plain run waits for the server 3 times over a Unix socket, 4 over TCP, proof of a direct path and the lock-delay's look included (5 for a transaction's lock over TCP); its witness 3 and 4 times on a session of its own" {
	# Connect (and, over TCP, the SSL probe before it), then the settings,
	# the lock and the lock-delay's look in one pipeline (a transaction's
	# lock: and the portal's close), then the unlock.
	run -0 round_trips
	assert_output 3
	run -0 round_trips -h 127.0.0.1 --scope session
	assert_output 4
	# A transaction's lock over TCP: its gate asks again, for whether the
	# server has synchronous standbys to renew it aside for (a proxy's path).
	run -0 round_trips -h 127.0.0.1 --scope transaction
	assert_output 5
	# The proof that no pooler is between rides in the lock's pipeline.
	run -0 round_trips -h 127.0.0.1
	assert_output 4
	# A key the server hashes: its look's id comes with the grant.
	run -0 round_trips --hash hashtext
	assert_output 4
	# The witness, on a session of its own, once the lock is held: its
	# connection, its hold, and letting go before the unlock.
	RT_SESSION=last run -0 round_trips
	assert_output 3
	RT_SESSION=last run -0 round_trips -h 127.0.0.1
	assert_output 4
}

# beside LOG: from strace LOG of a run, how the witness's connection (the
# second) lies against the lock's request (the first sendto naming
# pg_advisory_lock on the first): "connect" once it connected before the
# lock's first answer came; "closed" once it sent its Terminate before the
# lock's session read the lock timeout that ended a waiter's run.
beside() {
	awk '/^connect\(/ {
		split($0, a, /[(,]/)
		if (lock == "") lock = a[2]
		else if (w == "" && a[2] != lock) { w = a[2]; if (asked && !answered) print "connect" }
	}
	/^sendto\(/ {
		split($0, a, /[(,]/)
		if (a[2] == lock && $0 ~ /pg_advisory_lock/) asked = 1
		if (w != "" && a[2] == w && $0 ~ /"X\\0\\0\\0\\4"/ && !closed) closed = NR
	}
	/^recvfrom\(/ {
		split($0, a, /[(,]/)
		if (a[2] == lock && asked && $0 !~ /= -1 /) answered = 1
		if (a[2] == lock && $0 ~ /lock timeout/ && !timeout) timeout = NR
	}
	END { if (closed && timeout && closed < timeout) print "closed" }' "$1"
}

@test "the witness's connection is made beside the lock's round trip: connected before the grant is read; a waiter's is closed once made, so that a waiter keeps one session" {
	log=$BATS_TEST_TMPDIR/beside.strace
	run -0 timeout 20 strace -s 4096 -o "$log" -e trace=connect,sendto,recvfrom "$PGLOCK" beside-k true
	run -0 beside "$log"
	assert_output connect
	# A waiter: its witness's connection goes long before its -w ends.
	bg holder pglock beside-k sleep 30
	wait_until 10 held "$(sha_id beside-k)"
	run -1 timeout 20 strace -s 4096 -o "$log" -e trace=connect,sendto,recvfrom "$PGLOCK" -w 2 beside-k true
	run -0 beside "$log"
	assert_output "$(printf 'connect\nclosed')"
}

@test "a pause ends by the server's clock: a client 2 hours ahead still finds a 1-hour pause, and one 2 hours behind sets its end an hour from the server's now" {
	export FAKETIME_DONT_FAKE_MONOTONIC=1
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
	run -0 faketime -f '-2h' "$PGLOCK" --pause --new --for 1h skew-p
	[ "$(sql "SELECT paused_until - paused_at = interval '1 hour' AND abs(extract(epoch FROM paused_at - now())) < 60 FROM pglock_runs WHERE key = 'skew-p'")" = t ]
	run -1 --separate-stderr faketime -f '+2h' "$PGLOCK" --record skew-p touch "$BATS_TEST_TMPDIR/ran"
	[[ "$stderr" == "pglock: skew-p is paused until "*" by $(hostname)" ]]
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	# faketime did move the clock. (faketime itself once failed here under
	# load, exit 1 and nothing said: this check of the tool tries thrice.)
	for try in 1 2 3; do
		run faketime -f '+2h' date +%s
		[ "$status" -ne 0 ] || break
	done
	[ "$status" -eq 0 ]
	[ $((output - $(date +%s))) -ge 7100 ]
}

@test "a --once-per run waits for the server 4 times over a Unix socket, 5 over TCP: one more than a plain run, the record read with the lock and written with the release" {
	# Connect (after the SSL probe), the record before the lock, then the
	# settings, the lock, the lock-delay's look and the record under the
	# lock in one pipeline, then the write, its commit and the release.
	run -0 pglock --record rt-init true
	run -0 round_trips --once-per 1000d
	assert_output 4
	run -0 pglock --forget rt-k
	run -0 round_trips -h 127.0.0.1 --once-per 1000d
	assert_output 5
	# --record alike: it reads no record before the lock. Its row in the
	# history rides in the record's own statement.
	before=$(sql "SELECT count(*) FROM pglock_runs_history WHERE key = 'rt-k'")
	run -0 round_trips --record
	assert_output 3
	[ "$(sql "SELECT ok_at IS NOT NULL, failures FROM pglock_runs WHERE key = 'rt-k'")" = "t|0" ]
	[ "$(sql "SELECT count(*) FROM pglock_runs_history WHERE key = 'rt-k'")" -eq $((before + 1)) ]
	# The record says when the command succeeded: in this slot.
	run -0 pglock --forget rt-k
	run -0 round_trips --once-per 1000d --scope transaction
	assert_output 4
	[ "$(sql "SELECT ok_at IS NOT NULL, failures FROM pglock_runs WHERE key = 'rt-k'")" = "t|0" ]
	run -0 --separate-stderr timeout 20 "$PGLOCK" -v --once-per 1000d rt-k true
	[[ "$stderr" == "pglock: rt-k: succeeded in this slot already (at "*"): not run again" ]]
}

@test "a role that may not create the history records in as many waits as a plain --record run: the CREATE it would be refused is not tried each run" {
	old_runs_table pglock_rt_old pglock_rt_writer
	for scope in session transaction; do
		run -0 round_trips -U pglock_rt_writer --scope "$scope" --runs-table pglock_rt_old --record
		assert_output "$([ "$scope" = session ] && echo 3 || echo 4)"
		[ "$(sql "SELECT ok_at IS NOT NULL FROM pglock_rt_old WHERE key = 'rt-k'")" = t ]
		sql "DELETE FROM pglock_rt_old" >/dev/null
	done
	# The owner's run makes it, as before.
	run -0 round_trips --scope session --runs-table pglock_rt_old --record
	[ "$(sql "SELECT count(*) FROM pglock_rt_old_history WHERE key = 'rt-k'")" -eq 1 ]
}

@test "a --once-per skip waits for the server twice over a Unix socket, 3 times over TCP: the record is read before the lock, which it does not take" {
	run -0 timeout 20 "$PGLOCK" --once-per 1000d rt-k true
	# Connect (after the SSL probe, over TCP), then one read of the record.
	run -0 round_trips --once-per 1000d
	assert_output 2
	run -0 round_trips -h 127.0.0.1 --once-per 1000d
	assert_output 3
	run -0 round_trips -h 127.0.0.1 --scope transaction --once-per 1000d
	assert_output 3
	# Not due yet: 999d slots, the one holding the suite's now began in
	# 2024, 998d due from mid-2027; no success recorded for it.
	run -0 round_trips --once-per 999d --after 998d
	assert_output 2
	# Nothing held meanwhile: a skip beside a holder of KEY still skips.
	bg holder pglock rt-k sleep 30
	wait_until 10 held "$(sha_id rt-k)"
	run -0 --separate-stderr timeout 20 "$PGLOCK" -v --once-per 1000d rt-k true
	[[ "$stderr" == "pglock: rt-k: succeeded in this slot already (at "*"): not run again" ]]
}
