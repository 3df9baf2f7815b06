#!/bin/bash
# t_intercept.sh - TLS interception where a rule must see inside.
#
#   cli: curl / openssl s_client --> moat: moatd 10.200.0.1:3128
#     (CA made by `moat ca init`; trusts origin.crt for upstreams)
#     --> net: origin.py 203.0.113.10:443 (TLS, origin.crt: origin.test,
#              *.wild.test, 203.0.113.10)
#   (the full drawing is at the top of lib.sh)
#
# origin.test:443 has a rule with methods and paths: moatd terminates TLS
# with a leaf for origin.test from its own CA, checks each request inside,
# and re-originates TLS to the origin, verifying it.  A host without such
# a rule stays an opaque spliced tunnel.  Host and SNI must be the
# tunnel's host; an upstream whose certificate does not match, or that
# speaks HTTP/2 only, gets 502 tls; a ClientHello without SNI gets a leaf
# for the tunnel's host; a client that does not trust moat's CA fails its
# handshake and the failure is audited.

. "$(dirname "$0")/lib.sh"

mt_init
mt_need_moatd
[ -x "$MOAT" ] || mt_error "moat (the CLI) not built at $MOAT"
mt_world
"$MOAT" ca init "$MT_T/ca" >/dev/null || mt_error "moat ca init failed"
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_conf_set "$conf" policy.rules '[
  {"name": "inspected", "action": "allow", "hosts": ["origin.test", "x.origin.test"],
   "ports": [443], "methods": ["GET", "HEAD"], "paths": ["/ok/*", "/ok"]},
  {"name": "opaque", "action": "allow", "hosts": ["*.wild.test"], "ports": [443]},
  {"name": "plain", "action": "allow", "hosts": ["origin.test"], "ports": [80]},
  {"name": "h2only", "action": "allow", "hosts": ["origin.test"], "ports": [8443],
   "intercept": true}]'
mt_conf_set "$conf" tls "{\"ca_cert\": \"$MT_T/ca/ca.crt\", \"ca_key\": \"$MT_T/ca/ca.key\", \"upstream_ca_files\": [\"$MT_T/origin.crt\"]}"
mt_moatd_start "$conf"
# An upstream that speaks HTTP/2 only: openssl s_server with ALPN h2 sends
# alert 120 (no_application_protocol) to a client offering http/1.1 only,
# as strict h2-only servers do.  Ready once it prints ACCEPT.
mt_bg h2only net bash -c 'openssl s_server -accept 203.0.113.10:8443 \
    -cert "$1" -key "$2" -alpn h2 -www 2>/dev/null |
    while read -r l; do case $l in ACCEPT*) echo ready >&3 ;; esac; done' \
    _ "$MT_T/origin.crt" "$MT_T/origin.key" ||
    mt_error "openssl s_server (h2 only) did not start"
A=$MT_T/audit.log
C=(-x "http://$MT_HTTP" --cacert "$MT_T/ca/ca.crt")

# --- inside an inspected tunnel ------------------------------------------------------
mt_mark
mt_curl i1 "${C[@]}" https://origin.test/ok/1
mt_allowed "GET /ok/1 through the inspected tunnel" i1
mt_log_eq "audit: the request line inside, proto https" https \
    "$A" get proto event=request path=/ok/1
mt_eq "audit: the tunnel is marked inspected" \
    "inspected: moatd reads the requests inside" \
    "$(mt_jl "$A" get detail event=open host=origin.test port=443)"
issuer=$(echo | mt_in cli timeout 10 openssl s_client -proxy "$MT_HTTP" \
    -connect origin.test:443 -servername origin.test 2>/dev/null |
    sed -n 's/^issuer=//p' | head -n 1)
if echo "$issuer" | grep -q "moat sandbox CA"; then
	mt_pass "the client sees a leaf from moat's CA ($issuer)"
else
	mt_fail "issuer of the leaf: '$issuer'"
fi
mt_curl i2 "${C[@]}" -X POST -d x=1 https://origin.test/ok/2
mt_denied "POST inside the tunnel: the rule allows GET and HEAD" i2 403 \
    origin.test method inspected
