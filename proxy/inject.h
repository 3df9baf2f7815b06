/*
 * inject.h - secrets in the requests and responses moatd reads (plain
 * HTTP it forwards, HTTP inside inspected tunnels).
 *
 * Per request, after the policy allowed it: the rule's git preset and
 * plain-HTTP constraint are checked; every secret of the sandbox is either
 * bound to this target (its placeholder is swapped for its value) or not
 * (its value or placeholder anywhere in the request is a leak: denied,
 * audited with the secret's name); the rule's header and basic
 * injections are added, replacing what the client sent.  Per response,
 * values an upstream echoes back become placeholders again, in the head
 * (reason phrase included) and anywhere in the body (streamed, never
 * buffered whole); Range is dropped to bound targets so that values come
 * back whole.
 */
#ifndef MOAT_INJECT_H
#define MOAT_INJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"

struct conn;
struct evbuffer;
struct inject;

#define INJECT_NAMES_MAX	16	/* secret names one audit line lists */

/*
 * Starts a request of c (c->dec allowed it).  Returns 0 (c->inj set when
 * there is anything to do), or -1 with *reason and *detail for the
 * refusal: needs-tls, a git preset refusal, internal.
 */
int	inject_begin(struct conn *c, enum policy_reason *reason,
	    const char **detail);
/*
 * The rule's refusals that need no upstream (needs-tls for plain HTTP, the
 * git preset): checked before routing, so a refused request opens no
 * connection, and again by inject_begin().  0, or -1 with *reason and
 * *detail.
 */
int	inject_precheck(struct conn *c, enum policy_reason *reason,
	    const char **detail);
/* Frees c->inj and everything it holds.  Safe when NULL. */
void	inject_end(struct conn *c);

/*
 * Rewrites one header value, or the request target, of the request:
 * placeholders of bound secrets become values; a value or placeholder of
 * an unbound secret is a leak.  Returns 0 with *out and *outlen the bytes to
 * send (in itself when nothing changed; else a copy freed by
 * inject_end()), or -1 for a leak (inject_leak_name() names it) or memory.
 */
int	inject_request_bytes(struct conn *c, const char *in, size_t len,
	    const char **out, size_t *outlen);
/*
 * Checks the Host moatd sends (it is never rewritten): 0, or -1 if it
 * holds a value or placeholder of a secret not bound to the target.
 */
int	inject_request_host(struct conn *c, const char *host);
/*
 * The same for the request target (placeholders of secrets whose
 * placeholders entry says "encode": "percent" become percent-encoded
 * values) and for a whole body (placeholders swapped only for secrets
 * with "body": true).
 */
int	inject_request_target(struct conn *c, const char *in, size_t len,
	    const char **out, size_t *outlen);
int	inject_request_body_bytes(struct conn *c, const char *in, size_t len,
	    const char **out, size_t *outlen);
/*
 * After a -1 of the request rewriters: NULL for a leak (an unbound
 * secret), or why a bound secret's value was not swapped in: it would
 * change the request's framing there (refuse with secret-unsafe).  Names
 * no value.
 */
const char *inject_unsafe(const struct conn *c);
/* True if the rule's injections set this header (the client's goes). */
bool	inject_overrides(const struct conn *c, const char *name, size_t len);
/*
 * Appends the rule's header and basic injections ("Name: value\r\n").
 * Returns 0, or -1 if a value would hold a control byte but HTAB, or a
 * basic user a ":" (the request must not be sent: secret-unsafe; *detail
 * says why, names only).
 */
int	inject_add_headers(struct conn *c, struct evbuffer *out,
	    const char **detail);
/*
 * Whether request bodies must go through inject_body(): a secret not
 * bound to the target (a leak to find), or one whose placeholders entry
 * says "body": true.
 */
bool	inject_scans_body(const struct conn *c);
/*
 * Whether the request's Range and If-Range fields are dropped: its target
 * is bound to a secret, and a piece of a value the host stored would get
 * past the response scanner.
 */
bool	inject_strips_range(const struct conn *c);
/* Whether a body may change size (placeholders swapped: "body": true). */
bool	inject_body_may_grow(const struct conn *c);
/*
 * Moves n bytes of body from in through the request rewriter; the
 * rewritten bytes go to emit.  Returns 0, or -1 for a leak.  With n 0 and
 * last true, flushes what the rewriter held back.
 */
int	inject_body(struct conn *c, struct evbuffer *in, size_t n, bool last,
	    void (*emit)(void *, const uint8_t *, size_t), void *arg);
/* The name of the secret a leak was found for. */
const char *inject_leak_name(const struct conn *c);

/*
 * Responses: starts one (returns false when nothing needs rewriting),
 * rewrites a header value (as inject_request_bytes, never a leak), and
 * moves body bytes through the response rewriter (all of them: its
 * output may be shorter or longer than its input).
 */
bool	inject_response_begin(struct conn *c);
int	inject_response_bytes(struct conn *c, const char *in, size_t len,
	    const char **out, size_t *outlen);
int	inject_response_body(struct conn *c, struct evbuffer *in, size_t n,
	    bool last, void (*emit)(void *, const uint8_t *, size_t),
	    void *arg);

/* The secret names injected or swapped in this request (for audit). */
const char *const *inject_names(const struct conn *c);

#endif /* MOAT_INJECT_H */
