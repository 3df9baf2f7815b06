#!/bin/bash
# t_attach_listen.sh - `moat attach --listen`: sockets moat attach makes
# itself (a Unix socket, a loopback port), served by a running moatd for
# a relay such as srt; and `moat ca bundle -c CONFIG`.
#
#   cli: moat attach --listen unix:$MT_T/l/a.sock --listen 127.0.0.1:13128
#        curl / rawclient.py through them
#     --> moat: moatd (admin socket, CA; no listener of its own is used)
#     --> net: origin.py 203.0.113.10:443 (TLS, origin.crt)
#   (the full drawing is at the top of lib.sh)
#
# The registration's policy decides (a rule with paths and an injected
# header); the placeholder comes from --env-file, the bundle from
# --trust-bundle, both owned by --owner; the bundle is the one `moat ca
# bundle -c` writes for moatd's config.  The Unix socket has --owner and
# --listen-mode, another user cannot connect, a live socket is not taken
# over, a stale one is, and the socket is gone after SIGTERM.
# --connect-refusal in-tunnel answers a refused CONNECT inside it.

. "$(dirname "$0")/lib.sh"

mt_init setpriv
mt_need_moatd
[ -x "$MOAT" ] || mt_error "moat (the CLI) not built at $MOAT"
mt_world
"$MOAT" ca init "$MT_T/ca" >/dev/null || mt_error "moat ca init failed"
mkdir -p "$MT_T/adm" "$MT_T/l" "$MT_T/out"
chmod 755 "$MT_T" "$MT_T/l"
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_conf_set "$conf" admin "{\"address\": \"unix:$MT_T/adm/admin.sock\"}"
mt_conf_set "$conf" tls "{\"ca_cert\": \"$MT_T/ca/ca.crt\", \"ca_key\": \"$MT_T/ca/ca.key\", \"upstream_ca_files\": [\"$MT_T/origin.crt\"]}"
mt_moatd_start "$conf"
REAL=real-key-$RANDOM$RANDOM-for-the-origin
printf '%s' "$REAL" > "$MT_T/api.key"
chmod 600 "$MT_T/api.key"
cat > "$MT_T/policy.json" <<-EOF
{
  "policy": {
    "allow_private": ["203.0.113.0/24"],
    "rules": [
      {"name": "api", "action": "allow", "hosts": ["origin.test"],
       "ports": [443], "paths": ["/v1/*"],
       "inject": [{"header": "Authorization", "value": "Bearer \${API_KEY}"}]},
      {"name": "blocked", "action": "deny", "hosts": ["bad.origin.test"]}
    ]
  },
  "secrets": {"API_KEY": {"file": "$MT_T/api.key"}}
}
EOF
SOCK=$MT_T/l/a.sock
PORT=13128
ADM=(--moatd "unix:$MT_T/adm/admin.sock")

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

# --- the bundle of a static config ---------------------------------------------------
"$MOAT" ca bundle -c "$conf" -o "$MT_T/static.pem" >"$MT_T/cab.out" \
    2>"$MT_T/cab.err"
mt_eq "moat ca bundle -c: written" "0 1" \
    "$? $(grep -c "^wrote $MT_T/static.pem" "$MT_T/cab.out")" "$MT_T/cab.err"
sys=$(grep -c 'BEGIN CERTIFICATE' /etc/ssl/certs/ca-certificates.crt)
mt_eq "...moat's CA and the system's roots, no key" "$((sys + 1)) 0" \
    "$(grep -c 'BEGIN CERTIFICATE' "$MT_T/static.pem") $(grep -c 'PRIVATE KEY' "$MT_T/static.pem")"
"$MOAT" ca bundle -c "$MT_T/policy.json" >/dev/null 2>"$MT_T/cab2.err"
mt_eq "moat ca bundle -c on a config without a CA: refused" "1 1" \
    "$? $(grep -c 'has no tls.ca_cert' "$MT_T/cab2.err")" "$MT_T/cab2.err"

