/*
 * inject.c - secrets in the traffic moatd reads.
 *
 * For each request the decision allowed: which secrets are bound to the
 * target (policy_secret_bound()), the rule's constraints (git preset,
 * plain HTTP), the rewriting of the request target, header values and
 * body (placeholders of bound secrets become values; a value or
 * placeholder of any other secret stops the request: secret-leak), the
 * same in the decoded credentials of Authorization: Basic, the rule's
 * header and basic injections, and the names of the secrets that went
 * out.  For each response of a bound target: values echoed back become
 * the sandbox's placeholders again, or as many "*" where the length is
 * fixed.
 *
 * Not here: matching bytes (secretscan.c), holding values (secrets.c),
 * framing (http.c), the connection (the caller says what the request is
 * in a struct inject_req; tests/unit/test_inject.c drives all of this
 * without one).  No value is ever written to a log, an audit line or
 * an error message: only secret names.
 */
#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>

#include "certs/ssldl.h"
#include "policy/policy.h"
#include "proxy/inject.h"
#include "proxy/quota.h"
#include "proxy/sandbox.h"
#include "proxy/secrets.h"
#include "proxy/secretscan.h"
#include "proxy/util.h"

#define INJECT_HEADER_MAX_BYTES	16384	/* longest injected header value */
#define INJECT_TARGET_MAX_BYTES	65536	/* longest target with encoded values */

struct inject_copy {
	uint8_t			*p;
	size_t			 len;
	struct inject_copy	*next;
};

/* Bytes of a response body to mask: [start, end), message offsets. */
struct inject_range {
	uint64_t	start;
	uint64_t	end;
};

/*
 * A response body that keeps its length (inject_response_pass()): the
 * bytes moved from the upstream's buffer but not yet final, the scan's
 * cursor, and the matches found and not yet masked (ascending, disjoint).
 */
struct inject_pass {
	struct evbuffer			*hold;
	uint64_t			 base;		/* offset of hold's
							   first byte */
	struct secretscan_cursor	 cur;
	struct inject_range		*ranges;
	size_t				 nranges;
	size_t				 cranges;
	bool				 failed;	/* memory */
};

/* Where in a request a rewrite happens (what may break there). */
enum inject_where {
	INJECT_IN_HEADER = 0,	/* a header field value */
	INJECT_IN_TARGET,	/* the request target */
	INJECT_IN_BODY,		/* the body */
	INJECT_IN_BASIC,	/* user:password of Authorization: Basic,
				   decoded */
	INJECT_IN__COUNT
};

struct inject {
	struct secrets_view		 sv;
	size_t				 n;		/* secrets */
	/* Per place in the request, per secret: what a match does. */
	enum secretscan_action		*req_act[INJECT_IN__COUNT];
	enum secretscan_action		*resp_act;
	struct secretscan_rules		 req_rules[INJECT_IN__COUNT];
	struct secretscan_rules		 resp_rules;
	bool				*bound;		/* per secret */
	bool				*encode;	/* per secret: target
							   gets %XX */
	uint8_t				*used;		/* per secret: its value
							   went into the
							   request */
	uint8_t				*taken;		/* per secret: counted
							   against its quota */
	struct sandbox			*sb;		/* whose quotas (borrowed) */
	bool				 sent;		/* the head went out */
	bool				 any_encode;
	bool				 any_bound;
	bool				 body_grows;	/* a body swap */
	bool				 scan_body;
	bool				 unsafe;	/* the leak is a bound
							   value that breaks
							   framing */
	bool				 too_long;	/* ... or makes the
							   target too long */
	bool				 colon;		/* ... or puts a ":" in
							   a Basic user */
	enum inject_where		 leak_where;
	struct secretscan_stream	*req_st;
	struct secretscan_stream	*resp_st;
	struct inject_pass		 pass;
	uint32_t			 leak;
	const struct policy_inject	*injs;
	size_t				 ninjs;
	struct inject_copy		*copies;	/* wiped at the end */
	const struct policy_rule	*rule;		/* or NULL */
	const char			*names[INJECT_NAMES_MAX + 1];
};

static void	inject_pass_clear(struct inject_pass *);

int
inject_precheck(const struct inject_req *rq, enum policy_reason *reason,
    const char **detail)
{
	const struct policy_rule	*r = rq->rule;

	*detail = NULL;
	*reason = POLICY_R_ALLOWED;
	if (r == NULL || rq->method == NULL)
		return 0;
	/* Plain HTTP may not carry what the rule injects. */
	if (!rq->tls &&
	    (*reason = policy_plain_http_check(r)) != POLICY_R_ALLOWED) {
		*detail = "the rule injects a secret, which moat sends only "
		    "inside TLS (use https://, or set \"plain_http\": true on "
		    "the rule)";
		return -1;
	}
	if ((*reason = policy_git_check(r, rq->method, rq->path,
	    detail)) != POLICY_R_ALLOWED)
		return -1;
	return 0;
}

/* Whether v holds a byte a header field value may not: CTL but HTAB. */
static bool
inject_breaks_field(const uint8_t *v, size_t len)
{
	size_t	i;

	for (i = 0; i < len; i++)
		if ((v[i] < 0x20 && v[i] != '\t') || v[i] == 0x7f)
			return true;
	return false;
}

