/*
 * metrics_http.c - the "metrics" listener: GET /metrics, answered with
 * the text exposition format, on the main thread's event base.
 *
 * Small on purpose: one request per connection (Connection: close), a
 * request head of at most METRICS_HTTP_HEAD_MAX bytes within
 * METRICS_HTTP_READ_MS, parsed by the strict parser of http_head.c;
 * GET /metrics only (404 for another path, 405 for another method, 400
 * for anything malformed or with a body); at most METRICS_HTTP_CONNS
 * connections at once (past them a connection is closed at once).
 * Where it listens was checked by the config (config_check_metrics():
 * never where a sandbox can reach).
 *
 * Not here: the counters (metrics.c).
 */
#include "config.h"

#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "certs/certs.h"
#include "policy/policy.h"
#include "proxy/audit.h"
#include "proxy/http_parse.h"
#include "proxy/log.h"
#include "proxy/metrics.h"
#include "proxy/upstream.h"
#include "proxy/util.h"

#define METRICS_HTTP_CONNS	4	/* scrapes at once */
#define METRICS_HTTP_HEAD_MAX	4096	/* a request head, bytes */
#define METRICS_HTTP_READ_MS	5000	/* ... that must come this soon */
#define METRICS_HTTP_WRITE_MS	10000	/* a reply that does not drain */
#define METRICS_HTTP_ACCEPTS	16	/* accepts per wake-up */
#define METRICS_HTTP_LINGER_MS	1000	/* what a client still sends after
					   the reply is read and dropped this
					   long, so that closing does not
					   reset the reply away */

struct metrics_http_conn {
	struct metrics_http		*h;
	struct bufferevent		*bev;
	size_t				 scan;	/* http_head_scan's state */
	struct event			*linger;	/* its end, once written */
	LIST_ENTRY(metrics_http_conn)	 link;
};

struct metrics_http {
	struct event_base		*base;
	struct event			*ev;
	int				 fd;
	char				*path;	/* unix socket to unlink */
	size_t				 nconns;
	LIST_HEAD(, metrics_http_conn)	 conns;
};

static void	mh_accept(evutil_socket_t fd, short what, void *arg);
static void	mh_read(struct bufferevent *bev, void *arg);
static void	mh_written(struct bufferevent *bev, void *arg);
static void	mh_event(struct bufferevent *bev, short what, void *arg);
static void	mh_conn_free(struct metrics_http_conn *mc);
static void	mh_linger_end(evutil_socket_t fd, short what, void *arg);

static int
mh_bind_unix(const struct moat_metrics *m, char *err, size_t errlen)
{
	return util_bind_unix(m->path, m->mode, 16, "metrics", err, errlen);
}

int
metrics_http_bind(const struct moat_metrics *m, char *err, size_t errlen)
{
	struct sockaddr_storage	ss;
	socklen_t		slen;
	int			fd, one = 1;

	if (m->is_unix)
		return mh_bind_unix(m, err, errlen);
	slen = upstream_sockaddr(&m->host.addr, m->port, &ss);
	if ((fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0)) == -1) {
		snprintf(err, errlen, "metrics: %s: socket: %s", m->address,
		    strerror(errno));
		return -1;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6)
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one,
		    sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, slen) == -1 ||
	    listen(fd, 16) == -1) {
		snprintf(err, errlen, "metrics: cannot listen on %s: %s%s",
		    m->address, strerror(errno), errno == EADDRINUSE ?
		    " (another process listens there)" : errno == EACCES ?
		    " (ports below 1024 need root)" : "");
		close(fd);
		return -1;
	}
	return fd;
}

struct metrics_http *
metrics_http_serve(struct event_base *base, int fd, const char *path)
{
	struct metrics_http	*h;

	if ((h = calloc(1, sizeof(*h))) == NULL)
		return NULL;
	h->base = base;
	h->fd = fd;
	LIST_INIT(&h->conns);
	if ((path != NULL && (h->path = strdup(path)) == NULL) ||
	    (h->ev = event_new(base, fd, EV_READ | EV_PERSIST, mh_accept,
	    h)) == NULL || event_add(h->ev, NULL) == -1) {
		if (h->ev != NULL)
			event_free(h->ev);
		free(h->path);
		free(h);
		return NULL;
	}
	return h;
}

