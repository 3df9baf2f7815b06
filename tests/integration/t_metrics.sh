#!/bin/bash
# t_metrics.sh - moatd's Prometheus metrics ("metrics" in the config).
#
#   cli: curl, dnsprobe.py --> moat: moatd (the standard listeners, a DNS
#     listener, CA from `moat ca init`, secret K from a 0600 file)
#     --> net: origin.py (origin.test, *.wild.test), dns.py
#   moat: metrics on 127.0.0.1:9464 (moat's own loopback: no listener is
#     there, so no sandbox reaches it); curl and Debian's prometheus
#     (127.0.0.1:9091, storage in the test directory) scrape it there
#   (the full drawing is at the top of lib.sh)
#
# Traffic of every kind (allowed, refused by rule and by no rule, an
# inspected request with K injected, one refused inside, an opaque
# tunnel, a leak of K, SOCKS5, DNS answered and refused), then: every
# count the audit log determines (decisions by sandbox, verdict, reason
# and rule; bytes by sandbox, rule and direction; secrets injected) is
# the scrape's; the leak, the DNS answers, the leaf cache, the histograms
# and build info are there; an open connection is counted while it is
# open; a reload and a refused one are counted; `promtool check metrics`
# passes; prometheus scrapes it and its query API gives the same total;
# only GET /metrics is served (404, 405, 400); a unix socket address
# works (mode 0600); a metrics address a sandbox could reach is refused
# with FILE:LINE:COLUMN.

. "$(dirname "$0")/lib.sh"

mt_init
mt_need_moatd
[ -x "$MOAT" ] || mt_error "moat (the CLI) not built at $MOAT"
mt_world
"$MOAT" ca init "$MT_T/ca" >/dev/null || mt_error "moat ca init failed"
REAL=mtk-REAL-metrics-5f2b9c1d7e3a4b6c
mkdir -p "$MT_T/keys" && chmod 700 "$MT_T/keys"
printf '%s\n' "$REAL" > "$MT_T/keys/k.key"
chmod 600 "$MT_T/keys/k.key"

conf=$MT_T/moatd.json
mt_conf "$conf"
mt_conf_set "$conf" listen.+ '{"proto": "dns", "address": "10.200.0.1:53", "sandbox": "it-dns"}'
mt_conf_set "$conf" policy.rules.0.ports '[80, 8080]'
mt_conf_set "$conf" policy.rules.+ '{"name": "wild", "action": "allow", "hosts": ["*.wild.test"], "ports": [443]}'
mt_conf_set "$conf" policy.rules.+ '{"name": "api", "action": "allow", "hosts": ["origin.test"], "ports": [443], "methods": ["GET"], "inject": [{"header": "X-Api-Key", "value": "${K}"}]}'
mt_conf_set "$conf" secrets "{\"K\": {\"file\": \"$MT_T/keys/k.key\"}}"
mt_conf_set "$conf" tls "{\"ca_cert\": \"$MT_T/ca/ca.crt\", \"ca_key\": \"$MT_T/ca/ca.key\", \"upstream_ca_files\": [\"$MT_T/origin.crt\"]}"
mt_conf_set "$conf" metrics '{"address": "127.0.0.1:9464"}'
mt_moatd_start "$conf"
A=$MT_T/audit.log
M=127.0.0.1:9464
C=(-x "http://$MT_HTTP")

