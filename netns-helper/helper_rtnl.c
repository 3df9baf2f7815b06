/*
 * helper_rtnl.c - the rtnetlink requests moat-netns makes, through libmnl:
 * link up, addresses, routes (the `local default` routes of held mode,
 * the gateway routes of veth mode), veth pairs and their removal.
 *
 * What it is not: a general netlink library.  Each function builds one
 * request, waits (bounded) for its acknowledgement or dump and returns
 * 0 or -1 with errno, the kernel's own error where it gave one.  It never
 * runs `ip`.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <net/if.h>
#include <netinet/in.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <libmnl/libmnl.h>

#include "netns-helper/helper.h"

#define NSH_RTNL_BUF	32768	/* one request, or one read of a dump */

struct nsh_rtnl_find {
	const char	*prefix;
	void		(*fn)(const char *, const char *, const char *, void *);
	void		*arg;
};

struct nsh_rtnl_addr4 {
	struct in_addr	a;
	int		found;
};

static int	nsh_rtnl_talk(struct mnl_socket *nl, struct nlmsghdr *nlh,
		    mnl_cb_t cb, void *arg);
static int	nsh_rtnl_index_cb(const struct nlmsghdr *nlh, void *arg);
static int	nsh_rtnl_link_cb(const struct nlmsghdr *nlh, void *arg);
static int	nsh_rtnl_addr_cb(const struct nlmsghdr *nlh, void *arg);
static void	nsh_rtnl_linkinfo_kind(const struct nlattr *li, char *kind,
		    size_t len);

static uint32_t	nsh_rtnl_seq;

struct mnl_socket *
nsh_rtnl_open(void)
{
	struct mnl_socket	*nl;
	struct timeval		 tv;
	int			 saved;

	if ((nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC)) == NULL)
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
	if (nsh_rtnl_seq == 0)
		nsh_rtnl_seq = (uint32_t)time(NULL);
	return nl;
}

/*
 * Sends one request and reads until its acknowledgement (or the end of
 * its dump), feeding data messages to cb.  A receive timeout is ETIMEDOUT.
 */
static int
nsh_rtnl_talk(struct mnl_socket *nl, struct nlmsghdr *nlh, mnl_cb_t cb,
    void *arg)
{
	nlh->nlmsg_seq = ++nsh_rtnl_seq;
	return nsh_nl_talk(nl, nlh, cb, arg);
}

int
nsh_nl_talk(struct mnl_socket *nl, const struct nlmsghdr *nlh,
    int (*cb)(const struct nlmsghdr *, void *), void *arg)
{
	static char	buf[NSH_RTNL_BUF];
	uint32_t	seq = nlh->nlmsg_seq, portid;
	ssize_t		n;
	int		r;

	portid = mnl_socket_get_portid(nl);
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) == -1)
		return -1;
	for (;;) {
		n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				errno = ETIMEDOUT;
			return -1;
		}
		r = mnl_cb_run(buf, (size_t)n, seq, portid, cb, arg);
		if (r == -1)
			return -1;
		if (r == MNL_CB_STOP)
			return 0;
	}
}

static int
nsh_rtnl_index_cb(const struct nlmsghdr *nlh, void *arg)
{
	const struct ifinfomsg	*ifm;

	if (nlh->nlmsg_type != RTM_NEWLINK)
		return MNL_CB_OK;
	ifm = mnl_nlmsg_get_payload(nlh);
	*(unsigned *)arg = (unsigned)ifm->ifi_index;
	return MNL_CB_OK;
}

unsigned
nsh_rtnl_ifindex(struct mnl_socket *nl, const char *name)
{
	char			 buf[NSH_RTNL_BUF / 8];
	struct nlmsghdr		*nlh;
	struct ifinfomsg	*ifm;
	unsigned		 idx = 0;

	if (strlen(name) >= IFNAMSIZ) {
		errno = ENODEV;
		return 0;
	}
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_GETLINK;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
	ifm->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	/* With NLM_F_ACK the answer (the link) is followed by an ack. */
	nlh->nlmsg_flags |= NLM_F_ACK;
	if (nsh_rtnl_talk(nl, nlh, nsh_rtnl_index_cb, &idx) == -1)
		return 0;
	if (idx == 0)
		errno = ENODEV;
	return idx;
}

int
nsh_rtnl_link_up(struct mnl_socket *nl, unsigned ifindex)
{
	char			 buf[NSH_RTNL_BUF / 8];
	struct nlmsghdr		*nlh;
	struct ifinfomsg	*ifm;

	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_NEWLINK;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
	ifm->ifi_family = AF_UNSPEC;
	ifm->ifi_index = (int)ifindex;
	ifm->ifi_change = IFF_UP;
	ifm->ifi_flags = IFF_UP;
	return nsh_rtnl_talk(nl, nlh, NULL, NULL);
}

