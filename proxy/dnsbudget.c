/*
 * dnsbudget.c - the budget of new names under wildcards, per sandbox.
 *
 * Two open-addressing tables of 16-byte slots, key 0 meaning empty: the
 * names (key: the name's keyed digest, value: the window it was last
 * taken in) and the counts (key: rule number + 1, value: new names in
 * this window).  Both start small and double, the names up to twice the
 * cap, so a sandbox that resolves few names costs little.  When a window
 * ends, the names not taken in it are dropped and the counts start anew.
 *
 * The digest is SipHash-2-4 with a random key of the sandbox: a keyed
 * function, so a workload cannot find names that collide with a name
 * already seen and have them resolved for free.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "proxy/dnsbudget.h"

#define DNSBUDGET_FIRST_SLOTS	64	/* power of two */

struct dnsbudget_slot {
	uint64_t	key;	/* 0: empty */
	uint64_t	val;
};

struct dnsbudget_tab {
	struct dnsbudget_slot	*slots;
	size_t			 cap;	/* slots, a power of two, or 0 */
	size_t			 n;	/* keys */
};

struct dnsbudget {
	uint8_t			 key[DNSBUDGET_KEY_BYTES];
	size_t			 cap;		/* names at most */
	uint64_t		 start_ms;	/* the first take: windows
						   count from there */
	uint64_t		 window;	/* the current one */
	int			 started;
	const void		*gen;		/* the counts' policy */
	struct dnsbudget_tab	 names;
	struct dnsbudget_tab	 counts;
};

/* ------------------------------------------------------------------ */
/* SipHash-2-4 (Aumasson and Bernstein, 2012)                           */
/* ------------------------------------------------------------------ */

#define ROTL64(x, b)	(((x) << (b)) | ((x) >> (64 - (b))))

