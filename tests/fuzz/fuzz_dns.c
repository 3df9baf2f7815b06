/*
 * fuzz_dns.c - fuzz target for the DNS query parser, the answer builders
 * and the TCP framing helper (proxy/dns_parse.c).
 *
 * Properties, each an abort() when broken:
 * - the parser reads only the bytes given (the input is an exact-size
 *   copy, so AddressSanitizer sees a read past them), returns DNS_OK or
 *   DNS_INVALID, and sets *err exactly when it refuses or picks an rcode;
 * - what it accepts matches the wire, re-read here independently: the
 *   name is the question's labels, lower-cased, each byte printable and
 *   neither '.' nor '\'; a query with a question is exactly its length, so
 *   every proper prefix is refused;
 * - any query it accepts gets an answer (from addresses derived from the
 *   input, over UDP and over TCP) and an error answer that the decoder
 *   below reads back, with the same ID and question, records of the
 *   query's type in the order given, pointers to the question name, TC
 *   exactly when records were left out, no more than the size limit, and
 *   an OPT record exactly when the query had one; no answer is itself
 *   accepted as a query;
 * - FORMERR answers copy the ID and are refused for responses;
 * - fed as a TCP stream, the framing helper says "need more" until the
 *   whole message is there and then gives one verdict for every longer
 *   prefix.
 */
#include "config.h"

#include <sys/socket.h>
#include <netinet/in.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/dns_parse.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define FUZZ_CHECK(c)	do { if (!(c)) abort(); } while (0)

#define ADDRS_MAX	96
#define NAME_HOPS_MAX	8
#define F_QR		0x8000
#define F_TC		0x0200
#define F_RD		0x0100
#define F_RA		0x0080

/* One answer record as the decoder read it. */
struct rec {
	uint16_t	 ptr;		/* the 2-byte owner name: a pointer */
	uint16_t	 type;
	uint16_t	 class;
	uint32_t	 ttl;
	uint16_t	 rdlen;
	const uint8_t	*rdata;
};

struct msg {
	uint16_t	 id;
	uint16_t	 flags;
	uint16_t	 qd, an, ns, ar;
	const uint8_t	*question;	/* QNAME QTYPE QCLASS */
	size_t		 question_len;
	struct rec	 rr[ADDRS_MAX];
	bool		 opt;
	uint32_t	 opt_ttl;
	uint16_t	 opt_size;
};

static uint32_t	hash(const uint8_t *, size_t);
static uint16_t	get16(const uint8_t *);
static size_t	skip_name(const uint8_t *, size_t, size_t);
static int	decode(const uint8_t *, size_t, struct msg *);
static void	check_query(const uint8_t *, size_t,
		    const struct dns_query *);
static size_t	make_addrs(uint32_t, struct policy_addr *);
static bool	wanted(uint16_t, int);
static void	check_answer(const struct dns_query *, const uint8_t *,
		    const struct policy_addr *, size_t, uint32_t);
static void	check_error(const struct dns_query *, uint16_t);
static void	check_formerr(const uint8_t *, size_t);
static void	check_tcp(const uint8_t *, size_t);
static void	check_prefix(const uint8_t *, size_t);

/* FNV-1a: a cheap, stable function of the input. */
static uint32_t
hash(const uint8_t *d, size_t n)
{
	uint32_t	h = 2166136261u;
	size_t		i;

	for (i = 0; i < n; i++)
		h = (h ^ d[i]) * 16777619u;
	return h;
}

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/*
 * Moves past an uncompressed name at m[off]; a pointer ends it (two
 * bytes).  Returns the offset after it, or 0 if it runs past len.
 */
static size_t
skip_name(const uint8_t *m, size_t len, size_t off)
{
	while (off < len) {
		if ((m[off] & 0xc0) == 0xc0)
			return off + 2 <= len ? off + 2 : 0;
		if (m[off] & 0xc0)
			return 0;
		if (m[off] == 0)
			return off + 1;
		off += 1 + (size_t)m[off];
	}
	return 0;
}

