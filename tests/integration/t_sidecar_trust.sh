#!/bin/bash
# t_sidecar_trust.sh - the Docker `--network none` recipe with TLS
# interception: moatd writes its trust bundle into the folder it shares
# with the container (tls.trust_dir), and the container's clients, given
# the environment and entrypoint of conf/docker/compose.yaml exactly as
# written there, trust it.  Built without Docker, as t_sidecar.sh is:
# the "container" is `unshare -n -m` with the folder bind-mounted
# read-only at /run/moat and conf/docker/resolv.conf over resolv.conf.
#
#   moat namespace                          "container" (unshare -n -m)
#   +-----------------------------+         +--------------------------------+
#   | moatd: http+socks5 on       |  bind   | /run/moat/proxy.sock           |
#   |  unix:$MT_T/sock/proxy.sock |<=mount=>| /run/moat/trust/ca-bundle.crt  |
#   |  tls.trust_dir              |  (ro)   |                 ca-bundle.p12  |
#   |   $MT_T/sock/trust          |         | moat-forward 127.0.0.1:3128,   |
#   +-----------------------------+         |  --refuse-dns 127.0.0.1:53     |
#          | n0                             | compose.yaml's app environment |
#          v                                +--------------------------------+
#   net: origin.py 203.0.113.12:443 (pkgs.test, --root: a PyPI simple
#        index and wheel, an npm registry stub and tarball), gitsrv.py
#        :8443 (git http-backend); moatd inspects both and injects a token
#
# Checks: moatd wrote the bundle (its CA first, no key) and the PKCS12
# store; curl, python requests, pip download, npm view and install, git
# clone (and Java, with compose's JAVA_TOOL_OPTIONS) succeed through
# interception and the origin got the injected token; Node's fetch, which
# ignores the proxy variables before Node 24, fails, and moat-forward
# says which name it looked up and what to set; with the fix the recipe
# gives (undici's EnvHttpProxyAgent preloaded, when the npm package undici
# is installed) it works; moat-forward answers DNS
# with REFUSED, ignores what is no query, never asks anyone.  Each client
# is skipped, with the reason, when it is not installed.

. "$(dirname "$0")/lib.sh"

mt_init unshare openssl
mt_need_moatd
[ -x "$MOAT_FORWARD" ] || mt_error "moat-forward not built at $MOAT_FORWARD"
COMPOSE=$MOAT_SRCDIR/conf/docker/compose.yaml
[ -f "$COMPOSE" ] || mt_error "no $COMPOSE"
mt_zone_default
"$MT_PY" - "$MT_T/zone.json" <<'EOF'
import json, sys
z = json.load(open(sys.argv[1]))
z["pkgs.test"] = [{"type": "A", "data": "203.0.113.12", "ttl": 1}]
json.dump(z, open(sys.argv[1], "w"))
EOF
mt_world

TOKEN_REAL=tok-REAL-sidecar-4c8e2a6f0b1d3e5f
"$MOAT" ca init "$MT_T/ca" >/dev/null || mt_error "moat ca init failed"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$MT_T/pkgs.key" -out "$MT_T/pkgs.crt" -days 2 \
    -subj /CN=pkgs.test -addext "subjectAltName=DNS:pkgs.test" \
    >/dev/null 2>&1 || mt_error "openssl could not make pkgs.test's certificate"

# --- what the origin serves: a PyPI index, an npm registry, a git repo -----
W=$MT_T/www
mkdir -p "$W/simple/moat-test-pkg" "$W/files" "$W/npm/moat-test-pkg/-" \
    "$MT_T/npmpkg/package"
"$MT_PY" "$MT_HELPERS/pypi_index.py" "$W" ||
    mt_error "cannot make the PyPI index"
printf '{"name": "moat-test-pkg", "version": "1.0.0", "main": "index.js"}\n' \
    > "$MT_T/npmpkg/package/package.json"
echo 'module.exports = "moat";' > "$MT_T/npmpkg/package/index.js"
tar -C "$MT_T/npmpkg" -czf "$W/npm/moat-test-pkg/-/moat-test-pkg-1.0.0.tgz" \
    package || mt_error "cannot make the npm tarball"
"$MT_PY" - "$W" <<'EOF'
import base64, hashlib, json, os, sys
w = sys.argv[1]
tgz = open(os.path.join(w, "npm/moat-test-pkg/-/moat-test-pkg-1.0.0.tgz"),
           "rb").read()