# scrape NAME: GET /metrics from the moat namespace into $MT_T/NAME.prom;
# sets MT_CODE and MT_TYPE.
scrape()
{
	local out
	out=$(mt_in moat curl -sS --max-time 5 -o "$MT_T/$1.prom" \
	    -w '%{http_code} %{content_type}' "http://$M/metrics" \
	    2>"$MT_T/$1.err")
	MT_CODE=${out%% *}
	MT_TYPE=${out#* }
}
# val NAME SERIES: one sample of the scrape NAME, or "none".
val()
{
	"$MT_PY" "$MT_HELPERS/metricscheck.py" --value "$MT_T/$1.prom" "$2"
}
# scraped_is WANT SERIES: for mt_wait_for; a fresh scrape (last.prom).
scraped_is()
{
	scrape last
	MT_GOT=$(val last "$2")
	[ "$MT_GOT" = "$1" ]
}
# val_eq MESSAGE WANT SERIES: the series reaches WANT (bounded wait).
val_eq()
{
	MT_GOT=""
	mt_wait_for 3 scraped_is "$2" "$3"
	mt_eq "$1" "$2" "$MT_GOT" "$MT_T/last.prom"
}
# matches: the scrape has the counts of the audit log (for mt_wait_for:
# the audit writer may hold lines a few ms after they were counted).
matches()
{
	scrape m
	"$MT_PY" "$MT_HELPERS/metricscheck.py" "$A" "$MT_T/m.prom" \
	    > "$MT_T/m.diff" 2>&1
}

# --- at start ----------------------------------------------------------------
scrape s0
mt_eq "GET /metrics: 200" 200 "$MT_CODE"
mt_eq "...in the text format 0.0.4" "text/plain; version=0.0.4; charset=utf-8" \
    "$MT_TYPE"
mt_eq "build info" 1 "$(val s0 "moat_build_info{version=\"$(
    "$MOATD" --version 2>&1 | awk '{ print $NF; exit }')\"}")"
mt_eq "no decision yet" 0 \
    "$("$MT_PY" "$MT_HELPERS/metricscheck.py" --sum "$MT_T/s0.prom" \
    moat_decisions_total)"
out=$(mt_in cli curl -sS --max-time 3 "http://10.200.0.1:9464/metrics" 2>&1)
mt_eq "the sandbox cannot reach the metrics port" 7 "$?" "$out"

# --- traffic -----------------------------------------------------------------
mt_curl a1 "${C[@]}" http://origin.test/
mt_allowed "forward HTTP" a1
mt_curl a2 "${C[@]}" -d 'a body of some bytes' http://origin.test/post
mt_allowed "forward HTTP with a body" a2
mt_curl d1 "${C[@]}" http://bad.origin.test/
mt_denied "a deny rule" d1 403 bad.origin.test denied-by-rule blocked
mt_curl d2 "${C[@]}" http://nothing.test/
mt_denied "no rule" d2 403 nothing.test no-rule
mt_curl i1 "${C[@]}" --cacert "$MT_T/ca/ca.crt" https://origin.test/ok
mt_allowed "an inspected request, K injected" i1
mt_curl i2 "${C[@]}" --cacert "$MT_T/ca/ca.crt" -X POST -d x \
    https://origin.test/ok
# (origin.test's other rule, "origin", allows POST on other ports: the
# refusal names it)
mt_denied "a POST the rules refuse, inside the tunnel" i2 403 \
    origin.test port origin
mt_curl t1 "${C[@]}" --cacert "$MT_T/origin.crt" https://x.wild.test/
mt_allowed "an opaque tunnel" t1
mt_curl l1 "${C[@]}" -H "X-Note: $REAL" http://origin.test/
mt_denied "K sent to a host it is not bound to" l1 403 origin.test \
    secret-leak
mt_curl s1 --socks5-hostname "$MT_SOCKS" http://origin.test/
mt_allowed "SOCKS5" s1
mt_in cli "$MT_PY" "$MT_HELPERS/dnsprobe.py" 10.200.0.1 origin.test A \
    > "$MT_T/q1.out" 2>&1
mt_in cli "$MT_PY" "$MT_HELPERS/dnsprobe.py" 10.200.0.1 bad.origin.test A \
    > "$MT_T/q2.out" 2>&1
mt_eq "DNS: answered, then refused" "rcode=NOERROR rcode=NXDOMAIN" \
    "$(head -n 1 "$MT_T/q1.out" | cut -d' ' -f1) $(head -n 1 \
    "$MT_T/q2.out" | cut -d' ' -f1)"

# --- the counts ----------------------------------------------------------------
mt_log_eq "audit: the DNS refusal is written" 1 "$A" count event=dns \
    host=bad.origin.test
