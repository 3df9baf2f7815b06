/*
 * dns.c - the DNS listener (UDP and TCP) that answers sandboxes.
 *
 * Order for every query: rate limit (per sandbox), strict parse, policy on
 * the name for any port (a denied name gets NXDOMAIN and is never
 * resolved), the budget of new names under wildcards (over it: REFUSED,
 * never resolved), moatd's own resolution (cache or c-ares), policy on every
 * address (special-purpose and metadata addresses are never handed out),
 * answer with what passed, and remember it for the transparent listener.
 *
 * Not here: parsing and building messages (dns_parse.c), resolving
 * (resolver.c), deciding (policy/).
 */
#include "config.h"

#include <sys/socket.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "policy/policy.h"
#include "proxy/audit.h"
#include "proxy/conn.h"
#include "proxy/dns.h"
#include "proxy/dns_parse.h"
#include "proxy/io.h"
#include "proxy/listener.h"
#include "proxy/log.h"
#include "proxy/metrics.h"
#include "proxy/resolver.h"
#include "proxy/sandbox.h"
#include "proxy/secrets.h"
#include "proxy/util.h"
#include "proxy/worker.h"

#define DNS_REPLY_MAX_BYTES	4096	/* answers moat builds are smaller */

struct dns_pending {
	struct worker			*w;
	struct sandbox			*sb;		/* a reference */
	struct listener			*l;		/* a reference (UDP) */
	int				 fd;		/* UDP socket to answer on */
	struct sockaddr_storage		 peer;
	socklen_t			 peerlen;
	struct conn			*c;		/* TCP client, or NULL */
	struct moat_config		*cfg;		/* a reference */
	bool				 audit_only;	/* decisions in audit mode */
	enum policy_reason		 would;		/* audit mode: the reason
							   the policy would
							   refuse it for */
	const char			*would_rule;	/* the rule that
							   decided (borrowed
							   from cfg) */
	struct resolver_query		*rq;
	uint64_t			 id;
	char				 client[64];
	struct dns_query		 q;
	LIST_ENTRY(dns_pending)		 link;
};

static void	dns_conn_closing(struct conn *c);
static void	dns_tcp_start(struct conn *c);
static struct dns_pending *dns_pending_new(struct worker *w,
		    struct sandbox *sb, struct listener *l, int fd,
		    const struct sockaddr *peer, socklen_t peerlen,
		    struct conn *c);
static void	dns_pending_free(struct dns_pending *p);
static void	dns_query_in(struct dns_pending *p, const uint8_t *msg,
		    size_t len);
static void	dns_resolved_cb(const struct resolver_result *res, void *arg);
static void	dns_resolved(struct dns_pending *p,
		    const struct resolver_result *res);
static void	dns_reply(struct dns_pending *p, const uint8_t *buf, size_t n);
static void	dns_error(struct dns_pending *p, uint16_t rcode);
static void	dns_audit(struct dns_pending *p, enum policy_verdict v,
		    enum policy_reason reason, const char *rule,
		    const char *answer, const char *detail);
static bool	dns_name_leaks(struct dns_pending *p, const char *name,
		    const char *rule);
static const char *dns_qtype_str(uint16_t t, char *buf, size_t len);
static void	dns_tcp_event(struct io *io, int ev, void *arg);
static void	dns_tcp_read(struct conn *c);
static void	dns_format_peer(const struct sockaddr *sa, char *buf,
		    size_t len);

static const char *
dns_qtype_str(uint16_t t, char *buf, size_t len)
{
	switch (t) {
	case DNS_TYPE_A:	return "A";
	case DNS_TYPE_AAAA:	return "AAAA";
	case DNS_TYPE_ANY:	return "ANY";
	case DNS_TYPE_CNAME:	return "CNAME";
	case DNS_TYPE_MX:	return "MX";
	case DNS_TYPE_NS:	return "NS";
	case DNS_TYPE_PTR:	return "PTR";
	case DNS_TYPE_SOA:	return "SOA";
	case DNS_TYPE_SRV:	return "SRV";
	case DNS_TYPE_TXT:	return "TXT";
	case DNS_TYPE_SVCB:	return "SVCB";
	case DNS_TYPE_HTTPS:	return "HTTPS";
	default:
		snprintf(buf, len, "TYPE%u", t);
		return buf;
	}
}

