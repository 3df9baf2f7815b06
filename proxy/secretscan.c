/*
 * secretscan.c - finds secret values and placeholders in bytes and
 * rewrites them: an Aho-Corasick automaton compiled to a DFA over byte
 * classes, a streaming rewriter with a bounded holdback, the one-shot
 * rewriter built on the same code, and placeholder generation.
 *
 * No I/O (besides getrandom(2) for placeholders), no libevent, no logging:
 * the HTTP engine calls this and decides what to do with a leak.
 *
 * How the stream decides what it may emit.  After n input bytes, let d be
 * the depth of the DFA state: the longest suffix of the input that is a
 * prefix of some pattern.  A match found later ends at byte n or after and
 * is at most maxlen long, so it starts at or after
 *
 *	lo = n - min(d, maxlen - 1).
 *
 * Candidates (matches the rules replace) are kept in a list, sorted and
 * non-overlapping, that is always the leftmost-longest choice among the
 * matches found so far.  A candidate starting before lo can no longer be
 * displaced (that needs a match starting at or before it), so it is final
 * and emitted, and so are the raw bytes before lo.  What is left, [lo, n),
 * is held back: at most maxlen - 1 bytes.  Pending candidates lie in
 * [lo, n), do not overlap and are at least SECRETSCAN_MIN_LEN long, so at
 * most (maxlen - 1) / SECRETSCAN_MIN_LEN of them exist at once: the list
 * is a fixed ring, committed lazily when full (ss_candidate()) and at the
 * end of each feed.
 *
 * Leaks are returned as soon as the DFA reports them; raw bytes are only
 * emitted below lo, and lo never passes the start of a match in progress,
 * so no raw byte of a leaking match has left.
 */
#include "config.h"

#include <sys/random.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "proxy/secretscan.h"

#define SS_NONE		UINT32_MAX	/* no state, no pattern */
#define SS_HIT		0x80000000u	/* table entry: target has matches */
#define SS_CAND_SLACK	2		/* ring slots beyond the bound */
#define SS_RANDOM_TRIES	16		/* getrandom(2) calls at most */
#define SS_OUT_MIN_CAP	64		/* one-shot output slack, bytes */
#define SS_FIRST_VEC	8		/* first bytes the vector skip takes */
/* Placeholder: the prefix, then hex digits of SS_PH_RANDOM_BYTES bytes. */
#define SS_PH_PREFIX_LEN	(sizeof(SECRETSCAN_PLACEHOLDER_PREFIX) - 1)
#define SS_PH_RANDOM_BYTES	\
	((SECRETSCAN_PLACEHOLDER_LEN - SS_PH_PREFIX_LEN) / 2)

/* One compiled pattern. */
struct ss_pat {
	const uint8_t		*bytes;		/* into secretscan.bytes */
	size_t			 len;
	uint32_t		 secret;
	enum secretscan_kind	 kind;
	/* First pattern (by index) of the same secret and other kind. */
	uint32_t		 counterpart;
};

struct secretscan {
	struct ss_pat	*pats;
	size_t		 npats;
	uint8_t		*bytes;		/* every pattern's bytes, wiped */
	size_t		 nbytes;
	size_t		 maxlen;
	uint32_t	 maxsecret;
	uint8_t		 cls[256];	/* byte -> class; 0: in no pattern */
	uint32_t	 ncls;
	/*
	 * The DFA: delta[row + cls[b]] is the next row, where a row is a
	 * state number times ncls, with SS_HIT set when that state reports
	 * a match.  It spells the patterns out, so it is wiped too.
	 */
	uint32_t	*delta;
	size_t		 nstates;
	uint16_t	*depth;		/* per state: length of its string */
	uint32_t	*out;		/* per state: pattern ending there,
					   or SS_NONE */
	uint32_t	*dict;		/* per state: next suffix state with a
					   pattern, or SS_NONE */
	/*
	 * The bytes that leave the root state (the patterns' first
	 * bytes): leave[b] is 1 for each; the first SS_FIRST_VEC of them
	 * are in first[], and as many of the distinct pairs of first two
	 * bytes in pair[], for the vector skip (ss_skip()).  They spell
	 * part of the patterns: wiped with the rest.
	 */
	uint8_t		 leave[256];
	uint8_t		 first[SS_FIRST_VEC];
	uint32_t	 nfirst;
	uint8_t		 pair[SS_FIRST_VEC][2];
	uint32_t	 npairs;
};

/* A pending replacement: pattern pat at absolute input offset start. */
struct ss_cand {
	uint64_t	start;
	uint32_t	pat;
};

enum ss_status {
	SS_OPEN = 0,		/* accepting input */
	SS_LEAKED,		/* a leak was found: refuses input */
	SS_FINISHED		/* finish was called */
};

struct secretscan_stream {
	const struct secretscan		*set;
	const enum secretscan_action	*action;
	uint8_t				*replaced;	/* or NULL */
	enum ss_status			 status;
	uint32_t			 leak_secret;
	bool				 changed;	/* replaced something */
	uint32_t			 state;		/* DFA row */
	uint64_t			 pos;		/* bytes scanned */
	uint64_t			 done;		/* bytes emitted or
							   replaced */
	/* Input [done, pos) between feeds; NULL for the one-shot. */
	uint8_t				*hold;
	size_t				 holdcap;
	struct ss_cand			*cand;		/* ring, by start */
	size_t				 ccap;
	size_t				 chead;
	size_t				 ccount;
	/* Valid during one feed only. */
	uint64_t			 holdbase;	/* offset of hold[0] */
	const uint8_t			*in;
	uint64_t			 inbase;	/* offset of in[0] */
	void				(*emit)(void *, const uint8_t *,
					    size_t);
	void				*arg;
};

