/*
 * config.c - loading, validating and compiling moat's JSON configuration.
 *
 * What it is: the schema of the config, written as code.  jansson parses
 * the text (syntax errors and duplicate keys come with its position);
 * jsonpos.c gives the line:column of every key and value; the walkers
 * below check every key and value, report every problem with its position
 * and path ("policy.rules[2].ports[0]: 70000 is not a port (1-65535)"),
 * keep going, and fail at the end if anything was an error.  What is valid
 * is copied into struct moat_config and compiled into struct policy.
 *
 * What it is not: I/O.  The caller hands over the bytes; secrets and
 * tokens are recorded as references (file or variable names) that moatd
 * reads; no path named here is opened.
 *
 * Defaults and ranges: the one table config_defaults[] below.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "policy/policy_int.h"

#define CONFIG_PATH_MAX		512	/* longest JSON path in a message */
#define CONFIG_QUOTE_MAX	80	/* longest user string quoted in full */
#define CONFIG_NQUOTE		4	/* quoted strings per message */
#define CONFIG_IDENT_MAX	64	/* sandbox, identity and rule names */
#define CONFIG_SECRET_MAX	64	/* secret names */
#define CONFIG_ENV_MAX		255	/* environment variable names */
#define CONFIG_UNIX_PATH_MAX	107	/* sun_path minus the NUL */
#define CONFIG_USER_MAX		32	/* user names (useradd's limit) */
#define CONFIG_METHOD_MAX	32	/* longest HTTP method token */
#define CONFIG_HEADER_MAX	128	/* longest injected header name */
#define CONFIG_SUGGEST_DIST	2	/* did-you-mean: most edits */
#define CONFIG_SUGGEST_LEN	32	/* ... for keys at most this long */
#define CONFIG_NOOFF		SIZE_MAX	/* applied by its section */
#define CONFIG_OFF(f)		offsetof(struct moat_config, f)

enum config_type {
	CONFIG_T_UINT = 0,	/* unsigned field of struct moat_config */
	CONFIG_T_SIZE,		/* size_t field of struct moat_config */
	CONFIG_T_MODE,		/* "0660": 3-4 octal digits */
	CONFIG_T_STRING,	/* a string default */
	CONFIG_T_RANGE		/* a range only, no default */
};

struct config_default {
	const char		*section;	/* parent; NULL: top level */
	const char		*key;
	enum config_type	 type;
	long long		 def, min, max;
	const char		*sdef;		/* CONFIG_T_STRING default */
	size_t			 off;		/* in struct moat_config */
};

/*
 * Every default and every numeric range of the config, one line each.
 */
static const struct config_default	config_defaults[] = {
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
	{ "limits", "connections", CONFIG_T_SIZE, 10000, 1, 1000000, NULL,
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
};

#define CONFIG_NDEFAULTS	(sizeof(config_defaults) / \
				    sizeof(config_defaults[0]))

/* rules[].ports of an allow rule that names none. */
static const struct policy_port_range	config_allow_ports[] = {
	{ 80, 80 }, { 443, 443 }
};

static const char *const	config_protos[] = {
	[MOAT_PROTO_HTTP] = "http",
	[MOAT_PROTO_SOCKS5] = "socks5",
	[MOAT_PROTO_MIXED] = "http+socks5",
	[MOAT_PROTO_TRANSPARENT] = "transparent",
	[MOAT_PROTO_DNS] = "dns",
};

#define CONFIG_NPROTOS	(sizeof(config_protos) / sizeof(config_protos[0]))

/* One known key of an object: filled by config_fields(). */
struct config_field {
	const char	*key;
	json_t		*v;	/* NULL if absent */
	size_t		 pos;	/* its jsonpos entry */
};

/* What a template may hold beyond ${SECRET}, "$$" and plain text. */
enum config_tpl {
	CONFIG_TPL_VALUE = 0,	/* a header value: no edge whitespace */
	CONFIG_TPL_USER,	/* a Basic user: no ":" */
	CONFIG_TPL_PASSWORD	/* a Basic password */
};

struct config_ctx {
	struct policy_diags	*d;
	const struct jsonpos	*jp;
	const char		*buf;		/* the config text */
	size_t			 len;
	struct moat_config	*c;
	struct policy		*p;
	const struct policy_load_opts *opts;	/* the caller's loaders */
	struct domain_table	 rule_names;	/* name -> rule index */
	json_t			*secrets_json;	/* "secrets" as written */
	bool			*secret_used;	/* per c->secrets[]: injected */
	bool			 ca_given;	/* "tls" has a CA, maybe bad */
	bool			 geo_cc_given;	/* "geoip" names a country DB */
	bool			 geo_asn_given;	/* ... an ASN DB, maybe bad */
	char			 path[CONFIG_PATH_MAX];
	size_t			 pathlen;
	char			 q[CONFIG_NQUOTE][CONFIG_QUOTE_MAX * 4 + 8];
	unsigned		 qi;
};

/* Messages and paths. */
static void	config_vdiag(struct config_ctx *x, enum policy_diag_level lvl,
		    size_t pos, bool at_key, const char *fmt, va_list ap)
		    __attribute__((format(printf, 5, 0)));
static void	config_vdiag_at(struct config_ctx *x,
		    enum policy_diag_level lvl, int line, int col, bool bare,
		    const char *fmt, va_list ap)
		    __attribute__((format(printf, 6, 0)));
static void	config_err(struct config_ctx *x, size_t pos, const char *fmt,
		    ...) __attribute__((format(printf, 3, 4)));
static void	config_warn(struct config_ctx *x, size_t pos, const char *fmt,
		    ...) __attribute__((format(printf, 3, 4)));
