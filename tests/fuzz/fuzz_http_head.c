/*
 * fuzz_http_head.c - fuzz target for http_head_scan and the request and
 * response head parsers (proxy/http_head.c, proxy/http_target.c).
 *
 * Properties, each an abort() when broken:
 * - the scan gives the same verdict, head length and message whether the
 *   input arrives at once, in two parts split at a point derived from the
 *   data, or one byte at a time;
 * - a head the scan accepts ends in CRLF CRLF and has no bare CR or LF, NUL
 *   or other control byte but HTAB (checked here independently);
 * - the parsers accept only a whole head: if they accept the input, the
 *   scan ends exactly at its end;
 * - what they return is consistent: tokens are tokens, values are trimmed
 *   and NUL-terminated, the framing follows RFC 9112 §6 as moat reads it.
 * Each input runs with the default limits and with small limits derived
 * from it, so the limit paths are reached too.
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/http_parse.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define FUZZ_CHECK(c)	do { if (!(c)) abort(); } while (0)

static const char *const methods[] = { "GET", "HEAD", "CONNECT", "POST", NULL };

static uint32_t	hash(const uint8_t *, size_t);
static bool	is_tchar(unsigned char);
static void	check_bytes(const char *, size_t);
static int	scan_check(const char *, size_t, const struct http_limits *,
		    uint32_t, size_t *);
static void	check_fields(const struct http_header *, size_t,
		    const struct http_limits *);
static void	check_request(const struct http_request_head *,
		    const struct http_limits *);
static void	check_response(const struct http_response_head *,
		    const struct http_limits *, const char *);
static void	parse_all(const char *, size_t, const struct http_limits *,
		    uint32_t);

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

static bool
is_tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	    (c >= 'A' && c <= 'Z') || (c != 0 && strchr("!#$%&'*+-.^_`|~",
	    c) != NULL);
}

/* What any accepted head must satisfy, computed without the parser. */
static void
check_bytes(const char *b, size_t n)
{
	size_t	i;

	FUZZ_CHECK(n >= 4 && MEMCMP_LIT(b + n - 4, "\r\n\r\n") == 0);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)b[i];

		if (c == '\r')
			FUZZ_CHECK(i + 1 < n && b[i + 1] == '\n');
		else if (c == '\n')
			FUZZ_CHECK(i > 0 && b[i - 1] == '\r');
		else
			FUZZ_CHECK(c == '\t' || (c >= 0x20 && c != 0x7f));
	}
}

/*
 * Scans at once, split in two, and byte by byte; all must agree.  Returns
 * the verdict with *head_len.
 */
static int
scan_check(const char *buf, size_t len, const struct http_limits *lim,
    uint32_t h, size_t *head_len)
{
	const char	*e1 = NULL, *e2 = NULL, *e3 = NULL;
	size_t		 st, hl1 = 0, hl2 = 0, hl3 = 0, split, k;
	int		 r1, r2, r3;

	st = 0;
	r1 = http_head_scan(buf, len, lim, &st, &hl1, &e1);
	split = h % (len + 1);
	st = 0;
	r2 = http_head_scan(buf, split, lim, &st, &hl2, &e2);
	if (r2 == HTTP_NEED_MORE)
		r2 = http_head_scan(buf, len, lim, &st, &hl2, &e2);
	st = 0;
	r3 = http_head_scan(buf, 0, lim, &st, &hl3, &e3);
	FUZZ_CHECK(r3 == HTTP_NEED_MORE);
	for (k = 1; k <= len && r3 == HTTP_NEED_MORE; k++)
		r3 = http_head_scan(buf, k, lim, &st, &hl3, &e3);
	FUZZ_CHECK(r1 == r2 && r1 == r3);
	if (r1 == HTTP_OK) {
		FUZZ_CHECK(hl1 == hl2 && hl1 == hl3 && hl1 <= len);
		FUZZ_CHECK(hl1 <= lim->head_max);
		check_bytes(buf, hl1);
	}
	if (r1 == HTTP_INVALID)
		FUZZ_CHECK(e1 != NULL && e1 == e2 && e1 == e3);
	*head_len = hl1;
	return r1;
}

