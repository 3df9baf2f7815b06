/*
 * test_policy.c - decisions: built-in deny sets at their boundaries,
 * allow_private carve-outs, rule precedence, reasons, path normalisation,
 * the addr == NULL (not yet resolved) semantics, IPv6 forms that embed an
 * IPv4 address, and a policy of 1,000,000 rules.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "policy/policy.h"
#include "policy/policy_int.h"
#include "tests/unit/unit.h"

#define POL_LINE_MAX	1024	/* longest diagnostic printed */
#define POL_BIG_RULES	1000000	/* rules in the scale test */

/* A listener, and a CA: rules with methods or paths need one. */
#define LISTEN	"\"listen\": [{\"proto\": \"http\", \"address\": " \
		"\"127.0.0.1:3128\"}], \"tls\": {\"ca_cert\": " \
		"\"/etc/moat/ca/ca.crt\", \"ca_key\": \"/etc/moat/ca/ca.key\"}"

/* A policy that allows every name and every address on every port. */
#define ALLOW_ALL(ap)	"{" LISTEN ", \"policy\": {\"allow_private\": [" ap \
	"], \"rules\": [{\"name\": \"all\", \"action\": \"allow\", " \
	"\"hosts\": [\"*\"], \"cidrs\": [\"0.0.0.0/0\", \"::/0\"], " \
	"\"ports\": [\"*\"]}]}}"

static struct moat_config	*pol_load(const char *json);
static void	pol_expect(const struct moat_config *c, const char *name,
		    const char *addr, uint16_t port, const char *method,
		    const char *path, enum policy_verdict v,
		    enum policy_reason r, const char *rule);
static void	test_policy_deny_bounds(void);
static void	test_policy_deny_names(void);
static void	test_policy_allow_private(void);
static void	test_policy_embedded(void);
static void	test_policy_precedence(void);
static void	test_policy_reasons(void);
static void	test_policy_paths(void);
static void	test_policy_pending(void);
static void	test_policy_wide(void);
static void	test_policy_deny_dodges(void);
static void	test_policy_strict_methods(void);
static void	pol_expect_req(const struct moat_config *c, const char *method,
		    const char *path, unsigned req, enum policy_verdict v,
		    enum policy_reason r, const char *rule);
static void	test_policy_reason_strings(void);
static void	test_policy_explain(void);
static void	test_policy_bound(void);
static void	test_policy_git(void);
static void	test_policy_explain_decide(void);
static void	test_policy_million(void);
static void	test_policy_wildcard_flag(void);
static void	test_policy_waive(void);
static bool	pol_bound(const struct moat_config *c, const char *secret,
		    const char *name, const char *addr, uint16_t port);
static const struct policy_rule	*pol_rule(const struct moat_config *c,
				    const char *name);

/* Loads json, which must produce no error (warnings are printed). */
static struct moat_config *
pol_load(const char *json)
{
	struct policy_diags	 d;
	struct moat_config	*c;
	char			 line[POL_LINE_MAX];
	size_t			 i;

	policy_diags_init(&d);
	c = policy_config_load("p.json", json, strlen(json), &d);
	for (i = 0; i < d.n && d.nerrors > 0; i++)
		fprintf(stderr, "\n  %s", policy_diag_format(&d, i, line,
		    sizeof(line)));
	CU_ASSERT_EQUAL(d.nerrors, 0);
	policy_diags_clear(&d);
	return c;
}

/*
 * Decides on a target: name as a client spells it (normalised here; an IP
 * literal becomes the address), addr the resolved address or NULL.
 */
enum policy_verdict
unit_policy_decide(const struct moat_config *c, const char *name, const char *addr,
    uint16_t port, const char *method, const char *path,
    struct policy_decision *d)
{
	struct policy_host	hn, ha;
	struct policy_target	t;
	const char		*err;

	memset(&t, 0, sizeof(t));
	if (name != NULL) {
		CU_ASSERT_EQUAL_FATAL(policy_host_normalise(name, strlen(name),
		    &hn, &err), 0);
		if (hn.kind == POLICY_HOST_NAME)
			t.name = hn.name;
		else
			t.addr = &hn.addr;
	}
	if (addr != NULL) {
		CU_ASSERT_EQUAL_FATAL(policy_host_normalise(addr, strlen(addr),
		    &ha, &err), 0);
		CU_ASSERT_EQUAL_FATAL(ha.kind, POLICY_HOST_ADDR);
		t.addr = &ha.addr;
	}
	t.port = port;
	t.method = method;
	t.path = path;
	return policy_decide(c->policy, &t, d);
}

static void
pol_expect(const struct moat_config *c, const char *name, const char *addr,
    uint16_t port, const char *method, const char *path,
    enum policy_verdict v, enum policy_reason r, const char *rule)
{
	struct policy_decision	d;

	unit_policy_decide(c, name, addr, port, method, path, &d);
	if (d.verdict != v || d.reason != r || (rule == NULL) !=
	    (d.rule_name == NULL) || (rule != NULL &&
	    strcmp(rule, d.rule_name) != 0))
		fprintf(stderr, "\n  %s %s :%u %s %s: got %s %s %s, want %s %s "
		    "%s\n", name ? name : "-", addr ? addr : "-", port,
		    method ? method : "-", path ? path : "-",
		    d.verdict == POLICY_ALLOW ? "allow" : "deny",
		    policy_reason_str(d.reason), d.rule_name ? d.rule_name :
		    "-", v == POLICY_ALLOW ? "allow" : "deny",
		    policy_reason_str(r), rule ? rule : "-");
	CU_ASSERT_EQUAL(d.verdict, v);
	CU_ASSERT_EQUAL(d.reason, r);
	if (rule == NULL) {
		CU_ASSERT_PTR_NULL(d.rule_name);
	} else if (d.rule_name != NULL) {
		CU_ASSERT_STRING_EQUAL(d.rule_name, rule);
	} else {
		CU_FAIL("no rule named");
	}
}

/* ------------------------------------------------------------------ */

#define OK	POLICY_R_ALLOWED
#define PRIV	POLICY_R_PRIVATE_ADDRESS
#define META	POLICY_R_METADATA

struct bound_vec {
	const char		*addr;
	enum policy_reason	 r;	/* OK: passes the deny sets */
};

/* First and last address of each range, and the neighbours outside. */
static const struct bound_vec	bound_vectors[] = {
	{ "0.0.0.0", PRIV }, { "0.255.255.255", PRIV }, { "1.0.0.0", OK },
	{ "9.255.255.255", OK }, { "10.0.0.0", PRIV },
	{ "10.255.255.255", PRIV }, { "11.0.0.0", OK },
	{ "100.63.255.255", OK }, { "100.64.0.0", PRIV },
	{ "100.127.255.255", PRIV }, { "100.128.0.0", OK },
	{ "126.255.255.255", OK }, { "127.0.0.0", PRIV },
	{ "127.255.255.255", PRIV }, { "128.0.0.0", OK },
	{ "169.253.255.255", OK }, { "169.254.0.0", PRIV },
	{ "169.254.255.255", PRIV }, { "169.255.0.0", OK },
	{ "172.15.255.255", OK }, { "172.16.0.0", PRIV },
	{ "172.31.255.255", PRIV }, { "172.32.0.0", OK },
	{ "191.255.255.255", OK }, { "192.0.0.0", PRIV },
	{ "192.0.0.255", PRIV }, { "192.0.1.0", OK },
	{ "192.0.1.255", OK }, { "192.0.2.0", PRIV }, { "192.0.2.255", PRIV },
	{ "192.0.3.0", OK },
	{ "192.88.98.255", OK }, { "192.88.99.0", PRIV },
	{ "192.88.99.255", PRIV }, { "192.88.100.0", OK },
	{ "192.167.255.255", OK }, { "192.168.0.0", PRIV },
	{ "192.168.255.255", PRIV }, { "192.169.0.0", OK },
	{ "198.17.255.255", OK }, { "198.18.0.0", PRIV },
	{ "198.19.255.255", PRIV }, { "198.20.0.0", OK },
	{ "198.51.99.255", OK }, { "198.51.100.0", PRIV },
	{ "198.51.100.255", PRIV }, { "198.51.101.0", OK },
	{ "203.0.112.255", OK }, { "203.0.113.0", PRIV },
	{ "203.0.113.255", PRIV }, { "203.0.114.0", OK },
	{ "223.255.255.255", OK }, { "224.0.0.0", PRIV },
	{ "239.255.255.255", PRIV }, { "240.0.0.0", PRIV },
	{ "255.255.255.255", PRIV },
	/* metadata addresses, and their neighbours (private or public) */
	{ "169.254.169.254", META }, { "169.254.169.253", META },
	{ "169.254.169.255", PRIV }, { "169.254.170.2", META },
	{ "169.254.170.3", PRIV }, { "100.100.100.200", META },
	{ "100.100.100.201", PRIV }, { "168.63.129.16", META },
	{ "168.63.129.15", OK }, { "168.63.129.17", OK },
	{ "192.0.0.192", META }, { "192.0.0.193", PRIV },
	{ "fd00:ec2::254", META }, { "fd00:ec2::253", META },
	{ "fd00:ec2::255", PRIV },
	/* IPv6 */
	{ "::", PRIV }, { "::1", PRIV }, { "::2", PRIV },	/* ::/96 */
	{ "::1:0:0", OK },			/* past ::/96, before mapped */
	{ "::fffe:ffff:ffff", OK },
	{ "::1:0:0:0", OK },			/* past ::ffff:0:0/96 */
	{ "64:ff9a:ffff:ffff:ffff:ffff:ffff:ffff", OK },
	{ "64:ff9b::", PRIV }, { "64:ff9b::ffff:ffff", PRIV },
	{ "64:ff9b::1:0:0", OK },		/* past the /96 */
	{ "64:ff9b:1::", PRIV }, { "64:ff9b:1:ffff:ffff:ffff:ffff:ffff", PRIV },
	{ "64:ff9b:2::", OK },
	{ "100::", PRIV }, { "100::ffff:ffff:ffff:ffff", PRIV },
	{ "100:0:0:1::", OK },
	{ "2001::", PRIV }, { "2001:0:ffff:ffff:ffff:ffff:ffff:ffff", PRIV },
	{ "2001:1::", OK },
	{ "2001:2::", PRIV }, { "2001:2:0:ffff:ffff:ffff:ffff:ffff", PRIV },
	{ "2001:2:1::", OK },
	{ "2001:10::", PRIV }, { "2001:1f:ffff:ffff:ffff:ffff:ffff:ffff", PRIV },
	{ "2001:20::", PRIV }, { "2001:2f:ffff:ffff:ffff:ffff:ffff:ffff", PRIV },
	{ "2001:30::", OK }, { "2001:f::", OK },
	{ "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", OK },
	{ "2001:db8::", PRIV }, { "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", PRIV },
	{ "2001:db9::", OK },
	{ "2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff", OK },
	{ "2002::", PRIV }, { "2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", PRIV },
	{ "2003::", OK },
	{ "3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", OK },
	{ "3fff::", PRIV }, { "3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", PRIV },
	{ "3fff:1000::", OK },
	{ "fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", OK },
	{ "fc00::", PRIV }, { "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", PRIV },
	{ "fe00::", OK }, { "fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", OK },
	{ "fe80::", PRIV }, { "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", PRIV },
	{ "fec0::", PRIV }, { "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", PRIV },
	{ "ff00::", PRIV }, { "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", PRIV },
	{ "2606:4700::1111", OK },
};

static void
test_policy_deny_bounds(void)
{
	struct moat_config	*c = pol_load(ALLOW_ALL(""));
	const struct bound_vec	*v;
	size_t			 i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	for (i = 0; i < sizeof(bound_vectors) / sizeof(*v); i++) {
		v = &bound_vectors[i];
		/* as an IP literal target, and as a resolved name */
		pol_expect(c, v->addr, NULL, 443, NULL, NULL, v->r == OK ?
		    POLICY_ALLOW : POLICY_DENY, v->r, v->r == OK ? "all" :
		    NULL);
		pol_expect(c, "example.com", v->addr, 443, NULL, NULL,
		    v->r == OK ? POLICY_ALLOW : POLICY_DENY, v->r,
		    v->r == OK ? "all" : NULL);
	}
	policy_config_unref(c);
}

/* Names: metadata names and localhost, whatever rule says "*". */
static void
test_policy_deny_names(void)
{
	struct moat_config	*c = pol_load(ALLOW_ALL(""));
	static const char *const meta[] = {
		"metadata.google.internal", "METADATA.Google.Internal.",
		"x.metadata.google.internal", "metadata.goog", "metadata",
		"instance-data", "instance-data.ec2.internal",
		"metadata.tencentyun.com", "metadata.platformequinix.com",
	};
	size_t	i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	for (i = 0; i < sizeof(meta) / sizeof(meta[0]); i++)
		pol_expect(c, meta[i], NULL, 80, NULL, NULL, POLICY_DENY, META,
		    NULL);
	pol_expect(c, "localhost", NULL, 80, NULL, NULL, POLICY_DENY, PRIV,
	    NULL);
	pol_expect(c, "a.b.localhost", NULL, 80, NULL, NULL, POLICY_DENY,
	    PRIV, NULL);
	/* Near misses are ordinary names. */
	pol_expect(c, "notlocalhost", NULL, 80, NULL, NULL, POLICY_ALLOW, OK,
	    "all");
	pol_expect(c, "metadata.google.internal.evil.com", NULL, 80, NULL,
	    NULL, POLICY_ALLOW, OK, "all");
	pol_expect(c, "mymetadata.goog", NULL, 80, NULL, NULL, POLICY_ALLOW,
	    OK, "all");
	/* A good name that resolves to a denied address is denied. */
	pol_expect(c, "example.com", "127.0.0.1", 80, NULL, NULL, POLICY_DENY,
	    PRIV, NULL);
	policy_config_unref(c);
}