mt_curl i3 "${C[@]}" https://origin.test/secret
mt_denied "a path the rule does not list" i3 403 origin.test path inspected
mt_curl i4 "${C[@]}" https://origin.test/ok/../secret
mt_denied "a dot-segment trick" i4 403 origin.test path inspected
mt_curl i5 "${C[@]}" -H "Host: evil.test" https://origin.test/ok/5
mt_eq "a Host other than the tunnel's: 421" 421 "$MT_CODE"
mt_eq "...reason bad-request" bad-request "$(mt_hdr i5 X-Moat-Reason)"
mt_curl i5p "${C[@]}" -H "Host: origin.test:444" https://origin.test/ok/5
mt_eq "a Host naming another port: 421" 421 "$MT_CODE"
# The head parser refuses these before the tunnel's Host check (65979
# would be 443 once cut to 16 bits).
for hp in 65979 4x43 -443; do
	mt_curl i5w "${C[@]}" -H "Host: origin.test:$hp" https://origin.test/ok/5
	mt_eq "Host port '$hp' is no port: 400" "400 bad-request" \
	    "$MT_CODE $(mt_hdr i5w X-Moat-Reason)"
done
out=$(echo | mt_in cli timeout 10 openssl s_client -proxy "$MT_HTTP" \
    -connect origin.test:443 -servername evil.test 2>&1)
if echo "$out" | grep -qi "CONNECTED" && ! echo "$out" | grep -q "issuer="; then
	mt_pass "an SNI other than the tunnel's host: no handshake"
else
	mt_fail "SNI evil.test on a tunnel to origin.test: $(echo "$out" | head -n 5)"
fi
mt_log_eq "audit: the SNI mismatch" bad-request \
    "$A" get reason event=request host=origin.test 'detail~server name'
mt_eq "the origin got only the allowed requests" 1 \
    "$(mt_new origin | mt_jl /dev/stdin count event=request)"

# --- keep-alive inside the tunnel: several requests, one tunnel -----------------------
o0=$(mt_jl "$A" count event=open host=origin.test)
r0=$(mt_jl "$A" count event=request host=origin.test status=200)
mt_curl k1 "${C[@]}" https://origin.test/ok/a https://origin.test/ok/b
mt_eq "two requests in one curl run" 200 "$MT_CODE"
mt_eq "...through one inspected tunnel" $((o0 + 1)) \
    "$(mt_jl "$A" count event=open host=origin.test)"
mt_eq "...each judged and audited" $((r0 + 2)) \
    "$(mt_jl "$A" count event=request host=origin.test status=200)"
# The tunnel's own close line, like an opaque tunnel's.
mt_wait_log "$A" '"event":"close".*"detail":"inspected"' 50 ||
    mt_fail "no close line for the inspected tunnel" "$A"
id=$(mt_jl "$A" get id event=open host=origin.test port=443 \
    'detail~inspected')
mt_eq "audit: the inspected tunnel's close line, ended by the client" \
    "connect origin.test 443 inspected eof" \
    "$(for f in proto host port detail end; do
        printf '%s ' "$(mt_jl "$A" get $f event=close "id=$id")"; done |
        sed 's/ $//')" "$A"
for f in bytes_up bytes_down; do
	v=$(mt_jl "$A" get $f event=close "id=$id")
	if [ "${v:-0}" -gt 500 ] 2>/dev/null; then
		mt_pass "close line: $f $v (TLS included)"
	else
		mt_fail "close line: $f '$v'" "$A"
	fi
done

# --- the upstream is verified ------------------------------------------------------------
mt_curl u1 "${C[@]}" https://x.origin.test/ok/u1
mt_denied "an upstream whose certificate does not name the host" u1 502 \
    x.origin.test tls inspected

mt_curl h2 "${C[@]}" https://origin.test:8443/ok/h2
mt_denied "an upstream that speaks HTTP/2 only (moatd offers http/1.1)" h2 \
    502 origin.test tls h2only
if grep -qi "application protocol" "$MT_T/h2.body"; then
	mt_pass "...and the page says why: $(grep -oi '[^.:]*application protocol[^.]*' "$MT_T/h2.body" | head -n 1)"
else
	mt_fail "the 502 page does not name the ALPN failure" "$MT_T/h2.body"
