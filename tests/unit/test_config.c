/*
 * test_config.c - loading and validating moat's JSON configuration.
 *
 * Good configs load with the right values and defaults; every kind of
 * error yields "FILE:LINE:COLUMN: message".  Each error vector also names
 * the text expected at LINE:COLUMN, so a position is checked against the
 * config itself, not only against a number.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "policy/policy.h"
#include "policy/policy_int.h"
#include "tests/unit/unit.h"

#define CFG_MAXDIAG	24	/* diagnostics one vector may expect */
#define CFG_LINE_MAX	1024	/* longest formatted diagnostic */

/* Pieces shared by the vectors. */
#define LISTEN	"\"listen\": [{\"proto\": \"http\", \"address\": " \
		"\"127.0.0.1:3128\"}]"
#define POLICY	"\"policy\": {\"rules\": [{\"action\": \"allow\", " \
		"\"hosts\": [\"example.com\"]}]}"
#define TLS	"\"tls\": {\"ca_cert\": \"/etc/moat/ca/ca.crt\", " \
		"\"ca_key\": \"/etc/moat/ca/ca.key\"}"
#define SECRETS	"\"secrets\": {\"K\": {\"env\": \"A\"}, " \
		"\"L\": {\"env\": \"B\"}}"
#define RULE(n)	"{\"name\": \"" n "\", \"action\": \"allow\", \"hosts\": " \
		"[\"" n ".example\"], "
#define METRICS_FIX "; put metrics on unix:/PATH, or on an address of an " \
		"interface no listener is on (in the namespace moatd runs in)"

struct cfg_diag {
	int		 line, col;
	const char	*at;	/* the text that starts at line:col */
	const char	*msg;	/* after "t.json:L:C: " */
};

struct cfg_vec {
	const char	*what;
	const char	*json;
	size_t		 nerrors, nwarnings;
	struct cfg_diag	 d[CFG_MAXDIAG];	/* in file order */
};

