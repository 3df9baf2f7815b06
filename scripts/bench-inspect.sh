#!/bin/bash
# bench-inspect.sh - a large HTTPS download through moatd: opaque tunnel
# against inspected (TLS intercepted), with and without secrets.
#
#   bash scripts/bench-inspect.sh [-n RUNS] [-s MB]
#
# Starts its own origin on loopback (nginx from Debian, TLS 1.3, a test
# CA made here) serving one file of MB megabytes (default 100) on three
# ports, and two moatd (optimised, build/bench unless MOATD names a
# binary): one without secrets, one with a secret K.  Then downloads the
# file with curl RUNS times (default 5) in each of five ways, the ways
# taking turns run by run so that the machine's drift falls on all:
#
#   direct        curl to the origin, no proxy
#   tunnel        CONNECT through moatd, opaque (spliced)
#   inspected     CONNECT, "intercept": true, moatd has no secret
#   insp-other    the same with K bound to another host (inject there)
#   insp-bound    K bound to this host (a header injection): the
#                 response is scanned for K's value
#
# and prints, per way, the median MB/s (10^6 bytes/s), the ratio to the
# tunnel, moatd's CPU seconds per GB (user + system, from /proc) and
# the framing the client got (Content-Length or chunked).  Before it
# measures it checks that the config does what it says: K's value sent
# to insp-other's host is refused (secret-leak), to insp-bound's is not.
#
# Traffic stays on 127.0.0.1 (ports 18480-18489).  Every run is bounded
# (curl -m 120) and the count is fixed.  Needs nginx (nginx-light),
# curl, openssl and python3; any user may run it.
#
# Environment: MOATD (a moatd binary), MOAT (a moat binary, for `moat ca
# init`; default beside MOATD).

set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
runs=5
mb=100
while [ $# -gt 0 ]; do
	case $1 in
	-n) runs=$2; shift 2 ;;
	-s) mb=$2; shift 2 ;;
	-h|--help) sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench-inspect.sh: unknown option '$1'" >&2; exit 2 ;;
	esac
done
case $runs$mb in
*[!0-9]*|'') echo "bench-inspect.sh: -n and -s take numbers" >&2; exit 2 ;;
esac
if [ "$runs" -lt 1 ] || [ "$runs" -gt 50 ] || [ "$mb" -lt 1 ] ||
    [ "$mb" -gt 2000 ]; then
	echo "bench-inspect.sh: -n 1..50, -s 1..2000" >&2
	exit 2
fi
for t in nginx curl openssl python3; do
	command -v "$t" >/dev/null 2>&1 || [ -x "/usr/sbin/$t" ] || {
		echo "bench-inspect.sh: needs $t (scripts/deps.sh installs it)" >&2
		exit 1
	}
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

if [ -z "${MOATD:-}" ]; then
	echo "bench-inspect.sh: building moatd (build/bench, -O2)" >&2
	(cd "$here" && { [ -x configure ] || autoreconf -fi >/dev/null; })
	mkdir -p "$here/build/bench"
	(cd "$here/build/bench" &&
	    { [ -f Makefile ] || "$here/configure" -q CFLAGS="-O2 -g"; } &&
	    make -s -j2 proxy/moatd launcher/moat certs/moat-ca) >&2
	MOATD=$here/build/bench/proxy/moatd
fi
MOAT=${MOAT:-$(dirname "$MOATD")/../launcher/moat}

