#!/bin/bash
# t_status.sh - `moat status` and the admin ops list and stats against a
# moatd with a few registered sandboxes (issue 15, item 7).
#
#   moat namespace
#   +------------------------------------------------------------------+
#   | moatd (mt_conf's listeners, "admin": unix:$MT_T/adm/admin.sock)   |
#   | moat attach --netns s1 (policy: origin.test, secret API_KEY)      |
#   | moat attach --netns s2 (policy: origin.test, --audit-only)        |
#   | moat status --moatd ... (root; nobody; from inside s1: refused)   |
#   +------------------------------------------------------------------+
#   s1, s2: bare namespaces (lo), held sockets; net: origin.py, dns.py
#
# Checks: moat status prints moatd's block and every sandbox (the
# configured listeners' and the registered ones) with its listeners and
# the names of its secrets, never a placeholder or a value; the counters
# move by exactly the decisions the traffic made (allowed and denied
# tunnels, a would-deny of audit mode, and their bytes once closed, a
# dropped packet), and the open connections count
# a tunnel while it is open; reloads done and refused are counted; a
# detached sandbox leaves the list; a moatd that cannot be reached is
# exit 1 with what to check, a user moatd does not accept too, usage is
# exit 2.

. "$(dirname "$0")/lib.sh"

mt_init
mt_run_need
mt_world
STATUS="$MOAT status"

mkdir -p "$MT_T/adm"
ADM=$MT_T/adm/admin.sock
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_conf_set "$conf" admin "{\"address\": \"unix:$ADM\"}"
mt_moatd_start "$conf"

for s in s1 s2; do
	ip netns add "$MT_TAG-$s" && MT_NSES="$MT_NSES $MT_TAG-$s" &&
	    ip -n "$MT_TAG-$s" link set lo up ||
	    mt_error "cannot create namespace $s"
done
printf 's3cr3t-v4lue-for-status\n' > "$MT_T/api.key"
chmod 600 "$MT_T/api.key"
cat > "$MT_T/p1.json" <<EOF
{ "policy": { "default": "deny",
    "allow_private": ["203.0.113.0/24"],
    "rules": [ { "name": "origin", "action": "allow", "ports": [80],
                 "hosts": ["origin.test"] } ] },
  "secrets": { "API_KEY": { "file": "$MT_T/api.key" } } }
EOF
cat > "$MT_T/p2.json" <<'EOF'
{ "policy": { "default": "deny",
    "allow_private": ["203.0.113.0/24"],
    "rules": [ { "name": "origin", "action": "allow", "ports": [80],
                 "hosts": ["origin.test"] } ] } }
EOF

# status NAME [ARG...]: moat status in the moat namespace; stdout in
# $MT_T/NAME.out, stderr in NAME.err, exit status in RC.
status()
{
	local n=$1
	shift
	mt_in moat $STATUS --moatd "unix:$ADM" "$@" >"$MT_T/$n.out" \
	    2>"$MT_T/$n.err"
	RC=$?
}

# jq-less: one value of `moat status --json`'s output FILE, by a Python
# expression on it (j), e.g. 'sb("s1")["allowed"]'.
jv()
{
	"$MT_PY" - "$1" "$2" <<-'EOF'
	import json, sys
	j = json.load(open(sys.argv[1]))
	def sb(n):
	    return [s for s in j["sandboxes"] if s["sandbox"] == n][0]
	try:
	    print(eval(sys.argv[2]))
	except Exception as e:
	    print("error:%s" % type(e).__name__)
	EOF
}

# --- before any registration ---------------------------------------------
status st0
mt_eq "moat status: exit 0" 0 "$RC" "$MT_T/st0.err"
if grep -q '^moatd [0-9.]* (pid [0-9]*), up [0-9a-z]*, [0-9]* workers\{0,1\}, config ' "$MT_T/st0.out" &&
    grep -qx 'sandboxes: 0 registered, 5 configured' "$MT_T/st0.out" &&
    grep -q '^it-http  *configured ' "$MT_T/st0.out" &&
    grep -qx '    listeners: http 10.200.0.1:3128' "$MT_T/st0.out"; then
	mt_pass "moat status: moatd's block and the configured listeners' sandboxes"