/* allow_private lifts ranges; a metadata address only when named exactly. */
static void
test_policy_allow_private(void)
{
	struct moat_config	*c;
	const char		*err = NULL;

	c = pol_load(ALLOW_ALL("\"169.254.0.0/16\""));
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	pol_expect(c, "169.254.1.1", NULL, 80, NULL, NULL, POLICY_ALLOW, OK,
	    "all");
	pol_expect(c, "169.254.169.254", NULL, 80, NULL, NULL, POLICY_DENY,
	    META, NULL);
	pol_expect(c, "169.254.170.2", NULL, 80, NULL, NULL, POLICY_DENY,
	    META, NULL);
	pol_expect(c, "10.0.0.1", NULL, 80, NULL, NULL, POLICY_DENY, PRIV,
	    NULL);
	policy_config_unref(c);

	c = pol_load(ALLOW_ALL("\"169.254.169.254\""));
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	pol_expect(c, "169.254.169.254", NULL, 80, NULL, NULL, POLICY_ALLOW,
	    OK, "all");
	pol_expect(c, "169.254.169.253", NULL, 80, NULL, NULL, POLICY_DENY,
	    META, NULL);
	pol_expect(c, "169.254.1.1", NULL, 80, NULL, NULL, POLICY_DENY, PRIV,
	    NULL);
	/* Never a name, though. */
	pol_expect(c, "metadata.google.internal", "169.254.169.254", 80, NULL,
	    NULL, POLICY_DENY, META, NULL);
	policy_config_unref(c);

	c = pol_load(ALLOW_ALL("\"169.254.169.254/32\", \"fd00::/8\""));
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	pol_expect(c, "169.254.169.254", NULL, 80, NULL, NULL, POLICY_ALLOW,
	    OK, "all");
	pol_expect(c, "fd00::1", NULL, 80, NULL, NULL, POLICY_ALLOW, OK,
	    "all");
	pol_expect(c, "fd00:ec2::254", NULL, 80, NULL, NULL, POLICY_DENY,
	    META, NULL);
	pol_expect(c, "fc00::1", NULL, 80, NULL, NULL, POLICY_DENY, PRIV,
	    NULL);
	policy_config_unref(c);

	c = pol_load(ALLOW_ALL("\"fd00:ec2::254/128\", \"0.0.0.0/0\""));
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	pol_expect(c, "fd00:ec2::254", NULL, 80, NULL, NULL, POLICY_ALLOW, OK,
	    "all");
	pol_expect(c, "fd00:ec2::253", NULL, 80, NULL, NULL, POLICY_DENY,
	    META, NULL);
	/* 0.0.0.0/0 names no special range: it opens none of them. */
	pol_expect(c, "127.0.0.1", NULL, 80, NULL, NULL, POLICY_DENY, PRIV,
	    NULL);
	pol_expect(c, "10.1.2.3", NULL, 80, NULL, NULL, POLICY_DENY, PRIV,
	    NULL);
	pol_expect(c, "8.8.4.4", NULL, 80, NULL, NULL, POLICY_ALLOW, OK,
	    "all");
	pol_expect(c, "168.63.129.16", NULL, 80, NULL, NULL, POLICY_DENY,
	    META, NULL);
	pol_expect(c, "100.100.100.200", NULL, 80, NULL, NULL, POLICY_DENY,
	    META, NULL);
	policy_config_unref(c);

	/* ::1 is loopback, not an IPv4-compatible address: naming it opens
	 * it, and ::/96 does not (it is wider than ::1/128). */
	c = pol_load(ALLOW_ALL("\"::1/128\""));
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	pol_expect(c, "::1", NULL, 80, NULL, NULL, POLICY_ALLOW, OK, "all");
	pol_expect(c, "::2", NULL, 80, NULL, NULL, POLICY_DENY, PRIV, NULL);
	policy_config_unref(c);
	c = pol_load(ALLOW_ALL("\"::/96\""));
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	pol_expect(c, "::1", NULL, 80, NULL, NULL, POLICY_DENY, PRIV, NULL);
	policy_config_unref(c);

	/* Added at run time (moat run --allow-private). */
	c = pol_load(ALLOW_ALL(""));
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	pol_expect(c, "10.9.9.9", NULL, 80, NULL, NULL, POLICY_DENY, PRIV,
	    NULL);
	CU_ASSERT_EQUAL(policy_config_allow_private(c, "10.0.0.0/8", &err), 0);
	pol_expect(c, "10.9.9.9", NULL, 80, NULL, NULL, POLICY_ALLOW, OK,
	    "all");
	CU_ASSERT_EQUAL(policy_config_allow_private(c, "10.0.0.1/8", &err),
	    -1);
	CU_ASSERT_STRING_EQUAL(err, "host bits set past the prefix length");
	CU_ASSERT_EQUAL(policy_config_allow_private(c, "ten", &err), -1);
	CU_ASSERT_EQUAL(policy_config_allow_private(NULL, "10.0.0.0/8", &err),
	    -1);
	policy_config_unref(c);
}

/* IPv6 addresses that carry an IPv4 address. */
static void
test_policy_embedded(void)
{
	struct moat_config	*c;
	struct policy_target	 t;
	struct policy_decision	 d;
	struct policy_addr	 a;

	c = pol_load(ALLOW_ALL(""));
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	pol_expect(c, "64:ff9b::a9fe:a9fe", NULL, 80, NULL, NULL, POLICY_DENY,
	    PRIV, NULL);
	pol_expect(c, "2002:a9fe:a9fe::1", NULL, 80, NULL, NULL, POLICY_DENY,
	    PRIV, NULL);
	pol_expect(c, "::a9fe:a9fe", NULL, 80, NULL, NULL, POLICY_DENY, PRIV,
	    NULL);
	/* Client spellings of mapped addresses become IPv4 first. */
	pol_expect(c, "[::ffff:169.254.169.254]", NULL, 80, NULL, NULL,
	    POLICY_DENY, META, NULL);
	pol_expect(c, "::ffff:a9fe:a9fe", NULL, 80, NULL, NULL, POLICY_DENY,
	    META, NULL);
	/* A raw mapped policy_addr (a caller that did not unmap). */
	memset(&a, 0, sizeof(a));
	a.family = AF_INET6;
	inet_pton(AF_INET6, "::ffff:8.8.8.8", &a.u.v6);
	memset(&t, 0, sizeof(t));
	t.addr = &a;
	t.port = 80;
	CU_ASSERT_EQUAL(policy_decide(c->policy, &t, &d), POLICY_DENY);
	CU_ASSERT_EQUAL(d.reason, PRIV);
	policy_config_unref(c);

	/* Lifting an embedding range still checks the IPv4 inside. */
	c = pol_load(ALLOW_ALL("\"64:ff9b::/96\", \"2002::/16\", "
	    "\"2001::/32\", \"::/96\""));
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	pol_expect(c, "64:ff9b::a9fe:a9fe", NULL, 80, NULL, NULL, POLICY_DENY,
	    META, NULL);
	pol_expect(c, "64:ff9b::a00:1", NULL, 80, NULL, NULL, POLICY_DENY,
	    PRIV, NULL);
	pol_expect(c, "64:ff9b::808:808", NULL, 80, NULL, NULL, POLICY_ALLOW,
	    OK, "all");
	pol_expect(c, "2002:a9fe:a9fe::1", NULL, 80, NULL, NULL, POLICY_DENY,
	    META, NULL);
	pol_expect(c, "2002:7f00:1::", NULL, 80, NULL, NULL, POLICY_DENY,
	    PRIV, NULL);
	pol_expect(c, "2002:808:808::1", NULL, 80, NULL, NULL, POLICY_ALLOW,
	    OK, "all");
	/* Teredo: client 169.254.169.254 obfuscated (xor ffff:ffff). */
	pol_expect(c, "2001:0:4136:e378:8000:63bf:5601:5601", NULL, 80, NULL,
	    NULL, POLICY_DENY, META, NULL);
	/* Teredo: server 10.0.0.1, client 8.8.8.8. */
	pol_expect(c, "2001:0:a00:1:8000:63bf:f7f7:f7f7", NULL, 80, NULL,
	    NULL, POLICY_DENY, PRIV, NULL);
	pol_expect(c, "2001:0:808:808:8000:63bf:f7f7:f7f7", NULL, 80, NULL,
	    NULL, POLICY_ALLOW, OK, "all");
	pol_expect(c, "::a9fe:a9fe", NULL, 80, NULL, NULL, POLICY_DENY, META,
	    NULL);
	pol_expect(c, "::1", NULL, 80, NULL, NULL, POLICY_DENY, PRIV, NULL);
	policy_config_unref(c);
}

/* A deny rule that applies wins, before or after the allow rule. */
static void
test_policy_precedence(void)
{
	struct moat_config	*c;

	c = pol_load("{" LISTEN ", \"policy\": {\"rules\": [\n"
	    "{\"name\": \"wild\", \"action\": \"allow\", \"hosts\": "
	    "[\"*.example.com\"]},\n"
	    "{\"name\": \"bad\", \"action\": \"deny\", \"hosts\": "
	    "[\"bad.example.com\"]},\n"
	    "{\"name\": \"smtp\", \"action\": \"deny\", \"hosts\": "
	    "[\"*.example.com\"], \"ports\": [25]},\n"
	    "{\"name\": \"dns8\", \"action\": \"deny\", \"cidrs\": "
	    "[\"8.8.8.0/24\"]},\n"
	    "{\"name\": \"also\", \"action\": \"allow\", \"hosts\": "
	    "[\"good.example.com\"]}]}}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	pol_expect(c, "bad.example.com", NULL, 443, NULL, NULL, POLICY_DENY,
	    POLICY_R_DENIED_BY_RULE, "bad");
	pol_expect(c, "ok.example.com", NULL, 443, NULL, NULL, POLICY_ALLOW,
	    OK, "wild");
	pol_expect(c, "ok.example.com", NULL, 25, NULL, NULL, POLICY_DENY,
	    POLICY_R_DENIED_BY_RULE, "smtp");
	/* First allow in file order, not the most specific. */
	pol_expect(c, "good.example.com", NULL, 443, NULL, NULL, POLICY_ALLOW,
	    OK, "wild");
	/* A cidr deny rule beats a name allow rule once resolved. */
	pol_expect(c, "ok.example.com", "8.8.8.8", 443, NULL, NULL,
	    POLICY_DENY, POLICY_R_DENIED_BY_RULE, "dns8");
	pol_expect(c, "ok.example.com", "8.8.9.8", 443, NULL, NULL,
	    POLICY_ALLOW, OK, "wild");
	policy_config_unref(c);

	/* Same rules, deny first. */
	c = pol_load("{" LISTEN ", \"policy\": {\"rules\": [\n"
	    "{\"name\": \"bad\", \"action\": \"deny\", \"hosts\": "
	    "[\"bad.example.com\"]},\n"
	    "{\"name\": \"wild\", \"action\": \"allow\", \"hosts\": "
	    "[\"*.example.com\", \"bad.example.com\"]}]}}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	pol_expect(c, "bad.example.com", NULL, 443, NULL, NULL, POLICY_DENY,
	    POLICY_R_DENIED_BY_RULE, "bad");
	pol_expect(c, "BAD.example.com.", NULL, 80, NULL, NULL, POLICY_DENY,
	    POLICY_R_DENIED_BY_RULE, "bad");
	pol_expect(c, "x.bad.example.com", NULL, 443, NULL, NULL, POLICY_ALLOW,
	    OK, "wild");
	policy_config_unref(c);
}

/* ports, methods, paths: the reason names the rule that matched the host. */
static void
test_policy_reasons(void)
{
	struct moat_config	*c;
	struct policy_decision	 d;

	c = pol_load("{" LISTEN ", \"policy\": {\"rules\": [\n"
	    "{\"name\": \"api\", \"action\": \"allow\", \"hosts\": "
	    "[\"api.example.com\"], \"ports\": [443, \"8000-8010\"], "
	    "\"methods\": [\"GET\", \"head\"], \"paths\": [\"/v1/\", "
	    "\"/repos/*/issues\", \"/health\"]},\n"
	    "{\"name\": \"web\", \"action\": \"allow\", \"hosts\": "
	    "[\"www.example.com\"]},\n"
	    "{\"name\": \"noput\", \"action\": \"deny\", \"hosts\": [\"*\"], "
	    "\"methods\": [\"PUT\"]},\n"
	    "{\"name\": \"opaque\", \"action\": \"allow\", \"hosts\": "
	    "[\"git.example.com\"], \"intercept\": false}]}}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	pol_expect(c, "api.example.com", NULL, 80, "GET", "/v1/x",
	    POLICY_DENY, POLICY_R_PORT, "api");
	pol_expect(c, "api.example.com", NULL, 8011, "GET", "/v1/x",
	    POLICY_DENY, POLICY_R_PORT, "api");
	pol_expect(c, "api.example.com", NULL, 8005, "GET", "/v1/x",
	    POLICY_ALLOW, OK, "api");
	pol_expect(c, "api.example.com", NULL, 443, "POST", "/v1/x",
	    POLICY_DENY, POLICY_R_METHOD, "api");
	pol_expect(c, "api.example.com", NULL, 443, "get", "/v1/x",
	    POLICY_DENY, POLICY_R_METHOD, "api");
	pol_expect(c, "api.example.com", NULL, 443, "HEAD", "/health",
	    POLICY_ALLOW, OK, "api");
	pol_expect(c, "api.example.com", NULL, 443, "GET", "/v2/x",
	    POLICY_DENY, POLICY_R_PATH, "api");
	pol_expect(c, "api.example.com", NULL, 443, "GET", "/v1",
	    POLICY_DENY, POLICY_R_PATH, "api");	/* "/v1/" needs the slash */
	pol_expect(c, "api.example.com", NULL, 443, "GET", "/healthz",
	    POLICY_DENY, POLICY_R_PATH, "api");	/* segment boundary */
	pol_expect(c, "api.example.com", NULL, 443, "GET", "/health/x",
	    POLICY_ALLOW, OK, "api");
	pol_expect(c, "api.example.com", NULL, 443, "GET", "/repos/a/b/issues",
	    POLICY_ALLOW, OK, "api");		/* "*" spans "/" */
	pol_expect(c, "api.example.com", NULL, 443, "GET", "/repos/issues",
	    POLICY_DENY, POLICY_R_PATH, "api");
	pol_expect(c, "api.example.com", NULL, 443, "GET", NULL,
	    POLICY_DENY, POLICY_R_PATH, "api");	/* method but no path */
	/* A tunnel: not checked yet; INSPECT tells the proxy to look. */
	unit_policy_decide(c, "api.example.com", NULL, 443, NULL, NULL, &d);
	CU_ASSERT_EQUAL(d.verdict, POLICY_ALLOW);
	CU_ASSERT_EQUAL(d.flags & POLICY_F_INSPECT, POLICY_F_INSPECT);
	/* Another host: the deny-PUT rule cannot rule a tunnel out. */
	unit_policy_decide(c, "www.example.com", NULL, 443, NULL, NULL, &d);
	CU_ASSERT_EQUAL(d.verdict, POLICY_ALLOW);
	CU_ASSERT_EQUAL(d.flags, POLICY_F_INSPECT);
	pol_expect(c, "www.example.com", NULL, 443, "PUT", "/", POLICY_DENY,
	    POLICY_R_DENIED_BY_RULE, "noput");
	unit_policy_decide(c, "www.example.com", NULL, 443, "GET", "/", &d);
	CU_ASSERT_EQUAL(d.verdict, POLICY_ALLOW);
	CU_ASSERT_EQUAL(d.flags, 0);
	unit_policy_decide(c, "git.example.com", NULL, 443, "GET", "/", &d);
	CU_ASSERT_EQUAL(d.flags, POLICY_F_OPAQUE);
	pol_expect(c, "nothing.example.com", NULL, 443, NULL, NULL,
	    POLICY_DENY, POLICY_R_NO_RULE, NULL);
	/* An IP literal is not a name: "*" does not match it. */
	pol_expect(c, "8.8.8.8", NULL, 443, "PUT", "/", POLICY_DENY,
	    POLICY_R_NO_RULE, NULL);
	policy_config_unref(c);
}

