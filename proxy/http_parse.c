/*
 * http_parse.c - strict HTTP/1.1 head and chunked-body parsers (RFC 9110,
 * RFC 9112).  The contract is in http_parse.h.
 *
 * What it is: byte scanners and parsers with no I/O.  What it is not: a
 * normaliser.  moat sits between a workload and real servers, and any
 * byte sequence that two HTTP implementations could read differently is a
 * request-smuggling hole, so nothing here repairs input: it is refused
 * with a precise, static message.
 *
 * Shape: http_head_scan() finds the end of a head incrementally and looks
 * at each byte once across calls.  The head parsers copy the head into one
 * block (header array, copy of the head, room for the pieces of the
 * request-target), validate the copy line by line and point into it.  The
 * chunked decoder is a byte state machine that never buffers.
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

/* Character classes (one table lookup per byte). */
#define CC_TCHAR	0x01	/* token character (RFC 9110 §5.6.2) */
#define CC_VCHAR	0x02	/* visible ASCII, 0x21-0x7e */
#define CC_OBS		0x04	/* obs-text, 0x80-0xff */
#define CC_WS		0x08	/* SP and HTAB */
#define CC_HEX		0x10	/* hex digit */
#define CC_HOST		0x20	/* host name characters moat accepts */
#define CC_PATH		0x40	/* path and query characters moat accepts */
#define CC_CTL		0x80	/* controls other than HTAB, CR, LF; DEL */

#define CC_T	(CC_TCHAR | CC_VCHAR | CC_PATH)	/* token, path */
#define CC_S	(CC_VCHAR | CC_PATH)		/* delimiter, path */
#define CC_A	(CC_T | CC_HOST)		/* letter, digit */

/*
 * In the request-target moat refuses '#' (a fragment is never sent) and
 * '\' (some URL parsers read it as '/': "http://a\@b/" names two hosts).
 * Host names are letters, digits, '-', '.' and '_'; anything else
 * (percent-encoding, sub-delims) only serves to confuse a later parser.
 */
static const uint8_t http_cc[256] = {
	[0x00 ... 0x08] = CC_CTL,
	['\t'] = CC_WS,
	[0x0b ... 0x0c] = CC_CTL,
	[0x0e ... 0x1f] = CC_CTL,
	[' '] = CC_WS,
	['!'] = CC_T, ['"'] = CC_S, ['#'] = CC_TCHAR | CC_VCHAR,
	['$'] = CC_T, ['%'] = CC_T, ['&'] = CC_T, ['\''] = CC_T,
	['('] = CC_S, [')'] = CC_S, ['*'] = CC_T, ['+'] = CC_T,
	[','] = CC_S, ['-'] = CC_T | CC_HOST, ['.'] = CC_T | CC_HOST,
	['/'] = CC_S,
	['0' ... '9'] = CC_A | CC_HEX,
	[':'] = CC_S, [';'] = CC_S, ['<'] = CC_S, ['='] = CC_S,
	['>'] = CC_S, ['?'] = CC_S, ['@'] = CC_S,
	['A' ... 'F'] = CC_A | CC_HEX,
	['G' ... 'Z'] = CC_A,
	['['] = CC_S, ['\\'] = CC_VCHAR, [']'] = CC_S, ['^'] = CC_T,
	['_'] = CC_T | CC_HOST, ['`'] = CC_T,
	['a' ... 'f'] = CC_A | CC_HEX,
	['g' ... 'z'] = CC_A,
	['{'] = CC_S, ['|'] = CC_T, ['}'] = CC_S, ['~'] = CC_T,
	[0x7f] = CC_CTL,
	[0x80 ... 0xff] = CC_OBS
};

#define CC(c)		(http_cc[(unsigned char)(c)])

#define CONTENT_LENGTH_MAX_DIGITS	19	/* 10^19 - 1 fits in 64 bits */
#define PORT_MAX_DIGITS			5
#define IPV6_LITERAL_MAX_BYTES		45	/* INET6_ADDRSTRLEN - 1 */
#define CHUNK_SIZE_MAX_DIGITS		16
#define CHUNK_SIZE_MAX			((uint64_t)INT64_MAX)
#define TARGET_AREA_SLACK		8	/* NULs, "/" of an empty path */

static const struct http_limits http_default_limits = {
	HTTP_REQUEST_LINE_MAX_BYTES,
	HTTP_HEAD_MAX_BYTES,
	HTTP_HEADER_COUNT_MAX
};

/* The fields that decide framing, routing and connection reuse. */
enum field_id {
	FIELD_OTHER = 0,
	FIELD_HOST,
	FIELD_CONTENT_LENGTH,
	FIELD_TRANSFER_ENCODING,
	FIELD_CONNECTION,
	FIELD_EXPECT
};

/* What the field lines said, gathered while they are parsed. */
struct field_sum {
	bool		 request;	/* a request head (Host matters) */
	size_t		 n;		/* fields stored */
	const char	*host;		/* Host value, NUL-terminated */
	size_t		 host_len;
	bool		 have_cl;
	uint64_t	 cl;
	bool		 have_te;
	bool		 close;		/* Connection: close */
	bool		 keep_alive;	/* Connection: keep-alive */
	bool		 expect_continue;
};

