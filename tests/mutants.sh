#!/bin/sh
# SPDX-License-Identifier: ISC
# mutants.sh: build every mutant of tests/mutants.txt in a scratch copy of
# the tree and run the tests that claim its promise. A mutant those tests
# pass has survived: the harness lists it and fails, as it does for a
# mutant that does not build (it tests nothing). Prints the kill ratio.
#   tests/mutants.sh [NAME-REGEX]
# MUTANT_SHARD=I/N tries only every Nth of them, from the Ith (1-based):
# CI's two lanes take two thirds (1/3, 3/3) and one third (2/3).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
only=${1:-.}
work=$(mktemp -d /tmp/pglock-mutants.XXXXXX)
chmod 755 "$work"
trap '"$top/tests/pg.sh" stop "$work/pg"; rm -rf "$work"' EXIT
# One cluster for every run (tests/setup_suite.bash gives each a database
# of its own): a new server's lock-delay is waited out once, not each time.
"$top/tests/pg.sh" start "$work/pg"
export PGLOCK_SHARED_PG="$work/pg"

shard=${MUTANT_SHARD:-1/1}
# The listed mutants that NAME-REGEX and the shard select, one a line.
selected() {
	grep -v '^#' "$top/tests/mutants.txt" | grep . | cut -f1 |
	    grep -E -- "$only" | awk -v i="${shard%/*}" -v n="${shard#*/}" \
	    '(NR - i) % n == 0 && NR >= i'
}
picked=$(selected)

# The tree as it is, built once: each mutant's copy rebuilds only the
# object its sed script touches (or every one, for a header).
mkdir -p "$work/base"
(cd "$top" && git ls-files -z | xargs -0 tar -cf - 2>/dev/null) | tar -xf - -C "$work/base"
make -s -C "$work/base" pglock tests/unit_arg tests/unit_key tests/unit_clock tests/unit_tail tests/two_sessions tests/failfork.so >"$work/build.log" 2>&1 ||
	{ cat "$work/build.log"; echo "mutants: the tree itself does not build" >&2; exit 1; }

grep -v '^#' "$top/tests/mutants.txt" | grep . | while IFS="$(printf '\t')" read -r name file script tests; do

	echo "$picked" | grep -qxF -- "$name" || continue
	t0=$(date +%s)
	rm -rf "$work/tree"
	cp -a "$work/base" "$work/tree"
	# Written after the base was built: newer than its object.
	sed -e "$script" "$top/$file" >"$work/tree/$file"
	if cmp -s "$top/$file" "$work/tree/$file"; then
		echo "mutants: $name: the sed script changes nothing in $file" >&2
		echo broken >>"$work/tally"
		continue
	fi
	case $tests in
	unit:*)
		unit=${tests#unit:}
		if ! make -s -C "$work/tree" "tests/$unit" >"$work/build.log" 2>&1; then
			echo "mutants: $name: does not build" >&2; echo broken >>"$work/tally"; continue
		fi
		run() { "$work/tree/tests/$unit" </dev/null >"$work/run.log" 2>&1; }
		;;
	*)
		bats_file=${tests%%:*} filter=${tests#*:}
		if ! make -s -C "$work/tree" pglock tests/two_sessions tests/failfork.so >"$work/build.log" 2>&1; then
			echo "mutants: $name: does not build" >&2; echo broken >>"$work/tally"; continue
		fi
		run() {
			# stdin is the list of mutants: a test must not read it
			# (script(1) does).
			timeout 300 bats -f "$filter" "$work/tree/tests/$bats_file" \
			    </dev/null >"$work/run.log" 2>&1
		}
		;;
	esac
	if run; then
		if grep -q '^1\.\.0$' "$work/run.log"; then
			echo "mutants: $name: no test matches $tests" >&2
			echo broken >>"$work/tally"
		else
			echo "SURVIVED $name: $tests passes ($(( $(date +%s) - t0 )) s)"
			sed 's/^/    /' "$work/run.log"
			echo survived >>"$work/tally"
		fi
	else
		echo "killed   $name by $tests ($(( $(date +%s) - t0 )) s)"
		echo killed >>"$work/tally"
	fi
done
k=$(grep -c '^killed$' "$work/tally" 2>/dev/null || true)
s=$(grep -c '^survived$' "$work/tally" 2>/dev/null || true)
b=$(grep -c '^broken$' "$work/tally" 2>/dev/null || true)
want=$(selected | grep -c . || true)
echo "mutants: $k killed, $s survived, $b not applied, of $((k + s + b))"
if [ "$((k + s + b))" -ne "$want" ]; then
	echo "mutants: only $((k + s + b)) of the $want listed were tried" >&2
	exit 1
fi
[ "$s" -eq 0 ] && [ "$b" -eq 0 ] && [ "$k" -gt 0 ]
