#!/bin/bash
# demo.sh - moat in one minute, on a tiny internet of its own.
#
# Usage (as root, after building):  scripts/demo.sh
#   MOATD=path/to/moatd or MOAT_BUILDDIR=build-dir to pick the binary.
#
#   moat namespace                               net namespace ("internet")
#  +-------------------------------------+      +-----------------------------+
#  | curl -x http://127.0.0.1:3128 ...   |      | origin.py  203.0.113.10:80  |
#  |   (the sandbox's client)            |      |   "deb.debian.org"          |
#  | moatd, embedded default config:     | veth | dns.py     203.0.113.53     |
#  |   listens on 127.0.0.1:3128,        |------|   deb.debian.org ->         |
#  |   allows deb.debian.org:80/443, ... |      |     203.0.113.10            |
#  | 203.0.113.1                         |      +-----------------------------+
#  | /etc/resolv.conf -> 203.0.113.53    |
#  +-------------------------------------+
#
# Nothing leaves this machine: the two namespaces only have the veth link
# between them, and the demo's "internet" is 203.0.113.0/24 (TEST-NET-3).
# moat denies that documentation range by default, so moatd runs with
# --allow-private 203.0.113.0/24.  One request is allowed, two are denied,
# and the audit lines moatd wrote for them are shown.  Everything is
# removed at the end, also on Ctrl-C.

set -u

SRC=$(cd "$(dirname "$0")/.." && pwd)
HELPERS=$SRC/tests/integration/helpers
LIFETIME=60		# seconds any background process of the demo may live
READY_STEPS=100		# x 0.1 s to wait for a server to say "ready"

die()
{
	echo "demo.sh: $*" >&2
	exit 1
}

find_moatd()
{
	local c
	for c in "${MOATD:-}" "${MOAT_BUILDDIR:+$MOAT_BUILDDIR/proxy/moatd}" \
	    "$PWD/proxy/moatd" "$SRC/proxy/moatd" "$(command -v moatd)"; do
		if [ -n "$c" ] && [ -x "$c" ]; then
			echo "$c"
			return 0
		fi
	done
	return 1
}

[ "$(id -u)" -eq 0 ] || die "needs root (it creates network namespaces); try: sudo $0"
for t in ip curl python3 timeout; do
	command -v "$t" >/dev/null 2>&1 || die "needs $t (scripts/deps.sh installs it)"
done
MOATD=$(find_moatd) || die "moatd not found: build it first, or set MOATD=path/to/moatd"
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3

TAG=moatdemo$$
NS_MOAT=$TAG-moat
NS_NET=$TAG-net
T=$(mktemp -d "${TMPDIR:-/tmp}/moat-demo.XXXXXX") || die "mktemp failed"
PIDS=""

