/*
 * fuzz_secretscan.c - fuzz target for the secret scanner and rewriter
 * (proxy/secretscan.c).
 *
 * The input is read as: a mode byte (bit 0: patterns and text over the
 * letters a-d, so that patterns nest and overlap; otherwise raw bytes),
 * a byte giving the number of patterns (1-8), per pattern a length byte
 * (8-24), a secret-and-kind byte and its bytes, an actions byte (two bits,
 * LEAK, PH_TO_VALUE, VALUE_TO_PH or KEEP,
 * per secret, 4 secrets), FUZZ_NCUTS piece-size bytes, and the text.
 *
 * Properties, each an abort() when broken:
 * - secretscan_new() refuses the set exactly when two patterns are
 *   identical;
 * - secretscan_find() reports what a naive memcmp at every offset finds,
 *   in the same order (by end, longest first);
 * - secretscan_rules_check() accepts the rules exactly when every pattern
 *   the rules replace has a counterpart, and the rewriters agree;
 * - secretscan_rewrite() gives what a naive reference of the contract in
 *   secretscan.h gives (leak ending first; else leftmost-longest);
 * - the stream, fed in pieces whose sizes come from the data, and fed one
 *   byte at a time, gives the one-shot result, holds back at most
 *   maxlen - 1 bytes, never emits an empty piece; on a leak, what it
 *   emitted is a prefix of the leak-free rewrite and holds no raw byte
 *   from the leaking match on.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/secretscan.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define FUZZ_CHECK(c)	do { if (!(c)) abort(); } while (0)

#define FUZZ_MAXPAT	8	/* patterns per set */
#define FUZZ_NSEC	4	/* secrets */
#define FUZZ_NCUTS	8	/* piece sizes read from the data */

struct obuf {
	uint8_t	*b;
	size_t	 len;
	size_t	 cap;
	bool	 failed;
};

struct setup {
	struct secretscan_pattern	 p[FUZZ_MAXPAT];
	uint8_t				 pb[FUZZ_MAXPAT][24];
	size_t				 np;
	enum secretscan_action		 act[FUZZ_NSEC];
	size_t				 cuts[FUZZ_NCUTS];
	const uint8_t			*text;
	size_t				 len;
	size_t				 maxlen;
	bool				 letters;
};

static void	ob_add(struct obuf *, const uint8_t *, size_t);
static void	ob_emit(void *, const uint8_t *, size_t);
static bool	same(const uint8_t *, size_t, const uint8_t *, size_t);
static bool	parse(const uint8_t *, size_t, struct setup *, uint8_t *);
static bool	rewrites(enum secretscan_action, enum secretscan_kind);
static size_t	counterpart(const struct setup *, size_t);
static bool	ref_leak(const struct setup *, uint32_t *, size_t *);
static void	ref_rewrite(const struct setup *, struct obuf *, size_t *);
static void	check_find(const struct secretscan *, const struct setup *);
static void	check_stream(const struct secretscan *,
		    const struct secretscan_rules *, const struct setup *,
		    bool, int, uint32_t, const uint8_t *, size_t,
		    const struct obuf *, const size_t *, size_t);

static void
ob_add(struct obuf *o, const uint8_t *b, size_t n)
{
	uint8_t	*nb;

	if (o->failed || n == 0)
		return;
	if (o->len + n > o->cap) {
		o->cap = (o->len + n) * 2;
		if ((nb = realloc(o->b, o->cap)) == NULL) {
			o->failed = true;
			return;
		}
		o->b = nb;
	}
	memcpy(o->b + o->len, b, n);
	o->len += n;
}

static void
ob_emit(void *arg, const uint8_t *b, size_t n)
{
	FUZZ_CHECK(n > 0);
	ob_add(arg, b, n);
}

