#!/bin/bash
# t_dns_budget.sh - the budget of new names under wildcards
# (limits.dns_wildcard_names): what resolving such names can carry out.
#
#   cli: dnsprobe.py --> moat: moatd DNS 10.200.0.1:53 (sandbox it-http)
#   cli: curl -x 10.200.0.1:3128 (it-http), :8888 http+socks5 (it-mixed)
#   cli: TCP to 203.0.113.10:80, redirected (nft, set up here) to
#        moatd's transparent listener 10.200.0.1:15001 (it-tp)
#        moatd --> net: dns.py 203.0.113.53 (logs every query it gets)
#   (the full drawing is at the top of lib.sh)
#
# Under "*.wild.test" a sandbox chooses the labels, and every name moatd
# resolves goes to the upstream DNS server.  With a budget of 5: five new
# names resolve, the sixth is refused (DNS: REFUSED; HTTP: 429; CONNECT:
# 429; SOCKS5: 0x02; transparent, named by its Host: closed), reason
# dns-budget in the audit, and the upstream server never sees it; names
# already resolved still work; names a rule spells out are not counted;
# another wildcard rule has its own budget; the DNS listener and the proxy
# of one sandbox share one budget.

. "$(dirname "$0")/lib.sh"

mt_init
mt_need_moatd
mt_world
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_conf_set "$conf" listen.+ '{"proto": "dns", "address": "10.200.0.1:53", "sandbox": "it-http"}'
mt_conf_set "$conf" listen.+ '{"proto": "transparent", "address": "10.200.0.1:15001", "sandbox": "it-tp"}'
mt_conf_set "$conf" policy.rules.+ '{"name": "w2", "action": "allow", "ports": [80], "hosts": ["*.w2.test"]}'
mt_conf_set "$conf" limits '{"dns_wildcard_names": 5}'
mt_moatd_start "$conf"
A=$MT_T/audit.log
H=(-x "http://$MT_HTTP")
M=(-x "http://$MT_MIXED")
# Labels as an exfiltrating workload would write them.
D=6d6f61742d73656372657421

probe()	# NAME ARGS...: dnsprobe.py in the sandbox, output in $MT_T/NAME.out
{
	local n=$1
	shift
	mt_in cli "$MT_PY" "$MT_HELPERS/dnsprobe.py" "$@" > "$MT_T/$n.out" \
	    2>"$MT_T/$n.err"
}
has()	# MESSAGE NAME LINE: NAME.out has LINE
{
	if grep -qxF -- "$3" "$MT_T/$2.out"; then
		mt_pass "$1 ($3)"
	else
		mt_fail "$1: no '$3' in: $(tr '\n' ' ' < "$MT_T/$2.out")" \
		    "$MT_T/moatd.err"
	fi
}
asked()	# NAME: how many queries dns.py logged for NAME since mt_mark
{
	mt_new dns | mt_jl /dev/stdin count name="$1"
}

# --- the DNS listener -------------------------------------------------------
mt_mark
for i in 0 1 2 3 4; do
	probe d$i 10.200.0.1 "$D$i.wild.test" A
	has "new name $((i + 1)) of 5 under *.wild.test resolves" d$i \
	    "A 203.0.113.10 ttl=1"
done
probe d5 10.200.0.1 "${D}5.wild.test" A
has "the 6th new name is refused" d5 "rcode=REFUSED"
mt_eq "the upstream DNS server got the 5th name" 1 \
    "$([ "$(asked "${D}4.wild.test")" -ge 1 ] && echo 1)"
mt_eq "the upstream DNS server never saw the 6th" 0 "$(asked "${D}5.wild.test")"
mt_log_eq "audit: reason dns-budget" dns-budget \
    "$A" get reason event=dns host="${D}5.wild.test"
mt_log_eq "audit: verdict deny" deny \
    "$A" get verdict event=dns host="${D}5.wild.test"
mt_log_eq "audit: the wildcard rule named" origin \
    "$A" get rule event=dns host="${D}5.wild.test"
mt_log_eq "audit: the detail names the key" 1 \
    "$A" count event=dns host="${D}5.wild.test" \
    detail~limits.dns_wildcard_names
probe d5b --tcp 10.200.0.1 "${D}5.wild.test" AAAA
has "...over TCP and for AAAA too" d5b "rcode=REFUSED"
probe r0 10.200.0.1 "${D}0.wild.test" A
has "a name already resolved still resolves" r0 "A 203.0.113.10 ttl=1"
probe e1 10.200.0.1 origin.test A
has "a name the rule spells out is not counted" e1 "A 203.0.113.10 ttl=1"
probe w1 10.200.0.1 "${D}0.w2.test" A
has "another wildcard rule has its own budget" w1 "A 203.0.113.12 ttl=1"
mt_eq "the upstream DNS server never saw the 6th (end of DNS part)" 0 \
    "$(asked "${D}5.wild.test")"

