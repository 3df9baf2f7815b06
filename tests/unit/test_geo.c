/*
 * test_geo.c - "geoip" databases, deny rules by "countries" and "asns".
 *
 * The suite writes two tiny MaxMind DB files with
 * tests/integration/helpers/mkmmdb.py (Debian ships no MMDB writer), then
 * checks lookups, decisions (a name allowed by a host rule refused at an
 * address in a denied country, ports of a geo rule, unknown addresses,
 * IPv6), the config errors, each at its line and column, and that a
 * database file truncated in place after loading changes nothing (the
 * mapping is of a sealed private copy: no SIGBUS), and what is never
 * copied: a FIFO, a file over 2 GiB.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "policy/policy.h"
#include "policyio/policyio.h"
#include "tests/unit/unit.h"

#define GEO_PATH_MAX	1024
#define GEO_LINE_MAX	1024

static char	geo_dir[GEO_PATH_MAX];
static bool	geo_ready;

static int	geo_setup(void);
static int	geo_teardown(void);
static struct moat_config	*geo_load(const char *rules, struct policy_diags *d);
static void	geo_expect(const struct moat_config *c, const char *name,
		    const char *addr, uint16_t port, enum policy_verdict v,
		    const char *rule, const char *cc, uint32_t asn);
static void	test_geo_lookup(void);
static void	test_geo_decide(void);
static void	test_geo_errors(void);
static void	test_geo_rewritten(void);
static void	test_geo_loader(void);

/* Writes the databases; a missing python3 fails the suite, loudly. */
static int
geo_setup(void)
{
	const char	*src = getenv("MOAT_SRCDIR"), *end;
	char		 tool[GEO_PATH_MAX], cmd[4 * GEO_PATH_MAX + 512];
	char		 tmpl[] = "/tmp/moat-geo.XXXXXX";

	if (src != NULL)
		snprintf(tool, sizeof(tool), "%s/tests/integration/helpers/"
		    "mkmmdb.py", src);
	else {
		end = strstr(__FILE__, "tests/unit/test_geo.c");
		snprintf(tool, sizeof(tool), "%.*stests/integration/helpers/"
		    "mkmmdb.py", end != NULL ? (int)(end - __FILE__) : 0,
		    __FILE__);
	}
	if (mkdtemp(tmpl) == NULL)
		return -1;
	snprintf(geo_dir, sizeof(geo_dir), "%s", tmpl);
	snprintf(cmd, sizeof(cmd),
	    "python3 '%s' --type country '%s/c.mmdb' 198.51.100.0/24=KP "
	    "198.51.100.128/25=US 203.0.113.0/24=DE 2001:db8:1::/48=IR && "
	    "python3 '%s' --type asn '%s/a.mmdb' 203.0.113.0/24=64500 "
	    "198.51.100.0/24=64501", tool, geo_dir, tool, geo_dir);
	if (system(cmd) != 0) {
		fprintf(stderr, "\n  cannot write the test databases with "
		    "%s (python3 needed)\n", tool);
		return -1;
	}
	geo_ready = true;
	return 0;
}

