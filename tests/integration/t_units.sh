#!/bin/bash
# t_units.sh - moatd as conf/systemd/moatd.service runs it, and its audit
# log rotated by conf/logrotate/moatd (issue 15, item 7).  There is no
# systemd here (PID 1 is not systemd), so the unit's identity and
# capabilities are what is reproduced: setpriv makes the unit's User= (a
# user that is not root), CapabilityBoundingSet= and AmbientCapabilities=
# (CAP_NET_BIND_SERVICE alone) and NoNewPrivileges=; tests/units.test
# checks the rest of the unit with systemd-analyze.
#
#   moat namespace
#   +------------------------------------------------------------------+
#   | moatd -c ... (ExecStartPre's --check first), as nobody with only   |
#   |   CAP_NET_BIND_SERVICE: http 10.200.0.1:3128, dns 10.200.0.1:53,   |
#   |   admin $MT_T/run/admin.sock, audit $MT_T/log/audit.jsonl (chain)   |
#   | logrotate -f with the shipped rules (postrotate: kill -USR1, for   |
#   |   systemctl kill)                                                  |
#   +------------------------------------------------------------------+
#   cli: curl, dnsprobe.py; net: origin.py, dns.py
#
# Checks: the unit's ExecStartPre and ExecStart lines run as given; moatd
# binds port 53 with the ambient capability and nothing more (CapEff,
# NoNewPrivs), and without it it cannot (exit 1, says why); it serves;
# two rotations by rename and SIGUSR1 lose no line (every request is in
# the rotated or the new file), compress the older one, and `moat audit
# verify` finds the hash chain whole across the three files.

. "$(dirname "$0")/lib.sh"

mt_init setpriv
mt_need_moatd
command -v logrotate >/dev/null 2>&1 ||
    mt_skip "needs logrotate (Debian: logrotate)"
mt_world

unit=$MOAT_SRCDIR/conf/systemd/moatd.service.in
rules=$MOAT_SRCDIR/conf/logrotate/moatd.in
mkdir -p "$MT_T/run" "$MT_T/log" "$MT_T/etc/moat"
chmod 755 "$MT_T"
chown nobody "$MT_T/run" "$MT_T/log"
conf=$MT_T/etc/moat/moatd.json
mt_conf "$conf"
mt_conf_set "$conf" listen '[
  {"proto": "http", "address": "10.200.0.1:3128", "sandbox": "it-http"},
  {"proto": "dns", "address": "10.200.0.1:53", "sandbox": "it-dns"}]'
mt_conf_set "$conf" admin "{\"address\": \"unix:$MT_T/run/admin.sock\"}"
mt_conf_set "$conf" audit "{\"path\": \"$MT_T/log/audit.jsonl\", \"hash_chain\": true}"
chmod 644 "$conf"

# The unit's command lines, with this build's moatd and this config.
line()
{
	sed -n "s/^$1=//p" "$unit" | sed -e "s|@sbindir@|$MOAT_BUILDDIR/proxy|g" \
	    -e "s|@sysconfdir@|$MT_T/etc|g"
}
pre=$(line ExecStartPre)
start=$(line ExecStart)
[ -n "$pre" ] && [ -n "$start" ] || mt_error "no ExecStart lines in $unit"
# What the unit gives moatd, as setpriv words.
caps=$(sed -n 's/^AmbientCapabilities=//p' "$unit" | tr 'A-Z' 'a-z' |
    sed 's/cap_//g')
[ "$(sed -n 's/^CapabilityBoundingSet=//p' "$unit" | tr 'A-Z' 'a-z' |
    sed 's/cap_//g')" = "$caps" ] ||
    mt_error "the unit's bounding set is not its ambient set"
grep -qx 'NoNewPrivileges=yes' "$unit" || mt_error "the unit lost NoNewPrivileges"
AS_UNIT="setpriv --reuid nobody --regid nogroup --clear-groups
    --bounding-set -all,+$caps --inh-caps -all,+$caps
    --ambient-caps -all,+$caps --no-new-privs"

# shellcheck disable=SC2086 # words
out=$(mt_in moat $AS_UNIT $pre 2>&1)
mt_eq "ExecStartPre ($pre): exit 0" 0 "$?"

# Without the capability port 53 is out of reach: moatd says so.
# shellcheck disable=SC2086
out=$(mt_in moat setpriv --reuid nobody --regid nogroup --clear-groups \
    --bounding-set -all --inh-caps -all --no-new-privs $start 2>&1)
rc=$?
case "$rc $out" in
"1 "*"10.200.0.1:53"*"ermission denied"*)
	mt_pass "without CAP_NET_BIND_SERVICE moatd cannot bind port 53 (exit 1, says so)" ;;
*)	mt_fail "moatd without the capability: $rc '$out'" ;;
esac

