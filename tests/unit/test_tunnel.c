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
 *
 * A direction copies its first TUNNEL_SPLICE_AFTER bytes and splices the
 * rest: the worker's pool says which (a pipe taken goes back to it), and
 * w.nheld how many buffers hold bytes a side did not take yet.
 */
#include "config.h"

#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <CUnit/CUnit.h>
#include <event2/buffer.h>
#include <event2/event.h>

#include "proxy/audit.h"
#include "proxy/tunnel.h"
#include "proxy/util.h"
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
fin_behind_full(struct unit_fdfill *f)
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
	if (f != NULL)
		CU_ASSERT_FATAL(unit_fdfill_start(f) == 0);
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
	if (f != NULL) {
		CU_ASSERT_EQUAL(r.w.npipes, 0);	/* it copied */
		unit_fdfill_end(f);
	}
	rig_close(&r);
}

static void
test_tunnel_fin_behind_full_pipe(void)
{
	fin_behind_full(NULL);
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
	EVBUFFER_ADD_LIT(up, "early,");
	evbuffer_add(down, ok, sizeof(ok) - 1);
	CU_ASSERT_FATAL(WRITE_LIT(r.ca, "late") == 4);
	CU_ASSERT_FATAL(WRITE_LIT(r.ua, "answer") == 6);
	CU_ASSERT_FATAL(rig_start(&r, up, down) == 0);
	CU_ASSERT_EQUAL(evbuffer_get_length(up), 0);	/* moved out */

	CU_ASSERT_EQUAL(rig_read(&r, r.ua, got, 10, &len, 0), 0);
	CU_ASSERT(len == 10 && MEMCMP_LIT(got, "early,late") == 0);
	len = 0;
	CU_ASSERT_EQUAL(rig_read(&r, r.ca, got, sizeof(ok) - 1 + 6, &len, 0),
	    0);
	CU_ASSERT(len == sizeof(ok) - 1 + 6 &&
	    memcmp(got, ok, sizeof(ok) - 1) == 0 &&
	    MEMCMP_LIT(got + sizeof(ok) - 1, "answer") == 0);

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

/* The audit line of the tunnel that just ended, from the file at path. */
static int
audit_last_line(const char *path, char *buf, size_t cap)
{
	FILE	*fp;
	int	 found = 0;

	if ((fp = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(buf, (int)cap, fp) != NULL)
		found = 1;
	fclose(fp);
	return found ? 0 : -1;
}

/*
 * Out of descriptors, no pipe can be had: the tunnel copies through a
 * buffer instead, and still moves every byte both ways, passes each EOF
 * on, ends with "end":"eof" and counts the bytes in its close line.
 * Without the fallback, the first burst ends the tunnel ("internal").
 */
static void
test_tunnel_copy_without_pipes(void)
{
	struct rig	 r;
	struct unit_fdfill	 f;
	static char	 req[5000], resp[300000], got[sizeof(resp) + 16];
	char		 path[] = "/tmp/moat-unit-audit-XXXXXX", line[2048];
	size_t		 len = 0, off = 0;
	ssize_t		 n;
	uint64_t	 dl;
	int		 afd, filled;
	void		(*osig)(int);

	CU_ASSERT_FATAL((afd = mkstemp(path)) != -1);
	close(afd);
	CU_ASSERT_FATAL(audit_start(path) == 0);
	CU_ASSERT_FATAL(rig_open(&r) == 0);
	fill(req, sizeof(req), 4);
	fill(resp, sizeof(resp), 5);
	filled = unit_fdfill_start(&f);
	CU_ASSERT_EQUAL(filled, 0);
	if (filled == 0) {
		int p[2];

		CU_ASSERT_EQUAL(pipe(p), -1);	/* the premise */
	}
	/* A tunnel that died must fail the checks, not kill the run. */
	osig = signal(SIGPIPE, SIG_IGN);
	CU_ASSERT(rig_start(&r, NULL, NULL) == 0);

	CU_ASSERT(write(r.ca, req, sizeof(req)) == (ssize_t)sizeof(req));
	CU_ASSERT(shutdown(r.ca, SHUT_WR) == 0);
	CU_ASSERT_EQUAL(rig_read(&r, r.ua, got, sizeof(got), &len, 1), 1);
	CU_ASSERT_EQUAL(len, sizeof(req));
	CU_ASSERT(memcmp(got, req, sizeof(req)) == 0);
	CU_ASSERT_FALSE(LIST_EMPTY(&r.w.tunnels));

	/* Far more than a socket's buffer: the copy blocks and resumes. */
	len = 0;
	dl = now_ms() + DEADLINE_MS;
	while (off < sizeof(resp) && now_ms() < dl) {
		n = write(r.ua, resp + off, sizeof(resp) - off);
		if (n > 0)
			off += (size_t)n;
		else if (rig_step(&r, r.ca, got, sizeof(got), &len) != 0)
			break;
	}
	CU_ASSERT_EQUAL(off, sizeof(resp));
	CU_ASSERT(shutdown(r.ua, SHUT_WR) == 0);
	CU_ASSERT_EQUAL(rig_read(&r, r.ca, got, sizeof(got), &len, 1), 1);
	CU_ASSERT_EQUAL(len, sizeof(resp));
	CU_ASSERT(memcmp(got, resp, sizeof(resp)) == 0);
	CU_ASSERT(rig_wait_end(&r));
	/* No pipe was ever had, so none went back to the pool. */
	CU_ASSERT_EQUAL(r.w.npipes, 0);
	CU_ASSERT_EQUAL(r.w.nheld, 0);
	if (filled == 0)
		unit_fdfill_end(&f);
	signal(SIGPIPE, osig);

	audit_stop();
	CU_ASSERT_FATAL(audit_last_line(path, line, sizeof(line)) == 0);
	CU_ASSERT(strstr(line, "\"event\":\"close\"") != NULL);
	CU_ASSERT(strstr(line, "\"bytes_up\":5000,") != NULL);
	CU_ASSERT(strstr(line, "\"bytes_down\":300000,") != NULL);
	CU_ASSERT(strstr(line, "\"end\":\"eof\"") != NULL);
	unlink(path);
	rig_close(&r);
}

/*
 * Writes len bytes of p to fd while the worker's loop runs and the other
 * end's reader keeps up; what arrives at rfd goes to got.  Returns the
 * bytes written; *held_seen is the most buffers held at once meanwhile.
 */
static size_t
rig_feed(struct rig *r, int fd, const char *p, size_t len, int rfd,
    char *got, size_t cap, size_t *glen, size_t *held_seen)
{
	uint64_t	dl = now_ms() + DEADLINE_MS;
	size_t		off = 0;
	ssize_t		n;

	while (off < len && now_ms() < dl) {
		n = write(fd, p + off, len - off);
		if (n > 0)
			off += (size_t)n;
		if (rig_step(r, rfd, got, cap, glen) != 0)
			break;
		if (r->w.nheld > *held_seen)
			*held_seen = r->w.nheld;
	}
	return off;
}

/* A small send buffer on moatd's side of the client: copies block. */
static void
rig_small_sndbuf(struct rig *r)
{
	int	sz = 4096;

	CU_ASSERT_FATAL(setsockopt(r->cm, SOL_SOCKET, SO_SNDBUF, &sz,
	    sizeof(sz)) == 0);
}

/*
 * Below TUNNEL_SPLICE_AFTER a direction copies (no pipe is taken), holds
 * what the client's socket did not take and frees it once written; past
 * it the direction splices (a pipe went back to the pool).  Then the
 * other direction goes past it too.  Every byte arrives once and in
 * order both ways; the tunnel ends with nothing held.
 */
static void
test_tunnel_copy_then_splice(void)
{
	struct rig	 r;
	static char	 down[256 << 10], up[3000];
	static char	 got[sizeof(down) + 16];
	size_t		 len = 0, held = 0, small = 1000;

	CU_ASSERT_FATAL(rig_open(&r) == 0);
	rig_small_sndbuf(&r);
	fill(down, sizeof(down), 6);
	fill(up, sizeof(up), 7);
	CU_ASSERT_FATAL(rig_start(&r, NULL, NULL) == 0);

	/* A small answer and a small request: copied, no pipe taken. */
	CU_ASSERT_FATAL(write(r.ua, down, small) == (ssize_t)small);
	CU_ASSERT_EQUAL(rig_read(&r, r.ca, got, small, &len, 0), 0);
	CU_ASSERT(len == small && memcmp(got, down, small) == 0);
	CU_ASSERT_FATAL(write(r.ca, up, sizeof(up)) == (ssize_t)sizeof(up));
	len = 0;
	CU_ASSERT_EQUAL(rig_read(&r, r.ua, got, sizeof(up), &len, 0), 0);
	CU_ASSERT(len == sizeof(up) && memcmp(got, up, sizeof(up)) == 0);
	CU_ASSERT_EQUAL(r.w.npipes, 0);
	CU_ASSERT_EQUAL(r.w.nheld, 0);

	/* Then far past the threshold, faster than the client's socket
	 * takes it: held at first, spliced after. */
	len = small;
	memcpy(got, down, small);
	CU_ASSERT_EQUAL(rig_feed(&r, r.ua, down + small, sizeof(down) - small,
	    r.ca, got, sizeof(got), &len, &held), sizeof(down) - small);
	CU_ASSERT(held >= 1);
	CU_ASSERT_FATAL(shutdown(r.ua, SHUT_WR) == 0);
	CU_ASSERT_EQUAL(rig_read(&r, r.ca, got, sizeof(got), &len, 1), 1);
	CU_ASSERT_EQUAL(len, sizeof(down));
	CU_ASSERT(memcmp(got, down, sizeof(down)) == 0);
	CU_ASSERT(r.w.npipes >= 1);	/* it spliced */
	CU_ASSERT_EQUAL(r.w.nheld, 0);

	/* The other way past the threshold too, after its small request,
	 * then the client's EOF. */
	len = 0;
	held = 0;
	CU_ASSERT_EQUAL(rig_feed(&r, r.ca, down, sizeof(down), r.ua, got,
	    sizeof(got), &len, &held), sizeof(down));
	CU_ASSERT_FATAL(shutdown(r.ca, SHUT_WR) == 0);
	CU_ASSERT_EQUAL(rig_read(&r, r.ua, got, sizeof(got), &len, 1), 1);
	CU_ASSERT_EQUAL(len, sizeof(down));
	CU_ASSERT(memcmp(got, down, sizeof(down)) == 0);
	CU_ASSERT(rig_wait_end(&r));
	CU_ASSERT_EQUAL(r.w.nheld, 0);
	rig_close(&r);
}

/*
 * Half-closes while copying: the client's EOF reaches the origin, which
 * still answers; the answer and its EOF reach the client; the tunnel
 * ends.  Nothing took a pipe.
 */
static void
test_tunnel_copy_half_close(void)
{
	struct rig	r;
	char		req[700], resp[2500], got[sizeof(resp) + 16];
	size_t		len = 0;
	char		b;

	CU_ASSERT_FATAL(rig_open(&r) == 0);
	fill(req, sizeof(req), 8);
	fill(resp, sizeof(resp), 9);
	CU_ASSERT_FATAL(rig_start(&r, NULL, NULL) == 0);
	CU_ASSERT_FATAL(write(r.ca, req, sizeof(req)) == (ssize_t)sizeof(req));
	CU_ASSERT_FATAL(shutdown(r.ca, SHUT_WR) == 0);
	CU_ASSERT_EQUAL(rig_read(&r, r.ua, got, sizeof(got), &len, 1), 1);
	CU_ASSERT(len == sizeof(req) && memcmp(got, req, sizeof(req)) == 0);
	CU_ASSERT_FALSE(LIST_EMPTY(&r.w.tunnels));
	CU_ASSERT_EQUAL(read(r.ca, &b, 1), -1);	/* no EOF for the client */

	CU_ASSERT_FATAL(write(r.ua, resp, sizeof(resp)) ==
	    (ssize_t)sizeof(resp));
	CU_ASSERT_FATAL(shutdown(r.ua, SHUT_WR) == 0);
	len = 0;
	CU_ASSERT_EQUAL(rig_read(&r, r.ca, got, sizeof(got), &len, 1), 1);
	CU_ASSERT(len == sizeof(resp) && memcmp(got, resp, sizeof(resp)) == 0);
	CU_ASSERT(rig_wait_end(&r));
	CU_ASSERT_EQUAL(r.w.npipes, 0);
	CU_ASSERT_EQUAL(r.w.nheld, 0);
	rig_close(&r);
}

/*
 * A tunnel that ends while copying, with bytes held for a client that
 * stopped reading, frees them: ended by moatd (shutdown), and by the
 * client going away (the held bytes cannot be written: reset).
 */
static void
held_at_end(int client_leaves)
{
	struct rig	 r;
	static char	 resp[30000];
	uint64_t	 dl;
	char		 b;

	CU_ASSERT_FATAL(rig_open(&r) == 0);
	rig_small_sndbuf(&r);
	fill(resp, sizeof(resp), 10);
	CU_ASSERT_FATAL(rig_start(&r, NULL, NULL) == 0);
	CU_ASSERT_FATAL(write(r.ua, resp, sizeof(resp)) ==
	    (ssize_t)sizeof(resp));
	dl = now_ms() + DEADLINE_MS;
	while (r.w.nheld == 0 && now_ms() < dl) {
		event_base_loop(r.w.base, EVLOOP_NONBLOCK);
		(void)poll(NULL, 0, 2);
	}
	CU_ASSERT_EQUAL_FATAL(r.w.nheld, 1);
	CU_ASSERT(read(r.ua, &b, 1) == -1 && errno == EAGAIN);
	if (client_leaves) {
		close(r.ca);
		r.ca = -1;
		CU_ASSERT(rig_wait_end(&r));
	} else
		tunnel_abort(LIST_FIRST(&r.w.tunnels));
	CU_ASSERT(LIST_EMPTY(&r.w.tunnels));
	CU_ASSERT_EQUAL(r.w.nheld, 0);
	CU_ASSERT_EQUAL(r.w.npipes, 0);
	rig_close(&r);
}

static void
test_tunnel_held_freed_abort(void)
{
	held_at_end(0);
}

static void
test_tunnel_held_freed_reset(void)
{
	held_at_end(1);
}

/* The same with no pipe to be had: the copy reads on after the FIN. */
static void
test_tunnel_fin_copy(void)
{
	struct unit_fdfill	f;

	fin_behind_full(&f);
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
	CU_add_test(s, "out of descriptors: no pipe, the tunnel copies",
	    test_tunnel_copy_without_pipes);
	CU_add_test(s, "a FIN behind many small writes, copying",
	    test_tunnel_fin_copy);
	CU_add_test(s, "copies first, splices past the threshold",
	    test_tunnel_copy_then_splice);
	CU_add_test(s, "half-closes while copying",
	    test_tunnel_copy_half_close);
	CU_add_test(s, "held bytes freed when the tunnel is ended",
	    test_tunnel_held_freed_abort);
	CU_add_test(s, "held bytes freed when the client leaves",
	    test_tunnel_held_freed_reset);
}
