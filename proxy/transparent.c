/*
 * transparent.c - connections that nftables redirected to moatd: the
 * sandbox's programs that ignore proxy variables (raw sockets, ssh,
 * database drivers, Go and Java binaries) end up here.
 *
 * The connection is attributed to a name, in this order (DESIGN.md
 * invariant 5):
 *  1. moatd's own DNS answers to this sandbox: the address the client
 *     dialled is one moatd handed out for a name, and it is dialled as is
 *     (it came from moatd's resolution);
 *  2. an IP rule that allows the address itself;
 *  3. the client's first bytes: the TLS ClientHello's SNI, or the HTTP
 *     Host field; then moatd resolves that name itself and dials its own
 *     answer, never the address the client chose.
 * Nothing attributes it: denied.  The connection then judged like any
 * CONNECT tunnel and, when allowed, spliced.
 *
 * Not here: the byte-level parsing of the first bytes (tls_parse.c,
 * http_head.c), routing and dialling (conn.c).
 */
#include "config.h"

#include <sys/socket.h>
#include <netinet/in.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6/ip6_tables.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>

#include "policy/policy.h"
#include "proxy/audit.h"
#include "proxy/conn.h"
#include "proxy/http_parse.h"
#include "proxy/io.h"
#include "proxy/listener.h"
#include "proxy/log.h"
#include "proxy/sandbox.h"
#include "proxy/tls_parse.h"
#include "proxy/util.h"
#include "proxy/worker.h"

static void	transparent_start(struct conn *c);
static void	transparent_denied(struct conn *c, enum policy_reason reason,
		    const char *detail);
static void	transparent_event(struct io *io, int ev, void *arg);
static void	transparent_peek(struct conn *c);
static int	transparent_orig(struct conn *c, char *err, size_t errlen);
static void	transparent_name(struct conn *c, const char *name, size_t len);
static void	transparent_dial(struct conn *c);
static void	transparent_unnamed(struct conn *c, const char *detail);

/*
 * The destination the client dialled, from the conntrack entry of the
 * redirect.  A connection made straight to the transparent port (no
 * redirect) has itself as original destination and is refused: it would
 * make moatd connect to itself.
 */
static int
transparent_orig(struct conn *c, char *err, size_t errlen)
{
	struct sockaddr_storage	 ss, self;
	struct policy_addr	 me;
	socklen_t		 len = sizeof(ss), slen = sizeof(self);
	int			 fd = io_fd(c->cio), rc;

	if (getsockname(fd, (struct sockaddr *)&self, &slen) == -1) {
		snprintf(err, errlen, "getsockname: %s", strerror(errno));
		return -1;
	}
	memset(&ss, 0, sizeof(ss));
	if (self.ss_family == AF_INET)
		rc = getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &ss, &len);
	else if (self.ss_family == AF_INET6)
		rc = getsockopt(fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &ss, &len);
	else {
		snprintf(err, errlen, "not a TCP connection");
		return -1;
	}
	if (rc == -1) {
		snprintf(err, errlen, "no original destination (%s): not a "
		    "redirected connection", strerror(errno));
		return -1;
	}
	if (policy_addr_from_sockaddr((struct sockaddr *)&ss, &c->tp.orig) ==
	    -1) {
		snprintf(err, errlen, "original destination of an unknown "
		    "family");
		return -1;
	}
	c->tp.orig_port = ntohs(ss.ss_family == AF_INET ?
	    ((struct sockaddr_in *)&ss)->sin_port :
	    ((struct sockaddr_in6 *)&ss)->sin6_port);
	if (policy_addr_from_sockaddr((struct sockaddr *)&self, &me) == 0 &&
	    memcmp(&me, &c->tp.orig, sizeof(me)) == 0 &&
	    c->tp.orig_port == ntohs(self.ss_family == AF_INET ?
	    ((struct sockaddr_in *)&self)->sin_port :
	    ((struct sockaddr_in6 *)&self)->sin6_port)) {
		snprintf(err, errlen, "connection made straight to the "
		    "transparent port, not redirected");
		return -1;
	}
	return 0;
}

/*
 * Dials the address the client chose, which a decision just allowed
 * (conn.c refuses a tunnel that needs inspection moatd cannot give).
 */
static void
transparent_dial(struct conn *c)
{
	conn_dial(c, &c->tp.orig, 1);
}

/*
 * Nothing named the destination and no IP rule allows the address:
 * refused (no-rule), but in audit mode the address the client dialled
 * is judged as a tunnel to it would be, and one that only the rules
 * refuse is dialled as a would-deny (never a built-in deny set's).
 */
