/*
 * resolver.h - asynchronous name resolution for one worker: a c-ares
 * channel driven by the worker's event base, in front of a bounded cache
 * that honours TTLs and merges concurrent lookups of the same name.
 *
 * There is no blocking resolver anywhere in moatd.  Every address a
 * lookup returns is checked against the policy by the caller before it is
 * dialled, and the caller dials only addresses from that same answer
 * (DESIGN.md invariant 2): nothing here is looked up twice for one
 * decision.
 */
#ifndef MOAT_RESOLVER_H
#define MOAT_RESOLVER_H

#include <stddef.h>

#include "policy/policy.h"

struct event_base;
struct resolver;
struct resolver_query;

#define RESOLVER_MAX_ADDRS	16	/* addresses kept per name */
#define RESOLVER_MAX_TTL_S	3600	/* longest time an answer is cached */
#define RESOLVER_NEG_TTL_S	5	/* how long "no such name" is cached */

enum resolver_status {
	RESOLVER_OK = 0,	/* naddrs >= 1 */
	RESOLVER_NXDOMAIN,	/* the name does not exist or has no A/AAAA */
	RESOLVER_FAIL		/* servers failed, timed out or were unreachable */
};

struct resolver_result {
	enum resolver_status	status;
	const char		*error;		/* static text for logs when not OK */
	uint32_t		 ttl;		/* seconds the answer stays valid */
	size_t			 naddrs;
	struct policy_addr	 addrs[RESOLVER_MAX_ADDRS];	/* AAAA and A, in c-ares order */
};

/*
 * Creates a resolver on base.  servers is a NULL-terminated list of
 * "IP", "IP:PORT" or "[V6]:PORT" strings, or NULL for the system's
 * resolv.conf.  Search domains are never applied.  Returns NULL and writes
 * a message into err on failure.
 */
struct resolver	*resolver_new(struct event_base *base, char *const *servers,
		    unsigned tries, unsigned timeout_ms, size_t cache_entries,
		    char *err, size_t errlen);
/*
 * Frees the resolver.  Pending queries are cancelled without their
 * callbacks being called; their owners must not touch them afterwards.
 */
void		 resolver_free(struct resolver *r);

/*
 * Looks up the A and AAAA records of name (a canonical DNS name).
 * Returns 1 when the answer came from the cache: *res is filled, cb is
 * never called.  Returns 0 when a lookup is under way: *qp is set and cb
 * is called once, later, from the event loop, unless resolver_cancel(*qp)
 * is called first.  Returns -1 on allocation failure.
 */
int		 resolver_lookup(struct resolver *r, const char *name,
		    void (*cb)(const struct resolver_result *, void *), void *arg,
		    struct resolver_result *res, struct resolver_query **qp);
/* Cancels a pending query: its callback will not be called.  NULL ok. */
void		 resolver_cancel(struct resolver_query *q);

/*
 * Replaces the servers (a reload).  c-ares refuses while queries are
 * pending, so the change waits until the channel is idle; the cache is
 * emptied when it applies.  Returns 0, or -1 for allocation failure.
 */
int		 resolver_set_servers(struct resolver *r, char *const *servers);

/* Number of names cached (for tests and stats). */
size_t		 resolver_cache_size(const struct resolver *r);

#endif /* MOAT_RESOLVER_H */
