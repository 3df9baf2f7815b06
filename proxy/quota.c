/*
 * quota.c - quotas of bytes sent upstream and of requests that carry a
 * secret: each a count in a fixed window, kept in its sandbox by kind
 * and name.
 *
 * A count is struct quota_ctr: when the window began and what was
 * counted since, two atomics.  Whoever finds the window over starts the
 * next (a compare-and-swap of its start, then the count set to 0), so no
 * lock is taken to count.  A sandbox's counts are entries of a small hash
 * table under a mutex, created by their first use and kept while a hold
 * (a connection admitted under them) refers to them; the mutex is taken
 * to admit a request or tunnel, never to count its bytes.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/audit.h"
#include "proxy/log.h"
#include "proxy/metrics.h"
#include "proxy/quota.h"
#include "proxy/sandbox.h"
#include "proxy/util.h"

#define QUOTA_BUCKETS	32	/* power of two */

struct quota_ent {
	struct quota_ctr	 ctr;
	struct quota_ent	*next;
	uint64_t		 per_ms;	/* the window it was last used
						   with (to see it ended) */
	unsigned		 refs;		/* holds, under the mutex */
	uint8_t			 kind;		/* enum quota_kind */
	char			 name[];
};

struct quota_set {
	pthread_mutex_t		 mu;
	struct quota_ent	*b[QUOTA_BUCKETS];
	size_t			 n;
};

static const char *const quota_kind_names[QUOTA__KINDS] = {
	[QUOTA_RULE] = "rule",
	[QUOTA_SANDBOX] = "sandbox",
	[QUOTA_SECRET] = "secret",
};

static struct quota_set	*quota_set_get(struct sandbox *sb);
static struct quota_ent	*quota_find(struct quota_set *s, enum quota_kind k,
			    const char *name, uint64_t per_ms, uint64_t now);
static void	quota_tell(struct sandbox *sb, struct quota_ent *e,
		    uint64_t limit, uint64_t per_ms, uint64_t used,
		    uint64_t start);
static void	quota_text(enum quota_kind k, const char *name,
		    uint64_t limit, uint64_t per_ms, char *buf, size_t len);

const char *
quota_kind_name(enum quota_kind k)
{
	return (unsigned)k < QUOTA__KINDS ? quota_kind_names[k] : "?";
}

/* ------------------------------------------------------------------ */
/* One count in its window                                              */
/* ------------------------------------------------------------------ */

void
quota_ctr_init(struct quota_ctr *q)
{
	atomic_init(&q->start_ms, 0);
	atomic_init(&q->used, 0);
	atomic_init(&q->told_ms, 0);
}

/* The start of the window of now_ms, a new one if the last has ended. */
static uint64_t
quota_ctr_roll(struct quota_ctr *q, uint64_t per_ms, uint64_t now_ms)
{
	uint_fast64_t	s = atomic_load_explicit(&q->start_ms,
			    memory_order_acquire);

	/* A worker whose clock read came before another's start is in
	 * that window too. */
	if (s != 0 && (now_ms < s || now_ms - s < per_ms))
		return s;
	/* Of workers that found it over, one starts the next window; the
	 * others count in it (CAS failure loads the winner's start). */
	if (atomic_compare_exchange_strong(&q->start_ms, &s, now_ms)) {
		atomic_store(&q->used, 0);
		return now_ms;
	}
	return s;
}

uint64_t
quota_ctr_used(struct quota_ctr *q, uint64_t per_ms, uint64_t now_ms,
    uint64_t *start)
{
	uint64_t	s = quota_ctr_roll(q, per_ms, now_ms);

	if (start != NULL)
		*start = s;
	return atomic_load_explicit(&q->used, memory_order_relaxed);
}

uint64_t
quota_ctr_peek(struct quota_ctr *q, uint64_t per_ms, uint64_t now_ms,
    uint64_t *start)
{
	uint64_t	s = atomic_load_explicit(&q->start_ms,
			    memory_order_acquire);

	if (start != NULL)
		*start = s;
	if (s == 0 || (now_ms >= s && now_ms - s >= per_ms))
		return 0;	/* no window runs: nothing counted */
	return atomic_load_explicit(&q->used, memory_order_relaxed);
}

