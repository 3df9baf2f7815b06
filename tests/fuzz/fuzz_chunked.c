/*
 * fuzz_chunked.c - fuzz target for the chunked decoder (proxy/http_chunked.c).
 *
 * Properties, each an abort() when broken:
 * - the verdict, the message, the decoded bytes and the number of bytes
 *   consumed are the same when the input arrives at once, one byte at a
 *   time, or in pieces whose sizes are derived from the data;
 * - they agree with a reference decoder written here independently: a
 *   plain recursive-descent reading of RFC 9112 §7.1 over the whole buffer
 *   with moat's limits, which decides at the first byte that no valid body
 *   can continue.  Verdicts, decoded bytes and (when done) the consumed
 *   length must match, with one allowance: a size line that can no longer
 *   end within HTTP_CHUNK_LINE_MAX_BYTES is refused by moat's decoder only
 *   when a byte passes the limit (its contract), not as soon as the
 *   reference sees it coming; then the decoder must have taken every byte
 *   and must refuse once the line's CRLF arrives.
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/http_parse.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define FUZZ_CHECK(c)	do { if (!(c)) abort(); } while (0)

/* What ref_peek() and the scanners return instead of a byte. */
#define REF_END		(-1)	/* input ran out */
#define REF_LIMIT	(-2)	/* the byte would pass the limit */
#define REF_INVAL	(-3)	/* no valid continuation */
/* Results of the reference decoder. */
#define REF_NEED	0
#define REF_DONE	1
#define REF_BAD		2

struct ref {
	const unsigned char	*in;
	size_t			 len;
	size_t			 pos;
	size_t			 base;	/* start of the limited section */
	size_t			 max;	/* its limit in bytes; 0: none */
	bool			 limited; /* a byte would have passed it */
	char			*out;
	size_t			 outlen;
};

struct run {
	int		 rc;
	const char	*err;
	size_t		 used;
	size_t		 outlen;
	char		*out;
};

static int	ref_peek(struct ref *);
static bool	ref_tchar(int);
static bool	ref_hex(int);
static int	ref_fail(int);
static int	ref_ws(struct ref *, bool *);
static int	ref_token(struct ref *);
static int	ref_quoted(struct ref *);
static int	ref_crlf(struct ref *);
static int	ref_size_line(struct ref *, uint64_t *);
static int	ref_trailers(struct ref *);
static int	ref_decode(struct ref *);
static void	run(const char *, size_t, const uint8_t *, size_t,
		    struct run *);

static int
ref_peek(struct ref *r)
{
	if (r->max != 0 && r->pos - r->base >= r->max) {
		r->limited = true;
		return REF_LIMIT;
	}
	if (r->pos >= r->len)
		return REF_END;
	return r->in[r->pos];
}

