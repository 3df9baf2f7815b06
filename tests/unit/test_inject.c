/*
 * test_inject.c - proxy/inject.c on its own, without a connection: the
 * config, the secret values and the sandbox's placeholders are built with
 * the functions moatd uses (policy_config_load, secrets_load from
 * environment variables set here, sandbox_new, secrets_view), and each
 * request is described in a struct inject_req as conn_inject_req() does.
 *
 * Covered: placeholders swapped in header values to a bound host and a
 * leak (named) to another; values in the target, Host and body; the
 * percent-encoded target ("encode": "percent") and the unsafe refusal of
 * a value with a control byte in a header; body swaps ("body": true) and
 * body leaks split across two chunks at every split point; echoed values
 * scrubbed in response heads and bodies, split alike; header and basic
 * injections and the refusal of a control byte; needs-tls; the git
 * preset; inject_names.
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>
#include <event2/buffer.h>
#include <openssl/evp.h>

#include "policy/policy.h"
#include "proxy/inject.h"
#include "proxy/sandbox.h"
#include "proxy/secrets.h"
#include "tests/unit/unit.h"

#define LISTEN	"\"listen\": [{\"proto\": \"http\", \"address\": " \
		"\"127.0.0.1:3128\"}], \"tls\": {\"ca_cert\": " \
		"\"/etc/moat/ca/ca.crt\", \"ca_key\": \"/etc/moat/ca/ca.key\"}"
#define RULE(n, h, p, more) "{\"name\": \"" n "\", \"action\": \"allow\", " \
		"\"hosts\": [\"" h "\"], \"ports\": [" p "]" more "}"

/* The values, read by secrets_load() from these variables. */
#define KEY_ENV		"MOAT_UT_INJ_KEY"
#define KEY_VAL		"sk-unit-0123456789abcdef"
#define PCT_ENV		"MOAT_UT_INJ_PCT"
#define PCT_VAL		"line one\nline two"
#define PCT_ENC		"line%20one%0Aline%20two"
#define BODY_ENV	"MOAT_UT_INJ_BODY"
#define BODY_VAL	"body-secret-42424242"
#define COLON_ENV	"MOAT_UT_INJ_COLON"
#define COLON_VAL	"colon:secret:4242"
/* base64("u:" KEY_VAL) */
#define KEY_BASIC	"dTpzay11bml0LTAxMjM0NTY3ODlhYmNkZWY="

static const char inj_json[] = "{" LISTEN ",\n"
    "\"secrets\": {\"KEY\": {\"env\": \"" KEY_ENV "\"}, "
    "\"PCT\": {\"env\": \"" PCT_ENV "\"}, "
    "\"BODY\": {\"env\": \"" BODY_ENV "\"}, "
    "\"COLON\": {\"env\": \"" COLON_ENV "\"}},\n"
    "\"policy\": {\"rules\": [\n"
    RULE("api", "api.example", "443", ", \"inject\": ["
	"{\"placeholders\": [\"KEY\", \"COLON\"]}, "
	"{\"header\": \"X-Api-Key\", \"value\": \"k=${KEY}\"}, "
	"{\"basic\": {\"user\": \"u\", \"password\": \"${KEY}\"}}]") ",\n"
    RULE("pct", "pct.example", "443", ", \"inject\": ["
	"{\"placeholders\": [\"PCT\"], \"encode\": \"percent\"}]") ",\n"
    RULE("body", "body.example", "443", ", \"inject\": ["
	"{\"placeholders\": [\"BODY\"], \"body\": true}]") ",\n"
    RULE("ctl", "ctl.example", "443", ", \"inject\": ["
	"{\"header\": \"X-Ctl\", \"value\": \"${PCT}\"}]") ",\n"
    RULE("plain", "plain.example", "80", ", \"inject\": ["
	"{\"header\": \"X-K\", \"value\": \"${KEY}\"}]") ",\n"
    RULE("plainok", "plainok.example", "80", ", \"plain_http\": true, "
	"\"inject\": [{\"header\": \"X-K\", \"value\": \"${KEY}\"}]") ",\n"
    RULE("git", "git.example", "443", ", \"git\": \"read-only\"") ",\n"
    RULE("ph", "ph.example", "443", ", \"inject\": ["
	"{\"placeholders\": [\"KEY\"]}]") ",\n"
    RULE("open", "other.example", "80, 443", "") "]}}";

/* What every test uses: built once by the suite's init. */
static struct moat_config	*fx_cfg;
static struct secrets		*fx_sec;
static struct sandbox		*fx_sb;
static struct secrets_view	 fx_sv;		/* for the placeholders */
static size_t			 fx_key, fx_pct, fx_body, fx_colon;

static int	inj_init(void);
static int	inj_clean(void);
static size_t	secret_index(const char *name);
static const char *ph(size_t i);
static void	req_fill(struct inject_req *, struct policy_decision *,
		    const char *, uint16_t, const char *, const char *, bool);
static struct inject *begin(const char *, uint16_t, const char *, bool);
static bool	is(const char *, size_t, const char *);
static char	*cat(const char *, const char *, const char *);
static void	sink(void *, const uint8_t *, size_t);
static bool	buf_is(struct evbuffer *, const char *);
static bool	buf_has(struct evbuffer *, const char *);
static void	test_header_bound(void);
static void	test_header_leak(void);
static void	test_value_leak(void);
static void	test_percent(void);
static void	test_body_split(void);
static void	test_body_leak_split(void);
static void	test_response(void);
static void	test_response_pass(void);
static void	test_add_headers(void);
static void	test_needs_tls(void);
static void	test_git(void);
static void	test_names(void);
static void	test_basic_bound(void);
static void	test_basic_leak(void);
static void	test_basic_unsafe(void);
static char	*b64(const char *);
static char	*masked(const char *);
static char	*basic_field(const char *, const char *, const char *, bool);

