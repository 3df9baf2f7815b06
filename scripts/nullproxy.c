/*
 * nullproxy.c - the least a CONNECT proxy can do, to measure what the
 * machine allows: the ceiling of compare's "setup" workload for any proxy
 * on one core, against which moatd's figure can be read.
 *
 * One thread, one edge-triggered epoll set.  Each connection: read the
 * head, take "CONNECT a.b.c.d:port" (or a SOCKS5 CONNECT to an IPv4
 * address, no authentication), connect (loopback destinations only:
 * this is a benchmark tool, never an open proxy), answer 200, then copy
 * bytes both ways through a 16 KiB buffer per direction (with -s: with
 * splice(2) through a 256 KiB pipe per direction, as moatd's tunnels),
 * passing each EOF on with shutdown(2) and closing once both sides have
 * sent theirs.  No policy, no DNS, no audit, no timeouts, no limits: do
 * not deploy it.
 *
 *   cc -O2 -o nullproxy scripts/nullproxy.c
 *   ./nullproxy [-s] 127.0.0.1:14100
 */
#define _GNU_SOURCE
#include <sys/epoll.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BUF_BYTES	16384
#define HEAD_BYTES	4096
#define PIPE_BYTES	(256 << 10)

static int	use_splice;

struct side;

struct dir {
	char	 buf[BUF_BYTES];
	size_t	 len, off;	/* bytes waiting: buf[off..len) */
	int	 pipe[2];	/* with -s; in_pipe bytes waiting there */
	size_t	 in_pipe;
	int	 eof;		/* "from" said EOF, passed on once flushed */
	int	 shut;		/* "to" was shut down for writing */
};

struct conn {
	int		 cfd, ufd;
	int		 tunnel;	/* 0: reading the head */
	int		 greeted;	/* SOCKS5 greeting answered */
	int		 dead;		/* closed; freed after this batch */
	struct conn	*next_dead;
	size_t		 hlen;
	char		 head[HEAD_BYTES];
	struct dir	 up, down;	/* client -> upstream, and back */
};

/* epoll data: the connection, and which of its sockets (low bit). */
static int	ep;

static void *
tag(struct conn *c, int upstream)
{
	return (void *)((uintptr_t)c | (uintptr_t)upstream);
}

static void
watch(int op, int fd, struct conn *c, int upstream, unsigned events)
{
	struct epoll_event	ev;

	ev.events = events;
	ev.data.ptr = tag(c, upstream);
	if (epoll_ctl(ep, op, fd, &ev) == -1 && op != EPOLL_CTL_DEL) {
		perror("nullproxy: epoll_ctl");
		exit(1);
	}
}

static struct conn	*graveyard;

/* Closes now, frees after the batch: a later event of it may be queued. */
static void
pipe_close(int p[2])
{
	if (p[0] >= 0) {
		close(p[0]);
		close(p[1]);
	}
}

static void
conn_free(struct conn *c)
{
	close(c->cfd);
	if (c->ufd >= 0)
		close(c->ufd);
	pipe_close(c->up.pipe);
	pipe_close(c->down.pipe);
	c->dead = 1;
	c->next_dead = graveyard;
	graveyard = c;
}

/* Bytes of d read and not yet written. */
static int
pending(const struct dir *d)
{
	return d->len > d->off || d->in_pipe > 0;
}

/*
 * One direction's two moves, by copy or (-s) by splice(2).  Each returns
 * what read(2) or write(2) would.  Splicing goes into the pipe only when
 * it is empty, so EAGAIN means the socket is drained, never that the
 * pipe ran out of slots.
 */
static ssize_t
dir_in(struct dir *d, int from)
{
	ssize_t	n;

	if (use_splice) {
		n = splice(from, NULL, d->pipe[1], NULL, PIPE_BYTES,
		    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n > 0)
			d->in_pipe = (size_t)n;
	} else if ((n = read(from, d->buf, sizeof(d->buf))) > 0) {
		d->len = (size_t)n;
		d->off = 0;
	}
	return n;
}

