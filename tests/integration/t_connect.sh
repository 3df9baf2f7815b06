#!/bin/bash
# t_connect.sh - moatd's CONNECT tunnels (curl -p, HTTPS through the proxy).
#
#   cli: curl -p -x 10.200.0.1:3128 --CONNECT--> moat: moatd ==tunnel==>
#        net: origin.py 203.0.113.10 :8080 (HTTP), :443 (TLS), :9090
#   (the full drawing is at the top of lib.sh)
#
# Allowed tunnels carry HTTP and end-to-end TLS (verified against the
# origin's own certificate: moatd does not intercept), large bodies both
# ways, and bytes the client sent right behind the CONNECT head; denied
# CONNECTs (port, deny rule, no rule) get 403 with the reason and rule and
# the origin hears nothing.

. "$(dirname "$0")/lib.sh"

mt_init
mt_need_moatd
mt_world
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_moatd_start "$conf"
P=(-x "http://$MT_HTTP")

mt_mark
mt_curl c1 -p "${P[@]}" http://origin.test:8080/tunnel
mt_eq "CONNECT origin.test:8080 answered 200" 200 "$MT_CONNECT" \
    "$MT_T/c1.hdr" "$MT_T/c1.err" "$MT_T/moatd.err"
mt_allowed "GET through the tunnel" c1
mt_in_set "the origin got the GET on :8080" \
    "$(mt_new origin | mt_jl /dev/stdin get local event=request path=/tunnel)" \
    "203.0.113.10:8080 [2001:db8::10]:8080"

mt_curl c2 "${P[@]}" --cacert "$MT_T/origin.crt" https://origin.test/tls
mt_eq "HTTPS through the proxy: CONNECT answered 200" 200 "$MT_CONNECT" \
    "$MT_T/c2.err"
mt_allowed "HTTPS through the proxy, origin certificate verified" c2
mt_curl c3 -p -g "${P[@]}" 'http://[2001:db8::20]/v6'
mt_eq "CONNECT [2001:db8::20]:80 answered 200" 200 "$MT_CONNECT" \
    "$MT_T/c3.err"
mt_allowed "GET through a tunnel to an IPv6 literal" c3

mt_curl big -p "${P[@]}" http://origin.test:8080/bytes/5000000
mt_eq "5 MB down a tunnel" 5000000 "$(stat -c %s "$MT_T/big.body")"
head -c 1000000 /dev/urandom > "$MT_T/up.bin"
sum=$(sha256sum < "$MT_T/up.bin" | cut -d' ' -f1)
mt_curl up -p "${P[@]}" -H 'Expect:' --data-binary @"$MT_T/up.bin" \
    http://origin.test:8080/upload
mt_eq "1 MB up a tunnel, intact" "$sum" \
    "$(mt_jl "$MT_T/origin.log" get body_sha256 path=/upload)" \
    "$MT_T/origin.log"

# A client may send its first bytes right behind the CONNECT head.
mt_raw early --tcp "$MT_HTTP" --timeout 5 --send 'CONNECT origin.test:8080 HTTP/1.1\r\nHost: origin.test:8080\r\n\r\nGET /early HTTP/1.1\r\nHost: origin.test\r\nConnection: close\r\n\r\n'
mt_eq "bytes sent behind the CONNECT head reach the origin" 1 \
    "$(mt_jl "$MT_T/origin.log" count event=request path=/early)" \
    "$MT_T/early.kv"
mt_eq "...and its answer comes back (2 responses)" 2 \
    "$(mt_kv early responses)" "$MT_T/early.kv"