# --- attach: two sockets, the placeholders, the bundle -------------------------------
if ! mt_bg att cli "$MOAT" attach "${ADM[@]}" --listen "unix:$SOCK" \
    --listen "127.0.0.1:$PORT" --policy "$MT_T/policy.json" --name lsn \
    --owner nobody --listen-mode 0660 --env-file "$MT_T/out/moat.env" \
    --trust-bundle "$MT_T/out/bundle.pem" --connect-refusal in-tunnel \
    --ready-fd 3; then
	mt_fail "moat attach --listen got ready" "$MT_T/att.err" \
	    "$MT_T/moatd.err"
	mt_finish
fi
mt_eq "attach says what it serves" 1 \
    "$(grep -c "lsn serving unix:$SOCK 127.0.0.1:$PORT (http+socks5)" "$MT_T/att.out")"
mt_eq "the socket: owner and mode" "nobody 660 socket" \
    "$(stat -c '%U %a %F' "$SOCK" | sed 's/ file$//')"
mt_eq "--env-file and --trust-bundle: owned by --owner" "nobody 600 nobody 644" \
    "$(stat -c '%U %a' "$MT_T/out/moat.env") $(stat -c '%U %a' "$MT_T/out/bundle.pem")"
PH=$(sed -n 's/^API_KEY=//p' "$MT_T/out/moat.env")
case $PH in
moat-ph-*) mt_pass "--env-file: the placeholder of API_KEY" ;;
*) mt_fail "--env-file: '$(cat "$MT_T/out/moat.env")'" ;;
esac
if cmp -s "$MT_T/static.pem" "$MT_T/out/bundle.pem"; then
	mt_pass "moat ca bundle -c writes the bundle moatd hands a registration"
else
	mt_fail "moat ca bundle -c and --trust-bundle differ"
fi

# --- through the loopback port: injected, refused with moat's reasons ----------------
C=(-x "http://127.0.0.1:$PORT" --cacert "$MT_T/out/bundle.pem")
mt_curl a1 "${C[@]}" -H "Authorization: Bearer $PH" https://origin.test/v1/ok
mt_allowed "loopback port: an allowed request" a1
mt_eq "...the origin got the real key" "Bearer $REAL" "$(auth_of /v1/ok)"
mt_curl a2 "${C[@]}" https://origin.test/admin
mt_denied "loopback port: a path the rule does not list" a2 403 \
    origin.test path api
mt_curl a3 "${C[@]}" https://bad.origin.test/
mt_denied "loopback port: a refused CONNECT, answered inside the tunnel" \
    a3 403 bad.origin.test denied-by-rule blocked
mt_log_eq "audit: the registration's sandbox" 1 "$MT_T/audit.log" count \
    sandbox=lsn host=bad.origin.test event=open verdict=deny

# --- through the Unix socket ----------------------------------------------------------
mt_raw u1 --unix "$SOCK" --timeout 5 --raw-out "$MT_T/u1.raw" \
    --send "GET http://origin.test/v1/plain HTTP/1.1\\r\\nHost: origin.test\\r\\nConnection: close\\r\\n\\r\\n"
mt_eq "Unix socket: plain http to a 443-only rule: moat's 403" "403 port" \
    "$(mt_kv u1 status) $(mt_kv u1 header_x_moat_reason)" "$MT_T/u1.kv"
mt_raw u2 --unix "$SOCK" --timeout 5 --raw-out "$MT_T/u2.raw" \
    --send 'CONNECT other.test:80 HTTP/1.1\r\nHost: other.test:80\r\n\r\nGET / HTTP/1.1\r\nHost: other.test\r\n\r\n'
mt_eq "Unix socket: a refused CONNECT: 200, then moat's 403 inside" "2 1" \
    "$(mt_kv u2 responses) $(grep -c '^X-Moat-Reason: no-rule' "$MT_T/u2.raw")" \
    "$MT_T/u2.kv"
