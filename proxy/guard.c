/*
 * guard.c - the first bytes of an opaque tunnel, judged before it is
 * spliced.
 *
 * Host and port were allowed, but a tunnel carries whatever the sandbox
 * sends: a TLS ClientHello for another name, which a CDN in front of the
 * allowed host routes to that other site (domain fronting), or a protocol
 * the rule did not mean to open.  So before splicing, moatd reads the
 * first bytes of each side (one read, usually: a ClientHello arrives in
 * one or two segments), without terminating anything:
 *  - a ClientHello's server name must be the tunnel's host (a name
 *    target), or absent; in a tunnel to an address, a name is judged as
 *    in an inspected tunnel (a deny rule for it wins) - else sni-mismatch
 *    (or the deny rule's reason), audited with both names;
 *  - the protocol (tls, http, ssh, or anything) must be one the allowing
 *    rule's "protocols" lists (proto_peek.c) - else protocol.
 * A server-first protocol (ssh) is judged on the server's first bytes,
 * which reach the client only once judged.  Nothing is spliced unjudged:
 * a tunnel where neither side speaks waits, up to idle_tunnel_ms as any
 * idle tunnel; once a side has spoken, what is needed to judge must come
 * within request_head_ms (else timeout).
 *
 * The bytes read go on first when the tunnel starts (conn_to_tunnel).
 *
 * Not here: classification and the protocol rules (proto_peek.c), the
 * splice (tunnel.c).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "policy/policy.h"
#include "proxy/conn.h"
#include "proxy/io.h"
#include "proxy/log.h"
#include "proxy/proto_peek.h"
#include "proxy/tunnel.h"
#include "proxy/util.h"
#include "proxy/worker.h"

_Static_assert(PEEK_ALLOW_TLS == POLICY_PROTO_TLS &&
    PEEK_ALLOW_HTTP == POLICY_PROTO_HTTP &&
    PEEK_ALLOW_SSH == POLICY_PROTO_SSH, "one set of protocol bits");

/* The server's first bytes that tell its protocol: "SSH-" is enough. */
#define GUARD_SERVER_PEEK_BYTES	64

static void	guard_client_event(struct io *io, int ev, void *arg);
static void	guard_upstream_event(struct io *io, int ev, void *arg);
static void	guard_check(struct conn *c);
static int	guard_sni(struct conn *c, const struct tls_client_hello *h);
static void	guard_pass(struct conn *c);
static void	guard_deadline(struct conn *c, unsigned ms);
static void	guard_refuse(struct conn *c, enum policy_reason reason,
		    const char *detail);

void
guard_start(struct conn *c, int ufd)
{
	/* A CONNECT after forward requests on a kept-alive connection: the
	 * idle upstream of those goes to the pool (or away), and the
	 * tunnel's upstream, held here, must never be pooled. */
	conn_release_upstream(c);
	c->http.up_clean = false;
	if ((c->uio = io_new(c->w->base, ufd, guard_upstream_event, c)) ==
	    NULL) {
		close(ufd);
		conn_audit(c, "open", POLICY_DENY, POLICY_R_INTERNAL,
		    "out of memory");
		conn_close(c, POLICY_R_INTERNAL, NULL);
		return;
	}
	io_set_cb(c->cio, guard_client_event, c);
	conn_enter_state(c, CONN_ST_TUNNEL_PEEK);
	/* The reply that opens the tunnel goes now: the client speaks
	 * only after it. */
	if (io_flush(c->cio) == -1) {
		guard_refuse(c, POLICY_R_BAD_REQUEST, "the client left before "
		    "the tunnel opened");
		return;
	}
	/* A tunnel where nobody speaks is an idle tunnel: it lasts what
	 * one would.  Once a side speaks, the rest of its first bytes must
	 * come within request_head_ms.  The upstream's keepalive goes on
	 * after TUNNEL_KEEPALIVE_MS, here or in the tunnel. */
	c->tun.keepalive_at = util_now_ms() + TUNNEL_KEEPALIVE_MS;
	guard_deadline(c, c->cfg->timeouts.idle_tunnel_ms);
	io_read(c->cio, 1);
	io_read(c->uio, 1);
	guard_check(c);		/* early data may be buffered already */
}

