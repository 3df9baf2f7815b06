/*
 * config_rules.c - the "policy" section of the config: the default
 * action, allow_private and the rules (hosts, cidrs, ports, methods,
 * paths, rate, protocols), compiled into struct policy.
 *
 * What it is not: deciding.  policy.c matches a connection or request
 * against what is built here.  The keys that hand a rule secrets
 * (inject, plain_http, git) are read in config_secrets.c, "countries"
 * and "asns" in config.c next to the GeoIP databases.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "policy/policy_int.h"
#include "policy/config_int.h"
#include "policy/jsonload.h"

size_t	config_list_apart_bytes = CONFIG_LIST_APART_BYTES;
size_t	config_list_batch = CONFIG_LIST_BATCH;

/* rules[].ports of an allow rule that names none. */
static const struct policy_port_range	config_allow_ports[] = {
	{ 80, 80 }, { 443, 443 }
};

static void	config_allow_private(struct config_ctx *x, json_t *v,
		    size_t pos);
static bool	config_cidr(struct config_ctx *x, json_t *v, size_t pos,
		    struct addr_cidr *c);
static void	config_rule(struct config_ctx *x, json_t *v, size_t pos,
		    size_t index);
static void	config_rules_apart(struct config_ctx *x, size_t pos);
static const char	*config_list_find(struct config_ctx *x, size_t start,
		    size_t end);
static void	config_list_apart(struct config_ctx *x, size_t pos,
		    uint32_t rule, const char *what,
		    void (*each)(struct config_ctx *, json_t *, size_t,
		    uint32_t));
static void	config_cidr_one(struct config_ctx *x, json_t *v, size_t pos,
		    uint32_t rule);
static bool	config_rule_name(struct config_ctx *x, struct config_field *f,
		    size_t pos, size_t index, struct policy_rule *r);
static int	config_range_cmp(const void *a, const void *b);
static bool	config_ports(struct config_ctx *x, json_t *v, size_t pos,
		    struct policy_rule *r);
static bool	config_methods(struct config_ctx *x, json_t *v, size_t pos,
		    struct policy_rule *r);
static bool	config_strict_methods(struct config_ctx *x,
		    const struct config_field *f, bool methods,
		    struct policy_rule *r);
static bool	config_paths(struct config_ctx *x, json_t *v, size_t pos,
		    struct policy_rule *r);
static bool	config_rate(struct config_ctx *x, json_t *v, size_t pos,
		    struct policy_rule *r);
static void	config_hosts(struct config_ctx *x, json_t *v, size_t pos,
		    uint32_t rule);
static void	config_host(struct config_ctx *x, json_t *v, size_t pos,
		    uint32_t rule);
static void	config_cidrs(struct config_ctx *x, json_t *v, size_t pos,
		    uint32_t rule);
static const char	*config_inspect_keys(const struct policy_rule *r,
		    bool quote, char *buf, size_t len);
static bool	config_covers(const struct policy_rule *r, uint16_t port);
static size_t	config_port_entry(struct config_ctx *x, json_t *v, size_t pos,
		    uint16_t port, size_t *at);
static bool	config_unreadable(struct config_ctx *x,
		    const struct config_field *f, const struct policy_rule *r);
static void	config_warn_denied(struct config_ctx *x, size_t pos,
		    const struct policy_rule *r, const struct addr_cidr *c);

/*
 * A rule that needs to see requests (inject, methods, paths, git,
 * "intercept": true) sees plain http:// ones always, and those inside a
 * tunnel (CONNECT, SOCKS5, transparent) only by terminating TLS, which
 * needs a CA.  Without one, moatd would have to refuse every tunnel such
 * a rule allows, or, for a deny rule, every tunnel to the hosts it
 * matches (else encryption would bypass it): refuse the config instead,
 * so the problem shows at --check, not as 403s.  A rule whose ports are
 * exactly [80] reaches only plain HTTP and needs no CA; an opaque rule
 * ("intercept": false) never terminates TLS.
 */
void
config_check_inspection(struct config_ctx *x)
{
	const struct policy_rule	*r;
	char				 what[64];
	size_t				 i;

	if (x->c->tls.ca_cert != NULL || x->ca_given)
		return;
	for (i = 0; i < x->p->nrules; i++) {
		r = &x->p->rules[i];
		if ((r->flags & POLICY_F_INSPECT) == 0 ||
		    (r->flags & POLICY_F_OPAQUE) != 0)
			continue;
		if (r->nports == 1 && r->ports[0].lo == 80 &&
		    r->ports[0].hi == 80)
			continue;
		diag_add(x->d, POLICY_DIAG_ERROR, r->line, r->column,
		    "policy.rules[%zu]: rule %s needs to see inside TLS (%s) "
		    "but no CA is configured: set tls.ca_cert and tls.ca_key "
		    "(moat ca init DIR)", i, r->name,
		    config_inspect_keys(r, false, what, sizeof(what)));
	}
}

/*
 * The keys that make rule r read requests, as a list ("inject, methods";
 * with quote, "\"inject\", \"methods\""), into buf.  Returns buf.
 */
static const char *
config_inspect_keys(const struct policy_rule *r, bool quote, char *buf,
    size_t len)
{
	const char	*keys[5];
	size_t		 n = 0, i, off = 0;
	int		 w;

	if ((r->given & POLICY_GIVEN_INJECT) != 0)
		keys[n++] = "inject";
	if (policy_more(r)->nmethods > 0)
		keys[n++] = "methods";
	if (policy_more(r)->npaths > 0)
		keys[n++] = "paths";
	if ((r->given & POLICY_GIVEN_GIT) != 0)
		keys[n++] = "git";
	if ((r->given & POLICY_GIVEN_INTERCEPT) != 0 || n == 0)
		keys[n++] = "intercept";
	buf[0] = '\0';
	for (i = 0; i < n; i++) {
		w = snprintf(buf + off, len - off, "%s%s%s%s", i ? ", " : "",
		    quote ? "\"" : "", keys[i], quote ? "\"" : "");
		if (w < 0 || (size_t)w >= len - off)
			break;
		off += (size_t)w;
	}
	return buf;
}

/*
 * Whether a rule's ports cover port: every port when it has none (a
 * deny rule's default, or "*").
 */
static bool
config_covers(const struct policy_rule *r, uint16_t port)
{
	size_t	i;

	if (r->nports == 0)
		return true;
	for (i = 0; i < r->nports; i++)
		if (r->ports[i].lo <= port && port <= r->ports[i].hi)
			return true;
	return false;
}

/*
 * The index in "ports" v (an array at pos) of the first entry that
 * covers port, its position in *at; 0 and pos if none does.
 */
