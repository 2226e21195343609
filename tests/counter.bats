#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# --version-counter, --peek, --counter-table and --fence against a real
# server (issue: "--version-counter: gap-free per-tenant versions, and
# fencing tokens"). One behaviour per test; every tenant name is this file's
# own, since the cluster is shared with the other suites.

load helper

# The helper's teardown, then the databases and roles these tests create.
eval "helper_$(declare -f teardown)"
teardown() {
	helper_teardown
	local db
	for db in pglock_c_rr pglock_c_rr_fence pglock_c_first pglock_c_priv; do
		sql "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
	done
	sql "DROP ROLE IF EXISTS pglock_c_nocreate" >/dev/null 2>&1 || true
	sql 'DROP ROLE IF EXISTS "pglock-c-Bot"' >/dev/null 2>&1 || true
}

vc() { pglock --version-counter "$@"; }
peek() { pglock --version-counter --peek "$@"; }

# sqld DB STATEMENT: sql in another database.
sqld() {
	psql -XAtq -v ON_ERROR_STOP=1 -d "$1" -c "$2"
}

# The pglock sessions of TENANT (or KEY) waiting for an advisory lock.
waiters_of() {
	sql "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
	     WHERE l.locktype = 'advisory' AND NOT l.granted
	     AND a.application_name = 'pglock: $1'"
}
has_waiter() { [ "$(waiters_of "$1")" -ge 1 ]; }

alive() { kill -0 "$1" 2>/dev/null; }

# Rounds per client in the concurrency tests. Under valgrind (make
# valgrind) a pglock takes a second or more: as many clients, fewer rounds.
ROUNDS=25
[ -z "${PGLOCK_VG_DIR:-}" ] || ROUNDS=2

# many N M [OPTION ...] TENANT [COMMAND ...]: N clients at once, each running
# `pglock --version-counter OPTION ... TENANT [COMMAND ...]` M times in a
# row. Client W appends what pglock prints to $BATS_TEST_TMPDIR/out.W, its
# stderr to err.W and each exit status to rc.W. Bounded: 90 s in all.
export -f pglock
many() {
	run -0 timeout 90 bash -c '
		n=$1 m=$2 dir=$3
		shift 3
		for w in $(seq "$n"); do
			(
				for i in $(seq "$m"); do
					rc=0
					pglock --version-counter "$@" \
					    >>"$dir/out.$w" 2>>"$dir/err.$w" || rc=$?
					echo "$rc" >>"$dir/rc.$w"
				done
			) &
		done
		wait' _ "$1" "$2" "$BATS_TEST_TMPDIR" "${@:3}"
}

# The lines of every client's FILE (out, err, rc), numbers sorted.
all() { cat "$BATS_TEST_TMPDIR/$1".* | sort -n; }

# What the clients said on stderr, each distinct line once, with a count.
errors() { cat "$BATS_TEST_TMPDIR"/err.* | sort | uniq -c; }

# Exactly the numbers 1..N, each once: no duplicate, no gap.
assert_one_to() {
	local got
	got=$(cat)
	[ -z "$(uniq -d <<<"$got")" ] || { echo "duplicates: $(uniq -d <<<"$got" | head)"; return 1; }
	[ "$(wc -l <<<"$got")" -eq "$1" ] || { echo "$(wc -l <<<"$got") numbers, not $1"; return 1; }
	[ "$got" = "$(seq "$1")" ] || { echo "gaps:"; diff <(seq "$1") - <<<"$got" | head; return 1; }
}

# ------------------------------------------------------------------ basics

@test "a new tenant gets 1, then 2, then 3, each printed alone on stdout" {
	run -0 --separate-stderr vc c-new
	assert_output 1
	[ -z "$stderr" ]
	run -0 --separate-stderr vc c-new
	assert_output 2
	run -0 --separate-stderr vc c-new
	assert_output 3
	[ "$(sql "SELECT version FROM pglock_versions WHERE tenant = 'c-new'")" = 3 ]
}

