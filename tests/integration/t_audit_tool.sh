#!/bin/bash
# t_audit_tool.sh - `moat audit` on the audit lines of a real moatd.
#
#   cli: curl --> moat: moatd (audit.hash_chain, audit -> $MT_T/audit.log)
#        --> net: origin.py 203.0.113.10 (:80, :443 TLS)
#   (the full drawing is at the top of lib.sh)
#
# moatd decides: plain requests allowed (origin.test and three siblings
# under it), one with a secret injected, a CONNECT tunnel (open and
# close), refusals by a deny rule and by no rule.  Then: summary (text and
# --json) counts them per sandbox; suggest writes a policy that
# `moat check` loads and under which replay changes no allowed decision;
# replay under a stricter policy exits 1 and names the change; verify says
# the chained file is intact (0) and names the line of a change, a
# removal and an insertion (1).

. "$(dirname "$0")/lib.sh"

mt_init
mt_need_moatd
[ -x "$MOAT" ] || mt_error "moat not built at $MOAT (set MOAT_BUILDDIR)"
mt_world
conf=$MT_T/moatd.json
A=$MT_T/audit.log
mt_conf "$conf"
mt_conf_set "$conf" audit.hash_chain true
mt_conf_set "$conf" secrets '{"K": {"env": "MT_AUDIT_KEY"}}'
mt_conf_set "$conf" policy.rules.^ '{"name": "keyed", "action": "allow",
    "hosts": ["key.origin.test"], "ports": [80], "plain_http": true,
    "inject": [{"header": "X-Key", "value": "${K}"}]}'
MT_MOATD_ENV="MT_AUDIT_KEY=audit-tool-secret-1234" mt_moatd_start "$conf"
P=(-x http://10.200.0.1:3128)

for h in origin.test a.origin.test b.origin.test c.origin.test; do
	mt_curl "get-$h" "${P[@]}" "http://$h/x"
	mt_eq "GET http://$h/ allowed" 200 "$MT_CODE"
done
mt_curl key "${P[@]}" http://key.origin.test/k
mt_eq "GET http://key.origin.test/ (a secret injected)" 200 "$MT_CODE"
mt_curl tun "${P[@]}" -k https://origin.test/t
mt_eq "CONNECT origin.test:443 allowed" 200 "$MT_CODE"
mt_curl bad "${P[@]}" http://bad.origin.test/
mt_eq "bad.origin.test denied" 403 "$MT_CODE"
mt_curl other "${P[@]}" http://other.test/
mt_eq "other.test denied" 403 "$MT_CODE"
mt_log_eq "the tunnel's close line" 1 "$A" count event=close host=origin.test
mt_log_eq "the injected line" 1 "$A" count host=key.origin.test injected?
mt_moatd_stop
mt_eq "moatd stopped" 0 "$MT_WAIT_RC"

# --- summary ----------------------------------------------------------
out=$("$MOAT" audit summary "$A" 2>&1)
mt_eq "summary exits 0" 0 $?
for want in "sandbox it-http: 8 decisions \\(6 allowed, 2 refused" \
    "K -> key.origin.test" "denied-by-rule +blocked +bad.origin.test:80" \
    "no-rule +- +other.test:80"; do
	if [[ $out =~ $want ]]; then
		mt_pass "summary says: $want"
	else
		mt_fail "summary says: $want" <(echo "$out")
	fi
done
"$MOAT" audit summary --json --sandbox it-http "$A" > "$MT_T/sum.json"
mt_eq "summary --json exits 0" 0 $?
got=$("$MT_PY" - "$MT_T/sum.json" <<-'EOF'
	import json, sys
	j = json.load(open(sys.argv[1]))
	s = j["sandboxes"][0]
	d = {(x["host"], x["port"]): x for x in s["destinations"]}
	r = {(x["reason"], x["rule"]): x["count"] for x in s["refusals"]}
	print(len(j["sandboxes"]), s["sandbox"], s["decisions"], s["refused"],
	      d[("bad.origin.test", 80)]["refused"],
	      r[("denied-by-rule", "blocked")], r[("no-rule", None)],
	      s["secrets"][0]["secret"], s["secrets"][0]["host"],
	      s["bytes_down"] > 0)
	EOF
)
mt_eq "summary --json: one sandbox, its decisions, refusals, secrets" \
    "1 it-http 8 2 1 1 1 K key.origin.test True" "$got"
out=$("$MOAT" audit summary --json --since 2000-01-01 --until 2000-01-02 "$A")
mt_eq "--until before every line: nothing" 0 \
    "$(echo "$out" | "$MT_PY" -c 'import json,sys; print(json.load(sys.stdin)["lines"])')"

# --- suggest ----------------------------------------------------------
# the world's addresses are in special-purpose ranges, as mt_conf opens
AP=(--allow-private 203.0.113.0/24 --allow-private 2001:db8::/32)
"$MOAT" audit suggest "${AP[@]}" "$A" > "$MT_T/suggest.json" \
    2> "$MT_T/suggest.err"
mt_eq "suggest exits 0" 0 $? "$MT_T/suggest.err"
got=$("$MT_PY" - "$MT_T/suggest.json" <<-'EOF'
	import json, sys
	p = json.load(open(sys.argv[1]))["policy"]
	hosts = sorted(h for r in p["rules"] for h in r.get("hosts", []))
	print(" ".join(hosts), p["allow_private"])
	EOF
)
# bad.origin.test was refused: no "*.origin.test" over it
mt_eq "suggest: the hosts allowed, no wildcard over a refused sibling" \
    "a.origin.test b.origin.test c.origin.test key.origin.test origin.test ['203.0.113.0/24', '2001:db8::/32']" \
    "$got"
"$MOAT" audit suggest "${AP[@]}" --sandbox it-mixed \
    "$A" > "$MT_T/empty.json" 2>/dev/null
mt_eq "suggest for a sandbox with no traffic: no rule" 0 \
    "$("$MT_PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["policy"]["rules"]))' "$MT_T/empty.json")"
