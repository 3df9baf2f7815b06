#!/bin/bash
# t_attach.sh - `moat attach`: an existing network namespace (as a Docker
# or microVM sandbox's would be) is put behind the running moatd, in held
# and in veth mode, and given back unchanged on SIGTERM.
#
#   att (the test's namespace)           net
#   +-------------------------+   veth  +------------------------+
#   | a0 192.0.2.2/24         |---------| a1 192.0.2.1/24        |
#   | default via 192.0.2.1   |         | origin.py 203.0.113.10 |
#   +-------------------------+         +------------------------+
#        ^ held: table inet moat + sockets inside att
#        ^ veth: moat0 10.203.X.2 -> moat-XXXXXX 10.203.X.1 (moat ns)
#   moat namespace: moatd (admin socket), moat attach
#
# Before: att reaches the origin directly (the origin sees 192.0.2.2).
# Attached: the same connection is transparently proxied (the origin sees
# moatd, 203.0.113.1) and judged; other names, UDP, ICMP go nowhere; DNS
# to any server is answered by moatd; att's own interface stays.  After
# SIGTERM: table, routes, veth gone, direct path back.  Attaching twice is
# refused; a killed moat attach leaves att closed until `moat-netns
# cleanup --netns` removes the stale table.

. "$(dirname "$0")/lib.sh"

mt_init
mt_run_need
mt_world
ATT=$MT_TAG-att
ip netns add "$ATT" && MT_NSES="$MT_NSES $ATT" || mt_skip "cannot create a namespace"
ip -n "$ATT" link set lo up &&
ip link add a0 netns "$ATT" type veth peer name a1 netns "$(mt_ns net)" &&
ip -n "$ATT" link set a0 up && ip -n "$(mt_ns net)" link set a1 up &&
ip -n "$ATT" addr add 192.0.2.2/24 dev a0 &&
ip -n "$(mt_ns net)" addr add 192.0.2.1/24 dev a1 &&
ip -n "$ATT" route add default via 192.0.2.1 ||
    mt_error "cannot build the attached namespace's network"
mkdir -p "$MT_T/adm"
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_conf_set "$conf" admin "{\"address\": \"unix:$MT_T/adm/admin.sock\"}"
mt_moatd_start "$conf"
PRIV="--allow-private 203.0.113.0/24 --allow-private 2001:db8::/32"

# in_att NAME PROBE...: the probe, run inside att, KEY=VALUE into NAME.out.
in_att()
{
	local n=$1
	shift
	timeout -k 2 30 ip netns exec "$ATT" $MT_PROBE "$@" >"$MT_T/$n.out" \
	    2>"$MT_T/$n.err"
}

# has_dns NAME: the audit has a DNS line of sandbox NAME.
has_dns()
{
	grep "\"sandbox\":\"$1\"" "$MT_T/audit.log" | grep -q '"event":"dns"'
}

# direct NAME: att reaches the origin on its own (peer 192.0.2.2).
direct()
{
	mt_mark
	in_att "$1" raw 203.0.113.10 80 origin.test
	if [ "$(mt_out "$1" status)" = 200 ] &&
	    mt_new origin | grep -q '"peer": "192\.0\.2\.2:'; then
		return 0
	fi
	return 1
}

direct d0 && mt_pass "before: att reaches the origin directly" ||
    mt_error "before: att cannot reach the origin"