static bool
same(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

/* Reads the layout above; false if the data runs out first. */
static bool
parse(const uint8_t *d, size_t n, struct setup *su, uint8_t *text)
{
	size_t	pos = 0, i, j, l;
	bool	letters;
	uint8_t	a;

	if (n < 2)
		return false;
	letters = su->letters = d[pos++] & 1;
	su->np = 1 + d[pos++] % FUZZ_MAXPAT;
	su->maxlen = 0;
	for (i = 0; i < su->np; i++) {
		if (n - pos < 2)
			return false;
		l = 8 + d[pos++] % 17;
		su->p[i].secret = d[pos] % FUZZ_NSEC;
		su->p[i].kind = (d[pos] >> 2) & 1 ? SECRETSCAN_PLACEHOLDER :
		    SECRETSCAN_VALUE;
		pos++;
		if (n - pos < l)
			return false;
		for (j = 0; j < l; j++)
			su->pb[i][j] = letters ? 'a' + d[pos + j] % 4 :
			    d[pos + j];
		pos += l;
		su->p[i].bytes = su->pb[i];
		su->p[i].len = l;
		if (l > su->maxlen)
			su->maxlen = l;
	}
	if (n - pos < 1 + FUZZ_NCUTS)
		return false;
	a = d[pos++];
	for (i = 0; i < FUZZ_NSEC; i++)
		su->act[i] = (enum secretscan_action)((a >> (2 * i)) & 3);
	for (i = 0; i < FUZZ_NCUTS; i++)
		su->cuts[i] = d[pos++];
	su->len = n - pos;
	for (i = 0; i < su->len; i++)
		text[i] = letters ? 'a' + d[pos + i] % 4 : d[pos + i];
	su->text = text;
	return true;
}

static bool
rewrites(enum secretscan_action a, enum secretscan_kind k)
{
	return (a == SECRETSCAN_ACT_PH_TO_VALUE &&
	    k == SECRETSCAN_PLACEHOLDER) ||
	    (a == SECRETSCAN_ACT_VALUE_TO_PH && k == SECRETSCAN_VALUE);
}

/* The first pattern of the same secret and other kind, or np. */
static size_t
counterpart(const struct setup *su, size_t k)
{
	size_t	c;

	for (c = 0; c < su->np; c++)
		if (su->p[c].secret == su->p[k].secret &&
		    su->p[c].kind != su->p[k].kind)
			return c;
	return su->np;
}

/* The leak match ending first, the longest there: secret and start. */
static bool
ref_leak(const struct setup *su, uint32_t *secret, size_t *start)
{
	size_t	e, k, best;

	for (e = 1; e <= su->len; e++) {
		best = 0;
		for (k = 0; k < su->np; k++)
			if (su->act[su->p[k].secret] == SECRETSCAN_ACT_LEAK &&
			    su->p[k].len <= e && su->p[k].len > best &&
			    memcmp(su->text + e - su->p[k].len, su->p[k].bytes,
			    su->p[k].len) == 0) {
				best = su->p[k].len;
				*secret = su->p[k].secret;
			}
		if (best > 0) {
			*start = e - best;
			return true;
		}
	}
	return false;
}

/*
 * Leftmost-longest replacement, leaks ignored.  at[i] is the output
 * length once every byte before i is handled, a replacement counting as
 * soon as it has started.
 */
static void
ref_rewrite(const struct setup *su, struct obuf *o, size_t *at)
{
	const struct secretscan_pattern	*p = su->p;
	size_t				 i = 0, j, k, best, c;

	while (i < su->len) {
		at[i] = o->len;
		best = su->np;
		for (k = 0; k < su->np; k++)
			if (rewrites(su->act[p[k].secret], p[k].kind) &&
			    p[k].len <= su->len - i &&
			    (best == su->np || p[k].len > p[best].len) &&
			    memcmp(su->text + i, p[k].bytes, p[k].len) == 0)
				best = k;
		if (best == su->np) {
			ob_add(o, su->text + i, 1);
			i++;
			continue;
		}
		c = counterpart(su, best);
		FUZZ_CHECK(c < su->np);
		ob_add(o, su->p[c].bytes, su->p[c].len);
		for (j = 1; j < su->p[best].len; j++)
			at[i + j] = o->len;
		i += su->p[best].len;
	}
	at[su->len] = o->len;
}

static const char *
redact_name(const void *arg, uint32_t i)
{
	(void)arg;
	(void)i;
	return "N";
}

/*
 * Over the letters a-d (no NUL, and "[secret:N]" holds none of them in a
 * row), nothing the redactor leaves matches a pattern; without a match
 * it returns NULL.
 */
static void
check_redact(const struct secretscan *s, const struct setup *su)
{
	char	*in, *r;

	if (!su->letters || (in = malloc(su->len + 1)) == NULL)
		return;
	memcpy(in, su->text, su->len);
	in[su->len] = '\0';
	r = secretscan_redact(s, in, redact_name, NULL);
	if (r == NULL) {
		struct secretscan_hit h;

		FUZZ_CHECK(errno != 0 || secretscan_find(s, su->text, su->len,
		    &h, 1) == 0);
	} else
		FUZZ_CHECK(secretscan_find(s, (const uint8_t *)r, strlen(r),
		    &(struct secretscan_hit){ 0 }, 1) == 0 &&
		    strstr(r, "[secret:N]") != NULL);
	free(r);
	free(in);
}

static void
check_find(const struct secretscan *s, const struct setup *su)
{
	struct secretscan_hit	*hits;
	size_t			 max, n, e, l, k, h = 0;

	max = su->len * su->np + 1;
	if ((hits = calloc(max, sizeof(*hits))) == NULL)
		return;
	n = secretscan_find(s, su->text, su->len, hits, max);
	for (e = 1; e <= su->len; e++)
		for (l = su->maxlen; l >= SECRETSCAN_MIN_LEN; l--)
			for (k = 0; k < su->np; k++) {
				if (su->p[k].len != l || l > e ||
				    memcmp(su->text + e - l, su->p[k].bytes,
				    l) != 0)
					continue;
				FUZZ_CHECK(h < n);
				FUZZ_CHECK(hits[h].offset == e - l &&
				    hits[h].len == l && hits[h].pattern == k &&
				    hits[h].secret == su->p[k].secret &&
				    hits[h].kind == su->p[k].kind);
				h++;
			}
	FUZZ_CHECK(h == n);
	/* A smaller max gives a prefix. */
	if (n > 1)
		FUZZ_CHECK(secretscan_find(s, su->text, su->len, hits,
		    n - 1) == n - 1);
	free(hits);
}

/*
 * Streams the text in the data's pieces (bytes false) or a byte at a
 * time, and compares with the one-shot result (rc, leak, want).
 */
static void
check_stream(const struct secretscan *s, const struct secretscan_rules *r,
    const struct setup *su, bool bytes, int rc, uint32_t leak,
    const uint8_t *want, size_t wantlen, const struct obuf *leakfree,
    const size_t *at, size_t leak_start)
{
	struct secretscan_stream	*st;
	struct obuf			 o;
	size_t				 pos = 0, n, k = 0;
	uint32_t			 got = UINT32_MAX;
	int				 src = 0;

	memset(&o, 0, sizeof(o));
	if ((st = secretscan_stream_new(s, r)) == NULL)
		return;
	while (pos < su->len && src == 0) {
		n = bytes ? 1 : su->cuts[k++ % FUZZ_NCUTS];
		if (n == 0) {
			/* An empty feed, then at least a byte. */
			src = secretscan_stream_feed(st, su->text + pos, 0,
			    ob_emit, &o, &got);
			if (src != 0)
				break;
			n = 1;
		}
		if (n > su->len - pos)
			n = su->len - pos;
		src = secretscan_stream_feed(st, su->text + pos, n, ob_emit,
		    &o, &got);
		pos += n;
		if (src == 0) {
			FUZZ_CHECK(secretscan_stream_held(st) <
			    secretscan_maxlen(s));
			FUZZ_CHECK(secretscan_stream_held(st) <= pos);
		}
	}
	if (src == 0)
		src = secretscan_stream_finish(st, ob_emit, &o, &got);
	FUZZ_CHECK(src == rc);
	if (o.failed)
		goto out;
	if (rc == SECRETSCAN_LEAK) {
		FUZZ_CHECK(got == leak);
		/* A prefix of the leak-free output, stopping in time. */
		FUZZ_CHECK(o.len <= leakfree->len && (o.len == 0 ||
		    memcmp(o.b, leakfree->b, o.len) == 0));
		FUZZ_CHECK(o.len <= at[leak_start]);
		/* Sticky, and silent. */
		n = o.len;
		FUZZ_CHECK(secretscan_stream_feed(st, su->text, su->len,
		    ob_emit, &o, &got) == SECRETSCAN_LEAK && got == leak);
		FUZZ_CHECK(secretscan_stream_finish(st, ob_emit, &o, &got) ==
		    SECRETSCAN_LEAK && o.len == n);
	} else
		FUZZ_CHECK(same(o.b, o.len, want, wantlen));
 out:
	secretscan_stream_free(st);
	free(o.b);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct setup		 su;
	struct secretscan	*s = NULL;
	struct secretscan_rules	 r;
	struct obuf		 ref;
	uint8_t			*text = NULL, *out = NULL;
	size_t			*at = NULL, outlen = 0, i, j, leak_start = 0;
	uint32_t		 leak = UINT32_MAX, rleak = UINT32_MAX;
	char			 err[256];
	bool			 dup = false, valid = true, rleaks;
	int			 rc;

	memset(&ref, 0, sizeof(ref));
	memset(&su, 0, sizeof(su));
	if ((text = malloc(size ? size : 1)) == NULL ||
	    !parse(data, size, &su, text))
		goto out;
	if ((at = calloc(su.len + 1, sizeof(*at))) == NULL)
		goto out;

	for (i = 0; i < su.np; i++)
		for (j = 0; j < i; j++)
			dup |= same(su.p[i].bytes, su.p[i].len, su.p[j].bytes,
			    su.p[j].len);
	s = secretscan_new(su.p, su.np, err, sizeof(err));
	FUZZ_CHECK((s == NULL) == dup);
	if (s == NULL)
		goto out;
	FUZZ_CHECK(secretscan_maxlen(s) == su.maxlen);
	check_find(s, &su);
	check_redact(s, &su);

	r.action = su.act;
	r.nsecrets = FUZZ_NSEC;
	for (i = 0; i < su.np; i++)
		if (rewrites(su.act[su.p[i].secret], su.p[i].kind) &&
		    counterpart(&su, i) == su.np)
			valid = false;
	FUZZ_CHECK((secretscan_rules_check(s, &r, err, sizeof(err)) == 0) ==
	    valid);
	if (!valid) {
		FUZZ_CHECK(secretscan_rewrite(s, &r, su.text, su.len, &out,
		    &outlen, &leak) == -1 && out == NULL);
		FUZZ_CHECK(secretscan_stream_new(s, &r) == NULL);
		/* Unbind what cannot be rewritten, and go on. */
		for (i = 0; i < su.np; i++)
			if (rewrites(su.act[su.p[i].secret], su.p[i].kind) &&
			    counterpart(&su, i) == su.np)
				su.act[su.p[i].secret] = SECRETSCAN_ACT_LEAK;
		FUZZ_CHECK(secretscan_rules_check(s, &r, err,
		    sizeof(err)) == 0);
	}

	rleaks = ref_leak(&su, &rleak, &leak_start);
	ref_rewrite(&su, &ref, at);
	if (ref.failed)
		goto out;
	rc = secretscan_rewrite(s, &r, su.text, su.len, &out, &outlen, &leak);
	if (rc == -1)
		goto out;	/* out of memory */
	FUZZ_CHECK(rc == (rleaks ? SECRETSCAN_LEAK : 0));
	if (rleaks)
		FUZZ_CHECK(leak == rleak && out == NULL);
	else if (out == NULL)
		FUZZ_CHECK(outlen == 0 &&
		    same(ref.b, ref.len, su.text, su.len));
	else
		FUZZ_CHECK(same(ref.b, ref.len, out, outlen));

	check_stream(s, &r, &su, false, rc, leak, out ? out : su.text,
	    out ? outlen : su.len, &ref, at, leak_start);
	check_stream(s, &r, &su, true, rc, leak, out ? out : su.text,
	    out ? outlen : su.len, &ref, at, leak_start);
 out:
	secretscan_out_free(out, outlen);
	secretscan_free(s);
	free(ref.b);
	free(at);
	free(text);
	return 0;
}
