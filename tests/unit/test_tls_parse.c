/*
 * test_tls_parse.c - vectors for proxy/tls_parse.c.
 *
 * The real hellos below are first flights captured on loopback: each
 * client (openssl s_client, curl, Node, Python) connected through a small
 * Python relay that saved the bytes it sent before the server's first
 * byte, to a local "openssl s_server" that completed the handshake.  One
 * of them (s_client -max_send_frag 512) spans two records.
 *
 * Hand-made vectors are ClientHello bodies (from legacy_version on): the
 * test adds the handshake and record headers, once as one record and then
 * split at many sizes, and every split must give the same verdict.  A few
 * raw vectors are whole byte streams, for the record layer itself.
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "proxy/tls_parse.h"
#include "tests/unit/unit.h"

#define B(s)		(const uint8_t *)(s), (sizeof(s) - 1)
#define V(a)		(a), (sizeof(a) - 1)
#define CHECK(ok, i)	vcheck((ok), (i), #ok, __LINE__)

/* A verdict of "accepted" for body vectors, whose length the framing
 * decides. */
#define ACCEPT		1

/* Room for any framing of the largest hello, one byte per record. */
#define FRAME_MAX	(TLS_HELLO_MAX_BYTES * 6)

struct hello_vec {
	const uint8_t	*in;
	size_t		 len;
	bool		 raw;		/* whole stream, not a body */
	int		 rc;		/* raw: exact result; body: ACCEPT or
					 * a verdict */
	const char	*err;
	const char	*sni;		/* NULL: no server_name */
	const char	*alpn;		/* names joined by ',', NULL: none */
	bool		 tls13;
	bool		 ip;
	bool		 dot;
	bool		 ech;
};

static void	vcheck(bool, size_t, const char *, int);
static size_t	frame(const uint8_t *, size_t, uint8_t *);
static size_t	frame_split(const uint8_t *, size_t, const size_t *, size_t,
		    uint8_t *);
static size_t	body_of(const uint8_t *, size_t, uint8_t *);
static void	alpn_join(const struct tls_client_hello *, char *, size_t);
static void	check_fields(const struct hello_vec *, size_t,
		    const struct tls_client_hello *);
static int	run_vec(const struct hello_vec *, size_t, const uint8_t *,
		    size_t, struct tls_client_hello *);
static void	check_prefixes(const uint8_t *, size_t, size_t);
static size_t	big_body(uint8_t *, size_t, size_t);
static void	test_captured(void);
static void	test_vectors(void);
static void	test_fragmented(void);
static void	test_prefixes(void);
static void	test_sslv2(void);
static void	test_limits(void);
static void	test_trailing(void);
static void	test_alpn_many(void);

/* ------------------------------------------------------------------ */
/* Captured first flights                                               */
/* ------------------------------------------------------------------ */

/* curl 7.88.1: TLS 1.3 and 1.2, SNI, ALPN h2 and http/1.1, padded */
static const uint8_t hello_curl_h2_0[] =
	    /* record: handshake, version 0301, length 512 */
	    "\x16\x03\x01\x02\x00"
	    /* handshake: ClientHello, length 508 */
	    "\x01\x00\x01\xfc"
	    /* legacy_version 0303, random */
	    "\x03\x03\x49\xf6\x35\x2e\x61\xb7\xe4\x20\xc0\x61\xfc\x88\x6b\x55"
	    "\xa0\x03\x08\x03\x63\x4e\x2c\x39\xf6\x08\xc6\xe2\x06\x2f\x53\x74"
	    "\xb8\x47"
	    /* session_id (32 bytes) */
	    "\x20\xed\x3f\x2d\x26\x64\xcf\x8a\x1a\xb1\x51\xcb\x03\xde\xea\x10"
	    "\x40\x35\x0b\x54\xb3\xd2\x9f\x1c\x6c\xf1\xce\xee\x77\xd6\x42\x7e"
	    "\xdb"
	    /* cipher_suites (31) */
	    "\x00\x3e\x13\x02\x13\x03\x13\x01\xc0\x2c\xc0\x30\x00\x9f\xcc\xa9"
	    "\xcc\xa8\xcc\xaa\xc0\x2b\xc0\x2f\x00\x9e\xc0\x24\xc0\x28\x00\x6b"
	    "\xc0\x23\xc0\x27\x00\x67\xc0\x0a\xc0\x14\x00\x39\xc0\x09\xc0\x13"
	    "\x00\x33\x00\x9d\x00\x9c\x00\x3d\x00\x3c\x00\x35\x00\x2f\x00\xff"
	    /* compression_methods (1) */
	    "\x01\x00"
	    /* extensions, 373 bytes */
	    "\x01\x75"
	    /* ext server_name (16 bytes): example.com */
	    "\x00\x00\x00\x10\x00\x0e\x00\x00\x0b\x65\x78\x61\x6d\x70\x6c\x65"
	    "\x2e\x63\x6f\x6d"
	    /* ext ec_point_formats (4 bytes) */
	    "\x00\x0b\x00\x04\x03\x00\x01\x02"
	    /* ext supported_groups (22 bytes) */
	    "\x00\x0a\x00\x16\x00\x14\x00\x1d\x00\x17\x00\x1e\x00\x19\x00\x18"
	    "\x01\x00\x01\x01\x01\x02\x01\x03\x01\x04"
	    /* ext ALPN (14 bytes): h2, http/1.1 */
	    "\x00\x10\x00\x0e\x00\x0c\x02\x68\x32\x08\x68\x74\x74\x70\x2f\x31"
	    "\x2e\x31"
	    /* ext encrypt_then_mac (0 bytes) */
	    "\x00\x16\x00\x00"
	    /* ext extended_master_secret (0 bytes) */
	    "\x00\x17\x00\x00"
	    /* ext post_handshake_auth (0 bytes) */
	    "\x00\x31\x00\x00"
	    /* ext signature_algorithms (42 bytes) */
	    "\x00\x0d\x00\x2a\x00\x28\x04\x03\x05\x03\x06\x03\x08\x07\x08\x08"
	    "\x08\x09\x08\x0a\x08\x0b\x08\x04\x08\x05\x08\x06\x04\x01\x05\x01"
	    "\x06\x01\x03\x03\x03\x01\x03\x02\x04\x02\x05\x02\x06\x02"
	    /* ext supported_versions (9 bytes) */
	    "\x00\x2b\x00\x09\x08\x03\x04\x03\x03\x03\x02\x03\x01"
	    /* ext psk_key_exchange_modes (2 bytes) */
	    "\x00\x2d\x00\x02\x01\x01"
	    /* ext key_share (38 bytes) */
	    "\x00\x33\x00\x26\x00\x24\x00\x1d\x00\x20\x3f\xa5\x05\x4e\x2a\x2a"
	    "\xd9\x60\x20\x21\x5b\x19\xcc\xbc\x7a\xd6\xdf\x4c\x79\x75\xa6\xad"
	    "\xd3\xb1\xe3\x99\x4d\xc6\xae\x51\xd5\x11"
	    /* ext padding (178 bytes) */
	    "\x00\x15\x00\xb2\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	    "\x00\x00\x00\x00\x00\x00";

/* curl --http1.1 --tlsv1.2 --tls-max 1.2: TLS 1.2 only */
static const uint8_t hello_curl_http11_tls12_0[] =
	    /* record: handshake, version 0301, length 218 */
	    "\x16\x03\x01\x00\xda"
	    /* handshake: ClientHello, length 214 */
	    "\x01\x00\x00\xd6"
	    /* legacy_version 0303, random */
	    "\x03\x03\x9b\xfe\x84\x77\x85\x2c\xde\x05\x91\x51\x46\x04\xb8\x01"
	    "\x02\xf9\x78\x11\xc4\xa2\x35\xe8\x03\xa4\xd9\x5c\x60\xda\xc1\xfb"
	    "\x13\x8d"
	    /* session_id (0 bytes) */
	    "\x00"
	    /* cipher_suites (28) */
	    "\x00\x38\xc0\x2c\xc0\x30\x00\x9f\xcc\xa9\xcc\xa8\xcc\xaa\xc0\x2b"
	    "\xc0\x2f\x00\x9e\xc0\x24\xc0\x28\x00\x6b\xc0\x23\xc0\x27\x00\x67"
	    "\xc0\x0a\xc0\x14\x00\x39\xc0\x09\xc0\x13\x00\x33\x00\x9d\x00\x9c"
	    "\x00\x3d\x00\x3c\x00\x35\x00\x2f\x00\xff"
	    /* compression_methods (1) */
	    "\x01\x00"
	    /* extensions, 117 bytes */
	    "\x00\x75"
	    /* ext server_name (20 bytes): api.example.com */
	    "\x00\x00\x00\x14\x00\x12\x00\x00\x0f\x61\x70\x69\x2e\x65\x78\x61"
	    "\x6d\x70\x6c\x65\x2e\x63\x6f\x6d"
	    /* ext ec_point_formats (4 bytes) */
	    "\x00\x0b\x00\x04\x03\x00\x01\x02"
	    /* ext supported_groups (12 bytes) */
	    "\x00\x0a\x00\x0c\x00\x0a\x00\x1d\x00\x17\x00\x1e\x00\x19\x00\x18"
	    /* ext ALPN (11 bytes): http/1.1 */
	    "\x00\x10\x00\x0b\x00\x09\x08\x68\x74\x74\x70\x2f\x31\x2e\x31"
	    /* ext encrypt_then_mac (0 bytes) */
	    "\x00\x16\x00\x00"
	    /* ext extended_master_secret (0 bytes) */
	    "\x00\x17\x00\x00"
	    /* ext signature_algorithms (42 bytes) */
	    "\x00\x0d\x00\x2a\x00\x28\x04\x03\x05\x03\x06\x03\x08\x07\x08\x08"
	    "\x08\x09\x08\x0a\x08\x0b\x08\x04\x08\x05\x08\x06\x04\x01\x05\x01"
	    "\x06\x01\x03\x03\x03\x01\x03\x02\x04\x02\x05\x02\x06\x02";