static void
dns_format_peer(const struct sockaddr *sa, char *buf, size_t len)
{
	struct policy_addr	a;
	char			t[64];
	unsigned		port;

	if (policy_addr_from_sockaddr(sa, &a) == -1) {
		snprintf(buf, len, "unix");
		return;
	}
	port = ntohs(sa->sa_family == AF_INET ?
	    ((const struct sockaddr_in *)sa)->sin_port :
	    ((const struct sockaddr_in6 *)sa)->sin6_port);
	policy_addr_format(&a, t, sizeof(t));
	snprintf(buf, len, a.family == AF_INET6 ? "[%s]:%u" : "%s:%u", t,
	    port);
}

static struct dns_pending *
dns_pending_new(struct worker *w, struct sandbox *sb, struct listener *l,
    int fd, const struct sockaddr *peer, socklen_t peerlen, struct conn *c)
{
	struct dns_pending	*p;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		return NULL;
	p->w = w;
	p->sb = sandbox_ref(sb);
	p->l = l ? listener_ref(l) : NULL;
	p->fd = fd;
	p->c = c;
	p->cfg = policy_config_ref(w->cfg);
	p->audit_only = listener_audit_only(l != NULL ? l : c != NULL ? c->l :
	    NULL, sb, p->cfg);
	p->id = atomic_fetch_add(&worker_next_id, 1) + 1;
	if (peer != NULL && peerlen <= sizeof(p->peer)) {
		memcpy(&p->peer, peer, peerlen);
		p->peerlen = peerlen;
		dns_format_peer(peer, p->client, sizeof(p->client));
	} else if (c != NULL)
		snprintf(p->client, sizeof(p->client), "%s", c->client);
	LIST_INSERT_HEAD(&w->dnsq, p, link);
	return p;
}

static void
dns_pending_free(struct dns_pending *p)
{
	struct worker	*w = p->w;

	LIST_REMOVE(p, link);
	resolver_cancel(p->rq);
	listener_unref(p->l);
	sandbox_unref(p->sb);
	policy_config_unref(p->cfg);
	free(p);
	worker_dns_done(w);
}

void
dns_abort_all(struct worker *w, struct sandbox *sb)
{
	struct dns_pending	*p, *pn;

	for (p = LIST_FIRST(&w->dnsq); p != NULL; p = pn) {
		pn = LIST_NEXT(p, link);
		if (sb == NULL || p->sb == sb)
			dns_pending_free(p);
	}
}

/* A DNS-over-TCP connection is closing: its pending answers are
 * dropped. */
static void
dns_conn_closing(struct conn *c)
{
	struct dns_pending	*p;

	LIST_FOREACH(p, &c->w->dnsq, link)
		if (p->c == c)
			p->c = NULL;
}

void
dns_udp_input(struct worker *w, struct listener *l, int fd)
{
	struct sockaddr_storage	 peer;
	socklen_t		 plen;
	uint8_t			 buf[DNS_QUERY_MAX_BYTES + 1];
	struct dns_pending	*p;
	ssize_t			 n;
	int			 i;

	for (i = 0; i < DNS_UDP_BATCH; i++) {
		plen = sizeof(peer);
		n = recvfrom(fd, buf, sizeof(buf), MSG_TRUNC,
		    (struct sockaddr *)&peer, &plen);
		if (n == -1) {
			if (errno != EAGAIN && errno != EINTR)
				log_warn("dns: recvfrom on %s", l->address);
			return;
		}
		p = dns_pending_new(w, l->sb, l, fd, (struct sockaddr *)&peer,
		    plen, NULL);
		if (p == NULL) {
			log_warnx("dns: out of memory, query dropped");
			continue;
		}
		/* MSG_TRUNC: n is the datagram's real size. */
		dns_query_in(p, buf, (size_t)n > sizeof(buf) ? sizeof(buf) :
		    (size_t)n);
	}
}

/*
 * Answers one query message.  Frees p, now or when the resolver answers.
 */
