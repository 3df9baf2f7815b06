#!/bin/bash
# t_limits.sh - timeouts, backpressure and the connection limit.
#
#   cli: rawclient.py / slowread.py / hold.py / curl
#     --> moat: moatd 10.200.0.1:3128 (request_head_ms 1000,
#               idle_client_ms 1500, limits.connections 4)
#     --> net: origin.py 203.0.113.10 (/bytes/N streams N bytes)
#   (the full drawing is at the top of lib.sh)
#
# A client that sends half a head, or drips a whole one a byte at a time,
# is cut off after request_head_ms and nothing reaches the origin.  A
# client that reads a 200 MB answer slowly (HTTP and CONNECT) must not make
# moatd buffer it: its resident memory, read from /proc, stays within a few
# MiB of where it started, and the origin is held back too.  With
# limits.connections 4 and 4 tunnels open, a 5th client is not served, and
# is again once they close.

. "$(dirname "$0")/lib.sh"

mt_init
mt_need_moatd
mt_world
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_conf_set "$conf" timeouts '{"request_head_ms": 1000, "idle_client_ms": 1500}'
mt_conf_set "$conf" limits '{"connections": 4, "sandbox_connections": 4}'
mt_moatd_start "$conf"
RSS_GROWTH_MAX_KIB=16384	# far below the 200 MB a buffering proxy would hold
ORIGIN_AHEAD_MAX=$((48 * 1024 * 1024))	# bytes the origin may get ahead

# cut MESSAGE NAME: the rawclient run NAME was closed by moatd between 0.8
# and 3 s after it connected.
cut()
{
	local msg=$1 n=$2 eof ms
	eof=$(mt_kv "$n" eof)
	ms=$(mt_kv "$n" eof_ms)
	if [ "$eof" = 1 ] && [ "${ms:-0}" -ge 800 ] && [ "$ms" -le 3000 ]; then
		mt_pass "$msg: closed after $ms ms"
	else
		mt_fail "$msg: eof=$eof after ${ms:-?} ms (want a close in 0.8-3 s)" \
		    "$MT_T/$n.kv"
	fi
}

# --- request_head_ms ---------------------------------------------------------------
mt_mark
mt_raw h1 --tcp "$MT_HTTP" --timeout 6 \
    --send 'GET http://origin.test/half HTTP/1.1\r\nHost: orig'
cut "half a head (request_head_ms 1000)" h1
st=$(mt_kv h1 status)
mt_in_set "half a head: answer (none, 408 or 400)" "${st:-none}" \
    "none 408 400" "$MT_T/h1.kv"
mt_raw h2 --tcp "$MT_HTTP" --timeout 8 --drip-ms 100 \
    --send 'GET http://origin.test/drip HTTP/1.1\r\nHost: origin.test\r\nX-Pad: 0123456789\r\n\r\n'
cut "a whole head dripped 1 byte / 100 ms (total deadline, not idle)" h2
mt_raw h3 --tcp "$MT_HTTP" --timeout 6 --send ''
eof=$(mt_kv h3 eof)
ms=$(mt_kv h3 eof_ms)
if [ "$eof" = 1 ] && [ "${ms:-0}" -le 3000 ]; then
	mt_pass "a client that sends nothing: closed after $ms ms"
else
	mt_fail "a client that sends nothing: eof=$eof after ${ms:-?} ms" \
	    "$MT_T/h3.kv"
fi
mt_untouched "slow heads" origin
mt_curl h4 -x "http://$MT_HTTP" http://origin.test/after-slow-heads
mt_allowed "a normal request still works" h4

