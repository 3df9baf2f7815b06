/*
 * policy.h - moat's configuration and policy library.
 *
 * What it is: the parser and validator of moat's JSON configuration, the
 * compiler of its rules into matchers, the normaliser of host names and
 * addresses, and the function that turns a target into a decision
 * {verdict, rule, reason}.  moatd, the moat CLI (explain, --check), the unit
 * tests and the fuzzers all link it.
 *
 * What it is not: it does no I/O.
 *
 *   policy/ reads no file, opens no socket, loads no library and keeps no
 *   clock: its callers hand it bytes, open databases and loaded libraries,
 *   and it hands back verdicts.
 *
 * (The same sentence is in ARCHITECTURE.md and policy/include.am;
 * tests/policy_io.test fails if a policy/ source calls open, dlopen,
 * socket, clock_gettime or their kin.)  The caller hands it the bytes of
 * the config and its name, a loader for the GeoIP databases a config
 * names (struct policy_load_opts), and libidn2's functions
 * (policy_idn_set()).  It writes no logs: everything it reports goes into
 * return values and diagnostics lists owned by the caller.
 *
 * Threading: a compiled struct moat_config is immutable once
 * policy_config_load() returns it, so any number of threads may read it and
 * call the decision functions concurrently.  Reference counts are atomic.
 */
#ifndef MOAT_POLICY_H
#define MOAT_POLICY_H

#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------ */
/* Diagnostics                                                          */
/* ------------------------------------------------------------------ */

enum policy_diag_level {
	POLICY_DIAG_ERROR = 0,
	POLICY_DIAG_WARNING
};

struct policy_diag {
	enum policy_diag_level	 level;
	int			 line;	/* 1-based; 0 if unknown */
	int			 column;	/* 1-based, in bytes; 0 if unknown */
	char			*msg;	/* owned; no file prefix, no newline */
};

struct policy_diags {
	char			*file;	/* owned copy of the name given to the loader */
	struct policy_diag	*v;
	size_t			 n;
	size_t			 cap;
	size_t			 nerrors;
	size_t			 nwarnings;
};

/* Zeroes *d.  Never fails. */
void	policy_diags_init(struct policy_diags *d);
/* Frees everything *d owns and zeroes it.  NULL is accepted. */
void	policy_diags_clear(struct policy_diags *d);
/*
 * Formats diagnostic i as "FILE:LINE:COLUMN: message" (errors) or
 * "FILE:LINE:COLUMN: warning: message" into buf (NUL-terminated, truncated
 * to len).  Returns buf.
 */
char	*policy_diag_format(const struct policy_diags *d, size_t i, char *buf,
	    size_t len);

/* ------------------------------------------------------------------ */
/* Addresses and host names                                             */
/* ------------------------------------------------------------------ */

/* An IP address, IPv4 kept as IPv4 (never as v4-mapped IPv6). */
struct policy_addr {
	int		family;		/* AF_INET or AF_INET6 */
	union {
		struct in_addr	v4;
		struct in6_addr	v6;
	} u;
};

enum policy_host_kind {
	POLICY_HOST_NAME = 0,	/* a DNS name: name[] holds its canonical form */
	POLICY_HOST_ADDR	/* an IP literal: addr holds it */
};

#define POLICY_NAME_MAX	253	/* longest canonical DNS name, no final dot */

struct policy_host {
	enum policy_host_kind	kind;
	char			name[POLICY_NAME_MAX + 1]; /* NAME: canonical name;
					   ADDR: the address as inet_ntop text */
	struct policy_addr	addr;	/* ADDR only */
};

/*
 * IDNA.  The policy converts internationalised names with libidn2, which
 * its caller loads (moatd at start, before its workers; moat when a text
 * it hands over may need it) and hands in here.  lookup_u8 and free are
 * libidn2's idn2_lookup_u8() and idn2_free().  Call policy_idn_set() before
 * any other thread uses the policy (the pointers are read without a lock);
 * NULL, or never calling it, leaves the policy without IDNA: a name that
 * needs it is then refused, never passed through unchecked.
 */
struct policy_idn {
	int	(*lookup_u8)(const uint8_t *src, uint8_t **lookupname,
		    int flags);
	void	(*free)(void *ptr);
};
void	policy_idn_set(const struct policy_idn *idn);
/*
 * Whether text (a config, a host, a URL) may name a host that needs IDNA:
 * it has a byte over 0x7f, a "%" (a percent-escape may decode to one), a
 * backslash (a JSON escape may) or an "xn--" (any case).  Never false for a
 * text that needs it; so a caller that loads libidn2 only when this says
 * so never sees a name refused that it could have converted.
 */
bool	policy_idn_wanted(const char *text, size_t len);

/*
 * Normalises a host as written by a client or a config into its single
 * canonical form.  in need not be NUL-terminated; len is its length.
 *
 * Accepted spellings and their canonical form:
 *  - IPv4 in every form inet_aton(3) and the WHATWG URL standard accept:
 *    decimal (2130706433), octal (0177.0.0.1), hex (0x7f.0.0.1, 0x7f000001),
 *    short (127.1, 127.0.1), with a trailing dot  -> POLICY_HOST_ADDR v4
 *  - IPv6, bare or bracketed ([::1]), with a zone ID (fe80::1%eth0, also
 *    percent-encoded %25eth0) which is dropped, and IPv4-mapped forms
 *    (::ffff:127.0.0.1, ::ffff:7f00:1), which become the IPv4 address
 *    -> POLICY_HOST_ADDR
 *  - names: percent-decoded, IDNA (UTS #46, non-transitional) to A-labels,
 *    lower case, trailing dot removed -> POLICY_HOST_NAME
 * A name whose last label is numeric (decimal, 0x.., 0..) is parsed as IPv4
 * and fails if it is not a valid one (1.2.3.4.5 is an error, as in WHATWG).
 * Refused: empty hosts and labels, leading or trailing whitespace, control
 * bytes (also percent-encoded), "@", "/", ":" outside IPv6, "*", labels
 * over 63 bytes, names over 253 bytes, input over 1024 bytes, bad
 * percent-escapes, invalid UTF-8, punycode or IDNA.  Canonical names hold
 * only [a-z0-9_-] labels.  The result is idempotent: normalising name[]
 * again gives the same host.
 *
 * Returns 0 and fills *out, or -1 with *err set to a static English message
 * saying what is wrong with the host ("empty host", "label longer than 63
 * bytes", ...).  err may be NULL.  Thread-safe; allocates nothing that
 * outlives the call.
 */