if mt_wait_for 3 matches; then
	mt_pass "every decision, byte and injection the audit log has is counted" \
	    "($(grep -c '^moat_decisions_total' "$MT_T/m.prom") decision series)"
else
	mt_fail "the scrape and the audit log differ: $(head -n 5 \
	    "$MT_T/m.diff" | tr '\n' ';')" "$MT_T/m.diff" "$MT_T/m.prom" "$A"
fi
ndec=$(mt_jl "$A" count event~'^(request|open|dns)$')
mt_eq "decisions: as many as the audit lines" "$ndec" \
    "$("$MT_PY" "$MT_HELPERS/metricscheck.py" --sum "$MT_T/m.prom" \
    moat_decisions_total)"
mt_eq "a refusal by rule, with its labels" 1 "$(val m \
    'moat_decisions_total{sandbox="it-http",verdict="deny",reason="denied-by-rule",rule="blocked"}')"
mt_eq "the request refused inside the inspected tunnel" 1 "$(val m \
    'moat_decisions_total{sandbox="it-http",verdict="deny",reason="port",rule="origin"}')"
mt_eq "...whose tunnel, like the other one and its request, is rule api's" 3 "$(val m \
    'moat_decisions_total{sandbox="it-http",verdict="allow",reason="allowed",rule="api"}')"
mt_eq "DNS: the refusal is the it-dns sandbox's" 1 "$(val m \
    'moat_decisions_total{sandbox="it-dns",verdict="deny",reason="dns-denied",rule="blocked"}')"
mt_eq "the SOCKS5 sandbox has its own series" 1 "$(val m \
    'moat_decisions_total{sandbox="it-socks",verdict="allow",reason="allowed",rule="origin"}')"
mt_eq "K injected once" 1 "$(val m 'moat_secrets_injected_total{secret="K"}')"
mt_eq "K's leak refused once" 1 \
    "$(val m 'moat_secret_leaks_refused_total{secret="K"}')"
mt_eq "DNS responses: NOERROR" 1 \
    "$(val m 'moat_dns_responses_total{sandbox="it-dns",rcode="NOERROR"}')"
mt_eq "DNS responses: NXDOMAIN" 1 \
    "$(val m 'moat_dns_responses_total{sandbox="it-dns",rcode="NXDOMAIN"}')"
mt_eq "DNS: the address handed out" 1 \
    "$(val m 'moat_dns_answer_addresses_total{sandbox="it-dns"}')"
mt_eq "two inspected tunnels: one leaf minted, then found in the cache" \
    "2: 1 1" "$(mt_jl "$A" count event=open host=origin.test port=443): $(
    val m moat_tls_leaf_cache_misses_total) $(
    val m moat_tls_leaf_cache_hits_total)"
up=$(val m 'moat_bytes_total{sandbox="it-http",rule="wild",direction="up"}')
mt_eq "the opaque tunnel's bytes up are its close line's" \
    "$(mt_jl "$A" get bytes_up event=close host=x.wild.test)" "$up"