doc = {"name": "moat-test-pkg", "dist-tags": {"latest": "1.0.0"},
       "versions": {"1.0.0": {
           "name": "moat-test-pkg", "version": "1.0.0", "main": "index.js",
           "dist": {"tarball": "https://pkgs.test/npm/moat-test-pkg/-/"
                               "moat-test-pkg-1.0.0.tgz",
                    "shasum": hashlib.sha1(tgz).hexdigest(),
                    "integrity": "sha512-" + base64.b64encode(
                        hashlib.sha512(tgz).digest()).decode()}}}}
json.dump(doc, open(os.path.join(w, "npm/moat-test-pkg/index.json"), "w"))
EOF
touch "$MT_T/pkgs.log" "$MT_T/git.log"
mt_bg pkgs net "$MT_PY" "$MT_HELPERS/origin.py" --name pkgs \
    --log "$MT_T/pkgs.log" --lifetime "$MT_LIFETIME" --ready-fd 3 \
    --cert "$MT_T/pkgs.crt" --key "$MT_T/pkgs.key" --root "$W" \
    --tls-listen 203.0.113.12:443 || mt_error "pkgs.test did not start"
have_git=""
if command -v git >/dev/null 2>&1 &&
    [ -x "$(git --exec-path)/git-http-backend" ]; then
	mkdir -p "$MT_T/git" &&
	git init -q --bare "$MT_T/git/repo.git" &&
	git -C "$MT_T" init -q work && git -C "$MT_T/work" -c user.name=t \
	    -c user.email=t@t commit -q --allow-empty -m moat-sidecar-git &&
	git -C "$MT_T/work" push -q "$MT_T/git/repo.git" HEAD:refs/heads/main &&
	git --git-dir="$MT_T/git/repo.git" symbolic-ref HEAD refs/heads/main &&
	mt_bg gitsrv net "$MT_PY" "$MT_HELPERS/gitsrv.py" \
	    --listen 203.0.113.12:8443 --cert "$MT_T/pkgs.crt" \
	    --key "$MT_T/pkgs.key" --root "$MT_T/git" --log "$MT_T/git.log" \
	    --lifetime "$MT_LIFETIME" --ready-fd 3 && have_git=1
fi

# --- moatd: the recipe's listener, a CA, the trust folder -----------------
mkdir -p "$MT_T/sock"
chmod 755 "$MT_T" "$MT_T/sock"
conf=$MT_T/moatd.json
cat > "$conf" <<EOF
{
  "listen": [
    {"proto": "http+socks5", "address": "unix:$MT_T/sock/proxy.sock",
     "mode": "0666", "sandbox": "docker-app"}
  ],
  "policy": {
    "default": "deny",
    "allow_private": ["203.0.113.0/24", "2001:db8::/32"],
    "rules": [
      {"name": "pkgs", "action": "allow", "ports": [443, 8443],
       "hosts": ["pkgs.test"],
       "inject": [{"header": "X-Moat-Token", "value": "\${TOKEN}"}]}
    ]
  },
  "secrets": {"TOKEN": {"env": "MOAT_TEST_TOKEN"}},
  "tls": {"ca_cert": "$MT_T/ca/ca.crt", "ca_key": "$MT_T/ca/ca.key",
          "upstream_ca_files": ["$MT_T/pkgs.crt"],
          "trust_dir": "$MT_T/sock/trust"},
  "resolver": {"servers": ["203.0.113.53"]},
  "audit": {"path": "$MT_T/audit.log"}
}
EOF
MT_MOATD_ENV="MOAT_TEST_TOKEN=$TOKEN_REAL" mt_moatd_start "$conf"

T=$MT_T/sock/trust
if [ -f "$T/ca-bundle.crt" ] && [ -f "$T/ca-bundle.p12" ]; then
	mt_pass "moatd wrote ca-bundle.crt and ca-bundle.p12 into tls.trust_dir"
else
	mt_fail "no trust files in $T" "$MT_T/moatd.err"
fi
openssl x509 -in "$T/ca-bundle.crt" -noout -fingerprint -sha256 \
    >"$MT_T/first.fp" 2>/dev/null
openssl x509 -in "$MT_T/ca/ca.crt" -noout -fingerprint -sha256 >"$MT_T/ca.fp"
mt_eq "...the bundle starts with moatd's CA" "$(cat "$MT_T/ca.fp")" \
    "$(cat "$MT_T/first.fp")"