struct path_vec {
	const char	*in;
	const char	*out;	/* NULL: refused */
};

static const struct path_vec	path_vectors[] = {
	{ "/", "/" },
	{ "/a/b", "/a/b" },
	{ "/a/b/", "/a/b/" },
	{ "/a/b?x=1&y=/../", "/a/b" },		/* query dropped */
	{ "/a//b///c", "/a/b/c" },		/* repeated "/" */
	{ "//", "/" },
	{ "/a/./b", "/a/b" },
	{ "/a/../b", "/b" },
	{ "/a/b/..", "/a/" },
	{ "/a/b/.", "/a/b/" },
	{ "/../../a", "/a" },			/* cannot climb above "/" */
	{ "/..", "/" },
	{ "/a/.b/..c/...", "/a/.b/..c/..." },	/* not dot segments */
	{ "/%41%7e%2D%5f", "/A~-_" },		/* unreserved decoded */
	{ "/a%2fb", "/a%2Fb" },			/* reserved kept, hex upper */
	{ "/a%3Fb", "/a%3Fb" },
	{ "/%e2%82%ac", "/%E2%82%AC" },		/* non-ASCII kept encoded */
	{ "/v1/x/../models", "/v1/models" },
	{ "/a/%2e%2e/b", NULL },		/* escaped dot segment */
	{ "/a/.%2e/b", NULL },
	{ "/a/%2E/b", NULL },
	{ "/a/..%2fb", NULL },			/* hidden behind %2F */
	{ "/a/%2f../b", NULL },
	{ "/a/..%5cb", NULL },			/* behind %5C */
	{ "/a\\..\\b", NULL },			/* raw backslash */
	{ "/a%00b", NULL },			/* NUL */
	{ "/a%zz", NULL },			/* bad escape */
	{ "/a%4", NULL },
	{ "/a b", NULL },			/* space */
	{ "/a\x01", NULL },			/* control */
	{ "/a\x80", NULL },			/* raw non-ASCII */
	{ "/a#frag", NULL },
	{ "a/b", NULL },			/* not origin-form */
	{ "*", NULL },
	{ "", NULL },
	{ "/%2e%2e%2f", NULL },
	{ "/a.%2e", "/a.." },			/* not a whole segment */
};

static void
test_policy_paths(void)
{
	const struct path_vec	*v;
	struct moat_config	*c;
	const char		*err;
	char			 out[256], again[256];
	size_t			 i, n;
	int			 rc;

	for (i = 0; i < sizeof(path_vectors) / sizeof(*v); i++) {
		v = &path_vectors[i];
		err = NULL;
		rc = path_normalise(v->in, strlen(v->in), false, out, &n, &err);
		if ((rc == 0) != (v->out != NULL) || (rc == 0 &&
		    strcmp(out, v->out) != 0))
			fprintf(stderr, "\n  path %s: rc %d out %s err %s\n",
			    v->in, rc, out, err);
		if (v->out == NULL) {
			CU_ASSERT_EQUAL(rc, -1);
			CU_ASSERT_PTR_NOT_NULL(err);
			continue;
		}
		CU_ASSERT_EQUAL_FATAL(rc, 0);
		CU_ASSERT_STRING_EQUAL(out, v->out);
		CU_ASSERT_EQUAL(n, strlen(v->out));
		/* Idempotent. */
		CU_ASSERT_EQUAL(path_normalise(out, n, false, again, &n, &err),
		    0);
		CU_ASSERT_STRING_EQUAL(again, v->out);
	}
	/* Patterns: no query. */
	CU_ASSERT_EQUAL(path_normalise("/a?b", 4, true, out, &n, &err), -1);

	/* Decisions on spellings of one path. */
	c = pol_load("{" LISTEN ", \"policy\": {\"rules\": [\n"
	    "{\"name\": \"models\", \"action\": \"allow\", \"hosts\": "
	    "[\"api.example.com\"], \"paths\": [\"/v1/%6Dodels\"]},\n"
	    "{\"name\": \"noadmin\", \"action\": \"deny\", \"hosts\": "
	    "[\"api.example.com\"], \"paths\": [\"/admin\"]}]}}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	pol_expect(c, "api.example.com", NULL, 443, "GET", "/v1/models",
	    POLICY_ALLOW, OK, "models");
	pol_expect(c, "api.example.com", NULL, 443, "GET",
	    "/v1/x/../models?q=1", POLICY_ALLOW, OK, "models");
	pol_expect(c, "api.example.com", NULL, 443, "GET", "/v1//models/",
	    POLICY_ALLOW, OK, "models");
	pol_expect(c, "api.example.com", NULL, 443, "GET", "/v1/%6d%6fdels",
	    POLICY_ALLOW, OK, "models");
	pol_expect(c, "api.example.com", NULL, 443, "GET", "/v1/modelsX",
	    POLICY_DENY, POLICY_R_PATH, "models");
	pol_expect(c, "api.example.com", NULL, 443, "GET",
	    "/v1/models/%2e%2e/%2e%2e/admin", POLICY_DENY,
	    POLICY_R_DENIED_BY_RULE, "noadmin");	/* unsafe: deny applies */
	pol_expect(c, "api.example.com", NULL, 443, "GET", "/v1/models%00",
	    POLICY_DENY, POLICY_R_DENIED_BY_RULE, "noadmin");
	pol_expect(c, "api.example.com", NULL, 443, "GET", "/v1/models/../../"
	    "admin/x", POLICY_DENY, POLICY_R_DENIED_BY_RULE, "noadmin");
	pol_expect(c, "api.example.com", NULL, 443, "GET", "/x/../v1/models",
	    POLICY_ALLOW, OK, "models");
	policy_config_unref(c);

	/* Without a deny rule with paths, an unsafe path is "path". */
	c = pol_load("{" LISTEN ", \"policy\": {\"rules\": [\n"
	    "{\"name\": \"all\", \"action\": \"allow\", \"hosts\": "
	    "[\"api.example.com\"], \"paths\": [\"/*\"]}]}}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	pol_expect(c, "api.example.com", NULL, 443, "GET", "/anything/at/all",
	    POLICY_ALLOW, OK, "all");
	pol_expect(c, "api.example.com", NULL, 443, "GET", "/a/..%2f..%2fetc",
	    POLICY_DENY, POLICY_R_PATH, "all");
	{
		/* A path too long for the stack buffer is normalised too. */
		size_t	 len = 3 * PATH_STACK_BYTES;
		char	*p = malloc(len + 1);

		CU_ASSERT_PTR_NOT_NULL_FATAL(p);
		memset(p, 'a', len);
		p[0] = '/';
		p[len] = '\0';
		pol_expect(c, "api.example.com", NULL, 443, "GET", p,
		    POLICY_ALLOW, OK, "all");
		p[len / 2] = '\x01';
		pol_expect(c, "api.example.com", NULL, 443, "GET", p,
		    POLICY_DENY, POLICY_R_PATH, "all");
		free(p);
	}
	policy_config_unref(c);
}

/* The wide form: in is a path as path_normalise() returns it. */
static const struct path_vec	wide_vectors[] = {
	{ "/", "/" },
	{ "/admin", "/admin" },
	{ "/ADMIN", "/admin" },
	{ "/Admin/X", "/admin/x" },
	{ "/admin;jsessionid=1", "/admin" },
	{ "/admin;jsessionid=1/x;y", "/admin/x" },
	{ "/;x/admin", "/admin" },
	{ "/admin.", "/admin" },
	{ "/admin...", "/admin" },
	{ "/admin%20", "/admin" },		/* trailing space */
	{ "/admin./x", "/admin/x" },
	{ "/...", "/..." },			/* all dots: kept */
	{ "/%2561dmin", "/admin" },		/* double encoding */
	{ "/%252561dmin", "/admin" },		/* triple */
	{ "/%2Fadmin", "/admin" },		/* %2F separates */
	{ "/a%5Cadmin", "/a/admin" },		/* so does %5C */
	{ "/%EF%BD%81dmin", "/admin" },		/* full-width a */
	{ "/%EF%BC%A1DMIN", "/admin" },		/* full-width A */
	{ "/%C1%A1dmin", "/admin" },		/* overlong a, 2 bytes */
	{ "/%E0%81%A1dmin", "/admin" },		/* 3 bytes */
	{ "/%F0%80%81%A1dmin", "/admin" },	/* 4 bytes */
	{ "/%F8%80%80%81%A1dmin", "/admin" },	/* 5 bytes */
	{ "/%FC%80%80%80%81%A1dmin", "/admin" },	/* 6 bytes */
	{ "/%25C1%25A1dmin", "/admin" },	/* encoded twice */
	{ "/%E2%93%90dmin", "/admin" },		/* circled a */
	{ "/%F0%9D%90%9Admin", "/admin" },	/* mathematical bold a */
	{ "/%F0%9D%90%80DMIN", "/admin" },	/* mathematical bold A */
	{ "/v%F0%9D%9F%8F", "/v1" },		/* mathematical bold 1 */
	{ "/adm%C4%B1n", "/admin" },		/* dotless i */
	{ "/%C5%BFecret", "/secret" },		/* long s */
	{ "/%E2%84%AAey", "/key" },		/* Kelvin sign */
	{ "/%EF%AC%81le", "/file" },		/* ligature fi */
	{ "/admin%3Fx", "/admin" },		/* decoded "?" ends it */
	{ "/admin%23x", "/admin" },		/* and "#" */
	{ "/%E2%82%AC", "/\xe2\x82\xac" },	/* not a look-alike: kept */
	{ "/%C3%A9t%C3%A9", "/\xc3\xa9t\xc3\xa9" },
	{ "/%FF%FE", "/\xff\xfe" },		/* not UTF-8: kept */
	{ "/%C1", "/\xc1" },			/* truncated */
	{ "/%C1%41", "/\xc1" "a" },		/* bad continuation */
	{ "/administrator", "/administrator" },
	{ "/a/", "/a/" },
	{ "/a;b/", "/a/" },
	{ "/%252500", NULL },			/* NUL once decoded */
	{ "/%C0%80", NULL },			/* overlong NUL */
	{ "/%2525252525252541", NULL },		/* too many rounds */
	{ "admin", NULL },			/* no "/" */
};

/* Dot segments the strict form did not see: removed, and flagged. */
static const struct path_vec	wide_hidden[] = {
	{ "/v1/..;/admin", "/admin" },
	{ "/v1/.;/admin", "/v1/admin" },
	{ "/v1/%252e%252e/admin", "/admin" },
	{ "/v1/%C0%AE%C0%AE/admin", "/admin" },
	{ "/v1/%EF%BC%8E%EF%BC%8E/admin", "/admin" },
	{ "/v1/..%255c/admin", "/admin" },
	{ "/v1/%252e%252e%252fadmin", "/admin" },
	{ "/v1/.. /admin", "/admin" },
};

