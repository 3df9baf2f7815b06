/*
 * conn.c - life cycle of a client connection: accept, protocol sniffing,
 * routing (policy on the name, resolution, policy on every address,
 * connect), deadlines, audit records and the single close path.
 *
 * Not here: the HTTP and SOCKS5 protocol states (http.c, socks5.c) and
 * the byte pumping of allowed tunnels (tunnel.c).
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "policy/policy.h"
#include "proxy/audit.h"
#include "proxy/conn.h"
#include "proxy/io.h"
#include "proxy/listener.h"
#include "proxy/log.h"
#include "proxy/metrics.h"
#include "proxy/dns.h"
#include "proxy/inject.h"
#include "proxy/resolver.h"
#include "proxy/sandbox.h"
#include "proxy/secrets.h"
#include "proxy/tls.h"
#include "proxy/tunnel.h"
#include "proxy/upstream.h"
#include "proxy/uppool.h"
#include "proxy/util.h"
#include "proxy/worker.h"

static void	conn_sniff_event(struct io *io, int ev, void *arg);
static void	conn_timer_cb(evutil_socket_t fd, short what, void *arg);
static void	conn_resolved_cb(const struct resolver_result *res, void *arg);
static void	conn_resolved(struct conn *c, const struct resolver_result *res);
static bool	conn_geo(const struct conn *c, struct policy_geo *g);
static void	conn_connect(struct conn *c);
static int	conn_take_pooled(struct conn *c);
static void	conn_audit_tunnel_close(struct conn *c,
		    enum policy_reason reason);
static void	conn_connected_cb(int fd, size_t idx, int err, void *arg);
static void	conn_fail_local(struct conn *c, int err, const char *what);
static void	conn_upstream_ready(struct conn *c, int ufd);
static bool	conn_inspection_refused(struct conn *c);
static void	conn_sniff_start(struct conn *c);
static void	conn_format_peer(const struct sockaddr *sa, socklen_t salen,
		    char *buf, size_t len);

static const char *const conn_state_names[CONN_ST__COUNT] = {
	[CONN_ST_SNIFF] = "sniff",
	[CONN_ST_HTTP_HEAD] = "http-head",
	[CONN_ST_SOCKS_GREETING] = "socks-greeting",
	[CONN_ST_SOCKS_AUTH] = "socks-auth",
	[CONN_ST_SOCKS_REQUEST] = "socks-request",
	[CONN_ST_RESOLVING] = "resolving",
	[CONN_ST_CONNECTING] = "connecting",
	[CONN_ST_HTTP_EXCHANGE] = "http-exchange",
	[CONN_ST_PEEK] = "peek",
	[CONN_ST_INTERCEPT_PEEK] = "intercept-peek",
	[CONN_ST_TLS_HANDSHAKE] = "tls-handshake",
	[CONN_ST_TUNNEL_PEEK] = "tunnel-peek",
	[CONN_ST_DNS_TCP] = "dns-tcp",
	[CONN_ST_REFUSAL] = "refusal",
	[CONN_ST_FLUSH_CLOSE] = "flush-close",
};

static void
conn_format_peer(const struct sockaddr *sa, socklen_t salen, char *buf,
    size_t len)
{
	char	addr[INET6_ADDRSTRLEN];

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)sa;

		inet_ntop(AF_INET, &sin->sin_addr, addr, sizeof(addr));
		snprintf(buf, len, "%s:%u", addr, ntohs(sin->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)sa;

		inet_ntop(AF_INET6, &sin6->sin6_addr, addr, sizeof(addr));
		snprintf(buf, len, "[%s]:%u", addr, ntohs(sin6->sin6_port));
	} else
		snprintf(buf, len, "unix");
}

/*
 * An http+socks5 listener's connection until its first byte says which
 * of the two it speaks.
 */
static const struct conn_ops conn_sniff_ops = {
	.name = "http+socks5",
	.start = conn_sniff_start,
};

static const struct conn_ops *
conn_ops_for(enum moat_listen_proto proto)
{
	switch (proto) {
	case MOAT_PROTO_HTTP:
		return &http_conn_ops;
	case MOAT_PROTO_SOCKS5:
		return &socks5_conn_ops;
	case MOAT_PROTO_MIXED:
		return &conn_sniff_ops;
	case MOAT_PROTO_TRANSPARENT:
		return &transparent_conn_ops;
	case MOAT_PROTO_DNS:
		return &dns_conn_ops;
	default:
		return NULL;
	}
}

