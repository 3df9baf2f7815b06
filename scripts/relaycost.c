/*
 * relaycost.c - what one relayed burst costs a relay's CPU, copied with
 * read(2)/send(2) through a buffer or spliced with splice(2) through a
 * pipe, by burst size: the figures behind tunnel.c's TUNNEL_SPLICE_AFTER.
 *
 * One thread, TCP over loopback, three connections' worth of sockets:
 * a sender writes a burst of SIZE bytes into socket a, the relay moves
 * them from a's peer to socket b, a receiver reads them from b's peer.
 * The relay's cost is the CPU time of a round with it minus the CPU time
 * of the same round without it (the sender writing straight to the
 * receiver's socket), so the sender's and the receiver's share cancel.
 * Modes run interleaved, round after round, and the medians are printed:
 * the machine's speed drifts, the interleaving spreads that over all.
 * The pipe is made once, as tunnel.c takes one from the worker's pool.
 *
 *   make scripts/relaycost     (or: cc -O2 -o relaycost scripts/relaycost.c)
 *   scripts/relaycost [-r ROUNDS] [-b BYTES_PER_ROUND] SIZE...
 *
 * Loopback only; bounded by ROUNDS x sizes x BYTES_PER_ROUND.
 */
#define _GNU_SOURCE
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define COPY_BYTES	(64 << 10)	/* tunnel.c's copy scratch */
#define PIPE_BYTES	(256 << 10)	/* worker.c's pipe size */
#define MAX_SIZE	(4 << 20)
#define MAX_ROUNDS	101

enum mode { M_NONE, M_COPY, M_SPLICE, M_N };

struct rig {
	int	a, a_peer;	/* sender -> relay */
	int	b, b_peer;	/* relay -> receiver */
	int	pipe[2];
};

static char	*src, *dst, *scratch;

static void
die(const char *what)
{
	perror(what);
	exit(1);
}

