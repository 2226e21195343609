#!/bin/sh
# SPDX-License-Identifier: ISC
# man-render.sh: render man/pglock.1 as man(1) shows it (mandoc -T utf8)
# and fail, naming each, on what mandoc's lint passes but a reader sees
# wrong: an option with three dashes ("--status ---ok-within": a .Fl
# argument written with its own dash) and quotes that nest or do not close
# (.Ql inside .Pq on one line nests each next one).
set -eu
cd "$(dirname "$0")/.."
MANWIDTH=80 mandoc -T utf8 man/pglock.1 | col -b | awk '
	/(^|[^-])---[a-z]/ { print "man-render: line " NR ": three dashes: " $0; bad = 1 }
	{ text = text $0 "\n" }
	END {
		o = "\342\200\230"; c = "\342\200\231"; d = 0
		for (;;) {
			i = index(text, o); j = index(text, c)
			if (i == 0 && j == 0)
				break
			if (i != 0 && (j == 0 || i < j)) { d++; p = i } else { d--; p = j }
			if (d < 0 || d > 1) {
				print "man-render: quotes nest or do not match near: " \
				    substr(text, p > 40 ? p - 40 : 1, 60)
				bad = 1
				d = d < 0 ? 0 : 1
			}
			text = substr(text, p + 3)
		}
		if (d != 0) { print "man-render: a quote is left open"; bad = 1 }
		exit bad
	}'
