/*
 * config_diag.c - the config walker's messages and typed getters.
 *
 * What it is: what every section of config.c shares to report a problem
 * (at the line:column jsonpos.c recorded, after the JSON path of the
 * value, user strings quoted and cut short) and to read a value of the
 * shape it expects (an object's known keys with did-you-mean for the
 * others, numbers and modes checked against config_defaults[], names,
 * file paths).  A getter that refuses a value has said why; its caller
 * only skips it.
 *
 * What it is not: the schema.  Which key holds what is decided by the
 * section walkers in config*.c.
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

static void	config_vdiag(struct config_ctx *x, enum policy_diag_level lvl,
		    size_t pos, bool at_key, const char *fmt, va_list ap)
		    __attribute__((format(printf, 5, 0)));
static void	config_vdiag_at(struct config_ctx *x,
		    enum policy_diag_level lvl, int line, int col, bool bare,
		    const char *fmt, va_list ap)
		    __attribute__((format(printf, 6, 0)));
static int	config_str_col(struct config_ctx *x, size_t pos, size_t off);
static unsigned	config_distance(const char *a, const char *b);
static const char	*config_misplaced(const char *key);
static const char	*config_suggest(const char *key,
			    const struct config_field *f, size_t nf,
			    const struct config_default *sec);

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

void
config_err(struct config_ctx *x, size_t pos, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	config_vdiag(x, POLICY_DIAG_ERROR, pos, false, fmt, ap);
	va_end(ap);
}

void
config_warn(struct config_ctx *x, size_t pos, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	config_vdiag(x, POLICY_DIAG_WARNING, pos, false, fmt, ap);
	va_end(ap);
}

/* A warning at the key of entry pos, without the JSON path. */
void
config_warn_key(struct config_ctx *x, size_t pos, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	config_vdiag(x, POLICY_DIAG_WARNING, pos, true, fmt, ap);
	va_end(ap);
}

void
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
void
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

void
config_oom(struct config_ctx *x)
{
	diag_add(x->d, POLICY_DIAG_ERROR, 0, 0, "out of memory");
}

/*
 * Quotes a user string for a message: "..." with \" and \\ escaped and
 * control bytes as \xHH, cut after CONFIG_QUOTE_MAX bytes.  The buffer is
 * reused after CONFIG_NQUOTE calls.
 */
const char *
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

size_t
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

size_t
config_push_index(struct config_ctx *x, size_t i)
{
	char	digits[24], *d = digits + sizeof(digits);
	size_t	old = x->pathlen, n;

	/* By hand, not snprintf: once per element of every list (a list
	 * of a million names spent 4 % of its load formatting them). */
	*--d = ']';
	do
		*--d = (char)('0' + i % 10);
	while ((i /= 10) > 0);
	*--d = '[';
	n = (size_t)(digits + sizeof(digits) - d);
	if (n > sizeof(x->path) - 1 - old)
		n = sizeof(x->path) - 1 - old;	/* cut, as snprintf would */
	memcpy(x->path + old, d, n);
	x->pathlen = old + n;
	x->path[x->pathlen] = '\0';
	return old;
}

void
config_pop(struct config_ctx *x, size_t old)
{
	x->pathlen = old;
	x->path[old] = '\0';
}

const char *
config_where(struct config_ctx *x)
{
	return x->pathlen == 0 ? "the top level" : x->path;
}

const char *
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
	for (i = 0; sec != NULL && i < config_ndefaults; i++) {
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

/*
 * A key of a section written at the top level ("rules" for
 * "policy.rules"): where it belongs, or NULL.
 */
static const char *
config_misplaced(const char *key)
{
	static const char *const	where[] = {
		"policy.rules", "policy.default", "policy.allow_private",
		"tls.ca_cert", "tls.ca_key", "resolver.servers",
	};
	size_t				i;
	const char			*dot;

	for (i = 0; i < sizeof(where) / sizeof(where[0]); i++)
		if ((dot = strchr(where[i], '.')) != NULL &&
		    strcmp(dot + 1, key) == 0)
			return where[i];
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Generic shapes                                                       */
/* ------------------------------------------------------------------ */

/*
 * Matches the members of obj against the known keys f[] (filling v and
 * pos) and reports each unknown key.  Returns false if obj is not an
 * object (reported) or the position table is out of step.
 */
bool
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
		} else if (x->pathlen == 0 &&
		    (hint = config_misplaced(key)) != NULL)
			config_err_key(x, ci, "unknown key %s in the top level: "
			    "did you mean %s? (it goes inside \"%.*s\": {...})",
			    config_q(x, key, strlen(key)), hint,
			    (int)strcspn(hint, "."), hint);
		else if ((hint = config_suggest(key, f, nf, NULL)) != NULL)
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

bool
config_want(struct config_ctx *x, json_t *v, size_t pos, json_type type,
    const char *what)
{
	if (json_typeof(v) == type)
		return true;
	config_err(x, pos, "expected %s, got %s", what, config_typename(v));
	return false;
}

/* v must be a non-empty array; what names its elements. */
bool
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

const struct config_default *
config_default(const char *section, const char *key)
{
	size_t	i;

	for (i = 0; i < config_ndefaults; i++) {
		const struct config_default *d = &config_defaults[i];

		if (((section == NULL && d->section == NULL) ||
		    (section != NULL && d->section != NULL &&
		    strcmp(section, d->section) == 0)) &&
		    strcmp(key, d->key) == 0)
			return d;
	}
	return NULL;
}

bool
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

bool
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
bool
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
bool
config_envname(const char *s, size_t n)
{
	return config_ident(s, n, CONFIG_ENV_MAX, "_") &&
	    !(s[0] >= '0' && s[0] <= '9');
}

char *
config_strdup(struct config_ctx *x, const char *s)
{
	char	*r;

	if ((r = strdup(s)) == NULL)
		config_oom(x);
	return r;
}

/* A file path: a non-empty string without control bytes. */
bool
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
void
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
