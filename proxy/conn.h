/*
 * conn.h - a client connection of moatd, from accept to close or to the
 * hand-over to a spliced tunnel.  Private to proxy/: conn.c owns the life
 * cycle and the common close path and calls each protocol (http.c,
 * socks5.c, transparent.c, dns.c) only through its struct conn_ops.
 *
 * Life of a connection (see ARCHITECTURE.md):
 *   accept -> [SNIFF] -> HTTP_HEAD | SOCKS_GREETING -> ... -> target known
 *   -> policy on the name -> RESOLVING -> policy on each address
 *   -> CONNECTING -> CONNECT/SOCKS5: reply, hand over to tunnel.c
 *                 -> forward HTTP: HTTP_EXCHANGE -> back to HTTP_HEAD
 *                    (keep-alive) or close
 * Any failure goes through conn_close(c, reason), which audits once,
 * logs once and frees everything.
 */
#ifndef MOAT_CONN_H
#define MOAT_CONN_H

#include <sys/queue.h>
#include <sys/socket.h>

#include <stdbool.h>
#include <stdint.h>

#include "policy/policy.h"
#include "proxy/http_parse.h"
#include "proxy/quota.h"
#include "proxy/resolver.h"
#include "proxy/trace.h"

struct event;
struct io;
struct listener;
struct inject;
struct inject_req;
struct sandbox;
struct tls;
struct upstream_connect;
struct worker;

enum conn_state {
	CONN_ST_SNIFF = 0,	/* http+socks5 listener: waiting for the first byte */
	CONN_ST_HTTP_HEAD,	/* reading a request head */
	CONN_ST_SOCKS_GREETING,	/* reading the SOCKS5 method list */
	CONN_ST_SOCKS_AUTH,	/* reading RFC 1929 username/password */
	CONN_ST_SOCKS_REQUEST,	/* reading the SOCKS5 request */
	CONN_ST_RESOLVING,	/* waiting for DNS */
	CONN_ST_CONNECTING,	/* upstream connect under way */
	CONN_ST_HTTP_EXCHANGE,	/* forwarding a request and its response */
	CONN_ST_PEEK,		/* transparent: reading first bytes for a name */
	CONN_ST_INTERCEPT_PEEK,	/* inspected tunnel: TLS or plain HTTP inside? */
	CONN_ST_TLS_HANDSHAKE,	/* inspected tunnel: TLS with the client */
	CONN_ST_TUNNEL_PEEK,	/* opaque tunnel: judging its first bytes */
	CONN_ST_DNS_TCP,	/* DNS over TCP: reading and answering queries */
	CONN_ST_REFUSAL,	/* a refused CONNECT answered inside its
				   tunnel (connect_refusal.c) */
	CONN_ST_FLUSH_CLOSE,	/* writing a last reply, then close */
	CONN_ST__COUNT
};

enum conn_kind {
	CONN_KIND_NONE = 0,
	CONN_KIND_HTTP,		/* absolute-form forward request */
	CONN_KIND_CONNECT,	/* HTTP CONNECT tunnel */
	CONN_KIND_SOCKS5,	/* SOCKS5 CONNECT tunnel */
	CONN_KIND_TRANSPARENT,	/* redirected TCP (SO_ORIGINAL_DST) */
	CONN_KIND_DNS		/* DNS over TCP */
};

/* Where a request body or response body stands. */
struct conn_body {
	enum http_body_kind	kind;
	uint64_t		left;		/* LENGTH: bytes still to move */
	struct http_chunked	chunked;	/* CHUNKED: decoder state */
	bool			done;
	bool			out_chunked;	/* sent on with chunked coding */
	int			xform;		/* CONN_XFORM_*: secrets rewrite */
};

#define CONN_XFORM_NONE		0
#define CONN_XFORM_REQUEST	1	/* placeholders, leaks (inject.c) */
#define CONN_XFORM_RESPONSE	2	/* echoed values -> placeholders */
#define CONN_XFORM_SIZED	3	/* echoed values -> "*", the length
					   the client was told kept */

/*
 * Each protocol's state, in a struct of its own.  HTTP's serves forward
 * requests, CONNECT heads and the requests inside inspected tunnels (of
 * any protocol); the tunnel's serves every tunnel, opaque or inspected;
 * SOCKS5's, the transparent listener's and DNS's are exclusive (a
 * connection speaks one of them, chosen at accept) and share a union.
 */