@test "another tenant starts at 1 whatever the first tenant is at" {
	run -0 vc c-other-a
	run -0 vc c-other-a
	run -0 --separate-stderr vc c-other-b
	assert_output 1
	[ "$(sql "SELECT tenant || '=' || version FROM pglock_versions WHERE tenant LIKE 'c-other-%' ORDER BY tenant")" = "$(printf 'c-other-a=2\nc-other-b=1')" ]
}

@test "--peek prints 0 for a new tenant and the current version without bumping it" {
	run -0 --separate-stderr peek c-peek
	assert_output 0
	[ -z "$stderr" ]
	run -0 vc c-peek
	run -0 vc c-peek
	run -0 --separate-stderr peek c-peek
	assert_output 2
	run -0 --separate-stderr peek c-peek
	assert_output 2
	run -0 vc c-peek
	assert_output 3
	# Peeking at a tenant creates no row.
	run -0 peek c-peek-never
	assert_output 0
	[ "$(sql "SELECT count(*) FROM pglock_versions WHERE tenant = 'c-peek-never'")" = 0 ]
}

@test "the table is created on first use as (tenant text primary key, version bigint)" {
	[ "$(sql "SELECT to_regclass('c_fresh_table') IS NULL")" = t ]
	run -0 pglock --counter-table c_fresh_table --version-counter c-fresh
	assert_output 1
	run -0 sql "SELECT column_name || ' ' || data_type || ' ' || is_nullable
	    FROM information_schema.columns WHERE table_name = 'c_fresh_table'
	    ORDER BY ordinal_position"
	assert_output "$(printf 'tenant text NO\nversion bigint NO')"
	run -0 sql "SELECT a.attname FROM pg_index i JOIN pg_attribute a
	    ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
	    WHERE i.indrelid = 'c_fresh_table'::regclass AND i.indisprimary"
	assert_output tenant
}

# ------------------------------------------------------------ concurrency

@test "16 clients x 25 allocations for one tenant get exactly 1..400" {
	many 16 "$ROUNDS" c-conc
	total=$((16 * ROUNDS))
	run -0 errors
	assert_output ''
	run -0 all rc
	[ "$(grep -cvx 0 <<<"$output")" -eq 0 ]
	all out | assert_one_to "$total"
	[ "$(sql "SELECT version FROM pglock_versions WHERE tenant = 'c-conc'")" = "$total" ]
}

@test "16 clients x 25 COMMANDs, a random third failing: committed versions are exactly 1..successes" {
	# A third of the commands exit 1 (bash's $RANDOM decides); only a
	# successful one writes "VERSION TENANT ok", to a file of its own.
	many 16 "$ROUNDS" c-cmd bash -c '
		if [ $((RANDOM % 3)) -eq 0 ]; then exit 1; fi
		echo "$PGLOCK_VERSION $PGLOCK_TENANT ok" >>"$0.$$"' \
	    "$BATS_TEST_TMPDIR/seen"
	run -0 errors
	assert_output ''
	total=$((16 * ROUNDS))
	run -0 all rc
	[ "${#lines[@]}" -eq "$total" ]
	[ "$(grep -cvx '[01]' <<<"$output")" -eq 0 ]
	ok=$(grep -cx 0 <<<"$output")
	echo "$ok of $total commands succeeded" >&3
	[ "$ok" -gt 0 ]
	[ "$ok" -lt "$total" ]
	[ -z "$(all out)" ]
	run -0 all seen
	[ "${#lines[@]}" -eq "$ok" ]
	[ "$(grep -cvx '[0-9]* c-cmd ok' <<<"$output")" -eq 0 ]
	cut -d' ' -f1 <<<"$output" | assert_one_to "$ok"
	[ "$(sql "SELECT version FROM pglock_versions WHERE tenant = 'c-cmd'")" = "$ok" ]
}

