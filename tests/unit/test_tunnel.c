/*
 * test_tunnel.c - the spliced relay of proxy/tunnel.c between two real
 * socket pairs: every byte arrives once and in order, each side's EOF is
 * passed on when (and only when) that side has finished, and the tunnel
 * ends once both have.
 *
 * The peers are Unix stream socket pairs: each write(2) on them stays a
 * buffer of its own in the receiver's queue, and splice(2) moves each into
 * a pipe slot of its own, so a few hundred small writes fill a pipe long
 * before its byte capacity.  That is the case the pump must get right when
 * it reads on after a peer's FIN.
 */
#include "config.h"

#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <CUnit/CUnit.h>
#include <event2/buffer.h>
#include <event2/event.h>

#include "proxy/tunnel.h"
#include "proxy/worker.h"
#include "tests/unit/unit.h"

#define DEADLINE_MS	5000	/* a test that needs longer has failed */
#define SMALL_WRITES	150	/* more than the 64 slots of a 256 KiB pipe */

struct rig {
	struct worker	 w;
	int		 ca, cm;	/* client app side, moatd side */
	int		 um, ua;	/* upstream moatd side, app side */
};

static uint64_t
now_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int
rig_open(struct rig *r)
{
	int	c[2], u[2];

	memset(r, 0, sizeof(*r));
	r->w.done_fd = -1;
	LIST_INIT(&r->w.tunnels);
	if ((r->w.base = event_base_new()) == NULL)
		return -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, c) == -1 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, u) == -1)
		return -1;
	r->ca = c[0];
	r->cm = c[1];
	r->um = u[0];
	r->ua = u[1];
	return 0;
}

static int
rig_start(struct rig *r, struct evbuffer *to_up, struct evbuffer *to_client)
{
	struct tunnel_meta	m;

	memset(&m, 0, sizeof(m));
	m.id = 1;
	m.sandbox = "unit";
	m.proto = "connect";
	m.client = "unix";
	m.host = "origin.test";
	m.port = 443;
	m.rule = "r";
	m.t_start = now_ms();
	return tunnel_start(&r->w, r->cm, r->um, to_up, to_client, &m, 60000);
}

static void
rig_close(struct rig *r)
{
	size_t	i;

	/* A tunnel still open is a failure already reported; end it. */
	while (!LIST_EMPTY(&r->w.tunnels))
		tunnel_abort(LIST_FIRST(&r->w.tunnels));
	for (i = 0; i < r->w.npipes; i++) {
		close(r->w.pipes[i][0]);
		close(r->w.pipes[i][1]);
	}
	close(r->ca);
	close(r->ua);
	event_base_free(r->w.base);
}

/*
 * One pass of the worker's loop, a short wait for fd, then every byte fd
 * has (up to cap) into buf.  Returns 1 at fd's EOF, -1 on an error, else 0.
 */
static int
rig_step(struct rig *r, int fd, char *buf, size_t cap, size_t *len)
{
	struct pollfd	pfd = { .fd = fd, .events = POLLIN };
	ssize_t		n;

	event_base_loop(r->w.base, EVLOOP_NONBLOCK);
	(void)poll(&pfd, 1, 5);
	while (*len < cap) {
		n = read(fd, buf + *len, cap - *len);
		if (n > 0) {
			*len += (size_t)n;
			continue;
		}
		if (n == 0)
			return 1;
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	}
	return 0;
}

/*
 * Runs the worker's loop and reads what reaches fd into buf: until fd says
 * EOF (returns 1; more than cap bytes is a failure, -1), until cap bytes
 * are there when want_eof is 0 (returns 0), or until the deadline (-1).
 */
static int
rig_read(struct rig *r, int fd, char *buf, size_t cap, size_t *len,
    int want_eof)
{
	uint64_t	dl = now_ms() + DEADLINE_MS;
	int		rc;

	while (now_ms() < dl) {
		if ((rc = rig_step(r, fd, buf, cap, len)) != 0)
			return rc;
		if (*len == cap)
			return want_eof ? -1 : 0;
	}
	return -1;
}

/* Runs the loop until the tunnel has ended (1) or the deadline (0). */
static int
rig_wait_end(struct rig *r)
{
	uint64_t	dl = now_ms() + DEADLINE_MS;

	while (now_ms() < dl) {
		if (LIST_EMPTY(&r->w.tunnels))
			return 1;
		event_base_loop(r->w.base, EVLOOP_NONBLOCK);
		(void)poll(NULL, 0, 2);
	}
	return LIST_EMPTY(&r->w.tunnels);
}

static void
fill(char *p, size_t n, unsigned seed)
{
	size_t	i;

	for (i = 0; i < n; i++)
		p[i] = (char)('a' + (i * 7 + seed) % 26);
}

/*
 * The upstream sends many small writes and its FIN before moatd reads any
 * of them: the pump reads on after the FIN until the pipe is full, and
 * must write all of it and then the EOF, in order, with nothing lost.
 */
