/*
 * helper_main.c - moat-netns, the privileged helper of `moat run` and
 * `moat attach`.
 *
 * What it is: a small program that programs one sandbox's network and
 * nothing else.  `moat run` or `moat attach` starts it (fork + exec, never
 * setuid) with a SOCK_SEQPACKET socket on fd 3 and speaks helper_proto.h
 * to it: join the sandbox's namespaces, set up held-sockets or veth
 * networking (nftables through libnftnl, routes and links through
 * rtnetlink), create the listening sockets moatd will serve and hand them
 * back, and finally tear down what it added.  `moat-netns cleanup`
 * removes what a crashed run left behind.
 *
 * What it is not: a general tool.  It never runs `nft` or `ip`, accepts
 * no address to bind (it derives them), programs no namespace it started
 * in, and links neither libevent, OpenSSL nor jansson.
 *
 * Privileges (STYLE.md section 12, after bwrap's acquire_privs and
 * OpenSSH's monitor):
 *  - As root it first drops to CAP_NET_ADMIN (nftables, links, routes),
 *    CAP_SYS_ADMIN (setns) and CAP_NET_BIND_SERVICE (port 53), clears the
 *    bounding set of everything else, becomes "nobody" keeping those three
 *    capabilities, and sets no_new_privs.  CAP_SYS_ADMIN goes once the
 *    network is programmed.
 *  - Unprivileged (rootless `moat run`) it has no capability at all until
 *    it joins the sandbox's user namespace, which its own user created;
 *    there it keeps CAP_NET_ADMIN and CAP_NET_BIND_SERVICE, nothing that
 *    reaches outside the sandbox.
 *  - Requests are served from a table of op, allowed phases and
 *    once-only flag (OpenSSH mon_table, MON_ONCE); anything else, or an
 *    op out of phase, or a failed op, ends the session.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <linux/capability.h>
#include <linux/netfilter.h>
#include <linux/nsfs.h>
#include <linux/rtnetlink.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libmnl/libmnl.h>

#include "netns-helper/helper.h"
#include "proto/drops_proto.h"
#include "proto/helper_proto.h"

#define NSH_NOBODY_ID		65534	/* if "nobody" is not in passwd */
#define NSH_VETH_SUBNETS	256	/* X of 10.203.X.0/30 */
#define NSH_SBX_IF_RUN		"eth0"	/* sandbox side of a run's veth */
#define NSH_SBX_IF_ATTACH	"moat0"	/* ... of an attached namespace's */
#define NSH_STAT_MAX		1024	/* bytes of /proc/PID/stat we read */
#define NSH_FOUND_MAX		1024	/* moat objects one cleanup handles */
#define NSH_FOUND_NAME		64	/* longest table name it handles */

#define NSH_CAP(c)		(UINT64_C(1) << (c))
#define NSH_CAPS_SETUP		(NSH_CAP(CAP_NET_ADMIN) | \
				    NSH_CAP(CAP_SYS_ADMIN) | \
				    NSH_CAP(CAP_NET_BIND_SERVICE))
#define NSH_PRIVILEGED_PORT	1024	/* below it, CAP_NET_BIND_SERVICE */

enum nsh_phase {
	NSH_PH_START = 0,	/* nothing yet: HELLO only */
	NSH_PH_HELLO,		/* greeted: JOIN */
	NSH_PH_JOINED,		/* in the sandbox's namespaces: HELD, VETH */
	NSH_PH_READY		/* network programmed: SOCKET, RELEASE,
				   TEARDOWN */
};
#define NSH_PH(p)		(1u << (p))

enum nsh_mode {
	NSH_MODE_NONE = 0,
	NSH_MODE_HELD,
	NSH_MODE_VETH
};

/* The one session this process serves. */
struct nsh_state {
	enum nsh_phase		 phase;
	unsigned		 done;	/* bit per op already served */
	bool			 root;	/* started with real privileges */
	uid_t			 ruid;	/* the user who started us */
	int			 chan;	/* the channel, fd 3 */
	/* the network namespace we began in */
	int			 self_ns;
	int			 sbx_ns;	/* the sandbox's */
	struct mnl_socket	*rtnl_host, *nft_host; /* bound to self_ns */
	struct mnl_socket	*rtnl_sbx, *nft_sbx;	/* bound to sbx_ns */
	enum nsh_mode		 mode;
	bool			 attach;
	bool			 self;		/* JOIN of the namespace we began
						   in (a pod's: NSH_JOIN_SELF) */
	bool			 exempt;	/* NSH_SETUP_EXEMPT */
	uint32_t		 exempt_uid;
	struct nsh_setup	 setup;
	char			 owner[NSH_OWNER_MAX];
	/* What we added, so teardown removes exactly that. */
	bool			 sbx_table;
	bool			 route_local[2];	/* v4, v6 */
	bool			 host_table;
	bool			 veth;
	/* also the host table */
	char			 hostif[IFNAMSIZ];
	char			 sbxif[IFNAMSIZ];
	struct nsh_veth_addrs	 addrs;
	int			 lock_fd;	/* holds subnet X */
	unsigned		 nsockets;
	/* NSH_SETUP_DROPS: the group drops are logged to (else -1), and
	 * the socket bound to it in the sandbox's namespace, until DROPS
	 * hands it over. */
	int			 log_group;
	int			 nflog;
};

struct nsh_handler {
	enum nsh_op	op;
	unsigned	phases;	/* NSH_PH() of the phases it may come in */
	bool		once;	/* at most once per session */
	/* 0 served, 1 served and the session ends, -1 failed (reply set) */
	int		(*fn)(struct nsh_state *, const struct nsh_msg *, int *,
			    struct nsh_msg *, int *);
};

/* One table or link found by a dump, acted on once the dump is over. */
struct nsh_found {
	char	name[NSH_FOUND_NAME];
	char	owner[NSH_OWNER_MAX];
	bool	has_owner;
};

struct nsh_cleanup {
	struct mnl_socket	*nft, *rtnl;
	bool			 dry_run;
	bool			 netns;	/* cleaning a sandbox namespace */
	int			 removed;
	int			 failed;
	bool			 moat_table_gone;
	struct nsh_found	 found[NSH_FOUND_MAX];
	size_t			 nfound;
	bool			 overflow;
};

static void	nsh_usage(FILE *f);
static void	nsh_log(const char *fmt, ...)
		    __attribute__((format(printf, 1, 2)));
static int	nsh_capset(uint64_t keep);
static int	nsh_bounding(uint64_t keep);
static int	nsh_drop_root(void);
static int	nsh_starttime(pid_t pid, unsigned long long *start);
static int	nsh_owner_self(char *buf, size_t len);
static int	nsh_owner_alive(const char *s);
static int	nsh_same_file(int a, int b);
static int	nsh_join_self(struct nsh_state *st, const struct nsh_msg *m,
		    int *fds, int same, struct nsh_msg *reply);
static int	nsh_check_ns(int fd, int type, const char *what,
		    struct nsh_msg *reply);
static int	nsh_op_hello(struct nsh_state *, const struct nsh_msg *, int *,
		    struct nsh_msg *, int *);
static int	nsh_op_join(struct nsh_state *, const struct nsh_msg *, int *,
		    struct nsh_msg *, int *);
static int	nsh_held_exempt(struct nsh_state *st, const struct nsh_msg *m,
		    struct nsh_msg *reply);
static int	nsh_op_held(struct nsh_state *, const struct nsh_msg *, int *,
		    struct nsh_msg *, int *);
static int	nsh_op_veth(struct nsh_state *, const struct nsh_msg *, int *,
		    struct nsh_msg *, int *);
static int	nsh_op_socket(struct nsh_state *, const struct nsh_msg *,
		    int *, struct nsh_msg *, int *);
static int	nsh_op_drops(struct nsh_state *, const struct nsh_msg *,
		    int *, struct nsh_msg *, int *);