int	policy_host_normalise(const char *in, size_t len, struct policy_host *out,
	    const char **err);

/*
 * Parses "HOST:PORT", "[V6]:PORT", or (when default_port is non-zero) a
 * HOST alone (a bare IPv6 address included), normalising HOST as above.
 * PORT is 1-5 digits, 1..65535.  Returns 0 or -1 with *err set (err may be
 * NULL).
 */
int	policy_hostport_parse(const char *in, size_t len, uint16_t default_port,
	    struct policy_host *host, uint16_t *port, const char **err);

/* Formats addr as text (inet_ntop form, no brackets) into buf. Returns buf. */
char	*policy_addr_format(const struct policy_addr *addr, char *buf, size_t len);
/* Converts a sockaddr (AF_INET/AF_INET6) to a policy_addr, unmapping
 * v4-mapped IPv6.  Returns 0, or -1 for another family. */
int	policy_addr_from_sockaddr(const struct sockaddr *sa,
	    struct policy_addr *out);

/* ------------------------------------------------------------------ */
/* Decisions                                                            */
/* ------------------------------------------------------------------ */

enum policy_verdict {
	POLICY_DENY = 0,
	POLICY_ALLOW
};

/*
 * The fixed set of reason codes.  Their text (policy_reason_str) is part
 * of the product's contract: audit lines, X-Moat-Reason headers and docs
 * use it.  Append only.
 */
enum policy_reason {
	POLICY_R_ALLOWED = 0,		/* "allowed": a rule allowed it */
	POLICY_R_NO_RULE,		/* "no-rule": no rule allows this target */
	POLICY_R_DENIED_BY_RULE,	/* "denied-by-rule": a deny rule matched */
	POLICY_R_PORT,			/* "port": host allowed, not on this port */
	POLICY_R_METHOD,		/* "method": method not allowed by the rule */
	POLICY_R_PATH,			/* "path": path not allowed by the rule */
	POLICY_R_PRIVATE_ADDRESS,	/* "private-address": special-purpose range */
	POLICY_R_METADATA,		/* "metadata": cloud metadata endpoint */
	POLICY_R_BAD_REQUEST,		/* "bad-request": malformed request */
	POLICY_R_DNS_FAILURE,		/* "dns-failure": name did not resolve */
	POLICY_R_UPSTREAM_UNREACHABLE,	/* "upstream-unreachable": every address failed */
	POLICY_R_TIMEOUT,		/* "timeout": a phase timed out */
	POLICY_R_LIMIT,			/* "limit": a size or count limit was hit */
	POLICY_R_NEEDS_INSPECTION,	/* "needs-inspection": rule needs to see inside a tunnel */
	POLICY_R_AUTH,			/* "auth": proxy authentication failed */
	POLICY_R_DNS_DENIED,		/* "dns-denied": DNS query for a denied name */
	POLICY_R_SECRET_LEAK,		/* "secret-leak": secret sent to a host not bound to it */
	POLICY_R_TLS,			/* "tls": upstream TLS failed (verification, handshake) */
	POLICY_R_RATE,			/* "rate": rate limit exceeded */
	POLICY_R_SHUTDOWN,		/* "shutdown": moatd is draining */
	POLICY_R_INTERNAL,		/* "internal": moatd fault (out of memory, ...) */
	POLICY_R_NEEDS_TLS,		/* "needs-tls": a rule that injects
					   allowed a plain HTTP request but
					   has no "plain_http": true */
	POLICY_R_DNS_BUDGET,		/* "dns-budget": the sandbox resolved
					   too many new names under a
					   wildcard rule this minute */
	POLICY_R_METHOD_OVERRIDE,	/* "method-override": a rule with
					   "strict_methods" and a request that
					   names another method (header or
					   "_method" parameter) */
	POLICY_R_BODY_ON_GET,		/* "body-on-get": a rule with
					   "strict_methods" and a GET or HEAD
					   request with a body */
	POLICY_R_SECRET_UNSAFE,		/* "secret-unsafe": a secret's value
					   would change the request's framing
					   (control bytes in a header field,
					   SP or control bytes in the target) */
	POLICY_R_SANDBOX_REFUSED,	/* "sandbox-refused": a register from
					   inside a sandbox's network
					   namespace, or with a name taken */
	POLICY_R_AUDIT_UNAVAILABLE,	/* "audit-unavailable": audit lines
					   cannot be written (a full disk, a
					   stalled sink) and audit.on_failure
					   is "deny" */
	POLICY_R_SNI_MISMATCH,		/* "sni-mismatch": a tunnel's TLS
					   names another host than the
					   tunnel's */
	POLICY_R_PROTOCOL,		/* "protocol": a tunnel carries a
					   protocol its rule's "protocols"
					   does not list */
	POLICY_R_DROPPED_PACKET,	/* "dropped-packet": the sandbox's
					   nftables table dropped a packet
					   (not TCP to moatd, nor DNS) */
	POLICY_R_QUOTA_BYTES,		/* "quota-bytes": the rule's or the
					   sandbox's "quota" of bytes sent
					   upstream is used up for this
					   window */
	POLICY_R_QUOTA_SECRET,		/* "quota-secret": the request would
					   carry a secret whose "quota" of
					   requests is used up for this
					   window */
	POLICY_R__COUNT
};

