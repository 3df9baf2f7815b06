#!/bin/bash
# t_run_moatd.sh - `moat run --moatd ADDR`: the sandbox registers with a
# moatd the test started (its "admin" socket), passing the held sockets,
# and unregisters on exit; as root against a root moatd, and as nobody
# against a moatd running as nobody.
#
#   moat namespace
#   +-----------------------------------------------------------------+
#   | moatd (the test's, "admin": unix:$MT_T/.../admin.sock)           |
#   |   ^ register {sandbox, policy, listeners} + SCM_RIGHTS           |
#   | moat run --moatd ... --> sandbox: held sockets, served by moatd  |
#   +-----------------------------------------------------------------+
#   net: origin.py 203.0.113.10, dns.py 203.0.113.53
#
# Checks: the workload reaches the allowed origin (proxy and transparent)
# under the sandbox's own policy; moatd's audit log names the sandbox,
# registered and unregistered; moatd's descriptors return to what they
# were (it closed the held sockets); the admin socket is hidden from the
# workload; a second sandbox with the same name is refused; a user moatd
# does not accept is refused clearly; if moatd dies the sandbox has no
# network and moat run says so; nothing is left behind.

. "$(dirname "$0")/lib.sh"

mt_init
mt_run_need
mt_world
mt_nobody_dir
PRIV="--allow-private 203.0.113.0/24 --allow-private 2001:db8::/32"

cat > "$MT_T/work.sh" <<EOF
#!/bin/sh
P="$MT_PROBE"
\$P --tag px proxyget http://origin.test/
\$P --tag tp raw 203.0.113.10 80 origin.test
\$P --tag deny raw 203.0.113.12 80 other.test
\$P --tag adm unixconnect "\$1"
echo "netns=\$(readlink /proc/self/ns/net | tr -dc 0-9)"
exit 7
EOF
chmod 755 "$MT_T/work.sh"
chmod 777 "$MT_T"

# held PID: how many of PID's sockets are bound to loopback (a held
# sandbox's sockets: the test's moatd binds no loopback address).
held()
{
	"$MT_PY" "$MT_HELPERS/fdsocks.py" "$1" 2>/dev/null |
	    grep -c ' \(127\.0\.0\.1\|::1\) '
}
none_held() { [ "$(held "$1")" = 0 ]; }
# rounds FILE N: the probe loop wrote N rounds to FILE at least.
rounds() { [ "$(grep -c '^round' "$1")" -ge "$2" ]; }

# check_run WHO NAME ADMIN AUDIT MOATD_PID: one registered run's checks.
check_run()
{
	local who=$1 n=$2 adm=$3 audit=$4 mpid=$5 before
	before=$(mt_ns_pids moat)
	mt_eq "$n: moatd holds no sandbox socket before" 0 "$(held "$mpid")"
	rm -f "$MT_T/$n.started" "$MT_T/$n.goon"
	priv=""
	[ "$who" = nobody ] && priv=$MT_AS_NOBODY
	# --allow-unix-sockets: the hiding, not the seccomp filter, is what
	# keeps work.sh off the admin socket.
	# shellcheck disable=SC2086
	ip netns exec "$(mt_ns moat)" $priv env MOAT_NETNS="$MOAT_NETNS" \
	    "$MOAT" run --no-tty --moatd "unix:$adm" $PRIV --allow origin.test \
	    --allow-unix-sockets --name "sbx-$n" -- \
	    sh -c "echo up > $MT_T/$n.started
		while [ ! -e $MT_T/$n.goon ]; do sleep 0.05; done
		exec $MT_T/work.sh $adm" </dev/null >"$MT_T/$n.out" \
	    2>"$MT_T/$n.err" &
	run=$!
	MT_PIDS="$MT_PIDS $run"
	mt_wait_for 10 test -s "$MT_T/$n.started"
	mt_eq "$n: while registered, moatd holds the 8 held sockets" 8 \
	    "$(held "$mpid")" "$MT_T/$n.err"
	: > "$MT_T/$n.goon"
	mt_wait_exit "$run" 300
	MT_RUN_RC=$MT_WAIT_RC
	mt_eq "$n: exit status" 7 "$MT_RUN_RC" "$MT_T/$n.err"
	mt_eq "$n: through the proxy variables" origin \
	    "$(mt_out "$n" px_origin)" "$MT_T/$n.out" "$MT_T/$n.err"
	mt_eq "$n: transparently" "200 origin" \
	    "$(mt_out "$n" tp_status) $(mt_out "$n" tp_origin)" "$MT_T/$n.out"
	mt_in_set "$n: the sandbox's policy denies other.test" \
	    "$(mt_out "$n" deny_status)" "403 none" "$MT_T/$n.out"
	mt_in_set "$n: the admin socket is hidden from the workload" \
	    "$(mt_out "$n" adm_result)" "ECONNREFUSED ENOTSOCK EACCES ENOENT" \
	    "$MT_T/$n.out"
	mt_in_set "$n: moatd's audit has the sandbox's lines" \
	    "$(grep -c "\"sandbox\":\"sbx-$n\"" "$audit" | awk '{ print ($1 >= 4) ? "yes" : "no" }')" \
	    yes "$audit"
	mt_eq "$n: registered, then unregistered" "1 1" \
	    "$(grep "\"sandbox\":\"sbx-$n\"" "$audit" | grep -c '"detail":"registered"') $(grep "\"sandbox\":\"sbx-$n\"" "$audit" | grep -c '"detail":"unregistered"')" \
	    "$audit"
	mt_wait_for 5 none_held "$mpid"
	mt_eq "$n: moatd closed the sandbox's 8 sockets" 0 "$(held "$mpid")"
	mt_no_leftovers "$n: after the run" "$before" "$(mt_out "$n" netns)"
}

