/*
 * policy.c - the compiled policy and the decision on a target.
 *
 * What it is: the matchers a config compiles to (an exact-name hash, a
 * wildcard-suffix hash, a "*" list, one CIDR trie per family, each
 * pointing at lists of rules) and policy_decide(), which gathers the rules
 * whose hosts or cidrs match a target and picks the verdict.  The work per
 * decision is one hash probe per label of the name and one trie walk per
 * address, plus the rules that actually match: adding unrelated rules
 * does not slow it down.
 *
 * What it is not: the config parser (config.c) or the deny sets (deny.c).
 * It does no I/O and allocates only for paths too long for the stack.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy/policy_int.h"

#define POLICY_FIRST_RULES	16	/* initial room for rules */
#define POLICY_FIRST_REFS	32	/* initial room for rule links */
#define POLICY_STRBLK_FIRST	128	/* bytes of the first string block */
#define POLICY_STRBLK_MAX	65536	/* ... at most, unless one is longer */
#define POLICY_PORTS		65536	/* bits in the cidr-allow port map */

/* Result of checking one candidate rule against a target. */
enum policy_check {
	POLICY_CHK_APPLIES = 0,	/* ports, methods, paths all match */
	POLICY_CHK_PORT,	/* host matched, port did not */
	POLICY_CHK_METHOD,	/* ... method did not */
	POLICY_CHK_PATH,	/* ... path did not */
	POLICY_CHK_LATER,	/* deny rule that needs the request to tell */
	POLICY_CHK_OVERRIDE,	/* strict_methods: the request names another
				   method (deny rules: applies) */
	POLICY_CHK_BODY		/* strict_methods: GET or HEAD with a body */
};

/*
 * What a decision has gathered so far: the first applying deny and allow
 * rules, the first allow rule that matched the host but failed (with its
 * reason), whether a deny rule needs the request to tell (later), and the
 * target's path, normalised on first use (path_state 0 not yet, 1 done,
 * -1 unsafe), on the heap only if longer than the stack buffer, and its
 * wide form (wide_state likewise; -1 also when it hides a dot segment),
 * which deny rules match and allow rules check for hidden dot segments.
 */
struct policy_eval {
	const struct policy_target	*t;
	uint32_t			 deny;
	uint32_t			 allow;
	uint32_t			 partial;
	enum policy_reason		 partial_reason;
	enum policy_reason		 deny_reason;
	bool				 later;
	bool				 deny_only;	/* name target, address candidates */
	bool				 via_exact;	/* the list being read is the
							   exact names' */
	uint32_t			 named;		/* first allow rule that
							   applies and names the
							   target exactly */
	int				 path_state;
	char				*path;
	size_t				 pathlen;
	char				*heap;
	char				 stack[PATH_STACK_BYTES];
	int				 wide_state;
	char				*wide;
	size_t				 widelen;
	char				*wide_heap;
	char				 wide_stack[PATH_STACK_BYTES];
	int				 strict_state;	/* 0 not yet, else
							   POLICY_CHK_* + 1 */
};

/*
 * Every reason: its code, the status of moatd's own HTTP reply (0: none),
 * the SOCKS5 reply and the sentence for an agent.  The contract is in
 * policy.h (struct policy_reason_info), including the overrides callers
 * make.  Reasons an agent never reads a sentence for, or that no more
 * specific one fits, say "moat could not serve the request".
 */
