/*
 * trace.h - trace correlation: what of a request's own tracing its audit
 * line carries, and the id of moatd's own replies.
 *
 * A request moatd reads (forward HTTP, a CONNECT head, a request inside
 * an inspected tunnel) may carry the W3C Trace Context "traceparent"
 * field and request ids of the agent's (audit.request_id_headers,
 * default X-Request-Id).  Its audit line gets them: "traceparent" when
 * the field is valid (else the word "invalid": a field that is not one
 * is never copied), "request_id": {NAME: VALUE, ...} with the first
 * field of each configured name, as configured, its value as sent if it
 * has at most TRACE_REQUEST_ID_MAX bytes, else "[too long: N bytes]"
 * (never a piece of it: a cut could keep part of a secret that the
 * redaction would no longer recognise).  The caller passes every copied
 * value through the sandbox's secret scanner before it is written, as it
 * does the other fields the client sent.
 *
 * Pure: no I/O, no allocation.  Unit-tested in tests/unit/test_trace.c.
 */
#ifndef MOAT_TRACE_H
#define MOAT_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"

struct http_header;

#define TRACE_TRACEPARENT_LEN	55	/* "00-" 32 hex "-" 16 hex "-" 2 hex */
#define TRACE_REQUEST_ID_MAX	128	/* bytes of a request id copied */
#define TRACE_INVALID		"invalid"	/* a traceparent that is not one */
#define TRACE_TOO_LONG_MAX	40	/* "[too long: N bytes]", with NUL */
#define TRACE_MOAT_ID_MAX	56	/* an X-Moat-Request-Id, with its NUL */

/*
 * Whether v[0..len) is a traceparent by W3C Trace Context (Level 1,
 * section 3.2): version "-" trace-id "-" parent-id "-" trace-flags, each
 * in lowercase hex of 2, 32, 16 and 2 digits; version not "ff"; trace-id
 * and parent-id not all zeros.  Version 00 is exactly that; a later
 * version may go on after a "-", which is not kept.  Returns
 * TRACE_TRACEPARENT_LEN (the bytes to keep), or 0 if v is not one.
 */
size_t	trace_traceparent(const char *v, size_t len);

/* What a request's head gives its audit line; strings point into buf. */
struct trace_fields {
	const char	*traceparent;	/* the valid field, TRACE_INVALID, or
					   NULL: absent */
	const char	*names[MOAT_REQUEST_IDS_MAX];	/* as configured */
	const char	*values[MOAT_REQUEST_IDS_MAX];
	size_t		 n;
	char		 buf[TRACE_TRACEPARENT_LEN + 1 +
			    MOAT_REQUEST_IDS_MAX *
			    (TRACE_REQUEST_ID_MAX + 1)];
};

/*
 * Fills *out from the fields hv[0..nh) of a request head: traceparent
 * (two traceparent fields are invalid, as the standard says) and the
 * first field of each of names[0..nnames) (case-insensitive; at most
 * MOAT_REQUEST_IDS_MAX).  out->n is 0 and traceparent NULL when none is
 * there.  Never fails.
 */
void	trace_fields(const struct http_header *hv, size_t nh,
	    char *const *names, size_t nnames, struct trace_fields *out);

/*
 * The id of one of moatd's own replies: PREFIX-CONN-N in buf (at least
 * TRACE_MOAT_ID_MAX bytes), prefix as 16 hex digits (random per start of
 * moatd, so ids do not repeat across restarts), conn the connection's id
 * and n the reply's number on it, in decimal.  Returns buf.
 */
char	*trace_moat_id(char *buf, size_t len, uint64_t prefix, uint64_t conn,
	    unsigned n);

#endif /* MOAT_TRACE_H */