int
nsh_rtnl_route(struct mnl_socket *nl, bool add, int family, const void *dst,
    unsigned dlen, const void *gw, unsigned oif, unsigned table,
    unsigned type)
{
	char		 buf[NSH_RTNL_BUF / 8];
	struct nlmsghdr	*nlh;
	struct rtmsg	*rtm;
	size_t		 alen;

	if (family != AF_INET && family != AF_INET6) {
		errno = EAFNOSUPPORT;
		return -1;
	}
	alen = family == AF_INET ? 4 : 16;
	if (dlen > alen * 8 || (dst == NULL && dlen != 0)) {
		errno = EINVAL;
		return -1;
	}
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = add ? RTM_NEWROUTE : RTM_DELROUTE;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	if (add)
		nlh->nlmsg_flags |= NLM_F_CREATE | NLM_F_EXCL;
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = (unsigned char)family;
	rtm->rtm_dst_len = (unsigned char)dlen;
	rtm->rtm_table = table < 256 ? (unsigned char)table : RT_TABLE_UNSPEC;
	rtm->rtm_protocol = NSH_RTPROT_MOAT;
	rtm->rtm_type = (unsigned char)type;
	if (!add)
		rtm->rtm_scope = RT_SCOPE_NOWHERE;
	else if (type == RTN_LOCAL)
		rtm->rtm_scope = RT_SCOPE_HOST;
	else
		rtm->rtm_scope = RT_SCOPE_UNIVERSE;
	mnl_attr_put_u32(nlh, RTA_TABLE, table);
	if (dst != NULL)
		mnl_attr_put(nlh, RTA_DST, alen, dst);
	if (gw != NULL)
		mnl_attr_put(nlh, RTA_GATEWAY, alen, gw);
	if (oif != 0)
		mnl_attr_put_u32(nlh, RTA_OIF, oif);
	return nsh_rtnl_talk(nl, nlh, NULL, NULL);
}

int
nsh_rtnl_addr_add(struct mnl_socket *nl, unsigned ifindex, int family,
    const void *addr, unsigned plen)
{
	char			 buf[NSH_RTNL_BUF / 8];
	struct nlmsghdr		*nlh;
	struct ifaddrmsg	*ifa;
	size_t			 alen;

	if (family != AF_INET && family != AF_INET6) {
		errno = EAFNOSUPPORT;
		return -1;
	}
	alen = family == AF_INET ? 4 : 16;
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_NEWADDR;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE |
	    NLM_F_EXCL;
	ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	ifa->ifa_family = (unsigned char)family;
	ifa->ifa_prefixlen = (unsigned char)plen;
	ifa->ifa_scope = RT_SCOPE_UNIVERSE;
	ifa->ifa_index = ifindex;
	if (family == AF_INET6) {
		/* No DAD: the only other end is ours, and DAD delays use. */
		ifa->ifa_flags = IFA_F_NODAD;
		mnl_attr_put_u32(nlh, IFA_FLAGS, IFA_F_NODAD);
	}
	mnl_attr_put(nlh, IFA_LOCAL, alen, addr);
	mnl_attr_put(nlh, IFA_ADDRESS, alen, addr);
	return nsh_rtnl_talk(nl, nlh, NULL, NULL);
}

static int
nsh_rtnl_addr_cb(const struct nlmsghdr *nlh, void *arg)
{
	struct nsh_rtnl_addr4	*f = arg;
	const struct ifaddrmsg	*ifa;
	const struct nlattr	*attr;

	if (nlh->nlmsg_type != RTM_NEWADDR)
		return MNL_CB_OK;
	ifa = mnl_nlmsg_get_payload(nlh);
	if (ifa->ifa_family != AF_INET)
		return MNL_CB_OK;
	mnl_attr_for_each(attr, nlh, sizeof(*ifa)) {
		if (mnl_attr_get_type(attr) != IFA_LOCAL &&
		    mnl_attr_get_type(attr) != IFA_ADDRESS)
			continue;
		if (mnl_attr_get_payload_len(attr) == 4 &&
		    memcmp(mnl_attr_get_payload(attr), &f->a, 4) == 0)
			f->found = 1;
	}
	return MNL_CB_OK;
}

int
nsh_rtnl_has_addr4(struct mnl_socket *nl, struct in_addr a)
{
	char			 buf[NSH_RTNL_BUF / 8];
	struct nlmsghdr		*nlh;
	struct ifaddrmsg	*ifa;
	struct nsh_rtnl_addr4	 f;

	f.a = a;
	f.found = 0;
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_GETADDR;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	ifa->ifa_family = AF_INET;
	if (nsh_rtnl_talk(nl, nlh, nsh_rtnl_addr_cb, &f) == -1)
		return -1;
	return f.found;
}

