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

#include "certs/ssldl.h"
#include "policy/policy.h"
#include "proxy/io.h"
#include "proxy/sandbox.h"
#include "proxy/tls.h"
#include "proxy/uppool.h"
#include "proxy/util.h"

struct uppool_entry {
	TAILQ_ENTRY(uppool_entry) link;
	struct uppool		*p;
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
	uint64_t		 idle_ms;
};

void
uppool_init(struct uppool *p, struct event_base *base)
{
	p->base = base;
	TAILQ_INIT(&p->entries);
	p->n = 0;
}

static void
uppool_entry_free(struct uppool_entry *e)
{
	TAILQ_REMOVE(&e->p->entries, e, link);
	e->p->n--;
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
uppool_put(struct uppool *p, const struct uppool_ent *k, struct io *io)
{
	struct uppool_entry	*e;
	SSL			*ssl;
	uint64_t		 now = util_now_ms(), idle_ms;
	struct timeval		 tv;

	if (io == NULL || k->host == NULL || io_eof(io) ||
	    io_in_len(io) != 0 || io_out_len(io) != 0 ||
	    (k->sb != NULL && atomic_load(&k->sb->dead)))
		return 0;
	if (now < k->idle_since || now - k->idle_since >= k->idle_ms)
		return 0;
	/* A TLS session only under the context it was verified with, and
	 * only once it is up; a plain connection only as plain. */
	ssl = io_ssl(io);
	if ((ssl != NULL) != (k->tls != NULL) ||
	    (ssl != NULL && !SSL_is_init_finished(ssl)))
		return 0;
	if (p->n >= UPPOOL_MAX)
		uppool_entry_free(TAILQ_LAST(&p->entries, uppool_head));
	if ((e = calloc(1, sizeof(*e))) == NULL)
		return 0;
	e->p = p;
	if ((e->timer = evtimer_new(p->base, uppool_timer_cb, e)) == NULL ||
	    (e->name = strdup(k->sandbox != NULL ? k->sandbox : "")) == NULL) {
		if (e->timer != NULL)
			event_free(e->timer);
		free(e);
		return 0;
	}
	e->io = io;
	e->sb = k->sb != NULL ? sandbox_ref(k->sb) : NULL;
	e->tls = k->tls != NULL ? tls_ref(k->tls) : NULL;
	snprintf(e->host, sizeof(e->host), "%s", k->host);
	e->port = k->port;
	e->addr = k->addr;
	memcpy(e->ip, k->ip, sizeof(e->ip));
	e->ip[sizeof(e->ip) - 1] = '\0';
	e->idle_since = k->idle_since;
	e->idle_ms = k->idle_ms;
	idle_ms = k->idle_ms - (now - k->idle_since);
	tv = util_ms_tv(idle_ms);
	evtimer_add(e->timer, &tv);
	io_set_cb(io, uppool_io_cb, e);
	io_read(io, 1);
	TAILQ_INSERT_HEAD(&p->entries, e, link);
	p->n++;
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
uppool_take(struct uppool *p, struct uppool_ent *k,
    const struct policy_addr *addrs, size_t n)
{
	struct uppool_entry	*e;
	struct io		*io;
	const char		*name = k->sandbox != NULL ? k->sandbox : "";

	if (k->host == NULL)
		return NULL;
	TAILQ_FOREACH(e, &p->entries, link)
		if (e->sb == k->sb && e->tls == k->tls && e->port == k->port &&
		    strcmp(e->host, k->host) == 0 &&
		    strcmp(e->name, name) == 0 &&
		    uppool_addr_in(&e->addr, addrs, n))
			break;
	if (e == NULL)
		return NULL;
	io = e->io;
	e->io = NULL;
	io_set_cb(io, uppool_orphan_cb, NULL);
	k->addr = e->addr;
	memcpy(k->ip, e->ip, sizeof(k->ip));
	k->idle_since = e->idle_since;
	k->idle_ms = e->idle_ms;
	uppool_entry_free(e);
	return io;
}

void
uppool_flush(struct uppool *p, struct sandbox *sb)
{
	struct uppool_entry	*e, *n;

	for (e = TAILQ_FIRST(&p->entries); e != NULL; e = n) {
		n = TAILQ_NEXT(e, link);
		if (sb == NULL || e->sb == sb)
			uppool_entry_free(e);
	}
}
