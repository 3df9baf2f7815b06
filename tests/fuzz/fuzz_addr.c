/*
 * fuzz_addr.c - fuzz target for the normalisers of the policy library:
 * hosts, host:port, request paths, CIDRs, explain targets, and a decision
 * on what they produce.
 *
 * Properties (abort() if broken):
 *  - a normalised name holds only [a-z0-9_.-] in labels of 1..63 bytes,
 *    at most 253 bytes; an address's text is inet_ntop's, never mapped;
 *  - normalising a canonical form gives the same form (idempotence);
 *  - a normalised path starts with "/", is no longer than its input, has
 *    no "//", "." or ".." segment, and is its own normal form;
 *  - the wide form of a normalised path (deny rules) starts with "/", is
 *    no longer, has no upper-case letter, "\\", ";", "//" or dot
 *    segment, and is its own wide form;
 *  - a parsed CIDR has no host bits and reparses to itself;
 *  - a decision on a denied name or address is a deny.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "policy/policy_int.h"
#include "policyio/policyio.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void	fuzz_check_host(const struct policy_host *h);
static void	fuzz_host(const char *s, size_t n);
static void	fuzz_path(const char *s, size_t n);
static void	fuzz_wide(const char *s, size_t n);
static void	fuzz_cidr(const char *s, size_t n);
static void	fuzz_decide(const char *s, size_t n, const char *z);
static const struct moat_config	*fuzz_config(void);

static const char	fuzz_conf[] =
    "{\"listen\": [{\"proto\": \"http\", \"address\": \"127.0.0.1:3128\"}],"
    " \"tls\": {\"ca_cert\": \"/etc/moat/ca/ca.crt\", "
    "\"ca_key\": \"/etc/moat/ca/ca.key\"},"
    " \"policy\": {\"allow_private\": [\"10.1.0.0/16\"], \"rules\": ["
    " {\"name\": \"wild\", \"action\": \"allow\", \"hosts\": "
    "[\"*.example.com\", \"example.org\", \"*\"], \"ports\": [\"*\"]},"
    " {\"name\": \"net\", \"action\": \"allow\", \"cidrs\": "
    "[\"0.0.0.0/0\", \"::/0\"], \"ports\": [\"1-65535\"]},"
    " {\"name\": \"api\", \"action\": \"allow\", \"hosts\": "
    "[\"api.example.net\"], \"methods\": [\"GET\"], \"paths\": "
    "[\"/v1/\", \"/a/*/b\"]},"
    " {\"name\": \"no\", \"action\": \"deny\", \"hosts\": [\"*\"], "
    "\"paths\": [\"/admin\"]}]}}";

/* Loaded once; reachable until exit. */
static const struct moat_config *
fuzz_config(void)
{
	static struct moat_config	*c;
	struct policy_diags		 d;

	if (c != NULL)
		return c;
	policy_diags_init(&d);
	c = policy_config_load("fuzz", fuzz_conf, sizeof(fuzz_conf) - 1, &d);
	policy_diags_clear(&d);
	if (c == NULL)
		abort();
	return c;
}

