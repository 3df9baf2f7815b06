/*
 * test_status.c - the admin ops list and stats and what `moat status`
 * prints of them: a sandbox's counters (proxy/sandbox.c, by audit line),
 * their JSON (proxy/adminrep.c: fields, paging by name under a size
 * budget, no room for a secret), and the text (launcher/statusfmt.c:
 * sizes, ages, the table, escaping, absent fields).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>
#include <jansson.h>

#include "launcher/status.h"
#include "proxy/adminrep.h"
#include "proxy/audit.h"
#include "proxy/sandbox.h"
#include "tests/unit/unit.h"

static json_int_t
geti(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

static void
test_counts(void)
{
	struct sandbox		*sb = sandbox_new("count", NULL);
	struct sandbox_counters	 c;
	struct audit_rec	 r;

	CU_ASSERT_PTR_NOT_NULL_FATAL(sb);
	audit_rec_init(&r);
	r.event = "request";
	r.verdict = POLICY_ALLOW;
	r.bytes_up = 100;
	r.bytes_down = 2000;
	sandbox_count(sb, &r);
	r.verdict = POLICY_DENY;
	r.bytes_up = r.bytes_down = -1;		/* absent: adds nothing */
	sandbox_count(sb, &r);
	r.event = "open";
	r.verdict = POLICY_ALLOW;
	r.would_deny = POLICY_R_NO_RULE;	/* audit mode let it through */
	sandbox_count(sb, &r);
	r.would_deny = POLICY_R_ALLOWED;
	r.event = "dns";
	r.verdict = POLICY_DENY;
	sandbox_count(sb, &r);
	/* An opaque tunnel's close: bytes, no decision. */
	audit_rec_init(&r);
	r.event = "close";
	r.verdict = POLICY_ALLOW;
	r.bytes_up = 7;
	r.bytes_down = 11;
	sandbox_count(sb, &r);
	/* Five connections refused at the limit: one line. */
	audit_rec_init(&r);
	r.event = "connection";
	r.verdict = POLICY_DENY;
	r.refused = 5;
	sandbox_count(sb, &r);
	/* The admin socket's lines are no decision of the sandbox's. */
	r.event = "sandbox";
	r.refused = -1;
	sandbox_count(sb, &r);
	sandbox_count(NULL, &r);
	(void)sandbox_conn_refused(sb, 1000);
	CU_ASSERT_EQUAL(sandbox_conn_take(sb, 10), 1);
	sandbox_counters(sb, &c);
	CU_ASSERT_EQUAL(c.allowed, 2);
	CU_ASSERT_EQUAL(c.denied, 2 + 5);
	CU_ASSERT_EQUAL(c.bytes_up, 107);
	CU_ASSERT_EQUAL(c.bytes_down, 2011);
	CU_ASSERT_EQUAL(c.conns_open, 1);
	CU_ASSERT_EQUAL(c.limit_refused, 1);
	CU_ASSERT_EQUAL(c.would_deny, 1);
	sandbox_conn_put(sb);
	sandbox_unref(sb);
}

static const struct adminrep_listener	LS[] = {
	{ "http+socks5", "127.0.0.1:3128" },
	{ "dns-udp", "127.0.0.1:53" }
};
static const char *const		SECRETS[] = { "OPENAI_API_KEY" };

static void
rep_init(struct adminrep_sandbox *s, const char *name)
{
	memset(s, 0, sizeof(*s));
	s->name = name;
	s->registered = true;
	s->own_policy = true;
	s->client_pid = 4242;
	s->limit = 2500;
	s->ls = LS;
	s->nls = 2;
	s->secrets = SECRETS;
	s->nsecrets = 1;
	s->c.age_ms = 61999;
	s->c.conns_open = 3;
	s->c.allowed = 120;
	s->c.denied = 4;
	s->c.bytes_up = 1 << 20;
	s->c.bytes_down = 30u << 20;
	s->c.limit_refused = 2;
	s->c.dropped = 9;
	s->c.would_deny = 5;
}

