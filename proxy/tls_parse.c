/*
 * tls_parse.c - TLS ClientHello parser (RFC 8446, RFC 5246, RFC 6066,
 * RFC 7301).  The contract is in tls_parse.h.
 *
 * What it is: two passes over the bytes a client sent first, no I/O and no
 * allocation.  records_walk() follows the record layer as far as the
 * buffered bytes go, checking each record header and the 4-byte handshake
 * header as soon as they arrive, and says how many bytes the whole hello
 * takes.  Once all of it is there, hello_parse() reads the handshake
 * message through a reader that steps over the record headers in between,
 * so a fragmented hello is parsed in place, without a reassembly copy.
 *
 * What it is not: a judge of the name.  The server name is checked for
 * bytes that have no place in a host name and handed on as sent; the
 * caller normalises it with policy_host_normalise() and decides.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "proxy/tls_parse.h"

#define SSL2_CLIENT_HELLO	1	/* SSLv2 message type */
#define SSL2_MSG_TYPE_OFF	2	/* after the 2-byte SSLv2 header */
#define TLS_MAJOR		3

/* legacy_version, random, session_id length, cipher_suites length and
 * one suite, compression_methods length and one method. */
#define HELLO_MIN_BYTES		(2 + TLS_RANDOM_BYTES + 1 + 2 + 2 + 1 + 1)
#define EXT_HEADER_BYTES	4	/* type, length */
#define SNI_TYPE_HOST_NAME	0
#define SNI_ENTRY_MIN_BYTES	4	/* type, length, one byte of name */
#define IPV6_TEXT_MAX_BYTES	45	/* INET6_ADDRSTRLEN - 1 */
#define EXT_TYPES		65536

const char tls_err_sslv2[] = "SSLv2-compatible ClientHello not supported";

/* Where the record walk got to. */
struct walk {
	size_t	total;		/* bytes of records that hold the hello */
	size_t	nrecords;
	size_t	msg_len;	/* handshake body length (after its header) */
};

/*
 * Sequential reader of the handshake message, which lies in the payloads
 * of records already checked by records_walk(): when a payload is used
 * up, the next record header is skipped.  pos counts message bytes read;
 * every read is bounds-checked by its caller against a message offset.
 */
struct reader {
	const uint8_t	*buf;
	size_t		 off;	/* next byte in buf */
	size_t		 left;	/* payload bytes left in the current record */
	size_t		 pos;	/* message bytes read so far */
};

static uint16_t	get16(const uint8_t *);
static int	first_byte(const uint8_t *, size_t, const char **);
static int	record_header(const uint8_t *, size_t, size_t, bool,
		    const char **);
static int	records_walk(const uint8_t *, size_t, struct walk *,
		    const char **);
static void	rd_init(struct reader *, const uint8_t *);
static void	rd_copy(struct reader *, void *, size_t);
static uint8_t	rd_u8(struct reader *);
static uint16_t	rd_u16(struct reader *);
static void	rd_skip(struct reader *, size_t);
static int	hello_parse(const uint8_t *, const struct walk *,
		    struct tls_client_hello *, const char **);
static int	hello_fixed(struct reader *, size_t,
		    struct tls_client_hello *, const char **);
static int	extensions_parse(struct reader *, size_t,
		    struct tls_client_hello *, const char **);
static int	ext_server_name(struct reader *, size_t,
		    struct tls_client_hello *, const char **);
static int	sni_check(struct tls_client_hello *, const char **);
static bool	ends_in_number(const char *, size_t);
static int	ext_alpn(struct reader *, size_t, struct tls_client_hello *,
		    const char **);
static int	ext_supported_versions(struct reader *, size_t,
		    struct tls_client_hello *, const char **);

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/*
 * The first byte is not a handshake record.  An SSLv2-compatible hello
 * (RFC 5246 Appendix E.2) starts with a 2-byte header whose high bit is
 * set, then message type 1: say so rather than "not TLS", since HTTP can
 * never start with such a byte anyway.
 */
static int
first_byte(const uint8_t *buf, size_t len, const char **err)
{
	if (buf[0] & 0x80) {
		if (len <= SSL2_MSG_TYPE_OFF)
			return TLS_NEED_MORE;
		if (buf[SSL2_MSG_TYPE_OFF] == SSL2_CLIENT_HELLO) {
			*err = tls_err_sslv2;
			return TLS_INVALID;
		}
	}
	*err = "not a TLS handshake record";
	return TLS_NOT_TLS;
}

