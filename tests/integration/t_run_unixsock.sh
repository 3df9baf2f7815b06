#!/bin/bash
# t_run_unixsock.sh - `moat run` and Unix sockets of the host (security
# issue, item 12): a relay on a path Unix socket (what socat, tmux or an
# ssh ControlMaster make) must not carry a workload's traffic past moatd.
#
#   moat namespace
#   +------------------------------------------------------------------+
#   | socat UNIX-LISTEN:$MT_T/ux/relay.sock -> TCP 203.0.113.12:80      |
#   | moat run (private moatd, allows origin.test only) --> workload:   |
#   |   unixget.py relay.sock  (socket(AF_UNIX): EPERM)               |
#   +------------------------------------------------------------------+
#   net: origin.py 203.0.113.10, .12; dns.py 203.0.113.53
#
# Checks, as root and (where nobody may make user namespaces) rootless:
# by default the workload cannot make a Unix socket (EPERM) and the relay
# carries nothing, while a stream socketpair works, a datagram one is
# refused, so are x32 system calls and io_uring, and the proxy still works; with --allow-unix-sockets the same
# workload gets the denied origin's answer through the relay (so the
# check can fail).  With --allow-unix-socket RELAY (the supervisor that
# performs every connect() itself): RELAY answers, by its name, through a
# symlink and through a ".." spelling; a second relay (other.sock), a
# symlink to it and an abstract name stay EPERM, and so does a datagram
# socket; the proxy, DNS and a transparently proxied raw TCP connect
# (connects through the supervisor) still work, a denied host stays
# refused;
# and connects on a buffer a second thread keeps rewriting between the
# two relays' paths never reach the second one; a connect() that needs a
# capability the workload lacks (netlink, group 1) still fails: the
# supervisor connects with the workload's privileges, not moat run's; and
# the workload cannot get a seccomp listener of its own (its filter would
# take connect() first and could let it through); listening on an
# allowed path itself, it is the peer of a supervisor's worker but cannot
# take the worker's descriptors (the listener) through its pidfd; and an
# allowed name in a directory it can write, which it keeps swapping
# between its own socket and a symbolic link to the other relay, never
# leads a connect() to the other relay.

. "$(dirname "$0")/lib.sh"

mt_init
mt_run_need socat
mt_world
mt_nobody_dir
PRIV="--allow-private 203.0.113.0/24 --allow-private 2001:db8::/32 --resolver 203.0.113.53"
UG="/usr/bin/python3 $MT_HELPERS/unixget.py"

mkdir -p "$MT_T/ux" && chmod 777 "$MT_T/ux"
relay=$MT_T/ux/relay.sock
timeout -k 2 "$MT_LIFETIME" ip netns exec "$(mt_ns moat)" socat \
    "UNIX-LISTEN:$relay,fork,mode=0777" TCP:203.0.113.12:80 \
    2>"$MT_T/socat.err" &
MT_PIDS="$MT_PIDS $!"
mt_wait_for "$(mt_steps_s "$MT_READY_STEPS")" test -S "$relay" ||
    mt_error "socat did not bind $relay"
other=$MT_T/ux/other.sock
timeout -k 2 "$MT_LIFETIME" ip netns exec "$(mt_ns moat)" socat \
    "UNIX-LISTEN:$other,fork,mode=0777" TCP:203.0.113.12:80 \
    2>"$MT_T/socat2.err" &
MT_PIDS="$MT_PIDS $!"
mt_wait_for "$(mt_steps_s "$MT_READY_STEPS")" test -S "$other" ||
    mt_error "socat did not bind $other"
mkdir -p "$MT_T/ux/sub" "$MT_T/ux/sw"
chmod 777 "$MT_T/ux/sw"
ln -s relay.sock "$MT_T/ux/link.sock"
ln -s other.sock "$MT_T/ux/olink.sock"
# The relay works from the moat namespace itself.
out=$(mt_in moat $UG "$relay" other.test)
case $out in
*"unix_status=200"*) mt_pass "the relay reaches the denied origin from outside" ;;
*) mt_fail "the relay does not work: $out" "$MT_T/socat.err" ;;
esac

cat > "$MT_T/work.sh" <<EOF
#!/bin/sh
$UG "$relay" other.test
$UG pair
$MT_PROBE --tag px proxyget http://origin.test/
EOF
chmod 755 "$MT_T/work.sh"

