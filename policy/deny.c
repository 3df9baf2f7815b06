/*
 * deny.c - the built-in deny sets (DESIGN.md invariant 3).
 *
 * Before any rule is consulted, moat refuses cloud metadata endpoints and
 * special-purpose address ranges: a rule allowing "*" or 0.0.0.0/0 must
 * never reach 169.254.169.254 or the host's loopback.  Only
 * policy.allow_private lifts a range, and a metadata address only when an
 * entry names exactly that address, so opening 169.254.0.0/16 for a
 * link-local service still keeps the metadata endpoint shut.
 *
 * IPv6 forms that carry an IPv4 address (NAT64, 6to4, Teredo, mapped,
 * compatible) are denied as ranges of their own; if allow_private opens
 * one of them, the IPv4 address inside is checked too, so a NAT64 gateway
 * cannot become a path to 169.254.169.254.
 *
 * The tries of the table are built once and shared by every policy that
 * lives (deny_get, deny_put: refcounted under a mutex, freed with the
 * last policy), so that a moatd with a thousand sandbox policies holds
 * them once, not a thousand times.
 *
 * What it is not: a list of rules.  Nothing here is configurable except
 * through allow_private.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy_int.h"

/* The table's prefixes, by family; a node's value indexes deny_table. */
struct deny_sets {
	struct trie	v4, v6;
	unsigned	refs;		/* policies holding it, under deny_mu */
};

static pthread_mutex_t	 deny_mu = PTHREAD_MUTEX_INITIALIZER;
static struct deny_sets	*deny_shared;

struct deny_ent {
	const char		*addr;
	unsigned		 plen;
	enum policy_reason	 reason;
};

#define M	POLICY_R_METADATA
#define P	POLICY_R_PRIVATE_ADDRESS

static const struct deny_ent	deny_table[] = {
	/* Cloud metadata endpoints: lifted only by an exact entry. */
	{ "169.254.169.254", 32, M },	/* AWS, GCP, Azure, OpenStack ... */
	{ "169.254.170.2", 32, M },	/* AWS ECS task metadata */
	{ "169.254.169.253", 32, M },	/* AWS VPC DNS */
	{ "fd00:ec2::254", 128, M },	/* AWS IMDS over IPv6 */
	{ "fd00:ec2::253", 128, M },	/* AWS VPC DNS over IPv6 */
	{ "100.100.100.200", 32, M },	/* Alibaba Cloud */
	{ "168.63.129.16", 32, M },	/* Azure wire server (public) */
	{ "192.0.0.192", 32, M },	/* Oracle Cloud */
	/* IPv4 special-purpose ranges (RFC 6890 and friends). */
	{ "0.0.0.0", 8, P },		/* "this network" */
	{ "10.0.0.0", 8, P },		/* RFC 1918 */
	{ "100.64.0.0", 10, P },	/* CGNAT, RFC 6598 */
	{ "127.0.0.0", 8, P },		/* loopback */
	{ "169.254.0.0", 16, P },	/* link-local */
	{ "172.16.0.0", 12, P },	/* RFC 1918 */
	{ "192.0.0.0", 24, P },		/* IETF protocol assignments */
	{ "192.0.2.0", 24, P },		/* TEST-NET-1 */
	{ "192.88.99.0", 24, P },	/* 6to4 relay anycast */
	{ "192.168.0.0", 16, P },	/* RFC 1918 */
	{ "198.18.0.0", 15, P },	/* benchmarking */
	{ "198.51.100.0", 24, P },	/* TEST-NET-2 */
	{ "203.0.113.0", 24, P },	/* TEST-NET-3 */
	{ "224.0.0.0", 4, P },		/* multicast */
	{ "240.0.0.0", 4, P },		/* reserved, 255.255.255.255 */
	/* IPv6 special-purpose ranges. */
	{ "::", 128, P },		/* unspecified */
	{ "::1", 128, P },		/* loopback */
	{ "::ffff:0:0", 96, P },	/* IPv4-mapped */
	{ "::", 96, P },		/* IPv4-compatible (deprecated) */
	{ "64:ff9b::", 96, P },		/* NAT64, RFC 6052 */
	{ "64:ff9b:1::", 48, P },	/* local-use NAT64, RFC 8215 */
	{ "100::", 64, P },		/* discard-only */
	{ "2001::", 32, P },		/* Teredo */
	{ "2001:2::", 48, P },		/* benchmarking */
	{ "2001:10::", 28, P },		/* ORCHID */
	{ "2001:20::", 28, P },		/* ORCHIDv2 */
	{ "2001:db8::", 32, P },	/* documentation */
	{ "3fff::", 20, P },		/* documentation, RFC 9637 */
	{ "2002::", 16, P },		/* 6to4 */
	{ "fc00::", 7, P },		/* unique local */
	{ "fe80::", 10, P },		/* link-local */
	{ "fec0::", 10, P },		/* site-local (deprecated) */
	{ "ff00::", 8, P },		/* multicast */
};