/* Reads a response: header, at most one question, answers, OPT. */
static int
decode(const uint8_t *m, size_t len, struct msg *d)
{
	size_t	off = DNS_HEADER_BYTES, end, i;

	memset(d, 0, sizeof(*d));
	if (len < DNS_HEADER_BYTES)
		return -1;
	d->id = get16(m);
	d->flags = get16(m + 2);
	d->qd = get16(m + 4);
	d->an = get16(m + 6);
	d->ns = get16(m + 8);
	d->ar = get16(m + 10);
	if (d->qd > 1 || d->an > ADDRS_MAX || d->ns != 0 || d->ar > 1)
		return -1;
	if (d->qd == 1) {
		if ((end = skip_name(m, len, off)) == 0 || len - end < 4 ||
		    (m[end - 2] & 0xc0) == 0xc0)
			return -1;
		d->question = m + off;
		d->question_len = end + 4 - off;
		off = end + 4;
	}
	for (i = 0; i < d->an; i++) {
		if (len - off < 12)
			return -1;
		d->rr[i].ptr = get16(m + off);
		d->rr[i].type = get16(m + off + 2);
		d->rr[i].class = get16(m + off + 4);
		d->rr[i].ttl = (uint32_t)get16(m + off + 6) << 16 |
		    get16(m + off + 8);
		d->rr[i].rdlen = get16(m + off + 10);
		off += 12;
		if (len - off < d->rr[i].rdlen)
			return -1;
		d->rr[i].rdata = m + off;
		off += d->rr[i].rdlen;
	}
	if (d->ar == 1) {
		if (len - off < 11 || m[off] != 0 ||
		    get16(m + off + 1) != DNS_TYPE_OPT ||
		    get16(m + off + 9) != 0)
			return -1;
		d->opt = true;
		d->opt_size = get16(m + off + 3);
		d->opt_ttl = (uint32_t)get16(m + off + 5) << 16 |
		    get16(m + off + 7);
		off += 11;
	}
	return off == len ? 0 : -1;
}

/* An accepted query, re-read from the wire. */
static void
check_query(const uint8_t *in, size_t len, const struct dns_query *q)
{
	char	name[DNS_NAME_MAX + 1];
	size_t	p = DNS_HEADER_BYTES, n = 0, i;
	uint8_t	c;

	FUZZ_CHECK(q->id == get16(in));
	FUZZ_CHECK(q->opcode == (in[2] >> 3 & 0x0f));
	FUZZ_CHECK(q->rd == ((in[2] & 0x01) != 0));
	FUZZ_CHECK(q->transport == DNS_TRANSPORT_UDP);
	if (q->opcode != DNS_OPCODE_QUERY) {
		FUZZ_CHECK(!q->has_question && q->rcode == DNS_RCODE_NOTIMP);
		return;
	}
	FUZZ_CHECK(q->has_question);
	FUZZ_CHECK(get16(in + 4) == 1 && get16(in + 6) == 0 &&
	    get16(in + 8) == 0 && get16(in + 10) <= 1);
	FUZZ_CHECK(q->qname_len >= 1 &&
	    q->qname_len <= DNS_NAME_WIRE_MAX_BYTES);
	FUZZ_CHECK(q->qname_len + 4 <= len - DNS_HEADER_BYTES);
	FUZZ_CHECK(memcmp(q->qname, in + p, q->qname_len) == 0);
	while (in[p] != 0) {
		FUZZ_CHECK(in[p] <= DNS_LABEL_MAX_BYTES);
		if (n > 0)
			name[n++] = '.';
		for (i = 1; i <= in[p]; i++) {
			c = in[p + i];
			FUZZ_CHECK(c > 0x20 && c < 0x7f && c != '.' &&
			    c != '\\');
			name[n++] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
		}
		p += 1 + (size_t)in[p];
	}
	FUZZ_CHECK(p + 1 - DNS_HEADER_BYTES == q->qname_len);
	name[n] = '\0';
	FUZZ_CHECK(n == q->name_len && n <= DNS_NAME_MAX);
	FUZZ_CHECK(strcmp(name, q->name) == 0);
	p++;
	FUZZ_CHECK(q->qtype == get16(in + p) && q->qclass == get16(in + p + 2));
	FUZZ_CHECK(q->qtype != 0 && q->qtype != DNS_TYPE_OPT);
	p += 4;
	FUZZ_CHECK(q->edns == (p < len));
	if (q->edns)
		FUZZ_CHECK(q->edns_udp_size == get16(in + p + 3));
	if (q->rcode == DNS_RCODE_NOERROR)
		FUZZ_CHECK(q->qclass == DNS_CLASS_IN &&
		    (!q->edns || q->edns_version == 0));
}

