#!/bin/bash
# t_fronting.sh - an address an IP rule allows does not front for a
# denied host.
#
#   cli: curl --connect-to NAME:443:203.0.113.10:443
#     --> moat: moatd 10.200.0.1:3128 (CA made by `moat ca init`)
#     --> net: origin.py 203.0.113.10:443 (TLS, origin.crt: origin.test,
#              *.wild.test, 203.0.113.10)
#   (the full drawing is at the top of lib.sh)
#
# A `cidrs` rule allows 203.0.113.10:443 and inspects it.  The client
# tunnels to the address but its TLS server name and Host name a host:
# the name is judged too, and a deny rule for it wins (the tunnel's TLS is
# refused, or the request gets 403), audited with the name in `sni`.  A
# name no deny rule names still works, as before.  A rule's "protocols"
# holds in inspected tunnels too.

. "$(dirname "$0")/lib.sh"

mt_init
mt_need_moatd
[ -x "$MOAT" ] || mt_error "moat (the CLI) not built at $MOAT"
mt_world
"$MOAT" ca init "$MT_T/ca" >/dev/null || mt_error "moat ca init failed"
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_conf_set "$conf" policy.rules '[
  {"name": "by-cidr", "action": "allow", "cidrs": ["203.0.113.10/32"],
   "ports": [443], "intercept": true},
  {"name": "blocked", "action": "deny", "hosts": ["evil.wild.test"]},
  {"name": "no-post", "action": "deny", "hosts": ["origin.test"],
   "methods": ["POST"]},
  {"name": "insp-tls", "action": "allow", "hosts": ["insp.wild.test"],
   "ports": [80, 443], "intercept": true, "protocols": ["tls"]}]'
mt_conf_set "$conf" tls "{\"ca_cert\": \"$MT_T/ca/ca.crt\", \"ca_key\": \"$MT_T/ca/ca.key\", \"upstream_ca_files\": [\"$MT_T/origin.crt\"]}"
mt_moatd_start "$conf"
A=$MT_T/audit.log
C=(-x "http://$MT_HTTP" --cacert "$MT_T/ca/ca.crt")
to() { echo "--connect-to $1:443:203.0.113.10:443"; }

# --- a denied name through the allowed address ----------------------------------
mt_mark
# shellcheck disable=SC2046
mt_curl f1 "${C[@]}" $(to evil.wild.test) https://evil.wild.test/f1
if [ "$MT_CODE" != 200 ] && [ "$MT_CONNECT" = 200 ]; then
	mt_pass "TLS for a denied name in a tunnel to an allowed address: refused (curl exit $MT_RC)"
else
	mt_fail "denied SNI through the address: HTTP $MT_CODE, CONNECT $MT_CONNECT" \
	    "$MT_T/f1.err" "$MT_T/f1.hdr"
fi
mt_wait_log "$A" '"sni":"evil.wild.test"' 50 || true
mt_eq "audit: refused by the deny rule, with the name and the address" \
    "request 203.0.113.10 evil.wild.test deny denied-by-rule blocked" \
    "$(for f in event host sni verdict reason rule; do
        printf '%s ' "$(mt_jl "$A" get $f sni=evil.wild.test)"; done |
        sed 's/ $//')" "$A"
# (moatd dialled the address when it opened the tunnel; no request went.)
mt_eq "the denied name: no request reached the origin" 0 \
    "$(mt_new origin | mt_jl /dev/stdin count event=request)"

# --- a deny rule with methods, judged per request -------------------------------
mt_mark
# shellcheck disable=SC2046
mt_curl f2 "${C[@]}" $(to origin.test) -d x=1 https://origin.test/f2
mt_denied "POST to a name whose deny rule has methods, through the address" \
    f2 403 203.0.113.10 denied-by-rule no-post
mt_wait_log "$A" '"method":"POST"' 50 || true
mt_eq "audit: the request names the host" "origin.test denied-by-rule no-post" \
    "$(for f in sni reason rule; do
        printf '%s ' "$(mt_jl "$A" get $f event=request method=POST)"; done |
        sed 's/ $//')" "$A"
# (moatd dialled the address when it opened the tunnel; no request went.)
mt_eq "the denied request: no request reached the origin" 0 \
    "$(mt_new origin | mt_jl /dev/stdin count event=request)"

# --- names no deny rule names, and the bare address, still work -----------------
# shellcheck disable=SC2046
mt_curl a1 "${C[@]}" $(to origin.test) https://origin.test/a1
mt_allowed "GET with SNI and Host origin.test through the address" a1
mt_wait_log "$A" '"path":"/a1"' 50 || true
mt_eq "audit: allowed by the IP rule, with the name" \
    "203.0.113.10 origin.test allow by-cidr" \
    "$(for f in host sni verdict rule; do
        printf '%s ' "$(mt_jl "$A" get $f event=request path=/a1)"; done |
        sed 's/ $//')" "$A"
# shellcheck disable=SC2046
mt_curl a2 "${C[@]}" $(to other.wild.test) https://other.wild.test/a2
mt_allowed "a name no rule names, at the allowed address" a2
mt_curl a3 "${C[@]}" https://203.0.113.10/a3
mt_allowed "the address itself" a3

# --- "protocols" in an inspected tunnel --------------------------------------------
mt_mark
mt_curl pr1 "${C[@]}" https://insp.wild.test/pr1
mt_allowed "protocols [tls], an inspected TLS tunnel" pr1
mt_curl pr2 -x "http://$MT_HTTP" -p http://insp.wild.test/pr2
mt_eq "protocols [tls], plain HTTP in an inspected tunnel: no answer" 000 \
    "$MT_CODE" "$MT_T/pr2.err"
mt_wait_log "$A" '"reason":"protocol"' 50 || true
mt_eq "audit: the plain HTTP refused, reason protocol" "protocol insp-tls" \
    "$(mt_jl "$A" get reason event=request host=insp.wild.test port=80) $(mt_jl "$A" get rule event=request host=insp.wild.test port=80)" "$A"
mt_eq "the origin got only the TLS request" 1 \
    "$(mt_new origin | mt_jl /dev/stdin count event=request)"

if mt_moatd_alive; then
	mt_pass "moatd survived"
else
	mt_fail "moatd died" "$MT_T/moatd.err"
fi
mt_finish