static int	nsh_drop_log(struct nsh_state *st, unsigned op,
		    struct nsh_msg *reply);
static int	nsh_op_release(struct nsh_state *, const struct nsh_msg *,
		    int *, struct nsh_msg *, int *);
static int	nsh_op_teardown(struct nsh_state *, const struct nsh_msg *,
		    int *, struct nsh_msg *, int *);
static void	nsh_attached_check(const char *name, const char *comment,
		    void *arg);
static int	nsh_veth_subnet(struct nsh_state *st, struct nsh_msg *reply);
static int	nsh_veth_links(struct nsh_state *st, struct nsh_msg *reply);
static int	nsh_teardown(struct nsh_state *st, bool full);
static void	nsh_state_free(struct nsh_state *st);
static uint64_t	nsh_serve_caps(const struct nsh_setup *s);
static int	nsh_serve(void);
static void	nsh_cleanup_found(struct nsh_cleanup *c, const char *name,
		    const char *owner);
static void	nsh_cleanup_table(const char *name, const char *comment,
		    void *arg);
static void	nsh_cleanup_act(struct nsh_cleanup *c, const char *what,
		    bool table);
static void	nsh_cleanup_link(const char *name, const char *kind,
		    const char *alias, void *arg);
static int	nsh_cleanup(int argc, char *argv[]);
static int	nsh_enter_netns(const char *path);
static void	nsh_counter_print(const char *name, uint64_t pkts,
		    uint64_t bytes, void *arg);
static int	nsh_counters(int argc, char *argv[]);

static const struct nsh_handler nsh_handlers[] = {
	{ NSH_OP_HELLO, NSH_PH(NSH_PH_START), true, nsh_op_hello },
	{ NSH_OP_JOIN, NSH_PH(NSH_PH_HELLO), true, nsh_op_join },
	{ NSH_OP_HELD, NSH_PH(NSH_PH_JOINED), true, nsh_op_held },
	{ NSH_OP_VETH, NSH_PH(NSH_PH_JOINED), true, nsh_op_veth },
	{ NSH_OP_DROPS, NSH_PH(NSH_PH_READY), true, nsh_op_drops },
	{ NSH_OP_SOCKET, NSH_PH(NSH_PH_READY), false, nsh_op_socket },
	{ NSH_OP_RELEASE, NSH_PH(NSH_PH_READY), true, nsh_op_release },
	{ NSH_OP_TEARDOWN, NSH_PH(NSH_PH_HELLO) | NSH_PH(NSH_PH_JOINED) |
	    NSH_PH(NSH_PH_READY), true, nsh_op_teardown },
};

static void
nsh_usage(FILE *f)
{
	fprintf(f,
	    "usage: moat-netns serve\n"
	    "       moat-netns cleanup [--netns PATH] [--dry-run]\n"
	    "       moat-netns counters [--netns PATH]\n"
	    "\n"
	    "The privileged helper of `moat run` and `moat attach`.\n"
	    "  serve     speak the helper protocol on descriptor 3 (started\n"
	    "            by moat; not for interactive use)\n"
	    "  cleanup   remove moat's nftables tables and veths whose owner\n"
	    "            process is gone (root); with --netns, also the\n"
	    "            table and routes moat left in that namespace\n"
	    "  counters  the packets moat's table in the namespace (or in\n"
	    "            PATH's) dropped, per kind (root)\n");
}

static void
nsh_log(const char *fmt, ...)
{
	va_list	ap;
	int	saved = errno;

	fputs("moat-netns: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	errno = saved;
}

/* --- privileges ----------------------------------------------------- */

/* Sets the permitted and effective sets to keep, inheritable empty. */
static int
nsh_capset(uint64_t keep)
{
	struct __user_cap_header_struct	h;
	struct __user_cap_data_struct	d[2];

	memset(&h, 0, sizeof(h));
	memset(d, 0, sizeof(d));
	h.version = _LINUX_CAPABILITY_VERSION_3;
	d[0].permitted = d[0].effective = (uint32_t)keep;
	d[1].permitted = d[1].effective = (uint32_t)(keep >> 32);
	if (syscall(SYS_capset, &h, d) == -1)
		return -1;
	/* Verify: the kernel holds exactly what we asked for. */
	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d) == -1)
		return -1;
	if (d[0].permitted != (uint32_t)keep ||
	    d[1].permitted != (uint32_t)(keep >> 32) ||
	    d[0].effective != (uint32_t)keep ||
	    d[1].effective != (uint32_t)(keep >> 32) ||
	    d[0].inheritable != 0 || d[1].inheritable != 0) {
		errno = EPERM;
		return -1;
	}
	return 0;
}

/* Drops every capability but keep from the bounding set (CAP_SETPCAP). */
static int
nsh_bounding(uint64_t keep)
{
	int	cap;

	for (cap = 0; cap < 64; cap++) {
		if ((keep & NSH_CAP(cap)) != 0)
			continue;
		if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) != 1)
			continue;	/* gone already, or beyond the last */
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == -1)
			return -1;
	}
	return 0;
}

/*
 * The capabilities of NSH_CAPS_SETUP we were started with: root in a
 * container may lack some (a pod's init container has CAP_NET_ADMIN but
 * no CAP_SYS_ADMIN), and an op that needs a missing one fails with EPERM
 * when it gets there.  0 if they cannot be read.
 */
static uint64_t
nsh_caps_had(void)
{
	struct __user_cap_header_struct	h;
	struct __user_cap_data_struct	d[2];

	memset(&h, 0, sizeof(h));
	memset(d, 0, sizeof(d));
	h.version = _LINUX_CAPABILITY_VERSION_3;
	if (syscall(SYS_capget, &h, d) == -1)
		return 0;
	return (d[0].permitted | (uint64_t)d[1].permitted << 32) &
	    NSH_CAPS_SETUP;
}

/*
 * Started as root: keep NSH_CAPS_SETUP (those of them we had), become
 * nobody.  Order as relayd's proc_run: bounding set first (needs
 * CAP_SETPCAP, which then goes), then groups, gid, uid; each change
 * verified.
 */
static int
nsh_drop_root(void)
{
	struct passwd	*pw;
	uid_t		 uid = NSH_NOBODY_ID, r, e, s;
	gid_t		 gid = NSH_NOBODY_ID, rg, eg, sg;
	uint64_t	 keep = nsh_caps_had();

	if ((pw = getpwnam("nobody")) != NULL) {
		uid = pw->pw_uid;
		gid = pw->pw_gid;
	}
	if (uid == 0 || gid == 0) {
		nsh_log("user nobody has uid or gid 0; refusing to run");
		return -1;
	}
	if (nsh_bounding(keep) == -1) {
		nsh_log("cannot clear the capability bounding set: %s",
		    strerror(errno));
		return -1;
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) == -1 &&
	    errno != EINVAL) {
		nsh_log("cannot clear ambient capabilities: %s",
		    strerror(errno));
		return -1;
	}
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) == -1 ||
	    setgroups(0, NULL) == -1 || setresgid(gid, gid, gid) == -1 ||
	    setresuid(uid, uid, uid) == -1) {
		nsh_log("cannot become nobody: %s", strerror(errno));
		return -1;
	}
	if (getresuid(&r, &e, &s) == -1 || r != uid || e != uid || s != uid ||
	    getresgid(&rg, &eg, &sg) == -1 || rg != gid || eg != gid ||
	    sg != gid || getgroups(0, NULL) != 0) {
		nsh_log("identity change did not take");
		return -1;
	}
	if (nsh_capset(keep) == -1 ||
	    prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) == -1) {
		nsh_log("cannot keep the needed capabilities: %s",
		    strerror(errno));
		return -1;
	}
	/* There is no way back to root. */
	if (setuid(0) != -1 || setresuid(0, 0, 0) != -1) {
		nsh_log("could regain root after dropping it");
		return -1;
	}
	return 0;
}

