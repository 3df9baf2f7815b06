/*
 * test_http_parse.c - vectors for the parsers of proxy/http_parse.h
 * (http_head.c, http_target.c, http_chunked.c): the head scanner, request
 * and response head parsers, and the chunked decoder.
 *
 * Each table row is the bytes on the wire, then the expected verdict: a
 * NULL err means valid, and the parsed fields follow; otherwise err is the
 * exact message.  Invalid rows are run through http_head_scan first (as
 * moatd does), and the parser is also called on the bytes directly, which
 * must refuse them too: the parser does not trust that a scan happened.
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "proxy/http_parse.h"
#include "tests/unit/unit.h"

/* Bytes and length of a literal that may contain NUL. */
#define B(s)		(s), (sizeof(s) - 1)

#define HOST		"Host: example.com\r\n"
#define GET11		"GET / HTTP/1.1\r\n" HOST
#define POST11		"POST / HTTP/1.1\r\n" HOST
#define CHECK(ok, i, in, len) \
	vcheck((ok), (i), (in), (len), #ok, __LINE__)

#define CHUNK_LINE_TEST_MAX	(HTTP_CHUNK_LINE_MAX_BYTES + 16)
#define TRAILER_TEST_MAX	(HTTP_TRAILER_MAX_BYTES + 64)

struct scan_vec {
	const char	*in;
	size_t		 len;
	int		 rc;
	size_t		 head_len;	/* for HTTP_OK */
	const char	*err;		/* for HTTP_INVALID */
};

struct req_vec {
	const char		*in;
	size_t			 len;
	const char		*err;	/* NULL: valid, fields below */
	const char		*method;
	const char		*target;
	enum http_target_form	 form;
	const char		*scheme;
	const char		*authority;
	const char		*host;
	uint16_t		 port;
	const char		*path;
	int			 minor;
	enum http_body_kind	 body;
	uint64_t		 cl;
	bool			 keep_alive;
	bool			 expect;
	const char		*host_header;
	size_t			 nheaders;
};

struct resp_vec {
	const char		*in;
	size_t			 len;
	const char		*method;	/* of the request */
	const char		*err;
	int			 status;
	const char		*reason;
	int			 minor;
	enum http_body_kind	 body;
	uint64_t		 cl;
	bool			 keep_alive;
	size_t			 nheaders;
};

struct chunk_vec {
	const char	*in;
	size_t		 len;
	int		 rc;		/* DONE, NEED_MORE or INVALID */
	const char	*data;		/* decoded bytes (DONE, NEED_MORE) */
	size_t		 used;		/* bytes consumed (DONE); 0: all */
	const char	*err;		/* INVALID */
};

static void	vcheck(bool, size_t, const char *, size_t, const char *, int);
static bool	str_eq(const char *, const char *);
static int	scan_all(const char *, size_t, const struct http_limits *,
		    size_t, size_t *, const char **);
static void	test_scan(void);
static void	test_scan_limits(void);
static void	test_request(void);
static void	check_request_ok(size_t, const struct req_vec *,
		    const struct http_request_head *);
static void	test_request_limits(void);
static void	test_request_trailing_bytes(void);
static void	test_request_override(void);
static void	test_response(void);
static void	test_header_find(void);
static void	test_list_has_token(void);
static void	test_error_is_limit(void);
static int	chunked_run(const char *, size_t, size_t, char *, size_t *,
		    size_t *, const char **);
static void	test_chunked(void);
static void	test_chunked_limits(void);
static void	test_chunked_api(void);

/* ---- scanner ------------------------------------------------------- */

static const struct scan_vec scan_vecs[] = {
	{ B(GET11 "\r\n"), HTTP_OK, sizeof(GET11 "\r\n") - 1, NULL },
	/* The body after the head is not part of it. */
	{ B(POST11 "Content-Length: 4\r\n\r\nBODY"), HTTP_OK,
	    sizeof(POST11 "Content-Length: 4\r\n\r\n") - 1, NULL },
	/* A head with no fields at all ends at its first empty line. */
	{ B("GET / HTTP/1.0\r\n\r\n"), HTTP_OK, 18, NULL },
	{ B(GET11), HTTP_NEED_MORE, 0, NULL },
	{ B(GET11 "\r"), HTTP_NEED_MORE, 0, NULL },
	{ B(""), HTTP_NEED_MORE, 0, NULL },
	/* obs-text in a value passes the scan (the parser allows it too). */
	{ B(GET11 "X: caf\xc3\xa9\r\n\r\n"), HTTP_OK,
	    sizeof(GET11 "X: caf\xc3\xa9\r\n\r\n") - 1, NULL },
	/* HTAB is the one control byte allowed. */
	{ B(GET11 "X: a\tb\r\n\r\n"), HTTP_OK,
	    sizeof(GET11 "X: a\tb\r\n\r\n") - 1, NULL },
	{ B("GET / HTTP/1.1\n" HOST "\r\n"), HTTP_INVALID, 0,
	    "bare LF in head" },
	{ B(GET11 "X: a\n\r\n"), HTTP_INVALID, 0, "bare LF in head" },
	{ B(GET11 "\n"), HTTP_INVALID, 0, "bare LF in head" },
	{ B("\n"), HTTP_INVALID, 0, "bare LF in head" },
	{ B(GET11 "X: a\rY: b\r\n\r\n"), HTTP_INVALID, 0, "bare CR in head" },
	{ B(GET11 "\r\r\n"), HTTP_INVALID, 0, "bare CR in head" },
	{ B("GET / HTTP/1.1\r\r\n" HOST "\r\n"), HTTP_INVALID, 0,
	    "bare CR in head" },
	{ B(GET11 "X: a\0b\r\n\r\n"), HTTP_INVALID, 0, "NUL byte in head" },
	{ B("GET /\0 HTTP/1.1\r\n"), HTTP_INVALID, 0, "NUL byte in head" },
	{ B(GET11 "X: a\x7f" "b\r\n\r\n"), HTTP_INVALID, 0,
	    "control byte in head" },
	{ B(GET11 "X: a\x0b" "b\r\n\r\n"), HTTP_INVALID, 0,
	    "control byte in head" },
	{ B(GET11 "X: \x1b[31m\r\n\r\n"), HTTP_INVALID, 0,
	    "control byte in head" },
	{ B(GET11 "X\x01: a\r\n\r\n"), HTTP_INVALID, 0,
	    "control byte in head" },
	/* RFC 9112 §2.2 lets a server skip one CRLF first; moat refuses. */
	{ B("\r\nGET / HTTP/1.1\r\n" HOST "\r\n"), HTTP_INVALID, 0,
	    "empty line before start line" },
};

static void
vcheck(bool ok, size_t i, const char *in, size_t len, const char *cond,
    int line)
{
	char	msg[512];
	size_t	o = 0, j;

	if (ok) {
		CU_assertImplementation(CU_TRUE, line, cond, __FILE__, "",
		    CU_FALSE);
		return;
	}
	o = (size_t)snprintf(msg, sizeof(msg), "vector %zu \"", i);
	for (j = 0; j < len && j < 80 && o + 8 < sizeof(msg); j++) {
		unsigned char c = (unsigned char)in[j];

		if (c >= 0x20 && c < 0x7f && c != '\\')
			msg[o++] = (char)c;
		else
			o += (size_t)snprintf(msg + o, sizeof(msg) - o,
			    "\\x%02x", c);
	}
	snprintf(msg + o, sizeof(msg) - o, "\": %s", cond);
	CU_assertImplementation(CU_FALSE, line, msg, __FILE__, "", CU_FALSE);
}

static bool
str_eq(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

/*
 * Scans in[0..len) arriving step bytes at a time, like moatd does with a
 * growing buffer.  Returns the first result other than NEED_MORE, or
 * NEED_MORE once all bytes were fed.
 */
static int
scan_all(const char *in, size_t len, const struct http_limits *lim,
    size_t step, size_t *head_len, const char **err)
{
	size_t	state = 0, have = 0;
	int	rc = HTTP_NEED_MORE;

	do {
		have = len - have < step ? len : have + step;
		rc = http_head_scan(in, have, lim, &state, head_len, err);
	} while (rc == HTTP_NEED_MORE && have < len);
	return rc;
}

static void
test_scan(void)
{
	static const size_t	 steps[] = { 1, 2, 3, 7, 64, SIZE_MAX };
	const struct scan_vec	*v;
	const char		*err;
	size_t			 i, s, hl;
	int			 rc;

	for (i = 0; i < sizeof(scan_vecs) / sizeof(scan_vecs[0]); i++) {
		v = &scan_vecs[i];
		for (s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
			hl = 0;
			err = NULL;
			rc = scan_all(v->in, v->len, NULL, steps[s], &hl, &err);
			CHECK(rc == v->rc, i, v->in, v->len);
			if (v->rc == HTTP_OK)
				CHECK(hl == v->head_len, i, v->in, v->len);
			if (v->rc == HTTP_INVALID)
				CHECK(str_eq(err, v->err), i, v->in, v->len);
		}
	}
}

static void
test_scan_limits(void)
{
	/* "GET / HTTP/1.1" is 14 bytes; the head 16 + 19 + 2 = 37. */
	static const char	 head[] = "GET / HTTP/1.1\r\n"
	    "Host: example.com\r\n\r\n";
	struct http_limits	 lim = { 14, sizeof(head) - 1, 10 };
	const char		*err = NULL;
	size_t			 hl = 0, step;

	for (step = 1; step <= sizeof(head); step++) {
		lim.line_max = 14;
		lim.head_max = sizeof(head) - 1;
		CU_ASSERT_EQUAL(scan_all(head, sizeof(head) - 1, &lim, step,
		    &hl, &err), HTTP_OK);
		CU_ASSERT_EQUAL(hl, sizeof(head) - 1);
		lim.line_max = 13;
		CU_ASSERT_EQUAL(scan_all(head, sizeof(head) - 1, &lim, step,
		    &hl, &err), HTTP_INVALID);
		CU_ASSERT_STRING_EQUAL(err, "start line too long");
		CU_ASSERT_TRUE(http_error_is_limit(err));
		lim.line_max = 14;
		lim.head_max = sizeof(head) - 2;
		CU_ASSERT_EQUAL(scan_all(head, sizeof(head) - 1, &lim, step,
		    &hl, &err), HTTP_INVALID);
		CU_ASSERT_STRING_EQUAL(err, "head too long");
		CU_ASSERT_TRUE(http_error_is_limit(err));
	}
	/* Field lines are bounded by head_max only, not line_max. */
	lim.line_max = 14;
	lim.head_max = 1000;
	CU_ASSERT_EQUAL(scan_all(B("GET / HTTP/1.1\r\nX-Long-Field-Line: "
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n"), &lim, 1, &hl, &err),
	    HTTP_OK);
}

/* ---- request heads ------------------------------------------------- */

static const struct req_vec req_vecs[] = {
	/* -- valid -- */
	{ B(GET11 "\r\n"), NULL, "GET", "/", HTTP_FORM_ORIGIN, NULL, NULL,
	    NULL, 0, "/", 1, HTTP_BODY_NONE, 0, true, false, "example.com", 1 },
	{ B("GET http://example.com:8080/a/b?c=d HTTP/1.1\r\n"
	    "Host: example.com:8080\r\n\r\n"), NULL, "GET",
	    "http://example.com:8080/a/b?c=d", HTTP_FORM_ABSOLUTE, "http",
	    "example.com:8080", "example.com", 8080, "/a/b?c=d", 1,
	    HTTP_BODY_NONE, 0, true, false, "example.com:8080", 1 },
	/* Empty path becomes "/"; host kept as sent; scheme lower-cased. */
	{ B("GET HTTP://Example.COM HTTP/1.1\r\n" HOST "\r\n"), NULL, "GET",
	    "HTTP://Example.COM", HTTP_FORM_ABSOLUTE, "http", "Example.COM",
	    "Example.COM", 0, "/", 1, HTTP_BODY_NONE, 0, true, false,
	    "example.com", 1 },
	{ B("GET http://example.com?x=1 HTTP/1.1\r\n" HOST "\r\n"), NULL,
	    "GET", "http://example.com?x=1", HTTP_FORM_ABSOLUTE, "http",
	    "example.com", "example.com", 0, "/?x=1", 1, HTTP_BODY_NONE, 0,
	    true, false, "example.com", 1 },
	{ B("GET https://example.com/ HTTP/1.1\r\n" HOST "\r\n"), NULL, "GET",
	    "https://example.com/", HTTP_FORM_ABSOLUTE, "https", "example.com",
	    "example.com", 0, "/", 1, HTTP_BODY_NONE, 0, true, false,
	    "example.com", 1 },
	{ B("GET ws://example.com/chat HTTP/1.1\r\n" HOST "\r\n"), NULL, "GET",
	    "ws://example.com/chat", HTTP_FORM_ABSOLUTE, "ws", "example.com",
	    "example.com", 0, "/chat", 1, HTTP_BODY_NONE, 0, true, false,
	    "example.com", 1 },
	{ B("GET wss://[2001:db8::1]:8443/ HTTP/1.1\r\nHost: [2001:db8::1]:"
	    "8443\r\n\r\n"), NULL, "GET", "wss://[2001:db8::1]:8443/",
	    HTTP_FORM_ABSOLUTE, "wss", "[2001:db8::1]:8443", "[2001:db8::1]",
	    8443, "/", 1, HTTP_BODY_NONE, 0, true, false,
	    "[2001:db8::1]:8443", 1 },
	{ B("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n"
	    "\r\n"), NULL, "CONNECT", "example.com:443", HTTP_FORM_AUTHORITY,
	    NULL, "example.com:443", "example.com", 443, NULL, 1,
	    HTTP_BODY_NONE, 0, true, false, "example.com:443", 1 },
	{ B("CONNECT [::ffff:192.0.2.1]:443 HTTP/1.1\r\nHost: x\r\n\r\n"),
	    NULL, "CONNECT", "[::ffff:192.0.2.1]:443", HTTP_FORM_AUTHORITY,
	    NULL, "[::ffff:192.0.2.1]:443", "[::ffff:192.0.2.1]", 443, NULL, 1,
	    HTTP_BODY_NONE, 0, true, false, "x", 1 },
	/* Content-Length: 0 on CONNECT is harmless. */
	{ B("CONNECT a.example:65535 HTTP/1.1\r\nHost: a.example:65535\r\n"
	    "Content-Length: 0\r\n\r\n"), NULL, "CONNECT", "a.example:65535",
	    HTTP_FORM_AUTHORITY, NULL, "a.example:65535", "a.example", 65535,
	    NULL, 1, HTTP_BODY_LENGTH, 0, true, false, "a.example:65535", 2 },
	{ B("OPTIONS * HTTP/1.1\r\n" HOST "\r\n"), NULL, "OPTIONS", "*",
	    HTTP_FORM_ASTERISK, NULL, NULL, NULL, 0, NULL, 1, HTTP_BODY_NONE, 0,
	    true, false, "example.com", 1 },
	/* HTTP/1.0: Host optional, keep-alive only on request. */
	{ B("GET / HTTP/1.0\r\n\r\n"), NULL, "GET", "/", HTTP_FORM_ORIGIN,
	    NULL, NULL, NULL, 0, "/", 0, HTTP_BODY_NONE, 0, false, false, NULL,
	    0 },
	{ B("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n" HOST "\r\n"), NULL,
	    "GET", "/", HTTP_FORM_ORIGIN, NULL, NULL, NULL, 0, "/", 0,
	    HTTP_BODY_NONE, 0, true, false, "example.com", 2 },
	{ B("GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n"), NULL,
	    "GET", "/", HTTP_FORM_ORIGIN, NULL, NULL, NULL, 0, "/", 0,
	    HTTP_BODY_NONE, 0, false, false, NULL, 1 },
	{ B(GET11 "Connection: close\r\n\r\n"), NULL, "GET", "/",
	    HTTP_FORM_ORIGIN, NULL, NULL, NULL, 0, "/", 1, HTTP_BODY_NONE, 0,
	    false, false, "example.com", 2 },
	{ B(GET11 "Connection: Upgrade\r\nConnection: foo ,\tCLOSE \r\n\r\n"),
	    NULL, "GET", "/", HTTP_FORM_ORIGIN, NULL, NULL, NULL, 0, "/", 1,
	    HTTP_BODY_NONE, 0, false, false, "example.com", 3 },
	/* "closed" is not "close". */
	{ B(GET11 "Connection: closed\r\n\r\n"), NULL, "GET", "/",
	    HTTP_FORM_ORIGIN, NULL, NULL, NULL, 0, "/", 1, HTTP_BODY_NONE, 0,
	    true, false, "example.com", 2 },
	{ B(POST11 "Content-Length: 5\r\n\r\n"), NULL, "POST", "/",
	    HTTP_FORM_ORIGIN, NULL, NULL, NULL, 0, "/", 1, HTTP_BODY_LENGTH, 5,
	    true, false, "example.com", 2 },
	{ B(POST11 "Content-Length:5\r\n\r\n"), NULL, "POST", "/",
	    HTTP_FORM_ORIGIN, NULL, NULL, NULL, 0, "/", 1, HTTP_BODY_LENGTH, 5,
	    true, false, "example.com", 2 },
	{ B(POST11 "content-length: 0\r\n\r\n"), NULL, "POST", "/",
	    HTTP_FORM_ORIGIN, NULL, NULL, NULL, 0, "/", 1, HTTP_BODY_LENGTH, 0,
	    true, false, "example.com", 2 },
	/* Leading zeros are digits; INT64_MAX is the largest length. */
	{ B(POST11 "Content-Length: 007\r\n\r\n"), NULL, "POST", "/",
	    HTTP_FORM_ORIGIN, NULL, NULL, NULL, 0, "/", 1, HTTP_BODY_LENGTH, 7,
	    true, false, "example.com", 2 },
	{ B(POST11 "Content-Length: 9223372036854775807\r\n\r\n"), NULL, "POST",
	    "/", HTTP_FORM_ORIGIN, NULL, NULL, NULL, 0, "/", 1,
	    HTTP_BODY_LENGTH, INT64_MAX, true, false, "example.com", 2 },
	{ B(POST11 "Transfer-Encoding: chunked\r\n\r\n"), NULL, "POST", "/",
	    HTTP_FORM_ORIGIN, NULL, NULL, NULL, 0, "/", 1, HTTP_BODY_CHUNKED, 0,
	    true, false, "example.com", 2 },
	/* Case-insensitive name and coding. */
	{ B(POST11 "TRANSFER-ENCODING:Chunked\r\n\r\n"), NULL, "POST", "/",
	    HTTP_FORM_ORIGIN, NULL, NULL, NULL, 0, "/", 1, HTTP_BODY_CHUNKED, 0,
	    true, false, "example.com", 2 },
	{ B(POST11 "Expect: 100-Continue\r\nContent-Length: 3\r\n\r\n"), NULL,
	    "POST", "/", HTTP_FORM_ORIGIN, NULL, NULL, NULL, 0, "/", 1,
	    HTTP_BODY_LENGTH, 3, true, true, "example.com", 3 },
	/* RFC 9110 §10.1.1: HTTP/1.0 requests' 100-continue is ignored. */
	{ B("POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 3\r\n"
	    "\r\n"), NULL, "POST", "/", HTTP_FORM_ORIGIN, NULL, NULL, NULL, 0,
	    "/", 0, HTTP_BODY_LENGTH, 3, false, false, NULL, 2 },
	/* obs-text, inner HTAB and OWS around values are fine. */
	{ B(GET11 "X-A: caf\xc3\xa9\r\nX-B:\t a\tb \t\r\nX-C:\r\nX_D: 1\r\n"
	    "\r\n"), NULL, "GET", "/", HTTP_FORM_ORIGIN, NULL, NULL, NULL, 0,
	    "/", 1, HTTP_BODY_NONE, 0, true, false, "example.com", 5 },
	/* Names as long as the framing fields, but other fields. */
	{ B(GET11 "Hostx: a\r\nExpecx: b\r\nConnectiox: close\r\n"
	    "Content-Lengtx: x\r\nTransfer-Encodinx: y\r\n"
	    "Content-Length-: z\r\n\r\n"), NULL, "GET", "/",
	    HTTP_FORM_ORIGIN, NULL, NULL, NULL, 0, "/", 1, HTTP_BODY_NONE, 0,
	    true, false, "example.com", 7 },
	{ B("GET /a%20b/%7E?q=%2F&r=[1]|{2} HTTP/1.1\r\n" HOST "\r\n"), NULL,
	    "GET", "/a%20b/%7E?q=%2F&r=[1]|{2}", HTTP_FORM_ORIGIN, NULL, NULL,
	    NULL, 0, "/a%20b/%7E?q=%2F&r=[1]|{2}", 1, HTTP_BODY_NONE, 0, true,
	    false, "example.com", 1 },
	{ B("GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n"), NULL, "GET", "/",
	    HTTP_FORM_ORIGIN, NULL, NULL, NULL, 0, "/", 1, HTTP_BODY_NONE, 0,
	    true, false, "[::1]:8080", 1 },
	{ B("M-SEARCH! /x HTTP/1.1\r\nHost: under_score.example.\r\n\r\n"),
	    NULL, "M-SEARCH!", "/x", HTTP_FORM_ORIGIN, NULL, NULL, NULL, 0,
	    "/x", 1, HTTP_BODY_NONE, 0, true, false, "under_score.example.",
	    1 },

	/* -- byte level (the scan refuses; the parser too) -- */
	{ B("GET / HTTP/1.1\n" HOST "\r\n"), .err = "bare LF in head" },
	{ B(GET11 "X: a\n\r\n"), .err = "bare LF in head" },
	{ B(GET11 "X: a\rb\r\n\r\n"), .err = "bare CR in head" },
	{ B(GET11 "X: a\0b\r\n\r\n"), .err = "NUL byte in head" },
	{ B(GET11 "X: a\x7f\r\n\r\n"), .err = "control byte in head" },
	{ B(GET11 "X: a\x0c\r\n\r\n"), .err = "control byte in head" },
	{ B("GET /a\x01 HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "control byte in head" },
	{ B("\r\nGET / HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "empty line before start line" },

	/* -- request line -- */
	{ B("GET /\r\n\r\n"),
	    .err = "missing HTTP version (HTTP/0.9 refused)" },
	{ B("GET\r\n\r\n"), .err = "missing request-target" },
	{ B(" GET / HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "white space before method" },
	{ B("GET\t/ HTTP/1.1\r\n" HOST "\r\n"), .err = "HTAB in request line" },
	{ B("G@T / HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "bad character in method" },
	{ B("G\xc3\x89T / HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "bad character in method" },
	{ B("GET  / HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "white space in request-target" },
	{ B("GET /a b HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "white space in request-target" },
	{ B("GET /a\tb HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "white space in request-target" },
	{ B("GET  HTTP/1.1\r\n" HOST "\r\n"), .err = "empty request-target" },
	{ B("GET / HTTP/1.1 \r\n" HOST "\r\n"), .err = "bad HTTP version" },
	{ B("GET / HTTP/1.10\r\n" HOST "\r\n"), .err = "bad HTTP version" },
	{ B("GET / http/1.1\r\n" HOST "\r\n"), .err = "bad HTTP version" },
	{ B("GET / HTTP/1\r\n" HOST "\r\n"), .err = "bad HTTP version" },
	{ B("GET / HTTP/1.2\r\n" HOST "\r\n"),
	    .err = "unsupported HTTP version" },
	{ B("GET / HTTP/2.0\r\n" HOST "\r\n"),
	    .err = "unsupported HTTP version" },
	{ B("GET / HTTP/0.9\r\n" HOST "\r\n"),
	    .err = "unsupported HTTP version" },
	/* The HTTP/2 preface ("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") head. */
	{ B("PRI * HTTP/2.0\r\n\r\n"),
	    .err = "HTTP/2 connection preface refused" },
	{ B("GET /caf\xc3\xa9 HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "non-ASCII byte in request-target" },

	/* -- request-target -- */
	{ B("GET /a#frag HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "fragment in request-target" },
	{ B("GET http://example.com/#x HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "fragment in request-target" },
	{ B("GET http://user@example.com/ HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "userinfo in authority refused" },
	{ B("GET http://u:p@example.com/ HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "userinfo in authority refused" },
	{ B("CONNECT user@example.com:443 HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "userinfo in authority refused" },
	{ B("GET http://good.example\\@evil.example/ HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "userinfo in authority refused" },
	{ B("GET http://evil.example\\.good.example/ HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "bad character in host" },
	{ B("GET /a\\..\\b HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "backslash in request-target" },
	{ B("GET /a%zz HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "bad percent-encoding in request-target" },
	{ B("GET http://example.com/a\\b HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "backslash in request-target" },
	{ B("GET http://example.com?a=%G0 HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "bad percent-encoding in request-target" },
	{ B("GET /a%2 HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "bad percent-encoding in request-target" },
	{ B("GET /a\"b HTTP/1.1\r\n" HOST "\r\n"), NULL, "GET", "/a\"b",
	    HTTP_FORM_ORIGIN, NULL, NULL, NULL, 0, "/a\"b", 1, HTTP_BODY_NONE,
	    0, true, false, "example.com", 1 },
	{ B("GET ftp://example.com/ HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "unsupported scheme in request-target" },
	{ B("GET file:///etc/passwd HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "unsupported scheme in request-target" },
	{ B("GET javascript:alert(1) HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "absolute-form without authority" },
	{ B("GET http:/example.com/ HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "absolute-form without authority" },
	{ B("GET 1http://example.com/ HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "bad request-target" },
	{ B("GET example.com HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "bad request-target" },
	{ B("GET example.com:80 HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "authority-form only with CONNECT" },
	{ B("GET http:///path HTTP/1.1\r\n" HOST "\r\n"), .err = "empty host" },
	{ B("GET http://:80/ HTTP/1.1\r\n" HOST "\r\n"), .err = "empty host" },
	{ B("GET http://exa mple.com/ HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "white space in request-target" },
	{ B("GET http://example.com%2F/ HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "bad character in host" },
	{ B("GET http://example.com:/ HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "empty port" },
	{ B("GET http://example.com:+80/ HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "bad port" },
	{ B("GET http://example.com:8o/ HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "bad port" },
	{ B("GET http://example.com:80:81/ HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "bad port" },
	{ B("GET * HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "asterisk-form only with OPTIONS" },
	{ B("OPTIONS ** HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "bad request-target" },
	{ B("CONNECT / HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "CONNECT needs an authority-form target" },
	{ B("CONNECT example.com HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "missing port" },
	{ B("CONNECT example.com: HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "empty port" },
	{ B("CONNECT :443 HTTP/1.1\r\n" HOST "\r\n"), .err = "empty host" },
	{ B("CONNECT example.com:65536 HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "port out of range" },
	{ B("CONNECT example.com:4430000 HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "port out of range" },
	{ B("CONNECT example.com:0443 HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "leading zero in port" },
	{ B("CONNECT example.com:0 HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "port 0 refused" },
	{ B("CONNECT example.com:-443 HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "bad port" },
	{ B("CONNECT http://example.com:443/ HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "bad port" },
	{ B("CONNECT [fe80::1%25eth0]:443 HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "zone ID in IPv6 literal refused" },
	{ B("CONNECT [::1:443 HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "bad IPv6 literal" },
	{ B("CONNECT [::g]:443 HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "bad IPv6 literal" },
	{ B("CONNECT [1::2::3]:443 HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "bad IPv6 literal" },
	{ B("CONNECT []:443 HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "bad IPv6 literal" },
	{ B("CONNECT [v1.x]:443 HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "IPvFuture literal refused" },
	{ B("CONNECT [::1]x:443 HTTP/1.1\r\n" HOST "\r\n"),
	    .err = "bad character after IPv6 literal" },

	/* -- field lines -- */
	{ B(GET11 "X: a\r\n folded\r\n\r\n"), .err = "obs-fold in header" },
	{ B(GET11 "X: a\r\n\tfolded\r\n\r\n"), .err = "obs-fold in header" },
	{ B("GET / HTTP/1.1\r\n " HOST "\r\n"),
	    .err = "white space before first field" },
	{ B(POST11 "Transfer-Encoding : chunked\r\n\r\n"),
	    .err = "white space before colon" },
	{ B(POST11 "Transfer-Encoding\t: chunked\r\n\r\n"),
	    .err = "white space before colon" },
	{ B("GET / HTTP/1.1\r\nHost : example.com\r\n\r\n"),
	    .err = "white space before colon" },
	{ B(GET11 "X Y: z\r\n\r\n"), .err = "white space in field name" },
	{ B(GET11 "NoColon\r\n\r\n"), .err = "field line without colon" },
	{ B(GET11 ": v\r\n\r\n"), .err = "empty field name" },
	{ B(GET11 "X\xc3\xa9: v\r\n\r\n"),
	    .err = "bad character in field name" },
	{ B(GET11 "X\"Y: v\r\n\r\n"), .err = "bad character in field name" },
	{ B(GET11 "X(Y): v\r\n\r\n"), .err = "bad character in field name" },

	/* -- Host -- */
	{ B("GET / HTTP/1.1\r\n\r\n"), .err = "missing Host field" },
	{ B("GET http://example.com/ HTTP/1.1\r\n\r\n"),
	    .err = "missing Host field" },
	{ B(GET11 HOST "\r\n"), .err = "duplicate Host field" },
	{ B(GET11 "host: other.example\r\n\r\n"),
	    .err = "duplicate Host field" },
	{ B("GET / HTTP/1.0\r\n" HOST HOST "\r\n"),
	    .err = "duplicate Host field" },
	{ B("GET / HTTP/1.1\r\nHost:\r\n\r\n"), .err = "empty Host field" },
	{ B("GET / HTTP/1.1\r\nHost: user@example.com\r\n\r\n"),
	    .err = "bad Host field" },
	{ B("GET / HTTP/1.1\r\nHost: a b\r\n\r\n"), .err = "bad Host field" },
	{ B("GET / HTTP/1.1\r\nHost: a,b\r\n\r\n"), .err = "bad Host field" },
	{ B("GET / HTTP/1.1\r\nHost: example.com:x\r\n\r\n"),
	    .err = "bad Host field" },

	/* -- Content-Length -- */
	{ B(POST11 "Content-Length: 5\r\nContent-Length: 5\r\n\r\n"),
	    .err = "duplicate Content-Length" },
	{ B(POST11 "Content-Length: 5\r\nContent-Length: 6\r\n\r\n"),
	    .err = "duplicate Content-Length" },
	{ B(POST11 "Content-Length: 5, 5\r\n\r\n"),
	    .err = "Content-Length list refused" },
	{ B(POST11 "Content-Length: 5,5\r\n\r\n"),
	    .err = "Content-Length list refused" },
	{ B(POST11 "Content-Length: -1\r\n\r\n"), .err = "bad Content-Length" },
	{ B(POST11 "Content-Length: +5\r\n\r\n"), .err = "bad Content-Length" },
	{ B(POST11 "Content-Length: 0x5\r\n\r\n"),
	    .err = "bad Content-Length" },
	{ B(POST11 "Content-Length: 5 5\r\n\r\n"),
	    .err = "bad Content-Length" },
	{ B(POST11 "Content-Length: 5.0\r\n\r\n"),
	    .err = "bad Content-Length" },
	{ B(POST11 "Content-Length: \xd9\xa5\r\n\r\n"),
	    .err = "bad Content-Length" },
	{ B(POST11 "Content-Length:\r\n\r\n"), .err = "empty Content-Length" },
	{ B(POST11 "Content-Length: 9223372036854775808\r\n\r\n"),
	    .err = "Content-Length too large" },
	{ B(POST11 "Content-Length: 99999999999999999999\r\n\r\n"),
	    .err = "Content-Length too large" },
	{ B(POST11 "Content-Length: 00000000000000000005\r\n\r\n"),
	    .err = "Content-Length too large" },
	{ B(POST11 "Content-Length:  5\r\n\r\n"),
	    .err = "white space around Content-Length value" },
	{ B(POST11 "Content-Length: 5 \r\n\r\n"),
	    .err = "white space around Content-Length value" },
	{ B(POST11 "Content-Length:\t5\r\n\r\n"),
	    .err = "white space around Content-Length value" },
	{ B(POST11 "Content_Length: 5\r\n\r\n"),
	    .err = "underscore in framing field name" },

	/* -- Transfer-Encoding (CL.TE, TE.CL, TE.TE) -- */
	{ B(POST11 "Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n"),
	    .err = "Content-Length with Transfer-Encoding" },
	{ B(POST11 "Transfer-Encoding: chunked\r\nContent-Length: 6\r\n\r\n"),
	    .err = "Content-Length with Transfer-Encoding" },
	{ B(POST11 "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked"
	    "\r\n\r\n"), .err = "duplicate Transfer-Encoding" },
	{ B(POST11 "Transfer-Encoding: chunked\r\nTransfer-encoding: x\r\n"
	    "\r\n"), .err = "duplicate Transfer-Encoding" },
	{ B(POST11 "Transfer-Encoding:  chunked\r\n\r\n"),
	    .err = "white space around Transfer-Encoding value" },
	{ B(POST11 "Transfer-Encoding: chunked \r\n\r\n"),
	    .err = "white space around Transfer-Encoding value" },
	{ B(POST11 "Transfer-Encoding:\tchunked\r\n\r\n"),
	    .err = "white space around Transfer-Encoding value" },
	{ B(POST11 "Transfer-Encoding: xchunked\r\n\r\n"),
	    .err = "unsupported Transfer-Encoding" },
	{ B(POST11 "Transfer-Encoding: chunked1\r\n\r\n"),
	    .err = "unsupported Transfer-Encoding" },
	{ B(POST11 "Transfer-Encoding: \"chunked\"\r\n\r\n"),
	    .err = "unsupported Transfer-Encoding" },
	{ B(POST11 "Transfer-Encoding: gzip\r\n\r\n"),
	    .err = "unsupported Transfer-Encoding" },
	{ B(POST11 "Transfer-Encoding:\r\n\r\n"),
	    .err = "unsupported Transfer-Encoding" },
	{ B(POST11 "Transfer-Encoding: chunked, identity\r\n\r\n"),
	    .err = "Transfer-Encoding other than chunked" },
	{ B(POST11 "Transfer-Encoding: gzip, chunked\r\n\r\n"),
	    .err = "Transfer-Encoding other than chunked" },
	{ B(POST11 "Transfer-Encoding: chunked,\r\n\r\n"),
	    .err = "Transfer-Encoding other than chunked" },
	{ B(POST11 "Transfer_Encoding: chunked\r\n\r\n"),
	    .err = "underscore in framing field name" },
	{ B("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"),
	    .err = "Transfer-Encoding in HTTP/1.0 message" },
	{ B("CONNECT example.com:443 HTTP/1.1\r\n" HOST "Content-Length: 5\r\n"
	    "\r\n"), .err = "body in CONNECT request refused" },
	{ B("CONNECT example.com:443 HTTP/1.1\r\n" HOST "Transfer-Encoding: "
	    "chunked\r\n\r\n"), .err = "body in CONNECT request refused" },
};

static void
check_request_ok(size_t i, const struct req_vec *v,
    const struct http_request_head *h)
{
	const char	*in = v->in;
	size_t		 len = v->len, k;

	CHECK(str_eq(h->method, v->method), i, in, len);
	CHECK(str_eq(h->target, v->target), i, in, len);
	CHECK(h->target_len == strlen(v->target), i, in, len);
	CHECK(h->form == v->form, i, in, len);
	CHECK(str_eq(h->scheme, v->scheme), i, in, len);
	CHECK(str_eq(h->authority, v->authority), i, in, len);
	CHECK(str_eq(h->host, v->host), i, in, len);
	CHECK(h->port == v->port, i, in, len);
	CHECK(str_eq(h->path, v->path), i, in, len);
	CHECK(h->version_minor == v->minor, i, in, len);
	CHECK(h->body == v->body, i, in, len);
	CHECK(h->content_length == v->cl, i, in, len);
	CHECK(h->keep_alive == v->keep_alive, i, in, len);
	CHECK(h->expect_continue == v->expect, i, in, len);
	CHECK(str_eq(h->host_header, v->host_header), i, in, len);
	CHECK(h->nheaders == v->nheaders, i, in, len);
	CHECK(h->head_len == len, i, in, len);
	for (k = 0; k < h->nheaders; k++) {
		const struct http_header *f = &h->headers[k];

		CHECK(f->name_len > 0 && f->value[f->value_len] == '\0', i, in,
		    len);
		CHECK(f->value_len == 0 || (f->value[0] != ' ' &&
		    f->value[0] != '\t' && f->value[f->value_len - 1] != ' ' &&
		    f->value[f->value_len - 1] != '\t'), i, in, len);
	}
}

static void
test_request(void)
{
	struct http_request_head	 h;
	const struct req_vec		*v;
	const char			*err;
	size_t				 i, hl, state;
	int				 rc;

	for (i = 0; i < sizeof(req_vecs) / sizeof(req_vecs[0]); i++) {
		v = &req_vecs[i];
		err = NULL;
		state = 0;
		hl = 0;
		rc = http_head_scan(v->in, v->len, NULL, &state, &hl, &err);
		if (rc == HTTP_INVALID) {
			/* A byte-level error: the parser must refuse too. */
			CHECK(v->err != NULL && str_eq(err, v->err), i, v->in,
			    v->len);
			rc = http_request_head_parse(v->in, v->len, NULL, &h,
			    &err);
			CHECK(rc == HTTP_INVALID && h.mem == NULL, i, v->in,
			    v->len);
			continue;
		}
		CHECK(rc == HTTP_OK && hl == v->len, i, v->in, v->len);
		rc = http_request_head_parse(v->in, v->len, NULL, &h, &err);
		if (v->err != NULL) {
			CHECK(rc == HTTP_INVALID && str_eq(err, v->err), i,
			    v->in, v->len);
			CHECK(h.mem == NULL, i, v->in, v->len);
			continue;
		}
		CHECK(rc == HTTP_OK, i, v->in, v->len);
		if (rc == HTTP_OK)
			check_request_ok(i, v, &h);
		http_request_head_free(&h);
		CHECK(h.mem == NULL && h.headers == NULL, i, v->in, v->len);
	}
	http_request_head_free(NULL);
}

static void
test_request_limits(void)
{
	static const char		 head[] = "GET / HTTP/1.1\r\n"
	    "Host: a\r\nX: 1\r\nY: 2\r\n\r\n";
	struct http_limits		 lim = { 14, sizeof(head) - 1, 3 };
	struct http_request_head	 h;
	const char			*err = NULL;

	CU_ASSERT_EQUAL(http_request_head_parse(B(head), &lim, &h, &err),
	    HTTP_OK);
	CU_ASSERT_EQUAL(h.nheaders, 3);
	CU_ASSERT_EQUAL(http_header_find(h.headers, h.nheaders, 0, "y"), 2);
	CU_ASSERT_STRING_EQUAL(h.headers[2].value, "2");
	http_request_head_free(&h);
	lim.header_count_max = 2;
	CU_ASSERT_EQUAL(http_request_head_parse(B(head), &lim, &h, &err),
	    HTTP_INVALID);
	CU_ASSERT_STRING_EQUAL(err, "too many header fields");
	CU_ASSERT_TRUE(http_error_is_limit(err));
	lim.header_count_max = 0;
	CU_ASSERT_EQUAL(http_request_head_parse(B(head), &lim, &h, &err),
	    HTTP_INVALID);
	CU_ASSERT_STRING_EQUAL(err, "too many header fields");
	CU_ASSERT_TRUE(http_error_is_limit(err));
	lim.header_count_max = 3;
	lim.line_max = 13;
	CU_ASSERT_EQUAL(http_request_head_parse(B(head), &lim, &h, &err),
	    HTTP_INVALID);
	CU_ASSERT_STRING_EQUAL(err, "start line too long");
	CU_ASSERT_TRUE(http_error_is_limit(err));
	lim.line_max = 14;
	lim.head_max = sizeof(head) - 2;
	CU_ASSERT_EQUAL(http_request_head_parse(B(head), &lim, &h, &err),
	    HTTP_INVALID);
	CU_ASSERT_STRING_EQUAL(err, "head too long");
	CU_ASSERT_TRUE(http_error_is_limit(err));
}

/* The parser takes exactly one head; the scan says where it ends. */
static void
test_request_trailing_bytes(void)
{
	static const char		 in[] = GET11 "\r\nGET / HTTP/1.1\r\n";
	struct http_request_head	 h;
	const char			*err = NULL;
	size_t				 state = 0, hl = 0;

	CU_ASSERT_EQUAL(http_request_head_parse(B(in), NULL, &h, &err),
	    HTTP_INVALID);
	CU_ASSERT_STRING_EQUAL(err, "bytes after end of head");
	CU_ASSERT_EQUAL(http_request_head_parse(B(GET11), NULL, &h, &err),
	    HTTP_INVALID);
	CU_ASSERT_STRING_EQUAL(err, "incomplete head");
	CU_ASSERT_EQUAL(http_request_head_parse(B(GET11 "\r"), NULL, &h, &err),
	    HTTP_INVALID);
	CU_ASSERT_STRING_EQUAL(err, "incomplete head");
	CU_ASSERT_EQUAL(http_request_head_parse(B(GET11 "X: a"), NULL, &h,
	    &err), HTTP_INVALID);
	CU_ASSERT_STRING_EQUAL(err, "incomplete head");
	CU_ASSERT_EQUAL(http_request_head_parse("", 0, NULL, &h, &err),
	    HTTP_INVALID);
	CU_ASSERT_STRING_EQUAL(err, "incomplete head");
	CU_ASSERT_EQUAL(http_head_scan(B(in), NULL, &state, &hl, &err),
	    HTTP_OK);
	CU_ASSERT_EQUAL(hl, sizeof(GET11 "\r\n") - 1);
	CU_ASSERT_EQUAL(http_request_head_parse(in, hl, NULL, &h, &err),
	    HTTP_OK);
	http_request_head_free(&h);
}

/* ---- response heads ------------------------------------------------ */

static const struct resp_vec resp_vecs[] = {
	{ B("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"), "GET", NULL, 200,
	    "OK", 1, HTTP_BODY_LENGTH, 5, true, 1 },
	/* No reason, with or without the SP. */
	{ B("HTTP/1.1 200\r\n\r\n"), "GET", NULL, 200, "", 1, HTTP_BODY_CLOSE,
	    0, false, 0 },
	{ B("HTTP/1.1 200 \r\n\r\n"), "GET", NULL, 200, "", 1, HTTP_BODY_CLOSE,
	    0, false, 0 },
	{ B("HTTP/1.1 404 Not  Found\t!\r\nContent-Length: 0\r\n\r\n"), "GET",
	    NULL, 404, "Not  Found\t!", 1, HTTP_BODY_LENGTH, 0, true, 1 },
	{ B("HTTP/1.1 200 \xc3\x89t\xc3\xa9\r\nContent-Length: 0\r\n\r\n"),
	    "GET", NULL, 200, "\xc3\x89t\xc3\xa9", 1, HTTP_BODY_LENGTH, 0, true,
	    1 },
	{ B("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"), "POST",
	    NULL, 200, "OK", 1, HTTP_BODY_CHUNKED, 0, true, 1 },
	{ B("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n"
	    "\r\n"), "GET", NULL, 200, "OK", 1, HTTP_BODY_LENGTH, 1, false, 2 },
	{ B("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n"), "GET", NULL, 200,
	    "OK", 0, HTTP_BODY_LENGTH, 2, false, 1 },
	{ B("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n"
	    "\r\n"), "GET", NULL, 200, "OK", 0, HTTP_BODY_LENGTH, 2, true, 2 },
	/* Close-delimited bodies never keep the connection. */
	{ B("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n"), "GET", NULL,
	    200, "OK", 0, HTTP_BODY_CLOSE, 0, false, 1 },
	/* RFC 9112 §6.3 rules 1 and 2: no body whatever the fields say. */
	{ B("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"), "HEAD", NULL,
	    200, "OK", 1, HTTP_BODY_NONE, 100, true, 1 },
	{ B("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"), "HEAD",
	    NULL, 200, "OK", 1, HTTP_BODY_NONE, 0, true, 1 },
	{ B("HTTP/1.1 204 No Content\r\n\r\n"), "DELETE", NULL, 204,
	    "No Content", 1, HTTP_BODY_NONE, 0, true, 0 },
	{ B("HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n"), "GET",
	    NULL, 304, "Not Modified", 1, HTTP_BODY_NONE, 10, true, 1 },
	{ B("HTTP/1.1 100 Continue\r\n\r\n"), "POST", NULL, 100, "Continue", 1,
	    HTTP_BODY_NONE, 0, true, 0 },
	{ B("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
	    "Upgrade: websocket\r\n\r\n"), "GET", NULL, 101,
	    "Switching Protocols", 1, HTTP_BODY_NONE, 0, true, 2 },
	/* A failed CONNECT is an ordinary response. */
	{ B("HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0"
	    "\r\n\r\n"), "CONNECT", NULL, 407,
	    "Proxy Authentication Required", 1, HTTP_BODY_LENGTH, 0, true, 1 },
	{ B("HTTP/1.1 999 Odd\r\nContent-Length: 0\r\n\r\n"), NULL, NULL, 999,
	    "Odd", 1, HTTP_BODY_LENGTH, 0, true, 1 },
	/* Host is not a response field: two are not an error. */
	{ B("HTTP/1.1 200 OK\r\nHost: a\r\nHost: b\r\nContent-Length: 0\r\n"
	    "\r\n"), "GET", NULL, 200, "OK", 1, HTTP_BODY_LENGTH, 0, true, 3 },

	{ B("HTTP/1.1 200 OK\r\n\r\n"), .method = "CONNECT",
	    .err = "2xx response to CONNECT refused" },
	{ B("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked"
	    "\r\n\r\n"), .method = "GET",
	    .err = "Content-Length with Transfer-Encoding" },
	/* Refused even where the body is none anyway. */
	{ B("HTTP/1.1 304 Not Modified\r\nContent-Length: 1\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n"), .method = "GET",
	    .err = "Content-Length with Transfer-Encoding" },
	{ B("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n"
	    "\r\n"), .method = "GET", .err = "duplicate Content-Length" },
	{ B("HTTP/1.1 200 OK\r\nContent-Length: 1, 1\r\n\r\n"), .method = "GET",
	    .err = "Content-Length list refused" },
	{ B("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"),
	    .method = "GET",
	    .err = "Transfer-Encoding in HTTP/1.0 message" },
	{ B("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n"),
	    .method = "GET",
	    .err = "unsupported Transfer-Encoding" },
	{ B("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"),
	    .method = "GET", .err = "Transfer-Encoding other than chunked" },
	{ B("HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n"), .method = "GET",
	    .err = "obs-fold in header" },
	{ B("HTTP/1.1 200 OK\r\nX : a\r\n\r\n"), .method = "GET",
	    .err = "white space before colon" },
	{ B("HTTP/1.1 2000 OK\r\n\r\n"), .method = "GET",
	    .err = "bad status code" },
	{ B("HTTP/1.1 099 OK\r\n\r\n"), .method = "GET",
	    .err = "bad status code" },
	{ B("HTTP/1.1 20 OK\r\n\r\n"), .method = "GET",
	    .err = "bad status code" },
	{ B("HTTP/1.1 2x0 OK\r\n\r\n"), .method = "GET",
	    .err = "bad status code" },
	{ B("HTTP/1.1  200 OK\r\n\r\n"), .method = "GET",
	    .err = "bad status code" },
	{ B("HTTP/1.1 200OK\r\n\r\n"), .method = "GET",
	    .err = "bad status code" },
	{ B("HTTP/1.1\r\n\r\n"), .method = "GET",
	    .err = "missing status code" },
	{ B("HTTP/1.1 \r\n\r\n"), .method = "GET", .err = "bad status code" },
	{ B("HTTP/1.10 200 OK\r\n\r\n"), .method = "GET",
	    .err = "bad HTTP version" },
	{ B("http/1.1 200 OK\r\n\r\n"), .method = "GET",
	    .err = "bad HTTP version" },
	{ B("HTTP/1.1\t200 OK\r\n\r\n"), .method = "GET",
	    .err = "bad HTTP version" },
	{ B("HTTP/2 200\r\n\r\n"), .method = "GET", .err = "bad HTTP version" },
	{ B("HTTP/2.0 200 OK\r\n\r\n"), .method = "GET",
	    .err = "unsupported HTTP version" },
	{ B("ICY 200 OK\r\n\r\n"), .method = "GET", .err = "bad HTTP version" },
	{ B("HTTP/1.1 200 OK\r\nX: \x01\r\n\r\n"), .method = "GET",
	    .err = "control byte in head" },
	{ B("HTTP/1.1 200 O\x7fK\r\n\r\n"), .method = "GET",
	    .err = "control byte in head" },
	{ B("HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n"), .method = "GET",
	    .err = "bare LF in head" },
};

static void
test_response(void)
{
	struct http_response_head	 h;
	const struct resp_vec		*v;
	const char			*err;
	size_t				 i, hl, state;
	int				 rc;

	for (i = 0; i < sizeof(resp_vecs) / sizeof(resp_vecs[0]); i++) {
		v = &resp_vecs[i];
		err = NULL;
		state = 0;
		hl = 0;
		rc = http_head_scan(v->in, v->len, NULL, &state, &hl, &err);
		if (rc == HTTP_INVALID) {
			CHECK(v->err != NULL && str_eq(err, v->err), i, v->in,
			    v->len);
			rc = http_response_head_parse(v->in, v->len, NULL,
			    v->method, &h, &err);
			CHECK(rc == HTTP_INVALID && h.mem == NULL, i, v->in,
			    v->len);
			continue;
		}
		CHECK(rc == HTTP_OK && hl == v->len, i, v->in, v->len);
		rc = http_response_head_parse(v->in, v->len, NULL, v->method,
		    &h, &err);
		if (v->err != NULL) {
			CHECK(rc == HTTP_INVALID && str_eq(err, v->err), i,
			    v->in, v->len);
			continue;
		}
		CHECK(rc == HTTP_OK, i, v->in, v->len);
		if (rc != HTTP_OK)
			continue;
		CHECK(h.status == v->status, i, v->in, v->len);
		CHECK(str_eq(h.reason, v->reason), i, v->in, v->len);
		CHECK(h.version_minor == v->minor, i, v->in, v->len);
		CHECK(h.body == v->body, i, v->in, v->len);
		CHECK(h.content_length == v->cl, i, v->in, v->len);
		CHECK(h.keep_alive == v->keep_alive, i, v->in, v->len);
		CHECK(h.nheaders == v->nheaders, i, v->in, v->len);
		http_response_head_free(&h);
	}
	http_response_head_free(NULL);
}

/* ---- helpers ------------------------------------------------------- */

static void
test_header_find(void)
{
	struct http_request_head	 h;
	const char			*err = NULL;

	CU_ASSERT_FATAL(http_request_head_parse(B(GET11 "X-A: 1\r\n"
	    "x-a: 2\r\nX-AB: 3\r\n\r\n"), NULL, &h, &err) == HTTP_OK);
	CU_ASSERT_EQUAL(http_header_find(h.headers, h.nheaders, 0, "HOST"), 0);
	CU_ASSERT_EQUAL(http_header_find(h.headers, h.nheaders, 0, "x-A"), 1);
	CU_ASSERT_EQUAL(http_header_find(h.headers, h.nheaders, 2, "x-A"), 2);
	CU_ASSERT_EQUAL(http_header_find(h.headers, h.nheaders, 3, "x-A"), -1);
	CU_ASSERT_EQUAL(http_header_find(h.headers, h.nheaders, 0, "X-ABC"),
	    -1);
	CU_ASSERT_EQUAL(http_header_find(h.headers, h.nheaders, 0, "X"), -1);
	CU_ASSERT_EQUAL(http_header_find(h.headers, h.nheaders, 9, "Host"),
	    -1);
	CU_ASSERT_STRING_EQUAL(h.headers[3].value, "3");
	http_request_head_free(&h);
}

static void
test_list_has_token(void)
{
	CU_ASSERT_TRUE(http_list_has_token(B("close"), "close"));
	CU_ASSERT_TRUE(http_list_has_token(B("Keep-Alive, Upgrade"),
	    "upgrade"));
	CU_ASSERT_TRUE(http_list_has_token(B(" a ,\t, b\t"), "b"));
	CU_ASSERT_TRUE(http_list_has_token(B("a,CLOSE"), "close"));
	CU_ASSERT_FALSE(http_list_has_token(B("closed"), "close"));
	CU_ASSERT_FALSE(http_list_has_token(B("clos"), "close"));
	CU_ASSERT_FALSE(http_list_has_token(B("x-close, keep"), "close"));
	CU_ASSERT_FALSE(http_list_has_token(B(""), "close"));
	CU_ASSERT_FALSE(http_list_has_token(B(",,,"), "close"));
	/* The length bounds the value: "close" beyond it does not count. */
	CU_ASSERT_FALSE(http_list_has_token("a, close", 3, "close"));
}

static void
test_error_is_limit(void)
{
	CU_ASSERT_TRUE(http_error_is_limit("head too long"));
	CU_ASSERT_TRUE(http_error_is_limit("start line too long"));
	CU_ASSERT_TRUE(http_error_is_limit("too many header fields"));
	CU_ASSERT_TRUE(http_error_is_limit("chunk size line too long"));
	CU_ASSERT_TRUE(http_error_is_limit("trailer section too long"));
	CU_ASSERT_FALSE(http_error_is_limit("too many digits in chunk size"));
	CU_ASSERT_FALSE(http_error_is_limit("bare LF in head"));
	CU_ASSERT_FALSE(http_error_is_limit("Content-Length too large"));
	CU_ASSERT_FALSE(http_error_is_limit(NULL));
}

/* ---- chunked ------------------------------------------------------- */

static const struct chunk_vec chunk_vecs[] = {
	{ B("5\r\nhello\r\n0\r\n\r\n"), .rc = HTTP_CHUNKED_DONE,
	    .data = "hello" },
	{ B("3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"), .rc = HTTP_CHUNKED_DONE,
	    .data = "abcde" },
	{ B("A\r\n0123456789\r\n0\r\n\r\n"), .rc = HTTP_CHUNKED_DONE,
	    .data = "0123456789" },
	{ B("a\r\n0123456789\r\n0\r\n\r\n"), .rc = HTTP_CHUNKED_DONE,
	    .data = "0123456789" },
	/* Data is opaque: CR and LF inside it are data. */
	{ B("4\r\n\r\nA\n\r\n0\r\n\r\n"), .rc = HTTP_CHUNKED_DONE,
	    .data = "\r\nA\n" },
	{ B("0\r\n\r\n"), .rc = HTTP_CHUNKED_DONE, .data = "" },
	/* 16 digits with leading zeros are fine. */
	{ B("0000000000000002\r\nhi\r\n0000000000000000\r\n\r\n"),
	    .rc = HTTP_CHUNKED_DONE, .data = "hi" },
	/* Extensions: token and quoted values, BWS around ';' and '='. */
	{ B("2;a=b\r\nhi\r\n0\r\n\r\n"), .rc = HTTP_CHUNKED_DONE,
	    .data = "hi" },
	{ B("2;a;b=\"\\\t\"\r\nhi\r\n0\r\n\r\n"), .rc = HTTP_CHUNKED_DONE,
	    .data = "hi" },
	{ B("2 ; a = \"q\\\"x;y\" ;b\t;c=d\r\nhi\r\n0;last\r\n\r\n"),
	    .rc = HTTP_CHUNKED_DONE, .data = "hi" },
	{ B("2;n=\"caf\xc3\xa9\"\r\nhi\r\n0\r\n\r\n"), .rc = HTTP_CHUNKED_DONE,
	    .data = "hi" },
	/* Trailers. */
	{ B("2\r\nhi\r\n0\r\nX-T: v\r\nY:\r\n\r\n"), .rc = HTTP_CHUNKED_DONE,
	    .data = "hi" },
	{ B("0\r\nX: caf\xc3\xa9\t x\r\n\r\n"), .rc = HTTP_CHUNKED_DONE,
	    .data = "" },
	/* Bytes after the body are not consumed. */
	{ B("0\r\n\r\nGET / HTTP/1.1\r\n"), .rc = HTTP_CHUNKED_DONE, .data = "",
	    .used = 5 },

	{ B("5\r\nhel"), .rc = HTTP_NEED_MORE, .data = "hel" },
	{ B("5\r\nhello"), .rc = HTTP_NEED_MORE, .data = "hello" },
	{ B("5\r\nhello\r"), .rc = HTTP_NEED_MORE, .data = "hello" },
	{ B("0\r\n"), .rc = HTTP_NEED_MORE, .data = "" },
	{ B("0\r\nX: a\r\n"), .rc = HTTP_NEED_MORE, .data = "" },
	{ B("7fffffffffffffff\r\nab"), .rc = HTTP_NEED_MORE, .data = "ab" },
	{ B(""), .rc = HTTP_NEED_MORE, .data = "" },

	{ B("0x5\r\nhello\r\n0\r\n\r\n"), HTTP_INVALID, NULL, 0,
	    "bad chunk size" },
	{ B("+5\r\nhello\r\n0\r\n\r\n"), HTTP_INVALID, NULL, 0,
	    "bad chunk size" },
	{ B("-5\r\n"), HTTP_INVALID, NULL, 0, "bad chunk size" },
	{ B("g\r\n"), HTTP_INVALID, NULL, 0, "bad chunk size" },
	{ B("5g\r\n"), HTTP_INVALID, NULL, 0, "bad chunk size" },
	{ B(" 5\r\nhello\r\n0\r\n\r\n"), HTTP_INVALID, NULL, 0,
	    "white space before chunk size" },
	{ B("5 \r\nhello\r\n0\r\n\r\n"), HTTP_INVALID, NULL, 0,
	    "white space after chunk size" },
	{ B("5\t\r\n"), HTTP_INVALID, NULL, 0, "white space after chunk size" },
	{ B("5 5\r\n"), HTTP_INVALID, NULL, 0, "white space after chunk size" },
	{ B("\r\n"), HTTP_INVALID, NULL, 0, "empty chunk size" },
	{ B(";a\r\n"), HTTP_INVALID, NULL, 0, "empty chunk size" },
	{ B("00000000000000005\r\n"), HTTP_INVALID, NULL, 0,
	    "too many digits in chunk size" },
	{ B("8000000000000000\r\n"), HTTP_INVALID, NULL, 0,
	    "chunk size too large" },
	{ B("ffffffffffffffff\r\n"), HTTP_INVALID, NULL, 0,
	    "chunk size too large" },
	{ B("5\nhello\r\n0\r\n\r\n"), HTTP_INVALID, NULL, 0,
	    "bare LF in chunk size line" },
	{ B("5\rhello"), HTTP_INVALID, NULL, 0, "bare CR in chunk size line" },
	{ B("5\r\nhelloX\r\n0\r\n\r\n"), HTTP_INVALID, "hello", 0,
	    "missing CRLF after chunk data" },
	{ B("5\r\nhello\n0\r\n\r\n"), HTTP_INVALID, "hello", 0,
	    "missing CRLF after chunk data" },
	{ B("5\r\nhello\rX"), HTTP_INVALID, "hello", 0,
	    "missing CRLF after chunk data" },
	{ B("5;a\x01\r\nhello\r\n0\r\n\r\n"), HTTP_INVALID, NULL, 0,
	    "control byte in chunk extension" },
	{ B("5;a=\"x\x7f\"\r\n"), HTTP_INVALID, NULL, 0,
	    "control byte in chunk extension" },
	{ B("5;a=\"\\\x01\"\r\n"), .rc = HTTP_INVALID,
	    .err = "control byte in chunk extension" },
	{ B("5;a=\"x\0\"\r\n"), HTTP_INVALID, NULL, 0,
	    "control byte in chunk extension" },
	{ B("5;a\nhello"), HTTP_INVALID, NULL, 0,
	    "bare LF in chunk size line" },
	{ B("5;a=\"x\nhello"), HTTP_INVALID, NULL, 0,
	    "bare LF in chunk size line" },
	{ B("5;\r\n"), HTTP_INVALID, NULL, 0, "bad chunk extension" },
	{ B("5;a=\r\n"), HTTP_INVALID, NULL, 0, "bad chunk extension" },
	{ B("5;a=b=c\r\n"), HTTP_INVALID, NULL, 0, "bad chunk extension" },
	{ B("5;a=\"x\"y\r\n"), HTTP_INVALID, NULL, 0, "bad chunk extension" },
	/* After a value, BWS may only lead to ';', never to '='. */
	{ B("5;a=b =c\r\n"), .rc = HTTP_INVALID, .err = "bad chunk extension" },
	{ B("5;a=\"b\" =c\r\n"), .rc = HTTP_INVALID,
	    .err = "bad chunk extension" },
	{ B("5;a@b\r\n"), HTTP_INVALID, NULL, 0, "bad chunk extension" },
	{ B("5;a b\r\n"), HTTP_INVALID, NULL, 0, "bad chunk extension" },
	{ B("5;a=\"x\r\n"), HTTP_INVALID, NULL, 0,
	    "unterminated quoted-string in chunk extension" },
	{ B("5;a \r\n"), HTTP_INVALID, NULL, 0,
	    "white space at end of chunk size line" },
	{ B("5;a=b \r\n"), HTTP_INVALID, NULL, 0,
	    "white space at end of chunk size line" },
	{ B("0\r\nX: a\r\n folded\r\n\r\n"), HTTP_INVALID, "", 0,
	    "obs-fold in trailer" },
	{ B("0\r\n X: a\r\n\r\n"), HTTP_INVALID, "", 0, "obs-fold in trailer" },
	{ B("0\r\nX Y: a\r\n\r\n"), HTTP_INVALID, "", 0,
	    "white space in trailer field name" },
	{ B("0\r\nX : a\r\n\r\n"), HTTP_INVALID, "", 0,
	    "white space in trailer field name" },
	{ B("0\r\n: a\r\n\r\n"), HTTP_INVALID, "", 0,
	    "empty trailer field name" },
	{ B("0\r\nX\r\n\r\n"), HTTP_INVALID, "", 0,
	    "trailer field without colon" },
	{ B("0\r\nX\xc3\xa9: a\r\n\r\n"), HTTP_INVALID, "", 0,
	    "bad character in trailer field name" },
	{ B("0\r\nX: a\nY: b\r\n\r\n"), HTTP_INVALID, "", 0,
	    "bare LF in trailer" },
	{ B("0\r\n\n"), HTTP_INVALID, "", 0, "bare LF in trailer" },
	{ B("0\r\nX: a\x01\r\n\r\n"), HTTP_INVALID, "", 0,
	    "control byte in trailer field" },
	{ B("0\r\nX: a\0\r\n\r\n"), HTTP_INVALID, "", 0,
	    "control byte in trailer field" },
	{ B("0\r\nX: a\rY\r\n\r\n"), HTTP_INVALID, "", 0,
	    "bare CR in trailer" },
	{ B("0\r\n\rX"), HTTP_INVALID, "", 0, "bare CR in trailer" },
};

/*
 * Decodes in[0..len) arriving step bytes at a time, the way the header
 * describes the caller's loop.  Returns DONE, INVALID, or NEED_MORE once
 * the input ran out; out gets the data, *consumed the bytes used.
 */
static int
chunked_run(const char *in, size_t len, size_t step, char *out,
    size_t *outlen, size_t *consumed, const char **err)
{
	struct http_chunked	c;
	size_t			pos = 0, end = 0, used, n;
	uint64_t		left;
	int			rc = HTTP_NEED_MORE;

	http_chunked_init(&c);
	*outlen = 0;
	for (;;) {
		while (pos < end) {
			if ((left = http_chunked_data_left(&c)) > 0) {
				n = left < end - pos ? (size_t)left : end - pos;
				memcpy(out + *outlen, in + pos, n);
				*outlen += n;
				pos += n;
				http_chunked_data_consumed(&c, n);
				continue;
			}
			rc = http_chunked_feed(&c, in + pos, end - pos, &used,
			    err);
			pos += used;
			if (rc == HTTP_CHUNKED_DONE || rc == HTTP_INVALID)
				goto out;
		}
		if (end == len)
			break;
		end = len - end < step ? len : end + step;
	}
	rc = HTTP_NEED_MORE;
 out:
	*consumed = pos;
	return rc;
}

static void
test_chunked(void)
{
	static const size_t	 steps[] = { 1, 2, 3, 5, 16, SIZE_MAX };
	const struct chunk_vec	*v;
	char			 out[256];
	const char		*err;
	size_t			 i, s, outlen, used;
	int			 rc;

	for (i = 0; i < sizeof(chunk_vecs) / sizeof(chunk_vecs[0]); i++) {
		v = &chunk_vecs[i];
		for (s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
			err = NULL;
			rc = chunked_run(v->in, v->len, steps[s], out, &outlen,
			    &used, &err);
			CHECK(rc == v->rc, i, v->in, v->len);
			if (v->data != NULL)
				CHECK(outlen == strlen(v->data) &&
				    memcmp(out, v->data, outlen) == 0, i, v->in,
				    v->len);
			if (v->rc == HTTP_CHUNKED_DONE)
				CHECK(used == (v->used ? v->used : v->len), i,
				    v->in, v->len);
			if (v->rc == HTTP_NEED_MORE)
				CHECK(used == v->len, i, v->in, v->len);
			if (v->rc == HTTP_INVALID)
				CHECK(str_eq(err, v->err), i, v->in, v->len);
		}
	}
}

static void
test_chunked_limits(void)
{
	static char	 in[TRAILER_TEST_MAX + 16];
	char		 out[8];
	const char	*err = NULL;
	size_t		 n, outlen, used;

	/* Size line of exactly HTTP_CHUNK_LINE_MAX_BYTES, CRLF included. */
	n = 0;
	in[n++] = '1';
	in[n++] = ';';
	while (n < HTTP_CHUNK_LINE_MAX_BYTES - 2)
		in[n++] = 'e';
	MEMCPY_LIT(in + n, "\r\nx\r\n0\r\n\r\n");
	CU_ASSERT_EQUAL(chunked_run(in, n + 10, 7, out, &outlen, &used, &err),
	    HTTP_CHUNKED_DONE);
	CU_ASSERT_EQUAL(outlen, 1);
	/* One byte more. */
	memmove(in + 3, in + 2, n + 10 - 2);
	CU_ASSERT_EQUAL(chunked_run(in, n + 11, 7, out, &outlen, &used, &err),
	    HTTP_INVALID);
	CU_ASSERT_STRING_EQUAL(err, "chunk size line too long");
	CU_ASSERT_TRUE(http_error_is_limit(err));

	/* Trailer section of exactly HTTP_TRAILER_MAX_BYTES. */
	MEMCPY_LIT(in, "0\r\nX: ");
	n = 6;
	while (n < 3 + HTTP_TRAILER_MAX_BYTES - 4)
		in[n++] = 'v';
	MEMCPY_LIT(in + n, "\r\n\r\n");
	CU_ASSERT_EQUAL(chunked_run(in, n + 4, 100, out, &outlen, &used,
	    &err), HTTP_CHUNKED_DONE);
	CU_ASSERT_EQUAL(used, 3 + HTTP_TRAILER_MAX_BYTES);
	memmove(in + 7, in + 6, n + 4 - 6);
	CU_ASSERT_EQUAL(chunked_run(in, n + 5, 100, out, &outlen, &used, &err),
	    HTTP_INVALID);
	CU_ASSERT_STRING_EQUAL(err, "trailer section too long");
	CU_ASSERT_TRUE(http_error_is_limit(err));
}

/* Calls the header allows besides the plain loop. */
static void
test_chunked_api(void)
{
	struct http_chunked	 c;
	const char		*err = NULL;
	size_t			 used = 99;

	/* A zeroed struct is a valid start. */
	memset(&c, 0, sizeof(c));
	http_chunked_data_consumed(&c, 5);	/* no data due: ignored */
	CU_ASSERT_EQUAL(http_chunked_data_left(&c), 0);
	CU_ASSERT_EQUAL(http_chunked_feed(&c, B("3\r\nabc"), &used, &err),
	    HTTP_OK);
	CU_ASSERT_EQUAL(used, 3);
	CU_ASSERT_EQUAL(http_chunked_data_left(&c), 3);
	/* Feeding while data is due consumes nothing. */
	CU_ASSERT_EQUAL(http_chunked_feed(&c, B("abc"), &used, &err), HTTP_OK);
	CU_ASSERT_EQUAL(used, 0);
	http_chunked_data_consumed(&c, 2);
	CU_ASSERT_EQUAL(http_chunked_data_left(&c), 1);
	http_chunked_data_consumed(&c, 1);
	CU_ASSERT_EQUAL(http_chunked_data_left(&c), 0);
	CU_ASSERT_EQUAL(http_chunked_feed(&c, B("\r\n0\r\n\r\nX"), &used,
	    &err), HTTP_CHUNKED_DONE);
	CU_ASSERT_EQUAL(used, 7);
	CU_ASSERT_EQUAL(http_chunked_feed(&c, B("X"), &used, &err),
	    HTTP_CHUNKED_DONE);
	CU_ASSERT_EQUAL(used, 0);

	/* Errors are sticky. */
	http_chunked_init(&c);
	CU_ASSERT_EQUAL(http_chunked_feed(&c, B("12z"), &used, &err),
	    HTTP_INVALID);
	CU_ASSERT_EQUAL(used, 2);
	CU_ASSERT_STRING_EQUAL(err, "bad chunk size");
	err = NULL;
	CU_ASSERT_EQUAL(http_chunked_feed(&c, B("\r\n"), &used, &err),
	    HTTP_INVALID);
	CU_ASSERT_EQUAL(used, 0);
	CU_ASSERT_STRING_EQUAL(err, "bad chunk size");
	CU_ASSERT_EQUAL(http_chunked_data_left(&c), 0);
}

/* Fields that ask for another method (strict_methods). */
static void
test_request_override(void)
{
	static const struct {
		const char	*field;
		bool		 want;
	} v[] = {
		{ "X-HTTP-Method-Override: DELETE", true },
		{ "x-http-method-override: delete", true },
		{ "X-HTTP-Method: PUT", true },
		{ "X-Method-Override: PATCH", true },
		{ "X_HTTP_Method_Override: DELETE", true },
		{ "X-HTTP-Method-Overrides: DELETE", false },
		{ "X-Method: DELETE", false },
		{ "Accept: */*", false },
	};
	struct http_request_head	h;
	const char			*err;
	char				 head[256];
	size_t				 i;
	int				 n;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		n = snprintf(head, sizeof(head), "GET / HTTP/1.1\r\nHost: a\r\n"
		    "%s\r\n\r\n", v[i].field);
		CU_ASSERT_EQUAL_FATAL(http_request_head_parse(head, (size_t)n,
		    NULL, &h, &err), HTTP_OK);
		CU_ASSERT_EQUAL(http_request_has_override(&h), v[i].want);
		http_request_head_free(&h);
	}
}

void
test_http_parse_register(void)
{
	CU_pSuite	s;

	if ((s = CU_add_suite("http_parse", NULL, NULL)) == NULL)
		return;
	CU_add_test(s, "head scan vectors", test_scan);
	CU_add_test(s, "head scan limits", test_scan_limits);
	CU_add_test(s, "request vectors", test_request);
	CU_add_test(s, "request limits", test_request_limits);
	CU_add_test(s, "request trailing bytes", test_request_trailing_bytes);
	CU_add_test(s, "method-override fields", test_request_override);
	CU_add_test(s, "response vectors", test_response);
	CU_add_test(s, "header find", test_header_find);
	CU_add_test(s, "list has token", test_list_has_token);
	CU_add_test(s, "error is limit", test_error_is_limit);
	CU_add_test(s, "chunked vectors", test_chunked);
	CU_add_test(s, "chunked limits", test_chunked_limits);
	CU_add_test(s, "chunked api", test_chunked_api);
}