void
conn_accept(struct worker *w, struct listener *l, int fd,
    const struct sockaddr *sa, socklen_t salen)
{
	struct conn	*c;
	int		 one = 1;

	if ((c = calloc(1, sizeof(*c))) == NULL) {
		log_warnx("accept: out of memory, connection dropped");
		close(fd);
		sandbox_conn_put(l->sb);
		return;
	}
	c->id = atomic_fetch_add(&worker_next_id, 1) + 1;
	c->w = w;
	c->l = listener_ref(l);	/* a draining worker lets go of its own */
	c->cfg = policy_config_ref(w->cfg);
	c->cfg_gen = w->cfg_gen;
	c->sb = sandbox_ref(l->sb);
	c->sandbox = l->sandbox;
	conn_format_peer(sa, salen, c->client, sizeof(c->client));
	/* Config listeners pass TCP_NODELAY and keepalive on; held
	 * sockets may not. */
	if (sa->sa_family != AF_UNIX && !l->inherits) {
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
		    sizeof(one));
		(void)util_tcp_keepalive(fd);
	}
	c->timer = evtimer_new(w->base, conn_timer_cb, c);
	c->cio = io_new(w->base, fd, conn_sniff_event, c);
	if (c->timer == NULL || c->cio == NULL) {
		log_warnx("accept: out of memory, connection dropped");
		if (c->cio == NULL)
			close(fd);
		io_free(c->cio);
		if (c->timer != NULL)
			event_free(c->timer);
		policy_config_unref(c->cfg);
		sandbox_conn_put(c->sb);
		sandbox_unref(c->sb);
		listener_unref(c->l);
		free(c);
		return;
	}
	TAILQ_INSERT_TAIL(&w->conns, c, link);
	metrics_conn(c->sb != NULL ? &c->sb->msb : NULL, l->proto, true);
	w->nconns++;
	if (w->nconns > w->peak_conns)
		w->peak_conns = w->nconns;
	atomic_fetch_add(&worker_conns_open, 1);
	log_debug("conn=%llu accepted from %s on %s", (unsigned long long)c->id,
	    c->client, l->address);

	if ((c->ops = conn_ops_for(l->proto)) == NULL) {
		conn_close(c, POLICY_R_INTERNAL, "listener kind not served here");
		return;
	}
	c->ops->start(c);
}


void
conn_refuse_accepted(struct worker *w, struct listener *l, int fd,
    const struct sockaddr *sa, socklen_t salen, const char *detail)
{
	struct audit_rec	r;
	char			client[64];

	(void)w;
	close(fd);
	conn_format_peer(sa, salen, client, sizeof(client));
	audit_rec_init(&r);
	r.event = "open";
	r.id = atomic_fetch_add(&worker_next_id, 1) + 1;
	r.sandbox = l->sandbox;
	/* Nothing was read: the listener's protocol, where it has one. */
	r.proto = l->proto == MOAT_PROTO_SOCKS5 ? "socks5" :
	    l->proto == MOAT_PROTO_TRANSPARENT ? "transparent" :
	    l->proto == MOAT_PROTO_DNS ? "dns" : NULL;
	r.client = client;
	r.verdict = POLICY_DENY;
	r.reason = POLICY_R_INTERNAL;
	r.detail = detail;
	sandbox_count(l->sb, &r);
	audit_emit(&r);
}

static void
conn_sniff_start(struct conn *c)
{
	conn_enter_state(c, CONN_ST_SNIFF);
	conn_set_deadline(c, c->cfg->timeouts.request_head_ms);
	io_read(c->cio, 1);
}

/*
 * http+socks5 listener: the first byte tells the protocols apart.  SOCKS5
 * starts with its version, 5; no HTTP method starts with a control byte.
 */
static void
conn_sniff_event(struct io *io, int ev, void *arg)
{
	struct conn	*c = arg;
	unsigned char	 b;

	if (!(ev & IO_EV_READ)) {
		conn_close(c, POLICY_R_BAD_REQUEST, NULL);
		return;
	}
	if (evbuffer_copyout(io_in(io), &b, 1) != 1)
		return;
	if (b == 0x05) {
		c->ops = &socks5_conn_ops;
		c->ops->start(c);
		return;
	}
	if (b == 0x04) {
		log_info("conn=%llu from %s: SOCKS4 is not supported, use "
		    "SOCKS5", (unsigned long long)c->id, c->client);
		conn_close(c, POLICY_R_BAD_REQUEST, "SOCKS4 is not supported");
		return;
	}
	c->ops = &http_conn_ops;
	c->ops->start(c);
}

void
conn_enter_state(struct conn *c, enum conn_state st)
{
	if (log_debug_enabled() && c->state != st)
		log_debug("conn=%llu %s -> %s", (unsigned long long)c->id,
		    conn_state_names[c->state], conn_state_names[st]);
	c->state = st;
}

void
conn_set_deadline(struct conn *c, unsigned ms)
{
	struct timeval	tv = util_ms_tv(ms);

	if (ms == 0) {
		event_del(c->timer);
		return;
	}
	event_add(c->timer, &tv);
}

void
conn_refresh_config(struct conn *c)
{
	if (c->cfg_gen == c->w->cfg_gen)
		return;
	policy_config_unref(c->cfg);
	c->cfg = policy_config_ref(c->w->cfg);
	c->cfg_gen = c->w->cfg_gen;
}

const struct policy *
conn_policy(const struct conn *c)
{
	return sandbox_policy(c->sb, c->cfg);
}

bool
conn_audit_only(const struct conn *c)
{
	return listener_audit_only(c->l, c->sb, c->cfg);
}

enum policy_verdict
conn_decide(const struct conn *c, const struct policy_target *t,
    struct policy_decision *d)
{
	if (policy_decide(conn_policy(c), t, d) == POLICY_DENY &&
	    policy_reason_waivable(d->reason) && conn_audit_only(c))
		(void)policy_waive(d);
	return d->verdict;
}

