/*
 * resolver.c - c-ares in a worker's event loop, with a bounded TTL cache.
 *
 * c-ares tells us which sockets it wants watched through its socket-state
 * callback; we add one event per socket and a single timer set from
 * ares_timeout(), and both call ares_process_fd().  Concurrent lookups of
 * one name share one query: each waits on the cache entry, which is
 * "pending" until c-ares answers.
 *
 * Not here: policy checks of the answers (the caller's job), the DNS
 * listener that answers sandboxes (dns.c).
 */
#include "config.h"

#include <sys/queue.h>
#include <sys/socket.h>

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ares.h>
#include <event2/event.h>

#include "policy/policy.h"
#include "proxy/log.h"
#include "proxy/metrics.h"
#include "proxy/resolver.h"
#include "proxy/util.h"

struct rentry;

struct resolver_query {
	struct rentry			*e;
	void				(*cb)(const struct resolver_result *, void *);
	void				*arg;
	TAILQ_ENTRY(resolver_query)	 link;
};

struct rentry {
	struct resolver			*r;
	char				*name;
	uint32_t			 hash;
	struct rentry			*hnext;		/* hash chain */
	TAILQ_ENTRY(rentry)		 lru;		/* only when cached */
	unsigned			 pending:1;	/* c-ares query under way */
	unsigned			 starting:1;	/* inside ares_getaddrinfo */
	unsigned			 in_lru:1;
	uint64_t			 expires_ms;
	uint64_t			 t0;		/* metrics_clock(): query sent */
	struct resolver_result		 res;
	TAILQ_HEAD(, resolver_query)	 waiters;
};

struct rsock {
	int		 fd;
	struct event	*ev;
	struct rsock	*next;
};

struct resolver {
	struct event_base	*base;
	ares_channel		 ch;
	struct event		*timer;
	struct rsock		*socks;
	struct rentry		**buckets;
	size_t			 nbuckets;	/* power of two */
	size_t			 count;		/* entries in the table */
	size_t			 max;		/* cached entries allowed */
	TAILQ_HEAD(rentryq, rentry) lru;
	size_t			 nlru;
	size_t			 npending;	/* entries with a query under way */
	char			*want_servers;	/* csv to apply when idle, or NULL */
	unsigned		 destroying:1;
};

static uint32_t		 rhash(const char *s);
static struct rentry	*rfind(struct resolver *r, const char *name, uint32_t h);
static void		 rremove(struct resolver *r, struct rentry *e);
static void		 rfree_entry(struct rentry *e);
static void		 rlru_touch(struct resolver *r, struct rentry *e);
static void		 revict(struct resolver *r);
static int		 rstart(struct resolver *r, struct rentry *e);
static void		 rares_cb(void *arg, int status, int timeouts,
			    struct ares_addrinfo *ai);
static void		 rsock_state_cb(void *data, ares_socket_t fd,
			    int readable, int writable);
static void		 rsock_cb(evutil_socket_t fd, short what, void *arg);
static void		 rtimer_cb(evutil_socket_t fd, short what, void *arg);
static void		 rtimer_update(struct resolver *r);
static int		 rservers_csv(char *const *servers, char *out,
			    size_t len);
static void		 rapply_servers(struct resolver *r);

static pthread_once_t	ares_once = PTHREAD_ONCE_INIT;
static int		ares_init_rc;

static void
ares_lib_init(void)
{
	ares_init_rc = ares_library_init(ARES_LIB_INIT_ALL);
}