static void
check_fields(const struct http_header *hv, size_t n,
    const struct http_limits *lim)
{
	size_t	i, j;
	int	cl, te;

	FUZZ_CHECK(n <= lim->header_count_max);
	for (i = 0; i < n; i++) {
		FUZZ_CHECK(hv[i].name_len > 0);
		for (j = 0; j < hv[i].name_len; j++)
			FUZZ_CHECK(is_tchar((unsigned char)hv[i].name[j]));
		FUZZ_CHECK(hv[i].value[hv[i].value_len] == '\0');
		FUZZ_CHECK(memchr(hv[i].value, '\r', hv[i].value_len) == NULL);
		FUZZ_CHECK(memchr(hv[i].value, '\n', hv[i].value_len) == NULL);
		if (hv[i].value_len > 0) {
			FUZZ_CHECK(hv[i].value[0] != ' ' &&
			    hv[i].value[0] != '\t');
			FUZZ_CHECK(hv[i].value[hv[i].value_len - 1] != ' ' &&
			    hv[i].value[hv[i].value_len - 1] != '\t');
		}
	}
	cl = http_header_find(hv, n, 0, "content-length");
	te = http_header_find(hv, n, 0, "transfer-encoding");
	FUZZ_CHECK(cl == -1 || te == -1);
	FUZZ_CHECK(cl == -1 || http_header_find(hv, n, cl + 1,
	    "content-length") == -1);
	FUZZ_CHECK(te == -1 || (http_header_find(hv, n, te + 1,
	    "transfer-encoding") == -1 && hv[te].value_len == 7 &&
	    http_list_has_token(hv[te].value, 7, "chunked")));
}

static void
check_request(const struct http_request_head *r,
    const struct http_limits *lim)
{
	size_t	i;

	FUZZ_CHECK(r->mem != NULL && r->method[0] != '\0');
	for (i = 0; r->method[i] != '\0'; i++)
		FUZZ_CHECK(is_tchar((unsigned char)r->method[i]));
	FUZZ_CHECK(r->target_len > 0 && strlen(r->target) == r->target_len);
	for (i = 0; i < r->target_len; i++)
		FUZZ_CHECK(r->target[i] > 0x20 && r->target[i] < 0x7f &&
		    r->target[i] != '#');
	FUZZ_CHECK(r->version_minor == 0 || r->version_minor == 1);
	switch (r->form) {
	case HTTP_FORM_ORIGIN:
		FUZZ_CHECK(r->target[0] == '/' && r->path == r->target);
		FUZZ_CHECK(r->host == NULL && r->scheme == NULL);
		FUZZ_CHECK(strcmp(r->method, "CONNECT") != 0);
		break;
	case HTTP_FORM_ABSOLUTE:
		FUZZ_CHECK(strcmp(r->scheme, "http") == 0 ||
		    strcmp(r->scheme, "https") == 0 ||
		    strcmp(r->scheme, "ws") == 0 ||
		    strcmp(r->scheme, "wss") == 0);
		FUZZ_CHECK(r->host[0] != '\0' && r->path[0] == '/');
		FUZZ_CHECK(strchr(r->authority, '@') == NULL);
		FUZZ_CHECK(strcmp(r->method, "CONNECT") != 0);
		break;
	case HTTP_FORM_AUTHORITY:
		FUZZ_CHECK(strcmp(r->method, "CONNECT") == 0);
		FUZZ_CHECK(r->host[0] != '\0' && r->port != 0);
		FUZZ_CHECK(r->path == NULL && r->authority == r->target);
		FUZZ_CHECK(r->body == HTTP_BODY_NONE ||
		    (r->body == HTTP_BODY_LENGTH && r->content_length == 0));
		break;
	case HTTP_FORM_ASTERISK:
		FUZZ_CHECK(strcmp(r->method, "OPTIONS") == 0);
		FUZZ_CHECK(strcmp(r->target, "*") == 0);
		break;
	default:
		abort();
	}
	if (r->version_minor == 1)
		FUZZ_CHECK(r->host_header != NULL);
	if (r->body == HTTP_BODY_CHUNKED)
		FUZZ_CHECK(r->version_minor == 1);
	FUZZ_CHECK(r->body != HTTP_BODY_CLOSE);
	FUZZ_CHECK(r->content_length <= (uint64_t)INT64_MAX);
	check_fields(r->headers, r->nheaders, lim);
}