cat > "$MT_T/paths.sh" <<EOF
#!/bin/sh
$UG "$relay" other.test
$UG "$other" other.test other
$UG "$MT_T/ux/link.sock" other.test link
$UG "$MT_T/ux/sub/../relay.sock" other.test dotdot
$UG "$MT_T/ux/olink.sock" other.test olink
$UG "@$relay" other.test abstract
$UG dgram "$relay"
$UG pair
$UG netlink
$UG race "$relay" "$other" 300
$UG nested "$other"
$UG peer "$MT_T/ux/self.sock"
$UG swap "$MT_T/ux/sw" "$other" 1000
$MT_PROBE --tag dns resolve origin.test
$MT_PROBE --tag tp raw 203.0.113.10 80 origin.test
$MT_PROBE --tag tpother raw 203.0.113.12 80 other.test
$MT_PROBE --tag px proxyget http://origin.test/
EOF
chmod 755 "$MT_T/paths.sh"

# check_paths WHO: --allow-unix-socket RELAY.
check_paths()
{
	local who=$1 n=$1-path
	# (what the last run's swapping left there would be canonicalized)
	rm -f "$MT_T/ux/sw/"*
	mt_mark
	mt_moat_run "$who" "$n" $PRIV --allow origin.test \
	    --allow-unix-socket "$relay" --allow-unix-socket \
	    "$MT_T/ux/self.sock" --allow-unix-socket "$MT_T/ux/sw/swap.sock" \
	    -- "$MT_T/paths.sh"
	mt_eq "$who: exit status (--allow-unix-socket)" 0 "$MT_RUN_RC" \
	    "$MT_T/$n.err"
	mt_eq "$who: --allow-unix-socket: the allowed relay answers" \
	    "ok 200" "$(mt_out "$n" unix_result) $(mt_out "$n" \
	    unix_status)" "$MT_T/$n.out" "$MT_T/$n.err"
	mt_eq "$who: --allow-unix-socket: another relay is EPERM" EPERM \
	    "$(mt_out "$n" other_unix_result)" "$MT_T/$n.out"
	mt_eq "$who: --allow-unix-socket: a symlink to the relay answers" \
	    "ok 200" "$(mt_out "$n" link_unix_result) $(mt_out "$n" \
	    link_unix_status)" "$MT_T/$n.out"
	mt_eq "$who: --allow-unix-socket: a .. spelling answers" "ok 200" \
	    "$(mt_out "$n" dotdot_unix_result) $(mt_out "$n" \
	    dotdot_unix_status)" "$MT_T/$n.out"
	mt_eq "$who: --allow-unix-socket: a symlink to another relay is EPERM" \
	    EPERM "$(mt_out "$n" olink_unix_result)" "$MT_T/$n.out"
	mt_eq "$who: --allow-unix-socket: an abstract name is EPERM" EPERM \
	    "$(mt_out "$n" abstract_unix_result)" "$MT_T/$n.out"
	mt_eq "$who: --allow-unix-socket: a datagram socket is EPERM" EPERM \
	    "$(mt_out "$n" dgram_result)" "$MT_T/$n.out"
	mt_eq "$who: --allow-unix-socket: a stream socketpair works" ok \
	    "$(mt_out "$n" pair_stream)" "$MT_T/$n.out"
	mt_eq "$who: --allow-unix-socket: a datagram socketpair is EPERM" \
	    EPERM "$(mt_out "$n" pair_dgram)" "$MT_T/$n.out"
	if [ "$(uname -m)" = x86_64 ]; then
		mt_eq "$who: --allow-unix-socket: io_uring is refused" EPERM \
		    "$(mt_out "$n" io_uring)" "$MT_T/$n.out"
	fi
	mt_eq "$who: --allow-unix-socket: racing connects never reach the other relay" \
	    0 "$(mt_out "$n" race_bad)" "$MT_T/$n.out"
	# Both spellings were seen (else the race proves nothing).
	mt_eq "$who: --allow-unix-socket: racing connects: some reach the relay, some EPERM" \
	    "yes yes" "$([ "$(mt_out "$n" race_good)" -gt 0 ] && echo yes) $(
	    [ "$(mt_out "$n" race_eperm)" -gt 0 ] && echo yes)" "$MT_T/$n.out"
	# EPERM from moat's filter; the kernel refuses a second listener in
	# one filter chain anyway (EBUSY).
	mt_in_set "$who: --allow-unix-socket: no seccomp listener of its own" \
	    "$(mt_out "$n" nested)" "EPERM EBUSY" "$MT_T/$n.out"
	mt_eq "$who: --allow-unix-socket: an allowed name swapped to a link never leads elsewhere" \
	    0 "$(mt_out "$n" swap_bad)" "$MT_T/$n.out"
	mt_eq "$who: --allow-unix-socket: ... while both names were seen" \
	    "yes yes" "$([ "$(mt_out "$n" swap_own)" -gt 0 ] && echo yes) $(
	    [ "$(mt_out "$n" swap_eperm)" -gt 0 ] && echo yes)" "$MT_T/$n.out"
	mt_eq "$who: --allow-unix-socket: its own socket on an allowed path works" \
	    ok "$(mt_out "$n" peer_pidfd)" "$MT_T/$n.out"
	mt_eq "$who: --allow-unix-socket: no descriptor of the supervisor to take" \
	    0 "$(mt_out "$n" peer_fds)" "$MT_T/$n.out"
	mt_eq "$who: --allow-unix-socket: no capability lent (netlink)" \
	    EPERM "$(mt_out "$n" netlink)" "$MT_T/$n.out"
	# Connects the supervisor performs stay in the sandbox's network.
	mt_eq "$who: --allow-unix-socket: DNS still works" ok \
	    "$(mt_out "$n" dns_result)" "$MT_T/$n.out"
	mt_eq "$who: --allow-unix-socket: a raw TCP connect, transparently proxied" \
	    "200 origin" "$(mt_out "$n" tp_status) $(mt_out "$n" tp_origin)" \
	    "$MT_T/$n.out"
	mt_in_set "$who: --allow-unix-socket: a raw TCP connect to a denied host is refused" \
	    "$(mt_out "$n" tpother_status)" "403 none" "$MT_T/$n.out"
	mt_eq "$who: --allow-unix-socket: the proxy still works" origin \
	    "$(mt_out "$n" px_origin)" "$MT_T/$n.out"
}