tmp=$(mktemp -d /tmp/moat-bench-inspect.XXXXXX)
pids=()
cleanup()
{
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
chmod 755 "$tmp"

P_DIRECT=18480		# the origin: tunnel and direct
P_INSPECT=18481		# the origin: inspected, no secret bound here
P_BOUND=18482		# the origin: K bound here
L_PLAIN=18485		# moatd without secrets
L_SECRET=18486		# moatd with K

# --- the origin: a test CA, a leaf for 127.0.0.1, nginx ----------------------
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$tmp/oca.key" -out "$tmp/oca.crt" -days 2 \
    -subj /CN=bench-origin-ca >/dev/null 2>&1
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$tmp/o.key" -out "$tmp/o.csr" -subj /CN=127.0.0.1 \
    >/dev/null 2>&1
printf 'subjectAltName=IP:127.0.0.1\n' > "$tmp/o.ext"
openssl x509 -req -in "$tmp/o.csr" -CA "$tmp/oca.crt" -CAkey "$tmp/oca.key" \
    -CAcreateserial -days 2 -extfile "$tmp/o.ext" -out "$tmp/o.crt" \
    >/dev/null 2>&1
mkdir -p "$tmp/www" "$tmp/nginx"
# Incompressible bytes, as a wheel or a tarball is.
head -c $((mb * 1000000)) /dev/urandom > "$tmp/www/big"
size=$((mb * 1000000))
cat > "$tmp/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log crit;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path $tmp/nginx/body;
    proxy_temp_path $tmp/nginx/proxy;
    fastcgi_temp_path $tmp/nginx/fastcgi;
    uwsgi_temp_path $tmp/nginx/uwsgi;
    scgi_temp_path $tmp/nginx/scgi;
    default_type application/octet-stream;
    server {
        listen 127.0.0.1:$P_DIRECT ssl;
        listen 127.0.0.1:$P_INSPECT ssl;
        listen 127.0.0.1:$P_BOUND ssl;
        ssl_certificate $tmp/o.crt;
        ssl_certificate_key $tmp/o.key;
        ssl_protocols TLSv1.3;
        root $tmp/www;
    }
}
EOF
"$NGINX" -p "$tmp/nginx" -c "$tmp/nginx.conf" -e "$tmp/nginx/error.log" \
    2>"$tmp/nginx.err" &
pids+=($!)

# --- two moatd ----------------------------------------------------------------
"$MOAT" ca init "$tmp/ca" >/dev/null
K_VALUE=bench-secret-value-0123456789abcdef
tls="\"tls\": {\"ca_cert\": \"$tmp/ca/ca.crt\", \"ca_key\": \"$tmp/ca/ca.key\",
          \"upstream_ca_files\": [\"$tmp/oca.crt\"]}"
common="\"audit\": {\"path\": \"/dev/null\"},
  \"limits\": {\"connections\": 1000, \"sandbox_connections\": 1000}"
cat > "$tmp/plain.json" <<EOF
{
  "listen": [{"proto": "http", "address": "127.0.0.1:$L_PLAIN",
              "sandbox": "bench"}],
  "policy": {
    "allow_private": ["127.0.0.0/8"],
    "rules": [
      {"name": "tunnel", "action": "allow", "hosts": ["127.0.0.1"],
       "ports": [$P_DIRECT]},
      {"name": "inspect", "action": "allow", "hosts": ["127.0.0.1"],
       "ports": [$P_INSPECT], "intercept": true}
    ]
  },
  $tls,
  $common
}
EOF
cat > "$tmp/secret.json" <<EOF
{
  "listen": [{"proto": "http", "address": "127.0.0.1:$L_SECRET",
              "sandbox": "bench"}],
  "secrets": {"K": {"env": "BENCH_INSPECT_K"}},
  "policy": {
    "allow_private": ["127.0.0.0/8"],
    "rules": [
      {"name": "inspect", "action": "allow", "hosts": ["127.0.0.1"],
       "ports": [$P_INSPECT], "intercept": true},
      {"name": "bound", "action": "allow", "hosts": ["127.0.0.1"],
       "ports": [$P_BOUND],
       "inject": [{"header": "X-Bench-Key", "value": "\${K}"}]},
      {"name": "elsewhere", "action": "allow", "hosts": ["api.example"],
       "ports": [443],
       "inject": [{"header": "X-Bench-Key", "value": "\${K}"}]}
    ]
  },
  $tls,
  $common
}
EOF
"$MOATD" -q -c "$tmp/plain.json" 2>"$tmp/moatd-plain.err" &
pid_plain=$!
pids+=("$pid_plain")
BENCH_INSPECT_K=$K_VALUE "$MOATD" -q -c "$tmp/secret.json" \
    2>"$tmp/moatd-secret.err" &
pid_secret=$!
pids+=("$pid_secret")

# up PORT: something listens on 127.0.0.1:PORT.
up() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for i in $(seq 100); do
	up $P_DIRECT && up $P_BOUND && up $L_PLAIN && up $L_SECRET && break
	[ "$i" = 100 ] && {
		echo "bench-inspect.sh: the origin or moatd did not start" >&2
		cat "$tmp/nginx.err" "$tmp/moatd-plain.err" \
		    "$tmp/moatd-secret.err" >&2
		exit 1
	}
	sleep 0.1
done

