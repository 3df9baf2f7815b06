#!/bin/bash
# t_world.sh - self-test of the test world (needs no moatd).
#
#   cli 10.200.0.2 ---- moat 10.200.0.1 (no forwarding) ---- net: origin .10
#                        | 127.0.0.1 loop canary              .12, DNS .53,
#                        |                                    .11 refuses
#                        +---- meta 169.254.169.254, 169.254.10.10
#                        +---- lan 10.66.0.10
#   (the full drawing is at the top of lib.sh)
#
# Shows that the world is what the scenarios assume: from moat's namespace
# the origins (IPv4, IPv6, TLS), the DNS server (UDP, TCP, both families,
# its sequence/rcode/drop forms, checked with glibc's resolver too), the
# metadata server, the internal host and the loopback canary all answer and
# log what they got; from the sandbox's namespace only moat's namespace
# answers, and nothing else receives a packet; helpers signal readiness, die
# on their own, and clean-up removes everything even when a run is killed.

. "$(dirname "$0")/lib.sh"

if [ -n "${MT_WORLD_CHILD:-}" ]; then
	# Child mode (see the clean-up check at the end): build a world,
	# say ready on fd 3, wait to be killed.
	mt_init
	exec 4>&3 3>&-
	echo "$MT_TAG $MT_T" > "$MT_WORLD_CHILD"
	mt_topology
	mt_origin kid net 203.0.113.10:80 || exit 1
	echo "$MT_RPID_kid" >> "$MT_WORLD_CHILD"
	echo ready >&4
	exec 4>&-
	sleep 60 &
	wait $!
	exit 0
fi

mt_init openssl getent
mt_world

# --- the world's shape ------------------------------------------------
n=$(ip netns list | grep -c "^$MT_TAG-")
mt_eq "five namespaces with this run's tag" 5 "$n"
fwd=$(mt_in moat sysctl -n net.ipv4.ip_forward net.ipv6.conf.all.forwarding |
    tr '\n' ' ')
mt_eq "moat's namespace does not forward" "0 0 " "$fwd"

# --- DNS, asked from moat's namespace ------------------------------------
dq()
{
	mt_in moat "$MT_PY" "$MT_HELPERS/dnsq.py" "$@" 2>&1 | tr '\n' ' '
}
mt_eq "DNS/UDP A origin.test" "rcode=NOERROR A 203.0.113.10 ttl=1 " \
    "$(dq 203.0.113.53 origin.test A)"
mt_eq "DNS/UDP AAAA origin.test" \
    "rcode=NOERROR AAAA 2001:db8::10 ttl=1 " \
    "$(dq 203.0.113.53 origin.test AAAA)"
mt_eq "DNS/TCP A origin.test" "rcode=NOERROR A 203.0.113.10 ttl=1 " \
    "$(dq --tcp 203.0.113.53 origin.test A)"
mt_eq "DNS over IPv6 (UDP)" "rcode=NOERROR A 203.0.113.10 ttl=1 " \
    "$(dq '[2001:db8::53]' ORIGIN.Test. A)"
mt_eq "DNS over IPv6 (TCP)" "rcode=NOERROR A 203.0.113.12 ttl=1 " \
    "$(dq --tcp '[2001:db8::53]' other.test A)"
mt_eq "DNS unknown name -> NXDOMAIN" "rcode=NXDOMAIN " \
    "$(dq 203.0.113.53 unknown.test A)"
mt_eq "DNS wildcard x.y.wild.test" "rcode=NOERROR A 203.0.113.10 ttl=1 " \
    "$(dq 203.0.113.53 x.y.wild.test A)"
mt_eq "DNS wildcard does not cover its own apex" "rcode=NXDOMAIN " \
    "$(dq 203.0.113.53 w2.test A)"
mt_eq "DNS wildcard *.w2.test" "rcode=NOERROR A 203.0.113.12 ttl=1 " \
    "$(dq 203.0.113.53 a.w2.test A)"
mt_eq "DNS exact entry beats the wildcard" \
    "rcode=NOERROR A 127.0.0.1 ttl=1 " "$(dq 203.0.113.53 loop.wild.test A)"
mt_eq "DNS known name, other type -> no answer" "rcode=NOERROR " \
    "$(dq 203.0.113.53 v6only.test A)"
mt_eq "DNS sequence, 1st answer" "rcode=NOERROR A 203.0.113.10 ttl=1 " \
    "$(dq 203.0.113.53 rebind.wild.test A)"