# The end of a tunnel.  The origin closes right behind its last byte;
# moatd reads on to that FIN before writing and passes it on with the last
# bytes.  None may be lost and the client must see the close: while it
# still has its own side open ("open"), after it has shut it ("shut"), and
# when it reads late through a small buffer ("late"), so that the FIN
# comes in behind megabytes nobody has read yet.  (tests/unit/test_tunnel.c
# has the FIN behind a pipe that is full.)
body_check()
{
	"$MT_PY" - "$1" "$2" <<'EOF'
import sys
data = open(sys.argv[1], "rb").read()
n = int(sys.argv[2])
parts = data.split(b"\r\n\r\n", 2)   # the 200, the answer's head, its body
if len(parts) < 3:
    print("no answer (%d bytes)" % len(data))
elif parts[2] != (bytes(range(32, 127)) * (n // 95 + 1))[:n]:
    print("body of %d bytes, not the %d sent" % (len(parts[2]), n))
else:
    print("ok")
EOF
}
for how in open shut late; do
	n=3000000 extra=
	case $how in
	shut) extra=--shut-wr ;;
	late) n=12000000 extra="--read-delay-ms 1500 --rcvbuf 65536" ;;
	esac
	mt_raw "fin-$how" --tcp "$MT_HTTP" --timeout 15 $extra \
	    --raw-out "$MT_T/fin-$how.raw" --send "CONNECT origin.test:8080 HTTP/1.1\\r\\nHost: origin.test:8080\\r\\n\\r\\nGET /bytes/$n HTTP/1.1\\r\\nHost: origin.test\\r\\nConnection: close\\r\\n\\r\\n"
	mt_eq "tunnel end, client $how: the origin's close reaches it" \
	    1 "$(mt_kv "fin-$how" eof)" "$MT_T/fin-$how.kv"
	mt_eq "tunnel end, client $how: all $n bytes, in order" \
	    ok "$(body_check "$MT_T/fin-$how.raw" $n)" "$MT_T/fin-$how.kv"
done

# --- denied ------------------------------------------------------------------
mt_mark
mt_curl d1 -p "${P[@]}" http://origin.test:9090/
mt_denied "CONNECT to a port the rule does not list" d1 403 origin.test \
    port origin
mt_eq "curl reports the failed CONNECT (exit 56)" 56 "$MT_RC"
mt_untouched "CONNECT origin.test:9090" origin
mt_mark
mt_curl d2 "${P[@]}" --cacert "$MT_T/origin.crt" https://bad.origin.test/
mt_denied "CONNECT to a denied host" d2 403 bad.origin.test denied-by-rule \
    blocked
mt_untouched "CONNECT bad.origin.test:443" origin
mt_mark
mt_curl d3 -p "${P[@]}" http://other.test/
mt_denied "CONNECT to a host no rule names" d3 403 other.test no-rule -
mt_untouched "CONNECT other.test:80" origin
mt_mark
mt_raw d4 --tcp "$MT_HTTP" --timeout 3 --send 'CONNECT bad.origin.test:8080 HTTP/1.1\r\nHost: bad.origin.test:8080\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: origin.test\r\n\r\n'
mt_eq "raw denied CONNECT with bytes behind it -> 403" 403 \
    "$(mt_kv d4 status)" "$MT_T/d4.kv"
body=$(mt_kv d4 body)
case $body in
*bad.origin.test*denied-by-rule*|*denied-by-rule*bad.origin.test*)
	mt_pass "the 403 body names host and reason" ;;
*) mt_fail "the 403 body does not name host and reason: '$body'" ;;
esac
case $body in
*blocked*) mt_pass "the 403 body names the rule" ;;
*) mt_fail "the 403 body does not name rule 'blocked': '$body'" ;;
esac
mt_untouched "denied CONNECT with pipelined bytes" origin

mt_mark
mt_raw d5 --tcp "$MT_HTTP" --timeout 3 \
    --send 'CONNECT origin.test HTTP/1.1\r\nHost: origin.test\r\n\r\n'
mt_eq "CONNECT without a port -> 400" 400 "$(mt_kv d5 status)" "$MT_T/d5.kv"
mt_raw d6 --tcp "$MT_HTTP" --timeout 3 \
    --send 'CONNECT origin.test:0 HTTP/1.1\r\nHost: origin.test:0\r\n\r\n'
mt_in_set "CONNECT to port 0 -> 400 or 403" "$(mt_kv d6 status)" "400 403" \
    "$MT_T/d6.kv"
mt_raw d7 --tcp "$MT_HTTP" --timeout 3 \
    --send 'CONNECT http://origin.test:8080/ HTTP/1.1\r\nHost: origin.test:8080\r\n\r\n'
mt_eq "CONNECT with a URL instead of authority-form -> 400" 400 \
    "$(mt_kv d7 status)" "$MT_T/d7.kv"
mt_untouched "malformed CONNECTs" origin

if mt_moatd_alive; then
	mt_pass "moatd still runs"
else
	mt_fail "moatd died" "$MT_T/moatd.err"
fi
mt_finish
