#!/bin/bash
# t_signals.sh - SIGHUP reloads the config; SIGTERM drains and exits 0.
#
#   cli: curl --> moat: moatd 10.200.0.1:3128 --> net: origin.py 203.0.113.10
#                                                        203.0.113.12 (other.test)
#   (the full drawing is at the top of lib.sh)
#
# Reload: a rule added by SIGHUP allows new connections, a rule removed
# stops allowing, listeners keep working; a broken config (bad JSON, bad
# value) is refused with its FILE:LINE:COLUMN on stderr and the policy in
# force keeps working.  Drain: after SIGTERM, a tunnel that is moving a
# slow answer finishes intact, new requests are not forwarded, and moatd
# exits 0; a tunnel that stays open past drain_ms does not keep moatd alive.
# A private moatd (--admin-fd) whose admin connection closes and which then
# gets a SIGTERM at any moment (moat run's end) still writes its last audit
# lines (helpers/lastlines.py, in the moat namespace).

. "$(dirname "$0")/lib.sh"

mt_init
mt_need_moatd
mt_world
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_moatd_start "$conf"
P=(-x "http://$MT_HTTP")

# until_code NAME WANT URL: retries (bounded, 0.1 s steps, new connection
# each time) until the URL answers WANT; the reload is asynchronous.
until_code()
{
	local n=$1 want=$2 url=$3 k
	for ((k = 0; k < 30; k++)); do
		mt_curl "$n" "${P[@]}" "$url"
		[ "$MT_CODE" = "$want" ] && return 0
		sleep 0.1
	done
	return 1
}

# replace CONF FROM: moves FROM over CONF in one rename.
replace()
{
	mv "$2" "$1"
}

# --- reload ------------------------------------------------------------------------
mt_curl r0 "${P[@]}" http://other.test/before
mt_denied "before reload: other.test" r0 403 other.test no-rule
cp "$conf" "$conf.new"
mt_conf_set "$conf.new" policy.rules.^ \
    '{"name": "other", "action": "allow", "hosts": ["other.test"], "ports": [80]}'
replace "$conf" "$conf.new"
kill -HUP "$MT_MOATD_PID"
if until_code r1 200 http://other.test/after; then
	mt_allowed "SIGHUP: the added rule allows other.test" r1
else
	mt_fail "SIGHUP: other.test still gets $MT_CODE after 3 s" \
	    "$MT_T/r1.hdr" "$MT_T/moatd.err"
fi
mt_curl r2 "${P[@]}" http://origin.test/kept
mt_allowed "SIGHUP: the kept rule still allows origin.test" r2
mt_curl r3 -x "socks5h://$MT_SOCKS" http://origin.test/socks-after
mt_allowed "SIGHUP: the SOCKS5 listener still works" r3
mt_raw r4 --unix "$MT_T/proxy.sock" --timeout 5 --stop-after-response \
    --send 'GET http://origin.test/unix-after HTTP/1.1\r\nHost: origin.test\r\n\r\n'
mt_eq "SIGHUP: the Unix listener still works" 200 "$(mt_kv r4 status)" \
    "$MT_T/r4.kv"

cp "$conf" "$conf.new"
mt_conf_set "$conf.new" policy.rules.1 -
replace "$conf" "$conf.new"
kill -HUP "$MT_MOATD_PID"
if until_code r5 403 http://origin.test/removed; then
	mt_denied "SIGHUP: the removed rule no longer allows origin.test" r5 403 \
	    origin.test no-rule
else
	mt_fail "SIGHUP: origin.test still gets $MT_CODE after 3 s" \
	    "$MT_T/r5.hdr" "$MT_T/moatd.err"
fi

# A config that is not JSON: refused, reported, old policy kept.
cp "$conf" "$MT_T/good.json"
printf '{\n  "listen": [\n    {"proto": "http", "address": "10.200.0.1:3128"},\n  ]\n}\n' \
    > "$conf.new"
replace "$conf" "$conf.new"
kill -HUP "$MT_MOATD_PID"
if mt_wait_log "$MT_T/moatd.err" "$conf:[0-9]+:[0-9]+:" 30; then
	mt_pass "SIGHUP with broken JSON: moatd reports $conf:LINE:COLUMN"
else
	mt_fail "SIGHUP with broken JSON: no '$conf:LINE:COLUMN:' on stderr" \
	    "$MT_T/moatd.err"
fi
if mt_moatd_alive; then
	mt_pass "SIGHUP with broken JSON: moatd still runs"
else
	mt_fail "SIGHUP with broken JSON: moatd died" "$MT_T/moatd.err"
fi
mt_curl b1 "${P[@]}" http://other.test/still
mt_allowed "broken JSON: the policy in force still allows other.test" b1
mt_curl b2 "${P[@]}" http://origin.test/still
mt_denied "broken JSON: the policy in force still denies origin.test" b2 403 \
    origin.test no-rule

# Valid JSON with a bad value and an unknown key: refused likewise.
cp "$MT_T/good.json" "$conf.new"
mt_conf_set "$conf.new" policy.rules.0.ports '[70000]'
mt_conf_set "$conf.new" policy.rules.+ \
    '{"name": "all", "action": "allow", "hosts": ["*"], "ports": ["*"]}'
mt_conf_set "$conf.new" lisen '[]'
before=$(grep -c "$conf:" "$MT_T/moatd.err")
replace "$conf" "$conf.new"
kill -HUP "$MT_MOATD_PID"
# reported N: N lines about the config on moatd's stderr since before.
reported() { [ "$(grep -c "$conf:" "$MT_T/moatd.err")" -ge $((before + $1)) ]; }
mt_wait_for 3 reported 2
n=$(($(grep -c "$conf:" "$MT_T/moatd.err") - before))
if [ "$n" -ge 2 ]; then
	mt_pass "SIGHUP with two semantic errors: both reported ($n lines)"
