#!/bin/bash
# t_run_held.sh - `moat run` with a private moatd, held-sockets mode, as an
# unprivileged user (nobody) and as root: what the workload can reach, and
# that nothing is left once it exits.  (t_run_veth.sh runs this same script
# in veth mode.)
#
#   moat namespace: moat run and its private moatd run here
#   +--------------------------------------------------------------+
#   | sandbox (new user, mount, PID, network namespaces)           |
#   |  lo only, `local default` routes, table inet moat:           |
#   |  TCP -> 127.0.0.1:15001 (transparent), 53 -> :53 (dns)        |
#   |  held sockets :3128 :1080 :53 :15001 --- moatd (outside) ----+--+
#   |  (veth mode: eth0 10.203.X.2 -> host side 10.203.X.1 here)   |  |
#   +--------------------------------------------------------------+  | n0
#                                                                     v
#   net: origin.py 203.0.113.10 (:80 :443 :8080), .12 (other.test)
#        dns.py 203.0.113.53 (the resolver moatd uses)
#        rogue dns.py 198.51.100.53 (reachable from the moat namespace:
#          a query that left the sandbox would get ITS answer)
#        UDP sink 203.0.113.10:9999, git daemon :9418, fake sshd :2222
#
# Checks (per user): the proxy variables work for curl and python; a client
# ignoring them (python raw socket to the origin's address) is
# transparently proxied and judged (allowed name through, other name and
# bare address denied, origin untouched); a denied name gets NXDOMAIN and
# the world's DNS server never sees it; a query to 198.51.100.53 is
# answered by moatd and the rogue server sees nothing; UDP and ICMP reach
# nothing; git over the transparent path and ssh through ProxyCommand
# work; the audit log names the sandbox; no_new_privs is set; nothing is
# left afterwards.

. "$(dirname "$0")/lib.sh"

MT_RUN_MODE=${MT_RUN_MODE:-held}
mt_init
mt_run_need
mt_world

# --- extra servers: rogue resolver, UDP sink, git, ssh ----------------
ip -n "$(mt_ns net)" addr add 198.51.100.53/32 dev eth0 &&
ip -n "$(mt_ns moat)" route add 198.51.100.53/32 via 203.0.113.53 ||
    mt_error "cannot add the rogue resolver's address"
cat > "$MT_T/rogue.json" <<'EOF'
{ "origin.test": [{"type": "A", "data": "192.0.2.66", "ttl": 1}],
  "other.test": [{"type": "A", "data": "192.0.2.66", "ttl": 1}] }
EOF
touch "$MT_T/rogue.log" "$MT_T/udp.log" "$MT_T/ssh.log"
mt_bg rogue net "$MT_PY" "$MT_HELPERS/dns.py" --zone "$MT_T/rogue.json" \
    --listen 198.51.100.53 --log "$MT_T/rogue.log" --lifetime "$MT_LIFETIME" \
    --ready-fd 3 || mt_error "the rogue resolver did not start"
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
mt_bg sshd net "$MT_PY" -c '
import os, socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("203.0.113.10", 2222)); s.listen(8)
os.write(3, b"ready\n")
while True:
    c, a = s.accept()
    c.settimeout(5)
    c.sendall(b"SSH-2.0-moat-fake\r\n")
    try:
        line = c.recv(256).split(b"\r\n")[0]
    except OSError:
        line = b"(nothing)"
    with open(sys.argv[1], "a") as f:
        f.write("%s %s\n" % (a[0], line.decode("latin-1")))
    c.close()
' "$MT_T/ssh.log" || mt_error "the fake ssh server did not start"
have_git=""
if command -v git >/dev/null 2>&1 &&
    git daemon --help >/dev/null 2>&1; then
	mkdir -p "$MT_T/git" &&
	git init -q --bare "$MT_T/git/repo.git" &&
	git -C "$MT_T" init -q work && git -C "$MT_T/work" -c user.name=t \
	    -c user.email=t@t commit -q --allow-empty -m moat-run-test &&
	git -C "$MT_T/work" push -q "$MT_T/git/repo.git" HEAD:refs/heads/main &&
	git --git-dir="$MT_T/git/repo.git" symbolic-ref HEAD refs/heads/main &&
	mt_bg gitd net "$MT_PY" -c '
