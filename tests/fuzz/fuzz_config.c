/*
 * fuzz_config.c - fuzz target for the config loader (policy JSON).
 *
 * Properties (abort() if broken):
 *  - the load fails exactly when an error was reported;
 *  - every diagnostic has a message and a position inside the text (or
 *    none), and none is an internal error (the position scanner out of
 *    step with jansson) or "out of memory";
 *  - whenever jansson accepts a text without NUL bytes, the position
 *    scanner accepts it too and records exactly one entry per JSON value;
 *  - a loaded config answers decisions on a few targets without fault,
 *    and never allows a metadata or loopback name, nor an address the
 *    built-in deny sets refuse;
 *  - every injection is well formed: secret indexes in range, literals
 *    terminated and free of control bytes, a header on header and basic
 *    entries that is never one moatd refuses, each secret used listed
 *    once in the rule's secrets, and a rule that injects or has the git
 *    preset needs inspection;
 *  - a secret is bound only where some allow rule injects it;
 *  - the git preset never lets a push through;
 *  - reading policy.rules one rule at a time, and every rule's lists in
 *    batches of two, reports exactly what reading the text whole does
 *    (the same diagnostics, in the same order, the same verdict).
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "policy/policy.h"
#include "policy/policy_int.h"
#include "policy/config_int.h"
#include "policyio/policyio.h"

#define FUZZ_DIAG_MAX	512	/* formatted diagnostic buffer */
#define FUZZ_TEXT_MAX	256	/* formatted template or injection */

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t	fuzz_count(json_t *v);
static void	fuzz_positions(const char *buf, size_t len);
static void	fuzz_diags(const struct policy_diags *d, const char *buf,
		    size_t len);
static void	fuzz_decisions(const struct moat_config *c);
static void	fuzz_template(const struct moat_config *c,
		    const struct policy_rule *r,
		    const struct policy_template *t);
static void	fuzz_injects(const struct moat_config *c);
static void	fuzz_bound(const struct moat_config *c);
static void	fuzz_git(const struct moat_config *c);
static void	fuzz_apart(const char *buf, size_t len);

/* Number of values in a jansson tree, the root included. */
static size_t
fuzz_count(json_t *v)
{
	const char	*key;
	json_t		*m;
	size_t		 n = 1, i;

	if (json_is_object(v))
		json_object_foreach(v, key, m)
			n += fuzz_count(m);
	else if (json_is_array(v))
		for (i = 0; i < json_array_size(v); i++)
			n += fuzz_count(json_array_get(v, i));
	return n;
}

static void
fuzz_positions(const char *buf, size_t len)
{
	struct jsonpos	 jp;
	json_error_t	 je;
	json_t		*root;

	/* The loader refuses NUL bytes before jansson sees them. */
	if (memchr(buf, '\0', len) != NULL)
		return;
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (root == NULL)
		return;
	if (jsonpos_scan(buf, len, &jp) == -1)
		abort();
	if (jp.n != fuzz_count(root) || jsonpos_next(&jp, 0) != jp.n)
		abort();
	jsonpos_free(&jp);
	json_decref(root);
}

static void
fuzz_diags(const struct policy_diags *d, const char *buf, size_t len)
{
	char	out[FUZZ_DIAG_MAX];
	size_t	i, lines = 1;

	for (i = 0; i < len; i++)
		if (buf[i] == '\n')
			lines++;
	for (i = 0; i < d->n; i++) {
		const struct policy_diag	*g = &d->v[i];

		if (g->msg == NULL || g->line < 0 || g->column < 0 ||
		    (size_t)g->line > lines ||
		    STRNCMP_LIT(g->msg, "internal error") == 0 ||
		    strcmp(g->msg, "out of memory") == 0)
			abort();
		policy_diag_format(d, i, out, sizeof(out));
		if (strlen(out) >= sizeof(out))
			abort();
	}
}

