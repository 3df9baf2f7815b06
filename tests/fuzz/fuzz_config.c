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
 *    built-in deny sets refuse.
 */
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

#define FUZZ_DIAG_MAX	512	/* formatted diagnostic buffer */

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t	fuzz_count(json_t *v);
static void	fuzz_positions(const char *buf, size_t len);
static void	fuzz_diags(const struct policy_diags *d, const char *buf,
		    size_t len);
static void	fuzz_decisions(const struct moat_config *c);

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
		    strncmp(g->msg, "internal error", 14) == 0 ||
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

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct policy_diags	 d;
	struct moat_config	*c = NULL;
	char			*buf;

	policy_diags_init(&d);
	if ((buf = malloc(size ? size : 1)) == NULL)
		goto out;
	memcpy(buf, data, size);
	fuzz_positions(buf, size);
	c = policy_config_load("fuzz.json", buf, size, &d);
	if ((c == NULL) != (d.nerrors > 0))
		abort();
	fuzz_diags(&d, buf, size);
	if (c != NULL)
		fuzz_decisions(c);
 out:
	policy_config_unref(c);
	policy_diags_clear(&d);
	free(buf);
	return 0;
}
