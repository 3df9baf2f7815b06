/*
 * test_nsh_proto.c - the moat-netns protocol codec and transport
 * (proto/helper_proto.c).
 *
 * Every well-formed message of every op survives encode -> decode intact;
 * every malformed one (length, op, descriptor count, flags, padding,
 * enums, ports, a pod's exempt uid, strings) is refused by the decoder AND by the encoder;
 * over a real SOCK_SEQPACKET pair, descriptors arrive close-on-exec and
 * a truncated record, too many descriptors, a stray control message, a
 * silent peer and a closed peer each give their own result with no
 * descriptor left open.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "proto/helper_proto.h"
#include "tests/unit/unit.h"

static void	msg_hello(struct nsh_msg *m);
static void	msg_setup(struct nsh_msg *m, enum nsh_op op);
static void	msg_reply_ok(struct nsh_msg *m, enum nsh_op op);
static int	roundtrip(const struct nsh_msg *m);
static int	decode_bytes(const struct nsh_msg *m, size_t cut, int extra,
		    int nfds_delta);
static int	refused(const struct nsh_msg *m);
static int	open_fds(void);
static void	test_roundtrip(void);
static void	test_lengths(void);
static void	test_ops_and_fds(void);
static void	test_flags_and_padding(void);
static void	test_setup_ports(void);
static void	test_pod(void);
static void	test_socket_fields(void);
static void	test_reply_fields(void);
static void	test_encode_buffer(void);
static void	test_reply_helper(void);
static void	test_transport(void);
static void	test_transport_bad(void);

static void
msg_hello(struct nsh_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->op = NSH_OP_HELLO;
	m->u.hello.version = NSH_PROTO_VERSION;
}

static void
msg_setup(struct nsh_msg *m, enum nsh_op op)
{
	memset(m, 0, sizeof(*m));
	m->op = op;
	m->u.setup.dns_port = 53;
	m->u.setup.transparent_port = 15001;
	m->u.setup.nports = 2;
	m->u.setup.ports[0] = 3128;
	m->u.setup.ports[1] = 1080;
}

static void
msg_reply_ok(struct nsh_msg *m, enum nsh_op op)
{
	nsh_proto_reply(m, op, 0, NULL);
}

/* 0 if m encodes, decodes back to the same message and re-encodes to
 * the same bytes. */
static int
roundtrip(const struct nsh_msg *m)
{
	uint8_t		 a[NSH_MSG_MAX], b[NSH_MSG_MAX];
	struct nsh_msg	 d;
	const char	*err = NULL;
	int		 na, nb;

	if ((na = nsh_proto_encode(m, a, sizeof(a), &err)) == -1)
		return -1;
	if (nsh_proto_decode(a, (size_t)na, m->nfds, &d, &err) == -1)
		return -2;
	if (d.op != m->op || d.nfds != m->nfds ||
	    memcmp(&d.u, &m->u, nsh_proto_bodylen(m->op)) != 0)
		return -3;
	if ((nb = nsh_proto_encode(&d, b, sizeof(b), &err)) != na ||
	    memcmp(a, b, (size_t)na) != 0)
		return -4;
	return 0;
}

/*
 * Encodes m (which must be valid), then decodes the bytes cut to cut
 * (0: whole), with extra trailing bytes, with nfds_delta more descriptors
 * than the header says.  Returns decode's result.
 */
static int
decode_bytes(const struct nsh_msg *m, size_t cut, int extra, int nfds_delta)
{
	uint8_t		 buf[NSH_MSG_MAX + 16];
	struct nsh_msg	 d;
	const char	*err = NULL;
	int		 n, rc;

	memset(buf, 0, sizeof(buf));
	n = nsh_proto_encode(m, buf, sizeof(buf), NULL);
	CU_ASSERT_FATAL(n > 0);
	if (cut != 0)
		n = (int)cut;
	n += extra;
	rc = nsh_proto_decode(buf, (size_t)n, (unsigned)((int)m->nfds +
	    nfds_delta), &d, &err);
	if (rc == -1) {
		CU_ASSERT_PTR_NOT_NULL(err);
		CU_ASSERT(err != NULL && err[0] != '\0');
		/* A refused message leaves nothing behind in *d. */
		CU_ASSERT(d.op == 0 && d.nfds == 0);
	}
	return rc;
}

