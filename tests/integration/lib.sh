# lib.sh - the test world of moat's integration tests.  Sourced by t_*.sh.
#
# What it is: a small internet built from network namespaces, created and
# removed by each test run, and the functions the scenarios share: start a
# process in a namespace and wait until it says "ready", run curl as the
# sandbox, read logs, report PASS:/FAIL: lines.
#
# The world (every name is prefixed with a per-run tag, mt<PID>x<RANDOM>):
#
#   cli (the sandbox)          moat (moatd runs here)          net ("internet")
#  +-------------------+      +------------------------+      +------------------------+
#  | eth0 10.200.0.2   |------| c0 10.200.0.1          |      | origin.py              |
#  |      fd00:200::2  | veth |    fd00:200::1         |      |  203.0.113.10 :80 :8080|
#  | default route via |      |                        | veth |   :9090 :443(TLS)      |
#  | 10.200.0.1 (which |      | n0 203.0.113.1         |------|  203.0.113.12 :80      |
#  | does NOT forward) |      |    2001:db8::1         |      |  203.0.113.20 :80      |
#  +-------------------+      |                        |      |  [2001:db8::10] :80    |
#                             |                        |      |   :8080                |
#                             |                        |      |  [2001:db8::20] :80    |
#                             | lo: 127.0.0.1, ::1     |      | 203.0.113.11: nothing  |
#                             |  "loop" canary :80     |      |  listens (refuses)     |
#                             |  :8080 (origin.py)     |      | (203.0.113.99: no host)|
#                             |                        |      | dns.py 203.0.113.53    |
#                             |                        |      |        [2001:db8::53]  |
#                             | m0 169.254.0.1         |      +------------------------+
#                             |    fd00:ec2::1         |      meta (cloud metadata)
#                             |                        | veth +------------------------+
#                             |                        |------| 169.254.169.254        |
#                             |                        |      | 169.254.10.10          |
#                             | l0 10.66.0.1           |      | fd00:ec2::254  :80     |
#                             |    fd66::1             |      +------------------------+
#                             |                        |      lan (an internal host)
#                             |                        | veth +------------------------+
#                             |                        |------| 10.66.0.10, fd66::10 :80|
#                             +------------------------+      +------------------------+
#
# Nothing is connected to the host's own network: the namespaces only have
# veth links to each other, the moat namespace does not forward, and no
# namespace has a route to anything but these links.  Every server logs each
# connection it accepts (JSON lines in $MT_T/<name>.log), so a test can show
# that a blocked target received nothing.
#
# Environment: MOAT_BUILDDIR (moatd at proxy/moatd, the CLI at
# launcher/moat) and MOAT_SRCDIR (this tree); both default to the
# repository this file is in.  MT_KEEP=1 keeps the temporary directory.
#
# Exit codes (automake): 0 pass, 1 a check failed, 77 skip, 99 hard error.

set -u

