/*
 * test_dns_parse.c - vectors for proxy/dns_parse.c.
 *
 * The real queries below were captured on loopback by a small UDP listener
 * that saved each datagram: from glibc's stub resolver (getent, in a
 * network and mount namespace of its own with a private resolv.conf, with
 * and without "options edns0 trust-ad"), from c-ares 1.18 (A, AAAA, HTTPS,
 * ANY, PTR, SRV, with and without ARES_FLAG_EDNS), from Node's resolver
 * and from dnsmasq forwarding queries upstream.  The hand-made vectors
 * after them are annotated field by field.
 *
 * Answers from the builders are read back by a decoder written here, apart
 * from the code under test, that follows compression pointers.
 */
#include "config.h"

#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "proxy/dns_parse.h"
#include "tests/unit/unit.h"

#define B(s)		(const uint8_t *)(s), (sizeof(s) - 1)
#define CHECK(ok, i)	vcheck((ok), (i), #ok, __LINE__)

struct dec;

static void	vcheck(bool, size_t, const char *, int);
static void	test_vectors(void);
static void	test_exact_length(void);
static void	test_fields(void);
static size_t	put_name(uint8_t *, const size_t *, size_t);
static void	put_padding(uint8_t *, size_t);
static void	test_name_limits(void);
static uint16_t	rd16(const uint8_t *);
static int	dec_name(const uint8_t *, size_t, size_t *, char *, bool *);
static int	decode(const uint8_t *, size_t, struct dec *);
static struct policy_addr v4(const char *);
static struct policy_addr v6(const char *);
static void	must_parse(const uint8_t *, size_t, struct dns_query *);
static void	check_answers_query(const struct dec *,
		    const struct dns_query *, uint16_t);
static void	check_rr(const struct dec *, size_t, const struct dns_query *,
		    const struct policy_addr *, uint32_t);
static void	check_not_a_query(const uint8_t *, int);
static void	test_answer_a_aaaa(void);
static void	test_answer_flags_ttl(void);
static void	fill_addrs(struct policy_addr *, size_t, int);
static void	test_answer_truncation(void);
static void	test_answer_refused(void);
static void	test_build_error(void);
static void	test_build_formerr(void);
static void	test_tcp_frame(void);

/* ------------------------------------------------------------------ */
/* Captured queries                                                     */
/* ------------------------------------------------------------------ */

/* c-ares 1.18, ARES_FLAG_EDNS: A api.Example.com */
static const uint8_t q_cares_edns_0[] =
	    /* ID 385f, flags 0100, QD 1 AN 0 NS 0 AR 1 */
	    "\x38\x5f\x01\x00\x00\x01\x00\x00\x00\x00\x00\x01"
	    /* QNAME api.Example.com. */
	    "\x03\x61\x70\x69\x07\x45\x78\x61\x6d\x70\x6c\x65\x03\x63\x6f\x6d"
	    "\x00"
	    /* QTYPE A, QCLASS IN */
	    "\x00\x01\x00\x01"
	    /* OPT: root, payload 1232, version 0, no flags, no options */
	    "\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x00";

/* c-ares 1.18, ARES_FLAG_EDNS: AAAA api.example.com */
static const uint8_t q_cares_edns_1[] =
	    /* ID c2db, flags 0100, QD 1 AN 0 NS 0 AR 1 */
	    "\xc2\xdb\x01\x00\x00\x01\x00\x00\x00\x00\x00\x01"
	    /* QNAME api.example.com. */
	    "\x03\x61\x70\x69\x07\x65\x78\x61\x6d\x70\x6c\x65\x03\x63\x6f\x6d"
	    "\x00"
	    /* QTYPE AAAA, QCLASS IN */
	    "\x00\x1c\x00\x01"
	    /* OPT: root, payload 1232, version 0, no flags, no options */
	    "\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x00";

/* c-ares 1.18, ARES_FLAG_EDNS: HTTPS (type 65) example.com */
static const uint8_t q_cares_edns_2[] =
	    /* ID ea88, flags 0100, QD 1 AN 0 NS 0 AR 1 */
	    "\xea\x88\x01\x00\x00\x01\x00\x00\x00\x00\x00\x01"
	    /* QNAME example.com. */
	    "\x07\x65\x78\x61\x6d\x70\x6c\x65\x03\x63\x6f\x6d\x00"
	    /* QTYPE HTTPS, QCLASS IN */
	    "\x00\x41\x00\x01"
	    /* OPT: root, payload 1232, version 0, no flags, no options */
	    "\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x00";

/* c-ares 1.18, ARES_FLAG_EDNS: ANY example.com */
static const uint8_t q_cares_edns_3[] =
	    /* ID 67f5, flags 0100, QD 1 AN 0 NS 0 AR 1 */
	    "\x67\xf5\x01\x00\x00\x01\x00\x00\x00\x00\x00\x01"
	    /* QNAME example.com. */
	    "\x07\x65\x78\x61\x6d\x70\x6c\x65\x03\x63\x6f\x6d\x00"
	    /* QTYPE ANY, QCLASS IN */
	    "\x00\xff\x00\x01"
	    /* OPT: root, payload 1232, version 0, no flags, no options */
	    "\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x00";

/* c-ares 1.18, ARES_FLAG_EDNS: PTR 7.2.0.192.in-addr.arpa */
static const uint8_t q_cares_edns_4[] =
	    /* ID cb2c, flags 0100, QD 1 AN 0 NS 0 AR 1 */
	    "\xcb\x2c\x01\x00\x00\x01\x00\x00\x00\x00\x00\x01"
	    /* QNAME 7.2.0.192.in-addr.arpa. */
	    "\x01\x37\x01\x32\x01\x30\x03\x31\x39\x32\x07\x69\x6e\x2d\x61\x64"
	    "\x64\x72\x04\x61\x72\x70\x61\x00"
	    /* QTYPE PTR, QCLASS IN */
	    "\x00\x0c\x00\x01"
	    /* OPT: root, payload 1232, version 0, no flags, no options */
	    "\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x00";

/* c-ares 1.18, no EDNS: HTTPS svc.example.net */
static const uint8_t q_cares_plain_0[] =
	    /* ID d044, flags 0100, QD 1 AN 0 NS 0 AR 0 */
	    "\xd0\x44\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
	    /* QNAME svc.example.net. */
	    "\x03\x73\x76\x63\x07\x65\x78\x61\x6d\x70\x6c\x65\x03\x6e\x65\x74"
	    "\x00"
	    /* QTYPE HTTPS, QCLASS IN */
	    "\x00\x41\x00\x01";

/* c-ares 1.18, no EDNS: SRV _http._tcp.example.net */
static const uint8_t q_cares_plain_1[] =
	    /* ID 3f3c, flags 0100, QD 1 AN 0 NS 0 AR 0 */
	    "\x3f\x3c\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
	    /* QNAME _http._tcp.example.net. */
	    "\x05\x5f\x68\x74\x74\x70\x04\x5f\x74\x63\x70\x07\x65\x78\x61\x6d"
	    "\x70\x6c\x65\x03\x6e\x65\x74\x00"
	    /* QTYPE SRV, QCLASS IN */
	    "\x00\x21\x00\x01";

/* dnsmasq 2.90 forwarding an EDNS AAAA query upstream */
static const uint8_t q_dnsmasq_fwd_0[] =
	    /* ID 82e6, flags 0100, QD 1 AN 0 NS 0 AR 1 */
	    "\x82\xe6\x01\x00\x00\x01\x00\x00\x00\x00\x00\x01"
	    /* QNAME cdn.example.com. */
	    "\x03\x63\x64\x6e\x07\x65\x78\x61\x6d\x70\x6c\x65\x03\x63\x6f\x6d"
	    "\x00"
	    /* QTYPE AAAA, QCLASS IN */
	    "\x00\x1c\x00\x01"
	    /* OPT: root, payload 1232, version 0, no flags, no options */
	    "\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x00";

/* dnsmasq 2.90 forwarding a plain A query upstream */
static const uint8_t q_dnsmasq_fwd_1[] =
	    /* ID d36f, flags 0100, QD 1 AN 0 NS 0 AR 0 */
	    "\xd3\x6f\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
	    /* QNAME plain.example.com. */
	    "\x05\x70\x6c\x61\x69\x6e\x07\x65\x78\x61\x6d\x70\x6c\x65\x03\x63"
	    "\x6f\x6d\x00"
	    /* QTYPE A, QCLASS IN */
	    "\x00\x01\x00\x01";

/* glibc 2.36, getent ahosts Example.COM: A */
static const uint8_t q_glibc_ahosts_0[] =
	    /* ID bf1f, flags 0100, QD 1 AN 0 NS 0 AR 0 */
	    "\xbf\x1f\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
	    /* QNAME Example.COM. */
	    "\x07\x45\x78\x61\x6d\x70\x6c\x65\x03\x43\x4f\x4d\x00"
	    /* QTYPE A, QCLASS IN */
	    "\x00\x01\x00\x01";

