/*
 * jsonpos.c - where each key and value of a JSON text is (line:column).
 *
 * jansson keeps no positions in the values it builds, yet every semantic
 * error in a config must point at the byte that causes it.  This scanner
 * walks the same text once jansson has accepted it and records, for every
 * value in document order, the line and column of its first byte and of
 * its key.  A loaded jansson tree iterates objects in insertion order, so
 * the config walker descends both in step: entry i's children start at
 * i + 1, its next sibling is at i + 1 + nsub.  An entry is 20 bytes.
 *
 * What it is not: a validating parser.  The text is jansson-approved;
 * anything unexpected here is reported as a failure, never guessed at.
 *
 * It also finds, in a text jansson has not read yet, the span of one
 * array by its key path and the bytes of each of its elements
 * (jsonpos_find_array): the config loader reads policy.rules one rule at
 * a time, so that a policy of a hundred thousand rules never becomes a
 * hundred thousand jansson objects at once.  That skeleton matches
 * strings and brackets only; jansson validates every byte of it later,
 * and when the skeleton is not what it should be, the caller loads the
 * whole text as before.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "policy/policy_int.h"

#define JSONPOS_FIRST_CAP	64	/* entries in a new table */
#define JSONPOS_FIRST_DEPTH	16	/* nesting levels before growing */

struct jsonpos_open {
	uint32_t	idx;		/* entry of the container */
	bool		obj;		/* an object: elements have keys */
};

struct jsonpos_scan {
	const char		*buf;
	size_t			 len, i;
	uint32_t		 line;
	size_t			 linestart;
	size_t			 skip_from, skip_to;	/* passed over */
	bool			 elements;	/* the text is an array's
						   elements, without brackets */
	struct jsonpos_open	*stack;	/* open containers, innermost last */
	size_t			 depth, stackcap;
};

static void	jsonpos_ws(struct jsonpos_scan *s);
static int	jsonpos_skip_string(struct jsonpos_scan *s);
static int	jsonpos_add(struct jsonpos *jp, struct jsonpos_scan *s,
		    uint32_t kline, uint32_t kcol);
static int	jsonpos_push(struct jsonpos_scan *s, uint32_t idx, bool obj);
static int	jsonpos_value(struct jsonpos *jp, struct jsonpos_scan *s,
		    uint32_t kline, uint32_t kcol);
static int	jsonpos_element(struct jsonpos *jp, struct jsonpos_scan *s);
static int	jsonpos_after(struct jsonpos *jp, struct jsonpos_scan *s);

