#!/usr/bin/env bash
# Runs every libFuzzer target for a while, seeded with its corpus; new
# interesting inputs go to a scratch directory, crashes to ./fuzz-artifacts/.
#
#   tests/fuzz/run-fuzzers.sh [SECONDS_EACH] [TARGET...]
#
# Builds clang + --enable-fuzzing into build/fuzz first.  A crash makes the
# script exit 1; add the crashing input to tests/fuzz/corpus/<target>/
# once fixed, so `make check` replays it from then on.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-600}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=($(cd "$top/tests/fuzz/corpus" && ls))

build="$top/build/fuzz"
if [ ! -f "$build/Makefile" ]; then
	mkdir -p "$build"
	(cd "$build" && CC=clang "$top/configure" -q --enable-fuzzing)
fi
make -s -C "$build" -j"$(nproc)" $(printf 'tests/fuzz/fuzz_%s ' "${targets[@]}")

art="$top/fuzz-artifacts"
mkdir -p "$art"
rc=0
for t in "${targets[@]}"; do
	scratch=$(mktemp -d)
	echo "==> fuzz_$t for ${secs}s"
	if ! "$build/tests/fuzz/fuzz_$t" -max_total_time="$secs" \
	    -print_final_stats=1 -artifact_prefix="$art/$t-" \
	    "$scratch" "$top/tests/fuzz/corpus/$t" 2>&1 |
	    grep -E '^(#[0-9]+ *DONE|stat::number_of_executed_units|stat::peak_rss_mb|==[0-9]+==|SUMMARY)'; then
		:
	fi
	if ls "$art/$t-"* >/dev/null 2>&1; then
		echo "FAIL: fuzz_$t found a crash: $(ls "$art/$t-"*)"
		rc=1
	else
		echo "PASS: fuzz_$t"
	fi
	rm -rf "$scratch"
done
exit $rc
