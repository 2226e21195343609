#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
# measure.sh: the measurements of bench/run.sh after the uncontended one
# (bench/ab.py). Each appends plain rows, with a header line, to one TSV
# file per section in $BENCH_RAW; bench/report.py turns them into tables.
#
#   measure.sh contended ROUND NAME WORKERS RUNS CMD...
#       WORKERS loops of RUNS x "CMD... bench/rmw COUNTER LOG" on one key:
#       contended.tsv (one row) and handoffs.tsv (one row per handoff)
#   measure.sh waiting CONNINFO SECS
#       pglock and the floor wait SECS behind a holder: waiting.tsv
#   measure.sh rss NAME RUNS CMD...
#       peak RSS of each of RUNS runs of CMD (GNU time's %M): rss.tsv
#   measure.sh cpu NAME RUNS POSTMASTER-PID CMD...
#       client and server CPU of RUNS runs of CMD: cpu.tsv
#   measure.sh counter NAME TENANTS CLIENTS EACH CONNINFO
#       --version-counter allocations, checked gap-free: counter.tsv
set -euo pipefail

bench=$(cd "$(dirname "$0")" && pwd)
raw=${BENCH_RAW:?BENCH_RAW: the directory of the raw rows}
pglock=${BENCH_PGLOCK:-$bench/../pglock}
floor=$bench/floor
rmw=$bench/rmw
tick_ns=$((1000000000 / $(getconf CLK_TCK)))

# shellcheck source=servers.sh source-path=SCRIPTDIR
. "$bench/servers.sh"	# poll_until, gone

