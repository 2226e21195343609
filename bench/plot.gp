# SPDX-License-Identifier: ISC
# plot.gp: bench/results.png, drawn by bench/report.py from the medians it
# writes to two data files (NAME VALUE COLOUR a line). Set by the caller
# with -e: out, unc, con (the data files), term, heading, con_title.
set terminal term size 1200,500 font ",10"
set output out
set multiplot layout 1,2 title heading
set style fill solid 0.8 border -1
set boxwidth 0.7
set offsets 0.6, 0.6, 0, 0
set grid ytics
set xtics rotate by -30 nomirror
unset key

set title "1. uncontended: TOOL KEY true, median wall ms (log scale)"
set logscale y
set yrange [0.5:*]
plot unc using 0:2:3:xtic(1) with boxes lc rgb variable, \
    "" using 0:2:(sprintf("%.1f", $2)) with labels offset 0,0.8 notitle

unset logscale y
set yrange [0:*]
set title con_title
plot con using 0:2:3:xtic(1) with boxes lc rgb variable, \
    "" using 0:2:(sprintf("%.0f", $2)) with labels offset 0,0.8 notitle
unset multiplot
