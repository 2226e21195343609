# SPDX-License-Identifier: ISC
# Shared helpers for the bats suites: run pglock, poll pg_locks with a
# deadline (never sleep to synchronise), start background holders in their
# own session and kill their whole process group in teardown.

bats_require_minimum_version 1.5.0
bats_load_library bats-support
bats_load_library bats-assert

# shellcheck disable=SC1091
. "$PGLOCK_TEST_DIR/pg/env"
PGLOCK=${PGLOCK:-$BATS_TEST_DIRNAME/../pglock}
export PGLOCK

# Debian's python3, where apt puts python3-psycopg2: a python3 first in
# PATH (pyenv, a venv) may not see it.
PYTHON=/usr/bin/python3
[ -x "$PYTHON" ] || PYTHON=python3

# `make valgrind` sets PGLOCK to tests/valgrind.sh.
pglock() { "$PGLOCK" "$@"; }

sql() {
	psql -XAtq -v ON_ERROR_STOP=1 -c "$1"
}

# The bigint id of KEY under the default scheme, computed by the server.
sha_id() {
	sql "SELECT ('x' || left(encode(sha256(convert_to('$1', 'UTF8')), 'hex'), 16))::bit(64)::bigint"
}

# Advisory locks on bigint ID: "granted:pid" lines.
locks_on() {
	sql "SELECT CASE WHEN granted THEN 't' ELSE 'f' END || ':' || pid FROM pg_locks WHERE locktype = 'advisory'
	     AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) = ($1)::bigint
	     ORDER BY granted DESC, pid"
}

# wait_until SECONDS COMMAND...: poll COMMAND every 50 ms until it succeeds.
wait_until() {
	local deadline=$(( $(date +%s%N) / 1000000 + ${1%.*} * 1000 ))
	shift
	until "$@"; do
		if [ $(( $(date +%s%N) / 1000000 )) -ge "$deadline" ]; then
			echo "wait_until: timed out: $*" >&2
			wait_diagnose >&2
			return 1
		fi
		sleep 0.05
	done
}

# job_shell: run the script on standard input in an interactive bash (job
# control on, as at a prompt) on a terminal of its own (script(1)),
# bounded; its output, without the terminal's carriage returns, in $output.
job_shell() {
	cat >"$BATS_TEST_TMPDIR/job"
	run -0 timeout 20 script -qec "bash --norc --noprofile -i $BATS_TEST_TMPDIR/job" /dev/null
	output=${output//$'\r'/}
}

# What a timed-out wait_until shows, so that a failure in CI says why:
# the background jobs' stderr and the server's sessions that hold or await
# advisory locks.
wait_diagnose() {
	local f
	for f in "$BATS_TEST_TMPDIR"/*.err; do
		[ -s "$f" ] && echo "${f##*/}: $(head -c 2000 "$f")"
	done
	sql "SELECT l.pid, l.granted, l.objid, a.state, a.wait_event, left(a.query, 120)
	     FROM pg_locks l JOIN pg_stat_activity a USING (pid)
	     WHERE l.locktype = 'advisory' ORDER BY l.pid" 2>&1 || true
}

# gone PID: the process has exited; a zombie waiting for its reaper counts.
gone() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	stat=${stat##*) }	# "pid (comm) STATE ...": comm may hold ") "
	[ "${stat%% *}" = Z ]
}

held() { [ "$(locks_on "$1" | grep -c '^t:')" -ge "${2:-1}" ]; }
waiting() { [ "$(locks_on "$1" | grep -c '^f:')" -ge "${2:-1}" ]; }
free() { [ -z "$(locks_on "$1")" ]; }

# pg_on DIR CMD...: CMD with libpq's environment naming the cluster in DIR
# (made by tests/pg.sh).
pg_on() {
	local dir=$1
	shift
	(. "$dir/env" && "$@")
}

# bg NAME CMD...: run CMD in a new session, all streams redirected; its pid
# is in $BATS_TEST_TMPDIR/NAME.pid and it is killed (whole group) in teardown.
bg() {
	local name=$1
	shift
	[ "$1" = pglock ] && { shift; set -- "$PGLOCK" "$@"; }
	# A shell starts background jobs with INT and QUIT ignored, which
	# pglock (rightly) keeps: give them back their default action.
	setsid env --default-signal=INT,QUIT "$@" </dev/null >"$BATS_TEST_TMPDIR/$name.out" \
	    2>"$BATS_TEST_TMPDIR/$name.err" &
	echo $! >"$BATS_TEST_TMPDIR/$name.pid"
	BG_PIDS="${BG_PIDS:-} $!"
}

bgpid() { cat "$BATS_TEST_TMPDIR/$1.pid"; }

# Wait (bounded) for background job NAME; its status is in $bg_status.
bgwait() {
	local pid
	pid=$(bgpid "$1")
	wait_until "${2:-10}" bash -c "! kill -0 $pid 2>/dev/null" || return 1
	bg_status=0
	wait "$pid" || bg_status=$?
}

teardown() {
	eval "${NETNS_CLEANUP:-}" 2>/dev/null || true
	eval "${CLEANUP:-}" 2>/dev/null || true
	local p
	# The group, and the process itself: a daemon (pgbouncer -d) forks
	# again after setsid(), so its pid is not its group's.
	for p in ${BG_PIDS:-}; do
		kill -KILL -- "-$p" 2>/dev/null || true
		kill -KILL "$p" 2>/dev/null || true
	done
	sql "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
	     WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'" \
	    >/dev/null 2>&1 || true
}
