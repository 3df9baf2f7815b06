/*
 * test_secretscan.c - vectors for proxy/secretscan.c: compiling patterns,
 * finding every match, rewriting requests and responses, leaks, and the
 * stream giving the one-shot result whatever the pieces its input comes
 * in.  Random vectors use a fixed seed and are also checked against a
 * naive reference written here (memcmp at every offset).
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "proxy/secretscan.h"
#include "proxy/util.h"
#include "tests/unit/unit.h"

#define B(s)		(const uint8_t *)(s), (sizeof(s) - 1)
#define NSEC		4		/* secrets in the fixed set */
#define RAND_ROUNDS	200		/* random sets in the property tests */
#define RAND_TEXT_MAX	600		/* random text length, bytes */

struct tbuf {
	uint8_t	*b;
	size_t	 len;
	size_t	 cap;
	size_t	 calls;
	bool	 empty_call;		/* emit was called with 0 bytes */
};

/* One run of the stream: output, result, and the largest holdback. */
struct srun {
	struct tbuf	 out;
	int		 rc;
	uint32_t	 leak;
	size_t		 maxheld;
};

static bool	same(const uint8_t *, size_t, const uint8_t *, size_t);
static void	tbuf_add(struct tbuf *, const uint8_t *, size_t);
static void	tbuf_emit(void *, const uint8_t *, size_t);
static struct secretscan *fixed_set(void);
static void	pat(struct secretscan_pattern *, const char *, uint32_t,
		    enum secretscan_kind);
static int	ref_rewrite(const struct secretscan_pattern *, size_t,
		    const enum secretscan_action *, const uint8_t *, size_t,
		    struct tbuf *, uint32_t *);
static size_t	ref_find(const struct secretscan_pattern *, size_t,
		    const uint8_t *, size_t, struct secretscan_hit *, size_t);
static void	stream_run(const struct secretscan *,
		    const struct secretscan_rules *, const uint8_t *, size_t,
		    const size_t *, size_t, struct srun *);
static void	check_rewrite(const struct secretscan *,
		    const enum secretscan_action *, const uint8_t *, size_t,
		    int, const uint8_t *, size_t, uint32_t);
static void	check_splits(const struct secretscan *,
		    const struct secretscan_rules *, const uint8_t *, size_t,
		    bool);
static uint32_t	rnd(uint32_t *);
static void	test_new_errors(void);
static void	test_new_limits(void);
static void	test_find_single(void);
static void	test_find_overlapping(void);
static void	test_find_max(void);
static void	test_find_random(void);
static void	test_rewrite_request(void);
static void	test_rewrite_response(void);
static void	test_rewrite_nothing(void);
static void	test_leaks(void);
static void	test_leaks_nested(void);
static void	test_choice(void);
static void	test_value_placeholder_overlap(void);
static void	test_rules_check(void);
static void	test_stream_splits(void);
static void	test_stream_holdback(void);
static void	test_stream_leak(void);
static void	test_stream_many(void);
static void	test_stream_full_overlap(void);
static void	test_stream_identity(void);
static void	test_stream_states(void);
static void	test_random_reference(void);
static void	test_placeholder(void);
static void	test_redact(void);
static void	test_keep(void);
static void	test_pct_encode(void);
static void	test_replaced(void);
static void	test_skip_reference(void);
static void	test_cursor(void);

/* The fixed set: secret i has value VAL[i] and placeholder PH[i]. */
static const char *const VAL[NSEC] = {
	"sk-live-0123456789abcdef",
	"ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ012345",
	"xoxb-2222-3333-TOKEN",
	"AKIAIOSFODNN7EXAMPLE",
};
static const char *const PH[NSEC] = {
	"moat-ph-00112233445566778899aabbccddeeff",
	"moat-ph-0123456789abcdef0123456789abcdef",
	"moat-ph-ffffffffffffffffffffffffffffffff",
	"moat-ph-3f0c000000000000000000000000beef",
};