/* 0..ADDRS_MAX-1 addresses, families mixed by the bits of h. */
static size_t
make_addrs(uint32_t h, struct policy_addr *a)
{
	size_t	n = h % ADDRS_MAX, i;

	for (i = 0; i < n; i++) {
		memset(&a[i], 0, sizeof(a[i]));
		a[i].family = (h >> (i % 32)) & 1 ? AF_INET6 : AF_INET;
		if (a[i].family == AF_INET)
			a[i].u.v4.s_addr = htonl(0xc6336400u + (uint32_t)i);
		else {
			a[i].u.v6.s6_addr[0] = 0x20;
			a[i].u.v6.s6_addr[1] = 0x01;
			a[i].u.v6.s6_addr[14] = (uint8_t)(h >> 8);
			a[i].u.v6.s6_addr[15] = (uint8_t)i;
		}
	}
	return n;
}

static bool
wanted(uint16_t qtype, int family)
{
	return qtype == DNS_TYPE_ANY ||
	    (qtype == DNS_TYPE_A && family == AF_INET) ||
	    (qtype == DNS_TYPE_AAAA && family == AF_INET6);
}

static void
check_answer(const struct dns_query *q, const uint8_t *in,
    const struct policy_addr *a, size_t na, uint32_t ttl)
{
	static uint8_t		 buf[DNS_TCP_MAX_BYTES];
	struct dns_query	 q2;
	struct msg		 d;
	const char		*err;
	size_t			 limit, i, k, match = 0;
	int			 n;

	for (i = 0; i < na; i++)
		if (wanted(q->qtype, a[i].family))
			match++;
	n = dns_build_answer(q, a, na, ttl, buf, sizeof(buf));
	FUZZ_CHECK(n > 0);
	if (q->transport == DNS_TRANSPORT_TCP)
		limit = DNS_TCP_MAX_BYTES;
	else if (!q->edns || q->edns_udp_size <= DNS_UDP_PLAIN_MAX_BYTES)
		limit = DNS_UDP_PLAIN_MAX_BYTES;
	else
		limit = q->edns_udp_size < DNS_UDP_MAX_BYTES ?
		    q->edns_udp_size : DNS_UDP_MAX_BYTES;
	FUZZ_CHECK((size_t)n <= limit);
	FUZZ_CHECK(decode(buf, (size_t)n, &d) == 0);
	FUZZ_CHECK(d.id == q->id);
	FUZZ_CHECK((d.flags & (F_QR | F_RA)) == (F_QR | F_RA));
	FUZZ_CHECK(((d.flags & F_RD) != 0) == q->rd);
	FUZZ_CHECK((d.flags & 0x7800) == 0 && (d.flags & 0x000f) == 0);
	FUZZ_CHECK(d.qd == 1);
	FUZZ_CHECK(d.question_len == q->qname_len + 4);
	FUZZ_CHECK(memcmp(d.question, in + DNS_HEADER_BYTES,
	    d.question_len) == 0);
	FUZZ_CHECK(((d.flags & 0x0010) != 0) == q->cd);
	FUZZ_CHECK((d.flags & 0x0400) == 0);		/* AA */
	/* TC exactly when records were left out, from the first that would
	 * not have fit on. */
	FUZZ_CHECK(d.an <= match);
	FUZZ_CHECK(((d.flags & F_TC) != 0) == (d.an < match));
	for (i = 0, k = 0; k < d.an || (k < match && i < na); i++) {
		FUZZ_CHECK(i < na);
		if (!wanted(q->qtype, a[i].family))
			continue;
		if (k == d.an) {
			FUZZ_CHECK(q->transport == DNS_TRANSPORT_UDP);
			FUZZ_CHECK((size_t)n + 12 +
			    (a[i].family == AF_INET ? 4 : 16) > limit);
			break;
		}
		FUZZ_CHECK(d.rr[k].ptr == (0xc000 | DNS_HEADER_BYTES));
		FUZZ_CHECK(d.rr[k].class == DNS_CLASS_IN);
		FUZZ_CHECK(d.rr[k].ttl == (ttl > DNS_TTL_MAX ? DNS_TTL_MAX :
		    ttl));
		if (a[i].family == AF_INET)
			FUZZ_CHECK(d.rr[k].type == DNS_TYPE_A &&
			    d.rr[k].rdlen == 4 &&
			    memcmp(d.rr[k].rdata, &a[i].u.v4, 4) == 0);
		else
			FUZZ_CHECK(d.rr[k].type == DNS_TYPE_AAAA &&
			    d.rr[k].rdlen == 16 &&
			    memcmp(d.rr[k].rdata, &a[i].u.v6, 16) == 0);
		k++;
	}
	FUZZ_CHECK(d.opt == q->edns);
	if (d.opt) {
		FUZZ_CHECK(d.opt_size == DNS_UDP_MAX_BYTES);
		FUZZ_CHECK(d.opt_ttl == (q->edns_do ? 0x8000u : 0));
	}
	/* An answer is never taken for a query. */
	err = NULL;
	FUZZ_CHECK(dns_parse_query(buf, (size_t)n, &q2, &err) ==
	    DNS_INVALID && err != NULL);
	FUZZ_CHECK(dns_build_formerr(buf, (size_t)n, buf, sizeof(buf)) == -1);
	/* One byte less of room is refused, never overrun. */
	FUZZ_CHECK(dns_build_answer(q, a, na, ttl, buf, (size_t)n - 1) == -1);
}

