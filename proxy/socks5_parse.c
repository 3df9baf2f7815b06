/*
 * socks5_parse.c - SOCKS5 (RFC 1928) and username/password (RFC 1929)
 * message parsers and reply builders.  The contract is in socks5_parse.h.
 *
 * What it is: length arithmetic over fixed layouts, no I/O and no
 * allocation.  Bytes at fixed positions (versions, counts, the reserved
 * byte, the address type) are checked as soon as they arrive, so a SOCKS4
 * or HTTP client is turned away after its first byte; the variable parts
 * are checked once the whole message is there.  Either way the verdict
 * for a message does not depend on how its bytes were split.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "proxy/socks5_parse.h"

#define SOCKS4_VERSION		0x04
#define SOCKS5_REQ_FIXED	4	/* VER CMD RSV ATYP */
#define SOCKS5_PORT_LEN		2
#define SOCKS5_IPV4_LEN		4
#define SOCKS5_IPV6_LEN		16

const char socks5_err_atyp[] = "address type not supported";
/* The target's own faults: the client named something that cannot be a
 * destination, which is a refusal (0x02), not a failure of moat. */
static const char err_domain_empty[] = "empty domain name";
static const char err_domain_nul[] = "NUL byte in domain name";
static const char err_domain_ctl[] = "control byte in domain name";

static int	version_check(uint8_t, const char **);

static int
version_check(uint8_t v, const char **err)
{
	if (v == SOCKS5_VERSION)
		return 0;
	*err = v == SOCKS4_VERSION ? "SOCKS4 not supported" :
	    "bad SOCKS version";
	return -1;
}

int
socks5_parse_greeting(const uint8_t *buf, size_t len,
    struct socks5_greeting *out, const char **err)
{
	size_t	need;

	if (len < 1)
		return SOCKS5_NEED_MORE;
	if (version_check(buf[0], err) == -1)
		return SOCKS5_INVALID;
	if (len < 2)
		return SOCKS5_NEED_MORE;
	if (buf[1] == 0) {
		*err = "no authentication methods offered";
		return SOCKS5_INVALID;
	}
	need = 2 + (size_t)buf[1];
	if (len < need)
		return SOCKS5_NEED_MORE;
	out->nmethods = buf[1];
	memcpy(out->methods, buf + 2, buf[1]);
	return (int)need;
}

int
socks5_parse_userpass(const uint8_t *buf, size_t len,
    struct socks5_userpass *out, const char **err)
{
	size_t	ulen, plen, need;

	if (len < 1)
		return SOCKS5_NEED_MORE;
	if (buf[0] != SOCKS5_AUTH_VERSION) {
		*err = "bad username/password version";
		return SOCKS5_INVALID;
	}
	if (len < 2)
		return SOCKS5_NEED_MORE;
	if ((ulen = buf[1]) == 0) {
		*err = "empty username";
		return SOCKS5_INVALID;
	}
	if (len < 3 + ulen)
		return SOCKS5_NEED_MORE;
	if ((plen = buf[2 + ulen]) == 0) {
		*err = "empty password";
		return SOCKS5_INVALID;
	}
	need = 3 + ulen + plen;
	if (len < need)
		return SOCKS5_NEED_MORE;
	if (memchr(buf + 2, '\0', ulen) != NULL) {
		*err = "NUL byte in username";
		return SOCKS5_INVALID;
	}
	if (memchr(buf + 3 + ulen, '\0', plen) != NULL) {
		*err = "NUL byte in password";
		return SOCKS5_INVALID;
	}
	out->ulen = (uint8_t)ulen;
	memcpy(out->user, buf + 2, ulen);
	out->user[ulen] = '\0';
	out->plen = (uint8_t)plen;
	memcpy(out->pass, buf + 3 + ulen, plen);
	out->pass[plen] = '\0';
	return (int)need;
}

int
socks5_parse_request(const uint8_t *buf, size_t len,
    struct socks5_request *out, const char **err)
{
	const uint8_t	*a = buf + SOCKS5_REQ_FIXED;
	size_t		 alen, need, i;

	if (len < 1)
		return SOCKS5_NEED_MORE;
	if (version_check(buf[0], err) == -1)
		return SOCKS5_INVALID;
	if (len < 2)
		return SOCKS5_NEED_MORE;
	out->cmd = buf[1];
	if (len < 3)
		return SOCKS5_NEED_MORE;
	if (buf[2] != 0) {
		*err = "reserved byte not zero";
		return SOCKS5_INVALID;
	}
	if (len < 4)
		return SOCKS5_NEED_MORE;
	out->atyp = buf[3];
	switch (buf[3]) {
	case SOCKS5_ATYP_IPV4:
		alen = SOCKS5_IPV4_LEN;
		break;
	case SOCKS5_ATYP_IPV6:
		alen = SOCKS5_IPV6_LEN;
		break;
	case SOCKS5_ATYP_DOMAIN:
		if (len < SOCKS5_REQ_FIXED + 1)
			return SOCKS5_NEED_MORE;
		if (a[0] == 0) {
			*err = err_domain_empty;
			return SOCKS5_INVALID;
		}
		alen = 1 + (size_t)a[0];
		break;
	default:
		*err = socks5_err_atyp;
		return SOCKS5_INVALID;
	}
	need = SOCKS5_REQ_FIXED + alen + SOCKS5_PORT_LEN;
	if (len < need)
		return SOCKS5_NEED_MORE;
	if (buf[3] == SOCKS5_ATYP_DOMAIN) {
		/* A NUL would cut the name short; a control byte has no
		 * business in a host name and would reach logs. */
		for (i = 1; i < alen; i++) {
			if (a[i] < 0x20 || a[i] == 0x7f) {
				*err = a[i] == 0 ? err_domain_nul :
				    err_domain_ctl;
				return SOCKS5_INVALID;
			}
		}
		memcpy(out->domain, a + 1, alen - 1);
		out->domain[alen - 1] = '\0';
	} else
		memcpy(out->addr, a, alen);
	out->port = (uint16_t)(a[alen] << 8 | a[alen + 1]);
	return (int)need;
}

uint8_t
socks5_request_reply(const char *err)
{
	if (err == socks5_err_atyp)
		return SOCKS5_REP_ATYP_UNSUPPORTED;
	if (err == err_domain_empty || err == err_domain_nul ||
	    err == err_domain_ctl)
		return SOCKS5_REP_NOT_ALLOWED;
	return SOCKS5_REP_FAILURE;
}

bool
socks5_request_bad_target(const char *err)
{
	return socks5_request_reply(err) == SOCKS5_REP_NOT_ALLOWED;
}

size_t
socks5_build_method(uint8_t out[2], uint8_t method)
{
	out[0] = SOCKS5_VERSION;
	out[1] = method;
	return 2;
}

size_t
socks5_build_auth_reply(uint8_t out[2], uint8_t status)
{
	out[0] = SOCKS5_AUTH_VERSION;
	out[1] = status;
	return 2;
}

size_t
socks5_build_reply(uint8_t out[10], uint8_t rep)
{
	out[0] = SOCKS5_VERSION;
	out[1] = rep;
	out[2] = 0;			/* RSV */
	out[3] = SOCKS5_ATYP_IPV4;
	memset(out + 4, 0, 6);		/* 0.0.0.0, port 0 */
	return 10;
}
