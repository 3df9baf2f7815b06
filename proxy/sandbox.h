/*
 * sandbox.h - a sandbox as moatd sees it: an identity for audit lines, the
 * policy its connections are judged by, and the names moatd's DNS listener
 * gave it, so a redirected connection to an address can be attributed to
 * the name the sandbox asked for (DESIGN.md invariant 5).
 *
 * A sandbox comes from the config (the "sandbox" of a listener; it follows
 * the daemon's policy, reloads included) or from the admin socket (it has
 * a policy of its own and lives as long as the admin connection that
 * registered it).  Listeners, connections and tunnels hold references.
 */
#ifndef MOAT_SANDBOX_H
#define MOAT_SANDBOX_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"
#include "proto/admin_proto.h"
#include "proto/drops_proto.h"
#include "proxy/metrics.h"

#define SANDBOX_ATTR_MAX	4096	/* addresses remembered per sandbox */
#define SANDBOX_ATTR_TTL_MIN_S	5	/* an answer is remembered at least this
					   long: clients connect after the TTL */
#define SANDBOX_DNS_RATE	500	/* DNS queries per second, sustained */
#define SANDBOX_DNS_BURST	1000	/* ... and in a burst */
#define SANDBOX_REFUSAL_RATE	10	/* CONNECT refusals answered inside
					   the tunnel per second (each
					   mints a leaf), sustained */
#define SANDBOX_REFUSAL_BURST	20	/* ... and in a burst */
#define SANDBOX_NAMES_NO_RULE	(SIZE_MAX - 1)	/* the budget of names no
					   rule allowed (audit mode's
					   would-denies); dnsbudget keys
					   it + 1, never 0 */