/* The one-shot rewriter's output. */
struct ss_out {
	uint8_t		*buf;
	size_t		 len;
	size_t		 cap;
	int		 err;		/* errno of the first failure, or 0 */
};

static void	ss_wipe(void *, size_t);
static int	ss_check_patterns(const struct secretscan_pattern *, size_t,
		    char *, size_t);
static int	ss_cmp_bytes(const void *, const void *);
static int	ss_cmp_secret(const void *, const void *);
static int	ss_counterparts(struct secretscan *, char *, size_t);
static int	ss_count_states(struct secretscan *, char *, size_t);
static void	ss_classes(struct secretscan *);
static int	ss_build(struct secretscan *, char *, size_t);
static void	ss_first(struct secretscan *);
static size_t	ss_skip(const struct secretscan *, const uint8_t *, size_t,
		    size_t);
static bool	ss_rewrites(enum secretscan_action, enum secretscan_kind);
static int	ss_stream_init(struct secretscan_stream *,
		    const struct secretscan *, const struct secretscan_rules *,
		    bool);
static void	ss_stream_clear(struct secretscan_stream *);
static struct ss_cand *ss_cand_at(struct secretscan_stream *, size_t);
static uint64_t	ss_lo(const struct secretscan_stream *);
static void	ss_emit_raw(struct secretscan_stream *, uint64_t);
static void	ss_commit(struct secretscan_stream *, uint64_t);
static void	ss_candidate(struct secretscan_stream *, uint64_t, uint32_t);
static int	ss_matches(struct secretscan_stream *, uint32_t *);
static int	ss_run(struct secretscan_stream *, const uint8_t *, size_t,
		    bool, void (*)(void *, const uint8_t *, size_t), void *,
		    uint32_t *);
static void	ss_keep(struct secretscan_stream *, const uint8_t *, size_t);
static bool	ss_relevant(const struct secretscan *,
		    const enum secretscan_action *, const uint8_t *, size_t);
static void	ss_out_emit(void *, const uint8_t *, size_t);

/*
 * Everything a set or stream holds is wiped before it is freed: pattern
 * copies, the table that spells them, held-back traffic.
 */
static void
ss_wipe(void *p, size_t n)
{
	if (p == NULL || n == 0)
		return;
#ifdef HAVE_EXPLICIT_BZERO
	explicit_bzero(p, n);
#else
	{
		volatile uint8_t *v = p;

		while (n-- > 0)
			*v++ = 0;
	}
#endif
}

static int
ss_check_patterns(const struct secretscan_pattern *p, size_t n, char *err,
    size_t errlen)
{
	size_t	i;

	if (n == 0 || p == NULL) {
		snprintf(err, errlen, "no patterns");
		return -1;
	}
	if (n > SECRETSCAN_MAX_PATTERNS) {
		snprintf(err, errlen, "%zu patterns, more than %d", n,
		    SECRETSCAN_MAX_PATTERNS);
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (p[i].bytes == NULL) {
			snprintf(err, errlen, "pattern %zu (secret %u): no "
			    "bytes", i, p[i].secret);
			return -1;
		}
		if (p[i].len < SECRETSCAN_MIN_LEN) {
			snprintf(err, errlen, "pattern %zu (secret %u): "
			    "shorter than %d bytes", i, p[i].secret,
			    SECRETSCAN_MIN_LEN);
			return -1;
		}
		if (p[i].len > SECRETSCAN_MAX_LEN) {
			snprintf(err, errlen, "pattern %zu (secret %u): "
			    "longer than %d bytes", i, p[i].secret,
			    SECRETSCAN_MAX_LEN);
			return -1;
		}
		if (p[i].kind != SECRETSCAN_VALUE &&
		    p[i].kind != SECRETSCAN_PLACEHOLDER) {
			snprintf(err, errlen, "pattern %zu (secret %u): "
			    "unknown kind %d", i, p[i].secret, (int)p[i].kind);
			return -1;
		}
	}
	return 0;
}

/* Orders pattern pointers by their bytes, a prefix first. */
static int
ss_cmp_bytes(const void *a, const void *b)
{
	const struct ss_pat	*x = *(const struct ss_pat * const *)a;
	const struct ss_pat	*y = *(const struct ss_pat * const *)b;
	int			 c;

	c = memcmp(x->bytes, y->bytes, x->len < y->len ? x->len : y->len);
	if (c != 0)
		return c;
	return x->len < y->len ? -1 : x->len > y->len;
}

/* Orders pattern pointers by secret, then by index. */
static int
ss_cmp_secret(const void *a, const void *b)
{
	const struct ss_pat	*x = *(const struct ss_pat * const *)a;
	const struct ss_pat	*y = *(const struct ss_pat * const *)b;

	if (x->secret != y->secret)
		return x->secret < y->secret ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* Sets each pattern's counterpart, and s->maxsecret. */
static int
ss_counterparts(struct secretscan *s, char *err, size_t errlen)
{
	const struct ss_pat	**v;
	size_t			  i, j, k;
	uint32_t		  first[2];

	if ((v = calloc(s->npats, sizeof(*v))) == NULL) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return -1;
	}
	for (i = 0; i < s->npats; i++)
		v[i] = &s->pats[i];
	qsort(v, s->npats, sizeof(*v), ss_cmp_secret);
	s->maxsecret = v[s->npats - 1]->secret;
	for (i = 0; i < s->npats; i = j) {
		first[SECRETSCAN_VALUE] = first[SECRETSCAN_PLACEHOLDER] =
		    SS_NONE;
		for (j = i; j < s->npats && v[j]->secret == v[i]->secret; j++)
			if (first[v[j]->kind] == SS_NONE)
				first[v[j]->kind] = (uint32_t)(v[j] - s->pats);
		for (k = i; k < j; k++)
			s->pats[v[k] - s->pats].counterpart =
			    first[v[k]->kind == SECRETSCAN_VALUE ?
			    SECRETSCAN_PLACEHOLDER : SECRETSCAN_VALUE];
	}
	free(v);
	return 0;
}