mt_eq "...and holds the system's roots, no key" \
    "$(($(grep -c 'BEGIN CERTIFICATE' /etc/ssl/certs/ca-certificates.crt) + 1)) 0" \
    "$(grep -c 'BEGIN CERTIFICATE' "$T/ca-bundle.crt") $(grep -c 'PRIVATE KEY' "$T/ca-bundle.crt")"
mt_eq "...mode 0644" "644 644" \
    "$(stat -c %a "$T/ca-bundle.crt") $(stat -c %a "$T/ca-bundle.p12")"
grep -q "trust: the clients of moatd's listeners trust $T/ca-bundle.crt" \
    "$MT_T/moatd.err" && mt_pass "...and said where at start" ||
    mt_fail "moatd did not say where the trust bundle is" "$MT_T/moatd.err"

# --- the container's environment and entrypoint, from compose.yaml ---------
"$MT_PY" - "$COMPOSE" "$MT_T/app.env" "$MT_T/app.entry" <<'EOF'
import json, re, sys
lines = open(sys.argv[1]).read().split("\n")
i = lines.index("  app:")
env, entry, key = {}, None, None
j = i + 1
while j < len(lines) and (lines[j].startswith("    ") or not lines[j]):
    l = lines[j]
    if l == "    environment:":
        j += 1
        while j < len(lines) and (lines[j].startswith("      ") or
                                  not lines[j].strip()):
            m = re.match(r"^      ([A-Za-z_][A-Za-z0-9_]*): (.*)$", lines[j])
            if m and m.group(2) == ">-":
                key, env[m.group(1)] = m.group(1), ""
            elif m:
                key = None
                env[m.group(1)] = m.group(2).strip().strip('"')
            elif key and lines[j].startswith("        "):
                env[key] = (env[key] + " " + lines[j].strip()).strip()
            j += 1
        continue
    if l.startswith("    entrypoint:"):
        text = l.split(":", 1)[1]
        while "]" not in text:
            j += 1
            text += lines[j]
        entry = json.loads(text)
    j += 1
with open(sys.argv[2], "w") as f:
    for k, v in env.items():
        f.write("%s=%s\n" % (k, v))
with open(sys.argv[3], "w") as f:
    f.write("\n".join(entry) + "\n")
EOF
[ -s "$MT_T/app.env" ] && [ -s "$MT_T/app.entry" ] ||
    mt_error "cannot read the app's environment and entrypoint from $COMPOSE"
mt_eq "compose.yaml: ALL_PROXY names the HTTP proxy" http://127.0.0.1:3128 \
    "$(sed -n 's/^ALL_PROXY=//p' "$MT_T/app.env")"
mt_eq "compose.yaml: the bundle variables name the shared folder" \
    /run/moat/trust/ca-bundle.crt "$(sed -n 's/^SSL_CERT_FILE=//p' "$MT_T/app.env")"
mapfile -t entry < "$MT_T/app.entry"
[ "${entry[0]}" = /opt/moat/moat-forward ] ||
    mt_error "compose.yaml's entrypoint is not moat-forward: ${entry[0]}"
entry[0]=$MOAT_FORWARD

# container NAME CMD...: CMD in a fresh network and mount namespace, lo
# up, the shared folder read-only at /run/moat, compose's resolv.conf,
# under compose's entrypoint with compose's environment (read from a
# file: JAVA_TOOL_OPTIONS holds spaces) and nothing else but HOME, PATH.
mkdir -p "$MT_T/home"
container()
{
	local n=$1
	shift
	timeout -k 2 90 unshare -n -m --propagation private \
	    env -i HOME="$MT_T/home" PATH=/usr/local/bin:/usr/bin:/bin sh -c '
	    set -e
	    ip link set lo up
	    mount -t tmpfs none /run
	    mkdir -p /run/moat
	    mount --bind -o ro "$1" /run/moat
	    mount --bind "$2" "$(realpath /etc/resolv.conf)"
	    envf=$3
	    shift 3
	    while IFS= read -r kv; do export "$kv"; done < "$envf"
	    exec "$@"' sh "$MT_T/sock" "$MOAT_SRCDIR/conf/docker/resolv.conf" \
	    "$MT_T/app.env" "${entry[@]}" "$@" >"$MT_T/$n.out" 2>"$MT_T/$n.err"
	MT_RC=$?
}