static void	config_err_key(struct config_ctx *x, size_t pos,
		    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void	config_err_in(struct config_ctx *x, size_t pos, size_t off,
		    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int	config_str_col(struct config_ctx *x, size_t pos, size_t off);
static void	config_oom(struct config_ctx *x);
static const char	*config_q(struct config_ctx *x, const char *s,
			    size_t n);
static size_t	config_push_key(struct config_ctx *x, const char *key);
static size_t	config_push_index(struct config_ctx *x, size_t i);
static void	config_pop(struct config_ctx *x, size_t old);
static const char	*config_where(struct config_ctx *x);
static const char	*config_typename(const json_t *v);
static unsigned	config_distance(const char *a, const char *b);
static const char	*config_suggest(const char *key,
			    const struct config_field *f, size_t nf,
			    const struct config_default *sec);

/* Generic shapes. */
static bool	config_fields(struct config_ctx *x, json_t *obj, size_t pos,
		    struct config_field *f, size_t nf);
static bool	config_want(struct config_ctx *x, json_t *v, size_t pos,
		    json_type type, const char *what);
static bool	config_array(struct config_ctx *x, json_t *v, size_t pos,
		    const char *what);
static const struct config_default	*config_default(const char *section,
					    const char *key);
static bool	config_number(struct config_ctx *x, json_t *v, size_t pos,
		    const struct config_default *def, long long *out);
static bool	config_mode(struct config_ctx *x, json_t *v, size_t pos,
		    int *out);
static bool	config_ident(const char *s, size_t n, size_t max,
		    const char *extra);
static bool	config_envname(const char *s, size_t n);
static char	*config_strdup(struct config_ctx *x, const char *s);
static bool	config_file(struct config_ctx *x, json_t *v, size_t pos,
		    char **out);
static void	config_sections(struct config_ctx *x, json_t *v, size_t pos,
		    const char *section);

/* Sections. */
static void	config_top(struct config_ctx *x, json_t *root);
static void	config_listen(struct config_ctx *x, json_t *v, size_t pos);
static void	config_listener(struct config_ctx *x, json_t *v, size_t pos,
		    struct moat_listen *l);
static bool	config_bind(struct config_ctx *x, json_t *v, size_t pos,
		    bool unix_only, struct moat_listen *l);
static void	config_refs(struct config_ctx *x, json_t *v, size_t pos,
		    bool secrets, struct moat_secret_ref **out, size_t *nout);
static bool	config_ref(struct config_ctx *x, json_t *v, size_t pos,
		    bool secrets, struct moat_secret_ref *r);
static void	config_policy(struct config_ctx *x, json_t *v, size_t pos);
static void	config_allow_private(struct config_ctx *x, json_t *v,
		    size_t pos);
static bool	config_cidr(struct config_ctx *x, json_t *v, size_t pos,
		    struct addr_cidr *c);
static void	config_rule(struct config_ctx *x, json_t *v, size_t pos,
		    size_t index);
static bool	config_rule_name(struct config_ctx *x, struct config_field *f,
		    size_t pos, size_t index, struct policy_rule *r);
static int	config_range_cmp(const void *a, const void *b);
static bool	config_ports(struct config_ctx *x, json_t *v, size_t pos,
		    struct policy_rule *r);
static bool	config_methods(struct config_ctx *x, json_t *v, size_t pos,
		    struct policy_rule *r);
static bool	config_strict_methods(struct config_ctx *x,
		    const struct config_field *f, bool methods,
		    struct policy_rule *r);
static bool	config_paths(struct config_ctx *x, json_t *v, size_t pos,
		    struct policy_rule *r);
static bool	config_rate(struct config_ctx *x, json_t *v, size_t pos,
		    struct policy_rule *r);
static bool	config_rule_secrets(struct config_ctx *x,
		    struct config_field *f, bool deny, struct policy_rule *r);
static bool	config_injects(struct config_ctx *x, json_t *v, size_t pos,
		    struct policy_rule *r);
static bool	config_inject(struct config_ctx *x, json_t *v, size_t pos,
		    struct policy_rule *r, struct policy_inject *in);
static bool	config_inject_header(struct config_ctx *x,
		    const struct config_field *f, struct policy_rule *r,
		    struct policy_inject *in);
static bool	config_inject_basic(struct config_ctx *x, json_t *v,
		    size_t pos, struct policy_rule *r,
		    struct policy_inject *in);
static bool	config_inject_placeholders(struct config_ctx *x, json_t *v,
		    size_t pos, struct policy_rule *r,
		    struct policy_inject *in);
static bool	config_inject_options(struct config_ctx *x,
		    const struct config_field *f, struct policy_inject *in);
static bool	config_inject_unique(struct config_ctx *x, size_t pos,
		    const struct policy_rule *r,
		    const struct policy_inject *in);
static bool	config_template(struct config_ctx *x, json_t *v, size_t pos,
		    enum config_tpl kind, struct policy_rule *r,
		    struct policy_template *t, size_t *nrefs);
static bool	config_tpl_push(struct policy_tpl_part **parts, size_t *n,
		    size_t *cap, const char *text, size_t len, size_t secret);
static size_t	config_secret(struct config_ctx *x, const char *name,
		    size_t n, size_t pos, size_t off);
static bool	config_rule_uses(struct config_ctx *x, struct policy_rule *r,
		    size_t secret);
static void	config_hosts(struct config_ctx *x, json_t *v, size_t pos,
		    uint32_t rule);
static void	config_host(struct config_ctx *x, json_t *v, size_t pos,
		    uint32_t rule);
static void	config_cidrs(struct config_ctx *x, json_t *v, size_t pos,
		    uint32_t rule);
static bool	config_geo_rule(struct config_ctx *x, size_t pos,
		    uint32_t rule, const char *key, bool db, bool given,
		    const char *dbkey);
static void	config_countries(struct config_ctx *x, json_t *v, size_t pos,
		    uint32_t rule);
static void	config_asns(struct config_ctx *x, json_t *v, size_t pos,
		    uint32_t rule);
static void	config_warn_denied(struct config_ctx *x, size_t pos,
		    const struct policy_rule *r, const struct addr_cidr *c);
static void	config_geoip(struct config_ctx *x, json_t *v, size_t pos);
static void	config_audit(struct config_ctx *x, json_t *v, size_t pos);
static void	config_resolver(struct config_ctx *x, json_t *v, size_t pos);
static bool	config_server(struct config_ctx *x, json_t *v, size_t pos,
		    char **out);
static void	config_tls(struct config_ctx *x, json_t *v, size_t pos);
static void	config_file_list(struct config_ctx *x, json_t *v, size_t pos,
		    char ***out);
static void	config_admin(struct config_ctx *x, json_t *v, size_t pos);
static void	config_workers(struct config_ctx *x, json_t *v, size_t pos);
static void	config_user(struct config_ctx *x, json_t *v, size_t pos);
static void	config_check_addresses(struct config_ctx *x);
static void	config_check_inspection(struct config_ctx *x);
static void	config_check_secrets(struct config_ctx *x);
static void	config_limits(struct moat_config *c);

/* Whole load. */
static void	config_syntax(struct policy_diags *d, const char *buf,
		    size_t len, const json_error_t *je);
static void	config_sort(struct policy_diags *d, size_t from);
static void	config_apply_defaults(struct moat_config *c);
static void	config_free(struct moat_config *c);
static void	config_free_refs(struct moat_secret_ref *v, size_t n);
static void	config_free_list(char **v);

/* ------------------------------------------------------------------ */
/* Messages                                                             */
/* ------------------------------------------------------------------ */

static void
config_vdiag(struct config_ctx *x, enum policy_diag_level lvl, size_t pos,
    bool at_key, const char *fmt, va_list ap)
{
	const struct jsonpos_ent	*e = NULL;
	int				 line = 0, col = 0;

	if (pos < x->jp->n) {
		e = &x->jp->v[pos];
		line = (int)e->vline;
		col = (int)e->vcol;
		if (at_key && e->kline != 0) {
			line = (int)e->kline;
			col = (int)e->kcol;
		}
	}
	config_vdiag_at(x, lvl, line, col, at_key, fmt, ap);
}

/* The message, after the JSON path unless bare. */
static void
config_vdiag_at(struct config_ctx *x, enum policy_diag_level lvl, int line,
    int col, bool bare, const char *fmt, va_list ap)
{
	char	*msg = NULL;

	if (vasprintf(&msg, fmt, ap) == -1) {
		diag_add(x->d, lvl, line, col, "out of memory");
		return;
	}
	if (bare || x->pathlen == 0)
		diag_add(x->d, lvl, line, col, "%s", msg);
	else
		diag_add(x->d, lvl, line, col, "%s: %s", x->path, msg);
	free(msg);
}

static void
config_err(struct config_ctx *x, size_t pos, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	config_vdiag(x, POLICY_DIAG_ERROR, pos, false, fmt, ap);
	va_end(ap);
}

static void
config_warn(struct config_ctx *x, size_t pos, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	config_vdiag(x, POLICY_DIAG_WARNING, pos, false, fmt, ap);
	va_end(ap);
}

static void
config_err_key(struct config_ctx *x, size_t pos, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	config_vdiag(x, POLICY_DIAG_ERROR, pos, true, fmt, ap);
	va_end(ap);
}

/*
 * An error at byte off of the string value at entry pos (off counts the
 * decoded bytes jansson returns), located at the column of the byte in the
 * text that encodes it.
 */
static void
config_err_in(struct config_ctx *x, size_t pos, size_t off,
    const char *fmt, ...)
{
	va_list	ap;
	int	line = 0, col = 0;

	if (pos < x->jp->n) {
		line = (int)x->jp->v[pos].vline;
		col = config_str_col(x, pos, off);
	}
	va_start(ap, fmt);
	config_vdiag_at(x, POLICY_DIAG_ERROR, line, col, false, fmt, ap);
	va_end(ap);
}

/*
 * The column of decoded byte off of the string at entry pos.  A JSON
 * string holds no raw newline, so the line is the string's own.  An
 * escape (backslash-n, a backslash-u code point, a surrogate pair) stands
 * for 1-4 decoded bytes; off inside one gives the escape's column.
 */
/*
 * The 4 hex digits of a \\u escape at s (all 4 inside the text: the caller
 * checked).  Not sscanf(): the config text need not end in a NUL byte.
 */
static int
config_hex4(const char *s, unsigned *v)
{
	size_t	i;
	int	d;

	*v = 0;
	for (i = 0; i < 4; i++) {
		if (s[i] >= '0' && s[i] <= '9')
			d = s[i] - '0';
		else if (s[i] >= 'a' && s[i] <= 'f')
			d = s[i] - 'a' + 10;
		else if (s[i] >= 'A' && s[i] <= 'F')
			d = s[i] - 'A' + 10;
		else
			return -1;
		*v = *v << 4 | (unsigned)d;
	}
	return 0;
}

static int
config_str_col(struct config_ctx *x, size_t pos, size_t off)
{
	const struct jsonpos_ent	*e = &x->jp->v[pos];
	const char			*b = x->buf;
	size_t				 i = 0, line = 1, start, p, d = 0, w;
	unsigned			 cp, lo;

	while (line < e->vline && i < x->len)
		if (b[i++] == '\n')
			line++;
	start = i + e->vcol - 1;
	if (start >= x->len || b[start] != '"')
		return (int)e->vcol;
	for (p = start + 1; p < x->len && b[p] != '"'; p += w) {
		w = 1;
		cp = 0;
		if (b[p] == '\\' && p + 1 < x->len) {
			w = 2;
			if (b[p + 1] == 'u' && p + 6 <= x->len &&
			    config_hex4(b + p + 2, &cp) == 0) {
				w = 6;
				if (cp >= 0xd800 && cp <= 0xdbff &&
				    p + 12 <= x->len && b[p + 6] == '\\' &&
				    b[p + 7] == 'u' &&
				    config_hex4(b + p + 8, &lo) == 0 &&
				    lo >= 0xdc00 && lo <= 0xdfff) {
					w = 12;
					cp = 0x10000;
				}
			}
		}
		/* Decoded bytes of this source unit. */
		if (w <= 2 || cp < 0x80)
			cp = 1;
		else if (cp < 0x800)
			cp = 2;
		else if (cp < 0x10000)
			cp = 3;
		else
			cp = 4;
		if (d + cp > off)
			break;
		d += cp;
	}
	return (int)(p - start + e->vcol);
}

static void
config_oom(struct config_ctx *x)
{
	diag_add(x->d, POLICY_DIAG_ERROR, 0, 0, "out of memory");
}

/*
 * Quotes a user string for a message: "..." with \" and \\ escaped and
 * control bytes as \xHH, cut after CONFIG_QUOTE_MAX bytes.  The buffer is
 * reused after CONFIG_NQUOTE calls.
 */
static const char *
config_q(struct config_ctx *x, const char *s, size_t n)
{
	char		*b = x->q[x->qi++ % CONFIG_NQUOTE], *o;
	size_t		 i;
	unsigned char	 c;

	o = b;
	*o++ = '"';
	for (i = 0; i < n && i < CONFIG_QUOTE_MAX; i++) {
		c = (unsigned char)s[i];
		if (c == '"' || c == '\\') {
			*o++ = '\\';
			*o++ = (char)c;
			continue;
		}
		if (c < 0x20 || c == 0x7f) {
			o += sprintf(o, "\\x%02x", c);
			continue;
		}
		*o++ = (char)c;
	}
	if (i < n)
		o += sprintf(o, "...");
	*o++ = '"';
	*o = '\0';
	return b;
}

static size_t
config_push_key(struct config_ctx *x, const char *key)
{
	size_t	old = x->pathlen, i;
	bool	plain = key[0] != '\0';
	int	n;

	for (i = 0; key[i] != '\0'; i++)
		if (!((key[i] >= 'a' && key[i] <= 'z') ||
		    (key[i] >= 'A' && key[i] <= 'Z') ||
		    (key[i] >= '0' && key[i] <= '9') || key[i] == '_' ||
		    key[i] == '-'))
			plain = false;
	if (plain)
		n = snprintf(x->path + old, sizeof(x->path) - old, "%s%s",
		    old ? "." : "", key);
	else
		n = snprintf(x->path + old, sizeof(x->path) - old, "[%s]",
		    config_q(x, key, strlen(key)));
	if (n < 0 || (size_t)n >= sizeof(x->path) - old)
		x->pathlen = sizeof(x->path) - 1;
	else
		x->pathlen = old + (size_t)n;
	return old;
}

static size_t
config_push_index(struct config_ctx *x, size_t i)
{
	size_t	old = x->pathlen;
	int	n;

	n = snprintf(x->path + old, sizeof(x->path) - old, "[%zu]", i);
	if (n < 0 || (size_t)n >= sizeof(x->path) - old)
		x->pathlen = sizeof(x->path) - 1;
	else
		x->pathlen = old + (size_t)n;
	return old;
}

static void
config_pop(struct config_ctx *x, size_t old)
{
	x->pathlen = old;
	x->path[old] = '\0';
}

static const char *
config_where(struct config_ctx *x)
{
	return x->pathlen == 0 ? "the top level" : x->path;
}

static const char *
config_typename(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a number with a fraction or exponent";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	case JSON_NULL:
	default:
		return "null";
	}
}

/* Levenshtein distance of two short strings. */
static unsigned
config_distance(const char *a, const char *b)
{
	unsigned	row[CONFIG_SUGGEST_LEN + 1], diag, up, best;
	size_t		la = strlen(a), lb = strlen(b), i, j;

	if (la > CONFIG_SUGGEST_LEN || lb > CONFIG_SUGGEST_LEN)
		return CONFIG_SUGGEST_DIST + 1;
	for (j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (i = 1; i <= la; i++) {
		diag = row[0];
		row[0] = (unsigned)i;
		for (j = 1; j <= lb; j++) {
			up = row[j];
			best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

/* The known key nearest to key, if within CONFIG_SUGGEST_DIST edits. */
static const char *
config_suggest(const char *key, const struct config_field *f, size_t nf,
    const struct config_default *sec)
{
	const char	*best = NULL;
	unsigned	 bd = CONFIG_SUGGEST_DIST + 1, dd;
	size_t		 i;

	for (i = 0; i < nf; i++)
		if ((dd = config_distance(key, f[i].key)) < bd) {
			bd = dd;
			best = f[i].key;
		}
	for (i = 0; sec != NULL && i < CONFIG_NDEFAULTS; i++) {
		if (config_defaults[i].section == NULL ||
		    strcmp(config_defaults[i].section, sec->section) != 0)
			continue;
		if ((dd = config_distance(key, config_defaults[i].key)) < bd) {
			bd = dd;
			best = config_defaults[i].key;
		}
	}
	return best;
}

/* ------------------------------------------------------------------ */
/* Generic shapes                                                       */
/* ------------------------------------------------------------------ */

/*
 * Matches the members of obj against the known keys f[] (filling v and
 * pos) and reports each unknown key.  Returns false if obj is not an
 * object (reported) or the position table is out of step.
 */
static bool
config_fields(struct config_ctx *x, json_t *obj, size_t pos,
    struct config_field *f, size_t nf)
{
	const char	*key, *hint;
	json_t		*v;
	size_t		 ci, end, i;

	if (!config_want(x, obj, pos, JSON_OBJECT, "an object"))
		return false;
	ci = pos + 1;
	end = jsonpos_next(x->jp, pos);
	json_object_foreach(obj, key, v) {
		if (ci >= end) {
			config_err(x, pos, "internal error: positions out of "
			    "step with the parser");
			return false;
		}
		for (i = 0; i < nf; i++)
			if (strcmp(key, f[i].key) == 0)
				break;
		if (i < nf) {
			f[i].v = v;
			f[i].pos = ci;
		} else if ((hint = config_suggest(key, f, nf, NULL)) != NULL)
			config_err_key(x, ci, "unknown key %s in %s (did you "
			    "mean \"%s\"?)", config_q(x, key, strlen(key)),
			    config_where(x), hint);
		else
			config_err_key(x, ci, "unknown key %s in %s",
			    config_q(x, key, strlen(key)), config_where(x));
		ci = jsonpos_next(x->jp, ci);
	}
	return true;
}

static bool
config_want(struct config_ctx *x, json_t *v, size_t pos, json_type type,
    const char *what)
{
	if (json_typeof(v) == type)
		return true;
	config_err(x, pos, "expected %s, got %s", what, config_typename(v));
	return false;
}

/* v must be a non-empty array; what names its elements. */
static bool
config_array(struct config_ctx *x, json_t *v, size_t pos, const char *what)
{
	if (!config_want(x, v, pos, JSON_ARRAY, "an array"))
		return false;
	if (json_array_size(v) == 0) {
		config_err(x, pos, "empty array: list at least one %s "
		    "(or remove the key)", what);
		return false;
	}
	return true;
}

static const struct config_default *
config_default(const char *section, const char *key)
{
	size_t	i;

	for (i = 0; i < CONFIG_NDEFAULTS; i++) {
		const struct config_default *d = &config_defaults[i];

		if (((section == NULL && d->section == NULL) ||
		    (section != NULL && d->section != NULL &&
		    strcmp(section, d->section) == 0)) &&
		    strcmp(key, d->key) == 0)
			return d;
	}
	return NULL;
}

static bool
config_number(struct config_ctx *x, json_t *v, size_t pos,
    const struct config_default *def, long long *out)
{
	long long	n;

	if (json_is_real(v)) {
		config_err(x, pos, "expected an integer, got %g",
		    json_real_value(v));
		return false;
	}
	if (!config_want(x, v, pos, JSON_INTEGER, "an integer"))
		return false;
	n = json_integer_value(v);
	if (n < def->min || n > def->max) {
		config_err(x, pos, "%lld is out of range (%lld-%lld)", n,
		    def->min, def->max);
		return false;
	}
	*out = n;
	return true;
}

static bool
config_mode(struct config_ctx *x, json_t *v, size_t pos, int *out)
{
	const char	*s;
	size_t		 n, i;
	int		 m = 0;

	if (!config_want(x, v, pos, JSON_STRING, "a string such as \"0660\""))
		return false;
	s = json_string_value(v);
	n = json_string_length(v);
	for (i = 0; n >= 3 && n <= 4 && i < n; i++) {
		if (s[i] < '0' || s[i] > '7')
			break;
		m = m * 8 + (s[i] - '0');
	}
	if (n < 3 || n > 4 || i < n) {
		config_err(x, pos, "%s is not a mode: write 3 or 4 octal "
		    "digits, such as \"0660\"", config_q(x, s, n));
		return false;
	}
	*out = m;
	return true;
}

/* [A-Za-z0-9] plus the bytes of extra, 1..max long. */
static bool
config_ident(const char *s, size_t n, size_t max, const char *extra)
{
	size_t	i;

	if (n == 0 || n > max)
		return false;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= '0' && s[i] <= '9') ||
		    (s[i] != '\0' && strchr(extra, s[i]) != NULL)))
			return false;
	return true;
}

/* [A-Za-z_][A-Za-z0-9_]*, at most CONFIG_ENV_MAX bytes. */
static bool
config_envname(const char *s, size_t n)
{
	return config_ident(s, n, CONFIG_ENV_MAX, "_") &&
	    !(s[0] >= '0' && s[0] <= '9');
}

static char *
config_strdup(struct config_ctx *x, const char *s)
{
	char	*r;

	if ((r = strdup(s)) == NULL)
		config_oom(x);
	return r;
}

/* A file path: a non-empty string without control bytes. */
static bool
config_file(struct config_ctx *x, json_t *v, size_t pos, char **out)
{
	const char	*s;
	size_t		 n, i;

	if (!config_want(x, v, pos, JSON_STRING, "a file path (a string)"))
		return false;
	s = json_string_value(v);
	n = json_string_length(v);
	if (n == 0) {
		config_err(x, pos, "empty file path");
		return false;
	}
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) {
			config_err(x, pos, "control byte in file path %s",
			    config_q(x, s, n));
			return false;
		}
	return (*out = config_strdup(x, s)) != NULL;
}

/*
 * A section made only of numbers from config_defaults[] (timeouts,
 * limits): each member is looked up there and stored.
 */
static void
config_sections(struct config_ctx *x, json_t *obj, size_t pos,
    const char *section)
{
	const struct config_default	*d;
	struct config_default		 sec;
	const char			*key, *hint;
	json_t				*v;
	size_t				 ci, end, old;
	long long			 n;

	if (!config_want(x, obj, pos, JSON_OBJECT, "an object"))
		return;
	memset(&sec, 0, sizeof(sec));
	sec.section = section;
	ci = pos + 1;
	end = jsonpos_next(x->jp, pos);
	json_object_foreach(obj, key, v) {
		if (ci >= end)
			return;
		if ((d = config_default(section, key)) == NULL) {
			hint = config_suggest(key, NULL, 0, &sec);
			config_err_key(x, ci, "unknown key %s in %s%s%s%s",
			    config_q(x, key, strlen(key)), config_where(x),
			    hint ? " (did you mean \"" : "", hint ? hint : "",
			    hint ? "\"?)" : "");
		} else {
			old = config_push_key(x, key);
			if (config_number(x, v, ci, d, &n)) {
				if (d->type == CONFIG_T_UINT)
					*(unsigned *)((char *)x->c + d->off) =
					    (unsigned)n;
				else
					*(size_t *)((char *)x->c + d->off) =
					    (size_t)n;
			}
			config_pop(x, old);
		}
		ci = jsonpos_next(x->jp, ci);
	}
}

/* ------------------------------------------------------------------ */
/* Top level                                                            */
/* ------------------------------------------------------------------ */

/* In the order sections are read: secrets and GeoIP databases before the
 * rules that use them. */
enum {
	TOP_LISTEN = 0, TOP_SECRETS, TOP_GEOIP, TOP_POLICY, TOP_AUDIT,
	TOP_RESOLVER,
	TOP_TLS, TOP_ADMIN, TOP_TIMEOUTS, TOP_LIMITS, TOP_WORKERS, TOP_USER,
	TOP__COUNT
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
	};
	size_t			old;
	int			i;

	if (!config_fields(x, root, 0, f, TOP__COUNT))
		return;
	if (f[TOP_LISTEN].v == NULL && f[TOP_ADMIN].v == NULL)
		config_err(x, 0, "missing required key \"listen\" in the top "
		    "level: add at least one listener, such as {\"proto\": "
		    "\"http\", \"address\": \"127.0.0.1:3128\"}");
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
		}
		config_pop(x, old);
	}
	config_check_addresses(x);
	config_check_inspection(x);
	config_check_secrets(x);
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
	lim->sandbox_connections_set = lim->sandbox_connections != 0;
	if (!lim->sandbox_connections_set)
		lim->sandbox_connections = !several ? lim->connections :
		    lim->connections / 4 > 0 ? lim->connections / 4 : 1;
}

