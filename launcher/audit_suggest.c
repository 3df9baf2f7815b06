/*
 * audit_suggest.c - `moat audit suggest`: a moat.json "policy" that
 * allows what the audit files say was allowed or would-denied.
 *
 * From every allowed request, open and dns line (a would-deny of audit
 * mode included): per host the ports, the methods (only while every
 * decision on the host was a request moatd read: an opaque tunnel, or a
 * method outside the list below, leaves the methods open), whether only
 * DNS ever asked for it, and a few of the addresses it was reached at.
 *
 * Hosts are grouped: names with a common parent ("a.x.com", "b.x.com",
 * "c.x.com") become "*.x.com" when at least --group N of them (default
 * AUDIT_GROUP_DEFAULT; 0: never) are its direct children; such a
 * wildcard also takes in every deeper name under it, and the shortest
 * one wins.  A parent of one label ("com") or one that looks like a
 * public suffix of two ("co.uk", "com.au") is never a wildcard's, nor
 * one with a name under it that the policy refused (no-rule,
 * denied-by-rule, dns-denied): a wildcard never opens what was shut.  Then
 * the hosts whose ports and methods are the same share one rule.  An IP
 * address gets a cidrs rule of itself (/32, /128).  A name only resolved,
 * never connected to, gets a rule of its own on port 443 ("dns-only-N"):
 * DNS answers any name some rule allows, on any port.
 *
 * Never the built-in deny sets: a metadata name is left out, an address
 * in a special-purpose range too, and allow_private holds only what
 * --allow-private gives.  The suggestion is loaded with the policy
 * library and every distinct allowed decision is judged against it
 * (audit_replay_judge()) before it is printed.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "launcher/audit_cmd.h"
#include "policy/policy.h"
#include "policyio/policyio.h"

#define AUDIT_SUGGEST_CAP	100000	/* hosts */
#define SG_PORTS_MAX		64	/* ports listed per host; past it "*" */
#define SG_IPS_MAX		4	/* addresses kept per host */
#define SG_DNS_ONLY_PORT	443
#define SG_NAME			"(the suggested policy)"

static const char	*sg_methods[] = {
	"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE",
	"PROPFIND", "PROPPATCH", "MKCOL", "COPY", "MOVE", "LOCK", "UNLOCK",
	"REPORT", "SEARCH", "QUERY"
};
#define SG_NMETHODS	(sizeof(sg_methods) / sizeof(sg_methods[0]))

struct sg_host {
	uint64_t	decisions;
	uint16_t	ports[SG_PORTS_MAX];
	uint8_t		nports;
	uint8_t		nips;
	bool		many_ports;
	bool		any_method;	/* an opaque tunnel or another method */
	bool		conn;		/* a request or a tunnel */
	bool		dns;
	bool		tls, plain;
	bool		addr;		/* an IP address, not a name */
	bool		refused;	/* the policy refused it (no wildcard
					   may cover it) */
	uint32_t	methods;
	char		ips[SG_IPS_MAX][48];
};

struct audit_suggest {
	struct audit_tab	*hosts;
	uint64_t		 lost, lines;
};

struct audit_suggest *
audit_suggest_new(void)
{
	struct audit_suggest	*sg;

	if ((sg = calloc(1, sizeof(*sg))) == NULL)
		return NULL;
	if ((sg->hosts = audit_tab_new(sizeof(struct sg_host),
	    AUDIT_SUGGEST_CAP)) == NULL) {
		free(sg);
		return NULL;
	}
	return sg;
}

void
audit_suggest_free(struct audit_suggest *sg)
{
	if (sg == NULL)
		return;
	audit_tab_free(sg->hosts);
	free(sg);
}

static void
sg_port(struct sg_host *h, uint16_t port)
{
	size_t	i;

	for (i = 0; i < h->nports; i++)
		if (h->ports[i] == port)
			return;
	if (h->nports == SG_PORTS_MAX)
		h->many_ports = true;
	else
		h->ports[h->nports++] = port;
}

static void
sg_method(struct sg_host *h, const char *m)
{
	size_t	i;

	for (i = 0; i < SG_NMETHODS; i++)
		if (strcmp(sg_methods[i], m) == 0) {
			h->methods |= UINT32_C(1) << i;
			return;
		}
	h->any_method = true;
}

