/*
 * sandbox.c - sandbox identities, their policies, the table of names
 * moatd's DNS answers gave them, and their budgets of new names under
 * wildcards.
 *
 * The attribution table is written by the DNS listener and read by the
 * transparent listener, in any worker, so it has a mutex; both sides do
 * one hash lookup under it.
 */
#include "config.h"

#include <sys/queue.h>
#include <sys/random.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/audit.h"
#include "proxy/dnsbudget.h"
#include "proxy/quota.h"
#include "proxy/sandbox.h"
#include "proxy/secrets.h"
#include "proxy/util.h"

#define SANDBOX_ATTR_BUCKETS	1024	/* power of two */

/* One rule's token bucket; few rules have a rate, so a list is enough. */
struct sandbox_rate {
	size_t			 rule;
	double			 tokens;
	uint64_t		 last_ms;
	struct sandbox_rate	*next;
};

struct sandbox_attr {
	struct policy_addr		 addr;
	uint64_t			 expires_ms;
	struct sandbox_attr		*hnext;
	TAILQ_ENTRY(sandbox_attr)	 lru;
	char				 name[];
};

/*
 * The buckets are allocated by the first answer remembered: a sandbox
 * that never asks moatd's DNS listener (most registered ones use the
 * proxies) costs no table.
 */
struct sandbox_attrs {
	pthread_mutex_t			 mu;
	struct sandbox_attr		**buckets;	/* [SANDBOX_ATTR_BUCKETS]
							   or NULL */
	TAILQ_HEAD(attrq, sandbox_attr)	 lru;	/* most recent first */
	size_t				 n;
};

static void
rate_free(struct sandbox_rate *r)
{
	struct sandbox_rate	*n;

	for (; r != NULL; r = n) {
		n = r->next;
		free(r);
	}
}

static uint32_t
attr_hash(const struct policy_addr *a)
{
	const unsigned char	*p = (const unsigned char *)&a->u;
	size_t			 len = a->family == AF_INET ? 4 : 16, i;
	uint32_t		 h = 2166136261u;

	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= 16777619u;
	}
	return h & (SANDBOX_ATTR_BUCKETS - 1);
}

static int
attr_eq(const struct policy_addr *a, const struct policy_addr *b)
{
	if (a->family != b->family)
		return 0;
	return a->family == AF_INET ?
	    a->u.v4.s_addr == b->u.v4.s_addr :
	    memcmp(&a->u.v6, &b->u.v6, 16) == 0;
}

struct sandbox *
sandbox_new(const char *name, struct moat_config *cfg)
{
	struct sandbox	*sb;
	size_t		 k;

	if ((sb = calloc(1, sizeof(*sb))) == NULL)
		return NULL;
	if ((sb->attrs = calloc(1, sizeof(*sb->attrs))) == NULL) {
		free(sb);
		return NULL;
	}
	pthread_mutex_init(&sb->attrs->mu, NULL);
	TAILQ_INIT(&sb->attrs->lru);
	strncpy(sb->name, name, sizeof(sb->name) - 1);
	atomic_init(&sb->refcnt, 1);
	atomic_init(&sb->dead, 0);
	sb->cfg = cfg;
	sb->dns_tokens = SANDBOX_DNS_BURST;
	sb->dns_last_ms = util_now_ms();
	sb->refusal_tokens = SANDBOX_REFUSAL_BURST;
	sb->refusal_last_ms = sb->dns_last_ms;
	atomic_init(&sb->conns, 0);
	atomic_init(&sb->conns_refused, 0);
	atomic_init(&sb->conns_audit_ms, 0);
	atomic_init(&sb->heads_held, 0);
	metrics_sandbox_hold(&sb->msb, sb->name);
	for (k = 0; k < DROPS_KIND__COUNT; k++)
		atomic_init(&sb->drops[k], 0);
	atomic_init(&sb->drops_lost, 0);
	sb->born_ms = util_now_ms();
	atomic_init(&sb->n_allowed, 0);
	atomic_init(&sb->n_denied, 0);
	atomic_init(&sb->n_bytes_up, 0);
	atomic_init(&sb->n_bytes_down, 0);
	atomic_init(&sb->n_limit_refused, 0);
	atomic_init(&sb->n_would_deny, 0);
	atomic_init(&sb->quota, NULL);
	return sb;
}

struct sandbox *
sandbox_ref(struct sandbox *sb)
{
	atomic_fetch_add(&sb->refcnt, 1);
	return sb;
}

