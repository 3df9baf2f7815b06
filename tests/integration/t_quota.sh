#!/bin/bash
# t_quota.sh - quotas: a rule's and a sandbox's bytes sent upstream per
# window ("quota": {"bytes_up": N, "per_seconds": S}), and a secret's
# requests per window ("quota": {"requests": N, "per_seconds": S}).
#
#   cli: curl, socks5.py --> moat: moatd, listeners of four sandboxes
#        (it-http 10.200.0.1:3128, it-mixed :8888, it-v6 [fd00:200::1]:3128,
#        it-socks :1080) --> net: origin.py 203.0.113.12:80 (*.w2.test)
#   (the full drawing is at the top of lib.sh)
#
# Checks:
#  forward POSTs (rule fwd, 100000 bytes per 3 s): an upload that crosses
#    the quota is cut (the origin never gets all of it), the next request
#    is refused 429 quota-bytes before anything is dialled, another rule
#    is not limited, and once the window ends requests pass again;
#  an opaque CONNECT tunnel (rule tun, 1 MB per 3 s, sandbox it-mixed):
#    an upload is cut at the quota (its close line: quota-bytes, end
#    quota, bytes_up at most the quota), the next CONNECT gets
#    429 and a SOCKS5 CONNECT 0x02, another sandbox's tunnels under the
#    same rule are not limited, and after the window it works again;
#  requests inside an inspected tunnel (rule insp): the one that crosses
#    the quota is cut, the next CONNECT refused;
#  one "quota" audit line per crossing per window, not per refusal;
#  a secret's quota (K, 3 requests): 3 requests carrying it pass with the
#    value, the 4th is refused 429 quota-secret and never reaches the
#    origin, a request to the same host that does not carry it passes;
#  SIGHUP: the counts survive a reload (rule hold's 600 s window, K's), a
#    changed limit applies to the count at once, and a sandbox quota
#    (policy.quota) added by the reload limits each sandbox on its own;
#  audit mode (audit_only by reload): past a byte quota a request goes
#    through as a would-deny and a tunnel is not cut; a secret's quota
#    is still enforced;
#  moat_quota_refusals_total counts the refusals by sandbox and kind;
#  the secret's value is in no audit line and in none of moatd's messages.

. "$(dirname "$0")/lib.sh"

mt_init
mt_need_moatd
[ -x "$MOAT" ] || mt_error "moat (the CLI) not built at $MOAT"
mt_world
command -v curl >/dev/null 2>&1 || mt_skip "needs curl"
"$MOAT" ca init "$MT_T/ca" >/dev/null || mt_error "moat ca init failed"

K_REAL=sk-REAL-quota-3e9a71c05d2b48f6
mkdir -p "$MT_T/keys" && chmod 700 "$MT_T/keys"
printf '%s\n' "$K_REAL" > "$MT_T/keys/k.key"
chmod 600 "$MT_T/keys/k.key"
head -c 200000 /dev/zero | tr '\0' 'a' > "$MT_T/200k"
head -c 20000 /dev/zero | tr '\0' 'b' > "$MT_T/20k"
head -c 1048576 /dev/zero | tr '\0' 'c' > "$MT_T/1m"
head -c 16777216 /dev/zero | tr '\0' 'd' > "$MT_T/16m"

