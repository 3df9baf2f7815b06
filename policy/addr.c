/*
 * addr.c - IP addresses and CIDR prefixes.
 *
 * What it is: conversions between text, sockaddrs and struct policy_addr,
 * bit access for the tries, and the strict parser of the CIDRs written in
 * a config.  What it is not: the lenient host normaliser (host.c), which
 * accepts every spelling a client may use; a config author writes CIDRs in
 * their standard form only, so "10/8" is an error here, not 0.0.0.10/8.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <stdio.h>
#include <string.h>

#include "policy/policy_int.h"

/* Longest literal accepted, brackets included. */
#define ADDR_IN_MAX	(INET6_ADDRSTRLEN + 2)
#define ADDR_MAPPED_PLEN	96	/* ::ffff:0:0/96 */

static bool	addr_is_mapped(const struct in6_addr *a);

static const uint8_t	addr_mapped_prefix[12] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
};

static bool
addr_is_mapped(const struct in6_addr *a)
{
	return memcmp(a->s6_addr, addr_mapped_prefix,
	    sizeof(addr_mapped_prefix)) == 0;
}

unsigned
addr_bits(int family)
{
	return family == AF_INET ? ADDR_V4_BITS : ADDR_V6_BITS;
}

const uint8_t *
addr_bytes(const struct policy_addr *a)
{
	if (a->family == AF_INET)
		return (const uint8_t *)&a->u.v4.s_addr;
	return a->u.v6.s6_addr;
}

int
addr_bit(const uint8_t *p, unsigned i)
{
	return (p[i / 8] >> (7 - i % 8)) & 1;
}

bool
addr_mask(struct policy_addr *a, unsigned plen)
{
	uint8_t		*p;
	unsigned	 nbytes, i;
	bool		 set = false;
	uint8_t		 keep;

	p = (uint8_t *)addr_bytes(a);
	nbytes = addr_bits(a->family) / 8;
	for (i = plen / 8; i < nbytes; i++) {
		keep = 0;
		if (i == plen / 8 && plen % 8 != 0)
			keep = (uint8_t)(0xff << (8 - plen % 8));
		if ((p[i] & ~keep) != 0)
			set = true;
		p[i] &= keep;
	}
	return set;
}

bool
addr_in_cidr(const struct policy_addr *a, const struct addr_cidr *c)
{
	const uint8_t	*x, *y;
	unsigned	 i;

	if (a->family != c->addr.family)
		return false;
	x = addr_bytes(a);
	y = addr_bytes(&c->addr);
	for (i = 0; i < c->plen; i++)
		if (addr_bit(x, i) != addr_bit(y, i))
			return false;
	return true;
}

char *
policy_addr_format(const struct policy_addr *addr, char *buf, size_t len)
{
	if (len == 0)
		return buf;
	if (addr->family == AF_INET && len >= INET_ADDRSTRLEN) {
		/* inet_ntop goes through sprintf: ~1,700 instructions a call,
		 * and the proxy formats an address or two per request. */
		const unsigned char *b = addr_bytes(addr);
		char *p = buf;
		int i;

		for (i = 0; i < 4; i++) {
			unsigned v = b[i];

			if (v >= 100)
				*p++ = (char)('0' + v / 100);
			if (v >= 10)
				*p++ = (char)('0' + v / 10 % 10);
			*p++ = (char)('0' + v % 10);
			*p++ = i < 3 ? '.' : '\0';
		}
		return buf;
	}
	if (inet_ntop(addr->family, addr_bytes(addr), buf, len) == NULL)
		snprintf(buf, len, "?");
	return buf;
}

char *
addr_cidr_format(const struct addr_cidr *c, char *buf, size_t len)
{
	char	a[INET6_ADDRSTRLEN];

	policy_addr_format(&c->addr, a, sizeof(a));
	snprintf(buf, len, "%s/%u", a, c->plen);
	return buf;
}

