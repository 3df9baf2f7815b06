/*
 * fuzz_client_hello.c - fuzz target for the TLS ClientHello parser
 * (proxy/tls_parse.c).
 *
 * Each input is used twice: as the bytes a client sent (record layer
 * included), and as a ClientHello body that this target wraps in a
 * handshake header and one record, which lets the fuzzer reach the
 * extensions without first getting three nested lengths right.
 *
 * Properties, each an abort() when broken:
 * - fed as prefixes of increasing length (each an exact-size copy, so
 *   AddressSanitizer sees any read past the bytes given), the parser says
 *   "need more" until some length, then gives one verdict, message and
 *   output for that length and every longer prefix; a byte count is that
 *   length itself; "need more" never lasts to TLS_HELLO_MAX_BYTES;
 * - TLS_NOT_TLS only when the first byte is not 22, and tls_err_sslv2
 *   only for the SSLv2 CLIENT-HELLO pattern;
 * - an accepted hello matches the wire, re-read here independently: the
 *   records up to the byte count are all handshake records of version
 *   0x0301..0x0304 carrying exactly one ClientHello; the fixed fields are
 *   the message's; the server name is 1..255 bytes of host-name
 *   characters; walking the extensions here finds no type twice, a
 *   server_name list of exactly that one host_name, the ALPN names in
 *   the same order, TLS 1.3 in supported_versions exactly when tls13;
 * - the same message split into records of another size gives the same
 *   verdict and fields, or "longer than moat accepts" when the extra
 *   record headers pass the cap.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/tls_parse.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define FUZZ_CHECK(c)	do { if (!(c)) abort(); } while (0)

/* Every prefix up to this length; above it, a sample (see below). */
#define PREFIX_ALL	1024
#define PREFIX_STRIDE	127
/* Bytes after each record start where the verdict may change. */
#define RECORD_WINDOW	12
#define FRAME_MAX	(TLS_HELLO_MAX_BYTES * 6)

static uint8_t	frame_buf[FRAME_MAX];
static uint8_t	msg_buf[TLS_HELLO_MAX_BYTES];

static bool	near_record_start(const uint8_t *, size_t, size_t);
static int	parse_copy(const uint8_t *, size_t, struct tls_client_hello *,
		    const char **);
static int	check_prefixes(const uint8_t *, size_t,
		    struct tls_client_hello *, const char **);
static size_t	reassemble(const uint8_t *, size_t, size_t *);
static void	check_ok(const uint8_t *, int,
		    const struct tls_client_hello *);
static void	check_exts(const uint8_t *, size_t,
		    const struct tls_client_hello *);
static size_t	frame(const uint8_t *, size_t, size_t, uint8_t *);
static void	check_reframed(const struct tls_client_hello *, size_t,
		    size_t);
static void	run(const uint8_t *, size_t, size_t);

/*
 * True if k is within RECORD_WINDOW bytes after the start of a record
 * that the input's record headers lead to (walked here without checks
 * but bounds).
 */
static bool
near_record_start(const uint8_t *d, size_t size, size_t k)
{
	size_t	off = 0;

	while (off + TLS_RECORD_HEADER_BYTES <= size) {
		if (k >= off && k <= off + RECORD_WINDOW)
			return true;
		if (off > k)
			return false;
		off += TLS_RECORD_HEADER_BYTES + ((size_t)d[off + 3] << 8 |
		    d[off + 4]);
	}
	return k >= off && k <= off + RECORD_WINDOW;
}

static int
parse_copy(const uint8_t *d, size_t k, struct tls_client_hello *out,
    const char **err)
{
	uint8_t	*copy;
	int	 rc;

	if ((copy = malloc(k ? k : 1)) == NULL)
		abort();
	memcpy(copy, d, k);
	memset(out, 0, sizeof(*out));
	*err = NULL;
	rc = tls_parse_client_hello(copy, k, out, err);
	free(copy);
	FUZZ_CHECK(rc >= TLS_NOT_TLS);
	FUZZ_CHECK((rc < 0) == (*err != NULL));
	return rc;
}

