/*
 * proto_peek.c - classify a tunnel's first bytes and judge them against a
 * rule's "protocols".  The contract is in proto_peek.h.
 *
 * What it is: prefix checks over the first bytes each side sent.  TLS is
 * read by tls_parse.c (a ClientHello is whole or it is not); HTTP is
 * recognised by its request line's method token and space; SSH by its
 * identification string (RFC 4253 §4.2), which both sides send.
 */
#include <string.h>

#include "proxy/proto_peek.h"

#define SSH_PREFIX	"SSH-"
#define SSH_PREFIX_LEN	4

static enum peek_proto	peek_ssh_or_http(const uint8_t *p, size_t len,
			    bool server);

/* RFC 9110 tchar, upper case letters only: every method in use. */
static enum peek_proto
peek_ssh_or_http(const uint8_t *p, size_t len, bool server)
{
	size_t	i, n;

	n = len < SSH_PREFIX_LEN ? len : SSH_PREFIX_LEN;
	if (memcmp(p, SSH_PREFIX, n) == 0)
		return n == SSH_PREFIX_LEN ? PEEK_P_SSH : PEEK_P_PARTIAL;
	if (server)
		return PEEK_P_OTHER;
	for (i = 0; i < len && i <= PEEK_HTTP_METHOD_MAX; i++) {
		if (p[i] == ' ')
			return i > 0 ? PEEK_P_HTTP : PEEK_P_OTHER;
		if (p[i] < 'A' || p[i] > 'Z')
			return PEEK_P_OTHER;
	}
	return i > PEEK_HTTP_METHOD_MAX ? PEEK_P_OTHER : PEEK_P_PARTIAL;
}

enum peek_proto
peek_classify(const uint8_t *p, size_t len, bool server,
    struct peek_result *out)
{
	int	rc;

	out->err = NULL;
	if (len == 0)
		return out->proto = PEEK_P_NONE;
	if (server)
		return out->proto = peek_ssh_or_http(p, len, true);
	if (len > TLS_HELLO_MAX_BYTES)
		len = TLS_HELLO_MAX_BYTES + 1;
	rc = tls_parse_client_hello(p, len, &out->hello, &out->err);
	if (rc > 0)
		return out->proto = PEEK_P_TLS;
	if (rc == TLS_NEED_MORE) {
		if (len <= TLS_HELLO_MAX_BYTES)
			return out->proto = PEEK_P_PARTIAL;
		out->err = "TLS ClientHello too long";
		return out->proto = PEEK_P_BAD_TLS;
	}
	if (rc != TLS_NOT_TLS) {
		if (out->err == NULL)
			out->err = "malformed TLS ClientHello";
		return out->proto = PEEK_P_BAD_TLS;
	}
	return out->proto = peek_ssh_or_http(p, len, false);
}

static bool
peek_allows(unsigned allowed, unsigned bit)
{
	return allowed == PEEK_ALLOW_ANY || (allowed & bit) != 0;
}

enum peek_verdict
peek_judge(unsigned allowed, enum peek_proto cli, enum peek_proto srv,
    enum peek_proto *seen)
{
	*seen = cli;
	if (cli == PEEK_P_BAD_TLS)
		return PEEK_REFUSE;
	if (srv == PEEK_P_SSH && (cli == PEEK_P_NONE ||
	    cli == PEEK_P_PARTIAL || cli == PEEK_P_SSH)) {
		*seen = PEEK_P_SSH;
		return peek_allows(allowed, PEEK_ALLOW_SSH) ? PEEK_PASS :
		    PEEK_REFUSE;
	}
	if (srv != PEEK_P_NONE && srv != PEEK_P_PARTIAL &&
	    (cli == PEEK_P_NONE || cli == PEEK_P_PARTIAL || cli == PEEK_P_SSH)) {
		/* Server-first, and not SSH. */
		*seen = PEEK_P_OTHER;
		return allowed == PEEK_ALLOW_ANY ? PEEK_PASS : PEEK_REFUSE;
	}
	switch (cli) {
	case PEEK_P_NONE:
	case PEEK_P_PARTIAL:
		return PEEK_WAIT;
	case PEEK_P_TLS:
		return peek_allows(allowed, PEEK_ALLOW_TLS) ? PEEK_PASS :
		    PEEK_REFUSE;
	case PEEK_P_HTTP:
		return peek_allows(allowed, PEEK_ALLOW_HTTP) ? PEEK_PASS :
		    PEEK_REFUSE;
	case PEEK_P_SSH:
		if (allowed == PEEK_ALLOW_ANY)
			return PEEK_PASS;
		/* The server's banner confirms it (above). */
		return (allowed & PEEK_ALLOW_SSH) ? PEEK_WAIT : PEEK_REFUSE;
	default:
		return allowed == PEEK_ALLOW_ANY ? PEEK_PASS : PEEK_REFUSE;
	}
}

const char *
peek_proto_name(enum peek_proto p)
{
	switch (p) {
	case PEEK_P_NONE:
		return "nothing";
	case PEEK_P_PARTIAL:
		return "too little to tell";
	case PEEK_P_TLS:
		return "tls";
	case PEEK_P_HTTP:
		return "http";
	case PEEK_P_SSH:
		return "ssh";
	case PEEK_P_BAD_TLS:
		return "malformed tls";
	default:
		return "an unknown protocol";
	}
}
