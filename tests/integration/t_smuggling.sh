#!/bin/bash
# t_smuggling.sh - ambiguous or malformed request framing (invariant 6).
#
#   cli: rawclient.py (exact bytes) --> moat: moatd 10.200.0.1:3128
#        --> net: origin.py 203.0.113.10 (allowed: origin.test)
#   (the full drawing is at the top of lib.sh)
#
# Each vector targets an allowed origin, so forwarding it would reach
# origin.py.  Each must get 400 (X-Moat-Reason: bad-request; a size limit
# may answer 414/431 with "limit"), moatd must close the connection (the
# stream cannot be trusted after it), and the origin must log nothing: no
# connection, no request, and never the "/smuggled" request hidden in some
# bodies.  A well-formed request on a new connection still works at the end.

. "$(dirname "$0")/lib.sh"

mt_init
mt_need_moatd
mt_world
conf=$MT_T/moatd.json
mt_conf "$conf"
mt_moatd_start "$conf"

O='http://origin.test'
H='Host: origin.test\r\n'
SMUG='GET http://origin.test/smuggled HTTP/1.1\r\nHost: origin.test\r\n\r\n'
BAD="400:bad-request"
LIMIT="400:bad-request|400:limit|414:limit|431:limit|414:bad-request|431:bad-request"
i=0

# vector NAME WANT PAYLOAD: one vector, sent in one write.
vector()
{
	local name=$1 want=$2 payload=$3 n got
	i=$((i + 1))
	n=v$i
	mt_mark
	mt_raw "$n" --tcp "$MT_HTTP" --timeout 3 --send "$payload"
	got="$(mt_kv "$n" status):$(mt_kv "$n" header_x_moat_reason)"
	case "|$want|" in
	*"|$got|"*) mt_pass "$name: $got" ;;
	*) mt_fail "$name: got '$got', want $want" "$MT_T/$n.kv" ;;
	esac
	if [ "$(mt_kv "$n" eof)" = 1 ]; then
		mt_pass "$name: connection closed"
	else
		mt_fail "$name: connection left open after the answer" "$MT_T/$n.kv"
	fi
	# The point of the attack is bytes reaching the origin; a connection
	# opened and closed empty is reported apart.
	if mt_new origin | grep -q -e '"event": "request"' -e '"event": "garbage"'
	then
		mt_fail "$name: request bytes reached the origin" "$MT_T/origin.log"
	else
		mt_pass "$name: no request bytes reached the origin"
	fi
	if mt_new origin | grep -q '"event": "accept"'; then
		mt_fail "$name: moatd opened a connection to the origin (no request sent on it)"
	else
		mt_pass "$name: no connection to the origin"
	fi
}

# --- Content-Length and Transfer-Encoding ------------------------------------------
vector "CL + TE" "$BAD" \
    "POST $O/cl-te HTTP/1.1\r\n${H}Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n$SMUG"
vector "TE + CL" "$BAD" \
    "POST $O/te-cl HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\nContent-Length: 60\r\n\r\n0\r\n\r\n$SMUG"
vector "two different Content-Lengths" "$BAD" \
    "POST $O/cl2 HTTP/1.1\r\n${H}Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!"
vector "two equal Content-Lengths" "$BAD" \
    "POST $O/cl2s HTTP/1.1\r\n${H}Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello"
vector "Content-Length list 5, 6" "$BAD" \
    "POST $O/cll HTTP/1.1\r\n${H}Content-Length: 5, 6\r\n\r\nhello!"
vector "Content-Length +5" "$BAD" \
    "POST $O/clp HTTP/1.1\r\n${H}Content-Length: +5\r\n\r\nhello"
vector "Content-Length -1" "$BAD" \
    "POST $O/clm HTTP/1.1\r\n${H}Content-Length: -1\r\n\r\n"
vector "Content-Length 0x5" "$BAD" \
    "POST $O/clx HTTP/1.1\r\n${H}Content-Length: 0x5\r\n\r\nhello"
vector "Content-Length empty" "$BAD" \
    "POST $O/cle HTTP/1.1\r\n${H}Content-Length: \r\n\r\n"
vector "Content-Length 2^64+5 (overflow)" "$BAD|413:limit|413:bad-request" \
    "POST $O/clo HTTP/1.1\r\n${H}Content-Length: 18446744073709551621\r\n\r\nhello"
vector "Transfer-Encoding: chunked, identity" "$BAD|501:bad-request" \
    "POST $O/te-ci HTTP/1.1\r\n${H}Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n$SMUG"
vector "Transfer-Encoding: xchunked" "$BAD|501:bad-request" \
    "POST $O/te-x HTTP/1.1\r\n${H}Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n$SMUG"
vector "Transfer-Encoding twice" "$BAD|501:bad-request" \
    "POST $O/te2 HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
