#!/bin/bash
# scale.sh - a platform's moatd: many sandboxes on one moatd, and large
# policies.  The figures of BENCHMARKS.md ("Scale").
#
#   bash scripts/scale.sh [sandboxes|policy|all] [options]
#
#   sandboxes  moatd with an admin socket and COUNT sandboxes registered
#              on it, each with its own policy and listener
#              (tests/integration/helpers/scale.py): memory per idle
#              sandbox, register and unregister latency (median, p99),
#              the cost of a decision with COUNT sandboxes against 1
#   policy     load time and memory of a policy with one deny rule of
#              1,000,000 names and of one with 100,000 one-name rules
#              (scripts/scale-policy.py, moatd --check)
#   all        both (default)
#
# Options:
#   --count N       sandboxes (default 1000)
#   --requests N    requests per decision measurement (default 2000;
#                   200 under --callgrind)
#   --conns each|one  one admin connection per sandbox, as moat attach
#                   makes (default), or all on one
#   --callgrind     run moatd under callgrind (instrumentation off but
#                   for the requests): decision cost in instructions,
#                   independent of the machine's load
#   --tls           moatd has a CA (moat ca init): each register answer
#                   carries the trust bundle (the system's roots, some
#                   200 KiB), as a platform that intercepts TLS has it
#   --runs K        policy loads per config (default 3, medians)
#
# The sandboxes part runs in a network namespace of its own (unshare -n,
# loopback only): moatd, an origin on 127.0.0.1:80 (origin.py) and the
# sandboxes' listeners on 127.0.0.1; nothing leaves it.  Needs root (the
# namespace).  moatd comes from MOATD or build/dev (configure and make
# first); every step is bounded (scale.py: 20 s per answer, the whole
# run by timeout(1): 30 minutes).

set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
what=all
count=1000
requests=""
conns=each
callgrind=""
tls=""
runs=3
while [ $# -gt 0 ]; do
	case $1 in
	sandboxes|policy|all) what=$1 ;;
	--count) count=$2; shift ;;
	--requests) requests=$2; shift ;;
	--conns) conns=$2; shift ;;
	--callgrind) callgrind=1 ;;
	--tls) tls=1 ;;
	--runs) runs=$2; shift ;;
	-h|--help) sed -n '2,35p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "scale.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
	shift
done
[ -n "$requests" ] || requests=$([ -n "$callgrind" ] && echo 200 || echo 2000)
MOATD=${MOATD:-$here/build/dev/proxy/moatd}
[ -x "$MOATD" ] || { echo "scale.sh: no moatd at $MOATD (set MOATD)" >&2; exit 1; }
helpers=$here/tests/integration/helpers

[ "${SCALE_IN_NS:-}" = 1 ] || echo "# scale.sh $what: $(date -u +%FT%TZ), commit" \
    "$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')," \
    "load average $(cut -d' ' -f1-3 /proc/loadavg)"

if [ "$what" = policy ] || [ "$what" = all ]; then
	MOATD=$MOATD timeout 1800 python3 "$here/scripts/scale-policy.py" \
	    --runs "$runs"
fi
[ "$what" = policy ] && exit 0

if [ "${SCALE_IN_NS:-}" != 1 ]; then
	[ "$(id -u)" -eq 0 ] || { echo "scale.sh: needs root (unshare -n)" >&2; exit 1; }
	args=(sandboxes --count "$count" --requests "$requests" --conns "$conns")
	[ -n "$callgrind" ] && args+=(--callgrind)
	[ -n "$tls" ] && args+=(--tls)
	SCALE_IN_NS=1 MOATD=$MOATD exec timeout -k 5 1800 unshare -n -- \
	    bash "$0" "${args[@]}"
fi

# --- inside the namespace -----------------------------------------------------
ip link set lo up
T=$(mktemp -d /tmp/moat-scale.XXXXXX)
pids=""
cleanup()
{
	local p
	for p in $pids; do
		kill -TERM "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT

# wait_ready FIFO PID: "ready" on FIFO within 60 s, while PID lives.
wait_ready()
{
	local line i fd
	exec {fd}<>"$1"
	for ((i = 0; i < 600; i++)); do
		if read -r -t 0.1 -u "$fd" line && [ "$line" = ready ]; then
			exec {fd}<&-
			return 0
		fi
		kill -0 "$2" 2>/dev/null || break
	done
	exec {fd}<&-
	return 1
}

mkfifo "$T/origin.ready" "$T/moatd.ready"
python3 "$helpers/origin.py" --listen 127.0.0.1:80 --log /dev/null \
    --lifetime 1800 --ready-fd 3 3>"$T/origin.ready" >"$T/origin.out" \
    2>&1 &
pids="$pids $!"
wait_ready "$T/origin.ready" $! || { echo "scale.sh: origin.py did not start" >&2; exit 1; }

tlsconf=""
if [ -n "$tls" ]; then
	"${MOAT:-$(dirname "$MOATD")/../launcher/moat}" ca init "$T/ca" \
	    >/dev/null || { echo "scale.sh: moat ca init failed" >&2; exit 1; }
	tlsconf=", \"tls\": {\"ca_cert\": \"$T/ca/ca.crt\", \"ca_key\": \"$T/ca/ca.key\"}"
fi
cat >"$T/moatd.json" <<EOF
{
  "listen": [],
  "admin": {"address": "unix:$T/admin.sock"},
  "policy": {"default": "deny"},
  "audit": {"path": "$T/audit.log"}$tlsconf
}
EOF
cmd=("$MOATD" -c "$T/moatd.json" --ready-fd 3)
if [ -n "$callgrind" ]; then
	command -v valgrind >/dev/null || { echo "scale.sh: --callgrind needs valgrind" >&2; exit 1; }
	cmd=(valgrind -q --tool=callgrind --instr-atstart=no
	    "--callgrind-out-file=$T/callgrind.out.%p" "${cmd[@]}")
fi
"${cmd[@]}" 3>"$T/moatd.ready" 2>"$T/moatd.err" &
mpid=$!
pids="$pids $mpid"
wait_ready "$T/moatd.ready" "$mpid" || {
	echo "scale.sh: moatd did not start:" >&2
	tail -n 20 "$T/moatd.err" >&2
	exit 1
}
hargs=(--admin "$T/admin.sock" --moatd-pid "$mpid" --origin 127.0.0.1:80
    --count "$count" --requests "$requests" --conns "$conns" --check)
[ -n "$callgrind" ] && hargs+=(--callgrind "$T")
rc=0
python3 "$helpers/scale.py" "${hargs[@]}" || rc=$?
echo "moatd_workers=$(ls /proc/"$mpid"/task | wc -l) threads"
echo "load_average_after=$(cut -d' ' -f1-3 /proc/loadavg)"
exit $rc