/* ------------------------------------------------------------------ */
/* listen                                                               */
/* ------------------------------------------------------------------ */

static void
config_listen(struct config_ctx *x, json_t *v, size_t pos)
{
	size_t	n, i, ci, old;

	/* "listen": [] is legal: a moatd that serves only sandboxes
	 * registered at run time (moatd --admin-fd, "admin"). */
	if (!config_want(x, v, pos, JSON_ARRAY, "an array"))
		return;
	if ((n = json_array_size(v)) == 0)
		return;
	if ((x->c->listen = calloc(n, sizeof(*x->c->listen))) == NULL) {
		config_oom(x);
		return;
	}
	x->c->nlisten = n;
	for (i = 0; i < n; i++)
		x->c->listen[i].mode = -1;
	for (i = 0, ci = pos + 1; i < n; i++, ci = jsonpos_next(x->jp, ci)) {
		old = config_push_index(x, i);
		config_listener(x, json_array_get(v, i), ci,
		    &x->c->listen[i]);
		config_pop(x, old);
	}
}

enum {
	LSN_PROTO = 0, LSN_ADDRESS, LSN_MODE, LSN_SANDBOX, LSN_AUTH,
	LSN_CONNECTIONS, LSN__COUNT
};

static void
config_listener(struct config_ctx *x, json_t *v, size_t pos,
    struct moat_listen *l)
{
	struct config_field	 f[LSN__COUNT] = {
		[LSN_PROTO] = { "proto", NULL, 0 },
		[LSN_ADDRESS] = { "address", NULL, 0 },
		[LSN_MODE] = { "mode", NULL, 0 },
		[LSN_SANDBOX] = { "sandbox", NULL, 0 },
		[LSN_AUTH] = { "auth", NULL, 0 },
		[LSN_CONNECTIONS] = { "connections", NULL, 0 },
	};
	const char		*s;
	size_t			 n, i, old;
	long long		 num;
	bool			 proto_ok = false, addr_ok = false;

	l->line = (int)x->jp->v[pos].vline;
	l->column = (int)x->jp->v[pos].vcol;
	if (!config_fields(x, v, pos, f, LSN__COUNT))
		return;
	if (f[LSN_PROTO].v == NULL)
		config_err(x, pos, "missing \"proto\" (http, socks5, "
		    "http+socks5, transparent or dns)");
	else {
		old = config_push_key(x, "proto");
		if (config_want(x, f[LSN_PROTO].v, f[LSN_PROTO].pos,
		    JSON_STRING, "a string")) {
			s = json_string_value(f[LSN_PROTO].v);
			for (i = 0; i < CONFIG_NPROTOS; i++)
				if (strcmp(s, config_protos[i]) == 0)
					break;
			if (i < CONFIG_NPROTOS) {
				l->proto = (enum moat_listen_proto)i;
				proto_ok = true;
			} else
				config_err(x, f[LSN_PROTO].pos, "unknown "
				    "protocol %s (http, socks5, http+socks5, "
				    "transparent or dns)", config_q(x, s,
				    json_string_length(f[LSN_PROTO].v)));
		}
		config_pop(x, old);
	}
	if (f[LSN_ADDRESS].v == NULL)
		config_err(x, pos, "missing \"address\" (IP:PORT, "
		    "[IPv6]:PORT or unix:/PATH)");
	else {
		old = config_push_key(x, "address");
		addr_ok = config_bind(x, f[LSN_ADDRESS].v,
		    f[LSN_ADDRESS].pos, false, l);
		config_pop(x, old);
	}
	if (proto_ok && addr_ok && l->is_unix &&
	    (l->proto == MOAT_PROTO_TRANSPARENT ||
	    l->proto == MOAT_PROTO_DNS))
		config_err(x, f[LSN_ADDRESS].pos, "a %s listener cannot be a "
		    "unix socket: give it IP:PORT", config_protos[l->proto]);
	if (addr_ok && l->is_unix)
		l->mode = (int)config_default("listen", "mode")->def;
	if (f[LSN_MODE].v != NULL) {
		old = config_push_key(x, "mode");
		if (addr_ok && !l->is_unix)
			config_err(x, f[LSN_MODE].pos, "a mode applies to "
			    "unix socket listeners only");
		else
			(void)config_mode(x, f[LSN_MODE].v, f[LSN_MODE].pos,
			    &l->mode);
		config_pop(x, old);
	}
	if (f[LSN_SANDBOX].v != NULL) {
		old = config_push_key(x, "sandbox");
		if (config_want(x, f[LSN_SANDBOX].v, f[LSN_SANDBOX].pos,
		    JSON_STRING, "a string")) {
			s = json_string_value(f[LSN_SANDBOX].v);
			n = json_string_length(f[LSN_SANDBOX].v);
			if (!config_ident(s, n, CONFIG_IDENT_MAX, "._-"))
				config_err(x, f[LSN_SANDBOX].pos, "%s is not "
				    "a sandbox name (1-64 of A-Z a-z 0-9 . _ "
				    "-)", config_q(x, s, n));
			else
				l->sandbox = config_strdup(x, s);
		}
		config_pop(x, old);
	}
	if (l->sandbox == NULL)
		l->sandbox = config_strdup(x,
		    config_default("listen", "sandbox")->sdef);
	if (f[LSN_AUTH].v != NULL) {
		old = config_push_key(x, "auth");
		if (proto_ok && (l->proto == MOAT_PROTO_TRANSPARENT ||
		    l->proto == MOAT_PROTO_DNS))
			config_err(x, f[LSN_AUTH].pos, "a %s listener has no "
			    "way to log in: remove \"auth\"",
			    config_protos[l->proto]);
		else
			config_refs(x, f[LSN_AUTH].v, f[LSN_AUTH].pos, false,
			    &l->auth, &l->nauth);
		config_pop(x, old);
	}
	if (f[LSN_CONNECTIONS].v != NULL) {
		old = config_push_key(x, "connections");
		if (config_number(x, f[LSN_CONNECTIONS].v,
		    f[LSN_CONNECTIONS].pos, config_default("listen",
		    "connections"), &num))
			l->connections = (size_t)num;
		config_pop(x, old);
	}
}

/*
 * "IP:PORT", "[V6]:PORT" or "unix:/PATH" (only the last if unix_only).
 * Nothing resolves at bind time, so host names are refused.
 */
static bool
config_bind(struct config_ctx *x, json_t *v, size_t pos, bool unix_only,
    struct moat_listen *l)
{
	const char	*s, *close, *colon, *path;
	size_t		 n, i, plen, alen;
	bool		 br = false;

	if (!config_want(x, v, pos, JSON_STRING, "a string"))
		return false;
	s = json_string_value(v);
	n = json_string_length(v);
	if (n >= 5 && memcmp(s, "unix:", 5) == 0) {
		path = s + 5;
		plen = n - 5;
		if (plen == 0 || path[0] != '/') {
			config_err(x, pos, "%s: a unix socket path must be "
			    "absolute (unix:/PATH)", config_q(x, s, n));
			return false;
		}
		if (plen > CONFIG_UNIX_PATH_MAX) {
			config_err(x, pos, "unix socket path is %zu bytes "
			    "long; the most a socket can have is %d", plen,
			    CONFIG_UNIX_PATH_MAX);
			return false;
		}
		for (i = 0; i < plen; i++)
			if ((unsigned char)path[i] < 0x20 || path[i] == 0x7f) {
				config_err(x, pos, "control byte in unix "
				    "socket path %s", config_q(x, s, n));
				return false;
			}
		l->is_unix = true;
		l->address = config_strdup(x, s);
		l->path = config_strdup(x, path);
		return l->address != NULL && l->path != NULL;
	}
	if (unix_only) {
		config_err(x, pos, "%s is not unix:/PATH", config_q(x, s, n));
		return false;
	}
	if (n > 0 && s[0] == '[') {
		close = memchr(s, ']', n);
		colon = close != NULL && close + 1 < s + n && close[1] == ':' ?
		    close + 1 : NULL;
		br = true;
	} else {
		colon = memchr(s, ':', n);
		if (colon != NULL && memchr(colon + 1, ':',
		    n - (size_t)(colon + 1 - s)) != NULL)
			colon = NULL;
	}
	alen = colon != NULL ? (size_t)(colon - s) : 0;
	if (colon == NULL || addr_parse_strict(s, alen, br,
	    &l->host.addr) == -1 || (!br && l->host.addr.family != AF_INET)) {
		config_err(x, pos, "%s is not IP:PORT, [IPv6]:PORT or "
		    "unix:/PATH (host names are not allowed: nothing is "
		    "resolved at bind time)", config_q(x, s, n));
		return false;
	}
	if (host_port_parse(colon + 1, n - alen - 1, &l->port) == -1) {
		config_err(x, pos, "%s: bad port (1-65535)",
		    config_q(x, s, n));
		return false;
	}
	l->host.kind = POLICY_HOST_ADDR;
	policy_addr_format(&l->host.addr, l->host.name, sizeof(l->host.name));
	l->address = config_strdup(x, s);
	return l->address != NULL;
}

