/*
 * socks5.c - the SOCKS5 side of a client connection (RFC 1928 CONNECT,
 * RFC 1929 username/password).
 *
 * Username/password is an identity, not a credential for anything
 * upstream: it is checked against the listener's "auth" tokens, names the
 * sandbox in audit lines, and is never forwarded.  On a listener without
 * "auth" a client offering only username/password is accepted and its
 * credentials are ignored (curl --socks5 user:pass@ does that).
 *
 * Not here: routing and connects (conn.c), the tunnel (tunnel.c), the
 * byte-level parsing (socks5_parse.c).
 */
#include "config.h"

#include <arpa/inet.h>

#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>

#include "policy/policy.h"
#include "proxy/conn.h"
#include "proxy/io.h"
#include "proxy/listener.h"
#include "proxy/log.h"
#include "proxy/socks5_parse.h"
#include "proxy/util.h"
#include "proxy/worker.h"

static void	socks5_start(struct conn *c);
static void	socks5_denied(struct conn *c, enum policy_reason reason,
		    const char *detail);
static void	socks5_event(struct io *io, int ev, void *arg);
static void	socks5_process(struct conn *c);
static int	socks5_greeting(struct conn *c, const uint8_t *p, size_t len);
static int	socks5_auth(struct conn *c, const uint8_t *p, size_t len);
static int	socks5_request(struct conn *c, const uint8_t *p, size_t len);
static void	socks5_fail(struct conn *c, uint8_t rep, const char *why);
static void	socks5_flush_close(struct conn *c);

static void
socks5_start(struct conn *c)
{
	c->kind = CONN_KIND_SOCKS5;
	io_set_cb(c->cio, socks5_event, c);
	conn_enter_state(c, CONN_ST_SOCKS_GREETING);
	conn_set_deadline(c, c->cfg->timeouts.request_head_ms);
	io_read(c->cio, 1);
	if (io_in_len(c->cio) > 0)
		socks5_process(c);
}

static void
socks5_event(struct io *io, int ev, void *arg)
{
	struct conn	*c = arg;

	switch (c->state) {
	case CONN_ST_SOCKS_GREETING:
	case CONN_ST_SOCKS_AUTH:
	case CONN_ST_SOCKS_REQUEST:
		if (ev & IO_EV_READ) {
			socks5_process(c);
			return;
		}
		if (ev & IO_EV_DRAINED)
			return;
		conn_close(c, POLICY_R_BAD_REQUEST, "client closed during the "
		    "SOCKS5 handshake");
		return;
	case CONN_ST_RESOLVING:
	case CONN_ST_CONNECTING:
		conn_wait_event(c, ev);	/* early bytes go first in the tunnel */
		return;
	case CONN_ST_FLUSH_CLOSE:
		if (ev & IO_EV_READ) {
			evbuffer_drain(io_in(io), io_in_len(io));
			return;
		}
		conn_close(c, POLICY_R_ALLOWED, NULL);
		return;
	default:
		conn_close(c, POLICY_R_INTERNAL, "socks5 event in a foreign "
		    "state");
		return;
	}
}

/*
 * Runs the handshake over whatever is buffered: a client may send the
 * greeting, credentials and request in one segment.
 */
static void
socks5_process(struct conn *c)
{
	struct evbuffer	*in = io_in(c->cio);
	size_t		 len;
	uint8_t		*p;
	int		 n;

	for (;;) {
		len = evbuffer_get_length(in);
		if (len == 0)
			return;
		if (len > SOCKS5_MSG_MAX)
			len = SOCKS5_MSG_MAX;
		if ((p = evbuffer_pullup(in, len)) == NULL) {
			conn_close(c, POLICY_R_INTERNAL, "out of memory");
			return;
		}
		switch (c->state) {
		case CONN_ST_SOCKS_GREETING:
			n = socks5_greeting(c, p, len);
			break;
		case CONN_ST_SOCKS_AUTH:
			n = socks5_auth(c, p, len);
			break;
		case CONN_ST_SOCKS_REQUEST:
			n = socks5_request(c, p, len);
			return;		/* routed, failed or waiting */
		default:
			return;
		}
		if (n <= 0)
			return;		/* need more, or c is closing */
	}
}

