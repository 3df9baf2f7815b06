#!/bin/bash
# t_drops.sh - dropped packets are evidence: what a sandbox's nftables
# table drops (UDP but DNS, ICMP, other IP protocols, frames of packet
# sockets, packets for an interface not moat's, forwarding) and the TCP
# connections to loopback ports nothing listens on are counted per kind
# in the table, and moatd, reading the drop log moat-netns bound in the
# sandbox's namespace, writes "drop" audit lines (reason dropped-packet,
# destination, protocol) at most 10 a second and one that counts the
# rest; `moat run` and `moat attach` print them.
#
#   moat namespace
#   +-----------------------------------------------------------------+
#   | moat run (private moatd, --audit): held as root, held rootless, |
#   |   veth; the workload: dropgen.py, dnsq.py                       |
#   | moatd (the test's, admin socket) <- moat attach --netns att     |
#   +-----------------------------------------------------------------+
#   att: a0 192.0.2.2/24 ---- veth ---- a1 192.0.2.1/24 (net)
#   net: UDP sink *:853 and *:9999; table inet spy counts ICMP echo
#        requests, SCTP and GRE that arrive; dns.py 203.0.113.53
#
# Checks: each kind's packets are dropped (the sender is told), counted
# exactly (moat-netns counters) and audited with their destination; DNS
# is still answered and draws no drop line; a connection to a closed
# loopback port is still refused at once; 1,000 datagrams in a loop give
# the counter 1,000 and at most 10 lines a second plus counting lines
# that account for every one; the kernel's own chatter on a veth is
# counted, not audited; an attached namespace, whose packets reached net
# before, gets nothing to net once attached; forwarding through an
# attached namespace is dropped and audited.

. "$(dirname "$0")/lib.sh"

mt_init
mt_run_need setpriv nsenter
mt_world
NET=$(mt_ns net)
GEN="/usr/bin/python3 $MT_HELPERS/dropgen.py"
DNSQ="/usr/bin/python3 $MT_HELPERS/dnsq.py"

# --- net: what arrives there --------------------------------------------
touch "$MT_T/sink.log"
mt_bg udpsink net "$MT_PY" -c '
import os, socket, sys, threading
f = open(sys.argv[1], "a")
def serve(fam, addr, port):
    s = socket.socket(fam, socket.SOCK_DGRAM)
    if fam == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    s.bind((addr, port))
    while True:
        d, a = s.recvfrom(2048)
        f.write("%s %d %s\n" % (a[0], port, d.decode(errors="replace")))
        f.flush()
for port in (853, 9999):
    for fam, addr in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        threading.Thread(target=serve, args=(fam, addr, port),
                         daemon=True).start()
os.write(3, b"ready\n")
threading.Event().wait()
' "$MT_T/sink.log" || mt_error "the UDP sink did not start"
ip netns exec "$NET" nft -f - <<'NFT' || mt_error "cannot add net's counters"
table inet spy {
	chain in {
		type filter hook input priority 0; policy accept;
		icmp type echo-request counter
		meta l4proto sctp counter
		meta l4proto gre counter
	}
}
NFT
spy()	# net's counters: echo requests, SCTP, GRE
{
	ip netns exec "$NET" nft list table inet spy |
	    awk '/counter/ { for (i = 1; i < NF; i++) if ($i == "packets") printf "%s ", $(i + 1) }' |
	    sed 's/ $//'
}
sink_has()	# TAG: the sink's datagrams tagged TAG-*, their tags
{
	grep -o " $1-[a-z0-9]*" "$MT_T/sink.log" | sed "s/^ $1-//" | sort -u |
	    tr '\n' ' ' | sed 's/ $//'
}

