/*
 * audit_summary.c - `moat audit summary`: what each sandbox did.
 *
 * Per sandbox: its decisions (request, open and dns lines; a connection
 * line counts the connections it stands for), allowed, refused and
 * would-denied; its destinations (host:port, or a name it resolved) by
 * decisions and by bytes; its refusals and would-denies by reason and
 * rule; the secrets injected, by host; its clients (addresses without the
 * port).  Over all: the sandboxes by bytes sent (top talkers).
 *
 * Bytes are counted once: from the close line of each tunnel (opaque or
 * inspected: every byte each way) and from each plain-HTTP request line;
 * the requests inside an inspected tunnel are counted as decisions, their
 * bytes in the tunnel's close line.
 *
 * Memory is bounded by the caps of the tables (AUDIT_SUMMARY_CAP entries
 * each); what does not fit is counted as "not itemised".
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "launcher/audit_cmd.h"

#define AUDIT_SUMMARY_CAP	100000	/* entries per table */
#define AUDIT_SUMMARY_SBX_CAP	10000	/* sandboxes */
#define AUDIT_SUMMARY_KEY_MAX	1200	/* a key of parts */
#define AUDIT_SUMMARY_EXAMPLE	96	/* an example target, bytes */
#define AUDIT_NO_SANDBOX	"(none)"

struct sm_sbx {
	uint64_t	decisions, allowed, denied, would, dns;
	uint64_t	bytes_up, bytes_down;
	char		first[AUDIT_TS_LEN + 1], last[AUDIT_TS_LEN + 1];
};

struct sm_dest {
	uint64_t	decisions, denied, would, bytes_up, bytes_down;
};

struct sm_ref {
	uint64_t	count;
	char		example[AUDIT_SUMMARY_EXAMPLE];
};

struct sm_count {
	uint64_t	decisions, bytes_up, bytes_down;
};

enum {
	SM_SBX = 0, SM_DEST, SM_REF, SM_SECRET, SM_CLIENT, SM__COUNT
};

struct audit_summary {
	struct audit_tab	*t[SM__COUNT];
	uint64_t		 lost[SM__COUNT];	/* not itemised */
	uint64_t		 lines, dropped;
	char			 first[AUDIT_TS_LEN + 1];
	char			 last[AUDIT_TS_LEN + 1];
};

/* Which counter a sorted list is sorted by. */
enum sm_by {
	SM_BY_DECISIONS = 0, SM_BY_UP, SM_BY_COUNT, SM_BY_SBX_UP
};

struct audit_summary *
audit_summary_new(void)
{
	static const size_t	 sizes[SM__COUNT] = {
		sizeof(struct sm_sbx), sizeof(struct sm_dest),
		sizeof(struct sm_ref), sizeof(struct sm_count),
		sizeof(struct sm_count)
	};
	struct audit_summary	*sm;
	size_t			 i;

	if ((sm = calloc(1, sizeof(*sm))) == NULL)
		return NULL;
	for (i = 0; i < SM__COUNT; i++)
		if ((sm->t[i] = audit_tab_new(sizes[i], i == SM_SBX ?
		    AUDIT_SUMMARY_SBX_CAP : AUDIT_SUMMARY_CAP)) == NULL) {
			audit_summary_free(sm);
			return NULL;
		}
	return sm;
}

void
audit_summary_free(struct audit_summary *sm)
{
	size_t	i;

	if (sm == NULL)
		return;
	for (i = 0; i < SM__COUNT; i++)
		audit_tab_free(sm->t[i]);
	free(sm);
}

/* The value for parts in table i; NULL when it is full (counted). */
static void *
sm_get(struct audit_summary *sm, int i, const char *const *parts,
    size_t nparts, int *oom)
{
	char	key[AUDIT_SUMMARY_KEY_MAX];
	size_t	n;
	bool	full;
	void	*v;

	if ((n = audit_tab_key(key, sizeof(key), parts, nparts)) == 0) {
		sm->lost[i]++;
		return NULL;
	}
	if ((v = audit_tab_get(sm->t[i], key, n, &full)) == NULL) {
		if (full)
			sm->lost[i]++;
		else
			*oom = 1;
	}
	return v;
}

