/*
 * config.c - loading, validating and compiling moat's JSON configuration.
 *
 * What it is: the schema of the config, written as code.  jansson parses
 * the text (syntax errors and duplicate keys come with its position);
 * jsonpos.c gives the line:column of every key and value; the walkers
 * check every key and value, report every problem with its position
 * and path ("policy.rules[2].ports[0]: 70000 is not a port (1-65535)"),
 * keep going, and fail at the end if anything was an error.  What is valid
 * is copied into struct moat_config and compiled into struct policy.
 * This file holds the load itself, the top level, the GeoIP databases and
 * rules' "countries" and "asns", the small sections (audit, resolver,
 * tls, admin, workers, user) and the config's ownership; the rest is in
 * config_diag.c (messages, typed getters), config_listen.c,
 * config_rules.c and config_secrets.c, which share config_int.h.
 *
 * What it is not: I/O.  The caller hands over the bytes; secrets and
 * tokens are recorded as references (file or variable names) that moatd
 * reads; no path named here is opened but the GeoIP databases.
 *
 * Defaults and ranges: the one table config_defaults[] below.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "policy/policy_int.h"
#include "policy/config_int.h"
#include "policy/jsonload.h"

/*
 * Every default and every numeric range of the config, one line each.
 */
const struct config_default	config_defaults[] = {
	/* listen[].mode: a unix socket listener's permissions */
	{ "listen", "mode", CONFIG_T_MODE, 0660, 0, 07777, NULL, CONFIG_NOOFF },
	/* listen[].sandbox: the identity audit lines carry */
	{ "listen", "sandbox", CONFIG_T_STRING, 0, 0, 0, "default",
	    CONFIG_NOOFF },
	/* listen[].connections: the listener's sandbox's open connections,
	 * instead of limits.sandbox_connections (no default: absent) */
	{ "listen", "connections", CONFIG_T_RANGE, 0, 1, 1000000, NULL,
	    CONFIG_NOOFF },
	/* audit.path: "-" is moatd's stderr */
	{ "audit", "path", CONFIG_T_STRING, 0, 0, 0, "-", CONFIG_NOOFF },
	/* resolver.tries: attempts per query before dns-failure */
	{ "resolver", "tries", CONFIG_T_UINT, 2, 1, 10, NULL,
	    CONFIG_OFF(resolver_tries) },
	/* resolver.servers: default port of a server */
	{ "resolver", "port", CONFIG_T_RANGE, 53, 1, 65535, NULL,
	    CONFIG_NOOFF },
	/* tls.leaf_cache_entries: minted leaf certificates kept */
	{ "tls", "leaf_cache_entries", CONFIG_T_SIZE, 1024, 1, 1000000, NULL,
	    CONFIG_OFF(tls.leaf_cache_entries) },
	/* admin.mode: the admin socket's permissions (owner only) */
	{ "admin", "mode", CONFIG_T_MODE, 0600, 0, 07777, NULL, CONFIG_NOOFF },
	/* metrics.mode: a unix metrics socket's permissions (owner only) */
	{ "metrics", "mode", CONFIG_T_MODE, 0600, 0, 07777, NULL,
	    CONFIG_NOOFF },
	/* metrics.max_sandboxes: sandbox names with series of their own;
	 * the rest are counted as sandbox="(other)" */
	{ "metrics", "max_sandboxes", CONFIG_T_SIZE, 256, 1, 10000, NULL,
	    CONFIG_OFF(metrics.max_sandboxes) },
	/* metrics.max_rules: rule names per sandbox, then rule="(other)" */
	{ "metrics", "max_rules", CONFIG_T_SIZE, 64, 1, 1000, NULL,
	    CONFIG_OFF(metrics.max_rules) },
	/* metrics.max_series: series of decisions, and of bytes */
	{ "metrics", "max_series", CONFIG_T_SIZE, 4096, 16, 100000, NULL,
	    CONFIG_OFF(metrics.max_series) },
	/* timeouts.request_head_ms: client must send a whole request head */
	{ "timeouts", "request_head_ms", CONFIG_T_UINT, 10000, 1, 86400000,
	    NULL, CONFIG_OFF(timeouts.request_head_ms) },
	/* timeouts.idle_client_ms: keep-alive client between requests */
	{ "timeouts", "idle_client_ms", CONFIG_T_UINT, 60000, 1, 86400000,
	    NULL, CONFIG_OFF(timeouts.idle_client_ms) },
	/* timeouts.dns_ms: one name resolution */
	{ "timeouts", "dns_ms", CONFIG_T_UINT, 5000, 1, 86400000, NULL,
	    CONFIG_OFF(timeouts.dns_ms) },
	/* timeouts.connect_ms: one upstream connect attempt */
	{ "timeouts", "connect_ms", CONFIG_T_UINT, 10000, 1, 86400000, NULL,
	    CONFIG_OFF(timeouts.connect_ms) },
	/* timeouts.response_head_ms: upstream's response head (slow APIs) */
	{ "timeouts", "response_head_ms", CONFIG_T_UINT, 300000, 1, 86400000,
	    NULL, CONFIG_OFF(timeouts.response_head_ms) },
	/* timeouts.idle_body_ms: a request or response body that stalls */
	{ "timeouts", "idle_body_ms", CONFIG_T_UINT, 60000, 1, 86400000,
	    NULL, CONFIG_OFF(timeouts.idle_body_ms) },
	/* timeouts.idle_tunnel_ms: tunnel with no byte either way */
	{ "timeouts", "idle_tunnel_ms", CONFIG_T_UINT, 3600000, 1, 86400000,
	    NULL, CONFIG_OFF(timeouts.idle_tunnel_ms) },
	/* timeouts.idle_upstream_ms: pooled idle upstream connection */
	{ "timeouts", "idle_upstream_ms", CONFIG_T_UINT, 30000, 1, 86400000,
	    NULL, CONFIG_OFF(timeouts.idle_upstream_ms) },
	/* timeouts.tls_handshake_ms: either TLS handshake */
	{ "timeouts", "tls_handshake_ms", CONFIG_T_UINT, 10000, 1, 86400000,
	    NULL, CONFIG_OFF(timeouts.tls_handshake_ms) },
	/* timeouts.drain_ms: SIGTERM deadline for open connections */
	{ "timeouts", "drain_ms", CONFIG_T_UINT, 10000, 1, 86400000, NULL,
	    CONFIG_OFF(timeouts.drain_ms) },
	/* limits.request_line_bytes: longest request line */
	{ "limits", "request_line_bytes", CONFIG_T_SIZE, 8192, 256, 65536,
	    NULL, CONFIG_OFF(limits.request_line_bytes) },
	/* limits.header_bytes: whole request or response head */
	{ "limits", "header_bytes", CONFIG_T_SIZE, 65536, 1024, 1048576, NULL,
	    CONFIG_OFF(limits.header_bytes) },
	/* limits.header_count: header fields in one head */
	{ "limits", "header_count", CONFIG_T_SIZE, 100, 8, 1000, NULL,
	    CONFIG_OFF(limits.header_count) },
	/* limits.connections: open client connections, all workers */
	{ "limits", "connections", CONFIG_T_SIZE, 0, 1, 1000000, NULL,
	    CONFIG_OFF(limits.connections) },
	/* limits.sandbox_connections: open connections of one sandbox, all
	 * workers; 0 stands for "not given": a quarter of limits.connections
	 * (config_limits) */
	{ "limits", "sandbox_connections", CONFIG_T_SIZE, 0, 1, 1000000, NULL,
	    CONFIG_OFF(limits.sandbox_connections) },
	/* limits.body_inspect_bytes: request body scanned for secrets */
	{ "limits", "body_inspect_bytes", CONFIG_T_SIZE, 1048576, 0, 67108864,
	    NULL, CONFIG_OFF(limits.body_inspect_bytes) },
	/* limits.partial_heads_bytes: what unfinished request heads may
	 * hold in moatd's memory, all connections together */
	{ "limits", "partial_heads_bytes", CONFIG_T_SIZE, 33554432, 1048576,
	    4294967296ull, NULL, CONFIG_OFF(limits.partial_heads_bytes) },
	/* limits.dns_cache_entries: cached answers per worker (0: none) */
	{ "limits", "dns_cache_entries", CONFIG_T_SIZE, 4096, 0, 1000000,
	    NULL, CONFIG_OFF(limits.dns_cache_entries) },
	/* limits.dns_wildcard_names: new names per minute, per sandbox and
	 * wildcard rule, that moatd resolves (DNS carries their bytes out) */
	{ "limits", "dns_wildcard_names", CONFIG_T_SIZE, 100, 1, 4096, NULL,
	    CONFIG_OFF(limits.dns_wildcard_names) },
	/* workers: threads; 0 ("auto") = one per CPU in the affinity mask */
	{ NULL, "workers", CONFIG_T_UINT, 0, 1, 256, NULL,
	    CONFIG_OFF(workers) },
	/* rules[].rate.requests: requests per window */
	{ "rate", "requests", CONFIG_T_RANGE, 0, 1, 1000000000, NULL,
	    CONFIG_NOOFF },
	/* rules[].rate.per_seconds: the window */
	{ "rate", "per_seconds", CONFIG_T_RANGE, 0, 1, 1000000000, NULL,
	    CONFIG_NOOFF },
	/* rules[].quota.bytes_up, policy.quota.bytes_up: bytes sent upstream
	 * per window (1 PB at most) */
	{ "quota", "bytes_up", CONFIG_T_RANGE, 0, 1, 1000000000000000ll,
	    NULL, CONFIG_NOOFF },
	/* secrets.NAME.quota.requests: requests per window that may carry
	 * the secret */
	{ "quota", "requests", CONFIG_T_RANGE, 0, 1, 1000000000, NULL,
	    CONFIG_NOOFF },
	/* quota.per_seconds: the window, one second to a day */
	{ "quota", "per_seconds", CONFIG_T_RANGE, 0, 1, 86400, NULL,
	    CONFIG_NOOFF },
};

