#!/bin/bash
# t_audit.sh - moatd's audit log: one JSON object per line, its fields, and
# SIGUSR1 reopening the file after it was moved away.
#
#   cli: curl / socks5.py --> moat: moatd (audit -> $MT_T/audit.log)
#        --> net: origin.py 203.0.113.10
#   (the full drawing is at the top of lib.sh)
#
# Each kind of decision (HTTP request allowed / denied by rule / no rule /
# metadata / malformed, CONNECT allowed and denied, SOCKS5 allowed and
# denied) leaves the line the contract describes: event, proto, sandbox (the
# listener's), host, port, ip, verdict, reason, rule, method, path, status,
# bytes and duration where known.

. "$(dirname "$0")/lib.sh"

mt_init
mt_need_moatd
mt_world
conf=$MT_T/moatd.json
A=$MT_T/audit.log
mt_conf "$conf"
mt_moatd_start "$conf"
BASE="ts,sandbox,proto,host,port,ip,verdict,reason,rule"
IP_ORIGIN='^(203\.0\.113\.10|2001:db8::10)$'	# origin.test: A and AAAA

# audited FILTER...: the audit has a line matching the filters.
audited()
{
	[ "$(mt_jl "$A" count "$@" 2>/dev/null)" -ge 1 ]
}

# audit_line MESSAGE FIELDS FILTER...: waits (bounded) for a line matching
# the filters, then checks that FIELDS are all present in it.
audit_line()
{
	local msg=$1 fields=$2 miss
	shift 2
	if ! mt_wait_for 3 audited "$@"; then
		mt_fail "$msg: no audit line with $*" "$A"
		return 1
	fi
	miss=$(mt_jl "$A" missing "$fields" "$@" 2>/dev/null)
	if [ -z "$miss" ]; then
		mt_pass "$msg: line with $* and fields $fields"
	else
		mt_fail "$msg: line with $* lacks $miss" "$A"
	fi
}

# audit_num MESSAGE FIELD MIN MAX FILTER...: FIELD of the last matching line
# is an integer in [MIN, MAX].
audit_num()
{
	local msg=$1 field=$2 lo=$3 hi=$4 v
	shift 4
	v=$(mt_jl "$A" get "$field" "$@" 2>/dev/null)
	if [[ $v =~ ^[0-9]+$ ]] && [ "$v" -ge "$lo" ] && [ "$v" -le "$hi" ]; then
		mt_pass "$msg: $field=$v"
	else
		mt_fail "$msg: $field='$v', want an integer in [$lo, $hi]" "$A"
	fi
}

# --- HTTP ------------------------------------------------------------------------
mt_curl a1 -x "http://$MT_HTTP" http://origin.test/bytes/20000
audit_line "allowed GET" "$BASE,method,path,status,bytes_up,bytes_down,duration_ms" \
    event=request proto=http sandbox=it-http host=origin.test port=80 \
    "ip~$IP_ORIGIN" verdict=allow reason=allowed rule=origin method=GET \
    'path~^/bytes/20000' status=200
audit_num "allowed GET" bytes_down 20000 40000 event=request \
    'path~^/bytes/20000'
audit_num "allowed GET" duration_ms 0 10000 event=request \
    'path~^/bytes/20000'

head -c 5000 /dev/urandom > "$MT_T/up.bin"
mt_curl a2 -x "http://$MT_HTTP" -H 'Expect:' --data-binary @"$MT_T/up.bin" \
    http://origin.test/upload
audit_line "allowed POST" "$BASE,method,path,status,bytes_up" \
    event=request proto=http method=POST 'path~^/upload' status=200
audit_num "allowed POST" bytes_up 5000 20000 event=request method=POST \
    'path~^/upload'

mt_curl d1 -x "http://$MT_HTTP" http://bad.origin.test/denied
audit_line "denied by rule" "$BASE,method,path,status" event=request \
    proto=http host=bad.origin.test verdict=deny reason=denied-by-rule \
    rule=blocked 'path~^/denied'
mt_log_eq "denied by rule: status" 403 \
    "$A" get status host=bad.origin.test 'path~^/denied'
mt_curl d2 -x "http://$MT_HTTP" http://other.test/none
audit_line "denied, no rule" "$BASE,status" event=request host=other.test \
    verdict=deny reason=no-rule
mt_log_eq "denied, no rule: status" 403 \
    "$A" get status host=other.test reason=no-rule
mt_curl d3 -x "http://$MT_HTTP" http://169.254.169.254/latest/meta-data/
audit_line "metadata" "$BASE,status" event=request host=169.254.169.254 \
    verdict=deny reason=metadata
mt_log_eq "metadata: status" 403 \
    "$A" get status host=169.254.169.254 reason=metadata
