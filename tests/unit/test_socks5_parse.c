/*
 * test_socks5_parse.c - vectors for proxy/socks5_parse.c.
 *
 * Every valid message is also fed truncated at every length: each proper
 * prefix must say "need more" (or, where a fixed-position byte is already
 * wrong, the same error as the whole message), never a result.
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "proxy/socks5_parse.h"
#include "tests/unit/unit.h"

#define B(s)		(const uint8_t *)(s), (sizeof(s) - 1)
#define CHECK(ok, i)	vcheck((ok), (i), #ok, __LINE__)

enum msg_kind {
	MSG_GREETING = 0,
	MSG_USERPASS,
	MSG_REQUEST
};

struct s5_vec {
	enum msg_kind	 kind;
	const uint8_t	*in;
	size_t		 len;
	int		 rc;		/* bytes taken, NEED_MORE or INVALID */
	const char	*err;
};

static void	vcheck(bool, size_t, const char *, int);
static int	parse(enum msg_kind, const uint8_t *, size_t, void *,
		    const char **);
static void	test_vectors(void);
static void	test_prefixes(void);
static void	test_greeting_fields(void);
static void	test_userpass_fields(void);
static void	test_request_fields(void);
static void	test_request_atyp(void);
static void	test_maximum_lengths(void);
static void	test_builders(void);