const size_t	config_ndefaults = sizeof(config_defaults) /
    sizeof(config_defaults[0]);

static void	config_top(struct config_ctx *x, json_t *root);
static bool	config_geo_rule(struct config_ctx *x, size_t pos,
		    uint32_t rule, const char *key, bool db, bool given,
		    const char *dbkey);
static void	config_geoip(struct config_ctx *x, json_t *v, size_t pos);
static void	config_audit(struct config_ctx *x, json_t *v, size_t pos);
static void	config_resolver(struct config_ctx *x, json_t *v, size_t pos);
static bool	config_server(struct config_ctx *x, json_t *v, size_t pos,
		    char **out);
static void	config_tls(struct config_ctx *x, json_t *v, size_t pos);
static void	config_trust_dir(struct config_ctx *x, json_t *v, size_t pos,
		    bool ca);
static void	config_file_list(struct config_ctx *x, json_t *v, size_t pos,
		    char ***out);
static void	config_admin(struct config_ctx *x, json_t *v, size_t pos);
static void	config_metrics(struct config_ctx *x, json_t *v, size_t pos);
static void	config_workers(struct config_ctx *x, json_t *v, size_t pos);
static void	config_user(struct config_ctx *x, json_t *v, size_t pos);
static void	config_limits(struct moat_config *c);
static void	config_unused(struct config_ctx *x,
		    const struct config_field *f, size_t nf);
static void	config_syntax(struct policy_diags *d, const char *buf,
		    size_t len, const json_error_t *je);
static void	config_sort(struct policy_diags *d, size_t from);
static void	config_apply_defaults(struct moat_config *c);
static void	config_free(struct moat_config *c);
static void	config_free_list(char **v);

/* ------------------------------------------------------------------ */
/* Top level                                                            */
/* ------------------------------------------------------------------ */

/* In the order sections are read: secrets and GeoIP databases before the
 * rules that use them. */
enum {
	TOP_LISTEN = 0, TOP_SECRETS, TOP_GEOIP, TOP_POLICY, TOP_AUDIT,
	TOP_RESOLVER,
	TOP_TLS, TOP_ADMIN, TOP_TIMEOUTS, TOP_LIMITS, TOP_WORKERS, TOP_USER,
	TOP_METRICS, TOP_AUDIT_ONLY, TOP__COUNT
};

