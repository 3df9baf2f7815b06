#!/bin/bash
# t_auth.sh - listeners with "auth": SOCKS5 username/password (RFC 1929)
# and HTTP Proxy-Authorization: Basic.
#
#   cli: curl / socks5.py --> moat: moatd 10.200.0.1:1081 (socks5, auth)
#                                         10.200.0.1:3129 (http, auth)
#                             --> net: origin.py 203.0.113.10
#   (the full drawing is at the top of lib.sh)
#
# alice's password comes from moatd's environment, bob's from a file.  The
# right password gets through; a wrong one, an unknown user or none does
# not, and the origin hears nothing; the origin never sees the proxy's
# credentials.

. "$(dirname "$0")/lib.sh"

mt_init
mt_need_moatd
mt_world
conf=$MT_T/moatd.json
mt_conf "$conf"
printf %s 'b0b-file-pw' > "$MT_T/bob.pw"
chmod 600 "$MT_T/bob.pw"
auth='{"alice": {"env": "MOAT_IT_ALICE"}, "bob": {"file": "'$MT_T/bob.pw'"}}'
mt_conf_set "$conf" listen.+ '{"proto": "socks5", "address": "10.200.0.1:1081",
    "sandbox": "it-auth-socks", "auth": '"$auth"'}'
mt_conf_set "$conf" listen.+ '{"proto": "http", "address": "10.200.0.1:3129",
    "sandbox": "it-auth-http", "auth": '"$auth"'}'
MT_MOATD_ENV="MOAT_IT_ALICE=al1ce-env-pw"
mt_moatd_start "$conf"
S=10.200.0.1:1081
H=10.200.0.1:3129

# --- SOCKS5 ------------------------------------------------------------------
mt_curl s1 -x "socks5h://alice:al1ce-env-pw@$S" http://origin.test/s1
mt_allowed "SOCKS5 alice with the right password (from env)" s1
mt_curl s2 -x "socks5h://bob:b0b-file-pw@$S" http://origin.test/s2
mt_allowed "SOCKS5 bob with the right password (from a file)" s2
mt_socks s3 --tcp "$S" --user alice --password al1ce-env-pw --offer-both \
    --atyp domain --dst origin.test --port 80 --http-get /s3 \
    --http-host origin.test
mt_eq "no-auth and password both offered: the proxy picks password" 0x02 \
    "$(mt_kv s3 method)" "$MT_T/s3.kv"
mt_eq "...and the request goes through" 200 "$(mt_kv s3 http_status)" \
    "$MT_T/s3.kv"

mt_mark
mt_curl f1 -x "socks5h://alice:wrong@$S" http://origin.test/f1
mt_eq "SOCKS5 wrong password: curl exit 97" 97 "$MT_RC" "$MT_T/f1.err"
mt_socks f2 --tcp "$S" --user alice --password wrong --atyp domain \
    --dst origin.test --port 80
r=$(mt_kv f2 auth)
if [ -n "$r" ] && [ "$r" != 0x00 ]; then
	mt_pass "SOCKS5 wrong password: auth status $r"
else
	mt_fail "SOCKS5 wrong password: auth status '$r'" "$MT_T/f2.kv"
fi
mt_socks f3 --tcp "$S" --user mallory --password al1ce-env-pw --atyp domain \
    --dst origin.test --port 80
r=$(mt_kv f3 auth)
if [ -n "$r" ] && [ "$r" != 0x00 ]; then
	mt_pass "SOCKS5 unknown user with alice's password: auth status $r"
else
	mt_fail "SOCKS5 unknown user: auth status '$r'" "$MT_T/f3.kv"
fi
mt_socks f4 --tcp "$S" --user bob --password al1ce-env-pw --atyp domain \
    --dst origin.test --port 80
r=$(mt_kv f4 auth)
if [ -n "$r" ] && [ "$r" != 0x00 ]; then
	mt_pass "SOCKS5 bob with alice's password: auth status $r"
else
	mt_fail "SOCKS5 bob with alice's password: auth status '$r'" "$MT_T/f4.kv"
fi
mt_socks f5 --tcp "$S" --atyp domain --dst origin.test --port 80
mt_eq "SOCKS5 no credentials offered: method 0xff" 0xff \
    "$(mt_kv f5 method)" "$MT_T/f5.kv"
mt_curl f6 --socks5-hostname "$S" http://origin.test/f6
mt_eq "curl without credentials: exit 97" 97 "$MT_RC" "$MT_T/f6.err"
mt_untouched "SOCKS5 without valid credentials" origin

# --- HTTP Basic ----------------------------------------------------------------
mt_curl h1 -x "http://$H" --proxy-user alice:al1ce-env-pw \
    http://origin.test/h1
mt_allowed "HTTP proxy alice with the right password" h1
n=$(mt_jl "$MT_T/origin.log" count event=request path=/h1 \
    'headers~(?i)proxy-authorization')
mt_eq "the origin did not get Proxy-Authorization" 0 "$n" "$MT_T/origin.log"
mt_curl h2 -p -x "http://$H" --proxy-user bob:b0b-file-pw \
    http://origin.test:8080/h2
mt_allowed "CONNECT bob with the right password" h2

mt_mark
mt_curl g1 -x "http://$H" http://origin.test/g1
mt_eq "HTTP proxy without credentials -> 407" 407 "$MT_CODE" "$MT_T/g1.hdr"
pa=$(mt_hdr g1 Proxy-Authenticate)
case $pa in
Basic*|basic*) mt_pass "407 asks for Basic ($pa)" ;;
*) mt_fail "407 without a Basic Proxy-Authenticate: '$pa'" "$MT_T/g1.hdr" ;;
esac
mt_curl g2 -x "http://$H" --proxy-user alice:wrong http://origin.test/g2
mt_eq "HTTP proxy wrong password -> 407" 407 "$MT_CODE" "$MT_T/g2.hdr"
mt_curl g3 -p -x "http://$H" --proxy-user alice:wrong \
    http://origin.test:8080/g3
mt_eq "CONNECT wrong password -> 407" 407 "$MT_CONNECT" "$MT_T/g3.hdr"
mt_raw g4 --tcp "$H" --timeout 3 --send 'GET http://origin.test/g4 HTTP/1.1\r\nHost: origin.test\r\nProxy-Authorization: Basic !!notbase64!!\r\n\r\n'
mt_in_set "malformed Basic credentials -> 400 or 407" "$(mt_kv g4 status)" \
    "400 407" "$MT_T/g4.kv"
mt_untouched "HTTP proxy without valid credentials" origin

# The plain listeners of the same moatd still need nothing.
mt_curl p1 -x "http://$MT_HTTP" http://origin.test/p1
mt_allowed "a listener without auth is unaffected" p1

if grep -qF -e al1ce-env-pw -e b0b-file-pw "$MT_T/moatd.err" \
    "$MT_T/audit.log" 2>/dev/null; then
	mt_fail "a password appears in moatd's log or the audit log"
else
	mt_pass "no password in moatd's log or the audit log"
fi
if mt_moatd_alive; then
	mt_pass "moatd still runs"
else
	mt_fail "moatd died" "$MT_T/moatd.err"
fi
mt_finish
