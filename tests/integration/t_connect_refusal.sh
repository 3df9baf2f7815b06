#!/bin/bash
# t_connect_refusal.sh - "connect_refusal": "in-tunnel": a refused CONNECT
# answered inside its tunnel, with moat's 403 and its reason.
#
#   cli: curl / openssl s_client / rawclient.py
#     --> moat: moatd 10.200.0.1:3128 (status, as before)
#               moatd 10.200.0.1:3129 ("connect_refusal": "in-tunnel")
#     --> net: origin.py (must get nothing of a refused CONNECT)
#   (the full drawing is at the top of lib.sh)
#
# On the in-tunnel listener a CONNECT the policy refuses (403) gets "200
# Connection established"; TLS inside gets a leaf for the CONNECT's host
# from moat's CA and plain HTTP is read as it is, and the first request
# gets the 403 that names the target, the reason and the rule.  The
# refusal is audited once, nothing is resolved or dialled, a client that
# sends neither TLS nor HTTP (or TLS for another name) is closed, other
# refusals (400, 502) answer the CONNECT as before, and past the
# sandbox's budget of such answers (10 a second, 20 at once) the CONNECT
# gets its plain 403.  Without a CA, the key is a config error.

. "$(dirname "$0")/lib.sh"

mt_init openssl
mt_need_moatd
[ -x "$MOAT" ] || mt_error "moat (the CLI) not built at $MOAT"
mt_world
"$MOAT" ca init "$MT_T/ca" >/dev/null || mt_error "moat ca init failed"
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_conf_set "$conf" listen.+ '{"proto": "http", "address": "10.200.0.1:3129",
    "sandbox": "it-refuse", "connect_refusal": "in-tunnel"}'
mt_conf_set "$conf" timeouts '{"request_head_ms": 1500}'

# --- without a CA: a config error at the key ----------------------------------------
out=$("$MOATD" --check -c "$conf" 2>&1)
mt_eq "no CA: moatd --check refuses the key" 1 \
    "$(echo "$out" | grep -c "moatd.json:[0-9]*:[0-9]*: listen\[5\]\.connect_refusal: \"in-tunnel\" answers inside TLS.*no CA is configured")"

mt_conf_set "$conf" tls "{\"ca_cert\": \"$MT_T/ca/ca.crt\", \"ca_key\": \"$MT_T/ca/ca.key\", \"upstream_ca_files\": [\"$MT_T/origin.crt\"]}"
mt_moatd_start "$conf"
A=$MT_T/audit.log
IN=10.200.0.1:3129
mt_eq "moatd says which listener answers inside the tunnel" 1 \
    "$(grep -c 'listening on 10.200.0.1:3129 (http, sandbox "it-refuse", refused CONNECTs answered inside the tunnel)' "$MT_T/moatd.err")"
CA=(--cacert "$MT_T/ca/ca.crt")

# --- the listener as before: the 403 answers the CONNECT -------------------------------
mt_curl s1 -x "http://$MT_HTTP" "${CA[@]}" https://bad.origin.test/x
mt_eq "status listener: curl sees only the CONNECT's 403" "403 56" \
    "$MT_CONNECT $MT_RC"

# --- in-tunnel: the 403 inside TLS, with its reason and rule ---------------------------
mt_mark
mt_curl t1 -x "http://$IN" "${CA[@]}" https://bad.origin.test/x
mt_eq "in-tunnel: the CONNECT is answered 200" 200 "$MT_CONNECT"
mt_eq "in-tunnel: the request inside gets the 403 and its body" "403 1" \
    "$MT_CODE $(grep -c '^reason: denied-by-rule: ' "$MT_T/t1.body")"
mt_denied "in-tunnel: moat's 403 inside TLS, a deny rule" t1 403 \
    bad.origin.test denied-by-rule blocked
mt_curl t2 -x "http://$IN" "${CA[@]}" https://other.test/y
mt_denied "in-tunnel: no rule for the host" t2 403 other.test no-rule -
mt_eq "curl exits 0: the answer came whole" 0 "$MT_RC" "$MT_T/t2.err"
mt_curl t3 -x "http://$IN" "${CA[@]}" https://169.254.169.254/latest
mt_denied "in-tunnel: a metadata address, leaf for the address" t3 403 \
    169.254.169.254 metadata -
mt_untouched "nothing of a refused CONNECT is resolved or dialled" \
    origin dns meta
mt_log_eq "audit: bad.origin.test's refusal is written" 1 "$A" count \
    host=bad.origin.test sandbox=it-refuse
for f in event verdict reason rule proto; do
	printf '%s ' "$(mt_jl "$A" get $f host=bad.origin.test sandbox=it-refuse)"
done > "$MT_T/t1.audit"
mt_eq "audit: the refusal is the CONNECT's open line" \
    "open deny denied-by-rule blocked connect " "$(cat "$MT_T/t1.audit")" "$A"

# The leaf is for the CONNECT's host, from moat's CA.
leaf=$(echo | mt_in cli timeout 10 openssl s_client -proxy "$IN" \
    -connect bad.origin.test:443 -servername bad.origin.test 2>/dev/null |
    openssl x509 -noout -issuer -ext subjectAltName 2>/dev/null | tr '\n' ' ')
case $leaf in
*"moat sandbox CA"*"DNS:bad.origin.test"*)
	mt_pass "the leaf: bad.origin.test, issued by moat's CA" ;;
