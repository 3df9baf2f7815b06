/*
 * helper_nft.c - the nftables tables moat owns, built with libnftnl and sent
 * with libmnl as one transaction each.
 *
 * What it is: three rulesets (held sandbox, veth sandbox, veth host side),
 * each written as "add table; delete table; add table, chains, rules" in a
 * single batch, so the kernel applies all of it or none of it and no
 * half-applied ruleset ever exists (relayd pfe_filter.c keeps an anchor of
 * its own the same way); plus listing and deleting moat's tables.
 *
 * What it is not: nft.  No text is parsed and no program is run; the
 * expressions below are the ones nft itself would generate for the rules
 * written in the comments.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/if_ether.h>

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libmnl/libmnl.h>
#include <libnftnl/batch.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/object.h>
#include <libnftnl/rule.h>
#include <libnftnl/table.h>
#include <libnftnl/udata.h>

#include "netns-helper/helper.h"
#include "proto/drops_proto.h"
#include "proto/helper_proto.h"

#define NSH_NFT_PAGE		65536	/* batch page: all of a table fits */
#define NSH_NFT_IOV_MAX		8	/* pages of one batch */
#define NSH_NFT_RECV_BUF	32768	/* one read of acks or of a dump */
#define NSH_NFT_PRIO_NAT	(-100)	/* NF_IP_PRI_NAT_DST */
#define NSH_NFT_PRIO_FILTER	0	/* NF_IP_PRI_FILTER */
#define NSH_NFT_PRIO_SNAT	100	/* NF_IP_PRI_NAT_SRC */
#define NSH_PORTS_MAX_HOST	(NSH_PORTS_MAX + 2) /* listener ports, veth */

/* Offsets of the fields the rules look at. */
#define NSH_IP4_DADDR_OFF	16	/* struct iphdr daddr */
#define NSH_IP6_DADDR_OFF	24	/* struct ip6_hdr ip6_dst */
#define NSH_TH_DPORT_OFF	2	/* tcp/udp destination port */
#define NSH_ICMP6_TYPE_OFF	0	/* icmp6_type */
#define NSH_ND_SOLICIT		135	/* ICMPv6 neighbour solicitation */
#define NSH_ND_ADVERT		136	/* ICMPv6 neighbour advertisement */
#define NSH_ETH_TYPE_OFF	12	/* struct ethhdr h_proto */
#define NSH_TCP_FLAGS_OFF	13	/* the flags byte of struct tcphdr */
#define NSH_TCP_SYN		0x02
#define NSH_TCP_FSRA		0x17	/* fin, syn, rst, ack */
#define NSH_IP6_LLMCAST		0xff02	/* ff02::/16, link-local multicast */
#define NSH_DROP_NAME_MAX	32	/* "drop-KIND", "moat:KIND" */

/*
 * The conntrack mark of the connections moat's own NAT rules redirected
 * ("moat" in ASCII).  Only those may leave the output filter by their
 * NAT state: a DNAT rule the namespace already had makes no such mark.
 */
#define NSH_CT_MARK		0x6d6f6174u

/*
 * A netdev hook spec that names an interface-name prefix rather than an
 * interface: with the empty prefix, every interface of the namespace,
 * those that appear later included.  Newer kernels only (older ones
 * reject the attribute with EINVAL); Debian 12's headers lack the name.
 */
#ifndef NFTA_DEVICE_PREFIX
#define NSH_NFTA_DEVICE_PREFIX	2
#else
#define NSH_NFTA_DEVICE_PREFIX	NFTA_DEVICE_PREFIX
#endif

/* One transaction being built. */
struct nsh_nft_tx {
	struct nftnl_batch	*b;
	uint32_t		 seq;
	unsigned		 nacks;	/* messages that will be acknowledged */
	uint16_t		 family; /* NFPROTO_INET or NFPROTO_NETDEV */
	bool			 failed;	/* an allocation failed */
};

/* One rule being built: the chain it goes to and its expressions. */
struct nsh_nft_rule {
	struct nsh_nft_tx	*tx;
	struct nftnl_rule	*r;
};

struct nsh_nft_list {
	const char	*prefix;
	void		(*fn)(const char *, const char *, void *);
	void		*arg;
};

static int	nsh_nft_tx_begin(struct nsh_nft_tx *tx);
static void	nsh_nft_tx_free(struct nsh_nft_tx *tx);
static int	nsh_nft_tx_commit(struct mnl_socket *nl, struct nsh_nft_tx *tx);
static void	nsh_nft_table(struct nsh_nft_tx *tx, uint16_t type,
		    const char *name, const char *comment);
static void	nsh_nft_replace(struct nsh_nft_tx *tx, const char *name,
		    const char *comment);
static void	nsh_nft_chain(struct nsh_nft_tx *tx, const char *table,
		    const char *name, const char *type, unsigned hook, int prio,
		    unsigned policy);
static void	nsh_nft_rule_start(struct nsh_nft_rule *rb,
		    struct nsh_nft_tx *tx, const char *table,
		    const char *chain);
static void	nsh_nft_rule_end(struct nsh_nft_rule *rb);
static void	nsh_nft_expr(struct nsh_nft_rule *rb, struct nftnl_expr *e);
static void	nsh_nft_meta(struct nsh_nft_rule *rb, unsigned key);
static void	nsh_nft_cmp(struct nsh_nft_rule *rb, unsigned op,
		    const void *data, size_t len);
static void	nsh_nft_payload(struct nsh_nft_rule *rb, unsigned base,
		    unsigned off, unsigned len);
static void	nsh_nft_imm(struct nsh_nft_rule *rb, unsigned reg,
		    const void *data, size_t len);
static void	nsh_nft_verdict(struct nsh_nft_rule *rb, int verdict);
static void	nsh_nft_nfproto(struct nsh_nft_rule *rb, uint8_t proto);
static void	nsh_nft_l4proto(struct nsh_nft_rule *rb, uint8_t proto);
static void	nsh_nft_dport(struct nsh_nft_rule *rb, uint8_t proto,
		    uint16_t port);
static void	nsh_nft_ifname(struct nsh_nft_rule *rb, unsigned key,
		    const char *name);
static void	nsh_nft_daddr4(struct nsh_nft_rule *rb, struct in_addr a,
		    unsigned plen);
static void	nsh_nft_daddr6(struct nsh_nft_rule *rb,
		    const struct in6_addr *a);
static void	nsh_nft_icmp6_type(struct nsh_nft_rule *rb, uint8_t type);
static void	nsh_nft_ct_mark_set(struct nsh_nft_rule *rb);
static void	nsh_nft_ct_mark(struct nsh_nft_rule *rb);
static void	nsh_nft_egress_chain(struct nsh_nft_tx *tx, const char *table,
		    const char *name);
static void	nsh_nft_ether_type(struct nsh_nft_rule *rb, uint16_t type);
static void	nsh_nft_post_filter(struct nsh_nft_tx *tx, const char *sbx_if,
		    int log_group, const uint32_t *exempt_uid);
static void	nsh_nft_gateway_rules(struct nsh_nft_tx *tx, const char *chain,
		    const char *dns_oif, const char *sbx_if,
		    const struct nsh_veth_addrs *a);
static void	nsh_nft_redirect(struct nsh_nft_rule *rb, uint16_t port);
static void	nsh_nft_dnat(struct nsh_nft_rule *rb, int family,
		    const void *addr, uint16_t port);
static void	nsh_nft_snat(struct nsh_nft_rule *rb, int family,
		    const void *addr);
static void	nsh_nft_loopback_rules(struct nsh_nft_tx *tx,
		    const char *table, const char *chain, int verdict);
static void	nsh_nft_obj(struct nsh_nft_tx *tx, const char *table,
		    uint32_t type, const char *name);
static void	nsh_nft_drop_objs(struct nsh_nft_tx *tx, int log_group);
static void	nsh_nft_objref(struct nsh_nft_rule *rb, uint32_t type,
		    const char *name);
static void	nsh_nft_log(struct nsh_nft_rule *rb, uint16_t group,
		    const char *prefix);
static void	nsh_nft_drop(struct nsh_nft_tx *tx, const char *chain,
		    unsigned kind, void (*match)(struct nsh_nft_rule *, unsigned),
		    unsigned arg, int log_group, bool drop);
static void	nsh_nft_match_l4(struct nsh_nft_rule *rb, unsigned proto);
static void	nsh_nft_match_lo_syn(struct nsh_nft_rule *rb, unsigned unused);
static void	nsh_nft_drops_out(struct nsh_nft_tx *tx, int log_group);
static void	nsh_nft_filter_in(struct nsh_nft_tx *tx, int log_group);
static void	nsh_nft_exempt(struct nsh_nft_tx *tx, const char *chain,
		    const uint32_t *uid, int verdict);
static int	nsh_nft_list_cb(const struct nlmsghdr *nlh, void *arg);
static int	nsh_nft_comment_cb(const struct nftnl_udata *attr, void *data);

static uint32_t	nsh_nft_seq;

