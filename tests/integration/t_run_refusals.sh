#!/bin/bash
# t_run_refusals.sh - refusals are visible: `moat run` and `moat attach`
# print one short line per refused request, tunnel and DNS query on
# stderr (what, reason, rule, the `moat explain` command that tells
# more), at most 10 a second and then "N more refusals not shown", and a
# summary at exit; -v adds allowed traffic, -q prints nothing.  They read
# it from moatd's admin op "watch", which a client that never reads does
# not slow down nor make grow.
#
#   moat namespace
#   +------------------------------------------------------------------+
#   | moat run (private moatd, --admin-fd) -> sandbox: curl, dnsq, loop  |
#   | moatd (the test's: listeners of mt_conf, admin socket)             |
#   |   <- moat attach --netns att      <- watcher.py (reads nothing)    |
#   +------------------------------------------------------------------+
#   att: a0 192.0.2.2 -- a1 (net)          cli: denyloop.py -> :3128
#   net: origin.py 203.0.113.10, dns.py 203.0.113.53
#
# Checks: each kind of refusal has its line with reason and rule, and
# the hint it prints judges the same; an allowed request prints nothing
# (and does with -v); -q prints nothing; 500 refusals in a loop print at
# most 10 lines per window, one "more" line per window, and the summary
# counts all 500; the same through moat attach, which a watch from
# inside the attached namespace cannot read; a watcher that never reads
# leaves moatd as fast and as small as without it, and is told how many
# lines it missed, exactly.

. "$(dirname "$0")/lib.sh"

mt_init
mt_run_need script
mt_world
POL=$MT_T/policy.json
cat > "$POL" <<'EOF'
{
  "policy": {
    "default": "deny",
    "allow_private": ["203.0.113.0/24", "2001:db8::/32"],
    "rules": [
      {"name": "origin", "action": "allow", "ports": [80],
       "hosts": ["origin.test"], "methods": ["GET"]},
      {"name": "no-paste", "action": "deny", "hosts": ["paste.test"]}
    ]
  }
}
EOF
chmod 644 "$POL"
LOOP="/usr/bin/python3 $MT_HELPERS/denyloop.py"
WATCHER="/usr/bin/python3 $MT_HELPERS/watcher.py"

cat > "$MT_T/work.sh" <<EOF
#!/bin/sh
for u in http://origin.test/ http://other.test/x http://paste.test/; do
	curl -sS -m 8 -o /dev/null -w "get=%{http_code}\n" "\$u"
done
curl -sS -m 8 -o /dev/null -w "post=%{http_code}\n" -X POST \
    http://origin.test/upload
curl -sS -m 8 -o /dev/null -w "tls=%{http_connect}\n" https://other.test/ \
    2>/dev/null
/usr/bin/python3 $MT_HELPERS/dnsq.py 127.0.0.1 exfil.test | head -n 1
EOF
chmod 755 "$MT_T/work.sh"

# has NAME TEXT: NAME.err has a line with TEXT (fixed string).
has()
{
	grep -qF -- "$2" "$MT_T/$1.err"
}

# expect MESSAGE NAME TEXT: a check that NAME.err has TEXT.
expect()
{
	if has "$2" "$3"; then
		mt_pass "$1"
	else
		mt_fail "$1: no '$3' on stderr" "$MT_T/$2.err"
	fi
}

# --- moat run: each kind of refusal --------------------------------------
mt_moat_run root one --resolver 203.0.113.53 --policy "$POL" -- "$MT_T/work.sh"
mt_eq "moat run: the workload's own output is untouched" \
    "get=200 get=403 get=403 post=403 tls=403 rcode=NXDOMAIN" \
    "$(tr '\n' ' ' < "$MT_T/one.out" | sed 's/ $//')" "$MT_T/one.err"
L="moat explain -c $POL"
expect "a refused POST: method, rule, and the explain command" one \
    "denied POST http://origin.test/upload (method, rule origin) -> $L -m POST http://origin.test/upload"
expect "a request no rule allows: no-rule" one \
    "denied GET http://other.test/x (no-rule) -> $L http://other.test/"
expect "a deny rule: its name" one \
    "denied GET http://paste.test/ (denied-by-rule, rule no-paste)"