static const struct policy_reason_info	policy_reason_table[POLICY_R__COUNT] = {
	[POLICY_R_ALLOWED] = { "allowed", 0, 0x00,
	    "moat could not serve the request" },
	[POLICY_R_NO_RULE] = { "no-rule", 403, 0x02,
	    "no rule in moat's policy allows this host" },
	[POLICY_R_DENIED_BY_RULE] = { "denied-by-rule", 403, 0x02,
	    "a deny rule in moat's policy matches this host" },
	[POLICY_R_PORT] = { "port", 403, 0x02,
	    "the host is allowed, but not on this port" },
	[POLICY_R_METHOD] = { "method", 403, 0x02,
	    "the host is allowed, but not with this method" },
	[POLICY_R_PATH] = { "path", 403, 0x02,
	    "the host is allowed, but not this path" },
	[POLICY_R_PRIVATE_ADDRESS] = { "private-address", 403, 0x02,
	    "the address is loopback, private, link-local or "
	    "another special-purpose range, which moat never opens "
	    "unless its policy names it" },
	[POLICY_R_METADATA] = { "metadata", 403, 0x02,
	    "cloud metadata endpoints are always denied" },
	[POLICY_R_BAD_REQUEST] = { "bad-request", 400, 0x02,
	    "the request is malformed or ambiguous" },
	[POLICY_R_DNS_FAILURE] = { "dns-failure", 502, 0x04,
	    "the name did not resolve" },
	[POLICY_R_UPSTREAM_UNREACHABLE] = { "upstream-unreachable", 502, 0x05,
	    "no allowed address of the host accepted a connection" },
	[POLICY_R_TIMEOUT] = { "timeout", 504, 0x04,
	    "a step of the request took too long" },
	[POLICY_R_LIMIT] = { "limit", 431, 0x02,
	    "the request exceeds one of moat's size limits" },
	[POLICY_R_NEEDS_INSPECTION] = { "needs-inspection", 403, 0x02,
	    "the rule for this host must see inside the tunnel" },
	[POLICY_R_AUTH] = { "auth", 407, 0x02,
	    "this proxy needs authentication" },
	[POLICY_R_DNS_DENIED] = { "dns-denied", 0, 0x02,
	    "moat could not serve the request" },
	[POLICY_R_SECRET_LEAK] = { "secret-leak", 403, 0x02,
	    "the request carries a secret to a host it is not "
	    "bound to" },
	[POLICY_R_TLS] = { "tls", 502, 0x02,
	    "moat could not serve the request" },
	[POLICY_R_RATE] = { "rate", 429, 0x02,
	    "the rule's rate limit is exhausted" },
	[POLICY_R_SHUTDOWN] = { "shutdown", 503, 0x01,
	    "moat is shutting down" },
	[POLICY_R_INTERNAL] = { "internal", 500, 0x01,
	    "moat could not serve the request" },
	[POLICY_R_NEEDS_TLS] = { "needs-tls", 403, 0x02,
	    "the rule for this host injects a secret, which moat "
	    "only sends over TLS: use https://" },
	[POLICY_R_DNS_BUDGET] = { "dns-budget", 429, 0x02,
	    "this sandbox had too many new names under the rule's "
	    "wildcard resolved this minute" },
	[POLICY_R_METHOD_OVERRIDE] = { "method-override", 403, 0x02,
	    "the rule for this host checks methods, and the "
	    "request asks for another one (X-HTTP-Method-Override "
	    "or a similar field, or a _method parameter)" },
	[POLICY_R_BODY_ON_GET] = { "body-on-get", 403, 0x02,
	    "the rule for this host checks methods, and a GET or "
	    "HEAD request may not carry a body" },
	[POLICY_R_SECRET_UNSAFE] = { "secret-unsafe", 403, 0x02,
	    "a secret's value would break the request's framing "
	    "where it was to go" },
	[POLICY_R_SANDBOX_REFUSED] = { "sandbox-refused", 0, 0x02,
	    "moat could not serve the request" },
	[POLICY_R_AUDIT_UNAVAILABLE] = { "audit-unavailable", 503, 0x01,
	    "moat cannot write its audit log, and does not decide "
	    "what it cannot record" },
	[POLICY_R_SNI_MISMATCH] = { "sni-mismatch", 0, 0x02,
	    "moat could not serve the request" },
	[POLICY_R_PROTOCOL] = { "protocol", 0, 0x02,
	    "the rule for this host does not list this protocol "
	    "in its \"protocols\"" },
	[POLICY_R_DROPPED_PACKET] = { "dropped-packet", 0, 0x02,
	    "the sandbox's firewall dropped the packet: only TCP and "
	    "DNS reach moat" },
	[POLICY_R_QUOTA_BYTES] = { "quota-bytes", 429, 0x02,
	    "the quota of bytes this sandbox may send (the rule's or "
	    "its policy's) is used up for now" },
	[POLICY_R_QUOTA_SECRET] = { "quota-secret", 429, 0x02,
	    "the request would carry a secret whose quota of requests "
	    "is used up for now" },
};

static void	policy_rule_clear(struct policy_rule *r);
static int	policy_ref_push(struct policy *p, uint32_t *head,
		    uint32_t rule);
static bool	policy_port_ok(const struct policy_rule *r, uint16_t port);
static bool	policy_method_ok(const struct policy_rule *r, const char *m);
static const char	*policy_eval_path(struct policy_eval *ev);
static const char	*policy_eval_wide(struct policy_eval *ev);
static enum policy_check	policy_eval_strict(struct policy_eval *ev);
static enum policy_check	policy_check_paths(const struct policy_rule *r,
				    struct policy_eval *ev);
static enum policy_check	policy_check(const struct policy_rule *r,
				    struct policy_eval *ev);
static void	policy_eval_rule(struct policy_eval *ev,
		    const struct policy_rule *r);
static void	policy_eval_list(const struct policy *p,
		    struct policy_eval *ev, uint32_t head);
static bool	policy_bound_list(const struct policy *p, uint32_t head,
		    size_t secret, uint16_t port);

const char *
policy_reason_str(enum policy_reason r)
{
	return policy_reason_info(r)->code;
}

const struct policy_reason_info *
policy_reason_info(enum policy_reason r)
{
	if ((unsigned)r >= POLICY_R__COUNT)
		r = POLICY_R_INTERNAL;
	return &policy_reason_table[r];
}

