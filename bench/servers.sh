# shellcheck shell=bash
# SPDX-License-Identifier: ISC
# servers.sh: the private servers of bench/run.sh, sourced by it: a
# PostgreSQL (tests/pg.sh) and an etcd on loopback with its data on tmpfs;
# servers_stop stops whatever was started. Also poll_until and gone, which
# bench/measure.sh uses too.

servers_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
pg_dir='' etcd_pid='' etcd_data=''
# For the caller: set by pg_start and etcd_start.
# shellcheck disable=SC2034
conn_unix='' conn_tcp='' url_tcp='' pm='' pg_version='' etcd_ep=''

# poll_until SECS CMD...: retry CMD until it succeeds, for at most SECS.
poll_until() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || return 1
		sleep 0.05
	done
}

# gone PID...: every PID has exited (a zombie counts: only wait is left).
gone() {
	local p s
	for p; do
		s=$(cat "/proc/$p/stat" 2>/dev/null) || continue
		s=${s##*) }
		[ "${s%% *}" = Z ] || return 1
	done
}

# pg_start DIR: a fresh cluster in DIR; sets conn_unix, conn_tcp, url_tcp,
# pm (the postmaster's pid) and pg_version.
# shellcheck disable=SC2034
pg_start() {
	pg_dir=$1
	timeout 120 "$servers_top/tests/pg.sh" start "$pg_dir" >&2 || return 1
	# shellcheck disable=SC1091
	. "$pg_dir/env"
	conn_unix="host=$PGHOST port=$PGPORT user=postgres dbname=postgres"
	conn_tcp="host=127.0.0.1 port=$PGPORT user=postgres dbname=postgres"
	url_tcp="postgres://postgres@127.0.0.1:$PGPORT/postgres"
	unset PGHOST PGPORT PGUSER PGDATABASE
	pm=$(head -n 1 "$pg_dir/data/postmaster.pid")
	pg_version=$(timeout 10 psql -X -Atd "$conn_unix" -c 'SHOW server_version')
}

# port_free PORT: nothing listens on 127.0.0.1:PORT.
port_free() {
	# shellcheck disable=SC2016
	! timeout 1 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' port "$1" 2>/dev/null
}

etcd_healthy() {
	timeout 3 etcdctl --endpoints="$etcd_ep" endpoint health >/dev/null 2>&1
}

# etcd_start LOG DIR: a one-member etcd on two free loopback ports; sets
# etcd_ep. PostgreSQL runs with fsync off; etcd 3.4 cannot, so its data
# goes to tmpfs where there is one, else to DIR.
etcd_start() {
	local log=$1 port=$((21000 + $$ % 20000)) peer
	while ! port_free "$port" || ! port_free "$((port + 1))"; do
		port=$((port + 2))
	done
	peer=http://127.0.0.1:$((port + 1))
	if [ -d /dev/shm ] && [ -w /dev/shm ]; then
		etcd_data=$(mktemp -d /dev/shm/pglock-bench-etcd.XXXXXX)
	else
		etcd_data=$2
	fi
	etcd --name bench --data-dir "$etcd_data" \
	    --listen-client-urls "http://127.0.0.1:$port" \
	    --advertise-client-urls "http://127.0.0.1:$port" \
	    --listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" \
	    --initial-cluster "bench=$peer" --logger zap --log-level error \
	    >"$log" 2>&1 &
	etcd_pid=$!
	etcd_ep=127.0.0.1:$port
	export ETCDCTL_API=3
	if ! poll_until 30 etcd_healthy; then
		etcd_ep=''
		return 1
	fi
}

# servers_stop: stop both, whatever state they are in (errexit is off:
# it runs from the EXIT trap, and a server killed returns non-zero).
servers_stop() {
	set +e
	if [ -n "$etcd_pid" ]; then
		kill -TERM "$etcd_pid" 2>/dev/null
		poll_until 10 gone "$etcd_pid" || kill -KILL "$etcd_pid"
		wait "$etcd_pid" 2>/dev/null
		etcd_pid=''
	fi
	if [ -n "$etcd_data" ]; then
		rm -rf "$etcd_data"
		etcd_data=''
	fi
	if [ -n "$pg_dir" ]; then
		timeout 60 "$servers_top/tests/pg.sh" stop "$pg_dir" >/dev/null 2>&1
		pg_dir=''
	fi
	set -e
}
