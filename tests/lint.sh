#!/bin/sh
# SPDX-License-Identifier: ISC
# lint.sh: checks of the tests themselves; exit 1 naming each finding.
# In a bats test, "! cmd" fails the test only as its last line (errexit
# ignores "!"): anywhere else it is an assertion that cannot fail. Use
# "run ! cmd" or an explicit check instead.
set -eu
cd "$(dirname "$0")"
awk '
	FNR == 1 { pending = "" }
	# A "! cmd" line is fine only if the next non-blank line closes the test.
	pending != "" && NF > 0 {
		if ($0 !~ /^}/) { print pending; bad = 1 }
		pending = ""
	}
	/^[ \t]+! / { pending = FILENAME ":" FNR ": \"! cmd\" not as the last line of a test" }
	END { exit bad }
' ./*.bats

# Every mutant of mutants.txt still changes its file: a refactor that moves
# the code it targets must move the mutant too (make mutants would fail).
grep -v '^#' mutants.txt | grep . |
while IFS="$(printf '\t')" read -r name file script _; do
	if sed -e "$script" "../$file" | cmp -s - "../$file"; then
		echo "mutants.txt: $name: its sed script changes nothing in $file"
		exit 1
	fi
done
