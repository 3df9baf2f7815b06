/*
 * domain.c - open-addressing hash table keyed by canonical host names.
 *
 * The policy keeps two: exact names ("api.example.com") and the suffixes
 * of wildcards ("*.example.com" is stored as "example.com").  A decision
 * probes the exact table once and the suffix table once per label, so its
 * cost depends on the target name, not on the number of rules.  Keys are
 * packed in one arena; a slot is 12 bytes.
 *
 * Only the config adds keys; a client only looks them up, so it cannot
 * lengthen probe sequences.  The table is read-only once built.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "policy/policy_int.h"

#define DOMAIN_FIRST_CAP	16	/* slots in a new table */
#define DOMAIN_FIRST_ARENA	256	/* bytes in a new key arena */
/* Key offsets are 32-bit. */
#define DOMAIN_ARENA_MAX	((size_t)UINT32_MAX - 1)

static uint32_t	domain_hash(const char *s, size_t n);
static int	domain_grow(struct domain_table *t);

/* FNV-1a, 32 bits. */
static uint32_t
domain_hash(const char *s, size_t n)
{
	uint32_t	h = 2166136261u;
	size_t		i;

	for (i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 16777619u;
	}
	return h;
}

void
domain_init(struct domain_table *t)
{
	memset(t, 0, sizeof(*t));
}

void
domain_free(struct domain_table *t)
{
	if (t == NULL)
		return;
	free(t->slots);
	free(t->arena);
	memset(t, 0, sizeof(*t));
}

/* Moves the slots into an array of ncap (a power of two). */
static int
domain_resize(struct domain_table *t, size_t ncap)
{
	struct domain_slot	*ns;
	size_t			 i, j;

	if ((ns = reallocarray(NULL, ncap, sizeof(*ns))) == NULL)
		return -1;
	for (i = 0; i < ncap; i++)
		ns[i].key = POLICY_NONE;
	for (i = 0; i < t->cap; i++) {
		if (t->slots[i].key == POLICY_NONE)
			continue;
		j = t->slots[i].hash & (ncap - 1);
		while (ns[j].key != POLICY_NONE)
			j = (j + 1) & (ncap - 1);
		ns[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = ns;
	t->cap = ncap;
	return 0;
}

/* Doubles the slot array (keeps the load under one half). */
static int
domain_grow(struct domain_table *t)
{
	return domain_resize(t, t->cap ? t->cap * 2 : DOMAIN_FIRST_CAP);
}

int
domain_reserve(struct domain_table *t, size_t n, size_t keybytes)
{
	size_t	ncap = DOMAIN_FIRST_CAP;
	char	*na;

	while (ncap < (n + 1) * 2 && ncap < SIZE_MAX / 4)
		ncap *= 2;
	if (ncap > t->cap && domain_resize(t, ncap) == -1)
		return -1;
	if (keybytes > t->acap && keybytes <= DOMAIN_ARENA_MAX) {
		if ((na = realloc(t->arena, keybytes)) == NULL)
			return -1;
		t->arena = na;
		t->acap = keybytes;
	}
	return 0;
}

uint32_t *
domain_insert(struct domain_table *t, const char *name, size_t len)
{
	uint32_t	h;
	size_t		j, need;
	char		*na;

	if ((t->n + 1) * 2 > t->cap && domain_grow(t) == -1)
		return NULL;
	h = domain_hash(name, len);
	for (j = h & (t->cap - 1); t->slots[j].key != POLICY_NONE;
	    j = (j + 1) & (t->cap - 1))
		if (t->slots[j].hash == h &&
		    strncmp(t->arena + t->slots[j].key, name, len) == 0 &&
		    t->arena[t->slots[j].key + len] == '\0')
			return &t->slots[j].value;
	need = t->alen + len + 1;
	if (need > DOMAIN_ARENA_MAX)
		return NULL;
	if (need > t->acap) {
		size_t	ncap = t->acap ? t->acap : DOMAIN_FIRST_ARENA;

		while (ncap < need)
			ncap *= 2;
		if ((na = realloc(t->arena, ncap)) == NULL)
			return NULL;
		t->arena = na;
		t->acap = ncap;
	}
	memcpy(t->arena + t->alen, name, len);
	t->arena[t->alen + len] = '\0';
	t->slots[j].hash = h;
	t->slots[j].key = (uint32_t)t->alen;
	t->slots[j].value = POLICY_NONE;
	t->alen = need;
	t->n++;
	return &t->slots[j].value;
}

uint32_t
domain_lookup(const struct domain_table *t, const char *name, size_t len)
{
	uint32_t	h;
	size_t		j;

	if (t->cap == 0)
		return POLICY_NONE;
	h = domain_hash(name, len);
	for (j = h & (t->cap - 1); t->slots[j].key != POLICY_NONE;
	    j = (j + 1) & (t->cap - 1))
		if (t->slots[j].hash == h &&
		    strncmp(t->arena + t->slots[j].key, name, len) == 0 &&
		    t->arena[t->slots[j].key + len] == '\0')
			return t->slots[j].value;
	return POLICY_NONE;
}