# counters NETNS_PATH NAME: moat-netns counters of the namespace into
# NAME.ctr ("KIND PACKETS" lines); ctr NAME KIND: one count.
counters()
{
	"$MOAT_NETNS" counters --netns "$1" >"$MT_T/$2.ctr" 2>"$MT_T/$2.ctr.err"
}
ctr()
{
	awk -v k="$2" '$1 == k { print $2 }' "$MT_T/$1.ctr"
}
# drops FILE SANDBOX FILTER...: the number of drop lines of SANDBOX.
drops()
{
	local f=$1 sb=$2
	shift 2
	mt_jl "$f" count event=drop sandbox="$sb" reason=dropped-packet "$@"
}

# The workload of the moat run checks: it says where it is, sends what
# its arguments say (dropgen.py lines into its stdout), and waits (at
# most 20 s) for the test to have read the counters.  Its files are in
# \$MT_T/nb, which a rootless run's workload may write, and a root
# run's too (root in a user namespace where nobody's files are not its).
mt_nobody_dir
W=$MT_T/nb
chmod 1777 "$W"
cat > "$MT_T/work.sh" <<EOF
#!/bin/sh
# work.sh TAG COUNT: the drops of a sandbox (COUNT datagrams to :9999 and
# nothing else when COUNT > 1), then a wait for $W/TAG.go.
tag=\$1
readlink /proc/self/ns/net | tr -dc 0-9 > "$W/\$tag.ns.tmp"
if [ "\$2" = 1 ]; then
	$GEN udp 203.0.113.53 853 1 "\$tag-doq" | sed 's/^/doq./'
	$GEN udp 2001:db8::53 853 1 "\$tag-doq6" | sed 's/^/doq6./'
fi
$GEN udp 203.0.113.10 9999 "\$2" "\$tag-flood" | sed 's/^/flood./'
if [ "\$2" = 1 ]; then
	$GEN tcp 127.0.0.1 7777 | sed 's/^/lo./'
	$DNSQ 127.0.0.1 origin.test | head -n 1 | sed 's/^/dns./'
fi
mv "$W/\$tag.ns.tmp" "$W/\$tag.ns"
i=0
while [ ! -e "$W/\$tag.go" ] && [ \$i -lt 200 ]; do
	sleep 0.1
	i=\$((i + 1))
done
EOF
chmod 755 "$MT_T/work.sh"

# sandbox_found TAG: the work.sh that wrote TAG.ns, into SPID (for
# nsenter and /proc/PID/ns/net): it lives until TAG.go, unlike its
# sleeps, whose pids may be lower once pids wrapped.
sandbox_found()
{
	local ino p
	[ -s "$W/$1.ns" ] || return 1
	ino=$(cat "$W/$1.ns")
	SPID=""
	for p in $(mt_netns_users "$ino"); do
		if tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null |
		    grep -q "work\.sh $1 "; then
			SPID=$p
			break
		fi
	done
	[ -n "$SPID" ]
}

# run_bg AS TAG COUNT ARG...: moat run of work.sh TAG COUNT, in the
# background, its audit in TAG.audit; then waits for its sandbox.
run_bg()
{
	local as=$1 tag=$2 count=$3 priv="" audit=$MT_T/$2.audit
	shift 3
	[ "$as" = nobody ] && priv=$MT_AS_NOBODY && audit=$MT_T/nb/$tag.audit
	# shellcheck disable=SC2086 # priv is words
	timeout -k 2 60 ip netns exec "$(mt_ns moat)" $priv env \
	    MOAT_MOATD="$MOATD" MOAT_NETNS="$MOAT_NETNS" "$MOAT" run --no-tty \
	    --audit "$audit" $MT_RUN_WORLD --allow origin.test "$@" -- \
	    "$MT_T/work.sh" "$tag" "$count" </dev/null >"$MT_T/$tag.out" \
	    2>"$MT_T/$tag.err" &
	RUN_PID=$!
	MT_PIDS="$MT_PIDS $RUN_PID"
	SPID=""
	mt_wait_until 20 "$tag: the sandbox sent its packets" sandbox_found "$tag"
}
run_end()	# TAG: lets work.sh end, waits for moat run
{
	touch "$W/$1.go"
	mt_wait_exit "$RUN_PID" 200
	mt_eq "$1: moat run exits with the workload's status" 0 "$MT_WAIT_RC" \
	    "$MT_T/$1.err"
}
expect_err()	# MESSAGE TAG TEXT: TAG.err (moat's stderr) has TEXT
{
	if grep -qF -- "$3" "$MT_T/$2.err"; then
		mt_pass "$1"
	else
		mt_fail "$1: no '$3' on stderr" "$MT_T/$2.err"
	fi
}

