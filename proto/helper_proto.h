/*
 * helper_proto.h - the protocol between the moat CLI (`moat run`, `moat
 * attach`) and moat-netns, the small privileged helper that programs a
 * sandbox's network.
 *
 * What it is: one header and its codec (helper_proto.c), shared by both
 * ends, the unit tests and the fuzzer.  A fixed binary protocol: every
 * message is one record on a SOCK_SEQPACKET Unix socket (socketpair), a
 * struct nsh_hdr followed by exactly the body its op defines.  Integers
 * are in host byte order (both ends run on one host, from one build).
 * Descriptors (namespaces to join, listening sockets handed back) travel
 * as SCM_RIGHTS on the record they belong to, and the header says how
 * many.
 *
 * What it is not: extensible.  A message whose length is not exactly its
 * op's, with unknown flag bits, non-zero padding, an out-of-range enum, a
 * string that is not NUL-terminated inside its field, or a descriptor
 * count other than the op requires, is refused by nsh_proto_decode(); the
 * helper then closes the channel (STYLE.md section 12).
 *
 * The conversation, client -> moat-netns (each request gets one
 * NSH_OP_REPLY; an error reply ends the session):
 *
 *   HELLO {version}                 must come first
 *   JOIN {flags} + [userns,] netns  once: enter the sandbox's namespaces
 *   HELD {setup} | VETH {setup}     once: program the network
 *   DROPS                           once, after a setup with
 *                                   NSH_SETUP_DROPS: the drop log, an
 *                                   NFLOG socket, returned as an fd
 *   SOCKET {family, type, port}*    a listening socket, returned as an fd
 *   RELEASE                         exit, keeping everything (held `run`:
 *                                   the namespace dies with the sandbox)
 *   TEARDOWN                        remove everything added, then exit
 *
 * If the channel closes (or breaks the protocol) after the network was
 * programmed, moat-netns removes what it added on the host side (the
 * veth, the host table) and never loosens the sandbox side: the sandbox
 * is left with no network at all (fail closed, DESIGN.md invariant 8).
 */
#ifndef MOAT_NSH_PROTO_H
#define MOAT_NSH_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define NSH_PROTO_VERSION	2
#define NSH_FDS_MAX		2	/* descriptors on one message */
#define NSH_TEXT_MAX		160	/* reply text, bytes with its NUL */
/* an interface name with NUL (IFNAMSIZ) */
#define NSH_IFNAME_MAX		16
#define NSH_PORTS_MAX		8	/* listener ports of one setup */
#define NSH_SOCKETS_MAX		16	/* SOCKET requests in one session */
#define NSH_MSG_MAX		256	/* largest encoded message, bytes */

/* The fd moat-netns is handed its channel on (`moat-netns serve`). */
#define NSH_CHANNEL_FD		3

/* The nftables table moat owns in a sandbox's namespace. */
#define NSH_TABLE		"moat"
/* Host-side tables and veths are "moat-" plus NSH_TAG_LEN characters. */
#define NSH_PREFIX		"moat-"
#define NSH_TAG_LEN		6

enum nsh_op {
	NSH_OP_HELLO = 0,	/* struct nsh_hello */
	NSH_OP_JOIN,		/* struct nsh_join, 1 or 2 fds */
	NSH_OP_HELD,		/* struct nsh_setup */
	NSH_OP_VETH,		/* struct nsh_setup */
	NSH_OP_SOCKET,		/* struct nsh_socket */
	NSH_OP_RELEASE,		/* no body */
	NSH_OP_TEARDOWN,	/* no body */
	NSH_OP_REPLY,		/* struct nsh_reply, 0 or 1 fd */
	NSH_OP_DROPS,		/* no body */
	NSH_OP__COUNT
};

/* The header of every message. */
struct nsh_hdr {
	uint16_t	op;	/* enum nsh_op */
	uint16_t	nfds;	/* descriptors carried by this record */
	uint32_t	len;	/* bytes of body after the header */
};

struct nsh_hello {
	uint32_t	version;	/* NSH_PROTO_VERSION */
	uint32_t	flags;		/* none defined: 0 */
};