mt_curl d4 -x "http://$MT_HTTP" http://loop.wild.test/
audit_line "resolved to loopback" "$BASE" host=loop.wild.test \
    ip=127.0.0.1 verdict=deny reason=private-address
mt_raw d5 --tcp "$MT_HTTP" --timeout 3 \
    --send 'GET /origin-form HTTP/1.1\r\nHost: origin.test\r\n\r\n'
audit_line "malformed request" "ts,sandbox,proto,verdict,reason" \
    proto=http verdict=deny reason=bad-request

# --- CONNECT ---------------------------------------------------------------------
mt_curl c1 -p -x "http://$MT_HTTP" http://origin.test:8080/bytes/30000
audit_line "CONNECT open" "$BASE" event=open proto=connect sandbox=it-http \
    host=origin.test port=8080 "ip~$IP_ORIGIN" verdict=allow \
    reason=allowed rule=origin
audit_line "CONNECT close" "$BASE,bytes_up,bytes_down,duration_ms" \
    event=close proto=connect host=origin.test port=8080
audit_num "CONNECT close" bytes_down 30000 60000 event=close proto=connect \
    port=8080
audit_num "CONNECT close" bytes_up 30 2000 event=close proto=connect port=8080
mt_curl c2 -p -x "http://$MT_HTTP" http://origin.test:9090/
audit_line "CONNECT denied (port)" "$BASE" proto=connect port=9090 \
    verdict=deny reason=port rule=origin

# --- SOCKS5, the mixed and the Unix listener --------------------------------------
mt_curl s1 -x "socks5h://$MT_SOCKS" http://origin.test/socks
audit_line "SOCKS5 open" "$BASE" event=open proto=socks5 sandbox=it-socks \
    host=origin.test port=80 "ip~$IP_ORIGIN" verdict=allow
audit_line "SOCKS5 close" "$BASE,bytes_up,bytes_down,duration_ms" \
    event=close proto=socks5 sandbox=it-socks
mt_curl s2 -x "socks5h://$MT_SOCKS" http://bad.origin.test/
audit_line "SOCKS5 denied" "$BASE" proto=socks5 host=bad.origin.test \
    verdict=deny reason=denied-by-rule rule=blocked
mt_curl s3 -x "http://$MT_MIXED" http://origin.test/mixed
audit_line "mixed listener's sandbox" "$BASE" sandbox=it-mixed \
    'path~^/mixed' verdict=allow
mt_raw s4 --unix "$MT_T/proxy.sock" --timeout 5 --stop-after-response \
    --send 'GET http://origin.test/unix HTTP/1.1\r\nHost: origin.test\r\n\r\n'
audit_line "unix listener's sandbox" "$BASE" sandbox=it-unix \
    'path~^/unix' verdict=allow

# --- the whole file --------------------------------------------------------------------
if mt_jl "$A" count >/dev/null 2>"$MT_T/jl.err"; then
	mt_pass "every audit line is one JSON object ($(mt_lines "$A") lines)"
else
	mt_fail "the audit log has lines that are not JSON objects" "$MT_T/jl.err"
fi
n=$(mt_jl "$A" count 'verdict~^(allow|deny)$' 2>/dev/null)
mt_eq "every line has verdict allow or deny" "$(mt_lines "$A")" "$n" "$A"
n=$(mt_jl "$A" count 'event~^(request|open|close)$' 2>/dev/null)
mt_eq "every line has event request, open or close" "$(mt_lines "$A")" "$n" \
    "$A"

# --- SIGUSR1 reopens the file ------------------------------------------------------------
mv "$A" "$A.1"
kill -USR1 "$MT_MOATD_PID"
if mt_wait_for 3 test -e "$A"; then
	mt_pass "SIGUSR1: moatd reopened $A (a new file exists)"
else
	mt_fail "SIGUSR1: no new $A within 3 s" "$MT_T/moatd.err"
fi
n1=$(mt_lines "$A.1")
mt_curl r1 -x "http://$MT_HTTP" http://origin.test/after-reopen
audit_line "after SIGUSR1" "$BASE" 'path~^/after-reopen' verdict=allow
n=$(mt_jl "$A.1" count 'path~^/after-reopen' 2>/dev/null)
mt_eq "the moved file got no new line" 0 "$n" "$A.1"
mt_eq "the moved file kept its lines" "$n1" "$(mt_lines "$A.1")"

if grep -q '"ts"' "$MT_T/moatd.err" 2>/dev/null &&
    grep -q '"verdict"' "$MT_T/moatd.err"; then
	mt_fail "audit lines also went to moatd's stderr" "$MT_T/moatd.err"
else
	mt_pass "audit lines went to the file only"
fi
if mt_moatd_alive; then
	mt_pass "moatd still runs"
else
	mt_fail "moatd died" "$MT_T/moatd.err"
fi
mt_finish
