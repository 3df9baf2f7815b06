/*
 * http.c - the HTTP/1.1 side of a client connection: request heads,
 * CONNECT, absolute-form forwarding with keep-alive on both sides, body
 * framing in both directions.  The replies moatd writes itself are in
 * http_reply.c.
 *
 * Messages are parsed by http_head.c and http_chunked.c (RFC 9112); this file
 * decides what is forwarded.  Hop-by-hop fields are never forwarded, the
 * upstream request is always rebuilt from the parsed head (origin-form,
 * Host from the target), and bodies are re-framed: a chunked body is
 * decoded and re-encoded, so nothing a second parser could read
 * differently ever leaves moatd.
 *
 * Not here: policy decisions and connects (conn.c), tunnels (tunnel.c).
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "certs/ssldl.h"
#include "policy/policy.h"
#include "proxy/audit.h"
#include "proxy/conn.h"
#include "proxy/http_parse.h"
#include "proxy/inject.h"
#include "proxy/io.h"
#include "proxy/listener.h"
#include "proxy/log.h"
#include "proxy/metrics.h"
#include "proxy/tls.h"
#include "proxy/util.h"
#include "proxy/worker.h"

/* Backpressure: stop reading one side while the other's output is above
 * the high mark; resume when it falls to the low mark. */
#define HTTP_BUF_HIGH_BYTES	(256u << 10)
#define HTTP_BUF_LOW_BYTES	(64u << 10)
#define HTTP_CHUNK_FRAME_BYTES	32	/* "%llx\r\n" */

static void	http_policy_target(const struct conn *c, struct policy_target *t);
static void	http_connected(struct conn *c, int ufd);
static void	http_read_head(struct conn *c);
static void	http_handle_request(struct conn *c);
static int	http_check_auth(struct conn *c);
static int	http_tunnel_request(struct conn *c);
static int	http_tunnel_name(struct conn *c, const char *name);
static int	http_proxy_target(struct conn *c);
static int	http_precheck_chunked(struct conn *c, const char **err);
static void	http_send_request(struct conn *c);
static void	http_pump_request(struct conn *c);
static int	http_quota(struct conn *c, struct evbuffer *out, size_t from);
static void	http_clock_start(struct conn *c);
static void	http_clock_arm(struct conn *c);
static void	http_read_response(struct conn *c);
static void	http_response_begin(struct conn *c);
static int	http_write_response_head(struct conn *c);
static int	http_release_held(struct conn *c);
static void	http_pump_response(struct conn *c);
static void	http_finish(struct conn *c);
static void	http_abort(struct conn *c, enum policy_reason reason,
		    const char *detail);
static void	http_upstream_lost(struct conn *c, const char *what);
static int	http_move_body(struct conn *c, struct conn_body *b,
		    struct evbuffer *in, struct evbuffer *out, uint64_t *count,
		    const char **err);
static int	http_is_hop_by_hop(const char *name, size_t len);
static bool	http_is_range(const char *name, size_t len);
static int	http_add_fields(struct conn *c, int dir, struct evbuffer *out,
		    const struct http_header *hv, size_t n);

/* evbuffer_add_printf costs a vfprintf per call: these are the hot-path
 * replacements for strings and decimal numbers. */
static void
eb_str(struct evbuffer *b, const char *s)
{
	evbuffer_add(b, s, strlen(s));
}