conf=$MT_T/moatd.json
mt_conf "$conf"
# Rules first, so the standard ones never take these names.
mt_conf_set "$conf" policy.rules.^ '{"name": "keyfree", "action": "allow", "hosts": ["key.w2.test"], "ports": [80], "paths": ["/free"]}'
mt_conf_set "$conf" policy.rules.^ '{"name": "keyed", "action": "allow", "hosts": ["key.w2.test"], "ports": [80], "paths": ["/api"], "plain_http": true, "inject": [{"header": "X-Key", "value": "${K}"}]}'
mt_conf_set "$conf" policy.rules.^ '{"name": "free", "action": "allow", "hosts": ["free.w2.test"], "ports": [80]}'
mt_conf_set "$conf" policy.rules.^ '{"name": "hold", "action": "allow", "hosts": ["hold.w2.test"], "ports": [80], "quota": {"bytes_up": 50000, "per_seconds": 600}}'
mt_conf_set "$conf" policy.rules.^ '{"name": "tun", "action": "allow", "hosts": ["tun.w2.test"], "ports": [80], "quota": {"bytes_up": 1000000, "per_seconds": 3}}'
mt_conf_set "$conf" policy.rules.^ '{"name": "insp", "action": "allow", "hosts": ["up.wild.test"], "ports": [443], "intercept": true, "quota": {"bytes_up": 100000, "per_seconds": 600}}'
mt_conf_set "$conf" policy.rules.^ '{"name": "fwd", "action": "allow", "hosts": ["fwd.w2.test"], "ports": [80], "quota": {"bytes_up": 100000, "per_seconds": 3}}'
mt_conf_set "$conf" secrets "{\"K\": {\"file\": \"$MT_T/keys/k.key\", \"quota\": {\"requests\": 3, \"per_seconds\": 600}}}"
mt_conf_set "$conf" tls "{\"ca_cert\": \"$MT_T/ca/ca.crt\", \"ca_key\": \"$MT_T/ca/ca.key\", \"upstream_ca_files\": [\"$MT_T/origin.crt\"]}"
mt_conf_set "$conf" metrics "{\"address\": \"unix:$MT_T/metrics.sock\"}"
mt_moatd_start "$conf"
A=$MT_T/audit.log

# post NAME PROXY URL FILE: curl's POST of FILE (no Expect: 100-continue).
post()
{
	mt_curl "$1" -x "http://$2" -H 'Expect:' --data-binary "@$4" "$3"
}

# allowed_again NAME PROXY URL: a small POST gets the origin's 200 (for
# mt_wait_for: once the window has ended).
allowed_again()
{
	post "$1" "$2" "$3" "$MT_T/20k"
	[ "$MT_CODE" = 200 ] && [ -n "$(mt_hdr "$1" X-Origin-Name)" ]
}

# connect_again NAME PROXY URL: a GET through a CONNECT tunnel gets the
# origin's 200.
connect_again()
{
	mt_curl "$1" -p -x "http://$2" "$3"
	[ "$MT_CODE" = 200 ] && [ -n "$(mt_hdr "$1" X-Origin-Name)" ]
}

# origin_got PATH LEN: how many requests for PATH the origin read whole
# with a body of LEN bytes.
origin_got()
{
	mt_jl "$MT_T/origin.log" count event=request path="$1" body_len="$2"
}

# --- forward POSTs, rule fwd: 100000 bytes per 3 s ----------------------------
post f1 "$MT_HTTP" http://fwd.w2.test/f1 "$MT_T/20k"
mt_allowed "a POST within the rule's quota" f1
post f2 "$MT_HTTP" http://fwd.w2.test/f2 "$MT_T/1m"
mt_eq "the upload that crosses the quota does not reach the origin whole" \
    0 "$(origin_got /f2 1048576)" "$MT_T/origin.log"
mt_log_eq "audit: the upload was cut with quota-bytes" 1 "$A" count \
    event=request path=/f2 reason=quota-bytes rule=fwd
mt_mark
post f3 "$MT_HTTP" http://fwd.w2.test/f3 "$MT_T/20k"
mt_denied "the next request, past the quota" f3 429 fwd.w2.test quota-bytes fwd
mt_untouched "past the quota nothing is dialled" origin
post f4 "$MT_HTTP" http://free.w2.test/f4 "$MT_T/20k"
mt_allowed "another rule is not limited" f4
mt_log_eq "one quota line for the crossing, not one per refusal" 1 "$A" \
    count event=quota rule=fwd quota=rule limit=100000 per_seconds=3 \
    reason=quota-bytes sandbox=it-http