expect "a refused tunnel: CONNECT host:port" one \
    "denied CONNECT other.test:443 (no-rule) -> $L other.test:443"
expect "a refused DNS query: the name, the type, why" one \
    "denied DNS exfil.test A (dns-denied: no-rule)"
n=$(grep -cE '^moat: [0-9]{2}:[0-9]{2}:[0-9]{2} denied ' "$MT_T/one.err")
mt_eq "one line per refusal, each with its time" 5 "$n" "$MT_T/one.err"
mt_eq "the allowed request prints nothing" 0 \
    "$(grep -c 'origin.test/ \|allowed' "$MT_T/one.err")" "$MT_T/one.err"
sum=$(grep '^moat: 5 refusals (' "$MT_T/one.err")
case $sum in
*"no-rule 2"*"denied-by-rule 1"*"; see moat run --audit FILE or moat explain" |\
*"no-rule 2"*"dns-denied 1"*"; see moat run --audit FILE or moat explain")
	mt_pass "the summary at exit: $sum" ;;
*)	mt_fail "no summary of 5 refusals: '$sum'" "$MT_T/one.err" ;;
esac
for r in method denied-by-rule dns-denied; do
	echo "$sum" | grep -q "$r 1" || mt_fail "the summary lacks '$r 1'"
done
# About 120 columns: a hint that needs the whole URL (a method or path
# refused) may pass them.  (The -c FILE of the hint is this test's long
# temporary path: counted as a short one.)
long=$(sed "s|-c $POL |-c policy.json |" "$MT_T/one.err" |
    awk 'length($0) > (/ -m POST / ? 140 : 130)' | grep -c '^moat: ')
mt_eq "lines stay short (about 120 columns)" 0 "$long" "$MT_T/one.err"
# The hint judges as moatd did: explain says deny, for the same reason.
"$MOAT" explain -c "$POL" -m POST http://origin.test/upload \
    >"$MT_T/explain.out" 2>&1
rc=$?
if [ "$rc" = 1 ] && grep -q 'method' "$MT_T/explain.out"; then
	mt_pass "the printed explain command says deny (method) too"
else
	mt_fail "moat explain of the hint: rc $rc" "$MT_T/explain.out"
fi

# --- -v: allowed traffic too; -q: nothing ---------------------------------
mt_moat_run root verbose -v --resolver 203.0.113.53 --policy "$POL" -- \
    "$MT_T/work.sh"
expect "-v: the allowed request has its line" verbose \
    "allowed GET http://origin.test/ (rule origin)"
expect "-v: ... and the refusals theirs" verbose \
    "denied GET http://other.test/x (no-rule)"
mt_moat_run root quiet -q --resolver 203.0.113.53 --policy "$POL" -- \
    "$MT_T/work.sh"
mt_eq "-q: the workload ran as before" "get=200 get=403" \
    "$(head -n 2 "$MT_T/quiet.out" | tr '\n' ' ' | sed 's/ $//')"
mt_eq "-q: no line of moat's on stderr" 0 "$(grep -c '^moat: ' "$MT_T/quiet.err")" \
    "$MT_T/quiet.err"

# --- no secret in a line ------------------------------------------------
# The workload sends its secret's placeholder in a refused request: the
# line, like the audit line it comes from, names the secret instead.
"$MT_PY" - "$POL" "$MT_T/secret.json" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
p["secrets"] = {"API_KEY": {"env": "MT_REFUSALS_KEY"}}
json.dump(p, open(sys.argv[2], "w"))
EOF
export MT_REFUSALS_KEY=s3cr3t-v4lue-0123456789
mt_moat_run root secret --resolver 203.0.113.53 --policy "$MT_T/secret.json" -- \
    sh -c 'curl -sS -m 8 -o /dev/null "http://other.test/k?key=$API_KEY";
	echo "ph=$API_KEY"'
unset MT_REFUSALS_KEY
ph=$(mt_out secret ph)
expect "a placeholder in a refused request: the line names the secret" secret \
    "denied GET http://other.test/k?key=[secret:API_KEY] (no-rule)"
