/*
 * test_audit.c - audit lines are valid JSON with the DESIGN.md fields,
 * whatever bytes a peer managed to put into a field.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <CUnit/CUnit.h>
#include <jansson.h>

#include "proxy/audit.h"
#include "proxy/secretscan.h"
#include "tests/unit/unit.h"

/* Formats r and parses the line back; the caller json_decref()s. */
static json_t *
audit_roundtrip(const struct audit_rec *r)
{
	char		 buf[8192];
	size_t		 n;
	json_error_t	 e;
	json_t		*o;

	n = audit_format_line(r, buf, sizeof(buf));
	CU_ASSERT_FATAL(n > 0);
	CU_ASSERT_EQUAL(buf[n - 1], '\n');
	CU_ASSERT_PTR_NULL(memchr(buf, '\n', n - 1));	/* one line */
	o = json_loadb(buf, n, JSON_REJECT_DUPLICATES, &e);
	if (o == NULL)
		fprintf(stderr, "\n  line: %.*s  error: %s\n", (int)n, buf,
		    e.text);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	return o;
}

static const char *
jstr(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static void
test_audit_fields(void)
{
	struct audit_rec	 r;
	json_t			*o;
	const char		*inj[] = { "OPENAI_KEY", "GH_TOKEN", NULL };

	audit_rec_init(&r);
	r.event = "request";
	r.id = 42;
	r.sandbox = "job-1";
	r.proto = "http";
	r.client = "10.0.0.2:5555";
	r.host = "api.example.com";
	r.port = 443;
	r.sni = "front.example.com";
	r.ip = "203.0.113.7";
	r.verdict = POLICY_ALLOW;
	r.reason = POLICY_R_ALLOWED;
	r.rule = "api";
	r.method = "POST";
	r.path = "/v1/x?y=1";
	r.status = 200;
	r.bytes_up = 12;
	r.bytes_down = 0;
	r.duration_ms = 7;
	r.injected = inj;
	o = audit_roundtrip(&r);
	CU_ASSERT_STRING_EQUAL(jstr(o, "event"), "request");
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(o, "id")), 42);
	CU_ASSERT_STRING_EQUAL(jstr(o, "sandbox"), "job-1");
	CU_ASSERT_STRING_EQUAL(jstr(o, "proto"), "http");
	CU_ASSERT_STRING_EQUAL(jstr(o, "host"), "api.example.com");
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(o, "port")), 443);
	CU_ASSERT_STRING_EQUAL(jstr(o, "sni"), "front.example.com");
	CU_ASSERT_STRING_EQUAL(jstr(o, "ip"), "203.0.113.7");
	CU_ASSERT_STRING_EQUAL(jstr(o, "verdict"), "allow");
	CU_ASSERT_STRING_EQUAL(jstr(o, "reason"), "allowed");
	CU_ASSERT_STRING_EQUAL(jstr(o, "rule"), "api");
	CU_ASSERT_STRING_EQUAL(jstr(o, "method"), "POST");
	CU_ASSERT_STRING_EQUAL(jstr(o, "path"), "/v1/x?y=1");
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(o, "status")), 200);
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(o, "bytes_up")),
	    12);
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(o, "bytes_down")),
	    0);
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(o,
	    "duration_ms")), 7);
	CU_ASSERT_EQUAL(json_array_size(json_object_get(o, "injected")), 2);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_array_get(
	    json_object_get(o, "injected"), 1)), "GH_TOKEN");
	CU_ASSERT_PTR_NOT_NULL(json_object_get(o, "ts"));
	json_decref(o);
}

/* Absent values: ip and rule are null, the others are left out. */
static void
test_audit_absent(void)
{
	struct audit_rec	 r;
	json_t			*o;

	audit_rec_init(&r);
	r.event = "open";
	r.verdict = POLICY_DENY;
	r.reason = POLICY_R_METADATA;
	o = audit_roundtrip(&r);
	CU_ASSERT_TRUE(json_is_null(json_object_get(o, "ip")));
	CU_ASSERT_TRUE(json_is_null(json_object_get(o, "rule")));
	CU_ASSERT_PTR_NULL(json_object_get(o, "port"));
	CU_ASSERT_PTR_NULL(json_object_get(o, "sni"));
	CU_ASSERT_PTR_NULL(json_object_get(o, "status"));
	CU_ASSERT_PTR_NULL(json_object_get(o, "bytes_up"));
	CU_ASSERT_PTR_NULL(json_object_get(o, "refused"));
	CU_ASSERT_STRING_EQUAL(jstr(o, "verdict"), "deny");
	CU_ASSERT_STRING_EQUAL(jstr(o, "reason"), "metadata");
	json_decref(o);
	/* Refusals at a sandbox's connection limit: their count. */
	r.event = "connection";
	r.reason = POLICY_R_LIMIT;
	r.refused = 17;
	o = audit_roundtrip(&r);
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(o, "refused")), 17);
	CU_ASSERT_STRING_EQUAL(jstr(o, "reason"), "limit");
	json_decref(o);
}