# --- moat run, held sockets, as root ----------------------------------------
spy0=$(spy)
run_bg root held 1
if [ -n "$SPID" ]; then
	# What a process of the namespace with CAP_NET_RAW sends (the
	# workload has none): ICMP, SCTP, GRE.
	nsenter -t "$SPID" -n $GEN ping 203.0.113.10 >"$MT_T/held-ping.out"
	nsenter -t "$SPID" -n $GEN ping 2001:db8::10 >"$MT_T/held-ping6.out"
	nsenter -t "$SPID" -n $GEN raw 132 203.0.113.10 >"$MT_T/held-sctp.out"
	nsenter -t "$SPID" -n $GEN raw 47 203.0.113.10 >"$MT_T/held-gre.out"
	mt_eq "held: the ping is dropped (the sender hears EPERM)" EPERM \
	    "$(sed -n 's/^result=//p' "$MT_T/held-ping.out")" "$MT_T/held-ping.out"
	mt_eq "held: so is SCTP" EPERM \
	    "$(sed -n 's/^result=//p' "$MT_T/held-sctp.out")"
	counters "/proc/$SPID/ns/net" held
	mt_eq "held: moat-netns counters: udp (DoQ, DoQ over IPv6, a datagram)" \
	    3 "$(ctr held udp)" "$MT_T/held.ctr" "$MT_T/held.ctr.err"
	mt_eq "held: ... icmp (ping, ping over IPv6)" 2 "$(ctr held icmp)" \
	    "$MT_T/held.ctr"
	mt_eq "held: ... other-proto (SCTP, GRE)" 2 "$(ctr held other-proto)" \
	    "$MT_T/held.ctr"
	mt_eq "held: ... loopback-port (a connection to :7777)" 1 \
	    "$(ctr held loopback-port)" "$MT_T/held.ctr"
	mt_eq "held: ... and nothing else" "0 0 0 0" \
	    "$(echo "$(ctr held tcp) $(ctr held interface) $(ctr held forward) $(ctr held egress)")" \
	    "$MT_T/held.ctr"
fi
run_end held
A=$MT_T/held.audit
mt_eq "held: the workload's UDP to another resolver is refused" \
    "sent=0 first=EPERM" \
    "sent=$(mt_out held doq.sent) first=$(mt_out held doq.first)" \
    "$MT_T/held.out"
mt_eq "held: a connection to a closed loopback port is still refused" \
    ECONNREFUSED "$(mt_out held lo.result)" "$MT_T/held.out"
ms=$(mt_out held lo.ms)
[ -n "$ms" ] && [ "$ms" -lt 1000 ] && mt_pass "held: ... at once (${ms} ms)" ||
    mt_fail "held: the loopback connection took '$ms' ms" "$MT_T/held.out"
mt_eq "held: DNS still works through moatd" "rcode=NOERROR" \
    "$(mt_out held dns.rcode | sed 's/^/rcode=/')" "$MT_T/held.out"
S=$(mt_jl "$A" get sandbox event=sandbox detail=registered)
mt_log_eq "held: a drop line for DoQ to 203.0.113.53:853, udp" 1 "$A" count \
    event=drop sandbox="$S" proto=udp ip=203.0.113.53 port=853 \
    reason=dropped-packet verdict=deny detail~'^udp: '
mt_log_eq "held: ... over IPv6, to [2001:db8::53]:853" 1 "$A" count \
    event=drop proto=udp ip=2001:db8::53 port=853