static int
geo_teardown(void)
{
	char	p[GEO_PATH_MAX + 16];

	if (geo_dir[0] == '\0')
		return 0;
	snprintf(p, sizeof(p), "%s/c.mmdb", geo_dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/a.mmdb", geo_dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/rw.mmdb", geo_dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/fifo", geo_dir);
	unlink(p);
	rmdir(geo_dir);
	return 0;
}

/* A config with both databases and the given rules (a JSON array body). */
static struct moat_config *
geo_load(const char *rules, struct policy_diags *d)
{
	char	json[2 * GEO_PATH_MAX + 4096];
	int	n;

	n = snprintf(json, sizeof(json),
	    "{\"listen\": [{\"proto\": \"http\", \"address\": "
	    "\"127.0.0.1:3128\"}],\n"
	    "\"geoip\": {\"country_db\": \"%s/c.mmdb\",\n"
	    "  \"asn_db\": \"%s/a.mmdb\"},\n"
	    "\"policy\": {\"allow_private\": [\"198.51.100.0/24\", "
	    "\"203.0.113.0/24\", \"2001:db8::/32\"],\n"
	    "\"rules\": [%s]}}\n", geo_dir, geo_dir, rules);
	CU_ASSERT_FATAL(n > 0 && (size_t)n < sizeof(json));
	policy_diags_init(d);
	return policy_config_load_opts("geo.json", json, (size_t)n,
	    &policyio_load_opts, d);
}

static void
geo_expect(const struct moat_config *c, const char *name, const char *addr,
    uint16_t port, enum policy_verdict v, const char *rule, const char *cc,
    uint32_t asn)
{
	struct policy_decision	d;

	unit_policy_decide(c, name, addr, port, NULL, NULL, &d);
	if (d.verdict != v || (rule == NULL) != (d.rule_name == NULL) ||
	    (rule != NULL && strcmp(rule, d.rule_name) != 0) ||
	    strcmp(d.geo.country, cc) != 0 || d.geo.asn != asn)
		fprintf(stderr, "\n  %s %s:%u: got %s rule %s country '%s' AS "
		    "%u", name ? name : "-", addr ? addr : "-", port,
		    d.verdict == POLICY_ALLOW ? "allow" : "deny",
		    d.rule_name ? d.rule_name : "-", d.geo.country,
		    d.geo.asn);
	CU_ASSERT_EQUAL(d.verdict, v);
	if (rule == NULL) {
		CU_ASSERT_PTR_NULL(d.rule_name);
	} else if (d.rule_name != NULL) {
		CU_ASSERT_STRING_EQUAL(d.rule_name, rule);
	} else {
		CU_FAIL("no rule");
	}
	CU_ASSERT_STRING_EQUAL(d.geo.country, cc);
	CU_ASSERT_EQUAL(d.geo.asn, asn);
	if (d.verdict == POLICY_DENY && rule != NULL)
		CU_ASSERT_EQUAL(d.reason, POLICY_R_DENIED_BY_RULE);
}

static void
test_geo_lookup(void)
{
	static const struct {
		const char	*addr;
		const char	*cc;
		uint32_t	 asn;
	} v[] = {
		{ "198.51.100.7", "KP", 64501 },
		{ "198.51.100.200", "US", 64501 },	/* the /25 inside */
		{ "203.0.113.9", "DE", 64500 },
		{ "2001:db8:1::5", "IR", 0 },
		{ "2001:db8:2::5", "", 0 },
		{ "192.0.2.1", "", 0 },
	};
	struct policy_diags	 d;
	struct moat_config	*c;
	struct policy_host	 h;
	struct policy_geo	 g;
	const char		*err;
	size_t			 i;

	static const char	*plain = "{\"listen\": [], \"policy\": "
	    "{\"rules\": []}}";

	CU_ASSERT_FATAL(geo_ready);
	c = geo_load("{\"action\": \"allow\", \"hosts\": [\"a.example\"]}",
	    &d);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT(policy_geo_enabled(c->policy));
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		CU_ASSERT_EQUAL_FATAL(policy_host_normalise(v[i].addr,
		    strlen(v[i].addr), &h, &err), 0);
		policy_geo_lookup(c->policy, &h.addr, &g);
		CU_ASSERT_STRING_EQUAL(g.country, v[i].cc);
		CU_ASSERT_EQUAL(g.asn, v[i].asn);
	}
	policy_config_unref(c);
	policy_diags_clear(&d);

	/* No "geoip": nothing is looked up. */
	policy_diags_init(&d);
	c = policy_config_load_opts("plain.json", plain, strlen(plain),
	    &policyio_load_opts, &d);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT(!policy_geo_enabled(c->policy));
	policy_config_unref(c);
	policy_diags_clear(&d);
}