/* --- owners ----------------------------------------------------------- */

/*
 * Reads the start time (field 22) of /proc/PID/stat.  Returns 0, or -1 if
 * the process does not exist or is a zombie (it has exited: only its
 * parent has not reaped it yet).
 */
static int
nsh_starttime(pid_t pid, unsigned long long *start)
{
	char	 path[64], buf[NSH_STAT_MAX], *p, *end;
	ssize_t	 n;
	int	 fd, i;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* The command name may hold anything: skip to its last ')'. */
	if ((p = strrchr(buf, ')')) == NULL || p[1] != ' ')
		return -1;
	if (p[2] == 'Z' || p[2] == 'X')
		return -1;
	p++;
	for (i = 0; i < 19; i++) {
		while (*p == ' ')
			p++;
		while (*p != ' ' && *p != '\0')
			p++;
		if (*p == '\0')
			return -1;
	}
	errno = 0;
	*start = strtoull(p, &end, 10);
	if (errno != 0 || end == p || (*end != ' ' && *end != '\n' &&
	    *end != '\0'))
		return -1;
	return 0;
}

static int
nsh_owner_self(char *buf, size_t len)
{
	unsigned long long	start;
	int			n;

	if (nsh_starttime(getpid(), &start) == -1)
		return -1;
	n = snprintf(buf, len, "moat owner=%d start=%llu", (int)getpid(),
	    start);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

static int
nsh_owner_alive(const char *s)
{
	unsigned long long	 start, now;
	char			*end;
	long			 pid;

	if (STRNCMP_LIT(s, "moat owner=") != 0)
		return -1;
	s += LIT_LEN("moat owner=");
	if (*s < '1' || *s > '9')
		return -1;
	errno = 0;
	pid = strtol(s, &end, 10);
	if (errno != 0 || pid <= 0 || pid > 4194304 ||
	    STRNCMP_LIT(end, " start=") != 0)
		return -1;
	s = end + LIT_LEN(" start=");
	if (*s < '0' || *s > '9')
		return -1;
	start = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0')
		return -1;
	if (nsh_starttime((pid_t)pid, &now) == -1)
		return 0;
	return now == start ? 1 : 0;
}

/* --- checks ----------------------------------------------------------- */

/* 1 if a and b are the same file (namespace), 0 if not, -1 on error. */
static int
nsh_same_file(int a, int b)
{
	struct stat	sa, sb;

	if (fstat(a, &sa) == -1 || fstat(b, &sb) == -1)
		return -1;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static int
nsh_check_ns(int fd, int type, const char *what, struct nsh_msg *reply)
{
	int	t;

	if ((t = ioctl(fd, NS_GET_NSTYPE)) == -1 || t != type) {
		nsh_proto_reply(reply, NSH_OP_JOIN, EINVAL,
		    "the %s descriptor is not a %s namespace", what, what);
		return -1;
	}
	return 0;
}

/* --- the ops ---------------------------------------------------------- */

static int
nsh_op_hello(struct nsh_state *st, const struct nsh_msg *m, int *fds,
    struct nsh_msg *reply, int *outfd)
{
	st->phase = NSH_PH_HELLO;
	return 0;
}

/*
 * Why JOIN is safe: it enters only a network namespace that is not the
 * one we started in (so held mode can never turn the host's own network
 * into a sandbox), and, unprivileged, only a user namespace our own user
 * created that owns that network namespace: our capabilities there reach
 * nothing the user could not already change.  The one exception is
 * asked for by name (NSH_JOIN_SELF, root only): a pod's init container
 * programs the pod's namespace, which it runs in, and HELD then must
 * exempt the uid of the moatd that runs there too.
 */
static int
nsh_op_join(struct nsh_state *st, const struct nsh_msg *m, int *fds,
    struct nsh_msg *reply, int *outfd)
{
	int	userns = -1, netns, owner = -1, same;
	uid_t	uid;

	if ((m->u.join.flags & NSH_JOIN_USERNS) != 0) {
		userns = fds[0];
		netns = fds[1];
	} else
		netns = fds[0];
	if (st->root && userns != -1) {
		nsh_proto_reply(reply, m->op, EINVAL, "a helper running as "
		    "root joins the network namespace only");
		return -1;
	}
	if (!st->root && userns == -1) {
		nsh_proto_reply(reply, m->op, EPERM, "an unprivileged helper "
		    "needs the sandbox's user namespace");
		return -1;
	}
	if (nsh_check_ns(netns, CLONE_NEWNET, "network", reply) == -1)
		return -1;
	same = nsh_same_file(netns, st->self_ns);
	if ((m->u.join.flags & NSH_JOIN_SELF) != 0)
		return nsh_join_self(st, m, fds, same, reply);
	if (same != 0) {
		nsh_proto_reply(reply, m->op, EPERM, "refusing to program "
		    "the network namespace moat runs in");
		return -1;
	}
	if (userns != -1) {
		if (nsh_check_ns(userns, CLONE_NEWUSER, "user", reply) == -1)
			return -1;
		if (ioctl(userns, NS_GET_OWNER_UID, &uid) == -1 ||
		    uid != st->ruid) {
			nsh_proto_reply(reply, m->op, EPERM, "the user "
			    "namespace belongs to another user");
			return -1;
		}
		if ((owner = ioctl(netns, NS_GET_USERNS)) == -1 ||
		    nsh_same_file(owner, userns) != 1) {
			if (owner != -1)
				close(owner);
			nsh_proto_reply(reply, m->op, EPERM, "the network "
			    "namespace is not owned by that user namespace");
			return -1;
		}
		close(owner);
		if (setns(userns, CLONE_NEWUSER) == -1) {
			nsh_proto_reply(reply, m->op, errno, "cannot join the "
			    "sandbox's user namespace: %s", strerror(errno));
			return -1;
		}
		/* In there we hold every capability: keep two. */
		if (nsh_bounding(NSH_CAPS_SETUP) == -1 ||
		    nsh_capset(NSH_CAPS_SETUP) == -1) {
			nsh_proto_reply(reply, m->op, errno, "cannot drop "
			    "capabilities: %s", strerror(errno));
			return -1;
		}
	} else if ((st->rtnl_host = nsh_rtnl_open()) == NULL ||
	    (st->nft_host = nsh_nft_open()) == NULL) {
		nsh_proto_reply(reply, m->op, errno, "netlink: %s",
		    strerror(errno));
		return -1;
	}
	if (setns(netns, CLONE_NEWNET) == -1) {
		nsh_proto_reply(reply, m->op, errno, "cannot join the "
		    "sandbox's network namespace: %s", strerror(errno));
		return -1;
	}
	if ((st->rtnl_sbx = nsh_rtnl_open()) == NULL ||
	    (st->nft_sbx = nsh_nft_open()) == NULL) {
		nsh_proto_reply(reply, m->op, errno, "netlink in the sandbox: "
		    "%s", strerror(errno));
		return -1;
	}
	st->sbx_ns = netns;
	if ((m->u.join.flags & NSH_JOIN_USERNS) != 0) {
		fds[1] = -1;
		close(userns);
		fds[0] = -1;
	} else
		fds[0] = -1;
	st->phase = NSH_PH_JOINED;
	return 0;
}

/*
 * JOIN of the namespace we run in (NSH_JOIN_SELF): root only, and it
 * must be that namespace; no setns.
 */
static int
nsh_join_self(struct nsh_state *st, const struct nsh_msg *m, int *fds,
    int same, struct nsh_msg *reply)
{
	if (!st->root) {
		nsh_proto_reply(reply, m->op, EPERM, "only root may program "
		    "the namespace it runs in");
		return -1;
	}
	if (same != 1) {
		nsh_proto_reply(reply, m->op, EINVAL, "the namespace to program "
		    "as its own is not the one moat-netns runs in");
		return -1;
	}
	if ((st->rtnl_sbx = nsh_rtnl_open()) == NULL ||
	    (st->nft_sbx = nsh_nft_open()) == NULL) {
		nsh_proto_reply(reply, m->op, errno, "netlink: %s",
		    strerror(errno));
		return -1;
	}
	st->sbx_ns = fds[0];
	fds[0] = -1;
	st->self = true;
	st->phase = NSH_PH_JOINED;
	return 0;
}

/*
 * An attached namespace must not already be behind a live moat, nor be a
 * pod's (behind the moatd inside it); a pod's table may be replaced by
 * the same set-up (an init container that runs again).
 */
struct nsh_busy {
	bool	exempt;		/* this set-up is a pod's */
	int	busy;		/* 1: a live owner; 2: a pod's table */
};

static void
nsh_attached_check(const char *name, const char *comment, void *arg)
{
	struct nsh_busy	*b = arg;

	if (strcmp(name, NSH_TABLE) != 0)
		return;
	if (nsh_owner_alive(comment) == 1)
		b->busy = 1;
	else if (!b->exempt && STRNCMP_LIT(comment, NSH_OWNER_POD) == 0)
		b->busy = 2;
}

/*
 * The egress table: what packet sockets send on any interface.  A
 * namespace moat run made has only lo and moat's veth, and nothing in it
 * may add an interface; a frame out of moat's veth meets the host side's
 * table.  So a kernel without egress hooks on every interface leaves a
 * run as safe as before, and it goes on without them.  An attached
 * namespace has interfaces of its own (a container's eth0): without the
 * hooks, attaching would leave them open, so it is refused.
 */
static int
nsh_egress(struct nsh_state *st, const char *sbx_if, unsigned op,
    struct nsh_msg *reply)
{
	if (nsh_nft_egress(st->nft_sbx, st->owner, sbx_if, &st->addrs,
	    st->log_group, st->exempt ? &st->exempt_uid : NULL) == 0)
		return 0;
	if (!st->attach && (errno == EINVAL || errno == EOPNOTSUPP ||
	    errno == ENOENT))
		return 0;
	nsh_proto_reply(reply, op, errno, "nftables table netdev %s: %s%s",
	    NSH_TABLE, strerror(errno), errno == EINVAL ||
	    errno == EOPNOTSUPP || errno == ENOENT ? " (this kernel cannot "
	    "hook the egress of every interface, those added later "
	    "included; without that, frames sent by packet sockets would "
	    "leave the attached namespace unchecked: refusing to attach)" :
	    "");
	return -1;
}

/*
 * A pod's set-up (NSH_SETUP_EXEMPT): moatd runs inside the namespace as
 * exempt_uid.  Its table says so instead of naming a process (it lives
 * as long as the namespace: cleanup keeps it), and the namespace keeps
 * its own routes, which moatd's traffic takes.  Only a pod's namespace
 * (JOIN_SELF) or an attached one, and never uid 0 (every process of a
 * container that is root would be exempt).
 */
static int
nsh_held_exempt(struct nsh_state *st, const struct nsh_msg *m,
    struct nsh_msg *reply)
{
	st->exempt = (m->u.setup.flags & NSH_SETUP_EXEMPT) != 0;
	if (st->self && !st->exempt) {
		nsh_proto_reply(reply, m->op, EPERM, "the namespace moat-netns "
		    "runs in is programmed only for a moatd inside it, whose "
		    "uid is exempt");
		return -1;
	}
	if (!st->exempt)
		return 0;
	st->exempt_uid = m->u.setup.exempt_uid;
	snprintf(st->owner, sizeof(st->owner), "%s%u", NSH_OWNER_POD,
	    (unsigned)st->exempt_uid);
	return 0;
}

/*
 * Why HELD is safe: it changes only the sandbox's namespace (we are in
 * it, and JOIN refused our own unless asked for a pod's): loopback up,
 * `local default` routes so nothing can leave (but in a pod, whose moatd
 * needs the namespace's own), and the table moat owns, replaced in one
 * batch.
 */
static int
nsh_op_held(struct nsh_state *st, const struct nsh_msg *m, int *fds,
    struct nsh_msg *reply, int *outfd)
{
	static const int	fam[2] = { AF_INET, AF_INET6 };
	struct nsh_busy		b;
	unsigned		lo;
	int			i;

	st->setup = m->u.setup;
	st->attach = (m->u.setup.flags & NSH_SETUP_ATTACH) != 0;
	if (nsh_held_exempt(st, m, reply) == -1)
		return -1;
	b.exempt = st->exempt;
	b.busy = 0;
	if (st->attach && (nsh_nft_tables(st->nft_sbx, NSH_TABLE,
	    nsh_attached_check, &b) == -1 || b.busy)) {
		nsh_proto_reply(reply, m->op, b.busy ? EBUSY : errno, "%s",
		    b.busy == 1 ? "the namespace is already attached to a "
		    "running moat" : b.busy == 2 ? "the namespace is a pod's, "
		    "behind the moatd inside it (moat pod-init)" :
		    "cannot list nftables tables");
		return -1;
	}
	if (nsh_drop_log(st, m->op, reply) == -1)
		return -1;
	if (nsh_nft_held(st->nft_sbx, st->owner, m->u.setup.dns_port,
	    m->u.setup.transparent_port, st->log_group, st->exempt ?
	    &st->exempt_uid : NULL) == -1) {
		nsh_proto_reply(reply, m->op, errno, "nftables table inet %s: "
		    "%s", NSH_TABLE, strerror(errno));
		return -1;
	}
	st->sbx_table = true;
	if (nsh_egress(st, NULL, m->op, reply) == -1)
		return -1;
	if ((lo = nsh_rtnl_ifindex(st->rtnl_sbx, "lo")) == 0 ||
	    nsh_rtnl_link_up(st->rtnl_sbx, lo) == -1) {
		nsh_proto_reply(reply, m->op, errno, "cannot set lo up: %s",
		    strerror(errno));
		return -1;
	}
	for (i = 0; i < 2 && !st->exempt; i++) {
		if (nsh_rtnl_route(st->rtnl_sbx, true, fam[i], NULL, 0, NULL,
		    lo, RT_TABLE_LOCAL, RTN_LOCAL) == 0)
			st->route_local[i] = true;
		else if (errno != EEXIST) {
			nsh_proto_reply(reply, m->op, errno, "cannot add the "
			    "local default route (%s): %s", i == 0 ? "IPv4" :
			    "IPv6", strerror(errno));
			return -1;
		}
	}
	st->mode = NSH_MODE_HELD;
	st->phase = NSH_PH_READY;
	return 0;
}

/*
 * Picks X for 10.203.X.0/30: a subnet no interface uses, held for our
 * lifetime by an abstract socket named after it (released by the kernel
 * whenever we exit, so a crash never leaks it).
 */
static int
nsh_veth_subnet(struct nsh_state *st, struct nsh_msg *reply)
{
	struct sockaddr_un	sun;
	socklen_t		slen;
	struct in_addr		a;
	unsigned		x;
	int			fd, used, n;

	for (x = 0; x < NSH_VETH_SUBNETS; x++) {
		if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
			break;
		memset(&sun, 0, sizeof(sun));
		sun.sun_family = AF_UNIX;
		n = snprintf(sun.sun_path + 1, sizeof(sun.sun_path) - 1,
		    "moat-veth-%u", x);
		slen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
		    (size_t)n);
		if (bind(fd, (struct sockaddr *)&sun, slen) == -1) {
			close(fd);
			continue;
		}
		a.s_addr = htonl(0x0acb0001u | (x << 8));	/* 10.203.X.1 */
		if ((used = nsh_rtnl_has_addr4(st->rtnl_host, a)) != 0) {
			close(fd);
			if (used == -1)
				break;
			continue;
		}
		st->lock_fd = fd;
		st->addrs.index = x;
		st->addrs.host4 = a;
		st->addrs.sbx4.s_addr = htonl(0x0acb0002u | (x << 8));
		memset(&st->addrs.host6, 0, sizeof(st->addrs.host6));
		st->addrs.host6.s6_addr[0] = 0xfd;
		st->addrs.host6.s6_addr[2] = 0x02;
		st->addrs.host6.s6_addr[3] = 0x03;
		st->addrs.host6.s6_addr[4] = (uint8_t)(x >> 8);
		st->addrs.host6.s6_addr[5] = (uint8_t)x;
		st->addrs.sbx6 = st->addrs.host6;
		st->addrs.host6.s6_addr[15] = 1;
		st->addrs.sbx6.s6_addr[15] = 2;
		return 0;
	}
	nsh_proto_reply(reply, NSH_OP_VETH, EADDRINUSE, "no free 10.203.X.0/30 "
	    "subnet for a veth");
	return -1;
}

/* The links, addresses and routes of a veth gateway. */
static int
nsh_veth_links(struct nsh_state *st, struct nsh_msg *reply)
{
	static const char	 az[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	static const uint8_t	 half[2][16] = { { 0 }, { 0x80 } };
	uint8_t			 rnd[NSH_TAG_LEN];
	char			 tag[NSH_TAG_LEN + 1];
	struct in_addr		 v4half[2];
	const char		*what;
	unsigned		 hidx, sidx, lo;
	int			 i;

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		what = "getrandom";
		goto fail;
	}
	for (i = 0; i < NSH_TAG_LEN; i++)
		tag[i] = az[rnd[i] % (sizeof(az) - 1)];
	tag[NSH_TAG_LEN] = '\0';
	snprintf(st->hostif, sizeof(st->hostif), "%s%s", NSH_PREFIX, tag);
	snprintf(st->sbxif, sizeof(st->sbxif), "%s", st->attach ?
	    NSH_SBX_IF_ATTACH : NSH_SBX_IF_RUN);
	what = "cannot create the veth pair";
	if (nsh_rtnl_veth(st->rtnl_host, st->hostif, st->owner, st->sbxif,
	    st->sbx_ns) == -1)
		goto fail;
	st->veth = true;
	what = "cannot configure the host side of the veth";
	if ((hidx = nsh_rtnl_ifindex(st->rtnl_host, st->hostif)) == 0 ||
	    nsh_rtnl_addr_add(st->rtnl_host, hidx, AF_INET, &st->addrs.host4,
	    30) == -1 || nsh_rtnl_addr_add(st->rtnl_host, hidx, AF_INET6,
	    &st->addrs.host6, 64) == -1 ||
	    nsh_rtnl_link_up(st->rtnl_host, hidx) == -1)
		goto fail;
	what = "cannot configure the sandbox side of the veth";
	if ((sidx = nsh_rtnl_ifindex(st->rtnl_sbx, st->sbxif)) == 0 ||
	    (lo = nsh_rtnl_ifindex(st->rtnl_sbx, "lo")) == 0 ||
	    nsh_rtnl_link_up(st->rtnl_sbx, lo) == -1 ||
	    nsh_rtnl_addr_add(st->rtnl_sbx, sidx, AF_INET, &st->addrs.sbx4,
	    30) == -1 || nsh_rtnl_addr_add(st->rtnl_sbx, sidx, AF_INET6,
	    &st->addrs.sbx6, 64) == -1 ||
	    nsh_rtnl_link_up(st->rtnl_sbx, sidx) == -1)
		goto fail;
	/*
	 * Two half routes (0/1 and 128/1) rather than a default route: an
	 * attached namespace keeps its own default route, and ours, more
	 * specific, wins.
	 */
	what = "cannot add the sandbox's routes";
	v4half[0].s_addr = htonl(0);
	v4half[1].s_addr = htonl(0x80000000u);
	for (i = 0; i < 2; i++) {
		if (nsh_rtnl_route(st->rtnl_sbx, true, AF_INET, &v4half[i], 1,
		    &st->addrs.host4, sidx, RT_TABLE_MAIN, RTN_UNICAST) == -1 ||
		    nsh_rtnl_route(st->rtnl_sbx, true, AF_INET6, half[i], 1,
		    &st->addrs.host6, sidx, RT_TABLE_MAIN, RTN_UNICAST) == -1)
			goto fail;
	}
	return 0;
 fail:
	nsh_proto_reply(reply, NSH_OP_VETH, errno != 0 ? errno : EIO, "%s: %s",
	    what, strerror(errno));
	return -1;
}

/*
 * Why VETH is safe: root only; it adds one veth whose host end carries a
 * name and subnet no one else uses, a host table named after that veth
 * that only ever matches packets coming in from it (redirecting them to
 * moatd's listeners, dropping the rest, never forwarding), and the
 * sandbox's own table.  Nothing else on the host changes.
 */
static int
nsh_op_veth(struct nsh_state *st, const struct nsh_msg *m, int *fds,
    struct nsh_msg *reply, int *outfd)
{
	struct nsh_busy	b = { .exempt = false, .busy = 0 };

	st->setup = m->u.setup;
	st->attach = (m->u.setup.flags & NSH_SETUP_ATTACH) != 0;
	if (!st->root) {
		nsh_proto_reply(reply, m->op, EPERM, "veth mode needs root");
		return -1;
	}
	if (st->self) {
		nsh_proto_reply(reply, m->op, EPERM, "the namespace moat-netns "
		    "runs in is programmed only in held mode, for a moatd "
		    "inside it");
		return -1;
	}
	if (st->attach && (nsh_nft_tables(st->nft_sbx, NSH_TABLE,
	    nsh_attached_check, &b) == -1 || b.busy)) {
		nsh_proto_reply(reply, m->op, b.busy ? EBUSY : errno, "%s",
		    b.busy == 1 ? "the namespace is already attached to a "
		    "running moat" : b.busy == 2 ? "the namespace is a pod's, "
		    "behind the moatd inside it (moat pod-init)" :
		    "cannot list nftables tables");
		return -1;
	}
	/* The drop log is bound in the sandbox's namespace, from here. */
	if (nsh_drop_log(st, m->op, reply) == -1)
		return -1;
	/* The listeners of veth mode live on the host side. */
	if (setns(st->self_ns, CLONE_NEWNET) == -1) {
		nsh_proto_reply(reply, m->op, errno, "cannot return to the "
		    "host's network namespace: %s", strerror(errno));
		return -1;
	}
	if (nsh_veth_subnet(st, reply) == -1)
		return -1;
	/* Sandbox side first: from its first packet it is default-deny. */
	if (nsh_nft_veth_sandbox(st->nft_sbx, st->owner, st->attach ?
	    NSH_SBX_IF_ATTACH : NSH_SBX_IF_RUN, &st->addrs,
	    st->log_group) == -1) {
		nsh_proto_reply(reply, m->op, errno, "nftables table inet %s "
		    "in the sandbox: %s", NSH_TABLE, strerror(errno));
		return -1;
	}
	st->sbx_table = true;
	if (nsh_egress(st, st->attach ? NSH_SBX_IF_ATTACH : NSH_SBX_IF_RUN,
	    m->op, reply) == -1)
		return -1;
	if (nsh_veth_links(st, reply) == -1)
		return -1;
	if (nsh_nft_veth_host(st->nft_host, st->hostif, st->owner, st->hostif,
	    &st->addrs, st->setup.dns_port, st->setup.transparent_port,
	    st->setup.ports, st->setup.nports) == -1) {
		nsh_proto_reply(reply, m->op, errno, "nftables table inet %s: "
		    "%s", st->hostif, strerror(errno));
		return -1;
	}
	st->host_table = true;
	st->mode = NSH_MODE_VETH;
	st->phase = NSH_PH_READY;
	nsh_proto_reply(reply, m->op, 0, NULL);
	reply->u.reply.index = st->addrs.index;
	snprintf(reply->u.reply.ifname, sizeof(reply->u.reply.ifname), "%s",
	    st->hostif);
	return 0;
}

/*
 * Why SOCKET is safe: the address is ours to choose, not the client's
 * (the sandbox's loopback in held mode, the veth's host address in veth
 * mode), and the port must be one the setup named, so the socket is
 * reachable from the sandbox only and only where the rules expect it.
 */
static int
nsh_op_socket(struct nsh_state *st, const struct nsh_msg *m, int *fds,
    struct nsh_msg *reply, int *outfd)
{
	const struct nsh_socket	*s = &m->u.socket;
	struct in_addr		 lo4;
	const void		*addr;
	unsigned		 i;
	bool			 ok;
	int			 family, fd;

	if (st->nsockets >= NSH_SOCKETS_MAX) {
		nsh_proto_reply(reply, m->op, EMFILE, "more than %d sockets",
		    NSH_SOCKETS_MAX);
		return -1;
	}
	ok = s->port == st->setup.dns_port ||
	    (s->type == NSH_SOCK_STREAM &&
	    s->port == st->setup.transparent_port);
	for (i = 0; i < st->setup.nports && s->type == NSH_SOCK_STREAM; i++)
		if (s->port == st->setup.ports[i])
			ok = true;
	if (!ok) {
		nsh_proto_reply(reply, m->op, EPERM, "port %u (%s) is not a "
		    "listener of this sandbox", s->port, s->type ==
		    NSH_SOCK_DGRAM ? "udp" : "tcp");
		return -1;
	}
	family = s->family == NSH_AF_INET ? AF_INET : AF_INET6;
	lo4.s_addr = htonl(INADDR_LOOPBACK);
	if (st->mode == NSH_MODE_HELD)
		addr = family == AF_INET ? (const void *)&lo4 :
		    (const void *)&in6addr_loopback;
	else
		addr = family == AF_INET ? (const void *)&st->addrs.host4 :
		    (const void *)&st->addrs.host6;
	if ((fd = nsh_sock_listen(family, s->type == NSH_SOCK_STREAM ?
	    SOCK_STREAM : SOCK_DGRAM, addr, s->port)) == -1) {
		nsh_proto_reply(reply, m->op, errno, "cannot bind %s port %u: "
		    "%s", family == AF_INET ? "IPv4" : "IPv6", s->port,
		    strerror(errno));
		return -1;
	}
	st->nsockets++;
	*outfd = fd;
	return 0;
}

/*
 * With NSH_SETUP_DROPS, in the sandbox's namespace (HELD and VETH call
 * it while they are in there): the group the table logs drops to, and
 * the socket bound to it.  A group someone else holds there (an
 * attached namespace's own NFLOG reader, a moat still attached) refuses
 * the setup: the drops would be logged to them.
 */
static int
nsh_drop_log(struct nsh_state *st, unsigned op, struct nsh_msg *reply)
{
	if ((st->setup.flags & NSH_SETUP_DROPS) == 0)
		return 0;
	if ((st->nflog = nsh_nflog_open(DROPS_NFLOG_GROUP)) == -1) {
		nsh_proto_reply(reply, op, errno, "cannot bind NFLOG group %u "
		    "for the drop log: %s%s", DROPS_NFLOG_GROUP,
		    strerror(errno), errno == EPERM ? " (another socket of "
		    "the namespace may hold it)" : "");
		return -1;
	}
	st->log_group = DROPS_NFLOG_GROUP;
	return 0;
}

/*
 * Why DROPS is safe: it hands over a socket that only receives what the
 * sandbox's own table logs (the headers of its dropped packets) and can
 * configure nothing without CAP_NET_ADMIN over that namespace, which its
 * reader, moatd, does not have.
 */
static int
nsh_op_drops(struct nsh_state *st, const struct nsh_msg *m, int *fds,
    struct nsh_msg *reply, int *outfd)
{
	if (st->nflog == -1) {
		nsh_proto_reply(reply, m->op, EPERM, "the setup did not ask "
		    "for the drop log");
		return -1;
	}
	*outfd = st->nflog;
	st->nflog = -1;
	return 0;
}

/*
 * Held `moat run`: the namespace dies with the sandbox; nothing to undo.
 * A pod's (`moat pod-init`): the table stays for the pod's lifetime.
 */
static int
nsh_op_release(struct nsh_state *st, const struct nsh_msg *m, int *fds,
    struct nsh_msg *reply, int *outfd)
{
	if (st->mode != NSH_MODE_HELD || (st->attach && !st->exempt)) {
		nsh_proto_reply(reply, m->op, EPERM, "only a held-mode run may "
		    "release its helper; tear down instead");
		return -1;
	}
	return 1;
}

static int
nsh_op_teardown(struct nsh_state *st, const struct nsh_msg *m, int *fds,
    struct nsh_msg *reply, int *outfd)
{
	if (nsh_teardown(st, true) == -1) {
		nsh_proto_reply(reply, m->op, errno, "teardown incomplete: %s "
		    "(run moat-netns cleanup)", strerror(errno));
		return -1;
	}
	return 1;
}

/*
 * Removes what this session added.  full: everything (TEARDOWN); else
 * (the client vanished or broke the protocol) the host side only: the
 * veth goes, the sandbox keeps its default-deny table and has no network
 * at all.  Returns 0, or -1 with errno of the first failure (every step
 * is still tried).
 */
static int
nsh_teardown(struct nsh_state *st, bool full)
{
	static const int	fam[2] = { AF_INET, AF_INET6 };
	unsigned		lo;
	int			i, first = 0;

	if (st->host_table) {
		if (nsh_nft_table_del(st->nft_host, st->hostif) == -1 &&
		    errno != ENOENT && first == 0)
			first = errno;
		st->host_table = false;
	}
	if (st->veth) {
		if (nsh_rtnl_link_del(st->rtnl_host, st->hostif) == -1 &&
		    errno != ENODEV && first == 0)
			first = errno;
		st->veth = false;
	}
	if (full && st->sbx_table) {
		if (nsh_nft_table_del(st->nft_sbx, NSH_TABLE) == -1 &&
		    errno != ENOENT && first == 0)
			first = errno;
		st->sbx_table = false;
	}
	if (full && st->attach && (st->route_local[0] ||
	    st->route_local[1])) {
		lo = nsh_rtnl_ifindex(st->rtnl_sbx, "lo");
		for (i = 0; i < 2; i++) {
			if (!st->route_local[i])
				continue;
			if (nsh_rtnl_route(st->rtnl_sbx, false, fam[i], NULL, 0,
			    NULL, lo, RT_TABLE_LOCAL, RTN_LOCAL) == -1 &&
			    errno != ESRCH && first == 0)
				first = errno;
			st->route_local[i] = false;
		}
	}
	if (first != 0) {
		errno = first;
		return -1;
	}
	return 0;
}

static void
nsh_state_free(struct nsh_state *st)
{
	if (st->rtnl_host != NULL)
		mnl_socket_close(st->rtnl_host);
	if (st->nft_host != NULL)
		mnl_socket_close(st->nft_host);
	if (st->rtnl_sbx != NULL)
		mnl_socket_close(st->rtnl_sbx);
	if (st->nft_sbx != NULL)
		mnl_socket_close(st->nft_sbx);
	st->rtnl_host = st->nft_host = st->rtnl_sbx = st->nft_sbx = NULL;
	if (st->sbx_ns != -1)
		close(st->sbx_ns);
	if (st->self_ns != -1)
		close(st->self_ns);
	if (st->lock_fd != -1)
		close(st->lock_fd);
	if (st->nflog != -1)
		close(st->nflog);
	st->sbx_ns = st->self_ns = st->lock_fd = st->nflog = -1;
}

/* --- serve ------------------------------------------------------------ */

/* What a programmed session keeps: CAP_NET_ADMIN for the teardown, and
 * CAP_NET_BIND_SERVICE only if a listener's port needs it. */
static uint64_t
nsh_serve_caps(const struct nsh_setup *s)
{
	uint64_t	caps = NSH_CAP(CAP_NET_ADMIN);
	unsigned	i;
	bool		low;

	low = s->dns_port < NSH_PRIVILEGED_PORT ||
	    s->transparent_port < NSH_PRIVILEGED_PORT;
	for (i = 0; i < s->nports && i < NSH_PORTS_MAX; i++)
		if (s->ports[i] < NSH_PRIVILEGED_PORT)
			low = true;
	if (low)
		caps |= NSH_CAP(CAP_NET_BIND_SERVICE);
	return caps;
}

static int
nsh_serve(void)
{
	struct nsh_state		 st;
	struct nsh_msg			 m, reply;
	const struct nsh_handler	*h;
	struct pollfd			 pfd[2];
	sigset_t			 mask;
	const char			*err;
	size_t				 i;
	int				 fds[NSH_FDS_MAX], outfd, r, type;
	int				 rc = 1, sfd = -1, dom;
	socklen_t			 sl;

	memset(&st, 0, sizeof(st));
	st.chan = NSH_CHANNEL_FD;
	st.self_ns = st.sbx_ns = st.lock_fd = st.nflog = -1;
	st.log_group = -1;
	st.ruid = getuid();
	st.root = geteuid() == 0;

	sl = sizeof(type);
	if (getsockopt(st.chan, SOL_SOCKET, SO_TYPE, &type, &sl) == -1 ||
	    type != SOCK_SEQPACKET || getsockopt(st.chan, SOL_SOCKET,
	    SO_DOMAIN, &dom, &sl) == -1 || dom != AF_UNIX) {
		nsh_log("descriptor %d is not a SOCK_SEQPACKET Unix socket; "
		    "moat-netns serve is started by moat run or moat attach",
		    NSH_CHANNEL_FD);
		return 2;
	}
	if (fcntl(st.chan, F_SETFD, FD_CLOEXEC) == -1 ||
	    close_range(NSH_CHANNEL_FD + 1, ~0u, 0) == -1) {
		nsh_log("cannot tidy descriptors: %s", strerror(errno));
		return 1;
	}
	/* The namespace we start in is never a sandbox (see JOIN). */
	if ((st.self_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)) ==
	    -1 || nsh_owner_self(st.owner, sizeof(st.owner)) == -1) {
		nsh_log("cannot read /proc/self: %s", strerror(errno));
		goto out;
	}
	if (st.root && nsh_drop_root() == -1)
		goto out;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 ||
	    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1) {
		nsh_log("prctl: %s", strerror(errno));
		goto out;
	}
	/* A TERM, INT or HUP ends the session like a vanished client. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	signal(SIGPIPE, SIG_IGN);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) == -1 ||
	    (sfd = signalfd(-1, &mask, SFD_CLOEXEC)) == -1) {
		nsh_log("signalfd: %s", strerror(errno));
		goto out;
	}

	for (;;) {
		pfd[0].fd = st.chan;
		pfd[0].events = POLLIN;
		pfd[1].fd = sfd;
		pfd[1].events = POLLIN;
		if (poll(pfd, 2, -1) == -1) {
			if (errno == EINTR)
				continue;
			nsh_log("poll: %s", strerror(errno));
			break;
		}
		if (pfd[1].revents != 0) {
			nsh_log("signalled: ending the session");
			break;
		}
		r = nsh_proto_recv(st.chan, &m, fds, 0, &err);
		if (r == 1) {
			if (st.phase == NSH_PH_READY)
				nsh_log("the client went away: removing the "
				    "host side, the sandbox stays closed");
			break;
		}
		if (r == -1) {
			nsh_log("protocol error: %s", err);
			nsh_proto_reply(&reply, NSH_OP_HELLO, EPROTO,
			    "protocol error: %s", err);
			(void)nsh_proto_send(st.chan, &reply, NULL);
			break;
		}
		h = NULL;
		for (i = 0; i < sizeof(nsh_handlers) /
		    sizeof(nsh_handlers[0]); i++)
			if (nsh_handlers[i].op == m.op)
				h = &nsh_handlers[i];
		if (h == NULL || (h->phases & NSH_PH(st.phase)) == 0 ||
		    (h->once && (st.done & (1u << m.op)) != 0)) {
			nsh_log("%s not allowed now: ending the session",
			    nsh_proto_opname(m.op));
			nsh_proto_reply(&reply, m.op != NSH_OP_REPLY ? m.op :
			    NSH_OP_HELLO, EPROTO, "%s not allowed now",
			    nsh_proto_opname(m.op));
			(void)nsh_proto_send(st.chan, &reply, NULL);
			for (i = 0; i < NSH_FDS_MAX; i++)
				if (fds[i] != -1)
					close(fds[i]);
			break;
		}
		st.done |= 1u << m.op;
		outfd = -1;
		nsh_proto_reply(&reply, m.op, 0, NULL);
		r = h->fn(&st, &m, fds, &reply, &outfd);
		for (i = 0; i < NSH_FDS_MAX; i++)
			if (fds[i] != -1)
				close(fds[i]);
		if (r == -1)
			nsh_log("%s failed: %s", nsh_proto_opname(m.op),
			    reply.u.reply.text);
		if (outfd != -1)
			reply.nfds = 1;
		if (nsh_proto_send(st.chan, &reply, outfd != -1 ? &outfd :
		    NULL) == -1)
			nsh_log("cannot answer %s: %s", nsh_proto_opname(m.op),
			    strerror(errno));
		if (outfd != -1)
			close(outfd);
		if (r == -1)
			break;
		if (r == 1) {
			rc = 0;
			goto out;
		}
		/*
		 * The network is programmed: setns is no longer needed, and
		 * binding a port below 1024 only if the setup has one.
		 */
		if (st.phase == NSH_PH_READY && m.op != NSH_OP_SOCKET &&
		    nsh_capset(nsh_serve_caps(&st.setup) &
		    (st.root ? nsh_caps_had() : NSH_CAPS_SETUP)) == -1) {
			nsh_log("cannot drop capabilities: %s",
			    strerror(errno));
			break;
		}
	}
	if (nsh_teardown(&st, false) == -1)
		nsh_log("could not remove everything (%s): run `moat-netns "
		    "cleanup` as root", strerror(errno));
 out:
	if (sfd != -1)
		close(sfd);
	nsh_state_free(&st);
	return rc;
}