static void
sg_ip(struct sg_host *h, const char *ip)
{
	size_t	i;

	if (ip == NULL || strlen(ip) >= sizeof(h->ips[0]))
		return;
	for (i = 0; i < h->nips; i++)
		if (strcmp(h->ips[i], ip) == 0)
			return;
	if (h->nips < SG_IPS_MAX)
		snprintf(h->ips[h->nips++], sizeof(h->ips[0]), "%s", ip);
}

int
audit_suggest_fold(void *arg, const struct audit_ln *l,
    const struct audit_where *w)
{
	struct audit_suggest	*sg = arg;
	struct policy_host	 ph;
	struct sg_host		*h;
	const char		*ev = l->event;
	bool			 full, req, deny;

	(void)w;
	if (ev == NULL || l->verdict == NULL || l->host == NULL ||
	    (strcmp(ev, "request") != 0 && strcmp(ev, "open") != 0 &&
	    strcmp(ev, "dns") != 0))
		return 0;
	deny = strcmp(l->verdict, "allow") != 0;
	if (deny && (l->reason == NULL || (strcmp(l->reason, "no-rule") != 0 &&
	    strcmp(l->reason, "denied-by-rule") != 0 &&
	    strcmp(l->reason, "dns-denied") != 0)))
		return 0;
	if (policy_host_normalise(l->host, strlen(l->host), &ph, NULL) == -1)
		return 0;
	if ((h = audit_tab_get(sg->hosts, ph.name, strlen(ph.name), &full)) ==
	    NULL) {
		sg->lost++;
		return full ? 0 : -1;
	}
	h->addr = ph.kind == POLICY_HOST_ADDR;
	if (deny) {
		h->refused = true;
		return 0;
	}
	sg->lines++;
	h->decisions++;
	if (strcmp(ev, "dns") == 0) {
		h->dns = true;
		return 0;
	}
	if (l->port < 1 || l->port > 65535)
		return 0;
	h->conn = true;
	sg_port(h, (uint16_t)l->port);
	sg_ip(h, l->ip);
	req = strcmp(ev, "request") == 0 && l->method != NULL;
	if (req) {
		sg_method(h, l->method);
		if (l->proto != NULL && strcmp(l->proto, "https") == 0)
			h->tls = true;
		else
			h->plain = true;
	} else {
		if (l->detail == NULL || strncmp(l->detail, "inspected", 9) !=
		    0)
			h->any_method = true;	/* opaque: methods unseen */
		if (l->port != 80)
			h->tls = true;
	}
	return 0;
}

/* --- grouping ---------------------------------------------------- */

/* Whether parent (a name's part after its first label) may be "*.". */
static bool
sg_parent_ok(const char *parent)
{
	static const char	*second[] = {
		"co", "com", "net", "org", "gov", "edu", "ac", "or", "ne",
		"go", "mil", "gob", "nic", "ltd", "plc", "sch", "nom"
	};
	const char		*dot = strchr(parent, '.');
	size_t			 i, n;

	if (dot == NULL)
		return false;			/* one label: "com" */
	if (strchr(dot + 1, '.') != NULL)
		return true;			/* three labels or more */
	n = (size_t)(dot - parent);
	if (strlen(dot + 1) != 2)
		return true;
	for (i = 0; i < sizeof(second) / sizeof(second[0]); i++)
		if (strlen(second[i]) == n && memcmp(second[i], parent, n) == 0)
			return false;		/* "co.uk", "com.au" */
	return true;
}

/* One pattern of the suggestion with what its hosts saw. */
struct sg_ent {
	char		*pattern;	/* a name, "*.parent" or an address */
	struct sg_host	 h;
	char		 sig[SG_PORTS_MAX * 6 + 64];
};

static void
sg_merge(struct sg_host *into, const struct sg_host *h)
{
	size_t	i;

	into->decisions += h->decisions;
	for (i = 0; i < h->nports; i++)
		sg_port(into, h->ports[i]);
	into->many_ports |= h->many_ports;
	into->any_method |= h->any_method;
	into->methods |= h->methods;
	into->conn |= h->conn;
	into->dns |= h->dns;
	into->tls |= h->tls;
	into->plain |= h->plain;
	into->addr = h->addr;
}

