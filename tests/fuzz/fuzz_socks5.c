/*
 * fuzz_socks5.c - fuzz target for the SOCKS5 parsers and reply builders
 * (proxy/socks5_parse.c).
 *
 * Every input goes to all three parsers.  Properties, each an abort() when
 * broken:
 * - fed as prefixes of increasing length (each an exact-size copy, so
 *   AddressSanitizer sees any read past the bytes given), a parser says
 *   "need more" until some length, then gives one result for that length
 *   and every longer prefix: the same code, message and output; a byte
 *   count it returns is that length itself;
 * - a result that is never reached stays "need more" only while the input
 *   is shorter than SOCKS5_MSG_MAX;
 * - what a parser accepts is consistent with the wire format (lengths add
 *   up, strings have the stated length and no NUL).
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/socks5_parse.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define FUZZ_CHECK(c)	do { if (!(c)) abort(); } while (0)
/* Longer prefixes than this add nothing: no message is longer. */
#define PREFIX_MAX	(SOCKS5_MSG_MAX + 8)

enum msg_kind {
	MSG_GREETING = 0,
	MSG_USERPASS,
	MSG_REQUEST,
	MSG_KINDS
};

union msg_out {
	struct socks5_greeting	g;
	struct socks5_userpass	u;
	struct socks5_request	r;
};

static int	parse(enum msg_kind, const uint8_t *, size_t, union msg_out *,
		    const char **);
static void	check_ok(enum msg_kind, const uint8_t *, int,
		    const union msg_out *);
static void	check_prefixes(enum msg_kind, const uint8_t *, size_t);
static void	check_builders(const uint8_t *, size_t);

static int
parse(enum msg_kind kind, const uint8_t *in, size_t len, union msg_out *out,
    const char **err)
{
	memset(out, 0, sizeof(*out));
	*err = NULL;
	switch (kind) {
	case MSG_GREETING:
		return socks5_parse_greeting(in, len, &out->g, err);
	case MSG_USERPASS:
		return socks5_parse_userpass(in, len, &out->u, err);
	case MSG_REQUEST:
		return socks5_parse_request(in, len, &out->r, err);
	default:
		abort();
	}
}

/* A message of rc bytes was accepted: its fields must match the wire. */
static void
check_ok(enum msg_kind kind, const uint8_t *in, int rc,
    const union msg_out *o)
{
	size_t	alen;

	FUZZ_CHECK(rc > 0 && rc <= SOCKS5_MSG_MAX);
	switch (kind) {
	case MSG_GREETING:
		FUZZ_CHECK(in[0] == SOCKS5_VERSION && o->g.nmethods >= 1);
		FUZZ_CHECK(rc == 2 + o->g.nmethods);
		FUZZ_CHECK(memcmp(o->g.methods, in + 2, o->g.nmethods) == 0);
		break;
	case MSG_USERPASS:
		FUZZ_CHECK(in[0] == SOCKS5_AUTH_VERSION);
		FUZZ_CHECK(o->u.ulen >= 1 && o->u.plen >= 1);
		FUZZ_CHECK(strlen(o->u.user) == o->u.ulen);
		FUZZ_CHECK(strlen(o->u.pass) == o->u.plen);
		FUZZ_CHECK(rc == 3 + o->u.ulen + o->u.plen);
		break;
	case MSG_REQUEST:
		FUZZ_CHECK(in[0] == SOCKS5_VERSION && in[2] == 0);
		FUZZ_CHECK(o->r.cmd == in[1] && o->r.atyp == in[3]);
		if (o->r.atyp == SOCKS5_ATYP_IPV4)
			alen = 4;
		else if (o->r.atyp == SOCKS5_ATYP_IPV6)
			alen = 16;
		else {
			FUZZ_CHECK(o->r.atyp == SOCKS5_ATYP_DOMAIN);
			alen = strlen(o->r.domain);
			FUZZ_CHECK(alen >= 1 && alen == in[4]);
			FUZZ_CHECK(memcmp(o->r.domain, in + 5, alen) == 0);
			alen++;
		}
		FUZZ_CHECK((size_t)rc == 4 + alen + 2);
		FUZZ_CHECK(o->r.port == (in[rc - 2] << 8 | in[rc - 1]));
		break;
	default:
		abort();
	}
}

static void
check_prefixes(enum msg_kind kind, const uint8_t *data, size_t size)
{
	union msg_out	 first_out, out;
	const char	*first_err = NULL, *err;
	uint8_t		*copy;
	size_t		 k, n = size < PREFIX_MAX ? size : PREFIX_MAX;
	int		 first = SOCKS5_NEED_MORE, rc;

	memset(&first_out, 0, sizeof(first_out));
	for (k = 0; k <= n; k++) {
		if ((copy = malloc(k ? k : 1)) == NULL)
			return;
		memcpy(copy, data, k);
		rc = parse(kind, copy, k, &out, &err);
		FUZZ_CHECK(rc >= SOCKS5_INVALID);
		FUZZ_CHECK((rc == SOCKS5_INVALID) == (err != NULL));
		if (first == SOCKS5_NEED_MORE) {
			if (rc > 0) {
				FUZZ_CHECK((size_t)rc == k);
				check_ok(kind, copy, rc, &out);
			}
			first = rc;
			first_err = err;
			first_out = out;
		} else {
			FUZZ_CHECK(rc == first && err == first_err);
			FUZZ_CHECK(rc == SOCKS5_INVALID ||
			    memcmp(&out, &first_out, sizeof(out)) == 0);
		}
		free(copy);
	}
	if (first == SOCKS5_NEED_MORE)
		FUZZ_CHECK(n < SOCKS5_MSG_MAX);
	/* The atyp message is the one the caller tells by its address. */
	if (kind == MSG_REQUEST && first == SOCKS5_INVALID &&
	    first_err == socks5_err_atyp)
		FUZZ_CHECK(data[3] != SOCKS5_ATYP_IPV4 &&
		    data[3] != SOCKS5_ATYP_IPV6 &&
		    data[3] != SOCKS5_ATYP_DOMAIN);
}

static void
check_builders(const uint8_t *data, size_t size)
{
	uint8_t	out[10], v;

	v = size > 0 ? data[0] : 0;
	FUZZ_CHECK(socks5_build_method(out, v) == 2);
	FUZZ_CHECK(out[0] == SOCKS5_VERSION && out[1] == v);
	FUZZ_CHECK(socks5_build_auth_reply(out, v) == 2);
	FUZZ_CHECK(out[0] == SOCKS5_AUTH_VERSION && out[1] == v);
	FUZZ_CHECK(socks5_build_reply(out, v) == 10);
	FUZZ_CHECK(out[0] == SOCKS5_VERSION && out[1] == v && out[2] == 0 &&
	    out[3] == SOCKS5_ATYP_IPV4);
	FUZZ_CHECK(MEMCMP_LIT(out + 4, "\0\0\0\0\0\0") == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum msg_kind	k;

	for (k = MSG_GREETING; k < MSG_KINDS; k++)
		check_prefixes(k, data, size);
	check_builders(data, size);
	return 0;
}