/* Node 20 tls.connect: SNI Node.Example.com (case kept) */
static const uint8_t hello_node_tls_0[] =
	    /* record: handshake, version 0301, length 384 */
	    "\x16\x03\x01\x01\x80"
	    /* handshake: ClientHello, length 380 */
	    "\x01\x00\x01\x7c"
	    /* legacy_version 0303, random */
	    "\x03\x03\xc1\x4a\x83\x95\x54\x7e\xa6\xba\xbc\x7c\x25\x20\xcc\x72"
	    "\xf4\xd8\x4f\x00\xf4\x6f\x4c\x2c\x3b\x83\xb3\xd7\x75\xff\xa3\xdf"
	    "\x64\x45"
	    /* session_id (32 bytes) */
	    "\x20\x41\xbb\x4e\x69\xda\x12\x1e\x61\xdd\x05\xa8\x0a\x5d\x3f\x0c"
	    "\x3b\x96\x37\x3e\x61\x66\x81\xef\x93\x61\xfd\x33\xbe\x11\x8a\xa5"
	    "\xb0"
	    /* cipher_suites (59) */
	    "\x00\x76\x13\x02\x13\x03\x13\x01\xc0\x2f\xc0\x2b\xc0\x30\xc0\x2c"
	    "\x00\x9e\xc0\x27\x00\x67\xc0\x28\x00\x6b\x00\xa3\x00\x9f\xcc\xa9"
	    "\xcc\xa8\xcc\xaa\xc0\xaf\xc0\xad\xc0\xa3\xc0\x9f\xc0\x5d\xc0\x61"
	    "\xc0\x57\xc0\x53\x00\xa2\xc0\xae\xc0\xac\xc0\xa2\xc0\x9e\xc0\x5c"
	    "\xc0\x60\xc0\x56\xc0\x52\xc0\x24\x00\x6a\xc0\x23\x00\x40\xc0\x0a"
	    "\xc0\x14\x00\x39\x00\x38\xc0\x09\xc0\x13\x00\x33\x00\x32\x00\x9d"
	    "\xc0\xa1\xc0\x9d\xc0\x51\x00\x9c\xc0\xa0\xc0\x9c\xc0\x50\x00\x3d"
	    "\x00\x3c\x00\x35\x00\x2f\x00\xff"
	    /* compression_methods (1) */
	    "\x01\x00"
	    /* extensions, 189 bytes */
	    "\x00\xbd"
	    /* ext server_name (21 bytes): Node.Example.com */
	    "\x00\x00\x00\x15\x00\x13\x00\x00\x10\x4e\x6f\x64\x65\x2e\x45\x78"
	    "\x61\x6d\x70\x6c\x65\x2e\x63\x6f\x6d"
	    /* ext ec_point_formats (4 bytes) */
	    "\x00\x0b\x00\x04\x03\x00\x01\x02"
	    /* ext supported_groups (22 bytes) */
	    "\x00\x0a\x00\x16\x00\x14\x00\x1d\x00\x17\x00\x1e\x00\x19\x00\x18"
	    "\x01\x00\x01\x01\x01\x02\x01\x03\x01\x04"
	    /* ext session_ticket (0 bytes) */
	    "\x00\x23\x00\x00"
	    /* ext ALPN (11 bytes): http/1.1 */
	    "\x00\x10\x00\x0b\x00\x09\x08\x68\x74\x74\x70\x2f\x31\x2e\x31"
	    /* ext encrypt_then_mac (0 bytes) */
	    "\x00\x16\x00\x00"
	    /* ext extended_master_secret (0 bytes) */
	    "\x00\x17\x00\x00"
	    /* ext signature_algorithms (42 bytes) */
	    "\x00\x0d\x00\x2a\x00\x28\x04\x03\x05\x03\x06\x03\x08\x07\x08\x08"
	    "\x08\x09\x08\x0a\x08\x0b\x08\x04\x08\x05\x08\x06\x04\x01\x05\x01"
	    "\x06\x01\x03\x03\x03\x01\x03\x02\x04\x02\x05\x02\x06\x02"
	    /* ext supported_versions (5 bytes) */
	    "\x00\x2b\x00\x05\x04\x03\x04\x03\x03"
	    /* ext psk_key_exchange_modes (2 bytes) */
	    "\x00\x2d\x00\x02\x01\x01"
	    /* ext key_share (38 bytes) */
	    "\x00\x33\x00\x26\x00\x24\x00\x1d\x00\x20\xfa\xc4\xcb\xb6\x06\x14"
	    "\x87\xae\x54\xd7\x0e\x16\xd3\xf6\xcc\x96\x65\xb3\xe8\x6b\x73\x15"
	    "\xdc\x6b\xc0\xfa\xaf\xee\x32\x52\xc5\x78";

/* Python 3.11 ssl: ALPN h2, padded to 512 bytes */
static const uint8_t hello_python_ssl_0[] =
	    /* record: handshake, version 0301, length 512 */
	    "\x16\x03\x01\x02\x00"
	    /* handshake: ClientHello, length 508 */
	    "\x01\x00\x01\xfc"
	    /* legacy_version 0303, random */
	    "\x03\x03\x7c\xa0\xb7\x30\x99\x9c\xa8\xb0\x2e\xff\x7c\xcf\x28\xba"
	    "\xdb\x46\x68\xb6\x36\x96\x09\xaf\x3a\x5d\x5d\xde\x52\x27\xbd\x9e"
	    "\x76\xe5"
	    /* session_id (32 bytes) */
	    "\x20\xec\x41\x2a\x89\x28\xcb\x25\xbd\xb5\x01\xcb\xb7\xd8\x59\xf5"
	    "\x64\x1a\x8c\x42\xef\x3c\xf2\x93\xf0\x4c\xbe\x1b\x50\xc3\x8f\x1a"
	    "\x7a"
	    /* cipher_suites (18) */
	    "\x00\x24\x13\x02\x13\x03\x13\x01\xc0\x2c\xc0\x30\xc0\x2b\xc0\x2f"
	    "\xcc\xa9\xcc\xa8\xc0\x24\xc0\x28\xc0\x23\xc0\x27\x00\x9f\x00\x9e"
	    "\x00\x6b\x00\x67\x00\xff"
	    /* compression_methods (1) */
	    "\x01\x00"
	    /* extensions, 399 bytes */
	    "\x01\x8f"
	    /* ext server_name (19 bytes): py.example.com */
	    "\x00\x00\x00\x13\x00\x11\x00\x00\x0e\x70\x79\x2e\x65\x78\x61\x6d"
	    "\x70\x6c\x65\x2e\x63\x6f\x6d"
	    /* ext ec_point_formats (4 bytes) */
	    "\x00\x0b\x00\x04\x03\x00\x01\x02"
	    /* ext supported_groups (22 bytes) */
	    "\x00\x0a\x00\x16\x00\x14\x00\x1d\x00\x17\x00\x1e\x00\x19\x00\x18"
	    "\x01\x00\x01\x01\x01\x02\x01\x03\x01\x04"
	    /* ext session_ticket (0 bytes) */
	    "\x00\x23\x00\x00"
	    /* ext ALPN (5 bytes): h2 */
	    "\x00\x10\x00\x05\x00\x03\x02\x68\x32"
	    /* ext encrypt_then_mac (0 bytes) */
	    "\x00\x16\x00\x00"
	    /* ext extended_master_secret (0 bytes) */
	    "\x00\x17\x00\x00"
	    /* ext signature_algorithms (42 bytes) */
	    "\x00\x0d\x00\x2a\x00\x28\x04\x03\x05\x03\x06\x03\x08\x07\x08\x08"
	    "\x08\x09\x08\x0a\x08\x0b\x08\x04\x08\x05\x08\x06\x04\x01\x05\x01"
	    "\x06\x01\x03\x03\x03\x01\x03\x02\x04\x02\x05\x02\x06\x02"
	    /* ext supported_versions (5 bytes) */
	    "\x00\x2b\x00\x05\x04\x03\x04\x03\x03"
	    /* ext psk_key_exchange_modes (2 bytes) */
	    "\x00\x2d\x00\x02\x01\x01"
	    /* ext key_share (38 bytes) */
	    "\x00\x33\x00\x26\x00\x24\x00\x1d\x00\x20\xad\xe1\x65\xb6\x44\x29"
	    "\x03\xc5\x0d\x91\x10\xa3\x21\x9c\x79\xc6\xdd\xb9\xc6\x80\x75\x70"
	    "\xa3\x2b\xd6\xf4\x82\x35\x24\x2b\x78\x03"
	    /* ext padding (214 bytes) */
	    "\x00\x15\x00\xd6\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00";

