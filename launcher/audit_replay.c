/*
 * audit_replay.c - `moat audit replay --policy FILE`: every recorded
 * decision judged again under FILE.
 *
 * A decision is a request, open or dns line whose outcome the policy
 * made: allowed (a would-deny of audit mode went through, so it counts as
 * allowed), or refused for a policy reason (no-rule, denied-by-rule,
 * port, method, path, private-address, metadata, needs-inspection,
 * needs-tls, dns-denied, method-override, body-on-get).  Lines refused
 * after the policy allowed them (a timeout, an unreachable upstream, a
 * secret leak, a rate, ...) are not replayed, only counted: FILE would
 * let them through the same way, and what happened next is not the
 * policy's.
 *
 * The question is rebuilt from the line as moatd asked it: the name
 * first (port 0 for a DNS query), then the address dialled ("ip"), or
 * every address of a DNS answer; a request with its method and path, a
 * tunnel with neither; needs-inspection, needs-tls and the git preset as
 * `moat explain` applies them.  What a line does not record is taken as
 * absent: a request's body and method-override headers (unless the line
 * was refused for them), the protocol inside an opaque tunnel.
 *
 * Changes are grouped by (allowed -> refused or refused -> allowed, host
 * and port, old and new reason, rule), each with a count, the first and
 * last time and an example.  Exit 1 when some allowed decision would be
 * refused, so that a CI job can gate a policy change on it.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "launcher/audit_cmd.h"
#include "policy/policy.h"

#define AUDIT_REPLAY_CAP	100000	/* groups of changes */
#define AUDIT_REPLAY_KEY_MAX	1200
#define AUDIT_REPLAY_EXAMPLE	160
#define AUDIT_REPLAY_ADDRS	16	/* addresses of one DNS answer */

struct rp_group {
	uint64_t	count, would;
	char		first[AUDIT_TS_LEN + 1], last[AUDIT_TS_LEN + 1];
	char		example[AUDIT_REPLAY_EXAMPLE];
	char		sandbox[64];
	char		old_rule[64];
};

struct rp_state {
	const struct moat_config	*cfg;
	const char			*file;
	struct audit_tab		*groups;
	struct audit_tab		*skipped;	/* why -> count */
	uint64_t			 decisions, same, to_deny, to_allow;
	uint64_t			 reason, would_allowed, lost;
};

/* The reasons a policy gives, as a refused line records them. */
static bool
rp_policy_reason(const char *r)
{
	static const char	*policy[] = {
		"no-rule", "denied-by-rule", "port", "method", "path",
		"private-address", "metadata", "needs-inspection",
		"needs-tls", "dns-denied", "method-override", "body-on-get"
	};
	size_t			 i;

	for (i = 0; i < sizeof(policy) / sizeof(policy[0]); i++)
		if (strcmp(policy[i], r) == 0)
			return true;
	return false;
}

/* Decides on et's target, then at the address text a, if any. */
static void
rp_decide(const struct moat_config *c, struct policy_explain_target *et,
    const char *a, size_t alen, struct policy_decision *d, bool *addr_bad)
{
	struct policy_host	ah;
	struct policy_target	t2;

	policy_explain_decide(c, et, &et->t, d, NULL, NULL);
	if (d->verdict != POLICY_ALLOW || a == NULL || et->t.name == NULL)
		return;
	if (policy_host_normalise(a, alen, &ah, NULL) == -1 ||
	    ah.kind != POLICY_HOST_ADDR) {
		*addr_bad = true;
		return;
	}
	t2 = et->t;
	t2.addr = &ah.addr;
	policy_explain_decide(c, et, &t2, d, NULL, NULL);
}

/* A DNS answer: allowed while one of its addresses passes. */
static void
rp_dns(const struct moat_config *c, struct policy_explain_target *et,
    const char *answer, struct policy_decision *d, bool *addr_bad)
{
	struct policy_decision	 first_deny, one;
	const char		*p = answer, *e;
	size_t			 n = 0;
	bool			 any = false;

	policy_explain_decide(c, et, &et->t, d, NULL, NULL);
	if (d->verdict != POLICY_ALLOW || answer == NULL)
		return;
	memset(&first_deny, 0, sizeof(first_deny));
	for (; *p != '\0' && n < AUDIT_REPLAY_ADDRS; p = *e ? e + 1 : e, n++) {
		if ((e = strchr(p, ',')) == NULL)
			e = p + strlen(p);
		rp_decide(c, et, p, (size_t)(e - p), &one, addr_bad);
		if (one.verdict == POLICY_ALLOW) {
			any = true;
			*d = one;
			break;
		}
		if (n == 0)
			first_deny = one;
	}
	if (!any && n > 0)
		*d = first_deny;
}