@test "while tenant A's COMMAND holds its transaction, tenant B allocates at once" {
	mkfifo "$BATS_TEST_TMPDIR/fifo"
	bg a pglock --version-counter c-iso-a sh -c 'echo "$PGLOCK_VERSION" >"$0.started"; read x <"$0"; echo done >"$0.done"' "$BATS_TEST_TMPDIR/fifo"
	wait_until 10 test -s "$BATS_TEST_TMPDIR/fifo.started"
	run -0 --separate-stderr timeout 5 "$PGLOCK" --version-counter c-iso-b
	assert_output 1
	# B's number was printed while A's command still waits on the fifo.
	alive "$(bgpid a)"
	[ ! -e "$BATS_TEST_TMPDIR/fifo.done" ]
	fifo_go "$BATS_TEST_TMPDIR/fifo"
	bgwait a 10
	[ "$bg_status" -eq 0 ]
	[ "$(cat "$BATS_TEST_TMPDIR/fifo.started")" = 1 ]
	[ "$(peek c-iso-a)" = 1 ]
}

@test "a second allocation for tenant A waits in pg_locks until A's COMMAND ends, then gets the next number" {
	mkfifo "$BATS_TEST_TMPDIR/fifo"
	bg a pglock --version-counter c-wait sh -c 'echo "$PGLOCK_VERSION" >"$0.started"; read x <"$0"' "$BATS_TEST_TMPDIR/fifo"
	wait_until 10 test -s "$BATS_TEST_TMPDIR/fifo.started"
	bg a2 pglock --version-counter c-wait
	wait_until 10 has_waiter c-wait
	[ "$(waiters_of c-wait)" -eq 1 ]
	alive "$(bgpid a2)"
	[ ! -s "$BATS_TEST_TMPDIR/a2.out" ]
	fifo_go "$BATS_TEST_TMPDIR/fifo"
	bgwait a 10
	[ "$bg_status" -eq 0 ]
	bgwait a2 10
	[ "$bg_status" -eq 0 ]
	[ "$(cat "$BATS_TEST_TMPDIR/fifo.started")" = 1 ]
	[ "$(cat "$BATS_TEST_TMPDIR/a2.out")" = 2 ]
	[ ! -s "$BATS_TEST_TMPDIR/a2.err" ]
}

@test "TERM ends a --peek whose query waits, at once, as it would psql" {
	run -0 vc c-peekterm
	bg locker psql -XAtq -c BEGIN -c "LOCK TABLE pglock_versions" -c "SELECT pg_sleep(60)"
	wait_until 10 bash -c "[ \"\$(psql -XAtqc \"SELECT count(*) FROM pg_locks WHERE relation = 'pglock_versions'::regclass AND granted\")\" = 1 ]"
	bg peek pglock --version-counter --peek c-peekterm
	wait_until 10 bash -c "[ \"\$(psql -XAtqc \"SELECT count(*) FROM pg_locks WHERE relation = 'pglock_versions'::regclass AND NOT granted\")\" = 1 ]"
	kill -TERM "$(bgpid peek)"
	bgwait peek 3
	[ "$bg_status" -eq 143 ]
	[ ! -s "$BATS_TEST_TMPDIR/peek.out" ]
}

@test "--peek does not wait for a running COMMAND and shows the last committed version" {
	run -0 vc c-peekrun
	mkfifo "$BATS_TEST_TMPDIR/fifo"
	bg a pglock --version-counter c-peekrun sh -c 'echo "$PGLOCK_VERSION" >"$0.started"; read x <"$0"' "$BATS_TEST_TMPDIR/fifo"
	wait_until 10 test -s "$BATS_TEST_TMPDIR/fifo.started"
	run -0 timeout 5 "$PGLOCK" --version-counter --peek c-peekrun
	assert_output 1
	alive "$(bgpid a)"
	fifo_go "$BATS_TEST_TMPDIR/fifo"
	bgwait a 10
	[ "$bg_status" -eq 0 ]
	run -0 peek c-peekrun
	assert_output 2
}

@test "a database defaulting to REPEATABLE READ still gets exactly 1..200 from 8 clients x 25" {
	sql "CREATE DATABASE pglock_c_rr"
	sql "ALTER DATABASE pglock_c_rr SET default_transaction_isolation = 'repeatable read'"
	[ "$(sqld pglock_c_rr 'SHOW default_transaction_isolation')" = "repeatable read" ]
	many 8 "$ROUNDS" -d pglock_c_rr c-rr
	total=$((8 * ROUNDS))
	run -0 errors
	assert_output ''
	run -0 all rc
	[ "$(grep -cvx 0 <<<"$output")" -eq 0 ]
	all out | assert_one_to "$total"
	[ "$(sqld pglock_c_rr "SELECT version FROM pglock_versions WHERE tenant = 'c-rr'")" = "$total" ]
	sql "DROP DATABASE pglock_c_rr WITH (FORCE)"
}