/* openssl s_client -max_send_frag 512: one hello, two records */
static const uint8_t hello_s_client_frag512_0[] =
	    /* record: handshake, version 0301, length 512 */
	    "\x16\x03\x01\x02\x00"
	    /* handshake: ClientHello, length 928 */
	    "\x01\x00\x03\xa0"
	    /* legacy_version 0303, random */
	    "\x03\x03\xf3\xfa\x29\xb0\xb4\x1b\xcf\xd1\x98\x1d\xa0\x57\x8c\x1e"
	    "\xbb\x32\xad\x4a\x29\x18\xc0\xff\xfd\x6d\xeb\xdb\x5b\x51\x65\x90"
	    "\x29\x3a"
	    /* session_id (32 bytes) */
	    "\x20\x56\x49\x7e\xfb\xe2\xbe\x36\x3e\x4a\x63\xa8\xe2\x10\x1c\xde"
	    "\x2d\x4e\x5f\x0d\x3e\x85\xd2\x23\xfb\xf1\xb6\x9c\xde\x93\x52\x65"
	    "\xd6"
	    /* cipher_suites (31) */
	    "\x00\x3e\x13\x02\x13\x03\x13\x01\xc0\x2c\xc0\x30\x00\x9f\xcc\xa9"
	    "\xcc\xa8\xcc\xaa\xc0\x2b\xc0\x2f\x00\x9e\xc0\x24\xc0\x28\x00\x6b"
	    "\xc0\x23\xc0\x27\x00\x67\xc0\x0a\xc0\x14\x00\x39\xc0\x09\xc0\x13"
	    "\x00\x33\x00\x9d\x00\x9c\x00\x3d\x00\x3c\x00\x35\x00\x2f\x00\xff"
	    /* compression_methods (1) */
	    "\x01\x00"
	    /* extensions, 793 bytes */
	    "\x03\x19"
	    /* ext server_name (21 bytes): frag.example.com */
	    "\x00\x00\x00\x15\x00\x13\x00\x00\x10\x66\x72\x61\x67\x2e\x65\x78"
	    "\x61\x6d\x70\x6c\x65\x2e\x63\x6f\x6d"
	    /* ext ec_point_formats (4 bytes) */
	    "\x00\x0b\x00\x04\x03\x00\x01\x02"
	    /* ext supported_groups (22 bytes) */
	    "\x00\x0a\x00\x16\x00\x14\x00\x1d\x00\x17\x00\x1e\x00\x19\x00\x18"
	    "\x01\x00\x01\x01\x01\x02\x01\x03\x01\x04"
	    /* ext session_ticket (0 bytes) */
	    "\x00\x23\x00\x00"
	    /* ext ALPN (611 bytes): proto-00-xxxxxxxxxxxxxxxxxxxxxxxxx ... */
	    "\x00\x10\x02\x63\x02\x61\x31\x70\x72\x6f\x74\x6f\x2d\x30\x30\x2d"
	    "\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78"
	    "\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78"
	    "\x78\x78\x78\x78\x78\x78\x78\x78\x31\x70\x72\x6f\x74\x6f\x2d\x30"
	    "\x31\x2d\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78"
	    "\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78"
	    "\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x31\x70\x72\x6f\x74\x6f"
	    "\x2d\x30\x32\x2d\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78"
	    "\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78"
	    "\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x31\x70\x72\x6f"
	    "\x74\x6f\x2d\x30\x33\x2d\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78"
	    "\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78"
	    "\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x31\x70"
	    "\x72\x6f\x74\x6f\x2d\x30\x34\x2d\x78\x78\x78\x78\x78\x78\x78\x78"
	    "\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78"
	    "\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78"
	    "\x31\x70\x72\x6f\x74\x6f\x2d\x30\x35\x2d\x78\x78\x78\x78\x78\x78"
	    "\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78"
	    "\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78"
	    "\x78\x78\x31\x70\x72\x6f"
	    /* record: handshake, version 0301, length 420 */
	    "\x16\x03\x01\x01\xa4"
	    /* (continued) */
	    "\x74\x6f\x2d\x30\x36\x2d\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78"
	    "\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78"
	    "\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x31\x70"
	    "\x72\x6f\x74\x6f\x2d\x30\x37\x2d\x78\x78\x78\x78\x78\x78\x78\x78"
	    "\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78"
	    "\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78"
	    "\x31\x70\x72\x6f\x74\x6f\x2d\x30\x38\x2d\x78\x78\x78\x78\x78\x78"
	    "\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78"
	    "\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78"
	    "\x78\x78\x31\x70\x72\x6f\x74\x6f\x2d\x30\x39\x2d\x78\x78\x78\x78"
	    "\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78"
	    "\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78"
	    "\x78\x78\x78\x78\x31\x70\x72\x6f\x74\x6f\x2d\x31\x30\x2d\x78\x78"
	    "\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78"
	    "\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78"
	    "\x78\x78\x78\x78\x78\x78\x31\x70\x72\x6f\x74\x6f\x2d\x31\x31\x2d"
	    "\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78"
	    "\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78\x78"
	    "\x78\x78\x78\x78\x78\x78\x78\x78\x08\x68\x74\x74\x70\x2f\x31\x2e"
	    "\x31"
	    /* ext encrypt_then_mac (0 bytes) */
	    "\x00\x16\x00\x00"
	    /* ext extended_master_secret (0 bytes) */
	    "\x00\x17\x00\x00"
	    /* ext signature_algorithms (42 bytes) */
	    "\x00\x0d\x00\x2a\x00\x28\x04\x03\x05\x03\x06\x03\x08\x07\x08\x08"
	    "\x08\x09\x08\x0a\x08\x0b\x08\x04\x08\x05\x08\x06\x04\x01\x05\x01"
	    "\x06\x01\x03\x03\x03\x01\x03\x02\x04\x02\x05\x02\x06\x02"
	    /* ext supported_versions (9 bytes) */
	    "\x00\x2b\x00\x09\x08\x03\x04\x03\x03\x03\x02\x03\x01"
	    /* ext psk_key_exchange_modes (2 bytes) */
	    "\x00\x2d\x00\x02\x01\x01"
	    /* ext key_share (38 bytes) */
	    "\x00\x33\x00\x26\x00\x24\x00\x1d\x00\x20\x8e\x72\xc6\x76\xdd\x78"
	    "\x1b\x64\xf0\xaa\x45\xae\xba\x6b\x9e\x2e\x85\x03\x93\x98\x5a\xef"
	    "\x5f\xa4\xb2\x42\xb5\xed\xaa\x86\x6d\x62";

/* openssl s_client -noservername: valid, no server_name */
static const uint8_t hello_s_client_nosni_0[] =
	    /* record: handshake, version 0301, length 292 */
	    "\x16\x03\x01\x01\x24"
	    /* handshake: ClientHello, length 288 */
	    "\x01\x00\x01\x20"
	    /* legacy_version 0303, random */
	    "\x03\x03\xfc\xa5\x14\x70\x0c\x65\xd4\x3d\xb8\xee\x2b\x77\xd4\xe2"
	    "\x20\x06\x3a\xc9\x6f\x6e\x17\xa9\xa0\x9f\x55\x3c\x49\x30\x94\x7e"
	    "\x20\x0d"
	    /* session_id (32 bytes) */
	    "\x20\x64\xa3\x14\x56\x34\xed\xc8\xa7\x91\xdc\xc6\x07\xa3\x8f\x3e"
	    "\xf1\x64\xab\x88\xda\xbb\x5b\x9f\xfe\xf4\x0f\xf5\x02\xc8\x4e\x6b"
	    "\x49"
	    /* cipher_suites (31) */
	    "\x00\x3e\x13\x02\x13\x03\x13\x01\xc0\x2c\xc0\x30\x00\x9f\xcc\xa9"
	    "\xcc\xa8\xcc\xaa\xc0\x2b\xc0\x2f\x00\x9e\xc0\x24\xc0\x28\x00\x6b"
	    "\xc0\x23\xc0\x27\x00\x67\xc0\x0a\xc0\x14\x00\x39\xc0\x09\xc0\x13"
	    "\x00\x33\x00\x9d\x00\x9c\x00\x3d\x00\x3c\x00\x35\x00\x2f\x00\xff"
	    /* compression_methods (1) */
	    "\x01\x00"
	    /* extensions, 153 bytes */
	    "\x00\x99"
	    /* ext ec_point_formats (4 bytes) */
	    "\x00\x0b\x00\x04\x03\x00\x01\x02"
	    /* ext supported_groups (22 bytes) */
	    "\x00\x0a\x00\x16\x00\x14\x00\x1d\x00\x17\x00\x1e\x00\x19\x00\x18"
	    "\x01\x00\x01\x01\x01\x02\x01\x03\x01\x04"
	    /* ext session_ticket (0 bytes) */
	    "\x00\x23\x00\x00"
	    /* ext encrypt_then_mac (0 bytes) */
	    "\x00\x16\x00\x00"
	    /* ext extended_master_secret (0 bytes) */
	    "\x00\x17\x00\x00"
	    /* ext signature_algorithms (42 bytes) */
	    "\x00\x0d\x00\x2a\x00\x28\x04\x03\x05\x03\x06\x03\x08\x07\x08\x08"
	    "\x08\x09\x08\x0a\x08\x0b\x08\x04\x08\x05\x08\x06\x04\x01\x05\x01"
	    "\x06\x01\x03\x03\x03\x01\x03\x02\x04\x02\x05\x02\x06\x02"
	    /* ext supported_versions (9 bytes) */
	    "\x00\x2b\x00\x09\x08\x03\x04\x03\x03\x03\x02\x03\x01"
	    /* ext psk_key_exchange_modes (2 bytes) */
	    "\x00\x2d\x00\x02\x01\x01"
	    /* ext key_share (38 bytes) */
	    "\x00\x33\x00\x26\x00\x24\x00\x1d\x00\x20\x3a\xce\xda\x5e\x92\x5f"
	    "\xbb\x0c\x43\xda\x1c\x38\x05\x4a\x39\x84\x8e\x55\x3f\x76\x05\x96"
	    "\x08\x7a\xbe\x98\x68\x71\x61\x57\x48\x3d";

