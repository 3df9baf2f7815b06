#!/bin/bash
# t_secret_exposure.sh - where a secret could still show: the audit
# log's copies of what the sandbox sent, injected values that would
# break a request's framing, and values an upstream reflects back (the
# status line, Range reads of a stored object), through `moat run`.
#
#   moat namespace: moat run + its private moatd (CA from `moat ca init`,
#   secrets K (one line) and PEM (several lines) from 0600 files)
#   +------------------------------------------------------------+
#   | sandbox: K=moat-ph-..., PEM=moat-ph-...; the real K in a   |
#   |  file it can read (a value that reached it some other way) |
#   +------------------------------------------------------------+
#        | intercepted TLS (moatd's leaf), re-originated and verified
#        v
#   net: origin.py 203.0.113.10:443 (origin.test: K and PEM bound;
#          enc.wild.test: PEM, "encode": "percent"; hdr.wild.test: PEM
#          in a header template; store.wild.test: K, "body": true)
#        origin.py 203.0.113.12:443 (other.test, *.w2.test: allowed,
#          not bound)
#
# Checks:
#  audit: the value or the placeholder in the path, the query, the
#    method, or a name (DNS, CONNECT) shows as [secret:K] in every audit
#    line, to an unbound host (denied) and to a bound one (allowed); the
#    audit log holds neither, nor do moatd's messages; a placeholder in
#    the name of an allowed, unbound host is a leak (CONNECT 403), never
#    resolved.
#  framing: PEM's placeholder in a header field or the target, and PEM
#    injected by a header template, are refused (secret-unsafe) and the
#    origin receives nothing; with "encode": "percent" the origin gets
#    the value percent-encoded in the query.
#  body: without "body": true a placeholder in a body to the bound host
#    is forwarded as it is.
#  reflected: a key the origin puts in its status line's reason phrase
#    comes back as the placeholder; an object stored with "body": true
#    (the value in it) read back with Range: moatd drops the Range, the
#    whole object comes back scrubbed, never a piece of the value.

. "$(dirname "$0")/lib.sh"

mt_init
mt_run_need curl openssl
mt_world

K_REAL=sk-REAL-exposure-7c41d09e2b5a8f36
"$MOAT" ca init "$MT_T/ca" >/dev/null || mt_error "moat ca init failed"
mkdir -p "$MT_T/keys" && chmod 700 "$MT_T/keys"
printf '%s\n' "$K_REAL" > "$MT_T/keys/k.key"
chmod 600 "$MT_T/keys/k.key"
# The value as the sandbox might have it by another way: not the secret
# file (moat run hides that one), a copy.
printf '%s' "$K_REAL" > "$MT_T/k-copy"
# A PEM-like value: LF, SP, "+", "/", "=".
PEM_REAL=$(printf -- '-----BEGIN TEST KEY-----\nMIIBVQIBADANBgkqhkiG9w0BAQEFAASC+/x=\nq7BFUl2 zz09==\n-----END TEST KEY-----')
printf '%s\n' "$PEM_REAL" > "$MT_T/keys/pem.key"
chmod 600 "$MT_T/keys/pem.key"

mt_other_origin "DNS:other.test,DNS:*.w2.test"