static const struct cfg_vec	cfg_vectors[] = {
	{ "unknown top-level key, with a suggestion",
	  "{\n  \"lisen\": 1,\n  " LISTEN ",\n  " POLICY "\n}", 1, 0, {
	    { 2, 3, "\"lisen\"", "unknown key \"lisen\" in the top level "
	      "(did you mean \"listen\"?)" } } },
	{ "unknown key, nothing close",
	  "{\n  " LISTEN ", " POLICY ",\n  \"zzzzzz\": {}\n}", 1, 0, {
	    { 3, 3, "\"zzzzzz\"", "unknown key \"zzzzzz\" in the top "
	      "level" } } },
	{ "listen is required",
	  "{\n  " POLICY "\n}", 1, 0, {
	    { 1, 1, "{", "missing required key \"listen\" in the top level: "
	      "add at least one listener, such as {\"proto\": \"http\", "
	      "\"address\": \"127.0.0.1:3128\"} (a file for moat run "
	      "--policy needs none: check it with moat check FILE)" } } },
	{ "a section's key at the top level: where it goes",
	  "{\n  " LISTEN ", " POLICY ",\n  \"rules\": [],\n  \"default\": "
	  "\"deny\",\n"
	  "  \"ca_cert\": \"/c\",\n  \"servers\": []\n}", 4, 0, {
	    { 3, 3, "\"rules\"", "unknown key \"rules\" in the top level: did "
	      "you mean policy.rules? (it goes inside \"policy\": {...})" },
	    { 4, 3, "\"default\"", "unknown key \"default\" in the top level: "
	      "did you mean policy.default? (it goes inside \"policy\": "
	      "{...})" },
	    { 5, 3, "\"ca_cert\"", "unknown key \"ca_cert\" in the top level: "
	      "did you mean tls.ca_cert? (it goes inside \"tls\": {...})" },
	    { 6, 3, "\"servers\"", "unknown key \"servers\" in the top level: "
	      "did you mean resolver.servers? (it goes inside \"resolver\": "
	      "{...})" } } },
	{ "no policy is a warning",
	  "{\n  " LISTEN "\n}", 0, 1, {
	    { 1, 1, "{", "warning: no \"policy\": every connection will be "
	      "denied" } } },
	{ "ports: the brief's example and friends",
	  "{\n  " LISTEN ",\n  \"policy\": {\"rules\": [\n"
	  "    {\"action\": \"allow\", \"hosts\": [\"a.example\"]},\n"
	  "    {\"action\": \"allow\", \"hosts\": [\"b.example\"]},\n"
	  "    {\"action\": \"allow\", \"hosts\": [\"c.example\"],\n"
	  "     \"ports\": [70000, \"1-2-3\", \"*\", true, 0, \"9-8\"]}\n"
	  "  ]}\n}", 5, 0, {
	    { 7, 16, "70000", "policy.rules[2].ports[0]: 70000 is not a port "
	      "(1-65535)" },
	    { 7, 23, "\"1-2-3\"", "policy.rules[2].ports[1]: \"1-2-3\" is not "
	      "a port: write an integer (1-65535), a range \"LOW-HIGH\" or "
	      "\"*\"" },
	    { 7, 37, "true", "policy.rules[2].ports[3]: expected a port "
	      "(integer), a range \"LOW-HIGH\" or \"*\", got a boolean" },
	    { 7, 43, "0", "policy.rules[2].ports[4]: 0 is not a port "
	      "(1-65535)" },
	    { 7, 46, "\"9-8\"", "policy.rules[2].ports[5]: range \"9-8\" is "
	      "backwards (write \"8-9\")" } } },
	{ "wrong types everywhere",
	  "{\n  \"listen\": {},\n  \"policy\": [],\n  \"workers\": 1.5,\n"
	  "  \"timeouts\": {\"dns_ms\": \"5\"},\n  \"user\": 5,\n"
	  "  \"audit\": \"-\"\n}", 6, 0, {
	    { 2, 13, "{}", "listen: expected an array, got an object" },
	    { 3, 13, "[]", "policy: expected an object, got an array" },
	    { 4, 14, "1.5", "workers: expected an integer, got 1.5" },
	    { 5, 26, "\"5\"", "timeouts.dns_ms: expected an integer, got a "
	      "string" },
	    { 6, 11, "5", "user: expected a user name (string), got an "
	      "integer" },
	    { 7, 12, "\"-\"", "audit: expected an object, got a string" } } },
	{ "audit_only: a boolean, at the top level and on a listener",
	  "{\n  \"listen\": [{\"proto\": \"http\", \"address\": "
	  "\"127.0.0.1:3128\", \"audit_only\": \"yes\"}],\n  " POLICY ",\n"
	  "  \"audit_only\": 1\n}", 2, 0, {
	    { 2, 75, "\"yes\"", "listen[0].audit_only: expected a boolean "
	      "(true: the rules' refusals go through and are audited as "
	      "\"would_deny\"; the built-in deny sets, secret leaks and DNS "
	      "limits stay enforced), got a string" },
	    { 4, 17, "1", "audit_only: expected a boolean (true: the rules' "
	      "refusals go through and are audited as \"would_deny\"; the "
	      "built-in deny sets, secret leaks and DNS limits stay "
	      "enforced), got an integer" } } },
	{ "audit.request_id_headers: tokens, no credentials, no repeats",
	  "{\n  " LISTEN ",\n  " POLICY ",\n  \"audit\": {\"request_id_headers\": "
	  "[\"X-Request-Id\", \"Bad Name\", \"Cookie\", \"x-request-id\", "
	  "\"traceparent\", 5]}\n}", 5, 0, {
	    { 4, 52, "\"Bad Name\"", "audit.request_id_headers[1]: \"Bad "
	      "Name\" is not a header field name (1-64 bytes of an RFC 9110 "
	      "token)" },
	    { 4, 64, "\"Cookie\"", "audit.request_id_headers[2]: \"Cookie\" "
	      "is never copied into audit lines: it holds credentials" },
	    { 4, 74, "\"x-request-id\"", "audit.request_id_headers[3]: "
	      "\"x-request-id\" is listed twice (field names are compared "
	      "without case)" },
	    { 4, 90, "\"traceparent\"", "audit.request_id_headers[4]: "
	      "\"traceparent\" is never copied into audit lines: a valid "
	      "traceparent is recorded always" },
	    { 4, 105, "5", "audit.request_id_headers[5]: expected a string, "
	      "got an integer" } } },
	{ "audit.request_id_headers: at most 8",
	  "{\n  " LISTEN ",\n  " POLICY ",\n  \"audit\": {\"request_id_headers\": "
	  "[\"a\", \"b\", \"c\", \"d\", \"e\", \"f\", \"g\", \"h\", \"i\"]}\n}",
	  1, 0, {
	    { 4, 35, "[", "audit.request_id_headers: 9 fields: at most 8 are "
	      "copied into audit lines" } } },
	{ "audit.on_failure: deny or drop",
	  "{\n  " LISTEN ",\n  " POLICY ",\n"
	  "  \"audit\": {\"on_failure\": \"ignore\"}\n}", 1, 0, {
	    { 4, 27, "\"ignore\"", "audit.on_failure: expected \"deny\" "
	      "(refuse new connections and requests while audit lines "
	      "cannot be written) or \"drop\" (serve on, count the lost "
	      "lines), got \"ignore\"" } } },
	{ "duplicate key (jansson), at the repeated key",
	  "{\n  " LISTEN ",\n  " POLICY ",\n  \"listen\": []\n}", 1, 0, {
	    { 4, 3, "\"listen\"", "duplicate key \"listen\": a key may "
	      "appear only once in an object" } } },
	{ "duplicate key in a nested object",
	  "{\"listen\": [{\"proto\": \"http\",\n  \"proto\": \"dns\"}]}",
	  1, 0, {
	    { 2, 3, "\"proto\"", "duplicate key \"proto\": a key may appear "
	      "only once in an object" } } },
	{ "syntax error (jansson)",
	  "{\n  \"listen\": [1,]\n}", 1, 0, {
	    { 2, 16, "]", "invalid JSON: unexpected token near ']'" } } },
	{ "not an object",
	  "[1, 2]", 1, 0, {
	    { 1, 1, "[", "the config must be a JSON object ({ ... })" } } },
	{ "empty text",
	  "", 1, 0, {
	    { 1, 1, "", "invalid JSON: '[' or '{' expected near end of "
	      "file" } } },
	{ "listeners",
	  "{\n  \"listen\": [\n"
	  "    {\"proto\": \"dns\", \"address\": \"unix:/run/d.sock\"},\n"
	  "    {\"proto\": \"http\", \"address\": \"127.0.0.1:80\", "
	  "\"mode\": \"0600\"},\n"
	  "    {\"proto\": \"gopher\", \"address\": \"localhost:70\"},\n"
	  "    {\"proto\": \"socks5\", \"address\": \"[::1]:1080\", "
	  "\"sandbox\": \"a b\"},\n"
	  "    {\"proto\": \"socks5\", \"address\": \"[0:0::1]:1080\"},\n"
	  "    {\"address\": \"unix:relative\", \"mode\": \"999\"},\n"
	  "    {\"proto\": \"dns\", \"address\": \"127.0.0.1:53\", "
	  "\"auth\": {\"x\": {\"env\": \"X\"}}},\n"
	  "    {\"proto\": \"http\", \"address\": \"127.0.0.1:81\", "
	  "\"auth\": {}}\n"
	  "  ],\n  " POLICY "\n}", 11, 0, {
	    { 3, 33, "\"unix:", "listen[0]: a dns listener cannot be a unix "
	      "socket: give it IP:PORT" },
	    { 4, 58, "\"0600\"", "listen[1].mode: a mode applies to unix "
	      "socket listeners only" },
	    { 5, 15, "\"gopher\"", "listen[2].proto: unknown protocol "
	      "\"gopher\" (http, socks5, http+socks5, transparent or dns)" },
	    { 5, 36, "\"localhost:70\"", "listen[2].address: \"localhost:70\" "
	      "is not IP:PORT, [IPv6]:PORT or unix:/PATH (host names are not "
	      "allowed: nothing is resolved at bind time)" },
	    { 6, 61, "\"a b\"", "listen[3].sandbox: \"a b\" is not a sandbox "
	      "name (1-64 of A-Z a-z 0-9 . _ -)" },
	    { 7, 5, "{", "listen[4]: address [::1]:1080 is already used by "
	      "listen[3] (line 6)" },
	    { 8, 5, "{", "listen[5]: missing \"proto\" (http, socks5, "
	      "http+socks5, transparent or dns)" },
	    { 8, 17, "\"unix:relative\"", "listen[5].address: "
	      "\"unix:relative\": a unix socket path must be absolute "
	      "(unix:/PATH)" },
	    { 8, 42, "\"999\"", "listen[5].mode: \"999\" is not a mode: write "
	      "3 or 4 octal digits, such as \"0660\"" },
	    { 9, 57, "{\"x\"", "listen[6].auth: a dns listener has no way to "
	      "log in: remove \"auth\"" },
	    { 10, 58, "{}", "listen[7].auth: no identities: add NAME: "
	      "{\"env\": VAR} or remove \"auth\"" },
	    } },
	{ "policy.default and allow_private",
	  "{\n  " LISTEN ",\n  \"policy\": {\"default\": \"allow\",\n"
	  "    \"allow_private\": [\"10.0.0.1/8\", \"8.8.8.0/24\", "
	  "\"::ffff:0:0/96\", \"10.0.0.0/33\", \"fe80::/10\", 7],\n"
	  "    \"rules\": []}\n}", 5, 2, {
	    { 3, 25, "\"allow\"", "policy.default: only \"deny\" is accepted: "
	      "moat allows only what a rule allows (write an allow rule, "
	      "such as {\"action\": \"allow\", \"hosts\": [\"*\"]}, "
	      "instead)" },
	    { 4, 23, "\"10.0.0.1/8\"", "policy.allow_private[0]: 10.0.0.1/8 "
	      "has host bits set; did you mean 10.0.0.0/8?" },
	    { 4, 37, "\"8.8.8.0/24\"", "warning: policy.allow_private[1]: "
	      "8.8.8.0/24 overlaps no built-in denied range: it has no "
	      "effect" },
	    { 4, 51, "\"::ffff:0:0/96\"", "policy.allow_private[2]: "
	      "\"::ffff:0:0/96\" is not a CIDR: an IPv4-mapped IPv6 prefix "
	      "(moat treats these addresses as IPv4: write the IPv4 "
	      "prefix)" },
	    { 4, 68, "\"10.0.0.0/33\"", "policy.allow_private[3]: "
	      "\"10.0.0.0/33\" is not a CIDR: prefix length longer than "
	      "32" },
	    { 4, 96, "7", "policy.allow_private[5]: expected a CIDR string, "
	      "got an integer" },
	    { 5, 14, "[]", "warning: policy.rules: no rules: every "
	      "connection will be denied" } } },
	{ "rules",
	  "{\n  " LISTEN ",\n  \"policy\": {\"rules\": [\n"
	  "    {\"name\": \"a\", \"action\": \"allow\", \"hosts\": "
	  "[\"a*.example.com\", \"*.1.2.3.4\", \"x..y\"]},\n"
	  "    {\"name\": \"a\", \"action\": \"permit\", \"cidrs\": "
	  "[\"203.0.113.1/24\"]},\n"
	  "    {\"action\": \"allow\", \"inject\": []},\n"
	  "    {\"name\": \"strict\", \"action\": \"deny\", \"hosts\": "
	  "[\"*\"], \"methods\": [\"GET\", \"G T\"], \"paths\": [\"x\", "
	  "\"/a/%2e%2e/\"]},\n"
	  "    {\"hosts\": [\"b.example\"]}\n"
	  "  ]}\n}", 14, 0, {
	    { 4, 48, "\"a*.example.com\"", "policy.rules[0].hosts[0]: "
	      "\"a*.example.com\": \"*\" is allowed only as the whole host "
	      "(\"*\") or as the first label (\"*.example.com\")" },
	    { 4, 66, "\"*.1.2.3.4\"", "policy.rules[0].hosts[1]: "
	      "\"*.1.2.3.4\": a wildcard needs a name after \"*.\", not an "
	      "address" },
	    { 4, 79, "\"x..y\"", "policy.rules[0].hosts[2]: \"x..y\" is not a "
	      "valid host: empty label in host name" },
	    { 5, 14, "\"a\"", "policy.rules[1].name: rule name \"a\" is "
	      "already used by policy.rules[0]" },
	    { 5, 29, "\"permit\"", "policy.rules[1].action: must be \"allow\" "
	      "or \"deny\"" },
	    { 5, 49, "\"203.0.113.1/24\"", "policy.rules[1].cidrs[0]: "
	      "203.0.113.1/24 has host bits set; did you mean "
	      "203.0.113.0/24?" },
	    { 6, 5, "{", "policy.rules[2]: a rule needs \"hosts\", "
	      "\"cidrs\", \"countries\" or \"asns\" to say what it "
	      "applies to" },
	    { 6, 5, "{", "policy.rules[2]: rule rule-2 needs to see inside "
	      "TLS (inject) but no CA is configured: set tls.ca_cert and "
	      "tls.ca_key (moat ca init DIR)" },
	    { 6, 35, "[]", "policy.rules[2].inject: empty array: list at "
	      "least one injection ({\"header\": NAME, \"value\": TEMPLATE}, "
	      "{\"basic\": {...}} or {\"placeholders\": [...]}) (or remove "
	      "the key)" },
	    { 7, 5, "{", "policy.rules[3]: rule strict needs to see inside "
	      "TLS (methods) but no CA is configured: set tls.ca_cert and "
	      "tls.ca_key (moat ca init DIR)" },
	    { 7, 77, "\"G T\"", "policy.rules[3].methods[1]: \"G T\" is not "
	      "an HTTP method token" },
	    { 7, 95, "\"x\"", "policy.rules[3].paths[0]: \"x\": path does "
	      "not start with \"/\"" },
	    } },
	{ "rules, more",
	  "{\n  " LISTEN ",\n  \"policy\": {\"rules\": [\n"
	  "    {\"action\": \"allow\", \"hosts\": [\"b.example\"], "
	  "\"intercept\": 1},\n"
	  "    {\"action\": \"allow\", \"hosts\": [\"c.example\"], \"rate\": "
	  "{\"requests\": 0, \"per_second\": 1}},\n"
	  "    {\"name\": \"rule-3\", \"action\": \"allow\", \"hosts\": "
	  "[\"d.example\"]},\n"
	  "    {\"action\": \"allow\", \"hosts\": [\"e.example\"]}\n"
	  "  ]}\n}", 5, 0, {
	    { 4, 62, "1", "policy.rules[0].intercept: expected a boolean, got "
	      "an integer" },
	    { 5, 57, "{", "policy.rules[1].rate: missing \"per_seconds\" (a "
	      "rate is {\"requests\": N, \"per_seconds\": S})" },
	    { 5, 70, "0", "policy.rules[1].rate.requests: 0 is "
	      "out of range (1-1000000000)" },
	    { 5, 73, "\"per_second\"", "unknown key \"per_second\" in "
	      "policy.rules[1].rate (did you mean \"per_seconds\"?)" },
	    { 7, 5, "{", "policy.rules[3]: this rule's default name "
	      "\"rule-3\" is already used by policy.rules[2]: give this rule "
	      "a \"name\"" } } },
	{ "quotas: rules, policy, secrets",
	  "{\n  " LISTEN ",\n"
	  "  \"policy\": {\"quota\": {\"bytes_up\": 1000, \"per_seconds\": 0}, "
	  "\"rules\": [\n"
	  "    {\"name\": \"q\", \"action\": \"allow\", \"hosts\": "
	  "[\"a.example\"], \"quota\": {\"bytes_up\": 0, \"per_second\": 5}},\n"
	  "    {\"action\": \"allow\", \"hosts\": [\"b.example\"], \"quota\": "
	  "{\"bytes_up\": 10, \"per_seconds\": 5}},\n"
	  "    {\"action\": \"deny\", \"hosts\": [\"c.example\"], \"quota\": "
	  "{\"bytes_up\": 10, \"per_seconds\": 5}},\n"
	  "    {\"name\": \"r\", \"action\": \"allow\", \"hosts\": "
	  "[\"d.example\"], \"quota\": {\"bytes_up\": 1000000000000001, "
	  "\"per_seconds\": 86401}},\n"
	  "    {\"name\": \"s\", \"action\": \"allow\", \"hosts\": "
	  "[\"e.example\"], \"quota\": [1]}\n"
	  "  ]},\n"
	  "  \"secrets\": {\"K\": {\"env\": \"A\", \"quota\": {\"requests\": "
	  "1.5, \"per_seconds\": 60}},\n"
	  "    \"L\": {\"env\": \"B\", \"quota\": {\"requests\": 3}}}\n}",
	  10, 1, {
	    { 3, 57, "0", "policy.quota.per_seconds: 0 is out of range "
	      "(1-86400)" },
	    { 4, 71, "{", "policy.rules[0].quota: missing \"per_seconds\" (a "
	      "quota is {\"bytes_up\": N, \"per_seconds\": S})" },
	    { 4, 84, "0", "policy.rules[0].quota.bytes_up: 0 is out of range "
	      "(1-1000000000000000)" },
	    { 4, 87, "\"per_second\"", "unknown key \"per_second\" in "
	      "policy.rules[0].quota (did you mean \"per_seconds\"?)" },
	    { 5, 58, "{", "warning: policy.rules[1].quota: rule rule-1 has a "
	      "quota but no \"name\": its count is kept by name across "
	      "reloads, and this default name changes when rules are added "
	      "before it" },
	    { 6, 57, "{", "policy.rules[2].quota: \"quota\" limits what an "
	      "allow rule lets through; a deny rule sends nothing" },
	    { 7, 84, "1000000000000001", "policy.rules[3].quota.bytes_up: "
	      "1000000000000001 is out of range (1-1000000000000000)" },
	    { 7, 117, "86401", "policy.rules[3].quota.per_seconds: 86401 is "
	      "out of range (1-86400)" },
	    { 8, 71, "[", "policy.rules[4].quota: expected an object, got an "
	      "array" },
	    { 10, 55, "1.5", "secrets.K.quota.requests: expected an integer, "
	      "got 1.5" },
	    { 11, 32, "{", "secrets.L.quota: missing \"per_seconds\" (a quota "
	      "is {\"requests\": N, \"per_seconds\": S})" } } },
	{ "secrets",
	  "{\n  \"secrets\": {\n"
	  "    \"1bad\": {\"env\": \"X\"},\n"
	  "    \"BOTH\": {\"file\": \"/a\", \"env\": \"B\"},\n"
	  "    \"K2\": {\"env\": \"9x\", \"sandbox_env\": \"K3\"},\n"
	  "    \"K3\": {\"file\": \"\"},\n"
	  "    \"K4\": {\"env\": \"Y\"}\n"
	  "  },\n  " LISTEN ", " POLICY "\n}", 4, 1, {
	    { 3, 5, "\"1bad\"", "secrets: \"1bad\" is not a valid secret name "
	      "([A-Za-z_][A-Za-z0-9_]{0,63})" },
	    { 4, 13, "{", "secrets.BOTH: give exactly one of \"file\" and "
	      "\"env\"" },
	    { 5, 19, "\"9x\"", "secrets.K2.env: \"9x\" is not an environment "
	      "variable name ([A-Za-z_][A-Za-z0-9_]*)" },
	    { 6, 20, "\"\"", "secrets.K3.file: empty file path" },
	    { 7, 5, "\"K4\"", "warning: secrets.K4: secret K4 is not used by "
	      "any rule: no rule injects it" },
	    } },
	{ "two secrets, one sandbox variable",
	  "{\n  " LISTEN ", " POLICY ",\n  \"secrets\": {\n"
	  "    \"A\": {\"env\": \"X\", \"sandbox_env\": \"TOKEN\"},\n"
	  "    \"TOKEN\": {\"env\": \"Y\"}\n  }\n}", 1, 2, {
	    { 4, 5, "\"A\"", "warning: secrets.A: secret A is not used by any "
	      "rule: no rule injects it" },
	    { 5, 5, "\"TOKEN\"", "secrets: A and TOKEN both use the sandbox "
	      "variable TOKEN: set \"sandbox_env\" on one" },
	    { 5, 5, "\"TOKEN\"", "warning: secrets.TOKEN: secret TOKEN is not "
	      "used by any rule: no rule injects it" } } },
	{ "resolver, tls, admin, limits, timeouts, workers, user",
	  "{\n  " LISTEN ", " POLICY ",\n"
	  "  \"resolver\": {\"servers\": [\"1.1.1.1\", \"dns.google:53\"], "
	  "\"tries\": 11},\n"
	  "  \"tls\": {\"ca_cert\": \"/x\", \"leaf_cache_entries\": 0},\n"
	  "  \"admin\": {\"address\": \"127.0.0.1:9\"},\n"
	  "  \"limits\": {\"header_count\": 5000, \"headr_bytes\": 2048, "
	  "\"dns_wildcard_names\": 0},\n"
	  "  \"timeouts\": {\"drain_ms\": 86400001, \"idle_body_ms\": 0},\n"
	  "  \"workers\": \"many\",\n"
	  "  \"user\": \"-x\"\n}", 12, 0, {
	    { 3, 39, "\"dns.google:53\"", "resolver.servers[1]: "
	      "\"dns.google:53\" is not a server address: write IP, IP:PORT "
	      "or [IPv6]:PORT (no host names)" },
	    { 3, 66, "11", "resolver.tries: 11 is out of range (1-10)" },
	    { 4, 22, "\"/x\"", "tls.ca_cert: tls.ca_cert is given without "
	      "tls.ca_key: give both or neither" },
	    { 4, 50, "0", "tls.leaf_cache_entries: 0 is out of range "
	      "(1-1000000)" },
	    { 5, 24, "\"127.0.0.1:9\"", "admin.address: \"127.0.0.1:9\" is not "
	      "unix:/PATH" },
	    { 6, 30, "5000", "limits.header_count: 5000 is out of range "
	      "(8-1000)" },
	    { 6, 36, "\"headr_bytes\"", "unknown key \"headr_bytes\" in limits "
	      "(did you mean \"header_bytes\"?)" },
	    { 6, 79, "0", "limits.dns_wildcard_names: 0 is out of range "
	      "(1-4096)" },
	    { 7, 28, "86400001", "timeouts.drain_ms: 86400001 is out of range "
	      "(1-86400000)" },
	    { 7, 54, "0", "timeouts.idle_body_ms: 0 is out of range "
	      "(1-86400000)" },
	    { 8, 14, "\"many\"", "workers: expected an integer (1-256) or "
	      "\"auto\"" },
	    { 9, 11, "\"-x\"", "user: \"-x\" is not a user name (1-32 of A-Z "
	      "a-z 0-9 . _ -, not starting with -)" } } },
	{ "tls.trust_dir: a relative path",
	  "{\n  " LISTEN ", " POLICY ",\n"
	  "  \"tls\": {\"trust_dir\": \"run/moat\"}\n}", 1, 0, {
	    { 3, 24, "\"run/moat\"", "tls.trust_dir: \"run/moat\" is not an "
	      "absolute path" } } },
	{ "tls.trust_dir without a CA",
	  "{\n  " LISTEN ", " POLICY ",\n"
	  "  \"tls\": {\"trust_dir\": \"/run/moat\"}\n}", 1, 0, {
	    { 3, 24, "\"/run/moat\"", "tls.trust_dir: tls.trust_dir needs a CA "
	      "(tls.ca_cert and tls.ca_key): without one moatd reads no TLS "
	      "and there is nothing to trust" } } },
	{ "limits.partial_heads_bytes below its range",
	  "{\n  " LISTEN ", " POLICY ",\n"
	  "  \"limits\": {\"partial_heads_bytes\": 65536}\n}", 1, 0, {
	    { 3, 37, "65536", "limits.partial_heads_bytes: 65536 is out of "
	      "range (1048576-4294967296)" } } },
	{ "connection limits: per sandbox, per listener",
	  "{\n  \"listen\": [\n"
	  "    {\"proto\": \"http\", \"address\": \"127.0.0.1:80\", "
	  "\"connections\": 0},\n"
	  "    {\"proto\": \"http\", \"address\": \"127.0.0.1:81\", "
	  "\"connections\": \"5\"},\n"
	  "    {\"proto\": \"http\", \"address\": \"127.0.0.1:82\", "
	  "\"connections\": 2.5}\n"
	  "  ],\n  " POLICY ",\n"
	  "  \"limits\": {\"sandbox_connections\": 0, "
	  "\"sandbox_conections\": 5}\n}", 5, 0, {
	    { 3, 65, "0", "listen[0].connections: 0 is out of range "
	      "(1-1000000)" },
	    { 4, 65, "\"5\"", "listen[1].connections: expected an integer, "
	      "got a string" },
	    { 5, 65, "2.5", "listen[2].connections: expected an integer, got "
	      "2.5" },
	    { 8, 37, "0", "limits.sandbox_connections: 0 is out of range "
	      "(1-1000000)" },
	    { 8, 40, "\"sandbox_conections\"", "unknown key "
	      "\"sandbox_conections\" in limits (did you mean "
	      "\"sandbox_connections\"?)" } } },
	{ "connect_refusal: its values, CONNECT listeners only, a CA",
	  "{\n  \"listen\": [\n"
	  "    {\"proto\": \"http\", \"address\": \"127.0.0.1:80\", "
	  "\"connect_refusal\": \"in-tunnel\"},\n"
	  "    {\"proto\": \"socks5\", \"address\": \"127.0.0.1:81\", "
	  "\"connect_refusal\": \"in-tunnel\"},\n"
	  "    {\"proto\": \"http\", \"address\": \"127.0.0.1:82\", "
	  "\"connect_refusal\": \"inside\"},\n"
	  "    {\"proto\": \"http+socks5\", \"address\": \"127.0.0.1:83\", "
	  "\"connect_refusal\": true},\n"
	  "    {\"proto\": \"http\", \"address\": \"127.0.0.1:84\", "
	  "\"connect_refusal\": \"status\"}\n"
	  "  ],\n  " POLICY "\n}", 4, 0, {
	    { 3, 69, "\"in-tunnel\"", "listen[0].connect_refusal: "
	      "\"in-tunnel\" answers inside TLS with a leaf moatd signs, but "
	      "no CA is configured: set tls.ca_cert and tls.ca_key (moat ca "
	      "init DIR), or remove the key" },
	    { 4, 71, "\"in-tunnel\"", "listen[1].connect_refusal: a socks5 "
	      "listener has no CONNECT: \"connect_refusal\" applies to http "
	      "and http+socks5 listeners" },
	    { 5, 69, "\"inside\"", "listen[2].connect_refusal: unknown value "
	      "\"inside\" (\"status\": the 403 answers the CONNECT; "
	      "\"in-tunnel\": moatd opens the tunnel and answers the 403 "
	      "inside it)" },
	    { 6, 76, "true", "listen[3].connect_refusal: expected a string, "
	      "got a boolean" } } },
	{ "connect_refusal \"in-tunnel\" with a CA",
	  "{\n  \"listen\": [{\"proto\": \"http\", \"address\": "
	  "\"127.0.0.1:80\", \"connect_refusal\": \"in-tunnel\"}],\n  "
	  POLICY ",\n  " TLS "\n}", 0, 0, { { 0, 0, NULL, NULL } } },
	{ "legal but suspicious: warnings only",
	  "{\n  " LISTEN ",\n  \"policy\": {\"rules\": [\n"
	  "    {\"name\": \"lan\", \"action\": \"allow\", \"cidrs\": "
	  "[\"10.0.0.0/8\", \"169.254.169.254\"]},\n"
	  "    {\"name\": \"md\", \"action\": \"allow\", \"hosts\": "
	  "[\"metadata.google.internal\", \"1.2.3.4\"]},\n"
	  "    {\"name\": \"in\", \"action\": \"allow\", \"hosts\": [\"x.example\"],"
	  " \"paths\": [\"/a\"], \"intercept\": false}\n"
	  "  ]}\n}", 0, 4, {
	    { 4, 50, "\"10.0.0.0/8\"", "warning: policy.rules[0].cidrs[0]: "
	      "rule lan allows 10.0.0.0/8, a built-in denied range: add it to "
	      "policy.allow_private to open it" },
	    { 4, 64, "\"169.254.169.254\"", "warning: policy.rules[0].cidrs[1]: "
	      "rule lan allows 169.254.169.254/32, a cloud metadata address: "
	      "moat denies it unless policy.allow_private lists exactly that "
	      "address" },
	    { 5, 49, "\"metadata.google.internal\"", "warning: "
	      "policy.rules[1].hosts[0]: rule md allows "
	      "metadata.google.internal, a cloud metadata name: moat always "
	      "denies it" },
	    { 6, 93, "false", "warning: policy.rules[2].intercept: rule in "
	      "checks methods or paths but never intercepts TLS: its HTTPS "
	      "requests cannot be checked" } } },
	{ "rules that need TLS interception, none configured",
	  "{\n  " LISTEN ",\n  \"policy\": {\"rules\": [\n"
	  "    {\"name\": \"api\", \"action\": \"allow\", \"hosts\": "
	  "[\"a.example\"], \"methods\": [\"GET\"]},\n"
	  "    {\"name\": \"noput\", \"action\": \"deny\", \"hosts\": "
	  "[\"*\"], \"paths\": [\"/admin\"]},\n"
	  "    {\"name\": \"look\", \"action\": \"allow\", \"hosts\": "
	  "[\"b.example\"], \"intercept\": true},\n"
	  "    {\"name\": \"plain\", \"action\": \"allow\", \"hosts\": "
	  "[\"c.example\"], \"paths\": [\"/x\"], \"intercept\": false}\n"
	  "  ]}\n}", 3, 1, {
	    { 4, 5, "{", "policy.rules[0]: rule api needs to see inside TLS "
	      "(methods) but no CA is configured: set tls.ca_cert and "
	      "tls.ca_key (moat ca init DIR)" },
	    { 5, 5, "{", "policy.rules[1]: rule noput needs to see inside TLS "
	      "(paths) but no CA is configured: set tls.ca_cert and "
	      "tls.ca_key (moat ca init DIR)" },
	    { 6, 5, "{", "policy.rules[2]: rule look needs to see inside TLS "
	      "(intercept) but no CA is configured: set tls.ca_cert and "
	      "tls.ca_key (moat ca init DIR)" },
	    { 7, 96, "false", "warning: policy.rules[3].intercept: rule plain "
	      "checks methods or paths but never intercepts TLS: its HTTPS "
	      "requests cannot be checked" } } },
	{ "inject: templates, each error at its byte",
	  "{\n  " LISTEN ", " TLS ",\n  " SECRETS ",\n  \"policy\": "
	  "{\"rules\": "
	  "[" RULE("t") "\"inject\": [\n"
	  "    {\"header\": \"X-A\", \"value\": \"Bearer $K\"},\n"
	  "    {\"header\": \"X-B\", \"value\": \"${NOPE}-${K\"},\n"
	  "    {\"header\": \"X-C\", \"value\": \"\\u00e9\\u00e9$x ${1x}\"},\n"
	  "    {\"header\": \"X-D\", \"value\": \"a\\nb${K}\"},\n"
	  "    {\"header\": \"X-E\", \"value\": \" ${K}\\t\"},\n"
	  "    {\"header\": \"X-F\", \"value\": \"no secret $$\"},\n"
	  "    {\"basic\": {\"user\": \"u:${L}\", \"password\": \"p\"}},\n"
	  "    {\"basic\": {\"user\": \"u\", \"password\": \"p\"}},\n"
	  "    {\"header\": \"X-G\", \"value\": \"\\ud83d\\ude00$\"},\n"
	  "    {\"header\": \"X-H\", \"value\": \"${}${K}\"}\n"
	  "  ]}]}\n}", 13, 0, {
	    { 5, 40, "$K\"", "policy.rules[0].inject[0].value: \"$\" must "
	      "start a secret reference ${SECRET} or be doubled (\"$$\" is a "
	      "literal \"$\")" },
	    { 6, 33, "${NOPE", "policy.rules[0].inject[1].value: ${NOPE} names "
	      "no secret: declare it in \"secrets\"" },
	    { 6, 41, "${K\"", "policy.rules[0].inject[1].value: \"${\" is not "
	      "closed by \"}\"" },
	    { 7, 45, "$x", "policy.rules[0].inject[2].value: \"$\" must start "
	      "a secret reference ${SECRET} or be doubled (\"$$\" is a literal "
	      "\"$\")" },
	    { 7, 48, "${1x", "policy.rules[0].inject[2].value: \"${1x}\" is "
	      "not a secret reference: a secret name is "
	      "[A-Za-z_][A-Za-z0-9_]{0,63}" },
	    { 8, 34, "\\nb${K", "policy.rules[0].inject[3].value: control byte "
	      "\\x0a in a template (HTTP field values cannot carry one)" },
	    { 9, 33, " ", "policy.rules[0].inject[4].value: a header value "
	      "cannot start with a space or tab (HTTP strips it)" },
	    { 9, 38, "\\t\"", "policy.rules[0].inject[4].value: a header value "
	      "cannot end with a space or tab (HTTP strips it)" },
	    { 10, 32, "\"no secret $$\"", "policy.rules[0].inject[5].value: no "
	      "${SECRET} in the value: an injection puts a secret into the "
	      "request (write, e.g., \"Bearer ${API_KEY}\"; \"$$\" is a "
	      "literal \"$\")" },
	    { 11, 26, ":${L", "policy.rules[0].inject[6].basic.user: \":\" in "
	      "a Basic user: it separates user from password" },
	    { 12, 15, "{\"user\":", "policy.rules[0].inject[7].basic: no "
	      "${SECRET} in user or password: an injection puts a secret into "
	      "the request (write, e.g., \"password\": \"${GITHUB_TOKEN}\")" },
	    { 13, 45, "$\"", "policy.rules[0].inject[8].value: \"$\" must "
	      "start a secret reference ${SECRET} or be doubled (\"$$\" is a "
	      "literal \"$\")" },
	    { 14, 33, "${", "policy.rules[0].inject[9].value: \"${}\" is not a "
	      "secret reference: a secret name is "
	      "[A-Za-z_][A-Za-z0-9_]{0,63}" },
	    } },
	{ "inject: entry shapes and header names",
	  "{\n  " LISTEN ", " TLS ",\n  " SECRETS ",\n  \"policy\": "
	  "{\"rules\": "
	  "[" RULE("s") "\"inject\": [\n"
	  "    {\"header\": \"Host\", \"value\": \"${K}\"},\n"
	  "    {\"header\": \"proxy-authorization\", \"value\": \"${K}\"},\n"
	  "    {\"header\": \"Content-Length\", \"value\": \"${K}\"}, "
	  "{\"header\": \"TE\", \"value\": \"${K}\"},\n"
	  "    {\"header\": \"a b\", \"value\": \"${K}\"}, {\"header\": 5, "
	  "\"value\": \"${K}\"},\n"
	  "    {\"header\": \"X\", \"basic\": {\"user\": \"u\", \"password\": "
	  "\"${K}\"}},\n"
	  "    {\"value\": \"${K}\"}, {\"header\": \"X\"}, {}, "
	  "{\"cookie\": 1},\n"
	  "    {\"placeholders\": []}, {\"placeholders\": [\"K\", \"K\", "
	  "\"NOPE\", 5, \"L\"]},\n"
	  "    {\"basic\": {\"user\": \"${K}\"}}, {\"basic\": \"x\"},\n"
	  "    {\"header\": \"Authorization\", \"value\": \"${K}\"}, "
	  "{\"basic\": {\"user\": \"x\", \"password\": \"${L}\"}},\n"
	  "    {\"header\": \"x-dup\", \"value\": \"${K}\"}, {\"header\": "
	  "\"X-Dup\", \"value\": \"${L}\"}\n"
	  "  ]}]}\n}", 20, 0, {
	    { 5, 16, "\"Host\"", "policy.rules[0].inject[0].header: \"Host\" "
	      "cannot be injected: moatd sends the host it checked" },
	    { 6, 16, "\"proxy-authoriza", "policy.rules[0].inject[1].header: "
	      "\"proxy-authorization\" cannot be injected: a hop-by-hop field, "
	      "not passed on to the upstream" },
	    { 7, 16, "\"Content-Length\"", "policy.rules[0].inject[2].header: "
	      "\"Content-Length\" cannot be injected: moatd frames the request "
	      "itself" },
	    { 7, 63, "\"TE\"", "policy.rules[0].inject[3].header: \"TE\" "
	      "cannot be injected: a hop-by-hop field, not passed on to the "
	      "upstream" },
	    { 8, 16, "\"a b\"", "policy.rules[0].inject[4].header: \"a b\" is "
	      "not a header field name (an HTTP token such as "
	      "\"Authorization\")" },
	    { 8, 52, "5", "policy.rules[0].inject[5].header: expected a header "
	      "field name (string), got an integer" },
	    { 9, 5, "{\"header\":", "policy.rules[0].inject[6]: give exactly "
	      "one of {\"header\": NAME, \"value\": TEMPLATE}, {\"basic\": "
	      "{\"user\": TEMPLATE, \"password\": TEMPLATE}} and "
	      "{\"placeholders\": [SECRET, ...]}" },
	    { 10, 5, "{\"value\":", "policy.rules[0].inject[7]: missing "
	      "\"header\" (the field \"value\" is for, such as "
	      "\"Authorization\")" },
	    { 10, 24, "{\"header\":", "policy.rules[0].inject[8]: missing "
	      "\"value\" (a template such as \"Bearer ${API_KEY}\")" },
	    { 10, 41, "{", "policy.rules[0].inject[9]: give exactly one of "
	      "{\"header\": NAME, \"value\": TEMPLATE}, {\"basic\": {\"user\": "
	      "TEMPLATE, \"password\": TEMPLATE}} and {\"placeholders\": "
	      "[SECRET, ...]}" },
	    { 10, 45, "{\"cookie\":", "policy.rules[0].inject[10]: give "
	      "exactly one of {\"header\": NAME, \"value\": TEMPLATE}, "
	      "{\"basic\": {\"user\": TEMPLATE, \"password\": TEMPLATE}} and "
	      "{\"placeholders\": [SECRET, ...]}" },
	    { 10, 46, "\"cookie\"", "unknown key \"cookie\" in "
	      "policy.rules[0].inject[10]" },
	    { 11, 22, "[", "policy.rules[0].inject[11].placeholders: empty "
	      "array: list at least one secret name (or remove the key)" },
	    { 11, 50, "\"K\"", "policy.rules[0].inject[12].placeholders[1]: "
	      "secret K is listed twice" },
	    { 11, 55, "\"NOPE\"", "policy.rules[0].inject[12].placeholders[2]: "
	      "\"NOPE\" names no secret: declare it in \"secrets\"" },
	    { 11, 63, "5", "policy.rules[0].inject[12].placeholders[3]: "
	      "expected a secret name (string), got an integer" },
	    { 12, 15, "{\"user\":", "policy.rules[0].inject[13].basic: missing "
	      "\"password\" (basic is {\"user\": TEMPLATE, \"password\": "
	      "TEMPLATE})" },
	    { 12, 44, "\"x\"", "policy.rules[0].inject[14].basic: expected an "
	      "object, got a string" },
	    { 13, 61, "{\"user\":", "policy.rules[0].inject[16].basic: "
	      "\"Authorization\" is already set by an earlier injection of "
	      "this rule (line 13) (\"basic\" sets Authorization)" },
	    { 14, 54, "\"X-Dup\"", "policy.rules[0].inject[18].header: "
	      "\"X-Dup\" is already set by an earlier injection of this rule "
	      "(line 14)" },
	    } },
	{ "inject: encode and body on placeholders only",
	  "{\n  " LISTEN ", " TLS ",\n  " SECRETS ",\n  \"policy\": "
	  "{\"rules\": "
	  "[" RULE("s") "\"inject\": [\n"
	  "    {\"placeholders\": [\"K\"], \"encode\": \"percent\", "
	  "\"body\": true},\n"
	  "    {\"placeholders\": [\"L\"], \"encode\": \"base64\", "
	  "\"body\": 1},\n"
	  "    {\"header\": \"X-A\", \"value\": \"${K}\", \"encode\": "
	  "\"percent\"},\n"
	  "    {\"basic\": {\"user\": \"u\", \"password\": \"${K}\"}, "
	  "\"body\": true}\n"
	  "  ]}]}\n}", 4, 0, {
	    { 6, 39, "\"base64\"", "policy.rules[0].inject[1].encode: "
	      "expected \"percent\" (the only encoding), got \"base64\"" },
	    { 6, 57, "1", "policy.rules[0].inject[1].body: expected a "
	      "boolean, got an integer" },
	    { 7, 50, "\"percent\"", "policy.rules[0].inject[2]: \"encode\" "
	      "goes with {\"placeholders\": [...]} only" },
	    { 8, 58, "true", "policy.rules[0].inject[3]: \"body\" goes with "
	      "{\"placeholders\": [...]} only" },
	    } },
	{ "inject, git, plain_http: rule keys",
	  "{\n  " LISTEN ", " TLS ",\n  \"secrets\": {\"K\": {\"env\": \"A\"}, "
	  "\"Q\": {\"env\": \"9x\"}},\n  \"policy\": {\"rules\": [\n"
	  "    {\"name\": \"d\", \"action\": \"deny\", \"hosts\": "
	  "[\"d.example\"], "
	  "\"inject\": [{\"placeholders\": [\"K\"]}], \"git\": \"read-only\", "
	  "\"plain_http\": true},\n"
	  "    " RULE("g") "\"git\": \"rw\", \"plain_http\": 1},\n"
	  "    " RULE("h") "\"git\": true, \"plain_http\": true},\n"
	  "    " RULE("o") "\"inject\": [{\"placeholders\": [\"K\"]}], "
	  "\"intercept\": false},\n"
	  "    " RULE("p") "\"git\": \"read-only\", \"intercept\": false},\n"
	  "    {\"name\": \"all\", \"action\": \"allow\", \"hosts\": [\"*\"], "
	  "\"inject\": [{\"header\": \"X-K\", \"value\": \"${K}${Q}\"}]}\n"
	  "  ]}\n}", 9, 2, {
	    { 3, 47, "\"9x\"", "secrets.Q.env: \"9x\" is not an environment "
	      "variable name ([A-Za-z_][A-Za-z0-9_]*)" },
	    { 5, 71, "[{\"placeholders\"", "policy.rules[0].inject: a deny "
	      "rule cannot have \"inject\": only an allow rule sends secrets" },
	    { 5, 105, "\"read-only\"", "policy.rules[0].git: a deny rule "
	      "cannot have \"git\": only an allow rule opens git fetch" },
	    { 5, 132, "true", "policy.rules[0].plain_http: a deny rule cannot "
	      "have \"plain_http\": only an allow rule sends secrets" },
	    { 6, 69, "\"rw\"", "policy.rules[1].git: expected \"read-only\" "
	      "(the only git preset: fetch and clone, no push), got \"rw\"" },
	    { 6, 89, "1", "policy.rules[1].plain_http: expected a boolean, got "
	      "an integer" },
	    { 7, 69, "true", "policy.rules[2].git: expected \"read-only\" (the "
	      "only git preset: fetch and clone, no push), got a boolean" },
	    { 7, 89, "true", "warning: policy.rules[2].plain_http: rule h "
	      "injects nothing: \"plain_http\" has no effect" },
	    { 8, 112, "false", "policy.rules[3].intercept: rule o injects "
	      "secrets, which needs moatd to see inside TLS: remove "
	      "\"intercept\": false (moatd never looks inside an opaque "
	      "tunnel)" },
	    { 9, 95, "false", "policy.rules[4].intercept: rule p uses the git "
	      "preset, which needs moatd to see inside TLS: remove "
	      "\"intercept\": false (moatd never looks inside an opaque "
	      "tunnel)" },
	    { 10, 50, "\"*\"", "warning: policy.rules[5].hosts[0]: rule all "
	      "injects secrets into every host (\"*\"): any name the sandbox "
	      "asks for receives them" },
	    } },
	{ "no CA: every rule that must see inside TLS is refused",
	  "{\n  " LISTEN ",\n  \"tls\": {\"upstream_ca_files\": "
	  "[\"/etc/ssl/x.pem\"]},\n  " SECRETS ",\n  \"policy\": "
	  "{\"rules\": [\n"
	  "    " RULE("inj") "\"inject\": [{\"header\": \"X-K\", \"value\": "
	  "\"${K}\"}]},\n"
	  "    " RULE("git") "\"ports\": [443], \"git\": \"read-only\"},\n"
	  "    " RULE("plain") "\"ports\": [80], \"inject\": [{\"header\": "
	  "\"X-L\", \"value\": \"${L}\"}], \"plain_http\": true, \"paths\": "
	  "[\"/x\"]},\n"
	  "    " RULE("both") "\"ports\": [80, 8080], \"methods\": [\"GET\"], "
	  "\"paths\": [\"/\"]},\n"
	  "    " RULE("range") "\"ports\": [\"80-80\"], \"methods\": "
	  "[\"GET\"]},\n"
	  "    {\"name\": \"deny80\", \"action\": \"deny\", \"hosts\": "
	  "[\"*\"], "
	  "\"ports\": [80], \"methods\": [\"PUT\"]},\n"
	  "    {\"name\": \"denyall\", \"action\": \"deny\", \"hosts\": "
	  "[\"f.example\"], \"methods\": [\"PUT\"]}\n"
	  "  ]}\n}", 4, 0, {
	    { 6, 5, "{\"name\":", "policy.rules[0]: rule inj needs to see "
	      "inside TLS (inject) but no CA is configured: set tls.ca_cert "
	      "and tls.ca_key (moat ca init DIR)" },
	    { 7, 5, "{\"name\":", "policy.rules[1]: rule git needs to see "
	      "inside TLS (git) but no CA is configured: set tls.ca_cert and "
	      "tls.ca_key (moat ca init DIR)" },
	    { 9, 5, "{\"name\":", "policy.rules[3]: rule both needs to see "
	      "inside TLS (methods, paths) but no CA is configured: set "
	      "tls.ca_cert and tls.ca_key (moat ca init DIR)" },
	    { 12, 5, "{\"name\":", "policy.rules[6]: rule denyall needs to see "
	      "inside TLS (methods) but no CA is configured: set tls.ca_cert "
	      "and tls.ca_key (moat ca init DIR)" },
	    } },
	{ "protocols: known names, arrays only, allow rules only",
	  "{\n  " LISTEN ",\n  \"policy\": {\"rules\": [\n"
	  "    " RULE("a") "\"protocols\": [\"ssh\", \"ftp\"]},\n"
	  "    " RULE("b") "\"protocols\": \"tls\"},\n"
	  "    {\"action\": \"deny\", \"hosts\": [\"c.example\"], "
	  "\"protocols\": [\"tls\"]},\n"
	  "    " RULE("d") "\"protocols\": []},\n"
	  "    " RULE("e") "\"protocols\": [\"tls\", \"http\", \"ssh\", "
	  "\"any\"]}\n"
	  "  ]}\n}", 4, 0, {
	    { 4, 83, "\"ftp\"", "policy.rules[0].protocols[1]: \"ftp\" is "
	      "not a protocol: \"tls\", \"http\", \"ssh\" or \"any\"" },
	    { 5, 75, "\"tls\"", "policy.rules[1].protocols: expected an "
	      "array, got a string" },
	    { 6, 61, "[\"tls\"]", "policy.rules[2].protocols: \"protocols\" "
	      "narrows what an allow rule lets through; a deny rule refuses "
	      "every protocol" },
	    { 7, 75, "[]", "policy.rules[3].protocols: empty array: list at "
	      "least one protocol (or remove the key)" },
	    } },
	{ "reading requests where moatd cannot: ssh (22), git:// (9418)",
	  "{\n  " LISTEN ", " TLS ",\n  \"secrets\": {\"K\": {\"env\": \"A\"}},\n  \"policy\": "
	  "{\"rules\": [\n"
	  "    " RULE("g") "\"ports\": [443, 22], \"git\": \"read-only\"},\n"
	  "    " RULE("m") "\"ports\": [\"*\"], \"methods\": [\"GET\"]},\n"
	  "    " RULE("p") "\"ports\": [\"8000-9999\"], \"paths\": [\"/a\"]},\n"
	  "    " RULE("i") "\"ports\": [22], \"inject\": [{\"header\": \"X-K\", "
	  "\"value\": \"${K}\"}], \"intercept\": true},\n"
	  "    " RULE("s") "\"ports\": [443], \"protocols\": [\"tls\", "
	  "\"ssh\"], \"git\": \"read-only\"},\n"
	  "    {\"name\": \"d\", \"action\": \"deny\", \"hosts\": "
	  "[\"d.example\"], \"ports\": [22, 80], \"methods\": [\"PUT\"]},\n"
	  "    {\"name\": \"dall\", \"action\": \"deny\", \"hosts\": "
	  "[\"d.example\"], \"methods\": [\"PUT\"]},\n"
	  "    {\"name\": \"dstar\", \"action\": \"deny\", \"hosts\": "
	  "[\"d.example\"], \"ports\": [\"*\"], \"paths\": [\"/x\"]},\n"
	  "    " RULE("ssh") "\"ports\": [22, 9418], \"protocols\": "
	  "[\"ssh\"]},\n"
	  "    " RULE("h") "\"ports\": [443, 2222], \"git\": \"read-only\"},\n"
	  "    " RULE("o") "\"ports\": [22], \"methods\": [\"GET\"], "
	  "\"intercept\": false}\n"
	  "  ]}\n}", 6, 1, {
	    { 5, 77, "22]", "policy.rules[0].ports[1]: rule g needs to read "
	      "requests (\"git\"), but port 22 (ssh) carries what moatd cannot "
	      "read (it reads HTTP and TLS): keep \"git\" on HTTP and HTTPS "
	      "ports (such as [443]) and, if ssh is wanted, allow port 22 in a "
	      "rule of its own without \"git\" (ssh is opaque to moat: git "
	      "push over it cannot be stopped there)" },
	    { 6, 72, "\"*\"", "policy.rules[1].ports[0]: rule m needs to read "
	      "requests (\"methods\"), but ports 22 (ssh) and 9418 (git://) "
	      "carry what moatd cannot read (it reads HTTP and TLS): keep "
	      "\"methods\" on HTTP and HTTPS ports (such as [443]) and, if ssh "
	      "or git:// is wanted, allow ports 22 and 9418 in a rule of its "
	      "own without \"methods\" (ssh and git:// are opaque to moat: "
	      "nothing inside them is checked)" },
	    { 7, 72, "\"8000-9999\"", "policy.rules[2].ports[0]: rule p needs "
	      "to read requests (\"paths\"), but port 9418 (git://) carries "
	      "what moatd cannot read (it reads HTTP and TLS): keep \"paths\" "
	      "on HTTP and HTTPS ports (such as [443]) and, if git:// is "
	      "wanted, allow port 9418 in a rule of its own without \"paths\" "
	      "(git:// is opaque to moat: nothing inside it is checked)" },
	    { 8, 72, "22]", "policy.rules[3].ports[0]: rule i needs to read "
	      "requests (\"inject\", \"intercept\"), but port 22 (ssh) carries "
	      "what moatd cannot read (it reads HTTP and TLS): keep "
	      "\"inject\", \"intercept\" on HTTP and HTTPS ports (such as "
	      "[443]) and, if ssh is wanted, allow port 22 in a rule of its "
	      "own without \"inject\", \"intercept\" (ssh is opaque to moat: "
	      "nothing inside it is checked)" },
	    { 9, 99, "\"ssh\"", "policy.rules[4].protocols[1]: rule s needs "
	      "to read requests (\"git\"), but it lists \"ssh\", which moatd "
	      "cannot read (it reads HTTP and TLS): remove \"ssh\" here and, "
	      "if ssh is wanted, allow it in a rule of its own without \"git\" "
	      "(ssh is opaque to moat: git push over it cannot be stopped "
	      "there)" },
	    { 10, 71, "22,", "policy.rules[5].ports[0]: rule d needs to read "
	      "requests (\"methods\"), but port 22 (ssh) carries what moatd "
	      "cannot read (it reads HTTP and TLS): keep \"methods\" on HTTP "
	      "and HTTPS ports (such as [443]); to refuse ssh, a deny rule of "
	      "its own for port 22, without \"methods\", does" },
	    { 15, 110, "false", "warning: policy.rules[10].intercept: rule o "
	      "checks methods or paths but never intercepts TLS: its HTTPS "
	      "requests cannot be checked" },
	    } },
	{ "metrics: not on a listener's interface (loopback too)",
	  "{\n  " LISTEN ",\n  " POLICY ",\n"
	  "  \"metrics\": {\"address\": \"127.0.0.2:9464\"}\n}", 1, 0, {
	    { 4, 26, "\"127.0.0.2:9464\"", "metrics.address 127.0.0.2:9464 "
	      "is on the interface of listen[0] (127.0.0.1:3128, line 2): a "
	      "sandbox that reaches that listener reaches this port too"
	      METRICS_FIX } } },
	{ "metrics: nowhere beside a listener on every address",
	  "{\n  \"listen\": [{\"proto\": \"http\", \"address\": "
	  "\"0.0.0.0:3128\"},\n    {\"proto\": \"socks5\", \"address\": "
	  "\"10.1.2.3:1080\"}],\n  " POLICY ",\n"
	  "  \"metrics\": {\"address\": \"10.1.2.3:9464\"}\n}", 2, 0, {
	    { 5, 26, "\"10.1.2.3:9464\"", "metrics.address 10.1.2.3:9464: "
	      "listen[0] (0.0.0.0:3128, line 2) listens on every address, so "
	      "a sandbox that reaches it may reach this port too" METRICS_FIX },
	    { 5, 26, "\"10.1.2.3:9464\"", "metrics.address 10.1.2.3:9464 is "
	      "on the interface of listen[1] (10.1.2.3:1080, line 3): a "
	      "sandbox that reaches that listener reaches this port too"
	      METRICS_FIX } } },
	{ "metrics: a socket of its own",
	  "{\n  \"listen\": [{\"proto\": \"http\", \"address\": "
	  "\"unix:/run/p.sock\"}],\n  \"admin\": {\"address\": "
	  "\"unix:/run/a.sock\"},\n  " POLICY ",\n  \"metrics\": "
	  "{\"address\": \"unix:/run/p.sock\"}\n}", 1, 0, {
	    { 5, 26, "\"unix:/run/p.sock\"", "metrics.address: /run/p.sock "
	      "is also listen[0]'s socket (line 2): give metrics a path of "
	      "its own" } } },
	{ "metrics: every address beside an admin socket; mode, range, keys",
	  "{\n  \"admin\": {\"address\": \"unix:/run/a.sock\"},\n  " POLICY
	  ",\n  \"metrics\": {\"address\": \"[::]:9464\", \"mode\": "
	  "\"0600\",\n    \"max_series\": 5, \"adress\": 1}\n}", 4, 0, {
	    { 4, 26, "\"[::]:9464\"", "metrics.address [::]:9464 listens on "
	      "every address, and the sandboxes registered on the admin "
	      "socket may reach moatd's namespace (through a veth)"
	      METRICS_FIX },
	    { 4, 47, "\"0600\"", "metrics.mode: a mode applies to a unix "
	      "socket address only" },
	    { 5, 19, "5", "metrics.max_series: 5 is out of range "
	      "(16-100000)" },
	    { 5, 22, "\"adress\"", "unknown key \"adress\" in metrics "
	      "(did you mean \"address\"?)" } } },
	{ "metrics: an address of its own is fine",
	  "{\n  " LISTEN ",\n  " POLICY ",\n  \"metrics\": {\"address\": "
	  "\"192.0.2.1:9464\", \"max_sandboxes\": 1000}\n}", 0, 0, {
	    { 0, 0, NULL, NULL } } },
	{ "a CA given wrongly is reported once, not again per rule",
	  "{\n  " LISTEN ",\n  \"tls\": {\"ca_key\": \"/k\"},\n  " SECRETS ",\n"
	  "  \"policy\": {\"rules\": [\n"
	  "    " RULE("inj") "\"inject\": [{\"basic\": {\"user\": \"${K}\", "
	  "\"password\": \"${L}\"}}]}\n"
	  "  ]}\n}", 1, 0, {
	    { 3, 21, "\"/k\"", "tls.ca_key: tls.ca_key is given without "
	      "tls.ca_cert: give both or neither" },
	    } },
};