/*
 * Refuses identical patterns (a rewrite could not tell which one is
 * meant) and counts the trie's states: in sorted order each pattern adds
 * one state per byte past its common prefix with the one before it.
 */
static int
ss_count_states(struct secretscan *s, char *err, size_t errlen)
{
	const struct ss_pat	**v;
	const struct ss_pat	 *a, *b;
	size_t			  i, l;

	if ((v = calloc(s->npats, sizeof(*v))) == NULL) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return -1;
	}
	for (i = 0; i < s->npats; i++)
		v[i] = &s->pats[i];
	qsort(v, s->npats, sizeof(*v), ss_cmp_bytes);
	s->nstates = 1 + v[0]->len;
	for (i = 1; i < s->npats; i++) {
		a = v[i - 1];
		b = v[i];
		for (l = 0; l < a->len && l < b->len &&
		    a->bytes[l] == b->bytes[l]; l++)
			;
		if (l == a->len && l == b->len) {
			snprintf(err, errlen, "patterns %zu (secret %u) and "
			    "%zu (secret %u) are identical",
			    (size_t)(a < b ? a - s->pats : b - s->pats),
			    a < b ? a->secret : b->secret,
			    (size_t)(a < b ? b - s->pats : a - s->pats),
			    a < b ? b->secret : a->secret);
			free(v);
			errno = EINVAL;
			return -1;
		}
		s->nstates += b->len - l;
	}
	free(v);
	return 0;
}

/* Bytes in no pattern share class 0; each other byte has its own. */
static void
ss_classes(struct secretscan *s)
{
	bool	used[256];
	size_t	i, j;

	memset(used, 0, sizeof(used));
	for (i = 0; i < s->npats; i++)
		for (j = 0; j < s->pats[i].len; j++)
			used[s->pats[i].bytes[j]] = true;
	s->ncls = 1;
	for (i = 0; i < 256; i++)
		s->cls[i] = used[i] ? (uint8_t)s->ncls++ : 0;
}

/*
 * Builds the trie in delta (entries are state numbers, 0 meaning "no
 * child": no edge leads back to the root), then fills in failure
 * transitions breadth-first, then turns state numbers into rows.
 */
static int
ss_build(struct secretscan *s, char *err, size_t errlen)
{
	uint32_t	*fail = NULL, *queue = NULL;
	uint32_t	 u, v, f, t, c, next = 1;
	size_t		 i, j, qh = 0, qt = 0, ncells;
	int		 rc = -1;

	if (s->nstates > SECRETSCAN_MAX_TABLE_BYTES / sizeof(uint32_t) /
	    s->ncls) {
		snprintf(err, errlen, "patterns too large together: %zu "
		    "states x %u byte classes exceed the %d-byte table limit",
		    s->nstates, s->ncls, SECRETSCAN_MAX_TABLE_BYTES);
		errno = EINVAL;
		return -1;
	}
	ncells = s->nstates * s->ncls;
	if ((s->delta = calloc(ncells, sizeof(*s->delta))) == NULL ||
	    (s->depth = calloc(s->nstates, sizeof(*s->depth))) == NULL ||
	    (s->out = calloc(s->nstates, sizeof(*s->out))) == NULL ||
	    (s->dict = calloc(s->nstates, sizeof(*s->dict))) == NULL ||
	    (fail = calloc(s->nstates, sizeof(*fail))) == NULL ||
	    (queue = calloc(s->nstates, sizeof(*queue))) == NULL) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		goto out;
	}
	for (i = 0; i < s->nstates; i++)
		s->out[i] = s->dict[i] = SS_NONE;

	for (i = 0; i < s->npats; i++) {
		u = 0;
		for (j = 0; j < s->pats[i].len; j++) {
			c = s->cls[s->pats[i].bytes[j]];
			if ((v = s->delta[u * s->ncls + c]) == 0) {
				if (next == s->nstates) {
					snprintf(err, errlen, "%s: internal "
					    "error: state count", __func__);
					errno = EINVAL;
					goto out;
				}
				v = next++;
				s->delta[u * s->ncls + c] = v;
				s->depth[v] = (uint16_t)(j + 1);
			}
			u = v;
		}
		s->out[u] = (uint32_t)i;
	}

	for (c = 0; c < s->ncls; c++)
		if ((v = s->delta[c]) != 0)
			queue[qt++] = v;	/* fail[v] = 0, dict[v] none */
	while (qh < qt) {
		u = queue[qh++];
		f = fail[u];
		for (c = 0; c < s->ncls; c++) {
			t = s->delta[f * s->ncls + c];
			if ((v = s->delta[u * s->ncls + c]) == 0) {
				s->delta[u * s->ncls + c] = t;
				continue;
			}
			fail[v] = t;
			s->dict[v] = s->out[t] != SS_NONE ? t : s->dict[t];
			queue[qt++] = v;
		}
	}

	for (i = 0; i < ncells; i++) {
		t = s->delta[i];
		s->delta[i] = t * s->ncls | (s->out[t] != SS_NONE ||
		    s->dict[t] != SS_NONE ? SS_HIT : 0);
	}
	rc = 0;
 out:
	if (fail != NULL) {
		ss_wipe(fail, s->nstates * sizeof(*fail));
		free(fail);
	}
	if (queue != NULL) {
		ss_wipe(queue, s->nstates * sizeof(*queue));
		free(queue);
	}
	return rc;
}

