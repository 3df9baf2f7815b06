/*
 * helper.h - moat-netns's private interfaces: rtnetlink (helper_rtnl.c),
 * nftables (helper_nft.c), the drop log (helper_nflog.c) and held
 * sockets (helper_sock.c).  Only moat-netns links these; the moat CLI
 * never programs the kernel itself.
 *
 * Every function works on the network namespace its netlink socket was
 * opened in (a netlink socket stays bound to the namespace of its
 * creation), so moat-netns opens one pair per namespace and never
 * confuses them.  Functions return 0, or -1 with errno set; they print
 * nothing.
 */
#ifndef MOAT_NSH_INT_H
#define MOAT_NSH_INT_H

#include <sys/types.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

struct mnl_socket;
struct nlmsghdr;

#define NSH_NETLINK_TIMEOUT_MS	5000	/* one netlink request and its acks */
#define NSH_LISTEN_BACKLOG	1024	/* listen(2) backlog of held sockets */
#define NSH_RTPROT_MOAT		0x6d	/* rtm_protocol of routes moat adds */
#define NSH_OWNER_MAX		64	/* "moat owner=PID start=TICKS" */
/*
 * The owner of a pod's table (`moat pod-init`): no process, the table
 * lives as long as the pod's namespace.  cleanup keeps it, attach
 * refuses the namespace, another pod-init may replace it.
 */
#define NSH_OWNER_POD		"moat pod exempt-uid="

/* The addresses of one veth gateway: 10.203.X.0/30, fd00:203:X::/64. */
struct nsh_veth_addrs {
	unsigned	index;			/* X */
	struct in_addr	host4, sbx4;		/* 10.203.X.1, .2 */
	struct in6_addr	host6, sbx6;		/* fd00:203:X::1, ::2 */
};

/* --- rtnetlink (helper_rtnl.c) ------------------------------------ */

/*
 * Opens and binds a NETLINK_ROUTE socket in the calling thread's current
 * network namespace, with a receive timeout.  Returns it (close with
 * mnl_socket_close) or NULL with errno set.
 */
/*
 * Sends one request (any netlink family; its nlmsg_seq set) and reads the
 * answers, each through cb (may be NULL), until the last: 0, or -1 with
 * errno (ETIMEDOUT when the socket's receive timeout passed).
 */
int	nsh_nl_talk(struct mnl_socket *nl, const struct nlmsghdr *nlh,
	    int (*cb)(const struct nlmsghdr *, void *), void *arg);
struct mnl_socket	*nsh_rtnl_open(void);

/* Returns the index of interface name, or 0 with errno set (ENODEV). */
unsigned	nsh_rtnl_ifindex(struct mnl_socket *nl, const char *name);

/* Sets interface ifindex up. */
int	nsh_rtnl_link_up(struct mnl_socket *nl, unsigned ifindex);

/*
 * Adds (add true) or deletes a route: family AF_INET or AF_INET6; dst
 * (4 or 16 bytes, NULL for the default route) with prefix length dlen;
 * gw NULL or a gateway of the family; oif the output interface; table
 * and type as in rtnetlink(7) (RT_TABLE_LOCAL + RTN_LOCAL for a `local
 * default` route).  The route carries NSH_RTPROT_MOAT.  Adding an existing
 * route fails with EEXIST, deleting a missing one with ESRCH.
 */
int	nsh_rtnl_route(struct mnl_socket *nl, bool add, int family,
	    const void *dst, unsigned dlen, const void *gw, unsigned oif,
	    unsigned table, unsigned type);

/* Adds address addr/plen (family AF_INET or AF_INET6) to ifindex; IPv6
 * addresses skip duplicate address detection. */
int	nsh_rtnl_addr_add(struct mnl_socket *nl, unsigned ifindex, int family,
	    const void *addr, unsigned plen);

/*
 * Returns 1 if any interface of the namespace has IPv4 address a, 0 if
 * none does, -1 on error.
 */
int	nsh_rtnl_has_addr4(struct mnl_socket *nl, struct in_addr a);

/*
 * Creates a veth pair: name here, with alias (IFLA_IFALIAS, may be NULL),
 * and peer in the network namespace of the descriptor peer_ns.  Fails
 * with EEXIST if name is taken.
 */
int	nsh_rtnl_veth(struct mnl_socket *nl, const char *name,
	    const char *alias, const char *peer, int peer_ns);

/* Deletes interface name (a veth takes its peer along).  ENODEV if gone. */
int	nsh_rtnl_link_del(struct mnl_socket *nl, const char *name);

/*
 * Calls fn for each interface of the namespace whose name starts with
 * prefix: its name, its link kind ("veth", or "" if none) and its alias
 * ("" if none).  fn's return value is ignored.
 */
int	nsh_rtnl_links(struct mnl_socket *nl, const char *prefix,
	    void (*fn)(const char *name, const char *kind, const char *alias,
	    void *arg), void *arg);

/* --- nftables (helper_nft.c) -------------------------------------- */

/*
 * Opens and binds a NETLINK_NETFILTER socket in the current network
 * namespace, with a receive timeout.  NULL with errno on failure.
 */
struct mnl_socket	*nsh_nft_open(void);

