#!/bin/bash
# t_deny_dodge.sh - deny rules on methods and paths are not dodged by
# another spelling, and "strict_methods" refuses what could name another
# method (issue item 10).
#
#   cli: curl / rawclient.py --> moat: moatd 10.200.0.1:3128 (with a CA)
#        --> net: origin.py 203.0.113.10 :80 :443 (origin.test, *.origin.test)
#
# Deny rules on origin.test: "noadmin" (paths /admin) and "nodelete"
# (methods DELETE, strict_methods); an allow rule opens origin.test on 80
# and 443 (inspected, as the deny rules have methods or paths).
# "ro.origin.test" is allowed for GET and HEAD with strict_methods.  Each
# refusal is checked three ways: moatd's 403 and X-Moat-Reason, the audit
# line, and the origin's log (it received nothing).  Spellings that are
# not the denied path still pass, so the deny rules do not over-match.

. "$(dirname "$0")/lib.sh"

mt_init
mt_need_moatd
[ -x "$MOAT" ] || mt_error "moat (the CLI) not built at $MOAT"
mt_world
"$MOAT" ca init "$MT_T/ca" >/dev/null || mt_error "moat ca init failed"
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_conf_set "$conf" policy.rules '[
  {"name": "origin", "action": "allow", "hosts": ["origin.test"],
   "ports": [80, 443]},
  {"name": "ro", "action": "allow", "hosts": ["ro.origin.test"],
   "ports": [80], "methods": ["GET", "HEAD"], "strict_methods": true},
  {"name": "noadmin", "action": "deny", "hosts": ["origin.test"],
   "paths": ["/admin"]},
  {"name": "nodelete", "action": "deny", "hosts": ["origin.test"],
   "methods": ["DELETE"], "strict_methods": true}]'
mt_conf_set "$conf" tls "{\"ca_cert\": \"$MT_T/ca/ca.crt\", \"ca_key\": \"$MT_T/ca/ca.key\", \"upstream_ca_files\": [\"$MT_T/origin.crt\"]}"
mt_moatd_start "$conf"
A=$MT_T/audit.log
P=(-x "http://$MT_HTTP" --path-as-is)
i=0

# refused MSG HOST REASON RULE PATH CURL_ARG...: curl is refused with 403
# REASON by RULE, the audit line says so, and the origin saw nothing (an
# inspected tunnel's upstream TLS connection, but no request).
refused()
{
	local msg=$1 host=$2 reason=$3 rule=$4 path=$5 n mark got
	shift 5
	i=$((i + 1))
	n=r$i
	mt_mark
	mark=$(mt_lines "$A")
	mt_curl "$n" "$@"
	mt_denied "$msg" "$n" 403 "$host" "$reason" "$rule"
	# The line may still be in moatd's audit writer: wait for it.
	mt_wait_for 3 audited_once "$mark" reason="$reason" rule="$rule" \
	    "path=$path"
	mt_eq "$msg: audit line" 1 "$got" "$A"
	case " $* " in
	*" https://"*)
		mt_eq "$msg: no request reached the origin" 0 \
		    "$(mt_new origin | mt_jl /dev/stdin count event=request)" \
		    "$MT_T/origin.log" ;;
	*)	mt_untouched "$msg" origin ;;
	esac
}

# audited_once MARK FILTER...: sets got to the number of request lines
# after line MARK that are refusals matching FILTER; 0 if that is 1.
audited_once()
{
	local mark=$1
	shift
	got=$(tail -n +$((mark + 1)) "$A" |
	    mt_jl /dev/stdin count event=request verdict=deny "$@")
	[ "$got" = 1 ]
}

# passes MSG CURL_ARG...: the origin answers.
passes()
{
	local msg=$1
	shift
	i=$((i + 1))
	mt_curl "p$i" "$@"
	mt_allowed "$msg" "p$i"
}