else
	mt_fail "moat status before any registration" "$MT_T/st0.out"
fi

# --- two attached namespaces ----------------------------------------------
attach()
{
	local n=$1 pol=$2
	shift 2
	mt_bg "$n" moat env MOAT_NETNS="$MOAT_NETNS" "$MOAT" attach -q \
	    --netns "/run/netns/$MT_TAG-$n" --moatd "unix:$ADM" \
	    --policy "$pol" --name "$n" --ready-fd 3 "$@"
}
attach s1 "$MT_T/p1.json" --env-file "$MT_T/s1.env" ||
    mt_error "moat attach s1 did not start"
# s2 in audit mode: what its policy refuses goes through, as a would-deny.
attach s2 "$MT_T/p2.json" --audit-only || mt_error "moat attach s2 did not start"
ph=$(sed -n 's/^API_KEY=//p' "$MT_T/s1.env")
[ -n "$ph" ] || mt_error "no placeholder for API_KEY in s1.env"

status st1 --json
mt_eq "moat status --json: exit 0" 0 "$RC" "$MT_T/st1.err"
mt_eq "stats: two registered, five configured" "2 5" \
    "$(jv "$MT_T/st1.out" '"%d %d" % (j["stats"]["sandboxes"]["registered"], j["stats"]["sandboxes"]["configured"])')" \
    "$MT_T/st1.out"
mt_eq "s1: registered by moat attach (its pid), its own policy" \
    "registered own $MT_RPID_s1" \
    "$(jv "$MT_T/st1.out" '"%s %s %s" % (sb("s1")["kind"], sb("s1")["policy"], sb("s1")["client_pid"])')" \
    "$MT_T/st1.out"
mt_eq "s1: its held listeners" \
    "dns-tcp dns-tcp dns-udp dns-udp http+socks5 socks5 transparent transparent" \
    "$(jv "$MT_T/st1.out" '" ".join(sorted(l["proto"] for l in sb("s1")["listeners"]))')" \
    "$MT_T/st1.out"
mt_eq "s1: the names of its secrets, s2 none" "['API_KEY'] []" \
    "$(jv "$MT_T/st1.out" '"%s %s" % (sb("s1")["secrets"], sb("s2")["secrets"])')" \
    "$MT_T/st1.out"
if grep -qF -- "$ph" "$MT_T/st1.out" || grep -q 's3cr3t-v4lue' "$MT_T/st1.out" ||
    grep -q 'moat-ph-' "$MT_T/st1.out"; then
	mt_fail "moat status shows a placeholder or a secret's value" "$MT_T/st1.out"
else
	mt_pass "moat status --json shows no placeholder and no value"
fi
mt_eq "s1 and s2 start at zero" "0 0 0 0 0 0" \
    "$(jv "$MT_T/st1.out" '"%d %d %d %d %d %d" % (sb("s1")["allowed"], sb("s1")["denied"], sb("s1")["bytes_down"], sb("s2")["allowed"], sb("s2")["denied"], sb("s1")["connections"])')" \
    "$MT_T/st1.out"

# --- traffic: exactly these decisions -------------------------------------
# s1: three allowed transparent connections, two refused; s2: one its
# policy refuses, let through by audit mode.
for i in 1 2 3; do
	timeout -k 2 30 ip netns exec "$MT_TAG-s1" $MT_PROBE --tag a$i raw \
	    203.0.113.10 80 origin.test
done >"$MT_T/s1-traffic.out" 2>&1
for i in 1 2; do
	timeout -k 2 30 ip netns exec "$MT_TAG-s1" $MT_PROBE --tag d$i raw \
	    203.0.113.12 80 other.test