/* Equal byte strings; either may be NULL when its length is 0. */
static bool
same(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

static void
tbuf_add(struct tbuf *t, const uint8_t *b, size_t n)
{
	uint8_t	*nb;

	if (t->len + n > t->cap) {
		t->cap = (t->len + n) * 2 + 16;
		nb = realloc(t->b, t->cap);
		CU_ASSERT_PTR_NOT_NULL_FATAL(nb);
		t->b = nb;
	}
	if (n > 0)
		memcpy(t->b + t->len, b, n);
	t->len += n;
}

static void
tbuf_emit(void *arg, const uint8_t *b, size_t n)
{
	struct tbuf	*t = arg;

	if (n == 0)
		t->empty_call = true;
	t->calls++;
	tbuf_add(t, b, n);
}

static void
pat(struct secretscan_pattern *p, const char *s, uint32_t secret,
    enum secretscan_kind kind)
{
	p->bytes = (const uint8_t *)s;
	p->len = strlen(s);
	p->secret = secret;
	p->kind = kind;
}

static struct secretscan *
fixed_set(void)
{
	struct secretscan_pattern	 p[2 * NSEC];
	struct secretscan		*s;
	char				 err[256];
	size_t				 i;

	for (i = 0; i < NSEC; i++) {
		pat(&p[2 * i], VAL[i], (uint32_t)i, SECRETSCAN_VALUE);
		pat(&p[2 * i + 1], PH[i], (uint32_t)i, SECRETSCAN_PLACEHOLDER);
	}
	s = secretscan_new(p, 2 * NSEC, err, sizeof(err));
	if (s == NULL)
		fprintf(stderr, "\n  secretscan_new: %s\n", err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	return s;
}

/*
 * The reference for rewriting, straight from the contract in
 * secretscan.h: a leak is the leak match ending first, the longest among
 * those; otherwise at each offset the longest candidate is replaced by
 * the first pattern of the other kind of its secret.
 */
static int
ref_rewrite(const struct secretscan_pattern *p, size_t np,
    const enum secretscan_action *act, const uint8_t *in, size_t len,
    struct tbuf *out, uint32_t *leak)
{
	size_t	e, i, k, best, bestlen, c;

	for (e = 1; e <= len; e++) {
		bestlen = 0;
		for (k = 0; k < np; k++)
			if (act[p[k].secret] == SECRETSCAN_ACT_LEAK &&
			    p[k].len <= e && p[k].len > bestlen &&
			    memcmp(in + e - p[k].len, p[k].bytes,
			    p[k].len) == 0) {
				bestlen = p[k].len;
				*leak = p[k].secret;
			}
		if (bestlen > 0)
			return SECRETSCAN_LEAK;
	}
	for (i = 0; i < len; ) {
		best = np;
		for (k = 0; k < np; k++) {
			bool rw = (act[p[k].secret] ==
			    SECRETSCAN_ACT_PH_TO_VALUE &&
			    p[k].kind == SECRETSCAN_PLACEHOLDER) ||
			    (act[p[k].secret] == SECRETSCAN_ACT_VALUE_TO_PH &&
			    p[k].kind == SECRETSCAN_VALUE);

			if (rw && p[k].len <= len - i &&
			    (best == np || p[k].len > p[best].len) &&
			    memcmp(in + i, p[k].bytes, p[k].len) == 0)
				best = k;
		}
		if (best == np) {
			tbuf_add(out, in + i, 1);
			i++;
			continue;
		}
		for (c = 0; c < np; c++)
			if (p[c].secret == p[best].secret &&
			    p[c].kind != p[best].kind)
				break;
		CU_ASSERT_FATAL(c < np);
		tbuf_add(out, p[c].bytes, p[c].len);
		i += p[best].len;
	}
	return 0;
}

/* Every match, by end offset, longest first at the same end. */
static size_t
ref_find(const struct secretscan_pattern *p, size_t np, const uint8_t *in,
    size_t len, struct secretscan_hit *hits, size_t max)
{
	size_t	e, k, l, n = 0, maxl = 0;

	for (k = 0; k < np; k++)
		if (p[k].len > maxl)
			maxl = p[k].len;
	/* Identical patterns are refused: one length per end at most. */
	for (e = 1; e <= len; e++)
		for (l = maxl; l >= SECRETSCAN_MIN_LEN; l--)
			for (k = 0; k < np; k++) {
				if (p[k].len != l || l > e ||
				    memcmp(in + e - l, p[k].bytes, l) != 0)
					continue;
				if (n == max)
					return n;
				hits[n].offset = e - l;
				hits[n].len = l;
				hits[n].pattern = k;
				hits[n].secret = p[k].secret;
				hits[n].kind = p[k].kind;
				n++;
			}
	return n;
}

/*
 * Streams in[0..len) in pieces of the given sizes (the last piece takes
 * what is left), then finishes; records the largest holdback seen.
 */
static void
stream_run(const struct secretscan *s, const struct secretscan_rules *r,
    const uint8_t *in, size_t len, const size_t *cuts, size_t ncuts,
    struct srun *res)
{
	struct secretscan_stream	*st;
	size_t				 pos = 0, n, k, held;

	memset(res, 0, sizeof(*res));
	st = secretscan_stream_new(s, r);
	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	for (k = 0; k <= ncuts; k++) {
		n = k < ncuts && cuts[k] < len - pos ? cuts[k] : len - pos;
		res->rc = secretscan_stream_feed(st, in + pos, n, tbuf_emit,
		    &res->out, &res->leak);
		pos += n;
		if (res->rc != 0)
			break;
		held = secretscan_stream_held(st);
		if (held > res->maxheld)
			res->maxheld = held;
		/* What is held is the tail of the input. */
		CU_ASSERT(held <= pos);
	}
	if (res->rc == 0)
		res->rc = secretscan_stream_finish(st, tbuf_emit, &res->out,
		    &res->leak);
	CU_ASSERT(!res->out.empty_call);
	CU_ASSERT(res->maxheld <= secretscan_maxlen(s) - 1);
	secretscan_stream_free(st);
}

/*
 * Rewrites in with the one-shot and the stream (whole, and byte by
 * byte) and checks both against the expected result; want_out NULL means
 * "unchanged".
 */
static void
check_rewrite(const struct secretscan *s, const enum secretscan_action *act,
    const uint8_t *in, size_t len, int want_rc, const uint8_t *want_out,
    size_t want_len, uint32_t want_leak)
{
	struct secretscan_rules	 r = { act, NSEC, NULL };
	struct srun		 res;
	uint8_t			*out = NULL;
	size_t			 outlen = 99, *ones, i;
	uint32_t		 leak = UINT32_MAX;
	int			 rc;

	rc = secretscan_rewrite(s, &r, in, len, &out, &outlen, &leak);
	CU_ASSERT_EQUAL(rc, want_rc);
	if (want_rc == SECRETSCAN_LEAK) {
		CU_ASSERT_EQUAL(leak, want_leak);
		CU_ASSERT_PTR_NULL(out);
	} else if (want_out == NULL) {
		CU_ASSERT_PTR_NULL(out);
		CU_ASSERT_EQUAL(outlen, 0);
	} else {
		CU_ASSERT_PTR_NOT_NULL(out);
		CU_ASSERT_EQUAL(outlen, want_len);
		if (out != NULL && outlen == want_len)
			CU_ASSERT(memcmp(out, want_out, want_len) == 0);
	}
	secretscan_out_free(out, outlen);

	if (want_out == NULL) {
		want_out = in;
		want_len = len;
	}
	ones = calloc(len + 1, sizeof(*ones));
	CU_ASSERT_PTR_NOT_NULL_FATAL(ones);
	for (i = 0; i < len; i++)
		ones[i] = 1;
	stream_run(s, &r, in, len, NULL, 0, &res);
	CU_ASSERT_EQUAL(res.rc, want_rc);
	if (want_rc == SECRETSCAN_LEAK)
		CU_ASSERT_EQUAL(res.leak, want_leak);
	if (want_rc == 0) {
		CU_ASSERT_EQUAL(res.out.len, want_len);
		CU_ASSERT(same(res.out.b, res.out.len, want_out, want_len));
	}
	free(res.out.b);
	stream_run(s, &r, in, len, ones, len, &res);
	CU_ASSERT_EQUAL(res.rc, want_rc);
	if (want_rc == 0)
		CU_ASSERT(same(res.out.b, res.out.len, want_out, want_len));
	free(res.out.b);
	free(ones);
}

/*
 * The property: for every split of in into two pieces, and (when
 * three is set) into three, the stream gives the one-shot result.
 */
static void
check_splits(const struct secretscan *s, const struct secretscan_rules *r,
    const uint8_t *in, size_t len, bool three)
{
	struct srun	 res;
	uint8_t		*out = NULL;
	const uint8_t	*want;
	size_t		 outlen = 0, wantlen, i, j, cuts[2];
	uint32_t	 leak = UINT32_MAX;
	int		 rc, bad = 0;

	rc = secretscan_rewrite(s, r, in, len, &out, &outlen, &leak);
	CU_ASSERT_FATAL(rc == 0 || rc == SECRETSCAN_LEAK);
	want = out != NULL ? out : in;
	wantlen = out != NULL ? outlen : len;
	for (i = 0; i <= len; i++)
		for (j = three ? i : len; j <= len; j++) {
			cuts[0] = i;
			cuts[1] = j - i;
			stream_run(s, r, in, len, cuts, three ? 2 : 1, &res);
			if (res.rc != rc || (rc == SECRETSCAN_LEAK &&
			    res.leak != leak) || (rc == 0 &&
			    !same(res.out.b, res.out.len, want, wantlen)))
				bad++;
			free(res.out.b);
		}
	CU_ASSERT_EQUAL(bad, 0);
	secretscan_out_free(out, outlen);
}

/* xorshift32: reproducible vectors without touching rand()'s state. */
static uint32_t
rnd(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

static void
test_new_errors(void)
{
	static const struct {
		const char	*bytes;
		size_t		 len;
		int		 kind;
		const char	*err;
	} v[] = {
		{ NULL, 8, SECRETSCAN_VALUE, "pattern 1 (secret 7): no bytes" },
		{ "1234567", 7, SECRETSCAN_VALUE,
		    "pattern 1 (secret 7): shorter than 8 bytes" },
		{ "", 0, SECRETSCAN_VALUE,
		    "pattern 1 (secret 7): shorter than 8 bytes" },
		{ "x", SECRETSCAN_MAX_LEN + 1, SECRETSCAN_VALUE,
		    "pattern 1 (secret 7): longer than 4096 bytes" },
		{ "12345678", 8, 2, "pattern 1 (secret 7): unknown kind 2" },
		{ "12345678", 8, -1, "pattern 1 (secret 7): unknown kind -1" },
		{ "good-pattern-0", 14, SECRETSCAN_PLACEHOLDER,
		    "patterns 0 (secret 3) and 1 (secret 7) are identical" },
	};
	struct secretscan_pattern	p[2];
	char				err[256];
	size_t				i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		pat(&p[0], "good-pattern-0", 3, SECRETSCAN_VALUE);
		p[1].bytes = (const uint8_t *)v[i].bytes;
		p[1].len = v[i].len;
		p[1].secret = 7;
		p[1].kind = (enum secretscan_kind)v[i].kind;
		err[0] = '\0';
		errno = 0;
		CU_ASSERT_PTR_NULL(secretscan_new(p, 2, err, sizeof(err)));
		CU_ASSERT_EQUAL(errno, EINVAL);
		CU_ASSERT_STRING_EQUAL(err, v[i].err);
		/* Errors name patterns; they never show their bytes. */
		CU_ASSERT_PTR_NULL(strstr(err, "good-pattern"));
	}
	CU_ASSERT_PTR_NULL(secretscan_new(p, 0, err, sizeof(err)));
	CU_ASSERT_STRING_EQUAL(err, "no patterns");
	CU_ASSERT_PTR_NULL(secretscan_new(NULL, 1, err, sizeof(err)));
	CU_ASSERT_STRING_EQUAL(err, "no patterns");
	CU_ASSERT_PTR_NULL(secretscan_new(p, SECRETSCAN_MAX_PATTERNS + 1, err,
	    sizeof(err)));
	CU_ASSERT_STRING_EQUAL(err, "4097 patterns, more than 4096");
}

static void
test_new_limits(void)
{
	struct secretscan_pattern	 p[5];
	struct secretscan		*s;
	uint8_t				*big;
	char				 err[256];
	size_t				 i;
	uint32_t			 x = 12345;

	/* Exactly the shortest and the longest lengths are accepted. */
	big = malloc(5 * SECRETSCAN_MAX_LEN);
	CU_ASSERT_PTR_NOT_NULL_FATAL(big);
	for (i = 0; i < 5 * SECRETSCAN_MAX_LEN; i++)
		big[i] = (uint8_t)rnd(&x);
	pat(&p[0], "12345678", 0, SECRETSCAN_VALUE);
	p[1].bytes = big;
	p[1].len = SECRETSCAN_MAX_LEN;
	p[1].secret = 0;
	p[1].kind = SECRETSCAN_PLACEHOLDER;
	s = secretscan_new(p, 2, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_EQUAL(secretscan_maxlen(s), SECRETSCAN_MAX_LEN);
	secretscan_free(s);

	/*
	 * Five 4 KiB patterns over all 256 byte values: ~20,000 states of
	 * 257 classes, beyond the 16 MiB table limit.
	 */
	for (i = 0; i < 5; i++) {
		p[i].bytes = big + i * SECRETSCAN_MAX_LEN;
		p[i].len = SECRETSCAN_MAX_LEN;
		p[i].secret = (uint32_t)i;
		p[i].kind = SECRETSCAN_VALUE;
	}
	CU_ASSERT_PTR_NULL(secretscan_new(p, 5, err, sizeof(err)));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "patterns too large together"));
	/* Two of them fit. */
	s = secretscan_new(p, 2, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL(s);
	secretscan_free(s);
	free(big);
	secretscan_free(NULL);
}

static void
test_find_single(void)
{
	struct secretscan_pattern	 p;
	struct secretscan		*s;
	struct secretscan_hit		 h[8];
	char				 err[256];

	pat(&p, "abcdefgh", 5, SECRETSCAN_PLACEHOLDER);
	s = secretscan_new(&p, 1, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);

	CU_ASSERT_EQUAL(secretscan_find(s, B("abcdefgh"), h, 8), 1);
	CU_ASSERT_EQUAL(h[0].offset, 0);
	CU_ASSERT_EQUAL(h[0].len, 8);
	CU_ASSERT_EQUAL(h[0].pattern, 0);
	CU_ASSERT_EQUAL(h[0].secret, 5);
	CU_ASSERT_EQUAL(h[0].kind, SECRETSCAN_PLACEHOLDER);
	/* At the end, at the start, twice, back to back. */
	CU_ASSERT_EQUAL(secretscan_find(s, B("xxabcdefgh"), h, 8), 1);
	CU_ASSERT_EQUAL(h[0].offset, 2);
	CU_ASSERT_EQUAL(secretscan_find(s, B("abcdefghxx"), h, 8), 1);
	CU_ASSERT_EQUAL(h[0].offset, 0);
	CU_ASSERT_EQUAL(secretscan_find(s, B("abcdefghabcdefgh"), h, 8), 2);
	CU_ASSERT_EQUAL(h[1].offset, 8);
	/* Near misses: one byte short, one byte wrong, other case. */
	CU_ASSERT_EQUAL(secretscan_find(s, B("abcdefg"), h, 8), 0);
	CU_ASSERT_EQUAL(secretscan_find(s, B("abcdefgXabcdefg"), h, 8), 0);
	CU_ASSERT_EQUAL(secretscan_find(s, B("ABCDEFGH"), h, 8), 0);
	CU_ASSERT_EQUAL(secretscan_find(s, B("aabcdefgh"), h, 8), 1);
	CU_ASSERT_EQUAL(h[0].offset, 1);
	CU_ASSERT_EQUAL(secretscan_find(s, NULL, 0, h, 8), 0);
	secretscan_free(s);

	/* A pattern that overlaps itself. */
	pat(&p, "aaaaaaaa", 0, SECRETSCAN_VALUE);
	s = secretscan_new(&p, 1, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_EQUAL(secretscan_find(s, B("aaaaaaaaaa"), h, 8), 3);
	CU_ASSERT_EQUAL(h[0].offset, 0);
	CU_ASSERT_EQUAL(h[1].offset, 1);
	CU_ASSERT_EQUAL(h[2].offset, 2);
	/* NUL and high bytes are bytes like any other. */
	secretscan_free(s);
	p.bytes = (const uint8_t *)"\0\xff\0\xff\x80\x01\0\0";
	p.len = 8;
	s = secretscan_new(&p, 1, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_EQUAL(secretscan_find(s,
	    B("\0\0\xff\0\xff\x80\x01\0\0\0"), h, 8), 1);
	CU_ASSERT_EQUAL(h[0].offset, 1);
	secretscan_free(s);
}

static void
test_find_overlapping(void)
{
	/* Each a substring, prefix or suffix of another, or overlapping. */
	static const char *const pats[] = {
		"0123456789abcdef",	/* 0 */
		"23456789",		/* 1: inside 0 */
		"89abcdef",		/* 2: suffix of 0 */
		"0123456789",		/* 3: prefix of 0 */
		"cdefghijkl",		/* 4: overlaps the end of 0 */
		"123456789abcdef",	/* 5: suffix of 0 */
	};
	struct secretscan_pattern	 p[6];
	struct secretscan		*s;
	struct secretscan_hit		 h[16];
	char				 err[256];
	size_t				 i, n;
	static const struct {
		size_t	pattern, offset;
	} want[] = {
		{ 3, 0 },	/* ends at 9 */
		{ 1, 2 },	/* ends at 9, shorter */
		{ 0, 0 },	/* ends at 15 */
		{ 5, 1 },
		{ 2, 8 },
		{ 4, 12 },	/* ends at 21 */
	};

	for (i = 0; i < 6; i++)
		pat(&p[i], pats[i], (uint32_t)i, SECRETSCAN_VALUE);
	s = secretscan_new(p, 6, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	n = secretscan_find(s, B("0123456789abcdefghijkl"), h, 16);
	CU_ASSERT_EQUAL_FATAL(n, 6);
	/* By end offset; at the same end, longest first. */
	for (i = 0; i < 6; i++) {
		CU_ASSERT_EQUAL(h[i].pattern, want[i].pattern);
		CU_ASSERT_EQUAL(h[i].offset, want[i].offset);
		CU_ASSERT_EQUAL(h[i].secret, (uint32_t)want[i].pattern);
	}
	secretscan_free(s);
}

static void
test_find_max(void)
{
	struct secretscan_pattern	 p;
	struct secretscan		*s;
	struct secretscan_hit		 h[4];
	char				 err[256];

	pat(&p, "aaaaaaaa", 0, SECRETSCAN_VALUE);
	s = secretscan_new(&p, 1, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	memset(h, 0xa5, sizeof(h));
	CU_ASSERT_EQUAL(secretscan_find(s, B("aaaaaaaaaaaaaaaaaaaa"), h, 2),
	    2);
	CU_ASSERT_EQUAL(h[1].offset, 1);
	CU_ASSERT_EQUAL(h[2].offset, (size_t)0xa5a5a5a5a5a5a5a5ULL);
	CU_ASSERT_EQUAL(secretscan_find(s, B("aaaaaaaaaaaaaaaaaaaa"), NULL,
	    0), 0);
	secretscan_free(s);
}

/* Many patterns, random text with planted matches, against ref_find. */
static void
test_find_random(void)
{
	struct secretscan_pattern	 p[64];
	struct secretscan		*s;
	struct secretscan_hit		 got[512], want[512];
	uint8_t				 pb[64][40], text[2000];
	char				 err[256];
	size_t				 i, j, k, n, m, np, round, l;
	uint32_t			 x = 0xc0ffee;
	int				 bad = 0;

	for (round = 0; round < 50; round++) {
		np = 1 + rnd(&x) % 64;
		for (i = 0; i < np; i++) {
			l = 8 + rnd(&x) % 33;
			/* A small alphabet makes overlaps common. */
			for (j = 0; j < l; j++)
				pb[i][j] = (uint8_t)('a' + rnd(&x) % 3);
			/* Some are cut from another, to nest them. */
			if (i > 0 && rnd(&x) % 3 == 0) {
				k = rnd(&x) % i;
				if (p[k].len > 8) {
					l = 8 + rnd(&x) % (p[k].len - 7);
					j = rnd(&x) % (p[k].len - l + 1);
					memcpy(pb[i], p[k].bytes + j, l);
				}
			}
			p[i].bytes = pb[i];
			p[i].len = l;
			p[i].secret = (uint32_t)i;
			p[i].kind = SECRETSCAN_VALUE;
			for (k = 0; k < i; k++)
				if (p[k].len == l &&
				    memcmp(p[k].bytes, pb[i], l) == 0)
					break;
			if (k < i) {	/* identical: try again */
				i--;
				continue;
			}
		}
		for (i = 0; i < sizeof(text); i++)
			text[i] = (uint8_t)('a' + rnd(&x) % 4);
		for (i = 0; i < 20; i++) {
			k = rnd(&x) % np;
			j = rnd(&x) % (sizeof(text) - p[k].len);
			memcpy(text + j, p[k].bytes, p[k].len);
		}
		s = secretscan_new(p, np, err, sizeof(err));
		CU_ASSERT_PTR_NOT_NULL_FATAL(s);
		n = secretscan_find(s, text, sizeof(text), got, 512);
		m = ref_find(p, np, text, sizeof(text), want, 512);
		if (n != m)
			bad++;
		for (i = 0; i < n && i < m; i++)
			if (got[i].offset != want[i].offset ||
			    got[i].len != want[i].len ||
			    got[i].pattern != want[i].pattern ||
			    got[i].secret != want[i].secret)
				bad++;
		secretscan_free(s);
	}
	CU_ASSERT_EQUAL(bad, 0);
}

static void
test_rewrite_request(void)
{
	static const enum secretscan_action act[NSEC] = {
		SECRETSCAN_ACT_PH_TO_VALUE, SECRETSCAN_ACT_PH_TO_VALUE,
		SECRETSCAN_ACT_PH_TO_VALUE, SECRETSCAN_ACT_PH_TO_VALUE,
	};
	struct secretscan	*s = fixed_set();
	char			 in[512], want[512];

	/* Whole input, at the start, at the end, in the middle. */
	check_rewrite(s, act, (const uint8_t *)PH[0], strlen(PH[0]), 0,
	    (const uint8_t *)VAL[0], strlen(VAL[0]), 0);
	snprintf(in, sizeof(in), "Bearer %s", PH[1]);
	snprintf(want, sizeof(want), "Bearer %s", VAL[1]);
	check_rewrite(s, act, (const uint8_t *)in, strlen(in), 0,
	    (const uint8_t *)want, strlen(want), 0);
	snprintf(in, sizeof(in), "%s;x=1", PH[2]);
	snprintf(want, sizeof(want), "%s;x=1", VAL[2]);
	check_rewrite(s, act, (const uint8_t *)in, strlen(in), 0,
	    (const uint8_t *)want, strlen(want), 0);
	/* Several, back to back, repeated. */
	snprintf(in, sizeof(in), "a=%s&b=%s%s&c=%s", PH[0], PH[3], PH[3],
	    PH[0]);
	snprintf(want, sizeof(want), "a=%s&b=%s%s&c=%s", VAL[0], VAL[3],
	    VAL[3], VAL[0]);
	check_rewrite(s, act, (const uint8_t *)in, strlen(in), 0,
	    (const uint8_t *)want, strlen(want), 0);
	/* A value sent to its own host is left as it is. */
	snprintf(in, sizeof(in), "k=%s&p=%s", VAL[1], PH[1]);
	snprintf(want, sizeof(want), "k=%s&p=%s", VAL[1], VAL[1]);
	check_rewrite(s, act, (const uint8_t *)in, strlen(in), 0,
	    (const uint8_t *)want, strlen(want), 0);
	/* A truncated placeholder is not one. */
	check_rewrite(s, act, (const uint8_t *)PH[0], strlen(PH[0]) - 1, 0,
	    NULL, 0, 0);
	secretscan_free(s);
}

static void
test_rewrite_response(void)
{
	static const enum secretscan_action act[NSEC] = {
		SECRETSCAN_ACT_VALUE_TO_PH, SECRETSCAN_ACT_VALUE_TO_PH,
		SECRETSCAN_ACT_VALUE_TO_PH, SECRETSCAN_ACT_VALUE_TO_PH,
	};
	struct secretscan	*s = fixed_set();
	struct tbuf		 big, bigwant;
	char			 in[512], want[512];
	size_t			 i;

	snprintf(in, sizeof(in), "{\"key\":\"%s\",\"aws\":\"%s\"}", VAL[0],
	    VAL[3]);
	snprintf(want, sizeof(want), "{\"key\":\"%s\",\"aws\":\"%s\"}",
	    PH[0], PH[3]);
	check_rewrite(s, act, (const uint8_t *)in, strlen(in), 0,
	    (const uint8_t *)want, strlen(want), 0);
	/* Placeholders in a response pass. */
	snprintf(in, sizeof(in), "echo %s", PH[2]);
	check_rewrite(s, act, (const uint8_t *)in, strlen(in), 0, NULL, 0, 0);
	/* Output much longer than the input: the buffer grows. */
	memset(&big, 0, sizeof(big));
	memset(&bigwant, 0, sizeof(bigwant));
	for (i = 0; i < 300; i++) {
		tbuf_add(&big, (const uint8_t *)VAL[2], strlen(VAL[2]));
		tbuf_add(&bigwant, (const uint8_t *)PH[2], strlen(PH[2]));
	}
	check_rewrite(s, act, big.b, big.len, 0, bigwant.b, bigwant.len, 0);
	free(big.b);
	free(bigwant.b);
	secretscan_free(s);
}

static void
test_rewrite_nothing(void)
{
	static const enum secretscan_action act[NSEC] = {
		SECRETSCAN_ACT_PH_TO_VALUE, SECRETSCAN_ACT_LEAK,
		SECRETSCAN_ACT_VALUE_TO_PH, SECRETSCAN_ACT_PH_TO_VALUE,
	};
	struct secretscan_rules	 r = { act, NSEC, NULL };
	struct secretscan	*s = fixed_set();
	uint8_t			 text[4096], *out;
	size_t			 outlen, i;
	uint32_t		 x = 7, leak;

	check_rewrite(s, act, B(""), 0, NULL, 0, 0);
	check_rewrite(s, act, B("GET /v1/models HTTP/1.1\r\n"), 0, NULL, 0,
	    0);
	/* Random bytes, NULs and all: output is the input, byte for byte. */
	for (i = 0; i < sizeof(text); i++)
		text[i] = (uint8_t)rnd(&x);
	check_rewrite(s, act, text, sizeof(text), 0, NULL, 0, 0);
	out = (uint8_t *)"junk";
	outlen = 5;
	CU_ASSERT_EQUAL(secretscan_rewrite(s, &r, text, sizeof(text), &out,
	    &outlen, &leak), 0);
	CU_ASSERT_PTR_NULL(out);
	CU_ASSERT_EQUAL(outlen, 0);
	secretscan_free(s);
}

static void
test_leaks(void)
{
	static const enum secretscan_action act[NSEC] = {
		SECRETSCAN_ACT_PH_TO_VALUE, SECRETSCAN_ACT_LEAK,
		SECRETSCAN_ACT_LEAK, SECRETSCAN_ACT_PH_TO_VALUE,
	};
	struct secretscan	*s = fixed_set();
	char			 in[512];
	size_t			 i;

	/* Each unbound secret, by value or by placeholder. */
	for (i = 1; i <= 2; i++) {
		snprintf(in, sizeof(in), "x-api-key: %s", VAL[i]);
		check_rewrite(s, act, (const uint8_t *)in, strlen(in),
		    SECRETSCAN_LEAK, NULL, 0, (uint32_t)i);
		snprintf(in, sizeof(in), "%s", PH[i]);
		check_rewrite(s, act, (const uint8_t *)in, strlen(in),
		    SECRETSCAN_LEAK, NULL, 0, (uint32_t)i);
	}
	/* Bound ones beside a leak do not save it. */
	snprintf(in, sizeof(in), "%s %s %s", PH[0], PH[2], PH[3]);
	check_rewrite(s, act, (const uint8_t *)in, strlen(in),
	    SECRETSCAN_LEAK, NULL, 0, 2);
	/* Two leaks: the one ending first is reported. */
	snprintf(in, sizeof(in), "%s&%s", VAL[2], PH[1]);
	check_rewrite(s, act, (const uint8_t *)in, strlen(in),
	    SECRETSCAN_LEAK, NULL, 0, 2);
	snprintf(in, sizeof(in), "%s&%s", PH[1], VAL[2]);
	check_rewrite(s, act, (const uint8_t *)in, strlen(in),
	    SECRETSCAN_LEAK, NULL, 0, 1);
	/* Almost a leak is none. */
	snprintf(in, sizeof(in), "%.*s", (int)strlen(VAL[1]) - 1, VAL[1]);
	check_rewrite(s, act, (const uint8_t *)in, strlen(in), 0, NULL, 0, 0);
	secretscan_free(s);
}

/*
 * A leak inside a longer match that the rules leave alone or replace:
 * VAL1 is a suffix of VAL0, VAL2 sits inside PH0.
 */
static void
test_leaks_nested(void)
{
	static const char	val0[] = "prefix-inner-secret-1";
	static const char	ph0[] =
	    "moat-ph-0123456789abcdef0123456789abcdef";
	static const char	val1[] = "inner-secret-1";
	static const char	ph1[] =
	    "moat-ph-1111111111111111111111111111111a";
	static const char	val2[] = "456789abcdef0123";
	static const char	ph2[] =
	    "moat-ph-2222222222222222222222222222222b";
	struct secretscan_pattern	 p[6];
	struct secretscan		*s;
	struct secretscan_rules		 r = { NULL, 0, NULL };
	enum secretscan_action		 act[3];
	char				 err[256];
	uint8_t				*out;
	size_t				 outlen;
	uint32_t			 leak = 99;

	pat(&p[0], val0, 0, SECRETSCAN_VALUE);
	pat(&p[1], ph0, 0, SECRETSCAN_PLACEHOLDER);
	pat(&p[2], val1, 1, SECRETSCAN_VALUE);
	pat(&p[3], ph1, 1, SECRETSCAN_PLACEHOLDER);
	pat(&p[4], val2, 2, SECRETSCAN_VALUE);
	pat(&p[5], ph2, 2, SECRETSCAN_PLACEHOLDER);
	s = secretscan_new(p, 6, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	r.action = act;
	r.nsecrets = 3;
	act[0] = SECRETSCAN_ACT_PH_TO_VALUE;
	act[1] = act[2] = SECRETSCAN_ACT_LEAK;

	/* A value to its own host passes, but it holds VAL1. */
	CU_ASSERT_EQUAL(secretscan_rewrite(s, &r, B(val0), &out, &outlen,
	    &leak), SECRETSCAN_LEAK);
	CU_ASSERT_EQUAL(leak, 1);
	check_splits(s, &r, B(val0), true);
	/* A placeholder to its own host is replaced, but it holds VAL2. */
	CU_ASSERT_EQUAL(secretscan_rewrite(s, &r, B(ph0), &out, &outlen,
	    &leak), SECRETSCAN_LEAK);
	CU_ASSERT_EQUAL(leak, 2);
	check_splits(s, &r, B(ph0), true);
	/* Secret 2 bound too: replaced; VAL2 inside it is not a candidate. */
	act[2] = SECRETSCAN_ACT_PH_TO_VALUE;
	CU_ASSERT_EQUAL(secretscan_rewrite(s, &r, B(ph0), &out, &outlen,
	    &leak), 0);
	CU_ASSERT(same(out, outlen, B(val0)));
	secretscan_out_free(out, outlen);
	/* Response: VAL0 is masked whole, VAL1 at its end is dropped. */
	act[0] = act[1] = act[2] = SECRETSCAN_ACT_VALUE_TO_PH;
	CU_ASSERT_EQUAL(secretscan_rewrite(s, &r, B(val0), &out, &outlen,
	    &leak), 0);
	CU_ASSERT(same(out, outlen, B(ph0)));
	secretscan_out_free(out, outlen);
	check_splits(s, &r, B(val0), true);
	/* VAL1 alone is masked. */
	CU_ASSERT_EQUAL(secretscan_rewrite(s, &r, B("x-inner-secret-1"), &out,
	    &outlen, &leak), 0);
	CU_ASSERT(outlen == 42 && MEMCMP_LIT(out, "x-") == 0 &&
	    memcmp(out + 2, ph1, 40) == 0);
	secretscan_out_free(out, outlen);
	secretscan_free(s);
}

/*
 * The leftmost-longest choice between candidates that overlap: all
 * placeholders here, every secret bound, values "V<n>-value".
 */
static void
test_choice(void)
{
	static const char *const ph[] = {
		"0123456789",			/* 0 */
		"23456789AB",			/* 1 */
		"0123456789ABCDEF",		/* 2: contains 0 */
		"abcdefghijklmnopqrstuvwxyz",	/* 3 */
		"bcdefghi",			/* 4: inside 3 */
		"klmnopqr",			/* 5: inside 3 */
		"WXYZwxyz",			/* 6 */
		"56789WXYZwxyzijk",		/* 7: across 0 and 6 */
		"56789PQRSTUVWXYZ",		/* 8: starts inside 0 */
		"STUVWXYZ",			/* 9: suffix of 8 */
	};
	static const struct {
		const char	*in;
		const char	*out;
	} v[] = {
		/* A shortest pattern and nothing else. */
		{ "bcdefghi", "V4-value" },
		/* 0 starts first and wins over 1. */
		{ "0123456789AB", "V0-valueAB" },
		/* Same start: the longer wins... */
		{ "0123456789ABCDEF", "V2-value" },
		/* ...if it is complete. */
		{ "0123456789ABCDE", "V0-valueABCDE" },
		{ "0123456789ABCDEx", "V0-valueABCDEx" },
		/* Pending inside a longer prefix, then settled. */
		{ "abcdefghijklmnopqrX", "aV4-valuejV5-valueX" },
		{ "abcdefghijklmnopqrstuvwxyz", "V3-value" },
		{ "abcdefghijklmnopqrstuvwxyzbcdefghi",
		    "V3-valueV4-value" },
		/*
		 * 7 starts inside 0 and ends after 6: 0 wins, then 6, and
		 * 7 is dropped although it is the longest.
		 */
		{ "0123456789WXYZwxyzijk", "V0-valueV6-valueijk" },
		/* 7 on its own, 6 inside it. */
		{ "x56789WXYZwxyzijk", "xV7-value" },
		/*
		 * 8 and 9 end at the same byte; 8, the longer, starts inside
		 * 0 and is dropped, 9 starts after 0 and is chosen.
		 */
		{ "0123456789PQRSTUVWXYZ", "V0-valuePQRV9-value" },
	};
	struct secretscan_pattern	 p[20];
	struct secretscan_rules		 r = { NULL, 0, NULL };
	struct secretscan		*s;
	enum secretscan_action		 act[10];
	char				 vals[10][16], err[256];
	uint8_t				*out;
	size_t				 i, outlen;
	uint32_t			 leak;

	for (i = 0; i < 10; i++) {
		snprintf(vals[i], sizeof(vals[i]), "V%zu-value", i);
		pat(&p[2 * i], vals[i], (uint32_t)i, SECRETSCAN_VALUE);
		pat(&p[2 * i + 1], ph[i], (uint32_t)i, SECRETSCAN_PLACEHOLDER);
		act[i] = SECRETSCAN_ACT_PH_TO_VALUE;
	}
	s = secretscan_new(p, 20, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	r.action = act;
	r.nsecrets = 10;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		out = NULL;
		outlen = 0;
		CU_ASSERT_EQUAL(secretscan_rewrite(s, &r,
		    (const uint8_t *)v[i].in, strlen(v[i].in), &out, &outlen,
		    &leak), 0);
		CU_ASSERT_PTR_NOT_NULL(out);
		if (out == NULL || outlen != strlen(v[i].out) ||
		    memcmp(out, v[i].out, outlen) != 0) {
			fprintf(stderr, "\n  vector %zu: got %.*s\n", i,
			    (int)outlen, out ? (const char *)out : "");
			CU_FAIL("leftmost-longest choice");
		}
		secretscan_out_free(out, outlen);
		check_splits(s, &r, (const uint8_t *)v[i].in,
		    strlen(v[i].in), true);
	}
	secretscan_free(s);
}

/*
 * What secretscan.h documents for a value overlapping a placeholder:
 * VAL1 here begins with the last 8 bytes of PH0.
 */
static void
test_value_placeholder_overlap(void)
{
	static const char	ph0[] =
	    "moat-ph-00112233445566778899aabbccddeeff";
	static const char	val0[] = "sk-zero-000000";
	static const char	ph1[] =
	    "moat-ph-11111111111111111111111111111111";
	static const char	val1[] = "ccddeeff-tail-xyz";
	static const char	in[] =
	    "moat-ph-00112233445566778899aabbccddeeff-tail-xyz";
	struct secretscan_pattern	 p[4];
	struct secretscan		*s;
	struct secretscan_rules		 r = { NULL, 0, NULL };
	enum secretscan_action		 act[2];
	char				 err[256];
	uint8_t				*out;
	size_t				 outlen;
	uint32_t			 leak = 99;

	pat(&p[0], val0, 0, SECRETSCAN_VALUE);
	pat(&p[1], ph0, 0, SECRETSCAN_PLACEHOLDER);
	pat(&p[2], val1, 1, SECRETSCAN_VALUE);
	pat(&p[3], ph1, 1, SECRETSCAN_PLACEHOLDER);
	s = secretscan_new(p, 4, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	r.action = act;
	r.nsecrets = 2;

	/* Request, both bound: the placeholder is replaced whole. */
	act[0] = act[1] = SECRETSCAN_ACT_PH_TO_VALUE;
	CU_ASSERT_EQUAL(secretscan_rewrite(s, &r, B(in), &out, &outlen,
	    &leak), 0);
	CU_ASSERT(outlen == strlen("sk-zero-000000-tail-xyz") &&
	    memcmp(out, "sk-zero-000000-tail-xyz", outlen) == 0);
	secretscan_out_free(out, outlen);
	check_splits(s, &r, B(in), true);
	/* Request, secret 1 unbound: its value is there, so a leak. */
	act[1] = SECRETSCAN_ACT_LEAK;
	CU_ASSERT_EQUAL(secretscan_rewrite(s, &r, B(in), &out, &outlen,
	    &leak), SECRETSCAN_LEAK);
	CU_ASSERT_EQUAL(leak, 1);
	CU_ASSERT_PTR_NULL(out);
	check_splits(s, &r, B(in), true);
	/* Response: the value is replaced, the placeholder's head stays. */
	act[0] = act[1] = SECRETSCAN_ACT_VALUE_TO_PH;
	CU_ASSERT_EQUAL(secretscan_rewrite(s, &r, B(in), &out, &outlen,
	    &leak), 0);
	CU_ASSERT(outlen == 32 + strlen(ph1) &&
	    MEMCMP_LIT(out, "moat-ph-00112233445566778899aabb") == 0 &&
	    memcmp(out + 32, ph1, strlen(ph1)) == 0);
	secretscan_out_free(out, outlen);
	check_splits(s, &r, B(in), true);
	secretscan_free(s);
}

static void
test_rules_check(void)
{
	struct secretscan_pattern	 p[3];
	struct secretscan		*s;
	struct secretscan_rules		 r = { NULL, 0, NULL };
	enum secretscan_action		 act[3];
	char				 err[256];
	uint8_t				*out = (uint8_t *)"x";
	size_t				 outlen = 1;
	uint32_t			 leak;

	pat(&p[0], "value-zero", 0, SECRETSCAN_VALUE);
	pat(&p[1], "placeholder-zero", 0, SECRETSCAN_PLACEHOLDER);
	pat(&p[2], "only-a-value-two", 2, SECRETSCAN_VALUE);
	s = secretscan_new(p, 3, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	act[0] = SECRETSCAN_ACT_PH_TO_VALUE;
	act[1] = SECRETSCAN_ACT_VALUE_TO_PH;	/* secret 1 has no patterns */
	act[2] = SECRETSCAN_ACT_LEAK;
	r.action = act;
	r.nsecrets = 3;
	CU_ASSERT_EQUAL(secretscan_rules_check(s, &r, err, sizeof(err)), 0);
	/* A value to mask needs a placeholder. */
	act[2] = SECRETSCAN_ACT_VALUE_TO_PH;
	CU_ASSERT_EQUAL(secretscan_rules_check(s, &r, err, sizeof(err)), -1);
	CU_ASSERT_STRING_EQUAL(err, "secret 2: pattern 2 is to be replaced "
	    "but the secret has no placeholder pattern");
	errno = 0;
	CU_ASSERT_PTR_NULL(secretscan_stream_new(s, &r));
	CU_ASSERT_EQUAL(errno, EINVAL);
	CU_ASSERT_EQUAL(secretscan_rewrite(s, &r, B("x"), &out, &outlen,
	    &leak), -1);
	CU_ASSERT_EQUAL(errno, EINVAL);
	CU_ASSERT_PTR_NULL(out);
	/* Nothing to replace with a placeholder to inject: fine. */
	act[2] = SECRETSCAN_ACT_PH_TO_VALUE;
	CU_ASSERT_EQUAL(secretscan_rules_check(s, &r, err, sizeof(err)), 0);
	/* Too few rules, unknown actions, none at all. */
	r.nsecrets = 2;
	CU_ASSERT_EQUAL(secretscan_rules_check(s, &r, err, sizeof(err)), -1);
	CU_ASSERT_STRING_EQUAL(err, "secret 2 has no rule (rules for 2 "
	    "secrets)");
	r.nsecrets = 3;
	act[0] = (enum secretscan_action)7;
	CU_ASSERT_EQUAL(secretscan_rules_check(s, &r, err, sizeof(err)), -1);
	CU_ASSERT_STRING_EQUAL(err, "secret 0: unknown action 7");
	r.action = NULL;
	CU_ASSERT_EQUAL(secretscan_rules_check(s, &r, err, sizeof(err)), -1);
	CU_ASSERT_STRING_EQUAL(err, "no rules");
	CU_ASSERT_EQUAL(secretscan_rules_check(s, NULL, err, sizeof(err)), -1);
	secretscan_free(s);

	/* The first value of a secret is the one injected. */
	pat(&p[0], "placeholder-one", 1, SECRETSCAN_PLACEHOLDER);
	pat(&p[1], "first-value-one", 1, SECRETSCAN_VALUE);
	pat(&p[2], "second-value-one", 1, SECRETSCAN_VALUE);
	s = secretscan_new(p, 3, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	act[0] = SECRETSCAN_ACT_LEAK;
	act[1] = SECRETSCAN_ACT_PH_TO_VALUE;
	r.action = act;
	r.nsecrets = 2;
	CU_ASSERT_EQUAL(secretscan_rewrite(s, &r, B("placeholder-one"), &out,
	    &outlen, &leak), 0);
	CU_ASSERT(outlen == 15 && MEMCMP_LIT(out, "first-value-one") == 0);
	secretscan_out_free(out, outlen);
	/* Both values are masked with the placeholder. */
	act[1] = SECRETSCAN_ACT_VALUE_TO_PH;
	CU_ASSERT_EQUAL(secretscan_rewrite(s, &r,
	    B("second-value-one first-value-one"), &out, &outlen, &leak), 0);
	CU_ASSERT(outlen == 31 && MEMCMP_LIT(out,
	    "placeholder-one placeholder-one") == 0);
	secretscan_out_free(out, outlen);
	secretscan_free(s);
}

/* Matches cut at every point across two and three feeds. */
static void
test_stream_splits(void)
{
	static const enum secretscan_action req[NSEC] = {
		SECRETSCAN_ACT_PH_TO_VALUE, SECRETSCAN_ACT_PH_TO_VALUE,
		SECRETSCAN_ACT_LEAK, SECRETSCAN_ACT_PH_TO_VALUE,
	};
	static const enum secretscan_action resp[NSEC] = {
		SECRETSCAN_ACT_VALUE_TO_PH, SECRETSCAN_ACT_VALUE_TO_PH,
		SECRETSCAN_ACT_VALUE_TO_PH, SECRETSCAN_ACT_VALUE_TO_PH,
	};
	struct secretscan_rules	 r = { req, NSEC, NULL };
	struct secretscan	*s = fixed_set();
	char			 in[512];

	snprintf(in, sizeof(in), "%s", PH[0]);
	check_splits(s, &r, (const uint8_t *)in, strlen(in), true);
	snprintf(in, sizeof(in), "a%sb%s%s.", PH[0], PH[1], PH[3]);
	check_splits(s, &r, (const uint8_t *)in, strlen(in), true);
	/* A placeholder with its head repeated, and a near miss. */
	snprintf(in, sizeof(in), "moat-ph-0011moat-ph-%s%.30s", PH[3] + 8,
	    PH[1]);
	check_splits(s, &r, (const uint8_t *)in, strlen(in), true);
	/* A leak anywhere, at any cut. */
	snprintf(in, sizeof(in), "%s..%s..%s", PH[0], VAL[2], PH[1]);
	check_splits(s, &r, (const uint8_t *)in, strlen(in), true);
	r.action = resp;
	snprintf(in, sizeof(in), "{\"a\":\"%s\",\"b\":\"%s%s\"}", VAL[0],
	    VAL[1], VAL[2]);
	check_splits(s, &r, (const uint8_t *)in, strlen(in), true);
	secretscan_free(s);
}

static void
test_stream_holdback(void)
{
	static const enum secretscan_action act[NSEC] = {
		SECRETSCAN_ACT_PH_TO_VALUE, SECRETSCAN_ACT_PH_TO_VALUE,
		SECRETSCAN_ACT_PH_TO_VALUE, SECRETSCAN_ACT_PH_TO_VALUE,
	};
	struct secretscan_rules		 r = { act, NSEC, NULL };
	struct secretscan		*s = fixed_set();
	struct secretscan_stream	*st;
	struct tbuf			 out;
	size_t				 maxlen = secretscan_maxlen(s);
	uint32_t			 leak;

	CU_ASSERT_EQUAL(maxlen, 40);
	memset(&out, 0, sizeof(out));
	st = secretscan_stream_new(s, &r);
	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	/* Bytes that cannot begin a match go out at once. */
	CU_ASSERT_EQUAL(secretscan_stream_feed(st, B("hello "), tbuf_emit,
	    &out, &leak), 0);
	CU_ASSERT_EQUAL(secretscan_stream_held(st), 0);
	CU_ASSERT(out.len == 6 && MEMCMP_LIT(out.b, "hello ") == 0);
	/* All but the last byte of a placeholder: held, maxlen - 1. */
	CU_ASSERT_EQUAL(secretscan_stream_feed(st, (const uint8_t *)PH[1],
	    39, tbuf_emit, &out, &leak), 0);
	CU_ASSERT_EQUAL(secretscan_stream_held(st), maxlen - 1);
	CU_ASSERT_EQUAL(out.len, 6);
	/* Its last byte: replaced and emitted, nothing held. */
	CU_ASSERT_EQUAL(secretscan_stream_feed(st, (const uint8_t *)PH[1] +
	    39, 1, tbuf_emit, &out, &leak), 0);
	CU_ASSERT_EQUAL(secretscan_stream_held(st), 0);
	CU_ASSERT(out.len == 6 + strlen(VAL[1]) &&
	    memcmp(out.b + 6, VAL[1], strlen(VAL[1])) == 0);
	/* A head then a wrong byte: released but for what may restart. */
	CU_ASSERT_EQUAL(secretscan_stream_feed(st, B("moat-ph-00"), tbuf_emit,
	    &out, &leak), 0);
	CU_ASSERT_EQUAL(secretscan_stream_held(st), 10);
	CU_ASSERT_EQUAL(secretscan_stream_feed(st, B("Xmoat"), tbuf_emit,
	    &out, &leak), 0);
	CU_ASSERT_EQUAL(secretscan_stream_held(st), 4);
	CU_ASSERT_EQUAL(secretscan_stream_finish(st, tbuf_emit, &out, &leak),
	    0);
	CU_ASSERT_EQUAL(secretscan_stream_held(st), 0);
	CU_ASSERT(out.len == 6 + strlen(VAL[1]) + 15 &&
	    MEMCMP_LIT(out.b + 6 + strlen(VAL[1]), "moat-ph-00Xmoat") == 0);
	CU_ASSERT(!out.empty_call);
	secretscan_stream_free(st);
	free(out.b);
	secretscan_free(s);
}

static void
test_stream_leak(void)
{
	static const enum secretscan_action act[NSEC] = {
		SECRETSCAN_ACT_PH_TO_VALUE, SECRETSCAN_ACT_LEAK,
		SECRETSCAN_ACT_PH_TO_VALUE, SECRETSCAN_ACT_PH_TO_VALUE,
	};
	struct secretscan_rules		 r = { act, NSEC, NULL };
	struct secretscan		*s = fixed_set();
	struct secretscan_stream	*st;
	struct tbuf			 out;
	char				 in[256];
	size_t				 cut, n, i, before;
	uint32_t			 leak;
	int				 rc, bad = 0;

	/* PH0, then VAL1 (a leak) cut at every point. */
	n = (size_t)snprintf(in, sizeof(in), "data=%s&key=%s&more", PH[0],
	    VAL[1]);
	for (cut = 0; cut <= n; cut++) {
		memset(&out, 0, sizeof(out));
		st = secretscan_stream_new(s, &r);
		CU_ASSERT_PTR_NOT_NULL_FATAL(st);
		leak = 99;
		rc = secretscan_stream_feed(st, (const uint8_t *)in, cut,
		    tbuf_emit, &out, &leak);
		if (rc == 0)
			rc = secretscan_stream_feed(st, (const uint8_t *)in +
			    cut, n - cut, tbuf_emit, &out, &leak);
		if (rc == 0)
			rc = secretscan_stream_finish(st, tbuf_emit, &out,
			    &leak);
		if (rc != SECRETSCAN_LEAK || leak != 1)
			bad++;
		/* No byte of the leaked value was emitted. */
		for (i = 0; i + 4 <= out.len; i++)
			if (memcmp(out.b + i, VAL[1], 4) == 0)
				bad++;
		/* Refuses more, emits nothing more. */
		before = out.len;
		leak = 99;
		if (secretscan_stream_feed(st, B("zz"), tbuf_emit, &out,
		    &leak) != SECRETSCAN_LEAK || leak != 1)
			bad++;
		if (secretscan_stream_finish(st, tbuf_emit, &out, &leak) !=
		    SECRETSCAN_LEAK || out.len != before)
			bad++;
		CU_ASSERT_EQUAL(secretscan_stream_held(st), 0);
		secretscan_stream_free(st);
		free(out.b);
	}
	CU_ASSERT_EQUAL(bad, 0);
	secretscan_free(s);
}

/*
 * Many candidates at once: a thousand placeholders in one feed, and short
 * placeholders pending inside the prefix of a long one (S = "abcdefgh",
 * L = S x 25 + "Z"), which fills the list of pending matches.
 */
static void
test_stream_many(void)
{
	static const enum secretscan_action all[NSEC] = {
		SECRETSCAN_ACT_PH_TO_VALUE, SECRETSCAN_ACT_PH_TO_VALUE,
		SECRETSCAN_ACT_PH_TO_VALUE, SECRETSCAN_ACT_PH_TO_VALUE,
	};
	struct secretscan_pattern	 p[4];
	struct secretscan_rules		 r = { NULL, 0, NULL };
	struct secretscan		*s = fixed_set();
	struct tbuf			 in, want, ref;
	struct srun			 res;
	/* NSEC entries: check_rewrite() passes rules for NSEC secrets. */
	enum secretscan_action		 act[NSEC];
	char				 err[256], lp[202];
	size_t				 i, n, cuts[16];
	uint32_t			 x = 4242, leak;

	memset(&in, 0, sizeof(in));
	memset(&want, 0, sizeof(want));
	for (i = 0; i < 1000; i++) {
		tbuf_add(&in, (const uint8_t *)PH[i % NSEC],
		    strlen(PH[i % NSEC]));
		tbuf_add(&want, (const uint8_t *)VAL[i % NSEC],
		    strlen(VAL[i % NSEC]));
		if (i % 3 == 0) {
			tbuf_add(&in, (const uint8_t *)",", 1);
			tbuf_add(&want, (const uint8_t *)",", 1);
		}
	}
	check_rewrite(s, all, in.b, in.len, 0, want.b, want.len, 0);
	secretscan_free(s);
	free(in.b);
	free(want.b);

	for (i = 0; i < 25; i++)
		MEMCPY_LIT(lp + 8 * i, "abcdefgh");
	lp[200] = 'Z';
	lp[201] = '\0';
	pat(&p[0], "abcdefgh", 0, SECRETSCAN_PLACEHOLDER);
	pat(&p[1], "S-value!", 0, SECRETSCAN_VALUE);
	pat(&p[2], lp, 1, SECRETSCAN_PLACEHOLDER);
	pat(&p[3], "L-value!", 1, SECRETSCAN_VALUE);
	s = secretscan_new(p, 4, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	for (i = 0; i < NSEC; i++)
		act[i] = SECRETSCAN_ACT_PH_TO_VALUE;
	r.action = act;
	r.nsecrets = 2;
	for (n = 24; n <= 31; n++) {
		memset(&in, 0, sizeof(in));
		for (i = 0; i < n; i++)
			tbuf_add(&in, (const uint8_t *)"abcdefgh", 8);
		tbuf_add(&in, (const uint8_t *)(n % 2 ? "Z" : "Y"), 1);
		memset(&ref, 0, sizeof(ref));
		CU_ASSERT_EQUAL(ref_rewrite(p, 4, act, in.b, in.len, &ref,
		    &leak), 0);
		/* S S ... then L where it fits: it ends at the Z. */
		if (n % 2 && n >= 25)
			CU_ASSERT(ref.len == 8 * (n - 25 + 1) &&
			    MEMCMP_LIT(ref.b + ref.len - 8, "L-value!") == 0);
		if (n % 2 == 0)
			CU_ASSERT_EQUAL(ref.len, 8 * n + 1);
		check_rewrite(s, act, in.b, in.len, 0, ref.b, ref.len, 0);
		check_splits(s, &r, in.b, in.len, false);
		for (i = 0; i < 16; i++)
			cuts[i] = rnd(&x) % 40;
		stream_run(s, &r, in.b, in.len, cuts, 16, &res);
		CU_ASSERT_EQUAL(res.rc, 0);
		CU_ASSERT(same(res.out.b, res.out.len, ref.b, ref.len));
		free(res.out.b);
		free(ref.b);
		free(in.b);
	}
	secretscan_free(s);
}

/*
 * A list of 3 slots (maxlen 12) fills up while adding a match (the
 * "bcabcabc" at 23) that overlaps one the commit making room replaces
 * (the "abcabcab" at 22).  Found by fuzz_secretscan.
 */
static void
test_stream_full_overlap(void)
{
	static const char	txt[] = "abcabcabcabcabcabcabcdabcabcabcaddcabc"
				    "abcabcabcab";
	static const char	exp[] = "VALUE-0!VALUE-1!cdVALUE-0!caddVALUE-1!"
				    "cab";
	struct secretscan_pattern	 p[6];
	struct secretscan_rules		 r = { NULL, 0, NULL };
	struct secretscan		*s;
	struct tbuf			 ref;
	enum secretscan_action		 act[NSEC];
	char				 err[256];
	size_t				 i;
	uint32_t			 leak;

	pat(&p[0], "abcabcab", 0, SECRETSCAN_PLACEHOLDER);
	pat(&p[1], "cabcabcabcab", 1, SECRETSCAN_PLACEHOLDER);
	pat(&p[2], "bcabcabc", 2, SECRETSCAN_PLACEHOLDER);
	pat(&p[3], "VALUE-0!", 0, SECRETSCAN_VALUE);
	pat(&p[4], "VALUE-1!", 1, SECRETSCAN_VALUE);
	pat(&p[5], "VALUE-2!", 2, SECRETSCAN_VALUE);
	s = secretscan_new(p, 6, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	for (i = 0; i < NSEC; i++)
		act[i] = SECRETSCAN_ACT_PH_TO_VALUE;
	memset(&ref, 0, sizeof(ref));
	CU_ASSERT_EQUAL(ref_rewrite(p, 6, act, B(txt), &ref, &leak), 0);
	CU_ASSERT(same(ref.b, ref.len, B(exp)));
	free(ref.b);
	check_rewrite(s, act, B(txt), 0, B(exp), 0);
	r.action = act;
	r.nsecrets = 3;
	check_splits(s, &r, B(txt), true);
	secretscan_free(s);
}

/* No match: the output is the input whatever the pieces. */
static void
test_stream_identity(void)
{
	static const enum secretscan_action act[NSEC] = {
		SECRETSCAN_ACT_PH_TO_VALUE, SECRETSCAN_ACT_LEAK,
		SECRETSCAN_ACT_VALUE_TO_PH, SECRETSCAN_ACT_PH_TO_VALUE,
	};
	struct secretscan_rules	 r = { act, NSEC, NULL };
	struct secretscan	*s = fixed_set();
	struct srun		 res;
	uint8_t			*text;
	size_t			 cuts[64], i, total, len = 65536;
	uint32_t		 x = 99;
	int			 round;

	text = malloc(len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	/* Random bytes with many near misses ("moat-ph-" heads). */
	for (i = 0; i < len; i++)
		text[i] = (uint8_t)rnd(&x);
	for (i = 0; i + 20 < len; i += 97)
		MEMCPY_LIT(text + i, "moat-ph-0011223");
	for (round = 0; round < 20; round++) {
		total = 0;
		for (i = 0; i < 64; i++) {
			cuts[i] = rnd(&x) % 2048;
			if (total + cuts[i] > len)
				cuts[i] = 0;
			total += cuts[i];
		}
		stream_run(s, &r, text, len, cuts, 64, &res);
		CU_ASSERT_EQUAL(res.rc, 0);
		CU_ASSERT(same(res.out.b, res.out.len, text, len));
		free(res.out.b);
	}
	free(text);
	secretscan_free(s);
}

static void
test_stream_states(void)
{
	static const enum secretscan_action act[NSEC] = {
		SECRETSCAN_ACT_PH_TO_VALUE, SECRETSCAN_ACT_PH_TO_VALUE,
		SECRETSCAN_ACT_PH_TO_VALUE, SECRETSCAN_ACT_PH_TO_VALUE,
	};
	struct secretscan_rules		 r = { act, NSEC, NULL };
	struct secretscan		*s = fixed_set();
	struct secretscan_stream	*st;
	struct tbuf			 out;
	uint32_t			 leak;

	memset(&out, 0, sizeof(out));
	st = secretscan_stream_new(s, &r);
	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	CU_ASSERT_EQUAL(secretscan_stream_feed(st, NULL, 0, tbuf_emit, &out,
	    &leak), 0);
	CU_ASSERT_EQUAL(secretscan_stream_finish(st, tbuf_emit, &out, &leak),
	    0);
	CU_ASSERT_EQUAL(out.calls, 0);
	errno = 0;
	CU_ASSERT_EQUAL(secretscan_stream_finish(st, tbuf_emit, &out, &leak),
	    -1);
	CU_ASSERT_EQUAL(errno, EINVAL);
	errno = 0;
	CU_ASSERT_EQUAL(secretscan_stream_feed(st, B("x"), tbuf_emit, &out,
	    &leak), -1);
	CU_ASSERT_EQUAL(errno, EINVAL);
	CU_ASSERT_EQUAL(out.calls, 0);
	secretscan_stream_free(st);
	secretscan_stream_free(NULL);
	secretscan_out_free(NULL, 5);
	secretscan_free(s);
}

/*
 * Random sets over a 3-letter alphabet (so patterns nest and overlap),
 * random actions, random text with planted patterns: the one-shot agrees
 * with ref_rewrite, and the stream, in random pieces, with the one-shot.
 */
static void
test_random_reference(void)
{
	struct secretscan_pattern	 p[24];
	struct secretscan		*s;
	struct secretscan_rules		 r = { NULL, 0, NULL };
	enum secretscan_action		 act[8];
	struct tbuf			 ref;
	struct srun			 res;
	uint8_t				 pb[24][24], text[RAND_TEXT_MAX];
	uint8_t				*out;
	char				 err[256];
	size_t				 np, i, j, k, l, len, outlen, cuts[8];
	uint32_t			 x = 0x5eed, leak, rleak;
	int				 round, rc, rrc, bad = 0;

	for (round = 0; round < RAND_ROUNDS; round++) {
		np = 2 + rnd(&x) % 23;
		for (i = 0; i < np; i++) {
			l = 8 + rnd(&x) % 16;
			for (j = 0; j < l; j++)
				pb[i][j] = (uint8_t)('a' + rnd(&x) % 3);
			p[i].bytes = pb[i];
			p[i].len = l;
			p[i].secret = rnd(&x) % 8;
			p[i].kind = rnd(&x) % 2 ? SECRETSCAN_PLACEHOLDER :
			    SECRETSCAN_VALUE;
			for (k = 0; k < i; k++)
				if (p[k].len == l &&
				    memcmp(p[k].bytes, pb[i], l) == 0)
					break;
			if (k < i)
				i--;
		}
		/* Every secret gets both kinds, so any action is valid. */
		for (k = 0; k < 8; k++) {
			act[k] = (enum secretscan_action)(rnd(&x) % 8 == 0 ?
			    SECRETSCAN_ACT_LEAK : 1 + rnd(&x) % 2);
		}
		s = secretscan_new(p, np, err, sizeof(err));
		CU_ASSERT_PTR_NOT_NULL_FATAL(s);
		r.action = act;
		r.nsecrets = 8;
		if (secretscan_rules_check(s, &r, err, sizeof(err)) == -1) {
			/* A secret lacks a counterpart: leak it instead. */
			for (k = 0; k < 8; k++)
				act[k] = SECRETSCAN_ACT_LEAK;
			for (i = 0; i < np; i++)
				for (j = 0; j < np; j++)
					if (p[i].secret == p[j].secret &&
					    p[i].kind != p[j].kind)
						act[p[i].secret] = 1 +
						    p[i].secret % 2;
		}
		CU_ASSERT_EQUAL_FATAL(secretscan_rules_check(s, &r, err,
		    sizeof(err)), 0);
		len = rnd(&x) % RAND_TEXT_MAX;
		for (i = 0; i < len; i++)
			text[i] = (uint8_t)('a' + rnd(&x) % 4);
		for (i = 0; len > 30 && i < 6; i++) {
			k = rnd(&x) % np;
			j = rnd(&x) % (len - p[k].len);
			memcpy(text + j, p[k].bytes, p[k].len);
		}
		memset(&ref, 0, sizeof(ref));
		rrc = ref_rewrite(p, np, act, text, len, &ref, &rleak);
		rc = secretscan_rewrite(s, &r, text, len, &out, &outlen,
		    &leak);
		if (rc != rrc || (rc == SECRETSCAN_LEAK && leak != rleak))
			bad++;
		if (rc == 0 && out == NULL && !same(ref.b, ref.len, text, len))
			bad++;
		if (rc == 0 && out != NULL &&
		    !same(ref.b, ref.len, out, outlen))
			bad++;
		secretscan_out_free(out, outlen);
		for (i = 0; i < 8; i++)
			cuts[i] = rnd(&x) % 64;
		stream_run(s, &r, text, len, cuts, 8, &res);
		if (res.rc != rrc || (rrc == SECRETSCAN_LEAK &&
		    res.leak != rleak))
			bad++;
		if (rrc == 0 && !same(res.out.b, res.out.len, ref.b, ref.len))
			bad++;
		free(res.out.b);
		free(ref.b);
		secretscan_free(s);
	}
	CU_ASSERT_EQUAL(bad, 0);
}

static void
test_placeholder(void)
{
	char	ph[64][SECRETSCAN_PLACEHOLDER_LEN + 1], small[40];
	size_t	i, j, k;

	for (i = 0; i < 64; i++) {
		CU_ASSERT_EQUAL_FATAL(secretscan_placeholder(ph[i],
		    sizeof(ph[i])), 0);
		CU_ASSERT_EQUAL(strlen(ph[i]), SECRETSCAN_PLACEHOLDER_LEN);
		CU_ASSERT(STRNCMP_LIT(ph[i], "moat-ph-") == 0);
		CU_ASSERT_EQUAL(strspn(ph[i] + 8, "0123456789abcdef"), 32);
		for (j = 0; j < i; j++)
			CU_ASSERT(strcmp(ph[i], ph[j]) != 0);
	}
	/*
	 * Every hex digit shows up both as a high and as a low nibble in
	 * 64 x 16 random bytes (missing one by chance: p < 1e-27).
	 */
	for (i = 0; i < 16; i++) {
		const char	hex[] = "0123456789abcdef";
		bool		seen[2] = { false, false };

		for (j = 0; j < 64; j++)
			for (k = 8; k < SECRETSCAN_PLACEHOLDER_LEN; k++)
				if (ph[j][k] == hex[i])
					seen[k % 2] = true;
		CU_ASSERT(seen[0] && seen[1]);
	}
	memset(small, 'x', sizeof(small));
	errno = 0;
	CU_ASSERT_EQUAL(secretscan_placeholder(small, sizeof(small)), -1);
	CU_ASSERT_EQUAL(errno, EINVAL);
	CU_ASSERT_EQUAL(small[0], '\0');
	CU_ASSERT_EQUAL(secretscan_placeholder(NULL, 64), -1);
}

static const char *const RNAME[NSEC] = { "A", "GH", "SLACK", "AWS" };

static const char *
redact_name(const void *arg, uint32_t i)
{
	(void)arg;
	return i < NSEC ? RNAME[i] : NULL;
}

/* Every value and placeholder, whatever overlaps, becomes its name. */
static void
test_redact(void)
{
	struct secretscan	*s = fixed_set();
	char			 in[512];
	char			*got;

	/* No match: NULL with errno 0, the input stands. */
	got = secretscan_redact(s, "/v1/models?x=1", redact_name, NULL);
	CU_ASSERT_PTR_NULL(got);
	CU_ASSERT_EQUAL(errno, 0);
	CU_ASSERT_PTR_NULL(secretscan_redact(s, "", redact_name, NULL));
	/* Values and placeholders, at the ends and in the middle. */
	snprintf(in, sizeof(in), "%s/p/%s?q=%s&r=%sx", PH[0], VAL[0], PH[1],
	    VAL[3]);
	got = secretscan_redact(s, in, redact_name, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(got);
	CU_ASSERT_STRING_EQUAL(got,
	    "[secret:A]/p/[secret:A]?q=[secret:GH]&r=[secret:AWS]x");
	free(got);
	/* Two adjacent matches of one secret merge; of two, they do not. */
	snprintf(in, sizeof(in), "%s%s-%s%s", PH[0], VAL[0], VAL[1], PH[2]);
	got = secretscan_redact(s, in, redact_name, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(got);
	CU_ASSERT_STRING_EQUAL(got, "[secret:A]-[secret:GH][secret:SLACK]");
	free(got);
	/* A value cut short is no match: only whole ones are known. */
	snprintf(in, sizeof(in), "%.10s", VAL[1]);
	CU_ASSERT_PTR_NULL(secretscan_redact(s, in, redact_name, NULL));
	secretscan_free(s);
}

/* KEEP: a bound secret moatd does not swap here (a body by default). */
static void
test_keep(void)
{
	struct secretscan		*s = fixed_set();
	enum secretscan_action		 act[NSEC] = { SECRETSCAN_ACT_KEEP,
					    SECRETSCAN_ACT_PH_TO_VALUE,
					    SECRETSCAN_ACT_KEEP,
					    SECRETSCAN_ACT_KEEP };
	struct secretscan_rules		 r = { act, NSEC, NULL };
	char				 in[256], want[256];
	uint8_t				*out;
	size_t				 outlen;
	uint32_t			 leak = 99;
	char				 err[128];

	CU_ASSERT_EQUAL(secretscan_rules_check(s, &r, err, sizeof(err)), 0);
	/* Only KEEP matches: nothing to do, nothing allocated. */
	snprintf(in, sizeof(in), "a=%s&b=%s", PH[0], VAL[2]);
	CU_ASSERT_EQUAL(secretscan_rewrite(s, &r, (const uint8_t *)in,
	    strlen(in), &out, &outlen, &leak), 0);
	CU_ASSERT_PTR_NULL(out);
	CU_ASSERT_EQUAL(leak, 99);
	/* Beside a swap: the KEEP placeholder stays as it is. */
	snprintf(in, sizeof(in), "a=%s&b=%s", PH[0], PH[1]);
	snprintf(want, sizeof(want), "a=%s&b=%s", PH[0], VAL[1]);
	CU_ASSERT_EQUAL(secretscan_rewrite(s, &r, (const uint8_t *)in,
	    strlen(in), &out, &outlen, &leak), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(out);
	CU_ASSERT_EQUAL(outlen, strlen(want));
	CU_ASSERT(memcmp(out, want, outlen) == 0);
	secretscan_out_free(out, outlen);
	/* An action past KEEP is refused. */
	act[0] = (enum secretscan_action)(SECRETSCAN_ACT_KEEP + 1);
	CU_ASSERT_EQUAL(secretscan_rules_check(s, &r, err, sizeof(err)), -1);
	secretscan_free(s);
}

/* Values go into a request target as %XX but for unreserved bytes. */
static void
test_pct_encode(void)
{
	static const uint8_t	 v[] = "-----BEGIN K-----\nAb+/9= x~._\r\t\x00\xff%";
	char			 out[3 * sizeof(v)];
	size_t			 n;

	n = util_pct_encode(v, sizeof(v) - 1, out);
	out[n] = '\0';
	CU_ASSERT_STRING_EQUAL(out, "-----BEGIN%20K-----%0AAb%2B%2F9%3D%20"
	    "x~._%0D%09%00%FF%25");
	CU_ASSERT_EQUAL(util_pct_encode(v, 0, out), 0);
}

/*
 * rules.replaced: set for each secret a match of which was replaced, one
 * shot and streamed, and for no other (a value left alone, a secret kept,
 * a rewrite that found nothing).
 */
static void
test_replaced(void)
{
	static const enum secretscan_action act[NSEC] = {
		SECRETSCAN_ACT_PH_TO_VALUE, SECRETSCAN_ACT_PH_TO_VALUE,
		SECRETSCAN_ACT_KEEP, SECRETSCAN_ACT_PH_TO_VALUE,
	};
	uint8_t				 rep[NSEC] = { 0, 0, 0, 0 };
	struct secretscan_rules		 r = { act, NSEC, rep };
	struct secretscan		*s = fixed_set();
	struct secretscan_stream	*st;
	struct tbuf			 t;
	uint8_t				*out;
	size_t				 outlen;
	uint32_t			 leak = 0;
	char				 in[512];

	/* PH 1 swapped; VAL 0 left as it is; PH 2 kept. */
	snprintf(in, sizeof(in), "a %s b %s c %s", VAL[0], PH[1], PH[2]);
	CU_ASSERT_EQUAL(secretscan_rewrite(s, &r, (const uint8_t *)in,
	    strlen(in), &out, &outlen, &leak), 0);
	CU_ASSERT_PTR_NOT_NULL(out);
	secretscan_out_free(out, outlen);
	CU_ASSERT(rep[0] == 0 && rep[1] == 1 && rep[2] == 0 && rep[3] == 0);
	/* Nothing to do: nothing set, and set bytes stay set. */
	CU_ASSERT_EQUAL(secretscan_rewrite(s, &r, B("plain text, no key"),
	    &out, &outlen, &leak), 0);
	CU_ASSERT(rep[0] == 0 && rep[1] == 1 && rep[2] == 0 && rep[3] == 0);
	/* A stream, PH 3 cut across two feeds. */
	memset(&t, 0, sizeof(t));
	snprintf(in, sizeof(in), "x%sy", PH[3]);
	CU_ASSERT_PTR_NOT_NULL_FATAL(st = secretscan_stream_new(s, &r));
	CU_ASSERT_EQUAL(secretscan_stream_feed(st, (const uint8_t *)in, 20,
	    tbuf_emit, &t, &leak), 0);
	CU_ASSERT_EQUAL(rep[3], 0);
	CU_ASSERT_EQUAL(secretscan_stream_feed(st, (const uint8_t *)in + 20,
	    strlen(in) - 20, tbuf_emit, &t, &leak), 0);
	CU_ASSERT_EQUAL(secretscan_stream_finish(st, tbuf_emit, &t, &leak), 0);
	CU_ASSERT_EQUAL(rep[3], 1);
	CU_ASSERT_EQUAL(rep[0], 0);
	secretscan_stream_free(st);
	free(t.b);
	secretscan_free(s);
}

/*
 * The root-state skip (vector compares of first-byte pairs, of first
 * bytes, or a table look-up a byte, by how many distinct ones the set
 * has): texts mostly of bytes in no pattern, long enough for the vector
 * loop, with whole patterns, their first bytes and near misses at every
 * offset of a 16-byte block and at the text's end, against the reference
 * rewriter, one shot and cut at random.
 */
static void
test_skip_reference(void)
{
	struct secretscan_pattern	 p[20];
	struct secretscan		*s;
	struct secretscan_rules		 r = { NULL, 0, NULL };
	enum secretscan_action		 act[4];
	struct tbuf			 ref;
	struct srun			 res;
	uint8_t				 pb[20][16], text[1200];
	uint8_t				*out;
	char				 err[256];
	size_t				 np, i, j, k, l, len, outlen, cuts[6];
	uint32_t			 x = 0xb10c, leak, rleak;
	int				 round, rc, rrc, bad = 0;

	for (round = 0; round < RAND_ROUNDS; round++) {
		/* 2..20 patterns: few or many first bytes and pairs. */
		np = 2 + (size_t)round % 19;
		for (i = 0; i < np; i++) {
			l = 8 + rnd(&x) % 8;
			pb[i][0] = (uint8_t)('A' + rnd(&x) % (round % 3 == 0 ?
			    2 : 16));
			pb[i][1] = (uint8_t)('A' + rnd(&x) % 4);
			for (j = 2; j < l; j++)
				pb[i][j] = (uint8_t)('A' + rnd(&x) % 3);
			p[i].bytes = pb[i];
			p[i].len = l;
			p[i].secret = (uint32_t)(i % 4);
			p[i].kind = i / 4 % 2 ? SECRETSCAN_PLACEHOLDER :
			    SECRETSCAN_VALUE;
			for (k = 0; k < i; k++)
				if (p[k].len == l &&
				    memcmp(p[k].bytes, pb[i], l) == 0)
					break;
			if (k < i)
				i--;
		}
		for (k = 0; k < 4; k++)
			act[k] = SECRETSCAN_ACT_KEEP;
		s = secretscan_new(p, np, err, sizeof(err));
		CU_ASSERT_PTR_NOT_NULL_FATAL(s);
		r.action = act;
		r.nsecrets = 4;
		/* Rewrite what has a counterpart; the rest is a leak. */
		for (i = 0; i < np; i++)
			for (j = 0; j < np; j++)
				if (p[i].secret == p[j].secret &&
				    p[i].kind != p[j].kind)
					act[p[i].secret] = 1 + round % 2;
		if (round % 5 == 0)
			act[round % 4] = SECRETSCAN_ACT_LEAK;
		CU_ASSERT_EQUAL_FATAL(secretscan_rules_check(s, &r, err,
		    sizeof(err)), 0);
		len = 17 + rnd(&x) % (sizeof(text) - 17);
		for (i = 0; i < len; i++)
			text[i] = (uint8_t)('a' + rnd(&x) % 26);
		for (i = 0; i < 8; i++) {
			/* A pattern, a prefix of one, or a first byte, at
			 * any offset; the last one at the very end. */
			k = rnd(&x) % np;
			l = i % 3 == 0 ? p[k].len : 1 + rnd(&x) % p[k].len;
			j = i == 7 ? len - l : rnd(&x) % (len - l + 1);
			memcpy(text + j, p[k].bytes, l);
		}
		memset(&ref, 0, sizeof(ref));
		rrc = ref_rewrite(p, np, act, text, len, &ref, &rleak);
		rc = secretscan_rewrite(s, &r, text, len, &out, &outlen,
		    &leak);
		if (rc != rrc || (rc == SECRETSCAN_LEAK && leak != rleak))
			bad++;
		if (rc == 0 && !(out == NULL ? same(ref.b, ref.len, text,
		    len) : same(ref.b, ref.len, out, outlen)))
			bad++;
		secretscan_out_free(out, outlen);
		for (i = 0; i < 6; i++)
			cuts[i] = rnd(&x) % 300;
		stream_run(s, &r, text, len, cuts, 6, &res);
		if (res.rc != rrc || (rrc == SECRETSCAN_LEAK &&
		    res.leak != rleak))
			bad++;
		if (rrc == 0 && !same(res.out.b, res.out.len, ref.b, ref.len))
			bad++;
		free(res.out.b);
		free(ref.b);
		secretscan_free(s);
	}
	CU_ASSERT_EQUAL(bad, 0);
}

/* Hits collected by test_cursor(). */
struct hits {
	struct secretscan_hit	h[32];
	size_t			n;
};

static void
hits_add(void *arg, const struct secretscan_hit *h)
{
	struct hits	*t = arg;

	if (t->n < 32)
		t->h[t->n++] = *h;
}

/*
 * The cursor scan reports, cut anywhere, what secretscan_find() finds of
 * the matches the rules act on, with message offsets; final never passes
 * the start of a match still to come.
 */
static void
test_cursor(void)
{
	static const enum secretscan_action act[NSEC] = {
		SECRETSCAN_ACT_VALUE_TO_PH, SECRETSCAN_ACT_KEEP,
		SECRETSCAN_ACT_LEAK, SECRETSCAN_ACT_VALUE_TO_PH,
	};
	struct secretscan_rules		 r = { act, NSEC, NULL };
	struct secretscan		*s = fixed_set();
	struct secretscan_cursor	 cur;
	struct secretscan_hit		 all[32];
	struct hits			 t;
	char				 in[600];
	size_t				 len, n, want, k, i, bad = 0;

	snprintf(in, sizeof(in), "..%s%s..%s..%s %s..%s", VAL[0], VAL[3],
	    VAL[1], PH[2], PH[0], VAL[2]);
	len = strlen(in);
	n = secretscan_find(s, (const uint8_t *)in, len, all, 32);
	for (want = 0, i = 0; i < n; i++)
		if (!(all[i].kind == SECRETSCAN_PLACEHOLDER &&
		    act[all[i].secret] == SECRETSCAN_ACT_VALUE_TO_PH) &&
		    act[all[i].secret] != SECRETSCAN_ACT_KEEP)
			all[want++] = all[i];
	CU_ASSERT_EQUAL(want, 4);	/* VAL 0, 3, PH 2 and VAL 2 (leaks) */
	for (k = 0; k <= len; k++) {
		memset(&t, 0, sizeof(t));
		CU_ASSERT_EQUAL_FATAL(secretscan_cursor_init(s, &r, &cur), 0);
		secretscan_scan(s, &r, &cur, (const uint8_t *)in, k, hits_add,
		    &t);
		for (i = 0; i < want; i++)
			if (all[i].offset + all[i].len > k &&
			    all[i].offset < secretscan_cursor_final(s, &cur))
				bad++;
		secretscan_scan(s, &r, &cur, (const uint8_t *)in + k, len - k,
		    hits_add, &t);
		if (t.n != want || cur.pos != len)
			bad++;
		for (i = 0; i < t.n && i < want; i++)
			if (t.h[i].offset != all[i].offset ||
			    t.h[i].len != all[i].len ||
			    t.h[i].secret != all[i].secret)
				bad++;
	}
	CU_ASSERT_EQUAL(bad, 0);
	r.nsecrets = 1;
	CU_ASSERT_EQUAL(secretscan_cursor_init(s, &r, &cur), -1);
	secretscan_free(s);
}

void
test_secretscan_register(void)
{
	CU_pSuite	s;

	s = CU_add_suite("secretscan", NULL, NULL);
	if (s == NULL)
		return;
	CU_add_test(s, "new: refused patterns", test_new_errors);
	CU_add_test(s, "new: length and table limits", test_new_limits);
	CU_add_test(s, "find: one pattern, edges", test_find_single);
	CU_add_test(s, "find: overlapping patterns", test_find_overlapping);
	CU_add_test(s, "find: stops at max", test_find_max);
	CU_add_test(s, "find: random vs naive", test_find_random);
	CU_add_test(s, "rewrite: requests", test_rewrite_request);
	CU_add_test(s, "rewrite: responses", test_rewrite_response);
	CU_add_test(s, "rewrite: nothing to do", test_rewrite_nothing);
	CU_add_test(s, "rewrite: leaks", test_leaks);
	CU_add_test(s, "rewrite: leaks inside other matches",
	    test_leaks_nested);
	CU_add_test(s, "rewrite: leftmost-longest", test_choice);
	CU_add_test(s, "rewrite: value overlapping placeholder",
	    test_value_placeholder_overlap);
	CU_add_test(s, "rules check", test_rules_check);
	CU_add_test(s, "stream: every split", test_stream_splits);
	CU_add_test(s, "stream: holdback", test_stream_holdback);
	CU_add_test(s, "stream: leak", test_stream_leak);
	CU_add_test(s, "stream: many pending matches", test_stream_many);
	CU_add_test(s, "stream: full list, overlapping match",
	    test_stream_full_overlap);
	CU_add_test(s, "stream: identity", test_stream_identity);
	CU_add_test(s, "stream: after finish", test_stream_states);
	CU_add_test(s, "random vs reference", test_random_reference);
	CU_add_test(s, "placeholder", test_placeholder);
	CU_add_test(s, "redact (audit)", test_redact);
	CU_add_test(s, "keep: neither swapped nor a leak", test_keep);
	CU_add_test(s, "percent-encoding of values", test_pct_encode);
	CU_add_test(s, "replaced: which secrets were swapped", test_replaced);
	CU_add_test(s, "skip: sparse text vs reference", test_skip_reference);
	CU_add_test(s, "cursor: hits of a scan in pieces", test_cursor);
}