static size_t
config_port_entry(struct config_ctx *x, json_t *v, size_t pos,
    uint16_t port, size_t *at)
{
	json_t		*e;
	const char	*s, *dash;
	size_t		 i, ci, len;
	uint16_t	 lo, hi;

	*at = pos;
	for (i = 0, ci = pos + 1; i < json_array_size(v);
	    i++, ci = jsonpos_next(x->jp, ci)) {
		e = json_array_get(v, i);
		if (json_is_integer(e) && json_integer_value(e) == port)
			break;
		if (!json_is_string(e))
			continue;
		s = json_string_value(e);
		len = json_string_length(e);
		if (len == 1 && s[0] == '*')
			break;
		if ((dash = memchr(s, '-', len)) != NULL &&
		    host_port_parse(s, (size_t)(dash - s), &lo) == 0 &&
		    host_port_parse(dash + 1, len - (size_t)(dash + 1 - s),
		    &hi) == 0 && lo <= port && port <= hi)
			break;
	}
	if (i == json_array_size(v))
		return 0;
	*at = ci;
	return i;
}

/*
 * A rule that reads requests can do so only in HTTP and TLS.  On a port
 * whose own protocol is another (policy_port_unreadable(): ssh, git://)
 * or with "ssh" in its "protocols" it would promise what moatd cannot
 * keep: git's read-only preset on port 22 would either break ssh (moatd
 * refuses what it cannot read) or, once the operator opens port 22
 * elsewhere to make ssh work, let git push through unchecked.  Refuse
 * such a rule and say how to split it.  An allow rule is judged by every
 * port it opens ("*" included); a deny rule by the ports it lists, as
 * one without "ports" applies everywhere by default (to tunnels there
 * it makes moatd read, and refuse what it cannot).
 */
static bool
config_unreadable(struct config_ctx *x, const struct config_field *f,
    const struct policy_rule *r)
{
	static const uint16_t	 ports[] = { 22, 9418 };
	const char		*proto;
	char			 keys[96], plist[64], nums[32], names[32];
	char			 opaque[96];
	size_t			 n = 0, i, at = 0, first = 0, old, o2;
	bool			 ok = true, git;
	json_t			*v;

	plist[0] = nums[0] = names[0] = '\0';
	config_inspect_keys(r, true, keys, sizeof(keys));
	git = (r->given & POLICY_GIVEN_GIT) != 0;
	for (i = 0; i < sizeof(ports) / sizeof(ports[0]); i++) {
		if ((r->action != POLICY_ALLOW && (f[RULE_PORTS].v == NULL ||
		    r->nports == 0)) || !config_covers(r, ports[i]) ||
		    (proto = policy_port_unreadable(ports[i])) == NULL)
			continue;
		if (n == 0 && f[RULE_PORTS].v != NULL)
			first = config_port_entry(x, f[RULE_PORTS].v,
			    f[RULE_PORTS].pos, ports[i], &at);
		snprintf(plist + strlen(plist), sizeof(plist) - strlen(plist),
		    "%s%u (%s)", n ? " and " : "", ports[i], proto);
		snprintf(nums + strlen(nums), sizeof(nums) - strlen(nums),
		    "%s%u", n ? " and " : "", ports[i]);
		snprintf(names + strlen(names), sizeof(names) - strlen(names),
		    "%s%s", n ? " or " : "", proto);
		n++;
	}
	/* What the operator must know of the rule of its own. */
	snprintf(opaque, sizeof(opaque), "%s %s opaque to moat: %s", n > 1 ?
	    "ssh and git://" : n == 1 ? names : "ssh", n > 1 ? "are" : "is",
	    git ? (n > 1 ? "git push over them cannot be stopped there" :
	    "git push over it cannot be stopped there") : (n > 1 ?
	    "nothing inside them is checked" : "nothing inside it is "
	    "checked"));
	/* An allow rule without "ports" opens 80 and 443 only. */
	if (n > 0 && f[RULE_PORTS].v != NULL) {
		old = config_push_key(x, "ports");
		o2 = config_push_index(x, first);
		if (r->action == POLICY_ALLOW)
			config_err(x, at, "rule %s needs to read requests "
			    "(%s), but %s %s %s what moatd cannot read (it "
			    "reads HTTP and TLS): keep %s on HTTP and HTTPS "
			    "ports (such as [443]) and, if %s is wanted, allow "
			    "%s %s in a rule of its own without %s (%s)",
			    r->name, keys, n == 1 ? "port" : "ports", plist,
			    n == 1 ? "carries" : "carry", keys, names, n == 1 ?
			    "port" : "ports", nums, keys, opaque);
		else
			config_err(x, at, "rule %s needs to read requests "
			    "(%s), but %s %s %s what moatd cannot read (it "
			    "reads HTTP and TLS): keep %s on HTTP and HTTPS "
			    "ports (such as [443]); to refuse %s, a deny rule "
			    "of its own for %s %s, without %s, does", r->name,
			    keys, n == 1 ? "port" : "ports", plist, n == 1 ?
			    "carries" : "carry", keys, names, n == 1 ? "port" :
			    "ports", nums, keys);
		config_pop(x, o2);
		config_pop(x, old);
		ok = false;
	}
	/* "protocols" is an allow rule's key (a deny rule's is refused). */
	if ((r->protocols & POLICY_PROTO_SSH) == 0 ||
	    (v = f[RULE_PROTOCOLS].v) == NULL || !json_is_array(v))
		return ok;
	for (i = 0, at = f[RULE_PROTOCOLS].pos + 1; i < json_array_size(v);
	    i++, at = jsonpos_next(x->jp, at))
		if (json_is_string(json_array_get(v, i)) && strcmp("ssh",
		    json_string_value(json_array_get(v, i))) == 0)
			break;
	old = config_push_key(x, "protocols");
	o2 = config_push_index(x, i);
	config_err(x, at, "rule %s needs to read requests (%s), but it lists "
	    "\"ssh\", which moatd cannot read (it reads HTTP and TLS): remove "
	    "\"ssh\" here and, if ssh is wanted, allow it in a rule of its own "
	    "without %s (%s)", r->name, keys, keys, opaque);
	config_pop(x, o2);
	config_pop(x, old);
	return false;
}

/* ------------------------------------------------------------------ */
/* policy                                                               */
/* ------------------------------------------------------------------ */

enum { POL_DEFAULT = 0, POL_RULES, POL_ALLOW_PRIVATE, POL_QUOTA, POL__COUNT };