bool
conn_waive(struct conn *c, enum policy_reason reason)
{
	if (!policy_reason_waivable(reason) || !conn_audit_only(c))
		return false;
	if (c->dec.would_deny == POLICY_R_ALLOWED)
		c->dec.would_deny = reason;
	return true;
}

void
conn_inject_req(const struct conn *c, struct inject_req *rq)
{
	memset(rq, 0, sizeof(*rq));
	rq->policy = conn_policy(c);
	/* A would-deny of audit mode: no rule allowed it, and no secret
	 * goes into it. */
	rq->bare = c->dec.would_deny != POLICY_R_ALLOWED;
	rq->rule = rq->bare ? NULL : c->dec.rule;
	rq->method = c->http.req.method;
	rq->path = c->http.req.path;
	rq->tls = c->tun.tls_client;
	rq->host = c->target.kind == POLICY_HOST_NAME ? c->target.name : NULL;
	rq->addr = &c->http.up_addr;
	rq->port = c->port;
	rq->sb = c->sb;
	rq->secrets = c->w->secrets;
}

const char *
conn_proto(const struct conn *c)
{
	if (c->tun.inspected && c->kind == CONN_KIND_HTTP)
		return c->tun.tls_client ? "https" : "http";
	switch (c->kind) {
	case CONN_KIND_CONNECT:
		return "connect";
	case CONN_KIND_SOCKS5:
		return "socks5";
	case CONN_KIND_TRANSPARENT:
		return "transparent";
	case CONN_KIND_DNS:
		return "dns";
	default:
		return "http";
	}
}

/* Where c->ip is, when the policy has "geoip"; false if nothing known. */
static bool
conn_geo(const struct conn *c, struct policy_geo *g)
{
	const struct policy	*p = conn_policy(c);
	struct policy_addr	 a;

	if (!policy_geo_enabled(p))
		return false;
	memset(&a, 0, sizeof(a));
	a.family = strchr(c->ip, ':') != NULL ? AF_INET6 : AF_INET;
	if (inet_pton(a.family, c->ip, &a.u) != 1)
		return false;
	policy_geo_lookup(p, &a, g);
	return g->country[0] != '\0' || g->asn != 0;
}

const char *
conn_log_redact(struct conn *c, const char *s, char *buf, size_t len)
{
	struct secrets_view	 sv;
	char			*r;

	if (s == NULL || len == 0)
		return s;
	if (secrets_view(c->sb, c->w->secrets, &sv) == -1) {
		snprintf(buf, len, "[redacted]");
		return buf;
	}
	if (sv.vals == NULL || sv.scan == NULL) {
		secrets_view_done(&sv);
		return s;
	}
	r = secretscan_redact(sv.scan, s, secrets_name_of, sv.vals);
	secrets_view_done(&sv);
	if (r == NULL && errno == 0)
		return s;
	snprintf(buf, len, "%s", r != NULL ? r : "[redacted]");
	free(r);
	return buf;
}

void
conn_audit(struct conn *c, const char *event, enum policy_verdict v,
    enum policy_reason reason, const char *detail)
{
	struct audit_rec	r;
	struct policy_geo	g;
	struct secrets_view	sv;
	struct trace_fields	tf;

	audit_rec_init(&r);
	r.event = event;
	r.id = c->id;
	r.sandbox = c->sandbox;
	r.proto = conn_proto(c);
	r.client = c->client;
	r.host = c->host[0] ? c->host : NULL;
	r.port = c->host[0] ? c->port : -1;
	r.sni = c->sni[0] ? c->sni : NULL;
	r.ip = c->ip[0] ? c->ip : NULL;
	if (r.ip != NULL && conn_geo(c, &g)) {
		r.country = g.country[0] != '\0' ? g.country : NULL;
		r.asn = g.asn != 0 ? (int64_t)g.asn : -1;
	}
	r.verdict = v;
	r.reason = reason;
	r.rule = c->dec.rule_name;
	if (v == POLICY_ALLOW)
		r.would_deny = c->dec.would_deny;
	if (c->kind == CONN_KIND_HTTP && c->http.req.method != NULL) {
		r.method = c->http.req.method;
		r.path = c->http.req.path;
	}
	if (c->kind == CONN_KIND_HTTP)
		r.injected = inject_names(c->http.inj);
	if (c->kind == CONN_KIND_HTTP) {
		r.status = c->http.status;
		r.bytes_up = (int64_t)c->http.bytes_up;
		r.bytes_down = (int64_t)c->http.bytes_down;
		r.duration_ms = (int64_t)(util_now_ms() - c->t_start);
	}
	r.detail = detail;
	/* A request head moatd read (forward, CONNECT, inside a tunnel):
	 * the agent's own trace, and moatd's reply's id. */
	if ((c->kind == CONN_KIND_HTTP || c->kind == CONN_KIND_CONNECT) &&
	    c->http.req.method != NULL) {
		trace_fields(c->http.req.headers, c->http.req.nheaders,
		    c->cfg->audit_request_ids, c->cfg->naudit_request_ids,
		    &tf);
		r.traceparent = tf.traceparent;
		r.request_id_names = tf.names;
		r.request_id_values = tf.values;
		r.nrequest_ids = tf.n;
	}
	if (c->http.moat_id[0] != '\0')
		r.moat_request_id = c->http.moat_id;
	sandbox_count(c->sb, &r);
	secrets_audit_redact(c->sb, c->w->secrets, &sv, &r);
	audit_emit(&r);
	secrets_view_done(&sv);
}

