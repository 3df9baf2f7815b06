#!/bin/bash
# t_stall.sh - every phase has a deadline: stalled bodies, keepalive on the
# sockets, refusals during a drain, DNS over TCP, and the audit line of a
# request head (or SOCKS5 handshake) cut by its deadline.
#
#   cli: rawclient.py / curl / python3 --> moat: moatd 10.200.0.1:3128
#     (http), :1080 (socks5), :53 (dns), unix proxy.sock; CA from `moat ca
#     init`, origin.test:443 inspected; idle_body_ms 1500,
#     request_head_ms 1000, idle_client_ms 3000, drain_ms 6000
#     --> net: origin.py 203.0.113.10 (/stall/N: a head promising N bytes,
#              64 KiB, then nothing; /slow/MS)
#   (the full drawing is at the top of lib.sh)
#
# A response body that stalls (forward and inside an inspected tunnel) is
# cut after idle_body_ms and audited as a timeout, and the origin sees its
# connection closed; a request body that stalls gets 504; bodies that move
# slowly but steadily, and a slow response head, are not cut.  Both
# sockets of a tunnel carry TCP keepalive (read with ss; the upstream's
# from the tunnel's first second on).  DNS over TCP:
# an idle connection lasts idle_client_ms, a partial query request_head_ms.
# A head cut by request_head_ms gets 408 and an audit line, as do a
# SOCKS5 greeting and request cut short; a connection that sent nothing
# gets none.  Draining: a new connection is refused at once (TCP and
# Unix) while an open request completes.

. "$(dirname "$0")/lib.sh"

mt_init
mt_need_moatd
[ -x "$MOAT" ] || mt_error "moat (the CLI) not built at $MOAT"
command -v ss >/dev/null 2>&1 || mt_skip "needs ss (iproute2)"
mt_world
"$MOAT" ca init "$MT_T/ca" >/dev/null || mt_error "moat ca init failed"
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_conf_set "$conf" listen.+ '{"proto": "dns", "address": "10.200.0.1:53", "sandbox": "it-dns"}'
mt_conf_set "$conf" policy.rules.^ '{"name": "inspected", "action": "allow",
  "hosts": ["origin.test"], "ports": [443], "intercept": true}'
mt_conf_set "$conf" tls "{\"ca_cert\": \"$MT_T/ca/ca.crt\", \"ca_key\": \"$MT_T/ca/ca.key\", \"upstream_ca_files\": [\"$MT_T/origin.crt\"]}"
mt_conf_set "$conf" timeouts '{"idle_body_ms": 1500, "request_head_ms": 1000,
  "idle_client_ms": 3000, "drain_ms": 6000}'
mt_moatd_start "$conf"
A=$MT_T/audit.log
BIG=10737418240		# 10 GiB promised, 64 KiB sent

# within MESSAGE MS LO HI [FILE...]: LO <= MS <= HI.
within()
{
	local msg=$1 ms=$2 lo=$3 hi=$4
	shift 4
	if [[ $ms =~ ^[0-9]+$ ]] && [ "$ms" -ge "$lo" ] && [ "$ms" -le "$hi" ]
	then
		mt_pass "$msg ($ms ms, want $lo-$hi)"
	else
		mt_fail "$msg: '${ms:-?}' ms, want $lo-$hi" "$@"
	fi
}

# --- a response body that stalls (forward proxy) ---------------------------------
mt_mark
mt_raw s1 --tcp "$MT_HTTP" --timeout 12 \
    --send "GET http://origin.test/stall/$BIG HTTP/1.1\r\nHost: origin.test\r\n\r\n"
mt_eq "stalled response: the head came through" 200 "$(mt_kv s1 status)" \
    "$MT_T/s1.kv"
mt_eq "stalled response: then moatd closed the connection" 1 \
    "$(mt_kv s1 eof)" "$MT_T/s1.kv"
within "stalled response: cut after idle_body_ms 1500" "$(mt_kv s1 eof_ms)" \
    1400 5000 "$MT_T/s1.kv"
mt_log_eq "audit: the stalled response is a timeout" timeout \
    "$A" get reason event=request "path=/stall/$BIG"