void
config_policy(struct config_ctx *x, json_t *v, size_t pos)
{
	struct config_field	f[POL__COUNT] = {
		[POL_DEFAULT] = { "default", NULL, 0 },
		[POL_RULES] = { "rules", NULL, 0 },
		[POL_ALLOW_PRIVATE] = { "allow_private", NULL, 0 },
		[POL_QUOTA] = { "quota", NULL, 0 },
	};
	json_t			*rules;
	size_t			 old, n, i, ci;

	if (!config_fields(x, v, pos, f, POL__COUNT))
		return;
	if (f[POL_QUOTA].v != NULL) {
		old = config_push_key(x, "quota");
		(void)config_quota(x, f[POL_QUOTA].v, f[POL_QUOTA].pos,
		    "bytes_up", &x->p->quota_bytes,
		    &x->p->quota_per_seconds);
		config_pop(x, old);
	}
	if (f[POL_DEFAULT].v != NULL) {
		old = config_push_key(x, "default");
		if (!json_is_string(f[POL_DEFAULT].v) ||
		    strcmp(json_string_value(f[POL_DEFAULT].v), "deny") != 0)
			config_err(x, f[POL_DEFAULT].pos, "only \"deny\" is "
			    "accepted: moat allows only what a rule allows "
			    "(write an allow rule, such as {\"action\": "
			    "\"allow\", \"hosts\": [\"*\"]}, instead)");
		config_pop(x, old);
	}
	/* Before the rules, so their warnings know what is lifted. */
	if (f[POL_ALLOW_PRIVATE].v != NULL) {
		old = config_push_key(x, "allow_private");
		config_allow_private(x, f[POL_ALLOW_PRIVATE].v,
		    f[POL_ALLOW_PRIVATE].pos);
		config_pop(x, old);
	}
	if ((rules = f[POL_RULES].v) == NULL) {
		config_warn(x, pos, "no \"rules\": every connection will be "
		    "denied");
		return;
	}
	old = config_push_key(x, "rules");
	if (config_want(x, rules, f[POL_RULES].pos, JSON_ARRAY, "an array")) {
		n = rules == x->rules_hole ? x->rules_span.count :
		    json_array_size(rules);
		if (n == 0)
			config_warn(x, f[POL_RULES].pos, "no rules: every "
			    "connection will be denied");
		/* Room for every rule (and name) at once: no array grown by
		 * doubling, which holds the old and the new one a moment. */
		if (policy_reserve_rules(x->p, n) == -1 ||
		    domain_reserve(&x->rule_names, n, n * 8) == -1)
			config_oom(x);
		else if (rules == x->rules_hole)
			config_rules_apart(x, f[POL_RULES].pos);
		else
			for (i = 0, ci = f[POL_RULES].pos + 1; i < n;
			    i++, ci = jsonpos_next(x->jp, ci)) {
				size_t	o2 = config_push_index(x, i);

				config_rule(x, json_array_get(rules, i), ci, i);
				config_pop(x, o2);
			}
	}
	config_pop(x, old);
}

void
config_span_syntax(const char *buf, const struct jsonpos_span *sp,
    json_error_t *je)
{
	json_error_t	 e;
	json_t		*v;
	size_t		 i = sp->from, start, end;

	while (jsonpos_next_element(buf, sp, &i, &start, &end) == 0) {
		v = policy_json_loadb(buf + start, end - start,
		    JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &e);
		if (v == NULL) {
			/* Bytes read before the error, as if read in place
			 * (0 too: a byte that is not UTF-8 is not counted). */
			e.position += (int)start;
			*je = e;
			return;
		}
		json_decref(v);
	}
}

/* jansson refused a piece of policy.rules: the walk stops there. */
static void
config_rules_refused(struct config_ctx *x, const json_error_t *je)
{
	if (strcmp(je->text, "out of memory") == 0) {
		config_oom(x);
		return;
	}
	x->rules_je = *je;
	x->rules_syntax = true;
}

/*
 * policy.rules read apart (config_load() found their bytes, and jansson
 * read the rest of the text without them; pos is the array's entry):
 * each rule is read by jansson, its positions scanned, walked as above,
 * and freed before the next, so the rules' jansson trees never exist all
 * at once.  A rule longer than CONFIG_LIST_APART_BYTES has its longest
 * list of hosts or cidrs read apart as well (config_list_apart()).  A
 * rule that is not JSON stops the walk and is all the load reports
 * (x->rules_syntax, as when jansson reads a text whole).
 */
static void
config_rules_apart(struct config_ctx *x, size_t pos)
{
	const struct jsonpos	*top = x->jp;
	struct jsonpos		 jp;
	json_error_t		 je;
	json_t			*v;
	const char		*key;
	size_t			 i = x->rules_span.from, k, start, end, o2;
	size_t			 at = x->rules_span.from, linestart, lf, lt;
	uint32_t		 line = top->v[pos].vline;

	/* The '[' is at from - 1, in column vcol of its line. */
	linestart = x->rules_span.from - top->v[pos].vcol;
	memset(&jp, 0, sizeof(jp));
	for (k = 0; !x->rules_syntax && jsonpos_next_element(x->buf,
	    &x->rules_span, &i, &start, &end) == 0; k++) {
		jsonpos_lines(x->buf, at, start, &line, &linestart);
		at = start;
		key = end - start > config_list_apart_bytes ?
		    config_list_find(x, start, end) : NULL;
		lf = key != NULL ? x->list_span.from : 0;
		lt = key != NULL ? x->list_span.to : 0;
		v = policy_json_loadb_skip(x->buf + start, end - start,
		    lf - (key != NULL ? start : 0),
		    lt - (key != NULL ? start : 0),
		    JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
		if (v == NULL) {
			je.position += (int)start;
			/* An error after the list: one in it comes first. */
			if (key != NULL && (size_t)je.position > lf)
				config_span_syntax(x->buf, &x->list_span, &je);
			config_rules_refused(x, &je);
			break;
		}
		x->list_hole = key != NULL ? json_object_get(v, key) : NULL;
		if (jsonpos_scan_at(x->buf, start, end, line, linestart, lf,
		    lt, &jp) == -1) {
			json_decref(v);
			config_oom(x);
			break;
		}
		x->jp = &jp;
		o2 = config_push_index(x, k);
		config_rule(x, v, 0, k);
		config_pop(x, o2);
		x->jp = top;
		x->list_hole = NULL;
		json_decref(v);
	}
	jsonpos_free(&jp);
}

/*
 * The longer of the rule's "hosts" and "cidrs" in buf[start, end), into
 * x->list_span: its key, or NULL if it has neither (or their skeleton is
 * not what it should be: then the rule is read whole).
 */
static const char *
config_list_find(struct config_ctx *x, size_t start, size_t end)
{
	static const char *const	keys[] = { "hosts", "cidrs" };
	struct jsonpos_span		sp;
	const char			*key = NULL;
	size_t				i;

	/* A rule is at depth 4: the root, policy, rules, the rule.  A
	 * list of more than half the rule's bytes is the longer one. */
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (jsonpos_find_array(x->buf, start, end, 3, &keys[i], 1,
		    &sp) == 0 && (key == NULL || sp.to - sp.from >
		    x->list_span.to - x->list_span.from)) {
			x->list_span = sp;
			key = keys[i];
		}
		if (key != NULL && (x->list_span.to - x->list_span.from) * 2 >
		    end - start)
			break;
	}
	return key;
}

