#!/bin/bash
# t_escape.sh - ways around moat's inet table out of an attached namespace
# (held and veth), tried as a container's root with Docker's default
# capabilities (CAP_NET_RAW, no CAP_NET_ADMIN) and as an unprivileged
# user would:
#
#   frame     a hand-built Ethernet/IPv4/UDP frame through an AF_PACKET
#             socket on att's own interface (the inet hooks never see it),
#             and on an interface that appears after attaching
#   lo4/lo6   UDP to 127.0.0.2 and ::1 from a socket bound to att's own
#             interface (SO_BINDTODEVICE), and chosen per message
#             (IP_PKTINFO); the next hop has route_localnet=1
#   dns       a DNS query bound to att's own interface, after moat's
#             redirect
#   raw       hand-built IPv4/UDP through a raw socket bound to att's own
#             interface, to the world and to 127.0.0.2
#   dnat      UDP and TCP through a DNAT rule att already had (not
#             moat's), bound to att's own interface
#
#   att                                net
#   a0 192.0.2.2/24  ---- veth ----    a1 192.0.2.1/24, route_localnet=1
#   (a2, added later) ---- veth ----   a3
#   table ip foreign: 198.51.100.9 -> 203.0.113.10 (DNAT, output)
#                                      UDP sink *:9999 (also 127.0.0.2)
#                                      origin.py 203.0.113.10 :8080
#                                      counters on a1's ingress
#
# Before attaching, each attempt gets through (the test can fail); once
# attached, nothing of any attempt reaches net, and a1 sees no frame for
# a loopback address.

. "$(dirname "$0")/lib.sh"

mt_init
mt_run_need setpriv
mt_world
ATT=$MT_TAG-att
NET=$(mt_ns net)
ip netns add "$ATT" && MT_NSES="$MT_NSES $ATT" || mt_skip "cannot create a namespace"
ip -n "$ATT" link set lo up &&
ip link add a0 netns "$ATT" type veth peer name a1 netns "$NET" &&
ip -n "$ATT" link set a0 up && ip -n "$NET" link set a1 up &&
ip -n "$ATT" addr add 192.0.2.2/24 dev a0 &&
ip -n "$NET" addr add 192.0.2.1/24 dev a1 &&
ip -n "$ATT" route add default via 192.0.2.1 ||
    mt_error "cannot build the attached namespace's network"
# kube-proxy sets route_localnet; rp_filter would hide what arrives.
for k in all.route_localnet a1.route_localnet all.rp_filter a1.rp_filter; do
	v=1
	[ "${k#*.}" = rp_filter ] && v=0
	ip netns exec "$NET" sysctl -qw "net.ipv4.conf.$k=$v" ||
	    mt_error "cannot set $k in net"
done
# A DNAT rule att had before moat (a container runtime's, say).
ip netns exec "$ATT" nft -f - <<'NFT' || mt_error "cannot add att's own DNAT rule"
table ip foreign {
	chain out {
		type nat hook output priority -150; policy accept;
		ip daddr 198.51.100.9 udp dport 9999 dnat to 203.0.113.10:9999
		ip daddr 198.51.100.9 tcp dport 80 dnat to 203.0.113.10:8080
	}
}
NFT
# What arrives at net from att, whatever a socket was told.
ip netns exec "$NET" nft -f - <<'NFT' || mt_error "cannot add net's counters"
table netdev spy {
	chain in {
		type filter hook ingress device "a1" priority 0; policy accept;
		ip daddr 127.0.0.0/8 counter
		ip6 daddr ::1 counter
		udp dport 53 counter
	}
}
NFT
touch "$MT_T/sink.log"
mt_bg udpsink net "$MT_PY" -c '
import os, socket, sys, threading
f = open(sys.argv[1], "a")
def serve(fam, addr):
    s = socket.socket(fam, socket.SOCK_DGRAM)
    if fam == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    s.bind((addr, 9999))
    while True:
        d, a = s.recvfrom(2048)
        f.write("%s %s\n" % (a[0], d.decode(errors="replace"))); f.flush()