/*
 * 1 if the encoder refuses m and the decoder refuses m's bytes written
 * by hand (header + raw body, as a hostile peer would send them).
 */
static int
refused(const struct nsh_msg *m)
{
	uint8_t		 buf[NSH_MSG_MAX];
	struct nsh_hdr	 h;
	struct nsh_msg	 d;
	const char	*err = NULL;
	size_t		 body = nsh_proto_bodylen(m->op);

	if (nsh_proto_encode(m, buf, sizeof(buf), &err) != -1 || err == NULL)
		return 0;
	if (body == (size_t)-1)
		body = 0;
	memset(&h, 0, sizeof(h));
	h.op = (uint16_t)m->op;
	h.nfds = (uint16_t)m->nfds;
	h.len = (uint32_t)body;
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), &m->u, body);
	err = NULL;
	if (nsh_proto_decode(buf, sizeof(h) + body, m->nfds, &d, &err) != -1 ||
	    err == NULL)
		return 0;
	return 1;
}

static void
test_roundtrip(void)
{
	struct nsh_msg	m;

	msg_hello(&m);
	CU_ASSERT_EQUAL(roundtrip(&m), 0);
	memset(&m, 0, sizeof(m));
	m.op = NSH_OP_JOIN;
	m.nfds = 1;
	CU_ASSERT_EQUAL(roundtrip(&m), 0);
	m.u.join.flags = NSH_JOIN_USERNS;
	m.nfds = 2;
	CU_ASSERT_EQUAL(roundtrip(&m), 0);
	msg_setup(&m, NSH_OP_HELD);
	CU_ASSERT_EQUAL(roundtrip(&m), 0);
	msg_setup(&m, NSH_OP_VETH);
	m.u.setup.flags = NSH_SETUP_ATTACH;
	m.u.setup.nports = NSH_PORTS_MAX;
	for (size_t i = 0; i < NSH_PORTS_MAX; i++)
		m.u.setup.ports[i] = (uint16_t)(2000 + i);
	CU_ASSERT_EQUAL(roundtrip(&m), 0);
	msg_setup(&m, NSH_OP_HELD);
	m.u.setup.nports = 0;
	m.u.setup.ports[0] = m.u.setup.ports[1] = 0;
	CU_ASSERT_EQUAL(roundtrip(&m), 0);
	memset(&m, 0, sizeof(m));
	m.op = NSH_OP_SOCKET;
	m.u.socket.family = NSH_AF_INET6;
	m.u.socket.type = NSH_SOCK_DGRAM;
	m.u.socket.port = 65535;
	CU_ASSERT_EQUAL(roundtrip(&m), 0);
	msg_setup(&m, NSH_OP_HELD);
	m.u.setup.flags = NSH_SETUP_DROPS | NSH_SETUP_ATTACH;
	CU_ASSERT_EQUAL(roundtrip(&m), 0);
	memset(&m, 0, sizeof(m));
	m.op = NSH_OP_RELEASE;
	CU_ASSERT_EQUAL(roundtrip(&m), 0);
	m.op = NSH_OP_TEARDOWN;
	CU_ASSERT_EQUAL(roundtrip(&m), 0);
	m.op = NSH_OP_DROPS;
	CU_ASSERT_EQUAL(roundtrip(&m), 0);
	CU_ASSERT_STRING_EQUAL(nsh_proto_opname(NSH_OP_DROPS), "DROPS");
	msg_reply_ok(&m, NSH_OP_DROPS);	/* the drop log, a descriptor */
	m.nfds = 1;
	CU_ASSERT_EQUAL(roundtrip(&m), 0);
	nsh_proto_reply(&m, NSH_OP_DROPS, EBUSY, "group taken");
	CU_ASSERT_EQUAL(roundtrip(&m), 0);
	msg_reply_ok(&m, NSH_OP_HELLO);
	CU_ASSERT_EQUAL(roundtrip(&m), 0);
	msg_reply_ok(&m, NSH_OP_SOCKET);
	m.nfds = 1;
	CU_ASSERT_EQUAL(roundtrip(&m), 0);
	msg_reply_ok(&m, NSH_OP_VETH);
	m.u.reply.index = 255;
	snprintf(m.u.reply.ifname, sizeof(m.u.reply.ifname), "moat-abc123");
	CU_ASSERT_EQUAL(roundtrip(&m), 0);
	nsh_proto_reply(&m, NSH_OP_SOCKET, EPERM, "port %u refused", 9);
	CU_ASSERT_EQUAL(roundtrip(&m), 0);
	CU_ASSERT_STRING_EQUAL(m.u.reply.text, "port 9 refused");
}

