/*
 * host.c - the host normaliser (DESIGN.md invariant 4).
 *
 * Every host a client names and every host a config names goes through
 * policy_host_normalise(), so "127.1", "0x7f.0.0.1", "2130706433",
 * "[::ffff:127.0.0.1]", "LOCALHOST." and "localhost" are all one thing by
 * the time a rule or a deny set sees them.  The IPv4 rules follow the
 * WHATWG URL standard's host parser (the parser browsers, curl's URL API
 * and most HTTP libraries agree with); names go through UTS #46 IDNA.
 *
 * libidn2 is not linked: the caller loads it and hands its functions in
 * (policy_idn_set()), moatd at start before its workers, moat only when a
 * text it hands over may need it (policy_idn_wanted()): linking it, with
 * libunistring, cost every start of moat and moatd about 0.35 ms, and
 * loading it a millisecond or more.  Without it, a name that needs IDNA
 * is refused, never passed through unchecked.
 *
 * What it is not: a resolver.  Nothing here looks a name up.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <idn2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy_int.h"

#define HOST_IN_MAX	1024	/* longest host text, before decoding */
#define HOST_ZONE_MAX	64	/* longest IPv6 zone ID */
#define HOST_LABEL_MAX	63	/* longest DNS label */
#define HOST_V4_PARTS	4	/* most dotted parts of an IPv4 address */
#define HOST_PORT_DIGITS	5	/* "65535" */
#define HOST_V4_BIG	(UINT64_C(1) << 40)	/* "too big" while parsing */

static int	host_hexval(unsigned char c);
static int	host_v4_number(const char *s, size_t n, uint64_t *v);
static bool	host_ends_in_number(const char *s, size_t n);
static int	host_v4(const char *s, size_t n, struct policy_host *out,
		    const char **err);
static int	host_v6(const char *s, size_t n, bool bracketed,
		    struct policy_host *out, const char **err);
static int	host_decode(const char *in, size_t len, char *out,
		    size_t *outlen, const char **err);
static bool	host_needs_idna(const char *s, size_t n);
static int	host_idna(char *buf, size_t *n, const char **err);
static int	host_check_name(const char *s, size_t n, const char **err);
static const char	*host_bad_char(unsigned char c);

static int
host_hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool
host_is_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9'))
		return true;
	return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

int
host_port_parse(const char *in, size_t len, uint16_t *port)
{
	unsigned	v = 0;
	size_t		i;

	if (len == 0 || len > HOST_PORT_DIGITS)
		return -1;
	for (i = 0; i < len; i++) {
		if (in[i] < '0' || in[i] > '9')
			return -1;
		v = v * 10 + (unsigned)(in[i] - '0');
	}
	if (v == 0 || v > UINT16_MAX)
		return -1;
	*port = (uint16_t)v;
	return 0;
}

/*
 * One WHATWG "IPv4 number": 0x/0X hex (digits may be absent: "0x" is 0),
 * a leading 0 octal, else decimal.  Values past 2^32 saturate at
 * HOST_V4_BIG so overflow is caught without wrapping.
 */
static int
host_v4_number(const char *s, size_t n, uint64_t *v)
{
	unsigned	radix = 10;
	int		d;

	*v = 0;
	if (n == 0)
		return -1;
	if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		radix = 16;
		s += 2;
		n -= 2;
	} else if (n >= 2 && s[0] == '0') {
		radix = 8;
		s++;
		n--;
	}
	for (; n > 0; s++, n--) {
		d = host_hexval((unsigned char)*s);
		if (d == -1 || (unsigned)d >= radix)
			return -1;
		*v = *v * radix + (unsigned)d;
		if (*v > HOST_V4_BIG)
			*v = HOST_V4_BIG;
	}
	return 0;
}

/* WHATWG "ends in a number": the last label is digits or an IPv4 number. */
static bool
host_ends_in_number(const char *s, size_t n)
{
	const char	*dot;
	const char	*last;
	size_t		 lastlen, i;
	uint64_t	 v;

	dot = memrchr(s, '.', n);
	last = dot != NULL ? dot + 1 : s;
	lastlen = n - (size_t)(last - s);
	if (lastlen == 0)
		return false;
	for (i = 0; i < lastlen; i++)
		if (last[i] < '0' || last[i] > '9')
			break;
	if (i == lastlen)
		return true;
	return host_v4_number(last, lastlen, &v) == 0;
}

