#!/bin/bash
# t_audit_fifo.sh - the audit log is a FIFO whose reader stops: moatd does
# not stall on it, loses no line unseen, and keeps reloading and stopping.
#
#   cli: keep-alive HTTP client --> moat: moatd, audit to a FIFO
#        --> net: origin.py 203.0.113.10
#   a reader (cat FIFO >> out) that the test stops with SIGSTOP
#
# "drop": while the reader is stopped moatd serves on, says on stderr that
# the reader does not take lines, holds them, and writes them all, whole,
# once it reads again; a reload and a stop are not held up by the stalled
# sink.  "deny" (the default): requests are refused with audit-unavailable
# while it stalls, and served again after, the refusals in the log.
# A FIFO without a reader is refused at start with a clear error.

. "$(dirname "$0")/lib.sh"

mt_init
mt_need_moatd
mt_world
F=$MT_T/audit.fifo
OUT=$MT_T/audit.out
conf=$MT_T/moatd.json
mkfifo "$F" || mt_error "mkfifo"

# requests TAG N: N requests for /TAG-i on one keep-alive connection;
# prints the status of each, one per line.
requests()
{
	timeout -k 2 60 ip netns exec "$(mt_ns cli)" "$MT_PY" -c '
import socket, sys
tag, n = sys.argv[1], int(sys.argv[2])
s = socket.create_connection(("10.200.0.1", 3128), timeout=10)
f = s.makefile("rb")
for i in range(n):
    s.sendall(("GET http://origin.test/%s-%d HTTP/1.1\r\nHost: origin.test\r\n\r\n" % (tag, i)).encode())
    line = f.readline()
    if not line:
        print("closed"); break
    length = 0
    while True:
        h = f.readline()
        if h in (b"\r\n", b""):
            break
        k, _, v = h.decode().partition(":")
        if k.strip().lower() == "content-length":
            length = int(v)
    f.read(length)
    print(line.split()[1].decode())
' "$1" "$2"
}
whole()	# lines of OUT that are not one JSON object
{
	"$MT_PY" -c '
import json, sys
bad = 0
for line in open(sys.argv[1], "rb"):
    try:
        json.loads(line)
    except ValueError:
        bad += 1
print(bad)' "$OUT"
}
count() { grep -c "\"path\":\"/$1" "$OUT"; }
READER=""
reader_start()
{
	cat "$F" >>"$OUT" &
	READER=$!
	MT_PIDS="$MT_PIDS $READER"
}
# wait_count TAG N: up to 10 s for N lines of TAG in OUT.
wait_count()
{
	mt_wait_for 10 counted "$@"
}
# counted TAG N: N lines of TAG in OUT at least.
counted()
{
	[ "$(count "$1")" -ge "$2" ]
}

# --- no reader: refused at start ---------------------------------------------
mt_conf "$conf"
mt_conf_set "$conf" audit "{\"path\": \"$F\", \"on_failure\": \"drop\"}"
timeout -k 2 20 ip netns exec "$(mt_ns moat)" "$MOATD" -c "$conf" \
    >"$MT_T/noreader.out" 2>"$MT_T/noreader.err"
rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] &&
    grep -q "audit log $F" "$MT_T/noreader.err" &&
    mt_pass "a FIFO without a reader: moatd refuses to start (rc $rc): $(head -c 120 "$MT_T/noreader.err")" ||
    mt_fail "a FIFO without a reader: rc $rc (want an error, not a wait)" \
        "$MT_T/noreader.err"

# --- on_failure "drop" --------------------------------------------------------
reader_start
mt_moatd_start "$conf"
requests warm 5 >/dev/null
wait_count warm- 5 || mt_error "no audit lines through the FIFO"
kill -STOP "$READER"
st=$(requests drop 600 | sort | uniq -c | tr -s ' ' | tr '\n' ';')
mt_eq "drop: all 600 requests served while the reader is stopped" " 600 200;" "$st"
mt_wait_log "$MT_T/moatd.err" 'does not take lines' 50 &&
    mt_pass "drop: stderr says so ($(grep -m1 'does not take lines' "$MT_T/moatd.err" | cut -c1-140))" ||
    mt_fail "drop: nothing on stderr about the stalled reader" "$MT_T/moatd.err"