# --- the HTTP proxy of the same sandbox: the same budget ------------------
mt_curl h0 "${H[@]}" "http://${D}0.wild.test/h0"
mt_allowed "HTTP to a name its DNS query resolved" h0
mt_mark
mt_curl h6 "${H[@]}" "http://${D}6.wild.test/h6"
mt_denied "HTTP to a 7th new name: refused, the budget is the sandbox's" \
    h6 429 "${D}6.wild.test" dns-budget origin
mt_curl h7 -p "${H[@]}" "http://${D}7.wild.test:8080/h7"
mt_eq "CONNECT to a new name: 429" 429 "$MT_CONNECT" "$MT_T/h7.hdr" \
    "$MT_T/h7.err"
mt_log_eq "audit: the CONNECT's reason" dns-budget \
    "$A" get reason proto=connect host="${D}7.wild.test"
for n in "${D}6.wild.test" "${D}7.wild.test"; do
	mt_eq "the upstream DNS server never saw $n" 0 "$(asked "$n")"
done
mt_untouched "nothing reached an origin for refused names" origin

# --- a sandbox without a DNS listener: HTTP and SOCKS5 resolve names too -----
mt_mark
for i in 0 1 2 3 4; do
	mt_curl m$i "${M[@]}" "http://m$i$D.wild.test/m$i"
	mt_allowed "http+socks5 sandbox, HTTP: new name $((i + 1)) of 5" m$i
done
mt_socks s5 --tcp "$MT_MIXED" --atyp domain --dst "m5$D.wild.test" \
    --port 80 --http-get /s5 --http-host "m5$D.wild.test"
mt_eq "SOCKS5 to the 6th new name: reply 0x02" 0x02 "$(mt_kv s5 reply)" \
    "$MT_T/s5.kv"
mt_log_eq "audit: the SOCKS5 refusal's reason" dns-budget \
    "$A" get reason proto=socks5 host="m5$D.wild.test"
mt_curl m6 "${M[@]}" "http://m6$D.wild.test/m6"
mt_denied "HTTP to the 7th new name" m6 429 "m6$D.wild.test" dns-budget origin
for n in "m5$D.wild.test" "m6$D.wild.test"; do
	mt_eq "the upstream DNS server never saw $n" 0 "$(asked "$n")"
done
mt_socks s0 --tcp "$MT_MIXED" --atyp domain --dst "m0$D.wild.test" \
    --port 80 --http-get /s0 --http-host "m0$D.wild.test"
mt_eq "SOCKS5 to a name already resolved: reply 0x00" 0x00 \
    "$(mt_kv s0 reply)" "$MT_T/s0.kv"
mt_eq "...and the GET through it" 200 "$(mt_kv s0 http_status)"
mt_curl o1 "${M[@]}" http://origin.test/o1
mt_allowed "a name the rule spells out is not counted" o1

# --- the transparent listener: a name from the HTTP Host is resolved too -------
# (The redirect a sandbox gateway makes, as in t_transparent.sh.)
if command -v nft >/dev/null 2>&1 && mt_in moat nft -f - <<'EOF2'
table inet mt_redirect {
	chain pre {
		type nat hook prerouting priority -100;
		iifname "c0" ip daddr 10.200.0.1 return
		iifname "c0" meta l4proto tcp redirect to :15001
	}
}
EOF2
then
	tcp()	# NAME HOSTHDR: GET to 203.0.113.10:80 with that Host; status=
	{
		mt_in cli "$MT_PY" - "$2" > "$MT_T/$1.kv" 2>"$MT_T/$1.err" <<'EOF2'
import socket, sys
s = socket.create_connection(("203.0.113.10", 80), timeout=5)
s.sendall(("GET /tp HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n"
           % sys.argv[1]).encode())
data = b""
try:
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
except OSError as e:
    print("error=%s" % e)
line = data.split(b"\r\n", 1)[0].decode("latin-1")
print("status=%s" % (line.split(" ")[1] if " " in line else "none"))
EOF2
	}
	mt_mark
	for i in 0 1 2 3 4; do
		tcp t$i "t$i$D.wild.test"
		mt_eq "transparent, Host of new name $((i + 1)) of 5: answered" \
		    200 "$(mt_kv t$i status)" "$MT_T/t$i.err"
	done
	tcp t5 "t5$D.wild.test"
	mt_eq "transparent, Host of the 6th new name: closed unanswered" none \
	    "$(mt_kv t5 status)" "$MT_T/t5.err"
	mt_log_eq "audit: the transparent refusal's reason" dns-budget \
	    "$A" get reason proto=transparent host="t5$D.wild.test"
	mt_eq "the upstream DNS server never saw t5$D.wild.test" 0 \
	    "$(asked "t5$D.wild.test")"
else
	echo "SKIP: the transparent part needs nft"
fi

mt_jl "$A" count >/dev/null
mt_eq "the audit log parses line by line" 0 "$?"
if mt_moatd_alive; then
	mt_pass "moatd survived"
else
	mt_fail "moatd died" "$MT_T/moatd.err"
fi
mt_finish