static void
sm_ts(char *first, char *last, const char *ts)
{
	if (ts == NULL || strlen(ts) > AUDIT_TS_LEN)
		return;
	if (first[0] == '\0' || strcmp(ts, first) < 0)
		strcpy(first, ts);
	if (strcmp(ts, last) > 0)
		strcpy(last, ts);
}

/* The client's address without its port ("[::1]:5" -> "::1"). */
static const char *
sm_client(const char *c, char *buf, size_t cap)
{
	const char	*e;
	size_t		 n;

	if (c[0] == '[' && (e = strchr(c, ']')) != NULL) {
		c++;
		n = (size_t)(e - c);
	} else if ((e = strrchr(c, ':')) != NULL && strchr(c, ':') == e)
		n = (size_t)(e - c);
	else
		n = strlen(c);
	if (n >= cap)
		n = cap - 1;
	memcpy(buf, c, n);
	buf[n] = '\0';
	return buf;
}

/* One refusal or would-deny, by reason and rule. */
static void
sm_refusal(struct audit_summary *sm, const char *sbx, const char *kind,
    const char *reason, const struct audit_ln *l, const char *port,
    uint64_t n, int *oom)
{
	const char	*parts[4] = { sbx, kind, reason, l->rule != NULL ?
			    l->rule : "-" };
	struct sm_ref	*r;

	if ((r = sm_get(sm, SM_REF, parts, 4, oom)) == NULL)
		return;
	/* A dropped packet has no host: where it went is its ip. */
	if (r->count == 0 && (l->host != NULL || l->ip != NULL))
		snprintf(r->example, sizeof(r->example), "%s%s%s",
		    l->host != NULL ? l->host : l->ip,
		    port[0] != '\0' && strcmp(port, "dns") != 0 ? ":" : "",
		    strcmp(port, "dns") == 0 ? " (dns)" : port);
	r->count += n;
}

/* A decision line (request, open, dns, connection, drop). */
static void
sm_decision(struct audit_summary *sm, struct sm_sbx *sb, const char *sbx,
    const struct audit_ln *l, const char *port, int *oom)
{
	const char	*parts[3];
	struct sm_dest	*d = NULL;
	struct sm_count	*c;
	char		 cl[64];
	uint64_t	 n = 1;
	bool		 deny = l->verdict != NULL &&
			    strcmp(l->verdict, "deny") == 0;
	size_t		 i;

	if ((strcmp(l->event, "connection") == 0 ||
	    strcmp(l->event, "drop") == 0) && l->refused > 0)
		n = (uint64_t)l->refused;
	sb->decisions += n;
	if (deny)
		sb->denied += n;
	else
		sb->allowed += n;
	if (strcmp(l->event, "dns") == 0)
		sb->dns++;
	if (l->host != NULL) {
		parts[0] = sbx;
		parts[1] = l->host;
		parts[2] = port;
		if ((d = sm_get(sm, SM_DEST, parts, 3, oom)) != NULL) {
			d->decisions += n;
			d->denied += deny ? n : 0;
			d->would += !deny && l->would_deny != NULL;
		}
	}
	if (deny)
		sm_refusal(sm, sbx, "deny", l->reason != NULL ? l->reason :
		    "-", l, port, n, oom);
	else if (l->would_deny != NULL) {
		sb->would++;
		sm_refusal(sm, sbx, "would", l->would_deny, l, port, 1, oom);
	}
	if (l->client != NULL) {
		parts[0] = sbx;
		parts[1] = sm_client(l->client, cl, sizeof(cl));
		if ((c = sm_get(sm, SM_CLIENT, parts, 2, oom)) != NULL)
			c->decisions += n;
	}
	if (deny || !l->has_injected || strcmp(l->event, "request") != 0)
		return;
	for (i = 0; i < l->ninjected; i++) {
		parts[0] = sbx;
		parts[1] = l->injected[i];
		parts[2] = l->host != NULL ? l->host : "-";
		if ((c = sm_get(sm, SM_SECRET, parts, 3, oom)) != NULL)
			c->decisions++;
	}
}