static void
eb_u64(struct evbuffer *b, uint64_t v)
{
	char	buf[24], *q = buf + sizeof(buf);

	do {
		*--q = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	evbuffer_add(b, q, (size_t)(buf + sizeof(buf) - q));
}

/* A chunk's size line: hex digits, CRLF. */
static void
eb_chunk_size(struct evbuffer *b, size_t n)
{
	static const char	hex[] = "0123456789abcdef";
	char			buf[24], *q = buf + sizeof(buf);

	*--q = '\n';
	*--q = '\r';
	do {
		*--q = hex[n & 0xf];
		n >>= 4;
	} while (n != 0);
	evbuffer_add(b, q, (size_t)(buf + sizeof(buf) - q));
}

static const struct http_limits *
http_limits(struct conn *c, struct http_limits *lim)
{
	lim->line_max = c->cfg->limits.request_line_bytes;
	lim->head_max = c->cfg->limits.header_bytes;
	lim->header_count_max = c->cfg->limits.header_count;
	return lim;
}

void
http_free_request(struct conn *c)
{
	http_request_head_free(&c->http.req);
	http_response_head_free(&c->http.resp);
}

/* Starts (or restarts, on a keep-alive connection) reading a request. */
void
http_start(struct conn *c)
{
	http_free_request(c);
	/* The last request's secrets are not this one's (audit: injected),
	 * nor are its quotas. */
	inject_end(c->http.inj);
	c->http.inj = NULL;
	quota_release(&c->quota);
	conn_refresh_config(c);
	c->kind = CONN_KIND_NONE;
	c->http.scan_state = 0;
	c->http.up_scan_state = 0;
	c->http.resp_head_done = false;
	c->http.resp_scan = c->http.resp_held = false;
	c->http.sent_100 = false;
	c->http.status = 0;
	c->http.bytes_up = c->http.bytes_down = 0;
	c->t_start = util_now_ms();
	c->host[0] = '\0';
	c->ip[0] = '\0';
	memset(&c->dec, 0, sizeof(c->dec));
	memset(&c->http.reqb, 0, sizeof(c->http.reqb));
	memset(&c->http.respb, 0, sizeof(c->http.respb));
	io_set_cb(c->cio, http_client_event, c);
	conn_enter_state(c, CONN_ST_HTTP_HEAD);
	conn_set_deadline(c, c->http.nrequests == 0 ?
	    c->cfg->timeouts.request_head_ms : c->cfg->timeouts.idle_client_ms);
	io_read(c->cio, 1);
	if (io_in_len(c->cio) > 0)
		http_read_head(c);	/* pipelined or sniffed bytes */
}

void
http_client_event(struct io *io, int ev, void *arg)
{
	struct conn	*c = arg;

	switch (c->state) {
	case CONN_ST_HTTP_HEAD:
		if (ev & IO_EV_READ) {
			http_read_head(c);
			return;
		}
		if (ev & IO_EV_DRAINED)
			return;
		/* EOF or error: quietly between requests, else a cut head. */
		if (io_in_len(io) == 0)
			conn_close(c, POLICY_R_ALLOWED, NULL);
		else
			conn_close(c, POLICY_R_BAD_REQUEST, "client closed in "
			    "the middle of a request head");
		return;
	case CONN_ST_RESOLVING:
	case CONN_ST_CONNECTING:
		conn_wait_event(c, ev);
		return;
	case CONN_ST_HTTP_EXCHANGE:
		if (ev & IO_EV_READ) {
			if (c->http.reqb.done)
				conn_hold_input(c);
			else
				http_pump_request(c);
			return;
		}
		if (ev & IO_EV_DRAINED) {
			/* The client caught up: read the upstream again. */
			if (c->uio != NULL && !c->http.respb.done)
				io_read(c->uio, 1);
			return;
		}
		if ((ev & IO_EV_EOF) && c->http.reqb.done) {
			/* Half-close after a whole request: answer, then close. */
			c->http.client_keepalive = false;
			return;
		}
		http_abort(c, POLICY_R_BAD_REQUEST, ev & IO_EV_EOF ?
		    "client closed before the exchange was complete" :
		    "client connection failed");
		return;
	case CONN_ST_FLUSH_CLOSE:
		if (ev & IO_EV_READ) {
			/* Ignore whatever else the client sends. */
			evbuffer_drain(io_in(io), io_in_len(io));
			return;
		}
		conn_close(c, POLICY_R_ALLOWED, NULL);
		return;
	default:
		conn_close(c, POLICY_R_INTERNAL, "http event in a foreign state");
		return;
	}
}

static void
http_read_head(struct conn *c)
{
	struct evbuffer		*in = io_in(c->cio);
	struct http_limits	 lim;
	const char		*err = NULL;
	size_t			 len = evbuffer_get_length(in), head_len = 0;
	unsigned char		*p;
	int			 rc;

	http_limits(c, &lim);
	if (len > lim.head_max + 1)
		len = lim.head_max + 1;	/* enough to see "too long" */
	if ((p = evbuffer_pullup(in, len)) == NULL) {
		conn_close(c, POLICY_R_INTERNAL, "out of memory");
		return;
	}
	rc = http_head_scan((const char *)p, len, &lim, &c->http.scan_state,
	    &head_len, &err);
	if (rc == HTTP_NEED_MORE) {
		/* A head that comes in pieces waits in memory: all of them
		 * together are bounded, so that many slow clients cannot
		 * take moatd's memory (a burst of them is refused). */
		if (conn_head_hold(c, len) == -1) {
			c->kind = CONN_KIND_HTTP;
			http_denied_code(c, 503, POLICY_R_LIMIT, "unfinished "
			    "request heads hold limits.partial_heads_bytes "
			    "(or this sandbox's share of it)");
		}
		return;
	}
	conn_head_release(c);
	if (rc == HTTP_OK)
		rc = http_request_head_parse((const char *)p, head_len, &lim,
		    &c->http.req, &err);
	if (rc != HTTP_OK) {
		c->kind = CONN_KIND_HTTP;
		http_denied(c, http_error_is_limit(err) ? POLICY_R_LIMIT :
		    POLICY_R_BAD_REQUEST, err);
		return;
	}
	evbuffer_drain(in, head_len);
	/* Reading stays on (toggling it costs two epoll_ctl per request);
	 * what arrives meanwhile waits in the buffer, up to a cap. */
	c->http.nrequests++;
	c->t_start = util_now_ms();
	conn_set_deadline(c, 0);
	http_handle_request(c);
}

static void
http_handle_request(struct conn *c)
{
	struct http_request_head	*req = &c->http.req;
	const char			*err = NULL;

	c->kind = strcmp(req->method, "CONNECT") == 0 ? CONN_KIND_CONNECT :
	    CONN_KIND_HTTP;
	c->http.client_keepalive = req->keep_alive && !c->w->draining;
	if ((c->tun.inspected ? http_tunnel_request(c) : http_proxy_target(c)) ==
	    -1)
		return;

	if (c->kind == CONN_KIND_HTTP) {
		c->http.reqb.kind = req->body;
		c->http.reqb.left = req->content_length;
		c->http.reqb.done = req->body == HTTP_BODY_NONE ||
		    (req->body == HTTP_BODY_LENGTH && req->content_length == 0);
		http_chunked_init(&c->http.reqb.chunked);
		if (req->body == HTTP_BODY_CHUNKED &&
		    http_precheck_chunked(c, &err) == -1) {
			http_denied(c, POLICY_R_BAD_REQUEST, err);
			return;
		}
	}

	/* A kept upstream connection serves the same host:port again if the
	 * (possibly reloaded) policy still allows that name and address.
	 * (One that an earlier client left in the worker's pool is taken
	 * after routing: conn.c.) */
	if (c->kind == CONN_KIND_HTTP && c->uio != NULL &&
	    audit_refuses(c->cfg)) {
		http_denied(c, POLICY_R_AUDIT_UNAVAILABLE,
		    AUDIT_UNAVAILABLE_DETAIL);
		return;
	}
	if (c->kind == CONN_KIND_HTTP && c->uio != NULL) {
		struct policy_target	t;
		struct policy_decision	named = c->dec;	/* http_tunnel_name's */
		char			why[256] UTIL_NOINIT;

		memset(&t, 0, sizeof(t));
		t.name = c->target.kind == POLICY_HOST_NAME ?
		    c->target.name : NULL;
		t.addr = &c->http.up_addr;
		t.port = c->port;
		http_policy_target(c, &t);
		if (!io_eof(c->uio) && c->port == c->http.up_port &&
		    util_now_ms() - c->http.up_idle_since <
		    c->cfg->timeouts.idle_upstream_ms &&
		    strcmp(c->host, c->http.up_host) == 0 &&
		    conn_decide(c, &t, &c->dec) == POLICY_ALLOW) {
			/* A name the policy would refuse in a tunnel to an
			 * allowed address stays a would-deny. */
			if (named.would_deny != POLICY_R_ALLOWED &&
			    c->dec.would_deny == POLICY_R_ALLOWED)
				c->dec = named;
			memcpy(c->ip, c->http.up_ip, sizeof(c->ip));
			if (!conn_rate_ok(c) && !conn_waive(c, POLICY_R_RATE)) {
				http_denied(c, POLICY_R_RATE, "the rule's "
				    "\"rate\" is used up for now");
				return;
			}
			if (!conn_quota_ok(c, why, sizeof(why)) &&
			    !conn_waive(c, POLICY_R_QUOTA_BYTES)) {
				http_denied(c, POLICY_R_QUOTA_BYTES, why);
				return;
			}
			c->http.up_reused = true;
			http_send_request(c);
			return;
		}
		io_free(c->uio);
		c->uio = NULL;
	}
	conn_route(c);
}

/*
 * Runs a copy of the chunked decoder over the body bytes that came with
 * the head.  A smuggling attempt usually arrives in one segment, so its bad
 * framing is refused here, before any upstream connection exists; later
 * bytes are checked as they are forwarded.
 */
static int
http_precheck_chunked(struct conn *c, const char **err)
{
	struct http_chunked	 ch = c->http.reqb.chunked;
	struct evbuffer_iovec	 v[16];
	int			 nv, i, rc;
	size_t			 off, used;
	uint64_t		 left;

	nv = evbuffer_peek(io_in(c->cio), -1, NULL, v, 16);
	for (i = 0; i < nv && i < 16; i++) {
		const char *p = v[i].iov_base;
		size_t len = v[i].iov_len;

		for (off = 0; off < len; ) {
			if ((left = http_chunked_data_left(&ch)) > 0) {
				used = len - off < left ? len - off :
				    (size_t)left;
				http_chunked_data_consumed(&ch, used);
				off += used;
				continue;
			}
			rc = http_chunked_feed(&ch, p + off, len - off, &used,
			    err);
			if (rc == HTTP_INVALID)
				return -1;
			if (rc == HTTP_CHUNKED_DONE)
				return 0;
			off += used;
		}
	}
	return 0;
}

/*
 * The target of a request to the proxy itself: CONNECT host:port, or an
 * absolute-form http:// URL; proxy authentication first where the
 * listener asks for it.  Returns 0, or -1 after answering the client.
 */
static int
http_proxy_target(struct conn *c)
{
	struct http_request_head	*req = &c->http.req;
	const char			*err = NULL;

	if (c->l->nauth > 0 && http_check_auth(c) == -1)
		return -1;
	switch (req->form) {
	case HTTP_FORM_AUTHORITY:
		if (req->port == 0) {
			http_denied(c, POLICY_R_BAD_REQUEST,
			    "CONNECT needs host:port");
			return -1;
		}
		c->port = req->port;
		break;
	case HTTP_FORM_ABSOLUTE:
		if (strcmp(req->scheme, "http") != 0 &&
		    strcmp(req->scheme, "ws") != 0) {
			http_denied(c, POLICY_R_BAD_REQUEST, "moat forwards "
			    "plain http:// URLs; for https:// the client must "
			    "use CONNECT (set HTTPS_PROXY)");
			return -1;
		}
		c->port = req->port ? req->port : 80;
		break;
	case HTTP_FORM_ORIGIN:
		http_denied(c, POLICY_R_BAD_REQUEST, "moat is a forward proxy: "
		    "send absolute-form requests (GET http://host/path) or "
		    "CONNECT host:port");
		return -1;
	default:
		http_denied(c, POLICY_R_BAD_REQUEST, "asterisk-form requests "
		    "are not forwarded");
		return -1;
	}
	if (policy_host_normalise(req->host, strlen(req->host), &c->target,
	    &err) == -1) {
		snprintf(c->host, sizeof(c->host), "%s", "-");
		http_denied(c, POLICY_R_BAD_REQUEST, err);
		return -1;
	}
	if (c->target.kind == POLICY_HOST_NAME)
		snprintf(c->host, sizeof(c->host), "%s", c->target.name);
	else
		policy_addr_format(&c->target.addr, c->host, sizeof(c->host));
	return 0;
}

/*
 * A request inside an inspected tunnel: the target is the tunnel's, fixed
 * when the tunnel was judged.  The request must say so: origin-form (or
 * absolute-form naming the same host and port), and a Host field naming
 * the tunnel's host, so one tunnel cannot carry requests for another host
 * (domain fronting).  CONNECT inside a tunnel is refused.  Returns 0, or
 * -1 after answering the client.
 */
static int
http_tunnel_request(struct conn *c)
{
	struct http_request_head	*req = &c->http.req;
	struct policy_host		 h;
	const char			*hv, *err = NULL;
	uint16_t			 hport = 0;
	bool				 ok;
	char				 detail[POLICY_NAME_MAX * 2 + 64];

	c->target = c->tun.target;
	c->port = c->tun.port;
	memcpy(c->host, c->tun.host, sizeof(c->host));
	if (c->kind != CONN_KIND_HTTP || (req->form != HTTP_FORM_ORIGIN &&
	    req->form != HTTP_FORM_ABSOLUTE)) {
		c->kind = CONN_KIND_HTTP;
		http_denied(c, POLICY_R_BAD_REQUEST, "inside a tunnel, send "
		    "origin-form requests (GET /path) to the tunnel's host");
		return -1;
	}
	hv = req->form == HTTP_FORM_ABSOLUTE ? req->authority :
	    req->host_header;
	if (hv == NULL) {
		http_denied(c, POLICY_R_BAD_REQUEST, "no Host field");
		return -1;
	}
	/* The head parser checked it as host[:port] (a port 1-65535); no
	 * port means the tunnel's. */
	ok = policy_hostport_parse(hv, strlen(hv), c->tun.port, &h, &hport,
	    &err) == 0;
	if (!ok || h.kind != c->tun.target.kind ||
	    (h.kind == POLICY_HOST_NAME &&
	    strcmp(h.name, c->tun.target.name) != 0) ||
	    (h.kind == POLICY_HOST_ADDR && memcmp(&h.addr,
	    &c->tun.target.addr, sizeof(h.addr)) != 0) ||
	    hport != c->tun.port) {
		snprintf(detail, sizeof(detail), "the request names %.200s, "
		    "not the tunnel's host %s:%u", hv, c->tun.host,
		    c->tun.port);
		if (ok && c->tun.up_tls_host[0] != '\0' &&
		    c->tun.target.kind == POLICY_HOST_ADDR &&
		    h.kind == POLICY_HOST_NAME &&
		    strcmp(h.name, c->tun.up_tls_host) == 0)
			return http_tunnel_name(c, h.name);	/* the SNI's */
		http_denied_code(c, 421, POLICY_R_BAD_REQUEST, detail);
		return -1;
	}
	return 0;
}

/*
 * A request in a tunnel to an address that names a host (the one its TLS
 * server name gave): the IP rule allowed the address, and the name is
 * judged too, with this request's method and path; a deny rule for the
 * name wins.  Returns 0, or -1 after answering the client.
 */
static int
http_tunnel_name(struct conn *c, const char *name)
{
	struct policy_decision	d;
	char			detail[POLICY_NAME_MAX + 96];

	if (intercept_name_denied(c, name, c->http.req.method, c->http.req.path,
	    &d) == 0)
		return 0;
	c->dec = d;
	if (conn_audit_only(c) && policy_waive(&c->dec))
		return 0;
	snprintf(detail, sizeof(detail), "the request names %s, which the "
	    "policy denies, though the tunnel's address is allowed", name);
	http_denied(c, d.reason, detail);
	return -1;
}

/*
 * Proxy-Authorization: Basic base64(user:token).  The identity becomes the
 * sandbox name of the audit lines; the field itself is never forwarded.
 */
static int
http_check_auth(struct conn *c)
{
	const struct listener_auth	*a;
	int				 i, n;
	const char			*v;
	size_t				 vlen;
	unsigned char			 dec[768];
	char				*colon;

	i = http_header_find(c->http.req.headers, c->http.req.nheaders, 0,
	    "proxy-authorization");
	if (i < 0)
		goto fail;
	v = c->http.req.headers[i].value;
	vlen = c->http.req.headers[i].value_len;
	if (vlen <= LIT_LEN("basic ") || STRNCASECMP_LIT(v, "basic ") != 0)
		goto fail;
	v += LIT_LEN("basic ");
	vlen -= LIT_LEN("basic ");
	while (vlen > 0 && *v == ' ') {
		v++;
		vlen--;
	}
	if (vlen == 0 || vlen > 1000 || vlen % 4 != 0)
		goto fail;
	n = EVP_DecodeBlock(dec, (const unsigned char *)v, (int)vlen);
	if (n <= 0)
		goto fail;
	while (n > 0 && v[vlen - 1] == '=') {	/* padding decodes to NULs */
		n--;
		vlen--;
	}
	dec[n] = '\0';
	if (memchr(dec, '\0', (size_t)n) != NULL ||
	    (colon = strchr((char *)dec, ':')) == NULL)
		goto fail;
	*colon = '\0';
	a = listener_auth_find(c->l, (char *)dec);
	if (a == NULL || !util_timingsafe_eq(colon + 1, strlen(colon + 1),
	    a->token, a->token_len))
		goto fail;
	c->sandbox = a->user;
	util_wipe(dec, sizeof(dec));
	return 0;
 fail:
	util_wipe(dec, sizeof(dec));
	http_denied(c, POLICY_R_AUTH, "this listener needs Proxy-Authorization"
	    " (Basic, user = identity, password = its token)");
	return -1;
}

/* ------------------------------------------------------------------ */
/* Upstream side                                                        */
/* ------------------------------------------------------------------ */

/* The reply that opens a CONNECT tunnel. */
static void
http_tunnel_reply(struct conn *c)
{
	EVBUFFER_ADD_LIT(io_out(c->cio),
	    "HTTP/1.1 200 Connection established\r\n\r\n");
}

/* A forward request's upstream is connected: send the request. */
static void
http_connected(struct conn *c, int ufd)
{
	char	e[256];
	SSL	*ssl;

	if (ufd == -1)		/* c->uio came from the worker's pool */
		io_set_cb(c->uio, http_upstream_event, c);
	else if ((c->uio = io_new(c->w->base, ufd, http_upstream_event, c)) ==
	    NULL) {
		close(ufd);
		http_denied(c, POLICY_R_INTERNAL, "out of memory");
		return;
	}
	/* A reconnect inside an inspected TLS tunnel: TLS upstream too. */
	if (ufd != -1 && c->tun.inspected && c->tun.tls_client) {
		ssl = tls_client_ssl(c->tun.tls, c->tun.up_tls_host, c->tun.up_tls_is_addr,
		    c->port, e, sizeof(e));
		if (ssl == NULL || io_start_tls(c->uio, ssl) == -1) {
			http_denied(c, POLICY_R_TLS, ssl ? "out of memory" : e);
			return;
		}
	}
	memcpy(c->http.up_host, c->host, sizeof(c->http.up_host));
	memcpy(c->http.up_ip, c->ip, sizeof(c->http.up_ip));
	c->http.up_port = c->port;
	c->http.up_reused = ufd == -1;	/* may have closed meanwhile: retry */
	http_send_request(c);
}

/*
 * Appends a message's fields minus hop-by-hop ones, and minus those the
 * rule's injections replace.  With secrets in play (c->http.inj) each value
 * goes through the rewriter of its direction (dir: CONN_XFORM_*).
 * Returns 0, or -1 if a value leaks a secret (requests only).
 */
static int
http_add_fields(struct conn *c, int dir, struct evbuffer *out,
    const struct http_header *hv, size_t n)
{
	int		 ci, rc;
	size_t		 i, vlen;
	const char	*conn_val = NULL, *v;
	size_t		 conn_len = 0;

	ci = http_header_find(hv, n, 0, "connection");
	if (ci >= 0) {
		conn_val = hv[ci].value;
		conn_len = hv[ci].value_len;
	}
	for (i = 0; i < n; i++) {
		char name[128];

		if (http_is_hop_by_hop(hv[i].name, hv[i].name_len))
			continue;
		if (conn_val != NULL && hv[i].name_len < sizeof(name)) {
			memcpy(name, hv[i].name, hv[i].name_len);
			name[hv[i].name_len] = '\0';
			if (http_list_has_token(conn_val, conn_len, name))
				continue;
		}
		v = hv[i].value;
		vlen = hv[i].value_len;
		if (c->http.inj != NULL) {
			if (dir == CONN_XFORM_REQUEST) {
				if (inject_overrides(c->http.inj, hv[i].name,
				    hv[i].name_len))
					continue;
				if (inject_strips_range(c->http.inj) &&
				    http_is_range(hv[i].name, hv[i].name_len))
					continue;
				rc = inject_request_field(c->http.inj,
				    hv[i].name, hv[i].name_len, hv[i].value,
				    hv[i].value_len, &v, &vlen);
			} else
				rc = inject_response_bytes(c->http.inj,
				    hv[i].value, hv[i].value_len, &v, &vlen);
			if (rc == -1)
				return -1;
		}
		evbuffer_add(out, hv[i].name, hv[i].name_len);
		EVBUFFER_ADD_LIT(out, ": ");
		evbuffer_add(out, v, vlen);
		EVBUFFER_ADD_LIT(out, "\r\n");
	}
	return 0;
}

/* Range and If-Range (RFC 9110 §14.2, §13.1.5). */
static bool
http_is_range(const char *name, size_t len)
{
	return (len == LIT_LEN("range") && STRNCASECMP_LIT(name, "range") == 0) ||
	    (len == LIT_LEN("if-range") &&
	    STRNCASECMP_LIT(name, "if-range") == 0);
}

/*
 * Fields that belong to one connection (RFC 9110 §7.6.1) and those moatd
 * always rewrites itself (Host, framing, proxy credentials).
 */
static int
http_is_hop_by_hop(const char *name, size_t len)
{
	static const char *const hop[] = {
		"connection", "keep-alive", "proxy-connection",
		"proxy-authorization", "proxy-authenticate", "te", "trailer",
		"transfer-encoding", "upgrade", "host", "content-length", NULL
	};
	size_t	i;

	for (i = 0; hop[i] != NULL; i++)
		if (strlen(hop[i]) == len && strncasecmp(hop[i], name, len) == 0)
			return 1;
	return 0;
}

/*
 * A request that would carry a secret where it is not bound, or a bound
 * secret's value where it would change the request's framing.
 */
static void
http_leak(struct conn *c)
{
	char		 d[400], hbuf[320];
	const char	*why;

	if ((why = inject_unsafe(c->http.inj)) != NULL) {
		snprintf(d, sizeof(d), "secret %s not sent: %s",
		    inject_leak_name(c->http.inj), why);
		log_info("conn=%llu secret-unsafe: %s to %s:%u refused",
		    (unsigned long long)c->id, inject_leak_name(c->http.inj),
		    conn_log_redact(c, c->host, hbuf, sizeof(hbuf)), c->port);
		http_denied(c, POLICY_R_SECRET_UNSAFE, d);
		return;
	}
	if (c->dec.would_deny != POLICY_R_ALLOWED)
		snprintf(d, sizeof(d), "the request carries the secret %s (its "
		    "value or the sandbox's placeholder); in audit mode a "
		    "request the policy would refuse (%s) goes out only "
		    "without secrets", inject_leak_name(c->http.inj),
		    policy_reason_str(c->dec.would_deny));
	else
		snprintf(d, sizeof(d), "the request carries the secret %s (its "
		    "value or the sandbox's placeholder), which is not bound "
		    "to this host", inject_leak_name(c->http.inj));
	metrics_secret_leak(inject_leak_name(c->http.inj));
	log_info("conn=%llu secret-leak: %s to %s:%u refused",
	    (unsigned long long)c->id, inject_leak_name(c->http.inj),
	    conn_log_redact(c, c->host, hbuf, sizeof(hbuf)), c->port);
	http_denied(c, POLICY_R_SECRET_LEAK, d);
}

static void
http_send_request(struct conn *c)
{
	struct http_request_head	*req = &c->http.req;
	struct evbuffer			*out = io_out(c->uio);
	struct evbuffer			*body = NULL;
	enum policy_reason		 why;
	const char			*detail = NULL, *path;
	size_t				 plen, out0 = evbuffer_get_length(out);
	uint64_t			 cl = req->content_length;
	struct inject_req		 rq;

	inject_end(c->http.inj);
	conn_inject_req(c, &rq);
	if ((c->http.inj = inject_begin(&rq, &why, &detail)) == NULL &&
	    why != POLICY_R_ALLOWED && !rq.bare && conn_waive(c, why)) {
		/* Audit mode: the git preset's refusal goes through, bare. */
		conn_inject_req(c, &rq);
		c->http.inj = inject_begin(&rq, &why, &detail);
	}
	if (c->http.inj == NULL && why != POLICY_R_ALLOWED) {
		http_denied(c, why, detail);
		return;
	}
	c->http.reqb.xform = inject_scans_body(c->http.inj) ?
	    CONN_XFORM_REQUEST : CONN_XFORM_NONE;
	c->http.reqb.out_chunked = false;
	if (inject_request_target(c->http.inj, req->path, strlen(req->path),
	    &path, &plen) == -1 || inject_request_host(c->http.inj,
	    req->authority ? req->authority : req->host_header) == -1) {
		http_leak(c);
		return;
	}
	/*
	 * A body whose size may change (placeholders become values): one
	 * that is already here whole is rewritten now and keeps an exact
	 * Content-Length; a longer or later one goes on chunked.
	 */
	if (c->http.reqb.xform && inject_body_may_grow(c->http.inj) &&
	    req->body == HTTP_BODY_LENGTH && cl > 0) {
		if (cl <= c->cfg->limits.body_inspect_bytes &&
		    io_in_len(c->cio) >= cl) {
			const char *nb;
			size_t nl;
			char *raw;

			if ((body = evbuffer_new()) == NULL ||
			    (raw = (char *)evbuffer_pullup(io_in(c->cio),
			    (ssize_t)cl)) == NULL) {
				if (body != NULL)
					evbuffer_free(body);
				http_denied(c, POLICY_R_INTERNAL,
				    "out of memory");
				return;
			}
			if (inject_request_body_bytes(c->http.inj, raw,
			    (size_t)cl, &nb, &nl) == -1) {
				evbuffer_free(body);
				http_leak(c);
				return;
			}
			evbuffer_add(body, nb, nl);
			evbuffer_drain(io_in(c->cio), (size_t)cl);
			c->http.bytes_up += cl;
			c->http.reqb.left = 0;
			c->http.reqb.done = true;
			cl = nl;
		} else
			c->http.reqb.out_chunked = true;
	}

	io_set_cb(c->uio, http_upstream_event, c);
	evbuffer_expand(out, req->head_len + 128);
	eb_str(out, req->method);
	EVBUFFER_ADD_LIT(out, " ");
	evbuffer_add(out, path, plen);
	EVBUFFER_ADD_LIT(out, " HTTP/1.1\r\nHost: ");
	eb_str(out, req->authority ? req->authority : req->host_header);
	EVBUFFER_ADD_LIT(out, "\r\n");
	if (http_add_fields(c, CONN_XFORM_REQUEST, out, req->headers,
	    req->nheaders) == -1 || inject_add_headers(c->http.inj, out,
	    &detail) == -1) {
		evbuffer_drain(out, evbuffer_get_length(out));
		if (body != NULL)
			evbuffer_free(body);
		if (detail != NULL)
			http_denied(c, POLICY_R_SECRET_UNSAFE, detail);
		else
			http_leak(c);
		return;
	}
	if (req->body == HTTP_BODY_CHUNKED || c->http.reqb.out_chunked)
		EVBUFFER_ADD_LIT(out, "Transfer-Encoding: chunked\r\n");
	else if (req->body == HTTP_BODY_LENGTH) {
		EVBUFFER_ADD_LIT(out, "Content-Length: ");
		eb_u64(out, cl);
		EVBUFFER_ADD_LIT(out, "\r\n");
	}
	EVBUFFER_ADD_LIT(out, "Via: 1.1 moat\r\n\r\n");
	if (body != NULL) {
		evbuffer_add_buffer(out, body);
		evbuffer_free(body);
	}
	if ((c->quota.n > 0 || c->http.inj != NULL) &&
	    http_quota(c, out, out0) == -1)
		return;
	inject_sent(c->http.inj);	/* what it carries counts from here */

	conn_enter_state(c, CONN_ST_HTTP_EXCHANGE);
	c->http.up_clean = false;
	c->http.up_scan_state = 0;
	c->http.resp_head_done = false;
	c->m_ttfb_t0 = metrics_clock();
	http_clock_start(c);
	io_read(c->uio, 1);
	http_pump_request(c);
}

/* ------------------------------------------------------------------ */
/* The exchange's clock                                                 */
/* ------------------------------------------------------------------ */

/*
 * One timer serves two deadlines.  The response head is due
 * response_head_ms after the whole request went out (while the client is
 * still uploading, the upstream cannot be blamed for not answering).
 * While a body is being moved, either way, the exchange ends when no byte
 * moved on either socket for idle_body_ms: a stalled upstream or client
 * would otherwise hold both connections as long as it likes.  Progress is
 * read from the sockets' byte counts every quarter of idle_body_ms rather
 * than by re-arming a timer at each read and write, which keeps timer
 * calls off the data path; a stall is seen after 1 to 1.25 times
 * idle_body_ms.
 */
static uint64_t
http_xfer_bytes(struct conn *c)
{
	uint64_t	in, out, sum;

	io_counts(c->cio, &in, &out);
	sum = in + out;
	if (c->uio != NULL) {
		io_counts(c->uio, &in, &out);
		sum += in + out;
	}
	return sum;
}

static bool
http_body_moving(const struct conn *c)
{
	return !c->http.reqb.done || (c->http.resp_head_done && !c->http.respb.done);
}

/* Arms the timer for whichever comes first: the head's due time or the
 * next look at the byte counts. */
static void
http_clock_arm(struct conn *c)
{
	uint64_t	now = util_now_ms(), next = UINT64_MAX;
	unsigned	tick;

	c->http.xfer_ticking = http_body_moving(c);
	if (c->http.xfer_ticking) {
		tick = c->cfg->timeouts.idle_body_ms / 4;
		next = now + (tick > 0 ? tick : 1);
	}
	if (!c->http.resp_head_done && c->http.head_due != 0 && c->http.head_due < next)
		next = c->http.head_due;
	if (next == UINT64_MAX)
		conn_set_deadline(c, 0);
	else
		conn_set_deadline(c, next > now ? (unsigned)(next - now) : 1);
}

static void
http_clock_start(struct conn *c)
{
	uint64_t	now = util_now_ms();

	c->http.head_due = c->http.reqb.done ? now + c->cfg->timeouts.response_head_ms :
	    0;
	c->http.xfer_bytes = http_xfer_bytes(c);
	c->http.xfer_seen = now;
	http_clock_arm(c);
}

void
http_exchange_timer(struct conn *c)
{
	uint64_t	 now = util_now_ms(), n;
	unsigned	 idle = c->cfg->timeouts.idle_body_ms;
	char		 d[192];
	bool		 up;

	if (!c->http.resp_head_done && c->http.head_due != 0 && now >= c->http.head_due) {
		http_denied(c, POLICY_R_TIMEOUT, "the upstream did not answer "
		    "in time");
		return;
	}
	if (http_body_moving(c)) {
		n = http_xfer_bytes(c);
		if (n != c->http.xfer_bytes) {
			c->http.xfer_bytes = n;
			c->http.xfer_seen = now;
		} else if (now - c->http.xfer_seen >= idle) {
			/* Which side holds it up: the one that neither takes
			 * what is queued for it nor sends. */
			up = !c->http.reqb.done;
			snprintf(d, sizeof(d), "the %s body stalled: %s for %u "
			    "ms (timeouts.idle_body_ms)", up ? "request" :
			    "response", up ? (c->uio != NULL &&
			    io_out_len(c->uio) > 0 ? "the upstream read "
			    "nothing" : "the client sent nothing") :
			    io_out_len(c->cio) > 0 ? "the client read nothing" :
			    "the upstream sent nothing", idle);
			http_abort(c, POLICY_R_TIMEOUT, d);
			return;
		}
	}
	http_clock_arm(c);
}

/* The error http_move_body() reports for a secret in a request body. */
static const char HTTP_ERR_LEAK[] = "secret-leak";

/* Rewritten body bytes on their way out, chunk-framed if need be. */
struct http_emit {
	struct evbuffer	*out;
	bool		 chunked;
};

static void
http_emit(void *arg, const uint8_t *p, size_t n)
{
	struct http_emit	*e = arg;

	if (e->chunked)
		eb_chunk_size(e->out, n);
	evbuffer_add(e->out, p, n);
	if (e->chunked)
		EVBUFFER_ADD_LIT(e->out, "\r\n");
}

/* Moves n data bytes of b from in to out, through the rewriter if any. */
static int
http_move_data(struct conn *c, struct conn_body *b, struct evbuffer *in,
    struct evbuffer *out, size_t n, bool last, bool chunked, const char **err)
{
	struct http_emit	e = { out, chunked };

	if (b->xform == CONN_XFORM_REQUEST) {
		if (inject_body(c->http.inj, in, n, last, http_emit,
		    &e) == -1) {
			*err = inject_leaked(c->http.inj) ? HTTP_ERR_LEAK :
			    "out of memory";
			return -1;
		}
		return 0;
	}
	if (b->xform == CONN_XFORM_RESPONSE) {
		if (inject_response_body(c->http.inj, in, n, last, http_emit,
		    &e) == -1) {
			*err = "out of memory";
			return -1;
		}
		return 0;
	}
	if (b->xform == CONN_XFORM_SIZED) {
		if (inject_response_pass(c->http.inj, in, n, last, out) == -1) {
			*err = "out of memory";
			return -1;
		}
		return 0;
	}
	if (n == 0)
		return 0;
	if (chunked)
		eb_chunk_size(out, n);
	evbuffer_remove_buffer(in, out, n);
	if (chunked)
		EVBUFFER_ADD_LIT(out, "\r\n");
	return 0;
}

/*
 * Moves body bytes from in to out under b's framing.  A chunked body is
 * decoded and re-encoded (extensions and trailers dropped).  Returns 0, or
 * -1 with *err for a framing error.
 */
static int
http_move_body(struct conn *c, struct conn_body *b, struct evbuffer *in,
    struct evbuffer *out, uint64_t *count, const char **err)
{
	size_t	avail, used, n;
	int	rc;

	while (!b->done && (avail = evbuffer_get_length(in)) > 0) {
		switch (b->kind) {
		case HTTP_BODY_LENGTH:
			n = avail < b->left ? avail : (size_t)b->left;
			if (http_move_data(c, b, in, out, n, n == b->left,
			    b->out_chunked, err) == -1)
				return -1;
			b->left -= n;
			*count += n;
			if (b->left == 0) {
				b->done = true;
				if (b->out_chunked)
					EVBUFFER_ADD_LIT(out, "0\r\n\r\n");
			}
			break;
		case HTTP_BODY_CLOSE:
			if (http_move_data(c, b, in, out, avail, false,
			    b->out_chunked, err) == -1)
				return -1;
			*count += avail;
			break;
		case HTTP_BODY_CHUNKED: {
			uint64_t left = http_chunked_data_left(&b->chunked);
			unsigned char *p;

			if (left > 0) {
				n = avail < left ? avail : (size_t)left;
				if (http_move_data(c, b, in, out, n, false,
				    true, err) == -1)
					return -1;
				http_chunked_data_consumed(&b->chunked, n);
				*count += n;
				break;
			}
			/* Framing: feed a window; NEED_MORE eats all of it. */
			n = avail < HTTP_CHUNK_LINE_MAX_BYTES + 2 ? avail :
			    HTTP_CHUNK_LINE_MAX_BYTES + 2;
			if ((p = evbuffer_pullup(in, n)) == NULL) {
				*err = "out of memory";
				return -1;
			}
			rc = http_chunked_feed(&b->chunked, (const char *)p, n,
			    &used, err);
			evbuffer_drain(in, used);
			if (rc == HTTP_INVALID)
				return -1;
			if (rc == HTTP_CHUNKED_DONE) {
				/* What the rewriter held back, then the end. */
				if (http_move_data(c, b, in, out, 0, true,
				    true, err) == -1)
					return -1;
				EVBUFFER_ADD_LIT(out, "0\r\n\r\n");
				b->done = true;
			} else if (rc == HTTP_NEED_MORE && n == avail)
				return 0;
			break;
		}
		default:
			b->done = true;
			break;
		}
	}
	return 0;
}

/*
 * What was just queued for the upstream (out's bytes past from): the
 * secrets put into it take a request of their quotas (quota-secret), and
 * its bytes count against the request's byte quotas (quota-bytes).  A
 * request refused here is cut before those bytes leave: what waits in
 * out is dropped and the client told (429), or cut off if its response
 * has begun.  Returns 0, or -1 after refusing.
 */
static int
http_quota(struct conn *c, struct evbuffer *out, size_t from)
{
	char		why[256] UTIL_NOINIT;
	enum policy_reason r = POLICY_R_QUOTA_SECRET;

	if (inject_quota_take(c->http.inj, why, sizeof(why)) == NULL) {
		if (c->quota.n == 0)
			return 0;	/* no byte quota */
		if (!quota_charge(&c->quota, evbuffer_get_length(out) - from))
			return 0;
		if (conn_waive(c, POLICY_R_QUOTA_BYTES)) {
			/* Audit mode: a would-deny, no longer counted. */
			quota_release(&c->quota);
			return 0;
		}
		quota_why(&c->quota, why, sizeof(why));
		r = POLICY_R_QUOTA_BYTES;
	}
	evbuffer_drain(out, evbuffer_get_length(out));
	http_abort(c, r, why);
	return -1;
}

static void
http_pump_request(struct conn *c)
{
	const char	*err = NULL;
	/* What this call queues, for the quotas (none: not measured). */
	size_t		 out0 = c->quota.n > 0 ?
			    evbuffer_get_length(io_out(c->uio)) : 0;

	if (!c->http.reqb.done && http_move_body(c, &c->http.reqb, io_in(c->cio),
	    io_out(c->uio), &c->http.bytes_up, &err) == -1) {
		if (err == HTTP_ERR_LEAK) {
			/* The upstream saw part of the body; it never gets
			 * the rest (the connection goes). */
			if (!c->http.resp_head_done || c->http.resp_held)
				http_leak(c);
			else
				http_abort(c, POLICY_R_SECRET_LEAK,
				    inject_leak_name(c->http.inj));
			return;
		}
		http_abort(c, POLICY_R_BAD_REQUEST, err);
		return;
	}
	if ((c->quota.n > 0 || c->http.inj != NULL) &&
	    http_quota(c, io_out(c->uio), out0) == -1)
		return;
	if (io_flush(c->uio) == -1) {
		http_upstream_lost(c, "writing the request failed");
		return;
	}
	if (c->http.reqb.done) {
		/* Later (pipelined) bytes wait for the next request. */
		conn_hold_input(c);
		if (c->http.respb.done && c->http.resp_head_done) {
			http_finish(c);
			return;
		}
		if (c->http.head_due == 0 && !c->http.resp_head_done) {
			/* The request is out: the head is due from now. */
			c->http.head_due = util_now_ms() +
			    c->cfg->timeouts.response_head_ms;
			http_clock_arm(c);
		}
		return;
	}
	if (io_eof(c->cio) && io_in_len(c->cio) == 0) {
		http_abort(c, POLICY_R_BAD_REQUEST, "client closed in the middle "
		    "of the request body");
		return;
	}
	if (io_out_len(c->uio) > HTTP_BUF_HIGH_BYTES) {
		io_read(c->cio, 0);
		io_want_drained(c->uio, HTTP_BUF_LOW_BYTES);
	} else
		io_read(c->cio, 1);
}

void
http_upstream_event(struct io *io, int ev, void *arg)
{
	struct conn	*c = arg;

	if (ev & IO_EV_TLS_UP)
		return;		/* queued request bytes follow by themselves */
	if (c->state != CONN_ST_HTTP_EXCHANGE) {
		/* An idle kept connection spoke or closed: drop it. */
		io_free(c->uio);
		c->uio = NULL;
		return;
	}
	if (ev & IO_EV_READ) {
		http_read_response(c);
		return;
	}
	if (ev & IO_EV_DRAINED) {
		if (!c->http.reqb.done)
			io_read(c->cio, 1);
		return;
	}
	if ((ev & IO_EV_EOF) && c->http.resp_head_done &&
	    c->http.respb.kind == HTTP_BODY_CLOSE) {
		/* End of a close-delimited body. */
		if (c->http.respb.xform != CONN_XFORM_NONE) {
			const char *err = NULL;

			if (http_move_body(c, &c->http.respb, io_in(c->uio),
			    io_out(c->cio), &c->http.bytes_down, &err) == -1 ||
			    http_move_data(c, &c->http.respb, io_in(c->uio),
			    io_out(c->cio), 0, true, c->http.respb.out_chunked,
			    &err) == -1) {
				http_abort(c, POLICY_R_INTERNAL, err);
				return;
			}
			if (c->http.respb.out_chunked)
				EVBUFFER_ADD_LIT(io_out(c->cio), "0\r\n\r\n");
			if (io_flush(c->cio) == -1) {
				http_abort(c, POLICY_R_BAD_REQUEST, "writing to "
				    "the client failed");
				return;
			}
		}
		c->http.respb.done = true;
		c->http.upstream_keepalive = false;
		c->http.client_keepalive = false;
		io_read(c->uio, 0);
		http_finish(c);
		return;
	}
	if ((ev & IO_EV_ERROR) && io_tls_error(io) != NULL &&
	    !c->http.resp_head_done) {
		char d[200];

		snprintf(d, sizeof(d), "upstream %s", io_tls_error(io));
		http_denied(c, POLICY_R_TLS, d);
		return;
	}
	http_upstream_lost(c, ev & IO_EV_EOF ? "upstream closed the "
	    "connection" : "upstream connection failed");
}

/*
 * The upstream went away mid-exchange.  A reused keep-alive connection
 * that closed before answering a bodyless idempotent request is retried
 * once on a new connection (RFC 9112 §9.3.1); otherwise the client gets a
 * 502 if nothing of the response reached it yet, or is cut off.
 */
static void
http_upstream_lost(struct conn *c, const char *what)
{
	const char	*m = c->http.req.method;

	if (c->http.up_reused && !c->http.resp_head_done && c->http.up_scan_state == 0 &&
	    c->http.req.body == HTTP_BODY_NONE && (strcmp(m, "GET") == 0 ||
	    strcmp(m, "HEAD") == 0 || strcmp(m, "OPTIONS") == 0)) {
		io_free(c->uio);
		c->uio = NULL;
		c->http.up_reused = false;
		conn_route(c);
		return;
	}
	if (!c->http.resp_head_done || c->http.resp_held) {
		http_denied(c, POLICY_R_UPSTREAM_UNREACHABLE, what);
		return;
	}
	http_abort(c, POLICY_R_UPSTREAM_UNREACHABLE, what);
}

static void
http_read_response(struct conn *c)
{
	struct evbuffer		*in = io_in(c->uio);
	struct http_limits	 lim;
	const char		*err = NULL;
	size_t			 len, head_len;
	unsigned char		*p;
	int			 rc;

	if (c->m_ttfb_t0 != 0 && evbuffer_get_length(in) > 0)
		metrics_observe(METRICS_H_TTFB, &c->m_ttfb_t0);
	while (!c->http.resp_head_done) {
		len = evbuffer_get_length(in);
		if (len == 0)
			return;
		http_limits(c, &lim);
		lim.line_max = lim.head_max;	/* long reason phrases happen */
		if (len > lim.head_max + 1)
			len = lim.head_max + 1;
		if ((p = evbuffer_pullup(in, len)) == NULL) {
			http_abort(c, POLICY_R_INTERNAL, "out of memory");
			return;
		}
		rc = http_head_scan((const char *)p, len, &lim,
		    &c->http.up_scan_state, &head_len, &err);
		if (rc == HTTP_NEED_MORE)
			return;
		if (rc == HTTP_OK)
			rc = http_response_head_parse((const char *)p, head_len,
			    &lim, c->http.req.method, &c->http.resp, &err);
		if (rc != HTTP_OK) {
			char d[160];

			snprintf(d, sizeof(d), "malformed response from "
			    "upstream: %s", err ? err : "?");
			c->http.upstream_keepalive = false;
			http_denied(c, POLICY_R_UPSTREAM_UNREACHABLE, d);
			return;
		}
		evbuffer_drain(in, head_len);
		c->http.up_scan_state = 0;
		if (c->http.resp.status >= 100 && c->http.resp.status < 200) {
			if (c->http.resp.status == 101) {
				http_response_head_free(&c->http.resp);
				http_denied(c, POLICY_R_UPSTREAM_UNREACHABLE,
				    "upstream switched protocols, which moat "
				    "does not forward");
				return;
			}
			/* Interim answers: pass on 100 Continue, drop the rest. */
			if (c->http.resp.status == 100 && c->http.req.expect_continue &&
			    !c->http.sent_100) {
				EVBUFFER_ADD_LIT(io_out(c->cio), "HTTP/1.1 100 Continue\r\n\r\n");
				c->http.sent_100 = true;
			}
			http_response_head_free(&c->http.resp);
			continue;
		}
		http_response_begin(c);
		if (!c->http.resp_held && http_write_response_head(c) == -1)
			return;
	}
	http_pump_response(c);
}

/*
 * The response head was read: the body's framing towards the client.
 * A response of a host a secret is bound to is scanned for echoed
 * values, and keeps its framing: a Content-Length body of at most
 * limits.body_inspect_bytes is read whole before the head goes out
 * (values become placeholders, the new length is sent), a longer one
 * goes on with the length the upstream gave (values become as many "*"
 * bytes), a chunked or close-delimited one goes on as it came (values
 * become placeholders).  Any other response is not scanned at all.
 */
static void
http_response_begin(struct conn *c)
{
	struct http_response_head	*r = &c->http.resp;

	c->http.resp_head_done = true;
	c->http.status = r->status;
	/* The timer stays: a body that is not moved whole at once starts
	 * the body clock (http_pump_response). */
	c->http.respb.kind = r->body;
	c->http.respb.left = r->content_length;
	c->http.respb.done = r->body == HTTP_BODY_NONE ||
	    (r->body == HTTP_BODY_LENGTH && r->content_length == 0);
	http_chunked_init(&c->http.respb.chunked);
	c->http.respb.out_chunked = false;
	c->http.respb.xform = CONN_XFORM_NONE;
	c->http.upstream_keepalive = r->keep_alive && r->body != HTTP_BODY_CLOSE;
	if (r->body == HTTP_BODY_CLOSE || !c->http.reqb.done)
		c->http.client_keepalive = false;
	if (c->w->draining)
		c->http.client_keepalive = false;
	c->http.resp_scan = inject_response_begin(c->http.inj);
	c->http.resp_held = false;
	if (!c->http.resp_scan || c->http.respb.done)
		return;
	if (r->body != HTTP_BODY_LENGTH)
		c->http.respb.xform = CONN_XFORM_RESPONSE;
	else if (r->content_length <= c->cfg->limits.body_inspect_bytes)
		c->http.resp_held = true;
	else
		c->http.respb.xform = CONN_XFORM_SIZED;
}

/*
 * A held response (http_response_begin()) whose body is all here: the
 * body scrubbed whole, then the head with its length, then the body.
 * Returns 0 (sent), 1 (more to come), or -1 after aborting.
 */
static int
http_release_held(struct conn *c)
{
	struct evbuffer	*in = io_in(c->uio), *out = io_out(c->cio);
	uint64_t	 cl = c->http.respb.left;
	const char	*nb;
	size_t		 nl;
	unsigned char	*raw;

	if (evbuffer_get_length(in) < cl)
		return 1;
	if ((raw = evbuffer_pullup(in, (ev_ssize_t)cl)) == NULL ||
	    inject_response_bytes(c->http.inj, (const char *)raw, (size_t)cl,
	    &nb, &nl) == -1) {
		http_abort(c, POLICY_R_INTERNAL, "out of memory");
		return -1;
	}
	c->http.resp.content_length = nl;
	c->http.resp_held = false;
	if (http_write_response_head(c) == -1)
		return -1;
	if (nb == (const char *)raw)
		evbuffer_remove_buffer(in, out, (size_t)cl);
	else {
		evbuffer_add(out, nb, nl);
		evbuffer_drain(in, (size_t)cl);
	}
	c->http.bytes_down += cl;
	c->http.respb.left = 0;
	c->http.respb.done = true;
	return 0;
}

static int
http_write_response_head(struct conn *c)
{
	struct http_response_head	*r = &c->http.resp;
	struct evbuffer			*out = io_out(c->cio);
	const char			*reason;
	size_t				 rlen;

	/* The reason phrase is the upstream's text too: scrubbed alike. */
	reason = r->reason;
	rlen = strlen(reason);
	if (c->http.inj != NULL && inject_response_bytes(c->http.inj,
	    r->reason, rlen, &reason, &rlen) == -1) {
		http_abort(c, POLICY_R_INTERNAL, "out of memory");
		return -1;
	}
	evbuffer_expand(out, r->head_len + 64);
	EVBUFFER_ADD_LIT(out, "HTTP/1.1 ");
	eb_u64(out, (uint64_t)r->status);
	EVBUFFER_ADD_LIT(out, " ");
	evbuffer_add(out, reason, rlen);
	EVBUFFER_ADD_LIT(out, "\r\n");
	if (http_add_fields(c, CONN_XFORM_RESPONSE, out, r->headers,
	    r->nheaders) == -1) {
		/* Part of the head may be queued: the client is cut off. */
		http_abort(c, POLICY_R_INTERNAL, "out of memory");
		return -1;
	}
	if (r->body == HTTP_BODY_LENGTH ||
	    (r->body == HTTP_BODY_NONE && r->content_length > 0 &&
	    strcmp(c->http.req.method, "HEAD") == 0)) {
		EVBUFFER_ADD_LIT(out, "Content-Length: ");
		eb_u64(out, r->content_length);
		EVBUFFER_ADD_LIT(out, "\r\n");
	} else if (r->body == HTTP_BODY_CHUNKED)
		EVBUFFER_ADD_LIT(out, "Transfer-Encoding: chunked\r\n");
	if (!c->http.client_keepalive)
		EVBUFFER_ADD_LIT(out, "Connection: close\r\n");
	else if (c->http.req.version_minor == 0)
		EVBUFFER_ADD_LIT(out, "Connection: keep-alive\r\n");
	EVBUFFER_ADD_LIT(out, "\r\n");
	return 0;
}

static void
http_pump_response(struct conn *c)
{
	const char	*err = NULL;

	if (c->http.resp_held) {
		switch (http_release_held(c)) {
		case -1:
			return;
		case 1:
			if (!c->http.xfer_ticking)
				http_clock_arm(c);
			return;
		default:
			break;
		}
	}
	if (!c->http.respb.done && http_move_body(c, &c->http.respb, io_in(c->uio),
	    io_out(c->cio), &c->http.bytes_down, &err) == -1) {
		char d[160];

		snprintf(d, sizeof(d), "malformed response body from "
		    "upstream: %s", err ? err : "?");
		http_abort(c, POLICY_R_UPSTREAM_UNREACHABLE, d);
		return;
	}
	if (io_flush(c->cio) == -1) {
		http_abort(c, POLICY_R_BAD_REQUEST, "writing to the client "
		    "failed");
		return;
	}
	if (c->http.respb.done) {
		if (evbuffer_get_length(io_in(c->uio)) > 0)
			c->http.upstream_keepalive = false;	/* junk after body */
		if (c->http.reqb.done) {
			http_finish(c);
			return;
		}
		/* Early answer (e.g. 413) before the whole request body:
		 * neither connection can be reused. */
		c->http.upstream_keepalive = false;
		c->http.client_keepalive = false;
		http_finish(c);
		return;
	}
	if (!c->http.xfer_ticking)
		http_clock_arm(c);
	if (io_out_len(c->cio) > HTTP_BUF_HIGH_BYTES) {
		io_read(c->uio, 0);
		io_want_drained(c->cio, HTTP_BUF_LOW_BYTES);
	}
}

/* The response is complete: audit, then keep or close each side. */
static void
http_finish(struct conn *c)
{
	conn_audit(c, "request", POLICY_ALLOW, POLICY_R_ALLOWED, NULL);
	if (c->uio != NULL && (!c->http.upstream_keepalive || !c->http.reqb.done)) {
		io_free(c->uio);
		c->uio = NULL;
	}
	if (c->uio != NULL) {
		io_read(c->uio, 1);	/* notice if the idle upstream closes */
		c->http.up_idle_since = util_now_ms();
		c->http.up_clean = true;
		/* The client is leaving: the next one may use it. */
		if (!c->http.client_keepalive)
			conn_release_upstream(c);
	}
	if (c->http.client_keepalive && !io_eof(c->cio)) {
		http_start(c);
		return;
	}
	http_flush_close(c);
}

/*
 * The exchange cannot continue.  Before any response byte reached the
 * client it still gets a proper reply; after, the only honest signal is to
 * cut the connection.
 */
static void
http_abort(struct conn *c, enum policy_reason reason, const char *detail)
{
	if (!c->http.resp_head_done || c->http.resp_held) {
		http_denied(c, reason, detail);
		return;
	}
	conn_audit(c, "request", POLICY_ALLOW, reason, detail);
	conn_close(c, reason, detail);
}

static void
http_policy_target(const struct conn *c, struct policy_target *t)
{
	const struct http_request_head	*req = &c->http.req;

	t->method = req->method;
	t->path = req->path;
	t->req = 0;
	if (req->body == HTTP_BODY_CHUNKED || (req->body == HTTP_BODY_LENGTH &&
	    req->content_length > 0))
		t->req |= POLICY_REQ_BODY;
	if (http_request_has_override(req))
		t->req |= POLICY_REQ_OVERRIDE;
}

/* The method, path and flags of a forward request; a CONNECT has none. */
static void
http_target(const struct conn *c, struct policy_target *t)
{
	if (c->kind == CONN_KIND_HTTP)
		http_policy_target(c, t);
}

/*
 * The name of a forward request was allowed: the rule's refusals that
 * need no upstream, before anything is resolved or dialled.
 */
static int
http_judged(struct conn *c)
{
	enum policy_reason	 why;
	const char		*detail;
	struct inject_req	 rq;
	unsigned		 protos = policy_rule_protocols(c->dec.rule);
	char			 qwhy[256] UTIL_NOINIT;

	if (c->kind != CONN_KIND_HTTP)
		return 0;
	if (!c->tun.inspected && (protos & ~POLICY_PROTO_HTTP) != 0 &&
	    (protos & POLICY_PROTO_HTTP) == 0 &&
	    !conn_waive(c, POLICY_R_PROTOCOL)) {
		/* A forward request is http: the rule must list it. */
		http_denied(c, POLICY_R_PROTOCOL, "the rule's \"protocols\" "
		    "does not list http");
		return -1;
	}
	conn_inject_req(c, &rq);
	if (inject_precheck(&rq, &why, &detail) == -1 &&
	    !conn_waive(c, why)) {
		http_denied(c, why, detail);
		return -1;
	}
	if (inject_quota_room(&rq, qwhy, sizeof(qwhy)) == -1) {
		http_denied(c, POLICY_R_QUOTA_SECRET, qwhy);
		return -1;
	}
	return 0;
}

static void
http_timeout(struct conn *c)
{
	switch (c->state) {
	case CONN_ST_HTTP_HEAD:
		if (io_in_len(c->cio) == 0) {
			/* Idle keep-alive connection: nothing to report. */
			conn_close(c, POLICY_R_TIMEOUT, NULL);
			return;
		}
		http_head_timeout(c);
		return;
	case CONN_ST_HTTP_EXCHANGE:
		http_exchange_timer(c);
		return;
	default:
		conn_close(c, POLICY_R_TIMEOUT, NULL);
		return;
	}
}

const struct conn_ops http_conn_ops = {
	.name = "http",
	.start = http_start,
	.target = http_target,
	.judged = http_judged,
	.tunnel_reply = http_tunnel_reply,
	.exchange = http_connected,
	.denied = http_denied_code,
	.timeout = http_timeout,
};
