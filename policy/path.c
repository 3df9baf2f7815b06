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
 * Deny rules match a second, wider form of the path (path_wide()): a
 * deny rule on "/admin" must also catch the spellings some backend reads
 * as "/admin" ("/ADMIN", "/admin;x=1", "/admin.", "/%2561dmin",
 * "/%EF%BD%81dmin"), even where the strict form keeps them apart.  Deny
 * may over-match; allow must not, so allow rules keep the strict form,
 * and only refuse paths whose wide form hides a dot segment.
 *
 * What it is not: a URL parser.  The proxy hands over the origin-form
 * path (and query) of a request it has already parsed.
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "policy/policy_int.h"

static int	path_hexval(unsigned char c);
static bool	path_unreserved(unsigned char c);
static bool	path_hidden_dots(const char *s, size_t n);
static bool	path_glob(const char *pat, const char *s, size_t n);
static size_t	path_unescape(char *s, size_t n, bool *changed, bool *nul);
static size_t	path_fold_cp(uint32_t cp, char *out);
static size_t	path_unfold(char *s, size_t n, bool *changed, bool *nul);
static bool	path_only(const char *s, size_t n, const char *set);

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

/* ------------------------------------------------------------------ */
/* The wide form, for deny rules                                        */
/* ------------------------------------------------------------------ */

/*
 * Decodes every valid "%XX" of s[0..n) in place, once.  Returns the new
 * length; *changed if one was decoded, *nul if one was "%00".
 */
static size_t
path_unescape(char *s, size_t n, bool *changed, bool *nul)
{
	size_t	i, k = 0;
	int	hi, lo;

	for (i = 0; i < n; i++) {
		if (s[i] == '%' && i + 2 < n &&
		    (hi = path_hexval((unsigned char)s[i + 1])) != -1 &&
		    (lo = path_hexval((unsigned char)s[i + 2])) != -1) {
			s[k] = (char)(hi << 4 | lo);
			*nul |= s[k] == '\0';
			*changed = true;
			k++;
			i += 2;
			continue;
		}
		s[k++] = s[i];
	}
	return k;
}

/*
 * The ASCII that code point cp stands for, written to out (at most 3
 * bytes); 0 if none.  The list (README, moat.json(5)): ASCII itself (so
 * overlong UTF-8 becomes ASCII), full-width forms U+FF01..U+FF5E, circled
 * letters U+24B6..U+24E9, mathematical letters U+1D400..U+1D6A3 and
 * digits U+1D7CE..U+1D7FF, the ligatures U+FB00..U+FB06, and the
 * characters that case mapping or NFKC turns into ASCII: U+0130 and
 * U+0131 (i), U+017F (s), U+212A (k), U+2024 and U+FE52 (".").
 */
static size_t
path_fold_cp(uint32_t cp, char *out)
{
	static const char *const	lig[] = { "ff", "fi", "fl", "ffi", "ffl",
					    "st", "st" };
	size_t				k;

	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp >= 0xff01 && cp <= 0xff5e) {
		out[0] = (char)(cp - 0xff01 + 0x21);
		return 1;
	}
	if (cp >= 0x24b6 && cp <= 0x24e9) {
		k = (cp - 0x24b6) % 26;
		out[0] = (char)('a' + k);
		return 1;
	}
	if (cp >= 0x1d400 && cp <= 0x1d6a3) {
		k = (cp - 0x1d400) % 52;
		out[0] = (char)(k < 26 ? 'a' + k : 'a' + k - 26);
		return 1;
	}
	if (cp >= 0x1d7ce && cp <= 0x1d7ff) {
		out[0] = (char)('0' + (cp - 0x1d7ce) % 10);
		return 1;
	}
	if (cp >= 0xfb00 && cp <= 0xfb06) {
		k = strlen(lig[cp - 0xfb00]);
		memcpy(out, lig[cp - 0xfb00], k);
		return k;
	}
	switch (cp) {
	case 0x130:
	case 0x131:
		out[0] = 'i';
		return 1;
	case 0x17f:
		out[0] = 's';
		return 1;
	case 0x212a:
		out[0] = 'k';
		return 1;
	case 0x2024:
	case 0xfe52:
		out[0] = '.';
		return 1;
	}
	return 0;
}

/*
 * Replaces, in place, every UTF-8 sequence (overlong ones too, up to the
 * old six-byte forms lenient decoders still take) that stands for ASCII
 * by that ASCII (path_fold_cp()).  Other bytes are kept.  Returns the new
 * length; *changed if something was replaced, *nul for a NUL.
 */