static ssize_t
dir_out(struct dir *d, int to)
{
	ssize_t	n;

	if (use_splice) {
		n = splice(d->pipe[0], NULL, to, NULL, d->in_pipe,
		    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n > 0)
			d->in_pipe -= (size_t)n;
	} else if ((n = write(to, d->buf + d->off, d->len - d->off)) > 0 &&
	    (d->off += (size_t)n) == d->len)
		d->len = d->off = 0;
	return n;
}

/*
 * Moves d's bytes from "from" to "to" until one would block (edge-
 * triggered: the next edge of either resumes it).
 */
static int
pump(struct dir *d, int from, int to, const struct dir *other)
{
	ssize_t	n;

	for (;;) {
		if (pending(d)) {
			if (dir_out(d, to) == -1)
				return errno == EAGAIN ? 0 : -1;
			continue;
		}
		if (d->eof) {
			if (!d->shut) {
				d->shut = 1;
				if (!other->shut)
					shutdown(to, SHUT_WR);
			}
			return 0;
		}
		if ((n = dir_in(d, from)) == 0)
			d->eof = 1;
		else if (n == -1)
			return errno == EAGAIN ? 0 : -1;
	}
}

static void
tunnel_event(struct conn *c, int upstream, unsigned events)
{
	struct dir	*in = upstream ? &c->down : &c->up;
	struct dir	*out = upstream ? &c->up : &c->down;
	int		 fd = upstream ? c->ufd : c->cfd;
	int		 peer = upstream ? c->cfd : c->ufd;
	int		 r = 0;

	if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		r = pump(in, fd, peer, out);
	if (r == 0 && (events & EPOLLOUT) && pending(out))
		r = pump(out, peer, fd, in);
	if (r == -1 || (c->up.shut && c->down.shut))
		conn_free(c);
}

static int
parse_target(const char *head, struct sockaddr_in *sin)
{
	char		 host[64];
	unsigned	 port;

	if (sscanf(head, "CONNECT %63[0-9.]:%u HTTP/1.", host, &port) != 2 ||
	    port == 0 || port > 65535)
		return -1;
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &sin->sin_addr) != 1 ||
	    (ntohl(sin->sin_addr.s_addr) >> 24) != 127)
		return -1;	/* loopback only */
	return 0;
}

/* Connects to sin, answers the client with reply, starts relaying. */
static void
tunnel_start(struct conn *c, const struct sockaddr_in *sin, const void *reply,
    size_t rlen)
{
	int	one = 1;

	if ((c->ufd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0)) == -1) {
		conn_free(c);
		return;
	}
	setsockopt(c->ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* Loopback answers inside connect(2); a second call tells. */
	if (connect(c->ufd, (const struct sockaddr *)sin, sizeof(*sin)) == -1 &&
	    (errno != EINPROGRESS ||
	    (connect(c->ufd, (const struct sockaddr *)sin, sizeof(*sin)) == -1 &&
	    errno != EISCONN))) {
		conn_free(c);
		return;
	}
	if (use_splice) {
		/* conn_free closes whichever pipe was made. */
		if (pipe2(c->up.pipe, O_NONBLOCK | O_CLOEXEC) == -1 ||
		    pipe2(c->down.pipe, O_NONBLOCK | O_CLOEXEC) == -1) {
			conn_free(c);
			return;
		}
		fcntl(c->up.pipe[1], F_SETPIPE_SZ, PIPE_BYTES);
		fcntl(c->down.pipe[1], F_SETPIPE_SZ, PIPE_BYTES);
	}
	if (write(c->cfd, reply, rlen) != (ssize_t)rlen) {
		conn_free(c);
		return;
	}
	c->tunnel = 1;
	watch(EPOLL_CTL_MOD, c->cfd, c, 0, EPOLLIN | EPOLLOUT | EPOLLRDHUP |
	    EPOLLET);
	watch(EPOLL_CTL_ADD, c->ufd, c, 1, EPOLLIN | EPOLLOUT | EPOLLRDHUP |
	    EPOLLET);
}

/*
 * SOCKS5 (RFC 1928), no authentication, CONNECT to an IPv4 address: the
 * greeting is answered first, then the request.  Returns 0 while more
 * bytes are needed.
 */