static void
dns_query_in(struct dns_pending *p, const uint8_t *msg, size_t len)
{
	struct dns_query	*q = &p->q;
	struct policy_host	 host;
	struct policy_target	 t;
	struct policy_decision	 d;
	struct resolver_result	 res;
	const char		*err = NULL;
	uint8_t			 out[DNS_REPLY_MAX_BYTES];
	uint64_t		 refused;
	char			 why[192];
	int			 n, rc;

	if (!sandbox_dns_take(p->sb, &refused)) {
		memset(q, 0, sizeof(*q));
		if (dns_parse_query(msg, len, q, &err) == DNS_OK)
			dns_error(p, DNS_RCODE_REFUSED);
		dns_pending_free(p);
		return;
	}
	if (refused > 0) {
		char msgb[96];

		snprintf(msgb, sizeof(msgb), "%llu queries refused over the "
		    "rate limit of %d/s", (unsigned long long)refused,
		    SANDBOX_DNS_RATE);
		dns_audit(p, POLICY_DENY, POLICY_R_RATE, NULL, NULL, msgb);
	}
	if (len > DNS_QUERY_MAX_BYTES ||
	    dns_parse_query(msg, len, q, &err) != DNS_OK) {
		if ((n = dns_build_formerr(msg, len, out, sizeof(out))) > 0)
			dns_reply(p, out, (size_t)n);
		dns_audit(p, POLICY_DENY, POLICY_R_BAD_REQUEST, NULL, NULL,
		    len > DNS_QUERY_MAX_BYTES ? "query too large" : err);
		dns_pending_free(p);
		return;
	}
	if (p->c != NULL)
		q->transport = DNS_TRANSPORT_TCP;
	if (q->rcode != DNS_RCODE_NOERROR) {
		dns_error(p, q->rcode);
		dns_audit(p, POLICY_DENY, POLICY_R_BAD_REQUEST, NULL, NULL, err);
		dns_pending_free(p);
		return;
	}
	if (policy_host_normalise(q->name, q->name_len, &host, &err) == -1 ||
	    host.kind != POLICY_HOST_NAME) {
		dns_error(p, DNS_RCODE_NXDOMAIN);
		dns_audit(p, POLICY_DENY, POLICY_R_DNS_DENIED, NULL, NULL,
		    err ? err : "an address is not a name");
		dns_pending_free(p);
		return;
	}
	if (audit_refuses(p->cfg)) {
		dns_error(p, DNS_RCODE_REFUSED);
		dns_audit(p, POLICY_DENY, POLICY_R_AUDIT_UNAVAILABLE, NULL,
		    NULL, AUDIT_UNAVAILABLE_DETAIL);
		dns_pending_free(p);
		return;
	}
	memset(&t, 0, sizeof(t));
	t.name = host.name;
	t.port = 0;		/* any port: see policy_decide() */
	/* Audit mode: a name only the rules refuse is answered (budgeted
	 * below as a name under a wildcard), its addresses judged. */
	if (policy_decide(sandbox_policy(p->sb, p->cfg), &t, &d) ==
	    POLICY_DENY && (!p->audit_only || !policy_waive(&d))) {
		/* Never resolved: nothing of the name leaves moatd. */
		dns_error(p, DNS_RCODE_NXDOMAIN);
		dns_audit(p, POLICY_DENY, POLICY_R_DNS_DENIED, d.rule_name,
		    NULL, policy_reason_str(d.reason));
		dns_pending_free(p);
		return;
	}
	p->would = d.would_deny;
	p->would_rule = d.rule_name;
	if (dns_name_leaks(p, host.name, d.rule_name))
		return;
	if (q->qtype != DNS_TYPE_A && q->qtype != DNS_TYPE_AAAA &&
	    q->qtype != DNS_TYPE_ANY) {
		/* MX, TXT, HTTPS, ...: nothing to dial, nothing to say. */
		dns_error(p, DNS_RCODE_NOERROR);
		dns_audit(p, POLICY_ALLOW, POLICY_R_ALLOWED, d.rule_name, NULL,
		    "no records of this type are given out");
		dns_pending_free(p);
		return;
	}
	/* A name the client chose under a wildcard: resolving it carries
	 * its bytes out, so only so many new ones a minute. */
	if (!sandbox_names_take(p->sb, sandbox_policy(p->sb, p->cfg), &d,
	    host.name, p->cfg->limits.dns_wildcard_names, why, sizeof(why))) {
		dns_error(p, DNS_RCODE_REFUSED);
		dns_audit(p, POLICY_DENY, POLICY_R_DNS_BUDGET, d.rule_name,
		    NULL, why);
		dns_pending_free(p);
		return;
	}
	rc = resolver_lookup(p->w->res, host.name, dns_resolved_cb, p, &res,
	    &p->rq);
	if (rc == 1)
		dns_resolved(p, &res);
	else if (rc == -1) {
		dns_error(p, DNS_RCODE_SERVFAIL);
		dns_audit(p, POLICY_DENY, POLICY_R_INTERNAL, NULL, NULL,
		    "out of memory");
		dns_pending_free(p);
	}
}

