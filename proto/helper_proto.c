/*
 * helper_proto.c - encoder, decoder and transport of the moat-netns
 * protocol (helper_proto.h).
 *
 * What it is: the only code that turns bytes from the other end into a
 * struct nsh_msg, so every check lives here, once, for both ends; the
 * unit tests and the fuzzer call it directly.
 *
 * What it is not: a policy.  Whether an op is allowed now (its phase) is
 * moat-netns's table; what an address means is helper_sock.c's business.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proto/helper_proto.h"

/* The wire layout is the struct layout: no implicit padding anywhere. */
_Static_assert(sizeof(struct nsh_hdr) == 8, "nsh_hdr layout");
_Static_assert(sizeof(struct nsh_hello) == 8, "nsh_hello layout");
_Static_assert(sizeof(struct nsh_join) == 8, "nsh_join layout");
_Static_assert(sizeof(struct nsh_setup) == 32, "nsh_setup layout");
_Static_assert(offsetof(struct nsh_setup, flags) == 24, "nsh_setup layout");
_Static_assert(sizeof(struct nsh_socket) == 8, "nsh_socket layout");
_Static_assert(sizeof(struct nsh_reply) == 28 + NSH_TEXT_MAX,
    "nsh_reply layout");
_Static_assert(sizeof(struct nsh_hdr) + sizeof(struct nsh_reply) <=
    NSH_MSG_MAX, "NSH_MSG_MAX too small");

static const char	*nsh_check(const struct nsh_msg *m);
static const char	*nsh_check_setup(const struct nsh_setup *s);
static const char	*nsh_check_reply(const struct nsh_reply *r);
static bool		 nsh_check_string(const char *s, size_t field);
static unsigned		 nsh_fds_of(const struct nsh_msg *m);
static int		 nsh_wait(int fd, int timeout_ms);

static const char *const nsh_opnames[NSH_OP__COUNT] = {
	[NSH_OP_HELLO] = "HELLO",
	[NSH_OP_JOIN] = "JOIN",
	[NSH_OP_HELD] = "HELD",
	[NSH_OP_VETH] = "VETH",
	[NSH_OP_SOCKET] = "SOCKET",
	[NSH_OP_RELEASE] = "RELEASE",
	[NSH_OP_TEARDOWN] = "TEARDOWN",
	[NSH_OP_REPLY] = "REPLY",
	[NSH_OP_DROPS] = "DROPS"
};

static const size_t nsh_bodylens[NSH_OP__COUNT] = {
	[NSH_OP_HELLO] = sizeof(struct nsh_hello),
	[NSH_OP_JOIN] = sizeof(struct nsh_join),
	[NSH_OP_HELD] = sizeof(struct nsh_setup),
	[NSH_OP_VETH] = sizeof(struct nsh_setup),
	[NSH_OP_SOCKET] = sizeof(struct nsh_socket),
	[NSH_OP_RELEASE] = 0,
	[NSH_OP_TEARDOWN] = 0,
	[NSH_OP_REPLY] = sizeof(struct nsh_reply),
	[NSH_OP_DROPS] = 0
};

const char *
nsh_proto_opname(unsigned op)
{
	return op < NSH_OP__COUNT ? nsh_opnames[op] : "?";
}

size_t
nsh_proto_bodylen(unsigned op)
{
	return op < NSH_OP__COUNT ? nsh_bodylens[op] : (size_t)-1;
}

/* The number of descriptors m must carry. */
static unsigned
nsh_fds_of(const struct nsh_msg *m)
{
	switch (m->op) {
	case NSH_OP_JOIN:
		return (m->u.join.flags & NSH_JOIN_USERNS) ? 2 : 1;
	case NSH_OP_REPLY:
		return (m->u.reply.op == NSH_OP_SOCKET ||
		    m->u.reply.op == NSH_OP_DROPS) &&
		    m->u.reply.error == 0 ? 1 : 0;
	default:
		return 0;
	}
}

/* A NUL inside the field, printable ASCII before it. */
static bool
nsh_check_string(const char *s, size_t field)
{
	size_t	i;

	for (i = 0; i < field; i++) {
		if (s[i] == '\0')
			break;
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return false;
	}
	if (i == field)
		return false;
	/* Bytes after the NUL are zero: nothing hides behind it. */
	for (; i < field; i++)
		if (s[i] != '\0')
			return false;
	return true;
}