static const struct s5_vec s5_vecs[] = {
	/* Greeting: VER NMETHODS METHODS. */
	{ MSG_GREETING, B("\x05\x01\x00"), .rc = 3 },
	{ MSG_GREETING, B("\x05\x02\x00\x02"), .rc = 4 },
	/* Bytes after the message are the caller's. */
	{ MSG_GREETING, B("\x05\x01\x02\x01\x05"), .rc = 3 },
	{ MSG_GREETING, B("\x05\x03\x00\x01"), .rc = SOCKS5_NEED_MORE },
	{ MSG_GREETING, B(""), .rc = SOCKS5_NEED_MORE },
	{ MSG_GREETING, B("\x04\x01\x00\x50\x7f\x00\x00\x01\x00"),
	    SOCKS5_INVALID, "SOCKS4 not supported" },
	{ MSG_GREETING, B("\x06\x01\x00"), SOCKS5_INVALID,
	    "bad SOCKS version" },
	{ MSG_GREETING, B("GET / HTTP/1.1\r\n"), SOCKS5_INVALID,
	    "bad SOCKS version" },
	{ MSG_GREETING, B("\x16\x03\x01"), SOCKS5_INVALID,
	    "bad SOCKS version" },
	{ MSG_GREETING, B("\x05\x00"), SOCKS5_INVALID,
	    "no authentication methods offered" },
	{ MSG_GREETING, B("\x05\x00\x00"), SOCKS5_INVALID,
	    "no authentication methods offered" },

	/* RFC 1929: VER ULEN UNAME PLEN PASSWD. */
	{ MSG_USERPASS, B("\x01\x04user\x04pass"), .rc = 11 },
	{ MSG_USERPASS, B("\x01\x01u\x01p"), .rc = 5 },
	{ MSG_USERPASS, B("\x01\x01u\x01pXYZ"), .rc = 5 },
	{ MSG_USERPASS, B("\x01\x04user\x05pass"), .rc = SOCKS5_NEED_MORE },
	{ MSG_USERPASS, B("\x05\x04user\x04pass"), SOCKS5_INVALID,
	    "bad username/password version" },
	{ MSG_USERPASS, B("\x00\x04user\x04pass"), SOCKS5_INVALID,
	    "bad username/password version" },
	{ MSG_USERPASS, B("\x01\x00\x04pass"), SOCKS5_INVALID,
	    "empty username" },
	{ MSG_USERPASS, B("\x01\x04user\x00"), SOCKS5_INVALID,
	    "empty password" },
	{ MSG_USERPASS, B("\x01\x04us\0r\x04pass"), SOCKS5_INVALID,
	    "NUL byte in username" },
	{ MSG_USERPASS, B("\x01\x04user\x04pas\0"), SOCKS5_INVALID,
	    "NUL byte in password" },
	{ MSG_USERPASS, B("\x01\x01\0\x01\0"), SOCKS5_INVALID,
	    "NUL byte in username" },

	/* Request: VER CMD RSV ATYP DST.ADDR DST.PORT. */
	{ MSG_REQUEST, B("\x05\x01\x00\x01\xc0\x00\x02\x01\x00\x50"),
	    .rc = 10 },
	{ MSG_REQUEST, B("\x05\x01\x00\x04"
	    "\x20\x01\x0d\xb8\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01"
	    "\x01\xbb"), .rc = 22 },
	{ MSG_REQUEST, B("\x05\x01\x00\x03\x0b" "example.com" "\x01\xbb"),
	    .rc = 18 },
	{ MSG_REQUEST, B("\x05\x01\x00\x03\x01" "a" "\x00\x01" "extra"),
	    .rc = 8 },
	/* Commands are returned as sent. */
	{ MSG_REQUEST, B("\x05\x02\x00\x01\x7f\x00\x00\x01\x00\x00"),
	    .rc = 10 },
	{ MSG_REQUEST, B("\x05\x03\x00\x01\x7f\x00\x00\x01\x00\x00"),
	    .rc = 10 },
	{ MSG_REQUEST, B("\x05\xff\x00\x01\x7f\x00\x00\x01\x00\x00"),
	    .rc = 10 },
	{ MSG_REQUEST, B("\x04\x01\x00\x50\x7f\x00\x00\x01"), SOCKS5_INVALID,
	    "SOCKS4 not supported" },
	{ MSG_REQUEST, B("\x00\x01\x00\x01\x7f\x00\x00\x01\x00\x50"),
	    SOCKS5_INVALID, "bad SOCKS version" },
	{ MSG_REQUEST, B("\x05\x01\x01\x01\x7f\x00\x00\x01\x00\x50"),
	    SOCKS5_INVALID, "reserved byte not zero" },
	{ MSG_REQUEST, B("\x05\x01\x00\x02\x7f\x00\x00\x01\x00\x50"),
	    SOCKS5_INVALID, "address type not supported" },
	{ MSG_REQUEST, B("\x05\x01\x00\x00"), SOCKS5_INVALID,
	    "address type not supported" },
	{ MSG_REQUEST, B("\x05\x01\x00\x05"), SOCKS5_INVALID,
	    "address type not supported" },
	{ MSG_REQUEST, B("\x05\x01\x00\x03\x00\x00\x50"), SOCKS5_INVALID,
	    "empty domain name" },
	/* "a.com\0.evil" would be "a.com" to a C string. */
	{ MSG_REQUEST, B("\x05\x01\x00\x03\x0b" "a.com\0.evil" "\x00\x50"),
	    SOCKS5_INVALID, "NUL byte in domain name" },
	{ MSG_REQUEST, B("\x05\x01\x00\x03\x01\0\x00\x50"), SOCKS5_INVALID,
	    "NUL byte in domain name" },
	{ MSG_REQUEST, B("\x05\x01\x00\x03\x07" "a\r\nb.cd" "\x00\x50"),
	    SOCKS5_INVALID, "control byte in domain name" },
	{ MSG_REQUEST, B("\x05\x01\x00\x03\x03" "ab\x7f" "\x00\x50"),
	    SOCKS5_INVALID, "control byte in domain name" },
	/* One port byte short. */
	{ MSG_REQUEST, B("\x05\x01\x00\x03\x0b" "example.com" "\x01"),
	    .rc = SOCKS5_NEED_MORE },
	{ MSG_REQUEST, B("\x05\x01\x00\x01\x7f\x00\x00\x01\x00"),
	    .rc = SOCKS5_NEED_MORE },
};

static void
vcheck(bool ok, size_t i, const char *cond, int line)
{
	char	msg[256];

	snprintf(msg, sizeof(msg), "vector %zu: %s", i, cond);
	CU_assertImplementation(ok ? CU_TRUE : CU_FALSE, line, msg, __FILE__,
	    "", CU_FALSE);
}

static int
parse(enum msg_kind kind, const uint8_t *in, size_t len, void *out,
    const char **err)
{
	switch (kind) {
	case MSG_GREETING:
		return socks5_parse_greeting(in, len, out, err);
	case MSG_USERPASS:
		return socks5_parse_userpass(in, len, out, err);
	case MSG_REQUEST:
		return socks5_parse_request(in, len, out, err);
	}
	return SOCKS5_INVALID;
}