# moatd's own descriptors outlive the sandboxes: a registered listener
# freed must close its socket only (it once closed fd 0 too, and later a
# descriptor that reused 0, such as moatd's admin socket).
fd0=$(readlink "/proc/$MT_MOATD_PID/fd/0")
for mode in held veth; do
	n=att-$mode
	before=$(mt_ns_pids moat)
	# (a0's link-local address may finish DAD meanwhile: not ours.)
	routes0=$(ip -n "$ATT" route show table all | grep -v fe80 | sort)
	if ! mt_bg "att_$mode" moat env MOAT_NETNS="$MOAT_NETNS" "$MOAT" attach \
	    --netns "/run/netns/$ATT" --mode "$mode" --moatd \
	    "unix:$MT_T/adm/admin.sock" $PRIV --allow origin.test --name "$n" \
	    --ready-fd 3; then
		mt_fail "$n: moat attach did not get ready"
		continue
	fi
	pid_var=MT_PID_att_$mode
	apid=${!pid_var}
	pid_var=MT_RPID_att_$mode
	arpid=${!pid_var}
	mt_pass "$n: attached ($(head -n1 "$MT_T/att_$mode.out"))"
	mt_mark
	in_att "$n-tp" raw 203.0.113.10 80 origin.test
	mt_eq "$n: the same connection is now proxied" "200 origin" \
	    "$(mt_out "$n-tp" status) $(mt_out "$n-tp" origin)" \
	    "$MT_T/$n-tp.out" "$MT_T/moatd.err"
	if mt_new origin | grep -q '"peer": "192\.0\.2\.2:'; then
		mt_fail "$n: the origin was reached directly" "$MT_T/origin.log"
	elif mt_new origin | grep -q '"peer": "\(203\.0\.113\.1\|\[2001:db8::1\]\):'; then
		mt_pass "$n: the origin saw moatd, not att"
	else
		mt_fail "$n: the origin saw nothing" "$MT_T/origin.log"
	fi
	mt_mark
	in_att "$n-deny" raw 203.0.113.12 80 other.test
	mt_in_set "$n: a name the policy denies is refused" \
	    "$(mt_out "$n-deny" status)" "403 none" "$MT_T/$n-deny.out"
	mt_untouched "$n: denied" origin
	in_att "$n-udp" udp 203.0.113.10 9999
	mt_in_set "$n: UDP is refused" "$(mt_out "$n-udp" result)" \
	    "EPERM EACCES" "$MT_T/$n-udp.out"
	in_att "$n-ping" ping 203.0.113.10
	mt_in_set "$n: ICMP is refused" "$(mt_out "$n-ping" result)" \
	    "EPERM EACCES timeout" "$MT_T/$n-ping.out"
	dq=$(timeout -k 2 20 ip netns exec "$ATT" "$MT_PY" \
	    "$MT_HELPERS/dnsq.py" 192.0.2.1 origin.test 2>&1 | tr '\n' ' ')
	case $dq in
	*"A 203.0.113.10"*) mt_pass "$n: DNS to any server is answered by moatd" ;;
	*) mt_fail "$n: DNS: '$dq'" "$MT_T/moatd.err" ;;
	esac
	# The audit writer batches lines: wait (bounded) for this one.
	mt_wait_for 5 has_dns "$n"
	mt_in_set "$n: moatd's audit has the sandbox's DNS query" \
	    "$(grep "\"sandbox\":\"$n\"" "$MT_T/audit.log" | grep -c '"event":"dns"' |
	    awk '{ print ($1 > 0) ? "yes" : "no" }')" yes "$MT_T/audit.log"
	mt_eq "$n: att's own interface is left as it is" "192.0.2.2/24" \
	    "$(ip -n "$ATT" -4 -o addr show dev a0 | awk '{ print $4 }')"
	mt_eq "$n: moat's tables are in att" "table inet moat table netdev moat" \
	    "$(ip netns exec "$ATT" $MT_NFT_TABLES | grep -x 'table [a-z]* moat' | sort | tr '\n' ' ' | sed 's/ $//')"
	# Attaching the same namespace again is refused.
	timeout -k 2 30 ip netns exec "$(mt_ns moat)" env \
	    MOAT_NETNS="$MOAT_NETNS" "$MOAT" attach --netns "/run/netns/$ATT" \
	    --mode "$mode" --moatd "unix:$MT_T/adm/admin.sock" --name "$n-2" \
	    >/dev/null 2>"$MT_T/$n-twice.err"
	rc=$?
	if [ "$rc" = 1 ] && grep -q 'already attached' "$MT_T/$n-twice.err"; then
		mt_pass "$n: attaching twice is refused"
	else
		mt_fail "$n: attaching twice: rc $rc" "$MT_T/$n-twice.err"
	fi
	in_att "$n-still" raw 203.0.113.10 80 origin.test
	mt_eq "$n: ... and the first attachment still works" 200 \
	    "$(mt_out "$n-still" status)"
	kill -TERM "$arpid"
	mt_wait_exit "$apid"
	mt_eq "$n: SIGTERM detaches cleanly" 0 "$MT_WAIT_RC" "$MT_T/att_$mode.err"
	mt_eq "$n: no moat table left in att" "" \
	    "$(ip netns exec "$ATT" $MT_NFT_TABLES | grep moat)"
	mt_eq "$n: att's routes are as before" "$routes0" \
	    "$(ip -n "$ATT" route show table all | grep -v fe80 | sort)"
	mt_eq "$n: att's links are as before" "a0 lo" \
	    "$(ip -n "$ATT" -o link | awk -F': ' '{ print $2 }' | sed 's/@.*//' | sort | tr '\n' ' ' | sed 's/ $//')"
	direct "$n-after" && mt_pass "$n: after: the direct path is back" ||
	    mt_fail "$n: after: no direct path" "$MT_T/$n-after.out"
	mt_no_leftovers "$n: after detaching" "$before"
	mt_eq "$n: unregistered" 1 \
	    "$(grep "\"sandbox\":\"$n\"" "$MT_T/audit.log" | grep -c '"detail":"unregistered"')"
