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

#define CFG_MAXDIAG	12	/* diagnostics one vector may expect */
#define CFG_LINE_MAX	1024	/* longest formatted diagnostic */

/* Pieces shared by the vectors. */
#define LISTEN	"\"listen\": [{\"proto\": \"http\", \"address\": " \
		"\"127.0.0.1:3128\"}]"
#define POLICY	"\"policy\": {\"rules\": [{\"action\": \"allow\", " \
		"\"hosts\": [\"example.com\"]}]}"

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
	      "\"address\": \"127.0.0.1:3128\"}" } } },
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
	  "  ]}\n}", 12, 0, {
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
	    { 6, 5, "{", "policy.rules[2]: a rule needs \"hosts\" or "
	      "\"cidrs\" to say what it applies to" },
	    { 6, 25, "\"inject\"", "unknown key \"inject\" in "
	      "policy.rules[2]" },
	    { 7, 77, "\"G T\"", "policy.rules[3].methods[1]: \"G T\" is not "
	      "an HTTP method token" },
	    { 7, 95, "\"x\"", "policy.rules[3].paths[0]: \"x\": path does "
	      "not start with \"/\"" },
	    { 7, 100, "\"/a/%2e%2e/\"", "policy.rules[3].paths[1]: "
	      "\"/a/%2e%2e/\": dot segment spelt with escapes (\"%2e\") in "
	      "path" },
	    { 8, 5, "{", "policy.rules[4]: missing \"action\" (\"allow\" or "
	      "\"deny\")" } } },
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
	{ "secrets",
	  "{\n  \"secrets\": {\n"
	  "    \"1bad\": {\"env\": \"X\"},\n"
	  "    \"BOTH\": {\"file\": \"/a\", \"env\": \"B\"},\n"
	  "    \"K2\": {\"env\": \"9x\", \"sandbox_env\": \"K3\"},\n"
	  "    \"K3\": {\"file\": \"\"},\n"
	  "    \"K4\": {\"env\": \"Y\"}\n"
	  "  },\n  " LISTEN ", " POLICY "\n}", 4, 0, {
	    { 3, 5, "\"1bad\"", "secrets: \"1bad\" is not a valid secret name "
	      "([A-Za-z_][A-Za-z0-9_]{0,63})" },
	    { 4, 13, "{", "secrets.BOTH: give exactly one of \"file\" and "
	      "\"env\"" },
	    { 5, 19, "\"9x\"", "secrets.K2.env: \"9x\" is not an environment "
	      "variable name ([A-Za-z_][A-Za-z0-9_]*)" },
	    { 6, 20, "\"\"", "secrets.K3.file: empty file path" },
	    } },
	{ "two secrets, one sandbox variable",
	  "{\n  " LISTEN ", " POLICY ",\n  \"secrets\": {\n"
	  "    \"A\": {\"env\": \"X\", \"sandbox_env\": \"TOKEN\"},\n"
	  "    \"TOKEN\": {\"env\": \"Y\"}\n  }\n}", 1, 0, {
	    { 5, 5, "\"TOKEN\"", "secrets: A and TOKEN both use the sandbox "
	      "variable TOKEN: set \"sandbox_env\" on one" } } },
	{ "resolver, tls, admin, limits, timeouts, workers, user",
	  "{\n  " LISTEN ", " POLICY ",\n"
	  "  \"resolver\": {\"servers\": [\"1.1.1.1\", \"dns.google:53\"], "
	  "\"tries\": 11},\n"
	  "  \"tls\": {\"ca_cert\": \"/x\", \"leaf_cache_entries\": 0},\n"
	  "  \"admin\": {\"address\": \"127.0.0.1:9\"},\n"
	  "  \"limits\": {\"header_count\": 5000, \"headr_bytes\": 2048},\n"
	  "  \"timeouts\": {\"drain_ms\": 86400001},\n"
	  "  \"workers\": \"many\",\n"
	  "  \"user\": \"-x\"\n}", 10, 0, {
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
	    { 7, 28, "86400001", "timeouts.drain_ms: 86400001 is out of range "
	      "(1-86400000)" },
	    { 8, 14, "\"many\"", "workers: expected an integer (1-256) or "
	      "\"auto\"" },
	    { 9, 11, "\"-x\"", "user: \"-x\" is not a user name (1-32 of A-Z "
	      "a-z 0-9 . _ -, not starting with -)" } } },
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
	  "  ]}\n}", 0, 4, {
	    { 4, 5, "{", "warning: policy.rules[0]: rule api checks methods "
	      "or paths, which inside a tunnel needs TLS interception: set "
	      "tls.ca_cert and tls.ca_key, or tunnels it allows are "
	      "refused" },
	    { 5, 5, "{", "warning: policy.rules[1]: rule noput checks methods "
	      "or paths, which inside a tunnel needs TLS interception: set "
	      "tls.ca_cert and tls.ca_key, or tunnels to the hosts it matches "
	      "are refused" },
	    { 6, 5, "{", "warning: policy.rules[2]: rule look asks for TLS "
	      "interception: set tls.ca_cert and tls.ca_key, or the tunnels "
	      "it allows are refused" },
	    { 7, 96, "false", "warning: policy.rules[3].intercept: rule plain "
	      "checks methods or paths but never intercepts TLS: its HTTPS "
	      "requests cannot be checked" } } },
};