static int
inj_init(void)
{
	struct policy_diags	 d;
	char			 err[512];

	if (setenv(KEY_ENV, KEY_VAL, 1) == -1 ||
	    setenv(PCT_ENV, PCT_VAL, 1) == -1 ||
	    setenv(BODY_ENV, BODY_VAL, 1) == -1 ||
	    setenv(COLON_ENV, COLON_VAL, 1) == -1)
		return -1;
	policy_diags_init(&d);
	fx_cfg = policy_config_load("inj.json", inj_json, sizeof(inj_json) - 1,
	    &d);
	if (fx_cfg == NULL || d.nerrors > 0) {
		fprintf(stderr, "test_inject: the config does not load\n");
		policy_diags_clear(&d);
		return -1;
	}
	policy_diags_clear(&d);
	if ((fx_sec = secrets_load(fx_cfg, true, err, sizeof(err))) == NULL) {
		fprintf(stderr, "test_inject: secrets: %s\n", err);
		return -1;
	}
	if ((fx_sb = sandbox_new("unit", NULL)) == NULL ||
	    secrets_view(fx_sb, fx_sec, &fx_sv) == -1 || fx_sv.ph == NULL)
		return -1;
	fx_key = secret_index("KEY");
	fx_pct = secret_index("PCT");
	fx_body = secret_index("BODY");
	fx_colon = secret_index("COLON");
	return 0;
}

static int
inj_clean(void)
{
	secrets_view_done(&fx_sv);
	sandbox_unref(fx_sb);
	secrets_unref(fx_sec);
	policy_config_unref(fx_cfg);
	unsetenv(KEY_ENV);
	unsetenv(PCT_ENV);
	unsetenv(BODY_ENV);
	unsetenv(COLON_ENV);
	return 0;
}

static size_t
secret_index(const char *name)
{
	size_t	i;

	for (i = 0; i < fx_cfg->nsecrets; i++)
		if (strcmp(fx_cfg->secrets[i].name, name) == 0)
			return i;
	return SIZE_MAX;
}

/* The sandbox's placeholder of secret i. */
static const char *
ph(size_t i)
{
	CU_ASSERT_FATAL(i < fx_cfg->nsecrets);
	return fx_sv.ph[i];
}

/* A request as conn_inject_req() describes one (d holds its rule). */
static void
req_fill(struct inject_req *rq, struct policy_decision *d, const char *host,
    uint16_t port, const char *method, const char *path, bool tls)
{
	CU_ASSERT_EQUAL_FATAL(unit_policy_decide(fx_cfg, host, NULL, port,
	    method, path, d), POLICY_ALLOW);
	memset(rq, 0, sizeof(*rq));
	rq->policy = fx_cfg->policy;
	rq->rule = d->rule;
	rq->method = method;
	rq->path = path;
	rq->tls = tls;
	rq->host = host;
	rq->port = port;
	rq->sb = fx_sb;
	rq->secrets = fx_sec;
}

/* inject_begin() for a GET of / to host:port, which must not refuse. */
static struct inject *
begin(const char *host, uint16_t port, const char *path, bool tls)
{
	struct inject_req	 rq;
	struct policy_decision	 d;
	struct inject		*in;
	enum policy_reason	 why;
	const char		*detail;

	req_fill(&rq, &d, host, port, "GET", path, tls);
	in = inject_begin(&rq, &why, &detail);
	CU_ASSERT_EQUAL(why, POLICY_R_ALLOWED);
	CU_ASSERT_PTR_NOT_NULL_FATAL(in);
	return in;
}

static bool
is(const char *p, size_t len, const char *want)
{
	return len == strlen(want) && memcmp(p, want, len) == 0;
}

/* a b c concatenated (malloc'd; the test frees it). */
static char *
cat(const char *a, const char *b, const char *c)
{
	size_t	 n = strlen(a) + strlen(b) + strlen(c) + 1;
	char	*s = malloc(n);

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	snprintf(s, n, "%s%s%s", a, b, c);
	return s;
}

/* base64 of s, padded (malloc'd; the test frees it). */
static char *
b64(const char *s)
{
	size_t	 n = strlen(s);
	char	*o = malloc((n + 2) / 3 * 4 + 1);

	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	EVP_EncodeBlock((unsigned char *)o, (const unsigned char *)s, (int)n);
	return o;
}

/* emit callback of the body rewriters: appends to an evbuffer. */
static void
sink(void *arg, const uint8_t *p, size_t n)
{
	evbuffer_add(arg, p, n);
}

static bool
buf_is(struct evbuffer *b, const char *want)
{
	size_t	len = evbuffer_get_length(b);

	return len == strlen(want) && (len == 0 ||
	    memcmp(evbuffer_pullup(b, -1), want, len) == 0);
}

static bool
buf_has(struct evbuffer *b, const char *s)
{
	size_t	len = evbuffer_get_length(b);

	return len > 0 && memmem(evbuffer_pullup(b, -1), len, s,
	    strlen(s)) != NULL;
}

