/*
 * proto_peek.h - what a tunnel carries, from the first bytes each side
 * sends, and whether a rule's "protocols" let it through.
 *
 * Pure functions over bytes: no I/O, no allocation.  moatd peeks at the
 * first bytes of every opaque tunnel (CONNECT, SOCKS5, transparent)
 * before it splices: a TLS ClientHello's server name must be the
 * tunnel's host, and the protocol must be one the allowing rule lists.
 */
#ifndef MOAT_PROTO_PEEK_H
#define MOAT_PROTO_PEEK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/tls_parse.h"

enum peek_proto {
	PEEK_P_NONE = 0,	/* nothing sent yet */
	PEEK_P_PARTIAL,		/* too few bytes to tell */
	PEEK_P_TLS,		/* a whole TLS ClientHello */
	PEEK_P_HTTP,		/* an HTTP request line's start: TOKEN SP */
	PEEK_P_SSH,		/* an SSH identification string: "SSH-" */
	PEEK_P_OTHER,		/* anything else */
	PEEK_P_BAD_TLS		/* a TLS handshake record moat cannot read */
};

/* Longest HTTP method moat recognises (the bytes before the SP). */
#define PEEK_HTTP_METHOD_MAX	20

struct peek_result {
	enum peek_proto		 proto;
	struct tls_client_hello	 hello;	/* PEEK_P_TLS: its SNI */
	const char		*err;	/* PEEK_P_BAD_TLS: why */
};

/*
 * Classifies the first len bytes the client (server false) or the
 * server (server true) sent.  A ClientHello may span several records and
 * segments: PEEK_P_PARTIAL until it is whole, PEEK_P_BAD_TLS past
 * TLS_HELLO_MAX_BYTES.  A server is never TLS (TLS is client-first): its
 * bytes are SSH or OTHER.  Returns out->proto.
 */
enum peek_proto	peek_classify(const uint8_t *p, size_t len, bool server,
		    struct peek_result *out);

/* "protocols" of a rule, as bits; 0 means any protocol. */
#define PEEK_ALLOW_ANY	0u
#define PEEK_ALLOW_TLS	0x01u
#define PEEK_ALLOW_HTTP	0x02u
#define PEEK_ALLOW_SSH	0x04u

enum peek_verdict {
	PEEK_WAIT = 0,		/* wait for more bytes (either side) */
	PEEK_PASS,		/* splice: the protocol is allowed */
	PEEK_REFUSE		/* the protocol is not allowed */
};

/*
 * Judges what each side sent so far (client first bytes cli, server
 * first bytes srv; PEEK_P_NONE if a side sent nothing) against allowed.
 * The ClientHello's server name is the caller's check.  Rules:
 *  - a server that speaks first (SSH banner, or anything else) decides
 *    while the client has sent nothing whole: SSH needs ssh, anything
 *    else needs "any";
 *  - client bytes decide otherwise: TLS needs tls, an HTTP request http,
 *    anything else "any";
 *  - an SSH identification from the client needs ssh, and then the
 *    server's banner too (ssh is server-confirmed: a client cannot carry
 *    "SSH-2.0-" to a web server), unless the rule allows any protocol;
 *  - a broken TLS handshake record is refused, whatever the rule says
 *    (its server name cannot be checked).
 * *seen is set to the protocol that decided (for the refusal message).
 */
enum peek_verdict peek_judge(unsigned allowed, enum peek_proto cli,
		    enum peek_proto srv, enum peek_proto *seen);

/* "tls", "http", "ssh", "other", ... for messages. */
const char	*peek_proto_name(enum peek_proto p);

#endif /* MOAT_PROTO_PEEK_H */
