#!/bin/bash
# t_audit_only.sh - audit mode ("audit_only"): what the rules refuse goes
# through and is audited as allowed with "would_deny": REASON and the rule;
# what protects against exfiltration and reaching inside stays refused.
#
#   cli: curl -x 10.200.0.1:3129 (http+socks5, "audit_only": true, it-audit)
#        curl -x 10.200.0.1:3128 (http, enforcing: it-http)
#        dnsprobe.py -> 10.200.0.1:53 (dns, audit_only, it-audit)
#        TCP to 203.0.113.x, redirected (nft, set up here) to the
#        transparent listener 10.200.0.1:15001 (audit_only, it-audit)
#   moat: moatd (admin socket); moat run --audit-only (private moatd);
#         moat attach --audit-only --netns att
#   net:  origin.py 203.0.113.10/.12, dns.py 203.0.113.53
#   (the full drawing is at the top of lib.sh)
#
# Checks, on the audit-only listener: each kind of would-deny passes
# (no-rule, denied-by-rule, port, method, a CONNECT no rule allows,
# needs-inspection without a CA, a rule's rate, SOCKS5, a DNS name no rule
# allows, a transparent connection no rule allows, the git preset's push)
# and has its line (verdict allow, would_deny, the rule); each enforced
# kind is still refused there (a metadata address and name, a private
# range, a name that resolves inside, a secret's value to another host
# and to an allowed one, a secret in a request the policy would refuse,
# needs-tls, the DNS budget of new names, over DNS and HTTP); the
# enforcing listener of the same moatd still refuses; the whole config
# by a reload, with a listener that says false; per sandbox by
# registration: moat run --audit-only (its lines "would refuse", its
# summary) and moat attach --audit-only; moat audit summary and suggest
# count the would-denies of the file.

. "$(dirname "$0")/lib.sh"

mt_init
mt_run_need
mt_topology
mt_zone_default
"$MT_PY" - "$MT_T/zone.json" <<'EOF'
import json, sys
z = json.load(open(sys.argv[1]))
# A name no rule allows that points inside; names under a label no rule
# names (the DNS budget of would-denies).
z["inside.test"] = [{"type": "A", "data": "10.66.0.10", "ttl": 1}]
z["*.nr.test"] = [{"type": "A", "data": "203.0.113.12", "ttl": 1}]
# Hosts of the test's own rules, outside "origin"'s *.origin.test.
z["*.ao.test"] = [{"type": "A", "data": "203.0.113.10", "ttl": 1}]
json.dump(z, open(sys.argv[1], "w"))
EOF
mt_world_servers
mkdir -p "$MT_T/keys" "$MT_T/adm"
KEYV=sk-audit-only-secret-0123456789
printf '%s' "$KEYV" > "$MT_T/keys/k.key"
chmod 600 "$MT_T/keys/k.key"
ADM=$MT_T/adm/admin.sock
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_conf_set "$conf" listen.+ '{"proto": "http+socks5", "address": "10.200.0.1:3129", "sandbox": "it-audit", "audit_only": true}'
mt_conf_set "$conf" listen.+ '{"proto": "dns", "address": "10.200.0.1:53", "sandbox": "it-audit", "audit_only": true}'
mt_conf_set "$conf" listen.+ '{"proto": "transparent", "address": "10.200.0.1:15001", "sandbox": "it-audit", "audit_only": true}'
# A sandbox of its own for the DNS budget: its minute starts with it.
mt_conf_set "$conf" listen.+ '{"proto": "http", "address": "10.200.0.1:3130", "sandbox": "it-budget", "audit_only": true}'
mt_conf_set "$conf" listen.+ '{"proto": "dns", "address": "10.200.0.1:5353", "sandbox": "it-budget", "audit_only": true}'
mt_conf_set "$conf" admin "{\"address\": \"unix:$ADM\"}"
mt_conf_set "$conf" metrics "{\"address\": \"unix:$MT_T/adm/metrics.sock\"}"
mt_conf_set "$conf" secrets "{\"K\": {\"file\": \"$MT_T/keys/k.key\"}}"
# In front of "origin", so that they decide for their hosts.
mt_conf_set "$conf" policy.rules.^ '{"name": "insp", "action": "allow", "hosts": ["insp.wild.test"], "ports": [443], "methods": ["GET"], "intercept": false}'
mt_conf_set "$conf" policy.rules.+ '{"name": "getonly", "action": "allow", "hosts": ["get.ao.test"], "ports": [80], "methods": ["GET"], "plain_http": true, "inject": [{"header": "X-Key", "value": "${K}"}]}'
mt_conf_set "$conf" policy.rules.+ '{"name": "rated", "action": "allow", "hosts": ["rate.ao.test"], "ports": [80], "rate": {"requests": 1, "per_seconds": 3600}}'
mt_conf_set "$conf" policy.rules.+ '{"name": "tlsonly", "action": "allow", "hosts": ["tls.ao.test"], "ports": [80], "inject": [{"header": "X-Key", "value": "${K}"}]}'
mt_conf_set "$conf" policy.rules.+ '{"name": "git", "action": "allow", "hosts": ["git.ao.test"], "ports": [80], "git": "read-only"}'
mt_conf_set "$conf" limits '{"dns_wildcard_names": 3}'
"$MOATD" --check -c "$conf" >"$MT_T/check.out" 2>&1 ||
    mt_error "the test's config does not load: $(cat "$MT_T/check.out")"