/*
 * Replaces table inet NSH_TABLE with the held-sockets ruleset, in one
 * batch (no half-applied state ever exists):
 *   nat output: udp/tcp dport 53 -> redirect :dns_port; loopback
 *     destinations return; other TCP -> redirect :transparent_port
 *   filter output, policy drop: on lo, loopback destinations and the
 *     connections the rules above redirected (their ct mark) accept
 *   filter postrouting, policy drop: oifname lo accept
 *   filter forward, policy drop
 *   filter input, policy accept: TCP connections to loopback ports no
 *     socket takes are counted (the kernel refuses them)
 * What is dropped is counted by kind in the counters "drop-KIND" and,
 * with log_group >= 0, logged to that NFLOG group within the limit
 * "drop-log" (proto/drops_proto.h).  owner goes into the table's
 * comment.  With exempt_uid (not NULL), what sockets of that uid send
 * (moatd inside the namespace: its upstream connections and DNS
 * queries) is neither redirected nor dropped: each chain's first rule
 * is "meta skuid UID return|accept".  On failure nothing changed.
 */
int	nsh_nft_held(struct mnl_socket *nl, const char *owner,
	    uint16_t dns_port, uint16_t transparent_port, int log_group,
	    const uint32_t *exempt_uid);

/*
 * Replaces table inet NSH_TABLE of a veth sandbox: DNS to any server is
 * DNATed to the host side's port 53 (a's host addresses); output policy
 * drop but loopback destinations, TCP, UDP and TCP port 53 and IPv6
 * neighbour discovery out of sbx_if; forward policy drop; drops counted
 * and logged as nsh_nft_held()'s.
 */
int	nsh_nft_veth_sandbox(struct mnl_socket *nl, const char *owner,
	    const char *sbx_if, const struct nsh_veth_addrs *a, int log_group);

/*
 * Replaces table inet `table` on the host side of veth host_if: traffic
 * from host_if to port 53 is DNATed to the DNS listener, to the listener
 * ports of the host addresses accepted as is, other TCP DNATed to the
 * transparent listener; input from host_if accepts only the listeners and
 * neighbour discovery; forwarding from or to host_if is dropped.
 */
int	nsh_nft_veth_host(struct mnl_socket *nl, const char *table,
	    const char *owner, const char *host_if,
	    const struct nsh_veth_addrs *a, uint16_t dns_port,
	    uint16_t transparent_port, const uint16_t *ports, unsigned nports);

/*
 * Replaces table netdev NSH_TABLE: a chain on the egress hook of every
 * interface of the namespace, present and future (what packet sockets
 * send never meets the inet hooks).  It passes lo, and with sbx_if (veth
 * mode) ARP, TCP, DNS to a's host addresses and neighbour discovery out
 * of sbx_if; it drops the rest (counter "drop-egress", logged to
 * log_group if >= 0).  With exempt_uid (not NULL), frames of that uid's
 * sockets pass too (meta skuid), as in nsh_nft_held().  EINVAL or
 * EOPNOTSUPP: the kernel cannot hook every interface's egress.
 */
int	nsh_nft_egress(struct mnl_socket *nl, const char *owner,
	    const char *sbx_if, const struct nsh_veth_addrs *a, int log_group,
	    const uint32_t *exempt_uid);

/*
 * Deletes table inet `name` (and, for NSH_TABLE, table netdev NSH_TABLE
 * if there is one).  ENOENT if the inet table does not exist.
 */
int	nsh_nft_table_del(struct mnl_socket *nl, const char *name);

/*
 * Calls fn for each inet table whose name starts with prefix (or is
 * exactly prefix), with its comment ("" if none).
 */
int	nsh_nft_tables(struct mnl_socket *nl, const char *prefix,
	    void (*fn)(const char *name, const char *comment, void *arg),
	    void *arg);

/*
 * Calls fn for each counter "drop-KIND" of table NSH_TABLE of family
 * (NFPROTO_INET or NFPROTO_NETDEV): its name, packets and bytes.  ENOENT
 * if there is no such table.  (`nft list counters` of Debian 12 never
 * returns in a namespace with moat's netdev table: this reads them.)
 */
int	nsh_nft_counters(struct mnl_socket *nl, uint16_t family,
	    void (*fn)(const char *name, uint64_t packets, uint64_t bytes,
	    void *arg), void *arg);

/* --- the drop log (helper_nflog.c) -------------------------------- */

/*
 * Opens a NETLINK_NETFILTER socket in the current network namespace and
 * binds it to NFLOG group `group` there: each packet the rules log to
 * the group arrives on it as a record (its first DROPS_SNAPLEN bytes and
 * its prefix), numbered (NFULNL_CFG_F_SEQ), in batches of at most 64 or
 * 10 ms.  Binding takes CAP_NET_ADMIN over the namespace; reading what
 * arrives takes nothing, so the socket can be handed to an unprivileged
 * reader.  The binding ends when the last descriptor of the socket
 * closes.  Returns the descriptor (close-on-exec, non-blocking), or -1
 * with errno (EPERM: another socket holds the group, after 250 ms of
 * tries).
 */
int	nsh_nflog_open(uint16_t group);

/* --- held sockets (helper_sock.c) --------------------------------- */

/*
 * Creates a socket in the current network namespace bound to addr
 * (family AF_INET: struct in_addr, AF_INET6: struct in6_addr) and port,
 * SOCK_STREAM listening or SOCK_DGRAM, close-on-exec and non-blocking.
 * Returns the descriptor, or -1 with errno set.
 */
int	nsh_sock_listen(int family, int type, const void *addr, uint16_t port);

#endif /* MOAT_NSH_INT_H */
