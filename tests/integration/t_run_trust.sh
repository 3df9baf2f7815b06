#!/bin/bash
# t_run_trust.sh - what the clients of a `moat run` sandbox trust and the
# proxy variables they take: httpx (Debian's) through ALL_PROXY to an
# intercepted origin with a secret injected; the CA files the caller
# named in SSL_CERT_FILE, REQUESTS_CA_BUNDLE, NODE_EXTRA_CA_CERTS and
# CURL_CA_BUNDLE merged into the sandbox's bundle; Java trusting the
# sandbox's trust store.
#
#   moat namespace: moat run, its private moatd (CA from moat ca init;
#   it trusts origin.crt upstream)
#   +------------------------------------------------------------+
#   | sandbox: API_KEY=moat-ph-..., ALL_PROXY=http://127.0.0.1:3128 |
#   |  SSL_CERT_FILE=... -> the sandbox's bundle (moat's CA, the    |
#   |  system's roots, the caller's private CA)                     |
#   |  /etc/ssl/certs/java/cacerts -> the same, PKCS12              |
#   +------------------------------------------------------------+
#          | n0
#          v
#   net: origin.py 203.0.113.10 :443 (origin.test: inspected, API_KEY
#        injected), 203.0.113.12 :443 (private.test: a certificate of a
#        private CA; an opaque tunnel, so the client checks it itself)
#
# Checks: httpx with only ALL_PROXY set reaches the intercepted origin,
# which receives the real key while the sandbox holds a placeholder (and
# gets it back scrubbed); aiohttp (trust_env) too; with each of the four
# variables naming the private CA, curl, urllib (OpenSSL), requests and
# node all trust private.test inside the sandbox, and the intercepted
# origin still works; a variable naming a missing file or a key is said
# on stderr and not merged; Java (java Fetch.java) trusts moat's leaf
# with no option, through the proxy (https.proxyHost) and transparently,
# trusts the private CA, and finds its trust store as PKCS12 there.
# Each client is skipped, with the reason, when it is not installed.

. "$(dirname "$0")/lib.sh"

mt_init
mt_run_need openssl
mt_zone_default
"$MT_PY" - "$MT_T/zone.json" <<'EOF'
import json, sys
z = json.load(open(sys.argv[1]))
z["private.test"] = [{"type": "A", "data": "203.0.113.12", "ttl": 1}]
json.dump(z, open(sys.argv[1], "w"))
EOF
mt_world

KEY_REAL=sk-REAL-trust-test-9d3e1f7a5b2c4e6d
"$MOAT" ca init "$MT_T/ca" >/dev/null || mt_error "moat ca init failed"

# A private CA, as a company has, and private.test's certificate from it.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$MT_T/pca.key" -out "$MT_T/pca.crt" -days 2 \
    -subj "/CN=moat test private CA" \
    -addext basicConstraints=critical,CA:true \
    -addext keyUsage=critical,keyCertSign,cRLSign >/dev/null 2>&1 &&
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$MT_T/priv.key" -out "$MT_T/priv.csr" -subj /CN=private.test \
    >/dev/null 2>&1 &&
printf 'subjectAltName=DNS:private.test\n' > "$MT_T/priv.ext" &&
openssl x509 -req -in "$MT_T/priv.csr" -CA "$MT_T/pca.crt" \
    -CAkey "$MT_T/pca.key" -CAcreateserial -out "$MT_T/priv.crt" -days 2 \
    -extfile "$MT_T/priv.ext" >/dev/null 2>&1 ||
    mt_error "openssl could not make the private CA"
touch "$MT_T/priv.log"
mt_bg priv net "$MT_PY" "$MT_HELPERS/origin.py" --name private \
    --log "$MT_T/priv.log" --lifetime "$MT_LIFETIME" --ready-fd 3 \
    --cert "$MT_T/priv.crt" --key "$MT_T/priv.key" \
    --tls-listen 203.0.113.12:443 || mt_error "private.test did not start"

