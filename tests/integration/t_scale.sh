#!/bin/bash
# t_scale.sh - many sandboxes on one moatd: 200 registered on its admin
# socket, each with its own policy and listener, each served and refused
# by its own policy, and their memory given back once they are gone.
#
#   moat: moatd (no listener of its own, admin socket)
#         scale.py: 200 x register (a policy, a listening socket on
#         127.0.0.1, SCM_RIGHTS), requests through each listener
#     --> net: origin.py 203.0.113.10:80
#
# Sandbox K allows the origin's address on port 80 for paths /K/* only
# and denies deny-K.test (and, in the second run, 300 more names): a
# request for /K/x is served, one for sandbox K+1's path refused (reason
# path), deny-K.test refused (denied-by-rule).  The decision through one
# sandbox's listener is the same with 200 sandboxes registered as with
# one.  Memory: an idle sandbox costs at most 64 KiB of moatd's resident
# size; once all are unregistered their listeners refuse connections and
# moatd gives their memory back (a second later): its resident size
# falls back by at least half of what the sandboxes took (the libevent
# slots of the admin connections' descriptors stay, reused by the next
# ones).  scripts/scale.sh runs the same helper with 1,000 sandboxes for
# the figures of BENCHMARKS.md.  Last, with a CA: every register answer
# carries moatd's CA and the trust bundle.

. "$(dirname "$0")/lib.sh"

mt_init
mt_need_moatd
mt_world
COUNT=200
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_conf_set "$conf" listen '[]'
mkdir -p "$MT_T/adm"
mt_conf_set "$conf" admin "{\"address\": \"unix:$MT_T/adm/admin.sock\"}"
# Under AddressSanitizer moatd's memory is its allocator's (shadow
# memory, a quarantine of freed blocks): RSS says nothing of moatd's.
ASAN=""
ldd "$MOATD" 2>/dev/null | grep -q libasan && ASAN=1
rss_check()
{
	local msg=$1
	shift
	if [ -n "$ASAN" ]; then
		echo "not checked (AddressSanitizer build): $msg"
	elif "$@"; then
		mt_pass "$msg"
	else
		mt_fail "$msg" "$MT_T/$RUN.kv"
	fi
}

# scale NAME ARG...: scale.py in the moat namespace, KEY=VALUE into
# NAME.kv (bounded: 20 s per answer or request, 240 s in all).
scale()
{
	local n=$1
	shift
	RUN=$n
	timeout -k 2 240 ip netns exec "$(mt_ns moat)" "$MT_PY" \
	    "$MT_HELPERS/scale.py" --admin "$MT_T/adm/admin.sock" \
	    --moatd-pid "$MT_MOATD_PID" --origin 203.0.113.10:80 \
	    --count "$COUNT" --check "$@" >"$MT_T/$n.kv" 2>"$MT_T/$n.err"
	MT_RC=$?
	sed 's/^/  /' "$MT_T/$n.err"
}
kv() { mt_kv "$RUN" "$1"; }

# --- 200 sandboxes, one admin connection each (as moat attach makes) ----------
mt_moatd_start "$conf"
scale each --requests 200
mt_eq "scale.py measured everything and every check held" 0 "$MT_RC" \
    "$MT_T/each.err"
mt_eq "every sandbox is served on its own path" "$COUNT" "$(kv served)" \
    "$MT_T/each.kv"
mt_eq "every sandbox is refused another sandbox's path (reason path)" \
    "$COUNT" "$(kv refused)" "$MT_T/each.kv"
mt_eq "every sandbox's deny rule refuses its name (denied-by-rule)" \
    "$COUNT" "$(kv denied)" "$MT_T/each.kv"
mt_eq "decisions through one listener right, with 1 and with $COUNT sandboxes" \
    0 "$(kv decision_wrong)" "$MT_T/each.kv"
mt_eq "every unregistered sandbox's listener refuses connections" \
    "$COUNT" "$(kv listeners_gone)" "$MT_T/each.kv"
per=$(kv rss_per_sandbox_bytes)
rss_check "an idle sandbox takes at most 64 KiB (${per:-?} bytes of RSS)" \
    [ "${per:-999999}" -le 65536 ]
mt_log_eq "the audit has a line for each registration" "$((COUNT + 1))" \
    "$MT_T/audit.log" count event=sandbox detail=registered
mt_log_eq "... and for each unregistration" "$((COUNT + 1))" \
    "$MT_T/audit.log" count event=sandbox detail=unregistered
mt_moatd_alive && mt_pass "moatd still runs" || mt_fail "moatd died" \
    "$MT_T/moatd.err"

# --- the memory of 200 larger policies comes back -----------------------------
scale padded --requests 20 --pad 300
mt_eq "padded: every check held" 0 "$MT_RC" "$MT_T/padded.err"
r0=$(kv rss_before_kib)
r1=$(kv rss_after_kib)
r2=$(kv rss_unregistered_kib)
echo "padded: RSS $r0 KiB without sandboxes, $r1 with $COUNT, $r2 after"
rss_check "padded: $COUNT sandboxes take memory ($((r1 - r0)) KiB, want > 4096)" \
    [ $((r1 - r0)) -gt 4096 ]
rss_check "padded: unregistered, moatd gives at least half of it back ($r1 -> $r2 KiB, start $r0)" \
    [ $((r2 - r0)) -lt $(((r1 - r0) / 2)) ]

mt_moatd_stop
mt_eq "moatd exits cleanly after $((2 * COUNT)) sandboxes" 0 "$MT_WAIT_RC" \
    "$MT_T/moatd.err"

# --- with a CA: every answer carries the trust bundle --------------------------
# (made once per CA and reused: 200 KiB checked and escaped each time cost
# about 2 ms a registration)
"$MOAT" ca init "$MT_T/ca" >/dev/null 2>&1 ||
    mt_error "moat ca init failed"
mt_conf_set "$conf" tls "{\"ca_cert\": \"$MT_T/ca/ca.crt\", \"ca_key\": \"$MT_T/ca/ca.key\"}"
: >"$MT_T/moatd.err"
mt_moatd_start "$conf"
COUNT=50
scale tls --requests 10
mt_eq "with a CA: every check held" 0 "$MT_RC" "$MT_T/tls.err"
mt_eq "with a CA: each answer has the CA and a trust bundle (the first one and the $COUNT)" \
    "$((COUNT + 1))" "$(kv trust_answers)" "$MT_T/tls.kv"
echo "with a CA: register median $(kv register_median_ms) ms, p99 $(kv register_p99_ms) ms"
mt_moatd_stop
mt_finish