MT_NAME=${0##*/}
MT_NAME=${MT_NAME%.sh}
MT_LIBDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${MOAT_SRCDIR:=$(cd "$MT_LIBDIR/../.." && pwd)}"
: "${MOAT_BUILDDIR:=$MOAT_SRCDIR}"
MT_HELPERS=$MOAT_SRCDIR/tests/integration/helpers
MOATD=${MOATD:-$MOAT_BUILDDIR/proxy/moatd}
MOAT=${MOAT:-$MOAT_BUILDDIR/launcher/moat}

MT_TEST_TIMEOUT=${MT_TEST_TIMEOUT:-480}	# watchdog for a whole script
# Seconds any background process may live: as long as the script may, so
# that on a loaded machine no server of the world ends before its test
# (clean-up ends them all; this bounds what a killed run leaves behind).
MT_LIFETIME=${MT_LIFETIME:-$MT_TEST_TIMEOUT}
# Waits are bounded but generous: with tests running side by side, the
# kernel's namespace set-up and tear-down can stall `ip netns` for seconds.
# Each wait ends as soon as its event comes.
MT_READY_STEPS=300		# x 0.1 s: how long a process may take to bind
MT_STOP_STEPS=100		# x 0.1 s: how long a process may take to exit
MT_CURL_MAX=${MT_CURL_MAX:-8}	# --max-time of one curl, seconds

MT_NPASS=0
MT_NFAIL=0
MT_PIDS=""
MT_NSES=""
MT_FDS=""
MT_ETC_NETNS=""
MT_MOUNTS=""
MT_T=""
MT_WATCHDOG=""

# moatd's listeners in the standard config (mt_conf), as the sandbox dials
# them.  Other addresses are written out where used, as in the drawing.
MT_HTTP=10.200.0.1:3128
MT_SOCKS=10.200.0.1:1080
MT_MIXED=10.200.0.1:8888
MT_HTTP6='[fd00:200::1]:3128'

# ------------------------------------------------------------------
# Reporting
# ------------------------------------------------------------------

mt_pass()
{
	MT_NPASS=$((MT_NPASS + 1))
	echo "PASS: $*"
}

# mt_fail MESSAGE [FILE...]: a failed check, with the tail of each FILE.
mt_fail()
{
	local msg=$1 f
	shift
	MT_NFAIL=$((MT_NFAIL + 1))
	echo "FAIL: $msg"
	for f in "$@"; do
		[ -s "$f" ] || continue
		echo "  --- last lines of ${f##*/} ---"
		tail -n 15 "$f" | sed 's/^/  | /'
	done
}

# mt_eq MESSAGE EXPECTED ACTUAL [FILE...]
mt_eq()
{
	local msg=$1 want=$2 got=$3
	shift 3
	if [ "$want" = "$got" ]; then
		mt_pass "$msg ($got)"
	else
		mt_fail "$msg: expected '$want', got '$got'" "$@"
	fi
}

# mt_in_set MESSAGE ACTUAL "A B C" [FILE...]: ACTUAL is one of the words.
mt_in_set()
{
	local msg=$1 got=$2 set=$3 w
	shift 3
	for w in $set; do
		if [ "$got" = "$w" ]; then
			mt_pass "$msg ($got)"
			return 0
		fi
	done
	mt_fail "$msg: expected one of {$set}, got '$got'" "$@"
}

mt_skip()
{
	echo "SKIP: $MT_NAME: $*"
	exit 77
}

# mt_error MESSAGE: the test itself could not run (exit 99, hard error).
mt_error()
{
	echo "ERROR: $MT_NAME: $*"
	MT_EXIT=99
	exit 99
}

mt_finish()
{
	echo "$MT_NAME: $MT_NPASS passed, $MT_NFAIL failed"
	if [ "$MT_NFAIL" -gt 0 ]; then
		mt_dump_logs
		exit 1
	fi
	exit 0
}

mt_dump_logs()
{
	local f
	[ -n "$MT_T" ] && [ -d "$MT_T" ] || return 0
	for f in "$MT_T"/moatd.err "$MT_T"/audit.log "$MT_T"/origin.log \
	    "$MT_T"/dns.log "$MT_T"/meta.log "$MT_T"/lan.log "$MT_T"/loop.log; do
		[ -s "$f" ] || continue
		echo "--- last lines of ${f##*/} ---"
		tail -n 30 "$f"
	done
}

# ------------------------------------------------------------------
# Set-up and clean-up
# ------------------------------------------------------------------

# mt_init [TOOL...]: skip unless root with the tools; make the temporary
# directory and the run tag; arm clean-up and the watchdog.
mt_init()
{
	local t
	if [ "${MT_NEED_ROOT:-1}" = 1 ] && [ "$(id -u)" -ne 0 ]; then
		mt_skip "needs root (network namespaces)"
	fi
	for t in ip timeout python3 curl "$@"; do
		command -v "$t" >/dev/null 2>&1 || mt_skip "needs $t"
	done
	MT_PY=python3
	[ -x /usr/bin/python3 ] && MT_PY=/usr/bin/python3
	MT_TAG=mt$$x$((RANDOM % 10000))
	MT_T=$(mktemp -d "${TMPDIR:-/tmp}/moat-$MT_NAME.XXXXXX") ||
	    mt_error "cannot make a temporary directory"
	MT_EXIT=""
	trap 'mt_cleanup' EXIT
	trap 'MT_EXIT=130; exit 130' INT
	trap 'MT_EXIT=143; exit 143' TERM
	mt_watchdog "$MT_TEST_TIMEOUT"
}

# The watchdog ends the whole script (with its clean-up) if it overruns.
mt_watchdog()
{
	(
		trap - EXIT INT TERM
		sleep "$1" &
		sp=$!
		trap 'kill $sp 2>/dev/null; exit 0' TERM
		wait $sp
		echo "FAIL: $MT_NAME: watchdog: still running after $1 s"
		kill -TERM $$
	) &
	MT_WATCHDOG=$!
}

mt_cleanup()
{
	local rc=$? pid ns p
	trap - EXIT INT TERM
	[ -n "$MT_EXIT" ] && rc=$MT_EXIT
	[ -n "$MT_WATCHDOG" ] && kill -TERM "$MT_WATCHDOG" 2>/dev/null
	# Our background processes: `timeout` wrappers; TERM reaches the
	# process they run.  Then whatever is still inside our namespaces
	# (all of it started by this run) is killed by pid.
	for pid in $MT_PIDS; do
		kill -TERM "$pid" 2>/dev/null
		p=$(cat /proc/"$pid"/task/"$pid"/children 2>/dev/null)
		# shellcheck disable=SC2086 # one pid per word
		[ -n "$p" ] && kill -TERM $p 2>/dev/null
	done
	mt_wait_for "$(mt_steps_s "$MT_STOP_STEPS")" mt_all_gone
	for ns in $MT_NSES; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			kill -KILL "$pid" 2>/dev/null
		done
	done
	for pid in $MT_PIDS; do
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	for ns in $MT_NSES; do
		ip netns del "$ns" 2>/dev/null
	done
	# Mounts a test made (a tmpfs to fill, say), once nothing uses them.
	for p in $MT_MOUNTS; do
		umount -l "$p" 2>/dev/null
	done
	for ns in $MT_ETC_NETNS; do
		rm -f "/etc/netns/$ns/resolv.conf"
		rmdir "/etc/netns/$ns" 2>/dev/null
	done
	if [ -n "$MT_T" ] && [ -d "$MT_T" ]; then
		if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] || [ -n "${MT_KEEP:-}" ]; then
			echo "logs kept in $MT_T"
		else
			rm -rf "$MT_T"
		fi
	fi
	exit "$rc"
}

# mt_all_gone: 0 once none of our background processes runs.
mt_all_gone()
{
	local pid
	for pid in $MT_PIDS; do
		kill -0 "$pid" 2>/dev/null && return 1
	done
	return 0
}

# mt_ns ROLE: the namespace name of a role (cli, moat, net, meta, lan).
mt_ns()
{
	echo "$MT_TAG-$1"
}

# mt_in ROLE CMD...: runs CMD in ROLE's namespace (under a timeout).
mt_in()
{
	local ns
	ns=$(mt_ns "$1")
	shift
	timeout -k 2 30 ip netns exec "$ns" "$@"
}

mt_addns()
{
	local ns
	ns=$(mt_ns "$1")
	ip netns add "$ns" || return 1
	MT_NSES="$MT_NSES $ns"
	ip -n "$ns" link set lo up
}

# mt_link ROLE_A IF_A ROLE_B IF_B: a veth pair, created in place.
mt_link()
{
	ip link add "$2" netns "$(mt_ns "$1")" type veth \
	    peer name "$4" netns "$(mt_ns "$3")" &&
	ip -n "$(mt_ns "$1")" link set "$2" up &&
	ip -n "$(mt_ns "$3")" link set "$4" up
}

