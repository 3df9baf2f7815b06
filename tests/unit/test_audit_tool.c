/*
 * test_audit_tool.c - `moat audit` (launcher/audit_*.c) without files of
 * moatd: the line scanner against jansson, the reader's limits (a line
 * too long, a last line cut, gzip), --since/--until, the summary's
 * counts, the grouping of suggest and its check, replay's judgement, and
 * verify on lines chained by moatd's own writer code (proxy/auditchain.c,
 * OpenSSL), changed, removed and inserted.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/CUnit.h>
#include <jansson.h>

#include "launcher/audit_cmd.h"
#include "policy/policy.h"
#include "proxy/auditchain.h"
#include "tests/unit/unit.h"

#define L_REQ	"{\"ts\":\"2026-11-29T13:42:38.789Z\",\"event\":\"request\"," \
	"\"id\":1,\"sandbox\":\"demo\",\"proto\":\"https\",\"client\":" \
	"\"127.0.0.1:47676\",\"host\":\"api.x.com\",\"port\":443,\"ip\":" \
	"\"198.51.100.7\",\"verdict\":\"allow\",\"reason\":\"allowed\"," \
	"\"rule\":\"api\",\"method\":\"GET\",\"path\":\"/v1/a?q=\\u00e9\\\"\"," \
	"\"status\":200,\"bytes_up\":0,\"bytes_down\":65,\"duration_ms\":2," \
	"\"injected\":[\"API_KEY\",\"B\"]}"

/* Both paths of the scanner give the same fields. */
static void
test_scan_paths(void)
{
	struct audit_scan	*s = audit_scan_new(), *t = audit_scan_new();
	struct audit_ln		 a, b;
	const char		*err;

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	CU_ASSERT_EQUAL(audit_scan_line(s, L_REQ, strlen(L_REQ), &a, false,
	    &err), 0);
	CU_ASSERT_EQUAL(audit_scan_line(t, L_REQ, strlen(L_REQ), &b, true,
	    &err), 0);
	CU_ASSERT_STRING_EQUAL(a.event, "request");
	CU_ASSERT_STRING_EQUAL(a.path, "/v1/a?q=\xc3\xa9\"");
	CU_ASSERT_STRING_EQUAL(a.path, b.path);
	CU_ASSERT_STRING_EQUAL(a.host, b.host);
	CU_ASSERT_STRING_EQUAL(a.client, b.client);
	CU_ASSERT_EQUAL(a.port, 443);
	CU_ASSERT_EQUAL(b.port, 443);
	CU_ASSERT_EQUAL(a.bytes_down, 65);
	CU_ASSERT_EQUAL(a.status, b.status);
	CU_ASSERT_EQUAL(a.ninjected, 2);
	CU_ASSERT_EQUAL(b.ninjected, 2);
	CU_ASSERT_STRING_EQUAL(a.injected[1], "B");
	CU_ASSERT_PTR_NULL(a.sni);
	CU_ASSERT_EQUAL(a.refused, -1);
	audit_scan_free(s);
	audit_scan_free(t);
}

static int
scan1(const char *line, struct audit_ln *l)
{
	static struct audit_scan	*s;
	const char			*err;

	if (s == NULL)
		s = audit_scan_new();
	return audit_scan_line(s, line, strlen(line), l, false, &err);
}

