/*
 * test_uppool.c - proxy/uppool.c on its own: a pool on an event base of
 * its own, socketpair()s standing for upstream connections, sandboxes
 * made with sandbox_new().  Put then take with the same key gives the io
 * back; any other sandbox, identity, TLS context, host, port or address
 * does not; an io at EOF or with bytes buffered is not kept, and one the
 * upstream closes or writes to while parked goes; the idle timeout drops
 * an entry; at most UPPOOL_MAX, the oldest first; flush by sandbox.
 *
 * The event base is driven with EVLOOP_ONCE under a loopexit timeout and
 * a deadline, never a sleep: only the idle timeout test waits (tens of
 * milliseconds) for a timer.
 */
#include "config.h"

#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/CUnit.h>
#include <event2/buffer.h>
#include <event2/event.h>

#include "policy/policy.h"
#include "proxy/io.h"
#include "proxy/sandbox.h"
#include "proxy/uppool.h"
#include "proxy/util.h"
#include "tests/unit/unit.h"

#define DEADLINE_MS	5000	/* a test that needs longer has failed */
#define IDLE_MS		40	/* what the idle timeout test waits */
#define IDLE_BEFORE_MS	3000	/* ... for an entry idle this long before */
#define LONG_IDLE_MS	60000	/* entries that must not time out */

static struct event_base	*up_base;
static struct sandbox		*sb_a, *sb_b;

/* An io's events, as the test's own callback saw them. */
struct seen {
	int	ev;
};

static int	up_init(void);
static int	up_clean(void);
static void	seen_cb(struct io *, int, void *);
static struct io *mkio(int *, struct seen *);
static void	ent(struct uppool_ent *, struct sandbox *, const char *,
		    const char *, uint16_t, const char *);
static int	run_until(bool (*)(void *), void *);
static bool	pool_empty(void *);
static bool	seen_eof(void *);
static bool	refused(struct uppool *, const struct uppool_ent *,
		    struct io *);
static void	test_put_take(void);
static void	test_mismatch(void);
static void	test_unfit(void);
static void	test_retired(void);
static void	test_idle_timeout(void);
static void	test_max(void);
static void	test_flush(void);

static int
up_init(void)
{
	if ((up_base = event_base_new()) == NULL ||
	    (sb_a = sandbox_new("a", NULL)) == NULL ||
	    (sb_b = sandbox_new("b", NULL)) == NULL)
		return -1;
	return 0;
}

static int
up_clean(void)
{
	sandbox_unref(sb_a);
	sandbox_unref(sb_b);
	if (up_base != NULL)
		event_base_free(up_base);
	return 0;
}

static void
seen_cb(struct io *io, int ev, void *arg)
{
	struct seen	*s = arg;

	(void)io;
	if (s != NULL)
		s->ev |= ev;
}

/* One end of a new socketpair as an io; *peer is the upstream's end. */
static struct io *
mkio(int *peer, struct seen *s)
{
	struct io	*io;
	int		 sv[2];

	CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0, sv), 0);
	io = io_new(up_base, sv[0], seen_cb, s);
	CU_ASSERT_PTR_NOT_NULL_FATAL(io);
	*peer = sv[1];
	return io;
}

/* An entry's description, idle since now for LONG_IDLE_MS. */
static void
ent(struct uppool_ent *e, struct sandbox *sb, const char *name,
    const char *host, uint16_t port, const char *ip)
{
	memset(e, 0, sizeof(*e));
	e->sb = sb;
	e->sandbox = name;
	e->host = host;
	e->port = port;
	e->addr.family = AF_INET;
	CU_ASSERT_EQUAL_FATAL(inet_pton(AF_INET, ip, &e->addr.u.v4), 1);
	snprintf(e->ip, sizeof(e->ip), "%s", ip);
	e->idle_since = util_now_ms();
	e->idle_ms = LONG_IDLE_MS;
}

/* Runs the loop until done(arg), at most DEADLINE_MS: 0, or -1. */
static int
run_until(bool (*done)(void *), void *arg)
{
	struct timeval	tv = { 0, 20 * 1000 };
	uint64_t	end = util_now_ms() + DEADLINE_MS;

	while (!done(arg)) {
		if (util_now_ms() >= end)
			return -1;
		/* ONCE alone could block on another entry's long timer. */
		event_base_loopexit(up_base, &tv);
		event_base_loop(up_base, EVLOOP_ONCE);
	}
	return 0;
}

static bool
pool_empty(void *arg)
{
	return ((struct uppool *)arg)->n == 0;
}

static bool
seen_eof(void *arg)
{
	return (((struct seen *)arg)->ev & IO_EV_EOF) != 0;
}