struct mnl_socket *
nsh_nft_open(void)
{
	struct mnl_socket	*nl;
	struct timeval		 tv;
	int			 saved;

	if ((nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC)) == NULL)
		return NULL;
	tv.tv_sec = NSH_NETLINK_TIMEOUT_MS / 1000;
	tv.tv_usec = (NSH_NETLINK_TIMEOUT_MS % 1000) * 1000;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) == -1 ||
	    setsockopt(mnl_socket_get_fd(nl), SOL_SOCKET, SO_RCVTIMEO, &tv,
	    sizeof(tv)) == -1) {
		saved = errno;
		mnl_socket_close(nl);
		errno = saved;
		return NULL;
	}
	if (nsh_nft_seq == 0)
		nsh_nft_seq = (uint32_t)time(NULL);
	return nl;
}

/* --- transactions --------------------------------------------------- */

static int
nsh_nft_tx_begin(struct nsh_nft_tx *tx)
{
	memset(tx, 0, sizeof(*tx));
	if ((tx->b = nftnl_batch_alloc(NSH_NFT_PAGE, MNL_SOCKET_BUFFER_SIZE)) ==
	    NULL)
		return -1;
	tx->seq = ++nsh_nft_seq;
	tx->family = NFPROTO_INET;
	nftnl_batch_begin(nftnl_batch_buffer(tx->b), tx->seq++);
	if (nftnl_batch_update(tx->b) == -1) {
		nsh_nft_tx_free(tx);
		return -1;
	}
	return 0;
}

static void
nsh_nft_tx_free(struct nsh_nft_tx *tx)
{
	if (tx->b != NULL)
		nftnl_batch_free(tx->b);
	tx->b = NULL;
}

/*
 * Ends the batch, sends it and reads one acknowledgement per message.
 * The kernel processes the whole batch and reports every error, then
 * commits all or aborts all.  Returns 0, or -1 with the first error.
 */
static int
nsh_nft_tx_commit(struct mnl_socket *nl, struct nsh_nft_tx *tx)
{
	static char		 buf[NSH_NFT_RECV_BUF];
	struct iovec		 iov[NSH_NFT_IOV_MAX];
	struct sockaddr_nl	 snl;
	struct msghdr		 msg;
	const struct nlmsghdr	*nlh;
	const struct nlmsgerr	*e;
	unsigned		 got = 0;
	ssize_t			 n;
	int			 niov, first = 0, left;

	if (tx->failed) {
		errno = ENOMEM;
		return -1;
	}
	nftnl_batch_end(nftnl_batch_buffer(tx->b), tx->seq++);
	if (nftnl_batch_update(tx->b) == -1)
		return -1;
	niov = nftnl_batch_iovec_len(tx->b);
	if (niov > NSH_NFT_IOV_MAX) {
		errno = E2BIG;
		return -1;
	}
	nftnl_batch_iovec(tx->b, iov, (uint32_t)niov);
	memset(&snl, 0, sizeof(snl));
	snl.nl_family = AF_NETLINK;
	memset(&msg, 0, sizeof(msg));
	msg.msg_name = &snl;
	msg.msg_namelen = sizeof(snl);
	msg.msg_iov = iov;
	msg.msg_iovlen = (size_t)niov;
	if (sendmsg(mnl_socket_get_fd(nl), &msg, 0) == -1)
		return -1;
	while (got < tx->nacks) {
		n = recv(mnl_socket_get_fd(nl), buf, sizeof(buf), 0);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			if (first != 0) {
				errno = first;
				return -1;
			}
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				errno = ETIMEDOUT;
			return -1;
		}
		left = (int)n;
		for (nlh = (const struct nlmsghdr *)buf;
		    mnl_nlmsg_ok(nlh, left);
		    nlh = mnl_nlmsg_next(nlh, &left)) {
			if (nlh->nlmsg_type != NLMSG_ERROR)
				continue;
			if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*e)))
				continue;
			e = mnl_nlmsg_get_payload(nlh);
			got++;
			if (e->error != 0 && first == 0)
				first = -e->error;
			/* An error on the batch markers rejects it all. */
			if (e->error != 0 && (e->msg.nlmsg_type ==
			    NFNL_MSG_BATCH_BEGIN || e->msg.nlmsg_type ==
			    NFNL_MSG_BATCH_END))
				got = tx->nacks;
		}
	}
	if (first != 0) {
		errno = first;
		return -1;
	}
	return 0;
}

static void
nsh_nft_table(struct nsh_nft_tx *tx, uint16_t type, const char *name,
    const char *comment)
{
	struct nftnl_table	*t;
	struct nftnl_udata_buf	*u = NULL;
	struct nlmsghdr		*nlh;
	uint16_t		 flags = NLM_F_ACK;

	if ((t = nftnl_table_alloc()) == NULL) {
		tx->failed = true;
		return;
	}
	nftnl_table_set_str(t, NFTNL_TABLE_NAME, name);
	nftnl_table_set_u32(t, NFTNL_TABLE_FLAGS, 0);
	if (comment != NULL) {
		if ((u = nftnl_udata_buf_alloc(NFTNL_UDATA_COMMENT_MAXLEN +
		    16)) == NULL || !nftnl_udata_put_strz(u,
		    NFTNL_UDATA_TABLE_COMMENT, comment)) {
			tx->failed = true;
			goto out;
		}
		nftnl_table_set_data(t, NFTNL_TABLE_USERDATA,
		    nftnl_udata_buf_data(u), nftnl_udata_buf_len(u));
	}
	if (type == NFT_MSG_NEWTABLE)
		flags |= NLM_F_CREATE;
	nlh = nftnl_table_nlmsg_build_hdr(nftnl_batch_buffer(tx->b), type,
	    tx->family, flags, tx->seq++);
	nftnl_table_nlmsg_build_payload(nlh, t);
	tx->nacks++;
	if (nftnl_batch_update(tx->b) == -1)
		tx->failed = true;
 out:
	if (u != NULL)
		nftnl_udata_buf_free(u);
	nftnl_table_free(t);
}

/*
 * "add table; delete table; add table": the first add makes the delete
 * valid whether or not the table existed, and the whole sequence commits
 * with the rest of the batch.
 */
static void
nsh_nft_replace(struct nsh_nft_tx *tx, const char *name, const char *comment)
{
	nsh_nft_table(tx, NFT_MSG_NEWTABLE, name, NULL);
	nsh_nft_table(tx, NFT_MSG_DELTABLE, name, NULL);
	nsh_nft_table(tx, NFT_MSG_NEWTABLE, name, comment);
}

static void
nsh_nft_chain(struct nsh_nft_tx *tx, const char *table, const char *name,
    const char *type, unsigned hook, int prio, unsigned policy)
{
	struct nftnl_chain	*c;
	struct nlmsghdr		*nlh;

	if ((c = nftnl_chain_alloc()) == NULL) {
		tx->failed = true;
		return;
	}
	nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, table);
	nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, name);
	nftnl_chain_set_str(c, NFTNL_CHAIN_TYPE, type);
	nftnl_chain_set_u32(c, NFTNL_CHAIN_HOOKNUM, hook);
	nftnl_chain_set_s32(c, NFTNL_CHAIN_PRIO, prio);
	nftnl_chain_set_u32(c, NFTNL_CHAIN_POLICY, policy);
	nlh = nftnl_chain_nlmsg_build_hdr(nftnl_batch_buffer(tx->b),
	    NFT_MSG_NEWCHAIN, NFPROTO_INET, NLM_F_CREATE | NLM_F_ACK,
	    tx->seq++);
	nftnl_chain_nlmsg_build_payload(nlh, c);
	tx->nacks++;
	if (nftnl_batch_update(tx->b) == -1)
		tx->failed = true;
	nftnl_chain_free(c);
}

/*
 * A netdev chain on the egress hook of every interface, present and
 * future: the hook spec is the empty interface-name prefix.  libnftnl
 * only writes whole names, so the hook attribute is written here.
 */
static void
nsh_nft_egress_chain(struct nsh_nft_tx *tx, const char *table,
    const char *name)
{
	struct nftnl_chain	*c;
	struct nlmsghdr		*nlh;
	struct nlattr		*hook, *devs;

	if ((c = nftnl_chain_alloc()) == NULL) {
		tx->failed = true;
		return;
	}
	nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, table);
	nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, name);
	nftnl_chain_set_str(c, NFTNL_CHAIN_TYPE, "filter");
	nftnl_chain_set_u32(c, NFTNL_CHAIN_POLICY, NF_DROP);
	nlh = nftnl_chain_nlmsg_build_hdr(nftnl_batch_buffer(tx->b),
	    NFT_MSG_NEWCHAIN, NFPROTO_NETDEV, NLM_F_CREATE | NLM_F_ACK,
	    tx->seq++);
	nftnl_chain_nlmsg_build_payload(nlh, c);
	hook = mnl_attr_nest_start(nlh, NFTA_CHAIN_HOOK);
	mnl_attr_put_u32(nlh, NFTA_HOOK_HOOKNUM, htonl(NF_NETDEV_EGRESS));
	mnl_attr_put_u32(nlh, NFTA_HOOK_PRIORITY,
	    htonl((uint32_t)NSH_NFT_PRIO_FILTER));
	devs = mnl_attr_nest_start(nlh, NFTA_HOOK_DEVS);
	mnl_attr_put_strz(nlh, NSH_NFTA_DEVICE_PREFIX, "");
	mnl_attr_nest_end(nlh, devs);
	mnl_attr_nest_end(nlh, hook);
	tx->nacks++;
	if (nftnl_batch_update(tx->b) == -1)
		tx->failed = true;
	nftnl_chain_free(c);
}