for fam, addr in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
    threading.Thread(target=serve, args=(fam, addr), daemon=True).start()
os.write(3, b"ready\n")
threading.Event().wait()
' "$MT_T/sink.log" || mt_error "the UDP sink did not start"

mkdir -p "$MT_T/adm"
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_conf_set "$conf" admin "{\"address\": \"unix:$MT_T/adm/admin.sock\"}"
mt_moatd_start "$conf"
PRIV="--allow-private 203.0.113.0/24 --allow-private 2001:db8::/32"
ESC="$MT_PY $MT_HELPERS/escape.py"
# Docker's default capability set: CAP_NET_RAW, no CAP_NET_ADMIN.
DOCKER_CAPS=-all,+chown,+dac_override,+fowner,+fsetid,+kill,+setgid,+setuid
DOCKER_CAPS=$DOCKER_CAPS,+setpcap,+net_bind_service,+net_raw,+sys_chroot
DOCKER_CAPS=$DOCKER_CAPS,+mknod,+audit_write,+setfcap

# as_root/as_user NAME ARGS...: escape.py in att, as a container's root or
# as nobody; its result into NAME.out.
as_root()
{
	local n=$1
	shift
	timeout -k 2 20 ip netns exec "$ATT" setpriv --bounding-set \
	    "$DOCKER_CAPS" --inh-caps -all -- $ESC "$@" >"$MT_T/$n.out" \
	    2>"$MT_T/$n.err"
}
as_user()
{
	local n=$1
	shift
	timeout -k 2 20 ip netns exec "$ATT" setpriv --reuid 65534 \
	    --regid 65534 --clear-groups --inh-caps -all -- $ESC "$@" \
	    >"$MT_T/$n.out" 2>"$MT_T/$n.err"
}
spy()	# the counters on a1's ingress, one line
{
	ip netns exec "$NET" nft list table netdev spy |
	    awk '/counter/ { for (i = 1; i < NF; i++) if ($i == "packets") printf "%s ", $(i + 1) }'
}
mac_of()	# IFNAME in net
{
	cat "/sys/class/net/$1/address" 2>/dev/null ||
	    ip -n "$NET" -o link show "$1" | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p'
}
A1MAC=$(ip -n "$NET" -o link show a1 | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')
[ -n "$A1MAC" ] || mt_error "cannot read a1's address"

# attack TAG: every attempt once, each datagram tagged TAG-ATTEMPT.
attack()
{
	local t=$1
	as_root "$t-frame" frame a0 "$A1MAC" 192.0.2.2 203.0.113.10 9999 "$t-frame"
	as_root "$t-raw" rawip a0 192.0.2.2 203.0.113.10 9999 "$t-raw"
	as_root "$t-rawlo" rawip a0 192.0.2.2 127.0.0.2 9999 "$t-rawlo"
	as_user "$t-lo4" bound a0 127.0.0.2 9999 "$t-lo4"
	as_user "$t-lo4pi" pktinfo a0 127.0.0.2 9999 "$t-lo4pi"
	as_user "$t-lo6" bound a0 ::1 9999 "$t-lo6"
	as_user "$t-dns" bound a0 203.0.113.53 53 "$t-dns"
	as_user "$t-dnat" bound a0 198.51.100.9 9999 "$t-dnat"
	as_user "$t-dnattcp" tcpbound a0 198.51.100.9 80 "GET /$t-dnattcp HTTP/1.0"
}
# sink_has TAG: the datagrams tagged TAG- that reached the sink, by name.
sink_has()
{
	grep -o "$1-[a-z0-9]*" "$MT_T/sink.log" | sed "s/^$1-//" | sort -u |
	    tr '\n' ' ' | sed 's/ $//'
}
sink_got()	# TAG N: N kinds of TAG reached the sink
{
	[ "$(sink_has "$1" | wc -w)" -ge "$2" ]
}
wait_sink()	# TAG N: until N kinds of TAG reached the sink (bounded)
{
	mt_wait_for 3 sink_got "$@"
}

# --- before: every attempt that can get out of a bare namespace does ---
mt_mark
spy0=$(spy)
attack pre
wait_sink pre 5
mt_eq "before attaching: the frame, raw, loopback and DNAT datagrams get out" \
    "dnat frame lo4 raw rawlo" "$(sink_has pre | tr ' ' '\n' | grep -v lo4pi | sort | tr '\n' ' ' | sed 's/ $//')" \
    "$MT_T/sink.log"
[ "$(spy)" != "$spy0" ] && mt_pass "before attaching: a1 sees loopback destinations ($(spy))" ||
    mt_fail "before attaching: a1 saw nothing ($(spy))"
mt_new origin | grep -q 'pre-dnattcp' &&
    mt_pass "before attaching: TCP through att's DNAT reaches :8080" ||
    mt_fail "before attaching: TCP through att's DNAT did not reach :8080" \
	"$MT_T/pre-dnattcp.out" "$MT_T/origin.log"

for mode in held veth; do
	n=esc-$mode
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
	mt_pass "$n: attached"
	mt_mark
	spy0=$(spy)
	attack "$n"
	# An interface that appears after moat attached.
	ip link add a2 netns "$ATT" type veth peer name a3 netns "$NET" &&
	    ip -n "$ATT" link set a2 up && ip -n "$NET" link set a3 up ||
	    mt_error "cannot add a2"
	a3mac=$(ip -n "$NET" -o link show a3 | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')
	as_root "$n-late" frame a2 "$a3mac" 192.0.2.2 203.0.113.10 9999 "$n-late"
	# Something that does get out, so that the sink is known to work
	# now: an allowed connection through moatd.
	timeout -k 2 20 ip netns exec "$ATT" $MT_PROBE raw 203.0.113.10 80 \
	    origin.test >"$MT_T/$n-ok.out" 2>&1
	mt_eq "$n: an allowed connection still works" 200 \
	    "$(mt_out "$n-ok" status)" "$MT_T/$n-ok.out"
	# A datagram sent from net itself, so the sink is known to be alive.
	ip netns exec "$NET" "$MT_PY" -c 'import socket, sys
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(sys.argv[1].encode(), ("203.0.113.10", 9999))' "$n-alive"
	wait_sink "$n" 1
	mt_eq "$n: nothing of any attempt reached net's sink" "alive" \
	    "$(sink_has "$n")" "$MT_T/sink.log"
	mt_eq "$n: a1 saw no frame for a loopback address or port 53" \
	    "$spy0" "$(spy)"
	if mt_new origin | grep -q "$n-dnattcp"; then
		mt_fail "$n: TCP through att's DNAT reached :8080" "$MT_T/origin.log"
	else
		mt_pass "$n: TCP through att's DNAT reached nothing"
	fi
	# The egress chain drops it before the driver: the socket hears so.
	mt_eq "$n: the frame was dropped on its way to a0 (ENOBUFS)" \
	    ENOBUFS "$(sed -n 's/^result=//p' "$MT_T/$n-frame.out")" \
	    "$MT_T/$n-frame.err"
	mt_eq "$n: ... and so was the one on a2, added after attaching" \
	    ENOBUFS "$(sed -n 's/^result=//p' "$MT_T/$n-late.out")" \
	    "$MT_T/$n-late.err"
	ip -n "$ATT" link del a2 2>/dev/null
	kill -TERM "$arpid"
	mt_wait_exit "$apid"
	mt_eq "$n: SIGTERM detaches cleanly" 0 "$MT_WAIT_RC" "$MT_T/att_$mode.err"
	mt_eq "$n: no moat table left in att" "" \
	    "$(ip netns exec "$ATT" $MT_NFT_TABLES | grep moat)"
done

mt_finish
