/*
 * metrics.c - moatd's counters and their text exposition (metrics.h).
 *
 * Every counter of every family lives at an index of one array, and
 * each thread that counts has its own copy of the array (struct mthr):
 * only it writes there, with a relaxed load and store.  A scrape adds
 * the copies up and subtracts the baseline (M.base): when the place of a
 * sandbox name, or a series, is given to another, what it counted so
 * far becomes the baseline of its indices, so the new owner starts at
 * zero and no thread has to be asked to clear anything.
 *
 * The registry (the names, the series, the baselines, the list of
 * threads) is under M.mu.  A thread looks a name or a series up there
 * once and keeps the answer in its caches (direct-mapped, small); an
 * entry for a sandbox name stays valid while the generation of its
 * place (M.gen, the one value workers read that another thread writes,
 * and only when the place changes hands) is the one it saw.  The
 * generation of other moves whenever a name gets a place, so that a
 * name cached as other while every place was taken is looked up again.
 *
 * Not here: what is worth counting (the callers), the HTTP listener
 * (metrics_http.c).
 */
#include "config.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy/policy.h"
#include "proxy/audit.h"
#include "proxy/metrics.h"
#include "proxy/quota.h"
#include "proto/drops_proto.h"

/* Histogram buckets, upper bounds in seconds (and their text). */
#define METRICS_NBUCKETS	16
static const uint64_t	metrics_bucket_ns[METRICS_NBUCKETS] = {
	100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000,
	25000000, 50000000, 100000000, 250000000, 500000000, 1000000000,
	2500000000ull, 5000000000ull, 10000000000ull,
};
static const char *const metrics_bucket_txt[METRICS_NBUCKETS] = {
	"0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01",
	"0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10",
};
#define METRICS_HSTRIDE		(METRICS_NBUCKETS + 2)	/* + Inf, sum */

#define METRICS_KINDS		5	/* enum moat_listen_proto */
#define METRICS_RCODES		7	/* NOERROR..REFUSED, then other */
#define METRICS_DNS_STRIDE	(METRICS_RCODES + 1)	/* + addresses */
#define METRICS_VERDICTS	3	/* allow, deny, would-deny */
#define METRICS_DEC_OVF		(METRICS_VERDICTS * POLICY_R__COUNT)

/* Per-thread caches (entries; powers of two). */
#define METRICS_NAME_CACHE	256
#define METRICS_SERIES_CACHE	1024
#define METRICS_SECRET_CACHE	64

/* Series keys: family, generation and place of the sandbox, rule,
 * verdict, reason.  Never 0 (the family is 1 or 2). */
#define KEY_DEC			1ull
#define KEY_BYTES		2ull
#define KEY(fam, gen, slot, ridx, v, reason)				\
	((uint64_t)(fam) << 62 | ((uint64_t)(gen) & 0xffffff) << 38 |	\
	((uint64_t)(slot) & 0x3fff) << 24 | ((uint64_t)(ridx) & 0xfff) << 12 | \
	((uint64_t)(v) & 0xf) << 8 | ((uint64_t)(reason) & 0xff))
#define KEY_SLOT(k)		((uint32_t)((k) >> 24 & 0x3fff))
#define KEY_RIDX(k)		((uint32_t)((k) >> 12 & 0xfff))
#define KEY_V(k)		((unsigned)((k) >> 8 & 0xf))
#define KEY_REASON(k)		((unsigned)((k) & 0xff))

#define METRICS_SLOTS_MAX	10000	/* fits KEY's 14 bits, + other */
#define METRICS_RULES_MAX	1000	/* fits KEY's 12 bits, + 2 */

/* moat_metrics_folded_total's labels, and the other single counters. */
enum {
	MISC_FOLD_SANDBOX = 0, MISC_FOLD_RULE, MISC_FOLD_SERIES,
	MISC_FOLD_SECRET, MISC_RELOADS, MISC_RELOAD_FAILS, MISC__COUNT
};

struct mmap {			/* key -> index, open addressing */
	uint64_t	*k;		/* 0: empty */
	uint32_t	*v;
	size_t		 mask;
};

struct mfam {			/* a family whose series come and go */
	struct mmap	 map;
	uint64_t	*key_of;	/* [cap]: the key of a series, 0: free */
	uint32_t	*freel;
	size_t		 nfree, next, cap;
};

struct mslot {			/* a sandbox name's place */
	char		 name[METRICS_NAME_MAX + 1];
	uint32_t	 hash;
	uint32_t	 holds;		/* live struct sandbox of this name */
	bool		 used;
	uint64_t	 idle_seq;	/* when it last had no holder */
	uint32_t	 nrules, rcap;
	uint32_t	*rhash;
	char		(*rname)[METRICS_NAME_MAX + 1];
};

struct mname {			/* cache: (sandbox, rule) -> place, rule */
	uint32_t	 h, slot, gen, ridx;
	uint32_t	 kgen;		/* gen in series keys (other: 0) */
	bool		 used, has_rule;
	uint8_t		 fold;		/* 1: sandbox folded, 2: rule */
	char		 sb[METRICS_NAME_MAX + 1];
	char		 rule[METRICS_NAME_MAX + 1];
};

struct mser {			/* cache: key -> index */
	uint64_t	 key;
	uint32_t	 idx;
};

struct msec {			/* cache: secret name -> index */
	bool		 used;
	uint32_t	 h, idx;
	char		 name[METRICS_NAME_MAX + 1];
};

struct mthr {			/* one thread's counters */
	_Atomic uint64_t	*c;
	struct mthr		*next;
	struct mname		 nc[METRICS_NAME_CACHE];
	struct mser		 sc[METRICS_SERIES_CACHE];
	struct msec		 secc[METRICS_SECRET_CACHE];
};

bool	metrics_on;

