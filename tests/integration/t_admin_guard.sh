#!/bin/bash
# t_admin_guard.sh - no sandbox may reach or use an admin socket (security
# issue, item 4).
#
#   moat namespace
#   +------------------------------------------------------------------+
#   | platform moatd ("admin": unix:$MT_T/padm/admin.sock), listed in   |
#   |   /run/moat/admin.d                                              |
#   | moat run (private moatd) --> sandbox: the platform's socket?     |
#   | moat run --moatd platform --> sandbox "guarded" (registered)     |
#   |   nsenter -n into it: admincli.py register --> refused           |
#   +------------------------------------------------------------------+
#   net: origin.py 203.0.113.10, dns.py 203.0.113.53
#
# Checks: the platform moatd lists its admin socket in the registry;
# moat run refuses --allow-unix-socket naming it (directly or by a link); a
# root `moat run` with its own private moatd cannot reach the platform's
# admin socket (hidden) nor register through it; a register from a client
# inside a registered sandbox's network namespace is refused, and so is
# one passing a socket that lives there, each with an audit line (reason
# sandbox-refused); a register that takes a configured listener's sandbox
# name is refused; list and stats from inside a registered sandbox's
# namespace are refused (and audited), from the moat namespace answered;
# a plain register from the moat namespace is taken (the
# checks can pass), and a second one on the same connection too (sockets
# in the registering client's own namespace do not guard it).

. "$(dirname "$0")/lib.sh"

mt_init
mt_run_need nsenter
mt_world
mt_nobody_dir
PRIV="--allow-private 203.0.113.0/24 --allow-private 2001:db8::/32"
ADMCLI="/usr/bin/python3 $MT_HELPERS/admincli.py"

# refused_twice: sets got to the number of sandbox-refused lines of the two
# refused registrations; 0 once there are both.
refused_twice()
{
	got=$(grep '"event":"sandbox"' "$MT_T/audit.log" |
	    grep '"reason":"sandbox-refused"' |
	    grep -c '"sandbox":"\(inner\|fdinside\)"')
	[ "$got" = 2 ]
}

# refused_ops: sets got to the sandbox-refused lines of list and stats
# asked from inside the guarded sandbox; 0 once there are all three.
refused_ops()
{
	got=$(grep '"reason":"sandbox-refused"' "$MT_T/audit.log" |
	    grep '"sandbox":"guarded"' | grep -c '"detail":"\(list\|stats\): ')
	[ "$got" = 3 ]
}

mkdir -p "$MT_T/padm"
adm=$(realpath "$MT_T/padm")/admin.sock
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_conf_set "$conf" admin "{\"address\": \"unix:$adm\"}"
mt_moatd_start "$conf"