static void
check_response(const struct http_response_head *r,
    const struct http_limits *lim, const char *method)
{
	size_t	i;
	bool	nobody;

	FUZZ_CHECK(r->status >= 100 && r->status <= 999);
	FUZZ_CHECK(r->version_minor == 0 || r->version_minor == 1);
	for (i = 0; r->reason[i] != '\0'; i++)
		FUZZ_CHECK(r->reason[i] == '\t' ||
		    ((unsigned char)r->reason[i] >= 0x20 &&
		    r->reason[i] != 0x7f));
	nobody = (method != NULL && strcmp(method, "HEAD") == 0) ||
	    r->status < 200 || r->status == 204 || r->status == 304;
	FUZZ_CHECK(!nobody || r->body == HTTP_BODY_NONE);
	FUZZ_CHECK(nobody || r->body != HTTP_BODY_NONE);
	FUZZ_CHECK(method == NULL || strcmp(method, "CONNECT") != 0 ||
	    r->status < 200 || r->status > 299);
	if (r->body == HTTP_BODY_CLOSE)
		FUZZ_CHECK(!r->keep_alive);
	check_fields(r->headers, r->nheaders, lim);
}

/* Parses buf[0..len) as request and response, on an exact-size copy. */
static void
parse_all(const char *buf, size_t len, const struct http_limits *lim,
    uint32_t h)
{
	struct http_request_head	 req;
	struct http_response_head	 resp;
	const char			*method, *err = NULL;
	char				*copy;
	size_t				 hl = 0;
	int				 scan;

	if ((copy = malloc(len ? len : 1)) == NULL)
		return;
	memcpy(copy, buf, len);
	method = methods[(h >> 8) % (sizeof(methods) / sizeof(methods[0]))];
	scan = scan_check(copy, len, lim, h, &hl);
	if (http_request_head_parse(copy, len, lim, &req, &err) == HTTP_OK) {
		FUZZ_CHECK(scan == HTTP_OK && hl == len);
		check_request(&req, lim);
		http_request_head_free(&req);
		FUZZ_CHECK(req.mem == NULL);
	} else
		FUZZ_CHECK(err != NULL && req.mem == NULL);
	err = NULL;
	if (http_response_head_parse(copy, len, lim, method, &resp, &err) ==
	    HTTP_OK) {
		FUZZ_CHECK(scan == HTTP_OK && hl == len);
		check_response(&resp, lim, method);
		http_response_head_free(&resp);
	} else
		FUZZ_CHECK(err != NULL && resp.mem == NULL);
	free(copy);
	/* What the scan delimited, as moatd would hand it over. */
	if (scan == HTTP_OK && hl < len)
		parse_all(buf, hl, lim, h);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct http_limits	deflim = { HTTP_REQUEST_LINE_MAX_BYTES,
	    HTTP_HEAD_MAX_BYTES, HTTP_HEADER_COUNT_MAX };
	struct http_limits		tight;
	uint32_t			h = hash(data, size);

	parse_all((const char *)data, size, &deflim, h);
	tight.line_max = 1 + h % 48;
	tight.head_max = 1 + (h >> 6) % 256;
	tight.header_count_max = (h >> 14) % 6;
	parse_all((const char *)data, size, &tight, h >> 3);
	return 0;
}