static void
config_top(struct config_ctx *x, json_t *root)
{
	struct config_field	f[TOP__COUNT] = {
		[TOP_LISTEN] = { "listen", NULL, 0 },
		[TOP_POLICY] = { "policy", NULL, 0 },
		[TOP_SECRETS] = { "secrets", NULL, 0 },
		[TOP_GEOIP] = { "geoip", NULL, 0 },
		[TOP_AUDIT] = { "audit", NULL, 0 },
		[TOP_RESOLVER] = { "resolver", NULL, 0 },
		[TOP_TLS] = { "tls", NULL, 0 },
		[TOP_ADMIN] = { "admin", NULL, 0 },
		[TOP_TIMEOUTS] = { "timeouts", NULL, 0 },
		[TOP_LIMITS] = { "limits", NULL, 0 },
		[TOP_WORKERS] = { "workers", NULL, 0 },
		[TOP_USER] = { "user", NULL, 0 },
		[TOP_METRICS] = { "metrics", NULL, 0 },
		[TOP_AUDIT_ONLY] = { "audit_only", NULL, 0 },
	};
	size_t			old;
	int			i;

	if (!config_fields(x, root, 0, f, TOP__COUNT))
		return;
	if (f[TOP_LISTEN].v == NULL && f[TOP_ADMIN].v == NULL)
		config_err(x, 0, "missing required key \"listen\" in the top "
		    "level: add at least one listener, such as {\"proto\": "
		    "\"http\", \"address\": \"127.0.0.1:3128\"} (a file for "
		    "moat run --policy needs none: check it with moat check "
		    "FILE)");
	config_unused(x, f, TOP__COUNT);
	if (f[TOP_POLICY].v == NULL)
		config_warn(x, 0, "no \"policy\": every connection will be "
		    "denied");
	for (i = 0; i < TOP__COUNT; i++) {
		if (f[i].v == NULL)
			continue;
		old = config_push_key(x, f[i].key);
		switch (i) {
		case TOP_LISTEN:
			config_listen(x, f[i].v, f[i].pos);
			break;
		case TOP_POLICY:
			config_policy(x, f[i].v, f[i].pos);
			break;
		case TOP_SECRETS:
			x->secrets_json = f[i].v;
			config_refs(x, f[i].v, f[i].pos, true,
			    &x->c->secrets, &x->c->nsecrets);
			if (x->c->nsecrets > 0 && (x->secret_used = calloc(
			    x->c->nsecrets, sizeof(*x->secret_used))) == NULL)
				config_oom(x);
			break;
		case TOP_GEOIP:
			config_geoip(x, f[i].v, f[i].pos);
			break;
		case TOP_AUDIT:
			config_audit(x, f[i].v, f[i].pos);
			break;
		case TOP_RESOLVER:
			config_resolver(x, f[i].v, f[i].pos);
			break;
		case TOP_TLS:
			config_tls(x, f[i].v, f[i].pos);
			break;
		case TOP_ADMIN:
			config_admin(x, f[i].v, f[i].pos);
			break;
		case TOP_TIMEOUTS:
			config_sections(x, f[i].v, f[i].pos, "timeouts");
			break;
		case TOP_LIMITS:
			config_sections(x, f[i].v, f[i].pos, "limits");
			break;
		case TOP_WORKERS:
			config_workers(x, f[i].v, f[i].pos);
			break;
		case TOP_USER:
			config_user(x, f[i].v, f[i].pos);
			break;
		case TOP_METRICS:
			config_metrics(x, f[i].v, f[i].pos);
			break;
		case TOP_AUDIT_ONLY:
			config_audit_only(x, f[i].v, f[i].pos,
			    &x->c->audit_only);
			break;
		}
		config_pop(x, old);
	}
	config_check_addresses(x);
	config_check_refusals(x);
	config_check_inspection(x);
	config_check_secrets(x);
}

/* The caller's unused keys (policy_load_opts.unused) that are there. */
static void
config_unused(struct config_ctx *x, const struct config_field *f, size_t nf)
{
	const struct policy_unused_key	*u;
	size_t				 i;

	if (x->opts == NULL || x->opts->unused == NULL)
		return;
	for (u = x->opts->unused; u->key != NULL; u++)
		for (i = 0; i < nf; i++)
			if (f[i].v != NULL && strcmp(f[i].key, u->key) == 0)
				config_warn_key(x, f[i].pos, "\"%s\": %s",
				    u->key, u->why);
}

/*
 * limits.sandbox_connections not given: where moatd serves several
 * sandboxes (an admin socket, or listeners of more than one sandbox name),
 * a quarter of limits.connections, so that one sandbox that opens
 * connections as fast as it can (or holds them idle) leaves three quarters
 * of the daemon's to the others; where it serves one, all of them.
 * Whether it was given is kept: a registered sandbox's own value counts
 * only then.
 */
static void
config_limits(struct moat_config *c)
{
	struct moat_limits	*lim = &c->limits;
	bool			 several = c->admin_address != NULL;
	size_t			 i;

	for (i = 1; i < c->nlisten && !several; i++)
		several = strcmp(c->listen[i].sandbox, c->listen[0].sandbox) !=
		    0;
	lim->connections_set = lim->connections != 0;
	if (!lim->connections_set)
		lim->connections = MOAT_CONNECTIONS_DEFAULT;
	lim->sandbox_connections_set = lim->sandbox_connections != 0;
	if (!lim->sandbox_connections_set)
		lim->sandbox_connections = !several ? lim->connections :
		    lim->connections / 4 > 0 ? lim->connections / 4 : 1;
}

/* ------------------------------------------------------------------ */
/* rules: "countries" and "asns"                                        */
/* ------------------------------------------------------------------ */

/*
 * "countries" and "asns": where an address is, by the "geoip" databases.
 * Deny rules only: a place is no reason to trust an address, and an
 * allow rule by country would open every IP literal there.
 */
static bool
config_geo_rule(struct config_ctx *x, size_t pos, uint32_t rule,
    const char *key, bool db, bool given, const char *dbkey)
{
	if (x->p->rules[rule].action != POLICY_DENY) {
		config_err(x, pos, "\"%s\" can only deny: rule %s allows; "
		    "allow names with \"hosts\" and addresses with "
		    "\"cidrs\", and refuse places with a deny rule", key,
		    x->p->rules[rule].name);
		return false;
	}
	if (!db) {
		/* A database that failed to open is reported already. */
		if (!given)
			config_err(x, pos, "\"%s\" needs a database: add "
			    "\"geoip\": {\"%s\": \"/path/to/file.mmdb\"} "
			    "(a MaxMind DB file)", key, dbkey);
		return false;
	}
	return true;
}

void
config_countries(struct config_ctx *x, json_t *v, size_t pos, uint32_t rule)
{
	const char	*s;
	char		 cc[3];
	size_t		 i, n, ci, old;
	json_t		*e;
	bool		 add;

	if (!config_array(x, v, pos, "country code"))
		return;
	/* Every entry is checked even when the rule cannot be kept. */
	add = config_geo_rule(x, pos, rule, "countries",
	    x->p->geo_country_db != NULL, x->geo_cc_given, "country_db");
	for (i = 0, ci = pos + 1; i < json_array_size(v);
	    i++, ci = jsonpos_next(x->jp, ci)) {
		old = config_push_index(x, i);
		e = json_array_get(v, i);
		if (!config_want(x, e, ci, JSON_STRING, "a country code (a "
		    "string such as \"KP\")")) {
			config_pop(x, old);
			continue;
		}
		s = json_string_value(e);
		n = json_string_length(e);
		if (!geo_cc_ok(s, n)) {
			config_err(x, ci, "%s is not a country code (ISO "
			    "3166-1 alpha-2: two letters, such as \"KP\")",
			    config_q(x, s, n));
		} else if ((s[0] | 0x20) == 'u' && (s[1] | 0x20) == 'k') {
			config_err(x, ci, "\"UK\" is no ISO 3166-1 code: the "
			    "United Kingdom is \"GB\"");
		} else {
			cc[0] = (char)(s[0] & ~0x20);
			cc[1] = (char)(s[1] & ~0x20);
			cc[2] = '\0';
			if (add && policy_add_country(x->p, rule, cc) == -1)
				config_oom(x);
		}
		config_pop(x, old);
	}
}

