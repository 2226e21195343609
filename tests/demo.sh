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

job='for i in 1 2 3; do echo "  $(date +%T.%N | cut -c1-12) $JOB: step $i"; sleep 0.3; done'
echo "Two jobs want the lock on 'nightly-report'; each runs three steps:"
JOB=job-A "$top/pglock" -v nightly-report sh -c "$job" &
JOB=job-B "$top/pglock" -v nightly-report sh -c "$job" &
wait
echo "A third job with -n gives up at once while another holds the key:"
"$top/pglock" nightly-report sleep 1 &
sleep 0.3
status=0
"$top/pglock" -n nightly-report true || status=$?
echo "  pglock -n exited $status (the conflict status)"
wait