/* openssl s_client -servername -alpn h2,http/1.1 */
static const uint8_t hello_s_client_sni_alpn_tls13_0[] =
	    /* record: handshake, version 0301, length 330 */
	    "\x16\x03\x01\x01\x4a"
	    /* handshake: ClientHello, length 326 */
	    "\x01\x00\x01\x46"
	    /* legacy_version 0303, random */
	    "\x03\x03\x1a\x8b\x38\x38\x11\x8c\xd0\x4e\x45\x08\x98\xcd\x3a\xda"
	    "\x23\xbd\x47\x3c\xa4\x5e\x54\xd0\x18\x73\xf4\x02\x64\x91\x91\x2c"
	    "\x8b\x73"
	    /* session_id (32 bytes) */
	    "\x20\x75\xf7\xe5\xf5\x13\x18\x79\xe4\x0d\xd1\x2f\x8f\xb4\x53\xf5"
	    "\x46\xfa\x11\x85\xc5\x87\x3f\xcc\x91\x10\x2b\xaf\x9a\x15\xe7\xde"
	    "\x28"
	    /* cipher_suites (31) */
	    "\x00\x3e\x13\x02\x13\x03\x13\x01\xc0\x2c\xc0\x30\x00\x9f\xcc\xa9"
	    "\xcc\xa8\xcc\xaa\xc0\x2b\xc0\x2f\x00\x9e\xc0\x24\xc0\x28\x00\x6b"
	    "\xc0\x23\xc0\x27\x00\x67\xc0\x0a\xc0\x14\x00\x39\xc0\x09\xc0\x13"
	    "\x00\x33\x00\x9d\x00\x9c\x00\x3d\x00\x3c\x00\x35\x00\x2f\x00\xff"
	    /* compression_methods (1) */
	    "\x01\x00"
	    /* extensions, 191 bytes */
	    "\x00\xbf"
	    /* ext server_name (16 bytes): example.com */
	    "\x00\x00\x00\x10\x00\x0e\x00\x00\x0b\x65\x78\x61\x6d\x70\x6c\x65"
	    "\x2e\x63\x6f\x6d"
	    /* ext ec_point_formats (4 bytes) */
	    "\x00\x0b\x00\x04\x03\x00\x01\x02"
	    /* ext supported_groups (22 bytes) */
	    "\x00\x0a\x00\x16\x00\x14\x00\x1d\x00\x17\x00\x1e\x00\x19\x00\x18"
	    "\x01\x00\x01\x01\x01\x02\x01\x03\x01\x04"
	    /* ext session_ticket (0 bytes) */
	    "\x00\x23\x00\x00"
	    /* ext ALPN (14 bytes): h2, http/1.1 */
	    "\x00\x10\x00\x0e\x00\x0c\x02\x68\x32\x08\x68\x74\x74\x70\x2f\x31"
	    "\x2e\x31"
	    /* ext encrypt_then_mac (0 bytes) */
	    "\x00\x16\x00\x00"
	    /* ext extended_master_secret (0 bytes) */
	    "\x00\x17\x00\x00"
	    /* ext signature_algorithms (42 bytes) */
	    "\x00\x0d\x00\x2a\x00\x28\x04\x03\x05\x03\x06\x03\x08\x07\x08\x08"
	    "\x08\x09\x08\x0a\x08\x0b\x08\x04\x08\x05\x08\x06\x04\x01\x05\x01"
	    "\x06\x01\x03\x03\x03\x01\x03\x02\x04\x02\x05\x02\x06\x02"
	    /* ext supported_versions (9 bytes) */
	    "\x00\x2b\x00\x09\x08\x03\x04\x03\x03\x03\x02\x03\x01"
	    /* ext psk_key_exchange_modes (2 bytes) */
	    "\x00\x2d\x00\x02\x01\x01"
	    /* ext key_share (38 bytes) */
	    "\x00\x33\x00\x26\x00\x24\x00\x1d\x00\x20\xe3\xed\x96\xd5\x4a\x9d"
	    "\x58\x51\x49\x06\x12\xf6\x3a\xd2\x15\x5c\x87\x5e\xb9\xbc\xe8\x35"
	    "\x80\xfd\xe4\xce\x61\x87\x78\xfa\x90\x0b";

/* openssl s_client -tls1_2 -servername api.example.com */
static const uint8_t hello_s_client_tls12_sni_0[] =
	    /* record: handshake, version 0301, length 207 */
	    "\x16\x03\x01\x00\xcf"
	    /* handshake: ClientHello, length 203 */
	    "\x01\x00\x00\xcb"
	    /* legacy_version 0303, random */
	    "\x03\x03\xb1\xc8\x6c\x08\x63\x52\xb7\x9b\xff\xc6\x66\x04\xad\x6b"
	    "\xf2\x35\xbd\x38\x38\x7a\xa0\xc1\x52\x2c\x58\x3f\xde\xa8\xf3\x28"
	    "\x11\x58"
	    /* session_id (0 bytes) */
	    "\x00"
	    /* cipher_suites (28) */
	    "\x00\x38\xc0\x2c\xc0\x30\x00\x9f\xcc\xa9\xcc\xa8\xcc\xaa\xc0\x2b"
	    "\xc0\x2f\x00\x9e\xc0\x24\xc0\x28\x00\x6b\xc0\x23\xc0\x27\x00\x67"
	    "\xc0\x0a\xc0\x14\x00\x39\xc0\x09\xc0\x13\x00\x33\x00\x9d\x00\x9c"
	    "\x00\x3d\x00\x3c\x00\x35\x00\x2f\x00\xff"
	    /* compression_methods (1) */
	    "\x01\x00"
	    /* extensions, 106 bytes */
	    "\x00\x6a"
	    /* ext server_name (20 bytes): api.example.com */
	    "\x00\x00\x00\x14\x00\x12\x00\x00\x0f\x61\x70\x69\x2e\x65\x78\x61"
	    "\x6d\x70\x6c\x65\x2e\x63\x6f\x6d"
	    /* ext ec_point_formats (4 bytes) */
	    "\x00\x0b\x00\x04\x03\x00\x01\x02"
	    /* ext supported_groups (12 bytes) */
	    "\x00\x0a\x00\x0c\x00\x0a\x00\x1d\x00\x17\x00\x1e\x00\x19\x00\x18"
	    /* ext session_ticket (0 bytes) */
	    "\x00\x23\x00\x00"
	    /* ext encrypt_then_mac (0 bytes) */
	    "\x00\x16\x00\x00"
	    /* ext extended_master_secret (0 bytes) */
	    "\x00\x17\x00\x00"
	    /* ext signature_algorithms (42 bytes) */
	    "\x00\x0d\x00\x2a\x00\x28\x04\x03\x05\x03\x06\x03\x08\x07\x08\x08"
	    "\x08\x09\x08\x0a\x08\x0b\x08\x04\x08\x05\x08\x06\x04\x01\x05\x01"
	    "\x06\x01\x03\x03\x03\x01\x03\x02\x04\x02\x05\x02\x06\x02";


/* ------------------------------------------------------------------ */
/* Hand-made vectors                                                    */
/* ------------------------------------------------------------------ */

/* legacy_version 0303, random (32 x 'Z') */
#define HEAD		"\x03\x03" "ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ"
/* empty session_id; cipher_suites: 1301; compression_methods: null */
#define REST		"\x00" "\x00\x02\x13\x01" "\x01\x00"
#define FIXED		HEAD REST

/* server_name: example.com */
#define SNI_EXAMPLE	"\x00\x00\x00\x10\x00\x0e\x00\x00\x0b" "example.com"
/* ALPN: h2, http/1.1 */
#define ALPN_H2_H1	"\x00\x10\x00\x0e\x00\x0c" "\x02h2" "\x08http/1.1"
/* supported_versions: 0304, 0303 */
#define SV_13_12	"\x00\x2b\x00\x05\x04\x03\x04\x03\x03"
/* supported_groups: x25519 */
#define GROUPS		"\x00\x0a\x00\x04\x00\x02\x00\x1d"
/* pre_shared_key: an opaque 4 bytes, enough for the parser */
#define PSK		"\x00\x29\x00\x04\x00\x00\x00\x00"

/* A body vector: FIXED, then an extensions block of length l. */
#define X(l)		FIXED l

/* A ClientHello with no extensions, framed: record, handshake, body. */
#define MIN_RECORD	"\x16\x03\x01\x00\x2d"
#define MIN_HS		"\x01\x00\x00\x29"
#define MIN_HELLO	MIN_RECORD MIN_HS FIXED

#define OK_SNI(s)	.rc = ACCEPT, .sni = (s)
#define BAD(e)		.rc = TLS_INVALID, .err = (e)
#define RAW_BAD(e)	.raw = true, .rc = TLS_INVALID, .err = (e)

