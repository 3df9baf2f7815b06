#!/bin/bash
# fetch-curl.sh - curl as a workload uses it, for t_clients.sh: the
# proxy and bundle variables of the environment, no option of its own.
#
#   fetch-curl.sh OUTDIR TAG URL AUTH [TAG URL AUTH...]
#
# For each TAG, a GET of URL, with "Authorization: AUTH" unless AUTH is
# "-"; prints TAG.status=CODE and TAG.reason=X-MOAT-REASON, or
# TAG.status=ERROR and TAG.error=TEXT, and writes the body to
# OUTDIR/TAG.body.  The first line is version=curl VERSION.
set -u
if [ $# -lt 1 ] || [ $((($# - 1) % 3)) -ne 0 ]; then
	echo "usage: fetch-curl.sh OUTDIR TAG URL AUTH..." >&2
	exit 2
fi
o=$1
shift
echo "version=$(curl --version | head -n 1 | cut -d ' ' -f 1,2)"
while [ $# -gt 0 ]; do
	tag=$1 url=$2 auth=$3
	shift 3
	hdr=()
	[ "$auth" = - ] || hdr=(-H "Authorization: $auth")
	code=$(curl -sS --max-time 15 -D "$o/$tag.hdr" -o "$o/$tag.body" \
	    -w '%{http_code}' "${hdr[@]}" "$url" 2>"$o/$tag.err")
	rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "$tag.status=ERROR"
		echo "$tag.error=curl exit $rc: $(head -c 300 "$o/$tag.err" | tr '\n' ' ')"
		continue
	fi
	echo "$tag.status=$code"
	echo "$tag.reason=$(tr -d '\r' < "$o/$tag.hdr" |
	    sed -n 's/^[Xx]-[Mm]oat-[Rr]eason: *//p' | tail -n 1)"
done