static int
host_v4(const char *s, size_t n, struct policy_host *out, const char **err)
{
	uint64_t	parts[HOST_V4_PARTS], v, limit;
	size_t		np = 0, i, start = 0;
	uint32_t	addr;

	for (i = 0; i <= n; i++) {
		if (i < n && s[i] != '.')
			continue;
		if (np == HOST_V4_PARTS) {
			*err = "IPv4 address with more than 4 parts";
			return -1;
		}
		if (host_v4_number(s + start, i - start, &v) == -1) {
			*err = "not a valid IPv4 address (a name cannot end "
			    "in a number)";
			return -1;
		}
		parts[np++] = v;
		start = i + 1;
	}
	for (i = 0; i + 1 < np; i++)
		if (parts[i] > 255) {
			*err = "IPv4 address part greater than 255";
			return -1;
		}
	limit = UINT64_C(1) << (8 * (5 - np));
	if (parts[np - 1] >= limit) {
		*err = "IPv4 address out of range";
		return -1;
	}
	addr = (uint32_t)parts[np - 1];
	for (i = 0; i + 1 < np; i++)
		addr |= (uint32_t)parts[i] << (8 * (3 - i));
	out->kind = POLICY_HOST_ADDR;
	out->addr.family = AF_INET;
	out->addr.u.v4.s_addr = htonl(addr);
	policy_addr_format(&out->addr, out->name, sizeof(out->name));
	return 0;
}

static int
host_v6(const char *s, size_t n, bool bracketed, struct policy_host *out,
    const char **err)
{
	char		 buf[INET6_ADDRSTRLEN];
	const char	*pct, *zone;
	size_t		 zlen, i;
	struct in6_addr	 a;

	if (bracketed) {
		if (n < 2 || s[n - 1] != ']') {
			*err = memchr(s, ']', n) != NULL ?
			    "text after \"]\" (a port is not part of a host)" :
			    "\"[\" without \"]\"";
			return -1;
		}
		s++;
		n -= 2;
	}
	if ((pct = memchr(s, '%', n)) != NULL) {
		zone = pct + 1;
		zlen = n - (size_t)(zone - s);
		/* RFC 6874 spells the "%" of a zone as "%25" in URLs. */
		if (zlen > 2 && zone[0] == '2' && zone[1] == '5') {
			zone += 2;
			zlen -= 2;
		}
		if (zlen == 0 || zlen > HOST_ZONE_MAX) {
			*err = "bad IPv6 zone ID";
			return -1;
		}
		for (i = 0; i < zlen; i++)
			if (!((zone[i] >= 'a' && zone[i] <= 'z') ||
			    (zone[i] >= 'A' && zone[i] <= 'Z') ||
			    (zone[i] >= '0' && zone[i] <= '9') ||
			    strchr("._~-", zone[i]) != NULL) ||
			    zone[i] == '\0') {
				*err = "bad IPv6 zone ID";
				return -1;
			}
		n = (size_t)(pct - s);
	}
	if (n == 0 || n >= sizeof(buf)) {
		*err = "not a valid IPv6 address";
		return -1;
	}
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (inet_pton(AF_INET6, buf, &a) != 1) {
		if (!bracketed && memchr(s, ':', n) == memrchr(s, ':', n))
			*err = "\":\" in host (a port is not part of a host)";
		else
			*err = "not a valid IPv6 address";
		return -1;
	}
	out->kind = POLICY_HOST_ADDR;
	if (IN6_IS_ADDR_V4MAPPED(&a)) {
		out->addr.family = AF_INET;
		memcpy(&out->addr.u.v4.s_addr, &a.s6_addr[12], 4);
	} else {
		out->addr.family = AF_INET6;
		out->addr.u.v6 = a;
	}
	policy_addr_format(&out->addr, out->name, sizeof(out->name));
	return 0;
}

static int
host_decode(const char *in, size_t len, char *out, size_t *outlen,
    const char **err)
{
	size_t	i, n = 0;
	int	hi, lo;

	for (i = 0; i < len; i++) {
		if (in[i] != '%') {
			out[n++] = in[i];
			continue;
		}
		if (i + 2 >= len) {
			*err = "bad percent-escape in host";
			return -1;
		}
		hi = host_hexval((unsigned char)in[i + 1]);
		lo = host_hexval((unsigned char)in[i + 2]);
		if (hi == -1 || lo == -1) {
			*err = "bad percent-escape in host";
			return -1;
		}
		out[n++] = (char)(hi << 4 | lo);
		i += 2;
	}
	out[n] = '\0';
	*outlen = n;
	return 0;
}

