/*
 * drops_proto.h - what moat-netns and moatd agree on about the packets a
 * sandbox's nftables table drops: the kinds of drop, the names of their
 * counters in the table, the NFLOG group and prefixes of their records.
 *
 * What it is: constants and names, shared by the side that writes the
 * rules (netns-helper/helper_nft.c) and the side that reads the records
 * (proxy/drops.c).  A kind's name is a label of moatd's metrics and the
 * start of an audit line's "detail", so the names are part of the
 * contract (README, moatd(8), moat-netns(8)).
 *
 * What it is not: a protocol of its own.  The records are the kernel's
 * (nfnetlink_log); the socket that carries them travels by the helper
 * protocol (NSH_OP_DROPS) and the admin protocol ("drops" of register).
 *
 * The table counts every drop in a named counter per kind, "drop-KIND"
 * (`nft list counters` in the sandbox's namespace).  A rule before each
 * counting one logs the packet to NFLOG group DROPS_NFLOG_GROUP with the
 * prefix "moat:KIND", DROPS_SNAPLEN bytes of it, within one limit per
 * table (DROPS_LOG_RATE a second, DROPS_LOG_BURST at once), so a flood
 * bounds the records but never the counts.
 */
#ifndef MOAT_DROPS_PROTO_H
#define MOAT_DROPS_PROTO_H

/*
 * The NFLOG group of a sandbox's drop records ("mo").  Groups are per
 * network namespace, and a sandbox has a namespace of its own: the same
 * number serves every sandbox.
 */
#define DROPS_NFLOG_GROUP	0x6d6f
#define DROPS_SNAPLEN		128	/* bytes of a dropped packet logged:
					   network and transport headers */
#define DROPS_LOG_RATE		100	/* records a second, per table */
#define DROPS_LOG_BURST		1000	/* ... and at once */
#define DROPS_PREFIX		"moat:"	/* of each record's NFLOG prefix */
#define DROPS_COUNTER		"drop-"	/* of each counter's name */
#define DROPS_LIMIT		"drop-log" /* the limit object of the log */

enum drops_kind {
	DROPS_UDP = 0,		/* UDP but DNS (which is redirected) */
	DROPS_ICMP,		/* ICMP, ICMPv6 */
	DROPS_TCP,		/* TCP the rules did not redirect */
	DROPS_OTHER_PROTO,	/* any other IP protocol (SCTP, GRE, ...) */
	DROPS_INTERFACE,	/* would leave by an interface not moat's */
	DROPS_FORWARD,		/* routed through the namespace */
	DROPS_EGRESS,		/* a frame a packet socket sent (netdev) */
	DROPS_LOOPBACK_PORT,	/* a TCP connection to a loopback port
				   nothing listens on (refused by the
				   kernel: counted, not dropped) */
	DROPS_KIND__COUNT
};

/* The kind's name ("udp", ...), or NULL for a value out of range. */
static inline const char *
drops_kind_name(unsigned k)
{
	switch (k) {
	case DROPS_UDP:
		return "udp";
	case DROPS_ICMP:
		return "icmp";
	case DROPS_TCP:
		return "tcp";
	case DROPS_OTHER_PROTO:
		return "other-proto";
	case DROPS_INTERFACE:
		return "interface";
	case DROPS_FORWARD:
		return "forward";
	case DROPS_EGRESS:
		return "egress";
	case DROPS_LOOPBACK_PORT:
		return "loopback-port";
	default:
		return NULL;
	}
}

#endif /* MOAT_DROPS_PROTO_H */