static void
test_lengths(void)
{
	struct nsh_msg	m;
	uint8_t		buf[NSH_MSG_MAX];
	struct nsh_hdr	h;
	struct nsh_msg	d;
	const char	*err;
	size_t		cut, full;

	msg_setup(&m, NSH_OP_HELD);
	full = sizeof(struct nsh_hdr) + sizeof(struct nsh_setup);
	CU_ASSERT_EQUAL(decode_bytes(&m, 0, 0, 0), 0);
	/* Every shorter record, the empty one included, is refused. */
	for (cut = 1; cut < full; cut++)
		CU_ASSERT_EQUAL(decode_bytes(&m, cut, 0, 0), -1);
	CU_ASSERT_EQUAL(nsh_proto_decode(buf, 0, 0, &d, &err), -1);
	/* No trailing byte. */
	CU_ASSERT_EQUAL(decode_bytes(&m, 0, 1, 0), -1);
	CU_ASSERT_EQUAL(decode_bytes(&m, 0, 8, 0), -1);
	/* The header's length must be the op's, and the record's. */
	msg_hello(&m);
	CU_ASSERT_FATAL(nsh_proto_encode(&m, buf, sizeof(buf), NULL) == 16);
	memcpy(&h, buf, sizeof(h));
	h.len = 7;
	memcpy(buf, &h, sizeof(h));
	CU_ASSERT_EQUAL(nsh_proto_decode(buf, 15, 0, &d, &err), -1);
	CU_ASSERT_EQUAL(nsh_proto_decode(buf, 16, 0, &d, &err), -1);
	h.len = 0xffffffffu;
	memcpy(buf, &h, sizeof(h));
	CU_ASSERT_EQUAL(nsh_proto_decode(buf, 16, 0, &d, &err), -1);
	/* A body-less op with a body. */
	memset(&h, 0, sizeof(h));
	h.op = NSH_OP_TEARDOWN;
	h.len = 4;
	memset(buf, 0, sizeof(buf));
	memcpy(buf, &h, sizeof(h));
	CU_ASSERT_EQUAL(nsh_proto_decode(buf, 12, 0, &d, &err), -1);
}