cat > "$MT_T/policy.json" <<EOF
{
  "policy": {
    "default": "deny",
    "allow_private": ["203.0.113.0/24"],
    "rules": [
      {"name": "api", "action": "allow", "hosts": ["origin.test"],
       "ports": [443], "inject": [{"placeholders": ["K", "PEM"]}]},
      {"name": "enc", "action": "allow", "hosts": ["enc.wild.test"],
       "ports": [443],
       "inject": [{"placeholders": ["PEM"], "encode": "percent"}]},
      {"name": "store", "action": "allow", "hosts": ["store.wild.test"],
       "ports": [443], "inject": [{"placeholders": ["K"], "body": true}]},
      {"name": "hdr", "action": "allow", "hosts": ["hdr.wild.test"],
       "ports": [443], "inject": [{"header": "X-Pem", "value": "\${PEM}"}]},
      {"name": "other", "action": "allow", "hosts": ["other.test", "*.w2.test"],
       "ports": [443], "intercept": true}
    ]
  },
  "secrets": {
    "K": {"file": "$MT_T/keys/k.key"},
    "PEM": {"file": "$MT_T/keys/pem.key"}
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
c() { curl -sS -m 8 -o /dev/null "\$@"; }
# audit: a value or a placeholder in what the sandbox sends
c -w 'a_ph_other=%{http_code}\n' "https://other.test/p/\$K?q=\$K"
c -w 'a_real_other=%{http_code}\n' "https://other.test/v/\$real?q=\$real"
c -w 'a_ph_bound=%{http_code}\n' "https://origin.test/b/\$K?q=\$K"
c -w 'a_real_bound=%{http_code}\n' "https://origin.test/r/\$real"
c -w 'a_method=%{http_code}\n' -X "\$K" https://other.test/m
c -w 'a_name=%{http_code}\n' "https://\$K.origin.test/n"
c -w 'a_vname=%{http_connect}\n' "https://\$K.w2.test/vn"
getent hosts "\$K.w2.test" >/dev/null
getent hosts "\$K.origin.test" >/dev/null
# framing: a value with LF and SP
c -D "\$d/bh.hdr" -w 'b_hdr=%{http_code}\n' -H "X-Key: \$PEM" https://origin.test/bh
c -D "\$d/bt.hdr" -w 'b_tgt=%{http_code}\n' "https://origin.test/bt?k=\$PEM"
c -D "\$d/bi.hdr" -w 'b_inj=%{http_code}\n' https://hdr.wild.test/bi
c -w 'b_enc=%{http_code}\n' "https://enc.wild.test/be?k=\$PEM&x=1"
c -w 'b_enc_hdr=%{http_code}\n' -H "X-Key: \$PEM" https://enc.wild.test/beh
# body: forwarded as written without "body": true
c -w 'c_body=%{http_code}\n' -d "key=\$K" https://origin.test/cb
# reflected: the reason phrase; a stored object read with Range
c -D "\$d/reason.hdr" -w 'c_reason=%{http_code}\n' \
    -H "Authorization: Bearer \$K" https://origin.test/reason
c -w 'c_put=%{http_code}\n' -X PUT --data-binary "xx\${K}yy" \
    https://store.wild.test/store/obj
curl -sS -m 8 -o "\$d/range.body" -w 'c_range=%{http_code}\n' \
    -H 'Range: bytes=5-12' https://store.wild.test/store/obj
curl -sS -m 8 -o "\$d/range2.body" -w 'c_range2=%{http_code}\n' \
    -H 'Range: bytes=2-10' -H 'If-Range: x' https://store.wild.test/store/obj
curl -sS -m 8 -o "\$d/full.body" -w 'c_full=%{http_code}\n' \
    https://store.wild.test/store/obj
exit 0
EOF
chmod 755 "$MT_T/work.sh"

mkdir -p "$MT_T/w"
A=$MT_T/audit-x.log
mt_moat_run root s --policy "$MT_T/policy.json" $MT_RUN_WORLD \
    --name sbx-x --audit "$A" -v -- "$MT_T/work.sh" "$MT_T/w"
mt_eq "moat run exits 0" 0 "$MT_RUN_RC" "$MT_T/s.err"
out=$MT_T/s.out
ph=$(mt_out s ph)
case $ph in
moat-ph-*) mt_pass "the sandbox holds a placeholder" ;;
*) mt_error "K in the sandbox: '$ph'" ;;
esac

# --- audit: [secret:K] for values and placeholders -----------------------------
mt_eq "the placeholder to an unbound host: 403" 403 "$(mt_out s a_ph_other)" "$out"
mt_eq "...audit: path and query show [secret:K]" \
    "/p/[secret:K]?q=[secret:K]" \
    "$(mt_jl "$A" get path reason=secret-leak host=other.test 'path~^/p/')"
mt_eq "the value to an unbound host: 403" 403 "$(mt_out s a_real_other)" "$out"
mt_eq "...audit: path and query show [secret:K]" \
    "/v/[secret:K]?q=[secret:K]" \
    "$(mt_jl "$A" get path reason=secret-leak host=other.test 'path~^/v/')"
mt_eq "the placeholder to the bound host: 200" 200 "$(mt_out s a_ph_bound)" "$out"
mt_eq "...audit: the path as sent, with [secret:K]" \
    "/b/[secret:K]?q=[secret:K]" \
    "$(mt_jl "$A" get path verdict=allow host=origin.test 'path~^/b/')"
mt_eq "...and the origin got the value" "/b/$K_REAL?q=$K_REAL" \
    "$(mt_jl "$MT_T/origin.log" get target 'path~^/b/')"
mt_eq "audit: the value sent to the bound host shows [secret:K]" \
    "/r/[secret:K]" \
    "$(mt_jl "$A" get path host=origin.test 'path~^/r/')"
mt_log_eq "audit: a placeholder as the method shows [secret:K]" 1 \
    "$A" count host=other.test 'method=[secret:K]' path=/m
mt_log_eq "audit: a placeholder in a CONNECT's name shows [secret:K]" 1 \
    "$A" count event=open 'host=[secret:K].origin.test'
mt_eq "the placeholder in an allowed name (unbound): CONNECT 403" 403 \
    "$(mt_out s a_vname)" "$out"
mt_log_eq "...audit: secret-leak, host shows [secret:K]" 1 \
    "$A" count event=open reason=secret-leak 'host=[secret:K].w2.test' 'detail~secret K'
mt_log_eq "...asked by DNS (allowed wildcard): dns-denied, secret-leak" 1 \
    "$A" count event=dns 'host=[secret:K].w2.test' reason=dns-denied qtype=A 'detail~^secret-leak'
mt_eq "...the name was never resolved nor sent" "0 0" \
    "$(grep -c 'moat-ph-' "$MT_T/dns.log") $(mt_jl "$MT_T/other.log" count 'host~w2')"
mt_log_eq "audit: ...and in a name asked by DNS" 1 \
    "$A" count event=dns 'host=[secret:K].origin.test' qtype=A