/* --- rules and expressions ------------------------------------------ */

static void
nsh_nft_rule_start(struct nsh_nft_rule *rb, struct nsh_nft_tx *tx,
    const char *table, const char *chain)
{
	rb->tx = tx;
	if ((rb->r = nftnl_rule_alloc()) == NULL) {
		tx->failed = true;
		return;
	}
	nftnl_rule_set_u32(rb->r, NFTNL_RULE_FAMILY, tx->family);
	nftnl_rule_set_str(rb->r, NFTNL_RULE_TABLE, table);
	nftnl_rule_set_str(rb->r, NFTNL_RULE_CHAIN, chain);
}

/* Appends the rule to the chain (in the batch) and frees it. */
static void
nsh_nft_rule_end(struct nsh_nft_rule *rb)
{
	struct nlmsghdr	*nlh;

	if (rb->r == NULL)
		return;
	if (!rb->tx->failed) {
		nlh = nftnl_rule_nlmsg_build_hdr(nftnl_batch_buffer(rb->tx->b),
		    NFT_MSG_NEWRULE, rb->tx->family,
		    NLM_F_APPEND | NLM_F_CREATE | NLM_F_ACK, rb->tx->seq++);
		nftnl_rule_nlmsg_build_payload(nlh, rb->r);
		rb->tx->nacks++;
		if (nftnl_batch_update(rb->tx->b) == -1)
			rb->tx->failed = true;
	}
	nftnl_rule_free(rb->r);
	rb->r = NULL;
}

static void
nsh_nft_expr(struct nsh_nft_rule *rb, struct nftnl_expr *e)
{
	if (e == NULL || rb->r == NULL) {
		rb->tx->failed = true;
		if (e != NULL)
			nftnl_expr_free(e);
		return;
	}
	nftnl_rule_add_expr(rb->r, e);
}

/* meta KEY -> reg 1 */
static void
nsh_nft_meta(struct nsh_nft_rule *rb, unsigned key)
{
	struct nftnl_expr	*e;

	if ((e = nftnl_expr_alloc("meta")) != NULL) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, key);
		nftnl_expr_set_u32(e, NFTNL_EXPR_META_DREG, NFT_REG_1);
	}
	nsh_nft_expr(rb, e);
}

/* reg 1 OP data */
static void
nsh_nft_cmp(struct nsh_nft_rule *rb, unsigned op, const void *data,
    size_t len)
{
	struct nftnl_expr	*e;

	if ((e = nftnl_expr_alloc("cmp")) != NULL) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_SREG, NFT_REG_1);
		nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_OP, op);
		nftnl_expr_set(e, NFTNL_EXPR_CMP_DATA, data, (uint32_t)len);
	}
	nsh_nft_expr(rb, e);
}

/* payload BASE + off, len bytes -> reg 1 */
static void
nsh_nft_payload(struct nsh_nft_rule *rb, unsigned base, unsigned off,
    unsigned len)
{
	struct nftnl_expr	*e;

	if ((e = nftnl_expr_alloc("payload")) != NULL) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_BASE, base);
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_OFFSET, off);
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_LEN, len);
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_DREG, NFT_REG_1);
	}
	nsh_nft_expr(rb, e);
}

/* data -> reg */
static void
nsh_nft_imm(struct nsh_nft_rule *rb, unsigned reg, const void *data,
    size_t len)
{
	struct nftnl_expr	*e;

	if ((e = nftnl_expr_alloc("immediate")) != NULL) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, reg);
		nftnl_expr_set(e, NFTNL_EXPR_IMM_DATA, data, (uint32_t)len);
	}
	nsh_nft_expr(rb, e);
}

/* accept, drop, return */
static void
nsh_nft_verdict(struct nsh_nft_rule *rb, int verdict)
{
	struct nftnl_expr	*e;

	if ((e = nftnl_expr_alloc("immediate")) != NULL) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
		nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT,
		    (uint32_t)verdict);
	}
	nsh_nft_expr(rb, e);
}

/*
 * meta nfproto ipv4|ipv6; in a netdev chain, where nfproto is always
 * "netdev", meta protocol ip|ip6 (what the kernel parsed the packet as).
 */
static void
nsh_nft_nfproto(struct nsh_nft_rule *rb, uint8_t proto)
{
	uint16_t	ethertype;

	if (rb->tx->family == NFPROTO_NETDEV) {
		ethertype = htons(proto == NFPROTO_IPV4 ? ETH_P_IP :
		    ETH_P_IPV6);
		nsh_nft_meta(rb, NFT_META_PROTOCOL);
		nsh_nft_cmp(rb, NFT_CMP_EQ, &ethertype, sizeof(ethertype));
		return;
	}
	nsh_nft_meta(rb, NFT_META_NFPROTO);
	nsh_nft_cmp(rb, NFT_CMP_EQ, &proto, sizeof(proto));
}

/*
 * ether type T and meta protocol T: the type the frame carries (what the
 * peer will parse) and the one the kernel was told, which must agree.
 */
static void
nsh_nft_ether_type(struct nsh_nft_rule *rb, uint16_t type)
{
	uint16_t	t = htons(type);

	nsh_nft_meta(rb, NFT_META_PROTOCOL);
	nsh_nft_cmp(rb, NFT_CMP_EQ, &t, sizeof(t));
	nsh_nft_payload(rb, NFT_PAYLOAD_LL_HEADER, NSH_ETH_TYPE_OFF,
	    sizeof(t));
	nsh_nft_cmp(rb, NFT_CMP_EQ, &t, sizeof(t));
}

/* meta l4proto tcp|udp|ipv6-icmp */
static void
nsh_nft_l4proto(struct nsh_nft_rule *rb, uint8_t proto)
{
	nsh_nft_meta(rb, NFT_META_L4PROTO);
	nsh_nft_cmp(rb, NFT_CMP_EQ, &proto, sizeof(proto));
}

/* tcp|udp dport PORT */
static void
nsh_nft_dport(struct nsh_nft_rule *rb, uint8_t proto, uint16_t port)
{
	uint16_t	p = htons(port);

	nsh_nft_l4proto(rb, proto);
	nsh_nft_payload(rb, NFT_PAYLOAD_TRANSPORT_HEADER, NSH_TH_DPORT_OFF,
	    sizeof(p));
	nsh_nft_cmp(rb, NFT_CMP_EQ, &p, sizeof(p));
}

/* iifname|oifname NAME (the whole IFNAMSIZ field, NUL-padded) */
static void
nsh_nft_ifname(struct nsh_nft_rule *rb, unsigned key, const char *name)
{
	char	buf[IFNAMSIZ];

	memset(buf, 0, sizeof(buf));
	strncpy(buf, name, sizeof(buf) - 1);
	nsh_nft_meta(rb, key);
	nsh_nft_cmp(rb, NFT_CMP_EQ, buf, sizeof(buf));
}

/* REG1 = REG1 & MASK (len bytes of it) */
static void
nsh_nft_and(struct nsh_nft_rule *rb, const void *mask, uint32_t len)
{
	static const uint8_t	 zero[4];
	struct nftnl_expr	*e;

	if ((e = nftnl_expr_alloc("bitwise")) != NULL) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_SREG, NFT_REG_1);
		nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_DREG, NFT_REG_1);
		nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_LEN, len);
		nftnl_expr_set(e, NFTNL_EXPR_BITWISE_MASK, mask, len);
		nftnl_expr_set(e, NFTNL_EXPR_BITWISE_XOR, zero, len);
	}
	nsh_nft_expr(rb, e);
}

/* ip daddr A/PLEN */
static void
nsh_nft_daddr4(struct nsh_nft_rule *rb, struct in_addr a, unsigned plen)
{
	uint32_t		 mask, net;

	mask = plen == 0 ? 0 : htonl(~0u << (32 - plen));
	net = a.s_addr & mask;
	nsh_nft_nfproto(rb, NFPROTO_IPV4);
	nsh_nft_payload(rb, NFT_PAYLOAD_NETWORK_HEADER, NSH_IP4_DADDR_OFF, 4);
	if (plen < 32)
		nsh_nft_and(rb, &mask, 4);
	nsh_nft_cmp(rb, NFT_CMP_EQ, &net, 4);
}

/* ip6 daddr A */
static void
nsh_nft_daddr6(struct nsh_nft_rule *rb, const struct in6_addr *a)
{
	nsh_nft_nfproto(rb, NFPROTO_IPV6);
	nsh_nft_payload(rb, NFT_PAYLOAD_NETWORK_HEADER, NSH_IP6_DADDR_OFF, 16);
	nsh_nft_cmp(rb, NFT_CMP_EQ, a, 16);
}

/* icmpv6 type T */
static void
nsh_nft_icmp6_type(struct nsh_nft_rule *rb, uint8_t type)
{
	nsh_nft_nfproto(rb, NFPROTO_IPV6);
	nsh_nft_l4proto(rb, IPPROTO_ICMPV6);
	nsh_nft_payload(rb, NFT_PAYLOAD_TRANSPORT_HEADER, NSH_ICMP6_TYPE_OFF,
	    1);
	nsh_nft_cmp(rb, NFT_CMP_EQ, &type, 1);
}