/*
 * What moatd answers for a reason: one row per code in policy.c's
 * policy_reason_table[], which README.md's and man/moatd.8's reason
 * tables are checked against (tests/reasons.test).
 *
 * http is the status of moatd's own HTTP reply for the reason, 0 where it
 * never ends in one: allowed (the origin answers), dns-denied (a DNS
 * answer), sandbox-refused (an admin error), sni-mismatch and protocol
 * (the tunnel is closed); should such a reason reach an HTTP reply it
 * gets 403.  Callers override http where the context decides, not the
 * reason: 408 for a request head that came too late (timeout), 503 for a
 * connection over its sandbox's limit (limit) and for moatd out of
 * descriptors or memory (internal), 421 for a request for another host
 * inside a tunnel (bad-request).
 *
 * socks5 is the reply code (RFC 1928) of a refused SOCKS5 request: 0x02
 * "not allowed by ruleset" for policy denials and for targets that cannot
 * be one, so a client tells a refusal from a network failure.  text is the
 * one sentence moatd's replies give an agent.
 */
struct policy_reason_info {
	const char	*code;		/* "no-rule": audit, X-Moat-Reason */
	int		 http;		/* 403, ...; 0: no HTTP reply */
	uint8_t		 socks5;	/* 0x02, ... */
	const char	*text;		/* one sentence, no final period */
};

/* Returns the reason's fixed text ("no-rule", ...).  Never NULL. */
const char	*policy_reason_str(enum policy_reason r);
/*
 * Returns the reason's row of the table; an unknown r gets internal's.
 * Never NULL.
 */
const struct policy_reason_info	*policy_reason_info(enum policy_reason r);

struct policy_rule;	/* opaque; owned by the compiled policy */

/* Flags a decision carries for the proxy. */
#define POLICY_F_INSPECT	0x01	/* the rule must see HTTP inside a tunnel
					   (methods, paths, inject, git, intercept) */
#define POLICY_F_OPAQUE		0x02	/* "intercept": false: never terminate TLS */
#define POLICY_F_WILDCARD	0x04	/* allowed a name through a wildcard
					   ("*.example.com" or "*") and no
					   applying allow rule names it
					   exactly: resolving it carries the
					   name's bytes out (the proxy
					   budgets these names) */
#define POLICY_F_NAMED		0x08	/* a refusal (deny verdicts only) of
					   a name that some rule spells out
					   exactly: not one the client
					   chose (see policy_waive()) */

/* Where an address is, by the databases of "geoip". */
struct policy_geo {
	char		country[3];	/* ISO 3166-1 alpha-2, "" if unknown */
	uint32_t	asn;		/* 0 if unknown */
};

struct policy_decision {
	enum policy_verdict		 verdict;
	enum policy_reason		 reason;
	const struct policy_rule	*rule;	/* borrowed from the policy; NULL if none */
	const char			*rule_name; /* borrowed; NULL if no rule */
	unsigned			 flags;	/* POLICY_F_* */
	struct policy_geo		 geo;	/* of the target's address, when
						   one was given and "geoip"
						   is set */
	enum policy_reason		 would_deny; /* audit mode: the refusal
						   policy_waive() let
						   through (verdict allow,
						   rule the one that would
						   refuse); POLICY_R_ALLOWED:
						   none */
};

/* What is known of a target when a decision is asked for. */
struct policy_target {
	const char			*name;	/* canonical DNS name, or NULL for an IP literal */
	const struct policy_addr	*addr;	/* the address to dial, or NULL before resolution */
	uint16_t			 port;	/* 0: any port (DNS answers), see
						   policy_decide() */
	const char			*method; /* HTTP method, NULL for a tunnel */
	const char			*path;	/* HTTP path+query, NULL for a tunnel */
	unsigned			 req;	/* POLICY_REQ_*: what the proxy
						   saw in the request's head */
};

/* policy_target.req, for rules with "strict_methods". */
#define POLICY_REQ_BODY		0x01	/* Content-Length > 0, or
					   Transfer-Encoding */
#define POLICY_REQ_OVERRIDE	0x02	/* X-HTTP-Method-Override,
					   X-HTTP-Method or X-Method-Override */

struct policy;	/* compiled, immutable policy; part of struct moat_config */

/*
 * Decides on a target.  Order, for every call:
 *  1. built-in deny sets: a metadata name (metadata.google.internal, ...)
 *     -> metadata; if addr is set: metadata addresses -> metadata, special
 *     purpose ranges -> private-address, unless allow_private names them
 *     (a metadata address only by an entry naming exactly that address);
 *  2. rules: the rules whose hosts match name, or whose cidrs contain addr,
 *     or (deny rules only) whose countries or asns hold addr's country or
 *     AS number by the "geoip" databases, are the candidates; a candidate applies if its ports, methods and
 *     paths match (methods and paths are not checked when target->method
 *     is NULL: then POLICY_F_INSPECT tells the caller the rule needs to see
 *     inside); a deny rule that applies wins over any allow rule, whatever
 *     their order; otherwise the first allow rule in file order that applies;
 *  3. nothing applies -> deny, reason port / method / path if an allow
 *     candidate matched the host but not that part (the first such rule in
 *     file order is named), else no-rule.
 * Cost depends on the number of labels of name and bits of addr, not on
 * the number of rules.
 *
 * Host patterns: "*" matches every name but never an IP literal target
 * (name NULL): addresses are opened by cidrs only.  "*.example.com" needs
 * at least one more label.  Paths: the target's path is normalised (query
 * dropped, unreserved escapes decoded, dot segments removed, "//"
 * collapsed); a path that cannot be normalised safely ("%2e%2e", "..%2F",
 * "\", NUL, ...) matches no allow rule and every deny rule that has paths.
 * A pattern without "*" is a prefix ending at a segment boundary ("/v1"
 * matches "/v1" and "/v1/x", not "/v1beta"); with "*" it is a glob over
 * the whole path, "*" matching any run of bytes including "/".
 *
 * Deny rules match wide, so that a spelling some backend reads as a
 * denied method or path is denied too: the method case-insensitively,
 * the path as above and also in its wide form (path_wide() in
 * policy_int.h: decoded until stable, look-alikes of ASCII folded,
 * ";params" and trailing dots of segments dropped, lower case) against
 * the wide form of the rule's patterns.  Allow rules
 * match the strict form exactly; a path whose wide form hides a dot
 * segment ("/v1/..;/admin", "%252e%252e") or cannot be formed is unsafe:
 * it matches no allow rule and every deny rule that has paths.
 *
 * "strict_methods" (rules with methods): if t->req has POLICY_REQ_OVERRIDE
 * or the query has a "_method" parameter (name decoded, any case), or the
 * method is GET or HEAD and t->req has POLICY_REQ_BODY, such an allow rule
 * does not apply (reason method-override or body-on-get) and such a deny
 * rule applies whatever the method, if its ports and paths match (the
 * verdict then has that reason, not denied-by-rule).
 *
 * With method NULL (a tunnel), a deny rule with methods or paths can
 * neither apply nor be ruled out: an allow verdict then carries
 * POLICY_F_INSPECT so the proxy decides again per request.
 *
 * With addr NULL (name known, not yet resolved) an allow verdict means
 * "allowed if an address passes"; the caller must call again with each
 * resolved address before dialling it.  Only host rules allow a name:
 * cidr rules never make an unresolved name "allowed", so a name no host
 * rule allows is never resolved.  A deny verdict with addr NULL is final:
 * the name need not be resolved.  An allow verdict carries
 * POLICY_F_WILDCARD when the client chose the name under a wildcard.
 * p NULL or t NULL: deny, internal.
 *
 * Port 0 asks whether the name may be reached on some port, as the DNS
 * listener must before it answers: allow rules apply whatever their
 * ports, deny rules only when they cover every port, and no address rule
 * can make an unresolved name "allowed" (a name only a cidr rule could
 * allow is not resolved for a sandbox, so DNS carries nothing out).
 *
 * Fills *out and returns out->verdict.  Never fails.
 */
