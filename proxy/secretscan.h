/*
 * secretscan.h - finding secrets and their placeholders in traffic, and
 * rewriting them.
 *
 * A sandbox never holds a real secret (DESIGN.md invariant 7): it gets,
 * per secret, a random placeholder.  On a request to a host a secret is
 * bound to, moatd swaps the placeholder for the value; a request that
 * carries a value or a placeholder to a host the secret is not bound to is
 * a leak; in a response, a value the upstream echoes is swapped back for
 * the placeholder.  This module is the engine that finds and rewrites:
 * bytes in, bytes out through a callback, no I/O, no libevent, no logging.
 *
 * Patterns are compiled once into a DFA (Aho-Corasick with byte classes),
 * so scanning costs one table step per input byte whatever the number of
 * patterns, plus one step per match reported.  In the root state, the
 * bytes that cannot begin a match need no step: they are skipped 16 at a
 * time (SSE2) when the patterns begin with at most 8 distinct pairs of
 * bytes, or 8 distinct bytes (a sandbox's placeholders all begin with
 * "mo"), else one table look-up each, without the DFA's chain of
 * dependent loads.
 *
 * What is rewritten, exactly (the same for the stream and the one-shot
 * helper, whatever the pieces the input arrives in):
 *
 *  1. Each match is classified by the action for its pattern's secret:
 *     - SECRETSCAN_ACT_LEAK: any match of the secret, value or
 *       placeholder, is a leak, even where it overlaps other matches;
 *     - SECRETSCAN_ACT_PH_TO_VALUE: a placeholder match is a candidate,
 *       replaced with the secret's value; a value match is left as it is;
 *     - SECRETSCAN_ACT_VALUE_TO_PH: a value match is a candidate, replaced
 *       with the secret's placeholder; a placeholder match is left alone;
 *     - SECRETSCAN_ACT_KEEP: every match is left alone.
 *     "The secret's value" is the secret's first SECRETSCAN_VALUE pattern
 *     in the order given to secretscan_new() (its "counterpart"), likewise
 *     for the placeholder.
 *  2. If there is any leak match, the result is SECRETSCAN_LEAK with the
 *     secret of the leak match that ends first (among those ending at the
 *     same byte, the longest); nothing is rewritten.
 *  3. Otherwise candidates are chosen leftmost-longest and never overlap:
 *     reading the input from the start, at each position where candidates
 *     begin the longest one is replaced and reading resumes after its last
 *     byte; a candidate overlapping one already chosen is ignored.  Bytes
 *     not in a chosen candidate are copied unchanged.
 *
 * So when a value and a placeholder overlap: if either one's secret is
 * LEAK for this traffic, the input is a leak, whatever else matched.
 * Otherwise a match the rules leave alone is no candidate: with the usual
 * rules (a request: PH_TO_VALUE or LEAK per secret; a response:
 * VALUE_TO_PH for all) only one of the two is a candidate, and it is
 * replaced whole, the other remaining as whatever is left of it outside
 * the replaced bytes.  Two overlapping candidates (two placeholders, two
 * values, or one pattern overlapping itself): the one starting first
 * wins; at the same start, the longer.  tests/unit/test_secretscan.c has
 * a vector for each case.
 *
 * Not covered: the output is not scanned again, so a replacement that,
 * with the bytes around it, spells another pattern is not caught.  Nothing
 * here decodes (base64, percent-encoding, compression): encoded forms are
 * found only if given as patterns of their own.
 */
#ifndef MOAT_SECRETSCAN_H
#define MOAT_SECRETSCAN_H

#include <stddef.h>
#include <stdint.h>

#define SECRETSCAN_MIN_LEN	8	/* shortest pattern, bytes */
#define SECRETSCAN_MAX_LEN	4096	/* longest pattern, bytes */
#define SECRETSCAN_MAX_PATTERNS	4096	/* patterns in one set */
/* Largest transition table one set may use, bytes. */
#define SECRETSCAN_MAX_TABLE_BYTES	(16 * 1024 * 1024)

#define SECRETSCAN_PLACEHOLDER_PREFIX	"moat-ph-"
/* Length of a placeholder: the prefix and 32 hex digits, no NUL. */
#define SECRETSCAN_PLACEHOLDER_LEN	40

/* Return value of the rewriters: the input leaks a secret. */
#define SECRETSCAN_LEAK		1

enum secretscan_kind {
	SECRETSCAN_VALUE = 0,		/* the real secret */
	SECRETSCAN_PLACEHOLDER		/* what the sandbox holds instead */
};

struct secretscan_pattern {
	const uint8_t		*bytes;
	size_t			 len;		/* MIN_LEN..MAX_LEN bytes */
	uint32_t		 secret;	/* the caller's number */
	enum secretscan_kind	 kind;
};

struct secretscan_hit {
	size_t			 offset;	/* first byte of the match */
	size_t			 len;		/* its length */
	size_t			 pattern;	/* index in secretscan_new() */
	uint32_t		 secret;
	enum secretscan_kind	 kind;
};