mt_moatd_start "$conf"
A=$MT_T/audit.log
AU=(-x "http://10.200.0.1:3129")
EN=(-x "http://$MT_HTTP")

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
# --- would-denies on the audit-only listener --------------------------------
mt_curl w1 "${AU[@]}" http://other.test/w1
mt_allowed "no rule allows other.test: it goes through" w1
mt_log_eq "audit: would_deny no-rule" no-rule "$A" get would_deny \
    path=/w1 sandbox=it-audit
mt_log_eq "audit: verdict allow" allow "$A" get verdict path=/w1
mt_eq "audit: ...reason allowed" allowed "$(mt_jl "$A" get reason path=/w1)"
mt_eq "audit: ...no rule named" null "$(mt_jl "$A" get rule path=/w1)"
# metric_wd: moatd's would-deny decisions of it-audit by no-rule.
metric_wd()
{
	ip netns exec "$(mt_ns moat)" curl -s --max-time 5 --unix-socket \
	    "$MT_T/adm/metrics.sock" http://moatd/metrics 2>/dev/null |
	    sed -n 's/^moat_decisions_total{sandbox="it-audit",verdict="would-deny",reason="no-rule",rule=""} //p'
}
metric_wd_ge1() { [ "$(metric_wd)" -ge 1 ] 2>/dev/null; }
if mt_wait_for 3 metric_wd_ge1; then
	mt_pass "metrics: the would-deny counted as verdict would-deny ($(metric_wd))"
else
	mt_fail "metrics: no would-deny no-rule series for it-audit ('$(metric_wd)')"
fi
mt_curl w2 "${AU[@]}" http://bad.origin.test/w2
mt_allowed "a deny rule: it goes through" w2
mt_log_eq "audit: would_deny denied-by-rule, the deny rule" \
    "denied-by-rule" "$A" get would_deny path=/w2
mt_eq "audit: ...rule blocked" blocked "$(mt_jl "$A" get rule path=/w2)"
mt_curl w3 "${AU[@]}" http://origin.test:9090/w3
mt_allowed "a port the rule does not open: it goes through" w3
mt_log_eq "audit: would_deny port, rule origin" port "$A" get would_deny \
    path=/w3
mt_eq "audit: ...rule origin" origin "$(mt_jl "$A" get rule path=/w3)"
mt_mark
mt_curl w4a "${AU[@]}" http://get.ao.test/w4a
mt_allowed "the rule's GET: allowed, its secret injected" w4a
mt_curl w4 "${AU[@]}" -X POST -d x=1 http://get.ao.test/w4
mt_allowed "a method the rule does not allow: it goes through" w4
mt_log_eq "audit: would_deny method, rule getonly" method "$A" get \
    would_deny path=/w4
mt_eq "the origin got the rule's X-Key with the GET, not with the POST" \
    "1 0" "$(mt_new origin | grep '"path": "/w4a"' |
    grep -c "\"X-Key\", \"$KEYV\"") $(mt_new origin |
    grep '"path": "/w4"' | grep -c X-Key)" "$MT_T/origin.log"