@test "8 concurrent first-ever allocations on a fresh database all succeed with 1..8" {
	sql "CREATE DATABASE pglock_c_first"
	[ "$(sqld pglock_c_first "SELECT to_regclass('pglock_versions') IS NULL")" = t ]
	log=$PGLOCK_TEST_DIR/pg/log missing='relation "pglock_versions" does not exist'
	before=$(grep -c "$missing" "$log" || true)
	many 8 1 -d pglock_c_first c-first
	echo "$(( $(grep -c "$missing" "$log" || true) - before )) of 8 clients met the missing table" >&3
	run -0 errors
	assert_output ''
	run -0 all rc
	assert_output "$(printf '0\n%.0s' 1 2 3 4 5 6 7 8)"
	all out | assert_one_to 8
	[ "$(sqld pglock_c_first "SELECT version FROM pglock_versions WHERE tenant = 'c-first'")" = 8 ]
	sql "DROP DATABASE pglock_c_first WITH (FORCE)"
}

# ------------------------------------------------------------ lock keys

@test "pglock T pglock --version-counter T completes and prints the version" {
	run -0 --separate-stderr timeout 10 "$PGLOCK" c-nest "$PGLOCK" --version-counter c-nest
	assert_output 1
	[ -z "$stderr" ]
	[ "$(peek c-nest)" = 1 ]
}

@test "pglock --version-counter T COMMAND can take pglock T inside" {
	# The inner pglock's command has only the inner PGLOCK_* variables:
	# the version goes on as an argument.
	run -0 --separate-stderr timeout 10 "$PGLOCK" --version-counter c-nest2 sh -c 'exec "$0" -n c-nest2 sh -c "echo \$1 \${PGLOCK_VERSION:-none}" sh "$PGLOCK_VERSION"' "$PGLOCK"
	assert_output "1 none"
	[ "$(peek c-nest2)" = 1 ]
}

@test "--version-counter T allocates while another session holds pglock T" {
	bg holder pglock c-dist sleep 60
	wait_until 10 held "$(sha_id c-dist)"
	run -0 --separate-stderr timeout 10 "$PGLOCK" -n --version-counter c-dist
	assert_output 1
	alive "$(bgpid holder)"
	held "$(sha_id c-dist)"
}

# hold_tenant T: T's version 1, then an allocation of version 2 that holds
# the tenant's lock until release_tenant.
hold_tenant() {
	run -0 vc "$1"
	mkfifo "$BATS_TEST_TMPDIR/fifo"
	bg a pglock --version-counter "$1" sh -c 'echo "$PGLOCK_VERSION" >"$0.started"; read x <"$0"' "$BATS_TEST_TMPDIR/fifo"
	wait_until 10 test -s "$BATS_TEST_TMPDIR/fifo.started"
}

# release_tenant T: version 2 commits, and nothing else was consumed.
release_tenant() {
	fifo_go "$BATS_TEST_TMPDIR/fifo"
	bgwait a 10
	[ "$bg_status" -eq 0 ]
	run -0 vc "$1"
	assert_output 3
}

@test "-n -E 0 when another allocation holds the tenant: exit 0, no version printed or run, nothing consumed" {
	hold_tenant c-busy0
	run -0 --separate-stderr timeout 5 "$PGLOCK" -n -E 0 --version-counter c-busy0
	assert_output ''
	[ "$stderr" = "pglock: c-busy0: another allocation holds the tenant's lock" ]
	run -0 --separate-stderr timeout 5 "$PGLOCK" -n -E 0 --version-counter c-busy0 sh -c 'touch "$0"' "$BATS_TEST_TMPDIR/ran"
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	release_tenant c-busy0
}

@test "-n exits 1 when another allocation holds the tenant, and consumes nothing" {
	hold_tenant c-busy
	run -1 --separate-stderr timeout 5 "$PGLOCK" -n --version-counter c-busy sh -c 'touch "$0"' "$BATS_TEST_TMPDIR/ran"
	assert_output ''
	[ "$stderr" = "pglock: c-busy: another allocation holds the tenant's lock" ]
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	release_tenant c-busy
}

