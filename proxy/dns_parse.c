/*
 * dns_parse.c - DNS query parser and answer builders (RFC 1035, RFC 3596,
 * RFC 6891).  The contract is in dns_parse.h.
 *
 * What it is: offset arithmetic over one message, no I/O and no
 * allocation.  The parser walks the message once, front to back, with every
 * read bounds-checked against len; the builders write through a small
 * cursor that refuses to pass the end of the caller's buffer.
 *
 * Why so strict: the sandbox's stub resolver is the only peer, and stubs
 * send one question and at most an OPT record.  A name moatd decides on
 * must be the name a later component sees, so anything that two DNS
 * implementations could read differently (compression in the question,
 * bytes after the message, '.' or '\' inside a label, control bytes) is
 * refused rather than interpreted.
 */
#include <sys/socket.h>
#include <netinet/in.h>

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "proxy/dns_parse.h"

/* Header flag bits, in the 16-bit flags word. */
#define FLAG_QR			0x8000
#define FLAG_OPCODE_SHIFT	11
#define FLAG_OPCODE_MASK	0x0f
#define FLAG_AA			0x0400
#define FLAG_TC			0x0200
#define FLAG_RD			0x0100
#define FLAG_RA			0x0080
#define FLAG_Z			0x0040
#define FLAG_AD			0x0020
#define FLAG_CD			0x0010
#define FLAG_RCODE_MASK		0x000f

/* Offsets in the header. */
#define HDR_ID			0
#define HDR_FLAGS		2
#define HDR_QDCOUNT		4
#define HDR_ANCOUNT		6
#define HDR_NSCOUNT		8
#define HDR_ARCOUNT		10

/* Label length byte: top two bits select the kind (RFC 1035 §4.1.4). */
#define LABEL_KIND_MASK		0xc0
#define LABEL_KIND_POINTER	0xc0

/* A compression pointer to the question name, which starts right after
 * the header. */
#define NAME_PTR_TO_QUESTION	(0xc000 | DNS_HEADER_BYTES)

/* Fixed parts of records. */
#define QUESTION_FIXED_BYTES	4	/* QTYPE QCLASS */
#define RR_FIXED_BYTES		10	/* TYPE CLASS TTL RDLENGTH */
#define OPT_RR_BYTES		11	/* root name + fixed part, no options */
#define EDNS_OPTION_HDR_BYTES	4	/* OPTION-CODE OPTION-LENGTH */
#define A_RDATA_BYTES		4
#define AAAA_RDATA_BYTES	16

/* OPT TTL field: EXTENDED-RCODE(8) VERSION(8) DO(1) Z(15). */
#define OPT_TTL_EXT_RCODE_SHIFT	24
#define OPT_TTL_VERSION_SHIFT	16
#define OPT_TTL_DO		0x00008000u

#define RCODE_LOW_BITS		4
#define RCODE_MAX		0x0fff	/* 4 header bits + 8 OPT bits */

/* Where a builder writes: buf[0..size), len bytes so far. */
struct wbuf {
	uint8_t	*buf;
	size_t	 size;
	size_t	 len;
	bool	 overflow;
};

static uint16_t	get16(const uint8_t *);
static uint32_t	get32(const uint8_t *);
static int	header_parse(const uint8_t *, size_t, struct dns_query *,
		    const char **);
static int	qname_parse(const uint8_t *, size_t, size_t *,
		    struct dns_query *, const char **);
static int	question_parse(const uint8_t *, size_t, size_t *,
		    struct dns_query *, const char **);
static int	opt_parse(const uint8_t *, size_t, size_t *,
		    struct dns_query *, const char **);
static bool	label_byte_ok(uint8_t);
static void	w_bytes(struct wbuf *, const void *, size_t);
static void	w_u16(struct wbuf *, uint16_t);
static void	w_u32(struct wbuf *, uint32_t);
static void	w_header(struct wbuf *, const struct dns_query *, uint16_t,
		    uint16_t, uint16_t, uint16_t, uint16_t);
static void	w_question(struct wbuf *, const struct dns_query *);
static void	w_opt(struct wbuf *, const struct dns_query *, uint16_t);
static size_t	udp_limit(const struct dns_query *);
static bool	type_matches(uint16_t, int);

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

/*
 * Header checks common to every opcode.  Counts are checked by the
 * caller, since their meaning depends on the opcode.
 */