/* Whether v holds a byte a request target may not: SP, CTL, non-ASCII. */
static bool
inject_breaks_target(const uint8_t *v, size_t len)
{
	size_t	i;

	for (i = 0; i < len; i++)
		if (v[i] <= 0x20 || v[i] >= 0x7f)
			return true;
	return false;
}

/* Whether v holds a byte Basic credentials may not: any CTL (RFC 7617). */
static bool
inject_breaks_basic(const uint8_t *v, size_t len)
{
	size_t	i;

	for (i = 0; i < len; i++)
		if (v[i] < 0x20 || v[i] == 0x7f)
			return true;
	return false;
}

/*
 * The options the rule's placeholders entries give secret i: "encode"
 * (the target) and "body".
 */
static void
inject_opts(const struct policy_inject *injs, size_t ninj, size_t i,
    bool *encode, bool *body)
{
	size_t	k, j;

	*encode = *body = false;
	for (k = 0; k < ninj; k++) {
		if (injs[k].kind != POLICY_INJECT_PLACEHOLDERS)
			continue;
		for (j = 0; j < injs[k].nsecrets; j++) {
			if (injs[k].secrets[j] != i)
				continue;
			*encode |= injs[k].encode == POLICY_ENCODE_PERCENT;
			*body |= injs[k].body;
		}
	}
}

static void
inject_free(struct inject *in)
{
	int	w;

	if (in == NULL)
		return;
	secrets_view_done(&in->sv);
	for (w = 0; w < INJECT_IN__COUNT; w++)
		free(in->req_act[w]);
	free(in->resp_act);
	free(in->bound);
	free(in->encode);
	free(in->used);
	free(in->taken);
	free(in);
}

/*
 * Sets what each secret's matches do in each place of the request.  A
 * secret not bound to the target is a leak anywhere.  A bound one: its
 * placeholder becomes its value in header fields unless the value holds
 * control bytes, in the target unless it holds SP or control bytes (or
 * percent-encoded with "encode"), and in the body only with "body": a
 * value that would change the request's framing is never swapped in
 * (the match counts as a leak, reported as unsafe).
 */
static void
inject_actions(const struct inject_req *rq, struct inject *in, size_t i)
{
	const uint8_t	*v;
	size_t		 vl;
	bool		 enc, body;

	in->bound[i] = !rq->bare && policy_secret_bound(rq->policy, i,
	    rq->host, rq->addr, rq->port);
	in->resp_act[i] = SECRETSCAN_ACT_VALUE_TO_PH;
	in->any_bound |= in->bound[i];
	if (!in->bound[i]) {
		in->req_act[INJECT_IN_HEADER][i] = SECRETSCAN_ACT_LEAK;
		in->req_act[INJECT_IN_TARGET][i] = SECRETSCAN_ACT_LEAK;
		in->req_act[INJECT_IN_BODY][i] = SECRETSCAN_ACT_LEAK;
		in->req_act[INJECT_IN_BASIC][i] = SECRETSCAN_ACT_LEAK;
		in->scan_body = true;
		return;
	}
	inject_opts(in->injs, in->ninjs, i, &enc, &body);
	v = secrets_value(in->sv.vals, i, &vl);
	in->req_act[INJECT_IN_HEADER][i] = inject_breaks_field(v, vl) ?
	    SECRETSCAN_ACT_LEAK : SECRETSCAN_ACT_PH_TO_VALUE;
	/* RFC 7617: neither user nor password holds a control byte. */
	in->req_act[INJECT_IN_BASIC][i] = inject_breaks_basic(v, vl) ?
	    SECRETSCAN_ACT_LEAK : SECRETSCAN_ACT_PH_TO_VALUE;
	if (enc) {
		/* Swapped by inject_encode(), after the rewriter. */
		in->req_act[INJECT_IN_TARGET][i] = SECRETSCAN_ACT_KEEP;
		in->encode[i] = in->any_encode = true;
	} else
		in->req_act[INJECT_IN_TARGET][i] =
		    inject_breaks_target(v, vl) ? SECRETSCAN_ACT_LEAK :
		    SECRETSCAN_ACT_PH_TO_VALUE;
	in->req_act[INJECT_IN_BODY][i] = body ? SECRETSCAN_ACT_PH_TO_VALUE :
	    SECRETSCAN_ACT_KEEP;
	if (body)
		in->scan_body = in->body_grows = true;
}

