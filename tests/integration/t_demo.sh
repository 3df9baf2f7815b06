#!/bin/bash
# t_demo.sh - scripts/demo.sh (the README's first command) still works.
#
#   demo.sh builds its own two namespaces (moat, net) and removes them;
#   this test only runs it and reads what it printed.
#
# The demo must show the allowed request answered by its origin, the two
# denials with their reasons, three audit lines, and leave nothing behind
# (namespaces, /etc/netns entries).

. "$(dirname "$0")/lib.sh"

mt_init
mt_need_moatd
out=$MT_T/demo.out
MOATD=$MOATD timeout -k 5 90 "$MOAT_SRCDIR/scripts/demo.sh" > "$out" 2>&1
mt_eq "demo.sh exits 0" 0 "$?" "$out"
# expect MESSAGE FIXED-STRING
expect()
{
	if grep -qF -- "$2" "$out"; then
		mt_pass "$1"
	else
		mt_fail "$1: no '$2' in the demo's output" "$out"
	fi
}
expect "the allowed request is answered by the origin" \
    "Hello from \"deb.debian.org\""
expect "the metadata request is denied" "X-Moat-Reason: metadata"
expect "the CONNECT to example.com is denied" "X-Moat-Reason: no-rule"
n=$(grep -c '^  {.*"verdict"' "$out")
mt_eq "three audit lines are shown" 3 "$n" "$out"
expect "the origin got only the allowed request" \
    "The origin received 1 request(s)"
tag=$(sed -n 's/.*namespaces \(moatdemo[0-9]*\)-moat.*/\1/p' "$out")
if [ -n "$tag" ] && ! ip netns list | grep -q "^$tag-" &&
    [ ! -e "/etc/netns/$tag-moat" ]; then
	mt_pass "the demo removed its namespaces and /etc/netns/$tag-moat"
else
	mt_fail "the demo left something behind (tag '$tag')" "$out"
fi
mt_finish