/* Bytes of a close line or of a plain-HTTP request line. */
static void
sm_bytes(struct audit_summary *sm, struct sm_sbx *sb, const char *sbx,
    const struct audit_ln *l, const char *port, int *oom)
{
	const char	*parts[3] = { sbx, l->host, port };
	uint64_t	 up = l->bytes_up > 0 ? (uint64_t)l->bytes_up : 0;
	uint64_t	 down = l->bytes_down > 0 ? (uint64_t)l->bytes_down : 0;
	struct sm_dest	*d;
	struct sm_count	*c;
	char		 cl[64];

	if (up == 0 && down == 0)
		return;
	sb->bytes_up += up;
	sb->bytes_down += down;
	if (l->host != NULL &&
	    (d = sm_get(sm, SM_DEST, parts, 3, oom)) != NULL) {
		d->bytes_up += up;
		d->bytes_down += down;
	}
	if (l->client != NULL) {
		parts[1] = sm_client(l->client, cl, sizeof(cl));
		if ((c = sm_get(sm, SM_CLIENT, parts, 2, oom)) != NULL) {
			c->bytes_up += up;
			c->bytes_down += down;
		}
	}
}

int
audit_summary_fold(void *arg, const struct audit_ln *l,
    const struct audit_where *w)
{
	struct audit_summary	*sm = arg;
	struct sm_sbx		*sb;
	const char		*sbx, *ev = l->event != NULL ? l->event : "";
	char			 port[24];
	int			 oom = 0;

	(void)w;
	sm->lines++;
	sm_ts(sm->first, sm->last, l->ts);
	if (strcmp(ev, "audit-dropped") == 0 && l->dropped > 0)
		sm->dropped += (uint64_t)l->dropped;
	if (strcmp(ev, "request") != 0 && strcmp(ev, "open") != 0 &&
	    strcmp(ev, "dns") != 0 && strcmp(ev, "connection") != 0 &&
	    strcmp(ev, "drop") != 0 && strcmp(ev, "close") != 0)
		return 0;
	sbx = l->sandbox != NULL ? l->sandbox : AUDIT_NO_SANDBOX;
	if ((sb = sm_get(sm, SM_SBX, &sbx, 1, &oom)) == NULL)
		return oom ? -1 : 0;
	sm_ts(sb->first, sb->last, l->ts);
	if (strcmp(ev, "dns") == 0)
		snprintf(port, sizeof(port), "dns");
	else if (l->port >= 0)
		snprintf(port, sizeof(port), "%lld", (long long)l->port);
	else
		port[0] = '\0';
	if (strcmp(ev, "close") == 0)
		sm_bytes(sm, sb, sbx, l, port, &oom);
	else {
		sm_decision(sm, sb, sbx, l, port, &oom);
		if (strcmp(ev, "request") == 0 && l->proto != NULL &&
		    strcmp(l->proto, "https") != 0)
			sm_bytes(sm, sb, sbx, l, port, &oom);
	}
	return oom ? -1 : 0;
}

/* --- output ---------------------------------------------------------- */

/* The part i of a key (parts are NUL-separated C strings). */
static const char *
sm_part(const char *key, size_t i)
{
	while (i-- > 0)
		key += strlen(key) + 1;
	return key;
}

