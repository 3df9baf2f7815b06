#!/bin/bash
# t_pool.sh - idle upstream connections kept for the next client.
#
#   cli: curl (one process per request) --> moat: moatd 10.200.0.1:3128
#        (sandbox it-http) and :8888 (sandbox it-mixed)
#     --> net: origin.py 203.0.113.10:80 and :443 (TLS, origin.crt)
#   (the full drawing is at the top of lib.sh)
#
# A client that goes away after a clean keep-alive exchange leaves its
# upstream connection to the next client of the same sandbox for the same
# host and port: plain HTTP and intercepted HTTPS (no new TLS handshake
# towards the origin).  Another sandbox never gets it; an upstream that
# said "Connection: close" is not kept; a reload empties the pool; a kept
# connection is closed after timeouts.idle_upstream_ms; a name whose
# answer expired is resolved again, and a kept connection to an address
# the new answer lacks is not used (t_deny.sh covers rebinding with it).

. "$(dirname "$0")/lib.sh"

mt_init
mt_need_moatd
[ -x "$MOAT" ] || mt_error "moat (the CLI) not built at $MOAT"
# The usual zone, plus a name that moves between two allowed origins.
mt_zone_default
"$MT_PY" - "$MT_T/zone.json" <<'EOF'
import json, sys
with open(sys.argv[1]) as f:
    zone = json.load(f)
zone["moved.wild.test"] = {"sequence": [
    [{"type": "A", "data": "203.0.113.10", "ttl": 1}],
    [{"type": "A", "data": "203.0.113.12", "ttl": 1}]]}
with open(sys.argv[1], "w") as f:
    json.dump(zone, f)
EOF
mt_world
"$MOAT" ca init "$MT_T/ca" >/dev/null || mt_error "moat ca init failed"
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_conf_set "$conf" policy.rules.^ '{"name": "inspected", "action": "allow", "hosts": ["origin.test"], "ports": [443], "intercept": true}'
mt_conf_set "$conf" tls "{\"ca_cert\": \"$MT_T/ca/ca.crt\", \"ca_key\": \"$MT_T/ca/ca.key\", \"upstream_ca_files\": [\"$MT_T/origin.crt\"]}"
mt_conf_set "$conf" timeouts '{"idle_upstream_ms": 4000}'
# Each worker keeps its own idle connections (nothing is shared between
# threads): with one worker, which client meets which is deterministic.
mt_conf_set "$conf" workers 1
mt_moatd_start "$conf" --debug
E=$MT_T/moatd.err
O=$MT_T/origin.log

# kept_wait N: waits (bounded) until moatd has kept N upstreams in all.
kept_wait()
{
	mt_wait_for 5 kept_n "$1"
}
kept_n()	# N: moatd has kept N upstreams in all
{
	[ "$(grep -c 'kept for the next client' "$E")" -ge "$1" ]
}
kept=0
# get NAME ARGS...: one curl process, then waits until moatd kept its
# upstream (the next client must not race the previous one's close).
get()
{
	mt_curl "$@"
	mt_allowed "$1: ${*: -1}" "$1"
	kept=$((kept + 1))
	mt_wait_until 5 "$1: moatd did not keep the upstream" kept_n "$kept"
}
# conns PATH-REGEX: the distinct origin connections requests matching used.
conns()
{
	mt_jl "$O" dump event=request "path~$1" |
	    grep -o '"conn": [0-9]*' | sort -u | wc -l
}
conn_of()
{
	mt_jl "$O" get conn event=request "path=$1"
}

# --- plain HTTP -------------------------------------------------------------
for i in 1 2 3; do
	get p$i -x "http://$MT_HTTP" "http://origin.test/pool/p$i"
done
mt_eq "three clients in turn, one upstream connection" 1 \
    "$(conns '^/pool/p[0-9]$')" "$O" "$E"
get q1 -x "http://10.200.0.1:8888" http://origin.test/pool/q1
if [ "$(conn_of /pool/q1)" != "$(conn_of /pool/p1)" ]; then
	mt_pass "another sandbox (it-mixed) gets its own upstream connection"