struct resolver *
resolver_new(struct event_base *base, char *const *servers, unsigned tries,
    unsigned timeout_ms, size_t cache_entries, char *err, size_t errlen)
{
	struct resolver		*r = NULL;
	struct ares_options	 opts;
	int			 mask, rc;
	size_t			 nb;
	char			 csv[2048];

	pthread_once(&ares_once, ares_lib_init);
	if (ares_init_rc != ARES_SUCCESS) {
		snprintf(err, errlen, "c-ares: %s", ares_strerror(ares_init_rc));
		return NULL;
	}
	if ((r = calloc(1, sizeof(*r))) == NULL)
		goto nomem;
	r->base = base;
	r->max = cache_entries;
	TAILQ_INIT(&r->lru);
	for (nb = 64; nb < cache_entries && nb < (1u << 20); nb <<= 1)
		;
	r->nbuckets = nb;
	if ((r->buckets = calloc(nb, sizeof(*r->buckets))) == NULL)
		goto nomem;
	if ((r->timer = evtimer_new(base, rtimer_cb, r)) == NULL)
		goto nomem;

	memset(&opts, 0, sizeof(opts));
	/* No search domains: "metadata" must not become
	 * "metadata.google.internal" behind the policy's back. */
	opts.flags = ARES_FLAG_NOSEARCH | ARES_FLAG_STAYOPEN;
	opts.tries = tries ? (int)tries : 2;
	opts.timeout = (int)(timeout_ms / (opts.tries + 1));
	if (opts.timeout < 200)
		opts.timeout = 200;
	opts.sock_state_cb = rsock_state_cb;
	opts.sock_state_cb_data = r;
	mask = ARES_OPT_FLAGS | ARES_OPT_TRIES | ARES_OPT_TIMEOUTMS |
	    ARES_OPT_SOCK_STATE_CB;
	if ((rc = ares_init_options(&r->ch, &opts, mask)) != ARES_SUCCESS) {
		snprintf(err, errlen, "c-ares: %s", ares_strerror(rc));
		r->ch = NULL;
		goto fail;
	}
	if (servers != NULL && servers[0] != NULL) {
		if (rservers_csv(servers, csv, sizeof(csv)) == -1) {
			snprintf(err, errlen, "resolver.servers: list too long");
			goto fail;
		}
		if ((rc = ares_set_servers_ports_csv(r->ch, csv)) !=
		    ARES_SUCCESS) {
			snprintf(err, errlen, "resolver.servers \"%s\": %s",
			    csv, ares_strerror(rc));
			goto fail;
		}
	}
	return r;
 nomem:
	snprintf(err, errlen, "out of memory");
 fail:
	resolver_free(r);
	return NULL;
}

/*
 * Turns config entries ("IP", "IP:PORT", "[V6]:PORT", bare "V6") into the
 * csv c-ares wants, where a bare IPv6 address must be bracketed.
 */
static int
rservers_csv(char *const *servers, char *out, size_t len)
{
	size_t	i, o = 0;
	int	n;

	out[0] = '\0';
	for (i = 0; servers[i] != NULL; i++) {
		const char *s = servers[i];
		const char *colon = strchr(s, ':');
		int bare6 = colon != NULL && s[0] != '[' &&
		    strchr(colon + 1, ':') != NULL;

		n = snprintf(out + o, len - o, "%s%s%s%s", i ? "," : "",
		    bare6 ? "[" : "", s, bare6 ? "]" : "");
		if (n < 0 || (size_t)n >= len - o)
			return -1;
		o += n;
	}
	return 0;
}

void
resolver_free(struct resolver *r)
{
	struct rsock	*s, *sn;
	size_t		 i;

	if (r == NULL)
		return;
	r->destroying = 1;
	if (r->ch != NULL)
		ares_destroy(r->ch);	/* callbacks run with ARES_EDESTRUCTION */
	for (s = r->socks; s != NULL; s = sn) {
		sn = s->next;
		event_free(s->ev);
		free(s);
	}
	if (r->buckets != NULL) {
		for (i = 0; i < r->nbuckets; i++) {
			struct rentry *e, *en;

			for (e = r->buckets[i]; e != NULL; e = en) {
				en = e->hnext;
				rfree_entry(e);
			}
		}
		free(r->buckets);
	}
	if (r->timer != NULL)
		event_free(r->timer);
	free(r->want_servers);
	free(r);
}

