#!/bin/bash
# t_geo.sh - "geoip" databases and deny rules by "countries" and "asns".
#
#   cli: curl --> moat: moatd 10.200.0.1:3128 --> net: origin.py
#   (the full drawing is at the top of lib.sh)
#
# The databases are MaxMind DB files this test writes (mkmmdb.py): in
# them origin.test (203.0.113.10) is in the US, other.test (203.0.113.12)
# in KP, and 203.0.113.20 in AS64512.  A host rule allows other.test, yet
# its address is refused by the country rule (HTTP, CONNECT and SOCKS5,
# nothing reaches the origin); an IP rule allows 203.0.113.20, yet the AS
# rule refuses it; the audit lines carry country and asn; a new database
# takes effect on SIGHUP; moat run --policy uses a file's databases, and
# a sandbox registered with a running moatd the daemon's; bad databases
# and rules are config errors.

. "$(dirname "$0")/lib.sh"

mt_init
mt_need_moatd
mt_world
mk="$MT_PY $MT_HELPERS/mkmmdb.py"
$mk --type country "$MT_T/country.mmdb" 203.0.113.10/32=US \
    203.0.113.12/32=KP 2001:db8::10/128=US ||
	mt_error "cannot write the country database"
$mk --type asn "$MT_T/asn.mmdb" 203.0.113.20/32=64512 \
    203.0.113.0/24=64500 2001:db8::/32=64500 || mt_error "cannot write the ASN database"

conf=$MT_T/moatd.json
mt_conf "$conf"
mkdir -p "$MT_T/adm"
mt_conf_set "$conf" admin "{\"address\": \"unix:$MT_T/adm/admin.sock\"}"
mt_conf_set "$conf" geoip "{\"country_db\": \"$MT_T/country.mmdb\", \"asn_db\": \"$MT_T/asn.mmdb\"}"
mt_conf_set "$conf" listen.+ '{"proto": "dns", "address": "10.200.0.1:53", "sandbox": "it-dns"}'
mt_conf_set "$conf" policy.rules.+ '{"name": "other", "action": "allow", "hosts": ["other.test"], "ports": [80, 443]}'
mt_conf_set "$conf" policy.rules.+ '{"name": "no-kp", "action": "deny", "countries": ["kp"]}'
mt_conf_set "$conf" policy.rules.+ '{"name": "no-as64512", "action": "deny", "asns": ["AS64512"], "ports": [80]}'
mt_moatd_start "$conf"

mt_curl o1 -x "http://$MT_HTTP" http://origin.test/o1
mt_allowed "a name in the US" o1
mt_log_eq "audit: its country" US \
    "$MT_T/audit.log" get country host=origin.test verdict=allow
mt_log_eq "audit: its AS" 64500 \
    "$MT_T/audit.log" get asn host=origin.test verdict=allow

mt_mark
mt_curl k1 -x "http://$MT_HTTP" http://other.test/k1
mt_denied "a host rule allows other.test, its address is in KP" k1 403 \
    other.test denied-by-rule no-kp
mt_curl k2 -p -x "http://$MT_HTTP" http://other.test/k2
mt_denied "the same through CONNECT" k2 403 other.test denied-by-rule no-kp
mt_curl k3 -x "socks5h://$MT_SOCKS" http://other.test/k3
mt_eq "the same through SOCKS5: curl's refusal" 97 "$MT_RC"
mt_untouched "an address in a denied country" origin
mt_log_eq "audit: the refusal names the country" KP \
    "$MT_T/audit.log" get country host=other.test verdict=deny

# moatd's DNS listener answers a name only with addresses it would dial:
# other.test's only address is in KP, so it "does not exist".
mt_in cli "$MT_PY" "$MT_HELPERS/dnsprobe.py" 10.200.0.1 other.test A \
    > "$MT_T/d1.out" 2>"$MT_T/d1.err"
mt_eq "DNS: a name whose addresses are all in KP" "rcode=NXDOMAIN" \
    "$(grep '^rcode=' "$MT_T/d1.out")" "$MT_T/d1.out" "$MT_T/d1.err"
mt_in cli "$MT_PY" "$MT_HELPERS/dnsprobe.py" 10.200.0.1 origin.test A \
    > "$MT_T/d2.out" 2>"$MT_T/d2.err"
mt_eq "DNS: a name in the US is answered" "A 203.0.113.10 ttl=1" \
    "$(grep '^A ' "$MT_T/d2.out")" "$MT_T/d2.out" "$MT_T/d2.err"
mt_eq "DNS: the refusal is audited, rule no-kp" "dns-denied no-kp" \
    "$(mt_jl "$MT_T/audit.log" get reason event=dns host=other.test) $(mt_jl "$MT_T/audit.log" get rule event=dns host=other.test)"