/* White space around a field value, before it was trimmed. */
struct field_raw {
	size_t		 lead;		/* bytes of OWS before the value */
	bool		 lead_sp;	/* ... and the first of them is SP */
	size_t		 trail;		/* bytes of OWS after it */
};

/* One allocation per head: [header array][copy of head, NUL][area]. */
struct head_block {
	char			*mem;
	struct http_header	*hv;
	size_t			 cap;	/* entries in hv */
	char			*copy;	/* len bytes and a NUL sentinel */
	char			*eol;	/* CR ending the start line, in copy */
	char			*area;	/* room for the split request-target */
};

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

static const struct http_limits *limits_or_default(const struct http_limits *);
static int	lc(int);
static bool	ieq(const char *, const char *, size_t);
static bool	name_eq(const char *, size_t, const char *, bool *);
static enum field_id field_id(const char *, size_t, bool *);
static int	head_block_alloc(const char *, size_t,
		    const struct http_limits *, bool, struct head_block *,
		    const char **);
static int	version_parse(const char *, size_t, int *, const char **);
static int	request_line_parse(struct http_request_head *, char *, char *,
		    const char **);
static int	status_line_parse(struct http_response_head *, char *, char *,
		    const char **);
static int	target_split(struct http_request_head *, char *,
		    const char **);
static int	target_absolute(struct http_request_head *, char *,
		    const char **);
static int	target_authority(struct http_request_head *, char *,
		    const char **);
static int	path_check(const char *, size_t, const char **);
static int	authority_parse(const char *, size_t, bool, size_t *,
		    uint16_t *, const char **);
static int	ipv6_literal_check(const char *, size_t, const char **);
static int	port_parse(const char *, size_t, uint16_t *, const char **);
static const char *field_name_error(const char *);
static const char *field_value_error(const char *, const char *);
static int	field_line_parse(char **, const char *, bool,
		    struct http_header *, struct field_raw *, const char **);
static int	fields_parse(char *, const char *, const struct http_limits *,
		    struct head_block *, struct field_sum *, const char **);
static int	field_note(struct field_sum *, const struct http_header *,
		    const struct field_raw *, const char **);
static int	content_length_parse(const char *, size_t, uint64_t *,
		    const char **);
static int	request_framing(struct http_request_head *,
		    const struct field_sum *, const char **);
static int	response_framing(struct http_response_head *,
		    const struct field_sum *, const char *, const char **);
static int	chunked_byte(struct http_chunked *, unsigned char,
		    const char **);
static int	chunked_size_byte(struct http_chunked *, unsigned char,
		    const char **);
static int	chunked_ext_byte(struct http_chunked *, unsigned char,
		    const char **);
static int	chunked_trailer_byte(struct http_chunked *, unsigned char,
		    const char **);

static const struct http_limits *
limits_or_default(const struct http_limits *lim)
{
	return lim != NULL ? lim : &http_default_limits;
}