/* The same key gives the very io back, once, with what was put. */
static void
test_put_take(void)
{
	struct uppool		 p;
	struct uppool_ent	 e, k;
	struct policy_addr	 addrs[2];
	struct io		*io, *got;
	int			 peer;

	uppool_init(&p, up_base);
	io = mkio(&peer, NULL);
	ent(&e, sb_a, "a", "api.example", 443, "192.0.2.10");
	e.idle_since -= 5;
	CU_ASSERT_EQUAL(uppool_put(&p, &e, io), 1);
	CU_ASSERT_EQUAL(p.n, 1);
	ent(&k, sb_a, "a", "api.example", 443, "192.0.2.99");
	addrs[0] = k.addr;
	addrs[1] = e.addr;
	got = uppool_take(&p, &k, addrs, 2);
	CU_ASSERT_PTR_EQUAL(got, io);
	CU_ASSERT_EQUAL(p.n, 0);
	CU_ASSERT_EQUAL(k.addr.u.v4.s_addr, e.addr.u.v4.s_addr);
	CU_ASSERT_STRING_EQUAL(k.ip, "192.0.2.10");
	CU_ASSERT_EQUAL(k.idle_since, e.idle_since);
	CU_ASSERT_EQUAL(k.idle_ms, e.idle_ms);
	/* Taken once. */
	CU_ASSERT_PTR_NULL(uppool_take(&p, &k, addrs, 2));
	io_free(got);
	close(peer);
	uppool_flush(&p, NULL);
}

/* Any part of the key that differs, or an address not judged: no. */
static void
test_mismatch(void)
{
	struct uppool		 p;
	struct uppool_ent	 e, k;
	struct io		*io, *got;
	int			 peer, tls_dummy;

	uppool_init(&p, up_base);
	io = mkio(&peer, NULL);
	ent(&e, sb_a, "a", "api.example", 443, "192.0.2.10");
	CU_ASSERT_EQUAL_FATAL(uppool_put(&p, &e, io), 1);

	ent(&k, sb_b, "a", "api.example", 443, "192.0.2.10");
	CU_ASSERT_PTR_NULL(uppool_take(&p, &k, &e.addr, 1));	/* sandbox */
	ent(&k, sb_a, "b", "api.example", 443, "192.0.2.10");
	CU_ASSERT_PTR_NULL(uppool_take(&p, &k, &e.addr, 1));	/* identity */
	ent(&k, NULL, "a", "api.example", 443, "192.0.2.10");
	CU_ASSERT_PTR_NULL(uppool_take(&p, &k, &e.addr, 1));	/* no sandbox */
	ent(&k, sb_a, "a", "api.example", 443, "192.0.2.10");
	k.tls = (struct tls *)&tls_dummy;	/* compared, never used */
	CU_ASSERT_PTR_NULL(uppool_take(&p, &k, &e.addr, 1));	/* tls */
	ent(&k, sb_a, "a", "www.example", 443, "192.0.2.10");
	CU_ASSERT_PTR_NULL(uppool_take(&p, &k, &e.addr, 1));	/* host */
	ent(&k, sb_a, "a", "api.example", 8443, "192.0.2.10");
	CU_ASSERT_PTR_NULL(uppool_take(&p, &k, &e.addr, 1));	/* port */
	ent(&k, sb_a, "a", "api.example", 443, "192.0.2.11");
	CU_ASSERT_PTR_NULL(uppool_take(&p, &k, &k.addr, 1));	/* address */
	CU_ASSERT_PTR_NULL(uppool_take(&p, &k, NULL, 0));	/* none */
	CU_ASSERT_EQUAL(p.n, 1);

	ent(&k, sb_a, "a", "api.example", 443, "192.0.2.10");
	got = uppool_take(&p, &k, &e.addr, 1);
	CU_ASSERT_PTR_EQUAL(got, io);
	io_free(got);
	close(peer);
	uppool_flush(&p, NULL);
}

/*
 * put must refuse io: true if it did (io is still the caller's, freed
 * here).  If it kept it, the pool frees it (no double free in a failing
 * test).
 */
static bool
refused(struct uppool *p, const struct uppool_ent *e, struct io *io)
{
	if (uppool_put(p, e, io) == 0) {
		io_free(io);
		return true;
	}
	uppool_flush(p, NULL);
	return false;
}

