#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
# run.sh: pglock side by side with the floor (bench/floor.c, a minimal libpq
# client linked as pglock is) and its peers (flock, a psql wrapper, etcdctl
# lock, withlock) on private servers on loopback.
#
# `make bench` builds pglock, bench/floor and bench/rmw, then runs this. The
# steps: bench/peers.sh installs what is missing; bench/servers.sh starts a
# PostgreSQL and an etcd; bench/ab.py (uncontended) and bench/measure.sh
# (the rest) write plain rows to bench/results/*.tsv; bench/report.py turns
# them into bench/results.md and bench/results.png. Every server it starts
# is stopped on exit.
#
# Knobs: BENCH_RUNS (200) interleaved rounds of the uncontended timing;
# BENCH_CONTENDED_RUNS (20) runs per worker and round under contention.
set -euo pipefail

bench=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$bench/.." && pwd)
pglock=${BENCH_PGLOCK:-$top/pglock}
raw=$bench/results
runs=${BENCH_RUNS:-200}
con_runs=${BENCH_CONTENDED_RUNS:-20}
con_rounds=5		# contended rounds, each tool once per round
workers=8		# contended and version counter clients
wait_s=10		# how long the waiters of measurement 4 wait
cpu_runs=200		# runs per tool for CPU per run
export BENCH_RAW=$raw BENCH_PGLOCK=$pglock

say() { printf 'bench: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

for n in "$runs" "$con_runs"; do
	case $n in
	'' | *[!0-9]* | 0) die "BENCH_RUNS and BENCH_CONTENDED_RUNS: a count, not '$n'" ;;
	esac
done
for f in "$pglock" "$bench/floor" "$bench/rmw"; do
	[ -x "$f" ] || die "$f: not built (run make bench)"
done
# An instrumented pglock (CFLAGS with -fsanitize) is not one to time.
if LC_ALL=C grep -q -e __asan_init -e __ubsan_handle "$pglock"; then
	die "$pglock is a sanitizer build: rebuild it (make -B pglock)"
fi

rm -rf "$raw"
mkdir -p "$raw"
"$bench/peers.sh" >"$raw/unavailable.tsv.new" ||
    die "cannot install what the benchmark needs"
{ printf 'tool\treason\n'; cat "$raw/unavailable.tsv.new"; } >"$raw/unavailable.tsv"
rm "$raw/unavailable.tsv.new"

work=$(mktemp -d /tmp/pglock-bench.XXXXXX)
chmod 755 "$work"		# the server runs as postgres when we are root
# shellcheck source=servers.sh source-path=SCRIPTDIR
. "$bench/servers.sh"
trap 'servers_stop; rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

unavailable() { grep -q "^$1"$'\t' "$raw/unavailable.tsv"; }
info() { printf '%s\t%s\n' "$1" "$2" >>"$raw/info.tsv"; }
printf 'key\tvalue\n' >"$raw/info.tsv"
info date "$(date -u '+%Y-%m-%d %H:%M UTC')"
info cpus "$(nproc)"
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
info machine "$(nproc) CPUs, $cpu_model, Linux $(uname -r)"
info load_start "$(cut -d' ' -f1-3 /proc/loadavg)"

say "starting PostgreSQL"
pg_start "$work/pg" || die "PostgreSQL did not start"
info pg_version "$pg_version"
if ! unavailable "etcdctl lock"; then
	say "starting etcd"
	etcd_start "$raw/etcd.log" "$work/etcd" ||
	    printf 'etcdctl lock\tetcd did not start (see results/etcd.log)\n' \
	    >>"$raw/unavailable.tsv"
fi
info etcd_version "$(etcd --version 2>/dev/null | sed -n 's/^etcd Version: //p')"
info lock_version "$(sed -n 's/^ *"version": "\(.*\)",$/\1/p' \
    "$bench/node_modules/advisory-lock/package.json" 2>/dev/null)"
info pglock_version "$("$pglock" -V 2>/dev/null | head -n 1)"
info tree "$(git -C "$top" describe --always --dirty 2>/dev/null || echo n/a)"
info runs "$runs"
info contended_rounds "$con_rounds"
info contended_runs "$con_runs"
info workers "$workers"