/* glibc 2.36, getent ahosts Example.COM: AAAA */
static const uint8_t q_glibc_ahosts_1[] =
	    /* ID 6201, flags 0100, QD 1 AN 0 NS 0 AR 0 */
	    "\x62\x01\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
	    /* QNAME Example.COM. */
	    "\x07\x45\x78\x61\x6d\x70\x6c\x65\x03\x43\x4f\x4d\x00"
	    /* QTYPE AAAA, QCLASS IN */
	    "\x00\x1c\x00\x01";

/* glibc 2.36, options edns0 trust-ad: A (AD set) */
static const uint8_t q_glibc_edns_ahosts_0[] =
	    /* ID 7e52, flags 0120, QD 1 AN 0 NS 0 AR 1 */
	    "\x7e\x52\x01\x20\x00\x01\x00\x00\x00\x00\x00\x01"
	    /* QNAME www.example.org. */
	    "\x03\x77\x77\x77\x07\x65\x78\x61\x6d\x70\x6c\x65\x03\x6f\x72\x67"
	    "\x00"
	    /* QTYPE A, QCLASS IN */
	    "\x00\x01\x00\x01"
	    /* OPT: root, payload 1200, version 0, no flags, no options */
	    "\x00\x00\x29\x04\xb0\x00\x00\x00\x00\x00\x00";

/* glibc 2.36, options edns0 trust-ad: AAAA */
static const uint8_t q_glibc_edns_ahosts_1[] =
	    /* ID a94e, flags 0120, QD 1 AN 0 NS 0 AR 1 */
	    "\xa9\x4e\x01\x20\x00\x01\x00\x00\x00\x00\x00\x01"
	    /* QNAME www.example.org. */
	    "\x03\x77\x77\x77\x07\x65\x78\x61\x6d\x70\x6c\x65\x03\x6f\x72\x67"
	    "\x00"
	    /* QTYPE AAAA, QCLASS IN */
	    "\x00\x1c\x00\x01"
	    /* OPT: root, payload 1200, version 0, no flags, no options */
	    "\x00\x00\x29\x04\xb0\x00\x00\x00\x00\x00\x00";

/* glibc 2.36, options edns0: PTR for 2001:db8::1 */
static const uint8_t q_glibc_edns_ptr6_0[] =
	    /* ID 6e12, flags 0120, QD 1 AN 0 NS 0 AR 1 */
	    "\x6e\x12\x01\x20\x00\x01\x00\x00\x00\x00\x00\x01"
	    /* QNAME 1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8. ... */
	    "\x01\x31\x01\x30\x01\x30\x01\x30\x01\x30\x01\x30\x01\x30\x01\x30"
	    "\x01\x30\x01\x30\x01\x30\x01\x30\x01\x30\x01\x30\x01\x30\x01\x30"
	    "\x01\x30\x01\x30\x01\x30\x01\x30\x01\x30\x01\x30\x01\x30\x01\x30"
	    "\x01\x38\x01\x62\x01\x64\x01\x30\x01\x31\x01\x30\x01\x30\x01\x32"
	    "\x03\x69\x70\x36\x04\x61\x72\x70\x61\x00"
	    /* QTYPE PTR, QCLASS IN */
	    "\x00\x0c\x00\x01"
	    /* OPT: root, payload 1200, version 0, no flags, no options */
	    "\x00\x00\x29\x04\xb0\x00\x00\x00\x00\x00\x00";

/* glibc 2.36, getent hosts 192.0.2.7: PTR */
static const uint8_t q_glibc_ptr_0[] =
	    /* ID 0e5f, flags 0100, QD 1 AN 0 NS 0 AR 0 */
	    "\x0e\x5f\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
	    /* QNAME 7.2.0.192.in-addr.arpa. */
	    "\x01\x37\x01\x32\x01\x30\x03\x31\x39\x32\x07\x69\x6e\x2d\x61\x64"
	    "\x64\x72\x04\x61\x72\x70\x61\x00"
	    /* QTYPE PTR, QCLASS IN */
	    "\x00\x0c\x00\x01";

/* Node 20 (c-ares 1.34) resolveAny: ANY example.com */
static const uint8_t q_node_0[] =
	    /* ID a603, flags 0100, QD 1 AN 0 NS 0 AR 0 */
	    "\xa6\x03\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
	    /* QNAME example.com. */
	    "\x07\x65\x78\x61\x6d\x70\x6c\x65\x03\x63\x6f\x6d\x00"
	    /* QTYPE ANY, QCLASS IN */
	    "\x00\xff\x00\x01";

/* Node 20 (c-ares 1.34) resolve4: A Mixed-Case.Example.com */
static const uint8_t q_node_1[] =
	    /* ID 1101, flags 0100, QD 1 AN 0 NS 0 AR 0 */
	    "\x11\x01\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
	    /* QNAME mixed-case.example.com. */
	    "\x0a\x6d\x69\x78\x65\x64\x2d\x63\x61\x73\x65\x07\x65\x78\x61\x6d"
	    "\x70\x6c\x65\x03\x63\x6f\x6d\x00"
	    /* QTYPE A, QCLASS IN */
	    "\x00\x01\x00\x01";


/* ------------------------------------------------------------------ */
/* Hand-made queries                                                    */
/* ------------------------------------------------------------------ */

/* As dig 9.18 sends by default: RD and AD, EDNS0 with a client COOKIE. */
static const uint8_t q_dig_cookie[] =
	    /* ID 1234, flags 0120 (RD AD), QD 1 AN 0 NS 0 AR 1 */
	    "\x12\x34\x01\x20\x00\x01\x00\x00\x00\x00\x00\x01"
	    /* QNAME example.com. */
	    "\x07" "example" "\x03" "com" "\x00"
	    /* QTYPE A, QCLASS IN */
	    "\x00\x01\x00\x01"
	    /* OPT: root, payload 1232, TTL 0, RDLENGTH 12 */
	    "\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x0c"
	    /* option COOKIE (10), 8 bytes of client cookie */
	    "\x00\x0a\x00\x08\x01\x02\x03\x04\x05\x06\x07\x08";

/* dig +dnssec +cd: DO in the OPT TTL, CD in the header. */
static const uint8_t q_dig_dnssec[] =
	    /* ID beef, flags 0130 (RD AD CD), QD 1 AN 0 NS 0 AR 1 */
	    "\xbe\xef\x01\x30\x00\x01\x00\x00\x00\x00\x00\x01"
	    /* QNAME WWW.example.com. */
	    "\x03" "WWW" "\x07" "example" "\x03" "com" "\x00"
	    /* QTYPE AAAA, QCLASS IN */
	    "\x00\x1c\x00\x01"
	    /* OPT: root, payload 4096, TTL 00008000 (DO), RDLENGTH 0 */
	    "\x00\x00\x29\x10\x00\x00\x00\x80\x00\x00\x00";

/* Shorthands for the vectors below. */
#define H_QD1		"\xab\xcd\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
#define H_QD1_AR1	"\xab\xcd\x01\x00\x00\x01\x00\x00\x00\x00\x00\x01"
#define N_EXAMPLE	"\x07" "example" "\x03" "com" "\x00"
#define T_A_IN		"\x00\x01\x00\x01"
#define OPT_1232	"\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x00"

struct dns_vec {
	const uint8_t	*in;
	size_t		 len;
	int		 rc;
	const char	*err;		/* with DNS_INVALID or an rcode */
	uint16_t	 rcode;
	const char	*name;		/* DNS_OK with a question */
	uint16_t	 qtype;
	bool		 edns;
	uint16_t	 udp_size;
};

#define V(a)	(a), (sizeof(a) - 1)
/* Accepted, answered from policy. */
#define OK(n, t)	.rc = DNS_OK, .name = (n), .qtype = (t)
/* Accepted with an OPT record of this payload size. */
#define EDNS(sz)	.edns = true, .udp_size = (sz)
/* Accepted, to be answered with this rcode. */
#define NOT(e, r)	.rc = DNS_OK, .err = (e), .rcode = (r)
/* Refused. */
#define BAD(e)		.rc = DNS_INVALID, .err = (e)