/* ct mark set NSH_CT_MARK */
static void
nsh_nft_ct_mark_set(struct nsh_nft_rule *rb)
{
	struct nftnl_expr	*e;
	uint32_t		 mark = NSH_CT_MARK;

	nsh_nft_imm(rb, NFT_REG_1, &mark, sizeof(mark));
	if ((e = nftnl_expr_alloc("ct")) != NULL) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_CT_KEY, NFT_CT_MARK);
		nftnl_expr_set_u32(e, NFTNL_EXPR_CT_SREG, NFT_REG_1);
	}
	nsh_nft_expr(rb, e);
}

/* ct mark NSH_CT_MARK */
static void
nsh_nft_ct_mark(struct nsh_nft_rule *rb)
{
	struct nftnl_expr	*e;
	uint32_t		 mark = NSH_CT_MARK;

	if ((e = nftnl_expr_alloc("ct")) != NULL) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_CT_KEY, NFT_CT_MARK);
		nftnl_expr_set_u32(e, NFTNL_EXPR_CT_DREG, NFT_REG_1);
	}
	nsh_nft_expr(rb, e);
	nsh_nft_cmp(rb, NFT_CMP_EQ, &mark, sizeof(mark));
}

/* redirect to :PORT */
static void
nsh_nft_redirect(struct nsh_nft_rule *rb, uint16_t port)
{
	struct nftnl_expr	*e;
	uint16_t		 p = htons(port);

	nsh_nft_imm(rb, NFT_REG_1, &p, sizeof(p));
	if ((e = nftnl_expr_alloc("redir")) != NULL)
		nftnl_expr_set_u32(e, NFTNL_EXPR_REDIR_REG_PROTO_MIN,
		    NFT_REG_1);
	nsh_nft_expr(rb, e);
}

/* dnat ip|ip6 to ADDR:PORT */
static void
nsh_nft_dnat(struct nsh_nft_rule *rb, int family, const void *addr,
    uint16_t port)
{
	struct nftnl_expr	*e;
	uint16_t		 p = htons(port);

	nsh_nft_imm(rb, NFT_REG_1, addr, family == AF_INET ? 4 : 16);
	nsh_nft_imm(rb, NFT_REG_2, &p, sizeof(p));
	if ((e = nftnl_expr_alloc("nat")) != NULL) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_TYPE, NFT_NAT_DNAT);
		nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_FAMILY,
		    family == AF_INET ? NFPROTO_IPV4 : NFPROTO_IPV6);
		nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_REG_ADDR_MIN, NFT_REG_1);
		nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_REG_PROTO_MIN, NFT_REG_2);
	}
	nsh_nft_expr(rb, e);
}

/* snat ip|ip6 to ADDR */
static void
nsh_nft_snat(struct nsh_nft_rule *rb, int family, const void *addr)
{
	struct nftnl_expr	*e;

	nsh_nft_imm(rb, NFT_REG_1, addr, family == AF_INET ? 4 : 16);
	if ((e = nftnl_expr_alloc("nat")) != NULL) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_TYPE, NFT_NAT_SNAT);
		nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_FAMILY,
		    family == AF_INET ? NFPROTO_IPV4 : NFPROTO_IPV6);
		nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_REG_ADDR_MIN, NFT_REG_1);
	}
	nsh_nft_expr(rb, e);
}

/*
 * ip daddr 127.0.0.0/8 VERDICT; ip6 daddr ::1 VERDICT.  A loopback
 * destination is no proof that a packet stays: a socket bound to another
 * interface (SO_BINDTODEVICE, IP_PKTINFO) sends it out there, and a next
 * hop with route_localnet takes it.  So the output chain cannot judge by
 * destination alone; filter_post, which sees the interface a packet
 * really leaves by, lets out only what leaves by lo (or moat's veth).
 */
static void
nsh_nft_loopback_rules(struct nsh_nft_tx *tx, const char *table,
    const char *chain, int verdict)
{
	struct nsh_nft_rule	rb;
	struct in_addr		lo4;
	int			v;

	lo4.s_addr = htonl(INADDR_LOOPBACK);
	for (v = 0; v < 2; v++) {
		nsh_nft_rule_start(&rb, tx, table, chain);
		if (v == 0)
			nsh_nft_daddr4(&rb, lo4, 8);
		else
			nsh_nft_daddr6(&rb, &in6addr_loopback);
		nsh_nft_verdict(&rb, verdict);
		nsh_nft_rule_end(&rb);
	}
}

/*
 * meta skuid UID VERDICT, first in chain (nothing if uid is NULL): the
 * packets of the sockets of moatd's uid, inside a pod's namespace.  The
 * kernel judges each packet by the socket it comes from (skb->sk, a full
 * socket): a socket of another uid never matches, and only a process of
 * that uid, or one with CAP_SETUID, makes one.  Packets of no full socket
 * (a TIME_WAIT ACK, a reset the kernel sends for no socket) do not match:
 * they meet the rules after.
 *
 * What moatd's packets need of the kernel's own goes with them: neighbour
 * resolution on the pod's interface (ARP, which only the netdev chain
 * sees; IPv6 neighbour solicitations and advertisements, verdict
 * accept).  Nothing of the application's reaches an interface to ask for
 * a neighbour (its packets are redirected to lo or dropped before), and
 * without CAP_NET_RAW it cannot write such a packet itself.
 */
static void
nsh_nft_exempt(struct nsh_nft_tx *tx, const char *chain, const uint32_t *uid,
    int verdict)
{
	static const uint8_t	nd[] = { NSH_ND_SOLICIT, NSH_ND_ADVERT };
	struct nsh_nft_rule	rb;
	size_t			i;

	if (uid == NULL)
		return;
	nsh_nft_rule_start(&rb, tx, NSH_TABLE, chain);
	nsh_nft_meta(&rb, NFT_META_SKUID);
	nsh_nft_cmp(&rb, NFT_CMP_EQ, uid, sizeof(*uid));
	nsh_nft_verdict(&rb, verdict);
	nsh_nft_rule_end(&rb);
	if (verdict != NF_ACCEPT)
		return;
	if (tx->family == NFPROTO_NETDEV) {
		nsh_nft_rule_start(&rb, tx, NSH_TABLE, chain);
		nsh_nft_ether_type(&rb, ETH_P_ARP);
		nsh_nft_verdict(&rb, NF_ACCEPT);
		nsh_nft_rule_end(&rb);
	}
	for (i = 0; i < sizeof(nd); i++) {
		nsh_nft_rule_start(&rb, tx, NSH_TABLE, chain);
		nsh_nft_icmp6_type(&rb, nd[i]);
		nsh_nft_verdict(&rb, NF_ACCEPT);
		nsh_nft_rule_end(&rb);
	}
}

/*
 * filter postrouting, policy drop: oifname lo accept [; oifname SBX_IF
 * accept]; the rest counted and logged as "interface", dropped.  The
 * output chain sees the interface routed to before NAT; this one sees the
 * one a packet really leaves by, after a redirect or DNAT rerouted it and
 * whatever the socket was bound to.
 */
static void
nsh_nft_post_filter(struct nsh_nft_tx *tx, const char *sbx_if, int log_group,
    const uint32_t *exempt_uid)
{
	struct nsh_nft_rule	rb;

	nsh_nft_chain(tx, NSH_TABLE, "filter_post", "filter",
	    NF_INET_POST_ROUTING, NSH_NFT_PRIO_FILTER, NF_DROP);
	nsh_nft_exempt(tx, "filter_post", exempt_uid, NF_ACCEPT);
	nsh_nft_rule_start(&rb, tx, NSH_TABLE, "filter_post");
	nsh_nft_ifname(&rb, NFT_META_OIFNAME, "lo");
	nsh_nft_verdict(&rb, NF_ACCEPT);
	nsh_nft_rule_end(&rb);
	if (sbx_if != NULL) {
		nsh_nft_rule_start(&rb, tx, NSH_TABLE, "filter_post");
		nsh_nft_ifname(&rb, NFT_META_OIFNAME, sbx_if);
		nsh_nft_verdict(&rb, NF_ACCEPT);
		nsh_nft_rule_end(&rb);
	}
	nsh_nft_drop(tx, "filter_post", DROPS_INTERFACE, NULL, 0, log_group,
	    true);
}

/*
 * What a veth sandbox may send to its gateway besides TCP, in table
 * NSH_TABLE's chain: [oifname DNS_OIF] udp/tcp dport 53 to the host side's
 * addresses accept; oifname SBX_IF ICMPv6 neighbour discovery accept.
 */
