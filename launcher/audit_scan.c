/*
 * audit_scan.c - one audit line into a struct audit_ln.
 *
 * moatd writes flat objects: strings (ASCII, every other byte escaped),
 * non-negative integers, null, one flat array of strings ("injected")
 * and one flat object of strings ("request_id", skipped).  The fast path
 * scans exactly that, strictly (RFC 8259
 * grammar, no trailing bytes, a known key at most once), copying decoded
 * strings into a buffer of its own, and never changes the line; a line
 * it does not take (a nested value, a raw byte over 0x7f, a number with a
 * fraction in a key we do not read, ...) is loaded with jansson instead,
 * which decides whether it is JSON at all.  jansson for every line costs
 * about four times as much (README, "moat audit").
 *
 * Keys come in moatd's order, so the key after the one just matched is
 * tried first.
 */
#include "config.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "launcher/audit_cmd.h"
#include "policy/jsonload.h"

enum audit_kind {
	AUDIT_K_STR = 0,	/* string, or null */
	AUDIT_K_INT,		/* integer >= 0 */
	AUDIT_K_ARR		/* array of strings */
};

struct audit_field {
	const char	*key;
	size_t		 len;
	enum audit_kind	 kind;
	size_t		 off;
};

#define F(k, kind, m)	{ k, sizeof(k) - 1, kind, offsetof(struct audit_ln, m) }
static const struct audit_field	audit_fields[] = {
	F("ts", AUDIT_K_STR, ts),
	F("event", AUDIT_K_STR, event),
	F("id", AUDIT_K_INT, id),
	F("sandbox", AUDIT_K_STR, sandbox),
	F("proto", AUDIT_K_STR, proto),
	F("client", AUDIT_K_STR, client),
	F("host", AUDIT_K_STR, host),
	F("port", AUDIT_K_INT, port),
	F("sni", AUDIT_K_STR, sni),
	F("ip", AUDIT_K_STR, ip),
	F("verdict", AUDIT_K_STR, verdict),
	F("reason", AUDIT_K_STR, reason),
	F("rule", AUDIT_K_STR, rule),
	F("would_deny", AUDIT_K_STR, would_deny),
	F("method", AUDIT_K_STR, method),
	F("path", AUDIT_K_STR, path),
	F("status", AUDIT_K_INT, status),
	F("bytes_up", AUDIT_K_INT, bytes_up),
	F("bytes_down", AUDIT_K_INT, bytes_down),
	F("duration_ms", AUDIT_K_INT, duration_ms),
	F("injected", AUDIT_K_ARR, injected),
	F("qtype", AUDIT_K_STR, qtype),
	F("answer", AUDIT_K_STR, answer),
	F("end", AUDIT_K_STR, end),
	F("refused", AUDIT_K_INT, refused),
	F("detail", AUDIT_K_STR, detail),
	F("dropped", AUDIT_K_INT, dropped),
	F("seq", AUDIT_K_INT, seq),
	F("prev", AUDIT_K_STR, prev),
	F("hash", AUDIT_K_STR, hash),
};
#undef F
#define AUDIT_NFIELDS	(sizeof(audit_fields) / sizeof(audit_fields[0]))

/* A scan that the fast path gives up on: jansson decides. */
#define AUDIT_SCAN_FALLBACK	(-2)

struct audit_scan {
	char	*buf;		/* decoded strings, NUL-terminated */
	size_t	 used;
	json_t	*doc;		/* the last line jansson loaded */
};

struct audit_cur {
	const char	*p, *end;
	struct audit_scan *s;
	struct audit_ln	*l;
	uint64_t	 seen;	/* audit_fields[] given */
	size_t		 next;	/* the field to try first */
	const char	*err;
};

static int	audit_scan_fast(struct audit_scan *s, const char *line,
		    size_t len, struct audit_ln *l, const char **err);
static int	audit_scan_jansson(struct audit_scan *s, const char *line,
		    size_t len, struct audit_ln *l, const char **err);