/*
 * Prefixes of d[0..size): every length up to PREFIX_ALL, then the lengths
 * near record starts, every PREFIX_STRIDE-th and the last few (the
 * verdict can only change where a record header or the handshake header
 * is read, or at the end of the hello).  Returns the verdict for the
 * whole input, with its output and message.
 */
static int
check_prefixes(const uint8_t *d, size_t size, struct tls_client_hello *res,
    const char **res_err)
{
	static struct tls_client_hello	 out;
	const char			*err;
	size_t				 k;
	int				 rc, first = TLS_NEED_MORE;

	*res_err = NULL;
	for (k = 0; k <= size; k++) {
		if (k > PREFIX_ALL && k + 8 < size && k % PREFIX_STRIDE != 0 &&
		    !near_record_start(d, size, k))
			continue;
		rc = parse_copy(d, k, &out, &err);
		if (first == TLS_NEED_MORE) {
			if (rc > 0)
				FUZZ_CHECK((size_t)rc == k);
			first = rc;
			*res_err = err;
			*res = out;
			continue;
		}
		FUZZ_CHECK(rc == first && err == *res_err);
		FUZZ_CHECK(rc <= 0 || memcmp(&out, res, sizeof(out)) == 0);
	}
	if (first == TLS_NEED_MORE)
		FUZZ_CHECK(size < TLS_HELLO_MAX_BYTES);
	if (first == TLS_NOT_TLS)
		FUZZ_CHECK(size > 0 && d[0] != TLS_CONTENT_HANDSHAKE);
	if (first == TLS_INVALID && *res_err == tls_err_sslv2)
		FUZZ_CHECK(size > 2 && (d[0] & 0x80) && d[2] == 1);
	return first;
}

/*
 * Walks the records of an accepted hello (len bytes) and copies their
 * payloads, the handshake message, to msg_buf.  Returns its length and
 * sets *nrec.
 */
static size_t
reassemble(const uint8_t *d, size_t len, size_t *nrec)
{
	size_t	off = 0, m = 0, n;

	*nrec = 0;
	while (off < len) {
		FUZZ_CHECK(len - off >= TLS_RECORD_HEADER_BYTES);
		FUZZ_CHECK(d[off] == TLS_CONTENT_HANDSHAKE && d[off + 1] == 3 &&
		    d[off + 2] >= 1 && d[off + 2] <= 4);
		n = (size_t)d[off + 3] << 8 | d[off + 4];
		FUZZ_CHECK(n >= 1 && n <= TLS_RECORD_MAX_BYTES);
		FUZZ_CHECK(len - off - TLS_RECORD_HEADER_BYTES >= n);
		memcpy(msg_buf + m, d + off + TLS_RECORD_HEADER_BYTES, n);
		m += n;
		off += TLS_RECORD_HEADER_BYTES + n;
		(*nrec)++;
	}
	return m;
}