/* The bytes that leave the root (none reports a match: patterns are
 * SECRETSCAN_MIN_LEN long at least). */
static void
ss_first(struct secretscan *s)
{
	const uint8_t	*pb;
	unsigned int	 b;
	size_t		 i, k;

	for (b = 0; b < 256; b++) {
		if (s->delta[s->cls[b]] == 0)
			continue;
		s->leave[b] = 1;
		if (s->nfirst < SS_FIRST_VEC)
			s->first[s->nfirst] = (uint8_t)b;
		s->nfirst++;
	}
	for (i = 0; i < s->npats; i++) {
		pb = s->pats[i].bytes;	/* SECRETSCAN_MIN_LEN bytes at least */
		for (k = 0; k < s->npairs && k < SS_FIRST_VEC; k++)
			if (s->pair[k][0] == pb[0] && s->pair[k][1] == pb[1])
				break;
		if (k < s->npairs && k < SS_FIRST_VEC)
			continue;
		if (s->npairs < SS_FIRST_VEC) {
			s->pair[s->npairs][0] = pb[0];
			s->pair[s->npairs][1] = pb[1];
		}
		s->npairs++;
	}
}

/*
 * In the root state, the bytes that lead back to it need no table step:
 * returns the first i' >= i at which a match may begin, or len; the
 * state at i' is the root still.  Most traffic is such bytes, so this is
 * where a scan spends its time.  With at most SS_FIRST_VEC distinct
 * pairs of first two bytes (a sandbox with a few secrets: its
 * placeholders all begin with "mo"), 16 positions are compared at once
 * (SSE2), against both bytes: a position whose two bytes begin no
 * pattern cannot begin a match, and the DFA would be back in the root
 * (or in a state the next position gives) after it.  Else with at most
 * SS_FIRST_VEC first bytes, against those.  Else, and for the last
 * bytes, one table look-up a byte, with no dependency from one byte to
 * the next (the DFA's steps each wait for the one before).
 */
static size_t
ss_skip(const struct secretscan *s, const uint8_t *in, size_t i, size_t len)
{
#if defined(__SSE2__)
	__m128i		a[SS_FIRST_VEC], b[SS_FIRST_VEC], v0, v1, m;
	uint32_t	k, n = s->npairs;
	int		bits;

	if (n >= 1 && n <= SS_FIRST_VEC && len - i > 16) {
		for (k = 0; k < n; k++) {
			a[k] = _mm_set1_epi8((char)s->pair[k][0]);
			b[k] = _mm_set1_epi8((char)s->pair[k][1]);
		}
		for (; len - i > 16; i += 16) {
			v0 = _mm_loadu_si128((const __m128i *)(const void *)
			    (in + i));
			v1 = _mm_loadu_si128((const __m128i *)(const void *)
			    (in + i + 1));
			m = _mm_and_si128(_mm_cmpeq_epi8(v0, a[0]),
			    _mm_cmpeq_epi8(v1, b[0]));
			for (k = 1; k < n; k++)
				m = _mm_or_si128(m, _mm_and_si128(
				    _mm_cmpeq_epi8(v0, a[k]),
				    _mm_cmpeq_epi8(v1, b[k])));
			if ((bits = _mm_movemask_epi8(m)) != 0)
				return i + (size_t)__builtin_ctz((unsigned)bits);
		}
	} else if ((n = s->nfirst) >= 1 && n <= SS_FIRST_VEC &&
	    len - i >= 16) {
		for (k = 0; k < n; k++)
			a[k] = _mm_set1_epi8((char)s->first[k]);
		for (; len - i >= 16; i += 16) {
			v0 = _mm_loadu_si128((const __m128i *)(const void *)
			    (in + i));
			m = _mm_cmpeq_epi8(v0, a[0]);
			for (k = 1; k < n; k++)
				m = _mm_or_si128(m, _mm_cmpeq_epi8(v0, a[k]));
			if ((bits = _mm_movemask_epi8(m)) != 0)
				return i + (size_t)__builtin_ctz((unsigned)bits);
		}
	}
#endif
	while (len - i >= 4 && !(s->leave[in[i]] | s->leave[in[i + 1]] |
	    s->leave[in[i + 2]] | s->leave[in[i + 3]]))
		i += 4;
	while (i < len && !s->leave[in[i]])
		i++;
	return i;
}

struct secretscan *
secretscan_new(const struct secretscan_pattern *p, size_t n, char *err,
    size_t errlen)
{
	struct secretscan	*s = NULL;
	size_t			 i, off = 0;

	if (ss_check_patterns(p, n, err, errlen) == -1) {
		errno = EINVAL;
		return NULL;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL ||
	    (s->pats = calloc(n, sizeof(*s->pats))) == NULL)
		goto nomem;
	s->npats = n;
	for (i = 0; i < n; i++)
		s->nbytes += p[i].len;	/* <= 4096 * 4096: no overflow */
	if ((s->bytes = malloc(s->nbytes)) == NULL)
		goto nomem;
	for (i = 0; i < n; i++) {
		memcpy(s->bytes + off, p[i].bytes, p[i].len);
		s->pats[i].bytes = s->bytes + off;
		s->pats[i].len = p[i].len;
		s->pats[i].secret = p[i].secret;
		s->pats[i].kind = p[i].kind;
		off += p[i].len;
		if (p[i].len > s->maxlen)
			s->maxlen = p[i].len;
	}
	if (ss_counterparts(s, err, errlen) == -1 ||
	    ss_count_states(s, err, errlen) == -1)
		goto fail;
	ss_classes(s);
	if (ss_build(s, err, errlen) == -1)
		goto fail;
	ss_first(s);
	return s;
 nomem:
	snprintf(err, errlen, "out of memory");
	errno = ENOMEM;
 fail:
	{
		int	saved = errno;

		secretscan_free(s);
		errno = saved;
	}
	return NULL;
}

