/*
 * forward.c - moat-forward, the relay of a `--network none` container: it
 * listens on loopback TCP inside the container (127.0.0.1:3128 by
 * default) and relays each connection, byte for byte, to moatd's Unix
 * socket bind-mounted into the container (unix:/run/moat/proxy.sock).
 * Clients that only speak TCP proxies (curl, pip, npm, git, Python
 * SDKs with HTTP_PROXY=http://127.0.0.1:3128) thus reach moatd, and
 * nothing else: the container has no network.
 *
 * What it is: one static binary, one thread, epoll, non-blocking sockets,
 * two bounded buffers per connection (read interest follows the other
 * side's room), half-close passed through, a cap on connections (beyond
 * it, accepting pauses).  With `-- CMD ARGS` it runs CMD once it
 * listens (an entrypoint wrapper) and exits with CMD's status.
 *
 * With --refuse-dns it also answers every DNS query sent to a loopback
 * port (resolv.conf naming 127.0.0.1) with REFUSED, and says on stderr
 * which name a client tried to resolve and what makes such a client use
 * the proxy: in a container with no network, a client that resolves
 * names itself (Node's fetch before NODE_USE_ENV_PROXY) ignored the proxy
 * variables, and would otherwise only print EAI_AGAIN.
 *
 * What it is not: a proxy.  It never looks at the relayed bytes, judges
 * nothing, resolves nothing (it links no resolver: addresses are
 * numeric; a DNS query is refused, never looked up), and connects
 * nowhere but to the one socket it was given.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FWD_LISTEN_MAX		16	/* --listen */
#define FWD_BUF			16384	/* bytes buffered per direction */
#define FWD_CONNS_DEFAULT	512	/* --max-conns */
#define FWD_CONNS_LIMIT		65536
#define FWD_BACKLOG		512
#define FWD_EVENTS		64	/* epoll events per wait */
/* at most one warning of a kind per s */
#define FWD_WARN_INTERVAL_S	1
#define FWD_DEFAULT_LISTEN	"127.0.0.1:3128"
#define FWD_EXIT_USAGE		2
#define FWD_EXIT_FAIL		1
#define FWD_DNS_MAX		512	/* a DNS datagram read and answered */
#define FWD_DNS_HDR		12	/* RFC 1035 4.1.1 */
#define FWD_DNS_NAME_MAX	255	/* a name, wire form */
#define FWD_DNS_REFUSED		5	/* RCODE */
#define FWD_DNS_BATCH		64	/* queries answered per wake-up */

enum fwd_kind {
	FWD_K_LISTENER = 0,	/* a listening socket */
	FWD_K_SIDE,		/* one side of a relayed connection */
	FWD_K_SIGNAL,		/* the signalfd */
	FWD_K_DNS		/* --refuse-dns: a UDP socket */
};

struct fwd_conn;

/* What an epoll event points at. */
struct fwd_handle {
	enum fwd_kind	 kind;
	int		 fd;
	struct fwd_conn	*conn;	/* FWD_K_SIDE */
	int		 side;	/* FWD_K_SIDE: 0 client, 1 moatd */
	uint32_t	 events;	/* what epoll watches now */
};

/* One direction: bytes read from side s wait in buf to go to side !s. */
struct fwd_dir {
	char	buf[FWD_BUF];
	size_t	len;
	bool	eof;		/* side s sent FIN (or failed reading) */
	bool	shut;		/* we passed the FIN on (shutdown SHUT_WR) */
};

struct fwd_conn {
	struct fwd_handle	h[2];
	struct fwd_dir		d[2];	/* d[s]: from side s */
	bool			closed;	/* freed after the event batch */
	struct fwd_conn		*next_dead;
};

