/*
 * drops.c - a sandbox's drop log, read: the records its nftables table
 * writes for the packets it drops (drops.h, proto/drops_proto.h), counted
 * and audited.
 *
 * What it is: the audit line of a dropped packet (its record parsed by
 * drops_parse.c), and the reader of one sandbox's socket in the main
 * thread's loop: every record counts; DROPS_AUDIT_RATE of them a second
 * get a line each, the rest one line at the end of their window that
 * says how many, by kind.  So a sandbox that floods its own firewall
 * costs moatd at most the records the rule lets through
 * (proto/drops_proto.h: 100 a second after a burst of 1,000) and the
 * audit log about 11 lines a second.
 *
 * What it is not: the count of record.  The table's counters are exact
 * (`moat-netns counters`); these are what moatd was told.  Nor
 * privileged: the socket came bound, and reading it takes nothing.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/netlink.h>
#include <netinet/in.h>

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <libmnl/libmnl.h>

#include "policy/policy.h"
#include "proxy/audit.h"
#include "proxy/drops.h"
#include "proxy/metrics.h"
#include "proxy/log.h"
#include "proxy/sandbox.h"
#include "proxy/util.h"

#define DROPS_READ_BUF		65536	/* one read of the socket */
#define DROPS_READS_MAX		16	/* reads per wake-up, at most */
#define DROPS_RCVBUF		(1 << 20) /* the socket's buffer, asked */
/*
 * How long a reader stays after its sandbox went: the kernel hands over
 * records in batches, at least every 10 ms (helper_nflog.c), so the last
 * packets a sandbox dropped arrive after it.
 */
#define DROPS_LINGER_MS		20

struct drops {
	struct sandbox	*sb;		/* a reference */
	int		 fd;
	struct event	*ev;		/* readable */
	struct event	*flush;		/* the window's end, when lines wait */
	/* The rate: lines written in the window that began at wstart. */
	uint64_t	 wstart;
	unsigned	 shown;
	uint64_t	 held[DROPS_KIND__COUNT];	/* not written one by one */
	uint64_t	 held_n;
	uint64_t	 lost;		/* records lost since the last summary */
	uint32_t	 seq_next;	/* the number the next record should have:
					   the group's numbers start at 0 when
					   moat-netns binds it */
	bool		 failed;	/* the socket failed: no more reading */
	bool		 stopping;	/* its sandbox went: lingering */
	LIST_ENTRY(drops) link;		/* in D_lingering, while stopping */
};

/* Readers whose sandbox went, until their last batch (main thread). */
static LIST_HEAD(, drops)	D_lingering = LIST_HEAD_INITIALIZER(D_lingering);

static void	drops_proto_name(const struct drops_pkt *p, char *buf,
		    size_t len);
static const char *drops_why(const struct drops_pkt *p, char *buf,
		    size_t len);
static void	drops_read_cb(evutil_socket_t fd, short what, void *arg);
static void	drops_flush_cb(evutil_socket_t fd, short what, void *arg);
static void	drops_read(struct drops *d);
static void	drops_record(struct drops *d, const struct drops_pkt *p);
static void	drops_summary(struct drops *d, uint64_t now_ms);
static void	drops_free(struct drops *d);

/* --- lines: pure ----------------------------------------------------- */

/* "udp", "icmpv6", "sctp", ..., "ip-N"; "ip" (no header); "arp",
 * "ether-0xNNNN". */
static void
drops_proto_name(const struct drops_pkt *p, char *buf, size_t len)
{
	static const struct {
		int		 proto;
		const char	*name;
	} names[] = {
		{ IPPROTO_TCP, "tcp" }, { IPPROTO_UDP, "udp" },
		{ IPPROTO_ICMP, "icmp" }, { IPPROTO_ICMPV6, "icmpv6" },
		{ IPPROTO_SCTP, "sctp" }, { IPPROTO_GRE, "gre" },
		{ IPPROTO_ESP, "esp" }, { IPPROTO_AH, "ah" },
		{ IPPROTO_UDPLITE, "udplite" }, { IPPROTO_DCCP, "dccp" },
		{ IPPROTO_IGMP, "igmp" }, { IPPROTO_IPIP, "ipip" },
		{ IPPROTO_IPV6, "ipv6" },
	};
	size_t	i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (p->proto == names[i].proto) {
			snprintf(buf, len, "%s", names[i].name);
			return;
		}
	if (p->proto >= 0)
		snprintf(buf, len, "ip-%d", p->proto);
	else if (p->ethertype == ETH_P_ARP)
		snprintf(buf, len, "arp");
	else if (p->ethertype == ETH_P_IP || p->ethertype == ETH_P_IPV6)
		snprintf(buf, len, "ip");	/* its header was not captured */
	else
		snprintf(buf, len, "ether-0x%04x", p->ethertype);
}

