#!/bin/sh
# SPDX-License-Identifier: ISC
# Build every libFuzzer target into fuzz/bin/ and run each for SECONDS on a
# scratch copy of its seed corpus (the committed one stays as it is).
# Usage: fuzz/run.sh SECONDS [TARGET...]; FUZZ_JOBS=N runs N at a time;
# FUZZ_KEEP=DIR keeps each grown corpus in DIR/TARGET (to merge seeds).
# Exits 1 if any target crashed (the input is kept in fuzz/bin/), 2 if the
# build failed.
set -u

cd "$(dirname "$0")/.." || exit 2
secs=${1:?usage: fuzz/run.sh SECONDS [TARGET...]}
shift
case $secs in
''|*[!0-9]*) echo "fuzz: SECONDS must be a number" >&2; exit 2 ;;
esac
targets=${*:-fuzz_arg fuzz_key fuzz_counter}
jobs=${FUZZ_JOBS:-1}
CC=${CC:-clang}
PKG_CONFIG=${PKG_CONFIG:-pkg-config}
# UBSan recovers by default; a fuzzer must stop at the first report.
FUZZ_CFLAGS=${FUZZ_CFLAGS:--g -O1 -fno-omit-frame-pointer \
-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all}
WARN="-std=c99 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Wall -Wextra \
-Wpedantic -Wshadow -Wformat=2 -Wstrict-prototypes -Wmissing-prototypes"
LIBS=$($PKG_CONFIG --cflags --libs libpq libcrypto zlib 2>/dev/null) ||
	LIBS="-I$(pg_config --includedir) -L$(pg_config --libdir) \
-lpq -lcrypto -lz"

# The lib/ sources each target links: only what its parsers reach.
sources() {
	case $1 in
	fuzz_arg)	echo lib/arg.c ;;
	fuzz_key)	echo lib/key.c lib/hash.c ;;
	fuzz_counter)	echo lib/counter.c lib/conn.c lib/query.c lib/said.c \
			    lib/proof.c lib/sig.c lib/key.c lib/table.c lib/hash.c ;;
	*)		return 1 ;;
	esac
}

mkdir -p fuzz/bin
for t in $targets; do
	src=$(sources "$t") || { echo "fuzz: $t: no such target" >&2; exit 2; }
	# shellcheck disable=SC2086 # flag lists are meant to split
	$CC $FUZZ_CFLAGS $WARN -o "fuzz/bin/$t" "fuzz/$t.c" $src $LIBS ||
		{ echo "fuzz: $t: build failed" >&2; exit 2; }
done

pids=
scratch=$(mktemp -d) || exit 2
trap 'rm -rf "$scratch"' EXIT
trap 'kill $pids 2>/dev/null; exit 130' INT TERM

# One run; libFuzzer exits non-zero on a crash, leak, timeout or OOM.
run() {
	mkdir "$scratch/$1"
	cp fuzz/corpus/"$1"/* "$scratch/$1/" 2>/dev/null
	rm -f "fuzz/bin/$1".crash-* "fuzz/bin/$1".leak-* \
	    "fuzz/bin/$1".timeout-* "fuzz/bin/$1".oom-*
	# Value profiles steer mutations toward the bounds the parsers test.
	"fuzz/bin/$1" -max_total_time="$secs" -timeout=10 \
	    -use_value_profile=1 -print_final_stats=1 \
	    -artifact_prefix="fuzz/bin/$1." \
	    "$scratch/$1" >"fuzz/bin/$1.log" 2>&1 || return 1
	if [ -n "${FUZZ_KEEP:-}" ]; then
		mkdir -p "$FUZZ_KEEP/$1" && cp "$scratch/$1"/* "$FUZZ_KEEP/$1/"
	fi
}

# Start up to $jobs runs; the runs all last $secs, so wait oldest first.
status=0
names=
for t in $targets; do
	run "$t" &
	pids="$pids $!"
	names="$names $t"
	# shellcheck disable=SC2086 # count the pids: they must split
	set -- $pids
	[ $# -lt "$jobs" ] && continue
	wait "$1" || status=1
	pids=${pids#* "$1"}
done
for p in $pids; do
	wait "$p" || status=1
done

# One line per target: executions, coverage, and any crash input.
for t in $names; do
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' \
	    "fuzz/bin/$t.log")
	cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "fuzz/bin/$t.log" | tail -n 1)
	found=$(ls "fuzz/bin/$t".crash-* "fuzz/bin/$t".leak-* \
	    "fuzz/bin/$t".timeout-* "fuzz/bin/$t".oom-* 2>/dev/null)
	echo "fuzz: $t: ${execs:-?} runs (${secs}s), ${cov:-no coverage}," \
	    "${found:-no crash}"
	if [ -n "$found" ]; then
		grep -m 1 -A 30 -e '^==[0-9]*==ERROR' -e 'runtime error' \
		    -e 'check failed' "fuzz/bin/$t.log" >&2
		status=1
	fi
done
exit "$status"
