#!/bin/sh
# deps.sh - install every Debian package moat needs to build and test.
#
# Usage: scripts/deps.sh [--check]
#
# Installs, with apt-get and without questions, only the packages that are
# missing; with --check it installs nothing and lists them instead (exit 1
# if any is missing).  It talks to nothing but the machine's configured
# Debian mirrors, and only when something is missing.

set -eu

# Build: compiler, autotools, the libraries of DESIGN.md ("Build"); the
# headers of zlib and libmd, which `moat audit` loads with dlopen.
BUILD="build-essential autoconf automake pkg-config
    libevent-dev libssl-dev libc-ares-dev libjansson-dev libmaxminddb-dev
    libidn2-dev libnftnl-dev libmnl-dev libnetfilter-log-dev libcunit1-dev
    clang zlib1g-dev libmd-dev"
# Tests: namespaces and nftables (iproute2, nftables), real peers (curl,
# socat, openssl, python3 for the helper servers), /proc readers (procps),
# setpriv and unshare (util-linux), timeout (coreutils), gzip (moat audit
# on compressed files); the clients the trust, sidecar and client
# matrix tests run (t_run_trust, t_sidecar_trust, t_clients: each
# skipped where it is missing): Python's httpx, requests, aiohttp and
# pip, Java, git, Go (node and npm below); a real scraper of moatd's
# metrics and its promtool (prometheus); the deployment files' checks:
# systemd (systemd-analyze), logrotate, yamllint, python3-yaml (node and
# npm below fetch and run the npm package kubernetes-models for the
# Kubernetes schemas).
TEST="iproute2 nftables curl socat openssl python3 procps util-linux
    coreutils gzip python3-httpx python3-requests python3-aiohttp
    python3-pip default-jdk-headless git golang-go prometheus systemd
    logrotate yamllint python3-yaml"
# Benchmarks: the origin of scripts/bench-inspect.sh (nginx-light);
# scripts/scale.sh's /usr/bin/time (time) and, for --callgrind, valgrind.
BENCH="nginx-light time valgrind"
# srt (t_srt.sh: sandbox-runtime from npm runs bubblewrap, socat and
# ripgrep; npm fetches it, and Node 22 where Debian's node is too old);
# node and npm are t_run_trust's, t_sidecar_trust's, t_clients' and
# k8s.test's too.
# A nodejs that has its own npm (NodeSource's) conflicts with Debian's.
SRT="bubblewrap ripgrep nodejs"
command -v npm >/dev/null 2>&1 || SRT="$SRT npm"

missing=""
for p in $BUILD $TEST $BENCH $SRT; do
	if ! dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
	    grep -q '^install ok installed$'; then
		missing="$missing $p"
	fi
done

if [ -z "$missing" ]; then
	echo "deps.sh: every package is installed"
	exit 0
fi
if [ "${1:-}" = --check ]; then
	echo "deps.sh: missing:$missing"
	exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: missing:$missing" >&2
	echo "deps.sh: run as root (or with sudo) to install them" >&2
	exit 1
fi

echo "deps.sh: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing
