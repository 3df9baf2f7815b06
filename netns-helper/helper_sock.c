/*
 * helper_sock.c - the listening sockets moat-netns creates for moatd inside
 * a sandbox's network namespace (held sockets) or on the host side of a
 * veth.
 *
 * What it is: socket(), bind() and listen() in the namespace moat-netns
 * currently is in.  A socket belongs for its whole life to the namespace
 * it was created in, so moatd, outside, serves the sandbox's loopback
 * through it.
 *
 * What it is not: a judge of addresses.  moat-netns decides the address
 * (loopback, or the veth's host address); this file binds what it is
 * given.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "netns-helper/helper.h"

int
nsh_sock_listen(int family, int type, const void *addr, uint16_t port)
{
	struct sockaddr_storage	 ss;
	struct sockaddr_in	*sin;
	struct sockaddr_in6	*sin6;
	socklen_t		 slen;
	int			 fd, one = 1, saved;

	if ((family != AF_INET && family != AF_INET6) ||
	    (type != SOCK_STREAM && type != SOCK_DGRAM) || port == 0) {
		errno = EINVAL;
		return -1;
	}
	memset(&ss, 0, sizeof(ss));
	if (family == AF_INET) {
		sin = (struct sockaddr_in *)&ss;
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		memcpy(&sin->sin_addr, addr, sizeof(sin->sin_addr));
		slen = sizeof(*sin);
	} else {
		sin6 = (struct sockaddr_in6 *)&ss;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		memcpy(&sin6->sin6_addr, addr, sizeof(sin6->sin6_addr));
		slen = sizeof(*sin6);
	}
	if ((fd = socket(family, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) ==
	    -1)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1)
		goto fail;
	/* An IPv6 socket takes IPv6 only: IPv4 has sockets of its own. */
	if (family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY,
	    &one, sizeof(one)) == -1)
		goto fail;
	if (bind(fd, (struct sockaddr *)&ss, slen) == -1)
		goto fail;
	if (type == SOCK_STREAM && listen(fd, NSH_LISTEN_BACKLOG) == -1)
		goto fail;
	return fd;
 fail:
	saved = errno;
	close(fd);
	errno = saved;
	return -1;
}
