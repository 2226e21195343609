#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Schedules: the slot's facts for the command (PGLOCK_SLOT_START, _END,
# PGLOCK_LAST_OK), slots of a time zone's wall clock (--tz), "not before"
# offsets (--after, --spread): all by the server's clock and zone data.

load helper

# A second server, its clock set by faketime from a file (each read of the
# clock reads it), for the days a zone's clocks change; pglock's own clock
# is never faked here: only the server's counts.
setup_file() {
	local lib
	for lib in /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1; do
		[ -e "$lib" ] && break
	done
	[ -e "$lib" ] || return 0
	export DST_DIR
	DST_DIR=$(mktemp -d /tmp/pglock-dst.XXXXXX)
	chmod 755 "$DST_DIR"
	# Started before every time a test sets: a server that started a lease
	# ago or less imposes its lock-delay, and one whose clock reads before
	# its start would impose it until the clock passes it.
	echo "@2026-03-01 00:00:00" >"$DST_DIR/now"
	chmod 644 "$DST_DIR/now"
	LD_PRELOAD=$lib FAKETIME_TIMESTAMP_FILE=$DST_DIR/now FAKETIME_NO_CACHE=1 \
	    PG_MAX_CONNECTIONS=20 pg_sh start "$DST_DIR/pg" >/dev/null
}

teardown_file() {
	[ -z "${DST_DIR:-}" ] || "$BATS_TEST_DIRNAME/pg.sh" stop "$DST_DIR/pg"
	[ -z "${DST_DIR:-}" ] || rm -rf "$DST_DIR"
}

# at UTC-TIME: the faked server's clock starts again from UTC-TIME.
at() {
	[ -n "${DST_DIR:-}" ] || skip "no libfaketime"
	echo "@$1" >"$DST_DIR/now"
}

# dst ARGS...: pglock ARGS against the faked server.
dst() {
	# shellcheck disable=SC1091
	(. "$DST_DIR/pg/env" && timeout 20 "$PGLOCK" "$@")
}

# facts FILE: what a command run as `sh -c "$FACTS" FILE` saw, one a line.
FACTS='printf "%s\n" "start=${PGLOCK_SLOT_START-unset}" "end=${PGLOCK_SLOT_END-unset}" "last=${PGLOCK_LAST_OK-unset}" >"$0"'

# fact NAME FILE: one fact FACTS wrote.
fact() {
	sed -n "s/^$1=//p" "$2"
}

# rfc3339 TEXT: is TEXT an RFC 3339 time with seconds and an offset?
rfc3339() {
	[[ $1 =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{3})?[+-][0-9]{2}:[0-9]{2}$ ]]
}

@test "--once-per's command gets PGLOCK_SLOT_START and _END: the slot of the server's now, aligned, in UTC, whatever the client's clock" {
	f=$BATS_TEST_TMPDIR/facts
	export FAKETIME_DONT_FAKE_MONOTONIC=1
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
	# Not through valgrind (make valgrind), which faketime's preload upsets.
	skew=(faketime -f '+3d')
	[ -z "${PGLOCK_VG_DIR:-}" ] || skew=()
	run -0 "${skew[@]}" "$PGLOCK" --once-per 1h facts-k sh -c "$FACTS" "$f"
	start=$(fact start "$f") end=$(fact end "$f")
	rfc3339 "$start"
	rfc3339 "$end"
	[[ $start == *:00:00+00:00 ]]
	# An hour long, and the run's record (dated by the server) inside it.
	[ "$(sql "SELECT '$end'::timestamptz - '$start'::timestamptz = interval '1 hour'
	          AND ok_at >= '$start' AND ok_at < '$end'::timestamptz + interval '10 s'
	          FROM pglock_runs WHERE key = 'facts-k'")" = t ]
	# 1000d: slots of the epoch, the one from 2024-10-04 to 2027-07-01.
	run -0 pglock --once-per 1000d facts-k sh -c "$FACTS" "$f"
	[ "$(fact start "$f") $(fact end "$f")" = "2024-10-04T00:00:00+00:00 2027-07-01T00:00:00+00:00" ]
}

