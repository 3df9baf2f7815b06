/*
 * http_target.c - the request-target of an HTTP/1.1 request head (RFC
 * 9112 §3.2): its form (origin, absolute, authority, asterisk), the
 * authority (host, IP literal, port) and the path and query.
 *
 * What it is not: a URL parser for anything but a request line moat
 * forwards.  Percent-encoding in a host, user info, a fragment or a
 * backslash could be read differently by the origin, so they are refused,
 * never decoded or repaired.  Called by http_head.c on its copy of the
 * head; pieces are written into the head's block.
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

#define PORT_MAX_DIGITS			5
#define IPV6_LITERAL_MAX_BYTES		45	/* INET6_ADDRSTRLEN - 1 */

static int	target_absolute(struct http_request_head *, char *,
		    const char **);
static int	target_authority(struct http_request_head *, char *,
		    const char **);
static int	path_check(const char *, size_t, const char **);
static int	ipv6_literal_check(const char *, size_t, const char **);
static int	port_parse(const char *, size_t, uint16_t *, const char **);

/*
 * Decides the form of the request-target (RFC 9112 §3.2) and splits it.
 * Pieces that must be NUL-terminated and are not suffixes of the target
 * are written to area.
 */
int
http_target_split(struct http_request_head *h, char *area, const char **err)
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

	if (http_lc((unsigned char)*s) >= 'a' &&
	    http_lc((unsigned char)*s) <= 'z')
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
		*o++ = (char)http_lc((unsigned char)t[i]);
	*o++ = '\0';
	if (strcmp(h->scheme, "http") != 0 && strcmp(h->scheme, "https") != 0 &&
	    strcmp(h->scheme, "ws") != 0 && strcmp(h->scheme, "wss") != 0) {
		*err = "unsupported scheme in request-target";
		return -1;
	}
	a = s + 3;
	for (aend = a; aend < end && *aend != '/' && *aend != '?'; aend++)
		;
	if (http_authority_parse(a, (size_t)(aend - a), false, &host_len,
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

	if (http_authority_parse(h->target, h->target_len, true, &host_len,
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
int
http_authority_parse(const char *s, size_t n, bool need_port,
    size_t *host_len, uint16_t *port, const char **err)
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