enum policy_verdict	policy_decide(const struct policy *p,
			    const struct policy_target *t,
			    struct policy_decision *out);

/*
 * Audit mode ("audit_only": true at the top level of a config, on a
 * listener, or in a registered sandbox's config): a refusal the rules
 * make goes through and is audited as allowed with "would_deny": REASON
 * and the rule that would refuse, so that a policy can be rolled out
 * without breaking what already runs.  What protects against
 * exfiltration and reaching inside stays enforced in every mode.
 *
 * policy_reason_waivable(): whether r is a refusal of the rules, which
 * audit mode lets through: no-rule, denied-by-rule (GeoIP deny rules
 * too), port, method, path (the git preset's refusals too),
 * method-override, body-on-get, needs-inspection (without a CA, or with
 * "intercept": false: the tunnel goes through unread), protocol, rate
 * (a rule's "rate"; the DNS listener's own rate per sandbox is not the
 * policy's and stays) and dns-denied.  Never: metadata and
 * private-address (the built-in deny sets), secret-leak, secret-unsafe,
 * needs-tls, dns-budget, sni-mismatch, bad-request, limit, auth,
 * audit-unavailable, sandbox-refused, and moatd's own failures.
 */
bool	policy_reason_waivable(enum policy_reason r);
/*
 * In audit mode, after a decision: if d is a refusal for a reason
 * policy_reason_waivable() names, it becomes a would-deny: verdict
 * allow, reason allowed, would_deny the reason, rule and rule_name kept
 * (the rule that would refuse, or NULL), flags POLICY_F_WILDCARD alone,
 * or none when the refusal was POLICY_F_NAMED (a would-denied tunnel is
 * not inspected, and a name that no rule spells out is one the client
 * chose: the proxy budgets its resolution as a name under a
 * wildcard's).  A would-deny keeps its first reason.
 * Returns true if d is now (or already was) a would-deny, false for an
 * allow or a refusal that stays (d unchanged).  d NULL: false.
 */
bool	policy_waive(struct policy_decision *d);

/*
 * The built-in deny sets alone, step 1 of policy_decide(): the reason
 * (metadata or private-address) for which name (canonical, or NULL) or
 * addr (or NULL) is refused before any rule is read, p's allow_private
 * applied; POLICY_R_ALLOWED if neither is.  For callers that write
 * policies (`moat audit suggest`), which must never open these sets.
 * p NULL: POLICY_R_INTERNAL.
 */
enum policy_reason	policy_builtin_denied(const struct policy *p,
			    const char *name, const struct policy_addr *addr);

/*
 * GeoIP.  policy_geo_enabled(): the config has a "geoip" database.
 * policy_geo_lookup(): the country and AS number of a, each left empty
 * (country "", asn 0) when no database is set or it does not know a.
 * Lookups read a read-only mapping: safe from any thread.
 */
bool	policy_geo_enabled(const struct policy *p);
void	policy_geo_lookup(const struct policy *p, const struct policy_addr *a,
	    struct policy_geo *out);

/* Rule accessors, for audit and explain.  r must not be NULL. */
const char	*policy_rule_name(const struct policy_rule *r);
int		 policy_rule_line(const struct policy_rule *r);	/* config line, 0 if none */
int		 policy_rule_column(const struct policy_rule *r);
size_t		 policy_rule_index(const struct policy_rule *r);	/* in policy.rules */
size_t		 policy_rule_count(const struct policy *p);
/*
 * The rule's "rate": {"requests": N, "per_seconds": S}, or 0 if it has none.
 * The policy keeps no state: the proxy keeps one token bucket per rule index
 * (and sandbox) and denies with POLICY_R_RATE when it is empty.
 */
int		 policy_rule_rate(const struct policy_rule *r, unsigned *requests,
		    unsigned *per_seconds);
/*
 * Quotas: bytes sent upstream per window.  policy_rule_quota(): the
 * rule's "quota": {"bytes_up": N, "per_seconds": S}; policy_quota(): the
 * policy's own (policy.quota: everything its sandbox sends).  Each
 * returns true with N and S, false if there is none (r or p NULL: none).
 * The policy keeps no state: the proxy counts per sandbox, by rule name
 * (proxy/quota.h), and refuses with POLICY_R_QUOTA_BYTES.
 */
bool		 policy_rule_quota(const struct policy_rule *r,
		    uint64_t *bytes_up, unsigned *per_seconds);