void
config_asns(struct config_ctx *x, json_t *v, size_t pos, uint32_t rule)
{
	const char	*s;
	char		*end;
	unsigned long	 u;
	long long	 num;
	size_t		 i, n, ci, old;
	json_t		*e;
	bool		 add;

	if (!config_array(x, v, pos, "AS number"))
		return;
	add = config_geo_rule(x, pos, rule, "asns", x->p->geo_asn_db != NULL,
	    x->geo_asn_given, "asn_db");
	for (i = 0, ci = pos + 1; i < json_array_size(v);
	    i++, ci = jsonpos_next(x->jp, ci)) {
		old = config_push_index(x, i);
		e = json_array_get(v, i);
		num = -1;
		if (json_is_integer(e))
			num = json_integer_value(e);
		else if (json_is_string(e)) {
			s = json_string_value(e);
			n = json_string_length(e);
			if (n > 2 && n <= 12 && (s[0] | 0x20) == 'a' &&
			    (s[1] | 0x20) == 's' && s[2] >= '0' &&
			    s[2] <= '9') {
				errno = 0;
				u = strtoul(s + 2, &end, 10);
				if (errno == 0 && end == s + n)
					num = (long long)u;
			}
		}
		if (num < 1 || num > (long long)UINT32_MAX) {
			if (json_is_integer(e))
				config_err(x, ci, "%lld is not an AS number "
				    "(1-4294967295)", json_integer_value(e));
			else
				config_err(x, ci, "expected an AS number "
				    "(1-4294967295, or a string \"AS64500\"), "
				    "got %s", json_is_string(e) ? config_q(x,
				    json_string_value(e),
				    json_string_length(e)) :
				    config_typename(e));
		}
		else if (add && policy_add_asn(x->p, rule, (uint32_t)num) == -1)
			config_oom(x);
		config_pop(x, old);
	}
}

/* ------------------------------------------------------------------ */
/* audit, resolver, tls, admin, workers, user                          */
/* ------------------------------------------------------------------ */

enum { GEO_COUNTRY = 0, GEO_ASN, GEO__COUNT };

/* "geoip": {"country_db": FILE, "asn_db": FILE}, opened now by the caller's
 * loader. */
static void
config_geoip(struct config_ctx *x, json_t *v, size_t pos)
{
	struct config_field	 f[GEO__COUNT] = {
		[GEO_COUNTRY] = { "country_db", NULL, 0 },
		[GEO_ASN] = { "asn_db", NULL, 0 },
	};
	struct geo_db		**dbs[GEO__COUNT] = {
		&x->p->geo_country_db, &x->p->geo_asn_db
	};
	char			**paths[GEO__COUNT] = {
		&x->c->geoip_country_db, &x->c->geoip_asn_db
	};
	const char		*err;
	char			*path;
	size_t			 i, old;

	if (!config_fields(x, v, pos, f, GEO__COUNT))
		return;
	if (f[GEO_COUNTRY].v == NULL && f[GEO_ASN].v == NULL) {
		config_err(x, pos, "\"geoip\" needs \"country_db\" or "
		    "\"asn_db\" (MaxMind DB files)");
		return;
	}
	x->geo_cc_given = f[GEO_COUNTRY].v != NULL;
	x->geo_asn_given = f[GEO_ASN].v != NULL;
	for (i = 0; i < GEO__COUNT; i++) {
		if (f[i].v == NULL)
			continue;
		old = config_push_key(x, f[i].key);
		path = NULL;
		if (config_file(x, f[i].v, f[i].pos, &path) &&
		    (*dbs[i] = geo_open(x->opts, path, &err)) == NULL)
			config_err(x, f[i].pos, "cannot open the GeoIP "
			    "database %s: %s", config_q(x, path,
			    strlen(path)), err);
		/* Kept: sandboxes registered later use the same files. */
		*paths[i] = path;
		config_pop(x, old);
	}
}

/*
 * "audit_only" (the top level, a listener): true lets the rules'
 * refusals through as would-denies (policy_waive()), false enforces
 * them where the level above says true.
 */
void
config_audit_only(struct config_ctx *x, json_t *v, size_t pos, int *out)
{
	if (!json_is_boolean(v)) {
		config_err(x, pos, "expected a boolean (true: the rules' "
		    "refusals go through and are audited as \"would_deny\"; "
		    "the built-in deny sets, secret leaks and DNS limits stay "
		    "enforced), got %s", config_typename(v));
		return;
	}
	*out = json_is_true(v) ? 1 : 0;
}

/* A field name a request carries, as audit.request_id_headers lists it. */
static bool
config_request_id(struct config_ctx *x, json_t *v, size_t pos, size_t i)
{
	static const char *const	never[] = {
		"authorization", "proxy-authorization", "cookie",
		"traceparent", NULL
	};
	const char			*s;
	size_t				 n, k;

	if (!config_want(x, v, pos, JSON_STRING, "a string"))
		return false;
	s = json_string_value(v);
	n = json_string_length(v);
	if (n == 0 || n > MOAT_REQUEST_ID_NAME_MAX ||
	    strspn(s, "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz") != n) {
		config_err(x, pos, "%s is not a header field name (1-%d "
		    "bytes of an RFC 9110 token)", config_q(x, s, n),
		    MOAT_REQUEST_ID_NAME_MAX);
		return false;
	}
	for (k = 0; never[k] != NULL; k++)
		if (strcasecmp(s, never[k]) == 0) {
			config_err(x, pos, "%s is never copied into audit "
			    "lines%s", config_q(x, s, n), k < 3 ? ": it holds "
			    "credentials" : ": a valid traceparent is "
			    "recorded always");
			return false;
		}
	for (k = 0; k < i; k++)
		if (strcasecmp(s, x->c->audit_request_ids[k]) == 0) {
			config_err(x, pos, "%s is listed twice (field names "
			    "are compared without case)", config_q(x, s, n));
			return false;
		}
	return true;
}

/* audit.request_id_headers: [NAME, ...], at most MOAT_REQUEST_IDS_MAX. */
static void
config_request_ids(struct config_ctx *x, json_t *v, size_t pos)
{
	size_t	n, i, ci, old, k = 0;

	if (!config_want(x, v, pos, JSON_ARRAY, "an array of header field "
	    "names"))
		return;
	config_free_list(x->c->audit_request_ids);
	x->c->audit_request_ids = NULL;
	x->c->naudit_request_ids = 0;
	if ((n = json_array_size(v)) > MOAT_REQUEST_IDS_MAX) {
		config_err(x, pos, "%zu fields: at most %d are copied into "
		    "audit lines", n, MOAT_REQUEST_IDS_MAX);
		return;
	}
	if ((x->c->audit_request_ids = calloc(n + 1,
	    sizeof(*x->c->audit_request_ids))) == NULL) {
		config_oom(x);
		return;
	}
	for (i = 0, ci = pos + 1; i < n; i++, ci = jsonpos_next(x->jp, ci)) {
		old = config_push_index(x, i);
		if (config_request_id(x, json_array_get(v, i), ci, k) &&
		    (x->c->audit_request_ids[k] = config_strdup(x,
		    json_string_value(json_array_get(v, i)))) != NULL)
			k++;
		config_pop(x, old);
	}
	x->c->naudit_request_ids = k;
}

