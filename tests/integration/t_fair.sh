#!/bin/bash
# t_fair.sh - fairness between sandboxes: a connection flood from one
# sandbox does not stop another from being served (issue 12 item 4).
#
#   cli: fair.py flood --> moat: moatd 10.200.0.1:3128 (sandbox "flood")
#        fair.py quiet --> moatd 10.200.0.1:3129 (sandbox "quiet")
#        hold.py, curl --> moatd 10.200.0.1:3130 (sandbox "capped",
#                          "connections": 5)
#        hold.py, fair.py flood --> 10.200.0.1:3131, :3132 (registered
#                          by fair.py register in moat, admin socket)
#     --> net: origin.py 203.0.113.10
#   (the full drawing is at the top of lib.sh)
#
# limits.connections 400 and no limits.sandbox_connections: each sandbox
# may have a quarter, 100, open.  "flood" opens 1000 connections in a
# burst and trickles a request head on each, never finishing it; each one
# refused is replaced (5000 a second at most, 12 s); meanwhile "quiet"
# makes 100 requests one after the other, each on a new connection: all
# are answered, the 99th percentile of their latency is under a second
# (the median and p99 are printed).  The flood has exactly 100 open, every
# other one was refused at once, and the refusals are audited with reason
# limit in a line per second at most, whose counts add up to the
# refusals.  The listener's "connections": 5 of "capped" holds 5 tunnels
# and answers a 6th connection 503 with X-Moat-Reason limit.  Sandboxes
# registered on the admin socket: their own limits.sandbox_connections (3)
# holds, one larger than the daemon's (1000) gets the daemon's (100), and
# other limits or a bad value are refused.
#
# Without the per-sandbox limit (a single pool), the flood takes all 400
# places, every worker stops accepting, and the quiet requests time out.

. "$(dirname "$0")/lib.sh"

FLOOD=10.200.0.1:3128
QUIET=10.200.0.1:3129
CAPPED=10.200.0.1:3130
REG=10.200.0.1:3131	# registered sandboxes' listeners (bound in moat's
BIG=10.200.0.1:3132	# namespace by fair.py register, handed over)
FLOOD_COUNT=1000
FLOOD_HOLD_S=14		# the flood holds its connections this long, then ends
FLOOD_AGAIN=60000	# ... and replaces a refused one this many times,
FLOOD_RATE=5000		# ... at most this many a second
QUIET_COUNT=100
QUIET_P99_MAX_MS=1000	# generous: served at once, this is ms on a free host