static void
test_geo_decide(void)
{
	struct policy_diags	 d;
	struct moat_config	*c;
	char			 line[GEO_LINE_MAX];
	size_t			 i;

	CU_ASSERT_FATAL(geo_ready);
	c = geo_load(
	    "{\"name\": \"web\", \"action\": \"allow\", \"hosts\": "
	    "[\"*.example.com\"], \"ports\": [443, 25]},\n"
	    "{\"name\": \"nets\", \"action\": \"allow\", \"cidrs\": "
	    "[\"198.51.100.0/24\", \"203.0.113.0/24\", \"2001:db8::/32\"], "
	    "\"ports\": [443]},\n"
	    "{\"name\": \"no-kp-ir\", \"action\": \"deny\", \"countries\": "
	    "[\"kp\", \"IR\"]},\n"
	    "{\"name\": \"no-mail-de\", \"action\": \"deny\", \"countries\": "
	    "[\"DE\"], \"ports\": [25]},\n"
	    "{\"name\": \"no-as\", \"action\": \"deny\", \"asns\": "
	    "[\"as64500\"], \"hosts\": [\"bad.example.com\"]}", &d);
	for (i = 0; i < d.n; i++)
		fprintf(stderr, "\n  %s", policy_diag_format(&d, i, line,
		    sizeof(line)));
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);

	/* A name before resolution: only its rules count. */
	geo_expect(c, "api.example.com", NULL, 443, POLICY_ALLOW, "web", "",
	    0);
	/* Its addresses: a denied country wins over the host rule. */
	geo_expect(c, "api.example.com", "198.51.100.7", 443, POLICY_DENY,
	    "no-kp-ir", "KP", 64501);
	geo_expect(c, "api.example.com", "198.51.100.200", 443, POLICY_ALLOW,
	    "web", "US", 64501);
	geo_expect(c, "api.example.com", "2001:db8:1::1", 443, POLICY_DENY,
	    "no-kp-ir", "IR", 0);
	/* Not in the database: no geo rule applies. */
	geo_expect(c, "api.example.com", "2001:db8:9::1", 443, POLICY_ALLOW,
	    "web", "", 0);
	/* A geo rule's ports: DE is refused on 25 only. */
	geo_expect(c, "api.example.com", "203.0.113.5", 25, POLICY_DENY,
	    "no-mail-de", "DE", 64500);
	/* ... and on 443 its AS is refused, for any name. */
	geo_expect(c, "api.example.com", "203.0.113.5", 443, POLICY_DENY,
	    "no-as", "DE", 64500);
	/* IP literals, allowed by cidrs. */
	geo_expect(c, "198.51.100.9", NULL, 443, POLICY_DENY, "no-kp-ir",
	    "KP", 64501);
	geo_expect(c, "198.51.100.129", NULL, 443, POLICY_ALLOW, "nets", "US",
	    64501);
	/* An AS rule with hosts too: the name, or an address in the AS. */
	geo_expect(c, "bad.example.com", NULL, 443, POLICY_DENY, "no-as", "",
	    0);
	geo_expect(c, "203.0.113.77", NULL, 443, POLICY_DENY, "no-as", "DE",
	    64500);
	policy_config_unref(c);
	policy_diags_clear(&d);
}

static void
test_geo_errors(void)
{
	static const char *const want[] = {
		"geo.json:5:58: policy.rules[0].countries: \"countries\" can "
		    "only deny",
		"geo.json:6:48: policy.rules[1].countries[0]: \"UK\" is no ISO "
		    "3166-1 code",
		"geo.json:6:54: policy.rules[1].countries[1]: \"K1\" is not a "
		    "country code",
		"geo.json:6:70: policy.rules[1].asns[0]: 0 is not an AS number",
		"geo.json:6:73: policy.rules[1].asns[1]: expected an AS number",
		"geo.json:6:79: policy.rules[1].asns[2]: 4294967296 is not an "
		    "AS number",
	};
	static const char	*nodb = "{\"listen\": [], \"policy\": "
	    "{\"rules\": [{\"action\": \"deny\", \"countries\": [\"KP\"]}]}}";
	struct policy_diags	 d;
	struct moat_config	*c;
	char			 line[GEO_LINE_MAX];
	size_t			 i, k;
	bool			 found;

	CU_ASSERT_FATAL(geo_ready);
	c = geo_load(
	    "{\"name\": \"g1\", \"action\": \"allow\", \"countries\": [\"US\"]},\n"
	    "{\"name\": \"g2\", \"action\": \"deny\", \"countries\": [\"UK\", "
	    "\"K1\"], \"asns\": [0, \"AS\", 4294967296]}", &d);
	CU_ASSERT_PTR_NULL(c);
	for (k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
		found = false;
		for (i = 0; i < d.n && !found; i++)
			found = strncmp(policy_diag_format(&d, i, line,
			    sizeof(line)), want[k], strlen(want[k])) == 0;
		if (!found) {
			fprintf(stderr, "\n  missing: %s; got:", want[k]);
			for (i = 0; i < d.n; i++)
				fprintf(stderr, "\n    %s", policy_diag_format(
				    &d, i, line, sizeof(line)));
		}
		CU_ASSERT(found);
	}
	policy_config_unref(c);
	policy_diags_clear(&d);

	/* A rule by country without a country database. */
	policy_diags_init(&d);
	c = policy_config_load_opts("nodb.json", nodb, strlen(nodb),
	    &policyio_load_opts, &d);
	CU_ASSERT_PTR_NULL(c);
	CU_ASSERT(d.n >= 1 && strstr(policy_diag_format(&d, 0, line,
	    sizeof(line)), "\"countries\" needs a database: add \"geoip\"") !=
	    NULL);
	policy_config_unref(c);
	policy_diags_clear(&d);
}