/*
 * Audit mode: the refusals of the rules pass (policy.h says which and
 * why the others stay).  A switch over the codes rather than a column of
 * the table: a reason added later stays enforced until someone says.
 */
bool
policy_reason_waivable(enum policy_reason r)
{
	switch (r) {
	case POLICY_R_NO_RULE:
	case POLICY_R_DENIED_BY_RULE:
	case POLICY_R_PORT:
	case POLICY_R_METHOD:
	case POLICY_R_PATH:
	case POLICY_R_METHOD_OVERRIDE:
	case POLICY_R_BODY_ON_GET:
	case POLICY_R_NEEDS_INSPECTION:
	case POLICY_R_PROTOCOL:
	case POLICY_R_RATE:
	case POLICY_R_QUOTA_BYTES:
	case POLICY_R_DNS_DENIED:
		return true;
	default:
		return false;
	}
}

bool
policy_waive(struct policy_decision *d)
{
	if (d == NULL)
		return false;
	if (d->would_deny != POLICY_R_ALLOWED)
		return true;
	if (d->verdict == POLICY_ALLOW || !policy_reason_waivable(d->reason))
		return false;
	d->would_deny = d->reason;
	d->verdict = POLICY_ALLOW;
	d->reason = POLICY_R_ALLOWED;
	d->flags = (d->flags & POLICY_F_NAMED) ? 0 : POLICY_F_WILDCARD;
	return true;
}

struct policy *
policy_new(void)
{
	struct policy	*p;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		return NULL;
	domain_init(&p->exact);
	domain_init(&p->wild);
	domain_init(&p->geo_cc);
	domain_init(&p->geo_asn);
	p->star = POLICY_NONE;
	trie_init(&p->cidr4, ADDR_V4_BITS);
	trie_init(&p->cidr6, ADDR_V6_BITS);
	trie_init(&p->ap4, ADDR_V4_BITS);
	trie_init(&p->ap6, ADDR_V6_BITS);
	if ((p->deny = deny_get()) == NULL) {
		policy_free(p);
		return NULL;
	}
	return p;
}

const struct policy_rule_more	policy_rule_none;

struct policy_rule_more *
policy_more_new(struct policy_rule *r)
{
	if (r->more == NULL)
		r->more = calloc(1, sizeof(*r->more));
	return r->more;
}

char *
policy_strdup(struct policy *p, const char *s, size_t n)
{
	struct policy_strblk	*b = p->strs;
	size_t			 cap;
	char			*out;

	if (n == SIZE_MAX)
		return NULL;
	if (b == NULL || b->cap - b->used < n + 1) {
		/* Each block twice the last, so a policy of a few rules
		 * takes one small block and one of many, few large ones. */
		if (b == NULL)
			cap = POLICY_STRBLK_FIRST;
		else if (b->cap < POLICY_STRBLK_MAX / 2)
			cap = b->cap * 2;
		else
			cap = POLICY_STRBLK_MAX;
		if (cap < n + 1)
			cap = n + 1;
		if (cap > SIZE_MAX - sizeof(*b) ||
		    (b = malloc(sizeof(*b) + cap)) == NULL)
			return NULL;
		b->next = p->strs;
		b->used = 0;
		b->cap = cap;
		p->strs = b;
	}
	out = b->data + b->used;
	memcpy(out, s, n);
	out[n] = '\0';
	b->used += n + 1;
	return out;
}

static void
policy_rule_clear(struct policy_rule *r)
{
	struct policy_rule_more	*m = r->more;
	size_t			 i;

	if (r->own_ports)
		free((void *)r->ports);
	if (m != NULL) {
		for (i = 0; i < m->nmethods; i++)
			free(m->methods[i]);
		free(m->methods);
		for (i = 0; i < m->npaths; i++) {
			free(m->paths[i]);
			if (m->wpaths != NULL)
				free(m->wpaths[i]);
		}
		free(m->paths);
		free(m->wpaths);
		for (i = 0; i < m->ninjects; i++)
			inject_clear(&m->injects[i]);
		free(m->injects);
		free(m->secrets);
		free(m);
	}
	memset(r, 0, sizeof(*r));
}

void
policy_rule_drop(struct policy_rule *r)
{
	policy_rule_clear(r);
}

void
policy_free(struct policy *p)
{
	struct policy_strblk	*b;
	size_t			 i;

	if (p == NULL)
		return;
	while ((b = p->strs) != NULL) {
		p->strs = b->next;
		free(b);
	}
	for (i = 0; i < p->nrules; i++)
		policy_rule_clear(&p->rules[i]);
	free(p->rules);
	free(p->refs);
	domain_free(&p->exact);
	domain_free(&p->wild);
	trie_free(&p->cidr4);
	trie_free(&p->cidr6);
	deny_put(p->deny);
	trie_free(&p->ap4);
	trie_free(&p->ap6);
	domain_free(&p->geo_cc);
	domain_free(&p->geo_asn);
	geo_close(p->geo_country_db);
	geo_close(p->geo_asn_db);
	free(p);
}

