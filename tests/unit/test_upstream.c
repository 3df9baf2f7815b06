/*
 * test_upstream.c - proxy/upstream.c against real loopback sockets: a
 * connection made inside connect(2) (as a peer on this host answers) is
 * still reported from the event loop, never from upstream_connect_start;
 * a refused address is skipped for the next one; when every address
 * refuses, the callback gets the last errno and index; out of descriptors,
 * the callback gets EMFILE at once, which upstream_err_local() calls
 * moatd's own shortage.
 *
 * "Refused" is a loopback port that was bound and closed again: nothing
 * listens there, so the kernel answers the SYN with a RST at once.
 */
#include "config.h"

#include <sys/socket.h>
#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/CUnit.h>
#include <event2/event.h>

#include "proxy/upstream.h"
#include "tests/unit/unit.h"

#define DEADLINE_MS	5000	/* a test that needs longer has failed */

struct result {
	int	calls;
	int	fd;
	size_t	idx;
	int	err;
};

static void
on_result(int fd, size_t idx, int err, void *arg)
{
	struct result *r = arg;

	r->calls++;
	r->fd = fd;
	r->idx = idx;
	r->err = err;
}

/* A loopback port: listening (listen_fd >= 0 kept open) or closed. */
static uint16_t
loopback_port(int *listen_fd)
{
	struct sockaddr_in	sin;
	socklen_t		slen = sizeof(sin);
	int			fd;
	uint16_t		port;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CU_ASSERT_FATAL(fd >= 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CU_ASSERT_FATAL(bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
	CU_ASSERT_FATAL(getsockname(fd, (struct sockaddr *)&sin, &slen) == 0);
	port = ntohs(sin.sin_port);
	if (listen_fd != NULL) {
		CU_ASSERT_FATAL(listen(fd, 8) == 0);
		*listen_fd = fd;
	} else
		close(fd);
	return port;
}

/* 127.0.0.host */
static void
loopback_addr(struct policy_addr *a, unsigned host)
{
	memset(a, 0, sizeof(*a));
	a->family = AF_INET;
	a->u.v4.s_addr = htonl((INADDR_LOOPBACK & ~0xffu) | host);
}

static int
fcntl_nonblock(int fd)
{
	int	fl = fcntl(fd, F_GETFL);

	return fl != -1 && (fl & O_NONBLOCK) != 0;
}

/* Runs the loop until the callback came, or the deadline passed. */
static void
run_until_result(struct event_base *base, struct result *r)
{
	struct timeval	tv = { 0, 10 * 1000 };
	int		i;

	for (i = 0; i < DEADLINE_MS / 10 && r->calls == 0; i++) {
		event_base_loopexit(base, &tv);
		event_base_dispatch(base);
	}
}

/* The peer named by fd's remote address is the one behind lfd. */
static int
same_peer(int fd, int lfd)
{
	struct sockaddr_in	a, b;
	socklen_t		al = sizeof(a), bl = sizeof(b);

	if (getpeername(fd, (struct sockaddr *)&a, &al) == -1 ||
	    getsockname(lfd, (struct sockaddr *)&b, &bl) == -1)
		return 0;
	return a.sin_port == b.sin_port;
}

/* The result is the connection to lfd's port, through address idx. */
static void
assert_connected(const struct result *r, size_t idx, int lfd)
{
	CU_ASSERT_EQUAL(r->calls, 1);
	CU_ASSERT_EQUAL(r->err, 0);
	CU_ASSERT_EQUAL(r->idx, idx);
	CU_ASSERT_FATAL(r->fd >= 0);
	CU_ASSERT(same_peer(r->fd, lfd));
}

static void
test_upstream_loopback_connects_later(void)
{
	struct event_base	*base = event_base_new();
	struct policy_addr	 a;
	struct result		 r = { 0, -1, 0, 0 };
	int			 lfd = -1;
	uint16_t		 port = loopback_port(&lfd);

	CU_ASSERT_FATAL(base != NULL);
	loopback_addr(&a, 1);
	CU_ASSERT_FATAL(upstream_connect_start(base, &a, 1, port, 2000,
	    on_result, &r) != NULL);
	/* Connected inside connect(2) or not: no call from the start. */
	CU_ASSERT_EQUAL(r.calls, 0);
	run_until_result(base, &r);
	assert_connected(&r, 0, lfd);
	CU_ASSERT(fcntl_nonblock(r.fd));
	close(r.fd);
	close(lfd);
	event_base_free(base);
}

static void
test_upstream_refused_then_next(void)
{
	struct event_base	*base = event_base_new();
	struct policy_addr	 a[3];
	struct result		 r = { 0, -1, 0, 0 };
	int			 lfd = -1;
	uint16_t		 port = loopback_port(&lfd);

	CU_ASSERT_FATAL(base != NULL);
	/* 127.0.0.2 and 127.0.0.3 have nothing on the port; .1 has. */
	loopback_addr(&a[0], 2);
	loopback_addr(&a[1], 3);
	loopback_addr(&a[2], 1);
	CU_ASSERT_FATAL(upstream_connect_start(base, a, 3, port, 2000,
	    on_result, &r) != NULL);
	CU_ASSERT_EQUAL(r.calls, 0);
	run_until_result(base, &r);
	assert_connected(&r, 2, lfd);
	close(r.fd);
	close(lfd);
	event_base_free(base);
}

static void
test_upstream_all_refused(void)
{
	struct event_base	*base = event_base_new();
	struct policy_addr	 a[2];
	struct result		 r = { 0, -1, 0, 0 };
	uint16_t		 port = loopback_port(NULL);

	CU_ASSERT_FATAL(base != NULL);
	loopback_addr(&a[0], 1);
	loopback_addr(&a[1], 2);
	CU_ASSERT_FATAL(upstream_connect_start(base, a, 2, port, 2000,
	    on_result, &r) != NULL);
	CU_ASSERT_EQUAL(r.calls, 0);
	run_until_result(base, &r);
	CU_ASSERT_EQUAL(r.calls, 1);
	CU_ASSERT_EQUAL(r.fd, -1);
	CU_ASSERT_EQUAL(r.err, ECONNREFUSED);
	CU_ASSERT_EQUAL(r.idx, 1);
	event_base_free(base);
}

static void
test_upstream_cancel(void)
{
	struct event_base	*base = event_base_new();
	struct upstream_connect	*uc;
	struct policy_addr	 a;
	struct result		 r = { 0, -1, 0, 0 };
	struct timeval		 tv = { 0, 50 * 1000 };
	int			 lfd = -1;
	uint16_t		 port = loopback_port(&lfd);

	CU_ASSERT_FATAL(base != NULL);
	loopback_addr(&a, 1);
	uc = upstream_connect_start(base, &a, 1, port, 2000, on_result, &r);
	CU_ASSERT_FATAL(uc != NULL);
	/* Cancelled before the loop ran: the result, even one known
	 * already, is never delivered. */
	upstream_connect_cancel(uc);
	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
	CU_ASSERT_EQUAL(r.calls, 0);
	close(lfd);
	event_base_free(base);
}

/*
 * No descriptor for the socket: EMFILE, reported from the loop as for any
 * failure (the listening address, last, cannot be reached either), and
 * it is local, unlike a refusal.
 */
static void
test_upstream_out_of_fds(void)
{
	struct event_base	*base = event_base_new();
	struct policy_addr	 a[2];
	struct result		 r = { 0, -1, 0, 0 };
	struct unit_fdfill	 f;
	int			 lfd = -1;
	uint16_t		 port = loopback_port(&lfd);

	CU_ASSERT_FATAL(base != NULL);
	loopback_addr(&a[0], 2);
	loopback_addr(&a[1], 1);
	CU_ASSERT_FATAL(unit_fdfill_start(&f) == 0);
	CU_ASSERT(upstream_connect_start(base, a, 2, port, 2000, on_result,
	    &r) != NULL);
	CU_ASSERT_EQUAL(r.calls, 0);
	run_until_result(base, &r);
	unit_fdfill_end(&f);
	CU_ASSERT_EQUAL(r.calls, 1);
	CU_ASSERT_EQUAL(r.fd, -1);
	CU_ASSERT_EQUAL(r.err, EMFILE);
	CU_ASSERT(upstream_err_local(r.err));
	CU_ASSERT(upstream_err_local(ENFILE));
	CU_ASSERT(upstream_err_local(ENOBUFS));
	CU_ASSERT_FALSE(upstream_err_local(ECONNREFUSED));
	CU_ASSERT_FALSE(upstream_err_local(EHOSTUNREACH));
	CU_ASSERT_FALSE(upstream_err_local(ETIMEDOUT));
	if (r.fd >= 0)
		close(r.fd);
	close(lfd);
	event_base_free(base);
}

void
test_upstream_register(void)
{
	CU_pSuite s = CU_add_suite("upstream", NULL, NULL);

	CU_add_test(s, "a loopback peer: connected, reported from the loop",
	    test_upstream_loopback_connects_later);
	CU_add_test(s, "refused addresses are skipped for the next",
	    test_upstream_refused_then_next);
	CU_add_test(s, "every address refused: last errno and index",
	    test_upstream_all_refused);
	CU_add_test(s, "a cancelled connect never calls back",
	    test_upstream_cancel);
	CU_add_test(s, "out of descriptors: EMFILE, which is local",
	    test_upstream_out_of_fds);
}
