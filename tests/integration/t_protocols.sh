#!/bin/bash
# t_protocols.sh - what an opaque tunnel may carry: the ClientHello's
# server name, and the rule's "protocols".
#
#   cli: curl, openssl s_client, sshlike.py client
#     --> moat: moatd 10.200.0.1:3128 (HTTP), :1080 (SOCKS5)
#     --> net: origin.py 203.0.113.10 :80 :443(TLS: origin.test, *.wild.test)
#              sshlike.py 203.0.113.10:2222 (banner "SSH-2.0-..."),
#                         203.0.113.10:2525 (banner "220 ..."),
#                         203.0.113.20:443  (banner "SSH-2.0-...")
#   (the full drawing is at the top of lib.sh)
#
# An opaque tunnel is spliced only after its first bytes were judged: a
# ClientHello for another name than the tunnel's host is refused
# (sni-mismatch: domain fronting), with both names in the audit line, and
# the origin hears nothing; no SNI is fine.  A rule's "protocols" ("tls",
# "http", "ssh"; "any" by default) is checked on the same bytes, and ssh
# on the server's banner, which the client sees only once judged.

. "$(dirname "$0")/lib.sh"

mt_init
mt_need_moatd
mt_topology
mt_zone_default
"$MT_PY" - "$MT_T/zone.json" <<'PY'
import json, sys
z = json.load(open(sys.argv[1]))
z["ssh443.test"] = [{"type": "A", "data": "203.0.113.20", "ttl": 1}]
z["git443.test"] = [{"type": "A", "data": "203.0.113.20", "ttl": 1}]
json.dump(z, open(sys.argv[1], "w"))
PY
mt_world_servers
touch "$MT_T/ssh.log" "$MT_T/smtp.log" "$MT_T/ssh443.log"
mt_bg ssh net "$MT_PY" "$MT_HELPERS/sshlike.py" server \
    --listen 203.0.113.10:2222 --banner "SSH-2.0-moattest" \
    --log "$MT_T/ssh.log" --ready-fd 3 --lifetime "$MT_LIFETIME" &&
mt_bg smtp net "$MT_PY" "$MT_HELPERS/sshlike.py" server \
    --listen 203.0.113.10:2525 --banner "220 smtp.test ESMTP" \
    --log "$MT_T/smtp.log" --ready-fd 3 --lifetime "$MT_LIFETIME" &&
mt_bg ssh443 net "$MT_PY" "$MT_HELPERS/sshlike.py" server \
    --listen 203.0.113.20:443 --banner "SSH-2.0-moattest" \
    --log "$MT_T/ssh443.log" --ready-fd 3 --lifetime "$MT_LIFETIME" ||
    mt_error "an sshlike.py server did not start"
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_conf_set "$conf" policy.rules '[
  {"name": "front", "action": "allow", "hosts": ["origin.test"], "ports": [80, 443]},
  {"name": "ssh-only", "action": "allow", "hosts": ["ssh.wild.test"],
   "ports": [80, 2222, 2525], "protocols": ["ssh"]},
  {"name": "tls-only", "action": "allow", "hosts": ["tls.wild.test"],
   "ports": [80, 443], "protocols": ["tls"]},
  {"name": "ssh-default", "action": "allow", "hosts": ["ssh443.test"],
   "ports": [443]},
  {"name": "ssh-or-tls", "action": "allow", "hosts": ["git443.test"],
   "ports": [443], "protocols": ["tls", "ssh"]},
  {"name": "by-ip", "action": "allow", "cidrs": ["203.0.113.10/32"],
   "ports": [443]},
  {"name": "blocked", "action": "deny", "hosts": ["evil.wild.test"]}]'
mt_conf_set "$conf" timeouts '{"request_head_ms": 3000}'
mt_moatd_start "$conf"
A=$MT_T/audit.log
H=$MT_HTTP
S=$MT_SOCKS

# tun NAME SSHLIKE_CLIENT_ARG...: sshlike.py client in the sandbox.
tun()
{
	local n=$1
	shift
	timeout -k 2 30 ip netns exec "$(mt_ns cli)" "$MT_PY" \
	    "$MT_HELPERS/sshlike.py" client --proxy "$H" "$@" \
	    > "$MT_T/$n.kv" 2>"$MT_T/$n.err"
}
# audit_of FILTER...: "reason host sni rule" of the last open line matching.
audit_of()
{
	local f
	for f in reason host sni rule; do
		printf '%s ' "$(mt_jl "$A" get $f event=open "$@")"
	done | sed 's/ $//'
}

# --- the server name must be the tunnel's host -----------------------------------
mt_mark
mt_curl f1 -x "http://$H" --cacert "$MT_T/origin.crt" \
    --connect-to evil.wild.test:443:origin.test:443 https://evil.wild.test/f1