if [ -n "$ph" ] && ! grep -qF -- "$ph" "$MT_T/secret.err" &&
    ! grep -qF s3cr3t-v4lue "$MT_T/secret.err"; then
	mt_pass "... and neither the placeholder nor the value is on stderr"
else
	mt_fail "a secret's placeholder ('$ph') or value on stderr" "$MT_T/secret.err"
fi

# --- a pseudo-terminal: lines of their own, raw mode's "\r\n" ------------
# The workload leaves its output mid-line while its request is refused
# (and for 2 s after, for the line to come then); the line must start on
# a line of its own, and end in "\r\n" (the terminal is raw meanwhile: a
# bare "\n" would not return the cursor).  Whenever the line comes, it
# never follows "half" on the same line.
timeout -k 2 60 script -qec "ip netns exec $(mt_ns moat) env MOAT_MOATD=$MOATD \
    MOAT_NETNS=$MOAT_NETNS $MOAT run --resolver 203.0.113.53 --policy $POL -- \
    sh -c 'printf half; curl -sS -m 8 -o /dev/null http://other.test/x; \
    sleep 2; echo rest'" /dev/null >"$MT_T/tty.out" 2>&1
tty=$("$MT_PY" - "$MT_T/tty.out" <<'EOF'
import re, sys
t = open(sys.argv[1], "rb").read()
m = list(re.finditer(rb"moat: \d\d:\d\d:\d\d denied GET "
                     rb"http://other\.test/x \(no-rule\)[^\r\n]*", t))
if len(m) != 1 or b"half" not in t or b"rest" not in t:
    print("missing")
elif t[m[0].start() - 1:m[0].start()] != b"\n" or \
        t[m[0].end():m[0].end() + 2] != b"\r\n":
    print("bad")
else:
    print("mid-line" if t[:m[0].start()].endswith(b"half\r\n") else "after")
EOF
)
case $tty in
mid-line|after)
	mt_pass "pty: the line stands on its own, CR LF-ended (it came $tty)" ;;
*)	mt_fail "pty: the refusal line in the terminal: $tty" "$MT_T/tty.out" ;;
esac

# check_loop NAME TOTAL SECONDS LINE [SUM REASONS]: NAME.err after TOTAL
# refusals in a loop that took SECONDS (whole, rounded up), each printed
# as LINE: at most 10 lines per window, a "more" line per window, every
# refusal accounted for, the summary (of SUM refusals with REASONS,
# default the loop's alone).
check_loop()
{
	local n=$1 total=$2 secs=$3 line=$4 all=${5:-$2} shown more nmore sum
	local dropped reasons=${6:-"no-rule $2"}
	shown=$(grep -cF -- "$line" "$MT_T/$n.err")
	nmore=$(grep -c '^moat: [0-9]* more refusals not shown$' "$MT_T/$n.err")
	more=$(sed -n 's/^moat: \([0-9]*\) more refusals not shown$/\1/p' \
	    "$MT_T/$n.err" | awk '{ s += $1 } END { print s + 0 }')
	dropped=$(sed -n 's/.* and \([0-9]*\) lines\{0,1\} moatd dropped.*/\1/p' \
	    "$MT_T/$n.err")
	if [ "$shown" -ge 10 ] && [ "$shown" -le $((10 * (nmore + 1))) ] &&
	    [ "$shown" -le $((10 * (secs + 1))) ]; then
		mt_pass "$n: $total refusals in ${secs}s: $shown lines, $nmore 'more' lines"
	else
		mt_fail "$n: $shown lines and $nmore 'more' lines for $total refusals in ${secs}s" \
		    "$MT_T/$n.err"
	fi
	mt_eq "$n: every refusal shown or counted" "$total" \
	    "$((shown + more + ${dropped:-0}))" "$MT_T/$n.err"
	sum=$(grep "^moat: [0-9]* refusals" "$MT_T/$n.err")
	case $sum in
	"moat: $all refusals ($reasons)"*)
		mt_pass "$n: the summary counts all $all: $sum" ;;
	"moat: $((all - ${dropped:-0})) refusals ("*")"*" and ${dropped:-x} line"*)
		mt_pass "$n: the summary counts all, $dropped not received: $sum" ;;
	*)	mt_fail "$n: summary '$sum'" "$MT_T/$n.err" ;;
	esac
}

