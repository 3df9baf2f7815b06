#!/bin/bash
# t_run_proc.sh - `moat run` as a process supervisor, and how it fails:
# exit status, signals, stdin, descriptors, the terminal; the workload dies
# with moat run (even SIGKILLed) and nothing is left; if moatd dies the
# sandbox has no network; a missing, crashing or lying moat-netns, a
# malformed request to moat-netns, bad options and a workload that floods
# connections each give a clear error and leave nothing behind.
#
#   moat namespace: moat run (as nobody or root) + its private moatd
#     sandbox: held sockets (veth for the helper-crash case)
#   net: origin.py 203.0.113.10, dns.py 203.0.113.53 (lib.sh's world)

. "$(dirname "$0")/lib.sh"

mt_init
mt_run_need script
mt_world
mt_nobody_dir
W="$MT_RUN_WORLD --allow origin.test"
WHO="root"
if mt_userns_ok; then
	WHO="nobody root"
else
	echo "SKIP: rootless runs (nobody may not create user namespaces here)"
fi

# bg NAME AS ARG...: moat run in the background (its pid in BG, killed
# at clean-up); output in $MT_T/NAME.out/.err.
bg()
{
	local n=$1 as=$2 priv=""
	shift 2
	[ "$as" = nobody ] && priv=$MT_AS_NOBODY
	# ip netns exec and setpriv exec: $! is moat run itself.
	# shellcheck disable=SC2086
	ip netns exec "$(mt_ns moat)" $priv env MOAT_MOATD="$MOATD" \
	    MOAT_NETNS="$MOAT_NETNS" "$MOAT" run --no-tty "$@" </dev/null \
	    >"$MT_T/$n.out" 2>"$MT_T/$n.err" &
	BG=$!
	MT_PIDS="$MT_PIDS $BG"
}

# wait_file FILE: bounded wait until FILE exists (the workload started).
wait_file()
{
	mt_wait_for 10 test -s "$1"
}
# no_proc PATTERN: no process matches PATTERN (pgrep -f).
no_proc() { ! pgrep -f "$1" >/dev/null; }
# rounds FILE N: the probe loop wrote N rounds to FILE at least.
rounds() { [ "$(grep -c '^round' "$1")" -ge "$2" ]; }
# dead PID: gone, or a zombie.
dead()
{
	case $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) in
	''|Z) return 0 ;;
	esac
	return 1
}
# moat_left: something of moat is left in the moat namespace.
moat_left() { [ -n "$(mt_moat_state)" ]; }