uint64_t
quota_ctr_add(struct quota_ctr *q, uint64_t n, uint64_t per_ms,
    uint64_t now_ms, uint64_t *start)
{
	uint64_t	s = quota_ctr_roll(q, per_ms, now_ms);

	if (start != NULL)
		*start = s;
	return atomic_fetch_add_explicit(&q->used, n, memory_order_relaxed) +
	    n;
}

bool
quota_ctr_take(struct quota_ctr *q, uint64_t limit, uint64_t per_ms,
    uint64_t now_ms, uint64_t *start)
{
	uint64_t	s = quota_ctr_roll(q, per_ms, now_ms);

	if (start != NULL)
		*start = s;
	/* Add first, then look: of requests racing for the last one, one
	 * gets it and the others give theirs back. */
	if (atomic_fetch_add(&q->used, 1) < limit)
		return true;
	quota_ctr_put(q);
	return false;
}

void
quota_ctr_put(struct quota_ctr *q)
{
	uint_fast64_t	v = atomic_load(&q->used);

	/* The window may have turned meanwhile (0): never below it. */
	while (v > 0 && !atomic_compare_exchange_weak(&q->used, &v, v - 1))
		;
}

bool
quota_ctr_claim(struct quota_ctr *q, uint64_t start)
{
	uint_fast64_t	t = atomic_load(&q->told_ms);

	while (t != start)
		if (atomic_compare_exchange_weak(&q->told_ms, &t, start))
			return true;
	return false;
}

/* ------------------------------------------------------------------ */
/* A sandbox's counts                                                   */
/* ------------------------------------------------------------------ */

void
quota_set_free(struct quota_set *s)
{
	struct quota_ent	*e, *n;
	size_t			 i;

	if (s == NULL)
		return;
	for (i = 0; i < QUOTA_BUCKETS; i++)
		for (e = s->b[i]; e != NULL; e = n) {
			n = e->next;
			free(e);
		}
	pthread_mutex_destroy(&s->mu);
	free(s);
}

/* sb's set, made by the first quota it meets; NULL if out of memory. */
static struct quota_set *
quota_set_get(struct sandbox *sb)
{
	struct quota_set	*s = atomic_load(&sb->quota), *none = NULL;

	if (s != NULL)
		return s;
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	pthread_mutex_init(&s->mu, NULL);
	if (atomic_compare_exchange_strong(&sb->quota, &none, s))
		return s;
	quota_set_free(s);	/* another worker made it first */
	return none;
}

static uint32_t
quota_hash(enum quota_kind k, const char *name)
{
	uint32_t	h = 2166136261u ^ (uint32_t)k;

	for (; *name != '\0'; name++) {
		h ^= (unsigned char)*name;
		h *= 16777619u;
	}
	return h & (QUOTA_BUCKETS - 1);
}

/* A count that holds nothing: no hold, and its window is over. */
static bool
quota_ent_spent(const struct quota_ent *e, uint64_t now)
{
	uint64_t	s = atomic_load(&e->ctr.start_ms);

	return e->refs == 0 && (s == 0 || now - s >= e->per_ms);
}

/* Makes room for one more count, if one is spent (under the mutex). */
static bool
quota_evict(struct quota_set *s, uint64_t now)
{
	struct quota_ent	**pp, *e;
	size_t			 i;

	for (i = 0; i < QUOTA_BUCKETS; i++)
		for (pp = &s->b[i]; (e = *pp) != NULL; pp = &e->next)
			if (quota_ent_spent(e, now)) {
				*pp = e->next;
				free(e);
				s->n--;
				return true;
			}
	return false;
}

/*
 * The count of kind k and name (under the mutex), made if new; NULL if
 * out of memory or at QUOTA_ENTRIES_MAX with none spent.
 */