/*
 * Refuses c (true) if the name it targets holds a value or placeholder of
 * a secret not bound to it: the name would go to the resolver and to the
 * upstream (SNI, Host), and in an opaque tunnel nothing else is read.
 */
static bool
conn_name_leaks(struct conn *c)
{
	char	who[POLICY_NAME_MAX + 1], d[POLICY_NAME_MAX + 128];
	int	rc;

	if (c->target.kind != POLICY_HOST_NAME)
		return false;
	rc = secrets_name_leak(c->sb, c->w->secrets, conn_policy(c),
	    c->target.name, c->port, who, sizeof(who));
	if (rc == -1)
		conn_fail(c, 0, POLICY_R_INTERNAL, "out of memory");
	else if (rc == 1) {
		snprintf(d, sizeof(d), "the name carries the secret %s (its "
		    "value or the sandbox's placeholder), which is not bound "
		    "to this host", who);
		metrics_secret_leak(who);
		conn_fail(c, 0, POLICY_R_SECRET_LEAK, d);
	}
	return rc != 0;
}

/*
 * Routing, in the order DESIGN.md invariants 2 and 3 demand: judge the
 * name (a denied name is never resolved), resolve it ourselves, judge
 * every address of that one answer, and dial only addresses that passed.
 */
void
conn_route(struct conn *c)
{
	struct policy_target	t;
	struct policy_decision	named = c->dec;
	struct resolver_result	res;
	char			budget[192];
	int			rc;

	c->m_decide_t0 = metrics_clock();
	memset(&t, 0, sizeof(t));
	if (c->target.kind == POLICY_HOST_NAME)
		t.name = c->target.name;
	else
		t.addr = &c->target.addr;
	t.port = c->port;
	if (c->ops->target != NULL)
		c->ops->target(c, &t);
	c->ip[0] = '\0';
	c->naddrs = 0;
	if (c->target.kind == POLICY_HOST_ADDR)
		policy_addr_format(&c->target.addr, c->ip, sizeof(c->ip));
	if (audit_refuses(c->cfg)) {
		conn_fail(c, 0, POLICY_R_AUDIT_UNAVAILABLE,
		    AUDIT_UNAVAILABLE_DETAIL);
		return;
	}
	if (conn_decide(c, &t, &c->dec) == POLICY_DENY) {
		conn_fail(c, 0, c->dec.reason, NULL);
		return;
	}
	/* Audit mode: a name judged before (in a tunnel to an address)
	 * that the policy would refuse stays a would-deny. */
	if (named.would_deny != POLICY_R_ALLOWED &&
	    c->dec.would_deny == POLICY_R_ALLOWED)
		c->dec = named;
	/* Before it is resolved: the name must not carry a secret out. */
	if (conn_name_leaks(c))
		return;
	if (c->ops->judged != NULL) {
		/* A refusal may have closed c: its clock is read first. */
		uint64_t t0 = c->m_decide_t0;

		if (c->ops->judged(c) == -1) {
			metrics_observe(METRICS_H_DECISION, &t0);
			return;
		}
	}
	/* Not even resolved when the tunnel would be refused anyway. */
	if (conn_inspection_refused(c))
		return;
	if (c->target.kind == POLICY_HOST_ADDR) {
		c->addrs[0] = c->target.addr;
		c->naddrs = 1;
		conn_connect(c);
		return;
	}
	/* Resolving a name the client chose under a wildcard carries it
	 * out, as a DNS query would: the same budget (sandbox.h). */
	if (!sandbox_names_take(c->sb, conn_policy(c), &c->dec,
	    c->target.name, c->cfg->limits.dns_wildcard_names, budget,
	    sizeof(budget))) {
		conn_fail(c, 0, POLICY_R_DNS_BUDGET, budget);
		return;
	}
	conn_enter_state(c, CONN_ST_RESOLVING);
	rc = resolver_lookup(c->w->res, c->target.name, conn_resolved_cb, c,
	    &res, &c->rq);
	if (rc == 1) {
		conn_resolved(c, &res);
		return;
	}
	if (rc == -1) {
		conn_fail(c, 0, POLICY_R_INTERNAL, "out of memory");
		return;
	}
	conn_set_deadline(c, c->cfg->timeouts.dns_ms);
}

static void
conn_resolved_cb(const struct resolver_result *res, void *arg)
{
	struct conn	*c = arg;

	c->rq = NULL;
	conn_resolved(c, res);
}