static void
fuzz_decisions(const struct moat_config *c)
{
	static const char *const	names[] = {
		"example.com", "a.example.com", "localhost",
		"metadata.google.internal", NULL
	};
	struct policy_decision		d;
	struct policy_target		t;
	struct policy_addr		a[3];
	size_t				i, j;

	memset(a, 0, sizeof(a));
	a[0].family = AF_INET;
	a[0].u.v4.s_addr = htonl(0xa9fea9fe);	/* 169.254.169.254 */
	a[1].family = AF_INET;
	a[1].u.v4.s_addr = htonl(0x5db8d822);	/* 93.184.216.34 */
	a[2].family = AF_INET6;
	a[2].u.v6.s6_addr[15] = 1;		/* ::1 */
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		for (j = 0; j <= 3; j++) {
			memset(&t, 0, sizeof(t));
			t.name = names[i];
			t.addr = j < 3 ? &a[j] : NULL;
			t.port = 443;
			t.method = j % 2 ? "GET" : NULL;
			t.path = j % 2 ? "/x/../y" : NULL;
			policy_decide(c->policy, &t, &d);
			/* Names are never lifted; addresses only by
			 * allow_private, which deny_addr() consults. */
			if (d.verdict == POLICY_ALLOW && (i == 2 || i == 3 ||
			    (t.addr != NULL && deny_addr(c->policy, t.addr) !=
			    POLICY_R_ALLOWED)))
				abort();
			if (d.rule != NULL && (strcmp(policy_rule_name(d.rule),
			    d.rule_name) != 0 || policy_rule_index(d.rule) >=
			    policy_rule_count(c->policy)))
				abort();
		}
}

static void
fuzz_template(const struct moat_config *c, const struct policy_rule *r,
    const struct policy_template *t)
{
	const struct policy_tpl_part	*pt;
	char				 out[FUZZ_TEXT_MAX];
	size_t				 i, j;

	if ((t->nparts == 0) != (t->parts == NULL))
		abort();
	for (i = 0; i < t->nparts; i++) {
		pt = &t->parts[i];
		if (pt->secret == POLICY_TPL_LITERAL) {
			if (pt->text == NULL || pt->text[pt->len] != '\0' ||
			    strlen(pt->text) != pt->len)
				abort();
			for (j = 0; j < pt->len; j++)
				if (((unsigned char)pt->text[j] < 0x20 &&
				    pt->text[j] != '\t') || pt->text[j] == 0x7f)
					abort();
		} else if (pt->secret >= c->nsecrets || pt->text != NULL ||
		    !inject_rule_has(r, pt->secret))
			abort();
	}
	policy_template_format(c, t, out, sizeof(out));
	if (strlen(out) >= sizeof(out))
		abort();
}

static void
fuzz_injects(const struct moat_config *c)
{
	const struct policy		*p = c->policy;
	const struct policy_rule	*r;
	const struct policy_inject	*in;
	const size_t			*idx;
	char				 out[FUZZ_TEXT_MAX];
	size_t				 i, j, k, n, ns;

	for (i = 0; i < p->nrules; i++) {
		r = &p->rules[i];
		in = policy_rule_injects(r, &n);
		ns = policy_rule_secrets(r, &idx);
		if ((n > 0 || policy_rule_git(r) != POLICY_GIT_NONE) &&
		    ((r->flags & POLICY_F_INSPECT) == 0 ||
		    (r->flags & POLICY_F_OPAQUE) != 0 ||
		    r->action != POLICY_ALLOW))
			abort();
		if ((n > 0) != (ns > 0) || (policy_plain_http_check(r) ==
		    POLICY_R_NEEDS_TLS) != (n > 0 &&
		    !policy_rule_plain_http(r)))
			abort();
		for (j = 0; j < ns; j++) {
			if (idx[j] >= c->nsecrets)
				abort();
			for (k = 0; k < j; k++)
				if (idx[k] == idx[j])
					abort();
		}
		for (j = 0; j < n; j++) {
			switch (in[j].kind) {
			case POLICY_INJECT_HEADER:
				if (in[j].header == NULL ||
				    inject_header_refused(in[j].header,
				    strlen(in[j].header)) != NULL ||
				    in[j].value.nparts == 0)
					abort();
				break;
			case POLICY_INJECT_BASIC:
				if (in[j].header == NULL ||
				    strcmp(in[j].header, "Authorization") != 0)
					abort();
				break;
			case POLICY_INJECT_PLACEHOLDERS:
				if (in[j].header != NULL || in[j].nsecrets == 0)
					abort();
				for (k = 0; k < in[j].nsecrets; k++)
					if (in[j].secrets[k] >= c->nsecrets ||
					    !inject_rule_has(r,
					    in[j].secrets[k]))
						abort();
				break;
			default:
				abort();
			}
			fuzz_template(c, r, &in[j].value);
			fuzz_template(c, r, &in[j].user);
			fuzz_template(c, r, &in[j].password);
			policy_explain_inject(c, &in[j], out, sizeof(out));
			if (strlen(out) >= sizeof(out))
				abort();
		}
	}
}