/* What is not kept: EOF, bytes buffered, expired, dead sandbox, tls. */
static void
test_unfit(void)
{
	struct uppool		 p;
	struct uppool_ent	 e;
	struct seen		 s = { 0 };
	struct io		*io;
	int			 peer, tls_dummy;

	uppool_init(&p, up_base);
	ent(&e, sb_a, "a", "api.example", 443, "192.0.2.10");

	/* The upstream closed: the io saw EOF. */
	io = mkio(&peer, &s);
	io_read(io, 1);
	close(peer);
	CU_ASSERT_EQUAL_FATAL(run_until(seen_eof, &s), 0);
	CU_ASSERT_TRUE(io_eof(io));
	CU_ASSERT_TRUE(refused(&p, &e, io));

	/* Bytes not yet written out. */
	io = mkio(&peer, NULL);
	evbuffer_add(io_out(io), "x", 1);
	CU_ASSERT_TRUE(refused(&p, &e, io));
	close(peer);

	/* Bytes read and not consumed. */
	io = mkio(&peer, NULL);
	evbuffer_add(io_in(io), "x", 1);
	CU_ASSERT_TRUE(refused(&p, &e, io));
	close(peer);

	/* Idle for longer than its timeout already. */
	e.idle_since = util_now_ms() - 100;
	e.idle_ms = 50;
	CU_ASSERT_TRUE(refused(&p, &e, mkio(&peer, NULL)));
	close(peer);
	ent(&e, sb_a, "a", "api.example", 443, "192.0.2.10");

	/* A plain io said to be TLS. */
	e.tls = (struct tls *)&tls_dummy;
	CU_ASSERT_TRUE(refused(&p, &e, mkio(&peer, NULL)));
	close(peer);
	e.tls = NULL;

	/* No host. */
	e.host = NULL;
	CU_ASSERT_TRUE(refused(&p, &e, mkio(&peer, NULL)));
	close(peer);
	ent(&e, sb_a, "a", "api.example", 443, "192.0.2.10");

	/* An unregistered sandbox. */
	atomic_store(&sb_a->dead, 1);
	CU_ASSERT_TRUE(refused(&p, &e, mkio(&peer, NULL)));
	close(peer);
	atomic_store(&sb_a->dead, 0);
	CU_ASSERT_EQUAL(p.n, 0);

	/* ... and a fit one is kept. */
	CU_ASSERT_EQUAL(uppool_put(&p, &e, mkio(&peer, NULL)), 1);
	CU_ASSERT_EQUAL(p.n, 1);
	uppool_flush(&p, NULL);
	CU_ASSERT_EQUAL(p.n, 0);
	close(peer);
}

/* A parked upstream that closes or sends anything goes at once. */
static void
test_retired(void)
{
	struct uppool		 p;
	struct uppool_ent	 e;
	struct io		*io;
	int			 peer;

	uppool_init(&p, up_base);
	ent(&e, sb_a, "a", "api.example", 443, "192.0.2.10");
	io = mkio(&peer, NULL);
	CU_ASSERT_EQUAL_FATAL(uppool_put(&p, &e, io), 1);
	close(peer);
	CU_ASSERT_EQUAL(run_until(pool_empty, &p), 0);

	io = mkio(&peer, NULL);
	CU_ASSERT_EQUAL_FATAL(uppool_put(&p, &e, io), 1);
	CU_ASSERT_EQUAL(write(peer, "HTTP/1.1 408\r\n\r\n", 16), 16);
	CU_ASSERT_EQUAL(run_until(pool_empty, &p), 0);
	close(peer);
	uppool_flush(&p, NULL);
}

/*
 * The idle timeout drops an entry, counted from idle_since: one idle for
 * IDLE_BEFORE_MS of IDLE_BEFORE_MS + IDLE_MS goes IDLE_MS after the put
 * (a timer counted from the put would take IDLE_BEFORE_MS longer: far
 * past the bound below, which leaves a loaded machine seconds of slack).
 */
static void
test_idle_timeout(void)
{
	struct uppool		 p;
	struct uppool_ent	 e;
	struct io		*io;
	uint64_t		 t0, took;
	int			 peer;

	uppool_init(&p, up_base);
	ent(&e, sb_a, "a", "api.example", 443, "192.0.2.10");
	t0 = util_now_ms();
	e.idle_since = t0 - IDLE_BEFORE_MS;
	e.idle_ms = IDLE_BEFORE_MS + IDLE_MS;
	io = mkio(&peer, NULL);
	CU_ASSERT_EQUAL_FATAL(uppool_put(&p, &e, io), 1);
	/* A turn of the loop with nothing due keeps it. */
	event_base_loop(up_base, EVLOOP_NONBLOCK);
	CU_ASSERT_EQUAL(p.n, 1);
	CU_ASSERT_EQUAL(run_until(pool_empty, &p), 0);
	took = util_now_ms() - t0;
	/*
	 * Not before its time (libevent may read a coarse clock, ticking
	 * every 4 or 10 ms: that much slack)...
	 */
	CU_ASSERT_TRUE(took + 12 >= IDLE_MS);
	/* ... and not counted from the put. */
	CU_ASSERT_TRUE(took < IDLE_BEFORE_MS - 500);
	close(peer);
	uppool_flush(&p, NULL);
}