static int
lc(int c)
{
	return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

/* ASCII case-insensitive comparison of n bytes. */
static bool
ieq(const char *a, const char *b, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (lc((unsigned char)a[i]) != lc((unsigned char)b[i]))
			return false;
	return true;
}

/*
 * Case-insensitive comparison of a field name with a lower-case literal of
 * the same length.  '_' matches '-' but sets *underscore, so that callers
 * can refuse "Content_Length": gateways that map names to CGI-style
 * variables read it as Content-Length.
 */
static bool
name_eq(const char *name, size_t len, const char *lit, bool *underscore)
{
	size_t	i;
	bool	us = false;

	for (i = 0; i < len; i++) {
		if (name[i] == '_' && lit[i] == '-')
			us = true;
		else if (lc((unsigned char)name[i]) != lit[i])
			return false;
	}
	*underscore = us;
	return true;
}

static enum field_id
field_id(const char *name, size_t len, bool *underscore)
{
	*underscore = false;
	switch (len) {
	case 4:
		if (name_eq(name, len, "host", underscore))
			return FIELD_HOST;
		break;
	case 6:
		if (name_eq(name, len, "expect", underscore))
			return FIELD_EXPECT;
		break;
	case 10:
		if (name_eq(name, len, "connection", underscore))
			return FIELD_CONNECTION;
		break;
	case 14:
		if (name_eq(name, len, "content-length", underscore))
			return FIELD_CONTENT_LENGTH;
		break;
	case 17:
		if (name_eq(name, len, "transfer-encoding", underscore))
			return FIELD_TRANSFER_ENCODING;
		break;
	}
	return FIELD_OTHER;
}

int
http_head_scan(const char *buf, size_t len, const struct http_limits *lim,
    size_t *state, size_t *head_len, const char **err)
{
	const unsigned char	*p = (const unsigned char *)buf;
	size_t			 i, head_max;
	bool			 in_fields;
	unsigned char		 c;

	/*
	 * *state is (offset << 1) | in_fields.  Everything else the scan
	 * needs is in the two bytes before the offset, which the caller
	 * still holds: a CR there must be followed by LF, and a LF after
	 * CR LF ends the head.
	 */
	lim = limits_or_default(lim);
	head_max = lim->head_max < (SIZE_MAX >> 1) ? lim->head_max :
	    SIZE_MAX >> 1;
	i = *state >> 1;
	in_fields = (*state & 1) != 0;
	for (; i < len; i++) {
		c = p[i];
		if (i >= head_max) {
			*err = "head too long";
			return HTTP_INVALID;
		}
		if (i > 0 && p[i - 1] == '\r' && c != '\n') {
			*err = "bare CR in head";
			return HTTP_INVALID;
		}
		if (c == '\n') {
			if (i == 0 || p[i - 1] != '\r') {
				*err = "bare LF in head";
				return HTTP_INVALID;
			}
			if (!in_fields) {
				if (i == 1) {
					*err = "empty line before start line";
					return HTTP_INVALID;
				}
				in_fields = true;
			} else if (p[i - 2] == '\n') {
				*state = (i + 1) << 1 | 1;
				*head_len = i + 1;
				return HTTP_OK;
			}
			continue;
		}
		if (c == '\r')
			continue;
		if (CC(c) & CC_CTL) {
			*err = c == 0 ? "NUL byte in head" :
			    "control byte in head";
			return HTTP_INVALID;
		}
		if (!in_fields && i >= lim->line_max) {
			*err = "start line too long";
			return HTTP_INVALID;
		}
	}
	*state = i << 1 | (in_fields ? 1 : 0);
	return HTTP_NEED_MORE;
}

/*
 * Checks the outline of the head (length, start line), allocates its block
 * and copies it.  with_area reserves room for the pieces of a
 * request-target.  On success b->mem owns everything.
 */
static int
head_block_alloc(const char *buf, size_t len, const struct http_limits *lim,
    bool with_area, struct head_block *b, const char **err)
{
	const char	*lf, *p, *end = buf + len;
	size_t		 nlf, line_len, area_len, hv_len, total;

	memset(b, 0, sizeof(*b));
	/* Bounds the block size below, so that it cannot overflow. */
	if (len > lim->head_max ||
	    len > SIZE_MAX / (2 * sizeof(struct http_header) + 8)) {
		*err = "head too long";
		return -1;
	}
	if (len == 0 || (lf = memchr(buf, '\n', len)) == NULL) {
		*err = "incomplete head";
		return -1;
	}
	if (lf == buf || lf[-1] != '\r') {
		*err = "bare LF in head";
		return -1;
	}
	line_len = (size_t)(lf - 1 - buf);
	if (line_len == 0) {
		*err = "empty line before start line";
		return -1;
	}
	if (line_len > lim->line_max) {
		*err = "start line too long";
		return -1;
	}
	/* Every field line ends in its own LF: that bounds the count. */
	nlf = 0;
	for (p = lf + 1; p < end && (p = memchr(p, '\n', end - p)) != NULL;
	    p++)
		nlf++;
	b->cap = nlf < lim->header_count_max ? nlf : lim->header_count_max;
	area_len = with_area ? 2 * line_len + TARGET_AREA_SLACK : 0;
	hv_len = b->cap * sizeof(struct http_header);
	total = hv_len + len + 1 + area_len;
	if ((b->mem = malloc(total)) == NULL) {
		*err = "out of memory";
		return -1;
	}
	b->hv = b->cap > 0 ? (struct http_header *)(void *)b->mem : NULL;
	b->copy = b->mem + hv_len;
	memcpy(b->copy, buf, len);
	b->copy[len] = '\0';
	b->eol = b->copy + line_len;
	b->area = b->copy + len + 1;
	return 0;
}

/* "HTTP/1.0" or "HTTP/1.1", exactly (RFC 9112 §2.3: case-sensitive). */
static int
version_parse(const char *v, size_t n, int *minor, const char **err)
{
	if (n == 8 && memcmp(v, "HTTP/1.", 7) == 0 &&
	    (v[7] == '0' || v[7] == '1')) {
		*minor = v[7] - '0';
		return 0;
	}
	if (n == 8 && memcmp(v, "HTTP/", 5) == 0 && v[5] >= '0' &&
	    v[5] <= '9' && v[6] == '.' && v[7] >= '0' && v[7] <= '9')
		*err = "unsupported HTTP version";
	else
		*err = "bad HTTP version";
	return -1;
}

/*
 * method SP request-target SP HTTP-version, with exactly one SP between
 * the parts (RFC 9112 §3).  line..eol is the start line in the copy.
 */
static int
request_line_parse(struct http_request_head *h, char *line, char *eol,
    const char **err)
{
	char	*p = line, *sp, *t;

	while (p < eol && (CC(*p) & CC_TCHAR))
		p++;
	if (p == line) {
		*err = *p == ' ' || *p == '\t' ? "white space before method" :
		    "bad method";
		return -1;
	}
	if (p == eol) {
		*err = "missing request-target";
		return -1;
	}
	if (*p != ' ') {
		*err = *p == '\t' ? "HTAB in request line" :
		    "bad character in method";
		return -1;
	}
	t = p + 1;
	for (sp = eol - 1; sp >= t && *sp != ' '; sp--)
		;
	if (sp < t) {
		*err = "missing HTTP version (HTTP/0.9 refused)";
		return -1;
	}
	if (sp == t) {
		*err = "empty request-target";
		return -1;
	}
	*p = '\0';
	h->method = line;
	if (version_parse(sp + 1, (size_t)(eol - sp - 1), &h->version_minor,
	    err) == -1) {
		if (strcmp(h->method, "PRI") == 0 && sp - t == 1 &&
		    *t == '*' && eol - sp - 1 == 8 &&
		    memcmp(sp + 1, "HTTP/2.0", 8) == 0)
			*err = "HTTP/2 connection preface refused";
		return -1;
	}
	for (p = t; p < sp; p++) {
		if (CC(*p) & CC_VCHAR)
			continue;
		if (*p == ' ' || *p == '\t')
			*err = "white space in request-target";
		else if (CC(*p) & CC_OBS)
			*err = "non-ASCII byte in request-target";
		else
			*err = "control byte in request-target";
		return -1;
	}
	*sp = '\0';
	h->target = t;
	h->target_len = (size_t)(sp - t);
	return 0;
}

/*
 * HTTP-version SP 3DIGIT SP reason-phrase (RFC 9112 §4); a missing SP
 * before an empty reason is accepted, as servers in the wild omit it.
 */
static int
status_line_parse(struct http_response_head *h, char *line, char *eol,
    const char **err)
{
	size_t	 n = (size_t)(eol - line);
	char	*p;

	if (version_parse(line, n < 8 ? n : 8, &h->version_minor, err) == -1)
		return -1;
	if (n > 8 && line[8] != ' ') {
		*err = "bad HTTP version";
		return -1;
	}
	if (n < 9) {
		*err = "missing status code";
		return -1;
	}
	if (n < 12 || line[9] < '1' || line[9] > '9' || line[10] < '0' ||
	    line[10] > '9' || line[11] < '0' || line[11] > '9' ||
	    (n > 12 && line[12] != ' ')) {
		*err = "bad status code";
		return -1;
	}
	h->status = (line[9] - '0') * 100 + (line[10] - '0') * 10 +
	    (line[11] - '0');
	for (p = line + 13; p < eol; p++) {
		if (!(CC(*p) & (CC_VCHAR | CC_OBS | CC_WS))) {
			*err = "control byte in reason phrase";
			return -1;
		}
	}
	*eol = '\0';
	h->reason = n > 12 ? line + 13 : eol;
	return 0;
}

/*
 * Decides the form of the request-target (RFC 9112 §3.2) and splits it.
 * Pieces that must be NUL-terminated and are not suffixes of the target
 * are written to area.
 */
static int
target_split(struct http_request_head *h, char *area, const char **err)
{
	const char	*t = h->target;

	if (memchr(t, '#', h->target_len) != NULL) {
		*err = "fragment in request-target";
		return -1;
	}
	if (strcmp(h->method, "CONNECT") == 0) {
		if (t[0] == '/' || t[0] == '*') {
			*err = "CONNECT needs an authority-form target";
			return -1;
		}
		return target_authority(h, area, err);
	}
	if (t[0] == '/') {
		if (path_check(t, h->target_len, err) == -1)
			return -1;
		h->form = HTTP_FORM_ORIGIN;
		h->path = t;
		return 0;
	}
	if (t[0] == '*' && h->target_len == 1) {
		if (strcmp(h->method, "OPTIONS") != 0) {
			*err = "asterisk-form only with OPTIONS";
			return -1;
		}
		h->form = HTTP_FORM_ASTERISK;
		return 0;
	}
	return target_absolute(h, area, err);
}

/* scheme "://" authority path-abempty [ "?" query ] */
static int
target_absolute(struct http_request_head *h, char *area, const char **err)
{
	const char	*t = h->target, *s = t, *a, *aend;
	const char	*end = t + h->target_len;
	size_t		 host_len, i;
	char		*o = area;

	if (lc((unsigned char)*s) >= 'a' && lc((unsigned char)*s) <= 'z')
		while (s < end && ((CC(*s) & CC_HOST) || *s == '+') &&
		    *s != '_')
			s++;
	if (s == t || s == end || *s != ':') {
		*err = "bad request-target";
		return -1;
	}
	if (s[1] != '/' || s[2] != '/') {
		*err = s[1] >= '0' && s[1] <= '9' ?
		    "authority-form only with CONNECT" :
		    "absolute-form without authority";
		return -1;
	}
	h->scheme = o;
	for (i = 0; t + i < s; i++)
		*o++ = (char)lc((unsigned char)t[i]);
	*o++ = '\0';
	if (strcmp(h->scheme, "http") != 0 && strcmp(h->scheme, "https") != 0 &&
	    strcmp(h->scheme, "ws") != 0 && strcmp(h->scheme, "wss") != 0) {
		*err = "unsupported scheme in request-target";
		return -1;
	}
	a = s + 3;
	for (aend = a; aend < end && *aend != '/' && *aend != '?'; aend++)
		;
	if (authority_parse(a, (size_t)(aend - a), false, &host_len,
	    &h->port, err) == -1)
		return -1;
	if (path_check(aend, (size_t)(end - aend), err) == -1)
		return -1;
	h->authority = o;
	memcpy(o, a, (size_t)(aend - a));
	o += aend - a;
	*o++ = '\0';
	h->host = o;
	memcpy(o, a, host_len);
	o += host_len;
	*o++ = '\0';
	if (*aend == '/') {
		h->path = aend;		/* a suffix of the target */
	} else {
		/* RFC 9112 §3.2.2: an empty path is "/". */
		h->path = o;
		*o++ = '/';
		memcpy(o, aend, (size_t)(end - aend));
		o += end - aend;
		*o = '\0';
	}
	h->form = HTTP_FORM_ABSOLUTE;
	return 0;
}

/* uri-host ":" port, the port required (RFC 9112 §3.2.3). */
static int
target_authority(struct http_request_head *h, char *area, const char **err)
{
	size_t	host_len;

	if (authority_parse(h->target, h->target_len, true, &host_len,
	    &h->port, err) == -1)
		return -1;
	h->form = HTTP_FORM_AUTHORITY;
	h->authority = h->target;
	h->host = area;
	memcpy(area, h->target, host_len);
	area[host_len] = '\0';
	return 0;
}

/* Path and query: allowed characters and well-formed percent-encoding. */
static int
path_check(const char *s, size_t n, const char **err)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		if (!(CC(s[i]) & CC_PATH)) {
			*err = s[i] == '\\' ? "backslash in request-target" :
			    "bad character in request-target";
			return -1;
		}
		if (s[i] == '%') {
			if (i + 2 >= n || !(CC(s[i + 1]) & CC_HEX) ||
			    !(CC(s[i + 2]) & CC_HEX)) {
				*err = "bad percent-encoding in request-target";
				return -1;
			}
			i += 2;
		}
	}
	return 0;
}