static void
test_vectors(void)
{
	union {
		struct socks5_greeting	g;
		struct socks5_userpass	u;
		struct socks5_request	r;
	}			 out;
	const struct s5_vec	*v;
	const char		*err;
	size_t			 i;
	int			 rc;

	for (i = 0; i < sizeof(s5_vecs) / sizeof(s5_vecs[0]); i++) {
		v = &s5_vecs[i];
		err = NULL;
		rc = parse(v->kind, v->in, v->len, &out, &err);
		CHECK(rc == v->rc, i);
		if (v->rc == SOCKS5_INVALID)
			CHECK(err != NULL && strcmp(err, v->err) == 0, i);
	}
}

/*
 * Every prefix of every vector: NEED_MORE until the verdict of the whole
 * input is reached, then that verdict for every longer prefix.
 */
static void
test_prefixes(void)
{
	union {
		struct socks5_greeting	g;
		struct socks5_userpass	u;
		struct socks5_request	r;
	}			 out;
	const struct s5_vec	*v;
	const char		*err, *first_err;
	size_t			 i, k;
	int			 rc, first;

	for (i = 0; i < sizeof(s5_vecs) / sizeof(s5_vecs[0]); i++) {
		v = &s5_vecs[i];
		first = SOCKS5_NEED_MORE;
		first_err = NULL;
		for (k = 0; k <= v->len; k++) {
			err = NULL;
			rc = parse(v->kind, v->in, k, &out, &err);
			if (first == SOCKS5_NEED_MORE) {
				first = rc;
				first_err = err;
				/* A length is reached only at that length. */
				if (rc > 0)
					CHECK((size_t)rc == k, i);
				continue;
			}
			CHECK(rc == first && err == first_err, i);
		}
		CHECK(first == v->rc, i);
	}
}

static void
test_greeting_fields(void)
{
	struct socks5_greeting	 g;
	const char		*err = NULL;

	memset(&g, 0xaa, sizeof(g));
	CU_ASSERT_EQUAL(socks5_parse_greeting(B("\x05\x03\x00\x02\x80"), &g,
	    &err), 5);
	CU_ASSERT_EQUAL(g.nmethods, 3);
	CU_ASSERT_EQUAL(g.methods[0], SOCKS5_METHOD_NONE);
	CU_ASSERT_EQUAL(g.methods[1], SOCKS5_METHOD_USERPASS);
	CU_ASSERT_EQUAL(g.methods[2], 0x80);
}

static void
test_userpass_fields(void)
{
	struct socks5_userpass	 u;
	const char		*err = NULL;

	memset(&u, 0xaa, sizeof(u));
	CU_ASSERT_EQUAL(socks5_parse_userpass(B("\x01\x05" "alice" "\x03"
	    "p:w"), &u, &err), 11);
	CU_ASSERT_EQUAL(u.ulen, 5);
	CU_ASSERT_STRING_EQUAL(u.user, "alice");
	CU_ASSERT_EQUAL(u.plen, 3);
	CU_ASSERT_STRING_EQUAL(u.pass, "p:w");
}