struct inject *
inject_begin(const struct inject_req *rq, enum policy_reason *reason,
    const char **detail)
{
	const struct policy_rule	*r = rq->rule;
	struct inject			*in = NULL;
	size_t				 i, ninj = 0;
	const struct policy_inject	*injs = NULL;
	struct secrets_view		 sv;
	int				 w;

	if (inject_precheck(rq, reason, detail) == -1)
		return NULL;
	if (r != NULL)
		injs = policy_rule_injects(r, &ninj);
	if (secrets_view(rq->sb, rq->secrets, &sv) == -1)
		goto nomem;
	if (sv.vals == NULL && ninj == 0)
		return NULL;	/* nothing to inject or to look for */
	if ((in = calloc(1, sizeof(*in))) == NULL) {
		secrets_view_done(&sv);
		goto nomem;
	}
	in->sv = sv;
	in->leak = UINT32_MAX;	/* none found */
	in->injs = injs;
	in->ninjs = ninj;
	in->n = secrets_count(in->sv.vals);
	if (in->n > 0) {
		for (w = 0; w < INJECT_IN__COUNT; w++)
			if ((in->req_act[w] = calloc(in->n,
			    sizeof(*in->req_act[w]))) == NULL)
				goto nomem;
		in->resp_act = calloc(in->n, sizeof(*in->resp_act));
		in->bound = calloc(in->n, sizeof(*in->bound));
		in->encode = calloc(in->n, sizeof(*in->encode));
		in->used = calloc(in->n, sizeof(*in->used));
		in->taken = calloc(in->n, sizeof(*in->taken));
		if (in->resp_act == NULL || in->bound == NULL ||
		    in->encode == NULL || in->used == NULL ||
		    in->taken == NULL)
			goto nomem;
		for (i = 0; i < in->n; i++)
			inject_actions(rq, in, i);
		for (w = 0; w < INJECT_IN__COUNT; w++) {
			in->req_rules[w].action = in->req_act[w];
			in->req_rules[w].nsecrets = in->n;
			in->req_rules[w].replaced = in->used;
		}
		in->resp_rules.action = in->resp_act;
		in->resp_rules.nsecrets = in->n;
	}
	in->rule = r;
	in->sb = rq->sb;
	return in;
 nomem:
	inject_free(in);
	*reason = POLICY_R_INTERNAL;
	*detail = "out of memory";
	return NULL;
}

void
inject_end(struct inject *in)
{
	struct inject_copy	*cp, *n;

	if (in == NULL)
		return;
	for (cp = in->copies; cp != NULL; cp = n) {
		n = cp->next;
		secretscan_out_free(cp->p, cp->len);
		free(cp);
	}
	secretscan_stream_free(in->req_st);
	secretscan_stream_free(in->resp_st);
	inject_pass_clear(&in->pass);
	inject_free(in);
}

/* Keeps a rewritten buffer until the request is done (then wiped). */
static int
inject_keep(struct inject *in, uint8_t *p, size_t len)
{
	struct inject_copy	*cp;

	if ((cp = malloc(sizeof(*cp))) == NULL) {
		secretscan_out_free(p, len);
		return -1;
	}
	cp->p = p;
	cp->len = len;
	cp->next = in->copies;
	in->copies = cp;
	return 0;
}

static int
inject_rewrite(struct inject *in, const struct secretscan_rules *rules,
    const char *src, size_t len, const char **out, size_t *outlen)
{
	uint8_t		*p = NULL;
	size_t		 plen = 0;
	int		 rc;

	*out = src;
	*outlen = len;
	if (in == NULL || in->n == 0 || len == 0)
		return 0;
	rc = secretscan_rewrite(in->sv.scan, rules, (const uint8_t *)src, len,
	    &p, &plen, &in->leak);
	if (rc != 0)
		return -1;
	if (p != NULL) {
		if (inject_keep(in, p, plen) == -1)
			return -1;
		*out = (const char *)p;
		*outlen = plen;
	}
	return 0;
}

/* A request rewrite in place w; a leak of a bound secret is "unsafe". */
static int
inject_request_in(struct inject *in, enum inject_where w, const char *src,
    size_t len, const char **out, size_t *outlen)
{
	if (in == NULL) {
		*out = src;
		*outlen = len;
		return 0;
	}
	in->leak = UINT32_MAX;
	if (inject_rewrite(in, &in->req_rules[w], src, len, out,
	    outlen) == 0)
		return 0;
	if (in->leak < in->n && in->bound[in->leak]) {
		in->unsafe = true;
		in->leak_where = w;
	}
	return -1;
}

int
inject_request_bytes(struct inject *in, const char *src, size_t len,
    const char **out, size_t *outlen)
{
	return inject_request_in(in, INJECT_IN_HEADER, src, len, out, outlen);
}

/* A byte of RFC 4648's base64 alphabet (not "=", not base64url's). */
static bool
inject_b64_char(char ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
	    (ch >= '0' && ch <= '9') || ch == '+' || ch == '/';
}

/*
 * The credentials of an Authorization field that uses the Basic scheme
 * (RFC 7617): the scheme in any case, at least one SP or HTAB, then the
 * token, which must be base64: RFC 4648's alphabet, with its "=" padding
 * or without (a length no base64 has, or "=" anywhere but at the end, is
 * not).  Returns the token's offset in v, or 0 if v is not that.
 */
static size_t
inject_basic_token(const char *v, size_t len)
{
	size_t	off = LIT_LEN("basic"), n, pad = 0, i;

	if (len <= off || strncasecmp(v, "basic", off) != 0 ||
	    (v[off] != ' ' && v[off] != '\t'))
		return 0;
	while (off < len && (v[off] == ' ' || v[off] == '\t'))
		off++;
	n = len - off;
	while (pad < 2 && pad < n && v[len - 1 - pad] == '=')
		pad++;
	if (n == pad || n > INT_MAX / 2 || (pad > 0 && n % 4 != 0) ||
	    (n - pad) % 4 == 1)
		return 0;
	for (i = off; i < len - pad; i++)
		if (!inject_b64_char(v[i]))
			return 0;
	return off;
}

/*
 * Decodes the base64 token t[0..n) (inject_basic_token() checked it):
 * 0 with *out (malloc'd, cap *cap bytes: wipe it) and *outlen, or -1.
 */