static void	test_config_vectors(void);
static void	test_config_good(void);
static void	test_config_defaults(void);
static void	test_config_audit_only(void);
static void	test_config_default_embedded(void);
static void	test_config_examples(void);
static void	test_config_format(void);
static void	test_config_refs(void);
static void	test_config_inject(void);
static void	test_config_unused(void);
static void	cfg_part(const struct policy_template *t, size_t i,
		    const char *text, size_t secret);
static const char	*cfg_text_at(const char *json, int line, int col);

/* The text of json that starts at line:col (1-based), or NULL. */
static const char *
cfg_text_at(const char *json, int line, int col)
{
	const char	*p = json;
	int		 l = 1;

	while (l < line) {
		if ((p = strchr(p, '\n')) == NULL)
			return NULL;
		p++;
		l++;
	}
	if ((size_t)(col - 1) > strlen(p))
		return NULL;
	return p + col - 1;
}

/*
 * policy_load_opts.unused: a key the caller will not use is still checked,
 * and gets a warning at the key; one that is not there gets nothing.
 */
static void
test_config_unused(void)
{
	static const struct policy_unused_key	unused[] = {
		{ "audit", "moat run does not use it: give --audit FILE" },
		{ "resolver", "moat run does not use it: give --resolver "
		  "ADDR:PORT" },
		{ "workers", "never shown: not in the file" },
		{ NULL, NULL }
	};
	static const struct policy_load_opts	opts = { .unused = unused };
	static const char	json[] = "{\n  " LISTEN ",\n"
	    "  \"audit\": {\"path\": \"-\"},\n"
	    "  \"resolver\": {\"servers\": [\"1.2.3.4:99999\"]}\n}";
	struct policy_diags	 d;
	struct moat_config	*c;
	char			 got[CFG_LINE_MAX];

	policy_diags_init(&d);
	c = policy_config_load_opts("u.json", json, strlen(json), &opts, &d);
	CU_ASSERT_PTR_NULL(c);		/* the bad server is still an error */
	CU_ASSERT_EQUAL(d.nerrors, 1);
	CU_ASSERT_EQUAL(d.nwarnings, 3);	/* two unused, no policy */
	CU_ASSERT_FATAL(d.n == 4);
	CU_ASSERT_STRING_EQUAL(policy_diag_format(&d, 0, got, sizeof(got)),
	    "u.json:1:1: warning: no \"policy\": every connection will be "
	    "denied");
	CU_ASSERT_STRING_EQUAL(policy_diag_format(&d, 1, got, sizeof(got)),
	    "u.json:3:3: warning: \"audit\": moat run does not use it: give "
	    "--audit FILE");
	CU_ASSERT_STRING_EQUAL(policy_diag_format(&d, 2, got, sizeof(got)),
	    "u.json:4:3: warning: \"resolver\": moat run does not use it: "
	    "give --resolver ADDR:PORT");
	CU_ASSERT_EQUAL(d.v[3].level, POLICY_DIAG_ERROR);
	CU_ASSERT_EQUAL(d.v[3].line, 4);
	policy_diags_clear(&d);
	/* Without the option, no such warning. */
	c = policy_config_load_opts("u.json", json, strlen(json), NULL, &d);
	CU_ASSERT_EQUAL(d.nwarnings, 1);
	policy_config_unref(c);
	policy_diags_clear(&d);
}

