#!/bin/bash
# t_deny.sh - the built-in deny sets: metadata, loopback, internal ranges,
# every spelling of them, names that resolve to them, DNS rebinding.
#
#   cli: rawclient.py / curl / socks5.py --> moat: moatd 10.200.0.1
#        moat's namespace can reach (and moatd must not):
#          127.0.0.1:80, [::1]:80        "loop" canary (origin.py)
#          169.254.169.254, 169.254.10.10, fd00:ec2::254 :80   "meta"
#          10.66.0.10, fd66::10 :80                            "lan"
#        net: dns.py answers *.wild.test names with those addresses
#   (the full drawing is at the top of lib.sh)
#
# Every blocked target is checked twice: moatd's answer (403 with the
# reason, or SOCKS5 reply 0x02) and the canary's log (it received nothing,
# not even a TCP connection).  The policy allows "*.wild.test" and opens
# 203.0.113.0/24 with allow_private; a wildcard must never open the deny
# sets.  At the end moatd restarts with 169.254.0.0/16 and 10.66.0.0/24 in
# allow_private: the internal host opens, the metadata address does not.

. "$(dirname "$0")/lib.sh"

mt_init
mt_need_moatd
mt_world
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_moatd_start "$conf"
i=0

# want "CODE:REASON|CODE:REASON" -> PASS/FAIL line for a rawclient report.
raw_verdict()
{
	local msg=$1 n=$2 want=$3 got
	got="$(mt_kv "$n" status):$(mt_kv "$n" header_x_moat_reason)"
	case "|$want|" in
	*"|$got|"*) mt_pass "$msg: $got" ;;
	*) mt_fail "$msg: got '$got', want $want" "$MT_T/$n.kv" \
	    "$MT_T/moatd.err" ;;
	esac
}

# deny_http HOST WANT CANARY...: absolute-form GET for HOST.
deny_http()
{
	local host=$1 want=$2 n
	shift 2
	i=$((i + 1))
	n=dh$i
	mt_mark
	mt_raw "$n" --tcp "$MT_HTTP" --timeout 3 --stop-after-response \
	    --send "GET http://$host/latest/meta-data/ HTTP/1.1\r\nHost: $host\r\n\r\n"
	raw_verdict "GET http://$host/" "$n" "$want"
	mt_untouched "GET http://$host/" "$@"
}

# deny_connect HOST WANT CANARY...: CONNECT HOST:80.
deny_connect()
{
	local host=$1 want=$2 n
	shift 2
	i=$((i + 1))
	n=dc$i
	mt_mark
	mt_raw "$n" --tcp "$MT_HTTP" --timeout 3 --stop-after-response \
	    --send "CONNECT $host:80 HTTP/1.1\r\nHost: $host:80\r\n\r\n"
	raw_verdict "CONNECT $host:80" "$n" "$want"
	mt_untouched "CONNECT $host:80" "$@"
}

# deny_socks ATYP DST CANARY...: SOCKS5 CONNECT DST:80 -> reply 0x02.
deny_socks()
{
	local atyp=$1 dst=$2 n
	shift 2
	i=$((i + 1))
	n=ds$i
	mt_mark
	mt_socks "$n" --tcp "$MT_SOCKS" --atyp "$atyp" --dst "$dst" --port 80
	mt_eq "SOCKS5 $atyp $dst: reply" 0x02 "$(mt_kv "$n" reply)" \
	    "$MT_T/$n.kv" "$MT_T/moatd.err"
	mt_untouched "SOCKS5 $atyp $dst" "$@"
}

# --- metadata, every spelling --------------------------------------------------
M=403:metadata
M_OR_400="403:metadata|400:bad-request"
for h in 169.254.169.254 2852039166 0xa9fea9fe 0251.0376.0251.0376 \
    '[::ffff:169.254.169.254]' metadata.google.internal \
    0xA9.0xFE.0xA9.0xFE 169.254.43518 169.16689662 169.254.169.254. \
    '[::ffff:a9fe:a9fe]' '[fd00:ec2::254]' METADATA.Google.Internal. \
    metadata.google.internal.; do
	deny_http "$h" "$M" meta
