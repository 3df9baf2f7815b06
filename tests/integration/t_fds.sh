#!/bin/bash
# t_fds.sh - moatd out of file descriptors: open tunnels live on, new
# clients are refused at once, and service returns.
#
#   cli: fdload.py --> moat: moatd under prlimit --nofile=40:64, 1 worker,
#                            10.200.0.1:3128 (HTTP), :1080 (SOCKS5)
#                  --> net: origin.py 203.0.113.10:8080, 203.0.113.20:80
#   (the full drawing is at the top of lib.sh)
#
# moatd raises its soft limit to the hard one (64) and warns that the
# default limits.connections (10000) cannot be met.  fdload.py opens 4
# CONNECT tunnels that move nothing yet (so no pipe was ever taken), then
# idle clients until moatd closes new ones at once (refused, audited
# internal, not left waiting in the listen queue).  Then, still out of
# descriptors: a CONNECT and a SOCKS5 request to an address, accepted
# before, cannot have their upstream socket: 503 / SOCKS5 0x01, audited
# internal, not upstream-unreachable; and the 4 tunnels move a request and
# 100000 bytes each (no pipe: they copy), counted in their close lines.
# Once the idle clients leave, a new tunnel works again.

. "$(dirname "$0")/lib.sh"

mt_init prlimit
mt_need_moatd
mt_world
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_conf_set "$conf" workers 1
mt_conf_set "$conf" timeouts '{"request_head_ms": 60000}'
NOFILE_SOFT=40
NOFILE_HARD=64
BODY=100000
K=4
A=$MT_T/audit.log

# moatd under a small descriptor limit (prlimit execs it: same pid).
cat > "$MT_T/moatd-limited" <<-EOF
	#!/bin/sh
	exec prlimit --nofile=$NOFILE_SOFT:$NOFILE_HARD "$MOATD" "\$@"
	EOF
chmod 755 "$MT_T/moatd-limited"
MOATD=$MT_T/moatd-limited mt_moatd_start "$conf"

# --- start: the limit raised, the warning -----------------------------------------
got=$(awk '/^Max open files/ { print $4 ":" $5 }' /proc/"$MT_MOATD_PID"/limits)
mt_eq "the soft limit was raised to the hard one" "$NOFILE_HARD:$NOFILE_HARD" \
    "$got" "$MT_T/moatd.err"
if grep -q "descriptor limit $NOFILE_HARD (raised from $NOFILE_SOFT)" \
    "$MT_T/moatd.err"; then
	mt_pass "the limit is logged at start"
else
	mt_fail "no 'descriptor limit $NOFILE_HARD' line at start" "$MT_T/moatd.err"
fi
if grep -Eq "limits.connections 10000 needs about [0-9]+ descriptors.*limit is $NOFILE_HARD" \
    "$MT_T/moatd.err"; then
	mt_pass "warned that limits.connections 10000 does not fit in $NOFILE_HARD"
else
	mt_fail "no warning about limits.connections" "$MT_T/moatd.err"
fi

# --- out of descriptors --------------------------------------------------------------
timeout -k 2 120 ip netns exec "$(mt_ns cli)" "$MT_PY" \
    "$MT_HELPERS/fdload.py" --proxy "$MT_HTTP" --socks "$MT_SOCKS" \
    --target origin.test:8080 --ip-target 203.0.113.20:80 --tunnels "$K" \
    --bytes "$BODY" --max-conns 300 --time-s 60 --recover-s 15 \
    > "$MT_T/fd.kv" 2> "$MT_T/fd.err"
kv()
{
	mt_kv fd "$1"
}
mt_eq "$K tunnels open before descriptors ran out" "$K" "$(kv tunnels_open)" \
    "$MT_T/fd.kv" "$MT_T/fd.err"
held=$(kv held)
refused=$(kv refused)
if [ "${refused:-0}" -gt 0 ] && [ "${held:-0}" -gt 0 ]; then
	mt_pass "out of descriptors: $held idle clients held, then new ones refused ($refused)"
else
	mt_fail "no refusal seen: held=${held:-?} refused=${refused:-?}" \
	    "$MT_T/fd.kv" "$MT_T/fd.err" "$MT_T/moatd.err"