void
secretscan_free(struct secretscan *s)
{
	if (s == NULL)
		return;
	ss_wipe(s->bytes, s->nbytes);
	free(s->bytes);
	if (s->delta != NULL)
		ss_wipe(s->delta, s->nstates * s->ncls * sizeof(*s->delta));
	free(s->delta);
	if (s->depth != NULL)
		ss_wipe(s->depth, s->nstates * sizeof(*s->depth));
	free(s->depth);
	if (s->out != NULL)
		ss_wipe(s->out, s->nstates * sizeof(*s->out));
	free(s->out);
	if (s->dict != NULL)
		ss_wipe(s->dict, s->nstates * sizeof(*s->dict));
	free(s->dict);
	if (s->pats != NULL)
		ss_wipe(s->pats, s->npats * sizeof(*s->pats));
	free(s->pats);
	ss_wipe(s, sizeof(*s));
	free(s);
}

size_t
secretscan_maxlen(const struct secretscan *s)
{
	return s->maxlen;
}

size_t
secretscan_find(const struct secretscan *s, const uint8_t *buf, size_t len,
    struct secretscan_hit *hits, size_t max)
{
	const struct ss_pat	*p;
	uint32_t		 st = 0, e, x;
	size_t			 i, n = 0;

	if (max == 0)
		return 0;
	for (i = 0; i < len; i++) {
		if (st == 0 && (i = ss_skip(s, buf, i, len)) == len)
			break;
		e = s->delta[st + s->cls[buf[i]]];
		st = e & ~SS_HIT;
		if ((e & SS_HIT) == 0)
			continue;
		x = st / s->ncls;
		if (s->out[x] == SS_NONE)
			x = s->dict[x];
		for (; x != SS_NONE; x = s->dict[x]) {
			p = &s->pats[s->out[x]];
			hits[n].offset = i + 1 - p->len;
			hits[n].len = p->len;
			hits[n].pattern = s->out[x];
			hits[n].secret = p->secret;
			hits[n].kind = p->kind;
			if (++n == max)
				return n;
		}
	}
	return n;
}

/* Whether action a replaces the matches of patterns of kind k. */
static bool
ss_rewrites(enum secretscan_action a, enum secretscan_kind k)
{
	return (a == SECRETSCAN_ACT_PH_TO_VALUE &&
	    k == SECRETSCAN_PLACEHOLDER) ||
	    (a == SECRETSCAN_ACT_VALUE_TO_PH && k == SECRETSCAN_VALUE);
}

int
secretscan_rules_check(const struct secretscan *s,
    const struct secretscan_rules *r, char *err, size_t errlen)
{
	const struct ss_pat	*p;
	unsigned int		 a;
	size_t			 i;

	if (r == NULL || r->action == NULL) {
		snprintf(err, errlen, "no rules");
		return -1;
	}
	if ((size_t)s->maxsecret >= r->nsecrets) {
		snprintf(err, errlen, "secret %u has no rule (rules for %zu "
		    "secrets)", s->maxsecret, r->nsecrets);
		return -1;
	}
	for (i = 0; i < s->npats; i++) {
		p = &s->pats[i];
		a = (unsigned int)r->action[p->secret];
		if (a > SECRETSCAN_ACT_KEEP) {
			snprintf(err, errlen, "secret %u: unknown action %u",
			    p->secret, a);
			return -1;
		}
		if (ss_rewrites(a, p->kind) && p->counterpart == SS_NONE) {
			snprintf(err, errlen, "secret %u: pattern %zu is to be "
			    "replaced but the secret has no %s pattern",
			    p->secret, i, p->kind == SECRETSCAN_VALUE ?
			    "placeholder" : "value");
			return -1;
		}
	}
	return 0;
}

/* Sets up st; with hold false it can only be run once, to the end. */
static int
ss_stream_init(struct secretscan_stream *st, const struct secretscan *s,
    const struct secretscan_rules *r, bool hold)
{
	char	err[160];

	memset(st, 0, sizeof(*st));
	if (secretscan_rules_check(s, r, err, sizeof(err)) == -1) {
		errno = EINVAL;
		return -1;
	}
	st->set = s;
	st->action = r->action;
	st->replaced = r->replaced;
	st->ccap = (s->maxlen - 1) / SECRETSCAN_MIN_LEN + SS_CAND_SLACK;
	if ((st->cand = calloc(st->ccap, sizeof(*st->cand))) == NULL) {
		errno = ENOMEM;
		return -1;
	}
	if (hold) {
		st->holdcap = s->maxlen - 1;
		if ((st->hold = malloc(st->holdcap)) == NULL) {
			free(st->cand);
			st->cand = NULL;
			errno = ENOMEM;
			return -1;
		}
	}
	return 0;
}

/* Wipes and frees what st holds, leaving st itself. */
static void
ss_stream_clear(struct secretscan_stream *st)
{
	if (st->hold != NULL) {
		ss_wipe(st->hold, st->holdcap);
		free(st->hold);
		st->hold = NULL;
	}
	if (st->cand != NULL) {
		ss_wipe(st->cand, st->ccap * sizeof(*st->cand));
		free(st->cand);
		st->cand = NULL;
	}
}

static struct ss_cand *
ss_cand_at(struct secretscan_stream *st, size_t k)
{
	return &st->cand[(st->chead + k) % st->ccap];
}

/* The earliest offset at which a match not yet found may start. */
static uint64_t
ss_lo(const struct secretscan_stream *st)
{
	const struct secretscan	*s = st->set;
	size_t			 d;

	d = s->depth[st->state / s->ncls];
	if (d > s->maxlen - 1)
		d = s->maxlen - 1;
	return st->pos - d;
}

