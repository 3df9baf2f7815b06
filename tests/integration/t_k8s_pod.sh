#!/bin/bash
# t_k8s_pod.sh - the per-pod pattern of conf/kubernetes/per-pod.yaml,
# played in network namespaces (issue 15, item 7): one namespace is the
# pod, shared by the init step, moatd and the app, as a pod's containers
# share one.  What runs is read from the YAML (tests/k8s_check.py --pod),
# so the test and the manifest cannot drift: the init container's command
# line and capabilities, moatd's command line, uid and startup probe, the
# app's uid, capabilities and proxy variables, moatd's ConfigMap (its
# listeners as they are; only the policy, resolver, audit and admin paths
# are the test world's).
#
#   pod namespace (eth0 198.51.100.2 -- net's pd 198.51.100.1)
#   +---------------------------------------------------------------------+
#   | init:  moat pod-init --exempt-uid 1337 ... (root, only the YAML's    |
#   |        capabilities, no_new_privs)                                    |
#   | moatd: uid 1337, no capability: loopback listeners of the ConfigMap  |
#   | app:   uid 1000, no capability, no_new_privs, the YAML's env          |
#   +---------------------------------------------------------------------+
#   net: origin.py (203.0.113.10, .12), dns.py (203.0.113.53)
#
# Checks: the init step exits 0 and leaves the table; before moatd runs the
# app has no network at all (fail closed), while moatd's uid reaches the
# internet directly (the exemption is real); moatd starts and its startup
# probe passes; the app reaches the allowed origin through the proxy
# variables and, ignoring them, through the redirection, with DNS through
# moatd; it is refused elsewhere (proxy 403, transparent closed, NXDOMAIN)
# and the origin sees nothing of it; a direct connection is moatd's, not
# the app's; other UDP, raw and packet sockets, becoming moatd's uid,
# changing the network: all refused; the init step may run again; moat
# attach and moat-netns cleanup leave the pod's table alone.  Well under a
# minute.

. "$(dirname "$0")/lib.sh"

mt_init
mt_run_need
"$MT_PY" -c 'import yaml' 2>/dev/null ||
    mt_skip "needs python3 with yaml (Debian: python3-yaml)"
mt_world
YAML=$MOAT_SRCDIR/conf/kubernetes/per-pod.yaml
POD=$MT_TAG-pod

# --- the manifest's parts ---------------------------------------------------
"$MT_PY" "$MOAT_SRCDIR/tests/k8s_check.py" --pod "$YAML" >"$MT_T/pod.json" ||
    mt_error "cannot read $YAML"
# part EXPR: a value of the manifest's parts, by a Python expression on p.
part()
{
	"$MT_PY" - "$MT_T/pod.json" "$1" <<-'EOF'
	import json, shlex, sys
	p = json.load(open(sys.argv[1]))
	v = eval(sys.argv[2])
	print(" ".join(shlex.quote(str(x)) for x in v) if isinstance(v, list) else v)
	EOF
}
INIT_CMD=$(part 'p["pod-init"]["command"]')
INIT_CAPS=$(part '",".join("+" + c.lower() for c in p["pod-init"]["caps"])')
INIT_UID=$(part 'p["pod-init"]["uid"]')
MOATD_CMD=$(part 'p["moatd"]["command"]')
MOATD_UID=$(part 'p["moatd"]["uid"]')
MOATD_GID=$(part 'p["moatd"]["gid"]')
PROBE_CMD=$(part 'p["moatd"]["probe"]')
APP_UID=$(part 'p["apps"][0]["uid"]')
APP_GID=$(part 'p["apps"][0]["gid"]')
APP_CAPS=$(part 'len(p["apps"][0]["caps"])')
APP_ENV=$(part '["%s=%s" % kv for kv in sorted(p["apps"][0]["env"].items())]')
EXEMPT=$(part 'p["pod-init"]["command"][p["pod-init"]["command"].index("--exempt-uid") + 1]')
TPORT=$(part 'p["pod-init"]["command"][p["pod-init"]["command"].index("--transparent-port") + 1]')
echo "init: $INIT_CMD (uid $INIT_UID, caps $INIT_CAPS)"
echo "moatd: $MOATD_CMD (uid $MOATD_UID); app: uid $APP_UID"
mt_eq "the manifest: pod-init's exempt uid is moatd's, not the app's" \
    "yes no" "$([ "$EXEMPT" = "$MOATD_UID" ] && echo yes || echo no) $([ "$EXEMPT" = "$APP_UID" ] && echo yes || echo no)"