fi
ms=$(kv refuse_ms_max)
if [ "${refused:-0}" -gt 0 ] && [ "${ms:-99999}" -le 5000 ]; then
	mt_pass "a refused client is closed at once, not left waiting (slowest seen: $ms ms)"
else
	mt_fail "refused clients were not closed promptly (${ms:-?} ms)" "$MT_T/fd.kv"
fi
mt_eq "still out of descriptors before the SOCKS5 request" 1 \
    "$(kv refused_again_1)" "$MT_T/fd.kv"
mt_eq "still out of descriptors before the tunnels move data" 1 \
    "$(kv refused_again_2)" "$MT_T/fd.kv"

n=$(mt_jl "$A" count event=open reason=internal \
    'detail~^out of file descriptors: new connection refused')
mt_eq "each refused client is audited internal" "$(kv refused_total)" "$n" \
    "$MT_T/fd.kv" "$A"
mt_eq "no client failed to connect" 0 "$(kv connect_failed)" "$MT_T/fd.kv"

# --- an upstream socket moatd cannot have ----------------------------------------------
mt_eq "CONNECT without a socket for the upstream: 503" 503 "$(kv http_status)" \
    "$MT_T/fd.kv"
mt_eq "... X-Moat-Reason" internal "$(kv http_reason)" "$MT_T/fd.kv"
mt_eq "SOCKS5 without a socket for the upstream: reply 0x01" 1 \
    "$(kv socks_rep)" "$MT_T/fd.kv"
for proto in connect socks5; do
	d=$(mt_jl "$A" get detail event=open proto=$proto host=203.0.113.20 \
	    reason=internal)
	case $d in
	"out of file descriptors: cannot open a socket to the upstream"*)
		mt_pass "$proto: audited internal: $d" ;;
	*)
		mt_fail "$proto: no open line with reason internal for 203.0.113.20 (detail '$d')" "$A" ;;
	esac
	n=$(mt_jl "$A" count event=open proto=$proto host=203.0.113.20 \
	    reason=upstream-unreachable)
	mt_eq "$proto: never audited upstream-unreachable" 0 "$n" "$A"
done

# --- the tunnels opened before -------------------------------------------------------------
mt_eq "all $K tunnels moved their data, $(kv pump_at_ms) ms after they opened" \
    "$K" "$(kv tunnels_ok)" \
    "$MT_T/fd.kv" "$MT_T/moatd.err"
if grep -q "tunnel: no pipe for splice" "$MT_T/moatd.err"; then
	mt_pass "the tunnels copied without pipes (logged)"
else
	mt_fail "no 'no pipe for splice' line: the tunnels never lacked a pipe" \
	    "$MT_T/moatd.err"
fi
n=$(grep -c "tunnel: no pipe for splice" "$MT_T/moatd.err")
mt_eq "the fallback is logged once, not per tunnel" 1 "$n" "$MT_T/moatd.err"
for ((i = 0; i < K; i++)); do
	port=$(kv "t${i}_port")
	client=10.200.0.2:$port
	mt_wait_log "$A" "\"event\":\"close\".*\"client\":\"$client\"" 50
	bad=""
	for f in bytes_up:"$(kv "t${i}_sent")" bytes_down:"$(kv "t${i}_received")" \
	    end:eof; do
		got=$(mt_jl "$A" get "${f%%:*}" event=close client="$client")
		[ "$got" = "${f#*:}" ] || bad="$bad ${f%%:*}=$got (want ${f#*:})"
	done
	if [ -z "$bad" ]; then
		mt_pass "tunnel $i: close line counts $(kv "t${i}_sent") bytes up, $(kv "t${i}_received") down, end eof"
	else
		mt_fail "tunnel $i ($client):$bad" "$A"
	fi
done
n=$(mt_jl "$A" count event=close end=internal)
mt_eq "no tunnel ended internal" 0 "$n" "$A"

# --- service returns --------------------------------------------------------------------
mt_eq "once the idle clients left, a new tunnel works ($(kv after_ms) ms)" 1 \
    "$(kv after_ok)" "$MT_T/fd.kv" "$MT_T/moatd.err"
mt_curl after -x "http://$MT_HTTP" http://origin.test/after-exhaustion
mt_allowed "a plain request works again" after
if mt_moatd_alive; then
	mt_pass "moatd still runs"
else
	mt_fail "moatd died" "$MT_T/moatd.err"
fi
mt_finish
