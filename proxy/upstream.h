/*
 * upstream.h - non-blocking TCP connect to a list of checked addresses,
 * each tried in turn until one answers, each attempt with its own timeout.
 *
 * The addresses are the ones the policy allowed from one resolution;
 * nothing here resolves or re-checks anything.
 */
#ifndef MOAT_UPSTREAM_H
#define MOAT_UPSTREAM_H

#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"

struct event_base;
struct upstream_connect;

/*
 * Called once with the connected socket (non-blocking, close-on-exec,
 * TCP_NODELAY; the callee owns it) and the index of the address used, or
 * with fd -1, idx of the last address tried, and err: the errno of the last
 * attempt (ETIMEDOUT when an attempt timed out).
 */
typedef void	upstream_cb(int fd, size_t idx, int err, void *arg);

/*
 * Starts connecting to addrs[0..n) on port.  The callback is always
 * called later from the event loop, never from inside this function.
 * Returns a handle for upstream_connect_cancel(), or NULL with errno on
 * allocation failure (no callback then).
 */
struct upstream_connect	*upstream_connect_start(struct event_base *base,
			    const struct policy_addr *addrs, size_t n,
			    uint16_t port, unsigned timeout_ms, upstream_cb *cb,
			    void *arg);
/* Stops a pending connect: no callback, socket closed.  NULL is ok. */
void			 upstream_connect_cancel(struct upstream_connect *uc);

/*
 * 1 if err says this host, not the upstream, is short of something
 * (descriptors, socket buffers, memory): audited "internal", never
 * "upstream-unreachable".  A callback gets such an err when socket(2)
 * failed; the other addresses are not tried, they would fail the same.
 */
int			 upstream_err_local(int err);

/* Fills a sockaddr for addr:port.  Returns its length. */
socklen_t		 upstream_sockaddr(const struct policy_addr *addr,
			    uint16_t port, struct sockaddr_storage *ss);

#endif /* MOAT_UPSTREAM_H */
