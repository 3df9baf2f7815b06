/*
 * intercept.c - inspected tunnels: the start of TLS interception.
 *
 * A tunnel (CONNECT, SOCKS5, transparent) whose rule must see the
 * requests (methods, paths, injected secrets, git preset, "intercept":
 * true) is not spliced.  moatd looks at the client's first bytes:
 *  - a TLS ClientHello: its server name, if any, must be the tunnel's host
 *    (a tunnel to A cannot carry a TLS session for B); moatd answers with
 *    a leaf for that host signed by its CA, and opens its own TLS session
 *    to the upstream, verified against the trusted roots;
 *  - an SSH identification string: refused (needs-inspection): ssh
 *    cannot be read, and waiting for HTTP would only time out;
 *  - anything else: plain HTTP inside the tunnel.
 * From then on the HTTP engine (http.c) reads origin-form requests from
 * the client, checks each Host against the tunnel's host, judges each
 * request, and forwards it over the tunnel's upstream connection.
 *
 * Not here: the TLS contexts (tls.c), the TLS byte moving (io.c), the
 * HTTP exchange (http.c).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "policy/policy.h"
#include "proxy/audit.h"
#include "proxy/conn.h"
#include "proxy/io.h"
#include "proxy/log.h"
#include "proxy/proto_peek.h"
#include "proxy/tls.h"
#include "proxy/tls_parse.h"
#include "proxy/util.h"
#include "proxy/worker.h"

static void	intercept_client_event(struct io *io, int ev, void *arg);
static void	intercept_peek(struct conn *c);
static void	intercept_fail(struct conn *c, enum policy_reason reason,
		    const char *detail);
static int	intercept_protocol_ok(struct conn *c, unsigned proto);

int
intercept_possible(const struct conn *c)
{
	return c->w->tls != NULL && (c->dec.flags & POLICY_F_OPAQUE) == 0;
}

int
intercept_name_denied(const struct conn *c, const char *name,
    const char *method, const char *path, struct policy_decision *d)
{
	struct policy_target	t;

	memset(&t, 0, sizeof(t));
	t.name = name;
	t.addr = &c->tun.target.addr;
	t.port = c->tun.port;
	t.method = method;
	t.path = path;
	if (policy_decide(conn_policy(c), &t, d) == POLICY_ALLOW)
		return 0;
	/*
	 * With a name, an IP rule never allows: only a refusal that names
	 * this host (a deny rule, a metadata name) overrides the address's
	 * verdict.  Not private-address: the address was judged already,
	 * and a special-purpose name's own verdict ("localhost") is about
	 * where it would resolve, while nothing is resolved here.
	 */
	switch (d->reason) {
	case POLICY_R_DENIED_BY_RULE:
	case POLICY_R_METADATA:
		return -1;
	default:
		return 0;
	}
}

const char *
intercept_refusal(const struct conn *c)
{
	if (c->dec.flags & POLICY_F_OPAQUE)
		return "the rule that allows this host must see the requests "
		    "inside the tunnel (methods, paths, injection or git), "
		    "but it says \"intercept\": false";
	return "the rule that allows this host must see the requests inside "
	    "the tunnel, and no CA is configured for TLS interception";
}

void
intercept_start(struct conn *c, int ufd)
{
	conn_audit(c, "open", POLICY_ALLOW, POLICY_R_ALLOWED,
	    "inspected: moatd reads the requests inside");
	if (ufd == -1)		/* a pooled TLS upstream is already c->uio */
		io_set_cb(c->uio, http_upstream_event, c);
	else if ((c->uio = io_new(c->w->base, ufd, http_upstream_event, c)) ==
	    NULL) {
		close(ufd);
		conn_close(c, POLICY_R_INTERNAL, "out of memory");
		return;
	}
	io_read(c->uio, 1);	/* notice an upstream that closes early */
	memcpy(c->http.up_host, c->host, sizeof(c->http.up_host));
	memcpy(c->http.up_ip, c->ip, sizeof(c->http.up_ip));
	c->http.up_port = c->port;
	c->http.up_idle_since = util_now_ms();
	c->tun.via = c->kind;
	c->tun.inspected = true;
	/* What flows inside is HTTP, whichever protocol opened the tunnel. */
	c->ops = &http_conn_ops;
	c->tun.target = c->target;
	memcpy(c->tun.host, c->host, sizeof(c->tun.host));
	c->tun.port = c->port;
	if (io_flush(c->cio) == -1) {
		conn_close(c, POLICY_R_BAD_REQUEST, "write failed");
		return;
	}
	c->tun.open = true;
	c->tun.t_start = util_now_ms();
	io_counts(c->cio, &c->tun.in0, &c->tun.out0);
	snprintf(c->tun.rule, sizeof(c->tun.rule), "%s", c->dec.rule_name ?
	    c->dec.rule_name : "");
	memcpy(c->tun.ip, c->ip, sizeof(c->tun.ip));
	io_set_cb(c->cio, intercept_client_event, c);
	conn_enter_state(c, CONN_ST_INTERCEPT_PEEK);
	conn_set_deadline(c, c->cfg->timeouts.request_head_ms);
	io_read(c->cio, 1);
	if (io_in_len(c->cio) > 0)
		intercept_peek(c);
}