/*
 * Emits input [done, upto) unchanged.  During a feed these bytes are in
 * hold (below inbase) or in the caller's input.
 */
static void
ss_emit_raw(struct secretscan_stream *st, uint64_t upto)
{
	uint64_t	a = st->done, end;

	if (upto <= a)
		return;
	if (a < st->inbase) {
		end = upto < st->inbase ? upto : st->inbase;
		st->emit(st->arg, st->hold + (a - st->holdbase),
		    (size_t)(end - a));
		a = end;
	}
	if (a < upto)
		st->emit(st->arg, st->in + (a - st->inbase),
		    (size_t)(upto - a));
	st->done = upto;
}

/* Replaces, in order, every pending candidate that starts before lo. */
static void
ss_commit(struct secretscan_stream *st, uint64_t lo)
{
	const struct ss_pat	*p, *r;
	struct ss_cand		*c;

	while (st->ccount > 0) {
		c = ss_cand_at(st, 0);
		if (c->start >= lo)
			break;
		p = &st->set->pats[c->pat];
		r = &st->set->pats[p->counterpart];
		ss_emit_raw(st, c->start);
		st->emit(st->arg, r->bytes, r->len);
		st->done = c->start + p->len;
		st->changed = true;
		if (st->replaced != NULL)
			st->replaced[p->secret] = 1;
		st->chead = (st->chead + 1) % st->ccap;
		st->ccount--;
	}
}

/*
 * Adds the match of pattern pat at start, found with the greatest end so
 * far, to the leftmost-longest choice.  Matches already in the list end
 * no later, so the ones it overlaps are a tail of the list.  If the first
 * of them starts before it, that one wins and the new match is dropped;
 * otherwise the new match starts no later than all of them and is longer
 * than any starting at the same byte (identical patterns are refused), so
 * it replaces the whole tail.
 */
static void
ss_candidate(struct secretscan_stream *st, uint64_t start, uint32_t pat)
{
	const struct ss_pat	*pats = st->set->pats;
	struct ss_cand		*c;
	uint64_t		 final;
	size_t			 lo, hi, mid;

	if (st->ccount == st->ccap) {
		/*
		 * Make room.  This match and the shorter ones ending at the
		 * same byte are not in the list yet, so only candidates
		 * starting before it are final, as well as before lo: a
		 * maxlen-long match starts at lo - 1 and displaces one
		 * starting there.
		 */
		final = ss_lo(st);
		ss_commit(st, start < final ? start : final);
	}
	/* After the commit: it may have replaced what this overlaps. */
	if (start < st->done)
		return;
	lo = 0;
	hi = st->ccount;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = ss_cand_at(st, mid);
		if (c->start + pats[c->pat].len > start)
			hi = mid;
		else
			lo = mid + 1;
	}
	if (lo < st->ccount && ss_cand_at(st, lo)->start < start)
		return;
	st->ccount = lo;
	if (st->ccount == st->ccap)
		abort();	/* broken invariant: see the file comment */
	c = ss_cand_at(st, st->ccount++);
	c->start = start;
	c->pat = pat;
}

/* Handles the matches the DFA state reports after byte st->pos - 1. */
static int
ss_matches(struct secretscan_stream *st, uint32_t *leak_secret)
{
	const struct secretscan	*s = st->set;
	const struct ss_pat	*p;
	enum secretscan_action	 a;
	uint32_t		 x;

	x = st->state / s->ncls;
	if (s->out[x] == SS_NONE)
		x = s->dict[x];
	for (; x != SS_NONE; x = s->dict[x]) {
		p = &s->pats[s->out[x]];
		a = st->action[p->secret];
		if (a == SECRETSCAN_ACT_LEAK) {
			st->status = SS_LEAKED;
			st->leak_secret = p->secret;
			*leak_secret = p->secret;
			return SECRETSCAN_LEAK;
		}
		if (ss_rewrites(a, p->kind))
			ss_candidate(st, st->pos - p->len, s->out[x]);
	}
	return 0;
}

/* Keeps input [done, pos) for the next feed, in hold. */
static void
ss_keep(struct secretscan_stream *st, const uint8_t *in, size_t len)
{
	size_t	old, n = (size_t)(st->pos - st->done);

	if (n > st->holdcap)
		abort();	/* broken invariant: see the file comment */
	if (st->done < st->inbase) {
		old = (size_t)(st->inbase - st->done);
		memmove(st->hold, st->hold + (st->done - st->holdbase), old);
		if (len > 0)
			memcpy(st->hold + old, in, len);
	} else if (n > 0)
		memcpy(st->hold, in + (st->done - st->inbase), n);
}

/* Feeds in[0..len); with final, also ends the input. */
static int
ss_run(struct secretscan_stream *st, const uint8_t *in, size_t len,
    bool final, void (*emit)(void *, const uint8_t *, size_t), void *arg,
    uint32_t *leak_secret)
{
	const struct secretscan	*s = st->set;
	const uint32_t		*delta = s->delta;
	const uint8_t		*cls = s->cls;
	uint64_t		 lo;
	uint32_t		 state, e;
	size_t			 i;

	if (st->status == SS_LEAKED) {
		*leak_secret = st->leak_secret;
		return SECRETSCAN_LEAK;
	}
	if (st->status == SS_FINISHED) {
		errno = EINVAL;
		return -1;
	}
	st->emit = emit;
	st->arg = arg;
	st->in = in;
	st->inbase = st->pos;
	st->holdbase = st->done;
	state = st->state;
	for (i = 0; i < len; i++) {
		if (state == 0 && (i = ss_skip(s, in, i, len)) == len)
			break;
		e = delta[state + cls[in[i]]];
		state = e & ~SS_HIT;
		if ((e & SS_HIT) == 0)
			continue;
		st->state = state;
		st->pos = st->inbase + i + 1;
		if (ss_matches(st, leak_secret) == SECRETSCAN_LEAK)
			return SECRETSCAN_LEAK;
	}
	st->state = state;
	st->pos = st->inbase + len;

	/* Pending candidates left by the commit all start at lo or later. */
	lo = final ? st->pos : ss_lo(st);
	ss_commit(st, lo);
	ss_emit_raw(st, lo);
	if (final)
		st->status = SS_FINISHED;
	else
		ss_keep(st, in, len);
	st->in = NULL;
	st->emit = NULL;
	st->arg = NULL;
	return 0;
}

