#!/bin/sh
# SPDX-License-Identifier: ISC
# pg.sh: a throwaway PostgreSQL for the tests and the demo. initdb refuses
# to run as root, so as root the cluster runs as Debian's postgres account.
#   tests/pg.sh start DIR           initdb + start; writes DIR/env (PGHOST, ...)
#   tests/pg.sh standby DIR PRIMARY a streaming standby of the cluster in PRIMARY
#   tests/pg.sh restart DIR         fast restart
#   tests/pg.sh stop DIR            stop and remove DIR
# PG_MAX_CONNECTIONS sets max_connections for start (default 120); PG_PORT
# a port of the caller's choice, and PG_UNIX_ONLY=1 no TCP (for a standby
# on the primary's port number, in a socket directory of its own).
set -eu

cmd=${1:?usage: pg.sh start|standby|stop|restart DIR [PRIMARY]}
dir=${2:?usage: pg.sh start|standby|stop|restart DIR [PRIMARY]}
case $dir in /*) ;; *) dir=$PWD/$dir ;; esac

bindir=$(pg_config --bindir 2>/dev/null || true)
[ -x "$bindir/initdb" ] ||
	bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -x "$bindir/initdb" ] || { echo "pg.sh: initdb not found" >&2; exit 69; }

# As root, from /: the postgres account may not enter the caller's
# directory (/root/...), and initdb and pg_ctl say so when they cannot.
as_owner() {
	if [ "$(id -u)" = 0 ]; then
		(cd / && exec runuser -u postgres -- "$@")
	else
		"$@"
	fi
}

# A free port: only the socket's name depends on it, plus TCP tests. Below
# the kernel's ephemeral range, with room for the tests' PGPORT + 1000 (a
# pooler) and + 2000: a client's port there, though not listening, made the
# server's bind of 0.0.0.0 fail (TCP refused, the Unix socket up) while
# lanes ran side by side. No socket of any state may have it.
free_port() {
	port=${PG_PORT:-}
	[ -z "$port" ] || return 0
	low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null) ||
		low=32768
	span=$(( ${low:-32768} - 22500 ))
	[ "$span" -ge 1000 ] || span=30000
	port=$(( 20000 + $$ % span ))
	while ss -Hatn "( sport = :$port or sport = :$((port + 1000)) or \
	    sport = :$((port + 2000)) )" 2>/dev/null | grep -q .; do
		port=$((port + 1))
	done
}

# Start the cluster in $dir/data on $port, with its socket in $dir.
start_server() {
	cat >>"$dir/data/postgresql.conf" <<-CONF
	port = $port
	unix_socket_directories = '$dir'
	CONF
	[ -z "${PG_UNIX_ONLY:-}" ] ||
		echo "listen_addresses = ''" >>"$dir/data/postgresql.conf"
	as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 30 \
	    start >/dev/null || { cat "$dir/log" >&2; exit 1; }
	cat >"$dir/env" <<-ENV
	export PGHOST='$dir' PGPORT=$port PGUSER=postgres PGDATABASE=postgres
	export PGLOCK_TEST_PGDATA='$dir/data' PGLOCK_TEST_PGBIN='$bindir'
	ENV
}

case $cmd in
start)
	mkdir -p "$dir"
	[ "$(id -u)" = 0 ] && chown postgres "$dir"
	free_port
	as_owner "$bindir/initdb" -D "$dir/data" -U postgres -A trust \
	    -E UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1 ||
	    { cat "$dir/initdb.log" >&2; exit 1; }
	# Trust only this machine and the test's own network namespaces.
	cat >"$dir/data/pg_hba.conf" <<-HBA
	local all all trust
	local replication all trust
	host all all 127.0.0.1/32 trust
	host all all 10.213.0.0/16 trust
	HBA
	cat >>"$dir/data/postgresql.conf" <<-CONF
	listen_addresses = '*'
	fsync = off
	synchronous_commit = off
	full_page_writes = off
	max_connections = ${PG_MAX_CONNECTIONS:-120}
	log_min_messages = warning
	CONF
	start_server
	;;
standby)
	primary=${3:?usage: pg.sh standby DIR PRIMARY}
	mkdir -p "$dir"
	[ "$(id -u)" = 0 ] && chown postgres "$dir"
	free_port
	# -R: standby.signal and primary_conninfo; the copied port and
	# socket directory are overridden by start_server's lines after them.
	as_owner "$bindir/pg_basebackup" -h "$primary" \
	    -p "$(. "$primary/env"; echo "$PGPORT")" -U postgres \
	    -D "$dir/data" -R -X stream -c fast >/dev/null
	start_server
	;;
restart)
	as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 30 \
	    -m fast restart >/dev/null
	;;
stop)
	if [ -d "$dir/data" ]; then
		as_owner "$bindir/pg_ctl" -D "$dir/data" -w -t 30 -m immediate \
		    stop >/dev/null 2>&1 || true
	fi
	rm -rf "$dir"
	;;
*)
	echo "pg.sh: unknown command $cmd" >&2
	exit 64
	;;
esac