# --- paths: each spelling of /admin that got past the rule -----------------------
for p in /admin /ADMIN /Admin/users '/admin;jsessionid=1' /admin. \
    /%2561dmin /%2Fadmin /%EF%BD%81dmin /%EF%BC%A1DMIN /%C1%A1dmin \
    '/x/..;/admin' /x/%252e%252e/admin /admin%3Fx; do
	refused "GET http://origin.test$p" origin.test denied-by-rule noadmin \
	    "$p" "${P[@]}" "http://origin.test$p"
done
# ... and inside an inspected tunnel.
for p in /ADMIN '/admin;x=1' /%EF%BD%81dmin; do
	refused "GET https://origin.test$p (inspected)" origin.test \
	    denied-by-rule noadmin "$p" "${P[@]}" --cacert "$MT_T/ca/ca.crt" \
	    "https://origin.test$p"
done
# Not /admin: no over-matching.
for p in /administrator /admins /x/admin /public '/%E2%82%ACadmin'; do
	passes "GET http://origin.test$p" "${P[@]}" "http://origin.test$p"
done

# --- methods ------------------------------------------------------------------------
for m in DELETE delete Delete; do
	refused "$m http://origin.test/x" origin.test denied-by-rule nodelete \
	    /x "${P[@]}" -X "$m" http://origin.test/x
done
refused "DELETE https://origin.test/x (inspected)" origin.test \
    denied-by-rule nodelete /x "${P[@]}" --cacert "$MT_T/ca/ca.crt" \
    -X delete https://origin.test/x
passes "POST http://origin.test/x" "${P[@]}" -d a=1 http://origin.test/x

# --- strict_methods: method overrides and bodies on GET ------------------------------
for h in 'X-HTTP-Method-Override: DELETE' 'X-HTTP-Method: DELETE' \
    'X-Method-Override: DELETE' 'x_http_method_override: DELETE'; do
	refused "POST with $h (deny rule)" origin.test method-override \
	    nodelete /x "${P[@]}" -d a=1 -H "$h" http://origin.test/x
done
refused "POST ?_method=DELETE (deny rule)" origin.test method-override \
    nodelete '/x?_method=DELETE' "${P[@]}" -d a=1 \
    'http://origin.test/x?_method=DELETE'
refused "POST with X-HTTP-Method-Override, inspected" origin.test \
    method-override nodelete /y "${P[@]}" --cacert "$MT_T/ca/ca.crt" \
    -d a=1 -H 'X-HTTP-Method-Override: DELETE' https://origin.test/y
refused "GET with X-HTTP-Method-Override (allow rule)" ro.origin.test \
    method-override ro /r "${P[@]}" -H 'X-HTTP-Method-Override: PUT' \
    http://ro.origin.test/r
refused "GET ?_method=PUT (allow rule)" ro.origin.test method-override ro \
    '/r?_method=PUT' "${P[@]}" 'http://ro.origin.test/r?_method=PUT'
refused "GET with a body (allow rule)" ro.origin.test body-on-get ro /r \
    "${P[@]}" -X GET -d secret=1 http://ro.origin.test/r
refused "GET with a chunked body (allow rule)" ro.origin.test body-on-get ro \
    /r "${P[@]}" -X GET -H 'Transfer-Encoding: chunked' -d x=1 \
    http://ro.origin.test/r
refused "GET with a body (deny rule)" origin.test body-on-get nodelete /b \
    "${P[@]}" -X GET -d x=1 http://origin.test/b
passes "GET http://ro.origin.test/r" "${P[@]}" http://ro.origin.test/r
passes "GET with Content-Length: 0" "${P[@]}" -H 'Content-Length: 0' \
    http://ro.origin.test/r
passes "GET ?method=PUT (not _method)" "${P[@]}" \
    'http://ro.origin.test/r?method=PUT'

if mt_moatd_alive; then
	mt_pass "moatd still runs"
else
	mt_fail "moatd died" "$MT_T/moatd.err"
fi
mt_finish