static int
inject_b64_decode(const char *t, size_t n, uint8_t **out, size_t *outlen,
    size_t *cap)
{
	unsigned char	*quad;
	size_t		 body = n, q;
	int		 k;

	while (body > 0 && t[body - 1] == '=')
		body--;
	q = (body + 3) / 4 * 4;
	if ((quad = malloc(q)) == NULL)
		return -1;
	memcpy(quad, t, body);
	memset(quad + body, '=', q - body);
	*cap = q / 4 * 3 + 1;
	if ((*out = malloc(*cap)) == NULL) {
		secretscan_out_free(quad, q);
		return -1;
	}
	/* Valid input: it decodes, each "=" to a NUL that is not data. */
	k = EVP_DecodeBlock(*out, quad, (int)q);
	secretscan_out_free(quad, q);
	if (k < 0 || (size_t)k < q - body) {
		secretscan_out_free(*out, *cap);
		*out = NULL;
		return -1;
	}
	*outlen = (size_t)k - (q - body);
	return 0;
}

/*
 * The secret whose placeholder is in u[0..len), the user of Basic
 * credentials, and whose value holds a ":".
 */
static uint32_t
inject_colon_secret(const struct inject *in, const uint8_t *u, size_t len)
{
	const uint8_t	*v;
	size_t		 i, vl;

	for (i = 0; in->sv.ph != NULL && i < in->n; i++) {
		v = secrets_value(in->sv.vals, i, &vl);
		if (in->bound[i] && memchr(v, ':', vl) != NULL &&
		    memmem(u, len, in->sv.ph[i], strlen(in->sv.ph[i])) != NULL)
			return (uint32_t)i;
	}
	return UINT32_MAX;
}

/*
 * The user:password of Basic credentials, decoded from v[off..len): its
 * placeholders of bound secrets become values and it is encoded again
 * (with padding, after the scheme and spaces as sent); a value or
 * placeholder of an unbound secret is a leak.  A value swapped into the
 * user (before the first ":") may not hold a ":", which would move the
 * split (unsafe).  0 with *out and *outlen (v itself if nothing
 * changed), or -1.
 */
static int
inject_basic(struct inject *in, const char *v, size_t len, size_t off,
    const char **out, size_t *outlen)
{
	uint8_t		*dec = NULL, *enc;
	const char	*rw, *urw;
	const uint8_t	*colon;
	size_t		 declen = 0, cap = 0, rwlen, urwlen, ulen, elen;
	int		 rc = -1, n;

	*out = v;
	*outlen = len;
	if (inject_b64_decode(v + off, len - off, &dec, &declen, &cap) == -1)
		return -1;
	if (inject_request_in(in, INJECT_IN_BASIC, (const char *)dec, declen,
	    &rw, &rwlen) == -1)
		goto done;
	if (rw == (const char *)dec) {
		rc = 0;		/* nothing to swap: as sent */
		goto done;
	}
	colon = memchr(dec, ':', declen);
	ulen = colon != NULL ? (size_t)(colon - dec) : declen;
	if (inject_request_in(in, INJECT_IN_BASIC, (const char *)dec, ulen,
	    &urw, &urwlen) == -1)
		goto done;
	if (urw != (const char *)dec && memchr(urw, ':', urwlen) != NULL) {
		in->unsafe = in->colon = true;
		in->leak_where = INJECT_IN_BASIC;
		in->leak = inject_colon_secret(in, dec, ulen);
		goto done;
	}
	if (rwlen > (size_t)INT_MAX / 2)
		goto done;
	elen = off + (rwlen + 2) / 3 * 4;
	if ((enc = malloc(elen + 1)) == NULL)
		goto done;
	memcpy(enc, v, off);
	n = EVP_EncodeBlock(enc + off, (const unsigned char *)rw, (int)rwlen);
	if (inject_keep(in, enc, elen + 1) == -1)
		goto done;
	*out = (const char *)enc;
	*outlen = off + (size_t)n;
	rc = 0;
 done:
	secretscan_out_free(dec, cap);
	return rc;
}

int
inject_request_field(struct inject *in, const char *name, size_t nlen,
    const char *src, size_t len, const char **out, size_t *outlen)
{
	size_t	off;

	if (inject_request_in(in, INJECT_IN_HEADER, src, len, out,
	    outlen) == -1)
		return -1;
	if (in == NULL || in->n == 0 || *out != src ||
	    nlen != LIT_LEN("authorization") ||
	    strncasecmp(name, "authorization", nlen) != 0 ||
	    (off = inject_basic_token(src, len)) == 0)
		return 0;
	return inject_basic(in, src, len, off, out, outlen);
}

int
inject_request_host(struct inject *in, const char *host)
{
	const char	*out;
	size_t		 outlen;

	/*
	 * moatd writes Host itself, never rewritten: only a leak counts
	 * (a placeholder of a bound secret in the name stays as it is).
	 */
	if (host == NULL)
		return 0;
	return inject_request_in(in, INJECT_IN_HEADER, host, strlen(host),
	    &out, &outlen);
}

/*
 * The placeholders of secrets with "encode": "percent" in t[0..len)
 * become their values, percent-encoded.  0 (*out, *outlen: the result,
 * t itself when none was found), or -1 (memory).
 */
