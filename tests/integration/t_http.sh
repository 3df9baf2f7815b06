#!/bin/bash
# t_http.sh - moatd as an HTTP/1.1 forward proxy (curl -x).
#
#   cli: curl -x http://10.200.0.1:3128 ----> moat: moatd ----> net: origin.py
#                                               |                  203.0.113.10
#                                               +--> dns.py 203.0.113.53
#   (the full drawing is at the top of lib.sh)
#
# Allowed and denied requests (403 with X-Moat-Reason / X-Moat-Rule and a
# body naming host, reason and rule; the origin receives nothing), the
# request as the origin sees it, keep-alive on the client side, HEAD and
# bodiless answers, Content-Length and chunked uploads and a large download
# arriving intact, an origin-form request (400), a Host header that
# disagrees with the URL.

. "$(dirname "$0")/lib.sh"

mt_init
mt_need_moatd
mt_world
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_moatd_start "$conf"
P=(-x "http://$MT_HTTP")

# --- allowed ---------------------------------------------------------------
mt_mark
mt_curl a1 "${P[@]}" 'http://origin.test/hello?q=1'
mt_allowed "GET http://origin.test/hello?q=1" a1
rec=$(mt_new origin | mt_jl /dev/stdin dump event=request path=/hello)
mt_eq "origin got exactly one request" 1 "$(echo "$rec" | grep -c .)" \
    "$MT_T/origin.log"
field()
{
	echo "$rec" | tail -n 1 | mt_jl /dev/stdin get "$1"
}
mt_eq "origin got the origin-form target" '/hello?q=1' "$(field target)"
mt_eq "origin got Host: origin.test" origin.test "$(field host)"
# origin.test has an A and an AAAA record: either may be dialled.
mt_in_set "origin got it on one of origin.test's addresses" "$(field local)" \
    "203.0.113.10:80 [2001:db8::10]:80"
mt_in_set "origin got it from moat's namespace" \
    "$(field peer | sed 's/:[0-9]*$//')" "203.0.113.1 [2001:db8::1]"

mt_curl a2 "${P[@]}" http://203.0.113.20/by-ip
mt_allowed "GET by IP literal allowed by a host entry" a2
# An address rule opens addresses, never names: a name no host entry
# allows is refused before it is resolved (so no name leaks through DNS),
# even if it would resolve to an allowed address.
mt_mark
mt_curl a2n "${P[@]}" http://ipname.test/by-ip
mt_denied "a name no host entry allows, resolving to an allowed address" \
    a2n 403 ipname.test no-rule -
mt_eq "...and it was not resolved" 0 \
    "$(mt_new dns | mt_jl /dev/stdin count name=ipname.test)"
mt_curl a3 "${P[@]}" http://x.y.wild.test:8080/deep
mt_allowed "GET a name two labels under a *. wildcard, port 8080" a3
mt_curl a4 "${P[@]}" http://origin.test/status/204
mt_allowed "a 204 answer (no body) passes" a4 204
mt_curl a5 "${P[@]}" -I http://origin.test/bytes/1000 \
    http://origin.test/after-head
mt_allowed "HEAD then GET on one connection: the GET is answered" a5
n=$(mt_jl "$MT_T/origin.log" count event=request path=/after-head)
mt_eq "the request after HEAD reached the origin" 1 "$n"

# --- denied: the origin hears nothing ---------------------------------------
mt_mark
mt_curl d1 "${P[@]}" http://bad.origin.test/x
mt_denied "deny rule wins over an earlier *. allow" d1 403 bad.origin.test \
    denied-by-rule blocked
mt_untouched "bad.origin.test" origin
mt_mark
mt_curl d2 "${P[@]}" http://other.test/x
mt_denied "a name no rule names" d2 403 other.test no-rule -
mt_untouched "other.test" origin
mt_mark
mt_curl d3 "${P[@]}" http://origin.test:9090/x
mt_denied "an allowed host on a port the rule does not list" d3 403 \
    origin.test port origin
mt_untouched "origin.test:9090" origin
mt_mark
mt_curl d4 "${P[@]}" http://203.0.113.12/x
mt_denied "an address no rule names (allow_private opens the range only)" \
    d4 403 203.0.113.12 no-rule -
mt_untouched "203.0.113.12" origin
mt_mark
mt_curl d5 "${P[@]}" http://wild.test/x
mt_denied "a *. wildcard does not match its own apex" d5 403 wild.test no-rule
mt_untouched "wild.test" origin
mt_mark
mt_curl d6 "${P[@]}" http://badwild.test/x
mt_denied "a *. wildcard does not match a longer last label" d6 403 \
    badwild.test no-rule
ctype=$(mt_hdr d6 Content-Type)
case $ctype in
text/plain*) mt_pass "the denial body is text/plain ($ctype)" ;;
*) mt_fail "the denial body is '$ctype', want text/plain" "$MT_T/d6.hdr" ;;
esac

