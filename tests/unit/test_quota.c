/*
 * test_quota.c - proxy/quota.c: the window arithmetic of one count (time
 * handed in: a window's turn, a worker whose clock read came before
 * another's start, requests taken and given back, the crossing claimed
 * once per window), then a sandbox's counts as moatd uses them: a rule's
 * and the policy's byte quotas admitted and charged, each sandbox with
 * counts of its own, a config loaded again with the same names keeping
 * the counts and its new limits applying to them, and secrets' request
 * quotas taken through inject.c (once per request, what a refused
 * request took given back).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>
#include <event2/buffer.h>

#include "policy/policy.h"
#include "proxy/inject.h"
#include "proxy/quota.h"
#include "proxy/sandbox.h"
#include "proxy/secrets.h"
#include "tests/unit/unit.h"

#define LISTEN	"\"listen\": [{\"proto\": \"http\", \"address\": " \
		"\"127.0.0.1:3128\"}]"
#define TLS	"\"tls\": {\"ca_cert\": \"/etc/moat/ca/ca.crt\", " \
		"\"ca_key\": \"/etc/moat/ca/ca.key\"}"
#define A_ENV	"MOAT_UT_QUOTA_A"
#define B_ENV	"MOAT_UT_QUOTA_B"

static struct moat_config *
load(const char *json)
{
	struct policy_diags	 d;
	struct moat_config	*c;
	char			 line[512];
	size_t			 i;

	policy_diags_init(&d);
	c = policy_config_load("q.json", json, strlen(json), &d);
	for (i = 0; i < d.n && d.nerrors > 0; i++)
		fprintf(stderr, "\n  %s", policy_diag_format(&d, i, line,
		    sizeof(line)));
	CU_ASSERT_EQUAL(d.nerrors, 0);
	policy_diags_clear(&d);
	return c;
}

/* A window's count: it adds up, a new window starts at 0. */
static void
test_quota_window(void)
{
	struct quota_ctr	q;
	uint64_t		start = 0;

	quota_ctr_init(&q);
	/* A look starts no window. */
	CU_ASSERT_EQUAL(quota_ctr_peek(&q, 2000, 9000, &start), 0);
	CU_ASSERT_EQUAL(start, 0);
	CU_ASSERT_EQUAL(quota_ctr_used(&q, 2000, 10000, &start), 0);
	CU_ASSERT_EQUAL(start, 10000);	/* the first use starts it */
	CU_ASSERT_EQUAL(quota_ctr_add(&q, 700, 2000, 10500, &start), 700);
	CU_ASSERT_EQUAL(quota_ctr_add(&q, 300, 2000, 11999, &start), 1000);
	CU_ASSERT_EQUAL(start, 10000);
	/* A worker that read the clock before the window began counts in
	 * it too (no unsigned wrap into "over"). */
	CU_ASSERT_EQUAL(quota_ctr_add(&q, 1, 2000, 9999, &start), 1001);
	CU_ASSERT_EQUAL(start, 10000);
	CU_ASSERT_EQUAL(quota_ctr_peek(&q, 2000, 11000, &start), 1001);
	/* At start + per the window is over: a look sees 0 and leaves it,
	 * a use starts the next one at 0. */
	CU_ASSERT_EQUAL(quota_ctr_peek(&q, 2000, 12000, &start), 0);
	CU_ASSERT_EQUAL(start, 10000);
	CU_ASSERT_EQUAL(quota_ctr_used(&q, 2000, 12000, &start), 0);
	CU_ASSERT_EQUAL(start, 12000);
	CU_ASSERT_EQUAL(quota_ctr_add(&q, 5, 2000, 12001, NULL), 5);
	/* A window much later: one new window, not many. */
	CU_ASSERT_EQUAL(quota_ctr_add(&q, 9, 2000, 99999, &start), 9);
	CU_ASSERT_EQUAL(start, 99999);
	/* A longer window given later (a reload) applies to the count. */
	CU_ASSERT_EQUAL(quota_ctr_used(&q, 60000, 103000, &start), 9);
	CU_ASSERT_EQUAL(start, 99999);
}