done

mt_eq "moatd's fd 0 is what it was after two sandboxes came and went" \
    "$fd0" "$(readlink "/proc/$MT_MOATD_PID/fd/0")"

# A killed moat attach: att stays closed; cleanup --netns opens it again.
# (The namespace named by a process's /proc/PID/ns/net this time.)
before=$(mt_ns_pids moat)
timeout -k 2 "$MT_LIFETIME" ip netns exec "$ATT" sleep "$MT_LIFETIME" &
holder=$!
MT_PIDS="$MT_PIDS $holder"
# holder_in: sets hp to the holder's child; 0 once it is in att.
holder_in()
{
	hp=$(cat /proc/"$holder"/task/"$holder"/children 2>/dev/null)
	hp=${hp%% *}
	# (/run/netns/NAME is the namespace's file itself, not a link.)
	[ -n "$hp" ] && [ "$(stat -L -c %i /proc/"$hp"/ns/net 2>/dev/null)" = \
	    "$(stat -L -c %i /run/netns/"$ATT")" ]
}
mt_wait_for 5 holder_in
mt_bg att_kill moat env MOAT_NETNS="$MOAT_NETNS" "$MOAT" attach --netns \
    "/proc/$hp/ns/net" --moatd "unix:$MT_T/adm/admin.sock" $PRIV \
    --allow origin.test --name att-kill --ready-fd 3 ||
    mt_error "moat attach --netns /proc/$hp/ns/net did not get ready"
mt_pass "attached by /proc/$hp/ns/net"
kill -KILL "$MT_RPID_att_kill"
mt_wait_exit "$MT_PID_att_kill"
in_att kill-after raw 203.0.113.10 80 origin.test
mt_in_set "killed moat attach: att has no network (fail closed)" \
    "$(mt_out kill-after status)" "none" "$MT_T/kill-after.out"
timeout -k 2 30 ip netns exec "$(mt_ns moat)" "$MOAT_NETNS" cleanup \
    --netns "/run/netns/$ATT" >"$MT_T/cleanup.out" 2>&1
mt_eq "moat-netns cleanup --netns removes the stale table" 0 $? "$MT_T/cleanup.out"
grep -q 'removed table inet moat' "$MT_T/cleanup.out" &&
    mt_pass "cleanup: $(grep removed "$MT_T/cleanup.out" | tr '\n' ';')" ||
    mt_fail "cleanup did not say what it removed" "$MT_T/cleanup.out"
direct kill-direct && mt_pass "after cleanup: the direct path is back" ||
    mt_fail "after cleanup: no direct path" "$MT_T/kill-direct.out"
mt_no_leftovers "after the killed attach" "$before"

# Not as an unprivileged user.
timeout -k 2 30 ip netns exec "$(mt_ns moat)" $MT_AS_NOBODY "$MOAT" attach \
    --netns "/run/netns/$ATT" 2>"$MT_T/nobody.err"
rc=$?
if [ "$rc" = 2 ] && grep -q 'needs root' "$MT_T/nobody.err"; then
	mt_pass "moat attach as nobody: refused clearly"
else
	mt_fail "moat attach as nobody: rc $rc" "$MT_T/nobody.err"