# --- keep-alive on the client side -----------------------------------------
out=$(mt_in cli curl -sS --max-time 8 "${P[@]}" -o /dev/null -o /dev/null \
    -o /dev/null -w '%{http_code}:%{num_connects} ' http://origin.test/k1 \
    http://origin.test/k2 http://origin.test/k3 2>"$MT_T/ka.err")
mt_eq "three GETs on one proxy connection (code:new connections)" \
    "200:1 200:0 200:0 " "$out" "$MT_T/ka.err"
out=$(mt_in cli curl -sS --max-time 8 "${P[@]}" -o /dev/null -o /dev/null \
    -o /dev/null -w '%{http_code} ' http://origin.test/k4 \
    http://bad.origin.test/ http://origin.test/k5 2>"$MT_T/ka2.err")
mt_eq "allow, deny, allow in one curl run" "200 403 200 " "$out" \
    "$MT_T/ka2.err"

# --- bodies ------------------------------------------------------------------
head -c 1000000 /dev/urandom > "$MT_T/up.bin"
sum=$(sha256sum < "$MT_T/up.bin" | cut -d' ' -f1)
mt_curl u1 "${P[@]}" -H 'Expect:' --data-binary @"$MT_T/up.bin" \
    http://origin.test/upload-cl
mt_allowed "POST with Content-Length (1 MB)" u1
mt_eq "Content-Length body reached the origin intact" "$sum" \
    "$(mt_jl "$MT_T/origin.log" get body_sha256 path=/upload-cl)" \
    "$MT_T/origin.log"
mt_curl u2 "${P[@]}" -H 'Expect:' -H 'Transfer-Encoding: chunked' \
    --data-binary @"$MT_T/up.bin" http://origin.test/upload-chunked
mt_allowed "POST chunked (1 MB)" u2
mt_eq "chunked body reached the origin intact" "$sum" \
    "$(mt_jl "$MT_T/origin.log" get body_sha256 path=/upload-chunked)" \
    "$MT_T/origin.log"
mt_curl u3 "${P[@]}" -H 'Expect:' -X PUT --data-binary '' \
    http://origin.test/upload-empty
mt_allowed "PUT with an empty body" u3
mt_eq "empty body reached the origin as 0 bytes" 0 \
    "$(mt_jl "$MT_T/origin.log" get body_len path=/upload-empty)"

mt_curl big "${P[@]}" http://origin.test/bytes/5000000
mt_allowed "GET 5 MB" big
"$MT_PY" - "$MT_T/big.body" 5000000 > "$MT_T/big.chk" <<-'EOF'
import sys
pat = bytes(range(32, 127))
data = open(sys.argv[1], "rb").read()
n = int(sys.argv[2])
want = (pat * (n // len(pat) + 1))[:n]
print("intact" if data == want else "differs (%d bytes)" % len(data))
EOF
mt_eq "the 5 MB answer arrived intact" intact "$(cat "$MT_T/big.chk")"

# --- malformed and ambiguous requests ----------------------------------------
mt_mark
mt_raw of --tcp "$MT_HTTP" --timeout 3 \
    --send 'GET /hello HTTP/1.1\r\nHost: origin.test\r\n\r\n'
mt_eq "origin-form request to the proxy -> 400" 400 "$(mt_kv of status)" \
    "$MT_T/of.kv"
mt_eq "origin-form request: X-Moat-Reason" bad-request \
    "$(mt_kv of header_x_moat_reason)"
mt_untouched "origin-form request" origin

mt_mark
mt_raw hm --tcp "$MT_HTTP" --timeout 3 --stop-after-response \
    --send 'GET http://origin.test/hostmix HTTP/1.1\r\nHost: bad.origin.test\r\n\r\n'
st=$(mt_kv hm status)
host=$(mt_jl "$MT_T/origin.log" get host path=/hostmix)
if [ "$st" = 400 ]; then
	mt_pass "Host disagreeing with the URL is refused (400)"
elif [ "$st" = 200 ] && [ "$host" = origin.test ]; then
	mt_pass "Host disagreeing with the URL: the origin got Host: origin.test"
else
	mt_fail "Host disagreeing with the URL: status '$st', origin saw Host '$host'" \
	    "$MT_T/hm.kv" "$MT_T/origin.log"
fi

if mt_moatd_alive; then
	mt_pass "moatd still runs"
else
	mt_fail "moatd died" "$MT_T/moatd.err"
fi
# A config without a CA, secrets or logins needs no OpenSSL: moatd loads
# it only when one does (certs/ssldl.c).
grep -c 'libssl\|libcrypto' /proc/"$MT_MOATD_PID"/maps > "$MT_T/ssl.n"
mt_eq "no OpenSSL in a moatd that intercepts nothing" 0 \
    "$(cat "$MT_T/ssl.n")" /proc/"$MT_MOATD_PID"/maps
mt_finish