static int
inject_encode(struct inject *in, const char *t, size_t len,
    const char **out, size_t *outlen)
{
	const char	*ph, *at;
	const uint8_t	*v;
	uint8_t		*o;
	size_t		 i, vl, pl, n, cap, k;

	*out = t;
	*outlen = len;
	for (i = 0; i < in->n; i++) {
		if (!in->encode[i] || in->sv.ph == NULL)
			continue;
		ph = in->sv.ph[i];
		pl = strlen(ph);
		for (k = 0, t = *out, len = *outlen;
		    (at = memmem(t, len, ph, pl)) != NULL; k++) {
			len -= (size_t)(at - t) + pl;
			t = at + pl;
		}
		if (k == 0)
			continue;
		in->used[i] = 1;
		v = secrets_value(in->sv.vals, i, &vl);
		/* Each placeholder (pl > 0 bytes) becomes at most 3 vl. */
		if (vl > INJECT_TARGET_MAX_BYTES || k > INJECT_TARGET_MAX_BYTES ||
		    (cap = *outlen + k * vl * 3 + 1) > INJECT_TARGET_MAX_BYTES) {
			in->leak = (uint32_t)i;
			in->unsafe = in->too_long = true;
			in->leak_where = INJECT_IN_TARGET;
			return -1;
		}
		if ((o = malloc(cap)) == NULL)
			return -1;
		for (n = 0, t = *out, len = *outlen; len > 0; ) {
			if ((at = memmem(t, len, ph, pl)) == NULL) {
				memcpy(o + n, t, len);
				n += len;
				break;
			}
			memcpy(o + n, t, (size_t)(at - t));
			n += (size_t)(at - t);
			n += util_pct_encode(v, vl, (char *)o + n);
			len -= (size_t)(at - t) + pl;
			t = at + pl;
		}
		if (inject_keep(in, o, cap) == -1)
			return -1;
		*out = (const char *)o;
		*outlen = n;
	}
	return 0;
}

int
inject_request_target(struct inject *in, const char *src, size_t len,
    const char **out, size_t *outlen)
{
	if (inject_request_in(in, INJECT_IN_TARGET, src, len, out,
	    outlen) == -1)
		return -1;
	if (in == NULL || !in->any_encode)
		return 0;
	return inject_encode(in, *out, *outlen, out, outlen);
}

int
inject_request_body_bytes(struct inject *in, const char *src, size_t len,
    const char **out, size_t *outlen)
{
	return inject_request_in(in, INJECT_IN_BODY, src, len, out, outlen);
}

int
inject_response_bytes(struct inject *in, const char *src, size_t len,
    const char **out, size_t *outlen)
{
	if (in == NULL || !in->any_bound) {
		/* No value went to this host: nothing of it comes back. */
		*out = src;
		*outlen = len;
		return 0;
	}
	return inject_rewrite(in, &in->resp_rules, src, len, out, outlen);
}

const char *
inject_unsafe(const struct inject *in)
{
	if (in == NULL || !in->unsafe)
		return NULL;
	if (in->too_long)
		return "the request target with the secret's value "
		    "percent-encoded would be longer than 64 KiB";
	if (in->colon)
		return "the value of a secret holds a \":\" and its "
		    "placeholder is in the user of Basic credentials, where "
		    "the value would change which part is the password";
	if (in->leak_where == INJECT_IN_BASIC)
		return "the value of a secret holds control bytes (CR, LF, "
		    "NUL, ...), which Basic credentials may not hold";
	return in->leak_where == INJECT_IN_TARGET ?
	    "the value of a secret holds a space or control bytes, which "
	    "would break the request line (set \"encode\": \"percent\" on "
	    "the rule's placeholders entry to send it percent-encoded)" :
	    "the value of a secret holds control bytes (CR, LF, NUL, ...), "
	    "which would break the header field it was to go in";
}

const char *
inject_leak_name(const struct inject *in)
{
	if (in == NULL || in->sv.vals == NULL || in->leak >= in->n)
		return "?";
	return secrets_name(in->sv.vals, in->leak);
}

bool
inject_leaked(const struct inject *in)
{
	return in != NULL && in->leak < in->n;
}

bool
inject_overrides(const struct inject *in, const char *name, size_t len)
{
	size_t	i;

	if (in == NULL)
		return false;
	for (i = 0; i < in->ninjs; i++) {
		const char *h = in->injs[i].header;

		if (in->injs[i].kind != POLICY_INJECT_PLACEHOLDERS &&
		    h != NULL && strlen(h) == len &&
		    strncasecmp(h, name, len) == 0)
			return true;
	}
	return false;
}

/* The secrets template t puts in: their values went into the request. */
static void
inject_template_used(struct inject *in, const struct policy_template *t)
{
	size_t	i;

	for (i = 0; i < t->nparts; i++)
		if (t->parts[i].secret != POLICY_TPL_LITERAL &&
		    t->parts[i].secret < in->n)
			in->used[t->parts[i].secret] = 1;
}

/* Appends template t, with secret values, to buf (size cap, *len used). */
static int
inject_template(struct inject *in, const struct policy_template *t,
    char *buf, size_t cap, size_t *len)
{
	const uint8_t	*v;
	size_t		 i, vl;

	for (i = 0; i < t->nparts; i++) {
		const struct policy_tpl_part *p = &t->parts[i];

		if (p->secret == POLICY_TPL_LITERAL) {
			v = (const uint8_t *)p->text;
			vl = p->len;
		} else {
			if (in->sv.vals == NULL || p->secret >= in->n)
				return -1;
			v = secrets_value(in->sv.vals, p->secret, &vl);
		}
		if (*len + vl >= cap)
			return -1;
		memcpy(buf + *len, v, vl);
		*len += vl;
	}
	return 0;
}

