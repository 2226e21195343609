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

# fifo_go FIFO: one line to the reader waiting on FIFO, within 10 s: a
# reader that is gone fails the test instead of hanging it.
fifo_go() {
	timeout 10 sh -c 'echo go >"$0"' "$1"
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

# settle [SECONDS]: wait until the server (libpq's environment) started
# longer ago than SECONDS, by default the default lease, 20 s, and a half:
# until then, every new holder's command waits out its lease first (the
# lock-delay after a start).
settle() {
	wait_until 40 bash -c '[ "$(psql -XAtc "SELECT now() - pg_postmaster_start_time() > interval '\''${1:-20.5} s'\''")" = t ]' settle "${1:-20.5}"
}

# pg_sh start|standby DIR ...: tests/pg.sh for a cluster of a test's own, on
# a free port: PG_PORT (the README's) chooses the suite's cluster's alone,
# which setup_suite.bash started on it.
pg_sh() {
	env -u PG_PORT "$BATS_TEST_DIRNAME/pg.sh" "$@"
}

# own_server: a cluster of the test's own (tests/pg.sh), named by libpq's
# environment for the rest of the test and stopped in teardown. A test
# that restarts it leaves the next tests no lock-delay to wait out.
own_server() {
	OWN=$PGLOCK_TEST_DIR/own-$BATS_TEST_NUMBER
	pg_sh start "$OWN"
	CLEANUP="'$BATS_TEST_DIRNAME/pg.sh' stop '$OWN'"
	# shellcheck disable=SC1091
	. "$OWN/env"
}

held() { [ "$(locks_on "$1" | grep -c '^t:')" -ge "${2:-1}" ]; }
waiting() { [ "$(locks_on "$1" | grep -c '^f:')" -ge "${2:-1}" ]; }
free() { [ -z "$(locks_on "$1")" ]; }

# Skip the test where no PID namespace can be made (no CAP_SYS_ADMIN, or
# a chroot).
pidns_or_skip() {
	unshare --fork --pid true 2>/dev/null ||
		skip "PID namespaces cannot be made here (need CAP_SYS_ADMIN)"
}

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
	# Not bats's fd 3 either: a job (or what it leaves) holding it keeps
	# bats waiting to the end of its output, past any test's bound.
	setsid env --default-signal=INT,QUIT "$@" </dev/null >"$BATS_TEST_TMPDIR/$name.out" \
	    2>"$BATS_TEST_TMPDIR/$name.err" 3>&- &
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

# start_pgbouncer MODE [LISTEN [SERVERS [SOCKET]]]: PgBouncer on LISTEN
# (default loopback), and on a Unix socket in $PGB_DIR if SOCKET is set, in
# front of SERVERS ([databases]' host and port, default the test server),
# with every pool setting left at its default.
start_pgbouncer() {
	PGB_DIR=$PGLOCK_TEST_DIR/pgb-$BATS_TEST_NUMBER
	local d=$PGB_DIR
	mkdir -p "$d"
	chmod 777 "$d"
	PGB_PORT=$(( PGPORT + 1000 ))
	echo '"postgres" ""' >"$d/users.txt"
	cat >"$d/pgb.ini" <<-INI
	[databases]
	* = ${3:-host=$PGHOST port=$PGPORT}
	[pgbouncer]
	listen_addr = ${2:-127.0.0.1}
	listen_port = $PGB_PORT
	unix_socket_dir = ${4:+$d}
	auth_type = trust
	auth_file = $d/users.txt
	pool_mode = $1
	logfile = $d/pgb.log
	pidfile = $d/pgb.pid
	INI
	chown -R postgres "$d"
	runuser -u postgres -- pgbouncer -d "$d/pgb.ini"
	wait_until 10 test -s "$d/pgb.pid"
	BG_PIDS="${BG_PIDS:-} $(cat "$d/pgb.pid")"
	wait_until 10 bash -c "psql -h 127.0.0.1 -p $PGB_PORT -XAtc 'SELECT 1' >/dev/null 2>&1"
}

stop_pgbouncer() {
	kill "$(cat "$PGB_DIR/pgb.pid")" 2>/dev/null || true
	wait_until 10 bash -c "! ss -Hltn 'sport = :$PGB_PORT' | grep -q ."
	rm -rf "$PGB_DIR"
}

# netns_up: a veth pair into a network namespace of the test's own; a
# holder runs inside ("ip netns exec $ns ..."), reaching this side at
# $net.1, where the server (and any pooler) listens; netns_cut makes the
# path silent without closing anything.
# Skips where namespaces cannot be made; teardown removes it.
netns_up() {
	ns=pglk$$ host=pglh$$ peer=pgln$$
	if ! ip netns add "$ns" 2>/dev/null; then
		skip "network namespaces cannot be created here (need root and CAP_NET_ADMIN)"
	fi
	NETNS_CLEANUP="ip netns del $ns; ip link del $host"
	# ip netns exec unshares the mount namespace and remounts /sys: a
	# chroot whose / is no mount point, or no CAP_SYS_ADMIN, refuses.
	if ! err=$(ip netns exec "$ns" true 2>&1); then
		skip "ip netns exec cannot enter a namespace here: $err"
	fi
	# A subnet no other run uses (make sanitize and make valgrind run
	# side by side, CI's chroot beside them); pg.sh trusts 10.213.0.0/16.
	local n=$(( $$ % 250 ))
	while ip -4 route show | grep -q "^10\.213\.$n\."; do
		n=$(( (n + 1) % 250 ))
	done
	net=10.213.$n
	ip link add "$host" type veth peer name "$peer"
	ip link set "$peer" netns "$ns"
	ip addr add "$net.1/24" dev "$host"
	ip link set "$host" up
	ip netns exec "$ns" ip addr add "$net.2/24" dev "$peer"
	ip netns exec "$ns" ip link set "$peer" up
	ip netns exec "$ns" ip link set lo up
}

netns_cut() {
	# The holder's side keeps the server's address resolved: what it
	# sends then vanishes, as on a real cut, with no quick "no route to
	# host" when the neighbour entry would go stale.
	ip netns exec "$ns" ip neigh replace "$net.1" \
	    lladdr "$(cat "/sys/class/net/$host/address")" dev "$peer" nud permanent
	ip link set "$host" down
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

# old_runs_table TABLE ROLE: a table of records as an earlier build made it
# (no failures column, no history), and ROLE, which may only write it (on
# PostgreSQL 15, no CREATE on schema public either).
old_runs_table() {
	sql "CREATE TABLE $1 (key text PRIMARY KEY, lock_id text NOT NULL,
	     ok_at timestamptz, ok_host text, ok_seconds double precision,
	     ok_slot bigint, failed_at timestamptz, failed_host text,
	     failed_status integer)"
	sql "DROP ROLE IF EXISTS $2; CREATE ROLE $2 LOGIN;
	     GRANT SELECT, INSERT, UPDATE, DELETE ON $1 TO $2"
}

# faketime_sweep: remove the semaphores and shared memory that preloaded
# libfaketime (0.9.10) leaves in /dev/shm, named by pid, for processes that
# are gone: a new process of another user that gets such a pid cannot open
# them, and fails (lost.bats's preloaded server start did, once).
faketime_sweep() {
	local f pid
	for f in /dev/shm/sem.faketime_sem_* /dev/shm/faketime_shm_*; do
		[ -e "$f" ] || continue
		pid=${f##*_}
		kill -0 "$pid" 2>/dev/null || rm -f "$f"
	done
}