static void
transparent_unnamed(struct conn *c, const char *detail)
{
	struct policy_target	t;

	conn_set_deadline(c, 0);
	if (conn_audit_only(c)) {
		memset(&t, 0, sizeof(t));
		t.addr = &c->tp.orig;
		t.port = c->tp.orig_port;
		c->target.kind = POLICY_HOST_ADDR;
		c->target.addr = c->tp.orig;
		policy_addr_format(&c->tp.orig, c->host, sizeof(c->host));
		c->port = c->tp.orig_port;
		if (conn_decide(c, &t, &c->dec) == POLICY_ALLOW) {
			transparent_dial(c);
			return;
		}
		transparent_denied(c, c->dec.reason, detail);
		return;
	}
	transparent_denied(c, POLICY_R_NO_RULE, detail);
}

static void
transparent_start(struct conn *c)
{
	struct policy_target	t;
	char			err[160], name[POLICY_NAME_MAX + 1];

	c->kind = CONN_KIND_TRANSPARENT;
	c->t_start = util_now_ms();
	io_set_cb(c->cio, transparent_event, c);
	if (transparent_orig(c, err, sizeof(err)) == -1) {
		log_info("conn=%llu from %s: transparent: %s",
		    (unsigned long long)c->id, c->client, err);
		snprintf(c->host, sizeof(c->host), "-");
		transparent_denied(c, POLICY_R_BAD_REQUEST, err);
		return;
	}
	c->port = c->tp.orig_port;
	policy_addr_format(&c->tp.orig, c->host, sizeof(c->host));
	memset(&t, 0, sizeof(t));
	t.addr = &c->tp.orig;
	t.port = c->port;

	if (audit_refuses(c->cfg)) {
		transparent_denied(c, POLICY_R_AUDIT_UNAVAILABLE,
		    AUDIT_UNAVAILABLE_DETAIL);
		return;
	}
	/* 1. An address moatd's DNS listener gave this sandbox. */
	if (sandbox_attr_find(c->sb, &c->tp.orig, name, sizeof(name)) == 0) {
		c->target.kind = POLICY_HOST_NAME;
		memcpy(c->target.name, name, strlen(name) + 1);
		memcpy(c->host, name, strlen(name) + 1);
		t.name = c->target.name;
		if (conn_decide(c, &t, &c->dec) == POLICY_DENY) {
			transparent_denied(c, c->dec.reason, NULL);
			return;
		}
		transparent_dial(c);
		return;
	}
	/* 2. An IP rule that allows the address itself. */
	if (policy_decide(conn_policy(c), &t, &c->dec) == POLICY_ALLOW &&
	    c->dec.rule != NULL) {
		c->target.kind = POLICY_HOST_ADDR;
		c->target.addr = c->tp.orig;
		transparent_dial(c);
		return;
	}
	/* 3. A name from the client's first bytes. */
	conn_enter_state(c, CONN_ST_PEEK);
	conn_set_deadline(c, c->cfg->timeouts.request_head_ms);
	io_read(c->cio, 1);
}

static void
transparent_event(struct io *io, int ev, void *arg)
{
	struct conn	*c = arg;

	switch (c->state) {
	case CONN_ST_PEEK:
		if (ev & IO_EV_READ) {
			transparent_peek(c);
			return;
		}
		if (ev & IO_EV_DRAINED)
			return;
		transparent_denied(c, POLICY_R_NO_RULE, "the client closed "
		    "before sending anything that names its destination");
		return;
	case CONN_ST_RESOLVING:
	case CONN_ST_CONNECTING:
		conn_wait_event(c, ev);	/* early bytes go first in the tunnel */
		return;
	default:
		conn_close(c, POLICY_R_INTERNAL, "transparent event in a "
		    "foreign state");
		return;
	}
}

/*
 * Looks for a name in what the client sent first: the SNI of a TLS
 * ClientHello or the Host field of an HTTP request.  The bytes stay
 * buffered and go upstream first once the tunnel is open.
 */