bool		 policy_quota(const struct policy *p, uint64_t *bytes_up,
		    unsigned *per_seconds);

/* ------------------------------------------------------------------ */
/* Configuration                                                        */
/* ------------------------------------------------------------------ */

/* Where a secret (or a token) comes from. */
struct moat_secret_ref {
	char		*name;		/* [A-Za-z_][A-Za-z0-9_]{0,63} */
	char		*file;		/* path, or NULL */
	char		*env;		/* environment variable, or NULL */
	char		*placeholder_env; /* variable name the sandbox gets; default = name */
	unsigned	 quota_requests;  /* "quota": requests per window that
					     may carry it; 0: no quota */
	unsigned	 quota_per_seconds; /* ... the window */
	int		 line, column;
};

enum moat_listen_proto {
	MOAT_PROTO_HTTP = 0,	/* HTTP/1.1 forward proxy + CONNECT */
	MOAT_PROTO_SOCKS5,	/* SOCKS5 (RFC 1928/1929) */
	MOAT_PROTO_MIXED,	/* "http+socks5": first byte tells them apart */
	MOAT_PROTO_TRANSPARENT,	/* redirected TCP (SO_ORIGINAL_DST) */
	MOAT_PROTO_DNS		/* DNS over UDP and TCP */
};

/* Returns "http", "socks5", "http+socks5", "transparent" or "dns". */
const char	*policy_proto_str(enum moat_listen_proto p);

/*
 * How an http listener answers a CONNECT that the policy refuses (a
 * status 403): "status", the 403 answers the CONNECT itself (what curl
 * shows as "CONNECT tunnel failed, response 403", and what a relay may
 * replace with a bare 502); "in-tunnel", moatd opens the tunnel instead,
 * presents a leaf for the CONNECT's host and answers the first request
 * inside with that 403 (needs a CA: tls.ca_cert).
 */
enum moat_connect_refusal {
	MOAT_REFUSAL_STATUS = 0,
	MOAT_REFUSAL_IN_TUNNEL
};

/* "status" or "in-tunnel"; policy_connect_refusal_parse() the reverse:
 * 0, or -1 for any other text. */
const char	*policy_connect_refusal_str(enum moat_connect_refusal r);
int		 policy_connect_refusal_parse(const char *s,
		    enum moat_connect_refusal *r);

struct moat_listen {
	enum moat_listen_proto	 proto;
	char			*address;	/* as written: "HOST:PORT" or "unix:PATH" */
	bool			 is_unix;
	char			*path;		/* unix socket path, or NULL */
	struct policy_host	 host;		/* TCP: the address to bind (always an IP) */
	uint16_t		 port;
	int			 mode;		/* unix socket mode, default 0660; -1 if not unix */
	char			*sandbox;	/* identity in audit lines; default "default" */
	struct moat_secret_ref	*auth;		/* "auth": identities that may log in, or NULL */
	size_t			 nauth;		/* 0: no authentication asked */
	size_t			 connections;	/* open connections of its sandbox,
						   instead of
						   limits.sandbox_connections;
						   0: not given */
	enum moat_connect_refusal connect_refusal; /* "connect_refusal" */
	int			 audit_only;	/* "audit_only": 1 or 0; -1: not
						   given (the top level's) */
	int			 line, column;	/* of this listener in the config */
	int			 refusal_line, refusal_column; /* of its
						   "connect_refusal", if given */
};

/* Named timeouts, all in milliseconds.  Defaults in policy/config.c. */
struct moat_timeouts {
	unsigned	request_head_ms;	/* client must send a whole request head */
	unsigned	idle_client_ms;		/* keep-alive client between requests */
	unsigned	dns_ms;			/* one name resolution */
	unsigned	connect_ms;		/* one upstream connect attempt */
	unsigned	response_head_ms;	/* upstream's response head after request */
	unsigned	idle_body_ms;		/* a body with no byte moved either way */
	unsigned	idle_tunnel_ms;		/* tunnel with no byte either way */
	unsigned	idle_upstream_ms;	/* pooled idle upstream connection */
	unsigned	tls_handshake_ms;	/* either TLS handshake */
	unsigned	drain_ms;		/* SIGTERM: deadline for open connections */
};

#define MOAT_CONNECTIONS_DEFAULT	10000	/* limits.connections */
#define MOAT_REQUEST_IDS_MAX		8	/* audit.request_id_headers */
#define MOAT_REQUEST_ID_NAME_MAX	64	/* ... a field name, bytes */

/* Size and count limits.  Defaults in policy/config.c. */
struct moat_limits {
	size_t		request_line_bytes;
	size_t		header_bytes;		/* whole request or response head */
	size_t		header_count;
	size_t		connections;		/* open client connections, all workers */
	size_t		sandbox_connections;	/* ... of one sandbox, all workers
						   (default connections / 4) */
	bool		sandbox_connections_set; /* given, not the default */
	bool		connections_set;	/* given, not the default */
	size_t		body_inspect_bytes;	/* request body scanned for secrets */
	size_t		partial_heads_bytes;	/* all unfinished request heads
						   together, all workers */
	size_t		dns_cache_entries;	/* per worker */
	size_t		dns_wildcard_names;	/* new names a sandbox may have
						   resolved per minute under
						   each wildcard rule */
};

struct moat_tls {
	char		*ca_cert;		/* PEM file, or NULL: no interception */
	char		*ca_key;
	char		**upstream_ca_files;	/* NULL-terminated, may be NULL */
	char		**extra_ca_files;	/* added to the sandbox trust bundle */
	size_t		 leaf_cache_entries;
	char		*trust_dir;		/* moatd writes the trust bundle
						   and store there, or NULL */
};

/*
 * "metrics": moatd's Prometheus listener (proxy/metrics_http.c) and the
 * caps on its series (proxy/metrics.h).  address NULL: no metrics.
 * config_check_addresses() refuses an address a sandbox could reach.
 */