static uint64_t
sm_metric(const struct audit_tab_ent *e, int table, enum sm_by by)
{
	const struct sm_sbx	*s = e->val;
	const struct sm_dest	*d = e->val;
	const struct sm_ref	*r = e->val;
	const struct sm_count	*c = e->val;

	switch (table) {
	case SM_SBX:
		return by == SM_BY_SBX_UP ? s->bytes_up : s->decisions;
	case SM_DEST:
		return by == SM_BY_UP ? d->bytes_up : d->decisions;
	case SM_REF:
		return r->count;
	default:
		return by == SM_BY_UP ? c->bytes_up : c->decisions;
	}
}

struct sm_sort {
	int		table;
	enum sm_by	by;
	bool		by_sandbox;	/* sandbox first, then the metric */
};

static int
sm_cmp(const void *a, const void *b, void *arg)
{
	const struct audit_tab_ent	*x = a, *y = b;
	const struct sm_sort		*s = arg;
	uint64_t			 mx, my;
	int				 c;

	if (s->by_sandbox && (c = strcmp(x->key, y->key)) != 0)
		return c;
	mx = sm_metric(x, s->table, s->by);
	my = sm_metric(y, s->table, s->by);
	if (mx != my)
		return mx > my ? -1 : 1;
	if (s->table == SM_SBX && s->by == SM_BY_SBX_UP) {
		const struct sm_sbx *p = x->val, *q = y->val;

		if (p->bytes_down != q->bytes_down)
			return p->bytes_down > q->bytes_down ? -1 : 1;
	}
	return x->klen != y->klen ? (x->klen < y->klen ? -1 : 1) :
	    memcmp(x->key, y->key, x->klen);
}

/* Table i's entries sorted; the caller frees. */
static struct audit_tab_ent *
sm_sorted(const struct audit_summary *sm, int table, enum sm_by by,
    bool by_sandbox, size_t *n)
{
	struct sm_sort		 s = { table, by, by_sandbox };
	struct audit_tab_ent	*v;

	if ((v = audit_tab_list(sm->t[table], n)) != NULL)
		qsort_r(v, *n, sizeof(*v), sm_cmp, &s);
	return v;
}

/* [*lo, *hi) of v (sorted by sandbox first): sandbox's entries. */
static void
sm_slice(const struct audit_tab_ent *v, size_t n, const char *sbx,
    size_t *lo, size_t *hi)
{
	size_t	a = 0, b = n, m;

	while (a < b) {
		m = a + (b - a) / 2;
		if (strcmp(v[m].key, sbx) < 0)
			a = m + 1;
		else
			b = m;
	}
	*lo = a;
	for (b = a; b < n && strcmp(v[b].key, sbx) == 0; b++)
		;
	*hi = b;
}

static json_t *
sm_jdest(const struct audit_tab_ent *e)
{
	const struct sm_dest	*d = e->val;
	const char		*port = sm_part(e->key, 2);

	return json_pack("{s:s, s:o, s:b, s:I, s:I, s:I, s:I, s:I}",
	    "host", sm_part(e->key, 1),
	    "port", port[0] != '\0' && strcmp(port, "dns") != 0 ?
	    json_integer(atoll(port)) : json_null(),
	    "dns", strcmp(port, "dns") == 0,
	    "decisions", (json_int_t)d->decisions,
	    "refused", (json_int_t)d->denied,
	    "would_deny", (json_int_t)d->would,
	    "bytes_up", (json_int_t)d->bytes_up,
	    "bytes_down", (json_int_t)d->bytes_down);
}

static json_t *
sm_jref(const struct audit_tab_ent *e)
{
	const struct sm_ref	*r = e->val;
	const char		*rule = sm_part(e->key, 3);

	return json_pack("{s:s, s:o, s:I, s:s}",
	    "reason", sm_part(e->key, 2),
	    "rule", strcmp(rule, "-") != 0 ? json_string(rule) : json_null(),
	    "count", (json_int_t)r->count, "example", r->example);
}

