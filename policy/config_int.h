/*
 * config_int.h - what the files of the config loader share: config.c,
 * config_diag.c, config_listen.c, config_rules.c and config_secrets.c.
 *
 * Nothing here is visible outside the config loader; the rest of the
 * policy library uses policy_int.h, moatd and the CLI policy.h.
 */
#ifndef MOAT_CONFIG_INT_H
#define MOAT_CONFIG_INT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
/* A rule longer than this has its longest list of hosts or cidrs read
 * apart, CONFIG_LIST_BATCH elements (or about ..._BYTES) at a time. */
#define CONFIG_LIST_APART_BYTES	(64u << 10)
#define CONFIG_LIST_BATCH	4096
#define CONFIG_LIST_BATCH_BYTES	(256u << 10)
/* Those sizes as config_rules.c uses them: the unit tests and the fuzzer
 * lower them, so that small configs take every path of the code. */
extern size_t	config_list_apart_bytes;
extern size_t	config_list_batch;
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

/* config.c: every default and every numeric range of the config. */
extern const struct config_default	config_defaults[];
extern const size_t			config_ndefaults;

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

/* The keys of a rule, in the order config_rule() reads them. */
enum {
	RULE_NAME = 0, RULE_ACTION, RULE_HOSTS, RULE_CIDRS, RULE_COUNTRIES,
	RULE_ASNS, RULE_PORTS, RULE_METHODS, RULE_PATHS, RULE_INTERCEPT,
	RULE_RATE, RULE_INJECT, RULE_PLAIN_HTTP, RULE_GIT, RULE_STRICT_METHODS,
	RULE_PROTOCOLS, RULE_QUOTA,
	RULE__COUNT
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
	/*
	 * policy.rules read apart (config_load): their span and the empty
	 * array jansson made of them; the long "hosts" or "cidrs" of the
	 * rule being read, read apart in batches (config_rules.c); and the
	 * first piece of them that is not JSON.
	 */
	struct jsonpos_span	 rules_span;
	json_t			*rules_hole;	/* NULL: read whole */
	struct jsonpos_span	 list_span;
	json_t			*list_hole;	/* NULL: none */
	bool			 rules_syntax;
	json_error_t		 rules_je;	/* its error, positions of buf */
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

/* config_diag.c: messages and paths, typed getters */
void		config_err(struct config_ctx *x, size_t pos, const char *fmt,
		    ...) __attribute__((format(printf, 3, 4)));
void		config_warn(struct config_ctx *x, size_t pos, const char *fmt,
		    ...) __attribute__((format(printf, 3, 4)));
void		config_warn_key(struct config_ctx *x, size_t pos,
		    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void		config_err_key(struct config_ctx *x, size_t pos,
		    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void		config_err_in(struct config_ctx *x, size_t pos, size_t off,
		    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void		config_oom(struct config_ctx *x);
const char	*config_q(struct config_ctx *x, const char *s, size_t n);
size_t		config_push_key(struct config_ctx *x, const char *key);
size_t		config_push_index(struct config_ctx *x, size_t i);
void		config_pop(struct config_ctx *x, size_t old);
const char	*config_where(struct config_ctx *x);
const char	*config_typename(const json_t *v);
bool		config_fields(struct config_ctx *x, json_t *obj, size_t pos,
		    struct config_field *f, size_t nf);
bool		config_want(struct config_ctx *x, json_t *v, size_t pos,
		    json_type type, const char *what);
bool		config_array(struct config_ctx *x, json_t *v, size_t pos,
		    const char *what);
const struct config_default	*config_default(const char *section,
				    const char *key);
bool		config_number(struct config_ctx *x, json_t *v, size_t pos,
		    const struct config_default *def, long long *out);
bool		config_mode(struct config_ctx *x, json_t *v, size_t pos,
		    int *out);
bool		config_ident(const char *s, size_t n, size_t max,
		    const char *extra);
bool		config_envname(const char *s, size_t n);
char		*config_strdup(struct config_ctx *x, const char *s);
bool		config_file(struct config_ctx *x, json_t *v, size_t pos,
		    char **out);
void		config_sections(struct config_ctx *x, json_t *v, size_t pos,
		    const char *section);

/* config_listen.c */
void		config_listen(struct config_ctx *x, json_t *v, size_t pos);
void		config_audit_only(struct config_ctx *x, json_t *v, size_t pos,
		    int *out);
bool		config_bind(struct config_ctx *x, json_t *v, size_t pos,
		    bool unix_only, struct moat_listen *l);
void		config_check_addresses(struct config_ctx *x);
void		config_check_refusals(struct config_ctx *x);

/* config_rules.c: policy, rules */
void		config_policy(struct config_ctx *x, json_t *v, size_t pos);
/*
 * The first element of span (of buf) that jansson refuses, as its error
 * in *je (a position of buf); *je unchanged if every one is JSON.
 */
void		config_span_syntax(const char *buf,
		    const struct jsonpos_span *sp, json_error_t *je);
void		config_check_inspection(struct config_ctx *x);
/*
 * A "quota" object: {COUNT: N, "per_seconds": S}, both required, COUNT
 * "bytes_up" (rules, policy) or "requests" (secrets), ranges in
 * config_defaults[] (section "quota").  true with *count and *per set.
 */
bool		config_quota(struct config_ctx *x, json_t *v, size_t pos,
		    const char *count_key, uint64_t *count, unsigned *per);

/* config_secrets.c: secrets, auth, inject */
void		config_refs(struct config_ctx *x, json_t *v, size_t pos,
		    bool secrets, struct moat_secret_ref **out, size_t *nout);
bool		config_rule_secrets(struct config_ctx *x,
		    struct config_field *f, bool deny, struct policy_rule *r);
void		config_check_secrets(struct config_ctx *x);

/* config.c: top level, GeoIP, ownership */
/*
 * policy_config_load_opts(), with policy.rules read one rule at a time
 * (apart: what it does) or with the whole text one jansson tree (what
 * the tests compare it with).
 */
struct moat_config	*config_load(const char *name, const char *buf,
			    size_t len, const struct policy_load_opts *opts,
			    struct policy_diags *diags, bool apart);
void		config_countries(struct config_ctx *x, json_t *v, size_t pos,
		    uint32_t rule);
void		config_asns(struct config_ctx *x, json_t *v, size_t pos,
		    uint32_t rule);
void		config_free_refs(struct moat_secret_ref *v, size_t n);

#endif /* MOAT_CONFIG_INT_H */
