/*
 * worker.c - a worker thread: its event loop, accepting, messages from
 * the main thread (new config, listeners, sandboxes gone, drain, stop),
 * the pipe pool.
 *
 * Each worker's event base is used by that thread only, so it is created
 * without locks; the main thread reaches a worker through an eventfd and
 * a message queue under the worker's mutex.
 */
#include "config.h"

#include <sys/eventfd.h>
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#ifdef HAVE_MALLOC_TRIM
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "policy/policy.h"
#include "proxy/audit.h"
#include "proxy/conn.h"
#include "proxy/dns.h"
#include "proxy/listener.h"
#include "proxy/log.h"
#include "proxy/resolver.h"
#include "proxy/sandbox.h"
#include "proxy/secrets.h"
#include "proxy/tls.h"
#include "proxy/tunnel.h"
#include "proxy/uppool.h"
#include "proxy/util.h"
#include "proxy/worker.h"

atomic_size_t		worker_conns_open;
atomic_uint_fast64_t	worker_next_id;

static void	*worker_main(void *arg);
static void	 worker_wake_cb(evutil_socket_t fd, short what, void *arg);
static void	 worker_accept_cb(evutil_socket_t fd, short what, void *arg);
static void	 worker_udp_cb(evutil_socket_t fd, short what, void *arg);
static void	 worker_pause_cb(evutil_socket_t fd, short what, void *arg);
static void	 worker_trim_cb(evutil_socket_t fd, short what, void *arg);
static void	 worker_flush_cb(evutil_socket_t fd, short what, void *arg);
static size_t	 worker_sandbox_limit(const struct worker *w,
		    const struct listener *l);
static void	 worker_refuse_limit(struct worker *w, struct listener *l, int fd);
static void	 worker_audit_refused(struct worker *w, struct listener *l,
		    struct sandbox *sb, uint64_t n);
static void	 worker_accepting(struct worker *w, int on);
static void	 worker_pause(struct worker *w, const char *why);
static void	 worker_check_done(struct worker *w);
static void	 worker_post(struct worker *w);
static int	 worker_watch(struct worker *w, struct listener *l);
static void	 worker_unwatch(struct worker *w, struct worker_accept *a);
static void	 worker_sandbox_gone(struct worker *w, struct sandbox *sb);
static void	 worker_messages(struct worker *w);
static int	 worker_spare_open(void);
static int	 worker_refuse_nofd(struct worker *w, struct worker_accept *a,
		    int err);
static void	 worker_refuse_queued(struct worker *w);

struct worker *
worker_new(int idx, struct moat_config *cfg, struct tls *tls,
    struct secrets *secrets, struct listener *listeners, char *err,
    size_t errlen)
{
	struct worker		*w;
	struct listener		*l;
	int			 efd = -1;

	if ((w = calloc(1, sizeof(*w))) == NULL)
		goto nomem;
	w->idx = idx;
	w->done_fd = -1;
	w->spare_fd = -1;
	TAILQ_INIT(&w->acc);
	TAILQ_INIT(&w->conns);
	TAILQ_INIT(&w->msgs);
	LIST_INIT(&w->tunnels);
	LIST_INIT(&w->dnsq);
	pthread_mutex_init(&w->mu, NULL);
	/* See WORKER_BASE_FLAGS. */
	w->base = util_base_new(WORKER_BASE_FLAGS);
	if (w->base == NULL)
		goto nomem;
	uppool_init(&w->uppool, w->base);
	w->cfg = policy_config_ref(cfg);
	w->tls = tls ? tls_ref(tls) : NULL;
	w->secrets = secrets ? secrets_ref(secrets) : NULL;
	w->res = resolver_new(w->base, cfg->resolver_servers,
	    cfg->resolver_tries, cfg->timeouts.dns_ms,
	    cfg->limits.dns_cache_entries, err, errlen);
	if (w->res == NULL)
		goto fail;
	if ((w->accept_pause = evtimer_new(w->base, worker_pause_cb, w)) ==
	    NULL ||
	    (w->trim = evtimer_new(w->base, worker_trim_cb, w)) == NULL ||
	    (w->refused_flush = evtimer_new(w->base, worker_flush_cb, w)) ==
	    NULL)
		goto nomem;
	if ((w->spare_fd = worker_spare_open()) == -1) {
		snprintf(err, errlen, "/dev/null: %s", strerror(errno));
		goto fail;
	}
	for (l = listeners; l != NULL; l = l->next)
		if (worker_watch(w, l) == -1)
			goto nomem;
	if ((efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) == -1) {
		snprintf(err, errlen, "eventfd: %s", strerror(errno));
		goto fail;
	}
	w->wake = event_new(w->base, efd, EV_READ | EV_PERSIST, worker_wake_cb,
	    w);
	if (w->wake == NULL || event_add(w->wake, NULL) == -1) {
		close(efd);
		goto nomem;
	}
	worker_accepting(w, 1);
	return w;
 nomem:
	snprintf(err, errlen, "out of memory");
 fail:
	worker_free(w);
	return NULL;
}