/* A placeholder in a header value to the host it is bound to: swapped. */
static void
test_header_bound(void)
{
	struct inject	*in = begin("api.example", 443, "/", true);
	char		*src = cat("Bearer ", ph(fx_key), ""), *want;
	const char	*out;
	size_t		 outlen;

	want = cat("Bearer ", KEY_VAL, "");
	CU_ASSERT_EQUAL(inject_request_bytes(in, src, strlen(src), &out,
	    &outlen), 0);
	CU_ASSERT_TRUE(is(out, outlen, want));
	/* Twice in one value, and nothing to do in another. */
	free(src);
	free(want);
	src = cat(ph(fx_key), ",", ph(fx_key));
	want = cat(KEY_VAL, ",", KEY_VAL);
	CU_ASSERT_EQUAL(inject_request_bytes(in, src, strlen(src), &out,
	    &outlen), 0);
	CU_ASSERT_TRUE(is(out, outlen, want));
	CU_ASSERT_EQUAL(inject_request_bytes(in, "text/html", 9, &out,
	    &outlen), 0);
	CU_ASSERT_TRUE(is(out, outlen, "text/html"));
	/* The target too, and a Host with the placeholder is no leak. */
	CU_ASSERT_EQUAL(inject_request_target(in, src, strlen(src), &out,
	    &outlen), 0);
	CU_ASSERT_TRUE(is(out, outlen, want));
	/* A bound host: Range goes, the rule's fields override. */
	CU_ASSERT_TRUE(inject_strips_range(in));
	CU_ASSERT_TRUE(inject_overrides(in, "x-api-key", 9));
	CU_ASSERT_TRUE(inject_overrides(in, "Authorization", 13));
	CU_ASSERT_FALSE(inject_overrides(in, "Accept", 6));
	CU_ASSERT_FALSE(inject_body_may_grow(in));
	inject_end(in);
	free(src);
	free(want);
}

/* The same placeholder to a host it is not bound to: a leak, named. */
static void
test_header_leak(void)
{
	struct inject	*in = begin("other.example", 443, "/", true);
	char		*src = cat("Bearer ", ph(fx_key), "");
	const char	*out;
	size_t		 outlen;

	CU_ASSERT_EQUAL(inject_request_bytes(in, src, strlen(src), &out,
	    &outlen), -1);
	CU_ASSERT_STRING_EQUAL(inject_leak_name(in), "KEY");
	CU_ASSERT_PTR_NULL(inject_unsafe(in));
	CU_ASSERT_FALSE(inject_strips_range(in));
	CU_ASSERT_TRUE(inject_scans_body(in));
	/* Each secret is named for its own leak. */
	free(src);
	src = cat("x-", ph(fx_body), "");
	CU_ASSERT_EQUAL(inject_request_bytes(in, src, strlen(src), &out,
	    &outlen), -1);
	CU_ASSERT_STRING_EQUAL(inject_leak_name(in), "BODY");
	/* In the Host moatd sends. */
	free(src);
	src = cat(ph(fx_key), ".other.example", "");
	CU_ASSERT_EQUAL(inject_request_host(in, src), -1);
	CU_ASSERT_EQUAL(inject_request_host(in, "other.example"), 0);
	inject_end(in);
	free(src);
}

/* A secret's value, not only its placeholder, is a leak: target, body. */
static void
test_value_leak(void)
{
	struct inject	*in = begin("other.example", 443, "/", true);
	struct evbuffer	*src, *dst;
	const char	*out;
	size_t		 outlen;

	CU_ASSERT_EQUAL(inject_request_target(in, "/q?k=" KEY_VAL,
	    strlen("/q?k=" KEY_VAL), &out, &outlen), -1);
	CU_ASSERT_STRING_EQUAL(inject_leak_name(in), "KEY");
	CU_ASSERT_EQUAL(inject_request_target(in, "/q?k=v", 6, &out,
	    &outlen), 0);
	CU_ASSERT_TRUE(is(out, outlen, "/q?k=v"));
	CU_ASSERT_EQUAL(inject_request_bytes(in, "b=" BODY_VAL,
	    strlen("b=" BODY_VAL), &out, &outlen), -1);
	CU_ASSERT_STRING_EQUAL(inject_leak_name(in), "BODY");
	CU_ASSERT_EQUAL(inject_request_body_bytes(in, "{\"k\": \"" KEY_VAL
	    "\"}", strlen("{\"k\": \"" KEY_VAL "\"}"), &out, &outlen), -1);
	CU_ASSERT_STRING_EQUAL(inject_leak_name(in), "KEY");
	inject_end(in);

	/* The streamed body of a request. */
	in = begin("other.example", 443, "/", true);
	CU_ASSERT_FALSE(inject_leaked(in));
	src = evbuffer_new();
	dst = evbuffer_new();
	CU_ASSERT_FATAL(src != NULL && dst != NULL);
	evbuffer_add(src, "data=" PCT_VAL "&x=1", strlen("data=" PCT_VAL
	    "&x=1"));
	CU_ASSERT_EQUAL(inject_body(in, src, evbuffer_get_length(src), true,
	    sink, dst), -1);
	/* A leak, not memory: http.c says which by inject_leaked(). */
	CU_ASSERT_TRUE(inject_leaked(in));
	CU_ASSERT_STRING_EQUAL(inject_leak_name(in), "PCT");
	CU_ASSERT_FALSE(buf_has(dst, PCT_VAL));
	evbuffer_free(src);
	evbuffer_free(dst);
	inject_end(in);
}

/*
 * "encode": "percent": the placeholder in the target becomes the value
 * %XX-encoded; in a header the value's LF would break the field: unsafe.
 */