static void
check_error(const struct dns_query *q, uint16_t rcode)
{
	static uint8_t	 buf[DNS_UDP_MAX_BYTES];
	struct msg	 d;
	int		 n;

	n = dns_build_error(q, rcode, buf, sizeof(buf));
	if (rcode > 15 && !q->edns) {
		FUZZ_CHECK(n == -1);
		return;
	}
	FUZZ_CHECK(n >= DNS_HEADER_BYTES);
	FUZZ_CHECK(decode(buf, (size_t)n, &d) == 0);
	FUZZ_CHECK(d.id == q->id && (d.flags & F_QR) && d.an == 0);
	FUZZ_CHECK((d.flags & 0x000f) == (rcode & 0x0f));
	FUZZ_CHECK((d.flags >> 11 & 0x0f) == q->opcode);
	FUZZ_CHECK(d.qd == (q->has_question ? 1 : 0));
	if (q->has_question)
		FUZZ_CHECK(memcmp(d.question, q->qname, q->qname_len) == 0);
	FUZZ_CHECK(d.opt == q->edns);
	if (d.opt)
		FUZZ_CHECK(d.opt_ttl >> 24 == (uint32_t)(rcode >> 4));
	FUZZ_CHECK(dns_build_error(q, rcode, buf, (size_t)n - 1) == -1);
}

static void
check_formerr(const uint8_t *in, size_t len)
{
	uint8_t	out[DNS_HEADER_BYTES];
	int	n;

	n = dns_build_formerr(in, len, out, sizeof(out));
	if (len < DNS_HEADER_BYTES || (in[2] & 0x80)) {
		FUZZ_CHECK(n == -1);
		return;
	}
	FUZZ_CHECK(n == DNS_HEADER_BYTES);
	FUZZ_CHECK(out[0] == in[0] && out[1] == in[1]);
	FUZZ_CHECK(out[2] == (0x80 | (in[2] & 0x79)) && out[3] == 0x01);
	FUZZ_CHECK(MEMCMP_LIT(out + 4, "\0\0\0\0\0\0\0\0") == 0);
}