mt_eq "audit: ...injected K with the GET, nothing with the POST" '["K"] ' \
    "$(mt_jl "$A" get injected path=/w4a) $(mt_jl "$A" get injected path=/w4)"
mt_curl w5 "${AU[@]}" -p http://other.test/w5
mt_allowed "CONNECT to a host no rule allows: the tunnel opens" w5
mt_log_eq "audit: the tunnel's open line, would_deny no-rule" no-rule \
    "$A" get would_deny event=open proto=connect host=other.test
mt_curl w6 "${AU[@]}" --cacert "$MT_T/origin.crt" https://insp.wild.test/w6
mt_allowed "a rule that must inspect, \"intercept\": false: the tunnel goes through unread" \
    w6
mt_log_eq "audit: would_deny needs-inspection, rule insp" needs-inspection \
    "$A" get would_deny event=open host=insp.wild.test
mt_curl w7a "${AU[@]}" http://rate.ao.test/w7a
mt_allowed "a rule's rate: the first request" w7a
mt_curl w7b "${AU[@]}" http://rate.ao.test/w7b
mt_allowed "a rule's rate, used up: it goes through" w7b
mt_log_eq "audit: the first is a plain allow" 0 "$A" count path=/w7a \
    would_deny?
mt_log_eq "audit: the second, would_deny rate, rule rated" rate "$A" get \
    would_deny path=/w7b
mt_curl w8 "${AU[@]}" -X POST -d x http://git.ao.test/repo.git/git-receive-pack
mt_eq "git push through the read-only preset: it goes through (no secret)" \
    200 "$MT_CODE" "$MT_T/w8.hdr"
mt_log_eq "audit: would_deny path, rule git" path "$A" get would_deny \
    host=git.ao.test method=POST
mt_socks s1 --tcp 10.200.0.1:3129 --atyp domain --dst other.test --port 80 \
    --http-get /s1 --http-host other.test
mt_eq "SOCKS5 to a host no rule allows: reply 0x00" "0x00 200" \
    "$(mt_kv s1 reply) $(mt_kv s1 http_status)" "$MT_T/s1.kv"
mt_log_eq "audit: SOCKS5 open line, would_deny no-rule" no-rule "$A" get \
    would_deny event=open proto=socks5 host=other.test
probe d1 10.200.0.1 other.test A
has "DNS: a name no rule allows is answered" d1 "A 203.0.113.12 ttl=1"
mt_log_eq "audit: DNS line, would_deny dns-denied" dns-denied "$A" get \
    would_deny event=dns host=other.test
mt_eq "audit: ...the policy's reason in detail" no-rule \
    "$(mt_jl "$A" get detail event=dns host=other.test)"

# --- the transparent listener: redirected in the moat namespace --------------
if mt_in moat nft -f - <<'EOF'
table inet mt_redirect {
	chain pre {
		type nat hook prerouting priority -100;
		iifname "c0" ip daddr 10.200.0.1 return
		iifname "c0" meta l4proto tcp redirect to :15001
	}
}
EOF
then
	mt_in cli $MT_PROBE --tag t raw 203.0.113.12 80 other.test \
	    > "$MT_T/t1.out" 2>&1
	mt_eq "transparent, Host other.test (no rule): it goes through" 200 \
	    "$(sed -n 's/^t_status=//p' "$MT_T/t1.out")" "$MT_T/t1.out"
	mt_log_eq "audit: transparent open line, would_deny no-rule" no-rule \
	    "$A" get would_deny event=open proto=transparent host=other.test
	echo | mt_in cli timeout 10 openssl s_client -noservername \
	    -connect 203.0.113.10:443 >"$MT_T/t2.out" 2>&1
	if grep -q "CN *= *origin.test" "$MT_T/t2.out"; then
		mt_pass "transparent, TLS without a name: dialled as the client chose"
	else
		mt_fail "transparent, TLS without a name" "$MT_T/t2.out"
	fi
	mt_log_eq "audit: ...would_deny no-rule at the address" no-rule \
	    "$A" get would_deny event=open proto=transparent host=203.0.113.10
	mt_in moat nft delete table inet mt_redirect
else
	mt_fail "cannot set up the redirect of the transparent part"
fi

# --- enforced in every mode -----------------------------------------------------
mt_mark
mt_curl e1 "${AU[@]}" http://169.254.169.254/latest/meta-data/
mt_denied "audit mode: a metadata address is refused" e1 403 \
    169.254.169.254 metadata
