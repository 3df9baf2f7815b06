#!/bin/bash
# bench.sh - measures moatd beside its peers with the shared harness
# (../shared/bench/compare), the way BENCHMARKS.md reports it.
#
#   bash scripts/bench.sh [default|intercept|all|ceiling|metrics] [compare options...]
#
# Builds moatd (optimised, into build/bench unless MOATD names a binary),
# writes its configs and a CA into a temporary directory, and runs compare
# with moatd as a --custom proxy: "default" runs the default workloads
# (http, bulk, setup, tls, socks, idle), "intercept" the TLS-interception
# family (with --custom-ca), "all" both, one after the other.  "ceiling"
# runs setup, socks and bulk with two more --custom proxies beside moatd:
# scripts/nullproxy.c, a relay that does nothing but relay ("null": read
# and write; "null-splice": splice through pipes), which shows what any
# proxy can reach on this machine with this harness.  "metrics" runs the
# default workloads with no peer and two moatds side by side, "moatd"
# (the default config) and "moatd-metrics" (the same with a "metrics"
# block: a unix socket in the temporary directory, not scraped, as a
# scrape every 15 s costs nothing a run would see), so that the cost of
# the counters is a ratio within one run.  The report
# goes to stdout (compare's --out/--json work as usual); moatd's audit goes
# to /dev/null, as the peers log nothing either.
#
# Traffic stays on loopback: compare starts its own origins.  Needs root
# (compare installs the peers with apt-get on first use).
#
# Environment: BENCH_DIR (the harness, default ../shared/bench beside the
# project), MOATD (a moatd binary to measure instead of building one),
# NULLPROXY (the nullproxy binary, default beside MOATD's build),
# MOATD_BASE (a second moatd, say one built from an older commit: the
# default and ceiling families then measure it too, as "moatd-base", in the
# same run, so a change is judged by a ratio within one run),
# MOATD_METRICS=1 (every family: moatd's configs get the "metrics" block).

set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
bench=${BENCH_DIR:-$here/../shared/bench}
family=${1:-default}
[ $# -gt 0 ] && shift
case $family in
default|intercept|all|ceiling|metrics) ;;
-h|--help)
	sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'
	exit 0 ;;
*)
	echo "bench.sh: unknown family '$family'" \
	    "(default, intercept, all, ceiling, metrics)" >&2
	exit 2 ;;
esac
[ -x "$bench/compare" ] || {
	echo "bench.sh: no harness at $bench/compare (set BENCH_DIR)" >&2
	exit 1
}

if [ -z "${MOATD:-}" ]; then
	echo "bench.sh: building moatd (build/bench, -O2)" >&2
	(cd "$here" && { [ -x configure ] || autoreconf -fi >/dev/null; })
	mkdir -p "$here/build/bench"
	(cd "$here/build/bench" &&
	    { [ -f Makefile ] || "$here/configure" -q CFLAGS="-O2 -g"; } &&
	    make -s -j"$(nproc)" proxy/moatd launcher/moat certs/moat-ca \
	    netns-helper/moat-netns scripts/nullproxy) >&2
	MOATD=$here/build/bench/proxy/moatd
	MOAT=$here/build/bench/launcher/moat
else
	MOAT=${MOAT:-$(dirname "$MOATD")/../launcher/moat}
fi
NULLPROXY=${NULLPROXY:-$(dirname "$MOATD")/../scripts/nullproxy}

