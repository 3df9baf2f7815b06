/*
 * git.c - the "git": "read-only" preset of a rule: fetch and clone over
 * HTTP(S) pass, push does not.
 *
 * Git's smart HTTP protocol names what it does in two places: the path
 * (".../git-upload-pack" to fetch, ".../git-receive-pack" to push) and,
 * for the first request, the query ("info/refs?service=git-upload-pack").
 * Path rules match the path without the query, so this check is its own:
 * it normalises the path exactly as path rules do (so "/./", "//" and
 * "%2D" spellings change nothing), decodes every query parameter, and
 * allows only what a fetch needs.  Anything that names receive-pack, in
 * any case or spelling moatd can decode, is a push; anything it cannot
 * decode is refused rather than guessed at.  Dumb-HTTP (WebDAV) push uses
 * PUT, MKCOL, LOCK and friends: every method but GET, HEAD and a POST to
 * git-upload-pack is refused.
 *
 * What it is not: a git protocol parser.  It never reads the body (a POST
 * to git-upload-pack only ever fetches).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy/policy_int.h"

#define GIT_STACK_BYTES	(2 * PATH_STACK_BYTES) /* path + one parameter;
						   longer requests: heap */

static const char	git_push[] = "git push is denied by the read-only "
			    "preset";
static const char	git_service[] = "a git service other than "
			    "git-upload-pack is denied by the read-only preset";
static const char	git_post[] = "only a fetch (POST to git-upload-pack) "
			    "may be POSTed under the read-only git preset";
static const char	git_method[] = "this method (a dumb-HTTP write such "
			    "as PUT, DELETE, MKCOL, PROPPATCH, LOCK, MOVE or "
			    "COPY, or another method) is denied by the "
			    "read-only git preset";
static const char	git_bad_path[] = "the path cannot be normalised "
			    "safely, so the git preset cannot tell fetch from "
			    "push";
static const char	git_bad_query[] = "the query has a bad percent-escape "
			    "or byte, so the git preset cannot tell fetch from "
			    "push";
static const char	git_twice[] = "the query gives \"service\" more than "
			    "once";
static const char	git_no_path[] = "the request has no path";
static const char	git_oom[] = "out of memory while checking the git "
			    "preset";

/* What the query says. */
enum git_query {
	GIT_Q_NONE = 0,		/* no "service" parameter, nothing of push */
	GIT_Q_UPLOAD,		/* service=git-upload-pack */
	GIT_Q_OTHER,		/* another service */
	GIT_Q_PUSH,		/* something names receive-pack */
	GIT_Q_TWICE,		/* "service" more than once */
	GIT_Q_BAD		/* cannot be decoded */
};

static int	git_hexval(unsigned char c);
static bool	git_has_ci(const char *s, size_t n, const char *needle);
static int	git_decode(const char *in, size_t n, char *out, size_t *outlen);
static enum git_query	git_query(const char *q, size_t n, char *buf);

static int
git_hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* True if needle (lower case) occurs in s[0..n) in any case. */
static bool
git_has_ci(const char *s, size_t n, const char *needle)
{
	size_t	nl = strlen(needle), i;

	for (i = 0; i + nl <= n; i++)
		if (strncasecmp(s + i, needle, nl) == 0)
			return true;
	return false;
}

/*
 * Decodes one query name or value: "%XX" escapes and "+" as a space, as
 * form decoders (git http-backend among them) do.  Returns 0, or -1 for a
 * bad escape or a NUL.  out has room for n bytes.
 */
static int
git_decode(const char *in, size_t n, char *out, size_t *outlen)
{
	size_t	i, k = 0;
	int	hi, lo;

	for (i = 0; i < n; i++) {
		if (in[i] == '+') {
			out[k++] = ' ';
			continue;
		}
		if (in[i] != '%') {
			out[k++] = in[i];
			continue;
		}
		if (i + 2 >= n ||
		    (hi = git_hexval((unsigned char)in[i + 1])) == -1 ||
		    (lo = git_hexval((unsigned char)in[i + 2])) == -1 ||
		    (hi == 0 && lo == 0))
			return -1;
		out[k++] = (char)(hi << 4 | lo);
		i += 2;
	}
	*outlen = k;
	return 0;
}

/*
 * Reads the query q (n bytes, after the "?").  Parameters are split at
 * "&" and ";" (some servers split at both); a name or value that names
 * receive-pack anywhere makes the request a push.  buf has room for n
 * bytes.
 */
