/*
 * inject_rules.c - the compiled form of a rule's "inject", "plain_http" and
 * "git" keys, and the accessors moatd and `moat explain` read them with.
 *
 * What it is: ownership (teardown) of injections and templates, the list
 * of header fields no rule may set, and the small questions the proxy
 * asks about a rule's secrets.  A template is stored as parts, literal
 * text or a secret index, so the proxy builds a header value by copying
 * bytes and values in order, with no parsing at request time.
 *
 * What it is not: the parser of these keys (config.c, which needs the
 * config's positions for its errors), the binding of secrets to targets
 * (policy.c, which owns the matchers) or the git preset (git.c).  No
 * secret value ever passes through here: only indexes and names.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy/policy_int.h"

/* A header field no injection may set, and why. */
struct inject_refused {
	const char	*name;
	const char	*why;
};

static const char	inject_hop[] = "a hop-by-hop field, not passed on to "
			    "the upstream";
static const char	inject_framing[] = "moatd frames the request itself";

static const struct inject_refused	inject_refused_names[] = {
	{ "connection", inject_hop },
	{ "keep-alive", inject_hop },
	{ "proxy-connection", inject_hop },
	{ "proxy-authenticate", inject_hop },
	{ "proxy-authorization", inject_hop },
	{ "te", inject_hop },
	{ "trailer", inject_hop },
	{ "upgrade", inject_hop },
	{ "transfer-encoding", inject_framing },
	{ "content-length", inject_framing },
	{ "host", "moatd sends the host it checked" },
};

#define INJECT_NREFUSED	(sizeof(inject_refused_names) / \
			    sizeof(inject_refused_names[0]))

static void	inject_fmt_append(char *buf, size_t len, size_t *at,
		    const char *s, size_t n);

void
inject_template_clear(struct policy_template *t)
{
	size_t	i;

	if (t == NULL)
		return;
	for (i = 0; t->parts != NULL && i < t->nparts; i++)
		free((char *)t->parts[i].text);
	free((struct policy_tpl_part *)t->parts);
	t->parts = NULL;
	t->nparts = 0;
}

void
inject_clear(struct policy_inject *in)
{
	if (in == NULL)
		return;
	free((char *)in->header);
	inject_template_clear(&in->value);
	inject_template_clear(&in->user);
	inject_template_clear(&in->password);
	free((size_t *)in->secrets);
	memset(in, 0, sizeof(*in));
}

const char *
inject_header_refused(const char *name, size_t len)
{
	size_t	i;

	for (i = 0; i < INJECT_NREFUSED; i++)
		if (strlen(inject_refused_names[i].name) == len &&
		    strncasecmp(inject_refused_names[i].name, name, len) == 0)
			return inject_refused_names[i].why;
	return NULL;
}

bool
inject_rule_has(const struct policy_rule *r, size_t secret)
{
	const struct policy_rule_more	*m = policy_more(r);
	size_t				 i;

	for (i = 0; i < m->nsecrets; i++)
		if (m->secrets[i] == secret)
			return true;
	return false;
}

/* ------------------------------------------------------------------ */
/* Accessors (policy.h)                                                 */
/* ------------------------------------------------------------------ */

const struct policy_inject *
policy_rule_injects(const struct policy_rule *r, size_t *n)
{
	*n = policy_more(r)->ninjects;
	return *n > 0 ? policy_more(r)->injects : NULL;
}

size_t
policy_rule_secrets(const struct policy_rule *r, const size_t **idx)
{
	*idx = policy_more(r)->nsecrets > 0 ? policy_more(r)->secrets : NULL;
	return policy_more(r)->nsecrets;
}

bool
policy_rule_plain_http(const struct policy_rule *r)
{
	return r->plain_http != 0;
}

enum policy_reason
policy_plain_http_check(const struct policy_rule *r)
{
	/*
	 * On plain HTTP the injected value would cross the network in
	 * clear text, so a rule injects there only when it says so.  Not
	 * injecting and forwarding anyway is no better: the request would
	 * go out without the credential the rule promised, or with the
	 * placeholder the sandbox put in its place.
	 */
	if (r != NULL && policy_more(r)->ninjects > 0 && !r->plain_http)
		return POLICY_R_NEEDS_TLS;
	return POLICY_R_ALLOWED;
}

int
policy_rule_git(const struct policy_rule *r)
{
	return r->git;
}

/* inject_fmt_append() of a string literal. */
#define INJECT_FMT_LIT(buf, len, at, s) \
	inject_fmt_append((buf), (len), (at), "" s "", LIT_LEN(s))

/* Appends n bytes of s at *at, keeping buf NUL-terminated. */
static void
inject_fmt_append(char *buf, size_t len, size_t *at, const char *s, size_t n)
{
	if (*at + 1 >= len)
		return;
	if (n > len - 1 - *at)
		n = len - 1 - *at;
	memcpy(buf + *at, s, n);
	*at += n;
	buf[*at] = '\0';
}

char *
policy_template_format(const struct moat_config *c,
    const struct policy_template *t, char *buf, size_t len)
{
	const struct policy_tpl_part	*pt;
	const char			*s, *dollar;
	size_t				 i, at = 0, n;

	if (len == 0)
		return buf;
	buf[0] = '\0';
	for (i = 0; t != NULL && i < t->nparts; i++) {
		pt = &t->parts[i];
		if (pt->secret != POLICY_TPL_LITERAL) {
			INJECT_FMT_LIT(buf, len, &at, "${");
			s = c != NULL && pt->secret < c->nsecrets ?
			    c->secrets[pt->secret].name : "?";
			inject_fmt_append(buf, len, &at, s, strlen(s));
			INJECT_FMT_LIT(buf, len, &at, "}");
			continue;
		}
		for (s = pt->text, n = pt->len; n > 0; ) {
			if ((dollar = memchr(s, '$', n)) == NULL) {
				inject_fmt_append(buf, len, &at, s, n);
				break;
			}
			inject_fmt_append(buf, len, &at, s,
			    (size_t)(dollar - s) + 1);
			INJECT_FMT_LIT(buf, len, &at, "$");
			n -= (size_t)(dollar - s) + 1;
			s = dollar + 1;
		}
	}
	return buf;
}