static bool
host_needs_idna(const char *s, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		if ((unsigned char)s[i] >= 0x80)
			return true;
		/* An A-label must be valid punycode of a valid U-label. */
		if ((i == 0 || s[i - 1] == '.') && n - i >= LIT_LEN("xn--") &&
		    STRNCASECMP_LIT(s + i, "xn--") == 0)
			return true;
	}
	return false;
}

/* libidn2's functions as the caller handed them: both, or neither. */
static struct policy_idn	host_idn;

/* The pointers policy.h declares are libidn2's own. */
_Static_assert(__builtin_types_compatible_p(__typeof__(&idn2_lookup_u8),
    __typeof__(host_idn.lookup_u8)), "policy_idn.lookup_u8");
_Static_assert(__builtin_types_compatible_p(__typeof__(&idn2_free),
    __typeof__(host_idn.free)), "policy_idn.free");

void
policy_idn_set(const struct policy_idn *idn)
{
	if (idn == NULL || idn->lookup_u8 == NULL || idn->free == NULL)
		memset(&host_idn, 0, sizeof(host_idn));
	else
		host_idn = *idn;
}

bool
policy_idn_wanted(const char *text, size_t len)
{
	size_t	i;

	for (i = 0; i < len; i++) {
		if ((unsigned char)text[i] >= 0x80 || text[i] == '%' ||
		    text[i] == '\\')
			return true;
		if (len - i >= LIT_LEN("xn--") &&
		    STRNCASECMP_LIT(text + i, "xn--") == 0)
			return true;
	}
	return false;
}

/* Converts buf (NUL-terminated, *n bytes) to A-labels in place. */
static int
host_idna(char *buf, size_t *n, const char **err)
{
	uint8_t	*res = NULL;
	size_t	 rlen;
	int	 rc;

	if (host_idn.lookup_u8 == NULL) {
		*err = "internationalised name, and " IDN2_SONAME " (IDNA) "
		    "cannot be loaded";
		return -1;
	}
	rc = host_idn.lookup_u8((const uint8_t *)buf, &res,
	    IDN2_NONTRANSITIONAL | IDN2_NFC_INPUT);
	if (rc != IDN2_OK) {
		switch (rc) {
		case IDN2_ENCODING_ERROR:
			*err = "host is not valid UTF-8";
			break;
		case IDN2_PUNYCODE_BAD_INPUT:
		case IDN2_PUNYCODE_BIG_OUTPUT:
		case IDN2_PUNYCODE_OVERFLOW:
			*err = "bad punycode in an xn-- label";
			break;
		case IDN2_TOO_BIG_DOMAIN:
			*err = "name longer than 253 bytes";
			break;
		case IDN2_TOO_BIG_LABEL:
			*err = "label longer than 63 bytes";
			break;
		default:
			*err = "not a valid internationalised name (IDNA)";
			break;
		}
		host_idn.free(res);
		return -1;
	}
	rlen = strlen((const char *)res);
	if (rlen > HOST_IN_MAX) {
		host_idn.free(res);
		*err = "name longer than 253 bytes";
		return -1;
	}
	memcpy(buf, res, rlen + 1);
	*n = rlen;
	host_idn.free(res);
	return 0;
}

static const char *
host_bad_char(unsigned char c)
{
	if (c == '@')
		return "\"@\" in host (user info is not allowed)";
	if (c == '/')
		return "\"/\" in host";
	if (c == ':')
		return "\":\" in host (a port is not part of a host)";
	if (c == ' ' || c == '\t')
		return "whitespace in host";
	if (c < 0x20 || c == 0x7f)
		return "control byte in host";
	if (c == '%')
		return "\"%\" in host";
	if (c == '*')
		return "\"*\" in host";
	return "invalid character in host name (letters, digits, \"-\", "
	    "\"_\" and \".\" only)";
}