/* The same socket twice is an error, whatever spelling. */
static void
config_check_addresses(struct config_ctx *x)
{
	struct moat_config	*c = x->c;
	struct moat_listen	*a, *b;
	size_t			 i, j;
	char			 pa[CONFIG_UNIX_PATH_MAX + ADDR_TEXT_MAX];

	for (i = 0; i < c->nlisten; i++) {
		a = &c->listen[i];
		if (a->address == NULL)
			continue;
		for (j = 0; j < i; j++) {
			b = &c->listen[j];
			if (b->address == NULL || a->is_unix != b->is_unix)
				continue;
			if (a->is_unix ? strcmp(a->path, b->path) != 0 :
			    (a->port != b->port ||
			    strcmp(a->host.name, b->host.name) != 0))
				continue;
			if (a->is_unix)
				snprintf(pa, sizeof(pa), "unix:%s", a->path);
			else
				snprintf(pa, sizeof(pa), a->host.addr.family ==
				    AF_INET ? "%s:%u" : "[%s]:%u", a->host.name,
				    a->port);
			diag_add(x->d, POLICY_DIAG_ERROR, a->line, a->column,
			    "listen[%zu]: address %s is already used by "
			    "listen[%zu] (line %d)", i, pa, j, b->line);
			break;
		}
		if (a->is_unix && c->admin_address != NULL &&
		    strcmp(c->admin_address + 5, a->path) == 0)
			diag_add(x->d, POLICY_DIAG_ERROR, a->line, a->column,
			    "listen[%zu]: %s is also the admin socket", i,
			    a->path);
	}
}

/*
 * A rule that needs to see requests (inject, methods, paths, git,
 * "intercept": true) sees plain http:// ones always, and those inside a
 * tunnel (CONNECT, SOCKS5, transparent) only by terminating TLS, which
 * needs a CA.  Without one, moatd would have to refuse every tunnel such
 * a rule allows, or, for a deny rule, every tunnel to the hosts it
 * matches (else encryption would bypass it): refuse the config instead,
 * so the problem shows at --check, not as 403s.  A rule whose ports are
 * exactly [80] reaches only plain HTTP and needs no CA; an opaque rule
 * ("intercept": false) never terminates TLS.
 */
static void
config_check_inspection(struct config_ctx *x)
{
	const struct policy_rule	*r;
	char				 what[64];
	size_t				 i;

	if (x->c->tls.ca_cert != NULL || x->ca_given)
		return;
	for (i = 0; i < x->p->nrules; i++) {
		r = &x->p->rules[i];
		if ((r->flags & POLICY_F_INSPECT) == 0 ||
		    (r->flags & POLICY_F_OPAQUE) != 0)
			continue;
		if (r->nports == 1 && r->ports[0].lo == 80 &&
		    r->ports[0].hi == 80)
			continue;
		snprintf(what, sizeof(what), "%s%s%s%s%s",
		    (r->given & POLICY_GIVEN_INJECT) ? ", inject" : "",
		    r->nmethods > 0 ? ", methods" : "",
		    r->npaths > 0 ? ", paths" : "",
		    (r->given & POLICY_GIVEN_GIT) ? ", git" : "",
		    (r->given & POLICY_GIVEN_INTERCEPT) ? ", intercept" : "");
		diag_add(x->d, POLICY_DIAG_ERROR, r->line, r->column,
		    "policy.rules[%zu]: rule %s needs to see inside TLS (%s) "
		    "but no CA is configured: set tls.ca_cert and tls.ca_key "
		    "(moat ca init DIR)", i, r->name, what[0] != '\0' ?
		    what + 2 : "intercept");
	}
}

/* A secret that no rule injects is likely a typo or a forgotten rule. */
static void
config_check_secrets(struct config_ctx *x)
{
	const struct moat_secret_ref	*s;
	size_t				 i;

	if (x->secret_used == NULL)
		return;
	for (i = 0; i < x->c->nsecrets; i++) {
		s = &x->c->secrets[i];
		if (!x->secret_used[i])
			diag_add(x->d, POLICY_DIAG_WARNING, s->line,
			    s->column, "secrets.%s: secret %s is not used by "
			    "any rule: no rule injects it", s->name, s->name);
	}
}

/* ------------------------------------------------------------------ */
/* auth and secrets: NAME -> {"file": PATH} | {"env": VAR}             */
/* ------------------------------------------------------------------ */

static void
config_refs(struct config_ctx *x, json_t *v, size_t pos, bool secrets,
    struct moat_secret_ref **out, size_t *nout)
{
	struct moat_secret_ref	*r;
	const char		*key;
	json_t			*m;
	size_t			 n, k = 0, ci, old, i;

	if (!config_want(x, v, pos, JSON_OBJECT, "an object"))
		return;
	if ((n = json_object_size(v)) == 0) {
		if (!secrets)
			config_err(x, pos, "no identities: add NAME: "
			    "{\"env\": VAR} or remove \"auth\"");
		return;
	}
	if ((r = calloc(n, sizeof(*r))) == NULL) {
		config_oom(x);
		return;
	}
	*out = r;
	ci = pos + 1;
	json_object_foreach(v, key, m) {
		size_t	kl = strlen(key);
		bool	good;

		good = secrets ? config_ident(key, kl, CONFIG_SECRET_MAX, "_")
		    && !(key[0] >= '0' && key[0] <= '9') :
		    config_ident(key, kl, CONFIG_IDENT_MAX, "._-");
		if (!good)
			config_err_key(x, ci, "%s: %s is not a valid %s",
			    config_where(x), config_q(x, key, kl), secrets ?
			    "secret name ([A-Za-z_][A-Za-z0-9_]{0,63})" :
			    "identity (1-64 of A-Z a-z 0-9 . _ -)");
		old = config_push_key(x, key);
		if (config_ref(x, m, ci, secrets, &r[k]) && good) {
			r[k].line = (int)x->jp->v[ci].kline;
			r[k].column = (int)x->jp->v[ci].kcol;
			/* A secret's sandbox variable defaults to its name. */
			if ((r[k].name = config_strdup(x, key)) != NULL &&
			    (!secrets || r[k].placeholder_env != NULL ||
			    (r[k].placeholder_env = config_strdup(x, key)) !=
			    NULL))
				k++;
			else
				config_free_refs(&r[k], 1);
		} else
			config_free_refs(&r[k], 1);
		config_pop(x, old);
		ci = jsonpos_next(x->jp, ci);
	}
	*nout = k;
	/* Two secrets may not hand the sandbox the same variable. */
	for (i = 0; secrets && i < k; i++)
		for (n = 0; n < i; n++)
			if (strcmp(r[i].placeholder_env,
			    r[n].placeholder_env) == 0) {
				diag_add(x->d, POLICY_DIAG_ERROR, r[i].line,
				    r[i].column, "secrets: %s and %s both "
				    "use the sandbox variable %s: set "
				    "\"sandbox_env\" on one", r[n].name,
				    r[i].name, r[i].placeholder_env);
				break;
			}
}

enum { REF_FILE = 0, REF_ENV, REF_SANDBOX_ENV, REF__COUNT };

static bool
config_ref(struct config_ctx *x, json_t *v, size_t pos, bool secrets,
    struct moat_secret_ref *r)
{
	struct config_field	f[REF__COUNT] = {
		[REF_FILE] = { "file", NULL, 0 },
		[REF_ENV] = { "env", NULL, 0 },
		[REF_SANDBOX_ENV] = { "sandbox_env", NULL, 0 },
	};
	const char		*s;
	size_t			 n, old;
	int			 i;
	bool			 ok = true;

	memset(r, 0, sizeof(*r));
	if (!config_fields(x, v, pos, f, secrets ? REF__COUNT : REF_ENV + 1))
		return false;
	if ((f[REF_FILE].v != NULL) == (f[REF_ENV].v != NULL)) {
		config_err(x, pos, "give exactly one of \"file\" and \"env\"");
		return false;
	}
	if (f[REF_FILE].v != NULL) {
		old = config_push_key(x, "file");
		ok = config_file(x, f[REF_FILE].v, f[REF_FILE].pos, &r->file);
		config_pop(x, old);
	}
	for (i = REF_ENV; i < (secrets ? REF__COUNT : REF_ENV + 1); i++) {
		if (f[i].v == NULL)
			continue;
		old = config_push_key(x, f[i].key);
		if (!config_want(x, f[i].v, f[i].pos, JSON_STRING,
		    "a variable name")) {
			ok = false;
		} else {
			s = json_string_value(f[i].v);
			n = json_string_length(f[i].v);
			if (!config_envname(s, n)) {
				config_err(x, f[i].pos, "%s is not an "
				    "environment variable name "
				    "([A-Za-z_][A-Za-z0-9_]*)",
				    config_q(x, s, n));
				ok = false;
			} else if (i == REF_ENV)
				ok = (r->env = config_strdup(x, s)) != NULL &&
				    ok;
			else
				ok = (r->placeholder_env =
				    config_strdup(x, s)) != NULL && ok;
		}
		config_pop(x, old);
	}
	return ok;
}

/* ------------------------------------------------------------------ */
/* policy                                                               */
/* ------------------------------------------------------------------ */

enum { POL_DEFAULT = 0, POL_RULES, POL_ALLOW_PRIVATE, POL__COUNT };

static void
config_policy(struct config_ctx *x, json_t *v, size_t pos)
{
	struct config_field	f[POL__COUNT] = {
		[POL_DEFAULT] = { "default", NULL, 0 },
		[POL_RULES] = { "rules", NULL, 0 },
		[POL_ALLOW_PRIVATE] = { "allow_private", NULL, 0 },
	};
	json_t			*rules;
	size_t			 old, n, i, ci;

	if (!config_fields(x, v, pos, f, POL__COUNT))
		return;
	if (f[POL_DEFAULT].v != NULL) {
		old = config_push_key(x, "default");
		if (!json_is_string(f[POL_DEFAULT].v) ||
		    strcmp(json_string_value(f[POL_DEFAULT].v), "deny") != 0)
			config_err(x, f[POL_DEFAULT].pos, "only \"deny\" is "
			    "accepted: moat allows only what a rule allows "
			    "(write an allow rule, such as {\"action\": "
			    "\"allow\", \"hosts\": [\"*\"]}, instead)");
		config_pop(x, old);
	}
	/* Before the rules, so their warnings know what is lifted. */
	if (f[POL_ALLOW_PRIVATE].v != NULL) {
		old = config_push_key(x, "allow_private");
		config_allow_private(x, f[POL_ALLOW_PRIVATE].v,
		    f[POL_ALLOW_PRIVATE].pos);
		config_pop(x, old);
	}
	if ((rules = f[POL_RULES].v) == NULL) {
		config_warn(x, pos, "no \"rules\": every connection will be "
		    "denied");
		return;
	}
	old = config_push_key(x, "rules");
	if (config_want(x, rules, f[POL_RULES].pos, JSON_ARRAY, "an array")) {
		n = json_array_size(rules);
		if (n == 0)
			config_warn(x, f[POL_RULES].pos, "no rules: every "
			    "connection will be denied");
		for (i = 0, ci = f[POL_RULES].pos + 1; i < n;
		    i++, ci = jsonpos_next(x->jp, ci)) {
			size_t	o2 = config_push_index(x, i);

			config_rule(x, json_array_get(rules, i), ci, i);
			config_pop(x, o2);
		}
	}
	config_pop(x, old);
}

static void
config_allow_private(struct config_ctx *x, json_t *v, size_t pos)
{
	struct addr_cidr	c;
	char			buf[ADDR_TEXT_MAX];
	size_t			i, ci, old;
	bool			lifted;
	enum policy_reason	reason;

	if (!config_want(x, v, pos, JSON_ARRAY, "an array of CIDRs"))
		return;
	for (i = 0, ci = pos + 1; i < json_array_size(v);
	    i++, ci = jsonpos_next(x->jp, ci)) {
		old = config_push_index(x, i);
		if (config_cidr(x, json_array_get(v, i), ci, &c)) {
			if (policy_add_allow_private(x->p, &c) == -1)
				config_oom(x);
			else if (!deny_cidr_overlaps(x->p, &c))
				config_warn(x, ci, "%s overlaps no built-in "
				    "denied range: it has no effect",
				    addr_cidr_format(&c, buf, sizeof(buf)));
			else if (!deny_cidr_inside(x->p, &c, &lifted, &reason))
				config_warn(x, ci, "%s is wider than the "
				    "built-in denied ranges it covers and opens "
				    "none of them: list each range to open "
				    "(e.g. 10.0.0.0/8)",
				    addr_cidr_format(&c, buf, sizeof(buf)));
		}
		config_pop(x, old);
	}
}