static void
check_ok(const uint8_t *d, int rc, const struct tls_client_hello *h)
{
	const uint8_t	*b;
	size_t		 m, nrec, i, blen;
	char		 c;

	FUZZ_CHECK(rc > 0 && rc <= TLS_HELLO_MAX_BYTES);
	m = reassemble(d, (size_t)rc, &nrec);
	FUZZ_CHECK(h->nrecords == nrec);
	FUZZ_CHECK(h->record_version == (d[1] << 8 | d[2]));
	FUZZ_CHECK(m >= TLS_HANDSHAKE_HEADER_BYTES &&
	    msg_buf[0] == TLS_HANDSHAKE_CLIENT_HELLO);
	blen = (size_t)msg_buf[1] << 16 | (size_t)msg_buf[2] << 8 | msg_buf[3];
	FUZZ_CHECK(blen + TLS_HANDSHAKE_HEADER_BYTES == m);
	b = msg_buf + TLS_HANDSHAKE_HEADER_BYTES;
	FUZZ_CHECK(h->legacy_version == (b[0] << 8 | b[1]));
	FUZZ_CHECK(h->legacy_version >= TLS_VERSION_1_0 &&
	    h->legacy_version <= TLS_VERSION_1_2);
	FUZZ_CHECK(memcmp(h->random, b + 2, TLS_RANDOM_BYTES) == 0);
	FUZZ_CHECK(h->session_id_len == b[34] &&
	    h->session_id_len <= TLS_SESSION_ID_MAX_BYTES);
	FUZZ_CHECK(memcmp(h->session_id, b + 35, h->session_id_len) == 0);
	FUZZ_CHECK(h->ncipher_suites >= 1);
	if (h->has_sni) {
		FUZZ_CHECK(h->sni_len >= 1 && h->sni_len <= TLS_SNI_MAX_BYTES);
		FUZZ_CHECK(strlen(h->sni) == h->sni_len);
		for (i = 0; i < h->sni_len; i++) {
			c = h->sni[i];
			FUZZ_CHECK((c >= 'a' && c <= 'z') ||
			    (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			    c == '.' || c == '-' || c == '_' ||
			    (c == ':' && h->sni_is_ip));
		}
		FUZZ_CHECK(h->sni_trailing_dot ==
		    (h->sni[h->sni_len - 1] == '.' &&
		    memchr(h->sni, ':', h->sni_len) == NULL));
	} else
		FUZZ_CHECK(h->sni_len == 0 && !h->sni_is_ip &&
		    !h->sni_trailing_dot);
	FUZZ_CHECK(h->nalpn <= TLS_ALPN_MAX_PROTOCOLS &&
	    h->nalpn <= h->nalpn_sent);
	FUZZ_CHECK(h->has_alpn == (h->nalpn_sent > 0));
	FUZZ_CHECK(!h->tls13 || h->has_supported_versions);
	/* Past session_id, cipher_suites, compression_methods. */
	i = 35 + h->session_id_len;
	i += 2 + (size_t)(b[i] << 8 | b[i + 1]);
	i += 1 + (size_t)b[i];
	FUZZ_CHECK(i <= blen);
	check_exts(b + i, blen - i, h);
}

/*
 * The extensions block e[0..n) of an accepted hello, walked without the
 * parser's help: what it reported must be what is there.
 */
static void
check_exts(const uint8_t *e, size_t n, const struct tls_client_hello *h)
{
	static uint8_t	 seen[65536];
	const uint8_t	*x;
	size_t		 off = 2, xl, k, na = 0, ntypes = 0;
	uint16_t	 t;
	bool		 sni = false, alpn = false, sv = false, tls13 = false;

	if (n == 0) {
		FUZZ_CHECK(h->nextensions == 0 && !h->has_sni &&
		    !h->has_alpn && !h->has_supported_versions);
		return;
	}
	FUZZ_CHECK(n >= 2 && (size_t)(e[0] << 8 | e[1]) == n - 2);
	memset(seen, 0, sizeof(seen));
	while (off < n) {
		FUZZ_CHECK(n - off >= 4);
		t = (uint16_t)(e[off] << 8 | e[off + 1]);
		xl = (size_t)(e[off + 2] << 8 | e[off + 3]);
		x = e + off + 4;
		FUZZ_CHECK(n - off - 4 >= xl);
		FUZZ_CHECK(!seen[t]);
		seen[t] = 1;
		ntypes++;
		if (t == TLS_EXT_SERVER_NAME) {
			sni = true;
			FUZZ_CHECK(xl >= 5 && (size_t)(x[0] << 8 | x[1]) ==
			    xl - 2 && x[2] == 0);
			FUZZ_CHECK((size_t)(x[3] << 8 | x[4]) == xl - 5);
			FUZZ_CHECK(xl - 5 == h->sni_len &&
			    memcmp(x + 5, h->sni, h->sni_len) == 0);
		} else if (t == TLS_EXT_ALPN) {
			alpn = true;
			FUZZ_CHECK(xl >= 3 && (size_t)(x[0] << 8 | x[1]) ==
			    xl - 2);
			for (k = 2; k < xl; k += 1 + (size_t)x[k], na++) {
				FUZZ_CHECK(x[k] >= 1 && k + 1 + x[k] <= xl);
				if (na < h->nalpn)
					FUZZ_CHECK(h->alpn[na].len == x[k] &&
					    memcmp(h->alpn[na].name, x + k + 1,
					    x[k]) == 0);
			}
		} else if (t == TLS_EXT_SUPPORTED_VERSIONS) {
			sv = true;
			FUZZ_CHECK(xl >= 3 && x[0] == xl - 1 && x[0] % 2 == 0);
			for (k = 1; k < xl; k += 2)
				if (x[k] == 3 && x[k + 1] == 4)
					tls13 = true;
		} else if (t == TLS_EXT_PRE_SHARED_KEY)
			FUZZ_CHECK(off + 4 + xl == n);
		off += 4 + xl;
	}
	FUZZ_CHECK(h->nextensions == ntypes);
	FUZZ_CHECK(h->has_sni == sni && h->has_alpn == alpn &&
	    h->has_supported_versions == sv && h->tls13 == tls13);
	FUZZ_CHECK(h->nalpn_sent == na);
	FUZZ_CHECK(h->has_ech == (seen[TLS_EXT_ECH] != 0));
}

/* The handshake message msg[0..m) in records of at most frag bytes. */
static size_t
frame(const uint8_t *msg, size_t m, size_t frag, uint8_t *out)
{
	size_t	off = 0, o = 0, n;

	while (off < m) {
		n = m - off < frag ? m - off : frag;
		out[o++] = TLS_CONTENT_HANDSHAKE;
		out[o++] = 3;
		out[o++] = 3;
		out[o++] = (uint8_t)(n >> 8);
		out[o++] = (uint8_t)n;
		memcpy(out + o, msg + off, n);
		o += n;
		off += n;
	}
	return o;
}

/* msg_buf holds the message of h; split it anew. */
static void
check_reframed(const struct tls_client_hello *h, size_t m, size_t frag)
{
	static struct tls_client_hello	 h2;
	struct tls_client_hello		 want;
	const char			*err;
	size_t				 n;
	int				 rc;

	n = frame(msg_buf, m, frag, frame_buf);
	rc = parse_copy(frame_buf, n, &h2, &err);
	if (n > TLS_HELLO_MAX_BYTES) {
		FUZZ_CHECK(rc == TLS_INVALID && strcmp(err,
		    "ClientHello longer than moat accepts") == 0);
		return;
	}
	FUZZ_CHECK(rc > 0 && (size_t)rc == n);
	want = *h;
	want.nrecords = (m + frag - 1) / frag;
	want.record_version = TLS_VERSION_1_2;
	FUZZ_CHECK(memcmp(&want, &h2, sizeof(want)) == 0);
}

static void
run(const uint8_t *d, size_t size, size_t frag)
{
	static struct tls_client_hello	 h;
	const char			*err;
	size_t				 m, nrec;
	int				 rc;

	rc = check_prefixes(d, size, &h, &err);
	if (rc <= 0)
		return;
	check_ok(d, rc, &h);
	m = reassemble(d, (size_t)rc, &nrec);
	check_reframed(&h, m, frag);
	check_reframed(&h, m, TLS_RECORD_MAX_BYTES);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t	msg[TLS_HELLO_MAX_BYTES];
	size_t		frag, n;

	frag = size > 0 ? 1 + data[size - 1] % 64 : 1;
	run(data, size, frag);
	/* The input as a ClientHello body. */
	if (size + TLS_HANDSHAKE_HEADER_BYTES > TLS_RECORD_MAX_BYTES)
		return 0;
	msg[0] = TLS_HANDSHAKE_CLIENT_HELLO;
	msg[1] = 0;
	msg[2] = (uint8_t)(size >> 8);
	msg[3] = (uint8_t)size;
	memcpy(msg + TLS_HANDSHAKE_HEADER_BYTES, data, size);
	n = frame(msg, size + TLS_HANDSHAKE_HEADER_BYTES, TLS_RECORD_MAX_BYTES,
	    frame_buf);
	/* frame_buf is reused below: keep a copy of this framing. */
	{
		uint8_t	*copy = malloc(n);

		if (copy == NULL)
			abort();
		memcpy(copy, frame_buf, n);
		run(copy, n, frag);
		free(copy);
	}
	return 0;
}