*)	mt_fail "the leaf presented in the refused tunnel: '$leaf'" ;;
esac
out=$(echo | mt_in cli timeout 10 openssl s_client -proxy "$IN" \
    -connect bad.origin.test:443 -servername evil.test 2>&1)
if ! echo "$out" | grep -q "BEGIN CERTIFICATE"; then
	mt_pass "TLS for another name than the CONNECT's host: no leaf"
else
	mt_fail "a leaf for SNI evil.test in a tunnel to bad.origin.test"
fi

# Plain HTTP inside; ssh or garbage inside is closed, unanswered.
mt_raw p1 --tcp "$IN" --timeout 5 --raw-out "$MT_T/p1.raw" \
    --send 'CONNECT other.test:80 HTTP/1.1\r\nHost: other.test:80\r\n\r\nGET /z HTTP/1.1\r\nHost: other.test\r\n\r\n'
mt_eq "plain HTTP inside: 200, then moat's 403 with its reason" \
    "2 1 1" "$(mt_kv p1 responses) $(grep -c '^HTTP/1.1 403 Forbidden' "$MT_T/p1.raw") $(grep -c '^X-Moat-Reason: no-rule' "$MT_T/p1.raw")" \
    "$MT_T/p1.kv"
mt_raw p2 --tcp "$IN" --timeout 5 \
    --send 'CONNECT other.test:22 HTTP/1.1\r\nHost: other.test:22\r\n\r\nSSH-2.0-OpenSSH_9.2\r\n'
mt_eq "ssh inside: closed after the 200, no answer" "1 1" \
    "$(mt_kv p2 responses) $(mt_kv p2 eof)" "$MT_T/p2.kv"
mt_raw p3 --tcp "$IN" --timeout 5 \
    --send 'CONNECT other.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n\x00\x01\x02garbage\r\n\r\n'
mt_eq "garbage inside: closed after the 200, no answer" "1 1" \
    "$(mt_kv p3 responses) $(mt_kv p3 eof)" "$MT_T/p3.kv"
mt_raw p4 --tcp "$IN" --timeout 6 \
    --send 'CONNECT other.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n'
ms=$(mt_kv p4 eof_ms)
if [ "$(mt_kv p4 eof)" = 1 ] && [ "${ms:-0}" -ge 1000 ] && [ "${ms:-0}" -lt 5000 ]
then
	mt_pass "silence inside: closed after timeouts.request_head_ms ($ms ms)"
else
	mt_fail "silence inside: eof=$(mt_kv p4 eof) after ${ms}ms" "$MT_T/p4.kv"
fi

# Other refusals answer the CONNECT as before.
mt_raw o1 --tcp "$IN" --timeout 5 \
    --send 'CONNECT other.test HTTP/1.1\r\nHost: other.test\r\n\r\n'
mt_eq "a CONNECT without a port: its 400, not a tunnel" 400 \
    "$(mt_kv o1 status)" "$MT_T/o1.kv"
mt_curl o2 -x "http://$IN" "${CA[@]}" https://nx.wild.test/
mt_eq "a name that does not resolve: the CONNECT's own 502" "502 56" \
    "$MT_CONNECT $MT_RC"
mt_curl o3 -x "http://$IN" --cacert "$MT_T/origin.crt" https://origin.test/
mt_allowed "an allowed CONNECT is a tunnel to the origin as before" o3

# --- every refusal audited once ----------------------------------------------------------
mt_log_eq "audit: other.test's refusals, one line each" 5 "$A" count \
    host=other.test sandbox=it-refuse verdict=deny
mt_eq "...all of them the CONNECT's open lines" 5 \
    "$(mt_jl "$A" count host=other.test sandbox=it-refuse event=open reason=no-rule)"
mt_eq "audit: bad.origin.test's three CONNECTs, a line each" 3 \
    "$(mt_jl "$A" count host=bad.origin.test sandbox=it-refuse)"

# --- the budget: 20 at once, then 10 a second; past it, the plain 403 ------------------
cat > "$MT_T/burst.py" <<-'EOF'
	import socket, sys, time
	n, host = int(sys.argv[1]), sys.argv[2]
	socks = []
	for i in range(n):
	    s = socket.create_connection(("10.200.0.1", 3129), timeout=5)
	    s.sendall(b"CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n"
	              % (host.encode(), host.encode()))
	    socks.append(s)
	codes = {}
	for s in socks:
	    line = b""
	    try:
	        while not line.endswith(b"\r\n"):
	            b = s.recv(1)
	            if not b:
	                break
	            line += b
	    except OSError:
	        pass
	    code = line.split(b" ")[1].decode() if line.count(b" ") >= 2 else "none"
	    codes[code] = codes.get(code, 0) + 1
	    s.close()
	print(" ".join("%s=%d" % kv for kv in sorted(codes.items())))
	EOF
burst=$(mt_in cli timeout 20 "$MT_PY" "$MT_T/burst.py" 60 burst.test)
ok=$(echo "$burst" | sed -n 's/.*200=\([0-9]*\).*/\1/p')
no=$(echo "$burst" | sed -n 's/.*403=\([0-9]*\).*/\1/p')
if [ "${ok:-0}" -ge 15 ] && [ "${ok:-0}" -le 30 ] && [ "${no:-0}" -ge 30 ] &&
    [ $((ok + no)) = 60 ]; then
	mt_pass "60 refused CONNECTs at once: $ok inside the tunnel, $no as 403"
else
	mt_fail "60 refused CONNECTs at once: $burst"
fi
mt_log_eq "...each audited once" 60 "$A" count host=burst.test event=open \
    verdict=deny

mt_finish