/* The sentence after "KIND: " in a line's detail. */
static const char *
drops_why(const struct drops_pkt *p, char *buf, size_t len)
{
	switch (p->kind) {
	case DROPS_UDP:
		return "only DNS leaves the sandbox over UDP (to moatd)";
	case DROPS_ICMP:
		if (p->icmp_type >= 0) {
			snprintf(buf, len, "ICMP%s type %d code %d does not "
			    "leave the sandbox%s", p->proto == IPPROTO_ICMPV6 ?
			    "v6" : "", p->icmp_type, p->icmp_code,
			    (p->proto == IPPROTO_ICMP && p->icmp_type == 8) ||
			    (p->proto == IPPROTO_ICMPV6 && p->icmp_type ==
			    128) ? " (an echo request: ping)" : "");
			return buf;
		}
		return "ICMP does not leave the sandbox";
	case DROPS_TCP:
		return "a TCP packet moat's rules did not redirect to moatd "
		    "(of a connection older than the rules, or of a raw "
		    "socket)";
	case DROPS_OTHER_PROTO:
		return "only TCP and DNS leave the sandbox";
	case DROPS_INTERFACE:
		return "it would have left by an interface that is not moat's "
		    "(a socket bound to a device?)";
	case DROPS_FORWARD:
		return "the sandbox's namespace routes nothing through it";
	case DROPS_EGRESS:
		return "a frame a packet socket sent, which moat's rules do "
		    "not let out";
	case DROPS_LOOPBACK_PORT:
		return "nothing listens on that loopback port (the kernel "
		    "refused the connection)";
	default:
		return "dropped";
	}
}

void
drops_audit_rec(const struct drops_pkt *p, const char *sandbox,
    struct audit_rec *r, struct drops_text *t)
{
	char	why[DROPS_DETAIL_MAX - 40];
	bool	v6 = p->family == AF_INET6;

	audit_rec_init(r);
	r->event = "drop";
	r->sandbox = sandbox;
	drops_proto_name(p, t->proto, sizeof(t->proto));
	r->proto = t->proto;
	if (p->family != 0) {
		if (p->sport >= 0)
			snprintf(t->client, sizeof(t->client), "%s%s%s:%d",
			    v6 ? "[" : "", p->src, v6 ? "]" : "", p->sport);
		else
			snprintf(t->client, sizeof(t->client), "%s", p->src);
		r->client = t->client;
		r->ip = p->dst;
	}
	r->port = p->dport;
	r->verdict = POLICY_DENY;
	r->reason = POLICY_R_DROPPED_PACKET;
	snprintf(t->detail, sizeof(t->detail), "%.32s: %s",
	    drops_kind_name(p->kind), drops_why(p, why, sizeof(why)));
	r->detail = t->detail;
}

/* Appends to t's detail at *o what fmt says, as far as it fits. */
static void __attribute__((format(printf, 3, 4)))
drops_text_add(struct drops_text *t, size_t *o, const char *fmt, ...)
{
	va_list	ap;
	int	m;

	if (*o >= sizeof(t->detail))
		return;
	va_start(ap, fmt);
	m = vsnprintf(t->detail + *o, sizeof(t->detail) - *o, fmt, ap);
	va_end(ap);
	if (m > 0)
		*o += (size_t)m;
}

void
drops_summary_rec(const char *sandbox, uint64_t n, const uint64_t *by_kind,
    uint64_t lost, struct audit_rec *r, struct drops_text *t)
{
	size_t		o = 0;
	unsigned	k;
	int		first = 1;

	audit_rec_init(r);
	r->event = "drop";
	r->sandbox = sandbox;
	r->verdict = POLICY_DENY;
	r->reason = POLICY_R_DROPPED_PACKET;
	r->refused = n + lost > INT64_MAX || n + lost < n ? INT64_MAX :
	    (int64_t)(n + lost);
	t->detail[0] = '\0';
	if (n > 0) {
		drops_text_add(t, &o, "%llu more dropped packet%s (",
		    (unsigned long long)n, n == 1 ? "" : "s");
		for (k = 0; k < DROPS_KIND__COUNT; k++) {
			if (by_kind[k] == 0)
				continue;
			drops_text_add(t, &o, "%s%s %llu", first ? "" : ", ",
			    drops_kind_name(k),
			    (unsigned long long)by_kind[k]);
			first = 0;
		}
		drops_text_add(t, &o, "): at most %d lines a second tell of "
		    "them one by one", DROPS_AUDIT_RATE);
	}
	if (lost > 0)
		drops_text_add(t, &o, "%s%llu drop record%s lost (moatd read "
		    "too slowly)", n > 0 ? "; " : "", (unsigned long long)lost,
		    lost == 1 ? "" : "s");
	drops_text_add(t, &o, "; the sandbox's nftables counters count every "
	    "drop");
	r->detail = t->detail;
}