/* A config with only a country database, at PATH. */
static struct moat_config *
geo_load_country(const char *path, struct policy_diags *d)
{
	char	json[GEO_PATH_MAX + 512];
	int	n;

	n = snprintf(json, sizeof(json), "{\"listen\": [], \"geoip\": "
	    "{\"country_db\": \"%s\"}, \"policy\": {\"rules\": []}}\n",
	    path);
	CU_ASSERT_FATAL(n > 0 && (size_t)n < sizeof(json));
	policy_diags_init(d);
	return policy_config_load_opts("rw.json", json, (size_t)n,
	    &policyio_load_opts, d);
}

/* A config naming PATH as its country database is refused, saying WHY. */
static void
geo_refused(const char *path, const char *why)
{
	struct policy_diags	 d;
	struct moat_config	*c;
	char			 line[GEO_LINE_MAX];

	c = geo_load_country(path, &d);
	CU_ASSERT_PTR_NULL(c);
	if (d.n < 1 || strstr(policy_diag_format(&d, 0, line, sizeof(line)),
	    why) == NULL) {
		fprintf(stderr, "\n  %s: wanted \"%s\", got \"%s\"", path, why,
		    d.n >= 1 ? line : "no error");
		CU_FAIL("not refused for that reason");
	}
	policy_config_unref(c);
	policy_diags_clear(&d);
}

static void
test_geo_rewritten(void)
{
	struct policy_diags	 d;
	struct moat_config	*c;
	struct policy_host	 h;
	struct policy_geo	 g;
	const char		*err;
	char			 path[GEO_PATH_MAX + 16], cmd[3 * GEO_PATH_MAX];

	CU_ASSERT_FATAL(geo_ready);
	snprintf(path, sizeof(path), "%s/rw.mmdb", geo_dir);
	snprintf(cmd, sizeof(cmd), "cp '%s/c.mmdb' '%s'", geo_dir, path);
	CU_ASSERT_FATAL(system(cmd) == 0);
	c = geo_load_country(path, &d);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	policy_diags_clear(&d);
	CU_ASSERT_EQUAL_FATAL(policy_host_normalise("198.51.100.7", 12, &h,
	    &err), 0);
	policy_geo_lookup(c->policy, &h.addr, &g);
	CU_ASSERT_STRING_EQUAL(g.country, "KP");
	/* Truncated in place, then rewritten shorter: a mapping of the file
	 * itself would now fault (SIGBUS) or read zeros. */
	CU_ASSERT_FATAL(truncate(path, 0) == 0);
	memset(&g, 0, sizeof(g));
	policy_geo_lookup(c->policy, &h.addr, &g);
	CU_ASSERT_STRING_EQUAL(g.country, "KP");
	CU_ASSERT_FATAL(truncate(path, 16) == 0);
	policy_geo_lookup(c->policy, &h.addr, &g);
	CU_ASSERT_STRING_EQUAL(g.country, "KP");
	policy_config_unref(c);

	/* The emptied file itself is refused at the next load. */
	geo_refused(path, "not a MaxMind DB file");
	/* A file too big for any database (sparse: it costs no disk) is
	 * refused before anything is copied. */
	CU_ASSERT_FATAL(truncate(path, ((off_t)2 << 30) + 1) == 0);
	geo_refused(path, "larger than 2 GiB");
	/* A FIFO is refused at once: no load blocks on a reader. */
	snprintf(path, sizeof(path), "%s/fifo", geo_dir);
	CU_ASSERT_FATAL(mkfifo(path, 0600) == 0);
	geo_refused(path, "not a regular file");
}