# The registry names the platform's socket.
if grep -qxF "$adm" /run/moat/admin.d/* 2>/dev/null; then
	mt_pass "the platform moatd lists its admin socket in /run/moat/admin.d"
else
	mt_fail "no registry entry for $adm" "$MT_T/moatd.err"
fi

# --- a sandbox with its own moatd cannot reach the platform's ----------
cat > "$MT_T/reach.sh" <<EOF
#!/bin/sh
$MT_PROBE --tag adm unixconnect "$adm"
$ADMCLI "$adm" escape-\$\$
EOF
chmod 755 "$MT_T/reach.sh"
# --allow-unix-sockets: the workload may make Unix sockets, so that
# what stops it is the hiding (t_run_unixsock.sh tests the filter).
mt_moat_run root reach $PRIV --allow origin.test --allow-unix-sockets -- \
    "$MT_T/reach.sh"
mt_eq "private moat run: exit status" 0 "$MT_RUN_RC" "$MT_T/reach.err"
mt_in_set "private moat run: the platform's admin socket is hidden" \
    "$(mt_out reach adm_result)" "ECONNREFUSED ENOTSOCK EACCES ENOENT" \
    "$MT_T/reach.out"
mt_in_set "private moat run: no register gets through it" \
    "$(mt_out reach admin_result | cut -d' ' -f1)" \
    "ECONNREFUSED ENOTSOCK EACCES ENOENT" "$MT_T/reach.out"
# --allow-unix-socket naming it (or a link to it): refused, since moat
# run's supervisor connects where the sandbox's hiding does not apply.
ln -s "$adm" "$MT_T/admlink.sock"
for spell in "$adm" "$MT_T/admlink.sock"; do
	mt_moat_run root allowadm $PRIV --allow origin.test \
	    --allow-unix-socket "$spell" -- "$MT_T/reach.sh"
	mt_eq "--allow-unix-socket $spell: refused" "125 1" "$MT_RUN_RC $(grep \
	    -c 'an admin socket of moatd' "$MT_T/allowadm.err")" \
	    "$MT_T/allowadm.err" "$MT_T/allowadm.out"
done
if grep -q '"detail":"registered"' "$MT_T/audit.log"; then
	mt_fail "the platform registered a sandbox from the private run" \
	    "$MT_T/audit.log"
else
	mt_pass "the platform registered nothing"
fi

# --- a registered sandbox's namespace is guarded -------------------------
rm -f "$MT_T/g.started" "$MT_T/g.goon"
ip netns exec "$(mt_ns moat)" env MOAT_NETNS="$MOAT_NETNS" "$MOAT" run \
    --no-tty --moatd "unix:$adm" $PRIV --allow origin.test --name guarded \
    -- sh -c "readlink /proc/self/ns/net > $MT_T/g.tmp
	mv $MT_T/g.tmp $MT_T/g.started
	i=0; while [ ! -e $MT_T/g.goon ] && [ \$i -lt 600 ]; do
	sleep 0.1; i=\$((i + 1)); done" </dev/null >"$MT_T/g.out" \
    2>"$MT_T/g.err" &
grun=$!
MT_PIDS="$MT_PIDS $grun"
mt_wait_for 10 test -s "$MT_T/g.started"
# A process of the sandbox, by its network namespace.
wl=""
if [ -s "$MT_T/g.started" ]; then
	gns=$(cat "$MT_T/g.started")
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/ns/net" 2>/dev/null)" = "$gns" ] &&
		    wl=${p#/proc/} && break
	done
fi
if [ -z "$wl" ]; then
	mt_fail "the guarded sandbox did not start" "$MT_T/g.err"
else
	out=$(timeout -k 2 30 nsenter -t "$wl" -n $ADMCLI "$adm" inner)
	case $out in
	*"admin_result=refused"*"inside the network namespace of sandbox guarded"*)
		mt_pass "a register from inside a sandbox's namespace is refused" ;;
	*)	mt_fail "register from inside the sandbox: $out" "$MT_T/moatd.err" ;;
	esac
	out=$(mt_in moat $ADMCLI "$adm" fdinside "$wl")
	case $out in
	*"admin_result=refused"*"network namespace of sandbox guarded"*)
		mt_pass "a register passing a socket of that namespace is refused" ;;
	*)	mt_fail "register of a socket inside the sandbox: $out" "$MT_T/moatd.err" ;;
	esac
	mt_wait_for 3 refused_twice
	mt_eq "both refusals are audited (sandbox-refused)" 2 "$got" \
	    "$MT_T/audit.log"
	# Nor may it learn of the other sandboxes: list and stats are
	# refused there (and audited), and moat status says so.
	for op in list stats; do
		out=$(timeout -k 2 30 nsenter -t "$wl" -n $ADMCLI "$adm" --op $op)
		case $out in
		*"admin_result=refused"*"$op refused: the client is inside the network namespace of sandbox guarded"*)
			mt_pass "$op from inside a sandbox's namespace is refused" ;;
		*)	mt_fail "$op from inside the sandbox: $out" "$MT_T/moatd.err" ;;
		esac
	done
	out=$(timeout -k 2 30 nsenter -t "$wl" -n "$MOAT" status --moatd "$adm" 2>&1)
	mt_eq "moat status from inside it: exit 1" 1 "$?"
	case $out in
	*"refused: the client is inside the network namespace of sandbox guarded"*)
		mt_pass "moat status from inside it says why" ;;
	*)	mt_fail "moat status from inside the sandbox: $out" ;;
	esac
	mt_wait_for 3 refused_ops
	mt_eq "the refused list and stats are audited (sandbox-refused)" 3 \
	    "$got" "$MT_T/audit.log"
	# From moatd's side of the boundary, the list has the sandbox.
	out=$(mt_in moat $ADMCLI "$adm" --op list)
	case $out in
	*admin_result=ok*'"sandbox":"guarded","kind":"registered"'*)
		mt_pass "list from the moat namespace names the guarded sandbox" ;;
	*)	mt_fail "list from the moat namespace: $out" "$MT_T/moatd.err" ;;
	esac
fi
: > "$MT_T/g.goon"
mt_wait_exit "$grun" 300
mt_eq "the guarded sandbox ran to its end" 0 "$MT_WAIT_RC" "$MT_T/g.err"

# --- names ----------------------------------------------------------------
out=$(mt_in moat $ADMCLI "$adm" it-http)
case $out in
*"admin_result=refused"*"configured listeners"*)
	mt_pass "a register named like a configured listener's sandbox is refused" ;;
*)	mt_fail "register named it-http: $out" "$MT_T/moatd.err" ;;
esac
out=$(mt_in moat $ADMCLI "$adm" plain)
mt_eq "a plain register from the moat namespace is taken" \
    "admin_result=ok" "$out" "$MT_T/moatd.err"
# A platform that binds a sandbox's sockets where it runs: its own
# namespace does not become a guarded one.
out=$(mt_in moat $ADMCLI "$adm" local twice | tr '\n' ' ')
mt_eq "a client's own namespace is not guarded by its sandboxes' sockets" \
    "admin_result=ok admin_result2=ok " "$out" "$MT_T/moatd.err"

mt_finish