/*
 * host [ ":" port ] of a request-target or Host field (s, n: not
 * NUL-terminated).  Userinfo is refused: "http://good@evil/" is read as
 * two different hosts by different tools.  *host_len is the length of the
 * host as sent (brackets kept), *port the port or 0.
 */
static int
authority_parse(const char *s, size_t n, bool need_port, size_t *host_len,
    uint16_t *port, const char **err)
{
	const char	*p = s, *end = s + n, *close;

	*port = 0;
	if (memchr(s, '@', n) != NULL) {
		*err = "userinfo in authority refused";
		return -1;
	}
	if (n > 0 && *p == '[') {
		if ((close = memchr(p, ']', n)) == NULL) {
			*err = "bad IPv6 literal";
			return -1;
		}
		if (ipv6_literal_check(p + 1, (size_t)(close - p - 1), err) ==
		    -1)
			return -1;
		p = close + 1;
		if (p < end && *p != ':') {
			*err = "bad character after IPv6 literal";
			return -1;
		}
	} else {
		while (p < end && (CC(*p) & CC_HOST))
			p++;
		if (p == s && (p == end || *p == ':')) {
			*err = "empty host";
			return -1;
		}
		if (p < end && *p != ':') {
			*err = "bad character in host";
			return -1;
		}
	}
	*host_len = (size_t)(p - s);
	if (p == end) {
		if (need_port) {
			*err = "missing port";
			return -1;
		}
		return 0;
	}
	return port_parse(p + 1, (size_t)(end - p - 1), port, err);
}