# ------------------------------------------------------------ COMMAND mode

@test "COMMAND sees PGLOCK_VERSION and PGLOCK_TENANT; exit 0 commits; pglock prints nothing itself" {
	run -0 --separate-stderr vc c-env sh -c 'echo "$PGLOCK_VERSION $PGLOCK_TENANT"'
	assert_output "1 c-env"
	[ -z "$stderr" ]
	run -0 vc c-env sh -c 'echo "$PGLOCK_VERSION"'
	assert_output 2
	[ "$(peek c-env)" = 2 ]
}

@test "a failing COMMAND passes its status through and consumes no version" {
	run -0 vc c-fail
	run -3 vc c-fail sh -c 'echo "$PGLOCK_VERSION"; exit 3'
	assert_output 2
	[ "$(peek c-fail)" = 1 ]
	run -0 vc c-fail sh -c 'echo "$PGLOCK_VERSION"'
	assert_output 2
	[ "$(peek c-fail)" = 2 ]
}

@test "a COMMAND killed by a signal gives 128+N and consumes no version" {
	run -0 vc c-killed
	run -143 vc c-killed sh -c 'kill -TERM $$'
	run -137 vc c-killed sh -c 'kill -KILL $$'
	[ "$(peek c-killed)" = 1 ]
}

@test "a COMMAND that cannot be run gives 127 and consumes no version" {
	run -127 vc c-noexec /nonexistent/command
	[ "$(peek c-noexec)" = 0 ]
	run -0 vc c-noexec
	assert_output 1
}

@test "terminating the counter's backend while COMMAND runs: exit 75, command stopped, version not committed" {
	run -0 vc c-lost
	bg runner pglock --version-counter c-lost sh -c 'echo "$PGLOCK_VERSION" >"$0.v"; echo $$ >"$0"; exec sleep 60' "$BATS_TEST_TMPDIR/cmd"
	wait_until 10 test -s "$BATS_TEST_TMPDIR/cmd"
	wait_until 10 test -s "$BATS_TEST_TMPDIR/cmd.v"
	[ "$(cat "$BATS_TEST_TMPDIR/cmd.v")" = 2 ]
	run -0 sql "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pglock: c-lost'"
	assert_output t
	bgwait runner 10
	[ "$bg_status" -eq 75 ]
	wait_until 2 gone "$(cat "$BATS_TEST_TMPDIR/cmd")"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/runner.err")" -eq 1 ]
	grep -q '^pglock: c-lost: lock lost while the command ran (.*); the command was stopped$' "$BATS_TEST_TMPDIR/runner.err"
	[ ! -s "$BATS_TEST_TMPDIR/runner.out" ]
	run -0 peek c-lost
	assert_output 1
	run -0 vc c-lost
	assert_output 2
}

@test "terminating the counter's backend while a TERM-ignoring COMMAND runs: the next allocation's command, with the same version, starts once the old one is dead" {
	d=$BATS_TEST_TMPDIR
	old='trap "" TERM; echo "$PGLOCK_VERSION" >"$0.old"; echo $$ >"$0.pid"; while :; do sleep 0.05; done'
	new='s=$(cut -d" " -f3 "/proc/$(cat "$0.pid")/stat" 2>/dev/null); [ -n "$s" ] && [ "$s" != Z ] && echo "$PGLOCK_VERSION, old alive" >>"$0" || echo "$PGLOCK_VERSION, old dead" >>"$0"'
	bg old pglock --check-interval 0.5 --kill-after 60 --version-counter c-wit sh -c "$old" "$d/log"
	wait_until 10 test -s "$d/log.old"
	bg new pglock -v --check-interval 0.5 --version-counter c-wit sh -c "$new" "$d/log"
	wait_until 10 bash -c "[ \"\$(psql -XAtc \"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted\")\" -ge 1 ]"
	run -0 sql "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pglock: c-wit' AND state = 'idle in transaction'"
	assert_output t
	bgwait old 20
	[ "$bg_status" -eq 75 ]
	bgwait new 20
	[ "$bg_status" -eq 0 ]
	# The old version was never committed: the new command has it.
	[ "$(cat "$d/log.old")" = 1 ]
	[ "$(cat "$d/log")" = "1, old dead" ]
	grep -q "lock-delay: a --break, or an ended holder's witness, keeps it" "$d/new.err"
	run -0 peek c-wit
	assert_output 1
}