static const struct dns_vec dns_vecs[] = {
	/* Real queries. */
	{ V(q_glibc_ahosts_0), OK("example.com", DNS_TYPE_A) },
	{ V(q_glibc_ahosts_1), OK("example.com", DNS_TYPE_AAAA) },
	{ V(q_glibc_edns_ahosts_0), OK("www.example.org", DNS_TYPE_A),
	    EDNS(1200) },
	{ V(q_glibc_edns_ahosts_1), OK("www.example.org", DNS_TYPE_AAAA),
	    EDNS(1200) },
	{ V(q_glibc_ptr_0), OK("7.2.0.192.in-addr.arpa", DNS_TYPE_PTR) },
	{ V(q_glibc_edns_ptr6_0), OK("1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0."
	    "0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa", DNS_TYPE_PTR), EDNS(1200) },
	{ V(q_cares_edns_0), OK("api.example.com", DNS_TYPE_A), EDNS(1232) },
	{ V(q_cares_edns_1), OK("api.example.com", DNS_TYPE_AAAA),
	    EDNS(1232) },
	{ V(q_cares_edns_2), OK("example.com", DNS_TYPE_HTTPS), EDNS(1232) },
	{ V(q_cares_edns_3), OK("example.com", DNS_TYPE_ANY), EDNS(1232) },
	{ V(q_cares_edns_4), OK("7.2.0.192.in-addr.arpa", DNS_TYPE_PTR),
	    EDNS(1232) },
	{ V(q_cares_plain_0), OK("svc.example.net", DNS_TYPE_HTTPS) },
	{ V(q_cares_plain_1), OK("_http._tcp.example.net", DNS_TYPE_SRV) },
	{ V(q_node_0), OK("example.com", DNS_TYPE_ANY) },
	{ V(q_node_1), OK("mixed-case.example.com", DNS_TYPE_A) },
	{ V(q_dnsmasq_fwd_0), OK("cdn.example.com", DNS_TYPE_AAAA),
	    EDNS(1232) },
	{ V(q_dnsmasq_fwd_1), OK("plain.example.com", DNS_TYPE_A) },
	{ V(q_dig_cookie), OK("example.com", DNS_TYPE_A), EDNS(1232) },
	{ V(q_dig_dnssec), OK("www.example.com", DNS_TYPE_AAAA), EDNS(4096) },

	/* The root, as in "dig . NS". */
	{ B(H_QD1 "\x00" "\x00\x02\x00\x01"), OK("", DNS_TYPE_NS) },
	/* Printable bytes other than '.' and '\' are label bytes. */
	{ B(H_QD1 "\x05" "a*b_Z" "\x00" T_A_IN), OK("a*b_z", DNS_TYPE_A) },
	/* EDNS payload below 512 is kept as sent (means 512). */
	{ B(H_QD1_AR1 N_EXAMPLE T_A_IN
	    "\x00\x00\x29\x00\x80\x00\x00\x00\x00\x00\x00"),
	    OK("example.com", DNS_TYPE_A), EDNS(128) },
	/* Two options, one of them empty. */
	{ B(H_QD1_AR1 N_EXAMPLE T_A_IN
	    "\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x0a"
	    "\x00\x0c\x00\x02\x00\x00" "\x00\x08\x00\x00"),
	    OK("example.com", DNS_TYPE_A), EDNS(1232) },

	/* Well formed, but not answered from policy. */
	{ B(H_QD1 "\x07" "version" "\x04" "bind" "\x00" "\x00\x10\x00\x03"),
	    NOT("query class not supported", DNS_RCODE_REFUSED),
	    .name = "version.bind", .qtype = DNS_TYPE_TXT },
	{ B(H_QD1 N_EXAMPLE "\x00\x01\x00\xff"),
	    NOT("query class not supported", DNS_RCODE_REFUSED),
	    .name = "example.com", .qtype = DNS_TYPE_A },
	{ B(H_QD1 N_EXAMPLE "\x00\xfc\x00\x01"),
	    NOT("query type not supported", DNS_RCODE_NOTIMP),
	    .name = "example.com", .qtype = DNS_TYPE_AXFR },
	{ B(H_QD1 N_EXAMPLE "\x00\xfb\x00\x01"),
	    NOT("query type not supported", DNS_RCODE_NOTIMP),
	    .name = "example.com", .qtype = DNS_TYPE_IXFR },
	{ B(H_QD1 N_EXAMPLE "\x00\xfa\x00\x01"),
	    NOT("query type not supported", DNS_RCODE_NOTIMP),
	    .name = "example.com", .qtype = DNS_TYPE_TSIG },
	/* EDNS version 1: BADVERS, whatever else is asked. */
	{ B(H_QD1_AR1 N_EXAMPLE "\x00\x01\x00\x03"
	    "\x00\x00\x29\x04\xd0\x00\x01\x00\x00\x00\x00"),
	    NOT("EDNS version not supported", DNS_RCODE_BADVERS),
	    .name = "example.com", .qtype = DNS_TYPE_A, EDNS(1232) },
	/* NOTIFY (opcode 4) and UPDATE (5): only the header is read. */
	{ B("\xab\xcd\x20\x00\x00\x01\x00\x01\x00\x00\x00\x00"),
	    NOT("opcode not supported", DNS_RCODE_NOTIMP) },
	{ B("\xab\xcd\x28\x00\x00\x01\x00\x00\x00\x05\x00\x00" "junk"),
	    NOT("opcode not supported", DNS_RCODE_NOTIMP) },
	/* IQUERY (1) and STATUS (2) too. */
	{ B("\x00\x01\x08\x00\x00\x00\x00\x01\x00\x00\x00\x00"),
	    NOT("opcode not supported", DNS_RCODE_NOTIMP) },
	{ B("\x00\x01\x10\x00\x00\x00\x00\x00\x00\x00\x00\x00"),
	    NOT("opcode not supported", DNS_RCODE_NOTIMP) },

	/* Header. */
	{ B(""), BAD("message shorter than a DNS header") },
	{ B("\xab\xcd\x01\x00\x00\x01\x00\x00\x00\x00\x00"),
	    BAD("message shorter than a DNS header") },
	{ B("\xab\xcd\x81\x80\x00\x01\x00\x00\x00\x00\x00\x00"
	    N_EXAMPLE T_A_IN), BAD("message is a response, not a query") },
	{ B("\xab\xcd\x03\x00\x00\x01\x00\x00\x00\x00\x00\x00"
	    N_EXAMPLE T_A_IN), BAD("TC set in a query") },
	{ B("\xab\xcd\x01\x40\x00\x01\x00\x00\x00\x00\x00\x00"
	    N_EXAMPLE T_A_IN), BAD("reserved header bit Z set") },
	{ B("\xab\xcd\x01\x03\x00\x01\x00\x00\x00\x00\x00\x00"
	    N_EXAMPLE T_A_IN), BAD("RCODE not zero in a query") },
	{ B("\xab\xcd\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00"),
	    BAD("no question in query") },
	{ B("\xab\xcd\x01\x00\x00\x02\x00\x00\x00\x00\x00\x00"
	    N_EXAMPLE T_A_IN N_EXAMPLE "\x00\x1c\x00\x01"),
	    BAD("more than one question in query") },
	{ B("\xab\xcd\x01\x00\x00\x01\x00\x01\x00\x00\x00\x00"
	    N_EXAMPLE T_A_IN), BAD("answer or authority records in a query") },
	{ B("\xab\xcd\x01\x00\x00\x01\x00\x00\x00\x01\x00\x00"
	    N_EXAMPLE T_A_IN), BAD("answer or authority records in a query") },
	{ B("\xab\xcd\x01\x00\x00\x01\x00\x00\x00\x00\x00\x02"
	    N_EXAMPLE T_A_IN OPT_1232 OPT_1232),
	    BAD("more than one additional record in query") },

	/* Question name. */
	{ B(H_QD1 "\xc0\x0c" T_A_IN), BAD("compression pointer in question") },
	{ B(H_QD1 "\x03" "www" "\xc0\x0c" T_A_IN),
	    BAD("compression pointer in question") },
	{ B(H_QD1 "\x40" T_A_IN), BAD("extended label type in question") },
	{ B(H_QD1 "\x80" T_A_IN), BAD("extended label type in question") },
	{ B(H_QD1 "\x07" "exa.ple" "\x03" "com" "\x00" T_A_IN),
	    BAD("'.' inside a label") },
	{ B(H_QD1 "\x07" "exa\0ple" "\x03" "com" "\x00" T_A_IN),
	    BAD("NUL byte in a label") },
	{ B(H_QD1 "\x07" "exa ple" "\x03" "com" "\x00" T_A_IN),
	    BAD("label byte not printable ASCII") },
	{ B(H_QD1 "\x03" "a\x7f" "b" "\x00" T_A_IN),
	    BAD("label byte not printable ASCII") },
	{ B(H_QD1 "\x04" "caf\xc3" "\x00" T_A_IN),
	    BAD("label byte not printable ASCII") },
	{ B(H_QD1 "\x03" "a\\b" "\x00" T_A_IN),
	    BAD("label byte not printable ASCII") },
	{ B(H_QD1 "\x03" "a\nb" "\x00" T_A_IN),
	    BAD("label byte not printable ASCII") },
	{ B(H_QD1 "\x07" "example" "\x03" "co"),
	    BAD("question name runs past the message") },
	{ B(H_QD1 "\x07" "example"),
	    BAD("question name runs past the message") },
	{ B(H_QD1), BAD("question name runs past the message") },
	{ B(H_QD1 N_EXAMPLE "\x00\x01\x00"), BAD("question truncated") },
	{ B(H_QD1 N_EXAMPLE "\x00\x00\x00\x01"), BAD("QTYPE 0 is reserved") },
	{ B(H_QD1 N_EXAMPLE "\x00\x29\x00\x01"),
	    BAD("QTYPE OPT is not a query type") },

	/* Additional section. */
	{ B(H_QD1_AR1 N_EXAMPLE T_A_IN), BAD("additional record truncated") },
	{ B(H_QD1_AR1 N_EXAMPLE T_A_IN "\x00\x00\x29\x04\xd0\x00"),
	    BAD("additional record truncated") },
	/* A TSIG-like record owned by "k". */
	{ B(H_QD1_AR1 N_EXAMPLE T_A_IN "\x01" "k" "\x00"
	    "\x00\xfa\x00\xff\x00\x00\x00\x00\x00\x00"),
	    BAD("additional record is not an EDNS0 OPT record") },
	{ B(H_QD1_AR1 N_EXAMPLE T_A_IN "\xc0\x0c"
	    "\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x00"),
	    BAD("additional record is not an EDNS0 OPT record") },
	{ B(H_QD1_AR1 N_EXAMPLE T_A_IN
	    "\x00\x00\x01\x00\x01\x00\x00\x00\x00\x00\x00"),
	    BAD("additional record is not an EDNS0 OPT record") },
	{ B(H_QD1_AR1 N_EXAMPLE T_A_IN
	    "\x00\x00\x29\x04\xd0\x01\x00\x00\x00\x00\x00"),
	    BAD("extended RCODE not zero in a query") },
	{ B(H_QD1_AR1 N_EXAMPLE T_A_IN
	    "\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x05" "\x00\x0a"),
	    BAD("OPT record data runs past the message") },
	{ B(H_QD1_AR1 N_EXAMPLE T_A_IN
	    "\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x03" "\x00\x0a\x00"),
	    BAD("EDNS0 option header truncated") },
	/* An option that claims 9 bytes where the record has 8. */
	{ B(H_QD1_AR1 N_EXAMPLE T_A_IN
	    "\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x0c"
	    "\x00\x0a\x00\x09\x01\x02\x03\x04\x05\x06\x07\x08"),
	    BAD("EDNS0 option runs past the OPT record") },

	/* Exact length. */
	{ B(H_QD1 N_EXAMPLE T_A_IN "\x00"), BAD("trailing bytes after query") },
	{ B(H_QD1 N_EXAMPLE T_A_IN OPT_1232),
	    BAD("trailing bytes after query") },
	{ B(H_QD1_AR1 N_EXAMPLE T_A_IN OPT_1232 "\x00\x00"),
	    BAD("trailing bytes after query") },
};