/* --- cleanup ---------------------------------------------------------- */

/* Dump callbacks: remember what we found; requests come after the dump. */
static void
nsh_cleanup_found(struct nsh_cleanup *c, const char *name, const char *owner)
{
	struct nsh_found	*f;

	if (c->nfound >= NSH_FOUND_MAX || strlen(name) >= NSH_FOUND_NAME) {
		c->overflow = true;
		return;
	}
	f = &c->found[c->nfound++];
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->has_owner = strlen(owner) < sizeof(f->owner);
	snprintf(f->owner, sizeof(f->owner), "%s", f->has_owner ? owner : "");
}

static void
nsh_cleanup_table(const char *name, const char *comment, void *arg)
{
	struct nsh_cleanup	*c = arg;

	/* In the host namespace only "moat-*"; "moat" only in a sandbox's. */
	if (strcmp(name, NSH_TABLE) == 0 ? !c->netns :
	    strncmp(name, NSH_PREFIX, strlen(NSH_PREFIX)) != 0)
		return;
	nsh_cleanup_found(c, name, comment);
}

static void
nsh_cleanup_link(const char *name, const char *kind, const char *alias,
    void *arg)
{
	if (strcmp(kind, "veth") == 0)
		nsh_cleanup_found(arg, name, alias);
}