mt_eq "audit: ...which says the response body stalled, the upstream silent" \
    1 "$(mt_jl "$A" count event=request "path=/stall/$BIG" \
    'detail~the response body stalled: the upstream sent nothing')" "$A"
mt_wait_log "$MT_T/origin.log" '"event": "stall"' 50 ||
    mt_fail "the origin never ended its stall" "$MT_T/origin.log"
mt_eq "the origin saw its connection closed by moatd" true \
    "$(mt_new origin | mt_jl /dev/stdin get peer_closed event=stall)" \
    "$MT_T/origin.log"

# --- a request body that stalls --------------------------------------------------
{
	printf 'POST http://origin.test/upload HTTP/1.1\r\nHost: origin.test\r\n'
	printf 'Content-Length: 1000000\r\n\r\n'
	head -c 10240 /dev/zero
} > "$MT_T/up.bin"
mt_raw u1 --tcp "$MT_HTTP" --timeout 12 --send-file "$MT_T/up.bin"
mt_eq "stalled upload: 504" "504 timeout" \
    "$(mt_kv u1 status) $(mt_kv u1 header_x_moat_reason)" "$MT_T/u1.kv"
within "stalled upload: answered after idle_body_ms 1500" \
    "$(mt_kv u1 eof_ms)" 1400 5000 "$MT_T/u1.kv"
mt_log_eq "audit: the stalled upload, 504, the client silent" 1 \
    "$A" count event=request path=/upload reason=timeout status=504 \
    'detail~the request body stalled: the client sent nothing'

# --- slow but moving: not cut ------------------------------------------------------
# 30 body bytes, one per 100 ms: 3 s in all, never 1.5 s without a byte.
mt_raw u2 --tcp "$MT_HTTP" --timeout 12 --drip-ms 100 \
    --drip-after 80 --send 'POST http://origin.test/drip HTTP/1.1\r\nHost: origin.test\r\nContent-Length: 30\r\n\r\n012345678901234567890123456789'
mt_eq "an upload dripped over 3 s: answered by the origin" "200 30" \
    "$(mt_kv u2 status) $(mt_new origin | mt_jl /dev/stdin get body_len \
    event=request path=/drip)" "$MT_T/u2.kv"
# A reader of 64 KiB/s for 4 s: it is the client that ends the transfer.
mt_bg slowrd cli "$MT_PY" "$MT_HELPERS/slowread.py" --proxy "$MT_HTTP" \
    --rate 65536 --duration 4 --ready-fd 3 \
    --url http://origin.test/bytes/200000000 ||
    mt_fail "the slow reader got no data" "$MT_T/slowrd.out"
mt_wait_exit "$MT_PID_slowrd" 100
mt_wait_log "$A" '"path":"/bytes/200000000"' 50
mt_eq "a slow reader (4 s at 64 KiB/s) is not cut as stalled" \
    "bad-request" "$(mt_jl "$A" get reason event=request \
    path=/bytes/200000000)" "$A" "$MT_T/slowrd.out"
mt_curl sh -x "http://$MT_HTTP" http://origin.test/slow/2500
mt_allowed "a response head after 2.5 s (the body clock is not its deadline)" sh

# --- inside an inspected tunnel ------------------------------------------------------
C=(-x "http://$MT_HTTP" --cacert "$MT_T/ca/ca.crt")
t0=$(date +%s%N)
mt_curl i1 "${C[@]}" -o /dev/null "https://origin.test/stall/$BIG"
ms=$((($(date +%s%N) - t0) / 1000000))
mt_eq "inspected tunnel, stalled response: curl sees the transfer cut (exit 18)" \
    18 "$MT_RC" "$MT_T/i1.err"
within "inspected tunnel, stalled response: cut after idle_body_ms" "$ms" \
    1400 6000
mt_log_eq "audit: the request inside the tunnel, timeout" 1 \
    "$A" count event=request proto=https "path=/stall/$BIG" \
    reason=timeout 'detail~the response body stalled'