static size_t
path_unfold(char *s, size_t n, bool *changed, bool *nul)
{
	size_t		i, j, k = 0, more, f;
	uint32_t	cp;
	unsigned char	b;
	char		asc[3];

	for (i = 0; i < n; i++) {
		b = (unsigned char)s[i];
		more = b >= 0xfc && b <= 0xfd ? 5 : b >= 0xf8 && b <= 0xfb ?
		    4 : b >= 0xf0 && b <= 0xf7 ? 3 : b >= 0xe0 && b <= 0xef ?
		    2 : b >= 0xc0 && b <= 0xdf ? 1 : 0;
		if (more == 0 || i + more >= n) {
			s[k++] = s[i];
			continue;
		}
		cp = b & (0x3f >> more);
		for (j = 1; j <= more; j++) {
			b = (unsigned char)s[i + j];
			if ((b & 0xc0) != 0x80)
				break;
			cp = cp << 6 | (b & 0x3f);
		}
		if (j <= more || (f = path_fold_cp(cp, asc)) == 0) {
			s[k++] = s[i];
			continue;
		}
		*nul |= cp == 0;
		*changed = true;
		memcpy(s + k, asc, f);
		k += f;
		i += more;
	}
	return k;
}

/* True if s[0..n) holds only bytes of set. */
static bool
path_only(const char *s, size_t n, const char *set)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (strchr(set, s[i]) == NULL)
			return false;
	return true;
}

int
path_wide(const char *in, size_t len, char *out, size_t *outlen,
    bool *hidden, const char **err)
{
	size_t	i, n, end, k = 0, mark, seg, rounds;
	bool	changed, nul = false, last, trailing = false;
	char	c;

	*outlen = 0;
	*hidden = false;
	memcpy(out, in, len);
	n = len;
	/* Decode until nothing changes: "%2561" is "%61" is "a" to a
	 * backend that decodes twice, "%C0%AE" is "." to one that reads
	 * overlong UTF-8, and either may hide the other. */
	for (rounds = 0;; rounds++) {
		changed = false;
		n = path_unescape(out, n, &changed, &nul);
		n = path_unfold(out, n, &changed, &nul);
		if (nul) {
			*err = "NUL (%00) in path once decoded";
			return -1;
		}
		if (!changed)
			break;
		if (rounds == PATH_WIDE_ROUNDS) {
			*err = "path percent-encoded too many times";
			return -1;
		}
	}
	/* A decoded "?" or "#" ends the path for a backend that decodes
	 * before it splits. */
	for (i = 0; i < n && out[i] != '?' && out[i] != '#'; i++)
		;
	n = i;
	if (n == 0 || (out[0] != '/' && out[0] != '\\')) {
		*err = "path does not start with \"/\" once decoded";
		return -1;
	}
	/* Segments, "\" a separator too; k <= i always, so in place. */
	for (i = 1;; i = end + 1) {
		for (end = i; end < n && out[end] != '/' && out[end] != '\\';
		    end++)
			;
		last = end == n;
		mark = k;
		out[k++] = '/';
		seg = k;
		for (; i < end && out[i] != ';'; i++) {
			c = out[i];
			out[k++] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') :
			    c;
		}
		/* "admin." and "admin " are "admin" to Windows. */
		if (!path_only(out + seg, k - seg, ". "))
			while (k > seg && (out[k - 1] == '.' ||
			    out[k - 1] == ' '))
				k--;
		else
			while (k > seg && out[k - 1] == ' ')
				k--;
		if (k == seg) {
			k = mark;
			trailing = last;
		} else if ((k - seg == 1 && out[seg] == '.') ||
		    (k - seg == 2 && out[seg] == '.' && out[seg + 1] == '.')) {
			*hidden = true;
			if (k - seg == 2) {
				k = mark;
				while (k > 0 && out[k - 1] != '/')
					k--;
				if (k > 0)
					k--;
			} else
				k = mark;
			trailing = last;
		} else
			trailing = false;
		if (last)
			break;
	}
	if (k == 0 || trailing)
		out[k++] = '/';
	out[k] = '\0';
	*outlen = k;
	return 0;
}

bool
path_query_has(const char *q, size_t n, const char *name)
{
	char	buf[PATH_QUERY_NAME_MAX];
	size_t	i, start, end, k, rounds;
	bool	changed, nul;

	for (start = 0; start <= n; start = i + 1) {
		for (i = start; i < n && q[i] != '&' && q[i] != ';'; i++)
			;
		for (end = start; end < i && q[end] != '='; end++)
			;
		if (end - start > sizeof(buf))
			continue;
		memcpy(buf, q + start, end - start);
		k = end - start;
		for (rounds = 0; rounds <= PATH_WIDE_ROUNDS; rounds++) {
			changed = nul = false;
			k = path_unescape(buf, k, &changed, &nul);
			if (!changed)
				break;
		}
		for (end = 0; end < k; end++)
			if (buf[end] == '+')
				buf[end] = ' ';
		if (k == strlen(name) && strncasecmp(buf, name, k) == 0)
			return true;
	}
	return false;
}