const char *
unit_config_vector(size_t i)
{
	return i < sizeof(cfg_vectors) / sizeof(cfg_vectors[0]) ?
	    cfg_vectors[i].json : NULL;
}

static void
test_config_vectors(void)
{
	const struct cfg_vec	*v;
	const struct cfg_diag	*e;
	struct policy_diags	 d;
	struct moat_config	*c;
	char			 got[CFG_LINE_MAX], want[CFG_LINE_MAX];
	const char		*at;
	size_t			 i, k, n;

	for (i = 0; i < sizeof(cfg_vectors) / sizeof(*v); i++) {
		v = &cfg_vectors[i];
		policy_diags_init(&d);
		c = policy_config_load("t.json", v->json, strlen(v->json), &d);
		if (d.nerrors != v->nerrors || d.nwarnings != v->nwarnings) {
			fprintf(stderr, "\n  vector %s: %zu errors, %zu "
			    "warnings:\n", v->what, d.nerrors, d.nwarnings);
			for (k = 0; k < d.n; k++)
				fprintf(stderr, "    %s\n", policy_diag_format(&d,
				    k, got, sizeof(got)));
		}
		CU_ASSERT_EQUAL(d.nerrors, v->nerrors);
		CU_ASSERT_EQUAL(d.nwarnings, v->nwarnings);
		/* Any error fails the load; warnings alone do not. */
		CU_ASSERT_EQUAL(c == NULL, v->nerrors > 0);
		for (n = 0; n < CFG_MAXDIAG && v->d[n].line != 0; n++)
			;
		for (k = 0; k < n; k++) {
			e = &v->d[k];
			at = cfg_text_at(v->json, e->line, e->col);
			CU_ASSERT_PTR_NOT_NULL_FATAL(at);
			if (strncmp(at, e->at, strlen(e->at)) != 0)
				fprintf(stderr, "\n  vector %s #%zu: text at "
				    "%d:%d is %.20s\n", v->what, k, e->line,
				    e->col, at);
			CU_ASSERT(strncmp(at, e->at, strlen(e->at)) == 0);
			CU_ASSERT_FATAL(k < d.n);
			snprintf(want, sizeof(want), "t.json:%d:%d: %s", e->line,
			    e->col, e->msg);
			policy_diag_format(&d, k, got, sizeof(got));
			if (strcmp(got, want) != 0)
				fprintf(stderr, "\n  vector %s #%zu:\n    got  "
				    "%s\n    want %s\n", v->what, k, got, want);
			CU_ASSERT_STRING_EQUAL(got, want);
		}
		policy_config_unref(c);
		policy_diags_clear(&d);
	}
}