# line FILE NAME CMD...: one line NAME<TAB>CMD... of $raw/FILE; the rows
# keep the argument vector, with no quoting to re-parse.
line() {
	local f=$raw/$1
	shift
	(IFS=$'\t'; printf '%s\n' "$*") >>"$f"
}
# timed NAME CMD...: CMD is timed uncontended once it works; a tool that
# fails is reported as not available, with its last words.
u=uncontended-tools.tsv
timed() {
	local name=$1
	shift
	unavailable "$name" && return 0
	if timeout 60 "$@" >"$work/check.out" 2>&1; then
		line $u "$name" "$@"
	else
		printf '%s\tfailed: %s\n' "$name" "$(tail -n 1 "$work/check.out")" \
		    >>"$raw/unavailable.tsv"
		say "$name: failed: $(tail -n 1 "$work/check.out")"
	fi
}
# contended NAME CMD...: CMD, followed by the critical section, is timed
# under contention if the tool worked uncontended.
c=contended-tools.tsv
contended() {
	grep -q "^$1"$'\t' "$raw/$u" && line $c "$@"
	return 0
}

# --- 1. uncontended: every tool once a round, in a new random order ---------

timed "pglock unix" "$pglock" -d "$conn_unix" bench-uncontended true
timed "floor unix" "$bench/floor" "$conn_unix" 1001 true
timed "pglock tcp" "$pglock" -d "$conn_tcp" bench-uncontended true
timed "floor tcp" "$bench/floor" "$conn_tcp" 1001 true
timed flock flock "$work/flock.lock" true
timed "psql wrapper" psql -X -q -d "$conn_unix" \
    -c 'SELECT pg_advisory_lock(1002)' -c '\! true'
timed "etcdctl lock" etcdctl --endpoints="$etcd_ep" lock bench-uncontended -- true
timed withlock "$bench/node_modules/.bin/withlock" --db "$url_tcp" \
    bench-uncontended -- true
say "1. uncontended: $(wc -l <"$raw/$u") tools x $runs rounds"
timeout 1800 "$bench/ab.py" --tools "$raw/$u" "$runs" >"$raw/uncontended.tsv" ||
    die "uncontended timing failed"

# --- 2-3. contended: the tools in a new random order each round -------------

contended "pglock unix" "$pglock" -d "$conn_unix" bench-contended
contended "floor unix" "$bench/floor" "$conn_unix" 1003
contended flock flock "$work/flock2.lock"
contended "etcdctl lock" etcdctl --endpoints="$etcd_ep" lock bench-contended --
say "2-3. contended: $con_rounds rounds x $workers workers x $con_runs runs per tool"
for ((r = 0; r < con_rounds; r++)); do
	shuf "$raw/$c" >"$work/order"
	while IFS=$'\t' read -r -a cmd; do
		"$bench/measure.sh" contended "$r" "${cmd[0]}" "$workers" \
		    "$con_runs" "${cmd[@]:1}" </dev/null
	done <"$work/order"
done

# --- 4. waiting, peak RSS, CPU per run -----------------------------------

say "4. waiting: a pglock and the floor wait ${wait_s}s behind a holder"
"$bench/measure.sh" waiting "$conn_unix" "$wait_s"
if [ -x /usr/bin/time ]; then
	say "peak RSS: 5 runs per tool under GNU time"
	while IFS=$'\t' read -r -a cmd; do
		"$bench/measure.sh" rss "${cmd[0]}" 5 "${cmd[@]:1}" </dev/null
	done <"$raw/$u"
fi
say "CPU per run: the floor and pglock, $cpu_runs runs each"
"$bench/measure.sh" cpu "floor unix" "$cpu_runs" "$pm" \
    "$bench/floor" "$conn_unix" 1004 true
"$bench/measure.sh" cpu "pglock unix" "$cpu_runs" "$pm" \
    "$pglock" -d "$conn_unix" bench-cpu true

# --- 5. version counter -----------------------------------------------------

say "5. version counter"
"$bench/measure.sh" counter 1x8 1 "$workers" 40 "$conn_unix"
"$bench/measure.sh" counter 8x8 8 "$workers" 5 "$conn_unix"

info load_end "$(cut -d' ' -f1-3 /proc/loadavg)"
"$bench/report.py" "$raw"