static void
test_percent(void)
{
	struct inject	*in = begin("pct.example", 443, "/", true);
	char		*src = cat("/q?key=", ph(fx_pct), "&b=1");
	const char	*out;
	size_t		 outlen;

	CU_ASSERT_EQUAL(inject_request_target(in, src, strlen(src), &out,
	    &outlen), 0);
	CU_ASSERT_TRUE(is(out, outlen, "/q?key=" PCT_ENC "&b=1"));
	free(src);
	src = cat(ph(fx_pct), "/", ph(fx_pct));
	CU_ASSERT_EQUAL(inject_request_target(in, src, strlen(src), &out,
	    &outlen), 0);
	CU_ASSERT_TRUE(is(out, outlen, PCT_ENC "/" PCT_ENC));
	CU_ASSERT_PTR_NULL(inject_unsafe(in));
	free(src);
	src = cat("Bearer ", ph(fx_pct), "");
	CU_ASSERT_EQUAL(inject_request_bytes(in, src, strlen(src), &out,
	    &outlen), -1);
	CU_ASSERT_STRING_EQUAL(inject_leak_name(in), "PCT");
	CU_ASSERT_PTR_NOT_NULL(inject_unsafe(in));
	inject_end(in);
	free(src);

	/* Without "encode" the same value in a target is unsafe too. */
	in = begin("ctl.example", 443, "/", true);
	src = cat("/q?key=", ph(fx_pct), "");
	CU_ASSERT_EQUAL(inject_request_target(in, src, strlen(src), &out,
	    &outlen), -1);
	CU_ASSERT_PTR_NOT_NULL(inject_unsafe(in));
	inject_end(in);
	free(src);
}

/* "body": true: a placeholder split across two chunks anywhere. */
static void
test_body_split(void)
{
	struct inject	*in;
	struct evbuffer	*src, *dst;
	char		*body = cat("{\"api_key\": \"", ph(fx_body), "\"}");
	char		*want = cat("{\"api_key\": \"", BODY_VAL, "\"}");
	const char	*out;
	size_t		 len = strlen(body), k, bad = 0;

	src = evbuffer_new();
	dst = evbuffer_new();
	CU_ASSERT_FATAL(src != NULL && dst != NULL);
	for (k = 0; k <= len; k++) {
		in = begin("body.example", 443, "/", true);
		CU_ASSERT_TRUE(inject_scans_body(in));
		CU_ASSERT_TRUE(inject_body_may_grow(in));
		evbuffer_drain(dst, evbuffer_get_length(dst));
		evbuffer_add(src, body, k);
		if (inject_body(in, src, k, false, sink, dst) != 0)
			bad++;
		evbuffer_add(src, body + k, len - k);
		if (inject_body(in, src, len - k, true, sink, dst) != 0)
			bad++;
		if (!buf_is(dst, want) || evbuffer_get_length(src) != 0)
			bad++;
		inject_end(in);
	}
	CU_ASSERT_EQUAL(bad, 0);
	/* Whole, as http.c rewrites a body that is all there. */
	in = begin("body.example", 443, "/", true);
	CU_ASSERT_EQUAL(inject_request_body_bytes(in, body, len, &out, &k), 0);
	CU_ASSERT_TRUE(is(out, k, want));
	inject_end(in);
	/* Without "body", a placeholder in a body goes as written. */
	in = begin("api.example", 443, "/", true);
	free(body);
	body = cat("{\"k\": \"", ph(fx_key), "\"}");
	CU_ASSERT_EQUAL(inject_request_body_bytes(in, body, strlen(body), &out,
	    &k), 0);
	CU_ASSERT_TRUE(is(out, k, body));
	CU_ASSERT_FALSE(inject_body_may_grow(in));
	inject_end(in);
	evbuffer_free(src);
	evbuffer_free(dst);
	free(body);
	free(want);
}

/* A leak split across two chunks anywhere: found, never sent whole. */
static void
test_body_leak_split(void)
{
	struct inject	*in;
	struct evbuffer	*src, *dst;
	char		*body = cat("{\"token\": \"", ph(fx_key), "\"}");
	size_t		 len = strlen(body), k, missed = 0, sent = 0;
	int		 rc;

	src = evbuffer_new();
	dst = evbuffer_new();
	CU_ASSERT_FATAL(src != NULL && dst != NULL);
	for (k = 0; k <= len; k++) {
		in = begin("body.example", 443, "/", true);
		evbuffer_drain(src, evbuffer_get_length(src));
		evbuffer_drain(dst, evbuffer_get_length(dst));
		evbuffer_add(src, body, k);
		rc = inject_body(in, src, k, false, sink, dst);
		if (rc == 0) {
			evbuffer_add(src, body + k, len - k);
			rc = inject_body(in, src, len - k, true, sink, dst);
		}
		if (rc != -1 || strcmp(inject_leak_name(in), "KEY") != 0)
			missed++;
		if (buf_has(dst, ph(fx_key)))
			sent++;
		inject_end(in);
	}
	CU_ASSERT_EQUAL(missed, 0);
	CU_ASSERT_EQUAL(sent, 0);
	evbuffer_free(src);
	evbuffer_free(dst);
	free(body);
}

/* Values echoed back become placeholders: head, reason, split bodies. */
static void
test_response(void)
{
	struct inject	*in = begin("api.example", 443, "/", true);
	struct evbuffer	*src, *dst;
	char		*body = cat("you sent " KEY_VAL " and ", BODY_VAL, ".");
	char		*want, *w1;
	const char	*out;
	size_t		 outlen, len = strlen(body), k, bad = 0;

	w1 = cat("you sent ", ph(fx_key), " and ");
	want = cat(w1, ph(fx_body), ".");
	free(w1);
	CU_ASSERT_TRUE(inject_response_begin(in));
	CU_ASSERT_EQUAL(inject_response_bytes(in, body, len, &out, &outlen),
	    0);
	CU_ASSERT_TRUE(is(out, outlen, want));
	CU_ASSERT_EQUAL(inject_response_bytes(in, "OK", 2, &out, &outlen), 0);
	CU_ASSERT_TRUE(is(out, outlen, "OK"));
	src = evbuffer_new();
	dst = evbuffer_new();
	CU_ASSERT_FATAL(src != NULL && dst != NULL);
	for (k = 0; k <= len; k++) {
		CU_ASSERT_TRUE(inject_response_begin(in));
		evbuffer_drain(dst, evbuffer_get_length(dst));
		evbuffer_add(src, body, k);
		if (inject_response_body(in, src, k, false, sink, dst) != 0)
			bad++;
		evbuffer_add(src, body + k, len - k);
		if (inject_response_body(in, src, len - k, true, sink,
		    dst) != 0)
			bad++;
		if (!buf_is(dst, want) || buf_has(dst, KEY_VAL))
			bad++;
	}
	CU_ASSERT_EQUAL(bad, 0);
	inject_end(in);
	/* A host no secret is bound to got no value: not scanned. */
	in = begin("other.example", 443, "/", true);
	CU_ASSERT_FALSE(inject_response_begin(in));
	CU_ASSERT_EQUAL(inject_response_bytes(in, body, len, &out, &outlen),
	    0);
	CU_ASSERT_PTR_EQUAL(out, body);
	inject_end(in);
	evbuffer_free(src);
	evbuffer_free(dst);
	free(body);
	free(want);
}