static int
host_check_name(const char *s, size_t n, const char **err)
{
	size_t	i, label = 0;

	if (n > POLICY_NAME_MAX) {
		*err = "name longer than 253 bytes";
		return -1;
	}
	for (i = 0; i <= n; i++) {
		unsigned char	c = i < n ? (unsigned char)s[i] : '.';

		if (c == '.') {
			if (label == 0) {
				*err = "empty label in host name";
				return -1;
			}
			label = 0;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_')) {
			*err = host_bad_char(c);
			return -1;
		}
		if (++label > HOST_LABEL_MAX) {
			*err = "label longer than 63 bytes";
			return -1;
		}
	}
	return 0;
}

int
policy_host_normalise(const char *in, size_t len, struct policy_host *out,
    const char **err)
{
	char		 buf[HOST_IN_MAX + 1];
	const char	*dummy;
	size_t		 n, i;

	if (err == NULL)
		err = &dummy;
	memset(out, 0, sizeof(*out));
	if (in == NULL || len == 0) {
		*err = "empty host";
		return -1;
	}
	if (len > HOST_IN_MAX) {
		*err = "host longer than 1024 bytes";
		return -1;
	}
	for (i = 0; i < len; i++) {
		unsigned char	c = (unsigned char)in[i];

		if (c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
		    c == '\v' || c == '\f') {
			*err = i == 0 || i == len - 1 ?
			    "leading or trailing whitespace in host" :
			    "whitespace in host";
			return -1;
		}
		if (c < 0x20 || c == 0x7f) {
			*err = "control byte in host";
			return -1;
		}
	}
	if (in[0] == '[')
		return host_v6(in, len, true, out, err);
	if (memchr(in, ':', len) != NULL)
		return host_v6(in, len, false, out, err);
	if (host_decode(in, len, buf, &n, err) == -1)
		return -1;
	for (i = 0; i < n; i++) {
		unsigned char	c = (unsigned char)buf[i];

		if (c < 0x20 || c == 0x7f || c == ' ') {
			*err = host_bad_char(c);
			return -1;
		}
	}
	if (memchr(buf, ':', n) != NULL)
		return host_v6(buf, n, false, out, err);
	if (host_needs_idna(buf, n) && host_idna(buf, &n, err) == -1)
		return -1;
	for (i = 0; i < n; i++)
		if (buf[i] >= 'A' && buf[i] <= 'Z')
			buf[i] = (char)(buf[i] - 'A' + 'a');
	if (n > 0 && buf[n - 1] == '.')
		buf[--n] = '\0';
	if (n == 0) {
		*err = "empty host";
		return -1;
	}
	if (host_ends_in_number(buf, n))
		return host_v4(buf, n, out, err);
	if (host_check_name(buf, n, err) == -1)
		return -1;
	out->kind = POLICY_HOST_NAME;
	memcpy(out->name, buf, n);
	out->name[n] = '\0';
	return 0;
}

int
policy_hostport_parse(const char *in, size_t len, uint16_t default_port,
    struct policy_host *host, uint16_t *port, const char **err)
{
	const char	*dummy, *close, *colon, *p;
	size_t		 hlen, ncolon = 0;

	if (err == NULL)
		err = &dummy;
	memset(host, 0, sizeof(*host));
	*port = 0;
	if (in == NULL || len == 0) {
		*err = "empty address";
		return -1;
	}
	for (p = in; p < in + len; p++)
		if (*p == ':')
			ncolon++;
	colon = NULL;
	if (in[0] == '[') {
		if ((close = memchr(in, ']', len)) == NULL) {
			*err = "\"[\" without \"]\"";
			return -1;
		}
		hlen = (size_t)(close - in) + 1;
		if (hlen < len) {
			if (in[hlen] != ':') {
				*err = "unexpected text after \"]\" (expected "
				    "\":PORT\")";
				return -1;
			}
			colon = in + hlen;
		}
	} else if (ncolon > 1) {
		if (default_port == 0) {
			*err = "an IPv6 address with a port needs brackets: "
			    "[V6]:PORT";
			return -1;
		}
		hlen = len;
	} else if (ncolon == 1) {
		colon = memchr(in, ':', len);
		hlen = (size_t)(colon - in);
	} else
		hlen = len;
	if (colon == NULL) {
		if (default_port == 0) {
			*err = "missing port (write HOST:PORT)";
			return -1;
		}
		*port = default_port;
	} else if (host_port_parse(colon + 1, len - hlen - 1, port) == -1) {
		*err = colon + 1 == in + len ? "missing port after \":\"" :
		    "bad port (1-65535)";
		return -1;
	}
	return policy_host_normalise(in, hlen, host, err);
}
