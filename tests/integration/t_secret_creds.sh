#!/bin/bash
# t_secret_creds.sh - placeholders where tools put credentials: Basic
# credentials (curl -u, URL userinfo, .netrc, npm's _auth, requests),
# swapped on the bound host and refused elsewhere, and the audit's
# "injected", through `moat run` (root, private moatd).
#
#   moat namespace: moat run + its private moatd (CA from `moat ca init`,
#   secrets K and COLON, a value with ":", from 0600 files)
#   +------------------------------------------------------------+
#   | sandbox: K=moat-ph-..., COLON=moat-ph-...; a copy of K's    |
#   |  real value (one that reached it some other way)            |
#   +------------------------------------------------------------+
#        | intercepted TLS (moatd's leaf), or plain HTTP (port 80)
#        v
#   net: origin.py 203.0.113.10:443 and :80 (origin.test: K and COLON
#          bound; port 80 with "plain_http": true)
#        origin.py 203.0.113.12:443 (other.test: allowed, intercepted,
#          nothing bound)
#
# Checks:
#  bound: the placeholder in the password (curl -u, https://user:PH@,
#    .netrc, a hand-made npm _auth, python requests with URL userinfo)
#    or in the user, as Basic in any case, spaces and padding, over TLS
#    and plain HTTP: the origin gets Basic credentials with the value,
#    encoded again; a value with ":" in the password goes, in the user it
#    is refused (secret-unsafe) and the origin gets nothing.
#  unbound: the same credentials to other.test, and the real value in
#    Basic, are refused (secret-leak, naming the secret) and other.test
#    gets nothing; a Bearer token that is base64 of the placeholder is
#    not decoded (documented) and goes as sent.
#  target: userinfo in an absolute-form request target is refused (400)
#    before anything else, placeholder or not.
#  audit: "injected" lists the secrets whose values went out, only:
#    ["K"] for a request that swapped K (the rule binds K and COLON),
#    none for one that swapped nothing, none for a refused one; neither a
#    value nor a placeholder is in the audit log or moatd's messages.

. "$(dirname "$0")/lib.sh"

mt_init
mt_run_need curl openssl
mt_world

K_REAL=sk-REAL-creds-3c9e51a07d2b46f8
COLON_REAL=colon:REAL-secret-8a6b4e
"$MOAT" ca init "$MT_T/ca" >/dev/null || mt_error "moat ca init failed"
mkdir -p "$MT_T/keys" && chmod 700 "$MT_T/keys"
printf '%s\n' "$K_REAL" > "$MT_T/keys/k.key"
printf '%s\n' "$COLON_REAL" > "$MT_T/keys/colon.key"
chmod 600 "$MT_T/keys/k.key" "$MT_T/keys/colon.key"
printf '%s' "$K_REAL" > "$MT_T/k-copy"

mt_other_origin "DNS:other.test"

cat > "$MT_T/policy.json" <<EOF
{
  "policy": {
    "default": "deny",
    "allow_private": ["203.0.113.0/24"],
    "rules": [
      {"name": "api", "action": "allow", "hosts": ["origin.test"],
       "ports": [443], "inject": [{"placeholders": ["K", "COLON"]}]},
      {"name": "api-plain", "action": "allow", "hosts": ["origin.test"],
       "ports": [80], "plain_http": true,
       "inject": [{"placeholders": ["K"]}]},
      {"name": "other", "action": "allow", "hosts": ["other.test"],
       "ports": [443], "intercept": true}
    ]
  },
  "secrets": {
    "K": {"file": "$MT_T/keys/k.key"},
    "COLON": {"file": "$MT_T/keys/colon.key"}
  },
  "tls": {"ca_cert": "$MT_T/ca/ca.crt", "ca_key": "$MT_T/ca/ca.key",
          "upstream_ca_files": ["$MT_T/origin.crt", "$MT_T/other.crt"]}
}
EOF

# --- the workload: KEY=VALUE lines -------------------------------------------
cat > "$MT_T/work.sh" <<EOF
#!/bin/bash
d=\$1
real=\$(cat $MT_T/k-copy)
echo "ph=\$K"
echo "colonph=\$COLON"
c() { curl -sS -m 8 -o /dev/null "\$@"; }
b64() { printf '%s' "\$1" | base64 -w0; }
# "basic", three spaces, no padding ("__token__:" + 40 bytes: one "=").
lower="basic   \$(b64 "__token__:\$K" | tr -d =)"
printf 'machine origin.test login me password %s\n' "\$K" > "\$d/netrc"
# bound: origin.test
c -w 'b_u=%{http_code}\n' -u "__token__:\$K" https://origin.test/b/u
c -w 'b_url=%{http_code}\n' "https://__token__:\$K@origin.test/b/url"
c -w 'b_netrc=%{http_code}\n' --netrc-file "\$d/netrc" https://origin.test/b/netrc
c -w 'b_npm=%{http_code}\n' -H "Authorization: Basic \$(b64 "npm:\$K")" \
    https://origin.test/b/npm
