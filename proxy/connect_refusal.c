/*
 * connect_refusal.c - a refused CONNECT answered inside its tunnel, on a
 * listener with "connect_refusal": "in-tunnel".
 *
 * Why: the 403 moatd answers a CONNECT with names the reason and the
 * rule, but few clients show it (curl: "CONNECT tunnel failed, response
 * 403"), and a relay between the client and moatd (srt's proxy, for one)
 * may answer its client a bare 502 instead.  A request inside a tunnel
 * reaches the client whole.  So, where the listener asks for it, moatd
 * opens the tunnel it refused: "200 Connection established", then
 *  - a TLS ClientHello (its server name, if any, must be the CONNECT's
 *    host): a leaf for the CONNECT's host from the minter, signed by
 *    moatd's CA, which the sandbox trusts for inspected tunnels already;
 *  - or a plain HTTP request;
 * and the first request head inside gets the CONNECT's 403 (target,
 * reason, rule, detail), "Connection: close".  Anything else inside
 * (ssh, garbage, a TLS server name for another host) is closed.
 *
 * What it keeps: the refusal is audited once, as the CONNECT's ("open",
 * deny, its reason and rule), before any of this (http_denied_code());
 * nothing here writes an audit line.  The leaf is made before the 200: a
 * name the minter refuses gets the plain 403, not a tunnel that closes.  Nothing is resolved or dialled
 * after the refusal: the tunnel never reaches an upstream.  A leaf costs
 * a signature and a place in the minter's bounded cache for a name the
 * client chose, so each sandbox has a budget of such answers
 * (sandbox_refusal_take(): SANDBOX_REFUSAL_RATE a second); past it, and
 * for a moatd without a CA, the CONNECT gets its 403 as usual.
 *
 * Not here: the decision (conn.c, policy/), the reply's text
 * (http_reply.c), the TLS contexts (tls.c).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "policy/policy.h"
#include "proxy/conn.h"
#include "proxy/io.h"
#include "proxy/listener.h"
#include "proxy/log.h"
#include "proxy/proto_peek.h"
#include "proxy/sandbox.h"
#include "proxy/tls.h"
#include "proxy/util.h"
#include "proxy/worker.h"

#define REFUSAL_DETAIL_MAX	512	/* the detail kept for the reply */

enum refusal_phase {
	REFUSAL_PEEK = 0,	/* the client's first bytes: TLS or HTTP? */
	REFUSAL_HANDSHAKE,	/* TLS with the client, leaf of the host */
	REFUSAL_HEAD		/* the first request head inside */
};

struct conn_refusal {
	enum refusal_phase	 phase;
	SSL			*ssl;		/* the leaf's, until TLS takes it */
	int			 code;		/* the CONNECT's status */
	enum policy_reason	 reason;
	bool			 has_detail;
	char			 detail[REFUSAL_DETAIL_MAX];
	size_t			 scan_state;	/* http_head_scan() */
};

static void	refusal_event(struct io *io, int ev, void *arg);
static void	refusal_peek(struct conn *c);
static SSL	*refusal_leaf(struct conn *c);
static void	refusal_tls(struct conn *c, const struct tls_client_hello *h);
static void	refusal_head(struct conn *c);
static void	refusal_end(struct conn *c, const char *why);
static void	refusal_timeout(struct conn *c);
static void	refusal_closing(struct conn *c);

/* What the connection does from the 200 on: nothing but this. */
static const struct conn_ops refusal_ops = {
	.name = "connect-refusal",
	.timeout = refusal_timeout,
	.closing = refusal_closing,
};

/* Whether c's refusal may be answered inside its tunnel. */
static bool
refusal_wanted(const struct conn *c, int code)
{
	return c->kind == CONN_KIND_CONNECT && !c->tun.inspected &&
	    c->l->connect_refusal == MOAT_REFUSAL_IN_TUNNEL &&
	    c->w->tls != NULL && code == 403 && c->host[0] != '\0' &&
	    c->http.req.method != NULL && c->uc == NULL;
}

