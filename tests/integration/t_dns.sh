#!/bin/bash
# t_dns.sh - moatd's DNS listener (UDP and TCP): the resolver a sandbox is
# given.
#
#   cli: dnsprobe.py --> moat: moatd DNS 10.200.0.1:53 (udp+tcp)
#                          --> net: dns.py 203.0.113.53 (moatd's resolver)
#   (the full drawing is at the top of lib.sh)
#
# Allowed names get the addresses moatd resolved itself, denied names get
# NXDOMAIN and are never sent upstream (dns.py logs no query for them),
# names that resolve only to internal addresses get NXDOMAIN, other query
# types of an allowed name get an empty answer, malformed queries get
# FORMERR, zone transfers NOTIMP, a flood is refused over the rate limit,
# and every query is an audit line.

. "$(dirname "$0")/lib.sh"

mt_init
mt_need_moatd
mt_world
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_conf_set "$conf" listen.+ '{"proto": "dns", "address": "10.200.0.1:53", "sandbox": "it-dns"}'
mt_conf_set "$conf" listen.+ '{"proto": "dns", "address": "[fd00:200::1]:53", "sandbox": "it-dns"}'
mt_moatd_start "$conf"
A=$MT_T/audit.log

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
upstream_asked()	# NAME: how many queries dns.py logged for NAME since mt_mark
{
	mt_new dns | mt_jl /dev/stdin count name="$1"
}

# --- allowed names ----------------------------------------------------------
mt_mark
probe a1 10.200.0.1 origin.test A
has "allowed name, A: answered with moatd's own resolution" a1 \
    "A 203.0.113.10 ttl=1"
has "...rcode NOERROR" a1 "rcode=NOERROR"
probe a2 10.200.0.1 origin.test AAAA
has "allowed name, AAAA" a2 "AAAA 2001:db8::10 ttl=1"
probe a3 --tcp 10.200.0.1 origin.test A
has "the same over TCP" a3 "A 203.0.113.10 ttl=1"
probe a4 '[fd00:200::1]' origin.test A
has "the same over IPv6" a4 "A 203.0.113.10 ttl=1"
probe a5 10.200.0.1 x.wild.test A
has "a name under an allowed wildcard" a5 "A 203.0.113.10 ttl=1"
probe a6 10.200.0.1 origin.test MX
has "allowed name, MX: no records (NODATA)" a6 "rcode=NOERROR"
mt_eq "...and no answer record" 2 "$(wc -l < "$MT_T/a6.out")"
probe a7 10.200.0.1 v6only.test A
has "allowed name without A records: NOERROR" a7 "rcode=NOERROR"
mt_eq "...and no answer record (NODATA)" 2 "$(wc -l < "$MT_T/a7.out")"

# --- denied names: NXDOMAIN, never asked upstream -------------------------------
mt_mark
probe d1 10.200.0.1 evil.test A
has "a name no rule allows: NXDOMAIN" d1 "rcode=NXDOMAIN"
probe d2 10.200.0.1 bad.origin.test A
has "a name a deny rule matches: NXDOMAIN" d2 "rcode=NXDOMAIN"
probe d3 10.200.0.1 metadata.google.internal A
has "a metadata name: NXDOMAIN" d3 "rcode=NXDOMAIN"
probe d4 --tcp 10.200.0.1 exfil-0123456789abcdef.evil.test TXT
has "a TXT query for a denied name over TCP: NXDOMAIN" d4 "rcode=NXDOMAIN"
for n in evil.test bad.origin.test metadata.google.internal \
    exfil-0123456789abcdef.evil.test; do
	mt_eq "no query for $n reached the upstream DNS server" 0 \
	    "$(upstream_asked "$n")"
done
mt_log_eq "audit: the denied name, reason dns-denied" "dns-denied" \
    "$A" get reason event=dns host=evil.test
mt_log_eq "audit: the policy's reason in detail" "no-rule" \
    "$A" get detail event=dns host=evil.test
mt_log_eq "audit: the deny rule named" "blocked" \
    "$A" get rule event=dns host=bad.origin.test
mt_log_eq "audit: sandbox identity" "it-dns" \
    "$A" get sandbox event=dns host=evil.test

# --- allowed names that point inside ---------------------------------------------
probe i1 10.200.0.1 loop.wild.test A
has "allowed name resolving to 127.0.0.1: NXDOMAIN" i1 "rcode=NXDOMAIN"
probe i2 10.200.0.1 meta.wild.test A
has "allowed name resolving to the metadata address: NXDOMAIN" i2 \
    "rcode=NXDOMAIN"
probe i3 10.200.0.1 mixed.wild.test A
has "allowed name resolving to a public and a loopback address: only the public one" \
    i3 "A 203.0.113.10 ttl=1"
if grep -q "127.0.0.1" "$MT_T/i3.out"; then
	mt_fail "the loopback address was handed out" "$MT_T/i3.out"
else
	mt_pass "the loopback address was not handed out"
fi
mt_log_eq "audit: why meta.wild.test got NXDOMAIN" "metadata" \
    "$A" get detail event=dns host=meta.wild.test

# --- bad input ------------------------------------------------------------------------
# A header with QDCOUNT 2: FORMERR.
probe b1 --raw 123401000002000000000000036162630000010001036162630000010001 10.200.0.1
has "malformed query (QDCOUNT 2): FORMERR" b1 "rcode=FORMERR"
probe b2 10.200.0.1 origin.test AXFR
has "zone transfer: NOTIMP" b2 "rcode=NOTIMP"
probe b3 10.200.0.1 origin.test ANY
has "ANY for an allowed name: its addresses" b3 "A 203.0.113.10 ttl=1"
mt_log_eq "audit: malformed query, reason bad-request" bad-request \
    "$A" get reason event=dns reason=bad-request

# --- rate limit ---------------------------------------------------------------------
probe f1 --flood 3000 10.200.0.1 origin.test
refused=$(sed -n 's/.*REFUSED=\([0-9]*\).*/\1/p' "$MT_T/f1.out")
ok=$(sed -n 's/.*NOERROR=\([0-9]*\).*/\1/p' "$MT_T/f1.out")
if [ "${refused:-0}" -gt 0 ] && [ "${ok:-0}" -gt 0 ]; then
	mt_pass "a flood is answered up to the rate limit, then refused ($(cat "$MT_T/f1.out"))"
else
	mt_fail "a flood of 3000 queries: $(cat "$MT_T/f1.out")"
fi
# The refusals are counted in one audit line once queries are answered again.
probe f2 10.200.0.1 origin.test A
mt_wait_log "$A" '"reason":"rate"' 30
n=$(mt_jl "$A" count event=dns reason=rate)
if [ "${n:-0}" -ge 1 ]; then
	mt_pass "audit: the refused queries are counted in $n line(s), not one line each"
else
	mt_fail "audit: no line counts the refused queries" "$A"
fi

# --- every line of the audit log is one JSON object -----------------------------------
mt_jl "$A" count >/dev/null
mt_eq "the audit log parses line by line" 0 "$?"
if mt_moatd_alive; then
	mt_pass "moatd survived"
else
	mt_fail "moatd died" "$MT_T/moatd.err"
fi
mt_finish