static void
test_ops_and_fds(void)
{
	struct nsh_msg	m;
	uint8_t		buf[NSH_MSG_MAX];
	struct nsh_hdr	h;
	struct nsh_msg	d;
	const char	*err;
	unsigned	op;

	/* Ops beyond the table, in the header. */
	for (op = NSH_OP__COUNT; op < NSH_OP__COUNT + 3; op++) {
		memset(buf, 0, sizeof(buf));
		memset(&h, 0, sizeof(h));
		h.op = (uint16_t)op;
		memcpy(buf, &h, sizeof(h));
		CU_ASSERT_EQUAL(nsh_proto_decode(buf, sizeof(h), 0, &d, &err),
		    -1);
	}
	h.op = 0xffff;
	memcpy(buf, &h, sizeof(h));
	CU_ASSERT_EQUAL(nsh_proto_decode(buf, sizeof(h), 0, &d, &err), -1);
	memset(&m, 0, sizeof(m));
	m.op = (enum nsh_op)NSH_OP__COUNT;
	CU_ASSERT(refused(&m));
	CU_ASSERT_STRING_EQUAL(nsh_proto_opname(NSH_OP__COUNT), "?");
	CU_ASSERT_STRING_EQUAL(nsh_proto_opname(NSH_OP_JOIN), "JOIN");
	CU_ASSERT_EQUAL(nsh_proto_bodylen(NSH_OP__COUNT), (size_t)-1);

	/* Descriptors: exactly what the op carries. */
	msg_hello(&m);
	CU_ASSERT_EQUAL(decode_bytes(&m, 0, 0, 1), -1);
	m.nfds = 1;
	CU_ASSERT(refused(&m));
	memset(&m, 0, sizeof(m));
	m.op = NSH_OP_JOIN;
	m.nfds = 0;
	CU_ASSERT(refused(&m));
	m.nfds = 2;			/* two without the userns flag */
	CU_ASSERT(refused(&m));
	m.u.join.flags = NSH_JOIN_USERNS;
	m.nfds = 1;			/* the flag with one */
	CU_ASSERT(refused(&m));
	m.nfds = 3;
	CU_ASSERT(refused(&m));
	m.nfds = 2;
	CU_ASSERT_EQUAL(decode_bytes(&m, 0, 0, -1), -1);
	CU_ASSERT_EQUAL(decode_bytes(&m, 0, 0, 1), -1);
	msg_reply_ok(&m, NSH_OP_SOCKET);
	m.nfds = 0;			/* a socket reply without its socket */
	CU_ASSERT(refused(&m));
	m.nfds = 2;
	CU_ASSERT(refused(&m));
	nsh_proto_reply(&m, NSH_OP_SOCKET, EPERM, "no");
	m.nfds = 1;			/* an error with a descriptor */
	CU_ASSERT(refused(&m));
	msg_reply_ok(&m, NSH_OP_HELD);
	m.nfds = 1;
	CU_ASSERT(refused(&m));
	msg_reply_ok(&m, NSH_OP_DROPS);
	m.nfds = 0;			/* the drop log's reply without it */
	CU_ASSERT(refused(&m));
	nsh_proto_reply(&m, NSH_OP_DROPS, EBUSY, "no");
	m.nfds = 1;			/* ... an error with it */
	CU_ASSERT(refused(&m));
	memset(&m, 0, sizeof(m));
	m.op = NSH_OP_DROPS;
	m.nfds = 1;			/* the request carries none */
	CU_ASSERT(refused(&m));
	memset(&m, 0, sizeof(m));
	m.op = NSH_OP_SOCKET;
	m.u.socket.port = 53;
	m.nfds = 1;			/* a request never carries a socket */
	CU_ASSERT(refused(&m));
}

static void
test_flags_and_padding(void)
{
	struct nsh_msg	m;

	msg_hello(&m);
	m.u.hello.version = NSH_PROTO_VERSION + 1;
	CU_ASSERT(refused(&m));
	m.u.hello.version = 0;
	CU_ASSERT(refused(&m));
	msg_hello(&m);
	m.u.hello.flags = 1;
	CU_ASSERT(refused(&m));
	memset(&m, 0, sizeof(m));
	m.op = NSH_OP_JOIN;
	m.nfds = 1;
	m.u.join.flags = 0x4;
	CU_ASSERT(refused(&m));
	m.u.join.flags = 0x80000000u;
	CU_ASSERT(refused(&m));
	m.u.join.flags = 0;
	m.u.join.pad = 1;
	CU_ASSERT(refused(&m));
	msg_setup(&m, NSH_OP_VETH);
	m.u.setup.flags = 0x8;
	CU_ASSERT(refused(&m));
	msg_setup(&m, NSH_OP_HELD);
	m.u.setup.pad = 0x100;
	CU_ASSERT(refused(&m));
}

