/*
 * test_trace.c - trace correlation: the traceparent validator (W3C Trace
 * Context, section 3.2), the fields of a request head an audit line
 * gets, the id of moatd's own replies.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "proxy/http_parse.h"
#include "proxy/trace.h"
#include "tests/unit/unit.h"

#define TP_GOOD	"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

static size_t
tp(const char *v)
{
	return trace_traceparent(v, strlen(v));
}

static void
test_trace_traceparent(void)
{
	static const char *const	bad[] = {
		"",
		"00",
		/* one digit short, one too many */
		"00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-011",
		/* uppercase hex */
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01",
		"0A-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		/* all-zero trace-id, parent-id */
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
		/* version ff is invalid */
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		/* other separators, white space, a non-hex byte */
		"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7 01",
		" 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
		"00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
		/* version 00 has nothing after its flags */
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
		/* a later version goes on only after a "-" */
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
		/* log injection through the header */
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\","
		    "\"verdict\":\"allow",
		NULL
	};
	size_t				i;

	CU_ASSERT_EQUAL(tp(TP_GOOD), TRACE_TRACEPARENT_LEN);
	CU_ASSERT_EQUAL(tp("00-4bf92f3577b34da6a3ce929d0e0e4736-"
	    "00f067aa0ba902b7-00"), TRACE_TRACEPARENT_LEN);	/* not sampled */
	/* a later version: the known part is kept, the rest is not */
	CU_ASSERT_EQUAL(tp("01-4bf92f3577b34da6a3ce929d0e0e4736-"
	    "00f067aa0ba902b7-01-future"), TRACE_TRACEPARENT_LEN);
	CU_ASSERT_EQUAL(tp("cc-4bf92f3577b34da6a3ce929d0e0e4736-"
	    "00f067aa0ba902b7-09"), TRACE_TRACEPARENT_LEN);
	for (i = 0; bad[i] != NULL; i++) {
		if (tp(bad[i]) != 0)
			fprintf(stderr, "\n  accepted: \"%s\"\n", bad[i]);
		CU_ASSERT_EQUAL(tp(bad[i]), 0);
	}
	/* the length given counts, not a NUL */
	CU_ASSERT_EQUAL(trace_traceparent(TP_GOOD, TRACE_TRACEPARENT_LEN - 1),
	    0);
}

static struct http_header
hdr(const char *name, const char *value)
{
	struct http_header	h;

	h.name = name;
	h.name_len = strlen(name);
	h.value = value;
	h.value_len = strlen(value);
	return h;
}

static void
test_trace_fields(void)
{
	static char		*names[] = { "X-Request-Id", "X-Amzn-Trace-Id",
				    "X-Absent" };
	static char		 longv[TRACE_REQUEST_ID_MAX + 2];
	struct http_header	 hv[6];
	struct trace_fields	 tf;

	hv[0] = hdr("Host", "api.example.com");
	hv[1] = hdr("traceparent", TP_GOOD);
	hv[2] = hdr("x-request-id", "req-1");
	hv[3] = hdr("X-Request-Id", "req-2");	/* the first counts */
	hv[4] = hdr("X-Amzn-Trace-Id", "Root=1-5759e988-bd862e3fe1be46a994272793");
	trace_fields(hv, 5, names, 3, &tf);
	CU_ASSERT_STRING_EQUAL(tf.traceparent, TP_GOOD);
	CU_ASSERT_EQUAL(tf.n, 2);
	CU_ASSERT_STRING_EQUAL(tf.names[0], "X-Request-Id");	/* as configured */
	CU_ASSERT_STRING_EQUAL(tf.values[0], "req-1");
	CU_ASSERT_STRING_EQUAL(tf.names[1], "X-Amzn-Trace-Id");
	CU_ASSERT_STRING_EQUAL(tf.values[1],
	    "Root=1-5759e988-bd862e3fe1be46a994272793");
	/* an invalid traceparent is not copied: the line says "invalid" */
	hv[1] = hdr("TraceParent", "00-not-a-trace-01\",\"x\":\"y");
	trace_fields(hv, 2, names, 0, &tf);
	CU_ASSERT_STRING_EQUAL(tf.traceparent, TRACE_INVALID);
	CU_ASSERT_EQUAL(tf.n, 0);
	/* two traceparent fields: invalid, even if each is valid */
	hv[1] = hdr("traceparent", TP_GOOD);
	hv[2] = hdr("traceparent", TP_GOOD);
	trace_fields(hv, 3, names, 1, &tf);
	CU_ASSERT_STRING_EQUAL(tf.traceparent, TRACE_INVALID);
	/* none of them there */
	trace_fields(hv, 1, names, 3, &tf);
	CU_ASSERT_PTR_NULL(tf.traceparent);
	CU_ASSERT_EQUAL(tf.n, 0);
	/* a value over the bound: its length, never a piece of it */
	memset(longv, 'a', sizeof(longv) - 1);
	hv[1] = hdr("X-Request-Id", longv);
	trace_fields(hv, 2, names, 1, &tf);
	CU_ASSERT_EQUAL(tf.n, 1);
	CU_ASSERT_STRING_EQUAL(tf.values[0], "[too long: 129 bytes]");
	longv[TRACE_REQUEST_ID_MAX] = '\0';
	hv[1] = hdr("X-Request-Id", longv);
	trace_fields(hv, 2, names, 1, &tf);
	CU_ASSERT_STRING_EQUAL(tf.values[0], longv);
}

static void
test_trace_moat_id(void)
{
	char	buf[TRACE_MOAT_ID_MAX];

	CU_ASSERT_STRING_EQUAL(trace_moat_id(buf, sizeof(buf),
	    0x0123456789abcdefULL, 42, 3), "0123456789abcdef-42-3");
	/* the largest fits */
	trace_moat_id(buf, sizeof(buf), UINT64_MAX, UINT64_MAX, UINT32_MAX);
	CU_ASSERT_STRING_EQUAL(buf,
	    "ffffffffffffffff-18446744073709551615-4294967295");
}

void
test_trace_register(void)
{
	CU_pSuite	s = CU_add_suite("trace", NULL, NULL);

	CU_add_test(s, "traceparent validator", test_trace_traceparent);
	CU_add_test(s, "fields of a request head", test_trace_fields);
	CU_add_test(s, "X-Moat-Request-Id", test_trace_moat_id);
}