static struct quota_ent *
quota_find(struct quota_set *s, enum quota_kind k, const char *name,
    uint64_t per_ms, uint64_t now)
{
	static _Thread_local uint64_t	 warned;
	struct quota_ent		*e;
	uint32_t			 h = quota_hash(k, name);
	size_t				 len = strlen(name) + 1;

	for (e = s->b[h]; e != NULL; e = e->next)
		if (e->kind == k && strcmp(e->name, name) == 0) {
			e->per_ms = per_ms;
			return e;
		}
	if (s->n >= QUOTA_ENTRIES_MAX && !quota_evict(s, now)) {
		if (warned == 0 || now - warned >= 60000) {
			warned = now;
			log_warnx("quota: a sandbox has %d quotas counting: "
			    "a new one is refused", QUOTA_ENTRIES_MAX);
		}
		return NULL;
	}
	if ((e = calloc(1, sizeof(*e) + len)) == NULL)
		return NULL;
	quota_ctr_init(&e->ctr);
	e->per_ms = per_ms;
	e->kind = (uint8_t)k;
	memcpy(e->name, name, len);
	e->next = s->b[h];
	s->b[h] = e;
	s->n++;
	return e;
}

/* The sentence that names a quota: "rule api's quota (N bytes per S s)". */
static void
quota_text(enum quota_kind k, const char *name, uint64_t limit,
    uint64_t per_ms, char *buf, size_t len)
{
	unsigned long long	l = (unsigned long long)limit;
	unsigned		s = (unsigned)(per_ms / 1000);

	switch (k) {
	case QUOTA_RULE:
		snprintf(buf, len, "rule %s's quota (%llu bytes up per %u s)",
		    name, l, s);
		break;
	case QUOTA_SANDBOX:
		snprintf(buf, len, "the sandbox's quota (policy.quota: %llu "
		    "bytes up per %u s)", l, s);
		break;
	default:
		snprintf(buf, len, "secret %s's quota (%llu requests per %u "
		    "s)", name, l, s);
		break;
	}
}

/*
 * Window start of e was seen used up: the one caller that claims it
 * writes the "quota" line.
 */
static void
quota_tell(struct sandbox *sb, struct quota_ent *e, uint64_t limit,
    uint64_t per_ms, uint64_t used, uint64_t start)
{
	struct audit_rec	r;
	char			q[160] UTIL_NOINIT, d[320] UTIL_NOINIT;
	uint64_t		now = util_now_ms(), left;

	if (!quota_ctr_claim(&e->ctr, start))
		return;
	left = start + per_ms > now ? start + per_ms - now : 0;
	quota_text(e->kind, e->name, limit, per_ms, q, sizeof(q));
	snprintf(d, sizeof(d), "%s is used up: %s refused for %llu ms more, "
	    "until the window ends", q, e->kind == QUOTA_SECRET ?
	    "requests that carry it are" : "what it covers is cut and",
	    (unsigned long long)left);
	audit_rec_init(&r);
	r.event = "quota";
	r.sandbox = sb->name;
	r.verdict = POLICY_DENY;
	r.reason = e->kind == QUOTA_SECRET ? POLICY_R_QUOTA_SECRET :
	    POLICY_R_QUOTA_BYTES;
	r.rule = e->kind == QUOTA_RULE ? e->name : NULL;
	r.secret = e->kind == QUOTA_SECRET ? e->name : NULL;
	r.quota = quota_kind_name((enum quota_kind)e->kind);
	r.limit = (int64_t)limit;
	r.per_seconds = (int64_t)(per_ms / 1000);
	r.used = (int64_t)used;
	r.detail = d;
	audit_emit(&r);
}

void
quota_release(struct quota_hold *h)
{
	struct quota_set	*s;
	unsigned		 i;

	if (h->n == 0)
		return;		/* holds nothing: the common case */
	if ((s = atomic_load(&h->sb->quota)) != NULL) {
		pthread_mutex_lock(&s->mu);
		for (i = 0; i < h->n; i++)
			h->ent[i]->refs--;
		pthread_mutex_unlock(&s->mu);
	}
	memset(h, 0, sizeof(*h));
}

