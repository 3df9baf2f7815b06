#!/bin/bash
# t_trace.sh - trace correlation: a request's W3C traceparent and request
# ids (audit.request_id_headers) are in its audit line, plain and
# inspected; moatd's own refusals carry X-Moat-Request-Id, in their body
# and in their audit line too.
#
#   cli: curl -x 10.200.0.1:3128 (http, it-http), TLS inspected with
#        moatd's CA (made by `moat ca init`)
#   moat: moatd, audit.request_id_headers ["X-Request-Id", "X-Amzn-Trace-Id"]
#   net:  origin.py 203.0.113.10 (:80, :443 TLS), dns.py 203.0.113.53
#   (the full drawing is at the top of lib.sh)
#
# Checks: traceparent and both request ids of a plain request and of one
# inside an inspected tunnel are in its line, as sent; an invalid
# traceparent is not copied (the line says "invalid"); a value over the
# bound is not copied; a secret's value in a request id is redacted (and
# nowhere in the audit log); a refused request's X-Moat-Request-Id is its
# line's moat_request_id, in the body too, and a refused CONNECT's; two
# refusals on one connection have two ids; a restarted moatd's ids do not
# repeat the last one's; moat audit reads the lines.

. "$(dirname "$0")/lib.sh"

mt_init
mt_need_moatd
[ -x "$MOAT" ] || mt_error "moat (the CLI) not built at $MOAT"
mt_world
"$MOAT" ca init "$MT_T/ca" >/dev/null || mt_error "moat ca init failed"
mkdir -p "$MT_T/keys"
KEYV=sk-trace-secret-0123456789abcdef
printf '%s' "$KEYV" > "$MT_T/keys/k.key"
chmod 600 "$MT_T/keys/k.key"
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_conf_set "$conf" tls "{\"ca_cert\": \"$MT_T/ca/ca.crt\", \"ca_key\": \"$MT_T/ca/ca.key\", \"upstream_ca_files\": [\"$MT_T/origin.crt\"]}"
mt_conf_set "$conf" policy.rules.^ '{"name": "insp", "action": "allow", "hosts": ["origin.test"], "ports": [443], "intercept": true}'
mt_conf_set "$conf" secrets "{\"K\": {\"file\": \"$MT_T/keys/k.key\"}}"
mt_conf_set "$conf" audit.request_id_headers '["X-Request-Id", "X-Amzn-Trace-Id"]'
mt_moatd_start "$conf"
A=$MT_T/audit.log
P=(-x "http://$MT_HTTP")
TP=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
AMZ="Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1"

# ids NAME: every X-Moat-Request-Id of NAME.hdr, in order, one line.
ids()
{
	sed -n 's/^[Xx]-[Mm]oat-[Rr]equest-[Ii]d: *//p' "$MT_T/$1.hdr" |
	    tr -d '\r' | tr '\n' ' ' | sed 's/ $//'
}

# --- a plain request and one inside an inspected tunnel -----------------------
mt_curl p1 "${P[@]}" -H "traceparent: $TP" -H "X-Request-Id: req-p1" \
    -H "X-Amzn-Trace-Id: $AMZ" http://origin.test/p1
mt_allowed "a plain request with traceparent and request ids" p1
mt_log_eq "audit: its traceparent, as sent" "$TP" "$A" get traceparent \
    path=/p1
mt_eq "audit: its request ids, by the configured names" \
    "{\"X-Amzn-Trace-Id\": \"$AMZ\", \"X-Request-Id\": \"req-p1\"}" \
    "$(mt_jl "$A" get request_id path=/p1)" "$A"
mt_eq "audit: no X-Moat-Request-Id for what moatd did not answer" "" \
    "$(mt_jl "$A" get moat_request_id path=/p1)$(ids p1)"
mt_curl i1 "${P[@]}" --cacert "$MT_T/ca/ca.crt" -H "traceparent: $TP" \
    -H "x-request-id: req-i1" https://origin.test/i1
mt_allowed "a request inside an inspected tunnel" i1
mt_log_eq "audit: the inspected request's line, proto https" https "$A" get \
    proto path=/i1
mt_eq "audit: ...its traceparent" "$TP" "$(mt_jl "$A" get traceparent \
    path=/i1)" "$A"
mt_eq "audit: ...its request id (the name as configured)" \
    '{"X-Request-Id": "req-i1"}' "$(mt_jl "$A" get request_id path=/i1)" "$A"
mt_curl n1 "${P[@]}" http://origin.test/n1
mt_allowed "a request without them" n1
mt_log_eq "audit: its line" 1 "$A" count path=/n1
mt_eq "audit: ...traceparent and request_id absent" \
    "traceparent,request_id" "$(mt_jl "$A" missing traceparent,request_id \
    path=/n1)" "$A"