int
policy_reserve_rules(struct policy *p, size_t n)
{
	struct policy_rule	*nr;

	if (n <= p->caprules)
		return 0;
	if (n >= POLICY_NONE ||
	    (nr = reallocarray(p->rules, n, sizeof(*nr))) == NULL)
		return -1;
	p->rules = nr;
	p->caprules = n;
	return 0;
}

uint32_t
policy_add_rule(struct policy *p, const struct policy_rule *r)
{
	struct policy_rule	*nr, tmp;

	if (p->nrules == p->caprules) {
		size_t	ncap = p->caprules ? p->caprules * 2 :
		    POLICY_FIRST_RULES;

		if (ncap >= POLICY_NONE ||
		    (nr = reallocarray(p->rules, ncap, sizeof(*nr))) == NULL) {
			tmp = *r;
			policy_rule_clear(&tmp);
			return POLICY_NONE;
		}
		p->rules = nr;
		p->caprules = ncap;
	}
	nr = &p->rules[p->nrules];
	*nr = *r;
	nr->index = (uint32_t)p->nrules;
	return (uint32_t)p->nrules++;
}

static int
policy_ref_push(struct policy *p, uint32_t *head, uint32_t rule)
{
	struct policy_ref	*nr;

	/* The same rule naming one host twice needs one link. */
	if (*head != POLICY_NONE && p->refs[*head].rule == rule)
		return 0;
	if (p->nrefs == p->caprefs) {
		size_t	ncap = p->caprefs ? p->caprefs * 2 : POLICY_FIRST_REFS;

		if (ncap >= POLICY_NONE ||
		    (nr = reallocarray(p->refs, ncap, sizeof(*nr))) == NULL)
			return -1;
		p->refs = nr;
		p->caprefs = ncap;
	}
	p->refs[p->nrefs].rule = rule;
	p->refs[p->nrefs].next = *head;
	*head = (uint32_t)p->nrefs++;
	return 0;
}

int
policy_add_name(struct policy *p, uint32_t rule, const char *name)
{
	uint32_t	*head;

	if ((head = domain_insert(&p->exact, name, strlen(name))) == NULL)
		return -1;
	return policy_ref_push(p, head, rule);
}

int
policy_add_suffix(struct policy *p, uint32_t rule, const char *suffix)
{
	uint32_t	*head;

	if ((head = domain_insert(&p->wild, suffix, strlen(suffix))) == NULL)
		return -1;
	return policy_ref_push(p, head, rule);
}

int
policy_add_star(struct policy *p, uint32_t rule)
{
	return policy_ref_push(p, &p->star, rule);
}

int
policy_add_country(struct policy *p, uint32_t rule, const char *cc)
{
	uint32_t	*head;

	if ((head = domain_insert(&p->geo_cc, cc, strlen(cc))) == NULL)
		return -1;
	return policy_ref_push(p, head, rule);
}

int
policy_add_asn(struct policy *p, uint32_t rule, uint32_t asn)
{
	char		 key[16];
	uint32_t	*head;
	int		 n;

	n = snprintf(key, sizeof(key), "%u", asn);
	if ((head = domain_insert(&p->geo_asn, key, (size_t)n)) == NULL)
		return -1;
	return policy_ref_push(p, head, rule);
}

bool
policy_geo_enabled(const struct policy *p)
{
	return p != NULL && (p->geo_country_db != NULL ||
	    p->geo_asn_db != NULL);
}

void
policy_geo_lookup(const struct policy *p, const struct policy_addr *a,
    struct policy_geo *out)
{
	memset(out, 0, sizeof(*out));
	if (p == NULL || a == NULL)
		return;
	if (p->geo_country_db != NULL)
		(void)geo_country(p->geo_country_db, a, out->country);
	if (p->geo_asn_db != NULL && !geo_asn(p->geo_asn_db, a, &out->asn))
		out->asn = 0;
}

int
policy_add_cidr(struct policy *p, uint32_t rule, const struct addr_cidr *c)
{
	struct policy_rule	*r = &p->rules[rule];
	uint32_t		*head;

	head = trie_insert(c->addr.family == AF_INET ? &p->cidr4 : &p->cidr6,
	    addr_bytes(&c->addr), c->plen);
	if (head == NULL || policy_ref_push(p, head, rule) == -1)
		return -1;
	r->has_cidrs = 1;
	return 0;
}

int
policy_add_allow_private(struct policy *p, const struct addr_cidr *c)
{
	uint32_t	*v;

	v = trie_insert(c->addr.family == AF_INET ? &p->ap4 : &p->ap6,
	    addr_bytes(&c->addr), c->plen);
	if (v == NULL)
		return -1;
	*v = 1;
	return 0;
}

/* ------------------------------------------------------------------ */