if [ "$MT_CODE" != 200 ] && [ "$MT_CONNECT" = 200 ]; then
	mt_pass "CONNECT origin.test:443 carrying TLS for evil.wild.test: refused (curl exit $MT_RC)"
else
	mt_fail "domain fronting through CONNECT: HTTP $MT_CODE, CONNECT $MT_CONNECT" \
	    "$MT_T/f1.err"
fi
mt_curl f2 --socks5-hostname "$S" --cacert "$MT_T/origin.crt" \
    --connect-to evil.wild.test:443:origin.test:443 https://evil.wild.test/f2
mt_eq "the same through SOCKS5: no answer" 000 "$MT_CODE" "$MT_T/f2.err"
mt_wait_log "$A" '"proto":"socks5".*"sni":"evil.wild.test"' 50 || true
mt_eq "audit (CONNECT): sni-mismatch with both names" \
    "sni-mismatch origin.test evil.wild.test front" \
    "$(audit_of proto=connect sni=evil.wild.test)" "$A"
mt_eq "audit (SOCKS5): sni-mismatch with both names" \
    "sni-mismatch origin.test evil.wild.test front" \
    "$(audit_of proto=socks5 sni=evil.wild.test)" "$A"
mt_eq "the origin served no request for the fronted name" 0 \
    "$(mt_new origin | mt_jl /dev/stdin count event=request)"
mt_eq "...and never saw its ClientHello" 0 \
    "$(mt_new origin | mt_jl /dev/stdin count event=tls-error 'error~(?i)sni|hostname|unrecognized')"

mt_curl a1 -x "http://$H" --cacert "$MT_T/origin.crt" https://origin.test/a1
mt_allowed "TLS naming the tunnel's host passes" a1
out=$(printf 'GET /a2 HTTP/1.1\r\nHost: origin.test\r\nConnection: close\r\n\r\n' |
    mt_in cli timeout 10 openssl s_client -proxy "$H" \
    -connect origin.test:443 -noservername -ign_eof 2>&1)
if echo "$out" | grep -q "^HTTP/1.1 200"; then
	mt_pass "a ClientHello without a server name passes"
else
	mt_fail "no-SNI ClientHello: $(echo "$out" | grep -E 'HTTP/|error' | head -n 3)"
fi

# An opaque tunnel to an address an IP rule allows: a server name is judged
# with the address, and a deny rule for it wins.
mt_mark
mt_curl i1 -x "http://$H" --cacert "$MT_T/origin.crt" \
    --connect-to evil.wild.test:443:203.0.113.10:443 https://evil.wild.test/i1
mt_eq "TLS for a denied name through an allowed address: no answer" 000 \
    "$MT_CODE" "$MT_T/i1.err"
mt_wait_log "$A" '"host":"203.0.113.10".*"sni":"evil.wild.test"' 50 || true
mt_eq "audit: the deny rule's reason, both names" \
    "denied-by-rule 203.0.113.10 evil.wild.test blocked" \
    "$(audit_of host=203.0.113.10 sni=evil.wild.test)" "$A"
mt_eq "...and the origin served nothing" 0 \
    "$(mt_new origin | mt_jl /dev/stdin count event=request)"
mt_curl i2 -x "http://$H" --cacert "$MT_T/origin.crt" \
    --connect-to other.wild.test:443:203.0.113.10:443 https://other.wild.test/i2
mt_allowed "TLS for a name no rule names, through the allowed address" i2
# A special-purpose name ("localhost", private-address if it were dialled
# by name): nothing is resolved here, the address was judged (the bench's
# TLS workload sends "localhost" to 127.0.0.1).
mt_curl i3 -x "http://$H" -k \
    --connect-to localhost:443:203.0.113.10:443 https://localhost/i3
mt_allowed "TLS for localhost through the allowed address" i3

# --- protocols -------------------------------------------------------------------
mt_mark
tun p1 --target ssh.wild.test:2222 --send 'SSH-2.0-client\r\n'
mt_eq "protocols [ssh], an SSH server: banner and echo through" \
    'SSH-2.0-moattest\r\necho: SSH-2.0-client\r\n' "$(mt_kv p1 reply)" \
    "$MT_T/p1.kv" "$MT_T/p1.err"
tun p2 --target ssh.wild.test:80 \
    --send 'GET /p2 HTTP/1.1\r\nHost: ssh.wild.test\r\n\r\n'
mt_eq "protocols [ssh], HTTP from the client: closed, no answer" "1 " \
    "$(mt_kv p2 eof) $(mt_kv p2 reply)" "$MT_T/p2.kv"
mt_socks p3 --tcp "$S" --atyp domain --dst ssh.wild.test --port 80 \
    --http-get /p3 --http-host ssh.wild.test
mt_eq "protocols [ssh], HTTP through SOCKS5: no answer" "" \
    "$(mt_kv p3 http_status)" "$MT_T/p3.kv"