mt_wait_until 8 "after the window a POST passes again" \
    allowed_again f5 "$MT_HTTP" http://fwd.w2.test/f5
mt_pass "after the window a POST passes again"
mt_log_eq "still one quota line: the new window was not used up" 1 "$A" \
    count event=quota rule=fwd

# --- an opaque tunnel, rule tun: 1000000 bytes per 3 s, sandbox it-mixed -----
mt_curl t1 -p -x "http://$MT_MIXED" -H 'Expect:' -T "$MT_T/16m" \
    http://tun.w2.test/store/big
mt_eq "the tunnel's upload does not reach the origin whole" 0 \
    "$(origin_got /store/big 16777216)" "$MT_T/origin.log"
mt_log_eq "audit: the tunnel was closed by the quota" 1 "$A" count \
    event=close host=tun.w2.test reason=quota-bytes end=quota rule=tun \
    sandbox=it-mixed
# Counted before they go: the read that would pass the quota stays
# unwritten (a read is at most TUNNEL_SPLICE_BYTES, 256 KiB).
up=$(mt_jl "$A" get bytes_up event=close host=tun.w2.test end=quota)
if [ -n "$up" ] && [ "$up" -le 1000000 ] && [ "$up" -ge $((1000000 - 300000)) ]
then
	mt_pass "the tunnel sent no more than the quota, less a read ($up bytes)"
else
	mt_fail "the tunnel sent '$up' bytes (want 700000 to 1000000)" "$A"
fi
mt_mark
mt_curl t2 -p -x "http://$MT_MIXED" http://tun.w2.test/t2
mt_denied "the next CONNECT, past the quota" t2 429 tun.w2.test quota-bytes tun
mt_socks t3 --tcp "$MT_MIXED" --atyp domain --dst tun.w2.test --port 80 \
    --http-get /t3
mt_eq "a SOCKS5 CONNECT past the quota: reply 0x02" 0x02 "$(mt_kv t3 reply)" \
    "$MT_T/t3.kv" "$MT_T/t3.err"
mt_untouched "refused tunnels dial nothing" origin
mt_log_eq "audit: both refused with quota-bytes" 2 "$A" count event=open \
    host=tun.w2.test reason=quota-bytes verdict=deny
mt_curl t4 -p -x "http://$MT_HTTP" http://tun.w2.test/t4
mt_allowed "another sandbox's tunnel under the same rule counts on its own" t4
mt_log_eq "one quota line for the tunnel's crossing" 1 "$A" count \
    event=quota rule=tun sandbox=it-mixed
mt_wait_until 8 "after the window a CONNECT works again" \
    connect_again t5 "$MT_MIXED" http://tun.w2.test/t5
mt_pass "after the window a CONNECT works again"

# --- an inspected tunnel, rule insp: 100000 bytes per 600 s ------------------
C=(-x "http://$MT_HTTP" --cacert "$MT_T/ca/ca.crt" -H 'Expect:')
mt_curl i1 "${C[@]}" --data-binary "@$MT_T/20k" https://up.wild.test/i1
mt_allowed "inspected: a POST inside the tunnel within the quota" i1
mt_curl i2 "${C[@]}" --data-binary "@$MT_T/1m" https://up.wild.test/i2
mt_log_eq "inspected: the request that crosses the quota was cut" 1 "$A" \
    count event=request proto=https path=/i2 reason=quota-bytes rule=insp
mt_eq "inspected: it does not reach the origin whole" 0 \
    "$(origin_got /i2 1048576)" "$MT_T/origin.log"
mt_mark
mt_curl i3 "${C[@]}" https://up.wild.test/i3
mt_denied "inspected: the next CONNECT under the rule" i3 429 up.wild.test \
    quota-bytes insp
mt_untouched "inspected: nothing dialled past the quota" origin

