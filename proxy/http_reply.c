/*
 * http_reply.c - the replies moatd writes itself on an HTTP connection
 * (400, 403, 407, 408, 421, 429, 431, 500, 502, 503, 504): the audit line,
 * the status and the body that names the target, the reason and the
 * rule, so an agent can act on it; then keep-alive or close.
 *
 * What it is not: a second list of reasons.  Status, SOCKS5 reply and
 * sentence of each reason are in policy.c's table (policy_reason_info);
 * the statuses the context decides (408, 421, 503) are passed in by the
 * callers in http.c.
 */
#include "config.h"

#include <sys/random.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "policy/policy.h"
#include "proxy/conn.h"
#include "proxy/io.h"
#include "proxy/log.h"
#include "proxy/trace.h"

static void	http_reply(struct conn *c, int code, enum policy_reason reason,
		    const char *detail, int keep_alive);

/* The per-start prefix of X-Moat-Request-Id (trace.h). */
static pthread_once_t	http_id_once = PTHREAD_ONCE_INIT;
static uint64_t		http_id_prefix;

static void
http_id_init(void)
{
	struct timespec	ts;

	if (getrandom(&http_id_prefix, sizeof(http_id_prefix), 0) ==
	    (ssize_t)sizeof(http_id_prefix))
		return;
	/* No entropy to be had: still unlike another start's. */
	clock_gettime(CLOCK_REALTIME, &ts);
	http_id_prefix = ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^
	    ((uint64_t)getpid() << 16);
}

/* A new id for moatd's reply on c, into c->http.moat_id. */
static void
http_reply_id(struct conn *c)
{
	pthread_once(&http_id_once, http_id_init);
	trace_moat_id(c->http.moat_id, sizeof(c->http.moat_id),
	    http_id_prefix, c->id, ++c->http.nreplies);
}

/* The reason phrase of a status moatd answers with by itself. */
static const char *
http_phrase(int code)
{
	switch (code) {
	case 400:
		return "Bad Request";
	case 403:
		return "Forbidden";
	case 407:
		return "Proxy Authentication Required";
	case 429:
		return "Too Many Requests";
	case 408:
		return "Request Timeout";
	case 421:
		return "Misdirected Request";
	case 431:
		return "Request Header Fields Too Large";
	case 500:
		return "Internal Server Error";
	case 502:
		return "Bad Gateway";
	case 503:
		return "Service Unavailable";
	case 504:
		return "Gateway Timeout";
	default:
		return "Error";
	}
}

/*
 * The status of moatd's reply for a reason, by policy.c's reason table;
 * a reason that never ends in an HTTP reply (http 0 there) gets 403.
 */
int
http_status_for(enum policy_reason r)
{
	int	code = policy_reason_info(r)->http;

	return code != 0 ? code : 403;
}

/*
 * text (len bytes) made safe for a reply body, into out (NUL-terminated,
 * cut with "..." to fit outlen): printable ASCII stays as it is, quotes
 * included, so a detail that quotes a config key reads as it does in the
 * config; a control byte, DEL, a byte over 0x7e and the backslash become
 * \xNN, so nothing in a detail (a host, a path the client sent) can
 * break a line or put raw bytes into the body.
 */
static char *
http_body_escape(const char *in, size_t len, char *out, size_t outlen)
{
	static const char	hex[] = "0123456789abcdef";
	size_t			i, o = 0, need;
	unsigned char		c;

	if (outlen == 0)
		return out;
	for (i = 0; i < len; i++) {
		c = (unsigned char)in[i];
		need = c < 0x20 || c > 0x7e || c == '\\' ? 4 : 1;
		if (o + need + 4 > outlen) {	/* room for "..." + NUL */
			if (o + 4 <= outlen) {
				memcpy(out + o, "...", 3);
				o += 3;
			}
			break;
		}
		if (need == 1)
			out[o++] = (char)c;
		else {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 0xf];
		}
	}
	out[o] = '\0';
	return out;
}

/*
 * The last paragraph of a 403, for an agent: a policy decision does not
 * change with another spelling, so it stops trying bypasses; but a
 * request refused only for going out in clear text (needs-tls) goes
 * through over https://, and that is what it should try.
 */
static const char *
http_advice(enum policy_reason reason)
{
	if (reason == POLICY_R_NEEDS_TLS)
		return "This is moat's policy, not a network error: moat sends "
		    "this rule's secret only inside TLS. Request the same URL "
		    "with https:// instead of http://; if that is refused too, "
		    "ask the operator.\n";
	return "This is moat's policy, not a network error: other spellings, "
	    "addresses or ports of this host are denied the same way. Ask the "
	    "operator to change the policy if you need it.\n";
}

/*
 * Writes one of moatd's own replies.  The body names the target, the
 * reason and the rule, and tells an agent what to do next
 * (http_advice()).
 */