static int
ipv6_literal_check(const char *s, size_t n, const char **err)
{
	char		buf[IPV6_LITERAL_MAX_BYTES + 1];
	struct in6_addr	a;
	size_t		i;

	if (n > 0 && (s[0] == 'v' || s[0] == 'V')) {
		*err = "IPvFuture literal refused";
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (s[i] == '%') {
			*err = "zone ID in IPv6 literal refused";
			return -1;
		}
		if (!(CC(s[i]) & CC_HEX) && s[i] != ':' && s[i] != '.')
			break;
	}
	if (i < n || n == 0 || n > IPV6_LITERAL_MAX_BYTES)
		goto bad;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (inet_pton(AF_INET6, buf, &a) != 1)
		goto bad;
	return 0;
 bad:
	*err = "bad IPv6 literal";
	return -1;
}

/* 1*5DIGIT, 1..65535, no sign, no leading zero. */
static int
port_parse(const char *s, size_t n, uint16_t *port, const char **err)
{
	uint32_t	v = 0;
	size_t		i;

	if (n == 0) {
		*err = "empty port";
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9') {
			*err = "bad port";
			return -1;
		}
		if (i < PORT_MAX_DIGITS)
			v = v * 10 + (uint32_t)(s[i] - '0');
	}
	if (s[0] == '0') {
		*err = n == 1 ? "port 0 refused" : "leading zero in port";
		return -1;
	}
	if (n > PORT_MAX_DIGITS || v > UINT16_MAX) {
		*err = "port out of range";
		return -1;
	}
	*port = (uint16_t)v;
	return 0;
}