# --- a secret's quota: K, 3 requests per 600 s ------------------------------
for i in 1 2 3; do
	mt_curl k$i -x "http://$MT_HTTP" http://key.w2.test/api/k$i
	mt_allowed "request $i carrying K" k$i
done
mt_eq "the origin got the value in each of the 3" 3 \
    "$(grep -c -F -- "$K_REAL" "$MT_T/origin.log")" "$MT_T/origin.log"
mt_mark
mt_curl k4 -x "http://$MT_HTTP" http://key.w2.test/api/k4
mt_denied "the 4th request carrying K" k4 429 key.w2.test quota-secret keyed
mt_untouched "the refused request never reaches the origin" origin
mt_eq "the origin never got the value a 4th time" 3 \
    "$(grep -c -F -- "$K_REAL" "$MT_T/origin.log")" "$MT_T/origin.log"
mt_curl k5 -x "http://$MT_HTTP" http://key.w2.test/free/k5
mt_allowed "a request to the same host without K passes" k5
mt_log_eq "audit: the refusal names no secret sent" 1 "$A" count \
    event=request path=/api/k4 reason=quota-secret verdict=deny status=429
mt_eq "audit: the refusal has no \"injected\"" "injected" \
    "$(mt_jl "$A" missing injected event=request path=/api/k4)" "$A"
mt_log_eq "one quota line for K" 1 "$A" count event=quota secret=K \
    quota=secret limit=3 used=3 reason=quota-secret

# --- rule hold: 50000 bytes per 600 s, then SIGHUP --------------------------
post h1 "$MT_HTTP" http://hold.w2.test/h1 "$MT_T/200k"
mt_log_eq "audit: the upload under rule hold was cut" 1 "$A" count \
    event=request path=/h1 reason=quota-bytes rule=hold
post h2 "$MT_HTTP" http://hold.w2.test/h2 "$MT_T/20k"
mt_denied "rule hold past its quota" h2 429 hold.w2.test quota-bytes hold

# The reload adds a sandbox quota and keeps every name.
mt_conf_set "$conf" policy.quota '{"bytes_up": 300000, "per_seconds": 600}'
kill -HUP "$MT_MOATD_PID"
mt_wait_log "$MT_T/moatd.err" "reload done" 50 ||
    mt_fail "moatd reloaded" "$MT_T/moatd.err"
mt_mark
post h3 "$MT_HTTP" http://hold.w2.test/h3 "$MT_T/20k"
mt_denied "after a reload rule hold's count is kept" h3 429 hold.w2.test \
    quota-bytes hold
mt_curl k6 -x "http://$MT_HTTP" http://key.w2.test/api/k6
mt_denied "after a reload K's count is kept" k6 429 key.w2.test \
    quota-secret keyed
mt_untouched "kept counts: nothing dialled" origin
mt_log_eq "still one quota line for K" 1 "$A" count event=quota secret=K
mt_log_eq "and one for rule hold" 1 "$A" count event=quota rule=hold

# A higher limit applies to the count at once: one more, then refused.
mt_conf_set "$conf" secrets.K.quota '{"requests": 4, "per_seconds": 600}'
kill -HUP "$MT_MOATD_PID"
mt_wait_for 5 eval '[ "$(grep -c "reload done" "$MT_T/moatd.err")" -ge 2 ]' ||
    mt_fail "moatd reloaded again" "$MT_T/moatd.err"
mt_curl k7 -x "http://$MT_HTTP" http://key.w2.test/api/k7
mt_allowed "K's limit raised to 4: the 4th request passes" k7
mt_curl k8 -x "http://$MT_HTTP" http://key.w2.test/api/k8
mt_denied "and the 5th is refused" k8 429 key.w2.test quota-secret keyed