static void
test_config_good(void)
{
	static const char	 json[] =
	    "{\n"
	    "  \"listen\": [\n"
	    "    {\"proto\": \"http+socks5\", \"address\": \"127.0.0.1:3128\",\n"
	    "     \"sandbox\": \"sb-1\", \"connect_refusal\": \"in-tunnel\", "
	    "\"auth\": {\"agent\": {\"env\": "
	    "\"MOAT_TOKEN\"}, \"ci.bot\": {\"file\": \"/run/token\"}}},\n"
	    "    {\"proto\": \"dns\", \"address\": \"[::1]:5353\"},\n"
	    "    {\"proto\": \"http\", \"address\": \"unix:/run/moat/h.sock\", "
	    "\"mode\": \"0666\"},\n"
	    "    {\"proto\": \"transparent\", \"address\": \"0.0.0.0:15001\"},\n"
	    "    {\"proto\": \"socks5\", \"address\": \"unix:/run/moat/s.sock\"}\n"
	    "  ],\n"
	    "  \"policy\": {\"default\": \"deny\", \"allow_private\": "
	    "[\"203.0.113.0/24\"], \"rules\": [\n"
	    "    {\"name\": \"openai\", \"action\": \"allow\", \"hosts\": "
	    "[\"api.openai.com\"], \"ports\": [443, \"8000-8002\"], "
	    "\"methods\": [\"post\"], \"paths\": [\"/v1/\"], "
	    "\"intercept\": true, \"rate\": {\"requests\": 10, "
	    "\"per_seconds\": 60}},\n"
	    "    {\"action\": \"deny\", \"cidrs\": [\"203.0.113.9\"]},\n"
	    "    {\"name\": \"gh\", \"action\": \"allow\", \"hosts\": "
	    "[\"github.com\"], \"inject\": [{\"basic\": {\"user\": "
	    "\"x-access-token\", \"password\": \"${GH}\"}}, {\"header\": "
	    "\"X-Api-Key\", \"value\": \"${OPENAI_API_KEY}\"}]}\n"
	    "  ]},\n"
	    "  \"secrets\": {\"OPENAI_API_KEY\": {\"env\": \"REAL_OPENAI\"}, "
	    "\"GH\": {\"file\": \"/etc/gh\", \"sandbox_env\": "
	    "\"GITHUB_TOKEN\"}},\n"
	    "  \"audit\": {\"path\": \"/var/log/moat.jsonl\"},\n"
	    "  \"resolver\": {\"servers\": [\"1.1.1.1\", \"9.9.9.9:5353\", "
	    "\"[2606:4700::1111]:53\", \"2001:db8::53\"], \"tries\": 3},\n"
	    "  \"tls\": {\"ca_cert\": \"/etc/moat/ca.pem\", \"ca_key\": "
	    "\"/etc/moat/ca.key\", \"upstream_ca_files\": [\"/etc/ssl/ca.crt\"], "
	    "\"extra_ca_files\": [\"/a.pem\", \"/b.pem\"], "
	    "\"leaf_cache_entries\": 50},\n"
	    "  \"admin\": {\"address\": \"unix:/run/moat/admin.sock\", "
	    "\"mode\": \"0640\"},\n"
	    "  \"timeouts\": {\"dns_ms\": 2000, \"drain_ms\": 1, "
	    "\"idle_body_ms\": 1500},\n"
	    "  \"limits\": {\"header_count\": 50, \"body_inspect_bytes\": 0, "
	    "\"dns_wildcard_names\": 5},\n"
	    "  \"workers\": 4,\n"
	    "  \"user\": \"moat\"\n"
	    "}\n";
	struct policy_diags	 d;
	struct moat_config	*c;
	const struct moat_listen *l;
	const struct policy_rule *r;
	struct policy_decision	 dec;
	struct policy_target	 t;
	unsigned		 req, per;

	policy_diags_init(&d);
	c = policy_config_load("good.json", json, sizeof(json) - 1, &d);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_EQUAL(d.n, 0);
	CU_ASSERT_STRING_EQUAL(c->file, "good.json");

	CU_ASSERT_EQUAL_FATAL(c->nlisten, 5);
	l = &c->listen[0];
	CU_ASSERT_EQUAL(l->proto, MOAT_PROTO_MIXED);
	CU_ASSERT_STRING_EQUAL(policy_proto_str(l->proto), "http+socks5");
	CU_ASSERT_STRING_EQUAL(l->address, "127.0.0.1:3128");
	CU_ASSERT_FALSE(l->is_unix);
	CU_ASSERT_EQUAL(l->host.kind, POLICY_HOST_ADDR);
	CU_ASSERT_STRING_EQUAL(l->host.name, "127.0.0.1");
	CU_ASSERT_EQUAL(l->port, 3128);
	CU_ASSERT_EQUAL(l->mode, -1);
	CU_ASSERT_STRING_EQUAL(l->sandbox, "sb-1");
	CU_ASSERT_EQUAL(l->line, 3);
	CU_ASSERT_EQUAL(l->column, 5);
	CU_ASSERT_EQUAL(l->connect_refusal, MOAT_REFUSAL_IN_TUNNEL);
	CU_ASSERT_STRING_EQUAL(policy_connect_refusal_str(l->connect_refusal),
	    "in-tunnel");
	CU_ASSERT_EQUAL_FATAL(l->nauth, 2);
	CU_ASSERT_STRING_EQUAL(l->auth[0].name, "agent");
	CU_ASSERT_STRING_EQUAL(l->auth[0].env, "MOAT_TOKEN");
	CU_ASSERT_PTR_NULL(l->auth[0].file);
	CU_ASSERT_STRING_EQUAL(l->auth[1].name, "ci.bot");
	CU_ASSERT_STRING_EQUAL(l->auth[1].file, "/run/token");
	l = &c->listen[1];
	CU_ASSERT_EQUAL(l->connect_refusal, MOAT_REFUSAL_STATUS);
	CU_ASSERT_EQUAL(l->proto, MOAT_PROTO_DNS);
	CU_ASSERT_EQUAL(l->host.addr.family, AF_INET6);
	CU_ASSERT_EQUAL(l->port, 5353);
	CU_ASSERT_STRING_EQUAL(l->sandbox, "default");
	l = &c->listen[2];
	CU_ASSERT_TRUE(l->is_unix);
	CU_ASSERT_STRING_EQUAL(l->path, "/run/moat/h.sock");
	CU_ASSERT_EQUAL(l->mode, 0666);
	CU_ASSERT_EQUAL(c->listen[3].proto, MOAT_PROTO_TRANSPARENT);
	CU_ASSERT_EQUAL(c->listen[4].mode, 0660);	/* unix default */

	CU_ASSERT_EQUAL_FATAL(policy_rule_count(c->policy), 3);
	CU_ASSERT_EQUAL_FATAL(c->nsecrets, 2);
	CU_ASSERT_STRING_EQUAL(c->secrets[0].name, "OPENAI_API_KEY");
	CU_ASSERT_STRING_EQUAL(c->secrets[0].env, "REAL_OPENAI");
	CU_ASSERT_STRING_EQUAL(c->secrets[0].placeholder_env,
	    "OPENAI_API_KEY");
	CU_ASSERT_STRING_EQUAL(c->secrets[1].file, "/etc/gh");
	CU_ASSERT_STRING_EQUAL(c->secrets[1].placeholder_env, "GITHUB_TOKEN");
	CU_ASSERT_STRING_EQUAL(c->audit_path, "/var/log/moat.jsonl");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c->resolver_servers);
	CU_ASSERT_STRING_EQUAL(c->resolver_servers[0], "1.1.1.1:53");
	CU_ASSERT_STRING_EQUAL(c->resolver_servers[1], "9.9.9.9:5353");
	CU_ASSERT_STRING_EQUAL(c->resolver_servers[2], "[2606:4700::1111]:53");
	CU_ASSERT_STRING_EQUAL(c->resolver_servers[3], "[2001:db8::53]:53");
	CU_ASSERT_PTR_NULL(c->resolver_servers[4]);
	CU_ASSERT_EQUAL(c->resolver_tries, 3);
	CU_ASSERT_STRING_EQUAL(c->tls.ca_cert, "/etc/moat/ca.pem");
	CU_ASSERT_STRING_EQUAL(c->tls.ca_key, "/etc/moat/ca.key");
	CU_ASSERT_STRING_EQUAL(c->tls.upstream_ca_files[0], "/etc/ssl/ca.crt");
	CU_ASSERT_PTR_NULL(c->tls.upstream_ca_files[1]);
	CU_ASSERT_STRING_EQUAL(c->tls.extra_ca_files[1], "/b.pem");
	CU_ASSERT_PTR_NULL(c->tls.extra_ca_files[2]);
	CU_ASSERT_EQUAL(c->tls.leaf_cache_entries, 50);
	CU_ASSERT_STRING_EQUAL(c->admin_address, "unix:/run/moat/admin.sock");
	CU_ASSERT_STRING_EQUAL(c->admin_path, "/run/moat/admin.sock");
	CU_ASSERT_EQUAL(c->admin_mode, 0640);
	CU_ASSERT_EQUAL(c->timeouts.dns_ms, 2000);
	CU_ASSERT_EQUAL(c->timeouts.drain_ms, 1);
	CU_ASSERT_EQUAL(c->timeouts.idle_body_ms, 1500);
	CU_ASSERT_EQUAL(c->timeouts.connect_ms, 10000);	/* default kept */
	CU_ASSERT_EQUAL(c->limits.header_count, 50);
	CU_ASSERT_EQUAL(c->limits.body_inspect_bytes, 0);
	CU_ASSERT_EQUAL(c->limits.dns_wildcard_names, 5);
	CU_ASSERT_EQUAL(c->limits.header_bytes, 65536);
	CU_ASSERT_EQUAL(c->workers, 4);
	CU_ASSERT_STRING_EQUAL(c->user, "moat");

	/* The rule as compiled: name, position, rate, upper-cased method. */
	memset(&t, 0, sizeof(t));
	t.name = "api.openai.com";
	t.port = 8001;
	t.method = "POST";
	t.path = "/v1/chat/completions";
	CU_ASSERT_EQUAL(policy_decide(c->policy, &t, &dec), POLICY_ALLOW);
	r = dec.rule;
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_STRING_EQUAL(policy_rule_name(r), "openai");
	CU_ASSERT_EQUAL(policy_rule_index(r), 0);
	CU_ASSERT_EQUAL(policy_rule_line(r), 11);
	CU_ASSERT_EQUAL(policy_rule_column(r), 5);
	CU_ASSERT_EQUAL(policy_rule_rate(r, &req, &per), 1);
	CU_ASSERT_EQUAL(req, 10);
	CU_ASSERT_EQUAL(per, 60);
	CU_ASSERT_EQUAL(dec.flags, POLICY_F_INSPECT);
	t.method = "post";	/* methods compare case-sensitively */
	CU_ASSERT_EQUAL(policy_decide(c->policy, &t, &dec), POLICY_DENY);
	CU_ASSERT_EQUAL(dec.reason, POLICY_R_METHOD);
	/* The unnamed deny rule is "rule-1". */
	memset(&t, 0, sizeof(t));
	t.name = "api.openai.com";
	t.port = 443;
	CU_ASSERT_EQUAL(policy_decide(c->policy, &t, &dec), POLICY_ALLOW);
	{
		struct policy_host	h;

		CU_ASSERT_EQUAL_FATAL(policy_host_normalise("203.0.113.9", 11,
		    &h, NULL), 0);
		t.addr = &h.addr;
		CU_ASSERT_EQUAL(policy_decide(c->policy, &t, &dec),
		    POLICY_DENY);
		CU_ASSERT_EQUAL(dec.reason, POLICY_R_DENIED_BY_RULE);
		CU_ASSERT_STRING_EQUAL(dec.rule_name, "rule-1");
		CU_ASSERT_EQUAL(policy_rule_rate(dec.rule, &req, &per), 0);
	}
	/* Reference counting: two refs, two unrefs. */
	CU_ASSERT_PTR_EQUAL(policy_config_ref(c), c);
	policy_config_unref(c);
	policy_config_unref(c);
	policy_diags_clear(&d);
	policy_config_unref(NULL);
}