struct audit_scan *
audit_scan_new(void)
{
	struct audit_scan	*s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	if ((s->buf = malloc(AUDIT_LN_MAX_BYTES + 1)) == NULL) {
		free(s);
		return NULL;
	}
	return s;
}

void
audit_scan_free(struct audit_scan *s)
{
	if (s == NULL)
		return;
	json_decref(s->doc);
	free(s->buf);
	free(s);
}

static void
audit_ln_init(struct audit_ln *l)
{
	memset(l, 0, offsetof(struct audit_ln, injected));
	l->id = l->port = l->status = l->bytes_up = l->bytes_down = -1;
	l->duration_ms = l->refused = l->dropped = l->seq = -1;
	l->ninjected = 0;
	l->has_injected = false;
}

static void
audit_ws(struct audit_cur *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' ||
	    *c->p == '\r' || *c->p == '\n'))
		c->p++;
}

static int
audit_hex4(const char *p, unsigned *out)
{
	unsigned	v = 0, d;
	int		i;

	for (i = 0; i < 4; i++) {
		if (p[i] >= '0' && p[i] <= '9')
			d = (unsigned)(p[i] - '0');
		else if (p[i] >= 'a' && p[i] <= 'f')
			d = (unsigned)(p[i] - 'a' + 10);
		else if (p[i] >= 'A' && p[i] <= 'F')
			d = (unsigned)(p[i] - 'A' + 10);
		else
			return -1;
		v = v << 4 | d;
	}
	*out = v;
	return 0;
}

/* Appends code point u as UTF-8 to o. */
static char *
audit_utf8(char *o, unsigned u)
{
	if (u < 0x80)
		*o++ = (char)u;
	else if (u < 0x800) {
		*o++ = (char)(0xc0 | u >> 6);
		*o++ = (char)(0x80 | (u & 0x3f));
	} else if (u < 0x10000) {
		*o++ = (char)(0xe0 | u >> 12);
		*o++ = (char)(0x80 | (u >> 6 & 0x3f));
		*o++ = (char)(0x80 | (u & 0x3f));
	} else {
		*o++ = (char)(0xf0 | u >> 18);
		*o++ = (char)(0x80 | (u >> 12 & 0x3f));
		*o++ = (char)(0x80 | (u >> 6 & 0x3f));
		*o++ = (char)(0x80 | (u & 0x3f));
	}
	return o;
}

/* One \uXXXX (a surrogate pair whole) at c->p (after the backslash). */
static int
audit_uescape(struct audit_cur *c, char **o)
{
	unsigned	u, lo;

	if (c->end - c->p < 5 || audit_hex4(c->p + 1, &u) == -1)
		return -1;
	c->p += 5;
	if (u >= 0xdc00 && u <= 0xdfff)
		return -1;
	if (u >= 0xd800 && u <= 0xdbff) {
		if (c->end - c->p < 6 || c->p[0] != '\\' || c->p[1] != 'u' ||
		    audit_hex4(c->p + 2, &lo) == -1 || lo < 0xdc00 ||
		    lo > 0xdfff)
			return -1;
		c->p += 6;
		u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
	}
	if (u == 0)
		return -1;	/* a NUL cannot be a C string's */
	*o = audit_utf8(*o, u);
	return 0;
}

/*
 * A string at c->p (its opening quote): decoded into s->buf, *out the
 * copy.  AUDIT_SCAN_FALLBACK for a raw byte over 0x7f (jansson checks
 * UTF-8), -1 for what JSON never allows.
 */