void
intercept_timeout(struct conn *c)
{
	conn_audit(c, "request", POLICY_DENY, POLICY_R_TIMEOUT,
	    c->state == CONN_ST_TLS_HANDSHAKE ? "the client's TLS handshake "
	    "did not finish in time" : "the client sent nothing into the "
	    "inspected tunnel in time");
	conn_close(c, POLICY_R_TIMEOUT, NULL);
}

static void
intercept_client_event(struct io *io, int ev, void *arg)
{
	struct conn	*c = arg;

	switch (c->state) {
	case CONN_ST_INTERCEPT_PEEK:
		if (ev & IO_EV_READ) {
			intercept_peek(c);
			return;
		}
		if (ev & IO_EV_DRAINED)
			return;
		conn_close(c, POLICY_R_ALLOWED, "client left an inspected "
		    "tunnel before sending anything");
		return;
	case CONN_ST_TLS_HANDSHAKE:
		if (ev & IO_EV_TLS_UP) {
			http_start(c);
			return;
		}
		if (ev & (IO_EV_READ | IO_EV_DRAINED))
			return;
		/* Usually: the client does not trust moat's CA. */
		intercept_fail(c, POLICY_R_TLS, io_tls_error(io) ?
		    io_tls_error(io) : "the client ended the TLS handshake");
		return;
	default:
		conn_close(c, POLICY_R_INTERNAL, "intercept event in a foreign "
		    "state");
		return;
	}
}

/*
 * The client's first bytes decide: TLS (terminate it) or plain HTTP.
 */