static bool
config_cidr(struct config_ctx *x, json_t *v, size_t pos, struct addr_cidr *c)
{
	struct addr_cidr	 fixed;
	const char		*s, *err = NULL;
	char			 buf[ADDR_TEXT_MAX];
	size_t			 n;
	int			 rc;

	if (!config_want(x, v, pos, JSON_STRING, "a CIDR string"))
		return false;
	s = json_string_value(v);
	n = json_string_length(v);
	rc = addr_cidr_parse(s, n, c, &fixed, &err);
	if (rc == -2) {
		config_err(x, pos, "%.*s has host bits set; did you mean %s?",
		    (int)n, s, addr_cidr_format(&fixed, buf, sizeof(buf)));
		return false;
	}
	if (rc == -1) {
		config_err(x, pos, "%s is not a CIDR: %s", config_q(x, s, n),
		    err);
		return false;
	}
	return true;
}

/* ------------------------------------------------------------------ */
/* rules                                                                */
/* ------------------------------------------------------------------ */

enum {
	RULE_NAME = 0, RULE_ACTION, RULE_HOSTS, RULE_CIDRS, RULE_COUNTRIES,
	RULE_ASNS, RULE_PORTS, RULE_METHODS, RULE_PATHS, RULE_INTERCEPT,
	RULE_RATE, RULE_INJECT, RULE_PLAIN_HTTP, RULE_GIT, RULE_STRICT_METHODS,
	RULE_PROTOCOLS,
	RULE__COUNT
};

static bool	config_protocols(struct config_ctx *x, json_t *v, size_t pos,
		    struct policy_rule *r);

static void
config_rule(struct config_ctx *x, json_t *v, size_t pos, size_t index)
{
	struct config_field	 f[RULE__COUNT] = {
		[RULE_NAME] = { "name", NULL, 0 },
		[RULE_ACTION] = { "action", NULL, 0 },
		[RULE_HOSTS] = { "hosts", NULL, 0 },
		[RULE_CIDRS] = { "cidrs", NULL, 0 },
		[RULE_COUNTRIES] = { "countries", NULL, 0 },
		[RULE_ASNS] = { "asns", NULL, 0 },
		[RULE_PORTS] = { "ports", NULL, 0 },
		[RULE_METHODS] = { "methods", NULL, 0 },
		[RULE_PATHS] = { "paths", NULL, 0 },
		[RULE_INTERCEPT] = { "intercept", NULL, 0 },
		[RULE_RATE] = { "rate", NULL, 0 },
		[RULE_INJECT] = { "inject", NULL, 0 },
		[RULE_PLAIN_HTTP] = { "plain_http", NULL, 0 },
		[RULE_GIT] = { "git", NULL, 0 },
		[RULE_STRICT_METHODS] = { "strict_methods", NULL, 0 },
		[RULE_PROTOCOLS] = { "protocols", NULL, 0 },
	};
	struct policy_rule	 r;
	const char		*s;
	size_t			 old;
	uint32_t		 idx;
	bool			 ok = true, deny = false;

	memset(&r, 0, sizeof(r));
	r.line = (int)x->jp->v[pos].vline;
	r.column = (int)x->jp->v[pos].vcol;
	if (!config_fields(x, v, pos, f, RULE__COUNT))
		return;

	if (f[RULE_ACTION].v == NULL) {
		config_err(x, pos, "missing \"action\" (\"allow\" or "
		    "\"deny\")");
		ok = false;
	} else {
		old = config_push_key(x, "action");
		s = json_is_string(f[RULE_ACTION].v) ?
		    json_string_value(f[RULE_ACTION].v) : "";
		if (strcmp(s, "allow") == 0)
			r.action = POLICY_ALLOW;
		else if (strcmp(s, "deny") == 0) {
			r.action = POLICY_DENY;
			deny = true;
		} else {
			config_err(x, f[RULE_ACTION].pos, "must be \"allow\" "
			    "or \"deny\"");
			ok = false;
		}
		config_pop(x, old);
	}
	if (f[RULE_HOSTS].v == NULL && f[RULE_CIDRS].v == NULL &&
	    f[RULE_COUNTRIES].v == NULL && f[RULE_ASNS].v == NULL) {
		config_err(x, pos, "a rule needs \"hosts\", \"cidrs\", "
		    "\"countries\" or \"asns\" to say what it applies to");
		ok = false;
	}
	ok &= config_rule_name(x, f, pos, index, &r);
	if (r.name == NULL) {
		/* Reported; messages below still need a name to show. */
		char	def[32];

		snprintf(def, sizeof(def), "rule-%zu", index);
		if ((r.name = config_strdup(x, def)) == NULL)
			return;
	}
	if (f[RULE_PORTS].v != NULL) {
		old = config_push_key(x, "ports");
		ok &= config_ports(x, f[RULE_PORTS].v, f[RULE_PORTS].pos, &r);
		config_pop(x, old);
	} else if (r.action == POLICY_ALLOW) {
		r.ports = config_allow_ports;
		r.nports = sizeof(config_allow_ports) /
		    sizeof(config_allow_ports[0]);
	}
	if (f[RULE_METHODS].v != NULL) {
		old = config_push_key(x, "methods");
		ok &= config_methods(x, f[RULE_METHODS].v,
		    f[RULE_METHODS].pos, &r);
		config_pop(x, old);
	}
	if (f[RULE_PATHS].v != NULL) {
		old = config_push_key(x, "paths");
		ok &= config_paths(x, f[RULE_PATHS].v, f[RULE_PATHS].pos, &r);
		config_pop(x, old);
	}
	if (r.nmethods > 0 || r.npaths > 0)
		r.flags |= POLICY_F_INSPECT;
	if (f[RULE_STRICT_METHODS].v != NULL) {
		old = config_push_key(x, "strict_methods");
		ok &= config_strict_methods(x, &f[RULE_STRICT_METHODS],
		    f[RULE_METHODS].v != NULL, &r);
		config_pop(x, old);
	}
	if (f[RULE_INTERCEPT].v != NULL) {
		old = config_push_key(x, "intercept");
		if (!json_is_boolean(f[RULE_INTERCEPT].v)) {
			config_err(x, f[RULE_INTERCEPT].pos, "expected a "
			    "boolean, got %s",
			    config_typename(f[RULE_INTERCEPT].v));
			ok = false;
		} else if (json_is_true(f[RULE_INTERCEPT].v)) {
			r.flags |= POLICY_F_INSPECT;
			r.given |= POLICY_GIVEN_INTERCEPT;
		} else {
			r.flags |= POLICY_F_OPAQUE;
			if (r.nmethods > 0 || r.npaths > 0)
				config_warn(x, f[RULE_INTERCEPT].pos, "rule "
				    "%s checks methods or paths but never "
				    "intercepts TLS: its HTTPS requests "
				    "cannot be checked", r.name);
		}
		config_pop(x, old);
	}
	if (f[RULE_PROTOCOLS].v != NULL) {
		old = config_push_key(x, "protocols");
		if (deny) {
			config_err(x, f[RULE_PROTOCOLS].pos, "\"protocols\" "
			    "narrows what an allow rule lets through; a deny "
			    "rule refuses every protocol");
			ok = false;
		} else
			ok &= config_protocols(x, f[RULE_PROTOCOLS].v,
			    f[RULE_PROTOCOLS].pos, &r);
		config_pop(x, old);
	}
	if (f[RULE_RATE].v != NULL) {
		old = config_push_key(x, "rate");
		ok &= config_rate(x, f[RULE_RATE].v, f[RULE_RATE].pos, &r);
		config_pop(x, old);
	}
	ok &= config_rule_secrets(x, f, deny, &r);
	if ((r.flags & POLICY_F_OPAQUE) != 0 && (r.given &
	    (POLICY_GIVEN_INJECT | POLICY_GIVEN_GIT)) != 0) {
		old = config_push_key(x, "intercept");
		config_err(x, f[RULE_INTERCEPT].pos, "rule %s %s, which needs "
		    "moatd to see inside TLS: remove \"intercept\": false "
		    "(moatd never looks inside an opaque tunnel)", r.name,
		    (r.given & POLICY_GIVEN_INJECT) != 0 ? "injects secrets" :
		    "uses the git preset");
		config_pop(x, old);
		ok = false;
	}

	if ((idx = policy_add_rule(x->p, &r)) == POLICY_NONE) {
		config_oom(x);
		return;
	}
	if (f[RULE_HOSTS].v != NULL) {
		old = config_push_key(x, "hosts");
		config_hosts(x, f[RULE_HOSTS].v, f[RULE_HOSTS].pos, idx);
		config_pop(x, old);
	}
	if (f[RULE_CIDRS].v != NULL) {
		old = config_push_key(x, "cidrs");
		config_cidrs(x, f[RULE_CIDRS].v, f[RULE_CIDRS].pos, idx);
		config_pop(x, old);
	}
	if (f[RULE_COUNTRIES].v != NULL) {
		old = config_push_key(x, "countries");
		config_countries(x, f[RULE_COUNTRIES].v,
		    f[RULE_COUNTRIES].pos, idx);
		config_pop(x, old);
	}
	if (f[RULE_ASNS].v != NULL) {
		old = config_push_key(x, "asns");
		config_asns(x, f[RULE_ASNS].v, f[RULE_ASNS].pos, idx);
		config_pop(x, old);
	}
	if (!ok)
		return;
}

/* "name", or "rule-N"; unique either way. */
static bool
config_rule_name(struct config_ctx *x, struct config_field *f, size_t pos,
    size_t index, struct policy_rule *r)
{
	const char	*s;
	char		 def[32];
	size_t		 n, npos = pos, old;
	uint32_t	*slot;
	bool		 given = f[RULE_NAME].v != NULL;

	if (given) {
		npos = f[RULE_NAME].pos;
		old = config_push_key(x, "name");
		if (!config_want(x, f[RULE_NAME].v, npos, JSON_STRING,
		    "a string")) {
			config_pop(x, old);
			return false;
		}
		s = json_string_value(f[RULE_NAME].v);
		n = json_string_length(f[RULE_NAME].v);
		if (!config_ident(s, n, CONFIG_IDENT_MAX, "._:-")) {
			config_err(x, npos, "%s is not a rule name (1-64 of "
			    "A-Z a-z 0-9 . _ : -)", config_q(x, s, n));
			config_pop(x, old);
			return false;
		}
		config_pop(x, old);
	} else {
		snprintf(def, sizeof(def), "rule-%zu", index);
		s = def;
		n = strlen(def);
	}
	if ((slot = domain_insert(&x->rule_names, s, n)) == NULL) {
		config_oom(x);
		return false;
	}
	if (*slot != POLICY_NONE) {
		if (given) {
			old = config_push_key(x, "name");
			config_err(x, npos, "rule name %s is already used by "
			    "policy.rules[%u]", config_q(x, s, n), *slot);
			config_pop(x, old);
		} else
			config_err(x, pos, "this rule's default name %s is "
			    "already used by policy.rules[%u]: give this "
			    "rule a \"name\"", config_q(x, s, n), *slot);
		return false;
	}
	*slot = (uint32_t)index;
	return (r->name = config_strdup(x, s)) != NULL;
}

static int
config_range_cmp(const void *a, const void *b)
{
	const struct policy_port_range	*x = a, *y = b;

	return (int)x->lo - (int)y->lo;
}

static bool
config_ports(struct config_ctx *x, json_t *v, size_t pos,
    struct policy_rule *r)
{
	struct policy_port_range	*pr;
	const char			*s, *dash;
	json_t				*e;
	size_t				 n, i, k = 0, m, ci, old, len;
	uint16_t			 lo, hi;
	long long			 num;
	bool				 all = false, ok = true;

	if (!config_array(x, v, pos, "port, \"LOW-HIGH\" range or \"*\""))
		return false;
	n = json_array_size(v);
	if ((pr = calloc(n, sizeof(*pr))) == NULL) {
		config_oom(x);
		return false;
	}
	for (i = 0, ci = pos + 1; i < n; i++, ci = jsonpos_next(x->jp, ci)) {
		e = json_array_get(v, i);
		old = config_push_index(x, i);
		if (json_is_integer(e)) {
			num = json_integer_value(e);
			if (num < 1 || num > 65535) {
				config_err(x, ci, "%lld is not a port "
				    "(1-65535)", num);
				ok = false;
			} else {
				pr[k].lo = pr[k].hi = (uint16_t)num;
				k++;
			}
		} else if (json_is_string(e)) {
			s = json_string_value(e);
			len = json_string_length(e);
			dash = memchr(s, '-', len);
			if (len == 1 && s[0] == '*')
				all = true;
			else if (dash == NULL ||
			    host_port_parse(s, (size_t)(dash - s), &lo) == -1 ||
			    host_port_parse(dash + 1,
			    len - (size_t)(dash + 1 - s), &hi) == -1) {
				config_err(x, ci, "%s is not a port: write an "
				    "integer (1-65535), a range \"LOW-HIGH\" "
				    "or \"*\"", config_q(x, s, len));
				ok = false;
			} else if (lo > hi) {
				config_err(x, ci, "range %s is backwards "
				    "(write \"%u-%u\")", config_q(x, s, len),
				    hi, lo);
				ok = false;
			} else {
				pr[k].lo = lo;
				pr[k].hi = hi;
				k++;
			}
		} else {
			config_err(x, ci, "expected a port (integer), a range "
			    "\"LOW-HIGH\" or \"*\", got %s",
			    config_typename(e));
			ok = false;
		}
		config_pop(x, old);
	}
	if (!ok || all) {
		free(pr);
		r->nports = 0;	/* all ports */
		return ok;
	}
	qsort(pr, k, sizeof(*pr), config_range_cmp);
	for (i = 1, m = 0; i < k; i++) {
		if ((unsigned)pr[i].lo <= (unsigned)pr[m].hi + 1) {
			if (pr[i].hi > pr[m].hi)
				pr[m].hi = pr[i].hi;
		} else
			pr[++m] = pr[i];
	}
	r->ports = pr;
	r->nports = (uint16_t)(m + 1);
	r->own_ports = 1;
	return true;
}

