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

static void
jsonpos_ws(struct jsonpos_scan *s)
{
	char	c;

	while (s->i < s->len) {
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
	struct jsonpos_scan	s;
	int			rc;

	memset(out, 0, sizeof(*out));
	memset(&s, 0, sizeof(s));
	s.buf = buf;
	s.len = len;
	s.line = 1;
	jsonpos_ws(&s);
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