static void
fuzz_check_host(const struct policy_host *h)
{
	char		text[INET6_ADDRSTRLEN];
	size_t		i, n = strlen(h->name), label = 0;

	if (h->kind == POLICY_HOST_ADDR) {
		if (h->addr.family != AF_INET && h->addr.family != AF_INET6)
			abort();
		if (h->addr.family == AF_INET6 &&
		    IN6_IS_ADDR_V4MAPPED(&h->addr.u.v6))
			abort();
		policy_addr_format(&h->addr, text, sizeof(text));
		if (strcmp(text, h->name) != 0)
			abort();
		return;
	}
	if (n == 0 || n > POLICY_NAME_MAX || h->name[0] == '.' ||
	    h->name[n - 1] == '.')
		abort();
	for (i = 0; i < n; i++) {
		char	c = h->name[i];

		if (c == '.') {
			if (label == 0)
				abort();
			label = 0;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_') || ++label > 63)
			abort();
	}
}

static void
fuzz_host(const char *s, size_t n)
{
	struct policy_host	 h, h2;
	const char		*err = NULL;
	uint16_t		 port;

	if (policy_host_normalise(s, n, &h, &err) == 0) {
		fuzz_check_host(&h);
		if (policy_host_normalise(h.name, strlen(h.name), &h2,
		    &err) != 0 || h2.kind != h.kind ||
		    strcmp(h2.name, h.name) != 0)
			abort();
	} else if (err == NULL || err[0] == '\0')
		abort();
	err = NULL;
	if (policy_hostport_parse(s, n, n % 2 ? 443 : 0, &h, &port,
	    &err) == 0) {
		fuzz_check_host(&h);
		if (port == 0)
			abort();
	} else if (err == NULL)
		abort();
}

static void
fuzz_path(const char *s, size_t n)
{
	char		*out = NULL, *again = NULL;
	const char	*err;
	size_t		 olen, alen, i;
	int		 pattern;

	if ((out = malloc(n + 1)) == NULL || (again = malloc(n + 1)) == NULL)
		goto out;
	for (pattern = 0; pattern < 2; pattern++) {
		if (path_normalise(s, n, pattern, out, &olen, &err) == -1)
			continue;
		if (olen == 0 || olen > n || out[0] != '/' ||
		    strlen(out) != olen || strstr(out, "//") != NULL)
			abort();
		for (i = 0; i < olen; i++)
			if (out[i] == '/' && out[i + 1] == '.' &&
			    (out[i + 2] == '/' || out[i + 2] == '\0' ||
			    (out[i + 2] == '.' && (out[i + 3] == '/' ||
			    out[i + 3] == '\0'))))
				abort();
		if (path_normalise(out, olen, pattern, again, &alen,
		    &err) == -1 || alen != olen || memcmp(out, again, olen))
			abort();
		/* A pattern without "*" matches its own path. */
		if (strchr(out, '*') == NULL && !path_match(out, out, olen))
			abort();
		if (!path_match("/*", out, olen))
			abort();
		fuzz_wide(out, olen);
	}
 out:
	free(out);
	free(again);
}

static void
fuzz_wide(const char *s, size_t n)
{
	char		*w, *again;
	const char	*err;
	size_t		 wlen, alen, i;
	bool		 hidden;

	w = malloc(n + 1);
	again = malloc(n + 1);
	if (w == NULL || again == NULL)
		goto out;
	if (path_wide(s, n, w, &wlen, &hidden, &err) == -1)
		goto out;
	if (wlen == 0 || wlen > n || w[0] != '/' || strlen(w) != wlen ||
	    strstr(w, "//") != NULL || strchr(w, '\\') != NULL ||
	    strchr(w, ';') != NULL)
		abort();
	for (i = 0; i < wlen; i++)
		if ((w[i] >= 'A' && w[i] <= 'Z') || (w[i] == '/' &&
		    w[i + 1] == '.' && (w[i + 2] == '/' || w[i + 2] == '\0' ||
		    (w[i + 2] == '.' && (w[i + 3] == '/' || w[i + 3] == '\0')))))
			abort();
	if (path_wide(w, wlen, again, &alen, &hidden, &err) == -1 ||
	    hidden || alen != wlen || memcmp(w, again, wlen) != 0)
		abort();
 out:
	free(w);
	free(again);
}

static void
fuzz_cidr(const char *s, size_t n)
{
	struct addr_cidr	 c, c2, fixed;
	struct policy_addr	 m;
	const char		*err;
	char			 buf[ADDR_TEXT_MAX];
	int			 rc;

	rc = addr_cidr_parse(s, n, &c, &fixed, &err);
	if (rc == -2) {
		m = fixed.addr;
		if (addr_mask(&m, fixed.plen))
			abort();
		return;
	}
	if (rc != 0)
		return;
	if (c.plen > addr_bits(c.addr.family))
		abort();
	m = c.addr;
	if (addr_mask(&m, c.plen))
		abort();
	addr_cidr_format(&c, buf, sizeof(buf));
	if (addr_cidr_parse(buf, strlen(buf), &c2, NULL, &err) != 0 ||
	    c2.plen != c.plen || c2.addr.family != c.addr.family ||
	    memcmp(addr_bytes(&c2.addr), addr_bytes(&c.addr),
	    addr_bits(c.addr.family) / 8) != 0)
		abort();
}

static void
fuzz_decide(const char *s, size_t n, const char *z)
{
	const struct moat_config	*c = fuzz_config();
	struct policy_explain_target	 e;
	struct policy_decision		 d;
	struct policy_target		 t;
	struct policy_host		 h;
	const char			*err;

	if (policy_host_normalise(s, n, &h, &err) == 0) {
		memset(&t, 0, sizeof(t));
		if (h.kind == POLICY_HOST_NAME)
			t.name = h.name;
		else
			t.addr = &h.addr;
		t.port = (uint16_t)(n * 7919);
		t.method = n % 3 ? "GET" : NULL;
		t.path = n % 3 ? z : NULL;
		policy_decide(c->policy, &t, &d);
		if ((t.name != NULL && deny_name(t.name) != POLICY_R_ALLOWED) ||
		    (t.addr != NULL && deny_addr(c->policy, t.addr) !=
		    POLICY_R_ALLOWED)) {
			if (d.verdict != POLICY_DENY)
				abort();
		}
		if (d.verdict == POLICY_ALLOW && d.reason != POLICY_R_ALLOWED)
			abort();
		if (t.port == 0 && d.verdict == POLICY_ALLOW)
			abort();
	}
	if (policy_explain_parse(z, NULL, &e, &err) == 0) {
		policy_decide(c->policy, &e.t, &d);
		free(e.buf);
	} else if (err == NULL)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	*s = NULL, *z = NULL;

	/* IDNA names as moatd converts them (libidn2 loads once). */
	(void)policyio_idn_load();
	/* Exact-size copy, so reads past the end are caught. */
	if ((s = malloc(size ? size : 1)) == NULL ||
	    (z = malloc(size + 1)) == NULL)
		goto out;
	memcpy(s, data, size);
	memcpy(z, data, size);
	z[size] = '\0';
	fuzz_host(s, size);
	fuzz_path(s, size);
	fuzz_cidr(s, size);
	fuzz_decide(s, size, z);
 out:
	free(s);
	free(z);
	return 0;
}