size_t
resolver_cache_size(const struct resolver *r)
{
	return r->nlru;
}

static uint32_t
rhash(const char *s)
{
	uint32_t	h = 2166136261u;

	for (; *s != '\0'; s++) {
		h ^= (unsigned char)*s;
		h *= 16777619u;
	}
	return h;
}

static struct rentry *
rfind(struct resolver *r, const char *name, uint32_t h)
{
	struct rentry	*e;

	for (e = r->buckets[h & (r->nbuckets - 1)]; e != NULL; e = e->hnext)
		if (e->hash == h && strcmp(e->name, name) == 0)
			return e;
	return NULL;
}

/* Unlinks e from the table and the LRU list; does not free it. */
static void
rremove(struct resolver *r, struct rentry *e)
{
	struct rentry	**pp;

	for (pp = &r->buckets[e->hash & (r->nbuckets - 1)]; *pp != NULL;
	    pp = &(*pp)->hnext) {
		if (*pp == e) {
			*pp = e->hnext;
			r->count--;
			break;
		}
	}
	if (e->in_lru) {
		TAILQ_REMOVE(&r->lru, e, lru);
		e->in_lru = 0;
		r->nlru--;
	}
}

static void
rfree_entry(struct rentry *e)
{
	struct resolver_query	*q;

	while ((q = TAILQ_FIRST(&e->waiters)) != NULL) {
		TAILQ_REMOVE(&e->waiters, q, link);
		free(q);
	}
	free(e->name);
	free(e);
}

static void
rlru_touch(struct resolver *r, struct rentry *e)
{
	if (e->in_lru)
		TAILQ_REMOVE(&r->lru, e, lru);
	else {
		e->in_lru = 1;
		r->nlru++;
	}
	TAILQ_INSERT_HEAD(&r->lru, e, lru);
}

/* Drops the least recently used answers until the cache fits. */
static void
revict(struct resolver *r)
{
	struct rentry	*e;

	while (r->nlru > r->max && (e = TAILQ_LAST(&r->lru, rentryq)) != NULL) {
		rremove(r, e);
		rfree_entry(e);
	}
}

int
resolver_lookup(struct resolver *r, const char *name,
    void (*cb)(const struct resolver_result *, void *), void *arg,
    struct resolver_result *res, struct resolver_query **qp)
{
	struct rentry		*e;
	struct resolver_query	*q;
	uint32_t		 h = rhash(name);

	*qp = NULL;
	e = rfind(r, name, h);
	if (e != NULL && !e->pending && e->expires_ms > util_now_ms()) {
		*res = e->res;
		res->ttl = (uint32_t)((e->expires_ms - util_now_ms()) / 1000);
		rlru_touch(r, e);
		return 1;
	}
	if (e == NULL) {
		if ((e = calloc(1, sizeof(*e))) == NULL)
			return -1;
		if ((e->name = strdup(name)) == NULL) {
			free(e);
			return -1;
		}
		e->r = r;
		e->hash = h;
		TAILQ_INIT(&e->waiters);
		e->hnext = r->buckets[h & (r->nbuckets - 1)];
		r->buckets[h & (r->nbuckets - 1)] = e;
		r->count++;
	}
	if (!e->pending) {
		/* A pending entry is never in the LRU list, so never evicted. */
		if (e->in_lru) {
			TAILQ_REMOVE(&r->lru, e, lru);
			e->in_lru = 0;
			r->nlru--;
		}
		if (rstart(r, e) == 1) {
			/* c-ares answered at once (hosts file, bad name). */
			*res = e->res;
			if (r->max == 0 || e->res.status == RESOLVER_FAIL) {
				rremove(r, e);
				rfree_entry(e);
			} else {
				rlru_touch(r, e);
				revict(r);
			}
			return 1;
		}
	}
	if ((q = calloc(1, sizeof(*q))) == NULL)
		return -1;	/* the entry stays pending; its answer is cached */
	q->e = e;
	q->cb = cb;
	q->arg = arg;
	TAILQ_INSERT_TAIL(&e->waiters, q, link);
	*qp = q;
	return 0;
}