/* --- the reader: main thread ----------------------------------------- */

struct drops *
drops_start(struct event_base *base, struct sandbox *sb, int fd, char *err,
    size_t errlen)
{
	struct drops	*d = NULL;
	int		 dom, proto, sz = DROPS_RCVBUF, cur;
	socklen_t	 sl = sizeof(dom);

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &sl) == -1 ||
	    dom != AF_NETLINK || (sl = sizeof(proto), getsockopt(fd,
	    SOL_SOCKET, SO_PROTOCOL, &proto, &sl)) == -1 ||
	    proto != NETLINK_NETFILTER) {
		snprintf(err, errlen, "the drop log is not a netfilter netlink "
		    "socket");
		goto fail;
	}
	/*
	 * A larger buffer holds a burst; the kernel caps it (rmem_max), and
	 * moat-netns may have made it larger already (SO_RCVBUFFORCE).
	 */
	sl = sizeof(cur);
	if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &cur, &sl) == -1 ||
	    cur < sz)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	if (util_set_nonblock(fd) == -1 || util_set_cloexec(fd) == -1 ||
	    (d = calloc(1, sizeof(*d))) == NULL) {
		snprintf(err, errlen, "the drop log: %s", strerror(errno));
		goto fail;
	}
	d->fd = fd;
	if ((d->ev = event_new(base, fd, EV_READ | EV_PERSIST, drops_read_cb,
	    d)) == NULL || (d->flush = evtimer_new(base, drops_flush_cb,
	    d)) == NULL || event_add(d->ev, NULL) == -1) {
		snprintf(err, errlen, "the drop log: out of memory");
		goto fail;
	}
	d->sb = sandbox_ref(sb);
	return d;
 fail:
	if (d != NULL) {
		if (d->ev != NULL)
			event_free(d->ev);
		if (d->flush != NULL)
			event_free(d->flush);
		free(d);
	}
	close(fd);
	return NULL;
}

void
drops_drain(struct drops *d)
{
	if (d == NULL || d->stopping)
		return;
	drops_read(d);
	drops_summary(d, util_now_ms());
}

/*
 * The last of it, DROPS_LINGER_MS from now: the flush timer turns into
 * the end (drops_flush_cb), reading stops until then.
 */
void
drops_stop(struct drops *d)
{
	struct timeval	tv = util_ms_tv(DROPS_LINGER_MS);

	if (d == NULL)
		return;
	drops_read(d);
	event_del(d->ev);
	d->stopping = true;
	LIST_INSERT_HEAD(&D_lingering, d, link);
	if (evtimer_add(d->flush, &tv) == -1) {
		drops_summary(d, util_now_ms());
		drops_free(d);
	}
}

/*
 * moatd stops: each lingering reader gets what is left of the linger
 * (one deadline for all) to receive its last batch, then its lines.
 */
void
drops_shutdown(void)
{
	struct drops	*d;
	struct pollfd	 pfd;
	uint64_t	 end = util_now_ms() + DROPS_LINGER_MS, now;

	while ((d = LIST_FIRST(&D_lingering)) != NULL) {
		now = util_now_ms();
		pfd.fd = d->fd;
		pfd.events = POLLIN;
		if (!d->failed && now < end)
			(void)poll(&pfd, 1, (int)(end - now));
		drops_read(d);
		drops_summary(d, util_now_ms());
		drops_free(d);
	}
}

/* Closes and frees d (out of the lingering list, if it was in it). */
static void
drops_free(struct drops *d)
{
	if (d->stopping)
		LIST_REMOVE(d, link);
	event_free(d->ev);
	event_free(d->flush);
	close(d->fd);
	sandbox_unref(d->sb);
	free(d);
}

