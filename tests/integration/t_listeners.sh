#!/bin/bash
# t_listeners.sh - the mixed "http+socks5" listener, Unix-socket listeners
# and IPv6 listeners and targets.
#
#   cli: curl, socks5.py, rawclient.py
#     --> moat: moatd  10.200.0.1:8888         (http+socks5)
#                      [fd00:200::1]:3128      (http+socks5)
#                      unix:$MT_T/proxy.sock   (http+socks5, mode 0666)
#     --> net: origin.py 203.0.113.10, [2001:db8::10], [2001:db8::20]
#   (the full drawing is at the top of lib.sh)
#
# The Unix socket is a file: the sandbox's namespace reaches it through the
# file system, as a --network none container would through a bind mount,
# and so does an unprivileged user, thanks to its mode.

. "$(dirname "$0")/lib.sh"

mt_init setpriv
mt_need_moatd
mt_world
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_moatd_start "$conf"
M=$MT_MIXED
sock=$MT_T/proxy.sock

# --- http+socks5 on one TCP port --------------------------------------------
mt_curl m1 -x "http://$M" http://origin.test/m1
mt_allowed "mixed listener: HTTP forward" m1
mt_curl m2 -p -x "http://$M" http://origin.test:8080/m2
mt_allowed "mixed listener: CONNECT" m2
mt_curl m3 -x "socks5h://$M" http://origin.test/m3
mt_allowed "mixed listener: SOCKS5" m3
mt_mark
mt_curl m4 -x "http://$M" http://bad.origin.test/m4
mt_denied "mixed listener: HTTP denial" m4 403 bad.origin.test \
    denied-by-rule blocked
mt_curl m5 -x "socks5h://$M" http://bad.origin.test/m5
mt_eq "mixed listener: SOCKS5 denial (curl exit 97)" 97 "$MT_RC" \
    "$MT_T/m5.err"
mt_raw m6 --tcp "$M" --timeout 3 --send '\x16\x03\x01\x00\x05hello'
mt_eq "mixed listener: a TLS ClientHello byte is neither: closed" 1 \
    "$(mt_kv m6 eof)" "$MT_T/m6.kv"
mt_untouched "mixed listener denials" origin

# --- Unix socket ---------------------------------------------------------------
if [ -S "$sock" ]; then
	mt_pass "unix listener: $sock is a socket"
else
	mt_fail "unix listener: $sock is not a socket" "$MT_T/moatd.err"
fi
mt_eq "unix listener: mode 0666 applied" 666 "$(stat -c %a "$sock")"
mt_raw u1 --unix "$sock" --timeout 5 --stop-after-response \
    --send 'GET http://origin.test/u1 HTTP/1.1\r\nHost: origin.test\r\n\r\n'
mt_eq "unix listener: HTTP forward" 200 "$(mt_kv u1 status)" "$MT_T/u1.kv"
mt_eq "unix listener: the answer is the origin's" origin \
    "$(mt_kv u1 header_x_origin_name)"
mt_raw u2 --unix "$sock" --timeout 5 --send 'CONNECT origin.test:8080 HTTP/1.1\r\nHost: origin.test:8080\r\n\r\nGET /u2 HTTP/1.1\r\nHost: origin.test\r\nConnection: close\r\n\r\n'
mt_eq "unix listener: CONNECT and a GET through it (2 responses)" 2 \
    "$(mt_kv u2 responses)" "$MT_T/u2.kv"
mt_socks u3 --unix "$sock" --atyp domain --dst origin.test --port 80 \
    --http-get /u3 --http-host origin.test
mt_eq "unix listener: SOCKS5 reply" 0x00 "$(mt_kv u3 reply)" "$MT_T/u3.kv"
mt_eq "unix listener: SOCKS5 GET through" 200 "$(mt_kv u3 http_status)"
mt_mark
mt_raw u4 --unix "$sock" --timeout 5 --stop-after-response \
    --send 'GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\nHost: 169.254.169.254\r\n\r\n'
mt_eq "unix listener: metadata denied" 403 "$(mt_kv u4 status)" "$MT_T/u4.kv"
mt_socks u5 --unix "$sock" --atyp domain --dst bad.origin.test --port 80
mt_eq "unix listener: SOCKS5 denial" 0x02 "$(mt_kv u5 reply)" "$MT_T/u5.kv"
mt_untouched "unix listener denials" origin meta