fi
# Not a network namespace.
timeout -k 2 30 ip netns exec "$(mt_ns moat)" "$MOAT" attach --netns \
    /etc/hostname --moatd "unix:$MT_T/adm/admin.sock" 2>"$MT_T/notns.err"
rc=$?
if [ "$rc" = 1 ] && grep -q 'not a network namespace' "$MT_T/notns.err"; then
	mt_pass "moat attach --netns FILE: refused clearly"
else
	mt_fail "moat attach --netns FILE: rc $rc" "$MT_T/notns.err"
fi

# --trust-bundle: without interception there is nothing to trust; with a
# CA (moatd reloaded with one) the file is the bundle moatd built: its CA
# and the system's roots, no key.
timeout -k 2 30 ip netns exec "$(mt_ns moat)" env MOAT_NETNS="$MOAT_NETNS" \
    "$MOAT" attach --netns "/run/netns/$ATT" --moatd \
    "unix:$MT_T/adm/admin.sock" $PRIV --allow origin.test --name tb0 \
    --trust-bundle "$MT_T/tb0.pem" >/dev/null 2>"$MT_T/tb0.err"
rc=$?
if [ "$rc" = 1 ] && grep -q 'does not intercept TLS' "$MT_T/tb0.err" &&
    [ ! -e "$MT_T/tb0.pem" ]; then
	mt_pass "--trust-bundle with no CA: refused, nothing written"
else
	mt_fail "--trust-bundle with no CA: rc $rc" "$MT_T/tb0.err"
fi
"$MOAT" ca init "$MT_T/ca" >/dev/null || mt_error "moat ca init failed"
mt_conf_set "$conf" tls "{\"ca_cert\": \"$MT_T/ca/ca.crt\", \"ca_key\": \"$MT_T/ca/ca.key\"}"
kill -HUP "$MT_MOATD_PID"
mt_wait_log "$MT_T/moatd.err" "reload done" 50 ||
	mt_error "moatd did not reload with a CA"
if mt_bg att_tb moat env MOAT_NETNS="$MOAT_NETNS" "$MOAT" attach \
    --netns "/run/netns/$ATT" --moatd "unix:$MT_T/adm/admin.sock" $PRIV \
    --allow origin.test --name tb1 --trust-bundle "$MT_T/tb1.pem" \
    --trust-store "$MT_T/tb1.p12" --ready-fd 3; then
	ca=$(sed -n '/BEGIN/,/END/p' "$MT_T/ca/ca.crt" | grep -v -- '-----' |
	    tr -d '\n')
	mt_eq "--trust-bundle: moat's CA is in it" 1 \
	    "$(tr -d '\n' < "$MT_T/tb1.pem" | grep -cF -- "$ca")"
	sys=$(grep -c 'BEGIN CERTIFICATE' /etc/ssl/certs/ca-certificates.crt)
	mt_eq "--trust-bundle: ...and the system's roots" $((sys + 1)) \
	    "$(grep -c 'BEGIN CERTIFICATE' "$MT_T/tb1.pem")"
	mt_eq "--trust-bundle: no key in it" 0 \
	    "$(grep -c 'PRIVATE KEY' "$MT_T/tb1.pem")"
	# --trust-store: the same certificates, PKCS12, no password.
	openssl pkcs12 -in "$MT_T/tb1.p12" -nokeys -passin pass: \
	    2>/dev/null | sed -n '/BEGIN CERT/,/END CERT/p' > "$MT_T/tb1.p12.pem"
	if cmp -s "$MT_T/tb1.p12.pem" "$MT_T/tb1.pem"; then
		mt_pass "--trust-store: the bundle's certificates, read with no password"
	else
		mt_fail "--trust-store differs from --trust-bundle" "$MT_T/att_tb.err"
	fi
	if command -v keytool >/dev/null 2>&1; then
		mt_eq "--trust-store: keytool lists a trusted entry per certificate" \
		    $((sys + 1)) "$(keytool -list -keystore "$MT_T/tb1.p12" \
		    -storepass changeit 2>/dev/null | grep -c trustedCertEntry)"
	fi
	kill -TERM "$MT_RPID_att_tb"
	mt_wait_exit "$MT_PID_att_tb"
else
	mt_fail "--trust-bundle: moat attach did not get ready" \
	    "$MT_T/att_tb.err" "$MT_T/moatd.err"
fi

mt_finish