/* body with each value of a bound secret as many "*" (malloc'd). */
static char *
masked(const char *body)
{
	char	*m = strdup(body), *at;
	size_t	 i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	while ((at = strstr(m, KEY_VAL)) != NULL)
		for (i = 0; i < strlen(KEY_VAL); i++)
			at[i] = '*';
	while ((at = strstr(m, BODY_VAL)) != NULL)
		for (i = 0; i < strlen(BODY_VAL); i++)
			at[i] = '*';
	return m;
}

/*
 * A body whose length the client was told: values become as many "*",
 * whatever the cut of the pieces it comes in, values side by side and
 * at the very end included; the output has the input's length; what is
 * held back comes out with the last piece.
 */
static void
test_response_pass(void)
{
	static const char *const bodies[] = {
		"head " KEY_VAL " mid " BODY_VAL ".",
		KEY_VAL BODY_VAL KEY_VAL,
		"no value here, but sk-unit-0123 a piece of one",
		"ends with the value " KEY_VAL,
	};
	struct inject	*in;
	struct evbuffer	*src, *dst;
	char		*want;
	size_t		 b, k, len, bad = 0, early = 0;

	src = evbuffer_new();
	dst = evbuffer_new();
	CU_ASSERT_FATAL(src != NULL && dst != NULL);
	for (b = 0; b < sizeof(bodies) / sizeof(bodies[0]); b++) {
		len = strlen(bodies[b]);
		want = masked(bodies[b]);
		for (k = 0; k <= len; k++) {
			in = begin("api.example", 443, "/", true);
			CU_ASSERT_TRUE(inject_response_begin(in));
			evbuffer_drain(dst, evbuffer_get_length(dst));
			evbuffer_add(src, bodies[b], k);
			if (inject_response_pass(in, src, k, false, dst) != 0)
				bad++;
			/* What went out is final: never a piece of a value
			 * not yet masked. */
			if (evbuffer_get_length(dst) > 0 && memcmp(
			    evbuffer_pullup(dst, -1), want,
			    evbuffer_get_length(dst)) != 0)
				early++;
			evbuffer_add(src, bodies[b] + k, len - k);
			if (inject_response_pass(in, src, len - k, true,
			    dst) != 0)
				bad++;
			if (!buf_is(dst, want) || evbuffer_get_length(src) != 0)
				bad++;
			inject_end(in);
		}
		free(want);
	}
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(early, 0);
	/* Many pieces, one byte each. */
	in = begin("api.example", 443, "/", true);
	CU_ASSERT_TRUE(inject_response_begin(in));
	evbuffer_drain(dst, evbuffer_get_length(dst));
	len = strlen(bodies[1]);
	for (k = 0; k < len; k++) {
		evbuffer_add(src, bodies[1] + k, 1);
		CU_ASSERT_EQUAL(inject_response_pass(in, src, 1, k + 1 == len,
		    dst), 0);
	}
	want = masked(bodies[1]);
	CU_ASSERT_TRUE(buf_is(dst, want));
	free(want);
	inject_end(in);
	CU_ASSERT_EQUAL(inject_response_pass(NULL, src, 0, true, dst), -1);
	evbuffer_free(src);
	evbuffer_free(dst);
}

/* The rule's header and basic injections; a control byte refuses. */
static void
test_add_headers(void)
{
	struct inject	*in = begin("api.example", 443, "/", true);
	struct evbuffer	*out;
	const char	*detail;

	CU_ASSERT_FATAL((out = evbuffer_new()) != NULL);
	CU_ASSERT_EQUAL(inject_add_headers(in, out, &detail), 0);
	CU_ASSERT_PTR_NULL(detail);
	CU_ASSERT_TRUE(buf_is(out, "X-Api-Key: k=" KEY_VAL "\r\n"
	    "Authorization: Basic " KEY_BASIC "\r\n"));
	inject_end(in);
	evbuffer_drain(out, evbuffer_get_length(out));

	in = begin("ctl.example", 443, "/", true);
	CU_ASSERT_EQUAL(inject_add_headers(in, out, &detail), -1);
	CU_ASSERT_PTR_NOT_NULL(detail);
	CU_ASSERT_FALSE(buf_has(out, "line two"));
	inject_end(in);
	evbuffer_drain(out, evbuffer_get_length(out));

	/* No injections: nothing added. */
	in = begin("other.example", 443, "/", true);
	CU_ASSERT_EQUAL(inject_add_headers(in, out, &detail), 0);
	CU_ASSERT_EQUAL(evbuffer_get_length(out), 0);
	inject_end(in);
	CU_ASSERT_EQUAL(inject_add_headers(NULL, out, &detail), 0);
	CU_ASSERT_EQUAL(evbuffer_get_length(out), 0);
	evbuffer_free(out);
}