/* Strict: what JSON refuses, known keys twice or of the wrong type. */
static void
test_scan_strict(void)
{
	struct audit_ln	l;

	CU_ASSERT_EQUAL(scan1("{\"rule\":null,\"ip\":null,\"x\":true,"
	    "\"y\":-1.5e3,\"z\":false}", &l), 0);
	CU_ASSERT_PTR_NULL(l.rule);
	/* nested values of unknown keys: jansson takes the line */
	CU_ASSERT_EQUAL(scan1("{\"host\":\"a\",\"trace\":{\"k\":[1,{}]}}",
	    &l), 0);
	CU_ASSERT_STRING_EQUAL(l.host, "a");
	/* a raw UTF-8 byte: jansson decides */
	CU_ASSERT_EQUAL(scan1("{\"path\":\"/\xc3\xa9\"}", &l), 0);
	CU_ASSERT_STRING_EQUAL(l.path, "/\xc3\xa9");
	CU_ASSERT_EQUAL(scan1("{\"path\":\"/\xff\"}", &l), -1);
	/* surrogate pair */
	CU_ASSERT_EQUAL(scan1("{\"path\":\"\\ud83d\\ude00\"}", &l), 0);
	CU_ASSERT_STRING_EQUAL(l.path, "\xf0\x9f\x98\x80");
	CU_ASSERT_EQUAL(scan1("{\"path\":\"\\ud83d\"}", &l), -1);
	CU_ASSERT_EQUAL(scan1("{\"path\":\"\\u0000\"}", &l), -1);
	CU_ASSERT_EQUAL(scan1("{\"host\":\"a\",\"host\":\"b\"}", &l), -1);
	CU_ASSERT_EQUAL(scan1("{\"port\":\"443\"}", &l), -1);
	CU_ASSERT_EQUAL(scan1("{\"port\":4.5}", &l), -1);
	CU_ASSERT_EQUAL(scan1("{\"port\":-1}", &l), -1);
	CU_ASSERT_EQUAL(scan1("{\"port\":01}", &l), -1);
	CU_ASSERT_EQUAL(scan1("{\"injected\":[1]}", &l), -1);
	CU_ASSERT_EQUAL(scan1("{\"host\":\"a\"} x", &l), -1);
	CU_ASSERT_EQUAL(scan1("{\"host\":\"a\",}", &l), -1);
	CU_ASSERT_EQUAL(scan1("{\"host\":\"a\tb\"}", &l), -1);
	CU_ASSERT_EQUAL(scan1("[1]", &l), -1);
	CU_ASSERT_EQUAL(scan1("", &l), -1);
	CU_ASSERT_EQUAL(scan1("{}", &l), 0);
	/* moatd's request ids: a flat object of strings, skipped */
	CU_ASSERT_EQUAL(scan1("{\"host\":\"a\",\"request_id\":{\"X-Request-"
	    "Id\":\"r-1\",\"X-B\":\"\\u00e9\"},\"moat_request_id\":\"f-1-1\","
	    "\"detail\":\"d\"}", &l), 0);
	CU_ASSERT_STRING_EQUAL(l.host, "a");
	CU_ASSERT_STRING_EQUAL(l.detail, "d");
	CU_ASSERT_EQUAL(scan1("{\"request_id\":{},\"host\":\"b\"}", &l), 0);
	CU_ASSERT_STRING_EQUAL(l.host, "b");
	CU_ASSERT_EQUAL(scan1("{\"request_id\":{\"a\":1},\"host\":\"c\"}", &l),
	    0);
	CU_ASSERT_STRING_EQUAL(l.host, "c");
	CU_ASSERT_EQUAL(scan1("{\"request_id\":{\"a\" \"b\"}}", &l), -1);
	CU_ASSERT_EQUAL(scan1("{\"request_id\":{\"a\":\"b\",}}", &l), -1);
	CU_ASSERT_EQUAL(scan1("{\"request_id\":{\"a\":\"b\"", &l), -1);
}

static char *
tmpfile_with(const char *text, size_t len)
{
	static char	name[64];
	FILE		*f;

	snprintf(name, sizeof(name), "/tmp/moat-unit-audit-%d", (int)getpid());
	CU_ASSERT_PTR_NOT_NULL_FATAL(f = fopen(name, "w"));
	CU_ASSERT_EQUAL(fwrite(text, 1, len, f), len);
	fclose(f);
	return name;
}

/* A line over the cap is named and skipped; the next is read. */
static void
test_reader(void)
{
	size_t		 big = AUDIT_LN_MAX_BYTES + 10, len, i;
	char		*text = malloc(big + 64), *line, err[256], cmd[256];
	struct audit_in	*in;
	const char	*name;

	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	strcpy(text, "{\"a\":1}\n");
	for (i = 8; i < big; i++)
		text[i] = 'x';
	strcpy(text + big, "\n{\"b\":2}\n{\"c\":3}");
	name = tmpfile_with(text, strlen(text));
	CU_ASSERT_PTR_NOT_NULL_FATAL(in = audit_in_open(name, err,
	    sizeof(err)));
	CU_ASSERT_EQUAL(audit_in_line(in, &line, &len, err, sizeof(err)), 1);
	CU_ASSERT_STRING_EQUAL(line, "{\"a\":1}");
	CU_ASSERT_EQUAL(audit_in_line(in, &line, &len, err, sizeof(err)), -2);
	CU_ASSERT_EQUAL(audit_in_lineno(in), 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "longer than"));
	CU_ASSERT_EQUAL(audit_in_line(in, &line, &len, err, sizeof(err)), 1);
	CU_ASSERT_STRING_EQUAL(line, "{\"b\":2}");
	/* the last line has no newline */
	CU_ASSERT_EQUAL(audit_in_line(in, &line, &len, err, sizeof(err)), -2);
	CU_ASSERT_EQUAL(audit_in_lineno(in), 4);
	CU_ASSERT_EQUAL(audit_in_line(in, &line, &len, err, sizeof(err)), 0);
	audit_in_close(in);
	/* gzip, two members, read as one text */
	name = tmpfile_with("{\"a\":1}\n", 8);
	snprintf(cmd, sizeof(cmd), "gzip -c %s > %s.gz && gzip -c %s >> "
	    "%s.gz", name, name, name, name);
	CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "%s.gz", name);
	CU_ASSERT_PTR_NOT_NULL_FATAL(in = audit_in_open(cmd, err,
	    sizeof(err)));
	for (i = 0; i < 2; i++) {
		CU_ASSERT_EQUAL(audit_in_line(in, &line, &len, err,
		    sizeof(err)), 1);
		CU_ASSERT_STRING_EQUAL(line, "{\"a\":1}");
	}
	CU_ASSERT_EQUAL(audit_in_line(in, &line, &len, err, sizeof(err)), 0);
	audit_in_close(in);
	unlink(cmd);
	unlink(name);
	free(text);
}