"$MOAT" check "$MT_T/suggest.json" > "$MT_T/check.out" 2>&1
mt_eq "moat check loads the suggestion" 0 $? "$MT_T/check.out"
"$MOAT" audit replay --policy "$MT_T/suggest.json" "$A" > "$MT_T/rs.out" 2>&1
mt_eq "replay under the suggestion: exit 0" 0 $? "$MT_T/rs.out"
if grep -q " 0 allowed -> refused" "$MT_T/rs.out"; then
	mt_pass "replay under the suggestion: nothing allowed becomes refused"
else
	mt_fail "replay under the suggestion: nothing allowed becomes refused" \
	    "$MT_T/rs.out"
fi
"$MOAT" audit suggest "$A" > /dev/null 2> "$MT_T/suggest2.err"
mt_eq "suggest without --allow-private: exit 1 (the deny sets stay shut)" 1 $?
if grep -q -- "--allow-private CIDR" "$MT_T/suggest2.err"; then
	mt_pass "suggest says how to open a private range"
else
	mt_fail "suggest says how to open a private range" "$MT_T/suggest2.err"
fi

# --- replay under a stricter policy -----------------------------------
cp "$conf" "$MT_T/strict.json"
mt_conf_set "$MT_T/strict.json" policy.rules.1.ports '[443, 8080]'
"$MOAT" audit replay --policy "$MT_T/strict.json" "$A" > "$MT_T/rp.out" 2>&1
mt_eq "replay under a stricter policy: exit 1" 1 $? "$MT_T/rp.out"
if grep -q "origin.test:80  was allowed, now port" "$MT_T/rp.out"; then
	mt_pass "replay names the change: origin.test:80 allowed -> port"
else
	mt_fail "replay names the change: origin.test:80 allowed -> port" \
	    "$MT_T/rp.out"
fi
"$MOAT" audit replay --json --policy "$MT_T/strict.json" "$A" > "$MT_T/rp.json"
got=$("$MT_PY" -c 'import json,sys; j=json.load(open(sys.argv[1]));
print(j["allowed_to_refused"], j["refused_to_allowed"])' "$MT_T/rp.json")
mt_eq "replay --json: 4 allowed -> refused (the four plain GETs), 0 back" \
    "4 0" "$got"
"$MOAT" audit replay --policy "$MT_T/nonexistent.json" "$A" >/dev/null 2>&1
mt_eq "replay with a policy that does not load: exit 2" 2 $?

# --- verify -----------------------------------------------------------
"$MOAT" audit verify "$A" > "$MT_T/v.out" 2>&1
mt_eq "verify on the chained file: exit 0" 0 $? "$MT_T/v.out"
if grep -q "^intact" "$MT_T/v.out"; then
	mt_pass "verify says intact"
else
	mt_fail "verify says intact" "$MT_T/v.out"
fi
mt_eq "the file begins with a chain-start" chain-start \
    "$(head -n 1 "$A" | "$MT_PY" -c 'import json,sys; print(json.load(sys.stdin)["event"])')"

# tampered FILE LINE WORD MESSAGE: verify FILE exits 1 naming LINE, WORD.
tampered()
{
	"$MOAT" audit verify "$1" > "$1.out" 2>&1
	mt_eq "verify: $4: exit 1" 1 $? "$1.out"
	if grep -q "^${1}:$2: .*$3" "$1.out"; then
		mt_pass "verify: $4: line $2 named ($3)"
	else
		mt_fail "verify: $4: line $2 named ($3)" "$1.out"
	fi
}
sed '3s/"origin.test"/"0rigin.test"/; 3s/"a.origin.test"/"x.origin.test"/' \
    "$A" > "$MT_T/changed.log"
cmp -s "$A" "$MT_T/changed.log" && mt_fail "the edit changed line 3"
tampered "$MT_T/changed.log" 3 changed "a line changed"
sed '4d' "$A" > "$MT_T/removed.log"
tampered "$MT_T/removed.log" 4 removed "a line removed"
sed '5{h;s/"id":[0-9]*/"id":999/;x;G}' "$A" > "$MT_T/inserted.log"
tampered "$MT_T/inserted.log" 6 "inserted" "a forged line inserted"
sed '2{p}' "$A" > "$MT_T/copied.log"
tampered "$MT_T/copied.log" 3 "a copy of line 2" "a line copied"
tail -n +2 "$A" > "$MT_T/head.log"
tampered "$MT_T/head.log" 1 "does not begin" "the first line removed"
last=$(tail -n 1 "$A" | "$MT_PY" -c 'import json,sys; print(json.load(sys.stdin)["hash"])')
head -n -1 "$A" > "$MT_T/cut.log"
"$MOAT" audit verify "$MT_T/cut.log" > "$MT_T/cut.out" 2>&1
mt_eq "verify: the last line cut, no --end: not seen (exit 0)" 0 $? \
    "$MT_T/cut.out"
"$MOAT" audit verify --end "$last" "$MT_T/cut.log" > "$MT_T/cut.out" 2>&1
mt_eq "verify --end LAST-HASH: the cut tail is seen (exit 1)" 1 $? \
    "$MT_T/cut.out"
gzip -c "$A" > "$MT_T/audit.log.gz"
"$MOAT" audit verify "$MT_T/audit.log.gz" > "$MT_T/gz.out" 2>&1
mt_eq "verify reads a gzip-compressed file" 0 $? "$MT_T/gz.out"

mt_finish