static json_t *
sm_jcount(const struct audit_tab_ent *e, int table)
{
	const struct sm_count	*c = e->val;

	if (table == SM_SECRET)
		return json_pack("{s:s, s:s, s:I}", "secret",
		    sm_part(e->key, 1), "host", sm_part(e->key, 2),
		    "requests", (json_int_t)c->decisions);
	return json_pack("{s:s, s:I, s:I, s:I}", "client", sm_part(e->key, 1),
	    "decisions", (json_int_t)c->decisions,
	    "bytes_up", (json_int_t)c->bytes_up,
	    "bytes_down", (json_int_t)c->bytes_down);
}

/* Up to top entries of v[lo..hi) (kind: for refusals, "deny"/"would"). */
static json_t *
sm_jlist(const struct audit_tab_ent *v, size_t lo, size_t hi, int table,
    const char *kind, size_t top)
{
	json_t	*a = json_array(), *o;
	size_t	 i, k = 0;

	for (i = lo; i < hi && a != NULL && k < top; i++) {
		if (kind != NULL && strcmp(sm_part(v[i].key, 1), kind) != 0)
			continue;
		o = table == SM_DEST ? sm_jdest(&v[i]) : table == SM_REF ?
		    sm_jref(&v[i]) : sm_jcount(&v[i], table);
		if (json_array_append_new(a, o) == -1) {
			json_decref(a);
			return NULL;
		}
		k++;
	}
	return a;
}

/* The lists of every sandbox, sorted once. */
struct sm_lists {
	struct audit_tab_ent	*dest, *up, *ref, *sec, *cli;
	size_t			 ndest, nup, nref, nsec, ncli;
};

static void
sm_lists_free(struct sm_lists *ls)
{
	free(ls->dest);
	free(ls->up);
	free(ls->ref);
	free(ls->sec);
	free(ls->cli);
}

static void
sm_lists_make(const struct audit_summary *sm, struct sm_lists *ls)
{
	ls->dest = sm_sorted(sm, SM_DEST, SM_BY_DECISIONS, true, &ls->ndest);
	ls->up = sm_sorted(sm, SM_DEST, SM_BY_UP, true, &ls->nup);
	ls->ref = sm_sorted(sm, SM_REF, SM_BY_COUNT, true, &ls->nref);
	ls->sec = sm_sorted(sm, SM_SECRET, SM_BY_DECISIONS, true, &ls->nsec);
	ls->cli = sm_sorted(sm, SM_CLIENT, SM_BY_DECISIONS, true, &ls->ncli);
}

static json_t *
sm_jsandbox(const struct audit_tab_ent *e, const struct sm_lists *ls,
    size_t top)
{
	const struct sm_sbx	*s = e->val;
	size_t			 lo, hi, ulo, uhi, rlo, rhi, slo, shi, clo, chi;

	sm_slice(ls->dest, ls->ndest, e->key, &lo, &hi);
	sm_slice(ls->up, ls->nup, e->key, &ulo, &uhi);
	sm_slice(ls->ref, ls->nref, e->key, &rlo, &rhi);
	sm_slice(ls->sec, ls->nsec, e->key, &slo, &shi);
	sm_slice(ls->cli, ls->ncli, e->key, &clo, &chi);
	return json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:s, "
	    "s:o*, s:o*, s:o*, s:o*, s:o*, s:o*}",
	    "sandbox", e->key, "decisions", (json_int_t)s->decisions,
	    "allowed", (json_int_t)s->allowed, "refused", (json_int_t)s->denied,
	    "would_deny", (json_int_t)s->would, "dns", (json_int_t)s->dns,
	    "bytes_up", (json_int_t)s->bytes_up,
	    "bytes_down", (json_int_t)s->bytes_down,
	    "first", s->first, "last", s->last,
	    "destinations", sm_jlist(ls->dest, lo, hi, SM_DEST, NULL, top),
	    "destinations_by_bytes_up", sm_jlist(ls->up, ulo, uhi, SM_DEST,
	    NULL, top),
	    "refusals", sm_jlist(ls->ref, rlo, rhi, SM_REF, "deny", top),
	    "would_denies", sm_jlist(ls->ref, rlo, rhi, SM_REF, "would", top),
	    "secrets", sm_jlist(ls->sec, slo, shi, SM_SECRET, NULL, top),
	    "clients", sm_jlist(ls->cli, clo, chi, SM_CLIENT, NULL, top));
}