static bool
inject_header_safe(const char *v, size_t len)
{
	return !inject_breaks_field((const uint8_t *)v, len);
}

int
inject_add_headers(struct inject *in, struct evbuffer *out,
    const char **detail)
{
	char		 v[INJECT_HEADER_MAX_BYTES] UTIL_NOINIT;
	char		 up[INJECT_HEADER_MAX_BYTES] UTIL_NOINIT;
	unsigned char	 b64[INJECT_HEADER_MAX_BYTES * 4 / 3 + 8] UTIL_NOINIT;
	size_t		 i, vl, ul, vmax = 0, umax = 0;
	int		 rc = 0, n, tr;

	/*
	 * The buffers are neither cleared on entry (UTIL_NOINIT) nor wiped
	 * whole, only where secrets went (inject_template writes [0, *len)):
	 * 54 KiB of memset and 32 KiB of OPENSSL_cleanse per request were
	 * 9 % of the forward proxy's CPU, injecting or not.
	 */
	*detail = NULL;
	for (i = 0; in != NULL && i < in->ninjs && rc == 0; i++) {
		const struct policy_inject *j = &in->injs[i];

		vl = ul = 0;
		if (j->kind == POLICY_INJECT_HEADER) {
			tr = inject_template(in, &j->value, v, sizeof(v), &vl);
			vmax = vl > vmax ? vl : vmax;
			if (tr == -1 || !inject_header_safe(v, vl)) {
				*detail = "an injected header value would hold "
				    "control bytes (CR, LF, NUL, ...), or is too "
				    "long";
				rc = -1;
				break;
			}
			evbuffer_add_printf(out, "%s: ", j->header);
			evbuffer_add(out, v, vl);
			EVBUFFER_ADD_LIT(out, "\r\n");
			inject_template_used(in, &j->value);
		} else if (j->kind == POLICY_INJECT_BASIC) {
			tr = inject_template(in, &j->user, up, sizeof(up), &ul);
			umax = ul > umax ? ul : umax;
			if (tr == -1 || memchr(up, ':', ul) != NULL) {
				*detail = "the basic auth user would hold a "
				    "\":\" or is too long";
				rc = -1;
				break;
			}
			up[ul++] = ':';
			tr = inject_template(in, &j->password, up, sizeof(up),
			    &ul);
			umax = ul > umax ? ul : umax;
			if (tr == -1 || ul * 4 / 3 + 4 >= sizeof(b64)) {
				*detail = "the basic auth credentials are too "
				    "long";
				rc = -1;
				break;
			}
			n = EVP_EncodeBlock(b64, (unsigned char *)up, (int)ul);
			EVBUFFER_ADD_LIT(out, "Authorization: Basic ");
			evbuffer_add(out, b64, (size_t)n);
			EVBUFFER_ADD_LIT(out, "\r\n");
			inject_template_used(in, &j->user);
			inject_template_used(in, &j->password);
			util_wipe(b64, (size_t)n + 1);	/* and its NUL */
		}
	}
	if (vmax > 0)
		util_wipe(v, vmax);
	if (umax > 0)
		util_wipe(up, umax);
	return rc;
}

bool
inject_scans_body(const struct inject *in)
{
	return in != NULL && in->n > 0 && in->scan_body;
}

bool
inject_strips_range(const struct inject *in)
{
	/*
	 * A host a secret is bound to may hold the value (a body it stored,
	 * a key it echoes).  A Range read of such an object can return a
	 * piece of the value shorter than the value, which the response
	 * scanner cannot recognise; without Range the whole representation
	 * comes back and every whole value in it is scrubbed.
	 */
	return in != NULL && in->any_bound;
}

bool
inject_body_may_grow(const struct inject *in)
{
	return in != NULL && in->body_grows;
}

/* Moves n bytes of in through st (made on first use). */
static int
inject_stream(struct inject *in, struct secretscan_stream **stp,
    const struct secretscan_rules *rules, struct evbuffer *src, size_t n,
    bool last, void (*emit)(void *, const uint8_t *, size_t), void *arg)
{
	struct evbuffer_iovec	v[8];
	int			nv, i, rc = 0;
	size_t			left = n, take;

	in->leak = UINT32_MAX;
	if (*stp == NULL &&
	    (*stp = secretscan_stream_new(in->sv.scan, rules)) == NULL)
		return -1;
	while (left > 0 && rc == 0) {
		nv = evbuffer_peek(src, (ssize_t)left, NULL, v, 8);
		if (nv <= 0)
			break;
		for (i = 0; i < nv && i < 8 && left > 0 && rc == 0; i++) {
			take = v[i].iov_len < left ? v[i].iov_len : left;
			rc = secretscan_stream_feed(*stp, v[i].iov_base, take,
			    emit, arg, &in->leak);
			evbuffer_drain(src, take);
			left -= take;
			break;	/* peek again: the chains moved */
		}
	}
	if (rc == 0 && last)
		rc = secretscan_stream_finish(*stp, emit, arg, &in->leak);
	return rc == 0 ? 0 : -1;
}