if grep -qaF -e "$K_REAL" -e "$ph" "$A"; then
	mt_fail "the value or the placeholder is in the audit log" "$A"
else
	mt_pass "neither the value nor the placeholder is in the audit log"
fi
if grep -qaF -e "$K_REAL" -e "$ph" "$MT_T/s.err"; then
	mt_fail "the value or the placeholder is in moat's messages" "$MT_T/s.err"
else
	mt_pass "neither is in moat run's / moatd's messages"
fi

# --- framing: a value that would break the request is never sent ------------------
O=$MT_T/origin.log
mt_eq "PEM's placeholder in a header field: 403" 403 "$(mt_out s b_hdr)" "$out"
mt_eq "...X-Moat-Reason: secret-unsafe" "X-Moat-Reason: secret-unsafe" \
    "$(grep -i '^X-Moat-Reason:' "$MT_T/w/bh.hdr" | tr -d '\r')"
mt_eq "...the origin received nothing" 0 "$(mt_jl "$O" count path=/bh)"
mt_log_eq "...audit: secret-unsafe, naming PEM" 1 \
    "$A" count reason=secret-unsafe path=/bh 'detail~PEM'
mt_eq "PEM's placeholder in the query: 403" 403 "$(mt_out s b_tgt)" "$out"
mt_eq "...X-Moat-Reason: secret-unsafe" "X-Moat-Reason: secret-unsafe" \
    "$(grep -i '^X-Moat-Reason:' "$MT_T/w/bt.hdr" | tr -d '\r')"
mt_eq "...the origin received nothing" 0 "$(mt_jl "$O" count path=/bt)"
mt_eq "PEM injected by a header template: 403" 403 "$(mt_out s b_inj)" "$out"
mt_eq "...X-Moat-Reason: secret-unsafe" "X-Moat-Reason: secret-unsafe" \
    "$(grep -i '^X-Moat-Reason:' "$MT_T/w/bi.hdr" | tr -d '\r')"
mt_eq "...the origin received nothing" 0 "$(mt_jl "$O" count path=/bi)"
mt_eq "with \"encode\": \"percent\": allowed" 200 "$(mt_out s b_enc)" "$out"
mt_eq "...the origin got the value percent-encoded in the query" \
    "k=$("$MT_PY" -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$PEM_REAL")&x=1" \
    "$(mt_jl "$O" get query path=/be)"
mt_eq "...but not in a header field: 403" 403 "$(mt_out s b_enc_hdr)" "$out"
mt_eq "...the origin received nothing" 0 "$(mt_jl "$O" count path=/beh)"
if grep -qaF "BEGIN TEST KEY" "$O" "$A" "$MT_T/s.err"; then
	mt_fail "PEM's value, unencoded, reached the origin or a log" "$O"
else
	mt_pass "PEM's value never went out unencoded, nor into a log"
fi

# --- body: swapped only on request ------------------------------------------------
mt_eq "a placeholder in a body to the bound host: allowed" 200 \
    "$(mt_out s c_body)" "$out"
mt_eq "...forwarded as written (no \"body\": true)" "key=$ph" \
    "$(mt_jl "$O" get body path=/cb)"

# --- reflected values --------------------------------------------------------------
mt_eq "a key in the reason phrase: 401 passed on" 401 "$(mt_out s c_reason)" "$out"
mt_eq "...the status line shows the placeholder, not the key" \
    "HTTP/1.1 401 Invalid API key Bearer $ph" \
    "$(grep '^HTTP/1.1 401' "$MT_T/w/reason.hdr" | tr -d '\r')"
mt_eq "...the origin had received the key" "Bearer $K_REAL" \
    "$(mt_jl "$O" get headers path=/reason | "$MT_PY" -c '
import json, sys
print(",".join(v for n, v in json.loads(sys.stdin.read()) if n.lower() == "authorization"))')"
mt_eq "an object stored with the value (\"body\": true)" 201 "$(mt_out s c_put)" "$out"
mt_eq "...the origin stored the value" "xx${K_REAL}yy" \
    "$(mt_jl "$O" get body path=/store/obj method=PUT)"
mt_eq "a Range read of a piece of the value: the whole object (200)" 200 \
    "$(mt_out s c_range)" "$out"
mt_eq "...scrubbed: the placeholder, no piece of the value" "xx${ph}yy" \
    "$(cat "$MT_T/w/range.body")"
mt_eq "...the same with If-Range and a range at the value's start" \
    "200 xx${ph}yy" "$(mt_out s c_range2) $(cat "$MT_T/w/range2.body")"
mt_eq "...the origin never saw Range or If-Range" 0 \
    "$(mt_jl "$O" count path=/store/obj 'headers~(?i)"(if-)?range"')"
mt_eq "a plain read: the placeholder" "xx${ph}yy" "$(cat "$MT_T/w/full.body")"
if grep -rqaF -e "${K_REAL:3:8}" -e "${K_REAL:0:9}" "$MT_T/w" "$out"; then
	mt_fail "a piece of the value reached the sandbox" "$out"
else
	mt_pass "no piece of the value in the sandbox's files or output"
fi

mt_finish