done >>"$MT_T/s1-traffic.out" 2>&1
timeout -k 2 30 ip netns exec "$MT_TAG-s2" $MT_PROBE --tag d raw \
    203.0.113.12 80 other.test >"$MT_T/s2-traffic.out" 2>&1
mt_eq "s1's traffic: three allowed, two refused" "200 200 200 none none" \
    "$(sed -n 's/^[ad][0-9]_status=//p' "$MT_T/s1-traffic.out" | tr '\n' ' ' | sed 's/ $//')" \
    "$MT_T/s1-traffic.out"

# counted: the closed tunnels' bytes come with their close lines.
counted()
{
	status st2 --json
	got=$(jv "$MT_T/st2.out" '"%d %d %d %d %d %d %d" % (sb("s1")["allowed"], sb("s1")["denied"], sb("s1")["would_deny"], sb("s2")["allowed"], sb("s2")["denied"], sb("s2")["would_deny"], sb("s1")["connections"])')
	down=$(jv "$MT_T/st2.out" 'sb("s1")["bytes_down"]')
	up=$(jv "$MT_T/st2.out" 'sb("s1")["bytes_up"]')
	[ "$got" = "3 2 0 1 0 1 0" ] && [ "${down:-0}" -gt 0 ] 2>/dev/null
}
mt_wait_for 5 counted
mt_eq "the counters moved by the decisions made (s1 allowed denied would-deny, s2 the same, s1 open)" \
    "3 2 0 1 0 1 0" "$got" "$MT_T/st2.out"
if [ "${down:-0}" -gt 0 ] 2>/dev/null && [ "${up:-0}" -gt 0 ] 2>/dev/null; then
	mt_pass "s1's bytes up ($up) and down ($down) after its tunnels closed"
else
	mt_fail "s1's bytes: up '$up' down '$down'" "$MT_T/st2.out"
fi
# A packet its table drops (UDP elsewhere) counts once moatd reads its
# drop log.
timeout -k 2 30 ip netns exec "$MT_TAG-s1" $MT_PROBE --tag u udp \
    203.0.113.10 9999 >"$MT_T/s1-udp.out" 2>&1
dropped() { status st2d --json; drp=$(jv "$MT_T/st2d.out" 'sb("s1")["dropped_packets"]'); [ "${drp:-0}" -ge 1 ] 2>/dev/null; }
if mt_wait_for 5 dropped; then
	mt_pass "s1's dropped packets are counted ($drp)"
else
	mt_fail "s1's dropped packets: '$drp'" "$MT_T/st2d.out" "$MT_T/s1-udp.out"
fi
status st2t
if grep -q '^s1  *registered  *[0-9a-z]*  *0  *3  *2  ' "$MT_T/st2t.out" &&
    grep -qx '    secrets: API_KEY' "$MT_T/st2t.out" &&
    grep -q "registered by pid $MT_RPID_s1, $drp packets\{0,1\} dropped\$" "$MT_T/st2t.out"; then
	mt_pass "moat status: s1's row, its secrets, who registered it, its drops"
else
	mt_fail "moat status: s1's row" "$MT_T/st2t.out"
fi

# An open tunnel counts in its sandbox's open connections and moatd's.
mt_bg hold - ip netns exec "$MT_TAG-s1" "$MT_PY" "$MT_HELPERS/hold.py" \
    --proxy 127.0.0.1:3128 --target origin.test:80 --count 1 \
    --out "$MT_T/hold.lines" --lifetime 30 --ready-fd 3 ||
    mt_error "hold.py did not hold a tunnel"
held_open()
{
	status st3 --json
	open=$(jv "$MT_T/st3.out" '"%d %d" % (sb("s1")["connections"], j["stats"]["connections"]["open"])')
	[ "${open%% *}" = 1 ] && [ "${open##* }" -ge 1 ] 2>/dev/null
}
if mt_wait_for 5 held_open; then
	mt_pass "a held tunnel counts as open (s1, moatd: $open)"
else
	mt_fail "a held tunnel: open connections '$open'" "$MT_T/st3.out" "$MT_T/hold.lines"
