/*
 * test_proto_peek.c - a tunnel's first bytes: classification, and the
 * judgement of "protocols" (server-first ssh, fronting-proof TLS).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "proxy/proto_peek.h"
#include "tests/unit/unit.h"

/* A minimal TLS 1.2 ClientHello, with a server name if sni is not NULL. */
static size_t
hello(uint8_t *out, const char *sni)
{
	uint8_t	body[512];
	size_t	n = 0, ext = 0, sl = sni ? strlen(sni) : 0, hl;

	body[n++] = 0x03;
	body[n++] = 0x03;
	memset(body + n, 0x42, 32);
	n += 32;
	body[n++] = 0;				/* session id */
	body[n++] = 0; body[n++] = 2;		/* cipher suites */
	body[n++] = 0x13; body[n++] = 0x01;
	body[n++] = 1; body[n++] = 0;		/* compression: null */
	if (sni != NULL)
		ext = 4 + 2 + 1 + 2 + sl;
	body[n++] = (uint8_t)(ext >> 8);
	body[n++] = (uint8_t)ext;
	if (sni != NULL) {
		body[n++] = 0; body[n++] = 0;	/* server_name */
		body[n++] = (uint8_t)((ext - 4) >> 8);
		body[n++] = (uint8_t)(ext - 4);
		body[n++] = (uint8_t)((ext - 6) >> 8);
		body[n++] = (uint8_t)(ext - 6);
		body[n++] = 0;			/* host_name */
		body[n++] = (uint8_t)(sl >> 8);
		body[n++] = (uint8_t)sl;
		memcpy(body + n, sni, sl);
		n += sl;
	}
	hl = n + 4;
	out[0] = 0x16; out[1] = 0x03; out[2] = 0x01;
	out[3] = (uint8_t)(hl >> 8); out[4] = (uint8_t)hl;
	out[5] = 0x01;
	out[6] = 0; out[7] = (uint8_t)(n >> 8); out[8] = (uint8_t)n;
	memcpy(out + 9, body, n);
	return n + 9;
}

#define S(s)	(const uint8_t *)(s), (sizeof(s) - 1)

static void
test_classify(void)
{
	struct peek_result	r;
	uint8_t			buf[600];
	size_t			len, k;

	CU_ASSERT_EQUAL(peek_classify(NULL, 0, false, &r), PEEK_P_NONE);
	len = hello(buf, "api.example.com");
	CU_ASSERT_EQUAL(peek_classify(buf, len, false, &r), PEEK_P_TLS);
	CU_ASSERT_TRUE(r.hello.has_sni);
	CU_ASSERT_STRING_EQUAL(r.hello.sni, "api.example.com");
	/* Split anywhere: too little to tell, never another verdict. */
	for (k = 1; k < len; k++)
		CU_ASSERT_EQUAL(peek_classify(buf, k, false, &r),
		    PEEK_P_PARTIAL);
	len = hello(buf, NULL);
	CU_ASSERT_EQUAL(peek_classify(buf, len, false, &r), PEEK_P_TLS);
	CU_ASSERT_FALSE(r.hello.has_sni);
	/* A handshake record that is no ClientHello. */
	CU_ASSERT_EQUAL(peek_classify(S("\x16\x03\x01\x00\x04\x02\x00\x00\x00"),
	    false, &r), PEEK_P_BAD_TLS);
	CU_ASSERT_PTR_NOT_NULL(r.err);

	CU_ASSERT_EQUAL(peek_classify(S("GET / HTTP/1.1\r\n"), false, &r),
	    PEEK_P_HTTP);
	CU_ASSERT_EQUAL(peek_classify(S("PROPFIND "), false, &r), PEEK_P_HTTP);
	CU_ASSERT_EQUAL(peek_classify(S("GE"), false, &r), PEEK_P_PARTIAL);
	CU_ASSERT_EQUAL(peek_classify(S(" GET"), false, &r), PEEK_P_OTHER);
	CU_ASSERT_EQUAL(peek_classify(S("get / HTTP/1.1"), false, &r),
	    PEEK_P_OTHER);
	CU_ASSERT_EQUAL(peek_classify(S("ABCDEFGHIJKLMNOPQRSTUVWXYZ"), false,
	    &r), PEEK_P_OTHER);
	CU_ASSERT_EQUAL(peek_classify(S("SSH-2.0-OpenSSH_9.2\r\n"), false, &r),
	    PEEK_P_SSH);
	CU_ASSERT_EQUAL(peek_classify(S("SS"), false, &r), PEEK_P_PARTIAL);
	CU_ASSERT_EQUAL(peek_classify(S("\x00\x01\x02"), false, &r),
	    PEEK_P_OTHER);

	/* A server is SSH or something else; never TLS or HTTP. */
	CU_ASSERT_EQUAL(peek_classify(S("SSH-2.0-x\r\n"), true, &r),
	    PEEK_P_SSH);
	CU_ASSERT_EQUAL(peek_classify(S("SSH"), true, &r), PEEK_P_PARTIAL);
	CU_ASSERT_EQUAL(peek_classify(S("220 smtp ESMTP\r\n"), true, &r),
	    PEEK_P_OTHER);
	CU_ASSERT_EQUAL(peek_classify(S("GET / HTTP/1.1"), true, &r),
	    PEEK_P_OTHER);
}

