/*
 * audit_tab.c - counters by key for `moat audit`, in bounded memory.
 *
 * Open addressing (linear probing, at most half full) over an array of
 * entries; keys live in chunks of their own and never move.  A table
 * holds at most the cap it was made with, so a file of a million
 * distinct hosts costs what the cap allows and no more; its callers
 * count what they could not itemise.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "launcher/audit_cmd.h"

#define AUDIT_TAB_CHUNK		(256u << 10)	/* key bytes per chunk */
#define AUDIT_TAB_MIN		64		/* slots at first */

struct audit_tab_chunk {
	struct audit_tab_chunk	*next;
	size_t			 used;
	char			 b[];
};

struct audit_tab_slot {
	uint64_t	 hash;
	const char	*key;		/* NULL: empty */
	size_t		 klen;
	size_t		 idx;		/* into vals */
};

struct audit_tab {
	struct audit_tab_slot	*slots;
	size_t			 nslots;	/* a power of 2 */
	size_t			 n, cap;
	size_t			 valsize;
	unsigned char		*vals;		/* n * valsize */
	size_t			 valcap;	/* entries vals has room for */
	struct audit_tab_chunk	*chunks;
};

static uint64_t
audit_tab_hash(const char *k, size_t n)
{
	uint64_t	h = UINT64_C(0xcbf29ce484222325);
	size_t		i;

	for (i = 0; i < n; i++) {
		h ^= (unsigned char)k[i];
		h *= UINT64_C(0x100000001b3);
	}
	return h ^ (h >> 29);
}

struct audit_tab *
audit_tab_new(size_t valsize, size_t cap)
{
	struct audit_tab	*t;

	if ((t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	t->valsize = (valsize + 7) & ~(size_t)7;
	t->cap = cap;
	t->nslots = AUDIT_TAB_MIN;
	if ((t->slots = calloc(t->nslots, sizeof(*t->slots))) == NULL) {
		free(t);
		return NULL;
	}
	return t;
}

void
audit_tab_free(struct audit_tab *t)
{
	struct audit_tab_chunk	*c, *n;

	if (t == NULL)
		return;
	for (c = t->chunks; c != NULL; c = n) {
		n = c->next;
		free(c);
	}
	free(t->slots);
	free(t->vals);
	free(t);
}

size_t
audit_tab_count(const struct audit_tab *t)
{
	return t->n;
}

static int
audit_tab_grow(struct audit_tab *t)
{
	struct audit_tab_slot	*ns;
	size_t			 nn = t->nslots * 2, i, j;

	if ((ns = calloc(nn, sizeof(*ns))) == NULL)
		return -1;
	for (i = 0; i < t->nslots; i++) {
		if (t->slots[i].key == NULL)
			continue;
		for (j = t->slots[i].hash & (nn - 1); ns[j].key != NULL;
		    j = (j + 1) & (nn - 1))
			;
		ns[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = ns;
	t->nslots = nn;
	return 0;
}

/* A copy of key in the chunks; NULL if out of memory. */
static const char *
audit_tab_keep(struct audit_tab *t, const char *key, size_t klen)
{
	struct audit_tab_chunk	*c = t->chunks;
	size_t			 sz;
	char			*k;

	if (c == NULL || AUDIT_TAB_CHUNK - c->used < klen + 1) {
		sz = klen + 1 > AUDIT_TAB_CHUNK ? klen + 1 : AUDIT_TAB_CHUNK;
		if ((c = malloc(sizeof(*c) + sz)) == NULL)
			return NULL;
		c->used = 0;
		c->next = t->chunks;
		t->chunks = c;
	}
	k = c->b + c->used;
	memcpy(k, key, klen);
	k[klen] = '\0';
	c->used += klen + 1;
	return k;
}

void *
audit_tab_find(const struct audit_tab *t, const char *key, size_t klen)
{
	uint64_t			 h = audit_tab_hash(key, klen);
	size_t				 i;
	const struct audit_tab_slot	*s;

	for (i = h & (t->nslots - 1); t->slots[i].key != NULL;
	    i = (i + 1) & (t->nslots - 1)) {
		s = &t->slots[i];
		if (s->hash == h && s->klen == klen &&
		    memcmp(s->key, key, klen) == 0)
			return t->vals + s->idx * t->valsize;
	}
	return NULL;
}

void *
audit_tab_get(struct audit_tab *t, const char *key, size_t klen, bool *full)
{
	uint64_t		 h = audit_tab_hash(key, klen);
	size_t			 i;
	struct audit_tab_slot	*s;
	unsigned char		*nv;

	if (full != NULL)
		*full = false;
	if ((t->n + 1) * 2 > t->nslots && t->n < t->cap &&
	    audit_tab_grow(t) == -1)
		return NULL;
	for (i = h & (t->nslots - 1); t->slots[i].key != NULL;
	    i = (i + 1) & (t->nslots - 1)) {
		s = &t->slots[i];
		if (s->hash == h && s->klen == klen &&
		    memcmp(s->key, key, klen) == 0)
			return t->vals + s->idx * t->valsize;
	}
	if (t->n >= t->cap) {
		if (full != NULL)
			*full = true;
		return NULL;
	}
	if (t->n == t->valcap) {
		size_t nc = t->valcap ? t->valcap * 2 : AUDIT_TAB_MIN;

		if ((nv = realloc(t->vals, nc * t->valsize)) == NULL)
			return NULL;
		t->vals = nv;
		t->valcap = nc;
	}
	s = &t->slots[i];
	if ((s->key = audit_tab_keep(t, key, klen)) == NULL)
		return NULL;
	s->hash = h;
	s->klen = klen;
	s->idx = t->n++;
	nv = t->vals + s->idx * t->valsize;
	memset(nv, 0, t->valsize);
	return nv;
}

struct audit_tab_ent *
audit_tab_list(const struct audit_tab *t, size_t *n)
{
	struct audit_tab_ent	*v;
	size_t			 i, k = 0;

	*n = 0;
	if (t->n == 0 || (v = calloc(t->n, sizeof(*v))) == NULL)
		return NULL;
	for (i = 0; i < t->nslots; i++) {
		if (t->slots[i].key == NULL)
			continue;
		v[k].key = t->slots[i].key;
		v[k].klen = t->slots[i].klen;
		v[k].val = t->vals + t->slots[i].idx * t->valsize;
		k++;
	}
	*n = k;
	return v;
}

size_t
audit_tab_key(char *buf, size_t cap, const char *const *parts, size_t nparts)
{
	size_t	i, n = 0, l;

	for (i = 0; i < nparts; i++) {
		l = parts[i] != NULL ? strlen(parts[i]) : 0;
		if (n + l + 1 > cap)
			return 0;
		if (l > 0)
			memcpy(buf + n, parts[i], l);
		n += l;
		if (i + 1 < nparts)
			buf[n++] = '\0';
	}
	return n;
}
