/*
 * allocfail.c - every allocation of the parsers and of the config loader
 * fails, in turn.
 *
 * Linked with -Wl,--wrap for each allocator the code under test calls
 * (nm of proxy/libproxyparse.a and policy/libpolicy.a: malloc, calloc,
 * realloc, reallocarray, strdup, asprintf and vasprintf, the last two as
 * __*_chk under _FORTIFY_SOURCE; strndup in case it comes), with free
 * wrapped too, and with jansson's allocator set to the same counter.
 *
 * For each entry point: run it with allocation N failing, for N = 0, 1,
 * 2, ... until a run asks for no more than N allocations; once with that
 * allocation alone failing (an error path runs on with memory to spare),
 * once with it and every later one (memory has run out: the clean-up must
 * not need any).  A run in which an allocation failed must return an
 * error (never succeed with data missing); the last run must succeed,
 * with the data checked.  Every run must give back every block it took
 * (counted here, so that the plain build checks it too; under
 * --enable-sanitizers LeakSanitizer checks the same at exit, and ASan
 * every access on the error paths).  AF_VERBOSE=1 in the environment
 * says on stderr which allocation each run fails.
 *
 * Entry points that never allocate (the chunked decoder, the SOCKS5, TLS
 * ClientHello and DNS parsers, the protocol peek, the head scanner, host
 * names) are run once with every allocation failing: they must ask for
 * none and still parse.
 *
 * The same counters keep the bytes held (malloc_usable_size) and their
 * peak: a policy of 10,000 one-name rules and one rule of 20,000 names
 * must each load within a bound per rule or name, at the peak of the
 * load and kept after it (the text itself not counted), so that what a
 * rule costs cannot grow back unnoticed.
 *
 * Exit status: 0 if every check held, 1 otherwise (automake's TESTS).
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "policy/policy.h"
#include "policy/config_int.h"
#include "proxy/dns_parse.h"
#include "proxy/http_parse.h"
#include "proxy/proto_peek.h"
#include "proxy/secretscan.h"
#include "proxy/socks5_parse.h"
#include "proxy/tls_parse.h"

/* No entry point comes near this many allocations in one run. */
#define AF_MAX_RUNS	100000

/* The wrappers and what they wrap (ld --wrap). */
void	*__real_malloc(size_t);
void	*__real_calloc(size_t, size_t);
void	*__real_realloc(void *, size_t);
void	*__real_reallocarray(void *, size_t, size_t);
char	*__real_strdup(const char *);
char	*__real_strndup(const char *, size_t);
int	 __real_vasprintf(char **, const char *, va_list);
int	 __real___vasprintf_chk(char **, int, const char *, va_list);
void	 __real_free(void *);
void	*__wrap_malloc(size_t);
void	*__wrap_calloc(size_t, size_t);
void	*__wrap_realloc(void *, size_t);
void	*__wrap_reallocarray(void *, size_t, size_t);
char	*__wrap_strdup(const char *);
char	*__wrap_strndup(const char *, size_t);
int	 __wrap_asprintf(char **, const char *, ...);
int	 __wrap_vasprintf(char **, const char *, va_list);
int	 __wrap___asprintf_chk(char **, int, const char *, ...);
int	 __wrap___vasprintf_chk(char **, int, const char *, va_list);
void	 __wrap_free(void *);

static struct {
	bool	armed;		/* counting (and maybe failing) */
	bool	fail_all;	/* every allocation fails */
	bool	fail_on;	/* allocation fail_at and all after it fail */
	long	fail_at;	/* the allocation to fail, counting from 0 */
	long	asked;		/* allocations asked for while armed */
	long	failed;		/* allocations made to fail */
	long	live;		/* blocks held, armed or not */
	size_t	bytes;		/* ... their usable bytes */
	size_t	peak;		/* the most bytes held since reset */
} af = { .fail_at = -1 };

static int	af_errors;

/* Whether the allocation being asked for is to fail. */
static bool
af_fail(void)
{
	long	n;

	if (!af.armed)
		return false;
	n = af.asked++;
	if (af.fail_all || n == af.fail_at || (af.fail_on && n > af.fail_at)) {
		af.failed++;
		errno = ENOMEM;		/* as malloc(3) says */
		return true;
	}
	return false;
}

static void
af_bytes(size_t add, size_t sub)
{
	af.bytes = af.bytes + add - sub;
	if (af.bytes > af.peak)
		af.peak = af.bytes;
}

static void *
af_took(void *p)
{
	if (p != NULL) {
		af.live++;
		af_bytes(malloc_usable_size(p), 0);
	}
	return p;
}

void *
__wrap_malloc(size_t n)
{
	return af_fail() ? NULL : af_took(__real_malloc(n));
}

void *
__wrap_calloc(size_t n, size_t size)
{
	return af_fail() ? NULL : af_took(__real_calloc(n, size));
}

void *
__wrap_realloc(void *p, size_t n)
{
	size_t	 old = p != NULL ? malloc_usable_size(p) : 0;
	void	*np;

	if (af_fail())
		return NULL;
	np = __real_realloc(p, n);
	if (p == NULL)
		return af_took(np);
	if (np != NULL)
		af_bytes(malloc_usable_size(np), old);
	return np;
}

void *
__wrap_reallocarray(void *p, size_t n, size_t size)
{
	size_t	 old = p != NULL ? malloc_usable_size(p) : 0;
	void	*np;

	if (af_fail())
		return NULL;
	np = __real_reallocarray(p, n, size);
	if (p == NULL)
		return af_took(np);
	if (np != NULL)
		af_bytes(malloc_usable_size(np), old);
	return np;
}

char *
__wrap_strdup(const char *s)
{
	return af_fail() ? NULL : af_took(__real_strdup(s));
}

char *
__wrap_strndup(const char *s, size_t n)
{
	return af_fail() ? NULL : af_took(__real_strndup(s, n));
}

int
__wrap_vasprintf(char **out, const char *fmt, va_list ap)
{
	int	rc;

	if (af_fail())
		return -1;
	if ((rc = __real_vasprintf(out, fmt, ap)) != -1)
		af_took(*out);
	return rc;
}

int
__wrap_asprintf(char **out, const char *fmt, ...)
{
	va_list	ap;
	int	rc;

	va_start(ap, fmt);
	rc = __wrap_vasprintf(out, fmt, ap);
	va_end(ap);
	return rc;
}