void
sandbox_unref(struct sandbox *sb)
{
	struct sandbox_attr	*a;

	if (sb == NULL || atomic_fetch_sub(&sb->refcnt, 1) != 1)
		return;
	while ((a = TAILQ_FIRST(&sb->attrs->lru)) != NULL) {
		TAILQ_REMOVE(&sb->attrs->lru, a, lru);
		free(a);
	}
	rate_free(sb->rates);
	dnsbudget_free(sb->names);
	quota_set_free(atomic_load(&sb->quota));
	secrets_set_unref(sb->sset);
	secrets_unref(sb->own_secrets);
	pthread_mutex_destroy(&sb->attrs->mu);
	free(sb->attrs->buckets);
	free(sb->attrs);
	policy_config_unref(sb->cfg);
	metrics_sandbox_release(&sb->msb);
	free(sb);
}

const struct policy *
sandbox_policy(const struct sandbox *sb, const struct moat_config *daemon)
{
	return sb != NULL && sb->cfg != NULL ? sb->cfg->policy :
	    daemon->policy;
}

/* Unlinks a from its bucket and the LRU list (under the mutex). */
static void
attr_unlink(struct sandbox_attrs *t, struct sandbox_attr *a)
{
	struct sandbox_attr	**pp;

	for (pp = &t->buckets[attr_hash(&a->addr)]; *pp != NULL;
	    pp = &(*pp)->hnext) {
		if (*pp == a) {
			*pp = a->hnext;
			break;
		}
	}
	TAILQ_REMOVE(&t->lru, a, lru);
	t->n--;
}

void
sandbox_attr_add(struct sandbox *sb, const struct policy_addr *addr,
    const char *name, uint32_t ttl_s)
{
	struct sandbox_attrs	*t = sb->attrs;
	struct sandbox_attr	*a, *old;
	size_t			 nlen = strlen(name) + 1;
	uint32_t		 h = attr_hash(addr);

	if (ttl_s < SANDBOX_ATTR_TTL_MIN_S)
		ttl_s = SANDBOX_ATTR_TTL_MIN_S;
	if ((a = malloc(sizeof(*a) + nlen)) == NULL)
		return;		/* the connection will be judged without it */
	a->addr = *addr;
	a->expires_ms = util_now_ms() + (uint64_t)ttl_s * 1000;
	memcpy(a->name, name, nlen);
	pthread_mutex_lock(&t->mu);
	if (t->buckets == NULL && (t->buckets = calloc(SANDBOX_ATTR_BUCKETS,
	    sizeof(*t->buckets))) == NULL) {
		pthread_mutex_unlock(&t->mu);
		free(a);
		return;
	}
	for (old = t->buckets[h]; old != NULL; old = old->hnext)
		if (attr_eq(&old->addr, addr))
			break;
	if (old != NULL) {
		attr_unlink(t, old);
		free(old);
	}
	while (t->n >= SANDBOX_ATTR_MAX &&
	    (old = TAILQ_LAST(&t->lru, attrq)) != NULL) {
		attr_unlink(t, old);
		free(old);
	}
	a->hnext = t->buckets[h];
	t->buckets[h] = a;
	TAILQ_INSERT_HEAD(&t->lru, a, lru);
	t->n++;
	pthread_mutex_unlock(&t->mu);
}

int
sandbox_attr_find(struct sandbox *sb, const struct policy_addr *addr,
    char *name, size_t len)
{
	struct sandbox_attrs	*t = sb->attrs;
	struct sandbox_attr	*a;
	uint64_t		 now = util_now_ms();
	int			 rc = -1;

	pthread_mutex_lock(&t->mu);
	for (a = t->buckets != NULL ? t->buckets[attr_hash(addr)] : NULL;
	    a != NULL; a = a->hnext) {
		if (!attr_eq(&a->addr, addr))
			continue;
		if (a->expires_ms > now && strlen(a->name) < len) {
			memcpy(name, a->name, strlen(a->name) + 1);
			rc = 0;
		}
		break;
	}
	pthread_mutex_unlock(&t->mu);
	return rc;
}

int
sandbox_dns_take(struct sandbox *sb, uint64_t *refused)
{
	struct sandbox_attrs	*t = sb->attrs;
	uint64_t		 now = util_now_ms();
	int			 ok;

	*refused = 0;
	pthread_mutex_lock(&t->mu);
	sb->dns_tokens += (double)(now - sb->dns_last_ms) * SANDBOX_DNS_RATE /
	    1000.0;
	if (sb->dns_tokens > SANDBOX_DNS_BURST)
		sb->dns_tokens = SANDBOX_DNS_BURST;
	sb->dns_last_ms = now;
	ok = sb->dns_tokens >= 1.0;
	if (ok) {
		sb->dns_tokens -= 1.0;
		*refused = sb->dns_refused;
		sb->dns_refused = 0;
	} else
		sb->dns_refused++;
	pthread_mutex_unlock(&t->mu);
	return ok;
}