static struct {
	pthread_mutex_t	 mu;
	uint64_t	 epoch;		/* bumped by metrics_free */
	size_t		 nslots;	/* sandboxes + 1: the last is other */
	size_t		 other;		/* = sandboxes */
	size_t		 maxrules;
	size_t		 cap;		/* series per family */
	struct mslot	*slots;
	_Atomic uint32_t *gen;
	size_t		 next_slot;
	uint64_t	 seq;
	struct mfam	 dec, bytes;
	char		(*secret)[METRICS_NAME_MAX + 1];
	uint32_t	*sechash;
	size_t		 nsecret;
	/* Where each family's counters start in a thread's array. */
	size_t		 o_dec, o_bytes, o_conn, o_dns, o_drop, o_quota, o_sec,
			 o_hist,
			 o_misc;
	size_t		 ncnt;
	uint64_t	*base;
	struct mthr	*threads;
} M = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
};

static _Thread_local struct mthr	*T;
static _Thread_local uint64_t		 T_epoch;

static void	slot_reuse(size_t s);

/* ------------------------------------------------------------------ */
/* Small helpers                                                        */
/* ------------------------------------------------------------------ */

static uint32_t
metrics_hash(const char *s, uint32_t h)
{
	for (; *s != '\0'; s++) {
		h ^= (unsigned char)*s;
		h *= 16777619u;
	}
	return h;
}
#define METRICS_HASH0	2166136261u

static uint64_t
metrics_mix(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return k;
}

/* strcmp(a, b) == 0, inline: the names compared are short. */
static inline bool
streq(const char *a, const char *b)
{
	while (*a == *b && *a != '\0') {
		a++;
		b++;
	}
	return *a == *b;
}

/* Only the owning thread writes c: a relaxed load and store suffice. */
static inline void
cadd(_Atomic uint64_t *c, uint64_t n)
{
	atomic_store_explicit(c, atomic_load_explicit(c,
	    memory_order_relaxed) + n, memory_order_relaxed);
}

/* Every thread's count at index i, less the baseline.  Under M.mu. */
static uint64_t
csum(size_t i)
{
	struct mthr	*t;
	uint64_t	 n = 0;

	for (t = M.threads; t != NULL; t = t->next)
		n += atomic_load_explicit(&t->c[i], memory_order_relaxed);
	return n - M.base[i];
}

static void
cbaseline(size_t i)
{
	M.base[i] += csum(i);
}

/* ------------------------------------------------------------------ */
/* The key -> index map and the families                                */
/* ------------------------------------------------------------------ */

static int
mmap_init(struct mmap *m, size_t n)
{
	size_t	cap = 16;

	while (cap < 2 * n)
		cap <<= 1;
	m->k = calloc(cap, sizeof(*m->k));
	m->v = calloc(cap, sizeof(*m->v));
	m->mask = cap - 1;
	return m->k != NULL && m->v != NULL ? 0 : -1;
}

static size_t
mmap_slot(const struct mmap *m, uint64_t key)
{
	size_t	i = metrics_mix(key) & m->mask;

	while (m->k[i] != 0 && m->k[i] != key)
		i = (i + 1) & m->mask;
	return i;
}

/* Removes key, moving back what followed it (no tombstones). */
static void
mmap_del(struct mmap *m, uint64_t key)
{
	size_t	i = mmap_slot(m, key), j, h;

	if (m->k[i] == 0)
		return;
	m->k[i] = 0;
	for (j = (i + 1) & m->mask; m->k[j] != 0; j = (j + 1) & m->mask) {
		h = metrics_mix(m->k[j]) & m->mask;
		/* Stays if its home is cyclically in (i, j]. */
		if (i <= j ? (h > i && h <= j) : (h > i || h <= j))
			continue;
		m->k[i] = m->k[j];
		m->v[i] = m->v[j];
		m->k[j] = 0;
		i = j;
	}
}

static int
fam_init(struct mfam *f, size_t cap)
{
	f->cap = cap;
	f->key_of = calloc(cap, sizeof(*f->key_of));
	f->freel = calloc(cap, sizeof(*f->freel));
	if (f->key_of == NULL || f->freel == NULL)
		return -1;
	return mmap_init(&f->map, cap);
}

static void
fam_free(struct mfam *f)
{
	free(f->map.k);
	free(f->map.v);
	free(f->key_of);
	free(f->freel);
	memset(f, 0, sizeof(*f));
}

/* The series of key, made if there is room, else ovf.  Under M.mu. */
static uint32_t
fam_get(struct mfam *f, uint64_t key, uint32_t ovf)
{
	size_t		i = mmap_slot(&f->map, key);
	uint32_t	idx;

	if (f->map.k[i] == key)
		return f->map.v[i];
	if (f->nfree > 0)
		idx = f->freel[--f->nfree];
	else if (f->next < f->cap)
		idx = (uint32_t)f->next++;
	else
		return ovf;
	f->key_of[idx] = key;
	f->map.k[i] = key;
	f->map.v[i] = idx;
	return idx;
}

/* The series of sandbox place s go; their counts become baselines. */
static void
fam_drop_slot(struct mfam *f, size_t s, size_t off, size_t stride)
{
	size_t	idx, j;

	for (idx = 0; idx < f->next; idx++) {
		if (f->key_of[idx] == 0 || KEY_SLOT(f->key_of[idx]) != s)
			continue;
		for (j = 0; j < stride; j++)
			cbaseline(off + idx * stride + j);
		mmap_del(&f->map, f->key_of[idx]);
		f->key_of[idx] = 0;
		f->freel[f->nfree++] = (uint32_t)idx;
	}
}

/* ------------------------------------------------------------------ */
/* Sandbox names and rules                                              */
/* ------------------------------------------------------------------ */

static size_t
slot_find(const char *name, uint32_t h)
{
	size_t	s;

	for (s = 0; s < M.next_slot; s++)
		if (M.slots[s].used && M.slots[s].hash == h &&
		    strcmp(M.slots[s].name, name) == 0)
			return s;
	return M.other;
}