# mt_addr ROLE IF ADDR/LEN...
mt_addr()
{
	local ns=$1 ifc=$2 a
	shift 2
	for a in "$@"; do
		case $a in
		*:*) ip -n "$(mt_ns "$ns")" -6 addr add "$a" dev "$ifc" nodad ;;
		*) ip -n "$(mt_ns "$ns")" addr add "$a" dev "$ifc" ;;
		esac || return 1
	done
}

# mt_topology: the namespaces, links, addresses and routes drawn above.
mt_topology()
{
	local r
	for r in cli moat net meta lan; do
		mt_addns "$r" || mt_skip "cannot create network namespaces"
	done
	mt_link cli eth0 moat c0 &&
	mt_link moat n0 net eth0 &&
	mt_link moat m0 meta eth0 &&
	mt_link moat l0 lan eth0 ||
	    mt_skip "cannot create veth links"
	mt_addr cli eth0 10.200.0.2/24 fd00:200::2/64 &&
	mt_addr moat c0 10.200.0.1/24 fd00:200::1/64 &&
	mt_addr moat n0 203.0.113.1/24 2001:db8::1/64 &&
	mt_addr net eth0 203.0.113.10/24 203.0.113.11/24 203.0.113.12/24 \
	    203.0.113.20/24 203.0.113.53/24 2001:db8::10/64 2001:db8::20/64 \
	    2001:db8::53/64 &&
	mt_addr moat m0 169.254.0.1/16 fd00:ec2::1/64 &&
	mt_addr meta eth0 169.254.169.254/16 169.254.10.10/16 \
	    fd00:ec2::254/64 &&
	mt_addr moat l0 10.66.0.1/24 fd66::1/64 &&
	mt_addr lan eth0 10.66.0.10/24 fd66::10/64 ||
	    mt_error "cannot configure addresses"
	# The sandbox's only way out points at moat's namespace, which must
	# not forward: this is what makes "only moatd is reachable" true.
	ip -n "$(mt_ns cli)" route add default via 10.200.0.1 &&
	ip -n "$(mt_ns cli)" -6 route add default via fd00:200::1 ||
	    mt_error "cannot add the sandbox's routes"
	mt_in moat sysctl -qw net.ipv4.ip_forward=0 \
	    net.ipv6.conf.all.forwarding=0 ||
	    mt_error "cannot turn forwarding off in moat's namespace"
}

# ------------------------------------------------------------------
# Background processes
# ------------------------------------------------------------------

# mt_bg NAME ROLE CMD...: starts CMD in ROLE's namespace ("-": none) under
# `timeout`, with fd 3 on a fifo, stdout to $MT_T/NAME.out and stderr to
# $MT_T/NAME.err, and waits (bounded) until CMD writes "ready" on fd 3.
# Sets MT_PID_<NAME> (the timeout wrapper) and MT_RPID_<NAME> (CMD itself).
# A test that signals CMD and judges how it exits signals MT_RPID and
# waits for MT_PID: the wrapper passes a signal on and, 2 s later, kills
# (exit 137), which a sanitizer build on a busy host can run into.
# Returns 1 if CMD died or never said ready.
mt_bg()
{
	local name=$1 role=$2 fifo fd pid i line rpid part
	shift 2
	[[ $name =~ ^[A-Za-z0-9_]+$ ]] ||
	    mt_error "mt_bg: '$name' is not a valid name (letters, digits, _)"
	fifo=$MT_T/$name.ready
	rm -f "$fifo"
	mkfifo "$fifo" || return 1
	# Opened read-write: never blocks, and CMD never gets SIGPIPE.
	exec {fd}<>"$fifo"
	MT_FDS="$MT_FDS $fd"
	if [ "$role" = - ]; then
		timeout -k 2 "$MT_LIFETIME" "$@" \
		    3>"$fifo" {fd}<&- >>"$MT_T/$name.out" 2>>"$MT_T/$name.err" &
	else
		timeout -k 2 "$MT_LIFETIME" ip netns exec "$(mt_ns "$role")" \
		    "$@" 3>"$fifo" {fd}<&- >>"$MT_T/$name.out" \
		    2>>"$MT_T/$name.err" &
	fi
	pid=$!
	MT_PIDS="$MT_PIDS $pid"
	printf -v "MT_PID_$name" %s "$pid"
	# A read that times out keeps what it got of a line in $line (bash
	# reads a pipe a byte at a time): carry it over, or a "ready" split
	# by the timeout would never match.
	part=""
	for ((i = 0; i < MT_READY_STEPS; i++)); do
		if read -r -t 0.1 -u "$fd" line; then
			line=$part$line
			part=""
			if [ "$line" = ready ]; then
				rpid=$(cat /proc/"$pid"/task/"$pid"/children \
				    2>/dev/null)
				printf -v "MT_RPID_$name" %s "${rpid%% *}"
				return 0
			fi
		else
			part=$part$line
		fi
		kill -0 "$pid" 2>/dev/null || break
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "error: $name did not say ready in $((MT_READY_STEPS / 10)) s"
	else
		wait "$pid"
		echo "error: $name exited with status $? before saying ready"
	fi
	[ -s "$MT_T/$name.err" ] && tail -n 20 "$MT_T/$name.err" | sed 's/^/  | /'
	[ -s "$MT_T/$name.out" ] && tail -n 5 "$MT_T/$name.out" | sed 's/^/  > /'
	return 1
}

# ------------------------------------------------------------------
# Bounded waits
# ------------------------------------------------------------------

