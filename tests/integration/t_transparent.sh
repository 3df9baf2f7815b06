#!/bin/bash
# t_transparent.sh - moatd's transparent listener: connections redirected
# to it are attributed to a name and judged; the upstream address comes
# from moatd's own resolution, never from the client (invariant 5).
#
#   cli: python3 / openssl, ignoring any proxy --> 203.0.113.x:port
#     --> moat: nftables (set up by this test) redirects TCP from c0 to
#               moatd 10.200.0.1:15001 (transparent) and UDP/TCP 53 to
#               moatd 10.200.0.1:53 (dns)
#     --> net: origin.py 203.0.113.10 :80 :443 (TLS), 203.0.113.12 :80,
#              203.0.113.20 :80
#   (the full drawing is at the top of lib.sh)
#
# Attribution: (1) an address moatd's DNS listener handed this sandbox ->
# dialled as is; (2) an IP rule allowing the address; (3) the TLS SNI or
# HTTP Host of the first bytes -> moatd resolves that name and dials its
# own answer, whatever address the client chose.  Nothing names it: denied.
# TLS whose server name is not the attributed name: sni-mismatch.

. "$(dirname "$0")/lib.sh"

mt_init
mt_need_moatd
command -v nft >/dev/null 2>&1 || mt_skip "needs nft (the test sets up the redirect itself)"
mt_world
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_conf_set "$conf" listen.+ '{"proto": "transparent", "address": "10.200.0.1:15001", "sandbox": "it-tp"}'
mt_conf_set "$conf" listen.+ '{"proto": "dns", "address": "10.200.0.1:53", "sandbox": "it-tp"}'
mt_conf_set "$conf" timeouts '{"request_head_ms": 2000}'
mt_moatd_start "$conf"
A=$MT_T/audit.log

# The redirect a sandbox gateway makes (moat-netns does this in production;
# here the test does it with nft, in moatd's namespace).
mt_in moat nft -f - <<'EOF2' || mt_error "nft could not load the redirect"
table inet mt_redirect {
	chain pre {
		type nat hook prerouting priority -100;
		iifname "c0" ip daddr 10.200.0.1 return
		iifname "c0" ip6 daddr fd00:200::1 return
		iifname "c0" meta l4proto tcp redirect to :15001
	}
}
EOF2

# tcp NAME HOST PORT [HOSTHDR]: a plain TCP client in the sandbox that
# sends an HTTP GET (Host: HOSTHDR or HOST) and reports status= and the
# origin that answered (X-Origin-Name, X-Origin-Local).
tcp()
{
	local n=$1
	mt_in cli "$MT_PY" - "$2" "$3" "${4:-$2}" > "$MT_T/$n.kv" \
	    2>"$MT_T/$n.err" <<'EOF2'
import socket, sys
host, port, hosthdr = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = socket.create_connection((host, port), timeout=5)
s.sendall(("GET /tp HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n"
           % hosthdr).encode())
data = b""
try:
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
except OSError as e:
    print("error=%s" % e)
import json
head, _, body = data.partition(b"\r\n\r\n")
lines = head.decode("latin-1").split("\r\n")
print("status=%s" % (lines[0].split(" ")[1] if " " in lines[0] else "none"))
for l in lines[1:]:
    k, _, v = l.partition(":")
    if k.lower() == "x-origin-name":
        print("x-origin-name=%s" % v.strip())
try:
    print("local=%s" % json.loads(body)["local"])
except (ValueError, KeyError, TypeError):
    pass
EOF2
}

# --- (1) attribution from moatd's own DNS answer ---------------------------------------
mt_mark
out=$(mt_in cli "$MT_PY" "$MT_HELPERS/dnsprobe.py" 10.200.0.1 origin.test A)
echo "$out" | grep -q "A 203.0.113.10" ||
    mt_fail "moatd's DNS answered origin.test: $out"
tcp t1 203.0.113.10 80 origin.test
mt_eq "a client ignoring proxies reaches the origin it resolved through moatd" \
    200 "$(mt_kv t1 status)"
mt_eq "...and it is the origin (203.0.113.10:80)" "203.0.113.10:80" \
    "$(mt_kv t1 local)"
mt_log_eq "audit: transparent, attributed to origin.test" origin.test \
    "$A" get host event=open proto=transparent verdict=allow
mt_log_eq "audit: the rule that allowed it" origin \
    "$A" get rule event=open proto=transparent host=origin.test
mt_log_eq "audit: the close line has bytes both ways" 1 \
    "$A" count event=close proto=transparent host=origin.test 'bytes_down~^[1-9]'

# A port the rule does not allow, to the same attributed address.
tcp t2 203.0.113.10 9090 origin.test
mt_eq "attributed name on a port the rule does not allow: no answer" none \
    "$(mt_kv t2 status)"
mt_log_eq "audit: reason port" port \
    "$A" get reason event=open proto=transparent port=9090

# --- (2) an IP rule ---------------------------------------------------------------------
tcp t3 203.0.113.20 80 whatever.example
mt_eq "an address allowed by an IP rule: dialled as is" "203.0.113.20:80" \
    "$(mt_kv t3 local)"

# --- (3) HTTP Host and TLS SNI: moatd dials its own resolution ------------------------
mt_mark
tcp t4 203.0.113.12 80 origin.test
mt_eq "HTTP to an address moatd never handed out, Host origin.test: answered" 200 \
    "$(mt_kv t4 status)"