void
quota_hold_move(struct quota_hold *dst, struct quota_hold *src)
{
	*dst = *src;
	memset(src, 0, sizeof(*src));
}

bool
quota_admit(struct quota_hold *h, struct sandbox *sb, const struct policy *p,
    const struct policy_rule *r, char *why, size_t len)
{
	struct quota_set	*s;
	const char		*name[QUOTA_HOLD_MAX] UTIL_NOINIT;
	enum quota_kind		 kind[QUOTA_HOLD_MAX] UTIL_NOINIT, over;
	uint64_t		 bytes, now, used, start;
	unsigned		 per, n = 0, i;
	char			 q[160] UTIL_NOINIT;

	quota_release(h);
	if (policy_rule_quota(r, &bytes, &per)) {
		name[n] = policy_rule_name(r);
		kind[n] = QUOTA_RULE;
		h->limit[n] = bytes;
		h->per_ms[n++] = (uint64_t)per * 1000;
	}
	if (policy_quota(p, &bytes, &per)) {
		name[n] = "";
		kind[n] = QUOTA_SANDBOX;
		h->limit[n] = bytes;
		h->per_ms[n++] = (uint64_t)per * 1000;
	}
	if (n == 0 || sb == NULL)
		return true;
	now = util_now_ms();
	if ((s = quota_set_get(sb)) == NULL) {
		over = kind[0];
		snprintf(why, len, "out of memory for the quota's count");
		goto refused;
	}
	pthread_mutex_lock(&s->mu);
	for (i = 0; i < n; i++) {
		if ((h->ent[i] = quota_find(s, kind[i], name[i], h->per_ms[i],
		    now)) == NULL)
			break;
		h->ent[i]->refs++;
	}
	pthread_mutex_unlock(&s->mu);
	h->sb = sb;
	h->n = i;
	if (i < n) {
		over = kind[i];
		snprintf(why, len, "the quota's count could not be had (out "
		    "of memory, or %d quotas counting)", QUOTA_ENTRIES_MAX);
		goto refused;
	}
	for (i = 0; i < n; i++) {
		used = quota_ctr_peek(&h->ent[i]->ctr, h->per_ms[i], now,
		    &start);
		if (used < h->limit[i])
			continue;
		over = kind[i];
		quota_tell(sb, h->ent[i], h->limit[i], h->per_ms[i], used,
		    start);
		quota_text(kind[i], name[i], h->limit[i], h->per_ms[i], q,
		    sizeof(q));
		snprintf(why, len, "%s is used up: %llu ms until its window "
		    "ends", q, (unsigned long long)(start + h->per_ms[i] > now ?
		    start + h->per_ms[i] - now : 0));
		goto refused;
	}
	return true;
 refused:
	metrics_quota(&sb->msb, over);
	quota_release(h);
	h->over = over;
	return false;
}

bool
quota_charge(struct quota_hold *h, uint64_t n)
{
	uint64_t	now, used, start;
	unsigned	i;
	bool		over = false;

	if (h->n == 0 || n == 0)
		return false;
	now = util_now_ms();
	for (i = 0; i < h->n; i++) {
		used = quota_ctr_add(&h->ent[i]->ctr, n, h->per_ms[i], now,
		    &start);
		if (used < h->limit[i])
			continue;
		/* Reached: audited; passed: these bytes must not go. */
		quota_tell(h->sb, h->ent[i], h->limit[i], h->per_ms[i], used,
		    start);
		if (used == h->limit[i])
			continue;
		if (!over)
			h->over = (enum quota_kind)h->ent[i]->kind;
		over = true;
	}
	if (over)
		metrics_quota(&h->sb->msb, h->over);
	return over;
}