/*
 * What to do, per secret, with the matches of its patterns.  The zero
 * value is LEAK so that rules left unset fail closed.
 */
enum secretscan_action {
	SECRETSCAN_ACT_LEAK = 0,	/* request to a host not bound to it */
	SECRETSCAN_ACT_PH_TO_VALUE,	/* request to a host bound to it */
	SECRETSCAN_ACT_VALUE_TO_PH,	/* response */
	SECRETSCAN_ACT_KEEP		/* neither replaced nor a leak (a bound
					   secret where moatd does not swap) */
};

/*
 * action[i] is the action for secret i; every secret of the set must be
 * below nsecrets.  replaced, if not NULL, has nsecrets bytes: the
 * rewriters set replaced[i] to 1 when they replace a match of secret i
 * (so that a caller knows which values it put into a request), and
 * never clear it.  The arrays are borrowed: they must outlive every
 * stream made with them.
 */
struct secretscan_rules {
	const enum secretscan_action	*action;
	size_t				 nsecrets;
	uint8_t				*replaced;
};

struct secretscan;
struct secretscan_stream;

/*
 * Compiles the n patterns p[0..n).  The bytes are copied (p may be wiped
 * as soon as this returns) and the copies are wiped with explicit_bzero()
 * by secretscan_free().  Refused, with a message in err that names
 * patterns by index and secret number and never shows their bytes: n of 0
 * or above SECRETSCAN_MAX_PATTERNS, a NULL p or bytes, a length outside
 * SECRETSCAN_MIN_LEN..SECRETSCAN_MAX_LEN, an unknown kind, two identical
 * patterns, or a set needing more than SECRETSCAN_MAX_TABLE_BYTES of
 * table.  Returns the set (caller frees with secretscan_free()), or NULL
 * with err set (errno ENOMEM when memory ran out, else EINVAL).
 * The table takes 4 bytes x (trie states, at most the total pattern
 * length + 1) x (distinct bytes in the patterns + 1): about 100 KiB for
 * 5 secrets with 40-byte values and their placeholders.  A set is never
 * changed after this returns, so threads may share it.
 */
struct secretscan	*secretscan_new(const struct secretscan_pattern *p,
			    size_t n, char *err, size_t errlen);

/* Wipes everything the set holds and frees it.  NULL is ok. */
void	 secretscan_free(struct secretscan *s);

/* Length of the longest pattern of s. */
size_t	 secretscan_maxlen(const struct secretscan *s);

/*
 * Finds every match of every pattern in buf[0..len), overlapping ones
 * included, and stores the first max of them in hits[0..max), in order of
 * the offset of their last byte; matches ending at the same byte come
 * longest first.  hits may be NULL when max is 0.  Returns the number
 * stored (at most max).
 */
size_t	 secretscan_find(const struct secretscan *s, const uint8_t *buf,
	    size_t len, struct secretscan_hit *hits, size_t max);

/*
 * Checks that r can drive rewriting with s: every secret of s below
 * r->nsecrets, every action known, and a counterpart pattern for every
 * pattern the rules rewrite (a value for placeholders to replace, a
 * placeholder for values).  Returns 0, or -1 with a message in err.  The
 * rewriters run the same check and fail with errno EINVAL.
 */
int	 secretscan_rules_check(const struct secretscan *s,
	    const struct secretscan_rules *r, char *err, size_t errlen);

/*
 * Starts rewriting one body (one direction of one message).  s and r (and
 * r->action) are borrowed and must outlive the stream.  Returns the stream
 * (caller frees with secretscan_stream_free()), or NULL with errno EINVAL
 * (rules fail secretscan_rules_check()) or ENOMEM.  Memory: the holdback
 * (maxlen - 1 bytes) and a fixed list of pending matches (16 bytes x
 * ((maxlen - 1) / SECRETSCAN_MIN_LEN + 2)), where maxlen is
 * secretscan_maxlen(s).
 */
struct secretscan_stream	*secretscan_stream_new(
				    const struct secretscan *s,
				    const struct secretscan_rules *r);

/*
 * Feeds in[0..len) (in may be NULL when len is 0).  Rewritten output that
 * can no longer change is passed, in order, to emit(arg, bytes, n) (the
 * bytes are borrowed for the call; n is never 0), possibly in several
 * calls; the rest (at most secretscan_maxlen(s) - 1 bytes of input that
 * may still begin a match) is held back for the next feed.
 * Returns 0; or SECRETSCAN_LEAK with the secret in *leak_secret (rule 2
 * above, counted over all input fed so far): no input byte from the
 * start of the leaking match on has been emitted as it is (the
 * replacement of a candidate starting before it may have been), output
 * before it may have been, and the caller must abort the message; or -1
 * with errno EINVAL if called after secretscan_stream_finish().  After a
 * leak every feed and finish returns SECRETSCAN_LEAK again and emits
 * nothing.
 */