static void
test_request_fields(void)
{
	static const uint8_t	 v6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
	    0, 0, 0, 0, 0, 0, 0, 1 };
	struct socks5_request	 r;
	const char		*err = NULL;

	memset(&r, 0xaa, sizeof(r));
	CU_ASSERT_EQUAL(socks5_parse_request(B("\x05\x01\x00\x01\xc0\x00\x02"
	    "\x01\x00\x50"), &r, &err), 10);
	CU_ASSERT_EQUAL(r.cmd, SOCKS5_CMD_CONNECT);
	CU_ASSERT_EQUAL(r.atyp, SOCKS5_ATYP_IPV4);
	CU_ASSERT_EQUAL(MEMCMP_LIT(r.addr, "\xc0\x00\x02\x01"), 0);
	CU_ASSERT_EQUAL(r.port, 80);

	CU_ASSERT_EQUAL(socks5_parse_request(B("\x05\x01\x00\x04"
	    "\x20\x01\x0d\xb8\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01"
	    "\xff\xff"), &r, &err), 22);
	CU_ASSERT_EQUAL(r.atyp, SOCKS5_ATYP_IPV6);
	CU_ASSERT_EQUAL(memcmp(r.addr, v6, 16), 0);
	CU_ASSERT_EQUAL(r.port, 65535);

	memset(&r, 0xaa, sizeof(r));
	CU_ASSERT_EQUAL(socks5_parse_request(B("\x05\x02\x00\x03\x0b"
	    "Example.COM" "\x01\xbb"), &r, &err), 18);
	CU_ASSERT_EQUAL(r.cmd, SOCKS5_CMD_BIND);
	CU_ASSERT_EQUAL(r.atyp, SOCKS5_ATYP_DOMAIN);
	CU_ASSERT_STRING_EQUAL(r.domain, "Example.COM");
	CU_ASSERT_EQUAL(r.port, 443);

	/* Port 0 and non-ASCII names are the policy's business. */
	CU_ASSERT_EQUAL(socks5_parse_request(B("\x05\x01\x00\x03\x04"
	    "\xc3\xa9.x" "\x00\x00"), &r, &err), 11);
	CU_ASSERT_STRING_EQUAL(r.domain, "\xc3\xa9.x");
	CU_ASSERT_EQUAL(r.port, 0);
}

/* The caller tells "address type not supported" by pointer. */
static void
test_request_atyp(void)
{
	struct socks5_request	 r;
	const char		*err = NULL;

	memset(&r, 0, sizeof(r));
	CU_ASSERT_EQUAL(socks5_parse_request(B("\x05\x01\x00\x02"), &r, &err),
	    SOCKS5_INVALID);
	CU_ASSERT_PTR_EQUAL(err, socks5_err_atyp);
	CU_ASSERT_EQUAL(r.atyp, 0x02);
	CU_ASSERT_EQUAL(r.cmd, SOCKS5_CMD_CONNECT);
	CU_ASSERT_EQUAL(socks5_parse_request(B("\x05\x01\x01\x02"), &r, &err),
	    SOCKS5_INVALID);
	CU_ASSERT_PTR_NOT_EQUAL(err, socks5_err_atyp);
}

/*
 * The reply for an invalid request: a target that cannot be one is a
 * refusal (0x02), an unknown address type 0x08, a broken message 0x01.
 */
static void
test_request_reply(void)
{
	static const struct {
		const uint8_t	*in;
		size_t		 len;
		uint8_t		 rep;
	} v[] = {
		{ B("\x05\x01\x00\x03\x00\x00\x50"), SOCKS5_REP_NOT_ALLOWED },
		{ B("\x05\x01\x00\x03\x03" "a\0b" "\x00\x50"),
		    SOCKS5_REP_NOT_ALLOWED },
		{ B("\x05\x01\x00\x03\x03" "a\nb" "\x00\x50"),
		    SOCKS5_REP_NOT_ALLOWED },
		{ B("\x05\x01\x00\x02"), SOCKS5_REP_ATYP_UNSUPPORTED },
		{ B("\x05\x01\x00\x00"), SOCKS5_REP_ATYP_UNSUPPORTED },
		{ B("\x05\x01\x01\x01"), SOCKS5_REP_FAILURE },
		{ B("\x04\x01\x00\x50"), SOCKS5_REP_FAILURE },
		{ B("\x06"), SOCKS5_REP_FAILURE },
	};
	struct socks5_request	 r;
	const char		*err;
	size_t			 i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		err = NULL;
		memset(&r, 0, sizeof(r));
		CHECK(socks5_parse_request(v[i].in, v[i].len,
		    &r, &err) == SOCKS5_INVALID, i);
		CHECK(socks5_request_reply(err) == v[i].rep, i);
		CHECK(socks5_request_bad_target(err) ==
		    (v[i].rep == SOCKS5_REP_NOT_ALLOWED), i);
	}
}

