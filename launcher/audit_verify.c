/*
 * audit_verify.c - `moat audit verify FILE...`: the hash chain of
 * audit.hash_chain checked, and each break named.
 *
 * Each chained line ends in `,"seq":N,"prev":"P","hash":"H"}`: H is the
 * SHA-256 (hex) of the line as written without its `,"hash":"H"` member
 * (and without the newline), so it covers P, the hash of the line before.
 * A file begins with a "chain-start" line, whose P is the hash moatd
 * continued from (the last line of the file before, after a rotation) or
 * 64 zeros (a new chain).
 *
 * What can be told apart (README, "Tamper evidence"):
 *  - changed: a line whose H does not match its bytes (edited in place);
 *  - inserted: lines the next line skips (its P is the hash of the line
 *    before them), or a line without a hash after the chain began;
 *  - removed: a line whose P is no hash seen and whose seq jumps (the
 *    number of lines missing is the jump);
 *  - a line whose P is no hash seen while its seq follows on: the line
 *    before it was changed and its hash recomputed, or replaced;
 *  - the head removed: the first chained line is not a chain-start.
 * The tail removed cannot be seen from the file alone: the next file's
 * chain-start carries the last hash of a rotated file, and --end HASH
 * checks a hash kept elsewhere.
 *
 * SHA-256 is libmd's (Debian libmd0), loaded with dlopen() on first use:
 * the CLI links no crypto library (moat run pays for each it maps), and
 * libmd is a small one with nothing but digests.
 */
#include "config.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sha2.h>

#include "launcher/audit_cmd.h"
#include "proto/chainfmt.h"

#define VF_RING		64	/* recent lines a skipped run may span */
#define VF_LIBMD	"libmd.so.0"
#define VF_START	"\"event\":\"chain-start\""
#define VF_SHOWN	50	/* findings named one by one */

static const char	vf_zero[AUDIT_HASH_HEX + 1] =
    "0000000000000000000000000000000000000000000000000000000000000000";

struct vf_line {
	const char	*file;
	uint64_t	 lineno;
	int64_t		 seq;
	char		 hash[AUDIT_HASH_HEX + 1];
	char		 prev[AUDIT_HASH_HEX + 1];
	bool		 start;		/* a chain-start line */
	bool		 broken;	/* does not follow the line before */
};

struct audit_verify {
	FILE		*f;
	char		 start_hash[AUDIT_HASH_HEX + 1];
	char		 end_hash[AUDIT_HASH_HEX + 1];
	bool		 has_start, has_end;
	uint64_t	 end_after;	/* chained lines after the --end one */
	bool		 end_found;
	struct vf_line	 ring[VF_RING];	/* ring[(head - i) % VF_RING]:
					   the i-th newest */
	size_t		 head, nring;
	bool		 began;
	uint64_t	 lines, chained, unchained_before, problems, notes;
	struct vf_line	 last;
	char		 err[AUDIT_ERR_MAX];
	bool		 failed;	/* SHA-256 not to be had */
};

/* libmd, by dlopen(). */
static struct {
	void	*h;
	void	(*init)(SHA2_CTX *);
	void	(*update)(SHA2_CTX *, const uint8_t *, size_t);
	char	*(*end)(SHA2_CTX *, char *);
} M;

int
audit_verify_sha256(const void *const *parts, const size_t *lens,
    size_t nparts, char *out, char *err, size_t errlen)
{
	SHA2_CTX	ctx;
	size_t		i;

	if (M.h == NULL) {
		if ((M.h = dlopen(VF_LIBMD, RTLD_NOW | RTLD_LOCAL)) == NULL) {
			snprintf(err, errlen, "SHA-256 needs libmd (%s, "
			    "Debian package libmd0): %s", VF_LIBMD, dlerror());
			return -1;
		}
		*(void **)&M.init = dlsym(M.h, "SHA256Init");
		*(void **)&M.update = dlsym(M.h, "SHA256Update");
		*(void **)&M.end = dlsym(M.h, "SHA256End");
		if (M.init == NULL || M.update == NULL || M.end == NULL) {
			snprintf(err, errlen, "%s lacks SHA256Init", VF_LIBMD);
			dlclose(M.h);
			M.h = NULL;
			return -1;
		}
	}
	M.init(&ctx);
	for (i = 0; i < nparts; i++)
		M.update(&ctx, parts[i], lens[i]);
	M.end(&ctx, out);	/* lower-case hex, NUL-terminated */
	return 0;
}