static void
test_policy_wide(void)
{
	const struct path_vec	*v;
	const char		*err;
	char			 in[256], out[256], exp[256], again[256];
	size_t			 i, n, m;
	bool			 hidden;
	int			 rc;

	for (i = 0; i < sizeof(wide_vectors) / sizeof(*v); i++) {
		v = &wide_vectors[i];
		if (v->out != NULL)
			snprintf(exp, sizeof(exp), "%s", v->out);
		snprintf(in, sizeof(in), "%s", v->in);
		err = NULL;
		rc = path_wide(in, strlen(in), out, &n, &hidden, &err);
		if ((rc == 0) != (v->out != NULL) || (rc == 0 &&
		    strcmp(out, exp) != 0) || hidden)
			fprintf(stderr, "\n  wide %s: rc %d out %s err %s\n",
			    v->in, rc, rc == 0 ? out : "-", err);
		CU_ASSERT_FALSE(hidden);
		if (v->out == NULL) {
			CU_ASSERT_EQUAL(rc, -1);
			CU_ASSERT_PTR_NOT_NULL(err);
			continue;
		}
		CU_ASSERT_EQUAL_FATAL(rc, 0);
		CU_ASSERT_STRING_EQUAL(out, exp);
		CU_ASSERT_EQUAL(n, strlen(exp));
		/* Idempotent. */
		CU_ASSERT_EQUAL(path_wide(out, n, again, &m, &hidden, &err),
		    0);
		CU_ASSERT_STRING_EQUAL(again, exp);
	}
	for (i = 0; i < sizeof(wide_hidden) / sizeof(*v); i++) {
		v = &wide_hidden[i];
		rc = path_wide(v->in, strlen(v->in), out, &n, &hidden, &err);
		if (rc != 0 || !hidden || strcmp(out, v->out) != 0)
			fprintf(stderr, "\n  wide %s: rc %d hidden %d out %s\n",
			    v->in, rc, hidden, rc == 0 ? out : "-");
		CU_ASSERT_EQUAL(rc, 0);
		CU_ASSERT_TRUE(hidden);
		CU_ASSERT_STRING_EQUAL(out, v->out);
	}
	/* Query parameter names, for "_method". */
	CU_ASSERT_TRUE(path_query_has("_method=DELETE", 14, "_method"));
	CU_ASSERT_TRUE(path_query_has("a=1&_METHOD=x", 13, "_method"));
	CU_ASSERT_TRUE(path_query_has("a=1;%5Fmethod=x", 15, "_method"));
	CU_ASSERT_TRUE(path_query_has("%255Fmethod", 11, "_method"));
	CU_ASSERT_TRUE(path_query_has("_method", 7, "_method"));
	CU_ASSERT_FALSE(path_query_has("x=_method", 9, "_method"));
	CU_ASSERT_FALSE(path_query_has("_methods=1", 10, "_method"));
	CU_ASSERT_FALSE(path_query_has("", 0, "_method"));
}

/* Issue item 10: each spelling that got past a deny rule on "/admin" or
 * "DELETE". */