static void
test_maximum_lengths(void)
{
	uint8_t			 buf[SOCKS5_MSG_MAX + 1];
	struct socks5_greeting	 g;
	struct socks5_userpass	 u;
	struct socks5_request	 r;
	const char		*err = NULL;
	size_t			 k;

	/* Greeting with all 255 methods. */
	buf[0] = 5;
	buf[1] = 255;
	for (k = 0; k < 255; k++)
		buf[2 + k] = (uint8_t)k;
	CU_ASSERT_EQUAL(socks5_parse_greeting(buf, 257, &g, &err), 257);
	CU_ASSERT_EQUAL(g.methods[254], 254);
	CU_ASSERT_EQUAL(socks5_parse_greeting(buf, 256, &g, &err),
	    SOCKS5_NEED_MORE);

	/* User and password of 255 bytes: the longest message. */
	buf[0] = 1;
	buf[1] = 255;
	memset(buf + 2, 'u', 255);
	buf[257] = 255;
	memset(buf + 258, 'p', 255);
	CU_ASSERT_EQUAL(socks5_parse_userpass(buf, SOCKS5_MSG_MAX, &u, &err),
	    SOCKS5_MSG_MAX);
	CU_ASSERT_EQUAL(strlen(u.user), 255);
	CU_ASSERT_EQUAL(strlen(u.pass), 255);
	CU_ASSERT_EQUAL(socks5_parse_userpass(buf, SOCKS5_MSG_MAX - 1, &u,
	    &err), SOCKS5_NEED_MORE);

	/* A 255-byte domain. */
	MEMCPY_LIT(buf, "\x05\x01\x00\x03\xff");
	memset(buf + 5, 'd', 255);
	buf[260] = 0x1f;
	buf[261] = 0x90;
	CU_ASSERT_EQUAL(socks5_parse_request(buf, 262, &r, &err), 262);
	CU_ASSERT_EQUAL(strlen(r.domain), 255);
	CU_ASSERT_EQUAL(r.port, 8080);
	CU_ASSERT_EQUAL(socks5_parse_request(buf, 261, &r, &err),
	    SOCKS5_NEED_MORE);
	buf[5 + 254] = '\0';
	CU_ASSERT_EQUAL(socks5_parse_request(buf, 262, &r, &err),
	    SOCKS5_INVALID);
	CU_ASSERT_STRING_EQUAL(err, "NUL byte in domain name");
}

static void
test_builders(void)
{
	uint8_t	out[10];

	memset(out, 0xaa, sizeof(out));
	CU_ASSERT_EQUAL(socks5_build_method(out, SOCKS5_METHOD_USERPASS), 2);
	CU_ASSERT_EQUAL(MEMCMP_LIT(out, "\x05\x02"), 0);
	CU_ASSERT_EQUAL(socks5_build_method(out, SOCKS5_METHOD_REJECT), 2);
	CU_ASSERT_EQUAL(MEMCMP_LIT(out, "\x05\xff"), 0);
	CU_ASSERT_EQUAL(socks5_build_auth_reply(out, 0), 2);
	CU_ASSERT_EQUAL(MEMCMP_LIT(out, "\x01\x00"), 0);
	CU_ASSERT_EQUAL(socks5_build_auth_reply(out, 1), 2);
	CU_ASSERT_EQUAL(MEMCMP_LIT(out, "\x01\x01"), 0);
	memset(out, 0xaa, sizeof(out));
	CU_ASSERT_EQUAL(socks5_build_reply(out, SOCKS5_REP_NOT_ALLOWED), 10);
	CU_ASSERT_EQUAL(MEMCMP_LIT(out,
	    "\x05\x02\x00\x01\x00\x00\x00\x00\x00\x00"), 0);
	CU_ASSERT_EQUAL(socks5_build_reply(out, SOCKS5_REP_OK), 10);
	CU_ASSERT_EQUAL(MEMCMP_LIT(out,
	    "\x05\x00\x00\x01\x00\x00\x00\x00\x00\x00"), 0);
}

void
test_socks5_parse_register(void)
{
	CU_pSuite	s;

	if ((s = CU_add_suite("socks5_parse", NULL, NULL)) == NULL)
		return;
	CU_add_test(s, "vectors", test_vectors);
	CU_add_test(s, "every prefix", test_prefixes);
	CU_add_test(s, "greeting fields", test_greeting_fields);
	CU_add_test(s, "userpass fields", test_userpass_fields);
	CU_add_test(s, "request fields", test_request_fields);
	CU_add_test(s, "request atyp", test_request_atyp);
	CU_add_test(s, "request reply", test_request_reply);
	CU_add_test(s, "maximum lengths", test_maximum_lengths);
	CU_add_test(s, "reply builders", test_builders);
}