int
__wrap___vasprintf_chk(char **out, int flag, const char *fmt, va_list ap)
{
	int	rc;

	if (af_fail())
		return -1;
	if ((rc = __real___vasprintf_chk(out, flag, fmt, ap)) != -1)
		af_took(*out);
	return rc;
}

int
__wrap___asprintf_chk(char **out, int flag, const char *fmt, ...)
{
	va_list	ap;
	int	rc;

	va_start(ap, fmt);
	rc = __wrap___vasprintf_chk(out, flag, fmt, ap);
	va_end(ap);
	return rc;
}

void
__wrap_free(void *p)
{
	if (p != NULL) {
		af.live--;
		af_bytes(0, malloc_usable_size(p));
	}
	__real_free(p);
}

/*
 * jansson's allocator (json_set_alloc_funcs), counted and failed like
 * the others, one at a time: jansson 2.14's lexer ignores a failure to
 * grow its token buffer (lex_save() drops strbuffer_append_byte()'s
 * result), and if the next allocation succeeds it decodes a string whose
 * closing quote was lost, writing past the end of its copy.
 * policy_json_loadb() (policy/jsonload.c), installed over this one on
 * its first load, makes the rest of a load fail once one allocation
 * did; under ASan this loop is what shows it does.
 */
static void *
af_json_malloc(size_t n)
{
	if (af_fail())
		return NULL;
	return af_took(__real_malloc(n));
}

static void
af_json_free(void *p)
{
	__wrap_free(p);
}

static void
af_arm(long fail_at, bool fail_on, bool fail_all)
{
	af.asked = 0;
	af.failed = 0;
	af.fail_at = fail_at;
	af.fail_on = fail_on;
	af.fail_all = fail_all;
	af.armed = true;
}

static void
af_disarm(void)
{
	af.armed = false;
}

