#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
# counter.sh: --version-counter allocations per second, 1 tenant x 8
# clients and 8 tenants x 8 clients, on a fresh table and again after
# 1,000,000 versions were issued (by the very transaction pglock runs), to
# show that an allocation does not get dearer as versions accumulate.
# Writes bench/counter.md. Knobs: VERSIONS (1000000), RUNS (9), PER (25).
set -euo pipefail

bench=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$bench/.." && pwd)
pglock=$top/pglock
versions=${VERSIONS:-1000000}
runs=${RUNS:-9}
per=${PER:-25}
clients=8
out=$bench/counter.md

dir=$(mktemp -d /tmp/pglock-bench.XXXXXX)
chmod 755 "$dir"
trap '"$top/tests/pg.sh" stop "$dir/pg" >/dev/null 2>&1; rm -rf "$dir"' EXIT
"$top/tests/pg.sh" start "$dir/pg"
. "$dir/pg/env"
pgbench=$PGLOCK_TEST_PGBIN/pgbench
[ -x "$pgbench" ] || { echo "counter.sh: pgbench not found" >&2; exit 69; }

now_ns() { date +%s%N; }
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# rate TENANTS: allocations per second of $clients pglock loops of $per
# allocations each, client i using tenant (i % TENANTS).
rate() {
	local tenants=$1 t0 t1 i
	t0=$(now_ns)
	for i in $(seq 0 $((clients - 1))); do
		(for _ in $(seq "$per"); do
			timeout 30 "$pglock" -q --version-counter "t$tenants-$((i % tenants))" >/dev/null
		done) &
	done
	wait
	t1=$(now_ns)
	echo $(( clients * per * 1000000000 / (t1 - t0) ))
}

# sql_rate TENANTS: the same transaction driven by pgbench for 5 s (no
# process start or connection per allocation): the table's own cost.
sql_rate() {
	cat >"$dir/alloc-$1.sql" <<-SQL
	\set t random(0, $(($1 - 1)))
	BEGIN ISOLATION LEVEL READ COMMITTED;
	SELECT pg_advisory_xact_lock(hashtextextended('t$1-' || :t, 1));
	INSERT INTO pglock_versions AS v (tenant, version) VALUES ('t$1-' || :t, 1) ON CONFLICT (tenant) DO UPDATE SET version = v.version + 1;
	COMMIT;
	SQL
	"$pgbench" -n -M prepared -c "$clients" -j 2 -T 5 -f "$dir/alloc-$1.sql" 2>/dev/null |
	    sed -n 's/^tps = \([0-9.]*\).*/\1/p' | cut -d. -f1
}

measure() {
	local label=$1 t r
	for t in 1 8; do
		r=$(for _ in $(seq "$runs"); do rate "$t"; done | median)
		s=$(for _ in 1 2 3; do sql_rate "$t"; done | median)
		echo "$label $t $r $s"
	done
}

"$pglock" -q --version-counter warm-up >/dev/null	# creates the table
before=$(measure fresh)
echo "$before" >&2

# Issue the versions with the transaction pglock runs, half to the single
# tenant and half spread over the eight.
echo "counter.sh: issuing $versions versions..." >&2
cat >"$dir/issue.sql" <<-'SQL'
\set t random(0, 8)
BEGIN ISOLATION LEVEL READ COMMITTED;
SELECT pg_advisory_xact_lock(hashtextextended('issue' || :t, 1));
INSERT INTO pglock_versions AS v (tenant, version) VALUES (CASE WHEN :t = 8 THEN 't1-0' ELSE 't8-' || :t END, 1) ON CONFLICT (tenant) DO UPDATE SET version = v.version + 1;
COMMIT;
SQL
sum_sql="SELECT sum(version) FROM pglock_versions WHERE tenant LIKE 't%'"
total=$(psql -XAtc "$sum_sql")
"$pgbench" -n -M prepared -c "$clients" -j 2 -t $((versions / clients)) -f "$dir/issue.sql" >/dev/null 2>&1
total=$(( $(psql -XAtc "$sum_sql") - total ))
# Right after the burst the table still holds its dead row versions, as a
# busy server would between autovacuum runs; then once vacuumed.
after=$(measure "after")
echo "$after" >&2
psql -XAtqc "VACUUM pglock_versions"
vacuumed=$(measure "vacuumed")
echo "$vacuumed" >&2

{
	echo "# --version-counter throughput"
	echo
	echo "$(date -u +%F), $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)."
	echo "Command: \`bench/counter.sh\` (RUNS=$runs, PER=$per; medians)."
	echo "Versions issued between the fresh and the after columns: $total."
	echo
	echo "| case | fresh, allocs/s | after, allocs/s | after / fresh | after VACUUM | vacuumed / fresh | target (>= 0.90) |"
	echo "|---|---|---|---|---|---|---|"
	while read -r _ t r s && read -r _ _ r2 s2 <&3 && read -r _ _ r3 s3 <&4; do
		for kind in pglock sql; do
			if [ $kind = pglock ]; then a=$r b=$r2 v=$r3; name="pglock, $t tenant(s) x $clients clients"
			else a=$s b=$s2 v=$s3; name="same transaction via pgbench, $t tenant(s) x $clients"; fi
			ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", b / a }')
			vratio=$(awk -v a="$a" -v b="$v" 'BEGIN { printf "%.2f", b / a }')
			verdict=$(awk -v x="$ratio" -v y="$vratio" 'BEGIN { print (x >= 0.90 ? "PASS" : "MISS") " / " (y >= 0.90 ? "PASS" : "MISS") }')
			echo "| $name | $a | $b | $ratio | $v | $vratio | $verdict |"
		done
	done <<<"$before" 3<<<"$after" 4<<<"$vacuumed"
} >"$out"
cat "$out"