/* Requests: limit of them per window, a refusal counts nothing. */
static void
test_quota_take(void)
{
	struct quota_ctr	q;
	uint64_t		start;
	int			i;

	quota_ctr_init(&q);
	for (i = 0; i < 3; i++)
		CU_ASSERT_TRUE(quota_ctr_take(&q, 3, 1000, 500 + i, &start));
	CU_ASSERT_FALSE(quota_ctr_take(&q, 3, 1000, 600, &start));
	CU_ASSERT_FALSE(quota_ctr_take(&q, 3, 1000, 601, &start));
	CU_ASSERT_EQUAL(quota_ctr_used(&q, 1000, 602, NULL), 3);
	/* One given back is there to take again. */
	quota_ctr_put(&q);
	CU_ASSERT_EQUAL(quota_ctr_used(&q, 1000, 603, NULL), 2);
	CU_ASSERT_TRUE(quota_ctr_take(&q, 3, 1000, 604, &start));
	CU_ASSERT_FALSE(quota_ctr_take(&q, 3, 1000, 605, &start));
	/* A lower limit (a reload) refuses at once. */
	CU_ASSERT_FALSE(quota_ctr_take(&q, 2, 1000, 606, &start));
	/* After the window: again 3. */
	for (i = 0; i < 3; i++)
		CU_ASSERT_TRUE(quota_ctr_take(&q, 3, 1000, 1500 + i, &start));
	CU_ASSERT_EQUAL(start, 1500);
	CU_ASSERT_FALSE(quota_ctr_take(&q, 3, 1000, 1600, &start));
	/* Given back after the window turned: never below 0. */
	CU_ASSERT_EQUAL(quota_ctr_used(&q, 1000, 5000, NULL), 0);
	quota_ctr_put(&q);
	quota_ctr_put(&q);
	CU_ASSERT_EQUAL(quota_ctr_used(&q, 1000, 5001, NULL), 0);
}

/* The crossing of a window is claimed once, the next window's again. */
static void
test_quota_claim(void)
{
	struct quota_ctr	q;

	quota_ctr_init(&q);
	CU_ASSERT_TRUE(quota_ctr_claim(&q, 10000));
	CU_ASSERT_FALSE(quota_ctr_claim(&q, 10000));
	CU_ASSERT_FALSE(quota_ctr_claim(&q, 10000));
	CU_ASSERT_TRUE(quota_ctr_claim(&q, 12000));
	CU_ASSERT_FALSE(quota_ctr_claim(&q, 12000));
}

static const char	q_json[] = "{" LISTEN ", \"policy\": {"
    "\"quota\": {\"bytes_up\": 5000, \"per_seconds\": 600}, \"rules\": ["
    "{\"name\": \"up\", \"action\": \"allow\", \"hosts\": [\"up.example\"], "
    "\"quota\": {\"bytes_up\": 1000, \"per_seconds\": 600}}, "
    "{\"name\": \"free\", \"action\": \"allow\", \"hosts\": "
    "[\"free.example\"]}]}}";
/* The same names, other limits: what a reload may bring. */
static const char	q2_json[] = "{" LISTEN ", \"policy\": {"
    "\"quota\": {\"bytes_up\": 50000, \"per_seconds\": 600}, \"rules\": ["
    "{\"name\": \"free\", \"action\": \"allow\", \"hosts\": "
    "[\"free.example\"]}, "
    "{\"name\": \"up\", \"action\": \"allow\", \"hosts\": [\"up.example\"], "
    "\"quota\": {\"bytes_up\": 2000, \"per_seconds\": 600}}]}}";

static const struct policy_rule *
rule_of(struct moat_config *c, const char *host)
{
	struct policy_decision	d;

	CU_ASSERT_EQUAL_FATAL(unit_policy_decide(c, host, NULL, 443, NULL,
	    NULL, &d), POLICY_ALLOW);
	return d.rule;
}