static bool
policy_port_ok(const struct policy_rule *r, uint16_t port)
{
	size_t	lo = 0, hi = r->nports, mid;

	/*
	 * Port 0 asks about a name on any port (the DNS listener): an allow
	 * rule applies whatever its ports, a deny rule only if it covers
	 * every port, so "deny smtp.example.com port 25" does not make the
	 * name vanish from DNS.
	 */
	if (port == 0)
		return r->action == POLICY_ALLOW || r->nports == 0;
	if (r->nports == 0)
		return true;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (port < r->ports[mid].lo)
			hi = mid;
		else if (port > r->ports[mid].hi)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

/*
 * Methods are case-sensitive (RFC 9110), so an allow rule's are compared
 * exactly; a deny rule's ignore case, since some backends route "delete"
 * as DELETE.  The rule's methods are upper case.
 */
static bool
policy_method_ok(const struct policy_rule *r, const char *m)
{
	const struct policy_rule_more	*x = policy_more(r);
	size_t				 i;

	for (i = 0; i < x->nmethods; i++)
		if ((r->action == POLICY_DENY ? strcasecmp(x->methods[i], m) :
		    strcmp(x->methods[i], m)) == 0)
			return true;
	return false;
}

/* The target's normalised path, or NULL if it has none or is unsafe. */
static const char *
policy_eval_path(struct policy_eval *ev)
{
	const char	*err, *in = ev->t->path;
	size_t		 len;

	if (ev->path_state != 0)
		return ev->path_state == 1 ? ev->path : NULL;
	ev->path_state = -1;
	if (in == NULL)
		return NULL;
	len = strlen(in);
	if (len + 1 <= sizeof(ev->stack))
		ev->path = ev->stack;
	else if ((ev->path = ev->heap = malloc(len + 1)) == NULL)
		return NULL;
	if (path_normalise(in, len, false, ev->path, &ev->pathlen, &err) == -1)
		return NULL;
	ev->path_state = 1;
	return ev->path;
}

/* The wide form of the target's path (see path_wide()), or NULL if it
 * has none or is unsafe. */
static const char *
policy_eval_wide(struct policy_eval *ev)
{
	const char	*err, *in;
	bool		 hidden;

	if (ev->wide_state != 0)
		return ev->wide_state == 1 ? ev->wide : NULL;
	ev->wide_state = -1;
	if ((in = policy_eval_path(ev)) == NULL)
		return NULL;
	if (ev->pathlen + 1 <= sizeof(ev->wide_stack))
		ev->wide = ev->wide_stack;
	else if ((ev->wide = ev->wide_heap = malloc(ev->pathlen + 1)) ==
	    NULL)
		return NULL;
	if (path_wide(in, ev->pathlen, ev->wide, &ev->widelen, &hidden,
	    &err) == -1 || hidden)
		return NULL;
	ev->wide_state = 1;
	return ev->wide;
}

/*
 * What "strict_methods" sees in the request: POLICY_CHK_OVERRIDE (a
 * method-override field, or a "_method" query parameter), POLICY_CHK_BODY
 * (GET or HEAD with a body) or POLICY_CHK_APPLIES (neither).
 */
static enum policy_check
policy_eval_strict(struct policy_eval *ev)
{
	const struct policy_target	*t = ev->t;
	const char			*q;
	enum policy_check		 c = POLICY_CHK_APPLIES;

	if (ev->strict_state != 0)
		return (enum policy_check)(ev->strict_state - 1);
	if ((t->req & POLICY_REQ_OVERRIDE) != 0 || (t->path != NULL &&
	    (q = strchr(t->path, '?')) != NULL &&
	    path_query_has(q + 1, strlen(q + 1), "_method")))
		c = POLICY_CHK_OVERRIDE;
	else if ((t->req & POLICY_REQ_BODY) != 0 &&
	    (strcasecmp(t->method, "GET") == 0 ||
	    strcasecmp(t->method, "HEAD") == 0))
		c = POLICY_CHK_BODY;
	ev->strict_state = (int)c + 1;
	return c;
}

/*
 * The rule's paths against the target's: an allow rule's against the
 * strict form; a deny rule's against the strict form and, in their wide
 * form, against the wide one (either is enough: the wide form only ever
 * adds to what a deny rule catches).  A path that cannot be normalised
 * safely matches no allow rule and every deny rule that has paths: fail
 * closed both ways.
 */
static enum policy_check
policy_check_paths(const struct policy_rule *r, struct policy_eval *ev)
{
	const struct policy_rule_more	*m = policy_more(r);
	const char			*path, *wide;
	size_t				 i;

	if (m->npaths == 0)
		return POLICY_CHK_APPLIES;
	path = policy_eval_path(ev);
	wide = policy_eval_wide(ev);
	if (path == NULL || wide == NULL)
		return r->action == POLICY_DENY ? POLICY_CHK_APPLIES :
		    POLICY_CHK_PATH;
	for (i = 0; i < m->npaths; i++) {
		if (path_match(m->paths[i], path, ev->pathlen))
			return POLICY_CHK_APPLIES;
		if (r->action == POLICY_DENY &&
		    path_match(m->wpaths[i], wide, ev->widelen))
			return POLICY_CHK_APPLIES;
	}
	return POLICY_CHK_PATH;
}

static enum policy_check
policy_check(const struct policy_rule *r, struct policy_eval *ev)
{
	const struct policy_target	*t = ev->t;
	enum policy_check		 c, strict;

	if (!policy_port_ok(r, t->port))
		return POLICY_CHK_PORT;
	if (r->more == NULL || (r->more->nmethods == 0 &&
	    r->more->npaths == 0))
		return POLICY_CHK_APPLIES;
	/*
	 * A tunnel: the request is not known yet.  An allow rule applies
	 * (its POLICY_F_INSPECT flag tells the proxy to look inside); a deny
	 * rule neither applies nor is ruled out, so whatever allows the
	 * tunnel must inspect it.
	 */
	if (t->method == NULL)
		return r->action == POLICY_DENY ? POLICY_CHK_LATER :
		    POLICY_CHK_APPLIES;
	strict = r->strict_methods ? policy_eval_strict(ev) :
	    POLICY_CHK_APPLIES;
	/* A deny rule's methods cannot be trusted to tell when the request
	 * may name another method: it applies where its paths do. */
	if (r->action == POLICY_DENY && strict != POLICY_CHK_APPLIES) {
		c = policy_check_paths(r, ev);
		return c == POLICY_CHK_APPLIES ? strict : c;
	}
	if (r->more->nmethods > 0 && !policy_method_ok(r, t->method))
		return POLICY_CHK_METHOD;
	if ((c = policy_check_paths(r, ev)) != POLICY_CHK_APPLIES)
		return c;
	return strict;
}

static void
policy_eval_rule(struct policy_eval *ev, const struct policy_rule *r)
{
	enum policy_check	c;

	/* A name is allowed only by a rule whose hosts name it: address
	 * rules can refuse its addresses, never open the name. */
	if (ev->deny_only && r->action != POLICY_DENY)
		return;
	c = policy_check(r, ev);

	if (r->action == POLICY_DENY) {
		if ((c == POLICY_CHK_APPLIES || c == POLICY_CHK_OVERRIDE ||
		    c == POLICY_CHK_BODY) && r->index < ev->deny) {
			ev->deny = r->index;
			ev->deny_reason = c == POLICY_CHK_OVERRIDE ?
			    POLICY_R_METHOD_OVERRIDE : c == POLICY_CHK_BODY ?
			    POLICY_R_BODY_ON_GET : POLICY_R_DENIED_BY_RULE;
		} else if (c == POLICY_CHK_LATER)
			ev->later = true;
		return;
	}
	if (c == POLICY_CHK_APPLIES) {
		if (r->index < ev->allow)
			ev->allow = r->index;
		if (ev->via_exact && r->index < ev->named)
			ev->named = r->index;
		return;
	}
	if (r->index < ev->partial) {
		ev->partial = r->index;
		ev->partial_reason = c == POLICY_CHK_PORT ? POLICY_R_PORT :
		    c == POLICY_CHK_METHOD ? POLICY_R_METHOD :
		    c == POLICY_CHK_OVERRIDE ? POLICY_R_METHOD_OVERRIDE :
		    c == POLICY_CHK_BODY ? POLICY_R_BODY_ON_GET : POLICY_R_PATH;
	}
}

static void
policy_eval_list(const struct policy *p, struct policy_eval *ev,
    uint32_t head)
{
	uint32_t	i;

	for (i = head; i != POLICY_NONE; i = p->refs[i].next)
		policy_eval_rule(ev, &p->rules[p->refs[i].rule]);
}

enum policy_verdict
policy_decide(const struct policy *p, const struct policy_target *t,
    struct policy_decision *out)
{
	/* Every field of ev is set below before it is read, and its two
	 * path buffers (8 KiB) are written before they are read: clearing
	 * them on every call was 15 % of moatd's instructions per CONNECT
	 * tunnel (callgrind). */
	struct policy_eval	 ev POLICY_NOINIT;
	const struct trie	*tr;
	const struct policy_rule *r;
	const char		*name, *s, *dot;
	uint32_t		 vals[TRIE_MATCH_MAX] POLICY_NOINIT;
	size_t			 len, k, i;
	enum policy_reason	 deny;
	uint32_t		 head;
	bool			 exact = false;

	memset(out, 0, sizeof(*out));
	out->verdict = POLICY_DENY;
	out->reason = POLICY_R_NO_RULE;
	if (p == NULL || t == NULL) {
		out->reason = POLICY_R_INTERNAL;
		return out->verdict;
	}
	name = t->name != NULL && t->name[0] != '\0' ? t->name : NULL;

	/* 1. Built-in deny sets, before any rule. */
	if (name != NULL && (deny = deny_name(name)) != POLICY_R_ALLOWED) {
		out->reason = deny;
		return out->verdict;
	}
	if (t->addr != NULL && (deny = deny_addr(p, t->addr)) !=
	    POLICY_R_ALLOWED) {
		out->reason = deny;
		return out->verdict;
	}

	/* 2. Candidates: rules whose hosts or cidrs match. */
	ev.t = t;
	ev.deny = ev.allow = ev.partial = POLICY_NONE;
	ev.partial_reason = POLICY_R_NO_RULE;
	ev.later = false;
	ev.deny_only = false;
	ev.via_exact = false;
	ev.named = POLICY_NONE;
	ev.path_state = 0;
	ev.path = ev.heap = NULL;
	ev.pathlen = 0;
	ev.wide_state = 0;
	ev.wide = ev.wide_heap = NULL;
	ev.widelen = 0;
	ev.strict_state = 0;
	ev.deny_reason = POLICY_R_DENIED_BY_RULE;
	if (name != NULL) {
		len = strlen(name);
		ev.via_exact = true;
		head = domain_lookup(&p->exact, name, len);
		exact = head != POLICY_NONE;
		policy_eval_list(p, &ev, head);
		ev.via_exact = false;
		/* "*.example.com" needs one more label: skip the full name. */
		for (s = name; (dot = strchr(s, '.')) != NULL; s = dot + 1)
			policy_eval_list(p, &ev, domain_lookup(&p->wild,
			    dot + 1, len - (size_t)(dot + 1 - name)));
		policy_eval_list(p, &ev, p->star);
	}
	if (t->addr != NULL) {
		ev.deny_only = name != NULL;
		tr = t->addr->family == AF_INET ? &p->cidr4 : &p->cidr6;
		k = trie_match(tr, addr_bytes(t->addr),
		    addr_bits(t->addr->family), vals, NULL);
		for (i = 0; i < k; i++)
			policy_eval_list(p, &ev, vals[i]);
		/* Where the address is: only deny rules name countries and
		 * AS numbers. */
		if (policy_geo_enabled(p)) {
			policy_geo_lookup(p, t->addr, &out->geo);
			if (out->geo.country[0] != '\0')
				policy_eval_list(p, &ev, domain_lookup(
				    &p->geo_cc, out->geo.country, 2));
			if (out->geo.asn != 0) {
				char	key[16];
				int	n;

				n = snprintf(key, sizeof(key), "%u",
				    out->geo.asn);
				policy_eval_list(p, &ev, domain_lookup(
				    &p->geo_asn, key, (size_t)n));
			}
		}
	}
	free(ev.heap);
	free(ev.wide_heap);

	/* 3. The verdict. */
	if (ev.deny != POLICY_NONE) {
		r = &p->rules[ev.deny];
		out->reason = ev.deny_reason;
	} else if (ev.allow != POLICY_NONE) {
		r = &p->rules[ev.allow];
		out->verdict = POLICY_ALLOW;
		out->reason = POLICY_R_ALLOWED;
		out->flags = r->flags | (ev.later ? POLICY_F_INSPECT : 0);
		/* Only a wildcard or "*" lets the client choose the name
		 * (and so what its resolution carries out). */
		if (name != NULL && ev.named == POLICY_NONE)
			out->flags |= POLICY_F_WILDCARD;
	} else if (ev.partial != POLICY_NONE) {
		r = &p->rules[ev.partial];
		out->reason = ev.partial_reason;
	} else
		r = NULL;
	/* A refused name some rule spells out: not one the client chose. */
	if (out->verdict == POLICY_DENY && exact)
		out->flags |= POLICY_F_NAMED;
	if (r == NULL)
		return out->verdict;
	out->rule = r;
	out->rule_name = r->name;
	return out->verdict;
}

/* ------------------------------------------------------------------ */
/* Secret binding                                                       */
/* ------------------------------------------------------------------ */

/* True if an allow rule of the list has the port and injects secret. */
static bool
policy_bound_list(const struct policy *p, uint32_t head, size_t secret,
    uint16_t port)
{
	const struct policy_rule	*r;
	uint32_t			 i;

	for (i = head; i != POLICY_NONE; i = p->refs[i].next) {
		r = &p->rules[p->refs[i].rule];
		if (r->action == POLICY_ALLOW && policy_more(r)->nsecrets > 0 &&
		    policy_port_ok(r, port) && inject_rule_has(r, secret))
			return true;
	}
	return false;
}

/*
 * The candidates are gathered exactly as policy_decide() gathers them, so
 * a secret is bound to what the rules that inject it allow and to nothing
 * else: a wildcard binds the names under it, not the bare domain; "*"
 * binds every name but no IP literal; a cidr binds addresses only.
 */
bool
policy_secret_bound(const struct policy *p, size_t secret, const char *name,
    const struct policy_addr *addr, uint16_t port)
{
	const struct trie	*tr;
	const char		*s, *dot;
	uint32_t		 vals[TRIE_MATCH_MAX];
	size_t			 len, k, i;

	if (p == NULL)
		return false;
	if (name != NULL && name[0] == '\0')
		name = NULL;
	if (name == NULL && addr == NULL)
		return false;
	if (name != NULL && deny_name(name) != POLICY_R_ALLOWED)
		return false;
	if (addr != NULL && deny_addr(p, addr) != POLICY_R_ALLOWED)
		return false;
	if (name != NULL) {
		len = strlen(name);
		if (policy_bound_list(p, domain_lookup(&p->exact, name, len),
		    secret, port))
			return true;
		for (s = name; (dot = strchr(s, '.')) != NULL; s = dot + 1)
			if (policy_bound_list(p, domain_lookup(&p->wild,
			    dot + 1, len - (size_t)(dot + 1 - name)), secret,
			    port))
				return true;
		return policy_bound_list(p, p->star, secret, port);
	}
	tr = addr->family == AF_INET ? &p->cidr4 : &p->cidr6;
	k = trie_match(tr, addr_bytes(addr), addr_bits(addr->family), vals,
	    NULL);
	for (i = 0; i < k; i++)
		if (policy_bound_list(p, vals[i], secret, port))
			return true;
	return false;
}

/* ------------------------------------------------------------------ */

unsigned
policy_rule_protocols(const struct policy_rule *r)
{
	return r != NULL ? r->protocols : 0;
}

static const struct {
	const char	*name;
	int		 bit;
} policy_protos[] = {
	{ "tls", POLICY_PROTO_TLS },
	{ "http", POLICY_PROTO_HTTP },
	{ "ssh", POLICY_PROTO_SSH },
};

int
policy_proto_bit(const char *name)
{
	size_t	i;

	for (i = 0; i < sizeof(policy_protos) / sizeof(policy_protos[0]); i++)
		if (strcmp(name, policy_protos[i].name) == 0)
			return policy_protos[i].bit;
	return 0;
}

/*
 * The ports whose own protocol is neither HTTP nor TLS and carries git:
 * ssh (git push and fetch over ssh) and the git daemon's git://.  moatd
 * cannot read either, so no rule can check requests there.
 */
static const struct {
	uint16_t	 port;
	const char	*proto;
} policy_unreadable[] = {
	{ 22, "ssh" },
	{ 9418, "git://" },
};

const char *
policy_port_unreadable(uint16_t port)
{
	size_t	i;

	for (i = 0; i < sizeof(policy_unreadable) /
	    sizeof(policy_unreadable[0]); i++)
		if (policy_unreadable[i].port == port)
			return policy_unreadable[i].proto;
	return NULL;
}

char *
policy_protocols_format(unsigned bits, char *buf, size_t len)
{
	size_t	i, off = 0;
	int	n;

	if (len == 0)
		return buf;
	buf[0] = '\0';
	if (bits == 0) {
		snprintf(buf, len, "any");
		return buf;
	}
	for (i = 0; i < sizeof(policy_protos) / sizeof(policy_protos[0]); i++) {
		if ((bits & (unsigned)policy_protos[i].bit) == 0)
			continue;
		n = snprintf(buf + off, len - off, "%s%s", off ? ", " : "",
		    policy_protos[i].name);
		if (n < 0 || (size_t)n >= len - off)
			break;
		off += (size_t)n;
	}
	return buf;
}

const char *
policy_rule_name(const struct policy_rule *r)
{
	return r->name;
}

int
policy_rule_line(const struct policy_rule *r)
{
	return r->line;
}

int
policy_rule_column(const struct policy_rule *r)
{
	return r->column;
}

size_t
policy_rule_index(const struct policy_rule *r)
{
	return r->index;
}

size_t
policy_rule_count(const struct policy *p)
{
	return p != NULL ? p->nrules : 0;
}

int
policy_rule_rate(const struct policy_rule *r, unsigned *requests,
    unsigned *per_seconds)
{
	const struct policy_rule_more	*m = policy_more(r);

	if (m->rate_requests == 0)
		return 0;
	*requests = m->rate_requests;
	*per_seconds = m->rate_per_seconds;
	return 1;
}

bool
policy_rule_quota(const struct policy_rule *r, uint64_t *bytes_up,
    unsigned *per_seconds)
{
	const struct policy_rule_more	*m;

	if (r == NULL || (m = policy_more(r))->quota_bytes == 0)
		return false;
	*bytes_up = m->quota_bytes;
	*per_seconds = m->quota_per_seconds;
	return true;
}

bool
policy_quota(const struct policy *p, uint64_t *bytes_up,
    unsigned *per_seconds)
{
	if (p == NULL || p->quota_bytes == 0)
		return false;
	*bytes_up = p->quota_bytes;
	*per_seconds = p->quota_per_seconds;
	return true;
}
