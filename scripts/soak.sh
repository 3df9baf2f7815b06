#!/usr/bin/env bash
# soak.sh - a bounded soak of moatd: mixed load with reloads (some of them
# invalid) and audit rotations, in the test world's namespaces.
#
#   MOAT_BUILDDIR=build/sanitizers bash scripts/soak.sh [SECONDS] [THREADS]
#
# SECONDS (default 600) of load from soakload.py in the sandbox namespace:
# keep-alive forward requests (allowed and denied), a 1 MB download and a
# 64 KB upload, CONNECT with TLS inside, SOCKS5.  Every 20 s a reload (every
# third one an invalid config, which must be refused), every 15 s the audit
# log is rotated (rename + SIGUSR1).  At the end it checks: moatd ran to the
# end and exited 0 on SIGTERM, no sanitizer report, every audit line is
# JSON, no line lost (audit-dropped), the audit has exactly one line per
# forward request the clients got an answer to, and prints moatd's RSS
# over time and the outcome counts.  SOAK_RELOAD_S and SOAK_ROTATE_S set
# the periods (0: none).  Use it with an ASan+UBSan build
# (configure --enable-sanitizers) or a ThreadSanitizer one
# (CFLAGS="-fsanitize=thread -O1 -g" LDFLAGS=-fsanitize=thread).
# Exit status 0 only if every check passed.
set -u
SECONDS_RUN=${1:-600}
THREADS=${2:-4}
export MT_LIFETIME=$((SECONDS_RUN + 120))
export MT_TEST_TIMEOUT=$((SECONDS_RUN + 240))
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/tests/integration/lib.sh"

mt_init
mt_need_moatd
mt_world
conf=$MT_T/moatd.json
bad=$MT_T/bad.json
mt_conf "$conf"
mt_conf_set "$conf" audit "{\"path\": \"$MT_T/audit.log\", \"on_failure\": \"deny\"}"
printf '{\n  "listen": [\n    {"proto": "http", "adress": 1}\n' >"$bad"
cp "$conf" "$MT_T/good.json"
mt_moatd_start "$conf"

timeout -k 5 $((SECONDS_RUN + 90)) ip netns exec "$(mt_ns cli)" "$MT_PY" \
    "$MT_HELPERS/soakload.py" --proxy "$MT_HTTP" --socks "$MT_SOCKS" \
    --seconds "$SECONDS_RUN" --threads "$THREADS" --out "$MT_T/load.json" \
    2>"$MT_T/load.err" &
load=$!
MT_PIDS="$MT_PIDS $load"
t0=$(date +%s)
RELOAD_S=${SOAK_RELOAD_S:-20} ROTATE_S=${SOAK_ROTATE_S:-15}
[ "$RELOAD_S" -gt 0 ] || RELOAD_S=$((SECONDS_RUN * 10))
[ "$ROTATE_S" -gt 0 ] || ROTATE_S=$((SECONDS_RUN * 10))
reloads=0 bad_reloads=0 rotations=0 next_reload=$RELOAD_S next_rotate=$ROTATE_S
next_rss=0
rss_line=""
while kill -0 "$load" 2>/dev/null; do
	now=$(($(date +%s) - t0))
	if [ "$now" -ge "$next_rss" ]; then
		rss_line="$rss_line $now:$(mt_rss_kib "$MT_MOATD_PID")"
		next_rss=$((next_rss + 60))
	fi
	if [ "$now" -ge "$next_reload" ]; then
		reloads=$((reloads + 1))
		if [ $((reloads % 3)) = 0 ]; then
			cp "$bad" "$conf"
			bad_reloads=$((bad_reloads + 1))
		else
			cp "$MT_T/good.json" "$conf"
		fi
		kill -HUP "$MT_MOATD_PID"
		next_reload=$((next_reload + RELOAD_S))
	fi
	if [ "$now" -ge "$next_rotate" ]; then
		rotations=$((rotations + 1))
		mv "$MT_T/audit.log" "$MT_T/audit.log.$rotations" 2>/dev/null
		kill -USR1 "$MT_MOATD_PID"
		next_rotate=$((next_rotate + ROTATE_S))
	fi
	mt_moatd_alive || break
	sleep 1
done
wait "$load"
mt_eq "the load ran to its end" 0 "$?" "$MT_T/load.err"
cp "$MT_T/good.json" "$conf"
rss_line="$rss_line end:$(mt_rss_kib "$MT_MOATD_PID")"
if mt_moatd_alive; then
	mt_pass "moatd alive after ${SECONDS_RUN}s, $reloads reloads ($bad_reloads invalid), $rotations rotations"
else
	mt_fail "moatd died during the soak" "$MT_T/moatd.err"
fi
mt_moatd_stop 300
mt_eq "moatd exits 0 on SIGTERM" 0 "$MT_WAIT_RC" "$MT_T/moatd.err"
n=$(grep -cE 'ERROR: (Address|Leak|Thread)Sanitizer|WARNING: ThreadSanitizer|runtime error:' "$MT_T/moatd.err")
mt_eq "no sanitizer report" 0 "$n" "$MT_T/moatd.err"
n=$(grep -c "reload refused: the config has errors" "$MT_T/moatd.err")
mt_eq "every invalid config refused at reload" "$bad_reloads" "$n" "$MT_T/moatd.err"
"$MT_PY" - "$MT_T" >"$MT_T/check.txt" <<'PY'
import glob, json, sys
t = sys.argv[1]
bad = dropped = soak = 0
for p in glob.glob(t + "/audit.log*"):
    for line in open(p, "rb"):
        try:
            r = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if r.get("event") == "audit-dropped":
            dropped += r.get("dropped", 0)
        if r.get("event") == "request" and str(r.get("path", "")).startswith("/soak-"):
            soak += 1
load = json.load(open(t + "/load.json"))
answered = sum(v for k, v in load.get("http", {}).items() if k.isdigit())
print(bad, dropped, soak, answered)
print(json.dumps(load, sort_keys=True))
PY
read -r bad dropped soak answered <"$MT_T/check.txt"
mt_eq "every audit line is JSON" 0 "$bad"
mt_eq "no audit line lost" 0 "$dropped"
mt_eq "one audit line per answered forward request ($answered)" "$answered" "$soak"
echo "outcomes: $(tail -n 1 "$MT_T/check.txt")"
echo "moatd RSS KiB (second:kib):$rss_line"
mt_finish
