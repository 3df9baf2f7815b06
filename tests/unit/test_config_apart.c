/*
 * test_config_apart.c - policy.rules read one rule at a time, and a long
 * list of hosts or cidrs in batches (config_load() with apart), say and
 * build exactly what reading the whole text as one jansson tree does.
 *
 * Every text is loaded both ways and the results compared: the same
 * diagnostics (text, line, column, in the same order), the same verdict,
 * and for a config that loads, the same compiled rules and tables.  The
 * texts: every error vector of test_config.c, the embedded default, and
 * generated ones that put errors of each kind (semantic, JSON syntax,
 * duplicate keys, nesting, bad UTF-8) inside, before and after the parts
 * read apart.  Each runs with the sizes moatd uses and with the smallest
 * (every rule's lists read apart, two elements a batch), so small texts
 * take every path.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "policy/policy.h"
#include "policy/policy_int.h"
#include "policy/config_int.h"
#include "tests/unit/unit.h"

#define APART_LINE_MAX	1024


/* A growing text. */
struct apart_buf {
	char	*s;
	size_t	 len, cap;
};

static void
apart_add(struct apart_buf *b, const char *fmt, ...)
{
	va_list	ap;
	int	n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->s != NULL ? b->s + b->len : NULL,
		    b->s != NULL ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		CU_ASSERT_FATAL(n >= 0);
		if (b->s != NULL && (size_t)n < b->cap - b->len)
			break;
		b->cap = (b->cap + (size_t)n + 1) * 2;
		CU_ASSERT_PTR_NOT_NULL_FATAL(b->s = realloc(b->s, b->cap));
	}
	b->len += (size_t)n;
}

/* The compiled policies of a and w are the same. */
static bool
apart_same_policy(const struct moat_config *a, const struct moat_config *w)
{
	const struct policy	*p = a->policy, *q = w->policy;
	size_t			 i;

	if (p->nrules != q->nrules || p->nrefs != q->nrefs ||
	    p->exact.n != q->exact.n || p->wild.n != q->wild.n ||
	    p->star != q->star || p->cidr4.n != q->cidr4.n ||
	    p->cidr6.n != q->cidr6.n || p->ap4.n != q->ap4.n ||
	    p->ap6.n != q->ap6.n || a->nsecrets != w->nsecrets ||
	    a->nlisten != w->nlisten)
		return false;
	for (i = 0; i < p->nrules; i++) {
		const struct policy_rule	*r = &p->rules[i], *s = &q->rules[i];

		if (strcmp(r->name, s->name) != 0 || r->line != s->line ||
		    r->column != s->column || r->action != s->action ||
		    r->flags != s->flags || r->nports != s->nports ||
		    (r->more == NULL) != (s->more == NULL))
			return false;
	}
	for (i = 0; i < p->nrefs; i++)
		if (p->refs[i].rule != q->refs[i].rule ||
		    p->refs[i].next != q->refs[i].next)
			return false;
	return true;
}

static void
apart_print(const char *how, const struct policy_diags *d)
{
	char	line[APART_LINE_MAX];
	size_t	i;

	fprintf(stderr, "    %s: %zu errors, %zu warnings\n", how, d->nerrors,
	    d->nwarnings);
	for (i = 0; i < d->n && i < 8; i++)
		fprintf(stderr, "      %s\n", policy_diag_format(d, i, line,
		    sizeof(line)));
}

/* Loads text both ways and compares. */
static void
apart_check(const char *what, const char *text, size_t len)
{
	struct policy_diags	 da, dw;
	struct moat_config	*ca, *cw;
	char			 la[APART_LINE_MAX], lw[APART_LINE_MAX];
	size_t			 i;
	bool			 same;

	policy_diags_init(&da);
	policy_diags_init(&dw);
	ca = config_load("t.json", text, len, NULL, &da, true);
	cw = config_load("t.json", text, len, NULL, &dw, false);
	same = (ca == NULL) == (cw == NULL) && da.n == dw.n &&
	    da.nerrors == dw.nerrors && da.nwarnings == dw.nwarnings;
	for (i = 0; same && i < da.n; i++)
		same = strcmp(policy_diag_format(&da, i, la, sizeof(la)),
		    policy_diag_format(&dw, i, lw, sizeof(lw))) == 0;
	if (same && ca != NULL)
		same = apart_same_policy(ca, cw);
	if (!same) {
		fprintf(stderr, "\n  %s (lists apart past %zu bytes, %zu a "
		    "batch):\n", what, config_list_apart_bytes,
		    config_list_batch);
		apart_print("apart", &da);
		apart_print("whole", &dw);
	}
	CU_ASSERT(same);
	policy_config_unref(ca);
	policy_config_unref(cw);
	policy_diags_clear(&da);
	policy_diags_clear(&dw);
}

