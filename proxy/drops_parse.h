/*
 * drops_parse.h - one record of a sandbox's drop log, parsed
 * (drops_parse.c): the packet moat's rules dropped, as the NFLOG record
 * the kernel wrote for it tells it.  Pure; linked by moatd (drops.c), the
 * unit tests and the fuzzer.
 */
#ifndef MOAT_DROPS_PARSE_H
#define MOAT_DROPS_PARSE_H

#include <linux/netlink.h>

#include <stdbool.h>
#include <stdint.h>

#include "proto/drops_proto.h"

#define DROPS_ADDR_MAX		46	/* INET6_ADDRSTRLEN */

/* A dropped packet as its record tells it. */
struct drops_pkt {
	unsigned	kind;		/* enum drops_kind */
	int		family;		/* AF_INET, AF_INET6; 0: not IP */
	uint16_t	ethertype;	/* the frame's type (netdev records) */
	int		proto;		/* IP protocol, after IPv6 extension
					   headers; -1 when not IP */
	char		src[DROPS_ADDR_MAX];	/* "" when not IP */
	char		dst[DROPS_ADDR_MAX];
	int		sport, dport;	/* -1: none or not captured */
	int		icmp_type, icmp_code;	/* -1: not ICMP */
	bool		has_seq;
	uint32_t	seq;		/* the record's number (NFULA_SEQ) */
};

/*
 * Parses one netlink message received on a drop log (nlh: nlmsg_len
 * bytes, already checked to lie within what was received).  Returns 1
 * with *p filled for a packet record of one of moat's kinds ("moat:KIND"
 * prefix); 0 for a message that is none (NLMSG_DONE, another type, a
 * record without moat's prefix); -1 for a malformed record.  A packet
 * cut short by the snapshot length fills what it holds (ports -1).
 * Pure: no I/O, no allocation.
 */
int	drops_parse(const struct nlmsghdr *nlh, struct drops_pkt *p);

/*
 * Whether the message at nlh is whole within the left bytes read: the
 * walk over a read of the drop log.  Not libmnl's mnl_nlmsg_ok(), which
 * (1.0.4) compares nlmsg_len as an int and so takes one of 2^31 or more
 * for a fit.
 */
static inline bool
drops_msg_ok(const struct nlmsghdr *nlh, int left)
{
	return left >= (int)sizeof(*nlh) && nlh->nlmsg_len >= sizeof(*nlh) &&
	    nlh->nlmsg_len <= (uint32_t)left;
}

#endif /* MOAT_DROPS_PARSE_H */
