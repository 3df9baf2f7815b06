/*
 * test_metrics.c - the metrics counters and their text exposition
 * (proxy/metrics.c): label escaping, what each audit line counts, the
 * caps on sandboxes, rules and series, places handed to new names,
 * histograms, sums over threads.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "proxy/audit.h"
#include "proxy/metrics.h"
#include "tests/unit/unit.h"

#define NONE	UINT64_MAX

static char	*mt_text;

static void
mt_start(size_t sandboxes, size_t rules, size_t series)
{
	struct metrics_limits	lim = { sandboxes, rules, series };

	CU_ASSERT_EQUAL_FATAL(metrics_init(&lim), 0);
}

/* Renders now; mt_text holds the scrape until the next call. */
static const char *
mt_scrape(void)
{
	struct metrics_extra	x = { 11, 12, 13, 14 };
	size_t			len = 0;

	free(mt_text);
	mt_text = metrics_render(&x, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(mt_text);
	CU_ASSERT_EQUAL(strlen(mt_text), len);
	return mt_text;
}

/* The value of the sample "series" (name and labels as written). */
static uint64_t
mt_val(const char *series)
{
	const char	*p = mt_text;
	size_t		 n = strlen(series);

	while (p != NULL && *p != '\0') {
		if (strncmp(p, series, n) == 0 && p[n] == ' ')
			return strtoull(p + n + 1, NULL, 10);
		if ((p = strchr(p, '\n')) != NULL)
			p++;
	}
	return NONE;
}

static void
mt_line(const char *event, const char *sb, const char *rule,
    enum policy_verdict v, enum policy_reason reason, int64_t up,
    int64_t down)
{
	struct audit_rec	r;

	audit_rec_init(&r);
	r.event = event;
	r.sandbox = sb;
	r.rule = rule;
	r.verdict = v;
	r.reason = reason;
	r.bytes_up = up;
	r.bytes_down = down;
	metrics_audit(&r);
}

static void
mt_deny(const char *sb, const char *rule)
{
	mt_line("request", sb, rule, POLICY_DENY, POLICY_R_NO_RULE, 0, 0);
}

static void
test_metrics_escape(void)
{
	char	out[64];

	CU_ASSERT_EQUAL(metrics_escape("plain", out, sizeof(out)), 5);
	CU_ASSERT_STRING_EQUAL(out, "plain");
	CU_ASSERT_EQUAL(metrics_escape("a\\b\"c\nd", out, sizeof(out)), 10);
	CU_ASSERT_STRING_EQUAL(out, "a\\\\b\\\"c\\nd");
	/* Cut short: never half an escape. */
	CU_ASSERT_EQUAL(metrics_escape("ab\"", out, 4), 4);
	CU_ASSERT_STRING_EQUAL(out, "ab");
	CU_ASSERT_EQUAL(metrics_escape("\n\n", out, 4), 4);
	CU_ASSERT_STRING_EQUAL(out, "\\n");
	CU_ASSERT_EQUAL(metrics_escape("x", out, 0), 1);

	/* In a scrape: the label values of a name as the audit line had
	 * it (moatd's names cannot hold these, but a scrape stays valid
	 * whatever a name holds). */
	mt_start(8, 8, 64);
	mt_deny("q\"b\\s\nx", NULL);
	mt_scrape();
	CU_ASSERT_EQUAL(mt_val("moat_decisions_total{sandbox=\"q\\\"b\\\\s\\nx\","
	    "verdict=\"deny\",reason=\"no-rule\",rule=\"\"}"), 1);
	metrics_free();
}

static void
test_metrics_lines(void)
{
	struct audit_rec	 r;
	const char		*inj[] = { "GH_TOKEN", "NPM_TOKEN", NULL };

	mt_start(8, 8, 64);
	mt_line("request", "s", "web", POLICY_ALLOW, POLICY_R_ALLOWED, 100,
	    2000);
	mt_line("request", "s", "web", POLICY_ALLOW, POLICY_R_ALLOWED, 10,
	    20);
	mt_line("open", "s", "web", POLICY_ALLOW, POLICY_R_ALLOWED, -1, -1);
	mt_line("close", "s", "web", POLICY_ALLOW, POLICY_R_ALLOWED, 7, 9);
	mt_line("dns", "s", "web", POLICY_DENY, POLICY_R_DNS_DENIED, -1, -1);
	mt_line("sandbox", "s", NULL, POLICY_ALLOW, POLICY_R_ALLOWED, -1, -1);
	/* An inspected tunnel's close: its bytes were its requests'. */
	audit_rec_init(&r);
	r.event = "close";
	r.sandbox = "s";
	r.rule = "web";
	r.detail = "inspected";
	r.bytes_up = 5000;
	r.bytes_down = 5000;
	metrics_audit(&r);
	/* A connection line stands for each refusal it counts. */
	audit_rec_init(&r);
	r.event = "connection";
	r.sandbox = "s";
	r.verdict = POLICY_DENY;
	r.reason = POLICY_R_LIMIT;
	r.refused = 5;
	metrics_audit(&r);
	audit_rec_init(&r);
	r.event = "request";
	r.sandbox = "s";
	r.rule = "web";
	r.verdict = POLICY_ALLOW;
	r.injected = inj;
	metrics_audit(&r);
	metrics_secret_leak("GH_TOKEN");
	metrics_reload(true);
	metrics_reload(false);
	metrics_reload(false);

	mt_scrape();
	CU_ASSERT_EQUAL(mt_val("moat_decisions_total{sandbox=\"s\",verdict="
	    "\"allow\",reason=\"allowed\",rule=\"web\"}"), 4);
	CU_ASSERT_EQUAL(mt_val("moat_decisions_total{sandbox=\"s\",verdict="
	    "\"deny\",reason=\"dns-denied\",rule=\"web\"}"), 1);
	CU_ASSERT_EQUAL(mt_val("moat_decisions_total{sandbox=\"s\",verdict="
	    "\"deny\",reason=\"limit\",rule=\"\"}"), 5);
	CU_ASSERT_EQUAL(mt_val("moat_bytes_total{sandbox=\"s\",rule=\"web\","
	    "direction=\"up\"}"), 117);
	CU_ASSERT_EQUAL(mt_val("moat_bytes_total{sandbox=\"s\",rule=\"web\","
	    "direction=\"down\"}"), 2029);
	CU_ASSERT_EQUAL(mt_val("moat_secrets_injected_total{secret="
	    "\"GH_TOKEN\"}"), 1);
	CU_ASSERT_EQUAL(mt_val("moat_secrets_injected_total{secret="
	    "\"NPM_TOKEN\"}"), 1);
	CU_ASSERT_EQUAL(mt_val("moat_secret_leaks_refused_total{secret="
	    "\"GH_TOKEN\"}"), 1);
	CU_ASSERT_EQUAL(mt_val("moat_reloads_total"), 1);
	CU_ASSERT_EQUAL(mt_val("moat_reload_failures_total"), 2);
	CU_ASSERT_EQUAL(mt_val("moat_audit_queue_bytes"), 11);
	CU_ASSERT_EQUAL(mt_val("moat_audit_lines_dropped_total"), 12);
	CU_ASSERT_EQUAL(mt_val("moat_tls_leaf_cache_hits_total"), 13);
	CU_ASSERT_EQUAL(mt_val("moat_tls_leaf_cache_misses_total"), 14);
	CU_ASSERT_EQUAL(mt_val("moat_build_info{version=\"" PACKAGE_VERSION
	    "\"}"), 1);
	CU_ASSERT_EQUAL(mt_val("moat_metrics_folded_total{label=\"sandbox\"}"),
	    0);
	CU_ASSERT_PTR_NOT_NULL(strstr(mt_text, "# TYPE moat_decisions_total "
	    "counter\n"));
	metrics_free();
}

static void
test_metrics_caps(void)
{
	struct metrics_sb	a, b;
	char			name[32], series[160];
	int			i, own;

	/* Two live sandboxes take both places: a third name is (other). */
	mt_start(2, 1, 16);
	metrics_sandbox_hold(&a, "a");
	metrics_sandbox_hold(&b, "b");
	mt_deny("a", "r1");
	mt_deny("a", "r2");		/* past max_rules */
	mt_deny("b", NULL);
	mt_deny("c", "r1");		/* past max_sandboxes */
	mt_deny("c", NULL);
	mt_scrape();
	CU_ASSERT_EQUAL(mt_val("moat_decisions_total{sandbox=\"a\",verdict="
	    "\"deny\",reason=\"no-rule\",rule=\"r1\"}"), 1);
	CU_ASSERT_EQUAL(mt_val("moat_decisions_total{sandbox=\"a\",verdict="
	    "\"deny\",reason=\"no-rule\",rule=\"(other)\"}"), 1);
	CU_ASSERT_EQUAL(mt_val("moat_decisions_total{sandbox=\"(other)\","
	    "verdict=\"deny\",reason=\"no-rule\",rule=\"(other)\"}"), 1);
	CU_ASSERT_EQUAL(mt_val("moat_decisions_total{sandbox=\"(other)\","
	    "verdict=\"deny\",reason=\"no-rule\",rule=\"\"}"), 1);
	CU_ASSERT_EQUAL(mt_val("moat_decisions_total{sandbox=\"c\",verdict="
	    "\"deny\",reason=\"no-rule\",rule=\"\"}"), NONE);
	CU_ASSERT_EQUAL(mt_val("moat_metrics_folded_total{label=\"rule\"}"),
	    2);
	CU_ASSERT_EQUAL(mt_val("moat_metrics_folded_total{label=\"sandbox\"}"),
	    2);
	metrics_sandbox_release(&a);
	metrics_sandbox_release(&b);
	metrics_free();

	/* 16 series, then every new one goes to the overflow series. */
	mt_start(100, 100, 16);
	for (i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		mt_deny(name, NULL);
	}
	mt_scrape();
	CU_ASSERT_EQUAL(mt_val("moat_decisions_total{sandbox=\"s15\",verdict="
	    "\"deny\",reason=\"no-rule\",rule=\"\"}"), 1);
	CU_ASSERT_EQUAL(mt_val("moat_decisions_total{sandbox=\"s16\",verdict="
	    "\"deny\",reason=\"no-rule\",rule=\"\"}"), NONE);
	CU_ASSERT_EQUAL(mt_val("moat_decisions_total{sandbox=\"(other)\","
	    "verdict=\"deny\",reason=\"no-rule\",rule=\"(other)\"}"), 24);
	CU_ASSERT_EQUAL(mt_val("moat_metrics_folded_total{label=\"series\"}"),
	    24);
	for (i = 0, own = 0; i < 40; i++) {
		snprintf(series, sizeof(series), "moat_decisions_total{sandbox="
		    "\"s%d\",", i);
		if (strstr(mt_text, series) != NULL)
			own++;
	}
	CU_ASSERT_EQUAL(own, 16);
	metrics_free();
}

/* A name whose sandboxes are gone gives its place to a new one; a live
 * sandbox keeps its own. */
static void
test_metrics_reuse(void)
{
	struct metrics_sb	a, b, c;

	mt_start(2, 8, 64);
	metrics_sandbox_hold(&a, "a");
	metrics_sandbox_hold(&b, "b");
	mt_deny("a", "r");
	mt_deny("b", "r");
	metrics_conn(&a, MOAT_PROTO_HTTP, true);
	metrics_dns_reply(&b, 3, 0);
	metrics_dns_reply(&b, 0, 2);
	mt_scrape();
	CU_ASSERT_EQUAL(mt_val("moat_connections_open{sandbox=\"a\","
	    "listener=\"http\"}"), 1);
	CU_ASSERT_EQUAL(mt_val("moat_dns_responses_total{sandbox=\"b\","
	    "rcode=\"NXDOMAIN\"}"), 1);
	CU_ASSERT_EQUAL(mt_val("moat_dns_answer_addresses_total{sandbox="
	    "\"b\"}"), 2);
	/* Full, both held: a third name is (other). */
	metrics_sandbox_hold(&c, "c");
	mt_deny("c", "r");
	mt_scrape();
	CU_ASSERT_EQUAL(mt_val("moat_decisions_total{sandbox=\"(other)\","
	    "verdict=\"deny\",reason=\"no-rule\",rule=\"(other)\"}"), 1);
	metrics_sandbox_release(&c);
	/* b goes: its series stay until its place is needed. */
	metrics_sandbox_release(&b);
	mt_scrape();
	CU_ASSERT_EQUAL(mt_val("moat_decisions_total{sandbox=\"b\",verdict="
	    "\"deny\",reason=\"no-rule\",rule=\"r\"}"), 1);
	metrics_sandbox_hold(&c, "c");
	mt_deny("c", "r");
	mt_deny("c", "r");
	mt_scrape();
	CU_ASSERT_EQUAL(mt_val("moat_decisions_total{sandbox=\"b\",verdict="
	    "\"deny\",reason=\"no-rule\",rule=\"r\"}"), NONE);
	CU_ASSERT_EQUAL(mt_val("moat_dns_responses_total{sandbox=\"b\","
	    "rcode=\"NXDOMAIN\"}"), NONE);
	/* c starts from zero in b's place, b's counts are not its. */
	CU_ASSERT_EQUAL(mt_val("moat_decisions_total{sandbox=\"c\",verdict="
	    "\"deny\",reason=\"no-rule\",rule=\"r\"}"), 2);
	CU_ASSERT_EQUAL(mt_val("moat_dns_responses_total{sandbox=\"c\","
	    "rcode=\"NXDOMAIN\"}"), NONE);
	CU_ASSERT_EQUAL(mt_val("moat_decisions_total{sandbox=\"a\",verdict="
	    "\"deny\",reason=\"no-rule\",rule=\"r\"}"), 1);
	metrics_conn(&a, MOAT_PROTO_HTTP, false);
	mt_scrape();
	CU_ASSERT_EQUAL(mt_val("moat_connections_open{sandbox=\"a\","
	    "listener=\"http\"}"), 0);
	CU_ASSERT_EQUAL(mt_val("moat_metrics_sandbox_names"), 2);
	metrics_sandbox_release(&a);
	metrics_sandbox_release(&c);
	metrics_free();
}

static void
test_metrics_hist(void)
{
	uint64_t	t0;

	mt_start(8, 8, 64);
	t0 = metrics_clock() - 2000000;		/* 2 ms ago */
	metrics_observe(METRICS_H_TTFB, &t0);
	CU_ASSERT_EQUAL(t0, 0);
	metrics_observe(METRICS_H_TTFB, &t0);	/* a second end: nothing */
	t0 = metrics_clock() - 3000000000ull;	/* 3 s ago */
	metrics_observe(METRICS_H_TTFB, &t0);
	mt_scrape();
	CU_ASSERT_EQUAL(mt_val("moat_upstream_first_byte_seconds_bucket"
	    "{le=\"0.001\"}"), 0);
	CU_ASSERT_EQUAL(mt_val("moat_upstream_first_byte_seconds_bucket"
	    "{le=\"0.0025\"}"), 1);
	CU_ASSERT_EQUAL(mt_val("moat_upstream_first_byte_seconds_bucket"
	    "{le=\"2.5\"}"), 1);
	CU_ASSERT_EQUAL(mt_val("moat_upstream_first_byte_seconds_bucket"
	    "{le=\"5\"}"), 2);
	CU_ASSERT_EQUAL(mt_val("moat_upstream_first_byte_seconds_bucket"
	    "{le=\"+Inf\"}"), 2);
	CU_ASSERT_EQUAL(mt_val("moat_upstream_first_byte_seconds_count"), 2);
	CU_ASSERT_EQUAL(mt_val("moat_decision_seconds_count"), 0);
	/* _sum is in seconds: 3.002 and a little. */
	CU_ASSERT_PTR_NOT_NULL(strstr(mt_text,
	    "moat_upstream_first_byte_seconds_sum 3.00"));
	metrics_free();
	/* Off: no clock, nothing counted. */
	CU_ASSERT_EQUAL(metrics_clock(), 0);
}

static void *
mt_thread(void *arg)
{
	int	i;

	for (i = 0; i < 1000; i++)
		mt_deny(arg, "r");
	return NULL;
}

/* Each thread counts in its own counters; a scrape adds them up. */
static void
test_metrics_threads(void)
{
	pthread_t	t[3];
	int		i;

	mt_start(8, 8, 64);
	for (i = 0; i < 3; i++)
		CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, mt_thread,
		    "x"), 0);
	for (i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	mt_deny("x", "r");
	mt_scrape();
	CU_ASSERT_EQUAL(mt_val("moat_decisions_total{sandbox=\"x\",verdict="
	    "\"deny\",reason=\"no-rule\",rule=\"r\"}"), 3001);
	metrics_free();
	free(mt_text);
	mt_text = NULL;
}

void
test_metrics_register(void)
{
	CU_pSuite s = CU_add_suite("metrics", NULL, NULL);

	CU_add_test(s, "label values are escaped", test_metrics_escape);
	CU_add_test(s, "what each audit line counts", test_metrics_lines);
	CU_add_test(s, "caps on sandboxes, rules and series",
	    test_metrics_caps);
	CU_add_test(s, "a gone name's place goes to a new one",
	    test_metrics_reuse);
	CU_add_test(s, "histograms", test_metrics_hist);
	CU_add_test(s, "threads are summed", test_metrics_threads);
}
