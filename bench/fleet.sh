#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
# fleet.sh: a fleet's cron minute. N pglocks start at once on one key, each
# running a short critical section that notes any overlap:
#   1. 1,000 through PgBouncer (transaction pooling, default pool size 20)
#      in front of a server with max_connections = 100;
#   2. 400 straight to a server with max_connections = 200.
# Every client must succeed and no two critical sections may overlap.
# Reports throughput and the time from start to holding the lock (p50,
# p99); writes bench/fleet.tsv and bench/fleet.md. Knobs: POOLED (1000),
# DIRECT (400).
set -euo pipefail

bench=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$bench/.." && pwd)
pglock=$top/pglock
pooled=${POOLED:-1000}
direct=${DIRECT:-400}
tsv=$bench/fleet.tsv
md=$bench/fleet.md

command -v pgbouncer >/dev/null || { echo "fleet.sh: pgbouncer is not installed" >&2; exit 69; }
dir=$(mktemp -d /tmp/pglock-fleet.XXXXXX)
chmod 755 "$dir"
cleanup() {
	[ -s "$dir/pgb/pgb.pid" ] && kill "$(cat "$dir/pgb/pgb.pid")" 2>/dev/null
	for s in s100 s200; do "$top/tests/pg.sh" stop "$dir/$s" >/dev/null 2>&1; done
	rm -rf "$dir"
}
trap cleanup EXIT

# A thousand clients need more descriptors than a shell's default 1024.
ulimit -n 8192

PG_MAX_CONNECTIONS=100 "$top/tests/pg.sh" start "$dir/s100"
PG_MAX_CONNECTIONS=200 "$top/tests/pg.sh" start "$dir/s200"

# PgBouncer with its defaults but for max_client_conn (default 100), which
# a fleet of 1,000 clients raises: the pool (default_pool_size 20) is not.
mkdir -p "$dir/pgb"
echo '"postgres" ""' >"$dir/pgb/users.txt"
pgb_port=$(( $(. "$dir/s100/env"; echo "$PGPORT") + 1000 ))
cat >"$dir/pgb/pgb.ini" <<INI
[databases]
* = host=$dir/s100 port=$(. "$dir/s100/env"; echo "$PGPORT")
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $pgb_port
unix_socket_dir =
auth_type = trust
auth_file = $dir/pgb/users.txt
pool_mode = transaction
max_client_conn = $((pooled + 100))
logfile = $dir/pgb/pgb.log
pidfile = $dir/pgb/pgb.pid
INI
chown -R postgres "$dir/pgb"
runuser -u postgres -- pgbouncer -d "$dir/pgb/pgb.ini"
for _ in $(seq 100); do
	psql -h 127.0.0.1 -p "$pgb_port" -U postgres -XAtc 'SELECT 1' >/dev/null 2>&1 && break
	sleep 0.1
done

# storm NAME N PGLOCK-CONNECTION-OPTIONS...: one row of fleet.tsv.
storm() {
	local name=$1 n=$2 d=$dir/$1 i s t0 t1 ok=0 failed=0
	shift 2
	mkdir -p "$d"
	t0=$EPOCHREALTIME
	for i in $(seq "$n"); do
		(
			start=$EPOCHREALTIME
			exec timeout 300 "$pglock" "$@" fleet-k bash -c '
			    echo "$(( ${EPOCHREALTIME/./} - ${0/./} ))" >>"$1/us"
			    mkdir "$1/in" 2>/dev/null || echo overlap >>"$1/bad"
			    rmdir "$1/in"' "$start" "$d" 2>>"$d/err"
		) &
	done
	for i in $(seq "$n"); do
		s=0
		wait -n || s=$?
		[ "$s" -eq 0 ] && ok=$((ok + 1)) || failed=$((failed + 1))
	done
	t1=$EPOCHREALTIME
	sort -n "$d/us" | awk -v name="$name" -v n="$n" -v ok="$ok" \
	    -v failed="$failed" -v overlaps="$(cat "$d/bad" 2>/dev/null | wc -l)" \
	    -v secs="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" '
	    { a[NR] = $1 }
	    END {
		p50 = a[int(NR * 0.50 + 0.5)] / 1000; p99 = a[int(NR * 0.99 + 0.5)] / 1000
		printf "%s\t%d\t%d\t%d\t%d\t%.2f\t%.0f\t%.1f\t%.1f\n", name, n, ok, \
		    failed, overlaps, secs, ok / secs, p50, p99
	    }' >>"$tsv"
	sort -u "$d/err" | head -n 5 >&2
}

printf 'scenario\tclients\tok\tfailed\toverlaps\tseconds\tlocks_per_s\tp50_ms\tp99_ms\n' >"$tsv"
storm "pgbouncer-transaction-pool20-max100" "$pooled" -h 127.0.0.1 -p "$pgb_port" -U postgres -d postgres
storm "direct-max200" "$direct" -h "$dir/s200" -p "$(. "$dir/s200/env"; echo "$PGPORT")" -U postgres -d postgres

{
	echo "# pglock fleet benchmark"
	echo
	echo "Written by \`bench/fleet.sh\` (\`make bench\`); do not edit by hand."
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs; every client starts at once on one key."
	echo
	echo "| scenario | clients | ok | failed | overlaps | seconds | locks/s | p50 to acquire ms | p99 to acquire ms |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
	tail -n +2 "$tsv" | tr '\t' '|' | sed 's/^/|/; s/$/|/'
} >"$md"
cat "$md"
awk -F'\t' 'NR > 1 && ($4 != 0 || $5 != 0) { bad = 1 } END { exit bad }' "$tsv" ||
	{ echo "fleet.sh: a client failed or critical sections overlapped" >&2; exit 1; }