static void
fuzz_bound(const struct moat_config *c)
{
	static const char *const	names[] = {
		"example.com", "a.example.com", "api.openai.com",
		"metadata.google.internal", "localhost", NULL
	};
	static const uint16_t		ports[] = { 0, 80, 443, 8443 };
	const struct policy		*p = c->policy;
	struct policy_addr		a;
	size_t				i, j, k, s;
	bool				any;

	memset(&a, 0, sizeof(a));
	a.family = AF_INET;
	a.u.v4.s_addr = htonl(0x5db8d822);	/* 93.184.216.34 */
	for (s = 0; s <= c->nsecrets; s++) {
		/* Is secret s injected by any allow rule at all? */
		for (any = false, i = 0; i < p->nrules; i++)
			any |= p->rules[i].action == POLICY_ALLOW &&
			    inject_rule_has(&p->rules[i], s);
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			for (j = 0; j < sizeof(ports) / sizeof(ports[0]); j++)
				for (k = 0; k < 2; k++)
					if (policy_secret_bound(p, s, names[i],
					    k ? &a : NULL, ports[j]) && (!any ||
					    i == 3 || i == 4))
						abort();
	}
}

static void
fuzz_git(const struct moat_config *c)
{
	static const char *const	push[][2] = {
		{ "POST", "/r.git/git-receive-pack" },
		{ "POST", "/r.git/./git-receive-pack" },
		{ "POST", "/r.git/git%2Dreceive-pack" },
		{ "GET", "/r.git/info/refs?service=git-receive-pack" },
		{ "GET", "/r.git/info/refs?service=git%2dreceive-pack" },
		{ "PUT", "/r.git/objects/x" },
		{ "MKCOL", "/r.git/x/" },
	};
	const struct policy		*p = c->policy;
	const char			*detail;
	size_t				 i, j;

	for (i = 0; i < p->nrules; i++) {
		if (policy_rule_git(&p->rules[i]) == POLICY_GIT_NONE)
			continue;
		for (j = 0; j < sizeof(push) / sizeof(push[0]); j++)
			if (policy_git_check(&p->rules[i], push[j][0],
			    push[j][1], &detail) == POLICY_R_ALLOWED ||
			    detail == NULL)
				abort();
		if (policy_git_check(&p->rules[i], "GET", "/r.git/info/refs"
		    "?service=git-upload-pack", &detail) != POLICY_R_ALLOWED)
			abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct policy_diags	 d;
	struct moat_config	*c = NULL;
	/*
	 * The input as it is, without a final NUL (as a config file read
	 * into memory may be): under replay.c it ends at an inaccessible
	 * page, so a read past it faults.
	 */
	const char		*buf = (const char *)data;

	/* IDNA names as moatd converts them (libidn2 loads once).  No GeoIP
	 * loader: a config naming "geoip" fails to load and opens nothing. */
	(void)policyio_idn_load();
	policy_diags_init(&d);
	fuzz_positions(buf, size);
	c = policy_config_load("fuzz.json", buf, size, &d);
	if ((c == NULL) != (d.nerrors > 0))
		abort();
	fuzz_diags(&d, buf, size);
	if (c != NULL) {
		fuzz_decisions(c);
		fuzz_injects(c);
		fuzz_bound(c);
		fuzz_git(c);
	}
	policy_config_unref(c);
	policy_diags_clear(&d);
	fuzz_apart(buf, size);
	return 0;
}

/* Read apart (the smallest sizes: every list in batches of two) and
 * read whole, the same. */
static void
fuzz_apart(const char *buf, size_t len)
{
	struct policy_diags	 da, dw;
	struct moat_config	*ca, *cw;
	char			 la[FUZZ_DIAG_MAX], lw[FUZZ_DIAG_MAX];
	size_t			 i;

	config_list_apart_bytes = 0;
	config_list_batch = 2;
	policy_diags_init(&da);
	policy_diags_init(&dw);
	ca = config_load("fuzz.json", buf, len, NULL, &da, true);
	cw = config_load("fuzz.json", buf, len, NULL, &dw, false);
	if ((ca == NULL) != (cw == NULL) || da.n != dw.n ||
	    da.nerrors != dw.nerrors || da.nwarnings != dw.nwarnings)
		abort();
	for (i = 0; i < da.n; i++)
		if (strcmp(policy_diag_format(&da, i, la, sizeof(la)),
		    policy_diag_format(&dw, i, lw, sizeof(lw))) != 0)
			abort();
	if (ca != NULL && policy_rule_count(ca->policy) !=
	    policy_rule_count(cw->policy))
		abort();
	policy_config_unref(ca);
	policy_config_unref(cw);
	policy_diags_clear(&da);
	policy_diags_clear(&dw);
}
