#!/bin/bash
# t_socks5.sh - moatd's SOCKS5 listener (RFC 1928).
#
#   cli: curl --socks5-hostname / --socks5, socks5.py
#        --> moat: moatd 10.200.0.1:1080 --> net: origin.py 203.0.113.10/.20
#   (the full drawing is at the top of lib.sh)
#
# Domain, IPv4 and IPv6 destination addresses; denials and targets that
# cannot be one (a malformed name, port 0) answer 0x02 (curl exit 97) and
# the origin hears nothing; unknown address types get 0x08; other commands and versions are
# refused; failures to resolve or connect are not success.

. "$(dirname "$0")/lib.sh"

mt_init
mt_need_moatd
mt_world
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_moatd_start "$conf"
S=$MT_SOCKS

mt_curl h1 --socks5-hostname "$S" http://origin.test/s1
mt_allowed "curl --socks5-hostname origin.test (domain address)" h1
mt_curl h2 --socks5 "$S" http://203.0.113.20/s2
mt_allowed "curl --socks5 203.0.113.20 (IPv4 address)" h2
mt_curl h3 --socks5 "$S" -g 'http://[2001:db8::20]/s3'
mt_allowed "curl --socks5 [2001:db8::20] (IPv6 address)" h3
mt_curl h4 -x "socks5h://$S" http://v6only.test/s4
mt_allowed "socks5h:// to a name with only an AAAA" h4
mt_eq "...reached the origin over IPv6" '[2001:db8::10]:80' \
    "$(mt_jl "$MT_T/origin.log" get local event=request path=/s4)"

mt_socks p1 --tcp "$S" --atyp domain --dst origin.test --port 80 \
    --http-get /p1 --http-host origin.test
mt_eq "socks5.py domain: reply" 0x00 "$(mt_kv p1 reply)" "$MT_T/p1.kv"
mt_eq "socks5.py domain: GET through" 200 "$(mt_kv p1 http_status)"
mt_socks p2 --tcp "$S" --atyp ipv4 --dst 203.0.113.20 --port 80 \
    --http-get /p2
mt_eq "socks5.py IPv4: reply" 0x00 "$(mt_kv p2 reply)" "$MT_T/p2.kv"
mt_eq "socks5.py IPv4: GET through" 200 "$(mt_kv p2 http_status)"
mt_socks p3 --tcp "$S" --atyp ipv6 --dst 2001:db8::20 --port 80 \
    --http-get /p3
mt_eq "socks5.py IPv6: reply" 0x00 "$(mt_kv p3 reply)" "$MT_T/p3.kv"
mt_eq "socks5.py IPv6: GET through" 200 "$(mt_kv p3 http_status)"
mt_socks p4 --tcp "$S" --atyp domain --dst ORIGIN.Test. --port 8080 \
    --http-get /p4 --http-host origin.test
mt_eq "socks5.py upper-case name with a final dot: reply" 0x00 \
    "$(mt_kv p4 reply)" "$MT_T/p4.kv"

# --- denied ------------------------------------------------------------------
mt_mark
mt_curl d1 --socks5-hostname "$S" http://bad.origin.test/
mt_eq "socks5h to a denied host: curl exit 97" 97 "$MT_RC" "$MT_T/d1.err"
mt_socks d2 --tcp "$S" --atyp domain --dst bad.origin.test --port 80
mt_eq "denied host: reply 0x02" 0x02 "$(mt_kv d2 reply)" "$MT_T/d2.kv"
mt_socks d3 --tcp "$S" --atyp domain --dst origin.test --port 9090
mt_eq "allowed host, port not listed: reply 0x02" 0x02 "$(mt_kv d3 reply)" \
    "$MT_T/d3.kv"
mt_socks d4 --tcp "$S" --atyp domain --dst other.test --port 80
mt_eq "host no rule names: reply 0x02" 0x02 "$(mt_kv d4 reply)" "$MT_T/d4.kv"
mt_socks d5 --tcp "$S" --atyp ipv4 --dst 203.0.113.12 --port 80
mt_eq "address no rule names: reply 0x02" 0x02 "$(mt_kv d5 reply)" \
    "$MT_T/d5.kv"