say() { printf 'bench: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
bg=()			# background processes to end if a measurement fails
trap 'for p in "${bg[@]}"; do kill -TERM "$p" 2>/dev/null; done' EXIT

# row FILE HEADER FIELD...: append one tab-separated row to $raw/FILE,
# after HEADER if the file is new.
row() {
	local f=$raw/$1 header=$2
	shift 2
	[ -s "$f" ] || printf '%s\n' "$header" >"$f"
	(IFS=$'\t'; printf '%s\n' "$*") >>"$f"
}

# now_ms: wall clock in ms, from bash's microsecond clock.
now_ms() {
	local t=${EPOCHREALTIME/./}
	echo "$((t / 1000)).${t: -3}"
}
ms_between() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

contended() {
	local round=$1 name=$2 workers=$3 runs=$4 d w p t0 t1 got fails overlaps
	local pids=()
	shift 4
	d=$raw/contended/$round-${name// /_}
	mkdir -p "$d"
	echo 0 >"$d/counter"
	: >"$d/log"
	: >"$d/fail"
	t0=$(now_ms)
	for ((w = 0; w < workers; w++)); do
		# shellcheck disable=SC2016
		FAILS=$d/fail timeout 600 bash -c 'n=$1; shift
		    for ((i = 0; i < n; i++)); do
			"$@" || echo "exit $?" >>"$FAILS"
		    done' worker "$runs" "$@" "$rmw" "$d/counter" "$d/log" \
		    >/dev/null 2>>"$d/stderr" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do
		wait "$p" || echo "worker exit $?" >>"$d/fail"
	done
	t1=$(now_ms)
	got=$(cat "$d/counter")
	fails=$(wc -l <"$d/fail")
	# A handoff: one holder's end to the next one's start (ns in the log).
	sort -n "$d/log" | awk 'NR > 1 { printf "%.4f\n", ($1 - e) / 1e6 } { e = $2 }' \
	    >"$d/handoff.ms"
	overlaps=$(awk '$1 < 0' "$d/handoff.ms" | wc -l)
	row contended.tsv $'round\ttool\tworkers\truns\tms\tcounter\tfailed\toverlaps' \
	    "$round" "$name" "$workers" "$runs" "$(ms_between "$t0" "$t1")" \
	    "$got" "$fails" "$overlaps"
	[ -s "$raw/handoffs.tsv" ] || printf 'round\ttool\tms\n' >"$raw/handoffs.tsv"
	awk -v r="$round" -v n="$name" '{ print r "\t" n "\t" $1 }' \
	    "$d/handoff.ms" >>"$raw/handoffs.tsv"
}

# cpu_ticks PID: utime + stime of PID, or with 13 the cutime + cstime of
# its reaped children, in clock ticks (/proc/PID/stat).
cpu_ticks() {
	local s
	s=$(cat "/proc/$1/stat")
	s=${s##*) }		# the fields after "(comm)"
	read -ra s <<<"$s"
	echo $((s[${2:-11}] + s[${2:-11} + 1]))
}
# sched_ns PID: the scheduler's precise count, where the kernel keeps it.
sched_ns() { cut -d' ' -f1 "/proc/$1/schedstat" 2>/dev/null || echo nan; }
hwm_kib() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }

waiting() {
	local conn=$1 secs=$2 holder wp wf p0 f0 ps0 fs0 p1 f1 ps1 fs1 hp hf
	sql() { timeout 10 psql -X -Atqd "$conn" -c "$1"; }
	count() {
		sql "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'
		    AND objid = 4242 AND objsubid = 1 AND granted = $1"
	}
	# Both take the lock with a raw id: no key hashing in their VmHWM.
	"$pglock" -d "$conn" --id 4242 sleep 120 >/dev/null 2>&1 &
	holder=$!
	bg+=("$holder")
	poll_until 20 test "$(count true)" = 1 || die "the holder did not get the lock"
	"$pglock" -d "$conn" --id 4242 true >/dev/null 2>&1 &
	wp=$!
	"$floor" "$conn" 4242 true >/dev/null 2>&1 &
	wf=$!
	bg+=("$wp" "$wf")
	poll_until 20 test "$(count false)" = 2 || die "the waiters are not waiting"
	p0=$(cpu_ticks "$wp") f0=$(cpu_ticks "$wf")
	ps0=$(sched_ns "$wp") fs0=$(sched_ns "$wf")
	sleep "$secs"		# the measurement itself, not a synchronisation
	p1=$(cpu_ticks "$wp") f1=$(cpu_ticks "$wf")
	ps1=$(sched_ns "$wp") fs1=$(sched_ns "$wf")
	[ "$(count false)" = 2 ] || die "a waiter stopped waiting"
	hp=$(hwm_kib "$wp") hf=$(hwm_kib "$wf")
	kill -TERM "$holder"
	poll_until 20 gone "$wp" "$wf" || die "the waiters did not finish"
	wait "$wp" || die "the waiting pglock exited $?"
	wait "$wf" || die "the waiting floor exited $?"
	wait "$holder" || true	# 143: its command was TERMed on purpose
	bg=()
	local h=$'process\tmetric\tvalue'
	row waiting.tsv "$h" pglock seconds "$secs"
	row waiting.tsv "$h" pglock stat_ms $(((p1 - p0) * tick_ns / 1000000))
	row waiting.tsv "$h" pglock stat_total_ms $((p1 * tick_ns / 1000000))
	row waiting.tsv "$h" floor stat_ms $(((f1 - f0) * tick_ns / 1000000))
	row waiting.tsv "$h" clock tick_ms $((tick_ns / 1000000))
	if [ "$ps1" != nan ]; then
		row waiting.tsv "$h" pglock sched_ms "$(ms_between "${ps0}e-6" "${ps1}e-6")"
		row waiting.tsv "$h" pglock sched_total_ms "$(ms_between 0 "${ps1}e-6")"
		row waiting.tsv "$h" floor sched_ms "$(ms_between "${fs0}e-6" "${fs1}e-6")"
	fi
	row waiting.tsv "$h" pglock vmhwm_kib "$hp"
	row waiting.tsv "$h" floor vmhwm_kib "$hf"
}

# GNU time reports its child's peak, which starts from its own small image
# (a child of a big process, such as python, would inherit that one's).
rss() {
	local name=$1 runs=$2 i
	shift 2
	for ((i = 0; i < runs; i++)); do
		timeout 60 /usr/bin/time -f %M -o "$raw/rss.out" "$@" >/dev/null 2>&1 ||
		    die "$name failed"
		row rss.tsv $'tool\tkib' "$name" "$(cat "$raw/rss.out")"
	done
	rm -f "$raw/rss.out"
}

# The server's share is the CPU of exited backends, which the postmaster
# reaps; the client's is bash's children: the tool, its command, the fork.
cpu() {
	local name=$1 runs=$2 pm=$3 s0 s1 c i
	shift 3
	s0=$(cpu_ticks "$pm" 13)
	c=$( (for ((i = 0; i < runs; i++)); do
		"$@" >/dev/null 2>&1 || exit 1
	    done; times) | tail -n 1) || die "$name failed"
	s1=$(cpu_ticks "$pm" 13)
	# times: "0mU.UUUs 0mS.SSSs" for the children, that is the runs.
	c=$(echo "$c" | awk '{ gsub(/[ms]/, " ")
	    printf "%.0f", ($1 * 60 + $2 + $3 * 60 + $4) * 1000 }')
	row cpu.tsv $'tool\truns\tclient_ms\tserver_ms' "$name" "$runs" "$c" \
	    $(((s1 - s0) * tick_ns / 1000000))
}

# Every client allocates EACH versions of its tenant; each tenant must end
# with exactly 1..CLIENTS*EACH, no gaps.
counter() {
	local name=$1 tenants=$2 clients=$3 each=$4 conn=$5 d t c p t0 t1
	local check=ok pids=()
	d=$raw/counter/$name
	mkdir -p "$d"
	t0=$(now_ms)
	for ((t = 0; t < tenants; t++)); do
		for ((c = 0; c < clients; c++)); do
			# shellcheck disable=SC2016
			timeout 300 bash -c 'for ((i = 0; i < $1; i++)); do
			    "$2" -d "$3" --version-counter "$4" || exit; done' \
			    vc "$each" "$pglock" "$conn" "bench-$name-$t" \
			    >"$d/out-$t-$c" 2>>"$d/stderr" &
			pids+=($!)
		done
	done
	for p in "${pids[@]}"; do
		wait "$p" || check="FAILED: a client exited non-zero"
	done
	t1=$(now_ms)
	for ((t = 0; t < tenants; t++)); do
		cat "$d"/out-"$t"-* | sort -n >"$d/got-$t"
		seq 1 $((clients * each)) >"$d/want-$t"
		cmp -s "$d/got-$t" "$d/want-$t" ||
		    check="FAILED: tenant $t's versions are not 1..$((clients * each))"
	done
	row counter.tsv $'case\ttenants\tclients\teach\tms\tcheck' "$name" \
	    "$tenants" "$clients" "$each" "$(ms_between "$t0" "$t1")" "$check"
}

case ${1:-} in
contended) [ $# -ge 6 ] ||
    die "usage: measure.sh contended ROUND NAME WORKERS RUNS CMD..." ;;
waiting) [ $# -eq 3 ] || die "usage: measure.sh waiting CONNINFO SECS" ;;
rss) [ $# -ge 4 ] || die "usage: measure.sh rss NAME RUNS CMD..." ;;
cpu) [ $# -ge 5 ] || die "usage: measure.sh cpu NAME RUNS POSTMASTER-PID CMD..." ;;
counter) [ $# -eq 6 ] ||
    die "usage: measure.sh counter NAME TENANTS CLIENTS EACH CONNINFO" ;;
*) die "usage: measure.sh contended|waiting|rss|cpu|counter ..." ;;
esac
"$@"