/* Quotes, backslashes, control bytes, DEL and non-ASCII bytes in fields:
 * the line stays one valid JSON object and reads back byte for byte. */
static void
test_audit_escaping(void)
{
	static const char	 nasty[] = "a\"b\\c\n\r\t\x01\x1f\x7f"
				    "\xc3\xa9\xff}{,";
	struct audit_rec	 r;
	json_t			*o;
	const char		*got;
	size_t			 i;
	char			 buf[4096];

	audit_rec_init(&r);
	r.event = "request";
	r.host = nasty;
	r.path = nasty;
	r.detail = nasty;
	o = audit_roundtrip(&r);
	/* Bytes >= 0x7f come back as U+0080..U+00FF: compare code points. */
	got = jstr(o, "detail");
	CU_ASSERT_PTR_NOT_NULL_FATAL(got);
	CU_ASSERT_EQUAL(STRNCMP_LIT(got, "a\"b\\c\n\r\t\x01\x1f"), 0);
	json_decref(o);
	/* The raw line is plain ASCII. */
	CU_ASSERT(audit_format_line(&r, buf, sizeof(buf)) > 0);
	for (i = 0; buf[i] != '\0' && buf[i] != '\n'; i++)
		CU_ASSERT((unsigned char)buf[i] >= 0x20 &&
		    (unsigned char)buf[i] < 0x7f);
}

/* A path longer than AUDIT_PATH_MAX_BYTES is cut and marked. */
static void
test_audit_long_path(void)
{
	static char		 path[AUDIT_PATH_MAX_BYTES * 3];
	struct audit_rec	 r;
	json_t			*o;
	const char		*got;

	memset(path, 'p', sizeof(path) - 1);
	path[0] = '/';
	audit_rec_init(&r);
	r.event = "request";
	r.path = path;
	o = audit_roundtrip(&r);
	got = jstr(o, "path");
	CU_ASSERT_PTR_NOT_NULL_FATAL(got);
	CU_ASSERT_EQUAL(strlen(got), AUDIT_PATH_MAX_BYTES + 3);
	CU_ASSERT_STRING_EQUAL(got + AUDIT_PATH_MAX_BYTES, "...");
	json_decref(o);
	/* Too small a buffer is refused, never overrun. */
	{
		char small[64];

		CU_ASSERT_EQUAL(audit_format_line(&r, small, sizeof(small)), 0);
	}
}

static const char *
redact_name(const void *arg, uint32_t i)
{
	(void)arg;
	return i == 0 ? "K" : NULL;
}

