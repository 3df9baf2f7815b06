#!/bin/bash
# t_boundary.sh - invariant 9: the boundary holds when the workload is
# root inside its namespaces.  As uid 0 in the sandbox (rootless held,
# root held, root veth), the workload tries to change the sandbox's
# network and to get around moatd; every attempt fails, and the world
# sees nothing but what moatd's policy let through.
#
#   moat namespace: moat run + private moatd
#     sandbox: the workload runs as uid 0 of a NESTED user namespace that
#     owns neither the network, the mount nor the PID namespace
#   net: origin.py 203.0.113.10 (:80 allowed, :8080 not), UDP sink :9999
#
# Attempts: nft flush/delete, route add/delete, link down/add, raw and
# packet sockets, sysctl, umount/overwrite of resolv.conf, mount, setns
# into the moat namespace, a new network namespace of its own, UDP, ICMP,
# direct TCP to an origin's address on a port the policy closes, reading
# the init's secrets.  Afterwards, from outside: moat's table is intact
# and every connection the origin saw came from moatd.

. "$(dirname "$0")/lib.sh"

mt_init
mt_run_need nsenter
mt_world
mt_nobody_dir
touch "$MT_T/udp.log"
mt_bg udpsink net "$MT_PY" -c '
import os, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("203.0.113.10", 9999))
os.write(3, b"ready\n")
with open(sys.argv[1], "a") as f:
    while True:
        d, a = s.recvfrom(2048)
        f.write("%s %r\n" % (a[0], d)); f.flush()
' "$MT_T/udp.log" || mt_error "the UDP sink did not start"

MOATNS=/run/netns/$(mt_ns moat)
cat > "$MT_T/attack.sh" <<EOF
#!/bin/sh
# Each attempt: NAME=exit status and the first line of its error.
P="$MT_PROBE"
t() {
	n=\$1; shift
	e=\$("\$@" 2>&1 >/dev/null)
	rc=\$?
	echo "\$n=\$rc \$(printf '%s' "\$e" | tr '\\n' ' ' | cut -c1-200)"
}
# sys CALL ARGS: the system call itself (util-linux's messages guess at
# the cause); exits with its strerror.  bind SRC DST, tmpfs DST,
# umount PATH, setns PATH.
sys() {
	/usr/bin/python3 -c 'import ctypes, os, sys
l = ctypes.CDLL(None, use_errno=True)
c, a = sys.argv[1], [x.encode() for x in sys.argv[2:]]
if c == "bind":
    r = l.mount(a[0], a[1], None, 4096, None)
elif c == "tmpfs":
    r = l.mount(b"none", a[0], b"tmpfs", 0, None)
elif c == "umount":
    r = l.umount2(a[0], 2)
else:
    r = l.setns(os.open(a[0], os.O_RDONLY), 0x40000000)
sys.exit(os.strerror(ctypes.get_errno()) if r else 0)' "\$@"
}
$MT_PROBE status
echo "netns=\$(readlink /proc/self/ns/net | tr -dc 0-9)"
t nft_flush nft flush ruleset
t nft_delete nft delete table inet moat
t nft_add nft add table inet evil
t route_add ip route add 203.0.113.0/24 dev lo
t route_del ip route del local default table local
t route_del6 ip -6 route del local default table local
t link_down ip link set lo down
t link_add ip link add evil0 type veth peer name evil1
t addr_add ip addr add 203.0.113.99/32 dev lo
t sysctl sysctl -w net.ipv4.ip_forward=1
t umount_resolv sys umount /etc/resolv.conf
t write_resolv sh -c 'echo nameserver 203.0.113.53 > /etc/resolv.conf'
t mount_tmpfs sys tmpfs /mnt
t mount_bind sys bind /etc/hostname /etc/resolv.conf
t setns_moat sys setns $MOATNS
t read_init cat /proc/1/environ
\$P --tag raw rawsock
\$P --tag packet packetsock
\$P --tag udp udp 203.0.113.10 9999
\$P --tag ping ping 203.0.113.10
\$P --tag direct8080 raw 203.0.113.10 8080 origin.test
\$P --tag directip raw 203.0.113.10 80 203.0.113.10
\$P --tag allowed raw 203.0.113.10 80 origin.test
# A network namespace of its own: allowed, and empty.
echo "ownns=\$(unshare -n $MT_PROBE connect 203.0.113.10 80 2>&1 | tr '\n' ' ')"
echo "ownns_udp=\$(unshare -n $MT_PROBE udp 203.0.113.10 9999 2>&1 | tr '\n' ' ')"
echo "resolv=\$(grep -c '^nameserver 127.0.0.1\$\|^nameserver 10.203' /etc/resolv.conf)"
echo "done=1"
# Stay until the watcher outside has read moat's tables (bounded): the
# namespace goes with the last process in it.
i=0
while [ ! -e "$MT_T/seen" ] && [ \$i -lt 100 ]; do sleep 0.1; i=\$((i + 1)); done
EOF
chmod 755 "$MT_T/attack.sh"

# attack_done: sets p to attack.sh's pid; 0 once it has written done=1.
attack_done()
{
	p=$(pgrep -f "^/bin/sh $MT_T/attack.sh" | head -n1)
	[ -n "$p" ] && grep -q '^done=1' "$MT_T/$n.out" 2>/dev/null
}

cases="root:held root:veth"
if mt_userns_ok; then
	cases="nobody:held $cases"
else
	echo "SKIP: rootless runs (nobody may not create user namespaces here)"
fi