/* Removes each found object whose owner is gone; what names it: "table
 * inet" or "link". */
static void
nsh_cleanup_act(struct nsh_cleanup *c, const char *what, bool table)
{
	struct nsh_found	*f;
	size_t			 i;
	int			 alive, r;

	for (i = 0; i < c->nfound; i++) {
		f = &c->found[i];
		alive = f->has_owner ? nsh_owner_alive(f->owner) : -1;
		if (f->has_owner && STRNCMP_LIT(f->owner, NSH_OWNER_POD) == 0) {
			printf("kept    %s %s: a pod's, for the namespace's "
			    "life (%s)\n", what, f->name, f->owner);
			continue;
		}
		if (alive == -1) {
			printf("kept    %s %s: no moat owner recorded\n", what,
			    f->name);
			continue;
		}
		if (alive == 1) {
			printf("kept    %s %s: in use (%s)\n", what, f->name,
			    f->owner);
			continue;
		}
		if (c->dry_run) {
			printf("stale   %s %s (%s)\n", what, f->name, f->owner);
			continue;
		}
		r = table ? nsh_nft_table_del(c->nft, f->name) :
		    nsh_rtnl_link_del(c->rtnl, f->name);
		if (r == -1 && errno != ENOENT && errno != ENODEV) {
			printf("FAILED  %s %s: %s\n", what, f->name,
			    strerror(errno));
			c->failed++;
			continue;
		}
		printf("removed %s %s (%s)\n", what, f->name, f->owner);
		if (table && strcmp(f->name, NSH_TABLE) == 0)
			c->moat_table_gone = true;
		c->removed++;
	}
	if (c->overflow) {
		printf("FAILED  more than %d objects: run cleanup again\n",
		    NSH_FOUND_MAX);
		c->failed++;
	}
	c->nfound = 0;
	c->overflow = false;
}