mt_curl e2 "${AU[@]}" http://metadata.google.internal/
mt_denied "audit mode: a metadata name is refused" e2 403 \
    metadata.google.internal metadata
mt_curl e3 "${AU[@]}" http://10.66.0.10/
mt_denied "audit mode: a private address is refused" e3 403 10.66.0.10 \
    private-address
mt_curl e4 "${AU[@]}" http://inside.test/
mt_denied "audit mode: a name no rule allows that points inside" e4 403 \
    inside.test private-address
mt_untouched "audit mode: nothing reached the metadata server, the lan" \
    meta lan loop
probe e5 10.200.0.1 inside.test A
has "audit mode, DNS: a name that points inside is not answered" e5 \
    "rcode=NXDOMAIN"
mt_log_eq "audit: ...refused" deny "$A" get verdict event=dns host=inside.test
mt_eq "audit: ...private-address in detail" private-address \
    "$(mt_jl "$A" get detail event=dns host=inside.test)"
mt_mark
mt_curl e6 "${AU[@]}" -H "X-Leak: $KEYV" http://other.test/e6
mt_denied "audit mode: a secret's value to another host" e6 403 other.test \
    secret-leak
mt_curl e7 "${AU[@]}" -H "X-Leak: $KEYV" http://origin.test/e7
mt_denied "audit mode: a secret's value to an allowed host it is not bound to" \
    e7 403 origin.test secret-leak
mt_curl e8 "${AU[@]}" -X POST -H "X-Leak: $KEYV" http://get.ao.test/e8
mt_denied "audit mode: a secret in a request the policy would refuse" e8 403 \
    get.ao.test secret-leak getonly
mt_log_eq "audit: ...the detail says why" 1 "$A" count path=/e8 \
    "detail~in audit mode a request the policy would refuse \\(method\\)"
mt_curl e9 "${AU[@]}" http://tls.ao.test/e9
mt_denied "audit mode: needs-tls (a secret over plain HTTP)" e9 403 \
    tls.ao.test needs-tls tlsonly
# (A would-deny is dialled before its head is read for secrets, as a
# request to an allowed host is: nothing of it goes out.)
mt_eq "audit mode: no refused request reached an origin" 0 \
    "$(mt_new origin | grep -cE '"path": "/e[6-9]"')" "$MT_T/origin.log"
# The DNS budget of a sandbox in audit mode: 3 new names a minute that
# no rule spells out, over DNS and over its proxy (it-budget).
mt_mark
for i in 1 2 3; do
	probe b$i 10.200.0.1:5353 "x$i.nr.test" A
	has "audit mode, DNS: new name $i of 3 no rule allows" b$i \
	    "A 203.0.113.12 ttl=1"
done
probe b4 10.200.0.1:5353 x4.nr.test A
has "audit mode, DNS: the 4th is refused (dns-budget)" b4 "rcode=REFUSED"
mt_log_eq "audit: ...deny" deny "$A" get verdict event=dns host=x4.nr.test
mt_eq "audit: ...reason dns-budget" dns-budget \
    "$(mt_jl "$A" get reason event=dns host=x4.nr.test)"
mt_curl b5 -x http://10.200.0.1:3130 http://x5.nr.test/b5
mt_denied "audit mode, HTTP: the same budget" b5 429 x5.nr.test dns-budget
mt_eq "the upstream DNS server never saw x4 nor x5" 0 \
    "$(mt_new dns | grep -c '"x[45]\.nr\.test')"
mt_curl b6 -x http://10.200.0.1:3130 http://x1.nr.test/b6
mt_allowed "audit mode: a name already resolved still goes" b6
mt_curl b7 -x http://10.200.0.1:3130 http://get.ao.test:8080/b7
mt_allowed "audit mode: a would-denied name a rule spells out is not counted" \
    b7

# --- the enforcing listener of the same moatd ---------------------------------------
mt_curl n1 "${EN[@]}" http://other.test/n1
mt_denied "the enforcing listener still refuses" n1 403 other.test no-rule
mt_log_eq "audit: ...a deny, no would_deny" 0 "$A" count path=/n1 would_deny?