/*
 * Watches one listener: accept events for stream sockets, read events for
 * DNS over UDP.  A per-worker socket (SO_REUSEPORT) or the shared one.
 */
static int
worker_watch(struct worker *w, struct listener *l)
{
	struct worker_accept	*a;

	if ((a = calloc(1, sizeof(*a))) == NULL)
		return -1;
	a->w = w;
	a->fd = l->nfds == 1 ? l->fds[0] : l->fds[w->idx];
	a->ev = event_new(w->base, a->fd, EV_READ | EV_PERSIST,
	    l->udp ? worker_udp_cb : worker_accept_cb, a);
	if (a->ev == NULL) {
		free(a);
		return -1;
	}
	a->l = listener_ref(l);
	TAILQ_INSERT_TAIL(&w->acc, a, link);
	if (w->accepting || l->udp)
		event_add(a->ev, NULL);
	return 0;
}

static void
worker_unwatch(struct worker *w, struct worker_accept *a)
{
	TAILQ_REMOVE(&w->acc, a, link);
	event_free(a->ev);
	listener_unref(a->l);
	free(a);
}

static void *
worker_main(void *arg)
{
	struct worker	*w = arg;

	event_base_dispatch(w->base);
	w->stopped = 1;
	(void)!WRITE_LIT(w->done_fd, "x");
	return NULL;
}

int
worker_start(struct worker *w)
{
	/* Signals belong to the main thread; workers never take them. */
	return util_thread_start(&w->thr, worker_main, w);
}

void
worker_free(struct worker *w)
{
	struct conn		*c;
	struct tunnel		*t;
	struct worker_accept	*a;
	struct worker_msg	*m;
	size_t			 i;

	if (w == NULL)
		return;
	if (w->thr)
		pthread_join(w->thr, NULL);
	while ((c = TAILQ_FIRST(&w->conns)) != NULL)
		conn_close(c, POLICY_R_SHUTDOWN, NULL);
	while ((t = LIST_FIRST(&w->tunnels)) != NULL)
		tunnel_abort(t);
	uppool_flush(&w->uppool, NULL);
	dns_abort_all(w, NULL);
	while ((a = TAILQ_FIRST(&w->acc)) != NULL)
		worker_unwatch(w, a);
	while ((m = TAILQ_FIRST(&w->msgs)) != NULL) {
		TAILQ_REMOVE(&w->msgs, m, link);
		listener_unref(m->l);
		sandbox_unref(m->sb);
		free(m);
	}
	for (i = 0; i < w->npipes; i++) {
		close(w->pipes[i][0]);
		close(w->pipes[i][1]);
	}
	if (w->wake != NULL) {
		close(event_get_fd(w->wake));
		event_free(w->wake);
	}
	if (w->accept_pause != NULL)
		event_free(w->accept_pause);
	if (w->trim != NULL)
		event_free(w->trim);
	if (w->refused_flush != NULL)
		event_free(w->refused_flush);
	if (w->spare_fd >= 0)
		close(w->spare_fd);
	resolver_free(w->res);
	if (w->base != NULL)
		event_base_free(w->base);
	policy_config_unref(w->cfg);
	policy_config_unref(w->new_cfg);
	tls_unref(w->tls);
	tls_unref(w->new_tls);
	secrets_unref(w->secrets);
	secrets_unref(w->new_secrets);
	pthread_mutex_destroy(&w->mu);
	free(w);
}

