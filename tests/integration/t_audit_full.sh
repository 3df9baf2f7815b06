#!/bin/bash
# t_audit_full.sh - the audit log on a full disk: no line is lost unseen
# and none is left cut.
#
#   cli: keep-alive HTTP client --> moat: moatd, audit on a 256 KiB tmpfs
#        --> net: origin.py 203.0.113.10
#
# audit.on_failure "drop": while the tmpfs is full moatd serves on, says so
# on stderr, holds the lines it could not write (whole lines only in the
# file, never a piece of one), and writes them all once space returns.
# "deny" (the default): once a write failed, requests are refused with
# 503, reason audit-unavailable (DNS queries: REFUSED); when space returns
# moatd serves again, and the refusals are in the audit log.

. "$(dirname "$0")/lib.sh"

mt_init
mt_need_moatd
mt_world
FULL=$MT_T/full
mkdir -p "$FULL" && mount -t tmpfs -o size=256k,mode=0755 moat-audit "$FULL" ||
    mt_skip "cannot mount a tmpfs"
MT_MOUNTS="$FULL"
A=$FULL/audit.log
conf=$MT_T/moatd.json

# fill: the tmpfs to its last byte (the audit file keeps what it has).
fill()
{
	dd if=/dev/zero of="$FULL/filler" bs=4k 2>/dev/null
	dd if=/dev/zero of="$FULL/filler2" bs=64 2>/dev/null
	dd if=/dev/zero of="$FULL/filler3" bs=1 2>/dev/null
	[ "$(df --output=avail "$FULL" | tail -n1 | tr -d ' ')" = 0 ]
}
unfill() { rm -f "$FULL/filler" "$FULL/filler2" "$FULL/filler3"; }

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
    status = line.split()[1].decode()
    length = 0
    while True:
        h = f.readline()
        if h in (b"\r\n", b""):
            break
        k, _, v = h.decode().partition(":")
        if k.strip().lower() == "content-length":
            length = int(v)
    f.read(length)
    print(status)
' "$1" "$2"
}
# whole: every line of the audit file is one JSON object; prints how many
# lines are not.
whole()
{
	"$MT_PY" -c '
import json, sys
bad = 0
for line in open(sys.argv[1], "rb"):
    try:
        json.loads(line)
    except ValueError:
        bad += 1
print(bad)' "$A"
}
count()	# REGEX: audit lines whose path matches
{
	grep -c "\"path\":\"/$1" "$A"
}
all_written() { [ "$(count drop-)" -ge 400 ]; }

# --- on_failure "drop" ------------------------------------------------------
mt_conf "$conf"
mt_conf_set "$conf" audit "{\"path\": \"$A\", \"on_failure\": \"drop\"}"
mt_moatd_start "$conf"
requests warm 5 >/dev/null
mt_wait_log "$A" '/warm-4' 50 || mt_error "no audit line for warm-4"
fill || mt_error "cannot fill the tmpfs"
st=$(requests drop 400 | sort | uniq -c | tr -s ' ' | tr '\n' ';')
mt_eq "drop: all 400 requests served while the disk is full" " 400 200;" "$st"
mt_wait_log "$MT_T/moatd.err" 'audit: cannot write' 50 &&
    mt_pass "drop: stderr says the audit cannot be written ($(grep -m1 'audit: cannot write' "$MT_T/moatd.err" | cut -c1-120))" ||
    mt_fail "drop: nothing on stderr" "$MT_T/moatd.err"
mt_eq "drop: the file holds whole lines only, while full" 0 "$(whole)" "$A"
held=$(count drop-)
[ "$held" -lt 400 ] && mt_pass "drop: lines were held back ($held of 400 written)" ||
    mt_fail "drop: the disk was not full ($held lines written)"
unfill
# The writer tries again by itself (every second), and with each new line.
mt_wait_for 5 all_written
mt_eq "drop: once space returns, all 400 lines are written" 400 "$(count drop-)" "$A"
mt_eq "drop: ... and every line is whole" 0 "$(whole)" "$A"
mt_eq "drop: no line was lost (no audit-dropped line)" 0 \
    "$(grep -c '"event":"audit-dropped"' "$A")"
mt_wait_log "$MT_T/moatd.err" 'audit: writing again' 50 &&
    mt_pass "drop: stderr says the audit writes again" ||
    mt_fail "drop: stderr did not say the audit recovered" "$MT_T/moatd.err"
mt_moatd_stop
rm -f "$A"

# --- on_failure "deny" (the default) ----------------------------------------
mt_conf "$conf"
mt_conf_set "$conf" audit "{\"path\": \"$A\"}"
: >"$MT_T/moatd.err"
mt_moatd_start "$conf"
requests warm 3 >/dev/null
mt_wait_log "$A" '/warm-2' 50 || mt_error "no audit line for warm-2"
fill || mt_error "cannot fill the tmpfs"
# The first request after the disk filled is served (nothing had failed
# yet); its line cannot be written, and from then on moatd refuses.
got=""
for ((i = 0; i < 40; i++)); do
	got=$(requests deny$i 1)
	[ "$got" = 503 ] && break
	sleep 0.05
done
mt_eq "deny: once the audit cannot be written, requests get 503" 503 "$got"
mt_curl d1 -x "http://$MT_HTTP" http://origin.test/d1
mt_eq "deny: ... with X-Moat-Reason audit-unavailable" audit-unavailable \
    "$(mt_hdr d1 X-Moat-Reason)" "$MT_T/d1.hdr"
unfill
for ((i = 0; i < 50; i++)); do
	got=$(requests after$i 1)
	[ "$got" = 200 ] && break
	sleep 0.1
done
mt_eq "deny: once space returns, requests are served again" 200 "$got"
mt_wait_log "$A" "/after$i" 50
mt_eq "deny: the refusals are in the audit log" 1 \
    "$(grep '"path":"/d1"' "$A" | grep -c '"reason":"audit-unavailable"')" "$A"
mt_eq "deny: every line is whole" 0 "$(whole)" "$A"

mt_finish