static int
header_parse(const uint8_t *buf, size_t len, struct dns_query *out,
    const char **err)
{
	uint16_t	f;

	if (len < DNS_HEADER_BYTES) {
		*err = "message shorter than a DNS header";
		return DNS_INVALID;
	}
	f = get16(buf + HDR_FLAGS);
	if (f & FLAG_QR) {
		*err = "message is a response, not a query";
		return DNS_INVALID;
	}
	if (f & FLAG_TC) {
		*err = "TC set in a query";
		return DNS_INVALID;
	}
	if (f & FLAG_Z) {
		*err = "reserved header bit Z set";
		return DNS_INVALID;
	}
	if (f & FLAG_RCODE_MASK) {
		*err = "RCODE not zero in a query";
		return DNS_INVALID;
	}
	out->id = get16(buf + HDR_ID);
	out->opcode = (uint8_t)(f >> FLAG_OPCODE_SHIFT & FLAG_OPCODE_MASK);
	out->rd = (f & FLAG_RD) != 0;
	out->cd = (f & FLAG_CD) != 0;
	return DNS_OK;
}

/*
 * A label byte moat can put in presentation form without escaping: a
 * visible ASCII character other than '.' (it would split the label) and
 * '\' (the escape character of presentation form, RFC 4343 §2.1).
 */
static bool
label_byte_ok(uint8_t c)
{
	return c >= 0x21 && c <= 0x7e && c != '.' && c != '\\';
}

/*
 * QNAME at buf[*off]: labels up to the root label.  Fills out->qname
 * (wire form as sent) and out->name (presentation form, lower case) and
 * moves *off past it.
 */
static int
qname_parse(const uint8_t *buf, size_t len, size_t *off,
    struct dns_query *out, const char **err)
{
	size_t	p = *off, start = *off, n = 0, i;
	uint8_t	l, c;

	for (;;) {
		if (p >= len) {
			*err = "question name runs past the message";
			return DNS_INVALID;
		}
		l = buf[p];
		if ((l & LABEL_KIND_MASK) == LABEL_KIND_POINTER) {
			*err = "compression pointer in question";
			return DNS_INVALID;
		}
		if (l & LABEL_KIND_MASK) {
			*err = "extended label type in question";
			return DNS_INVALID;
		}
		/* l <= 63 here; the final root label counts in the 255. */
		if (p - start + 1 + l > DNS_NAME_WIRE_MAX_BYTES) {
			*err = "question name longer than 255 bytes";
			return DNS_INVALID;
		}
		if (l == 0)
			break;
		if (len - p - 1 < l) {
			*err = "question name runs past the message";
			return DNS_INVALID;
		}
		if (n > 0)
			out->name[n++] = '.';
		for (i = 1; i <= l; i++) {
			c = buf[p + i];
			if (!label_byte_ok(c)) {
				*err = c == '.' ? "'.' inside a label" :
				    c == '\0' ? "NUL byte in a label" :
				    "label byte not printable ASCII";
				return DNS_INVALID;
			}
			if (c >= 'A' && c <= 'Z')
				c = (uint8_t)(c - 'A' + 'a');
			out->name[n++] = (char)c;
		}
		p += 1 + (size_t)l;
	}
	p++;				/* the root label */
	out->name[n] = '\0';
	out->name_len = n;
	out->qname_len = p - start;
	memcpy(out->qname, buf + start, out->qname_len);
	*off = p;
	return DNS_OK;
}

static int
question_parse(const uint8_t *buf, size_t len, size_t *off,
    struct dns_query *out, const char **err)
{
	if (qname_parse(buf, len, off, out, err) == DNS_INVALID)
		return DNS_INVALID;
	if (len - *off < QUESTION_FIXED_BYTES) {
		*err = "question truncated";
		return DNS_INVALID;
	}
	out->qtype = get16(buf + *off);
	out->qclass = get16(buf + *off + 2);
	*off += QUESTION_FIXED_BYTES;
	if (out->qtype == 0 || out->qtype == DNS_TYPE_OPT) {
		*err = out->qtype == 0 ? "QTYPE 0 is reserved" :
		    "QTYPE OPT is not a query type";
		return DNS_INVALID;
	}
	out->has_question = true;
	return DNS_OK;
}

/*
 * The one record allowed in the additional section: an EDNS0 OPT record
 * (RFC 6891 §6.1.2).  Options are only bounds-checked: moat uses none of
 * them and echoes none.
 */