# --- the whole config, by a reload; a listener that says false -----------------------
reloads()	# how many reloads moatd finished
{
	grep -c "reload done" "$MT_T/moatd.err"
}
reloaded()	# N: more than N reloads done
{
	[ "$(reloads)" -gt "$1" ]
}
n=$(reloads)
mt_conf_set "$conf" audit_only true
mt_conf_set "$conf" listen.1.audit_only false
kill -HUP "$MT_MOATD_PID"
mt_wait_for 5 reloaded "$n" || mt_fail "moatd did not reload" "$MT_T/moatd.err"
mt_curl c1 "${EN[@]}" http://other.test/c1
mt_allowed "whole config in audit mode: the http listener lets it through" c1
mt_log_eq "audit: ...would_deny no-rule" no-rule "$A" get would_deny path=/c1
mt_socks c2 --tcp "$MT_SOCKS" --atyp domain --dst other.test --port 80 \
    --http-get /c2 --http-host other.test
mt_eq "a listener with \"audit_only\": false still refuses" 0x02 \
    "$(mt_kv c2 reply)" "$MT_T/c2.kv"
n=$(reloads)
mt_conf_set "$conf" audit_only false
kill -HUP "$MT_MOATD_PID"
mt_wait_for 5 reloaded "$n" || mt_fail "moatd did not reload again" \
    "$MT_T/moatd.err"
mt_curl c3 "${EN[@]}" http://other.test/c3
mt_denied "back to enforce by a reload" c3 403 other.test no-rule

# --- moat audit: the would-denies of this file ---------------------------------
nwould=$(mt_jl "$A" count sandbox=it-audit would_deny?)
"$MOAT" audit summary --json --sandbox it-audit "$A" > "$MT_T/sum.json" \
    2>"$MT_T/sum.err"
mt_eq "moat audit summary exits 0" 0 $? "$MT_T/sum.err"
got=$("$MT_PY" - "$MT_T/sum.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))["sandboxes"][0]
w = {(x["reason"], x["rule"]): x["count"] for x in s["would_denies"]}
print(s["would_deny"], w.get(("no-rule", None), 0) > 0,
      w.get(("denied-by-rule", "blocked")), w.get(("port", "origin")),
      w.get(("rate", "rated")), w.get(("needs-inspection", "insp")))
EOF
)
mt_eq "moat audit summary counts the file's would-denies by reason and rule" \
    "$nwould True 1 1 1 1" "$got" "$MT_T/sum.json"
"$MOAT" audit suggest --allow-private 203.0.113.0/24 --sandbox it-audit \
    "$A" > "$MT_T/suggest.json" 2>"$MT_T/suggest.err"
mt_eq "moat audit suggest exits 0" 0 $? "$MT_T/suggest.err"
got=$("$MT_PY" - "$MT_T/suggest.json" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))["policy"]
hosts = set(h for r in p["rules"] for h in r.get("hosts", []))
print("other.test" in hosts, "bad.origin.test" in hosts,
      any("169.254" in c or c.startswith("10.") for r in p["rules"]
          for c in r.get("cidrs", [])),
      "inside.test" in hosts, "metadata.google.internal" in hosts)
EOF
)
mt_eq "suggest allows the would-denied hosts, never the refused ones" \
    "True True False False False" "$got" "$MT_T/suggest.json"

# --- per sandbox: moat run --audit-only (a private moatd) ----------------------------
cat > "$MT_T/work.sh" <<EOF
#!/bin/sh
curl -sS -m 8 -o /dev/null -w "get=%{http_code}\n" http://other.test/r1
curl -sS -m 8 -o /dev/null -w "meta=%{http_code}\n" http://169.254.169.254/
EOF
chmod 755 "$MT_T/work.sh"
RA=$MT_T/run-audit.log
mt_moat_run root run1 $MT_RUN_WORLD --allow origin.test --audit-only \
    --audit "$RA" --name run-audit -- "$MT_T/work.sh"
mt_eq "moat run --audit-only: the would-deny goes, the metadata is refused" \
    "get=200 meta=403" "$(tr '\n' ' ' < "$MT_T/run1.out" | sed 's/ $//')" \
    "$MT_T/run1.err"
if grep -qF "would refuse GET http://other.test/r1 (audit-only: no-rule)" \
    "$MT_T/run1.err"; then
	mt_pass "moat run --audit-only: its line says \"would refuse\""