static void
test_config_defaults(void)
{
	static const char	 json[] = "{" LISTEN ", \"workers\": \"auto\"}";
	struct policy_diags	 d;
	struct moat_config	*c;

	policy_diags_init(&d);
	c = policy_config_load("min.json", json, sizeof(json) - 1, &d);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_EQUAL(d.nerrors, 0);
	CU_ASSERT_EQUAL(d.nwarnings, 1);	/* no policy */
	CU_ASSERT_EQUAL(c->listen[0].mode, -1);
	CU_ASSERT_STRING_EQUAL(c->listen[0].sandbox, "default");
	CU_ASSERT_EQUAL(c->listen[0].nauth, 0);
	CU_ASSERT_PTR_NULL(c->listen[0].auth);
	CU_ASSERT_EQUAL(policy_rule_count(c->policy), 0);
	CU_ASSERT_EQUAL(c->nsecrets, 0);
	CU_ASSERT_STRING_EQUAL(c->audit_path, "-");
	CU_ASSERT_EQUAL(c->audit_deny, 1);	/* on_failure "deny" */
	CU_ASSERT_PTR_NULL(c->resolver_servers);
	CU_ASSERT_EQUAL(c->resolver_tries, 2);
	CU_ASSERT_PTR_NULL(c->tls.ca_cert);
	CU_ASSERT_PTR_NULL(c->tls.ca_key);
	CU_ASSERT_PTR_NULL(c->tls.upstream_ca_files);
	CU_ASSERT_PTR_NULL(c->tls.extra_ca_files);
	CU_ASSERT_EQUAL(c->tls.leaf_cache_entries, 1024);
	CU_ASSERT_PTR_NULL(c->admin_address);
	CU_ASSERT_PTR_NULL(c->admin_path);
	CU_ASSERT_EQUAL(c->admin_mode, 0600);
	CU_ASSERT_EQUAL(c->timeouts.request_head_ms, 10000);
	CU_ASSERT_EQUAL(c->timeouts.idle_client_ms, 60000);
	CU_ASSERT_EQUAL(c->timeouts.dns_ms, 5000);
	CU_ASSERT_EQUAL(c->timeouts.connect_ms, 10000);
	CU_ASSERT_EQUAL(c->timeouts.response_head_ms, 300000);
	CU_ASSERT_EQUAL(c->timeouts.idle_body_ms, 60000);
	CU_ASSERT_EQUAL(c->timeouts.idle_tunnel_ms, 3600000);
	CU_ASSERT_EQUAL(c->timeouts.idle_upstream_ms, 30000);
	CU_ASSERT_EQUAL(c->timeouts.tls_handshake_ms, 10000);
	CU_ASSERT_EQUAL(c->timeouts.drain_ms, 10000);
	CU_ASSERT_EQUAL(c->limits.request_line_bytes, 8192);
	CU_ASSERT_EQUAL(c->limits.header_bytes, 65536);
	CU_ASSERT_EQUAL(c->limits.header_count, 100);
	CU_ASSERT_EQUAL(c->limits.connections, 10000);
	CU_ASSERT_EQUAL(c->limits.sandbox_connections, 10000); /* one */
	CU_ASSERT_FALSE(c->limits.sandbox_connections_set);
	CU_ASSERT_EQUAL(c->limits.body_inspect_bytes, 1048576);
	CU_ASSERT_EQUAL(c->limits.dns_cache_entries, 4096);
	CU_ASSERT_EQUAL(c->limits.dns_wildcard_names, 100);
	CU_ASSERT_EQUAL(c->limits.partial_heads_bytes, 33554432);
	CU_ASSERT_EQUAL(c->workers, 0);
	CU_ASSERT_PTR_NULL(c->user);
	CU_ASSERT_EQUAL(c->audit_only, -1);	/* not given: enforce */
	CU_ASSERT_EQUAL(c->listen[0].audit_only, -1);
	CU_ASSERT_EQUAL(c->naudit_request_ids, 1);
	CU_ASSERT_STRING_EQUAL(c->audit_request_ids[0], "X-Request-Id");
	CU_ASSERT_PTR_NULL(c->audit_request_ids[1]);
	policy_config_unref(c);
	policy_diags_clear(&d);
}