/* JOIN flags. */
#define NSH_JOIN_USERNS	0x1	/* fds are {userns, netns}, else {netns} */
#define NSH_JOIN_SELF	0x2	/* netns is the one moat-netns runs in (a
				   pod's, whose moatd runs inside it: `moat
				   pod-init`); root only, and only for a HELD
				   with NSH_SETUP_EXEMPT */
#define NSH_JOIN_FLAGS	(NSH_JOIN_USERNS | NSH_JOIN_SELF)

struct nsh_join {
	uint32_t	flags;	/* NSH_JOIN_* */
	uint32_t	pad;	/* 0 */
};

/* HELD / VETH flags. */
#define NSH_SETUP_ATTACH 0x1	/* an existing namespace (`moat attach`):
				   leave its interfaces, add routes that
				   TEARDOWN removes again */
#define NSH_SETUP_DROPS	0x2	/* log drops (proto/drops_proto.h) and
				   bind their NFLOG group in the sandbox's
				   namespace, for DROPS to hand over */
#define NSH_SETUP_EXEMPT 0x4	/* HELD with NSH_SETUP_ATTACH only: moatd
				   runs inside the namespace as exempt_uid,
				   whose sockets' traffic the table lets
				   through unredirected; no local default
				   routes (moatd's traffic takes the
				   namespace's own) */
#define NSH_SETUP_FLAGS	(NSH_SETUP_ATTACH | NSH_SETUP_DROPS | \
			    NSH_SETUP_EXEMPT)

/*
 * The network of a sandbox.  dns_port and transparent_port are where
 * redirected DNS and TCP go; ports[0..nports) are the other listeners
 * (http, socks5) the sandbox may reach directly.  A SOCKET request may
 * bind only one of these ports.  Every port is 1..65535; dns_port and
 * transparent_port differ.
 */
struct nsh_setup {
	uint16_t	dns_port;
	uint16_t	transparent_port;
	uint16_t	nports;
	uint16_t	ports[NSH_PORTS_MAX];
	uint16_t	pad;		/* 0 */
	uint32_t	flags;		/* NSH_SETUP_* */
	uint32_t	exempt_uid;	/* NSH_SETUP_EXEMPT: moatd's uid, neither
					   0 nor (uint32_t)-1; else 0 */
};

enum nsh_family {
	NSH_AF_INET = 0,
	NSH_AF_INET6
};

enum nsh_socktype {
	NSH_SOCK_STREAM = 0,	/* bound and listening */
	NSH_SOCK_DGRAM		/* bound (DNS over UDP) */
};

/*
 * A listening socket.  The address is not the client's to choose: held
 * mode binds the sandbox's loopback (127.0.0.1 or ::1), veth mode the
 * host side of the veth.
 */
struct nsh_socket {
	uint8_t		family;	/* enum nsh_family */
	uint8_t		type;	/* enum nsh_socktype */
	uint16_t	port;
	uint32_t	pad;	/* 0 */
};

/* The answer to every request. */
struct nsh_reply {
	uint16_t	op;	/* the request's op */
	uint16_t	pad;	/* 0 */
	int32_t		error;	/* 0, or a positive errno value */
	uint32_t	index;	/* VETH: the subnet index X of 10.203.X.0/30 */
	/* VETH: host-side veth; else "" */
	char		ifname[NSH_IFNAME_MAX];
	char		text[NSH_TEXT_MAX]; /* error: what failed; else "" */
};

/* One decoded message. */
struct nsh_msg {
	enum nsh_op	op;
	unsigned	nfds;
	union {
		struct nsh_hello	hello;
		struct nsh_join		join;
		struct nsh_setup	setup;
		struct nsh_socket	socket;
		struct nsh_reply	reply;
	} u;
};

/*
 * Returns the op's name ("HELLO", ...), or "?" for a value out of range.
 * Never NULL.
 */
const char	*nsh_proto_opname(unsigned op);

/*
 * Returns the exact body length of op, or (size_t)-1 if op is out of
 * range.
 */
size_t	nsh_proto_bodylen(unsigned op);

/*
 * Checks that m is a message this protocol allows (the same rules as
 * nsh_proto_decode) and writes it to buf.  Returns the number of bytes
 * written (header + body), or -1 with *err set to a static message if m
 * is invalid or len is too small.  err may be NULL.
 */
int	nsh_proto_encode(const struct nsh_msg *m, uint8_t *buf, size_t len,
	    const char **err);

/*
 * Decodes one record of len bytes that arrived with nfds descriptors.
 * Refuses (returns -1, *err set to a static message saying what is wrong;
 * err may be NULL): a short or long record, a header whose len is not the
 * op's body length, an op out of range, a descriptor count other than the
 * op's, unknown flags, non-zero padding, an enum out of range, a zero or
 * duplicate port, a string not NUL-terminated within its field or with
 * bytes other than printable ASCII.  Returns 0 and fills *m otherwise.
 * Never reads beyond buf[len - 1].
 */
int	nsh_proto_decode(const uint8_t *buf, size_t len, unsigned nfds,
	    struct nsh_msg *m, const char **err);

/*
 * Sends m on the SOCK_SEQPACKET socket fd with m->nfds descriptors from
 * fds (NULL when m->nfds is 0).  Retries EINTR; blocks.  Returns 0, or -1
 * with errno set (EINVAL: m is not valid; the message was not sent).
 */
int	nsh_proto_send(int fd, const struct nsh_msg *m, const int *fds);

/*
 * Receives one message from fd, waiting at most timeout_ms milliseconds
 * (-1: no limit).  Descriptors are received close-on-exec into fds[]
 * (room for NSH_FDS_MAX), the rest of fds[] set to -1.  Returns 0;
 * 1 when the peer closed (end of file, or ECONNRESET: it went away with
 * our message unread); or -1 with *err set
 * to a static message ("timed out", "truncated record", a decoding
 * error, ...) and errno set where a system call failed.  On every
 * failure no descriptor is left open.
 */
int	nsh_proto_recv(int fd, struct nsh_msg *m, int *fds, int timeout_ms,
	    const char **err);

/*
 * Fills *m as a reply to op: error 0 and empty strings, or, if error is
 * non-zero, text formatted from fmt (truncated to fit).  Never fails.
 */
void	nsh_proto_reply(struct nsh_msg *m, unsigned op, int error,
	    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif /* MOAT_NSH_PROTO_H */