void
metrics_http_free(struct metrics_http *h)
{
	if (h == NULL)
		return;
	while (!LIST_EMPTY(&h->conns))
		mh_conn_free(LIST_FIRST(&h->conns));
	event_free(h->ev);
	close(h->fd);
	if (h->path != NULL)
		(void)unlink(h->path);
	free(h->path);
	free(h);
}

static void
mh_accept(evutil_socket_t fd, short what, void *arg)
{
	struct metrics_http		*h = arg;
	struct metrics_http_conn	*mc;
	struct timeval			 rt = util_ms_tv(METRICS_HTTP_READ_MS);
	struct timeval			 wt = util_ms_tv(METRICS_HTTP_WRITE_MS);
	int				 cfd, i;

	(void)what;
	for (i = 0; i < METRICS_HTTP_ACCEPTS; i++) {
		cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd == -1) {
			if (errno != EAGAIN && errno != EINTR &&
			    errno != ECONNABORTED)
				log_warn("metrics: accept");
			return;
		}
		if (h->nconns >= METRICS_HTTP_CONNS) {
			log_debug("metrics: %d scrapes at once already: "
			    "connection closed", METRICS_HTTP_CONNS);
			close(cfd);
			continue;
		}
		if ((mc = calloc(1, sizeof(*mc))) == NULL ||
		    (mc->bev = bufferevent_socket_new(h->base, cfd,
		    BEV_OPT_CLOSE_ON_FREE)) == NULL) {
			free(mc);
			close(cfd);
			log_warnx("metrics: out of memory, scrape refused");
			continue;
		}
		mc->h = h;
		LIST_INSERT_HEAD(&h->conns, mc, link);
		h->nconns++;
		bufferevent_setcb(mc->bev, mh_read, NULL, mh_event, mc);
		bufferevent_setwatermark(mc->bev, EV_READ, 0,
		    METRICS_HTTP_HEAD_MAX + 1);
		(void)bufferevent_set_timeouts(mc->bev, &rt, &wt);
		(void)bufferevent_enable(mc->bev, EV_READ);
	}
}

static void
mh_conn_free(struct metrics_http_conn *mc)
{
	LIST_REMOVE(mc, link);
	mc->h->nconns--;
	if (mc->linger != NULL)
		event_free(mc->linger);
	bufferevent_free(mc->bev);
	free(mc);
}

static void
mh_body_free(const void *data, size_t len, void *arg)
{
	(void)len;
	(void)arg;
	free((void *)data);
}

/* Queues the reply (body: a malloc'ed buffer handed over, or a text) and
 * closes once it is written. */
static void
mh_reply(struct metrics_http_conn *mc, const char *status,
    const char *extra, char *body, size_t len, const char *text)
{
	struct evbuffer	*out = bufferevent_get_output(mc->bev);

	(void)bufferevent_disable(mc->bev, EV_READ);
	if (body == NULL) {
		len = strlen(text);
		body = (char *)text;
	}
	evbuffer_add_printf(out, "HTTP/1.1 %s\r\nContent-Type: %s\r\n"
	    "Content-Length: %zu\r\n%sConnection: close\r\n\r\n", status,
	    body != text ? "text/plain; version=0.0.4; charset=utf-8" :
	    "text/plain; charset=utf-8", len, extra);
	if (body != text) {
		if (evbuffer_add_reference(out, body, len, mh_body_free,
		    NULL) == -1)
			free(body);
	} else
		evbuffer_add(out, text, len);
	bufferevent_setcb(mc->bev, NULL, mh_written, mh_event, mc);
	(void)bufferevent_enable(mc->bev, EV_WRITE);
}

static void
mh_refuse(struct metrics_http_conn *mc, const char *status,
    const char *extra, const char *why)
{
	log_debug("metrics: refused a request: %s", why);
	mh_reply(mc, status, extra, NULL, 0, why);
}

/* The current values kept outside metrics.c. */
static void
mh_extra(struct metrics_extra *x)
{
	audit_stats(&x->audit_queue_bytes, &x->audit_dropped);
	certs_minter_totals(&x->leaf_hits, &x->leaf_misses);
}