# check WHO: the default, then --allow-unix-sockets.
check()
{
	local who=$1
	mt_mark
	mt_moat_run "$who" "$who-def" $PRIV --allow origin.test -- \
	    "$MT_T/work.sh"
	mt_eq "$who: exit status" 0 "$MT_RUN_RC" "$MT_T/$who-def.err"
	mt_eq "$who: socket(AF_UNIX) fails with EPERM" EPERM \
	    "$(mt_out "$who-def" unix_result)" "$MT_T/$who-def.out"
	mt_eq "$who: a stream socketpair works" ok \
	    "$(mt_out "$who-def" pair_stream)" "$MT_T/$who-def.out"
	mt_eq "$who: a datagram socketpair is refused" EPERM \
	    "$(mt_out "$who-def" pair_dgram)" "$MT_T/$who-def.out"
	if [ "$(uname -m)" = x86_64 ]; then
		mt_eq "$who: the x32 ABI is refused" EPERM \
		    "$(mt_out "$who-def" x32_socket)" "$MT_T/$who-def.out"
		mt_eq "$who: io_uring is refused" EPERM \
		    "$(mt_out "$who-def" io_uring)" "$MT_T/$who-def.out"
	fi
	mt_eq "$who: the proxy still works" origin \
	    "$(mt_out "$who-def" px_origin)" "$MT_T/$who-def.out"
	mt_mark
	mt_moat_run "$who" "$who-all" $PRIV --allow origin.test \
	    --allow-unix-sockets -- "$MT_T/work.sh"
	mt_eq "$who: --allow-unix-sockets: the relay carries the request" \
	    "ok 200 origin" "$(mt_out "$who-all" unix_result) $(mt_out \
	    "$who-all" unix_status) $(mt_out "$who-all" unix_origin)" \
	    "$MT_T/$who-all.out" "$MT_T/$who-all.err"
	mt_eq "$who: --allow-unix-sockets: a datagram socketpair works" ok \
	    "$(mt_out "$who-all" pair_dgram)" "$MT_T/$who-all.out"
}

# Option errors: relative, and with --allow-unix-sockets.
mt_moat_run root opt-rel --allow-unix-socket relay.sock -- /bin/true
mt_eq "--allow-unix-socket: a relative path is refused" 125 "$MT_RUN_RC"
mt_eq "--allow-unix-socket: ... with a message" 1 "$(grep -c \
    'not an absolute path' "$MT_T/opt-rel.err")" "$MT_T/opt-rel.err"
mt_moat_run root opt-both --allow-unix-socket "$relay" \
    --allow-unix-sockets -- /bin/true
mt_eq "--allow-unix-socket with --allow-unix-sockets is refused" 125 \
    "$MT_RUN_RC" "$MT_T/opt-both.err"

check root
check_paths root
if mt_userns_ok; then
	check nobody
	check_paths nobody
else
	echo "SKIP: rootless runs (nobody may not create user namespaces here)"
fi

mt_finish