mt_log_eq "held: ... the ping, icmp to 203.0.113.10" 1 "$A" count \
    event=drop proto=icmp ip=203.0.113.10 detail~'echo request'
mt_eq "held: ... (a ping line has no port)" "port" \
    "$(mt_jl "$A" missing port event=drop proto=icmp)"
mt_log_eq "held: ... the ping over IPv6, icmpv6" 1 "$A" count event=drop \
    proto=icmpv6 ip=2001:db8::10
mt_log_eq "held: ... SCTP and GRE, other-proto" 2 "$A" count event=drop \
    ip=203.0.113.10 detail~'^other-proto: ' proto~'^(sctp|gre)$'
mt_log_eq "held: ... the closed loopback port, loopback-port" 1 "$A" count \
    event=drop proto=tcp ip=127.0.0.1 port=7777 detail~'^loopback-port: '
mt_eq "held: no drop line for DNS (port 53 is redirected to moatd)" 0 \
    "$(mt_jl "$A" count event=drop port=53)" "$A"
mt_eq "held: every drop has its line (8, none counted in a summary)" 8 \
    "$(drops "$A" "$S")" "$A"
expect_err "held: moat run says so: dropped udp to 203.0.113.53:853" held \
    "dropped udp to 203.0.113.53:853 (dropped-packet)"
expect_err "held: ... dropped tcp to 127.0.0.1:7777, the kind named" held \
    "dropped tcp to 127.0.0.1:7777 (dropped-packet: loopback-port)"
expect_err "held: ... dropped icmpv6 to [2001:db8::10]" held \
    "dropped icmpv6 to [2001:db8::10] (dropped-packet)"
expect_err "held: ... and counts them in the summary" held \
    "moat: 8 refusals (dropped-packet 8)"
mt_eq "held: nothing reached net (sink)" "" "$(sink_has held)" "$MT_T/sink.log"
mt_eq "held: ... nor ICMP, SCTP or GRE (net's counters)" "$spy0" "$(spy)"

# --- 1,000 datagrams in a loop ------------------------------------------------
t0=$(date +%s%N)
run_bg root flood 1000
[ -n "$SPID" ] && counters "/proc/$SPID/ns/net" flood
secs=$(( ($(date +%s%N) - t0 + 999999999) / 1000000000 ))
mt_eq "flood: the counter has every datagram" 1000 "$(ctr flood udp)" \
    "$MT_T/flood.ctr" "$MT_T/flood.ctr.err"
run_end flood
mt_eq "flood: the workload was refused each one" "sent=0 errors=1000" \
    "sent=$(mt_out flood flood.sent) errors=$(mt_out flood flood.errors)" \
    "$MT_T/flood.out"
