/*
 * helper_nflog.c - the drop log: an NFLOG socket bound, in a sandbox's
 * network namespace, to the group its table logs dropped packets to
 * (proto/drops_proto.h).
 *
 * What it is: four nfnetlink_log configuration messages, written with
 * libmnl and acknowledged one by one: bind the group, copy DROPS_SNAPLEN
 * bytes of each packet, number the records, deliver them in batches
 * (64 records, or 10 ms).
 * Configuring takes CAP_NET_ADMIN over the namespace, which moat-netns
 * holds while it sets the sandbox up; receiving takes nothing, so
 * moat-netns hands the socket on (NSH_OP_DROPS, then the admin
 * register) and moatd reads the records unprivileged.  The socket stays
 * bound to the namespace it was made in, wherever its descriptor goes.
 *
 * What it is not: a reader.  moat-netns never looks at a record (moatd
 * parses them, with libnetfilter-log), and links no more than libmnl for
 * this.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <arpa/inet.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_log.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>

#include "netns-helper/helper.h"
#include "proto/drops_proto.h"

#define NSH_NFLOG_QTHRESH	64	/* records per batch, at most */
#define NSH_NFLOG_TIMEOUT	1	/* a batch waits at most, 1/100 s */
#define NSH_NFLOG_RCVBUF	(1 << 20) /* room for a burst of records:
					   given as root (SO_RCVBUFFORCE),
					   else moatd asks what rmem_max
					   allows */
#define NSH_NFLOG_BUF		32768	/* one read: an ack, or a batch of
					   records that came first */
/*
 * A group another socket holds refuses the bind (EPERM).  The last
 * reader of a namespace that is attached again may still hold it: moatd
 * reads a sandbox's drop log for 20 ms after the sandbox went.
 */
#define NSH_NFLOG_BIND_TRIES	25
#define NSH_NFLOG_BIND_WAIT_MS	10

enum nsh_nflog_cfg {
	NSH_NFLOG_BIND = 0,
	NSH_NFLOG_MODE,
	NSH_NFLOG_FLAGS,
	NSH_NFLOG_QTHRESHOLD,
	NSH_NFLOG_FLUSH
};

static int	nsh_nflog_cfg(struct mnl_socket *nl, uint16_t group,
		    enum nsh_nflog_cfg what, uint32_t seq);

/* One configuration message for group, sent and its ack read. */
static int
nsh_nflog_cfg(struct mnl_socket *nl, uint16_t group, enum nsh_nflog_cfg what,
    uint32_t seq)
{
	static char			 buf[NSH_NFLOG_BUF];
	struct nlmsghdr			*nlh;
	struct nfgenmsg			*g;
	struct nfulnl_msg_config_cmd	 cmd;
	struct nfulnl_msg_config_mode	 mode;

	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = (NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_CONFIG;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = seq;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->nfgen_family = AF_UNSPEC;
	g->version = NFNETLINK_V0;
	g->res_id = htons(group);
	switch (what) {
	case NSH_NFLOG_BIND:
		memset(&cmd, 0, sizeof(cmd));
		cmd.command = NFULNL_CFG_CMD_BIND;
		mnl_attr_put(nlh, NFULA_CFG_CMD, sizeof(cmd), &cmd);
		break;
	case NSH_NFLOG_MODE:
		memset(&mode, 0, sizeof(mode));
		mode.copy_mode = NFULNL_COPY_PACKET;
		mode.copy_range = htonl(DROPS_SNAPLEN);
		mnl_attr_put(nlh, NFULA_CFG_MODE, sizeof(mode), &mode);
		break;
	case NSH_NFLOG_FLAGS:
		mnl_attr_put_u16(nlh, NFULA_CFG_FLAGS, htons(NFULNL_CFG_F_SEQ));
		break;
	case NSH_NFLOG_QTHRESHOLD:
		mnl_attr_put_u32(nlh, NFULA_CFG_QTHRESH,
		    htonl(NSH_NFLOG_QTHRESH));
		break;
	case NSH_NFLOG_FLUSH:
		mnl_attr_put_u32(nlh, NFULA_CFG_TIMEOUT,
		    htonl(NSH_NFLOG_TIMEOUT));
		break;
	}
	return nsh_nl_talk(nl, nlh, NULL, NULL);
}

int
nsh_nflog_open(uint16_t group)
{
	static const enum nsh_nflog_cfg	 steps[] = { NSH_NFLOG_BIND,
	    NSH_NFLOG_MODE, NSH_NFLOG_FLAGS, NSH_NFLOG_QTHRESHOLD,
	    NSH_NFLOG_FLUSH };
	struct mnl_socket		*nl;
	struct timeval			 tv;
	struct timespec			 nap;
	size_t				 i;
	int				 fd, saved, t, rcvbuf = NSH_NFLOG_RCVBUF;

	if ((nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC)) ==
	    NULL)
		return -1;
	tv.tv_sec = NSH_NETLINK_TIMEOUT_MS / 1000;
	tv.tv_usec = (NSH_NETLINK_TIMEOUT_MS % 1000) * 1000;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) == -1 ||
	    setsockopt(mnl_socket_get_fd(nl), SOL_SOCKET, SO_RCVTIMEO, &tv,
	    sizeof(tv)) == -1)
		goto fail;
	for (t = 0; nsh_nflog_cfg(nl, group, NSH_NFLOG_BIND, 1) == -1; t++) {
		if (errno != EPERM || t + 1 == NSH_NFLOG_BIND_TRIES)
			goto fail;
		nap.tv_sec = 0;
		nap.tv_nsec = NSH_NFLOG_BIND_WAIT_MS * 1000000L;
		(void)nanosleep(&nap, NULL);
	}
	for (i = 1; i < sizeof(steps) / sizeof(steps[0]); i++)
		if (nsh_nflog_cfg(nl, group, steps[i], (uint32_t)i + 1) == -1)
			goto fail;
	/* The reader polls: no timeout of ours stays on the socket. */
	memset(&tv, 0, sizeof(tv));
	fd = mnl_socket_get_fd(nl);
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf,
	    sizeof(rcvbuf));
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == -1 ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == -1)
		goto fail;
	if ((fd = dup(fd)) == -1)
		goto fail;
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) == -1) {
		saved = errno;
		close(fd);
		errno = saved;
		goto fail;
	}
	/*
	 * libmnl closes the descriptor it holds: ours is a copy of it, the
	 * same socket, which stays bound.
	 */
	mnl_socket_close(nl);
	return fd;
 fail:
	saved = errno;
	mnl_socket_close(nl);
	errno = saved;
	return -1;
}
