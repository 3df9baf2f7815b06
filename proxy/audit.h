/*
 * audit.h - the audit log: one JSON object per line, per decision.
 *
 * Workers format a record and queue the line; one writer thread writes
 * the queue to the file (or stderr), so a slow disk never blocks an event
 * loop.  The queue is bounded (AUDIT_QUEUE_MAX_BYTES): past it, lines are
 * dropped and counted, and the count is written as an audit line of its
 * own ("event": "audit-dropped") as soon as there is room, so a gap is
 * never silent.
 *
 * Fields (DESIGN.md): ts, sandbox, proto, host, port, ip, verdict, reason,
 * rule, and where known method, path, status, bytes_up, bytes_down,
 * duration_ms, injected (secret NAMES only).  moat adds event, id (the
 * connection), client, detail and end; would_deny (audit mode);
 * traceparent, request_id and moat_request_id (trace correlation).  No secret value ever reaches a
 * record: callers pass names only, and the fields that repeat what the
 * client sent (host, method, path, detail, traceparent, the request
 * ids) are redacted with the sandbox's scanner (redact).
 */
#ifndef MOAT_AUDIT_H
#define MOAT_AUDIT_H

#include <stdint.h>

#include "policy/policy.h"

struct secretscan;

#define AUDIT_QUEUE_MAX_BYTES	(8u << 20)
#define AUDIT_PATH_MAX_BYTES	1024	/* longer paths are cut, with "..." */

struct audit_rec {
	const char		*event;		/* "request", "open", "close", "dns" */
	uint64_t		 id;		/* connection id */
	const char		*sandbox;
	const char		*proto;		/* "http", "connect", "socks5", ... */
	const char		*client;	/* peer address, or NULL */
	const char		*host;		/* name or address as judged */
	int			 port;		/* -1: absent */
	const char		*sni;		/* a name the tunnel's TLS or
						   requests gave, when it is
						   not host; NULL: absent */
	const char		*ip;		/* address dialled, or NULL */
	const char		*country;	/* ip's, by "geoip", or NULL */
	int64_t			 asn;		/* ip's AS number, -1: absent */
	enum policy_verdict	 verdict;
	enum policy_reason	 reason;
	const char		*rule;		/* NULL: no rule */
	enum policy_reason	 would_deny;	/* audit mode: the refusal let
						   through (verdict allow);
						   POLICY_R_ALLOWED: absent */
	const char		*method;	/* NULL: absent */
	const char		*path;
	int			 status;	/* HTTP status, 0: absent */
	int64_t			 bytes_up;	/* -1: absent */
	int64_t			 bytes_down;
	int64_t			 duration_ms;
	const char		*detail;	/* short human text, or NULL */
	const char		*end;		/* close events: how it ended */
	const char		*qtype;		/* dns events: "A", "AAAA", ... */
	const char		*answer;	/* dns events: addresses answered */
	const char *const	*injected;	/* NULL-terminated secret names */
	int64_t			 refused;	/* "connection" events: how many
						   connections the line stands
						   for; -1: absent */
	/* "quota" events (proxy/quota.h): which quota ("rule", "sandbox",
	 * "secret"), the secret's name, the limit, its window and what
	 * was counted in it; NULL or -1: absent. */
	const char		*quota;
	const char		*secret;
	int64_t			 limit;
	int64_t			 per_seconds;
	int64_t			 used;
	/* Trace correlation (trace.h): the request's traceparent (valid,
	 * or "invalid"), its request ids (names as configured, values as
	 * sent, cut), the id of moatd's own reply; NULL or 0: absent. */
	const char		*traceparent;
	const char *const	*request_id_names;
	const char *const	*request_id_values;
	size_t			 nrequest_ids;	/* at most MOAT_REQUEST_IDS_MAX */
	const char		*moat_request_id;
	/*
	 * The sandbox's secrets scanner, or NULL: the fields that repeat
	 * what the client sent (host, method, path, detail) show
	 * "[secret:NAME]" for any value or placeholder in them.  redact_fail
	 * (the scanner could not be had) writes those fields as "[redacted]".
	 */
	const struct secretscan	*redact;
	const char		*(*redact_name)(const void *, uint32_t);
	const void		*redact_arg;
	int			 redact_fail;
};

/* Fills *r with "absent" values (port, bytes, duration -1). */
void	audit_rec_init(struct audit_rec *r);

/*
 * Opens the audit destination (a file opened for appending, created 0640,
 * or "-" for stderr, or NULL for none) and starts the writer thread.
 * Returns 0, or -1 with errno (the file could not be opened).
 */
int	audit_start(const char *path);
/*
 * Changes the destination (reload).  The old file is closed once the
 * writer has moved to the new one.  Returns 0 or -1 with errno; on failure
 * the old destination stays.
 */
int	audit_set_path(const char *path);
/*
 * audit.hash_chain: on, each line written carries the hash chain of
 * proxy/auditchain.h, and the next write (and each new destination)
 * begins with a "chain-start" line.  Call before audit_start() and at a
 * reload.  Returns 0, or -1 when the chain cannot be had (memory).
 */
int	audit_set_chain(int on);
/* Asks the writer to reopen its file (SIGUSR1, log rotation).  Async. */
void	audit_reopen(void);
/* Queues one line.  Never blocks on I/O.  Thread-safe. */
void	audit_emit(const struct audit_rec *r);
/*
 * 0 while the audit sink does not take lines (a write failed and lines
 * wait, or the queue overflowed), else 1.  For audit.on_failure "deny".
 */
int	audit_ok(void);
/* 1 when a decision under cfg must be refused (audit-unavailable): its
 * audit.on_failure is "deny" and audit lines cannot be written. */
struct moat_config;
int	audit_refuses(const struct moat_config *cfg);
/* The sentence such refusals carry. */
#define AUDIT_UNAVAILABLE_DETAIL "moatd cannot write its audit log (a " \
	"full disk or a stalled sink) and its audit.on_failure is \"deny\""
/*
 * Formats r as one JSON line (ending in "\n") into buf.  Returns its
 * length, or 0 if it does not fit.  For tests.
 */
size_t	audit_format_line(const struct audit_rec *r, char *buf, size_t cap);
/* For metrics: bytes of lines queued now, lines lost since start. */
void	audit_stats(uint64_t *queued_bytes, uint64_t *dropped);
/* Writes what is queued, stops the writer thread, closes the file. */
void	audit_stop(void);

#endif /* MOAT_AUDIT_H */