static void
worker_post(struct worker *w)
{
	uint64_t	one = 1;

	(void)!write(event_get_fd(w->wake), &one, sizeof(one));
}

void
worker_post_config(struct worker *w, struct moat_config *cfg, struct tls *tls,
    struct secrets *secrets)
{
	pthread_mutex_lock(&w->mu);
	policy_config_unref(w->new_cfg);
	tls_unref(w->new_tls);
	secrets_unref(w->new_secrets);
	w->new_cfg = policy_config_ref(cfg);
	w->new_tls = tls ? tls_ref(tls) : NULL;
	w->new_secrets = secrets ? secrets_ref(secrets) : NULL;
	pthread_mutex_unlock(&w->mu);
	worker_post(w);
}

void
worker_post_drain(struct worker *w)
{
	pthread_mutex_lock(&w->mu);
	w->cmd_drain = 1;
	pthread_mutex_unlock(&w->mu);
	worker_post(w);
}

void
worker_post_stop(struct worker *w)
{
	pthread_mutex_lock(&w->mu);
	w->cmd_stop = 1;
	pthread_mutex_unlock(&w->mu);
	worker_post(w);
}

static int
worker_post_msg(struct worker *w, enum worker_msg_type type,
    struct listener *l, struct sandbox *sb)
{
	struct worker_msg	*m;

	if ((m = calloc(1, sizeof(*m))) == NULL)
		return -1;
	m->type = type;
	m->l = l ? listener_ref(l) : NULL;
	m->sb = sb ? sandbox_ref(sb) : NULL;
	pthread_mutex_lock(&w->mu);
	TAILQ_INSERT_TAIL(&w->msgs, m, link);
	pthread_mutex_unlock(&w->mu);
	worker_post(w);
	return 0;
}

int
worker_post_listener(struct worker *w, struct listener *l)
{
	return worker_post_msg(w, WORKER_MSG_ADD_LISTENER, l, NULL);
}

int
worker_post_sandbox_gone(struct worker *w, struct sandbox *sb)
{
	return worker_post_msg(w, WORKER_MSG_DEL_SANDBOX, NULL, sb);
}

static void
worker_messages(struct worker *w)
{
	TAILQ_HEAD(, worker_msg)	 q = TAILQ_HEAD_INITIALIZER(q);
	struct worker_msg		*m;

	pthread_mutex_lock(&w->mu);
	while ((m = TAILQ_FIRST(&w->msgs)) != NULL) {
		TAILQ_REMOVE(&w->msgs, m, link);
		TAILQ_INSERT_TAIL(&q, m, link);
	}
	pthread_mutex_unlock(&w->mu);
	while ((m = TAILQ_FIRST(&q)) != NULL) {
		TAILQ_REMOVE(&q, m, link);
		switch (m->type) {
		case WORKER_MSG_ADD_LISTENER:
			if (!w->draining && worker_watch(w, m->l) == -1)
				log_warnx("worker %d: out of memory: not "
				    "serving %s", w->idx, m->l->address);
			break;
		case WORKER_MSG_DEL_SANDBOX:
			worker_sandbox_gone(w, m->sb);
			break;
		}
		listener_unref(m->l);
		sandbox_unref(m->sb);
		free(m);
	}
}

/* A sandbox was unregistered: nothing of it stays in this worker. */
static void
worker_sandbox_gone(struct worker *w, struct sandbox *sb)
{
	struct worker_accept	*a, *an;
	struct conn		*c, *cn;
	uint64_t		 n;

	for (a = TAILQ_FIRST(&w->acc); a != NULL; a = an) {
		an = TAILQ_NEXT(a, link);
		if (a->l->sb != sb)
			continue;
		/* Refusals that waited for their line: now or never. */
		if ((n = atomic_exchange(&sb->conns_refused, 0)) > 0)
			worker_audit_refused(w, a->l, sb, n);
		worker_unwatch(w, a);
	}
	for (c = TAILQ_FIRST(&w->conns); c != NULL; c = cn) {
		cn = TAILQ_NEXT(c, link);
		if (c->sb == sb)
			conn_abort(c);
	}
	tunnel_abort_sandbox(w, sb);
	uppool_flush(&w->uppool, sb);
	dns_abort_all(w, sb);
	worker_check_done(w);
}