static void
dns_resolved_cb(const struct resolver_result *res, void *arg)
{
	struct dns_pending	*p = arg;

	p->rq = NULL;
	dns_resolved(p, res);
}

/*
 * Hands out only the addresses moatd would dial for this sandbox, and
 * remembers them so a redirected connection to one is attributed to the
 * name.
 */
static void
dns_resolved(struct dns_pending *p, const struct resolver_result *res)
{
	struct dns_query	*q = &p->q;
	struct policy_host	 host;
	struct policy_target	 t;
	struct policy_decision	 d, first_deny, first_allow, first_would;
	struct policy_addr	 keep[RESOLVER_MAX_ADDRS];
	uint8_t			 out[DNS_REPLY_MAX_BYTES];
	char			 answer[RESOLVER_MAX_ADDRS * 48], a[64];
	char			 pass[RESOLVER_MAX_ADDRS];
	size_t			 i, nkeep = 0, o = 0, nall = 0, nwould = 0;
	uint32_t		 ttl;
	int			 n;
	bool			 denied = false;

	memset(&first_deny, 0, sizeof(first_deny));
	memset(&first_allow, 0, sizeof(first_allow));
	first_deny.reason = POLICY_R_NO_RULE;

	if (res->status != RESOLVER_OK) {
		dns_error(p, res->status == RESOLVER_NXDOMAIN ?
		    DNS_RCODE_NXDOMAIN : DNS_RCODE_SERVFAIL);
		dns_audit(p, POLICY_DENY, POLICY_R_DNS_FAILURE, NULL, NULL,
		    res->error);
		dns_pending_free(p);
		return;
	}
	(void)policy_host_normalise(q->name, q->name_len, &host, NULL);
	memset(&t, 0, sizeof(t));
	t.name = host.name;
	t.port = 0;
	ttl = res->ttl < DNS_ANSWER_TTL_MAX_S ? res->ttl : DNS_ANSWER_TTL_MAX_S;
	if (ttl == 0)
		ttl = 1;
	answer[0] = '\0';
	memset(&first_would, 0, sizeof(first_would));
	/* Audit mode: the addresses only the rules refuse are handed out
	 * when none passes (each built-in deny set's stays refused). */
	for (i = 0; i < res->naddrs && i < RESOLVER_MAX_ADDRS; i++) {
		t.addr = &res->addrs[i];
		pass[i] = policy_decide(sandbox_policy(p->sb, p->cfg), &t,
		    &d) == POLICY_ALLOW;
		if (!pass[i] && p->audit_only && policy_waive(&d)) {
			if (nwould++ == 0)
				first_would = d;
			pass[i] = 2;
		} else if (!pass[i] && !denied) {
			first_deny = d;
			denied = true;
		} else if (pass[i] && nall++ == 0)
			first_allow = d;
	}
	if (nall == 0 && nwould > 0) {
		nall = nwould;
		first_allow = first_would;
	}
	for (i = 0; i < res->naddrs && i < RESOLVER_MAX_ADDRS; i++) {
		if (pass[i] == 0 || (pass[i] == 2 && first_allow.would_deny ==
		    POLICY_R_ALLOWED))
			continue;
		sandbox_attr_add(p->sb, &res->addrs[i], host.name, ttl);
		if ((q->qtype == DNS_TYPE_A &&
		    res->addrs[i].family != AF_INET) ||
		    (q->qtype == DNS_TYPE_AAAA &&
		    res->addrs[i].family != AF_INET6))
			continue;
		keep[nkeep++] = res->addrs[i];
		policy_addr_format(&res->addrs[i], a, sizeof(a));
		o += (size_t)snprintf(answer + o, sizeof(answer) - o, "%s%s",
		    o ? "," : "", a);
		if (o >= sizeof(answer))
			o = sizeof(answer) - 1;
	}
	if (nall == 0) {
		/* Every address is internal or denied: a rebinding attempt,
		 * or a name that points inside.  Say it does not exist. */
		dns_error(p, DNS_RCODE_NXDOMAIN);
		dns_audit(p, POLICY_DENY, POLICY_R_DNS_DENIED,
		    first_deny.rule_name, NULL,
		    policy_reason_str(first_deny.reason));
		dns_pending_free(p);
		return;
	}
	n = dns_build_answer(q, keep, nkeep, ttl, out, sizeof(out));
	if (n > 0)
		dns_reply(p, out, (size_t)n);
	/* The name's would-deny, or else the addresses'. */
	if (p->would == POLICY_R_ALLOWED) {
		p->would = first_allow.would_deny;
		p->would_rule = first_allow.rule_name;
	}
	dns_audit(p, POLICY_ALLOW, POLICY_R_ALLOWED, p->would_rule,
	    nkeep ? answer : NULL, nkeep ? NULL :
	    "no address of this family (NODATA)");
	dns_pending_free(p);
}