import os, socket, subprocess, sys, time
p = subprocess.Popen(["git", "daemon", "--reuseaddr", "--export-all",
    "--base-path=" + sys.argv[1], "--listen=203.0.113.10", "--port=9418",
    sys.argv[1]])
for _ in range(100):
    try:
        socket.create_connection(("203.0.113.10", 9418), 0.2).close()
        break
    except OSError:
        time.sleep(0.1)
os.write(3, b"ready\n")
p.wait()
' "$MT_T/git" && have_git=1
fi
[ -n "$have_git" ] || echo "SKIP: git checks (git or git daemon missing)"

# Controls: from the moat namespace itself each of these servers IS
# reachable, so "it saw nothing" below means the sandbox sent nothing.
case $(mt_in moat "$MT_PY" "$MT_HELPERS/dnsq.py" 198.51.100.53 origin.test) in
*"A 192.0.2.66"*) mt_pass "control: the rogue resolver answers the moat namespace" ;;
*) mt_error "control: the rogue resolver is not reachable" ;;
esac
icmp0=$(mt_in net awk '/^Icmp:/ && $2 ~ /^[0-9]+$/ { print $2 }' /proc/net/snmp)
mt_in moat "$MT_PY" "$MT_HELPERS/probe.py" udp 203.0.113.10 9999 >/dev/null
mt_in moat "$MT_PY" "$MT_HELPERS/probe.py" ping 203.0.113.10 >/dev/null
mt_wait_log "$MT_T/udp.log" moat-probe || mt_error "control: the UDP sink got nothing"
icmp1=$(mt_in net awk '/^Icmp:/ && $2 ~ /^[0-9]+$/ { print $2 }' /proc/net/snmp)
[ "$icmp1" -gt "$icmp0" ] || mt_error "control: ICMP from the moat namespace was not counted"
mt_pass "control: UDP and ICMP from the moat namespace reach the world"

# --- the workload: every probe, KEY=VALUE lines ---------------------
cat > "$MT_T/work.sh" <<EOF
#!/bin/sh
P="$MT_PROBE"
\$P status
\$P env
echo "resolv=\$(grep '^nameserver' /etc/resolv.conf)"
echo "netns=\$(readlink /proc/self/ns/net | tr -dc 0-9)"
curl -sS -m 8 -o /dev/null -w 'curl=%{http_code}\n' http://origin.test/
curl -sS -m 8 -k -o /dev/null -w 'curls=%{http_code}\n' https://origin.test/
\$P --tag py proxyget http://origin.test/
\$P --tag tp raw 203.0.113.10 80 origin.test
\$P --tag tp6 raw 2001:db8::10 80 origin.test
\$P --tag tpother raw 203.0.113.12 80 other.test
\$P --tag tpip raw 203.0.113.12 80 203.0.113.12
\$P --tag nx resolve other.test
\$P --tag ok resolve origin.test
echo "rogue=\$(/usr/bin/python3 $MT_HELPERS/dnsq.py 198.51.100.53 origin.test | tr '\n' ' ')"
echo "roguetcp=\$(/usr/bin/python3 $MT_HELPERS/dnsq.py --tcp 198.51.100.53 origin.test | tr '\n' ' ')"
\$P --tag udp udp 203.0.113.10 9999
\$P --tag udp6 udp 2001:db8::10 9999
\$P --tag ping ping 203.0.113.10
if [ -n "$have_git" ]; then
	rm -rf "\$1/clone"
	git clone -q git://origin.test/repo.git "\$1/clone" 2>&1 | head -3
	git -C "\$1/clone" log --format='git=%s' -1 2>&1