else
	mt_fail "sandbox it-mixed used it-http's upstream connection" "$O"
fi
get p4 -x "http://$MT_HTTP" http://origin.test/pool/p4
mt_eq "it-http's kept connection is still its own" "$(conn_of /pool/p1)" \
    "$(conn_of /pool/p4)" "$O"

mt_curl c1 -x "http://$MT_HTTP" http://origin.test/close
mt_allowed "an answer with Connection: close" c1
mt_curl c2 -x "http://$MT_HTTP" http://origin.test/pool/after-close
mt_allowed "the next request" c2
kept=$((kept + 1))
kept_wait "$kept"
if [ "$(conn_of /pool/after-close)" != "$(conn_of /close)" ]; then
	mt_pass "an upstream that said Connection: close is not reused"
else
	mt_fail "the closed upstream connection was reused" "$O"
fi

# --- intercepted HTTPS --------------------------------------------------------
C=(-x "http://$MT_HTTP" --cacert "$MT_T/ca/ca.crt")
for i in 1 2 3; do
	get s$i "${C[@]}" "https://origin.test/pool/s$i"
done
mt_eq "three TLS clients in turn, one upstream TLS connection" 1 \
    "$(conns '^/pool/s[0-9]$')" "$O" "$E"
n=$(mt_jl "$O" count event=accept tls=true)
mt_eq "the origin did one TLS handshake for them" 1 "$n" "$O"
get t1 -x "http://10.200.0.1:8888" --cacert "$MT_T/ca/ca.crt" \
    https://origin.test/pool/t1
if [ "$(conn_of /pool/t1)" != "$(conn_of /pool/s1)" ]; then
	mt_pass "another sandbox gets its own upstream TLS connection"
else
	mt_fail "sandbox it-mixed used it-http's upstream TLS session" "$O"
fi

# --- a kept connection never outlives its name's answer ------------------------------
# moved.wild.test answers 203.0.113.10, then 203.0.113.12; rebind.wild.test
# answers 203.0.113.10, then 127.0.0.1 (TTLs of 1 s).
get m1 -x "http://$MT_HTTP" http://moved.wild.test/moved-1
get b1 -x "http://$MT_HTTP" http://rebind.wild.test/rebind-1
sleep 1.5	# past the TTLs: moatd must ask again
get m2 -x "http://$MT_HTTP" http://moved.wild.test/moved-2
mt_eq "a name that moved: the new address is dialled, not the kept one" \
    203.0.113.12:80 "$(mt_jl "$O" get local event=request path=/moved-2)" "$O"
mt_mark
mt_curl b2 -x "http://$MT_HTTP" http://rebind.wild.test/rebind-2
mt_denied "the name now resolves to 127.0.0.1: refused, kept connection or not" \
    b2 403 rebind.wild.test private-address
mt_untouched "rebinding with a kept connection" origin

# --- a reload empties the pool ---------------------------------------------------
kill -HUP "$MT_MOATD_PID"
mt_wait_log "$E" 'reload done' ||
    mt_fail "moatd did not say it reloaded" "$E"
mt_curl r1 -x "http://$MT_HTTP" http://origin.test/pool/r1
mt_allowed "a request after the reload" r1
if [ "$(conn_of /pool/r1)" != "$(conn_of /pool/p4)" ]; then
	mt_pass "after a reload the next request dials afresh"
else
	mt_fail "a connection kept under the old config was reused" "$O" "$E"
fi

# --- idle timeout ------------------------------------------------------------------
kept=$((kept + 1))
kept_wait "$kept"
id=$(conn_of /pool/r1)
if mt_wait_log "$O" "\"conn\": $id, \"event\": \"close\"" 80; then
	mt_pass "a kept connection is closed after idle_upstream_ms"
else
	mt_fail "the kept connection $id was not closed within 8 s" "$O"
fi

mt_moatd_stop
mt_eq "moatd exits cleanly" 0 "$MT_WAIT_RC" "$E"
mt_finish
