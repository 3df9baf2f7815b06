/*
 * http_head.c - strict HTTP/1.1 request and response heads (RFC 9110,
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
 * request-target itself is split by http_target.c, chunked bodies are
 * decoded by http_chunked.c; both share the character classes here.
 */
#include "config.h"

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


/*
 * In the request-target moat refuses '#' (a fragment is never sent) and
 * '\' (some URL parsers read it as '/': "http://a\@b/" names two hosts).
 * Host names are letters, digits, '-', '.' and '_'; anything else
 * (percent-encoding, sub-delims) only serves to confuse a later parser.
 */
const uint8_t	http_cc[256] = {
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


#define CONTENT_LENGTH_MAX_DIGITS	19	/* 10^19 - 1 fits in 64 bits */
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

static const struct http_limits *limits_or_default(const struct http_limits *);
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

static const struct http_limits *
limits_or_default(const struct http_limits *lim)
{
	return lim != NULL ? lim : &http_default_limits;
}

/* a[0..n) is the string literal s, ASCII case-insensitively. */
#define IEQ_LIT(a, n, s)	((n) == LIT_LEN(s) && ieq((a), "" s "", (n)))

/* ASCII case-insensitive comparison of n bytes. */
static bool
ieq(const char *a, const char *b, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (http_lc((unsigned char)a[i]) !=
		    http_lc((unsigned char)b[i]))
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
		else if (http_lc((unsigned char)name[i]) != lit[i])
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
	if (n == 8 && MEMCMP_LIT(v, "HTTP/1.") == 0 &&
	    (v[7] == '0' || v[7] == '1')) {
		*minor = v[7] - '0';
		return 0;
	}
	if (n == 8 && MEMCMP_LIT(v, "HTTP/") == 0 && v[5] >= '0' &&
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
		    *t == '*' && eol - sp - 1 == LIT_LEN("HTTP/2.0") &&
		    MEMCMP_LIT(sp + 1, "HTTP/2.0") == 0)
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
		if (IEQ_LIT(f->value, f->value_len, "chunked"))
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
		fs->expect_continue |= IEQ_LIT(f->value, f->value_len,
		    "100-continue");
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
	    http_target_split(out, b.area, err) == -1 ||
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
	if (fs->host != NULL && http_authority_parse(fs->host,
	    fs->host_len, false, &host_len, &port, err) == -1) {
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