/* Starts the c-ares query of e.  Returns 1 if it completed at once. */
static int
rstart(struct resolver *r, struct rentry *e)
{
	struct ares_addrinfo_hints	hints;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	e->pending = 1;
	e->starting = 1;
	e->t0 = metrics_clock();
	r->npending++;
	ares_getaddrinfo(r->ch, e->name, NULL, &hints, rares_cb, e);
	e->starting = 0;
	rtimer_update(r);
	return e->pending ? 0 : 1;
}

void
resolver_cancel(struct resolver_query *q)
{
	if (q == NULL)
		return;
	TAILQ_REMOVE(&q->e->waiters, q, link);
	free(q);
}

static void
rfill(struct rentry *e, int status, struct ares_addrinfo *ai)
{
	struct resolver_result		*res = &e->res;
	struct ares_addrinfo_node	*n;
	struct ares_addrinfo_cname	*c;
	long				 ttl = RESOLVER_MAX_TTL_S;
	size_t				 i;
	uint64_t			 now = util_now_ms();

	memset(res, 0, sizeof(*res));
	if (status == ARES_SUCCESS && ai != NULL) {
		for (n = ai->nodes; n != NULL; n = n->ai_next) {
			struct policy_addr a;
			int dup = 0;

			if (policy_addr_from_sockaddr(n->ai_addr, &a) == -1)
				continue;
			if (n->ai_ttl < ttl)
				ttl = n->ai_ttl < 0 ? 0 : n->ai_ttl;
			for (i = 0; i < res->naddrs; i++)
				if (memcmp(&res->addrs[i], &a, sizeof(a)) == 0)
					dup = 1;
			if (!dup && res->naddrs < RESOLVER_MAX_ADDRS)
				res->addrs[res->naddrs++] = a;
		}
		for (c = ai->cnames; c != NULL; c = c->next)
			if (c->ttl >= 0 && c->ttl < ttl)
				ttl = c->ttl;
	}
	if (res->naddrs > 0) {
		res->status = RESOLVER_OK;
		res->ttl = (uint32_t)ttl;
		e->expires_ms = now + (uint64_t)ttl * 1000;
	} else if (status == ARES_SUCCESS || status == ARES_ENOTFOUND ||
	    status == ARES_ENODATA || status == ARES_ENONAME) {
		res->status = RESOLVER_NXDOMAIN;
		res->error = "no such name (no A or AAAA record)";
		e->expires_ms = now + RESOLVER_NEG_TTL_S * 1000;
	} else {
		res->status = RESOLVER_FAIL;
		res->error = status == ARES_ETIMEOUT ?
		    "DNS servers did not answer in time" :
		    status == ARES_ECONNREFUSED ?
		    "DNS servers refused the connection" :
		    status == ARES_ESERVFAIL ? "DNS server failure (SERVFAIL)" :
		    status == ARES_EREFUSED ? "DNS server refused the query" :
		    "DNS lookup failed";
		e->expires_ms = now;
	}
}