mt_eq "DNS sequence, 2nd answer" "rcode=NOERROR A 127.0.0.1 ttl=1 " \
    "$(dq --tcp 203.0.113.53 rebind.wild.test A)"
mt_eq "DNS sequence, last answer repeats" \
    "rcode=NOERROR A 127.0.0.1 ttl=1 " "$(dq 203.0.113.53 rebind.wild.test A)"
mt_eq "DNS rcode form" "rcode=SERVFAIL " \
    "$(dq 203.0.113.53 servfail.wild.test A)"
out=$(dq 203.0.113.53 drop.wild.test A)
case $out in
error=*) mt_pass "DNS drop form: no answer ($out)" ;;
*) mt_fail "DNS drop form: expected no answer, got '$out'" ;;
esac
n=$(mt_jl "$MT_T/dns.log" count name=rebind.wild.test type=A)
mt_eq "DNS log has one line per query (rebind.wild.test A)" 3 "$n" \
    "$MT_T/dns.log"
mt_eq "DNS log records the answer" "A 127.0.0.1 1" \
    "$(mt_jl "$MT_T/dns.log" get answers name=rebind.wild.test |
    tr -d '[]"')"

# glibc's resolver is an independent client of dns.py: `ip netns exec`
# bind-mounts /etc/netns/NS/resolv.conf over /etc/resolv.conf.
ns=$(mt_ns moat)
mkdir -p "/etc/netns/$ns" && MT_ETC_NETNS="$MT_ETC_NETNS $ns"
printf 'nameserver 203.0.113.53\noptions timeout:1 attempts:1\n' \
    > "/etc/netns/$ns/resolv.conf"
mt_eq "glibc resolves origin.test through dns.py" "203.0.113.10" \
    "$(mt_in moat getent ahostsv4 origin.test | awk 'NR == 1 { print $1 }')"
mt_eq "glibc resolves v6only.test (AAAA) through dns.py" "2001:db8::10" \
    "$(mt_in moat getent ahostsv6 v6only.test | awk 'NR == 1 { print $1 }')"
mt_in moat getent hosts unknown.test >/dev/null
mt_eq "glibc: unknown.test does not resolve (exit 2)" 2 $?

# --- origins, from moat's namespace ---------------------------------------
mc()
{
	local n=$1
	shift
	rm -f "$MT_T/$n.hdr" "$MT_T/$n.body"
	MT_CODE=$(mt_in moat curl -sS --max-time 5 --connect-timeout 2 \
	    -D "$MT_T/$n.hdr" -o "$MT_T/$n.body" -w '%{http_code}' "$@" \
	    2>"$MT_T/$n.err")
	MT_RC=$?
}
mt_mark
mc o1 'http://203.0.113.10/a/b?x=1'
mt_eq "origin answers GET /a/b?x=1" 200 "$MT_CODE" "$MT_T/o1.err"
mt_eq "origin echoes the path" /a/b \
    "$("$MT_PY" -c 'import json,sys; print(json.load(sys.stdin)["path"])' \
    < "$MT_T/o1.body" 2>/dev/null)"
n=$(mt_new origin | mt_jl /dev/stdin count event=request path=/a/b \
    query=x=1 method=GET host=203.0.113.10)
mt_eq "origin logged the request (method, path, query, host)" 1 "$n" \
    "$MT_T/origin.log"

mc o2 --resolve origin.test:80:203.0.113.10 http://origin.test/one \
    http://origin.test/two
c1=$(mt_jl "$MT_T/origin.log" get conn event=request path=/one)
c2=$(mt_jl "$MT_T/origin.log" get conn event=request path=/two)
s2=$(mt_jl "$MT_T/origin.log" get seq event=request path=/two)
if [ -n "$c1" ] && [ "$c1" = "$c2" ] && [ "$s2" = 2 ]; then
	mt_pass "origin keeps a connection alive (conn $c1, 2 requests)"
else
	mt_fail "origin keep-alive: /one on conn '$c1', /two on '$c2' seq '$s2'" \
	    "$MT_T/origin.log"
fi

head -c 100000 /dev/urandom > "$MT_T/post.bin"
sum=$(sha256sum < "$MT_T/post.bin" | cut -d' ' -f1)
mc p1 --data-binary @"$MT_T/post.bin" http://203.0.113.10/post-cl
mt_eq "origin reads a Content-Length body intact" "$sum" \
    "$(mt_jl "$MT_T/origin.log" get body_sha256 path=/post-cl)"