static void
nsh_nft_gateway_rules(struct nsh_nft_tx *tx, const char *chain,
    const char *dns_oif, const char *sbx_if, const struct nsh_veth_addrs *a)
{
	static const uint8_t	 nd[] = { NSH_ND_SOLICIT, NSH_ND_ADVERT };
	static const uint8_t	 l4[] = { IPPROTO_UDP, IPPROTO_TCP };
	struct nsh_nft_rule	 rb;
	size_t			 i, v;

	for (i = 0; i < sizeof(l4); i++) {
		for (v = 0; v < 2; v++) {
			nsh_nft_rule_start(&rb, tx, NSH_TABLE, chain);
			if (dns_oif != NULL)
				nsh_nft_ifname(&rb, NFT_META_OIFNAME, dns_oif);
			if (v == 0)
				nsh_nft_daddr4(&rb, a->host4, 32);
			else
				nsh_nft_daddr6(&rb, &a->host6);
			nsh_nft_dport(&rb, l4[i], 53);
			nsh_nft_verdict(&rb, NF_ACCEPT);
			nsh_nft_rule_end(&rb);
		}
	}
	for (i = 0; i < sizeof(nd); i++) {
		nsh_nft_rule_start(&rb, tx, NSH_TABLE, chain);
		nsh_nft_ifname(&rb, NFT_META_OIFNAME, sbx_if);
		nsh_nft_icmp6_type(&rb, nd[i]);
		nsh_nft_verdict(&rb, NF_ACCEPT);
		nsh_nft_rule_end(&rb);
	}
}

/* --- drops: counted, and logged within a limit ----------------------- */

/*
 * A stateful object of table `table`: counter NAME { }, or (type
 * NFT_OBJECT_LIMIT) limit NAME { rate DROPS_LOG_RATE/second burst
 * DROPS_LOG_BURST packets }.  Objects come before the rules that name
 * them in the batch.
 */
static void
nsh_nft_obj(struct nsh_nft_tx *tx, const char *table, uint32_t type,
    const char *name)
{
	struct nftnl_obj	*o;
	struct nlmsghdr		*nlh;

	if ((o = nftnl_obj_alloc()) == NULL) {
		tx->failed = true;
		return;
	}
	nftnl_obj_set_str(o, NFTNL_OBJ_TABLE, table);
	nftnl_obj_set_str(o, NFTNL_OBJ_NAME, name);
	nftnl_obj_set_u32(o, NFTNL_OBJ_TYPE, type);
	if (type == NFT_OBJECT_LIMIT) {
		nftnl_obj_set_u64(o, NFTNL_OBJ_LIMIT_RATE, DROPS_LOG_RATE);
		nftnl_obj_set_u64(o, NFTNL_OBJ_LIMIT_UNIT, 1);	/* second */
		nftnl_obj_set_u32(o, NFTNL_OBJ_LIMIT_BURST, DROPS_LOG_BURST);
		nftnl_obj_set_u32(o, NFTNL_OBJ_LIMIT_TYPE, NFT_LIMIT_PKTS);
		nftnl_obj_set_u32(o, NFTNL_OBJ_LIMIT_FLAGS, 0);
	}
	nlh = nftnl_nlmsg_build_hdr(nftnl_batch_buffer(tx->b),
	    NFT_MSG_NEWOBJ, tx->family, NLM_F_CREATE | NLM_F_ACK, tx->seq++);
	nftnl_obj_nlmsg_build_payload(nlh, o);
	tx->nacks++;
	if (nftnl_batch_update(tx->b) == -1)
		tx->failed = true;
	nftnl_obj_free(o);
}

/*
 * In table NSH_TABLE of the transaction's family, the counters
 * "drop-KIND" of its kinds (netdev: egress; inet: the others), and with
 * a log group the limit of the log.
 */
static void
nsh_nft_drop_objs(struct nsh_nft_tx *tx, int log_group)
{
	char		name[NSH_DROP_NAME_MAX];
	unsigned	k;

	for (k = 0; k < DROPS_KIND__COUNT; k++) {
		if ((k == DROPS_EGRESS) != (tx->family == NFPROTO_NETDEV))
			continue;
		snprintf(name, sizeof(name), "%s%s", DROPS_COUNTER,
		    drops_kind_name(k));
		nsh_nft_obj(tx, NSH_TABLE, NFT_OBJECT_COUNTER, name);
	}
	if (log_group >= 0)
		nsh_nft_obj(tx, NSH_TABLE, NFT_OBJECT_LIMIT, DROPS_LIMIT);
}

/* counter name NAME | limit name NAME (a table's object) */
static void
nsh_nft_objref(struct nsh_nft_rule *rb, uint32_t type, const char *name)
{
	struct nftnl_expr	*e;

	if ((e = nftnl_expr_alloc("objref")) != NULL) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_OBJREF_IMM_TYPE, type);
		nftnl_expr_set_str(e, NFTNL_EXPR_OBJREF_IMM_NAME, name);
	}
	nsh_nft_expr(rb, e);
}

/* log prefix PREFIX group GROUP snaplen DROPS_SNAPLEN */
static void
nsh_nft_log(struct nsh_nft_rule *rb, uint16_t group, const char *prefix)
{
	struct nftnl_expr	*e;

	if ((e = nftnl_expr_alloc("log")) != NULL) {
		nftnl_expr_set_str(e, NFTNL_EXPR_LOG_PREFIX, prefix);
		nftnl_expr_set_u16(e, NFTNL_EXPR_LOG_GROUP, group);
		nftnl_expr_set_u32(e, NFTNL_EXPR_LOG_SNAPLEN, DROPS_SNAPLEN);
	}
	nsh_nft_expr(rb, e);
}

/*
 * Where a chain drops, two rules of kind KIND in table NSH_TABLE:
 *   MATCH limit name "drop-log" log prefix "moat:KIND" group G snaplen S
 *   MATCH counter name "drop-KIND" drop
 * (match NULL: everything that reached them).  Two rules, not one: a
 * limit used up ends its rule there, and the packet must still be
 * counted and dropped.  Without a log group only the second; drop false:
 * no verdict (the chain's policy, accept, goes on).
 */
static void
nsh_nft_drop(struct nsh_nft_tx *tx, const char *chain, unsigned kind,
    void (*match)(struct nsh_nft_rule *, unsigned), unsigned arg,
    int log_group, bool drop)
{
	struct nsh_nft_rule	rb;
	char			name[NSH_DROP_NAME_MAX];

	if (log_group >= 0) {
		snprintf(name, sizeof(name), "%s%s", DROPS_PREFIX,
		    drops_kind_name(kind));
		nsh_nft_rule_start(&rb, tx, NSH_TABLE, chain);
		if (match != NULL)
			match(&rb, arg);
		nsh_nft_objref(&rb, NFT_OBJECT_LIMIT, DROPS_LIMIT);
		nsh_nft_log(&rb, (uint16_t)log_group, name);
		nsh_nft_rule_end(&rb);
	}
	snprintf(name, sizeof(name), "%s%s", DROPS_COUNTER,
	    drops_kind_name(kind));
	nsh_nft_rule_start(&rb, tx, NSH_TABLE, chain);
	if (match != NULL)
		match(&rb, arg);
	nsh_nft_objref(&rb, NFT_OBJECT_COUNTER, name);
	if (drop)
		nsh_nft_verdict(&rb, NF_DROP);
	nsh_nft_rule_end(&rb);
}

/* meta l4proto PROTO */
static void
nsh_nft_match_l4(struct nsh_nft_rule *rb, unsigned proto)
{
	nsh_nft_l4proto(rb, (uint8_t)proto);
}

/* iifname "lo" tcp flags & (fin|syn|rst|ack) == syn: a connection's
 * first packet, arriving on loopback */
static void
nsh_nft_match_lo_syn(struct nsh_nft_rule *rb, unsigned unused)
{
	uint8_t			 mask = NSH_TCP_FSRA;
	uint8_t			 syn = NSH_TCP_SYN;

	nsh_nft_ifname(rb, NFT_META_IIFNAME, "lo");
	nsh_nft_l4proto(rb, IPPROTO_TCP);
	nsh_nft_payload(rb, NFT_PAYLOAD_TRANSPORT_HEADER, NSH_TCP_FLAGS_OFF,
	    1);
	nsh_nft_and(rb, &mask, 1);
	nsh_nft_cmp(rb, NFT_CMP_EQ, &syn, 1);
}

/*
 * The end of filter_out: what the accept rules above did not take is
 * dropped, counted by kind and logged.
 *   meta l4proto igmp counter name "drop-other-proto" drop
 *   ip6 daddr ff02::/16 meta l4proto ipv6-icmp counter name "drop-icmp"
 *     drop
 * count without logging the link's own chatter, which the kernel sends
 * and no workload needs (group reports, router solicitations, on an
 * attached namespace's or a veth's link); then, each logged:
 *   udp, icmp, ipv6-icmp, tcp: "drop-udp", "drop-icmp", "drop-tcp"
 *   the rest: "drop-other-proto"
 */