static void
test_sandbox_json(void)
{
	struct adminrep_sandbox	 s;
	json_t			*o, *l;
	char			*text;

	rep_init(&s, "job-42");
	o = adminrep_sandbox(&s);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(o,
	    "sandbox")), "job-42");
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(o, "kind")),
	    "registered");
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(o,
	    "policy")), "own");
	CU_ASSERT_EQUAL(geti(o, "client_pid"), 4242);
	CU_ASSERT_EQUAL(geti(o, "age_s"), 61);
	CU_ASSERT_EQUAL(geti(o, "limit"), 2500);
	CU_ASSERT_EQUAL(geti(o, "connections"), 3);
	CU_ASSERT_EQUAL(geti(o, "allowed"), 120);
	CU_ASSERT_EQUAL(geti(o, "denied"), 4);
	CU_ASSERT_EQUAL(geti(o, "refused_at_limit"), 2);
	CU_ASSERT_EQUAL(geti(o, "bytes_up"), 1 << 20);
	CU_ASSERT_EQUAL(geti(o, "bytes_down"), 30 << 20);
	l = json_object_get(o, "listeners");
	CU_ASSERT_EQUAL(json_array_size(l), 2);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(
	    json_array_get(l, 1), "address")), "127.0.0.1:53");
	CU_ASSERT_STRING_EQUAL(json_string_value(json_array_get(
	    json_object_get(o, "secrets"), 0)), "OPENAI_API_KEY");
	CU_ASSERT_EQUAL(geti(o, "dropped_packets"), 9);
	CU_ASSERT_EQUAL(geti(o, "would_deny"), 5);
	/* Exactly these fields: there is none a secret could go in. */
	CU_ASSERT_EQUAL(json_object_size(o), 16);
	json_decref(o);

	/* A configured listener's sandbox: no pid, the daemon's policy;
	 * counters past INT64_MAX are cut there. */
	s.registered = false;
	s.own_policy = false;
	s.client_pid = -1;
	s.c.bytes_up = UINT64_MAX;
	o = adminrep_sandbox(&s);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_PTR_NULL(json_object_get(o, "client_pid"));
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(o, "kind")),
	    "configured");
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(o,
	    "policy")), "moatd");
	CU_ASSERT_EQUAL(geti(o, "bytes_up"), INT64_MAX);
	text = json_dumps(o, JSON_COMPACT);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	CU_ASSERT_PTR_NULL(strstr(text, "moat-ph-"));
	free(text);
	json_decref(o);
}

/* The names of a list answer's sandboxes, joined by ' '. */
static const char *
names(json_t *ans)
{
	static char	 buf[1024];
	json_t		*v;
	size_t		 i, o = 0;

	buf[0] = '\0';
	json_array_foreach(json_object_get(ans, "sandboxes"), i, v)
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%s",
		    i ? " " : "", json_string_value(json_object_get(v,
		    "sandbox")));
	return buf;
}

