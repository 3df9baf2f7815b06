/*
 * quota.h - quotas: bytes a sandbox sends upstream per window (a rule's
 * "quota", and its policy's "quota" for everything it sends), and
 * requests per window that may carry a secret (a secret's "quota").
 *
 * Each quota is a fixed window of per_seconds that starts with the first
 * byte or request counted after the last one ended, and a count of what
 * was counted in it.  Bytes are counted before they go, a read of the
 * client's at a time: a read that would take the count past the limit
 * does not go, and the tunnel or request it belongs to is cut.  A window
 * is used up once the count reaches the limit: then new connections and
 * requests the quota covers are refused (quota-bytes, quota-secret)
 * until the window ends.  So what a window lets out stays within the
 * limit, but for one thing: at a window's turn, a read another worker
 * counts at the same instant may be forgotten.  A count is a few atomics
 * and moves with one atomic add: workers count the same quota at once
 * without a lock.
 *
 * The counts live in the sandbox (struct sandbox's quota set), keyed by
 * kind and name (a rule's name, a secret's name, "" for the policy's
 * own), so a reload that keeps a name keeps its count, a changed limit
 * applying to it at once; a registered sandbox's counts live as long as
 * its registration.  The first time a window is seen used up, one
 * "quota" audit line says so (sandbox, rule or secret, limit, window,
 * count).
 *
 * The window arithmetic (struct quota_ctr) is pure: it takes the time
 * from its caller, for the unit tests.
 */
#ifndef MOAT_QUOTA_H
#define MOAT_QUOTA_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"

struct sandbox;

#define QUOTA_ENTRIES_MAX	4096	/* counts one sandbox keeps; past it
					   a count whose window ended makes
					   room, else the quota refuses */

/* What a quota counts, and the metrics' "kind" label of its refusals. */
enum quota_kind {
	QUOTA_RULE = 0,		/* a rule's bytes_up */
	QUOTA_SANDBOX,		/* policy.quota: the sandbox's bytes_up */
	QUOTA_SECRET,		/* a secret's requests */
	QUOTA__KINDS
};

/* "rule", "sandbox" or "secret". */
const char	*quota_kind_name(enum quota_kind k);

/* ------------------------------------------------------------------ */
/* One count in its window (pure)                                      */
/* ------------------------------------------------------------------ */

struct quota_ctr {
	atomic_uint_fast64_t	start_ms;	/* the window began; 0: never */
	atomic_uint_fast64_t	used;		/* counted in it */
	atomic_uint_fast64_t	told_ms;	/* the window whose end of
						   room was audited */
};

/* A count with no window yet. */
void		quota_ctr_init(struct quota_ctr *q);
/*
 * What was counted in the window that holds now_ms (a window of per_ms
 * ended: a new one starts, at 0).  *start (may be NULL) gets the
 * window's start.  now_ms must not be 0.
 */
uint64_t	quota_ctr_used(struct quota_ctr *q, uint64_t per_ms,
		    uint64_t now_ms, uint64_t *start);
/*
 * What was counted in the window that holds now_ms, without starting one
 * (0 if none runs): for checks that count nothing.
 */
uint64_t	quota_ctr_peek(struct quota_ctr *q, uint64_t per_ms,
		    uint64_t now_ms, uint64_t *start);
/* Counts n more in the window of now_ms; returns the count after. */
uint64_t	quota_ctr_add(struct quota_ctr *q, uint64_t n, uint64_t per_ms,
		    uint64_t now_ms, uint64_t *start);
/*
 * One request: counted and true if the window of now_ms had fewer than
 * limit; false (nothing counted) if it was used up.
 */
bool		quota_ctr_take(struct quota_ctr *q, uint64_t limit,
		    uint64_t per_ms, uint64_t now_ms, uint64_t *start);
/* Gives one request back (never below 0). */
void		quota_ctr_put(struct quota_ctr *q);
/*
 * The window that began at start was seen used up: true for the one
 * caller that audits it, once per window.
 */
bool		quota_ctr_claim(struct quota_ctr *q, uint64_t start);

/* ------------------------------------------------------------------ */
/* A sandbox's counts                                                  */
/* ------------------------------------------------------------------ */

struct quota_ent;
struct quota_set;

/* Frees a sandbox's counts (the sandbox is going: no hold is left).
 * NULL ok. */
void	quota_set_free(struct quota_set *s);

/*
 * The byte quotas one connection counts against: its rule's and its
 * sandbox's, for the request or tunnel it is admitted for.  A zeroed
 * hold holds nothing.  The hold keeps its counts alive; the sandbox must
 * outlive it (the holder has a reference).
 */
#define QUOTA_HOLD_MAX	2
struct quota_hold {
	struct sandbox		*sb;			/* borrowed */
	struct quota_ent	*ent[QUOTA_HOLD_MAX];	/* held */
	uint64_t		 limit[QUOTA_HOLD_MAX];
	uint64_t		 per_ms[QUOTA_HOLD_MAX];
	unsigned		 n;
	enum quota_kind		 over;	/* the one used up, after a refusal */
};

/*
 * Admits a request or tunnel of sandbox sb allowed by rule r (NULL: no
 * rule) of policy p: lets go of what h held, then holds the counts of
 * r's quota and p's.  Returns true if each has room left in its window;
 * false (h holds nothing, h->over says which quota) with why (size len)
 * saying so if one is used up, or if its count could not be had (out of
 * memory, QUOTA_ENTRIES_MAX): fail closed.  With no quota it takes no
 * lock.  Thread-safe.
 */
bool	quota_admit(struct quota_hold *h, struct sandbox *sb,
	    const struct policy *p, const struct policy_rule *r, char *why,
	    size_t len);
/*
 * n more bytes are about to go upstream under h: counted.  Returns false
 * if they fit in every quota of h (the count may now have reached a
 * limit: later bytes will not), true if they take one past its limit:
 * they must not go, and the caller cuts what is moving (h->over says
 * which quota, quota_why() in words).  Cheap: one atomic add and a
 * compare per quota held (no quota: none).  Thread-safe.
 */
bool	quota_charge(struct quota_hold *h, uint64_t n);
/* The sentence for a refusal or a cut by h->over, into buf (size len). */
void	quota_why(const struct quota_hold *h, char *buf, size_t len);
/* Lets go of what h holds (h->n is 0 after).  Safe on a zeroed hold. */
void	quota_release(struct quota_hold *h);
/* Moves what src holds to dst (which held nothing); src is zeroed. */
void	quota_hold_move(struct quota_hold *dst, struct quota_hold *src);

/*
 * One request of sb that carries secret name, whose quota is requests
 * per per_s seconds: true if counted, false (with why) if the window is
 * used up or its count could not be had.  quota_secret_put() gives one
 * back (a request refused after it was counted).  Thread-safe.
 */
bool	quota_secret_take(struct sandbox *sb, const char *name,
	    unsigned requests, unsigned per_s, char *why, size_t len);
void	quota_secret_put(struct sandbox *sb, const char *name);
/*
 * Whether secret name's quota has a request left, counting none: false
 * (with why) if it is used up.  For a refusal before anything is dialled;
 * quota_secret_take() still decides when the request goes.
 */
bool	quota_secret_room(struct sandbox *sb, const char *name,
	    unsigned requests, unsigned per_s, char *why, size_t len);

#endif /* MOAT_QUOTA_H */