mt_untouched "denied SOCKS5 requests" origin

# Targets that cannot be one are refused (0x02, audited bad-request), not
# failures of moat (0x01) or of the network (0x05: nothing was dialled).
mt_mark
mt_socks m1 --tcp "$S" --atyp domain --dst $'bad\rname.test' --port 80
mt_eq "control byte in the name: reply 0x02" 0x02 "$(mt_kv m1 reply)" \
    "$MT_T/m1.kv"
mt_socks m2 --tcp "$S" --atyp domain --dst '' --port 80
mt_eq "empty name: reply 0x02" 0x02 "$(mt_kv m2 reply)" "$MT_T/m2.kv"
mt_socks m3 --tcp "$S" --atyp domain --dst 'exa mple.test' --port 80
mt_eq "name that is no host name: reply 0x02" 0x02 "$(mt_kv m3 reply)" \
    "$MT_T/m3.kv"
mt_socks m4 --tcp "$S" --atyp domain --dst origin.test --port 0
mt_eq "port 0: reply 0x02" 0x02 "$(mt_kv m4 reply)" "$MT_T/m4.kv"
mt_socks m5 --tcp "$S" --atyp ipv4 --dst 203.0.113.20 --port 0
mt_eq "port 0 of an allowed address: reply 0x02" 0x02 "$(mt_kv m5 reply)" \
    "$MT_T/m5.kv"
mt_socks m6 --tcp "$S" --atyp unknown --dst 203.0.113.20 --port 80
mt_eq "unknown address type: reply 0x08" 0x08 "$(mt_kv m6 reply)" \
    "$MT_T/m6.kv"
A=$MT_T/audit.log
mt_wait_log "$A" '"port": ?0[,}]' || true
mt_wait_log "$A" 'exa mple' || true
mt_wait_log "$A" '"host": ?"bad[^.]' || true
mt_log_eq "port 0: audited as bad-request" 1 "$A" count \
    proto=socks5 host=origin.test port=0 verdict=deny reason=bad-request
mt_eq "bad names: audited as bad-request" 2 "$(mt_jl "$A" count \
    proto=socks5 verdict=deny reason=bad-request 'host~^(bad|exa mple)')" "$A"
mt_untouched "malformed SOCKS5 targets" origin

mt_mark
mt_socks x1 --tcp "$S" --cmd 2 --atyp domain --dst origin.test --port 80
mt_eq "BIND is not supported: reply 0x07" 0x07 "$(mt_kv x1 reply)" \
    "$MT_T/x1.kv"
mt_socks x2 --tcp "$S" --cmd 3 --atyp ipv4 --dst 203.0.113.20 --port 80
mt_eq "UDP ASSOCIATE is not supported: reply 0x07" 0x07 "$(mt_kv x2 reply)" \
    "$MT_T/x2.kv"
# A SOCKS4 request to 203.0.113.20:80: version 4 is not spoken.
mt_raw x3 --tcp "$S" --timeout 3 --send '\x04\x01\x00\x50\xcb\x00\x71\x14moat\x00'
mt_eq "a SOCKS4 request gets the connection closed" 1 "$(mt_kv x3 eof)" \
    "$MT_T/x3.kv"
mt_untouched "unsupported SOCKS requests" origin

mt_socks f1 --tcp "$S" --atyp domain --dst nx.wild.test --port 80
r=$(mt_kv f1 reply)
if [ -n "$r" ] && [ "$r" != 0x00 ]; then
	mt_pass "NXDOMAIN: reply $r (not success)"
else
	mt_fail "NXDOMAIN: reply '$r'" "$MT_T/f1.kv"
fi
mt_socks f2 --tcp "$S" --atyp domain --dst refused.wild.test --port 80
r=$(mt_kv f2 reply)
if [ -n "$r" ] && [ "$r" != 0x00 ]; then
	mt_pass "refused upstream: reply $r (not success)"
else
	mt_fail "refused upstream: reply '$r'" "$MT_T/f2.kv"
fi

if mt_moatd_alive; then
	mt_pass "moatd still runs"
else
	mt_fail "moatd died" "$MT_T/moatd.err"
fi
mt_finish