/*
 * A rule's list read apart (pos is its entry, x->list_span its bytes):
 * jansson reads CONFIG_LIST_BATCH elements at a time as an array of
 * their own, and each is handed to each() with its position, as the
 * whole list would be.  A batch that is not JSON stops the walk.
 */
static void
config_list_apart(struct config_ctx *x, size_t pos, uint32_t rule,
    const char *what, void (*each)(struct config_ctx *, json_t *, size_t,
    uint32_t))
{
	const struct jsonpos	*outer = x->jp;
	const struct jsonpos_span *sp = &x->list_span;
	struct policy_json_seg	 segs[3] = { { "[", 1 }, { NULL, 0 },
				    { "]", 1 } };
	struct jsonpos		 jp;
	json_error_t		 je;
	json_t			*arr;
	size_t			 i = sp->from, k = 0, n, e, ci, old, start, end;
	size_t			 a = 0, b = 0, at = sp->from, linestart;
	uint32_t		 line = outer->v[pos].vline;

	if (sp->count == 0) {
		(void)config_array(x, x->list_hole, pos, what);
		return;
	}
	linestart = sp->from - outer->v[pos].vcol;
	memset(&jp, 0, sizeof(jp));
	while (!x->rules_syntax) {
		for (n = 0; n < config_list_batch && (n == 0 || b - a <
		    CONFIG_LIST_BATCH_BYTES) && jsonpos_next_element(x->buf,
		    sp, &i, &start, &end) == 0; n++) {
			if (n == 0)
				a = start;
			b = end;
		}
		if (n == 0)
			break;
		jsonpos_lines(x->buf, at, a, &line, &linestart);
		at = a;
		segs[1].buf = x->buf + a;
		segs[1].len = b - a;
		if ((arr = policy_json_loadv(segs, 3, JSON_REJECT_DUPLICATES,
		    &je)) == NULL) {
			/* Byte P - 1 of "[" + elements + "]" is a + P - 2. */
			je.position += (int)a - 1;
			config_rules_refused(x, &je);
			break;
		}
		if (json_array_size(arr) != n || jsonpos_scan_elements(x->buf,
		    a, b, line, linestart, &jp) == -1) {
			json_decref(arr);
			config_oom(x);
			break;
		}
		x->jp = &jp;
		for (e = 0, ci = 1; e < n; e++, ci = jsonpos_next(&jp, ci)) {
			old = config_push_index(x, k + e);
			each(x, json_array_get(arr, e), ci, rule);
			config_pop(x, old);
		}
		x->jp = outer;
		json_decref(arr);
		k += n;
	}
	jsonpos_free(&jp);
}

static void
config_allow_private(struct config_ctx *x, json_t *v, size_t pos)
{
	struct addr_cidr	c;
	char			buf[ADDR_TEXT_MAX];
	size_t			i, ci, old;
	bool			lifted;
	enum policy_reason	reason;

	if (!config_want(x, v, pos, JSON_ARRAY, "an array of CIDRs"))
		return;
	for (i = 0, ci = pos + 1; i < json_array_size(v);
	    i++, ci = jsonpos_next(x->jp, ci)) {
		old = config_push_index(x, i);
		if (config_cidr(x, json_array_get(v, i), ci, &c)) {
			if (policy_add_allow_private(x->p, &c) == -1)
				config_oom(x);
			else if (!deny_cidr_overlaps(x->p, &c))
				config_warn(x, ci, "%s overlaps no built-in "
				    "denied range: it has no effect",
				    addr_cidr_format(&c, buf, sizeof(buf)));
			else if (!deny_cidr_inside(x->p, &c, &lifted, &reason))
				config_warn(x, ci, "%s is wider than the "
				    "built-in denied ranges it covers and opens "
				    "none of them: list each range to open "
				    "(e.g. 10.0.0.0/8)",
				    addr_cidr_format(&c, buf, sizeof(buf)));
		}
		config_pop(x, old);
	}
}

static bool
config_cidr(struct config_ctx *x, json_t *v, size_t pos, struct addr_cidr *c)
{
	struct addr_cidr	 fixed;
	const char		*s, *err = NULL;
	char			 buf[ADDR_TEXT_MAX];
	size_t			 n;
	int			 rc;

	if (!config_want(x, v, pos, JSON_STRING, "a CIDR string"))
		return false;
	s = json_string_value(v);
	n = json_string_length(v);
	rc = addr_cidr_parse(s, n, c, &fixed, &err);
	if (rc == -2) {
		config_err(x, pos, "%.*s has host bits set; did you mean %s?",
		    (int)n, s, addr_cidr_format(&fixed, buf, sizeof(buf)));
		return false;
	}
	if (rc == -1) {
		config_err(x, pos, "%s is not a CIDR: %s", config_q(x, s, n),
		    err);
		return false;
	}
	return true;
}

/* ------------------------------------------------------------------ */
/* rules                                                                */
/* ------------------------------------------------------------------ */

static bool	config_protocols(struct config_ctx *x, json_t *v, size_t pos,
		    struct policy_rule *r);
static bool	config_rule_quota(struct config_ctx *x,
		    const struct config_field *f, bool deny, bool named,
		    struct policy_rule *r);