#define SANDBOX_NAMES_MAX	8192	/* names the wildcard budget remembers
					   (twice limits.dns_wildcard_names'
					   largest value: this window's and
					   the last one's) */

struct dnsbudget;
struct quota_set;
struct sandbox_attrs;
struct sandbox_rate;
struct secrets;
struct secrets_set;

struct sandbox {
	char			 name[ADMIN_NAME_MAX + 1];
	atomic_int		 refcnt;
	atomic_int		 dead;		/* unregistered: end its connections */
	struct moat_config	*cfg;		/* own policy, or NULL: the daemon's */
	struct sandbox_attrs	*attrs;		/* private: attribution table */
	/* DNS query rate: a token bucket, under attrs' mutex. */
	double			 dns_tokens;
	uint64_t		 dns_last_ms;
	uint64_t		 dns_refused;	/* since the last audit of it */
	/* CONNECT refusals inside the tunnel ("connect_refusal":
	 * "in-tunnel"): a token bucket, under attrs' mutex. */
	double			 refusal_tokens;
	uint64_t		 refusal_last_ms;
	/* Secrets: a registered sandbox's own values (or NULL: the
	 * daemon's), and the set (placeholders + scanner) built for them,
	 * swapped under the secrets module's lock. */
	struct secrets		*own_secrets;
	struct secrets_set	*sset;
	/* Rule "rate" buckets, under attrs' mutex. */
	const struct policy	*rate_policy;	/* the policy they count for */
	struct sandbox_rate	*rates;		/* hash chains */
	/* New names under wildcards (dnsbudget.h), under attrs' mutex;
	 * created when first needed. */
	struct dnsbudget	*names;
	/* Open connections and tunnels of this sandbox, all workers, and
	 * those refused at its limit since the last audit line of them
	 * (sandbox_conn_*): atomics, no lock on the accept path. */
	atomic_size_t		 conns;
	atomic_uint_fast64_t	 conns_refused;
	atomic_uint_fast64_t	 conns_audit_ms;	/* that line's time */
	/* Bytes its unfinished request heads hold (conn_head_hold). */
	atomic_size_t		 heads_held;
	/* Its name's place in the metrics (held while sb lives). */
	struct metrics_sb	 msb;
	/* Packets its nftables table dropped that moatd heard of, per
	 * kind, and records lost (drops.c, drops_count()): atomics. */
	atomic_uint_fast64_t	 drops[DROPS_KIND__COUNT];
	atomic_uint_fast64_t	 drops_lost;
	/* What it did since it was made (sandbox_count()), for the admin
	 * op list: relaxed atomics, one add per audit line. */
	uint64_t		 born_ms;	/* util_now_ms() at sandbox_new */
	atomic_uint_fast64_t	 n_allowed;
	atomic_uint_fast64_t	 n_denied;
	atomic_uint_fast64_t	 n_bytes_up;
	atomic_uint_fast64_t	 n_bytes_down;
	atomic_uint_fast64_t	 n_limit_refused;	/* at its limit, in all */
	atomic_uint_fast64_t	 n_would_deny;	/* allowed in audit mode */
	/* Its quotas' counts (quota.h), by kind and name: made by the
	 * first quota it meets, kept across reloads. */
	_Atomic(struct quota_set *) quota;
};

/* A sandbox's counters at one moment (sandbox_counters()). */
struct sandbox_counters {
	uint64_t	age_ms;		/* since it was made */
	uint64_t	conns_open;	/* connections and tunnels now */
	uint64_t	allowed;	/* decisions: request, open, dns lines */
	uint64_t	denied;		/* ... refused, and connections refused
					   at its limit */
	uint64_t	bytes_up;	/* finished requests, closed opaque
					   tunnels */
	uint64_t	bytes_down;
	uint64_t	limit_refused;	/* connections refused at its limit */
	uint64_t	would_deny;	/* allowed decisions that audit mode let
					   through (counted in allowed too) */
	uint64_t	dropped;	/* packets its table dropped that moatd
					   heard of (drops[], every kind) */
};

/*
 * Creates a sandbox with one reference.  cfg (may be NULL) is taken over
 * (the caller's reference moves to the sandbox).  Returns NULL on
 * allocation failure (then cfg is still the caller's).
 */
struct sandbox	*sandbox_new(const char *name, struct moat_config *cfg);
struct sandbox	*sandbox_ref(struct sandbox *sb);
/* Drops a reference; frees at zero.  NULL is ok.  Thread-safe. */
void		 sandbox_unref(struct sandbox *sb);

/*
 * The policy a connection of sb is judged by: its own, or the daemon
 * config's (daemon is the connection's current config).
 */
const struct policy	*sandbox_policy(const struct sandbox *sb,
			    const struct moat_config *daemon);

/*
 * Remembers that moatd's DNS listener answered name with addr for ttl_s
 * seconds.  Thread-safe.  Bounded by SANDBOX_ATTR_MAX: the entry closest to
 * expiry is dropped first.
 */
void	sandbox_attr_add(struct sandbox *sb, const struct policy_addr *addr,
	    const char *name, uint32_t ttl_s);
/*
 * The name moatd answered addr with, most recently, if that answer has not
 * expired: copied into name (size len).  Returns 0, or -1 if none.
 * Thread-safe.
 */
int	sandbox_attr_find(struct sandbox *sb, const struct policy_addr *addr,
	    char *name, size_t len);

/*
 * Takes one DNS query from sb's token bucket.  Returns 1 if the query may
 * be answered, 0 if the sandbox is over SANDBOX_DNS_RATE.  When it returns
 * 1 after refusals, *refused says how many were refused meanwhile (for one
 * audit line), else 0.  Thread-safe.
 */
int	sandbox_dns_take(struct sandbox *sb, uint64_t *refused);

/*
 * Takes one CONNECT refusal answered inside its tunnel from sb's bucket
 * (SANDBOX_REFUSAL_RATE a second, SANDBOX_REFUSAL_BURST at once): each
 * costs a leaf for a name the client chose.  Returns 1 if there was a
 * token, 0 if the refusal must be the plain 403.  Thread-safe.
 */
int	sandbox_refusal_take(struct sandbox *sb);

/*
 * Takes one request from the token bucket of rule r ("rate": requests per
 * per_seconds) for this sandbox.  Returns 1 if the rule has no rate or a
 * token was left, 0 if the rule's rate is used up.  Buckets belong to the
 * policy p: a reload starts them anew.  Thread-safe.
 */
int	sandbox_rate_take(struct sandbox *sb, const struct policy *p,
	    const struct policy_rule *r);

/*
 * Before moatd resolves name for sb: if decision d (of policy p) allowed
 * it through a wildcard (POLICY_F_WILDCARD), takes it from sb's budget of
 * new names per minute and wildcard rule (limit: the daemon config's
 * limits.dns_wildcard_names).  Returns 1 if the name may be resolved, 0
 * if not (reason dns-budget), with why (size len) saying so.  A name sb
 * had resolved in this minute or the last one is free.  The would-denies
 * of audit mode (policy_waive() marks them POLICY_F_WILDCARD) share one
 * budget, whatever rule would refuse them.  Thread-safe.
 */
int	sandbox_names_take(struct sandbox *sb, const struct policy *p,
	    const struct policy_decision *d, const char *name, size_t limit,
	    char *why, size_t len);

/*
 * Connections of sb, counted across workers.  sandbox_conn_take() counts
 * one more if sb has fewer than limit open and returns 1, else returns 0
 * (refuse it: reason limit); sandbox_conn_hold() counts one more without
 * a limit (a connection that becomes a tunnel keeps its place);
 * sandbox_conn_put() gives one back.  sb NULL: no-ops (take returns 1).
 * Thread-safe, lock-free.
 */
int	sandbox_conn_take(struct sandbox *sb, size_t limit);
void	sandbox_conn_hold(struct sandbox *sb);
void	sandbox_conn_put(struct sandbox *sb);

struct audit_rec;

/*
 * Counts audit line r for sb (NULL: nothing), where it is emitted: a
 * "request", "open" or "dns" line is one decision (allowed or denied by
 * its verdict; an allowed one with would_deny also a would-deny); a
 * "connection" line stands for r->refused connections
 * refused at the limit (denied); "request" and "close" lines add their
 * bytes.  An inspected tunnel's "close" line is not counted (its bytes
 * are its requests'): its caller does not call this.  Other events count
 * nothing.  Thread-safe, lock-free.
 */
void	sandbox_count(struct sandbox *sb, const struct audit_rec *r);
/* sb's counters now (each read on its own: a snapshot, not a cut). */
void	sandbox_counters(const struct sandbox *sb,
	    struct sandbox_counters *out);

#define SANDBOX_REFUSED_AUDIT_MS 1000	/* at most one line of refusals at
					   the limit per sandbox this often */

/*
 * Counts one connection refused at sb's limit.  Returns how many refusals
 * (this one included) the caller writes one audit line for now, or 0 if a
 * line was written less than SANDBOX_REFUSED_AUDIT_MS ago: they wait for
 * sandbox_conn_refusals_due().  The first refusal after a quiet second is
 * audited at once.  Thread-safe: of workers refusing at once, one writes.
 */
uint64_t sandbox_conn_refused(struct sandbox *sb, uint64_t now_ms);
/*
 * The refusals still waiting for a line, if the last line is at least
 * SANDBOX_REFUSED_AUDIT_MS old (then the caller writes it), else 0.
 */
uint64_t sandbox_conn_refusals_due(struct sandbox *sb, uint64_t now_ms);

#endif /* MOAT_SANDBOX_H */