tun p4 --target ssh.wild.test:2525 --read-first --send 'EHLO x\r\n'
mt_eq "protocols [ssh], a server that greets with SMTP: the client sees nothing" \
    "" "$(mt_kv p4 first)$(mt_kv p4 reply)" "$MT_T/p4.kv"
tun p5 --target ssh.wild.test:80 --timeout 8 --send 'SSH-2.0-client\r\n'
mt_eq "protocols [ssh], an HTTP server (no banner): closed, no answer" "1 " \
    "$(mt_kv p5 eof) $(mt_kv p5 reply)" "$MT_T/p5.kv"
mt_curl p6 -x "http://$H" -p http://tls.wild.test/p6
mt_eq "protocols [tls], plain HTTP through CONNECT: no answer" 000 "$MT_CODE" \
    "$MT_T/p6.err"
mt_wait_log "$A" '"sandbox":"it-http".*"host":"tls.wild.test".*"reason":"protocol"' 50 || true
mt_eq "audit: HTTP under [ssh] refused, reason protocol" "protocol ssh-only" \
    "$(mt_jl "$A" get reason event=open host=ssh.wild.test port=80 proto=connect 'detail~carries http') $(mt_jl "$A" get rule event=open host=ssh.wild.test port=80 proto=connect 'detail~carries http')" "$A"
mt_log_eq "audit: an SSH client to a server without a banner: timeout" timeout \
    "$A" get reason event=open host=ssh.wild.test port=80 proto=connect 'detail~SSH'
mt_log_eq "audit: SMTP banner under [ssh] refused, reason protocol" protocol \
    "$A" get reason event=open host=ssh.wild.test port=2525
mt_log_eq "audit: HTTP under [tls] refused, reason protocol" protocol \
    "$A" get reason event=open host=tls.wild.test
mt_eq "the HTTP origin got none of the refused requests" 0 \
    "$(mt_new origin | mt_jl /dev/stdin count event=request)"
mt_eq "the SMTP server got no byte of the client's" 0 \
    "$(mt_jl "$MT_T/smtp.log" count event=data)"

mt_mark
mt_curl fw1 -x "http://$H" http://tls.wild.test/fw1
mt_denied "protocols [tls], a forward http:// request" fw1 403 \
    tls.wild.test protocol tls-only
mt_curl fw2 -x "http://$H" http://ssh.wild.test/fw2
mt_denied "protocols [ssh], a forward http:// request" fw2 403 \
    ssh.wild.test protocol ssh-only
mt_eq "the origin got neither forward request" 0 \
    "$(mt_new origin | mt_jl /dev/stdin count event=request)"

mt_curl p7 -x "http://$H" --cacert "$MT_T/origin.crt" \
    --connect-to tls.wild.test:443:tls.wild.test:443 https://tls.wild.test/p7
mt_allowed "protocols [tls], TLS for the tunnel's host passes" p7

# ssh over 443: by default (any protocol), and where a rule says ssh.
tun s1 --target ssh443.test:443 --send 'SSH-2.0-client\r\n'
mt_eq "ssh over 443 under a rule without protocols" \
    'SSH-2.0-moattest\r\necho: SSH-2.0-client\r\n' "$(mt_kv s1 reply)" \
    "$MT_T/s1.kv"
tun s2 --target git443.test:443 --read-first --send 'SSH-2.0-client\r\n'
mt_eq "ssh over 443 under protocols [tls, ssh]: banner first" \
    'SSH-2.0-moattest\r\n' "$(mt_kv s2 first)" "$MT_T/s2.kv"
mt_eq "...then the session" 'echo: SSH-2.0-client\r\n' "$(mt_kv s2 reply)" \
    "$MT_T/s2.kv"

# A CONNECT after a forward request on one kept-alive connection: the
# forward request's idle upstream is put back, not lost under the tunnel's.
out=$(mt_in cli timeout 20 "$MT_PY" - "${H%:*}" "${H##*:}" <<'PY'
import re, socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
def head():
    b = b""
    while b"\r\n\r\n" not in b:
        d = s.recv(1)
        if not d:
            break
        b += d
    return b.decode("latin-1")
s.sendall(b"GET http://origin.test/ka HTTP/1.1\r\nHost: origin.test\r\n\r\n")
h = head()
n = int(re.search(r"(?i)content-length: *(\d+)", h).group(1))
while n > 0:
    n -= len(s.recv(n))
s.sendall(b"CONNECT origin.test:443 HTTP/1.1\r\nHost: origin.test:443\r\n\r\n")
print(h.split(" ")[1], head().split(" ")[1])
PY
)
mt_eq "forward request, then CONNECT, on one connection: both answered" \
    "200 200" "$out"
mt_curl ka2 -x "http://$H" http://origin.test/ka2
mt_allowed "...and moatd serves the next client" ka2

if mt_moatd_alive; then
	mt_pass "moatd survived"
else
	mt_fail "moatd died" "$MT_T/moatd.err"
fi
mt_finish
