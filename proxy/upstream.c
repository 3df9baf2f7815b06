/*
 * upstream.c - connect to allowed addresses in turn.
 */
#include "config.h"

#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "proxy/metrics.h"
#include "proxy/upstream.h"
#include "proxy/util.h"

#define UPSTREAM_MAX_ADDRS	16

struct upstream_connect {
	struct event_base	*base;
	struct policy_addr	 addrs[UPSTREAM_MAX_ADDRS];
	size_t			 n;
	size_t			 idx;		/* address being tried */
	uint16_t		 port;
	unsigned		 timeout_ms;
	int			 fd;
	int			 err;		/* errno of the last failure */
	uint64_t		 t0;		/* metrics_clock() at start */
	struct event		*ev;		/* write-ready or timeout */
	struct event		*done;		/* deferred result */
	int			 ok;		/* done reports fd as connected */
	upstream_cb		*cb;
	void			*arg;
};

static void	uc_next(struct upstream_connect *uc);
static void	uc_event(evutil_socket_t fd, short what, void *arg);
static void	uc_done_cb(evutil_socket_t fd, short what, void *arg);
static void	uc_free(struct upstream_connect *uc);

socklen_t
upstream_sockaddr(const struct policy_addr *addr, uint16_t port,
    struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (addr->family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		sin->sin_addr = addr->u.v4;
		return sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		sin6->sin6_addr = addr->u.v6;
		return sizeof(*sin6);
	}
}

struct upstream_connect *
upstream_connect_start(struct event_base *base, const struct policy_addr *addrs,
    size_t n, uint16_t port, unsigned timeout_ms, upstream_cb *cb, void *arg)
{
	struct upstream_connect	*uc;

	if ((uc = calloc(1, sizeof(*uc))) == NULL)
		return NULL;
	if (n > UPSTREAM_MAX_ADDRS)
		n = UPSTREAM_MAX_ADDRS;
	memcpy(uc->addrs, addrs, n * sizeof(*addrs));
	uc->base = base;
	uc->n = n;
	uc->port = port;
	uc->timeout_ms = timeout_ms;
	uc->fd = -1;
	uc->cb = cb;
	uc->arg = arg;
	uc->err = EHOSTUNREACH;
	uc->t0 = metrics_clock();
	if ((uc->done = evtimer_new(base, uc_done_cb, uc)) == NULL) {
		free(uc);
		errno = ENOMEM;
		return NULL;
	}
	uc->idx = 0;
	uc_next(uc);
	return uc;
}

/*
 * connect(2) on a non-blocking socket: 0 when connected now, EINPROGRESS
 * when the handshake is still under way, else the error.  A peer on this
 * host (loopback, or a veth into another namespace) answers inside the
 * first call: its SYN-ACK waits in the socket's backlog until connect(2)
 * returns EINPROGRESS, and is processed then.  Asking once more sees that
 * without a trip through the event loop; for a remote peer the second
 * call only says EALREADY.
 */
static int
uc_connect(int fd, const struct sockaddr_storage *ss, socklen_t slen)
{
	if (connect(fd, (const struct sockaddr *)ss, slen) == 0)
		return 0;
	if (errno != EINPROGRESS)
		return errno;
	if (connect(fd, (const struct sockaddr *)ss, slen) == 0 ||
	    errno == EISCONN)
		return 0;
	return errno == EALREADY ? EINPROGRESS : errno;
}

/*
 * Starts the attempt at uc->idx, skipping addresses that fail at once.
 * A connection made at once, or the failure of every address, is
 * reported through uc->done: never from here, so upstream_connect_start
 * never calls back.
 */
static void
uc_next(struct upstream_connect *uc)
{
	struct sockaddr_storage	ss;
	socklen_t		slen;
	struct timeval		tv;
	int			one = 1, err;

	for (; uc->idx < uc->n; uc->idx++) {
		slen = upstream_sockaddr(&uc->addrs[uc->idx], uc->port, &ss);
		uc->fd = socket(ss.ss_family,
		    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (uc->fd == -1) {
			uc->err = errno;
			if (upstream_err_local(uc->err))
				break;
			continue;
		}
		/* TCP keepalive is the caller's (conn_upstream_ready). */
		(void)setsockopt(uc->fd, IPPROTO_TCP, TCP_NODELAY, &one,
		    sizeof(one));
		if ((err = uc_connect(uc->fd, &ss, slen)) == 0) {
			uc->ok = 1;
			break;
		}
		if (err == EINPROGRESS) {
			uc->ev = event_new(uc->base, uc->fd, EV_WRITE,
			    uc_event, uc);
			tv.tv_sec = uc->timeout_ms / 1000;
			tv.tv_usec = (uc->timeout_ms % 1000) * 1000;
			if (uc->ev != NULL && event_add(uc->ev, &tv) == 0)
				return;
			uc->err = ENOMEM;
		} else
			uc->err = err;
		if (uc->ev != NULL) {
			event_free(uc->ev);
			uc->ev = NULL;
		}
		uc->fd = util_close(uc->fd);
	}
	event_active(uc->done, EV_TIMEOUT, 0);
}

int
upstream_err_local(int err)
{
	return err == EMFILE || err == ENFILE || err == ENOBUFS ||
	    err == ENOMEM;
}

static void
uc_event(evutil_socket_t fd, short what, void *arg)
{
	struct upstream_connect	*uc = arg;
	int			 err = 0, cfd;
	socklen_t		 len = sizeof(err);
	size_t			 idx = uc->idx;
	upstream_cb		*cb = uc->cb;
	void			*cbarg = uc->arg;

	event_free(uc->ev);
	uc->ev = NULL;
	if (what & EV_TIMEOUT)
		err = ETIMEDOUT;
	else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1)
		err = errno;
	if (err == 0) {
		cfd = uc->fd;
		uc->fd = -1;
		uc_free(uc);
		cb(cfd, idx, 0, cbarg);
		return;
	}
	uc->err = err;
	uc->fd = util_close(uc->fd);
	uc->idx++;
	uc_next(uc);
}

static void
uc_done_cb(evutil_socket_t fd, short what, void *arg)
{
	struct upstream_connect	*uc = arg;
	upstream_cb		*cb = uc->cb;
	void			*cbarg = uc->arg;
	int			 err = uc->err, cfd = -1;
	size_t			 idx = uc->n ? uc->n - 1 : 0;

	if (uc->ok) {
		cfd = uc->fd;
		uc->fd = -1;
		idx = uc->idx;
		err = 0;
		metrics_observe(METRICS_H_CONNECT, &uc->t0);
	}
	uc_free(uc);
	cb(cfd, idx, err, cbarg);
}

static void
uc_free(struct upstream_connect *uc)
{
	if (uc->ev != NULL)
		event_free(uc->ev);
	if (uc->done != NULL)
		event_free(uc->done);
	util_close(uc->fd);
	free(uc);
}

void
upstream_connect_cancel(struct upstream_connect *uc)
{
	if (uc != NULL)
		uc_free(uc);
}