A=$MT_T/flood.audit
S=$(mt_jl "$A" get sandbox event=sandbox detail=registered)
mt_wait_for 3 mt_log_is 1 "$A" count event=sandbox detail=unregistered
single=$(mt_jl "$A" count event=drop sandbox="$S" port=9999)
nsum=$(mt_jl "$A" count event=drop sandbox="$S" refused?)
sum=$(mt_jl "$A" dump event=drop sandbox="$S" refused? |
    "$MT_PY" -c 'import json, sys
print(sum(json.loads(l)["refused"] for l in sys.stdin if l.strip()))')
all=$(drops "$A" "$S")
# The loop takes less than a second: a line each for at most 10 drops a
# window, the rest counted by one line a window; within the log's burst
# (1,000) moatd hears of every one.
if [ "$single" -ge 10 ] && [ "$((all - nsum))" -le $((10 * (nsum + 1))) ] &&
    [ "$((all - nsum))" -le $((10 * (secs + 1))) ] && [ "$nsum" -ge 1 ]; then
	mt_pass "flood: $((all - nsum)) lines one by one, $nsum counting lines, in ${secs}s"
else
	mt_fail "flood: $((all - nsum)) single lines and $nsum counting lines in ${secs}s" "$A"
fi
mt_eq "flood: every drop is on a line or counted by one" 1000 \
    "$((all - nsum + sum))" "$A"
mt_eq "flood: a counting line says how many and of which kind" "$nsum" \
    "$(mt_jl "$A" count event=drop sandbox="$S" refused? \
    detail~'^[0-9]+ more dropped packets? \(udp [0-9]+\)')" "$A"
expect_err "flood: moat run's summary counts them all" flood \
    "moat: 1000 refusals (dropped-packet 1000)"
n=$(grep -c ' dropped ' "$MT_T/flood.err")
[ "$n" -le $((10 * (secs + 1))) ] &&
    mt_pass "flood: moat run prints at most 10 lines a second ($n)" ||
    mt_fail "flood: moat run printed $n drop lines in ${secs}s" "$MT_T/flood.err"
mt_eq "flood: nothing reached net" "" "$(sink_has flood)"

# --- rootless -----------------------------------------------------------------
if mt_userns_ok; then
	run_bg nobody nobody 1
	run_end nobody
	A=$MT_T/nb/nobody.audit
	mt_log_eq "rootless: the drop log works in the user's own namespaces" 1 \
	    "$A" count event=drop proto=udp ip=203.0.113.53 port=853
	expect_err "rootless: ... and moat run prints it" nobody \
	    "dropped udp to 203.0.113.53:853 (dropped-packet)"
else
	echo "SKIP: rootless: user nobody cannot create user namespaces here"
fi

# --- veth ---------------------------------------------------------------------
run_bg root veth 1 --mode veth
if [ -n "$SPID" ]; then
	# The kernel's own IPv6 chatter on the new link (router
	# solicitation, group reports): counted, no line.
	vctr()
	{
		counters "/proc/$SPID/ns/net" veth && [ "$(ctr veth icmp)" -ge 1 ]
	}
	if mt_wait_for 8 vctr; then
		chatter=$(ctr veth icmp)
	else
		chatter=0
	fi
	mt_eq "veth: the counter has the workload's UDP" 3 "$(ctr veth udp)" \
	    "$MT_T/veth.ctr"
fi
run_end veth
A=$MT_T/veth.audit
mt_log_eq "veth: a drop line for DoQ, from the veth's address" 1 "$A" count \
    event=drop proto=udp ip=203.0.113.53 port=853 client~'^10\.203\.'
if [ "${chatter:-0}" -ge 1 ]; then
	mt_eq "veth: $chatter packets of the link's own chatter counted, no line" \
	    0 "$(mt_jl "$A" count event=drop ip~'^ff02:')" "$A"
else
	echo "SKIP: veth: no IPv6 chatter on the link to check (IPv6 off?)"
fi

# --- moat attach --------------------------------------------------------------
ATT=$MT_TAG-att
ip netns add "$ATT" && MT_NSES="$MT_NSES $ATT" || mt_skip "cannot create a namespace"
ip -n "$ATT" link set lo up &&
ip link add a0 netns "$ATT" type veth peer name a1 netns "$NET" &&
ip -n "$ATT" link set a0 up && ip -n "$NET" link set a1 up &&
ip -n "$ATT" addr add 192.0.2.2/24 dev a0 &&
ip -n "$NET" addr add 192.0.2.1/24 dev a1 &&
ip -n "$ATT" route add default via 192.0.2.1 ||
    mt_error "cannot build the attached namespace's network"
A1MAC=$(ip -n "$NET" -o link show a1 | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')
[ -n "$A1MAC" ] || mt_error "cannot read a1's address"
ESC="$MT_PY $MT_HELPERS/escape.py"
# att TAG: the attempts from att, as its root (each datagram tagged TAG-*).
att()
{
	local t=$1
	ip netns exec "$ATT" $GEN udp 203.0.113.10 9999 1 "$t-udp" >"$MT_T/$t-udp.out"
	ip netns exec "$ATT" $GEN ping 203.0.113.10 >"$MT_T/$t-ping.out"
	ip netns exec "$ATT" $GEN raw 132 203.0.113.10 >"$MT_T/$t-sctp.out"
	timeout -k 2 20 ip netns exec "$ATT" $ESC frame a0 "$A1MAC" 192.0.2.2 \
	    203.0.113.10 9999 "$t-frame" >"$MT_T/$t-frame.out" 2>&1
	ip netns exec "$ATT" $GEN tcp 127.0.0.1 7777 >"$MT_T/$t-lo.out"
}
sink_got()	# TAG N
{
	[ "$(sink_has "$1" | wc -w)" -ge "$2" ]
}
spy_moved()	# net counted an echo request and SCTP since spy0
{
	local a b
	read -r a _ <<<"$spy0"
	read -r b _ <<<"$(spy)"
	[ "$b" -gt "$a" ] && [ "$(spy | cut -d' ' -f2)" -gt \
	    "$(echo "$spy0" | cut -d' ' -f2)" ]
}
spy0=$(spy)
att pre
mt_wait_for 3 sink_got pre 2
mt_eq "before attaching: att's datagram and frame reach net" "frame udp" \
    "$(sink_has pre)" "$MT_T/sink.log"
if mt_wait_for 3 spy_moved; then
	mt_pass "before attaching: so do its ping and SCTP ($spy0 -> $(spy))"
else
	mt_fail "before attaching: net counted nothing ($spy0 -> $(spy))"
fi

mkdir -p "$MT_T/adm"
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_conf_set "$conf" admin "{\"address\": \"unix:$MT_T/adm/admin.sock\"}"
mt_conf_set "$conf" metrics "{\"address\": \"unix:$MT_T/adm/metrics.sock\"}"
mt_moatd_start "$conf"
# dropmetric KIND: moatd's moat_dropped_packets_total for atth and KIND.
dropmetric()
{
	ip netns exec "$(mt_ns moat)" curl -s --max-time 5 --unix-socket \
	    "$MT_T/adm/metrics.sock" http://moatd/metrics 2>/dev/null |
	    sed -n "s/^moat_dropped_packets_total{sandbox=\"atth\",kind=\"$1\"} //p"
}
# metric_ge1 KIND: 0 once that counter is at least 1 (for mt_wait_for).
metric_ge1()
{
	local v
	v=$(dropmetric "$1")
	[ "${v:-0}" -ge 1 ]
}
PRIV="--allow-private 203.0.113.0/24 --allow-private 2001:db8::/32"
# attach NAME MODE: moat attach of att, in the background, ready.
attach()
{
	mt_bg "$1" moat env MOAT_NETNS="$MOAT_NETNS" "$MOAT" attach \
	    --netns "/run/netns/$ATT" --mode "$2" --moatd \
	    "unix:$MT_T/adm/admin.sock" $PRIV --allow origin.test --name "$1" \
	    --ready-fd 3
}
detach()	# NAME
{
	local p=MT_PID_$1 r=MT_RPID_$1
	kill -TERM "${!r}"
	mt_wait_exit "${!p}"
	mt_eq "$1: SIGTERM detaches cleanly" 0 "$MT_WAIT_RC" "$MT_T/$1.err"
}
if attach atth held; then
	spy0=$(spy)
	att atth
	timeout -k 2 20 ip netns exec "$ATT" $ESC bound a0 127.0.0.2 9999 \
	    atth-bound >"$MT_T/atth-bound.out" 2>&1
	counters "/run/netns/$ATT" atth
	for k in udp icmp other-proto egress interface loopback-port; do
		n=$(ctr atth "$k")
		[ "${n:-0}" -ge 1 ] && mt_pass "atth: counter $k ($n)" ||
		    mt_fail "atth: counter $k is '$n'" "$MT_T/atth.ctr" \
			"$MT_T/atth.ctr.err"
	done
	A=$MT_T/audit.log
	mt_log_eq "atth: udp to 203.0.113.10:9999 audited" 1 "$A" count \
	    event=drop sandbox=atth proto=udp ip=203.0.113.10 port=9999 \
	    client~'^192\.0\.2\.2:'
	mt_log_eq "atth: the ping audited" 1 "$A" count event=drop \
	    sandbox=atth proto=icmp ip=203.0.113.10
	mt_log_eq "atth: SCTP audited" 1 "$A" count event=drop sandbox=atth \
	    proto=sctp ip=203.0.113.10 detail~'^other-proto: '
	mt_log_eq "atth: the packet socket's frame audited, egress" 1 "$A" count \
	    event=drop sandbox=atth proto=udp ip=203.0.113.10 detail~'^egress: '
	mt_log_eq "atth: loopback bound to a0 audited, interface" 1 "$A" count \
	    event=drop sandbox=atth ip=127.0.0.2 detail~'^interface: '
	mt_log_eq "atth: the closed loopback port audited" 1 "$A" count \
	    event=drop sandbox=atth proto=tcp port=7777 detail~'^loopback-port: '
	for k in udp icmp other-proto; do
		if mt_wait_for 3 metric_ge1 "$k"; then
			mt_pass "atth: metric moat_dropped_packets_total kind $k ($(dropmetric "$k"))"
		else
			mt_fail "atth: metric moat_dropped_packets_total kind $k is '$(dropmetric "$k")'"
		fi
	done
	mt_eq "atth: the connection to it still refused at once" ECONNREFUSED \
	    "$(sed -n 's/^result=//p' "$MT_T/atth-lo.out")"
	# Something that does reach net, so that the sink is known alive.
	ip netns exec "$NET" "$MT_PY" -c 'import socket
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"atth-alive", ("203.0.113.10", 9999))'
	mt_wait_for 3 sink_got atth 1
	mt_eq "atth: nothing of att's reached net's sink" "alive" \
	    "$(sink_has atth)" "$MT_T/sink.log"
	mt_eq "atth: ... nor its ping or SCTP (net's counters)" "$spy0" "$(spy)"
	mt_wait_for 3 grep -qF "(dropped-packet: egress)" "$MT_T/atth.err"
	expect_err "atth: moat attach prints the drops" atth \
	    "dropped udp to 203.0.113.10:9999 (dropped-packet)"
	expect_err "atth: ... with the kind the protocol does not say" atth \
	    "(dropped-packet: egress)"
	detach atth
else
	mt_fail "atth: moat attach did not get ready"
fi

# --- forwarding through an attached namespace (veth) -------------------------
if attach attv veth; then
	x=$(sed -n 's/.*(veth moat-[a-z0-9]*, 10\.203\.\([0-9]*\)\.0\/30).*/\1/p' \
	    "$MT_T/attv.out" | head -n 1)
	ip netns exec "$ATT" sysctl -qw net.ipv4.ip_forward=1 &&
	ip -n "$NET" route add "10.203.$x.0/30" via 192.0.2.2 ||
	    mt_error "cannot make att a router"
	# Through att to the veth's host side: att routes it, moat's
	# table does not let it pass.
	ip netns exec "$NET" $GEN udp "10.203.$x.1" 9999 1 attv-fwd \
	    >"$MT_T/attv-fwd.out"
	counters "/run/netns/$ATT" attv
	mt_eq "attv: the counter has what att was to forward" 1 \
	    "$(ctr attv forward)" "$MT_T/attv.ctr" "$MT_T/attv.ctr.err"
	mt_log_eq "attv: forwarding audited, with where it was going" 1 \
	    "$MT_T/audit.log" count event=drop sandbox=attv proto=udp \
	    ip="10.203.$x.1" port=9999 client~'^192\.0\.2\.1:' \
	    detail~'^forward: '
	ip -n "$NET" route del "10.203.$x.0/30" via 192.0.2.2 2>/dev/null
	detach attv
else
	mt_fail "attv: moat attach --mode veth did not get ready"
fi
mt_eq "moatd still runs" 0 "$(mt_moatd_alive; echo $?)"

mt_finish