/*
 * The place of name: its own, a new one, the place of the name that has
 * gone longest without a sandbox, or other.  Under M.mu.
 */
static size_t
slot_get(const char *name)
{
	struct mslot	*sl;
	uint32_t	 h;
	size_t		 s, best = M.other;

	if (name == NULL || strlen(name) > METRICS_NAME_MAX)
		return M.other;
	h = metrics_hash(name, METRICS_HASH0);
	if ((s = slot_find(name, h)) != M.other)
		return s;
	for (s = 0; s < M.next_slot; s++)
		if (!M.slots[s].used)
			break;
	if (s == M.next_slot && M.next_slot < M.other)
		M.next_slot++;
	if (s == M.next_slot) {
		for (s = 0; s < M.next_slot; s++)
			if (M.slots[s].holds == 0 && (best == M.other ||
			    M.slots[s].idle_seq < M.slots[best].idle_seq))
				best = s;
		if (best == M.other)
			return M.other;
		slot_reuse(best);
		s = best;
	}
	sl = &M.slots[s];
	memcpy(sl->name, name, strlen(name) + 1);
	sl->hash = h;
	sl->used = true;
	sl->holds = 0;
	sl->idle_seq = ++M.seq;
	sl->nrules = 0;
	/* What threads cached as other may have a place now: look again. */
	atomic_store(&M.gen[M.other], atomic_load(&M.gen[M.other]) + 1);
	return s;
}

/* Gives place s to another name: what it counted becomes baselines. */
static void
slot_reuse(size_t s)
{
	size_t	j;

	atomic_store(&M.gen[s], atomic_load(&M.gen[s]) + 1);
	fam_drop_slot(&M.dec, s, M.o_dec, 1);
	fam_drop_slot(&M.bytes, s, M.o_bytes, 2);
	for (j = 0; j < METRICS_KINDS * 2; j++)
		cbaseline(M.o_conn + s * METRICS_KINDS * 2 + j);
	for (j = 0; j < METRICS_DNS_STRIDE; j++)
		cbaseline(M.o_dns + s * METRICS_DNS_STRIDE + j);
	for (j = 0; j < DROPS_KIND__COUNT; j++)
		cbaseline(M.o_drop + s * DROPS_KIND__COUNT + j);
	for (j = 0; j < QUOTA__KINDS; j++)
		cbaseline(M.o_quota + s * QUOTA__KINDS + j);
	M.slots[s].used = false;
	M.slots[s].nrules = 0;
}

/* Rule index in place s: 0 none, 1..maxrules, maxrules + 1 other. */
static uint32_t
rule_get(size_t s, const char *rule)
{
	struct mslot	*sl = &M.slots[s];
	uint32_t	 h, i, nc;
	void		*p, *q;

	if (rule == NULL)
		return 0;
	if (s == M.other || strlen(rule) > METRICS_NAME_MAX)
		return (uint32_t)M.maxrules + 1;
	h = metrics_hash(rule, METRICS_HASH0);
	for (i = 0; i < sl->nrules; i++)
		if (sl->rhash[i] == h && strcmp(sl->rname[i], rule) == 0)
			return i + 1;
	if (sl->nrules >= M.maxrules)
		return (uint32_t)M.maxrules + 1;
	if (sl->nrules == sl->rcap) {
		nc = sl->rcap ? sl->rcap * 2 : 8;
		if (nc > M.maxrules)
			nc = (uint32_t)M.maxrules;
		p = realloc(sl->rhash, nc * sizeof(*sl->rhash));
		if (p != NULL)
			sl->rhash = p;
		q = realloc(sl->rname, nc * sizeof(*sl->rname));
		if (q != NULL)
			sl->rname = q;
		if (p == NULL || q == NULL)
			return (uint32_t)M.maxrules + 1;
		sl->rcap = nc;
	}
	sl->rhash[sl->nrules] = h;
	memcpy(sl->rname[sl->nrules], rule, strlen(rule) + 1);
	return ++sl->nrules;
}

/* ------------------------------------------------------------------ */
/* Threads                                                              */
/* ------------------------------------------------------------------ */