/* A loader that opens nothing: it counts its calls and says no. */
static int	geo_stub_calls;
static char	geo_stub_path[GEO_PATH_MAX];

static int
geo_stub_open(const char *path, struct MMDB_s *db, const char **err,
    void *arg)
{
	(void)db;
	geo_stub_calls += *(const int *)arg;
	snprintf(geo_stub_path, sizeof(geo_stub_path), "%s", path);
	*err = "the stub opens nothing";
	return -1;
}

/*
 * The policy opens no database itself: the caller's loader is called with
 * the path as written, its message lands at the path's line and column,
 * and without a loader a config naming a database that exists fails.
 */
static void
test_geo_loader(void)
{
	static const int		 one = 1;
	static const struct policy_load_opts stub = {
		.geo_open = geo_stub_open, .geo_arg = (void *)&one
	};
	static const char	 where[] = "l.json:2:27: geoip.country_db: "
	    "cannot open the GeoIP database ";
	static const char	*text = "{\"listen\": [],\n"
	    "  \"geoip\": {\"country_db\": \"/nowhere/c.mmdb\"}}\n";
	struct policy_diags	 d;
	struct moat_config	*c;
	char			 json[GEO_PATH_MAX + 128], line[GEO_LINE_MAX];
	int			 n;

	geo_stub_calls = 0;
	policy_diags_init(&d);
	c = policy_config_load_opts("l.json", text, strlen(text), &stub, &d);
	CU_ASSERT_PTR_NULL(c);
	CU_ASSERT_EQUAL(geo_stub_calls, 1);
	CU_ASSERT_STRING_EQUAL(geo_stub_path, "/nowhere/c.mmdb");
	/* The error, after the warning that there is no "policy". */
	CU_ASSERT_EQUAL_FATAL(d.nerrors, 1);
	CU_ASSERT_STRING_EQUAL(policy_diag_format(&d, d.n - 1, line,
	    sizeof(line)),
	    "l.json:2:27: geoip.country_db: cannot open the GeoIP database "
	    "\"/nowhere/c.mmdb\": the stub opens nothing");
	policy_diags_clear(&d);

	/* No loader: even a good database is not opened. */
	CU_ASSERT_FATAL(geo_ready);
	n = snprintf(json, sizeof(json), "{\"listen\": [],\n"
	    "  \"geoip\": {\"country_db\": \"%s/c.mmdb\"}}\n", geo_dir);
	CU_ASSERT_FATAL(n > 0 && (size_t)n < sizeof(json));
	policy_diags_init(&d);
	c = policy_config_load("l.json", json, (size_t)n, &d);
	CU_ASSERT_PTR_NULL(c);
	CU_ASSERT_EQUAL_FATAL(d.nerrors, 1);
	CU_ASSERT(strncmp(policy_diag_format(&d, d.n - 1, line,
	    sizeof(line)), where, sizeof(where) - 1) == 0);
	CU_ASSERT(strstr(line, ": this program opens no GeoIP database") !=
	    NULL);
	policy_diags_clear(&d);
	/* The same text with moatd's loader loads. */
	policy_diags_init(&d);
	c = policy_config_load_opts("l.json", json, (size_t)n,
	    &policyio_load_opts, &d);
	CU_ASSERT_PTR_NOT_NULL(c);
	CU_ASSERT(c != NULL && policy_geo_enabled(c->policy));
	policy_config_unref(c);
	policy_diags_clear(&d);
}

void
test_geo_register(void)
{
	CU_pSuite	s;

	if ((s = CU_add_suite("geo", geo_setup, geo_teardown)) == NULL)
		return;
	CU_add_test(s, "country and AS lookups", test_geo_lookup);
	CU_add_test(s, "decisions with countries and asns", test_geo_decide);
	CU_add_test(s, "config errors", test_geo_errors);
	CU_add_test(s, "a database rewritten in place after loading",
	    test_geo_rewritten);
	CU_add_test(s, "databases opened by the caller's loader only",
	    test_geo_loader);
}
