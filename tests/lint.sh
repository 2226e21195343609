#!/bin/sh
# SPDX-License-Identifier: ISC
# lint.sh: in a bats test, "! cmd" fails the test only as its last line
# (errexit ignores "!"): anywhere else it is an assertion that cannot fail.
# Use "run ! cmd" or an explicit check instead. Exit 1 naming each one.
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