struct http_state {
	size_t			 scan_state;
	struct http_request_head req;
	char			 up_host[POLICY_NAME_MAX + 1]; /* uio's host */
	uint16_t		 up_port;
	char			 up_ip[64];
	struct policy_addr	 up_addr;
	bool			 up_reused;
	bool			 up_clean;	/* uio between exchanges */
	uint64_t		 up_idle_since;	/* ms: kept idle since */
	size_t			 up_scan_state;
	struct http_response_head resp;
	bool			 resp_head_done;
	/* The response is scanned (a secret is bound to the target), and
	 * its head waits until its body is here whole (a Content-Length of
	 * at most limits.body_inspect_bytes): nothing of it has reached
	 * the client yet. */
	bool			 resp_scan;
	bool			 resp_held;
	bool			 sent_100;
	struct conn_body	 reqb;
	struct conn_body	 respb;
	bool			 client_keepalive;
	bool			 upstream_keepalive;
	int			 status;
	uint64_t		 bytes_up;
	uint64_t		 bytes_down;
	unsigned		 nrequests;
	/* HTTP_EXCHANGE's clock (http.c): the response head is due at
	 * head_due (ms, 0: not yet: the request is still going out); a
	 * body being moved stalls when both sockets' byte counts
	 * (xfer_bytes, as last seen) stay put for idle_body_ms. */
	uint64_t		 head_due;
	uint64_t		 xfer_bytes;
	uint64_t		 xfer_seen;	/* ms: when they last changed */
	bool			 xfer_ticking;	/* the body clock runs */
	/* Secrets of the current request (inject.c), or NULL. */
	struct inject		*inj;
	/* The id of moatd's own reply being written (X-Moat-Request-Id,
	 * its audit line), "" otherwise; how many replies it wrote. */
	char			 moat_id[TRACE_MOAT_ID_MAX];
	unsigned		 nreplies;
};

/* A tunnel (CONNECT, SOCKS5, transparent): its guard and inspection. */
struct tunnel_state {
	/* guard.c: a side has spoken; the rest must come in request_head_ms. */
	bool			 spoken;
	uint64_t		 due_ms;	/* guard.c: its deadline */
	uint64_t		 keepalive_at;	/* guard.c: TUNNEL_KEEPALIVE_MS */
	/* Inspected tunnels: moatd reads the HTTP inside. */
	bool			 inspected;	/* requests come from inside */
	bool			 tls_client;	/* ... over TLS that moatd ends */
	enum conn_kind		 via;		/* CONNECT, SOCKS5, TRANSPARENT */
	struct tls		*tls;		/* a reference, with tls_client */
	struct policy_host	 target;	/* the tunnel's host, fixed */
	char			 host[POLICY_NAME_MAX + 1];
	uint16_t		 port;
	char			 up_tls_host[POLICY_NAME_MAX + 1]; /* SNI/verify */
	bool			 up_tls_is_addr;
	/* ... for its "close" audit line: start, rule, address, and the
	 * client socket's byte counts when it opened. */
	bool			 open;
	uint64_t		 t_start;
	uint64_t		 in0, out0;
	char			 rule[72];
	char			 ip[64];
};

struct socks5_state {
	uint8_t			 method;
};

struct transparent_state {
	struct policy_addr	 orig;		/* destination the client dialled */
	uint16_t		 orig_port;
	size_t			 peek_state;
};

struct dns_tcp_state {
	unsigned		 pending;	/* queries being answered */
	bool			 partial;	/* part of a query is in: the
						 * rest is due in
						 * request_head_ms */
};

struct conn_ops;
struct conn_refusal;

struct conn {
	uint64_t		 id;
	struct worker		*w;
	struct listener		*l;		/* a reference */
	struct moat_config	*cfg;		/* reference; refreshed per request */
	uint64_t		 cfg_gen;
	const struct conn_ops	*ops;		/* its protocol */
	enum conn_state		 state;
	enum conn_kind		 kind;
	TAILQ_ENTRY(conn)	 link;

	struct io		*cio;		/* client */
	char			 client[64];	/* peer address for audit/logs */
	struct sandbox		*sb;		/* a reference */
	const char		*sandbox;	/* sb's name, or the auth identity */
	struct event		*timer;		/* deadline of the current phase */
	uint64_t		 t_start;	/* ms, start of request or tunnel */
	/* metrics_clock() at the start of a decision and when the request
	 * went upstream (metrics.h); 0: not measured. */
	uint64_t		 m_decide_t0;
	uint64_t		 m_ttfb_t0;