json_t *
audit_summary_json(const struct audit_summary *sm, size_t top)
{
	struct sm_lists		 ls;
	struct audit_tab_ent	*sb;
	json_t			*root, *a, *t, *o;
	size_t			 nsb, i;

	memset(&ls, 0, sizeof(ls));
	sm_lists_make(sm, &ls);
	sb = sm_sorted(sm, SM_SBX, SM_BY_SBX_UP, false, &nsb);
	a = json_array();
	t = json_array();
	for (i = 0; i < nsb && a != NULL && t != NULL; i++) {
		const struct sm_sbx *s = sb[i].val;

		json_array_append_new(a, sm_jsandbox(&sb[i], &ls, top));
		if (i < top)
			json_array_append_new(t, json_pack("{s:s, s:I, s:I, "
			    "s:I}", "sandbox", sb[i].key,
			    "bytes_up", (json_int_t)s->bytes_up,
			    "bytes_down", (json_int_t)s->bytes_down,
			    "decisions", (json_int_t)s->decisions));
	}
	o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}",
	    "sandboxes", (json_int_t)sm->lost[SM_SBX],
	    "destinations", (json_int_t)sm->lost[SM_DEST],
	    "refusals", (json_int_t)sm->lost[SM_REF],
	    "secrets", (json_int_t)sm->lost[SM_SECRET],
	    "clients", (json_int_t)sm->lost[SM_CLIENT]);
	root = json_pack("{s:I, s:s, s:s, s:I, s:o*, s:o*, s:o*}",
	    "lines", (json_int_t)sm->lines, "first", sm->first,
	    "last", sm->last, "audit_dropped", (json_int_t)sm->dropped,
	    "top_talkers", t, "sandboxes", a, "not_itemised", o);
	free(sb);
	sm_lists_free(&ls);
	return root;
}

/* --- text ------------------------------------------------------------ */

static const char *
sm_bytes_str(uint64_t n, char *buf, size_t cap)
{
	static const char	*units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double			 v = (double)n;
	size_t			 u = 0;

	while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, cap, "%llu B", (unsigned long long)n);
	else
		snprintf(buf, cap, "%.1f %s", v, units[u]);
	return buf;
}

static void
sm_tdest(FILE *f, const struct audit_tab_ent *v, size_t lo, size_t hi,
    size_t top, const char *title)
{
	char		 a[32], b[32];
	const char	*port;
	size_t		 i;

	if (lo == hi)
		return;
	fprintf(f, "  %s:\n    %10s %8s %8s %11s %11s  %s\n", title,
	    "decisions", "refused", "would", "bytes up", "bytes down",
	    "destination");
	for (i = lo; i < hi && i - lo < top; i++) {
		const struct sm_dest *d = v[i].val;

		port = sm_part(v[i].key, 2);
		fprintf(f, "    %10llu %8llu %8llu %11s %11s  ",
		    (unsigned long long)d->decisions,
		    (unsigned long long)d->denied,
		    (unsigned long long)d->would,
		    sm_bytes_str(d->bytes_up, a, sizeof(a)),
		    sm_bytes_str(d->bytes_down, b, sizeof(b)));
		audit_cmd_puts(f, sm_part(v[i].key, 1));
		if (strcmp(port, "dns") == 0)
			fprintf(f, " (dns)\n");
		else if (port[0] != '\0')
			fprintf(f, ":%s\n", port);
		else
			fprintf(f, "\n");
	}
	if (hi - lo > top)
		fprintf(f, "    ... %zu more\n", hi - lo - top);
}