out=$(mt_in cli "$MT_PY" - "$MT_T/ca/ca.crt" <<'EOF2'
import socket, ssl, sys, time
s = socket.create_connection(("10.200.0.1", 3128), timeout=10)
s.sendall(b"CONNECT origin.test:443 HTTP/1.1\r\nHost: origin.test:443\r\n\r\n")
r = b""
while b"\r\n\r\n" not in r:
    r += s.recv(1)
ctx = ssl.create_default_context(cafile=sys.argv[1])
t = ctx.wrap_socket(s, server_hostname="origin.test")
t.sendall(b"POST /upload HTTP/1.1\r\nHost: origin.test\r\n"
          b"Content-Length: 1000000\r\n\r\n" + b"x" * 10240)
t0 = time.monotonic()
data = b""
try:
    while True:
        b = t.recv(65536)
        if not b:
            break
        data += b
except (OSError, ssl.SSLError):
    pass
print("%s %d" % (data.split(b" ")[1].decode() if data else "none",
                 int((time.monotonic() - t0) * 1000)))
EOF2
)
mt_eq "inspected tunnel, stalled upload: 504" 504 "${out%% *}"
within "inspected tunnel, stalled upload: after idle_body_ms" "${out##* }" \
    1400 5000
mt_log_eq "audit: the upload inside the tunnel, timeout" 1 \
    "$A" count event=request proto=https path=/upload \
    reason=timeout 'detail~the request body stalled'

# --- TCP keepalive on both sockets of a tunnel ------------------------------------
mt_bg hold cli "$MT_PY" "$MT_HELPERS/hold.py" --proxy "$MT_HTTP" \
    --target origin.test:8080 --count 1 --out "$MT_T/hold.out" \
    --lifetime 60 --ready-fd 3 || mt_fail "hold.py did not start"
# The upstream's goes on once the tunnel has lived a second
# (TUNNEL_KEEPALIVE_MS in proxy/tunnel.h): read until both show it.
ka_both()
{
	mt_in moat ss -tnoH state established > "$MT_T/ss.out" 2>&1
	c=$(grep -F '10.200.0.1:3128' "$MT_T/ss.out" |
	    grep -c 'timer:(keepalive')
	u=$(grep -E '(203\.0\.113\.10|\[2001:db8::10\]):8080' \
	    "$MT_T/ss.out" | grep -c 'timer:(keepalive')
	[ "$c" = 1 ] && [ "$u" = 1 ]
}
mt_wait_for 5 ka_both || true
mt_eq "keepalive on the tunnel's client socket" 1 "$c" "$MT_T/ss.out"
mt_eq "keepalive on the tunnel's upstream socket" 1 "$u" "$MT_T/ss.out"
kill -TERM "$MT_PID_hold"
mt_wait_exit "$MT_PID_hold" 30

# --- DNS over TCP ---------------------------------------------------------------------
mt_raw d1 --tcp 10.200.0.1:53 --timeout 10 --send ''
within "DNS over TCP, idle: closed after idle_client_ms 3000" \
    "$(mt_kv d1 eof_ms)" 2700 6500 "$MT_T/d1.kv"
mt_raw d2 --tcp 10.200.0.1:53 --timeout 10 --send '\x00\x20\x12\x34\x01'
within "DNS over TCP, part of a query: closed after request_head_ms 1000" \
    "$(mt_kv d2 eof_ms)" 800 2500 "$MT_T/d2.kv"
mt_log_eq "audit: the cut query" 1 "$A" count event=dns reason=timeout \
    'detail~did not arrive whole'

# --- heads and handshakes cut by request_head_ms: audited -------------------------
mt_raw h1 --tcp "$MT_HTTP" --timeout 6 \
    --send 'GET http://origin.test/half HTTP/1.1\r\nHost: orig'
mt_eq "half a request head: 408" 408 "$(mt_kv h1 status)" "$MT_T/h1.kv"
mt_log_eq "audit: the cut head, 408 timeout, with the bytes that came" 1 \
    "$A" count event=request reason=timeout status=408 \
    'detail~^the request head did not arrive whole in time .*: 48 bytes'