static void
dns_error(struct dns_pending *p, uint16_t rcode)
{
	uint8_t	out[DNS_REPLY_MAX_BYTES];
	int	n;

	n = dns_build_error(&p->q, rcode, out, sizeof(out));
	if (n > 0)
		dns_reply(p, out, (size_t)n);
}

static void
dns_reply(struct dns_pending *p, const uint8_t *buf, size_t n)
{
	struct conn	*c = p->c;
	uint8_t		 len[2];

	if (c == NULL && p->l == NULL)
		return;		/* its TCP client went away */
	/* RCODE and ANCOUNT of the header (RFC 1035 4.1.1). */
	metrics_dns_reply(&p->sb->msb, n >= 4 ? buf[3] & 0x0f : 15,
	    n >= 8 ? (unsigned)(buf[6] << 8 | buf[7]) : 0);
	if (c == NULL) {
		if (sendto(p->fd, buf, n, MSG_DONTWAIT,
		    (struct sockaddr *)&p->peer, p->peerlen) == -1 &&
		    errno != EAGAIN)
			log_debug("dns: sendto %s: %s", p->client,
			    strerror(errno));
		return;
	}
	len[0] = (uint8_t)(n >> 8);
	len[1] = (uint8_t)n;
	evbuffer_add(io_out(c->cio), len, 2);
	evbuffer_add(io_out(c->cio), buf, n);
	if (c->dns.pending > 0)
		c->dns.pending--;
	/* A write error surfaces as an io event that closes c; never close
	 * it here, from inside dns_tcp_read(). */
	if (io_flush(c->cio) == -1)
		return;
	if (c->state == CONN_ST_DNS_TCP &&
	    c->dns.pending < DNS_TCP_PENDING_MAX)
		io_read(c->cio, 1);
}

/*
 * Refuses the query (true) if its name carries a secret the policy does
 * not bind to it: resolving would send it to the resolver.
 */
static bool
dns_name_leaks(struct dns_pending *p, const char *name, const char *rule)
{
	char	who[POLICY_NAME_MAX + 1], d[POLICY_NAME_MAX + 64];
	int	rc;

	rc = secrets_name_leak(p->sb, p->w->secrets, sandbox_policy(p->sb,
	    p->cfg), name, 0, who, sizeof(who));
	if (rc == 0)
		return false;
	if (rc == 1) {
		snprintf(d, sizeof(d), "secret-leak: the name carries the "
		    "secret %s", who);
		metrics_secret_leak(who);
	}
	dns_error(p, rc == 1 ? DNS_RCODE_NXDOMAIN : DNS_RCODE_SERVFAIL);
	dns_audit(p, POLICY_DENY, rc == 1 ? POLICY_R_DNS_DENIED :
	    POLICY_R_INTERNAL, rule, NULL, rc == 1 ? d : "out of memory");
	dns_pending_free(p);
	return true;
}

static void
dns_audit(struct dns_pending *p, enum policy_verdict v,
    enum policy_reason reason, const char *rule, const char *answer,
    const char *detail)
{
	struct audit_rec	r;
	struct secrets_view	sv;
	char			qt[16];

	audit_rec_init(&r);
	r.event = "dns";
	r.id = p->id;
	r.sandbox = p->sb->name;
	r.proto = "dns";
	r.client = p->client[0] ? p->client : NULL;
	r.host = p->q.has_question ? p->q.name : NULL;
	r.verdict = v;
	r.reason = reason;
	r.rule = rule;
	r.qtype = p->q.has_question ? dns_qtype_str(p->q.qtype, qt,
	    sizeof(qt)) : NULL;
	r.answer = answer;
	r.detail = detail;
	/* A would-deny is written as the refusal would have been:
	 * dns-denied, the policy's reason in detail. */
	if (v == POLICY_ALLOW && p->would != POLICY_R_ALLOWED) {
		r.would_deny = POLICY_R_DNS_DENIED;
		if (detail == NULL)
			r.detail = policy_reason_str(p->would);
	}
	sandbox_count(p->sb, &r);
	secrets_audit_redact(p->sb, p->w->secrets, &sv, &r);
	audit_emit(&r);
	secrets_view_done(&sv);
}