static const char *
nsh_check_setup(const struct nsh_setup *s)
{
	uint16_t	all[NSH_PORTS_MAX + 2];
	size_t		i, j, n = 0;

	if (s->pad != 0)
		return "non-zero padding";
	if ((s->flags & ~(uint32_t)NSH_SETUP_FLAGS) != 0)
		return "unknown setup flags";
	if ((s->flags & NSH_SETUP_EXEMPT) == 0 ? s->exempt_uid != 0 :
	    (s->flags & NSH_SETUP_ATTACH) == 0 || s->exempt_uid == 0 ||
	    s->exempt_uid == UINT32_MAX)
		return "exempt uid without an attached namespace, or 0";
	if (s->nports > NSH_PORTS_MAX)
		return "too many ports";
	for (i = s->nports; i < NSH_PORTS_MAX; i++)
		if (s->ports[i] != 0)
			return "non-zero unused port slot";
	all[n++] = s->dns_port;
	all[n++] = s->transparent_port;
	for (i = 0; i < s->nports; i++)
		all[n++] = s->ports[i];
	for (i = 0; i < n; i++) {
		if (all[i] == 0)
			return "port 0";
		for (j = 0; j < i; j++)
			if (all[i] == all[j])
				return "a port appears twice";
	}
	return NULL;
}

static const char *
nsh_check_reply(const struct nsh_reply *r)
{
	if (r->pad != 0)
		return "non-zero padding";
	if (r->op == NSH_OP_REPLY || r->op >= NSH_OP__COUNT)
		return "reply to an unknown op";
	if (r->error < 0 || r->error > 4095)
		return "error out of range";
	if (!nsh_check_string(r->ifname, sizeof(r->ifname)))
		return "bad interface name";
	if (!nsh_check_string(r->text, sizeof(r->text)))
		return "bad reply text";
	if (r->error != 0 && r->text[0] == '\0')
		return "error reply without text";
	if (r->error == 0 && r->text[0] != '\0')
		return "text in a success reply";
	if (r->op != NSH_OP_VETH || r->error != 0) {
		if (r->index != 0 || r->ifname[0] != '\0')
			return "veth fields in a reply that is not VETH's";
	} else if (r->index > 255 || r->ifname[0] == '\0')
		return "VETH reply without index or interface";
	return NULL;
}

/* NULL if m is a valid message, else what is wrong with it. */
static const char *
nsh_check(const struct nsh_msg *m)
{
	if ((unsigned)m->op >= NSH_OP__COUNT)
		return "unknown op";
	if (m->nfds > NSH_FDS_MAX)
		return "too many descriptors";
	switch (m->op) {
	case NSH_OP_HELLO:
		if (m->u.hello.version != NSH_PROTO_VERSION)
			return "protocol version mismatch";
		if (m->u.hello.flags != 0)
			return "unknown hello flags";
		break;
	case NSH_OP_JOIN:
		if ((m->u.join.flags & ~(uint32_t)NSH_JOIN_FLAGS) != 0)
			return "unknown join flags";
		if ((m->u.join.flags & NSH_JOIN_SELF) != 0 &&
		    (m->u.join.flags & NSH_JOIN_USERNS) != 0)
			return "a join of its own namespace takes no user "
			    "namespace";
		if (m->u.join.pad != 0)
			return "non-zero padding";
		break;
	case NSH_OP_HELD:
		return nsh_check_setup(&m->u.setup);
	case NSH_OP_VETH:
		if ((m->u.setup.flags & NSH_SETUP_EXEMPT) != 0)
			return "an exempt uid in veth mode";
		return nsh_check_setup(&m->u.setup);
	case NSH_OP_SOCKET:
		if (m->u.socket.family > NSH_AF_INET6)
			return "unknown address family";
		if (m->u.socket.type > NSH_SOCK_DGRAM)
			return "unknown socket type";
		if (m->u.socket.port == 0)
			return "port 0";
		if (m->u.socket.pad != 0)
			return "non-zero padding";
		break;
	case NSH_OP_RELEASE:
	case NSH_OP_TEARDOWN:
	case NSH_OP_DROPS:
		break;
	case NSH_OP_REPLY:
		return nsh_check_reply(&m->u.reply);
	default:
		return "unknown op";
	}
	return NULL;
}