#undef M
#undef P

/* Names of metadata services; their subdomains are denied as well. */
static const char *const	deny_metadata_names[] = {
	"metadata.google.internal",
	"metadata.goog",
	"metadata",
	"instance-data",
	"instance-data.ec2.internal",
	"metadata.tencentyun.com",
	"metadata.platformequinix.com",
};

#define DENY_NENT	(sizeof(deny_table) / sizeof(deny_table[0]))
#define DENY_NNAMES	(sizeof(deny_metadata_names) / \
			    sizeof(deny_metadata_names[0]))
#define DENY_LOCALHOST	"localhost"

static bool	deny_name_is(const char *name, size_t len, const char *d);
static enum policy_reason	deny_addr1(const struct policy *p,
				    const struct policy_addr *a);
static bool	deny_embedded(const struct policy_addr *a, int which,
		    struct policy_addr *v4);

static void
deny_sets_free(struct deny_sets *d)
{
	trie_free(&d->v4);
	trie_free(&d->v6);
	free(d);
}

static struct deny_sets *
deny_build(void)
{
	struct deny_sets	*d;
	struct policy_addr	 a;
	uint32_t		*v;
	size_t			 i;

	if ((d = calloc(1, sizeof(*d))) == NULL)
		return NULL;
	trie_init(&d->v4, ADDR_V4_BITS);
	trie_init(&d->v6, ADDR_V6_BITS);
	for (i = 0; i < DENY_NENT; i++) {
		memset(&a, 0, sizeof(a));
		if (inet_pton(AF_INET, deny_table[i].addr, &a.u.v4) == 1)
			a.family = AF_INET;
		else if (inet_pton(AF_INET6, deny_table[i].addr, &a.u.v6) == 1)
			a.family = AF_INET6;
		else
			goto fail;	/* a typo in the table above */
		v = trie_insert(a.family == AF_INET ? &d->v4 : &d->v6,
		    addr_bytes(&a), deny_table[i].plen);
		if (v == NULL)
			goto fail;
		*v = (uint32_t)i;
	}
	return d;
 fail:
	deny_sets_free(d);
	return NULL;
}

const struct deny_sets *
deny_get(void)
{
	struct deny_sets	*d;

	pthread_mutex_lock(&deny_mu);
	if (deny_shared == NULL)
		deny_shared = deny_build();
	if ((d = deny_shared) != NULL)
		d->refs++;
	pthread_mutex_unlock(&deny_mu);
	return d;
}

void
deny_put(const struct deny_sets *d)
{
	if (d == NULL)
		return;
	pthread_mutex_lock(&deny_mu);
	if (d == deny_shared && --deny_shared->refs == 0) {
		deny_sets_free(deny_shared);
		deny_shared = NULL;
	}
	pthread_mutex_unlock(&deny_mu);
}

/* True if name is d or a subdomain of d. */
static bool
deny_name_is(const char *name, size_t len, const char *d)
{
	size_t	dlen = strlen(d);

	if (len == dlen)
		return memcmp(name, d, len) == 0;
	return len > dlen && name[len - dlen - 1] == '.' &&
	    memcmp(name + len - dlen, d, dlen) == 0;
}

enum policy_reason
deny_name(const char *name)
{
	size_t	len = strlen(name), i;

	for (i = 0; i < DENY_NNAMES; i++)
		if (deny_name_is(name, len, deny_metadata_names[i]))
			return POLICY_R_METADATA;
	if (deny_name_is(name, len, DENY_LOCALHOST))
		return POLICY_R_PRIVATE_ADDRESS;
	return POLICY_R_ALLOWED;
}

/* The deny sets and allow_private for one address, no embedding. */
static enum policy_reason
deny_addr1(const struct policy *p, const struct policy_addr *a)
{
	const struct trie	*dt, *at;
	uint32_t		 vals[TRIE_MATCH_MAX], avals[TRIE_MATCH_MAX];
	unsigned		 aplens[TRIE_MATCH_MAX], bits;
	size_t			 k, ak;
	const struct deny_ent	*e;

	bits = addr_bits(a->family);
	dt = a->family == AF_INET ? &p->deny->v4 : &p->deny->v6;
	at = a->family == AF_INET ? &p->ap4 : &p->ap6;
	if ((k = trie_match(dt, addr_bytes(a), bits, vals, NULL)) == 0)
		return POLICY_R_ALLOWED;
	e = &deny_table[vals[k - 1]];	/* the most specific range */
	ak = trie_match(at, addr_bytes(a), bits, avals, aplens);
	if (ak == 0)
		return e->reason;
	/*
	 * "Names the range explicitly": the entry must lie inside the denied
	 * range it lifts (10.0.0.0/8 or 10.1.0.0/16 open 10.1.2.3, but
	 * 0.0.0.0/0 opens no special range, and ::/96 does not open ::1), and
	 * a metadata address needs an entry that is exactly that address.
	 */
	if (aplens[ak - 1] < e->plen)
		return e->reason;
	if (e->reason == POLICY_R_METADATA && aplens[ak - 1] != bits)
		return e->reason;
	return POLICY_R_ALLOWED;
}

