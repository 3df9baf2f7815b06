/*
 * socks5_parse.h - SOCKS5 (RFC 1928) and username/password (RFC 1929)
 * message parsers and reply builders.
 *
 * Pure functions over bytes: no I/O, no allocation.  Every parser takes the
 * bytes buffered so far and returns SOCKS5_NEED_MORE (0), the number of
 * bytes the message takes (> 0), or SOCKS5_INVALID (-1) with *err set to a
 * static English message.  A message is never longer than SOCKS5_MSG_MAX
 * bytes, so a caller that buffered that much and still hears "need more"
 * has a bug; callers cap their input there.
 *
 * Bytes at fixed positions (version, counts, RSV, ATYP) are checked as
 * soon as they are buffered, so a SOCKS4 or HTTP client is refused after
 * one byte; the result for a message never depends on how its bytes were
 * split.  Bytes after the message are ignored (the return value says
 * where it ends).  *out is written only when the message is complete,
 * except as noted for socks5_parse_request.
 */
#ifndef MOAT_SOCKS5_PARSE_H
#define MOAT_SOCKS5_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SOCKS5_NEED_MORE	0
#define SOCKS5_INVALID		(-1)
#define SOCKS5_MSG_MAX		513	/* RFC 1929: 1+1+255+1+255 */

#define SOCKS5_VERSION		0x05
#define SOCKS5_AUTH_VERSION	0x01	/* RFC 1929 subnegotiation version */

/* Authentication methods */
#define SOCKS5_METHOD_NONE	0x00
#define SOCKS5_METHOD_USERPASS	0x02
#define SOCKS5_METHOD_REJECT	0xff

/* Commands */
#define SOCKS5_CMD_CONNECT	0x01
#define SOCKS5_CMD_BIND		0x02
#define SOCKS5_CMD_UDP		0x03

/* Address types */
#define SOCKS5_ATYP_IPV4	0x01
#define SOCKS5_ATYP_DOMAIN	0x03
#define SOCKS5_ATYP_IPV6	0x04

/* Reply codes */
#define SOCKS5_REP_OK			0x00
#define SOCKS5_REP_FAILURE		0x01
#define SOCKS5_REP_NOT_ALLOWED		0x02
#define SOCKS5_REP_NET_UNREACHABLE	0x03
#define SOCKS5_REP_HOST_UNREACHABLE	0x04
#define SOCKS5_REP_REFUSED		0x05
#define SOCKS5_REP_TTL_EXPIRED		0x06
#define SOCKS5_REP_CMD_UNSUPPORTED	0x07
#define SOCKS5_REP_ATYP_UNSUPPORTED	0x08

struct socks5_greeting {
	uint8_t		nmethods;
	uint8_t		methods[255];
};

/*
 * Method selection message: VER=5, NMETHODS >= 1, METHODS.  A version other
 * than 5 (SOCKS4 starts with 4) or NMETHODS = 0 is invalid.
 */
int	socks5_parse_greeting(const uint8_t *buf, size_t len,
	    struct socks5_greeting *out, const char **err);

struct socks5_userpass {
	uint8_t		ulen;
	char		user[256];	/* NUL-terminated; holds no NUL byte */
	uint8_t		plen;
	char		pass[256];	/* NUL-terminated; holds no NUL byte */
};

/*
 * RFC 1929 request: VER=1, ULEN >= 1, UNAME, PLEN >= 1, PASSWD.  A NUL byte
 * inside either field is invalid (it would truncate a C string).
 */
int	socks5_parse_userpass(const uint8_t *buf, size_t len,
	    struct socks5_userpass *out, const char **err);

struct socks5_request {
	uint8_t		cmd;		/* SOCKS5_CMD_* as sent (unchecked) */
	uint8_t		atyp;
	uint8_t		addr[16];	/* IPV4: 4 bytes, IPV6: 16 bytes */
	char		domain[256];	/* ATYP_DOMAIN: 1..255 bytes, NUL */
	uint16_t	port;		/* host byte order */
};

/*
 * Request: VER=5, CMD, RSV=0, ATYP, DST.ADDR, DST.PORT.  Invalid: version
 * not 5, RSV not 0, unknown ATYP (the caller answers
 * SOCKS5_REP_ATYP_UNSUPPORTED: *err is then socks5_err_atyp, compare the
 * pointer), a domain of length 0 or containing a NUL or other control
 * byte (0x01-0x1f, 0x7f).  The command is returned as sent; the caller
 * answers SOCKS5_REP_CMD_UNSUPPORTED for anything but CONNECT.  out->cmd
 * and out->atyp are written as soon as their bytes are buffered, even if
 * the result is SOCKS5_NEED_MORE or SOCKS5_INVALID.
 */
extern const char socks5_err_atyp[];

int	socks5_parse_request(const uint8_t *buf, size_t len,
	    struct socks5_request *out, const char **err);

/*
 * The reply for a request socks5_parse_request() found invalid, by its
 * *err: SOCKS5_REP_ATYP_UNSUPPORTED for an unknown address type,
 * SOCKS5_REP_NOT_ALLOWED for a domain that cannot be a destination
 * (empty, NUL or control bytes: a refused target, like a policy denial,
 * so a client can tell it from a network failure), SOCKS5_REP_FAILURE
 * for a malformed message (version, reserved byte).
 * socks5_request_bad_target() is true for the second kind: the caller
 * audits those as a judged target.
 */
uint8_t	socks5_request_reply(const char *err);
bool	socks5_request_bad_target(const char *err);

/* Writes VER=5 and the chosen method into out[0..1].  Returns 2. */
size_t	socks5_build_method(uint8_t out[2], uint8_t method);
/* Writes the RFC 1929 status reply (VER=1, STATUS) into out.  Returns 2. */
size_t	socks5_build_auth_reply(uint8_t out[2], uint8_t status);
/*
 * Writes a reply with BND.ADDR 0.0.0.0 and BND.PORT 0 (moat never tells
 * the client its upstream addresses).  Returns 10.
 */
size_t	socks5_build_reply(uint8_t out[10], uint8_t rep);

#endif /* MOAT_SOCKS5_PARSE_H */