bool
connect_refusal_open(struct conn *c, int code, enum policy_reason reason,
    const char *detail)
{
	struct conn_refusal	*r;

	if (code == 0)
		code = http_status_for(reason);
	if (!refusal_wanted(c, code))
		return false;
	if (!sandbox_refusal_take(c->sb)) {
		log_debug("conn=%llu CONNECT refusal answered with its status: "
		    "the sandbox's %d a second inside tunnels are used up",
		    (unsigned long long)c->id, SANDBOX_REFUSAL_RATE);
		return false;
	}
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return false;	/* then the plain 403 */
	/* The leaf first: a name that gets none is refused as before,
	 * not with a tunnel that closes. */
	if ((r->ssl = refusal_leaf(c)) == NULL) {
		free(r);
		return false;
	}
	r->code = code;
	r->reason = reason;
	if (detail != NULL) {
		snprintf(r->detail, sizeof(r->detail), "%s", detail);
		r->has_detail = true;
	}
	conn_release_upstream(c);	/* one kept since an earlier request */
	c->refusal = r;
	c->ops = &refusal_ops;
	EVBUFFER_ADD_LIT(io_out(c->cio),
	    "HTTP/1.1 200 Connection established\r\n\r\n");
	if (io_flush(c->cio) == -1) {
		refusal_end(c, "the client left before the tunnel opened");
		return true;
	}
	log_debug("conn=%llu CONNECT %s:%u refused (%s): answered inside the "
	    "tunnel", (unsigned long long)c->id, c->host, c->port,
	    policy_reason_str(reason));
	io_set_cb(c->cio, refusal_event, c);
	conn_enter_state(c, CONN_ST_REFUSAL);
	conn_set_deadline(c, c->cfg->timeouts.request_head_ms);
	io_read(c->cio, 1);
	if (io_in_len(c->cio) > 0)
		refusal_peek(c);	/* sent with the CONNECT */
	return true;
}

static void
refusal_event(struct io *io, int ev, void *arg)
{
	struct conn	*c = arg;

	if (ev & IO_EV_TLS_UP) {
		c->refusal->phase = REFUSAL_HEAD;
		conn_set_deadline(c, c->cfg->timeouts.request_head_ms);
		if (io_in_len(io) > 0)
			refusal_head(c);
		return;
	}
	if (ev & IO_EV_READ) {
		if (c->refusal->phase == REFUSAL_PEEK)
			refusal_peek(c);
		else if (c->refusal->phase == REFUSAL_HEAD)
			refusal_head(c);
		return;
	}
	if (ev & IO_EV_DRAINED)
		return;
	refusal_end(c, io_tls_error(io) != NULL ? io_tls_error(io) :
	    "the client left the refused tunnel");
}

/* The client's first bytes: a ClientHello, or an HTTP request. */
static void
refusal_peek(struct conn *c)
{
	struct evbuffer		*in = io_in(c->cio);
	struct peek_result	 pk;
	size_t			 len = evbuffer_get_length(in);
	const uint8_t		*p;

	if (len > TLS_HELLO_MAX_BYTES + 1)
		len = TLS_HELLO_MAX_BYTES + 1;
	if ((p = evbuffer_pullup(in, len)) == NULL) {
		refusal_end(c, "out of memory");
		return;
	}
	switch (peek_classify(p, len, false, &pk)) {
	case PEEK_P_NONE:
	case PEEK_P_PARTIAL:
		return;
	case PEEK_P_TLS:
		refusal_tls(c, &pk.hello);
		return;
	case PEEK_P_HTTP:
		c->refusal->phase = REFUSAL_HEAD;
		refusal_head(c);
		return;
	default:
		refusal_end(c, "the client sent neither TLS nor HTTP into the "
		    "refused tunnel");
		return;
	}
}