static int
opt_parse(const uint8_t *buf, size_t len, size_t *off, struct dns_query *out,
    const char **err)
{
	size_t		p = *off, end, olen;
	uint32_t	ttl;
	uint16_t	rdlen;

	if (p >= len) {
		*err = "additional record truncated";
		return DNS_INVALID;
	}
	if (buf[p] != 0) {
		*err = "additional record is not an EDNS0 OPT record";
		return DNS_INVALID;
	}
	p++;
	if (len - p < RR_FIXED_BYTES) {
		*err = "additional record truncated";
		return DNS_INVALID;
	}
	if (get16(buf + p) != DNS_TYPE_OPT) {
		*err = "additional record is not an EDNS0 OPT record";
		return DNS_INVALID;
	}
	out->edns = true;
	out->edns_udp_size = get16(buf + p + 2);
	ttl = get32(buf + p + 4);
	rdlen = get16(buf + p + 8);
	p += RR_FIXED_BYTES;
	if (ttl >> OPT_TTL_EXT_RCODE_SHIFT != 0) {
		*err = "extended RCODE not zero in a query";
		return DNS_INVALID;
	}
	out->edns_version = (uint8_t)(ttl >> OPT_TTL_VERSION_SHIFT);
	out->edns_do = (ttl & OPT_TTL_DO) != 0;
	if (len - p < rdlen) {
		*err = "OPT record data runs past the message";
		return DNS_INVALID;
	}
	end = p + rdlen;
	while (p < end) {
		if (end - p < EDNS_OPTION_HDR_BYTES) {
			*err = "EDNS0 option header truncated";
			return DNS_INVALID;
		}
		olen = get16(buf + p + 2);
		p += EDNS_OPTION_HDR_BYTES;
		if (end - p < olen) {
			*err = "EDNS0 option runs past the OPT record";
			return DNS_INVALID;
		}
		p += olen;
	}
	*off = p;
	return DNS_OK;
}

int
dns_parse_query(const uint8_t *buf, size_t len, struct dns_query *out,
    const char **err)
{
	size_t		off = DNS_HEADER_BYTES;
	uint16_t	arcount;

	memset(out, 0, sizeof(*out));
	out->transport = DNS_TRANSPORT_UDP;
	if (len > DNS_QUERY_MAX_BYTES) {
		*err = "query longer than moat accepts";
		return DNS_INVALID;
	}
	if (header_parse(buf, len, out, err) == DNS_INVALID)
		return DNS_INVALID;
	if (out->opcode != DNS_OPCODE_QUERY) {
		/* NOTIFY, UPDATE, ... have sections of other meanings: moat
		 * reads no further than the header and answers NOTIMP. */
		out->rcode = DNS_RCODE_NOTIMP;
		*err = "opcode not supported";
		return DNS_OK;
	}
	if (get16(buf + HDR_QDCOUNT) != 1) {
		*err = get16(buf + HDR_QDCOUNT) == 0 ? "no question in query" :
		    "more than one question in query";
		return DNS_INVALID;
	}
	if (get16(buf + HDR_ANCOUNT) != 0 || get16(buf + HDR_NSCOUNT) != 0) {
		*err = "answer or authority records in a query";
		return DNS_INVALID;
	}
	if ((arcount = get16(buf + HDR_ARCOUNT)) > 1) {
		*err = "more than one additional record in query";
		return DNS_INVALID;
	}
	if (question_parse(buf, len, &off, out, err) == DNS_INVALID)
		return DNS_INVALID;
	if (arcount == 1 && opt_parse(buf, len, &off, out, err) == DNS_INVALID)
		return DNS_INVALID;
	if (off != len) {
		*err = "trailing bytes after query";
		return DNS_INVALID;
	}

	/* Well formed; now what moat will not answer from policy.  An
	 * unknown EDNS version comes first: RFC 6891 §6.1.3 says the
	 * responder MUST answer BADVERS whatever was asked. */
	if (out->edns && out->edns_version != 0) {
		out->rcode = DNS_RCODE_BADVERS;
		*err = "EDNS version not supported";
	} else if (out->qclass != DNS_CLASS_IN) {
		out->rcode = DNS_RCODE_REFUSED;
		*err = "query class not supported";
	} else if (out->qtype >= DNS_TYPE_TKEY &&
	    out->qtype <= DNS_TYPE_MAILA) {
		/* TKEY, TSIG, IXFR, AXFR, MAILB, MAILA: transactions and
		 * transfers, not lookups. */
		out->rcode = DNS_RCODE_NOTIMP;
		*err = "query type not supported";
	}
	return DNS_OK;
}