enum audit_judged
audit_replay_judge(const struct moat_config *c, const struct audit_ln *l,
    struct audit_judgement *j)
{
	struct policy_explain_target	 et;
	struct policy_decision		 d;
	const char			*ev = l->event;
	bool				 dns, bad = false;

	memset(j, 0, sizeof(*j));
	j->what = AUDIT_J_SKIP;
	if (ev == NULL || (strcmp(ev, "request") != 0 && strcmp(ev, "open") !=
	    0 && strcmp(ev, "dns") != 0)) {
		j->skip = "not a decision";
		return j->what;
	}
	if (l->verdict == NULL || l->host == NULL || l->reason == NULL) {
		j->skip = "no verdict, host or reason";
		return j->what;
	}
	j->was_allowed = strcmp(l->verdict, "allow") == 0;
	if (!j->was_allowed && !rp_policy_reason(l->reason)) {
		j->skip = l->reason;	/* refused after the policy */
		return j->what;
	}
	dns = strcmp(ev, "dns") == 0;
	memset(&et, 0, sizeof(et));
	if (policy_host_normalise(l->host, strlen(l->host), &et.host,
	    NULL) == -1) {
		j->skip = "a host that cannot be judged";
		return j->what;
	}
	if (et.host.kind == POLICY_HOST_NAME)
		et.t.name = et.host.name;
	else
		et.t.addr = &et.host.addr;
	if (!dns && (l->port < 1 || l->port > 65535)) {
		j->skip = "no port";
		return j->what;
	}
	et.t.port = dns ? 0 : (uint16_t)l->port;
	if (strcmp(ev, "request") == 0 && l->method != NULL) {
		et.t.method = l->method;
		et.t.path = l->path != NULL ? l->path : "/";
		et.tls = l->proto != NULL && strcmp(l->proto, "https") == 0;
		if (strcmp(l->reason, "body-on-get") == 0)
			et.t.req |= POLICY_REQ_BODY;
		if (strcmp(l->reason, "method-override") == 0)
			et.t.req |= POLICY_REQ_OVERRIDE;
	} else
		et.tls = !dns && et.t.port != 80;
	if (dns)
		rp_dns(c, &et, l->answer, &d, &bad);
	else
		rp_decide(c, &et, l->ip, l->ip != NULL ? strlen(l->ip) : 0,
		    &d, &bad);
	if (bad) {
		j->skip = "an address that cannot be judged";
		return j->what;
	}
	j->now_allowed = d.verdict == POLICY_ALLOW;
	j->reason = dns && !j->now_allowed ? "dns-denied" :
	    policy_reason_str(d.reason);
	j->rule = d.rule_name;
	if (j->was_allowed != j->now_allowed)
		j->what = j->now_allowed ? AUDIT_J_TO_ALLOW : AUDIT_J_TO_DENY;
	else if (!j->now_allowed && strcmp(j->reason, l->reason) != 0)
		j->what = AUDIT_J_REASON;
	else
		j->what = AUDIT_J_SAME;
	return j->what;
}

static void
rp_example(const struct audit_ln *l, char *buf, size_t cap)
{
	if (l->method != NULL)
		snprintf(buf, cap, "%s %s %s", l->proto != NULL ? l->proto :
		    "-", l->method, l->path != NULL ? l->path : "/");
	else
		snprintf(buf, cap, "%s %s", l->proto != NULL ? l->proto : "-",
		    l->event);
}

static int
rp_fold(void *arg, const struct audit_ln *l, const struct audit_where *w)
{
	struct rp_state		*st = arg;
	struct audit_judgement	 j;
	struct rp_group		*g;
	const char		*parts[6];
	char			 key[AUDIT_REPLAY_KEY_MAX], port[16];
	uint64_t		*skip;
	size_t			 n;
	bool			 full;

	(void)w;
	if (audit_replay_judge(st->cfg, l, &j) == AUDIT_J_SKIP) {
		if (strcmp(j.skip, "not a decision") == 0)
			return 0;
		parts[0] = j.skip;
		if ((n = audit_tab_key(key, sizeof(key), parts, 1)) > 0 &&
		    (skip = audit_tab_get(st->skipped, key, n, &full)) != NULL)
			(*skip)++;
		return 0;
	}
	st->decisions++;
	switch (j.what) {
	case AUDIT_J_SAME:
		st->same++;
		if (l->would_deny != NULL && j.now_allowed)
			st->would_allowed++;
		return 0;
	case AUDIT_J_REASON:
		st->reason++;
		return 0;
	case AUDIT_J_TO_DENY:
		st->to_deny++;
		break;
	default:
		st->to_allow++;
		break;
	}
	snprintf(port, sizeof(port), "%lld", (long long)l->port);
	parts[0] = j.what == AUDIT_J_TO_DENY ? "deny" : "allow";
	parts[1] = l->host;
	parts[2] = strcmp(l->event, "dns") == 0 ? "dns" : port;
	parts[3] = l->would_deny != NULL ? l->would_deny : l->reason;
	parts[4] = j.reason;
	parts[5] = j.rule != NULL ? j.rule : "-";
	if ((n = audit_tab_key(key, sizeof(key), parts, 6)) == 0 ||
	    (g = audit_tab_get(st->groups, key, n, &full)) == NULL) {
		st->lost++;
		return n > 0 && !full ? -1 : 0;
	}
	if (g->count++ == 0) {
		rp_example(l, g->example, sizeof(g->example));
		snprintf(g->sandbox, sizeof(g->sandbox), "%s", l->sandbox !=
		    NULL ? l->sandbox : "-");
		snprintf(g->old_rule, sizeof(g->old_rule), "%s", l->rule !=
		    NULL ? l->rule : "-");
	}
	g->would += l->would_deny != NULL;
	if (l->ts != NULL && strlen(l->ts) <= AUDIT_TS_LEN) {
		if (g->first[0] == '\0' || strcmp(l->ts, g->first) < 0)
			strcpy(g->first, l->ts);
		if (strcmp(l->ts, g->last) > 0)
			strcpy(g->last, l->ts);
	}
	return 0;
}

