#!/bin/bash
# t_rate.sh - a rule's "rate": {"requests": N, "per_seconds": S}.
#
#   cli: curl --> moat: moatd 10.200.0.1:3128 --> net: origin.py
#   (the full drawing is at the top of lib.sh)
#
# A rule allowing origin.test at most 3 requests a minute: 3 requests go
# through, the 4th and 5th get 429 with X-Moat-Reason: rate (nothing
# reaches the origin for them), tunnels count too, another rule's traffic
# is not affected, and a reload starts the buckets anew.

. "$(dirname "$0")/lib.sh"

mt_init
mt_need_moatd
mt_world
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_conf_set "$conf" policy.rules.^ '{"name": "slow", "action": "allow", "hosts": ["other.test"], "ports": [80], "rate": {"requests": 3, "per_seconds": 60}}'
mt_moatd_start "$conf"

for i in 1 2 3; do
	mt_curl r$i -x "http://$MT_HTTP" http://other.test/r$i
	mt_allowed "request $i of 3 allowed by the rate" r$i
done
mt_mark
mt_curl r4 -x "http://$MT_HTTP" http://other.test/r4
mt_denied "the 4th request in a minute" r4 429 other.test rate slow
mt_curl r5 -p -x "http://$MT_HTTP" http://other.test/r5
mt_denied "a 5th, as a CONNECT tunnel" r5 429 other.test rate slow
mt_untouched "over the rate" origin
mt_curl o1 -x "http://$MT_HTTP" http://origin.test/o1
mt_allowed "another rule's host is not limited" o1
mt_log_eq "audit: the refusal, reason rate" rate \
    "$MT_T/audit.log" get reason host=other.test verdict=deny
kill -HUP "$MT_MOATD_PID"
mt_wait_log "$MT_T/moatd.err" "reload done" 50
mt_curl r6 -x "http://$MT_HTTP" http://other.test/r6
mt_allowed "after a reload the rate starts anew" r6
mt_finish