/*
 * Checks the record header at buf[off], as far as it is buffered.
 * Returns TLS_NEED_MORE if it is incomplete, 1 if it is complete and
 * good, or another verdict.
 */
static int
record_header(const uint8_t *buf, size_t len, size_t off, bool first,
    const char **err)
{
	size_t	have = len - off, rlen;

	if (have < 1)
		return TLS_NEED_MORE;
	if (buf[off] != TLS_CONTENT_HANDSHAKE) {
		if (first)
			return first_byte(buf, len, err);
		*err = "record other than handshake inside ClientHello";
		return TLS_INVALID;
	}
	if (have < 2)
		return TLS_NEED_MORE;
	if (buf[off + 1] != TLS_MAJOR) {
		*err = "bad record version";
		return TLS_INVALID;
	}
	if (have < 3)
		return TLS_NEED_MORE;
	if (buf[off + 2] == (TLS_VERSION_SSL3 & 0xff)) {
		*err = "SSLv3 record not supported";
		return TLS_INVALID;
	}
	if (buf[off + 2] > (TLS_VERSION_1_3 & 0xff)) {
		*err = "bad record version";
		return TLS_INVALID;
	}
	if (have < TLS_RECORD_HEADER_BYTES)
		return TLS_NEED_MORE;
	rlen = get16(buf + off + 3);
	if (rlen == 0) {
		/* RFC 8446 §5.1: no zero-length handshake fragments. */
		*err = "empty handshake record";
		return TLS_INVALID;
	}
	if (rlen > TLS_RECORD_MAX_BYTES) {
		*err = "record longer than 2^14 bytes";
		return TLS_INVALID;
	}
	return 1;
}

/*
 * Follows the records from buf[0] until the handshake message is complete
 * or the buffered bytes end.  Every check is made on the first buffered
 * byte that decides it, in byte order.
 */
static int
records_walk(const uint8_t *buf, size_t len, struct walk *w,
    const char **err)
{
	uint8_t	hdr[TLS_HANDSHAKE_HEADER_BYTES];
	size_t	off = 0, p, rend, rlen, have = 0, need = 0, at_start;
	int	rc;

	memset(w, 0, sizeof(*w));
	for (;;) {
		if ((rc = record_header(buf, len, off, off == 0, err)) != 1)
			return rc;
		rlen = get16(buf + off + 3);
		at_start = have;
		/* With the message length known, this record and the rest
		 * of the message must fit in it and in the cap. */
		if (need > 0 && rlen > need - have) {
			*err = "data after ClientHello in its last record";
			return TLS_INVALID;
		}
		if (off + TLS_RECORD_HEADER_BYTES + (need > 0 ? need - have :
		    rlen) > TLS_HELLO_MAX_BYTES) {
			*err = "ClientHello longer than moat accepts";
			return TLS_INVALID;
		}
		w->nrecords++;
		p = off + TLS_RECORD_HEADER_BYTES;
		rend = p + rlen;
		/* The handshake header may itself be split over records. */
		while (have < TLS_HANDSHAKE_HEADER_BYTES && p < rend) {
			if (p >= len)
				return TLS_NEED_MORE;
			hdr[have++] = buf[p++];
			if (have == 1 && hdr[0] != TLS_HANDSHAKE_CLIENT_HELLO) {
				*err = "handshake message is not a ClientHello";
				return TLS_INVALID;
			}
			if (have < TLS_HANDSHAKE_HEADER_BYTES)
				continue;
			w->msg_len = (size_t)hdr[1] << 16 |
			    (size_t)hdr[2] << 8 | hdr[3];
			if (w->msg_len < HELLO_MIN_BYTES) {
				*err = "ClientHello shorter than its fixed "
				    "fields";
				return TLS_INVALID;
			}
			need = TLS_HANDSHAKE_HEADER_BYTES + w->msg_len;
			if (off + TLS_RECORD_HEADER_BYTES + need - at_start >
			    TLS_HELLO_MAX_BYTES) {
				*err = "ClientHello longer than moat accepts";
				return TLS_INVALID;
			}
			if (rlen > need - at_start) {
				*err = "data after ClientHello in its last "
				    "record";
				return TLS_INVALID;
			}
		}
		if (len < rend)
			return TLS_NEED_MORE;
		have += rend - p;
		off = rend;
		if (need > 0 && have == need) {
			w->total = off;
			return 1;
		}
	}
}

