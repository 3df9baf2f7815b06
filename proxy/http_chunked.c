/*
 * http_chunked.c - the chunked transfer coding's decoder (RFC 9112 §7.1).
 * The contract is in http_parse.h.
 *
 * What it is: a byte state machine that never buffers: it reads the
 * framing (size lines, extensions, trailer fields) and tells the caller
 * how much chunk data follows, which the caller moves itself.  Anything
 * two implementations could frame differently (a bare LF, a size too
 * long, a bad extension) is refused with a static message.
 */
#include <sys/types.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <ctype.h>
#include <string.h>

#include "proxy/http_parse.h"
#include "proxy/http_parse_int.h"

#define CHUNK_SIZE_MAX_DIGITS		16
#define CHUNK_SIZE_MAX			((uint64_t)INT64_MAX)

/* States of the chunked decoder (struct http_chunked.state). */
enum chunked_state {
	CK_SIZE = 0,		/* hex digits of the chunk size */
	CK_SIZE_BWS,		/* BWS after the size: ';' must follow */
	CK_EXT_SEMI,		/* after ';' (and BWS): extension name */
	CK_EXT_NAME,		/* in an extension name */
	CK_EXT_NAME_BWS,	/* BWS after a name: '=' or ';' */
	CK_EXT_EQ,		/* after '=' (and BWS): value */
	CK_EXT_TOKEN,		/* in a token value */
	CK_EXT_QUOTED,		/* in a quoted-string value */
	CK_EXT_QUOTED_BS,	/* after a backslash in a quoted-string */
	CK_EXT_QEND,		/* after the closing quote */
	CK_EXT_VAL_BWS,		/* BWS after a value: ';' must follow */
	CK_SIZE_LF,		/* CR of the size line seen */
	CK_DATA,		/* chunk data: the caller moves it */
	CK_DATA_CR,		/* CR after chunk data expected */
	CK_DATA_LF,		/* LF after chunk data expected */
	CK_TRAILER_START,	/* start of a trailer field or the last CRLF */
	CK_TRAILER_NAME,	/* in a trailer field name */
	CK_TRAILER_VALUE,	/* in a trailer field value */
	CK_TRAILER_LF,		/* CR after a trailer field seen */
	CK_END_LF,		/* CR of the last line seen */
	CK_DONE,		/* body complete */
	CK_ERROR		/* failed: c->err says why */
};

static int	chunked_byte(struct http_chunked *, unsigned char,
		    const char **);
static int	chunked_size_byte(struct http_chunked *, unsigned char,
		    const char **);
static int	chunked_ext_byte(struct http_chunked *, unsigned char,
		    const char **);
static int	chunked_trailer_byte(struct http_chunked *, unsigned char,
		    const char **);


void
http_chunked_init(struct http_chunked *c)
{
	memset(c, 0, sizeof(*c));
	c->state = CK_SIZE;
}

uint64_t
http_chunked_data_left(const struct http_chunked *c)
{
	return c->state == CK_DATA ? c->remaining : 0;
}

void
http_chunked_data_consumed(struct http_chunked *c, uint64_t n)
{
	if (c->state != CK_DATA)
		return;
	c->remaining = n < c->remaining ? c->remaining - n : 0;
	if (c->remaining == 0)
		c->state = CK_DATA_CR;
}

int
http_chunked_feed(struct http_chunked *c, const char *in, size_t len,
    size_t *used, const char **err)
{
	size_t	i;
	int	rc;

	*used = 0;
	switch (c->state) {
	case CK_DONE:
		return HTTP_CHUNKED_DONE;
	case CK_ERROR:
		*err = c->err;
		return HTTP_INVALID;
	case CK_DATA:
		return HTTP_OK;		/* data starts at in[0] */
	default:
		break;
	}
	for (i = 0; i < len; i++) {
		rc = chunked_byte(c, (unsigned char)in[i], err);
		if (rc == HTTP_NEED_MORE)
			continue;
		if (rc == HTTP_INVALID) {
			c->state = CK_ERROR;
			c->err = *err;
			*used = i;
			return HTTP_INVALID;
		}
		*used = i + 1;
		return rc;
	}
	*used = len;
	return HTTP_NEED_MORE;
}