mt_mark
mt_curl a1 -x "http://$MT_HTTP" http://203.0.113.20/a1
mt_denied "an IP rule allows 203.0.113.20, its AS is denied" a1 403 \
    203.0.113.20 denied-by-rule no-as64512
mt_untouched "an address in a denied AS" origin
mt_log_eq "audit: the refusal names the AS" 64512 \
    "$MT_T/audit.log" get asn host=203.0.113.20 verdict=deny

# A newer database: other.test is no longer in KP once moatd reloads.
$mk --type country "$MT_T/country2.mmdb" 203.0.113.0/24=US ||
	mt_error "cannot write the second country database"
mv "$MT_T/country2.mmdb" "$MT_T/country.mmdb"
mt_curl k4 -x "http://$MT_HTTP" http://other.test/k4
mt_denied "a replaced file counts only after a reload" k4 403 other.test \
    denied-by-rule no-kp
kill -HUP "$MT_MOATD_PID"
mt_wait_log "$MT_T/moatd.err" "reload done" 50
mt_curl k5 -x "http://$MT_HTTP" http://other.test/k5
mt_allowed "after SIGHUP the new database decides" k5

# moat run --policy FILE with "geoip": a private moatd opens the file's
# databases; against a running moatd (--moatd) the daemon's decide (its
# database now puts other.test in the US).
mt_run_need
$mk --type country "$MT_T/run.mmdb" 203.0.113.12/32=KP ||
	mt_error "cannot write the run's country database"
cat > "$MT_T/run.json" <<EOF
{
  "geoip": {"country_db": "$MT_T/run.mmdb"},
  "policy": {"rules": [
    {"name": "web", "action": "allow", "hosts": ["origin.test", "other.test"],
     "ports": [80]},
    {"name": "no-kp", "action": "deny", "countries": ["KP"]}
  ]}
}
EOF
work="$MT_PROBE --tag ok proxyget http://origin.test/; $MT_PROBE --tag kp proxyget http://other.test/"
# shellcheck disable=SC2086 # MT_RUN_WORLD is words
mt_moat_run root run1 --policy "$MT_T/run.json" $MT_RUN_WORLD -- sh -c "$work"
mt_eq "moat run: exit status" 0 "$MT_RUN_RC" "$MT_T/run1.err"
mt_eq "moat run: a name in no denied country" "200 origin" \
    "$(mt_out run1 ok_status) $(mt_out run1 ok_origin)" "$MT_T/run1.out"
mt_eq "moat run: other.test is in KP by the file's database" \
    "403 denied-by-rule" \
    "$(mt_out run1 kp_status) $(mt_out run1 kp_reason)" "$MT_T/run1.out"
PRIV="--allow-private 203.0.113.0/24 --allow-private 2001:db8::/32"
# shellcheck disable=SC2086
mt_moat_run root run2 --moatd "unix:$MT_T/adm/admin.sock" --policy \
    "$MT_T/run.json" $PRIV --name geo-run -- sh -c "$work"
mt_eq "moat run --moatd: exit status" 0 "$MT_RUN_RC" "$MT_T/run2.err"
mt_eq "moat run --moatd: the daemon's database decides" "200 origin" \
    "$(mt_out run2 kp_status) $(mt_out run2 kp_origin)" "$MT_T/run2.out" \
    "$MT_T/run2.err"
mt_log_eq "moat run --moatd: audit of the sandbox, with its country" US \
    "$MT_T/audit.log" get country sandbox=geo-run host=other.test

# Config errors, each with FILE:LINE:COLUMN.
bad=$MT_T/bad.json
mt_conf "$bad"
mt_conf_set "$bad" geoip "{\"country_db\": \"$MT_T/missing.mmdb\"}"
mt_conf_set "$bad" policy.rules.+ '{"name": "geo-allow", "action": "allow", "countries": ["US"]}'
mt_conf_set "$bad" policy.rules.+ '{"name": "geo-asn", "action": "deny", "asns": [64512]}'
"$MOATD" --check -c "$bad" > "$MT_T/bad.out" 2>&1
mt_eq "moatd --check refuses them" 1 "$?"
for want in 'geoip.country_db: cannot open the GeoIP database .*missing.mmdb.*: No such file or directory' \
    'countries: "countries" can only deny' \
    'asns: "asns" needs a database'; do
	if grep -Eq "^$bad:[0-9]+:[0-9]+: .*$want" "$MT_T/bad.out"; then
		mt_pass "config error: $want"
	else
		mt_fail "config error missing: $want" "$MT_T/bad.out"
	fi
done
mt_finish