uint64_t
drops_count(const struct sandbox *sb, unsigned kind)
{
	if (sb == NULL || kind >= DROPS_KIND__COUNT)
		return 0;
	return atomic_load_explicit(&sb->drops[kind], memory_order_relaxed);
}

uint64_t
drops_lost(const struct sandbox *sb)
{
	if (sb == NULL)
		return 0;
	return atomic_load_explicit(&sb->drops_lost, memory_order_relaxed);
}

/*
 * Records that never came (the socket was full): the gap in the numbers
 * before this one.  A number from behind (a gap past 2^31) is taken as
 * the new start, not as billions lost.
 */
static void
drops_seq(struct drops *d, const struct drops_pkt *p)
{
	uint32_t	gap;

	if (!p->has_seq)
		return;
	gap = p->seq - d->seq_next;
	if (gap != 0 && gap < UINT32_C(1) << 31) {
		d->lost += gap;
		atomic_fetch_add_explicit(&d->sb->drops_lost, gap,
		    memory_order_relaxed);
	}
	d->seq_next = p->seq + 1;
}

/* One record: counted; a line of its own if the window has room. */
static void
drops_record(struct drops *d, const struct drops_pkt *p)
{
	struct audit_rec	r;
	struct drops_text	t;
	struct timeval		tv;
	uint64_t		now = util_now_ms();

	drops_seq(d, p);
	atomic_fetch_add_explicit(&d->sb->drops[p->kind], 1,
	    memory_order_relaxed);
	metrics_drop(&d->sb->msb, p->kind);
	if (now - d->wstart >= DROPS_AUDIT_WINDOW_MS) {
		drops_summary(d, now);
		d->wstart = now;
		d->shown = 0;
	}
	if (d->shown < DROPS_AUDIT_RATE) {
		d->shown++;
		drops_audit_rec(p, d->sb->name, &r, &t);
		audit_emit(&r);
		return;
	}
	d->held[p->kind]++;
	if (d->held_n++ == 0) {
		tv = util_ms_tv(d->wstart + DROPS_AUDIT_WINDOW_MS - now);
		evtimer_add(d->flush, &tv);
	}
}

/* The line of what waited (and of records lost), if any; a new window. */
static void
drops_summary(struct drops *d, uint64_t now_ms)
{
	struct audit_rec	r;
	struct drops_text	t;

	if (d->held_n == 0 && d->lost == 0)
		return;
	drops_summary_rec(d->sb->name, d->held_n, d->held, d->lost, &r, &t);
	audit_emit(&r);
	memset(d->held, 0, sizeof(d->held));
	d->held_n = 0;
	d->lost = 0;
	evtimer_del(d->flush);
	/* The next window starts now: at most one summary a window. */
	d->wstart = now_ms;
	d->shown = 0;
}

static void
drops_flush_cb(evutil_socket_t fd, short what, void *arg)
{
	struct drops	*d = arg;

	if (!d->stopping) {
		drops_summary(d, util_now_ms());
		return;
	}
	/* Its sandbox went DROPS_LINGER_MS ago: the last batch is in. */
	drops_read(d);
	drops_summary(d, util_now_ms());
	drops_free(d);
}

static void
drops_read_cb(evutil_socket_t fd, short what, void *arg)
{
	drops_read(arg);
}

/*
 * Reads what arrived, at most DROPS_READS_MAX reads: the records of a
 * flood wait for the next turn of the loop, never hold it.
 */
static void
drops_read(struct drops *d)
{
	static uint8_t		 buf[DROPS_READ_BUF];
	const struct nlmsghdr	*nlh;
	struct drops_pkt	 p;
	ssize_t			 n;
	int			 i, left, r;

	if (d->failed)
		return;
	for (i = 0; i < DROPS_READS_MAX; i++) {
		n = recv(d->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == -1 && errno == EINTR)
			continue;
		/* Overrun: the sequence numbers tell how many were lost. */
		if (n == -1 && errno == ENOBUFS)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			log_warnx("sandbox %s: its drop log failed (%s): drops "
			    "are counted by its nftables table only",
			    d->sb->name, n == 0 ? "closed" : strerror(errno));
			d->failed = true;
			event_del(d->ev);
			return;
		}
		left = (int)n;
		for (nlh = (const struct nlmsghdr *)buf;
		    drops_msg_ok(nlh, left); nlh = mnl_nlmsg_next(nlh, &left)) {
			if ((r = drops_parse(nlh, &p)) == 1)
				drops_record(d, &p);
			else if (r == -1)
				log_debug("sandbox %s: a malformed drop "
				    "record", d->sb->name);
		}
	}
}