static void
conn_resolved(struct conn *c, const struct resolver_result *res)
{
	struct policy_target	t;
	struct policy_decision	d, first_deny, first_allow, first_would;
	struct policy_addr	would[RESOLVER_MAX_ADDRS];
	size_t			i, nwould = 0;
	bool			denied = false;

	conn_set_deadline(c, 0);
	if (res->status != RESOLVER_OK) {
		conn_fail(c, 0, POLICY_R_DNS_FAILURE, res->error);
		return;
	}
	memset(&first_deny, 0, sizeof(first_deny));
	memset(&first_allow, 0, sizeof(first_allow));
	memset(&first_would, 0, sizeof(first_would));
	memset(&t, 0, sizeof(t));
	t.name = c->target.name;
	t.port = c->port;
	if (c->ops->target != NULL)
		c->ops->target(c, &t);
	c->naddrs = 0;
	for (i = 0; i < res->naddrs && i < RESOLVER_MAX_ADDRS; i++) {
		t.addr = &res->addrs[i];
		if (conn_decide(c, &t, &d) == POLICY_ALLOW &&
		    d.would_deny != POLICY_R_ALLOWED) {
			/* Audit mode: dialled only if no address passes. */
			if (nwould == 0)
				first_would = d;
			would[nwould++] = res->addrs[i];
		} else if (d.verdict == POLICY_ALLOW) {
			if (c->naddrs == 0)
				first_allow = d;
			c->addrs[c->naddrs++] = res->addrs[i];
		} else if (!denied) {
			first_deny = d;
			denied = true;
			policy_addr_format(&res->addrs[i], c->ip, sizeof(c->ip));
		}
	}
	if (c->naddrs == 0 && nwould > 0) {
		memcpy(c->addrs, would, nwould * sizeof(would[0]));
		c->naddrs = nwould;
		first_allow = first_would;
	}
	if (c->naddrs == 0) {
		/* Every address was refused: say why for the first one. */
		c->dec = first_deny;
		conn_fail(c, 0, first_deny.reason, "the name resolves only to "
		    "addresses the policy denies");
		return;
	}
	c->ip[0] = '\0';
	/* A would-deny of the name (or of its rule's checks) stays one. */
	if (first_allow.would_deny == POLICY_R_ALLOWED)
		first_allow.would_deny = c->dec.would_deny;
	c->dec = first_allow;
	conn_connect(c);
}

void
conn_dial(struct conn *c, const struct policy_addr *addrs, size_t n)
{
	if (n > RESOLVER_MAX_ADDRS)
		n = RESOLVER_MAX_ADDRS;
	if (addrs != c->addrs)
		memcpy(c->addrs, addrs, n * sizeof(*addrs));
	c->naddrs = n;
	conn_connect(c);
}

void
conn_hold_input(struct conn *c)
{
	if (io_in_len(c->cio) > CONN_HOLD_MAX_BYTES)
		io_read(c->cio, 0);
}

int
conn_rate_ok(struct conn *c)
{
	/* A would-deny was allowed by no rule: no rule's bucket pays. */
	if (c->dec.would_deny != POLICY_R_ALLOWED)
		return 1;
	return sandbox_rate_take(c->sb, conn_policy(c), c->dec.rule);
}

bool
conn_quota_ok(struct conn *c, char *why, size_t len)
{
	return quota_admit(&c->quota, c->sb, conn_policy(c), c->dec.rule, why,
	    len);
}

/*
 * A tunnel whose rule must see inside cannot be opened when moatd cannot
 * intercept it (no CA, or the rule says "intercept": false): refused
 * (true), before anything is dialled.
 */
static bool
conn_inspection_refused(struct conn *c)
{
	if (!conn_is_tunnel(c) || !(c->dec.flags & POLICY_F_INSPECT) ||
	    intercept_possible(c))
		return false;
	if (conn_waive(c, POLICY_R_NEEDS_INSPECTION)) {
		/* Audit mode: the tunnel goes through unread. */
		c->dec.flags &= ~(unsigned)POLICY_F_INSPECT;
		return false;
	}
	conn_fail(c, 0, POLICY_R_NEEDS_INSPECTION, intercept_refusal(c));
	return true;
}

/* Every allowed target, resolved or not, is dialled from here. */
static void
conn_connect(struct conn *c)
{
	char	why[256] UTIL_NOINIT;

	if (conn_inspection_refused(c))
		return;
	if (!conn_rate_ok(c) && !conn_waive(c, POLICY_R_RATE)) {
		conn_fail(c, 0, POLICY_R_RATE, "the rule's \"rate\" is used "
		    "up for now");
		return;
	}
	if (!conn_quota_ok(c, why, sizeof(why)) &&
	    !conn_waive(c, POLICY_R_QUOTA_BYTES)) {
		conn_fail(c, 0, POLICY_R_QUOTA_BYTES, why);
		return;
	}
	metrics_observe(METRICS_H_DECISION, &c->m_decide_t0);
	if (conn_take_pooled(c))
		return;
	conn_enter_state(c, CONN_ST_CONNECTING);
	c->uc = upstream_connect_start(c->w->base, c->addrs, c->naddrs,
	    c->port, c->cfg->timeouts.connect_ms, conn_connected_cb, c);
	if (c->uc == NULL)
		conn_fail(c, 0, POLICY_R_INTERNAL, "out of memory");
}

/*
 * Before dialling: an idle upstream connection that an earlier client of
 * the same sandbox left in the worker's pool, to one of the addresses
 * just judged, serves instead.  Forward HTTP takes a plain one; an
 * inspected CONNECT or SOCKS5 tunnel takes a TLS session verified for the
 * tunnel's host under the worker's roots.  Returns 1 if one was taken
 * (the continuation ran, as if just connected), 0 to dial.
 */
