#!/bin/bash
# t_upstream.sh - names that do not resolve, upstreams that fail.
#
#   cli: curl -x 10.200.0.1:3128 --> moat: moatd --> net: dns.py 203.0.113.53
#                                                  \-> 203.0.113.11 (refuses)
#                                                  \-> 203.0.113.99 (no host)
#                                                  \-> origin 203.0.113.10
#   (the full drawing is at the top of lib.sh)
#
# NXDOMAIN and SERVFAIL -> 403 or 502 with reason dns-failure; a DNS server
# that never answers -> an error within dns_ms; a refused connection -> 502
# upstream-unreachable; an address that never answers -> an error within
# connect_ms; a name with a refusing and a working address -> the working
# one is used.

. "$(dirname "$0")/lib.sh"

mt_init
mt_need_moatd
mt_world
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_conf_set "$conf" timeouts '{"dns_ms": 800, "connect_ms": 1000}'
mt_moatd_start "$conf"
P=(-x "http://$MT_HTTP")

# mt_failed MESSAGE NAME HOST "STATUSES" "REASONS": one PASS/FAIL line.
mt_failed()
{
	local msg=$1 n=$2 host=$3 codes=$4 reasons=$5 bad="" got
	case " $codes " in
	*" $MT_CODE "*) ;;
	*) bad="$bad status $MT_CODE (want one of $codes);" ;;
	esac
	got=$(mt_hdr "$n" X-Moat-Reason)
	case " $reasons " in
	*" $got "*) ;;
	*) bad="$bad X-Moat-Reason '$got' (want one of $reasons);" ;;
	esac
	if [ -s "$MT_T/$n.body" ]; then
		grep -qiF -- "$host" "$MT_T/$n.body" ||
		    bad="$bad body does not name $host;"
	fi
	if [ -z "$bad" ]; then
		mt_pass "$msg: $MT_CODE $got"
	else
		mt_fail "$msg:$bad" "$MT_T/$n.hdr" "$MT_T/$n.body" \
		    "$MT_T/$n.err" "$MT_T/moatd.err"
	fi
}

mt_curl nx "${P[@]}" http://nx.wild.test/
mt_failed "NXDOMAIN" nx nx.wild.test "403 502" dns-failure
n=$(mt_jl "$MT_T/dns.log" count name=nx.wild.test)
if [ "$n" -ge 1 ]; then
	mt_pass "moatd asked the configured server for nx.wild.test ($n queries)"
else
	mt_fail "moatd never asked 203.0.113.53 for nx.wild.test" "$MT_T/dns.log"
fi
mt_curl sf "${P[@]}" http://servfail.wild.test/
mt_failed "SERVFAIL" sf servfail.wild.test "403 502" dns-failure

t0=$(date +%s%N)
mt_curl dr "${P[@]}" http://drop.wild.test/
ms=$((($(date +%s%N) - t0) / 1000000))
mt_failed "DNS server never answers (dns_ms 800)" dr drop.wild.test \
    "403 502 504" "dns-failure timeout"
if [ "$ms" -lt 4000 ]; then
	mt_pass "the unanswered lookup ended in $ms ms (dns_ms 800)"
else
	mt_fail "the unanswered lookup took $ms ms (dns_ms 800)"
fi

mt_curl rf "${P[@]}" http://refused.wild.test/
mt_failed "connection refused" rf refused.wild.test 502 upstream-unreachable

t0=$(date +%s%N)
mt_curl bh "${P[@]}" http://blackhole.wild.test/
ms=$((($(date +%s%N) - t0) / 1000000))
mt_failed "address that never answers (connect_ms 1000)" bh \
    blackhole.wild.test "502 504" "upstream-unreachable timeout"
if [ "$ms" -lt 5000 ]; then
	mt_pass "the unanswered connect ended in $ms ms (connect_ms 1000)"
else
	mt_fail "the unanswered connect took $ms ms (connect_ms 1000)"
fi

mt_curl fb "${P[@]}" http://fallback.wild.test/fallback
mt_allowed "a refusing address, then a working one" fb

mt_curl rfc -p "${P[@]}" http://refused.wild.test:8080/
mt_eq "CONNECT to a refusing upstream -> 502" 502 "$MT_CONNECT" \
    "$MT_T/rfc.hdr" "$MT_T/moatd.err"
mt_eq "CONNECT to a refusing upstream: X-Moat-Reason" upstream-unreachable \
    "$(mt_hdr rfc X-Moat-Reason)"
mt_curl nxc -p "${P[@]}" http://nx.wild.test:8080/
mt_in_set "CONNECT to NXDOMAIN" "$MT_CONNECT" "403 502" "$MT_T/nxc.hdr"
mt_eq "CONNECT to NXDOMAIN: X-Moat-Reason" dns-failure \
    "$(mt_hdr nxc X-Moat-Reason)"

if mt_moatd_alive; then
	mt_pass "moatd still runs"
else
	mt_fail "moatd died" "$MT_T/moatd.err"
fi
mt_finish