/* ------------------------------------------------------------------ */
/* Builders                                                             */
/* ------------------------------------------------------------------ */

static void
w_bytes(struct wbuf *w, const void *p, size_t n)
{
	if (w->overflow || w->size - w->len < n) {
		w->overflow = true;
		return;
	}
	memcpy(w->buf + w->len, p, n);
	w->len += n;
}

static void
w_u16(struct wbuf *w, uint16_t v)
{
	uint8_t	b[2] = { (uint8_t)(v >> 8), (uint8_t)v };

	w_bytes(w, b, sizeof(b));
}

static void
w_u32(struct wbuf *w, uint32_t v)
{
	uint8_t	b[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16),
	    (uint8_t)(v >> 8), (uint8_t)v };

	w_bytes(w, b, sizeof(b));
}

/*
 * A response header: opcode, RD and CD copied from q, QR and RA set, the
 * low bits of rcode, and tc (FLAG_TC or 0).
 */
static void
w_header(struct wbuf *w, const struct dns_query *q, uint16_t rcode,
    uint16_t tc, uint16_t qd, uint16_t an, uint16_t ar)
{
	uint16_t	f;

	f = FLAG_QR | FLAG_RA | tc | (uint16_t)((q->opcode &
	    FLAG_OPCODE_MASK) << FLAG_OPCODE_SHIFT) | (rcode &
	    FLAG_RCODE_MASK);
	if (q->rd)
		f |= FLAG_RD;
	if (q->cd)
		f |= FLAG_CD;
	w_u16(w, q->id);
	w_u16(w, f);
	w_u16(w, qd);
	w_u16(w, an);
	w_u16(w, 0);			/* NSCOUNT */
	w_u16(w, ar);
}

static void
w_question(struct wbuf *w, const struct dns_query *q)
{
	w_bytes(w, q->qname, q->qname_len);
	w_u16(w, q->qtype);
	w_u16(w, q->qclass);
}

/* Our OPT record: payload size, extended RCODE, version 0, DO echoed. */
static void
w_opt(struct wbuf *w, const struct dns_query *q, uint16_t rcode)
{
	uint32_t	ttl;

	ttl = (uint32_t)(rcode >> RCODE_LOW_BITS) << OPT_TTL_EXT_RCODE_SHIFT;
	if (q->edns_do)
		ttl |= OPT_TTL_DO;	/* RFC 3225 §3: copied */
	w_bytes(w, "", 1);		/* root owner name */
	w_u16(w, DNS_TYPE_OPT);
	w_u16(w, DNS_UDP_MAX_BYTES);
	w_u32(w, ttl);
	w_u16(w, 0);			/* RDLENGTH: no options */
}

/* RFC 6891 §6.2.3-6.2.5: below 512 counts as 512; moat caps at its own. */
static size_t
udp_limit(const struct dns_query *q)
{
	if (q->transport == DNS_TRANSPORT_TCP)
		return DNS_TCP_MAX_BYTES;
	if (!q->edns || q->edns_udp_size <= DNS_UDP_PLAIN_MAX_BYTES)
		return DNS_UDP_PLAIN_MAX_BYTES;
	if (q->edns_udp_size >= DNS_UDP_MAX_BYTES)
		return DNS_UDP_MAX_BYTES;
	return q->edns_udp_size;
}

static bool
type_matches(uint16_t qtype, int family)
{
	if (qtype == DNS_TYPE_ANY)
		return true;
	return (qtype == DNS_TYPE_A && family == AF_INET) ||
	    (qtype == DNS_TYPE_AAAA && family == AF_INET6);
}