static void
af_error(const char *name, const char *fmt, ...)
{
	va_list	ap;

	af_errors++;
	printf("FAIL: %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

/* ------------------------------------------------------------------ */
/* The cases                                                            */
/* ------------------------------------------------------------------ */

/*
 * A case: setup (not counted; may be NULL), run (counted), done (not
 * counted; frees what setup and run made; may be NULL).  run returns 0
 * when it succeeded and its result checked out, AF_ERR when the entry
 * point reported an error as it should, or AF_BAD (after af_error())
 * when something is wrong whatever the allocations did.
 */
#define AF_ERR	(-1)
#define AF_BAD	(-2)

struct af_case {
	const char	*name;
	int		(*setup)(void);
	int		(*run)(void);
	void		(*done)(void);
};

/* Checks inside a run: a broken result is AF_BAD. */
#define AF_CHECK(name, cond) do {					\
	if (!(cond)) {							\
		af_error((name), "%s:%d: %s", __FILE__, __LINE__, #cond);	\
		return AF_BAD;						\
	}								\
} while (0)

/* --- the config loader ---------------------------------------------- */

/*
 * A moatd config with a piece of everything that allocates: listeners of
 * each kind (TCP, IPv6, Unix, authenticated, transparent, DNS), the
 * admin socket, secrets of each source, rules with hosts, wildcards,
 * CIDRs, ports, methods, paths, rates, protocols and the three kinds of
 * injection, allow_private, the TLS files, resolvers and limits.
 */
static const char af_conf_full[] =
"{\n"
"  \"listen\": [\n"
"    {\"proto\": \"http\", \"address\": \"127.0.0.1:3128\",\n"
"     \"sandbox\": \"agent-1\",\n"
"     \"auth\": {\"agent-1\": {\"env\": \"MOAT_PROXY_TOKEN\"}}},\n"
"    {\"proto\": \"socks5\", \"address\": \"[::1]:1080\",\n"
"     \"sandbox\": \"agent-2\", \"connections\": 50},\n"
"    {\"proto\": \"http+socks5\", \"address\": \"unix:/run/moat/proxy.sock\",\n"
"     \"mode\": \"0666\", \"sandbox\": \"builds\"},\n"
"    {\"proto\": \"transparent\", \"address\": \"10.0.0.1:8443\",\n"
"     \"sandbox\": \"builds\"},\n"
"    {\"proto\": \"dns\", \"address\": \"10.0.0.1:53\", \"sandbox\": \"builds\"}\n"
"  ],\n"
"  \"admin\": {\"address\": \"unix:/run/moat/admin.sock\", \"mode\": \"0600\"},\n"
"  \"secrets\": {\n"
"    \"OPENAI_API_KEY\": {\"env\": \"REAL_OPENAI_API_KEY\"},\n"
"    \"ANTHROPIC_API_KEY\": {\"file\": \"/etc/moat/anthropic.key\"},\n"
"    \"GITHUB_TOKEN\": {\"file\": \"/etc/moat/github.token\",\n"
"                     \"sandbox_env\": \"GH_TOKEN\"}\n"
"  },\n"
"  \"policy\": {\n"
"    \"default\": \"deny\",\n"
"    \"allow_private\": [\"10.66.0.0/16\", \"fd66::/16\"],\n"
"    \"rules\": [\n"
"      {\"name\": \"openai\", \"action\": \"allow\",\n"
"       \"hosts\": [\"api.openai.com\"], \"ports\": [443],\n"
"       \"methods\": [\"GET\", \"POST\"],\n"
"       \"paths\": [\"/v1/chat/completions\", \"/v1/models/*\"],\n"
"       \"inject\": [{\"header\": \"Authorization\",\n"
"                   \"value\": \"Bearer ${OPENAI_API_KEY}\"}],\n"
"       \"rate\": {\"requests\": 600, \"per_seconds\": 60}},\n"
"      {\"name\": \"anthropic\", \"action\": \"allow\",\n"
"       \"hosts\": [\"api.anthropic.com\"], \"ports\": [443],\n"
"       \"methods\": [\"POST\"], \"paths\": [\"/v1/messages\"],\n"
"       \"inject\": [{\"header\": \"x-api-key\",\n"
"                   \"value\": \"${ANTHROPIC_API_KEY}\"}]},\n"
"      {\"name\": \"github\", \"action\": \"allow\",\n"
"       \"hosts\": [\"github.com\"], \"ports\": [443], \"git\": \"read-only\",\n"
"       \"inject\": [{\"basic\": {\"user\": \"x-access-token\",\n"
"                              \"password\": \"${GITHUB_TOKEN}\"}}]},\n"
"      {\"name\": \"github-api\", \"action\": \"allow\",\n"
"       \"hosts\": [\"api.github.com\"], \"ports\": [443],\n"
"       \"methods\": [\"GET\"], \"strict_methods\": true,\n"
"       \"inject\": [{\"placeholders\": [\"GITHUB_TOKEN\"],\n"
"                   \"encode\": \"percent\", \"body\": true}]},\n"
"      {\"name\": \"no-uploads\", \"action\": \"deny\", \"hosts\": [\"*\"],\n"
"       \"methods\": [\"PUT\"]},\n"
"      {\"name\": \"lan\", \"action\": \"allow\",\n"
"       \"cidrs\": [\"10.66.0.0/24\", \"fd66::/64\"], \"ports\": [22, 443],\n"
"       \"protocols\": [\"tls\", \"ssh\"], \"intercept\": false},\n"
"      {\"name\": \"docs\", \"action\": \"allow\",\n"
"       \"hosts\": [\"docs.python.org\", \"*.readthedocs.io\"],\n"
"       \"ports\": [80, 443], \"paths\": [\"/en/*\"]}\n"
"    ]\n"
"  },\n"
"  \"tls\": {\"ca_cert\": \"/etc/moat/ca/ca.crt\",\n"
"          \"ca_key\": \"/etc/moat/ca/ca.key\",\n"
"          \"upstream_ca_files\": [\"/etc/ssl/certs/ca-certificates.crt\"],\n"
"          \"extra_ca_files\": [\"/etc/moat/extra.pem\"],\n"
"          \"leaf_cache_entries\": 4096},\n"
"  \"resolver\": {\"servers\": [\"9.9.9.9\", \"[2620:fe::fe]:53\"],\n"
"               \"tries\": 3},\n"
"  \"audit\": {\"path\": \"/var/log/moat/audit.jsonl\",\n"
"            \"on_failure\": \"drop\"},\n"
"  \"timeouts\": {\"idle_tunnel_ms\": 600000},\n"
"  \"limits\": {\"connections\": 50000, \"sandbox_connections\": 1000},\n"
"  \"workers\": 2,\n"
"  \"user\": \"moat\"\n"
"}\n";

/*
 * What moatd loads for a sandbox registered on its admin socket: the
 * sandbox's policy, secrets and connection limit, with the daemon's CA
 * and no listener (proxy/admin.c, admin_config()).
 */
static const char af_conf_sandbox[] =
"{\"listen\": [], \"limits\": {\"sandbox_connections\": 64},\n"
" \"tls\": {\"ca_cert\": \"/etc/moat/ca.crt\", \"ca_key\": \"/etc/moat/ca.key\"},\n"
" \"policy\": {\"default\": \"deny\", \"rules\": [\n"
"  {\"name\": \"pypi\", \"action\": \"allow\", \"ports\": [443],\n"
"   \"hosts\": [\"pypi.org\", \"files.pythonhosted.org\"]},\n"
"  {\"name\": \"npm\", \"action\": \"allow\", \"ports\": [443],\n"
"   \"hosts\": [\"registry.npmjs.org\"],\n"
"   \"inject\": [{\"header\": \"Authorization\",\n"
"               \"value\": \"Bearer ${NPM_TOKEN}\"}]},\n"
"  {\"name\": \"all-get\", \"action\": \"allow\", \"hosts\": [\"*.example\"],\n"
"   \"methods\": [\"GET\", \"HEAD\"]}]},\n"
" \"secrets\": {\"NPM_TOKEN\": {\"file\": \"/etc/moat/npm.token\"}}}\n";

/* A config with an error of most kinds, each of which is reported. */
static const char af_conf_bad[] =
"{\n"
"  \"listen\": [{\"proto\": \"htp\", \"address\": \"127.0.0.1:99999\"},\n"
"             {\"proto\": \"http\", \"address\": \"unix:\", \"mode\": 7}],\n"
"  \"secrets\": {\"K\": {\"env\": \"A\", \"file\": \"/x\"}},\n"
"  \"policy\": {\"default\": \"maybe\", \"rules\": [\n"
"    {\"name\": \"r\", \"action\": \"allow\", \"hosts\": [\"a..b\"],\n"
"     \"paths\": [\"no-slash\"], \"ports\": [0],\n"
"     \"inject\": [{\"header\": \"Host\", \"value\": \"${NOPE}\"}]},\n"
"    {\"name\": \"r\", \"action\": \"allow\", \"cidrs\": [\"10.0.0.1/8\"]}]},\n"
"  \"timeouts\": {\"dns_ms\": -1, \"bogus\": 1},\n"
"  \"unknown\": true\n"
"}\n";

static struct policy_diags	 af_diags;
static struct moat_config	*af_cfg;
static size_t			 af_bad_errors;	/* of af_conf_bad, unarmed */

static int
af_load(const char *name, const char *text, bool good)
{
	char	line[512];
	size_t	i;

	policy_diags_init(&af_diags);
	af_cfg = policy_config_load(name, text, strlen(text), &af_diags);
	if (af_cfg == NULL) {
		AF_CHECK(name, af_diags.nerrors > 0);
		/* Said when nothing failed: the config itself is wrong. */
		for (i = 0; good && af.failed == 0 && i < af_diags.n; i++)
			printf("  %s\n", policy_diag_format(&af_diags, i,
			    line, sizeof(line)));
		return AF_ERR;
	}
	AF_CHECK(name, af_diags.nerrors == 0);
	return 0;
}

static void
af_load_done(void)
{
	policy_config_unref(af_cfg);
	af_cfg = NULL;
	policy_diags_clear(&af_diags);
}

/* The rule a name's decision lands on, or NULL. */
static const char *
af_decide(const struct moat_config *c, const char *name, uint16_t port,
    const char *method, const char *path)
{
	struct policy_decision	d;
	struct policy_target	t;

	memset(&t, 0, sizeof(t));
	t.name = name;
	t.port = port;
	t.method = method;
	t.path = path;
	if (policy_decide(c->policy, &t, &d) != POLICY_ALLOW)
		return NULL;
	return d.rule_name;
}

static int
af_run_conf_full(void)
{
	static const char	 n[] = "config load (moatd, full)";
	const struct moat_config *c;
	const char		*r;
	int			 rc;

	if ((rc = af_load("full.json", af_conf_full, true)) != 0)
		return rc;
	c = af_cfg;
	/* Nothing to warn about: a lost warning would be a silent loss. */
	AF_CHECK(n, af_diags.n == 0);
	AF_CHECK(n, c->nlisten == 5 && c->nsecrets == 3);
	AF_CHECK(n, c->listen[0].nauth == 1 &&
	    strcmp(c->listen[0].sandbox, "agent-1") == 0);
	AF_CHECK(n, c->listen[2].is_unix &&
	    strcmp(c->listen[2].path, "/run/moat/proxy.sock") == 0);
	AF_CHECK(n, c->listen[4].proto == MOAT_PROTO_DNS);
	AF_CHECK(n, c->admin_address != NULL && c->audit_path != NULL &&
	    strcmp(c->audit_path, "/var/log/moat/audit.jsonl") == 0);
	AF_CHECK(n, c->resolver_servers != NULL &&
	    c->resolver_servers[0] != NULL && c->resolver_servers[1] != NULL &&
	    c->resolver_servers[2] == NULL);
	AF_CHECK(n, c->tls.upstream_ca_files != NULL &&
	    c->tls.extra_ca_files != NULL && c->user != NULL);
	AF_CHECK(n, policy_rule_count(c->policy) == 7);
	r = af_decide(c, "api.openai.com", 443, "POST",
	    "/v1/chat/completions");
	AF_CHECK(n, r != NULL && strcmp(r, "openai") == 0);
	r = af_decide(c, "x.readthedocs.io", 443, "GET", "/en/latest/");
	AF_CHECK(n, r != NULL && strcmp(r, "docs") == 0);
	AF_CHECK(n, af_decide(c, "api.openai.com", 443, "PUT", "/") == NULL);
	AF_CHECK(n, af_decide(c, "example.com", 443, "GET", "/") == NULL);
	return 0;
}

static int
af_run_conf_sandbox(void)
{
	static const char	 n[] = "config load (a registered sandbox)";
	const char		*r;
	int			 rc;

	if ((rc = af_load("sandbox builds", af_conf_sandbox, true)) != 0)
		return rc;
	AF_CHECK(n, af_diags.n == 0);
	AF_CHECK(n, af_cfg->nlisten == 0 && af_cfg->nsecrets == 1);
	AF_CHECK(n, policy_rule_count(af_cfg->policy) == 3);
	r = af_decide(af_cfg, "a.b.example", 80, "GET", "/");
	AF_CHECK(n, r != NULL && strcmp(r, "all-get") == 0);
	return 0;
}

/* The same with policy.rules and every rule's lists read apart, two
 * elements a batch: each allocation of those paths fails in turn too. */
static int
af_run_conf_apart(void)
{
	size_t	bytes = config_list_apart_bytes, batch = config_list_batch;
	int	rc;

	config_list_apart_bytes = 0;
	config_list_batch = 2;
	rc = af_run_conf_full();
	config_list_apart_bytes = bytes;
	config_list_batch = batch;
	return rc;
}

/* A bad config always fails: what counts is that nothing leaks or
 * crashes on the way, and that all the errors are there in the end. */
static int
af_setup_conf_bad(void)
{
	struct moat_config	*c;

	policy_diags_init(&af_diags);
	c = policy_config_load("bad.json", af_conf_bad, strlen(af_conf_bad),
	    &af_diags);
	af_bad_errors = af_diags.nerrors;
	policy_config_unref(c);
	policy_diags_clear(&af_diags);
	if (c != NULL || af_bad_errors < 10) {
		af_error("config load (errors)", "the bad config gave %zu "
		    "errors (want 10 or more)", af_bad_errors);
		return -1;
	}
	return 0;
}

static int
af_run_conf_bad(void)
{
	static const char	 n[] = "config load (errors)";
	size_t			 i;

	AF_CHECK(n, af_load("bad.json", af_conf_bad, false) == AF_ERR);
	/* Out of memory may replace a diagnostic's text, never drop it. */
	if (af.failed > 0)
		return AF_ERR;
	AF_CHECK(n, af_diags.nerrors == af_bad_errors &&
	    af_diags.n == af_bad_errors);
	for (i = 0; i < af_diags.n; i++)
		AF_CHECK(n, af_diags.v[i].msg != NULL &&
		    strstr(af_diags.v[i].msg, "out of memory") == NULL);
	return 0;
}

/* --- the compiled policy -------------------------------------------- */

static int
af_setup_cfg(void)
{
	int	rc;

	rc = af_load("full.json", af_conf_full, true);
	if (rc != 0)
		af_error("setup", "the config does not load");
	return rc == 0 ? 0 : -1;
}

static char	af_long_path[3 * 4096];

/* A path longer than the policy's stack buffers: it is normalised on the
 * heap, and out of memory must deny. */
static int
af_run_decide_long(void)
{
	static const char	 n[] = "policy_decide (long path)";
	const char		*r;

	r = af_decide(af_cfg, "x.readthedocs.io", 443, "GET", af_long_path);
	if (r == NULL)
		return AF_ERR;
	AF_CHECK(n, strcmp(r, "docs") == 0);
	return 0;
}

static int
af_run_git_long(void)
{
	static const char	 n[] = "policy_git_check (long path)";
	struct policy_decision	 d;
	struct policy_target	 t;
	enum policy_reason	 rc;
	const char		*detail = NULL;

	memset(&t, 0, sizeof(t));
	t.name = "github.com";
	t.port = 443;
	AF_CHECK(n, policy_decide(af_cfg->policy, &t, &d) == POLICY_ALLOW &&
	    d.rule != NULL);
	rc = policy_git_check(d.rule, "GET", af_long_path, &detail);
	if (rc != POLICY_R_ALLOWED) {
		AF_CHECK(n, rc == POLICY_R_PATH && detail != NULL);
		return AF_ERR;
	}
	AF_CHECK(n, detail == NULL);
	return 0;
}

static int
af_run_allow_private(void)
{
	static const char	 n[] = "policy_config_allow_private";
	struct policy_decision	 d;
	struct policy_target	 t;
	struct policy_addr	 a;
	const char		*err = NULL;
	char			 cidr[64];
	int			 i;

	/* As many as a long `moat run --allow-private ...`: more trie
	 * nodes than the room the config's own left. */
	for (i = 0; i < 40; i++) {
		snprintf(cidr, sizeof(cidr), "fd00:1:%x::/48", i);
		if (policy_config_allow_private(af_cfg, cidr, &err) == -1) {
			AF_CHECK(n, err != NULL);
			return AF_ERR;
		}
	}
	/* Now private-address no longer: the default decides. */
	memset(&a, 0, sizeof(a));
	a.family = AF_INET6;
	AF_CHECK(n, inet_pton(AF_INET6, "fd00:1:27::1", &a.u.v6) == 1);
	memset(&t, 0, sizeof(t));
	t.addr = &a;
	t.port = 443;
	policy_decide(af_cfg->policy, &t, &d);
	AF_CHECK(n, d.reason != POLICY_R_PRIVATE_ADDRESS);
	return 0;
}

static struct policy_explain_target	af_et;

static int
af_run_explain(void)
{
	static const char	 n[] = "policy_explain_parse";
	const char		*err = NULL;

	if (policy_explain_parse("https://api.openai.com/v1/models/x?a=b",
	    "POST", &af_et, &err) == -1) {
		AF_CHECK(n, err != NULL && af_et.buf == NULL);
		return AF_ERR;
	}
	AF_CHECK(n, af_et.buf != NULL && af_et.tls &&
	    strcmp(af_et.t.method, "POST") == 0 &&
	    strcmp(af_et.t.path, "/v1/models/x?a=b") == 0 &&
	    strcmp(af_et.t.name, "api.openai.com") == 0);
	return 0;
}

static void
af_explain_done(void)
{
	free(af_et.buf);
	memset(&af_et, 0, sizeof(af_et));
}

/* --- HTTP heads ----------------------------------------------------- */

static const struct http_limits	af_hlim = { HTTP_REQUEST_LINE_MAX_BYTES,
    HTTP_HEAD_MAX_BYTES, HTTP_HEADER_COUNT_MAX };

static const char af_req[] =
    "POST http://api.example.com:8080/v1/x?y=1 HTTP/1.1\r\n"
    "Host: api.example.com:8080\r\n"
    "Content-Length: 5\r\n"
    "Connection: keep-alive\r\n"
    "X-Extra: a, b\r\n"
    "\r\n";

static const char af_resp[] =
    "HTTP/1.1 200 OK\r\n"
    "Transfer-Encoding: chunked\r\n"
    "Content-Type: text/plain\r\n"
    "\r\n";

static int
af_run_request_head(void)
{
	static const char		 n[] = "http_request_head_parse";
	struct http_request_head	 h;
	const char			*err = NULL;
	int				 rc;

	rc = http_request_head_parse(af_req, sizeof(af_req) - 1, &af_hlim,
	    &h, &err);
	if (rc != HTTP_OK) {
		AF_CHECK(n, rc == HTTP_INVALID && err != NULL &&
		    strcmp(err, "out of memory") == 0);
		return AF_ERR;
	}
	rc = strcmp(h.method, "POST") == 0 && h.form == HTTP_FORM_ABSOLUTE &&
	    strcmp(h.host, "api.example.com") == 0 && h.port == 8080 &&
	    strcmp(h.path, "/v1/x?y=1") == 0 && h.nheaders == 4 &&
	    h.body == HTTP_BODY_LENGTH && h.content_length == 5 &&
	    h.keep_alive;
	http_request_head_free(&h);
	AF_CHECK(n, rc);
	return 0;
}

static int
af_run_response_head(void)
{
	static const char		 n[] = "http_response_head_parse";
	struct http_response_head	 h;
	const char			*err = NULL;
	int				 rc;

	rc = http_response_head_parse(af_resp, sizeof(af_resp) - 1, &af_hlim,
	    "GET", &h, &err);
	if (rc != HTTP_OK) {
		AF_CHECK(n, rc == HTTP_INVALID && err != NULL &&
		    strcmp(err, "out of memory") == 0);
		return AF_ERR;
	}
	rc = h.status == 200 && strcmp(h.reason, "OK") == 0 &&
	    h.nheaders == 2 && h.body == HTTP_BODY_CHUNKED;
	http_response_head_free(&h);
	AF_CHECK(n, rc);
	return 0;
}

/* --- secretscan ----------------------------------------------------- */

#define AF_VALUE	"sk-live-0123456789abcdef"
#define AF_PH		"moat-ph-00112233445566778899aabbccddeeff"
#define AF_VALUE2	"ghp_ABCDEFGHIJKLMNOP"
#define AF_PH2		"moat-ph-ffeeddccbbaa99887766554433221100"

static const struct secretscan_pattern	af_pats[] = {
	{ (const uint8_t *)AF_VALUE, sizeof(AF_VALUE) - 1, 0,
	    SECRETSCAN_VALUE },
	{ (const uint8_t *)AF_PH, sizeof(AF_PH) - 1, 0,
	    SECRETSCAN_PLACEHOLDER },
	{ (const uint8_t *)AF_VALUE2, sizeof(AF_VALUE2) - 1, 1,
	    SECRETSCAN_VALUE },
	{ (const uint8_t *)AF_PH2, sizeof(AF_PH2) - 1, 1,
	    SECRETSCAN_PLACEHOLDER }
};
static const enum secretscan_action	af_act[2] = {
	SECRETSCAN_ACT_PH_TO_VALUE, SECRETSCAN_ACT_KEEP
};
static const struct secretscan_rules	af_rules = { af_act, 2, NULL };
static const char	af_text[] = "Authorization: Bearer " AF_PH
			    " and " AF_PH2 " end";
static const char	af_want[] = "Authorization: Bearer " AF_VALUE
			    " and " AF_PH2 " end";
static struct secretscan	*af_ss;

static int
af_run_ss_new(void)
{
	static const char	 n[] = "secretscan_new";
	char			 err[256];
	struct secretscan	*s;

	errno = 0;
	s = secretscan_new(af_pats, 4, err, sizeof(err));
	if (s == NULL) {
		AF_CHECK(n, errno == ENOMEM && err[0] != '\0');
		return AF_ERR;
	}
	AF_CHECK(n, secretscan_maxlen(s) == sizeof(AF_PH) - 1 &&
	    secretscan_find(s, (const uint8_t *)af_text, sizeof(af_text) - 1,
	    NULL, 0) == 0);
	secretscan_free(s);
	return 0;
}

static int
af_setup_ss(void)
{
	char	err[256];

	if ((af_ss = secretscan_new(af_pats, 4, err, sizeof(err))) == NULL) {
		af_error("setup", "secretscan_new: %s", err);
		return -1;
	}
	return 0;
}

static void
af_ss_done(void)
{
	secretscan_free(af_ss);
	af_ss = NULL;
}

static int
af_run_ss_rewrite(void)
{
	static const char	 n[] = "secretscan_rewrite";
	uint8_t			*out = NULL;
	size_t			 outlen = 0;
	uint32_t		 leak = UINT32_MAX;
	int			 rc;

	errno = 0;
	rc = secretscan_rewrite(af_ss, &af_rules, (const uint8_t *)af_text,
	    sizeof(af_text) - 1, &out, &outlen, &leak);
	if (rc == -1) {
		AF_CHECK(n, errno == ENOMEM && out == NULL);
		return AF_ERR;
	}
	rc = rc == 0 && out != NULL && outlen == sizeof(af_want) - 1 &&
	    memcmp(out, af_want, outlen) == 0;
	secretscan_out_free(out, outlen);
	AF_CHECK(n, rc);
	return 0;
}

struct af_sink {
	char	buf[256];
	size_t	len;
	bool	over;
};

static void
af_emit(void *arg, const uint8_t *b, size_t len)
{
	struct af_sink	*s = arg;

	if (len > sizeof(s->buf) - s->len) {
		s->over = true;
		return;
	}
	memcpy(s->buf + s->len, b, len);
	s->len += len;
}

static int
af_run_ss_stream(void)
{
	static const char		 n[] = "secretscan_stream";
	struct secretscan_stream	*st;
	struct af_sink			 sink;
	uint32_t			 leak = UINT32_MAX;
	size_t				 i, step = 7;
	int				 rc = 0;

	errno = 0;
	if ((st = secretscan_stream_new(af_ss, &af_rules)) == NULL) {
		AF_CHECK(n, errno == ENOMEM);
		return AF_ERR;
	}
	memset(&sink, 0, sizeof(sink));
	for (i = 0; i < sizeof(af_text) - 1 && rc == 0; i += step)
		rc = secretscan_stream_feed(st, (const uint8_t *)af_text + i,
		    sizeof(af_text) - 1 - i < step ? sizeof(af_text) - 1 - i :
		    step, af_emit, &sink, &leak);
	if (rc == 0)
		rc = secretscan_stream_finish(st, af_emit, &sink, &leak);
	secretscan_stream_free(st);
	AF_CHECK(n, rc == 0 && !sink.over && sink.len == sizeof(af_want) - 1 &&
	    memcmp(sink.buf, af_want, sink.len) == 0);
	return 0;
}

static const char *
af_secret_name(const void *arg, uint32_t secret)
{
	return secret == 0 ? "OPENAI" : "GITHUB";
}

static int
af_run_ss_redact(void)
{
	static const char	 n[] = "secretscan_redact";
	char			*out;
	int			 ok;

	errno = 0;
	out = secretscan_redact(af_ss, af_text, af_secret_name, NULL);
	if (out == NULL) {
		AF_CHECK(n, errno == ENOMEM);
		return AF_ERR;
	}
	ok = strcmp(out, "Authorization: Bearer [secret:OPENAI] and "
	    "[secret:GITHUB] end") == 0;
	free(out);
	AF_CHECK(n, ok);
	return 0;
}

/* --- what never allocates ------------------------------------------- */

static int
af_run_head_scan(void)
{
	static const char	 n[] = "http_head_scan";
	size_t			 state = 0, head_len = 0;
	const char		*err = NULL;

	AF_CHECK(n, http_head_scan(af_req, sizeof(af_req) - 1, &af_hlim,
	    &state, &head_len, &err) == HTTP_OK &&
	    head_len == sizeof(af_req) - 1);
	return 0;
}

static int
af_run_chunked(void)
{
	static const char	 n[] = "http_chunked_feed";
	static const char	 body[] = "5;ext=1\r\nhello\r\n3\r\nabc\r\n"
				    "0\r\nTrailer: x\r\n\r\n";
	struct http_chunked	 c;
	const char		*err = NULL;
	size_t			 used, pos = 0, data = 0;
	uint64_t		 left;
	int			 rc;

	http_chunked_init(&c);
	for (;;) {
		rc = http_chunked_feed(&c, body + pos, sizeof(body) - 1 - pos,
		    &used, &err);
		pos += used;
		AF_CHECK(n, rc != HTTP_INVALID);
		if (rc == HTTP_CHUNKED_DONE)
			break;
		left = http_chunked_data_left(&c);
		AF_CHECK(n, left > 0 && left <= sizeof(body) - 1 - pos);
		http_chunked_data_consumed(&c, left);
		pos += left;
		data += left;
	}
	AF_CHECK(n, pos == sizeof(body) - 1 && data == 8);
	return 0;
}

static int
af_run_socks5(void)
{
	static const char	 n[] = "socks5_parse_*";
	static const uint8_t	 greet[] = { 5, 2, 0, 2 };
	static const uint8_t	 up[] = { 1, 1, 'u', 2, 'p', 'w' };
	static const uint8_t	 req[] = { 5, 1, 0, 3, 11, 'e', 'x', 'a',
				    'm', 'p', 'l', 'e', '.', 'c', 'o', 'm',
				    0x01, 0xbb };
	struct socks5_greeting	 g;
	struct socks5_userpass	 u;
	struct socks5_request	 r;
	const char		*err = NULL;

	AF_CHECK(n, socks5_parse_greeting(greet, sizeof(greet), &g, &err) ==
	    (int)sizeof(greet) && g.nmethods == 2);
	AF_CHECK(n, socks5_parse_userpass(up, sizeof(up), &u, &err) ==
	    (int)sizeof(up) && strcmp(u.user, "u") == 0 &&
	    strcmp(u.pass, "pw") == 0);
	AF_CHECK(n, socks5_parse_request(req, sizeof(req), &r, &err) ==
	    (int)sizeof(req) && strcmp(r.domain, "example.com") == 0 &&
	    r.port == 443);
	return 0;
}

/* A TLS 1.3 ClientHello with SNI and ALPN, in one record. */
static size_t
af_hello(uint8_t *b, size_t cap)
{
	static const uint8_t	 ext[] = {
		/* server_name: example.com */
		0x00, 0x00, 0x00, 0x10, 0x00, 0x0e, 0x00, 0x00, 0x0b,
		'e', 'x', 'a', 'm', 'p', 'l', 'e', '.', 'c', 'o', 'm',
		/* ALPN: h2, http/1.1 */
		0x00, 0x10, 0x00, 0x0e, 0x00, 0x0c, 0x02, 'h', '2', 0x08,
		'h', 't', 't', 'p', '/', '1', '.', '1',
		/* supported_versions: TLS 1.3, 1.2 */
		0x00, 0x2b, 0x00, 0x05, 0x04, 0x03, 0x04, 0x03, 0x03
	};
	size_t			 body, i = 0;

	body = 2 + 32 + 1 + 2 + 2 + 2 + 2 + sizeof(ext);
	if (cap < 5 + 4 + body)
		return 0;
	b[i++] = TLS_CONTENT_HANDSHAKE;
	b[i++] = 0x03;
	b[i++] = 0x01;
	b[i++] = (uint8_t)((4 + body) >> 8);
	b[i++] = (uint8_t)(4 + body);
	b[i++] = TLS_HANDSHAKE_CLIENT_HELLO;
	b[i++] = 0;
	b[i++] = (uint8_t)(body >> 8);
	b[i++] = (uint8_t)body;
	b[i++] = 0x03;				/* legacy_version 1.2 */
	b[i++] = 0x03;
	memset(b + i, 0x5a, 32);		/* random */
	i += 32;
	b[i++] = 0;				/* session_id */
	b[i++] = 0;				/* cipher_suites: one */
	b[i++] = 2;
	b[i++] = 0x13;
	b[i++] = 0x01;
	b[i++] = 1;				/* compression: null */
	b[i++] = 0;
	b[i++] = (uint8_t)(sizeof(ext) >> 8);
	b[i++] = (uint8_t)sizeof(ext);
	memcpy(b + i, ext, sizeof(ext));
	return i + sizeof(ext);
}

static int
af_run_tls(void)
{
	static const char	 n[] = "tls_parse_client_hello";
	uint8_t			 b[256];
	struct tls_client_hello	 h;
	const char		*err = NULL;
	size_t			 len;

	len = af_hello(b, sizeof(b));
	AF_CHECK(n, len > 0);
	AF_CHECK(n, tls_parse_client_hello(b, len, &h, &err) == (int)len);
	AF_CHECK(n, h.has_sni && strcmp(h.sni, "example.com") == 0 &&
	    h.has_alpn && h.nalpn == 2 && h.tls13);
	return 0;
}

static int
af_run_peek(void)
{
	static const char	 n[] = "peek_classify";
	static const uint8_t	 ssh[] = "SSH-2.0-OpenSSH_9.2\r\n";
	static const uint8_t	 get[] = "GET / HTTP/1.1\r\n";
	struct peek_result	 r;
	uint8_t			 b[256];
	size_t			 len;

	len = af_hello(b, sizeof(b));
	AF_CHECK(n, peek_classify(b, len, false, &r) == PEEK_P_TLS &&
	    strcmp(r.hello.sni, "example.com") == 0);
	AF_CHECK(n, peek_classify(ssh, sizeof(ssh) - 1, false, &r) ==
	    PEEK_P_SSH);
	AF_CHECK(n, peek_classify(get, sizeof(get) - 1, false, &r) ==
	    PEEK_P_HTTP);
	return 0;
}

static int
af_run_dns(void)
{
	static const char	 n[] = "dns_parse_query, dns_build_answer";
	/* ID 1234, RD, one question: A www.example.com IN */
	static const uint8_t	 q[] =
	    "\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
	    "\x03www\x07" "example\x03" "com\x00"
	    "\x00\x01\x00\x01";
	struct dns_query	 dq;
	struct policy_addr	 a;
	uint8_t			 out[512];
	const char		*err = NULL;

	AF_CHECK(n, dns_parse_query(q, sizeof(q) - 1, &dq, &err) == DNS_OK &&
	    dq.rcode == DNS_RCODE_NOERROR &&
	    strcmp(dq.name, "www.example.com") == 0 && dq.qtype == 1);
	memset(&a, 0, sizeof(a));
	a.family = AF_INET;
	a.u.v4.s_addr = htonl(0xcb00710a);
	AF_CHECK(n, dns_build_answer(&dq, &a, 1, 60, out, sizeof(out)) > 0);
	return 0;
}

static int
af_run_host(void)
{
	static const char	 n[] = "policy_host_normalise, hostport_parse";
	struct policy_host	 h;
	uint16_t		 port = 0;
	const char		*err = NULL;

	AF_CHECK(n, policy_host_normalise("WWW.Example.COM.", 16, &h,
	    &err) == 0 && strcmp(h.name, "www.example.com") == 0);
	AF_CHECK(n, policy_hostport_parse("[2001:db8::1]:8443", 18, 0, &h,
	    &port, &err) == 0 && port == 8443 && h.kind == POLICY_HOST_ADDR);
	return 0;
}

/* ------------------------------------------------------------------ */
/* The loops                                                            */
/* ------------------------------------------------------------------ */

/*
 * Fails allocation 0, 1, 2, ... of c->run in turn: that one only, or
 * (fail_on) that one and every one after it.
 */
static void
af_loop(const struct af_case *c, bool fail_on)
{
	const char	*how = fail_on ? "and every later one" : "alone";
	long		 n, live0;
	int		 rc;

	for (n = 0; n < AF_MAX_RUNS; n++) {
		live0 = af.live;
		if (c->setup != NULL && c->setup() == -1)
			return;
		if (getenv("AF_VERBOSE") != NULL)
			fprintf(stderr, "%s: failing allocation %ld %s\n",
			    c->name, n, how);
		af_arm(n, fail_on, false);
		rc = c->run();
		af_disarm();
		if (c->done != NULL)
			c->done();
		if (af.live != live0) {
			af_error(c->name, "allocation %ld failing (%s): %ld "
			    "block(s) not freed", n, how, af.live - live0);
			return;
		}
		if (rc == AF_BAD) {
			printf("  (with allocation %ld failing, %s)\n", n, how);
			return;
		}
		if (af.failed == 0) {
			if (rc == 0)
				break;
			af_error(c->name, "failed with every allocation "
			    "made (%ld)", af.asked);
			return;
		}
		if (rc == 0) {
			af_error(c->name, "allocation %ld failed (%s), yet "
			    "it succeeded", n, how);
			return;
		}
	}
	if (n == AF_MAX_RUNS) {
		af_error(c->name, "more than %d allocations", AF_MAX_RUNS);
		return;
	}
	if (n == 0) {
		af_error(c->name, "allocates nothing: list it with the "
		    "parsers that never do");
		return;
	}
	printf("PASS: %s: %ld allocation(s), each failing (%s) an error\n",
	    c->name, n, how);
}

/* Runs c->run with every allocation failing: it must ask for none. */
static void
af_never(const struct af_case *c)
{
	long	live0 = af.live;
	int	rc;

	af_arm(-1, false, true);
	rc = c->run();
	af_disarm();
	if (rc == AF_BAD)
		return;
	if (af.asked != 0 || rc != 0 || af.live != live0)
		af_error(c->name, "asked for %ld allocation(s) (want none), "
		    "result %d", af.asked, rc);
	else
		printf("PASS: %s: no allocation, parses with every "
		    "allocation failing\n", c->name);
}

static const struct af_case	af_allocating[] = {
	{ "config load (moatd, full)", NULL, af_run_conf_full,
	    af_load_done },
	{ "config load (rules and lists read apart)", NULL,
	    af_run_conf_apart, af_load_done },
	{ "config load (a registered sandbox)", NULL, af_run_conf_sandbox,
	    af_load_done },
	{ "config load (errors)", af_setup_conf_bad, af_run_conf_bad,
	    af_load_done },
	{ "policy_decide (long path)", af_setup_cfg, af_run_decide_long,
	    af_load_done },
	{ "policy_git_check (long path)", af_setup_cfg, af_run_git_long,
	    af_load_done },
	{ "policy_config_allow_private", af_setup_cfg, af_run_allow_private,
	    af_load_done },
	{ "policy_explain_parse", NULL, af_run_explain, af_explain_done },
	{ "http_request_head_parse", NULL, af_run_request_head, NULL },
	{ "http_response_head_parse", NULL, af_run_response_head, NULL },
	{ "secretscan_new", NULL, af_run_ss_new, NULL },
	{ "secretscan_rewrite", af_setup_ss, af_run_ss_rewrite, af_ss_done },
	{ "secretscan_stream", af_setup_ss, af_run_ss_stream, af_ss_done },
	{ "secretscan_redact", af_setup_ss, af_run_ss_redact, af_ss_done }
};

static const struct af_case	af_none[] = {
	{ "http_head_scan", NULL, af_run_head_scan, NULL },
	{ "http_chunked_feed", NULL, af_run_chunked, NULL },
	{ "socks5_parse_*", NULL, af_run_socks5, NULL },
	{ "tls_parse_client_hello", NULL, af_run_tls, NULL },
	{ "peek_classify", NULL, af_run_peek, NULL },
	{ "dns_parse_query, dns_build_answer", NULL, af_run_dns, NULL },
	{ "policy_host_normalise, hostport_parse", NULL, af_run_host, NULL }
};

/*
 * What a policy costs: the text of n rules of one name each (rules) or
 * of one rule of n names, loaded once; the peak of the bytes held while
 * it loads and what is kept after it, per rule or name, against bounds
 * well above what they are (a rule: about 200 at the peak, 130 kept; a
 * name: 115 and 80) and below what they were before policy.rules and
 * long lists were read apart (a rule: 1,216 and 287; a name: 202 and 78).
 */
static void
af_policy_bytes(const char *what, size_t n, bool rules, size_t peak_max,
    size_t kept_max)
{
	struct policy_diags	 d;
	struct moat_config	*c;
	char			*text, *p;
	size_t			 i, cap = 128 + n * 80, base, peak, kept;

	if ((text = malloc(cap)) == NULL) {
		af_error(what, "out of memory for the text");
		return;
	}
	p = text + sprintf(text, "{\"listen\": [], \"policy\": {\"rules\": "
	    "[\n%s", rules ? "" : "{\"name\": \"many\", \"action\": "
	    "\"deny\", \"hosts\": [\n");
	for (i = 0; i < n; i++)
		p += rules ? sprintf(p, "{\"name\": \"r%zu\", \"action\": "
		    "\"deny\", \"hosts\": [\"h%zu.example.com\"]},\n", i, i) :
		    sprintf(p, "\"h%zu.example.com\",\n", i);
	p -= 2;			/* the last ",\n" */
	sprintf(p, "%s]}}\n", rules ? "" : "]}");
	policy_diags_init(&d);
	base = af.bytes;
	af.peak = af.bytes;
	c = policy_config_load("bytes.json", text, strlen(text), &d);
	peak = (af.peak - base) / n;
	kept = (af.bytes - base) / n;
	if (c == NULL || d.nerrors > 0 ||
	    policy_rule_count(c->policy) != (rules ? n : 1))
		af_error(what, "the config does not load (%zu errors)",
		    d.nerrors);
	else if (peak > peak_max || kept > kept_max)
		af_error(what, "%zu bytes each at the peak of the load, %zu "
		    "kept (want at most %zu and %zu)", peak, kept, peak_max,
		    kept_max);
	else
		printf("PASS: %s: %zu bytes each at the peak of the load, %zu "
		    "kept (at most %zu and %zu)\n", what, peak, kept,
		    peak_max, kept_max);
	policy_config_unref(c);
	policy_diags_clear(&d);
	free(text);
}

int
main(void)
{
	size_t	i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	json_set_alloc_funcs(af_json_malloc, af_json_free);
	/* "/en/" + 3 x 4 KiB: past every stack buffer of the policy. */
	MEMCPY_LIT(af_long_path, "/en/");
	memset(af_long_path + 4, 'a', sizeof(af_long_path) - 5);
	af_long_path[sizeof(af_long_path) - 1] = '\0';

	for (i = 0; i < sizeof(af_allocating) / sizeof(af_allocating[0]);
	    i++) {
		af_loop(&af_allocating[i], false);
		af_loop(&af_allocating[i], true);
	}
	for (i = 0; i < sizeof(af_none) / sizeof(af_none[0]); i++)
		af_never(&af_none[i]);
	af_policy_bytes("10,000 rules of one name", 10000, true, 400, 200);
	af_policy_bytes("one rule of 20,000 names", 20000, false, 170, 120);
	if (af.live != 0)
		af_error("allocfail", "%ld block(s) still held at the end",
		    af.live);
	printf("allocfail: %d failure(s)\n", af_errors);
	return af_errors == 0 ? 0 : 1;
}