/* One framing byte.  Returns NEED_MORE to go on, OK, DONE or INVALID. */
static int
chunked_byte(struct http_chunked *c, unsigned char ch, const char **err)
{
	switch (c->state) {
	case CK_DATA_CR:
	case CK_DATA_LF:
		if (ch != (c->state == CK_DATA_CR ? '\r' : '\n')) {
			*err = "missing CRLF after chunk data";
			return HTTP_INVALID;
		}
		if (c->state == CK_DATA_CR) {
			c->state = CK_DATA_LF;
		} else {
			c->state = CK_SIZE;
			c->size = 0;
			c->digits = 0;
			c->line_len = 0;
		}
		return HTTP_NEED_MORE;
	case CK_TRAILER_START:
	case CK_TRAILER_NAME:
	case CK_TRAILER_VALUE:
	case CK_TRAILER_LF:
	case CK_END_LF:
		if (++c->trailer_len > HTTP_TRAILER_MAX_BYTES) {
			*err = "trailer section too long";
			return HTTP_INVALID;
		}
		return chunked_trailer_byte(c, ch, err);
	default:
		if (++c->line_len > HTTP_CHUNK_LINE_MAX_BYTES) {
			*err = "chunk size line too long";
			return HTTP_INVALID;
		}
		if (ch == '\n' && c->state != CK_SIZE_LF) {
			*err = "bare LF in chunk size line";
			return HTTP_INVALID;
		}
		if (c->state >= CK_EXT_SEMI && c->state <= CK_EXT_VAL_BWS)
			return chunked_ext_byte(c, ch, err);
		return chunked_size_byte(c, ch, err);
	}
}

/*
 * chunk-size [ chunk-ext ] CRLF: 1*16HEXDIG, no sign, no "0x", no white
 * space except BWS before a ';'.
 */
static int
chunked_size_byte(struct http_chunked *c, unsigned char ch, const char **err)
{
	switch (c->state) {
	case CK_SIZE:
		if (CC(ch) & CC_HEX) {
			if (++c->digits > CHUNK_SIZE_MAX_DIGITS) {
				*err = "too many digits in chunk size";
				return HTTP_INVALID;
			}
			if (c->size > CHUNK_SIZE_MAX >> 4) {
				*err = "chunk size too large";
				return HTTP_INVALID;
			}
			c->size = c->size << 4 | (uint64_t)(ch <= '9' ?
			    ch - '0' : http_lc(ch) - 'a' + 10);
			return HTTP_NEED_MORE;
		}
		if (c->digits == 0) {
			*err = ch == ' ' || ch == '\t' ?
			    "white space before chunk size" :
			    ch == '\r' || ch == ';' ? "empty chunk size" :
			    "bad chunk size";
			return HTTP_INVALID;
		}
		if (ch == ';')
			c->state = CK_EXT_SEMI;
		else if (ch == ' ' || ch == '\t')
			c->state = CK_SIZE_BWS;
		else if (ch == '\r')
			c->state = CK_SIZE_LF;
		else {
			*err = "bad chunk size";
			return HTTP_INVALID;
		}
		return HTTP_NEED_MORE;
	case CK_SIZE_BWS:
		if (ch == ';')
			c->state = CK_EXT_SEMI;
		else if (ch != ' ' && ch != '\t') {
			*err = "white space after chunk size";
			return HTTP_INVALID;
		}
		return HTTP_NEED_MORE;
	case CK_SIZE_LF:
		if (ch != '\n') {
			*err = "bare CR in chunk size line";
			return HTTP_INVALID;
		}
		if (c->size == 0) {
			c->state = CK_TRAILER_START;
			c->trailer_len = 0;
			return HTTP_NEED_MORE;
		}
		c->state = CK_DATA;
		c->remaining = c->size;
		return HTTP_OK;
	default:
		*err = "chunked decoder in a bad state";
		return HTTP_INVALID;
	}
}

/*
 * chunk-ext = *( BWS ";" BWS ext-name [ BWS "=" BWS ext-val ] ), with
 * ext-val a token or quoted-string (RFC 9112 §7.1.1).  Checked in full,
 * since the caller may pass the line on.
 */
