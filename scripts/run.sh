#!/usr/bin/env bash
# The README's first command: installs what is missing, builds moat into
# build/run, and runs the main job: moatd on its embedded default config,
# with a short demo that sends one allowed and two denied requests through
# it on a tiny internet of its own (network namespaces) and prints the
# audit lines.  Run as root on Debian 12.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
step() { printf '\n==> %s\n' "$*"; }

step "dependencies"
bash scripts/deps.sh
step "build"
autoreconf -fi >/dev/null
mkdir -p build/run
(cd build/run && { [ -f Makefile ] || "$top/configure" -q; } &&
    make -s -j"$(nproc 2>/dev/null || echo 2)")
step "demo: moatd on its embedded default config"
MOAT_BUILDDIR="$top/build/run" exec bash scripts/demo.sh