static void
rd_init(struct reader *r, const uint8_t *buf)
{
	r->buf = buf;
	r->off = TLS_RECORD_HEADER_BYTES;
	r->left = get16(buf + 3);
	r->pos = 0;
}

/* Reads n bytes (the caller checked they are within the message). */
static void
rd_copy(struct reader *r, void *dst, size_t n)
{
	uint8_t	*d = dst;
	size_t	 k;

	while (n > 0) {
		if (r->left == 0) {
			r->left = get16(r->buf + r->off + 3);
			r->off += TLS_RECORD_HEADER_BYTES;
		}
		k = n < r->left ? n : r->left;
		if (d != NULL) {
			memcpy(d, r->buf + r->off, k);
			d += k;
		}
		r->off += k;
		r->left -= k;
		r->pos += k;
		n -= k;
	}
}

static uint8_t
rd_u8(struct reader *r)
{
	uint8_t	b;

	rd_copy(r, &b, 1);
	return b;
}

static uint16_t
rd_u16(struct reader *r)
{
	uint8_t	b[2];

	rd_copy(r, b, 2);
	return get16(b);
}

static void
rd_skip(struct reader *r, size_t n)
{
	rd_copy(r, NULL, n);
}

static int
hello_parse(const uint8_t *buf, const struct walk *w,
    struct tls_client_hello *out, const char **err)
{
	struct reader	r;
	size_t		end;

	memset(out, 0, sizeof(*out));
	out->record_version = get16(buf + 1);
	out->nrecords = w->nrecords;
	rd_init(&r, buf);
	rd_skip(&r, TLS_HANDSHAKE_HEADER_BYTES);
	end = TLS_HANDSHAKE_HEADER_BYTES + w->msg_len;
	if (hello_fixed(&r, end, out, err) == TLS_INVALID)
		return TLS_INVALID;
	if (r.pos == end)
		return 1;		/* no extensions: TLS 1.0-era hello */
	return extensions_parse(&r, end, out, err);
}

/* legacy_version up to compression_methods. */
static int
hello_fixed(struct reader *r, size_t end, struct tls_client_hello *out,
    const char **err)
{
	size_t	n, i;
	bool	null_comp = false;

	/* HELLO_MIN_BYTES guarantees version, random and one length. */
	out->legacy_version = rd_u16(r);
	if (out->legacy_version >> 8 != TLS_MAJOR ||
	    out->legacy_version > TLS_VERSION_1_2) {
		*err = "bad ClientHello version";
		return TLS_INVALID;
	}
	if (out->legacy_version == TLS_VERSION_SSL3) {
		*err = "SSLv3 ClientHello not supported";
		return TLS_INVALID;
	}
	rd_copy(r, out->random, TLS_RANDOM_BYTES);
	if ((n = rd_u8(r)) > TLS_SESSION_ID_MAX_BYTES) {
		*err = "session_id longer than 32 bytes";
		return TLS_INVALID;
	}
	if (end - r->pos < n + 2) {
		*err = "session_id runs past the ClientHello";
		return TLS_INVALID;
	}
	out->session_id_len = (uint8_t)n;
	rd_copy(r, out->session_id, n);
	n = rd_u16(r);
	if (n == 0 || n % 2 != 0) {
		*err = n == 0 ? "no cipher suites" :
		    "odd cipher_suites length";
		return TLS_INVALID;
	}
	if (end - r->pos < n + 1) {
		*err = "cipher_suites run past the ClientHello";
		return TLS_INVALID;
	}
	out->ncipher_suites = n / 2;
	rd_skip(r, n);
	if ((n = rd_u8(r)) == 0) {
		*err = "no compression methods";
		return TLS_INVALID;
	}
	if (end - r->pos < n) {
		*err = "compression_methods run past the ClientHello";
		return TLS_INVALID;
	}
	for (i = 0; i < n; i++)
		if (rd_u8(r) == 0)
			null_comp = true;
	if (!null_comp) {
		*err = "null compression not offered";
		return TLS_INVALID;
	}
	return 1;
}