mt_eq "the manifest: the init step runs as root, the app adds no capability" \
    "0 0" "$INIT_UID $APP_CAPS"

# moatd's config: the ConfigMap's listeners, the test world's policy.
mkdir -p "$MT_T/pod/run"
chmod 755 "$MT_T"
chown "$MOATD_UID:$MOATD_GID" "$MT_T/pod" "$MT_T/pod/run"
"$MT_PY" - "$MT_T/pod.json" "$MT_T/pod/moatd.json" "$MT_T/pod" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
c = p["config"]
c["policy"] = {"default": "deny", "allow_private": ["203.0.113.0/24"],
               "rules": [{"name": "origin", "action": "allow",
                          "ports": [80], "hosts": ["origin.test"]}]}
c["resolver"] = {"servers": ["203.0.113.53"]}
c["audit"] = {"path": sys.argv[3] + "/audit.log"}
c["admin"]["address"] = "unix:" + sys.argv[3] + "/run/admin.sock"
json.dump(c, open(sys.argv[2], "w"), indent=2)
EOF
chmod 644 "$MT_T/pod/moatd.json"
AUD=$MT_T/pod/audit.log
# The container's paths, in the test's tree.
MOATD_CMD=$(echo "$MOATD_CMD" | sed -e "s|^moatd |$MOATD |" \
    -e "s|/etc/moat/moatd.json|$MT_T/pod/moatd.json|")
PROBE_CMD=$(echo "$PROBE_CMD" | sed -e "s|^moat |$MOAT |" \
    -e "s|/run/moat/admin.sock|$MT_T/pod/run/admin.sock|")
INIT_RUN=$(echo "$INIT_CMD" | sed "s|^moat |$MOAT |")

# --- the pod's namespace ---------------------------------------------------------
ip netns add "$POD" && MT_NSES="$MT_NSES $POD" || mt_error "cannot create the pod"
ip -n "$POD" link set lo up &&
ip link add eth0 netns "$POD" type veth peer name pd netns "$(mt_ns net)" &&
ip -n "$POD" link set eth0 up && ip -n "$(mt_ns net)" link set pd up &&
ip -n "$POD" addr add 198.51.100.2/24 dev eth0 &&
ip -n "$(mt_ns net)" addr add 198.51.100.1/24 dev pd &&
ip -n "$POD" route add default via 198.51.100.1 ||
    mt_error "cannot build the pod's network"
# The app's resolv.conf names some server: every query goes to moatd.
mkdir -p "/etc/netns/$POD" && MT_ETC_NETNS="$MT_ETC_NETNS $POD"
echo "nameserver 198.51.100.1" > "/etc/netns/$POD/resolv.conf"

inpod() { timeout -k 2 30 ip netns exec "$POD" "$@"; }
# as_app ARG...: a process as the app container runs: its uid, no
# capability, no_new_privs, the manifest's environment.
as_app()
{
	# shellcheck disable=SC2086 # APP_ENV is words
	inpod setpriv --reuid "$APP_UID" --regid "$APP_GID" --clear-groups \
	    --bounding-set -all --inh-caps -all --no-new-privs \
	    env -i PATH=/usr/bin:/bin $APP_ENV "$@"
}
# as_moatd_uid ARG...: a process of moatd's uid (not moatd), no capability.
as_moatd_uid()
{
	inpod setpriv --reuid "$MOATD_UID" --regid "$MOATD_GID" --clear-groups \
	    --bounding-set -all --inh-caps -all --no-new-privs env -i \
	    PATH=/usr/bin:/bin "$@"
}
probe() { local n=$1; shift; "$@" >"$MT_T/$n.out" 2>&1; }
val() { sed -n "s/^$2=//p" "$MT_T/$1.out" | head -n 1; }