int
inject_body(struct inject *in, struct evbuffer *src, size_t n, bool last,
    void (*emit)(void *, const uint8_t *, size_t), void *arg)
{
	if (in == NULL)
		return -1;	/* nothing to scan with: fail closed */
	return inject_stream(in, &in->req_st, &in->req_rules[INJECT_IN_BODY],
	    src, n, last, emit, arg);
}

bool
inject_response_begin(struct inject *in)
{
	/*
	 * Only a host a secret is bound to gets a value from moatd (to any
	 * other a value is a leak), so only its responses can echo one.
	 */
	if (in == NULL || in->n == 0 || !in->any_bound)
		return false;
	secretscan_stream_free(in->resp_st);
	in->resp_st = NULL;
	inject_pass_clear(&in->pass);
	return true;
}

int
inject_response_body(struct inject *in, struct evbuffer *src, size_t n,
    bool last, void (*emit)(void *, const uint8_t *, size_t), void *arg)
{
	/*
	 * The whole body, however long: the scanner streams (it holds back
	 * at most one pattern's length), so nothing needs buffering, and a
	 * value echoed at any offset never reaches the sandbox.
	 */
	if (in == NULL)
		return -1;
	return inject_stream(in, &in->resp_st, &in->resp_rules, src, n, last,
	    emit, arg);
}

static void
inject_pass_clear(struct inject_pass *ps)
{
	if (ps->hold != NULL)
		evbuffer_free(ps->hold);
	free(ps->ranges);
	memset(ps, 0, sizeof(*ps));
}

/* secretscan_scan()'s hit: a range to mask, merged with those it meets. */
static void
inject_pass_hit(void *arg, const struct secretscan_hit *h)
{
	struct inject_pass	*ps = arg;
	struct inject_range	 r, *nr;
	size_t			 cap;

	r.start = h->offset;
	r.end = h->offset + h->len;
	while (ps->nranges > 0 && ps->ranges[ps->nranges - 1].end >= r.start) {
		nr = &ps->ranges[--ps->nranges];
		r.start = nr->start < r.start ? nr->start : r.start;
		r.end = nr->end > r.end ? nr->end : r.end;
	}
	if (ps->nranges == ps->cranges) {
		cap = ps->cranges > 0 ? ps->cranges * 2 : 8;
		if ((nr = realloc(ps->ranges, cap * sizeof(*nr))) == NULL) {
			ps->failed = true;
			return;
		}
		ps->ranges = nr;
		ps->cranges = cap;
	}
	ps->ranges[ps->nranges++] = r;
}

/* Moves n bytes of hold to out, the partial chain copied (if any). */
static int
inject_pass_move(struct inject_pass *ps, struct evbuffer *out, size_t n)
{
	if (n == 0)
		return 0;
	if (evbuffer_remove_buffer(ps->hold, out, n) != (int)n)
		return -1;
	ps->base += n;
	return 0;
}

/* The longest prefix of hold's first n bytes made of whole chains. */
static size_t
inject_pass_chains(struct inject_pass *ps, size_t n)
{
	struct evbuffer_iovec	v[16];
	size_t			k = 0;
	int			nv, i;

	nv = evbuffer_peek(ps->hold, (ev_ssize_t)n, NULL, v, 16);
	for (i = 0; i < nv && i < 16 && k + v[i].iov_len <= n; i++)
		k += v[i].iov_len;
	return k;
}

/*
 * Masks the ranges that begin before upto (each whole: it is known in
 * full) and moves everything before upto, or all of hold with last.
 * Short of last, only whole chains move (a chain is never copied for
 * the few bytes that may begin a value at its end: they wait for the
 * next bytes).
 */
static int
inject_pass_flush(struct inject_pass *ps, uint64_t upto, bool last,
    struct evbuffer *out)
{
	static const char	stars[] = "********************************"
				    "********************************";
	struct inject_range	*r;
	size_t			 k, used = 0, m;

	for (; used < ps->nranges; used++) {
		r = &ps->ranges[used];
		if (r->start >= upto && !last)
			break;
		if (r->start > ps->base &&
		    inject_pass_move(ps, out, (size_t)(r->start - ps->base)) ==
		    -1)
			return -1;
		if (r->end <= ps->base)
			continue;	/* masked with the range before it */
		for (k = (size_t)(r->end - ps->base); k > 0; k -= m) {
			m = k < sizeof(stars) - 1 ? k : sizeof(stars) - 1;
			if (evbuffer_drain(ps->hold, m) == -1 ||
			    evbuffer_add(out, stars, m) == -1)
				return -1;
			ps->base += m;
		}
	}
	if (used > 0) {
		memmove(ps->ranges, ps->ranges + used,
		    (ps->nranges - used) * sizeof(*ps->ranges));
		ps->nranges -= used;
	}
	if (last)
		return inject_pass_move(ps, out, evbuffer_get_length(ps->hold));
	if (upto <= ps->base)
		return 0;
	return inject_pass_move(ps, out, inject_pass_chains(ps,
	    (size_t)(upto - ps->base)));
}