timeout -k 2 30 ip netns exec "$(mt_ns cli)" setpriv --reuid daemon \
    --regid daemon --clear-groups "$MT_PY" "$MT_HELPERS/rawclient.py" \
    --unix "$SOCK" --timeout 3 --send 'x' >"$MT_T/u3.kv" 2>&1
mt_eq "another user cannot connect to the socket" "0 1" \
    "$(sed -n 's/^connected=//p' "$MT_T/u3.kv") $(grep -ci 'permission denied' "$MT_T/u3.kv")" \
    "$MT_T/u3.kv"

# --- a second attach: a live socket is not taken over ----------------------------------
timeout -k 2 30 ip netns exec "$(mt_ns cli)" "$MOAT" attach "${ADM[@]}" \
    --listen "unix:$SOCK" --allow origin.test --name lsn2 \
    >/dev/null 2>"$MT_T/att2.err"
mt_eq "a second attach on the same live socket: refused" "1 1" \
    "$? $(grep -c 'another process listens on' "$MT_T/att2.err")" \
    "$MT_T/att2.err"
touch "$MT_T/l/plain"
timeout -k 2 30 ip netns exec "$(mt_ns cli)" "$MOAT" attach "${ADM[@]}" \
    --listen "unix:$MT_T/l/plain" --allow origin.test --name lsn3 \
    >/dev/null 2>"$MT_T/att3.err"
mt_eq "a path that is a file: refused, kept" "1 1 1" \
    "$? $(grep -c 'exists and is not a socket' "$MT_T/att3.err") $([ -f "$MT_T/l/plain" ] && echo 1)" \
    "$MT_T/att3.err"

# --- SIGTERM: unregistered, the socket removed -----------------------------------------
kill -TERM "$MT_RPID_att"
mt_wait_exit "$MT_PID_att"
mt_eq "SIGTERM: moat attach exits 0" 0 "$MT_WAIT_RC" "$MT_T/att.err"
mt_eq "...and removes its socket" absent \
    "$([ -e "$SOCK" ] && echo present || echo absent)"
mt_raw a4 --tcp "127.0.0.1:$PORT" --timeout 3 --send 'x'
mt_eq "...nothing serves the loopback port any more" 0 \
    "$(mt_kv a4 connected)" "$MT_T/a4.kv"

# A stale socket (its moat attach was killed) is replaced.
if mt_bg att4 cli "$MOAT" attach "${ADM[@]}" --listen "unix:$SOCK" \
    --allow origin.test --name lsn4 --ready-fd 3; then
	kill -KILL "$MT_RPID_att4"
	mt_wait_exit "$MT_PID_att4"
	if [ -S "$SOCK" ] && mt_bg att5 cli "$MOAT" attach "${ADM[@]}" \
	    --listen "unix:$SOCK" --allow origin.test --name lsn5 --ready-fd 3
	then
		mt_pass "a stale socket left by a killed attach is replaced"
		kill -TERM "$MT_RPID_att5"
		mt_wait_exit "$MT_PID_att5"
	else
		mt_fail "a stale socket: not replaced" "$MT_T/att5.err"
	fi
else
	mt_fail "moat attach --listen (lsn4) got ready" "$MT_T/att4.err"
fi

# --- the options that belong to --netns ------------------------------------------------
"$MOAT" attach --listen "unix:$SOCK" --mode veth >/dev/null 2>"$MT_T/o1.err"
mt_eq "--listen with --mode: a usage error" "2 1" \
    "$? $(grep -c 'apply to --netns' "$MT_T/o1.err")" "$MT_T/o1.err"
"$MOAT" attach --listen 10.200.0.1:3128 >/dev/null 2>"$MT_T/o2.err"
mt_eq "--listen on a non-loopback address: a usage error" "2 1" \
    "$? $(grep -c 'only a loopback address' "$MT_T/o2.err")" "$MT_T/o2.err"

mt_finish