static void
test_tunnel_fin_behind_full_pipe(void)
{
	struct rig	r;
	char		want[SMALL_WRITES * 10], got[sizeof(want) + 16];
	size_t		len = 0, i;
	char		b;

	CU_ASSERT_FATAL(rig_open(&r) == 0);
	fill(want, sizeof(want), 3);
	for (i = 0; i < SMALL_WRITES; i++)
		CU_ASSERT_FATAL(write(r.ua, want + i * 10, 10) == 10);
	CU_ASSERT_FATAL(shutdown(r.ua, SHUT_WR) == 0);
	CU_ASSERT_FATAL(rig_start(&r, NULL, NULL) == 0);

	CU_ASSERT_EQUAL(rig_read(&r, r.ca, got, sizeof(got), &len, 1), 1);
	CU_ASSERT_EQUAL(len, sizeof(want));
	CU_ASSERT(memcmp(got, want, sizeof(want)) == 0);
	/* The client's side is still open: the tunnel is too. */
	CU_ASSERT_FALSE(LIST_EMPTY(&r.w.tunnels));
	CU_ASSERT_EQUAL(read(r.ua, &b, 1), -1);	/* no EOF for the origin */

	CU_ASSERT_FATAL(shutdown(r.ca, SHUT_WR) == 0);
	CU_ASSERT(rig_wait_end(&r));
	len = 0;
	CU_ASSERT_EQUAL(rig_read(&r, r.ua, got, sizeof(got), &len, 1), 1);
	CU_ASSERT_EQUAL(len, 0);
	rig_close(&r);
}

/*
 * The client half-closes first: the origin gets the request and then its
 * EOF while it can still answer; the answer and its EOF reach the client;
 * then the tunnel ends.
 */
static void
test_tunnel_client_half_close(void)
{
	struct rig	r;
	char		req[5000], resp[70000], got[sizeof(resp) + 16];
	size_t		len = 0;

	CU_ASSERT_FATAL(rig_open(&r) == 0);
	CU_ASSERT_FATAL(rig_start(&r, NULL, NULL) == 0);
	fill(req, sizeof(req), 1);
	fill(resp, sizeof(resp), 2);
	CU_ASSERT_FATAL(write(r.ca, req, sizeof(req)) == (ssize_t)sizeof(req));
	CU_ASSERT_FATAL(shutdown(r.ca, SHUT_WR) == 0);

	CU_ASSERT_EQUAL(rig_read(&r, r.ua, got, sizeof(got), &len, 1), 1);
	CU_ASSERT_EQUAL(len, sizeof(req));
	CU_ASSERT(memcmp(got, req, sizeof(req)) == 0);
	CU_ASSERT_FALSE(LIST_EMPTY(&r.w.tunnels));

	/* The answer is bigger than the socket takes at once. */
	{
		size_t	off = 0;
		ssize_t	n;
		uint64_t dl = now_ms() + DEADLINE_MS;

		len = 0;
		while (off < sizeof(resp) && now_ms() < dl) {
			n = write(r.ua, resp + off, sizeof(resp) - off);
			if (n > 0)
				off += (size_t)n;
			else
				CU_ASSERT_FATAL(rig_step(&r, r.ca, got,
				    sizeof(got), &len) == 0);
		}
		CU_ASSERT_EQUAL_FATAL(off, sizeof(resp));
	}
	CU_ASSERT_FATAL(shutdown(r.ua, SHUT_WR) == 0);
	CU_ASSERT_EQUAL(rig_read(&r, r.ca, got, sizeof(got), &len, 1), 1);
	CU_ASSERT_EQUAL(len, sizeof(resp));
	CU_ASSERT(memcmp(got, resp, sizeof(resp)) == 0);
	CU_ASSERT(rig_wait_end(&r));
	rig_close(&r);
}

/*
 * Bytes queued before the hand-over (moatd's 200, a client's early bytes)
 * go out first, before anything spliced.
 */
static void
test_tunnel_pending_first(void)
{
	struct rig	 r;
	struct evbuffer	*up = evbuffer_new(), *down = evbuffer_new();
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	char		 got[256];
	size_t		 len = 0;

	CU_ASSERT_FATAL(up != NULL && down != NULL);
	CU_ASSERT_FATAL(rig_open(&r) == 0);
	evbuffer_add(up, "early,", 6);
	evbuffer_add(down, ok, sizeof(ok) - 1);
	CU_ASSERT_FATAL(write(r.ca, "late", 4) == 4);
	CU_ASSERT_FATAL(write(r.ua, "answer", 6) == 6);
	CU_ASSERT_FATAL(rig_start(&r, up, down) == 0);
	CU_ASSERT_EQUAL(evbuffer_get_length(up), 0);	/* moved out */

	CU_ASSERT_EQUAL(rig_read(&r, r.ua, got, 10, &len, 0), 0);
	CU_ASSERT(len == 10 && memcmp(got, "early,late", 10) == 0);
	len = 0;
	CU_ASSERT_EQUAL(rig_read(&r, r.ca, got, sizeof(ok) - 1 + 6, &len, 0),
	    0);
	CU_ASSERT(len == sizeof(ok) - 1 + 6 &&
	    memcmp(got, ok, sizeof(ok) - 1) == 0 &&
	    memcmp(got + sizeof(ok) - 1, "answer", 6) == 0);

	/* Both sides close: the tunnel ends, each peer sees EOF. */
	CU_ASSERT_FATAL(shutdown(r.ca, SHUT_WR) == 0);
	CU_ASSERT_FATAL(shutdown(r.ua, SHUT_WR) == 0);
	CU_ASSERT(rig_wait_end(&r));
	len = 0;
	CU_ASSERT_EQUAL(rig_read(&r, r.ca, got, sizeof(got), &len, 1), 1);
	CU_ASSERT_EQUAL(rig_read(&r, r.ua, got, sizeof(got), &len, 1), 1);
	CU_ASSERT_EQUAL(len, 0);
	evbuffer_free(up);
	evbuffer_free(down);
	rig_close(&r);
}

void
test_tunnel_register(void)
{
	CU_pSuite s = CU_add_suite("tunnel", NULL, NULL);

	CU_add_test(s, "a FIN behind a full pipe: every byte, then EOF",
	    test_tunnel_fin_behind_full_pipe);
	CU_add_test(s, "the client half-closes first",
	    test_tunnel_client_half_close);
	CU_add_test(s, "bytes queued before the hand-over go first",
	    test_tunnel_pending_first);
}