static void
config_rule(struct config_ctx *x, json_t *v, size_t pos, size_t index)
{
	struct config_field	 f[RULE__COUNT] = {
		[RULE_NAME] = { "name", NULL, 0 },
		[RULE_ACTION] = { "action", NULL, 0 },
		[RULE_HOSTS] = { "hosts", NULL, 0 },
		[RULE_CIDRS] = { "cidrs", NULL, 0 },
		[RULE_COUNTRIES] = { "countries", NULL, 0 },
		[RULE_ASNS] = { "asns", NULL, 0 },
		[RULE_PORTS] = { "ports", NULL, 0 },
		[RULE_METHODS] = { "methods", NULL, 0 },
		[RULE_PATHS] = { "paths", NULL, 0 },
		[RULE_INTERCEPT] = { "intercept", NULL, 0 },
		[RULE_RATE] = { "rate", NULL, 0 },
		[RULE_INJECT] = { "inject", NULL, 0 },
		[RULE_PLAIN_HTTP] = { "plain_http", NULL, 0 },
		[RULE_GIT] = { "git", NULL, 0 },
		[RULE_STRICT_METHODS] = { "strict_methods", NULL, 0 },
		[RULE_PROTOCOLS] = { "protocols", NULL, 0 },
		[RULE_QUOTA] = { "quota", NULL, 0 },
	};
	struct policy_rule	 r;
	const char		*s;
	size_t			 old;
	uint32_t		 idx;
	bool			 ok = true, deny = false;

	memset(&r, 0, sizeof(r));
	r.line = (int)x->jp->v[pos].vline;
	r.column = (int)x->jp->v[pos].vcol;
	if (!config_fields(x, v, pos, f, RULE__COUNT))
		return;

	if (f[RULE_ACTION].v == NULL) {
		config_err(x, pos, "missing \"action\" (\"allow\" or "
		    "\"deny\")");
		ok = false;
	} else {
		old = config_push_key(x, "action");
		s = json_is_string(f[RULE_ACTION].v) ?
		    json_string_value(f[RULE_ACTION].v) : "";
		if (strcmp(s, "allow") == 0)
			r.action = POLICY_ALLOW;
		else if (strcmp(s, "deny") == 0) {
			r.action = POLICY_DENY;
			deny = true;
		} else {
			config_err(x, f[RULE_ACTION].pos, "must be \"allow\" "
			    "or \"deny\"");
			ok = false;
		}
		config_pop(x, old);
	}
	if (f[RULE_HOSTS].v == NULL && f[RULE_CIDRS].v == NULL &&
	    f[RULE_COUNTRIES].v == NULL && f[RULE_ASNS].v == NULL) {
		config_err(x, pos, "a rule needs \"hosts\", \"cidrs\", "
		    "\"countries\" or \"asns\" to say what it applies to");
		ok = false;
	}
	ok &= config_rule_name(x, f, pos, index, &r);
	if (r.name == NULL) {
		/* Reported; messages below still need a name to show. */
		char	def[32];

		snprintf(def, sizeof(def), "rule-%zu", index);
		if ((r.name = policy_strdup(x->p, def, strlen(def))) == NULL) {
			config_oom(x);
			policy_rule_drop(&r);
			return;
		}
	}
	if (f[RULE_PORTS].v != NULL) {
		old = config_push_key(x, "ports");
		ok &= config_ports(x, f[RULE_PORTS].v, f[RULE_PORTS].pos, &r);
		config_pop(x, old);
	} else if (r.action == POLICY_ALLOW) {
		r.ports = config_allow_ports;
		r.nports = sizeof(config_allow_ports) /
		    sizeof(config_allow_ports[0]);
	}
	if (f[RULE_METHODS].v != NULL) {
		old = config_push_key(x, "methods");
		ok &= config_methods(x, f[RULE_METHODS].v,
		    f[RULE_METHODS].pos, &r);
		config_pop(x, old);
	}
	if (f[RULE_PATHS].v != NULL) {
		old = config_push_key(x, "paths");
		ok &= config_paths(x, f[RULE_PATHS].v, f[RULE_PATHS].pos, &r);
		config_pop(x, old);
	}
	if (policy_more(&r)->nmethods > 0 || policy_more(&r)->npaths > 0)
		r.flags |= POLICY_F_INSPECT;
	if (f[RULE_STRICT_METHODS].v != NULL) {
		old = config_push_key(x, "strict_methods");
		ok &= config_strict_methods(x, &f[RULE_STRICT_METHODS],
		    f[RULE_METHODS].v != NULL, &r);
		config_pop(x, old);
	}
	if (f[RULE_INTERCEPT].v != NULL) {
		old = config_push_key(x, "intercept");
		if (!json_is_boolean(f[RULE_INTERCEPT].v)) {
			config_err(x, f[RULE_INTERCEPT].pos, "expected a "
			    "boolean, got %s",
			    config_typename(f[RULE_INTERCEPT].v));
			ok = false;
		} else if (json_is_true(f[RULE_INTERCEPT].v)) {
			r.flags |= POLICY_F_INSPECT;
			r.given |= POLICY_GIVEN_INTERCEPT;
		} else {
			r.flags |= POLICY_F_OPAQUE;
			if (policy_more(&r)->nmethods > 0 ||
			    policy_more(&r)->npaths > 0)
				config_warn(x, f[RULE_INTERCEPT].pos, "rule "
				    "%s checks methods or paths but never "
				    "intercepts TLS: its HTTPS requests "
				    "cannot be checked", r.name);
		}
		config_pop(x, old);
	}
	if (f[RULE_PROTOCOLS].v != NULL) {
		old = config_push_key(x, "protocols");
		if (deny) {
			config_err(x, f[RULE_PROTOCOLS].pos, "\"protocols\" "
			    "narrows what an allow rule lets through; a deny "
			    "rule refuses every protocol");
			ok = false;
		} else
			ok &= config_protocols(x, f[RULE_PROTOCOLS].v,
			    f[RULE_PROTOCOLS].pos, &r);
		config_pop(x, old);
	}
	if (f[RULE_RATE].v != NULL) {
		old = config_push_key(x, "rate");
		ok &= config_rate(x, f[RULE_RATE].v, f[RULE_RATE].pos, &r);
		config_pop(x, old);
	}
	if (f[RULE_QUOTA].v != NULL) {
		old = config_push_key(x, "quota");
		ok &= config_rule_quota(x, &f[RULE_QUOTA], deny,
		    f[RULE_NAME].v != NULL, &r);
		config_pop(x, old);
	}
	ok &= config_rule_secrets(x, f, deny, &r);
	if ((r.flags & POLICY_F_OPAQUE) != 0 && (r.given &
	    (POLICY_GIVEN_INJECT | POLICY_GIVEN_GIT)) != 0) {
		old = config_push_key(x, "intercept");
		config_err(x, f[RULE_INTERCEPT].pos, "rule %s %s, which needs "
		    "moatd to see inside TLS: remove \"intercept\": false "
		    "(moatd never looks inside an opaque tunnel)", r.name,
		    (r.given & POLICY_GIVEN_INJECT) != 0 ? "injects secrets" :
		    "uses the git preset");
		config_pop(x, old);
		ok = false;
	}
	if ((r.flags & (POLICY_F_INSPECT | POLICY_F_OPAQUE)) ==
	    POLICY_F_INSPECT)
		ok &= config_unreadable(x, f, &r);

	if ((idx = policy_add_rule(x->p, &r)) == POLICY_NONE) {
		config_oom(x);
		return;
	}
	if (f[RULE_HOSTS].v != NULL) {
		old = config_push_key(x, "hosts");
		config_hosts(x, f[RULE_HOSTS].v, f[RULE_HOSTS].pos, idx);
		config_pop(x, old);
	}
	if (f[RULE_CIDRS].v != NULL) {
		old = config_push_key(x, "cidrs");
		config_cidrs(x, f[RULE_CIDRS].v, f[RULE_CIDRS].pos, idx);
		config_pop(x, old);
	}
	if (f[RULE_COUNTRIES].v != NULL) {
		old = config_push_key(x, "countries");
		config_countries(x, f[RULE_COUNTRIES].v,
		    f[RULE_COUNTRIES].pos, idx);
		config_pop(x, old);
	}
	if (f[RULE_ASNS].v != NULL) {
		old = config_push_key(x, "asns");
		config_asns(x, f[RULE_ASNS].v, f[RULE_ASNS].pos, idx);
		config_pop(x, old);
	}
	if (!ok)
		return;
}