struct secretscan_stream *
secretscan_stream_new(const struct secretscan *s,
    const struct secretscan_rules *r)
{
	struct secretscan_stream	*st;

	if ((st = malloc(sizeof(*st))) == NULL)
		return NULL;
	if (ss_stream_init(st, s, r, true) == -1) {
		free(st);
		return NULL;
	}
	return st;
}

int
secretscan_stream_feed(struct secretscan_stream *st, const uint8_t *in,
    size_t len, void (*emit)(void *, const uint8_t *, size_t), void *arg,
    uint32_t *leak_secret)
{
	return ss_run(st, in, len, false, emit, arg, leak_secret);
}

int
secretscan_stream_finish(struct secretscan_stream *st,
    void (*emit)(void *, const uint8_t *, size_t), void *arg,
    uint32_t *leak_secret)
{
	return ss_run(st, NULL, 0, true, emit, arg, leak_secret);
}

size_t
secretscan_stream_held(const struct secretscan_stream *st)
{
	if (st->status != SS_OPEN)
		return 0;
	return (size_t)(st->pos - st->done);
}

void
secretscan_stream_free(struct secretscan_stream *st)
{
	if (st == NULL)
		return;
	ss_stream_clear(st);
	ss_wipe(st, sizeof(*st));
	free(st);
}

