#!/bin/bash
# t_secret_framing.sh - responses keep their framing in a sandbox with
# secrets: only a host a secret is bound to is scanned, and what is
# scanned keeps its Content-Length (or its chunks), through `moat run`
# (root, private moatd, limits.body_inspect_bytes at its 1 MiB default).
#
#   moat namespace: moat run + its private moatd (CA from `moat ca init`,
#   secret K from a 0600 file)
#   +------------------------------------------------------------+
#   | sandbox: K=moat-ph-...                                      |
#   +------------------------------------------------------------+
#        | intercepted TLS (moatd's leaf), re-originated and verified
#        v
#   net: origin.py 203.0.113.10:443 (origin.test: K bound;
#          store.wild.test: K bound, "body": true, stores what it gets)
#        origin.py 203.0.113.12:443 (other.test: intercepted, unbound)
#
# Checks, each on the head and the bytes the client got:
#  unbound: 3 MB from other.test keep their Content-Length (they came
#    chunked before), unchanged, and HTTP/1.0 gets the same.
#  bound, nothing to rewrite: 3 MB keep their Content-Length, unchanged.
#  bound, an echoed value in a small body (/reflect, at most
#    body_inspect_bytes): the placeholder, and an exact Content-Length
#    for the new length; HTTP/1.0 alike.
#  bound, values in a 2 MB body (stored with "body": true, read back):
#    Content-Length as the upstream gave it, each value as many "*", no
#    piece of it, the rest byte for byte.
#  bound, chunked: chunked still, values become placeholders.

. "$(dirname "$0")/lib.sh"

mt_init
mt_run_need curl openssl
mt_world

K_REAL=sk-REAL-framing-5e0c7a92d41b3f68
"$MOAT" ca init "$MT_T/ca" >/dev/null || mt_error "moat ca init failed"
mkdir -p "$MT_T/keys" && chmod 700 "$MT_T/keys"
printf '%s\n' "$K_REAL" > "$MT_T/keys/k.key"
chmod 600 "$MT_T/keys/k.key"

mt_other_origin "DNS:other.test"

cat > "$MT_T/policy.json" <<EOF
{
  "policy": {
    "default": "deny",
    "allow_private": ["203.0.113.0/24"],
    "rules": [
      {"name": "api", "action": "allow", "hosts": ["origin.test"],
       "ports": [443], "inject": [{"placeholders": ["K"]}]},
      {"name": "store", "action": "allow", "hosts": ["store.wild.test"],
       "ports": [443], "inject": [{"placeholders": ["K"], "body": true}]},
      {"name": "other", "action": "allow", "hosts": ["other.test"],
       "ports": [443], "intercept": true}
    ]
  },
  "secrets": {"K": {"file": "$MT_T/keys/k.key"}},
  "tls": {"ca_cert": "$MT_T/ca/ca.crt", "ca_key": "$MT_T/ca/ca.key",
          "upstream_ca_files": ["$MT_T/origin.crt", "$MT_T/other.crt"]}
}
EOF

# A 2 MB body with the key at chunk-like boundaries and at its very end
# (written inside the sandbox with the placeholder, checked outside with
# the value in its place).
cat > "$MT_T/big.py" <<'EOF'
import sys
key, n = sys.argv[1].encode(), int(sys.argv[2])
out = bytearray()
for at in (0, 1000, 16383, 16384 * 3 - 5, 65536, 1048576 - 3, 1500000):
    out += b"z" * (at - len(out))
    out += key
out += b"y" * (n - len(key) - len(out))
out += key
sys.stdout.buffer.write(bytes(out))
EOF

# --- the workload ----------------------------------------------------------------
cat > "$MT_T/work.sh" <<EOF
#!/bin/bash
d=\$1
echo "ph=\$K"
g() { n=\$1; shift; curl -sS -m 20 -o "\$d/\$n.body" -D "\$d/\$n.hdr" \
    -w "\$n=%{http_code}\n" "\$@"; }
g other https://other.test/bytes/3000000
g other10 -0 https://other.test/bytes/3000000
g bound https://origin.test/bytes/3000000
g reflect -H "Authorization: Bearer \$K" https://origin.test/reflect
g reflect10 -0 -H "Authorization: Bearer \$K" https://origin.test/reflect
/usr/bin/python3 $MT_T/big.py "\$K" 2000000 > "\$d/big.in"
curl -sS -m 20 -o /dev/null -w 'put=%{http_code}\n' -X PUT \
    --data-binary @"\$d/big.in" https://store.wild.test/store/big
g big https://store.wild.test/store/big
g chunked "https://store.wild.test/store/big?chunked"
exit 0
EOF
chmod 755 "$MT_T/work.sh"

