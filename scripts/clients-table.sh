#!/bin/sh
# clients-table.sh - README's "Tested clients" table from the results of
# tests/integration/t_clients.sh.
#
# Usage: scripts/clients-table.sh [--readme FILE] RESULTS.tsv
#
# RESULTS.tsv is what t_clients.sh wrote (build/dev/tests/integration/
# t_clients.tsv after `make check TESTS=tests/integration/t_clients.sh`
# in build/dev): one row per client and mode.  Prints the markdown table,
# one line per client: its version as the test saw it, "yes" or "**no**"
# for each mode (or "not run" when the client was not installed), and
# notes: how the client reached moatd (the audit's view: CONNECT through
# the proxy variables, or the transparent listener), how it carried the
# token, and why a mode failed or the client was skipped.  With --readme,
# replaces the table between the lines "<!-- clients-table: begin -->"
# and "<!-- clients-table: end -->" of FILE instead (exit 1 if FILE has
# no such lines).

set -eu

readme=""
if [ "${1:-}" = --readme ]; then
	[ $# -ge 2 ] || { echo "usage: $0 [--readme FILE] RESULTS.tsv" >&2; exit 2; }
	readme=$2
	shift 2
fi
if [ $# -ne 1 ]; then
	echo "usage: $0 [--readme FILE] RESULTS.tsv" >&2
	exit 2
fi
tsv=$1
[ -r "$tsv" ] || { echo "$0: cannot read $tsv" >&2; exit 1; }
head -n 1 "$tsv" | grep -q '^id	client	version	mode	result	via	notes	detail$' ||
    { echo "$0: $tsv is not a t_clients.sh result file" >&2; exit 1; }

table()
{
	awk -F '\t' '
	function cell(r) {
		if (r == "pass")
			return "yes"
		return r == "skip" ? "not run" : "**no**"
	}
	function via(x) {
		if (x == "transparent")
			return "the transparent listener"
		return x
	}
	NR == 1 { next }
	{
		id = $1
		if (!(id in seen)) {
			seen[id] = 1
			order[++n] = id
			label[id] = $2
			ver[id] = $3
			notes[id] = $7
		}
		res[id, $4] = $5
		if ($5 == "pass" && $6 != "") {
			if (!((id, $6) in vias)) {
				vias[id, $6] = 1
				v[id] = v[id] (v[id] == "" ? "" : ", ") via($6)
			}
		}
		if ($5 == "fail")
			why[id] = why[id] "; " $4 " failed: " $8
		else if ($5 == "skip")
			skip[id] = $8
	}
	END {
		print "| client | version seen | tunnelled | intercepted | injected | notes |"
		print "| --- | --- | --- | --- | --- | --- |"
		for (i = 1; i <= n; i++) {
			id = order[i]
			note = notes[id]
			if (v[id] != "")
				note = "by " v[id] "; " note
			if (id in skip)
				note = "skipped: " skip[id] "; " note
			note = note why[id]
			gsub(/\|/, "\\|", note)
			printf "| %s | %s | %s | %s | %s | %s |\n", label[id],
			    ver[id] == "" ? "-" : ver[id],
			    cell(res[id, "tunnelled"]), cell(res[id, "intercepted"]),
			    cell(res[id, "injected"]), note
		}
	}' "$tsv"
}

if [ -z "$readme" ]; then
	table
	exit 0
fi
grep -q '^<!-- clients-table: begin -->$' "$readme" &&
grep -q '^<!-- clients-table: end -->$' "$readme" ||
    { echo "$0: $readme has no clients-table markers" >&2; exit 1; }
table > "$readme.table"
awk -v t="$readme.table" '
	/^<!-- clients-table: begin -->$/ {
		print
		while ((getline l < t) > 0)
			print l
		skip = 1
		next
	}
	/^<!-- clients-table: end -->$/ { skip = 0 }
	!skip' "$readme" > "$readme.new"
rm -f "$readme.table"
mv "$readme.new" "$readme"
echo "$0: table of $tsv written into $readme"