/* JOIN of its own namespace and a pod's exempt uid (moat pod-init). */
static void
test_pod(void)
{
	struct nsh_msg	m;

	memset(&m, 0, sizeof(m));
	m.op = NSH_OP_JOIN;
	m.nfds = 1;
	m.u.join.flags = NSH_JOIN_SELF;
	CU_ASSERT_EQUAL(roundtrip(&m), 0);
	m.u.join.flags = NSH_JOIN_SELF | NSH_JOIN_USERNS;
	m.nfds = 2;
	CU_ASSERT(refused(&m));
	msg_setup(&m, NSH_OP_HELD);
	m.u.setup.flags = NSH_SETUP_ATTACH | NSH_SETUP_EXEMPT;
	m.u.setup.exempt_uid = 1337;
	CU_ASSERT_EQUAL(roundtrip(&m), 0);
	m.u.setup.exempt_uid = 0;		/* root: every root process */
	CU_ASSERT(refused(&m));
	m.u.setup.exempt_uid = UINT32_MAX;	/* (uid_t)-1: no uid */
	CU_ASSERT(refused(&m));
	m.u.setup.exempt_uid = 1337;
	m.u.setup.flags = NSH_SETUP_EXEMPT;	/* only an attached namespace */
	CU_ASSERT(refused(&m));
	m.u.setup.flags = NSH_SETUP_ATTACH;	/* a uid without the flag */
	CU_ASSERT(refused(&m));
	m.u.setup.flags = 0;
	CU_ASSERT(refused(&m));
	msg_setup(&m, NSH_OP_VETH);		/* never in veth mode */
	m.u.setup.flags = NSH_SETUP_ATTACH | NSH_SETUP_EXEMPT;
	m.u.setup.exempt_uid = 1337;
	CU_ASSERT(refused(&m));
}

static void
test_setup_ports(void)
{
	struct nsh_msg	m;

	msg_setup(&m, NSH_OP_HELD);
	m.u.setup.dns_port = 0;
	CU_ASSERT(refused(&m));
	msg_setup(&m, NSH_OP_HELD);
	m.u.setup.transparent_port = 0;
	CU_ASSERT(refused(&m));
	msg_setup(&m, NSH_OP_HELD);
	m.u.setup.transparent_port = 53;	/* the same as dns */
	CU_ASSERT(refused(&m));
	msg_setup(&m, NSH_OP_HELD);
	m.u.setup.ports[1] = 3128;		/* twice among ports */
	CU_ASSERT(refused(&m));
	msg_setup(&m, NSH_OP_VETH);
	m.u.setup.ports[0] = 15001;		/* = transparent */
	CU_ASSERT(refused(&m));
	msg_setup(&m, NSH_OP_HELD);
	m.u.setup.ports[1] = 0;			/* a listed port 0 */
	CU_ASSERT(refused(&m));
	msg_setup(&m, NSH_OP_HELD);
	m.u.setup.nports = NSH_PORTS_MAX + 1;
	CU_ASSERT(refused(&m));
	msg_setup(&m, NSH_OP_HELD);
	m.u.setup.nports = 0xffff;
	CU_ASSERT(refused(&m));
	msg_setup(&m, NSH_OP_HELD);
	m.u.setup.ports[5] = 8080;		/* beyond nports */
	CU_ASSERT(refused(&m));
	msg_setup(&m, NSH_OP_HELD);
	m.u.setup.nports = 1;			/* ports[1] now unused */
	CU_ASSERT(refused(&m));
}

static void
test_socket_fields(void)
{
	struct nsh_msg	m;

	memset(&m, 0, sizeof(m));
	m.op = NSH_OP_SOCKET;
	m.u.socket.port = 3128;
	CU_ASSERT_EQUAL(roundtrip(&m), 0);
	m.u.socket.family = 2;
	CU_ASSERT(refused(&m));
	m.u.socket.family = 0xff;
	CU_ASSERT(refused(&m));
	m.u.socket.family = NSH_AF_INET;
	m.u.socket.type = 2;
	CU_ASSERT(refused(&m));
	m.u.socket.type = NSH_SOCK_STREAM;
	m.u.socket.port = 0;
	CU_ASSERT(refused(&m));
	m.u.socket.port = 80;
	m.u.socket.pad = 0x01000000u;
	CU_ASSERT(refused(&m));
}