have_requests=""
/usr/bin/python3 -c 'import requests' 2>/dev/null && have_requests=1
have_pip=""
/usr/bin/python3 -m pip --version >/dev/null 2>&1 && have_pip=1
have_npm=""
command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1 && have_npm=1
have_node=""
command -v node >/dev/null 2>&1 && have_node=1
have_java=""
command -v java >/dev/null 2>&1 && java -version >/dev/null 2>&1 && have_java=1
[ -n "$have_requests" ] || echo "SKIP: requests (python3-requests not installed)"
[ -n "$have_pip" ] || echo "SKIP: pip (python3-pip not installed)"
[ -n "$have_npm" ] || echo "SKIP: npm (npm not installed)"
[ -n "$have_git" ] || echo "SKIP: git (git or git-http-backend not installed)"
[ -n "$have_java" ] || echo "SKIP: Java (default-jdk-headless not installed)"
[ -n "$have_node" ] || echo "SKIP: Node's fetch (nodejs not installed)"
# The recipe's answer for Node before 24: undici's EnvHttpProxyAgent as
# the global dispatcher, preloaded (the package from npm, if installed).
undici=""
if [ -n "$have_node" ]; then
	undici=$(NODE_PATH=$(npm root -g 2>/dev/null) node -p \
	    'require.resolve("undici")' 2>/dev/null) &&
	    NODE_PATH=$(npm root -g) node -e \
	    'process.exit(require("undici").EnvHttpProxyAgent ? 0 : 1)' \
	    2>/dev/null || undici=""
	[ -n "$undici" ] ||
	    echo "SKIP: undici's EnvHttpProxyAgent (npm package undici not installed)"
fi
printf 'const { setGlobalDispatcher, EnvHttpProxyAgent } = require("%s");\nsetGlobalDispatcher(new EnvHttpProxyAgent());\n' \
    "$undici" > "$MT_T/proxy.cjs"

cat > "$MT_T/Fetch.java" <<'EOF'
import java.net.ProxySelector;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

public class Fetch {
    public static void main(String[] args) throws Exception {
        // HttpClient takes the proxy only when asked for the default one.
        HttpClient c = HttpClient.newBuilder()
            .proxy(ProxySelector.getDefault()).build();
        try {
            HttpResponse<String> r = c.send(HttpRequest.newBuilder(
                URI.create(args[0])).build(),
                HttpResponse.BodyHandlers.ofString());
            System.out.println("java=" + r.statusCode());
        } catch (Exception e) {
            System.out.println("java=" + e.getClass().getSimpleName());
            System.out.println("java_error=" + e.getMessage());
        }
    }
}
EOF

cat > "$MT_T/app.sh" <<EOF
#!/bin/sh
# Caches where the test can throw them away.
export npm_config_cache=$MT_T/npmcache npm_config_update_notifier=false
export npm_config_fetch_retries=0
export PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
D=$MT_T/out
rm -rf "\$D"; mkdir -p "\$D"
curl -sS -m 10 -o /dev/null -w 'curl=%{http_code}\n' https://pkgs.test/curl
if [ -n "$have_requests" ]; then
	/usr/bin/python3 -c '
import requests
try:
    print("requests=%d" % requests.get("https://pkgs.test/requests",
                                       timeout=10).status_code)
except Exception as e:
    print("requests=%s" % type(e).__name__)
'
fi
if [ -n "$have_pip" ]; then
	/usr/bin/python3 -m pip download --no-deps -q -d "\$D/pip" \\
	    --index-url https://pkgs.test/simple/ moat-test-pkg \\
	    >"\$D/pip.log" 2>&1
	echo "pip=\$? \$(ls "\$D/pip" 2>/dev/null)"
fi
if [ -n "$have_npm" ]; then
	echo "npmview=\$(npm view moat-test-pkg version \\
	    --registry https://pkgs.test/npm/ 2>"\$D/npmview.log")"
	npm install --prefix "\$D/npm" --no-audit --no-fund --no-save \\
	    --registry https://pkgs.test/npm/ moat-test-pkg \\
	    >"\$D/npm.log" 2>&1
	echo "npm=\$? \$(cat "\$D/npm/node_modules/moat-test-pkg/index.js" 2>/dev/null)"