struct moat_metrics {
	char			*address;	/* as written, or NULL */
	bool			 is_unix;
	char			*path;		/* unix socket path, or NULL */
	struct policy_host	 host;		/* TCP: the address to bind */
	uint16_t		 port;
	int			 mode;		/* unix socket mode */
	size_t			 max_sandboxes;	/* sandbox names, then (other) */
	size_t			 max_rules;	/* rule names per sandbox */
	size_t			 max_series;	/* series per family */
	int			 line, column;	/* of "address" */
};

struct moat_config {
	struct moat_listen	*listen;
	size_t			 nlisten;
	struct policy		*policy;	/* compiled; owned */
	struct moat_secret_ref	*secrets;
	size_t			 nsecrets;
	char			*audit_path;	/* file, "-" for stderr, NULL: none */
	int			 audit_deny;	/* audit.on_failure "deny" (1,
						 * the default) or "drop" */
	bool			 audit_chain;	/* audit.hash_chain: lines carry
						 * a SHA-256 chain */
	char			**audit_request_ids; /* audit.request_id_headers:
						 * the request fields copied
						 * into audit lines, as
						 * written, NULL-terminated;
						 * NULL: none */
	size_t			 naudit_request_ids;
	int			 audit_only;	/* "audit_only": 1 or 0; -1: not
						 * given (enforce; a
						 * registered sandbox: the
						 * daemon's) */
	char			**resolver_servers; /* "HOST:PORT" strings, NULL-terminated, or NULL: system */
	unsigned		 resolver_tries;
	struct moat_tls		 tls;
	char			*admin_address;	/* "unix:PATH" as written, or NULL */
	char			*admin_path;	/* its PATH, or NULL */
	int			 admin_mode;
	struct moat_metrics	 metrics;
	struct moat_timeouts	 timeouts;
	struct moat_limits	 limits;
	unsigned		 workers;	/* 0 = one per CPU in the affinity mask */
	char			*user;		/* drop to this user after binding, or NULL */
	char			*geoip_country_db; /* "geoip" paths, or NULL */
	char			*geoip_asn_db;
	char			*file;		/* name given to the loader */
	/* private: */
	int			 refcnt;
};

/*
 * The GeoIP databases a config names ("geoip") are opened by the caller,
 * through geo_open: it opens the MaxMind DB file path into *db (as
 * libmaxminddb's MMDB_open() does) and returns 0, or returns -1 with *err
 * set to a message saying why (valid until the next call).  The config
 * owns *db from then on and releases it with MMDB_close() when it is
 * freed.  arg is geo_arg.  geo_open is called while the config loads,
 * from the loading thread.
 */
struct MMDB_s;
/*
 * A top-level key its caller will not use, and why (moat run takes only
 * "policy", "secrets", "tls" and "geoip" of a --policy file): a key
 * present is checked as usual and gets a warning at the key, "\"KEY\":
 * why".
 */
struct policy_unused_key {
	const char	*key;
	const char	*why;
};
struct policy_load_opts {
	int	(*geo_open)(const char *path, struct MMDB_s *db,
		    const char **err, void *arg);
	void	*geo_arg;
	const struct policy_unused_key	*unused; /* ends with a NULL key;
						   NULL: none */
};

/*
 * Loads, validates and compiles a config.  name is what diagnostics call
 * the file; buf/len its bytes (need not be NUL-terminated).  opts may be
 * NULL, as policy_config_load() passes: without opts->geo_open, a config
 * that names a GeoIP database fails to load ("cannot open the GeoIP
 * database": this program opens none).
 *
 * Every problem is reported, not only the first: JSON syntax, duplicate
 * keys, unknown keys, wrong types, bad values, semantic conflicts, each as
 * a diagnostic with the line and column of the offending key or value.
 * Warnings (legal but suspicious configs) do not fail the load.
 *
 * Returns a config with a reference count of 1, or NULL if any error was
 * reported (or memory ran out: then a diagnostic says so).  The caller
 * owns diags and frees it with policy_diags_clear().
 */
struct moat_config	*policy_config_load_opts(const char *name,
			    const char *buf, size_t len,
			    const struct policy_load_opts *opts,
			    struct policy_diags *diags);
struct moat_config	*policy_config_load(const char *name, const char *buf,
			    size_t len, struct policy_diags *diags);

/* Adds a reference.  Returns c.  c must not be NULL. */
struct moat_config	*policy_config_ref(struct moat_config *c);
/* Drops a reference; frees at zero.  NULL is accepted. */
void			 policy_config_unref(struct moat_config *c);

/*
 * Adds extra allow_private CIDRs (from a command line) to a loaded config's
 * policy.  cidr is "ADDR/LEN" or a bare address (strict dotted quad or
 * IPv6; host bits must be clear; IPv4-mapped prefixes are refused).
 * Returns 0, or -1 with *err set for a bad CIDR.  Only before the config
 * is shared with other threads.
 */
int	policy_config_allow_private(struct moat_config *c, const char *cidr,
	    const char **err);

/* ------------------------------------------------------------------ */
/* Secrets in rules: injection, binding, the git preset                 */
/* ------------------------------------------------------------------ */

/*
 * What moatd does with a rule's secrets.  The sandbox holds placeholders;
 * moatd holds the values (read from moat_config.secrets[] refs) and puts
 * them into the requests that a rule allowing the target says to, only
 * where it sees the request: inside TLS it terminates (interception), or
 * on plain http:// when the rule says "plain_http": true.
 *
 * Every secret index below is an index into moat_config.secrets[] (less
 * than cfg->nsecrets) of the config the rule belongs to.  Everything is
 * owned by the compiled policy and borrowed until the config's last
 * reference is dropped.  Nothing here ever holds a secret value.
 */

enum policy_inject_kind {
	POLICY_INJECT_HEADER = 0,	/* {"header": NAME, "value": TEMPLATE}:
					   set NAME, replacing what the client
					   sent (every field of that name) */
	POLICY_INJECT_BASIC,		/* {"basic": {"user": T,
					   "password": T}}: set Authorization
					   to "Basic " + base64(user ":"
					   password) */
	POLICY_INJECT_PLACEHOLDERS	/* {"placeholders": [SECRET, ...]}:
					   the sandbox's placeholder of each
					   secret is replaced by its value in
					   the request's header values and
					   target, and in the body with
					   "body": true */
};