void
jsonpos_lines(const char *buf, size_t from, size_t to, uint32_t *line,
    size_t *linestart)
{
	const char	*p = buf + from, *end = buf + to;

	while (p < end && (p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		(*line)++;
		*linestart = (size_t)(++p - buf);
	}
}

static void
jsonpos_ws(struct jsonpos_scan *s)
{
	char	c;

	while (s->i < s->len) {
		if (s->i == s->skip_from && s->skip_to > s->skip_from) {
			jsonpos_lines(s->buf, s->skip_from, s->skip_to,
			    &s->line, &s->linestart);
			s->i = s->skip_to;
			continue;
		}
		c = s->buf[s->i];
		if (c == '\n') {
			s->line++;
			s->linestart = s->i + 1;
		} else if (c != ' ' && c != '\t' && c != '\r')
			return;
		s->i++;
	}
}

static int
jsonpos_skip_string(struct jsonpos_scan *s)
{
	if (s->i >= s->len || s->buf[s->i] != '"')
		return -1;
	for (s->i++; s->i < s->len; s->i++) {
		if (s->buf[s->i] == '\\')
			s->i++;
		else if (s->buf[s->i] == '"') {
			s->i++;
			return 0;
		}
	}
	return -1;
}

static int
jsonpos_add(struct jsonpos *jp, struct jsonpos_scan *s, uint32_t kline,
    uint32_t kcol)
{
	struct jsonpos_ent	*e;

	if (jp->n == jp->cap) {
		size_t	ncap = jp->cap ? jp->cap * 2 : JSONPOS_FIRST_CAP;

		if (ncap >= POLICY_NONE ||
		    (e = reallocarray(jp->v, ncap, sizeof(*e))) == NULL)
			return -1;
		jp->v = e;
		jp->cap = ncap;
	}
	e = &jp->v[jp->n++];
	e->kline = kline;
	e->kcol = kcol;
	e->vline = s->line;
	e->vcol = (uint32_t)(s->i - s->linestart + 1);
	e->nsub = 0;
	return 0;
}

static int
jsonpos_push(struct jsonpos_scan *s, uint32_t idx, bool obj)
{
	struct jsonpos_open	*ns;

	if (s->depth == s->stackcap) {
		size_t	ncap = s->stackcap ? s->stackcap * 2 :
		    JSONPOS_FIRST_DEPTH;

		if ((ns = reallocarray(s->stack, ncap, sizeof(*ns))) == NULL)
			return -1;
		s->stack = ns;
		s->stackcap = ncap;
	}
	s->stack[s->depth].idx = idx;
	s->stack[s->depth].obj = obj;
	s->depth++;
	return 0;
}

/*
 * Records the value at s->i.  A scalar is skipped; a container is opened
 * (and closed at once if empty).  Returns 1 if a container was opened and
 * holds a first element to read, 0 after a complete value, -1 on error.
 */
static int
jsonpos_value(struct jsonpos *jp, struct jsonpos_scan *s, uint32_t kline,
    uint32_t kcol)
{
	uint32_t	idx = (uint32_t)jp->n;
	char		c, close;

	if (s->i >= s->len || jsonpos_add(jp, s, kline, kcol) == -1)
		return -1;
	c = s->buf[s->i];
	if (c == '"')
		return jsonpos_skip_string(s);
	if (c != '{' && c != '[') {
		while (s->i < s->len && strchr("{}[],:\" \t\r\n",
		    s->buf[s->i]) == NULL)
			s->i++;
		return 0;
	}
	close = c == '{' ? '}' : ']';
	s->i++;
	jsonpos_ws(s);
	if (s->i < s->len && s->buf[s->i] == close) {
		s->i++;
		return 0;
	}
	return jsonpos_push(s, idx, c == '{') == -1 ? -1 : 1;
}

/*
 * Reads the next element of the innermost open container (its key first
 * for an object) and records it.  Returns as jsonpos_value().
 */
static int
jsonpos_element(struct jsonpos *jp, struct jsonpos_scan *s)
{
	uint32_t	kline = 0, kcol = 0;

	jsonpos_ws(s);
	if (s->stack[s->depth - 1].obj) {
		kline = s->line;
		kcol = (uint32_t)(s->i - s->linestart + 1);
		if (jsonpos_skip_string(s) == -1)
			return -1;
		jsonpos_ws(s);
		if (s->i >= s->len || s->buf[s->i] != ':')
			return -1;
		s->i++;
		jsonpos_ws(s);
	}
	return jsonpos_value(jp, s, kline, kcol);
}

/*
 * After a complete value: skips "," or closes containers.  Returns 1 if
 * another element follows in the innermost container, 0 if the whole text
 * is done, -1 on error.
 */
static int
jsonpos_after(struct jsonpos *jp, struct jsonpos_scan *s)
{
	uint32_t	top;

	for (;;) {
		jsonpos_ws(s);
		if (s->depth == 0)
			return s->i == s->len ? 0 : -1;
		if (s->i >= s->len && s->elements && s->depth == 1) {
			/* The end of the elements closes their array. */
			top = s->stack[--s->depth].idx;
			jp->v[top].nsub = (uint32_t)(jp->n - top - 1);
			return 0;
		}
		if (s->i >= s->len)
			return -1;
		if (s->buf[s->i] == ',') {
			s->i++;
			return 1;
		}
		if (s->buf[s->i] != (s->stack[s->depth - 1].obj ? '}' : ']'))
			return -1;
		top = s->stack[--s->depth].idx;
		jp->v[top].nsub = (uint32_t)(jp->n - top - 1);
		s->i++;
	}
}

int
jsonpos_scan(const char *buf, size_t len, struct jsonpos *out)
{
	memset(out, 0, sizeof(*out));
	return jsonpos_scan_at(buf, 0, len, 1, 0, 0, 0, out);
}

/* jsonpos_scan_at() and jsonpos_scan_elements(). */
static int
jsonpos_scan_text(const char *buf, size_t from, size_t to, uint32_t line,
    size_t linestart, size_t skip_from, size_t skip_to, bool elements,
    struct jsonpos *out)
{
	struct jsonpos_scan	s;
	int			rc;

	out->n = 0;
	memset(&s, 0, sizeof(s));
	s.buf = buf;
	s.i = from;
	s.len = to;
	s.line = line;
	s.linestart = linestart;
	s.skip_from = skip_from;
	s.skip_to = skip_to;
	s.elements = elements;
	jsonpos_ws(&s);
	if (elements) {
		/* The array the elements are read as: entry 0, open. */
		rc = jsonpos_add(out, &s, 0, 0) == -1 ||
		    jsonpos_push(&s, 0, false) == -1 ? -1 : 1;
		if (rc == 1 && s.i >= s.len)
			rc = 0;
	} else
		rc = jsonpos_value(out, &s, 0, 0);
	for (;;) {
		if (rc == 0)
			rc = jsonpos_after(out, &s);
		if (rc <= 0)
			break;
		rc = jsonpos_element(out, &s);
	}
	free(s.stack);
	if (rc == -1) {
		jsonpos_free(out);
		return -1;
	}
	return 0;
}

int
jsonpos_scan_at(const char *buf, size_t from, size_t to, uint32_t line,
    size_t linestart, size_t skip_from, size_t skip_to, struct jsonpos *out)
{
	return jsonpos_scan_text(buf, from, to, line, linestart, skip_from,
	    skip_to, false, out);
}

int
jsonpos_scan_elements(const char *buf, size_t from, size_t to,
    uint32_t line, size_t linestart, struct jsonpos *out)
{
	return jsonpos_scan_text(buf, from, to, line, linestart, 0, 0, true,
	    out);
}

void
jsonpos_free(struct jsonpos *jp)
{
	if (jp == NULL)
		return;
	free(jp->v);
	memset(jp, 0, sizeof(*jp));
}

size_t
jsonpos_next(const struct jsonpos *jp, size_t i)
{
	return i + 1 + jp->v[i].nsub;
}

void
jsonpos_locate(const char *buf, size_t len, size_t off, int *line,
    int *column)
{
	size_t	i, start = 0;
	int	l = 1;

	if (off > len)
		off = len;
	for (i = 0; i < off; i++)
		if (buf[i] == '\n') {
			l++;
			start = i + 1;
		}
	*line = l;
	*column = (int)(off - start + 1);
}

/* ------------------------------------------------------------------ */
/* The skeleton of a text jansson has not read: one array's elements   */
/* ------------------------------------------------------------------ */

/* A cursor over a text: strings and brackets, nothing validated. */
struct jsonpos_cur {
	const char	*buf;
	size_t		 len, i;
};

static void
jsonpos_cur_ws(struct jsonpos_cur *c)
{
	while (c->i < c->len && (c->buf[c->i] == ' ' || c->buf[c->i] == '\t' ||
	    c->buf[c->i] == '\n' || c->buf[c->i] == '\r'))
		c->i++;
}

/* Past the string at c->i (its opening quote).  0, or -1 if none. */
static int
jsonpos_cur_string(struct jsonpos_cur *c)
{
	const char	*p, *q, *bs, *end = c->buf + c->len;

	if (c->i >= c->len || c->buf[c->i] != '"')
		return -1;
	/* The next quote, unless a backslash before it escapes a byte
	 * (memchr: a list of names is mostly this). */
	for (p = c->buf + c->i + 1; p < end; p = bs + 2) {
		if ((q = memchr(p, '"', (size_t)(end - p))) == NULL)
			return -1;
		if ((bs = memchr(p, '\\', (size_t)(q - p))) == NULL) {
			c->i = (size_t)(q - c->buf) + 1;
			return 0;
		}
	}
	return -1;
}

/*
 * Past the value at c->i: a string, a container (strings and brackets
 * matched, nesting at most maxdepth with the value itself at 1) or a
 * run of other bytes.  0, or -1 if it is not one of these.
 */
static int
jsonpos_cur_value(struct jsonpos_cur *c, unsigned maxdepth)
{
	uint8_t		obj[(JSONPOS_SKEL_DEPTH_MAX + 7) / 8];
	unsigned	d = 0;
	char		ch;

	if (maxdepth > JSONPOS_SKEL_DEPTH_MAX)
		maxdepth = JSONPOS_SKEL_DEPTH_MAX;
	if (c->i >= c->len || maxdepth == 0)
		return -1;
	ch = c->buf[c->i];
	if (ch == '"')
		return jsonpos_cur_string(c);
	if (ch != '{' && ch != '[') {
		size_t	from = c->i;

		while (c->i < c->len && strchr("{}[],:\" \t\r\n",
		    c->buf[c->i]) == NULL)
			c->i++;
		return c->i > from ? 0 : -1;
	}
	while (c->i < c->len) {
		ch = c->buf[c->i];
		if (ch == '"') {
			if (jsonpos_cur_string(c) == -1)
				return -1;
			continue;
		}
		if (ch == '{' || ch == '[') {
			if (d == maxdepth)
				return -1;
			if (ch == '{')
				obj[d / 8] |= (uint8_t)(1u << (d % 8));
			else
				obj[d / 8] &= (uint8_t)~(1u << (d % 8));
			d++;
		} else if (ch == '}' || ch == ']') {
			if (d == 0 || ((obj[(d - 1) / 8] >> ((d - 1) % 8)) & 1) !=
			    (ch == '}'))
				return -1;
			if (--d == 0) {
				c->i++;
				return 0;
			}
		}
		c->i++;
	}
	return -1;
}

int
jsonpos_find_array(const char *buf, size_t from, size_t to, unsigned base,
    const char *const *path, size_t npath, struct jsonpos_span *out)
{
	struct jsonpos_cur	c = { buf, to, from };
	size_t			level = 0, k, klen, len = to;
	unsigned		room;
	bool			match;

	memset(out, 0, sizeof(*out));
	/* The root is at depth base + 1, each object of the path one
	 * deeper, the array at base + npath + 1: its elements may nest what
	 * is left. */
	if (npath == 0 || base + npath + 2 >= JSONPOS_SKEL_DEPTH_MAX)
		return -1;
	room = JSONPOS_SKEL_DEPTH_MAX - base - (unsigned)npath - 1;
	jsonpos_cur_ws(&c);
	if (c.i >= len || buf[c.i] != '{')
		return -1;
	c.i++;
	for (;;) {
		jsonpos_cur_ws(&c);
		k = c.i + 1;
		if (jsonpos_cur_string(&c) == -1)
			return -1;	/* "}" too: the path is not there */
		klen = c.i - 1 - k;
		jsonpos_cur_ws(&c);
		if (c.i >= len || buf[c.i] != ':')
			return -1;
		c.i++;
		jsonpos_cur_ws(&c);
		match = strlen(path[level]) == klen &&
		    memcmp(buf + k, path[level], klen) == 0;
		if (match && level + 1 == npath)
			break;
		if (match) {
			if (c.i >= len || buf[c.i] != '{')
				return -1;
			c.i++;
			level++;
			continue;
		}
		if (jsonpos_cur_value(&c, JSONPOS_SKEL_DEPTH_MAX) == -1)
			return -1;
		jsonpos_cur_ws(&c);
		if (c.i >= len || buf[c.i] != ',')
			return -1;
		c.i++;
	}
	if (c.i >= len || buf[c.i] != '[')
		return -1;
	out->from = ++c.i;
	jsonpos_cur_ws(&c);
	if (c.i < len && buf[c.i] == ']') {
		out->to = c.i;
		return 0;
	}
	for (;;) {
		/* Less by one: jansson counts a scalar inside as a level. */
		if (jsonpos_cur_value(&c, room - 1) == -1)
			return -1;
		out->count++;
		jsonpos_cur_ws(&c);
		if (c.i < len && buf[c.i] == ']') {
			out->to = c.i;
			return 0;
		}
		if (c.i >= len || buf[c.i] != ',')
			return -1;
		c.i++;
		jsonpos_cur_ws(&c);
	}
}

int
jsonpos_next_element(const char *buf, const struct jsonpos_span *sp,
    size_t *i, size_t *start, size_t *end)
{
	struct jsonpos_cur	c = { buf, sp->to, *i };

	jsonpos_cur_ws(&c);
	if (c.i >= sp->to)
		return -1;
	*start = c.i;
	if (jsonpos_cur_value(&c, JSONPOS_SKEL_DEPTH_MAX) == -1)
		return -1;
	*end = c.i;
	jsonpos_cur_ws(&c);
	if (c.i < sp->to && buf[c.i] == ',')
		c.i++;
	*i = c.i;
	return 0;
}
