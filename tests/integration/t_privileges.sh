#!/bin/bash
# t_privileges.sh - privilege drop after binding, and running out of file
# descriptors.
#
#   cli: curl / python3 (idle sockets)
#     --> moat: moatd #1 as root binds 10.200.0.1:81 (a privileged port),
#               then runs as "nobody";
#               moatd #2 with RLIMIT_NOFILE 64 on 10.200.0.1:3128
#     --> net: origin.py 203.0.113.10
#   (the full drawing is at the top of lib.sh)
#
# moatd #1 must hold no privilege at all once it serves: uid/gid nobody,
# no effective, permitted or inheritable capability, no_new_privs set,
# and it still serves and reloads.  moatd #2, out of descriptors under a
# flood of idle connections, must pause accepting instead of spinning on
# its readable listening socket (its CPU time stays small) and serve again
# once the idle connections are closed.

. "$(dirname "$0")/lib.sh"

mt_init
mt_need_moatd
id nobody >/dev/null 2>&1 || mt_skip "needs a user named nobody"
command -v prlimit >/dev/null 2>&1 || mt_skip "needs prlimit (util-linux)"
mt_world

# --- privilege drop -------------------------------------------------------------
conf=$MT_T/priv.json
mt_conf "$conf"
mt_conf_set "$conf" listen '[{"proto": "http", "address": "10.200.0.1:81", "sandbox": "priv"}]'
mt_conf_set "$conf" user '"nobody"'
# nobody must be able to read the config again at reload.
chmod 755 "$MT_T"
chmod 644 "$conf"
mt_moatd_start "$conf"
st=/proc/$MT_MOATD_PID/status
uid=$(awk '/^Uid:/ { print $2, $3, $4, $5 }' "$st")
gid=$(awk '/^Gid:/ { print $2, $3, $4, $5 }' "$st")
nu=$(id -u nobody)
ng=$(id -g nobody)
mt_eq "real, effective, saved and fs uid are nobody's" "$nu $nu $nu $nu" "$uid"
mt_eq "real, effective, saved and fs gid are nobody's" "$ng $ng $ng $ng" "$gid"
mt_eq "supplementary groups: only nobody's group" "$ng" \
    "$(awk '/^Groups:/ { $1 = ""; print $0 }' "$st" | xargs)"
for c in CapEff CapPrm CapInh CapAmb; do
	mt_eq "$c is empty" 0000000000000000 \
	    "$(awk -v c="$c:" '$1 == c { print $2 }' "$st")"
done
mt_eq "no_new_privs is set" 1 "$(awk '/^NoNewPrivs:/ { print $2 }' "$st")"
# A process that is not dumpable has its /proc files owned by root.
mt_eq "not dumpable (secrets stay out of core files)" root \
    "$(stat -c %U /proc/"$MT_MOATD_PID"/environ)"
mt_curl p1 -x http://10.200.0.1:81 http://origin.test/priv
mt_allowed "serves on the privileged port as nobody" p1

# A reload as nobody: a new deny rule takes effect.
mt_conf_set "$conf" policy.rules.^ '{"name": "no-priv-path", "action": "deny", "hosts": ["deny-me.origin.test"]}'
kill -HUP "$MT_MOATD_PID"
mt_wait_log "$MT_T/moatd.err" "reload done" 50
mt_curl p2 -x http://10.200.0.1:81 http://deny-me.origin.test/
mt_denied "reloaded as nobody: the new deny rule applies" p2 403 \
    deny-me.origin.test denied-by-rule no-priv-path
mt_moatd_stop
mt_eq "moatd (nobody) stops on SIGTERM with status 0" 0 "$MT_WAIT_RC"

# --- out of file descriptors ---------------------------------------------------
conf=$MT_T/fds.json
mt_conf "$conf"
mt_conf_set "$conf" listen '[{"proto": "http", "address": "10.200.0.1:3128", "sandbox": "fds"}]'
mt_conf_set "$conf" timeouts '{"request_head_ms": 4000}'
mt_conf_set "$conf" workers 1
MT_MOATD_ENV="" mt_moatd_start "$conf"
prlimit --pid "$MT_MOATD_PID" --nofile=64:64 ||
    mt_error "prlimit could not lower moatd's descriptor limit"
# 120 idle connections: far more than 64 descriptors.
mt_bg flood cli "$MT_PY" -c '
import os, socket, sys, time
socks = []
for i in range(120):
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect(("10.200.0.1", 3128))
    except OSError:
        break
    socks.append(s)
os.write(3, b"ready\n")
time.sleep(2.5)
' || mt_fail "the idle-connection flood did not start"
mt_wait_log "$MT_T/moatd.err" "not accepting" 50
if grep -q "not accepting.*Too many open files" "$MT_T/moatd.err"; then
	mt_pass "out of descriptors: moatd says it pauses accepting"
else
	mt_fail "no 'not accepting ... Too many open files' in moatd's log" \
	    "$MT_T/moatd.err"
fi
t0=$(awk '{ print $14 + $15 }' /proc/"$MT_MOATD_PID"/stat)
sleep 1		# measuring CPU over a second: not a wait for a listener
t1=$(awk '{ print $14 + $15 }' /proc/"$MT_MOATD_PID"/stat)
if [ $((t1 - t0)) -le 20 ]; then
	mt_pass "while out of descriptors moatd does not spin ($((t1 - t0)) ticks of CPU in 1 s)"
else
	mt_fail "moatd used $((t1 - t0)) ticks of CPU in 1 s while out of descriptors"
fi
mt_wait_exit "$MT_PID_flood" 60
mt_curl f1 -x http://10.200.0.1:3128 --max-time 8 http://origin.test/after-flood
mt_allowed "serves again once the idle connections are gone" f1
mt_moatd_stop
mt_eq "moatd stops on SIGTERM with status 0" 0 "$MT_WAIT_RC"
mt_finish