static void
vcheck(bool ok, size_t i, const char *cond, int line)
{
	char	msg[256];

	snprintf(msg, sizeof(msg), "vector %zu: %s", i, cond);
	CU_assertImplementation(ok ? CU_TRUE : CU_FALSE, line, msg, __FILE__,
	    "", CU_FALSE);
}

static void
test_vectors(void)
{
	const struct dns_vec	*v;
	struct dns_query	 q;
	const char		*err;
	size_t			 i;
	int			 rc;

	for (i = 0; i < sizeof(dns_vecs) / sizeof(dns_vecs[0]); i++) {
		v = &dns_vecs[i];
		err = NULL;
		rc = dns_parse_query(v->in, v->len, &q, &err);
		CHECK(rc == v->rc, i);
		if (v->err != NULL)
			CHECK(err != NULL && strcmp(err, v->err) == 0, i);
		else
			CHECK(err == NULL, i);
		if (rc != DNS_OK || v->rc != DNS_OK)
			continue;
		CHECK(q.rcode == v->rcode, i);
		CHECK(q.id == (v->in[0] << 8 | v->in[1]), i);
		CHECK(q.transport == DNS_TRANSPORT_UDP, i);
		if (v->name == NULL) {
			CHECK(!q.has_question, i);
			continue;
		}
		CHECK(q.has_question, i);
		CHECK(strcmp(q.name, v->name) == 0, i);
		CHECK(q.name_len == strlen(v->name), i);
		/* The wire name is kept as sent, right after the header. */
		CHECK(q.qname_len <= v->len - DNS_HEADER_BYTES, i);
		CHECK(memcmp(q.qname, v->in + DNS_HEADER_BYTES,
		    q.qname_len) == 0, i);
		CHECK(q.qtype == v->qtype, i);
		CHECK(q.edns == v->edns, i);
		if (v->edns)
			CHECK(q.edns_udp_size == v->udp_size, i);
	}
}

/*
 * A query is exactly its length: every proper prefix of a query with a
 * question is refused, and so is the query with one more byte.  Each
 * prefix is copied to the very end of a static buffer, so that
 * AddressSanitizer sees any read past it.
 */
static void
test_exact_length(void)
{
	const struct dns_vec	*v;
	static uint8_t		 end[DNS_QUERY_MAX_BYTES];
	struct dns_query	 q;
	uint8_t			 buf[DNS_QUERY_MAX_BYTES + 1];
	const char		*err;
	size_t			 i, k;

	for (i = 0; i < sizeof(dns_vecs) / sizeof(dns_vecs[0]); i++) {
		v = &dns_vecs[i];
		if (v->rc != DNS_OK || v->name == NULL)
			continue;
		for (k = 0; k < v->len; k++) {
			memcpy(end + sizeof(end) - k, v->in, k);
			err = NULL;
			CHECK(dns_parse_query(end + sizeof(end) - k, k, &q,
			    &err) == DNS_INVALID && err != NULL, i);
		}
		memcpy(buf, v->in, v->len);
		buf[v->len] = 0;
		err = NULL;
		CHECK(dns_parse_query(buf, v->len + 1, &q, &err) ==
		    DNS_INVALID, i);
		CHECK(err != NULL &&
		    strcmp(err, "trailing bytes after query") == 0, i);
	}
}

static void
test_fields(void)
{
	struct dns_query	 q;
	const char		*err = NULL;

	CU_ASSERT_EQUAL(dns_parse_query(V(q_dig_dnssec), &q, &err), DNS_OK);
	CU_ASSERT_EQUAL(q.id, 0xbeef);
	CU_ASSERT_EQUAL(q.opcode, DNS_OPCODE_QUERY);
	CU_ASSERT_TRUE(q.rd);
	CU_ASSERT_TRUE(q.cd);
	CU_ASSERT_STRING_EQUAL(q.name, "www.example.com");
	CU_ASSERT_EQUAL(q.qname_len, 17);
	CU_ASSERT_EQUAL(MEMCMP_LIT(q.qname, "\x03" "WWW"), 0);
	CU_ASSERT_EQUAL(q.qclass, DNS_CLASS_IN);
	CU_ASSERT_TRUE(q.edns);
	CU_ASSERT_TRUE(q.edns_do);
	CU_ASSERT_EQUAL(q.edns_version, 0);
	CU_ASSERT_EQUAL(q.edns_udp_size, 4096);

	CU_ASSERT_EQUAL(dns_parse_query(V(q_glibc_ahosts_1), &q, &err),
	    DNS_OK);
	CU_ASSERT_EQUAL(q.id, 0x6201);
	CU_ASSERT_TRUE(q.rd);
	CU_ASSERT_FALSE(q.cd);
	CU_ASSERT_FALSE(q.edns);
	CU_ASSERT_FALSE(q.edns_do);
	CU_ASSERT_EQUAL(MEMCMP_LIT(q.qname, "\x07" "Example" "\x03" "COM"), 0);

	/* RD clear is reported as such. */
	CU_ASSERT_EQUAL(dns_parse_query(B("\x00\x07\x00\x00\x00\x01\x00\x00"
	    "\x00\x00\x00\x00" N_EXAMPLE T_A_IN), &q, &err), DNS_OK);
	CU_ASSERT_FALSE(q.rd);
	CU_ASSERT_EQUAL(q.id, 7);

	/* NOTIFY: the opcode is reported, nothing after the header. */
	CU_ASSERT_EQUAL(dns_parse_query(B("\x12\x34\x21\x00\x00\x01\x00\x00"
	    "\x00\x00\x00\x00"), &q, &err), DNS_OK);
	CU_ASSERT_EQUAL(q.opcode, 4);
	CU_ASSERT_EQUAL(q.rcode, DNS_RCODE_NOTIMP);
	CU_ASSERT_FALSE(q.has_question);
	CU_ASSERT_TRUE(q.rd);
	CU_ASSERT_FALSE(q.edns);
}

/* Writes a question name of the given label lengths ('a'..) at p. */
static size_t
put_name(uint8_t *p, const size_t *labels, size_t n)
{
	size_t	i, off = 0;

	for (i = 0; i < n; i++) {
		p[off++] = (uint8_t)labels[i];
		memset(p + off, 'a' + (int)i, labels[i]);
		off += labels[i];
	}
	p[off++] = 0;
	return off;
}

/* RDLENGTH rd, then one PADDING option (12) filling it with zeros. */
static void
put_padding(uint8_t *p, size_t rd)
{
	p[0] = (uint8_t)(rd >> 8);
	p[1] = (uint8_t)rd;
	p[2] = 0;
	p[3] = 12;
	p[4] = (uint8_t)((rd - 4) >> 8);
	p[5] = (uint8_t)(rd - 4);
	memset(p + 6, 0, rd - 4);
}