int
policy_addr_from_sockaddr(const struct sockaddr *sa, struct policy_addr *out)
{
	const struct sockaddr_in	*sin;
	const struct sockaddr_in6	*sin6;

	memset(out, 0, sizeof(*out));
	if (sa == NULL)
		return -1;
	switch (sa->sa_family) {
	case AF_INET:
		sin = (const struct sockaddr_in *)sa;
		out->family = AF_INET;
		out->u.v4 = sin->sin_addr;
		return 0;
	case AF_INET6:
		sin6 = (const struct sockaddr_in6 *)sa;
		if (addr_is_mapped(&sin6->sin6_addr)) {
			out->family = AF_INET;
			memcpy(&out->u.v4.s_addr, &sin6->sin6_addr.s6_addr[12],
			    4);
			return 0;
		}
		out->family = AF_INET6;
		out->u.v6 = sin6->sin6_addr;
		return 0;
	default:
		return -1;
	}
}

int
addr_parse_strict(const char *in, size_t len, bool brackets,
    struct policy_addr *out)
{
	char	buf[ADDR_IN_MAX + 1];

	memset(out, 0, sizeof(*out));
	if (len == 0 || len > ADDR_IN_MAX)
		return -1;
	if (brackets && in[0] == '[') {
		if (len < 3 || in[len - 1] != ']')
			return -1;
		memcpy(buf, in + 1, len - 2);
		buf[len - 2] = '\0';
		out->family = AF_INET6;
		return inet_pton(AF_INET6, buf, &out->u.v6) == 1 ? 0 : -1;
	}
	memcpy(buf, in, len);
	buf[len] = '\0';
	if (inet_pton(AF_INET, buf, &out->u.v4) == 1) {
		out->family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, buf, &out->u.v6) == 1) {
		out->family = AF_INET6;
		return 0;
	}
	return -1;
}

int
addr_cidr_parse(const char *in, size_t len, struct addr_cidr *out,
    struct addr_cidr *fixed, const char **err)
{
	const char	*slash;
	size_t		 alen, i;
	unsigned	 plen = 0, max;

	memset(out, 0, sizeof(*out));
	if (len == 0) {
		*err = "empty CIDR";
		return -1;
	}
	slash = memchr(in, '/', len);
	alen = slash != NULL ? (size_t)(slash - in) : len;
	if (addr_parse_strict(in, alen, true, &out->addr) == -1) {
		*err = "not an IP address (write a dotted quad such as "
		    "192.0.2.0 or an IPv6 address, then /LENGTH)";
		return -1;
	}
	max = addr_bits(out->addr.family);
	if (slash == NULL)
		plen = max;
	else {
		size_t	ndig = len - alen - 1;

		if (ndig == 0 || ndig > 3) {
			*err = "bad prefix length after \"/\"";
			return -1;
		}
		for (i = alen + 1; i < len; i++) {
			if (in[i] < '0' || in[i] > '9') {
				*err = "bad prefix length after \"/\"";
				return -1;
			}
			plen = plen * 10 + (unsigned)(in[i] - '0');
		}
		if (ndig > 1 && in[alen + 1] == '0') {
			*err = "prefix length has a leading zero";
			return -1;
		}
		if (plen > max) {
			*err = out->addr.family == AF_INET ?
			    "prefix length longer than 32" :
			    "prefix length longer than 128";
			return -1;
		}
	}
	out->plen = plen;
	/*
	 * moat treats IPv4-mapped addresses as IPv4 everywhere, so a mapped
	 * prefix would silently mean an IPv4 one ("::ffff:0:0/96" would be
	 * 0.0.0.0/0): make the author write that instead.
	 */
	if (out->addr.family == AF_INET6 && plen >= ADDR_MAPPED_PLEN &&
	    addr_is_mapped(&out->addr.u.v6)) {
		*err = "an IPv4-mapped IPv6 prefix (moat treats these "
		    "addresses as IPv4: write the IPv4 prefix)";
		return -1;
	}
	if (fixed != NULL)
		*fixed = *out;
	if (addr_mask(fixed != NULL ? &fixed->addr : &out->addr, out->plen)) {
		*err = "host bits set past the prefix length";
		return -2;
	}
	return 0;
}