# mt_wait_for TIMEOUT_S CMD...: runs CMD every 50 ms until it succeeds
# (returns 0) or TIMEOUT_S seconds (decimals allowed) have passed on the
# clock (returns 1); CMD runs once more at the deadline, so a slow CMD on a
# loaded machine is never judged on a try that started too early.  CMD
# runs in this shell: a function may set the caller's variables (hence the
# odd names of the locals here, which would hide them).
mt_wait_for()
{
	local _mt_t=$1 _mt_ms _mt_end _mt_n _mt_i
	shift
	mt_ms "$_mt_t"
	_mt_ms=$MT_MS
	_mt_end=$(( ${EPOCHREALTIME/[.,]/} / 1000 + _mt_ms ))
	# The count bounds the loop too, should the clock jump: no more tries
	# than the sleeps alone leave room for.
	_mt_n=$((_mt_ms / 50))
	for ((_mt_i = 0; _mt_i < _mt_n; _mt_i++)); do
		"$@" && return 0
		(( ${EPOCHREALTIME/[.,]/} / 1000 < _mt_end )) || break
		sleep 0.05
	done
	"$@"
}

# mt_ms SECONDS: sets MT_MS to SECONDS (decimals allowed: 2.5) in ms.
mt_ms()
{
	local f
	[[ $1 =~ ^([0-9]+)(\.([0-9]{1,3}))?$ ]] ||
	    mt_error "'$1' is not a number of seconds"
	f=${BASH_REMATCH[3]}000
	MT_MS=$((10#${BASH_REMATCH[1]} * 1000 + 10#${f:0:3}))
}

# mt_steps_s STEPS: STEPS x 0.1 s in seconds (the 0.1 s steps of the older
# helpers' arguments).
mt_steps_s()
{
	echo "$(($1 / 10)).$(($1 % 10))"
}

# mt_wait_until TIMEOUT_S DESCRIPTION CMD...: mt_wait_for, and a failed
# check "DESCRIPTION (not within TIMEOUT_S s)", with the tail of moatd's
# stderr, if CMD never succeeded.
mt_wait_until()
{
	local _mt_t=$1 _mt_d=$2
	shift 2
	mt_wait_for "$_mt_t" "$@" && return 0
	mt_fail "$_mt_d (not within $_mt_t s)" "$MT_T/moatd.err"
	return 1
}

# mt_gone PID: 0 once the process PID has ended (for mt_wait_for).
mt_gone()
{
	! kill -0 "$1" 2>/dev/null
}

# mt_wait_exit PID [STEPS]: waits (bounded, STEPS x 0.1 s) for a background
# process of this shell to end; sets MT_WAIT_RC to its exit status, or to
# "running" (and returns 1) if it did not end.  Not in a $(...) subshell:
# only this shell can wait for its children.
mt_wait_exit()
{
	local pid=$1 steps=${2:-$MT_STOP_STEPS}
	mt_wait_for "$(mt_steps_s "$steps")" mt_gone "$pid"
	if kill -0 "$pid" 2>/dev/null; then
		MT_WAIT_RC=running
		return 1
	fi
	wait "$pid"
	MT_WAIT_RC=$?
	return 0
}

# ------------------------------------------------------------------
# The servers of the world
# ------------------------------------------------------------------

# The zone of the world's DNS server.  A scenario may write its own to
# $MT_T/zone.json before mt_world_servers.
mt_zone_default()
{
	cat > "$MT_T/zone.json" <<-'EOF'
	{
	  "origin.test":      [{"type": "A", "data": "203.0.113.10", "ttl": 1},
	                       {"type": "AAAA", "data": "2001:db8::10", "ttl": 1}],
	  "*.origin.test":    [{"type": "A", "data": "203.0.113.10", "ttl": 1}],
	  "other.test":       [{"type": "A", "data": "203.0.113.12", "ttl": 1}],
	  "wild.test":        [{"type": "A", "data": "203.0.113.10", "ttl": 1}],
	  "badwild.test":     [{"type": "A", "data": "203.0.113.10", "ttl": 1}],
	  "ipname.test":      [{"type": "A", "data": "203.0.113.20", "ttl": 1}],
	  "v6only.test":      [{"type": "AAAA", "data": "2001:db8::10", "ttl": 1}],
	  "*.wild.test":      [{"type": "A", "data": "203.0.113.10", "ttl": 1}],
	  "*.w2.test":        [{"type": "A", "data": "203.0.113.12", "ttl": 1}],
	  "loop.wild.test":   [{"type": "A", "data": "127.0.0.1", "ttl": 1}],
	  "loop6.wild.test":  [{"type": "AAAA", "data": "::1", "ttl": 1}],
	  "ten.wild.test":    [{"type": "A", "data": "10.66.0.10", "ttl": 1}],
	  "ll.wild.test":     [{"type": "A", "data": "169.254.10.10", "ttl": 1}],
	  "meta.wild.test":   [{"type": "A", "data": "169.254.169.254", "ttl": 1}],
	  "meta6.wild.test":  [{"type": "AAAA", "data": "fd00:ec2::254", "ttl": 1}],
	  "ula.wild.test":    [{"type": "AAAA", "data": "fd66::10", "ttl": 1}],
	  "fe80.wild.test":   [{"type": "AAAA", "data": "fe80::1", "ttl": 1}],
	  "mapped.wild.test": [{"type": "AAAA", "data": "::ffff:10.66.0.10", "ttl": 1}],
	  "mixed.wild.test":  [{"type": "A", "data": "203.0.113.10", "ttl": 1},
	                       {"type": "A", "data": "127.0.0.1", "ttl": 1}],
	  "rebind.wild.test": {"sequence": [
	                        [{"type": "A", "data": "203.0.113.10", "ttl": 1}],
	                        [{"type": "A", "data": "127.0.0.1", "ttl": 1}]]},
	  "rebind-c.wild.test": {"sequence": [
	                        [{"type": "A", "data": "203.0.113.10", "ttl": 1}],
	                        [{"type": "A", "data": "127.0.0.1", "ttl": 1}]]},
	  "rebind-s.wild.test": {"sequence": [
	                        [{"type": "A", "data": "203.0.113.10", "ttl": 1}],
	                        [{"type": "A", "data": "10.66.0.10", "ttl": 1}]]},
	  "refused.wild.test": [{"type": "A", "data": "203.0.113.11", "ttl": 1}],
	  "fallback.wild.test": [{"type": "A", "data": "203.0.113.11", "ttl": 1},
	                       {"type": "A", "data": "203.0.113.10", "ttl": 1}],
	  "blackhole.wild.test": [{"type": "A", "data": "203.0.113.99", "ttl": 1}],
	  "nx.wild.test":     {"rcode": "NXDOMAIN"},
	  "servfail.wild.test": {"rcode": "SERVFAIL"},
	  "drop.wild.test":   {"drop": true},
	  "metadata.google.internal":
	                      [{"type": "A", "data": "169.254.169.254", "ttl": 1}],
	  "deb.debian.org":   [{"type": "A", "data": "203.0.113.10", "ttl": 1}]
	}
	EOF
}

# A self-signed certificate for the TLS origin (names and address of it).
mt_make_cert()
{
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout "$MT_T/origin.key" -out "$MT_T/origin.crt" -days 2 \
	    -subj /CN=origin.test \
	    -addext "subjectAltName=DNS:origin.test,DNS:*.wild.test,IP:203.0.113.10" \
	    >/dev/null 2>&1
}

# mt_origin NAME ROLE LISTEN...: an origin.py logging to $MT_T/NAME.log.
mt_origin()
{
	local name=$1 role=$2 a args=""
	shift 2
	for a in "$@"; do
		case $a in
		tls:*) args="$args --tls-listen ${a#tls:}" ;;
		*) args="$args --listen $a" ;;
		esac
	done
	# shellcheck disable=SC2086
	mt_bg "$name" "$role" "$MT_PY" "$MT_HELPERS/origin.py" --name "$name" \
	    --log "$MT_T/$name.log" --lifetime "$MT_LIFETIME" --ready-fd 3 \
	    --cert "$MT_T/origin.crt" --key "$MT_T/origin.key" $args
}