/* "name", or "rule-N"; unique either way. */
static bool
config_rule_name(struct config_ctx *x, struct config_field *f, size_t pos,
    size_t index, struct policy_rule *r)
{
	const char	*s;
	char		 def[32];
	size_t		 n, npos = pos, old;
	uint32_t	*slot;
	bool		 given = f[RULE_NAME].v != NULL;

	if (given) {
		npos = f[RULE_NAME].pos;
		old = config_push_key(x, "name");
		if (!config_want(x, f[RULE_NAME].v, npos, JSON_STRING,
		    "a string")) {
			config_pop(x, old);
			return false;
		}
		s = json_string_value(f[RULE_NAME].v);
		n = json_string_length(f[RULE_NAME].v);
		if (!config_ident(s, n, CONFIG_IDENT_MAX, "._:-")) {
			config_err(x, npos, "%s is not a rule name (1-64 of "
			    "A-Z a-z 0-9 . _ : -)", config_q(x, s, n));
			config_pop(x, old);
			return false;
		}
		config_pop(x, old);
	} else {
		snprintf(def, sizeof(def), "rule-%zu", index);
		s = def;
		n = strlen(def);
	}
	if ((slot = domain_insert(&x->rule_names, s, n)) == NULL) {
		config_oom(x);
		return false;
	}
	if (*slot != POLICY_NONE) {
		if (given) {
			old = config_push_key(x, "name");
			config_err(x, npos, "rule name %s is already used by "
			    "policy.rules[%u]", config_q(x, s, n), *slot);
			config_pop(x, old);
		} else
			config_err(x, pos, "this rule's default name %s is "
			    "already used by policy.rules[%u]: give this "
			    "rule a \"name\"", config_q(x, s, n), *slot);
		return false;
	}
	*slot = (uint32_t)index;
	if ((r->name = policy_strdup(x->p, s, n)) == NULL) {
		config_oom(x);
		return false;
	}
	return true;
}

static int
config_range_cmp(const void *a, const void *b)
{
	const struct policy_port_range	*x = a, *y = b;

	return (int)x->lo - (int)y->lo;
}

static bool
config_ports(struct config_ctx *x, json_t *v, size_t pos,
    struct policy_rule *r)
{
	struct policy_port_range	*pr;
	const char			*s, *dash;
	json_t				*e;
	size_t				 n, i, k = 0, m, ci, old, len;
	uint16_t			 lo, hi;
	long long			 num;
	bool				 all = false, ok = true;

	if (!config_array(x, v, pos, "port, \"LOW-HIGH\" range or \"*\""))
		return false;
	n = json_array_size(v);
	if ((pr = calloc(n, sizeof(*pr))) == NULL) {
		config_oom(x);
		return false;
	}
	for (i = 0, ci = pos + 1; i < n; i++, ci = jsonpos_next(x->jp, ci)) {
		e = json_array_get(v, i);
		old = config_push_index(x, i);
		if (json_is_integer(e)) {
			num = json_integer_value(e);
			if (num < 1 || num > 65535) {
				config_err(x, ci, "%lld is not a port "
				    "(1-65535)", num);
				ok = false;
			} else {
				pr[k].lo = pr[k].hi = (uint16_t)num;
				k++;
			}
		} else if (json_is_string(e)) {
			s = json_string_value(e);
			len = json_string_length(e);
			dash = memchr(s, '-', len);
			if (len == 1 && s[0] == '*')
				all = true;
			else if (dash == NULL ||
			    host_port_parse(s, (size_t)(dash - s), &lo) == -1 ||
			    host_port_parse(dash + 1,
			    len - (size_t)(dash + 1 - s), &hi) == -1) {
				config_err(x, ci, "%s is not a port: write an "
				    "integer (1-65535), a range \"LOW-HIGH\" "
				    "or \"*\"", config_q(x, s, len));
				ok = false;
			} else if (lo > hi) {
				config_err(x, ci, "range %s is backwards "
				    "(write \"%u-%u\")", config_q(x, s, len),
				    hi, lo);
				ok = false;
			} else {
				pr[k].lo = lo;
				pr[k].hi = hi;
				k++;
			}
		} else {
			config_err(x, ci, "expected a port (integer), a range "
			    "\"LOW-HIGH\" or \"*\", got %s",
			    config_typename(e));
			ok = false;
		}
		config_pop(x, old);
	}
	if (!ok || all) {
		free(pr);
		r->nports = 0;	/* all ports */
		return ok;
	}
	qsort(pr, k, sizeof(*pr), config_range_cmp);
	for (i = 1, m = 0; i < k; i++) {
		if ((unsigned)pr[i].lo <= (unsigned)pr[m].hi + 1) {
			if (pr[i].hi > pr[m].hi)
				pr[m].hi = pr[i].hi;
		} else
			pr[++m] = pr[i];
	}
	r->ports = pr;
	r->nports = (uint16_t)(m + 1);
	r->own_ports = 1;
	return true;
}

static bool
config_methods(struct config_ctx *x, json_t *v, size_t pos,
    struct policy_rule *r)
{
	struct policy_rule_more	*rm;
	json_t			*e;
	const char		*s;
	char			*m;
	size_t			 n, i, j, ci, old, len;
	bool			 ok = true;

	if (!config_array(x, v, pos, "method"))
		return false;
	n = json_array_size(v);
	if ((rm = policy_more_new(r)) == NULL ||
	    (rm->methods = calloc(n, sizeof(*rm->methods))) == NULL) {
		config_oom(x);
		return false;
	}
	for (i = 0, ci = pos + 1; i < n; i++, ci = jsonpos_next(x->jp, ci)) {
		e = json_array_get(v, i);
		old = config_push_index(x, i);
		if (!config_want(x, e, ci, JSON_STRING, "a method (string)")) {
			ok = false;
			config_pop(x, old);
			continue;
		}
		s = json_string_value(e);
		len = json_string_length(e);
		for (j = 0; j < len; j++)
			if (!host_is_tchar((unsigned char)s[j]))
				break;
		if (len == 0 || len > CONFIG_METHOD_MAX || j < len) {
			config_err(x, ci, "%s is not an HTTP method token",
			    config_q(x, s, len));
			ok = false;
		} else if ((m = config_strdup(x, s)) == NULL)
			ok = false;
		else {
			for (j = 0; j < len; j++)
				if (m[j] >= 'a' && m[j] <= 'z')
					m[j] = (char)(m[j] - 'a' + 'A');
			rm->methods[rm->nmethods++] = m;
		}
		config_pop(x, old);
	}
	return ok;
}

