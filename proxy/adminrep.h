/*
 * adminrep.h - the answers of the admin ops list and stats
 * (proto/admin_proto.h): what admin.c knows of each sandbox and of moatd,
 * as JSON.  Pure (jansson only, no clock, no socket): admin.c takes the
 * snapshot, this shapes and pages it, the unit tests check both.
 *
 * Nothing here can carry a secret: a sandbox's secrets are given by name
 * only, and there is no field for a value or a placeholder.
 */
#ifndef MOAT_ADMINREP_H
#define MOAT_ADMINREP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "proxy/sandbox.h"

#define ADMINREP_LISTENERS_MAX	16	/* listeners shown per sandbox */
#define ADMINREP_SECRETS_MAX	64	/* secret names shown per sandbox */

/* One listener of a sandbox: its admin-protocol kind and its address. */
struct adminrep_listener {
	const char	*proto;		/* "http+socks5", "dns-udp", ... */
	const char	*address;	/* "127.0.0.1:3128", "unix:/run/x" */
};

/* One sandbox as list shows it; every pointer borrowed. */
struct adminrep_sandbox {
	const char			*name;
	bool				 registered;	/* admin socket, else a
							   configured
							   listener's */
	bool				 own_policy;
	long				 client_pid;	/* who registered it, or
							   -1 */
	size_t				 limit;		/* its open connections
							   at most */
	const struct adminrep_listener	*ls;
	size_t				 nls;
	const char *const		*secrets;	/* names */
	size_t				 nsecrets;
	struct sandbox_counters		 c;
};

/*
 * The list answer for sbs[0..n) (reordered: sorted by name): {"ok":
 * true, "sandboxes": [...]} with the sandboxes whose names sort after
 * `after` (NULL: from the first), as many as fit in budget bytes of
 * compact JSON; "more": K when K sandboxes were left for the next page
 * (asked for with "after": the last name of this one).  At least one is
 * given whatever the budget.  Returns a new reference, or NULL when out
 * of memory.
 */
json_t	*adminrep_list(struct adminrep_sandbox *sbs, size_t n,
	    const char *after, size_t budget);

/* One sandbox's object in the list answer: new reference or NULL. */
json_t	*adminrep_sandbox(const struct adminrep_sandbox *s);

/* moatd as stats shows it. */
struct adminrep_stats {
	const char	*version;
	long		 pid;
	const char	*config;		/* the file, as messages name it */
	uint64_t	 uptime_ms;
	size_t		 workers;
	size_t		 registered;		/* sandboxes */
	size_t		 configured;
	size_t		 admin_clients;		/* admin connections */
	size_t		 watches;
	uint64_t	 conns_open;
	size_t		 conns_limit;
	uint64_t	 audit_queued_bytes;
	uint64_t	 audit_dropped;		/* since start */
	bool		 audit_ok;
	uint64_t	 reloads;		/* done */
	uint64_t	 reloads_refused;
};

/* {"ok": true, "moatd": {...}}: new reference, or NULL. */
json_t	*adminrep_stats(const struct adminrep_stats *st);

#endif /* MOAT_ADMINREP_H */
