/*
 * drops_parse.c - the parser of one record of a sandbox's drop log
 * (drops_parse.h): the NFLOG record the kernel writes for a packet moat's
 * rules dropped, and the headers of that packet.
 *
 * What it is: pure.  libnetfilter_log checks the record's attributes (and
 * this file that they fill the message, none cut short); the packet's
 * bytes are the sandbox's own, so every header is read within what was
 * captured, at most DROPS_IP6_EXT_MAX IPv6 extension headers are walked,
 * and a packet cut short keeps what it has (ports -1).
 *
 * What it is not: a judge.  It says what was dropped; the audit line and
 * the counts are drops.c's.  Fuzzed by tests/fuzz/fuzz_drops.c.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_log.h>
#include <linux/netlink.h>
#include <netinet/in.h>

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <libmnl/libmnl.h>
#include <libnetfilter_log/libnetfilter_log.h>

#include "proxy/drops_parse.h"

#define DROPS_IP6_EXT_MAX	8	/* IPv6 extension headers walked */
#define DROPS_ETH_HLEN		14	/* struct ethhdr */

static int	drops_kind(const char *prefix);
static void	drops_l4(const uint8_t *b, size_t n, struct drops_pkt *p);
static void	drops_ip4(const uint8_t *b, size_t n, struct drops_pkt *p);
static void	drops_ip6(const uint8_t *b, size_t n, struct drops_pkt *p);
static void	drops_packet(const uint8_t *b, size_t n, int nfproto,
		    uint16_t hwproto, struct drops_pkt *p);
static bool	drops_attrs_whole(const struct nlmsghdr *nlh);

/* The kind of a record's prefix ("moat:udp"), or -1 if not moat's. */
static int
drops_kind(const char *prefix)
{
	unsigned	k;

	if (STRNCMP_LIT(prefix, DROPS_PREFIX) != 0)
		return -1;
	prefix += LIT_LEN(DROPS_PREFIX);
	for (k = 0; k < DROPS_KIND__COUNT; k++)
		if (strcmp(prefix, drops_kind_name(k)) == 0)
			return (int)k;
	return -1;
}

/* Ports or ICMP type of the transport header at b (n bytes captured). */
static void
drops_l4(const uint8_t *b, size_t n, struct drops_pkt *p)
{
	switch (p->proto) {
	case IPPROTO_TCP:
	case IPPROTO_UDP:
	case IPPROTO_UDPLITE:
	case IPPROTO_SCTP:
	case IPPROTO_DCCP:
		if (n >= 4) {
			p->sport = (b[0] << 8) | b[1];
			p->dport = (b[2] << 8) | b[3];
		}
		break;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		if (n >= 2) {
			p->icmp_type = b[0];
			p->icmp_code = b[1];
		}
		break;
	default:
		break;
	}
}

static void
drops_ip4(const uint8_t *b, size_t n, struct drops_pkt *p)
{
	size_t	hl;

	if (n < 20 || (b[0] >> 4) != 4 || (hl = (size_t)(b[0] & 0xf) * 4) <
	    20)
		return;
	p->family = AF_INET;
	p->proto = b[9];
	inet_ntop(AF_INET, b + 12, p->src, sizeof(p->src));
	inet_ntop(AF_INET, b + 16, p->dst, sizeof(p->dst));
	/* A fragment but the first carries no transport header. */
	if (((b[6] & 0x1f) << 8 | b[7]) != 0 || hl > n)
		return;
	drops_l4(b + hl, n - hl, p);
}

static void
drops_ip6(const uint8_t *b, size_t n, struct drops_pkt *p)
{
	size_t	off = 40, len;
	int	nh, i;

	if (n < 40 || (b[0] >> 4) != 6)
		return;
	p->family = AF_INET6;
	inet_ntop(AF_INET6, b + 8, p->src, sizeof(p->src));
	inet_ntop(AF_INET6, b + 24, p->dst, sizeof(p->dst));
	nh = b[6];
	for (i = 0; i < DROPS_IP6_EXT_MAX; i++) {
		if (nh != IPPROTO_HOPOPTS && nh != IPPROTO_ROUTING &&
		    nh != IPPROTO_DSTOPTS && nh != IPPROTO_FRAGMENT &&
		    nh != IPPROTO_AH)
			break;
		if (off + 8 > n) {
			p->proto = nh;	/* the rest was not captured */
			return;
		}
		if (nh == IPPROTO_FRAGMENT) {
			/* Not the first fragment: no transport header. */
			if ((((b[off + 2] << 8) | b[off + 3]) & 0xfff8) != 0) {
				p->proto = b[off];
				return;
			}
			len = 8;
		} else if (nh == IPPROTO_AH)
			len = ((size_t)b[off + 1] + 2) * 4;
		else
			len = ((size_t)b[off + 1] + 1) * 8;
		nh = b[off];
		off += len;
	}
	p->proto = nh;
	if (off <= n)
		drops_l4(b + off, n - off, p);
}