/* Why a field name stopped at p (not a tchar, not ':'). */
static const char *
field_name_error(const char *p)
{
	const char	*q = p;

	if (*p == ' ' || *p == '\t') {
		while (*q == ' ' || *q == '\t')
			q++;
		return *q == ':' ? "white space before colon" :
		    "white space in field name";
	}
	if (*p == '\r' || *p == '\n')
		return "field line without colon";
	return "bad character in field name";
}

/* Why a field value stopped at p (not VCHAR, obs-text or OWS). */
static const char *
field_value_error(const char *p, const char *end)
{
	if (p >= end)
		return "incomplete head";
	if (*p == '\r')
		return p + 1 >= end ? "incomplete head" : "bare CR in head";
	if (*p == '\n')
		return "bare LF in head";
	if (*p == '\0')
		return "NUL byte in field value";
	return "control byte in field value";
}

/*
 * Parses the field line at *pp (RFC 9112 §5): field-name ":" OWS
 * field-value OWS CRLF.  Returns 1 with *f filled (its value
 * NUL-terminated in place, over the OWS or CR after it) and *pp at the next
 * line, 0 at the empty line that ends the head, -1 with *err.  The copy
 * ends in a NUL sentinel, which stops every loop.
 */
static int
field_line_parse(char **pp, const char *end, bool first,
    struct http_header *f, struct field_raw *raw, const char **err)
{
	char	*p = *pp, *name, *colon, *vend;

	if (p >= end) {
		*err = "incomplete head";
		return -1;
	}
	if (*p == '\r') {
		if (p + 1 >= end || p[1] != '\n') {
			*err = field_value_error(p, end);
			return -1;
		}
		if (p + 2 != end) {
			*err = "bytes after end of head";
			return -1;
		}
		*pp = p + 2;
		return 0;
	}
	if (*p == ' ' || *p == '\t') {
		/* RFC 9112 §5.2 and §2.2: obs-fold, or a line before it. */
		*err = first ? "white space before first field" :
		    "obs-fold in header";
		return -1;
	}
	for (name = p; CC(*p) & CC_TCHAR; p++)
		;
	if (*p != ':') {
		*err = field_name_error(p);
		return -1;
	}
	if (p == name) {
		*err = "empty field name";
		return -1;
	}
	colon = p++;
	while (*p == ' ' || *p == '\t')
		p++;
	raw->lead = (size_t)(p - colon - 1);
	raw->lead_sp = raw->lead > 0 && colon[1] == ' ';
	f->name = name;
	f->name_len = (size_t)(colon - name);
	f->value = p;
	for (vend = p; ; p++) {
		if (CC(*p) & (CC_VCHAR | CC_OBS))
			vend = p + 1;
		else if (!(CC(*p) & CC_WS))
			break;
	}
	if (*p != '\r' || p + 1 >= end || p[1] != '\n') {
		*err = field_value_error(p, end);
		return -1;
	}
	raw->trail = (size_t)(p - vend);
	f->value_len = (size_t)(vend - f->value);
	*vend = '\0';
	*pp = p + 2;
	return 1;
}

static int
fields_parse(char *p, const char *end, const struct http_limits *lim,
    struct head_block *b, struct field_sum *fs, const char **err)
{
	struct http_header	f;
	struct field_raw	raw;
	int			r;

	for (;;) {
		r = field_line_parse(&p, end, fs->n == 0, &f, &raw, err);
		if (r <= 0)
			return r;
		if (fs->n >= lim->header_count_max || fs->n >= b->cap) {
			*err = "too many header fields";
			return -1;
		}
		b->hv[fs->n++] = f;
		if (field_note(fs, &f, &raw, err) == -1)
			return -1;
	}
}

/*
 * Records what a field means for framing and routing, refusing
 * repetitions and anything but the plainest spelling of the framing
 * fields: no OWS other than one SP before the value, since a front end
 * that trims differently from a back end is how TE.TE smuggling starts.
 */
