/*
 * dns_parse.h - DNS query parser and answer builders for moatd's DNS
 * listener (RFC 1035, RFC 3596, RFC 6891).
 *
 * What it is: pure functions over bytes.  No I/O, no libevent, no
 * allocation.  The listener hands a datagram (UDP) or a de-framed message
 * (TCP) to dns_parse_query(), asks the policy about the name, and writes
 * its answer with one of the builders.
 *
 * What it is not: a resolver or a general DNS message parser.  It accepts
 * exactly what a stub resolver sends (one question, maybe an EDNS0 OPT
 * record) and refuses everything else, so a name moatd reasons about is
 * exactly the name in the packet: no compression pointers in the question,
 * no bytes after the message, no label bytes that presentation form cannot
 * carry unambiguously.
 *
 * Return codes: DNS_OK (1), DNS_INVALID (-1) with *err set to a static
 * English message in lower case ("compression pointer in question");
 * dns_tcp_frame_len() also returns DNS_NEED_MORE (0) or a length.
 * Pointer arguments must not be NULL unless a function says otherwise.
 */
#ifndef MOAT_DNS_PARSE_H
#define MOAT_DNS_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"

#define DNS_NEED_MORE	0
#define DNS_OK		1
#define DNS_INVALID	(-1)

/* Sizes, in bytes. */
#define DNS_HEADER_BYTES	12
#define DNS_TCP_PREFIX_BYTES	2	/* RFC 1035 §4.2.2 length prefix */
#define DNS_UDP_PLAIN_MAX_BYTES	512	/* UDP answer without EDNS0 */
#define DNS_UDP_MAX_BYTES	1232	/* UDP answer with EDNS0; also the
					 * payload size moat advertises
					 * (DNS flag day 2020) */
#define DNS_TCP_MAX_BYTES	65535	/* any message over TCP */
#define DNS_QUERY_MAX_BYTES	1232	/* a query moat accepts, UDP or TCP:
					 * one question and an OPT record
					 * with padding fit easily */
#define DNS_LABEL_MAX_BYTES	63
#define DNS_NAME_WIRE_MAX_BYTES	255	/* wire form, final root label
					 * included */
#define DNS_NAME_MAX		253	/* presentation form, no final dot */
#define DNS_TTL_MAX		2147483647u /* RFC 2181 §8 */

/* Header fields. */
#define DNS_OPCODE_QUERY	0

#define DNS_RCODE_NOERROR	0
#define DNS_RCODE_FORMERR	1
#define DNS_RCODE_SERVFAIL	2
#define DNS_RCODE_NXDOMAIN	3
#define DNS_RCODE_NOTIMP	4
#define DNS_RCODE_REFUSED	5
#define DNS_RCODE_BADVERS	16	/* extended: needs EDNS0 */

/* Types and classes. */
#define DNS_TYPE_A		1
#define DNS_TYPE_NS		2
#define DNS_TYPE_CNAME		5
#define DNS_TYPE_SOA		6
#define DNS_TYPE_PTR		12
#define DNS_TYPE_MX		15
#define DNS_TYPE_TXT		16
#define DNS_TYPE_AAAA		28
#define DNS_TYPE_SRV		33
#define DNS_TYPE_OPT		41
#define DNS_TYPE_SVCB		64
#define DNS_TYPE_HTTPS		65
#define DNS_TYPE_TKEY		249
#define DNS_TYPE_TSIG		250
#define DNS_TYPE_IXFR		251
#define DNS_TYPE_AXFR		252
#define DNS_TYPE_MAILB		253
#define DNS_TYPE_MAILA		254
#define DNS_TYPE_ANY		255

#define DNS_CLASS_IN		1
#define DNS_CLASS_CH		3
#define DNS_CLASS_ANY		255

enum dns_transport {
	DNS_TRANSPORT_UDP = 0,	/* answers limited to 512 or the EDNS size */
	DNS_TRANSPORT_TCP	/* answers limited to DNS_TCP_MAX_BYTES */
};

/*
 * A query as dns_parse_query() found it.  The header fields and rcode are
 * always set; the question and EDNS fields only when opcode is
 * DNS_OPCODE_QUERY (has_question is then true); the rest are zero.
 */
struct dns_query {
	uint16_t		id;
	uint8_t			opcode;		/* as sent */
	bool			rd;		/* recursion desired */
	bool			cd;		/* checking disabled */
	/*
	 * DNS_RCODE_NOERROR if moat can answer this query from policy, or
	 * the error to answer with dns_build_error() (*err says why):
	 * NOTIMP for an opcode other than QUERY or a zone transfer / meta
	 * QTYPE, REFUSED for a class other than IN, BADVERS for an EDNS
	 * version other than 0.
	 */
	uint16_t		rcode;
	bool			has_question;
	/* Presentation form: ASCII lower case, no final dot, "" for the
	 * root.  NUL-terminated. */
	char			name[DNS_NAME_MAX + 1];
	size_t			name_len;
	/* QNAME in wire form as sent (case kept), echoed in answers. */
	uint8_t			qname[DNS_NAME_WIRE_MAX_BYTES];
	size_t			qname_len;
	uint16_t		qtype;
	uint16_t		qclass;
	bool			edns;		/* an OPT record was present */
	uint8_t			edns_version;
	uint16_t		edns_udp_size;	/* as sent; < 512 means 512 */
	bool			edns_do;	/* DNSSEC OK */
	/*
	 * Set to DNS_TRANSPORT_UDP by the parser; the TCP listener sets
	 * DNS_TRANSPORT_TCP before building an answer, which lifts the UDP
	 * size limit (and so truncation).
	 */
	enum dns_transport	transport;
};