static int
nsh_cleanup(int argc, char *argv[])
{
	static const struct option	opts[] = {
		{ "netns", required_argument, NULL, 'n' },
		{ "dry-run", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	static const int		fam[2] = { AF_INET, AF_INET6 };
	static struct nsh_cleanup	c;
	const char			*path = NULL;
	unsigned			lo;
	int				ch, i, rc = 1;

	memset(&c, 0, sizeof(c));
	optind = 1;
	while ((ch = getopt_long(argc, argv, "n:dh", opts, NULL)) != -1) {
		switch (ch) {
		case 'n':
			path = optarg;
			break;
		case 'd':
			c.dry_run = true;
			break;
		case 'h':
			nsh_usage(stdout);
			return 0;
		default:
			nsh_usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		nsh_usage(stderr);
		return 2;
	}
	if (geteuid() != 0) {
		nsh_log("cleanup needs root");
		return 2;
	}
	if (path != NULL) {
		if (nsh_enter_netns(path) == -1)
			return 1;
		c.netns = true;
	}
	if ((c.nft = nsh_nft_open()) == NULL ||
	    (c.rtnl = nsh_rtnl_open()) == NULL) {
		nsh_log("netlink: %s", strerror(errno));
		goto out;
	}
	if (nsh_nft_tables(c.nft, "moat", nsh_cleanup_table, &c) == -1) {
		nsh_log("cannot list nftables tables: %s", strerror(errno));
		goto out;
	}
	nsh_cleanup_act(&c, "table inet", true);
	if (!c.netns) {
		if (nsh_rtnl_links(c.rtnl, NSH_PREFIX, nsh_cleanup_link,
		    &c) == -1) {
			nsh_log("cannot list links: %s", strerror(errno));
			goto out;
		}
		nsh_cleanup_act(&c, "link", false);
	}
	/* An attached namespace's table went: its routes go with it. */
	if (c.netns && c.moat_table_gone &&
	    (lo = nsh_rtnl_ifindex(c.rtnl, "lo")) != 0) {
		for (i = 0; i < 2; i++)
			if (nsh_rtnl_route(c.rtnl, false, fam[i], NULL, 0,
			    NULL, lo, RT_TABLE_LOCAL, RTN_LOCAL) == 0)
				printf("removed local default route (%s)\n",
				    i == 0 ? "IPv4" : "IPv6");
	}
	rc = c.failed > 0 ? 1 : 0;
 out:
	if (c.nft != NULL)
		mnl_socket_close(c.nft);
	if (c.rtnl != NULL)
		mnl_socket_close(c.rtnl);
	return rc;
}

/* Joins the network namespace at path (a file of one).  0, or -1 said. */
static int
nsh_enter_netns(const char *path)
{
	int	fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		nsh_log("%s: %s", path, strerror(errno));
		return -1;
	}
	if (ioctl(fd, NS_GET_NSTYPE) != CLONE_NEWNET) {
		nsh_log("%s: not a network namespace", path);
		close(fd);
		return -1;
	}
	if (setns(fd, CLONE_NEWNET) == -1) {
		nsh_log("%s: setns: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* --- counters ----------------------------------------------------------- */

static void
nsh_counter_print(const char *name, uint64_t pkts, uint64_t bytes, void *arg)
{
	int	*n = arg;

	printf("%-16s %12llu %14llu\n", name + strlen(DROPS_COUNTER),
	    (unsigned long long)pkts, (unsigned long long)bytes);
	(*n)++;
}

/*
 * `moat-netns counters [--netns PATH]`: what moat's table in a sandbox's
 * namespace dropped, per kind (its counters "drop-KIND"), read through
 * netlink: Debian 12's nft never returns from listing them there.  Reads,
 * changes nothing; root (CAP_NET_ADMIN over the namespace).
 */
static int
nsh_counters(int argc, char *argv[])
{
	static const struct option	opts[] = {
		{ "netns", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	static const uint16_t		fams[2] = { NFPROTO_INET,
	    NFPROTO_NETDEV };
	struct mnl_socket		*nl;
	const char			*path = NULL;
	int				 ch, i, n = 0, rc = 0;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "n:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'n':
			path = optarg;
			break;
		case 'h':
			nsh_usage(stdout);
			return 0;
		default:
			nsh_usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		nsh_usage(stderr);
		return 2;
	}
	if (path != NULL && nsh_enter_netns(path) == -1)
		return 1;
	if ((nl = nsh_nft_open()) == NULL) {
		nsh_log("netlink: %s", strerror(errno));
		return 1;
	}
	printf("%-16s %12s %14s\n", "kind", "packets", "bytes");
	for (i = 0; i < 2; i++) {
		if (nsh_nft_counters(nl, fams[i], nsh_counter_print, &n) ==
		    -1 && errno != ENOENT) {
			nsh_log("cannot read the counters of table %s %s: %s",
			    i == 0 ? "inet" : "netdev", NSH_TABLE,
			    strerror(errno));
			rc = 1;
		}
	}
	mnl_socket_close(nl);
	if (rc == 0 && n == 0) {
		nsh_log("no moat table with drop counters in %s",
		    path != NULL ? path : "this network namespace");
		rc = 1;
	}
	return rc;
}

int
main(int argc, char *argv[])
{
	if (argc >= 2 && strcmp(argv[1], "serve") == 0 && argc == 2)
		return nsh_serve();
	if (argc >= 2 && strcmp(argv[1], "cleanup") == 0)
		return nsh_cleanup(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "counters") == 0)
		return nsh_counters(argc - 1, argv + 1);
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0)) {
		nsh_usage(stdout);
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "--version") == 0) {
		printf("moat-netns %s\n", PACKAGE_VERSION);
		return 0;
	}
	nsh_usage(stderr);
	return 2;
}