mt_init
mt_need_moatd
mt_world
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_conf_set "$conf" listen "[
  {\"proto\": \"http\", \"address\": \"$FLOOD\", \"sandbox\": \"flood\"},
  {\"proto\": \"http\", \"address\": \"$QUIET\", \"sandbox\": \"quiet\"},
  {\"proto\": \"http\", \"address\": \"$CAPPED\", \"sandbox\": \"capped\",
   \"connections\": 5}]"
mt_conf_set "$conf" limits '{"connections": 400}'
adm=$MT_T/admin.sock
mt_conf_set "$conf" admin "{\"address\": \"unix:$adm\"}"
# The flood's heads stay unfinished longer than it lasts: it keeps its
# places until it closes them.
mt_conf_set "$conf" timeouts '{"request_head_ms": 60000}'
mt_moatd_start "$conf"

mt_curl warm -x "http://$QUIET" http://origin.test/warm
mt_allowed "the quiet sandbox is served" warm

# --- a listener's "connections" ---------------------------------------------------
mt_bg hold cli "$MT_PY" "$MT_HELPERS/hold.py" --proxy "$CAPPED" \
    --target origin.test:8080 --count 5 --out "$MT_T/hold.out" \
    --lifetime 60 --ready-fd 3 || mt_fail "hold.py did not start"
mt_eq "\"connections\": 5 holds 5 tunnels" "0 200 1 200 2 200 3 200 4 200 " \
    "$(tr '\n' ' ' < "$MT_T/hold.out")"
mt_curl capped6 -x "http://$CAPPED" --max-time 5 http://origin.test/sixth
got="$MT_CODE $(mt_hdr capped6 X-Moat-Reason)"
mt_eq "a 6th connection of \"capped\" is refused at once" "503 limit" "$got"
if mt_wait_log "$MT_T/audit.log" \
    '"event":"connection".*"sandbox":"capped".*"verdict":"deny","reason":"limit"' 50
then
	mt_pass "the refusal is audited (event connection, reason limit)"
else
	mt_fail "no connection/limit audit line for sandbox capped" \
	    "$MT_T/audit.log"
fi
mt_curl capped_other -x "http://$QUIET" http://origin.test/while-capped
mt_allowed "another sandbox is served while \"capped\" is at its limit" \
    capped_other
kill -TERM "$MT_PID_hold"
mt_wait_exit "$MT_PID_hold" 30

# --- a registration's own limits.sandbox_connections -------------------------------
# reg NAME ADDR LIMITS: registers NAME (its listener at ADDR) and holds it;
# "ok" or the error on stdout.
reg()
{
	if mt_bg "$1" moat "$MT_PY" "$MT_HELPERS/fair.py" register \
	    --admin "$adm" --name "$1" --listen "$2" --limits "$3" \
	    --hold-s 100 --ready-fd 3 >/dev/null; then
		echo ok
	else
		sed -n 's/^admin_result=refused admin_error=//p' "$MT_T/$1.out"
	fi
}
mt_eq "a registration with limits.sandbox_connections 3" ok \
    "$(reg reg3 "$REG" '{"sandbox_connections": 3}')"
mt_bg hold3 cli "$MT_PY" "$MT_HELPERS/hold.py" --proxy "$REG" \
    --target origin.test:8080 --count 3 --out "$MT_T/hold3.out" \
    --lifetime 60 --ready-fd 3 || mt_fail "hold.py did not start"
mt_eq "its own limit holds 3 tunnels" "0 200 1 200 2 200 " \
    "$(tr '\n' ' ' < "$MT_T/hold3.out")"
mt_curl reg4 -x "http://$REG" --max-time 5 http://origin.test/fourth
mt_eq "a 4th connection of the registered sandbox is refused" "503 limit" \
    "$MT_CODE $(mt_hdr reg4 X-Moat-Reason)"
kill -TERM "$MT_PID_hold3"
mt_wait_exit "$MT_PID_hold3" 30
# Its own limit only lowers the daemon's: 1000 asked, 100 (the daemon's
# quarter) given.
mt_eq "a registration with limits.sandbox_connections 1000" ok \
    "$(reg big "$BIG" '{"sandbox_connections": 1000}')"
mt_bg bigflood cli "$MT_PY" "$MT_HELPERS/fair.py" flood --proxy "$BIG" \
    --count 200 --burst-s 3 --hold-s 4 --ready-fd 3 ||
    mt_fail "the flood of \"big\" did not start"
mt_wait_exit "$MT_PID_bigflood" 100
mt_eq "... holds 100 connections, the daemon's limit" "100 100" \
    "$(sed -n 's/^open=//p' "$MT_T/bigflood.out") $(sed -n \
    's/^refused=//p' "$MT_T/bigflood.out")"
got=$(reg bad1 "10.200.0.1:3133" '{"connections": 5}')
case $got in
*'"limits.connections" cannot be set per sandbox'*)
	mt_pass "a registration's limits.connections is refused: $got" ;;
*)	mt_fail "a registration's limits.connections: '$got'" ;;
esac
got=$(reg bad2 "10.200.0.1:3134" '{"sandbox_connections": 0}')
case $got in
*'limits.sandbox_connections: 0 is out of range'*)
	mt_pass "a registration's limits.sandbox_connections 0 is refused: $got" ;;
*)	mt_fail "a registration's limits.sandbox_connections 0: '$got'" ;;
esac

# --- a flood from one sandbox, requests from another -------------------------------
mt_bg flood cli "$MT_PY" "$MT_HELPERS/fair.py" flood --proxy "$FLOOD" \
    --count "$FLOOD_COUNT" --again "$FLOOD_AGAIN" --rate "$FLOOD_RATE" \
    --burst-s 5 \
    --hold-s "$FLOOD_HOLD_S" --ready-fd 3 || mt_fail "the flood did not start"
t0=$(date +%s%N)
timeout -k 2 90 ip netns exec "$(mt_ns cli)" "$MT_PY" "$MT_HELPERS/fair.py" \
    quiet --proxy "$QUIET" --url http://origin.test/quiet/ \
    --count "$QUIET_COUNT" --timeout 3 --deadline 60 \
    > "$MT_T/quiet.kv" 2> "$MT_T/quiet.err"
quiet_ms=$((($(date +%s%N) - t0) / 1000000))
ok=$(mt_kv quiet ok)
med=$(mt_kv quiet median_ms)
p99=$(mt_kv quiet p99_ms)
p99_us=$(mt_kv quiet p99_us)
echo "quiet sandbox during the flood: $ok of $QUIET_COUNT answered," \
    "median ${med:-?} ms, p99 ${p99:-?} ms, max $(mt_kv quiet max_ms) ms" \
    "(codes $(mt_kv quiet codes))"