	/* Target of the current request or tunnel. */
	struct policy_host	 target;	/* normalised host */
	char			 host[POLICY_NAME_MAX + 1]; /* name or address text */
	uint16_t		 port;
	struct policy_decision	 dec;
	struct resolver_query	*rq;
	struct policy_addr	 addrs[RESOLVER_MAX_ADDRS];	/* allowed ones */
	size_t			 naddrs;
	char			 ip[64];	/* address dialled */
	struct upstream_connect	*uc;
	struct io		*uio;		/* upstream, once connected */
	/* The name a tunnel's ClientHello gave when it is not the tunnel's
	 * host (a tunnel to an address), for the audit; "" if none. */
	char			 sni[POLICY_NAME_MAX + 1];

	/* Bytes of an unfinished request head counted against
	 * limits.partial_heads_bytes (conn_head_hold). */
	size_t			 head_held;
	/* The byte quotas the current request or tunnel counts against
	 * (conn_quota_ok); an opaque tunnel takes them over. */
	struct quota_hold	 quota;

	struct http_state	 http;
	struct tunnel_state	 tun;
	/* A refused CONNECT answered inside its tunnel, or NULL. */
	struct conn_refusal	*refusal;
	union {
		struct socks5_state	 socks;
		struct transparent_state tp;
		struct dns_tcp_state	 dns;
	};
};

/*
 * What a protocol does at each step of the life cycle conn.c drives: one
 * table per protocol, chosen at accept from the listener's kind (on an
 * http+socks5 listener, by the client's first byte).  An inspected tunnel
 * hands over to HTTP's table once it opens: what flows inside is HTTP.
 * conn.c calls these and nothing protocol-specific.
 */
struct conn_ops {
	const char	*name;		/* for logs and a refusal at accept */
	/* Begins reading the client's first request or handshake. */
	void		(*start)(struct conn *c);
	/* Sets the request's method, path and flags in t (NULL: none). */
	void		(*target)(const struct conn *c, struct policy_target *t);
	/* The name was allowed: this protocol's refusals that need no
	 * upstream (NULL: none).  0, or -1 after refusing c. */
	int		(*judged)(struct conn *c);
	/* A tunnel is allowed and connected: queues the reply that opens
	 * it on c->cio (NULL: the protocol has none to send). */
	void		(*tunnel_reply)(struct conn *c);
	/* A request's upstream is connected: ufd, or -1 with c->uio taken
	 * from the worker's pool (NULL: the protocol has only tunnels). */
	void		(*exchange)(struct conn *c, int ufd);
	/* Refuses c: audits, answers as the protocol does (code: an HTTP
	 * status instead of the reason's, 0: the reason's) and reads the
	 * next request or closes. */
	void		(*denied)(struct conn *c, int code,
			    enum policy_reason reason, const char *detail);
	/* The deadline of one of the protocol's own states passed. */
	void		(*timeout)(struct conn *c);
	/* c is being closed (NULL: nothing to release). */
	void		(*closing)(struct conn *c);
};

extern const struct conn_ops	http_conn_ops;		/* http.c */
extern const struct conn_ops	socks5_conn_ops;	/* socks5.c */
extern const struct conn_ops	transparent_conn_ops;	/* transparent.c */
extern const struct conn_ops	dns_conn_ops;		/* dns.c */

/* Called by the worker for each accepted socket. */
void	conn_accept(struct worker *w, struct listener *l, int fd,
	    const struct sockaddr *sa, socklen_t salen);
/*
 * A socket accepted only to be closed at once: moatd is out of
 * descriptors (worker.c's spare one made room for it).  Audits an "open"
 * deny, reason internal, with detail, and closes fd.
 */
void	conn_refuse_accepted(struct worker *w, struct listener *l, int fd,
	    const struct sockaddr *sa, socklen_t salen, const char *detail);
/* Worker draining: close c if it is between requests. */
void	conn_drain(struct conn *c);
/* Ends c now (shutdown deadline), auditing it. */
void	conn_abort(struct conn *c);

/* --- used by http.c and socks5.c --------------------------------------- */

/* Ends the connection: audits (if a target was judged), frees all. */
/*
 * Refuses c's request or tunnel through its protocol's table (code: HTTP
 * status, 0: the reason's).
 */
void	conn_fail(struct conn *c, int code, enum policy_reason reason,
	    const char *detail);