static const struct hello_vec hello_vecs[] = {
	/* Accepted. */
	{ B(FIXED), .rc = ACCEPT },			/* no extensions */
	{ B(X("\x00\x00")), .rc = ACCEPT },		/* empty block */
	{ B(X("\x00\x14" SNI_EXAMPLE)), OK_SNI("example.com") },
	{ B(X("\x00\x3f" GROUPS SNI_EXAMPLE ALPN_H2_H1 SV_13_12 PSK)),
	    OK_SNI("example.com"), .alpn = "h2,http/1.1", .tls13 = true },
	/* TLS 1.2 only, and a GREASE version next to TLS 1.3. */
	{ B(X("\x00\x07" "\x00\x2b\x00\x03\x02\x03\x03")), .rc = ACCEPT },
	{ B(X("\x00\x09" "\x00\x2b\x00\x05\x04\x0a\x0a\x03\x04")),
	    .rc = ACCEPT, .tls13 = true },
	/* GREASE extension types (empty and not) are just extensions. */
	{ B(X("\x00\x1d" "\x1a\x1a\x00\x00" SNI_EXAMPLE
	    "\xfa\xfa\x00\x01\x00")), OK_SNI("example.com") },
	/* Case and '_' are kept; policy_host_normalise() decides. */
	{ B(X("\x00\x1d" "\x00\x00\x00\x19\x00\x17\x00\x00\x14"
	    "Api_Host.Example.COM")), OK_SNI("Api_Host.Example.COM") },
	{ B(X("\x00\x15" "\x00\x00\x00\x11\x00\x0f\x00\x00\x0c"
	    "example.com.")), OK_SNI("example.com."), .dot = true },
	{ B(X("\x00\x0a" "\x00\x00\x00\x06\x00\x04\x00\x00\x01" "x")),
	    OK_SNI("x") },
	/* IP literals: RFC 6066 forbids them; moat reports them. */
	{ B(X("\x00\x12" "\x00\x00\x00\x0e\x00\x0c\x00\x00\x09" "192.0.2.1")),
	    OK_SNI("192.0.2.1"), .ip = true },
	{ B(X("\x00\x11" "\x00\x00\x00\x0d\x00\x0b\x00\x00\x08" "1.2.3.4.")),
	    OK_SNI("1.2.3.4."), .ip = true, .dot = true },
	{ B(X("\x00\x0f" "\x00\x00\x00\x0b\x00\x09\x00\x00\x06" "0x7f.1")),
	    OK_SNI("0x7f.1"), .ip = true },
	{ B(X("\x00\x15" "\x00\x00\x00\x11\x00\x0f\x00\x00\x0c"
	    "example.0x1F")), OK_SNI("example.0x1F"), .ip = true },
	{ B(X("\x00\x14" "\x00\x00\x00\x10\x00\x0e\x00\x00\x0b"
	    "example.123")), OK_SNI("example.123"), .ip = true },
	{ B(X("\x00\x14" "\x00\x00\x00\x10\x00\x0e\x00\x00\x0b"
	    "123.example")), OK_SNI("123.example") },
	{ B(X("\x00\x0f" "\x00\x00\x00\x0b\x00\x09\x00\x00\x06"
	    "a.0X1f")), OK_SNI("a.0X1f"), .ip = true },
	{ B(X("\x00\x0f" "\x00\x00\x00\x0b\x00\x09\x00\x00\x06"
	    "a.0xzz")), OK_SNI("a.0xzz") },
	/* An empty last label: not a number, whatever came before. */
	{ B(X("\x00\x14" "\x00\x00\x00\x10\x00\x0e\x00\x00\x0b"
	    "192.0.2.1..")), OK_SNI("192.0.2.1.."), .dot = true },
	{ B(X("\x00\x14" "\x00\x00\x00\x10\x00\x0e\x00\x00\x0b"
	    "2001:db8::1")), OK_SNI("2001:db8::1"), .ip = true },
	{ B(X("\x00\x19" "\x00\x00\x00\x15\x00\x13\x00\x00\x10"
	    "::ffff:192.0.2.1")), OK_SNI("::ffff:192.0.2.1"), .ip = true },
	/* encrypted_client_hello: the SNI is the outer, public name. */
	{ B(X("\x00\x19" SNI_EXAMPLE "\xfe\x0d\x00\x01\x00")),
	    OK_SNI("example.com"), .ech = true },
	/* pre_shared_key last is fine. */
	{ B(X("\x00\x1c" SNI_EXAMPLE PSK)), OK_SNI("example.com") },
	/* A session_id of 32 bytes and several compression methods. */
	{ B(HEAD "\x20" "ssssssssssssssssssssssssssssssss"
	    "\x00\x04\x13\x01\x13\x02" "\x02\x01\x00"), .rc = ACCEPT },

	/* Fixed fields. */
	{ B("\x03\x00" "ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ" REST),
	    BAD("SSLv3 ClientHello not supported") },
	{ B("\x03\x04" "ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ" REST),
	    BAD("bad ClientHello version") },
	{ B("\x02\x00" "ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ" REST),
	    BAD("bad ClientHello version") },
	{ B("\xfe\xfd" "ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ" REST),
	    BAD("bad ClientHello version") },	/* DTLS 1.2 */
	{ B(HEAD "\x21" "sssssssssssssssssssssssssssssssss"
	    "\x00\x02\x13\x01" "\x01\x00"),
	    BAD("session_id longer than 32 bytes") },
	{ B(HEAD "\x06" "ssss" "\x00\x02"),
	    BAD("session_id runs past the ClientHello") },
	{ B(HEAD "\x00" "\x00\x00" "\x01\x00" "\x00\x00"),
	    BAD("no cipher suites") },
	{ B(HEAD "\x00" "\x00\x03\x13\x01\x13" "\x01\x00"),
	    BAD("odd cipher_suites length") },
	{ B(HEAD "\x00" "\x00\x06\x13\x01\x13\x02" "\x01\x00"),
	    BAD("cipher_suites run past the ClientHello") },
	{ B(HEAD "\x00" "\x00\x02\x13\x01" "\x00" "\x00\x00"),
	    BAD("no compression methods") },
	{ B(HEAD "\x00" "\x00\x02\x13\x01" "\x01\x01"),
	    BAD("null compression not offered") },
	{ B(HEAD "\x00" "\x00\x02\x13\x01" "\x03\x00"),
	    BAD("compression_methods run past the ClientHello") },

	/* The extensions block and extension headers. */
	{ B(X("\x00")), BAD("extensions length truncated") },
	{ B(X("\x00\x15" SNI_EXAMPLE)),
	    BAD("extensions length does not match the ClientHello") },
	{ B(X("\x00\x13" SNI_EXAMPLE)),
	    BAD("extensions length does not match the ClientHello") },
	{ B(X("\x00\x03" "\x00\x0a\x00")), BAD("extension header truncated") },
	{ B(X("\x00\x14" "\x00\x00\x00\x11\x00\x0e\x00\x00\x0b"
	    "example.com")), BAD("extension runs past the ClientHello") },
	{ B(X("\x00\x10" GROUPS GROUPS)), BAD("duplicate extension") },
	{ B(X("\x00\x28" SNI_EXAMPLE SNI_EXAMPLE)),
	    BAD("duplicate extension") },
	{ B(X("\x00\x1c" PSK SNI_EXAMPLE)),
	    BAD("pre_shared_key not the last extension") },

	/* server_name. */
	{ B(X("\x00\x04" "\x00\x00\x00\x00")),
	    BAD("server_name extension truncated") },
	{ B(X("\x00\x05" "\x00\x00\x00\x01\x00")),
	    BAD("server_name extension truncated") },
	{ B(X("\x00\x06" "\x00\x00\x00\x02\x00\x00")),
	    BAD("server_name list empty or truncated") },
	{ B(X("\x00\x14" "\x00\x00\x00\x10\x00\x0f\x00\x00\x0b"
	    "example.com")),
	    BAD("server_name list length does not match its extension") },
	{ B(X("\x00\x14" "\x00\x00\x00\x10\x00\x0d\x00\x00\x0b"
	    "example.com")),
	    BAD("server_name list length does not match its extension") },
	{ B(X("\x00\x14" "\x00\x00\x00\x10\x00\x0e\x01\x00\x0b"
	    "example.com")), BAD("server_name entry is not a host_name") },
	{ B(X("\x00\x0a" "\x00\x00\x00\x06\x00\x04\x00\x00\x00" "x")),
	    BAD("empty server name") },
	{ B(X("\x00\x14" "\x00\x00\x00\x10\x00\x0e\x00\x00\x0c"
	    "example.com")), BAD("server name runs past its list") },
	/* Two host_name entries: which one would the server use? */
	{ B(X("\x00\x21" "\x00\x00\x00\x1d\x00\x1b"
	    "\x00\x00\x0b" "example.com" "\x00\x00\x0a" "evil.local")),
	    BAD("more than one server_name entry") },
	{ B(X("\x00\x15" "\x00\x00\x00\x11\x00\x0f\x00\x00\x0b"
	    "example.com" "\x00")), BAD("more than one server_name entry") },
	{ B(X("\x00\x14" "\x00\x00\x00\x10\x00\x0e\x00\x00\x0b"
	    "exa\0ple.com")), BAD("NUL byte in server name") },
	{ B(X("\x00\x15" "\x00\x00\x00\x11\x00\x0f\x00\x00\x0c"
	    "exa mple.com")), BAD("bad byte in server name") },
	{ B(X("\x00\x13" "\x00\x00\x00\x0f\x00\x0d\x00\x00\x0a"
	    "exa%2e.com")), BAD("bad byte in server name") },
	{ B(X("\x00\x0c" "\x00\x00\x00\x08\x00\x06\x00\x00\x03" "a/b")),
	    BAD("bad byte in server name") },
	{ B(X("\x00\x0c" "\x00\x00\x00\x08\x00\x06\x00\x00\x03" "a@b")),
	    BAD("bad byte in server name") },
	{ B(X("\x00\x16" "\x00\x00\x00\x12\x00\x10\x00\x00\x0d"
	    "*.example.com")), BAD("bad byte in server name") },
	{ B(X("\x00\x16" "\x00\x00\x00\x12\x00\x10\x00\x00\x0d"
	    "caf\xc3\xa9.example")), BAD("bad byte in server name") },
	{ B(X("\x00\x0c" "\x00\x00\x00\x08\x00\x06\x00\x00\x03" "a:b")),
	    BAD("':' in server name that is not an IPv6 address") },
	{ B(X("\x00\x12" "\x00\x00\x00\x0e\x00\x0c\x00\x00\x09"
	    "[::1]:443")), BAD("bad byte in server name") },

	/* ALPN. */
	{ B(X("\x00\x05" "\x00\x10\x00\x01\x00")),
	    BAD("ALPN extension truncated") },
	{ B(X("\x00\x06" "\x00\x10\x00\x02\x00\x00")), BAD("empty ALPN list") },
	{ B(X("\x00\x09" "\x00\x10\x00\x05\x00\x03" "\x00\x02h")),
	    BAD("empty ALPN protocol name") },
	{ B(X("\x00\x09" "\x00\x10\x00\x05\x00\x03" "\x03h2")),
	    BAD("ALPN protocol name runs past its list") },
	{ B(X("\x00\x09" "\x00\x10\x00\x05\x00\x04" "\x02h2")),
	    BAD("ALPN list length does not match its extension") },
	{ B(X("\x00\x13" "\x00\x10\x00\x0e\x00\x0c" "\x02h2" "\x08http/1.1")),
	    BAD("extensions length does not match the ClientHello") },

	/* supported_versions. */
	{ B(X("\x00\x04" "\x00\x2b\x00\x00")),
	    BAD("supported_versions extension truncated") },
	{ B(X("\x00\x05" "\x00\x2b\x00\x01\x00")),
	    BAD("empty supported_versions list") },
	{ B(X("\x00\x08" "\x00\x2b\x00\x04\x03\x03\x04\x03")),
	    BAD("odd supported_versions length") },
	{ B(X("\x00\x07" "\x00\x2b\x00\x03\x04\x03\x04")),
	    BAD("supported_versions length does not match its extension") },

	/* Raw streams: what comes first on a connection. */
	{ B(""), .raw = true, .rc = TLS_NEED_MORE },
	{ B("\x16"), .raw = true, .rc = TLS_NEED_MORE },
	{ B("\x16\x03\x01\x00"), .raw = true, .rc = TLS_NEED_MORE },
	{ B(MIN_HELLO), .raw = true, .rc = 50 },
	{ B("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"), .raw = true,
	    .rc = TLS_NOT_TLS, .err = "not a TLS handshake record" },
	{ B("SSH-2.0-OpenSSH_9.2\r\n"), .raw = true, .rc = TLS_NOT_TLS,
	    .err = "not a TLS handshake record" },
	{ B("\x15\x03\x03\x00\x02\x02\x28"), .raw = true, .rc = TLS_NOT_TLS,
	    .err = "not a TLS handshake record" },	/* an alert */
	{ B("\x00"), .raw = true, .rc = TLS_NOT_TLS,
	    .err = "not a TLS handshake record" },
	/* High bit set, but not an SSLv2 CLIENT-HELLO. */
	{ B("\x80"), .raw = true, .rc = TLS_NEED_MORE },
	{ B("\x80\x2e\x02"), .raw = true, .rc = TLS_NOT_TLS,
	    .err = "not a TLS handshake record" },
	/* Record header. */
	{ B("\x16\x02\x01\x00\x2d"), RAW_BAD("bad record version") },
	{ B("\x16\x03\x00\x00\x2d" MIN_HS FIXED),
	    RAW_BAD("SSLv3 record not supported") },
	{ B("\x16\x03\x05\x00\x2d"), RAW_BAD("bad record version") },
	{ B("\x16\x03\x01\x00\x00"), RAW_BAD("empty handshake record") },
	{ B("\x16\x03\x01\x40\x01"), RAW_BAD("record longer than 2^14 bytes") },
	/* Record version 0x0304 is allowed. */
	{ B("\x16\x03\x04\x00\x2d" MIN_HS FIXED), .raw = true, .rc = 50 },
	/* Handshake header. */
	{ B("\x16\x03\x01\x00\x2d" "\x02"),
	    RAW_BAD("handshake message is not a ClientHello") },
	{ B("\x16\x03\x01\x00\x08" "\x01\x00\x00\x04" "\x03\x03\x00\x00"),
	    RAW_BAD("ClientHello shorter than its fixed fields") },
	/* A length no record sequence could carry within the cap. */
	{ B("\x16\x03\x01\x40\x00" "\x01\x00\x3f\xfd"),
	    RAW_BAD("ClientHello longer than moat accepts") },
	{ B("\x16\x03\x01\x40\x00" "\x01\x00\x3f\xfc"), .raw = true,
	    .rc = TLS_NEED_MORE },
	/* The handshake length lies short: the record holds more. */
	{ B("\x16\x03\x01\x00\x2e" MIN_HS FIXED "\x00"),
	    RAW_BAD("data after ClientHello in its last record") },
	/* ... or long: the rest must come in handshake records. */
	{ B("\x16\x03\x01\x00\x2d" "\x01\x00\x00\x2a" FIXED),
	    .raw = true, .rc = TLS_NEED_MORE },
	{ B("\x16\x03\x01\x00\x2d" "\x01\x00\x00\x2a" FIXED
	    "\x17\x03\x03\x00\x01\x00"),
	    RAW_BAD("record other than handshake inside ClientHello") },
	{ B("\x16\x03\x01\x00\x2d" "\x01\x00\x00\x2a" FIXED
	    "\x16\x03\x00\x00\x01\x00"),
	    RAW_BAD("SSLv3 record not supported") },
	{ B("\x16\x03\x01\x00\x2d" "\x01\x00\x00\x2a" FIXED
	    "\x16\x03\x03\x00\x02\x00\x00"),
	    RAW_BAD("data after ClientHello in its last record") },
	/* One more byte in a second record completes it: a stray byte
	 * after the compression methods. */
	{ B("\x16\x03\x01\x00\x2d" "\x01\x00\x00\x2a" FIXED
	    "\x16\x03\x03\x00\x01\x00"),
	    RAW_BAD("extensions length truncated") },
};