static void
test_reply_fields(void)
{
	struct nsh_msg	m;

	msg_reply_ok(&m, NSH_OP_HELD);
	m.u.reply.op = NSH_OP_REPLY;		/* a reply to a reply */
	CU_ASSERT(refused(&m));
	m.u.reply.op = 0x7fff;
	CU_ASSERT(refused(&m));
	msg_reply_ok(&m, NSH_OP_HELD);
	m.u.reply.pad = 1;
	CU_ASSERT(refused(&m));
	nsh_proto_reply(&m, NSH_OP_HELD, EPERM, "x");
	m.u.reply.error = -1;
	CU_ASSERT(refused(&m));
	m.u.reply.error = 4096;
	CU_ASSERT(refused(&m));
	nsh_proto_reply(&m, NSH_OP_HELD, EPERM, "x");
	m.u.reply.text[0] = '\0';		/* an error says what */
	CU_ASSERT(refused(&m));
	msg_reply_ok(&m, NSH_OP_HELD);
	snprintf(m.u.reply.text, sizeof(m.u.reply.text), "ok?");
	CU_ASSERT(refused(&m));			/* success says nothing */
	/* Strings: NUL-terminated in their field, printable, no tail. */
	nsh_proto_reply(&m, NSH_OP_HELD, EPERM, "x");
	memset(m.u.reply.text, 'a', sizeof(m.u.reply.text));
	CU_ASSERT(refused(&m));
	nsh_proto_reply(&m, NSH_OP_HELD, EPERM, "line\001");
	m.u.reply.text[4] = '\n';
	CU_ASSERT(refused(&m));
	nsh_proto_reply(&m, NSH_OP_HELD, EPERM, "x");
	m.u.reply.text[5] = 'h';		/* hidden after the NUL */
	CU_ASSERT(refused(&m));
	nsh_proto_reply(&m, NSH_OP_HELD, EPERM, "x");
	m.u.reply.text[1] = (char)0xc3;	/* not ASCII */
	m.u.reply.text[2] = (char)0xa9;
	CU_ASSERT(refused(&m));
	/* VETH fields: only in a VETH success, and then both. */
	msg_reply_ok(&m, NSH_OP_VETH);
	CU_ASSERT(refused(&m));			/* no interface */
	snprintf(m.u.reply.ifname, sizeof(m.u.reply.ifname), "moat-x");
	m.u.reply.index = 256;
	CU_ASSERT(refused(&m));
	msg_reply_ok(&m, NSH_OP_VETH);
	memset(m.u.reply.ifname, 'x', sizeof(m.u.reply.ifname));
	m.u.reply.index = 1;
	CU_ASSERT(refused(&m));
	msg_reply_ok(&m, NSH_OP_HELD);
	m.u.reply.index = 1;
	CU_ASSERT(refused(&m));
	msg_reply_ok(&m, NSH_OP_HELD);
	snprintf(m.u.reply.ifname, sizeof(m.u.reply.ifname), "eth0");
	CU_ASSERT(refused(&m));
}