static int
field_note(struct field_sum *fs, const struct http_header *f,
    const struct field_raw *raw, const char **err)
{
	enum field_id	id;
	bool		underscore, plain;

	id = field_id(f->name, f->name_len, &underscore);
	if (underscore) {
		*err = "underscore in framing field name";
		return -1;
	}
	plain = raw->trail == 0 && (raw->lead == 0 ||
	    (raw->lead == 1 && raw->lead_sp));
	switch (id) {
	case FIELD_HOST:
		if (!fs->request)
			return 0;
		if (fs->host != NULL) {
			*err = "duplicate Host field";
			return -1;
		}
		fs->host = f->value;
		fs->host_len = f->value_len;
		return 0;
	case FIELD_CONTENT_LENGTH:
		if (fs->have_cl) {
			*err = "duplicate Content-Length";
			return -1;
		}
		if (!plain) {
			*err = "white space around Content-Length value";
			return -1;
		}
		fs->have_cl = true;
		return content_length_parse(f->value, f->value_len, &fs->cl,
		    err);
	case FIELD_TRANSFER_ENCODING:
		if (fs->have_te) {
			*err = "duplicate Transfer-Encoding";
			return -1;
		}
		if (!plain) {
			*err = "white space around Transfer-Encoding value";
			return -1;
		}
		fs->have_te = true;
		if (f->value_len == 7 && ieq(f->value, "chunked", 7))
			return 0;
		*err = memchr(f->value, ',', f->value_len) != NULL ?
		    "Transfer-Encoding other than chunked" :
		    "unsupported Transfer-Encoding";
		return -1;
	case FIELD_CONNECTION:
		fs->close |= http_list_has_token(f->value, f->value_len,
		    "close");
		fs->keep_alive |= http_list_has_token(f->value, f->value_len,
		    "keep-alive");
		return 0;
	case FIELD_EXPECT:
		fs->expect_continue |= f->value_len == 12 &&
		    ieq(f->value, "100-continue", 12);
		return 0;
	case FIELD_OTHER:
		break;
	}
	return 0;
}

/* 1*DIGIT, at most 19 digits, at most INT64_MAX (RFC 9110 §8.6). */
static int
content_length_parse(const char *v, size_t n, uint64_t *out,
    const char **err)
{
	uint64_t	x = 0;
	size_t		i;

	if (n == 0) {
		*err = "empty Content-Length";
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9') {
			*err = v[i] == ',' ? "Content-Length list refused" :
			    "bad Content-Length";
			return -1;
		}
	}
	if (n > CONTENT_LENGTH_MAX_DIGITS) {
		*err = "Content-Length too large";
		return -1;
	}
	for (i = 0; i < n; i++)
		x = x * 10 + (uint64_t)(v[i] - '0');
	if (x > (uint64_t)INT64_MAX) {
		*err = "Content-Length too large";
		return -1;
	}
	*out = x;
	return 0;
}

int
http_request_head_parse(const char *buf, size_t len,
    const struct http_limits *lim, struct http_request_head *out,
    const char **err)
{
	struct head_block	b;
	struct field_sum	fs;
	int			rc = HTTP_INVALID;

	memset(out, 0, sizeof(*out));
	memset(&fs, 0, sizeof(fs));
	fs.request = true;
	lim = limits_or_default(lim);
	if (head_block_alloc(buf, len, lim, true, &b, err) == -1)
		goto out;
	out->mem = b.mem;
	out->head_len = len;
	if (request_line_parse(out, b.copy, b.eol, err) == -1 ||
	    target_split(out, b.area, err) == -1 ||
	    fields_parse(b.eol + 2, b.copy + len, lim, &b, &fs, err) == -1)
		goto out;
	out->headers = b.hv;
	out->nheaders = fs.n;
	if (request_framing(out, &fs, err) == -1)
		goto out;
	rc = HTTP_OK;
 out:
	if (rc != HTTP_OK)
		http_request_head_free(out);
	return rc;
}

static int
request_framing(struct http_request_head *h, const struct field_sum *fs,
    const char **err)
{
	size_t	host_len;
	uint16_t port;

	if (fs->host == NULL && h->version_minor == 1) {
		*err = "missing Host field";
		return -1;
	}
	if (fs->host != NULL && authority_parse(fs->host, fs->host_len,
	    false, &host_len, &port, err) == -1) {
		*err = *fs->host == '\0' ? "empty Host field" :
		    "bad Host field";
		return -1;
	}
	h->host_header = fs->host;
	if (fs->have_te && h->version_minor == 0) {
		*err = "Transfer-Encoding in HTTP/1.0 message";
		return -1;
	}
	if (fs->have_te && fs->have_cl) {
		*err = "Content-Length with Transfer-Encoding";
		return -1;
	}
	if (fs->have_te)
		h->body = HTTP_BODY_CHUNKED;
	else if (fs->have_cl)
		h->body = HTTP_BODY_LENGTH;
	else
		h->body = HTTP_BODY_NONE;
	h->content_length = fs->have_cl ? fs->cl : 0;
	/* Bytes after a CONNECT head belong to the tunnel, never a body. */
	if (h->form == HTTP_FORM_AUTHORITY && (fs->have_te || fs->cl > 0)) {
		*err = "body in CONNECT request refused";
		return -1;
	}
	h->keep_alive = !fs->close && (h->version_minor == 1 ||
	    fs->keep_alive);
	h->expect_continue = h->version_minor == 1 && fs->expect_continue;
	return 0;
}

void
http_request_head_free(struct http_request_head *h)
{
	if (h == NULL)
		return;
	free(h->mem);
	memset(h, 0, sizeof(*h));
}