/* Whether c's current target is a tunnel (CONNECT, SOCKS5, transparent). */
bool	conn_is_tunnel(const struct conn *c);
/* The audit event of c's refusal: "open" for a tunnel, else "request". */
const char *conn_event(const struct conn *c);
/*
 * A client event while c waits for DNS or its upstream (RESOLVING,
 * CONNECTING), the same in every protocol: early bytes wait (up to
 * CONN_HOLD_MAX_BYTES), a half-close is passed on later, an error ends c.
 */
void	conn_wait_event(struct conn *c, int ev);
void	conn_close(struct conn *c, enum policy_reason reason,
	    const char *detail);
/* Enters a state (logs old -> new at debug level). */
void	conn_enter_state(struct conn *c, enum conn_state st);
/* Arms the phase deadline (0: disarm). */
void	conn_set_deadline(struct conn *c, unsigned ms);
/*
 * Judges c->target/c->port (with what c->ops->target adds), then
 * resolves and judges each address, then connects.  Goes on through
 * c->ops: exchange for a request; for a tunnel, tunnel_reply and then the
 * guard or the inspection; denied on any refusal.
 */
void	conn_route(struct conn *c);
/* Client bytes that arrive while a route is worked out wait in the
 * buffer; past this many, reading stops until they are wanted. */
#define CONN_HOLD_MAX_BYTES	(256u << 10)

/* Stops reading from the client once its buffered input is too large. */
void	conn_hold_input(struct conn *c);
/*
 * An unfinished request head of len bytes waits in c's buffer: counts it
 * against limits.partial_heads_bytes, shared by all connections.  -1 if
 * that total would be passed (c's count is then released).
 */
int	conn_head_hold(struct conn *c, size_t len);
/* c's head is complete or gone: its bytes no longer count. */
void	conn_head_release(struct conn *c);
/* 1 if c->dec's rule has no "rate" or a token was left; 0 otherwise. */
int	conn_rate_ok(struct conn *c);
/*
 * Before c's request or tunnel is sent or dialled: its byte quotas (c->dec's
 * rule's, its policy's) have room (true; c->quota holds them), or it is
 * refused with quota-bytes (false; why, size len, says so).
 */
bool	conn_quota_ok(struct conn *c, char *why, size_t len);
/* Connects to addrs[0..n) (already judged) and continues as conn_route. */
void	conn_dial(struct conn *c, const struct policy_addr *addrs, size_t n);
/* Makes sure c->cfg is the worker's current config (between requests). */
void	conn_refresh_config(struct conn *c);
/* Writes an audit record for the current request/tunnel. */
/*
 * s (a string the client sent, such as c->host) for a log line: every
 * value or placeholder of the sandbox's secrets in it written
 * "[secret:NAME]", in buf (len bytes; cut to fit), or s itself when it
 * holds none.
 */
const char *conn_log_redact(struct conn *c, const char *s, char *buf,
	    size_t len);
void	conn_audit(struct conn *c, const char *event, enum policy_verdict v,
	    enum policy_reason reason, const char *detail);
/* Proto name for audit: "http", "connect", "socks5". */
const char *conn_proto(const struct conn *c);
/*
 * Hands c's sockets (c->cio's and c->uio's) and the bytes buffered on
 * them to a tunnel, and frees c.
 */
void	conn_to_tunnel(struct conn *c);
/* The policy c is judged by: its sandbox's, or the daemon config's. */
const struct policy *conn_policy(const struct conn *c);
/* Whether c's decisions are made in audit mode (listener_audit_only()). */
bool	conn_audit_only(const struct conn *c);
/*
 * policy_decide() on t by c's policy; in audit mode a refusal of the
 * rules becomes a would-deny (policy_waive()).  Returns d->verdict.
 */
enum policy_verdict conn_decide(const struct conn *c,
	    const struct policy_target *t, struct policy_decision *d);
/*
 * A refusal for reason after c->dec allowed (a rule's rate, the git
 * preset, "protocols", needs-inspection): in audit mode, if
 * policy_reason_waivable(reason), c->dec becomes a would-deny of it (one
 * that already is keeps its first reason) and true says go on; false:
 * refuse.
 */
bool	conn_waive(struct conn *c, enum policy_reason reason);
/* Describes c's current request for inject_precheck()/inject_begin(). */
void	conn_inject_req(const struct conn *c, struct inject_req *rq);
/*
 * Parks c->uio in the worker's pool (uppool.h) if it is fit for another
 * client: its exchange finished cleanly (c->http.up_clean), the worker is
 * not draining, and an HTTPS session was verified for the tunnel's host
 * under the worker's current roots.  Returns 1 (c->uio is then NULL) or
 * 0 (c->uio untouched).
 */