static void
vcheck(bool ok, size_t i, const char *cond, int line)
{
	char	msg[256];

	snprintf(msg, sizeof(msg), "vector %zu: %s", i, cond);
	CU_assertImplementation(ok ? CU_TRUE : CU_FALSE, line, msg, __FILE__,
	    "", CU_FALSE);
}

/* Handshake header and body in one record of version 0x0301. */
static size_t
frame(const uint8_t *body, size_t blen, uint8_t *out)
{
	return frame_split(body, blen, NULL, 0, out);
}

/*
 * The handshake message (header and body) split into records whose
 * payload sizes are frags[0], frags[1], ...; the last size repeats, and
 * the last record takes what is left.  With no sizes, one record.
 */
static size_t
frame_split(const uint8_t *body, size_t blen, const size_t *frags,
    size_t nfrags, uint8_t *out)
{
	static uint8_t	msg[TLS_HELLO_MAX_BYTES + 8];
	size_t		mlen = TLS_HANDSHAKE_HEADER_BYTES + blen;
	size_t		off = 0, o = 0, i = 0, n;

	msg[0] = TLS_HANDSHAKE_CLIENT_HELLO;
	msg[1] = (uint8_t)(blen >> 16);
	msg[2] = (uint8_t)(blen >> 8);
	msg[3] = (uint8_t)blen;
	memcpy(msg + TLS_HANDSHAKE_HEADER_BYTES, body, blen);
	while (off < mlen) {
		n = nfrags == 0 ? mlen - off :
		    frags[i < nfrags ? i : nfrags - 1];
		if (n > mlen - off)
			n = mlen - off;
		i++;
		out[o++] = TLS_CONTENT_HANDSHAKE;
		out[o++] = 0x03;
		out[o++] = 0x01;
		out[o++] = (uint8_t)(n >> 8);
		out[o++] = (uint8_t)n;
		memcpy(out + o, msg + off, n);
		o += n;
		off += n;
	}
	return o;
}

/* The ClientHello body of a framed hello (records known to be good). */
static size_t
body_of(const uint8_t *in, size_t len, uint8_t *out)
{
	static uint8_t	msg[TLS_HELLO_MAX_BYTES];
	size_t		off = 0, m = 0, n;

	while (off + TLS_RECORD_HEADER_BYTES <= len) {
		n = (size_t)in[off + 3] << 8 | in[off + 4];
		memcpy(msg + m, in + off + TLS_RECORD_HEADER_BYTES, n);
		m += n;
		off += TLS_RECORD_HEADER_BYTES + n;
	}
	memcpy(out, msg + TLS_HANDSHAKE_HEADER_BYTES,
	    m - TLS_HANDSHAKE_HEADER_BYTES);
	return m - TLS_HANDSHAKE_HEADER_BYTES;
}

static void
alpn_join(const struct tls_client_hello *h, char *buf, size_t size)
{
	size_t	i, n = 0;

	buf[0] = '\0';
	for (i = 0; i < h->nalpn; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s%.*s",
		    i > 0 ? "," : "", (int)h->alpn[i].len,
		    (const char *)h->alpn[i].name);
}