int
secretscan_cursor_init(const struct secretscan *s,
    const struct secretscan_rules *r, struct secretscan_cursor *cur)
{
	char	err[160];

	memset(cur, 0, sizeof(*cur));
	if (secretscan_rules_check(s, r, err, sizeof(err)) == -1) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

void
secretscan_scan(const struct secretscan *s, const struct secretscan_rules *r,
    struct secretscan_cursor *cur, const uint8_t *in, size_t len,
    void (*hit)(void *, const struct secretscan_hit *), void *arg)
{
	const struct ss_pat	*p;
	struct secretscan_hit	 h;
	enum secretscan_action	 a;
	uint32_t		 state = cur->state, e, x;
	size_t			 i;

	for (i = 0; i < len; i++) {
		if (state == 0 && (i = ss_skip(s, in, i, len)) == len)
			break;
		e = s->delta[state + s->cls[in[i]]];
		state = e & ~SS_HIT;
		if ((e & SS_HIT) == 0)
			continue;
		x = state / s->ncls;
		if (s->out[x] == SS_NONE)
			x = s->dict[x];
		for (; x != SS_NONE; x = s->dict[x]) {
			p = &s->pats[s->out[x]];
			a = r->action[p->secret];
			if (a != SECRETSCAN_ACT_LEAK && !ss_rewrites(a, p->kind))
				continue;
			h.offset = (size_t)(cur->pos + i + 1 - p->len);
			h.len = p->len;
			h.pattern = s->out[x];
			h.secret = p->secret;
			h.kind = p->kind;
			hit(arg, &h);
		}
	}
	cur->state = state;
	cur->pos += len;
}

uint64_t
secretscan_cursor_final(const struct secretscan *s,
    const struct secretscan_cursor *cur)
{
	size_t	d = s->depth[cur->state / s->ncls];

	if (d > s->maxlen - 1)
		d = s->maxlen - 1;
	return cur->pos - d;
}

/*
 * Whether buf has any match the rules act on (a leak or a candidate), so
 * that the common case, nothing to do, costs one pass and no memory.
 */
static bool
ss_relevant(const struct secretscan *s, const enum secretscan_action *act,
    const uint8_t *buf, size_t len)
{
	const struct ss_pat	*p;
	uint32_t		 st = 0, e, x;
	size_t			 i;

	for (i = 0; i < len; i++) {
		if (st == 0 && (i = ss_skip(s, buf, i, len)) == len)
			break;
		e = s->delta[st + s->cls[buf[i]]];
		st = e & ~SS_HIT;
		if ((e & SS_HIT) == 0)
			continue;
		x = st / s->ncls;
		if (s->out[x] == SS_NONE)
			x = s->dict[x];
		for (; x != SS_NONE; x = s->dict[x]) {
			p = &s->pats[s->out[x]];
			if (act[p->secret] == SECRETSCAN_ACT_LEAK ||
			    ss_rewrites(act[p->secret], p->kind))
				return true;
		}
	}
	return false;
}

/* Appends to the one-shot output; a grown buffer never leaves a copy. */
static void
ss_out_emit(void *arg, const uint8_t *buf, size_t n)
{
	struct ss_out	*o = arg;
	uint8_t		*nb;
	size_t		 cap;

	if (o->err != 0)
		return;
	if (n > SIZE_MAX - o->len) {
		o->err = EINVAL;
		return;
	}
	if (o->len + n > o->cap) {
		cap = o->cap > 0 ? o->cap : SS_OUT_MIN_CAP;
		while (cap < o->len + n)
			cap = cap > SIZE_MAX / 2 ? o->len + n : cap * 2;
		if ((nb = malloc(cap)) == NULL) {
			o->err = ENOMEM;
			return;
		}
		if (o->len > 0)
			memcpy(nb, o->buf, o->len);
		ss_wipe(o->buf, o->len);
		free(o->buf);
		o->buf = nb;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, buf, n);
	o->len += n;
}

int
secretscan_rewrite(const struct secretscan *s,
    const struct secretscan_rules *r, const uint8_t *in, size_t len,
    uint8_t **out, size_t *outlen, uint32_t *leak_secret)
{
	struct secretscan_stream	st;
	struct ss_out			o;
	char				err[160];
	int				rc;

	*out = NULL;
	*outlen = 0;
	if (secretscan_rules_check(s, r, err, sizeof(err)) == -1) {
		errno = EINVAL;
		return -1;
	}
	if (!ss_relevant(s, r->action, in, len))
		return 0;
	if (ss_stream_init(&st, s, r, false) == -1)
		return -1;
	memset(&o, 0, sizeof(o));
	o.cap = len < SIZE_MAX - SS_OUT_MIN_CAP ? len + SS_OUT_MIN_CAP : len;
	if ((o.buf = malloc(o.cap)) == NULL) {
		ss_stream_clear(&st);
		errno = ENOMEM;
		return -1;
	}
	rc = ss_run(&st, in, len, true, ss_out_emit, &o, leak_secret);
	ss_stream_clear(&st);
	ss_wipe(&st, sizeof(st));
	if (rc == 0 && o.err != 0) {
		errno = o.err;
		rc = -1;
	}
	if (rc != 0) {
		ss_wipe(o.buf, o.len);
		free(o.buf);
		return rc;
	}
	*out = o.buf;
	*outlen = o.len;
	return 0;
}

/* Marks, per byte of in, the secret (plus one) of a match covering it. */
static uint32_t *
ss_cover(const struct secretscan *s, const uint8_t *in, size_t len)
{
	const struct ss_pat	*p;
	uint32_t		 st = 0, e, x, *cov = NULL;
	size_t			 i, j;

	for (i = 0; i < len; i++) {
		e = s->delta[st + s->cls[in[i]]];
		st = e & ~SS_HIT;
		if ((e & SS_HIT) == 0)
			continue;
		if (cov == NULL && (cov = calloc(len, sizeof(*cov))) == NULL)
			return NULL;
		x = st / s->ncls;
		if (s->out[x] == SS_NONE)
			x = s->dict[x];
		for (; x != SS_NONE; x = s->dict[x]) {
			p = &s->pats[s->out[x]];
			for (j = i + 1 - p->len; j <= i; j++)
				if (cov[j] == 0)
					cov[j] = p->secret + 1;
		}
	}
	return cov;
}

char *
secretscan_redact(const struct secretscan *s, const char *in,
    const char *(*name)(const void *, uint32_t), const void *arg)
{
	const uint8_t	*b = (const uint8_t *)in;
	uint32_t	*cov;
	size_t		 len = strlen(in), i, n = 0, k;
	char		*out, *o;
	const char	*nm;
	int		 pass;

	errno = 0;
	if ((cov = ss_cover(s, b, len)) == NULL)
		return NULL;	/* no match, or errno ENOMEM */
	/* Two passes: the size, then the bytes. */
	for (pass = 0, out = NULL; pass < 2; pass++) {
		o = out;
		for (i = 0, k = 0; i < len; i++) {
			if (cov[i] == 0) {
				if (o != NULL)
					*o++ = in[i];
				k++;
				continue;
			}
			if (i > 0 && cov[i - 1] == cov[i])
				continue;
			if ((nm = name(arg, cov[i] - 1)) == NULL)
				nm = "?";
			if (o != NULL)
				o += sprintf(o, "[secret:%s]", nm);
			k += strlen(nm) + 9;
		}
		if (pass == 0) {
			n = k;
			if ((out = malloc(n + 1)) == NULL) {
				free(cov);
				errno = ENOMEM;
				return NULL;
			}
		} else
			*o = '\0';
	}
	free(cov);
	return out;
}

void
secretscan_out_free(uint8_t *out, size_t len)
{
	if (out == NULL)
		return;
	ss_wipe(out, len);
	free(out);
}

int
secretscan_placeholder(char *buf, size_t len)
{
	static const char	 hex[] = "0123456789abcdef";
	uint8_t			 rnd[SS_PH_RANDOM_BYTES];
	size_t			 got = 0, i;
	ssize_t			 n;
	int			 tries, saved;

	if (buf != NULL && len > 0)
		buf[0] = '\0';
	if (buf == NULL || len < SECRETSCAN_PLACEHOLDER_LEN + 1) {
		errno = EINVAL;
		return -1;
	}
	for (tries = 0; got < sizeof(rnd); tries++) {
		if (tries == SS_RANDOM_TRIES) {
			errno = EAGAIN;
			goto fail;
		}
		n = getrandom(rnd + got, sizeof(rnd) - got, 0);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		got += (size_t)n;
	}
	memcpy(buf, SECRETSCAN_PLACEHOLDER_PREFIX, SS_PH_PREFIX_LEN);
	for (i = 0; i < sizeof(rnd); i++) {
		buf[SS_PH_PREFIX_LEN + 2 * i] = hex[rnd[i] >> 4];
		buf[SS_PH_PREFIX_LEN + 2 * i + 1] = hex[rnd[i] & 0x0f];
	}
	buf[SECRETSCAN_PLACEHOLDER_LEN] = '\0';
	ss_wipe(rnd, sizeof(rnd));
	return 0;
 fail:
	saved = errno;
	ss_wipe(rnd, sizeof(rnd));
	errno = saved;
	return -1;
}