# mt_world_servers: DNS, the origin, the metadata server, the internal host
# and the loopback canary, each logging to $MT_T/<name>.log.
mt_world_servers()
{
	command -v openssl >/dev/null 2>&1 || mt_skip "needs openssl"
	[ -f "$MT_T/zone.json" ] || mt_zone_default
	mt_make_cert || mt_error "openssl could not make a certificate"
	touch "$MT_T/dns.log" "$MT_T/origin.log" "$MT_T/meta.log" \
	    "$MT_T/lan.log" "$MT_T/loop.log"
	mt_bg dns net "$MT_PY" "$MT_HELPERS/dns.py" --zone "$MT_T/zone.json" \
	    --listen 203.0.113.53 --listen '[2001:db8::53]' \
	    --log "$MT_T/dns.log" --lifetime "$MT_LIFETIME" --ready-fd 3 &&
	mt_origin origin net 203.0.113.10:80 203.0.113.10:8080 \
	    203.0.113.10:9090 203.0.113.12:80 203.0.113.20:80 \
	    '[2001:db8::10]:80' '[2001:db8::10]:8080' '[2001:db8::20]:80' \
	    tls:203.0.113.10:443 &&
	mt_origin meta meta 0.0.0.0:80 '[::]:80' &&
	mt_origin lan lan 0.0.0.0:80 '[::]:80' &&
	mt_origin loop moat 127.0.0.1:80 127.0.0.1:8080 '[::1]:80' ||
	    mt_error "a server of the test world did not start"
}

# mt_world: topology and servers.
mt_world()
{
	mt_topology
	mt_world_servers
}

# ------------------------------------------------------------------
# moatd
# ------------------------------------------------------------------

mt_need_moatd()
{
	[ -x "$MOATD" ] || mt_error "moatd not built at $MOATD (set MOAT_BUILDDIR)"
}

# mt_conf FILE: the standard config (listeners of the drawing, policy
# opening the origins); change it with mt_conf_set.
mt_conf()
{
	cat > "$1" <<-EOF
	{
	  "listen": [
	    {"proto": "http", "address": "10.200.0.1:3128", "sandbox": "it-http"},
	    {"proto": "socks5", "address": "10.200.0.1:1080", "sandbox": "it-socks"},
	    {"proto": "http+socks5", "address": "10.200.0.1:8888", "sandbox": "it-mixed"},
	    {"proto": "http+socks5", "address": "[fd00:200::1]:3128", "sandbox": "it-v6"},
	    {"proto": "http+socks5", "address": "unix:$MT_T/proxy.sock",
	     "mode": "0666", "sandbox": "it-unix"}
	  ],
	  "policy": {
	    "default": "deny",
	    "allow_private": ["203.0.113.0/24", "2001:db8::/32"],
	    "rules": [
	      {"name": "origin", "action": "allow", "ports": [80, 443, 8080],
	       "hosts": ["origin.test", "*.origin.test", "*.wild.test",
	                 "v6only.test"]},
	      {"name": "by-ip", "action": "allow", "ports": [80],
	       "hosts": ["203.0.113.20", "2001:db8::20"]},
	      {"name": "blocked", "action": "deny", "hosts": ["bad.origin.test"]}
	    ]
	  },
	  "resolver": {"servers": ["203.0.113.53"]},
	  "audit": {"path": "$MT_T/audit.log"}
	}
	EOF
}