int
dns_build_answer(const struct dns_query *q, const struct policy_addr *addrs,
    size_t naddrs, uint32_t ttl, uint8_t *buf, size_t size)
{
	struct wbuf	w = { buf, size, 0, false };
	size_t		limit, fixed, rr, i;
	uint16_t	an = 0, tc = 0;
	bool		full = false;

	if (!q->has_question || q->rcode != DNS_RCODE_NOERROR ||
	    (naddrs > 0 && addrs == NULL))
		return -1;
	for (i = 0; i < naddrs; i++)
		if (addrs[i].family != AF_INET && addrs[i].family != AF_INET6)
			return -1;
	if (ttl > DNS_TTL_MAX)
		ttl = DNS_TTL_MAX;

	/* Count what fits under the limit before writing, so the header
	 * can be written first with its final counts. */
	limit = udp_limit(q);
	fixed = DNS_HEADER_BYTES + q->qname_len + QUESTION_FIXED_BYTES +
	    (q->edns ? OPT_RR_BYTES : 0);
	for (i = 0; i < naddrs && !full; i++) {
		if (!type_matches(q->qtype, addrs[i].family))
			continue;
		rr = 2 + RR_FIXED_BYTES + (addrs[i].family == AF_INET ?
		    A_RDATA_BYTES : AAAA_RDATA_BYTES);
		if (fixed + rr > limit || an == UINT16_MAX) {
			/* An A record may fit where an AAAA did not, but
			 * records past a gap would reorder the answer:
			 * stop at the first that does not fit. */
			full = true;
			tc = FLAG_TC;
			continue;
		}
		fixed += rr;
		an++;
	}

	w_header(&w, q, DNS_RCODE_NOERROR, tc, 1, an, q->edns ? 1 : 0);
	w_question(&w, q);
	for (i = 0; i < naddrs && an > 0; i++) {
		if (!type_matches(q->qtype, addrs[i].family))
			continue;
		w_u16(&w, NAME_PTR_TO_QUESTION);
		if (addrs[i].family == AF_INET) {
			w_u16(&w, DNS_TYPE_A);
			w_u16(&w, DNS_CLASS_IN);
			w_u32(&w, ttl);
			w_u16(&w, A_RDATA_BYTES);
			w_bytes(&w, &addrs[i].u.v4, A_RDATA_BYTES);
		} else {
			w_u16(&w, DNS_TYPE_AAAA);
			w_u16(&w, DNS_CLASS_IN);
			w_u32(&w, ttl);
			w_u16(&w, AAAA_RDATA_BYTES);
			w_bytes(&w, &addrs[i].u.v6, AAAA_RDATA_BYTES);
		}
		an--;
	}
	if (q->edns)
		w_opt(&w, q, DNS_RCODE_NOERROR);
	if (w.overflow)
		return -1;
	return (int)w.len;
}

int
dns_build_error(const struct dns_query *q, uint16_t rcode, uint8_t *buf,
    size_t size)
{
	struct wbuf	w = { buf, size, 0, false };

	if (rcode > RCODE_MAX || (rcode >> RCODE_LOW_BITS != 0 && !q->edns))
		return -1;
	w_header(&w, q, rcode, 0, q->has_question ? 1 : 0, 0,
	    q->edns ? 1 : 0);
	if (q->has_question)
		w_question(&w, q);
	if (q->edns)
		w_opt(&w, q, rcode);
	if (w.overflow)
		return -1;
	return (int)w.len;
}

int
dns_build_formerr(const uint8_t *in, size_t len, uint8_t *out, size_t size)
{
	uint16_t	f;

	if (len < DNS_HEADER_BYTES || size < DNS_HEADER_BYTES)
		return -1;
	f = get16(in + HDR_FLAGS);
	if (f & FLAG_QR)
		return -1;
	f = FLAG_QR | (f & (FLAG_OPCODE_MASK << FLAG_OPCODE_SHIFT)) |
	    (f & FLAG_RD) | DNS_RCODE_FORMERR;
	memset(out, 0, DNS_HEADER_BYTES);
	out[HDR_ID] = in[HDR_ID];
	out[HDR_ID + 1] = in[HDR_ID + 1];
	out[HDR_FLAGS] = (uint8_t)(f >> 8);
	out[HDR_FLAGS + 1] = (uint8_t)f;
	return DNS_HEADER_BYTES;
}

int
dns_tcp_frame_len(const uint8_t *buf, size_t len, const char **err)
{
	size_t	n;

	if (len < DNS_TCP_PREFIX_BYTES)
		return DNS_NEED_MORE;
	n = get16(buf);
	if (n < DNS_HEADER_BYTES) {
		*err = "TCP message shorter than a DNS header";
		return DNS_INVALID;
	}
	if (n > DNS_QUERY_MAX_BYTES) {
		*err = "TCP message longer than moat accepts";
		return DNS_INVALID;
	}
	if (len - DNS_TCP_PREFIX_BYTES < n)
		return DNS_NEED_MORE;
	return (int)n;
}