static void
test_list_pages(void)
{
	static const char *const	 order[] = { "c", "a", "e", "b", "d" };
	struct adminrep_sandbox		 s[5];
	json_t				*ans, *one;
	size_t				 i, len;
	char				 after[8];
	int				 pages;

	for (i = 0; i < 5; i++)
		rep_init(&s[i], order[i]);
	ans = adminrep_list(s, 5, NULL, 1 << 20);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ans);
	CU_ASSERT_TRUE(json_is_true(json_object_get(ans, "ok")));
	CU_ASSERT_STRING_EQUAL(names(ans), "a b c d e");
	CU_ASSERT_PTR_NULL(json_object_get(ans, "more"));
	json_decref(ans);
	ans = adminrep_list(s, 5, "b", 1 << 20);
	CU_ASSERT_STRING_EQUAL(names(ans), "c d e");
	json_decref(ans);
	ans = adminrep_list(s, 5, "e", 1 << 20);
	CU_ASSERT_STRING_EQUAL(names(ans), "");
	json_decref(ans);
	ans = adminrep_list(NULL, 0, NULL, 1 << 20);
	CU_ASSERT_STRING_EQUAL(names(ans), "");
	json_decref(ans);

	/* A budget for about two: pages of two, "more" counts the rest,
	 * and the pages cover each sandbox once. */
	one = adminrep_sandbox(&s[0]);
	len = json_dumpb(one, NULL, 0, JSON_COMPACT) + 1;
	json_decref(one);
	ans = adminrep_list(s, 5, NULL, 64 + 2 * len + len / 2);
	CU_ASSERT_STRING_EQUAL(names(ans), "a b");
	CU_ASSERT_EQUAL(geti(ans, "more"), 3);
	json_decref(ans);
	after[0] = '\0';
	for (pages = 0; pages < 10; pages++) {
		ans = adminrep_list(s, 5, after[0] ? after : NULL,
		    64 + 2 * len + len / 2);
		if (json_object_get(ans, "more") == NULL) {
			CU_ASSERT_STRING_EQUAL(names(ans), "e");
			json_decref(ans);
			break;
		}
		snprintf(after, sizeof(after), "%s", json_string_value(
		    json_object_get(json_array_get(json_object_get(ans,
		    "sandboxes"), 1), "sandbox")));
		json_decref(ans);
	}
	CU_ASSERT_EQUAL(pages, 2);
	/* No budget at all: still one a page, never none. */
	ans = adminrep_list(s, 5, "c", 1);
	CU_ASSERT_STRING_EQUAL(names(ans), "d");
	CU_ASSERT_EQUAL(geti(ans, "more"), 1);
	json_decref(ans);
}

static void
test_stats_json(void)
{
	struct adminrep_stats	 st;
	json_t			*ans;

	memset(&st, 0, sizeof(st));
	st.version = "0.1.0";
	st.pid = 77;
	st.config = "/etc/moat/platform.json";
	st.uptime_ms = 7261500;
	st.workers = 4;
	st.registered = 2;
	st.configured = 1;
	st.admin_clients = 3;
	st.watches = 1;
	st.conns_open = 9;
	st.conns_limit = 10000;
	st.audit_queued_bytes = 512;
	st.audit_dropped = 6;
	st.audit_ok = false;
	st.reloads = 5;
	st.reloads_refused = 2;
	ans = adminrep_stats(&st);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ans);
	CU_ASSERT_EQUAL(geti(json_object_get(ans, "moatd"), "uptime_s"),
	    7261);
	CU_ASSERT_EQUAL(geti(json_object_get(ans, "moatd"), "pid"), 77);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(
	    json_object_get(ans, "moatd"), "config")),
	    "/etc/moat/platform.json");
	CU_ASSERT_EQUAL(geti(json_object_get(ans, "sandboxes"), "registered"),
	    2);
	CU_ASSERT_EQUAL(geti(json_object_get(ans, "connections"), "open"), 9);
	CU_ASSERT_EQUAL(geti(json_object_get(ans, "audit"), "dropped"), 6);
	CU_ASSERT_TRUE(json_is_false(json_object_get(json_object_get(ans,
	    "audit"), "ok")));
	CU_ASSERT_EQUAL(geti(json_object_get(ans, "reloads"), "refused"), 2);
	json_decref(ans);
}

static void
test_units(void)
{
	char	b[STATUS_FIELD_MAX];

	status_bytes(0, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "0 B");
	status_bytes(1023, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "1023 B");
	status_bytes(1536, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "1.5 KiB");
	status_bytes(30u << 20, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "30.0 MiB");
	status_bytes(UINT64_MAX, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "16384.0 PiB");
	status_age(12, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "12s");
	status_age(312, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "5m12s");
	status_age(7380, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "2h03m");
	status_age(3 * 86400 + 4 * 3600 + 59, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "3d04h");
}