static void
test_encode_buffer(void)
{
	struct nsh_msg	 m;
	uint8_t		 buf[NSH_MSG_MAX];
	const char	*err = NULL;
	size_t		 need = sizeof(struct nsh_hdr) +
			    sizeof(struct nsh_setup);

	msg_setup(&m, NSH_OP_VETH);
	CU_ASSERT_EQUAL(nsh_proto_encode(&m, buf, need - 1, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(err);
	CU_ASSERT_EQUAL(nsh_proto_encode(&m, buf, need, NULL), (int)need);
	/* err may be NULL on failure too. */
	CU_ASSERT_EQUAL(nsh_proto_encode(&m, buf, 0, NULL), -1);
}

static void
test_reply_helper(void)
{
	struct nsh_msg	m;
	char		longs[400];

	nsh_proto_reply(&m, NSH_OP_JOIN, ENOENT, "bad\tbyte\x7f and \n");
	CU_ASSERT_EQUAL(m.op, NSH_OP_REPLY);
	CU_ASSERT_EQUAL(m.u.reply.op, NSH_OP_JOIN);
	CU_ASSERT_EQUAL(m.u.reply.error, ENOENT);
	CU_ASSERT_STRING_EQUAL(m.u.reply.text, "bad?byte? and ?");
	CU_ASSERT_EQUAL(roundtrip(&m), 0);
	memset(longs, 'z', sizeof(longs) - 1);
	longs[sizeof(longs) - 1] = '\0';
	nsh_proto_reply(&m, NSH_OP_JOIN, EIO, "%s", longs);
	CU_ASSERT_EQUAL(strlen(m.u.reply.text), NSH_TEXT_MAX - 1);
	CU_ASSERT_EQUAL(roundtrip(&m), 0);
	/* No text given: strerror. */
	nsh_proto_reply(&m, NSH_OP_JOIN, EIO, NULL);
	CU_ASSERT(m.u.reply.text[0] != '\0');
	CU_ASSERT_EQUAL(roundtrip(&m), 0);
	nsh_proto_reply(&m, NSH_OP_JOIN, EIO, "%s", "");
	CU_ASSERT(m.u.reply.text[0] != '\0');
}

/* The number of open descriptors of this process. */
static int
open_fds(void)
{
	int	fd, n = 0;

	for (fd = 0; fd < 1024; fd++)
		if (fcntl(fd, F_GETFD) != -1)
			n++;
	return n;
}

static void
test_transport(void)
{
	struct nsh_msg	 m, r;
	const char	*err = NULL;
	int		 sv[2], fds[NSH_FDS_MAX], pass[2], flags;

	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0);
	CU_ASSERT_FATAL(pipe(pass) == 0);
	memset(&m, 0, sizeof(m));
	m.op = NSH_OP_JOIN;
	m.u.join.flags = NSH_JOIN_USERNS;
	m.nfds = 2;
	CU_ASSERT_EQUAL(nsh_proto_send(sv[0], &m, pass), 0);
	CU_ASSERT_EQUAL(nsh_proto_recv(sv[1], &r, fds, 1000, &err), 0);
	CU_ASSERT_EQUAL(r.op, NSH_OP_JOIN);
	CU_ASSERT_EQUAL(r.nfds, 2);
	CU_ASSERT(fds[0] >= 0 && fds[1] >= 0);
	/* Received close-on-exec, and they are the pipe's ends. */
	flags = fcntl(fds[0], F_GETFD);
	CU_ASSERT(flags != -1 && (flags & FD_CLOEXEC) != 0);
	CU_ASSERT_EQUAL(WRITE_LIT(fds[1], "x"), 1);
	{
		char	c = 0;

		CU_ASSERT_EQUAL(read(pass[0], &c, 1), 1);
		CU_ASSERT_EQUAL(c, 'x');
	}
	close(fds[0]);
	close(fds[1]);
	close(pass[0]);
	close(pass[1]);
	/* An invalid message is not sent. */
	msg_hello(&m);
	m.u.hello.flags = 9;
	errno = 0;
	CU_ASSERT_EQUAL(nsh_proto_send(sv[0], &m, NULL), -1);
	CU_ASSERT_EQUAL(errno, EINVAL);
	/* A silent peer: a bounded wait. */
	CU_ASSERT_EQUAL(nsh_proto_recv(sv[1], &r, fds, 50, &err), -1);
	CU_ASSERT_EQUAL(errno, ETIMEDOUT);
	CU_ASSERT(err != NULL && strcmp(err, "timed out") == 0);
	CU_ASSERT(fds[0] == -1 && fds[1] == -1);
	/* A closed peer: end of file. */
	close(sv[0]);
	CU_ASSERT_EQUAL(nsh_proto_recv(sv[1], &r, fds, 1000, &err), 1);
	close(sv[1]);
}

static void
test_transport_bad(void)
{
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(int) * 4)];
	} cm;
	struct msghdr	 mh;
	struct cmsghdr	*c;
	struct iovec	 iov;
	struct nsh_msg	 m, r;
	uint8_t		 big[NSH_MSG_MAX + 64], rec[NSH_MSG_MAX];
	const char	*err;
	int		 sv[2], fds[NSH_FDS_MAX], extra[4], before, n, i;

	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0);
	before = open_fds();

	/* A record longer than any message: truncated, refused. */
	memset(big, 0, sizeof(big));
	CU_ASSERT_EQUAL(send(sv[0], big, sizeof(big), 0), (ssize_t)sizeof(big));
	err = NULL;
	CU_ASSERT_EQUAL(nsh_proto_recv(sv[1], &r, fds, 1000, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(err);

	/* HELLO with three descriptors: refused, all three closed. */
	msg_hello(&m);
	n = nsh_proto_encode(&m, rec, sizeof(rec), NULL);
	CU_ASSERT_FATAL(n > 0);
	for (i = 0; i < 3; i++)
		extra[i] = dup(sv[0]);
	memset(&mh, 0, sizeof(mh));
	memset(&cm, 0, sizeof(cm));
	iov.iov_base = rec;
	iov.iov_len = (size_t)n;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cm.buf;
	mh.msg_controllen = CMSG_SPACE(sizeof(int) * 3);
	c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * 3);
	memcpy(CMSG_DATA(c), extra, sizeof(int) * 3);
	CU_ASSERT_EQUAL(sendmsg(sv[0], &mh, 0), n);
	for (i = 0; i < 3; i++)
		close(extra[i]);
	err = NULL;
	CU_ASSERT_EQUAL(nsh_proto_recv(sv[1], &r, fds, 1000, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(err);
	CU_ASSERT(fds[0] == -1 && fds[1] == -1);

	/* A JOIN whose header says 1 descriptor but that carries 2. */
	memset(&m, 0, sizeof(m));
	m.op = NSH_OP_JOIN;
	m.nfds = 1;
	n = nsh_proto_encode(&m, rec, sizeof(rec), NULL);
	CU_ASSERT_FATAL(n > 0);
	extra[0] = dup(sv[0]);
	extra[1] = dup(sv[0]);
	mh.msg_controllen = CMSG_SPACE(sizeof(int) * 2);
	c = CMSG_FIRSTHDR(&mh);
	c->cmsg_len = CMSG_LEN(sizeof(int) * 2);
	memcpy(CMSG_DATA(c), extra, sizeof(int) * 2);
	iov.iov_len = (size_t)n;
	CU_ASSERT_EQUAL(sendmsg(sv[0], &mh, 0), n);
	close(extra[0]);
	close(extra[1]);
	CU_ASSERT_EQUAL(nsh_proto_recv(sv[1], &r, fds, 1000, &err), -1);

	/* A JOIN with no descriptor at all. */
	CU_ASSERT_EQUAL(send(sv[0], rec, (size_t)n, 0), n);
	CU_ASSERT_EQUAL(nsh_proto_recv(sv[1], &r, fds, 1000, &err), -1);

	/* Garbage of a valid length. */
	memset(rec, 0xa5, sizeof(rec));
	CU_ASSERT_EQUAL(send(sv[0], rec, 16, 0), 16);
	CU_ASSERT_EQUAL(nsh_proto_recv(sv[1], &r, fds, 1000, &err), -1);

	/* Nothing leaked through any of it. */
	CU_ASSERT_EQUAL(open_fds(), before);
	close(sv[0]);
	close(sv[1]);
}

void
test_nsh_proto_register(void)
{
	CU_pSuite	s;

	if ((s = CU_add_suite("nsh_proto", NULL, NULL)) == NULL)
		return;
	CU_add_test(s, "round trips of every op", test_roundtrip);
	CU_add_test(s, "exact lengths", test_lengths);
	CU_add_test(s, "ops and descriptor counts", test_ops_and_fds);
	CU_add_test(s, "flags, versions and padding", test_flags_and_padding);
	CU_add_test(s, "setup ports", test_setup_ports);
	CU_add_test(s, "a pod's own namespace and exempt uid", test_pod);
	CU_add_test(s, "socket fields", test_socket_fields);
	CU_add_test(s, "reply fields and strings", test_reply_fields);
	CU_add_test(s, "encode buffer size", test_encode_buffer);
	CU_add_test(s, "reply helper", test_reply_helper);
	CU_add_test(s, "transport over SOCK_SEQPACKET", test_transport);
	CU_add_test(s, "hostile records", test_transport_bad);
}