/* How a placeholders entry writes a value into the request target. */
#define POLICY_ENCODE_NONE	0	/* as it is (refused if it holds SP
					   or a control byte) */
#define POLICY_ENCODE_PERCENT	1	/* "encode": "percent": every byte
					   but ALPHA DIGIT - . _ ~ as %XX */

#define POLICY_TPL_LITERAL	SIZE_MAX	/* .secret of a literal part */

/*
 * One piece of a template.  A literal: text holds len bytes (also
 * NUL-terminated; never a NUL, CR, LF or other control byte but HTAB) and
 * secret is POLICY_TPL_LITERAL.  A secret: text is NULL, len 0, secret the
 * index of the secret whose value goes here.  "$$" in the config is one
 * "$" in a literal.
 */
struct policy_tpl_part {
	const char	*text;
	size_t		 len;
	size_t		 secret;
};

/*
 * A template: its parts in order.  Adjacent literals are merged; an empty
 * template is one empty literal; a template the entry's kind does not use
 * has no parts (NULL, 0).
 */
struct policy_template {
	const struct policy_tpl_part	*parts;
	size_t				 nparts;
};

/*
 * One entry of a rule's "inject" array.
 *  HEADER: header is the field name as written (an RFC 9110 token; never
 *    a hop-by-hop field, Host, Content-Length or Transfer-Encoding;
 *    compare it case-insensitively); value has at least one secret; a
 *    literal at its start or end has no leading or trailing SP/HTAB.
 *  BASIC: header is "Authorization"; user and password are templates
 *    (user's literals hold no ":"); at least one of them has a secret.
 *  PLACEHOLDERS: secrets[0..nsecrets) (at least one, no repeats);
 *    encode (POLICY_ENCODE_*) for the request target, body true if the
 *    entry says "body": true (placeholders in the body are replaced;
 *    by default a body is forwarded as the sandbox wrote it).
 * A rule never has two entries that set the same header (BASIC counts as
 * Authorization).  The proxy must refuse (not send, POLICY_R_SECRET_UNSAFE)
 * a request whose header field would hold a control byte other than HTAB
 * (a secret value with one of them), whose target would hold SP or a
 * control byte without "encode", and a BASIC user whose secret value
 * holds ":".
 * line and column locate the entry in the config.
 */
struct policy_inject {
	enum policy_inject_kind		 kind;
	const char			*header;
	struct policy_template		 value;
	struct policy_template		 user;
	struct policy_template		 password;
	const size_t			*secrets;
	size_t				 nsecrets;
	int				 encode;
	bool				 body;
	int				 line, column;
};

/*
 * The rule's injections in config order, *n set to their number (0 and
 * NULL if it has none).  r and n must not be NULL.  Borrowed from the
 * policy.
 */
const struct policy_inject	*policy_rule_injects(
				    const struct policy_rule *r, size_t *n);
/*
 * Every secret the rule injects (header, basic or placeholders), each
 * once, in order of first use; *idx points at their indexes (borrowed;
 * NULL when there are none).  Returns their number.  The audit line's
 * "injected" lists, in this order, those whose values a request carried
 * (the names are cfg->secrets[idx[i]].name).
 */
size_t		policy_rule_secrets(const struct policy_rule *r,
		    const size_t **idx);
/*
 * The rule's "plain_http" (default false).  A rule that injects applies
 * its injections only where moatd terminated TLS unless this is true;
 * see policy_plain_http_check().
 */
bool		policy_rule_plain_http(const struct policy_rule *r);
/*
 * For a request moatd reads as plain HTTP (not inside TLS it terminated)
 * that rule r allowed: POLICY_R_NEEDS_TLS if r injects anything and its
 * "plain_http" is false (deny the request: sending it would either leak
 * the secret in clear text or miss the credential the rule promised),
 * else POLICY_R_ALLOWED.  r NULL (an address rule decided): allowed.
 */
enum policy_reason	policy_plain_http_check(const struct policy_rule *r);

#define POLICY_GIT_NONE		0	/* no "git" key */
#define POLICY_GIT_READ_ONLY	1	/* "git": "read-only" */

/*
 * A rule's "protocols": what its tunnels may carry, judged on their first
 * bytes (proxy/proto_peek.h).  0 (the default, or "any"): any protocol.
 */
#define POLICY_PROTO_TLS	0x01
#define POLICY_PROTO_HTTP	0x02
#define POLICY_PROTO_SSH	0x04
/* The rule's POLICY_PROTO_* bits; 0 for any protocol, or r NULL. */
unsigned	policy_rule_protocols(const struct policy_rule *r);
/* "tls" -> POLICY_PROTO_TLS, ...; 0 for anything else ("any" too). */
int		policy_proto_bit(const char *name);
/* Writes the bits as the config spells them ("tls, ssh", or "any"). */
char		*policy_protocols_format(unsigned bits, char *buf, size_t len);

/*
 * Whether moatd can read what a port carries: NULL where it may be HTTP
 * or TLS, else the name of the port's own protocol, which moatd passes
 * unread ("ssh" for 22, "git://" for 9418, git's daemon).  A rule that
 * must see requests (methods, paths, inject, git, "intercept": true) may
 * not cover such a port, nor list "ssh" in its "protocols": the config
 * is refused (ssh is opaque to moat; git push over it cannot be
 * stopped).
 */
const char	*policy_port_unreadable(uint16_t port);

/* The rule's git preset: POLICY_GIT_NONE or POLICY_GIT_READ_ONLY. */
int		policy_rule_git(const struct policy_rule *r);

