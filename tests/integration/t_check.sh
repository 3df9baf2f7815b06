#!/bin/bash
# t_check.sh - `moatd --check -c FILE`, `moat check FILE` and `moat explain`.
#
#   no network: both only read a config (explain also runs once in an empty
#   network namespace to show it needs none)
#
# --check: valid configs exit 0 (the shipped default and examples too, and
# a listener address this machine does not have: nothing is bound); broken
# ones exit 1 with one FILE:LINE:COLUMN: line per error, every error of a
# file reported, at the line and column of the offending key or value.
# explain: verdict, rule and reason for allowed and denied targets, exit 0
# allow / 1 deny / 2 usage or config error; how a tunnel to port 22 is
# carried.  A rule that reads requests on port 22 or with "ssh" in
# protocols is an error.  `moat check FILE`: a moatd config or a moat run
# --policy file, each checked as its reader does, exit 0 / 1 / 2; the keys
# moat run skips get warnings, a top-level "rules" a hint.

MT_NEED_ROOT=0
. "$(dirname "$0")/lib.sh"

mt_init
mt_need_moatd
[ -x "$MOAT" ] || mt_error "moat not built at $MOAT (set MOAT_BUILDDIR)"
D=$MT_T

# check FILE: runs --check; sets RC and OUT (stdout and stderr together).
check()
{
	OUT=$(timeout 10 "$MOATD" --check -c "$1" 2>&1)
	RC=$?
}

# has_diag MESSAGE FILE LINE NEEDLE WORD: OUT has "FILE:LINE:COLUMN: " on a
# line that mentions WORD, where COLUMN is the 1-based byte column of the
# first NEEDLE on that LINE of FILE (the offending key or value); NEEDLE
# "-" accepts any column.
has_diag()
{
	local msg=$1 f=$2 l=$3 needle=$4 w=$5 c pat
	if [ "$needle" = - ]; then
		pat="^$f:$l:[0-9]+: "
		c=COLUMN
	else
		c=$(awk -v l="$l" -v n="$needle" 'NR == l { print index($0, n) }' \
		    "$f")
		pat="^$f:$l:$c: "
	fi
	if echo "$OUT" | grep -E -- "$pat" | grep -qF -- "$w"; then
		mt_pass "$msg ($l:$c)"
	else
		mt_fail "$msg: no '$f:$l:$c: ...$w...' in: $(echo "$OUT" | head -n 12)"
	fi
}

# --- valid --------------------------------------------------------------------
mt_conf "$D/good.json"
check "$D/good.json"
mt_eq "the test world's config is valid" 0 "$RC"
check "$MOAT_SRCDIR/conf/default.json"
mt_eq "conf/default.json is valid" 0 "$RC"
# The examples name secrets this machine does not have, which --check
# (rightly) reports; `moat explain` loads a config without reading them.
for f in "$MOAT_SRCDIR"/conf/examples/*.json; do
	[ -e "$f" ] || continue
	"$MOAT" explain -c "$f" http://example.test/ >/dev/null 2>"$D/ex.err"
	rc=$?
	if [ "$rc" -le 1 ]; then
		mt_pass "example ${f##*/} loads (explain exit $rc)"
	else
		mt_fail "example ${f##*/} does not load (explain exit $rc)" \
		    "$D/ex.err"
	fi