static int
extensions_parse(struct reader *r, size_t end, struct tls_client_hello *out,
    const char **err)
{
	uint64_t	seen[EXT_TYPES / 64];
	uint16_t	type;
	size_t		elen, xend;
	bool		psk = false;
	int		rc;

	if (end - r->pos < 2) {
		*err = "extensions length truncated";
		return TLS_INVALID;
	}
	if (rd_u16(r) != end - r->pos) {
		*err = "extensions length does not match the ClientHello";
		return TLS_INVALID;
	}
	memset(seen, 0, sizeof(seen));
	while (r->pos < end) {
		if (end - r->pos < EXT_HEADER_BYTES) {
			*err = "extension header truncated";
			return TLS_INVALID;
		}
		type = rd_u16(r);
		elen = rd_u16(r);
		if (end - r->pos < elen) {
			*err = "extension runs past the ClientHello";
			return TLS_INVALID;
		}
		/* RFC 8446 §4.2: at most one of each type. */
		if (seen[type / 64] & (uint64_t)1 << (type % 64)) {
			*err = "duplicate extension";
			return TLS_INVALID;
		}
		seen[type / 64] |= (uint64_t)1 << (type % 64);
		/* RFC 8446 §4.2.11: pre_shared_key must be the last. */
		if (psk) {
			*err = "pre_shared_key not the last extension";
			return TLS_INVALID;
		}
		out->nextensions++;
		xend = r->pos + elen;
		switch (type) {
		case TLS_EXT_SERVER_NAME:
			rc = ext_server_name(r, xend, out, err);
			break;
		case TLS_EXT_ALPN:
			rc = ext_alpn(r, xend, out, err);
			break;
		case TLS_EXT_SUPPORTED_VERSIONS:
			rc = ext_supported_versions(r, xend, out, err);
			break;
		case TLS_EXT_PRE_SHARED_KEY:
			psk = true;
			rd_skip(r, elen);
			rc = 1;
			break;
		case TLS_EXT_ECH:
			out->has_ech = true;
			rd_skip(r, elen);
			rc = 1;
			break;
		default:
			rd_skip(r, elen);
			rc = 1;
			break;
		}
		if (rc == TLS_INVALID)
			return TLS_INVALID;
	}
	return 1;
}

/* RFC 6066 §3: ServerNameList with exactly one host_name. */
static int
ext_server_name(struct reader *r, size_t xend, struct tls_client_hello *out,
    const char **err)
{
	size_t	n;

	if (xend - r->pos < 2) {
		*err = "server_name extension truncated";
		return TLS_INVALID;
	}
	if (rd_u16(r) != xend - r->pos) {
		*err = "server_name list length does not match its extension";
		return TLS_INVALID;
	}
	if (xend - r->pos < SNI_ENTRY_MIN_BYTES) {
		*err = "server_name list empty or truncated";
		return TLS_INVALID;
	}
	if (rd_u8(r) != SNI_TYPE_HOST_NAME) {
		*err = "server_name entry is not a host_name";
		return TLS_INVALID;
	}
	n = rd_u16(r);
	if (n == 0) {
		*err = "empty server name";
		return TLS_INVALID;
	}
	if (xend - r->pos < n) {
		*err = "server name runs past its list";
		return TLS_INVALID;
	}
	if (n > TLS_SNI_MAX_BYTES) {
		*err = "server name longer than 255 bytes";
		return TLS_INVALID;
	}
	rd_copy(r, out->sni, n);
	out->sni[n] = '\0';
	out->sni_len = n;
	if (r->pos != xend) {
		*err = "more than one server_name entry";
		return TLS_INVALID;
	}
	if (sni_check(out, err) == TLS_INVALID)
		return TLS_INVALID;
	out->has_sni = true;
	return 1;
}

/*
 * The bytes of a host name: letters, digits, '.', '-', '_'.  A ':' is
 * allowed only in a name that is all an IPv6 literal, so that one can be
 * reported as such; anything else (NUL, '%', '/', '@', non-ASCII, ...)
 * has no place in a name moat resolves and is refused.
 */