static void
pair(int lfd, const struct sockaddr_in *sin, int *c, int *s)
{
	int	one = 1;

	if ((*c = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    connect(*c, (const struct sockaddr *)sin, sizeof(*sin)) == -1 ||
	    (*s = accept4(lfd, NULL, NULL, SOCK_NONBLOCK)) == -1)
		die("relaycost: connect");
	if (fcntl(*c, F_SETFL, O_NONBLOCK) == -1 ||
	    setsockopt(*c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ||
	    setsockopt(*s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		die("relaycost: socket options");
}

static void
rig_open(struct rig *r)
{
	struct sockaddr_in	sin;
	socklen_t		len = sizeof(sin);
	int			lfd;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((lfd = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(lfd, 4) == -1 ||
	    getsockname(lfd, (struct sockaddr *)&sin, &len) == -1)
		die("relaycost: listen");
	pair(lfd, &sin, &r->a, &r->a_peer);
	pair(lfd, &sin, &r->b, &r->b_peer);
	close(lfd);
	if (pipe2(r->pipe, O_NONBLOCK) == -1)
		die("relaycost: pipe2");
	(void)fcntl(r->pipe[1], F_SETPIPE_SZ, PIPE_BYTES);
}

/* The relay, as tunnel.c's pump: until the source says EAGAIN. */
static size_t
relay(struct rig *r, enum mode m)
{
	ssize_t	n, w;
	size_t	moved = 0, off;

	for (;;) {
		if (m == M_COPY)
			n = read(r->a_peer, scratch, COPY_BYTES);
		else
			n = splice(r->a_peer, NULL, r->pipe[1], NULL,
			    PIPE_BYTES, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n <= 0) {
			if (n == -1 && errno != EAGAIN)
				die("relaycost: relay in");
			return moved;
		}
		for (off = 0; off < (size_t)n; off += (size_t)w) {
			if (m == M_COPY)
				w = send(r->b, scratch + off, (size_t)n - off,
				    MSG_NOSIGNAL);
			else
				w = splice(r->pipe[0], NULL, r->b, NULL,
				    (size_t)n - off, SPLICE_F_MOVE |
				    SPLICE_F_NONBLOCK);
			if (w == -1 && errno == EAGAIN) {
				struct pollfd p = { r->b, POLLOUT, 0 };

				(void)poll(&p, 1, 1000);
				w = 0;
			} else if (w <= 0)
				die("relaycost: relay out");
		}
		moved += (size_t)n;
	}
}

/* Reads what has arrived at fd; returns the count. */
static size_t
drain(int fd)
{
	ssize_t	n;
	size_t	got = 0;

	while ((n = read(fd, dst, MAX_SIZE)) > 0)
		got += (size_t)n;
	if (n == -1 && errno != EAGAIN)
		die("relaycost: receive");
	return got;
}

/* One burst of size bytes, sender to receiver. */
static void
burst(struct rig *r, enum mode m, size_t size)
{
	size_t	sent = 0, got = 0;
	ssize_t	n;
	int	out = m == M_NONE ? r->b : r->a;
	int	in = r->b_peer;

	while (got < size) {
		if (sent < size) {
			n = write(out, src + sent, size - sent);
			if (n > 0)
				sent += (size_t)n;
			else if (n == -1 && errno != EAGAIN)
				die("relaycost: send");
		}
		if (m != M_NONE)
			(void)relay(r, m);
		got += drain(in);
	}
}

static double
cpu_ns(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int
cmp(const void *a, const void *b)
{
	double	x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char *argv[])
{
	static double	ns[M_N][MAX_ROUNDS];
	struct rig	r;
	size_t		size, bursts, i, per_round = 64u << 20;
	int		rounds = 21, k, opt, m;
	double		t;

	while ((opt = getopt(argc, argv, "r:b:")) != -1) {
		if (opt == 'r')
			rounds = atoi(optarg);
		else if (opt == 'b')
			per_round = strtoul(optarg, NULL, 10);
		else
			goto usage;
	}
	if (optind == argc || rounds < 1 || rounds > MAX_ROUNDS ||
	    per_round == 0)
		goto usage;
	if ((src = malloc(MAX_SIZE)) == NULL ||
	    (dst = malloc(MAX_SIZE)) == NULL ||
	    (scratch = malloc(COPY_BYTES)) == NULL)
		die("relaycost: malloc");
	memset(src, 'x', MAX_SIZE);
	rig_open(&r);
	printf("%10s %8s %12s %12s %12s %10s\n", "size", "bursts",
	    "copy ns", "splice ns", "none ns", "splice/copy");
	for (; optind < argc; optind++) {
		size = strtoul(argv[optind], NULL, 10);
		if (size == 0 || size > MAX_SIZE)
			goto usage;
		bursts = per_round / size;
		if (bursts < 16)
			bursts = 16;
		if (bursts > 20000)
			bursts = 20000;
		for (k = 0; k < rounds; k++)
			for (m = 0; m < M_N; m++) {
				enum mode mm = (enum mode)((m + k) % M_N);

				burst(&r, mm, size);	/* warm */
				t = cpu_ns();
				for (i = 0; i < bursts; i++)
					burst(&r, mm, size);
				ns[mm][k] = (cpu_ns() - t) / (double)bursts;
			}
		for (m = 0; m < M_N; m++)
			qsort(ns[m], (size_t)rounds, sizeof(double), cmp);
		printf("%10zu %8zu %12.0f %12.0f %12.0f %10.2f\n", size,
		    bursts, ns[M_COPY][rounds / 2] - ns[M_NONE][rounds / 2],
		    ns[M_SPLICE][rounds / 2] - ns[M_NONE][rounds / 2],
		    ns[M_NONE][rounds / 2],
		    (ns[M_SPLICE][rounds / 2] - ns[M_NONE][rounds / 2]) /
		    (ns[M_COPY][rounds / 2] - ns[M_NONE][rounds / 2]));
		fflush(stdout);
	}
	return 0;
 usage:
	fprintf(stderr, "usage: relaycost [-r ROUNDS] [-b BYTES] SIZE...\n");
	return 2;
}