static int
sg_port_cmp(const void *a, const void *b)
{
	return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

/* What makes two patterns share a rule: kind, ports, methods. */
static void
sg_sig(struct sg_ent *e)
{
	size_t	i, n;

	if (e->h.nports > 0)
		qsort(e->h.ports, e->h.nports, sizeof(e->h.ports[0]),
		    sg_port_cmp);
	n = (size_t)snprintf(e->sig, sizeof(e->sig), "%c%c|",
	    e->h.addr ? 'a' : 'n', e->h.conn ? 'c' : 'd');
	if (e->h.many_ports)
		n += (size_t)snprintf(e->sig + n, sizeof(e->sig) - n, "*");
	for (i = 0; i < e->h.nports && !e->h.many_ports; i++)
		n += (size_t)snprintf(e->sig + n, sizeof(e->sig) - n, "%u,",
		    e->h.ports[i]);
	snprintf(e->sig + n, sizeof(e->sig) - n, "|%lx", e->h.any_method ||
	    e->h.methods == 0 ? 0ul : (unsigned long)e->h.methods);
}

/* The wildcard parent, among those in wild, that covers name: the
 * shortest; NULL if none. */
static const char *
sg_cover(struct audit_tab *wild, struct audit_tab *taint, size_t group,
    const char *name)
{
	const char	*p, *best = NULL;
	uint64_t	*n;

	for (p = strchr(name, '.'); p != NULL; p = strchr(p + 1, '.')) {
		n = audit_tab_find(wild, p + 1, strlen(p + 1));
		if (n != NULL && *n >= group && sg_parent_ok(p + 1) &&
		    audit_tab_find(taint, p + 1, strlen(p + 1)) == NULL)
			best = p + 1;
	}
	return best;
}

static int
sg_ent_cmp(const void *a, const void *b)
{
	const struct sg_ent	*x = a, *y = b;
	int			 c;

	if ((c = strcmp(x->sig, y->sig)) != 0)
		return c;
	return strcmp(x->pattern, y->pattern);
}

/* The patterns: each name under its wildcard or alone.  *n entries. */
static struct sg_ent *
sg_patterns(const struct audit_suggest *sg, size_t group, size_t *n)
{
	struct audit_tab_ent	*v;
	struct audit_tab	*wild, *ents, *taint;
	struct sg_ent		*out = NULL;
	struct sg_host		*h;
	const char		*dot, *cov;
	char			 pat[POLICY_NAME_MAX + 3];
	uint64_t		*cnt;
	size_t			 nv, i, ne;

	*n = 0;
	v = audit_tab_list(sg->hosts, &nv);
	wild = audit_tab_new(sizeof(uint64_t), AUDIT_SUGGEST_CAP);
	ents = audit_tab_new(sizeof(struct sg_host), AUDIT_SUGGEST_CAP);
	taint = audit_tab_new(1, AUDIT_SUGGEST_CAP);
	if (wild == NULL || ents == NULL || taint == NULL)
		goto out;
	/* No wildcard over a name the policy refused. */
	for (i = 0; i < nv; i++) {
		h = v[i].val;
		if (!h->refused || h->addr)
			continue;
		for (dot = strchr(v[i].key, '.'); dot != NULL;
		    dot = strchr(dot + 1, '.'))
			(void)audit_tab_get(taint, dot + 1, strlen(dot + 1),
			    NULL);
	}
	for (i = 0; i < nv; i++) {
		h = v[i].val;
		if (h->decisions == 0 || h->addr ||
		    (dot = strchr(v[i].key, '.')) == NULL)
			continue;
		if ((cnt = audit_tab_get(wild, dot + 1, strlen(dot + 1),
		    NULL)) != NULL)
			(*cnt)++;
	}
	for (i = 0; i < nv; i++) {
		h = v[i].val;
		if (h->decisions == 0)
			continue;	/* refused only */
		cov = group > 0 && !h->addr ? sg_cover(wild, taint, group,
		    v[i].key) : NULL;
		if (cov != NULL)
			snprintf(pat, sizeof(pat), "*.%s", cov);
		else
			snprintf(pat, sizeof(pat), "%s", v[i].key);
		if ((h = audit_tab_get(ents, pat, strlen(pat), NULL)) == NULL)
			goto out;
		sg_merge(h, v[i].val);
	}
	free(v);
	v = audit_tab_list(ents, &nv);
	if (nv > 0 && (out = calloc(nv, sizeof(*out))) == NULL)
		goto out;
	for (i = 0, ne = 0; i < nv; i++, ne++) {
		out[ne].pattern = strdup(v[i].key);
		out[ne].h = *(struct sg_host *)v[i].val;
		if (out[ne].pattern == NULL)
			goto out;
		sg_sig(&out[ne]);
	}
	if (nv > 0)	/* qsort(NULL, 0, ...) is undefined */
		qsort(out, nv, sizeof(*out), sg_ent_cmp);
	*n = nv;
 out:
	if (*n == 0 && out != NULL) {
		for (i = 0; i < nv; i++)
			free(out[i].pattern);
		free(out);
		out = NULL;
	}
	free(v);
	audit_tab_free(wild);
	audit_tab_free(ents);
	audit_tab_free(taint);
	return out;
}

/* The rule for e[0..k) (same signature). */
static json_t *
sg_rule(const struct sg_ent *e, size_t k, size_t index)
{
	const struct sg_host	*h = &e[0].h;
	json_t			*r, *pats, *ports, *m;
	char			 name[48], cidr[64];
	size_t			 i;

	snprintf(name, sizeof(name), "%s-%zu", !h->conn ? "dns-only" :
	    h->addr ? "seen-address" : "seen", index);
	pats = json_array();
	for (i = 0; i < k; i++) {
		if (h->addr)
			snprintf(cidr, sizeof(cidr), "%s/%s", e[i].pattern,
			    strchr(e[i].pattern, ':') != NULL ? "128" : "32");
		json_array_append_new(pats, json_string(h->addr ? cidr :
		    e[i].pattern));
	}
	ports = json_array();
	if (!h->conn)
		json_array_append_new(ports, json_integer(SG_DNS_ONLY_PORT));
	else if (h->many_ports)
		json_array_append_new(ports, json_string("*"));
	for (i = 0; h->conn && !h->many_ports && i < h->nports; i++)
		json_array_append_new(ports, json_integer(h->ports[i]));
	r = json_pack("{s:s, s:s, s:o, s:o}", "name", name, "action", "allow",
	    h->addr ? "cidrs" : "hosts", pats, "ports", ports);
	if (r == NULL || !h->conn || h->any_method || h->methods == 0)
		return r;
	m = json_array();
	for (i = 0; i < SG_NMETHODS; i++)
		if (h->methods & (UINT32_C(1) << i))
			json_array_append_new(m, json_string(sg_methods[i]));
	json_object_set_new(r, "methods", m);
	return r;
}

/* A config of nothing but allow_private, for the deny-set checks. */
static struct moat_config *
sg_base(const char *const *ap, size_t nap, char *err, size_t errlen)
{
	struct policy_diags	 d;
	struct moat_config	*c;
	json_t			*a = json_array(), *root;
	char			*text, line[512];
	size_t			 i;

	for (i = 0; i < nap; i++)
		json_array_append_new(a, json_string(ap[i]));
	root = json_pack("{s:[], s:{s:o}}", "listen", "policy",
	    "allow_private", a);
	text = root != NULL ? json_dumps(root, 0) : NULL;
	json_decref(root);
	if (text == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	policy_diags_init(&d);
	c = policy_config_load_opts("--allow-private", text, strlen(text),
	    NULL, &d);
	if (c == NULL)
		snprintf(err, errlen, "%s", d.n > 0 ?
		    policy_diag_format(&d, 0, line, sizeof(line)) :
		    "--allow-private: out of memory");
	policy_diags_clear(&d);
	free(text);
	return c;
}

/* Drops what a built-in deny set refuses (said on stderr). */
static bool
sg_denied(const struct moat_config *base, const struct sg_ent *e)
{
	struct policy_host	ph;
	enum policy_reason	r;

	if (e->h.addr) {
		if (policy_host_normalise(e->pattern, strlen(e->pattern), &ph,
		    NULL) == -1)
			return true;
		r = policy_builtin_denied(base->policy, NULL, &ph.addr);
	} else if (e->pattern[0] == '*')
		return false;
	else
		r = policy_builtin_denied(base->policy, e->pattern, NULL);
	if (r == POLICY_R_ALLOWED)
		return false;
	fprintf(stderr, "moat audit suggest: %s left out: a built-in deny set "
	    "(%s) refuses it%s\n", e->pattern, policy_reason_str(r),
	    e->h.addr && r == POLICY_R_PRIVATE_ADDRESS ? "; --allow-private "
	    "CIDR opens a range" : "");
	return true;
}

json_t *
audit_suggest_policy(const struct audit_suggest *sg, size_t group,
    const char *const *ap, size_t nap, char *err, size_t errlen)
{
	struct moat_config	*base;
	struct sg_ent		*e;
	json_t			*rules, *pol, *aps;
	size_t			 n, i, k, j, idx = 0;

	if ((base = sg_base(ap, nap, err, errlen)) == NULL)
		return NULL;
	e = sg_patterns(sg, group, &n);
	rules = json_array();
	for (i = 0; i < n && rules != NULL; i = k) {
		for (k = i + 1; k < n && strcmp(e[k].sig, e[i].sig) == 0; k++)
			;
		/* The deny sets out; what is left shares a rule. */
		for (j = i; j < k; j++)
			if (sg_denied(base, &e[j])) {
				free(e[j].pattern);
				memmove(&e[j], &e[j + 1], (n - j - 1) *
				    sizeof(*e));
				n--;
				k--;
				j--;
			}
		if (k > i)
			json_array_append_new(rules, sg_rule(&e[i], k - i,
			    ++idx));
	}
	for (i = 0; i < n; i++)
		free(e[i].pattern);
	free(e);
	policy_config_unref(base);
	aps = json_array();
	for (i = 0; i < nap; i++)
		json_array_append_new(aps, json_string(ap[i]));
	pol = json_pack("{s:s, s:o}", "default", "deny", "rules", rules);
	if (pol != NULL && nap > 0)
		json_object_set_new(pol, "allow_private", aps);
	else
		json_decref(aps);
	if (pol == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	return json_pack("{s:o}", "policy", pol);
}

/* --- the check ----------------------------------------------------- */

/* The suggestion as a config for a running moatd (its CA stands in). */
static struct moat_config *
sg_load(const json_t *policy, FILE *f)
{
	struct policy_diags	 d;
	struct moat_config	*c;
	json_t			*root;
	char			*text, line[1024];
	size_t			 i;

	root = json_deep_copy(policy);
	if (root == NULL || json_object_set_new(root, "listen",
	    json_array()) == -1 || json_object_set_new(root, "tls",
	    json_pack("{s:s, s:s}", "ca_cert", "(moatd's)", "ca_key",
	    "(moatd's)")) == -1 || (text = json_dumps(root, 0)) == NULL) {
		json_decref(root);
		fprintf(f, "moat audit suggest: out of memory\n");
		return NULL;
	}
	json_decref(root);
	policy_diags_init(&d);
	policyio_idn_for(text, strlen(text));
	c = policy_config_load_opts(SG_NAME, text, strlen(text),
	    &policyio_load_opts, &d);
	for (i = 0; i < d.n && c == NULL; i++)
		fprintf(f, "%s\n", policy_diag_format(&d, i, line,
		    sizeof(line)));
	policy_diags_clear(&d);
	free(text);
	return c;
}

#define SG_SHOWN	10	/* refusals of the check named one by one */

/* Judges one decision rebuilt from h; counts and names a refusal
 * (*seen: those so far; *denyset: refused by a built-in deny set). */
static long
sg_check1(const struct moat_config *c, const char *host,
    const struct sg_host *h, const char *ev, int64_t port,
    const char *method, const char *ip, FILE *f, long *seen, bool *denyset)
{
	struct audit_judgement	j;
	struct audit_ln		l;

	memset(&l, 0, sizeof(l));
	l.event = ev;
	l.verdict = "allow";
	l.reason = "allowed";
	l.host = host;
	l.port = port;
	l.method = method;
	l.path = method != NULL ? "/" : NULL;
	l.proto = method == NULL ? "connect" : h->tls ? "https" : "http";
	l.ip = ip;
	l.detail = h->any_method ? NULL : "inspected";
	if (audit_replay_judge(c, &l, &j) != AUDIT_J_TO_DENY)
		return 0;
	if (strcmp(j.reason, "private-address") == 0 ||
	    strcmp(j.reason, "metadata") == 0)
		*denyset = true;
	if (++*seen > SG_SHOWN)
		return 1;
	fprintf(f, "moat audit suggest: the suggestion would refuse %s %s%s"
	    "%lld%s%s: %s (rule %s)\n", ev, host, port >= 0 ? ":" : "",
	    (long long)port, ip != NULL ? " at " : "", ip != NULL ? ip : "",
	    j.reason, j.rule != NULL ? j.rule : "-");
	return 1;
}

long
audit_suggest_check(const struct audit_suggest *sg, const json_t *policy,
    FILE *f)
{
	struct moat_config	*c;
	struct audit_tab_ent	*v;
	const struct sg_host	*h;
	size_t			 n, i, p, m, a;
	long			 bad = 0, seen = 0;
	bool			 ds = false;

	if ((c = sg_load(policy, f)) == NULL)
		return -1;
	v = audit_tab_list(sg->hosts, &n);
	for (i = 0; i < n; i++) {
		h = v[i].val;
		if (h->decisions == 0)
			continue;
		if (h->dns)
			bad += sg_check1(c, v[i].key, h, "dns", -1, NULL, NULL,
			    f, &seen, &ds);
		for (p = 0; p < h->nports; p++) {
			bad += sg_check1(c, v[i].key, h, "open", h->ports[p],
			    NULL, NULL, f, &seen, &ds);
			for (m = 0; m < SG_NMETHODS; m++)
				if (h->methods & (UINT32_C(1) << m))
					bad += sg_check1(c, v[i].key, h,
					    "request", h->ports[p],
					    sg_methods[m], NULL, f, &seen, &ds);
		}
		/* The addresses: the deny sets do not look at the port. */
		for (a = 0; a < h->nips && h->nports > 0; a++)
			bad += sg_check1(c, v[i].key, h, "open", h->ports[0],
			    NULL, h->ips[a], f, &seen, &ds);
	}
	free(v);
	policy_config_unref(c);
	if (seen > SG_SHOWN)
		fprintf(f, "moat audit suggest: ... and %ld more\n",
		    seen - SG_SHOWN);
	if (ds)
		fprintf(f, "moat audit suggest: a suggestion never opens a "
		    "built-in deny set by itself: if those addresses are "
		    "meant (a private service), give --allow-private CIDR\n");
	return bad;
}

int
audit_suggest_main(const struct audit_opts *o)
{
	struct audit_suggest	*sg;
	json_t			*pol = NULL;
	char			 err[AUDIT_ERR_MAX];
	long			 bad, refused;
	int			 rc = AUDIT_EXIT_ERROR;

	if ((sg = audit_suggest_new()) == NULL) {
		fprintf(stderr, "moat audit suggest: out of memory\n");
		return AUDIT_EXIT_ERROR;
	}
	if ((bad = audit_cmd_read(o, audit_suggest_fold, sg)) < 0)
		goto out;
	if ((pol = audit_suggest_policy(sg, o->group, o->allow_private,
	    o->nallow_private, err, sizeof(err))) == NULL) {
		fprintf(stderr, "moat audit suggest: %s\n", err);
		goto out;
	}
	if ((refused = audit_suggest_check(sg, pol, stderr)) < 0) {
		fprintf(stderr, "moat audit suggest: the suggestion does not "
		    "load (a bug: please report it); not printed\n");
		goto out;
	}
	if (sg->lost > 0)
		fprintf(stderr, "moat audit suggest: %llu decisions on more "
		    "than %u hosts are not in the suggestion\n",
		    (unsigned long long)sg->lost, AUDIT_SUGGEST_CAP);
	if (json_dumpf(pol, stdout, JSON_INDENT(2)) == -1)
		goto out;
	putchar('\n');
	if (refused > 0)
		fprintf(stderr, "moat audit suggest: %ld recorded decisions "
		    "would be refused by it (above)\n", refused);
	rc = bad > 0 ? AUDIT_EXIT_ERROR : refused > 0 ? AUDIT_EXIT_CHANGED :
	    AUDIT_EXIT_OK;
 out:
	json_decref(pol);
	audit_suggest_free(sg);
	return rc;
}