static int
audit_string(struct audit_cur *c, const char **out)
{
	char		*o = c->s->buf + c->s->used, *o0 = o;
	unsigned char	 ch;

	c->p++;
	for (;;) {
		const char	*q = c->p;

		while (q < c->end && (unsigned char)*q >= 0x20 && *q != '"' &&
		    *q != '\\' && (unsigned char)*q < 0x80)
			q++;
		memcpy(o, c->p, (size_t)(q - c->p));
		o += q - c->p;
		c->p = q;
		if (c->p >= c->end)
			return -1;
		ch = (unsigned char)*c->p;
		if (ch == '"')
			break;
		if (ch >= 0x80)
			return AUDIT_SCAN_FALLBACK;
		if (ch < 0x20)
			return -1;
		/* a backslash */
		if (++c->p >= c->end)
			return -1;
		switch (*c->p) {
		case '"': case '\\': case '/':
			*o++ = *c->p++;
			break;
		case 'b': *o++ = '\b'; c->p++; break;
		case 'f': *o++ = '\f'; c->p++; break;
		case 'n': *o++ = '\n'; c->p++; break;
		case 'r': *o++ = '\r'; c->p++; break;
		case 't': *o++ = '\t'; c->p++; break;
		case 'u':
			if (audit_uescape(c, &o) == -1)
				return -1;
			break;
		default:
			return -1;
		}
	}
	c->p++;
	*o++ = '\0';
	c->s->used += (size_t)(o - o0);
	*out = o0;
	return 0;
}

/* A JSON number; *v its value if it is an integer >= 0 that fits, else
 * -2 (a number, but not such an integer). */
