#!/bin/bash
# t_sidecar.sh - the Docker `--network none` sidecar recipe
# (conf/docker/), built without Docker: moatd listens on a Unix socket in
# a folder; the "container" is `unshare -n -m` (no network at all) with
# that folder bind-mounted at /run/moat; moat-forward, started as the
# container's entrypoint wrapper, relays 127.0.0.1:3128 to the socket.
#
#   moat namespace                          "container" (unshare -n -m)
#   +-----------------------------+         +-------------------------------+
#   | moatd: http+socks5 on       |  bind   | /run/moat/proxy.sock          |
#   |  unix:$MT_T/sock/proxy.sock |<=mount=>| moat-forward 127.0.0.1:3128 ->|
#   |  (mode 0666)                |         |   unix:/run/moat/proxy.sock   |
#   +-----------------------------+         | curl, python: HTTP_PROXY=...  |
#          | n0                             +-------------------------------+
#          v
#   net: origin.py 203.0.113.10 (:80, :443 TLS)
#
# Checks: curl (HTTP and HTTPS through CONNECT), SOCKS5 and python urllib
# reach the allowed origin through the forwarder; a denied host gets
# moatd's 403; the container has no other way out; a 5 MB body arrives
# whole; 40 concurrent clients and a connection cap of 2 both work;
# moat-forward exits with its command's status, is statically linked, and
# refuses bad arguments; with moatd gone, clients get a closed connection
# and it says at start that the socket cannot be reached; with lo down it
# refuses to start instead of "listening" where nothing can connect.

. "$(dirname "$0")/lib.sh"

mt_init unshare
mt_need_moatd
[ -x "$MOAT_FORWARD" ] || mt_error "moat-forward not built at $MOAT_FORWARD"
mt_world
mkdir -p "$MT_T/sock"
chmod 755 "$MT_T" "$MT_T/sock"
conf=$MT_T/moatd.json
cat > "$conf" <<EOF
{
  "listen": [
    {"proto": "http+socks5", "address": "unix:$MT_T/sock/proxy.sock",
     "mode": "0666", "sandbox": "docker-app"}
  ],
  "policy": {
    "default": "deny",
    "allow_private": ["203.0.113.0/24", "2001:db8::/32"],
    "rules": [
      {"name": "origin", "action": "allow", "ports": [80, 443],
       "hosts": ["origin.test"]}
    ]
  },
  "resolver": {"servers": ["203.0.113.53"]},
  "audit": {"path": "$MT_T/audit.log"}
}
EOF
mt_moatd_start "$conf"

# container NAME [unshare flags] -- CMD...: CMD in a fresh network and
# mount namespace with the socket folder at /run/moat and lo up (as
# `docker run --network none` has), under moat-forward.
container()
{
	local n=$1
	shift
	timeout -k 2 60 unshare -n -m --propagation private sh -c '
	    set -e
	    ip link set lo up
	    mount -t tmpfs none /run
	    mkdir -p /run/moat
	    mount --bind "$1" /run/moat
	    shift
	    exec "$@"' sh "$MT_T/sock" "$@" >"$MT_T/$n.out" 2>"$MT_T/$n.err"
	MT_RC=$?
}

cat > "$MT_T/app.sh" <<EOF
#!/bin/sh
export HTTP_PROXY=http://127.0.0.1:3128 HTTPS_PROXY=http://127.0.0.1:3128
export http_proxy=\$HTTP_PROXY https_proxy=\$HTTPS_PROXY
curl -sS -m 8 -o /dev/null -w 'http=%{http_code}\n' http://origin.test/
curl -sS -m 8 -k -o /dev/null -w 'https=%{http_code}\n' https://origin.test/
curl -sS -m 8 -o /dev/null -w 'socks=%{http_code}\n' \
    --socks5-hostname 127.0.0.1:3128 http://origin.test/
curl -sS -m 8 -o /dev/null -w 'denied=%{http_code}\n' http://other.test/
curl -sS -m 20 -o /tmp/moat-sidecar.\$\$ -w 'big=%{size_download}\n' \
    http://origin.test/bytes/5000000
rm -f /tmp/moat-sidecar.\$\$
$MT_PROBE --tag py proxyget http://origin.test/
$MT_PROBE --tag direct connect 203.0.113.10 80
/usr/bin/python3 - <<'PY'
import concurrent.futures, urllib.request
def get(i):
    try:
        return urllib.request.urlopen("http://origin.test/?n=%d" % i,
                                      timeout=10).status
    except Exception as e:
        return repr(e)
with concurrent.futures.ThreadPoolExecutor(40) as ex:
    res = list(ex.map(get, range(40)))
print("parallel=%d" % sum(1 for r in res if r == 200))
PY
exit 9
EOF
chmod 755 "$MT_T/app.sh"

# --- the recipe -----------------------------------------------------------
container app "$MOAT_FORWARD" --listen 127.0.0.1:3128 \
    --to unix:/run/moat/proxy.sock -- "$MT_T/app.sh"
mt_eq "moat-forward exits with its command's status" 9 "$MT_RC" "$MT_T/app.err"
mt_eq "curl over HTTP through the forwarder" 200 "$(mt_out app http)" \
    "$MT_T/app.err" "$MT_T/moatd.err"
mt_eq "curl over HTTPS (CONNECT) through the forwarder" 200 \
    "$(mt_out app https)" "$MT_T/app.err"
mt_eq "SOCKS5 through the forwarder" 200 "$(mt_out app socks)" "$MT_T/app.err"
mt_eq "python urllib through the forwarder" origin "$(mt_out app py_origin)" \
    "$MT_T/app.out"