# mt_conf_set FILE PATH JSON: sets a value in a config, pretty-printed
# again.  PATH is dotted; a numeric part indexes a list; a last part "+"
# appends to the list, "^" inserts at its front, and "-" deletes the key.
mt_conf_set()
{
	"$MT_PY" - "$@" <<-'EOF'
	import json, sys
	path, where, val = sys.argv[1], sys.argv[2].split("."), sys.argv[3]
	with open(path) as f:
	    conf = json.load(f)
	node = conf
	for k in where[:-1]:
	    node = node[int(k)] if isinstance(node, list) else node.setdefault(k, {})
	last = where[-1]
	if last == "+":
	    node.append(json.loads(val))
	elif last == "^":
	    node.insert(0, json.loads(val))
	elif val == "-":
	    del node[int(last) if isinstance(node, list) else last]
	elif isinstance(node, list):
	    node[int(last)] = json.loads(val)
	else:
	    node[last] = json.loads(val)
	with open(path + ".tmp", "w") as f:
	    json.dump(conf, f, indent=2)
	    f.write("\n")
	EOF
	mv "$1.tmp" "$1"
}

# mt_moatd_start CONF [ARG...]: runs moatd in the moat namespace, waits for
# its "ready".  MT_MOATD_ENV (words K=V) is added to its environment.
# Sets MT_MOATD (timeout wrapper pid) and MT_MOATD_PID (moatd's pid).
mt_moatd_start()
{
	local conf=$1
	shift
	mt_need_moatd
	# shellcheck disable=SC2086
	if ! mt_bg moatd moat env ${MT_MOATD_ENV:-} "$MOATD" -c "$conf" \
	    --ready-fd 3 "$@"; then
		mt_fail "moatd started and said ready" "$MT_T/moatd.err"
		mt_finish
	fi
	MT_MOATD=$MT_PID_moatd
	MT_MOATD_PID=$MT_RPID_moatd
	echo "moatd running (pid $MT_MOATD_PID, config $conf)"
}

# mt_moatd_alive: 0 if moatd still runs.
mt_moatd_alive()
{
	kill -0 "$MT_MOATD_PID" 2>/dev/null
}

# mt_moatd_stop [STEPS]: SIGTERM, then waits (default 15 s) for moatd to
# exit; MT_WAIT_RC is its exit status or "running".
mt_moatd_stop()
{
	kill -TERM "$MT_MOATD_PID" 2>/dev/null
	mt_wait_exit "$MT_MOATD" "${1:-150}"
}

# mt_rss_kib PID: resident set size in KiB, from /proc.
mt_rss_kib()
{
	awk '/^VmRSS:/ { print $2 }' /proc/"$1"/status 2>/dev/null
}

# ------------------------------------------------------------------
# Clients (they run in the sandbox's namespace)
# ------------------------------------------------------------------