/* Returns bytes consumed (> 0), 0 for "need more", -1 if c is closing. */
static int
socks5_greeting(struct conn *c, const uint8_t *p, size_t len)
{
	struct socks5_greeting	g;
	const char		*err = NULL;
	uint8_t			 reply[2], want;
	int			 n, i, none = 0, userpass = 0;

	n = socks5_parse_greeting(p, len, &g, &err);
	if (n == SOCKS5_NEED_MORE)
		return 0;
	if (n == SOCKS5_INVALID) {
		log_info("conn=%llu from %s: bad SOCKS5 greeting: %s",
		    (unsigned long long)c->id, c->client, err);
		conn_close(c, POLICY_R_BAD_REQUEST, err);
		return -1;
	}
	evbuffer_drain(io_in(c->cio), (size_t)n);
	for (i = 0; i < g.nmethods; i++) {
		if (g.methods[i] == SOCKS5_METHOD_NONE)
			none = 1;
		else if (g.methods[i] == SOCKS5_METHOD_USERPASS)
			userpass = 1;
	}
	if (c->l->nauth > 0)
		want = userpass ? SOCKS5_METHOD_USERPASS : SOCKS5_METHOD_REJECT;
	else
		want = none ? SOCKS5_METHOD_NONE : userpass ?
		    SOCKS5_METHOD_USERPASS : SOCKS5_METHOD_REJECT;
	socks5_build_method(reply, want);
	evbuffer_add(io_out(c->cio), reply, sizeof(reply));
	if (want == SOCKS5_METHOD_REJECT) {
		log_info("conn=%llu from %s: no acceptable SOCKS5 method%s",
		    (unsigned long long)c->id, c->client, c->l->nauth ?
		    " (this listener needs username/password)" : "");
		socks5_flush_close(c);
		return -1;
	}
	c->socks.method = want;
	if (io_flush(c->cio) == -1) {
		conn_close(c, POLICY_R_BAD_REQUEST, "write failed");
		return -1;
	}
	conn_enter_state(c, want == SOCKS5_METHOD_USERPASS ?
	    CONN_ST_SOCKS_AUTH : CONN_ST_SOCKS_REQUEST);
	return n;
}

static int
socks5_auth(struct conn *c, const uint8_t *p, size_t len)
{
	struct socks5_userpass		 up;
	const struct listener_auth	*a = NULL;
	const char			*err = NULL;
	uint8_t				 reply[2];
	int				 n, ok = 1;

	n = socks5_parse_userpass(p, len, &up, &err);
	if (n == SOCKS5_NEED_MORE)
		return 0;
	if (n == SOCKS5_INVALID) {
		util_wipe(&up, sizeof(up));
		log_info("conn=%llu from %s: bad SOCKS5 username/password "
		    "message: %s", (unsigned long long)c->id, c->client, err);
		conn_close(c, POLICY_R_BAD_REQUEST, err);
		return -1;
	}
	evbuffer_drain(io_in(c->cio), (size_t)n);
	if (c->l->nauth > 0) {
		a = listener_auth_find(c->l, up.user);
		ok = a != NULL && util_timingsafe_eq(up.pass, up.plen,
		    a->token, a->token_len);
	}
	util_wipe(&up, sizeof(up));
	socks5_build_auth_reply(reply, ok ? 0x00 : 0x01);
	evbuffer_add(io_out(c->cio), reply, sizeof(reply));
	if (!ok) {
		conn_audit(c, "open", POLICY_DENY, POLICY_R_AUTH,
		    "bad SOCKS5 username or token");
		socks5_flush_close(c);
		return -1;
	}
	if (a != NULL)
		c->sandbox = a->user;
	if (io_flush(c->cio) == -1) {
		conn_close(c, POLICY_R_BAD_REQUEST, "write failed");
		return -1;
	}
	conn_enter_state(c, CONN_ST_SOCKS_REQUEST);
	return n;
}

static int
socks5_request(struct conn *c, const uint8_t *p, size_t len)
{
	struct socks5_request	 r;
	const char		*err = NULL;
	char			 text[INET6_ADDRSTRLEN + 2];
	size_t			 nlen;
	int			 n;

	n = socks5_parse_request(p, len, &r, &err);
	if (n == SOCKS5_NEED_MORE)
		return 0;
	if (n == SOCKS5_INVALID) {
		log_info("conn=%llu from %s: bad SOCKS5 request: %s",
		    (unsigned long long)c->id, c->client, err);
		if (socks5_request_bad_target(err)) {
			/* A name that cannot be a destination is a refused
			 * target (0x02, audited with the name as sent), not
			 * a failure of moat. */
			nlen = len > 5 ? len - 5 : 0;
			if (nlen > p[4])
				nlen = p[4];
			log_escape((const char *)p + 5, nlen, c->host,
			    sizeof(c->host));
			socks5_denied(c, POLICY_R_BAD_REQUEST, err);
			return -1;
		}
		socks5_fail(c, socks5_request_reply(err), err);
		return -1;
	}
	evbuffer_drain(io_in(c->cio), (size_t)n);
	conn_set_deadline(c, 0);
	c->t_start = util_now_ms();
	c->port = r.port;
	if (r.cmd != SOCKS5_CMD_CONNECT) {
		socks5_fail(c, SOCKS5_REP_CMD_UNSUPPORTED, "only CONNECT is "
		    "supported (no BIND, no UDP ASSOCIATE)");
		return -1;
	}
	switch (r.atyp) {
	case SOCKS5_ATYP_IPV4:
		inet_ntop(AF_INET, r.addr, text, sizeof(text));
		break;
	case SOCKS5_ATYP_IPV6:
		inet_ntop(AF_INET6, r.addr, text, sizeof(text));
		break;
	default:
		snprintf(text, sizeof(text), "%s", "");
		break;
	}
	if (policy_host_normalise(r.atyp == SOCKS5_ATYP_DOMAIN ? r.domain :
	    text, strlen(r.atyp == SOCKS5_ATYP_DOMAIN ? r.domain : text),
	    &c->target, &err) == -1) {
		/* The audit line shows the bad name, escaped and cut. */
		log_escape(r.domain, strlen(r.domain), c->host,
		    sizeof(c->host));
		socks5_denied(c, POLICY_R_BAD_REQUEST, err);
		return -1;
	}
	if (c->target.kind == POLICY_HOST_NAME)
		snprintf(c->host, sizeof(c->host), "%s", c->target.name);
	else
		policy_addr_format(&c->target.addr, c->host, sizeof(c->host));
	if (r.port == 0) {
		/* Nothing listens on port 0, and to the policy port 0
		 * means "any port": refuse it before any rule sees it. */
		socks5_denied(c, POLICY_R_BAD_REQUEST, "port 0 is not a "
		    "destination");
		return -1;
	}
	conn_route(c);
	return -1;
}