# way NAME: curl's arguments for that way (the URL last).
way()
{
	local o="--cacert $tmp/oca.crt" m="--cacert $tmp/ca/ca.crt"
	case $1 in
	direct) echo "$o https://127.0.0.1:$P_DIRECT/big" ;;
	tunnel) echo "$o -x http://127.0.0.1:$L_PLAIN https://127.0.0.1:$P_DIRECT/big" ;;
	inspected) echo "$m -x http://127.0.0.1:$L_PLAIN https://127.0.0.1:$P_INSPECT/big" ;;
	insp-other) echo "$m -x http://127.0.0.1:$L_SECRET https://127.0.0.1:$P_INSPECT/big" ;;
	insp-bound) echo "$m -x http://127.0.0.1:$L_SECRET https://127.0.0.1:$P_BOUND/big" ;;
	esac
}
# pid_of NAME: the moatd a way goes through (none for direct).
pid_of()
{
	case $1 in
	direct) echo "" ;;
	tunnel|inspected) echo "$pid_plain" ;;
	*) echo "$pid_secret" ;;
	esac
}
# cpu PID: moatd's user + system time, in clock ticks.
cpu()
{
	[ -n "$1" ] || { echo 0; return; }
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}

# --- is the config what it says? ------------------------------------------------
code() { curl -sS -m 10 -o /dev/null -w '%{http_code}' "$@" 2>/dev/null || true; }
c_other=$(code -H "X-Probe: $K_VALUE" --cacert "$tmp/ca/ca.crt" \
    -x "http://127.0.0.1:$L_SECRET" "https://127.0.0.1:$P_INSPECT/none")
c_bound=$(code -H "X-Probe: $K_VALUE" --cacert "$tmp/ca/ca.crt" \
    -x "http://127.0.0.1:$L_SECRET" "https://127.0.0.1:$P_BOUND/none")
if [ "$c_other" != 403 ] || [ "$c_bound" != 404 ]; then
	echo "bench-inspect.sh: K's value to insp-other's host gave" \
	    "$c_other (want 403), to insp-bound's $c_bound (want 404)" >&2
	exit 1
fi

ways="direct tunnel inspected insp-other insp-bound"
: > "$tmp/framing"
for w in $ways; do
	# shellcheck disable=SC2046
	h=$(curl -sS -m 120 -o /dev/null -D - $(way "$w") | tr -d '\r' |
	    tr '[:upper:]' '[:lower:]')
	case $h in
	*"content-length: $size"*) f="Content-Length" ;;
	*"transfer-encoding: chunked"*) f="chunked" ;;
	*) f="?" ;;
	esac
	echo "$w $f" >> "$tmp/framing"
done

echo "bench-inspect.sh: $runs runs of a $mb MB download per way" >&2
: > "$tmp/results"
for r in $(seq "$runs"); do
	for w in $ways; do
		p=$(pid_of "$w")
		c0=$(cpu "$p")
		# shellcheck disable=SC2046
		s=$(curl -sS -m 120 -o /dev/null -w '%{speed_download} %{size_download}' \
		    $(way "$w")) || s="0 0"
		c1=$(cpu "$p")
		echo "$w $s $((c1 - c0))" >> "$tmp/results"
	done
	echo "  run $r/$runs done" >&2
done

python3 - "$tmp/results" "$tmp/framing" "$size" "$(getconf CLK_TCK)" <<'EOF'
import statistics, sys
path, fpath = sys.argv[1], sys.argv[2]
size, tck = int(sys.argv[3]), int(sys.argv[4])
frame = dict(l.split() for l in open(fpath))
ways = ["direct", "tunnel", "inspected", "insp-other", "insp-bound"]
speed, cpu, short = {w: [] for w in ways}, {w: [] for w in ways}, {}
for line in open(path):
    w, bps, got, ticks = line.split()
    if int(float(got)) != size:
        short[w] = short.get(w, 0) + 1
        continue
    speed[w].append(float(bps) / 1e6)
    cpu[w].append(int(ticks) / tck / (size / 1e9))
tun = statistics.median(speed["tunnel"]) if speed["tunnel"] else 0
print("%-11s %9s %9s %12s  %s" % ("way", "MB/s", "/tunnel", "moatd CPU/GB",
    "framing"))
for w in ways:
    if not speed[w]:
        print("%-11s %9s" % (w, "failed"))
        continue
    m = statistics.median(speed[w])
    print("%-11s %9.0f %9.2f %12s  %s%s" % (w, m, m / tun if tun else 0,
        "-" if w == "direct" else "%.2f s" % statistics.median(cpu[w]),
        frame.get(w, "?"), " (%d short)" % short[w] if w in short else ""))
EOF