static void
config_audit(struct config_ctx *x, json_t *v, size_t pos)
{
	struct config_field	 f[4] = { { "path", NULL, 0 },
				    { "on_failure", NULL, 0 },
				    { "hash_chain", NULL, 0 },
				    { "request_id_headers", NULL, 0 } };
	const char		*s;
	size_t			 old;

	if (!config_fields(x, v, pos, f, 4))
		return;
	if (f[3].v != NULL) {
		old = config_push_key(x, "request_id_headers");
		config_request_ids(x, f[3].v, f[3].pos);
		config_pop(x, old);
	}
	if (f[2].v != NULL) {
		old = config_push_key(x, "hash_chain");
		if (!json_is_boolean(f[2].v))
			config_err(x, f[2].pos, "expected a boolean (true: "
			    "each line carries a SHA-256 chained to the line "
			    "before, for moat audit verify), got %s",
			    config_typename(f[2].v));
		else
			x->c->audit_chain = json_is_true(f[2].v);
		config_pop(x, old);
	}
	if (f[1].v != NULL) {
		old = config_push_key(x, "on_failure");
		s = json_is_string(f[1].v) ? json_string_value(f[1].v) : NULL;
		if (s != NULL && strcmp(s, "deny") == 0)
			x->c->audit_deny = 1;
		else if (s != NULL && strcmp(s, "drop") == 0)
			x->c->audit_deny = 0;
		else
			config_err(x, f[1].pos, "expected \"deny\" (refuse "
			    "new connections and requests while audit lines "
			    "cannot be written) or \"drop\" (serve on, count "
			    "the lost lines), got %s", s != NULL ? config_q(x,
			    s, json_string_length(f[1].v)) :
			    config_typename(f[1].v));
		config_pop(x, old);
	}
	if (f[0].v == NULL)
		return;
	old = config_push_key(x, "path");
	free(x->c->audit_path);
	x->c->audit_path = NULL;
	(void)config_file(x, f[0].v, f[0].pos, &x->c->audit_path);
	config_pop(x, old);
}

enum { RES_SERVERS = 0, RES_TRIES, RES__COUNT };

static void
config_resolver(struct config_ctx *x, json_t *v, size_t pos)
{
	struct config_field	 f[RES__COUNT] = {
		[RES_SERVERS] = { "servers", NULL, 0 },
		[RES_TRIES] = { "tries", NULL, 0 },
	};
	long long		 n;
	size_t			 i, k = 0, ci, old, cnt;
	char			**list;

	if (!config_fields(x, v, pos, f, RES__COUNT))
		return;
	if (f[RES_TRIES].v != NULL) {
		old = config_push_key(x, "tries");
		if (config_number(x, f[RES_TRIES].v, f[RES_TRIES].pos,
		    config_default("resolver", "tries"), &n))
			x->c->resolver_tries = (unsigned)n;
		config_pop(x, old);
	}
	if (f[RES_SERVERS].v == NULL)
		return;
	old = config_push_key(x, "servers");
	if (!config_array(x, f[RES_SERVERS].v, f[RES_SERVERS].pos,
	    "server (IP or IP:PORT)")) {
		config_pop(x, old);
		return;
	}
	cnt = json_array_size(f[RES_SERVERS].v);
	if ((list = calloc(cnt + 1, sizeof(*list))) == NULL) {
		config_oom(x);
		config_pop(x, old);
		return;
	}
	x->c->resolver_servers = list;
	for (i = 0, ci = f[RES_SERVERS].pos + 1; i < cnt;
	    i++, ci = jsonpos_next(x->jp, ci)) {
		size_t	o2 = config_push_index(x, i);

		if (config_server(x, json_array_get(f[RES_SERVERS].v, i), ci,
		    &list[k]))
			k++;
		config_pop(x, o2);
	}
	config_pop(x, old);
}

/* "IP", "IP:PORT", "[V6]:PORT" or a bare IPv6: kept as "IP:PORT". */
static bool
config_server(struct config_ctx *x, json_t *v, size_t pos, char **out)
{
	struct policy_addr	 a;
	const char		*s, *colon = NULL, *close;
	char			 text[INET6_ADDRSTRLEN], *r;
	size_t			 n, alen;
	uint16_t		 port;
	bool			 br = false;
	int			 len;

	if (!config_want(x, v, pos, JSON_STRING, "a string"))
		return false;
	s = json_string_value(v);
	n = json_string_length(v);
	port = (uint16_t)config_default("resolver", "port")->def;
	alen = n;
	if (n > 0 && s[0] == '[') {
		br = true;
		if ((close = memchr(s, ']', n)) == NULL)
			goto bad;
		alen = (size_t)(close - s) + 1;
		if (alen < n) {
			if (s[alen] != ':')
				goto bad;
			colon = s + alen;
		}
	} else if ((colon = memchr(s, ':', n)) != NULL &&
	    memchr(colon + 1, ':', n - (size_t)(colon + 1 - s)) != NULL)
		colon = NULL;	/* a bare IPv6 address */
	else if (colon != NULL)
		alen = (size_t)(colon - s);
	if (addr_parse_strict(s, alen, br, &a) == -1)
		goto bad;
	if (colon != NULL && host_port_parse(colon + 1, n - alen - 1,
	    &port) == -1)
		goto bad;
	policy_addr_format(&a, text, sizeof(text));
	len = a.family == AF_INET6 ? asprintf(&r, "[%s]:%u", text, port) :
	    asprintf(&r, "%s:%u", text, port);
	if (len == -1) {
		config_oom(x);
		return false;
	}
	*out = r;
	return true;
 bad:
	config_err(x, pos, "%s is not a server address: write IP, IP:PORT "
	    "or [IPv6]:PORT (no host names)", config_q(x, s, n));
	return false;
}

enum {
	TLS_CA_CERT = 0, TLS_CA_KEY, TLS_UPSTREAM, TLS_EXTRA, TLS_LEAF,
	TLS_TRUST_DIR, TLS__COUNT
};