static void
guard_client_event(struct io *io, int ev, void *arg)
{
	struct conn	*c = arg;

	(void)io;
	if (ev & IO_EV_DRAINED)
		return;
	if (ev & IO_EV_ERROR) {
		guard_refuse(c, POLICY_R_BAD_REQUEST, "the client closed "
		    "before its first bytes were judged");
		return;
	}
	guard_check(c);
}

static void
guard_upstream_event(struct io *io, int ev, void *arg)
{
	struct conn	*c = arg;

	(void)io;
	if (ev & IO_EV_DRAINED)
		return;
	if (ev & IO_EV_ERROR) {
		guard_refuse(c, POLICY_R_UPSTREAM_UNREACHABLE, "the upstream "
		    "closed before the tunnel's first bytes were judged");
		return;
	}
	guard_check(c);
}

/* Judges what both sides sent so far; waits, passes or refuses. */
static void
guard_check(struct conn *c)
{
	struct peek_result	 cli, srv;
	struct evbuffer		*in = io_in(c->cio), *up = io_in(c->uio);
	enum peek_proto		 seen;
	enum peek_verdict	 v;
	size_t			 clen, slen;
	const uint8_t		*p;
	unsigned		 allowed;
	char			 e[160], pr[32];

	clen = evbuffer_get_length(in);
	if (clen > TLS_HELLO_MAX_BYTES + 1)
		clen = TLS_HELLO_MAX_BYTES + 1;
	slen = evbuffer_get_length(up);
	if (slen > GUARD_SERVER_PEEK_BYTES)
		slen = GUARD_SERVER_PEEK_BYTES;
	p = NULL;
	if (clen > 0 && (p = evbuffer_pullup(in, clen)) == NULL) {
		guard_refuse(c, POLICY_R_INTERNAL, "out of memory");
		return;
	}
	peek_classify(p, clen, false, &cli);
	p = NULL;
	if (slen > 0 && (p = evbuffer_pullup(up, slen)) == NULL) {
		guard_refuse(c, POLICY_R_INTERNAL, "out of memory");
		return;
	}
	peek_classify(p, slen, true, &srv);
	if (cli.proto == PEEK_P_TLS && guard_sni(c, &cli.hello) == -1)
		return;
	allowed = policy_rule_protocols(c->dec.rule);
	v = peek_judge(allowed, cli.proto, srv.proto, &seen);
	if (v == PEEK_PASS) {
		guard_pass(c);
		return;
	}
	if (v == PEEK_REFUSE) {
		if (seen == PEEK_P_BAD_TLS) {
			guard_refuse(c, POLICY_R_BAD_REQUEST, cli.err);
			return;
		}
		if (conn_waive(c, POLICY_R_PROTOCOL)) {
			guard_pass(c);	/* audit mode */
			return;
		}
		snprintf(e, sizeof(e), "the tunnel carries %s; rule %s allows "
		    "only %s", peek_proto_name(seen), c->dec.rule_name ?
		    c->dec.rule_name : "-", policy_protocols_format(allowed,
		    pr, sizeof(pr)));
		guard_refuse(c, POLICY_R_PROTOCOL, e);
		return;
	}
	/* Wait, unless a side is gone: then nothing more will come. */
	if (io_eof(c->cio) || io_eof(c->uio)) {
		if (allowed == 0 && cli.proto == PEEK_P_NONE &&
		    srv.proto == PEEK_P_NONE) {
			guard_pass(c);	/* the tunnel passes the EOF on */
			return;
		}
		guard_refuse(c, POLICY_R_BAD_REQUEST, io_eof(c->cio) ?
		    "the client closed before its first bytes could be judged" :
		    "the upstream closed before the tunnel's first bytes "
		    "could be judged");
		return;
	}
	if (!c->tun.spoken && (cli.proto != PEEK_P_NONE ||
	    srv.proto != PEEK_P_NONE)) {
		c->tun.spoken = true;
		guard_deadline(c, c->cfg->timeouts.request_head_ms);
	}
	/* Bounded: a ClientHello is whole by then, or refused. */
	if (evbuffer_get_length(in) > TLS_HELLO_MAX_BYTES + 1)
		io_read(c->cio, 0);
	if (evbuffer_get_length(up) > GUARD_SERVER_PEEK_BYTES)
		io_read(c->uio, 0);
}