/*
 * The packet: from its network header for the inet hooks; a netdev
 * record (egress) starts with the link-layer header, which an Ethernet
 * frame of type hwproto is taken to have.
 */
static void
drops_packet(const uint8_t *b, size_t n, int nfproto, uint16_t hwproto,
    struct drops_pkt *p)
{
	p->ethertype = hwproto;
	if (nfproto == NFPROTO_NETDEV && n >= DROPS_ETH_HLEN &&
	    ((b[12] << 8) | b[13]) == hwproto) {
		b += DROPS_ETH_HLEN;
		n -= DROPS_ETH_HLEN;
	}
	if (n > 0 && (b[0] >> 4) == 4 && (hwproto == ETH_P_IP ||
	    nfproto == NFPROTO_IPV4))
		drops_ip4(b, n, p);
	else if (n > 0 && (b[0] >> 4) == 6 && (hwproto == ETH_P_IPV6 ||
	    nfproto == NFPROTO_IPV6))
		drops_ip6(b, n, p);
}

/*
 * The attributes fill the message, none cut short: libmnl's walk stops
 * quietly at the first that runs past the end; a record with one is
 * malformed, not shorter.
 */
static bool
drops_attrs_whole(const struct nlmsghdr *nlh)
{
	const struct nlattr	*a;
	const char		*at, *end = (const char *)nlh + nlh->nlmsg_len;

	at = mnl_nlmsg_get_payload_offset(nlh, sizeof(struct nfgenmsg));
	mnl_attr_for_each(a, nlh, sizeof(struct nfgenmsg))
		at = (const char *)mnl_attr_next(a);
	return at <= end && (size_t)(end - at) < MNL_ALIGNTO;
}

int
drops_parse(const struct nlmsghdr *nlh, struct drops_pkt *p)
{
	struct nlattr				*a[NFULA_MAX + 1];
	const struct nfgenmsg			*g;
	const struct nfulnl_msg_packet_hdr	*ph;
	const char				*prefix;
	uint16_t				 plen;
	int					 k;

	memset(p, 0, sizeof(*p));
	p->proto = p->sport = p->dport = p->icmp_type = p->icmp_code = -1;
	if (nlh->nlmsg_type != ((NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_PACKET))
		return 0;
	if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*g)))
		return -1;
	memset(a, 0, sizeof(a));
	if (!drops_attrs_whole(nlh) || nflog_nlmsg_parse(nlh, a) != MNL_CB_OK)
		return -1;
	g = mnl_nlmsg_get_payload(nlh);
	/* A prefix is a NUL-terminated string inside its attribute. */
	if (a[NFULA_PREFIX] == NULL ||
	    (plen = mnl_attr_get_payload_len(a[NFULA_PREFIX])) == 0)
		return 0;
	prefix = mnl_attr_get_str(a[NFULA_PREFIX]);
	if (prefix[plen - 1] != '\0')
		return -1;
	if ((k = drops_kind(prefix)) == -1)
		return 0;
	p->kind = (unsigned)k;
	if (a[NFULA_PACKET_HDR] == NULL ||
	    mnl_attr_get_payload_len(a[NFULA_PACKET_HDR]) < sizeof(*ph))
		return -1;
	ph = mnl_attr_get_payload(a[NFULA_PACKET_HDR]);
	if (a[NFULA_SEQ] != NULL &&
	    mnl_attr_get_payload_len(a[NFULA_SEQ]) == sizeof(uint32_t)) {
		p->has_seq = true;
		p->seq = ntohl(mnl_attr_get_u32(a[NFULA_SEQ]));
	}
	p->ethertype = ntohs(ph->hw_protocol);
	if (a[NFULA_PAYLOAD] != NULL)
		drops_packet(mnl_attr_get_payload(a[NFULA_PAYLOAD]),
		    mnl_attr_get_payload_len(a[NFULA_PAYLOAD]),
		    g->nfgen_family, ntohs(ph->hw_protocol), p);
	return 1;
}