int
nsh_proto_encode(const struct nsh_msg *m, uint8_t *buf, size_t len,
    const char **err)
{
	struct nsh_hdr	 h;
	const char	*e;
	size_t		 body;

	if ((e = nsh_check(m)) != NULL)
		goto fail;
	if (m->nfds != nsh_fds_of(m)) {
		e = "wrong number of descriptors for the op";
		goto fail;
	}
	body = nsh_bodylens[m->op];
	if (len < sizeof(h) + body) {
		e = "buffer too small";
		goto fail;
	}
	memset(&h, 0, sizeof(h));
	h.op = (uint16_t)m->op;
	h.nfds = (uint16_t)m->nfds;
	h.len = (uint32_t)body;
	memcpy(buf, &h, sizeof(h));
	if (body > 0)
		memcpy(buf + sizeof(h), &m->u, body);
	return (int)(sizeof(h) + body);
 fail:
	if (err != NULL)
		*err = e;
	return -1;
}

int
nsh_proto_decode(const uint8_t *buf, size_t len, unsigned nfds,
    struct nsh_msg *m, const char **err)
{
	struct nsh_hdr	 h;
	const char	*e;

	memset(m, 0, sizeof(*m));
	if (len < sizeof(h)) {
		e = "record shorter than a header";
		goto fail;
	}
	memcpy(&h, buf, sizeof(h));
	if (h.op >= NSH_OP__COUNT) {
		e = "unknown op";
		goto fail;
	}
	if (h.len != nsh_bodylens[h.op] || len - sizeof(h) != h.len) {
		e = "record length is not the op's";
		goto fail;
	}
	if (h.nfds != nfds) {
		e = "descriptor count differs from the header's";
		goto fail;
	}
	m->op = (enum nsh_op)h.op;
	m->nfds = h.nfds;
	if (h.len > 0)
		memcpy(&m->u, buf + sizeof(h), h.len);
	if ((e = nsh_check(m)) != NULL)
		goto fail;
	if (m->nfds != nsh_fds_of(m)) {
		e = "wrong number of descriptors for the op";
		goto fail;
	}
	return 0;
 fail:
	memset(m, 0, sizeof(*m));
	if (err != NULL)
		*err = e;
	return -1;
}

int
nsh_proto_send(int fd, const struct nsh_msg *m, const int *fds)
{
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(int) * NSH_FDS_MAX)];
	} cmsgbuf;
	uint8_t		 buf[NSH_MSG_MAX];
	struct msghdr	 msg;
	struct cmsghdr	*cmsg;
	struct iovec	 iov;
	ssize_t		 r;
	int		 n;

	if ((n = nsh_proto_encode(m, buf, sizeof(buf), NULL)) == -1) {
		errno = EINVAL;
		return -1;
	}
	memset(&msg, 0, sizeof(msg));
	iov.iov_base = buf;
	iov.iov_len = (size_t)n;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (m->nfds > 0) {
		memset(&cmsgbuf, 0, sizeof(cmsgbuf));
		msg.msg_control = cmsgbuf.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * m->nfds);
		cmsg = CMSG_FIRSTHDR(&msg);
		cmsg->cmsg_level = SOL_SOCKET;
		cmsg->cmsg_type = SCM_RIGHTS;
		cmsg->cmsg_len = CMSG_LEN(sizeof(int) * m->nfds);
		memcpy(CMSG_DATA(cmsg), fds, sizeof(int) * m->nfds);
	}
	do
		r = sendmsg(fd, &msg, MSG_NOSIGNAL);
	while (r == -1 && errno == EINTR);
	if (r == -1)
		return -1;
	if (r != n) {
		/* A SEQPACKET record goes whole or not at all. */
		errno = EMSGSIZE;
		return -1;
	}
	return 0;
}

/* 1 if fd is readable, 0 on timeout, -1 on error. */
static int
nsh_wait(int fd, int timeout_ms)
{
	struct pollfd	 pfd;
	struct timespec	 now, end;
	int		 left, r;

	if (timeout_ms < 0)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += timeout_ms / 1000;
	end.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		left = (int)((end.tv_sec - now.tv_sec) * 1000 +
		    (end.tv_nsec - now.tv_nsec) / 1000000L);
		if (left < 0)
			left = 0;
		pfd.fd = fd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		r = poll(&pfd, 1, left);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1)
			return -1;
		return r > 0 ? 1 : 0;
	}
}