static int
conn_take_pooled(struct conn *c)
{
	struct uppool_ent	 k;
	struct tls		*tls;
	struct io		*io;

	if (c->uio != NULL)
		return 0;
	if (c->kind == CONN_KIND_HTTP && !c->tun.inspected)
		tls = NULL;
	else if (conn_is_tunnel(c) && c->kind != CONN_KIND_TRANSPARENT &&
	    (c->dec.flags & POLICY_F_INSPECT) && c->w->tls != NULL)
		tls = c->w->tls;
	else
		return 0;
	memset(&k, 0, sizeof(k));
	k.sb = c->sb;
	k.sandbox = c->sandbox;
	k.tls = tls;
	k.host = c->host;
	k.port = c->port;
	if ((io = uppool_take(&c->w->uppool, &k, c->addrs, c->naddrs)) == NULL)
		return 0;
	snprintf(c->http.up_host, sizeof(c->http.up_host), "%s", c->host);
	c->http.up_port = k.port;
	c->http.up_addr = k.addr;
	memcpy(c->http.up_ip, k.ip, sizeof(c->http.up_ip));
	c->http.up_idle_since = k.idle_since;
	c->uio = io;
	memcpy(c->ip, c->http.up_ip, sizeof(c->ip));
	conn_upstream_ready(c, -1);
	return 1;
}

int
conn_pool_put(struct conn *c)
{
	struct worker		*w = c->w;
	struct uppool_ent	 k;

	if (c->uio == NULL || !c->http.up_clean || w->draining)
		return 0;
	memset(&k, 0, sizeof(k));
	if (io_ssl(c->uio) != NULL) {
		/* HTTPS: only a session verified for the very host (name or
		 * address) the client's tunnel was judged for, under the
		 * worker's current roots. */
		if (!c->tun.inspected || !c->tun.tls_client ||
		    c->tun.tls == NULL || c->tun.tls != w->tls ||
		    strcmp(c->tun.up_tls_host, c->tun.host) != 0 ||
		    c->tun.up_tls_is_addr != (c->tun.target.kind ==
		    POLICY_HOST_ADDR))
			return 0;
		k.tls = c->tun.tls;
		k.host = c->tun.up_tls_host;
	} else {
		if (c->tun.inspected)
			return 0;
		k.host = c->http.up_host;
	}
	k.sb = c->sb;
	k.sandbox = c->sandbox;
	k.port = c->http.up_port;
	k.addr = c->http.up_addr;
	memcpy(k.ip, c->http.up_ip, sizeof(k.ip));
	k.idle_since = c->http.up_idle_since;
	k.idle_ms = c->cfg->timeouts.idle_upstream_ms;
	if (!uppool_put(&w->uppool, &k, c->uio))
		return 0;
	c->uio = NULL;
	c->http.up_clean = false;
	log_debug("conn=%llu upstream %s:%u (%s) kept for the next client",
	    (unsigned long long)c->id, k.host, k.port, k.ip);
	return 1;
}

void
conn_release_upstream(struct conn *c)
{
	if (c->uio == NULL || conn_pool_put(c))
		return;
	io_free(c->uio);
	c->uio = NULL;
}

static void
conn_connected_cb(int fd, size_t idx, int err, void *arg)
{
	struct conn	*c = arg;
	char		 detail[128];

	c->uc = NULL;
	policy_addr_format(&c->addrs[idx < c->naddrs ? idx : 0], c->ip,
	    sizeof(c->ip));
	if (fd == -1 && upstream_err_local(err)) {
		conn_fail_local(c, err, "cannot open a socket to the "
		    "upstream");
		return;
	}
	if (fd == -1) {
		snprintf(detail, sizeof(detail), "%s: %s%s", c->ip,
		    strerror(err), c->naddrs > 1 ? " (and every other "
		    "allowed address failed too)" : "");
		conn_fail(c, 0, err == ETIMEDOUT ? POLICY_R_TIMEOUT :
		    POLICY_R_UPSTREAM_UNREACHABLE, detail);
		return;
	}
	c->http.up_addr = c->addrs[idx < c->naddrs ? idx : 0];
	conn_upstream_ready(c, fd);
}

/*
 * The upstream is there (ufd, or -1: c->uio came from the pool).  A
 * request goes on in its protocol; a tunnel, whichever protocol asked
 * for it, gets its protocol's reply and then is inspected or guarded.
 */
static void
conn_upstream_ready(struct conn *c, int ufd)
{
	/*
	 * A black-holed upstream must not hold both sockets (and an idle
	 * tunnel) until idle_tunnel_ms, or forever: TCP keepalive, at once
	 * for requests and inspected tunnels (a pooled upstream has it
	 * already), after TUNNEL_KEEPALIVE_MS for an opaque tunnel (guard.c,
	 * tunnel.c), which most often has ended by then.
	 */
	if (ufd >= 0 && (!conn_is_tunnel(c) ||
	    (c->dec.flags & POLICY_F_INSPECT)))
		(void)util_tcp_keepalive(ufd);
	if (!conn_is_tunnel(c)) {
		c->ops->exchange(c, ufd);
		return;
	}
	if (c->ops->tunnel_reply != NULL)
		c->ops->tunnel_reply(c);
	if (c->dec.flags & POLICY_F_INSPECT)
		intercept_start(c, ufd);
	else
		guard_start(c, ufd);	/* judges the first bytes */
}