/* s, escaped, then spaces to width columns, then one space. */
static void
sm_pad(FILE *f, const char *s, size_t width)
{
	size_t	n = strlen(s);

	audit_cmd_puts(f, s);
	for (; n < width; n++)
		putc(' ', f);
	putc(' ', f);
}

static void
sm_tref(FILE *f, const struct audit_tab_ent *v, size_t lo, size_t hi,
    size_t top, const char *kind, const char *title)
{
	size_t	i, k = 0, more = 0;

	for (i = lo; i < hi; i++) {
		const struct sm_ref *r = v[i].val;

		if (strcmp(sm_part(v[i].key, 1), kind) != 0)
			continue;
		if (k == top) {
			more++;
			continue;
		}
		if (k++ == 0)
			fprintf(f, "  %s:\n    %10s  %-20s %-20s %s\n", title,
			    "count", "reason", "rule", "for example");
		fprintf(f, "    %10llu  ", (unsigned long long)r->count);
		sm_pad(f, sm_part(v[i].key, 2), 20);
		sm_pad(f, sm_part(v[i].key, 3), 20);
		audit_cmd_puts(f, r->example);
		fprintf(f, "\n");
	}
	if (more > 0)
		fprintf(f, "    ... %zu more\n", more);
}

static void
sm_tcount(FILE *f, const struct audit_tab_ent *v, size_t lo, size_t hi,
    size_t top, int table)
{
	char	a[32], b[32];
	size_t	i;

	if (lo == hi)
		return;
	if (table == SM_SECRET)
		fprintf(f, "  secrets injected, by host:\n    %10s  %s\n",
		    "requests", "secret -> host");
	else
		fprintf(f, "  clients:\n    %10s %11s %11s  %s\n", "decisions",
		    "bytes up", "bytes down", "address");
	for (i = lo; i < hi && i - lo < top; i++) {
		const struct sm_count *c = v[i].val;

		if (table == SM_SECRET) {
			fprintf(f, "    %10llu  ",
			    (unsigned long long)c->decisions);
			audit_cmd_puts(f, sm_part(v[i].key, 1));
			fprintf(f, " -> ");
			audit_cmd_puts(f, sm_part(v[i].key, 2));
		} else {
			fprintf(f, "    %10llu %11s %11s  ",
			    (unsigned long long)c->decisions,
			    sm_bytes_str(c->bytes_up, a, sizeof(a)),
			    sm_bytes_str(c->bytes_down, b, sizeof(b)));
			audit_cmd_puts(f, sm_part(v[i].key, 1));
		}
		fprintf(f, "\n");
	}
	if (hi - lo > top)
		fprintf(f, "    ... %zu more\n", hi - lo - top);
}

static void
sm_tsandbox(FILE *f, const struct audit_tab_ent *e, const struct sm_lists *ls,
    size_t top)
{
	const struct sm_sbx	*s = e->val;
	char			 a[32], b[32];
	size_t			 lo, hi;

	fprintf(f, "\nsandbox ");
	audit_cmd_puts(f, e->key);
	fprintf(f, ": %llu decisions (%llu allowed, %llu refused, %llu "
	    "would-deny), %llu DNS queries, %s up, %s down, %s to %s\n",
	    (unsigned long long)s->decisions, (unsigned long long)s->allowed,
	    (unsigned long long)s->denied, (unsigned long long)s->would,
	    (unsigned long long)s->dns,
	    sm_bytes_str(s->bytes_up, a, sizeof(a)),
	    sm_bytes_str(s->bytes_down, b, sizeof(b)), s->first, s->last);
	sm_slice(ls->dest, ls->ndest, e->key, &lo, &hi);
	sm_tdest(f, ls->dest, lo, hi, top, "destinations by decisions");
	sm_slice(ls->up, ls->nup, e->key, &lo, &hi);
	while (hi > lo && ((const struct sm_dest *)ls->up[hi - 1].val)->
	    bytes_up == 0)
		hi--;
	sm_tdest(f, ls->up, lo, hi, top, "destinations by bytes sent");
	sm_slice(ls->ref, ls->nref, e->key, &lo, &hi);
	sm_tref(f, ls->ref, lo, hi, top, "deny", "refusals by reason and rule");
	sm_tref(f, ls->ref, lo, hi, top, "would", "would-denies (audit "
	    "mode) by reason and rule");
	sm_slice(ls->sec, ls->nsec, e->key, &lo, &hi);
	sm_tcount(f, ls->sec, lo, hi, top, SM_SECRET);
	sm_slice(ls->cli, ls->ncli, e->key, &lo, &hi);
	sm_tcount(f, ls->cli, lo, hi, top, SM_CLIENT);
}