static void
worker_wake_cb(evutil_socket_t fd, short what, void *arg)
{
	struct worker		*w = arg;
	struct moat_config	*cfg;
	struct tls		*tls;
	struct secrets		*secrets;
	struct conn		*c, *cn;
	struct tunnel		*t;
	uint64_t		 n;
	int			 drain, stop;

	(void)!read(fd, &n, sizeof(n));
	pthread_mutex_lock(&w->mu);
	cfg = w->new_cfg;
	tls = w->new_tls;
	secrets = w->new_secrets;
	w->new_cfg = NULL;
	w->new_tls = NULL;
	w->new_secrets = NULL;
	drain = w->cmd_drain;
	stop = w->cmd_stop;
	pthread_mutex_unlock(&w->mu);

	if (cfg != NULL) {
		/* New connections and requests use it; open ones keep a
		 * reference to the config they started with. */
		if (resolver_set_servers(w->res, cfg->resolver_servers) == -1)
			log_warnx("worker %d: out of memory applying resolver "
			    "servers", w->idx);
		policy_config_unref(w->cfg);
		w->cfg = cfg;
		tls_unref(w->tls);
		w->tls = tls;
		secrets_unref(w->secrets);
		w->secrets = secrets;
		w->cfg_gen++;
		/* Kept upstreams were chosen under the old config. */
		uppool_flush(&w->uppool, NULL);
	}
	worker_messages(w);
	if (stop) {
		w->draining = 1;
		worker_accepting(w, 0);
		while ((c = TAILQ_FIRST(&w->conns)) != NULL)
			conn_abort(c);
		while ((t = LIST_FIRST(&w->tunnels)) != NULL)
			tunnel_abort(t);
		uppool_flush(&w->uppool, NULL);
		dns_abort_all(w, NULL);
		event_base_loopbreak(w->base);
		return;
	}
	if (drain && !w->draining) {
		w->draining = 1;
		worker_accepting(w, 0);
		event_del(w->accept_pause);
		worker_refuse_queued(w);
		uppool_flush(&w->uppool, NULL);
		for (c = TAILQ_FIRST(&w->conns); c != NULL; c = cn) {
			cn = TAILQ_NEXT(c, link);
			conn_drain(c);
		}
		worker_check_done(w);
	}
}

/*
 * Draining: a new connection is refused at once, not left in a backlog
 * until moatd exits.  A listening socket moatd bound itself is shut down
 * (SHUT_RD): a TCP one stops listening, so new connections get a reset
 * and those queued on it are reset; a Unix one refuses connect()
 * (ECONNREFUSED).  Unlike close(), shutdown() keeps the descriptor, so a
 * worker still watching a shared socket never sees its number reused
 * under it.  A socket a registration handed over may have other holders,
 * who may hand it to the next moatd: it is not shut down but let go of,
 * and the last worker to let go closes moatd's copy (which refuses new
 * connections if moatd held the only one).  What is already queued is
 * accepted and closed.
 */
static void
worker_refuse_queued(struct worker *w)
{
	struct worker_accept	*a, *an;
	int			 fd, i;

	for (a = TAILQ_FIRST(&w->acc); a != NULL; a = an) {
		an = TAILQ_NEXT(a, link);
		if (a->l->udp)
			continue;
		if (!a->l->held)
			(void)shutdown(a->fd, SHUT_RD);
		for (i = 0; i < WORKER_REFUSE_MAX; i++) {
			fd = accept4(a->fd, NULL, NULL, SOCK_CLOEXEC);
			if (fd == -1 && errno == EINTR)
				continue;
			if (fd == -1)
				break;
			close(fd);
		}
		if (a->l->held)
			worker_unwatch(w, a);
	}
}

static void
worker_check_done(struct worker *w)
{
	if (w->draining && w->nconns == 0 && w->ntunnels == 0 &&
	    LIST_EMPTY(&w->dnsq))
		event_base_loopbreak(w->base);
}