static void
test_time(void)
{
	char	ts[AUDIT_TS_LEN + 1];

	CU_ASSERT_EQUAL(audit_cmd_time("2026-11-29", 0, ts), 0);
	CU_ASSERT_STRING_EQUAL(ts, "2026-11-29T00:00:00.000Z");
	CU_ASSERT_EQUAL(audit_cmd_time("2026-11-29T13:42Z", 0, ts), 0);
	CU_ASSERT_STRING_EQUAL(ts, "2026-11-29T13:42:00.000Z");
	CU_ASSERT_EQUAL(audit_cmd_time("2026-11-29T13:42:38.5", 0, ts), -1);
	CU_ASSERT_EQUAL(audit_cmd_time("2026-11-29T13:42:38.500", 0, ts), 0);
	CU_ASSERT_EQUAL(audit_cmd_time("90m", 1764423758, ts), 0);
	CU_ASSERT_STRING_EQUAL(ts, "2025-11-29T12:12:38.000Z");
	CU_ASSERT_EQUAL(audit_cmd_time("2026-13-01", 0, ts), -1);
	CU_ASSERT_EQUAL(audit_cmd_time("yesterday", 0, ts), -1);
}

/* Folds lines (JSON texts) into fold(arg). */
static void
feed(audit_fold_fn fold, void *arg, const char *const *lines, size_t n)
{
	struct audit_where	w = { "t", 0 };
	struct audit_ln		l;
	size_t			i;

	for (i = 0; i < n; i++) {
		w.lineno = i + 1;
		CU_ASSERT_EQUAL_FATAL(scan1(lines[i], &l), 0);
		CU_ASSERT_EQUAL(fold(arg, &l, &w), 0);
	}
}

#define J(ev, sbx, proto, host, port, verdict, reason, rule, extra) \
	"{\"ts\":\"2026-11-29T13:42:38.789Z\",\"event\":\"" ev "\"," \
	"\"sandbox\":\"" sbx "\",\"proto\":\"" proto "\",\"client\":" \
	"\"10.0.0.2:5\",\"host\":\"" host "\",\"port\":" port ",\"ip\":null," \
	"\"verdict\":\"" verdict "\",\"reason\":\"" reason "\",\"rule\":" \
	rule extra "}"

static json_int_t
jint(json_t *o, const char *path)
{
	return json_integer_value(json_object_get(o, path));
}