mc p2 -H 'Transfer-Encoding: chunked' --data-binary @"$MT_T/post.bin" \
    http://203.0.113.10/post-chunked
mt_eq "origin reads a chunked body intact" "$sum" \
    "$(mt_jl "$MT_T/origin.log" get body_sha256 path=/post-chunked)"
mt_eq "origin logs the chunked body's length" 100000 \
    "$(mt_jl "$MT_T/origin.log" get body_len path=/post-chunked)"

mc b1 http://203.0.113.10/bytes/1000000
mt_eq "origin /bytes/1000000 sends that many bytes" 1000000 \
    "$(stat -c %s "$MT_T/b1.body" 2>/dev/null)"
mt_eq "origin logs a complete /bytes answer" true \
    "$(mt_jl "$MT_T/origin.log" get complete event=sent)"
mc b2 http://203.0.113.10/status/204
mt_eq "origin /status/204" 204 "$MT_CODE"

mc v6 'http://[2001:db8::10]:8080/v6'
mt_eq "origin answers on IPv6 [2001:db8::10]:8080" 200 "$MT_CODE" \
    "$MT_T/v6.err"
mt_eq "origin logs the IPv6 local address" '[2001:db8::10]:8080' \
    "$(mt_jl "$MT_T/origin.log" get local event=request path=/v6)"
mc tls --cacert "$MT_T/origin.crt" --resolve origin.test:443:203.0.113.10 \
    https://origin.test/tls
mt_eq "origin answers HTTPS for origin.test (verified)" 200 "$MT_CODE" \
    "$MT_T/tls.err"
mc p9090 http://203.0.113.10:9090/p
mt_eq "origin answers on 203.0.113.10:9090" 200 "$MT_CODE"
mc oth http://203.0.113.12/p
mt_eq "origin answers on 203.0.113.12:80" 200 "$MT_CODE"
mc ip20 http://203.0.113.20/p
mt_eq "origin answers on 203.0.113.20:80" 200 "$MT_CODE"
mc ip20v6 'http://[2001:db8::20]/p'
mt_eq "origin answers on [2001:db8::20]:80" 200 "$MT_CODE"
mc ref http://203.0.113.11/
mt_eq "203.0.113.11 refuses connections (curl exit 7)" 7 "$MT_RC" \
    "$MT_T/ref.err"

# The canaries can see a request that is not HTTP at all.
mt_in moat "$MT_PY" "$MT_HELPERS/rawclient.py" --tcp 203.0.113.10:80 \
    --send 'garbage\x00\r\n' --shut-wr --timeout 2 > "$MT_T/g.kv"
n=$(mt_jl "$MT_T/origin.log" count event=garbage)
mt_eq "origin logs bytes that are not a request" 1 "$n" "$MT_T/origin.log"

# --- metadata, the internal host, loopback: reachable from moat only --------
mc m1 http://169.254.169.254/latest/meta-data/
mt_eq "metadata server answers in moat's namespace" 200 "$MT_CODE" \
    "$MT_T/m1.err"
n=$(mt_jl "$MT_T/meta.log" count event=request path=/latest/meta-data/)
mt_eq "metadata server logs the request" 1 "$n" "$MT_T/meta.log"
mc m2 http://169.254.10.10/x
mt_eq "link-local 169.254.10.10 answers in moat's namespace" 200 "$MT_CODE"
mc m3 'http://[fd00:ec2::254]/x'
mt_eq "metadata [fd00:ec2::254] answers in moat's namespace" 200 "$MT_CODE"
mc l1 http://10.66.0.10/x
mt_eq "internal host 10.66.0.10 answers in moat's namespace" 200 "$MT_CODE"
mc l2 'http://[fd66::10]/x'
mt_eq "internal host [fd66::10] answers in moat's namespace" 200 "$MT_CODE"
mc lo1 http://127.0.0.1/x
mt_eq "loopback canary 127.0.0.1:80 answers in moat's namespace" 200 \
    "$MT_CODE"
mc lo2 'http://[::1]/x'
mt_eq "loopback canary [::1]:80 answers in moat's namespace" 200 "$MT_CODE"
mc lo3 http://127.0.0.1:8080/x
mt_eq "loopback canary 127.0.0.1:8080 answers in moat's namespace" 200 \
    "$MT_CODE"