static void
test_name_limits(void)
{
	static const size_t	 max_name[] = { 63, 63, 63, 61 };
	static const size_t	 long_name[] = { 63, 63, 63, 62 };
	static const size_t	 dots[] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 };
	struct dns_query	 q;
	uint8_t			 buf[DNS_QUERY_MAX_BYTES + 64];
	const char		*err = NULL;
	size_t			 n, rd;

	/* 255 bytes in wire form: 253 in presentation form. */
	memcpy(buf, H_QD1, DNS_HEADER_BYTES);
	n = DNS_HEADER_BYTES + put_name(buf + DNS_HEADER_BYTES, max_name, 4);
	CU_ASSERT_EQUAL(n - DNS_HEADER_BYTES, DNS_NAME_WIRE_MAX_BYTES);
	memcpy(buf + n, T_A_IN, 4);
	CU_ASSERT_EQUAL(dns_parse_query(buf, n + 4, &q, &err), DNS_OK);
	CU_ASSERT_EQUAL(q.name_len, DNS_NAME_MAX);
	CU_ASSERT_EQUAL(strlen(q.name), DNS_NAME_MAX);
	CU_ASSERT_EQUAL(q.qname_len, DNS_NAME_WIRE_MAX_BYTES);
	CU_ASSERT_EQUAL(q.name[63], '.');
	CU_ASSERT_EQUAL(q.name[252], 'd');

	/* One byte more. */
	n = DNS_HEADER_BYTES + put_name(buf + DNS_HEADER_BYTES, long_name, 4);
	memcpy(buf + n, T_A_IN, 4);
	CU_ASSERT_EQUAL(dns_parse_query(buf, n + 4, &q, &err), DNS_INVALID);
	CU_ASSERT_STRING_EQUAL(err, "question name longer than 255 bytes");

	/* Short labels. */
	n = DNS_HEADER_BYTES + put_name(buf + DNS_HEADER_BYTES, dots, 10);
	memcpy(buf + n, T_A_IN, 4);
	CU_ASSERT_EQUAL(dns_parse_query(buf, n + 4, &q, &err), DNS_OK);
	CU_ASSERT_STRING_EQUAL(q.name, "a.b.c.d.e.f.g.h.i.j");

	/* A query longer than DNS_QUERY_MAX_BYTES, however well formed:
	 * an OPT record whose PADDING option makes it one byte too long.
	 * One byte less of padding is accepted. */
	n = sizeof(H_QD1_AR1 N_EXAMPLE T_A_IN) - 1;
	memcpy(buf, H_QD1_AR1 N_EXAMPLE T_A_IN, n);
	MEMCPY_LIT(buf + n, "\x00\x00\x29\x04\xd0\x00\x00\x00\x00");
	n += 9;
	rd = DNS_QUERY_MAX_BYTES + 1 - (n + 2);
	put_padding(buf + n, rd);
	CU_ASSERT_EQUAL(dns_parse_query(buf, n + 2 + rd, &q, &err),
	    DNS_INVALID);
	CU_ASSERT_STRING_EQUAL(err, "query longer than moat accepts");
	put_padding(buf + n, rd - 1);
	CU_ASSERT_EQUAL(n + 2 + rd - 1, DNS_QUERY_MAX_BYTES);
	CU_ASSERT_EQUAL(dns_parse_query(buf, n + 2 + rd - 1, &q, &err),
	    DNS_OK);
}

/* ------------------------------------------------------------------ */
/* A decoder for the builders' output, independent of dns_parse.c       */
/* ------------------------------------------------------------------ */

#define DEC_MAX_RR	128
#define DEC_MAX_HOPS	16

struct dec_rr {
	char		 name[DNS_NAME_MAX + 2];
	bool		 compressed;
	uint16_t	 type;
	uint16_t	 class;
	uint32_t	 ttl;
	uint16_t	 rdlen;
	const uint8_t	*rdata;
};

struct dec {
	uint16_t	 id;
	uint16_t	 flags;
	uint16_t	 qd, an, ns, ar;
	char		 qname[DNS_NAME_MAX + 2];
	const uint8_t	*qwire;		/* question, name to QCLASS */
	size_t		 qwire_len;
	uint16_t	 qtype;
	uint16_t	 qclass;
	size_t		 nrr;
	struct dec_rr	 rr[DEC_MAX_RR];
	bool		 opt;
	uint16_t	 opt_size;
	uint32_t	 opt_ttl;
	uint16_t	 opt_rdlen;
};

static uint16_t
rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/*
 * A name at m[*off] into out (case kept, no final dot), following
 * pointers, which must point backwards; *off moves past the name where it
 * starts.  Returns 0 or -1.
 */
static int
dec_name(const uint8_t *m, size_t len, size_t *off, char *out, bool *ptr)
{
	size_t	p = *off, n = 0, hops = 0, end = 0;
	uint8_t	l;

	*ptr = false;
	for (;;) {
		if (p >= len)
			return -1;
		l = m[p];
		if ((l & 0xc0) == 0xc0) {
			if (p + 1 >= len || ++hops > DEC_MAX_HOPS)
				return -1;
			if (!*ptr)
				end = p + 2;
			*ptr = true;
			if (((size_t)(l & 0x3f) << 8 | m[p + 1]) >= p)
				return -1;
			p = (size_t)(l & 0x3f) << 8 | m[p + 1];
			continue;
		}
		if (l & 0xc0 || p + 1 + l > len)
			return -1;
		if (l == 0)
			break;
		if (n + l + 1 > DNS_NAME_MAX + 1)
			return -1;
		if (n > 0)
			out[n++] = '.';
		memcpy(out + n, m + p + 1, l);
		n += l;
		p += 1 + (size_t)l;
	}
	out[n] = '\0';
	*off = *ptr ? end : p + 1;
	return 0;
}

static int
decode(const uint8_t *m, size_t len, struct dec *d)
{
	struct dec_rr	*r;
	size_t		 off = DNS_HEADER_BYTES, i, start;
	char		 name[DNS_NAME_MAX + 2];
	bool		 ptr;

	memset(d, 0, sizeof(*d));
	if (len < DNS_HEADER_BYTES)
		return -1;
	d->id = rd16(m);
	d->flags = rd16(m + 2);
	d->qd = rd16(m + 4);
	d->an = rd16(m + 6);
	d->ns = rd16(m + 8);
	d->ar = rd16(m + 10);
	if (d->qd > 1 || d->ns != 0 || d->an > DEC_MAX_RR)
		return -1;
	if (d->qd == 1) {
		start = off;
		if (dec_name(m, len, &off, d->qname, &ptr) == -1 || ptr ||
		    len - off < 4)
			return -1;
		d->qtype = rd16(m + off);
		d->qclass = rd16(m + off + 2);
		off += 4;
		d->qwire = m + start;
		d->qwire_len = off - start;
	}
	for (i = 0; i < d->an; i++) {
		r = &d->rr[d->nrr++];
		if (dec_name(m, len, &off, r->name, &r->compressed) == -1 ||
		    len - off < 10)
			return -1;
		r->type = rd16(m + off);
		r->class = rd16(m + off + 2);
		r->ttl = (uint32_t)rd16(m + off + 4) << 16 | rd16(m + off + 6);
		r->rdlen = rd16(m + off + 8);
		off += 10;
		if (len - off < r->rdlen)
			return -1;
		r->rdata = m + off;
		off += r->rdlen;
	}
	for (i = 0; i < d->ar; i++) {
		if (dec_name(m, len, &off, name, &ptr) == -1 ||
		    name[0] != '\0' || ptr || len - off < 10 ||
		    rd16(m + off) != DNS_TYPE_OPT || d->opt)
			return -1;
		d->opt = true;
		d->opt_size = rd16(m + off + 2);
		d->opt_ttl = (uint32_t)rd16(m + off + 4) << 16 |
		    rd16(m + off + 6);
		d->opt_rdlen = rd16(m + off + 8);
		off += 10;
		if (len - off < d->opt_rdlen)
			return -1;
		off += d->opt_rdlen;
	}
	return off == len ? 0 : -1;
}

/* Header flags as the decoder sees them. */
#define F_QR		0x8000
#define F_OPCODE(f)	((f) >> 11 & 0x0f)
#define F_AA		0x0400
#define F_TC		0x0200
#define F_RD		0x0100
#define F_RA		0x0080
#define F_AD		0x0020
#define F_CD		0x0010
#define F_RCODE(f)	((f) & 0x0f)

static struct policy_addr
v4(const char *s)
{
	struct policy_addr	a;

	memset(&a, 0, sizeof(a));
	a.family = AF_INET;
	CU_ASSERT_EQUAL_FATAL(inet_pton(AF_INET, s, &a.u.v4), 1);
	return a;
}

static struct policy_addr
v6(const char *s)
{
	struct policy_addr	a;

	memset(&a, 0, sizeof(a));
	a.family = AF_INET6;
	CU_ASSERT_EQUAL_FATAL(inet_pton(AF_INET6, s, &a.u.v6), 1);
	return a;
}

/* Parses a captured or hand-made query that must be accepted. */
static void
must_parse(const uint8_t *in, size_t len, struct dns_query *q)
{
	const char	*err = NULL;

	CU_ASSERT_EQUAL_FATAL(dns_parse_query(in, len, q, &err), DNS_OK);
}