/*
 * After a burst (many connections, then few) the allocator keeps the freed
 * memory for reuse: moatd stays at its peak size.  A second after the
 * connections fell to a quarter of a large peak, glibc's malloc_trim()
 * gives free pages of every arena back to the kernel (it locks each arena
 * in turn: done once per burst, not per connection).
 */
static void
worker_trim_cb(evutil_socket_t fd, short what, void *arg)
{
	struct worker	*w = arg;

#ifdef HAVE_MALLOC_TRIM
	(void)malloc_trim(0);
#endif
	log_debug("worker %d: memory trimmed after a burst of %zu "
	    "connections (now %zu)", w->idx, w->peak_conns, w->nconns);
	w->peak_conns = w->nconns;
}

void
worker_conn_closed(struct worker *w, struct sandbox *sb)
{
	struct timeval	tv = util_ms_tv(WORKER_TRIM_DELAY_MS);

	atomic_fetch_sub(&worker_conns_open, 1);
	if (w->peak_conns >= WORKER_TRIM_MIN_CONNS &&
	    w->nconns <= w->peak_conns / 4 && w->trim != NULL &&
	    !evtimer_pending(w->trim, NULL))
		evtimer_add(w->trim, &tv);
	sandbox_conn_put(sb);
	worker_check_done(w);
}

void
worker_dns_done(struct worker *w)
{
	worker_check_done(w);
}

static void
worker_accepting(struct worker *w, int on)
{
	struct worker_accept	*a;

	if (on == w->accepting)
		return;
	TAILQ_FOREACH(a, &w->acc, link) {
		if (on)
			event_add(a->ev, NULL);
		else
			event_del(a->ev);
	}
	w->accepting = on;
}

/*
 * Out of descriptors or at the connection limit: stop accepting for a
 * moment instead of spinning on a listening socket that stays readable.
 */
static void
worker_pause(struct worker *w, const char *why)
{
	static _Thread_local uint64_t	last;
	struct timeval			tv = util_ms_tv(WORKER_ACCEPT_PAUSE_MS);
	uint64_t			now = util_now_ms();

	if (now - last > 10000) {
		last = now;
		log_warnx("worker %d: not accepting for %d ms: %s", w->idx,
		    WORKER_ACCEPT_PAUSE_MS, why);
	}
	worker_accepting(w, 0);
	evtimer_add(w->accept_pause, &tv);
}

static void
worker_pause_cb(evutil_socket_t fd, short what, void *arg)
{
	struct worker	*w = arg;

	if (w->spare_fd == -1)
		w->spare_fd = worker_spare_open();
	if (!w->draining)
		worker_accepting(w, 1);
}

/*
 * The most connections l's sandbox may have open: the listener's own
 * "connections", else the daemon's limits.sandbox_connections, or for a
 * registered sandbox the smaller of that and its own.
 */
static size_t
worker_sandbox_limit(const struct worker *w, const struct listener *l)
{
	const struct moat_limits	*own;
	size_t				 n = w->cfg->limits.sandbox_connections;

	if (l->connections != 0)
		return l->connections;
	if (l->sb != NULL && l->sb->cfg != NULL) {
		own = &l->sb->cfg->limits;
		if (own->sandbox_connections_set &&
		    own->sandbox_connections < n)
			n = own->sandbox_connections;
	}
	return n;
}

/*
 * A connection accepted while its sandbox is at its limit: refused at
 * once, so that the listeners of other sandboxes keep being served
 * (pausing the worker, as the global limit does, would stop them too).
 * An HTTP client gets a 503 it can read, if the socket takes it in one
 * write; anything else is closed.  Refusals are audited at most once a
 * second per sandbox, with their count, so that a flood cannot flood the
 * audit log.
 */