/* Byte quotas: admitted, charged, used up, per sandbox, by name. */
static void
test_quota_hold(void)
{
	struct moat_config	*c, *c2;
	struct sandbox		*sb, *sb2;
	struct quota_hold	 h, h2;
	const struct policy_rule *up, *free_;
	uint64_t		 b;
	unsigned		 per;
	char			 why[256];

	memset(&h, 0, sizeof(h));
	memset(&h2, 0, sizeof(h2));
	CU_ASSERT_PTR_NOT_NULL_FATAL(c = load(q_json));
	CU_ASSERT_PTR_NOT_NULL_FATAL(sb = sandbox_new("q1", NULL));
	CU_ASSERT_PTR_NOT_NULL_FATAL(sb2 = sandbox_new("q2", NULL));
	up = rule_of(c, "up.example");
	free_ = rule_of(c, "free.example");
	CU_ASSERT_TRUE(policy_rule_quota(up, &b, &per));
	CU_ASSERT_EQUAL(b, 1000);
	CU_ASSERT_EQUAL(per, 600);
	CU_ASSERT_FALSE(policy_rule_quota(free_, &b, &per));
	CU_ASSERT_TRUE(policy_quota(c->policy, &b, &per));
	CU_ASSERT_EQUAL(b, 5000);

	/* A sandbox that never met a quota holds no counts. */
	CU_ASSERT_PTR_NULL(atomic_load(&sb->quota));
	CU_ASSERT_TRUE(quota_admit(&h, sb, c->policy, up, why, sizeof(why)));
	CU_ASSERT_EQUAL(h.n, 2);	/* the rule's and the sandbox's */
	CU_ASSERT_FALSE(quota_charge(&h, 600));
	CU_ASSERT_FALSE(quota_charge(&h, 0));
	/* Bytes that reach the limit fit; one more does not. */
	CU_ASSERT_FALSE(quota_charge(&h, 400));
	CU_ASSERT_TRUE(quota_charge(&h, 1));
	CU_ASSERT_EQUAL(h.over, QUOTA_RULE);
	quota_why(&h, why, sizeof(why));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "rule up's quota (1000 bytes up "
	    "per 600 s)"));
	/* A new request under the rule: refused, h holds nothing. */
	CU_ASSERT_FALSE(quota_admit(&h, sb, c->policy, up, why, sizeof(why)));
	CU_ASSERT_EQUAL(h.n, 0);
	CU_ASSERT_EQUAL(h.over, QUOTA_RULE);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "rule up's quota"));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "is used up"));
	/* Another rule: only the sandbox's quota (1001 of 5000 used). */
	CU_ASSERT_TRUE(quota_admit(&h, sb, c->policy, free_, why,
	    sizeof(why)));
	CU_ASSERT_EQUAL(h.n, 1);
	CU_ASSERT_FALSE(quota_charge(&h, 3999));
	CU_ASSERT_TRUE(quota_charge(&h, 1));
	CU_ASSERT_EQUAL(h.over, QUOTA_SANDBOX);
	quota_release(&h);
	CU_ASSERT_EQUAL(h.n, 0);
	CU_ASSERT_FALSE(quota_admit(&h, sb, c->policy, free_, why,
	    sizeof(why)));
	CU_ASSERT_EQUAL(h.over, QUOTA_SANDBOX);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "the sandbox's quota"));
	/* Another sandbox counts on its own. */
	CU_ASSERT_TRUE(quota_admit(&h2, sb2, c->policy, up, why,
	    sizeof(why)));
	CU_ASSERT_FALSE(quota_charge(&h2, 999));
	/* A hold moves whole (to a tunnel). */
	quota_hold_move(&h, &h2);
	CU_ASSERT_EQUAL(h2.n, 0);
	CU_ASSERT_EQUAL(h.n, 2);
	CU_ASSERT_FALSE(quota_charge(&h, 1));
	CU_ASSERT_TRUE(quota_charge(&h, 1));
	quota_release(&h);
	quota_release(&h2);

	/*
	 * A reload: the same names in another order, higher limits.  The
	 * counts are kept (rule up: 1001 counted, now of 2000; the
	 * sandbox: 5001 of 50000) and the new limits apply to them.
	 */
	CU_ASSERT_PTR_NOT_NULL_FATAL(c2 = load(q2_json));
	up = rule_of(c2, "up.example");
	CU_ASSERT_TRUE(quota_admit(&h, sb, c2->policy, up, why, sizeof(why)));
	CU_ASSERT_FALSE(quota_charge(&h, 999));
	CU_ASSERT_TRUE(quota_charge(&h, 1));
	CU_ASSERT_EQUAL(h.over, QUOTA_RULE);
	quota_release(&h);
	/* Back to the first config: its lower limits, the same counts. */
	up = rule_of(c, "up.example");
	CU_ASSERT_FALSE(quota_admit(&h, sb, c->policy, up, why, sizeof(why)));
	/* No policy quota, no rule quota: nothing held, no lock. */
	CU_ASSERT_TRUE(quota_admit(&h, sb, NULL, NULL, why, sizeof(why)));
	CU_ASSERT_EQUAL(h.n, 0);

	sandbox_unref(sb);
	sandbox_unref(sb2);
	policy_config_unref(c);
	policy_config_unref(c2);
}

