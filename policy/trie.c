/*
 * trie.c - path-compressed binary tries of IP prefixes.
 *
 * One trie per address family holds the prefixes of a set (rule cidrs,
 * built-in deny ranges, allow_private), each node a prefix that either
 * carries a value or is a glue node where two branches part.  A lookup
 * walks at most one node per bit of the key, whatever the number of
 * prefixes, which is what keeps a decision's cost independent of the
 * number of rules.  Nodes live in one array and link by index, so a
 * million prefixes cost a few tens of megabytes and no pointer chasing
 * across the heap.
 *
 * What it is not: a map of values.  A node's value is an index whose
 * meaning belongs to the caller (a list of rules, a deny entry, a mark).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "policy/policy_int.h"

#define TRIE_FIRST_CAP	16	/* initial number of nodes */

static uint32_t	trie_new(struct trie *t, const uint8_t *key, unsigned plen);
static unsigned	trie_common(const uint8_t *a, const uint8_t *b, unsigned max);
static bool	trie_prefix_of(const struct trie_node *n, const uint8_t *key,
		    unsigned plen);

void
trie_init(struct trie *t, unsigned bits)
{
	memset(t, 0, sizeof(*t));
	t->root = POLICY_NONE;
	t->bits = bits;
}

void
trie_free(struct trie *t)
{
	if (t == NULL)
		return;
	free(t->v);
	t->v = NULL;
	t->n = t->cap = 0;
	t->root = POLICY_NONE;
}

/* Returns the index of a new node for key/plen (key masked), or NONE. */
static uint32_t
trie_new(struct trie *t, const uint8_t *key, unsigned plen)
{
	struct trie_node	*n;
	unsigned		 i;

	if (t->n == t->cap) {
		size_t	ncap = t->cap ? t->cap * 2 : TRIE_FIRST_CAP;

		if (ncap >= POLICY_NONE)
			return POLICY_NONE;
		n = reallocarray(t->v, ncap, sizeof(*n));
		if (n == NULL)
			return POLICY_NONE;
		t->v = n;
		t->cap = ncap;
	}
	n = &t->v[t->n];
	memset(n, 0, sizeof(*n));
	for (i = 0; i < plen / 8; i++)
		n->key[i] = key[i];
	if (plen % 8 != 0)
		n->key[i] = key[i] & (uint8_t)(0xff << (8 - plen % 8));
	n->plen = (uint8_t)plen;
	n->child[0] = n->child[1] = POLICY_NONE;
	n->value = POLICY_NONE;
	return (uint32_t)t->n++;
}

/* Number of leading bits a and b share, at most max. */
static unsigned
trie_common(const uint8_t *a, const uint8_t *b, unsigned max)
{
	unsigned	i = 0;
	uint8_t		x;

	while (i + 8 <= max && a[i / 8] == b[i / 8])
		i += 8;
	if (i >= max)
		return max;
	x = a[i / 8] ^ b[i / 8];
	while (i < max && (x & (0x80 >> (i % 8))) == 0)
		i++;
	return i < max ? i : max;
}

/* True if node n's prefix contains key/plen. */
static bool
trie_prefix_of(const struct trie_node *n, const uint8_t *key, unsigned plen)
{
	return n->plen <= plen && trie_common(n->key, key, n->plen) == n->plen;
}

uint32_t *
trie_insert(struct trie *t, const uint8_t *key, unsigned plen)
{
	uint32_t	cur, parent = POLICY_NONE, m, g;
	int		side = 0, b;
	unsigned	common;

	if (plen > t->bits)
		return NULL;
	cur = t->root;
	for (;;) {
		if (cur == POLICY_NONE) {
			if ((m = trie_new(t, key, plen)) == POLICY_NONE)
				return NULL;
			break;
		}
		common = trie_common(key, t->v[cur].key,
		    plen < t->v[cur].plen ? plen : t->v[cur].plen);
		if (common == t->v[cur].plen && common == plen)
			return &t->v[cur].value;
		if (common == t->v[cur].plen) {
			/* cur is a proper prefix of key: go down. */
			parent = cur;
			side = addr_bit(key, common);
			cur = t->v[cur].child[side];
			continue;
		}
		if (common == plen) {
			/* key is a proper prefix of cur: put it above. */
			if ((m = trie_new(t, key, plen)) == POLICY_NONE)
				return NULL;
			b = addr_bit(t->v[cur].key, plen);
			t->v[m].child[b] = cur;
			break;
		}
		/* They part at bit common: a glue node holds both. */
		if ((g = trie_new(t, key, common)) == POLICY_NONE)
			return NULL;
		if ((m = trie_new(t, key, plen)) == POLICY_NONE)
			return NULL;
		b = addr_bit(key, common);
		t->v[g].child[b] = m;
		t->v[g].child[!b] = cur;
		m = g;
		break;
	}
	if (parent == POLICY_NONE)
		t->root = m;
	else
		t->v[parent].child[side] = m;
	/* m may be the glue node; the new prefix's node is the last made. */
	return &t->v[t->n - 1].value;
}

size_t
trie_match(const struct trie *t, const uint8_t *key, unsigned plen,
    uint32_t *vals, unsigned *plens)
{
	uint32_t			 cur = t->root;
	const struct trie_node		*n;
	size_t				 k = 0;

	while (cur != POLICY_NONE) {
		n = &t->v[cur];
		if (!trie_prefix_of(n, key, plen))
			break;
		if (n->value != POLICY_NONE && k < TRIE_MATCH_MAX) {
			vals[k] = n->value;
			if (plens != NULL)
				plens[k] = n->plen;
			k++;
		}
		if (n->plen >= plen)
			break;
		cur = n->child[addr_bit(key, n->plen)];
	}
	return k;
}

bool
trie_overlaps(const struct trie *t, const uint8_t *key, unsigned plen)
{
	uint32_t			 cur = t->root;
	const struct trie_node		*n;
	unsigned			 m;

	while (cur != POLICY_NONE) {
		n = &t->v[cur];
		m = n->plen < plen ? n->plen : plen;
		if (trie_common(n->key, key, m) != m)
			return false;
		if (n->plen >= plen)
			return true;	/* n lies inside key/plen */
		if (n->value != POLICY_NONE)
			return true;	/* n contains key/plen */
		cur = n->child[addr_bit(key, n->plen)];
	}
	return false;
}