/* A rule that injects, over plain HTTP: needs-tls unless plain_http. */
static void
test_needs_tls(void)
{
	struct inject_req	 rq;
	struct policy_decision	 d;
	struct inject		*in;
	enum policy_reason	 why;
	const char		*detail;

	req_fill(&rq, &d, "plain.example", 80, "GET", "/", false);
	CU_ASSERT_EQUAL(inject_precheck(&rq, &why, &detail), -1);
	CU_ASSERT_EQUAL(why, POLICY_R_NEEDS_TLS);
	CU_ASSERT_PTR_NOT_NULL(detail);
	in = inject_begin(&rq, &why, &detail);
	CU_ASSERT_PTR_NULL(in);
	CU_ASSERT_EQUAL(why, POLICY_R_NEEDS_TLS);
	inject_end(in);
	/* Inside TLS moatd terminated, the same rule injects. */
	rq.tls = true;
	CU_ASSERT_EQUAL(inject_precheck(&rq, &why, &detail), 0);
	CU_ASSERT_EQUAL(why, POLICY_R_ALLOWED);
	/* "plain_http": true allows it in clear text. */
	req_fill(&rq, &d, "plainok.example", 80, "GET", "/", false);
	CU_ASSERT_EQUAL(inject_precheck(&rq, &why, &detail), 0);
	in = inject_begin(&rq, &why, &detail);
	CU_ASSERT_PTR_NOT_NULL(in);
	CU_ASSERT_EQUAL(why, POLICY_R_ALLOWED);
	inject_end(in);
	/* A rule that injects nothing: plain HTTP is fine. */
	req_fill(&rq, &d, "other.example", 80, "GET", "/", false);
	CU_ASSERT_EQUAL(inject_precheck(&rq, &why, &detail), 0);
}

/* The git read-only preset, through the precheck and inject_begin. */
static void
test_git(void)
{
	static const struct {
		const char		*method, *path;
		enum policy_reason	 want;
	} v[] = {
		{ "GET", "/o/r.git/info/refs?service=git-upload-pack",
		  POLICY_R_ALLOWED },
		{ "POST", "/o/r.git/git-upload-pack", POLICY_R_ALLOWED },
		{ "POST", "/o/r.git/git-receive-pack", POLICY_R_PATH },
		{ "GET", "/o/r.git/info/refs?service=git-receive-pack",
		  POLICY_R_PATH },
		{ "PUT", "/o/r.git/objects/ab/cd", POLICY_R_METHOD },
	};
	struct inject_req	 rq;
	struct policy_decision	 d;
	struct inject		*in;
	enum policy_reason	 why;
	const char		*detail;
	size_t			 i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		req_fill(&rq, &d, "git.example", 443, v[i].method, v[i].path,
		    true);
		CU_ASSERT_EQUAL(inject_precheck(&rq, &why, &detail),
		    v[i].want == POLICY_R_ALLOWED ? 0 : -1);
		CU_ASSERT_EQUAL(why, v[i].want);
		in = inject_begin(&rq, &why, &detail);
		CU_ASSERT_EQUAL(why, v[i].want);
		CU_ASSERT_TRUE((in == NULL) == (v[i].want != POLICY_R_ALLOWED));
		if (v[i].want != POLICY_R_ALLOWED)
			CU_ASSERT_PTR_NOT_NULL(detail);
		inject_end(in);
	}
	/* No method (a tunnel): nothing to check. */
	req_fill(&rq, &d, "git.example", 443, NULL, NULL, true);
	CU_ASSERT_EQUAL(inject_precheck(&rq, &why, &detail), 0);
}

/*
 * inject_names: the secrets whose values went into the request, once it
 * went out (inject_sent); none for a request refused before.
 */