# --- from the sandbox: only moat's namespace ------------------------------
mt_origin standin moat 10.200.0.1:3128 '[fd00:200::1]:3128' ||
    mt_error "stand-in listener did not start"
mt_curl s1 http://10.200.0.1:3128/standin
mt_eq "sandbox reaches moat's namespace (10.200.0.1:3128)" 200 "$MT_CODE" \
    "$MT_T/s1.err"
mt_curl s2 'http://[fd00:200::1]:3128/standin'
mt_eq "sandbox reaches moat's namespace ([fd00:200::1]:3128)" 200 \
    "$MT_CODE" "$MT_T/s2.err"
mt_mark
# Dropped packets make each attempt wait for its connect timeout, so the
# attempts run side by side.
i=0
pids=""
urls="http://203.0.113.10/ http://203.0.113.12/ http://203.0.113.53/
    http://169.254.169.254/ http://169.254.10.10/ http://10.66.0.10/
    http://[2001:db8::10]/ http://[fd00:ec2::254]/ http://[fd66::10]/
    http://10.200.0.1:80/ http://127.0.0.1/"
for url in $urls; do
	i=$((i + 1))
	(
		mt_curl "u$i" --connect-timeout 1 -g "$url"
		echo "$MT_CODE $MT_RC" > "$MT_T/u$i.res"
	) &
	pids="$pids $!"
done
for p in $pids; do
	wait "$p"
done
i=0
for url in $urls; do
	i=$((i + 1))
	read -r code rc < "$MT_T/u$i.res"
	if [ "$code" = 000 ] && [ "$rc" -ne 0 ]; then
		mt_pass "sandbox cannot reach $url (curl exit $rc)"
	else
		mt_fail "sandbox reached $url (HTTP $code, curl exit $rc)"
	fi
done
out=$(mt_in cli "$MT_PY" "$MT_HELPERS/dnsq.py" 203.0.113.53 origin.test A)
case $out in
error=*) mt_pass "sandbox cannot query the DNS server" ;;
*) mt_fail "sandbox got a DNS answer: $out" ;;
esac
mt_untouched "sandbox traffic" origin dns meta lan loop

# --- helpers: readiness failure, bounded life -----------------------------
t0=$(date +%s)
if mt_origin badbind net 192.0.2.1:80 >/dev/null 2>&1; then
	mt_fail "a helper that cannot bind reported ready"
else
	mt_pass "a helper that cannot bind is reported at once ($(($(date +%s) - t0)) s)"
fi
mt_bg shortlived net "$MT_PY" "$MT_HELPERS/origin.py" --listen \
    203.0.113.10:81 --lifetime 1 --ready-fd 3 ||
    mt_error "short-lived origin did not start"
mt_wait_exit "$MT_PID_shortlived" 40
mt_eq "a helper exits by itself after --lifetime" 0 "$MT_WAIT_RC"

# --- clean-up when a run is killed ----------------------------------------
info=$MT_T/child.info
if MT_WORLD_CHILD=$info mt_bg child - bash "$0"; then
	{ read -r ctag ct; read -r cpid; } < "$info"
	n=$(ip netns list | grep -c "^$ctag-")
	mt_eq "child run built its namespaces" 5 "$n"
	kill -TERM "$MT_RPID_child"
	mt_wait_exit "$MT_PID_child" 100
	mt_eq "child run killed with SIGTERM exits 143" 143 "$MT_WAIT_RC" \
	    "$MT_T/child.out"
	n=$(ip netns list | grep -c "^$ctag-")
	mt_eq "its namespaces are gone" 0 "$n"
	if kill -0 "$cpid" 2>/dev/null; then
		mt_fail "its origin (pid $cpid) still runs"
	else
		mt_pass "its origin is gone"
	fi
	rm -rf "$ct"
else
	mt_fail "child run did not start" "$MT_T/child.out" "$MT_T/child.err"
	# Remove what it made (this run's own child), whatever happened.
	read -r ctag ct < "$info" 2>/dev/null
	kill -TERM "$MT_RPID_child" 2>/dev/null
	mt_wait_exit "$MT_PID_child" 100
	for ns in $(ip netns list | awk -v t="${ctag:-none}-" \
	    'index($1, t) == 1 { print $1 }'); do
		ip netns del "$ns"
	done
	[ -n "${ct:-}" ] && rm -rf "$ct"
fi

mt_finish