# --- the sandbox's quota (policy.quota, 300000 per 600 s), sandbox it-v6 ------
post s1 "$MT_HTTP6" http://free.w2.test/s1 "$MT_T/200k"
mt_allowed "it-v6: a POST within the sandbox's quota" s1
post s2 "$MT_HTTP6" http://free.w2.test/s2 "$MT_T/1m"
mt_log_eq "it-v6: the upload that crosses it was cut" 1 "$A" count \
    event=request path=/s2 reason=quota-bytes sandbox=it-v6
mt_mark
post s3 "$MT_HTTP6" http://free.w2.test/s3 "$MT_T/20k"
mt_denied "it-v6 past the sandbox's quota, a rule without one" s3 429 \
    free.w2.test quota-bytes free
mt_untouched "past the sandbox's quota nothing is dialled" origin
post s4 "$MT_HTTP" http://free.w2.test/s4 "$MT_T/20k"
mt_allowed "another sandbox has a quota of its own" s4
mt_log_eq "one quota line for it-v6's sandbox quota" 1 "$A" count \
    event=quota quota=sandbox sandbox=it-v6 rule=null limit=300000

# --- audit mode: a byte quota refuses nothing, a secret's still does --------
mt_conf_set "$conf" audit_only true
kill -HUP "$MT_MOATD_PID"
mt_wait_for 5 eval '[ "$(grep -c "reload done" "$MT_T/moatd.err")" -ge 3 ]' ||
    mt_fail "moatd reloaded into audit mode" "$MT_T/moatd.err"
post a1 "$MT_HTTP" http://hold.w2.test/a1 "$MT_T/20k"
mt_allowed "audit mode: rule hold past its quota lets the request through" a1
mt_log_eq "audit mode: ... as a would-deny" 1 "$A" count event=request \
    path=/a1 verdict=allow would_deny=quota-bytes rule=hold
mt_curl a2 -p -x "http://$MT_MIXED" -H 'Expect:' -T "$MT_T/16m" \
    http://tun.w2.test/store/audit
mt_eq "audit mode: a tunnel past rule tun's quota is not cut" 1 \
    "$(origin_got /store/audit 16777216)" "$MT_T/origin.log"
mt_log_eq "audit mode: its close line says it would have been" 1 "$A" \
    count event=close host=tun.w2.test would_deny=quota-bytes end=eof
mt_mark
mt_curl a3 -x "http://$MT_HTTP" http://key.w2.test/api/a3
mt_denied "audit mode: a secret's quota is still enforced" a3 429 \
    key.w2.test quota-secret keyed
mt_untouched "audit mode: ... and the request never reaches the origin" origin

# --- metrics, and no secret anywhere ----------------------------------------
m=$(mt_in moat curl -sS --max-time 3 --unix-socket "$MT_T/metrics.sock" \
    http://moatd/metrics 2>&1)
metric()
{
	echo "$m" | sed -n "s/^moat_quota_refusals_total{sandbox=\"$1\",kind=\"$2\"} //p"
}
got=$(metric it-http rule)
if [ -n "$got" ] && [ "$got" -ge 5 ]; then
	mt_pass "metrics: it-http's rule quota refusals ($got)"
else
	mt_fail "metrics: it-http's rule quota refusals '$got' (want >= 5)"
fi
got=$(metric it-mixed rule)
if [ -n "$got" ] && [ "$got" -ge 3 ]; then
	mt_pass "metrics: it-mixed's rule quota refusals ($got: a cut, 2 refused)"
else
	mt_fail "metrics: it-mixed's rule quota refusals '$got' (want >= 3)"
fi
mt_eq "metrics: it-http's secret quota refusals" 4 "$(metric it-http secret)"
mt_eq "metrics: it-v6's sandbox quota refusals (a cut, a refusal)" 2 \
    "$(metric it-v6 sandbox)"
mt_eq "the value is in no audit line" 0 \
    "$(grep -c -F -- "$K_REAL" "$A")" "$A"
mt_eq "the value is in none of moatd's messages" 0 \
    "$(grep -c -F -- "$K_REAL" "$MT_T/moatd.err")" "$MT_T/moatd.err"
mt_finish