for h in decision dns_resolve upstream_connect upstream_first_byte; do
	n=$(val m "moat_${h}_seconds_count")
	if [ "$n" != none ] && [ "$n" -gt 0 ] &&
	    [ "$n" = "$(val m "moat_${h}_seconds_bucket{le=\"+Inf\"}")" ]; then
		mt_pass "histogram moat_${h}_seconds: $n observations"
	else
		mt_fail "histogram moat_${h}_seconds: count '$n'" "$MT_T/m.prom"
	fi
done
mt_eq "time to first byte: one per forwarded or inspected request" \
    "$(mt_jl "$A" count event=request verdict=allow)" \
    "$(val m moat_upstream_first_byte_seconds_count)"
mt_eq "nothing folded under (other)" 0 \
    "$("$MT_PY" "$MT_HELPERS/metricscheck.py" --sum "$MT_T/m.prom" \
    moat_metrics_folded_total)"
mt_eq "the audit queue is a gauge in bytes" 1 \
    "$(grep -c '^# TYPE moat_audit_queue_bytes gauge$' "$MT_T/m.prom")"

# --- open connections ------------------------------------------------------------
val_eq "no connection open" 0 \
    'moat_connections_open{sandbox="it-socks",listener="socks5"}'
timeout 10 ip netns exec "$(mt_ns cli)" bash -c \
    'exec 3<>/dev/tcp/10.200.0.1/1080 && exec cat <&3' >/dev/null 2>&1 &
holder=$!
val_eq "a connection held open is counted" 1 \
    'moat_connections_open{sandbox="it-socks",listener="socks5"}'
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
val_eq "...and no more once it closed" 0 \
    'moat_connections_open{sandbox="it-socks",listener="socks5"}'

# --- reloads -------------------------------------------------------------------
cp "$conf" "$conf.good"
echo '{' > "$conf"
kill -HUP "$MT_MOATD_PID"
val_eq "a refused reload is counted" 1 moat_reload_failures_total
cp "$conf.good" "$conf"
kill -HUP "$MT_MOATD_PID"
val_eq "a reload is counted" 1 moat_reloads_total
scrape r
mt_eq "a reload keeps the counts" "$ndec" \
    "$("$MT_PY" "$MT_HELPERS/metricscheck.py" --sum "$MT_T/r.prom" \
    moat_decisions_total)"

# --- the format: promtool and prometheus -------------------------------------------
if command -v promtool >/dev/null 2>&1; then
	if out=$(promtool check metrics < "$MT_T/r.prom" 2>&1); then
		mt_pass "promtool check metrics: no problem"
	else
		mt_fail "promtool check metrics: $out" "$MT_T/r.prom"
	fi
else
	echo "SKIP: promtool check (promtool not installed: apt-get install prometheus)"
fi
# prom_total: sets MT_GOT to sum(moat_decisions_total) as prometheus has it.
prom_total()
{
	MT_GOT=$(mt_in moat curl -sS --max-time 3 \
	    'http://127.0.0.1:9091/api/v1/query?query=sum(moat_decisions_total)' \
	    2>/dev/null | "$MT_PY" -c '
import json, sys
try:
    r = json.load(sys.stdin)["data"]["result"]
    print(r[0]["value"][1] if r else "none")
except Exception:
    print("none")')
	[ "$MT_GOT" = "$1" ]
}
if command -v prometheus >/dev/null 2>&1; then
	cat > "$MT_T/prom.yml" <<-EOF
	global:
	  scrape_interval: 1s
	  scrape_timeout: 1s
	scrape_configs:
	  - job_name: moatd
	    static_configs:
	      - targets: ["$M"]
	EOF
	mkdir -p "$MT_T/promdata"
	# Ready once its own API says so (bounded: 30 s at most).
	if mt_bg prom moat bash -c 'prometheus --config.file="$1" \
	    --storage.tsdb.path="$2" --storage.tsdb.retention.time=1h \
	    --web.listen-address=127.0.0.1:9091 --log.level=warn & p=$!
	    for i in $(seq 300); do
	        curl -sf --max-time 1 http://127.0.0.1:9091/-/ready \
	            >/dev/null 2>&1 && { echo ready >&3; break; }
	        kill -0 $p 2>/dev/null || exit 1
	        sleep 0.1
	    done
	    wait $p' _ "$MT_T/prom.yml" "$MT_T/promdata"; then
		mt_pass "prometheus started in the moat namespace"
		MT_GOT=""
		mt_wait_for 20 prom_total "$ndec"
		mt_eq "prometheus scraped moatd: sum(moat_decisions_total)" \
		    "$ndec" "$MT_GOT" "$MT_T/prom.err"
		up=$(mt_in moat curl -sS --max-time 3 -G --data-urlencode \
		    'query=up{job="moatd"}' http://127.0.0.1:9091/api/v1/query |
		    "$MT_PY" -c 'import json,sys; print(json.load(sys.stdin)["data"]["result"][0]["value"][1])' 2>&1)
		mt_eq "...and finds the target up" 1 "$up"
	else
		mt_fail "prometheus started" "$MT_T/prom.err"
	fi
else
	echo "SKIP: prometheus scraping moatd (prometheus not installed: apt-get install prometheus)"
fi

# --- only GET /metrics -------------------------------------------------------------
code=$(mt_in moat curl -s -o /dev/null -w '%{http_code}' "http://$M/other")
mt_eq "another path: 404" 404 "$code"
code=$(mt_in moat curl -s -o /dev/null -w '%{http_code}' -X POST -d x \
    "http://$M/metrics")
mt_eq "another method: 405" 405 "$code"
line=$(mt_in moat bash -c 'exec 3<>/dev/tcp/127.0.0.1/9464 &&
    printf "GET /metrics HTTP/1.1\r\n\r\n" >&3 && head -n 1 <&3' 2>&1)
mt_eq "HTTP/1.1 without Host: 400" "HTTP/1.1 400 Bad Request" "${line%$'\r'}"
line=$(mt_in moat bash -c 'exec 3<>/dev/tcp/127.0.0.1/9464 &&
    printf "GET /metrics HTTP/1.1\nHost: x\r\n\r\n" >&3 && head -n 1 <&3' 2>&1)
mt_eq "a bare LF: 400" "HTTP/1.1 400 Bad Request" "${line%$'\r'}"
mt_moatd_stop
mt_eq "moatd stopped cleanly" 0 "$MT_WAIT_RC" "$MT_T/moatd.err"

# --- a unix socket address -------------------------------------------------------
cat > "$MT_T/unix.json" <<EOF
{
  "listen": [{"proto": "http", "address": "unix:$MT_T/p.sock", "sandbox": "u"}],
  "policy": {"default": "deny"},
  "audit": {"path": "$MT_T/audit2.log"},
  "metrics": {"address": "unix:$MT_T/metrics.sock"}
}
EOF
if mt_bg m2 moat "$MOATD" -c "$MT_T/unix.json" --ready-fd 3; then
	mt_eq "the unix socket is the owner's alone" 600 \
	    "$(stat -c %a "$MT_T/metrics.sock")"
	code=$(mt_in moat curl -s -o "$MT_T/u.prom" -w '%{http_code}' \
	    --unix-socket "$MT_T/metrics.sock" http://moatd/metrics)
	mt_eq "GET /metrics on the unix socket: 200" "200 1" \
	    "$code $(grep -c '^moat_build_info' "$MT_T/u.prom")"
	kill -TERM "$MT_RPID_m2" 2>/dev/null
	mt_wait_exit "$MT_PID_m2"
	mt_eq "...and it is removed at exit" no \
	    "$([ -e "$MT_T/metrics.sock" ] && echo yes || echo no)"
else
	mt_fail "moatd with a unix metrics socket started" "$MT_T/m2.err"
fi

# --- an address a sandbox could reach is refused ------------------------------------
bad=$MT_T/bad.json
for addr in 10.200.0.1:9464 0.0.0.0:9464; do
	mt_conf "$bad"
	mt_conf_set "$bad" metrics "{\"address\": \"$addr\"}"
	pos=$(awk -v a="\"$addr\"" 'index($0, a) { print NR ":" index($0, a); exit }' "$bad")
	out=$("$MOATD" -c "$bad" --check 2>&1)
	rc=$?
	case $addr in
	10.*) want="$bad:$pos: metrics.address $addr is on the interface of listen[0] (10.200.0.1:3128" ;;
	*) want="$bad:$pos: metrics.address $addr listens on every address, listen[0]'s (10.200.0.1:3128" ;;
	esac
	if [ "$rc" = 1 ] && printf '%s\n' "$out" | grep -qF -- "$want"; then
		mt_pass "metrics on $addr refused at its position ($pos)"
	else
		mt_fail "metrics on $addr: exit $rc, want '$want' in: $out"
	fi
done
if mt_bg m3 moat "$MOATD" -c "$bad" --ready-fd 3 >/dev/null; then
	mt_fail "moatd started with metrics on every address"
else
	mt_pass "...and moatd does not start with it"
fi

mt_finish