/*
 * The ClientHello's server name against the tunnel's host.  Returns 0, or
 * -1 after refusing the tunnel.
 */
static int
guard_sni(struct conn *c, const struct tls_client_hello *h)
{
	struct policy_host	 sni;
	struct policy_decision	 d;
	const char		*err = NULL;
	char			 e[POLICY_NAME_MAX * 2 + 96];

	if (!h->has_sni)
		return 0;
	if (h->sni_is_ip || policy_host_normalise(h->sni, h->sni_len, &sni,
	    &err) == -1 || sni.kind != POLICY_HOST_NAME) {
		log_escape(h->sni, h->sni_len, c->sni, sizeof(c->sni));
		snprintf(e, sizeof(e), "the TLS server name is no host name%s%s",
		    err ? ": " : "", err ? err : "");
		guard_refuse(c, POLICY_R_SNI_MISMATCH, e);
		return -1;
	}
	if (c->target.kind == POLICY_HOST_NAME) {
		if (strcmp(sni.name, c->target.name) == 0)
			return 0;
		/* A tunnel judged for A carries no TLS for B. */
		snprintf(c->sni, sizeof(c->sni), "%s", sni.name);
		snprintf(e, sizeof(e), "the TLS server name %s is not the "
		    "tunnel's host %s", sni.name, c->host);
		guard_refuse(c, POLICY_R_SNI_MISMATCH, e);
		return -1;
	}
	/* A tunnel to an address an IP rule allows: the name is judged too,
	 * and a deny rule for it wins, as in an inspected tunnel. */
	snprintf(c->sni, sizeof(c->sni), "%s", sni.name);
	c->tun.target = c->target;
	c->tun.port = c->port;
	if (intercept_name_denied(c, sni.name, NULL, NULL, &d) == 0)
		return 0;
	c->dec = d;
	if (conn_audit_only(c) && policy_waive(&c->dec))
		return 0;
	snprintf(e, sizeof(e), "the TLS server name %s is denied, though the "
	    "tunnel's address %s is allowed", sni.name, c->host);
	guard_refuse(c, d.reason, e);
	return -1;
}

/* Allowed: the bytes read go first, then the tunnel. */
static void
guard_pass(struct conn *c)
{
	conn_set_deadline(c, 0);
	conn_audit(c, "open", POLICY_ALLOW, POLICY_R_ALLOWED, NULL);
	evbuffer_add_buffer(io_out(c->cio), io_in(c->uio));
	conn_to_tunnel(c);
}

static void
guard_refuse(struct conn *c, enum policy_reason reason, const char *detail)
{
	conn_set_deadline(c, 0);
	conn_audit(c, "open", POLICY_DENY, reason, detail);
	log_debug("conn=%llu tunnel to %s:%u refused: %s: %s",
	    (unsigned long long)c->id, c->host, c->port,
	    policy_reason_str(reason), detail ? detail : "-");
	io_free(c->uio);	/* nothing the client sent went upstream */
	c->uio = NULL;
	conn_close(c, reason, NULL);
}

/* The deadline ms from now; the timer fires first to turn keepalive on. */
static void
guard_deadline(struct conn *c, unsigned ms)
{
	uint64_t	now = util_now_ms();

	c->tun.due_ms = now + ms;
	if (c->tun.keepalive_at != 0 && c->tun.keepalive_at < c->tun.due_ms)
		ms = c->tun.keepalive_at > now ?
		    (unsigned)(c->tun.keepalive_at - now) : 1;
	conn_set_deadline(c, ms);
}

void
guard_timeout(struct conn *c)
{
	uint64_t	now = util_now_ms();

	if (c->tun.keepalive_at != 0) {
		(void)util_tcp_keepalive(io_fd(c->uio));
		c->tun.keepalive_at = 0;
		if (now < c->tun.due_ms) {
			conn_set_deadline(c, (unsigned)(c->tun.due_ms - now));
			return;
		}
	}
	guard_refuse(c, POLICY_R_TIMEOUT, !c->tun.spoken ?
	    "the tunnel was idle: neither side sent anything" : "the client's "
	    "first bytes could not be judged in time (an SSH client, and "
	    "no SSH banner from the server; or too few bytes to tell)");
}
