/*
 * drops.h - what moatd learns of the packets a sandbox's nftables table
 * drops: the records of its drop log (an NFLOG socket bound in the
 * sandbox's namespace by moat-netns and handed over by `register`,
 * proto/drops_proto.h), counted per kind, and audited as "drop" lines at
 * most DROPS_AUDIT_RATE a second per sandbox, then one line that counts
 * the rest.
 *
 * Counts: the table's counters ("drop-KIND", `nft list counters`) count
 * every drop and are exact.  moatd counts the records it receives: the
 * rules log within a limit (DROPS_LOG_BURST at once, then DROPS_LOG_RATE a
 * second per sandbox), so moatd's counts equal the table's while a
 * sandbox stays within it and are a lower bound past it (a flood).
 * Records the socket could not hold are counted by the gaps in their
 * sequence numbers (drops_lost()), not by kind.
 *
 * Runs in the main thread (admin.c); drops_count() and drops_lost() may
 * be called from any thread.
 */
#ifndef MOAT_DROPS_H
#define MOAT_DROPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/drops_proto.h"
#include "proxy/drops_parse.h"

#define DROPS_AUDIT_RATE	10	/* drop lines a second per sandbox */
#define DROPS_AUDIT_WINDOW_MS	1000	/* ... counted over this */
#define DROPS_DETAIL_MAX	320	/* an audit line's detail, bytes */

struct audit_rec;
struct event_base;
struct sandbox;
struct drops;

/* The text an audit record of drops_audit_rec() points into. */
struct drops_text {
	char	proto[24];
	char	client[DROPS_ADDR_MAX + 16];	/* [address]:port */
	char	detail[DROPS_DETAIL_MAX];
};

/*
 * The audit record of one dropped packet of sandbox `sandbox`: event
 * "drop", proto ("udp", "icmpv6", "ip-N", "arp", ...), client (the
 * source address and port), ip and port (the destination; port absent
 * when the protocol has none), verdict deny, reason dropped-packet, and
 * detail "KIND: why".  *r points into p, sandbox and *t (which the
 * caller keeps until the record is emitted).  Pure.
 */
void	drops_audit_rec(const struct drops_pkt *p, const char *sandbox,
	    struct audit_rec *r, struct drops_text *t);

/*
 * The summary line of sandbox `sandbox` at the end of a window: n
 * packets not written one by one, per kind in by_kind[]
 * (DROPS_KIND__COUNT entries), and lost records, which no kind counts:
 * event "drop", refused n + lost (the packets it stands for), ip null,
 * the counts in detail (in *t).  Pure.
 */
void	drops_summary_rec(const char *sandbox, uint64_t n,
	    const uint64_t *by_kind, uint64_t lost, struct audit_rec *r,
	    struct drops_text *t);

/*
 * Reads sandbox sb's drop log fd (taken over: closed by drops_stop(),
 * or at once on failure) in base's loop.  The descriptor must be a
 * netfilter netlink socket (NFLOG).  Returns the reader, or NULL with
 * err (errlen) saying why.
 */
struct drops	*drops_start(struct event_base *base, struct sandbox *sb,
		    int fd, char *err, size_t errlen);
/*
 * Its sandbox went: reads what is left and, DROPS_LINGER_MS later (the
 * kernel's last batch), what came since, writes the summary line of
 * what waits, closes the socket and frees d.  NULL is ok.
 */
void		 drops_stop(struct drops *d);
/*
 * Reads what arrived and writes the summary line of what waits now (a
 * watch that ends has every line).  NULL is ok.
 */
void		 drops_drain(struct drops *d);
/* moatd stops: the lingering readers end now (waiting at most
 * DROPS_LINGER_MS in all for their last batches). */
void		 drops_shutdown(void);

/*
 * For the metrics: the packets of kind (enum drops_kind) dropped by sb's
 * table that moatd received records of, and the records lost (not by
 * kind).  0 for a sandbox without a drop log.  Thread-safe, lock-free.
 */
uint64_t	 drops_count(const struct sandbox *sb, unsigned kind);
uint64_t	 drops_lost(const struct sandbox *sb);

#endif /* MOAT_DROPS_H */