@test "a slot of whole milliseconds shows them: --once-per 1.5s ends on a half second" {
	f=$BATS_TEST_TMPDIR/facts
	run -0 pglock --once-per 1.5s ms-k sh -c "$FACTS" "$f"
	rfc3339 "$(fact start "$f")"
	[ "$(sql "SELECT extract(epoch FROM '$(fact end "$f")'::timestamptz - '$(fact start "$f")'::timestamptz)")" = 1.500000 ]
}

@test "PGLOCK_LAST_OK: empty before any success, then KEY's last recorded success, for --record, --once and --once-per; no slot facts without --once-per" {
	f=$BATS_TEST_TMPDIR/facts
	run -0 pglock --record last-k sh -c "$FACTS" "$f"
	[ "$(cat "$f")" = "start=unset
end=unset
last=" ]
	before=$(sql "SELECT ok_at FROM pglock_runs WHERE key = 'last-k'")
	run -1 pglock --record last-k false
	run -0 pglock --record last-k sh -c "$FACTS" "$f"
	last=$(fact last "$f")
	rfc3339 "$last"
	[[ $last == *+00:00 ]]
	# The first run's success, not the failure after it, nor this run.
	[ "$(sql "SELECT abs(extract(epoch FROM '$before'::timestamptz - '$last'::timestamptz)) < 0.001")" = t ]
	[ "$(fact start "$f")" = unset ]
	before=$(sql "SELECT ok_at FROM pglock_runs WHERE key = 'last-k'")
	run -0 pglock --once last-k sh -c "$FACTS" "$f"
	[ "$(sql "SELECT abs(extract(epoch FROM '$before'::timestamptz - '$(fact last "$f")'::timestamptz)) < 0.001")" = t ]
	[ "$(fact start "$f")" = unset ]
	before=$(sql "SELECT ok_at FROM pglock_runs WHERE key = 'last-k'")
	run -0 pglock --once-per 1000d last-k sh -c "$FACTS" "$f"
	[ "$(sql "SELECT abs(extract(epoch FROM '$before'::timestamptz - '$(fact last "$f")'::timestamptz)) < 0.001")" = t ]
	[ "$(fact start "$f")" = 2024-10-04T00:00:00+00:00 ]
}

# local_day ZONE: the server's local date in ZONE, as a wall-clock midnight.
local_day() {
	sql "SELECT to_char(date_trunc('day', now() AT TIME ZONE '$1'), 'YYYY-MM-DD\"T\"HH24:MI:SS')"
}

@test "--tz Asia/Kolkata --once-per 1d: the local day, from midnight at +05:30 to the next, and once in it" {
	f=$BATS_TEST_TMPDIR/facts
	day=$(local_day Asia/Kolkata)
	run -0 pglock --once-per 1d --tz Asia/Kolkata kolkata-k sh -c "$FACTS" "$f"
	start=$(fact start "$f")
	# Midnight may have passed meanwhile: the day before or after the run.
	[ "$start" = "$day+05:30" ] || [ "$start" = "$(local_day Asia/Kolkata)+05:30" ]
	[ "$(fact end "$f")" = "$(sql "SELECT to_char(timestamp '${start%+*}' + interval '1 day', 'YYYY-MM-DD\"T\"HH24:MI:SS')")+05:30" ]
	run -0 pglock --once-per 1d --tz Asia/Kolkata kolkata-k touch "$BATS_TEST_TMPDIR/ran"
	[ ! -e "$BATS_TEST_TMPDIR/ran" ] || [ "$(local_day Asia/Kolkata)+05:30" != "$start" ]
	# Another DURATION is another slot: it runs, and sees the success.
	before=$(sql "SELECT ok_at FROM pglock_runs WHERE key = 'kolkata-k'")
	run -0 pglock --once-per 12h --tz Asia/Kolkata kolkata-k sh -c "$FACTS" "$f"
	last=$(fact last "$f")
	[[ $last == *+05:30 ]]
	[ "$(sql "SELECT abs(extract(epoch FROM '$before'::timestamptz - '$last'::timestamptz)) < 0.001")" = t ]
}

@test "--tz Asia/Kolkata --once-per 45m: slots count from local midnight, 15 minutes off the epoch's" {
	f=$BATS_TEST_TMPDIR/facts
	run -0 pglock --once-per 45m --tz Asia/Kolkata k45-k sh -c "$FACTS" "$f"
	start=$(fact start "$f") end=$(fact end "$f")
	[ "$(sql "SELECT extract(epoch FROM '$start'::timestamptz)::bigint % 2700 || ' ' ||
	          extract(epoch FROM '$end'::timestamptz - '$start'::timestamptz)")" = "1800 2700.000000" ]
	[[ $start == *+05:30 ]]
}

@test "the zone is part of a slot: --once-per 1d, then --tz UTC, Asia/Kolkata, Europe/Berlin, Europe/Paris (the same hours) each run once, then 1d again" {
	log=$BATS_TEST_TMPDIR/log
	for tz in '' UTC UTC Asia/Kolkata Asia/Kolkata Europe/Berlin Europe/Paris Europe/Paris ''; do
		run -0 pglock --once-per 1d ${tz:+--tz "$tz"} zone-k sh -c 'echo "${1:-none}" >>"$0"' "$log" "$tz"
	done
	run -0 cat "$log"
	# The record keeps the last success's slot: back without a zone, it runs.
	assert_output "none
UTC
Asia/Kolkata
Europe/Berlin
Europe/Paris
none"
}

@test "--tz with a zone the server does not know, or reads as an abbreviation (CEST, IST, CET: a fixed offset): 64, nothing run, nothing recorded; UTC's other names are taken" {
	run -64 --separate-stderr pglock --once-per 1h --tz Mars/Olympus_Mons mars-k touch "$BATS_TEST_TMPDIR/ran"
	assert_equal "$stderr" 'pglock: --tz: time zone "Mars/Olympus_Mons" not recognized'
	# AT TIME ZONE would take CEST for +02:00 all year, IST for Israel's,
	# CET (a zone name too) for +01:00 all year.
	for tz in CEST IST CET cest; do
		run -64 --separate-stderr pglock --once-per 1h --tz "$tz" mars-k touch "$BATS_TEST_TMPDIR/ran"
		assert_equal "$stderr" "pglock: --tz: the server reads '$tz' as an abbreviation (a fixed offset), not as a time zone name (as Europe/Berlin)"
	done
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	[ "$(sql "SELECT count(*) FROM pglock_runs WHERE key = 'mars-k'")" = 0 ]
	# UTC's other names mean the same either way: taken.
	for tz in GMT UT Z Zulu; do
		run -0 pglock --once-per 1h --tz "$tz" "utc-$tz" sh -c 'echo "$PGLOCK_SLOT_START"'
		assert_output --regexp '^[0-9-]+T[0-9]{2}:00:00[+]00:00$'
	done
}

@test "--tz: a zone's name is one slot however its case is spelled, as the server finds the zone" {
	at "2026-10-24 22:30:00"	# 00:30 on the 25th, in Berlin
	run -0 dst --once-per 1d --tz Europe/Berlin case-k true
	run -0 dst --once-per 1d --tz europe/BERLIN case-k touch "$BATS_TEST_TMPDIR/ran"
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "every bad combination of --tz, --after and --spread is a usage error: 64, its reason, nothing run" {
	none='shapes the slots of --once-per DURATION: none given'
	while IFS='|' read -r args says; do
		# shellcheck disable=SC2086
		run -64 --separate-stderr timeout 20 "$PGLOCK" $args bad-k touch "$BATS_TEST_TMPDIR/ran"
		assert_equal "$stderr" "pglock: ${says/NONE/$none} (see pglock --help)"
	done <<-EOF2
	--tz Europe/Berlin|--tz NONE
	--once --tz Europe/Berlin|--tz NONE
	--record --tz Europe/Berlin|--tz NONE
	--after 1h|--after NONE
	--once --after 1h|--after NONE
	--record --spread 60s|--spread NONE
	--spread 60s|--spread NONE
	--once-per 7m --tz Europe/Berlin|--tz: --once-per's DURATION must divide a day (5m, 1h, 6h ...), or be 1d or 1w
	--once-per 2d --tz Europe/Berlin|--tz: --once-per's DURATION must divide a day (5m, 1h, 6h ...), or be 1d or 1w
	--once-per 25h --tz UTC|--tz: --once-per's DURATION must divide a day (5m, 1h, 6h ...), or be 1d or 1w
	--once-per 1h --tz +05|--tz: '+05' is not a time zone name (as Europe/Berlin)
	--once-per 1h --tz UTC+3|--tz: 'UTC+3' is not a time zone name (as Europe/Berlin)
	--once-per 1h --tz 05:30|--tz: '05:30' is not a time zone name (as Europe/Berlin)
	--once-per 1h --after 1h|--after: OFFSET must be less than --once-per's DURATION
	--once-per 1h --after 2h|--after: OFFSET must be less than --once-per's DURATION
	--once-per 1h --after 30m --spread 1800s|--after + --spread must be less than --once-per's DURATION
	--once-per 1h --spread 1h|--after + --spread must be less than --once-per's DURATION
	--once-per 1h --spread 0|--spread: '0' is not whole seconds, at least 1
	--once-per 1h --spread 1.5s|--spread: '1.5s' is not whole seconds, at least 1
	--once-per 1h --after 5x|--after: '5x' is not a duration (numbers with s, m, h, d or w: 90s, 5m, 2h30m, 1w)
	--once-per 1h --after 2|--after: '2' needs a unit: 2h, 2m or 2s
	--once-per 1h --spread 600|--spread: '600' needs a unit: 600h, 600m or 600s
	--once-per 24|--once-per: '24' needs a unit: 24h, 24m or 24s
	EOF2
	run -64 --separate-stderr pglock --once-per 1h --tz '' bad-k true
	assert_equal "$stderr" "pglock: --tz: '' is not a time zone name (as Europe/Berlin) (see pglock --help)"
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

# 1000d slots: the one from 2024-10-04 to 2027-07-01 holds the suite's now.
@test "--after: before OFFSET of the slot has passed nothing runs and pglock exits 0 (-v says until when); after it the run goes ahead, once" {
	run -0 --separate-stderr pglock --once-per 1000d --after 999d after-k touch "$BATS_TEST_TMPDIR/ran"
	assert_equal "$stderr" ''
	run -0 --separate-stderr pglock -v --once-per 1000d --after 999d after-k touch "$BATS_TEST_TMPDIR/ran"
	[[ $stderr == *"pglock: after-k: not due until 2027-06-30T00:00:00+00:00 (--after): not run"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	[ "$(sql "SELECT count(*) FROM pglock_runs WHERE key = 'after-k'")" = 0 ]
	run -0 pglock --once-per 1000d --after 2h30m after-k touch "$BATS_TEST_TMPDIR/ran"
	[ -e "$BATS_TEST_TMPDIR/ran" ]
	rm "$BATS_TEST_TMPDIR/ran"
	run -0 pglock --once-per 1000d --after 2h30m after-k touch "$BATS_TEST_TMPDIR/ran"
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

# spread_of KEY S: ((id % S) + S) % S for KEY's default id, by the server.
spread_of() {
	sql "SELECT (($(sha_id "$1") % $2) + $2) % $2"
}

@test "--spread: KEY's offset is ((id % s) + s) % s seconds, a negative id's too, as --explain shows, added to --after" {
	for key in spread-a spread-b; do
		off=$(spread_of "$key" 86400)
		run -0 pglock --explain --spread 1d "$key"
		assert_line "spread	${off}s of --spread 86400s: ((id % s) + s) % s, added to --after"
		run -0 --separate-stderr pglock -v --once-per 1000d --after 998d --spread 1d "$key" touch "$BATS_TEST_TMPDIR/ran"
		due=$(sql "SELECT to_char(timestamp '2027-06-29' + $off * interval '1 s', 'YYYY-MM-DD\"T\"HH24:MI:SS')")
		[[ $stderr == *"pglock: $key: not due until $due+00:00 (--after, --spread's ${off}s): not run"* ]]
		[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	done
	# spread-a's id is negative: C's % alone would give a negative offset.
	[ "$(sha_id spread-a)" -lt 0 ]
	[ "$(sql "SELECT $(sha_id spread-a) % 86400 < 0")" = t ]
	run -0 pglock --once-per 1000d --after 700d --spread 1d spread-a touch "$BATS_TEST_TMPDIR/ran"
	[ -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "--spread with --id A,B: id is A * 2^32 + (B mod 2^32), pg_locks' classid and objid as one bigint" {
	run -0 --separate-stderr pglock --explain --json --spread 86400s --id 1,2
	[[ $output == *'"spread_seconds": '$(( (1 << 32 | 2) % 86400 ))'}' ]]
	run -0 --separate-stderr pglock --explain --spread 7s --id -- -1,-1
	assert_line "spread	6s of --spread 7s: ((id % s) + s) % s, added to --after"
	run -0 --separate-stderr pglock --explain --spread 1000s --id -- -5
	assert_line "spread	995s of --spread 1000s: ((id % s) + s) % s, added to --after"
}

@test "the length is part of a slot: at 00:30 in Berlin, --once-per 1d then 6h (both from midnight) each run, 6h again does not" {
	log=$BATS_TEST_TMPDIR/log
	at "2026-10-24 22:30:00"	# 00:30 on the 25th, in Berlin
	for per in 1d 6h 6h; do
		run -0 dst --once-per "$per" --tz Europe/Berlin length-k sh -c 'echo "$1 $PGLOCK_SLOT_START $PGLOCK_SLOT_END" >>"$0"' "$log" "$per"
	done
	run -0 cat "$log"
	# 6h from midnight ends at 06:00 CET: 7 hours, the clocks go back.
	assert_output "1d 2026-10-25T00:00:00+02:00 2026-10-26T00:00:00+01:00
6h 2026-10-25T00:00:00+02:00 2026-10-25T06:00:00+01:00"
}

# zoned ARGS...: ARGS with the client's time zone settings set, each to
# another zone, and German dates.
zoned() {
	TZ=America/New_York PGTZ=Asia/Kolkata PGOPTIONS='-c TimeZone=America/Los_Angeles -c DateStyle=German' "$@"
}

@test "the client's time zone settings (TZ, PGTZ, PGOPTIONS' TimeZone and DateStyle) change no slot fact and no slot's identity" {
	d=$BATS_TEST_TMPDIR
	at "2026-10-24 22:45:00"	# 00:45 on the 25th, in Berlin
	run -0 dst --once-per 1d --tz Europe/Berlin client-tz-k true
	# Failures, which record no success: the same record for both.
	at "2026-10-25 10:00:00"	# 11:00 CET
	run -3 dst --once-per 6h --tz Europe/Berlin client-tz-k sh -c "$FACTS; exit 3" "$d/plain"
	run -3 zoned dst --once-per 6h --tz Europe/Berlin client-tz-k sh -c "$FACTS; exit 3" "$d/zoned"
	run -0 cat "$d/zoned"
	assert_output "$(cat "$d/plain")"
	[ "$(fact start "$d/plain") $(fact end "$d/plain")" = "2026-10-25T06:00:00+01:00 2026-10-25T12:00:00+01:00" ]
	[[ $(fact last "$d/plain") == 2026-10-25T00:45:0*+02:00 ]]
	# The slots the first run and a zoned one record are the plain ones.
	run -0 zoned dst --once-per 1d --tz Europe/Berlin client-tz-k touch "$d/ran"
	run -0 zoned dst --once-per 6h --tz Europe/Berlin client-tz-k true
	run -0 dst --once-per 6h --tz Europe/Berlin client-tz-k touch "$d/ran"
	[ ! -e "$d/ran" ]
}

@test "Europe/Berlin's October change: --once-per 1d --tz is one slot of 25 hours, from midnight at +02:00 to midnight at +01:00" {
	f=$BATS_TEST_TMPDIR/facts
	at "2026-10-24 22:30:00"	# 00:30 on the 25th, in Berlin
	run -0 dst --once-per 1d --tz Europe/Berlin day-k sh -c "$FACTS" "$f"
	[ "$(fact start "$f") $(fact end "$f")" = "2026-10-25T00:00:00+02:00 2026-10-26T00:00:00+01:00" ]
	at "2026-10-25 22:30:00"	# 24 hours on: 23:30, the same day
	run -0 dst --once-per 1d --tz Europe/Berlin day-k touch "$BATS_TEST_TMPDIR/ran"
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	at "2026-10-25 23:30:00"	# 00:30 on the 26th
	run -0 dst --once-per 1d --tz Europe/Berlin day-k sh -c "$FACTS" "$f"
	[ "$(fact start "$f") $(fact end "$f")" = "2026-10-26T00:00:00+01:00 2026-10-27T00:00:00+01:00" ]
}

@test "Europe/Berlin's October change: the repeated hour is one slot, run at 02:30 CEST and not at 02:30 CET; the UTC hours run twice" {
	log=$BATS_TEST_TMPDIR/log f=$BATS_TEST_TMPDIR/facts
	# 01:30 CEST; 02:30 CEST; 02:30 CET; 03:30 CET.
	for t in 24T23:30 25T00:30 25T01:30 25T02:30; do
		at "2026-10-${t/T/ }:00"
		run -0 dst --once-per 1h --tz Europe/Berlin hour-k sh -c 'echo "berlin $PGLOCK_SLOT_START $PGLOCK_SLOT_END" >>"$0"' "$log"
		run -0 dst --once-per 1h utc-hour-k sh -c 'echo "utc $PGLOCK_SLOT_START" >>"$0"' "$log"
	done
	run -0 cat "$log"
	# The hour before ends where the repeated one begins: the first 02:00.
	assert_output "berlin 2026-10-25T01:00:00+02:00 2026-10-25T02:00:00+02:00
utc 2026-10-24T23:00:00+00:00
berlin 2026-10-25T02:00:00+02:00 2026-10-25T03:00:00+01:00
utc 2026-10-25T00:00:00+00:00
utc 2026-10-25T01:00:00+00:00
berlin 2026-10-25T03:00:00+01:00 2026-10-25T04:00:00+01:00
utc 2026-10-25T02:00:00+00:00"
}

@test "Europe/Berlin's March change: a day of 23 hours, and the hour the clocks skip has no slot" {
	log=$BATS_TEST_TMPDIR/log
	at "2026-03-28 23:30:00"	# 00:30 CET on the 29th
	run -0 dst --once-per 1d --tz Europe/Berlin spring-day-k sh -c 'echo "day $PGLOCK_SLOT_START $PGLOCK_SLOT_END" >>"$0"' "$log"
	for t in 00:30 01:30; do	# 01:30 CET, then 03:30 CEST
		at "2026-03-29 $t:00"
		run -0 dst --once-per 1h --tz Europe/Berlin spring-hour-k sh -c 'echo "hour $PGLOCK_SLOT_START $PGLOCK_SLOT_END" >>"$0"' "$log"
	done
	run -0 cat "$log"
	assert_output "day 2026-03-29T00:00:00+01:00 2026-03-30T00:00:00+02:00
hour 2026-03-29T01:00:00+01:00 2026-03-29T03:00:00+02:00
hour 2026-03-29T03:00:00+02:00 2026-03-29T04:00:00+02:00"
}

@test "--once-per 1w --tz: the ISO week, from Monday's local midnight" {
	f=$BATS_TEST_TMPDIR/facts
	at "2026-10-25 00:30:00"	# a Sunday
	run -0 dst --once-per 1w --tz Europe/Berlin week-k sh -c "$FACTS" "$f"
	[ "$(fact start "$f") $(fact end "$f")" = "2026-10-19T00:00:00+02:00 2026-10-26T00:00:00+01:00" ]
}

@test "the catch-up recipe: --once-per 1d --tz Europe/Berlin --after 2h30m runs at 02:30 in Berlin, or as soon after as a machine is up, once a day" {
	log=$BATS_TEST_TMPDIR/log
	nightly() {
		run -0 --separate-stderr dst -v --once-per 1d --tz Europe/Berlin --after 2h30m nightly sh -c 'echo "ran $PGLOCK_SLOT_START" >>"$0"' "$log"
	}
	at "2026-10-25 00:00:00"	# 02:00 CEST: not yet
	nightly
	[[ $stderr == *"pglock: nightly: not due until 2026-10-25T02:30:00+02:00 (--after): not run"* ]]
	[ ! -e "$log" ]
	at "2026-10-25 00:35:00"	# 02:35 CEST: due
	nightly
	at "2026-10-25 01:35:00"	# 02:35 CET, the repeated hour: done
	nightly
	[[ $stderr == *"pglock: nightly: succeeded in this slot already"* ]]
	at "2026-10-26 01:00:00"	# 02:00 CET on the 26th: not yet
	nightly
	[[ $stderr == *"pglock: nightly: not due until 2026-10-26T02:30:00+01:00 (--after): not run"* ]]
	at "2026-10-26 08:00:00"	# every machine was down at 02:30: catch up
	nightly
	at "2026-10-26 09:00:00"
	nightly
	run -0 cat "$log"
	assert_output "ran 2026-10-25T00:00:00+02:00
ran 2026-10-26T00:00:00+01:00"
}

@test "--jitter DURATION: a run starts a time below it from now that is its node's and KEY's own, the same each run (said under -v); a TERM while it waits ends the run unrun, connecting nothing: 143; a bare number, or no COMMAND's run, is 64" {
	# FNV-1a of "node NUL key NUL", splitmix64's finalizer, modulo: pinned,
	# so a host's job keeps its minute across versions too.
	for nw in web-1:0.490 web-2:0.314 web-3:0.144 web-1:0.490; do
		run -0 --separate-stderr pglock -v --node "${nw%:*}" --jitter 0.5s jit-k true
		assert_equal "$(printf '%s\n' "$stderr" | grep -e --jitter)" "pglock: jit-k: --jitter: starting in ${nw#*:}s (this node's and KEY's)"
	done
	# web-1's delay for jit-k in an hour: 1309.990 s.
	bg runner pglock --node web-1 --jitter 1h jit-k touch "$BATS_TEST_TMPDIR/ran"
	sleep 0.5
	[ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pglock: jit-k'")" -eq 0 ]
	kill -TERM "$(bgpid runner)"
	bgwait runner 5
	[ "$bg_status" -eq 143 ]
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
	run -64 --separate-stderr pglock --jitter 30 jit-k true
	assert_equal "$stderr" "pglock: --jitter: '30' needs a unit: 30h, 30m or 30s (see pglock --help)"
	run -64 --separate-stderr pglock --jitter 30s --status jit-k
	assert_equal "$stderr" "pglock: --jitter delays a run's start: not with --status, --explain, --break, --forget, --pause or --resume (see pglock --help)"
}

@test "a --tz run's lines give every time in its zone, the last success and the pause's end as the slot's due time; --status, without --tz, the session's" {
	run -0 pglock --once-per 1d --tz Asia/Kolkata tzm-k true
	run -0 --separate-stderr pglock -v --once-per 1d --tz Asia/Kolkata tzm-k true
	[[ $stderr == *"pglock: tzm-k: succeeded in this slot already (at "*"+05:30 on "*"): not run again"* ]]
	run -0 pglock --pause --for 1h tzm-k
	run -0 --separate-stderr pglock -v --once-per 1d --tz Asia/Kolkata tzm-k true
	[[ $stderr == *"pglock: tzm-k is paused until "*"+05:30 by "*": not run"* ]]
	run -0 pglock --resume tzm-k
	run -0 --separate-stderr pglock -v --once-per 1d --tz Asia/Kolkata --after 23h59m tzm-j true
	[[ $stderr == *"pglock: tzm-j: not due until "*"T23:59:00+05:30 (--after): not run"* ]]
	offset=$(sql "SELECT to_char(now(), 'TZH:TZM')")
	[ "$offset" != "+05:30" ]
	run -1 --separate-stderr pglock --status tzm-k
	assert_line --index 2 --regexp "^tzm-k	last_ok	[0-9-]+T[0-9:]+\\$offset	"
}