void
audit_summary_text(const struct audit_summary *sm, size_t top, FILE *f)
{
	struct sm_lists		 ls;
	struct audit_tab_ent	*sb;
	char			 a[32], b[32];
	size_t			 nsb, i;

	fprintf(f, "%llu lines, %s to %s\n", (unsigned long long)sm->lines,
	    sm->first[0] != '\0' ? sm->first : "-",
	    sm->last[0] != '\0' ? sm->last : "-");
	if (sm->dropped > 0)
		fprintf(f, "moatd lost %llu lines (audit-dropped): the record "
		    "has gaps\n", (unsigned long long)sm->dropped);
	memset(&ls, 0, sizeof(ls));
	sm_lists_make(sm, &ls);
	sb = sm_sorted(sm, SM_SBX, SM_BY_SBX_UP, false, &nsb);
	if (nsb > 0)
		fprintf(f, "\nsandboxes by bytes sent (top talkers):\n"
		    "  %11s %11s %10s %8s  %s\n", "bytes up", "bytes down",
		    "decisions", "refused", "sandbox");
	for (i = 0; i < nsb && i < top; i++) {
		const struct sm_sbx *s = sb[i].val;

		fprintf(f, "  %11s %11s %10llu %8llu  ",
		    sm_bytes_str(s->bytes_up, a, sizeof(a)),
		    sm_bytes_str(s->bytes_down, b, sizeof(b)),
		    (unsigned long long)s->decisions,
		    (unsigned long long)s->denied);
		audit_cmd_puts(f, sb[i].key);
		fprintf(f, "\n");
	}
	for (i = 0; i < nsb; i++)
		sm_tsandbox(f, &sb[i], &ls, top);
	for (i = 0; i < SM__COUNT; i++)
		if (sm->lost[i] > 0)
			fprintf(f, "\nnote: %llu lines were counted but not "
			    "itemised: a table reached its cap of %u\n",
			    (unsigned long long)sm->lost[i], i == SM_SBX ?
			    AUDIT_SUMMARY_SBX_CAP : AUDIT_SUMMARY_CAP);
	free(sb);
	sm_lists_free(&ls);
}

int
audit_summary_main(const struct audit_opts *o)
{
	struct audit_summary	*sm;
	json_t			*j;
	size_t			 top;
	long			 bad;
	int			 rc = AUDIT_EXIT_OK;

	if ((sm = audit_summary_new()) == NULL) {
		fprintf(stderr, "moat audit summary: out of memory\n");
		return AUDIT_EXIT_ERROR;
	}
	bad = audit_cmd_read(o, audit_summary_fold, sm);
	top = o->top == 0 ? SIZE_MAX : o->top;	/* --top 0: every row */
	if (bad != 0)
		rc = AUDIT_EXIT_ERROR;
	if (bad >= 0 && o->json) {
		if ((j = audit_summary_json(sm, top)) == NULL ||
		    json_dumpf(j, stdout, JSON_INDENT(2)) == -1) {
			fprintf(stderr, "moat audit summary: out of memory\n");
			rc = AUDIT_EXIT_ERROR;
		}
		putchar('\n');
		json_decref(j);
	} else if (bad >= 0)
		audit_summary_text(sm, top, stdout);
	audit_summary_free(sm);
	return rc;
}