for who in $WHO; do
	d=$MT_T
	[ "$who" = nobody ] && d=$MT_T/nb
	before=$(mt_ns_pids moat)

	# --- exit status ------------------------------------------------
	mt_moat_run "$who" ex1 $W -- sh -c 'exit 3'
	mt_eq "$who: exit status passes through" 3 "$MT_RUN_RC" "$MT_T/ex1.err"
	mt_moat_run "$who" ex2 $W -- sh -c 'kill -TERM $$'
	mt_eq "$who: death by SIGTERM is 143" 143 "$MT_RUN_RC" "$MT_T/ex2.err"
	mt_moat_run "$who" ex3 $W -- /nonexistent/moat-cmd
	mt_eq "$who: a missing command is 127" 127 "$MT_RUN_RC"
	if grep -q 'nonexistent/moat-cmd: No such file' "$MT_T/ex3.err"; then
		mt_pass "$who: ... and says so"
	else
		mt_fail "$who: no message for a missing command" "$MT_T/ex3.err"
	fi
	mt_moat_run "$who" ex4 $W -- /etc
	mt_eq "$who: a command that cannot run is 126" 126 "$MT_RUN_RC" "$MT_T/ex4.err"

	# --- stdin and descriptors --------------------------------------
	priv=""
	[ "$who" = nobody ] && priv=$MT_AS_NOBODY
	# shellcheck disable=SC2086
	got=$(printf 'moat-stdin\n' | timeout -k 2 30 ip netns exec \
	    "$(mt_ns moat)" $priv env MOAT_NETNS="$MOAT_NETNS" "$MOAT" run \
	    --no-tty $W -- cat 2>"$MT_T/stdin.err")
	mt_eq "$who: stdin passes through" moat-stdin "$got" "$MT_T/stdin.err"
	# shellcheck disable=SC2086
	got=$(timeout -k 2 30 ip netns exec "$(mt_ns moat)" $priv env \
	    MOAT_NETNS="$MOAT_NETNS" "$MOAT" run --no-tty $W -- sh -c \
	    'ls /proc/self/fd | tr "\n" " "' 7</dev/null 2>"$MT_T/fds.err")
	mt_eq "$who: only 0-2 reach the workload (caller's fd 7 does not)" \
	    "0 1 2 3 " "$got" "$MT_T/fds.err"

	# --- signals are forwarded ---------------------------------------
	rm -f "$d/sig.started"
	bg sig "$who" $W -- sh -c "
	    trap 'echo got-HUP' HUP; trap 'echo got-INT' INT
	    trap 'echo got-USR1' USR1; trap 'echo got-TERM; exit 42' TERM
	    echo ok > $d/sig.started
	    while :; do sleep 0.05; done"
	if wait_file "$d/sig.started"; then
		for s in HUP INT USR1; do
			kill -"$s" "$BG"
			mt_wait_log "$MT_T/sig.out" "got-$s" 50 ||
			    mt_fail "$who: SIG$s was not forwarded" "$MT_T/sig.out"
		done
		kill -TERM "$BG"
		mt_wait_exit "$BG"
		mt_eq "$who: SIGTERM forwarded; the workload's handler decides (42)" \
		    42 "$MT_WAIT_RC" "$MT_T/sig.err"
		mt_eq "$who: HUP, INT, USR1, TERM each reached the workload" \
		    "got-HUP got-INT got-USR1 got-TERM" \
		    "$(tr '\n' ' ' < "$MT_T/sig.out" | sed 's/ $//')"
	else
		mt_fail "$who: the signal workload did not start" "$MT_T/sig.err"
	fi

	# --- SIGKILL of moat run: the workload and moatd die with it ------
	rm -f "$d/kill.started"
	bg kill "$who" $W -- sh -c "readlink /proc/self/ns/net | tr -dc 0-9 \
	    > $d/kill.started; exec sleep 301.5"
	if wait_file "$d/kill.started"; then
		ino=$(cat "$d/kill.started")
		kill -KILL "$BG"
		mt_wait_exit "$BG"
		mt_wait_for 5 no_proc 'sleep 301.5'
		if pgrep -f 'sleep 301.5' >/dev/null; then
			mt_fail "$who: the workload survived moat run's SIGKILL"
		else
			mt_pass "$who: the workload died with moat run (SIGKILL)"
		fi
		mt_no_leftovers "$who: after SIGKILL of moat run" "$before" "$ino"
	else
		mt_fail "$who: the kill workload did not start" "$MT_T/kill.err"
	fi

	# --- fail closed: moatd dies, the sandbox has no network ----------
	rm -f "$d/fc.log"
	mt_mark
	bg fc "$who" $W -- sh -c "
	    while :; do
	        $MT_PROBE --tag p raw 203.0.113.10 80 origin.test >> $d/fc.log
	        $MT_PROBE --tag c connect 127.0.0.1 3128 >> $d/fc.log
	        echo round >> $d/fc.log
	        sleep 0.1
	    done"
	if mt_wait_log "$d/fc.log" 'p_status=200' 100; then
		mpid=$(pgrep -P "$BG" -x moatd)
		if [ -z "$mpid" ]; then
			mt_fail "$who: no private moatd under moat run"
		else
			kill -KILL "$mpid"
			mt_wait_log "$MT_T/fc.err" 'moatd exited' 50 &&
			    mt_pass "$who: moat run reports moatd's death" ||
			    mt_fail "$who: no report of moatd's death" "$MT_T/fc.err"
			: > "$d/fc.log"
			mt_mark
			mt_wait_for 10 rounds "$d/fc.log" 3
			if grep -q 'p_status=200\|c_result=ok' "$d/fc.log"; then
				mt_fail "$who: network after moatd died" "$d/fc.log"
			elif [ "$(grep -c '^round' "$d/fc.log")" -lt 3 ]; then
				mt_fail "$who: the probe loop stalled" "$d/fc.log"
			else
				mt_pass "$who: moatd dead: no connection succeeds ($(grep -m1 -o 'c_result=[A-Z]*' "$d/fc.log"))"
			fi
			mt_untouched "$who: moatd dead" origin
		fi
		kill -TERM "$BG"
		mt_wait_exit "$BG"
		mt_in_set "$who: moat run ends with the workload" "$MT_WAIT_RC" \
		    "143 0" "$MT_T/fc.err"
		mt_no_leftovers "$who: after moatd died" "$before"
	else
		mt_fail "$who: the fail-closed workload never connected" \
		    "$d/fc.log" "$MT_T/fc.err"
	fi

	# --- moatd does not stop: killed after the stop timeout, and said -
	# (root only: the case is the same as nobody, and it takes 5 s.)
	if [ "$who" = root ]; then
		rm -f "$d/stop.started" "$d/stop.go"
		before=$(mt_ns_pids moat)
		bg stop "$who" $W --audit "$d/stop-audit.log" -- sh -c "
		    echo ok > $d/stop.started
		    while [ ! -e $d/stop.go ]; do sleep 0.05; done"
		mpid=""
		wait_file "$d/stop.started" && mpid=$(pgrep -P "$BG" -x moatd)
		if [ -n "$mpid" ]; then
			kill -STOP "$mpid"
			touch "$d/stop.go"
			mt_wait_exit "$BG"
			mt_eq "$who: a stopped moatd: the exit status is still the workload's" \
			    0 "$MT_WAIT_RC" "$MT_T/stop.err"
			if grep -q 'moatd did not stop within 5000 ms of SIGTERM and was killed; its last audit lines may be missing' \
			    "$MT_T/stop.err"; then
				mt_pass "$who: a moatd killed at the end is reported (audit may be short)"
			else
				mt_fail "$who: no report of the killed moatd" "$MT_T/stop.err"
			fi
			mt_no_leftovers "$who: after a killed moatd" "$before"
		else
			touch "$d/stop.go"
			mt_fail "$who: the stop workload or its moatd did not start" \
			    "$MT_T/stop.err"
		fi
	fi

	# --- a workload that floods connections --------------------------
	mt_moat_run "$who" flood $W -- /usr/bin/python3 -c '