mt_raw x1 --tcp "$MT_SOCKS" --timeout 6 --send '\x05\x02'
mt_eq "half a SOCKS5 greeting: closed" 1 "$(mt_kv x1 eof)" "$MT_T/x1.kv"
mt_log_eq "audit: the cut SOCKS5 greeting" 1 "$A" count event=open \
    proto=socks5 reason=timeout 'detail~the SOCKS5 greeting'
mt_raw x2 --tcp "$MT_SOCKS" --timeout 6 \
    --send '\x05\x01\x00\x05\x01\x00\x03\x0borig'
mt_eq "half a SOCKS5 request: closed" 1 "$(mt_kv x2 eof)" "$MT_T/x2.kv"
mt_log_eq "audit: the cut SOCKS5 request" 1 "$A" count event=open \
    proto=socks5 reason=timeout 'detail~the SOCKS5 request'
n0=$(mt_lines "$A")
mt_raw e1 --tcp "$MT_MIXED" --timeout 6 --send ''
mt_raw e2 --tcp "$MT_SOCKS" --timeout 6 --send ''
mt_eq "connections that sent nothing: closed" "1 1" \
    "$(mt_kv e1 eof) $(mt_kv e2 eof)"
mt_eq "...without an audit line" "$n0" "$(mt_lines "$A")" "$A"

# --- drain: new connections refused at once, the open request completes ------------
(
	timeout 20 ip netns exec "$(mt_ns cli)" curl -sS --max-time 15 \
	    -x "http://$MT_HTTP" -o /dev/null -w '%{http_code}' \
	    http://origin.test/slow/4000 > "$MT_T/dr.code" 2>"$MT_T/dr.err"
	echo $? > "$MT_T/dr.rc"
) &
dr=$!
mt_wait_log "$MT_T/origin.log" '"path": "/slow/4000"' 50 ||
    mt_fail "drain: the slow request never reached the origin" "$MT_T/dr.err"
kill -TERM "$MT_MOATD_PID"
# refused KIND ADDR: connects and asks; once moatd no longer serves (the
# signal is asynchronous: a 200 means "not yet", try again), prints how
# the last attempt ended and how long it took.
refused()
{
	mt_in cli "$MT_PY" - "$@" <<'EOF2'
import socket, sys, time
kind, addr = sys.argv[1], sys.argv[2]
for i in range(40):
    t0 = time.monotonic()
    if kind == "unix":
        s = socket.socket(socket.AF_UNIX)
    else:
        s = socket.socket()
        host, _, port = addr.rpartition(":")
        addr = (host, int(port))
    s.settimeout(10)
    try:
        s.connect(addr)
        s.sendall(b"GET http://origin.test/after-term HTTP/1.1\r\n"
                  b"Host: origin.test\r\n\r\n")
        b = s.recv(100)
        how = "served" if b.startswith(b"HTTP/1.1 200") else \
            "closed" if not b else "answered"
    except ConnectionRefusedError:
        how = "refused"
    except ConnectionResetError:
        how = "reset"
    except socket.timeout:
        how = "timeout"
    except OSError as e:
        how = "error:%s" % e.errno
    ms = int((time.monotonic() - t0) * 1000)
    s.close()
    if how != "served":
        break
    time.sleep(0.05)
print(how, ms)
EOF2
}
out=$(refused tcp "$MT_HTTP")
mt_in_set "drain: a new TCP connection is refused" "${out%% *}" \
    "refused reset closed" "$MT_T/moatd.err"
within "drain: ...at once" "${out##* }" 0 1500
out=$(refused unix "$MT_T/proxy.sock")
mt_in_set "drain: a new Unix socket connection is refused" "${out%% *}" \
    "refused reset closed" "$MT_T/moatd.err"
within "drain: ...at once" "${out##* }" 0 1500
n=$(mt_new origin | mt_jl /dev/stdin count event=request path=/after-term)
mt_eq "drain: no refused request reached the origin" 0 "$n"
wait "$dr"
mt_eq "drain: the open request completed" "0 200" \
    "$(cat "$MT_T/dr.rc") $(cat "$MT_T/dr.code")" "$MT_T/dr.err"
mt_wait_exit "$MT_MOATD" 100
mt_eq "drain: moatd exits 0" 0 "$MT_WAIT_RC" "$MT_T/moatd.err"

mt_finish
