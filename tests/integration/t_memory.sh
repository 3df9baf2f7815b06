#!/bin/bash
# t_memory.sh - moatd's memory under many unfinished request heads, and
# after them.
#
#   cli: partialheads.py (600 connections, 60 KB of head each, unfinished)
#     --> moat: moatd 10.200.0.1:3128 --> net: origin.py 203.0.113.10
#
# limits.partial_heads_bytes bounds what all unfinished heads hold
# together: past it a connection is refused (503, reason limit, audited),
# moatd's resident memory grows by about the bound and not by the 36 MB the
# heads would take, and a client whose head arrives whole is still served.
# Where moatd serves several sandboxes, one holds at most its share (that
# of limits.sandbox_connections in limits.connections, a quarter by
# default), and another sandbox's unfinished heads are still held.
# With a bound too large to matter, memory grows with the heads, and once
# they are gone moatd gives it back (malloc_trim a second after a burst):
# its resident size falls back near where it started.

. "$(dirname "$0")/lib.sh"

mt_init
mt_need_moatd
mt_world
conf=$MT_T/moatd.json
COUNT=600
BYTES=60000
# Under AddressSanitizer moatd's memory is its allocator's (shadow memory,
# a quarantine of freed blocks, no malloc_trim): what RSS says there is
# not moatd's, so those checks are left to the plain build.
ASAN=""
ldd "$MOATD" 2>/dev/null | grep -q libasan && ASAN=1
# rss_check MESSAGE CONDITION...: a check on RSS, left out under ASan.
rss_check()
{
	local msg=$1
	shift
	if [ -n "$ASAN" ]; then
		echo "not checked (AddressSanitizer build): $msg"
	elif "$@"; then
		mt_pass "$msg"
	else
		mt_fail "$msg"
	fi
}

# burst NAME [PROXY [COUNT]]: the partial heads; waits until they are all
# sent and judged.
burst()
{
	rm -f "$MT_T/release"
	mt_bg "$1" cli "$MT_PY" "$MT_HELPERS/partialheads.py" \
	    --proxy "${2:-$MT_HTTP}" --count "${3:-$COUNT}" --bytes "$BYTES" \
	    --release "$MT_T/release" --lifetime 60 --ready-fd 3 ||
	    mt_error "partialheads.py did not finish its burst"
}
# rss_settled: moatd's RSS in KiB once it stops moving (bounded: 3 s).
rss_settled()
{
	local a b i
	a=$(mt_rss_kib "$MT_MOATD_PID")
	for ((i = 0; i < 15; i++)); do
		sleep 0.2
		b=$(mt_rss_kib "$MT_MOATD_PID")
		[ $((b - a)) -lt 256 ] && [ $((a - b)) -lt 256 ] && break
		a=$b
	done
	echo "$b"
}

# --- a bound of 4 MiB ---------------------------------------------------------
# (every sandbox may have all connections: the bound is the only one)
mt_conf "$conf"
mt_conf_set "$conf" timeouts '{"request_head_ms": 60000}'
mt_conf_set "$conf" limits '{"partial_heads_bytes": 4194304, "sandbox_connections": 10000}'
mt_moatd_start "$conf"
mt_curl warm -x "http://$MT_HTTP" http://origin.test/warm
r0=$(rss_settled)
burst capped
got=$(cat "$MT_T/capped.out")
r1=$(rss_settled)
held=${got#held=}; held=${held%% *}
echo "capped: $got; RSS $r0 -> $r1 KiB"
[ "$held" -ge 40 ] && [ "$held" -le 72 ] &&
    mt_pass "4 MiB bound: $held heads of 60 KB held, no more ($got)" ||
    mt_fail "4 MiB bound: $held heads held (want 40-72 of $COUNT)" "$MT_T/capped.out"
case $got in
*"503/limit:"*) mt_pass "4 MiB bound: the others are refused with 503, reason limit" ;;
*) mt_fail "4 MiB bound: no 503/limit refusal ($got)" "$MT_T/capped.out" ;;
esac
mt_wait_log "$MT_T/audit.log" '"reason":"limit".*partial_heads_bytes' 30 &&
    mt_pass "4 MiB bound: the refusals are audited (reason limit)" ||
    mt_fail "4 MiB bound: no audit line for the refusals" "$MT_T/audit.log"
grow=$((r1 - r0))
rss_check "4 MiB bound: RSS grew $grow KiB (want < 20480; the heads would take ~35000)" \
    [ "$grow" -lt 20480 ]
mt_curl whole -x "http://$MT_HTTP" http://origin.test/whole
mt_eq "4 MiB bound: a request whose head comes whole is served meanwhile" 200 "$MT_CODE" "$MT_T/whole.err"
touch "$MT_T/release"
mt_wait_exit "$MT_PID_capped" 100
mt_moatd_stop

# --- one sandbox's share ------------------------------------------------------
# The world's moatd serves five sandboxes: each may hold a quarter (1 MiB).
: >"$MT_T/moatd.err"
mt_conf_set "$conf" limits '{"partial_heads_bytes": 4194304}'
mt_moatd_start "$conf"
burst flood
got=$(cat "$MT_T/flood.out")
held=${got#held=}; held=${held%% *}
[ "$held" -ge 10 ] && [ "$held" -le 18 ] &&
    mt_pass "a sandbox's share (1 MiB of 4): $held heads of 60 KB held ($got)" ||
    mt_fail "a sandbox's share: $held heads held (want 10-18 of $COUNT)" "$MT_T/flood.out"
burst other 10.200.0.1:8888 10
got=$(cat "$MT_T/other.out")
mt_eq "meanwhile another sandbox's unfinished heads are held" \
    "held=10 refused=0 reasons=-" "$got" "$MT_T/other.out"
touch "$MT_T/release"
mt_wait_exit "$MT_PID_flood" 100
mt_wait_exit "$MT_PID_other" 100
mt_moatd_stop

# --- no effective bound: memory comes back after the burst --------------------
: >"$MT_T/moatd.err"
mt_conf_set "$conf" limits '{"partial_heads_bytes": 1073741824}'
mt_moatd_start "$conf"
mt_curl warm2 -x "http://$MT_HTTP" http://origin.test/warm
r0=$(rss_settled)
burst open
got=$(cat "$MT_T/open.out")
r1=$(rss_settled)
echo "unbounded: $got; RSS $r0 -> $r1 KiB"
rss_check "large bound: the heads take memory ($((r1 - r0)) KiB, want > 20480)" \
    [ $((r1 - r0)) -gt 20480 ]
touch "$MT_T/release"
mt_wait_exit "$MT_PID_open" 100
r2=$r1
for ((i = 0; i < 50; i++)); do
	sleep 0.1
	r2=$(mt_rss_kib "$MT_MOATD_PID")
	[ $((r2 - r0)) -lt 12288 ] && break
done
echo "after the burst: RSS $r2 KiB ($((i * 100)) ms after the clients closed)"
rss_check "after the burst moatd gives memory back: $r1 -> $r2 KiB (start $r0, want < start + 12288)" \
    [ $((r2 - r0)) -lt 12288 ]
mt_curl after -x "http://$MT_HTTP" http://origin.test/after
mt_eq "served after the burst" 200 "$MT_CODE" "$MT_T/after.err"

mt_finish
