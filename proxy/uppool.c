/*
 * uppool.c - idle upstream connections kept per worker (see uppool.h).
 */
#include "config.h"

#include <sys/queue.h>
#include <sys/socket.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <openssl/ssl.h>

#include "policy/policy.h"
#include "proxy/conn.h"
#include "proxy/io.h"
#include "proxy/log.h"
#include "proxy/sandbox.h"
#include "proxy/tls.h"
#include "proxy/uppool.h"
#include "proxy/util.h"
#include "proxy/worker.h"

struct uppool_entry {
	TAILQ_ENTRY(uppool_entry) link;
	struct worker		*w;
	struct io		*io;
	struct event		*timer;
	struct sandbox		*sb;		/* a reference, or NULL */
	struct tls		*tls;		/* a reference, or NULL: plain */
	char			*name;		/* the sandbox identity */
	char			 host[POLICY_NAME_MAX + 1];
	uint16_t		 port;
	struct policy_addr	 addr;
	char			 ip[64];
	uint64_t		 idle_since;
};

static void
uppool_entry_free(struct uppool_entry *e)
{
	TAILQ_REMOVE(&e->w->uppool, e, link);
	e->w->nuppool--;
	if (e->timer != NULL)
		event_free(e->timer);
	io_free(e->io);
	sandbox_unref(e->sb);
	tls_unref(e->tls);
	free(e->name);
	free(e);
}

/* Anything from a parked upstream (bytes, EOF, error) retires it. */
static void
uppool_io_cb(struct io *io, int ev, void *arg)
{
	struct uppool_entry	*e = arg;

	(void)io;
	(void)ev;
	uppool_entry_free(e);
}

/* Between uppool_take() and the taker's io_set_cb(): nothing to do. */
static void
uppool_orphan_cb(struct io *io, int ev, void *arg)
{
	(void)io;
	(void)ev;
	(void)arg;
}

static void
uppool_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	uppool_entry_free(arg);
}

int
uppool_put(struct conn *c)
{
	struct worker		*w = c->w;
	struct uppool_entry	*e;
	struct io		*io = c->uio;
	struct tls		*tls = NULL;
	const char		*host;
	SSL			*ssl;
	uint64_t		 now = util_now_ms(), idle_ms;
	struct timeval		 tv;

	if (io == NULL || !c->http.up_clean || w->draining || io_eof(io) ||
	    io_in_len(io) != 0 || io_out_len(io) != 0 ||
	    (c->sb != NULL && atomic_load(&c->sb->dead)))
		return 0;
	idle_ms = c->cfg->timeouts.idle_upstream_ms;
	if (now - c->http.up_idle_since >= idle_ms)
		return 0;
	if ((ssl = io_ssl(io)) != NULL) {
		/* HTTPS: only a session verified for the very host (name or
		 * address) the client's tunnel was judged for, under the
		 * worker's current roots. */
		if (!c->tun.inspected || !c->tun.tls_client || c->tun.tls == NULL ||
		    c->tun.tls != w->tls ||
		    strcmp(c->tun.up_tls_host, c->tun.host) != 0 ||
		    c->tun.up_tls_is_addr != (c->tun.target.kind ==
		    POLICY_HOST_ADDR) || !SSL_is_init_finished(ssl))
			return 0;
		tls = c->tun.tls;
		host = c->tun.up_tls_host;
	} else {
		if (c->tun.inspected)
			return 0;
		host = c->http.up_host;
	}
	if (w->nuppool >= UPPOOL_MAX)
		uppool_entry_free(TAILQ_LAST(&w->uppool, uppool_head));
	if ((e = calloc(1, sizeof(*e))) == NULL)
		return 0;
	e->w = w;
	if ((e->timer = evtimer_new(w->base, uppool_timer_cb, e)) == NULL ||
	    (e->name = strdup(c->sandbox ? c->sandbox : "")) == NULL) {
		if (e->timer != NULL)
			event_free(e->timer);
		free(e);
		return 0;
	}
	e->io = io;
	e->sb = c->sb != NULL ? sandbox_ref(c->sb) : NULL;
	e->tls = tls != NULL ? tls_ref(tls) : NULL;
	snprintf(e->host, sizeof(e->host), "%s", host);
	e->port = c->http.up_port;
	e->addr = c->http.up_addr;
	memcpy(e->ip, c->http.up_ip, sizeof(e->ip));
	e->idle_since = c->http.up_idle_since;
	idle_ms -= now - c->http.up_idle_since;
	tv.tv_sec = (time_t)(idle_ms / 1000);
	tv.tv_usec = (suseconds_t)(idle_ms % 1000) * 1000;
	evtimer_add(e->timer, &tv);
	io_set_cb(io, uppool_io_cb, e);
	io_read(io, 1);
	TAILQ_INSERT_HEAD(&w->uppool, e, link);
	w->nuppool++;
	c->uio = NULL;
	c->http.up_clean = false;
	log_debug("conn=%llu upstream %s:%u (%s) kept for the next client",
	    (unsigned long long)c->id, e->host, e->port, e->ip);
	return 1;
}

static int
uppool_addr_in(const struct policy_addr *a, const struct policy_addr *addrs,
    size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		if (addrs[i].family != a->family)
			continue;
		if (a->family == AF_INET ? addrs[i].u.v4.s_addr ==
		    a->u.v4.s_addr : memcmp(&addrs[i].u.v6, &a->u.v6,
		    sizeof(a->u.v6)) == 0)
			return 1;
	}
	return 0;
}

struct io *
uppool_take(struct conn *c, struct tls *tls, const char *host, uint16_t port,
    const struct policy_addr *addrs, size_t n)
{
	struct worker		*w = c->w;
	struct uppool_entry	*e;
	struct io		*io;
	const char		*name = c->sandbox ? c->sandbox : "";

	TAILQ_FOREACH(e, &w->uppool, link)
		if (e->sb == c->sb && e->tls == tls && e->port == port &&
		    strcmp(e->host, host) == 0 && strcmp(e->name, name) == 0 &&
		    uppool_addr_in(&e->addr, addrs, n))
			break;
	if (e == NULL)
		return NULL;
	io = e->io;
	e->io = NULL;
	io_set_cb(io, uppool_orphan_cb, NULL);
	snprintf(c->http.up_host, sizeof(c->http.up_host), "%s", e->host);
	c->http.up_port = e->port;
	c->http.up_addr = e->addr;
	memcpy(c->http.up_ip, e->ip, sizeof(c->http.up_ip));
	c->http.up_idle_since = e->idle_since;
	uppool_entry_free(e);
	return io;
}

void
uppool_flush(struct worker *w, struct sandbox *sb)
{
	struct uppool_entry	*e, *n;

	for (e = TAILQ_FIRST(&w->uppool); e != NULL; e = n) {
		n = TAILQ_NEXT(e, link);
		if (sb == NULL || e->sb == sb)
			uppool_entry_free(e);
	}
}