c -w 'b_lower=%{http_code}\n' -H "Authorization: \$lower" https://origin.test/b/lower
c -w 'b_user=%{http_code}\n' -u "\$K:x-oauth-basic" https://origin.test/b/user
c -w 'b_plain=%{http_code}\n' -u "u:\$K" http://origin.test/b/plain
c -w 'b_cpw=%{http_code}\n' -u "u:\$COLON" https://origin.test/b/cpw
c -D "\$d/cuser.hdr" -w 'b_cuser=%{http_code}\n' -u "\$COLON:pw" \
    https://origin.test/b/cuser
c -w 'b_none=%{http_code}\n' https://origin.test/b/none
/usr/bin/python3 - <<'PY'
import os
try:
    import requests
except ImportError:
    print("b_requests=absent")
else:
    try:
        r = requests.get("https://__token__:%s@origin.test/b/requests"
            % os.environ["K"], timeout=8)
        print("b_requests=%d" % r.status_code)
    except Exception as e:
        print("b_requests=%s" % type(e).__name__)
PY
# unbound: other.test
c -D "\$d/lu.hdr" -w 'l_u=%{http_code}\n' -u "__token__:\$K" https://other.test/l/u
c -w 'l_url=%{http_code}\n' "https://__token__:\$K@other.test/l/url"
c -w 'l_lower=%{http_code}\n' -H "Authorization: \$lower" https://other.test/l/lower
c -w 'l_user=%{http_code}\n' -u "\$K:x" https://other.test/l/user
c -w 'l_real=%{http_code}\n' -u "u:\$real" https://other.test/l/real
c -w 'l_bearer=%{http_code}\n' -H "Authorization: Bearer \$(b64 "\$K")" \
    https://other.test/l/bearer
# userinfo in the request target itself (curl would move it to Basic)
c -D "\$d/tgt.hdr" -w 't_userinfo=%{http_code}\n' \
    --request-target "http://u:\$K@origin.test/t/ui" http://origin.test/t/ui
exit 0
EOF
chmod 755 "$MT_T/work.sh"

mkdir -p "$MT_T/w"
A=$MT_T/audit-c.log
m_other=$(mt_lines "$MT_T/other.log")
mt_moat_run root s --policy "$MT_T/policy.json" $MT_RUN_WORLD \
    --name sbx-creds --audit "$A" -v -- "$MT_T/work.sh" "$MT_T/w"
mt_eq "moat run exits 0" 0 "$MT_RUN_RC" "$MT_T/s.err"
out=$MT_T/s.out
ph=$(mt_out s ph)
colonph=$(mt_out s colonph)
case $ph in
moat-ph-*) mt_pass "the sandbox holds a placeholder" ;;
*) mt_error "K in the sandbox: '$ph'" ;;
esac
O=$MT_T/origin.log

# auth_of PATH [LOG]: the Authorization the origin received for PATH.
auth_of()
{
	"$MT_PY" -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get("event") == "request" and r.get("path") == sys.argv[2]:
        print(",".join(v for n, v in r["headers"] if n.lower() == "authorization"))
' "${2:-$O}" "$1" | tail -n 1
}
basic() { printf 'Basic %s' "$(printf '%s' "$1" | base64 -w0)"; }

# --- bound: the value goes in, encoded again ----------------------------------
for w in u url netrc; do
	mt_eq "curl ($w): allowed" 200 "$(mt_out s "b_$w")" "$out"
done
mt_eq "curl -u __token__:PH: the origin got the value in Basic" \
    "$(basic "__token__:$K_REAL")" "$(auth_of /b/u)"
mt_eq "https://__token__:PH@origin.test/: the same" \
    "$(basic "__token__:$K_REAL")" "$(auth_of /b/url)"
mt_eq ".netrc: the same" "$(basic "me:$K_REAL")" "$(auth_of /b/netrc)"
mt_eq "npm's _auth (base64 of npm:PH): the value" \
    "200 $(basic "npm:$K_REAL")" "$(mt_out s b_npm) $(auth_of /b/npm)"