else
	mt_fail "SIGHUP with two semantic errors: $n '$conf:' lines on stderr" \
	    "$MT_T/moatd.err"
fi
mt_curl b3 "${P[@]}" http://origin.test/not-all
mt_denied "bad values: the refused allow-all rule is not in force" b3 403 \
    origin.test no-rule
mt_curl b4 "${P[@]}" http://other.test/still2
mt_allowed "bad values: the policy in force still allows other.test" b4

# --- drain ---------------------------------------------------------------------------
# good.json: the policy in force (other.test allowed, origin.test not).
# drain_ms 5000: longer than the slow answer below.
cp "$MT_T/good.json" "$conf"
mt_conf_set "$conf" timeouts '{"drain_ms": 5000}'
mt_moatd_stop
mt_eq "moatd exits 0 on SIGTERM" 0 "$MT_WAIT_RC" "$MT_T/moatd.err"
mt_moatd_start "$conf"
rm -f "$MT_T/slow.body"
(
	timeout 20 ip netns exec "$(mt_ns cli)" curl -sS --max-time 15 \
	    -p "${P[@]}" -o "$MT_T/slow.body" -w '%{http_code}' \
	    http://other.test/slow/1500 > "$MT_T/slow.code" 2>"$MT_T/slow.err"
	echo $? > "$MT_T/slow.rc"
) &
slow=$!
if ! mt_wait_log "$MT_T/origin.log" '"path": "/slow/1500"' 50; then
	mt_fail "drain: the slow request never reached the origin" \
	    "$MT_T/slow.err" "$MT_T/moatd.err"
fi
t_term=$(date +%s%N)
kill -TERM "$MT_MOATD_PID"
# New work is not taken once draining: the listener is closed, or a new
# request gets an error.  (The signal is asynchronous: retry briefly.)
mt_mark
drained=""
for ((k = 0; k < 10; k++)); do
	mt_curl n1 --connect-timeout 1 "${P[@]}" "http://other.test/after-term-$k"
	if [ "$MT_CODE" != 200 ]; then
		drained="HTTP $MT_CODE, curl exit $MT_RC"
		break
	fi
	sleep 0.1
done
if [ -n "$drained" ]; then
	mt_pass "drain: a new request is not served ($drained)"
else
	mt_fail "drain: new requests were still served 1 s after SIGTERM"
fi
n=$(mt_new origin | mt_jl /dev/stdin count event=request "path=/after-term-$k")
mt_eq "drain: the refused request did not reach the origin" 0 "$n"
wait "$slow"
mt_eq "drain: the open tunnel finished its answer (curl exit)" 0 \
    "$(cat "$MT_T/slow.rc")" "$MT_T/slow.err"
mt_eq "drain: ...with 200" 200 "$(cat "$MT_T/slow.code")"
mt_wait_exit "$MT_MOATD" 100
mt_eq "drain: moatd exits 0 after the tunnel" 0 "$MT_WAIT_RC" \
    "$MT_T/moatd.err"
ms=$((($(date +%s%N) - t_term) / 1000000))
if [ "$ms" -ge 1000 ]; then
	mt_pass "drain: moatd stayed up for the tunnel ($ms ms after SIGTERM)"
else
	mt_fail "drain: moatd was gone $ms ms after SIGTERM, before the 1.5 s answer"
fi

# A tunnel that never ends does not hold moatd past drain_ms (1500).
mt_conf_set "$conf" timeouts '{"drain_ms": 1500}'
mt_moatd_start "$conf"
mt_bg hold cli "$MT_PY" "$MT_HELPERS/hold.py" --proxy "$MT_HTTP" \
    --target other.test:80 --count 2 --out "$MT_T/hold.out" \
    --lifetime 60 --ready-fd 3 || mt_fail "hold.py did not start"
mt_eq "drain: two idle tunnels are open" "0 200 1 200 " \
    "$(tr '\n' ' ' < "$MT_T/hold.out")"
t_term=$(date +%s%N)
kill -TERM "$MT_MOATD_PID"
mt_wait_exit "$MT_MOATD" 100
ms=$((($(date +%s%N) - t_term) / 1000000))
mt_eq "drain: moatd exits 0 with idle tunnels open" 0 "$MT_WAIT_RC" \
    "$MT_T/moatd.err"
if [ "$ms" -ge 1200 ] && [ "$ms" -le 5000 ]; then
	mt_pass "drain: moatd waited about drain_ms (1500) and no longer ($ms ms)"
else
	mt_fail "drain: moatd exited $ms ms after SIGTERM (drain_ms 1500)" \
	    "$MT_T/moatd.err"
fi

# The end of a private moatd, up to 300 times (rounds stop after 25 s, within
# mt_in's 30: under ASan on a loaded machine not all fit), SIGTERM 0-600 us
# after the admin connection closes: before the fix, 19-30 of 300 rounds
# lost "unregistered" (moatd died of the SIGTERM with it still queued).
if mt_in moat "$MT_PY" "$MT_HELPERS/lastlines.py" --moatd "$MOATD" \
    --runs 300 --max-us 600 >"$MT_T/lastlines.out" 2>&1; then
	mt_pass "a late SIGTERM: every round kept its last audit lines ($(tail -n 1 "$MT_T/lastlines.out"))"
else
	mt_fail "a late SIGTERM cost audit lines" "$MT_T/lastlines.out"
fi
mt_finish
