/*
 * uppool.h - idle upstream connections a worker keeps for the next client
 * connection of the same sandbox.
 *
 * A forward-proxied HTTP exchange, or an intercepted HTTPS one, ends with
 * the upstream connection still good (keep-alive, the response read to its
 * end) while the client goes away.  Instead of closing it, the worker
 * parks it here, and the next request of the same sandbox for the same
 * host and port takes it: no DNS, no connect, and for HTTPS no new TLS
 * handshake and certificate verification towards the origin.
 *
 * What makes an entry match (all of it): the same sandbox (object and
 * identity name), the same TLS context (so the same trusted roots; NULL
 * for plain HTTP), the same host as the client named it (for HTTPS the
 * name the upstream certificate was verified for) and the same port.  The
 * caller still judges the entry's address with the current policy before
 * using it, exactly as for a connection kept by one client.
 *
 * Entries leave the pool when taken, when the upstream closes or sends
 * anything, after their idle timeout (timeouts.idle_upstream_ms), and all
 * at once on a reload, a drain, or when their sandbox is unregistered.
 * At most UPPOOL_MAX per pool (one per worker); the oldest goes first.
 *
 * The pool knows no connection: its callers (conn_pool_put(),
 * conn_take_pooled() in conn.c) decide whether an upstream may be kept at
 * all (its exchange ended cleanly, the worker is not draining, an HTTPS
 * session was verified for the tunnel's host under the worker's current
 * roots) and describe it in a struct uppool_ent; the pool checks the io
 * itself (nothing buffered, no EOF, TLS finished) and the sandbox.
 */
#ifndef MOAT_UPPOOL_H
#define MOAT_UPPOOL_H

#include <sys/queue.h>

#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"

struct event_base;
struct io;
struct sandbox;
struct tls;
struct uppool_entry;

#define UPPOOL_MAX	64	/* idle upstream connections per pool */

/* One worker's pool (entries newest first).  Only its thread uses it. */
struct uppool {
	struct event_base	*base;		/* idle timers */
	TAILQ_HEAD(uppool_head, uppool_entry) entries;
	size_t			 n;
};

/*
 * A kept upstream connection as callers see it.  The key (all of it must
 * match): sb (NULL: none) and its identity name sandbox (NULL: ""), the
 * TLS context the session was verified under (NULL: plain), host as the
 * client named it (HTTPS: the name verified) and port.  Then where it
 * leads (addr, and ip as text for logs), since when it is idle (ms,
 * util_now_ms()) and how long it may stay so.
 */
struct uppool_ent {
	struct sandbox		*sb;
	const char		*sandbox;
	struct tls		*tls;
	const char		*host;
	uint16_t		 port;
	struct policy_addr	 addr;
	char			 ip[64];
	uint64_t		 idle_since;
	uint64_t		 idle_ms;
};

/* An empty pool whose timers run on base. */
void		 uppool_init(struct uppool *p, struct event_base *base);

/*
 * Parks io as e says (put reads every field; sb and tls get references of
 * their own) if it is fit for another client: nothing is buffered either
 * way, the upstream has not closed, a TLS io's handshake is done and e
 * names its context (a plain io's e->tls is NULL), sb is not unregistered,
 * and idle_ms has not passed since idle_since.  Returns 1 (the pool owns
 * io and watches it) or 0 (io untouched: the caller frees it).
 */
int		 uppool_put(struct uppool *p, const struct uppool_ent *e,
		    struct io *io);

/*
 * Takes the newest entry matching e's key whose address is one of
 * addrs[0..n) (the ones just judged for this request, from a resolution
 * that honours TTLs: a kept connection never outlives its name's
 * answer).  On success fills e->addr, ip, idle_since and idle_ms and
 * returns the io (its callback a no-op until the caller sets its own);
 * NULL if there is none.
 */
struct io	*uppool_take(struct uppool *p, struct uppool_ent *e,
		    const struct policy_addr *addrs, size_t n);

/* Closes the entries of sb (NULL: every entry). */
void		 uppool_flush(struct uppool *p, struct sandbox *sb);

#endif /* MOAT_UPPOOL_H */