fi
kill -TERM "$MT_RPID_hold" 2>/dev/null
mt_wait_exit "$MT_PID_hold"
closed() { status st3 --json; open=$(jv "$MT_T/st3.out" 'sb("s1")["connections"]'); [ "$open" = 0 ]; }
mt_wait_for 5 closed
mt_eq "... and no longer once it closed" 0 "$open" "$MT_T/st3.out"

# --- reloads ----------------------------------------------------------------
reloads() { status st4 --json; r=$(jv "$MT_T/st4.out" '"%d %d" % (j["stats"]["reloads"]["done"], j["stats"]["reloads"]["refused"])'); [ "$r" = "$1" ]; }
# The pid stats gives is moatd's (the one to signal, whatever wraps it).
mpid=$(jv "$MT_T/st1.out" 'j["stats"]["moatd"]["pid"]')
mt_eq "stats: moatd's pid" yes "$([ -r "/proc/$mpid/exe" ] &&
    [ "$(readlink "/proc/$mpid/exe")" = "$(readlink -f "$MOATD")" ] ||
    [ "$(cat "/proc/$mpid/comm" 2>/dev/null)" = moatd ] && echo yes)"
kill -HUP "$mpid"
mt_wait_for 5 reloads "1 0"
mt_eq "a reload is counted as done" "1 0" "$r" "$MT_T/moatd.err"
cp "$conf" "$conf.good"
echo '{ "listen": [' > "$conf"
kill -HUP "$mpid"
mt_wait_for 5 reloads "1 1"
mt_eq "a reload of a broken config is counted as refused" "1 1" "$r" "$MT_T/moatd.err"
cp "$conf.good" "$conf"

# --- who may ask -------------------------------------------------------------
out=$(timeout -k 2 30 ip netns exec "$MT_TAG-s1" $STATUS --moatd "unix:$ADM" 2>&1)
rc=$?
case "$rc $out" in
"1 moat status: moatd: stats refused: the client is inside the network namespace of sandbox s1")
	mt_pass "moat status from inside s1 is refused (exit 1)" ;;
*)	mt_fail "moat status from inside s1: $rc '$out'" "$MT_T/moatd.err" ;;
esac
chmod 755 "$MT_T" "$MT_T/adm"
out=$(mt_in moat $MT_AS_NOBODY $STATUS --moatd "unix:$ADM" 2>&1)
rc=$?
case "$rc $out" in
"1 "*"Permission denied: only root and moatd's own user may use its admin socket"*)
	mt_pass "moat status as a user moatd does not accept: exit 1, says who may" ;;
*)	mt_fail "moat status as nobody: $rc '$out'" ;;
esac
out=$(mt_in moat $STATUS --moatd "$MT_T/adm/none.sock" 2>&1)
rc=$?
case "$rc $out" in
"1 "*"No such file or directory: is moatd running, with \"admin\""*)
	mt_pass "moat status without a moatd there: exit 1, says what to check" ;;
*)	mt_fail "moat status, no socket: $rc '$out'" ;;
esac
out=$($MOAT status --bogus 2>&1)
mt_eq "moat status --bogus: usage, exit 2" 2 "$?"
out=$($MOAT status extra 2>&1)
mt_eq "moat status with an argument: usage, exit 2" 2 "$?"

# --- a detached sandbox leaves the list ------------------------------------
kill -TERM "$MT_RPID_s2"
mt_wait_exit "$MT_PID_s2"
mt_eq "moat attach s2 detached" 0 "$MT_WAIT_RC" "$MT_T/s2.err"
status st5 --json
mt_eq "after s2 detached: one registered, s2 not listed" "1 False" \
    "$(jv "$MT_T/st5.out" '"%d %s" % (j["stats"]["sandboxes"]["registered"], any(s["sandbox"] == "s2" for s in j["sandboxes"]))')" \
    "$MT_T/st5.out"
kill -TERM "$MT_RPID_s1"
mt_wait_exit "$MT_PID_s1"

mt_finish
