/*
 * dnsbudget.h - how many new names under wildcards one sandbox may have
 * moatd resolve.
 *
 * Resolving a name sends it to the upstream resolver and, through it, to
 * the name's authoritative servers.  Under an allowed "*.example.com" the
 * sandbox chooses the labels, so each new name it has resolved carries up
 * to ~189 bytes of its choice out.  The budget bounds that: per wildcard
 * rule, at most "limit" names not seen recently per window (a minute;
 * windows follow each other from the sandbox's first such name).
 *
 * A name counts once: the set remembers (a keyed 64-bit digest of) every
 * name taken in the current window and the one before, and a name in it
 * passes without counting again.  The set is bounded (cap names); when it
 * is full, new names are refused until the next window drops the names
 * unused for a whole window.
 *
 * Pure: no clock, no lock, no I/O.  The caller passes the time and holds
 * the sandbox's mutex; the digest key comes from the caller (getrandom),
 * so a workload cannot craft names whose digests collide with a name
 * already seen.
 */
#ifndef MOAT_DNSBUDGET_H
#define MOAT_DNSBUDGET_H

#include <stddef.h>
#include <stdint.h>

#define DNSBUDGET_WINDOW_MS	60000	/* the budget is per minute */
#define DNSBUDGET_KEY_BYTES	16

struct dnsbudget;

enum dnsbudget_result {
	DNSBUDGET_SEEN = 0,	/* seen in this window or the last: free */
	DNSBUDGET_NEW,		/* new, counted against the rule */
	DNSBUDGET_OVER,		/* new, and the rule's budget is used up */
	DNSBUDGET_FULL,		/* new, and the set is full (fail closed) */
	DNSBUDGET_NOMEM		/* new, and no memory to remember it */
};

/*
 * A budget remembering at most cap names (1 or more), with the digest
 * key (DNSBUDGET_KEY_BYTES).  Returns NULL on allocation failure.
 */
struct dnsbudget	*dnsbudget_new(const uint8_t *key, size_t cap);
void			 dnsbudget_free(struct dnsbudget *b);

/*
 * Takes name (canonical, NUL-terminated) for the wildcard rule numbered
 * rule of the policy gen (any pointer that changes when the rule numbers
 * do: the counts start anew, the names seen stay), limit names per
 * window, at now_ms.  *used (may be NULL) gets the rule's count in this
 * window after the call.
 */
enum dnsbudget_result	 dnsbudget_take(struct dnsbudget *b, const void *gen,
			    size_t rule, const char *name, unsigned limit,
			    uint64_t now_ms, unsigned *used);

/* Names remembered now (for tests). */
size_t			 dnsbudget_count(const struct dnsbudget *b);

/* SipHash-2-4 of (p, len) under a 16-byte key (exposed for tests). */
uint64_t		 dnsbudget_digest(const uint8_t *key, const void *p,
			    size_t len);

#endif /* MOAT_DNSBUDGET_H */