mt_eq "\"basic\", three spaces, no padding: swapped, the spelling kept, padded" \
    "200 basic   $(printf '%s' "__token__:$K_REAL" | base64 -w0)" \
    "$(mt_out s b_lower) $(auth_of /b/lower)"
mt_eq "the placeholder as the user (GitHub style): swapped" \
    "200 $(basic "$K_REAL:x-oauth-basic")" \
    "$(mt_out s b_user) $(auth_of /b/user)"
mt_eq "plain HTTP with \"plain_http\": true: swapped too" \
    "200 $(basic "u:$K_REAL")" "$(mt_out s b_plain) $(auth_of /b/plain)"
mt_eq "a value with \":\" in the password: sent" \
    "200 $(basic "u:$COLON_REAL")" "$(mt_out s b_cpw) $(auth_of /b/cpw)"
mt_eq "...in the user: refused, secret-unsafe" "403 secret-unsafe" \
    "$(mt_out s b_cuser) $(grep -i '^X-Moat-Reason:' "$MT_T/w/cuser.hdr" |
        tr -d '\r' | sed 's/^[^:]*: //')"
mt_eq "...the origin received nothing" 0 "$(mt_jl "$O" count path=/b/cuser)"
case $(mt_out s b_requests) in
absent) echo "SKIP: python3-requests not installed" ;;
*) mt_eq "python requests, URL userinfo: the value in Basic" \
    "200 $(basic "__token__:$K_REAL")" \
    "$(mt_out s b_requests) $(auth_of /b/requests)" ;;
esac

# --- unbound: a leak -----------------------------------------------------------
for w in u url lower user real; do
	mt_eq "other.test, Basic ($w): 403" 403 "$(mt_out s "l_$w")" "$out"
done
mt_eq "...reason secret-leak" "X-Moat-Reason: secret-leak" \
    "$(grep -i '^X-Moat-Reason:' "$MT_T/w/lu.hdr" | tr -d '\r')"
for p in /l/u /l/url /l/lower /l/user /l/real; do
	mt_log_eq "audit: $p is a secret-leak of K" 1 \
	    "$A" count reason=secret-leak host=other.test path=$p 'detail~secret K\b'
done
mt_eq "a Bearer token that is base64 of the placeholder: not decoded, sent" \
    "200 Bearer $(printf '%s' "$ph" | base64 -w0)" \
    "$(mt_out s l_bearer) $(auth_of /l/bearer "$MT_T/other.log")"
mt_eq "other.test received only that one" "/l/bearer" \
    "$(tail -n +$((m_other + 1)) "$MT_T/other.log" |
      mt_jl /dev/stdin dump event=request | "$MT_PY" -c '
import json, sys
print(" ".join(r["path"] for r in map(json.loads, sys.stdin)))')"

# --- userinfo in the request target ---------------------------------------------
mt_eq "userinfo in an absolute-form target: 400 bad-request" \
    "400 bad-request" "$(mt_out s t_userinfo) $(grep -i '^X-Moat-Reason:' \
        "$MT_T/w/tgt.hdr" | tr -d '\r' | sed 's/^[^:]*: //')"
mt_eq "...the origin never saw it" 0 "$(mt_jl "$O" count path=/t/ui)"

# --- audit: injected -----------------------------------------------------------
mt_log_eq "audit: injected names K alone (the rule binds K and COLON)" \
    '["K"]' "$A" get injected path=/b/u verdict=allow
mt_log_eq "...COLON alone where COLON went" '["COLON"]' \
    "$A" get injected path=/b/cpw verdict=allow
mt_log_eq "...nothing for a request that carried no placeholder" \
    injected "$A" missing injected path=/b/none verdict=allow
mt_log_eq "...nothing for a refused request" injected \
    "$A" missing injected path=/b/cuser reason=secret-unsafe
mt_log_eq "...nor for a leak" injected \
    "$A" missing injected path=/l/u reason=secret-leak
if grep -qaF -e "$K_REAL" -e "$COLON_REAL" -e "$ph" -e "$colonph" \
    -e "$(printf '%s' "__token__:$K_REAL" | base64 -w0)" "$A" "$MT_T/s.err"; then
	mt_fail "a value or a placeholder is in the audit log or moat's messages" "$A"
else
	mt_pass "no value, placeholder or encoded credential in the audit log or messages"
fi

mt_finish