else
	mt_fail "moat run --audit-only: no \"would refuse\" line" "$MT_T/run1.err"
fi
if grep -qE '^moat: 1 refusal \(metadata 1\), 1 would-deny \(audit-only: no-rule 1\)' \
    "$MT_T/run1.err"; then
	mt_pass "moat run --audit-only: the summary counts the would-denies"
else
	mt_fail "moat run --audit-only: the summary" "$MT_T/run1.err"
fi
mt_eq "moat run --audit-only: the audit line" "allow no-rule" \
    "$(mt_jl "$RA" get verdict path=/r1) $(mt_jl "$RA" get would_deny path=/r1)"
mt_moat_run root run2 $MT_RUN_WORLD --allow origin.test --audit "$RA" \
    --name run-enforce -- "$MT_T/work.sh"
mt_eq "moat run without it enforces" "get=403 meta=403" \
    "$(tr '\n' ' ' < "$MT_T/run2.out" | sed 's/ $//')" "$MT_T/run2.err"

# --- per sandbox: moat attach --audit-only (the registration) ---------------------
ATT=$MT_TAG-att
ip netns add "$ATT" && MT_NSES="$MT_NSES $ATT" || mt_skip "cannot create a namespace"
ip -n "$ATT" link set lo up &&
ip link add a0 netns "$ATT" type veth peer name a1 netns "$(mt_ns net)" &&
ip -n "$ATT" link set a0 up && ip -n "$(mt_ns net)" link set a1 up &&
ip -n "$ATT" addr add 192.0.2.2/24 dev a0 &&
ip -n "$(mt_ns net)" addr add 192.0.2.1/24 dev a1 &&
ip -n "$ATT" route add default via 192.0.2.1 ||
    mt_error "cannot build the attached namespace's network"
PRIV="--allow-private 203.0.113.0/24 --allow-private 2001:db8::/32"
for m in audit enforce; do
	opt=""
	[ "$m" = audit ] && opt=--audit-only
	# shellcheck disable=SC2086
	if ! mt_bg "att_$m" moat env MOAT_NETNS="$MOAT_NETNS" "$MOAT" attach \
	    --netns "/run/netns/$ATT" --moatd "unix:$ADM" $PRIV \
	    --allow origin.test --name "att-$m" $opt --ready-fd 3; then
		mt_fail "moat attach ($m) did not get ready" "$MT_T/att_$m.err"
		continue
	fi
	timeout -k 2 30 ip netns exec "$ATT" $MT_PROBE --tag a raw \
	    203.0.113.12 80 other.test > "$MT_T/att-$m.out" 2>&1
	got=$(sed -n 's/^a_status=//p' "$MT_T/att-$m.out")
	if [ "$m" = audit ]; then
		mt_eq "moat attach --audit-only: a host no rule allows goes" 200 \
		    "$got" "$MT_T/att-$m.out"
		mt_log_eq "audit: the sandbox's line, would_deny no-rule" no-rule \
		    "$A" get would_deny sandbox=att-audit event=open \
		    host=other.test
		mt_wait_log "$MT_T/att_$m.err" \
		    'would refuse TCP other\.test:80 \(audit-only: no-rule\)' 50 &&
		    mt_pass "moat attach --audit-only: its \"would refuse\" line" ||
		    mt_fail "moat attach --audit-only: no line" "$MT_T/att_$m.err"
		timeout -k 2 30 ip netns exec "$ATT" $MT_PROBE --tag a raw \
		    169.254.169.254 80 > "$MT_T/att-meta.out" 2>&1
		mt_eq "moat attach --audit-only: the metadata address is refused" \
		    none "$(sed -n 's/^a_status=//p' "$MT_T/att-meta.out")" \
		    "$MT_T/att-meta.out"
	else
		mt_eq "moat attach without it: refused" none "$got" \
		    "$MT_T/att-$m.out"
	fi
	p=MT_RPID_att_$m
	w=MT_PID_att_$m
	kill -TERM "${!p}"
	mt_wait_exit "${!w}"
	mt_eq "moat attach ($m): detaches cleanly" 0 "$MT_WAIT_RC" \
	    "$MT_T/att_$m.err"
done

mt_moatd_stop
mt_eq "moatd stopped cleanly" 0 "$MT_WAIT_RC" "$MT_T/moatd.err"
mt_finish