/*
 * moatd ran out of descriptors or memory on the way to the upstream:
 * "internal", with what ran out, and a refusal that says "try later"
 * (HTTP 503, SOCKS5 0x01 general failure), not an unreachable upstream.
 */
static void
conn_fail_local(struct conn *c, int err, const char *what)
{
	char	detail[160];

	snprintf(detail, sizeof(detail), "%s: %s (%s)",
	    err == EMFILE || err == ENFILE ? "out of file descriptors" :
	    "out of memory", what, strerror(err));
	conn_fail(c, 503, POLICY_R_INTERNAL, detail);
}

void
conn_fail(struct conn *c, int code, enum policy_reason reason,
    const char *detail)
{
	metrics_observe(METRICS_H_DECISION, &c->m_decide_t0);
	if (c->ops->denied == NULL) {
		conn_audit(c, conn_event(c), POLICY_DENY, reason, detail);
		conn_close(c, reason, NULL);
		return;
	}
	c->ops->denied(c, code, reason, detail);
}

bool
conn_is_tunnel(const struct conn *c)
{
	return c->kind == CONN_KIND_CONNECT || c->kind == CONN_KIND_SOCKS5 ||
	    c->kind == CONN_KIND_TRANSPARENT;
}

const char *
conn_event(const struct conn *c)
{
	return conn_is_tunnel(c) ? "open" : "request";
}

void
conn_wait_event(struct conn *c, int ev)
{
	if (ev & IO_EV_READ) {
		conn_hold_input(c);	/* early bytes, for the request or tunnel */
		return;
	}
	/* A client that half-closed after its request still gets its answer
	 * (HTTP) or its tunnel, which passes the EOF on. */
	if (ev & IO_EV_EOF) {
		c->http.client_keepalive = false;
		return;
	}
	if (ev & IO_EV_ERROR) {
		conn_audit(c, conn_event(c), POLICY_DENY, POLICY_R_BAD_REQUEST,
		    "client closed before the upstream answered");
		conn_close(c, POLICY_R_BAD_REQUEST, NULL);
	}
}

/*
 * The phase deadline: the states every protocol passes through are
 * handled here, the protocol's own by its table.
 */
static void
conn_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn	*c = arg;

	(void)fd;
	(void)what;
	switch (c->state) {
	case CONN_ST_RESOLVING:
		resolver_cancel(c->rq);
		c->rq = NULL;
		conn_fail(c, 0, POLICY_R_TIMEOUT, "DNS lookup timed out");
		return;
	case CONN_ST_INTERCEPT_PEEK:
	case CONN_ST_TLS_HANDSHAKE:
		intercept_timeout(c);
		return;
	case CONN_ST_TUNNEL_PEEK:
		guard_timeout(c);
		return;
	case CONN_ST_SNIFF:
	case CONN_ST_CONNECTING:
	case CONN_ST_FLUSH_CLOSE:
		break;
	default:
		if (c->ops->timeout != NULL) {
			c->ops->timeout(c);
			return;
		}
		break;
	}
	log_debug("conn=%llu timeout in state %s", (unsigned long long)c->id,
	    conn_state_names[c->state]);
	conn_close(c, POLICY_R_TIMEOUT, NULL);
}

void
conn_to_tunnel(struct conn *c)
{
	struct tunnel_meta	m;
	struct evbuffer		*to_up = io_in(c->cio);
	struct evbuffer		*to_client = io_out(c->cio);
	struct worker		*w = c->w;

	memset(&m, 0, sizeof(m));
	m.id = c->id;
	m.sb = c->sb;
	m.sandbox = c->sandbox;
	m.proto = conn_proto(c);
	m.client = c->client;
	m.host = c->host;
	m.port = c->port;
	m.ip = c->ip;
	m.rule = c->dec.rule_name;
	m.t_start = c->t_start;
	m.lkind = c->l->proto;
	m.keepalive_at = c->tun.keepalive_at;
	m.quota = &c->quota;	/* the tunnel takes it over */
	m.quota_waive = conn_audit_only(c);
	/*
	 * The tunnel takes the buffered bytes and both sockets.  Its events
	 * are added while the ios' are still there and freed after: epoll
	 * then sees one change of each socket's registration (EPOLL_CTL_MOD)
	 * instead of a removal and an addition.  A live tunnel counts as an
	 * open connection, as c did, for the daemon and for its sandbox.
	 */
	if (tunnel_start(w, io_fd(c->cio), io_fd(c->uio), to_up, to_client,
	    &m, c->cfg->timeouts.idle_tunnel_ms) == 0) {
		atomic_fetch_add(&worker_conns_open, 1);
		sandbox_conn_hold(c->sb);
		metrics_conn(c->sb != NULL ? &c->sb->msb : NULL, m.lkind,
		    true);
	}
	(void)io_release(c->uio);
	c->uio = NULL;
	(void)io_release(c->cio);
	c->cio = NULL;
	conn_close(c, POLICY_R_ALLOWED, NULL);
}

void
conn_drain(struct conn *c)
{
	if (c->state == CONN_ST_HTTP_HEAD && io_in_len(c->cio) == 0)
		conn_close(c, POLICY_R_SHUTDOWN, NULL);
}