# An unprivileged user reaches it through its mode (the directory only
# needs to be searchable).
chmod 711 "$MT_T"
timeout 10 setpriv --reuid=65534 --regid=65534 --clear-groups \
    "$MT_PY" "$MT_HELPERS/rawclient.py" --unix "$sock" --timeout 5 \
    --stop-after-response \
    --send 'GET http://origin.test/nobody HTTP/1.1\r\nHost: origin.test\r\n\r\n' \
    > "$MT_T/u6.kv" 2>&1
mt_eq "unix listener: user nobody gets through (mode 0666)" 200 \
    "$(mt_kv u6 status)" "$MT_T/u6.kv"
chmod 700 "$MT_T"

# --- IPv6 listener and targets -------------------------------------------------
mt_curl v1 -x "http://$MT_HTTP6" http://origin.test/v1
mt_allowed "IPv6 listener: HTTP forward" v1
mt_curl v2 -x "socks5h://$MT_HTTP6" http://origin.test/v2
mt_allowed "IPv6 listener: SOCKS5" v2
mt_curl v3 -x "http://$MT_HTTP" http://v6only.test/v3
mt_allowed "name with only an AAAA, over IPv4 listener" v3
mt_eq "...reached [2001:db8::10]:80" '[2001:db8::10]:80' \
    "$(mt_jl "$MT_T/origin.log" get local event=request path=/v3)"
mt_curl v4 -g -x "http://$MT_HTTP6" 'http://[2001:db8::20]/v4'
mt_allowed "IPv6 literal allowed by a host entry" v4
mt_curl v5 -g -x "http://$MT_HTTP6" 'http://[2001:DB8:0:0::20]:80/v5'
mt_allowed "the same IPv6 address spelled differently" v5
mt_mark
mt_curl v6 -g -x "http://$MT_HTTP6" 'http://[2001:db8::10]/v6'
mt_denied "IPv6 literal no rule names" v6 403 2001:db8::10 no-rule -
mt_untouched "[2001:db8::10] by address" origin

# --- one moatd per address -----------------------------------------------------
# A second moatd on the same config would bind the same addresses with
# SO_REUSEPORT and take a share of the connections with its own policy.
timeout -k 2 30 ip netns exec "$(mt_ns moat)" "$MOATD" -c "$conf" \
    >/dev/null 2>"$MT_T/second.err"
rc=$?
if [ "$rc" = 1 ] && grep -q 'serves this address already' "$MT_T/second.err"; then
	mt_pass "a second moatd on the same addresses is refused: $(head -n1 "$MT_T/second.err")"
else
	mt_fail "a second moatd on the same addresses: rc $rc" "$MT_T/second.err"
fi
# Any other program that holds an address with SO_REUSEPORT (same user).
mt_bg squatter moat "$MT_PY" -c '
import os, socket
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
s.bind(("10.200.0.1", 3999)); s.listen(8)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
u.bind(("10.200.0.1", 3999))
os.write(3, b"ready\n")
while True:
    s.accept()[0].close()
' || mt_error "the squatter did not start"
for l in '"http", "address": "10.200.0.1:3999"' '"dns", "address": "10.200.0.1:3999"'; do
	c2=$MT_T/squat.json
	mt_conf "$c2"
	mt_conf_set "$c2" listen "[{\"proto\": $l}]"
	timeout -k 2 30 ip netns exec "$(mt_ns moat)" "$MOATD" -c "$c2" \
	    >/dev/null 2>"$MT_T/squat.err"
	rc=$?
	if [ "$rc" = 1 ] && grep -q 'another process serves this address already' \
	    "$MT_T/squat.err"; then
		mt_pass "moatd refuses an address a SO_REUSEPORT program holds (${l%%,*})"
	else
		mt_fail "moatd on a held address (${l%%,*}): rc $rc" "$MT_T/squat.err"
	fi
done
mt_curl s1 -x "http://$MT_HTTP" http://origin.test/s1
mt_allowed "the first moatd still serves all of its address" s1

if mt_moatd_alive; then
	mt_pass "moatd still runs"
else
	mt_fail "moatd died" "$MT_T/moatd.err"
fi
mt_finish