/* Fields that repeat what the client sent show names, never secrets. */
static void
test_audit_redact(void)
{
	static const char	 val[] = "sk-test-value-0123";
	static const char	 ph[] = "moat-ph-00112233445566778899aabbccddeeff";
	static char		 path[AUDIT_PATH_MAX_BYTES + 64];
	struct secretscan_pattern p[2] = {
		{ (const uint8_t *)val, sizeof(val) - 1, 0, SECRETSCAN_VALUE },
		{ (const uint8_t *)ph, sizeof(ph) - 1, 0,
		    SECRETSCAN_PLACEHOLDER },
	};
	struct secretscan	*s;
	struct audit_rec	 r;
	json_t			*o;
	char			 err[128], host[128], detail[128];

	s = secretscan_new(p, 2, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	audit_rec_init(&r);
	r.event = "request";
	snprintf(host, sizeof(host), "%s.example.com", ph);
	snprintf(detail, sizeof(detail), "the request names %s", val);
	r.host = host;
	r.method = ph;
	r.path = "/a/sk-test-value-0123?q=moat-ph-00112233445566778899aabbccddeeff";
	r.detail = detail;
	r.rule = "sk-test-value-0123";	/* the config's, not the client's */
	r.redact = s;
	r.redact_name = redact_name;
	o = audit_roundtrip(&r);
	CU_ASSERT_STRING_EQUAL(jstr(o, "host"), "[secret:K].example.com");
	CU_ASSERT_STRING_EQUAL(jstr(o, "method"), "[secret:K]");
	CU_ASSERT_STRING_EQUAL(jstr(o, "path"), "/a/[secret:K]?q=[secret:K]");
	CU_ASSERT_STRING_EQUAL(jstr(o, "detail"),
	    "the request names [secret:K]");
	json_decref(o);
	/* A value across the cut of a long path: redacted before the cut. */
	memset(path, 'p', sizeof(path) - 1);
	path[0] = '/';
	memcpy(path + AUDIT_PATH_MAX_BYTES - 5, val, sizeof(val) - 1);
	r.path = path;
	o = audit_roundtrip(&r);
	CU_ASSERT_PTR_NULL(strstr(jstr(o, "path"), "sk-test"));
	CU_ASSERT_PTR_NOT_NULL(strstr(jstr(o, "path"), "[secr..."));
	json_decref(o);
	/* No scanner to be had: the client's fields are not written. */
	r.redact = NULL;
	r.redact_fail = 1;
	o = audit_roundtrip(&r);
	CU_ASSERT_STRING_EQUAL(jstr(o, "path"), "[redacted]");
	CU_ASSERT_STRING_EQUAL(jstr(o, "host"), "[redacted]");
	json_decref(o);
	secretscan_free(s);
}

/*
 * Audit mode and trace correlation: "would_deny" beside verdict allow;
 * traceparent, the request ids as one object, the reply's id; the values
 * the client sent redacted like its other fields.
 */
static void
test_audit_would_trace(void)
{
	static const char	 val[] = "sk-test-value-0123";
	struct secretscan_pattern p[1] = {
		{ (const uint8_t *)val, sizeof(val) - 1, 0, SECRETSCAN_VALUE },
	};
	const char		*names[] = { "X-Request-Id", "X-Other" };
	const char		*values[] = { "req-7", "id=sk-test-value-0123" };
	struct secretscan	*s;
	struct audit_rec	 r;
	json_t			*o, *ids;
	char			 err[128];

	audit_rec_init(&r);
	r.event = "request";
	r.verdict = POLICY_ALLOW;
	r.reason = POLICY_R_ALLOWED;
	r.rule = "paste";
	r.would_deny = POLICY_R_DENIED_BY_RULE;
	r.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
	r.request_id_names = names;
	r.request_id_values = values;
	r.nrequest_ids = 2;
	r.moat_request_id = "0123456789abcdef-1-1";
	o = audit_roundtrip(&r);
	CU_ASSERT_STRING_EQUAL(jstr(o, "verdict"), "allow");
	CU_ASSERT_STRING_EQUAL(jstr(o, "would_deny"), "denied-by-rule");
	CU_ASSERT_STRING_EQUAL(jstr(o, "rule"), "paste");
	CU_ASSERT_STRING_EQUAL(jstr(o, "traceparent"), r.traceparent);
	CU_ASSERT_STRING_EQUAL(jstr(o, "moat_request_id"),
	    "0123456789abcdef-1-1");
	ids = json_object_get(o, "request_id");
	CU_ASSERT_TRUE_FATAL(json_is_object(ids));
	CU_ASSERT_EQUAL(json_object_size(ids), 2);
	CU_ASSERT_STRING_EQUAL(jstr(ids, "X-Request-Id"), "req-7");
	CU_ASSERT_STRING_EQUAL(jstr(ids, "X-Other"), values[1]);
	json_decref(o);
	/* with the sandbox's scanner: no value in them */
	s = secretscan_new(p, 1, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	r.redact = s;
	r.redact_name = redact_name;
	r.traceparent = "00-sk-test-value-0123";	/* not one, for the test */
	o = audit_roundtrip(&r);
	CU_ASSERT_STRING_EQUAL(jstr(json_object_get(o, "request_id"),
	    "X-Other"), "id=[secret:K]");
	CU_ASSERT_STRING_EQUAL(jstr(o, "traceparent"), "00-[secret:K]");
	json_decref(o);
	/* none of them: none of the keys */
	audit_rec_init(&r);
	r.event = "request";
	o = audit_roundtrip(&r);
	CU_ASSERT_PTR_NULL(json_object_get(o, "would_deny"));
	CU_ASSERT_PTR_NULL(json_object_get(o, "traceparent"));
	CU_ASSERT_PTR_NULL(json_object_get(o, "request_id"));
	CU_ASSERT_PTR_NULL(json_object_get(o, "moat_request_id"));
	json_decref(o);
	secretscan_free(s);
}

void
test_audit_register(void)
{
	CU_pSuite	s = CU_add_suite("audit", NULL, NULL);

	CU_add_test(s, "fields", test_audit_fields);
	CU_add_test(s, "absent values", test_audit_absent);
	CU_add_test(s, "escaping of hostile bytes", test_audit_escaping);
	CU_add_test(s, "long paths are cut", test_audit_long_path);
	CU_add_test(s, "client fields redacted", test_audit_redact);
	CU_add_test(s, "would_deny, traceparent, request ids",
	    test_audit_would_trace);
}