/* A sandbox keeps at most QUOTA_ENTRIES_MAX counts whose windows run. */
static void
test_quota_entries(void)
{
	struct sandbox	*sb;
	char		 name[32], why[256];
	int		 i, ok = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(sb = sandbox_new("qmax", NULL));
	for (i = 0; i < QUOTA_ENTRIES_MAX; i++) {
		snprintf(name, sizeof(name), "S%d", i);
		ok += quota_secret_take(sb, name, 10, 86400, why, sizeof(why));
	}
	CU_ASSERT_EQUAL(ok, QUOTA_ENTRIES_MAX);
	CU_ASSERT_FALSE(quota_secret_take(sb, "ONE_MORE", 10, 86400, why,
	    sizeof(why)));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "could not be had"));
	/* Those it has still count. */
	CU_ASSERT_TRUE(quota_secret_take(sb, "S7", 10, 86400, why,
	    sizeof(why)));
	sandbox_unref(sb);
}

static const char	s_json[] = "{" LISTEN ", " TLS ", \"secrets\": {"
    "\"A\": {\"env\": \"" A_ENV "\", \"quota\": {\"requests\": 5, "
    "\"per_seconds\": 600}}, "
    "\"B\": {\"env\": \"" B_ENV "\", \"quota\": {\"requests\": 1, "
    "\"per_seconds\": 600}}}, \"policy\": {\"rules\": ["
    "{\"name\": \"ab\", \"action\": \"allow\", \"hosts\": [\"ab.example\"], "
    "\"inject\": [{\"header\": \"X-A\", \"value\": \"${A}\"}, "
    "{\"header\": \"X-B\", \"value\": \"${B}\"}]}, "
    "{\"name\": \"a\", \"action\": \"allow\", \"hosts\": [\"a.example\"], "
    "\"inject\": [{\"header\": \"X-A\", \"value\": \"${A}\"}]}, "
    "{\"name\": \"none\", \"action\": \"allow\", \"hosts\": "
    "[\"none.example\"]}]}}";

/* One request to host through inject.c: its quota refusal, or NULL. */
static const char *
secret_request(struct moat_config *c, struct secrets *sec,
    struct sandbox *sb, const char *host, char *why, size_t len)
{
	static char		 name[64];
	struct inject_req	 rq;
	struct policy_decision	 d;
	struct inject		*in;
	struct evbuffer		*out;
	enum policy_reason	 r;
	const char		*detail, *who;

	CU_ASSERT_EQUAL_FATAL(unit_policy_decide(c, host, NULL, 443, "GET",
	    "/", &d), POLICY_ALLOW);
	memset(&rq, 0, sizeof(rq));
	rq.policy = c->policy;
	rq.rule = d.rule;
	rq.method = "GET";
	rq.path = "/";
	rq.tls = true;
	rq.host = host;
	rq.port = 443;
	rq.sb = sb;
	rq.secrets = sec;
	in = inject_begin(&rq, &r, &detail);
	CU_ASSERT_EQUAL(r, POLICY_R_ALLOWED);
	CU_ASSERT_FATAL((out = evbuffer_new()) != NULL);
	CU_ASSERT_EQUAL(inject_add_headers(in, out, &detail), 0);
	who = inject_quota_take(in, why, len);
	/* Asked again for the same request: nothing more is taken. */
	if (who == NULL)
		CU_ASSERT_PTR_NULL(inject_quota_take(in, why, len));
	if (who != NULL)
		snprintf(name, sizeof(name), "%s", who);
	evbuffer_free(out);
	inject_end(in);
	return who != NULL ? name : NULL;
}