cleanup()
{
	local p
	trap - EXIT INT TERM
	for p in $PIDS; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in $PIDS; do
		wait "$p" 2>/dev/null
	done
	ip netns del "$NS_MOAT" 2>/dev/null
	ip netns del "$NS_NET" 2>/dev/null
	rm -f "/etc/netns/$NS_MOAT/resolv.conf"
	rmdir "/etc/netns/$NS_MOAT" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start NAME NS CMD...: runs CMD under timeout in NS, waits for "ready" on
# its fd 3.
start()
{
	local name=$1 ns=$2 fd i line part="" pid
	shift 2
	mkfifo "$T/$name.ready" || return 1
	exec {fd}<>"$T/$name.ready"
	timeout -k 2 "$LIFETIME" ip netns exec "$ns" "$@" \
	    3>"$T/$name.ready" {fd}<&- >"$T/$name.out" 2>"$T/$name.log" &
	pid=$!
	PIDS="$PIDS $pid"
	# A read that times out keeps a partial line in $line: carry it over.
	for ((i = 0; i < READY_STEPS; i++)); do
		if read -r -t 0.1 -u "$fd" line; then
			[ "$part$line" = ready ] && return 0
			part=""
		else
			part=$part$line
		fi
		kill -0 "$pid" 2>/dev/null || break
	done
	echo "demo.sh: $name did not start:" >&2
	tail -n 20 "$T/$name.log" >&2
	return 1
}

say()
{
	if [ -t 1 ]; then
		printf '\n\033[1m== %s\033[0m\n' "$*"
	else
		printf '\n== %s\n' "$*"
	fi
}

# client ARGS...: curl as the sandbox would run it, through moatd.
client()
{
	echo "\$ curl -x http://127.0.0.1:3128 $*"
	timeout 20 ip netns exec "$NS_MOAT" curl -sS --max-time 10 -i \
	    -x http://127.0.0.1:3128 "$@" 2>&1 | tr -d '\r' | sed 's/^/  /'
}

say "building the demo's internet (namespaces $NS_MOAT, $NS_NET)"
ip netns add "$NS_MOAT" && ip netns add "$NS_NET" &&
ip link add n0 netns "$NS_MOAT" type veth peer name eth0 netns "$NS_NET" &&
ip -n "$NS_MOAT" addr add 203.0.113.1/24 dev n0 &&
ip -n "$NS_NET" addr add 203.0.113.10/24 dev eth0 &&
ip -n "$NS_NET" addr add 203.0.113.53/24 dev eth0 &&
ip -n "$NS_MOAT" link set lo up && ip -n "$NS_NET" link set lo up &&
ip -n "$NS_MOAT" link set n0 up && ip -n "$NS_NET" link set eth0 up ||
    die "cannot build the namespaces"
# `ip netns exec` mounts this file over /etc/resolv.conf: moatd, which
# uses the system's resolver with the default config, asks the demo's DNS.
mkdir -p "/etc/netns/$NS_MOAT" &&
echo "nameserver 203.0.113.53" > "/etc/netns/$NS_MOAT/resolv.conf" ||
    die "cannot write /etc/netns/$NS_MOAT/resolv.conf"
cat > "$T/zone.json" <<'EOF'
{"deb.debian.org": [{"type": "A", "data": "203.0.113.10", "ttl": 60}]}
EOF
start dns "$NS_NET" "$PY" "$HELPERS/dns.py" --zone "$T/zone.json" \
    --listen 203.0.113.53 --log "$T/dns.jsonl" --lifetime "$LIFETIME" \
    --ready-fd 3 || exit 1
start origin "$NS_NET" "$PY" "$HELPERS/origin.py" --name deb.debian.org \
    --listen 203.0.113.10:80 --log "$T/origin.jsonl" \
    --lifetime "$LIFETIME" --ready-fd 3 \
    --banner "Hello from \"deb.debian.org\" (the demo's origin, 203.0.113.10)" ||
    exit 1
echo "origin 203.0.113.10:80 and DNS 203.0.113.53 (deb.debian.org -> 203.0.113.10) are up"

say "starting moatd on its embedded default config"
echo "\$ moatd --allow-private 203.0.113.0/24"
echo "  (the demo's internet is TEST-NET-3, a documentation range moat denies"
echo "   by default; --allow-private opens it for this demo only)"
start moatd "$NS_MOAT" "$MOATD" --allow-private 203.0.113.0/24 \
    --ready-fd 3 || exit 1
MOATD_PID=${PIDS##* }
grep -v '^{' "$T/moatd.log" | sed 's/^/  /'

say "1. allowed: deb.debian.org on port 80 (rule \"debian\")"
client http://deb.debian.org/
say "2. denied: the cloud metadata address"
client http://169.254.169.254/latest/meta-data/
say "3. denied: a host no rule allows, through CONNECT"
echo "\$ curl -x http://127.0.0.1:3128 https://example.com/"
timeout 20 ip netns exec "$NS_MOAT" curl -sS --max-time 10 -D - -o /dev/null \
    -x http://127.0.0.1:3128 https://example.com/ 2>&1 | tr -d '\r' |
    sed 's/^/  /'

say "stopping moatd (SIGTERM: it drains, writes every audit line, exits)"
# Its audit writer batches lines for a few milliseconds; after the stop
# every line is out.
kill -TERM "$MOATD_PID" 2>/dev/null
wait "$MOATD_PID" 2>/dev/null
grep -v '^{' "$T/moatd.log" | tail -n +2 | sed 's/^/  /'

say "what moatd wrote to its audit log (one JSON line per decision)"
# The default config sends audit lines to stderr ("audit": {"path": "-"}).
grep '^{' "$T/moatd.log" | sed 's/^/  /'
echo
echo "The origin received $(grep -c '"event": "request"' "$T/origin.jsonl" 2>/dev/null) request(s) in all: only the allowed one."
say "cleaning up"
