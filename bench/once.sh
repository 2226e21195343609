#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
# once.sh: what --once-per costs, side by side in one interleaved run
# (bench/ab.py) on a throwaway PostgreSQL, over its Unix socket and then
# over TCP on the loopback (auto scope: the proof of a direct path and the
# record's table looked at before the lock, a round trip more): a plain run
# of /bin/true, a --once-per run that finds its slot done and runs nothing
# (a skipped cron tick), and a --record run (the command, and its outcome
# written). A skipped run must cost no more than a plain one. Writes
# bench/once.md. Knob: RUNS (300).
set -euo pipefail

bench=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$bench/.." && pwd)
pglock=$top/pglock
runs=${RUNS:-300}
out=$bench/once.md

dir=$(mktemp -d /tmp/pglock-bench.XXXXXX)
chmod 755 "$dir"
trap '"$top/tests/pg.sh" stop "$dir/pg" >/dev/null 2>&1; rm -rf "$dir"' EXIT
"$top/tests/pg.sh" start "$dir/pg"
. "$dir/pg/env"

# The slot done once, so that every timed --once-per run skips; the table
# there before the first --record.
"$pglock" --once-per 1000d bench-once true
"$pglock" --record bench-record true
{
	echo "# --once-per against a plain run"
	echo
	echo "Written by \`RUNS=$runs bench/once.sh\` (\`make bench\` runs 300): $runs interleaved rounds"
	echo "(\`bench/ab.py\`), medians, $(date -u '+%Y-%m-%d %H:%M UTC'); PostgreSQL over"
	echo "its Unix socket, then over TCP on the loopback."
	for via in "" "-h 127.0.0.1 "; do
		echo
		echo '```'
		"$bench/ab.py" "$runs" "$pglock $via""bench-plain /bin/true" \
		    "$pglock $via--once-per 1000d bench-once /bin/true" \
		    "$pglock $via--record bench-record /bin/true"
		echo '```'
	done
} >"$out.new"
mv "$out.new" "$out"
cat "$out"