static void
test_policy_deny_dodges(void)
{
	static const char *const	denied[] = {
		"/admin", "/ADMIN", "/Admin/users", "/admin;jsessionid=1",
		"/admin.", "/admin./", "/%2561dmin", "/%2Fadmin",
		"/%EF%BD%81dmin", "/%EF%BC%A1DMIN", "/%C1%A1dmin",
		"/%E0%81%A1dmin", "/x/..;/admin", "/x/%252e%252e/admin",
		"//admin", "/admin%3Fx=1", "/adm%C4%B1n", "/%252561dmin",
		"/admin%2F", "/;/admin", "/x/%C0%AE%C0%AE/admin",
	};
	static const char *const	allowed[] = {
		"/administrator", "/admins", "/x/admin", "/adminx",
		"/%E2%82%ACadmin", "/ad/min", "/public", "/admin-panel",
	};
	struct moat_config	*c;
	size_t			 i;

	c = pol_load("{" LISTEN ", \"policy\": {\"rules\": [\n"
	    "{\"name\": \"all\", \"action\": \"allow\", \"hosts\": "
	    "[\"api.example.com\"]},\n"
	    "{\"name\": \"noadmin\", \"action\": \"deny\", \"hosts\": "
	    "[\"api.example.com\"], \"paths\": [\"/admin\"]},\n"
	    "{\"name\": \"nodelete\", \"action\": \"deny\", \"hosts\": "
	    "[\"api.example.com\"], \"methods\": [\"DELETE\"]},\n"
	    "{\"name\": \"nodebug\", \"action\": \"deny\", \"hosts\": "
	    "[\"api.example.com\"], \"paths\": [\"/API/Debug\", "
	    "\"/files/*.BAK\", \"/q*y\"]}]}}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	for (i = 0; i < sizeof(denied) / sizeof(*denied); i++)
		pol_expect(c, "api.example.com", NULL, 443, "GET", denied[i],
		    POLICY_DENY, POLICY_R_DENIED_BY_RULE, "noadmin");
	for (i = 0; i < sizeof(allowed) / sizeof(*allowed); i++)
		pol_expect(c, "api.example.com", NULL, 443, "GET", allowed[i],
		    POLICY_ALLOW, OK, "all");
	/* Methods in any case. */
	pol_expect(c, "api.example.com", NULL, 443, "DELETE", "/x",
	    POLICY_DENY, POLICY_R_DENIED_BY_RULE, "nodelete");
	pol_expect(c, "api.example.com", NULL, 443, "delete", "/x",
	    POLICY_DENY, POLICY_R_DENIED_BY_RULE, "nodelete");
	pol_expect(c, "api.example.com", NULL, 443, "Delete", "/x",
	    POLICY_DENY, POLICY_R_DENIED_BY_RULE, "nodelete");
	pol_expect(c, "api.example.com", NULL, 443, "DELETES", "/x",
	    POLICY_ALLOW, OK, "all");
	/* The patterns are folded too. */
	pol_expect(c, "api.example.com", NULL, 443, "GET", "/api/debug/x",
	    POLICY_DENY, POLICY_R_DENIED_BY_RULE, "nodebug");
	pol_expect(c, "api.example.com", NULL, 443, "GET", "/files/a.bak",
	    POLICY_DENY, POLICY_R_DENIED_BY_RULE, "nodebug");
	pol_expect(c, "api.example.com", NULL, 443, "GET", "/files/a.Bak;x",
	    POLICY_DENY, POLICY_R_DENIED_BY_RULE, "nodebug");
	pol_expect(c, "api.example.com", NULL, 443, "GET", "/files/a.bakx",
	    POLICY_ALLOW, OK, "all");
	/* The strict form still counts: the wide one cuts at "%3F". */
	pol_expect(c, "api.example.com", NULL, 443, "GET", "/q%3Fy",
	    POLICY_DENY, POLICY_R_DENIED_BY_RULE, "nodebug");
	pol_expect(c, "api.example.com", NULL, 443, "GET", "/q%3Fz",
	    POLICY_ALLOW, OK, "all");
	policy_config_unref(c);

	/* Allow rules stay exact; a hidden dot segment is unsafe. */
	c = pol_load("{" LISTEN ", \"policy\": {\"rules\": [\n"
	    "{\"name\": \"pub\", \"action\": \"allow\", \"hosts\": "
	    "[\"api.example.com\"], \"methods\": [\"GET\"], "
	    "\"paths\": [\"/public\"]}]}}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	pol_expect(c, "api.example.com", NULL, 443, "GET", "/public/x",
	    POLICY_ALLOW, OK, "pub");
	pol_expect(c, "api.example.com", NULL, 443, "GET", "/PUBLIC",
	    POLICY_DENY, POLICY_R_PATH, "pub");
	pol_expect(c, "api.example.com", NULL, 443, "get", "/public",
	    POLICY_DENY, POLICY_R_METHOD, "pub");
	pol_expect(c, "api.example.com", NULL, 443, "GET", "/public;x",
	    POLICY_DENY, POLICY_R_PATH, "pub");
	pol_expect(c, "api.example.com", NULL, 443, "GET", "/public/..;/admin",
	    POLICY_DENY, POLICY_R_PATH, "pub");
	pol_expect(c, "api.example.com", NULL, 443, "GET",
	    "/public/%252e%252e/admin", POLICY_DENY, POLICY_R_PATH, "pub");
	pol_expect(c, "api.example.com", NULL, 443, "GET",
	    "/public/%C0%AE%C0%AE/admin", POLICY_DENY, POLICY_R_PATH, "pub");
	pol_expect(c, "api.example.com", NULL, 443, "GET", "/public/a%252Fb",
	    POLICY_ALLOW, OK, "pub");
	policy_config_unref(c);
}

static void
pol_expect_req(const struct moat_config *c, const char *method,
    const char *path, unsigned req, enum policy_verdict v,
    enum policy_reason r, const char *rule)
{
	struct policy_target	t;
	struct policy_decision	d;

	memset(&t, 0, sizeof(t));
	t.name = "api.example.com";
	t.port = 443;
	t.method = method;
	t.path = path;
	t.req = req;
	policy_decide(c->policy, &t, &d);
	if (d.verdict != v || d.reason != r || (d.rule_name == NULL) !=
	    (rule == NULL) || (rule != NULL && strcmp(d.rule_name, rule)))
		fprintf(stderr, "\n  %s %s req %u: got %s %s, want %s\n",
		    method, path, req, policy_reason_str(d.reason),
		    d.rule_name ? d.rule_name : "-", policy_reason_str(r));
	CU_ASSERT_EQUAL(d.verdict, v);
	CU_ASSERT_EQUAL(d.reason, r);
	if (rule != NULL && d.rule_name != NULL) {
		CU_ASSERT_STRING_EQUAL(d.rule_name, rule);
	} else {
		CU_ASSERT_PTR_EQUAL(d.rule_name, rule);
	}
}

static void
test_policy_strict_methods(void)
{
	struct moat_config	*c;
	struct policy_diags	 d;
	static const char *const	bad[] = {
		"{\"name\": \"x\", \"action\": \"allow\", \"hosts\": "
		"[\"a.example\"], \"strict_methods\": true}",
		"{\"name\": \"x\", \"action\": \"allow\", \"hosts\": "
		"[\"a.example\"], \"methods\": [\"GET\"], "
		"\"strict_methods\": 1}",
	};
	char			 buf[1024], line[POL_LINE_MAX];
	size_t			 i;

	c = pol_load("{" LISTEN ", \"policy\": {\"rules\": [\n"
	    "{\"name\": \"ro\", \"action\": \"allow\", \"hosts\": "
	    "[\"api.example.com\"], \"methods\": [\"GET\", \"HEAD\"], "
	    "\"paths\": [\"/v1\"], \"strict_methods\": true},\n"
	    "{\"name\": \"nodel\", \"action\": \"deny\", \"hosts\": "
	    "[\"api.example.com\"], \"methods\": [\"DELETE\"], "
	    "\"paths\": [\"/v2\"], \"strict_methods\": true},\n"
	    "{\"name\": \"v2\", \"action\": \"allow\", \"hosts\": "
	    "[\"api.example.com\"], \"paths\": [\"/v2\", \"/v3\"]}]}}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	/* The allow rule. */
	pol_expect_req(c, "GET", "/v1/x", 0, POLICY_ALLOW, OK, "ro");
	pol_expect_req(c, "POST", "/v1/x", POLICY_REQ_BODY, POLICY_DENY,
	    POLICY_R_METHOD, "ro");
	pol_expect_req(c, "GET", "/v1/x", POLICY_REQ_BODY, POLICY_DENY,
	    POLICY_R_BODY_ON_GET, "ro");
	pol_expect_req(c, "HEAD", "/v1/x", POLICY_REQ_BODY, POLICY_DENY,
	    POLICY_R_BODY_ON_GET, "ro");
	pol_expect_req(c, "GET", "/v1/x", POLICY_REQ_OVERRIDE, POLICY_DENY,
	    POLICY_R_METHOD_OVERRIDE, "ro");
	pol_expect_req(c, "GET", "/v1/x?_method=DELETE", 0, POLICY_DENY,
	    POLICY_R_METHOD_OVERRIDE, "ro");
	pol_expect_req(c, "GET", "/v1/x?a=1&%5FMethod=PUT", 0, POLICY_DENY,
	    POLICY_R_METHOD_OVERRIDE, "ro");
	pol_expect_req(c, "GET", "/v1/x?method=1&x=_method", 0, POLICY_ALLOW,
	    OK, "ro");
	/* The deny rule: whatever the method, where its paths match. */
	pol_expect_req(c, "POST", "/v2/x", 0, POLICY_ALLOW, OK, "v2");
	pol_expect_req(c, "delete", "/v2/x", 0, POLICY_DENY,
	    POLICY_R_DENIED_BY_RULE, "nodel");
	pol_expect_req(c, "POST", "/v2/x", POLICY_REQ_OVERRIDE, POLICY_DENY,
	    POLICY_R_METHOD_OVERRIDE, "nodel");
	pol_expect_req(c, "POST", "/V2/x?_method=delete", 0, POLICY_DENY,
	    POLICY_R_METHOD_OVERRIDE, "nodel");
	pol_expect_req(c, "GET", "/v2/x", POLICY_REQ_BODY, POLICY_DENY,
	    POLICY_R_BODY_ON_GET, "nodel");
	pol_expect_req(c, "POST", "/v2/x", POLICY_REQ_BODY, POLICY_ALLOW, OK,
	    "v2");
	pol_expect_req(c, "POST", "/v3/x", POLICY_REQ_OVERRIDE, POLICY_ALLOW,
	    OK, "v2");
	/* A tunnel: decided per request. */
	pol_expect_req(c, NULL, NULL, 0, POLICY_ALLOW, OK, "ro");
	policy_config_unref(c);

	/* Misuse is an error at the key. */
	for (i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		snprintf(buf, sizeof(buf), "{" LISTEN ", \"policy\": "
		    "{\"rules\": [\n%s]}}", bad[i]);
		policy_diags_init(&d);
		c = policy_config_load("p.json", buf, strlen(buf), &d);
		CU_ASSERT_PTR_NULL(c);
		policy_config_unref(c);
		CU_ASSERT_EQUAL(d.nerrors, 1);
		if (d.n > 0) {
			policy_diag_format(&d, 0, line, sizeof(line));
			CU_ASSERT_PTR_NOT_NULL(strstr(line, "p.json:2:"));
			CU_ASSERT_PTR_NOT_NULL(strstr(line,
			    i == 0 ? "has none" : "expected a boolean"));
		}
		policy_diags_clear(&d);
	}
}

/* addr == NULL: a name not yet resolved. */
static void
test_policy_pending(void)
{
	struct moat_config	*c;

	c = pol_load("{" LISTEN ", \"policy\": {\"rules\": [\n"
	    "{\"name\": \"named\", \"action\": \"allow\", \"hosts\": "
	    "[\"www.example.com\"]},\n"
	    "{\"name\": \"evil\", \"action\": \"deny\", \"hosts\": "
	    "[\"evil.example.com\"]},\n"
	    "{\"name\": \"net\", \"action\": \"allow\", \"cidrs\": "
	    "[\"93.184.216.0/24\"], \"ports\": [443, 8443]}]}}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	/* A host rule allows: the rule is known before resolution. */
	pol_expect(c, "www.example.com", NULL, 80, NULL, NULL, POLICY_ALLOW,
	    OK, "named");
	/* A deny with addr NULL is final. */
	pol_expect(c, "evil.example.com", NULL, 443, NULL, NULL, POLICY_DENY,
	    POLICY_R_DENIED_BY_RULE, "evil");
	/*
	 * No host rule names it: denied before resolution, whatever cidr
	 * rules say, so an unknown name is never sent to a resolver (DNS
	 * would carry it out).  cidr rules judge addresses only.
	 */
	pol_expect(c, "unknown.example.org", NULL, 443, NULL, NULL,
	    POLICY_DENY, POLICY_R_NO_RULE, NULL);
	pol_expect(c, "unknown.example.org", NULL, 80, NULL, NULL,
	    POLICY_DENY, POLICY_R_NO_RULE, NULL);
	/* www on a port its host rule does not list: reason port. */
	pol_expect(c, "www.example.com", NULL, 8443, NULL, NULL, POLICY_DENY,
	    POLICY_R_PORT, "named");
	/* With an address, a cidr allow rule still opens no name... */
	pol_expect(c, "unknown.example.org", "93.184.216.34", 443, NULL, NULL,
	    POLICY_DENY, POLICY_R_NO_RULE, NULL);
	/* ...but opens the address itself (an IP literal target). */
	pol_expect(c, "93.184.216.34", NULL, 443, NULL, NULL, POLICY_ALLOW, OK,
	    "net");
	pol_expect(c, "93.184.217.34", NULL, 443, NULL, NULL, POLICY_DENY,
	    POLICY_R_NO_RULE, NULL);
	pol_expect(c, "10.0.0.1", NULL, 443, NULL, NULL, POLICY_DENY, PRIV,
	    NULL);
	pol_expect(c, "www.example.com", "127.0.0.1", 80, NULL, NULL,
	    POLICY_DENY, PRIV, NULL);
	pol_expect(c, "www.example.com", "93.184.216.34", 80, NULL, NULL,
	    POLICY_ALLOW, OK, "named");
	/* Neither name nor address: nothing to allow. */
	pol_expect(c, NULL, NULL, 443, NULL, NULL, POLICY_DENY,
	    POLICY_R_NO_RULE, NULL);
	policy_config_unref(c);

	/* Without cidr rules, an unknown name is denied before resolution. */
	c = pol_load("{" LISTEN ", \"policy\": {\"rules\": [\n"
	    "{\"name\": \"named\", \"action\": \"allow\", \"hosts\": "
	    "[\"www.example.com\"]}]}}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	pol_expect(c, "unknown.example.org", NULL, 443, NULL, NULL,
	    POLICY_DENY, POLICY_R_NO_RULE, NULL);
	pol_expect(c, "www.example.com", NULL, 22, NULL, NULL, POLICY_DENY,
	    POLICY_R_PORT, "named");
	policy_config_unref(c);
}

static void
test_policy_reason_strings(void)
{
	static const char *const	want[POLICY_R__COUNT] = {
		"allowed", "no-rule", "denied-by-rule", "port", "method",
		"path", "private-address", "metadata", "bad-request",
		"dns-failure", "upstream-unreachable", "timeout", "limit",
		"needs-inspection", "auth", "dns-denied", "secret-leak", "tls",
		"rate", "shutdown", "internal", "needs-tls", "dns-budget",
		"method-override", "body-on-get", "secret-unsafe",
		"sandbox-refused", "audit-unavailable", "sni-mismatch",
		"protocol", "dropped-packet", "quota-bytes", "quota-secret",
	};
	const struct policy_reason_info	*ri;
	struct policy_target		t;
	struct policy_decision		d;
	int				i;

	for (i = 0; i < POLICY_R__COUNT; i++) {
		CU_ASSERT_STRING_EQUAL(policy_reason_str((enum policy_reason)i),
		    want[i]);
		/* Every row of the reason table is whole: a sentence, an
		 * HTTP status or none, a SOCKS5 reply that is a refusal. */
		ri = policy_reason_info((enum policy_reason)i);
		CU_ASSERT_PTR_EQUAL(ri->code, policy_reason_str(
		    (enum policy_reason)i));
		CU_ASSERT(ri->text != NULL && ri->text[0] != '\0');
		CU_ASSERT(ri->http == 0 || (ri->http >= 400 && ri->http < 600));
		CU_ASSERT(i == POLICY_R_ALLOWED ? ri->socks5 == 0x00 :
		    ri->socks5 >= 0x01 && ri->socks5 <= 0x08);
	}
	CU_ASSERT_PTR_EQUAL(policy_reason_info(POLICY_R__COUNT),
	    policy_reason_info(POLICY_R_INTERNAL));
	CU_ASSERT_STRING_EQUAL(policy_reason_str(POLICY_R__COUNT), "internal");
	CU_ASSERT_STRING_EQUAL(policy_reason_str((enum policy_reason)-1),
	    "internal");
	memset(&t, 0, sizeof(t));
	CU_ASSERT_EQUAL(policy_decide(NULL, &t, &d), POLICY_DENY);
	CU_ASSERT_EQUAL(d.reason, POLICY_R_INTERNAL);
	CU_ASSERT_STRING_EQUAL(policy_proto_str(MOAT_PROTO_HTTP), "http");
	CU_ASSERT_STRING_EQUAL(policy_proto_str(MOAT_PROTO_SOCKS5), "socks5");
	CU_ASSERT_STRING_EQUAL(policy_proto_str(MOAT_PROTO_TRANSPARENT),
	    "transparent");
	CU_ASSERT_STRING_EQUAL(policy_proto_str(MOAT_PROTO_DNS), "dns");
}

/* "protocols": compiled to bits, "any" (or none) is 0, and formatted
 * back as the config spells them. */
static void
test_policy_protocols(void)
{
	struct moat_config	*c;
	struct policy_target	 t;
	struct policy_decision	 d;
	char			 buf[32];

	c = pol_load("{" LISTEN ", \"policy\": {\"rules\": [\n"
	    "{\"name\": \"s\", \"action\": \"allow\", \"hosts\": "
	    "[\"s.example\"], \"protocols\": [\"ssh\", \"tls\"]},\n"
	    "{\"name\": \"h\", \"action\": \"allow\", \"hosts\": "
	    "[\"h.example\"], \"protocols\": [\"http\"]},\n"
	    "{\"name\": \"a\", \"action\": \"allow\", \"hosts\": "
	    "[\"a.example\"], \"protocols\": [\"tls\", \"any\"]},\n"
	    "{\"name\": \"n\", \"action\": \"allow\", \"hosts\": "
	    "[\"n.example\"]}]}}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	memset(&t, 0, sizeof(t));
	t.port = 443;
	t.name = "s.example";
	CU_ASSERT_EQUAL(policy_decide(c->policy, &t, &d), POLICY_ALLOW);
	CU_ASSERT_EQUAL(policy_rule_protocols(d.rule),
	    POLICY_PROTO_SSH | POLICY_PROTO_TLS);
	CU_ASSERT_STRING_EQUAL(policy_protocols_format(policy_rule_protocols(
	    d.rule), buf, sizeof(buf)), "tls, ssh");
	t.name = "h.example";
	CU_ASSERT_EQUAL(policy_decide(c->policy, &t, &d), POLICY_ALLOW);
	CU_ASSERT_EQUAL(policy_rule_protocols(d.rule), POLICY_PROTO_HTTP);
	t.name = "a.example";
	CU_ASSERT_EQUAL(policy_decide(c->policy, &t, &d), POLICY_ALLOW);
	CU_ASSERT_EQUAL(policy_rule_protocols(d.rule), 0);
	t.name = "n.example";
	CU_ASSERT_EQUAL(policy_decide(c->policy, &t, &d), POLICY_ALLOW);
	CU_ASSERT_EQUAL(policy_rule_protocols(d.rule), 0);
	CU_ASSERT_STRING_EQUAL(policy_protocols_format(0, buf, sizeof(buf)),
	    "any");
	CU_ASSERT_EQUAL(policy_rule_protocols(NULL), 0);
	CU_ASSERT_EQUAL(policy_proto_bit("ssh"), POLICY_PROTO_SSH);
	CU_ASSERT_EQUAL(policy_proto_bit("any"), 0);
	CU_ASSERT_EQUAL(policy_proto_bit("SSH"), 0);
	policy_config_unref(c);
}

/* The explain target parser. */
static void
test_policy_explain(void)
{
	struct policy_explain_target	e;
	const char			*err;

	CU_ASSERT_EQUAL_FATAL(policy_explain_parse(
	    "https://API.Example.com/v1/x?y=1#frag", NULL, &e, &err), 0);
	CU_ASSERT_STRING_EQUAL(e.t.name, "api.example.com");
	CU_ASSERT_EQUAL(e.t.port, 443);
	CU_ASSERT_STRING_EQUAL(e.t.method, "GET");
	CU_ASSERT_STRING_EQUAL(e.t.path, "/v1/x?y=1");
	CU_ASSERT_PTR_NULL(e.t.addr);
	free(e.buf);
	CU_ASSERT_EQUAL_FATAL(policy_explain_parse("POST http://[::1]:8080",
	    NULL, &e, &err), 0);
	CU_ASSERT_PTR_NULL(e.t.name);
	CU_ASSERT_PTR_NOT_NULL(e.t.addr);
	CU_ASSERT_EQUAL(e.t.port, 8080);
	CU_ASSERT_STRING_EQUAL(e.t.method, "POST");
	CU_ASSERT_STRING_EQUAL(e.t.path, "/");
	free(e.buf);
	CU_ASSERT_EQUAL_FATAL(policy_explain_parse("wss://h.example?q", "PUT",
	    &e, &err), 0);
	CU_ASSERT_EQUAL(e.t.port, 443);
	CU_ASSERT_STRING_EQUAL(e.t.method, "PUT");
	CU_ASSERT_STRING_EQUAL(e.t.path, "/?q");
	free(e.buf);
	CU_ASSERT_EQUAL_FATAL(policy_explain_parse("0x7f.1:22", NULL, &e,
	    &err), 0);
	CU_ASSERT_PTR_NULL(e.t.method);
	CU_ASSERT_PTR_NULL(e.t.path);
	CU_ASSERT_STRING_EQUAL(e.host.name, "127.0.0.1");
	CU_ASSERT_EQUAL(e.t.port, 22);
	free(e.buf);

	CU_ASSERT_EQUAL(policy_explain_parse("ftp://x/", NULL, &e, &err), -1);
	CU_ASSERT_STRING_EQUAL(err, "unsupported URL scheme (http, https, ws "
	    "or wss)");
	CU_ASSERT_EQUAL(policy_explain_parse("http://u:p@x/", NULL, &e, &err),
	    -1);
	CU_ASSERT_STRING_EQUAL(err, "user info (\"user@\") in a URL is not "
	    "supported");
	CU_ASSERT_EQUAL(policy_explain_parse("x.example", NULL, &e, &err), -1);
	CU_ASSERT_STRING_EQUAL(err, "missing port (write HOST:PORT)");
	CU_ASSERT_EQUAL(policy_explain_parse("x.example:443", "GET", &e, &err),
	    -1);
	CU_ASSERT_STRING_EQUAL(err, "a method needs a URL target (http://...)");
	CU_ASSERT_EQUAL(policy_explain_parse("GET http://x/", "POST", &e,
	    &err), -1);
	CU_ASSERT_STRING_EQUAL(err, "a method is given twice");
	CU_ASSERT_EQUAL(policy_explain_parse("G(T http://x/", NULL, &e, &err),
	    -1);
	CU_ASSERT_EQUAL(policy_explain_parse("http://x:0/", NULL, &e, &err),
	    -1);
	CU_ASSERT_EQUAL(policy_explain_parse("", NULL, &e, &err), -1);
	CU_ASSERT_EQUAL(policy_explain_parse(NULL, NULL, &e, &err), -1);
}

/* ------------------------------------------------------------------ */
/* Secrets: binding, the git preset, explain                           */
/* ------------------------------------------------------------------ */

/*
 * policy_secret_bound() for the secret called secret; name as a client
 * spells it (an IP literal becomes the address) or NULL; addr or NULL.
 */
static bool
pol_bound(const struct moat_config *c, const char *secret, const char *name,
    const char *addr, uint16_t port)
{
	struct policy_host	 hn, ha;
	const char		*n = NULL, *err;
	const struct policy_addr *a = NULL;
	size_t			 i;

	for (i = 0; i < c->nsecrets; i++)
		if (strcmp(c->secrets[i].name, secret) == 0)
			break;
	CU_ASSERT_FATAL(i < c->nsecrets);
	if (name != NULL) {
		CU_ASSERT_EQUAL_FATAL(policy_host_normalise(name, strlen(name),
		    &hn, &err), 0);
		if (hn.kind == POLICY_HOST_NAME)
			n = hn.name;
		else
			a = &hn.addr;
	}
	if (addr != NULL) {
		CU_ASSERT_EQUAL_FATAL(policy_host_normalise(addr, strlen(addr),
		    &ha, &err), 0);
		a = &ha.addr;
	}
	return policy_secret_bound(c->policy, i, n, a, port);
}

/* The rule called name. */
static const struct policy_rule *
pol_rule(const struct moat_config *c, const char *name)
{
	struct policy_decision	d;
	struct policy_target	t;
	char			host[POLICY_NAME_MAX + 1];

	/* Each rule of these tests allows NAME.example on port 443. */
	snprintf(host, sizeof(host), "%s.example", name);
	memset(&t, 0, sizeof(t));
	t.name = host;
	t.port = 443;
	CU_ASSERT_EQUAL_FATAL(policy_decide(c->policy, &t, &d), POLICY_ALLOW);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d.rule);
	CU_ASSERT_STRING_EQUAL_FATAL(d.rule_name, name);
	return d.rule;
}

/* A secret is bound to what the rules that inject it allow, no more. */
static void
test_policy_bound(void)
{
	struct moat_config	*c;

	c = pol_load("{" LISTEN ",\n"
	    "\"secrets\": {\"OPENAI\": {\"env\": \"A\"}, \"GH\": {\"env\": "
	    "\"B\"}, "
	    "\"NET\": {\"env\": \"C\"}},\n"
	    "\"policy\": {\"rules\": [\n"
	    "{\"name\": \"openai\", \"action\": \"allow\", \"hosts\": "
	    "[\"api.openai.com\"], \"ports\": [443], \"inject\": [{\"header\": "
	    "\"Authorization\", \"value\": \"Bearer ${OPENAI}\"}]},\n"
	    "{\"name\": \"gh\", \"action\": \"allow\", \"hosts\": "
	    "[\"*.github.com\"], \"inject\": [{\"basic\": {\"user\": \"x\", "
	    "\"password\": \"${GH}\"}}]},\n"
	    "{\"name\": \"net\", \"action\": \"allow\", \"cidrs\": "
	    "[\"93.184.216.0/24\"], \"ports\": [8443], \"inject\": "
	    "[{\"placeholders\": [\"NET\"]}]},\n"
	    "{\"name\": \"other\", \"action\": \"allow\", \"hosts\": "
	    "[\"evil.example\", \"api.openai.com\"], \"ports\": [80, 443]}]}}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	/* Bound to its rule's host and port... */
	CU_ASSERT_TRUE(pol_bound(c, "OPENAI", "api.openai.com", NULL, 443));
	CU_ASSERT_TRUE(pol_bound(c, "OPENAI", "API.OpenAI.com.", NULL, 443));
	CU_ASSERT_TRUE(pol_bound(c, "OPENAI", "api.openai.com", NULL, 0));
	CU_ASSERT_TRUE(pol_bound(c, "OPENAI", "api.openai.com",
	    "104.18.6.192", 443));
	/* ...not to another host, port, or a look-alike name. */
	CU_ASSERT_FALSE(pol_bound(c, "OPENAI", "evil.example", NULL, 443));
	CU_ASSERT_FALSE(pol_bound(c, "OPENAI", "api.openai.com", NULL, 80));
	CU_ASSERT_FALSE(pol_bound(c, "OPENAI", "api.openai.com", NULL, 8443));
	CU_ASSERT_FALSE(pol_bound(c, "OPENAI", "openai.com", NULL, 443));
	CU_ASSERT_FALSE(pol_bound(c, "OPENAI", "x.api.openai.com", NULL, 443));
	CU_ASSERT_FALSE(pol_bound(c, "OPENAI", "api.openai.com.evil.example",
	    NULL, 443));
	CU_ASSERT_FALSE(pol_bound(c, "OPENAI", "x.github.com", NULL, 443));
	/* Never to a denied address, whatever the name. */
	CU_ASSERT_FALSE(pol_bound(c, "OPENAI", "api.openai.com", "127.0.0.1",
	    443));
	CU_ASSERT_FALSE(pol_bound(c, "OPENAI", "api.openai.com",
	    "169.254.169.254", 443));
	/* A wildcard binds the names under it, not the domain itself. */
	CU_ASSERT_TRUE(pol_bound(c, "GH", "x.github.com", NULL, 443));
	CU_ASSERT_TRUE(pol_bound(c, "GH", "a.b.github.com", NULL, 80));
	CU_ASSERT_FALSE(pol_bound(c, "GH", "github.com", NULL, 443));
	CU_ASSERT_FALSE(pol_bound(c, "GH", "x.github.com", NULL, 22));
	CU_ASSERT_FALSE(pol_bound(c, "GH", "api.openai.com", NULL, 443));
	/* A cidr binds addresses, never a name (as policy_decide()). */
	CU_ASSERT_TRUE(pol_bound(c, "NET", "93.184.216.34", NULL, 8443));
	CU_ASSERT_TRUE(pol_bound(c, "NET", NULL, "93.184.216.1", 8443));
	CU_ASSERT_FALSE(pol_bound(c, "NET", "93.184.216.34", NULL, 443));
	CU_ASSERT_FALSE(pol_bound(c, "NET", "93.184.217.34", NULL, 8443));
	CU_ASSERT_FALSE(pol_bound(c, "NET", "x.example", "93.184.216.34",
	    8443));
	CU_ASSERT_FALSE(pol_bound(c, "GH", "93.184.216.34", NULL, 8443));
	/* Nothing to bind to. */
	CU_ASSERT_FALSE(policy_secret_bound(c->policy, 0, NULL, NULL, 443));
	CU_ASSERT_FALSE(policy_secret_bound(c->policy, 0, "", NULL, 443));
	CU_ASSERT_FALSE(policy_secret_bound(NULL, 0, "api.openai.com", NULL,
	    443));
	CU_ASSERT_FALSE(policy_secret_bound(c->policy, 99, "api.openai.com",
	    NULL, 443));
	policy_config_unref(c);

	/* "*" binds every name but no address and no denied name. */
	c = pol_load("{" LISTEN ",\n"
	    "\"secrets\": {\"S\": {\"env\": \"A\"}},\n"
	    "\"policy\": {\"rules\": [{\"name\": \"all\", \"action\": "
	    "\"allow\", \"hosts\": [\"*\"], \"inject\": [{\"header\": \"X-S\", "
	    "\"value\": \"${S}\"}]}]}}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_TRUE(pol_bound(c, "S", "anything.example", NULL, 443));
	CU_ASSERT_FALSE(pol_bound(c, "S", "8.8.8.8", NULL, 443));
	CU_ASSERT_FALSE(pol_bound(c, "S", "metadata.google.internal", NULL,
	    80));
	CU_ASSERT_FALSE(pol_bound(c, "S", "localhost", NULL, 80));
	policy_config_unref(c);
}

struct git_vec {
	const char		*method;
	const char		*path;
	enum policy_reason	 r;
};

#define PUSH	POLICY_R_PATH
#define METH	POLICY_R_METHOD

static const struct git_vec	git_vectors[] = {
	/* fetch, clone, dumb reads, web pages */
	{ "GET", "/o/r.git/info/refs?service=git-upload-pack", OK },
	{ "POST", "/o/r.git/git-upload-pack", OK },
	{ "POST", "/o/r/git-upload-pack", OK },
	{ "POST", "/o/r.git/./git-upload-pack", OK },
	{ "POST", "/o/r.git//git-upload-pack?x=1", OK },
	{ "HEAD", "/o/r.git/HEAD", OK },
	{ "GET", "/o/r.git/info/refs", OK },		/* dumb protocol */
	{ "GET", "/o/r.git/objects/ab/cdef0123", OK },
	{ "GET", "/", OK },
	{ "GET", "/o/r?tab=readme&q=a+b", OK },
	{ "GET", "/o/r.git/info/refs?service=git%2Dupload-pack", OK },
	/* push, however spelt */
	{ "GET", "/o/r.git/info/refs?service=git-receive-pack", PUSH },
	{ "POST", "/o/r.git/git-receive-pack", PUSH },
	{ "POST", "/o/r.git/./git-receive-pack", PUSH },
	{ "POST", "/o/r.git/x/../git-receive-pack", PUSH },
	{ "POST", "/o/r.git//git-receive-pack", PUSH },
	{ "POST", "/o/r.git/git%2Dreceive%2Dpack", PUSH },
	{ "POST", "/o/r.git/%67it-%72eceive-pack", PUSH },
	{ "POST", "/o/r.git/GIT-RECEIVE-PACK", PUSH },
	{ "POST", "/o/r.git/git-receive-pack/", PUSH },
	{ "POST", "/o/r.git/git-receive-pack?service=git-upload-pack", PUSH },
	{ "GET", "/o/r.git/git-receive-pack", PUSH },
	{ "GET", "/o/r.git/info/refs?service=git%2dreceive-pack", PUSH },
	{ "GET", "/o/r.git/info/refs?service=git%2Dreceive%2Dpack", PUSH },
	{ "GET", "/o/r.git/info/refs?SERVICE=git-receive-pack", PUSH },
	{ "GET", "/o/r.git/info/refs?service=Git-Receive-Pack", PUSH },
	{ "GET", "/o/r.git/info/refs?service=git+receive-pack", PUSH },
	{ "GET", "/o/r.git/info/refs?a=1&service=git-receive-pack", PUSH },
	{ "GET", "/o/r.git/info/refs?a=1;service=git-receive-pack", PUSH },
	{ "GET", "/o/r.git/info/refs?x=receive-pack", PUSH },
	{ "GET", "/o/r.git/info/refs?%73ervice=git-receive-pack", PUSH },
	/* ambiguous or undecodable: refused, not guessed */
	{ "GET", "/o/r.git/info/refs?service=git-upload-pack&"
	  "service=git-receive-pack", PUSH },
	{ "GET", "/o/r.git/info/refs?service=git-upload-pack;"
	  "service=git-upload-pack", PUSH },
	{ "GET", "/o/r.git/info/refs?service=git-upload-archive", PUSH },
	{ "GET", "/o/r.git/info/refs?service", PUSH },
	{ "GET", "/o/r.git/info/refs?service=", PUSH },
	{ "GET", "/o/r.git/info/refs?service=git-upload-pack%00", PUSH },
	{ "GET", "/o/r.git/info/refs?service=%zz", PUSH },
	{ "GET", "/o/r.git/info/refs?service=git-upload-pack%", PUSH },
	{ "GET", "/o/r.git/info/refs?service=git-upload-pack#x", PUSH },
	{ "GET", "/o/r.git/info/refs?service=git upload-pack", PUSH },
	{ "POST", "/o/r.git/%2e%2e/git-receive-pack", PUSH },
	{ "POST", "/o/r.git/..%2fgit-receive-pack", PUSH },
	{ "POST", "/o/r.git\\git-receive-pack", PUSH },
	{ "POST", "o/r.git/git-upload-pack", PUSH },	/* not origin-form */
	/* dumb-HTTP writes and other methods */
	{ "PUT", "/o/r.git/objects/ab/cdef", METH },
	{ "DELETE", "/o/r.git/refs/heads/main", METH },
	{ "MKCOL", "/o/r.git/objects/ab/", METH },
	{ "PROPPATCH", "/o/r.git/", METH },
	{ "PROPFIND", "/o/r.git/", METH },
	{ "LOCK", "/o/r.git/info/refs", METH },
	{ "UNLOCK", "/o/r.git/info/refs", METH },
	{ "MOVE", "/o/r.git/x", METH },
	{ "COPY", "/o/r.git/x", METH },
	{ "PATCH", "/o/r", METH },
	{ "OPTIONS", "/o/r.git/", METH },
	{ "get", "/o/r.git/info/refs?service=git-upload-pack", METH },
	{ "POST", "/o/r.git/info/refs?service=git-upload-pack", METH },
	{ "POST", "/api/graphql", METH },
	{ "POST", "/o/r.git/git-upload-pack/", METH },
	{ "POST", "/o/r.git/Git-Upload-Pack", METH },
};

/* The git preset: fetch passes, push and writes do not, however spelt. */
static void
test_policy_git(void)
{
	const struct git_vec		*v;
	const struct policy_rule	*git, *web;
	struct moat_config		*c;
	struct policy_decision		 d;
	const char			*detail;
	enum policy_reason		 r;
	size_t				 i, len;
	char				*p;

	c = pol_load("{" LISTEN ", \"policy\": {\"rules\": [\n"
	    "{\"name\": \"git\", \"action\": \"allow\", \"hosts\": "
	    "[\"git.example\"], \"git\": \"read-only\"},\n"
	    "{\"name\": \"web\", \"action\": \"allow\", \"hosts\": "
	    "[\"web.example\"]}]}}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	git = pol_rule(c, "git");
	web = pol_rule(c, "web");
	CU_ASSERT_EQUAL(policy_rule_git(git), POLICY_GIT_READ_ONLY);
	CU_ASSERT_EQUAL(policy_rule_git(web), POLICY_GIT_NONE);
	/* The preset makes a tunnel to the host an inspected one. */
	unit_policy_decide(c, "git.example", NULL, 443, NULL, NULL, &d);
	CU_ASSERT_EQUAL(d.flags, POLICY_F_INSPECT);
	unit_policy_decide(c, "web.example", NULL, 443, NULL, NULL, &d);
	CU_ASSERT_EQUAL(d.flags, 0);

	for (i = 0; i < sizeof(git_vectors) / sizeof(*v); i++) {
		v = &git_vectors[i];
		detail = "unset";
		r = policy_git_check(git, v->method, v->path, &detail);
		if (r != v->r)
			fprintf(stderr, "\n  git %s %s: got %s (%s), want %s\n",
			    v->method, v->path, policy_reason_str(r),
			    detail ? detail : "-", policy_reason_str(v->r));
		CU_ASSERT_EQUAL(r, v->r);
		if (v->r == OK) {
			CU_ASSERT_PTR_NULL(detail);
		} else {
			CU_ASSERT_PTR_NOT_NULL(detail);
		}
		/* A rule without the preset lets everything through. */
		CU_ASSERT_EQUAL(policy_git_check(web, v->method, v->path,
		    &detail), OK);
		CU_ASSERT_PTR_NULL(detail);
	}
	CU_ASSERT_EQUAL(policy_git_check(git, "POST",
	    "/o/r.git/git-receive-pack", &detail), POLICY_R_PATH);
	CU_ASSERT_STRING_EQUAL(detail, "git push is denied by the read-only "
	    "preset");
	CU_ASSERT_EQUAL(policy_git_check(git, "GET", "/o/r.git/info/refs?"
	    "service=git-receive-pack", &detail), POLICY_R_PATH);
	CU_ASSERT_STRING_EQUAL(detail, "git push is denied by the read-only "
	    "preset");
	CU_ASSERT_EQUAL(policy_git_check(git, "PUT", "/x", NULL),
	    POLICY_R_METHOD);
	/* A tunnel is decided per request later; no path is refused. */
	CU_ASSERT_EQUAL(policy_git_check(git, NULL, NULL, &detail), OK);
	CU_ASSERT_EQUAL(policy_git_check(git, "GET", NULL, &detail),
	    POLICY_R_PATH);
	CU_ASSERT_EQUAL(policy_git_check(NULL, "PUT", "/", &detail), OK);
	/* Longer than the stack buffer: on the heap, same answers. */
	len = 5 * PATH_STACK_BYTES;
	CU_ASSERT_PTR_NOT_NULL_FATAL(p = malloc(len + 64));
	memset(p, 'a', len);
	p[0] = '/';
	strcpy(p + len, "/info/refs?service=git-receive-pack");
	CU_ASSERT_EQUAL(policy_git_check(git, "GET", p, &detail),
	    POLICY_R_PATH);
	strcpy(p + len, "/info/refs?service=git-upload-pack");
	CU_ASSERT_EQUAL(policy_git_check(git, "GET", p, &detail), OK);
	strcpy(p + len, "/git-receive-pack");
	CU_ASSERT_EQUAL(policy_git_check(git, "POST", p, &detail),
	    POLICY_R_PATH);
	free(p);
	policy_config_unref(c);
}

#undef PUSH
#undef METH

/* policy_explain_decide(): what moatd decides after policy_decide(). */
static void
test_policy_explain_decide(void)
{
	struct policy_explain_target	 e;
	struct policy_decision		 d;
	struct moat_config		*c;
	enum policy_transport		 x;
	const char			*detail, *err;
	struct {
		const char		*target;
		enum policy_verdict	 v;
		enum policy_reason	 r;
		enum policy_transport	 x;
		bool			 tls;
	} const	vec[] = {
		{ "https://api.example/v1", POLICY_ALLOW, OK,
		  POLICY_XPORT_INSPECTED, true },
		{ "api.example:443", POLICY_ALLOW, OK, POLICY_XPORT_INSPECTED,
		  true },
		{ "http://api.example/v1", POLICY_DENY, POLICY_R_NEEDS_TLS,
		  POLICY_XPORT_NONE, false },
		{ "ws://api.example/v1", POLICY_DENY, POLICY_R_NEEDS_TLS,
		  POLICY_XPORT_NONE, false },
		{ "wss://api.example/v1", POLICY_ALLOW, OK,
		  POLICY_XPORT_INSPECTED, true },
		{ "http://plain.example/x", POLICY_ALLOW, OK,
		  POLICY_XPORT_PLAIN, false },
		{ "https://docs.example/", POLICY_ALLOW, OK,
		  POLICY_XPORT_OPAQUE, true },
		{ "docs.example:443", POLICY_ALLOW, OK, POLICY_XPORT_OPAQUE,
		  true },
		{ "http://docs.example/", POLICY_ALLOW, OK, POLICY_XPORT_PLAIN,
		  false },
		{ "POST https://git.example/r.git/git-receive-pack",
		  POLICY_DENY, POLICY_R_PATH, POLICY_XPORT_NONE, true },
		{ "PUT https://git.example/r.git/x", POLICY_DENY,
		  POLICY_R_METHOD, POLICY_XPORT_NONE, true },
		{ "POST https://git.example/r.git/git-upload-pack",
		  POLICY_ALLOW, OK, POLICY_XPORT_INSPECTED, true },
		{ "git.example:443", POLICY_ALLOW, OK, POLICY_XPORT_INSPECTED,
		  true },
		{ "git.example:8443", POLICY_DENY, POLICY_R_PORT,
		  POLICY_XPORT_NONE, true },
	};
	size_t	i;

	c = pol_load("{" LISTEN ",\n"
	    "\"secrets\": {\"K\": {\"env\": \"A\"}, \"P\": {\"env\": \"B\"}},\n"
	    "\"policy\": {\"rules\": [\n"
	    "{\"name\": \"api\", \"action\": \"allow\", \"hosts\": "
	    "[\"api.example\"], \"inject\": [{\"header\": \"X-K\", "
	    "\"value\": \"${K}\"}]},\n"
	    "{\"name\": \"plain\", \"action\": \"allow\", \"hosts\": "
	    "[\"plain.example\"], \"ports\": [80], \"plain_http\": true, "
	    "\"inject\": [{\"placeholders\": [\"P\"]}]},\n"
	    "{\"name\": \"git\", \"action\": \"allow\", \"hosts\": "
	    "[\"git.example\"], \"git\": \"read-only\"},\n"
	    "{\"name\": \"docs\", \"action\": \"allow\", \"hosts\": "
	    "[\"docs.example\"]}]}}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	for (i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
		CU_ASSERT_EQUAL_FATAL(policy_explain_parse(vec[i].target, NULL,
		    &e, &err), 0);
		CU_ASSERT_EQUAL(e.tls, vec[i].tls);
		detail = "unset";
		x = POLICY_XPORT_NONE;
		policy_explain_decide(c, &e, &e.t, &d, &detail, &x);
		if (d.verdict != vec[i].v || d.reason != vec[i].r ||
		    x != vec[i].x)
			fprintf(stderr, "\n  explain %s: got %s %s %d\n",
			    vec[i].target, d.verdict == POLICY_ALLOW ?
			    "allow" : "deny", policy_reason_str(d.reason),
			    (int)x);
		CU_ASSERT_EQUAL(d.verdict, vec[i].v);
		CU_ASSERT_EQUAL(d.reason, vec[i].r);
		CU_ASSERT_EQUAL(x, vec[i].x);
		/* A deny made after policy_decide() says why. */
		if (vec[i].r == POLICY_R_NEEDS_TLS || vec[i].r ==
		    POLICY_R_PATH || vec[i].r == POLICY_R_METHOD) {
			CU_ASSERT_PTR_NOT_NULL(detail);
		}
		if (vec[i].v == POLICY_ALLOW) {
			CU_ASSERT_PTR_NULL(detail);
		}
		free(e.buf);
	}
	policy_config_unref(c);

	/*
	 * Without a CA only rules on port 80 alone may look inside; a TLS
	 * target they allow (https on port 80) cannot be inspected: moatd
	 * refuses it, and so does explain.  With "intercept": false, a deny
	 * rule that must look per request refuses the tunnel too.
	 */
	c = pol_load("{\"listen\": [{\"proto\": \"http\", \"address\": "
	    "\"127.0.0.1:3128\"}], \"policy\": {\"rules\": [\n"
	    "{\"name\": \"a\", \"action\": \"allow\", \"hosts\": "
	    "[\"a.example\"], \"ports\": [80], \"methods\": [\"GET\"]},\n"
	    "{\"name\": \"noput\", \"action\": \"deny\", \"hosts\": [\"*\"], "
	    "\"ports\": [80], \"methods\": [\"PUT\"]},\n"
	    "{\"name\": \"b\", \"action\": \"allow\", \"hosts\": "
	    "[\"b.example\"], \"ports\": [80]}]}}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_EQUAL_FATAL(policy_explain_parse("https://a.example:80/",
	    NULL, &e, &err), 0);
	CU_ASSERT_EQUAL(policy_explain_decide(c, &e, &e.t, &d, &detail, &x),
	    POLICY_DENY);
	CU_ASSERT_EQUAL(d.reason, POLICY_R_NEEDS_INSPECTION);
	CU_ASSERT_STRING_EQUAL(d.rule_name, "a");
	CU_ASSERT_PTR_NOT_NULL(detail);
	CU_ASSERT_EQUAL(x, POLICY_XPORT_NONE);
	free(e.buf);
	CU_ASSERT_EQUAL_FATAL(policy_explain_parse("http://a.example/", NULL,
	    &e, &err), 0);
	CU_ASSERT_EQUAL(policy_explain_decide(c, &e, &e.t, &d, &detail, &x),
	    POLICY_ALLOW);
	CU_ASSERT_EQUAL(x, POLICY_XPORT_PLAIN);
	free(e.buf);
	/* A tunnel to port 80 is plain HTTP: moatd reads it, no CA. */
	CU_ASSERT_EQUAL_FATAL(policy_explain_parse("b.example:80", NULL, &e,
	    &err), 0);
	CU_ASSERT_FALSE(e.tls);
	CU_ASSERT_EQUAL(policy_explain_decide(c, &e, &e.t, &d, &detail, &x),
	    POLICY_ALLOW);
	CU_ASSERT_EQUAL(x, POLICY_XPORT_PLAIN);
	free(e.buf);
	CU_ASSERT_EQUAL(policy_explain_decide(NULL, &e, &e.t, &d, &detail,
	    &x), POLICY_DENY);
	CU_ASSERT_EQUAL(d.reason, POLICY_R_INTERNAL);
	policy_config_unref(c);

	c = pol_load("{" LISTEN ", \"policy\": {\"rules\": [\n"
	    "{\"name\": \"noput\", \"action\": \"deny\", \"hosts\": [\"*\"], "
	    "\"methods\": [\"PUT\"]},\n"
	    "{\"name\": \"o\", \"action\": \"allow\", \"hosts\": "
	    "[\"o.example\"], \"intercept\": false}]}}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_EQUAL_FATAL(policy_explain_parse("o.example:443", NULL, &e,
	    &err), 0);
	CU_ASSERT_EQUAL(policy_explain_decide(c, &e, &e.t, &d, &detail, &x),
	    POLICY_DENY);
	CU_ASSERT_EQUAL(d.reason, POLICY_R_NEEDS_INSPECTION);
	CU_ASSERT_PTR_NOT_NULL(detail);
	free(e.buf);
	policy_config_unref(c);
}

/* ------------------------------------------------------------------ */

struct pol_buf {
	char	*p;
	size_t	 n, cap;
};

static void	pol_printf(struct pol_buf *b, const char *fmt, ...)
		    __attribute__((format(printf, 2, 3)));

static void
pol_printf(struct pol_buf *b, const char *fmt, ...)
{
	va_list	ap;
	int	n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
		va_end(ap);
		CU_ASSERT_FATAL(n >= 0);
		if ((size_t)n < b->cap - b->n)
			break;
		b->cap = b->cap * 2 + (size_t)n;
		CU_ASSERT_PTR_NOT_NULL_FATAL(b->p = realloc(b->p, b->cap));
	}
	b->n += (size_t)n;
}

/*
 * 1,000,000 rules: 8 in 10 exact names, 1 in 10 a wildcard, 1 in 10 a
 * /32 in 11.0.0.0/8 (public), then one deny rule.  The config goes
 * through the loader like any other; decisions must be right at both ends.
 */
static void
test_policy_million(void)
{
	struct pol_buf		 b = { NULL, 0, 0 };
	struct policy_diags	 d;
	struct moat_config	*c;
	char			 name[64], addr[32];
	unsigned		 i;

	b.cap = (size_t)POL_BIG_RULES * 64;
	CU_ASSERT_PTR_NOT_NULL_FATAL(b.p = malloc(b.cap));
	pol_printf(&b, "{" LISTEN ", \"secrets\": {\"S\": {\"env\": "
	    "\"S\"}}, \"policy\": {\"rules\": [\n");
	for (i = 0; i < POL_BIG_RULES; i++) {
		if (i % 10 < 8)
			pol_printf(&b, "{\"action\":\"allow\",\"hosts\":"
			    "[\"h%u.example.com\"]},\n", i);
		else if (i % 10 == 8)
			pol_printf(&b, "{\"action\":\"allow\",\"hosts\":"
			    "[\"*.w%u.example.net\"],\"ports\":[443]},\n", i);
		else
			pol_printf(&b, "{\"action\":\"allow\",\"cidrs\":"
			    "[\"11.%u.%u.%u\"]},\n", i >> 16, (i >> 8) & 0xff,
			    i & 0xff);
	}
	pol_printf(&b, "{\"name\":\"deny-h5\",\"action\":\"deny\",\"hosts\":"
	    "[\"h5.example.com\"]},\n");
	pol_printf(&b, "{\"name\":\"inj\",\"action\":\"allow\",\"hosts\":"
	    "[\"h7.example.com\"],\"ports\":[443],\"inject\":"
	    "[{\"placeholders\":[\"S\"]}]}]}}\n");

	policy_diags_init(&d);
	c = policy_config_load("big.json", b.p, b.n, &d);
	free(b.p);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_EQUAL(d.n, 0);
	policy_diags_clear(&d);
	CU_ASSERT_EQUAL(policy_rule_count(c->policy), POL_BIG_RULES + 2);
	/* Binding walks the same candidates as a decision. */
	CU_ASSERT_TRUE(pol_bound(c, "S", "h7.example.com", NULL, 443));
	CU_ASSERT_FALSE(pol_bound(c, "S", "h7.example.com", NULL, 80));
	CU_ASSERT_FALSE(pol_bound(c, "S", "h8.example.com", NULL, 443));
	CU_ASSERT_FALSE(pol_bound(c, "S", "x.w8.example.net", NULL, 443));
	CU_ASSERT_FALSE(pol_bound(c, "S", "11.0.0.9", NULL, 443));

	pol_expect(c, "h1.example.com", NULL, 443, NULL, NULL, POLICY_ALLOW,
	    OK, "rule-1");
	pol_expect(c, "H999997.example.com.", NULL, 80, NULL, NULL,
	    POLICY_ALLOW, OK, "rule-999997");
	pol_expect(c, "h5.example.com", NULL, 443, NULL, NULL, POLICY_DENY,
	    POLICY_R_DENIED_BY_RULE, "deny-h5");
	pol_expect(c, "x.y.w999998.example.net", NULL, 443, NULL, NULL,
	    POLICY_ALLOW, OK, "rule-999998");
	pol_expect(c, "x.w8.example.net", NULL, 443, NULL, NULL, POLICY_ALLOW,
	    OK, "rule-8");
	/* 8 is a wildcard rule; 11.0.0.8 is in no cidr rule. */
	pol_expect(c, "h8.example.com", "11.0.0.8", 443, NULL, NULL,
	    POLICY_DENY, POLICY_R_NO_RULE, NULL);
	pol_expect(c, "h8.example.com", NULL, 22, NULL, NULL, POLICY_DENY,
	    POLICY_R_NO_RULE, NULL);
	pol_expect(c, "x.w999998.example.net", "11.0.0.8", 80, NULL, NULL,
	    POLICY_DENY, POLICY_R_PORT, "rule-999998");
	pol_expect(c, "x.w999998.example.net", NULL, 22, NULL, NULL,
	    POLICY_DENY, POLICY_R_PORT, "rule-999998");
	snprintf(addr, sizeof(addr), "11.%u.%u.%u", 999999u >> 16,
	    (999999u >> 8) & 0xff, 999999u & 0xff);
	pol_expect(c, addr, NULL, 443, NULL, NULL, POLICY_ALLOW, OK,
	    "rule-999999");
	pol_expect(c, "11.0.0.9", NULL, 80, NULL, NULL, POLICY_ALLOW, OK,
	    "rule-9");
	pol_expect(c, "11.0.0.8", NULL, 80, NULL, NULL, POLICY_DENY,
	    POLICY_R_NO_RULE, NULL);
	/* A resolved name: candidates from its name and its address. */
	pol_expect(c, "h3.example.com", "11.0.0.19", 443, NULL, NULL,
	    POLICY_ALLOW, OK, "rule-3");
	pol_expect(c, "h5.example.com", "11.0.0.19", 443, NULL, NULL,
	    POLICY_DENY, POLICY_R_DENIED_BY_RULE, "deny-h5");
	/* Unknown names are denied before resolution: cidr rules open
	 * addresses, not names. */
	pol_expect(c, "nowhere.example.org", NULL, 443, NULL, NULL,
	    POLICY_DENY, POLICY_R_NO_RULE, NULL);
	/* Every hundred-thousandth exact rule, by name. */
	for (i = 0; i < POL_BIG_RULES; i += 100003) {
		char	rule[32];

		if (i % 10 >= 8 || i == 5)
			continue;
		snprintf(name, sizeof(name), "h%u.example.com", i);
		snprintf(rule, sizeof(rule), "rule-%u", i);
		pol_expect(c, name, NULL, 443, NULL, NULL, POLICY_ALLOW, OK,
		    rule);
	}
	policy_config_unref(c);
}

/*
 * POLICY_F_WILDCARD: set when the client chose the name under a wildcard
 * or "*" (the proxy budgets those), not when an applying allow rule
 * names it exactly, nor for addresses.
 */
static void
test_policy_wildcard_flag(void)
{
	struct moat_config	*c;
	struct policy_decision	 d;

	c = pol_load("{\"listen\": [{\"proto\": \"http\", \"address\": "
	    "\"127.0.0.1:3128\"}], \"policy\": {\"allow_private\": "
	    "[\"192.0.2.0/24\"], \"rules\": ["
	    "{\"name\": \"wild\", \"action\": \"allow\", \"hosts\": "
	    "[\"*.example.com\", \"exact.example.net\"]},"
	    "{\"name\": \"api\", \"action\": \"allow\", \"hosts\": "
	    "[\"api.example.com\"], \"ports\": [443]},"
	    "{\"name\": \"star\", \"action\": \"allow\", \"hosts\": "
	    "[\"*\"], \"ports\": [8080]},"
	    "{\"name\": \"net\", \"action\": \"allow\", \"cidrs\": "
	    "[\"192.0.2.0/24\"], \"ports\": [9090]},"
	    "{\"name\": \"no\", \"action\": \"deny\", \"hosts\": "
	    "[\"bad.example.com\"]}]}}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);

	/* Under the wildcard: the client chose the labels. */
	CU_ASSERT_EQUAL(unit_policy_decide(c, "x1.example.com", NULL, 443,
	    NULL, NULL, &d), POLICY_ALLOW);
	CU_ASSERT(d.flags & POLICY_F_WILDCARD);
	CU_ASSERT_STRING_EQUAL(d.rule_name, "wild");
	/* So at port 0 (the DNS listener) and with an address. */
	unit_policy_decide(c, "a.b.example.com", NULL, 0, NULL, NULL, &d);
	CU_ASSERT(d.verdict == POLICY_ALLOW && (d.flags & POLICY_F_WILDCARD));
	/* Named exactly by the same rule: no. */
	unit_policy_decide(c, "exact.example.net", NULL, 443, NULL, NULL, &d);
	CU_ASSERT(d.verdict == POLICY_ALLOW && !(d.flags & POLICY_F_WILDCARD));
	/* Allowed by the wildcard rule (first in file order), but another
	 * applying rule names it: the name is the policy's, not the
	 * client's. */
	unit_policy_decide(c, "api.example.com", NULL, 443, NULL, NULL, &d);
	CU_ASSERT(d.verdict == POLICY_ALLOW && !(d.flags & POLICY_F_WILDCARD));
	CU_ASSERT_STRING_EQUAL(d.rule_name, "wild");
	/* ... unless that rule does not apply (port 80). */
	unit_policy_decide(c, "api.example.com", NULL, 80, NULL, NULL, &d);
	CU_ASSERT(d.verdict == POLICY_ALLOW && (d.flags & POLICY_F_WILDCARD));
	/* "*" is a wildcard too. */
	unit_policy_decide(c, "anything.example.org", NULL, 8080, NULL, NULL,
	    &d);
	CU_ASSERT(d.verdict == POLICY_ALLOW && (d.flags & POLICY_F_WILDCARD));
	CU_ASSERT_STRING_EQUAL(d.rule_name, "star");
	/* Denials and addresses never carry it. */
	unit_policy_decide(c, "bad.example.com", NULL, 443, NULL, NULL, &d);
	CU_ASSERT(d.verdict == POLICY_DENY && !(d.flags & POLICY_F_WILDCARD));
	unit_policy_decide(c, "example.com", NULL, 443, NULL, NULL, &d);
	CU_ASSERT(d.verdict == POLICY_DENY && !(d.flags & POLICY_F_WILDCARD));
	unit_policy_decide(c, "192.0.2.7", NULL, 9090, NULL, NULL, &d);
	CU_ASSERT(d.verdict == POLICY_ALLOW && !(d.flags & POLICY_F_WILDCARD));
	policy_config_unref(c);
}

/*
 * Audit mode: the rules' refusals become would-denies (verdict allow,
 * the reason kept, the rule that would refuse named, a budgeted name);
 * the built-in deny sets and the refusals that are not the rules' stay.
 */
static void
test_policy_waive(void)
{
	static const enum policy_reason	 stay[] = {
		POLICY_R_PRIVATE_ADDRESS, POLICY_R_METADATA,
		POLICY_R_SECRET_LEAK, POLICY_R_SECRET_UNSAFE,
		POLICY_R_NEEDS_TLS, POLICY_R_DNS_BUDGET, POLICY_R_SNI_MISMATCH,
		POLICY_R_BAD_REQUEST, POLICY_R_LIMIT, POLICY_R_AUTH,
		POLICY_R_AUDIT_UNAVAILABLE, POLICY_R_SANDBOX_REFUSED,
		POLICY_R_INTERNAL, POLICY_R_TLS, POLICY_R_TIMEOUT,
		POLICY_R_DNS_FAILURE, POLICY_R_UPSTREAM_UNREACHABLE,
		POLICY_R_SHUTDOWN, POLICY_R_QUOTA_SECRET, POLICY_R_ALLOWED
	};
	static const enum policy_reason	 pass[] = {
		POLICY_R_NO_RULE, POLICY_R_DENIED_BY_RULE, POLICY_R_PORT,
		POLICY_R_METHOD, POLICY_R_PATH, POLICY_R_METHOD_OVERRIDE,
		POLICY_R_BODY_ON_GET, POLICY_R_NEEDS_INSPECTION,
		POLICY_R_PROTOCOL, POLICY_R_RATE, POLICY_R_QUOTA_BYTES,
		POLICY_R_DNS_DENIED
	};
	struct moat_config	*c;
	struct policy_decision	 d, keep;
	size_t			 i;

	c = pol_load("{" LISTEN ", \"policy\": {\"rules\": ["
	    "{\"name\": \"api\", \"action\": \"allow\", \"hosts\": "
	    "[\"api.example.com\"], \"ports\": [443], \"methods\": "
	    "[\"GET\"]},"
	    "{\"name\": \"paste\", \"action\": \"deny\", \"hosts\": "
	    "[\"*.paste.example\"]}]}}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	for (i = 0; i < sizeof(stay) / sizeof(stay[0]); i++)
		CU_ASSERT_FALSE(policy_reason_waivable(stay[i]));
	for (i = 0; i < sizeof(pass) / sizeof(pass[0]); i++)
		CU_ASSERT_TRUE(policy_reason_waivable(pass[i]));
	CU_ASSERT_FALSE(policy_reason_waivable(POLICY_R__COUNT));
	CU_ASSERT_FALSE(policy_waive(NULL));

	/* no rule: allowed, no rule named, the name budgeted */
	unit_policy_decide(c, "other.example", NULL, 443, NULL, NULL, &d);
	CU_ASSERT_EQUAL(d.reason, POLICY_R_NO_RULE);
	CU_ASSERT_TRUE(policy_waive(&d));
	CU_ASSERT_EQUAL(d.verdict, POLICY_ALLOW);
	CU_ASSERT_EQUAL(d.reason, POLICY_R_ALLOWED);
	CU_ASSERT_EQUAL(d.would_deny, POLICY_R_NO_RULE);
	CU_ASSERT_PTR_NULL(d.rule_name);
	CU_ASSERT_EQUAL(d.flags, POLICY_F_WILDCARD);
	/* a second waive keeps the first reason */
	keep = d;
	CU_ASSERT_TRUE(policy_waive(&d));
	CU_ASSERT_EQUAL(memcmp(&d, &keep, sizeof(d)), 0);
	/* a deny rule and a port: the rule that would refuse is named */
	unit_policy_decide(c, "x.paste.example", NULL, 443, NULL, NULL, &d);
	CU_ASSERT_EQUAL(d.flags, 0);	/* under a wildcard: not named */
	CU_ASSERT_TRUE(policy_waive(&d));
	CU_ASSERT_EQUAL(d.would_deny, POLICY_R_DENIED_BY_RULE);
	CU_ASSERT_STRING_EQUAL(d.rule_name, "paste");
	CU_ASSERT_EQUAL(d.flags, POLICY_F_WILDCARD);
	/* a name a rule spells out is not the client's choice: no budget */
	unit_policy_decide(c, "api.example.com", NULL, 8443, NULL, NULL, &d);
	CU_ASSERT_EQUAL(d.flags, POLICY_F_NAMED);
	CU_ASSERT_TRUE(policy_waive(&d));
	CU_ASSERT_EQUAL(d.would_deny, POLICY_R_PORT);
	CU_ASSERT_STRING_EQUAL(d.rule_name, "api");
	CU_ASSERT_EQUAL(d.flags, 0);
	unit_policy_decide(c, "api.example.com", NULL, 443, "POST", "/", &d);
	CU_ASSERT_TRUE(policy_waive(&d));
	CU_ASSERT_EQUAL(d.would_deny, POLICY_R_METHOD);
	/* an allow is left alone */
	unit_policy_decide(c, "api.example.com", NULL, 443, "GET", "/", &d);
	keep = d;
	CU_ASSERT_FALSE(policy_waive(&d));
	CU_ASSERT_EQUAL(memcmp(&d, &keep, sizeof(d)), 0);
	CU_ASSERT_EQUAL(d.would_deny, POLICY_R_ALLOWED);
	/* the built-in deny sets stay, whatever the rules say */
	unit_policy_decide(c, "metadata.google.internal", NULL, 80, NULL,
	    NULL, &d);
	CU_ASSERT_EQUAL(d.reason, POLICY_R_METADATA);
	CU_ASSERT_FALSE(policy_waive(&d));
	CU_ASSERT_EQUAL(d.verdict, POLICY_DENY);
	unit_policy_decide(c, "other.example", "169.254.169.254", 80, NULL,
	    NULL, &d);
	CU_ASSERT_FALSE(policy_waive(&d));
	CU_ASSERT_EQUAL(d.reason, POLICY_R_METADATA);
	unit_policy_decide(c, "other.example", "10.1.2.3", 443, NULL, NULL,
	    &d);
	CU_ASSERT_FALSE(policy_waive(&d));
	CU_ASSERT_EQUAL(d.reason, POLICY_R_PRIVATE_ADDRESS);
	CU_ASSERT_EQUAL(d.verdict, POLICY_DENY);
	policy_config_unref(c);
}

void
test_policy_register(void)
{
	CU_pSuite	s;

	if ((s = CU_add_suite("policy", NULL, NULL)) != NULL) {
		CU_add_test(s, "deny sets at range boundaries",
		    test_policy_deny_bounds);
		CU_add_test(s, "denied names", test_policy_deny_names);
		CU_add_test(s, "allow_private carve-outs",
		    test_policy_allow_private);
		CU_add_test(s, "IPv6 forms embedding IPv4", test_policy_embedded);
		CU_add_test(s, "deny precedence", test_policy_precedence);
		CU_add_test(s, "port, method, path reasons",
		    test_policy_reasons);
		CU_add_test(s, "path normalisation", test_policy_paths);
		CU_add_test(s, "wide form of paths", test_policy_wide);
		CU_add_test(s, "deny rules are not dodged",
		    test_policy_deny_dodges);
		CU_add_test(s, "strict_methods", test_policy_strict_methods);
		CU_add_test(s, "addr == NULL: pending", test_policy_pending);
		CU_add_test(s, "reason strings", test_policy_reason_strings);
		CU_add_test(s, "explain targets", test_policy_explain);
		CU_add_test(s, "protocols", test_policy_protocols);
		CU_add_test(s, "secret binding", test_policy_bound);
		CU_add_test(s, "git read-only preset", test_policy_git);
		CU_add_test(s, "explain: inspection, git, needs-tls",
		    test_policy_explain_decide);
		CU_add_test(s, "names a wildcard lets the client choose",
		    test_policy_wildcard_flag);
		CU_add_test(s, "audit mode: would-denies", test_policy_waive);
	}
	/* Its own suite, so a slow run (valgrind) can leave it out. */
	if ((s = CU_add_suite("policy_scale", NULL, NULL)) != NULL)
		CU_add_test(s, "1,000,000 rules", test_policy_million);
}