static int
socks5_event(struct conn *c)
{
	static const unsigned char	ok[] = { 5, 0, 0, 1, 0, 0, 0, 0, 0, 0 };
	static const unsigned char	noauth[] = { 5, 0 };
	const unsigned char		*h = (const unsigned char *)c->head;
	struct sockaddr_in		 sin;
	size_t				 need;

	if (!c->greeted) {
		if (c->hlen < 2 || c->hlen < (need = 2 + (size_t)h[1]))
			return 0;
		if (memchr(h + 2, 0, h[1]) == NULL ||
		    write(c->cfd, noauth, 2) != 2)
			return -1;
		memmove(c->head, c->head + need, c->hlen - need);
		c->hlen -= need;
		c->greeted = 1;
	}
	if (c->hlen < 10)
		return 0;
	if (h[0] != 5 || h[1] != 1 || h[3] != 1)
		return -1;	/* only CONNECT to an IPv4 address */
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	memcpy(&sin.sin_addr, h + 4, 4);
	memcpy(&sin.sin_port, h + 8, 2);
	if ((ntohl(sin.sin_addr.s_addr) >> 24) != 127)
		return -1;	/* loopback only */
	tunnel_start(c, &sin, ok, sizeof(ok));
	return 1;
}

static void
head_event(struct conn *c)
{
	static const char	ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	struct sockaddr_in	sin;
	ssize_t			n;
	int			r;

	for (;;) {
		n = read(c->cfd, c->head + c->hlen,
		    sizeof(c->head) - 1 - c->hlen);
		if (n == -1 && errno == EAGAIN)
			return;
		if (n <= 0 || (c->hlen += (size_t)n) == sizeof(c->head) - 1) {
			conn_free(c);	/* EOF, error, or a head too long */
			return;
		}
		c->head[c->hlen] = '\0';
		if (c->head[0] == 5) {
			if ((r = socks5_event(c)) == -1)
				conn_free(c);
			if (r != 0)
				return;
		} else if (strstr(c->head, "\r\n\r\n") != NULL) {
			/* Bytes after the head (none from compare's client)
			 * are dropped. */
			if (parse_target(c->head, &sin) == -1)
				conn_free(c);
			else
				tunnel_start(c, &sin, ok, sizeof(ok) - 1);
			return;
		}
	}
}

int
main(int argc, char *argv[])
{
	struct epoll_event	evs[64];
	struct sockaddr_in	sin;
	char			host[64];
	unsigned		port;
	int			lfd, one = 1, i, n;

	if (argc == 3 && strcmp(argv[1], "-s") == 0) {
		use_splice = 1;
		argv++;
		argc--;
	}
	if (argc != 2 || sscanf(argv[1], "%63[0-9.]:%u", host, &port) != 2 ||
	    port == 0 || port > 65535) {
		fprintf(stderr, "usage: nullproxy [-s] 127.0.0.1:PORT\n");
		return 2;
	}
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &sin.sin_addr) != 1) {
		fprintf(stderr, "nullproxy: bad address %s\n", host);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	if ((lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0)) == -1 ||
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    setsockopt(lfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(lfd, 1024) == -1 || (ep = epoll_create1(0)) == -1) {
		perror("nullproxy");
		return 1;
	}
	watch(EPOLL_CTL_ADD, lfd, NULL, 0, EPOLLIN);
	for (;;) {
		n = epoll_wait(ep, evs, 64, -1);
		for (i = 0; i < n; i++) {
			struct conn	*c;
			uintptr_t	 p = (uintptr_t)evs[i].data.ptr;
			int		 fd;

			if (p == 0) {
				while ((fd = accept4(lfd, NULL, NULL,
				    SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
					if ((c = calloc(1, sizeof(*c))) == NULL) {
						close(fd);
						continue;
					}
					c->cfd = fd;
					c->ufd = -1;
					c->up.pipe[0] = c->down.pipe[0] = -1;
					watch(EPOLL_CTL_ADD, fd, c, 0,
					    EPOLLIN | EPOLLET);
				}
				continue;
			}
			c = (struct conn *)(p & ~(uintptr_t)1);
			if (c->dead)
				continue;
			if (c->tunnel)
				tunnel_event(c, (int)(p & 1), evs[i].events);
			else
				head_event(c);
		}
		while (graveyard != NULL) {
			struct conn *c = graveyard;

			graveyard = c->next_dead;
			free(c);
		}
	}
}