mt_eq "a denied host gets moatd's 403" 403 "$(mt_out app denied)"
mt_eq "5 MB arrive whole" 5000000 "$(mt_out app big)"
mt_eq "40 concurrent clients" 40 "$(mt_out app parallel)" "$MT_T/app.err"
mt_in_set "the container has no other way out" \
    "$(mt_out app direct_result)" "ENETUNREACH" "$MT_T/app.out"
mt_eq "the audit names the sidecar's sandbox" 0 \
    "$(grep -v '"sandbox":"docker-app"' "$MT_T/audit.log" | grep -c '"event":"request"')"

# --- a connection cap: accepting pauses, nothing is lost --------------
container cap "$MOAT_FORWARD" --max-conns 2 --listen 127.0.0.1:3128 \
    --to unix:/run/moat/proxy.sock -- env http_proxy=http://127.0.0.1:3128 \
    /usr/bin/python3 -c '
import concurrent.futures, urllib.request
def get(i):
    try:
        return urllib.request.urlopen(urllib.request.Request(
            "http://origin.test/slow/300", headers={"Connection": "close"}),
            timeout=20).status
    except Exception as e:
        return repr(e)
with concurrent.futures.ThreadPoolExecutor(8) as ex:
    res = list(ex.map(get, range(8)))
print("capped=%d" % sum(1 for r in res if r == 200))
'
mt_eq "--max-conns 2 with 8 slow clients: all served" 8 "$(mt_out cap capped)" \
    "$MT_T/cap.err"
grep -q 'accepting paused' "$MT_T/cap.err" &&
    mt_pass "... and moat-forward said it paused accepting" ||
    mt_fail "no pause at the cap" "$MT_T/cap.err"

# --- moatd gone: a closed connection, no hang -------------------------
container nosock "$MOAT_FORWARD" --listen 127.0.0.1:3128 \
    --to unix:/run/moat/nothing.sock -- sh -c 'curl -sS -m 5 -o /dev/null \
    -w "code=%{http_code}\n" -x http://127.0.0.1:3128 http://origin.test/; \
    echo "curl=$?"'
mt_in_set "no socket: curl gets an empty reply, not a hang" \
    "$(mt_out nosock curl)" "52 56" "$MT_T/nosock.out"
grep -q 'cannot reach /run/moat/nothing.sock' "$MT_T/nosock.err" &&
    mt_pass "... and moat-forward says why" ||
    mt_fail "no message about the missing socket" "$MT_T/nosock.err"
# At start, not only once a client comes: it says the socket cannot be
# reached, instead of a plain "listening".
mt_eq "...said at start, with the error, instead of only \"listening\"" "1 0" \
    "$(grep -c '^moat-forward: listening on 127.0.0.1:3128, but moatd.s socket unix:/run/moat/nothing.sock cannot be reached (No such file or directory)' "$MT_T/nosock.err") $(grep -c 'relaying to unix:' "$MT_T/nosock.err")" \
    "$MT_T/nosock.err"
grep -q 'relaying to unix:/run/moat/proxy.sock' "$MT_T/app.err" &&
    ! grep -q 'cannot be reached' "$MT_T/app.err" &&
    mt_pass "...while a reachable socket gets the plain \"listening\" line" ||
    mt_fail "the recipe's start message" "$MT_T/app.err"

# --- lo down: listening would be a lie ------------------------------------------
# (A fresh network namespace has lo down; 127.0.0.1 binds, nothing connects.)
timeout -k 2 20 unshare -n "$MOAT_FORWARD" --listen 127.0.0.1:3128 \
    --to "unix:$MT_T/sock/proxy.sock" -- true >"$MT_T/lodown.out" \
    2>"$MT_T/lodown.err"
rc=$?
if [ "$rc" = 1 ] && grep -q '^moat-forward: --listen 127.0.0.1:3128: the loopback interface lo is down' \
    "$MT_T/lodown.err" && ! grep -q listening "$MT_T/lodown.err"; then
	mt_pass "lo down: exit 1, saying lo is down (not \"listening\")"
else
	mt_fail "lo down: rc $rc" "$MT_T/lodown.err"
fi

# --- the binary and its arguments ---------------------------------------
if command -v ldd >/dev/null 2>&1; then
	case $(ldd "$MOAT_FORWARD" 2>&1) in
	*"not a dynamic executable"*|*"statically linked"*)
		mt_pass "moat-forward is statically linked" ;;
	*) mt_fail "moat-forward is dynamically linked: $(ldd "$MOAT_FORWARD" 2>&1 | head -n 3 | tr '\n' ' ')" ;;
	esac
fi
for a in "--to relative.sock|want unix:/ABSOLUTE/PATH" \
    "--listen 1.2.3:80 --to unix:/x|numeric ADDR" \
    "--listen localhost:80 --to unix:/x|numeric ADDR" \
    "--listen 127.0.0.1:0 --to unix:/x|numeric ADDR" \
    "--max-conns 0 --to unix:/x|out of range" \
    "--listen 127.0.0.1:3128|--to unix:PATH is required"; do
	args=${a%%|*}
	want=${a#*|}
	# shellcheck disable=SC2086
	"$MOAT_FORWARD" $args >/dev/null 2>"$MT_T/arg.err"
	rc=$?
	if [ "$rc" = 2 ] && grep -qF -- "$want" "$MT_T/arg.err"; then
		mt_pass "moat-forward $args: usage error, \"$want\""
	else
		mt_fail "moat-forward $args: rc $rc" "$MT_T/arg.err"
	fi
done

mt_finish