static void
intercept_peek(struct conn *c)
{
	struct evbuffer		*in = io_in(c->cio);
	struct tls_client_hello	 hello;
	struct peek_result	 peek;
	struct policy_host	 sni;
	const char		*err = NULL, *leaf_host;
	char			 e[256], addr[64];
	size_t			 len = evbuffer_get_length(in);
	const uint8_t		*p;
	SSL			*ssl;
	int			 rc;

	if (len > TLS_HELLO_MAX_BYTES + 1)
		len = TLS_HELLO_MAX_BYTES + 1;
	if ((p = evbuffer_pullup(in, len)) == NULL) {
		conn_close(c, POLICY_R_INTERNAL, "out of memory");
		return;
	}
	rc = tls_parse_client_hello(p, len, &hello, &err);
	if (rc == TLS_NEED_MORE && len <= TLS_HELLO_MAX_BYTES)
		return;
	/*
	 * An ssh client (its identification string comes first) cannot be
	 * read: refused now, not after timeouts.request_head_ms of waiting
	 * for an HTTP request that never comes.  The config refuses rules
	 * that read requests on port 22 or with "ssh" in "protocols"; this
	 * is ssh elsewhere (port 443, or a deny rule's paths).
	 */
	if (rc == TLS_NOT_TLS && peek_classify(p, len, false, &peek) ==
	    PEEK_P_SSH) {
		intercept_fail(c, POLICY_R_NEEDS_INSPECTION, "the tunnel carries "
		    "ssh, which moatd cannot read, and a rule for this host "
		    "must see the requests inside (methods, paths, inject, git "
		    "or \"intercept\": true): ssh needs a rule of its own, "
		    "without them");
		return;
	}
	if (intercept_protocol_ok(c, rc == TLS_NOT_TLS ? POLICY_PROTO_HTTP :
	    POLICY_PROTO_TLS) == -1)
		return;
	if (rc == TLS_NOT_TLS) {
		/* Plain HTTP inside the tunnel: read it as it is (over a plain
		 * upstream: a pooled TLS one goes, the first request dials). */
		c->tun.tls_client = false;
		if (c->uio != NULL && io_ssl(c->uio) != NULL) {
			io_free(c->uio);
			c->uio = NULL;
		}
		http_start(c);
		return;
	}
	if (rc <= 0) {
		intercept_fail(c, POLICY_R_BAD_REQUEST, err ? err :
		    "malformed TLS ClientHello");
		return;
	}
	leaf_host = c->host;
	c->tun.up_tls_is_addr = c->tun.target.kind == POLICY_HOST_ADDR;
	snprintf(c->tun.up_tls_host, sizeof(c->tun.up_tls_host), "%s", c->host);
	if (hello.has_sni && !hello.sni_is_ip) {
		if (policy_host_normalise(hello.sni, hello.sni_len, &sni,
		    &err) == -1) {
			intercept_fail(c, POLICY_R_BAD_REQUEST, err);
			return;
		}
		if (c->tun.target.kind == POLICY_HOST_NAME &&
		    (sni.kind != POLICY_HOST_NAME ||
		    strcmp(sni.name, c->tun.target.name) != 0)) {
			/* A tunnel judged for A carries no TLS for B. */
			snprintf(e, sizeof(e), "the TLS server name %.100s is "
			    "not the tunnel's host %.100s", sni.name, c->host);
			intercept_fail(c, POLICY_R_BAD_REQUEST, e);
			return;
		}
		if (c->tun.target.kind == POLICY_HOST_ADDR &&
		    sni.kind == POLICY_HOST_NAME) {
			struct policy_decision	d;

			/* A tunnel to an allowed address, TLS for a name at
			 * it: the name is judged too (an IP rule does not
			 * front for a denied host), then presented and
			 * verified. */
			snprintf(c->sni, sizeof(c->sni), "%s", sni.name);
			if (intercept_name_denied(c, sni.name, NULL, NULL,
			    &d) == -1 && !(conn_audit_only(c) &&
			    policy_waive(&d))) {
				c->dec = d;
				snprintf(e, sizeof(e), "the TLS server name %.100s "
				    "is denied, though the tunnel's address "
				    "%.64s is allowed", sni.name, c->host);
				intercept_fail(c, d.reason, e);
				return;
			}
			snprintf(c->tun.up_tls_host, sizeof(c->tun.up_tls_host), "%s",
			    sni.name);
			c->tun.up_tls_is_addr = false;
			leaf_host = c->tun.up_tls_host;
		}
	}
	if (c->tun.target.kind == POLICY_HOST_ADDR && c->tun.up_tls_is_addr) {
		policy_addr_format(&c->tun.target.addr, addr, sizeof(addr));
		leaf_host = addr;
	}
	/* A pooled upstream session was verified for the tunnel's host; TLS
	 * for another name (SNI in a tunnel to an address) needs its own. */
	if (c->uio != NULL && io_ssl(c->uio) != NULL &&
	    strcmp(c->tun.up_tls_host, c->tun.host) != 0) {
		io_free(c->uio);
		c->uio = NULL;		/* the first request dials */
	}
	c->tun.tls = tls_ref(c->w->tls);
	c->tun.tls_client = true;
	if ((ssl = tls_server_ssl(c->tun.tls, leaf_host, e, sizeof(e))) == NULL) {
		intercept_fail(c, POLICY_R_INTERNAL, e);
		return;
	}
	if (io_start_tls(c->cio, ssl) == -1) {
		conn_close(c, POLICY_R_INTERNAL, "out of memory");
		return;
	}
	/* Meanwhile, the upstream side (unless it came from the pool with
	 * its TLS session up, verified for this same name). */
	if (c->uio != NULL && io_ssl(c->uio) == NULL) {
		ssl = tls_client_ssl(c->tun.tls, c->tun.up_tls_host, c->tun.up_tls_is_addr,
		    c->tun.port, e, sizeof(e));
		if (ssl == NULL || io_start_tls(c->uio, ssl) == -1) {
			io_free(c->uio);
			c->uio = NULL;
		}
	}
	conn_enter_state(c, CONN_ST_TLS_HANDSHAKE);
	conn_set_deadline(c, c->cfg->timeouts.tls_handshake_ms);
}

/*
 * An inspected tunnel carries TLS or plain HTTP: the rule's "protocols"
 * must list it.  Returns 0, or -1 after refusing.
 */
static int
intercept_protocol_ok(struct conn *c, unsigned proto)
{
	unsigned	allowed = policy_rule_protocols(c->dec.rule);
	char		e[96], pr[32];

	if (allowed == 0 || (allowed & proto) != 0 ||
	    conn_waive(c, POLICY_R_PROTOCOL))
		return 0;
	snprintf(e, sizeof(e), "the tunnel carries %s; its rule allows only "
	    "%s", proto == POLICY_PROTO_TLS ? "tls" : "http",
	    policy_protocols_format(allowed, pr, sizeof(pr)));
	intercept_fail(c, POLICY_R_PROTOCOL, e);
	return -1;
}

/* The tunnel was allowed, but what is inside cannot be served. */
static void
intercept_fail(struct conn *c, enum policy_reason reason, const char *detail)
{
	conn_set_deadline(c, 0);
	conn_audit(c, "request", POLICY_DENY, reason, detail);
	log_debug("conn=%llu inspected tunnel to %s:%u: %s: %s",
	    (unsigned long long)c->id, c->host, c->port,
	    policy_reason_str(reason), detail);
	conn_close(c, reason, NULL);
}