int
sandbox_refusal_take(struct sandbox *sb)
{
	struct sandbox_attrs	*t = sb->attrs;
	uint64_t		 now = util_now_ms();
	int			 ok;

	pthread_mutex_lock(&t->mu);
	sb->refusal_tokens += (double)(now - sb->refusal_last_ms) *
	    SANDBOX_REFUSAL_RATE / 1000.0;
	if (sb->refusal_tokens > SANDBOX_REFUSAL_BURST)
		sb->refusal_tokens = SANDBOX_REFUSAL_BURST;
	sb->refusal_last_ms = now;
	ok = sb->refusal_tokens >= 1.0;
	if (ok)
		sb->refusal_tokens -= 1.0;
	pthread_mutex_unlock(&t->mu);
	return ok;
}

int
sandbox_rate_take(struct sandbox *sb, const struct policy *p,
    const struct policy_rule *rule)
{
	struct sandbox_attrs	*t = sb->attrs;
	struct sandbox_rate	*r;
	unsigned		 requests, per;
	uint64_t		 now = util_now_ms();
	size_t			 idx;
	int			 ok;

	if (rule == NULL || !policy_rule_rate(rule, &requests, &per) ||
	    requests == 0 || per == 0)
		return 1;
	idx = policy_rule_index(rule);
	pthread_mutex_lock(&t->mu);
	if (sb->rate_policy != p) {
		rate_free(sb->rates);
		sb->rates = NULL;
		sb->rate_policy = p;
	}
	for (r = sb->rates; r != NULL; r = r->next)
		if (r->rule == idx)
			break;
	if (r == NULL) {
		if ((r = calloc(1, sizeof(*r))) == NULL) {
			pthread_mutex_unlock(&t->mu);
			return 0;	/* fail closed */
		}
		r->rule = idx;
		r->tokens = requests;
		r->last_ms = now;
		r->next = sb->rates;
		sb->rates = r;
	}
	r->tokens += (double)(now - r->last_ms) * requests / (per * 1000.0);
	if (r->tokens > requests)
		r->tokens = requests;
	r->last_ms = now;
	ok = r->tokens >= 1.0;
	if (ok)
		r->tokens -= 1.0;
	pthread_mutex_unlock(&t->mu);
	return ok;
}

/* The budget, created with a fresh key on first use (under the mutex). */
static struct dnsbudget *
sandbox_names(struct sandbox *sb)
{
	uint8_t	key[DNSBUDGET_KEY_BYTES];

	if (sb->names != NULL)
		return sb->names;
	if (getrandom(key, sizeof(key), 0) != (ssize_t)sizeof(key))
		return NULL;
	sb->names = dnsbudget_new(key, SANDBOX_NAMES_MAX);
	explicit_bzero(key, sizeof(key));
	return sb->names;
}

int
sandbox_names_take(struct sandbox *sb, const struct policy *p,
    const struct policy_decision *d, const char *name, size_t limit,
    char *why, size_t len)
{
	struct sandbox_attrs	*t = sb->attrs;
	struct dnsbudget	*b;
	enum dnsbudget_result	 res = DNSBUDGET_NOMEM;
	const char		*rule;
	unsigned		 used = 0;
	bool			 would;

	if (len > 0)
		why[0] = '\0';
	if ((d->flags & POLICY_F_WILDCARD) == 0)
		return 1;
	/* Audit mode: the names the policy would refuse share a budget. */
	would = d->would_deny != POLICY_R_ALLOWED;
	rule = would ? "(the names the policy would refuse: audit mode)" :
	    d->rule_name != NULL ? d->rule_name : "(none)";
	pthread_mutex_lock(&t->mu);
	if ((b = sandbox_names(sb)) != NULL)
		res = dnsbudget_take(b, p, d->rule != NULL && !would ?
		    policy_rule_index(d->rule) : SANDBOX_NAMES_NO_RULE, name,
		    limit > UINT32_MAX ? UINT32_MAX : (unsigned)limit,
		    util_now_ms(), &used);
	pthread_mutex_unlock(&t->mu);
	switch (res) {
	case DNSBUDGET_SEEN:
	case DNSBUDGET_NEW:
		return 1;
	case DNSBUDGET_OVER:
		snprintf(why, len, "%u new names under rule %s this minute: "
		    "the budget (limits.dns_wildcard_names) is %zu; names "
		    "already resolved still are", used, rule, limit);
		break;
	case DNSBUDGET_FULL:
		snprintf(why, len, "the sandbox's set of recent names is "
		    "full (%d): new names wait for the next minute",
		    SANDBOX_NAMES_MAX);
		break;
	default:
		snprintf(why, len, "out of memory for the names budget");
		break;
	}
	return 0;
}