/* What every answer must say about the query it answers. */
static void
check_answers_query(const struct dec *d, const struct dns_query *q,
    uint16_t rcode)
{
	CU_ASSERT_EQUAL(d->id, q->id);
	CU_ASSERT_TRUE(d->flags & F_QR);
	CU_ASSERT_TRUE(d->flags & F_RA);
	CU_ASSERT_FALSE(d->flags & F_AA);
	CU_ASSERT_FALSE(d->flags & F_AD);
	CU_ASSERT_EQUAL(!!(d->flags & F_RD), q->rd);
	CU_ASSERT_EQUAL(!!(d->flags & F_CD), q->cd);
	CU_ASSERT_EQUAL(F_OPCODE(d->flags), q->opcode);
	CU_ASSERT_EQUAL(F_RCODE(d->flags), rcode & 0x0f);
	CU_ASSERT_EQUAL(d->qd, q->has_question ? 1 : 0);
	if (q->has_question) {
		CU_ASSERT_EQUAL(d->qwire_len, q->qname_len + 4);
		CU_ASSERT_EQUAL(memcmp(d->qwire, q->qname, q->qname_len), 0);
		CU_ASSERT_EQUAL(d->qtype, q->qtype);
		CU_ASSERT_EQUAL(d->qclass, q->qclass);
	}
	CU_ASSERT_EQUAL(d->opt, q->edns);
	if (d->opt) {
		CU_ASSERT_EQUAL(d->opt_size, DNS_UDP_MAX_BYTES);
		CU_ASSERT_EQUAL(d->opt_ttl >> 24, (uint32_t)(rcode >> 4));
		CU_ASSERT_EQUAL(d->opt_ttl >> 16 & 0xff, 0);	/* version */
		CU_ASSERT_EQUAL(!!(d->opt_ttl & 0x8000), q->edns_do);
		CU_ASSERT_EQUAL(d->opt_ttl & 0x7fff, 0);
		CU_ASSERT_EQUAL(d->opt_rdlen, 0);
	}
}

/* Answer record i is addr, named by a pointer to the question. */
static void
check_rr(const struct dec *d, size_t i, const struct dns_query *q,
    const struct policy_addr *a, uint32_t ttl)
{
	const struct dec_rr	*r = &d->rr[i];
	char			 qn[DNS_NAME_MAX + 2];
	size_t			 off = 0;
	bool			 ptr;

	CU_ASSERT_TRUE(r->compressed);
	CU_ASSERT_EQUAL_FATAL(dec_name(q->qname, q->qname_len, &off, qn,
	    &ptr), 0);
	CU_ASSERT_STRING_EQUAL(r->name, qn);
	CU_ASSERT_EQUAL(r->class, DNS_CLASS_IN);
	CU_ASSERT_EQUAL(r->ttl, ttl);
	if (a->family == AF_INET) {
		CU_ASSERT_EQUAL(r->type, DNS_TYPE_A);
		CU_ASSERT_EQUAL_FATAL(r->rdlen, 4);
		CU_ASSERT_EQUAL(memcmp(r->rdata, &a->u.v4, 4), 0);
	} else {
		CU_ASSERT_EQUAL(r->type, DNS_TYPE_AAAA);
		CU_ASSERT_EQUAL_FATAL(r->rdlen, 16);
		CU_ASSERT_EQUAL(memcmp(r->rdata, &a->u.v6, 16), 0);
	}
}

/* An answer is never taken for a query: no loops between servers. */
static void
check_not_a_query(const uint8_t *buf, int n)
{
	struct dns_query	 q2;
	uint8_t			 out[DNS_HEADER_BYTES];
	const char		*err = NULL;

	CU_ASSERT_EQUAL(dns_parse_query(buf, (size_t)n, &q2, &err),
	    DNS_INVALID);

	CU_ASSERT_EQUAL(dns_build_formerr(buf, (size_t)n, out, sizeof(out)),
	    -1);
}

static void
test_answer_a_aaaa(void)
{
	struct policy_addr	 a[3];
	struct dns_query	 q;
	struct dec		 d;
	uint8_t			 buf[DNS_TCP_MAX_BYTES];
	int			 n;

	a[0] = v4("192.0.2.1");
	a[1] = v6("2001:db8::1");
	a[2] = v4("198.51.100.7");

	/* glibc's A query for Example.COM: two A records, no OPT. */
	must_parse(V(q_glibc_ahosts_0), &q);
	n = dns_build_answer(&q, a, 3, 300, buf, sizeof(buf));
	CU_ASSERT_FATAL(n > 0);
	CU_ASSERT_EQUAL_FATAL(decode(buf, (size_t)n, &d), 0);
	check_answers_query(&d, &q, DNS_RCODE_NOERROR);
	CU_ASSERT_FALSE(d.flags & F_TC);
	CU_ASSERT_EQUAL_FATAL(d.an, 2);
	CU_ASSERT_EQUAL(d.ar, 0);
	check_rr(&d, 0, &q, &a[0], 300);
	check_rr(&d, 1, &q, &a[2], 300);
	/* Header, question, two records of 2 + 10 + 4 bytes. */
	CU_ASSERT_EQUAL(n, DNS_HEADER_BYTES + 13 + 4 + 2 * 16);
	/* The name keeps the client's case; the pointer is 0xc00c. */
	CU_ASSERT_STRING_EQUAL(d.rr[0].name, "Example.COM");
	CU_ASSERT_EQUAL(MEMCMP_LIT(buf + DNS_HEADER_BYTES + 17, "\xc0\x0c"),
	    0);
	check_not_a_query(buf, n);

	/* The same addresses for glibc's EDNS AAAA query. */
	must_parse(V(q_glibc_edns_ahosts_1), &q);
	n = dns_build_answer(&q, a, 3, 60, buf, sizeof(buf));
	CU_ASSERT_FATAL(n > 0);
	CU_ASSERT_EQUAL_FATAL(decode(buf, (size_t)n, &d), 0);
	check_answers_query(&d, &q, DNS_RCODE_NOERROR);
	CU_ASSERT_EQUAL_FATAL(d.an, 1);
	CU_ASSERT_EQUAL(d.ar, 1);
	check_rr(&d, 0, &q, &a[1], 60);
	check_not_a_query(buf, n);

	/* ANY gets both families, in the order given. */
	must_parse(V(q_cares_edns_3), &q);
	n = dns_build_answer(&q, a, 3, 60, buf, sizeof(buf));
	CU_ASSERT_FATAL(n > 0);
	CU_ASSERT_EQUAL_FATAL(decode(buf, (size_t)n, &d), 0);
	check_answers_query(&d, &q, DNS_RCODE_NOERROR);
	CU_ASSERT_EQUAL_FATAL(d.an, 3);
	check_rr(&d, 0, &q, &a[0], 60);
	check_rr(&d, 1, &q, &a[1], 60);
	check_rr(&d, 2, &q, &a[2], 60);

	/* HTTPS, PTR: no records of that type, NOERROR (NODATA). */
	must_parse(V(q_cares_edns_2), &q);
	n = dns_build_answer(&q, a, 3, 60, buf, sizeof(buf));
	CU_ASSERT_FATAL(n > 0);
	CU_ASSERT_EQUAL_FATAL(decode(buf, (size_t)n, &d), 0);
	check_answers_query(&d, &q, DNS_RCODE_NOERROR);
	CU_ASSERT_EQUAL(d.an, 0);
	must_parse(V(q_glibc_ptr_0), &q);
	n = dns_build_answer(&q, NULL, 0, 60, buf, sizeof(buf));
	CU_ASSERT_FATAL(n > 0);
	CU_ASSERT_EQUAL_FATAL(decode(buf, (size_t)n, &d), 0);
	check_answers_query(&d, &q, DNS_RCODE_NOERROR);
	CU_ASSERT_EQUAL(d.an, 0);
	CU_ASSERT_EQUAL(n, (int)sizeof(q_glibc_ptr_0) - 1);
}

static void
test_answer_flags_ttl(void)
{
	struct policy_addr	 a = v6("2001:db8::53");
	struct dns_query	 q;
	struct dec		 d;
	uint8_t			 buf[DNS_UDP_MAX_BYTES];
	int			 n;

	/* DO and CD come back; TTL above 2^31 - 1 is capped. */
	must_parse(V(q_dig_dnssec), &q);
	n = dns_build_answer(&q, &a, 1, 0xffffffffu, buf, sizeof(buf));
	CU_ASSERT_FATAL(n > 0);
	CU_ASSERT_EQUAL_FATAL(decode(buf, (size_t)n, &d), 0);
	check_answers_query(&d, &q, DNS_RCODE_NOERROR);
	CU_ASSERT_TRUE(d.flags & F_CD);
	CU_ASSERT_TRUE(d.opt_ttl & 0x8000);
	CU_ASSERT_EQUAL_FATAL(d.an, 1);
	check_rr(&d, 0, &q, &a, DNS_TTL_MAX);
	CU_ASSERT_STRING_EQUAL(d.rr[0].name, "WWW.example.com");

	/* TTL 0 stays 0; RD clear stays clear. */
	must_parse(B("\x00\x07\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00"
	    N_EXAMPLE "\x00\x1c\x00\x01"), &q);
	n = dns_build_answer(&q, &a, 1, 0, buf, sizeof(buf));
	CU_ASSERT_FATAL(n > 0);
	CU_ASSERT_EQUAL_FATAL(decode(buf, (size_t)n, &d), 0);
	check_answers_query(&d, &q, DNS_RCODE_NOERROR);
	CU_ASSERT_FALSE(d.flags & F_RD);
	check_rr(&d, 0, &q, &a, 0);
}