# --- a loop of 500 refusals ------------------------------------------------
t0=$(date +%s%N)
mt_moat_run root loop --resolver 203.0.113.53 --policy "$POL" -- \
    $LOOP --proxy 127.0.0.1 3128 other.test 500
secs=$(( ($(date +%s%N) - t0 + 999999999) / 1000000000 ))
mt_eq "the loop: 500 requests refused" "done=500 statuses=403:500" \
    "$(cut -d' ' -f2-3 "$MT_T/loop.out")" "$MT_T/loop.out" "$MT_T/loop.err"
check_loop loop 500 "$secs" " denied GET http://other.test/r"

# --- moat attach, against a shared moatd ------------------------------------
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
ADM=$MT_T/adm/admin.sock
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_conf_set "$conf" admin "{\"address\": \"unix:$ADM\"}"
mt_moatd_start "$conf"

# attach NAME [OPTION...]: moat attach of att, in the background, ready.
attach()
{
	local n=$1
	shift
	mt_bg "$n" moat env MOAT_NETNS="$MOAT_NETNS" "$MOAT" attach \
	    --netns "/run/netns/$ATT" --moatd "unix:$ADM" --policy "$POL" \
	    --name "$n" --ready-fd 3 "$@"
}

# detach NAME: SIGTERM, and the exit status in MT_WAIT_RC.
detach()
{
	local p=MT_RPID_$1 w=MT_PID_$1
	kill -TERM "${!p}"
	mt_wait_exit "${!w}"
}

if attach att; then
	# A refused transparent connection: closed, and judged at once.
	timeout -k 2 30 ip netns exec "$ATT" $MT_PROBE --tag d raw 203.0.113.12 \
	    80 first.test >"$MT_T/att-one.out" 2>&1
	mt_eq "attach: a refused connection" none \
	    "$(sed -n 's/^d_status=//p' "$MT_T/att-one.out")" "$MT_T/att-one.out"
	# moat attach prints while it runs: wait (bounded) for the line.
	if mt_wait_log "$MT_T/att.err" 'denied TCP first\.test:80 \(no-rule\) -> moat explain -c [^ ]* first\.test:80$' 50
	then
		mt_pass "attach: its line comes while attached: $(grep -m1 denied "$MT_T/att.err")"
	else
		mt_fail "attach: no line for the refused request" "$MT_T/att.err"
	fi
	# The namespace's own processes cannot watch (the register guard).
	w=$(timeout -k 2 30 ip netns exec "$ATT" $WATCHER "$ADM" att once 2>&1)
	case $w in
	"watch_result=refused"*"inside the network namespace of sandbox att"*)
		mt_pass "attach: a watch from inside att is refused" ;;
	*)	mt_fail "attach: a watch from inside att: '$w'" "$MT_T/moatd.err" ;;
	esac
	# The lines above opened a rate window: the loop starts a new one.
	sleep 1.1
	t0=$(date +%s%N)
	timeout -k 2 150 ip netns exec "$ATT" $LOOP 203.0.113.12 80 other.test \
	    500 >"$MT_T/att-loop.out" 2>&1
	secs=$(( ($(date +%s%N) - t0 + 999999999) / 1000000000 ))
	mt_eq "attach: the loop's 500 connections refused" "done=500 statuses=closed:500" \
	    "$(cut -d' ' -f2-3 "$MT_T/att-loop.out")" "$MT_T/att-loop.out"
	detach att
	mt_eq "attach: SIGTERM detaches cleanly" 0 "$MT_WAIT_RC" "$MT_T/att.err"
	# The summary has the refusals before the loop too: the first one,
	# and the watch from inside att.
	check_loop att 500 "$secs" " denied TCP other.test:80 (no-rule)" 502 \
	    "no-rule 501, sandbox-refused 1"
	expect "attach: the watch from inside att has its line" att \
	    "denied admin request (sandbox-refused)"
	mt_eq "attach: the summary ends with where to look" 1 \
	    "$(grep -c "refusals (.*); see moatd's audit log or moat explain$" "$MT_T/att.err")" \
	    "$MT_T/att.err"
else
	mt_fail "moat attach did not get ready" "$MT_T/att.err"