static bool
config_methods(struct config_ctx *x, json_t *v, size_t pos,
    struct policy_rule *r)
{
	json_t		*e;
	const char	*s;
	char		*m;
	size_t		 n, i, j, ci, old, len;
	bool		 ok = true;

	if (!config_array(x, v, pos, "method"))
		return false;
	n = json_array_size(v);
	if ((r->methods = calloc(n, sizeof(*r->methods))) == NULL) {
		config_oom(x);
		return false;
	}
	for (i = 0, ci = pos + 1; i < n; i++, ci = jsonpos_next(x->jp, ci)) {
		e = json_array_get(v, i);
		old = config_push_index(x, i);
		if (!config_want(x, e, ci, JSON_STRING, "a method (string)")) {
			ok = false;
			config_pop(x, old);
			continue;
		}
		s = json_string_value(e);
		len = json_string_length(e);
		for (j = 0; j < len; j++)
			if (!host_is_tchar((unsigned char)s[j]))
				break;
		if (len == 0 || len > CONFIG_METHOD_MAX || j < len) {
			config_err(x, ci, "%s is not an HTTP method token",
			    config_q(x, s, len));
			ok = false;
		} else if ((m = config_strdup(x, s)) == NULL)
			ok = false;
		else {
			for (j = 0; j < len; j++)
				if (m[j] >= 'a' && m[j] <= 'z')
					m[j] = (char)(m[j] - 'a' + 'A');
			r->methods[r->nmethods++] = m;
		}
		config_pop(x, old);
	}
	return ok;
}

/*
 * "strict_methods": a boolean, and true only on a rule with "methods"
 * (what it guards).
 */
static bool
config_strict_methods(struct config_ctx *x, const struct config_field *f,
    bool methods, struct policy_rule *r)
{
	if (!json_is_boolean(f->v)) {
		config_err(x, f->pos, "expected a boolean, got %s",
		    config_typename(f->v));
		return false;
	}
	if (!json_is_true(f->v))
		return true;
	if (!methods) {
		config_err(x, f->pos, "\"strict_methods\" guards a rule's "
		    "\"methods\", and rule %s has none", r->name);
		return false;
	}
	r->strict_methods = 1;
	return true;
}

/*
 * A deny rule also keeps the wide form of each pattern (path_wide()), in
 * r->wpaths beside r->paths.  Returns 0, or -1 with *err set.
 */
static int
config_wide_path(struct policy_rule *r, const char *out, size_t olen,
    const char **err)
{
	char	*wide;
	size_t	 wlen;
	bool	 hidden;

	if (r->action != POLICY_DENY)
		return 0;
	if ((wide = malloc(olen + 1)) == NULL) {
		*err = "out of memory";
		return -1;
	}
	if (path_wide(out, olen, wide, &wlen, &hidden, err) == -1) {
		free(wide);
		return -1;
	}
	r->wpaths[r->npaths] = wide;
	return 0;
}

/*
 * "protocols": what the rule's tunnels may carry, judged on their first
 * bytes: "tls", "http", "ssh", or "any" (the default when absent).
 */
static bool
config_protocols(struct config_ctx *x, json_t *v, size_t pos,
    struct policy_rule *r)
{
	json_t		*e;
	const char	*s;
	size_t		 n, i, ci, old;
	bool		 ok = true, any = false;
	int		 bit;

	if (!config_array(x, v, pos, "protocol"))
		return false;
	n = json_array_size(v);
	for (i = 0, ci = pos + 1; i < n; i++, ci = jsonpos_next(x->jp, ci)) {
		e = json_array_get(v, i);
		old = config_push_index(x, i);
		if (!config_want(x, e, ci, JSON_STRING, "a protocol (string)")) {
			ok = false;
			config_pop(x, old);
			continue;
		}
		s = json_string_value(e);
		if (strcmp(s, "any") == 0)
			any = true;
		else if ((bit = policy_proto_bit(s)) != 0)
			r->protocols |= (uint8_t)bit;
		else {
			config_err(x, ci, "%s is not a protocol: \"tls\", "
			    "\"http\", \"ssh\" or \"any\"",
			    config_q(x, s, json_string_length(e)));
			ok = false;
		}
		config_pop(x, old);
	}
	if (any)
		r->protocols = 0;
	return ok;
}

static bool
config_paths(struct config_ctx *x, json_t *v, size_t pos,
    struct policy_rule *r)
{
	json_t		*e;
	const char	*s, *err;
	char		*out;
	size_t		 n, i, ci, old, len, olen;
	bool		 ok = true;

	if (!config_array(x, v, pos, "path"))
		return false;
	n = json_array_size(v);
	if ((r->paths = calloc(n, sizeof(*r->paths))) == NULL ||
	    (r->action == POLICY_DENY &&
	    (r->wpaths = calloc(n, sizeof(*r->wpaths))) == NULL)) {
		config_oom(x);
		return false;
	}
	for (i = 0, ci = pos + 1; i < n; i++, ci = jsonpos_next(x->jp, ci)) {
		e = json_array_get(v, i);
		old = config_push_index(x, i);
		if (!config_want(x, e, ci, JSON_STRING, "a path (string)")) {
			ok = false;
			config_pop(x, old);
			continue;
		}
		s = json_string_value(e);
		len = json_string_length(e);
		if ((out = malloc(len + 1)) == NULL) {
			config_oom(x);
			ok = false;
		} else if (memchr(s, '\0', len) != NULL ||
		    path_normalise(s, len, true, out, &olen, &err) == -1) {
			config_err(x, ci, "%s: %s", config_q(x, s, len),
			    memchr(s, '\0', len) != NULL ? "NUL in path" :
			    err);
			free(out);
			ok = false;
		} else if (config_wide_path(r, out, olen, &err) == -1) {
			config_err(x, ci, "%s: %s", config_q(x, s, len), err);
			free(out);
			ok = false;
		} else
			r->paths[r->npaths++] = out;
		config_pop(x, old);
	}
	return ok;
}

enum { RATE_REQUESTS = 0, RATE_PER_SECONDS, RATE__COUNT };

static bool
config_rate(struct config_ctx *x, json_t *v, size_t pos,
    struct policy_rule *r)
{
	struct config_field	f[RATE__COUNT] = {
		[RATE_REQUESTS] = { "requests", NULL, 0 },
		[RATE_PER_SECONDS] = { "per_seconds", NULL, 0 },
	};
	long long		n[RATE__COUNT] = { 0, 0 };
	size_t			old;
	int			i;
	bool			ok = true;

	if (!config_fields(x, v, pos, f, RATE__COUNT))
		return false;
	for (i = 0; i < RATE__COUNT; i++) {
		if (f[i].v == NULL) {
			config_err(x, pos, "missing \"%s\" (a rate is "
			    "{\"requests\": N, \"per_seconds\": S})",
			    f[i].key);
			ok = false;
			continue;
		}
		old = config_push_key(x, f[i].key);
		ok &= config_number(x, f[i].v, f[i].pos,
		    config_default("rate", f[i].key), &n[i]);
		config_pop(x, old);
	}
	if (ok) {
		r->rate_requests = (unsigned)n[RATE_REQUESTS];
		r->rate_per_seconds = (unsigned)n[RATE_PER_SECONDS];
	}
	return ok;
}

/* ------------------------------------------------------------------ */
/* inject, plain_http, git                                              */
/* ------------------------------------------------------------------ */

/*
 * The keys that hand a rule secrets or make it look inside requests:
 * "inject", "plain_http" and "git" of the rule's fields f.  A deny rule
 * may have none of them.
 */
static bool
config_rule_secrets(struct config_ctx *x, struct config_field *f,
    bool deny, struct policy_rule *r)
{
	static const int	keys[] = { RULE_INJECT, RULE_PLAIN_HTTP,
				    RULE_GIT };
	struct config_field	*g = &f[RULE_GIT];
	const char		*s;
	size_t			 old, i;
	bool			 ok = true;

	for (i = 0; deny && i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (f[keys[i]].v == NULL)
			continue;
		old = config_push_key(x, f[keys[i]].key);
		config_err(x, f[keys[i]].pos, "a deny rule cannot have "
		    "\"%s\": only an allow rule %s", f[keys[i]].key,
		    keys[i] == RULE_GIT ? "opens git fetch" : "sends secrets");
		config_pop(x, old);
		f[keys[i]].v = NULL;
		ok = false;
	}
	if (f[RULE_INJECT].v != NULL) {
		r->given |= POLICY_GIVEN_INJECT;
		old = config_push_key(x, "inject");
		ok &= config_injects(x, f[RULE_INJECT].v, f[RULE_INJECT].pos,
		    r);
		config_pop(x, old);
	}
	if (f[RULE_PLAIN_HTTP].v != NULL) {
		old = config_push_key(x, "plain_http");
		if (!json_is_boolean(f[RULE_PLAIN_HTTP].v)) {
			config_err(x, f[RULE_PLAIN_HTTP].pos, "expected a "
			    "boolean, got %s",
			    config_typename(f[RULE_PLAIN_HTTP].v));
			ok = false;
		} else if (json_is_true(f[RULE_PLAIN_HTTP].v)) {
			r->plain_http = 1;
			if (f[RULE_INJECT].v == NULL)
				config_warn(x, f[RULE_PLAIN_HTTP].pos, "rule "
				    "%s injects nothing: \"plain_http\" has no "
				    "effect", r->name);
		}
		config_pop(x, old);
	}
	if (g->v != NULL) {
		r->given |= POLICY_GIVEN_GIT;
		old = config_push_key(x, "git");
		s = json_is_string(g->v) ? json_string_value(g->v) : NULL;
		if (s != NULL && strcmp(s, "read-only") == 0)
			r->git = POLICY_GIT_READ_ONLY;
		else {
			config_err(x, g->pos, "expected \"read-only\" (the "
			    "only git preset: fetch and clone, no push), got "
			    "%s", s != NULL ? config_q(x, s,
			    json_string_length(g->v)) : config_typename(g->v));
			ok = false;
		}
		config_pop(x, old);
	}
	/* By the keys, not their valid parts: the checks that follow
	 * (CA, intercept) then say all there is to say in one pass. */
	if ((r->given & (POLICY_GIVEN_INJECT | POLICY_GIVEN_GIT)) != 0)
		r->flags |= POLICY_F_INSPECT;
	return ok;
}

static bool
config_injects(struct config_ctx *x, json_t *v, size_t pos,
    struct policy_rule *r)
{
	size_t	n, i, ci, old;
	bool	ok = true;

	if (!config_array(x, v, pos, "injection ({\"header\": NAME, "
	    "\"value\": TEMPLATE}, {\"basic\": {...}} or {\"placeholders\": "
	    "[...]})"))
		return false;
	n = json_array_size(v);
	if ((r->injects = calloc(n, sizeof(*r->injects))) == NULL) {
		config_oom(x);
		return false;
	}
	for (i = 0, ci = pos + 1; i < n; i++, ci = jsonpos_next(x->jp, ci)) {
		old = config_push_index(x, i);
		if (config_inject(x, json_array_get(v, i), ci, r,
		    &r->injects[r->ninjects]))
			r->ninjects++;
		else
			ok = false;
		config_pop(x, old);
	}
	return ok;
}

enum {
	INJ_HEADER = 0, INJ_VALUE, INJ_BASIC, INJ_PLACEHOLDERS, INJ_ENCODE,
	INJ_BODY, INJ__COUNT
};

/* One entry of "inject".  On failure *in is left empty. */
static bool
config_inject(struct config_ctx *x, json_t *v, size_t pos,
    struct policy_rule *r, struct policy_inject *in)
{
	struct config_field	f[INJ__COUNT] = {
		[INJ_HEADER] = { "header", NULL, 0 },
		[INJ_VALUE] = { "value", NULL, 0 },
		[INJ_BASIC] = { "basic", NULL, 0 },
		[INJ_PLACEHOLDERS] = { "placeholders", NULL, 0 },
		[INJ_ENCODE] = { "encode", NULL, 0 },
		[INJ_BODY] = { "body", NULL, 0 },
	};
	size_t			old, kpos = pos;
	int			kinds;
	bool			ok;