static void
test_summary(void)
{
	static const char	*lines[] = {
		J("request", "a", "https", "api.x.com", "443", "allow",
		    "allowed", "\"api\"", ",\"method\":\"GET\",\"path\":\"/\","
		    "\"bytes_up\":10,\"bytes_down\":20,\"injected\":[\"K\"]"),
		J("request", "a", "http", "api.x.com", "80", "allow",
		    "allowed", "\"api\"", ",\"method\":\"POST\",\"path\":\"/\","
		    "\"bytes_up\":5,\"bytes_down\":7,\"injected\":[\"K\"]"),
		J("close", "a", "connect", "api.x.com", "443", "allow",
		    "allowed", "\"api\"", ",\"bytes_up\":100,\"bytes_down\":"
		    "200,\"end\":\"eof\""),
		J("open", "a", "connect", "paste.bin", "443", "deny",
		    "no-rule", "null", ""),
		J("open", "a", "connect", "paste.bin", "443", "deny",
		    "no-rule", "null", ""),
		J("request", "a", "http", "w.x.com", "80", "allow", "allowed",
		    "null", ",\"would_deny\":\"no-rule\",\"method\":\"GET\""),
		J("connection", "b", "http", "-", "0", "deny", "limit",
		    "null", ",\"refused\":40"),
		"{\"ts\":\"2026-11-29T13:42:39.000Z\",\"event\":\"audit-dropped\","
		    "\"dropped\":3}",
		/* dropped packets of b: one, and a line that counts 9 */
		"{\"ts\":\"2026-11-29T13:42:39.100Z\",\"event\":\"drop\","
		    "\"id\":0,\"sandbox\":\"b\",\"proto\":\"udp\","
		    "\"client\":\"10.0.0.3:5\",\"port\":853,\"ip\":"
		    "\"203.0.113.53\",\"verdict\":\"deny\",\"reason\":"
		    "\"dropped-packet\",\"rule\":null,\"detail\":\"udp: x\"}",
		"{\"ts\":\"2026-11-29T13:42:40.100Z\",\"event\":\"drop\","
		    "\"id\":0,\"sandbox\":\"b\",\"ip\":null,\"verdict\":"
		    "\"deny\",\"reason\":\"dropped-packet\",\"rule\":null,"
		    "\"refused\":9,\"detail\":\"9 more dropped packets\"}",
	};
	struct audit_summary	*sm = audit_summary_new();
	json_t			*j, *sa, *sb, *d, *r;
	FILE			*f;
	char			*text = NULL;
	size_t			 tlen;

	CU_ASSERT_PTR_NOT_NULL_FATAL(sm);
	feed(audit_summary_fold, sm, lines, sizeof(lines) / sizeof(lines[0]));
	CU_ASSERT_PTR_NOT_NULL_FATAL(j = audit_summary_json(sm, 10));
	CU_ASSERT_EQUAL(jint(j, "lines"), 10);
	CU_ASSERT_EQUAL(jint(j, "audit_dropped"), 3);
	/* sandbox a sent the most bytes: first of the top talkers */
	sa = json_array_get(json_object_get(j, "sandboxes"), 0);
	sb = json_array_get(json_object_get(j, "sandboxes"), 1);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(sa,
	    "sandbox")), "a");
	CU_ASSERT_EQUAL(jint(sa, "decisions"), 5);
	CU_ASSERT_EQUAL(jint(sa, "refused"), 2);
	CU_ASSERT_EQUAL(jint(sa, "would_deny"), 1);
	/* the https request's bytes are in the tunnel's close line */
	CU_ASSERT_EQUAL(jint(sa, "bytes_up"), 105);
	CU_ASSERT_EQUAL(jint(sa, "bytes_down"), 207);
	/* 40 connections, 10 dropped packets */
	CU_ASSERT_EQUAL(jint(sb, "refused"), 50);
	r = json_array_get(json_object_get(sb, "refusals"), 1);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(r,
	    "reason")), "dropped-packet");
	CU_ASSERT_EQUAL(jint(r, "count"), 10);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(r,
	    "example")), "203.0.113.53:853");
	d = json_array_get(json_object_get(sa, "destinations"), 0);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(d, "host")),
	    "paste.bin");
	CU_ASSERT_EQUAL(jint(d, "refused"), 2);
	r = json_array_get(json_object_get(sa, "refusals"), 0);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(r,
	    "reason")), "no-rule");
	CU_ASSERT_EQUAL(jint(r, "count"), 2);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(r,
	    "example")), "paste.bin:443");
	r = json_array_get(json_object_get(sa, "would_denies"), 0);
	CU_ASSERT_EQUAL(jint(r, "count"), 1);
	r = json_array_get(json_object_get(sa, "secrets"), 0);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(r,
	    "secret")), "K");
	CU_ASSERT_EQUAL(jint(r, "requests"), 2);
	r = json_array_get(json_object_get(sa, "clients"), 0);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(r,
	    "client")), "10.0.0.2");
	json_decref(j);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f = open_memstream(&text, &tlen));
	audit_summary_text(sm, 10, f);
	fclose(f);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "sandbox a: 5 decisions (3 "
	    "allowed, 2 refused, 1 would-deny)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "K -> api.x.com"));
	free(text);
	audit_summary_free(sm);
}