@test "KILL on pglock: its version is handed out again only once its COMMAND is gone, never to two running commands" {
	d=$BATS_TEST_TMPDIR
	# The command ignores TERM: only --kill-after's KILL ends it.
	bg runner pglock --kill-after 2 --version-counter c-kill sh -c 'trap "" TERM; echo $$ >"$0"; while :; do sleep 0.1; done' "$d/cmd"
	wait_until 10 test -s "$d/cmd"
	bg a2 pglock --version-counter c-kill sh -c 's=$(cut -d" " -f3 "/proc/$1/stat" 2>/dev/null); echo "$PGLOCK_VERSION ${s:-gone}" >"$0"' "$d/seen" "$(cat "$d/cmd")"
	wait_until 10 has_waiter c-kill
	kill -KILL "$(bgpid runner)"
	bgwait a2 15
	[ "$bg_status" -eq 0 ]
	# Version 1 again (the killed run's was rolled back), its holder dead.
	run cat "$d/seen"
	[[ "$output" =~ ^1\ (gone|Z|X)$ ]]
	run -0 peek c-kill
	assert_output 1
}

# ------------------------------------------------------------ --counter-table

@test "--counter-table NAME keeps versions in that table only" {
	run -0 pglock --counter-table c_custom --version-counter c-tab
	assert_output 1
	run -0 pglock --counter-table c_custom --version-counter c-tab
	assert_output 2
	[ "$(sql "SELECT tenant || '=' || version FROM c_custom")" = c-tab=2 ]
	run -0 pglock --counter-table c_custom --version-counter --peek c-tab
	assert_output 2
	run -0 peek c-tab
	assert_output 0
	run -0 vc c-tab
	assert_output 1
}

@test "--counter-table schema.table keeps versions in that schema" {
	sql "CREATE SCHEMA c_schema"
	run -0 pglock --counter-table c_schema.versions --version-counter c-sch
	assert_output 1
	run -0 pglock --counter-table c_schema.versions --version-counter c-sch sh -c 'echo "$PGLOCK_VERSION"'
	assert_output 2
	[ "$(sql "SELECT tenant || '=' || version FROM c_schema.versions")" = c-sch=2 ]
	[ "$(sql "SELECT to_regclass('public.versions') IS NULL")" = t ]
	run -0 pglock --counter-table c_schema.versions --version-counter --peek c-sch
	assert_output 2
}

@test "a role that may not create the table gets one line naming the CREATE TABLE an admin must run, exit 69" {
	sql "CREATE DATABASE pglock_c_priv"
	sql "CREATE ROLE pglock_c_nocreate LOGIN"
	[ "$(sqld pglock_c_priv "SELECT has_schema_privilege('pglock_c_nocreate', 'public', 'CREATE')")" = f ]
	run -69 --separate-stderr pglock -d pglock_c_priv -U pglock_c_nocreate --version-counter c-priv
	assert_output ''
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" == "pglock: c-priv: "*"CREATE TABLE "*"pglock_versions"*" (tenant text PRIMARY KEY, version bigint NOT NULL)"* ]]
	[ "$(sqld pglock_c_priv "SELECT to_regclass('pglock_versions') IS NULL")" = t ]
	# The statement named is the one that works.
	sqld pglock_c_priv "CREATE TABLE${stderr#*CREATE TABLE}"
	run -0 --separate-stderr pglock -d pglock_c_priv -U pglock_c_nocreate --version-counter c-priv
	assert_output 1
	[ -z "$stderr" ]
	sql "DROP DATABASE pglock_c_priv WITH (FORCE)"
	sql "DROP ROLE pglock_c_nocreate"
}

