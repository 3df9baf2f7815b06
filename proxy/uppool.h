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
 * anything, after timeouts.idle_upstream_ms, and all at once on a reload,
 * a drain, or when their sandbox is unregistered.  At most UPPOOL_MAX per
 * worker; the oldest goes first.
 */
#ifndef MOAT_UPPOOL_H
#define MOAT_UPPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"

struct conn;
struct io;
struct sandbox;
struct tls;
struct worker;

#define UPPOOL_MAX	64	/* idle upstream connections per worker */

/*
 * Parks c->uio if it is fit for another client: its exchange finished
 * cleanly (c->up_clean), nothing is buffered either way, the upstream has
 * not closed, and the worker is not draining.  Returns 1 (c->uio is then
 * NULL) or 0 (c->uio untouched: the caller frees it).
 */
int		 uppool_put(struct conn *c);

/*
 * Takes the newest entry for c's sandbox, tls (NULL: plain HTTP), host and
 * port whose address is one of addrs[0..n) (the ones just judged for this
 * request, from a resolution that honours TTLs: a kept connection never
 * outlives its name's answer).  On success fills c->up_host, up_port,
 * up_addr, up_ip and up_idle_since and returns the io (its callback a
 * no-op until the caller sets its own); NULL if there is none.
 */
struct io	*uppool_take(struct conn *c, struct tls *tls, const char *host,
		    uint16_t port, const struct policy_addr *addrs, size_t n);

/* Closes the entries of sb (NULL: every entry). */
void		 uppool_flush(struct worker *w, struct sandbox *sb);

#endif /* MOAT_UPPOOL_H */