static int
sni_check(struct tls_client_hello *out, const char **err)
{
	struct in6_addr	 a6;
	const char	*s = out->sni;
	size_t		 i, n = out->sni_len;
	bool		 colon = false;

	for (i = 0; i < n; i++) {
		if ((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= '0' && s[i] <= '9') ||
		    s[i] == '.' || s[i] == '-' || s[i] == '_')
			continue;
		if (s[i] == ':') {
			colon = true;
			continue;
		}
		*err = s[i] == '\0' ? "NUL byte in server name" :
		    "bad byte in server name";
		return TLS_INVALID;
	}
	if (colon) {
		if (n > IPV6_TEXT_MAX_BYTES ||
		    inet_pton(AF_INET6, s, &a6) != 1) {
			*err = "':' in server name that is not an IPv6 address";
			return TLS_INVALID;
		}
		out->sni_is_ip = true;
		return 1;
	}
	out->sni_trailing_dot = s[n - 1] == '.';
	out->sni_is_ip = ends_in_number(s, out->sni_trailing_dot ? n - 1 : n);
	return 1;
}

/*
 * WHATWG URL "ends in a number": the last label is all digits, or 0x/0X
 * and hex digits.  Such a name is an IPv4 address to every URL parser
 * (and to policy_host_normalise()), however many labels it has.
 */
static bool
ends_in_number(const char *s, size_t n)
{
	size_t	i, start = n;

	while (start > 0 && s[start - 1] != '.')
		start--;
	if (start == n)
		return false;
	i = start;
	if (n - start >= 2 && s[i] == '0' && (s[i + 1] == 'x' ||
	    s[i + 1] == 'X')) {
		for (i += 2; i < n; i++)
			if (!((s[i] >= '0' && s[i] <= '9') ||
			    (s[i] >= 'a' && s[i] <= 'f') ||
			    (s[i] >= 'A' && s[i] <= 'F')))
				return false;
		return true;
	}
	for (; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* RFC 7301 §3.1: ProtocolNameList, names of 1..255 bytes. */
static int
ext_alpn(struct reader *r, size_t xend, struct tls_client_hello *out,
    const char **err)
{
	struct tls_alpn	*a;
	size_t		 n;

	if (xend - r->pos < 2) {
		*err = "ALPN extension truncated";
		return TLS_INVALID;
	}
	if (rd_u16(r) != xend - r->pos) {
		*err = "ALPN list length does not match its extension";
		return TLS_INVALID;
	}
	if (r->pos == xend) {
		*err = "empty ALPN list";
		return TLS_INVALID;
	}
	while (r->pos < xend) {
		if ((n = rd_u8(r)) == 0) {
			*err = "empty ALPN protocol name";
			return TLS_INVALID;
		}
		if (xend - r->pos < n) {
			*err = "ALPN protocol name runs past its list";
			return TLS_INVALID;
		}
		if (out->nalpn < TLS_ALPN_MAX_PROTOCOLS) {
			a = &out->alpn[out->nalpn++];
			a->len = (uint8_t)n;
			rd_copy(r, a->name, n);
		} else
			rd_skip(r, n);
		out->nalpn_sent++;
	}
	out->has_alpn = true;
	return 1;
}

/* RFC 8446 §4.2.1, ClientHello form: a list of 2-byte versions. */
static int
ext_supported_versions(struct reader *r, size_t xend,
    struct tls_client_hello *out, const char **err)
{
	size_t	n;

	if (xend - r->pos < 1) {
		*err = "supported_versions extension truncated";
		return TLS_INVALID;
	}
	n = rd_u8(r);
	if (n != xend - r->pos) {
		*err = "supported_versions length does not match its "
		    "extension";
		return TLS_INVALID;
	}
	if (n == 0 || n % 2 != 0) {
		*err = n == 0 ? "empty supported_versions list" :
		    "odd supported_versions length";
		return TLS_INVALID;
	}
	while (r->pos < xend)
		if (rd_u16(r) == TLS_VERSION_1_3)
			out->tls13 = true;
	out->has_supported_versions = true;
	return 1;
}

int
tls_parse_client_hello(const uint8_t *buf, size_t len,
    struct tls_client_hello *out, const char **err)
{
	struct walk	w;
	int		rc;

	if ((rc = records_walk(buf, len, &w, err)) != 1)
		return rc;
	if (hello_parse(buf, &w, out, err) == TLS_INVALID)
		return TLS_INVALID;
	return (int)w.total;
}