static void
test_names(void)
{
	struct inject		*in = begin("api.example", 443, "/", true);
	const char *const	*n;
	struct evbuffer		*out;
	struct inject_req	 rq;
	struct policy_decision	 d;
	enum policy_reason	 why;
	const char		*detail, *o;
	char			*src;
	size_t			 ol;

	CU_ASSERT_FATAL((out = evbuffer_new()) != NULL);
	/* The rule's header and basic injections put KEY in. */
	CU_ASSERT_EQUAL(inject_add_headers(in, out, &detail), 0);
	CU_ASSERT_PTR_NULL(inject_names(in));	/* not sent yet */
	inject_sent(in);
	CU_ASSERT_PTR_NOT_NULL_FATAL(n = inject_names(in));
	CU_ASSERT_STRING_EQUAL(n[0], "KEY");
	CU_ASSERT_PTR_NULL(n[1]);
	inject_end(in);

	/* Placeholders alone: a secret counts once swapped, not before. */
	in = begin("ph.example", 443, "/", true);
	inject_sent(in);
	CU_ASSERT_PTR_NULL(inject_names(in));
	src = cat("/q?k=", ph(fx_key), "");
	CU_ASSERT_EQUAL(inject_request_target(in, src, strlen(src), &o, &ol),
	    0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(n = inject_names(in));
	CU_ASSERT_STRING_EQUAL(n[0], "KEY");
	CU_ASSERT_PTR_NULL(n[1]);
	inject_end(in);
	free(src);

	/* Refused: swapped in one field, a leak in the next, never sent. */
	in = begin("ctl.example", 443, "/", true);
	CU_ASSERT_EQUAL(inject_add_headers(in, out, &detail), -1);
	CU_ASSERT_PTR_NULL(inject_names(in));
	inject_end(in);
	in = begin("ph.example", 443, "/", true);
	src = cat("Bearer ", ph(fx_key), "");
	CU_ASSERT_EQUAL(inject_request_bytes(in, src, strlen(src), &o, &ol),
	    0);
	free(src);
	src = cat("Bearer ", ph(fx_body), "");
	CU_ASSERT_EQUAL(inject_request_bytes(in, src, strlen(src), &o, &ol),
	    -1);
	CU_ASSERT_PTR_NULL(inject_names(in));
	inject_end(in);
	free(src);

	/* A rule that binds nothing: nothing, sent or not. */
	in = begin("other.example", 443, "/", true);
	inject_sent(in);
	CU_ASSERT_PTR_NULL(inject_names(in));
	inject_end(in);
	CU_ASSERT_PTR_NULL(inject_names(NULL));
	inject_sent(NULL);
	/* No secrets and a rule that injects none: no struct at all. */
	req_fill(&rq, &d, "other.example", 443, "GET", "/", true);
	rq.secrets = NULL;
	in = inject_begin(&rq, &why, &detail);
	CU_ASSERT_PTR_NULL(in);
	CU_ASSERT_EQUAL(why, POLICY_R_ALLOWED);
	evbuffer_free(out);
}

/* "Authorization: " scheme-and-spaces base64(user ":" password). */
static char *
basic_field(const char *scheme, const char *user, const char *pass,
    bool unpadded)
{
	char	*up = cat(user, ":", pass), *t = b64(up), *f;
	size_t	 n = strlen(t);

	while (unpadded && n > 0 && t[n - 1] == '=')
		t[--n] = '\0';
	f = cat(scheme, t, "");
	free(up);
	free(t);
	return f;
}

/*
 * Placeholders inside Basic credentials (curl -u, URL userinfo, .netrc,
 * npm's _auth) to a bound host: decoded, swapped, encoded again, in the
 * password and in the user, whatever the scheme's case, the spaces
 * after it and the padding; the value itself, or nothing to swap, goes
 * as sent.
 */
static void
test_basic_bound(void)
{
	static const struct {
		const char	*scheme;
		bool		 unpadded, user;
	} v[] = {
		{ "Basic ", false, false },
		{ "basic ", false, false },
		{ "BASIC ", false, true },
		{ "Basic    ", false, false },
		{ "Basic \t ", false, false },
		{ "Basic ", true, false },
		{ "bAsIc  ", true, true },
	};
	struct inject	*in;
	const char	*out;
	char		*src, *want, *pw;
	size_t		 outlen, i, bad = 0;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		in = begin("ph.example", 443, "/", true);
		/* The user as in a URL for PyPI, or the placeholder itself. */
		src = v[i].user ?
		    basic_field(v[i].scheme, ph(fx_key), "x", v[i].unpadded) :
		    basic_field(v[i].scheme, "__token__", ph(fx_key),
		    v[i].unpadded);
		want = v[i].user ? basic_field(v[i].scheme, KEY_VAL, "x",
		    false) : basic_field(v[i].scheme, "__token__", KEY_VAL,
		    false);
		if (inject_request_field(in, "Authorization", 13, src,
		    strlen(src), &out, &outlen) != 0 ||
		    !is(out, outlen, want))
			bad++;
		inject_sent(in);
		if (inject_names(in) == NULL)
			bad++;
		inject_end(in);
		free(src);
		free(want);
	}
	CU_ASSERT_EQUAL(bad, 0);

	in = begin("ph.example", 443, "/", true);
	/* Without a placeholder, or with the value: the field as sent. */
	src = basic_field("Basic ", "u", "p4ssw0rd", false);
	CU_ASSERT_EQUAL(inject_request_field(in, "authorization", 13, src,
	    strlen(src), &out, &outlen), 0);
	CU_ASSERT_PTR_EQUAL(out, src);
	free(src);
	src = basic_field("Basic ", "u", KEY_VAL, false);
	CU_ASSERT_EQUAL(inject_request_field(in, "authorization", 13, src,
	    strlen(src), &out, &outlen), 0);
	CU_ASSERT_PTR_EQUAL(out, src);
	free(src);
	/* Two placeholders, one in each half. */
	pw = cat(ph(fx_key), "-and-", ph(fx_key));
	src = basic_field("Basic ", ph(fx_key), pw, false);
	free(pw);
	want = basic_field("Basic ", KEY_VAL, KEY_VAL "-and-" KEY_VAL, false);
	CU_ASSERT_EQUAL(inject_request_field(in, "Authorization", 13, src,
	    strlen(src), &out, &outlen), 0);
	CU_ASSERT_TRUE(is(out, outlen, want));
	free(src);
	free(want);
	/* Only Authorization is decoded; other fields are text. */
	src = basic_field("Basic ", "u", ph(fx_key), false);
	CU_ASSERT_EQUAL(inject_request_field(in, "X-Authorization", 15, src,
	    strlen(src), &out, &outlen), 0);
	CU_ASSERT_PTR_EQUAL(out, src);
	free(src);
	/* A value with a ":" swapped into the password is fine. */
	inject_end(in);
	in = begin("api.example", 443, "/", true);
	src = basic_field("Basic ", "u", ph(fx_colon), false);
	want = basic_field("Basic ", "u", COLON_VAL, false);
	CU_ASSERT_EQUAL(inject_request_field(in, "Authorization", 13, src,
	    strlen(src), &out, &outlen), 0);
	CU_ASSERT_TRUE(is(out, outlen, want));
	inject_end(in);
	free(src);
	free(want);
}

/*
 * The same credentials to a host the secret is not bound to: a leak,
 * named, whatever the spelling; a real value hidden in Basic too.  What
 * is not decoded (documented): a Bearer token that is base64, a token
 * that is not base64, another field.
 */
