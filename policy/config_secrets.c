/*
 * config_secrets.c - the config's secrets: the "secrets" section (NAME ->
 * {"file": PATH} | {"env": VAR}), the same shape of a listener's "auth",
 * and what a rule does with them: "inject" templates, "plain_http" and
 * "git"; then the warning for a secret no rule uses.
 *
 * What it is not: reading a secret.  Only references are recorded; moatd
 * reads the values, and no value ever appears in a message.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "policy/policy_int.h"
#include "policy/config_int.h"

static bool	config_ref(struct config_ctx *x, json_t *v, size_t pos,
		    bool secrets, struct moat_secret_ref *r);
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

/* A secret that no rule injects is likely a typo or a forgotten rule. */
void
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

void
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

enum { REF_FILE = 0, REF_ENV, REF_SANDBOX_ENV, REF_QUOTA, REF__COUNT };

static bool
config_ref(struct config_ctx *x, json_t *v, size_t pos, bool secrets,
    struct moat_secret_ref *r)
{
	struct config_field	f[REF__COUNT] = {
		[REF_FILE] = { "file", NULL, 0 },
		[REF_ENV] = { "env", NULL, 0 },
		[REF_SANDBOX_ENV] = { "sandbox_env", NULL, 0 },
		[REF_QUOTA] = { "quota", NULL, 0 },
	};
	const char		*s;
	size_t			 n, old;
	uint64_t		 req;
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
	if (f[REF_QUOTA].v != NULL) {
		old = config_push_key(x, "quota");
		if (config_quota(x, f[REF_QUOTA].v, f[REF_QUOTA].pos,
		    "requests", &req, &r->quota_per_seconds))
			r->quota_requests = (unsigned)req;
		else
			ok = false;
		config_pop(x, old);
	}
	for (i = REF_ENV; i < (secrets ? REF_QUOTA : REF_ENV + 1); i++) {
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
/* inject, plain_http, git                                              */
/* ------------------------------------------------------------------ */

/*
 * The keys that hand a rule secrets or make it look inside requests:
 * "inject", "plain_http" and "git" of the rule's fields f.  A deny rule
 * may have none of them.
 */
bool
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
	struct policy_rule_more	*m;
	size_t			 n, i, ci, old;
	bool			 ok = true;

	if (!config_array(x, v, pos, "injection ({\"header\": NAME, "
	    "\"value\": TEMPLATE}, {\"basic\": {...}} or {\"placeholders\": "
	    "[...]})"))
		return false;
	n = json_array_size(v);
	if ((m = policy_more_new(r)) == NULL ||
	    (m->injects = calloc(n, sizeof(*m->injects))) == NULL) {
		config_oom(x);
		return false;
	}
	for (i = 0, ci = pos + 1; i < n; i++, ci = jsonpos_next(x->jp, ci)) {
		old = config_push_index(x, i);
		if (config_inject(x, json_array_get(v, i), ci, r,
		    &m->injects[m->ninjects]))
			m->ninjects++;
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

	for (i = 0; &policy_more(r)->injects[i] != in; i++) {
		o = &policy_more(r)->injects[i];
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
	struct policy_rule_more	*m;
	size_t			*nv;

	if (x->secret_used != NULL && secret < x->c->nsecrets)
		x->secret_used[secret] = true;
	if (inject_rule_has(r, secret))
		return true;
	if ((m = policy_more_new(r)) == NULL ||
	    (nv = reallocarray(m->secrets, m->nsecrets + 1,
	    sizeof(*nv))) == NULL) {
		config_oom(x);
		return false;
	}
	m->secrets = nv;
	m->secrets[m->nsecrets++] = secret;
	return true;
}
