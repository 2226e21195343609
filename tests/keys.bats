#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Interlock with applications that already lock: every --hash scheme lands
# on the id the application's own formula gives, the SQL forms block each
# other, a real psycopg2 client interlocks, and --explain / --status / -v
# show keys and holders.

load helper

VECTORS=$BATS_TEST_DIRNAME/key-vectors.json

# vector KEY FIELD: the id from key-vectors.json, "N" or "A,B".
vector() {
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
v = d["constants"][sys.argv[3]] if sys.argv[3] in d["constants"] else d["keys"][sys.argv[2]][sys.argv[3]]
print(",".join(map(str, v)) if isinstance(v, list) else v)' "$VECTORS" "$1" "$2"
}

# locktag ID: "classid objid objsubid" as pg_locks shows N or A,B.
locktag() {
	if [[ "$1" == *,* ]]; then
		echo "$(( ${1%,*} & 0xffffffff )) $(( ${1#*,} & 0xffffffff )) 2"
	else
		echo "$(( ($1 >> 32) & 0xffffffff )) $(( $1 & 0xffffffff )) 1"
	fi
}

# Inside pglock's command: the locktag of the lock its backend holds.
own_locktag='psql -XAtc "SELECT classid || '"' '"' || objid || '"' '"' || objsubid FROM pg_locks WHERE locktype = '"'advisory'"' AND pid = $PGLOCK_BACKEND_PID AND granted"'

# scheme, vector field, SQL form of the application's lock argument (or -)
SCHEMES="sha256|sha256_be64|('x' || left(encode(sha256(convert_to(:'k', 'UTF8')), 'hex'), 16))::bit(64)::bigint
hashtext|hashtext|hashtext(:'k')
hashtextextended|hashtextextended0|hashtextextended(:'k', 0)
md5|md5_be64|('x' || left(md5(:'k'), 16))::bit(64)::bigint
md5-60|blog_a_md5hex15|('x' || '0' || left(md5(:'k'), 15))::bit(64)::bigint
siphash24|blog_c_guava_siphash24|-
guava-sha256-abs|blog_b_abs_sha256_asInt|-
crc32|django_pglocks|-
crc32u|symfony_lock|-
with_advisory_lock|with_advisory_lock|-
pg_lock|heroku_pg_lock|-
rails-migrations|rails_migrator(db=key)|-
golang-migrate|golang_migrate(db=key,public,schema_migrations)|-
flyway|flyway lockNum for \"public\".\"flyway_schema_history\"|77433833903597"