/*
 * "audit_only" at the top level and per listener, as given;
 * audit.request_id_headers replaces the default, [] turns it off.
 */
static void
test_config_audit_only(void)
{
	static const char	 json[] = "{\"listen\": ["
	    "{\"proto\": \"http\", \"address\": \"127.0.0.1:1\"},"
	    "{\"proto\": \"http\", \"address\": \"127.0.0.1:2\", "
	    "\"audit_only\": false},"
	    "{\"proto\": \"dns\", \"address\": \"127.0.0.1:3\", "
	    "\"audit_only\": true}], \"audit_only\": true, "
	    "\"audit\": {\"request_id_headers\": [\"X-Amzn-Trace-Id\", "
	    "\"X-Request-Id\"]}}";
	static const char	 none[] = "{\"listen\": [], \"audit\": "
	    "{\"request_id_headers\": []}}";
	struct policy_diags	 d;
	struct moat_config	*c;

	policy_diags_init(&d);
	c = policy_config_load("a.json", json, sizeof(json) - 1, &d);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_EQUAL(c->audit_only, 1);
	CU_ASSERT_EQUAL(c->listen[0].audit_only, -1);
	CU_ASSERT_EQUAL(c->listen[1].audit_only, 0);
	CU_ASSERT_EQUAL(c->listen[2].audit_only, 1);
	CU_ASSERT_EQUAL(c->naudit_request_ids, 2);
	CU_ASSERT_STRING_EQUAL(c->audit_request_ids[0], "X-Amzn-Trace-Id");
	CU_ASSERT_STRING_EQUAL(c->audit_request_ids[1], "X-Request-Id");
	CU_ASSERT_PTR_NULL(c->audit_request_ids[2]);
	policy_config_unref(c);
	policy_diags_clear(&d);
	policy_diags_init(&d);
	c = policy_config_load("n.json", none, sizeof(none) - 1, &d);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_EQUAL(c->naudit_request_ids, 0);
	CU_ASSERT_EQUAL(c->audit_only, -1);
	policy_config_unref(c);
	policy_diags_clear(&d);
}

/*
 * limits.sandbox_connections: unless given (and then marked as given), a
 * quarter of limits.connections (at least 1) where moatd serves several
 * sandboxes (listeners of two names, or an admin socket), all of them
 * where it serves one; listen[].connections kept per listener, 0 when
 * absent.
 */
static void
test_config_sandbox_connections(void)
{
	static const struct {
		const char	*limits;
		const char	*second;	/* in the second listener */
		const char	*top;		/* more top-level keys */
		size_t		 want;
		bool		 set;
	} v[] = {
		{ "{}", "", "", 10000, false },
		{ "{\"connections\": 400}", "", "", 400, false },
		{ "{}", ", \"sandbox\": \"b\"", "", 2500, false },
		{ "{\"connections\": 400}", ", \"sandbox\": \"b\"", "", 100,
		  false },
		{ "{\"connections\": 3}", ", \"sandbox\": \"b\"", "", 1,
		  false },
		{ "{}", "", ", \"admin\": {\"address\": \"unix:/run/a.sock\"}",
		  2500, false },
		{ "{\"sandbox_connections\": 7}", "", "", 7, true },
		{ "{\"connections\": 10, \"sandbox_connections\": 50}", "", "",
		  50, true },
	};
	struct policy_diags	 d;
	struct moat_config	*c;
	char			 json[512];
	size_t			 i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		snprintf(json, sizeof(json), "{\"listen\": [{\"proto\": "
		    "\"http\", \"address\": \"127.0.0.1:3128\", "
		    "\"connections\": 9}, {\"proto\": \"socks5\", "
		    "\"address\": \"127.0.0.1:1080\"%s}], " POLICY ", "
		    "\"limits\": %s%s}", v[i].second, v[i].limits, v[i].top);
		policy_diags_init(&d);
		c = policy_config_load("t.json", json, strlen(json), &d);
		CU_ASSERT_PTR_NOT_NULL_FATAL(c);
		CU_ASSERT_EQUAL(d.n, 0);
		CU_ASSERT_EQUAL(c->limits.sandbox_connections, v[i].want);
		CU_ASSERT_EQUAL(c->limits.sandbox_connections_set, v[i].set);
		CU_ASSERT_EQUAL(c->listen[0].connections, 9);
		CU_ASSERT_EQUAL(c->listen[1].connections, 0);
		policy_config_unref(c);
		policy_diags_clear(&d);
	}
}

static void
test_config_default_embedded(void)
{
	struct policy_diags	 d;
	struct moat_config	*c;
	char			 line[CFG_LINE_MAX];
	size_t			 i;

	CU_ASSERT_EQUAL(strlen(moat_default_config), moat_default_config_len);
	policy_diags_init(&d);
	c = policy_config_load("default", moat_default_config,
	    moat_default_config_len, &d);
	for (i = 0; i < d.n; i++)
		fprintf(stderr, "\n  %s", policy_diag_format(&d, i, line,
		    sizeof(line)));
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_EQUAL(d.n, 0);
	CU_ASSERT(policy_rule_count(c->policy) > 0);
	CU_ASSERT(c->nlisten > 0);
	policy_config_unref(c);
	policy_diags_clear(&d);
}

/*
 * conf/examples/ *.json load with no diagnostic.  The source tree is
 * MOAT_SRCDIR (set by make check), else found from this file's path.
 */