static void
nsh_nft_drops_out(struct nsh_nft_tx *tx, int log_group)
{
	struct nsh_nft_rule	rb;
	uint16_t		llm = htons(NSH_IP6_LLMCAST);

	nsh_nft_drop(tx, "filter_out", DROPS_OTHER_PROTO, nsh_nft_match_l4,
	    IPPROTO_IGMP, -1, true);
	nsh_nft_rule_start(&rb, tx, NSH_TABLE, "filter_out");
	nsh_nft_nfproto(&rb, NFPROTO_IPV6);
	nsh_nft_payload(&rb, NFT_PAYLOAD_NETWORK_HEADER, NSH_IP6_DADDR_OFF,
	    sizeof(llm));
	nsh_nft_cmp(&rb, NFT_CMP_EQ, &llm, sizeof(llm));
	nsh_nft_l4proto(&rb, IPPROTO_ICMPV6);
	nsh_nft_objref(&rb, NFT_OBJECT_COUNTER, DROPS_COUNTER "icmp");
	nsh_nft_verdict(&rb, NF_DROP);
	nsh_nft_rule_end(&rb);
	nsh_nft_drop(tx, "filter_out", DROPS_UDP, nsh_nft_match_l4,
	    IPPROTO_UDP, log_group, true);
	nsh_nft_drop(tx, "filter_out", DROPS_ICMP, nsh_nft_match_l4,
	    IPPROTO_ICMP, log_group, true);
	nsh_nft_drop(tx, "filter_out", DROPS_ICMP, nsh_nft_match_l4,
	    IPPROTO_ICMPV6, log_group, true);
	nsh_nft_drop(tx, "filter_out", DROPS_TCP, nsh_nft_match_l4,
	    IPPROTO_TCP, log_group, true);
	nsh_nft_drop(tx, "filter_out", DROPS_OTHER_PROTO, NULL, 0, log_group,
	    true);
}

/*
 * filter input, policy accept: a TCP connection to a loopback port that
 * no socket takes (moat's listeners and the workload's own servers are
 * sockets) is counted and logged, and then refused by the kernel as
 * always (a reset: the client learns at once, as it did before):
 *   iifname "lo" tcp flags & (fin|syn|rst|ack) == syn socket transparent
 *     <= 1 accept	(the socket lookup finds one: 0 or 1)
 *   iifname "lo" ... syn: "drop-loopback-port", no verdict
 * Loopback is the sandbox's own and never leaves it; only connections
 * are judged (UDP to a closed port gets its ICMP error as before).
 */
static void
nsh_nft_filter_in(struct nsh_nft_tx *tx, int log_group)
{
	struct nsh_nft_rule	 rb;
	struct nftnl_expr	*e;
	uint8_t			 one = 1;

	nsh_nft_chain(tx, NSH_TABLE, "filter_in", "filter", NF_INET_LOCAL_IN,
	    NSH_NFT_PRIO_FILTER, NF_ACCEPT);
	nsh_nft_rule_start(&rb, tx, NSH_TABLE, "filter_in");
	nsh_nft_match_lo_syn(&rb, 0);
	if ((e = nftnl_expr_alloc("socket")) != NULL) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_SOCKET_KEY,
		    NFT_SOCKET_TRANSPARENT);
		nftnl_expr_set_u32(e, NFTNL_EXPR_SOCKET_DREG, NFT_REG_1);
	}
	nsh_nft_expr(&rb, e);
	nsh_nft_cmp(&rb, NFT_CMP_LTE, &one, 1);
	nsh_nft_verdict(&rb, NF_ACCEPT);
	nsh_nft_rule_end(&rb);
	nsh_nft_drop(tx, "filter_in", DROPS_LOOPBACK_PORT,
	    nsh_nft_match_lo_syn, 0, log_group, false);
}

/* --- the rulesets --------------------------------------------------- */

int
nsh_nft_held(struct mnl_socket *nl, const char *owner, uint16_t dns_port,
    uint16_t transparent_port, int log_group, const uint32_t *exempt_uid)
{
	static const uint8_t	 l4[] = { IPPROTO_UDP, IPPROTO_TCP };
	struct nsh_nft_tx	 tx;
	struct nsh_nft_rule	 rb;
	size_t			 i;
	int			 rc, saved;

	if (nsh_nft_tx_begin(&tx) == -1)
		return -1;
	nsh_nft_replace(&tx, NSH_TABLE, owner);
	nsh_nft_chain(&tx, NSH_TABLE, "nat_out", "nat", NF_INET_LOCAL_OUT,
	    NSH_NFT_PRIO_NAT, NF_ACCEPT);
	nsh_nft_chain(&tx, NSH_TABLE, "filter_out", "filter",
	    NF_INET_LOCAL_OUT, NSH_NFT_PRIO_FILTER, NF_DROP);
	nsh_nft_chain(&tx, NSH_TABLE, "filter_fwd", "filter",
	    NF_INET_FORWARD, NSH_NFT_PRIO_FILTER, NF_DROP);
	nsh_nft_drop_objs(&tx, log_group);
	nsh_nft_drop(&tx, "filter_fwd", DROPS_FORWARD, NULL, 0, log_group,
	    true);
	nsh_nft_filter_in(&tx, log_group);

	/* moatd's own traffic, in a pod: before anything else. */
	nsh_nft_exempt(&tx, "nat_out", exempt_uid, NFT_RETURN);
	nsh_nft_exempt(&tx, "filter_out", exempt_uid, NF_ACCEPT);

	/*
	 * DNS first, whatever the destination, loopback included: a query
	 * to any resolver (or to a resolver some other process holds a
	 * socket for on this namespace's loopback) reaches moatd.  Every
	 * redirect marks its connection, and only marked connections pass
	 * the output filter by their NAT state.
	 */
	for (i = 0; i < sizeof(l4); i++) {
		nsh_nft_rule_start(&rb, &tx, NSH_TABLE, "nat_out");
		nsh_nft_dport(&rb, l4[i], 53);
		nsh_nft_ct_mark_set(&rb);
		nsh_nft_redirect(&rb, dns_port);
		nsh_nft_rule_end(&rb);
	}
	/*
	 * Loopback is exempt from the redirect by destination: with the
	 * `local default` route every packet is routed to lo.
	 */
	nsh_nft_loopback_rules(&tx, NSH_TABLE, "nat_out", NFT_RETURN);
	nsh_nft_rule_start(&rb, &tx, NSH_TABLE, "nat_out");
	nsh_nft_l4proto(&rb, IPPROTO_TCP);
	nsh_nft_ct_mark_set(&rb);
	nsh_nft_redirect(&rb, transparent_port);
	nsh_nft_rule_end(&rb);

	/*
	 * After NAT only loopback destinations remain for what was
	 * redirected; the replies of the held sockets to a redirected
	 * connection go to the address the client dialled, so they are let
	 * through by their conntrack mark, which only the rules above set
	 * (a DNAT rule the namespace had before moat makes none).  The
	 * output interface is not judged here: this hook sees the one
	 * routed to before the redirect (an attached namespace's own
	 * interface, for an address on its own subnet); filter_post sees
	 * the real one and lets out only lo.  Everything else (UDP, ICMP,
	 * raw) is dropped, counted and logged.
	 */
	nsh_nft_loopback_rules(&tx, NSH_TABLE, "filter_out", NF_ACCEPT);
	nsh_nft_rule_start(&rb, &tx, NSH_TABLE, "filter_out");
	nsh_nft_ct_mark(&rb);
	nsh_nft_verdict(&rb, NF_ACCEPT);
	nsh_nft_rule_end(&rb);
	nsh_nft_drops_out(&tx, log_group);
	nsh_nft_post_filter(&tx, NULL, log_group, exempt_uid);

	rc = nsh_nft_tx_commit(nl, &tx);
	saved = errno;
	nsh_nft_tx_free(&tx);
	errno = saved;
	return rc;
}