int
inject_response_pass(struct inject *in, struct evbuffer *src, size_t n,
    bool last, struct evbuffer *out)
{
	struct inject_pass	*ps;
	struct evbuffer_iovec	 v[8];
	struct evbuffer_ptr	 at;
	size_t			 off;
	int			 nv, i;

	if (in == NULL)
		return -1;	/* nothing to scan with: fail closed */
	ps = &in->pass;
	if (ps->hold == NULL) {
		if ((ps->hold = evbuffer_new()) == NULL ||
		    secretscan_cursor_init(in->sv.scan, &in->resp_rules,
		    &ps->cur) == -1)
			return -1;
	}
	if (n > 0 && evbuffer_remove_buffer(src, ps->hold, n) != (int)n)
		return -1;
	/* Scan what came, in place; the chains do not move meanwhile. */
	off = (size_t)(ps->cur.pos - ps->base);
	while (off < evbuffer_get_length(ps->hold)) {
		if (evbuffer_ptr_set(ps->hold, &at, off,
		    EVBUFFER_PTR_SET) == -1)
			return -1;
		nv = evbuffer_peek(ps->hold, -1, &at, v, 8);
		for (i = 0; i < nv && i < 8; i++) {
			secretscan_scan(in->sv.scan, &in->resp_rules, &ps->cur,
			    v[i].iov_base, v[i].iov_len, inject_pass_hit, ps);
			off += v[i].iov_len;
		}
	}
	if (ps->failed)
		return -1;
	return inject_pass_flush(ps, secretscan_cursor_final(in->sv.scan,
	    &ps->cur), last, out);
}

/* Whether template t holds a secret whose quota is used up (into why). */
static bool
inject_tpl_quota_out(const struct policy_template *t,
    const struct secrets_view *sv, struct sandbox *sb, char *why, size_t len)
{
	unsigned	req, per;
	size_t		i, k;

	for (i = 0; i < t->nparts; i++) {
		k = t->parts[i].secret;
		if (k == POLICY_TPL_LITERAL || k >= secrets_count(sv->vals) ||
		    !secrets_quota(sv->vals, k, &req, &per))
			continue;
		if (!quota_secret_room(sb, secrets_name(sv->vals, k), req, per,
		    why, len))
			return true;
	}
	return false;
}

int
inject_quota_room(const struct inject_req *rq, char *why, size_t len)
{
	const struct policy_inject	*injs;
	struct secrets_view		 sv;
	size_t				 n = 0, i;
	int				 rc = 0;

	/* A sandbox that never counted a quota has none used up. */
	if (rq->rule == NULL || rq->sb == NULL ||
	    atomic_load_explicit(&rq->sb->quota, memory_order_relaxed) ==
	    NULL || (injs = policy_rule_injects(rq->rule, &n)) == NULL ||
	    n == 0)
		return 0;
	if (secrets_view(rq->sb, rq->secrets, &sv) == -1 || sv.vals == NULL) {
		secrets_view_done(&sv);
		return 0;	/* inject_begin() fails closed on its own */
	}
	for (i = 0; i < n && rc == 0; i++)
		if (inject_tpl_quota_out(&injs[i].value, &sv, rq->sb, why,
		    len) || inject_tpl_quota_out(&injs[i].user, &sv, rq->sb,
		    why, len) || inject_tpl_quota_out(&injs[i].password, &sv,
		    rq->sb, why, len))
			rc = -1;
	secrets_view_done(&sv);
	return rc;
}

const char *
inject_quota_take(struct inject *in, char *why, size_t len)
{
	unsigned	 req, per;
	size_t		 i, j;

	if (in == NULL || in->used == NULL || in->sb == NULL)
		return NULL;
	for (i = 0; i < in->n; i++) {
		if (!in->used[i] || in->taken[i] ||
		    !secrets_quota(in->sv.vals, i, &req, &per))
			continue;
		if (!quota_secret_take(in->sb, secrets_name(in->sv.vals, i),
		    req, per, why, len)) {
			/* The request does not go: what this call counted
			 * is given back. */
			for (j = 0; j < i; j++)
				if (in->taken[j] == 2) {
					quota_secret_put(in->sb,
					    secrets_name(in->sv.vals, j));
					in->taken[j] = 0;
				}
			return secrets_name(in->sv.vals, i);
		}
		in->taken[i] = 2;	/* this call's */
	}
	for (i = 0; i < in->n; i++)
		if (in->taken[i] == 2)
			in->taken[i] = 1;
	return NULL;
}

void
inject_sent(struct inject *in)
{
	if (in != NULL)
		in->sent = true;
}

/* Adds secret i to the names, once. */
static void
inject_name_add(struct inject *in, size_t *k, size_t i)
{
	size_t	j;

	for (j = 0; j < *k; j++)
		if (in->names[j] == secrets_name(in->sv.vals, i))
			return;
	if (*k < INJECT_NAMES_MAX)
		in->names[(*k)++] = secrets_name(in->sv.vals, i);
}

const char *const *
inject_names(struct inject *in)
{
	const size_t	*idx;
	size_t		 i, k = 0, nr = 0;

	if (in == NULL || !in->sent || in->used == NULL)
		return NULL;
	/* The rule's secrets in its order, then those other rules bound. */
	if (in->rule != NULL)
		nr = policy_rule_secrets(in->rule, &idx);
	for (i = 0; i < nr; i++)
		if (idx[i] < in->n && in->used[idx[i]])
			inject_name_add(in, &k, idx[i]);
	for (i = 0; i < in->n; i++)
		if (in->used[i])
			inject_name_add(in, &k, i);
	in->names[k] = NULL;
	return k > 0 ? in->names : NULL;
}