# --- the init step -------------------------------------------------------------------
# shellcheck disable=SC2086 # INIT_RUN is words
inpod env MOAT_NETNS="$MOAT_NETNS" setpriv --bounding-set "-all,$INIT_CAPS" \
    --inh-caps -all --no-new-privs $INIT_RUN >"$MT_T/init.out" 2>&1
mt_eq "the init step (the init container's command line) exits 0" 0 "$?" \
    "$MT_T/init.out"
tables=$(inpod $MT_NFT_TABLES | tr '\n' ' ')
mt_eq "... and leaves moat's tables in the pod" \
    "table inet moat table netdev moat " "$tables"

# Fail closed: with no moatd yet, the app has no way out.
mt_mark
probe closed-tp as_app $MT_PROBE raw 203.0.113.10 80 origin.test
probe closed-px as_app $MT_PROBE proxyget http://origin.test/
mt_eq "before moatd runs the app has no network (direct, proxy)" "none none" \
    "$(val closed-tp status) $(val closed-px status)" "$MT_T/closed-tp.out"
# The exemption is real: moatd's uid goes out directly.
probe exempt as_moatd_uid $MT_PROBE raw 203.0.113.10 80 origin.test
mt_eq "moatd's uid reaches the internet directly (the exemption)" 200 \
    "$(val exempt status)" "$MT_T/exempt.out"
# from_pod: sets seen to the connections the origin accepted from the pod.
from_pod()
{
	seen=$(mt_new origin | grep '"event": "accept"' |
	    grep -c '"peer": "198.51.100.2:')
	[ "$seen" = 1 ]
}
mt_wait_for 3 from_pod
mt_eq "the origin saw that one connection, from the pod, and none of the app's" \
    1 "$seen" "$MT_T/origin.log"

# --- moatd, the sidecar ------------------------------------------------------------
# shellcheck disable=SC2086 # MOATD_CMD is words
if ! mt_bg moatd - ip netns exec "$POD" setpriv --reuid "$MOATD_UID" \
    --regid "$MOATD_GID" --clear-groups --bounding-set -all --inh-caps -all \
    --no-new-privs $MOATD_CMD --ready-fd 3; then
	mt_fail "moatd started as the sidecar runs it" "$MT_T/moatd.err"
	mt_finish
fi
# shellcheck disable=SC2086
probe startup inpod setpriv --reuid "$MOATD_UID" --regid "$MOATD_GID" \
    --clear-groups --bounding-set -all $PROBE_CMD
mt_eq "moatd's startup probe passes" 0 "$?" "$MT_T/startup.out"

# --- the app ------------------------------------------------------------------------
mt_mark
probe px as_app $MT_PROBE proxyget http://origin.test/
mt_eq "the app reaches the allowed origin through its proxy variables" \
    "200 origin" "$(val px status) $(val px origin)" "$MT_T/px.out"
probe tp as_app $MT_PROBE raw 203.0.113.10 80 origin.test
mt_eq "... and ignoring them, through the redirection to port $TPORT" \
    "200 origin" "$(val tp status) $(val tp origin)" "$MT_T/tp.out"
probe dns as_app $MT_PROBE resolve origin.test
mt_eq "its DNS goes to moatd" "ok" "$(val dns result)" "$MT_T/dns.out"
probe px-deny as_app $MT_PROBE proxyget http://other.test/
mt_eq "refused elsewhere: proxy" "403 no-rule" \
    "$(val px-deny status) $(val px-deny reason)" "$MT_T/px-deny.out"
probe tp-deny as_app $MT_PROBE raw 203.0.113.12 80 other.test
mt_eq "refused elsewhere: redirected" "none" "$(val tp-deny status)" \
    "$MT_T/tp-deny.out"