fi
ph=\${http_proxy#http://}
ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=no \
    -o UserKnownHostsFile=/dev/null -o ConnectTimeout=5 \
    -o ProxyCommand="socat - PROXY:\${ph%:*}:%h:%p,proxyport=\${ph##*:}" \
    -p 2222 probe@origin.test true >/dev/null 2>&1
echo "ssh=done"
exit 42
EOF
chmod 755 "$MT_T/work.sh"

mt_nobody_dir
users="root"
if [ "$MT_RUN_MODE" = held ]; then
	if mt_userns_ok; then
		users="nobody root"
	else
		echo "SKIP: rootless runs (nobody may not create user namespaces here)"
	fi
fi

for who in $users; do
	n=$who-$MT_RUN_MODE
	dir=$MT_T
	[ "$who" = nobody ] && dir=$MT_T/nb
	before=$(mt_ns_pids moat)
	mt_mark
	mark_rogue=$(mt_lines "$MT_T/rogue.log")
	mark_udp=$(mt_lines "$MT_T/udp.log")
	mark_ssh=$(mt_lines "$MT_T/ssh.log")
	icmp0=$(mt_in net awk '/^Icmp:/ && $2 ~ /^[0-9]+$/ { print $2 }' /proc/net/snmp)
	mt_moat_run "$who" "$n" --mode "$MT_RUN_MODE" $MT_RUN_WORLD \
	    --allow origin.test --allow origin.test:9418 \
	    --allow origin.test:2222 --name "sbx-$n" \
	    --audit "$dir/audit-$n.log" -- "$MT_T/work.sh" "$dir"
	out=$MT_T/$n.out
	mt_eq "$n: exit status is the workload's" 42 "$MT_RUN_RC" "$MT_T/$n.err"
	mt_eq "$n: uid 0 inside" 0 "$(mt_out "$n" uid)"
	mt_eq "$n: no_new_privs" 1 "$(mt_out "$n" nonewprivs)"
	if [ "$MT_RUN_MODE" = veth ]; then
		h=$(mt_out "$n" resolv | sed 's/^nameserver //')
		case $h in
		10.203.*.1) mt_pass "$n: resolv.conf names the veth gateway ($h)" ;;
		*) mt_fail "$n: resolv.conf: '$h'" "$out" ;;
		esac
	else
		h=127.0.0.1
		mt_eq "$n: resolv.conf names moatd's DNS" "nameserver 127.0.0.1" \
		    "$(mt_out "$n" resolv)"
	fi
	mt_eq "$n: HTTP_PROXY" "http://$h:3128" "$(mt_out "$n" HTTP_PROXY)"
	mt_eq "$n: https_proxy" "http://$h:3128" "$(mt_out "$n" https_proxy)"
	mt_eq "$n: ALL_PROXY" "http://$h:3128" "$(mt_out "$n" ALL_PROXY)"
	mt_eq "$n: all_proxy" "http://$h:3128" "$(mt_out "$n" all_proxy)"
	mt_eq "$n: no_proxy" "localhost,127.0.0.1,::1" "$(mt_out "$n" no_proxy)"
	mt_eq "$n: curl through the proxy variables" 200 "$(mt_out "$n" curl)" "$out"
	mt_eq "$n: curl https through CONNECT" 200 "$(mt_out "$n" curls)" "$out"
	mt_eq "$n: python urllib through the proxy variables" origin \
	    "$(mt_out "$n" py_origin)" "$out"
	mt_eq "$n: raw socket to the origin's address, transparently proxied" \
	    "200 origin" "$(mt_out "$n" tp_status) $(mt_out "$n" tp_origin)" "$out"
	mt_eq "$n: ... over IPv6 too" "200 origin" \
	    "$(mt_out "$n" tp6_status) $(mt_out "$n" tp6_origin)" "$out"
	mt_in_set "$n: raw socket naming a denied host is refused" \
	    "$(mt_out "$n" tpother_status)" "403 none" "$out"
	mt_in_set "$n: raw socket to a bare address is refused" \
	    "$(mt_out "$n" tpip_status)" "403 none" "$out"
	if mt_new origin | grep -q '203\.0\.113\.12'; then
		mt_fail "$n: the denied origin 203.0.113.12 was reached" "$MT_T/origin.log"
	else
		mt_pass "$n: the denied origin 203.0.113.12 saw no connection"
	fi
	mt_eq "$n: a denied name is NXDOMAIN" gaierror "$(mt_out "$n" nx_result)" "$out"
	if mt_new dns | grep -q other.test; then
		mt_fail "$n: the world's DNS server was asked for other.test" "$MT_T/dns.log"
	else
		mt_pass "$n: the world's DNS server never saw other.test"
	fi
	mt_eq "$n: an allowed name resolves (moatd's answer)" 203.0.113.10 \
	    "$(mt_out "$n" ok_addrs | tr ',' '\n' | grep -v : | head -n1)" "$out"
	case $(mt_out "$n" rogue) in
	*"A 203.0.113.10"*) mt_pass "$n: a query to 198.51.100.53 is answered by moatd" ;;
	*) mt_fail "$n: a query to 198.51.100.53: '$(mt_out "$n" rogue)'" "$out" ;;
	esac
	case $(mt_out "$n" roguetcp) in
	*"A 203.0.113.10"*) mt_pass "$n: ... over TCP too" ;;
	*) mt_fail "$n: a TCP query to 198.51.100.53: '$(mt_out "$n" roguetcp)'" "$out" ;;
	esac
	mt_eq "$n: the rogue resolver saw nothing" "$mark_rogue" \
	    "$(mt_lines "$MT_T/rogue.log")" "$MT_T/rogue.log"
	mt_in_set "$n: UDP is refused" "$(mt_out "$n" udp_result)" \
	    "EPERM EACCES ENETUNREACH" "$out"
	mt_in_set "$n: UDP over IPv6 is refused" "$(mt_out "$n" udp6_result)" \
	    "EPERM EACCES ENETUNREACH" "$out"
	mt_in_set "$n: ICMP is refused" "$(mt_out "$n" ping_result)" \
	    "EPERM EACCES timeout ENETUNREACH" "$out"
	mt_eq "$n: the UDP sink got nothing" "$mark_udp" \
	    "$(mt_lines "$MT_T/udp.log")" "$MT_T/udp.log"
	icmp1=$(mt_in net awk '/^Icmp:/ && $2 ~ /^[0-9]+$/ { print $2 }' /proc/net/snmp)
	mt_eq "$n: no ICMP reached the world" "$icmp0" "$icmp1"
	if [ -n "$have_git" ]; then
		mt_eq "$n: git clone over the transparent path" moat-run-test \
		    "$(mt_out "$n" git)" "$out" "$MT_T/$n.err"
	fi
	if tail -n +"$((mark_ssh + 1))" "$MT_T/ssh.log" | grep -q 'SSH-2.0-'; then
		mt_pass "$n: ssh -o ProxyCommand reached the ssh server through moatd"
	else
		mt_fail "$n: ssh through ProxyCommand" "$MT_T/ssh.log" "$out"
	fi
	a=$dir/audit-$n.log
	mt_eq "$n: audit lines carry the sandbox's name" 0 \
	    "$(grep -vc "\"sandbox\":\"sbx-$n\"" "$a")" "$a"
	mt_eq "$n: audit: registered and unregistered" "1 1" \
	    "$(grep -c '"detail":"registered"' "$a") $(grep -c '"detail":"unregistered"' "$a")" "$a"
	mt_in_set "$n: audit: the transparent connection, judged" \
	    "$(grep '"proto":"transparent"' "$a" | grep -c '"verdict":"allow"' |
	    awk '{ print ($1 > 0) ? "yes" : "no" }')" yes "$a"
	mt_no_leftovers "$n: after a normal exit" "$before" "$(mt_out "$n" netns)"
done

mt_finish