for c in $cases; do
	who=${c%%:*}
	mode=${c#*:}
	n=$who-$mode
	before=$(mt_ns_pids moat)
	mt_mark
	mark_udp=$(mt_lines "$MT_T/udp.log")
	icmp0=$(mt_in net awk '/^Icmp:/ && $2 ~ /^[0-9]+$/ { print $2 }' /proc/net/snmp)
	rm -f "$MT_T/$n.table" "$MT_T/$n.tables" "$MT_T/seen"
	# While the attack runs, moat's table is read from outside.
	(
		mt_wait_for 10 attack_done
		[ -n "$p" ] && nsenter --net=/proc/"$p"/ns/net nft list table \
		    inet moat >"$MT_T/$n.table" 2>&1
		[ -n "$p" ] && nsenter --net=/proc/"$p"/ns/net \
		    $MT_NFT_TABLES >"$MT_T/$n.tables" 2>&1
		touch "$MT_T/seen"
	) &
	watcher=$!
	mt_moat_run "$who" "$n" --mode "$mode" $MT_RUN_WORLD \
	    --allow origin.test -- "$MT_T/attack.sh"
	wait "$watcher"
	out=$MT_T/$n.out
	mt_eq "$n: the attack ran to its end" 1 "$(mt_out "$n" done)" \
	    "$out" "$MT_T/$n.err"
	mt_eq "$n: as uid 0" 0 "$(mt_out "$n" uid)"
	mt_eq "$n: with every capability of its own namespace" \
	    000001ffffffffff "$(mt_out "$n" capeff)"
	for k in nft_flush nft_delete nft_add route_add route_del route_del6 \
	    link_down link_add addr_add sysctl umount_resolv write_resolv \
	    mount_tmpfs mount_bind setns_moat read_init; do
		v=$(mt_out "$n" "$k")
		# Refused for want of privilege: not "not found", not 0.
		if echo "$v" | grep -Eqi '^[1-9][0-9]* .*(not permitted|denied|read-only|superuser|must be root)'; then
			mt_pass "$n: $k is refused (${v:0:70})"
		else
			mt_fail "$n: $k: '$v'" "$out"
		fi
	done
	mt_in_set "$n: raw socket" "$(mt_out "$n" raw_result)" "EPERM" "$out"
	mt_in_set "$n: packet socket" "$(mt_out "$n" packet_result)" "EPERM" "$out"
	mt_in_set "$n: UDP" "$(mt_out "$n" udp_result)" "EPERM" "$out"
	mt_in_set "$n: ICMP" "$(mt_out "$n" ping_result)" "EPERM timeout" "$out"
	mt_in_set "$n: TCP to an origin's address on a closed port: denied" \
	    "$(mt_out "$n" direct8080_status)" "403 none" "$out"
	mt_in_set "$n: TCP naming no host (bare address): denied" \
	    "$(mt_out "$n" directip_status)" "403 none" "$out"
	mt_eq "$n: the allowed origin, through moatd" 200 \
	    "$(mt_out "$n" allowed_status)" "$out"
	case $(mt_out "$n" ownns) in
	*result=ENETUNREACH*) mt_pass "$n: a network namespace of its own has no way out" ;;
	*) mt_fail "$n: own network namespace: '$(mt_out "$n" ownns)'" "$out" ;;
	esac
	case $(mt_out "$n" ownns_udp) in
	*result=ENETUNREACH*) mt_pass "$n: ... UDP neither" ;;
	*) mt_fail "$n: own network namespace, UDP: '$(mt_out "$n" ownns_udp)'" "$out" ;;
	esac
	mt_eq "$n: resolv.conf unchanged" 1 "$(mt_out "$n" resolv)" "$out"
	if grep -q 'chain filter_out' "$MT_T/$n.table" &&
	    grep -q 'policy drop' "$MT_T/$n.table"; then
		mt_pass "$n: from outside, moat's table is intact after the attack"
	else
		mt_fail "$n: moat's table after the attack" "$MT_T/$n.table"
	fi
	mt_eq "$n: ... and so is its egress table (every interface)" 1 \
	    "$(grep -cx 'table netdev moat' "$MT_T/$n.tables")" "$MT_T/$n.tables"
	# The world: only moatd's connections, nothing on :8080, no UDP/ICMP.
	peers=$(mt_new origin | grep '"event": "accept"' |
	    sed 's/.*"peer": "\([^"]*\)".*/\1/' | sed 's/:[0-9]*$//' | sort -u |
	    tr '\n' ' ')
	case $peers in
	"203.0.113.1 "|"[2001:db8::1] "|"203.0.113.1 [2001:db8::1] "|"[2001:db8::1] 203.0.113.1 ")
		mt_pass "$n: every connection the origin saw came from moatd ($peers)" ;;
	*) mt_fail "$n: the origin saw peers '$peers'" "$MT_T/origin.log" ;;
	esac
	if mt_new origin | grep -q '"local": "203\.0\.113\.10:8080"'; then
		mt_fail "$n: the closed port 8080 was reached" "$MT_T/origin.log"
	else
		mt_pass "$n: port 8080 saw nothing"
	fi
	mt_eq "$n: the UDP sink got nothing" "$mark_udp" "$(mt_lines "$MT_T/udp.log")"
	icmp1=$(mt_in net awk '/^Icmp:/ && $2 ~ /^[0-9]+$/ { print $2 }' /proc/net/snmp)
	mt_eq "$n: no ICMP reached the world" "$icmp0" "$icmp1"
	mt_no_leftovers "$n: after the attack" "$before" "$(mt_out "$n" netns)"
done

mt_finish
