/*
 * inject.h - secrets in the requests and responses moatd reads (plain
 * HTTP it forwards, HTTP inside inspected tunnels).
 *
 * Per request, after the policy allowed it: the rule's git preset and
 * plain-HTTP constraint are checked; every secret of the sandbox is either
 * bound to this target (its placeholder is swapped for its value) or not
 * (its value or placeholder anywhere in the request is a leak: denied,
 * audited with the secret's name); the rule's header and basic
 * injections are added, replacing what the client sent; Basic
 * credentials in Authorization are decoded for this and encoded again.
 * Per response of a target a secret is bound to (no other got a value),
 * values an upstream echoes back become placeholders again, in the head
 * (reason phrase included) and anywhere in the body (streamed, never
 * buffered whole beyond limits.body_inspect_bytes), or as many "*" where
 * the body's length is fixed; Range is dropped to bound targets so that
 * values come back whole.
 *
 * Nothing here knows a connection: the caller describes the request in a
 * struct inject_req (conn_inject_req() fills one from a struct conn),
 * inject_begin() turns it into a struct inject that the caller holds for
 * the request, and every other function takes that.  A NULL struct
 * inject (nothing to do) is accepted everywhere and changes nothing,
 * except by inject_body() and inject_response_body(), which fail.
 */
#ifndef MOAT_INJECT_H
#define MOAT_INJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"

struct evbuffer;
struct inject;
struct sandbox;
struct secrets;

#define INJECT_NAMES_MAX	16	/* secret names one audit line lists */

/*
 * One request, as inject_precheck() and inject_begin() need it: the
 * policy that binds secrets; the rule that allowed the request (NULL: an
 * address rule, or none); its method (NULL: no request, nothing to check)
 * and origin-form path with query; whether it came inside TLS moatd
 * terminated; the target's canonical name (NULL: an address), the
 * upstream's address (or NULL) and port; whose secrets: sb's own, else
 * the daemon's (NULL: none), as secrets_view() picks them; bare, for a
 * request the policy would refuse (audit mode), with rule NULL.
 */
struct inject_req {
	const struct policy		*policy;
	const struct policy_rule	*rule;
	const char			*method;
	const char			*path;
	bool				 tls;
	const char			*host;
	const struct policy_addr	*addr;
	uint16_t			 port;
	struct sandbox			*sb;
	struct secrets			*secrets;
	bool				 bare;	/* a would-deny of audit mode:
						   no secret is bound to it
						   (each is a leak) and
						   nothing is injected */
};

/*
 * Starts a request.  Returns what the request needs (the caller frees it
 * with inject_end(), after the response), or NULL: with *reason
 * POLICY_R_ALLOWED when there is nothing to inject or look for, else with
 * *reason and *detail for the refusal (needs-tls, a git preset refusal,
 * internal).  Check *reason: NULL alone does not mean allowed.
 */
struct inject	*inject_begin(const struct inject_req *rq,
		    enum policy_reason *reason, const char **detail);
/*
 * The rule's refusals that need no upstream (needs-tls for plain HTTP, the
 * git preset): checked before routing, so a refused request opens no
 * connection, and again by inject_begin().  Reads rule, method, path and
 * tls only.  0, or -1 with *reason and *detail.
 */
int	inject_precheck(const struct inject_req *rq,
	    enum policy_reason *reason, const char **detail);
/* Frees in and everything it holds (copies with values wiped).  NULL ok. */
void	inject_end(struct inject *in);

/*
 * Rewrites one header value of the request: placeholders of bound secrets
 * become values; a value or placeholder of an unbound secret is a leak.
 * Returns 0 with *out and *outlen the bytes to send (in itself when
 * nothing changed; else a copy freed by inject_end()), or -1 for a leak
 * (inject_leak_name() names it) or memory.
 */
int	inject_request_bytes(struct inject *in, const char *src, size_t len,
	    const char **out, size_t *outlen);
/*
 * The same for a header field of the request named name[0..nlen): in an
 * Authorization field with Basic credentials (the scheme in any case,
 * then SP or HTAB, then base64 with or without its padding), the
 * decoded user:password is rewritten too and encoded again; there a
 * value with a control byte, or one with a ":" swapped into the user,
 * is unsafe.  Other fields, and a token that is not base64, are rewritten
 * as inject_request_bytes() does.
 */
int	inject_request_field(struct inject *in, const char *name, size_t nlen,
	    const char *src, size_t len, const char **out, size_t *outlen);
/*
 * Checks the Host moatd sends (it is never rewritten): 0, or -1 if it
 * holds a value or placeholder of a secret not bound to the target.
 */
int	inject_request_host(struct inject *in, const char *host);
/*
 * The same for the request target (placeholders of secrets whose
 * placeholders entry says "encode": "percent" become percent-encoded
 * values) and for a whole body (placeholders swapped only for secrets
 * with "body": true).
 */