int	 secretscan_stream_feed(struct secretscan_stream *st,
	    const uint8_t *in, size_t len,
	    void (*emit)(void *, const uint8_t *, size_t), void *arg,
	    uint32_t *leak_secret);

/*
 * Ends the input: emits what was held back, rewritten.  The concatenated
 * output of all feeds and the finish is exactly what secretscan_rewrite()
 * gives for the concatenated input.  Returns 0, SECRETSCAN_LEAK as for
 * feed, or -1 with errno EINVAL if called twice.
 */
int	 secretscan_stream_finish(struct secretscan_stream *st,
	    void (*emit)(void *, const uint8_t *, size_t), void *arg,
	    uint32_t *leak_secret);

/* Bytes currently held back by st (never more than maxlen - 1). */
size_t	 secretscan_stream_held(const struct secretscan_stream *st);

/* Wipes the holdback and frees st.  NULL is ok. */
void	 secretscan_stream_free(struct secretscan_stream *st);

/*
 * Finding without rewriting, for bytes the caller keeps and moves itself
 * (a body whose length is fixed: the caller masks what is found in
 * place of copying every byte through a stream).  A cursor is where one
 * message's scan stands: zeroed by secretscan_cursor_init() at the
 * message's start.
 */
struct secretscan_cursor {
	uint32_t	state;		/* DFA row */
	uint64_t	pos;		/* bytes of the message scanned */
};

/*
 * Starts a message.  Returns 0, or -1 with errno EINVAL if r fails
 * secretscan_rules_check() (secretscan_scan() does not check it again).
 */
int	 secretscan_cursor_init(const struct secretscan *s,
	    const struct secretscan_rules *r, struct secretscan_cursor *cur);

/*
 * Scans in[0..len), the message's next bytes, and calls hit(arg, h) for
 * every match the rules act on (a leak, or a candidate: a match the
 * rules replace), overlapping ones included, in order of their last
 * byte (matches ending at the same byte: longest first); h->offset
 * counts from the message's first byte, so a match may begin in bytes
 * given to an earlier call.  h is borrowed for the call.  Never fails.
 */
void	 secretscan_scan(const struct secretscan *s,
	    const struct secretscan_rules *r, struct secretscan_cursor *cur,
	    const uint8_t *in, size_t len,
	    void (*hit)(void *, const struct secretscan_hit *), void *arg);

/*
 * The message offset before which every match has been reported: one
 * found later begins at this offset or after (it is cur->pos less the
 * longest suffix of what was scanned that may begin a pattern, at most
 * the longest pattern less one byte).
 */
uint64_t secretscan_cursor_final(const struct secretscan *s,
	    const struct secretscan_cursor *cur);

/*
 * Rewrites in[0..len) at once (a header value, a query string).  Returns
 * 0 with *out set to a malloc'd copy of the rewritten bytes and their
 * length in *outlen (the caller wipes and frees it with
 * secretscan_out_free()), or with *out NULL and *outlen 0 when nothing
 * was rewritten: the input stands as it is.  Returns SECRETSCAN_LEAK with
 * the secret in *leak_secret and *out NULL, or -1 with *out NULL and
 * errno ENOMEM, or EINVAL (rules failing secretscan_rules_check(), or an
 * output too large for size_t).  Allocates nothing when no match is a
 * leak or a candidate (the common case costs one pass over in).
 */
int	 secretscan_rewrite(const struct secretscan *s,
	    const struct secretscan_rules *r, const uint8_t *in, size_t len,
	    uint8_t **out, size_t *outlen, uint32_t *leak_secret);

/*
 * For the audit log: returns a copy of the NUL-terminated string in where
 * every byte inside a match of any pattern of s (a value or a placeholder,
 * whatever the rules) is gone, each run of such bytes written as
 * "[secret:NAME]" with NAME from name(arg, secret) of the match that
 * covers the run's first byte (a new run starts where that secret
 * changes).  Returns NULL with errno 0 when in holds no match (in may be
 * used as it is), the copy (free it with free(): it holds no secret), or
 * NULL with errno ENOMEM.
 */
char	*secretscan_redact(const struct secretscan *s, const char *in,
	    const char *(*name)(const void *, uint32_t), const void *arg);

/* Wipes len bytes of out and frees it.  NULL is ok. */
void	 secretscan_out_free(uint8_t *out, size_t len);

/*
 * Writes a new placeholder, SECRETSCAN_PLACEHOLDER_PREFIX followed by 32
 * lower-case hex digits from getrandom(2), and a NUL, into buf.  Returns
 * 0, or -1 with errno EINVAL if len < SECRETSCAN_PLACEHOLDER_LEN + 1 or
 * the error of getrandom(2) (buf is then an empty string if len > 0).
 */
int	 secretscan_placeholder(char *buf, size_t len);

#endif /* MOAT_SECRETSCAN_H */