/* ------------------------------------------------------------------ */
/* DNS over TCP                                                         */
/* ------------------------------------------------------------------ */

/* Serves DNS over TCP on an accepted connection. */
static void
dns_tcp_start(struct conn *c)
{
	c->kind = CONN_KIND_DNS;
	io_set_cb(c->cio, dns_tcp_event, c);
	conn_enter_state(c, CONN_ST_DNS_TCP);
	conn_set_deadline(c, c->cfg->timeouts.idle_client_ms);
	io_read(c->cio, 1);
}

static void
dns_tcp_event(struct io *io, int ev, void *arg)
{
	struct conn	*c = arg;

	if (ev & IO_EV_READ) {
		dns_tcp_read(c);
		return;
	}
	if (ev & IO_EV_DRAINED)
		return;
	conn_close(c, POLICY_R_ALLOWED, NULL);
}

static void
dns_tcp_read(struct conn *c)
{
	struct evbuffer		*in = io_in(c->cio);
	struct dns_pending	*p;
	const char		*err = NULL;
	uint8_t			*b, msg[DNS_QUERY_MAX_BYTES];
	size_t			 len;
	int			 n;
	bool			 partial = false;

	while (c->dns.pending < DNS_TCP_PENDING_MAX) {
		len = evbuffer_get_length(in);
		if (len > DNS_TCP_PREFIX_BYTES + DNS_QUERY_MAX_BYTES)
			len = DNS_TCP_PREFIX_BYTES + DNS_QUERY_MAX_BYTES;
		if (len == 0 || (b = evbuffer_pullup(in, len)) == NULL)
			break;
		n = dns_tcp_frame_len(b, len, &err);
		if (n == DNS_NEED_MORE) {
			partial = true;
			break;
		}
		if (n == DNS_INVALID) {
			log_debug("conn=%llu dns-tcp: %s",
			    (unsigned long long)c->id, err);
			conn_close(c, POLICY_R_BAD_REQUEST, err);
			return;
		}
		p = dns_pending_new(c->w, c->sb, NULL, -1, NULL, 0, c);
		if (p == NULL) {
			conn_close(c, POLICY_R_INTERNAL, "out of memory");
			return;
		}
		c->dns.pending++;
		c->dns.partial = false;
		conn_set_deadline(c, c->cfg->timeouts.idle_client_ms);
		memcpy(msg, b + DNS_TCP_PREFIX_BYTES, (size_t)n);
		evbuffer_drain(in, DNS_TCP_PREFIX_BYTES + (size_t)n);
		/* May answer (and write to c) at once; never frees c. */
		dns_query_in(p, msg, (size_t)n);
	}
	/*
	 * Between queries a connection may idle for idle_client_ms; a query
	 * once begun must be whole within request_head_ms, counted from its
	 * first byte (a client dripping bytes does not restart it).
	 */
	if (partial && !c->dns.partial) {
		c->dns.partial = true;
		conn_set_deadline(c, c->cfg->timeouts.request_head_ms);
	}
	if (c->dns.pending >= DNS_TCP_PENDING_MAX)
		io_read(c->cio, 0);
}

/* request_head_ms passed with part of a query in: audited, then closed;
 * an idle DNS-over-TCP connection just closes. */
static void
dns_tcp_timeout(struct conn *c)
{
	if (c->state == CONN_ST_DNS_TCP && io_in_len(c->cio) > 0)
		conn_audit(c, "dns", POLICY_DENY, POLICY_R_TIMEOUT, "a query "
		    "over TCP did not arrive whole in time "
		    "(timeouts.request_head_ms)");
	conn_close(c, POLICY_R_TIMEOUT, NULL);
}

const struct conn_ops dns_conn_ops = {
	.name = "dns",
	.start = dns_tcp_start,
	.timeout = dns_tcp_timeout,
	.closing = dns_conn_closing,
};