/* A proper prefix of an accepted query, as an exact-size copy. */
static void
check_prefix(const uint8_t *in, size_t k)
{
	struct dns_query	 q;
	const char		*err = NULL;
	uint8_t			*copy;

	if ((copy = malloc(k ? k : 1)) == NULL)
		abort();
	memcpy(copy, in, k);
	FUZZ_CHECK(dns_parse_query(copy, k, &q, &err) == DNS_INVALID &&
	    err != NULL);
	free(copy);
}

/* Prefixes of the input as a TCP stream. */
static void
check_tcp(const uint8_t *data, size_t size)
{
	const char	*err, *first_err = NULL;
	size_t		 k, n;
	int		 rc, first = DNS_NEED_MORE;

	n = size < DNS_TCP_PREFIX_BYTES + DNS_QUERY_MAX_BYTES + 1 ? size :
	    DNS_TCP_PREFIX_BYTES + DNS_QUERY_MAX_BYTES + 1;
	for (k = 0; k <= n; k++) {
		err = NULL;
		rc = dns_tcp_frame_len(data, k, &err);
		FUZZ_CHECK((rc == DNS_INVALID) == (err != NULL));
		if (first == DNS_NEED_MORE) {
			if (rc > 0)
				FUZZ_CHECK((size_t)rc + DNS_TCP_PREFIX_BYTES ==
				    k && rc >= DNS_HEADER_BYTES &&
				    rc <= DNS_QUERY_MAX_BYTES);
			if (rc == DNS_INVALID)
				FUZZ_CHECK(k == DNS_TCP_PREFIX_BYTES);
			first = rc;
			first_err = err;
			continue;
		}
		FUZZ_CHECK(rc == first && err == first_err);
	}
	if (first == DNS_NEED_MORE)
		FUZZ_CHECK(n < DNS_TCP_PREFIX_BYTES + DNS_QUERY_MAX_BYTES);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint16_t	 rcodes[] = { DNS_RCODE_NOERROR,
	    DNS_RCODE_FORMERR, DNS_RCODE_SERVFAIL, DNS_RCODE_NXDOMAIN,
	    DNS_RCODE_NOTIMP, DNS_RCODE_REFUSED, DNS_RCODE_BADVERS };
	struct policy_addr	 addrs[ADDRS_MAX];
	struct dns_query	 q;
	const char		*err = NULL;
	uint8_t			*in;
	uint32_t		 h;
	size_t			 na, k;
	int			 rc;

	check_tcp(data, size);
	if ((in = malloc(size ? size : 1)) == NULL)
		return 0;
	memcpy(in, data, size);
	rc = dns_parse_query(in, size, &q, &err);
	FUZZ_CHECK(rc == DNS_OK || rc == DNS_INVALID);
	if (rc == DNS_INVALID) {
		FUZZ_CHECK(err != NULL);
		check_formerr(in, size);
		goto out;
	}
	FUZZ_CHECK((q.rcode != DNS_RCODE_NOERROR) == (err != NULL));
	check_query(in, size, &q);
	if (q.has_question)
		for (k = 0; k < size; k++)
			check_prefix(in, k);
	h = hash(data, size);
	if (q.rcode == DNS_RCODE_NOERROR) {
		na = make_addrs(h, addrs);
		check_answer(&q, in, addrs, na, h * 2654435761u);
		q.transport = DNS_TRANSPORT_TCP;
		check_answer(&q, in, addrs, na, h);
		q.transport = DNS_TRANSPORT_UDP;
	} else
		FUZZ_CHECK(dns_build_answer(&q, addrs, 0, 0, in, size) == -1);
	check_error(&q, q.rcode);
	check_error(&q, rcodes[h % (sizeof(rcodes) / sizeof(rcodes[0]))]);
	check_formerr(in, size);
 out:
	free(in);
	return 0;
}