void
quota_why(const struct quota_hold *h, char *buf, size_t len)
{
	char		q[160] UTIL_NOINIT;
	unsigned	i;

	for (i = 0; i < h->n; i++)
		if (h->ent[i]->kind == h->over)
			break;
	if (i == h->n) {
		snprintf(buf, len, "a quota is used up");
		return;
	}
	quota_text(h->over, h->ent[i]->name, h->limit[i], h->per_ms[i], q,
	    sizeof(q));
	snprintf(buf, len, "%s is used up for this window", q);
}

bool
quota_secret_take(struct sandbox *sb, const char *name, unsigned requests,
    unsigned per_s, char *why, size_t len)
{
	struct quota_set	*s;
	struct quota_ent	*e = NULL;
	uint64_t		 per_ms = (uint64_t)per_s * 1000, now, start = 0;
	uint64_t		 used;
	bool			 ok = false;
	char			 q[160] UTIL_NOINIT;

	now = util_now_ms();
	if ((s = quota_set_get(sb)) != NULL) {
		pthread_mutex_lock(&s->mu);
		if ((e = quota_find(s, QUOTA_SECRET, name, per_ms, now)) !=
		    NULL) {
			ok = quota_ctr_take(&e->ctr, requests, per_ms, now,
			    &start);
			/* The last request of the window, or one past it. */
			if ((used = atomic_load(&e->ctr.used)) >= requests)
				quota_tell(sb, e, requests, per_ms, used,
				    start);
		}
		pthread_mutex_unlock(&s->mu);
	}
	if (ok)
		return true;
	if (e == NULL)
		snprintf(why, len, "the quota's count for secret %s could not "
		    "be had (out of memory, or %d quotas counting)", name,
		    QUOTA_ENTRIES_MAX);
	else {
		quota_text(QUOTA_SECRET, name, requests, per_ms, q, sizeof(q));
		snprintf(why, len, "%s is used up: %llu ms until its window "
		    "ends", q, (unsigned long long)(start + per_ms > now ?
		    start + per_ms - now : 0));
	}
	metrics_quota(&sb->msb, QUOTA_SECRET);
	return false;
}

bool
quota_secret_room(struct sandbox *sb, const char *name, unsigned requests,
    unsigned per_s, char *why, size_t len)
{
	struct quota_set	*s = atomic_load(&sb->quota);
	struct quota_ent	*e;
	uint64_t		 per_ms = (uint64_t)per_s * 1000, now, start = 0;
	uint64_t		 used = 0;
	char			 q[160] UTIL_NOINIT;

	if (s == NULL)
		return true;
	now = util_now_ms();
	pthread_mutex_lock(&s->mu);
	for (e = s->b[quota_hash(QUOTA_SECRET, name)]; e != NULL; e = e->next)
		if (e->kind == QUOTA_SECRET && strcmp(e->name, name) == 0) {
			used = quota_ctr_peek(&e->ctr, per_ms, now, &start);
			if (used >= requests)
				quota_tell(sb, e, requests, per_ms, used,
				    start);
			break;
		}
	pthread_mutex_unlock(&s->mu);
	if (used < requests)
		return true;
	quota_text(QUOTA_SECRET, name, requests, per_ms, q, sizeof(q));
	snprintf(why, len, "%s is used up: %llu ms until its window ends", q,
	    (unsigned long long)(start + per_ms > now ? start + per_ms - now :
	    0));
	metrics_quota(&sb->msb, QUOTA_SECRET);
	return false;
}

void
quota_secret_put(struct sandbox *sb, const char *name)
{
	struct quota_set	*s = atomic_load(&sb->quota);
	struct quota_ent	*e;

	if (s == NULL)
		return;
	pthread_mutex_lock(&s->mu);
	for (e = s->b[quota_hash(QUOTA_SECRET, name)]; e != NULL; e = e->next)
		if (e->kind == QUOTA_SECRET && strcmp(e->name, name) == 0) {
			quota_ctr_put(&e->ctr);
			break;
		}
	pthread_mutex_unlock(&s->mu);
}