probe dns-deny as_app $MT_PROBE resolve other.test
mt_eq "refused elsewhere: DNS" "gaierror" "$(val dns-deny result)" \
    "$MT_T/dns-deny.out"
if mt_new origin | grep '"event": "accept"' | grep -q '"local": "203.0.113.12:'; then
	mt_fail "the refused origin saw a connection" "$MT_T/origin.log"
else
	mt_pass "the refused origin (203.0.113.12) saw nothing"
fi
# Every connection the origin saw was moatd's (the app's were proxied):
# the audit log has each, as the sandbox of the ConfigMap's listeners.
mt_log_eq "moatd audited the app's redirected connection (sandbox agent)" 1 \
    "$AUD" count event=open proto=transparent sandbox=agent host=origin.test \
    verdict=allow

# No way around moatd.
probe udp as_app $MT_PROBE udp 203.0.113.10 9999
mt_eq "no other UDP (dropped: EPERM)" EPERM "$(val udp result)" "$MT_T/udp.out"
probe rawsock as_app $MT_PROBE rawsock
probe packet as_app $MT_PROBE packetsock
mt_eq "no raw or packet socket without NET_RAW" "EPERM EPERM" \
    "$(val rawsock result) $(val packet result)" "$MT_T/rawsock.out"
probe setuid as_app "$MT_PY" -c "import os
try:
    os.setresuid($EXEMPT, $EXEMPT, $EXEMPT); print('setuid=ok')
except OSError as e:
    print('setuid=%s' % e.errno)"
mt_eq "the app cannot become moatd's uid (EPERM)" 1 "$(val setuid setuid)" \
    "$MT_T/setuid.out"
probe tport as_app $MT_PROBE raw 127.0.0.1 "$TPORT" origin.test
mt_eq "the transparent port itself, dialled, serves nothing" none \
    "$(val tport status)" "$MT_T/tport.out"
probe iplink as_app ip link set lo down
mt_eq "the app cannot change the network (no NET_ADMIN)" 2 "$?" \
    "$MT_T/iplink.out"

# --- the table's life -----------------------------------------------------------------
# shellcheck disable=SC2086
inpod env MOAT_NETNS="$MOAT_NETNS" setpriv --bounding-set "-all,$INIT_CAPS" \
    --inh-caps -all --no-new-privs $INIT_RUN >"$MT_T/init2.out" 2>&1
mt_eq "the init step may run again (an init container that restarts)" 0 "$?" \
    "$MT_T/init2.out"
for mode in held veth; do
	out=$(timeout -k 2 30 env MOAT_NETNS="$MOAT_NETNS" "$MOAT" attach -q \
	    --mode "$mode" --netns "/run/netns/$POD" \
	    --moatd "$MT_T/pod/run/admin.sock" --allow origin.test 2>&1)
	case $out in
	*"a pod's, behind the moatd inside it"*)
		mt_pass "moat attach --mode $mode refuses the pod's namespace" ;;
	*)	mt_fail "moat attach --mode $mode on the pod: $out" ;;
	esac
done
out=$(inpod "$MOAT_NETNS" cleanup --netns "/run/netns/$POD" 2>&1)
case $out in
*"kept    table inet moat: a pod's"*)
	mt_pass "moat-netns cleanup keeps the pod's table" ;;
*)	mt_fail "moat-netns cleanup: $out" ;;
esac
probe after as_app $MT_PROBE proxyget http://origin.test/
mt_eq "the app is still served after all that" 200 "$(val after status)" \
    "$MT_T/after.out"
probe exempt-uid as_app $MT_PROBE status
mt_eq "the app ran as uid $APP_UID with no capability" "$APP_UID 0000000000000000 1" \
    "$(val exempt-uid uid) $(val exempt-uid capeff) $(val exempt-uid nonewprivs)" \
    "$MT_T/exempt-uid.out"
mt_finish
