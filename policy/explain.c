/*
 * explain.c - turns the target given to `moat explain` into a
 * struct policy_target.
 *
 * What it is: a small parser for "URL", "METHOD URL" and "HOST:PORT", so
 * the CLI can ask policy_decide() exactly what moatd would ask for a
 * request to that URL or a tunnel to that port.  What it is not: a general
 * URL parser for traffic (the proxy parses requests itself); user info,
 * unknown schemes and fragments-only oddities are refused, not repaired.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "policy/policy_int.h"

#define EXPLAIN_METHOD_MAX	32	/* longest method token accepted */

struct explain_scheme {
	const char	*name;
	uint16_t	 port;
};

static const struct explain_scheme	explain_schemes[] = {
	{ "http", 80 },
	{ "https", 443 },
	{ "ws", 80 },
	{ "wss", 443 },
};

static int	explain_method(const char *s, size_t n, const char **err);
static int	explain_url(const char *arg, size_t slen,
		    struct policy_explain_target *out, const char **path,
		    size_t *pathlen, const char **err);

static int
explain_method(const char *s, size_t n, const char **err)
{
	size_t	i;

	if (n == 0 || n > EXPLAIN_METHOD_MAX) {
		*err = "bad method";
		return -1;
	}
	for (i = 0; i < n; i++)
		if (!host_is_tchar((unsigned char)s[i])) {
			*err = "bad method (an HTTP token such as GET)";
			return -1;
		}
	return 0;
}

/* Parses SCHEME://AUTHORITY[PATH]; slen is the length of SCHEME. */
static int
explain_url(const char *arg, size_t slen, struct policy_explain_target *out,
    const char **path, size_t *pathlen, const char **err)
{
	const char	*auth, *end, *frag;
	size_t		 i;
	uint16_t	 port = 0;

	for (i = 0; i < sizeof(explain_schemes) / sizeof(explain_schemes[0]);
	    i++)
		if (strlen(explain_schemes[i].name) == slen &&
		    strncasecmp(arg, explain_schemes[i].name, slen) == 0)
			port = explain_schemes[i].port;
	if (port == 0) {
		*err = "unsupported URL scheme (http, https, ws or wss)";
		return -1;
	}
	auth = arg + slen + 3;
	end = auth + strcspn(auth, "/?#");
	if (memchr(auth, '@', (size_t)(end - auth)) != NULL) {
		*err = "user info (\"user@\") in a URL is not supported";
		return -1;
	}
	if (policy_hostport_parse(auth, (size_t)(end - auth), port,
	    &out->host, &out->t.port, err) == -1)
		return -1;
	frag = strchr(end, '#');
	*path = end;
	*pathlen = frag != NULL ? (size_t)(frag - end) : strlen(end);
	return 0;
}

int
policy_explain_parse(const char *arg, const char *method,
    struct policy_explain_target *out, const char **err)
{
	const char	*dummy, *sp, *sep, *path = NULL, *m = method;
	size_t		 mlen = 0, pathlen = 0, need;
	bool		 url;
	char		*b;

	if (err == NULL)
		err = &dummy;
	memset(out, 0, sizeof(*out));
	if (arg == NULL || arg[0] == '\0') {
		*err = "empty target";
		return -1;
	}
	if ((sp = strchr(arg, ' ')) != NULL) {
		if (method != NULL) {
			*err = "a method is given twice";
			return -1;
		}
		m = arg;
		mlen = (size_t)(sp - arg);
		arg = sp + 1;
	} else if (m != NULL)
		mlen = strlen(m);
	if (m != NULL && explain_method(m, mlen, err) == -1)
		return -1;
	sep = strstr(arg, "://");
	url = sep != NULL && (size_t)(sep - arg) == strcspn(arg, ":/?#@[");
	if (url) {
		if (explain_url(arg, (size_t)(sep - arg), out, &path,
		    &pathlen, err) == -1)
			return -1;
		if (m == NULL) {
			m = "GET";
			mlen = 3;
		}
	} else {
		if (m != NULL) {
			*err = "a method needs a URL target (http://...)";
			return -1;
		}
		if (policy_hostport_parse(arg, strlen(arg), 0, &out->host,
		    &out->t.port, err) == -1)
			return -1;
	}
	/* One block: method, NUL, "/" if the URL has no path, path, NUL. */
	need = mlen + 1 + 1 + pathlen + 1;
	if ((out->buf = b = malloc(need)) == NULL) {
		*err = "out of memory";
		return -1;
	}
	if (url) {
		memcpy(b, m, mlen);
		b[mlen] = '\0';
		out->t.method = b;
		b += mlen + 1;
		out->t.path = b;
		if (pathlen == 0 || path[0] != '/')
			*b++ = '/';
		memcpy(b, path, pathlen);
		b[pathlen] = '\0';
	}
	if (out->host.kind == POLICY_HOST_NAME)
		out->t.name = out->host.name;
	else
		out->t.addr = &out->host.addr;
	return 0;
}