@test "the statement named for a role without CREATE works as given when the role's name needs quoting" {
	sql "CREATE DATABASE pglock_c_priv"
	sql 'CREATE ROLE "pglock-c-Bot" LOGIN'
	run -69 --separate-stderr pglock -d pglock_c_priv -U pglock-c-Bot --version-counter c-priv2
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" == *"CREATE TABLE "* ]]
	run -0 sqld pglock_c_priv "CREATE TABLE${stderr#*CREATE TABLE}"
	run -0 --separate-stderr pglock -d pglock_c_priv -U pglock-c-Bot --version-counter c-priv2
	assert_output 1
	sql "DROP DATABASE pglock_c_priv WITH (FORCE)"
	sql 'DROP ROLE "pglock-c-Bot"'
}

# ------------------------------------------------------------ --fence

@test "--fence: three successive holders of KEY see strictly increasing PGLOCK_FENCE" {
	# (not $i: bats' run uses it)
	for n in 1 2 3; do
		run -0 --separate-stderr pglock --fence c-fence sh -c 'echo "$PGLOCK_FENCE"'
		[[ "$output" =~ ^[1-9][0-9]*$ ]]
		[ -z "$stderr" ]
		fence[n]=$output
	done
	[ "${fence[1]}" -lt "${fence[2]}" ]
	[ "${fence[2]}" -lt "${fence[3]}" ]
}

@test "--fence: a holder that gave up waiting took no fence; the next holder's follows the last" {
	id=$(sha_id c-fencew)
	mkfifo "$BATS_TEST_TMPDIR/fifo"
	bg h1 pglock --fence c-fencew sh -c 'echo "$PGLOCK_FENCE"; read x <"$0"' "$BATS_TEST_TMPDIR/fifo"
	wait_until 10 test -s "$BATS_TEST_TMPDIR/h1.out"
	run -1 timeout 20 "$PGLOCK" -w 2 --fence c-fencew sh -c 'echo "$PGLOCK_FENCE"'
	fifo_go "$BATS_TEST_TMPDIR/fifo"
	bgwait h1 10
	[ "$bg_status" -eq 0 ]
	run -0 timeout 20 "$PGLOCK" --fence c-fencew sh -c 'echo "$PGLOCK_FENCE"'
	[ "$output" -eq $(( $(cat "$BATS_TEST_TMPDIR/h1.out") + 1 )) ]
}