static void
mh_answer(struct metrics_http_conn *mc, const char *head, size_t len)
{
	struct http_limits		 lim = { 1024, METRICS_HTTP_HEAD_MAX, 32 };
	struct http_request_head	 req;
	struct metrics_extra		 x;
	const char			*err = NULL, *t;
	char				*body;
	size_t				 blen;

	if (http_request_head_parse(head, len, &lim, &req, &err) !=
	    HTTP_OK) {
		mh_refuse(mc, "400 Bad Request", "", err != NULL ? err :
		    "malformed request");
		return;
	}
	t = req.target;
	if (strcmp(req.method, "GET") != 0)
		mh_refuse(mc, "405 Method Not Allowed", "Allow: GET\r\n",
		    "only GET /metrics is served here\n");
	else if (req.body != HTTP_BODY_NONE && (req.body != HTTP_BODY_LENGTH ||
	    req.content_length > 0))
		mh_refuse(mc, "400 Bad Request", "", "a GET with a body\n");
	else if (req.form != HTTP_FORM_ORIGIN || (strcmp(t, "/metrics") != 0 &&
	    strncmp(t, "/metrics?", LIT_LEN("/metrics?")) != 0))
		mh_refuse(mc, "404 Not Found", "", "only GET /metrics is "
		    "served here\n");
	else {
		memset(&x, 0, sizeof(x));
		mh_extra(&x);
		if ((body = metrics_render(&x, &blen)) == NULL)
			mh_refuse(mc, "503 Service Unavailable", "",
			    "out of memory\n");
		else
			mh_reply(mc, "200 OK", "", body, blen, NULL);
	}
	http_request_head_free(&req);
}

static void
mh_read(struct bufferevent *bev, void *arg)
{
	struct metrics_http_conn	*mc = arg;
	struct evbuffer			*in = bufferevent_get_input(bev);
	struct http_limits		 lim = { 1024, METRICS_HTTP_HEAD_MAX, 32 };
	const char			*err = NULL;
	unsigned char			*p;
	size_t				 len, head_len;
	int				 rc;

	len = evbuffer_get_length(in);
	if (len > METRICS_HTTP_HEAD_MAX)
		len = METRICS_HTTP_HEAD_MAX + 1;
	if ((p = evbuffer_pullup(in, (ssize_t)len)) == NULL) {
		mh_conn_free(mc);
		return;
	}
	rc = http_head_scan((const char *)p, len, &lim, &mc->scan, &head_len,
	    &err);
	if (rc == HTTP_NEED_MORE && len > METRICS_HTTP_HEAD_MAX) {
		rc = HTTP_INVALID;
		err = "request head too long";
	}
	if (rc == HTTP_NEED_MORE)
		return;
	if (rc == HTTP_INVALID) {
		mh_refuse(mc, "400 Bad Request", "", err != NULL ? err :
		    "malformed request");
		return;
	}
	mh_answer(mc, (const char *)p, head_len);
}

/* After the reply: what the client still sends is dropped. */
static void
mh_discard(struct bufferevent *bev, void *arg)
{
	struct evbuffer	*in = bufferevent_get_input(bev);

	(void)arg;
	evbuffer_drain(in, evbuffer_get_length(in));
}

static void
mh_linger_end(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	mh_conn_free(arg);
}

/*
 * The reply is written: our side is shut down, and the connection is
 * closed once the client closes its side or METRICS_HTTP_LINGER_MS have
 * passed.  Closing with bytes of the client's unread (a refusal before
 * its whole request came) would reset the connection, and the client
 * could lose the reply.
 */
static void
mh_written(struct bufferevent *bev, void *arg)
{
	struct metrics_http_conn	*mc = arg;
	struct timeval			 tv = util_ms_tv(METRICS_HTTP_LINGER_MS);

	if (evbuffer_get_length(bufferevent_get_output(bev)) != 0 ||
	    mc->linger != NULL)
		return;
	(void)shutdown(bufferevent_getfd(bev), SHUT_WR);
	if ((mc->linger = evtimer_new(mc->h->base, mh_linger_end, mc)) ==
	    NULL || evtimer_add(mc->linger, &tv) == -1) {
		mh_conn_free(mc);
		return;
	}
	bufferevent_setcb(bev, mh_discard, NULL, mh_event, mc);
	(void)bufferevent_set_timeouts(bev, NULL, NULL);
	(void)bufferevent_disable(bev, EV_WRITE);
	(void)bufferevent_enable(bev, EV_READ);
}

static void
mh_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	if (what & BEV_EVENT_TIMEOUT)
		log_debug("metrics: a scrape timed out");
	mh_conn_free(arg);
}