/* Fills a with n addresses of one family, or alternating if family is 0. */
static void
fill_addrs(struct policy_addr *a, size_t n, int family)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		memset(&a[i], 0, sizeof(a[i]));
		a[i].family = family != 0 ? family :
		    i % 2 == 0 ? AF_INET : AF_INET6;
		if (a[i].family == AF_INET) {
			a[i].u.v4.s_addr = htonl(0xc0000200u + (uint32_t)i);
		} else {
			a[i].u.v6.s6_addr[0] = 0x20;
			a[i].u.v6.s6_addr[1] = 0x01;
			a[i].u.v6.s6_addr[15] = (uint8_t)i;
		}
	}
}

/*
 * Over UDP the answer stops at the first record that does not fit the
 * limit, sets TC and keeps the OPT record; over TCP everything fits.
 */
static void
test_answer_truncation(void)
{
	static struct policy_addr	 a[100];
	struct dns_query		 q;
	struct dec			 d;
	static uint8_t			 buf[DNS_TCP_MAX_BYTES];
	size_t				 fixed, i;
	int				 n;

	/* No EDNS: 512.  Example.COM: 12 + 13 + 4 = 29, 16 per A. */
	fill_addrs(a, 100, AF_INET);
	must_parse(V(q_glibc_ahosts_0), &q);
	n = dns_build_answer(&q, a, 100, 30, buf, sizeof(buf));
	CU_ASSERT_FATAL(n > 0);
	CU_ASSERT(n <= DNS_UDP_PLAIN_MAX_BYTES);
	CU_ASSERT_EQUAL_FATAL(decode(buf, (size_t)n, &d), 0);
	check_answers_query(&d, &q, DNS_RCODE_NOERROR);
	CU_ASSERT_TRUE(d.flags & F_TC);
	CU_ASSERT_EQUAL(d.an, (512 - 29) / 16);
	for (i = 0; i < d.an; i++)
		check_rr(&d, i, &q, &a[i], 30);
	/* Exactly as many as fit: no truncation. */
	n = dns_build_answer(&q, a, (512 - 29) / 16, 30, buf, sizeof(buf));
	CU_ASSERT_EQUAL_FATAL(decode(buf, (size_t)n, &d), 0);
	CU_ASSERT_FALSE(d.flags & F_TC);
	CU_ASSERT_EQUAL(d.an, (512 - 29) / 16);

	/* EDNS 1200 (glibc): the OPT record counts and stays. */
	must_parse(V(q_glibc_edns_ahosts_0), &q);
	fixed = DNS_HEADER_BYTES + 17 + 4 + 11;
	n = dns_build_answer(&q, a, 100, 30, buf, sizeof(buf));
	CU_ASSERT(n > 0 && n <= 1200);
	CU_ASSERT_EQUAL_FATAL(decode(buf, (size_t)n, &d), 0);
	check_answers_query(&d, &q, DNS_RCODE_NOERROR);
	CU_ASSERT_TRUE(d.flags & F_TC);
	CU_ASSERT_TRUE(d.opt);
	CU_ASSERT_EQUAL(d.an, (1200 - fixed) / 16);

	/* EDNS 4096 is capped at DNS_UDP_MAX_BYTES. */
	must_parse(V(q_dig_dnssec), &q);
	fill_addrs(a, 100, AF_INET6);
	fixed = DNS_HEADER_BYTES + 17 + 4 + 11;
	n = dns_build_answer(&q, a, 100, 30, buf, sizeof(buf));
	CU_ASSERT(n > 0 && n <= DNS_UDP_MAX_BYTES);
	CU_ASSERT_EQUAL_FATAL(decode(buf, (size_t)n, &d), 0);
	CU_ASSERT_TRUE(d.flags & F_TC);
	CU_ASSERT_EQUAL(d.an, (DNS_UDP_MAX_BYTES - fixed) / 28);

	/* EDNS below 512 counts as 512. */
	must_parse(B(H_QD1_AR1 N_EXAMPLE T_A_IN
	    "\x00\x00\x29\x00\x80\x00\x00\x00\x00\x00\x00"), &q);
	fill_addrs(a, 100, AF_INET);
	fixed = DNS_HEADER_BYTES + 13 + 4 + 11;
	n = dns_build_answer(&q, a, 100, 30, buf, sizeof(buf));
	CU_ASSERT_EQUAL_FATAL(decode(buf, (size_t)n, &d), 0);
	CU_ASSERT_TRUE(d.flags & F_TC);
	CU_ASSERT_EQUAL(d.an, (512 - fixed) / 16);

	/* Over TCP, all 100, no TC. */
	q.transport = DNS_TRANSPORT_TCP;
	n = dns_build_answer(&q, a, 100, 30, buf, sizeof(buf));
	CU_ASSERT_EQUAL(n, (int)(fixed + 100 * 16));
	CU_ASSERT_EQUAL_FATAL(decode(buf, (size_t)n, &d), 0);
	CU_ASSERT_FALSE(d.flags & F_TC);
	CU_ASSERT_EQUAL(d.an, 100);

	/* ANY, mixed: stops at the first record that does not fit, even if
	 * a smaller A record after it would. */
	must_parse(V(q_node_0), &q);
	fill_addrs(a, 100, 0);
	n = dns_build_answer(&q, a, 100, 30, buf, sizeof(buf));
	CU_ASSERT(n > 0 && n <= DNS_UDP_PLAIN_MAX_BYTES);
	CU_ASSERT_EQUAL_FATAL(decode(buf, (size_t)n, &d), 0);
	CU_ASSERT_TRUE(d.flags & F_TC);
	for (i = 0; i < d.an; i++)
		check_rr(&d, i, &q, &a[i], 30);
	CU_ASSERT(n + (d.an % 2 == 0 ? 16 : 28) > DNS_UDP_PLAIN_MAX_BYTES);
}

static void
test_answer_refused(void)
{
	struct policy_addr	 a[2];
	struct dns_query	 q;
	uint8_t			 buf[DNS_UDP_MAX_BYTES];
	int			 n;

	a[0] = v4("192.0.2.1");
	a[1] = v4("192.0.2.2");
	must_parse(V(q_glibc_ahosts_0), &q);
	n = dns_build_answer(&q, a, 2, 60, buf, sizeof(buf));
	CU_ASSERT_EQUAL(n, 61);
	/* The buffer must hold all of it. */
	CU_ASSERT_EQUAL(dns_build_answer(&q, a, 2, 60, buf, 61), 61);
	CU_ASSERT_EQUAL(dns_build_answer(&q, a, 2, 60, buf, 60), -1);
	CU_ASSERT_EQUAL(dns_build_answer(&q, a, 2, 60, buf, 0), -1);
	/* Not an address. */
	a[1].family = AF_UNIX;
	CU_ASSERT_EQUAL(dns_build_answer(&q, a, 2, 60, buf, sizeof(buf)), -1);
	CU_ASSERT_EQUAL(dns_build_answer(&q, NULL, 1, 60, buf, sizeof(buf)),
	    -1);
	/* No question, or a query moat must not answer from policy. */
	must_parse(B("\x12\x34\x20\x00\x00\x00\x00\x00\x00\x00\x00\x00"), &q);
	CU_ASSERT_EQUAL(dns_build_answer(&q, a, 1, 60, buf, sizeof(buf)), -1);
	must_parse(B(H_QD1 N_EXAMPLE "\x00\x01\x00\x03"), &q);
	CU_ASSERT_EQUAL(q.rcode, DNS_RCODE_REFUSED);
	CU_ASSERT_EQUAL(dns_build_answer(&q, a, 1, 60, buf, sizeof(buf)), -1);
}