done
for h in '%31%36%39.254.169.254' '[::ffff:169.254.169.254%25eth0]' \
    '0xa9fea9fe.'; do
	deny_http "$h" "$M_OR_400" meta
done
for h in 2852039166 0xa9fea9fe 0251.0376.0251.0376 \
    '[::ffff:169.254.169.254]' metadata.google.internal '[fd00:ec2::254]'; do
	deny_connect "$h" "$M" meta
done
deny_socks ipv4 169.254.169.254 meta
deny_socks ipv6 ::ffff:169.254.169.254 meta
deny_socks ipv6 fd00:ec2::254 meta
deny_socks domain 2852039166 meta
deny_socks domain 0251.0376.0251.0376 meta
deny_socks domain metadata.google.internal meta

# --- loopback and the internal host ----------------------------------------------
P=403:private-address
for h in 127.0.0.1 127.1 0x7f.1 0x7f000001 2130706433 017700000001 \
    0177.0.0.1 '[::1]' '[0:0:0:0:0:0:0:1]' '[::ffff:127.0.0.1]' \
    '[::ffff:7f00:1]' localhost LOCALHOST. foo.localhost 0.0.0.0 0 '[::]'; do
	deny_http "$h" "$P" loop
done
for h in 10.66.0.10 0x0a42000a 172097546 012.0102.0.012 '[fd66::10]' \
    '[::ffff:10.66.0.10]' '[64:ff9b::a42:a]' '[2002:a42:a::1]' \
    '[::a42:a]' 10.66.0.1 169.254.10.10; do
	deny_http "$h" "$P" lan meta
done
for h in 127.1 0x7f.1 '[::1]' localhost 10.66.0.10; do
	deny_connect "$h" "$P" loop lan
done
deny_socks ipv4 127.0.0.1 loop
deny_socks ipv6 ::1 loop
deny_socks domain 127.1 loop
deny_socks domain localhost loop
deny_socks ipv4 10.66.0.10 lan
deny_socks ipv6 fd66::10 lan

n=$(mt_jl "$MT_T/dns.log" count 'name~^metadata\.google\.internal$')
mt_eq "moatd never asked DNS for metadata.google.internal" 0 "$n" \
    "$MT_T/dns.log"
n=$(mt_jl "$MT_T/dns.log" count 'name~localhost$')
mt_eq "moatd never asked DNS for *localhost" 0 "$n" "$MT_T/dns.log"

# --- allowed names that resolve into the deny sets ---------------------------------
# name reason canary...
while read -r name reason canaries; do
	i=$((i + 1))
	mt_mark
	mt_curl "w$i" -x "http://$MT_HTTP" "http://$name/"
	mt_denied "$name (allowed by *.wild.test)" "w$i" 403 "$name" "$reason"
	# shellcheck disable=SC2086
	mt_untouched "$name" $canaries
	n=$(mt_new dns | mt_jl /dev/stdin count "name=$name")
	if [ "$n" -ge 1 ]; then
		mt_pass "$name was resolved, so its address was what got denied"
	else
		mt_fail "$name was not resolved: the address check was not exercised" \
		    "$MT_T/dns.log"
	fi
done <<-'EOF'
	loop.wild.test private-address loop
	loop6.wild.test private-address loop
	ten.wild.test private-address lan
	ll.wild.test private-address meta
	meta.wild.test metadata meta
	meta6.wild.test metadata meta
	ula.wild.test private-address lan
	fe80.wild.test private-address loop lan meta
	mapped.wild.test private-address lan
EOF
for name in loop.wild.test meta.wild.test ten.wild.test; do
	deny_socks domain "$name" loop meta lan
	deny_connect "$name" "403:private-address|403:metadata" loop meta lan
done

# One allowed and one loopback address: the loopback one is never dialled.
mt_mark
mt_curl mx -x "http://$MT_HTTP" http://mixed.wild.test/mixed
mt_in_set "mixed.wild.test (203.0.113.10 + 127.0.0.1)" "$MT_CODE" "200 403"
mt_untouched "mixed.wild.test" loop