/*
 * "strict_methods": a boolean, and true only on a rule with "methods"
 * (what it guards).
 */
static bool
config_strict_methods(struct config_ctx *x, const struct config_field *f,
    bool methods, struct policy_rule *r)
{
	if (!json_is_boolean(f->v)) {
		config_err(x, f->pos, "expected a boolean, got %s",
		    config_typename(f->v));
		return false;
	}
	if (!json_is_true(f->v))
		return true;
	if (!methods) {
		config_err(x, f->pos, "\"strict_methods\" guards a rule's "
		    "\"methods\", and rule %s has none", r->name);
		return false;
	}
	r->strict_methods = 1;
	return true;
}

/*
 * A deny rule also keeps the wide form of each pattern (path_wide()), in
 * r->wpaths beside r->paths.  Returns 0, or -1 with *err set.
 */
static int
config_wide_path(struct policy_rule *r, const char *out, size_t olen,
    const char **err)
{
	char	*wide;
	size_t	 wlen;
	bool	 hidden;

	if (r->action != POLICY_DENY)
		return 0;
	if ((wide = malloc(olen + 1)) == NULL) {
		*err = "out of memory";
		return -1;
	}
	if (path_wide(out, olen, wide, &wlen, &hidden, err) == -1) {
		free(wide);
		return -1;
	}
	r->more->wpaths[r->more->npaths] = wide;
	return 0;
}

/*
 * "protocols": what the rule's tunnels may carry, judged on their first
 * bytes: "tls", "http", "ssh", or "any" (the default when absent).
 */
static bool
config_protocols(struct config_ctx *x, json_t *v, size_t pos,
    struct policy_rule *r)
{
	json_t		*e;
	const char	*s;
	size_t		 n, i, ci, old;
	bool		 ok = true, any = false;
	int		 bit;

	if (!config_array(x, v, pos, "protocol"))
		return false;
	n = json_array_size(v);
	for (i = 0, ci = pos + 1; i < n; i++, ci = jsonpos_next(x->jp, ci)) {
		e = json_array_get(v, i);
		old = config_push_index(x, i);
		if (!config_want(x, e, ci, JSON_STRING, "a protocol (string)")) {
			ok = false;
			config_pop(x, old);
			continue;
		}
		s = json_string_value(e);
		if (strcmp(s, "any") == 0)
			any = true;
		else if ((bit = policy_proto_bit(s)) != 0)
			r->protocols |= (uint8_t)bit;
		else {
			config_err(x, ci, "%s is not a protocol: \"tls\", "
			    "\"http\", \"ssh\" or \"any\"",
			    config_q(x, s, json_string_length(e)));
			ok = false;
		}
		config_pop(x, old);
	}
	if (any)
		r->protocols = 0;
	return ok;
}

static bool
config_paths(struct config_ctx *x, json_t *v, size_t pos,
    struct policy_rule *r)
{
	struct policy_rule_more	*m;
	json_t			*e;
	const char		*s, *err;
	char			*out;
	size_t			 n, i, ci, old, len, olen;
	bool			 ok = true;

	if (!config_array(x, v, pos, "path"))
		return false;
	n = json_array_size(v);
	if ((m = policy_more_new(r)) == NULL ||
	    (m->paths = calloc(n, sizeof(*m->paths))) == NULL ||
	    (r->action == POLICY_DENY &&
	    (m->wpaths = calloc(n, sizeof(*m->wpaths))) == NULL)) {
		config_oom(x);
		return false;
	}
	for (i = 0, ci = pos + 1; i < n; i++, ci = jsonpos_next(x->jp, ci)) {
		e = json_array_get(v, i);
		old = config_push_index(x, i);
		if (!config_want(x, e, ci, JSON_STRING, "a path (string)")) {
			ok = false;
			config_pop(x, old);
			continue;
		}
		s = json_string_value(e);
		len = json_string_length(e);
		if ((out = malloc(len + 1)) == NULL) {
			config_oom(x);
			ok = false;
		} else if (memchr(s, '\0', len) != NULL ||
		    path_normalise(s, len, true, out, &olen, &err) == -1) {
			config_err(x, ci, "%s: %s", config_q(x, s, len),
			    memchr(s, '\0', len) != NULL ? "NUL in path" :
			    err);
			free(out);
			ok = false;
		} else if (config_wide_path(r, out, olen, &err) == -1) {
			config_err(x, ci, "%s: %s", config_q(x, s, len), err);
			free(out);
			ok = false;
		} else
			m->paths[m->npaths++] = out;
		config_pop(x, old);
	}
	return ok;
}

enum { RATE_REQUESTS = 0, RATE_PER_SECONDS, RATE__COUNT };

static bool
config_rate(struct config_ctx *x, json_t *v, size_t pos,
    struct policy_rule *r)
{
	struct config_field	f[RATE__COUNT] = {
		[RATE_REQUESTS] = { "requests", NULL, 0 },
		[RATE_PER_SECONDS] = { "per_seconds", NULL, 0 },
	};
	long long		n[RATE__COUNT] = { 0, 0 };
	size_t			old;
	int			i;
	bool			ok = true;

	if (!config_fields(x, v, pos, f, RATE__COUNT))
		return false;
	for (i = 0; i < RATE__COUNT; i++) {
		if (f[i].v == NULL) {
			config_err(x, pos, "missing \"%s\" (a rate is "
			    "{\"requests\": N, \"per_seconds\": S})",
			    f[i].key);
			ok = false;
			continue;
		}
		old = config_push_key(x, f[i].key);
		ok &= config_number(x, f[i].v, f[i].pos,
		    config_default("rate", f[i].key), &n[i]);
		config_pop(x, old);
	}
	if (ok && n[RATE_REQUESTS] > 0) {
		struct policy_rule_more	*m;

		if ((m = policy_more_new(r)) == NULL) {
			config_oom(x);
			return false;
		}
		m->rate_requests = (unsigned)n[RATE_REQUESTS];
		m->rate_per_seconds = (unsigned)n[RATE_PER_SECONDS];
	}
	return ok;
}

enum { QUOTA_COUNT = 0, QUOTA_PER_SECONDS, QUOTA__COUNT };

bool
config_quota(struct config_ctx *x, json_t *v, size_t pos,
    const char *count_key, uint64_t *count, unsigned *per)
{
	struct config_field	f[QUOTA__COUNT] = {
		[QUOTA_COUNT] = { count_key, NULL, 0 },
		[QUOTA_PER_SECONDS] = { "per_seconds", NULL, 0 },
	};
	long long		n[QUOTA__COUNT] = { 0, 0 };
	size_t			old;
	int			i;
	bool			ok = true;

	if (!config_fields(x, v, pos, f, QUOTA__COUNT))
		return false;
	for (i = 0; i < QUOTA__COUNT; i++) {
		if (f[i].v == NULL) {
			config_err(x, pos, "missing \"%s\" (a quota is "
			    "{\"%s\": N, \"per_seconds\": S})", f[i].key,
			    count_key);
			ok = false;
			continue;
		}
		old = config_push_key(x, f[i].key);
		ok &= config_number(x, f[i].v, f[i].pos,
		    config_default("quota", f[i].key), &n[i]);
		config_pop(x, old);
	}
	if (!ok)
		return false;
	*count = (uint64_t)n[QUOTA_COUNT];
	*per = (unsigned)n[QUOTA_PER_SECONDS];
	return true;
}