static const char *
rp_part(const char *key, size_t i)
{
	while (i-- > 0)
		key += strlen(key) + 1;
	return key;
}

static int
rp_cmp(const void *a, const void *b)
{
	const struct audit_tab_ent	*x = a, *y = b;
	const struct rp_group		*p = x->val, *q = y->val;

	bool				 dx = strcmp(x->key, "deny") == 0;
	bool				 dy = strcmp(y->key, "deny") == 0;

	if (dx != dy)		/* allowed -> refused first */
		return dx ? -1 : 1;
	if (p->count != q->count)
		return p->count > q->count ? -1 : 1;
	return x->klen != y->klen ? (x->klen < y->klen ? -1 : 1) :
	    memcmp(x->key, y->key, x->klen);
}

static json_t *
rp_jgroup(const struct audit_tab_ent *e)
{
	const struct rp_group	*g = e->val;
	const char		*port = rp_part(e->key, 2), *rule;

	rule = rp_part(e->key, 5);
	return json_pack("{s:s, s:s, s:o, s:b, s:s, s:s, s:o, s:s, s:I, s:I, "
	    "s:s, s:s, s:s, s:s}",
	    "change", strcmp(e->key, "deny") == 0 ? "allowed->refused" :
	    "refused->allowed",
	    "host", rp_part(e->key, 1),
	    "port", strcmp(port, "dns") != 0 ? json_integer(atoll(port)) :
	    json_null(), "dns", strcmp(port, "dns") == 0,
	    "was", rp_part(e->key, 3), "now", rp_part(e->key, 4),
	    "rule", strcmp(rule, "-") != 0 ? json_string(rule) : json_null(),
	    "was_rule", g->old_rule,
	    "count", (json_int_t)g->count, "would_deny", (json_int_t)g->would,
	    "first", g->first, "last", g->last, "example", g->example,
	    "sandbox", g->sandbox);
}

static void
rp_tgroup(FILE *f, const struct audit_tab_ent *e)
{
	const struct rp_group	*g = e->val;
	const char		*port = rp_part(e->key, 2);
	bool			 deny = strcmp(e->key, "deny") == 0;

	fprintf(f, "  %8llu  ", (unsigned long long)g->count);
	audit_cmd_puts(f, rp_part(e->key, 1));
	if (strcmp(port, "dns") == 0)
		fprintf(f, " (dns)");
	else
		fprintf(f, ":%s", port);
	fprintf(f, "  was %s%s, now ", rp_part(e->key, 3),
	    deny && g->would == g->count ? " (would-deny)" : "");
	audit_cmd_puts(f, rp_part(e->key, 4));
	fprintf(f, " (rule ");
	audit_cmd_puts(f, rp_part(e->key, 5));
	fprintf(f, ")\n            e.g. ");
	audit_cmd_puts(f, g->example);
	fprintf(f, ", sandbox ");
	audit_cmd_puts(f, g->sandbox);
	fprintf(f, ", %s to %s\n", g->first, g->last);
}