import socket
held = []
for i in range(1500):
    s = socket.socket()
    s.setblocking(False)
    try:
        s.connect_ex(("203.0.113.10", 9 + i % 100))
    except OSError:
        pass
    held.append(s)
for p in (3128, 15001):
    for i in range(300):
        try:
            held.append(socket.create_connection(("127.0.0.1", p), 2))
        except OSError:
            pass
print("flooded", len(held))
'
	mt_eq "$who: a connection flood: moat run still ends normally" 0 \
	    "$MT_RUN_RC" "$MT_T/flood.err"
	mt_no_leftovers "$who: after the flood" "$before"
done

# --- where the policy comes from --------------------------------------
cat > "$MT_T/policy.json" <<'EOF2'
{
  "policy": {
    "default": "deny",
    "rules": [
      {"name": "from-file", "action": "allow", "ports": [80],
       "hosts": ["origin.test"]}
    ]
  }
}
EOF2
pol()
{
	local n=$1
	shift
	mt_moat_run root "$n" $MT_RUN_WORLD "$@" --audit "$MT_T/$n.audit" -- \
	    sh -c 'for u in http://origin.test/ http://other.test/ \
	        http://deb.debian.org/; do
	        curl -sS -m 8 -o /dev/null -w "%{http_code} " "$u"; done'
}
pol pfile --policy "$MT_T/policy.json"
mt_eq "--policy FILE: its rules decide" "200 403 403 " "$(cat "$MT_T/pfile.out")" \
    "$MT_T/pfile.err"