/* The hosts of the rules of a suggestion, "|"-joined per rule. */
static void
rules_text(json_t *p, char *buf, size_t cap)
{
	json_t	*rules = json_object_get(json_object_get(p, "policy"), "rules");
	json_t	*r, *h;
	size_t	 i, k, n = 0;

	buf[0] = '\0';
	json_array_foreach(rules, i, r) {
		json_t *hosts = json_object_get(r, "hosts");

		if (hosts == NULL)
			hosts = json_object_get(r, "cidrs");
		json_array_foreach(hosts, k, h)
			n += (size_t)snprintf(buf + n, cap - n, "%s%s",
			    k > 0 ? "," : "", json_string_value(h));
		n += (size_t)snprintf(buf + n, cap - n, "%s%s",
		    json_object_get(r, "methods") != NULL ? "+m" : "", "|");
	}
}

static void
test_suggest(void)
{
	static const char	*lines[] = {
		J("request", "a", "https", "a.x.com", "443", "allow",
		    "allowed", "\"r\"", ",\"method\":\"GET\""),
		J("request", "a", "https", "b.x.com", "443", "allow",
		    "allowed", "\"r\"", ",\"method\":\"POST\""),
		J("request", "a", "https", "c.deep.x.com", "443", "allow",
		    "allowed", "\"r\"", ",\"method\":\"GET\""),
		J("open", "a", "connect", "c.x.com", "443", "allow",
		    "allowed", "\"r\"", ""),
		J("open", "a", "connect", "d.y.com", "443", "allow",
		    "allowed", "\"r\"", ""),
		J("open", "a", "connect", "e.y.com", "443", "deny",
		    "no-rule", "null", ""),
		J("open", "a", "connect", "f.y.com", "443", "allow",
		    "allowed", "null", ",\"would_deny\":\"no-rule\""),
		J("open", "a", "connect", "a.co.uk", "443", "allow",
		    "allowed", "\"r\"", ""),
		J("open", "a", "connect", "b.co.uk", "443", "allow",
		    "allowed", "\"r\"", ""),
		J("open", "a", "connect", "c.co.uk", "443", "allow",
		    "allowed", "\"r\"", ""),
		J("open", "a", "connect", "93.184.216.9", "8443", "allow",
		    "allowed", "\"r\"", ""),
		J("open", "a", "connect", "10.1.2.3", "8443", "allow",
		    "allowed", "\"r\"", ""),
		"{\"event\":\"dns\",\"sandbox\":\"a\",\"proto\":\"dns\","
		    "\"host\":\"only.z.org\",\"ip\":null,\"verdict\":\"allow\","
		    "\"reason\":\"allowed\",\"rule\":\"r\",\"qtype\":\"A\"}",
		J("request", "a", "http", "plain.q.org", "80", "allow",
		    "allowed", "\"r\"", ",\"method\":\"HEAD\""),
	};
	struct audit_suggest	*sg = audit_suggest_new();
	const char		*ap = "10.1.0.0/16";
	json_t			*p;
	char			 buf[1024], err[256];
	FILE			*f;
	char			*text = NULL;
	size_t			 tlen;

	CU_ASSERT_PTR_NOT_NULL_FATAL(sg);
	feed(audit_suggest_fold, sg, lines, sizeof(lines) / sizeof(lines[0]));
	/* 3 siblings under x.com: "*.x.com" (c.deep.x.com under it); 2
	 * under y.com (the refused e.y.com does not count): no wildcard;
	 * co.uk never; 10.1.2.3 left out (a deny set) */
	CU_ASSERT_PTR_NOT_NULL_FATAL(p = audit_suggest_policy(sg, 3, NULL, 0,
	    err, sizeof(err)));
	rules_text(p, buf, sizeof(buf));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "*.x.com"));
	CU_ASSERT_PTR_NULL(strstr(buf, "a.x.com"));
	CU_ASSERT_PTR_NULL(strstr(buf, "deep"));
	CU_ASSERT_PTR_NULL(strstr(buf, "*.y.com"));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "d.y.com"));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "f.y.com"));
	CU_ASSERT_PTR_NULL(strstr(buf, "e.y.com"));
	CU_ASSERT_PTR_NULL(strstr(buf, "*.co.uk"));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "a.co.uk"));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "93.184.216.9/32|"));
	CU_ASSERT_PTR_NULL(strstr(buf, "10.1.2.3"));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "only.z.org|"));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "plain.q.org+m|"));
	CU_ASSERT_PTR_NULL(strstr(buf, "x.com+m"));	/* an opaque tunnel */
	/* it loads, and lets through every recorded allowed decision but
	 * the one at an address of a deny set */
	CU_ASSERT_PTR_NOT_NULL_FATAL(f = open_memstream(&text, &tlen));
	CU_ASSERT_EQUAL(audit_suggest_check(sg, p, f), 1);
	fclose(f);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "10.1.2.3:8443: private-address"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "--allow-private"));
	free(text);
	json_decref(p);
	/* --allow-private opens it: in allow_private and a rule */
	CU_ASSERT_PTR_NOT_NULL_FATAL(p = audit_suggest_policy(sg, 3, &ap, 1,
	    err, sizeof(err)));
	rules_text(p, buf, sizeof(buf));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "10.1.2.3/32"));
	CU_ASSERT_PTR_NOT_NULL_FATAL(f = open_memstream(&text, &tlen));
	CU_ASSERT_EQUAL(audit_suggest_check(sg, p, f), 0);
	fclose(f);
	free(text);
	json_decref(p);
	/* --group 2: still no *.y.com: it would cover the refused e.y.com;
	 * 0: no wildcard at all */
	CU_ASSERT_PTR_NOT_NULL_FATAL(p = audit_suggest_policy(sg, 2, NULL, 0,
	    err, sizeof(err)));
	rules_text(p, buf, sizeof(buf));
	CU_ASSERT_PTR_NULL(strstr(buf, "*.y.com"));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "*.x.com"));
	json_decref(p);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p = audit_suggest_policy(sg, 0, NULL, 0,
	    err, sizeof(err)));
	rules_text(p, buf, sizeof(buf));
	CU_ASSERT_PTR_NULL(strchr(buf, '*'));
	json_decref(p);
	audit_suggest_free(sg);
}