static void
transparent_peek(struct conn *c)
{
	struct evbuffer			*in = io_in(c->cio);
	struct tls_client_hello		 hello;
	struct http_request_head	 req;
	struct http_limits		 lim;
	const char			*err = NULL;
	size_t				 len = evbuffer_get_length(in), hl = 0;
	const uint8_t			*p;
	int				 rc;

	if (len > TLS_HELLO_MAX_BYTES + 1)
		len = TLS_HELLO_MAX_BYTES + 1;
	if ((p = evbuffer_pullup(in, len)) == NULL) {
		conn_close(c, POLICY_R_INTERNAL, "out of memory");
		return;
	}
	rc = tls_parse_client_hello(p, len, &hello, &err);
	if (rc == TLS_NEED_MORE && len <= TLS_HELLO_MAX_BYTES)
		return;
	if (rc > 0) {
		if (hello.has_sni && !hello.sni_is_ip) {
			transparent_name(c, hello.sni, hello.sni_len);
			return;
		}
		transparent_unnamed(c, "TLS without a server name (SNI) to "
		    "an address moatd did not hand out");
		return;
	}
	if (rc != TLS_NOT_TLS) {
		transparent_denied(c, POLICY_R_BAD_REQUEST, err ? err :
		    "malformed TLS ClientHello");
		return;
	}
	lim.line_max = c->cfg->limits.request_line_bytes;
	lim.head_max = c->cfg->limits.header_bytes;
	lim.header_count_max = c->cfg->limits.header_count;
	if (len > lim.head_max + 1)
		len = lim.head_max + 1;
	rc = http_head_scan((const char *)p, len, &lim, &c->tp.peek_state, &hl,
	    &err);
	if (rc == HTTP_NEED_MORE)
		return;
	memset(&req, 0, sizeof(req));
	if (rc == HTTP_OK)
		rc = http_request_head_parse((const char *)p, hl, &lim, &req,
		    &err);
	if (rc != HTTP_OK || req.host_header == NULL) {
		http_request_head_free(&req);
		transparent_unnamed(c, "neither TLS with a server name nor "
		    "HTTP with a Host field, to an address moatd did not hand "
		    "out");
		return;
	}
	{
		/* Host: name[:port] or [v6]:port; the port is the dialled one. */
		const char *h = req.host_header, *colon;
		size_t hlen = strlen(h);

		if (h[0] != '[' && (colon = strrchr(h, ':')) != NULL)
			hlen = (size_t)(colon - h);
		transparent_name(c, h, hlen);
	}
	http_request_head_free(&req);
}

/* The client named its destination: judge and dial that name. */
static void
transparent_name(struct conn *c, const char *name, size_t len)
{
	const char	*err = NULL;

	conn_set_deadline(c, 0);
	if (policy_host_normalise(name, len, &c->target, &err) == -1) {
		transparent_denied(c, POLICY_R_BAD_REQUEST, err);
		return;
	}
	if (c->target.kind != POLICY_HOST_NAME) {
		transparent_unnamed(c, "the client named an address, not a "
		    "name, and no IP rule allows it");
		return;
	}
	memcpy(c->host, c->target.name, strlen(c->target.name) + 1);
	/* moatd resolves the name itself and dials its own answer. */
	conn_route(c);
}

static void
transparent_denied(struct conn *c, enum policy_reason reason,
    const char *detail)
{
	conn_set_deadline(c, 0);
	conn_audit(c, "open", POLICY_DENY, reason, detail);
	log_debug("conn=%llu transparent %s:%u denied: %s",
	    (unsigned long long)c->id, c->host, c->port,
	    policy_reason_str(reason));
	conn_close(c, reason, NULL);
}

/* The table's refusal: nothing to answer, the connection is closed. */
static void
transparent_denied_op(struct conn *c, int code, enum policy_reason reason,
    const char *detail)
{
	(void)code;
	transparent_denied(c, reason, detail);
}

static void
transparent_timeout(struct conn *c)
{
	if (c->state != CONN_ST_PEEK) {
		conn_close(c, POLICY_R_TIMEOUT, NULL);
		return;
	}
	if (io_in_len(c->cio) > 0) {
		/* Started to speak, did not finish: a cut, not a server-first
		 * protocol. */
		transparent_denied(c, POLICY_R_TIMEOUT, "the first bytes (a "
		    "TLS ClientHello or an HTTP head) did not arrive whole in "
		    "time (timeouts.request_head_ms)");
		return;
	}
	transparent_unnamed(c, "nothing named the destination in time: no "
	    "DNS answer from moatd, no TLS server name, no HTTP Host (a "
	    "server-first protocol needs an IP rule or moatd's DNS)");
}

/* A transparent tunnel opens with no reply: the client thinks it is
 * already connected. */
const struct conn_ops transparent_conn_ops = {
	.name = "transparent",
	.start = transparent_start,
	.denied = transparent_denied_op,
	.timeout = transparent_timeout,
};