	memset(in, 0, sizeof(*in));
	in->line = (int)x->jp->v[pos].vline;
	in->column = (int)x->jp->v[pos].vcol;
	if (!config_fields(x, v, pos, f, INJ__COUNT))
		return false;
	kinds = (f[INJ_HEADER].v != NULL || f[INJ_VALUE].v != NULL) +
	    (f[INJ_BASIC].v != NULL) + (f[INJ_PLACEHOLDERS].v != NULL);
	if (kinds != 1) {
		config_err(x, pos, "give exactly one of {\"header\": NAME, "
		    "\"value\": TEMPLATE}, {\"basic\": {\"user\": TEMPLATE, "
		    "\"password\": TEMPLATE}} and {\"placeholders\": "
		    "[SECRET, ...]}");
		return false;
	}
	if (f[INJ_PLACEHOLDERS].v == NULL) {
		if (f[INJ_ENCODE].v != NULL)
			config_err(x, f[INJ_ENCODE].pos, "\"encode\" goes with "
			    "{\"placeholders\": [...]} only");
		if (f[INJ_BODY].v != NULL)
			config_err(x, f[INJ_BODY].pos, "\"body\" goes with "
			    "{\"placeholders\": [...]} only");
		if (f[INJ_ENCODE].v != NULL || f[INJ_BODY].v != NULL)
			return false;
	}
	if (f[INJ_BASIC].v != NULL) {
		kpos = f[INJ_BASIC].pos;
		old = config_push_key(x, "basic");
		ok = config_inject_basic(x, f[INJ_BASIC].v, kpos, r, in);
		config_pop(x, old);
	} else if (f[INJ_PLACEHOLDERS].v != NULL) {
		old = config_push_key(x, "placeholders");
		ok = config_inject_placeholders(x, f[INJ_PLACEHOLDERS].v,
		    f[INJ_PLACEHOLDERS].pos, r, in);
		config_pop(x, old);
		ok &= config_inject_options(x, f, in);
	} else {
		if (f[INJ_HEADER].v == NULL)
			config_err(x, pos, "missing \"header\" (the field "
			    "\"value\" is for, such as \"Authorization\")");
		if (f[INJ_VALUE].v == NULL)
			config_err(x, pos, "missing \"value\" (a template such "
			    "as \"Bearer ${API_KEY}\")");
		if (f[INJ_HEADER].v == NULL || f[INJ_VALUE].v == NULL)
			return false;
		kpos = f[INJ_HEADER].pos;
		ok = config_inject_header(x, f, r, in);
	}
	if (ok && in->header != NULL) {
		old = config_push_key(x, in->kind == POLICY_INJECT_BASIC ?
		    "basic" : "header");
		ok = config_inject_unique(x, kpos, r, in);
		config_pop(x, old);
	}
	if (!ok)
		inject_clear(in);
	return ok;
}

/* {"header": NAME, "value": TEMPLATE} */
static bool
config_inject_header(struct config_ctx *x, const struct config_field *f,
    struct policy_rule *r, struct policy_inject *in)
{
	json_t		*h = f[INJ_HEADER].v;
	const char	*s, *why;
	size_t		 n, i, old, nrefs;
	bool		 ok = false;

	in->kind = POLICY_INJECT_HEADER;
	old = config_push_key(x, "header");
	if (config_want(x, h, f[INJ_HEADER].pos, JSON_STRING,
	    "a header field name (string)")) {
		s = json_string_value(h);
		n = json_string_length(h);
		for (i = 0; i < n && host_is_tchar((unsigned char)s[i]); i++)
			;
		if (n == 0 || n > CONFIG_HEADER_MAX || i < n)
			config_err(x, f[INJ_HEADER].pos, "%s is not a header "
			    "field name (an HTTP token such as "
			    "\"Authorization\")", config_q(x, s, n));
		else if ((why = inject_header_refused(s, n)) != NULL)
			config_err(x, f[INJ_HEADER].pos, "%s cannot be "
			    "injected: %s", config_q(x, s, n), why);
		else
			ok = (in->header = config_strdup(x, s)) != NULL;
	}
	config_pop(x, old);
	old = config_push_key(x, "value");
	if (config_template(x, f[INJ_VALUE].v, f[INJ_VALUE].pos,
	    CONFIG_TPL_VALUE, r, &in->value, &nrefs) && nrefs == 0) {
		config_err(x, f[INJ_VALUE].pos, "no ${SECRET} in the value: "
		    "an injection puts a secret into the request (write, "
		    "e.g., \"Bearer ${API_KEY}\"; \"$$\" is a literal \"$\")");
		ok = false;
	} else if (in->value.parts == NULL)
		ok = false;
	config_pop(x, old);
	return ok;
}

enum { BAS_USER = 0, BAS_PASSWORD, BAS__COUNT };

/* {"basic": {"user": TEMPLATE, "password": TEMPLATE}} */
static bool
config_inject_basic(struct config_ctx *x, json_t *v, size_t pos,
    struct policy_rule *r, struct policy_inject *in)
{
	struct config_field	 f[BAS__COUNT] = {
		[BAS_USER] = { "user", NULL, 0 },
		[BAS_PASSWORD] = { "password", NULL, 0 },
	};
	struct policy_template	*t[BAS__COUNT] = { &in->user, &in->password };
	size_t			 old, nrefs[BAS__COUNT] = { 0, 0 };
	int			 i;
	bool			 ok = true;

	in->kind = POLICY_INJECT_BASIC;
	if (!config_fields(x, v, pos, f, BAS__COUNT))
		return false;
	for (i = 0; i < BAS__COUNT; i++) {
		if (f[i].v == NULL) {
			config_err(x, pos, "missing \"%s\" (basic is "
			    "{\"user\": TEMPLATE, \"password\": TEMPLATE})",
			    f[i].key);
			ok = false;
			continue;
		}
		old = config_push_key(x, f[i].key);
		ok &= config_template(x, f[i].v, f[i].pos, i == BAS_USER ?
		    CONFIG_TPL_USER : CONFIG_TPL_PASSWORD, r, t[i], &nrefs[i]);
		config_pop(x, old);
	}
	if (ok && nrefs[BAS_USER] + nrefs[BAS_PASSWORD] == 0) {
		config_err(x, pos, "no ${SECRET} in user or password: an "
		    "injection puts a secret into the request (write, e.g., "
		    "\"password\": \"${GITHUB_TOKEN}\")");
		ok = false;
	}
	if (ok && (in->header = config_strdup(x, "Authorization")) == NULL)
		ok = false;
	return ok;
}

/* {"placeholders": [SECRET, ...]} */
static bool
config_inject_placeholders(struct config_ctx *x, json_t *v, size_t pos,
    struct policy_rule *r, struct policy_inject *in)
{
	size_t		*idx, n, i, j, ci, old, k;
	json_t		*e;
	bool		 ok = true;

	in->kind = POLICY_INJECT_PLACEHOLDERS;
	if (!config_array(x, v, pos, "secret name"))
		return false;
	n = json_array_size(v);
	if ((idx = calloc(n, sizeof(*idx))) == NULL) {
		config_oom(x);
		return false;
	}
	in->secrets = idx;
	for (i = 0, ci = pos + 1; i < n; i++, ci = jsonpos_next(x->jp, ci)) {
		e = json_array_get(v, i);
		old = config_push_index(x, i);
		if (!config_want(x, e, ci, JSON_STRING, "a secret name "
		    "(string)"))
			ok = false;
		else if ((k = config_secret(x, json_string_value(e),
		    json_string_length(e), ci, SIZE_MAX)) == POLICY_TPL_LITERAL)
			ok = false;
		else {
			for (j = 0; j < in->nsecrets && idx[j] != k; j++)
				;
			if (j < in->nsecrets) {
				config_err(x, ci, "secret %s is listed twice",
				    x->c->secrets[k].name);
				ok = false;
			} else if (!config_rule_uses(x, r, k))
				ok = false;
			else
				idx[in->nsecrets++] = k;
		}
		config_pop(x, old);
	}
	return ok;
}

/*
 * "encode": "percent" (placeholders in the request target become the
 * percent-encoded value) and "body": true (placeholders in the body are
 * replaced too), on a placeholders entry.
 */
static bool
config_inject_options(struct config_ctx *x, const struct config_field *f,
    struct policy_inject *in)
{
	json_t		*e = f[INJ_ENCODE].v, *b = f[INJ_BODY].v;
	size_t		 old;
	bool		 ok = true;

	if (e != NULL) {
		old = config_push_key(x, "encode");
		if (!json_is_string(e) ||
		    strcmp(json_string_value(e), "percent") != 0) {
			config_err(x, f[INJ_ENCODE].pos, "expected \"percent\" "
			    "(the only encoding), got %s", json_is_string(e) ?
			    config_q(x, json_string_value(e),
			    json_string_length(e)) : config_typename(e));
			ok = false;
		} else
			in->encode = POLICY_ENCODE_PERCENT;
		config_pop(x, old);
	}
	if (b != NULL) {
		old = config_push_key(x, "body");
		if (!json_is_boolean(b)) {
			config_err(x, f[INJ_BODY].pos, "expected a boolean, "
			    "got %s", config_typename(b));
			ok = false;
		} else
			in->body = json_is_true(b);
		config_pop(x, old);
	}
	return ok;
}

/* No two injections of a rule set the same header. */
static bool
config_inject_unique(struct config_ctx *x, size_t pos,
    const struct policy_rule *r, const struct policy_inject *in)
{
	const struct policy_inject	*o;
	size_t				 i;

	for (i = 0; &r->injects[i] != in; i++) {
		o = &r->injects[i];
		if (o->header == NULL || strcasecmp(o->header, in->header) != 0)
			continue;
		config_err(x, pos, "%s is already set by an earlier injection "
		    "of this rule (line %d)%s", config_q(x, in->header,
		    strlen(in->header)), o->line, o->kind ==
		    POLICY_INJECT_BASIC || in->kind == POLICY_INJECT_BASIC ?
		    " (\"basic\" sets Authorization)" : "");
		return false;
	}
	return true;
}

/*
 * Appends a part: a copy of text (len bytes) if secret is
 * POLICY_TPL_LITERAL, else the secret.  Returns false if memory ran out.
 */
static bool
config_tpl_push(struct policy_tpl_part **parts, size_t *n, size_t *cap,
    const char *text, size_t len, size_t secret)
{
	struct policy_tpl_part	*np;
	char			*copy = NULL;

	if (*n == *cap) {
		size_t	ncap = *cap ? *cap * 2 : 4;

		if ((np = reallocarray(*parts, ncap, sizeof(*np))) == NULL)
			return false;
		*parts = np;
		*cap = ncap;
	}
	if (secret == POLICY_TPL_LITERAL) {
		if ((copy = malloc(len + 1)) == NULL)
			return false;
		memcpy(copy, text, len);
		copy[len] = '\0';
	}
	(*parts)[*n].text = copy;
	(*parts)[*n].len = copy != NULL ? len : 0;
	(*parts)[*n].secret = secret;
	(*n)++;
	return true;
}

/*
 * A template: text with ${SECRET} references, "$$" for a literal "$".
 * Every problem is reported at the column of the byte that causes it.
 * Fills *t (empty on failure) and counts the references in *nrefs; each
 * secret joins the rule's list.
 */