held=$(count drop-)
[ "$held" -lt 600 ] && mt_pass "drop: lines wait ($held of 600 reached the reader)" ||
    mt_fail "drop: the FIFO took every line ($held): nothing stalled"
# A reload takes the audit writer's lock: the stalled sink must not hold it.
t0=$(date +%s%N)
kill -HUP "$MT_MOATD_PID"
if mt_wait_log "$MT_T/moatd.err" 'reload done' 100; then
	ms=$((($(date +%s%N) - t0) / 1000000))
	mt_pass "drop: a reload while the reader is stopped is done ($ms ms)"
else
	mt_fail "drop: no 'reload done' in 10 s while the reader is stopped" \
	    "$MT_T/moatd.err"
fi
st=$(requests after 3 | tr '\n' ' ')
mt_eq "drop: served after the reload" "200 200 200 " "$st"
kill -CONT "$READER"
wait_count drop- 600
mt_eq "drop: once the reader reads again, all 600 lines arrive" 600 "$(count drop-)" "$OUT"
mt_eq "drop: ... every line whole" 0 "$(whole)" "$OUT"
mt_eq "drop: no line was lost (no audit-dropped line)" 0 \
    "$(grep -c '"event":"audit-dropped"' "$OUT")"
mt_wait_log "$MT_T/moatd.err" 'audit: writing again' 50 &&
    mt_pass "drop: stderr says the audit writes again" ||
    mt_fail "drop: stderr did not say the audit recovered" "$MT_T/moatd.err"
# Stopping while the reader is stopped: moatd exits, says what it held.
requests warm2 3 >/dev/null
kill -STOP "$READER"
requests stop 300 >/dev/null
mt_moatd_stop 100
if [ "$MT_WAIT_RC" != running ]; then
	mt_pass "drop: moatd stops while the reader is stopped (status $MT_WAIT_RC)"
else
	mt_fail "drop: moatd did not exit in 10 s with a stalled audit reader" \
	    "$MT_T/moatd.err"
	kill -KILL "$MT_MOATD_PID" 2>/dev/null
fi
grep -q 'stopping with .* unwritten' "$MT_T/moatd.err" &&
    mt_pass "drop: ... and says how much it could not write" ||
    mt_fail "drop: no word of the unwritten lines at exit" "$MT_T/moatd.err"
kill -CONT "$READER"
kill "$READER" 2>/dev/null
wait "$READER" 2>/dev/null
mt_eq "drop: what was written is whole lines" 0 "$(whole)" "$OUT"

# --- on_failure "deny" (the default) ------------------------------------------
: >"$OUT"
: >"$MT_T/moatd.err"
mt_conf_set "$conf" audit "{\"path\": \"$F\"}"
reader_start
mt_moatd_start "$conf"
requests warm 3 >/dev/null
wait_count warm- 3 || mt_error "no audit lines through the FIFO (deny)"
kill -STOP "$READER"
# The FIFO holds 64 KiB: fill it, then requests are refused.
st=$(requests deny 600 | sort | uniq -c | tr -s ' ' | tr '\n' ';')
case $st in
*" 503;"*) mt_pass "deny: once the reader stalls, requests get 503 ($st)" ;;
*) mt_fail "deny: no 503 while the reader is stopped ($st)" "$MT_T/moatd.err" ;;
esac
mt_curl d1 -x "http://$MT_HTTP" http://origin.test/d1
mt_eq "deny: ... with X-Moat-Reason audit-unavailable" audit-unavailable \
    "$(mt_hdr d1 X-Moat-Reason)" "$MT_T/d1.hdr"
kill -CONT "$READER"
got=""
for ((i = 0; i < 50; i++)); do
	got=$(requests after$i 1)
	[ "$got" = 200 ] && break
	sleep 0.1
done
mt_eq "deny: once the reader reads again, requests are served" 200 "$got"
wait_count "after$i" 1
mt_eq "deny: the refusals are in the audit log" 1 \
    "$(grep '"path":"/d1"' "$OUT" | grep -c '"reason":"audit-unavailable"')" "$OUT"
mt_eq "deny: every line whole" 0 "$(whole)" "$OUT"

mt_finish