@test "every scheme takes exactly the pg_locks id the application's formula gives" {
	# Under valgrind, whose start costs a second a run, one key a scheme:
	# the same code, and tests/unit_key checks every vector.
	keys=(deploy tenant-a 'invoice_gen/SUB-1234')
	[ -z "${PGLOCK_VG_DIR:-}" ] || keys=(invoice_gen/SUB-1234)
	n=0
	while IFS='|' read -r scheme field form; do
		for k in "${keys[@]}"; do
			want=$(locktag "$(vector "$k" "$field")")
			run -0 pglock --hash "$scheme" "$k" sh -c "$own_locktag"
			[ "$output" = "$want" ] || { echo "$scheme $k: got $output, want $want"; false; }
			n=$((n + 1))
		done
	done <<<"$SCHEMES"
	[ "$n" -eq $((14 * ${#keys[@]})) ]
}

@test "a psql session running the application's SQL form is blocked by pglock's lock" {
	n=0
	while IFS='|' read -r scheme field form; do
		[ "$form" = - ] && continue
		bg holder pglock --hash "$scheme" deploy sh -c 'echo held >"$0"; sleep 60' "$BATS_TEST_TMPDIR/$scheme"
		wait_until 10 test -s "$BATS_TEST_TMPDIR/$scheme"
		run psql -XAtq -v ON_ERROR_STOP=1 -v k=deploy <<-SQL
		SET lock_timeout = '200ms';
		SELECT pg_advisory_lock($form);
		SQL
		[ "$status" -ne 0 ]
		[[ "$output" == *"canceling statement due to lock timeout"* ]] || { echo "$scheme: $output"; false; }
		kill -TERM "$(bgpid holder)"
		bgwait holder 10
		n=$((n + 1))
	done <<<"$SCHEMES"
	[ "$n" -eq 6 ]
}

@test "--namespace N takes the pair (N, hashtext(KEY)) and interlocks with its SQL form" {
	run -0 pglock --namespace 7 deploy sh -c "$own_locktag; echo \$PGLOCK_ID"
	[ "${lines[0]}" = "$(locktag "7,$(vector deploy hashtext)")" ]
	[ "${lines[1]}" = "7,$(vector deploy hashtext)" ]
	bg psql psql -XAtq -c "SELECT pg_advisory_lock(7, hashtext('deploy'))" -c "SELECT pg_sleep(60)"
	wait_until 10 bash -c '[ -n "$(psql -XAtc "SELECT 1 FROM pg_locks WHERE locktype = '"'advisory'"' AND objsubid = 2 AND classid = 7 AND granted")" ]'
	run -1 pglock -n --namespace 7 deploy true
	run -0 pglock -n --namespace 8 deploy true
}

@test "a server-side scheme gives the command the id the server computed" {
	run -0 pglock --hash hashtext deploy sh -c 'echo $PGLOCK_ID'
	assert_output "$(sql "SELECT hashtext('deploy')")"
}

@test "a psycopg2 client locking md5-60 ids interlocks with pglock --hash md5-60, both ways" {
	# Not a skip: tests/deps.sh installs python3-psycopg2 for make check.
	run -0 "$PYTHON" -c 'import psycopg2'
	cat >"$BATS_TEST_TMPDIR/app.py" <<-'PY'
	import hashlib, sys, time, psycopg2
	key, mode, flag = sys.argv[1], sys.argv[2], sys.argv[3]
	lock_id = int(hashlib.md5(key.encode()).hexdigest()[:15], 16)
	conn = psycopg2.connect("")
	cur = conn.cursor()
	if mode == "hold":
	    cur.execute("SELECT pg_advisory_xact_lock(%s)", (lock_id,))
	    open(flag, "w").write("held")
	    time.sleep(60)
	else:
	    cur.execute("SELECT pg_try_advisory_xact_lock(%s)", (lock_id,))
	    print("got" if cur.fetchone()[0] else "busy")
	PY
	bg app "$PYTHON" "$BATS_TEST_TMPDIR/app.py" t hold "$BATS_TEST_TMPDIR/flag"
	wait_until 10 test -s "$BATS_TEST_TMPDIR/flag"
	run -1 pglock --hash md5-60 -n t true
	run -0 pglock --hash md5-60 -n other-key true
	kill -KILL -- -"$(bgpid app)"
	bg holder pglock --hash md5-60 t sh -c 'echo held >"$0"; sleep 60' "$BATS_TEST_TMPDIR/held"
	wait_until 10 test -s "$BATS_TEST_TMPDIR/held"
	run -0 "$PYTHON" "$BATS_TEST_TMPDIR/app.py" t try -
	assert_output busy
}

@test "--explain deploy prints the id and SQL that locks the same id" {
	run -0 pglock --explain deploy
	assert_line $'id\t-5206911306292520180'
	assert_line $'pg_locks\tlocktype=advisory classid=3082638785 objid=460856076 objsubid=1'
	[ "$(locktag -5206911306292520180)" = "3082638785 460856076 1" ]
	n=0
	while IFS= read -r line; do
		bg psql psql -XAtq -c "${line#sql$'\t'}" -c "SELECT pg_sleep(60)"
		wait_until 10 held -5206911306292520180
		run -1 pglock -n deploy true
		sql "SELECT pg_terminate_backend($(locks_on -5206911306292520180 | cut -d: -f2))"
		wait_until 10 free -5206911306292520180
		n=$((n + 1))
	done < <(pglock --explain deploy | grep $'^sql\t')
	[ "$n" -eq 2 ]
}

@test "--explain --hash sha256 is the default scheme, named: the same lines, the SQL expression too" {
	run -0 pglock --explain --hash sha256 deploy
	[ "$output" = "$(pglock --explain deploy)" ]
	[ "$(grep -c $'^sql\t' <<<"$output")" -eq 2 ]
}

@test "--explain needs no server for client-side schemes" {
	run -0 env PGHOST=/nonexistent PGPORT=1 "$PGLOCK" --explain --hash md5-60 t
	assert_line $'id\t1023881695908026374'
	run -0 env PGHOST=/nonexistent "$PGLOCK" --explain --id 1,2
	assert_line $'pg_locks\tlocktype=advisory classid=1 objid=2 objsubid=2'
}

@test "--explain of a server-side scheme prints SQL that locks what pglock locks" {
	line=$(pglock --explain --hash hashtextextended deploy | sed -n 's/^sql\t//p')
	[ "$line" = "SELECT pg_advisory_lock(hashtextextended('deploy', 0));" ]
	bg psql psql -XAtq -c "$line" -c "SELECT pg_sleep(60)"
	wait_until 10 held "$(vector deploy hashtextextended0)"
	run -1 pglock -n --hash hashtextextended deploy true
}

@test "--status names the KEY of every lock a pglock holds (JSON \"key\"); unknown (? / null) where application_name may be cut, or for another client's lock; times are RFC 3339" {
	long=$(printf 'k%.0s' $(seq 60))
	bg holder pglock 'json key' sleep 60
	bg holder2 pglock "$long" sleep 60
	wait_until 10 held "$(sha_id 'json key')"
	wait_until 10 held "$(sha_id "$long")"
	bg other psql -XAtc "SELECT pg_advisory_lock(4242), pg_sleep(60)"
	wait_until 10 held 4242
	run -0 --separate-stderr pglock --status --json
	"$PYTHON" -c '
import json, re, sys
locks = {l["id"]: l for l in json.loads(sys.argv[1])["locks"]}
assert locks[sys.argv[2]]["key"] == "json key", locks
assert locks[sys.argv[3]]["key"] is None, locks
assert locks["4242"]["key"] is None, locks
for l in locks.values():
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)", l["since"]), l' "$output" "$(sha_id 'json key')" "$(sha_id "$long")"
	# Asked by name, the KEY is known, however long.
	run -0 --separate-stderr pglock --status "$long"
	[ "$(echo "$output" | tail -n 1 | cut -f10)" = "$long" ]
	run -0 --separate-stderr pglock --status
	[ "$(echo "$output" | awk -F'\t' '$1 == "4242" { print $10 }')" = "?" ]
}

@test "--status lists a holder with its key in application_name and a waiter as waiting" {
	id=$(sha_id 'status k')
	bg holder pglock 'status k' sleep 60
	wait_until 10 held "$id"
	bg waiter pglock 'status k' true
	wait_until 10 waiting "$id"
	run -0 pglock --status
	assert_line --index 0 $'id\tmode\tstate\tpid\tuser\tclient\tapplication_name\tsince\tscope\tkey'
	holder=$(locks_on "$id" | sed -n 's/^t://p')
	waiter=$(locks_on "$id" | sed -n 's/^f://p')
	assert_line --regexp "^$id"$'\texclusive\theld\t'"$holder"$'\tpostgres\tlocal\tpglock: status k\t[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}[+-][0-9]{2}:[0-9]{2}\tsession\tstatus k$'
	assert_line --regexp "^$id"$'\texclusive\twaiting\t'"$waiter"$'\tpostgres\tlocal\tpglock: status k\t[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}[+-][0-9]{2}:[0-9]{2}\tsession\tstatus k$'
	[ "$(echo "$output" | awk -F'\t' 'NR > 1 && NF != 10' | wc -l)" -eq 0 ]
}

@test "--status KEY exits 0 when KEY is held and 1 when it is not" {
	bg holder pglock held-k sleep 60
	wait_until 10 held "$(sha_id held-k)"
	run -0 pglock --status held-k
	[ "${#lines[@]}" -eq 2 ]
	run -1 pglock --status free-k
	[ "${#lines[@]}" -eq 1 ]
	run -1 pglock --status held-k free-k
	run -0 pglock --status --id "$(sha_id held-k)"
}

@test "-v names the holder's pid while waiting" {
	id=$(sha_id verbose-wait)
	bg holder pglock verbose-wait sleep 60
	wait_until 10 held "$id"
	holder=$(locks_on "$id" | sed -n 's/^t://p')
	run -1 --separate-stderr pglock -v -w 2 verbose-wait true
	[[ "${stderr_lines[0]}" == "pglock: verbose-wait: held by server pid $holder (pglock: verbose-wait, local, user postgres, for "*"s); waiting" ]]
}

@test "an unknown --hash scheme is a usage error naming the schemes" {
	run -64 --separate-stderr pglock --hash nope k true
	[[ "$stderr" == "pglock: --hash: unknown hash scheme 'nope' (one of: sha256, hashtext,"*"flyway) (see pglock --help)" ]]
}

@test "the man page documents every scheme" {
	schemes=$(pglock --hash nope k true 2>&1 | sed 's/.*one of: //; s/).*//; s/,//g')
	[ "$(echo $schemes | wc -w)" -eq 14 ]
	for s in $schemes; do
		grep -q "^\.It Cm $s$" "$BATS_TEST_DIRNAME/../man/pglock.1" || { echo "undocumented: $s"; false; }
	done
}

@test "-v on a terminal shows a live waiting line, ended before 'acquired'" {
	command -v script >/dev/null || skip "script(1) is not installed"
	id=$(sha_id live-k)
	# The holder lets go once the waiter has shown "waiting 1s" (however
	# slowly pglock starts, as under valgrind).
	ts=$BATS_TEST_TMPDIR/typescript
	bg holder pglock live-k timeout 30 sh -c \
	    'until grep -q "waiting 1s" "$0" 2>/dev/null; do sleep 0.1; done' "$ts"
	wait_until 10 held "$id"
	run -0 timeout 40 script -qfec "$PGLOCK -v -w 30 live-k true" "$ts"
	[[ "$output" == *$'\rpglock: live-k: waiting 1s'* ]]
	[[ "$output" == *$'s\r\npglock: live-k: acquired after '* ]]
}

@test "-v without a terminal writes no live line" {
	id=$(sha_id live-k)
	# The holder lets go once the waiter is queued in pg_locks.
	bg holder pglock live-k timeout 30 sh -c 'until [ "$(psql -XAtqc \
	    "SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = '"'advisory'"'")" = 1 ]
	    do sleep 0.1; done'
	wait_until 10 held "$id"
	run -0 --separate-stderr pglock -v -w 30 live-k true
	[[ "$stderr" != *$'\r'* ]]
	[ "${#stderr_lines[@]}" -eq 3 ]
}