mt_eq "every quiet request answered 200 during the flood" "$QUIET_COUNT" \
    "${ok:-0}"
if [[ $p99_us =~ ^[0-9]+$ ]] && [ "$p99_us" -lt $((QUIET_P99_MAX_MS * 1000)) ]
then
	mt_pass "quiet p99 ${p99} ms < $QUIET_P99_MAX_MS ms (median $med ms)"
else
	mt_fail "quiet p99 '${p99:-?}' ms (want < $QUIET_P99_MAX_MS)" \
	    "$MT_T/quiet.kv" "$MT_T/quiet.err"
fi

mt_wait_exit "$MT_PID_flood" $(((FLOOD_HOLD_S + 20) * 10)) ||
    mt_fail "the flood did not end by itself"
flood_kv()
{
	sed -n "s/^$1=//p" "$MT_T/flood.out" | head -n 1
}
conn=$(flood_kv connected)
open=$(flood_kv open)
refused=$(flood_kv refused)
burst=$(flood_kv burst_ms)
last=$(flood_kv last_refused_ms)
echo "flood: $conn connections ($(flood_kv opened) tried), the first" \
    "$FLOOD_COUNT in $burst ms; $open held open, $refused refused" \
    "($(flood_kv refused_503) with a 503 read), the last at $last ms"
if [[ $conn =~ ^[0-9]+$ ]] && [ "$conn" -ge $((FLOOD_COUNT * 9 / 10)) ]; then
	mt_pass "the flood made $conn connections"
else
	mt_fail "the flood made '${conn:-?}' connections (want >= 90%)" \
	    "$MT_T/flood.out" "$MT_T/flood.err"
fi
# Measured, not assumed: the quiet requests ran during the flood (from its
# burst's end, when it said ready, to its last refusal).
if [[ $last =~ ^[0-9]+$ ]] && [[ $burst =~ ^[0-9]+$ ]] &&
    [ "$last" -ge $((burst + quiet_ms)) ]; then
	mt_pass "the flood was refused until $last ms, after the quiet" \
	    "requests ($burst to ~$((burst + quiet_ms)) ms)"
else
	mt_fail "the flood's last refusal at '${last:-?}' ms came before the quiet requests ended (~$((${burst:-0} + quiet_ms)) ms)" \
	    "$MT_T/flood.out"
fi
mt_eq "the flood holds a quarter of limits.connections" 100 "${open:-?}"
mt_eq "every other flood connection was refused" \
    "$((${conn:-0} - 100))" "${refused:-?}"

# The audit: lines of refusals, at most one a second for the sandbox,
# whose counts add up to the refusals (the last one within a second or so
# of the last refusal).
sum_refused()
{
	"$MT_PY" - "$MT_T/audit.log" "$1" <<-'EOF'
	import json, sys
	n = lines = 0
	bad = []
	for l in open(sys.argv[1]):
	    r = json.loads(l)
	    if r.get("event") == "connection" and r.get("sandbox") == sys.argv[2]:
	        lines += 1
	        n += r.get("refused", 0)
	        if (r.get("verdict"), r.get("reason"), r.get("proto")) != \
	                ("deny", "limit", "http"):
	            bad.append(l.strip())
	print(n, lines, len(bad))
	EOF
}
# flood_summed: sets sum, lines and bad; 0 once the sum is all refusals.
flood_summed()
{
	read -r sum lines bad <<< "$(sum_refused flood)"
	[ "$sum" = "$refused" ]
}
mt_wait_for 5 flood_summed
mt_eq "the audited refusals of \"flood\" add up" "${refused:-?}" "$sum"
mt_eq "every one is deny/limit/http" 0 "$bad"
if [ "$lines" -ge 1 ] && [ "$lines" -le $((FLOOD_HOLD_S + 3)) ]; then
	mt_pass "$sum refusals in $lines audit lines (at most one a second)"
else
	mt_fail "$sum refusals in $lines audit lines (want 1..$((FLOOD_HOLD_S + 3)))" \
	    "$MT_T/audit.log"
fi
read -r sum lines bad <<< "$(sum_refused quiet)"
mt_eq "no refusal of the quiet sandbox" "0 0" "$sum $lines"

mt_curl after -x "http://$FLOOD" http://origin.test/after-flood
mt_allowed "the flooding sandbox is served again once its flood ended" after
if mt_moatd_alive; then
	mt_pass "moatd survived the flood"
else
	mt_fail "moatd died" "$MT_T/moatd.err"
fi
mt_finish
