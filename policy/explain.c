/*
 * explain.c - turns the target given to `moat explain` into a
 * struct policy_target, and decides on it as moatd would.
 *
 * What it is: a small parser for "URL", "METHOD URL" and "HOST:PORT", so
 * the CLI can ask policy_decide() exactly what moatd would ask for a
 * request to that URL or a tunnel to that port; then the checks moatd
 * makes after policy_decide() (a tunnel that needs inspection without a
 * CA, the git preset, injection on plain HTTP), so explain and moatd
 * agree; and the text that names a rule's injections by secret name.
 * What it is not: a general URL parser for traffic (the proxy parses
 * requests itself); user info, unknown schemes and fragments-only
 * oddities are refused, not repaired.  It never sees a secret value.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "policy/policy_int.h"

#define EXPLAIN_METHOD_MAX	32	/* longest method token accepted */
#define EXPLAIN_PLAIN_PORT	80	/* a tunnel here carries plain HTTP */

struct explain_scheme {
	const char	*name;
	uint16_t	 port;
	bool		 tls;
};

static const struct explain_scheme	explain_schemes[] = {
	{ "http", 80, false },
	{ "https", 443, true },
	{ "ws", 80, false },
	{ "wss", 443, true },
};

static const char	explain_no_ca[] = "the rule needs to see inside TLS "
			    "(inject, methods, paths, git or intercept) but no "
			    "CA is configured (tls.ca_cert): moatd refuses the "
			    "tunnel";
static const char	explain_opaque[] = "a rule needs to see inside this "
			    "tunnel but the rule that allows it says "
			    "\"intercept\": false: moatd refuses the tunnel";
static const char	explain_needs_tls[] = "the rule injects secrets, "
			    "which it does only inside TLS (https://) unless "
			    "it says \"plain_http\": true: moatd refuses the "
			    "plain HTTP request";

static int	explain_method(const char *s, size_t n, const char **err);
static int	explain_url(const char *arg, size_t slen,
		    struct policy_explain_target *out, const char **path,
		    size_t *pathlen, const char **err);
static void	explain_deny(struct policy_decision *d,
		    enum policy_reason reason);
static void	explain_append(char *buf, size_t len, size_t *at,
		    const char *s);

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
		    strncasecmp(arg, explain_schemes[i].name, slen) == 0) {
			port = explain_schemes[i].port;
			out->tls = explain_schemes[i].tls;
		}
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
		/* A tunnel: moatd cannot tell TLS from its port, but off
		 * port 80 it is TLS for every rule that matters here. */
		out->tls = out->t.port != EXPLAIN_PLAIN_PORT;
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

static void
explain_deny(struct policy_decision *d, enum policy_reason reason)
{
	d->verdict = POLICY_DENY;
	d->reason = reason;
}

enum policy_verdict
policy_explain_decide(const struct moat_config *c,
    const struct policy_explain_target *et, const struct policy_target *t,
    struct policy_decision *d, const char **detail,
    enum policy_transport *xport)
{
	const char		*dummy;
	enum policy_transport	 dx;
	enum policy_reason	 rs;

	if (detail == NULL)
		detail = &dummy;
	if (xport == NULL)
		xport = &dx;
	*detail = NULL;
	*xport = POLICY_XPORT_NONE;
	if (c == NULL || et == NULL || t == NULL) {
		memset(d, 0, sizeof(*d));
		d->verdict = POLICY_DENY;
		d->reason = POLICY_R_INTERNAL;
		return d->verdict;
	}
	if (policy_decide(c->policy, t, d) == POLICY_DENY)
		return d->verdict;
	/*
	 * Inside TLS moatd sees nothing unless it terminates it: a rule
	 * that must look (its own methods, paths, injections or git preset,
	 * or a deny rule that can only be ruled out per request) cannot be
	 * honoured without a CA, nor through a rule that forbids
	 * interception.  moatd refuses such a tunnel; so does explain.
	 */
	if (et->tls && (d->flags & POLICY_F_INSPECT) != 0) {
		if (c->tls.ca_cert == NULL) {
			explain_deny(d, POLICY_R_NEEDS_INSPECTION);
			*detail = explain_no_ca;
			return d->verdict;
		}
		if ((d->flags & POLICY_F_OPAQUE) != 0) {
			explain_deny(d, POLICY_R_NEEDS_INSPECTION);
			*detail = explain_opaque;
			return d->verdict;
		}
	}
	if (d->rule != NULL && t->method != NULL &&
	    (rs = policy_git_check(d->rule, t->method, t->path, detail)) !=
	    POLICY_R_ALLOWED) {
		explain_deny(d, rs);
		return d->verdict;
	}
	if (!et->tls && t->method != NULL &&
	    (rs = policy_plain_http_check(d->rule)) != POLICY_R_ALLOWED) {
		explain_deny(d, rs);
		*detail = explain_needs_tls;
		return d->verdict;
	}
	if (!et->tls && t->method != NULL)
		*xport = POLICY_XPORT_PLAIN;
	else if ((d->flags & POLICY_F_INSPECT) != 0)
		*xport = et->tls ? POLICY_XPORT_INSPECTED : POLICY_XPORT_PLAIN;
	else
		*xport = POLICY_XPORT_OPAQUE;
	return d->verdict;
}

/* Appends s to buf (NUL-terminated, truncated to len). */
static void
explain_append(char *buf, size_t len, size_t *at, const char *s)
{
	size_t	n = strlen(s);

	if (*at + 1 >= len)
		return;
	if (n > len - 1 - *at)
		n = len - 1 - *at;
	memcpy(buf + *at, s, n);
	*at += n;
	buf[*at] = '\0';
}

char *
policy_explain_inject(const struct moat_config *c,
    const struct policy_inject *in, char *buf, size_t len)
{
	char	tpl[512];
	size_t	at = 0, i;

	if (len == 0)
		return buf;
	buf[0] = '\0';
	switch (in->kind) {
	case POLICY_INJECT_HEADER:
		explain_append(buf, len, &at, "header ");
		explain_append(buf, len, &at, in->header);
		explain_append(buf, len, &at, ": ");
		explain_append(buf, len, &at, policy_template_format(c,
		    &in->value, tpl, sizeof(tpl)));
		break;
	case POLICY_INJECT_BASIC:
		explain_append(buf, len, &at, "header Authorization: Basic, "
		    "user \"");
		explain_append(buf, len, &at, policy_template_format(c,
		    &in->user, tpl, sizeof(tpl)));
		explain_append(buf, len, &at, "\", password \"");
		explain_append(buf, len, &at, policy_template_format(c,
		    &in->password, tpl, sizeof(tpl)));
		explain_append(buf, len, &at, "\"");
		break;
	case POLICY_INJECT_PLACEHOLDERS:
		explain_append(buf, len, &at, "placeholders of ");
		for (i = 0; i < in->nsecrets; i++) {
			if (i > 0)
				explain_append(buf, len, &at, ", ");
			explain_append(buf, len, &at, c != NULL &&
			    in->secrets[i] < c->nsecrets ?
			    c->secrets[in->secrets[i]].name : "?");
		}
		explain_append(buf, len, &at, " swapped for their values in "
		    "header values and the target");
		if (in->encode == POLICY_ENCODE_PERCENT)
			explain_append(buf, len, &at, " (percent-encoded)");
		if (in->body)
			explain_append(buf, len, &at, " and the body");
		break;
	}
	return buf;
}