static void
config_tls(struct config_ctx *x, json_t *v, size_t pos)
{
	struct config_field	f[TLS__COUNT] = {
		[TLS_CA_CERT] = { "ca_cert", NULL, 0 },
		[TLS_CA_KEY] = { "ca_key", NULL, 0 },
		[TLS_UPSTREAM] = { "upstream_ca_files", NULL, 0 },
		[TLS_EXTRA] = { "extra_ca_files", NULL, 0 },
		[TLS_LEAF] = { "leaf_cache_entries", NULL, 0 },
		[TLS_TRUST_DIR] = { "trust_dir", NULL, 0 },
	};
	struct moat_tls		*t = &x->c->tls;
	long long		 n;
	size_t			 old;
	int			 i, have = -1;

	if (!json_is_object(v))
		x->ca_given = true;	/* reported next; not again per rule */
	if (!config_fields(x, v, pos, f, TLS__COUNT))
		return;
	/* A CA given wrongly is reported here, not again as missing. */
	x->ca_given = f[TLS_CA_CERT].v != NULL || f[TLS_CA_KEY].v != NULL;
	if ((f[TLS_CA_CERT].v == NULL) != (f[TLS_CA_KEY].v == NULL)) {
		have = f[TLS_CA_CERT].v != NULL ? TLS_CA_CERT : TLS_CA_KEY;
		old = config_push_key(x, f[have].key);
		config_err(x, f[have].pos, "tls.%s is given without tls.%s: "
		    "give both or neither", f[have].key,
		    f[have == TLS_CA_CERT ? TLS_CA_KEY : TLS_CA_CERT].key);
		config_pop(x, old);
	}
	for (i = TLS_CA_CERT; i <= TLS_CA_KEY; i++) {
		if (f[i].v == NULL || i == have)
			continue;
		old = config_push_key(x, f[i].key);
		(void)config_file(x, f[i].v, f[i].pos,
		    i == TLS_CA_CERT ? &t->ca_cert : &t->ca_key);
		config_pop(x, old);
	}
	for (i = TLS_UPSTREAM; i <= TLS_EXTRA; i++) {
		if (f[i].v == NULL)
			continue;
		old = config_push_key(x, f[i].key);
		config_file_list(x, f[i].v, f[i].pos, i == TLS_UPSTREAM ?
		    &t->upstream_ca_files : &t->extra_ca_files);
		config_pop(x, old);
	}
	if (f[TLS_LEAF].v != NULL) {
		old = config_push_key(x, "leaf_cache_entries");
		if (config_number(x, f[TLS_LEAF].v, f[TLS_LEAF].pos,
		    config_default("tls", "leaf_cache_entries"), &n))
			t->leaf_cache_entries = (size_t)n;
		config_pop(x, old);
	}
	if (f[TLS_TRUST_DIR].v != NULL)
		config_trust_dir(x, f[TLS_TRUST_DIR].v, f[TLS_TRUST_DIR].pos,
		    f[TLS_CA_CERT].v != NULL);
}

/*
 * tls.trust_dir: an absolute directory path, where moatd writes what the
 * clients of its listeners must trust; only with a CA, which is what
 * they would trust.
 */
static void
config_trust_dir(struct config_ctx *x, json_t *v, size_t pos, bool ca)
{
	size_t	old = config_push_key(x, "trust_dir");

	if (config_file(x, v, pos, &x->c->tls.trust_dir)) {
		if (x->c->tls.trust_dir[0] != '/')
			config_err(x, pos, "%s is not an absolute path",
			    config_q(x, x->c->tls.trust_dir,
			    strlen(x->c->tls.trust_dir)));
		else if (!ca)
			config_err(x, pos, "tls.trust_dir needs a CA "
			    "(tls.ca_cert and tls.ca_key): without one "
			    "moatd reads no TLS and there is nothing to "
			    "trust");
	}
	config_pop(x, old);
}

static void
config_file_list(struct config_ctx *x, json_t *v, size_t pos, char ***out)
{
	char	**list;
	size_t	  n, i, k = 0, ci, old;

	if (!config_array(x, v, pos, "file"))
		return;
	n = json_array_size(v);
	if ((list = calloc(n + 1, sizeof(*list))) == NULL) {
		config_oom(x);
		return;
	}
	*out = list;
	for (i = 0, ci = pos + 1; i < n; i++, ci = jsonpos_next(x->jp, ci)) {
		old = config_push_index(x, i);
		if (config_file(x, json_array_get(v, i), ci, &list[k]))
			k++;
		config_pop(x, old);
	}
}

enum { ADM_ADDRESS = 0, ADM_MODE, ADM__COUNT };

static void
config_admin(struct config_ctx *x, json_t *v, size_t pos)
{
	struct config_field	f[ADM__COUNT] = {
		[ADM_ADDRESS] = { "address", NULL, 0 },
		[ADM_MODE] = { "mode", NULL, 0 },
	};
	struct moat_listen	l;
	size_t			old;

	if (!config_fields(x, v, pos, f, ADM__COUNT))
		return;
	if (f[ADM_ADDRESS].v == NULL)
		config_err(x, pos, "missing \"address\" (unix:/PATH)");
	else {
		memset(&l, 0, sizeof(l));
		old = config_push_key(x, "address");
		if (config_bind(x, f[ADM_ADDRESS].v, f[ADM_ADDRESS].pos, true,
		    &l)) {
			x->c->admin_address = l.address;
			x->c->admin_path = l.path;
		}
		config_pop(x, old);
	}
	if (f[ADM_MODE].v != NULL) {
		old = config_push_key(x, "mode");
		(void)config_mode(x, f[ADM_MODE].v, f[ADM_MODE].pos,
		    &x->c->admin_mode);
		config_pop(x, old);
	}
}

enum {
	MET_ADDRESS = 0, MET_MODE, MET_SANDBOXES, MET_RULES, MET_SERIES,
	MET__COUNT
};

/* "metrics": where moatd serves /metrics, and the caps on its series. */
static void
config_metrics(struct config_ctx *x, json_t *v, size_t pos)
{
	struct config_field	 f[MET__COUNT] = {
		[MET_ADDRESS] = { "address", NULL, 0 },
		[MET_MODE] = { "mode", NULL, 0 },
		[MET_SANDBOXES] = { "max_sandboxes", NULL, 0 },
		[MET_RULES] = { "max_rules", NULL, 0 },
		[MET_SERIES] = { "max_series", NULL, 0 },
	};
	struct moat_metrics	*m = &x->c->metrics;
	size_t			*num[MET__COUNT] = {
		[MET_SANDBOXES] = &m->max_sandboxes,
		[MET_RULES] = &m->max_rules,
		[MET_SERIES] = &m->max_series,
	};
	struct moat_listen	 l;
	size_t			 old, i;
	long long		 n;
	bool			 ok = false;

	if (!config_fields(x, v, pos, f, MET__COUNT))
		return;
	if (f[MET_ADDRESS].v == NULL)
		config_err(x, pos, "missing \"address\" (IP:PORT, [IPv6]:PORT "
		    "or unix:/PATH, where a scraper and no sandbox can reach "
		    "it)");
	else {
		memset(&l, 0, sizeof(l));
		old = config_push_key(x, "address");
		if ((ok = config_bind(x, f[MET_ADDRESS].v, f[MET_ADDRESS].pos,
		    false, &l))) {
			m->address = l.address;
			m->path = l.path;
			m->is_unix = l.is_unix;
			m->host = l.host;
			m->port = l.port;
			m->line = (int)x->jp->v[f[MET_ADDRESS].pos].vline;
			m->column = (int)x->jp->v[f[MET_ADDRESS].pos].vcol;
		}
		config_pop(x, old);
	}
	if (f[MET_MODE].v != NULL) {
		old = config_push_key(x, "mode");
		if (ok && !m->is_unix)
			config_err(x, f[MET_MODE].pos, "a mode applies to a "
			    "unix socket address only");
		else
			(void)config_mode(x, f[MET_MODE].v, f[MET_MODE].pos,
			    &m->mode);
		config_pop(x, old);
	}
	for (i = MET_SANDBOXES; i < MET__COUNT; i++) {
		if (f[i].v == NULL)
			continue;
		old = config_push_key(x, f[i].key);
		if (config_number(x, f[i].v, f[i].pos,
		    config_default("metrics", f[i].key), &n))
			*num[i] = (size_t)n;
		config_pop(x, old);
	}
}