void
conn_abort(struct conn *c)
{
	if (c->state == CONN_ST_HTTP_EXCHANGE)
		conn_audit(c, "request", POLICY_ALLOW, POLICY_R_SHUTDOWN,
		    "moatd shut down before the response was complete");
	conn_close(c, POLICY_R_SHUTDOWN, NULL);
}

/*
 * The "close" line of an inspected tunnel, like an opaque tunnel's:
 * bytes each way on the client's socket since the tunnel opened (TLS
 * included), its lifetime, how it ended.  Its requests had lines of
 * their own.
 */
static void
conn_audit_tunnel_close(struct conn *c, enum policy_reason reason)
{
	struct audit_rec	r;
	struct secrets_view	sv;
	uint64_t		in = c->tun.in0, out = c->tun.out0;

	if (c->cio != NULL)
		io_counts(c->cio, &in, &out);
	audit_rec_init(&r);
	r.event = "close";
	r.id = c->id;
	r.sandbox = c->sandbox;
	r.proto = c->tun.via == CONN_KIND_SOCKS5 ? "socks5" :
	    c->tun.via == CONN_KIND_TRANSPARENT ? "transparent" : "connect";
	r.client = c->client;
	r.host = c->tun.host;
	r.port = c->tun.port;
	r.ip = c->tun.ip[0] ? c->tun.ip : NULL;
	r.verdict = POLICY_ALLOW;
	r.reason = reason;
	r.rule = c->tun.rule[0] ? c->tun.rule : NULL;
	r.bytes_up = (int64_t)(in - c->tun.in0);
	r.bytes_down = (int64_t)(out - c->tun.out0);
	r.duration_ms = (int64_t)(util_now_ms() - c->tun.t_start);
	r.end = tunnel_end_name(reason == POLICY_R_ALLOWED ? TUNNEL_END_EOF :
	    reason == POLICY_R_TIMEOUT ? TUNNEL_END_IDLE :
	    reason == POLICY_R_SHUTDOWN ? TUNNEL_END_SHUTDOWN :
	    reason == POLICY_R_INTERNAL ? TUNNEL_END_INTERNAL :
	    reason == POLICY_R_QUOTA_BYTES ? TUNNEL_END_QUOTA :
	    TUNNEL_END_RESET);
	r.detail = "inspected";
	secrets_audit_redact(c->sb, c->w->secrets, &sv, &r);
	audit_emit(&r);
	secrets_view_done(&sv);
}

/* Bytes held by unfinished request heads, all workers. */
static atomic_size_t	conn_heads_held;

/*
 * A sandbox may hold the share of limits.partial_heads_bytes that its
 * connections are of limits.connections (a quarter where moatd serves
 * several sandboxes): one that trickles heads on all its connections
 * leaves the rest to the others.
 */
static size_t
conn_heads_share(const struct moat_config *cfg)
{
	const struct moat_limits	*lim = &cfg->limits;

	if (lim->sandbox_connections >= lim->connections)
		return lim->partial_heads_bytes;
	return (size_t)((uint64_t)lim->partial_heads_bytes *
	    lim->sandbox_connections / lim->connections);
}

int
conn_head_hold(struct conn *c, size_t len)
{
	size_t	add, total, own = 0;

	if (len <= c->head_held)
		return 0;
	add = len - c->head_held;
	total = atomic_fetch_add(&conn_heads_held, add) + add;
	if (c->sb != NULL)
		own = atomic_fetch_add(&c->sb->heads_held, add) + add;
	c->head_held = len;
	if (total > c->cfg->limits.partial_heads_bytes ||
	    own > conn_heads_share(c->cfg)) {
		conn_head_release(c);
		return -1;
	}
	return 0;
}

void
conn_head_release(struct conn *c)
{
	if (c->head_held > 0) {
		atomic_fetch_sub(&conn_heads_held, c->head_held);
		if (c->sb != NULL)
			atomic_fetch_sub(&c->sb->heads_held, c->head_held);
		c->head_held = 0;
	}
}

void
conn_close(struct conn *c, enum policy_reason reason, const char *detail)
{
	struct worker	*w = c->w;

	if (detail != NULL)
		log_debug("conn=%llu closed: %s: %s", (unsigned long long)c->id,
		    policy_reason_str(reason), detail);
	if (c->ops != NULL && c->ops->closing != NULL)
		c->ops->closing(c);
	conn_head_release(c);
	quota_release(&c->quota);
	resolver_cancel(c->rq);
	upstream_connect_cancel(c->uc);
	if (c->timer != NULL)
		event_free(c->timer);
	if (c->tun.open)
		conn_audit_tunnel_close(c, reason);
	io_free(c->cio);
	conn_release_upstream(c);	/* kept if idle in between */
	http_free_request(c);
	inject_end(c->http.inj);
	c->http.inj = NULL;
	tls_unref(c->tun.tls);
	policy_config_unref(c->cfg);
	metrics_conn(c->sb != NULL ? &c->sb->msb : NULL, c->l->proto, false);
	listener_unref(c->l);
	TAILQ_REMOVE(&w->conns, c, link);
	w->nconns--;
	worker_conn_closed(w, c->sb);
	sandbox_unref(c->sb);
	free(c);
}
