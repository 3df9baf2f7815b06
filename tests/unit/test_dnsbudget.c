/*
 * test_dnsbudget.c - the budget of new names under wildcards
 * (proxy/dnsbudget.c): distinct names count once, each rule has its own
 * count, a window ends and the counts start anew while names in use stay
 * free, the set's cap refuses new names until a window drops old ones,
 * and the digest is SipHash-2-4.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "proxy/dnsbudget.h"
#include "tests/unit/unit.h"

#define W	DNSBUDGET_WINDOW_MS

static const uint8_t	key[DNSBUDGET_KEY_BYTES] = {
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
};
static const int	gen_a, gen_b;	/* two "policies" */

static enum dnsbudget_result
take(struct dnsbudget *b, size_t rule, const char *name, unsigned limit,
    uint64_t now)
{
	return dnsbudget_take(b, &gen_a, rule, name, limit, now, NULL);
}

/* The reference vectors of the SipHash paper's implementation. */
static void
test_dnsbudget_siphash(void)
{
	uint8_t	msg[64];
	size_t	i;

	for (i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)i;
	CU_ASSERT_EQUAL(dnsbudget_digest(key, msg, 0), 0x726fdb47dd0e0e31ULL);
	CU_ASSERT_EQUAL(dnsbudget_digest(key, msg, 1), 0x74f839c593dc67fdULL);
	CU_ASSERT_EQUAL(dnsbudget_digest(key, msg, 7), 0xab0200f58b01d137ULL);
	CU_ASSERT_EQUAL(dnsbudget_digest(key, msg, 8), 0x93f5f5799a932462ULL);
	CU_ASSERT_EQUAL(dnsbudget_digest(key, msg, 15), 0xa129ca6149be45e5ULL);
	CU_ASSERT_EQUAL(dnsbudget_digest(key, msg, 63), 0x958a324ceb064572ULL);
}

/* Distinct names count, repeats do not; over the limit: refused. */
static void
test_dnsbudget_distinct(void)
{
	struct dnsbudget	*b;
	unsigned		 used = 99;
	char			 name[64];
	int			 i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(b = dnsbudget_new(key, 100));
	for (i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "n%d.example.com", i);
		CU_ASSERT_EQUAL(dnsbudget_take(b, &gen_a, 3, name, 5, 1000 + i,
		    &used), DNSBUDGET_NEW);
		CU_ASSERT_EQUAL(used, (unsigned)i + 1);
		/* The same name again is free, as often as it comes. */
		CU_ASSERT_EQUAL(take(b, 3, name, 5, 1000 + i), DNSBUDGET_SEEN);
	}
	CU_ASSERT_EQUAL(dnsbudget_take(b, &gen_a, 3, "n5.example.com", 5,
	    2000, &used), DNSBUDGET_OVER);
	CU_ASSERT_EQUAL(used, 5);
	CU_ASSERT_EQUAL(take(b, 3, "n5.example.com", 5, 2001), DNSBUDGET_OVER);
	/* A refused name was not remembered. */
	CU_ASSERT_EQUAL(dnsbudget_count(b), 5);
	CU_ASSERT_EQUAL(take(b, 3, "n0.example.com", 5, 2002), DNSBUDGET_SEEN);
	/* Names are exact: case and a final dot are the caller's to
	 * normalise, every other byte is a new name. */
	CU_ASSERT_EQUAL(take(b, 3, "n0.example.co", 5, 2003), DNSBUDGET_OVER);
	/* Another rule has its own count; a name seen under one rule is
	 * free under another (it has been resolved already). */
	CU_ASSERT_EQUAL(take(b, 4, "m0.example.org", 5, 2004), DNSBUDGET_NEW);
	CU_ASSERT_EQUAL(take(b, 4, "n1.example.com", 5, 2005), DNSBUDGET_SEEN);
	CU_ASSERT_EQUAL(dnsbudget_take(b, &gen_a, 4, "m1.example.org", 5,
	    2006, &used), DNSBUDGET_NEW);
	CU_ASSERT_EQUAL(used, 2);
	dnsbudget_free(b);
}