static enum git_query
git_query(const char *q, size_t n, char *buf)
{
	const char	*p, *end, *eq;
	size_t		 i, klen, vlen, plen;
	enum git_query	 res = GIT_Q_NONE;
	bool		 seen = false, push = false, service;

	for (i = 0; i < n; i++) {
		unsigned char	c = (unsigned char)q[i];

		if (c <= 0x20 || c >= 0x7f || c == '#')
			return GIT_Q_BAD;
	}
	for (p = q;; p = end + 1) {
		for (end = p; end < q + n && *end != '&' && *end != ';'; end++)
			;
		plen = (size_t)(end - p);
		eq = memchr(p, '=', plen);
		if (git_decode(p, eq != NULL ? (size_t)(eq - p) : plen, buf,
		    &klen) == -1)
			return GIT_Q_BAD;
		push |= git_has_ci(buf, klen, "receive-pack");
		service = klen == LIT_LEN("service") &&
		    STRNCASECMP_LIT(buf, "service") == 0;
		vlen = 0;
		if (eq != NULL && git_decode(eq + 1, (size_t)(end - eq - 1),
		    buf, &vlen) == -1)
			return GIT_Q_BAD;
		push |= git_has_ci(buf, vlen, "receive-pack");
		if (service) {
			if (seen)
				return GIT_Q_TWICE;
			seen = true;
			res = vlen == LIT_LEN("git-upload-pack") &&
			    MEMCMP_LIT(buf, "git-upload-pack") == 0 ?
			    GIT_Q_UPLOAD : GIT_Q_OTHER;
		}
		if (end == q + n)
			break;
	}
	return push ? GIT_Q_PUSH : res;
}

static enum policy_reason	git_check_path(const struct policy_rule *r,
				    const char *method, const char *path_and_query,
				    const char **detail);

enum policy_reason
policy_git_check(const struct policy_rule *r, const char *method,
    const char *path_and_query, const char **detail)
{
	const char	*dummy;

	if (detail == NULL)
		detail = &dummy;
	*detail = NULL;
	if (r == NULL || r->git == POLICY_GIT_NONE || method == NULL)
		return POLICY_R_ALLOWED;
	if (path_and_query == NULL) {
		*detail = git_no_path;
		return POLICY_R_PATH;
	}
	return git_check_path(r, method, path_and_query, detail);
}

/*
 * The checks of a "git" rule.  A function of its own so that a request
 * under any other rule does not pay for clearing the stack buffer (the
 * build's -ftrivial-auto-var-init=zero clears it on every call).
 */
static enum policy_reason
git_check_path(const struct policy_rule *r, const char *method,
    const char *path_and_query, const char **detail)
{
	const char		*err, *q, *seg;
	char			 stack[GIT_STACK_BYTES], *heap = NULL, *path;
	size_t			 len, plen;
	enum policy_reason	 rc = POLICY_R_PATH;
	enum git_query		 gq = GIT_Q_NONE;

	/* Room for the normalised path, then for one decoded parameter. */
	len = strlen(path_and_query);
	if (len < sizeof(stack) / 2)
		path = stack;
	else if (len > SIZE_MAX / 2 - 1 ||
	    (path = heap = malloc(2 * (len + 1))) == NULL) {
		*detail = git_oom;
		return POLICY_R_PATH;
	}
	if (path_normalise(path_and_query, len, false, path, &plen,
	    &err) == -1) {
		*detail = git_bad_path;
		goto out;
	}
	if ((q = strchr(path_and_query, '?')) != NULL)
		gq = git_query(q + 1, len - (size_t)(q + 1 - path_and_query),
		    path + len + 1);
	switch (gq) {
	case GIT_Q_BAD:
		*detail = git_bad_query;
		goto out;
	case GIT_Q_TWICE:
		*detail = git_twice;
		goto out;
	case GIT_Q_PUSH:
		*detail = git_push;
		goto out;
	case GIT_Q_OTHER:
		*detail = git_service;
		goto out;
	case GIT_Q_NONE:
	case GIT_Q_UPLOAD:
		break;
	}
	if (git_has_ci(path, plen, "receive-pack")) {
		*detail = git_push;
		goto out;
	}
	rc = POLICY_R_ALLOWED;
	if (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0)
		goto out;
	rc = POLICY_R_METHOD;
	if (strcmp(method, "POST") == 0) {
		seg = strrchr(path, '/') + 1;
		if (strcmp(seg, "git-upload-pack") == 0)
			rc = POLICY_R_ALLOWED;
		else
			*detail = git_post;
		goto out;
	}
	*detail = git_method;
 out:
	free(heap);
	return rc;
}