struct fwd {
	int			 ep;
	struct fwd_handle	 listeners[FWD_LISTEN_MAX];
	size_t			 nlisteners;
	char			 addrs[FWD_LISTEN_MAX][64];
	struct sockaddr_un	 to;
	socklen_t		 tolen;
	size_t			 nconns;
	size_t			 maxconns;
	/* accepting stopped at the cap */
	bool			 paused;
	struct fwd_handle	 sig;
	struct fwd_handle	 dns;		/* --refuse-dns, fd -1 if not */
	pid_t			 child;		/* -- CMD, or -1 */
	int			 child_status;
	bool			 quiet;
	struct fwd_conn		*dead;	/* closed in this batch */
	time_t			 last_warn;
	unsigned long		 suppressed;
};

static void	fwd_usage(FILE *f);
static void	fwd_log(struct fwd *f, bool warn, const char *fmt, ...)
		    __attribute__((format(printf, 3, 4)));
static int	fwd_parse_listen(const char *arg, struct sockaddr_storage *ss,
		    socklen_t *len);
static int	fwd_parse_to(struct fwd *f, const char *arg);
static int	fwd_listen(struct fwd *f, const char *arg);
static bool	fwd_lo_down(const struct sockaddr_storage *ss);
static int	fwd_reach(const struct fwd *f);
static int	fwd_dns_open(struct fwd *f, const char *arg);
static ssize_t	fwd_dns_answer(const unsigned char *q, size_t n,
		    unsigned char *out, char *name, size_t namelen);
static void	fwd_dns(struct fwd *f);
static int	fwd_watch(struct fwd *f, struct fwd_handle *h, uint32_t ev);
static void	fwd_accept(struct fwd *f, struct fwd_handle *l);
static void	fwd_pause(struct fwd *f, bool pause);
static void	fwd_side(struct fwd *f, struct fwd_handle *h, uint32_t ev);
static void	fwd_interest(struct fwd *f, struct fwd_conn *c);
static void	fwd_close(struct fwd *f, struct fwd_conn *c);
static int	fwd_spawn(struct fwd *f, char **argv);
static int	fwd_signal(struct fwd *f);
static int	fwd_loop(struct fwd *f);

static void
fwd_usage(FILE *f)
{
	fprintf(f,
	    "usage: moat-forward [--listen [ADDR:]PORT]... --to unix:PATH\n"
	    "                    [--max-conns N] [--refuse-dns [ADDR:]PORT]\n"
	    "                    [--ready-fd N] [-q] [-- CMD [ARG...]]\n"
	    "\n"
	    "Relays TCP connections on ADDR:PORT (default %s; ADDR is\n"
	    "numeric, [V6] for IPv6) to the Unix socket PATH (moatd's\n"
	    "listener, bind-mounted into a container that has no network).\n"
	    "With CMD, runs it once listening and exits with its status.\n"
	    "\n"
	    "  -l, --listen [ADDR:]PORT  where to listen (repeatable)\n"
	    "  -t, --to unix:PATH        moatd's socket\n"
	    "  -m, --max-conns N         connections at once (default %d)\n"
	    "      --refuse-dns [ADDR:]PORT\n"
	    "                            answer DNS queries there (UDP) with\n"
	    "                            REFUSED and say which client ignored\n"
	    "                            the proxy variables\n"
	    "      --ready-fd N          write \"ready\" to descriptor N when\n"
	    "                            listening\n"
	    "  -q, --quiet               warnings only\n"
	    "  -h, --help\n", FWD_DEFAULT_LISTEN, FWD_CONNS_DEFAULT);
}

/* Logs to stderr; warnings are throttled to one a second. */
static void
fwd_log(struct fwd *f, bool warn, const char *fmt, ...)
{
	va_list	ap;
	time_t	now;

	if (!warn && f->quiet)
		return;
	if (warn) {
		now = time(NULL);
		if (now - f->last_warn < FWD_WARN_INTERVAL_S) {
			f->suppressed++;
			return;
		}
		f->last_warn = now;
	}
	fputs("moat-forward: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (warn && f->suppressed > 0) {
		fprintf(stderr, " (%lu similar suppressed)", f->suppressed);
		f->suppressed = 0;
	}
	fputc('\n', stderr);
}

