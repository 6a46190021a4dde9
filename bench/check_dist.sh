#!/bin/sh
# check_dist.sh COMMAND... - runs a pingpong with -dist (acpbench or
# mpi_pingpong) and checks its tables: every row of a table whose titles
# end in t_max has the eight columns, the spread's minimum, median, 99th
# percentile and maximum in order, and the mean within [min, max].
out=$("$@") || { echo "check_dist: $* failed" >&2; exit 1; }
printf '%s\n' "$out"
printf '%s\n' "$out" | awk '
	/^ +#bytes +#repetitions +t\[usec\] +Mbytes\/sec +t_min +t_p50 +t_p99 +t_max$/ { tables++; on = 1; next }
	/^ *$/ || /^#/ { on = 0; next }
	on {
		rows++
		if (NF != 8) { print "check_dist: row with " NF " columns: " $0; bad++; next }
		# the mean of the halves lies between the shortest and the longest
		# (a little slack: the columns are rounded to 3 decimals)
		if (!($5 <= $6 && $6 <= $7 && $7 <= $8 && $3 >= $5 - 0.002 && $3 <= $8 + 0.002)) {
			print "check_dist: spread out of order: " $0; bad++
		}
	}
	END {
		if (tables == 0 || rows == 0) { print "check_dist: no table with the spread columns"; exit 1 }
		if (bad) exit 1
		print "check_dist: " tables " table(s), " rows " rows in order"
	}' >&2