static void
config_workers(struct config_ctx *x, json_t *v, size_t pos)
{
	long long	n;

	if (json_is_string(v)) {
		if (strcmp(json_string_value(v), "auto") == 0)
			x->c->workers = 0;
		else
			config_err(x, pos, "expected an integer (1-256) or "
			    "\"auto\"");
		return;
	}
	if (config_number(x, v, pos, config_default(NULL, "workers"), &n))
		x->c->workers = (unsigned)n;
}

static void
config_user(struct config_ctx *x, json_t *v, size_t pos)
{
	const char	*s;
	size_t		 n;

	if (!config_want(x, v, pos, JSON_STRING, "a user name (string)"))
		return;
	s = json_string_value(v);
	n = json_string_length(v);
	if (!config_ident(s, n, CONFIG_USER_MAX, "._-") || s[0] == '-') {
		config_err(x, pos, "%s is not a user name (1-32 of A-Z a-z "
		    "0-9 . _ -, not starting with -)", config_q(x, s, n));
		return;
	}
	x->c->user = config_strdup(x, s);
}

/* ------------------------------------------------------------------ */
/* Load                                                                 */
/* ------------------------------------------------------------------ */

/* jansson stopped at a syntax error: one diagnostic, at the token. */
static void
config_syntax(struct policy_diags *d, const char *buf, size_t len,
    const json_error_t *je)
{
	const char	*near, *end;
	size_t		 off;
	int		 line, col;

	off = je->position > 0 ? (size_t)je->position - 1 : 0;
	if (strstr(je->text, "near end of file") != NULL)
		off = len;
	if (STRNCMP_LIT(je->text, "duplicate object key") == 0 &&
	    off < len && buf[off] == '"') {
		/* Point at the opening quote of the repeated key. */
		size_t	j = off;

		while (j > 0) {
			size_t	bs = 0;

			j--;
			while (j >= bs + 1 && buf[j - bs - 1] == '\\')
				bs++;
			if (buf[j] == '"' && bs % 2 == 0)
				break;
		}
		off = j;
	}
	jsonpos_locate(buf, len, off, &line, &col);
	if ((near = strstr(je->text, "near '")) != NULL)
		near += LIT_LEN("near '");
	if (STRNCMP_LIT(je->text, "duplicate object key") == 0 &&
	    near != NULL && (end = strrchr(near, '\'')) != NULL && end > near)
		diag_add(d, POLICY_DIAG_ERROR, line, col, "duplicate key "
		    "%.*s: a key may appear only once in an object",
		    (int)(end - near), near);
	else
		diag_add(d, POLICY_DIAG_ERROR, line, col, "invalid JSON: %s",
		    je->text);
}

/*
 * Sorts the diagnostics from index from by position, so they read in file
 * order.  A merge sort: stable, so problems found at one position keep the
 * order they were found in.  If memory is short they stay unsorted.
 */
static void
config_sort(struct policy_diags *d, size_t from)
{
	struct policy_diag	*v, *tmp;
	size_t			 n = d->n - from, w, i, l, r, le, re, k;

	if (n < 2 || (tmp = reallocarray(NULL, n, sizeof(*tmp))) == NULL)
		return;
	v = d->v + from;
	for (w = 1; w < n; w *= 2) {
		for (i = 0; i < n; i += 2 * w) {
			l = i;
			le = i + w < n ? i + w : n;
			r = le;
			re = i + 2 * w < n ? i + 2 * w : n;
			k = i;
			while (l < le && r < re) {
				if (v[r].line < v[l].line ||
				    (v[r].line == v[l].line &&
				    v[r].column < v[l].column))
					tmp[k++] = v[r++];
				else
					tmp[k++] = v[l++];
			}
			while (l < le)
				tmp[k++] = v[l++];
			while (r < re)
				tmp[k++] = v[r++];
		}
		memcpy(v, tmp, n * sizeof(*v));
	}
	free(tmp);
}

static void
config_apply_defaults(struct moat_config *c)
{
	const struct config_default	*d;
	size_t				 i;

	for (i = 0; i < config_ndefaults; i++) {
		d = &config_defaults[i];
		if (d->off == CONFIG_NOOFF)
			continue;
		if (d->type == CONFIG_T_UINT)
			*(unsigned *)((char *)c + d->off) = (unsigned)d->def;
		else if (d->type == CONFIG_T_SIZE)
			*(size_t *)((char *)c + d->off) = (size_t)d->def;
	}
	c->admin_mode = (int)config_default("admin", "mode")->def;
	c->metrics.mode = (int)config_default("metrics", "mode")->def;
}

struct moat_config *
policy_config_load(const char *name, const char *buf, size_t len,
    struct policy_diags *diags)
{
	return policy_config_load_opts(name, buf, len, NULL, diags);
}

struct moat_config *
policy_config_load_opts(const char *name, const char *buf, size_t len,
    const struct policy_load_opts *opts, struct policy_diags *diags)
{
	return config_load(name, buf, len, opts, diags, true);
}

_Static_assert(JSONPOS_SKEL_DEPTH_MAX <= JSON_PARSER_MAX_DEPTH,
    "the skeleton of policy.rules must nest no deeper than jansson reads");