mt_in_set "...by origin.test's address from moatd's resolution, not the one dialled" \
    "$(mt_kv t4 local)" "203.0.113.10:80 [2001:db8::10]:80"
mt_eq "...and nothing reached the address the client chose" 0 \
    "$(mt_new origin | mt_jl /dev/stdin count event=accept local=203.0.113.12:80)"
out=$(echo | mt_in cli timeout 10 openssl s_client -connect 203.0.113.99:443 \
    -servername origin.test -brief 2>&1)
if echo "$out" | grep -qi "CONNECTION ESTABLISHED\|Protocol version"; then
	mt_pass "TLS to a dead address with SNI origin.test: handshake with the real origin"
else
	mt_fail "TLS via SNI: $out"
fi
mt_log_eq "audit: attributed to the SNI name" origin.test \
    "$A" get host event=open proto=transparent port=443 verdict=allow

# An address attributed to origin.test (moatd's DNS answer) does not carry
# TLS for another name: domain fronting is refused before the origin
# hears any of it.
out=$(mt_in cli "$MT_PY" "$MT_HELPERS/dnsprobe.py" 10.200.0.1 origin.test A)
out=$(echo | mt_in cli timeout 10 openssl s_client -connect 203.0.113.10:443 \
    -servername evil.wild.test -brief 2>&1)
if echo "$out" | grep -qi "CONNECTION ESTABLISHED\|Protocol version"; then
	mt_fail "TLS for evil.wild.test to an address attributed to origin.test: handshake"
else
	mt_pass "TLS for evil.wild.test to an address attributed to origin.test: refused"
fi
mt_wait_log "$A" '"sni":"evil.wild.test"' 30 || true
mt_eq "audit: sni-mismatch, both names" "sni-mismatch origin.test evil.wild.test" \
    "$(for f in reason host sni; do printf '%s ' "$(mt_jl "$A" get $f \
        event=open proto=transparent sni=evil.wild.test)"; done | sed 's/ $//')" "$A"

# --- denied --------------------------------------------------------------------------------
mt_mark
tcp t5 203.0.113.12 80 bad.origin.test
mt_eq "Host naming a denied host: no answer" none "$(mt_kv t5 status)"
mt_log_eq "audit: denied-by-rule" denied-by-rule \
    "$A" get reason event=open proto=transparent host=bad.origin.test
tcp t6 169.254.169.254 80 169.254.169.254
mt_eq "the metadata address, Host an address: no answer" none "$(mt_kv t6 status)"
tcp t7 169.254.169.254 80 metadata.google.internal
mt_eq "the metadata address, Host the metadata name: no answer" none \
    "$(mt_kv t7 status)"
tcp t8 203.0.113.12 80 loop.wild.test
mt_eq "Host naming an allowed name that resolves to loopback: no answer" none \
    "$(mt_kv t8 status)"
mt_untouched "denied transparent connections" meta loop lan
mt_log_eq "audit: the loopback name, private-address" private-address \
    "$A" get reason event=open proto=transparent host=loop.wild.test

# Nothing names the destination: a server-first protocol without DNS.
out=$(mt_in cli "$MT_PY" - <<'EOF2'
import socket, time
s = socket.create_connection(("203.0.113.12", 80), timeout=8)
t = time.time()
try:
    b = s.recv(10)
    print("closed after %.1f s, got %r" % (time.time() - t, b))
except OSError as e:
    print("error %s" % e)
EOF2
)
if echo "$out" | grep -q "closed after .*b''"; then
	mt_pass "a client that says nothing to an unattributed address is closed ($out)"
else
	mt_fail "silent client: $out"
fi

# Part of a ClientHello, then nothing: cut by request_head_ms (2000) and
# audited as a timeout, not as a protocol that names nothing.
mt_raw tp1 --tcp 203.0.113.99:443 --timeout 8 \
    --send '\x16\x03\x01\x00\xc8\x01\x00\x00\xc4\x03\x03'
ms=$(mt_kv tp1 eof_ms)
if [ "$(mt_kv tp1 eof)" = 1 ] && [ "${ms:-0}" -ge 1500 ] &&
    [ "$ms" -le 5000 ]; then
	mt_pass "a ClientHello cut short is closed after request_head_ms ($ms ms)"
else
	mt_fail "a ClientHello cut short: eof=$(mt_kv tp1 eof) after ${ms:-?} ms" \
	    "$MT_T/tp1.kv"
fi
mt_log_eq "audit: the cut ClientHello is a timeout" 1 \
    "$A" count event=open proto=transparent host=203.0.113.99 \
    reason=timeout 'detail~did not arrive whole'

# Straight to the transparent port, no redirect: refused.
out=$(mt_in cli "$MT_PY" - <<'EOF2'
import socket
s = socket.create_connection(("10.200.0.1", 15001), timeout=5)
s.sendall(b"GET / HTTP/1.1\r\nHost: origin.test\r\n\r\n")
try:
    b = s.recv(100)
    print("closed" if b == b"" else "got %r" % b)
except ConnectionResetError:
    print("closed")
EOF2
)
mt_eq "a connection made straight to the transparent port is closed" \
    closed "$out"
mt_log_eq "audit: it was refused as bad-request" bad-request \
    "$A" get reason event=open proto=transparent host=-
if mt_moatd_alive; then
	mt_pass "moatd survived"
else
	mt_fail "moatd died" "$MT_T/moatd.err"
fi
mt_finish