static void
worker_refuse_limit(struct worker *w, struct listener *l, int fd)
{
#define REFUSE_BODY	"moat refused this connection: its sandbox has too " \
			    "many open (limit).\n"
	static const char	resp[] =
	    "HTTP/1.1 503 Service Unavailable\r\n"
	    "Content-Type: text/plain; charset=utf-8\r\n"
	    "Content-Length: 69\r\n"
	    "Cache-Control: no-store\r\n"
	    "X-Moat-Reason: limit\r\n"
	    "Connection: close\r\n\r\n" REFUSE_BODY;
	_Static_assert(sizeof(REFUSE_BODY) - 1 == 69, "Content-Length");
#undef REFUSE_BODY
	struct timeval		tv = util_ms_tv(SANDBOX_REFUSED_AUDIT_MS);
	char			buf[4096];
	uint64_t		n;
	int			i;

	/*
	 * What the client sent already is read and dropped: closing with
	 * unread bytes would reset the connection, and the reset could
	 * reach the client before it reads the answer.
	 */
	for (i = 0; i < 4 && recv(fd, buf, sizeof(buf), MSG_DONTWAIT) ==
	    (ssize_t)sizeof(buf); i++)
		continue;
	if (l->proto == MOAT_PROTO_HTTP)
		(void)!send(fd, resp, sizeof(resp) - 1, MSG_NOSIGNAL |
		    MSG_DONTWAIT);
	close(fd);
	if ((n = sandbox_conn_refused(l->sb, util_now_ms())) > 0)
		worker_audit_refused(w, l, l->sb, n);
	else if (!evtimer_pending(w->refused_flush, NULL))
		evtimer_add(w->refused_flush, &tv);
}

static void
worker_audit_refused(struct worker *w, struct listener *l, struct sandbox *sb,
    uint64_t n)
{
	struct audit_rec	r;
	char			d[160];

	snprintf(d, sizeof(d), "%llu connection%s refused: the sandbox "
	    "had %zu open, its limit is %zu", (unsigned long long)n,
	    n == 1 ? "" : "s", atomic_load(&sb->conns),
	    worker_sandbox_limit(w, l));
	audit_rec_init(&r);
	r.event = "connection";
	r.sandbox = sb->name;
	r.proto = policy_proto_str(l->proto);
	r.verdict = POLICY_DENY;
	r.reason = POLICY_R_LIMIT;
	r.refused = n > INT64_MAX ? INT64_MAX : (int64_t)n;
	r.detail = d;
	sandbox_count(sb, &r);
	audit_emit(&r);
}

/* Refusals that waited for their line: one line per sandbox now due. */
static void
worker_flush_cb(evutil_socket_t fd, short what, void *arg)
{
	struct worker		*w = arg;
	struct worker_accept	*a;
	struct timeval		 tv = util_ms_tv(SANDBOX_REFUSED_AUDIT_MS);
	uint64_t		 now = util_now_ms(), n;
	int			 again = 0;

	TAILQ_FOREACH(a, &w->acc, link) {
		if (a->l->udp || a->l->sb == NULL)
			continue;
		if ((n = sandbox_conn_refusals_due(a->l->sb, now)) > 0)
			worker_audit_refused(w, a->l, a->l->sb, n);
		else if (atomic_load(&a->l->sb->conns_refused) > 0)
			again = 1;
	}
	if (again)
		evtimer_add(w->refused_flush, &tv);
}

/* The descriptor a worker holds in reserve (see worker_refuse_nofd). */
static int
worker_spare_open(void)
{
	return open("/dev/null", O_RDONLY | O_CLOEXEC);
}

/*
 * accept(2) said EMFILE or ENFILE: the client waits in the listening
 * socket's queue, and would wait there, its connect(2) long done, until
 * descriptors are free.  Rather, give up the spare descriptor, accept
 * the client into it, audit the refusal and close it, then take the
 * spare back: a client is told at once (its connection closes) while
 * open connections and tunnels go on.  Returns 0 when a client was
 * refused (try the next), -1 when nothing more can be done now.
 */