static void
http_reply(struct conn *c, int code, enum policy_reason reason,
    const char *detail, int keep_alive)
{
	const char		*phrase;
	struct evbuffer		*out = io_out(c->cio);
	char			 body[1280], esc[512];
	char			 target[POLICY_NAME_MAX + 16];
	int			 n;
	bool			 policy;

	if (code == 0)
		code = http_status_for(reason);
	/* A caller's override (see policy.h) has its own status's phrase:
	 * a refused connection's 503 says "Service Unavailable". */
	phrase = http_phrase(code);
	policy = code == 403;
	if (c->host[0] != '\0')
		snprintf(target, sizeof(target), "%s:%u", c->host, c->port);
	else
		snprintf(target, sizeof(target), "(not parsed)");
	n = snprintf(body, sizeof(body),
	    "moat %s this request.\n"
	    "target: %s\n"
	    "reason: %s: %s%s%s\n"
	    "rule:   %s\n"
	    "id:     %s (X-Moat-Request-Id; moatd's audit line has it)\n"
	    "%s",
	    policy ? "denied" : "could not complete", target,
	    policy_reason_str(reason), policy_reason_info(reason)->text,
	    detail ? "\n        " : "",
	    detail ? http_body_escape(detail, strlen(detail), esc,
	    sizeof(esc)) : "",
	    c->dec.rule_name ? c->dec.rule_name : "(none)",
	    c->http.moat_id, policy ? http_advice(reason) : "");
	if (n < 0 || (size_t)n >= sizeof(body))
		n = (int)strlen(body);
	evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\n"
	    "Content-Type: text/plain; charset=utf-8\r\n"
	    "Content-Length: %d\r\n"
	    "Cache-Control: no-store\r\n"
	    "X-Moat-Reason: %s\r\n"
	    "X-Moat-Request-Id: %s\r\n", code, phrase, n,
	    policy_reason_str(reason), c->http.moat_id);
	if (c->dec.rule_name != NULL)
		evbuffer_add_printf(out, "X-Moat-Rule: %s\r\n",
		    c->dec.rule_name);
	if (code == 407)
		evbuffer_add_printf(out, "Proxy-Authenticate: Basic "
		    "realm=\"moat\"\r\n");
	evbuffer_add_printf(out, "Connection: %s\r\n\r\n",
	    keep_alive ? "keep-alive" : "close");
	evbuffer_add(out, body, (size_t)n);
}

/*
 * A request or CONNECT that will not go through: audit it, answer it, and
 * keep the connection only for a denied bodyless forward request whose
 * client wants keep-alive (pip and friends reuse their connections).
 */
void
http_denied(struct conn *c, enum policy_reason reason, const char *detail)
{
	http_denied_code(c, 0, reason, detail);
}

/*
 * A client too slow to send its request head gets 408, not 504, and an
 * audit line: part of a request came (an idle connection that sent
 * nothing is closed quietly by the caller).
 */
void
http_head_timeout(struct conn *c)
{
	char	d[128];

	snprintf(d, sizeof(d), "the request head did not arrive whole in "
	    "time (timeouts.request_head_ms): %zu bytes of it came",
	    io_in_len(c->cio));
	c->kind = CONN_KIND_HTTP;
	http_denied_code(c, 408, POLICY_R_TIMEOUT, d);
}

void
http_denied_code(struct conn *c, int code, enum policy_reason reason,
    const char *detail)
{
	char	hbuf[320], dbuf[512];
	int	keep;

	conn_set_deadline(c, 0);
	c->http.status = code ? code : http_status_for(reason);
	/* One id in the reply and in its audit line. */
	http_reply_id(c);
	conn_audit(c, conn_event(c), POLICY_DENY, reason, detail);
	if (reason != POLICY_R_BAD_REQUEST && reason != POLICY_R_LIMIT)
		log_debug("conn=%llu %s %s:%u denied: %s",
		    (unsigned long long)c->id, conn_proto(c),
		    conn_log_redact(c, c->host, hbuf, sizeof(hbuf)), c->port,
		    policy_reason_str(reason));
	else {
		char esc[256];

		if (detail != NULL)
			detail = conn_log_redact(c, detail, dbuf, sizeof(dbuf));
		log_info("conn=%llu from %s: %s: %s", (unsigned long long)c->id,
		    c->client, policy_reason_str(reason), detail ?
		    log_escape(detail, strlen(detail), esc, sizeof(esc)) : "-");
	}
	if (connect_refusal_open(c, code, reason, detail))
		return;		/* answered inside the tunnel */
	keep = c->kind == CONN_KIND_HTTP && c->http.req.method != NULL &&
	    c->http.client_keepalive && c->http.reqb.done && c->uio == NULL &&
	    c->state != CONN_ST_HTTP_EXCHANGE &&
	    http_status_for(reason) == 403;
	/* An upstream idle between exchanges (this client's, or just taken
	 * from the pool) goes back to the pool; the refused request never
	 * touched it. */
	conn_release_upstream(c);
	http_reply(c, code, reason, detail, keep);
	c->http.moat_id[0] = '\0';
	if (io_flush(c->cio) == -1) {
		conn_close(c, POLICY_R_ALLOWED, NULL);
		return;
	}
	if (keep) {
		http_start(c);
		return;
	}
	http_flush_close(c);
}

void
http_reply_close(struct conn *c, int code, enum policy_reason reason,
    const char *detail)
{
	http_reply(c, code, reason, detail, 0);
}

/* Writes what is queued for the client, then closes. */
void
http_flush_close(struct conn *c)
{
	io_read(c->cio, 1);	/* read (and drop) so a peer's EOF is seen */
	conn_release_upstream(c);
	if (io_out_len(c->cio) == 0) {
		conn_close(c, POLICY_R_ALLOWED, NULL);
		return;
	}
	conn_enter_state(c, CONN_ST_FLUSH_CLOSE);
	io_set_cb(c->cio, http_client_event, c);
	io_want_drained(c->cio, 0);
	conn_set_deadline(c, c->cfg->timeouts.idle_client_ms);
}