grep -q '"rule":"from-file"' "$MT_T/pfile.audit" &&
    mt_pass "--policy FILE: the audit names the file's rule" ||
    mt_fail "--policy FILE: no rule from-file in the audit" "$MT_T/pfile.audit"
pol pboth --policy "$MT_T/policy.json" --allow other.test:80
mt_eq "--policy FILE --allow HOST:PORT: both" "200 200 403 " \
    "$(cat "$MT_T/pboth.out")" "$MT_T/pboth.err"
pol pdefault
mt_eq "neither: the built-in default policy (deb.debian.org only)" \
    "403 403 200 " "$(cat "$MT_T/pdefault.out")" "$MT_T/pdefault.err"
printf '{"policy": {"rules": [\n  {"action": "allow", "hosts": ["a..b"]}]}}\n' \
    > "$MT_T/bad.json"
pol pbad --policy "$MT_T/bad.json"
if [ "$MT_RUN_RC" = 125 ] &&
    grep -q "^$MT_T/bad.json:2:33: policy.rules\[0\].hosts\[0\]: \"a..b\"" \
    "$MT_T/pbad.err"
then
	mt_pass "a bad policy file: 125, $(head -n1 "$MT_T/pbad.err" | cut -c1-100)"
else
	mt_fail "a bad policy file: rc $MT_RUN_RC" "$MT_T/pbad.err"
fi
[ ! -s "$MT_T/pbad.out" ] && mt_pass "... and nothing ran" ||
    mt_fail "a bad policy file: the workload ran" "$MT_T/pbad.out"
# Keys moat run does not take from the file: a warning each, naming the
# flag to use; the run goes on.
cat > "$MT_T/keys.json" <<'EOF2'
{
  "policy": {"rules": [{"name": "from-file", "action": "allow",
                        "ports": [80], "hosts": ["origin.test"]}]},
  "audit": {"path": "/dev/null"},
  "resolver": {"servers": ["203.0.113.53"]},
  "workers": 1
}
EOF2
pol pkeys --policy "$MT_T/keys.json"
mt_eq "--policy FILE with audit, resolver, workers: its rules decide" \
    "200 403 403 " "$(cat "$MT_T/pkeys.out")" "$MT_T/pkeys.err"
w=$(grep -c -e "^$MT_T/keys.json:4:3: warning: \"audit\": moat run does not use it: give --audit FILE" \
    -e "^$MT_T/keys.json:5:3: warning: \"resolver\": moat run does not use it: give --resolver ADDR:PORT" \
    -e "^$MT_T/keys.json:6:3: warning: \"workers\": moat run does not use it" \
    "$MT_T/pkeys.err")
mt_eq "...and a warning for each key moat run skips, naming the flag" 3 "$w" \
    "$MT_T/pkeys.err"
# The private moatd's messages name the --policy file, not /dev/fd/4.
cat > "$MT_T/noca.json" <<EOF2
{
  "policy": {"rules": [{"name": "get", "action": "allow",
                        "hosts": ["origin.test"], "methods": ["GET"]}]},
  "tls": {"ca_cert": "$MT_T/no-such-ca.crt", "ca_key": "$MT_T/no-such-ca.key"}
}
EOF2
pol pnoca --policy "$MT_T/noca.json"
if [ "$MT_RUN_RC" = 125 ] &&
    grep -q "^$MT_T/noca.json: tls: $MT_T/no-such-ca" "$MT_T/pnoca.err" &&
    ! grep -q /dev/fd "$MT_T/pnoca.err"; then
	mt_pass "a CA that cannot be read: 125, the message names the policy file"
else
	mt_fail "a CA that cannot be read: rc $MT_RUN_RC" "$MT_T/pnoca.err"
fi