cat > "$MT_T/policy.json" <<EOF
{
  "policy": {
    "default": "deny",
    "allow_private": ["203.0.113.0/24", "2001:db8::/32"],
    "rules": [
      {"name": "api", "action": "allow", "hosts": ["origin.test"],
       "ports": [443], "inject": [{"placeholders": ["API_KEY"]}]},
      {"name": "private", "action": "allow", "hosts": ["private.test"],
       "ports": [443]}
    ]
  },
  "secrets": {"API_KEY": {"env": "MOAT_TEST_KEY", "sandbox_env": "API_KEY"}},
  "tls": {"ca_cert": "$MT_T/ca/ca.crt", "ca_key": "$MT_T/ca/ca.key",
          "upstream_ca_files": ["$MT_T/origin.crt"]}
}
EOF

have() { command -v "$1" >/dev/null 2>&1; }
pyhas() { /usr/bin/python3 -c "import $1" >/dev/null 2>&1; }
have_httpx=""; pyhas httpx && have_httpx=1
have_aiohttp=""; pyhas aiohttp && have_aiohttp=1
have_requests=""; pyhas requests && have_requests=1
have_node=""; have node && have_node=1
have_java=""; have java && java -version >/dev/null 2>&1 && have_java=1
[ -n "$have_httpx" ] || echo "SKIP: httpx checks (python3-httpx not installed)"
[ -n "$have_aiohttp" ] || echo "SKIP: aiohttp checks (python3-aiohttp not installed)"
[ -n "$have_requests" ] || echo "SKIP: requests checks (python3-requests not installed)"
[ -n "$have_node" ] || echo "SKIP: node checks (nodejs not installed)"
[ -n "$have_java" ] || echo "SKIP: Java checks (default-jdk-headless not installed)"

# --- httpx and aiohttp: ALL_PROXY, an intercepted origin, a secret ---------
cat > "$MT_T/py.sh" <<EOF
#!/bin/sh
echo "all_proxy=\$ALL_PROXY"
echo "keyph=\$API_KEY"
if [ -n "$have_httpx" ]; then
	# Only ALL_PROXY: what httpx takes for every scheme.
	env -u HTTP_PROXY -u HTTPS_PROXY -u http_proxy -u https_proxy \\
	    /usr/bin/python3 - <<'PY'
import os, httpx
try:
    with httpx.Client(timeout=10) as c:
        r = c.get("https://origin.test/httpx",
                  headers={"Authorization": "Bearer " + os.environ["API_KEY"]})
    print("httpx=%d" % r.status_code)
    print("httpx_echo_has_ph=%s" % (os.environ["API_KEY"] in r.text))
except Exception as e:
    print("httpx=%s" % type(e).__name__)
    print("httpx_error=%s" % str(e)[:200])
PY
fi
if [ -n "$have_aiohttp" ]; then
	/usr/bin/python3 - <<'PY'
import asyncio, os, aiohttp
async def main():
    async with aiohttp.ClientSession(trust_env=True) as s:
        async with s.get("https://origin.test/aiohttp", headers={
                "Authorization": "Bearer " + os.environ["API_KEY"]}) as r:
            return r.status
try:
    print("aiohttp=%d" % asyncio.run(main()))
except Exception as e:
    print("aiohttp=%s" % type(e).__name__)
PY
fi
exit 0
EOF
chmod 755 "$MT_T/py.sh"
mt_mark
MOAT_TEST_KEY=$KEY_REAL mt_moat_run root py --policy "$MT_T/policy.json" \
    $MT_RUN_WORLD --name sbx-trust-py -- "$MT_T/py.sh"
mt_eq "moat run exits 0" 0 "$MT_RUN_RC" "$MT_T/py.err"
mt_eq "ALL_PROXY is the HTTP proxy" http://127.0.0.1:3128 "$(mt_out py all_proxy)"
ph=$(mt_out py keyph)
case $ph in
moat-ph-*) mt_pass "the sandbox holds a placeholder for API_KEY" ;;
*) mt_fail "API_KEY in the sandbox: '$ph'" "$MT_T/py.out" ;;
esac
if [ -n "$have_httpx" ]; then
	mt_eq "httpx (only ALL_PROXY set) reaches the intercepted origin" 200 \
	    "$(mt_out py httpx)" "$MT_T/py.out" "$MT_T/py.err"
	mt_eq "...which receives the real key for the placeholder" 1 \
	    "$(mt_jl "$MT_T/origin.log" count event=request path=/httpx \
	    "headers~Bearer $KEY_REAL")" "$MT_T/origin.log"
	mt_eq "...and the key it echoes comes back as the placeholder" True \
	    "$(mt_out py httpx_echo_has_ph)" "$MT_T/py.out"