static void
test_basic_leak(void)
{
	static const struct {
		const char	*scheme;
		bool		 unpadded, user;
	} v[] = {
		{ "Basic ", false, false },
		{ "basic ", true, false },
		{ "BASIC   ", false, true },
		{ "Basic\t", true, true },
	};
	struct inject	*in = begin("other.example", 443, "/", true);
	const char	*out;
	char		*src, *t;
	size_t		 outlen, i, missed = 0;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		src = v[i].user ?
		    basic_field(v[i].scheme, ph(fx_key), "x", v[i].unpadded) :
		    basic_field(v[i].scheme, "__token__", ph(fx_key),
		    v[i].unpadded);
		if (inject_request_field(in, "Authorization", 13, src,
		    strlen(src), &out, &outlen) != -1 ||
		    strcmp(inject_leak_name(in), "KEY") != 0 ||
		    inject_unsafe(in) != NULL)
			missed++;
		free(src);
	}
	CU_ASSERT_EQUAL(missed, 0);
	/* The real value, in either half. */
	src = basic_field("Basic ", "u", BODY_VAL, false);
	CU_ASSERT_EQUAL(inject_request_field(in, "Authorization", 13, src,
	    strlen(src), &out, &outlen), -1);
	CU_ASSERT_STRING_EQUAL(inject_leak_name(in), "BODY");
	free(src);
	src = cat("Basic ", KEY_BASIC, "");
	CU_ASSERT_EQUAL(inject_request_field(in, "Authorization", 13, src,
	    strlen(src), &out, &outlen), -1);
	CU_ASSERT_STRING_EQUAL(inject_leak_name(in), "KEY");
	free(src);
	/* Not decoded: Bearer, garbage, a length no base64 has, a field
	 * other than Authorization. */
	t = b64(ph(fx_key));
	src = cat("Bearer ", t, "");
	CU_ASSERT_EQUAL(inject_request_field(in, "Authorization", 13, src,
	    strlen(src), &out, &outlen), 0);
	CU_ASSERT_PTR_EQUAL(out, src);
	free(src);
	src = cat("Basic ", t, "A");	/* "=" inside */
	CU_ASSERT_EQUAL(inject_request_field(in, "Authorization", 13, src,
	    strlen(src), &out, &outlen), 0);
	free(src);
	src = cat("Basic ", t, "");
	src[strlen(src) - 1] = '\0';	/* padded, one "=" short */
	CU_ASSERT_EQUAL(inject_request_field(in, "Authorization", 13, src,
	    strlen(src), &out, &outlen), 0);
	free(src);
	src = cat("Basic", t, "");	/* no space: another scheme */
	CU_ASSERT_EQUAL(inject_request_field(in, "Authorization", 13, src,
	    strlen(src), &out, &outlen), 0);
	free(src);
	src = cat("Basic ", t, "");
	CU_ASSERT_EQUAL(inject_request_field(in, "X-Basic", 7, src,
	    strlen(src), &out, &outlen), 0);
	/* ...but the same is a leak in Authorization. */
	CU_ASSERT_EQUAL(inject_request_field(in, "AUTHORIZATION", 13, src,
	    strlen(src), &out, &outlen), -1);
	free(src);
	free(t);
	inject_end(in);
}

/*
 * A bound value that Basic credentials cannot carry: a control byte
 * (RFC 7617), or a ":" swapped into the user, which would move the
 * split: refused as unsafe, naming the secret.
 */
static void
test_basic_unsafe(void)
{
	struct inject	*in = begin("pct.example", 443, "/", true);
	const char	*out, *why;
	char		*src;
	size_t		 outlen;

	src = basic_field("Basic ", "u", ph(fx_pct), false);
	CU_ASSERT_EQUAL(inject_request_field(in, "Authorization", 13, src,
	    strlen(src), &out, &outlen), -1);
	CU_ASSERT_STRING_EQUAL(inject_leak_name(in), "PCT");
	why = inject_unsafe(in);
	CU_ASSERT(why != NULL && strstr(why, "Basic") != NULL);
	inject_end(in);
	free(src);
	in = begin("api.example", 443, "/", true);
	src = basic_field("Basic ", ph(fx_colon), "pw", false);
	CU_ASSERT_EQUAL(inject_request_field(in, "Authorization", 13, src,
	    strlen(src), &out, &outlen), -1);
	CU_ASSERT_STRING_EQUAL(inject_leak_name(in), "COLON");
	why = inject_unsafe(in);
	CU_ASSERT(why != NULL && strstr(why, "user") != NULL);
	inject_end(in);
	free(src);
}

void
test_inject_register(void)
{
	CU_pSuite	s;

	s = CU_add_suite("inject", inj_init, inj_clean);
	if (s == NULL)
		return;
	CU_add_test(s, "placeholder in a header, bound host", test_header_bound);
	CU_add_test(s, "placeholder to an unbound host", test_header_leak);
	CU_add_test(s, "values in target, header, body", test_value_leak);
	CU_add_test(s, "encode percent, unsafe values", test_percent);
	CU_add_test(s, "body swaps split at every point", test_body_split);
	CU_add_test(s, "body leaks split at every point",
	    test_body_leak_split);
	CU_add_test(s, "responses: echoed values scrubbed", test_response);
	CU_add_test(s, "responses of a set length: values masked",
	    test_response_pass);
	CU_add_test(s, "header and basic injections", test_add_headers);
	CU_add_test(s, "needs-tls", test_needs_tls);
	CU_add_test(s, "git preset", test_git);
	CU_add_test(s, "inject_names", test_names);
	CU_add_test(s, "Basic credentials, bound host", test_basic_bound);
	CU_add_test(s, "Basic credentials, unbound host", test_basic_leak);
	CU_add_test(s, "Basic credentials, unsafe values", test_basic_unsafe);
}