fi
if [ -n "$have_git" ]; then
	git clone -q https://pkgs.test:8443/repo.git "\$D/clone" \\
	    >"\$D/git.log" 2>&1
	echo "git=\$(git -C "\$D/clone" log --format=%s -1 2>/dev/null)"
fi
if [ -n "$have_java" ]; then
	java "$MT_T/Fetch.java" https://pkgs.test/java 2>"\$D/java.log"
fi
if [ -n "$have_node" ]; then
	echo "nodever=\$(node -p 'process.versions.node')"
	node -e 'fetch("https://pkgs.test/node-fetch").then(r =>
	    console.log("nodefetch=" + r.status)).catch(e =>
	    console.log("nodefetch=" + ((e.cause && e.cause.code) || e.message)))'
fi
if [ -n "$undici" ]; then
	NODE_OPTIONS=--require=$MT_T/proxy.cjs node -e '
	    fetch("https://pkgs.test/node-undici").then(r =>
	    console.log("nodeundici=" + r.status)).catch(e =>
	    console.log("nodeundici=" + ((e.cause && e.cause.code) || e.message)))' \
	    2>"\$D/undici.log"
fi
exit 0
EOF
chmod 755 "$MT_T/app.sh"

m_pkgs=$(mt_lines "$MT_T/pkgs.log")
m_git=$(mt_lines "$MT_T/git.log")
m_dns=$(mt_lines "$MT_T/dns.log")
container app "$MT_T/app.sh"
out=$MT_T/app.out
mt_eq "the container's command ran under compose's entrypoint" 0 "$MT_RC" \
    "$MT_T/app.err"
tail -n +"$((m_pkgs + 1))" "$MT_T/pkgs.log" > "$MT_T/pkgs.new"
got_token() {	# PATH-REGEX: requests to it that carried the real token
	mt_jl "$MT_T/pkgs.new" count event=request "path~$1" \
	    "headers~X-Moat-Token.*$TOKEN_REAL"
}
mt_eq "curl trusts the bundle in the shared folder (inspected)" 200 \
    "$(mt_out app curl)" "$out" "$MT_T/app.err"
mt_eq "...and the origin got the injected token" 1 "$(got_token '^/curl$')" \
    "$MT_T/pkgs.log"
if [ -n "$have_requests" ]; then
	mt_eq "python requests (REQUESTS_CA_BUNDLE)" 200 "$(mt_out app requests)" "$out"
	mt_eq "...the origin got the token" 1 "$(got_token '^/requests$')"
fi
if [ -n "$have_pip" ]; then
	mt_eq "pip download from a simple index (PIP_CERT)" \
	    "0 moat_test_pkg-1.0-py3-none-any.whl" "$(mt_out app pip)" "$out" \
	    "$MT_T/out/pip.log"
	mt_eq "...index page and wheel came through moatd, with the token" 2 \
	    "$(got_token '^/(simple/moat-test-pkg/|files/moat_test_pkg-1.0-py3-none-any.whl)$')" \
	    "$MT_T/pkgs.log"
fi
if [ -n "$have_npm" ]; then
	mt_eq "npm view against a registry stub (NPM_CONFIG_CAFILE)" 1.0.0 \
	    "$(mt_out app npmview)" "$out" "$MT_T/out/npmview.log"
	mt_eq "npm install of its tarball" '0 module.exports = "moat";' \
	    "$(mt_out app npm)" "$out" "$MT_T/out/npm.log"
	mt_eq "...the tarball came through moatd, with the token" 1 \
	    "$(got_token '^/npm/moat-test-pkg/-/moat-test-pkg-1.0.0.tgz$')" \
	    "$MT_T/pkgs.log"
fi
if [ -n "$have_git" ]; then
	mt_eq "git clone over https (GIT_SSL_CAINFO), git http-backend" \
	    moat-sidecar-git "$(mt_out app git)" "$out" "$MT_T/out/git.log"
	if tail -n +"$((m_git + 1))" "$MT_T/git.log" | grep -q upload-pack; then
		mt_pass "...the upload-pack requests reached the git server"
	else
		mt_fail "git server saw no upload-pack" "$MT_T/git.log"
	fi
fi
if [ -n "$have_java" ]; then
	mt_eq "Java with compose's JAVA_TOOL_OPTIONS (PKCS12 store, proxy)" 200 \
	    "$(mt_out app java)" "$out" "$MT_T/out/java.log"
	mt_eq "...the origin got the token" 1 "$(got_token '^/java$')"