fi
if attach attq -q; then
	timeout -k 2 30 ip netns exec "$ATT" $MT_PROBE --tag d raw 203.0.113.12 \
	    80 other.test >"$MT_T/attq-one.out" 2>&1
	mt_wait_log "$MT_T/audit.log" '"sandbox":"attq".*"verdict":"deny"' 50 ||
	    mt_fail "attach -q: the refusal never reached the audit log" "$MT_T/audit.log"
	detach attq
	mt_eq "attach -q: no line of moat's on stderr" 0 \
	    "$(grep -c '^moat: ' "$MT_T/attq.err")" "$MT_T/attq.err"
else
	mt_fail "moat attach -q did not get ready" "$MT_T/attq.err"
fi

# --- a watcher that never reads -------------------------------------------
# Each refused request of the loop makes one audit line of some 1.1 KiB
# (its path is long): 6000 of them would be 6.6 MiB held for a watcher
# that does not read, were the watch not bounded.
N=6000
# load NAME: the loop through the test moatd's http listener (sandbox
# it-http), its seconds in LOAD_S, moatd's RSS after it in LOAD_KIB.
load()
{
	local t0
	t0=$(date +%s%N)
	timeout -k 2 150 ip netns exec "$(mt_ns cli)" $LOOP --proxy --pathlen 1000 \
	    10.200.0.1 3128 other.test "$N" >"$MT_T/$1.out" 2>&1
	LOAD_MS=$(( ($(date +%s%N) - t0) / 1000000 ))
	LOAD_KIB=$(mt_rss_kib "$MT_MOATD_PID")
	mt_eq "$1: $N requests refused" "done=$N statuses=403:$N" \
	    "$(cut -d' ' -f2-3 "$MT_T/$1.out")" "$MT_T/$1.out"
}
load base
load base2		# the allocator's pools are warm from here on
base_ms=$LOAD_MS
base_kib=$LOAD_KIB
if mt_bg stall - $WATCHER "$ADM" it-http stall "$MT_T/stall.go"; then
	load stalled
	echo "  without a watcher: ${base_ms} ms, RSS ${base_kib} KiB;" \
	    "with one that reads nothing: ${LOAD_MS} ms, RSS ${LOAD_KIB} KiB"
	if [ "$LOAD_MS" -le $((2 * base_ms + 3000)) ]; then
		mt_pass "a stalled watcher does not slow moatd (${LOAD_MS} ms, ${base_ms} ms without)"
	else
		mt_fail "a stalled watcher slowed moatd: ${LOAD_MS} ms, ${base_ms} ms without"
	fi
	if [ "$LOAD_KIB" -le $((base_kib + 3072)) ]; then
		mt_pass "a stalled watcher does not grow moatd (+$((LOAD_KIB - base_kib)) KiB, bound 3 MiB)"
	else
		mt_fail "a stalled watcher grew moatd by $((LOAD_KIB - base_kib)) KiB"
	fi
	mt_moatd_alive && mt_pass "moatd still runs" || mt_fail "moatd died" "$MT_T/moatd.err"
	: > "$MT_T/stall.go"
	mt_wait_exit "$MT_PID_stall" 700
	got=$(cat "$MT_T/stall.out")
	lines=$(echo "$got" | sed -n 's/.*audit_lines=\([0-9]*\).*/\1/p')
	dropped=$(echo "$got" | sed -n 's/.*dropped=\([0-9]*\).*/\1/p')
	case $got in
	*unwatch=ok*) mt_pass "the stalled watcher kept its connection: $got" ;;
	*) mt_fail "the stalled watcher: '$got'" "$MT_T/stall.err" "$MT_T/moatd.err" ;;
	esac
	if [ "${dropped:-0}" -gt 0 ] && [ "$((${lines:-0} + dropped))" = "$N" ]; then
		mt_pass "it got $lines lines and a count of the $dropped it missed: $N"
	else
		mt_fail "lines and drops do not add up to $N: '$got'"
	fi
else
	mt_fail "the watcher did not start" "$MT_T/stall.err"
fi
mt_curl after -x "http://$MT_HTTP" http://origin.test/
mt_eq "moatd serves on" 200 "$MT_CODE" "$MT_T/after.err"

mt_finish