# --- the terminal (root only: script needs no user switch) -----------
tout=$(timeout -k 2 30 script -qec "ip netns exec $(mt_ns moat) env \
    MOAT_NETNS=$MOAT_NETNS $MOAT run $W -- sh -c 'test -t 0 && echo \
    in-tty=\$(tty)'; echo outer=\$(tty)" /dev/null | tr -d '\r')
inner=$(echo "$tout" | sed -n 's/^in-tty=//p')
outer=$(echo "$tout" | sed -n 's/^outer=//p')
if [ -n "$inner" ] && [ -n "$outer" ] && [ "$inner" != "$outer" ]; then
	mt_pass "the workload gets a terminal of its own ($inner, not $outer)"
else
	mt_fail "terminal: inner '$inner' outer '$outer': $tout"
fi
tout=$(timeout -k 2 30 script -qec "stty -g; ip netns exec $(mt_ns moat) \
    env MOAT_NETNS=$MOAT_NETNS $MOAT run $W -- true; stty -g" /dev/null |
    tr -d '\r')
echo "stty outputs: $(echo "$tout" | sort -u | tr "\n" "|")"
mt_eq "the terminal's modes are restored after the run" 1 \
    "$(echo "$tout" | sort -u | grep -c .)"
tout=$(timeout -k 2 30 script -qec "ip netns exec $(mt_ns moat) env \
    MOAT_NETNS=$MOAT_NETNS $MOAT run --no-tty $W -- /usr/bin/python3 -c '
import fcntl, termios
try:
    fcntl.ioctl(0, termios.TIOCSTI, b\"x\")
    print(\"sti=ok\")
except OSError as e:
    print(\"sti=%d\" % e.errno)'" /dev/null | tr -d '\r')
mt_eq "--no-tty: TIOCSTI into the caller's terminal is refused" "sti=1" \
    "$(echo "$tout" | grep '^sti=')"

# --- moat-netns missing, crashing, lying --------------------------------
before=$(mt_ns_pids moat)
cat > "$MT_T/segv.sh" <<'EOF'
#!/bin/sh
kill -SEGV $$
EOF
cat > "$MT_T/liar.py" <<'EOF'
#!/usr/bin/python3
# Answers HELLO with a reply one byte too short.
import os, socket, struct
s = socket.socket(fileno=3)
s.recv(512)
s.send(struct.pack("=HHI", 7, 0, 188) + b"\0" * 187)
s.recv(512)
EOF
cat > "$MT_T/fdliar.py" <<'EOF'
#!/usr/bin/python3
# Answers HELLO correctly but passes a descriptor along.
import os, socket, struct
s = socket.socket(fileno=3)
s.recv(512)
body = struct.pack("=HHiI16s160s", 0, 0, 0, 0, b"", b"")
socket.send_fds(s, [struct.pack("=HHI", 7, 0, len(body)) + body], [0])
s.recv(512)
EOF
cat > "$MT_T/refuser.py" <<'EOF'
#!/usr/bin/python3
# Answers HELLO, then refuses every request (EPERM), in order: moat sends
# its set-up requests all at once and must report the first refusal.
import socket, struct
s = socket.socket(fileno=3)
while True:
    m = s.recv(512)
    if not m:
        break
    op = struct.unpack("=HHI", m[:8])[0]
    err, text = (0, b"") if op == 0 else (1, b"refused by the test helper")
    body = struct.pack("=HHiI16s160s", op, 0, err, 0, b"", text)
    s.send(struct.pack("=HHI", 7, 0, len(body)) + body)
EOF
# Executable, but not a program: the exec in the spawned child fails.
printf '\177ELF-not-really\n' > "$MT_T/notelf"
chmod 755 "$MT_T/segv.sh" "$MT_T/liar.py" "$MT_T/fdliar.py" "$MT_T/refuser.py" \
    "$MT_T/notelf"
# launch_fails LABEL WANT VAR=VALUE...: moat run, with those variables,
# must exit 125 with WANT on stderr, and the workload must never run.
launch_fails()
{
	local label=$1 want=$2
	shift 2
	rm -f "$MT_T/never"
	timeout -k 2 30 ip netns exec "$(mt_ns moat)" env "$@" \
	    "$MOAT" run --no-tty $W -- touch "$MT_T/never" \
	    >"$MT_T/launch.out" 2>"$MT_T/launch.err"
	local rc=$?
	if [ "$rc" = 125 ] && grep -qF "$want" "$MT_T/launch.err" &&
	    [ ! -e "$MT_T/never" ]; then
		mt_pass "$label: exit 125, \"$want\", the workload never ran"
	else
		mt_fail "$label: rc $rc (want 125 and \"$want\")" \
		    "$MT_T/launch.err"
	fi
}
for h in /bin/false:"exited with status 1" \
    "$MT_T/segv.sh":"died of signal 11" \
    "$MT_T/liar.py":"record length is not the op's" \
    "$MT_T/fdliar.py":"descriptor count differs" \
    "$MT_T/refuser.py":"moat-netns: JOIN: refused by the test helper" \
    "$MT_T/notelf":"notelf: Exec format error" \
    /nonexistent:"cannot find moat-netns"; do
	path=${h%%:*}
	launch_fails "helper ${path##*/}" "${h#*:}" MOAT_NETNS="$path"
done
mt_no_leftovers "after the helper failures" "$before"

# A private moatd that ends before it answers moat run's hello.
launch_fails "moatd exits at once" \
    "moatd exited (status 1) before it was ready" MOAT_MOATD=/bin/false \
    MOAT_NETNS="$MOAT_NETNS"
mt_no_leftovers "after moatd's failure" "$before"

# --- veth: moat-netns killed while the sandbox runs ----------------------
rm -f "$MT_T/vk.started"
bg vk root --mode veth $W -- sh -c "echo x > $MT_T/vk.started; sleep 30"
if wait_file "$MT_T/vk.started"; then
	hpid=$(pgrep -P "$BG" -x moat-netns)
	state=$(mt_moat_state)
	case $state in
	*link\ moat-*) mt_pass "veth run: its veth and table exist ($state)" ;;
	*) mt_fail "veth run: no veth while running: '$state'" ;;
	esac
	if [ -n "$hpid" ]; then
		kill -KILL "$hpid"
		mt_wait_log "$MT_T/vk.err" 'moat-netns exited' 50 &&
		    mt_pass "veth run: moat run reports moat-netns's death" ||
		    mt_fail "veth run: no report of the helper's death" "$MT_T/vk.err"
	else
		mt_fail "veth run: no moat-netns under moat run"
	fi
	kill -TERM "$BG"
	mt_wait_exit "$BG"
	mt_no_leftovers "veth run after its helper was killed" "$before"
else
	mt_fail "the veth workload did not start" "$MT_T/vk.err"
fi

# --- veth: moat run SIGKILLed; then moat run and its helper together ----
rm -f "$MT_T/vk2.started"
bg vk2 root --mode veth $W -- sh -c "echo x > $MT_T/vk2.started; sleep 30"
if wait_file "$MT_T/vk2.started"; then
	kill -KILL "$BG"
	mt_wait_exit "$BG"
	mt_no_leftovers "veth run SIGKILLed: its helper removed the host side" \
	    "$before"
else
	mt_fail "the second veth workload did not start" "$MT_T/vk2.err"
fi
rm -f "$MT_T/vk3.started"
bg vk3 root --mode veth $W -- sh -c "echo x > $MT_T/vk3.started; sleep 30"
if wait_file "$MT_T/vk3.started"; then
	hpid=$(pgrep -P "$BG" -x moat-netns)
	[ -n "$hpid" ] || mt_fail "no moat-netns under moat run" "$MT_T/vk3.err"
	# Neither may react to the other's death: moat run is stopped (it
	# would clean up after a dead helper), the helper is killed and gone
	# (it would clean up on moat run's end of file), then moat run is
	# killed.  (Stopping the helper too would not do: once its parent is
	# gone, its process group is orphaned with a stopped member, and the
	# kernel sends it SIGHUP and SIGCONT.)
	kill -STOP "$BG"
	kill -KILL $hpid
	mt_wait_for 5 dead "$hpid"
	kill -KILL "$BG"
	mt_wait_exit "$BG"
	mt_wait_for 3 moat_left
	state=$(mt_moat_state)
	# The veth went with the sandbox's namespace; the host table stays.
	case $state in
	*inet\ moat-*) mt_pass "moat run and moat-netns SIGKILLed: left $state" ;;
	*) mt_fail "moat run and moat-netns SIGKILLed: nothing left to clean? '$state'" ;;
	esac
	mt_in moat "$MOAT_NETNS" cleanup >"$MT_T/cleanup.out" 2>&1
	mt_eq "moat-netns cleanup succeeds" 0 $? "$MT_T/cleanup.out"
	tbl=$(echo "$state" | grep -o 'moat-[a-z0-9]*' | head -n 1)
	grep -q "^removed table inet $tbl " "$MT_T/cleanup.out" &&
	    mt_pass "cleanup removed the stale table $tbl" ||
	    mt_fail "cleanup did not remove $tbl" "$MT_T/cleanup.out"
	mt_no_leftovers "after moat-netns cleanup" "$before"
	mt_in moat "$MOAT_NETNS" cleanup >"$MT_T/cleanup2.out" 2>&1
	mt_eq "a second cleanup finds nothing" "0 0" \
	    "$? $(grep -c '^removed ' "$MT_T/cleanup2.out")" "$MT_T/cleanup2.out"