/* inject_quota_room() for a request to host. */
static int
secret_room(struct moat_config *c, struct secrets *sec, struct sandbox *sb,
    const char *host, char *why, size_t len)
{
	struct inject_req	 rq;
	struct policy_decision	 d;

	CU_ASSERT_EQUAL_FATAL(unit_policy_decide(c, host, NULL, 443, "GET",
	    "/", &d), POLICY_ALLOW);
	memset(&rq, 0, sizeof(rq));
	rq.policy = c->policy;
	rq.rule = d.rule;
	rq.method = "GET";
	rq.path = "/";
	rq.host = host;
	rq.port = 443;
	rq.sb = sb;
	rq.secrets = sec;
	return inject_quota_room(&rq, why, len);
}

/* Secrets' request quotas through inject.c. */
static void
test_quota_secret(void)
{
	struct moat_config	*c;
	struct secrets		*sec;
	struct sandbox		*sb, *sb2;
	unsigned		 req, per;
	const char		*who;
	char			 why[256], err[256];
	int			 i;

	CU_ASSERT_EQUAL_FATAL(setenv(A_ENV, "quota-unit-secret-A-0123", 1), 0);
	CU_ASSERT_EQUAL_FATAL(setenv(B_ENV, "quota-unit-secret-B-4567", 1), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c = load(s_json));
	CU_ASSERT_PTR_NOT_NULL_FATAL(sec = secrets_load(c, true, err,
	    sizeof(err)));
	CU_ASSERT_EQUAL(c->secrets[0].quota_requests, 5);
	CU_ASSERT_EQUAL(c->secrets[0].quota_per_seconds, 600);
	CU_ASSERT_TRUE(secrets_quota(sec, 1, &req, &per));
	CU_ASSERT_EQUAL(req, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(sb = sandbox_new("qs", NULL));
	CU_ASSERT_PTR_NOT_NULL_FATAL(sb2 = sandbox_new("qs2", NULL));

	/* A request carrying A and B: one of each. */
	CU_ASSERT_PTR_NULL(secret_request(c, sec, sb, "ab.example", why,
	    sizeof(why)));
	/* B's one is gone: refused, and A's given back. */
	who = secret_request(c, sec, sb, "ab.example", why, sizeof(why));
	CU_ASSERT_PTR_NOT_NULL_FATAL(who);
	CU_ASSERT_STRING_EQUAL(who, "B");
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "secret B's quota (1 requests per "
	    "600 s) is used up"));
	CU_ASSERT_PTR_NULL(strstr(why, "quota-unit-secret"));
	/* A: 1 of 5 used, so 4 more pass, then it is refused. */
	for (i = 0; i < 4; i++)
		CU_ASSERT_PTR_NULL(secret_request(c, sec, sb, "a.example",
		    why, sizeof(why)));
	who = secret_request(c, sec, sb, "a.example", why, sizeof(why));
	CU_ASSERT_PTR_NOT_NULL(who);
	if (who != NULL)
		CU_ASSERT_STRING_EQUAL(who, "A");
	/* Before routing: the rule that injects A is refused, one that
	 * injects nothing is not. */
	CU_ASSERT_EQUAL(secret_room(c, sec, sb, "a.example", why,
	    sizeof(why)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "secret A's quota"));
	CU_ASSERT_EQUAL(secret_room(c, sec, sb, "none.example", why,
	    sizeof(why)), 0);
	CU_ASSERT_EQUAL(secret_room(c, sec, sb2, "a.example", why,
	    sizeof(why)), 0);
	/* A request that carries no secret takes nothing. */
	CU_ASSERT_PTR_NULL(secret_request(c, sec, sb, "none.example", why,
	    sizeof(why)));
	/* Another sandbox: its own counts. */
	CU_ASSERT_PTR_NULL(secret_request(c, sec, sb2, "ab.example", why,
	    sizeof(why)));

	sandbox_unref(sb);
	sandbox_unref(sb2);
	secrets_unref(sec);
	policy_config_unref(c);
	unsetenv(A_ENV);
	unsetenv(B_ENV);
}

void
test_quota_register(void)
{
	CU_pSuite	s;

	s = CU_add_suite("quota", NULL, NULL);
	CU_add_test(s, "a window's count", test_quota_window);
	CU_add_test(s, "requests taken and given back", test_quota_take);
	CU_add_test(s, "a crossing claimed once per window", test_quota_claim);
	CU_add_test(s, "byte quotas of rules and sandboxes", test_quota_hold);
	CU_add_test(s, "at most QUOTA_ENTRIES_MAX counts", test_quota_entries);
	CU_add_test(s, "secrets' request quotas", test_quota_secret);
}