int
nsh_nft_veth_sandbox(struct mnl_socket *nl, const char *owner,
    const char *sbx_if, const struct nsh_veth_addrs *a, int log_group)
{
	static const uint8_t	 l4[] = { IPPROTO_UDP, IPPROTO_TCP };
	struct nsh_nft_tx	 tx;
	struct nsh_nft_rule	 rb;
	size_t			 i, v;
	int			 rc, saved;

	if (nsh_nft_tx_begin(&tx) == -1)
		return -1;
	nsh_nft_replace(&tx, NSH_TABLE, owner);
	nsh_nft_chain(&tx, NSH_TABLE, "nat_out", "nat", NF_INET_LOCAL_OUT,
	    NSH_NFT_PRIO_NAT, NF_ACCEPT);
	nsh_nft_chain(&tx, NSH_TABLE, "nat_post", "nat", NF_INET_POST_ROUTING,
	    NSH_NFT_PRIO_SNAT, NF_ACCEPT);
	nsh_nft_chain(&tx, NSH_TABLE, "filter_out", "filter",
	    NF_INET_LOCAL_OUT, NSH_NFT_PRIO_FILTER, NF_DROP);
	nsh_nft_chain(&tx, NSH_TABLE, "filter_fwd", "filter",
	    NF_INET_FORWARD, NSH_NFT_PRIO_FILTER, NF_DROP);
	nsh_nft_drop_objs(&tx, log_group);
	nsh_nft_drop(&tx, "filter_fwd", DROPS_FORWARD, NULL, 0, log_group,
	    true);
	nsh_nft_filter_in(&tx, log_group);

	/*
	 * What goes to the host side leaves from the veth's address: a
	 * query first routed to the namespace's own resolver still carries
	 * the source address of that route, which the host cannot answer.
	 */
	for (v = 0; v < 2; v++) {
		nsh_nft_rule_start(&rb, &tx, NSH_TABLE, "nat_post");
		if (v == 0) {
			nsh_nft_daddr4(&rb, a->host4, 32);
			nsh_nft_snat(&rb, AF_INET, &a->sbx4);
		} else {
			nsh_nft_daddr6(&rb, &a->host6);
			nsh_nft_snat(&rb, AF_INET6, &a->sbx6);
		}
		nsh_nft_rule_end(&rb);
	}

	/*
	 * DNS to any server (an attached namespace's own resolver included,
	 * whose route may not be ours) goes to the host side of the veth,
	 * port 53, where moatd's DNS listener is reached.
	 */
	for (i = 0; i < sizeof(l4); i++) {
		for (v = 0; v < 2; v++) {
			nsh_nft_rule_start(&rb, &tx, NSH_TABLE, "nat_out");
			nsh_nft_nfproto(&rb, v == 0 ? NFPROTO_IPV4 :
			    NFPROTO_IPV6);
			nsh_nft_dport(&rb, l4[i], 53);
			if (v == 0)
				nsh_nft_dnat(&rb, AF_INET, &a->host4, 53);
			else
				nsh_nft_dnat(&rb, AF_INET6, &a->host6, 53);
			nsh_nft_rule_end(&rb);
		}
	}
	nsh_nft_loopback_rules(&tx, NSH_TABLE, "filter_out", NF_ACCEPT);
	/* The sandbox's own addresses: lo never leaves the namespace. */
	nsh_nft_rule_start(&rb, &tx, NSH_TABLE, "filter_out");
	nsh_nft_ifname(&rb, NFT_META_OIFNAME, "lo");
	nsh_nft_verdict(&rb, NF_ACCEPT);
	nsh_nft_rule_end(&rb);
	/*
	 * Out of the veth only TCP and DNS: the routes send them to the
	 * host side, whose table hands them to moatd's listeners.
	 */
	nsh_nft_rule_start(&rb, &tx, NSH_TABLE, "filter_out");
	nsh_nft_ifname(&rb, NFT_META_OIFNAME, sbx_if);
	nsh_nft_l4proto(&rb, IPPROTO_TCP);
	nsh_nft_verdict(&rb, NF_ACCEPT);
	nsh_nft_rule_end(&rb);
	/*
	 * DNS, DNATed above, by destination: a chain after the NAT still
	 * sees the output interface chosen before it (oifname would say
	 * the namespace's own interface for a query to its own resolver).
	 * filter_post then checks that it really leaves by sbx_if.
	 */
	nsh_nft_gateway_rules(&tx, "filter_out", NULL, sbx_if, a);
	nsh_nft_drops_out(&tx, log_group);
	nsh_nft_post_filter(&tx, sbx_if, log_group, NULL);

	rc = nsh_nft_tx_commit(nl, &tx);
	saved = errno;
	nsh_nft_tx_free(&tx);
	errno = saved;
	return rc;
}

int
nsh_nft_veth_host(struct mnl_socket *nl, const char *table, const char *owner,
    const char *host_if, const struct nsh_veth_addrs *a, uint16_t dns_port,
    uint16_t transparent_port, const uint16_t *ports, unsigned nports)
{
	static const uint8_t	 l4[] = { IPPROTO_UDP, IPPROTO_TCP };
	static const uint8_t	 nd[] = { NSH_ND_SOLICIT, NSH_ND_ADVERT };
	struct nsh_nft_tx	 tx;
	struct nsh_nft_rule	 rb;
	uint16_t		 all[NSH_PORTS_MAX_HOST];
	size_t			 i, v, nall = 0;
	int			 rc, saved;

	if (nports + 2 > NSH_PORTS_MAX_HOST) {
		errno = EINVAL;
		return -1;
	}
	all[nall++] = dns_port;
	all[nall++] = transparent_port;
	for (i = 0; i < nports; i++)
		all[nall++] = ports[i];
	if (nsh_nft_tx_begin(&tx) == -1)
		return -1;
	nsh_nft_replace(&tx, table, owner);
	nsh_nft_chain(&tx, table, "nat_pre", "nat", NF_INET_PRE_ROUTING,
	    NSH_NFT_PRIO_NAT, NF_ACCEPT);
	nsh_nft_chain(&tx, table, "filter_in", "filter", NF_INET_LOCAL_IN,
	    NSH_NFT_PRIO_FILTER, NF_ACCEPT);
	nsh_nft_chain(&tx, table, "filter_fwd", "filter", NF_INET_FORWARD,
	    NSH_NFT_PRIO_FILTER, NF_ACCEPT);

	/* prerouting: DNS to moatd's DNS listener, whoever was asked. */
	for (i = 0; i < sizeof(l4); i++) {
		for (v = 0; v < 2; v++) {
			nsh_nft_rule_start(&rb, &tx, table, "nat_pre");
			nsh_nft_ifname(&rb, NFT_META_IIFNAME, host_if);
			nsh_nft_nfproto(&rb, v == 0 ? NFPROTO_IPV4 :
			    NFPROTO_IPV6);
			nsh_nft_dport(&rb, l4[i], 53);
			if (v == 0)
				nsh_nft_dnat(&rb, AF_INET, &a->host4,
				    dns_port);
			else
				nsh_nft_dnat(&rb, AF_INET6, &a->host6,
				    dns_port);
			nsh_nft_rule_end(&rb);
		}
	}
	/* ... the listeners themselves as they are ... */
	for (i = 0; i < nall; i++) {
		for (v = 0; v < 2; v++) {
			nsh_nft_rule_start(&rb, &tx, table, "nat_pre");
			nsh_nft_ifname(&rb, NFT_META_IIFNAME, host_if);
			if (v == 0)
				nsh_nft_daddr4(&rb, a->host4, 32);
			else
				nsh_nft_daddr6(&rb, &a->host6);
			nsh_nft_dport(&rb, IPPROTO_TCP, all[i]);
			nsh_nft_verdict(&rb, NF_ACCEPT);
			nsh_nft_rule_end(&rb);
		}
	}
	/* ... and any other TCP to the transparent listener. */
	for (v = 0; v < 2; v++) {
		nsh_nft_rule_start(&rb, &tx, table, "nat_pre");
		nsh_nft_ifname(&rb, NFT_META_IIFNAME, host_if);
		nsh_nft_nfproto(&rb, v == 0 ? NFPROTO_IPV4 : NFPROTO_IPV6);
		nsh_nft_l4proto(&rb, IPPROTO_TCP);
		if (v == 0)
			nsh_nft_dnat(&rb, AF_INET, &a->host4,
			    transparent_port);
		else
			nsh_nft_dnat(&rb, AF_INET6, &a->host6,
			    transparent_port);
		nsh_nft_rule_end(&rb);
	}

	/* input from the veth: the listeners and neighbour discovery only. */
	for (i = 0; i < nall; i++) {
		for (v = 0; v < 2; v++) {
			nsh_nft_rule_start(&rb, &tx, table, "filter_in");
			nsh_nft_ifname(&rb, NFT_META_IIFNAME, host_if);
			if (v == 0)
				nsh_nft_daddr4(&rb, a->host4, 32);
			else
				nsh_nft_daddr6(&rb, &a->host6);
			nsh_nft_dport(&rb, IPPROTO_TCP, all[i]);
			nsh_nft_verdict(&rb, NF_ACCEPT);
			nsh_nft_rule_end(&rb);
		}
	}
	for (v = 0; v < 2; v++) {
		nsh_nft_rule_start(&rb, &tx, table, "filter_in");
		nsh_nft_ifname(&rb, NFT_META_IIFNAME, host_if);
		if (v == 0)
			nsh_nft_daddr4(&rb, a->host4, 32);
		else
			nsh_nft_daddr6(&rb, &a->host6);
		nsh_nft_dport(&rb, IPPROTO_UDP, dns_port);
		nsh_nft_verdict(&rb, NF_ACCEPT);
		nsh_nft_rule_end(&rb);
	}
	for (i = 0; i < sizeof(nd); i++) {
		nsh_nft_rule_start(&rb, &tx, table, "filter_in");
		nsh_nft_ifname(&rb, NFT_META_IIFNAME, host_if);
		nsh_nft_icmp6_type(&rb, nd[i]);
		nsh_nft_verdict(&rb, NF_ACCEPT);
		nsh_nft_rule_end(&rb);
	}
	nsh_nft_rule_start(&rb, &tx, table, "filter_in");
	nsh_nft_ifname(&rb, NFT_META_IIFNAME, host_if);
	nsh_nft_verdict(&rb, NF_DROP);
	nsh_nft_rule_end(&rb);

	/* The host never routes for the sandbox, in either direction. */
	nsh_nft_rule_start(&rb, &tx, table, "filter_fwd");
	nsh_nft_ifname(&rb, NFT_META_IIFNAME, host_if);
	nsh_nft_verdict(&rb, NF_DROP);
	nsh_nft_rule_end(&rb);
	nsh_nft_rule_start(&rb, &tx, table, "filter_fwd");
	nsh_nft_ifname(&rb, NFT_META_OIFNAME, host_if);
	nsh_nft_verdict(&rb, NF_DROP);
	nsh_nft_rule_end(&rb);

	rc = nsh_nft_tx_commit(nl, &tx);
	saved = errno;
	nsh_nft_tx_free(&tx);
	errno = saved;
	return rc;
}

