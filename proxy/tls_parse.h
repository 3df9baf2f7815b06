/*
 * tls_parse.h - TLS ClientHello parser (RFC 8446, RFC 5246, RFC 6066,
 * RFC 7301) for moatd's transparent listener, which attributes a
 * redirected connection to the name in its SNI.
 *
 * What it is: a pure function over the first bytes a client sent.  No I/O,
 * no libevent, no allocation.  It reassembles a ClientHello split over
 * several TLS records and reports what moat needs: the server name, the
 * ALPN protocols, whether TLS 1.3 is offered.
 *
 * What it is not: a TLS implementation.  It checks the framing of every
 * record and every length inside the hello, and the extensions moat reads
 * in full; the contents of other extensions, cipher suites and key shares
 * are the upstream server's business.
 *
 * Return codes: TLS_NEED_MORE (0) until the whole hello is buffered; the
 * number of bytes the hello takes, record headers included (> 0, at most
 * TLS_HELLO_MAX_BYTES); TLS_INVALID (-1) for TLS that is malformed or that
 * moat refuses; TLS_NOT_TLS (-2) when the first byte is not a handshake
 * record (the caller then tries HTTP).  With TLS_INVALID and TLS_NOT_TLS
 * *err is a static English message in lower case.  Checks run in byte
 * order as bytes arrive, so the verdict for a hello does not depend on how
 * its bytes were split, and a buffered prefix gets either TLS_NEED_MORE or
 * the final verdict.  Bytes after the hello are ignored.  No argument may
 * be NULL (buf may be, with len 0).
 */
#ifndef MOAT_TLS_PARSE_H
#define MOAT_TLS_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TLS_NEED_MORE	0
#define TLS_INVALID	(-1)
#define TLS_NOT_TLS	(-2)

/* Sizes, in bytes. */
#define TLS_RECORD_HEADER_BYTES		5
#define TLS_RECORD_MAX_BYTES		16384	/* 2^14, RFC 8446 §5.1 */
#define TLS_HELLO_MAX_BYTES		(TLS_RECORD_MAX_BYTES + \
					    TLS_RECORD_HEADER_BYTES)
#define TLS_HANDSHAKE_HEADER_BYTES	4
#define TLS_RANDOM_BYTES		32
#define TLS_SESSION_ID_MAX_BYTES	32
#define TLS_SNI_MAX_BYTES		255
#define TLS_ALPN_NAME_MAX_BYTES		255
#define TLS_ALPN_MAX_PROTOCOLS		16	/* kept; more are counted */

#define TLS_CONTENT_HANDSHAKE		22
#define TLS_HANDSHAKE_CLIENT_HELLO	1

#define TLS_VERSION_SSL3	0x0300
#define TLS_VERSION_1_0		0x0301
#define TLS_VERSION_1_2		0x0303
#define TLS_VERSION_1_3		0x0304

/* Extensions moat reads. */
#define TLS_EXT_SERVER_NAME		0
#define TLS_EXT_ALPN			16
#define TLS_EXT_PRE_SHARED_KEY		41
#define TLS_EXT_SUPPORTED_VERSIONS	43
#define TLS_EXT_ECH			0xfe0d	/* encrypted_client_hello */

/* One ALPN protocol name: opaque bytes, not NUL-terminated. */
struct tls_alpn {
	uint8_t		len;		/* 1..255 */
	uint8_t		name[TLS_ALPN_NAME_MAX_BYTES];
};

struct tls_client_hello {
	uint16_t	record_version;	/* of the first record */
	size_t		nrecords;	/* records the hello spans */
	uint16_t	legacy_version;	/* ClientHello.legacy_version */
	uint8_t		random[TLS_RANDOM_BYTES];
	uint8_t		session_id_len;
	uint8_t		session_id[TLS_SESSION_ID_MAX_BYTES];
	size_t		ncipher_suites;
	size_t		nextensions;

	/*
	 * server_name: sni holds the host_name as sent (case kept),
	 * NUL-terminated, sni_len bytes of [A-Za-z0-9.-_] (or ':' in an
	 * IPv6 literal).  sni_trailing_dot notes a final '.', which is kept
	 * in sni.  sni_is_ip: the name is an IPv4 literal (it ends in a
	 * number, as the WHATWG URL standard reads it) or an IPv6 literal;
	 * RFC 6066 §3 forbids both, the caller decides what to do.
	 */
	bool		has_sni;
	char		sni[TLS_SNI_MAX_BYTES + 1];
	size_t		sni_len;
	bool		sni_trailing_dot;
	bool		sni_is_ip;

	/* ALPN: the first TLS_ALPN_MAX_PROTOCOLS names in the client's
	 * order; nalpn_sent counts all of them. */
	bool		has_alpn;
	size_t		nalpn;
	size_t		nalpn_sent;
	struct tls_alpn	alpn[TLS_ALPN_MAX_PROTOCOLS];

	/* supported_versions: tls13 when it lists TLS 1.3 (0x0304). */
	bool		has_supported_versions;
	bool		tls13;

	/* encrypted_client_hello: the SNI above is the outer, public name. */
	bool		has_ech;
};

/*
 * Parses the ClientHello at the start of buf[0..len), the bytes a client
 * sent first on a connection (buf always starts at the first byte; feed
 * all bytes buffered so far).
 *
 * Records: content type 22 (handshake) for each record the hello spans;
 * version 0x0301..0x0304 (0x0300, SSLv3, and anything else refused);
 * length 1..2^14; the hello may be split over several records, its
 * 4-byte handshake header too, up to TLS_HELLO_MAX_BYTES in total; the
 * last record must end with the hello (no other handshake message may
 * follow in the same record).  A first byte with the high bit set and a
 * third byte 1 is an SSLv2-compatible hello: TLS_INVALID with
 * err == tls_err_sslv2 (compare the pointer).  Any other first byte but
 * 22 is TLS_NOT_TLS.
 *
 * Handshake: type 1 (ClientHello), 24-bit length; legacy_version
 * 0x0301..0x0303; 32 random bytes; session_id of at most 32 bytes;
 * cipher_suites of even length >= 2; compression_methods of 1..255 bytes
 * including null (0); then either nothing or an extensions block covering
 * exactly the rest of the message, each extension within it, no type twice,
 * pre_shared_key (if any) last.  Read in full:
 *  - server_name: a ServerNameList covering the extension holding exactly
 *    one entry, of type host_name, 1..255 bytes of letters, digits, '.',
 *    '-', '_', or an IPv6 literal (sni_is_ip); anything else is invalid;
 *  - ALPN: a non-empty ProtocolNameList covering the extension, each name
 *    1..255 bytes;
 *  - supported_versions: a non-empty list of even length covering the
 *    extension.
 *
 * Returns as described at the top of this file.  *out is filled when the
 * result is > 0 (a hello without server_name is a success with has_sni
 * false) and undefined otherwise.  A fragmented hello is read in place,
 * without a copy; the duplicate-extension check uses an 8 KiB bitmap on
 * the stack.
 */
extern const char tls_err_sslv2[];

int	tls_parse_client_hello(const uint8_t *buf, size_t len,
	    struct tls_client_hello *out, const char **err);

#endif /* MOAT_TLS_PARSE_H */