static void
check_fields(const struct hello_vec *v, size_t i,
    const struct tls_client_hello *h)
{
	char	alpn[4096];

	CHECK(h->has_sni == (v->sni != NULL), i);
	if (v->sni != NULL) {
		CHECK(strcmp(h->sni, v->sni) == 0, i);
		CHECK(h->sni_len == strlen(v->sni), i);
	}
	CHECK(h->has_alpn == (v->alpn != NULL), i);
	if (v->alpn != NULL) {
		alpn_join(h, alpn, sizeof(alpn));
		CHECK(strcmp(alpn, v->alpn) == 0, i);
	}
	CHECK(h->tls13 == v->tls13, i);
	CHECK(h->sni_is_ip == v->ip, i);
	CHECK(h->sni_trailing_dot == v->dot, i);
	CHECK(h->has_ech == v->ech, i);
}

/* Parses in[0..len) and checks it against v; returns the result. */
static int
run_vec(const struct hello_vec *v, size_t i, const uint8_t *in, size_t len,
    struct tls_client_hello *h)
{
	const char	*err = NULL;
	int		 rc;

	rc = tls_parse_client_hello(in, len, h, &err);
	if (v->rc == ACCEPT && !v->raw)
		CHECK(rc > 0 && (size_t)rc == len, i);
	else
		CHECK(rc == v->rc, i);
	if (v->err != NULL)
		CHECK(err != NULL && strcmp(err, v->err) == 0, i);
	if (rc > 0)
		check_fields(v, i, h);
	return rc;
}

static void
test_vectors(void)
{
	static uint8_t		 buf[FRAME_MAX];
	struct tls_client_hello	 h;
	const struct hello_vec	*v;
	size_t			 i, n;

	for (i = 0; i < sizeof(hello_vecs) / sizeof(hello_vecs[0]); i++) {
		v = &hello_vecs[i];
		if (v->raw) {
			run_vec(v, i, v->in, v->len, &h);
			continue;
		}
		n = frame(v->in, v->len, buf);
		run_vec(v, i, buf, n, &h);
	}
}

/*
 * Every body vector split over records of many sizes gives the same
 * verdict, message and fields; nrecords follows the split.
 */
static void
test_fragmented(void)
{
	static const size_t	 splits[][3] = {
		{ 1 }, { 2 }, { 3 }, { 4 }, { 5 }, { 7 }, { 16 }, { 41 },
		{ 100 }, { 2, 1 }, { 3, 60 }, { 4, 1 }, { 1, 2, 3 },
	};
	static uint8_t		 buf[FRAME_MAX];
	struct tls_client_hello	 h;
	const struct hello_vec	*v;
	size_t			 i, s, n, k, msg;
	int			 rc;

	for (i = 0; i < sizeof(hello_vecs) / sizeof(hello_vecs[0]); i++) {
		v = &hello_vecs[i];
		if (v->raw)
			continue;
		msg = TLS_HANDSHAKE_HEADER_BYTES + v->len;
		for (s = 0; s < sizeof(splits) / sizeof(splits[0]); s++) {
			for (k = 0; k < 3 && splits[s][k] != 0; k++)
				;
			n = frame_split(v->in, v->len, splits[s], k, buf);
			rc = run_vec(v, i, buf, n, &h);
			if (rc > 0)
				CHECK(h.nrecords == (n - msg) /
				    TLS_RECORD_HEADER_BYTES, i);
		}
	}
}

/*
 * Prefixes of in[0..len): TLS_NEED_MORE until some length, then one
 * verdict, the same for every longer prefix; a byte count is reached
 * exactly at that length.  Each prefix is copied to the very end of a
 * static buffer, so that AddressSanitizer sees any read past it.
 */
static void
check_prefixes(const uint8_t *in, size_t len, size_t i)
{
	static uint8_t		 copy[FRAME_MAX];
	struct tls_client_hello	 h;
	const char		*err, *first_err = NULL;
	size_t			 k;
	int			 rc, first = TLS_NEED_MORE;

	for (k = 0; k <= len; k++) {
		uint8_t *p = copy + sizeof(copy) - k;

		memcpy(p, in, k);
		err = NULL;
		rc = tls_parse_client_hello(p, k, &h, &err);
		if (first == TLS_NEED_MORE) {
			if (rc > 0)
				CHECK((size_t)rc == k, i);
			first = rc;
			first_err = err;
			continue;
		}
		CHECK(rc == first && err == first_err, i);
	}
}

static void
test_prefixes(void)
{
	static uint8_t		 buf[FRAME_MAX];
	static const size_t	 seven[] = { 7 };
	const struct hello_vec	*v;
	size_t			 i, n;

	for (i = 0; i < sizeof(hello_vecs) / sizeof(hello_vecs[0]); i++) {
		v = &hello_vecs[i];
		if (v->raw) {
			check_prefixes(v->in, v->len, i);
			continue;
		}
		n = frame(v->in, v->len, buf);
		check_prefixes(buf, n, i);
		n = frame_split(v->in, v->len, seven, 1, buf);
		check_prefixes(buf, n, i);
	}
}

/* An SSLv2-compatible CLIENT-HELLO, as old clients sent it. */
static void
test_sslv2(void)
{
	static const uint8_t	 v2[] =
	    /* 2-byte header, length 46; CLIENT-HELLO; version 0301 */
	    "\x80\x2e" "\x01" "\x03\x01"
	    /* cipher_spec length 21, session_id length 0, challenge 16 */
	    "\x00\x15" "\x00\x00" "\x00\x10"
	    /* cipher specs */
	    "\x00\x00\x39\x00\x00\x38\x00\x00\x35\x00\x00\x16\x00\x00\x13"
	    "\x00\x00\x0a\x07\x00\xc0"
	    /* challenge */
	    "cccccccccccccccc";
	struct tls_client_hello	 h;
	const char		*err = NULL;

	CU_ASSERT_EQUAL(tls_parse_client_hello(v2, 1, &h, &err),
	    TLS_NEED_MORE);
	CU_ASSERT_EQUAL(tls_parse_client_hello(v2, 2, &h, &err),
	    TLS_NEED_MORE);
	CU_ASSERT_EQUAL(tls_parse_client_hello(v2, 3, &h, &err),
	    TLS_INVALID);
	CU_ASSERT_PTR_EQUAL(err, tls_err_sslv2);
	err = NULL;
	CU_ASSERT_EQUAL(tls_parse_client_hello(v2, sizeof(v2) - 1, &h, &err),
	    TLS_INVALID);
	CU_ASSERT_PTR_EQUAL(err, tls_err_sslv2);
	/* Other refusals are told apart by the pointer. */
	CU_ASSERT_EQUAL(tls_parse_client_hello(B("\x16\x03\x00\x00\x01"), &h,
	    &err), TLS_INVALID);
	CU_ASSERT_PTR_NOT_EQUAL(err, tls_err_sslv2);
}

/*
 * Fills body with a valid ClientHello body of exactly blen bytes: a
 * server_name of sni_len bytes, then a padding extension (21) taking the
 * rest.  blen must leave room for both.
 */
static size_t
big_body(uint8_t *body, size_t blen, size_t sni_len)
{
	size_t	o = 0, pad;

	memcpy(body, FIXED, sizeof(FIXED) - 1);
	o = sizeof(FIXED) - 1;
	/* extensions length: all that follows it */
	body[o] = (uint8_t)((blen - o - 2) >> 8);
	body[o + 1] = (uint8_t)(blen - o - 2);
	o += 2;
	body[o++] = 0;
	body[o++] = 0;
	body[o++] = (uint8_t)((sni_len + 5) >> 8);
	body[o++] = (uint8_t)(sni_len + 5);
	body[o++] = (uint8_t)((sni_len + 3) >> 8);
	body[o++] = (uint8_t)(sni_len + 3);
	body[o++] = 0;
	body[o++] = (uint8_t)(sni_len >> 8);
	body[o++] = (uint8_t)sni_len;
	memset(body + o, 'n', sni_len);
	o += sni_len;
	pad = blen - o - 4;
	body[o++] = 0;
	body[o++] = 21;
	body[o++] = (uint8_t)(pad >> 8);
	body[o++] = (uint8_t)pad;
	memset(body + o, 0, pad);
	return o + pad;
}