# --- DNS rebinding ------------------------------------------------------------------
# First answer: the origin (TTL 1); every later one: an internal address.
mt_mark
mt_curl r1 -x "http://$MT_HTTP" http://rebind.wild.test/rebind-1
mt_allowed "rebinding, 1st request (203.0.113.10)" r1
mt_curl rc1 -p -x "http://$MT_HTTP" http://rebind-c.wild.test:8080/rc-1
mt_allowed "rebinding over CONNECT, 1st request" rc1
mt_socks rs1 --tcp "$MT_SOCKS" --atyp domain --dst rebind-s.wild.test \
    --port 80 --http-get /rs-1 --http-host rebind-s.wild.test
mt_eq "rebinding over SOCKS5, 1st request" 200 "$(mt_kv rs1 http_status)" \
    "$MT_T/rs1.kv"
for name in rebind.wild.test rebind-c.wild.test rebind-s.wild.test; do
	n=$(mt_new dns | mt_jl /dev/stdin count "name=$name" type=A)
	mt_eq "$name looked up once for its request (no second lookup)" 1 "$n" \
	    "$MT_T/dns.log"
done
mt_untouched "rebinding, 1st requests" loop lan
# Past the TTL of 1 s, so moatd must ask again.
sleep 1.5
mt_mark
mt_curl r2 -x "http://$MT_HTTP" http://rebind.wild.test/rebind-2
mt_denied "rebinding, 2nd request (now 127.0.0.1)" r2 403 rebind.wild.test \
    private-address
mt_curl rc2 -p -x "http://$MT_HTTP" http://rebind-c.wild.test:8080/rc-2
mt_denied "rebinding over CONNECT, 2nd request" rc2 403 rebind-c.wild.test \
    private-address
mt_socks rs2 --tcp "$MT_SOCKS" --atyp domain --dst rebind-s.wild.test --port 80
mt_eq "rebinding over SOCKS5, 2nd request (now 10.66.0.10)" 0x02 \
    "$(mt_kv rs2 reply)" "$MT_T/rs2.kv"
for name in rebind.wild.test rebind-c.wild.test rebind-s.wild.test; do
	n=$(mt_new dns | mt_jl /dev/stdin count "name=$name" type=A)
	if [ "$n" -ge 1 ]; then
		mt_pass "$name was asked again after its TTL"
	else
		mt_fail "$name was not asked again after its TTL of 1 s (cached too long?): the rebinding step was not exercised" \
		    "$MT_T/dns.log"
	fi
done
mt_untouched "rebinding, 2nd requests" loop lan origin

# --- allow_private opens a range, never the metadata address in it ----------------
st=""
mt_moatd_stop
st=$MT_WAIT_RC
mt_eq "moatd exits 0 on SIGTERM" 0 "$st" "$MT_T/moatd.err"
mt_conf_set "$conf" policy.allow_private \
    '["203.0.113.0/24", "2001:db8::/32", "169.254.0.0/16", "10.66.0.0/24"]'
mt_moatd_start "$conf"
mt_mark
mt_curl o1 -x "http://$MT_HTTP" http://ll.wild.test/opened
mt_allowed "allow_private 169.254.0.0/16 opens 169.254.10.10" o1
mt_eq "...and the link-local host got it" 169.254.10.10:80 \
    "$(mt_new meta | mt_jl /dev/stdin get local event=request path=/opened)"
mt_curl o2 -x "http://$MT_HTTP" http://ten.wild.test/opened
mt_allowed "allow_private 10.66.0.0/24 opens 10.66.0.10" o2
mt_mark
mt_curl o3 -x "http://$MT_HTTP" http://meta.wild.test/latest/meta-data/
mt_denied "169.254.169.254 stays denied inside an opened /16" o3 403 \
    meta.wild.test metadata
mt_curl o4 -x "http://$MT_HTTP" http://169.254.169.254/latest/meta-data/
mt_denied "169.254.169.254 by address stays denied" o4 403 169.254.169.254 \
    metadata
mt_curl o5 -x "http://$MT_HTTP" http://loop.wild.test/
mt_denied "loopback stays denied" o5 403 loop.wild.test private-address
mt_untouched "metadata and loopback with a wider allow_private" meta loop

if mt_moatd_alive; then
	mt_pass "moatd still runs"
else
	mt_fail "moatd died" "$MT_T/moatd.err"
fi
mt_finish