static void
test_judge(void)
{
	static const struct {
		unsigned		allowed;
		enum peek_proto		cli, srv;
		enum peek_verdict	v;
	} v[] = {
		/* Any protocol (the default): no waiting for a server
		 * once the client spoke, server-first passes. */
		{ PEEK_ALLOW_ANY, PEEK_P_NONE, PEEK_P_NONE, PEEK_WAIT },
		{ PEEK_ALLOW_ANY, PEEK_P_PARTIAL, PEEK_P_NONE, PEEK_WAIT },
		{ PEEK_ALLOW_ANY, PEEK_P_TLS, PEEK_P_NONE, PEEK_PASS },
		{ PEEK_ALLOW_ANY, PEEK_P_HTTP, PEEK_P_NONE, PEEK_PASS },
		{ PEEK_ALLOW_ANY, PEEK_P_SSH, PEEK_P_NONE, PEEK_PASS },
		{ PEEK_ALLOW_ANY, PEEK_P_OTHER, PEEK_P_NONE, PEEK_PASS },
		{ PEEK_ALLOW_ANY, PEEK_P_NONE, PEEK_P_OTHER, PEEK_PASS },
		{ PEEK_ALLOW_ANY, PEEK_P_NONE, PEEK_P_SSH, PEEK_PASS },
		{ PEEK_ALLOW_ANY, PEEK_P_BAD_TLS, PEEK_P_NONE, PEEK_REFUSE },
		/* tls only */
		{ PEEK_ALLOW_TLS, PEEK_P_TLS, PEEK_P_NONE, PEEK_PASS },
		{ PEEK_ALLOW_TLS, PEEK_P_HTTP, PEEK_P_NONE, PEEK_REFUSE },
		{ PEEK_ALLOW_TLS, PEEK_P_SSH, PEEK_P_NONE, PEEK_REFUSE },
		{ PEEK_ALLOW_TLS, PEEK_P_OTHER, PEEK_P_NONE, PEEK_REFUSE },
		{ PEEK_ALLOW_TLS, PEEK_P_NONE, PEEK_P_OTHER, PEEK_REFUSE },
		{ PEEK_ALLOW_TLS, PEEK_P_NONE, PEEK_P_SSH, PEEK_REFUSE },
		/* http only */
		{ PEEK_ALLOW_HTTP, PEEK_P_HTTP, PEEK_P_NONE, PEEK_PASS },
		{ PEEK_ALLOW_HTTP, PEEK_P_TLS, PEEK_P_NONE, PEEK_REFUSE },
		/* ssh: confirmed by the server's banner */
		{ PEEK_ALLOW_SSH, PEEK_P_SSH, PEEK_P_NONE, PEEK_WAIT },
		{ PEEK_ALLOW_SSH, PEEK_P_SSH, PEEK_P_SSH, PEEK_PASS },
		{ PEEK_ALLOW_SSH, PEEK_P_NONE, PEEK_P_SSH, PEEK_PASS },
		{ PEEK_ALLOW_SSH, PEEK_P_PARTIAL, PEEK_P_SSH, PEEK_PASS },
		{ PEEK_ALLOW_SSH, PEEK_P_SSH, PEEK_P_OTHER, PEEK_REFUSE },
		{ PEEK_ALLOW_SSH, PEEK_P_NONE, PEEK_P_OTHER, PEEK_REFUSE },
		{ PEEK_ALLOW_SSH, PEEK_P_HTTP, PEEK_P_NONE, PEEK_REFUSE },
		{ PEEK_ALLOW_SSH, PEEK_P_TLS, PEEK_P_NONE, PEEK_REFUSE },
		{ PEEK_ALLOW_SSH, PEEK_P_OTHER, PEEK_P_NONE, PEEK_REFUSE },
		/* tls and ssh (ssh over 443 beside HTTPS) */
		{ PEEK_ALLOW_TLS | PEEK_ALLOW_SSH, PEEK_P_TLS, PEEK_P_NONE,
		    PEEK_PASS },
		{ PEEK_ALLOW_TLS | PEEK_ALLOW_SSH, PEEK_P_SSH, PEEK_P_SSH,
		    PEEK_PASS },
		{ PEEK_ALLOW_TLS | PEEK_ALLOW_SSH, PEEK_P_HTTP, PEEK_P_NONE,
		    PEEK_REFUSE },
		{ PEEK_ALLOW_TLS | PEEK_ALLOW_SSH, PEEK_P_BAD_TLS, PEEK_P_SSH,
		    PEEK_REFUSE },
	};
	enum peek_proto	seen;
	size_t		i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		if (peek_judge(v[i].allowed, v[i].cli, v[i].srv, &seen) !=
		    v[i].v)
			fprintf(stderr, "\n  judge vector %zu\n", i);
		CU_ASSERT_EQUAL(peek_judge(v[i].allowed, v[i].cli, v[i].srv,
		    &seen), v[i].v);
	}
	CU_ASSERT_EQUAL(peek_judge(PEEK_ALLOW_SSH, PEEK_P_HTTP, PEEK_P_NONE,
	    &seen), PEEK_REFUSE);
	CU_ASSERT_STRING_EQUAL(peek_proto_name(seen), "http");
	CU_ASSERT_EQUAL(peek_judge(PEEK_ALLOW_SSH, PEEK_P_NONE, PEEK_P_OTHER,
	    &seen), PEEK_REFUSE);
	CU_ASSERT_STRING_EQUAL(peek_proto_name(seen), "an unknown protocol");
}

void
test_proto_peek_register(void)
{
	CU_pSuite	s;

	if ((s = CU_add_suite("proto_peek", NULL, NULL)) == NULL)
		return;
	CU_add_test(s, "classify", test_classify);
	CU_add_test(s, "judge", test_judge);
}
