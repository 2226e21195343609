#!/bin/sh
# SPDX-License-Identifier: ISC
# demo.sh: pglock's main job against a throwaway local PostgreSQL. Two jobs
# contend for one key and take turns; the cluster is removed afterwards.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d /tmp/pglock-demo.XXXXXX)
chmod 755 "$dir"
trap '"$top/tests/pg.sh" stop "$dir/pg"; rm -rf "$dir"' EXIT INT TERM
"$top/tests/pg.sh" start "$dir/pg"
. "$dir/pg/env"

job='for i in 1 2 3; do echo "$(date +%T.%N | cut -c1-12) step $i"; sleep 0.3; done'
# run NAME: a job, every line it and pglock print marked with its name.
# --check-interval 1: a lease of 4 s, and so the lock-delay of a server
# that just started (the default lease's is 20 s; see the README).
run() {
	"$top/pglock" -v --check-interval 1 nightly-report sh -c "$job" 2>&1 |
	    sed "s/^/  $1: /"
}
echo "Two jobs want the lock on 'nightly-report'; each runs three steps."
echo "The server has just started: the first waits out its lock-delay (4 s"
echo "here), in case a holder from before a restart still runs."
run job-A &
run job-B &
wait
echo "A third job, job-C, with -n gives up at once while another holds the key:"
"$top/pglock" --check-interval 1 nightly-report sleep 1 &
sleep 0.3
status=0
"$top/pglock" -n nightly-report true 2>&1 | sed 's/^/  job-C: /' || true
"$top/pglock" -q -n nightly-report true || status=$?
echo "  job-C: pglock -n exited $status (the conflict status)"
wait