# --- a slow reader -----------------------------------------------------------------
# origin_sent: sets sent to the bytes the origin said it sent since the
# mark; 0 once it has said.
origin_sent()
{
	sent=$(mt_new origin | mt_jl /dev/stdin get bytes event=sent)
	[ -n "$sent" ]
}
# slow NAME ARGS...: reads 200 MB at 64 KiB/s for 3 s, sampling moatd's
# RSS every 0.2 s; checks growth and how far the origin got ahead.
slow()
{
	local n=$1 base max=0 r k sent got pid
	shift
	mt_curl "warm_$n" -x "http://$MT_HTTP" http://origin.test/bytes/2000000
	base=$(mt_rss_kib "$MT_MOATD_PID")
	mt_mark
	mt_bg "$n" cli "$MT_PY" "$MT_HELPERS/slowread.py" --proxy "$MT_HTTP" \
	    --rate 65536 --duration 3 --ready-fd 3 "$@" || {
		mt_fail "$n: the slow reader got no data" "$MT_T/$n.out" \
		    "$MT_T/moatd.err"
		return
	}
	for ((k = 0; k < 15; k++)); do
		r=$(mt_rss_kib "$MT_MOATD_PID")
		[ -n "$r" ] && [ "$r" -gt "$max" ] && max=$r
		sleep 0.2
	done
	pid=MT_PID_$n
	mt_wait_exit "${!pid}" 50
	got=$(sed -n 's/^received=//p' "$MT_T/$n.out")
	if ! [[ $base =~ ^[0-9]+$ ]] || [ "$max" -le 0 ]; then
		mt_fail "$n: could not read moatd's RSS from /proc/$MT_MOATD_PID/status"
	elif [ $((max - base)) -le "$RSS_GROWTH_MAX_KIB" ]; then
		mt_pass "$n: moatd's RSS grew $((max - base)) KiB (from $base KiB) while the client read ${got:-?} bytes"
	else
		mt_fail "$n: moatd's RSS grew $((max - base)) KiB (from $base to $max KiB, limit $RSS_GROWTH_MAX_KIB)" \
		    "$MT_T/$n.out" "$MT_T/moatd.err"
	fi
	# The origin notices the closed connection at its next write.
	mt_wait_for 5 origin_sent
	if [ -n "$sent" ] && [ "$sent" -le "$ORIGIN_AHEAD_MAX" ]; then
		mt_pass "$n: backpressure reached the origin (it sent $sent of 200000000 bytes)"
	else
		mt_fail "$n: the origin sent '${sent:-?}' bytes to a reader of ${got:-?}" \
		    "$MT_T/origin.log"
	fi
}
slow slow_http --url http://origin.test/bytes/200000000
slow slow_connect --connect origin.test:8080 \
    --url http://origin.test:8080/bytes/200000000
if mt_moatd_alive; then
	mt_pass "moatd survived the slow readers"
else
	mt_fail "moatd died" "$MT_T/moatd.err"
fi

# --- limits.connections ---------------------------------------------------------------
# accepts8080: the origin's accept lines on port 8080 so far.
accepts8080()
{
	mt_jl "$MT_T/origin.log" count event=accept 'local~:8080$'
}
# origin_took N: 0 once the origin has logged N accepts on 8080 (it logs
# in the thread that serves the connection, after moatd's connect is done).
origin_took()
{
	[ "$(accepts8080)" -ge "$1" ]
}
a0=$(accepts8080)
mt_bg hold cli "$MT_PY" "$MT_HELPERS/hold.py" --proxy "$MT_HTTP" \
    --target origin.test:8080 --count 4 --out "$MT_T/hold.out" \
    --lifetime 60 --ready-fd 3 || mt_fail "hold.py did not start"
mt_eq "4 tunnels open (the limit)" "0 200 1 200 2 200 3 200 " \
    "$(tr '\n' ' ' < "$MT_T/hold.out")"
mt_wait_for 5 origin_took $((a0 + 4))
mt_mark
mt_curl over -x "http://$MT_HTTP" --max-time 3 http://origin.test/over-limit
if [ "$MT_CODE" != 200 ]; then
	mt_pass "a 5th connection is not served (HTTP $MT_CODE, curl exit $MT_RC)"
else
	mt_fail "a 5th connection was served with limits.connections 4" \
	    "$MT_T/moatd.err"
fi
mt_untouched "over the connection limit" origin
kill -TERM "$MT_PID_hold"
mt_wait_exit "$MT_PID_hold" 30
ok=""
for ((k = 0; k < 30; k++)); do
	mt_curl again -x "http://$MT_HTTP" --max-time 2 \
	    http://origin.test/after-limit
	if [ "$MT_CODE" = 200 ]; then
		ok=1
		break
	fi
	sleep 0.1
done
if [ -n "$ok" ]; then
	mt_pass "served again once the 4 tunnels closed"
else
	mt_fail "still not served 3 s after the 4 tunnels closed (HTTP $MT_CODE)" \
	    "$MT_T/moatd.err"
fi
if mt_moatd_alive; then
	mt_pass "moatd still runs"
else
	mt_fail "moatd died" "$MT_T/moatd.err"
fi
mt_finish