static void
test_limits(void)
{
	static uint8_t		 body[TLS_HELLO_MAX_BYTES];
	static uint8_t		 buf[FRAME_MAX];
	static const size_t	 half[] = { 8192 };
	struct tls_client_hello	 h;
	const char		*err = NULL;
	size_t			 blen, n;

	/* The largest hello: one full record, 16389 bytes. */
	blen = TLS_RECORD_MAX_BYTES - TLS_HANDSHAKE_HEADER_BYTES;
	CU_ASSERT_EQUAL_FATAL(big_body(body, blen, TLS_SNI_MAX_BYTES), blen);
	n = frame(body, blen, buf);
	CU_ASSERT_EQUAL(n, TLS_HELLO_MAX_BYTES);
	CU_ASSERT_EQUAL(tls_parse_client_hello(buf, n, &h, &err),
	    TLS_HELLO_MAX_BYTES);
	CU_ASSERT_TRUE(h.has_sni);
	CU_ASSERT_EQUAL(h.sni_len, TLS_SNI_MAX_BYTES);
	CU_ASSERT_EQUAL(strlen(h.sni), TLS_SNI_MAX_BYTES);
	check_prefixes(buf, n, 0);

	/* The same hello in two records is 5 bytes over the cap: refused
	 * as soon as the second record header says so. */
	n = frame_split(body, blen, half, 1, buf);
	CU_ASSERT_EQUAL(n, TLS_HELLO_MAX_BYTES + TLS_RECORD_HEADER_BYTES);
	CU_ASSERT_EQUAL(tls_parse_client_hello(buf, n, &h, &err),
	    TLS_INVALID);
	CU_ASSERT_STRING_EQUAL(err, "ClientHello longer than moat accepts");
	CU_ASSERT_EQUAL(tls_parse_client_hello(buf, 8192 + 2 *
	    TLS_RECORD_HEADER_BYTES, &h, &err), TLS_INVALID);
	CU_ASSERT_EQUAL(tls_parse_client_hello(buf, 8192 + 2 *
	    TLS_RECORD_HEADER_BYTES - 1, &h, &err), TLS_NEED_MORE);
	/* Five bytes less, and two records fit. */
	blen -= TLS_RECORD_HEADER_BYTES;
	big_body(body, blen, 10);
	n = frame_split(body, blen, half, 1, buf);
	CU_ASSERT_EQUAL(n, TLS_HELLO_MAX_BYTES);
	CU_ASSERT_EQUAL(tls_parse_client_hello(buf, n, &h, &err),
	    TLS_HELLO_MAX_BYTES);
	CU_ASSERT_EQUAL(h.nrecords, 2);

	/* A server name of 256 bytes. */
	blen = 600;
	big_body(body, blen, TLS_SNI_MAX_BYTES + 1);
	n = frame(body, blen, buf);
	CU_ASSERT_EQUAL(tls_parse_client_hello(buf, n, &h, &err),
	    TLS_INVALID);
	CU_ASSERT_STRING_EQUAL(err, "server name longer than 255 bytes");
}

/* Bytes after the hello (a CCS record, early data) are not its own. */
static void
test_trailing(void)
{
	static const uint8_t	 in[] = MIN_HELLO
	    /* change_cipher_spec, then application data */
	    "\x14\x03\x03\x00\x01\x01" "\x17\x03\x03\x00\x02\xaa\xbb";
	struct tls_client_hello	 h;
	const char		*err = NULL;

	CU_ASSERT_EQUAL(tls_parse_client_hello(V(in), &h, &err), 50);
	CU_ASSERT_FALSE(h.has_sni);
	CU_ASSERT_EQUAL(h.nextensions, 0);
	CU_ASSERT_EQUAL(h.ncipher_suites, 1);
	CU_ASSERT_EQUAL(h.legacy_version, TLS_VERSION_1_2);
	CU_ASSERT_EQUAL(h.record_version, TLS_VERSION_1_0);
	CU_ASSERT_EQUAL(h.session_id_len, 0);
	CU_ASSERT_EQUAL(memcmp(h.random, "ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ",
	    TLS_RANDOM_BYTES), 0);
}

/* More ALPN names than are kept: the first ones, and the count. */
static void
test_alpn_many(void)
{
	static uint8_t		 body[1024], buf[2048];
	struct tls_client_hello	 h;
	const char		*err = NULL;
	size_t			 o, i, list, n;

	memcpy(body, FIXED, sizeof(FIXED) - 1);
	o = sizeof(FIXED) - 1;
	list = (TLS_ALPN_MAX_PROTOCOLS + 4) * 4;
	body[o++] = 0;
	body[o++] = (uint8_t)(list + 6);
	body[o++] = 0;
	body[o++] = TLS_EXT_ALPN;
	body[o++] = 0;
	body[o++] = (uint8_t)(list + 2);
	body[o++] = 0;
	body[o++] = (uint8_t)list;
	for (i = 0; i < TLS_ALPN_MAX_PROTOCOLS + 4; i++) {
		body[o++] = 3;
		body[o++] = 'p';
		body[o++] = (uint8_t)('a' + i / 10);
		body[o++] = (uint8_t)('0' + i % 10);
	}
	n = frame(body, o, buf);
	CU_ASSERT_EQUAL_FATAL(n, o + TLS_RECORD_HEADER_BYTES +
	    TLS_HANDSHAKE_HEADER_BYTES);
	CU_ASSERT_EQUAL_FATAL(tls_parse_client_hello(buf, n, &h, &err),
	    (int)n);
	CU_ASSERT_TRUE(h.has_alpn);
	CU_ASSERT_EQUAL(h.nalpn, TLS_ALPN_MAX_PROTOCOLS);
	CU_ASSERT_EQUAL(h.nalpn_sent, TLS_ALPN_MAX_PROTOCOLS + 4);
	CU_ASSERT_EQUAL(h.alpn[0].len, 3);
	CU_ASSERT_EQUAL(MEMCMP_LIT(h.alpn[0].name, "pa0"), 0);
	CU_ASSERT_EQUAL(MEMCMP_LIT(h.alpn[TLS_ALPN_MAX_PROTOCOLS - 1].name,
	    "pb5"), 0);
}

struct captured {
	const uint8_t	*in;
	size_t		 len;
	const char	*sni;
	size_t		 nalpn;
	const char	*alpn;		/* joined; NULL: not compared */
	bool		 tls13;
	size_t		 nrecords;
};

static const struct captured captured[] = {
	{ V(hello_s_client_sni_alpn_tls13_0), "example.com", 2, "h2,http/1.1",
	    true, 1 },
	{ V(hello_s_client_tls12_sni_0), "api.example.com", 0, NULL, false,
	    1 },
	{ V(hello_s_client_nosni_0), NULL, 0, NULL, true, 1 },
	/* 12 names "proto-NN-xxx...", then http/1.1 */
	{ V(hello_s_client_frag512_0), "frag.example.com", 13, NULL, true, 2 },
	{ V(hello_curl_h2_0), "example.com", 2, "h2,http/1.1", true, 1 },
	{ V(hello_curl_http11_tls12_0), "api.example.com", 1, "http/1.1",
	    false, 1 },
	{ V(hello_node_tls_0), "Node.Example.com", 1, "http/1.1", true, 1 },
	{ V(hello_python_ssl_0), "py.example.com", 1, "h2", true, 1 },
};

/* Real hellos, as captured, split anew, and every prefix. */
static void
test_captured(void)
{
	static uint8_t		 body[TLS_HELLO_MAX_BYTES], buf[FRAME_MAX];
	static const size_t	 splits[] = { 1, 3, 100, 512 };
	const struct captured	*c;
	struct tls_client_hello	 h, h2;
	struct hello_vec	 v;
	char			 alpn[4096];
	const char		*err;
	size_t			 i, s, blen, n;

	for (i = 0; i < sizeof(captured) / sizeof(captured[0]); i++) {
		c = &captured[i];
		err = NULL;
		CHECK(tls_parse_client_hello(c->in, c->len, &h, &err) ==
		    (int)c->len, i);
		CHECK(err == NULL, i);
		CHECK(h.has_sni == (c->sni != NULL), i);
		if (c->sni != NULL)
			CHECK(strcmp(h.sni, c->sni) == 0, i);
		CHECK(!h.sni_is_ip && !h.sni_trailing_dot && !h.has_ech, i);
		CHECK(h.has_alpn == (c->nalpn > 0), i);
		CHECK(h.nalpn == c->nalpn && h.nalpn_sent == c->nalpn, i);
		alpn_join(&h, alpn, sizeof(alpn));
		if (c->alpn != NULL)
			CHECK(strcmp(alpn, c->alpn) == 0, i);
		if (c->alpn == NULL && c->nalpn > 0)
			CHECK(h.alpn[c->nalpn - 1].len == 8 &&
			    MEMCMP_LIT(h.alpn[c->nalpn - 1].name, "http/1.1") ==
			    0, i);
		CHECK(h.tls13 == c->tls13, i);
		CHECK(h.has_supported_versions == c->tls13, i);
		CHECK(h.nrecords == c->nrecords, i);
		CHECK(h.legacy_version == TLS_VERSION_1_2, i);
		CHECK(h.record_version == TLS_VERSION_1_0, i);
		CHECK(h.ncipher_suites > 1 && h.nextensions > 5, i);
		check_prefixes(c->in, c->len, i);

		/* Split differently: the same hello. */
		blen = body_of(c->in, c->len, body);
		memset(&v, 0, sizeof(v));
		v.rc = ACCEPT;
		v.sni = c->sni;
		v.alpn = c->nalpn > 0 ? alpn : NULL;
		v.tls13 = c->tls13;
		for (s = 0; s < sizeof(splits) / sizeof(splits[0]); s++) {
			n = frame_split(body, blen, &splits[s], 1, buf);
			CHECK(run_vec(&v, i, buf, n, &h2) == (int)n, i);
			CHECK(memcmp(h2.random, h.random, TLS_RANDOM_BYTES) ==
			    0, i);
			CHECK(h2.nextensions == h.nextensions, i);
			CHECK(h2.ncipher_suites == h.ncipher_suites, i);
		}
	}
}

void
test_tls_parse_register(void)
{
	CU_pSuite	s;

	if ((s = CU_add_suite("tls_parse", NULL, NULL)) == NULL)
		return;
	CU_add_test(s, "captured hellos", test_captured);
	CU_add_test(s, "vectors", test_vectors);
	CU_add_test(s, "fragmented", test_fragmented);
	CU_add_test(s, "every prefix", test_prefixes);
	CU_add_test(s, "SSLv2 hello", test_sslv2);
	CU_add_test(s, "size limits", test_limits);
	CU_add_test(s, "bytes after the hello", test_trailing);
	CU_add_test(s, "many ALPN names", test_alpn_many);
}