/* Each text checked with moatd's sizes and with the smallest. */
static void
apart_both(const char *what, const char *text, size_t len)
{
	size_t	bytes = config_list_apart_bytes, batch = config_list_batch;

	apart_check(what, text, len);
	config_list_apart_bytes = 0;
	config_list_batch = 2;
	apart_check(what, text, len);
	config_list_apart_bytes = bytes;
	config_list_batch = batch;
}

static void
test_apart_vectors(void)
{
	const char	*t;
	size_t		 i;

	for (i = 0; (t = unit_config_vector(i)) != NULL; i++)
		apart_both("an error vector of test_config.c", t, strlen(t));
	apart_both("the embedded default", moat_default_config,
	    moat_default_config_len);
}

/*
 * A config with a rule of n hosts (every fifth a wildcard, every seventh
 * an address) and one of n / 4 cidrs between two small rules; the text
 * at (list, index) replaces that element ("hosts" or "cidrs"), and tail
 * goes after the long rule's list (inside the rule), top after the rules.
 */
static void
apart_gen(struct apart_buf *b, size_t n, const char *list, size_t at,
    const char *elem, const char *tail, const char *top)
{
	size_t	i;

	b->len = 0;
	apart_add(b, "{\"listen\": [{\"proto\": \"http\", \"address\": "
	    "\"127.0.0.1:3128\"}],\n \"policy\": {\"default\": \"deny\",\n"
	    "  \"rules\": [\n   {\"name\": \"first\", \"action\": \"allow\", "
	    "\"hosts\": [\"a.example\"]},\n   {\"name\": \"long\", "
	    "\"action\": \"deny\",\n    \"hosts\": [\n");
	for (i = 0; i < n; i++) {
		if (strcmp(list, "hosts") == 0 && i == at)
			apart_add(b, "     %s", elem);
		else if (i % 7 == 3)
			apart_add(b, "     \"198.18.%zu.%zu\"", (i / 250) % 250,
			    i % 250 + 1);
		else
			apart_add(b, "     \"%sh%zu.example.com\"",
			    i % 5 == 0 ? "*." : "", i);
		apart_add(b, i + 1 < n ? ",\n" : "\n");
	}
	apart_add(b, "    ]%s},\n   {\"name\": \"nets\", \"action\": "
	    "\"deny\", \"cidrs\": [", tail);
	for (i = 0; i < n / 4; i++) {
		if (strcmp(list, "cidrs") == 0 && i == at)
			apart_add(b, "%s", elem);
		else
			apart_add(b, "\"100.%zu.%zu.0/24\"", i / 200, i % 200);
		apart_add(b, i + 1 < n / 4 ? ", " : "");
	}
	apart_add(b, "]},\n   {\"name\": \"last\", \"action\": \"allow\", "
	    "\"hosts\": [\"z.example\"], \"ports\": [443]}\n  ]}%s\n}\n",
	    top);
}