fi
if [ -n "$have_aiohttp" ]; then
	mt_eq "aiohttp (trust_env) with ALL_PROXY set" 200 \
	    "$(mt_out py aiohttp)" "$MT_T/py.out" "$MT_T/py.err"
	mt_eq "...the origin receives the real key" 1 \
	    "$(mt_jl "$MT_T/origin.log" count event=request path=/aiohttp \
	    "headers~Bearer $KEY_REAL")" "$MT_T/origin.log"
fi
if grep -q "$KEY_REAL" "$MT_T/py.out"; then
	mt_fail "the real key reached the sandbox" "$MT_T/py.out"
else
	mt_pass "the real key never reached the sandbox"
fi

# --- the caller's private CA, merged ---------------------------------
# Each client fetches private.test (an opaque tunnel: it checks the
# private CA's certificate itself) and origin.test (moat's leaf).
cat > "$MT_T/ca.sh" <<EOF
#!/bin/sh
echo "vars=\$SSL_CERT_FILE \$REQUESTS_CA_BUNDLE \$CURL_CA_BUNDLE \$NODE_EXTRA_CA_CERTS"
curl -sS -m 8 -o /dev/null -w 'curl=%{http_code}\n' https://private.test/curl
curl -sS -m 8 -o /dev/null -w 'curlmoat=%{http_code}\n' https://origin.test/curl
/usr/bin/python3 - <<'PY'
import urllib.request
for k, u in (("urllib", "https://private.test/urllib"),
             ("urllibmoat", "https://origin.test/urllib")):
    try:
        print("%s=%d" % (k, urllib.request.urlopen(u, timeout=10).status))
    except Exception as e:
        print("%s=%s" % (k, type(e).__name__))
PY
if [ -n "$have_requests" ]; then
	/usr/bin/python3 - <<'PY'
import requests
for k, u in (("requests", "https://private.test/requests"),
             ("requestsmoat", "https://origin.test/requests")):
    try:
        print("%s=%d" % (k, requests.get(u, timeout=10).status_code))
    except Exception as e:
        print("%s=%s" % (k, type(e).__name__))
PY
fi
if [ -n "$have_node" ]; then
	# node's https ignores the proxy variables: the transparent path.
	node -e '
const https = require("https");
function get(k, u) {
  return new Promise(res => https.get(u, r => { r.resume();
    console.log(k + "=" + r.statusCode); res(); })
    .on("error", e => { console.log(k + "=" + (e.code || e.message)); res(); }));
}
get("node", "https://private.test/node").then(() =>
  get("nodemoat", "https://origin.test/node"));'
