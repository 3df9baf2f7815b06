/*
 * http_parse_int.h - what the HTTP parsers (http_head.c, http_target.c,
 * http_chunked.c) share: the character classes and the request-target
 * splitter.  Nothing here is for their callers: they use http_parse.h.
 */
#ifndef MOAT_HTTP_PARSE_INT_H
#define MOAT_HTTP_PARSE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* http_head.c: the class bits of each byte. */
extern const uint8_t	http_cc[256];
#define CC(c)		(http_cc[(unsigned char)(c)])

/* ASCII lower case of c. */
static inline int
http_lc(int c)
{
	return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

/*
 * http_target.c: decides the form of the request-target (RFC 9112 §3.2)
 * of h and splits it; pieces that must be NUL-terminated and are not
 * suffixes of the target are written to area.  Returns 0, or -1 with *err
 * set to a static message.
 */
int	http_target_split(struct http_request_head *h, char *area,
	    const char **err);

/*
 * http_target.c: host [ ":" port ] of a request-target or Host field (s,
 * n: not NUL-terminated), userinfo refused.  *host_len is the length of
 * the host as sent (brackets kept), *port the port or 0; need_port: a
 * port must be given.  Returns 0, or -1 with *err set.
 */
int	http_authority_parse(const char *s, size_t n, bool need_port,
	    size_t *host_len, uint16_t *port, const char **err);

#endif /* MOAT_HTTP_PARSE_INT_H */