static void
test_apart_generated(void)
{
	static const struct {
		const char	*what, *list, *elem, *tail, *top;
	} v[] = {
		{ "valid", "-", "", "", "" },
		{ "a host that is not one", "hosts", "\"bad host!\"", "", "" },
		{ "a wildcard in the middle", "hosts", "\"a.*.example\"", "",
		  "" },
		{ "not a string", "hosts", "42", "", "" },
		{ "an object, its keys twice", "hosts", "{\"a\": 1, \"a\": 2}",
		  "", "" },
		{ "an array, nested", "hosts", "[[1, [2]], {}]", "", "" },
		{ "a keyword cut short", "hosts", "tru", "", "" },
		{ "a number that is not one", "hosts", "1e", "", "" },
		{ "a bad escape", "hosts", "\"h\\q.example\"", "", "" },
		{ "a long string, bad escape", "hosts",
		  "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\\q\"", "", "" },
		{ "bad UTF-8 in a string", "hosts", "\"h\xff.example\"", "",
		  "" },
		{ "bad UTF-8 outside", "hosts", "\xfe", "", "" },
		{ "a control byte in a string", "hosts", "\"a\tb\"", "", "" },
		{ "an error in the list and after it", "hosts", "tru",
		  ", \"ports\": [1,,2]", "" },
		{ "an error after the list only", "-", "", ", \"ports\": [1,,2]",
		  "" },
		{ "a bad port after the list", "-", "", ", \"ports\": [0]", "" },
		{ "hosts twice", "-", "", ", \"hosts\": [\"x.example\"]", "" },
		{ "a key twice after the list", "-", "",
		  ", \"action\": \"allow\"", "" },
		{ "an error in the list, one after the rules", "hosts", "nul",
		  "", ", \"x\": [1,,]" },
		{ "an error after the rules only", "-", "", "",
		  ", \"x\": [1,,]" },
		{ "policy twice", "-", "", "", ", \"policy\": {}" },
		{ "an unknown key after the rules", "-", "", "",
		  ", \"polcy\": 1" },
		{ "a bad cidr", "cidrs", "\"10.0.0.1/8\"", "", "" },
		{ "a cidr not a string", "cidrs", "[]", "", "" },
		{ "a cidr, a keyword cut short", "cidrs", "fals", "", "" },
		{ "a cidr and a host, both bad", "cidrs", "\"x\"",
		  ", \"ports\": [\"y\"]", "" },
	};
	struct apart_buf	b = { NULL, 0, 0 };
	char			what[160];
	size_t			i, n;

	for (n = 40; n <= 6000; n *= 150) {
		for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
			apart_gen(&b, n, v[i].list, n / 2 + 3, v[i].elem,
			    v[i].tail, v[i].top);
			snprintf(what, sizeof(what), "%s (%zu hosts)",
			    v[i].what, n);
			apart_both(what, b.s, b.len);
		}
	}
	free(b.s);
}