/*
 * A rule's "quota" (bytes its requests and tunnels send upstream per
 * window).  Its counters are kept by the rule's name, so a rule without
 * a "name" is warned about: its default name follows its place.
 */
static bool
config_rule_quota(struct config_ctx *x, const struct config_field *f,
    bool deny, bool named, struct policy_rule *r)
{
	struct policy_rule_more	*m;
	uint64_t		 bytes;
	unsigned		 per;

	if (deny) {
		config_err(x, f->pos, "\"quota\" limits what an allow rule "
		    "lets through; a deny rule sends nothing");
		return false;
	}
	if (!config_quota(x, f->v, f->pos, "bytes_up", &bytes, &per))
		return false;
	if ((m = policy_more_new(r)) == NULL) {
		config_oom(x);
		return false;
	}
	m->quota_bytes = bytes;
	m->quota_per_seconds = per;
	if (!named)
		config_warn(x, f->pos, "rule %s has a quota but no \"name\": "
		    "its count is kept by name across reloads, and this "
		    "default name changes when rules are added before it",
		    r->name);
	return true;
}

static void
config_hosts(struct config_ctx *x, json_t *v, size_t pos, uint32_t rule)
{
	size_t	i, ci, old;

	if (v == x->list_hole && v != NULL) {
		config_list_apart(x, pos, rule, "host", config_host);
		return;
	}
	if (!config_array(x, v, pos, "host"))
		return;
	for (i = 0, ci = pos + 1; i < json_array_size(v);
	    i++, ci = jsonpos_next(x->jp, ci)) {
		old = config_push_index(x, i);
		config_host(x, json_array_get(v, i), ci, rule);
		config_pop(x, old);
	}
}

static void
config_host(struct config_ctx *x, json_t *v, size_t pos, uint32_t rule)
{
	const struct policy_rule	*r = &x->p->rules[rule];
	struct policy_host		 h;
	struct addr_cidr		 c;
	const char			*s, *err = NULL, *what;
	size_t				 n;
	bool				 wild;
	int				 rc;
	enum policy_reason		 dr;

	if (!config_want(x, v, pos, JSON_STRING, "a host (string)"))
		return;
	s = json_string_value(v);
	n = json_string_length(v);
	if (n == 1 && s[0] == '*') {
		if (policy_add_star(x->p, rule) == -1)
			config_oom(x);
		else if (policy_more(r)->nsecrets > 0)
			config_warn(x, pos, "rule %s injects secrets into "
			    "every host (\"*\"): any name the sandbox asks "
			    "for receives them", r->name);
		return;
	}
	wild = n >= 2 && s[0] == '*' && s[1] == '.';
	if (memchr(wild ? s + 1 : s, '*', wild ? n - 1 : n) != NULL) {
		config_err(x, pos, "%s: \"*\" is allowed only as the whole "
		    "host (\"*\") or as the first label (\"*.example.com\")",
		    config_q(x, s, n));
		return;
	}
	if (policy_host_normalise(wild ? s + 2 : s, wild ? n - 2 : n, &h,
	    &err) == -1) {
		config_err(x, pos, "%s is not a valid host: %s",
		    config_q(x, s, n), err);
		return;
	}
	if (wild && h.kind == POLICY_HOST_ADDR) {
		config_err(x, pos, "%s: a wildcard needs a name after "
		    "\"*.\", not an address", config_q(x, s, n));
		return;
	}
	if (h.kind == POLICY_HOST_ADDR) {
		c.addr = h.addr;
		c.plen = addr_bits(h.addr.family);
		if (policy_add_cidr(x->p, rule, &c) == -1)
			config_oom(x);
		else if (r->action == POLICY_ALLOW)
			config_warn_denied(x, pos, r, &c);
		return;
	}
	rc = wild ? policy_add_suffix(x->p, rule, h.name) :
	    policy_add_name(x->p, rule, h.name);
	if (rc == -1) {
		config_oom(x);
		return;
	}
	if (r->action == POLICY_ALLOW &&
	    (dr = deny_name(h.name)) != POLICY_R_ALLOWED) {
		what = dr == POLICY_R_METADATA ? "a cloud metadata name" :
		    "a loopback name";
		config_warn(x, pos, "rule %s allows %s%s, %s: moat always "
		    "denies it", r->name, wild ? "*." : "", h.name, what);
	}
}

static void
config_cidrs(struct config_ctx *x, json_t *v, size_t pos, uint32_t rule)
{
	size_t	i, ci, old;

	if (v == x->list_hole && v != NULL) {
		config_list_apart(x, pos, rule, "CIDR", config_cidr_one);
		return;
	}
	if (!config_array(x, v, pos, "CIDR"))
		return;
	for (i = 0, ci = pos + 1; i < json_array_size(v);
	    i++, ci = jsonpos_next(x->jp, ci)) {
		old = config_push_index(x, i);
		config_cidr_one(x, json_array_get(v, i), ci, rule);
		config_pop(x, old);
	}
}

static void
config_cidr_one(struct config_ctx *x, json_t *v, size_t pos, uint32_t rule)
{
	struct addr_cidr	c;

	if (!config_cidr(x, v, pos, &c))
		return;
	if (policy_add_cidr(x->p, rule, &c) == -1)
		config_oom(x);
	else if (x->p->rules[rule].action == POLICY_ALLOW)
		config_warn_denied(x, pos, &x->p->rules[rule], &c);
}

/* An allow rule opening what a built-in set keeps shut says so. */
static void
config_warn_denied(struct config_ctx *x, size_t pos,
    const struct policy_rule *r, const struct addr_cidr *c)
{
	char			buf[ADDR_TEXT_MAX];
	bool			lifted;
	enum policy_reason	reason;

	if (!deny_cidr_inside(x->p, c, &lifted, &reason) || lifted)
		return;
	addr_cidr_format(c, buf, sizeof(buf));
	if (reason == POLICY_R_METADATA)
		config_warn(x, pos, "rule %s allows %s, a cloud metadata "
		    "address: moat denies it unless policy.allow_private "
		    "lists exactly that address", r->name, buf);
	else
		config_warn(x, pos, "rule %s allows %s, a built-in denied "
		    "range: add it to policy.allow_private to open it",
		    r->name, buf);
}