@test "--fence: holders that queued for KEY get PGLOCK_FENCE in the order they acquired it" {
	id=$(sha_id c-fenceq)
	# The Nth holder waits for its own go file. (One fifo for all three
	# raced: a test preempted between its write and its close let the
	# next holder open the fifo and read end of file, CI, stop 24.)
	f=$BATS_TEST_TMPDIR/f
	cmd='echo "$PGLOCK_FENCE" >>"$0.order"; n=$(wc -l <"$0.order"); i=0
	     while [ ! -e "$0.go$n" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
	     [ -e "$0.go$n" ]'
	bg h1 pglock --fence c-fenceq sh -c "$cmd" "$f"
	wait_until 10 test -s "$f.order"
	bg h2 pglock --fence c-fenceq sh -c "$cmd" "$f"
	wait_until 10 waiting "$id" 1
	bg h3 pglock --fence c-fenceq sh -c "$cmd" "$f"
	wait_until 10 waiting "$id" 2
	for n in 2 3; do
		touch "$f.go$((n - 1))"
		wait_until 30 eval "[ \$(wc -l <\"$f.order\") -eq $n ]"
	done
	touch "$f.go3"
	for h in h1 h2 h3; do
		bgwait "$h" 10
		[ "$bg_status" -eq 0 ]
	done
	run -0 cat "$f.order"
	[ "${#lines[@]}" -eq 3 ]
	[ "${lines[0]}" -lt "${lines[1]}" ]
	[ "${lines[1]}" -lt "${lines[2]}" ]
}

@test "--fence works on a database defaulting to REPEATABLE READ" {
	sql "CREATE DATABASE pglock_c_rr_fence"
	sql "ALTER DATABASE pglock_c_rr_fence SET default_transaction_isolation = 'repeatable read'"
	run -0 --separate-stderr pglock -d pglock_c_rr_fence --fence c-fence-rr sh -c 'echo "$PGLOCK_FENCE"'
	[[ "$output" =~ ^[1-9][0-9]*$ ]]
	[ -z "$stderr" ]
	sql "DROP DATABASE pglock_c_rr_fence WITH (FORCE)"
}

@test "without --fence the command gets no PGLOCK_FENCE" {
	run -0 pglock c-nofence sh -c 'echo "${PGLOCK_FENCE-unset}"'
	assert_output unset
}

# ------------------------------------------------------------ usage

# usage_error WHY ARG...: exit 64 before connecting, nothing on stdout, one
# line on stderr that contains WHY.
usage_error() {
	local why=$1
	shift
	run -64 --separate-stderr pglock -h /nonexistent "$@"
	assert_output ''
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" == "pglock: "*"$why"*" (see pglock --help)" ]]
}

@test "--peek with a COMMAND is a usage error" { usage_error 'no COMMAND' --version-counter --peek c-u true; }
@test "--peek without --version-counter is a usage error" { usage_error 'needs --version-counter' --peek c-u true; }
@test "--fence with --version-counter is a usage error" { usage_error '--fence' --fence --version-counter c-u; }
@test "-s with --version-counter is a usage error" { usage_error '(-s)' -s --version-counter c-u; }
@test "-F with --version-counter is a usage error" { usage_error '-F' -F --version-counter c-u true; }
@test "--id with --version-counter is a usage error" { usage_error '--id' --id --version-counter 5; }
@test "--version-counter without a TENANT is a usage error" { usage_error 'TENANT' --version-counter; }
@test "an empty TENANT is a usage error" { usage_error 'TENANT' --version-counter ''; }
@test "--counter-table 'bad;name' is a usage error" { usage_error "'bad;name'" --counter-table 'bad;name' --version-counter c-u; }
@test "--counter-table a.b.c is a usage error" { usage_error "'a.b.c'" --counter-table a.b.c --version-counter c-u; }
@test "--counter-table starting with a digit is a usage error" { usage_error "'1tab'" --counter-table 1tab --version-counter c-u; }
@test "an empty --counter-table is a usage error" { usage_error "''" --counter-table '' --version-counter c-u; }

@test "--fence inside --version-counter of the same name does not deadlock" {
	run -0 timeout 20 "$PGLOCK" --version-counter c-fdl "$PGLOCK" --fence c-fdl sh -c 'echo "$PGLOCK_FENCE"'
	[[ "$output" =~ ^[0-9]+$ ]]
	run -0 pglock --version-counter --peek c-fdl
	assert_output 1
}

@test "--counter-table: an unquoted name folds to lower case, as in SQL" {
	run -0 pglock --counter-table C_Upper_Case --version-counter c-ident
	assert_output 1
	run -0 pglock --counter-table c_upper_case --version-counter c-ident
	assert_output 2
	[ "$(sql "SELECT count(*) FROM pg_tables WHERE tablename = 'c_upper_case'")" -eq 1 ]
	[ "$(sql "SELECT count(*) FROM pg_tables WHERE tablename = 'C_Upper_Case'")" -eq 0 ]
}

@test "--counter-table: a \"Quoted\" name keeps its case, \"\" a quote inside" {
	run -0 pglock --counter-table '"C Quoted ""Tab"""' --version-counter c-ident
	assert_output 1
	[ "$(sql "SELECT count(*) FROM pg_tables WHERE tablename = 'C Quoted \"Tab\"'")" -eq 1 ]
	run -64 pglock --counter-table '"unterminated' --version-counter c-ident
	run -64 pglock --counter-table '""' --version-counter c-ident
}

@test "--counter-table: schema.table, each part read as SQL reads it" {
	sql "CREATE SCHEMA IF NOT EXISTS c_schema"
	run -0 pglock --counter-table C_Schema.Vers --version-counter c-ident
	assert_output 1
	run -0 pglock --counter-table c_schema.vers --version-counter --peek c-ident
	assert_output 1
	[ "$(sql "SELECT count(*) FROM pg_tables WHERE schemaname = 'c_schema' AND tablename = 'vers'")" -eq 1 ]
	run -64 pglock --counter-table 'a.b.c' --version-counter c-ident
}