# mt_curl NAME CURL_ARG...: curl in the cli namespace.  Response headers
# in $MT_T/NAME.hdr, body in NAME.body, stderr in NAME.err.  Sets MT_RC
# (curl's exit status), MT_CODE (%{http_code}, of the last transfer) and
# MT_CONNECT (%{http_connect}: the proxy's answer to CONNECT, 000 if none).
mt_curl()
{
	local n=$1 out
	shift
	rm -f "$MT_T/$n.hdr" "$MT_T/$n.body"
	out=$(timeout -k 2 $((MT_CURL_MAX + 5)) \
	    ip netns exec "$(mt_ns cli)" curl -sS --max-time "$MT_CURL_MAX" \
	    --connect-timeout 3 -D "$MT_T/$n.hdr" -o "$MT_T/$n.body" \
	    -w '%{http_code} %{http_connect}\n' "$@" 2>"$MT_T/$n.err")
	MT_RC=$?
	out=$(echo "$out" | tail -n 1)
	MT_CODE=${out%% *}
	MT_CONNECT=${out##* }
	[ -n "$MT_CODE" ] || MT_CODE=000
	[ -n "$MT_CONNECT" ] || MT_CONNECT=000
}

# mt_denied MESSAGE NAME STATUS HOST REASON [RULE]: the response curl saved
# as NAME is moatd's denial: STATUS (from MT_CODE, or MT_CONNECT for a
# CONNECT), X-Moat-Reason REASON, X-Moat-Rule RULE if given (absent if
# RULE is "-"), and, when a body was saved, a body naming host, reason and
# rule.  One PASS/FAIL line.
mt_denied()
{
	local msg=$1 n=$2 status=$3 host=$4 reason=$5 rule=${6:-} bad="" got
	got=$MT_CODE
	[ "$got" = 000 ] && got=$MT_CONNECT
	[ "$got" = "$status" ] || bad="$bad status $got (want $status);"
	got=$(mt_hdr "$n" X-Moat-Reason)
	[ "$got" = "$reason" ] || bad="$bad X-Moat-Reason '$got' (want $reason);"
	if [ "$rule" = - ]; then
		got=$(mt_hdr "$n" X-Moat-Rule)
		[ -z "$got" ] || bad="$bad X-Moat-Rule '$got' (want none);"
	elif [ -n "$rule" ]; then
		got=$(mt_hdr "$n" X-Moat-Rule)
		[ "$got" = "$rule" ] || bad="$bad X-Moat-Rule '$got' (want $rule);"
	fi
	if [ -s "$MT_T/$n.body" ]; then
		grep -qiF -- "$host" "$MT_T/$n.body" ||
		    bad="$bad body does not name $host;"
		grep -qF -- "$reason" "$MT_T/$n.body" ||
		    bad="$bad body does not name $reason;"
		if [ -n "$rule" ] && [ "$rule" != - ]; then
			grep -qF -- "$rule" "$MT_T/$n.body" ||
			    bad="$bad body does not name rule $rule;"
		fi
	fi
	if [ -z "$bad" ]; then
		mt_pass "$msg: $status $reason${rule:+ rule=$rule}"
	else
		mt_fail "$msg:$bad" "$MT_T/$n.hdr" "$MT_T/$n.body" \
		    "$MT_T/$n.err" "$MT_T/moatd.err"
	fi
}

# mt_allowed MESSAGE NAME [STATUS]: curl's transfer NAME got STATUS (200)
# from the origin itself (X-Origin-Name present).
mt_allowed()
{
	local msg=$1 n=$2 status=${3:-200}
	if [ "$MT_CODE" = "$status" ] && [ -n "$(mt_hdr "$n" X-Origin-Name)" ]
	then
		mt_pass "$msg: $status from the origin"
	else
		mt_fail "$msg: HTTP $MT_CODE (want $status from the origin), curl exit $MT_RC" \
		    "$MT_T/$n.hdr" "$MT_T/$n.body" "$MT_T/$n.err" \
		    "$MT_T/moatd.err"
	fi
}

# mt_hdr NAME HEADER: the value of HEADER in the last response head curl
# saved for NAME (case-insensitive name; CR removed).
mt_hdr()
{
	awk -v h="$(echo "$2" | tr '[:upper:]' '[:lower:]')" '
	    /^HTTP\// { v = "" }
	    { line = $0; sub(/\r$/, "", line)
	      i = index(line, ":")
	      if (i > 0 && tolower(substr(line, 1, i - 1)) == h) {
	          v = substr(line, i + 1); sub(/^[ \t]+/, "", v) } }
	    END { print v }' "$MT_T/$1.hdr" 2>/dev/null
}

# mt_raw NAME RAWCLIENT_ARG...: rawclient.py in the cli namespace, report
# in $MT_T/NAME.kv; read fields with mt_kv NAME KEY.
mt_raw()
{
	local n=$1
	shift
	timeout -k 2 30 ip netns exec "$(mt_ns cli)" "$MT_PY" \
	    "$MT_HELPERS/rawclient.py" "$@" > "$MT_T/$n.kv" 2>"$MT_T/$n.err"
}

# mt_socks NAME SOCKS5_ARG...: socks5.py in the cli namespace, report in
# $MT_T/NAME.kv.
mt_socks()
{
	local n=$1
	shift
	timeout -k 2 30 ip netns exec "$(mt_ns cli)" "$MT_PY" \
	    "$MT_HELPERS/socks5.py" "$@" > "$MT_T/$n.kv" 2>"$MT_T/$n.err"
}

# mt_kv NAME KEY: a field of a KEY=VALUE report.
mt_kv()
{
	sed -n "s/^$2=//p" "$MT_T/$1.kv" 2>/dev/null | head -n 1
}

# ------------------------------------------------------------------
# Logs
# ------------------------------------------------------------------

# mt_jl FILE ARG...: jsonl.py (count/get/missing/dump with filters).
mt_jl()
{
	"$MT_PY" "$MT_HELPERS/jsonl.py" "$@"
}

# mt_other_origin SAN: a second HTTPS origin, "other", on 203.0.113.12:443
# in net (log other.log), with a self-signed certificate for other.test
# whose subjectAltName is SAN (e.g. "DNS:other.test,DNS:git.test"):
# a host that no secret is bound to, for the secret tests.
mt_other_origin()
{
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout "$MT_T/other.key" -out "$MT_T/other.crt" -days 2 \
	    -subj /CN=other.test -addext "subjectAltName=$1" \
	    >/dev/null 2>&1 ||
	    mt_error "openssl could not make other.test's certificate"
	touch "$MT_T/other.log"
	mt_bg other net "$MT_PY" "$MT_HELPERS/origin.py" --name other \
	    --log "$MT_T/other.log" --lifetime "$MT_LIFETIME" --ready-fd 3 \
	    --cert "$MT_T/other.crt" --key "$MT_T/other.key" \
	    --tls-listen 203.0.113.12:443 || mt_error "other.test did not start"
}

# mt_log_eq MESSAGE WANT FILE JL_ARG...: mt_eq MESSAGE WANT on what
# "mt_jl FILE JL_ARG..." prints, once it prints WANT or 3 s have passed:
# moatd's audit writer may still hold a line that is already decided (it
# writes at most once per 20 ms), so a check of a line waits for it.
mt_log_eq()
{
	local msg=$1 want=$2 file=$3
	shift 3
	MT_LOG_GOT=""
	mt_wait_for 3 mt_log_is "$want" "$file" "$@"
	mt_eq "$msg" "$want" "$MT_LOG_GOT" "$file"
}

# mt_log_is WANT FILE JL_ARG...: for mt_wait_for; sets MT_LOG_GOT.
mt_log_is()
{
	local want=$1 file=$2
	shift 2
	MT_LOG_GOT=$(mt_jl "$file" "$@")
	[ "$MT_LOG_GOT" = "$want" ]
}

# mt_lines FILE: number of lines (0 if absent).
mt_lines()
{
	if [ -f "$1" ]; then
		wc -l < "$1" | tr -d ' '
	else
		echo 0
	fi
}

# mt_mark: remembers the size of every server log; mt_new NAME then prints
# the lines NAME.log got since.
mt_mark()
{
	local n
	for n in origin dns meta lan loop; do
		printf -v "MT_MARK_$n" %s "$(mt_lines "$MT_T/$n.log")"
	done
}

mt_new()
{
	local mark
	mark=MT_MARK_$1
	tail -n +"$((${!mark:-0} + 1))" "$MT_T/$1.log" 2>/dev/null
}

# mt_untouched MESSAGE NAME...: PASS if none of the servers NAME logged a
# connection or a request since mt_mark.  The end of a connection accepted
# before (a close, or the server's own idle timeout: moatd keeps idle
# upstream connections) is not traffic reaching the server.
mt_untouched()
{
	local msg=$1 n got="" logs=()
	shift
	for n in "$@"; do
		if [ -n "$(mt_new "$n" | grep -E '"event": "(accept|request|garbage|tls-error)"')" ]; then
			got="$got $n"
			logs+=("$MT_T/$n.log")
		fi
	done
	if [ -z "$got" ]; then
		mt_pass "$msg: no connection reached $*"
	else
		mt_fail "$msg: reached$got" "${logs[@]}"
	fi
}

# mt_wait_log FILE PATTERN [STEPS]: waits (bounded, 0.1 s steps) until a
# line of FILE matches the grep -E PATTERN.  Returns 1 if none did.
mt_wait_log()
{
	local f=$1 pat=$2 steps=${3:-50}
	mt_wait_for "$(mt_steps_s "$steps")" grep -Eq -- "$pat" "$f" 2>/dev/null
}

# ------------------------------------------------------------------
# moat run, moat attach, moat-forward (t_run_*.sh, t_attach.sh,
# t_boundary.sh, t_sidecar.sh)
# ------------------------------------------------------------------

MOAT_NETNS=${MOAT_NETNS:-$MOAT_BUILDDIR/netns-helper/moat-netns}
MOAT_FORWARD=${MOAT_FORWARD:-$MOAT_BUILDDIR/forward/moat-forward}
# What every `moat run` of the world needs: the world's resolver, and
# its documentation ranges opened (moat denies them by default).
MT_RUN_WORLD="--resolver 203.0.113.53 --allow-private 203.0.113.0/24 --allow-private 2001:db8::/32"
MT_AS_NOBODY="setpriv --reuid nobody --regid nogroup --clear-groups"
# The probe as the sandbox runs it (the system python: nobody cannot
# read a per-user installation).
MT_PROBE="/usr/bin/python3 $MOAT_SRCDIR/tests/integration/helpers/probe.py"
# `nft list tables` of Debian 12's nft never returns in a namespace that
# holds moat's egress table (a netdev chain hooked by name prefix): this
# lists the tables from a netlink dump of tables alone.
MT_NFT_TABLES="/usr/bin/python3 $MOAT_SRCDIR/tests/integration/helpers/nfttables.py"

# mt_run_need [TOOL...]: moat, moat-netns and moatd built, and the tools.
mt_run_need()
{
	local t
	mt_need_moatd
	[ -x "$MOAT" ] || mt_error "moat not built at $MOAT"
	[ -x "$MOAT_NETNS" ] || mt_error "moat-netns not built at $MOAT_NETNS"
	[ -x /usr/bin/python3 ] || mt_skip "needs /usr/bin/python3"
	for t in setpriv nft "$@"; do
		command -v "$t" >/dev/null 2>&1 || mt_skip "needs $t"
	done
}

# mt_userns_ok: 0 if user nobody may create user namespaces here.
mt_userns_ok()
{
	mt_in moat $MT_AS_NOBODY unshare -Urnm true >/dev/null 2>&1
}

# mt_nobody_dir: $MT_T/nb, writable by nobody (audit files of rootless
# runs); $MT_T itself becomes traversable.
mt_nobody_dir()
{
	chmod 755 "$MT_T"
	mkdir -p "$MT_T/nb" && chown nobody "$MT_T/nb"
}

# mt_moat_run AS NAME ARG...: `moat run --no-tty ARG...` in the moat
# namespace as AS (root or nobody), stdin /dev/null, stdout in
# $MT_T/NAME.out, stderr in NAME.err; MT_RUN_RC is its exit status.
mt_moat_run()
{
	local as=$1 n=$2 priv=""
	shift 2
	[ "$as" = nobody ] && priv=$MT_AS_NOBODY
	# shellcheck disable=SC2086 # priv is words
	timeout -k 2 60 ip netns exec "$(mt_ns moat)" $priv env \
	    MOAT_MOATD="$MOATD" MOAT_NETNS="$MOAT_NETNS" "$MOAT" run --no-tty \
	    "$@" </dev/null >"$MT_T/$n.out" 2>"$MT_T/$n.err"
	MT_RUN_RC=$?
}

# mt_out NAME KEY: a KEY=VALUE line of $MT_T/NAME.out.
mt_out()
{
	sed -n "s/^$2=//p" "$MT_T/$1.out" 2>/dev/null | head -n 1
}

# mt_moat_state: what moat may leave in the moat namespace, one line:
# moat-* links and moat tables (empty when nothing is left).
mt_moat_state()
{
	{
		ip -n "$(mt_ns moat)" -o link 2>/dev/null |
		    grep -o 'moat-[a-z0-9]*' | sed 's/^/link /'
		mt_in moat $MT_NFT_TABLES 2>/dev/null | grep -w 'moat[-a-z0-9]*' |
		    sed 's/^table //'
	} | sort | tr '\n' ' '
}

# mt_ns_pids ROLE: the sorted pids in ROLE's namespace, one line.
mt_ns_pids()
{
	ip netns pids "$(mt_ns "$1")" 2>/dev/null | sort -n | tr '\n' ' '
}

# mt_netns_users INODE: the processes whose network namespace is
# net:[INODE] (none once a sandbox is gone).
mt_netns_users()
{
	local p
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/ns/net" 2>/dev/null)" = "net:[$1]" ] &&
		    echo "${p#/proc/}"
	done | tr '\n' ' '
}

# mt_left_none: for mt_no_leftovers, sets its state, pids and users and
# says whether they are what a clean end leaves.
mt_left_none()
{
	state=$(mt_moat_state)
	pids=$(mt_ns_pids moat)
	[ -n "$ino" ] && users=$(mt_netns_users "$ino")
	[ -z "$state" ] && [ "$pids" = "$before" ] && [ -z "$users" ]
}

# mt_no_leftovers MESSAGE BEFORE_PIDS [INODE]: nothing of moat remains in
# the moat namespace (links, tables), its processes are those of BEFORE,
# and no process is in the sandbox's namespace INODE.
mt_no_leftovers()
{
	local msg=$1 before=$2 ino=${3:-} state pids users=""
	# The kernel ends a namespace's last processes asynchronously.
	if mt_wait_for 5 mt_left_none; then
		mt_pass "$msg: nothing left (no moat link, table, process)"
	else
		mt_fail "$msg: left behind: state '$state' pids '$pids' (before '$before') in sandbox '$users'"
	fi
}