static void
test_build_error(void)
{
	static const uint16_t	 rcodes[] = { DNS_RCODE_NOERROR,
	    DNS_RCODE_FORMERR, DNS_RCODE_SERVFAIL, DNS_RCODE_NXDOMAIN,
	    DNS_RCODE_NOTIMP, DNS_RCODE_REFUSED };
	struct dns_query	 q;
	struct dec		 d;
	uint8_t			 buf[DNS_UDP_MAX_BYTES];
	size_t			 i;
	int			 n;

	/* Each rcode, with and without EDNS. */
	for (i = 0; i < sizeof(rcodes) / sizeof(rcodes[0]); i++) {
		must_parse(V(q_glibc_ahosts_0), &q);
		n = dns_build_error(&q, rcodes[i], buf, sizeof(buf));
		CU_ASSERT_EQUAL(n, (int)sizeof(q_glibc_ahosts_0) - 1);
		CU_ASSERT_EQUAL_FATAL(decode(buf, (size_t)n, &d), 0);
		check_answers_query(&d, &q, rcodes[i]);
		CU_ASSERT_EQUAL(d.an, 0);
		check_not_a_query(buf, n);

		must_parse(V(q_dig_cookie), &q);
		n = dns_build_error(&q, rcodes[i], buf, sizeof(buf));
		CU_ASSERT_FATAL(n > 0);
		CU_ASSERT_EQUAL_FATAL(decode(buf, (size_t)n, &d), 0);
		check_answers_query(&d, &q, rcodes[i]);
		CU_ASSERT_EQUAL(d.ar, 1);
	}

	/* BADVERS: RCODE 0 in the header, 1 in the OPT record. */
	must_parse(B(H_QD1_AR1 N_EXAMPLE T_A_IN
	    "\x00\x00\x29\x04\xd0\x00\x01\x80\x00\x00\x00"), &q);
	CU_ASSERT_EQUAL(q.rcode, DNS_RCODE_BADVERS);
	CU_ASSERT_TRUE(q.edns_do);
	n = dns_build_error(&q, q.rcode, buf, sizeof(buf));
	CU_ASSERT_FATAL(n > 0);
	CU_ASSERT_EQUAL_FATAL(decode(buf, (size_t)n, &d), 0);
	check_answers_query(&d, &q, DNS_RCODE_BADVERS);
	CU_ASSERT_EQUAL(F_RCODE(d.flags), 0);
	CU_ASSERT_EQUAL(d.opt_ttl >> 24, 1);
	CU_ASSERT_EQUAL(dns_build_error(&q, 4096, buf, sizeof(buf)), -1);
	/* Without EDNS an extended rcode cannot be said. */
	must_parse(V(q_glibc_ahosts_0), &q);
	CU_ASSERT_EQUAL(dns_build_error(&q, DNS_RCODE_BADVERS, buf,
	    sizeof(buf)), -1);

	/* NOTIMP for NOTIFY: opcode echoed, no question. */
	must_parse(B("\x12\x34\x21\x00\x00\x01\x00\x00\x00\x00\x00\x00"), &q);
	n = dns_build_error(&q, q.rcode, buf, sizeof(buf));
	CU_ASSERT_EQUAL(n, DNS_HEADER_BYTES);
	CU_ASSERT_EQUAL_FATAL(decode(buf, (size_t)n, &d), 0);
	check_answers_query(&d, &q, DNS_RCODE_NOTIMP);
	CU_ASSERT_EQUAL(F_OPCODE(d.flags), 4);

	/* REFUSED for a CH query echoes class CH. */
	must_parse(B(H_QD1 "\x07" "version" "\x04" "bind" "\x00"
	    "\x00\x10\x00\x03"), &q);
	n = dns_build_error(&q, q.rcode, buf, sizeof(buf));
	CU_ASSERT_EQUAL_FATAL(decode(buf, (size_t)n, &d), 0);
	check_answers_query(&d, &q, DNS_RCODE_REFUSED);
	CU_ASSERT_EQUAL(d.qclass, DNS_CLASS_CH);

	/* Too small a buffer. */
	must_parse(V(q_dig_cookie), &q);
	n = dns_build_error(&q, DNS_RCODE_NXDOMAIN, buf, sizeof(buf));
	CU_ASSERT_EQUAL(dns_build_error(&q, DNS_RCODE_NXDOMAIN, buf,
	    (size_t)n), n);
	CU_ASSERT_EQUAL(dns_build_error(&q, DNS_RCODE_NXDOMAIN, buf,
	    (size_t)n - 1), -1);
}

static void
test_build_formerr(void)
{
	uint8_t	out[DNS_HEADER_BYTES + 1];
	struct dec d;

	/* Two questions: refused by the parser, answered FORMERR. */
	memset(out, 0xaa, sizeof(out));
	CU_ASSERT_EQUAL(dns_build_formerr(B("\x9a\xbc\x01\x20\x00\x02\x00\x00"
	    "\x00\x00\x00\x00" "junk"), out, sizeof(out)), DNS_HEADER_BYTES);
	CU_ASSERT_EQUAL(memcmp(out, "\x9a\xbc\x81\x01\x00\x00\x00\x00"
	    "\x00\x00\x00\x00", DNS_HEADER_BYTES), 0);
	CU_ASSERT_EQUAL(out[DNS_HEADER_BYTES], 0xaa);
	CU_ASSERT_EQUAL_FATAL(decode(out, DNS_HEADER_BYTES, &d), 0);
	CU_ASSERT_EQUAL(F_RCODE(d.flags), DNS_RCODE_FORMERR);
	/* Opcode kept, RD clear kept clear. */
	CU_ASSERT_EQUAL(dns_build_formerr(B("\x00\x01\x28\x00\x00\x00\x00\x00"
	    "\x00\x00\x00\x00"), out, sizeof(out)), DNS_HEADER_BYTES);
	CU_ASSERT_EQUAL(MEMCMP_LIT(out, "\x00\x01\xa8\x01"), 0);
	/* A response is never answered. */
	CU_ASSERT_EQUAL(dns_build_formerr(B("\x00\x01\x81\x80\x00\x00\x00\x00"
	    "\x00\x00\x00\x00"), out, sizeof(out)), -1);
	/* Too short to have an ID, or no room. */
	CU_ASSERT_EQUAL(dns_build_formerr(B("\x00\x01\x01\x00\x00\x00\x00\x00"
	    "\x00\x00\x00"), out, sizeof(out)), -1);
	CU_ASSERT_EQUAL(dns_build_formerr(B("\x00\x01\x01\x00\x00\x00\x00\x00"
	    "\x00\x00\x00\x00"), out, DNS_HEADER_BYTES - 1), -1);
}

struct frame_vec {
	const uint8_t	*in;
	size_t		 len;
	int		 rc;
	const char	*err;
};

static const struct frame_vec frame_vecs[] = {
	{ B(""), .rc = DNS_NEED_MORE },
	{ B("\x00"), .rc = DNS_NEED_MORE },
	{ B("\x00\x0c"), .rc = DNS_NEED_MORE },
	{ B("\x00\x0c" "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b"),
	    .rc = DNS_NEED_MORE },
	{ B("\x00\x0c" "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c"),
	    .rc = 12 },
	/* The next message's bytes are not this one's business. */
	{ B("\x00\x0c" "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c"
	    "\x00\x0c\x01"), .rc = 12 },
	{ B("\x00\x00"), .rc = DNS_INVALID,
	    .err = "TCP message shorter than a DNS header" },
	{ B("\x00\x0b"), .rc = DNS_INVALID,
	    .err = "TCP message shorter than a DNS header" },
	{ B("\x04\xd1"), .rc = DNS_INVALID,
	    .err = "TCP message longer than moat accepts" },
	{ B("\xff\xff"), .rc = DNS_INVALID,
	    .err = "TCP message longer than moat accepts" },
};

static void
test_tcp_frame(void)
{
	static uint8_t		 buf[DNS_TCP_PREFIX_BYTES +
				     DNS_QUERY_MAX_BYTES];
	struct dns_query	 q;
	const struct frame_vec	*v;
	const char		*err;
	size_t			 i, k;
	int			 rc;

	for (i = 0; i < sizeof(frame_vecs) / sizeof(frame_vecs[0]); i++) {
		v = &frame_vecs[i];
		err = NULL;
		rc = dns_tcp_frame_len(v->in, v->len, &err);
		CHECK(rc == v->rc, i);
		if (v->err != NULL)
			CHECK(err != NULL && strcmp(err, v->err) == 0, i);
	}

	/* The largest message: need more until its last byte. */
	buf[0] = DNS_QUERY_MAX_BYTES >> 8;
	buf[1] = DNS_QUERY_MAX_BYTES & 0xff;
	memset(buf + 2, 0, DNS_QUERY_MAX_BYTES);
	for (k = 0; k < sizeof(buf); k++)
		CU_ASSERT_EQUAL(dns_tcp_frame_len(buf, k, &err), DNS_NEED_MORE);
	CU_ASSERT_EQUAL(dns_tcp_frame_len(buf, sizeof(buf), &err),
	    DNS_QUERY_MAX_BYTES);

	/* A framed real query parses from behind the prefix. */
	buf[0] = 0;
	buf[1] = sizeof(q_cares_edns_0) - 1;
	memcpy(buf + 2, q_cares_edns_0, sizeof(q_cares_edns_0) - 1);
	rc = dns_tcp_frame_len(buf, sizeof(q_cares_edns_0) + 1, &err);
	CU_ASSERT_EQUAL_FATAL(rc, (int)sizeof(q_cares_edns_0) - 1);
	CU_ASSERT_EQUAL(dns_parse_query(buf + DNS_TCP_PREFIX_BYTES,
	    (size_t)rc, &q, &err), DNS_OK);
	CU_ASSERT_STRING_EQUAL(q.name, "api.example.com");
}

void
test_dns_parse_register(void)
{
	CU_pSuite	s;

	if ((s = CU_add_suite("dns_parse", NULL, NULL)) == NULL)
		return;
	CU_add_test(s, "vectors", test_vectors);
	CU_add_test(s, "exact length", test_exact_length);
	CU_add_test(s, "fields", test_fields);
	CU_add_test(s, "name limits", test_name_limits);
	CU_add_test(s, "answer A/AAAA/ANY/NODATA", test_answer_a_aaaa);
	CU_add_test(s, "answer flags and TTL", test_answer_flags_ttl);
	CU_add_test(s, "answer truncation", test_answer_truncation);
	CU_add_test(s, "answer refused", test_answer_refused);
	CU_add_test(s, "error answers", test_build_error);
	CU_add_test(s, "FORMERR", test_build_formerr);
	CU_add_test(s, "TCP framing", test_tcp_frame);
}