/*
 * The IPv4 address that an IPv6 address of an embedding range carries:
 * which 0 = NAT64 / mapped / compatible / 6to4 / Teredo client,
 * which 1 = Teredo server.  Returns false if there is none.
 */
static bool
deny_embedded(const struct policy_addr *a, int which, struct policy_addr *v4)
{
	const uint8_t	*b = a->u.v6.s6_addr;
	static const uint8_t	nat64[12] = { 0, 0x64, 0xff, 0x9b };
	static const uint8_t	zero10[10];
	int		i;

	memset(v4, 0, sizeof(*v4));
	v4->family = AF_INET;
	if (a->family != AF_INET6)
		return false;
	/* :: and ::1 are the unspecified and loopback addresses, not
	 * IPv4-compatible ones (RFC 4291 §2.5.5.1): they embed nothing, so
	 * allow_private "::1/128" opens ::1 without opening 0.0.0.1. */
	if (which == 0 && memcmp(b, zero10, 10) == 0 && b[10] == 0 &&
	    b[11] == 0 && b[12] == 0 && b[13] == 0 && b[14] == 0 && b[15] < 2)
		return false;
	if (which == 0 && (memcmp(b, nat64, 12) == 0 ||
	    (memcmp(b, zero10, 10) == 0 && b[10] == b[11] &&
	    (b[10] == 0xff || b[10] == 0)))) {
		memcpy(&v4->u.v4.s_addr, b + 12, 4);
		return true;
	}
	if (which == 0 && b[0] == 0x20 && b[1] == 0x02) {
		memcpy(&v4->u.v4.s_addr, b + 2, 4);
		return true;
	}
	if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0) {
		uint8_t	*o = (uint8_t *)&v4->u.v4.s_addr;

		/* Teredo: server at bits 32-63, client obfuscated at 96-127. */
		for (i = 0; i < 4; i++)
			o[i] = which == 0 ? (uint8_t)~b[12 + i] : b[4 + i];
		return true;
	}
	return false;
}

enum policy_reason
deny_addr(const struct policy *p, const struct policy_addr *addr)
{
	struct policy_addr	v4;
	enum policy_reason	r;
	int			which;

	if ((r = deny_addr1(p, addr)) != POLICY_R_ALLOWED)
		return r;
	for (which = 0; which < 2; which++)
		if (deny_embedded(addr, which, &v4) &&
		    (r = deny_addr1(p, &v4)) != POLICY_R_ALLOWED)
			return r;
	return POLICY_R_ALLOWED;
}

bool
deny_cidr_inside(const struct policy *p, const struct addr_cidr *c,
    bool *lifted, enum policy_reason *reason)
{
	const struct trie	*dt, *at;
	uint32_t		 vals[TRIE_MATCH_MAX], avals[TRIE_MATCH_MAX];
	unsigned		 aplens[TRIE_MATCH_MAX];
	size_t			 k, ak;
	const struct deny_ent	*e;

	dt = c->addr.family == AF_INET ? &p->deny->v4 : &p->deny->v6;
	at = c->addr.family == AF_INET ? &p->ap4 : &p->ap6;
	*lifted = false;
	*reason = POLICY_R_ALLOWED;
	if ((k = trie_match(dt, addr_bytes(&c->addr), c->plen, vals,
	    NULL)) == 0)
		return false;
	e = &deny_table[vals[k - 1]];
	*reason = e->reason;
	ak = trie_match(at, addr_bytes(&c->addr), c->plen, avals, aplens);
	if (ak > 0 && aplens[ak - 1] >= e->plen)
		*lifted = e->reason != POLICY_R_METADATA ||
		    aplens[ak - 1] == addr_bits(c->addr.family);
	return true;
}

bool
deny_cidr_overlaps(const struct policy *p, const struct addr_cidr *c)
{
	return trie_overlaps(c->addr.family == AF_INET ? &p->deny->v4 :
	    &p->deny->v6, addr_bytes(&c->addr), c->plen);
}

enum policy_reason
policy_builtin_denied(const struct policy *p, const char *name,
    const struct policy_addr *addr)
{
	enum policy_reason	r = POLICY_R_ALLOWED;

	if (p == NULL)
		return POLICY_R_INTERNAL;
	if (name != NULL && (r = deny_name(name)) != POLICY_R_ALLOWED)
		return r;
	if (addr != NULL)
		r = deny_addr(p, addr);
	return r;
}