static void	test_config_vectors(void);
static void	test_config_good(void);
static void	test_config_defaults(void);
static void	test_config_default_embedded(void);
static void	test_config_examples(void);
static void	test_config_format(void);
static void	test_config_refs(void);
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
	    "     \"sandbox\": \"sb-1\", \"auth\": {\"agent\": {\"env\": "
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
	    "    {\"action\": \"deny\", \"cidrs\": [\"203.0.113.9\"]}\n"
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
	    "  \"timeouts\": {\"dns_ms\": 2000, \"drain_ms\": 1},\n"
	    "  \"limits\": {\"header_count\": 50, \"body_inspect_bytes\": 0},\n"
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
	CU_ASSERT_EQUAL_FATAL(l->nauth, 2);
	CU_ASSERT_STRING_EQUAL(l->auth[0].name, "agent");
	CU_ASSERT_STRING_EQUAL(l->auth[0].env, "MOAT_TOKEN");
	CU_ASSERT_PTR_NULL(l->auth[0].file);
	CU_ASSERT_STRING_EQUAL(l->auth[1].name, "ci.bot");
	CU_ASSERT_STRING_EQUAL(l->auth[1].file, "/run/token");
	l = &c->listen[1];
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

	CU_ASSERT_EQUAL_FATAL(policy_rule_count(c->policy), 2);
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
	CU_ASSERT_EQUAL(c->admin_mode, 0640);
	CU_ASSERT_EQUAL(c->timeouts.dns_ms, 2000);
	CU_ASSERT_EQUAL(c->timeouts.drain_ms, 1);
	CU_ASSERT_EQUAL(c->timeouts.connect_ms, 10000);	/* default kept */
	CU_ASSERT_EQUAL(c->limits.header_count, 50);
	CU_ASSERT_EQUAL(c->limits.body_inspect_bytes, 0);
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
	CU_ASSERT_PTR_NULL(c->resolver_servers);
	CU_ASSERT_EQUAL(c->resolver_tries, 2);
	CU_ASSERT_PTR_NULL(c->tls.ca_cert);
	CU_ASSERT_PTR_NULL(c->tls.ca_key);
	CU_ASSERT_PTR_NULL(c->tls.upstream_ca_files);
	CU_ASSERT_PTR_NULL(c->tls.extra_ca_files);
	CU_ASSERT_EQUAL(c->tls.leaf_cache_entries, 1024);
	CU_ASSERT_PTR_NULL(c->admin_address);
	CU_ASSERT_EQUAL(c->admin_mode, 0600);
	CU_ASSERT_EQUAL(c->timeouts.request_head_ms, 10000);
	CU_ASSERT_EQUAL(c->timeouts.idle_client_ms, 60000);
	CU_ASSERT_EQUAL(c->timeouts.dns_ms, 5000);
	CU_ASSERT_EQUAL(c->timeouts.connect_ms, 10000);
	CU_ASSERT_EQUAL(c->timeouts.response_head_ms, 300000);
	CU_ASSERT_EQUAL(c->timeouts.idle_tunnel_ms, 3600000);
	CU_ASSERT_EQUAL(c->timeouts.idle_upstream_ms, 30000);
	CU_ASSERT_EQUAL(c->timeouts.tls_handshake_ms, 10000);
	CU_ASSERT_EQUAL(c->timeouts.drain_ms, 10000);
	CU_ASSERT_EQUAL(c->limits.request_line_bytes, 8192);
	CU_ASSERT_EQUAL(c->limits.header_bytes, 65536);
	CU_ASSERT_EQUAL(c->limits.header_count, 100);
	CU_ASSERT_EQUAL(c->limits.connections, 10000);
	CU_ASSERT_EQUAL(c->limits.body_inspect_bytes, 1048576);
	CU_ASSERT_EQUAL(c->limits.dns_cache_entries, 4096);
	CU_ASSERT_EQUAL(c->workers, 0);
	CU_ASSERT_PTR_NULL(c->user);
	policy_config_unref(c);
	policy_diags_clear(&d);
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
	CU_add_test(s, "the embedded default config", test_config_default_embedded);
	CU_add_test(s, "conf/examples load clean", test_config_examples);
	CU_add_test(s, "diagnostic format", test_config_format);
	CU_add_test(s, "diagnostics in file order", test_config_refs);
}