/*
 * The "git": "read-only" preset, applied to one request that rule r
 * allowed (call it after policy_decide() allowed a request, with the
 * same method and origin-form path and query).  With the preset:
 *  - GET and HEAD are allowed (smart fetch "info/refs?service=
 *    git-upload-pack", dumb-protocol files, web pages), unless the path
 *    or a "service" parameter names receive-pack;
 *  - POST is allowed only to a path whose last segment is
 *    "git-upload-pack" (a smart fetch);
 *  - a path, or a query parameter's name or value, that contains
 *    "receive-pack" (any case), or a "service" parameter other than
 *    exactly "git-upload-pack", is git push (or an unknown service):
 *    POLICY_R_PATH, detail "git push is denied by the read-only preset"
 *    (another sentence for an unknown service);
 *  - any other method (PUT, DELETE, MKCOL, PROPPATCH, LOCK, MOVE, COPY,
 *    ... : dumb-HTTP writes; methods are case-sensitive): POLICY_R_METHOD.
 * The path is normalised as for path rules (dot segments, "//",
 * unreserved escapes); the query's names and values are percent-decoded
 * ("+" is a space) and split at "&" and ";".  A path that cannot be
 * normalised safely, a bad escape in the query, or "service" given twice
 * is POLICY_R_PATH.  method NULL (a tunnel, decided per request later)
 * or a rule without the preset: POLICY_R_ALLOWED.  path_and_query NULL
 * with a method: POLICY_R_PATH.
 *
 * Returns POLICY_R_ALLOWED (and *detail NULL) or the reason, with *detail
 * a static English sentence for the 403 page and the audit line.  detail
 * may be NULL.  r NULL (no rule: an address decided): POLICY_R_ALLOWED.
 * Allocates only for requests longer than a few KiB; out of memory is
 * POLICY_R_PATH too (fail closed).
 */
enum policy_reason	policy_git_check(const struct policy_rule *r,
			    const char *method, const char *path_and_query,
			    const char **detail);

/*
 * True if secret (an index into moat_config.secrets[]) is bound to the
 * target: some allow rule that applies to it injects the secret.  name is
 * the canonical DNS name (as in struct policy_target), or NULL or "" for
 * an IP literal target; addr the address, or NULL.  A rule applies as in
 * policy_decide() for a tunnel (method and path unknown): its hosts match
 * name (when there is a name; then address rules do not count, as they
 * never allow a name) or its cidrs contain addr (no name), and its ports
 * include port (0: any port).  A name or address in a built-in deny set
 * is bound to nothing.  The proxy denies a request that carries a
 * secret's value or placeholder to a target the secret is not bound to
 * (POLICY_R_SECRET_LEAK).  Costs what policy_decide() costs; p NULL, or
 * neither a name nor addr: false.
 */
bool	policy_secret_bound(const struct policy *p, size_t secret,
	    const char *name, const struct policy_addr *addr, uint16_t port);

/*
 * Writes template t as the config spells it, a secret as ${NAME} and a
 * "$" of a literal as "$$", never a value, into buf (NUL-terminated,
 * truncated to len).  c is the config t belongs to.  Returns buf.
 */
char	*policy_template_format(const struct moat_config *c,
	    const struct policy_template *t, char *buf, size_t len);

/* The embedded default config (conf/default.json), NUL-terminated. */
extern const char	moat_default_config[];
extern const size_t	moat_default_config_len;

/* ------------------------------------------------------------------ */
/* Explain                                                              */
/* ------------------------------------------------------------------ */

struct policy_explain_target {
	struct policy_host	host;
	struct policy_target	t;	/* points into this struct: do not copy */
	char			*buf;	/* owned storage for t's strings */
	bool			 tls;	/* https:// or wss:// URL, or a
					   tunnel (HOST:PORT) to a port
					   other than 80 */
};

/*
 * Parses a target as given to `moat explain`: a URL (http://, https://,
 * ws://, wss://; port from the scheme if absent; path and query kept, the
 * fragment dropped, "/" if there is none; user info refused), "HOST:PORT",
 * or "[V6]:PORT"; optionally "METHOD URL", or the method in method (not
 * both).  A URL target gets method "GET" unless one is given; a HOST:PORT
 * target is a tunnel (method and path NULL) and takes no method.  Fills
 * *out: t.name points at host.name for a name, t.addr at host.addr for an
 * IP literal; method and path live in buf, which the caller frees with
 * free() (also on error: it is then NULL).  Returns 0, or -1 with *err set
 * (err may be NULL).
 */
int	policy_explain_parse(const char *arg, const char *method,
	    struct policy_explain_target *out, const char **err);

/* How moatd would carry an allowed target's traffic. */
enum policy_transport {
	POLICY_XPORT_NONE = 0,		/* denied: nothing is carried */
	POLICY_XPORT_PLAIN,		/* plain HTTP: moatd reads requests */
	POLICY_XPORT_INSPECTED,		/* TLS is terminated by moatd */
	POLICY_XPORT_OPAQUE		/* opaque tunnel: bytes unread */
};

/*
 * Decides on et as moatd would, beyond policy_decide(c->policy, t, d): t
 * is et->t, or a copy of it with an address set.  After an allow:
 *  - a TLS target (et->tls) whose decision needs inspection
 *    (POLICY_F_INSPECT) is denied with needs-inspection if the config has
 *    no CA (tls.ca_cert) or the rule says "intercept": false;
 *  - a URL request is put through policy_git_check();
 *  - a plain HTTP URL request (http://, ws://) is put through
 *    policy_plain_http_check() (needs-tls).
 * A deny made here keeps the rule in d and sets *detail to a static
 * sentence saying why; otherwise *detail is NULL.  *xport says how an
 * allowed target is carried (POLICY_XPORT_NONE when denied).  detail and
 * xport may be NULL.  Returns d->verdict.
 */
enum policy_verdict	policy_explain_decide(const struct moat_config *c,
			    const struct policy_explain_target *et,
			    const struct policy_target *t,
			    struct policy_decision *d, const char **detail,
			    enum policy_transport *xport);

/*
 * Describes injection in (of config c) for `moat explain`, by secret name
 * and never by value, into buf (NUL-terminated, truncated to len):
 * "header Authorization: Bearer ${KEY}", "basic user ${U} password ${P}"
 * or "placeholders of KEY, OTHER (headers, query, body)".  Returns buf.
 */
char	*policy_explain_inject(const struct moat_config *c,
	    const struct policy_inject *in, char *buf, size_t len);

#endif /* MOAT_POLICY_H */