# shellcheck disable=SC2086
if ! mt_bg moatd moat $AS_UNIT $start --ready-fd 3; then
	mt_fail "moatd started as the unit starts it" "$MT_T/moatd.err"
	mt_finish
fi
MT_MOATD=$MT_PID_moatd
MT_MOATD_PID=$MT_RPID_moatd
st=/proc/$MT_MOATD_PID/status
mt_eq "moatd runs as nobody with CAP_NET_BIND_SERVICE alone, no_new_privs" \
    "$(id -u nobody) 0000000000000400 0000000000000400 1" \
    "$(awk '/^Uid:/ { u = $2 } /^CapEff:/ { e = $2 } /^CapBnd:/ { b = $2 }
        /^NoNewPrivs:/ { n = $2 } END { print u, e, b, n }' "$st")"

AUD=$MT_T/log/audit.jsonl
# requests N TAG: N requests through the proxy, each to its own path.
requests()
{
	local i
	for ((i = 0; i < $1; i++)); do
		mt_curl "req-$2-$i" -x "$MT_HTTP" "http://origin.test/$2/$i"
		[ "$MT_CODE" = 200 ] || mt_fail "request $2/$i: $MT_CODE" \
		    "$MT_T/req-$2-$i.err" "$MT_T/moatd.err"
	done
}
# lines TAG: request lines of TAG's paths in the log files, all of them.
lines()
{
	local f
	for f in "$MT_T"/log/audit.jsonl*; do
		case $f in *.gz) gzip -dc "$f" ;; *) cat "$f" ;; esac
	done | grep '"event":"request"' | grep -c "\"path\":\"/$1/"
}
has_lines() { [ "$(lines "$1")" = "$2" ]; }

requests 5 one
mt_wait_for 5 has_lines one 5
out=$(mt_in cli "$MT_PY" "$MT_HELPERS/dnsprobe.py" 10.200.0.1 origin.test A)
case $out in
*"A 203.0.113.10"*) mt_pass "it serves DNS on port 53 and HTTP on 3128" ;;
*)	mt_fail "DNS on port 53: $out" "$MT_T/moatd.err" ;;
esac

# The shipped rules, but for where the log is and for the signal, which
# systemctl would send to the unit's main process.
sed -e "s|@localstatedir@/log/moat|$MT_T/log|" \
    -e "s|systemctl kill --kill-whom=main --signal=SIGUSR1 moatd.service|kill -USR1 $MT_MOATD_PID|" \
    "$rules" >"$MT_T/logrotate.conf"
grep -q "kill -USR1 $MT_MOATD_PID" "$MT_T/logrotate.conf" ||
    mt_error "the postrotate line of $rules changed: adapt this test"
# rotate: one forced rotation; moatd reopens (its "chain-start" line).
rotate()
{
	logrotate -f -s "$MT_T/logrotate.state" "$MT_T/logrotate.conf" \
	    >"$MT_T/logrotate.out" 2>&1 ||
	    mt_fail "logrotate -f" "$MT_T/logrotate.out"
	mt_wait_for 5 reopened
}
reopened() { [ -f "$AUD" ] && grep -q '"event":"chain-start"' "$AUD"; }
rotate
mt_eq "after a rotation moatd writes a new file (it reopened on SIGUSR1)" 0 \
    "$(reopened; echo $?)" "$MT_T/moatd.err"
requests 5 two
mt_wait_for 5 has_lines two 5
rotate
requests 5 three
mt_wait_for 5 has_lines three 5
mt_eq "every request is in the files (5, 5, 5)" "5 5 5" \
    "$(lines one) $(lines two) $(lines three)"
ls "$MT_T/log" > "$MT_T/log.ls"
mt_eq "the files: the live one, .1 as it is, .2 compressed" \
    "audit.jsonl audit.jsonl.1 audit.jsonl.2.gz" "$(tr '\n' ' ' < "$MT_T/log.ls" | sed 's/ $//')"
mt_eq "the rotated files stay moatd's user's" "nobody nobody nobody" \
    "$(stat -c %U "$MT_T"/log/audit.jsonl* | tr '\n' ' ' | sed 's/ $//')"
out=$("$MOAT" audit verify "$MT_T/log/audit.jsonl.2.gz" "$MT_T/log/audit.jsonl.1" \
    "$AUD" 2>&1)
mt_eq "moat audit verify: the chain is whole across the rotations" 0 "$?" \
    "$MT_T/log.ls"
echo "$out" | sed 's/^/  verify: /'

kill -TERM "$MT_MOATD_PID"
mt_wait_exit "$MT_MOATD"
mt_eq "moatd drains and exits 0 on SIGTERM (KillSignal=SIGTERM)" 0 "$MT_WAIT_RC" \
    "$MT_T/moatd.err"
mt_finish