/* "[ADDR:]PORT" with a numeric ADDR: "127.0.0.1:3128", "[::1]:3128". */
static int
fwd_parse_listen(const char *arg, struct sockaddr_storage *ss,
    socklen_t *len)
{
	struct sockaddr_in	*sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6	*sin6 = (struct sockaddr_in6 *)ss;
	char			 host[64];
	const char		*port, *end;
	unsigned long		 p;
	char			*pend;
	size_t			 hl;

	memset(ss, 0, sizeof(*ss));
	if (arg[0] == '[') {
		if ((end = strchr(arg, ']')) == NULL || end[1] != ':')
			return -1;
		hl = (size_t)(end - arg - 1);
		port = end + 2;
		memcpy(host, arg + 1, hl < sizeof(host) ? hl : 0);
	} else if ((end = strrchr(arg, ':')) != NULL) {
		hl = (size_t)(end - arg);
		port = end + 1;
		memcpy(host, arg, hl < sizeof(host) ? hl : 0);
	} else {
		hl = strlen("127.0.0.1");
		memcpy(host, "127.0.0.1", hl);
		port = arg;
	}
	if (hl == 0 || hl >= sizeof(host))
		return -1;
	host[hl] = '\0';
	if (port[0] < '0' || port[0] > '9' || strlen(port) > 5)
		return -1;
	errno = 0;
	p = strtoul(port, &pend, 10);
	if (errno != 0 || *pend != '\0' || p == 0 || p > 65535)
		return -1;
	if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)p);
		*len = sizeof(*sin);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)p);
		*len = sizeof(*sin6);
		return 0;
	}
	return -1;
}

static int
fwd_parse_to(struct fwd *f, const char *arg)
{
	const char	*path = arg;

	if (STRNCMP_LIT(arg, "unix:") == 0)
		path = arg + LIT_LEN("unix:");
	if (path[0] != '/' || strlen(path) >= sizeof(f->to.sun_path)) {
		fprintf(stderr, "moat-forward: --to %s: want "
		    "unix:/ABSOLUTE/PATH (at most %zu bytes)\n", arg,
		    sizeof(f->to.sun_path) - 1);
		return -1;
	}
	memset(&f->to, 0, sizeof(f->to));
	f->to.sun_family = AF_UNIX;
	memcpy(f->to.sun_path, path, strlen(path));
	f->tolen = (socklen_t)sizeof(f->to);
	return 0;
}

static int
fwd_watch(struct fwd *f, struct fwd_handle *h, uint32_t ev)
{
	struct epoll_event	e;
	int			op;

	if (h->events == ev)
		return 0;
	memset(&e, 0, sizeof(e));
	e.events = ev;
	e.data.ptr = h;
	op = h->events == 0 ? EPOLL_CTL_ADD : ev == 0 ? EPOLL_CTL_DEL :
	    EPOLL_CTL_MOD;
	if (op == EPOLL_CTL_ADD && ev == 0)
		return 0;
	if (epoll_ctl(f->ep, op, h->fd, &e) == -1)
		return -1;
	h->events = ev;
	return 0;
}

