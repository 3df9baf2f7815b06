#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls this and nothing else):
# installs what is missing, builds, runs `make check` (unit tests, fuzz
# corpora, integration tests in network namespaces), runs it again built
# with AddressSanitizer + UndefinedBehaviorSanitizer, then `make distcheck`.
# Run as root on Debian 12.  Exit status 0 only if every step passed.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
jobs=$(nproc 2>/dev/null || echo 2)
step() { printf '\n==> %s\n' "$*"; }

step "dependencies"
bash scripts/deps.sh

step "autoreconf"
autoreconf -fi >/dev/null

run_suite() {	# name, configure args...
	local name=$1; shift
	local dir="$top/build/$name"
	step "build + make check: $name"
	rm -rf "$dir" && mkdir -p "$dir"
	(cd "$dir" && "$top/configure" -q "$@" && make -s -j"$jobs" &&
	    make -j"$jobs" check) || {
		echo "FAIL: $name suite; logs:" >&2
		find "$dir" -name '*.log' -newer "$dir/Makefile" \
		    -exec grep -l -E '^(FAIL|ERROR)' {} + 2>/dev/null |
		    while read -r f; do
			echo "--- $f" >&2
			# The failed checks first: the tail is mostly log dumps.
			grep -E '^(FAIL|ERROR)' -A6 "$f" | head -n 60 >&2
			echo "--- last lines of $f" >&2
			tail -n 40 "$f" >&2
		    done
		return 1
	}
}

run_suite plain --enable-werror
run_suite sanitizers --enable-sanitizers CFLAGS="-O1 -g"

step "make distcheck"
(cd "$top/build/plain" && make -s -j"$jobs" distcheck)

step "all passed"