/* Replies with rep and closes, without an audit line (nothing judged). */
static void
socks5_fail(struct conn *c, uint8_t rep, const char *why)
{
	uint8_t	reply[10];

	socks5_build_reply(reply, rep);
	evbuffer_add(io_out(c->cio), reply, sizeof(reply));
	log_debug("conn=%llu socks5 failure %u: %s", (unsigned long long)c->id,
	    rep, why);
	socks5_flush_close(c);
}

static void
socks5_denied(struct conn *c, enum policy_reason reason, const char *detail)
{
	/* The reply is the reason's (policy.c's table): "connection not
	 * allowed by ruleset" for every policy denial and a target that
	 * cannot be one, network failures for network failures.  A denial
	 * never answers success, whatever the table says of "allowed". */
	uint8_t	rep = policy_reason_info(reason)->socks5;

	if (rep == SOCKS5_REP_OK)
		rep = SOCKS5_REP_NOT_ALLOWED;
	conn_set_deadline(c, 0);
	conn_audit(c, "open", POLICY_DENY, reason, detail);
	log_debug("conn=%llu socks5 %s:%u denied: %s",
	    (unsigned long long)c->id, c->host, c->port,
	    policy_reason_str(reason));
	socks5_fail(c, rep, policy_reason_str(reason));
}

/* The reply that opens the tunnel: succeeded. */
static void
socks5_tunnel_reply(struct conn *c)
{
	uint8_t	reply[10];

	socks5_build_reply(reply, SOCKS5_REP_OK);
	evbuffer_add(io_out(c->cio), reply, sizeof(reply));
}

/* The table's refusal: SOCKS5 has no HTTP status (code). */
static void
socks5_denied_op(struct conn *c, int code, enum policy_reason reason,
    const char *detail)
{
	(void)code;
	socks5_denied(c, reason, detail);
}

/*
 * request_head_ms passed in the SOCKS5 handshake.  A client that sent
 * nothing is an idle connection; one that stopped part-way is audited, as
 * a cut HTTP head is: a scanner or a stuck client shows in the log.
 */
static void
socks5_timeout(struct conn *c)
{
	uint64_t	in, out;
	bool		handshake = c->state == CONN_ST_SOCKS_GREETING ||
			    c->state == CONN_ST_SOCKS_AUTH ||
			    c->state == CONN_ST_SOCKS_REQUEST;

	io_counts(c->cio, &in, &out);
	if (handshake && (in > 0 || io_in_len(c->cio) > 0))
		conn_audit(c, "open", POLICY_DENY, POLICY_R_TIMEOUT,
		    c->state == CONN_ST_SOCKS_GREETING ? "the SOCKS5 greeting "
		    "did not arrive whole in time (timeouts.request_head_ms)" :
		    c->state == CONN_ST_SOCKS_AUTH ? "the SOCKS5 "
		    "username/password did not arrive whole in time "
		    "(timeouts.request_head_ms)" : "the SOCKS5 request did not "
		    "arrive whole in time (timeouts.request_head_ms)");
	conn_close(c, POLICY_R_TIMEOUT, NULL);
}

const struct conn_ops socks5_conn_ops = {
	.name = "socks5",
	.start = socks5_start,
	.tunnel_reply = socks5_tunnel_reply,
	.denied = socks5_denied_op,
	.timeout = socks5_timeout,
};

static void
socks5_flush_close(struct conn *c)
{
	if (io_flush(c->cio) == -1 || io_out_len(c->cio) == 0) {
		conn_close(c, POLICY_R_ALLOWED, NULL);
		return;
	}
	conn_enter_state(c, CONN_ST_FLUSH_CLOSE);
	io_set_cb(c->cio, socks5_event, c);
	io_want_drained(c->cio, 0);
	io_read(c->cio, 1);
	conn_set_deadline(c, c->cfg->timeouts.idle_client_ms);
}