/*
 * Parses a whole query message buf[0..len) (a UDP datagram, or a TCP
 * message without its length prefix).  Accepted:
 *  - header: QR = 0; TC, Z and RCODE 0 (AA, RA and AD are ignored: they
 *    mean nothing in a query); for OPCODE QUERY: QDCOUNT 1, ANCOUNT 0,
 *    NSCOUNT 0, ARCOUNT 0 or 1;
 *  - the question: QNAME as labels of 1..63 bytes, at most 255 bytes in
 *    wire form, no compression pointer and no extended label type, each
 *    byte 0x21..0x7e other than '.' and '\' (a '.' inside a label or a
 *    '\' would read differently in presentation form); QTYPE not 0 or OPT;
 *  - in the additional section only an EDNS0 OPT record: root owner name,
 *    extended RCODE 0, options each within RDLENGTH (contents ignored);
 *  - nothing after the last record; len <= DNS_QUERY_MAX_BYTES.
 * Another opcode is not an error: only the header is read (has_question
 * false) and out->rcode is NOTIMP.
 *
 * Returns DNS_OK and fills *out (out->rcode says whether to answer from
 * policy, as described above; when it is not NOERROR *err is set too), or
 * DNS_INVALID with *err; *out is then undefined.  Answer DNS_INVALID with
 * dns_build_formerr().
 */
int	dns_parse_query(const uint8_t *buf, size_t len, struct dns_query *out,
	    const char **err);

/*
 * Writes an answer to q (which dns_parse_query() accepted with rcode
 * NOERROR) into buf[0..size): header with q's ID, opcode, RD and CD, QR and
 * RA set, AA and AD clear, RCODE NOERROR; the question as sent; one record
 * per address of the query's type (A for AF_INET, AAAA for AF_INET6, both
 * for ANY, none for any other type: NODATA), each with a compression
 * pointer to the question name, the given TTL (capped at DNS_TTL_MAX) and
 * class IN; an OPT record (payload DNS_UDP_MAX_BYTES, DO copied from the
 * query) if the query had one.  addrs may be NULL if naddrs is 0.
 *
 * Over UDP an answer is at most 512 bytes without EDNS0, else
 * min(the client's size, DNS_UDP_MAX_BYTES): records that do not fit are
 * left out and TC is set (the OPT record always stays).
 *
 * Returns the length written, or -1 if it does not fit in size bytes, or
 * q has no question or an rcode other than NOERROR, or an address has
 * another family.
 */
int	dns_build_answer(const struct dns_query *q,
	    const struct policy_addr *addrs, size_t naddrs, uint32_t ttl,
	    uint8_t *buf, size_t size);

/*
 * Writes an answer without records into buf[0..size): NXDOMAIN, REFUSED,
 * NOTIMP, SERVFAIL, FORMERR, or NOERROR for NODATA, or BADVERS (needs
 * q->edns).  Header as in dns_build_answer() with the given RCODE; the
 * question as sent if q has one; an OPT record if q had one (its extended
 * RCODE carries bits 4..11 of rcode).
 *
 * Returns the length written, or -1 if it does not fit in size bytes or
 * rcode cannot be expressed (> 15 without EDNS0, or > 4095).
 */
int	dns_build_error(const struct dns_query *q, uint16_t rcode, uint8_t *buf,
	    size_t size);

/*
 * For input dns_parse_query() refused: writes a 12-byte FORMERR header
 * with the ID, opcode and RD of in[0..len) and QR set, all counts 0, so the
 * client stops retrying.  Returns DNS_HEADER_BYTES, or -1 if len or size
 * is below DNS_HEADER_BYTES or the input is itself a response (QR set:
 * answering it could start a loop between two servers; drop it).
 */
int	dns_build_formerr(const uint8_t *in, size_t len, uint8_t *out,
	    size_t size);

/*
 * TCP framing (RFC 1035 §4.2.2, RFC 7766): buf[0..len) is what the stream
 * has buffered, starting at a 2-byte length prefix.  Returns DNS_NEED_MORE
 * until the whole message is buffered, then its length n (> 0; the message
 * is buf[DNS_TCP_PREFIX_BYTES .. DNS_TCP_PREFIX_BYTES + n)), or
 * DNS_INVALID with *err as soon as the prefix says fewer than
 * DNS_HEADER_BYTES or more than DNS_QUERY_MAX_BYTES, so a caller never
 * buffers more than DNS_TCP_PREFIX_BYTES + DNS_QUERY_MAX_BYTES.
 */
int	dns_tcp_frame_len(const uint8_t *buf, size_t len, const char **err);

#endif /* MOAT_DNS_PARSE_H */