int	conn_pool_put(struct conn *c);
/* Lets go of c->uio: into the pool when conn_pool_put() takes it, else
 * closed.  c->uio is NULL afterwards (safe when it already was). */
void	conn_release_upstream(struct conn *c);

/* intercept.c */
/*
 * The tunnel's rule must see inside: instead of splicing, moatd reads the
 * client's first bytes; TLS is terminated with a leaf for the tunnel's
 * host and re-originated upstream, plain HTTP is read as is; then the HTTP
 * engine judges each request.  The reply that opens the tunnel is already
 * queued on c->cio.
 */
void	intercept_start(struct conn *c, int ufd);
/*
 * Whether c's tunnel can be intercepted: a CA is configured and the rule
 * that allowed it does not say "intercept": false.
 */
int	intercept_possible(const struct conn *c);
/* Why it cannot (the detail of a needs-inspection refusal). */
const char *intercept_refusal(const struct conn *c);
/* request_head_ms passed before the client's first bytes or handshake. */
void	intercept_timeout(struct conn *c);
/*
 * In an inspected tunnel to an address that an IP rule allowed, the name
 * the client's TLS server name and Host give is judged too, with the
 * tunnel's address and port (method and path for a request, NULL for the
 * tunnel): a deny rule or a built-in deny set that refuses the name wins
 * over the IP rule, so an allowed address cannot front for a denied
 * host.  A name no rule names keeps the address's verdict.  Returns -1
 * with *d the refusing decision, or 0.
 */
int	intercept_name_denied(const struct conn *c, const char *name,
	    const char *method, const char *path, struct policy_decision *d);

/* guard.c */
/*
 * An allowed opaque tunnel: before splicing, judge the first bytes each
 * side sends (the ClientHello's server name against the tunnel's host,
 * the protocol against the rule's "protocols"), then audit the "open"
 * line and hand over to conn_to_tunnel(), or refuse.  The reply that
 * opens the tunnel is already queued on c->cio.
 */
void	guard_start(struct conn *c, int ufd);
/* request_head_ms passed with nothing to judge: refuse. */
void	guard_timeout(struct conn *c);

/* connect_refusal.c */
/*
 * A CONNECT refused with status 403 (code, reason, detail: as given to
 * http_denied_code(), already audited) on a listener with
 * "connect_refusal": "in-tunnel": if moatd can (a CA, the sandbox's
 * budget of such refusals), answers 200 instead, presents a leaf for the
 * CONNECT's host to a client that starts TLS (or reads plain HTTP), and
 * answers its first request with the 403; never dials.  Returns true if
 * it took c over, false to answer the CONNECT itself.
 */
bool	connect_refusal_open(struct conn *c, int code,
	    enum policy_reason reason, const char *detail);

/* http.c */
void	http_start(struct conn *c);		/* begin reading a request head */
void	http_client_event(struct io *io, int ev, void *arg);
/* The HTTP_EXCHANGE deadline fired: a late response head or a stall. */
void	http_exchange_timer(struct conn *c);
void	http_upstream_event(struct io *io, int ev, void *arg);
void	http_free_request(struct conn *c);

/* http_reply.c */
/*
 * Audits and answers a request or CONNECT that will not go through, with
 * the reason's status (policy_reason_info), then reads the next request
 * (a denied bodyless forward request whose client wants keep-alive) or
 * closes.
 */
void	http_denied(struct conn *c, enum policy_reason reason,
	    const char *detail);
/* The same with status code instead of the reason's (0: the reason's). */
void	http_denied_code(struct conn *c, int code, enum policy_reason reason,
	    const char *detail);
/* 408 with reason timeout: the request head did not arrive whole. */
void	http_head_timeout(struct conn *c);
/* The reason's status of moatd's own reply (403 where it has none). */
int	http_status_for(enum policy_reason r);
/* Writes what is queued for the client, then closes. */
void	http_flush_close(struct conn *c);
/*
 * Queues moatd's reply for reason on c->cio (code: its status, 0: the
 * reason's), "Connection: close", naming c's target and rule: a refusal
 * already audited (connect_refusal.c).
 */
void	http_reply_close(struct conn *c, int code, enum policy_reason reason,
	    const char *detail);


#endif /* MOAT_CONN_H */