mkdir -p "$MT_T/w"
A=$MT_T/audit-f.log
mt_moat_run root s --policy "$MT_T/policy.json" $MT_RUN_WORLD \
    --name sbx-framing --audit "$A" -- "$MT_T/work.sh" "$MT_T/w"
mt_eq "moat run exits 0" 0 "$MT_RUN_RC" "$MT_T/s.err"
out=$MT_T/s.out
ph=$(mt_out s ph)
case $ph in
moat-ph-*) mt_pass "the sandbox holds a placeholder" ;;
*) mt_error "K in the sandbox: '$ph'" ;;
esac

# hdr NAME FIELD: the field's value in the head NAME got (lower-case name).
hdr()
{
	tr -d '\r' < "$MT_T/w/$1.hdr" | sed -n "s/^$2: //Ip" | tail -n 1
}
# framing NAME: "CL=N" or "chunked" or "none", as the head says.
framing()
{
	local cl te
	cl=$(hdr "$1" content-length)
	te=$(hdr "$1" transfer-encoding)
	if [ -n "$te" ]; then echo "$te"
	elif [ -n "$cl" ]; then echo "CL=$cl"
	else echo none; fi
}
size() { wc -c < "$MT_T/w/$1.body"; }
pattern() { "$MT_PY" -c '
import sys
p = bytes(range(32, 127)) * 700
n, out, sent = int(sys.argv[1]), bytearray(), 0
while sent < n:
    k = min(65536, n - sent); off = sent % 95
    out += p[off:off + k]; sent += k
sys.stdout.buffer.write(bytes(out))' "$1" | sha256sum | cut -d' ' -f1; }
sha() { sha256sum < "$MT_T/w/$1.body" | cut -d' ' -f1; }

# --- hosts no secret is bound to: not scanned --------------------------------------
want=$(pattern 3000000)
mt_eq "unbound host, 3 MB: 200 with its Content-Length" "200 CL=3000000" \
    "$(mt_out s other) $(framing other)" "$MT_T/w/other.hdr"
mt_eq "...the bytes as sent" "$want" "$(sha other)"
mt_eq "...HTTP/1.0 alike" "200 CL=3000000 $want" \
    "$(mt_out s other10) $(framing other10) $(sha other10)"

# --- a bound host ---------------------------------------------------------------------
mt_eq "bound host, 3 MB, no value: its Content-Length" "200 CL=3000000" \
    "$(mt_out s bound) $(framing bound)" "$MT_T/w/bound.hdr"
mt_eq "...the bytes as sent" "$want" "$(sha bound)"
body="auth=Bearer $ph"
mt_eq "an echoed value in a small body: the placeholder" "200 $body" \
    "$(mt_out s reflect) $(head -c ${#body} "$MT_T/w/reflect.body")"
mt_eq "...with an exact Content-Length for the new length" \
    "CL=$(size reflect)" "$(framing reflect)" "$MT_T/w/reflect.hdr"
mt_eq "...HTTP/1.0 alike" "200 CL=$(size reflect10) $body" \
    "$(mt_out s reflect10) $(framing reflect10) $(head -c ${#body} "$MT_T/w/reflect10.body")"
mt_eq "a 2 MB body with values stored (\"body\": true)" 201 "$(mt_out s put)" "$out"
# What the origin stored (the values in), and that with each as "*".
"$MT_PY" "$MT_T/big.py" "$ph" 2000000 | "$MT_PY" -c '
import sys
b, ph, v = sys.stdin.buffer.read(), sys.argv[1].encode(), sys.argv[2].encode()
b = b.replace(ph, v)
open(sys.argv[3], "wb").write(b)
open(sys.argv[4], "wb").write(b.replace(v, b"*" * len(v)))' \
    "$ph" "$K_REAL" "$MT_T/stored" "$MT_T/masked"
mt_eq "...read back: the upstream's Content-Length" \
    "200 CL=$(wc -c < "$MT_T/stored")" \
    "$(mt_out s big) $(framing big)" "$MT_T/w/big.hdr"
mt_eq "...each value as many \"*\", every other byte as stored" \
    "$(sha256sum < "$MT_T/masked" | cut -d' ' -f1)" "$(sha big)"
mt_eq "...no piece of the value" 0 \
    "$(grep -caF -e "${K_REAL:0:12}" -e "${K_REAL:12}" "$MT_T/w/big.body")"
want=$("$MT_PY" "$MT_T/big.py" "$ph" 2000000 | sha256sum | cut -d' ' -f1)
mt_eq "the same read back chunked: chunked, values as placeholders" \
    "200 chunked $want" "$(mt_out s chunked) $(framing chunked) $(sha chunked)"
if grep -rqaF "$K_REAL" "$MT_T/w" "$out"; then
	mt_fail "the value reached the sandbox"
else
	mt_pass "the value never reached the sandbox"
fi

mt_finish