fi
mt_log_eq "audit: the upstream TLS failure, reason tls" tls \
    "$A" get reason event=request host=origin.test port=8443

# --- a ClientHello without SNI ---------------------------------------------------------------
# The tunnel names the host: moatd answers with a leaf for it.
out=$(printf 'GET /ok/nosni HTTP/1.1\r\nHost: origin.test\r\nConnection: close\r\n\r\n' |
    mt_in cli timeout 10 openssl s_client -proxy "$MT_HTTP" \
    -connect origin.test:443 -noservername -CAfile "$MT_T/ca/ca.crt" \
    -verify_hostname origin.test -verify_return_error -ign_eof 2>&1)
if echo "$out" | grep -q "^HTTP/1.1 200" &&
    echo "$out" | grep -q "Verify return code: 0 (ok)"; then
	mt_pass "a ClientHello without SNI: a verified leaf for the tunnel's host, 200"
else
	mt_fail "no-SNI ClientHello: $(echo "$out" | grep -E 'HTTP/|Verify|error' | head -n 3)"
fi

# --- a client that does not trust moat's CA ---------------------------------------------
mt_curl n1 -x "http://$MT_HTTP" --cacert "$MT_T/origin.crt" https://origin.test/ok/n1
if [ "$MT_RC" = 60 ] || [ "$MT_RC" = 35 ]; then
	mt_pass "a client without moat's CA refuses the leaf (curl exit $MT_RC)"
else
	mt_fail "curl without moat's CA: exit $MT_RC, HTTP $MT_CODE"
fi
mt_wait_log "$A" '"reason":"tls"' 30
mt_log_eq "audit: the client's failed handshake, reason tls" tls \
    "$A" get reason event=request host=origin.test reason=tls

# --- opaque hosts stay spliced --------------------------------------------------------------
mt_curl o1 -x "http://$MT_HTTP" --cacert "$MT_T/origin.crt" https://a.wild.test/opaque
mt_eq "a host without an inspecting rule: the origin's own certificate, end to end" \
    200 "$MT_CODE"
mt_log_eq "audit: no request line for the opaque tunnel" 0 \
    "$A" count event=request host=a.wild.test

# --- ssh into an inspected tunnel: refused at once, not after request_head_ms ---------------
# (An ssh client sends its identification string first; moatd cannot read
# ssh, so a tunnel whose rule must see requests cannot carry it.)
t0=$(date +%s%N)
timeout -k 2 30 ip netns exec "$(mt_ns cli)" "$MT_PY" \
    "$MT_HELPERS/sshlike.py" client --proxy "$MT_HTTP" \
    --target origin.test:443 --timeout 20 \
    --send 'SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13.5\r\n' \
    > "$MT_T/ssh.kv" 2>"$MT_T/ssh.err"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
mt_eq "ssh into an inspected tunnel: closed, nothing comes back" "1 " \
    "$(mt_kv ssh eof) $(mt_kv ssh reply)" "$MT_T/ssh.kv" "$MT_T/ssh.err"
mt_wait_log "$A" '"reason":"needs-inspection"' 50 || true
mt_eq "audit: needs-inspection, saying ssh cannot be read" \
    "needs-inspection inspected" \
    "$(mt_jl "$A" get reason event=request host=origin.test 'detail~carries ssh') $(mt_jl "$A" get rule event=request host=origin.test 'detail~carries ssh')" \
    "$A"
# request_head_ms is 10 s: refused well before it ran out (measured).
if [ "$ms" -lt 8000 ]; then
	mt_pass "...at once (${ms} ms), not after timeouts.request_head_ms"
else
	mt_fail "ssh refused only after ${ms} ms"
fi

# --- plain HTTP through CONNECT on an inspected host is read too ----------------------------
if mt_moatd_alive; then
	mt_pass "moatd survived"
else
	mt_fail "moatd died" "$MT_T/moatd.err"
fi
# Its CA made it load OpenSSL at start (certs/ssldl.c).
if grep -q 'libssl' /proc/"$MT_MOATD_PID"/maps; then
	mt_pass "a moatd with a CA has loaded OpenSSL"
else
	mt_fail "a moatd with a CA has not loaded OpenSSL" \
	    /proc/"$MT_MOATD_PID"/maps
fi
mt_finish