int
nsh_rtnl_veth(struct mnl_socket *nl, const char *name,
    const char *alias, const char *peer, int peer_ns)
{
	char			 buf[NSH_RTNL_BUF / 8];
	struct nlmsghdr		*nlh;
	struct ifinfomsg	*ifm, *pifm;
	struct nlattr		*linkinfo, *data, *pn;
	unsigned		 idx;

	if (strlen(name) >= IFNAMSIZ || strlen(peer) >= IFNAMSIZ) {
		errno = EINVAL;
		return -1;
	}
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_NEWLINK;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE |
	    NLM_F_EXCL;
	ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
	ifm->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	linkinfo = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
	mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "veth");
	data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
	pn = mnl_attr_nest_start(nlh, VETH_INFO_PEER);
	/* The peer's attributes follow an ifinfomsg of its own. */
	pifm = (struct ifinfomsg *)((char *)nlh + nlh->nlmsg_len);
	memset(pifm, 0, MNL_ALIGN(sizeof(*pifm)));
	pifm->ifi_family = AF_UNSPEC;
	nlh->nlmsg_len += MNL_ALIGN(sizeof(*pifm));
	mnl_attr_put_strz(nlh, IFLA_IFNAME, peer);
	mnl_attr_put_u32(nlh, IFLA_NET_NS_FD, (uint32_t)peer_ns);
	mnl_attr_nest_end(nlh, pn);
	mnl_attr_nest_end(nlh, data);
	mnl_attr_nest_end(nlh, linkinfo);
	if (nsh_rtnl_talk(nl, nlh, NULL, NULL) == -1)
		return -1;
	if (alias == NULL)
		return 0;
	/* The alias records the owner, for `moat-netns cleanup`. */
	if ((idx = nsh_rtnl_ifindex(nl, name)) == 0)
		return -1;
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_NEWLINK;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
	ifm->ifi_family = AF_UNSPEC;
	ifm->ifi_index = (int)idx;
	mnl_attr_put_strz(nlh, IFLA_IFALIAS, alias);
	return nsh_rtnl_talk(nl, nlh, NULL, NULL);
}

int
nsh_rtnl_link_del(struct mnl_socket *nl, const char *name)
{
	char			 buf[NSH_RTNL_BUF / 8];
	struct nlmsghdr		*nlh;
	struct ifinfomsg	*ifm;

	if (strlen(name) >= IFNAMSIZ) {
		errno = ENODEV;
		return -1;
	}
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_DELLINK;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
	ifm->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	return nsh_rtnl_talk(nl, nlh, NULL, NULL);
}

static void
nsh_rtnl_linkinfo_kind(const struct nlattr *li, char *kind, size_t len)
{
	const struct nlattr	*a;

	mnl_attr_for_each_nested(a, li) {
		if (mnl_attr_get_type(a) == IFLA_INFO_KIND &&
		    mnl_attr_validate(a, MNL_TYPE_STRING) == 0) {
			strncpy(kind, mnl_attr_get_str(a), len - 1);
			kind[len - 1] = '\0';
		}
	}
}

static int
nsh_rtnl_link_cb(const struct nlmsghdr *nlh, void *arg)
{
	struct nsh_rtnl_find		*f = arg;
	const struct nlattr		*a;
	char				 name[IFNAMSIZ] = "", kind[32] = "";
	char				 alias[256] = "";

	if (nlh->nlmsg_type != RTM_NEWLINK)
		return MNL_CB_OK;
	mnl_attr_for_each(a, nlh, sizeof(struct ifinfomsg)) {
		switch (mnl_attr_get_type(a)) {
		case IFLA_IFNAME:
			if (mnl_attr_validate(a, MNL_TYPE_STRING) == 0) {
				strncpy(name, mnl_attr_get_str(a),
				    sizeof(name) - 1);
				name[sizeof(name) - 1] = '\0';
			}
			break;
		case IFLA_IFALIAS:
			if (mnl_attr_validate(a, MNL_TYPE_STRING) == 0) {
				strncpy(alias, mnl_attr_get_str(a),
				    sizeof(alias) - 1);
				alias[sizeof(alias) - 1] = '\0';
			}
			break;
		case IFLA_LINKINFO:
			nsh_rtnl_linkinfo_kind(a, kind, sizeof(kind));
			break;
		default:
			break;
		}
	}
	if (strncmp(name, f->prefix, strlen(f->prefix)) == 0)
		f->fn(name, kind, alias, f->arg);
	return MNL_CB_OK;
}

int
nsh_rtnl_links(struct mnl_socket *nl, const char *prefix,
    void (*fn)(const char *, const char *, const char *, void *), void *arg)
{
	char			 buf[NSH_RTNL_BUF / 8];
	struct nlmsghdr		*nlh;
	struct ifinfomsg	*ifm;
	struct nsh_rtnl_find	 f;

	f.prefix = prefix;
	f.fn = fn;
	f.arg = arg;
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_GETLINK;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
	ifm->ifi_family = AF_UNSPEC;
	return nsh_rtnl_talk(nl, nlh, nsh_rtnl_link_cb, &f);
}