struct moat_config *
config_load(const char *name, const char *buf, size_t len,
    const struct policy_load_opts *opts, struct policy_diags *diags,
    bool apart)
{
	static const char *const	 rules_path[] = { "policy", "rules" };
	struct config_ctx		 x;
	struct jsonpos			 jp;
	struct moat_config		*c = NULL;
	json_t				*root = NULL;
	json_error_t			 je;
	const char			*nul;
	size_t				 nerr0 = diags->nerrors,
					 nwarn0 = diags->nwarnings,
					 first = diags->n;
	int				 line, col;

	memset(&x, 0, sizeof(x));
	memset(&jp, 0, sizeof(jp));
	free(diags->file);
	if ((diags->file = strdup(name != NULL ? name : "config")) == NULL)
		goto oom;
	if (buf == NULL) {
		buf = "";
		len = 0;
	}
	/*
	 * JSON text never holds a raw NUL, and jansson stops a number at
	 * one ("[1\0]" loads as [1]): refuse it rather than parse around it.
	 */
	if (len > 0 && (nul = memchr(buf, '\0', len)) != NULL) {
		jsonpos_locate(buf, len, (size_t)(nul - buf), &line, &col);
		diag_add(diags, POLICY_DIAG_ERROR, line, col, "NUL byte in the "
		    "config (JSON text cannot contain one)");
		goto out;
	}
	/*
	 * policy.rules is read one rule at a time (config_policy): jansson
	 * reads the text without the rules' bytes now, each rule when its
	 * turn comes, and its tree is freed before the next, so a policy
	 * of many rules never exists as a tree of them all (a jansson object
	 * of one rule with one name is about 900 bytes).  A text whose
	 * rules cannot be told apart so is read whole.
	 */
	if (apart && jsonpos_find_array(buf, 0, len, 0, rules_path, 2,
	    &x.rules_span) == -1)
		apart = false;
	root = apart ? policy_json_loadb_skip(buf, len, x.rules_span.from,
	    x.rules_span.to, JSON_REJECT_DUPLICATES, &je) :
	    policy_json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (root == NULL) {
		if (apart && je.position > 0 &&
		    (size_t)je.position > x.rules_span.from)
			config_span_syntax(buf, &x.rules_span, &je);
		config_syntax(diags, buf, len, &je);
		goto out;
	}
	if (!json_is_object(root)) {
		diag_add(diags, POLICY_DIAG_ERROR, 1, 1, "the config must be "
		    "a JSON object ({ ... })");
		goto out;
	}
	if (apart)
		x.rules_hole = json_object_get(json_object_get(root, "policy"),
		    "rules");
	if (jsonpos_scan_at(buf, 0, len, 1, 0, apart ? x.rules_span.from : 0,
	    apart ? x.rules_span.to : 0, &jp) == -1)
		goto oom;
	if ((c = calloc(1, sizeof(*c))) == NULL ||
	    (c->policy = policy_new()) == NULL ||
	    (c->file = strdup(diags->file)) == NULL)
		goto oom;
	c->refcnt = 1;
	config_apply_defaults(c);
	c->audit_deny = 1;	/* audit.on_failure: "deny" */
	c->audit_only = -1;
	/* audit.request_id_headers: ["X-Request-Id"] */
	if ((c->audit_request_ids = calloc(2,
	    sizeof(*c->audit_request_ids))) == NULL ||
	    (c->audit_request_ids[0] = strdup("X-Request-Id")) == NULL)
		goto oom;
	c->naudit_request_ids = 1;
	x.d = diags;
	x.jp = &jp;
	x.c = c;
	x.p = c->policy;
	x.opts = opts;
	x.buf = buf;
	x.len = len;
	domain_init(&x.rule_names);
	config_top(&x, root);
	if (x.rules_syntax) {
		/* A rule is not JSON: that alone is reported, as when jansson
		 * reads the text whole and stops there. */
		diag_truncate(diags, first, nerr0, nwarn0);
		config_syntax(diags, buf, len, &x.rules_je);
		goto out;
	}
	/* The rest reads a whole config: a failed one may lack parts (a
	 * listener whose sandbox name could not be copied has none). */
	if (diags->nerrors > nerr0)
		goto out;
	config_limits(c);
	if (c->audit_path == NULL && (c->audit_path =
	    strdup(config_default("audit", "path")->sdef)) == NULL)
		goto oom;
	goto out;
 oom:
	diag_add(diags, POLICY_DIAG_ERROR, 0, 0, "out of memory");
 out:
	domain_free(&x.rule_names);
	free(x.secret_used);
	jsonpos_free(&jp);
	json_decref(root);
	config_sort(diags, first);
	if (diags->nerrors > nerr0) {
		config_free(c);
		return NULL;
	}
	return c;
}

/* ------------------------------------------------------------------ */
/* Ownership                                                            */
/* ------------------------------------------------------------------ */

void
config_free_refs(struct moat_secret_ref *v, size_t n)
{
	size_t	i;

	for (i = 0; v != NULL && i < n; i++) {
		free(v[i].name);
		free(v[i].file);
		free(v[i].env);
		free(v[i].placeholder_env);
		memset(&v[i], 0, sizeof(v[i]));
	}
}

static void
config_free_list(char **v)
{
	size_t	i;

	for (i = 0; v != NULL && v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

static void
config_free(struct moat_config *c)
{
	size_t	i;

	if (c == NULL)
		return;
	for (i = 0; i < c->nlisten; i++) {
		free(c->listen[i].address);
		free(c->listen[i].path);
		free(c->listen[i].sandbox);
		config_free_refs(c->listen[i].auth, c->listen[i].nauth);
		free(c->listen[i].auth);
	}
	free(c->listen);
	policy_free(c->policy);
	config_free_refs(c->secrets, c->nsecrets);
	free(c->secrets);
	free(c->audit_path);
	config_free_list(c->audit_request_ids);
	free(c->geoip_country_db);
	free(c->geoip_asn_db);
	config_free_list(c->resolver_servers);
	free(c->tls.ca_cert);
	free(c->tls.ca_key);
	config_free_list(c->tls.upstream_ca_files);
	config_free_list(c->tls.extra_ca_files);
	free(c->tls.trust_dir);
	free(c->admin_address);
	free(c->admin_path);
	free(c->metrics.address);
	free(c->metrics.path);
	free(c->user);
	free(c->file);
	free(c);
}

struct moat_config *
policy_config_ref(struct moat_config *c)
{
	__atomic_add_fetch(&c->refcnt, 1, __ATOMIC_RELAXED);
	return c;
}

void
policy_config_unref(struct moat_config *c)
{
	if (c == NULL)
		return;
	if (__atomic_sub_fetch(&c->refcnt, 1, __ATOMIC_ACQ_REL) == 0)
		config_free(c);
}

int
policy_config_allow_private(struct moat_config *c, const char *cidr,
    const char **err)
{
	struct addr_cidr	a;
	const char		*dummy;

	if (err == NULL)
		err = &dummy;
	if (c == NULL || c->policy == NULL || cidr == NULL) {
		*err = "no config";
		return -1;
	}
	if (addr_cidr_parse(cidr, strlen(cidr), &a, NULL, err) != 0)
		return -1;
	if (policy_add_allow_private(c->policy, &a) == -1) {
		*err = "out of memory";
		return -1;
	}
	return 0;
}