/* This thread's counters, made on its first count; NULL: no memory. */
static struct mthr *
thr(void)
{
	struct mthr	*t;

	if (T != NULL && T_epoch == M.epoch)
		return T;
	T = NULL;
	if ((t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	if ((t->c = calloc(M.ncnt, sizeof(*t->c))) == NULL) {
		free(t);
		return NULL;
	}
	pthread_mutex_lock(&M.mu);
	t->next = M.threads;
	M.threads = t;
	pthread_mutex_unlock(&M.mu);
	T = t;
	T_epoch = M.epoch;
	return t;
}

/* (sandbox, rule) as place and rule index, through the cache. */
static const struct mname *
thr_name(struct mthr *t, const char *sb, const char *rule)
{
	struct mname	*e;
	uint32_t	 h;
	size_t		 s;

	if (sb == NULL)
		sb = "";
	h = metrics_hash(sb, METRICS_HASH0);
	h = metrics_hash(rule != NULL ? rule : "", h * 31 + 7);
	e = &t->nc[h & (METRICS_NAME_CACHE - 1)];
	if (e->used && e->h == h && e->has_rule == (rule != NULL) &&
	    streq(e->sb, sb) && (rule == NULL || streq(e->rule, rule)) &&
	    atomic_load_explicit(&M.gen[e->slot], memory_order_relaxed) ==
	    e->gen)
		return e;
	pthread_mutex_lock(&M.mu);
	s = slot_get(sb[0] != '\0' ? sb : NULL);
	e->slot = (uint32_t)s;
	e->gen = atomic_load(&M.gen[s]);
	e->ridx = rule_get(s, rule);
	pthread_mutex_unlock(&M.mu);
	/* Other's generation only says "look again": its series stay. */
	e->kgen = s == M.other ? 0 : e->gen;
	e->fold = (s == M.other ? 1 : 0) |
	    (e->ridx == M.maxrules + 1 ? 2 : 0);
	e->h = h;
	e->has_rule = rule != NULL;
	/* Names longer than a cache entry holds are folded anyway (they
	 * can be no sandbox's); the entry then serves other for them. */
	snprintf(e->sb, sizeof(e->sb), "%s", sb);
	snprintf(e->rule, sizeof(e->rule), "%s", rule != NULL ? rule : "");
	e->used = strlen(sb) <= METRICS_NAME_MAX &&
	    (rule == NULL || strlen(rule) <= METRICS_NAME_MAX);
	return e;
}

static uint32_t
thr_series(struct mthr *t, struct mfam *f, uint64_t key, uint32_t ovf)
{
	struct mser	*e = &t->sc[metrics_mix(key) &
			    (METRICS_SERIES_CACHE - 1)];

	if (e->key == key)
		return e->idx;
	pthread_mutex_lock(&M.mu);
	e->idx = fam_get(f, key, ovf);
	pthread_mutex_unlock(&M.mu);
	e->key = key;
	return e->idx;
}

static uint32_t
thr_secret(struct mthr *t, const char *name)
{
	struct msec	*e;
	uint32_t	 h = metrics_hash(name, METRICS_HASH0), i;

	e = &t->secc[h & (METRICS_SECRET_CACHE - 1)];
	if (e->used && e->h == h && strcmp(e->name, name) == 0)
		return e->idx;
	if (strlen(name) > METRICS_NAME_MAX)
		return METRICS_SECRETS_MAX;
	pthread_mutex_lock(&M.mu);
	for (i = 0; i < M.nsecret; i++)
		if (M.sechash[i] == h && strcmp(M.secret[i], name) == 0)
			break;
	if (i == M.nsecret && M.nsecret < METRICS_SECRETS_MAX) {
		M.sechash[i] = h;
		memcpy(M.secret[i], name, strlen(name) + 1);
		M.nsecret++;
	}
	pthread_mutex_unlock(&M.mu);
	e->used = true;
	e->h = h;
	e->idx = i;
	memcpy(e->name, name, strlen(name) + 1);
	return i;
}

/* ------------------------------------------------------------------ */
/* Set-up                                                               */
/* ------------------------------------------------------------------ */

int
metrics_init(const struct metrics_limits *lim)
{
	size_t	s;

	metrics_free();
	M.other = lim->sandboxes < 1 ? 1 : lim->sandboxes > METRICS_SLOTS_MAX ?
	    METRICS_SLOTS_MAX : lim->sandboxes;
	M.nslots = M.other + 1;
	M.maxrules = lim->rules < 1 ? 1 : lim->rules > METRICS_RULES_MAX ?
	    METRICS_RULES_MAX : lim->rules;
	M.cap = lim->series < 1 ? 1 : lim->series;
	M.o_dec = 0;
	M.o_bytes = M.o_dec + M.cap + METRICS_DEC_OVF;
	M.o_conn = M.o_bytes + (M.cap + 1) * 2;
	M.o_dns = M.o_conn + M.nslots * METRICS_KINDS * 2;
	M.o_drop = M.o_dns + M.nslots * METRICS_DNS_STRIDE;
	M.o_quota = M.o_drop + M.nslots * DROPS_KIND__COUNT;
	M.o_sec = M.o_quota + M.nslots * QUOTA__KINDS;
	M.o_hist = M.o_sec + (METRICS_SECRETS_MAX + 1) * 2;
	M.o_misc = M.o_hist + METRICS_H__COUNT * METRICS_HSTRIDE;
	M.ncnt = M.o_misc + MISC__COUNT;
	M.slots = calloc(M.nslots, sizeof(*M.slots));
	M.gen = calloc(M.nslots, sizeof(*M.gen));
	M.base = calloc(M.ncnt, sizeof(*M.base));
	M.secret = calloc(METRICS_SECRETS_MAX, sizeof(*M.secret));
	M.sechash = calloc(METRICS_SECRETS_MAX, sizeof(*M.sechash));
	if (M.slots == NULL || M.gen == NULL || M.base == NULL ||
	    M.secret == NULL || M.sechash == NULL ||
	    fam_init(&M.dec, M.cap) == -1 || fam_init(&M.bytes, M.cap) == -1) {
		metrics_free();
		return -1;
	}
	for (s = 0; s < M.nslots; s++)
		atomic_init(&M.gen[s], 1);
	metrics_on = true;
	return 0;
}

void
metrics_free(void)
{
	struct mthr	*t;
	size_t		 s;

	metrics_on = false;
	while ((t = M.threads) != NULL) {
		M.threads = t->next;
		free(t->c);
		free(t);
	}
	for (s = 0; M.slots != NULL && s < M.nslots; s++) {
		free(M.slots[s].rhash);
		free(M.slots[s].rname);
	}
	free(M.slots);
	free(M.gen);
	free(M.base);
	free(M.secret);
	free(M.sechash);
	fam_free(&M.dec);
	fam_free(&M.bytes);
	M.slots = NULL;
	M.gen = NULL;
	M.base = NULL;
	M.secret = NULL;
	M.sechash = NULL;
	M.nsecret = M.next_slot = 0;
	M.seq = 0;
	M.epoch++;
}

/* ------------------------------------------------------------------ */
/* What is counted                                                      */
/* ------------------------------------------------------------------ */

void
metrics_audit(const struct audit_rec *r)
{
	const struct mname	*n;
	struct mthr		*t;
	const char		*ev = r->event;
	bool			 dec, req, close;
	uint64_t		 key, cnt;
	uint32_t		 idx;
	unsigned		 v, reason;
	size_t			 i;

	if (!metrics_on || ev == NULL)
		return;
	/* Decisions: request, open, dns, connection; bytes: request and
	 * close (an inspected tunnel's close line: its bytes were its
	 * requests'); others are not counted.  One comparison each. */
	req = dec = close = false;
	switch (ev[0]) {
	case 'r':
		req = dec = streq(ev, "request");
		break;
	case 'o':
		dec = streq(ev, "open");
		break;
	case 'd':
		dec = streq(ev, "dns");
		break;
	case 'c':
		dec = streq(ev, "connection");
		close = !dec && streq(ev, "close") && (r->detail == NULL ||
		    !streq(r->detail, "inspected"));
		break;
	}
	if ((!dec && !close) || (t = thr()) == NULL)
		return;
	n = thr_name(t, r->sandbox, r->rule);
	if (n->fold & 1)
		cadd(&t->c[M.o_misc + MISC_FOLD_SANDBOX], 1);
	if (n->fold & 2)
		cadd(&t->c[M.o_misc + MISC_FOLD_RULE], 1);
	if (dec) {
		cnt = r->refused > 0 ? (uint64_t)r->refused : 1;
		/* Audit mode: a refusal let through counts under verdict
		 * would-deny with the reason it would have had. */
		v = r->verdict != POLICY_ALLOW ? 1 :
		    r->would_deny != POLICY_R_ALLOWED ? 2 : 0;
		reason = v == 2 ? (unsigned)r->would_deny : (unsigned)r->reason;
		if (reason >= POLICY_R__COUNT)
			reason = POLICY_R_INTERNAL;
		key = KEY(KEY_DEC, n->kgen, n->slot, n->ridx, v, reason);
		idx = thr_series(t, &M.dec, key,
		    (uint32_t)M.cap + v * POLICY_R__COUNT + reason);
		if (idx >= M.cap)
			cadd(&t->c[M.o_misc + MISC_FOLD_SERIES], 1);
		cadd(&t->c[M.o_dec + idx], cnt);
	}
	if ((req || close) && (r->bytes_up > 0 || r->bytes_down > 0)) {
		key = KEY(KEY_BYTES, n->kgen, n->slot, n->ridx, 0, 0);
		idx = thr_series(t, &M.bytes, key, (uint32_t)M.cap);
		if (idx >= M.cap)
			cadd(&t->c[M.o_misc + MISC_FOLD_SERIES], 1);
		if (r->bytes_up > 0)
			cadd(&t->c[M.o_bytes + idx * 2], (uint64_t)r->bytes_up);
		if (r->bytes_down > 0)
			cadd(&t->c[M.o_bytes + idx * 2 + 1],
			    (uint64_t)r->bytes_down);
	}
	for (i = 0; req && r->injected != NULL && r->injected[i] != NULL;
	    i++) {
		idx = thr_secret(t, r->injected[i]);
		if (idx == METRICS_SECRETS_MAX)
			cadd(&t->c[M.o_misc + MISC_FOLD_SECRET], 1);
		cadd(&t->c[M.o_sec + idx * 2], 1);
	}
}

void
metrics_sandbox_hold(struct metrics_sb *h, const char *name)
{
	size_t	s;

	h->slot = 0;
	h->gen = 0;
	if (!metrics_on)
		return;
	pthread_mutex_lock(&M.mu);
	s = slot_get(name);
	if (s != M.other)
		M.slots[s].holds++;
	h->slot = (uint32_t)s;
	h->gen = atomic_load(&M.gen[s]);
	pthread_mutex_unlock(&M.mu);
}

void
metrics_sandbox_release(const struct metrics_sb *h)
{
	struct mslot	*sl;

	if (!metrics_on || h->gen == 0)
		return;
	pthread_mutex_lock(&M.mu);
	if (h->slot < M.other && atomic_load(&M.gen[h->slot]) == h->gen) {
		sl = &M.slots[h->slot];
		if (sl->holds > 0 && --sl->holds == 0)
			sl->idle_seq = ++M.seq;
	}
	pthread_mutex_unlock(&M.mu);
}

/* The place a handle stands for (other if it is none of ours). */
static size_t
metrics_slot_of(const struct metrics_sb *h)
{
	return h != NULL && h->gen != 0 && h->slot < M.nslots ? h->slot :
	    M.other;
}

void
metrics_conn(const struct metrics_sb *h, unsigned kind, bool open)
{
	struct mthr	*t;

	if (!metrics_on || kind >= METRICS_KINDS || (t = thr()) == NULL)
		return;
	cadd(&t->c[M.o_conn + (metrics_slot_of(h) * METRICS_KINDS + kind) *
	    2 + (open ? 0 : 1)], 1);
}

void
metrics_dns_reply(const struct metrics_sb *h, unsigned rcode,
    unsigned naddrs)
{
	struct mthr	*t;
	size_t		 o;

	if (!metrics_on || (t = thr()) == NULL)
		return;
	o = M.o_dns + metrics_slot_of(h) * METRICS_DNS_STRIDE;
	cadd(&t->c[o + (rcode < METRICS_RCODES - 1 ? rcode :
	    METRICS_RCODES - 1)], 1);
	if (naddrs > 0)
		cadd(&t->c[o + METRICS_RCODES], naddrs);
}

void
metrics_drop(const struct metrics_sb *h, unsigned kind)
{
	struct mthr	*t;

	if (!metrics_on || kind >= DROPS_KIND__COUNT || (t = thr()) == NULL)
		return;
	cadd(&t->c[M.o_drop + metrics_slot_of(h) * DROPS_KIND__COUNT + kind],
	    1);
}

void
metrics_quota(const struct metrics_sb *h, unsigned kind)
{
	struct mthr	*t;

	if (!metrics_on || kind >= QUOTA__KINDS || (t = thr()) == NULL)
		return;
	cadd(&t->c[M.o_quota + metrics_slot_of(h) * QUOTA__KINDS + kind], 1);
}

void
metrics_secret_leak(const char *name)
{
	struct mthr	*t;
	uint32_t	 idx;

	if (!metrics_on || name == NULL || (t = thr()) == NULL)
		return;
	idx = thr_secret(t, name);
	if (idx == METRICS_SECRETS_MAX)
		cadd(&t->c[M.o_misc + MISC_FOLD_SECRET], 1);
	cadd(&t->c[M.o_sec + idx * 2 + 1], 1);
}

void
metrics_reload(bool ok)
{
	struct mthr	*t;

	if (!metrics_on || (t = thr()) == NULL)
		return;
	cadd(&t->c[M.o_misc + (ok ? MISC_RELOADS : MISC_RELOAD_FAILS)], 1);
}

uint64_t
metrics_clock(void)
{
	struct timespec	ts;

	if (!metrics_on)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) | 1;
}

void
metrics_observe(enum metrics_hist h, uint64_t *t0)
{
	struct mthr	*t;
	uint64_t	 d, now;
	size_t		 b, o;

	if (*t0 == 0 || !metrics_on || (unsigned)h >= METRICS_H__COUNT)
		return;
	now = metrics_clock();
	d = now > *t0 ? now - *t0 : 0;
	*t0 = 0;
	if ((t = thr()) == NULL)
		return;
	for (b = 0; b < METRICS_NBUCKETS && d > metrics_bucket_ns[b]; b++)
		;
	o = M.o_hist + (size_t)h * METRICS_HSTRIDE;
	cadd(&t->c[o + b], 1);
	cadd(&t->c[o + METRICS_NBUCKETS + 1], d);
}

/* ------------------------------------------------------------------ */
/* The text exposition format                                           */
/* ------------------------------------------------------------------ */

struct mbuf {
	char	*p;
	size_t	 len, cap;
	bool	 oom;
};

static void __attribute__((format(printf, 2, 3)))
mb_printf(struct mbuf *b, const char *fmt, ...)
{
	va_list	 ap;
	size_t	 nc;
	char	*np;
	int	 n;

	if (b->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if ((size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		nc = b->cap * 2 + (size_t)n;
		if ((np = realloc(b->p, nc)) == NULL) {
			b->oom = true;
			return;
		}
		b->p = np;
		b->cap = nc;
	}
}

size_t
metrics_escape(const char *s, char *out, size_t cap)
{
	size_t	n = 0, w = 0, k;
	bool	full = cap == 0;
	char	e[2];

	for (; *s != '\0'; s++) {
		e[0] = *s == '\\' || *s == '"' || *s == '\n' ? '\\' : *s;
		e[1] = *s == '\n' ? 'n' : *s;
		k = e[0] == '\\' ? 2 : 1;
		n += k;
		/* Once a character does not fit, nothing more is written:
		 * an escape is never cut in two. */
		if (full || w + k >= cap) {
			full = true;
			continue;
		}
		memcpy(out + w, e, k);
		w += k;
	}
	if (cap > 0)
		out[w] = '\0';
	return n;
}

/* An escaped label value in a static-sized buffer. */
#define ESC_MAX		(METRICS_NAME_MAX * 2 + 1)
static const char *
esc(const char *s, char buf[ESC_MAX])
{
	(void)metrics_escape(s, buf, ESC_MAX);
	return buf;
}

static void
mb_head(struct mbuf *b, const char *name, const char *type,
    const char *help)
{
	mb_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static const char *
slot_name(size_t s)
{
	return s == M.other ? METRICS_OTHER : M.slots[s].name;
}

static const char *
rule_name(size_t s, uint32_t ridx)
{
	if (ridx == 0)
		return "";
	if (s == M.other || ridx > M.slots[s].nrules || ridx > M.maxrules)
		return METRICS_OTHER;
	return M.slots[s].rname[ridx - 1];
}

static void
render_decisions(struct mbuf *b, const uint64_t *sum)
{
	char		 e1[ESC_MAX], e2[ESC_MAX];
	uint64_t	 k;
	size_t		 idx, s;
	unsigned	 v, reason;

	mb_head(b, "moat_decisions_total", "counter", "Decisions moatd made: "
	    "request, open and dns audit lines (a connection line counts "
	    "each refusal it stands for).");
	for (idx = 0; idx < M.cap + METRICS_DEC_OVF; idx++) {
		if (idx < M.cap) {
			if (idx >= M.dec.next || (k = M.dec.key_of[idx]) == 0)
				continue;
			s = KEY_SLOT(k);
			v = KEY_V(k);
			reason = KEY_REASON(k);
			esc(slot_name(s), e1);
			esc(rule_name(s, KEY_RIDX(k)), e2);
		} else {
			if (sum[M.o_dec + idx] == 0)
				continue;
			v = (unsigned)((idx - M.cap) / POLICY_R__COUNT);
			reason = (unsigned)((idx - M.cap) % POLICY_R__COUNT);
			snprintf(e1, sizeof(e1), "%s", METRICS_OTHER);
			snprintf(e2, sizeof(e2), "%s", METRICS_OTHER);
		}
		mb_printf(b, "moat_decisions_total{sandbox=\"%s\",verdict=\"%s\","
		    "reason=\"%s\",rule=\"%s\"} %llu\n", e1,
		    v == 0 ? "allow" : v == 1 ? "deny" : "would-deny",
		    policy_reason_str((enum policy_reason)reason), e2,
		    (unsigned long long)sum[M.o_dec + idx]);
	}
}

static void
render_bytes(struct mbuf *b, const uint64_t *sum)
{
	static const char *const dir[2] = { "up", "down" };
	char		 e1[ESC_MAX], e2[ESC_MAX];
	uint64_t	 k;
	size_t		 idx, s, d;

	mb_head(b, "moat_bytes_total", "counter", "Bytes moved: up is "
	    "client to upstream, down upstream to client (bytes_up and "
	    "bytes_down of request lines and of opaque tunnels' close "
	    "lines).");
	for (idx = 0; idx <= M.cap; idx++) {
		if (idx < M.cap) {
			if (idx >= M.bytes.next ||
			    (k = M.bytes.key_of[idx]) == 0)
				continue;
			s = KEY_SLOT(k);
			esc(slot_name(s), e1);
			esc(rule_name(s, KEY_RIDX(k)), e2);
		} else {
			if (sum[M.o_bytes + idx * 2] == 0 &&
			    sum[M.o_bytes + idx * 2 + 1] == 0)
				continue;
			snprintf(e1, sizeof(e1), "%s", METRICS_OTHER);
			snprintf(e2, sizeof(e2), "%s", METRICS_OTHER);
		}
		for (d = 0; d < 2; d++)
			mb_printf(b, "moat_bytes_total{sandbox=\"%s\",rule=\"%s\","
			    "direction=\"%s\"} %llu\n", e1, e2, dir[d],
			    (unsigned long long)sum[M.o_bytes + idx * 2 + d]);
	}
}

/* Places that have a name, and other. */
static bool
slot_shown(size_t s)
{
	return s == M.other || (s < M.next_slot && M.slots[s].used);
}

static void
render_conns(struct mbuf *b, const uint64_t *sum)
{
	char		 e[ESC_MAX];
	size_t		 s, k, o;

	mb_head(b, "moat_connections_open", "gauge", "Client connections "
	    "and tunnels open, by sandbox and kind of listener.");
	for (s = 0; s < M.nslots; s++) {
		if (!slot_shown(s))
			continue;
		for (k = 0; k < METRICS_KINDS; k++) {
			o = M.o_conn + (s * METRICS_KINDS + k) * 2;
			if (sum[o] == 0)
				continue;
			/* A close read after its open: never below 0. */
			mb_printf(b, "moat_connections_open{sandbox=\"%s\","
			    "listener=\"%s\"} %llu\n", esc(slot_name(s), e),
			    policy_proto_str((enum moat_listen_proto)k),
			    (unsigned long long)(sum[o] > sum[o + 1] ?
			    sum[o] - sum[o + 1] : 0));
		}
	}
}

static void
render_drops(struct mbuf *b, const uint64_t *sum)
{
	char		 e[ESC_MAX];
	size_t		 s, k, o;

	mb_head(b, "moat_dropped_packets_total", "counter", "Packets the "
	    "sandbox's firewall dropped that moatd read from its drop log, by "
	    "sandbox and kind (past the log's limit the nftables counters, "
	    "moat-netns counters, are the exact count).");
	for (s = 0; s < M.nslots; s++) {
		if (!slot_shown(s))
			continue;
		for (k = 0; k < DROPS_KIND__COUNT; k++) {
			o = M.o_drop + s * DROPS_KIND__COUNT + k;
			if (sum[o] == 0)
				continue;
			mb_printf(b, "moat_dropped_packets_total{sandbox=\"%s\","
			    "kind=\"%s\"} %llu\n", esc(slot_name(s), e),
			    drops_kind_name((unsigned)k),
			    (unsigned long long)sum[o]);
		}
	}
}

static void
render_quota(struct mbuf *b, const uint64_t *sum)
{
	char		 e[ESC_MAX];
	size_t		 s, k, o;

	mb_head(b, "moat_quota_refusals_total", "counter", "Requests and "
	    "tunnels refused, and tunnels and request bodies cut, because a "
	    "quota was used up, by sandbox and kind (rule and sandbox: bytes "
	    "up, reason quota-bytes; secret: requests, quota-secret).");
	for (s = 0; s < M.nslots; s++) {
		if (!slot_shown(s))
			continue;
		for (k = 0; k < QUOTA__KINDS; k++) {
			o = M.o_quota + s * QUOTA__KINDS + k;
			if (sum[o] == 0)
				continue;
			mb_printf(b, "moat_quota_refusals_total{sandbox=\"%s\","
			    "kind=\"%s\"} %llu\n", esc(slot_name(s), e),
			    quota_kind_name((enum quota_kind)k),
			    (unsigned long long)sum[o]);
		}
	}
}

static void
render_hist(struct mbuf *b, const uint64_t *sum, enum metrics_hist h,
    const char *name, const char *help)
{
	size_t		 o = M.o_hist + (size_t)h * METRICS_HSTRIDE, i;
	uint64_t	 acc = 0, ns;

	mb_head(b, name, "histogram", help);
	for (i = 0; i < METRICS_NBUCKETS; i++) {
		acc += sum[o + i];
		mb_printf(b, "%s_bucket{le=\"%s\"} %llu\n", name,
		    metrics_bucket_txt[i], (unsigned long long)acc);
	}
	acc += sum[o + METRICS_NBUCKETS];
	ns = sum[o + METRICS_NBUCKETS + 1];
	mb_printf(b, "%s_bucket{le=\"+Inf\"} %llu\n", name,
	    (unsigned long long)acc);
	mb_printf(b, "%s_sum %llu.%09llu\n", name,
	    (unsigned long long)(ns / 1000000000u),
	    (unsigned long long)(ns % 1000000000u));
	mb_printf(b, "%s_count %llu\n", name, (unsigned long long)acc);
}

static void
render_dns(struct mbuf *b, const uint64_t *sum)
{
	static const char *const rc[METRICS_RCODES] = {
		"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP",
		"REFUSED", "other",
	};
	char	e[ESC_MAX];
	size_t	s, i, o;

	mb_head(b, "moat_dns_responses_total", "counter", "Answers of the "
	    "DNS listener, by sandbox and response code (NXDOMAIN and "
	    "REFUSED are its refusals).");
	for (s = 0; s < M.nslots; s++) {
		o = M.o_dns + s * METRICS_DNS_STRIDE;
		for (i = 0; slot_shown(s) && i < METRICS_RCODES; i++)
			if (sum[o + i] != 0)
				mb_printf(b, "moat_dns_responses_total{sandbox="
				    "\"%s\",rcode=\"%s\"} %llu\n",
				    esc(slot_name(s), e), rc[i],
				    (unsigned long long)sum[o + i]);
	}
	mb_head(b, "moat_dns_answer_addresses_total", "counter", "Addresses "
	    "the DNS listener handed out, by sandbox.");
	for (s = 0; s < M.nslots; s++) {
		o = M.o_dns + s * METRICS_DNS_STRIDE + METRICS_RCODES;
		if (slot_shown(s) && sum[o] != 0)
			mb_printf(b, "moat_dns_answer_addresses_total{sandbox="
			    "\"%s\"} %llu\n", esc(slot_name(s), e),
			    (unsigned long long)sum[o]);
	}
}

static void
render_secrets(struct mbuf *b, const uint64_t *sum)
{
	static const char *const fam[2] = {
		"moat_secrets_injected_total", "moat_secret_leaks_refused_total"
	};
	static const char *const help[2] = {
		"Requests a secret was injected into, by secret name.",
		"Requests and names refused for carrying a secret to a host "
		"it is not bound to, by secret name.",
	};
	char	e[ESC_MAX];
	size_t	i, j;

	for (j = 0; j < 2; j++) {
		mb_head(b, fam[j], "counter", help[j]);
		for (i = 0; i <= METRICS_SECRETS_MAX; i++) {
			if (i < METRICS_SECRETS_MAX && i >= M.nsecret)
				continue;
			if (sum[M.o_sec + i * 2 + j] == 0)
				continue;
			mb_printf(b, "%s{secret=\"%s\"} %llu\n", fam[j],
			    esc(i < METRICS_SECRETS_MAX ? M.secret[i] :
			    METRICS_OTHER, e),
			    (unsigned long long)sum[M.o_sec + i * 2 + j]);
		}
	}
}

static void
render_one(struct mbuf *b, const char *name, const char *type,
    const char *help, uint64_t v)
{
	mb_head(b, name, type, help);
	mb_printf(b, "%s %llu\n", name, (unsigned long long)v);
}

static void
render_misc(struct mbuf *b, const uint64_t *sum,
    const struct metrics_extra *x, size_t names)
{
	static const char *const fold[4] = {
		"sandbox", "rule", "series", "secret"
	};
	size_t	o = M.o_misc, i;

	render_one(b, "moat_audit_queue_bytes", "gauge", "Bytes of audit "
	    "lines queued for the writer.", x->audit_queue_bytes);
	render_one(b, "moat_audit_lines_dropped_total", "counter", "Audit "
	    "lines lost (a full queue, a sink that does not take them).",
	    x->audit_dropped);
	render_one(b, "moat_tls_leaf_cache_hits_total", "counter", "Leaf "
	    "certificates for inspected tunnels found in the cache.",
	    x->leaf_hits);
	render_one(b, "moat_tls_leaf_cache_misses_total", "counter", "Leaf "
	    "certificates for inspected tunnels minted.", x->leaf_misses);
	render_one(b, "moat_reloads_total", "counter", "Reloads (SIGHUP) "
	    "done.", sum[o + MISC_RELOADS]);
	render_one(b, "moat_reload_failures_total", "counter", "Reloads "
	    "refused (the new config had errors); the old one stayed.",
	    sum[o + MISC_RELOAD_FAILS]);
	mb_head(b, "moat_metrics_folded_total", "counter", "Observations "
	    "counted under (other) because a cap on label values or series "
	    "was reached, by the label that was folded.");
	for (i = 0; i < 4; i++)
		mb_printf(b, "moat_metrics_folded_total{label=\"%s\"} %llu\n",
		    fold[i], (unsigned long long)sum[o + MISC_FOLD_SANDBOX + i]);
	render_one(b, "moat_metrics_sandbox_names", "gauge", "Sandbox names "
	    "with series of their own (at most metrics.max_sandboxes).",
	    (uint64_t)names);
}

char *
metrics_render(const struct metrics_extra *x, size_t *len)
{
	struct mbuf	 b = { NULL, 0, 0, false };
	uint64_t	*sum;
	size_t		 i, names = 0;
	char		 e[ESC_MAX];

	if (!metrics_on)
		return NULL;
	if ((b.p = malloc(b.cap = 65536)) == NULL)
		return NULL;
	pthread_mutex_lock(&M.mu);
	if ((sum = malloc(M.ncnt * sizeof(*sum))) == NULL) {
		pthread_mutex_unlock(&M.mu);
		free(b.p);
		return NULL;
	}
	for (i = 0; i < M.ncnt; i++)
		sum[i] = csum(i);
	mb_head(&b, "moat_build_info", "gauge", "moatd's version.");
	mb_printf(&b, "moat_build_info{version=\"%s\"} 1\n",
	    esc(PACKAGE_VERSION, e));
	render_decisions(&b, sum);
	render_bytes(&b, sum);
	render_conns(&b, sum);
	render_hist(&b, sum, METRICS_H_DECISION, "moat_decision_seconds",
	    "From a request or tunnel ready to be judged to its verdict "
	    "(refused, or an upstream being dialled), DNS included.");
	render_hist(&b, sum, METRICS_H_DNS, "moat_dns_resolve_seconds",
	    "Resolutions moatd asked its resolvers for (answers from its "
	    "cache are not counted).");
	render_hist(&b, sum, METRICS_H_CONNECT, "moat_upstream_connect_seconds",
	    "Upstream connections made, every address tried included.");
	render_hist(&b, sum, METRICS_H_TTFB, "moat_upstream_first_byte_seconds",
	    "Forwarded and inspected requests: from the request sent upstream "
	    "to the first byte of the response.");
	render_dns(&b, sum);
	render_drops(&b, sum);
	render_quota(&b, sum);
	render_secrets(&b, sum);
	for (i = 0; i < M.next_slot; i++)
		names += M.slots[i].used;
	render_misc(&b, sum, x, names);
	pthread_mutex_unlock(&M.mu);
	free(sum);
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	*len = b.len;
	return b.p;
}