fi
exit 0
EOF
chmod 755 "$MT_T/ca.sh"
cp "$MT_T/pca.crt" "$MT_T/pca-copy.crt"
for var in SSL_CERT_FILE REQUESTS_CA_BUNDLE NODE_EXTRA_CA_CERTS CURL_CA_BUNDLE; do
	n=ca-$var
	# The caller's environment is what is merged (the variable set
	# inside would only name the file there).
	MOAT_TEST_KEY=$KEY_REAL env "$var=$MT_T/pca.crt" \
	    timeout -k 2 60 ip netns exec "$(mt_ns moat)" env \
	    MOAT_MOATD="$MOATD" MOAT_NETNS="$MOAT_NETNS" "$MOAT" run --no-tty \
	    --policy "$MT_T/policy.json" $MT_RUN_WORLD --name "sbx-$var" \
	    -- "$MT_T/ca.sh" </dev/null >"$MT_T/$n.out" 2>"$MT_T/$n.err"
	mt_eq "$var=private CA: moat run exits 0" 0 "$?" "$MT_T/$n.err"
	mt_eq "$var: curl trusts the private CA inside" 200 "$(mt_out "$n" curl)" \
	    "$MT_T/$n.out" "$MT_T/$n.err"
	mt_eq "$var: ...and moat's leaf" 200 "$(mt_out "$n" curlmoat)" "$MT_T/$n.out"
	mt_eq "$var: python urllib (OpenSSL) trusts the private CA" 200 \
	    "$(mt_out "$n" urllib)" "$MT_T/$n.out"
	mt_eq "$var: ...and moat's leaf" 200 "$(mt_out "$n" urllibmoat)" "$MT_T/$n.out"
	if [ -n "$have_requests" ]; then
		mt_eq "$var: requests trusts the private CA" 200 \
		    "$(mt_out "$n" requests)" "$MT_T/$n.out"
		mt_eq "$var: ...and moat's leaf" 200 \
		    "$(mt_out "$n" requestsmoat)" "$MT_T/$n.out"
	fi
	if [ -n "$have_node" ]; then
		mt_eq "$var: node trusts the private CA" 200 \
		    "$(mt_out "$n" node)" "$MT_T/$n.out"
		mt_eq "$var: ...and moat's leaf" 200 "$(mt_out "$n" nodemoat)" \
		    "$MT_T/$n.out"
	fi
	if grep -q 'not merged' "$MT_T/$n.err"; then
		mt_fail "$var: a warning about a file that was merged" "$MT_T/$n.err"
	fi
done
# The variables name the sandbox's bundle there, not the caller's file.
case $(mt_out ca-CURL_CA_BUNDLE vars) in
*pca*) mt_fail "a variable inside still names the caller's file" \
    "$MT_T/ca-CURL_CA_BUNDLE.out" ;;
*) mt_pass "inside, the variables name the sandbox's bundle" ;;
esac
# Two variables, one file, a copy, a missing file, a key: what can be
# merged is, once; the rest is said.
n=ca-mixed
MOAT_TEST_KEY=$KEY_REAL SSL_CERT_FILE=$MT_T/pca.crt \
    REQUESTS_CA_BUNDLE=$MT_T/pca.crt CURL_CA_BUNDLE=$MT_T/pca-copy.crt \
    NODE_EXTRA_CA_CERTS=$MT_T/missing.crt GIT_SSL_CAINFO=$MT_T/pca.key \
    timeout -k 2 60 ip netns exec "$(mt_ns moat)" env \
    MOAT_MOATD="$MOATD" MOAT_NETNS="$MOAT_NETNS" "$MOAT" run --no-tty \
    --policy "$MT_T/policy.json" $MT_RUN_WORLD --name sbx-mixed \
    -- sh -c 'echo "roots=$(grep -c "BEGIN CERTIFICATE" "$SSL_CERT_FILE")"
        echo "sys=$(grep -c "BEGIN CERTIFICATE" /etc/ssl/certs/ca-certificates.crt)"
        echo "key=$(grep -c "PRIVATE KEY" "$SSL_CERT_FILE")"
        curl -sS -m 8 -o /dev/null -w "curl=%{http_code}\n" https://private.test/m' \
    </dev/null >"$MT_T/$n.out" 2>"$MT_T/$n.err"
mt_eq "mixed: moat run exits 0" 0 "$?" "$MT_T/$n.err"
mt_eq "mixed: the private CA is trusted" 200 "$(mt_out "$n" curl)" "$MT_T/$n.out"
sysroots=$(grep -c "BEGIN CERTIFICATE" /etc/ssl/certs/ca-certificates.crt)
mt_eq "mixed: the bundle is moat's CA, the system's roots and the private CA once" \
    "$((sysroots + 2)) $((sysroots + 2))" \
    "$(mt_out "$n" roots) $(mt_out "$n" sys)" "$MT_T/$n.out"