int
nsh_proto_recv(int fd, struct nsh_msg *m, int *fds, int timeout_ms,
    const char **err)
{
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(int) *
				    (NSH_FDS_MAX + 1))];
	} cmsgbuf;
	uint8_t		 buf[NSH_MSG_MAX + 1];
	struct msghdr	 msg;
	struct cmsghdr	*cmsg;
	struct iovec	 iov;
	const char	*e = NULL;
	ssize_t		 r;
	size_t		 n, i, nfds = 0;
	int		 got[NSH_FDS_MAX + 1], w;

	for (i = 0; i < NSH_FDS_MAX; i++)
		fds[i] = -1;
	memset(m, 0, sizeof(*m));
	if ((w = nsh_wait(fd, timeout_ms)) != 1) {
		if (err != NULL)
			*err = w == 0 ? "timed out" : "poll failed";
		if (w == 0)
			errno = ETIMEDOUT;
		return -1;
	}
	memset(&msg, 0, sizeof(msg));
	memset(&cmsgbuf, 0, sizeof(cmsgbuf));
	iov.iov_base = buf;
	iov.iov_len = sizeof(buf);
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cmsgbuf.buf;
	msg.msg_controllen = sizeof(cmsgbuf.buf);
	do
		r = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
	while (r == -1 && errno == EINTR);
	if (r == -1 && errno == ECONNRESET)
		return 1;	/* the peer closed with our message unread */
	if (r == -1) {
		if (err != NULL)
			*err = "recvmsg failed";
		return -1;
	}
	/* Collect every descriptor first, so each failure can close them. */
	for (cmsg = CMSG_FIRSTHDR(&msg); cmsg != NULL;
	    cmsg = CMSG_NXTHDR(&msg, cmsg)) {
		if (cmsg->cmsg_level != SOL_SOCKET ||
		    cmsg->cmsg_type != SCM_RIGHTS) {
			e = "unexpected control message";
			continue;
		}
		n = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < n; i++) {
			int	one;

			memcpy(&one, CMSG_DATA(cmsg) + i * sizeof(int),
			    sizeof(int));
			if (nfds < NSH_FDS_MAX + 1)
				got[nfds++] = one;
			else {
				close(one);
				e = "too many descriptors";
			}
		}
	}
	if (e == NULL && (msg.msg_flags & MSG_CTRUNC) != 0)
		e = "descriptors truncated (MSG_CTRUNC)";
	if (e == NULL && (msg.msg_flags & MSG_TRUNC) != 0)
		e = "truncated record";
	if (e == NULL && r == 0 && nfds == 0) {
		/* SEQPACKET: a zero-length read is the peer's close. */
		return 1;
	}
	if (e == NULL && nfds > NSH_FDS_MAX)
		e = "too many descriptors";
	if (e == NULL)
		(void)nsh_proto_decode(buf, (size_t)r, (unsigned)nfds, m, &e);
	if (e != NULL) {
		for (i = 0; i < nfds; i++)
			close(got[i]);
		memset(m, 0, sizeof(*m));
		if (err != NULL)
			*err = e;
		errno = EPROTO;
		return -1;
	}
	for (i = 0; i < nfds; i++)
		fds[i] = got[i];
	return 0;
}

void
nsh_proto_reply(struct nsh_msg *m, unsigned op, int error, const char *fmt,
    ...)
{
	va_list	ap;
	size_t	i;

	memset(m, 0, sizeof(*m));
	m->op = NSH_OP_REPLY;
	m->u.reply.op = (uint16_t)op;
	m->u.reply.error = error;
	if (error == 0 || fmt == NULL) {
		if (error != 0)
			snprintf(m->u.reply.text, sizeof(m->u.reply.text),
			    "%s", strerror(error));
		return;
	}
	va_start(ap, fmt);
	vsnprintf(m->u.reply.text, sizeof(m->u.reply.text), fmt, ap);
	va_end(ap);
	/* Keep the text within the protocol's alphabet. */
	for (i = 0; m->u.reply.text[i] != '\0'; i++)
		if ((unsigned char)m->u.reply.text[i] < 0x20 ||
		    (unsigned char)m->u.reply.text[i] > 0x7e)
			m->u.reply.text[i] = '?';
	if (m->u.reply.text[0] == '\0')
		snprintf(m->u.reply.text, sizeof(m->u.reply.text), "%s",
		    strerror(error));
}