static int
worker_refuse_nofd(struct worker *w, struct worker_accept *a, int err)
{
	static _Thread_local uint64_t	last;
	struct sockaddr_storage		ss;
	socklen_t			slen = sizeof(ss);
	uint64_t			now = util_now_ms();
	char				detail[160];
	int				cfd;

	if (w->spare_fd == -1)
		return -1;
	close(w->spare_fd);
	cfd = accept4(a->fd, (struct sockaddr *)&ss, &slen, SOCK_CLOEXEC);
	if (cfd == -1) {
		/* Another thread took the descriptor, or none waits. */
		w->spare_fd = worker_spare_open();
		return -1;
	}
	if (slen == 0 || ss.ss_family == AF_UNSPEC) {
		ss.ss_family = AF_UNIX;
		slen = sizeof(sa_family_t);
	}
	snprintf(detail, sizeof(detail), "out of file descriptors: new "
	    "connection refused (%s)", strerror(err));
	conn_refuse_accepted(w, a->l, cfd, (struct sockaddr *)&ss, slen,
	    detail);
	w->spare_fd = worker_spare_open();
	if (now - last > 10000) {
		last = now;
		log_warnx("worker %d: out of file descriptors (%s): refusing "
		    "new connections on %s", w->idx, strerror(err),
		    a->l->address);
	}
	return w->spare_fd == -1 ? -1 : 0;
}

static void
worker_accept_cb(evutil_socket_t fd, short what, void *arg)
{
	struct worker_accept	*a = arg;
	struct worker		*w = a->w;
	struct sockaddr_storage	 ss;
	socklen_t		 slen;
	int			 cfd, i, err;

	for (i = 0; i < WORKER_ACCEPT_BATCH; i++) {
		/* The last resort: every sandbox's connections together. */
		if (atomic_load(&worker_conns_open) >=
		    w->cfg->limits.connections) {
			worker_pause(w, "limits.connections reached");
			return;
		}
		slen = sizeof(ss);
		cfd = accept4(fd, (struct sockaddr *)&ss, &slen,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd == -1) {
			switch (errno) {
			case EAGAIN:
				return;
			case EMFILE:
			case ENFILE:
				/* Idle kept upstreams are the first to go;
				 * then new clients are refused. */
				err = errno;
				if (w->uppool.n > 0) {
					uppool_flush(&w->uppool, NULL);
					continue;
				}
				if (worker_refuse_nofd(w, a, err) == 0)
					continue;
				worker_pause(w, strerror(err));
				return;
			case ENOBUFS:
			case ENOMEM:
				uppool_flush(&w->uppool, NULL);
				worker_pause(w, strerror(errno));
				return;
			case EINTR:
			case ECONNABORTED:
			case EPROTO:
			case EPERM:
				continue;
			case EINVAL:
				/* Shut down by a draining worker. */
				event_del(a->ev);
				return;
			default:
				log_warn("worker %d: accept on %s", w->idx,
				    a->l->address);
				return;
			}
		}
		if (!sandbox_conn_take(a->l->sb,
		    worker_sandbox_limit(w, a->l))) {
			worker_refuse_limit(w, a->l, cfd);
			continue;
		}
		if (slen == 0 || ss.ss_family == AF_UNSPEC) {
			ss.ss_family = AF_UNIX;
			slen = sizeof(sa_family_t);
		}
		/* The connection owns the place it took (conn_close). */
		conn_accept(w, a->l, cfd, (struct sockaddr *)&ss, slen);
	}
}

static void
worker_udp_cb(evutil_socket_t fd, short what, void *arg)
{
	struct worker_accept	*a = arg;

	dns_udp_input(a->w, a->l, fd);
}

int
worker_pipe_get(struct worker *w, int p[2])
{
	if (w->npipes > 0) {
		w->npipes--;
		p[0] = w->pipes[w->npipes][0];
		p[1] = w->pipes[w->npipes][1];
		return 0;
	}
	if (pipe2(p, O_NONBLOCK | O_CLOEXEC) == -1)
		return -1;
	/* A bigger pipe moves a bulk transfer in fewer, larger splices.
	 * Pages are only allocated while bytes sit in it; when the user's
	 * pipe quota says no, the default size still works. */
	(void)fcntl(p[1], F_SETPIPE_SZ, WORKER_PIPE_BYTES);
	return 0;
}

void
worker_pipe_put(struct worker *w, int p[2])
{
	if (w->npipes < WORKER_PIPE_POOL_MAX) {
		w->pipes[w->npipes][0] = p[0];
		w->pipes[w->npipes][1] = p[1];
		w->npipes++;
	} else {
		close(p[0]);
		close(p[1]);
	}
	p[0] = p[1] = -1;
}