# --- root: the test's moatd, as root --------------------------------
mkdir -p "$MT_T/adm"
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_conf_set "$conf" admin "{\"address\": \"unix:$MT_T/adm/admin.sock\"}"
mt_moatd_start "$conf"
check_run root root "$MT_T/adm/admin.sock" "$MT_T/audit.log" "$MT_MOATD_PID"

# moat run SIGKILLed: moatd sees the admin connection close and lets
# the sandbox go (unregistered, its sockets closed).
before=$(mt_ns_pids moat)
rm -f "$MT_T/k.started"
ip netns exec "$(mt_ns moat)" env MOAT_NETNS="$MOAT_NETNS" "$MOAT" run \
    --no-tty --moatd "unix:$MT_T/adm/admin.sock" $PRIV --allow origin.test \
    --name killed -- sh -c "readlink /proc/self/ns/net | tr -dc 0-9 \
    > $MT_T/k.started; exec sleep 302.5" </dev/null >/dev/null \
    2>"$MT_T/k.err" &
k=$!
MT_PIDS="$MT_PIDS $k"
mt_wait_for 10 test -s "$MT_T/k.started"
mt_eq "killed: registered, moatd holds its sockets" 8 "$(held "$MT_MOATD_PID")"
kill -KILL "$k"
mt_wait_exit "$k"
mt_wait_for 5 none_held "$MT_MOATD_PID"
mt_eq "killed: moatd closed the sandbox's sockets" 0 "$(held "$MT_MOATD_PID")"
mt_wait_log "$MT_T/audit.log" '"sandbox":"killed".*"detail":"unregistered"' 50 &&
    mt_pass "killed: moatd unregistered the sandbox" ||
    mt_fail "killed: no unregistration" "$MT_T/audit.log"
mt_no_leftovers "killed: nothing left" "$before" "$(cat "$MT_T/k.started")"

# The same name twice: the second is refused, the first is unharmed.
before=$(mt_ns_pids moat)
ip netns exec "$(mt_ns moat)" env MOAT_NETNS="$MOAT_NETNS" "$MOAT" run \
    --no-tty --moatd "unix:$MT_T/adm/admin.sock" $PRIV --allow origin.test \
    --name twice -- sh -c "echo up > $MT_T/twice.started; sleep 20" \
    </dev/null >"$MT_T/twice1.out" 2>"$MT_T/twice1.err" &
first=$!
MT_PIDS="$MT_PIDS $first"
mt_wait_for 10 test -s "$MT_T/twice.started"
mt_moat_run root twice2 --moatd "unix:$MT_T/adm/admin.sock" $PRIV \
    --name twice -- true
if [ "$MT_RUN_RC" = 125 ] && grep -q 'already registered' "$MT_T/twice2.err"
then
	mt_pass "a second sandbox named like a live one is refused"
else
	mt_fail "a second sandbox with the same name: rc $MT_RUN_RC" "$MT_T/twice2.err"
fi
kill -0 "$first" 2>/dev/null && mt_pass "... and the first one still runs" ||
    mt_fail "the first sandbox died" "$MT_T/twice1.err"