static void
rares_cb(void *arg, int status, int timeouts, struct ares_addrinfo *ai)
{
	struct rentry		*e = arg;
	struct resolver		*r = e->r;
	struct resolver_query	*q;

	r->npending--;
	if (status == ARES_EDESTRUCTION || r->destroying) {
		if (ai != NULL)
			ares_freeaddrinfo(ai);
		e->pending = 0;
		return;		/* resolver_free frees the entry */
	}
	metrics_observe(METRICS_H_DNS, &e->t0);
	rfill(e, status, ai);
	if (ai != NULL)
		ares_freeaddrinfo(ai);
	e->pending = 0;
	if (e->starting)
		return;		/* resolver_lookup takes it from here */

	/* One waiter at a time: a callback may cancel another waiter. */
	while ((q = TAILQ_FIRST(&e->waiters)) != NULL) {
		struct resolver_result res = e->res;

		TAILQ_REMOVE(&e->waiters, q, link);
		q->cb(&res, q->arg);
		free(q);
	}
	if (e->pending)
		return;		/* a callback started a new query on it */
	if (r->max == 0 || e->res.status == RESOLVER_FAIL) {
		rremove(r, e);
		rfree_entry(e);
	} else {
		rlru_touch(r, e);
		revict(r);
	}
	if (r->want_servers != NULL && r->npending == 0)
		rapply_servers(r);
}

int
resolver_set_servers(struct resolver *r, char *const *servers)
{
	char	csv[2048];

	csv[0] = '\0';
	if (servers != NULL && servers[0] != NULL &&
	    rservers_csv(servers, csv, sizeof(csv)) == -1)
		return -1;
	free(r->want_servers);
	if ((r->want_servers = strdup(csv)) == NULL)
		return -1;
	if (r->npending == 0)
		rapply_servers(r);
	return 0;
}

/*
 * Applies the servers a reload asked for.  An empty list means the
 * system's: c-ares has no call to re-read resolv.conf on a live channel,
 * so that case keeps the servers the channel started with.
 */
static void
rapply_servers(struct resolver *r)
{
	struct rentry	*e;
	int		 rc;

	if (r->want_servers[0] != '\0' &&
	    (rc = ares_set_servers_ports_csv(r->ch, r->want_servers)) !=
	    ARES_SUCCESS)
		log_warnx("resolver: cannot apply servers \"%s\": %s",
		    r->want_servers, ares_strerror(rc));
	free(r->want_servers);
	r->want_servers = NULL;
	/* Answers from the old servers must not outlive them. */
	while ((e = TAILQ_FIRST(&r->lru)) != NULL) {
		rremove(r, e);
		rfree_entry(e);
	}
}

static void
rsock_state_cb(void *data, ares_socket_t fd, int readable, int writable)
{
	struct resolver	*r = data;
	struct rsock	*s, **pp;
	short		 what = EV_PERSIST;

	for (pp = &r->socks; (s = *pp) != NULL; pp = &s->next)
		if (s->fd == fd)
			break;
	if (!readable && !writable) {
		if (s != NULL) {
			*pp = s->next;
			event_free(s->ev);
			free(s);
		}
		return;
	}
	if (readable)
		what |= EV_READ;
	if (writable)
		what |= EV_WRITE;
	if (s == NULL) {
		if ((s = calloc(1, sizeof(*s))) == NULL) {
			log_warnx("resolver: out of memory watching a socket");
			return;		/* c-ares times the query out */
		}
		s->fd = fd;
		s->next = r->socks;
		r->socks = s;
	} else {
		event_free(s->ev);
	}
	s->ev = event_new(r->base, fd, what, rsock_cb, r);
	if (s->ev == NULL || event_add(s->ev, NULL) == -1)
		log_warnx("resolver: cannot watch a c-ares socket");
}

static void
rsock_cb(evutil_socket_t fd, short what, void *arg)
{
	struct resolver	*r = arg;

	ares_process_fd(r->ch, (what & EV_READ) ? fd : ARES_SOCKET_BAD,
	    (what & EV_WRITE) ? fd : ARES_SOCKET_BAD);
	rtimer_update(r);
}

static void
rtimer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct resolver	*r = arg;

	ares_process_fd(r->ch, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
	rtimer_update(r);
}

static void
rtimer_update(struct resolver *r)
{
	struct timeval	 tv, *tvp;

	if (r->destroying)
		return;
	tvp = ares_timeout(r->ch, NULL, &tv);
	if (tvp != NULL)
		event_add(r->timer, tvp);
	else
		event_del(r->timer);
}
