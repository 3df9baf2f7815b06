/*
 * metrics.h - moatd's Prometheus metrics: counters kept per thread,
 * summed when /metrics is scraped (metrics_http.c serves it).
 *
 * The hot path takes no lock and no atomic read-modify-write: each thread
 * (a worker, or the main thread) has counters of its own, which only it
 * writes (a relaxed load and store: plain moves on x86-64, and a reader
 * never sees half a 64-bit value); a scrape reads every thread's with
 * relaxed loads and adds them up.  Series are named by small integers:
 * reason codes are an enum, sandboxes and rules get interned ids, and a
 * thread keeps a small cache of the ids it looked up, so a lookup takes
 * the registry's mutex only the first time a thread sees a (sandbox,
 * rule) pair, a series, or after its cache lost them.
 *
 * Label cardinality is bounded three ways (README, "Metrics"):
 * - at most max_sandboxes sandbox names (a config key, default 256); a
 *   name past it is counted under sandbox="(other)".  A name whose
 *   sandboxes are all gone stays until its place is needed by a new
 *   name: then its series go (oldest first) and the new name starts
 *   from zero.  A live sandbox keeps its place;
 * - at most max_rules rule names per sandbox (default 64), past it
 *   rule="(other)";
 * - at most max_series series of decisions and as many of bytes (default
 *   4096 each); past it sandbox="(other)", rule="(other)" (verdict and
 *   reason kept).
 * Secret names: at most METRICS_SECRETS_MAX, then secret="(other)".
 * moat_metrics_folded_total{label} counts what each fold took in.
 * "(other)" cannot be a sandbox, rule or secret name (they are made of
 * A-Z a-z 0-9 . _ : -).
 *
 * Not here: the HTTP listener (metrics_http.c), and the values that
 * live elsewhere (the audit queue, the leaf cache): the caller passes
 * them to metrics_render().
 */
#ifndef MOAT_METRICS_H
#define MOAT_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct audit_rec;

#define METRICS_NAME_MAX	64	/* longest sandbox, rule, secret name */
#define METRICS_SECRETS_MAX	256	/* secret names, then "(other)" */
#define METRICS_OTHER		"(other)"

/* A sandbox's place in the registry; struct sandbox keeps one. */
struct metrics_sb {
	uint32_t	slot;
	uint32_t	gen;
};

/* The latency histograms.  Buckets: METRICS_BUCKETS in metrics.c. */
enum metrics_hist {
	METRICS_H_DECISION = 0,	/* request judged: start to verdict */
	METRICS_H_DNS,		/* one c-ares resolution */
	METRICS_H_CONNECT,	/* upstream connect, every address tried */
	METRICS_H_TTFB,		/* request sent upstream to first byte back */
	METRICS_H__COUNT
};

struct metrics_limits {
	size_t	sandboxes;
	size_t	rules;
	size_t	series;
};

/* What metrics_render() reports from elsewhere. */
struct metrics_extra {
	uint64_t	audit_queue_bytes;
	uint64_t	audit_dropped;
	uint64_t	leaf_hits;
	uint64_t	leaf_misses;
};

/* Set by metrics_init(), before any worker starts; read-only after. */
extern bool	metrics_on;

/*
 * Turns metrics on with these caps (main thread, before the listeners'
 * sandboxes and the workers exist).  0, or -1 when out of memory.
 */
int	metrics_init(const struct metrics_limits *lim);
/* Frees everything (no thread may count any more); metrics are off. */
void	metrics_free(void);

/*
 * Counts an audit line (audit_emit() calls it for every line, before it
 * is formatted): decisions (request, open and dns lines; a connection
 * line counts each refusal it stands for), bytes (request lines and the
 * close lines of opaque tunnels: an inspected tunnel's bytes are its
 * requests'), secrets injected.
 */
void	metrics_audit(const struct audit_rec *r);

/* A struct sandbox of this name is made / freed (sandbox.c). */
void	metrics_sandbox_hold(struct metrics_sb *h, const char *name);
void	metrics_sandbox_release(const struct metrics_sb *h);

/* A connection or tunnel of a listener of this kind (enum
 * moat_listen_proto) opens or closes. */
void	metrics_conn(const struct metrics_sb *h, unsigned kind, bool open);
/* The DNS listener answered with rcode and this many address records. */
void	metrics_dns_reply(const struct metrics_sb *h, unsigned rcode,
	    unsigned naddrs);
/* The sandbox's drop log had a packet of this kind (proto/drops_proto.h). */
void	metrics_drop(const struct metrics_sb *h, unsigned kind);
/* A quota of this kind (enum quota_kind, proxy/quota.h) refused a request
 * or tunnel, or cut one. */
void	metrics_quota(const struct metrics_sb *h, unsigned kind);
/* A request or name was refused for carrying this secret (its name). */
void	metrics_secret_leak(const char *name);
/* A reload was done (ok) or refused. */
void	metrics_reload(bool ok);

/*
 * Latency: *t0 = metrics_clock() where it starts (0 with metrics off);
 * metrics_observe() where it ends adds now - *t0 to histogram h if *t0 is
 * not 0, and sets *t0 to 0 (so a second end is not counted).
 */
uint64_t metrics_clock(void);
void	metrics_observe(enum metrics_hist h, uint64_t *t0);

/*
 * The text exposition format (version 0.0.4) of every metric, in a
 * malloc'ed buffer of *len bytes, or NULL when out of memory.  Takes the
 * registry's mutex (a thread that meets a new name waits for it).
 */
char	*metrics_render(const struct metrics_extra *x, size_t *len);

/*
 * s as a label value of the text format (backslash, double quote and
 * line feed escaped) into out (cap bytes, NUL-terminated).  Returns the
 * length it needs, as snprintf.
 */
size_t	metrics_escape(const char *s, char *out, size_t cap);

/*
 * The listener (metrics_http.c), on the main thread.  metrics_http_bind()
 * opens the configured address (before privileges are dropped): a fd,
 * or -1 with err.  metrics_http_serve() answers scrapes on it from base
 * (path: a unix socket to remove at the end, or NULL); NULL when out of
 * memory.  metrics_http_free() closes it all.
 */
struct event_base;
struct metrics_http;
struct moat_metrics;
int	metrics_http_bind(const struct moat_metrics *m, char *err,
	    size_t errlen);
struct metrics_http *metrics_http_serve(struct event_base *base, int fd,
	    const char *path);
void	metrics_http_free(struct metrics_http *h);

#endif /* MOAT_METRICS_H */