/* Texts whose shape the skeleton must see right, or leave to jansson. */
static void
test_apart_shapes(void)
{
	static const char *const	t[] = {
		/* rules empty, not an array, absent; policy not an object */
		"{\"listen\": [], \"policy\": {\"rules\": []}}",
		"{\"listen\": [], \"policy\": {\"rules\": [ \n ]}}",
		"{\"listen\": [], \"policy\": {\"rules\": {}}}",
		"{\"listen\": [], \"policy\": {\"rules\": 7}}",
		"{\"listen\": [], \"policy\": {\"default\": \"deny\"}}",
		"{\"listen\": [], \"policy\": []}",
		"{\"listen\": [], \"policy\": 1}",
		/* elements of every kind */
		"{\"listen\": [], \"policy\": {\"rules\": [1, \"x\", null, [], "
		"{}, {\"action\": \"allow\", \"hosts\": [\"a.b\"]}]}}",
		/* separators the skeleton refuses: jansson says what */
		"{\"listen\": [], \"policy\": {\"rules\": [{}, ]}}",
		"{\"listen\": [], \"policy\": {\"rules\": [, {}]}}",
		"{\"listen\": [], \"policy\": {\"rules\": [{} {}]}}",
		"{\"listen\": [], \"policy\": {\"rules\": [{}, {]}}",
		"{\"listen\": [], \"policy\": {\"rules\": [{\"a\": [}]}}",
		"{\"listen\": [], \"policy\": {\"rules\": [\"unterminated]}}",
		"{\"listen\": [], \"policy\": {\"rules\": [{}]",
		"{\"listen\": [], \"policy\": {\"rules\": [{}]}} trailing",
		"{\"listen\": [], \"policy\": {\"rules\": [{}]}},",
		/* keys written with escapes: not found, read whole */
		"{\"listen\": [], \"policy\": {\"rul\\u0065s\": [{\"action\": "
		"\"allow\", \"hosts\": [\"a.b\"]}]}}",
		"{\"listen\": [], \"p\\u006flicy\": {\"rules\": [{}]}}",
		/* rules twice, policy twice, with errors in the first */
		"{\"listen\": [], \"policy\": {\"rules\": [{}], \"rules\": []}}",
		"{\"listen\": [], \"policy\": {\"rules\": [tru], \"rules\": []}}",
		"{\"listen\": [], \"policy\": {\"rules\": [{}]}, \"policy\": 1}",
		"{\"listen\": [], \"policy\": {\"rules\": [nul]}, \"policy\": 1}",
		/* errors before the rules, and in the first rule and after */
		"{\"listen\": [,], \"policy\": {\"rules\": [{}]}}",
		"{\"listen\": [], \"policy\": {\"rules\": [{\"a\" 1}]}, \"b\" 2}",
		"{\"listen\": [], \"policy\": {\"rules\": [{\"a\": 1, \"a\": 2}]}}",
		/* a byte that is not UTF-8 first in a rule, and in a list
		 * (jansson counts it as no byte read) */
		"{\"listen\": [], \"policy\": {\"rules\": [\x85\x80, {}]}}",
		"{\"listen\": [], \"policy\": {\"rules\": [{\"action\": "
		"\"deny\", \"hosts\": [\xc3, \"a.b\"]}]}}",
		"{\"listen\": [], \"policy\": {\"rules\": [{\"action\": "
		"\"deny\", \"hosts\": [\"a.b\", \"c.d\", \xff]}]}}",
		"{\"listen\": [], \"policy\": {\"rules\": [{}]}, \xfe: 1}",
		/* line ends and tabs */
		"{\"listen\": [],\r\n\t\"policy\": {\r\n\t\"rules\": [\r\n\t\t"
		"{\"action\": \"allow\",\r\n\t\t \"hosts\": [\"a.b\",\r\n\t\t"
		"\"bad!\"]}\r\n\t]}}",
		/* a rule in the middle of a line */
		"{\"listen\": [], \"policy\": {\"rules\": [{\"action\": \"deny\", "
		"\"hosts\": [\"a.b\"]}, {\"action\": \"deny\", \"hosts\": "
		"[\"c.d\", 5]}]}}",
		/* the top level not an object */
		"[{\"policy\": {\"rules\": [{}]}}]",
		"",
		"   ",
	};
	size_t	i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		apart_both(t[i], t[i], strlen(t[i]));
}

/* Nesting around jansson's limit, inside a rule and inside its hosts. */
static void
test_apart_depth(void)
{
	struct apart_buf	b = { NULL, 0, 0 };
	size_t			d, i, k;
	const char		*where[] = { "rule", "hosts" };

	for (k = 0; k < 2; k++)
		for (d = JSONPOS_SKEL_DEPTH_MAX - 8;
		    d <= JSONPOS_SKEL_DEPTH_MAX + 2; d++) {
			b.len = 0;
			apart_add(&b, "{\"listen\": [], \"policy\": {\"rules\": "
			    "[{\"action\": \"deny\", \"hosts\": [\"a.b\"]}, ");
			if (k == 1)
				apart_add(&b, "{\"action\": \"deny\", \"hosts\": "
				    "[\"c.d\", ");
			for (i = 0; i < d; i++)
				apart_add(&b, "[");
			apart_add(&b, "1");
			for (i = 0; i < d; i++)
				apart_add(&b, "]");
			apart_add(&b, k == 1 ? "]}]}}" : "]}}");
			apart_both(where[k], b.s, b.len);
		}
	free(b.s);
}

void
test_config_apart_register(void)
{
	CU_pSuite	s;

	if ((s = CU_add_suite("config_apart", NULL, NULL)) == NULL)
		return;
	CU_add_test(s, "error vectors and the default: as read whole",
	    test_apart_vectors);
	CU_add_test(s, "long lists with errors in, before, after them",
	    test_apart_generated);
	CU_add_test(s, "shapes the skeleton reads or leaves to jansson",
	    test_apart_shapes);
	CU_add_test(s, "nesting at jansson's limit", test_apart_depth);
}