struct audit_verify *
audit_verify_new(FILE *f, const char *start_hash, const char *end_hash,
    char *err, size_t errlen)
{
	struct audit_verify	*v;
	const char		*h[2] = { start_hash, end_hash };
	size_t			 i;

	for (i = 0; i < 2; i++)
		if (h[i] != NULL && (strlen(h[i]) != AUDIT_HASH_HEX ||
		    !chainfmt_hex(h[i], AUDIT_HASH_HEX))) {
			snprintf(err, errlen, "--%s: expected a hash of %d "
			    "lower-case hex digits", i == 0 ? "start" : "end",
			    AUDIT_HASH_HEX);
			return NULL;
		}
	if ((v = calloc(1, sizeof(*v))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	v->f = f;
	if (start_hash != NULL) {
		memcpy(v->start_hash, start_hash, AUDIT_HASH_HEX + 1);
		v->has_start = true;
	}
	if (end_hash != NULL) {
		memcpy(v->end_hash, end_hash, AUDIT_HASH_HEX + 1);
		v->has_end = true;
	}
	return v;
}

void
audit_verify_free(struct audit_verify *v)
{
	free(v);
}

/* One finding: "FILE:LINE: what". */
static void
vf_say(struct audit_verify *v, bool problem, const struct vf_line *at,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void
vf_say(struct audit_verify *v, bool problem, const struct vf_line *at,
    const char *fmt, ...)
{
	va_list	ap;

	if (problem)
		v->problems++;
	else
		v->notes++;
	if (v->problems + v->notes > VF_SHOWN)
		return;
	audit_cmd_puts(v->f, at->file);
	fprintf(v->f, ":%llu: %s", (unsigned long long)at->lineno,
	    problem ? "" : "note: ");
	va_start(ap, fmt);
	vfprintf(v->f, fmt, ap);
	va_end(ap);
	fprintf(v->f, "\n");
}

/* The i-th newest line of the ring (0: the newest); NULL past it. */
static struct vf_line *
vf_ring(struct audit_verify *v, size_t i)
{
	if (i >= v->nring)
		return NULL;
	return &v->ring[(v->head + VF_RING - i) % VF_RING];
}

/*
 * p does not follow q (the line before it), and the line after p
 * follows p (linked) or nothing came to say (!linked).
 */
static void
vf_break(struct audit_verify *v, struct vf_line *p, const struct vf_line *q,
    bool linked)
{
	p->broken = false;
	if (q == NULL)
		vf_say(v, true, p, "does not follow the line before it (seq "
		    "%lld): lines before it were removed, or it was inserted",
		    (long long)p->seq);
	else if (p->seq == q->seq + 1)
		vf_say(v, true, linked ? q : p, linked ? "changed: its hash "
		    "was recomputed, or the line replaced (line %llu, seq "
		    "%lld, does not follow it)" : "does not follow line %llu "
		    "(seq %lld): that line was changed (its hash recomputed), "
		    "or this one inserted", (unsigned long long)(linked ?
		    p->lineno : q->lineno), (long long)(linked ? p->seq :
		    q->seq));
	else if (p->seq > q->seq + 1)
		vf_say(v, true, p, "%lld line%s removed before this line "
		    "(seq %lld to %lld are missing after line %llu)%s",
		    (long long)(p->seq - q->seq - 1),
		    p->seq - q->seq - 1 == 1 ? "" : "s",
		    (long long)(q->seq + 1), (long long)(p->seq - 1),
		    (unsigned long long)q->lineno, linked ? "" :
		    ", or this line inserted");
	else
		vf_say(v, true, p, "out of order: seq %lld after seq %lld "
		    "(line %llu): lines moved, or copied from elsewhere",
		    (long long)p->seq, (long long)q->seq,
		    (unsigned long long)q->lineno);
}

/* Every line of the ring left broken, said as it stands. */
static void
vf_flush(struct audit_verify *v, size_t from)
{
	size_t		 i;
	struct vf_line	*p;

	for (i = v->nring; i-- > from;)
		if ((p = vf_ring(v, i))->broken)
			vf_break(v, p, vf_ring(v, i + 1), false);
}

static void
vf_push(struct audit_verify *v, const struct vf_line *l)
{
	struct vf_line	*old;

	if (v->nring == VF_RING) {
		old = vf_ring(v, VF_RING - 1);
		if (old->broken)
			vf_break(v, old, NULL, false);
		v->nring--;
	}
	v->head = (v->head + 1) % VF_RING;
	v->ring[v->head] = *l;
	v->nring++;
}

/* The first chained line of the input. */
static void
vf_begin(struct audit_verify *v, struct vf_line *l)
{
	v->began = true;
	if (v->unchained_before > 0)
		vf_say(v, false, l, "the %llu line%s before this one %s not "
		    "chained (written before audit.hash_chain was on): not "
		    "checked", (unsigned long long)v->unchained_before,
		    v->unchained_before == 1 ? "" : "s",
		    v->unchained_before == 1 ? "is" : "are");
	if (v->has_start) {
		if (strcmp(l->prev, v->start_hash) != 0)
			vf_say(v, true, l, "does not follow --start %s: lines "
			    "before it were removed", v->start_hash);
	} else if (!l->start)
		vf_say(v, true, l, "the chain does not begin here (seq %lld, "
		    "not a chain-start): the lines before it were removed, or "
		    "the file was rotated by copying (verify it after the "
		    "file before it, or give --start HASH)",
		    (long long)l->seq);
	else if (strcmp(l->prev, vf_zero) != 0)
		vf_say(v, false, l, "the chain continues from hash %s of an "
		    "earlier file (rotated): verify that file first, in the "
		    "same command, to check the link", l->prev);
	vf_push(v, l);
}

/* A chained line l, its own hash checked already. */
static void
vf_link(struct audit_verify *v, struct vf_line *l, bool self_ok)
{
	struct vf_line	*x;
	size_t		 k;

	for (k = 0; (x = vf_ring(v, k)) != NULL; k++)
		if (strcmp(x->hash, l->hash) == 0) {
			vf_say(v, true, l, "inserted: a copy of line %llu",
			    (unsigned long long)x->lineno);
			return;
		}
	for (k = 0; (x = vf_ring(v, k)) != NULL; k++)
		if (strcmp(x->hash, l->prev) == 0)
			break;
	if (x == NULL) {
		if (l->start && strcmp(l->prev, vf_zero) == 0) {
			vf_flush(v, 0);
			vf_say(v, false, l, "a new chain starts (moatd had no "
			    "hash to continue from): the lines before it are "
			    "not tied to the lines after it");
		} else
			l->broken = true;
		vf_push(v, l);
		return;
	}
	if (k > 0 && !self_ok) {
		/* A changed line that points back: it is the stranger. */
		vf_say(v, true, l, "inserted: it follows line %llu, not the "
		    "line before it", (unsigned long long)x->lineno);
		return;
	}
	if (k > 0) {
		struct vf_line	*a = vf_ring(v, k - 1), *b = vf_ring(v, 0);

		if (k == 1)
			vf_say(v, true, a, "inserted: line %llu follows line "
			    "%llu, the line before it",
			    (unsigned long long)l->lineno,
			    (unsigned long long)x->lineno);
		else
			vf_say(v, true, a, "inserted, with the %zu lines after "
			    "it (to line %llu): line %llu follows line %llu",
			    k - 1, (unsigned long long)b->lineno,
			    (unsigned long long)l->lineno,
			    (unsigned long long)x->lineno);
		v->head = (v->head + VF_RING - k) % VF_RING;
		v->nring -= k;
	}
	vf_flush(v, 1);
	if (x->broken)
		vf_break(v, x, vf_ring(v, 1), true);
	if (l->seq != x->seq + 1)
		vf_say(v, true, l, "changed: seq %lld after seq %lld, though "
		    "it follows that line", (long long)l->seq,
		    (long long)x->seq);
	vf_push(v, l);
}

/*
 * Splits a chained line into its parts; false for a line that carries
 * no chain (or not in moatd's form).  *bodylen: the bytes hashed before
 * the closing "}".
 */
static bool
vf_parse(const char *line, size_t len, struct vf_line *l, size_t *bodylen)
{
	struct chainfmt_tail	t;

	if (!chainfmt_parse(line, len, &t))
		return false;
	l->seq = t.seq;
	memcpy(l->hash, t.hash, sizeof(l->hash));
	memcpy(l->prev, t.prev, sizeof(l->prev));
	l->start = memmem(line, t.body, VF_START, sizeof(VF_START) - 1) != NULL;
	*bodylen = t.body;
	return true;
}

void
audit_verify_line(struct audit_verify *v, const char *line, size_t len,
    const struct audit_where *w)
{
	struct vf_line	 l;
	const void	*parts[2];
	size_t		 lens[2], body;
	char		 h[AUDIT_HASH_HEX + 1];
	bool		 self_ok;

	if (v->failed)
		return;
	v->lines++;
	memset(&l, 0, sizeof(l));
	l.file = w->file;
	l.lineno = w->lineno;
	if (!vf_parse(line, len, &l, &body)) {
		if (!v->began)
			v->unchained_before++;
		else
			vf_say(v, true, &l, "not chained (no hash): inserted, "
			    "or its chain fields removed");
		return;
	}
	v->chained++;
	parts[0] = line;
	lens[0] = body;
	parts[1] = "}";
	lens[1] = 1;
	if (audit_verify_sha256(parts, lens, 2, h, v->err,
	    sizeof(v->err)) == -1) {
		v->failed = true;
		return;
	}
	if (strcmp(h, l.hash) != 0)
		vf_say(v, true, &l, "changed: its content does not match its "
		    "hash");
	self_ok = strcmp(h, l.hash) == 0;
	if (v->has_end) {
		if (v->end_found)
			v->end_after++;
		else if (strcmp(l.hash, v->end_hash) == 0)
			v->end_found = true;
	}
	if (!v->began)
		vf_begin(v, &l);
	else
		vf_link(v, &l, self_ok);
	v->last = l;
}

int
audit_verify_end(struct audit_verify *v)
{
	if (v->failed) {
		fprintf(stderr, "moat audit verify: %s\n", v->err);
		return AUDIT_EXIT_ERROR;
	}
	vf_flush(v, 0);
	if (v->chained == 0) {
		fprintf(v->f, "no line carries a hash (%llu lines): not a "
		    "chained audit file (audit.hash_chain off?)\n",
		    (unsigned long long)v->lines);
		return AUDIT_EXIT_ERROR;
	}
	if (v->has_end && !v->end_found)
		vf_say(v, true, &v->last, "no line has the --end hash %s: "
		    "lines at the end were removed (or the hash is of another "
		    "chain)", v->end_hash);
	else if (v->has_end && v->end_after > 0)
		vf_say(v, false, &v->last, "%llu lines follow the --end line "
		    "(written since its hash was taken): not covered by it",
		    (unsigned long long)v->end_after);
	if (v->problems + v->notes > VF_SHOWN)
		fprintf(v->f, "... %llu findings in all\n",
		    (unsigned long long)(v->problems + v->notes));
	fprintf(v->f, "%s: %llu lines, %llu chained, the last seq %lld hash "
	    "%s\n", v->problems > 0 ? "TAMPERED" : "intact",
	    (unsigned long long)v->lines, (unsigned long long)v->chained,
	    (long long)v->last.seq, v->last.hash);
	if (v->problems > 0)
		fprintf(v->f, "%llu problem%s found\n",
		    (unsigned long long)v->problems, v->problems == 1 ? "" :
		    "s");
	return v->problems > 0 ? AUDIT_EXIT_CHANGED : AUDIT_EXIT_OK;
}

int
audit_verify_main(const struct audit_opts *o)
{
	struct audit_verify	*v;
	struct audit_in		*in;
	struct audit_where	 w;
	char			 err[AUDIT_ERR_MAX], *line;
	size_t			 i, len;
	int			 rc, bad = 0;

	if ((v = audit_verify_new(stdout, o->start_hash, o->end_hash, err,
	    sizeof(err))) == NULL) {
		fprintf(stderr, "moat audit verify: %s\n", err);
		return AUDIT_EXIT_ERROR;
	}
	for (i = 0; i < o->nfiles; i++) {
		if ((in = audit_in_open(o->files[i], err, sizeof(err))) ==
		    NULL) {
			fprintf(stderr, "moat audit verify: %s: %s\n",
			    o->files[i], err);
			bad++;
			continue;
		}
		w.file = audit_in_name(in);
		while ((rc = audit_in_line(in, &line, &len, err,
		    sizeof(err))) != 0) {
			w.lineno = audit_in_lineno(in);
			if (rc == -1) {
				fprintf(stderr, "moat audit verify: %s:%llu: "
				    "%s\n", w.file,
				    (unsigned long long)w.lineno, err);
				bad++;
				break;
			}
			if (rc == -2) {
				/* Too long to be moatd's: not its line. */
				struct vf_line l = { .file = w.file,
				    .lineno = w.lineno };

				vf_say(v, true, &l, "%s", err);
				continue;
			}
			audit_verify_line(v, line, len, &w);
		}
		audit_in_close(in);
	}
	rc = audit_verify_end(v);
	audit_verify_free(v);
	return bad > 0 ? AUDIT_EXIT_ERROR : rc;
}