static struct moat_config *
load(const char *text)
{
	struct policy_diags	 d;
	struct moat_config	*c;

	policy_diags_init(&d);
	c = policy_config_load("t", text, strlen(text), &d);
	policy_diags_clear(&d);
	return c;
}

static void
test_replay(void)
{
	struct moat_config	*c;
	struct audit_judgement	 j;
	struct audit_ln		 l;

	c = load("{\"listen\": [], \"policy\": {\"rules\": ["
	    "{\"name\": \"a\", \"action\": \"allow\", \"hosts\": "
	    "[\"*.x.com\"], \"ports\": [443]},"
	    "{\"name\": \"g\", \"action\": \"allow\", \"hosts\": "
	    "[\"get.x.org\"], \"ports\": [80], \"methods\": [\"GET\"]}]}}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_EQUAL(scan1(J("open", "s", "connect", "api.x.com", "443",
	    "allow", "allowed", "\"old\"", ""), &l), 0);
	CU_ASSERT_EQUAL(audit_replay_judge(c, &l, &j), AUDIT_J_SAME);
	CU_ASSERT_STRING_EQUAL(j.rule, "a");
	CU_ASSERT_EQUAL(scan1(J("open", "s", "connect", "api.x.com", "8443",
	    "allow", "allowed", "\"old\"", ""), &l), 0);
	CU_ASSERT_EQUAL(audit_replay_judge(c, &l, &j), AUDIT_J_TO_DENY);
	CU_ASSERT_STRING_EQUAL(j.reason, "port");
	CU_ASSERT_EQUAL(scan1(J("request", "s", "http", "get.x.org", "80",
	    "allow", "allowed", "null", ",\"would_deny\":\"no-rule\","
	    "\"method\":\"POST\",\"path\":\"/\""), &l), 0);
	CU_ASSERT_EQUAL(audit_replay_judge(c, &l, &j), AUDIT_J_TO_DENY);
	CU_ASSERT_STRING_EQUAL(j.reason, "method");
	CU_ASSERT_EQUAL(scan1(J("open", "s", "connect", "b.x.com", "443",
	    "deny", "no-rule", "null", ""), &l), 0);
	CU_ASSERT_EQUAL(audit_replay_judge(c, &l, &j), AUDIT_J_TO_ALLOW);
	/* an allowed name at a private address: refused now */
	CU_ASSERT_EQUAL(scan1("{\"event\":\"open\",\"host\":\"c.x.com\","
	    "\"port\":443,\"ip\":\"10.0.0.1\",\"verdict\":\"allow\","
	    "\"reason\":\"allowed\"}", &l), 0);
	CU_ASSERT_EQUAL(audit_replay_judge(c, &l, &j), AUDIT_J_TO_DENY);
	CU_ASSERT_STRING_EQUAL(j.reason, "private-address");
	/* DNS: the name at port 0, then the answer's addresses */
	CU_ASSERT_EQUAL(scan1("{\"event\":\"dns\",\"host\":\"c.x.com\","
	    "\"verdict\":\"allow\",\"reason\":\"allowed\",\"answer\":"
	    "\"10.0.0.1,93.184.216.1\"}", &l), 0);
	CU_ASSERT_EQUAL(audit_replay_judge(c, &l, &j), AUDIT_J_SAME);
	CU_ASSERT_EQUAL(scan1("{\"event\":\"dns\",\"host\":\"c.x.com\","
	    "\"verdict\":\"allow\",\"reason\":\"allowed\",\"answer\":"
	    "\"10.0.0.1\"}", &l), 0);
	CU_ASSERT_EQUAL(audit_replay_judge(c, &l, &j), AUDIT_J_TO_DENY);
	CU_ASSERT_STRING_EQUAL(j.reason, "dns-denied");
	/* refused after the policy allowed it: not replayed */
	CU_ASSERT_EQUAL(scan1(J("open", "s", "connect", "zz.y", "443",
	    "deny", "upstream-unreachable", "null", ""), &l), 0);
	CU_ASSERT_EQUAL(audit_replay_judge(c, &l, &j), AUDIT_J_SKIP);
	CU_ASSERT_EQUAL(scan1(J("close", "s", "connect", "api.x.com", "8443",
	    "allow", "allowed", "null", ""), &l), 0);
	CU_ASSERT_EQUAL(audit_replay_judge(c, &l, &j), AUDIT_J_SKIP);
	policy_config_unref(c);
}

