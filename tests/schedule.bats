#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Schedules: the slot's facts for the command (PGLOCK_SLOT_START, _END,
# PGLOCK_LAST_OK), slots of a time zone's wall clock (--tz), "not before"
# offsets (--after, --spread): all by the server's clock and zone data.

load helper

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
	run -0 faketime -f '+3d' "$PGLOCK" --once-per 1h facts-k sh -c "$FACTS" "$f"
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

@test "a slot of whole milliseconds shows them: --once-per 1.5 ends on a half second" {
	f=$BATS_TEST_TMPDIR/facts
	run -0 pglock --once-per 1.5 ms-k sh -c "$FACTS" "$f"
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