vector "space before the colon (Transfer-Encoding : chunked)" "$BAD" \
    "POST $O/te-sp HTTP/1.1\r\n${H}Transfer-Encoding : chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n"
vector "Transfer-Encoding in HTTP/1.0" "$BAD" \
    "POST $O/te10 HTTP/1.0\r\n${H}Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n$SMUG"

# --- chunked framing --------------------------------------------------------------
TE="Transfer-Encoding: chunked\r\n"
vector "chunk size not hex (zz)" "$BAD" \
    "POST $O/ch-zz HTTP/1.1\r\n$H$TE\r\nzz\r\nhello\r\n0\r\n\r\n$SMUG"
vector "chunk size -1" "$BAD" \
    "POST $O/ch-neg HTTP/1.1\r\n$H$TE\r\n-1\r\nhello\r\n0\r\n\r\n"
vector "chunk size 0x5" "$BAD" \
    "POST $O/ch-0x HTTP/1.1\r\n$H$TE\r\n0x5\r\nhello\r\n0\r\n\r\n"
vector "chunk size with leading space" "$BAD" \
    "POST $O/ch-sp HTTP/1.1\r\n$H$TE\r\n 5\r\nhello\r\n0\r\n\r\n"
vector "chunk size overflow (2^80)" "$BAD|413:limit|413:bad-request" \
    "POST $O/ch-of HTTP/1.1\r\n$H$TE\r\n100000000000000000005\r\nhello\r\n0\r\n\r\n$SMUG"
vector "chunk data longer than its size" "$BAD" \
    "POST $O/ch-long HTTP/1.1\r\n$H$TE\r\n3\r\nhello\r\n0\r\n\r\n"
vector "chunk line ended by bare LF" "$BAD" \
    "POST $O/ch-lf HTTP/1.1\r\n$H$TE\r\n5\nhello\r\n0\r\n\r\n"

# --- the head itself -------------------------------------------------------------------
vector "obs-fold (header continued on the next line)" "$BAD" \
    "GET $O/fold HTTP/1.1\r\n${H}X-Fold: a\r\n b\r\n\r\n"
vector "bare LF line ends" "$BAD" \
    "GET $O/lf HTTP/1.1\nHost: origin.test\n\n"
vector "bare LF inside the head" "$BAD" \
    "GET $O/lf2 HTTP/1.1\r\n${H}X-A: 1\nX-B: 2\r\n\r\n"
vector "bare CR in a header value" "$BAD" \
    "GET $O/cr HTTP/1.1\r\n${H}X-A: a\rb\r\n\r\n"
vector "NUL in a header value" "$BAD" \
    "GET $O/nul HTTP/1.1\r\n${H}X-A: a\x00b\r\n\r\n"
vector "NUL in the request target" "$BAD" \
    "GET $O/nul\x00x HTTP/1.1\r\n$H\r\n"
vector "space in a header name" "$BAD" \
    "GET $O/sp HTTP/1.1\r\n${H}X A: b\r\n\r\n"
vector "header line without a colon" "$BAD" \
    "GET $O/nocolon HTTP/1.1\r\n${H}X-A b\r\n\r\n"
vector "two spaces in the request line" "$BAD" \
    "GET  $O/2sp HTTP/1.1\r\n$H\r\n"
vector "bad method token" "$BAD" \
    "G(T $O/meth HTTP/1.1\r\n$H\r\n"
vector "HTTP/1.1 without Host" "$BAD" \
    "GET $O/nohost HTTP/1.1\r\nX-A: b\r\n\r\n"
vector "two Host headers" "$BAD" \
    "GET $O/twohost HTTP/1.1\r\n${H}Host: bad.origin.test\r\n\r\n"

# --- sizes -----------------------------------------------------------------------------
long=$(head -c 9000 /dev/zero | tr '\0' a)
vector "request line over 8 KiB" "$LIMIT" \
    "GET $O/$long HTTP/1.1\r\n$H\r\n"
big=$(head -c 70000 /dev/zero | tr '\0' b)
vector "header over 64 KiB" "$LIMIT" \
    "GET $O/bighdr HTTP/1.1\r\n${H}X-Big: $big\r\n\r\n"
many=""
for ((k = 0; k < 150; k++)); do
	many="${many}X-H$k: v\r\n"
done
vector "150 headers (limit 100)" "$LIMIT" \
    "GET $O/many HTTP/1.1\r\n$H$many\r\n"

# --- still serving ---------------------------------------------------------------------
mt_curl ok -x "http://$MT_HTTP" http://origin.test/still-ok
mt_allowed "a well-formed request after all of that" ok
n=$(mt_jl "$MT_T/origin.log" count path=/smuggled)
mt_eq "the origin never saw /smuggled" 0 "$n" "$MT_T/origin.log"
if mt_moatd_alive; then
	mt_pass "moatd still runs"
else
	mt_fail "moatd died" "$MT_T/moatd.err"
fi
mt_finish