int	inject_request_target(struct inject *in, const char *src, size_t len,
	    const char **out, size_t *outlen);
int	inject_request_body_bytes(struct inject *in, const char *src,
	    size_t len, const char **out, size_t *outlen);
/*
 * After a -1 of the request rewriters: NULL for a leak (an unbound
 * secret), or why a bound secret's value was not swapped in: it would
 * change the request's framing there (refuse with secret-unsafe).  Names
 * no value.
 */
const char *inject_unsafe(const struct inject *in);
/* True if the rule's injections set this header (the client's goes). */
bool	inject_overrides(const struct inject *in, const char *name,
	    size_t len);
/*
 * Appends the rule's header and basic injections ("Name: value\r\n").
 * Returns 0, or -1 if a value would hold a control byte but HTAB, or a
 * basic user a ":" (the request must not be sent: secret-unsafe; *detail
 * says why, names only).
 */
int	inject_add_headers(struct inject *in, struct evbuffer *out,
	    const char **detail);
/*
 * Whether request bodies must go through inject_body(): a secret not
 * bound to the target (a leak to find), or one whose placeholders entry
 * says "body": true.
 */
bool	inject_scans_body(const struct inject *in);
/*
 * Whether the request's Range and If-Range fields are dropped: its target
 * is bound to a secret, and a piece of a value the host stored would get
 * past the response scanner.
 */
bool	inject_strips_range(const struct inject *in);
/* Whether a body may change size (placeholders swapped: "body": true). */
bool	inject_body_may_grow(const struct inject *in);
/*
 * Moves n bytes of body from src through the request rewriter; the
 * rewritten bytes go to emit.  Returns 0, or -1 for a leak.  With n 0 and
 * last true, flushes what the rewriter held back.
 */
int	inject_body(struct inject *in, struct evbuffer *src, size_t n,
	    bool last, void (*emit)(void *, const uint8_t *, size_t),
	    void *arg);
/* The name of the secret a leak was found for ("?" if none). */
const char *inject_leak_name(const struct inject *in);
/* Whether the last -1 of a request rewriter was a leak (else: memory). */
bool	inject_leaked(const struct inject *in);

/*
 * Responses.  inject_response_begin() starts one and says whether it is
 * scanned at all: only when a secret is bound to the request's target
 * (moatd sends a value nowhere else, so no other host can echo one);
 * else the response passes as it came.  inject_response_bytes()
 * rewrites a header value or a whole body (as inject_request_bytes,
 * never a leak; unchanged where nothing is scanned).
 * inject_response_body() moves body bytes through the response rewriter
 * (all of them: its output may be shorter or longer than its input:
 * bodies whose framing the client gets anew, chunked or delimited by
 * close).  inject_response_pass() is for a body whose length the client
 * was told: it moves n bytes of src to out, each echoed value replaced
 * by as many "*" (the length holds), whole chains moved without a copy;
 * bytes that may begin a value wait (at most one read's worth) until
 * more come, or until last.  Both return 0, or -1 (memory).
 */
bool	inject_response_begin(struct inject *in);
int	inject_response_bytes(struct inject *in, const char *src, size_t len,
	    const char **out, size_t *outlen);
int	inject_response_body(struct inject *in, struct evbuffer *src,
	    size_t n, bool last, void (*emit)(void *, const uint8_t *, size_t),
	    void *arg);
int	inject_response_pass(struct inject *in, struct evbuffer *src,
	    size_t n, bool last, struct evbuffer *out);

/*
 * Before what was rewritten goes out (the head, then each piece of a
 * body whose placeholders are swapped): each secret put into the
 * request since the last call whose "quota" is counted takes one
 * request of its window (quota.h), once per request.  Returns NULL if
 * each had one, else the name of the first whose quota is used up (why,
 * size len, says so; what this call took is given back): the request
 * must not go.
 */
const char *inject_quota_take(struct inject *in, char *why, size_t len);
/*
 * Before a request is routed: -1 (why, size len, names the secret and its
 * quota) if the rule's header or basic injections would put into it a
 * secret whose quota is used up, so that it is refused (quota-secret)
 * before anything is dialled; 0 otherwise.  Counts nothing.
 */
int	inject_quota_room(const struct inject_req *rq, char *why, size_t len);
/*
 * The request's head went to the upstream (with the body moatd had of it
 * already): from now on inject_names() names what was put into it.
 */
void	inject_sent(struct inject *in);
/*
 * For the audit line's "injected": the names of the secrets whose values
 * moatd put into this request (a placeholder swapped anywhere, Basic
 * credentials included, or a header or basic injection added), the
 * rule's secrets first in its order; NULL if none, or if the request
 * never went out (refused before inject_sent()).  Valid until the next
 * call or inject_end().
 */
const char *const *inject_names(struct inject *in);

#endif /* MOAT_INJECT_H */