/* --- verify ------------------------------------------------------- */

#define NLINES	6

/* Six lines chained as moatd's writer chains them, in buf. */
static size_t
chained(char *buf, size_t cap)
{
	struct auditchain	*ch = auditchain_new();
	char			 in[4096], *out = NULL;
	size_t			 n, ocap = 0, i;
	ssize_t			 k;

	CU_ASSERT_PTR_NOT_NULL_FATAL(ch);
	n = auditchain_start_line(auditchain_seed(ch, -1, NULL),
	    "2026-11-29T13:42:38.000Z", in, sizeof(in));
	CU_ASSERT_FATAL(n > 0);
	for (i = 1; i < NLINES; i++)
		n += (size_t)snprintf(in + n, sizeof(in) - n, "{\"ts\":\"x\","
		    "\"event\":\"request\",\"id\":%zu}\n", i);
	k = auditchain_apply(ch, in, n, &out, &ocap);
	CU_ASSERT_FATAL(k > 0 && (size_t)k < cap);
	auditchain_commit(ch, out, (size_t)k);
	CU_ASSERT_EQUAL(auditchain_seq(ch), NLINES - 1);
	memcpy(buf, out, (size_t)k);
	buf[k] = '\0';
	free(out);
	auditchain_free(ch);
	return (size_t)k;
}