int
http_response_head_parse(const char *buf, size_t len,
    const struct http_limits *lim, const char *request_method,
    struct http_response_head *out, const char **err)
{
	struct head_block	b;
	struct field_sum	fs;
	int			rc = HTTP_INVALID;

	memset(out, 0, sizeof(*out));
	memset(&fs, 0, sizeof(fs));
	lim = limits_or_default(lim);
	if (head_block_alloc(buf, len, lim, false, &b, err) == -1)
		goto out;
	out->mem = b.mem;
	out->head_len = len;
	if (status_line_parse(out, b.copy, b.eol, err) == -1 ||
	    fields_parse(b.eol + 2, b.copy + len, lim, &b, &fs, err) == -1)
		goto out;
	out->headers = b.hv;
	out->nheaders = fs.n;
	if (response_framing(out, &fs, request_method, err) == -1)
		goto out;
	rc = HTTP_OK;
 out:
	if (rc != HTTP_OK)
		http_response_head_free(out);
	return rc;
}

/* RFC 9112 §6.3, refusing where the RFC lets one field win. */
static int
response_framing(struct http_response_head *h, const struct field_sum *fs,
    const char *method, const char **err)
{
	bool	head = method != NULL && strcmp(method, "HEAD") == 0;
	bool	connect = method != NULL && strcmp(method, "CONNECT") == 0;

	if (fs->have_te && h->version_minor == 0) {
		*err = "Transfer-Encoding in HTTP/1.0 message";
		return -1;
	}
	if (fs->have_te && fs->have_cl) {
		*err = "Content-Length with Transfer-Encoding";
		return -1;
	}
	if (connect && h->status >= 200 && h->status <= 299) {
		*err = "2xx response to CONNECT refused";
		return -1;
	}
	h->content_length = fs->have_cl ? fs->cl : 0;
	if (head || h->status < 200 || h->status == 204 || h->status == 304)
		h->body = HTTP_BODY_NONE;
	else if (fs->have_te)
		h->body = HTTP_BODY_CHUNKED;
	else if (fs->have_cl)
		h->body = HTTP_BODY_LENGTH;
	else
		h->body = HTTP_BODY_CLOSE;
	h->keep_alive = h->body != HTTP_BODY_CLOSE && !fs->close &&
	    (h->version_minor == 1 || fs->keep_alive);
	return 0;
}

void
http_response_head_free(struct http_response_head *h)
{
	if (h == NULL)
		return;
	free(h->mem);
	memset(h, 0, sizeof(*h));
}

bool
http_error_is_limit(const char *err)
{
	static const char *const limit_errors[] = {
		"head too long",
		"start line too long",
		"too many header fields",
		"chunk size line too long",
		"trailer section too long"
	};
	size_t	i;

	if (err == NULL)
		return false;
	for (i = 0; i < sizeof(limit_errors) / sizeof(limit_errors[0]); i++)
		if (strcmp(err, limit_errors[i]) == 0)
			return true;
	return false;
}

int
http_header_find(const struct http_header *hv, size_t n, size_t from,
    const char *name)
{
	size_t	len = strlen(name), i;

	for (i = from; i < n; i++)
		if (hv[i].name_len == len && ieq(hv[i].name, name, len))
			return (int)i;
	return -1;
}

/* Field names that ask a backend to take another method than the
 * request line's. */
static const char *const	http_override_fields[] = {
	"x-http-method-override", "x-http-method", "x-method-override",
};

bool
http_request_has_override(const struct http_request_head *req)
{
	const struct http_header	*h;
	const char			*want;
	size_t				 i, j, k;
	char				 a, b;

	for (i = 0; i < req->nheaders; i++) {
		h = &req->headers[i];
		for (j = 0; j < sizeof(http_override_fields) /
		    sizeof(http_override_fields[0]); j++) {
			want = http_override_fields[j];
			if (h->name_len != strlen(want))
				continue;
			/* "_" for "-" too: CGI-style servers read both as
			 * the same variable. */
			for (k = 0; k < h->name_len; k++) {
				a = (char)tolower((unsigned char)h->name[k]);
				b = want[k];
				if (a != b && !(a == '_' && b == '-'))
					break;
			}
			if (k == h->name_len)
				return true;
		}
	}
	return false;
}

bool
http_list_has_token(const char *value, size_t len, const char *token)
{
	size_t	tlen = strlen(token), i = 0, s, e;

	while (i < len) {
		while (i < len && (value[i] == ' ' || value[i] == '\t'))
			i++;
		for (s = i; i < len && value[i] != ','; i++)
			;
		for (e = i; e > s && (value[e - 1] == ' ' ||
		    value[e - 1] == '\t'); e--)
			;
		if (e - s == tlen && ieq(value + s, token, tlen))
			return true;
		i++;		/* the comma */
	}
	return false;
}

/* ---- chunked transfer coding ---------------------------------------- */

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
			    ch - '0' : lc(ch) - 'a' + 10);
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