mt_eq "mixed: no key in the bundle" 0 "$(mt_out "$n" key)" "$MT_T/$n.out"
grep -q "^moat run: NODE_EXTRA_CA_CERTS=$MT_T/missing.crt: not merged into the sandbox's trust bundle: No such file or directory" \
    "$MT_T/$n.err" && mt_pass "mixed: a missing file is said on stderr" ||
    mt_fail "mixed: no word about the missing file" "$MT_T/$n.err"
grep -q "^moat run: GIT_SSL_CAINFO=$MT_T/pca.key: not merged into the trust bundle: .*private key" \
    "$MT_T/$n.err" && mt_pass "mixed: a file with a key is refused, and said" ||
    mt_fail "mixed: no word about the key" "$MT_T/$n.err"

# --- Java ------------------------------------------------------------------
if [ -n "$have_java" ]; then
	cat > "$MT_T/Fetch.java" <<'EOF'
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

public class Fetch {
    public static void main(String[] args) throws Exception {
        HttpClient c = HttpClient.newBuilder()
            .proxy(java.net.ProxySelector.getDefault()).build();
        for (int i = 1; i < args.length; i++) {
            String tag = args[0] + i;
            try {
                HttpRequest q = HttpRequest.newBuilder(URI.create(args[i]))
                    .header("Authorization", "Bearer " + System.getenv("API_KEY"))
                    .build();
                HttpResponse<String> r = c.send(q,
                    HttpResponse.BodyHandlers.ofString());
                System.out.println(tag + "=" + r.statusCode());
            } catch (Exception e) {
                System.out.println(tag + "=" + e.getClass().getSimpleName());
                System.out.println(tag + "_error=" + e.getMessage());
            }
        }
    }
}
EOF
	cat > "$MT_T/java.sh" <<EOF
#!/bin/sh
echo "store=\$(head -c 4 /etc/ssl/certs/java/cacerts | od -An -tx1 | tr -d ' ')"
# No option: the transparent path, and the default trust store.
java "$MT_T/Fetch.java" t https://origin.test/java-transparent \\
    https://private.test/java 2>&1
# Through the proxy.
java -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=3128 \\
    "$MT_T/Fetch.java" p https://origin.test/java-proxy 2>&1
exit 0
EOF
	chmod 755 "$MT_T/java.sh"
	n=java
	host_store=$(sha256sum /etc/ssl/certs/java/cacerts 2>/dev/null)
	MOAT_TEST_KEY=$KEY_REAL SSL_CERT_FILE=$MT_T/pca.crt \
	    timeout -k 2 90 ip netns exec "$(mt_ns moat)" env \
	    MOAT_MOATD="$MOATD" MOAT_NETNS="$MOAT_NETNS" "$MOAT" run --no-tty \
	    --policy "$MT_T/policy.json" $MT_RUN_WORLD --name sbx-java \
	    -- "$MT_T/java.sh" </dev/null >"$MT_T/$n.out" 2>"$MT_T/$n.err"
	mt_eq "java: moat run exits 0" 0 "$?" "$MT_T/$n.err"
	# A DER SEQUENCE (30 82 ...): the JKS Debian ships starts fe ed fe ed.
	case $(mt_out java store) in
	30*) mt_pass "java: the default trust store is the sandbox's PKCS12 store" ;;
	*) mt_fail "java: /etc/ssl/certs/java/cacerts starts $(mt_out java store)" "$MT_T/java.out" ;;
	esac
	mt_eq "java: HttpClient trusts moat's leaf (transparent path)" 200 \
	    "$(mt_out java t1)" "$MT_T/java.out"
	mt_eq "java: ...and the private CA the caller named" 200 \
	    "$(mt_out java t2)" "$MT_T/java.out"
	mt_eq "java: through the proxy (https.proxyHost)" 200 \
	    "$(mt_out java p1)" "$MT_T/java.out"
	mt_eq "java: the origin receives the real key, twice" 2 \
	    "$(mt_jl "$MT_T/origin.log" count event=request 'path~^/java-' \
	    "headers~Bearer $KEY_REAL")" "$MT_T/origin.log"
	mt_eq "java: the host's own trust store is untouched" "$host_store" \
	    "$(sha256sum /etc/ssl/certs/java/cacerts 2>/dev/null)"
fi

mt_finish