/* What status_print() writes for these answers (JSON texts). */
static char *
printed(const char *stats, const char *sandboxes)
{
	json_t	*st = json_loads(stats, 0, NULL);
	json_t	*sb = json_loads(sandboxes, 0, NULL);
	char	*out = NULL;
	size_t	 len = 0;
	FILE	*f;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	CU_ASSERT_PTR_NOT_NULL_FATAL(sb);
	f = open_memstream(&out, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(status_print(f, st, sb), 0);
	fclose(f);
	json_decref(st);
	json_decref(sb);
	return out;
}

static void
test_text(void)
{
	char	*t;

	t = printed("{\"ok\": true, \"moatd\": {\"version\": \"0.1.0\", "
	    "\"pid\": 77, \"config\": \"/etc/moat/p.json\", \"uptime_s\": "
	    "7380, \"workers\": 1}, \"sandboxes\": {\"registered\": 1, "
	    "\"configured\": 0}, \"admin\": {\"clients\": 1, \"watches\": 0}, "
	    "\"connections\": {\"open\": 3, \"limit\": 10000}, \"audit\": "
	    "{\"queued_bytes\": 0, \"dropped\": 1, \"ok\": true}, "
	    "\"reloads\": {\"done\": 2, \"refused\": 1}}",
	    "[{\"sandbox\": \"job-42\", \"kind\": \"registered\", \"policy\": "
	    "\"own\", \"listeners\": [{\"proto\": \"http+socks5\", "
	    "\"address\": \"127.0.0.1:3128\"}, {\"proto\": \"dns-udp\", "
	    "\"address\": \"127.0.0.1:53\"}], \"secrets\": [\"API_KEY\"], "
	    "\"client_pid\": 4242, \"age_s\": 312, \"limit\": 2500, "
	    "\"connections\": 3, \"allowed\": 120, \"denied\": 4, "
	    "\"refused_at_limit\": 0, \"bytes_up\": 1048576, "
	    "\"bytes_down\": 31457280, \"would_deny\": 1, "
	    "\"dropped_packets\": 2}]");
	CU_ASSERT_PTR_NOT_NULL_FATAL(strstr(t, "moatd 0.1.0 (pid 77), up "
	    "2h03m, 1 worker, config /etc/moat/p.json\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(t, "connections: 3 open (limit "
	    "10000)\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(t, "audit: 0 B queued, 1 line dropped "
	    "since start\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(t, "reloads: 2 done, 1 refused\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(t, "\nSANDBOX  KIND  "));
	CU_ASSERT_PTR_NOT_NULL(strstr(t, "\njob-42   registered   5m12s      "
	    "3      120       4     1.0 MiB    30.0 MiB\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(t, "    policy own, limit 2500 "
	    "connections (0 refused at it), registered by pid 4242, 1 "
	    "would-deny (audit mode), 2 packets dropped\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(t, "    listeners: http+socks5 "
	    "127.0.0.1:3128, dns-udp 127.0.0.1:53\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(t, "    secrets: API_KEY\n"));
	free(t);

	/* Fields left out print as "-"; control bytes as '?'; a failing
	 * audit sink says so; no sandbox at all. */
	t = printed("{\"ok\": true, \"moatd\": {\"version\": \"x\\u001b[2J\"},"
	    " \"audit\": {\"ok\": false}}", "[]");
	CU_ASSERT_PTR_NOT_NULL(strstr(t, "moatd x?[2J (pid -), up 0s, - "
	    "workers, config -\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(t, "audit: FAILING"));
	CU_ASSERT_PTR_NOT_NULL(strstr(t, "\nno sandboxes\n"));
	CU_ASSERT_PTR_NULL(strchr(t, '\033'));
	free(t);
}

void
test_status_register(void)
{
	CU_pSuite s = CU_add_suite("status", NULL, NULL);

	CU_add_test(s, "a sandbox's counters, by audit line", test_counts);
	CU_add_test(s, "list: a sandbox's fields, names of secrets only",
	    test_sandbox_json);
	CU_add_test(s, "list: sorted, after, pages under a budget",
	    test_list_pages);
	CU_add_test(s, "stats: its fields", test_stats_json);
	CU_add_test(s, "moat status: sizes and ages", test_units);
	CU_add_test(s, "moat status: the text, escaped, absent fields",
	    test_text);
}