static int
fwd_listen(struct fwd *f, const char *arg)
{
	struct sockaddr_storage	 ss;
	struct fwd_handle	*h;
	socklen_t		 len;
	int			 fd, one = 1;

	if (f->nlisteners == FWD_LISTEN_MAX) {
		fprintf(stderr, "moat-forward: at most %d --listen\n",
		    FWD_LISTEN_MAX);
		return -1;
	}
	if (fwd_parse_listen(arg, &ss, &len) == -1) {
		fprintf(stderr, "moat-forward: --listen %s: want [ADDR:]PORT "
		    "with a numeric ADDR (127.0.0.1:3128, [::1]:3128)\n", arg);
		return -1;
	}
	if ((fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0)) == -1 || setsockopt(fd, SOL_SOCKET,
	    SO_REUSEADDR, &one, sizeof(one)) == -1 ||
	    (ss.ss_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6,
	    IPV6_V6ONLY, &one, sizeof(one)) == -1) ||
	    bind(fd, (struct sockaddr *)&ss, len) == -1 ||
	    listen(fd, FWD_BACKLOG) == -1) {
		fprintf(stderr, "moat-forward: --listen %s: %s\n", arg,
		    strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	if (fwd_lo_down(&ss)) {
		fprintf(stderr, "moat-forward: --listen %s: the loopback "
		    "interface lo is down, so nothing here can connect to it "
		    "(bring it up: ip link set lo up)\n", arg);
		close(fd);
		return -1;
	}
	h = &f->listeners[f->nlisteners];
	h->kind = FWD_K_LISTENER;
	h->fd = fd;
	snprintf(f->addrs[f->nlisteners], sizeof(f->addrs[0]), "%s", arg);
	f->nlisteners++;
	if (fwd_watch(f, h, EPOLLIN) == -1) {
		fprintf(stderr, "moat-forward: epoll: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Whether ss is a loopback address while lo is down: the bind succeeds
 * (a fresh network namespace has lo down, 127.0.0.1 still bindable), but
 * every connect to it fails with ENETUNREACH.  false when it cannot be
 * told.
 */
static bool
fwd_lo_down(const struct sockaddr_storage *ss)
{
	const struct sockaddr_in	*sin = (const struct sockaddr_in *)ss;
	const struct sockaddr_in6	*sin6 = (const struct sockaddr_in6 *)ss;
	struct ifreq			 ifr;
	int				 fd;
	bool				 down;

	if (!(ss->ss_family == AF_INET &&
	    (ntohl(sin->sin_addr.s_addr) >> 24) == 127) &&
	    !(ss->ss_family == AF_INET6 &&
	    IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr)))
		return false;
	if ((fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		return false;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, "lo", 3);
	down = ioctl(fd, SIOCGIFFLAGS, &ifr) == 0 &&
	    (ifr.ifr_flags & IFF_UP) == 0;
	close(fd);
	return down;
}

/*
 * One connection to moatd's socket, closed at once: 0 if it can be
 * reached now, else -1 with errno set (a socket that is not mounted,
 * or whose moatd is gone).
 */
static int
fwd_reach(const struct fwd *f)
{
	int	fd, err;

	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	if (connect(fd, (const struct sockaddr *)&f->to, f->tolen) == -1) {
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	close(fd);
	return 0;
}

/* --refuse-dns [ADDR:]PORT: a UDP socket there, watched.  0 or -1. */
static int
fwd_dns_open(struct fwd *f, const char *arg)
{
	struct sockaddr_storage	ss;
	socklen_t		len;
	int			fd, one = 1;

	if (fwd_parse_listen(arg, &ss, &len) == -1) {
		fprintf(stderr, "moat-forward: --refuse-dns %s: want "
		    "[ADDR:]PORT with a numeric ADDR (127.0.0.1:53)\n", arg);
		return -1;
	}
	if ((fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0)) == -1 || (ss.ss_family == AF_INET6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one,
	    sizeof(one)) == -1) || bind(fd, (struct sockaddr *)&ss,
	    len) == -1) {
		fprintf(stderr, "moat-forward: --refuse-dns %s: %s\n", arg,
		    strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	f->dns.kind = FWD_K_DNS;
	f->dns.fd = fd;
	if (fwd_watch(f, &f->dns, EPOLLIN) == -1) {
		fprintf(stderr, "moat-forward: epoll: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * The answer to the DNS query q (n bytes): its header and question with
 * QR set, RCODE REFUSED and no records, into out (FWD_DNS_MAX bytes), and
 * the name asked for, printable (other bytes as \DDD), into name.
 * Returns the answer's length, or -1 for what is no query (an answer, a
 * truncated or malformed message): no reply.
 */
static ssize_t
fwd_dns_answer(const unsigned char *q, size_t n, unsigned char *out,
    char *name, size_t namelen)
{
	size_t	off = FWD_DNS_HDR, w = 0, l;
	int	c;

	if (n < FWD_DNS_HDR || n > FWD_DNS_MAX || (q[2] & 0x80) != 0 ||
	    q[4] != 0 || q[5] != 1)
		return -1;	/* an answer, or not one question */
	name[0] = '\0';
	while (off < n && q[off] != 0) {
		l = q[off];
		if ((l & 0xc0) != 0 || off + 1 + l >= n ||
		    off - FWD_DNS_HDR + 1 + l > FWD_DNS_NAME_MAX)
			return -1;	/* no pointers in a question */
		for (off++; l > 0; l--, off++) {
			c = q[off];
			if (w + 5 >= namelen)
				continue;	/* cut, still parsed */
			if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			    (c >= '0' && c <= '9') || c == '-' || c == '_')
				name[w++] = (char)c;
			else
				w += (size_t)snprintf(name + w, namelen - w,
				    "\\%03d", c);
		}
		if (w + 1 < namelen)
			name[w++] = '.';
		name[w] = '\0';
	}
	/* The root label and QTYPE, QCLASS. */
	if (off + 5 > n)
		return -1;
	if (w > 1)
		name[w - 1] = '\0';	/* no trailing dot */
	else
		snprintf(name, namelen, ".");
	off += 5;
	memcpy(out, q, off);
	out[2] = (unsigned char)((q[2] & 0x79) | 0x80);	/* QR; opcode, RD */
	out[3] = FWD_DNS_REFUSED;			/* RA 0, RCODE */
	memset(out + 6, 0, 6);				/* no records */
	return (ssize_t)off;
}

/*
 * Each query waiting on the --refuse-dns socket: REFUSED back to its
 * sender, and a line (throttled) naming it and what to do.  No name is
 * ever looked up.
 */
static void
fwd_dns(struct fwd *f)
{
	struct sockaddr_storage	 from;
	unsigned char		 q[FWD_DNS_MAX + 1], a[FWD_DNS_MAX];
	char			 name[FWD_DNS_NAME_MAX * 4 + 2];
	socklen_t		 flen;
	ssize_t			 r, al;
	int			 i;

	for (i = 0; i < FWD_DNS_BATCH; i++) {
		flen = sizeof(from);
		r = recvfrom(f->dns.fd, q, sizeof(q), 0,
		    (struct sockaddr *)&from, &flen);
		if (r == -1)
			return;		/* EAGAIN, or nothing to do about it */
		if ((al = fwd_dns_answer(q, (size_t)r, a, name,
		    sizeof(name))) == -1)
			continue;
		(void)sendto(f->dns.fd, a, (size_t)al, MSG_NOSIGNAL,
		    (struct sockaddr *)&from, flen);
		fwd_log(f, true, "a client looked up %s (refused: this "
		    "container has no resolver): it ignores the proxy "
		    "variables and reaches nothing.  Node's fetch: "
		    "NODE_USE_ENV_PROXY=1 (Node 24 and 22.21 or later) or "
		    "undici's EnvHttpProxyAgent; others: see moat-forward(1)",
		    name);
	}
}

/* At the connection cap, stop accepting; resume below it. */
static void
fwd_pause(struct fwd *f, bool pause)
{
	size_t	i;

	if (f->paused == pause)
		return;
	f->paused = pause;
	for (i = 0; i < f->nlisteners; i++)
		(void)fwd_watch(f, &f->listeners[i], pause ? 0 : EPOLLIN);
	if (pause)
		fwd_log(f, true, "%zu connections: accepting paused",
		    f->nconns);
}

static void
fwd_accept(struct fwd *f, struct fwd_handle *l)
{
	struct fwd_conn	*c;
	int		 cfd, ufd;

	while (f->nconns < f->maxconns) {
		if ((cfd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK |
		    SOCK_CLOEXEC)) == -1) {
			if (errno == EMFILE || errno == ENFILE)
				fwd_log(f, true, "accept: %s",
				    strerror(errno));
			else if (errno != EAGAIN && errno != EINTR &&
			    errno != ECONNABORTED)
				fwd_log(f, true, "accept: %s",
				    strerror(errno));
			return;
		}
		/* A Unix stream connect completes at once, or fails. */
		if ((ufd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, 0)) == -1 || connect(ufd,
		    (struct sockaddr *)&f->to, f->tolen) == -1) {
			fwd_log(f, true, "cannot reach %s: %s",
			    f->to.sun_path, errno == EAGAIN ?
			    "its backlog is full" : strerror(errno));
			if (ufd != -1)
				close(ufd);
			close(cfd);
			continue;
		}
		if ((c = calloc(1, sizeof(*c))) == NULL) {
			fwd_log(f, true, "out of memory");
			close(ufd);
			close(cfd);
			return;
		}
		c->h[0].kind = c->h[1].kind = FWD_K_SIDE;
		c->h[0].fd = cfd;
		c->h[1].fd = ufd;
		c->h[0].conn = c->h[1].conn = c;
		c->h[0].side = 0;
		c->h[1].side = 1;
		f->nconns++;
		fwd_interest(f, c);
	}
	fwd_pause(f, true);
}

/*
 * Epoll interest follows the buffers: read side s while d[s] has room
 * and s has not ended; write side s while d[!s] holds bytes.
 */
static void
fwd_interest(struct fwd *f, struct fwd_conn *c)
{
	uint32_t	ev;
	int		s;

	for (s = 0; s < 2; s++) {
		ev = 0;
		if (!c->d[s].eof && c->d[s].len < FWD_BUF)
			ev |= EPOLLIN;
		if (c->d[!s].len > 0)
			ev |= EPOLLOUT;
		if (fwd_watch(f, &c->h[s], ev) == -1) {
			fwd_log(f, true, "epoll: %s", strerror(errno));
			fwd_close(f, c);
			return;
		}
	}
}

/*
 * Closes both sides.  The memory waits for the end of the event batch:
 * a later event of the same batch may still point at c.
 */
static void
fwd_close(struct fwd *f, struct fwd_conn *c)
{
	int	s;

	if (c->closed)
		return;
	for (s = 0; s < 2; s++) {
		(void)fwd_watch(f, &c->h[s], 0);
		close(c->h[s].fd);
		c->h[s].fd = -1;
	}
	c->closed = true;
	c->next_dead = f->dead;
	f->dead = c;
	f->nconns--;
	if (f->nconns < f->maxconns)
		fwd_pause(f, false);
}

static void
fwd_side(struct fwd *f, struct fwd_handle *h, uint32_t ev)
{
	struct fwd_conn	*c = h->conn;
	struct fwd_dir	*in = &c->d[h->side], *out = &c->d[!h->side];
	int		 s = h->side;
	ssize_t		 r;

	if (c->closed)
		return;
	if ((ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) != 0 && !in->eof &&
	    in->len < FWD_BUF) {
		r = recv(h->fd, in->buf + in->len, FWD_BUF - in->len, 0);
		if (r > 0)
			in->len += (size_t)r;
		else if (r == 0)
			in->eof = true;
		else if (errno != EAGAIN && errno != EINTR) {
			/* A reset on one side resets the relay. */
			fwd_close(f, c);
			return;
		}
	}
	if ((ev & (EPOLLOUT | EPOLLERR)) != 0 && out->len > 0) {
		r = send(h->fd, out->buf, out->len, MSG_NOSIGNAL);
		if (r > 0) {
			memmove(out->buf, out->buf + r, out->len - (size_t)r);
			out->len -= (size_t)r;
		} else if (r == -1 && errno != EAGAIN && errno != EINTR) {
			fwd_close(f, c);
			return;
		}
	}
	/* Half-close: pass a FIN on once everything before it went. */
	for (s = 0; s < 2; s++) {
		if (c->d[s].eof && c->d[s].len == 0 && !c->d[s].shut) {
			(void)shutdown(c->h[!s].fd, SHUT_WR);
			c->d[s].shut = true;
		}
	}
	if (c->d[0].shut && c->d[1].shut) {
		fwd_close(f, c);
		return;
	}
	fwd_interest(f, c);
}

/* Runs CMD (its signals unblocked, its own default dispositions). */
static int
fwd_spawn(struct fwd *f, char **argv)
{
	sigset_t	none;

	if ((f->child = fork()) == -1) {
		fprintf(stderr, "moat-forward: fork: %s\n", strerror(errno));
		return -1;
	}
	if (f->child == 0) {
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		execvp(argv[0], argv);
		fprintf(stderr, "moat-forward: %s: %s\n", argv[0],
		    strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	return 0;
}

/* 1 to stop the loop (exit status in f->child_status), 0 to go on. */
static int
fwd_signal(struct fwd *f)
{
	struct signalfd_siginfo	si;
	pid_t			p;
	int			st;

	while (read(f->sig.fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
				if (p != f->child)
					continue;
				f->child = -1;
				f->child_status = WIFEXITED(st) ?
				    WEXITSTATUS(st) : 128 + WTERMSIG(st);
				return 1;
			}
			continue;
		}
		if (f->child != -1) {
			(void)kill(f->child, (int)si.ssi_signo);
			continue;
		}
		fwd_log(f, false, "signal %u: exiting", si.ssi_signo);
		f->child_status = 0;
		return 1;
	}
	return 0;
}

static int
fwd_loop(struct fwd *f)
{
	struct epoll_event	 ev[FWD_EVENTS];
	struct fwd_handle	*h;
	int			 n, i;

	for (;;) {
		n = epoll_wait(f->ep, ev, FWD_EVENTS, -1);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			fprintf(stderr, "moat-forward: epoll_wait: %s\n",
			    strerror(errno));
			return FWD_EXIT_FAIL;
		}
		for (i = 0; i < n; i++) {
			h = ev[i].data.ptr;
			switch (h->kind) {
			case FWD_K_SIGNAL:
				if (fwd_signal(f))
					return f->child_status;
				break;
			case FWD_K_LISTENER:
				fwd_accept(f, h);
				break;
			case FWD_K_SIDE:
				fwd_side(f, h, ev[i].events);
				break;
			case FWD_K_DNS:
				fwd_dns(f);
				break;
			default:
				fprintf(stderr, "moat-forward: %s: bad "
				    "handle\n", __func__);
				abort();
			}
		}
		while (f->dead != NULL) {
			struct fwd_conn	*c = f->dead;

			f->dead = c->next_dead;
			free(c);
		}
	}
}

int
main(int argc, char *argv[])
{
	static const struct option	opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "to", required_argument, NULL, 't' },
		{ "max-conns", required_argument, NULL, 'm' },
		{ "ready-fd", required_argument, NULL, 'r' },
		{ "refuse-dns", required_argument, NULL, 'd' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	static struct fwd		 f;
	const char			*listen_args[FWD_LISTEN_MAX];
	const char			*dns_arg = NULL;
	size_t				 nlisten = 0, i;
	sigset_t			 mask;
	char				*end;
	long				 v;
	int				 ch, ready_fd = -1, err;
	bool				 have_to = false;

	f.maxconns = FWD_CONNS_DEFAULT;
	f.child = -1;
	f.dns.fd = -1;
	while ((ch = getopt_long(argc, argv, "+l:t:m:qh", opts, NULL)) != -1) {
		switch (ch) {
		case 'l':
			if (fwd_parse_listen(optarg, &(struct sockaddr_storage){
			    0 }, &(socklen_t){ 0 }) == -1) {
				fprintf(stderr, "moat-forward: --listen %s: "
				    "want [ADDR:]PORT with a numeric ADDR "
				    "(127.0.0.1:3128, [::1]:3128)\n", optarg);
				return FWD_EXIT_USAGE;
			}
			if (nlisten == FWD_LISTEN_MAX) {
				fprintf(stderr, "moat-forward: at most %d "
				    "--listen\n", FWD_LISTEN_MAX);
				return FWD_EXIT_USAGE;
			}
			listen_args[nlisten++] = optarg;
			break;
		case 't':
			if (fwd_parse_to(&f, optarg) == -1)
				return FWD_EXIT_USAGE;
			have_to = true;
			break;
		case 'd':
			if (fwd_parse_listen(optarg, &(struct sockaddr_storage){
			    0 }, &(socklen_t){ 0 }) == -1) {
				fprintf(stderr, "moat-forward: --refuse-dns %s: "
				    "want [ADDR:]PORT with a numeric ADDR "
				    "(127.0.0.1:53)\n", optarg);
				return FWD_EXIT_USAGE;
			}
			dns_arg = optarg;
			break;
		case 'm':
		case 'r':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || end == optarg ||
			    v < (ch == 'm' ? 1 : 0) || v > (ch == 'm' ?
			    FWD_CONNS_LIMIT : 65535) || (ch == 'r' &&
			    fcntl((int)v, F_GETFD) == -1)) {
				fprintf(stderr, "moat-forward: --%s %s: out of "
				    "range%s\n", ch == 'm' ? "max-conns" :
				    "ready-fd", optarg, ch == 'r' ?
				    " or not open" : "");
				return FWD_EXIT_USAGE;
			}
			if (ch == 'm')
				f.maxconns = (size_t)v;
			else
				ready_fd = (int)v;
			break;
		case 'q':
			f.quiet = true;
			break;
		case 'h':
			fwd_usage(stdout);
			return 0;
		default:
			fwd_usage(stderr);
			return FWD_EXIT_USAGE;
		}
	}
	if (!have_to) {
		fprintf(stderr, "moat-forward: --to unix:PATH is required\n");
		fwd_usage(stderr);
		return FWD_EXIT_USAGE;
	}
	if (nlisten == 0)
		listen_args[nlisten++] = FWD_DEFAULT_LISTEN;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGCHLD);
	if ((f.ep = epoll_create1(EPOLL_CLOEXEC)) == -1 ||
	    sigprocmask(SIG_BLOCK, &mask, NULL) == -1 ||
	    (f.sig.fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC)) ==
	    -1) {
		fprintf(stderr, "moat-forward: %s\n", strerror(errno));
		return FWD_EXIT_FAIL;
	}
	f.sig.kind = FWD_K_SIGNAL;
	if (fwd_watch(&f, &f.sig, EPOLLIN) == -1) {
		fprintf(stderr, "moat-forward: epoll: %s\n", strerror(errno));
		return FWD_EXIT_FAIL;
	}
	for (i = 0; i < nlisten; i++)
		if (fwd_listen(&f, listen_args[i]) == -1)
			return FWD_EXIT_FAIL;
	if (dns_arg != NULL && fwd_dns_open(&f, dns_arg) == -1)
		return FWD_EXIT_FAIL;
	/* Listening is not serving: say so when moatd cannot be reached. */
	if (fwd_reach(&f) == -1) {
		err = errno;
		/* Not through fwd_log(): one line per listener, unthrottled,
		 * also with -q. */
		for (i = 0; i < f.nlisteners; i++)
			fprintf(stderr, "moat-forward: listening on %s, but "
			    "moatd's socket unix:%s cannot be reached (%s): "
			    "each connection is closed until it can\n",
			    f.addrs[i], f.to.sun_path, strerror(err));
	} else
		for (i = 0; i < f.nlisteners; i++)
			fwd_log(&f, false, "listening on %s, relaying to "
			    "unix:%s", f.addrs[i], f.to.sun_path);
	if (ready_fd != -1) {
		(void)!WRITE_LIT(ready_fd, "ready\n");
		close(ready_fd);
	}
	if (optind < argc && fwd_spawn(&f, argv + optind) == -1)
		return FWD_EXIT_FAIL;
	return fwd_loop(&f);
}