static void
test_config_examples(void)
{
	char			 dir[2048], path[2048 + 300], line[CFG_LINE_MAX];
	const char		*src = getenv("MOAT_SRCDIR"), *end;
	struct policy_diags	 d;
	struct moat_config	*c;
	struct dirent		*de;
	DIR			*dp;
	FILE			*f;
	char			*buf;
	long			 len;
	size_t			 n = 0, i;

	if (src != NULL)
		snprintf(dir, sizeof(dir), "%s/conf/examples", src);
	else {
		end = strstr(__FILE__, "tests/unit/test_config.c");
		snprintf(dir, sizeof(dir), "%.*sconf/examples",
		    end != NULL ? (int)(end - __FILE__) : 0, __FILE__);
	}
	dp = opendir(dir);
	if (dp == NULL)
		fprintf(stderr, "\n  cannot open %s\n", dir);
	CU_ASSERT_PTR_NOT_NULL_FATAL(dp);
	while ((de = readdir(dp)) != NULL) {
		size_t	nl = strlen(de->d_name);

		if (nl < 6 || strcmp(de->d_name + nl - 5, ".json") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		CU_ASSERT_PTR_NOT_NULL_FATAL(f = fopen(path, "rb"));
		fseek(f, 0, SEEK_END);
		len = ftell(f);
		rewind(f);
		CU_ASSERT_PTR_NOT_NULL_FATAL(buf = malloc((size_t)len + 1));
		CU_ASSERT_EQUAL(fread(buf, 1, (size_t)len, f), (size_t)len);
		fclose(f);
		policy_diags_init(&d);
		c = policy_config_load(de->d_name, buf, (size_t)len, &d);
		for (i = 0; i < d.n; i++)
			fprintf(stderr, "\n  %s", policy_diag_format(&d, i,
			    line, sizeof(line)));
		CU_ASSERT_PTR_NOT_NULL(c);
		CU_ASSERT_EQUAL(d.n, 0);
		policy_config_unref(c);
		policy_diags_clear(&d);
		free(buf);
		n++;
	}
	closedir(dp);
	CU_ASSERT(n >= 3);
}

static void
test_config_format(void)
{
	struct policy_diags	d;
	char			buf[128];

	policy_diags_init(&d);
	d.file = strdup("f.json");
	diag_add(&d, POLICY_DIAG_ERROR, 3, 7, "bad %s", "thing");
	diag_add(&d, POLICY_DIAG_WARNING, 4, 1, "odd");
	diag_add(&d, POLICY_DIAG_ERROR, 0, 0, "no position");
	diag_add(&d, POLICY_DIAG_ERROR, 9, 0, "line only");
	CU_ASSERT_EQUAL(d.nerrors, 3);
	CU_ASSERT_EQUAL(d.nwarnings, 1);
	CU_ASSERT_STRING_EQUAL(policy_diag_format(&d, 0, buf, sizeof(buf)),
	    "f.json:3:7: bad thing");
	CU_ASSERT_STRING_EQUAL(policy_diag_format(&d, 1, buf, sizeof(buf)),
	    "f.json:4:1: warning: odd");
	CU_ASSERT_STRING_EQUAL(policy_diag_format(&d, 2, buf, sizeof(buf)),
	    "f.json: no position");
	CU_ASSERT_STRING_EQUAL(policy_diag_format(&d, 3, buf, sizeof(buf)),
	    "f.json:9: line only");
	/* Truncated, still terminated. */
	CU_ASSERT_STRING_EQUAL(policy_diag_format(&d, 0, buf, 8), "f.json:");
	CU_ASSERT_STRING_EQUAL(policy_diag_format(&d, 99, buf, sizeof(buf)),
	    "");
	policy_diags_clear(&d);
	CU_ASSERT_EQUAL(d.n, 0);
	CU_ASSERT_PTR_NULL(d.file);
	policy_diags_clear(NULL);
}

/* Diagnostics come in file order, whatever order they were found in. */
static void
test_config_refs(void)
{
	static const char	 json[] =
	    "{\n  \"user\": \"\",\n  \"secrets\": {\"A\": {}},\n  \"listen\": 5,"
	    "\n  \"policy\": {\"rules\": [{\"action\": \"allow\", \"hosts\": "
	    "[\"\"]}]}\n}";
	struct policy_diags	 d;
	char			 buf[CFG_LINE_MAX];

	policy_diags_init(&d);
	CU_ASSERT_PTR_NULL(policy_config_load("o.json", json,
	    sizeof(json) - 1, &d));
	CU_ASSERT_EQUAL_FATAL(d.n, 4);
	CU_ASSERT_STRING_EQUAL(policy_diag_format(&d, 0, buf, sizeof(buf)),
	    "o.json:2:11: user: \"\" is not a user name (1-32 of A-Z a-z 0-9 "
	    ". _ -, not starting with -)");
	CU_ASSERT_STRING_EQUAL(policy_diag_format(&d, 1, buf, sizeof(buf)),
	    "o.json:3:20: secrets.A: give exactly one of \"file\" and "
	    "\"env\"");
	CU_ASSERT_STRING_EQUAL(policy_diag_format(&d, 2, buf, sizeof(buf)),
	    "o.json:4:13: listen: expected an array, got an integer");
	CU_ASSERT_STRING_EQUAL(policy_diag_format(&d, 3, buf, sizeof(buf)),
	    "o.json:5:54: policy.rules[0].hosts[0]: \"\" is not a valid host: "
	    "empty host");
	policy_diags_clear(&d);
}

/* Part i of t is the literal text (secret POLICY_TPL_LITERAL) or secret. */
static void
cfg_part(const struct policy_template *t, size_t i, const char *text,
    size_t secret)
{
	const struct policy_tpl_part	*p;

	CU_ASSERT_FATAL(i < t->nparts);
	p = &t->parts[i];
	CU_ASSERT_EQUAL(p->secret, secret);
	if (text == NULL) {
		CU_ASSERT_PTR_NULL(p->text);
		CU_ASSERT_EQUAL(p->len, 0);
		return;
	}
	CU_ASSERT_PTR_NOT_NULL_FATAL(p->text);
	CU_ASSERT_EQUAL(p->len, strlen(text));
	CU_ASSERT(memcmp(p->text, text, p->len) == 0);
	CU_ASSERT_EQUAL(p->text[p->len], '\0');
}

/* inject, plain_http and git as compiled: parts, indexes, flags. */
static void
test_config_inject(void)
{
	static const char	 json[] =
	    "{\n  " LISTEN ", " TLS ",\n"
	    "  \"secrets\": {\"A\": {\"env\": \"X1\"}, \"B\": {\"file\": "
	    "\"/b\"}, \"C\": {\"env\": \"X3\", \"sandbox_env\": \"CC\"}},\n"
	    "  \"policy\": {\"rules\": [\n"
	    "    {\"name\": \"api\", \"action\": \"allow\", \"hosts\": "
	    "[\"api.example.com\"], \"ports\": [443], \"inject\": [\n"
	    "      {\"header\": \"Authorization\", \"value\": "
	    "\"Bearer ${A}\"},\n"
	    "      {\"header\": \"X-Two\", \"value\": \"${B}:$${C}$$\"},\n"
	    "      {\"placeholders\": [\"C\", \"A\"], \"encode\": "
	    "\"percent\", \"body\": true}]},\n"
	    "    {\"name\": \"gh\", \"action\": \"allow\", \"hosts\": "
	    "[\"*.github.example\"], \"git\": \"read-only\", "
	    "\"plain_http\": true,\n"
	    "     \"inject\": [{\"basic\": {\"user\": \"x-access-token\", "
	    "\"password\": \"${B}\"}}]},\n"
	    "    {\"name\": \"plain\", \"action\": \"allow\", \"hosts\": "
	    "[\"plain.example\"], \"methods\": [\"GET\"]}\n"
	    "  ]}\n}\n";
	struct policy_diags		 d;
	struct moat_config		*c;
	struct policy_decision		 dec;
	struct policy_target		 t;
	const struct policy_rule	*api, *gh, *plain;
	const struct policy_inject	*in;
	const size_t			*idx;
	char				 buf[256];
	size_t				 n;

	policy_diags_init(&d);
	c = policy_config_load("i.json", json, sizeof(json) - 1, &d);
	for (n = 0; n < d.n; n++)
		fprintf(stderr, "\n  %s", policy_diag_format(&d, n, buf,
		    sizeof(buf)));
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_EQUAL(d.n, 0);
	CU_ASSERT_EQUAL_FATAL(c->nsecrets, 3);

	memset(&t, 0, sizeof(t));
	t.name = "api.example.com";
	t.port = 443;
	CU_ASSERT_EQUAL_FATAL(policy_decide(c->policy, &t, &dec),
	    POLICY_ALLOW);
	api = dec.rule;
	CU_ASSERT_EQUAL(dec.flags, POLICY_F_INSPECT);
	t.name = "x.github.example";
	CU_ASSERT_EQUAL_FATAL(policy_decide(c->policy, &t, &dec),
	    POLICY_ALLOW);
	gh = dec.rule;
	CU_ASSERT_EQUAL(dec.flags, POLICY_F_INSPECT | POLICY_F_WILDCARD);
	t.name = "plain.example";
	CU_ASSERT_EQUAL_FATAL(policy_decide(c->policy, &t, &dec),
	    POLICY_ALLOW);
	plain = dec.rule;
	CU_ASSERT_PTR_NOT_NULL_FATAL(api);
	CU_ASSERT_PTR_NOT_NULL_FATAL(gh);
	CU_ASSERT_PTR_NOT_NULL_FATAL(plain);

	/* api: a header, a header with "$$", placeholders. */
	in = policy_rule_injects(api, &n);
	CU_ASSERT_EQUAL_FATAL(n, 3);
	CU_ASSERT_PTR_NOT_NULL_FATAL(in);
	CU_ASSERT_EQUAL(in[0].kind, POLICY_INJECT_HEADER);
	CU_ASSERT_STRING_EQUAL(in[0].header, "Authorization");
	CU_ASSERT_EQUAL(in[0].line, 6);
	CU_ASSERT_EQUAL(in[0].column, 7);
	CU_ASSERT_EQUAL_FATAL(in[0].value.nparts, 2);
	cfg_part(&in[0].value, 0, "Bearer ", POLICY_TPL_LITERAL);
	cfg_part(&in[0].value, 1, NULL, 0);
	CU_ASSERT_EQUAL(in[0].user.nparts, 0);
	CU_ASSERT_EQUAL(in[0].nsecrets, 0);
	CU_ASSERT_EQUAL(in[1].kind, POLICY_INJECT_HEADER);
	CU_ASSERT_STRING_EQUAL(in[1].header, "X-Two");
	/* "$${C}" is a "$" and the text "{C}", not a reference. */
	CU_ASSERT_EQUAL_FATAL(in[1].value.nparts, 2);
	cfg_part(&in[1].value, 0, NULL, 1);
	cfg_part(&in[1].value, 1, ":${C}$", POLICY_TPL_LITERAL);
	CU_ASSERT_STRING_EQUAL(policy_template_format(c, &in[1].value, buf,
	    sizeof(buf)), "${B}:$${C}$$");
	CU_ASSERT_STRING_EQUAL(policy_template_format(c, &in[1].value, buf,
	    6), "${B}:");	/* truncated, terminated */
	CU_ASSERT_EQUAL(in[2].kind, POLICY_INJECT_PLACEHOLDERS);
	CU_ASSERT_PTR_NULL(in[2].header);
	CU_ASSERT_EQUAL_FATAL(in[2].nsecrets, 2);
	CU_ASSERT_EQUAL(in[2].secrets[0], 2);
	CU_ASSERT_EQUAL(in[2].secrets[1], 0);
	CU_ASSERT_EQUAL(in[2].line, 8);
	CU_ASSERT_EQUAL(in[2].encode, POLICY_ENCODE_PERCENT);
	CU_ASSERT_TRUE(in[2].body);
	/* By default: as it is, and no body. */
	CU_ASSERT_EQUAL(in[0].encode, POLICY_ENCODE_NONE);
	CU_ASSERT_FALSE(in[0].body);
	/* Every secret once, in order of first use. */
	CU_ASSERT_EQUAL_FATAL(policy_rule_secrets(api, &idx), 3);
	CU_ASSERT_EQUAL(idx[0], 0);
	CU_ASSERT_EQUAL(idx[1], 1);
	CU_ASSERT_EQUAL(idx[2], 2);
	CU_ASSERT_FALSE(policy_rule_plain_http(api));
	CU_ASSERT_EQUAL(policy_rule_git(api), POLICY_GIT_NONE);
	CU_ASSERT_EQUAL(policy_plain_http_check(api), POLICY_R_NEEDS_TLS);
	CU_ASSERT_STRING_EQUAL(policy_explain_inject(c, &in[0], buf,
	    sizeof(buf)), "header Authorization: Bearer ${A}");
	CU_ASSERT_STRING_EQUAL(policy_explain_inject(c, &in[2], buf,
	    sizeof(buf)), "placeholders of C, A swapped for their values in "
	    "header values and the target (percent-encoded) and the body");

	/* gh: basic, git, plain_http. */
	in = policy_rule_injects(gh, &n);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_EQUAL(in[0].kind, POLICY_INJECT_BASIC);
	CU_ASSERT_STRING_EQUAL(in[0].header, "Authorization");
	CU_ASSERT_EQUAL_FATAL(in[0].user.nparts, 1);
	cfg_part(&in[0].user, 0, "x-access-token", POLICY_TPL_LITERAL);
	CU_ASSERT_EQUAL_FATAL(in[0].password.nparts, 1);
	cfg_part(&in[0].password, 0, NULL, 1);
	CU_ASSERT_EQUAL(in[0].value.nparts, 0);
	CU_ASSERT_EQUAL_FATAL(policy_rule_secrets(gh, &idx), 1);
	CU_ASSERT_EQUAL(idx[0], 1);
	CU_ASSERT_TRUE(policy_rule_plain_http(gh));
	CU_ASSERT_EQUAL(policy_rule_git(gh), POLICY_GIT_READ_ONLY);
	CU_ASSERT_EQUAL(policy_plain_http_check(gh), POLICY_R_ALLOWED);
	CU_ASSERT_STRING_EQUAL(policy_explain_inject(c, &in[0], buf,
	    sizeof(buf)), "header Authorization: Basic, user "
	    "\"x-access-token\", password \"${B}\"");

	/* plain: nothing. */
	CU_ASSERT_PTR_NULL(policy_rule_injects(plain, &n));
	CU_ASSERT_EQUAL(n, 0);
	CU_ASSERT_EQUAL(policy_rule_secrets(plain, &idx), 0);
	CU_ASSERT_PTR_NULL(idx);
	CU_ASSERT_EQUAL(policy_plain_http_check(plain), POLICY_R_ALLOWED);
	CU_ASSERT_EQUAL(policy_plain_http_check(NULL), POLICY_R_ALLOWED);
	policy_config_unref(c);
	policy_diags_clear(&d);
}

void
test_config_register(void)
{
	CU_pSuite	s;

	if ((s = CU_add_suite("config", NULL, NULL)) == NULL)
		return;
	CU_add_test(s, "error vectors: line:column and message",
	    test_config_vectors);
	CU_add_test(s, "a full config: values", test_config_good);
	CU_add_test(s, "a minimal config: defaults", test_config_defaults);
	CU_add_test(s, "audit_only and audit.request_id_headers",
	    test_config_audit_only);
	CU_add_test(s, "connection limits per sandbox and listener",
	    test_config_sandbox_connections);
	CU_add_test(s, "the embedded default config", test_config_default_embedded);
	CU_add_test(s, "conf/examples load clean", test_config_examples);
	CU_add_test(s, "diagnostic format", test_config_format);
	CU_add_test(s, "diagnostics in file order", test_config_refs);
	CU_add_test(s, "inject, plain_http, git compiled", test_config_inject);
	CU_add_test(s, "keys the caller does not use: warnings",
	    test_config_unused);
}