int
sandbox_conn_take(struct sandbox *sb, size_t limit)
{
	/*
	 * Add first, then look: of workers racing for the last place, one
	 * gets it and the others give theirs back, so the count of admitted
	 * connections never passes limit.
	 */
	if (sb == NULL)
		return 1;
	if (atomic_fetch_add(&sb->conns, 1) < limit)
		return 1;
	atomic_fetch_sub(&sb->conns, 1);
	return 0;
}

void
sandbox_conn_hold(struct sandbox *sb)
{
	if (sb != NULL)
		atomic_fetch_add(&sb->conns, 1);
}

void
sandbox_conn_put(struct sandbox *sb)
{
	if (sb != NULL)
		atomic_fetch_sub(&sb->conns, 1);
}

/* Claims the next audit line of refusals, if one is due at now_ms. */
static int
sandbox_refusals_claim(struct sandbox *sb, uint64_t now_ms)
{
	uint_fast64_t	last = atomic_load(&sb->conns_audit_ms);

	if (last != 0 && now_ms - last < SANDBOX_REFUSED_AUDIT_MS)
		return 0;
	/* Of workers that saw it due, the one that moves the time writes. */
	return atomic_compare_exchange_strong(&sb->conns_audit_ms, &last,
	    now_ms != 0 ? now_ms : 1);
}

uint64_t
sandbox_conn_refused(struct sandbox *sb, uint64_t now_ms)
{
	atomic_fetch_add(&sb->conns_refused, 1);
	atomic_fetch_add_explicit(&sb->n_limit_refused, 1,
	    memory_order_relaxed);
	if (!sandbox_refusals_claim(sb, now_ms))
		return 0;
	return atomic_exchange(&sb->conns_refused, 0);
}

uint64_t
sandbox_conn_refusals_due(struct sandbox *sb, uint64_t now_ms)
{
	if (atomic_load(&sb->conns_refused) == 0 ||
	    !sandbox_refusals_claim(sb, now_ms))
		return 0;
	return atomic_exchange(&sb->conns_refused, 0);
}

static void
sandbox_add(atomic_uint_fast64_t *c, int64_t n)
{
	if (n > 0)
		atomic_fetch_add_explicit(c, (uint_fast64_t)n,
		    memory_order_relaxed);
}

void
sandbox_count(struct sandbox *sb, const struct audit_rec *r)
{
	const char	*ev = r->event;

	if (sb == NULL || ev == NULL)
		return;
	if (strcmp(ev, "request") == 0 || strcmp(ev, "open") == 0 ||
	    strcmp(ev, "dns") == 0) {
		sandbox_add(r->verdict == POLICY_ALLOW ? &sb->n_allowed :
		    &sb->n_denied, 1);
		if (r->verdict == POLICY_ALLOW &&
		    r->would_deny != POLICY_R_ALLOWED)
			sandbox_add(&sb->n_would_deny, 1);
	}
	else if (strcmp(ev, "connection") == 0)
		sandbox_add(&sb->n_denied, r->refused);
	if (strcmp(ev, "request") == 0 || strcmp(ev, "close") == 0) {
		sandbox_add(&sb->n_bytes_up, r->bytes_up);
		sandbox_add(&sb->n_bytes_down, r->bytes_down);
	}
}

void
sandbox_counters(const struct sandbox *sb, struct sandbox_counters *out)
{
	size_t	k;

	out->age_ms = util_now_ms() - sb->born_ms;
	out->conns_open = atomic_load_explicit(&sb->conns,
	    memory_order_relaxed);
	out->allowed = atomic_load_explicit(&sb->n_allowed,
	    memory_order_relaxed);
	out->denied = atomic_load_explicit(&sb->n_denied,
	    memory_order_relaxed);
	out->bytes_up = atomic_load_explicit(&sb->n_bytes_up,
	    memory_order_relaxed);
	out->bytes_down = atomic_load_explicit(&sb->n_bytes_down,
	    memory_order_relaxed);
	out->limit_refused = atomic_load_explicit(&sb->n_limit_refused,
	    memory_order_relaxed);
	out->would_deny = atomic_load_explicit(&sb->n_would_deny,
	    memory_order_relaxed);
	out->dropped = 0;
	for (k = 0; k < DROPS_KIND__COUNT; k++)
		out->dropped += atomic_load_explicit(&sb->drops[k],
		    memory_order_relaxed);
}