/*
 * The sandbox's egress table (netdev NSH_TABLE): every frame that leaves
 * by any interface of the namespace, those added later included, passes
 * one chain.  The inet hooks never see what a packet socket sends; this
 * one does.  It lets out what moat's design needs and nothing else:
 *   oifname "lo" accept			(never leaves the namespace)
 *   veth: oifname SBX_IF, ether type arp accept; tcp accept (the host
 *     side hands all TCP to moatd); udp/tcp dport 53 to the host side's
 *     addresses accept; ICMPv6 neighbour discovery accept
 *   the rest: "drop-egress" (counted, logged), drop
 * In the veth case the host side's table still judges all that arrives.
 */
int
nsh_nft_egress(struct mnl_socket *nl, const char *owner, const char *sbx_if,
    const struct nsh_veth_addrs *a, int log_group, const uint32_t *exempt_uid)
{
	struct nsh_nft_tx	 tx;
	struct nsh_nft_rule	 rb;
	size_t			 v;
	int			 rc, saved;

	if (nsh_nft_tx_begin(&tx) == -1)
		return -1;
	tx.family = NFPROTO_NETDEV;
	nsh_nft_replace(&tx, NSH_TABLE, owner);
	nsh_nft_egress_chain(&tx, NSH_TABLE, "egress");
	nsh_nft_drop_objs(&tx, log_group);
	nsh_nft_exempt(&tx, "egress", exempt_uid, NF_ACCEPT);
	nsh_nft_rule_start(&rb, &tx, NSH_TABLE, "egress");
	nsh_nft_ifname(&rb, NFT_META_OIFNAME, "lo");
	nsh_nft_verdict(&rb, NF_ACCEPT);
	nsh_nft_rule_end(&rb);
	if (sbx_if != NULL) {
		nsh_nft_rule_start(&rb, &tx, NSH_TABLE, "egress");
		nsh_nft_ifname(&rb, NFT_META_OIFNAME, sbx_if);
		nsh_nft_ether_type(&rb, ETH_P_ARP);
		nsh_nft_verdict(&rb, NF_ACCEPT);
		nsh_nft_rule_end(&rb);
		for (v = 0; v < 2; v++) {
			nsh_nft_rule_start(&rb, &tx, NSH_TABLE, "egress");
			nsh_nft_ifname(&rb, NFT_META_OIFNAME, sbx_if);
			nsh_nft_ether_type(&rb, v == 0 ? ETH_P_IP :
			    ETH_P_IPV6);
			nsh_nft_l4proto(&rb, IPPROTO_TCP);
			nsh_nft_verdict(&rb, NF_ACCEPT);
			nsh_nft_rule_end(&rb);
		}
		nsh_nft_gateway_rules(&tx, "egress", sbx_if, sbx_if, a);
	}
	nsh_nft_drop(&tx, "egress", DROPS_EGRESS, NULL, 0, log_group, true);
	rc = nsh_nft_tx_commit(nl, &tx);
	saved = errno;
	nsh_nft_tx_free(&tx);
	errno = saved;
	return rc;
}

/*
 * Deletes table inet `name`; for the sandbox's NSH_TABLE, first its
 * netdev table of the same name, whether or not it exists.
 */
int
nsh_nft_table_del(struct mnl_socket *nl, const char *name)
{
	struct nsh_nft_tx	tx;
	int			rc, saved;

	if (strcmp(name, NSH_TABLE) == 0) {
		if (nsh_nft_tx_begin(&tx) == -1)
			return -1;
		tx.family = NFPROTO_NETDEV;
		nsh_nft_table(&tx, NFT_MSG_NEWTABLE, name, NULL);
		nsh_nft_table(&tx, NFT_MSG_DELTABLE, name, NULL);
		rc = nsh_nft_tx_commit(nl, &tx);
		saved = errno;
		nsh_nft_tx_free(&tx);
		if (rc == -1) {
			errno = saved;
			return -1;
		}
	}
	if (nsh_nft_tx_begin(&tx) == -1)
		return -1;
	nsh_nft_table(&tx, NFT_MSG_DELTABLE, name, NULL);
	rc = nsh_nft_tx_commit(nl, &tx);
	saved = errno;
	nsh_nft_tx_free(&tx);
	errno = saved;
	return rc;
}

/* --- listing ---------------------------------------------------------- */

static int
nsh_nft_comment_cb(const struct nftnl_udata *attr, void *data)
{
	const char	**comment = data;
	const char	 *v;
	uint8_t		  len;

	if (nftnl_udata_type(attr) != NFTNL_UDATA_TABLE_COMMENT)
		return MNL_CB_OK;
	v = nftnl_udata_get(attr);
	len = nftnl_udata_len(attr);
	/* A comment is a NUL-terminated string inside its attribute. */
	if (len == 0 || v[len - 1] != '\0' || strlen(v) != (size_t)len - 1)
		return MNL_CB_OK;
	*comment = v;
	return MNL_CB_OK;
}

static int
nsh_nft_list_cb(const struct nlmsghdr *nlh, void *arg)
{
	struct nsh_nft_list	*l = arg;
	struct nftnl_table	*t;
	const char		*name, *comment = "";
	const void		*ud;
	uint32_t		 udlen = 0;

	if ((t = nftnl_table_alloc()) == NULL)
		return MNL_CB_ERROR;
	if (nftnl_table_nlmsg_parse(nlh, t) < 0)
		goto out;
	if (nftnl_table_get_u32(t, NFTNL_TABLE_FAMILY) != NFPROTO_INET)
		goto out;
	if ((name = nftnl_table_get_str(t, NFTNL_TABLE_NAME)) == NULL)
		goto out;
	if (strncmp(name, l->prefix, strlen(l->prefix)) != 0)
		goto out;
	if (nftnl_table_is_set(t, NFTNL_TABLE_USERDATA) &&
	    (ud = nftnl_table_get_data(t, NFTNL_TABLE_USERDATA, &udlen)) !=
	    NULL)
		(void)nftnl_udata_parse(ud, udlen, nsh_nft_comment_cb,
		    &comment);
	l->fn(name, comment, l->arg);
 out:
	nftnl_table_free(t);
	return MNL_CB_OK;
}

int
nsh_nft_tables(struct mnl_socket *nl, const char *prefix,
    void (*fn)(const char *, const char *, void *), void *arg)
{
	static char		 buf[NSH_NFT_RECV_BUF];
	struct nsh_nft_list	 l;
	struct nlmsghdr		*nlh;
	uint32_t		 seq;

	l.prefix = prefix;
	l.fn = fn;
	l.arg = arg;
	seq = ++nsh_nft_seq;
	nlh = nftnl_table_nlmsg_build_hdr(buf, NFT_MSG_GETTABLE, NFPROTO_INET,
	    NLM_F_DUMP, seq);
	return nsh_nl_talk(nl, nlh, nsh_nft_list_cb, &l);
}

/* --- the drop counters ------------------------------------------------ */

struct nsh_nft_ctrs {
	void	(*fn)(const char *, uint64_t, uint64_t, void *);
	void	*arg;
};

static int
nsh_nft_ctr_cb(const struct nlmsghdr *nlh, void *arg)
{
	struct nsh_nft_ctrs	*c = arg;
	struct nftnl_obj	*o;
	const char		*name, *table;

	if ((o = nftnl_obj_alloc()) == NULL)
		return MNL_CB_ERROR;
	if (nftnl_obj_nlmsg_parse(nlh, o) < 0 ||
	    nftnl_obj_get_u32(o, NFTNL_OBJ_TYPE) != NFT_OBJECT_COUNTER ||
	    (table = nftnl_obj_get_str(o, NFTNL_OBJ_TABLE)) == NULL ||
	    strcmp(table, NSH_TABLE) != 0 ||
	    (name = nftnl_obj_get_str(o, NFTNL_OBJ_NAME)) == NULL ||
	    strncmp(name, DROPS_COUNTER, strlen(DROPS_COUNTER)) != 0)
		goto out;
	c->fn(name, nftnl_obj_get_u64(o, NFTNL_OBJ_CTR_PKTS),
	    nftnl_obj_get_u64(o, NFTNL_OBJ_CTR_BYTES), c->arg);
 out:
	nftnl_obj_free(o);
	return MNL_CB_OK;
}

int
nsh_nft_counters(struct mnl_socket *nl, uint16_t family,
    void (*fn)(const char *, uint64_t, uint64_t, void *), void *arg)
{
	static char		 buf[NSH_NFT_RECV_BUF];
	struct nsh_nft_ctrs	 c;
	struct nftnl_obj	*o;
	struct nlmsghdr		*nlh;
	uint32_t		 seq;

	c.fn = fn;
	c.arg = arg;
	if ((o = nftnl_obj_alloc()) == NULL)
		return -1;
	nftnl_obj_set_str(o, NFTNL_OBJ_TABLE, NSH_TABLE);
	nftnl_obj_set_u32(o, NFTNL_OBJ_TYPE, NFT_OBJECT_COUNTER);
	seq = ++nsh_nft_seq;
	nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETOBJ, family, NLM_F_DUMP,
	    seq);
	nftnl_obj_nlmsg_build_payload(nlh, o);
	nftnl_obj_free(o);
	return nsh_nl_talk(nl, nlh, nsh_nft_ctr_cb, &c);
}