# moatd dies while the sandbox runs: no network, and moat run says so.
rm -f "$MT_T/fc.log"
ip netns exec "$(mt_ns moat)" env MOAT_NETNS="$MOAT_NETNS" "$MOAT" run \
    --no-tty --moatd "unix:$MT_T/adm/admin.sock" $PRIV --allow origin.test \
    --name failclosed -- sh -c "while :; do
	$MT_PROBE --tag p raw 203.0.113.10 80 origin.test >> $MT_T/fc.log
	$MT_PROBE --tag c connect 127.0.0.1 3128 >> $MT_T/fc.log
	echo round >> $MT_T/fc.log; sleep 0.1; done" \
    </dev/null >"$MT_T/fc.out" 2>"$MT_T/fc.err" &
fc=$!
MT_PIDS="$MT_PIDS $fc"
if mt_wait_log "$MT_T/fc.log" 'p_status=200' 100; then
	kill -KILL "$MT_MOATD_PID"
	mt_wait_log "$MT_T/fc.err" 'moatd closed the admin connection' 50 &&
	    mt_pass "moatd killed: moat run reports it" ||
	    mt_fail "moatd killed: no report" "$MT_T/fc.err"
	: > "$MT_T/fc.log"
	mt_mark
	mt_wait_for 10 rounds "$MT_T/fc.log" 3
	if grep -q 'p_status=200\|c_result=ok' "$MT_T/fc.log"; then
		mt_fail "moatd killed: the sandbox still has network" "$MT_T/fc.log"
	elif [ "$(grep -c '^round' "$MT_T/fc.log")" -lt 3 ]; then
		mt_fail "moatd killed: the probe loop stalled" "$MT_T/fc.log"
	else
		mt_pass "moatd killed: no connection succeeds"
	fi
	mt_untouched "moatd killed" origin
else
	mt_fail "the fail-closed workload never connected" "$MT_T/fc.log" "$MT_T/fc.err"
fi
kill -TERM "$fc" "$first" 2>/dev/null
mt_wait_exit "$fc"
mt_wait_exit "$first"
mt_wait_exit "$MT_MOATD"

# --- nobody: a moatd running as nobody, and a rootless moat run --------
if mt_userns_ok; then
	mkdir -p "$MT_T/nb/adm" && chown nobody "$MT_T/nb/adm"
	cat > "$MT_T/nb/moatd.json" <<EOF
{
  "listen": [],
  "admin": {"address": "unix:$MT_T/nb/adm/admin.sock"},
  "policy": {"default": "deny", "rules": [
    {"name": "none", "action": "deny", "hosts": ["none.invalid"]}]},
  "resolver": {"servers": ["203.0.113.53"]},
  "audit": {"path": "$MT_T/nb/audit.log"}
}
EOF
	chmod 644 "$MT_T/nb/moatd.json"
	mt_bg moatdnb moat $MT_AS_NOBODY "$MOATD" -c "$MT_T/nb/moatd.json" \
	    --ready-fd 3 || mt_error "moatd as nobody did not start"
	check_run nobody nobody "$MT_T/nb/adm/admin.sock" "$MT_T/nb/audit.log" \
	    "$MT_RPID_moatdnb"
	# root's moatd refuses other users: nobody against root's socket.
	mkdir -p "$MT_T/adm2"
	chmod 755 "$MT_T/adm2"
	conf2=$MT_T/moatd2.json
	cat > "$conf2" <<EOF
{ "listen": [], "admin": {"address": "unix:$MT_T/adm2/admin.sock",
  "mode": "0666"}, "policy": {"default": "deny"},
  "resolver": {"servers": ["203.0.113.53"]}, "audit": {"path": "-"} }
EOF
	mt_bg moatd2 moat "$MOATD" -c "$conf2" --ready-fd 3 ||
	    mt_error "the second moatd did not start"
	before=$(mt_ns_pids moat)
	mt_moat_run nobody refused --moatd "unix:$MT_T/adm2/admin.sock" \
	    $PRIV -- true
	if [ "$MT_RUN_RC" = 125 ] && grep -q 'moatd' "$MT_T/refused.err"; then
		mt_pass "a moatd that refuses the user: 125, $(tail -n1 "$MT_T/refused.err")"
	else
		mt_fail "refused by moatd: rc $MT_RUN_RC" "$MT_T/refused.err"
	fi
	mt_no_leftovers "after the refusal" "$before"
else
	echo "SKIP: rootless runs (nobody may not create user namespaces here)"
fi

mt_finish