else
	mt_fail "the third veth workload did not start" "$MT_T/vk3.err"
fi

# --- malformed requests to moat-netns itself ------------------------------
ip netns add "$MT_TAG-nsh" && MT_NSES="$MT_NSES $MT_TAG-nsh" ||
    mt_error "cannot create a namespace"
nsh()
{
	timeout -k 2 30 ip netns exec "$(mt_ns moat)" "$MT_PY" \
	    "$MT_HELPERS/nsh.py" "$MOAT_NETNS" "$@" --netns \
	    "/run/netns/$MT_TAG-nsh" >"$MT_T/nsh.kv" 2>"$MT_T/nsh.err"
}
# step result (of the last step), status
for c in \
    "raw:deadbeef|step0=error:71:protocol error: record shorter than a header" \
    "raw:0000000008000000010000000000000000|step0=error:71:protocol error: record length is not the op's" \
    "hello,held|step1=error:71:HELD not allowed now" \
    "hello,hello|step1=error:71:HELLO not allowed now" \
    "join|step0=error:71:JOIN not allowed now" \
    "hello,join,join|step2=error:71:JOIN not allowed now" \
    "hello,join,sock:4:tcp:3128|step2=error:71:SOCKET not allowed now" \
    "hello,join,held,sock:4:tcp:22|step3=error:1:port 22 (tcp) is not a listener of this sandbox" \
    "hello,join,held,sock:4:udp:3128|step3=error:1:port 3128 (udp) is not a listener of this sandbox" \
    "hello,join,held,held|step3=error:71:HELD not allowed now" \
    "hello,rawfds:00000100080000000200000000000000:1|step1=error:71:protocol error: wrong number of descriptors for the op" \
    "hello,join,veth,release|step3=error:1:only a held-mode run may release its helper; tear down instead" \
    "hello,join,held:53:53|step2=error:71:protocol error: a port appears twice" \
    "hello,join,drops|step2=error:71:DROPS not allowed now" \
    "hello,join,held,drops|step3=error:1:the setup did not ask for the drop log" \
    "hello,join,helddrops,drops,drops|step4=error:71:DROPS not allowed now" \
    "hello,joinself|step1=error:22:the namespace to program as its own is not the one moat-netns runs in" \
    "hello,joinown,held|step2=error:1:the namespace moat-netns runs in is programmed only for a moatd inside it, whose uid is exempt" \
    "hello,joinown,veth|step2=error:1:the namespace moat-netns runs in is programmed only in held mode, for a moatd inside it" \
    "hello,join,heldpod:0|step2=error:71:protocol error: exempt uid without an attached namespace, or 0"; do
	script=${c%%|*}
	want=${c#*|}
	nsh "$script"
	key=${want%%=*}
	got=$(sed -n "s/^$key=//p" "$MT_T/nsh.kv")
	st=$(sed -n 's/^status=//p' "$MT_T/nsh.kv")
	if [ "$key=$got" = "$want" ] && [ "$st" = 1 ]; then
		mt_pass "moat-netns refuses $script: ${want#*:*:} (exit 1)"
	else
		mt_fail "moat-netns $script: got '$key=$got' status '$st', want '$want'" \
		    "$MT_T/nsh.kv" "$MT_T/nsh.err"
	fi
done
# The drop log, asked for in the setup: a netlink socket, once.
nsh hello,join,helddrops,drops,release
mt_eq "moat-netns: DROPS after a setup that asked for it: the NFLOG socket" \
    "netlink ok 0" "$(sed -n 's/^drops3=//p' "$MT_T/nsh.kv") \
$(sed -n 's/^step3=//p' "$MT_T/nsh.kv") $(sed -n 's/^status=//p' "$MT_T/nsh.kv")" \
    "$MT_T/nsh.kv" "$MT_T/nsh.err"
ip netns exec "$MT_TAG-nsh" "$MOAT_NETNS" cleanup --netns "/run/netns/$MT_TAG-nsh" \
    >/dev/null 2>&1
mt_eq "moat-netns: the refused sessions left the namespace untouched" "" \
    "$(ip netns exec "$MT_TAG-nsh" $MT_NFT_TABLES 2>/dev/null | grep -v '^table \(inet\|netdev\) moat$')"
mt_no_leftovers "after the malformed sessions" "$before"

# --- bad options: a clear error, nothing started -------------------------
for c in "$MT_RUN_WORLD --allow bad..host|--allow bad..host" \
    "$MT_RUN_WORLD --allow origin.test:0|not a port" \
    "$MT_RUN_WORLD --allow *.1.2.3.4|a wildcard needs a name" \
    "$MT_RUN_WORLD --policy /nonexistent.json|/nonexistent.json: No such file" \
    "$MT_RUN_WORLD --mode tunnel|want held or veth" \
    "$MT_RUN_WORLD --name bad/name|want 1-64 of" \
    "$MT_RUN_WORLD --dns-port 15001|must differ" \
    "--moatd /nonexistent.sock|cannot reach moatd's admin socket" \
    "--moatd /x.sock --resolver 203.0.113.53|configure a private moatd" \
    "--resolver not-an-ip|not valid"; do
	args=${c%%|*}
	want=${c#*|}
	# shellcheck disable=SC2086
	timeout -k 2 30 ip netns exec "$(mt_ns moat)" env \
	    MOAT_NETNS="$MOAT_NETNS" "$MOAT" run --no-tty $args \
	    -- true >/dev/null 2>"$MT_T/opt.err"
	rc=$?
	if [ "$rc" = 125 ] && grep -qF -- "$want" "$MT_T/opt.err"; then
		mt_pass "moat run ${args#"$MT_RUN_WORLD "}: 125, \"$want\""
	else
		mt_fail "moat run $args: rc $rc (want 125, \"$want\")" "$MT_T/opt.err"
	fi
done
if mt_userns_ok; then
	timeout -k 2 30 ip netns exec "$(mt_ns moat)" $MT_AS_NOBODY "$MOAT" \
	    run --mode veth -- true 2>"$MT_T/opt.err"
	rc=$?
	if [ "$rc" = 125 ] && grep -q 'veth needs root' "$MT_T/opt.err"; then
		mt_pass "rootless --mode veth: refused clearly"
	else
		mt_fail "rootless --mode veth: rc $rc" "$MT_T/opt.err"
	fi
fi
mt_no_leftovers "after the bad options" "$before"

mt_finish