/* A new window: counts start at 0; names taken in the last window stay
 * free, names unused for a whole window count again. */
static void
test_dnsbudget_window(void)
{
	struct dnsbudget	*b;
	uint64_t		 t0 = 10 * W;

	CU_ASSERT_PTR_NOT_NULL_FATAL(b = dnsbudget_new(key, 100));
	CU_ASSERT_EQUAL(take(b, 0, "a.x", 2, t0), DNSBUDGET_NEW);
	CU_ASSERT_EQUAL(take(b, 0, "b.x", 2, t0 + 1), DNSBUDGET_NEW);
	CU_ASSERT_EQUAL(take(b, 0, "c.x", 2, t0 + W - 1), DNSBUDGET_OVER);
	/* The next minute. */
	CU_ASSERT_EQUAL(take(b, 0, "c.x", 2, t0 + W), DNSBUDGET_NEW);
	CU_ASSERT_EQUAL(take(b, 0, "a.x", 2, t0 + W + 1), DNSBUDGET_SEEN);
	CU_ASSERT_EQUAL(take(b, 0, "d.x", 2, t0 + W + 2), DNSBUDGET_NEW);
	CU_ASSERT_EQUAL(take(b, 0, "e.x", 2, t0 + W + 3), DNSBUDGET_OVER);
	CU_ASSERT_EQUAL(dnsbudget_count(b), 4);
	/* The minute after: b.x was last taken two windows ago, dropped;
	 * a.x, c.x, d.x were taken in the last one. */
	CU_ASSERT_EQUAL(take(b, 0, "a.x", 2, t0 + 2 * W), DNSBUDGET_SEEN);
	CU_ASSERT_EQUAL(dnsbudget_count(b), 3);
	CU_ASSERT_EQUAL(take(b, 0, "b.x", 2, t0 + 2 * W + 1), DNSBUDGET_NEW);
	CU_ASSERT_EQUAL(take(b, 0, "c.x", 2, t0 + 2 * W + 2), DNSBUDGET_SEEN);
	/* After a longer pause, everything counts again. */
	CU_ASSERT_EQUAL(take(b, 0, "a.x", 2, t0 + 5 * W), DNSBUDGET_NEW);
	CU_ASSERT_EQUAL(dnsbudget_count(b), 1);
	/* A clock that goes back changes nothing. */
	CU_ASSERT_EQUAL(take(b, 0, "a.x", 2, t0), DNSBUDGET_SEEN);
	dnsbudget_free(b);

	/* Windows count from the first name, not from the clock's
	 * minutes. */
	CU_ASSERT_PTR_NOT_NULL_FATAL(b = dnsbudget_new(key, 100));
	CU_ASSERT_EQUAL(take(b, 0, "a.x", 1, t0 + W - 10), DNSBUDGET_NEW);
	CU_ASSERT_EQUAL(take(b, 0, "b.x", 1, t0 + W + 10), DNSBUDGET_OVER);
	CU_ASSERT_EQUAL(take(b, 0, "b.x", 1, t0 + 2 * W - 11),
	    DNSBUDGET_OVER);
	CU_ASSERT_EQUAL(take(b, 0, "b.x", 1, t0 + 2 * W - 10), DNSBUDGET_NEW);
	dnsbudget_free(b);
}

/* A new policy: the counts start anew, names seen stay free. */
static void
test_dnsbudget_policy(void)
{
	struct dnsbudget	*b;

	CU_ASSERT_PTR_NOT_NULL_FATAL(b = dnsbudget_new(key, 100));
	CU_ASSERT_EQUAL(take(b, 0, "a.x", 1, 5), DNSBUDGET_NEW);
	CU_ASSERT_EQUAL(take(b, 0, "b.x", 1, 6), DNSBUDGET_OVER);
	CU_ASSERT_EQUAL(dnsbudget_take(b, &gen_b, 0, "a.x", 1, 7, NULL),
	    DNSBUDGET_SEEN);
	CU_ASSERT_EQUAL(dnsbudget_take(b, &gen_b, 0, "b.x", 1, 8, NULL),
	    DNSBUDGET_NEW);
	dnsbudget_free(b);
}