static bool
ref_tchar(int c)
{
	return c > 0 && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	    (c >= 'A' && c <= 'Z') || strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static bool
ref_hex(int c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
	    (c >= 'A' && c <= 'F');
}

/* A peek that was not the expected byte: out of input, or invalid. */
static int
ref_fail(int c)
{
	return c == REF_END ? REF_NEED : REF_BAD;
}

/* Skips SP/HTAB; *any says whether there was some.  Returns c after. */
static int
ref_ws(struct ref *r, bool *any)
{
	int	c;

	*any = false;
	while ((c = ref_peek(r)) == ' ' || c == '\t') {
		r->pos++;
		*any = true;
	}
	return c;
}

/* 1*tchar; returns the peek after it, or REF_INVAL if there was none. */
static int
ref_token(struct ref *r)
{
	size_t	start = r->pos;
	int	c;

	while (ref_tchar(c = ref_peek(r)))
		r->pos++;
	if (r->pos == start)
		return c < 0 ? c : REF_INVAL;
	return c;
}

/* DQUOTE *( qdtext / quoted-pair ) DQUOTE, at the opening quote. */
static int
ref_quoted(struct ref *r)
{
	int	c;

	r->pos++;
	for (;;) {
		c = ref_peek(r);
		if (c < 0)
			return c;
		r->pos++;
		if (c == '"')
			return ref_peek(r);
		if (c == '\\') {
			c = ref_peek(r);
			if (c < 0)
				return c;
			if (!(c == '\t' || (c >= 0x20 && c != 0x7f)))
				return REF_INVAL;
			r->pos++;
			continue;
		}
		if (!(c == '\t' || (c >= 0x20 && c != 0x7f)))
			return REF_INVAL;
	}
}

static int
ref_crlf(struct ref *r)
{
	int	c;

	if ((c = ref_peek(r)) != '\r')
		return ref_fail(c);
	r->pos++;
	if ((c = ref_peek(r)) != '\n')
		return ref_fail(c);
	r->pos++;
	return REF_DONE;
}

/* chunk-size *( BWS ";" BWS name [ BWS "=" BWS value ] ) CRLF */
static int
ref_size_line(struct ref *r, uint64_t *size)
{
	int	c, digits = 0;
	bool	ws;

	r->base = r->pos;
	r->max = HTTP_CHUNK_LINE_MAX_BYTES;
	*size = 0;
	while (ref_hex(c = ref_peek(r))) {
		if (digits == 16 || *size > (uint64_t)INT64_MAX >> 4)
			return REF_BAD;
		*size = *size << 4 | (uint64_t)(c <= '9' ? c - '0' :
		    (c | 0x20) - 'a' + 10);
		digits++;
		r->pos++;
	}
	if (digits == 0)
		return ref_fail(c);
	/* c and ws: the byte after the last element, and BWS before it. */
	c = ref_ws(r, &ws);
	for (;;) {
		if (c == '\r' && !ws)
			return ref_crlf(r);
		if (c != ';')
			return ref_fail(c);
		r->pos++;
		ref_ws(r, &ws);
		if ((c = ref_token(r)) < 0)
			return ref_fail(c);
		c = ref_ws(r, &ws);
		if (c != '=')
			continue;
		r->pos++;
		if ((c = ref_ws(r, &ws)) == '"')
			c = ref_quoted(r);
		else
			c = ref_token(r);
		if (c < 0)
			return ref_fail(c);
		c = ref_ws(r, &ws);
	}
}

/* *( field-line CRLF ) CRLF, limited as a whole. */
static int
ref_trailers(struct ref *r)
{
	int	c;

	r->base = r->pos;
	r->max = HTTP_TRAILER_MAX_BYTES;
	for (;;) {
		if ((c = ref_peek(r)) == '\r')
			return ref_crlf(r);
		if ((c = ref_token(r)) != ':')
			return ref_fail(c);
		r->pos++;
		while ((c = ref_peek(r)) == '\t' ||
		    (c >= 0x20 && c != 0x7f))
			r->pos++;
		if ((c = ref_crlf(r)) != REF_DONE)
			return c;
	}
}

static int
ref_decode(struct ref *r)
{
	uint64_t	size;
	size_t		n;
	int		rc;

	for (;;) {
		if ((rc = ref_size_line(r, &size)) != REF_DONE)
			return rc;
		if (size == 0)
			return ref_trailers(r);
		r->max = 0;
		n = r->len - r->pos < size ? r->len - r->pos : (size_t)size;
		memcpy(r->out + r->outlen, r->in + r->pos, n);
		r->outlen += n;
		r->pos += n;
		if (n < size)
			return REF_NEED;
		if ((rc = ref_crlf(r)) != REF_DONE)
			return rc;
	}
}

/*
 * Runs the decoder over in[0..len), the input arriving in pieces whose
 * sizes are taken in turn from steps[0..nsteps) (each 1 + byte).
 */
static void
run(const char *in, size_t len, const uint8_t *steps, size_t nsteps,
    struct run *res)
{
	struct http_chunked	c;
	size_t			pos = 0, end = 0, used, n, si = 0;
	uint64_t		left;

	http_chunked_init(&c);
	res->outlen = 0;
	res->err = NULL;
	for (;;) {
		while (pos < end) {
			if ((left = http_chunked_data_left(&c)) > 0) {
				n = left < end - pos ? (size_t)left : end - pos;
				memcpy(res->out + res->outlen, in + pos, n);
				res->outlen += n;
				pos += n;
				http_chunked_data_consumed(&c, n);
				continue;
			}
			res->rc = http_chunked_feed(&c, in + pos, end - pos,
			    &used, &res->err);
			FUZZ_CHECK(used <= end - pos);
			pos += used;
			if (res->rc == HTTP_CHUNKED_DONE ||
			    res->rc == HTTP_INVALID)
				goto out;
			FUZZ_CHECK(res->rc == HTTP_OK ||
			    (res->rc == HTTP_NEED_MORE && pos == end));
		}
		if (end == len)
			break;
		n = nsteps == 0 ? len : (size_t)steps[si++ % nsteps] + 1;
		end = len - end < n ? len : end + n;
	}
	res->rc = HTTP_NEED_MORE;
 out:
	res->used = pos;
	/* Once finished, the decoder stays where it is. */
	if (res->rc == HTTP_CHUNKED_DONE || res->rc == HTTP_INVALID) {
		const char *e = NULL;

		FUZZ_CHECK(http_chunked_feed(&c, "0\r\n\r\n", 5, &used, &e) ==
		    res->rc && used == 0);
		FUZZ_CHECK(res->rc != HTTP_INVALID || e == res->err);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t	 one = 0;
	struct run		 whole, bytes, pieces;
	struct ref		 ref;
	char			*in = NULL;
	int			 want;

	memset(&whole, 0, sizeof(whole));
	memset(&bytes, 0, sizeof(bytes));
	memset(&pieces, 0, sizeof(pieces));
	memset(&ref, 0, sizeof(ref));
	if ((in = malloc(size ? size : 1)) == NULL ||
	    (whole.out = malloc(size + 1)) == NULL ||
	    (bytes.out = malloc(size + 1)) == NULL ||
	    (pieces.out = malloc(size + 1)) == NULL ||
	    (ref.out = malloc(size + 1)) == NULL)
		goto out;
	memcpy(in, data, size);
	run(in, size, NULL, 0, &whole);
	run(in, size, &one, 1, &bytes);
	/* Piece sizes come from the input itself, read backwards. */
	run(in, size, data + size / 2, size - size / 2, &pieces);
	FUZZ_CHECK(whole.rc == bytes.rc && whole.rc == pieces.rc);
	FUZZ_CHECK(whole.err == bytes.err && whole.err == pieces.err);
	FUZZ_CHECK(whole.used == bytes.used && whole.used == pieces.used);
	FUZZ_CHECK(whole.outlen == bytes.outlen &&
	    whole.outlen == pieces.outlen);
	FUZZ_CHECK(memcmp(whole.out, bytes.out, whole.outlen) == 0 &&
	    memcmp(whole.out, pieces.out, whole.outlen) == 0);
	FUZZ_CHECK((whole.rc == HTTP_INVALID) == (whole.err != NULL));

	ref.in = (const unsigned char *)in;
	ref.len = size;
	switch (ref_decode(&ref)) {
	case REF_DONE:
		want = HTTP_CHUNKED_DONE;
		break;
	case REF_NEED:
		want = HTTP_NEED_MORE;
		break;
	default:
		want = HTTP_INVALID;
		break;
	}
	if (want == HTTP_INVALID && ref.limited && whole.rc == HTTP_NEED_MORE) {
		/* The allowance: see the top of this file. */
		struct run	 more;
		char		*in2;

		FUZZ_CHECK(whole.used == size);
		memset(&more, 0, sizeof(more));
		if ((in2 = malloc(size + 4)) == NULL ||
		    (more.out = malloc(size + 5)) == NULL) {
			free(in2);
			goto out;
		}
		memcpy(in2, in, size);
		MEMCPY_LIT(in2 + size, "\r\n\r\n");
		run(in2, size + 4, NULL, 0, &more);
		FUZZ_CHECK(more.rc == HTTP_INVALID);
		free(more.out);
		free(in2);
		want = HTTP_NEED_MORE;
	}
	FUZZ_CHECK(whole.rc == want);
	FUZZ_CHECK(whole.outlen == ref.outlen &&
	    memcmp(whole.out, ref.out, ref.outlen) == 0);
	if (want == HTTP_CHUNKED_DONE)
		FUZZ_CHECK(whole.used == ref.pos);
	if (want == HTTP_NEED_MORE)
		FUZZ_CHECK(whole.used == size);
 out:
	free(ref.out);
	free(pieces.out);
	free(bytes.out);
	free(whole.out);
	free(in);
	return 0;
}
