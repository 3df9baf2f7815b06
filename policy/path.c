/*
 * path.c - request path normalisation and matching for "paths" rules.
 *
 * A rule that allows "/v1/models" must not be opened by "/v1/x/../models",
 * "/v1//models" or "/v1/%6Dodels" any more than it is closed by them, so
 * the path a client sends and the patterns a config writes are both
 * normalised the same way before they are compared.  Spellings whose
 * meaning servers disagree on ("%2e%2e" segments, "..%2F", "\") are not
 * guessed at: they are refused, which makes them match no allow rule.
 *
 * What it is not: a URL parser.  The proxy hands over the origin-form
 * path (and query) of a request it has already parsed.
 */
#include "config.h"

#include <stdbool.h>
#include <string.h>

#include "policy/policy_int.h"

static int	path_hexval(unsigned char c);
static bool	path_unreserved(unsigned char c);
static bool	path_hidden_dots(const char *s, size_t n);
static bool	path_glob(const char *pat, const char *s, size_t n);

static const char	path_hex[] = "0123456789ABCDEF";

static int
path_hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* RFC 3986 unreserved: ALPHA / DIGIT / "-" / "." / "_" / "~". */
static bool
path_unreserved(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	    c == '~';
}

/*
 * True if, reading "%2F" and "%5C" as separators (as some servers do),
 * a "." or ".." segment appears.
 */
static bool
path_hidden_dots(const char *s, size_t n)
{
	size_t	i, start = 0, sep;

	for (i = 0; i <= n; i++) {
		sep = 0;
		if (i == n || s[i] == '/')
			sep = 1;
		else if (s[i] == '%' && i + 2 < n &&
		    ((s[i + 1] == '2' && s[i + 2] == 'F') ||
		    (s[i + 1] == '5' && s[i + 2] == 'C')))
			sep = 3;
		if (sep == 0)
			continue;
		if ((i - start == 1 && s[start] == '.') ||
		    (i - start == 2 && s[start] == '.' && s[start + 1] == '.'))
			return true;
		start = i + sep;
		i += sep - 1;
	}
	return false;
}

int
path_normalise(const char *in, size_t len, bool pattern, char *out,
    size_t *outlen, const char **err)
{
	const char	*q;
	size_t		 i, j, end, n = 0, mark, seg;
	bool		 last, encdot, trailing = false;
	int		 hi, lo;
	unsigned char	 c, b;

	*outlen = 0;
	out[0] = '\0';
	if (len == 0 || in[0] != '/') {
		*err = "path does not start with \"/\"";
		return -1;
	}
	if ((q = memchr(in, '?', len)) != NULL) {
		if (pattern) {
			*err = "\"?\" in a path pattern (paths are matched "
			    "without the query)";
			return -1;
		}
		len = (size_t)(q - in);
	}
	for (i = 1;; i = end + 1) {
		for (end = i; end < len && in[end] != '/'; end++)
			;
		last = end == len;
		mark = n;
		out[n++] = '/';
		seg = n;
		encdot = false;
		for (j = i; j < end; j++) {
			c = (unsigned char)in[j];
			if (c == '%') {
				if (j + 2 >= end ||
				    (hi = path_hexval((unsigned char)in[j + 1]))
				    == -1 ||
				    (lo = path_hexval((unsigned char)in[j + 2]))
				    == -1) {
					*err = "bad percent-escape in path";
					return -1;
				}
				b = (unsigned char)(hi << 4 | lo);
				if (b == 0) {
					*err = "NUL (%00) in path";
					return -1;
				}
				if (path_unreserved(b)) {
					out[n++] = (char)b;
					encdot |= b == '.';
				} else {
					out[n++] = '%';
					out[n++] = path_hex[hi];
					out[n++] = path_hex[lo];
				}
				j += 2;
				continue;
			}
			if (c <= 0x20 || c >= 0x7f) {
				*err = "space, control byte or non-ASCII byte "
				    "in path";
				return -1;
			}
			if (c == '\\' || c == '#') {
				*err = c == '#' ? "\"#\" in path" :
				    "\"\\\" in path";
				return -1;
			}
			out[n++] = (char)c;
		}
		if (n - seg == 0) {
			/* Empty segment: repeated "/" collapse. */
			n = mark;
			trailing = last;
		} else if ((n - seg == 1 && out[seg] == '.') ||
		    (n - seg == 2 && out[seg] == '.' && out[seg + 1] == '.')) {
			if (encdot) {
				*err = "dot segment spelt with escapes "
				    "(\"%2e\") in path";
				return -1;
			}
			if (n - seg == 2) {
				/* ".." removes the segment before it. */
				n = mark;
				while (n > 0 && out[n - 1] != '/')
					n--;
				if (n > 0)
					n--;
			} else
				n = mark;
			trailing = last;
		} else
			trailing = false;
		if (last)
			break;
	}
	if (n == 0 || trailing)
		out[n++] = '/';
	out[n] = '\0';
	if (path_hidden_dots(out, n)) {
		*err = "dot segment behind an escaped separator (\"..%2F\") "
		    "in path";
		return -1;
	}
	*outlen = n;
	return 0;
}

static bool
path_glob(const char *pat, const char *s, size_t n)
{
	size_t	p = 0, i = 0, star = SIZE_MAX, mark = 0;

	while (i < n) {
		if (pat[p] == '*') {
			star = p++;
			mark = i;
		} else if (pat[p] != '\0' && pat[p] == s[i]) {
			p++;
			i++;
		} else if (star != SIZE_MAX) {
			p = star + 1;
			i = ++mark;
		} else
			return false;
	}
	while (pat[p] == '*')
		p++;
	return pat[p] == '\0';
}

bool
path_match(const char *pattern, const char *path, size_t pathlen)
{
	size_t	plen;

	if (strchr(pattern, '*') != NULL)
		return path_glob(pattern, path, pathlen);
	plen = strlen(pattern);
	if (pathlen < plen || memcmp(path, pattern, plen) != 0)
		return false;
	if (pathlen == plen)
		return true;
	return pattern[plen - 1] == '/' || path[plen] == '/';
}