/* Verifies text (lines), output into *report; returns the exit code. */
static int
verify_text(const char *text, char **report)
{
	struct audit_verify	*v;
	struct audit_where	 w = { "f", 0 };
	const char		*p, *nl;
	char			 err[256];
	size_t			 len;
	FILE			*f;
	int			 rc;

	*report = NULL;
	CU_ASSERT_PTR_NOT_NULL_FATAL(f = open_memstream(report, &len));
	CU_ASSERT_PTR_NOT_NULL_FATAL(v = audit_verify_new(f, NULL, NULL, err,
	    sizeof(err)));
	for (p = text; (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
		w.lineno++;
		audit_verify_line(v, p, (size_t)(nl - p), &w);
	}
	rc = audit_verify_end(v);
	audit_verify_free(v);
	fclose(f);
	return rc;
}

/* text without its line i (1-based), or with extra before line i. */
static char *
edit(const char *text, size_t i, const char *extra, bool drop)
{
	char		*out = malloc(strlen(text) + (extra ? strlen(extra) :
			    0) + 1), *o = out;
	const char	*p = text, *nl;
	size_t		 k = 1;

	for (; (nl = strchr(p, '\n')) != NULL; p = nl + 1, k++) {
		if (k == i && extra != NULL)
			o = stpcpy(o, extra);
		if (k == i && drop)
			continue;
		memcpy(o, p, (size_t)(nl - p) + 1);
		o += nl - p + 1;
	}
	*o = '\0';
	return out;
}

static void
test_verify(void)
{
	char	 text[8192], *t, *r, *line3;
	size_t	 n = chained(text, sizeof(text));

	(void)n;
	CU_ASSERT_EQUAL(verify_text(text, &r), AUDIT_EXIT_OK);
	CU_ASSERT_PTR_NOT_NULL(strstr(r, "intact: 6 lines, 6 chained"));
	free(r);
	/* changed in place: line 3 */
	t = strdup(text);
	line3 = strstr(t, "\"id\":2");
	line3[5] = '7';
	CU_ASSERT_EQUAL(verify_text(t, &r), AUDIT_EXIT_CHANGED);
	CU_ASSERT_PTR_NOT_NULL(strstr(r, "f:3: changed"));
	free(r);
	free(t);
	/* removed: line 4 */
	t = edit(text, 4, NULL, true);
	CU_ASSERT_EQUAL(verify_text(t, &r), AUDIT_EXIT_CHANGED);
	CU_ASSERT_PTR_NOT_NULL(strstr(r, "f:4: 1 line removed before this "
	    "line"));
	free(r);
	free(t);
	/* inserted: a copy of line 2 before line 4 */
	{
		const char	*l2 = strchr(text, '\n') + 1;
		char		 copy[1024];
		size_t		 ln = (size_t)(strchr(l2, '\n') - l2) + 1;

		memcpy(copy, l2, ln);
		copy[ln] = '\0';
		t = edit(text, 4, copy, false);
	}
	CU_ASSERT_EQUAL(verify_text(t, &r), AUDIT_EXIT_CHANGED);
	CU_ASSERT_PTR_NOT_NULL(strstr(r, "f:4: inserted: a copy of line 2"));
	free(r);
	free(t);
	/* a line with no chain after the chain began */
	t = edit(text, 5, "{\"event\":\"request\"}\n", false);
	CU_ASSERT_EQUAL(verify_text(t, &r), AUDIT_EXIT_CHANGED);
	CU_ASSERT_PTR_NOT_NULL(strstr(r, "f:5: not chained"));
	free(r);
	free(t);
	/* the head removed */
	t = edit(text, 1, NULL, true);
	CU_ASSERT_EQUAL(verify_text(t, &r), AUDIT_EXIT_CHANGED);
	CU_ASSERT_PTR_NOT_NULL(strstr(r, "f:1: the chain does not begin "
	    "here"));
	free(r);
	free(t);
}

/* audit.hash_chain: a boolean, its error at the value's line:column. */
static void
test_chain_key(void)
{
	static const char	 bad[] = "{\"listen\": [],\n \"audit\": "
				    "{\"hash_chain\": \"yes\"}}";
	struct policy_diags	 d;
	struct moat_config	*c;
	size_t			 i;
	bool			 found = false;

	c = load("{\"listen\": [], \"audit\": {\"hash_chain\": true}}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_TRUE(c->audit_chain);
	policy_config_unref(c);
	c = load("{\"listen\": []}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_FALSE(c->audit_chain);
	policy_config_unref(c);
	policy_diags_init(&d);
	CU_ASSERT_PTR_NULL(policy_config_load("t", bad, strlen(bad), &d));
	for (i = 0; i < d.n; i++)
		if (d.v[i].level == POLICY_DIAG_ERROR && d.v[i].line == 2 &&
		    d.v[i].column == 26 && strstr(d.v[i].msg,
		    "audit.hash_chain: expected a boolean") != NULL)
			found = true;
	CU_ASSERT_TRUE(found);
	policy_diags_clear(&d);
}

void
test_audit_tool_register(void)
{
	CU_pSuite s = CU_add_suite("audit_tool", NULL, NULL);

	CU_add_test(s, "scanner: the fast path and jansson agree",
	    test_scan_paths);
	CU_add_test(s, "scanner: strict JSON, known keys once and typed",
	    test_scan_strict);
	CU_add_test(s, "reader: a line too long, a last line cut, gzip",
	    test_reader);
	CU_add_test(s, "--since and --until", test_time);
	CU_add_test(s, "summary: decisions, bytes once, refusals, secrets",
	    test_summary);
	CU_add_test(s, "suggest: siblings grouped, deny sets out, checked",
	    test_suggest);
	CU_add_test(s, "replay: each decision judged again", test_replay);
	CU_add_test(s, "verify: intact, changed, removed, inserted, head",
	    test_verify);
	CU_add_test(s, "audit.hash_chain in the config", test_chain_key);
}