fi

# --- Node's fetch: the proxy variables ignored before Node 24 ------------
if [ -n "$have_node" ]; then
	v=$(mt_out app nodever)
	major=${v%%.*}
	minor=${v#*.}
	minor=${minor%%.*}
	if [ "$major" -ge 24 ] || { [ "$major" = 22 ] && [ "$minor" -ge 21 ]; }; then
		mt_eq "node $v fetch uses the proxy (NODE_USE_ENV_PROXY=1)" 200 \
		    "$(mt_out app nodefetch)" "$out"
	else
		mt_eq "node $v fetch ignores the proxy variables: a DNS failure" \
		    EAI_AGAIN "$(mt_out app nodefetch)" "$out"
		grep -q '^moat-forward: a client looked up pkgs.test (refused: this container has no resolver): it ignores the proxy variables.*NODE_USE_ENV_PROXY=1' \
		    "$MT_T/app.err" &&
		    mt_pass "...and moat-forward says which name and what to set" ||
		    mt_fail "moat-forward said nothing about the lookup" "$MT_T/app.err"
	fi
fi

if [ -n "$undici" ]; then
	mt_eq "node fetch with undici's EnvHttpProxyAgent preloaded (NODE_OPTIONS)" \
	    200 "$(mt_out app nodeundici)" "$out" "$MT_T/out/undici.log"
	mt_eq "...the origin got the token" 1 "$(got_token '^/node-undici$')"
fi

# --- --refuse-dns itself -----------------------------------------------------
cat > "$MT_T/dnsq.sh" <<EOF
#!/bin/sh
echo "q1=\$(/usr/bin/python3 $MT_HELPERS/dnsq.py 127.0.0.1 api.example.com | tr '\n' ' ')"
# What is no query (an answer, a short datagram, a name by pointer) gets
# nothing back.
/usr/bin/python3 - <<'PY'
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(0.5)
hdr = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
for tag, d in (("short", b"\x12\x34\x01"),
               ("answer", b"\x12\x34\x81\x80" + hdr[4:] + b"\x01a\x00\x00\x01\x00\x01"),
               ("pointer", hdr + b"\xc0\x0c\x00\x01\x00\x01"),
               ("cut", hdr + b"\x05ab")):
    s.sendto(d, ("127.0.0.1", 53))
    try:
        s.recvfrom(600)
        print("%s=answered" % tag)
    except socket.timeout:
        print("%s=none" % tag)
PY
echo "q2=\$(/usr/bin/python3 $MT_HELPERS/dnsq.py 127.0.0.1 weird.example | tr '\n' ' ')"
EOF
chmod 755 "$MT_T/dnsq.sh"
container dnsq "$MT_T/dnsq.sh"
case $(mt_out dnsq q1) in
*rcode=REFUSED*) mt_pass "--refuse-dns answers a query REFUSED" ;;
*) mt_fail "--refuse-dns: '$(mt_out dnsq q1)'" "$MT_T/dnsq.out" "$MT_T/dnsq.err" ;;
esac
mt_eq "...and nothing to what is no query" "none none none none" \
    "$(mt_out dnsq short) $(mt_out dnsq answer) $(mt_out dnsq pointer) $(mt_out dnsq cut)" \
    "$MT_T/dnsq.out"
case $(mt_out dnsq q2) in
*rcode=REFUSED*) mt_pass "...still answering after them" ;;
*) mt_fail "--refuse-dns after bad datagrams: '$(mt_out dnsq q2)'" "$MT_T/dnsq.out" ;;
esac
grep -q 'looked up api.example.com (refused' "$MT_T/dnsq.err" &&
    mt_pass "...and names what was asked for" ||
    mt_fail "--refuse-dns log" "$MT_T/dnsq.err"
# moatd resolves pkgs.test for the proxy; what the container looked up
# itself went nowhere.
mt_eq "the names refused to the container never reached a DNS server" 0 \
    "$(tail -n +"$((m_dns + 1))" "$MT_T/dns.log" |
    grep -cE 'api\.example\.com|weird\.example')" "$MT_T/dns.log"
"$MOAT_FORWARD" --refuse-dns localhost:53 --to unix:/x >/dev/null \
    2>"$MT_T/arg.err"
mt_eq "--refuse-dns with a name: usage error" 2 "$?" "$MT_T/arg.err"

mt_finish