static int
chunked_ext_byte(struct http_chunked *c, unsigned char ch, const char **err)
{
	bool	ws = ch == ' ' || ch == '\t';
	bool	tchar = (CC(ch) & CC_TCHAR) != 0;

	switch (c->state) {
	case CK_EXT_SEMI:
		if (tchar)
			c->state = CK_EXT_NAME;
		else if (!ws)
			goto bad;
		return HTTP_NEED_MORE;
	case CK_EXT_NAME:
	case CK_EXT_TOKEN:
	case CK_EXT_QEND:
		if (tchar && c->state != CK_EXT_QEND)
			return HTTP_NEED_MORE;
		if (ch == '=' && c->state == CK_EXT_NAME)
			c->state = CK_EXT_EQ;
		else if (ch == ';')
			c->state = CK_EXT_SEMI;
		else if (ch == '\r')
			c->state = CK_SIZE_LF;
		else if (ws)
			c->state = c->state == CK_EXT_NAME ? CK_EXT_NAME_BWS :
			    CK_EXT_VAL_BWS;
		else
			goto bad;
		return HTTP_NEED_MORE;
	case CK_EXT_NAME_BWS:
	case CK_EXT_VAL_BWS:
		if (ch == '=' && c->state == CK_EXT_NAME_BWS)
			c->state = CK_EXT_EQ;
		else if (ch == ';')
			c->state = CK_EXT_SEMI;
		else if (!ws)
			goto bad;
		return HTTP_NEED_MORE;
	case CK_EXT_EQ:
		if (tchar)
			c->state = CK_EXT_TOKEN;
		else if (ch == '"')
			c->state = CK_EXT_QUOTED;
		else if (!ws)
			goto bad;
		return HTTP_NEED_MORE;
	case CK_EXT_QUOTED:
		if (ch == '"')
			c->state = CK_EXT_QEND;
		else if (ch == '\\')
			c->state = CK_EXT_QUOTED_BS;
		else if (!(CC(ch) & (CC_VCHAR | CC_OBS | CC_WS)))
			goto bad;
		return HTTP_NEED_MORE;
	case CK_EXT_QUOTED_BS:
		if (!(CC(ch) & (CC_VCHAR | CC_OBS | CC_WS)))
			goto bad;
		c->state = CK_EXT_QUOTED;
		return HTTP_NEED_MORE;
	default:
		*err = "chunked decoder in a bad state";
		return HTTP_INVALID;
	}
 bad:
	if (CC(ch) & CC_CTL)
		*err = "control byte in chunk extension";
	else if (ch == '\r' && (c->state == CK_EXT_QUOTED ||
	    c->state == CK_EXT_QUOTED_BS))
		*err = "unterminated quoted-string in chunk extension";
	else if (ch == '\r' && c->state != CK_EXT_SEMI &&
	    c->state != CK_EXT_EQ)
		*err = "white space at end of chunk size line";
	else
		*err = "bad chunk extension";
	return HTTP_INVALID;
}

/* trailer-section = *( field-line CRLF ), then CRLF (RFC 9112 §7.1.2). */
static int
chunked_trailer_byte(struct http_chunked *c, unsigned char ch,
    const char **err)
{
	switch (c->state) {
	case CK_TRAILER_START:
		if (ch == '\r')
			c->state = CK_END_LF;
		else if (CC(ch) & CC_TCHAR)
			c->state = CK_TRAILER_NAME;
		else {
			*err = ch == ' ' || ch == '\t' ? "obs-fold in trailer" :
			    ch == ':' ? "empty trailer field name" :
			    ch == '\n' ? "bare LF in trailer" :
			    "bad character in trailer field name";
			return HTTP_INVALID;
		}
		return HTTP_NEED_MORE;
	case CK_TRAILER_NAME:
		if (ch == ':')
			c->state = CK_TRAILER_VALUE;
		else if (!(CC(ch) & CC_TCHAR)) {
			*err = ch == ' ' || ch == '\t' ?
			    "white space in trailer field name" :
			    ch == '\r' || ch == '\n' ?
			    "trailer field without colon" :
			    "bad character in trailer field name";
			return HTTP_INVALID;
		}
		return HTTP_NEED_MORE;
	case CK_TRAILER_VALUE:
		if (ch == '\r')
			c->state = CK_TRAILER_LF;
		else if (!(CC(ch) & (CC_VCHAR | CC_OBS | CC_WS))) {
			*err = ch == '\n' ? "bare LF in trailer" :
			    "control byte in trailer field";
			return HTTP_INVALID;
		}
		return HTTP_NEED_MORE;
	case CK_TRAILER_LF:
	case CK_END_LF:
		if (ch != '\n') {
			*err = "bare CR in trailer";
			return HTTP_INVALID;
		}
		if (c->state == CK_END_LF) {
			c->state = CK_DONE;
			return HTTP_CHUNKED_DONE;
		}
		c->state = CK_TRAILER_START;
		return HTTP_NEED_MORE;
	default:
		*err = "chunked decoder in a bad state";
		return HTTP_INVALID;
	}
}