static int
audit_number(struct audit_cur *c, int64_t *v)
{
	const char	*p = c->p;
	uint64_t	 n = 0;
	bool		 plain = true, big = false;

	if (p < c->end && *p == '-') {
		plain = false;
		p++;
	}
	if (p >= c->end || *p < '0' || *p > '9')
		return -1;
	if (*p == '0' && p + 1 < c->end && p[1] >= '0' && p[1] <= '9')
		return -1;
	for (; p < c->end && *p >= '0' && *p <= '9'; p++) {
		if (n > (UINT64_C(1) << 62))
			big = true;
		n = n * 10 + (uint64_t)(*p - '0');
	}
	if (p < c->end && *p == '.') {
		plain = false;
		if (++p >= c->end || *p < '0' || *p > '9')
			return -1;
		while (p < c->end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < c->end && (*p == 'e' || *p == 'E')) {
		plain = false;
		p++;
		if (p < c->end && (*p == '+' || *p == '-'))
			p++;
		if (p >= c->end || *p < '0' || *p > '9')
			return -1;
		while (p < c->end && *p >= '0' && *p <= '9')
			p++;
	}
	c->p = p;
	*v = plain && !big ? (int64_t)n : -2;
	return 0;
}

static int
audit_lit(struct audit_cur *c, const char *lit, size_t n)
{
	if ((size_t)(c->end - c->p) < n || memcmp(c->p, lit, n) != 0)
		return -1;
	c->p += n;
	return 0;
}

/*
 * A flat object of strings (moatd's "request_id"), skipped: c->p at its
 * "{".  Anything else in it goes to jansson.
 */
static int
audit_skip_object(struct audit_cur *c)
{
	const char	*str;
	size_t		 used = c->s->used;
	int		 rc, i;

	c->p++;
	audit_ws(c);
	if (c->p < c->end && *c->p == '}') {
		c->p++;
		return 0;
	}
	for (;;) {
		for (i = 0; i < 2; i++) {	/* the key, then its value */
			if (c->p >= c->end || *c->p != '"')
				return AUDIT_SCAN_FALLBACK;
			rc = audit_string(c, &str);
			c->s->used = used;
			if (rc != 0)
				return rc;
			audit_ws(c);
			if (i == 0) {
				if (c->p >= c->end || *c->p != ':')
					return -1;
				c->p++;
				audit_ws(c);
			}
		}
		if (c->p < c->end && *c->p == '}') {
			c->p++;
			return 0;
		}
		if (c->p >= c->end || *c->p != ',')
			return -1;
		c->p++;
		audit_ws(c);
	}
}

/* Any value of a key we do not read: scalars and a flat object of
 * strings here, the rest to jansson. */
static int
audit_skip(struct audit_cur *c)
{
	const char	*str;
	int64_t		 v;
	size_t		 used = c->s->used;
	int		 rc;

	switch (*c->p) {
	case '"':
		rc = audit_string(c, &str);
		c->s->used = used;
		return rc;
	case '{':
		return audit_skip_object(c);
	case 'n':
		return audit_lit(c, "null", 4);
	case 't':
		return audit_lit(c, "true", 4);
	case 'f':
		return audit_lit(c, "false", 5);
	case '[':
		return AUDIT_SCAN_FALLBACK;
	default:
		return audit_number(c, &v);
	}
}

static int
audit_strings(struct audit_cur *c, struct audit_ln *l)
{
	const char	*str;
	int		 rc;

	c->p++;
	audit_ws(c);
	l->has_injected = true;
	if (c->p < c->end && *c->p == ']') {
		c->p++;
		return 0;
	}
	for (;;) {
		if (c->p >= c->end || *c->p != '"') {
			c->err = "\"injected\": expected an array of strings";
			return -1;
		}
		if ((rc = audit_string(c, &str)) != 0)
			return rc;
		if (l->ninjected == AUDIT_LN_INJECTED_MAX) {
			c->err = "\"injected\": too many names";
			return -1;
		}
		l->injected[l->ninjected++] = str;
		audit_ws(c);
		if (c->p < c->end && *c->p == ']') {
			c->p++;
			return 0;
		}
		if (c->p >= c->end || *c->p != ',')
			return -1;
		c->p++;
		audit_ws(c);
	}
}

static const struct audit_field *
audit_field_find(struct audit_cur *c, const char *key, size_t len)
{
	size_t	i, k;

	for (k = 0; k < AUDIT_NFIELDS; k++) {
		i = (c->next + k) % AUDIT_NFIELDS;
		if (audit_fields[i].len == len &&
		    memcmp(audit_fields[i].key, key, len) == 0) {
			c->next = i + 1;
			if (c->seen & (UINT64_C(1) << i)) {
				c->err = "a key given twice";
				return NULL;
			}
			c->seen |= UINT64_C(1) << i;
			return &audit_fields[i];
		}
	}
	return NULL;
}

/* The value of field f at c->p. */
static int
audit_value(struct audit_cur *c, const struct audit_field *f)
{
	char	*m = (char *)c->l + f->off;
	int64_t	 v;

	switch (f->kind) {
	case AUDIT_K_STR:
		if (*c->p == 'n')
			return audit_lit(c, "null", 4);
		if (*c->p != '"') {
			c->err = "a field that must be a string is not";
			return -1;
		}
		return audit_string(c, (const char **)(void *)m);
	case AUDIT_K_INT:
		if (*c->p == 'n')
			return audit_lit(c, "null", 4);
		if (audit_number(c, &v) == -1 || v < 0) {
			c->err = "a field that must be an integer (>= 0) is "
			    "not";
			return -1;
		}
		*(int64_t *)(void *)m = v;
		return 0;
	case AUDIT_K_ARR:
		if (*c->p != '[') {
			c->err = "\"injected\": expected an array of strings";
			return -1;
		}
		return audit_strings(c, c->l);
	}
	return -1;
}

static int
audit_scan_fast(struct audit_scan *s, const char *line, size_t len,
    struct audit_ln *l, const char **err)
{
	struct audit_cur		 c = { line, line + len, s, l, 0, 0, NULL };
	const struct audit_field	*f;
	const char			*key;
	size_t				 klen, used;
	int				 rc;

	s->used = 0;
	audit_ws(&c);
	if (c.p >= c.end || *c.p++ != '{')
		goto bad;
	audit_ws(&c);
	if (c.p < c.end && *c.p == '}') {
		c.p++;
		goto done;
	}
	for (;;) {
		if (c.p >= c.end || *c.p != '"')
			goto bad;
		used = s->used;
		if ((rc = audit_string(&c, &key)) != 0)
			return rc == AUDIT_SCAN_FALLBACK ? rc : -1;
		klen = s->used - used - 1;
		audit_ws(&c);
		if (c.p >= c.end || *c.p++ != ':')
			goto bad;
		audit_ws(&c);
		if (c.p >= c.end)
			goto bad;
		f = audit_field_find(&c, key, klen);
		s->used = used;		/* the key's copy is not kept */
		if (f == NULL && c.err != NULL)
			goto bad;
		rc = f != NULL ? audit_value(&c, f) : audit_skip(&c);
		if (rc != 0) {
			if (rc == AUDIT_SCAN_FALLBACK)
				return rc;
			goto bad;
		}
		audit_ws(&c);
		if (c.p < c.end && *c.p == ',') {
			c.p++;
			audit_ws(&c);
			continue;
		}
		if (c.p < c.end && *c.p == '}') {
			c.p++;
			break;
		}
		goto bad;
	}
 done:
	audit_ws(&c);
	if (c.p != c.end)
		goto bad;
	return 0;
 bad:
	*err = c.err != NULL ? c.err : "not a JSON object";
	return -1;
}

/* One member of a jansson object, as the fast path takes it. */
static int
audit_member(struct audit_ln *l, const struct audit_field *f, json_t *v,
    const char **err)
{
	char	*m = (char *)l + f->off;
	size_t	 i;
	json_t	*e;

	if (json_is_null(v) && f->kind != AUDIT_K_ARR)
		return 0;
	switch (f->kind) {
	case AUDIT_K_STR:
		if (!json_is_string(v) || strlen(json_string_value(v)) !=
		    json_string_length(v)) {
			*err = "a field that must be a string is not";
			return -1;
		}
		*(const char **)(void *)m = json_string_value(v);
		return 0;
	case AUDIT_K_INT:
		if (!json_is_integer(v) || json_integer_value(v) < 0) {
			*err = "a field that must be an integer (>= 0) is not";
			return -1;
		}
		*(int64_t *)(void *)m = json_integer_value(v);
		return 0;
	case AUDIT_K_ARR:
		if (!json_is_array(v) || json_array_size(v) >
		    AUDIT_LN_INJECTED_MAX) {
			*err = "\"injected\": expected an array of strings";
			return -1;
		}
		l->has_injected = true;
		json_array_foreach(v, i, e) {
			if (!json_is_string(e)) {
				*err = "\"injected\": expected an array of "
				    "strings";
				return -1;
			}
			l->injected[l->ninjected++] = json_string_value(e);
		}
		return 0;
	}
	return -1;
}

static int
audit_scan_jansson(struct audit_scan *s, const char *line, size_t len,
    struct audit_ln *l, const char **err)
{
	json_error_t	 je;
	const char	*key;
	json_t		*v;
	size_t		 i;

	json_decref(s->doc);
	s->doc = policy_json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
	if (s->doc == NULL || !json_is_object(s->doc)) {
		*err = "not a JSON object";
		return -1;
	}
	json_object_foreach(s->doc, key, v) {
		for (i = 0; i < AUDIT_NFIELDS; i++)
			if (strcmp(audit_fields[i].key, key) == 0)
				break;
		if (i < AUDIT_NFIELDS &&
		    audit_member(l, &audit_fields[i], v, err) == -1)
			return -1;
	}
	return 0;
}

int
audit_scan_line(struct audit_scan *s, const char *line, size_t len,
    struct audit_ln *l, bool jansson_only, const char **err)
{
	int	rc = AUDIT_SCAN_FALLBACK;

	*err = NULL;
	audit_ln_init(l);
	if (!jansson_only)
		rc = audit_scan_fast(s, line, len, l, err);
	if (rc != AUDIT_SCAN_FALLBACK)
		return rc;
	audit_ln_init(l);
	*err = NULL;
	return audit_scan_jansson(s, line, len, l, err);
}