/* At most UPPOOL_MAX; a put beyond drops the oldest. */
static void
test_max(void)
{
	struct uppool		 p;
	struct uppool_ent	 e;
	struct io		*io, *got;
	int			 peers[UPPOOL_MAX + 1];
	size_t			 i;
	char			 b;

	uppool_init(&p, up_base);
	for (i = 0; i <= UPPOOL_MAX; i++) {
		io = mkio(&peers[i], NULL);
		ent(&e, sb_a, "a", "api.example", (uint16_t)(1000 + i),
		    "192.0.2.10");
		CU_ASSERT_EQUAL(uppool_put(&p, &e, io), 1);
		CU_ASSERT_EQUAL(p.n, i < UPPOOL_MAX ? i + 1 : UPPOOL_MAX);
	}
	/* The oldest was closed (its peer reads EOF), the next one not. */
	CU_ASSERT_EQUAL(read(peers[0], &b, 1), 0);
	CU_ASSERT_EQUAL(read(peers[1], &b, 1), -1);
	ent(&e, sb_a, "a", "api.example", 1000, "192.0.2.10");
	CU_ASSERT_PTR_NULL(uppool_take(&p, &e, &e.addr, 1));
	ent(&e, sb_a, "a", "api.example", 1001, "192.0.2.10");
	got = uppool_take(&p, &e, &e.addr, 1);
	CU_ASSERT_PTR_NOT_NULL(got);
	io_free(got);
	ent(&e, sb_a, "a", "api.example", 1000 + UPPOOL_MAX, "192.0.2.10");
	got = uppool_take(&p, &e, &e.addr, 1);
	CU_ASSERT_PTR_NOT_NULL(got);
	io_free(got);
	CU_ASSERT_EQUAL(p.n, UPPOOL_MAX - 2);
	uppool_flush(&p, NULL);
	CU_ASSERT_EQUAL(p.n, 0);
	for (i = 0; i <= UPPOOL_MAX; i++)
		close(peers[i]);
}

/* A sandbox's entries go with it; the others stay. */
static void
test_flush(void)
{
	struct uppool		 p;
	struct uppool_ent	 e;
	struct io		*got;
	int			 peers[4];
	struct sandbox		*who[4] = { NULL, NULL, NULL, NULL };
	size_t			 i;

	who[0] = who[1] = sb_a;
	who[2] = sb_b;
	uppool_init(&p, up_base);
	for (i = 0; i < 4; i++) {
		ent(&e, who[i], who[i] != NULL ? who[i]->name : "", "h.example",
		    (uint16_t)(80 + i), "192.0.2.10");
		CU_ASSERT_EQUAL(uppool_put(&p, &e, mkio(&peers[i], NULL)), 1);
	}
	CU_ASSERT_EQUAL(p.n, 4);
	uppool_flush(&p, sb_a);
	CU_ASSERT_EQUAL(p.n, 2);
	for (i = 0; i < 4; i++) {
		ent(&e, who[i], who[i] != NULL ? who[i]->name : "", "h.example",
		    (uint16_t)(80 + i), "192.0.2.10");
		got = uppool_take(&p, &e, &e.addr, 1);
		CU_ASSERT_TRUE((got == NULL) == (who[i] == sb_a));
		io_free(got);
	}
	CU_ASSERT_EQUAL(p.n, 0);
	for (i = 0; i < 4; i++) {
		ent(&e, who[i], who[i] != NULL ? who[i]->name : "", "h.example",
		    (uint16_t)(80 + i), "192.0.2.10");
		close(peers[i]);
		CU_ASSERT_EQUAL(uppool_put(&p, &e, mkio(&peers[i], NULL)), 1);
	}
	uppool_flush(&p, NULL);
	CU_ASSERT_EQUAL(p.n, 0);
	for (i = 0; i < 4; i++)
		close(peers[i]);
}

void
test_uppool_register(void)
{
	CU_pSuite	s;

	s = CU_add_suite("uppool", up_init, up_clean);
	if (s == NULL)
		return;
	CU_add_test(s, "put then take, same key", test_put_take);
	CU_add_test(s, "another key or address", test_mismatch);
	CU_add_test(s, "unfit connections are not kept", test_unfit);
	CU_add_test(s, "upstream closes or writes while parked",
	    test_retired);
	CU_add_test(s, "idle timeout", test_idle_timeout);
	CU_add_test(s, "at most UPPOOL_MAX, oldest first", test_max);
	CU_add_test(s, "flush by sandbox", test_flush);
}