done
# A policy file for `moat run --policy`: no listener, an inspecting rule,
# no CA of its own.  explain reads it as moat run does.
cat > "$D/runpol.json" <<-'EOF'
{
  "policy": {"rules": [{"name": "get-only", "action": "allow",
                        "hosts": ["api.example.test"], "methods": ["GET"]}]}
}
EOF
out=$("$MOAT" explain -c "$D/runpol.json" https://api.example.test/v1 2>&1)
rc=$?
mt_eq "explain reads a moat run policy file (no listen, no tls)" \
    "0 get-only" "$rc $(echo "$out" | awk '$1 == "rule" {print $2}')"
printf '{\n  "policy": {"rules": []},\n  "polcy": 1\n}\n' > "$D/runpol2.json"
out=$("$MOAT" explain -c "$D/runpol2.json" https://api.example.test/ 2>&1)
if echo "$out" | grep -qF "$D/runpol2.json:3:3: unknown key \"polcy\""; then
	mt_pass "...and its errors keep the file's own line and column"
else
	mt_fail "moat run policy file error: $out"
fi
cat > "$D/unbound.json" <<-'EOF'
{
  "listen": [{"proto": "http", "address": "192.0.2.77:3128"}]
}
EOF
check "$D/unbound.json"
mt_eq "--check binds nothing (an address this host lacks is fine)" 0 "$RC"

# --- broken ---------------------------------------------------------------------
f=$D/syntax.json
cat > "$f" <<-'EOF'
{
  "listen": [
    {"proto": "http", "address": "127.0.0.1:3128"},
  ]
}
EOF
check "$f"
mt_eq "trailing comma: exit 1" 1 "$RC"
if echo "$OUT" | grep -Eq "^$f:4:[0-9]+: "; then
	mt_pass "trailing comma: reported at line 4"
else
	mt_fail "trailing comma: no '$f:4:COLUMN:' line in: $OUT"
fi

f=$D/multi.json
cat > "$f" <<-'EOF'
{
  "listen": [{"proto": "http", "address": "127.0.0.1:70000"}],
  "policy": {
    "default": "allow",
    "rules": [
      {"name": "r", "action": "allow", "hosts": ["a*.example.com"]},
      {"name": "c", "action": "allow", "cidrs": ["203.0.113.1/24"]},
      {"name": "p", "action": "allow", "hosts": ["x.test"], "ports": [0]}
    ]
  },
  "lisen": []
}
EOF
check "$f"
mt_eq "six errors in one file: exit 1" 1 "$RC"
has_diag "bad port in a listen address" "$f" 2 '"127.0.0.1:70000"' 70000
has_diag "default other than deny" "$f" 4 '"allow"' default
has_diag "'*' inside a label" "$f" 6 '"a*.example.com"' 'a*.example.com'
has_diag "CIDR with host bits set" "$f" 7 '"203.0.113.1/24"' 203.0.113.0/24
has_diag "port 0 in a rule" "$f" 8 '0]' ports
has_diag "unknown top-level key" "$f" 11 '"lisen"' lisen
n=$(echo "$OUT" | grep -c "^$f:[0-9]*:[0-9]*: ")
if [ "$n" -ge 6 ]; then
	mt_pass "every error was reported ($n lines)"
else
	mt_fail "only $n FILE:LINE:COLUMN lines for six errors: $OUT"
fi

f=$D/dup.json
cat > "$f" <<-'EOF'
{
  "listen": [{"proto": "http", "address": "127.0.0.1:3128"}],
  "listen": [{"proto": "http", "address": "127.0.0.1:3129"}]
}
EOF
check "$f"
mt_eq "duplicate key: exit 1" 1 "$RC"
if echo "$OUT" | grep -Eq "^$f:3:[0-9]+: "; then
	mt_pass "duplicate key: reported at line 3"
else
	mt_fail "duplicate key: no '$f:3:COLUMN:' line in: $OUT"
fi

f=$D/types.json
cat > "$f" <<-'EOF'
{
  "listen": "127.0.0.1:3128",
  "policy": {"rules": [{"name": "x", "action": "permit", "hosts": "a.test"}]}
}
EOF
check "$f"
mt_eq "wrong types: exit 1" 1 "$RC"
has_diag "listen is not an array" "$f" 2 '"127.0.0.1:3128"' listen
has_diag "action is neither allow nor deny" "$f" 3 '"permit"' action
has_diag "hosts is not an array" "$f" 3 '"a.test"' hosts

f=$D/listen.json
cat > "$f" <<-'EOF'
{
  "listen": [
    {"proto": "gopher", "address": "127.0.0.1:70"},
    {"proto": "http", "address": "localhost:3128"},
    {"proto": "dns", "address": "unix:/tmp/x.sock"},
    {"proto": "http", "address": "unix:relative.sock"},
    {"proto": "socks5", "address": "10.0.0.1:1080"},
    {"proto": "http", "address": "10.0.0.1:1080"}
  ]
}
EOF
check "$f"
mt_eq "bad listeners: exit 1" 1 "$RC"
has_diag "unknown proto" "$f" 3 '"gopher"' gopher
has_diag "a host name where an address is needed" "$f" 4 '"localhost:3128"' localhost
has_diag "dns on a Unix socket" "$f" 5 - unix
has_diag "relative Unix socket path" "$f" 6 '"unix:relative.sock"' relative
has_diag "the same address twice" "$f" 8 - 10.0.0.1:1080

: > "$D/empty.json"
check "$D/empty.json"
mt_eq "empty file: exit 1" 1 "$RC"
if echo "$OUT" | grep -q "^$D/empty.json:[0-9]*:[0-9]*: "; then
	mt_pass "empty file: reported as FILE:LINE:COLUMN"
else
	mt_fail "empty file: no FILE:LINE:COLUMN line in: $OUT"
fi
f=$D/secret.json
cat > "$f" <<-'EOF'
{
  "listen": [{"proto": "http", "address": "127.0.0.1:3128"}],
  "secrets": {
    "TOKEN": {"env": "MOAT_IT_UNSET_VARIABLE"}
  }
}
EOF
unset MOAT_IT_UNSET_VARIABLE
check "$f"
mt_eq "a secret whose variable is not set: exit 1" 1 "$RC"
has_diag "...reported at the secret's line" "$f" 4 - MOAT_IT_UNSET_VARIABLE

check "$D/does-not-exist.json"
if [ "$RC" -ne 0 ] && echo "$OUT" | grep -qF "$D/does-not-exist.json"; then
	mt_pass "missing file: exit $RC, named in the message"
else
	mt_fail "missing file: exit $RC, output: $OUT"
fi

# --- moat explain ----------------------------------------------------------------------
# explain ARGS...: sets RC and OUT (stdout only; stderr in $D/explain.err).
explain()
{
	OUT=$(timeout 10 "$MOAT" explain "$@" 2>"$D/explain.err")
	RC=$?
}
# field NAME: the value of "NAME  value" in OUT (first word).
field()
{
	echo "$OUT" | awk -v k="$1" '$1 == k { print $2; exit }'
}
# expect MESSAGE RC VERDICT RULE REASON
expect()
{
	local msg=$1 got
	got="$RC $(field verdict) $(field rule) $(field reason)"
	mt_eq "explain $msg" "$2 $3 $4 $5" "$got" "$D/explain.err"
}

g=$D/good.json
explain -c "$g" http://origin.test/x
expect "http://origin.test/x" 0 allow origin allowed
mt_eq "explain: a name the rule spells out has no budget" 0 \
    "$(echo "$OUT" | grep -c 'dns_wildcard_names')"
explain -c "$g" https://x.y.wild.test/
expect "https://x.y.wild.test/" 0 allow origin allowed
mt_eq "explain: a name under a wildcard has a budget of new names" 1 \
    "$(echo "$OUT" | grep -c '^note .*at most 100 new such names a minute.*limits.dns_wildcard_names')"
explain -c "$g" bad.origin.test:80
expect "bad.origin.test:80 (deny rule beats *.origin.test)" 1 deny blocked \
    denied-by-rule
explain -c "$g" origin.test:9090
expect "origin.test:9090" 1 deny origin port
explain -c "$g" --addr 203.0.113.12 http://other.test/
expect "http://other.test/ --addr 203.0.113.12" 1 deny - no-rule
explain -c "$g" http://169.254.169.254/latest/meta-data/
expect "the metadata address" 1 deny - metadata
explain -c "$g" http://2852039166/
expect "the metadata address in decimal" 1 deny - metadata
explain -c "$g" 'http://[::ffff:169.254.169.254]/'
expect "the metadata address v4-mapped" 1 deny - metadata
explain -c "$g" http://metadata.google.internal/
expect "metadata.google.internal" 1 deny - metadata
explain -c "$g" --addr 127.0.0.1 http://loop.wild.test/
expect "loop.wild.test --addr 127.0.0.1" 1 deny - private-address
explain -c "$g" http://0x7f.1/
expect "http://0x7f.1/" 1 deny - private-address
explain -c "$g" --addr 203.0.113.10 http://x.wild.test/
expect "x.wild.test --addr 203.0.113.10" 0 allow origin allowed
explain http://deb.debian.org/
expect "(default config) http://deb.debian.org/" 0 allow debian allowed
explain https://example.com/
expect "(default config) https://example.com/" 1 deny - no-rule
explain -c "$D/multi.json" http://origin.test/
mt_eq "explain with a broken config: exit 2" 2 "$RC"
if grep -q "^$D/multi.json:[0-9]*:[0-9]*: " "$D/explain.err"; then
	mt_pass "explain with a broken config: FILE:LINE:COLUMN on stderr"
else
	mt_fail "explain with a broken config: no FILE:LINE:COLUMN on stderr" \
	    "$D/explain.err"
fi
# IDNA: libidn2 is loaded when a name first needs it.  Where it cannot
# be loaded (here: a broken libidn2.so.0 found first), such a name is
# refused, never passed through unchecked; ASCII names are unaffected.
explain -c "$g" 'http://bücher.wild.test/'
expect "an IDNA name, libidn2 loaded on demand" 0 allow origin allowed
mt_eq "explain: the IDNA name as an A-label" \
    "$(echo "$OUT" | grep -o 'host xn--bcher-kva\.wild\.test')" \
    "host xn--bcher-kva.wild.test" "$D/explain.err"
mkdir -p "$D/badlib" && : > "$D/badlib/libidn2.so.0"
OUT=$(LD_LIBRARY_PATH=$D/badlib timeout 10 "$MOAT" explain -c "$g" \
    'http://bücher.wild.test/' 2>"$D/explain.err")
RC=$?
if [ "$RC" = 2 ] && grep -q 'libidn2.so.0 (IDNA) cannot be loaded' \
    "$D/explain.err"; then
	mt_pass "no loadable libidn2: an IDNA name is refused, saying why"
else
	mt_fail "no loadable libidn2: exit $RC" "$D/explain.err"
fi
OUT=$(LD_LIBRARY_PATH=$D/badlib timeout 10 "$MOAT" explain -c "$g" \
    http://origin.test/x 2>"$D/explain.err")
RC=$?
expect "no loadable libidn2: ASCII names still decided" 0 allow origin \
    allowed
explain -c "$g"
mt_eq "explain without a target: exit 2" 2 "$RC"
explain -c "$g" 'http://exa mple.com/'
mt_eq "explain with a malformed target: exit 2" 2 "$RC"
# --- the git preset (or any key that reads requests) where moatd cannot read -----
f=$D/gitssh.json
cat > "$f" <<-EOF
{
  "listen": [{"proto": "http", "address": "127.0.0.1:3128"}],
  "tls": {"ca_cert": "$D/ca.crt", "ca_key": "$D/ca.key"},
  "policy": {"rules": [
    {"name": "gh", "action": "allow", "hosts": ["github.com"],
     "ports": [443, 22], "git": "read-only"},
    {"name": "gl", "action": "allow", "hosts": ["gitlab.com"],
     "protocols": ["tls", "ssh"], "git": "read-only"}
  ]}
}
EOF
OUT=$(timeout 10 "$MOAT" explain -c "$f" github.com:443 2>&1)
RC=$?
mt_eq "git preset on port 22 or with protocols ssh: a config error (explain exit 2)" \
    2 "$RC"
has_diag "...at the port, saying how to split the rule" "$f" 6 '22]' \
    'allow port 22 in a rule of its own without "git" (ssh is opaque to moat: git push over it cannot be stopped there)'
has_diag "...and at \"ssh\" in protocols" "$f" 8 '"ssh"' \
    'but it lists "ssh", which moatd cannot read'
f=$D/ssh22.json
cat > "$f" <<-EOF
{
  "listen": [{"proto": "http", "address": "127.0.0.1:3128"}],
  "tls": {"ca_cert": "$D/ca.crt", "ca_key": "$D/ca.key"},
  "policy": {"rules": [
    {"name": "gh", "action": "allow", "hosts": ["github.com"],
     "git": "read-only"},
    {"name": "gh-ssh", "action": "allow", "hosts": ["github.com"],
     "ports": [22], "protocols": ["ssh"]},
    {"name": "no-admin", "action": "deny", "hosts": ["gitlab.com"],
     "paths": ["/admin"]},
    {"name": "gl-ssh", "action": "allow", "hosts": ["gitlab.com"],
     "ports": [22]}
  ]}
}
EOF
explain -c "$f" github.com:22
expect "the split rule: github.com:22 is its own opaque rule" 0 allow gh-ssh \
    allowed
mt_eq "explain: ssh is opaque, git push included" 1 \
    "$(echo "$OUT" | grep -c '^note .*ssh is opaque to moat.*git push included')" \
    "$D/explain.err"
explain -c "$f" gitlab.com:22
expect "gitlab.com:22 under a deny rule's paths" 0 allow gl-ssh allowed
mt_eq "explain: not \"inspected\" where ssh cannot be; says ssh is refused" \
    "1 0" "$(echo "$OUT" | grep -c '^traffic  inspected only if it is TLS or HTTP: moatd cannot read ssh.*refuses it') $(echo "$OUT" | grep -c '^traffic  inspected: TLS')" \
    "$D/explain.err"

# --- moat check: a moatd config or a moat run --policy file -------------------------
# mcheck ARG...: `moat check`; sets RC, OUT (stdout), ERR (stderr).
mcheck()
{
	OUT=$(timeout 10 "$MOAT" check "$@" 2>"$D/mcheck.err")
	RC=$?
	ERR=$(cat "$D/mcheck.err")
}
mcheck "$D/good.json"
mt_eq "moat check, a moatd config: exit 0, says what it took it for" \
    "0 $D/good.json: OK (a moatd config: it has \"listen\" or \"admin\")" \
    "$RC $OUT" "$D/mcheck.err"
mcheck "$D/runpol.json"
mt_eq "moat check, a moat run --policy file (an inspecting rule, no CA): exit 1" \
    1 "$RC" "$D/mcheck.err"
if echo "$ERR" | grep -q "^$D/runpol.json:2:24: policy.rules\[0\]: rule get-only needs to see inside TLS" &&
    echo "$ERR" | grep -qF "checked as a policy file for moat run --policy" &&
    echo "$ERR" | grep -qF "moat check --running-moatd $D/runpol.json"; then
	mt_pass "...FILE:LINE:COLUMN, what it was checked as, and --running-moatd"
else
	mt_fail "moat check runpol.json: $ERR"
fi
mcheck --running-moatd "$D/runpol.json"
mt_eq "moat check --running-moatd: the running moatd's CA serves it" \
    "0 $D/runpol.json: OK (a policy file for moat run --moatd or moat attach)" \
    "$RC $OUT" "$D/mcheck.err"
mcheck "$D/multi.json"
mt_eq "moat check, a broken moatd config: exit 1" 1 "$RC"
mt_eq "...every error as FILE:LINE:COLUMN, the lines moatd --check gives" \
    "$(timeout 10 "$MOATD" --check -c "$D/multi.json" 2>&1 | grep "^$D/multi.json:[0-9]*:[0-9]*: " | md5sum)" \
    "$(echo "$ERR" | grep "^$D/multi.json:[0-9]*:[0-9]*: " | md5sum)"
f=$D/runkeys.json
cat > "$f" <<-'EOF'
{
  "policy": {"rules": [{"name": "a", "action": "allow",
                        "hosts": ["a.example.test"]}]},
  "resolver": {"servers": ["203.0.113.53"]},
  "audit": {"path": "-"},
  "rules": []
}
EOF
mcheck "$f"
mt_eq "a policy file with a top-level \"rules\": exit 1" 1 "$RC"
OUT=$ERR
has_diag "top-level \"rules\": a hint to policy.rules" "$f" 6 '"rules"' \
    'did you mean policy.rules?'
has_diag "\"resolver\": moat run skips it, --resolver instead" "$f" 4 \
    '"resolver"' 'warning: "resolver": moat run does not use it: give --resolver'
has_diag "\"audit\": moat run skips it, --audit instead" "$f" 5 '"audit"' \
    'warning: "audit": moat run does not use it: give --audit'
sed -i '/"rules": \[\]/d; s/"audit": {"path": "-"},/"audit": {"path": "-"}/' "$f"
mcheck "$f"
mt_eq "the same without \"rules\": valid, two warnings (exit 0)" \
    "0 2" "$RC $(echo "$ERR" | grep -c ': warning: ')" "$D/mcheck.err"
check "$f"
mt_eq "moatd --check on it: missing listen, pointing to moat check" 1 \
    "$(echo "$OUT" | grep -c 'needs none: check it with moat check FILE')"
mcheck "$D/does-not-exist.json"
mt_eq "moat check, a missing file: exit 1, named" "1 1" \
    "$RC $(echo "$ERR" | grep -c "$D/does-not-exist.json")"
mcheck
mt_eq "moat check without FILE: exit 2" 2 "$RC"
mcheck "$D/good.json" "$D/runpol.json"
mt_eq "moat check with two FILEs: exit 2" 2 "$RC"
mcheck --bogus "$D/good.json"
mt_eq "moat check with an unknown option: exit 2" 2 "$RC"
mcheck "$D/syntax.json"
mt_eq "moat check, not JSON: exit 1 at the line" "1 1" \
    "$RC $(echo "$ERR" | grep -c "^$D/syntax.json:4:[0-9]*: ")"

if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null; then
	OUT=$(timeout 10 unshare -n "$MOAT" explain -c "$g" \
	    http://origin.test/ 2>&1)
	RC=$?
	expect "in a namespace without any network" 0 allow origin allowed
fi
mt_finish