tmp=$(mktemp -d /tmp/moat-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"

# metrics_block NAME: the "metrics" key of a config, on a unix socket
# (a loopback address beside the loopback listeners is refused).
metrics_block()
{
	printf '"metrics": {"address": "unix:%s/%s.sock"},' "$tmp" "$1"
}
m_default=""
m_intercept=""
if [ "${MOATD_METRICS:-}" = 1 ]; then
	m_default=$(metrics_block metrics)
	m_intercept=$(metrics_block metrics-intercept)
fi

# The default family: a plain forward proxy, CONNECT and SOCKS5 on one port.
cat > "$tmp/moatd.json" <<EOF
{
  "listen": [{"proto": "http+socks5", "address": "127.0.0.1:14000",
              "sandbox": "bench"}],
  "policy": {
    "allow_private": ["127.0.0.0/8"],
    "rules": [{"name": "bench-origins", "action": "allow",
               "hosts": ["127.0.0.1"], "ports": [18080, 18443, 18444]}]
  },
  $m_default
  "audit": {"path": "/dev/null"},
  "limits": {"connections": 100000, "sandbox_connections": 100000}
}
EOF

# The intercept family: a rule that must see inside TLS; the harness hands
# its origin's CA to the start command in $PXBENCH_ORIGIN_CA.
"$MOAT" ca init "$tmp/ca" >/dev/null
cat > "$tmp/moatd-intercept.sh" <<EOF
#!/bin/sh
set -e
cat > "$tmp/moatd-intercept.json" <<EOC
{
  "listen": [{"proto": "http+socks5", "address": "127.0.0.1:14001",
              "sandbox": "bench"}],
  "policy": {
    "allow_private": ["127.0.0.0/8"],
    "rules": [{"name": "bench-tls", "action": "allow", "hosts": ["127.0.0.1"],
               "ports": [18443, 18444], "intercept": true}]
  },
  "tls": {"ca_cert": "$tmp/ca/ca.crt", "ca_key": "$tmp/ca/ca.key",
          "upstream_ca_files": ["\$PXBENCH_ORIGIN_CA"]},
  $m_intercept
  "audit": {"path": "/dev/null"},
  "limits": {"connections": 100000, "sandbox_connections": 100000}
}
EOC
exec "$MOATD" -q -c "$tmp/moatd-intercept.json"
EOF
chmod 755 "$tmp/moatd-intercept.sh"

# The same config on another port, for MOATD_BASE.
sed 's/127.0.0.1:14000/127.0.0.1:14002/' "$tmp/moatd.json" > \
    "$tmp/moatd-base.json"
base=()
if [ -n "${MOATD_BASE:-}" ]; then
	[ -x "$MOATD_BASE" ] || {
		echo "bench.sh: MOATD_BASE is not an executable: $MOATD_BASE" >&2
		exit 1
	}
	base=(--custom
	    "moatd-base=$MOATD_BASE -q -c $tmp/moatd-base.json@127.0.0.1:14002")
fi

run_default()
{
	"$bench/compare" \
	    --custom "moatd=$MOATD -q -c $tmp/moatd.json@127.0.0.1:14000" \
	    "${base[@]}" "$@"
}

# The default config with metrics, on a port of its own (metrics family).
grep -v '"metrics"' "$tmp/moatd.json" |
    sed -e "s|\"audit\": |$(metrics_block metrics-on) \"audit\": |" \
    -e 's/127.0.0.1:14000/127.0.0.1:14003/' > "$tmp/moatd-metrics.json"

run_metrics()
{
	"$bench/compare" --proxies none \
	    --custom "moatd=$MOATD -q -c $tmp/moatd.json@127.0.0.1:14000" \
	    --custom "moatd-metrics=$MOATD -q -c $tmp/moatd-metrics.json@127.0.0.1:14003" \
	    "$@"
}

run_intercept()
{
	"$bench/compare" --workloads intercept \
	    --custom "moatd=$tmp/moatd-intercept.sh@127.0.0.1:14001" \
	    --custom-ca "moatd=$tmp/ca/ca.crt" "$@"
}

run_ceiling()
{
	[ -x "$NULLPROXY" ] || {
		echo "bench.sh: no nullproxy at $NULLPROXY (set NULLPROXY)" >&2
		exit 1
	}
	run_default --workloads setup,socks,bulk \
	    --proxies squid,tinyproxy,srt,srt-bun \
	    --custom "null=$NULLPROXY 127.0.0.1:14100@127.0.0.1:14100" \
	    --custom "null-splice=$NULLPROXY -s 127.0.0.1:14101@127.0.0.1:14101" \
	    "$@"
}

case $family in
default) run_default "$@" ;;
ceiling) run_ceiling "$@" ;;
intercept) run_intercept "$@" ;;
metrics) run_metrics "$@" ;;
all) run_default "$@" && run_intercept "$@" ;;
esac