static void
rp_text(const struct rp_state *st, const struct audit_tab_ent *v, size_t n,
    size_t top, FILE *f)
{
	struct audit_tab_ent	*sk;
	size_t			 i, nsk, shown = 0;
	bool			 deny = true;

	fprintf(f, "replayed %llu decisions under %s: %llu unchanged, %llu "
	    "allowed -> refused, %llu refused -> allowed, %llu refused for "
	    "another reason\n", (unsigned long long)st->decisions, st->file,
	    (unsigned long long)st->same, (unsigned long long)st->to_deny,
	    (unsigned long long)st->to_allow, (unsigned long long)st->reason);
	if (st->would_allowed > 0)
		fprintf(f, "%llu would-denied decisions are allowed by it\n",
		    (unsigned long long)st->would_allowed);
	for (i = 0; i < n; i++) {
		bool d = strcmp(v[i].key, "deny") == 0;

		if (i == 0 || d != deny) {
			deny = d;
			shown = 0;
			fprintf(f, "\n%s:\n", d ? "allowed -> refused (these "
			    "would break)" : "refused -> allowed (these would "
			    "open)");
		}
		if (shown++ < top)
			rp_tgroup(f, &v[i]);
		else if (shown == top + 1)
			fprintf(f, "  ... more groups (--top)\n");
	}
	if (st->lost > 0)
		fprintf(f, "\nnote: %llu changes not grouped (%u groups at "
		    "most)\n", (unsigned long long)st->lost, AUDIT_REPLAY_CAP);
	if ((sk = audit_tab_list(st->skipped, &nsk)) == NULL)
		return;
	fprintf(f, "\nnot replayed (refused after the policy allowed them, "
	    "or not judgeable):\n");
	for (i = 0; i < nsk; i++) {
		fprintf(f, "  %8llu  ",
		    (unsigned long long)*(uint64_t *)sk[i].val);
		audit_cmd_puts(f, sk[i].key);
		fprintf(f, "\n");
	}
	free(sk);
}

static json_t *
rp_json(const struct rp_state *st, const struct audit_tab_ent *v, size_t n,
    size_t top)
{
	struct audit_tab_ent	*sk;
	json_t			*ch = json_array(), *skip = json_object();
	size_t			 i, nsk, nd = 0, na = 0;

	for (i = 0; i < n && ch != NULL; i++) {
		size_t *k = strcmp(v[i].key, "deny") == 0 ? &nd : &na;

		if ((*k)++ < top)
			json_array_append_new(ch, rp_jgroup(&v[i]));
	}
	if ((sk = audit_tab_list(st->skipped, &nsk)) != NULL)
		for (i = 0; i < nsk && skip != NULL; i++)
			json_object_set_new(skip, sk[i].key, json_integer(
			    (json_int_t)*(uint64_t *)sk[i].val));
	free(sk);
	return json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o*, "
	    "s:o*}", "policy", st->file,
	    "decisions", (json_int_t)st->decisions,
	    "unchanged", (json_int_t)st->same,
	    "allowed_to_refused", (json_int_t)st->to_deny,
	    "refused_to_allowed", (json_int_t)st->to_allow,
	    "reason_changed", (json_int_t)st->reason,
	    "would_deny_now_allowed", (json_int_t)st->would_allowed,
	    "not_grouped", (json_int_t)st->lost,
	    "changes", ch, "not_replayed", skip);
}

int
audit_replay_main(const struct audit_opts *o)
{
	struct rp_state		 st;
	struct moat_config	*c;
	struct audit_tab_ent	*v;
	json_t			*j;
	size_t			 n, top = o->top == 0 ? SIZE_MAX : o->top;
	long			 bad;
	int			 rc;

	memset(&st, 0, sizeof(st));
	if ((c = o->load(o->policy)) == NULL) {
		fprintf(stderr, "moat audit replay: %s does not load: nothing "
		    "replayed\n", o->policy);
		return AUDIT_EXIT_ERROR;
	}
	st.cfg = c;
	st.file = o->policy;
	st.groups = audit_tab_new(sizeof(struct rp_group), AUDIT_REPLAY_CAP);
	st.skipped = audit_tab_new(sizeof(uint64_t), 256);
	if (st.groups == NULL || st.skipped == NULL)
		bad = -1;
	else
		bad = audit_cmd_read(o, rp_fold, &st);
	rc = bad != 0 ? AUDIT_EXIT_ERROR : st.to_deny > 0 ?
	    AUDIT_EXIT_CHANGED : AUDIT_EXIT_OK;
	if (bad >= 0) {
		v = audit_tab_list(st.groups, &n);
		if (v != NULL)
			qsort(v, n, sizeof(*v), rp_cmp);
		if (o->json) {
			if ((j = rp_json(&st, v, n, top)) == NULL ||
			    json_dumpf(j, stdout, JSON_INDENT(2)) == -1)
				rc = AUDIT_EXIT_ERROR;
			putchar('\n');
			json_decref(j);
		} else
			rp_text(&st, v, n, top, stdout);
		free(v);
	}
	if (bad != 0)
		fprintf(stderr, "moat audit replay: some input could not be "
		    "read: the replay is not complete\n");
	audit_tab_free(st.groups);
	audit_tab_free(st.skipped);
	policy_config_unref(c);
	return rc;
}