static bool
config_template(struct config_ctx *x, json_t *v, size_t pos,
    enum config_tpl kind, struct policy_rule *r, struct policy_template *t,
    size_t *nrefs)
{
	struct policy_template	 tmp = { NULL, 0 };
	struct policy_tpl_part	*parts = NULL;
	const char		*s, *name, *close;
	char			*lit;
	size_t			 n, i, nl = 0, np = 0, cap = 0, k, nlen;
	unsigned char		 c;
	bool			 ok = true, oom = false;

	*nrefs = 0;
	memset(t, 0, sizeof(*t));
	if (!config_want(x, v, pos, JSON_STRING, "a template (string)"))
		return false;
	s = json_string_value(v);
	n = json_string_length(v);
	if ((lit = malloc(n + 1)) == NULL) {
		config_oom(x);
		return false;
	}
	for (i = 0; i < n && !oom; ) {
		c = (unsigned char)s[i];
		if (c == '$' && i + 1 < n && s[i + 1] == '$') {
			lit[nl++] = '$';
			i += 2;
			continue;
		}
		if (c == '$' && i + 1 < n && s[i + 1] == '{') {
			name = s + i + 2;
			if ((close = memchr(name, '}', n - i - 2)) == NULL) {
				config_err_in(x, pos, i, "\"${\" is not closed "
				    "by \"}\"");
				ok = false;
				break;
			}
			nlen = (size_t)(close - name);
			if (!config_ident(name, nlen, CONFIG_SECRET_MAX, "_") ||
			    (name[0] >= '0' && name[0] <= '9')) {
				config_err_in(x, pos, i, "%s is not a secret "
				    "reference: a secret name is "
				    "[A-Za-z_][A-Za-z0-9_]{0,63}",
				    config_q(x, s + i, nlen + 3));
				ok = false;
			} else if ((k = config_secret(x, name, nlen, pos, i)) ==
			    POLICY_TPL_LITERAL)
				ok = false;
			else {
				(*nrefs)++;
				if (!config_rule_uses(x, r, k) || (nl > 0 &&
				    !config_tpl_push(&parts, &np, &cap, lit, nl,
				    POLICY_TPL_LITERAL)) ||
				    !config_tpl_push(&parts, &np, &cap, NULL, 0,
				    k))
					oom = true;
				nl = 0;
			}
			i += nlen + 3;
			continue;
		}
		if (c == '$') {
			config_err_in(x, pos, i, "\"$\" must start a secret "
			    "reference ${SECRET} or be doubled (\"$$\" is a "
			    "literal \"$\")");
			ok = false;
		} else if ((c < 0x20 && c != '\t') || c == 0x7f) {
			config_err_in(x, pos, i, "control byte \\x%02x in a "
			    "template (HTTP field values cannot carry one)", c);
			ok = false;
		} else if (kind == CONFIG_TPL_USER && c == ':') {
			config_err_in(x, pos, i, "\":\" in a Basic user: it "
			    "separates user from password");
			ok = false;
		} else
			lit[nl++] = (char)c;
		i++;
	}
	if (kind == CONFIG_TPL_VALUE && n > 0 && (s[0] == ' ' ||
	    s[0] == '\t')) {
		config_err_in(x, pos, 0, "a header value cannot start with a "
		    "space or tab (HTTP strips it)");
		ok = false;
	}
	if (kind == CONFIG_TPL_VALUE && n > 1 && (s[n - 1] == ' ' ||
	    s[n - 1] == '\t')) {
		config_err_in(x, pos, n - 1, "a header value cannot end with a "
		    "space or tab (HTTP strips it)");
		ok = false;
	}
	if (ok && !oom && nl > 0 && !config_tpl_push(&parts, &np, &cap, lit,
	    nl, POLICY_TPL_LITERAL))
		oom = true;
	free(lit);
	tmp.parts = parts;
	tmp.nparts = np;
	if (oom)
		config_oom(x);
	if (!ok || oom) {
		inject_template_clear(&tmp);
		return false;
	}
	/* An empty template ("") still has a place to point at. */
	if (np == 0 && !config_tpl_push(&parts, &np, &cap, "", 0,
	    POLICY_TPL_LITERAL)) {
		config_oom(x);
		tmp.parts = parts;
		inject_template_clear(&tmp);
		return false;
	}
	t->parts = parts;
	t->nparts = np;
	return true;
}

/*
 * The index of the secret called name (n bytes), or POLICY_TPL_LITERAL
 * after reporting that none is (at byte off of the string at pos, or at
 * the string itself when off is SIZE_MAX).  A name declared in "secrets"
 * but refused there was reported there, and is not reported again.
 */
static size_t
config_secret(struct config_ctx *x, const char *name, size_t n, size_t pos,
    size_t off)
{
	const struct moat_config	*c = x->c;
	char				 nm[CONFIG_SECRET_MAX + 1];
	size_t				 i;

	for (i = 0; i < c->nsecrets; i++)
		if (strlen(c->secrets[i].name) == n &&
		    memcmp(c->secrets[i].name, name, n) == 0)
			return i;
	if (n <= CONFIG_SECRET_MAX && memchr(name, '\0', n) == NULL) {
		memcpy(nm, name, n);
		nm[n] = '\0';
		if (json_is_object(x->secrets_json) &&
		    json_object_get(x->secrets_json, nm) != NULL)
			return POLICY_TPL_LITERAL;
	}
	if (off == SIZE_MAX)
		config_err(x, pos, "%s names no secret: declare it in "
		    "\"secrets\"", config_q(x, name, n));
	else
		config_err_in(x, pos, off, "${%.*s} names no secret: declare "
		    "it in \"secrets\"", (int)n, name);
	return POLICY_TPL_LITERAL;
}

/* Adds secret to the rule's list (once) and marks it used. */
static bool
config_rule_uses(struct config_ctx *x, struct policy_rule *r, size_t secret)
{
	size_t	*nv;

	if (x->secret_used != NULL && secret < x->c->nsecrets)
		x->secret_used[secret] = true;
	if (inject_rule_has(r, secret))
		return true;
	if ((nv = reallocarray(r->secrets, r->nsecrets + 1,
	    sizeof(*nv))) == NULL) {
		config_oom(x);
		return false;
	}
	r->secrets = nv;
	r->secrets[r->nsecrets++] = secret;
	return true;
}

static void
config_hosts(struct config_ctx *x, json_t *v, size_t pos, uint32_t rule)
{
	size_t	i, ci, old;

	if (!config_array(x, v, pos, "host"))
		return;
	for (i = 0, ci = pos + 1; i < json_array_size(v);
	    i++, ci = jsonpos_next(x->jp, ci)) {
		old = config_push_index(x, i);
		config_host(x, json_array_get(v, i), ci, rule);
		config_pop(x, old);
	}
}

static void
config_host(struct config_ctx *x, json_t *v, size_t pos, uint32_t rule)
{
	const struct policy_rule	*r = &x->p->rules[rule];
	struct policy_host		 h;
	struct addr_cidr		 c;
	const char			*s, *err = NULL, *what;
	size_t				 n;
	bool				 wild;
	int				 rc;
	enum policy_reason		 dr;

	if (!config_want(x, v, pos, JSON_STRING, "a host (string)"))
		return;
	s = json_string_value(v);
	n = json_string_length(v);
	if (n == 1 && s[0] == '*') {
		if (policy_add_star(x->p, rule) == -1)
			config_oom(x);
		else if (r->nsecrets > 0)
			config_warn(x, pos, "rule %s injects secrets into "
			    "every host (\"*\"): any name the sandbox asks "
			    "for receives them", r->name);
		return;
	}
	wild = n >= 2 && s[0] == '*' && s[1] == '.';
	if (memchr(wild ? s + 1 : s, '*', wild ? n - 1 : n) != NULL) {
		config_err(x, pos, "%s: \"*\" is allowed only as the whole "
		    "host (\"*\") or as the first label (\"*.example.com\")",
		    config_q(x, s, n));
		return;
	}
	if (policy_host_normalise(wild ? s + 2 : s, wild ? n - 2 : n, &h,
	    &err) == -1) {
		config_err(x, pos, "%s is not a valid host: %s",
		    config_q(x, s, n), err);
		return;
	}
	if (wild && h.kind == POLICY_HOST_ADDR) {
		config_err(x, pos, "%s: a wildcard needs a name after "
		    "\"*.\", not an address", config_q(x, s, n));
		return;
	}
	if (h.kind == POLICY_HOST_ADDR) {
		c.addr = h.addr;
		c.plen = addr_bits(h.addr.family);
		if (policy_add_cidr(x->p, rule, &c) == -1)
			config_oom(x);
		else if (r->action == POLICY_ALLOW)
			config_warn_denied(x, pos, r, &c);
		return;
	}
	rc = wild ? policy_add_suffix(x->p, rule, h.name) :
	    policy_add_name(x->p, rule, h.name);
	if (rc == -1) {
		config_oom(x);
		return;
	}
	if (r->action == POLICY_ALLOW &&
	    (dr = deny_name(h.name)) != POLICY_R_ALLOWED) {
		what = dr == POLICY_R_METADATA ? "a cloud metadata name" :
		    "a loopback name";
		config_warn(x, pos, "rule %s allows %s%s, %s: moat always "
		    "denies it", r->name, wild ? "*." : "", h.name, what);
	}
}

static void
config_cidrs(struct config_ctx *x, json_t *v, size_t pos, uint32_t rule)
{
	struct addr_cidr	c;
	size_t			i, ci, old;

	if (!config_array(x, v, pos, "CIDR"))
		return;
	for (i = 0, ci = pos + 1; i < json_array_size(v);
	    i++, ci = jsonpos_next(x->jp, ci)) {
		old = config_push_index(x, i);
		if (config_cidr(x, json_array_get(v, i), ci, &c)) {
			if (policy_add_cidr(x->p, rule, &c) == -1)
				config_oom(x);
			else if (x->p->rules[rule].action == POLICY_ALLOW)
				config_warn_denied(x, ci, &x->p->rules[rule],
				    &c);
		}
		config_pop(x, old);
	}
}

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

static void
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

static void
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

/* An allow rule opening what a built-in set keeps shut says so. */
static void
config_warn_denied(struct config_ctx *x, size_t pos,
    const struct policy_rule *r, const struct addr_cidr *c)
{
	char			buf[ADDR_TEXT_MAX];
	bool			lifted;
	enum policy_reason	reason;

	if (!deny_cidr_inside(x->p, c, &lifted, &reason) || lifted)
		return;
	addr_cidr_format(c, buf, sizeof(buf));
	if (reason == POLICY_R_METADATA)
		config_warn(x, pos, "rule %s allows %s, a cloud metadata "
		    "address: moat denies it unless policy.allow_private "
		    "lists exactly that address", r->name, buf);
	else
		config_warn(x, pos, "rule %s allows %s, a built-in denied "
		    "range: add it to policy.allow_private to open it",
		    r->name, buf);
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

static void
config_audit(struct config_ctx *x, json_t *v, size_t pos)
{
	struct config_field	 f[2] = { { "path", NULL, 0 },
				    { "on_failure", NULL, 0 } };
	const char		*s;
	size_t			 old;

	if (!config_fields(x, v, pos, f, 2))
		return;
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
	TLS__COUNT
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
			l.address = NULL;
		}
		free(l.address);
		free(l.path);
		config_pop(x, old);
	}
	if (f[ADM_MODE].v != NULL) {
		old = config_push_key(x, "mode");
		(void)config_mode(x, f[ADM_MODE].v, f[ADM_MODE].pos,
		    &x->c->admin_mode);
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
	if (strncmp(je->text, "duplicate object key", 20) == 0 &&
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
	near = strstr(je->text, "near '");
	if (strncmp(je->text, "duplicate object key", 20) == 0 &&
	    near != NULL && (end = strrchr(near, '\'')) > near + 6)
		diag_add(d, POLICY_DIAG_ERROR, line, col, "duplicate key "
		    "%.*s: a key may appear only once in an object",
		    (int)(end - near - 6), near + 6);
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

	for (i = 0; i < CONFIG_NDEFAULTS; i++) {
		d = &config_defaults[i];
		if (d->off == CONFIG_NOOFF)
			continue;
		if (d->type == CONFIG_T_UINT)
			*(unsigned *)((char *)c + d->off) = (unsigned)d->def;
		else if (d->type == CONFIG_T_SIZE)
			*(size_t *)((char *)c + d->off) = (size_t)d->def;
	}
	c->admin_mode = (int)config_default("admin", "mode")->def;
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
	struct config_ctx	 x;
	struct jsonpos		 jp;
	struct moat_config	*c = NULL;
	json_t			*root = NULL;
	json_error_t		 je;
	const char		*nul;
	size_t			 nerr0 = diags->nerrors, first = diags->n;
	int			 line, col;

	memset(&x, 0, sizeof(x));
	memset(&jp, 0, sizeof(jp));
	free(diags->file);
	if ((diags->file = strdup(name != NULL ? name : "config")) == NULL)
		goto oom;
	if (buf == NULL)
		len = 0;
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
	root = json_loadb(buf != NULL ? buf : "", len, JSON_REJECT_DUPLICATES,
	    &je);
	if (root == NULL) {
		config_syntax(diags, buf != NULL ? buf : "", len, &je);
		goto out;
	}
	if (!json_is_object(root)) {
		diag_add(diags, POLICY_DIAG_ERROR, 1, 1, "the config must be "
		    "a JSON object ({ ... })");
		goto out;
	}
	if (jsonpos_scan(buf, len, &jp) == -1)
		goto oom;
	if ((c = calloc(1, sizeof(*c))) == NULL ||
	    (c->policy = policy_new()) == NULL ||
	    (c->file = strdup(diags->file)) == NULL)
		goto oom;
	c->refcnt = 1;
	config_apply_defaults(c);
	c->audit_deny = 1;	/* audit.on_failure: "deny" */
	x.d = diags;
	x.jp = &jp;
	x.c = c;
	x.p = c->policy;
	x.opts = opts;
	x.buf = buf;
	x.len = len;
	domain_init(&x.rule_names);
	config_top(&x, root);
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

static void
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
	free(c->geoip_country_db);
	free(c->geoip_asn_db);
	config_free_list(c->resolver_servers);
	free(c->tls.ca_cert);
	free(c->tls.ca_key);
	config_free_list(c->tls.upstream_ca_files);
	config_free_list(c->tls.extra_ca_files);
	free(c->admin_address);
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

const char *
policy_proto_str(enum moat_listen_proto p)
{
	if ((unsigned)p >= CONFIG_NPROTOS)
		return "?";
	return config_protos[p];
}