# --- what is not copied ------------------------------------------------------
BAD='00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01'
mt_curl b1 "${P[@]}" -H "traceparent: $BAD" http://origin.test/b1
mt_allowed "an invalid traceparent does not refuse the request" b1
mt_log_eq "audit: an invalid traceparent is written \"invalid\"" invalid \
    "$A" get traceparent path=/b1
mt_eq "audit: ...and its text is nowhere in the log" 0 \
    "$(grep -c 4BF92F "$A")" "$A"
long=$(head -c 200 /dev/zero | tr '\0' r)
mt_curl b2 "${P[@]}" -H "X-Request-Id: $long" http://origin.test/b2
mt_log_eq "audit: a request id over 128 bytes: its length, not its text" \
    '{"X-Request-Id": "[too long: 200 bytes]"}' "$A" get request_id path=/b2
mt_curl s1 "${P[@]}" -H "X-Request-Id: id-$KEYV" http://origin.test/s1
mt_denied "a secret's value in a request id: refused (secret-leak)" s1 403 \
    origin.test secret-leak
mt_log_eq "audit: ...the request id redacted" '{"X-Request-Id": "id-[secret:K]"}' \
    "$A" get request_id path=/s1
mt_eq "audit: ...the value is nowhere in the log" 0 "$(grep -c "$KEYV" "$A")" \
    "$A"

# --- moatd's own refusals: X-Moat-Request-Id, in the body and the line -------------
mt_curl r1 "${P[@]}" -H "traceparent: $TP" -H "X-Request-Id: req-r1" \
    http://other.test/r1
mt_denied "a refused request" r1 403 other.test no-rule
rid=$(mt_hdr r1 X-Moat-Request-Id)
case $rid in
[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9]*-[0-9]*)
	mt_pass "X-Moat-Request-Id: $rid" ;;
*)	mt_fail "X-Moat-Request-Id: '$rid'" "$MT_T/r1.hdr" ;;
esac
mt_log_eq "audit: the refusal's line has that id" "$rid" "$A" get \
    moat_request_id path=/r1
mt_eq "audit: ...found by it: the request's traceparent and id" \
    "$TP req-r1" "$(mt_jl "$A" get traceparent moat_request_id="$rid") $(mt_jl "$A" get request_id moat_request_id="$rid" | sed 's/.*": "//; s/"}//')" "$A"
if grep -qF "id:     $rid" "$MT_T/r1.body"; then
	mt_pass "the refusal's body names the id"
else
	mt_fail "the refusal's body names the id" "$MT_T/r1.body"
fi
mt_curl r2 "${P[@]}" -p --proxy-header "traceparent: $TP" https://other.test/r2
mt_eq "a refused CONNECT: 403" 403 "$MT_CONNECT" "$MT_T/r2.hdr"
crid=$(ids r2)
mt_log_eq "audit: the CONNECT refusal's line has its id" "$crid" "$A" get \
    moat_request_id event=open host=other.test
mt_eq "audit: ...and the CONNECT's traceparent" "$TP" \
    "$(mt_jl "$A" get traceparent event=open host=other.test)" "$A"
mt_curl r3 "${P[@]}" http://other.test/k1 http://other.test/k2
two=$(ids r3)
set -- $two
if [ $# = 2 ] && [ "$1" != "$2" ] && [ "${1%-*}" = "${2%-*}" ]; then
	mt_pass "two refusals on one connection: two ids ($two)"
else
	mt_fail "two refusals on one connection: '$two'" "$MT_T/r3.hdr" \
	    "$MT_T/r3.err"
fi
for k in k1 k2; do
	mt_log_eq "audit: /$k's id is one of them" 1 "$A" count path=/$k \
	    "moat_request_id~^(${1:-x}|${2:-x})\$"
done

# --- a restarted moatd: ids do not repeat -------------------------------------
mt_moatd_stop
mt_eq "moatd stopped" 0 "$MT_WAIT_RC" "$MT_T/moatd.err"
mt_moatd_start "$conf"
mt_curl r4 "${P[@]}" http://other.test/r4
rid2=$(mt_hdr r4 X-Moat-Request-Id)
if [ -n "$rid2" ] && [ "${rid2%%-*}" != "${rid%%-*}" ]; then
	mt_pass "after a restart, another prefix ($rid2 after $rid)"
else
	mt_fail "after a restart: '$rid2' after '$rid'" "$MT_T/r4.hdr"
fi
mt_moatd_stop
mt_eq "moatd stopped cleanly" 0 "$MT_WAIT_RC" "$MT_T/moatd.err"
"$MOAT" audit summary "$A" > "$MT_T/sum.out" 2>&1
mt_eq "moat audit summary reads every line with these fields" 0 $? \
    "$MT_T/sum.out"
mt_finish