/* The server side of TLS with a leaf for the CONNECT's host, or NULL. */
static SSL *
refusal_leaf(struct conn *c)
{
	char	leaf[POLICY_NAME_MAX + 1], e[256];
	SSL	*ssl;

	if (c->target.kind == POLICY_HOST_NAME)
		snprintf(leaf, sizeof(leaf), "%s", c->target.name);
	else
		policy_addr_format(&c->target.addr, leaf, sizeof(leaf));
	if ((ssl = tls_server_ssl(c->w->tls, leaf, e, sizeof(e))) == NULL)
		log_debug("conn=%llu CONNECT refusal answered with its status: "
		    "no leaf for %s: %s", (unsigned long long)c->id, leaf, e);
	return ssl;
}

/*
 * TLS for the CONNECT's host, and that host only: a server name that is
 * another host's is closed (one name per refusal, already counted).
 */
static void
refusal_tls(struct conn *c, const struct tls_client_hello *h)
{
	struct policy_host	 sni;
	const char		*err = NULL;
	SSL			*ssl = c->refusal->ssl;

	if (h->has_sni && !h->sni_is_ip && (policy_host_normalise(h->sni,
	    h->sni_len, &sni, &err) == -1 || c->target.kind !=
	    POLICY_HOST_NAME || sni.kind != POLICY_HOST_NAME ||
	    strcmp(sni.name, c->target.name) != 0)) {
		refusal_end(c, "the TLS server name is not the CONNECT's host");
		return;
	}
	c->refusal->ssl = NULL;		/* the io's from here, even on error */
	if (io_start_tls(c->cio, ssl) == -1) {
		refusal_end(c, "out of memory");
		return;
	}
	c->refusal->phase = REFUSAL_HANDSHAKE;
	conn_set_deadline(c, c->cfg->timeouts.tls_handshake_ms);
}

/*
 * The first request head inside, strictly parsed: whatever it asks, the
 * answer is the CONNECT's refusal.  A head that is not HTTP ends it.
 */
static void
refusal_head(struct conn *c)
{
	struct conn_refusal		*r = c->refusal;
	struct evbuffer			*in = io_in(c->cio);
	struct http_request_head	 req;
	struct http_limits		 lim;
	const char			*err = NULL;
	size_t				 len = evbuffer_get_length(in);
	size_t				 head_len = 0;
	const char			*p;
	int				 rc;

	memset(&lim, 0, sizeof(lim));
	lim.line_max = c->cfg->limits.request_line_bytes;
	lim.head_max = c->cfg->limits.header_bytes;
	lim.header_count_max = c->cfg->limits.header_count;
	if (len > lim.head_max + 1)
		len = lim.head_max + 1;
	if ((p = (const char *)evbuffer_pullup(in, len)) == NULL) {
		refusal_end(c, "out of memory");
		return;
	}
	rc = http_head_scan(p, len, &lim, &r->scan_state, &head_len, &err);
	if (rc == HTTP_NEED_MORE)
		return;
	memset(&req, 0, sizeof(req));
	if (rc == HTTP_OK)
		rc = http_request_head_parse(p, head_len, &lim, &req, &err);
	http_request_head_free(&req);
	if (rc != HTTP_OK) {
		refusal_end(c, err != NULL ? err : "not an HTTP request");
		return;
	}
	evbuffer_drain(in, head_len);
	conn_set_deadline(c, 0);
	http_reply_close(c, r->code, r->reason, r->has_detail ? r->detail :
	    NULL);
	if (io_flush(c->cio) == -1) {
		refusal_end(c, "the client left before the answer");
		return;
	}
	http_flush_close(c);
}

/* Closed without an answer; the refusal was audited already. */
static void
refusal_end(struct conn *c, const char *why)
{
	conn_close(c, c->refusal != NULL ? c->refusal->reason :
	    POLICY_R_BAD_REQUEST, why);
}

static void
refusal_timeout(struct conn *c)
{
	refusal_end(c, c->refusal->phase == REFUSAL_HANDSHAKE ? "the client's "
	    "TLS handshake did not finish in time" : "the client sent no "
	    "request into the refused tunnel in time");
}

static void
refusal_closing(struct conn *c)
{
	SSL_free(c->refusal->ssl);
	free(c->refusal);
	c->refusal = NULL;
}
