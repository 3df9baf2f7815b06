/*
 * listener.h - the listening sockets of moatd.
 *
 * Static listeners come from the config and are bound once at start-up,
 * before privileges are dropped, and kept across reloads.  A TCP or UDP
 * listener has one socket per worker, all bound to the same address with
 * SO_REUSEPORT, so the kernel spreads the load without a lock; a Unix
 * listener has one socket that every worker watches.
 *
 * Dynamic listeners are sockets a sandbox registration hands over (held
 * sockets bound inside the sandbox's network namespace): one socket,
 * watched by every worker, freed when the last worker lets go of it.
 */
#ifndef MOAT_LISTENER_H
#define MOAT_LISTENER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "policy/policy.h"

struct sandbox;

struct listener_auth {
	char		*user;
	char		*token;		/* wiped before free */
	size_t		 token_len;
};

struct listener {
	enum moat_listen_proto	 proto;
	int			 udp;		/* MOAT_PROTO_DNS over UDP */
	char			*address;	/* for logs */
	struct sandbox		*sb;		/* a reference */
	const char		*sandbox;	/* sb->name */
	char			*unix_path;	/* unlinked at exit, or NULL */
	int			*fds;		/* per worker, or one shared */
	int			 lockfd;	/* this moatd's claim on the
						 * address (listener_claim),
						 * or -1 */
	size_t			 nfds;
	int			 inherits;	/* accepted sockets inherit
						 * TCP_NODELAY and keepalive
						 * (bound here) */
	int			 held;		/* handed over by a registration:
						 * others may hold it too */
	size_t			 connections;	/* its sandbox's open connections
						 * at most (listen[].connections),
						 * or 0: the sandbox's limit */
	enum moat_connect_refusal connect_refusal; /* a refused CONNECT:
						 * its 403 as the answer, or
						 * inside the tunnel
						 * (connect_refusal.c) */
	size_t			 index;		/* a config listener's place in
						 * "listen" (its audit_only),
						 * kept across reloads */
	struct listener_auth	*auth;		/* NULL: no authentication */
	size_t			 nauth;
	atomic_int		 refcnt;
	struct listener		*next;		/* static listeners */
};

/*
 * Binds every listener of cfg ("dns" becomes a UDP and a TCP listener)
 * and reads each auth token.  Listeners naming the same sandbox share one
 * struct sandbox.  Returns the list, or NULL with a message in err (an
 * empty config also returns NULL, with err empty).
 */
struct listener	*listener_bind_all(const struct moat_config *cfg,
		    size_t nworkers, char *err, size_t errlen);
/* Closes the sockets, removes Unix socket files, frees.  NULL is ok. */
void		 listener_free_all(struct listener *l);

/*
 * Wraps a socket handed over by a sandbox registration.  proto is the
 * admin protocol's name ("http", "socks5", "http+socks5", "transparent",
 * "dns-udp", "dns-tcp"); the socket must be of the matching type, bound,
 * and (but for dns-udp) listening.  Takes a reference to sb; the listener
 * starts with one reference and owns fd from here, even on failure.
 * Returns NULL with a message in err.
 */
struct listener	*listener_from_fd(const char *proto, int fd, struct sandbox *sb,
		    char *err, size_t errlen);
struct listener	*listener_ref(struct listener *l);
/* Drops a reference; at zero closes the socket and frees.  Thread-safe. */
void		 listener_unref(struct listener *l);

/*
 * Whether decisions on l's connections are made in audit mode
 * (policy_waive()), by the first of these that says: l's own
 * "audit_only" in the daemon's config cfg (the current one: a reload
 * changes it; a held listener has none), the "audit_only" of sb's own
 * config (a registered sandbox), the top level of cfg.  l and sb may be
 * NULL.
 */
bool		 listener_audit_only(const struct listener *l,
		    const struct sandbox *sb, const struct moat_config *cfg);

/* Looks up an identity's token; returns the entry or NULL. */
const struct listener_auth *listener_auth_find(const struct listener *l,
		    const char *user);

#endif /* MOAT_LISTENER_H */
