/*
 * test_addr.c - the host normaliser (DESIGN.md invariant 4), host:port
 * parsing, sockaddr conversion, and wildcard boundaries.
 *
 * Every spelling of an address a client may use must reach the policy as
 * one canonical form; every malformed host must be refused with its
 * message.  Each vector says why it is there.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "policy/policy.h"
#include "policyio/policyio.h"
#include "tests/unit/unit.h"

/* An accepted spelling and its canonical form. */
struct addr_ok {
	const char		*in;
	size_t			 len;	/* 0: strlen(in) */
	enum policy_host_kind	 kind;
	int			 family;	/* for POLICY_HOST_ADDR */
	const char		*canon;		/* name, or inet_ntop text */
};

#define N	POLICY_HOST_NAME
#define A	POLICY_HOST_ADDR
#define V4	AF_INET
#define V6	AF_INET6

static const struct addr_ok	addr_ok_vectors[] = {
	/* IPv4, every WHATWG spelling of 127.0.0.1 */
	{ "127.0.0.1", 0, A, V4, "127.0.0.1" },
	{ "2130706433", 0, A, V4, "127.0.0.1" },	/* one decimal number */
	{ "0177.0.0.1", 0, A, V4, "127.0.0.1" },	/* octal part */
	{ "0x7f.0.0.1", 0, A, V4, "127.0.0.1" },	/* hex part */
	{ "0X7F.0.0.1", 0, A, V4, "127.0.0.1" },	/* upper-case hex */
	{ "0x7f000001", 0, A, V4, "127.0.0.1" },	/* one hex number */
	{ "017700000001", 0, A, V4, "127.0.0.1" },	/* one octal number */
	{ "127.1", 0, A, V4, "127.0.0.1" },		/* last part fills 3 bytes */
	{ "127.0.1", 0, A, V4, "127.0.0.1" },		/* last part fills 2 bytes */
	{ "0x7f.1", 0, A, V4, "127.0.0.1" },		/* mixed radix, short */
	{ "127.0.0.1.", 0, A, V4, "127.0.0.1" },	/* trailing dot */
	{ "%31%32%37.0.0.1", 0, A, V4, "127.0.0.1" },	/* percent-encoded digits */
	{ "\xef\xbc\x91\xef\xbc\x92\xef\xbc\x97.0.0.1", 0, A, V4,
	    "127.0.0.1" },			/* fullwidth digits, via IDNA */
	{ "127\xe3\x80\x82" "0\xe3\x80\x82" "0\xe3\x80\x82" "1", 0, A, V4,
	    "127.0.0.1" },			/* ideographic full stops */
	/* IPv4, the metadata address in disguise */
	{ "0xa9fea9fe", 0, A, V4, "169.254.169.254" },
	{ "2852039166", 0, A, V4, "169.254.169.254" },
	{ "0251.0376.0251.0376", 0, A, V4, "169.254.169.254" },
	{ "169.254.43518", 0, A, V4, "169.254.169.254" },
	{ "0xA9.0xFE.0xA9.0xFE", 0, A, V4, "169.254.169.254" },
	/* IPv4 edges */
	{ "0", 0, A, V4, "0.0.0.0" },
	{ "0x", 0, A, V4, "0.0.0.0" },		/* WHATWG: "0x" is zero */
	{ "4294967295", 0, A, V4, "255.255.255.255" },
	{ "1.2.3.0x", 0, A, V4, "1.2.3.0" },
	{ "8.8.8.8", 0, A, V4, "8.8.8.8" },
	/* IPv6 */
	{ "::1", 0, A, V6, "::1" },
	{ "[::1]", 0, A, V6, "::1" },			/* bracketed */
	{ "[0:0:0:0:0:0:0:1]", 0, A, V6, "::1" },	/* long form */
	{ "2001:DB8::1", 0, A, V6, "2001:db8::1" },	/* upper case */
	{ "fe80::1%eth0", 0, A, V6, "fe80::1" },	/* zone dropped */
	{ "[fe80::1%25eth0]", 0, A, V6, "fe80::1" },	/* RFC 6874 zone */
	{ "fe80::1%25", 0, A, V6, "fe80::1" },		/* zone named "25" */
	{ "fd00:ec2::254", 0, A, V6, "fd00:ec2::254" },
	{ "::ffff:127.0.0.1", 0, A, V4, "127.0.0.1" },	/* mapped -> IPv4 */
	{ "[::ffff:7f00:1]", 0, A, V4, "127.0.0.1" },	/* mapped, hex */
	{ "::FFFF:169.254.169.254", 0, A, V4, "169.254.169.254" },
	{ "64:ff9b::a9fe:a9fe", 0, A, V6, "64:ff9b::a9fe:a9fe" }, /* NAT64 stays */
	{ "::127.0.0.1", 0, A, V6, "::127.0.0.1" },	/* compatible stays */
	{ "%3A%3A1", 0, A, V6, "::1" },			/* percent-encoded colons */
	/* names */
	{ "example.com", 0, N, 0, "example.com" },
	{ "Example.COM", 0, N, 0, "example.com" },	/* mixed case */
	{ "example.com.", 0, N, 0, "example.com" },	/* one trailing dot */
	{ "%65xample.com", 0, N, 0, "example.com" },	/* percent-encoded */
	{ "%45XAMPLE.com", 0, N, 0, "example.com" },	/* ... then lower-cased */
	{ "LOCALHOST.", 0, N, 0, "localhost" },
	{ "_dmarc.example.com", 0, N, 0, "_dmarc.example.com" },
	{ "a-b.example", 0, N, 0, "a-b.example" },
	{ "b\xc3\xbc" "cher.de", 0, N, 0, "xn--bcher-kva.de" },	/* IDNA */
	{ "B\xc3\x9c" "CHER.de", 0, N, 0, "xn--bcher-kva.de" },	/* IDNA, upper */
	{ "xn--bcher-kva.de", 0, N, 0, "xn--bcher-kva.de" },	/* A-label kept */
	{ "XN--BCHER-KVA.DE", 0, N, 0, "xn--bcher-kva.de" },
	{ "fa\xc3\x9f.de", 0, N, 0, "xn--fa-hia.de" },	/* non-transitional */
	{ "\xef\xbc\xa1\xef\xbc\xa2\xef\xbc\xa3.com", 0, N, 0, "abc.com" },
	{ "b%C3%BCcher.de", 0, N, 0, "xn--bcher-kva.de" }, /* encoded UTF-8 */
	{ "example.1a", 0, N, 0, "example.1a" },	/* not a number: a name */
	{ "0x7g.com", 0, N, 0, "0x7g.com" },		/* not hex: a name */
	{ "123abc", 0, N, 0, "123abc" },
	/* 63-byte label and 253-byte name are the limits */
	{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com",
	    0, N, 0,
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com" },
};

/* A refused host and the message that says why. */
struct addr_bad {
	const char	*in;
	size_t		 len;	/* 0: strlen(in) */
	const char	*err;
};

static const struct addr_bad	addr_bad_vectors[] = {
	{ "", 0, "empty host" },
	{ ".", 0, "empty host" },			/* only the final dot */
	{ "a..b", 0, "empty label in host name" },
	{ ".a", 0, "empty label in host name" },
	{ "a..", 0, "empty label in host name" },	/* one dot dropped, not two */
	{ " example.com", 0, "leading or trailing whitespace in host" },
	{ "example.com ", 0, "leading or trailing whitespace in host" },
	{ "example.com\n", 0, "leading or trailing whitespace in host" },
	{ "exa mple.com", 0, "whitespace in host" },
	{ "ex%20ample.com", 0, "whitespace in host" },	/* decoded space */
	{ "a\x01" "b", 0, "control byte in host" },
	{ "a\x7f" "b", 0, "control byte in host" },
	{ "a\0b", 3, "control byte in host" },		/* raw NUL */
	{ "a%00b", 0, "control byte in host" },		/* encoded NUL */
	{ "user@example.com", 0, "\"@\" in host (user info is not allowed)" },
	{ "example.com/x", 0, "\"/\" in host" },
	{ "a\xef\xbc\x8f" "b.com", 0, "\"/\" in host" },	/* fullwidth solidus */
	{ "example.com:443", 0,
	    "\":\" in host (a port is not part of a host)" },
	{ "a*b.com", 0, "\"*\" in host" },
	{ "a!b.com", 0, "invalid character in host name (letters, digits, "
	    "\"-\", \"_\" and \".\" only)" },
	{ "a%zzb", 0, "bad percent-escape in host" },
	{ "a%4", 0, "bad percent-escape in host" },
	{ "a%", 0, "bad percent-escape in host" },
	{ "1.2.3.4.5", 0, "IPv4 address with more than 4 parts" },
	{ "256.1.1.1", 0, "IPv4 address part greater than 255" },
	{ "1.256.1.1", 0, "IPv4 address part greater than 255" },
	{ "1.2.3.256", 0, "IPv4 address out of range" },
	{ "1.2.65536", 0, "IPv4 address out of range" },
	{ "1.16777216", 0, "IPv4 address out of range" },
	{ "4294967296", 0, "IPv4 address out of range" },	/* 2^32 */
	{ "0x100000000", 0, "IPv4 address out of range" },
	{ "99999999999999999999999999", 0, "IPv4 address out of range" },
	{ "example.123", 0,
	    "not a valid IPv4 address (a name cannot end in a number)" },
	{ "09.1.1.1", 0,
	    "not a valid IPv4 address (a name cannot end in a number)" },
	{ "1.2.3.09", 0,
	    "not a valid IPv4 address (a name cannot end in a number)" },
	{ "foo.0x", 0,
	    "not a valid IPv4 address (a name cannot end in a number)" },
	{ "[::1", 0, "\"[\" without \"]\"" },
	{ "[::1]:80", 0, "text after \"]\" (a port is not part of a host)" },
	{ "[1.2.3.4]", 0, "not a valid IPv6 address" },
	{ "[example.com]", 0, "not a valid IPv6 address" },
	{ "::g", 0, "not a valid IPv6 address" },
	{ "1::2::3", 0, "not a valid IPv6 address" },
	{ "fe80::1%", 0, "bad IPv6 zone ID" },
	{ "fe80::1%et/h", 0, "bad IPv6 zone ID" },
	{ "xn--zz.de", 0, "bad punycode in an xn-- label" },
	{ "\xff.com", 0, "host is not valid UTF-8" },
	{ "a\xe2\x80\x90" "b.com", 0,
	    "not a valid internationalised name (IDNA)" },	/* U+2010 */
	{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com",
	    0, "label longer than 63 bytes" },
};

static void	test_addr_normalise_ok(void);
static void	test_addr_normalise_bad(void);
static void	test_addr_name_limits(void);
static void	test_addr_idempotent(void);
static void	test_addr_hostport(void);
static void	test_addr_sockaddr(void);
static void	test_addr_wildcards(void);
static void	test_addr_idn(void);

static void
test_addr_normalise_ok(void)
{
	const struct addr_ok	*v;
	struct policy_host	 h;
	const char		*err;
	char			 text[64];
	size_t			 i;
	int			 rc;

	for (i = 0; i < sizeof(addr_ok_vectors) / sizeof(*v); i++) {
		v = &addr_ok_vectors[i];
		err = NULL;
		rc = policy_host_normalise(v->in, v->len ? v->len :
		    strlen(v->in), &h, &err);
		if (rc != 0 || h.kind != v->kind)
			fprintf(stderr, "\n  vector %zu %s: rc %d kind %d "
			    "err %s\n", i, v->in, rc, h.kind, err);
		CU_ASSERT_EQUAL_FATAL(rc, 0);
		CU_ASSERT_EQUAL(h.kind, v->kind);
		if (v->kind == POLICY_HOST_NAME) {
			CU_ASSERT_STRING_EQUAL(h.name, v->canon);
			continue;
		}
		CU_ASSERT_EQUAL(h.addr.family, v->family);
		policy_addr_format(&h.addr, text, sizeof(text));
		if (strcmp(text, v->canon) != 0)
			fprintf(stderr, "\n  vector %zu %s: got %s\n", i, v->in,
			    text);
		CU_ASSERT_STRING_EQUAL(text, v->canon);
		/* An address's text form is in name[] too. */
		CU_ASSERT_STRING_EQUAL(h.name, v->canon);
	}
}

static void
test_addr_normalise_bad(void)
{
	const struct addr_bad	*v;
	struct policy_host	 h;
	const char		*err;
	size_t			 i;

	for (i = 0; i < sizeof(addr_bad_vectors) / sizeof(*v); i++) {
		v = &addr_bad_vectors[i];
		err = NULL;
		CU_ASSERT_EQUAL(policy_host_normalise(v->in, v->len ? v->len :
		    strlen(v->in), &h, &err), -1);
		CU_ASSERT_PTR_NOT_NULL_FATAL(err);
		if (strcmp(err, v->err) != 0)
			fprintf(stderr, "\n  vector %zu: got \"%s\"\n", i, err);
		CU_ASSERT_STRING_EQUAL(err, v->err);
	}
	/* err may be NULL; NULL input is an empty host. */
	CU_ASSERT_EQUAL(policy_host_normalise("a..b", 4, &h, NULL), -1);
	CU_ASSERT_EQUAL(policy_host_normalise(NULL, 0, &h, &err), -1);
	CU_ASSERT_STRING_EQUAL(err, "empty host");
	/* Only len bytes are read: "a.b" of "a.bc" is fine. */
	CU_ASSERT_EQUAL(policy_host_normalise("a.bc", 3, &h, &err), 0);
	CU_ASSERT_STRING_EQUAL(h.name, "a.b");
}

/* Names of exactly 253 bytes pass, 254 fail, with and without a dot. */
static void
test_addr_name_limits(void)
{
	struct policy_host	 h;
	const char		*err = NULL;
	char			 name[300], *big;

	/* 4 labels of 63 + 3 dots = 255; trim to 253 = 63*3 + 61 + 3 */
	memset(name, 'a', sizeof(name));
	name[63] = name[127] = name[191] = '.';
	name[253] = '\0';
	CU_ASSERT_EQUAL(policy_host_normalise(name, 253, &h, &err), 0);
	CU_ASSERT_EQUAL(strlen(h.name), 253);
	/* The trailing dot does not count. */
	name[253] = '.';
	CU_ASSERT_EQUAL(policy_host_normalise(name, 254, &h, &err), 0);
	CU_ASSERT_EQUAL(strlen(h.name), 253);
	name[253] = 'a';
	CU_ASSERT_EQUAL(policy_host_normalise(name, 254, &h, &err), -1);
	CU_ASSERT_STRING_EQUAL(err, "name longer than 253 bytes");
	/* Hosts over 1024 bytes are refused before any work. */
	CU_ASSERT_PTR_NOT_NULL_FATAL(big = malloc(1100));
	memset(big, 'a', 1100);
	CU_ASSERT_EQUAL(policy_host_normalise(big, 1100, &h, &err), -1);
	CU_ASSERT_STRING_EQUAL(err, "host longer than 1024 bytes");
	free(big);
}

/* Normalising a canonical form gives the same form. */
static void
test_addr_idempotent(void)
{
	struct policy_host	h1, h2;
	const char		*err;
	size_t			i;

	for (i = 0; i < sizeof(addr_ok_vectors) / sizeof(addr_ok_vectors[0]);
	    i++) {
		const struct addr_ok	*v = &addr_ok_vectors[i];

		CU_ASSERT_EQUAL_FATAL(policy_host_normalise(v->in, v->len ?
		    v->len : strlen(v->in), &h1, &err), 0);
		CU_ASSERT_EQUAL_FATAL(policy_host_normalise(h1.name,
		    strlen(h1.name), &h2, &err), 0);
		CU_ASSERT_EQUAL(h1.kind, h2.kind);
		CU_ASSERT_STRING_EQUAL(h1.name, h2.name);
		if (h1.kind == POLICY_HOST_ADDR) {
			CU_ASSERT_EQUAL(h1.addr.family, h2.addr.family);
			CU_ASSERT(memcmp(&h1.addr.u, &h2.addr.u,
			    h1.addr.family == AF_INET ? 4 : 16) == 0);
		}
	}
}

struct hostport_vec {
	const char	*in;
	uint16_t	 def;		/* default port, 0 = none */
	int		 rc;
	const char	*host;		/* canonical, or the error */
	uint16_t	 port;
};

static const struct hostport_vec	hostport_vectors[] = {
	{ "example.com:443", 0, 0, "example.com", 443 },
	{ "EXAMPLE.com.:80", 0, 0, "example.com", 80 },
	{ "[::1]:8080", 0, 0, "::1", 8080 },
	{ "[::ffff:127.0.0.1]:1", 0, 0, "127.0.0.1", 1 },
	{ "127.1:65535", 0, 0, "127.0.0.1", 65535 },
	{ "example.com", 443, 0, "example.com", 443 },	/* default port */
	{ "::1", 53, 0, "::1", 53 },			/* bare IPv6, default */
	{ "[::1]", 53, 0, "::1", 53 },
	{ "example.com:00080", 0, 0, "example.com", 80 },
	{ "example.com", 0, -1, "missing port (write HOST:PORT)", 0 },
	{ "example.com:", 0, -1, "missing port after \":\"", 0 },
	{ "example.com:0", 0, -1, "bad port (1-65535)", 0 },
	{ "example.com:65536", 0, -1, "bad port (1-65535)", 0 },
	{ "example.com:+80", 0, -1, "bad port (1-65535)", 0 },
	{ "example.com:8 0", 0, -1, "bad port (1-65535)", 0 },
	{ "example.com:123456", 0, -1, "bad port (1-65535)", 0 },
	{ "::1:80", 0, -1,
	    "an IPv6 address with a port needs brackets: [V6]:PORT", 0 },
	{ "[::1]x", 0, -1,
	    "unexpected text after \"]\" (expected \":PORT\")", 0 },
	{ "[::1", 0, -1, "\"[\" without \"]\"", 0 },
	{ "", 0, -1, "empty address", 0 },
	{ ":80", 0, -1, "empty host", 0 },
	{ "a..b:80", 0, -1, "empty label in host name", 0 },
};

static void
test_addr_hostport(void)
{
	const struct hostport_vec	*v;
	struct policy_host		 h;
	const char			*err;
	uint16_t			 port;
	size_t				 i;
	int				 rc;

	for (i = 0; i < sizeof(hostport_vectors) / sizeof(*v); i++) {
		v = &hostport_vectors[i];
		err = NULL;
		rc = policy_hostport_parse(v->in, strlen(v->in), v->def, &h,
		    &port, &err);
		if (rc != v->rc)
			fprintf(stderr, "\n  vector %zu %s: rc %d err %s\n", i,
			    v->in, rc, err);
		CU_ASSERT_EQUAL_FATAL(rc, v->rc);
		if (rc == 0) {
			CU_ASSERT_STRING_EQUAL(h.name, v->host);
			CU_ASSERT_EQUAL(port, v->port);
		} else
			CU_ASSERT_STRING_EQUAL(err, v->host);
	}
}

static void
test_addr_sockaddr(void)
{
	struct sockaddr_in	sin;
	struct sockaddr_in6	sin6;
	struct sockaddr_un	sun;
	struct policy_addr	a;
	char			buf[64];

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	inet_pton(AF_INET, "203.0.113.7", &sin.sin_addr);
	CU_ASSERT_EQUAL(policy_addr_from_sockaddr((struct sockaddr *)&sin,
	    &a), 0);
	CU_ASSERT_EQUAL(a.family, AF_INET);
	CU_ASSERT_STRING_EQUAL(policy_addr_format(&a, buf, sizeof(buf)),
	    "203.0.113.7");

	/* A DNS answer may carry a mapped address: it becomes IPv4. */
	memset(&sin6, 0, sizeof(sin6));
	sin6.sin6_family = AF_INET6;
	inet_pton(AF_INET6, "::ffff:169.254.169.254", &sin6.sin6_addr);
	CU_ASSERT_EQUAL(policy_addr_from_sockaddr((struct sockaddr *)&sin6,
	    &a), 0);
	CU_ASSERT_EQUAL(a.family, AF_INET);
	CU_ASSERT_STRING_EQUAL(policy_addr_format(&a, buf, sizeof(buf)),
	    "169.254.169.254");

	inet_pton(AF_INET6, "2001:db8::5", &sin6.sin6_addr);
	CU_ASSERT_EQUAL(policy_addr_from_sockaddr((struct sockaddr *)&sin6,
	    &a), 0);
	CU_ASSERT_EQUAL(a.family, AF_INET6);
	CU_ASSERT_STRING_EQUAL(policy_addr_format(&a, buf, sizeof(buf)),
	    "2001:db8::5");

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	CU_ASSERT_EQUAL(policy_addr_from_sockaddr((struct sockaddr *)&sun,
	    &a), -1);
	CU_ASSERT_EQUAL(policy_addr_from_sockaddr(NULL, &a), -1);
}

/* The wildcard "*.example.com": one more label, never the apex. */
struct wild_vec {
	const char		*host;	/* as a client spells it */
	enum policy_verdict	 v;
	const char		*rule;	/* expected rule, NULL for none */
};

static const struct wild_vec	wild_vectors[] = {
	{ "a.example.com", POLICY_ALLOW, "wild" },
	{ "x.y.example.com", POLICY_ALLOW, "wild" },	/* deeper */
	{ "A.EXAMPLE.COM.", POLICY_ALLOW, "wild" },	/* spelling */
	{ "example.com", POLICY_DENY, NULL },		/* apex: never */
	{ "badexample.com", POLICY_DENY, NULL },	/* no label boundary */
	{ "example.com.evil.net", POLICY_DENY, NULL },	/* suffix elsewhere */
	{ "aexample.com", POLICY_DENY, NULL },
	{ "com", POLICY_DENY, NULL },
	{ "a.b.apex.org", POLICY_DENY, NULL },		/* exact rule only */
	{ "apex.org", POLICY_ALLOW, "apex" },
	{ "b\xc3\xbc" "cher.example.com", POLICY_ALLOW, "wild" }, /* IDNA */
	{ "x.xn--bcher-kva.de", POLICY_ALLOW, "idn" },	/* config in U-labels */
	{ "xn--bcher-kva.de", POLICY_DENY, NULL },
	{ "x.localhost", POLICY_DENY, NULL },		/* "*" never opens it */
};

static void
test_addr_wildcards(void)
{
	static const char		 conf[] =
	    "{\"listen\": [{\"proto\": \"http\", \"address\": "
	    "\"127.0.0.1:3128\"}],\n"
	    " \"policy\": {\"rules\": [\n"
	    "  {\"name\": \"wild\", \"action\": \"allow\", "
	    "\"hosts\": [\"*.Example.COM.\"]},\n"
	    "  {\"name\": \"apex\", \"action\": \"allow\", "
	    "\"hosts\": [\"apex.org\"]},\n"
	    "  {\"name\": \"idn\", \"action\": \"allow\", "
	    "\"hosts\": [\"*.b\xc3\xbc" "cher.de\"]},\n"
	    "  {\"name\": \"lo\", \"action\": \"allow\", "
	    "\"hosts\": [\"*.localhost\"]}\n"
	    " ]}}";
	struct policy_diags		 d;
	struct moat_config		*c;
	struct policy_host		 h;
	struct policy_target		 t;
	struct policy_decision		 dec;
	const struct wild_vec		*v;
	const char			*err;
	size_t				 i;

	policy_diags_init(&d);
	c = policy_config_load("w.json", conf, sizeof(conf) - 1, &d);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	/* "*.localhost" is legal but useless: one warning says so. */
	CU_ASSERT_EQUAL(d.nerrors, 0);
	CU_ASSERT_EQUAL(d.nwarnings, 1);
	for (i = 0; i < sizeof(wild_vectors) / sizeof(*v); i++) {
		v = &wild_vectors[i];
		CU_ASSERT_EQUAL_FATAL(policy_host_normalise(v->host,
		    strlen(v->host), &h, &err), 0);
		memset(&t, 0, sizeof(t));
		t.name = h.name;
		t.port = 443;
		policy_decide(c->policy, &t, &dec);
		if (dec.verdict != v->v)
			fprintf(stderr, "\n  vector %zu %s: %s\n", i, v->host,
			    policy_reason_str(dec.reason));
		CU_ASSERT_EQUAL(dec.verdict, v->v);
		if (v->rule != NULL) {
			CU_ASSERT_PTR_NOT_NULL_FATAL(dec.rule_name);
			CU_ASSERT_STRING_EQUAL(dec.rule_name, v->rule);
		}
	}
	policy_config_unref(c);
	policy_diags_clear(&d);
}

/* The result of normalising in, as text: the canonical form or the error. */
static void
addr_result(const char *in, size_t len, char *out, size_t outlen)
{
	struct policy_host	 h;
	const char		*err = NULL;

	if (policy_host_normalise(in, len, &h, &err) == 0)
		snprintf(out, outlen, "ok %d %s", h.kind, h.name);
	else
		snprintf(out, outlen, "error %s", err != NULL ? err : "?");
}

/* If in's result depends on libidn2, policy_idn_wanted(in) says so. */
static void
addr_idn_check(const char *in, size_t len)
{
	char	with[512], without[512];

	if (len == 0)
		len = strlen(in);
	policy_idn_set(NULL);
	addr_result(in, len, without, sizeof(without));
	CU_ASSERT_EQUAL_FATAL(policyio_idn_load(), 0);
	addr_result(in, len, with, sizeof(with));
	if (strcmp(with, without) != 0 && !policy_idn_wanted(in, len)) {
		fprintf(stderr, "\n  %s: needs IDNA (%s), not wanted", in,
		    with);
		CU_FAIL("policy_idn_wanted() missed a name");
	}
}

/*
 * libidn2 is the caller's to hand in.  Without it a name that needs IDNA
 * is refused, never passed through; and policy_idn_wanted(), which moat
 * asks before it loads libidn2, is true for every vector whose result
 * depends on it.
 */
static void
test_addr_idn(void)
{
	static const char *const	 plain[] = {
		"example.com", "127.0.0.1", "[::1]", "a-b_c.example.org",
	};
	static const char *const	 wanted[] = {
		"b\xc3\xbc" "cher.de", "b%C3%BCcher.de", "XN--BCHER-KVA.DE",
		"{\"hosts\": [\"b\\u00fccher.de\"]}", "%78n--bcher-kva.de",
	};
	struct policy_host	 h;
	const char		*err = NULL;
	size_t			 i;

	for (i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
		CU_ASSERT(!policy_idn_wanted(plain[i], strlen(plain[i])));
	for (i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++)
		CU_ASSERT(policy_idn_wanted(wanted[i], strlen(wanted[i])));
	/* What moat run starts with loads no libidn2. */
	CU_ASSERT(!policy_idn_wanted(moat_default_config,
	    moat_default_config_len));

	policy_idn_set(NULL);
	CU_ASSERT_EQUAL(policy_host_normalise("b\xc3\xbc" "cher.de", 10, &h,
	    &err), -1);
	CU_ASSERT(err != NULL && strstr(err, "(IDNA) cannot be loaded") !=
	    NULL);
	CU_ASSERT_EQUAL(policy_host_normalise("xn--bcher-kva.de", 16, &h,
	    &err), -1);
	CU_ASSERT_EQUAL(policy_host_normalise("example.com", 11, &h, &err),
	    0);
	for (i = 0; i < sizeof(addr_ok_vectors) / sizeof(addr_ok_vectors[0]);
	    i++)
		addr_idn_check(addr_ok_vectors[i].in, addr_ok_vectors[i].len);
	for (i = 0; i < sizeof(addr_bad_vectors) / sizeof(addr_bad_vectors[0]);
	    i++)
		addr_idn_check(addr_bad_vectors[i].in, addr_bad_vectors[i].len);
	CU_ASSERT_EQUAL(policyio_idn_load(), 0);
	CU_ASSERT_EQUAL(policy_host_normalise("b\xc3\xbc" "cher.de", 10, &h,
	    &err), 0);
	CU_ASSERT_STRING_EQUAL(h.name, "xn--bcher-kva.de");
}

void
test_addr_register(void)
{
	CU_pSuite	s;

	if ((s = CU_add_suite("addr", NULL, NULL)) == NULL)
		return;
	CU_add_test(s, "normalise: accepted spellings", test_addr_normalise_ok);
	CU_add_test(s, "normalise: refused hosts", test_addr_normalise_bad);
	CU_add_test(s, "normalise: length limits", test_addr_name_limits);
	CU_add_test(s, "normalise: idempotent", test_addr_idempotent);
	CU_add_test(s, "host:port parsing", test_addr_hostport);
	CU_add_test(s, "sockaddr conversion", test_addr_sockaddr);
	CU_add_test(s, "wildcard boundaries", test_addr_wildcards);
	CU_add_test(s, "IDNA only with the caller's libidn2", test_addr_idn);
}