/* The cap: at most cap names, then new ones are refused (fail closed)
 * until a window drops the names no longer used. */
static void
test_dnsbudget_cap(void)
{
	struct dnsbudget	*b;
	char			 name[64];
	size_t			 i;
	uint64_t		 t0 = 3 * W;

	CU_ASSERT_PTR_NOT_NULL_FATAL(b = dnsbudget_new(key, 300));
	/* 300 names over 100 rules, 3 each, within the budget of 5. */
	for (i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "h%zu.r%zu.example", i, i % 100);
		CU_ASSERT_EQUAL(take(b, i % 100, name, 5, t0 + i),
		    DNSBUDGET_NEW);
	}
	CU_ASSERT_EQUAL(dnsbudget_count(b), 300);
	CU_ASSERT_EQUAL(take(b, 7, "new.r7.example", 5, t0 + 400),
	    DNSBUDGET_FULL);
	CU_ASSERT_EQUAL(take(b, 200, "new.r200.example", 5, t0 + 401),
	    DNSBUDGET_FULL);
	/* Seen names still pass. */
	CU_ASSERT_EQUAL(take(b, 0, "h0.r0.example", 5, t0 + 402),
	    DNSBUDGET_SEEN);
	/* Next window: all 300 were taken in the last one, still full. */
	CU_ASSERT_EQUAL(take(b, 7, "new.r7.example", 5, t0 + W),
	    DNSBUDGET_FULL);
	/* Keep 10 of them in use through this window... */
	for (i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "h%zu.r%zu.example", i, i % 100);
		CU_ASSERT_EQUAL(take(b, i % 100, name, 5, t0 + W + 1 + i),
		    DNSBUDGET_SEEN);
	}
	/* ... and the window after drops the other 290. */
	CU_ASSERT_EQUAL(take(b, 7, "new.r7.example", 5, t0 + 2 * W),
	    DNSBUDGET_NEW);
	CU_ASSERT_EQUAL(dnsbudget_count(b), 11);
	CU_ASSERT_EQUAL(take(b, 0, "h5.r5.example", 5, t0 + 2 * W + 1),
	    DNSBUDGET_SEEN);
	CU_ASSERT_EQUAL(take(b, 0, "h15.r15.example", 5, t0 + 2 * W + 2),
	    DNSBUDGET_NEW);
	dnsbudget_free(b);
}

/* Many names: the tables grow and keep every name. */
static void
test_dnsbudget_grow(void)
{
	struct dnsbudget	*b;
	char			 name[64];
	size_t			 i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(b = dnsbudget_new(key, 8192));
	for (i = 0; i < 8192; i++) {
		snprintf(name, sizeof(name), "%zx.example", i);
		if (take(b, i, name, 1, 1) != DNSBUDGET_NEW)
			break;
	}
	CU_ASSERT_EQUAL(i, 8192);
	for (i = 0; i < 8192; i++) {
		snprintf(name, sizeof(name), "%zx.example", i);
		if (take(b, 0, name, 1, 2) != DNSBUDGET_SEEN)
			break;
	}
	CU_ASSERT_EQUAL(i, 8192);
	CU_ASSERT_EQUAL(take(b, 9000, "one.more", 1, 3), DNSBUDGET_FULL);
	dnsbudget_free(b);
}

void
test_dnsbudget_register(void)
{
	CU_pSuite s = CU_add_suite("dnsbudget", NULL, NULL);

	CU_add_test(s, "SipHash-2-4 reference vectors",
	    test_dnsbudget_siphash);
	CU_add_test(s, "distinct names, per rule", test_dnsbudget_distinct);
	CU_add_test(s, "windows roll over", test_dnsbudget_window);
	CU_add_test(s, "a new policy restarts the counts",
	    test_dnsbudget_policy);
	CU_add_test(s, "the cap fails closed", test_dnsbudget_cap);
	CU_add_test(s, "tables grow", test_dnsbudget_grow);
}
