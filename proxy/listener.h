/*
 * listener.h - the listening sockets of moatd, bound once at start-up
 * (before privileges are dropped) and kept across reloads.
 *
 * A TCP listener has one socket per worker, all bound to the same address
 * with SO_REUSEPORT, so the kernel spreads connections over the workers
 * without a lock.  A Unix listener has one socket that every worker
 * watches.
 */
#ifndef MOAT_LISTENER_H
#define MOAT_LISTENER_H

#include <stddef.h>

#include "policy/policy.h"

struct listener_auth {
	char		*user;
	char		*token;		/* wiped before free */
	size_t		 token_len;
};

struct listener {
	enum moat_listen_proto	 proto;
	char			*address;	/* as configured, for logs */
	char			*sandbox;	/* identity in audit lines */
	char			*unix_path;	/* unlinked at exit, or NULL */
	int			*fds;		/* TCP: nworkers; unix: 1 */
	size_t			 nfds;
	struct listener_auth	*auth;		/* NULL: no authentication */
	size_t			 nauth;
	struct listener		*next;
};

/*
 * Binds every listener of cfg: nworkers sockets per TCP address, one per
 * Unix path (an existing socket file at the path is replaced only if no
 * one is listening on it; the mode is applied).  Reads each auth token
 * (file or environment).  Returns the list, or NULL with a message in err.
 */
struct listener	*listener_bind_all(const struct moat_config *cfg,
		    size_t nworkers, char *err, size_t errlen);
/* Closes the sockets, removes Unix socket files, frees.  NULL is ok. */
void		 listener_free_all(struct listener *l);
/* Looks up an identity's token; returns the entry or NULL. */
const struct listener_auth *listener_auth_find(const struct listener *l,
		    const char *user);

#endif /* MOAT_LISTENER_H */