static uint64_t
le64(const uint8_t *p)
{
	uint64_t	v = 0;
	int		i;

	for (i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static void
sipround(uint64_t v[4])
{
	v[0] += v[1]; v[1] = ROTL64(v[1], 13); v[1] ^= v[0];
	v[0] = ROTL64(v[0], 32);
	v[2] += v[3]; v[3] = ROTL64(v[3], 16); v[3] ^= v[2];
	v[0] += v[3]; v[3] = ROTL64(v[3], 21); v[3] ^= v[0];
	v[2] += v[1]; v[1] = ROTL64(v[1], 17); v[1] ^= v[2];
	v[2] = ROTL64(v[2], 32);
}

uint64_t
dnsbudget_digest(const uint8_t *key, const void *data, size_t len)
{
	const uint8_t	*p = data;
	uint64_t	 k0 = le64(key), k1 = le64(key + 8), m, v[4];
	size_t		 i, left;

	v[0] = k0 ^ 0x736f6d6570736575ULL;
	v[1] = k1 ^ 0x646f72616e646f6dULL;
	v[2] = k0 ^ 0x6c7967656e657261ULL;
	v[3] = k1 ^ 0x7465646279746573ULL;
	for (i = 0; i + 8 <= len; i += 8) {
		m = le64(p + i);
		v[3] ^= m;
		sipround(v);
		sipround(v);
		v[0] ^= m;
	}
	/* The last block: the remaining bytes and the length's low byte. */
	m = (uint64_t)(len & 0xff) << 56;
	for (left = len - i; left > 0; left--)
		m |= (uint64_t)p[i + left - 1] << (8 * (left - 1));
	v[3] ^= m;
	sipround(v);
	sipround(v);
	v[0] ^= m;
	v[2] ^= 0xff;
	for (i = 0; i < 4; i++)
		sipround(v);
	return v[0] ^ v[1] ^ v[2] ^ v[3];
}

/* ------------------------------------------------------------------ */
/* Tables                                                               */
/* ------------------------------------------------------------------ */

/* The slot holding key, or the empty slot where it would go. */
static struct dnsbudget_slot *
tab_find(const struct dnsbudget_tab *t, uint64_t key)
{
	size_t	j;

	/* The keys are digests or small numbers: mix them once more. */
	j = (size_t)((key * 0x9e3779b97f4a7c15ULL) >> 32) & (t->cap - 1);
	while (t->slots[j].key != 0 && t->slots[j].key != key)
		j = (j + 1) & (t->cap - 1);
	return &t->slots[j];
}

/* Moves t into a table of ncap slots, keeping the keys whose value is at
 * least min_val. */
static int
tab_rebuild(struct dnsbudget_tab *t, size_t ncap, uint64_t min_val)
{
	struct dnsbudget_tab	 nt;
	size_t			 i;

	if ((nt.slots = calloc(ncap, sizeof(*nt.slots))) == NULL)
		return -1;
	nt.cap = ncap;
	nt.n = 0;
	for (i = 0; i < t->cap; i++) {
		if (t->slots[i].key == 0 || t->slots[i].val < min_val)
			continue;
		*tab_find(&nt, t->slots[i].key) = t->slots[i];
		nt.n++;
	}
	free(t->slots);
	*t = nt;
	return 0;
}

static void
tab_clear(struct dnsbudget_tab *t)
{
	if (t->cap > 0)
		memset(t->slots, 0, t->cap * sizeof(*t->slots));
	t->n = 0;
}

/*
 * The slot for key, added (value 0) if missing; the table grows to keep
 * its load at most one half.  NULL if out of memory.
 */
static struct dnsbudget_slot *
tab_get(struct dnsbudget_tab *t, uint64_t key)
{
	struct dnsbudget_slot	*s;

	if (t->cap > 0 && (s = tab_find(t, key))->key == key)
		return s;
	if ((t->n + 1) * 2 > t->cap && tab_rebuild(t, t->cap ? t->cap * 2 :
	    DNSBUDGET_FIRST_SLOTS, 0) == -1)
		return NULL;
	s = tab_find(t, key);
	s->key = key;
	s->val = 0;
	t->n++;
	return s;
}

/* ------------------------------------------------------------------ */

struct dnsbudget *
dnsbudget_new(const uint8_t *key, size_t cap)
{
	struct dnsbudget	*b;

	if ((b = calloc(1, sizeof(*b))) == NULL)
		return NULL;
	memcpy(b->key, key, sizeof(b->key));
	b->cap = cap > 0 ? cap : 1;
	return b;
}

void
dnsbudget_free(struct dnsbudget *b)
{
	if (b == NULL)
		return;
	free(b->names.slots);
	free(b->counts.slots);
	explicit_bzero(b->key, sizeof(b->key));
	free(b);
}

size_t
dnsbudget_count(const struct dnsbudget *b)
{
	return b->names.n;
}

/*
 * A new window: names not taken in the one that ended are dropped (all of
 * them after a longer pause), and every rule's count starts at 0.  If the
 * smaller table cannot be had, every name is forgotten: each counts again,
 * which is stricter, never looser.
 */
static void
dnsbudget_roll(struct dnsbudget *b, uint64_t window)
{
	size_t	ncap = DNSBUDGET_FIRST_SLOTS;

	tab_clear(&b->counts);
	if (window == b->window + 1 && b->names.n > 0) {
		while (ncap < b->names.n * 2 && ncap < b->names.cap)
			ncap *= 2;
		if (tab_rebuild(&b->names, ncap, b->window) == -1)
			tab_clear(&b->names);
	} else
		tab_clear(&b->names);
	b->window = window;
}

enum dnsbudget_result
dnsbudget_take(struct dnsbudget *b, const void *gen, size_t rule,
    const char *name, unsigned limit, uint64_t now_ms, unsigned *used)
{
	struct dnsbudget_slot	*s, *c;
	uint64_t		 window, d;
	enum dnsbudget_result	 res;

	if (!b->started) {
		b->start_ms = now_ms;
		b->started = 1;
	}
	window = now_ms > b->start_ms ? (now_ms - b->start_ms) /
	    DNSBUDGET_WINDOW_MS : 0;
	if (window > b->window)
		dnsbudget_roll(b, window);
	if (gen != b->gen) {
		tab_clear(&b->counts);
		b->gen = gen;
	}
	if ((d = dnsbudget_digest(b->key, name, strlen(name))) == 0)
		d = 1;
	c = b->counts.cap > 0 ? tab_find(&b->counts, (uint64_t)rule + 1) :
	    NULL;
	if (c != NULL && c->key == 0)
		c = NULL;
	if (b->names.cap > 0 && (s = tab_find(&b->names, d))->key == d) {
		s->val = b->window;
		res = DNSBUDGET_SEEN;
	} else if ((c != NULL ? c->val : 0) >= limit)
		res = DNSBUDGET_OVER;
	else if (b->names.n >= b->cap)
		res = DNSBUDGET_FULL;
	else if ((c = tab_get(&b->counts, (uint64_t)rule + 1)) == NULL ||
	    (s = tab_get(&b->names, d)) == NULL)
		res = DNSBUDGET_NOMEM;
	else {
		/* A counter exists only for a rule with a name counted in
		 * this window: at most cap of them. */
		s->val = b->window;
		c->val++;
		res = DNSBUDGET_NEW;
	}
	if (used != NULL)
		*used = c != NULL ? (unsigned)c->val : 0;
	return res;
}
