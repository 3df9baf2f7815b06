/*
 * tunnel.c - byte relay for allowed, uninspected tunnels: copied at
 * first, spliced once a direction has carried enough to be worth a pipe.
 *
 * Both sockets are watched edge-triggered for read and write with one
 * event each, registered once: readable "from" or writable "to" re-runs
 * that direction's pump, which works until the kernel says EAGAIN.
 *
 * A direction starts by copying: read(2) into the worker's scratch
 * buffer, send(2) out of it at once.  Bytes the "to" socket does not take
 * are kept in a buffer allocated for them (and freed once written), and
 * nothing more is read until they are out; so an idle tunnel holds no
 * buffer, and a read into the scratch only happens with nothing held,
 * which makes EAGAIN mean "drained".  Most tunnels carry a few kilobytes
 * (a request and its answer, a TLS handshake): for those a copy costs
 * the relay less CPU than a splice, and they never touch a pipe.  Once a
 * direction has carried TUNNEL_SPLICE_AFTER bytes (BENCHMARKS.md says
 * how that was measured), it moves bytes socket -> pipe -> socket with
 * splice(2), so they never enter user space.
 *
 * The pump only splices into an empty pipe.  That matters: a pipe holds a
 * fixed number of buffers, so small segments can fill it long before its
 * byte capacity, and then
 * splice(socket -> pipe) says EAGAIN although the socket has data; with an
 * empty pipe EAGAIN can only mean the socket is drained, so no readiness
 * edge is ever lost.  An empty pipe goes back to the worker's pool at once,
 * which is why an idle tunnel holds no pipe.
 *
 * One exception, in both modes: once epoll says the peer has sent its FIN
 * (EPOLLRDHUP), the pump reads on before writing, until EOF (or a full
 * pipe or scratch: after a FIN, a drained socket says 0, never EAGAIN),
 * and writes the last bytes with SPLICE_F_MORE or MSG_MORE so that the
 * FIN passed on by shutdown(2) or close(2) leaves in the same segment:
 * the usual end of a response costs the other side one segment and one
 * wake-up, not two.
 *
 * When no pipe can be had (the process or the system is out of
 * descriptors), a direction past the threshold copies again, by the same
 * rules, until the socket is drained; the next burst tries for a pipe
 * again.  So running out of descriptors costs a tunnel some copying,
 * never its life, and an idle tunnel still holds neither.
 */
#include "config.h"

#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "proxy/audit.h"
#include "proxy/log.h"
#include "proxy/metrics.h"
#include "proxy/sandbox.h"
#include "proxy/secrets.h"
#include "proxy/tunnel.h"
#include "proxy/util.h"
#include "proxy/worker.h"

struct tunnel_dir {
	int		 from;
	int		 to;
	int		 pipe[2];	/* -1 when none is held */
	size_t		 in_pipe;	/* bytes in the pipe */
	char		*held;		/* read, not yet written: NULL if none */
	size_t		 held_off;	/* first byte not written yet */
	size_t		 held_len;	/* bytes in held from held_off */
	struct evbuffer	*pending;	/* bytes to write to "to" first */
	uint64_t	 bytes;
	unsigned	 eof:1;		/* "from" reached EOF */
	unsigned	 rdhup:1;	/* "from" has sent its FIN (EPOLLRDHUP) */
	unsigned	 shut:1;	/* "to" was shut down for writing */
	unsigned	 nopipe:1;	/* no pipe to be had: copy this burst */
};

struct tunnel {
	struct worker		*w;
	int			 cfd;
	int			 ufd;
	struct event		*cev;
	struct event		*uev;
	struct event		*timer;
	struct tunnel_dir	 up;		/* client -> upstream */
	struct tunnel_dir	 down;		/* upstream -> client */
	uint64_t		 last_ms;	/* last byte moved */
	unsigned		 idle_ms;
	uint64_t		 keepalive_at;	/* see TUNNEL_KEEPALIVE_MS */
	LIST_ENTRY(tunnel)	 link;
	struct sandbox		*sb;		/* a reference */
	/* For the close audit line; strings live in strs. */
	uint64_t		 id;
	uint64_t		 t_start;
	uint16_t		 port;
	unsigned		 lkind;		/* listener kind, for metrics */
	const char		*sandbox, *proto, *client, *host, *ip, *rule;
	char			*strs;
	struct quota_hold	 quota;		/* up's bytes count against it */
	bool			 quota_over;	/* ... and would have passed it */
	bool			 quota_waive;	/* audit mode: passing it cuts
						   nothing */
	bool			 quota_waived;	/* ... and it was passed */
};

static const char *const tunnel_end_names[] = {
	"eof", "idle", "reset", "shutdown", "internal", "quota"
};

static int	tdir_pump(struct tunnel *t, struct tunnel_dir *d);
static int	tdir_charge(struct tunnel *t, struct tunnel_dir *d, size_t n);
static int	tdir_splicing(const struct tunnel_dir *d);
static int	tdir_splice(struct tunnel *t, struct tunnel_dir *d, int rounds);
static int	tdir_nopipe(struct tunnel *t, struct tunnel_dir *d, int rounds);
static int	tdir_copy(struct tunnel *t, struct tunnel_dir *d, int rounds);
static ssize_t	tdir_fill(struct tunnel_dir *d, char *s, size_t cap);
static ssize_t	tdir_send(struct tunnel *t, struct tunnel_dir *d,
		    const char *p, size_t len);
static int	tdir_hold(struct tunnel *t, struct tunnel_dir *d, const char *p,
		    size_t len);
static void	tdir_held_free(struct tunnel *t, struct tunnel_dir *d);
static void	tdir_shut(struct tunnel *t, struct tunnel_dir *d);
static int	tdir_flush_pending(struct tunnel *t, struct tunnel_dir *d);
static void	tdir_release_pipe(struct tunnel *t, struct tunnel_dir *d);
static int	tdir_wants_write(const struct tunnel_dir *d);
static void	tunnel_cev(evutil_socket_t fd, short what, void *arg);
static void	tunnel_uev(evutil_socket_t fd, short what, void *arg);
static void	tunnel_after(struct tunnel *t, int r1, int r2);
static void	tunnel_timer(evutil_socket_t fd, short what, void *arg);
static int	tunnel_timer_add(struct tunnel *t, uint64_t now);
static void	tunnel_close(struct tunnel *t, enum tunnel_end end);
static int	tunnel_copy_meta(struct tunnel *t, const struct tunnel_meta *m);

static int
tunnel_copy_meta(struct tunnel *t, const struct tunnel_meta *m)
{
	const char	*src[6] = { m->sandbox, m->proto, m->client, m->host,
			    m->ip, m->rule };
	const char	**dst[6] = { &t->sandbox, &t->proto, &t->client,
			    &t->host, &t->ip, &t->rule };
	size_t		 len = 0, i, n;
	char		*p;

	for (i = 0; i < 6; i++)
		if (src[i] != NULL)
			len += strlen(src[i]) + 1;
	if ((t->strs = p = malloc(len ? len : 1)) == NULL)
		return -1;
	for (i = 0; i < 6; i++) {
		if (src[i] == NULL) {
			*dst[i] = NULL;
			continue;
		}
		n = strlen(src[i]) + 1;
		memcpy(p, src[i], n);
		*dst[i] = p;
		p += n;
	}
	t->id = m->id;
	t->sb = m->sb ? sandbox_ref(m->sb) : NULL;
	t->port = m->port;
	t->t_start = m->t_start;
	t->lkind = m->lkind;
	t->keepalive_at = m->keepalive_at;
	return 0;
}

/*
 * d read n bytes that are to be written to its "to" socket: the client's
 * count against the tunnel's quotas before they go.  -1 (errno EDQUOT)
 * if they would take one past its limit: they stay unwritten, and the
 * tunnel is cut.
 */
static int
tdir_charge(struct tunnel *t, struct tunnel_dir *d, size_t n)
{
	if (t->quota.n == 0 || d != &t->up || !quota_charge(&t->quota, n))
		return 0;
	if (t->quota_waive) {
		/* Audit mode: a would-deny, no longer counted. */
		quota_release(&t->quota);
		t->quota_waived = true;
		return 0;
	}
	t->quota_over = true;
	errno = EDQUOT;
	return -1;
}

int
tunnel_start(struct worker *w, int cfd, int ufd, struct evbuffer *to_up,
    struct evbuffer *to_client, const struct tunnel_meta *m, unsigned idle_ms)
{
	struct tunnel	*t;
	int		 r;

	if ((t = calloc(1, sizeof(*t))) == NULL)
		goto nomem;
	if (m->quota != NULL)
		quota_hold_move(&t->quota, m->quota);
	t->quota_waive = m->quota_waive;
	t->w = w;
	t->cfd = cfd;
	t->ufd = ufd;
	t->up.from = cfd;
	t->up.to = ufd;
	t->down.from = ufd;
	t->down.to = cfd;
	t->up.pipe[0] = t->up.pipe[1] = -1;
	t->down.pipe[0] = t->down.pipe[1] = -1;
	t->idle_ms = idle_ms;
	t->last_ms = util_now_ms();
	if (tunnel_copy_meta(t, m) == -1)
		goto nomem;
	if (to_up != NULL && evbuffer_get_length(to_up) > 0) {
		if ((t->up.pending = evbuffer_new()) == NULL)
			goto nomem;
		evbuffer_add_buffer(t->up.pending, to_up);
	}
	if (to_client != NULL && evbuffer_get_length(to_client) > 0) {
		if ((t->down.pending = evbuffer_new()) == NULL)
			goto nomem;
		evbuffer_add_buffer(t->down.pending, to_client);
	}
	t->cev = event_new(w->base, cfd, EV_READ | EV_WRITE | EV_CLOSED |
	    EV_PERSIST | EV_ET, tunnel_cev, t);
	t->uev = event_new(w->base, ufd, EV_READ | EV_WRITE | EV_CLOSED |
	    EV_PERSIST | EV_ET, tunnel_uev, t);
	t->timer = evtimer_new(w->base, tunnel_timer, t);
	if (t->cev == NULL || t->uev == NULL || t->timer == NULL)
		goto nomem;
	if (event_add(t->cev, NULL) == -1 || event_add(t->uev, NULL) == -1 ||
	    tunnel_timer_add(t, t->last_ms) == -1)
		goto nomem;
	LIST_INSERT_HEAD(&w->tunnels, t, link);
	w->ntunnels++;
	/*
	 * Write what was buffered before the hand-over, and nothing more:
	 * registering an edge-triggered event reports what is ready already
	 * (epoll polls the socket when the event is added or changed), so
	 * reading now would most often cost an EAGAIN for nothing.
	 */
	r = tdir_charge(t, &t->up, t->up.pending != NULL ?
	    evbuffer_get_length(t->up.pending) : 0);
	tunnel_after(t, r == 0 ? tdir_flush_pending(t, &t->up) : r,
	    tdir_flush_pending(t, &t->down));
	return 0;
 nomem:
	log_warnx("tunnel: out of memory, connection dropped");
	if (t != NULL) {
		if (t->cev != NULL)
			event_free(t->cev);
		if (t->uev != NULL)
			event_free(t->uev);
		if (t->timer != NULL)
			event_free(t->timer);
		if (t->up.pending != NULL)
			evbuffer_free(t->up.pending);
		if (t->down.pending != NULL)
			evbuffer_free(t->down.pending);
		quota_release(&t->quota);
		sandbox_unref(t->sb);
		free(t->strs);
		free(t);
	}
	close(cfd);
	close(ufd);
	return -1;
}

static void
tdir_release_pipe(struct tunnel *t, struct tunnel_dir *d)
{
	if (d->pipe[0] < 0)
		return;
	if (d->in_pipe == 0)
		worker_pipe_put(t->w, d->pipe);
	else {
		close(d->pipe[0]);
		close(d->pipe[1]);
	}
	d->pipe[0] = d->pipe[1] = -1;
	d->in_pipe = 0;
}

/*
 * Writes the bytes buffered before the hand-over (moatd's 200 or SOCKS5
 * reply, a client's early bytes).  Returns 0 when they are all written,
 * or the socket is full (the write event finishes them: the pump checks
 * pending first), or -1 with errno.
 */
static int
tdir_flush_pending(struct tunnel *t, struct tunnel_dir *d)
{
	ssize_t	n;

	if (d->pending == NULL)
		return 0;
	while (evbuffer_get_length(d->pending) > 0) {
		n = evbuffer_write(d->pending, d->to);
		if (n == -1)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		/* moatd's own reply (200, SOCKS5 success) is not the
		 * upstream's: only the client's early bytes count. */
		if (d == &t->up)
			d->bytes += (uint64_t)n;
	}
	evbuffer_free(d->pending);
	d->pending = NULL;
	return 0;
}

/*
 * Moves bytes of one direction until the kernel pushes back: by copy
 * until the direction has carried TUNNEL_SPLICE_AFTER bytes, by splice
 * after.  Returns 0 (blocked, or this direction is finished), 1 (still
 * had work after TUNNEL_ROUNDS: call again soon), or -1 with errno (the
 * tunnel must end).
 */
static int
tdir_pump(struct tunnel *t, struct tunnel_dir *d)
{
	if (tdir_flush_pending(t, d) == -1)
		return -1;
	if (d->pending != NULL)
		return 0;	/* the socket is full */
	if (d->in_pipe > 0 || (d->held_len == 0 && tdir_splicing(d)))
		return tdir_splice(t, d, 0);
	return tdir_copy(t, d, 0);
}

/* Past the threshold, and pipes to be had: the next read splices. */
static int
tdir_splicing(const struct tunnel_dir *d)
{
	return !d->nopipe && d->bytes >= TUNNEL_SPLICE_AFTER;
}

/*
 * tdir_pump's splice loop, from round "rounds" on; same returns.
 * splice(2) returns, as used here:
 *   > 0     bytes moved;
 *   0       from socket: the peer sent EOF (from a pipe: cannot happen,
 *           in_pipe > 0 is checked first);
 *   -1 EAGAIN  socket -> pipe: the socket has no data (the pipe is empty),
 *              or, reading on after a FIN, the pipe is full;
 *              pipe -> socket: the socket's send buffer is full;
 *   -1 EINTR   retried;
 *   -1 other   (ECONNRESET, EPIPE, ...) the tunnel ends.
 */
static int
tdir_splice(struct tunnel *t, struct tunnel_dir *d, int rounds)
{
	ssize_t	n;
	int	more = 0;

	for (; rounds < TUNNEL_ROUNDS; rounds++) {
		if (d->in_pipe > 0 && !more) {
			n = splice(d->pipe[0], NULL, d->to, NULL, d->in_pipe,
			    SPLICE_F_MOVE | SPLICE_F_NONBLOCK |
			    (d->eof ? SPLICE_F_MORE : 0));
			if (n > 0) {
				d->in_pipe -= (size_t)n;
				d->bytes += (uint64_t)n;
				t->last_ms = 0;	/* refreshed by the caller */
				continue;
			}
			if (n == -1 && errno == EINTR)
				continue;
			if (n == -1 && errno == EAGAIN)
				return 0;
			return -1;
		}
		if (d->eof) {
			tdir_release_pipe(t, d);
			tdir_shut(t, d);
			return 0;
		}
		more = 0;
		if (d->pipe[0] < 0 && worker_pipe_get(t->w, d->pipe) == -1) {
			/* in_pipe is 0, and so is more, here. */
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOMEM)
				return tdir_nopipe(t, d, rounds);
			return -1;
		}
		n = splice(d->from, NULL, d->pipe[1], NULL,
		    TUNNEL_SPLICE_BYTES - d->in_pipe,
		    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n > 0) {
			d->in_pipe += (size_t)n;
			t->last_ms = 0;
			if (tdir_charge(t, d, (size_t)n) == -1)
				return -1;
			/* After the peer's FIN: read on to EOF first. */
			more = d->rdhup && d->in_pipe < TUNNEL_SPLICE_BYTES;
			continue;
		}
		if (n == 0) {
			d->eof = 1;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN) {
			if (d->in_pipe > 0)
				continue;	/* read on after FIN: pipe full */
			tdir_release_pipe(t, d);
			return 0;
		}
		return -1;
	}
	return 1;
}

/* "to" gets its FIN once everything "from" sent has been written. */
static void
tdir_shut(struct tunnel *t, struct tunnel_dir *d)
{
	struct tunnel_dir	*o = d == &t->up ? &t->down : &t->up;

	if (d->shut)
		return;
	d->shut = 1;
	/* The other way is done too: close() says FIN in a moment, no need
	 * for a shutdown first. */
	if (!o->shut)
		(void)shutdown(d->to, SHUT_WR);
}

/*
 * No pipe could be had: this direction copies until it is drained.  Said
 * in the log at most once a minute per worker thread, since under
 * exhaustion every tunnel that moves bytes comes here.
 */
static int
tdir_nopipe(struct tunnel *t, struct tunnel_dir *d, int rounds)
{
	static _Thread_local uint64_t	last;
	uint64_t			now = util_now_ms();
	int				err = errno;

	if (last == 0 || now - last >= 60000) {
		last = now;
		log_warnx("tunnel: no pipe for splice (%s): copying through "
		    "a buffer instead until descriptors are free",
		    strerror(err));
	}
	d->nopipe = 1;
	return tdir_copy(t, d, rounds);
}

static void
tdir_held_free(struct tunnel *t, struct tunnel_dir *d)
{
	if (d->held == NULL)
		return;
	free(d->held);
	d->held = NULL;
	d->held_off = d->held_len = 0;
	t->w->nheld--;
}

/* Keeps the len bytes at p that "to" did not take, until it does. */
static int
tdir_hold(struct tunnel *t, struct tunnel_dir *d, const char *p, size_t len)
{
	if ((d->held = malloc(len)) == NULL) {
		errno = ENOMEM;
		return -1;
	}
	memcpy(d->held, p, len);
	d->held_off = 0;
	d->held_len = len;
	t->w->nheld++;
	return 0;
}

/*
 * Reads from "from" into s: one read, or, after the peer's FIN, on until
 * EOF or a full s.  Returns the bytes read (EOF noted in d->eof), or -1
 * with errno when nothing was read (EAGAIN: drained) or on an error.
 */
static ssize_t
tdir_fill(struct tunnel_dir *d, char *s, size_t cap)
{
	size_t	len = 0;
	ssize_t	n;

	for (;;) {
		n = read(d->from, s + len, cap - len);
		if (n > 0) {
			len += (size_t)n;
			if (d->rdhup && len < cap)
				continue;	/* after the FIN: on to EOF */
			return (ssize_t)len;
		}
		if (n == 0) {
			d->eof = 1;
			return (ssize_t)len;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN && len > 0)
			return (ssize_t)len;	/* read on after FIN */
		return -1;
	}
}

/*
 * Writes len bytes at p to "to" (the last ones, at EOF, with MSG_MORE)
 * until done or the socket is full.  Returns the bytes written, or -1
 * with errno on an error.
 */
static ssize_t
tdir_send(struct tunnel *t, struct tunnel_dir *d, const char *p, size_t len)
{
	size_t	off = 0;
	ssize_t	n;

	while (off < len) {
		n = send(d->to, p + off, len - off, MSG_NOSIGNAL |
		    MSG_DONTWAIT | (d->eof ? MSG_MORE : 0));
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			break;
		return -1;
	}
	d->bytes += off;
	if (off > 0)
		t->last_ms = 0;
	return (ssize_t)off;
}

/*
 * tdir_pump's copy loop, from round "rounds" on; same returns.  Bytes
 * held from an earlier call go first; then each round reads into the
 * worker's scratch and writes it out at once, holding what "to" did not
 * take.  Past the threshold (and while pipes can be had) the next read
 * is the splice loop's.
 */
static int
tdir_copy(struct tunnel *t, struct tunnel_dir *d, int rounds)
{
	char	*s = t->w->scratch;
	ssize_t	 n, w;

	for (; rounds < TUNNEL_ROUNDS; rounds++) {
		if (d->held_len > 0) {
			if ((w = tdir_send(t, d, d->held + d->held_off,
			    d->held_len)) == -1)
				return -1;
			d->held_off += (size_t)w;
			d->held_len -= (size_t)w;
			if (d->held_len > 0)
				return 0;	/* the socket is full */
			tdir_held_free(t, d);
			continue;
		}
		if (d->eof) {
			tdir_shut(t, d);
			return 0;
		}
		if (tdir_splicing(d))
			return tdir_splice(t, d, rounds);
		if ((n = tdir_fill(d, s, WORKER_SCRATCH_BYTES)) == -1) {
			if (errno != EAGAIN)
				return -1;
			d->nopipe = 0;	/* drained: the next burst may splice */
			return 0;
		}
		if (n == 0)
			continue;	/* EOF */
		t->last_ms = 0;
		if (tdir_charge(t, d, (size_t)n) == -1 ||
		    (w = tdir_send(t, d, s, (size_t)n)) == -1)
			return -1;
		if (w < n && tdir_hold(t, d, s + w, (size_t)(n - w)) == -1)
			return -1;
		if (w < n)
			return 0;	/* the socket is full */
	}
	return 1;
}

/* After pumping: end the tunnel, or schedule more work. */
static void
tunnel_after(struct tunnel *t, int r1, int r2)
{
	if (r1 == -1 || r2 == -1) {
		tunnel_close(t, t->quota_over ? TUNNEL_END_QUOTA :
		    errno == ENOMEM || errno == EMFILE || errno == ENFILE ?
		    TUNNEL_END_INTERNAL : TUNNEL_END_RESET);
		return;
	}
	if (t->last_ms == 0)
		t->last_ms = util_now_ms();
	if (t->up.shut && t->down.shut) {
		tunnel_close(t, TUNNEL_END_EOF);
		return;
	}
	/* A busy tunnel yields to others, then continues (edge-triggered
	 * events will not fire again for data already there). */
	if (r1 == 1)
		event_active(t->cev, EV_READ, 0);
	if (r2 == 1)
		event_active(t->uev, EV_READ, 0);
}

/*
 * Edge-triggered epoll reports the whole readiness mask, so a readable
 * socket also says "writable".  Writability helps a direction only while
 * it holds bytes it could not write; checking that first saves a useless
 * splice per wakeup.
 */
static int
tdir_wants_write(const struct tunnel_dir *d)
{
	return d->in_pipe > 0 || d->held_len > 0 || d->pending != NULL;
}

static void
tunnel_cev(evutil_socket_t fd, short what, void *arg)
{
	struct tunnel	*t = arg;
	int		 r1 = 0, r2 = 0;

	if (what & EV_CLOSED)
		t->up.rdhup = 1;
	if (what & EV_READ)
		r1 = tdir_pump(t, &t->up);
	if (r1 != -1 && (what & EV_WRITE) && tdir_wants_write(&t->down))
		r2 = tdir_pump(t, &t->down);
	tunnel_after(t, r1, r2);
}

static void
tunnel_uev(evutil_socket_t fd, short what, void *arg)
{
	struct tunnel	*t = arg;
	int		 r1 = 0, r2 = 0;

	if (what & EV_CLOSED)
		t->down.rdhup = 1;
	if (what & EV_READ)
		r2 = tdir_pump(t, &t->down);
	if (r2 != -1 && (what & EV_WRITE) && tdir_wants_write(&t->up))
		r1 = tdir_pump(t, &t->up);
	tunnel_after(t, r1, r2);
}

static void
tunnel_timer(evutil_socket_t fd, short what, void *arg)
{
	struct tunnel	*t = arg;
	uint64_t	 now = util_now_ms();

	if (t->keepalive_at != 0 && now >= t->keepalive_at) {
		(void)util_tcp_keepalive(t->ufd);
		t->keepalive_at = 0;
	}
	if (now >= t->last_ms + t->idle_ms) {
		tunnel_close(t, TUNNEL_END_IDLE);
		return;
	}
	/* Activity since the timer was set: sleep for the rest only. */
	(void)tunnel_timer_add(t, now);
}

/* The timer, due at the idle timeout or when keepalive goes on. */
static int
tunnel_timer_add(struct tunnel *t, uint64_t now)
{
	uint64_t	due = t->last_ms + t->idle_ms;
	struct timeval	tv;

	if (t->keepalive_at != 0 && t->keepalive_at < due)
		due = t->keepalive_at;
	tv = util_ms_tv(due > now ? due - now : 0);
	return event_add(t->timer, &tv);
}

const char *
tunnel_end_name(enum tunnel_end end)
{
	return tunnel_end_names[end];
}

void
tunnel_abort(struct tunnel *t)
{
	tunnel_close(t, TUNNEL_END_SHUTDOWN);
}

static void
tunnel_close(struct tunnel *t, enum tunnel_end end)
{
	struct audit_rec	 r;
	struct secrets_view	 sv;
	struct worker		*w = t->w;
	char			 why[256] UTIL_NOINIT;

	audit_rec_init(&r);
	r.event = "close";
	r.id = t->id;
	r.sandbox = t->sandbox;
	r.proto = t->proto;
	r.client = t->client;
	r.host = t->host;
	r.port = t->port;
	r.ip = t->ip;
	r.verdict = POLICY_ALLOW;
	r.reason = end == TUNNEL_END_IDLE ? POLICY_R_TIMEOUT :
	    end == TUNNEL_END_SHUTDOWN ? POLICY_R_SHUTDOWN :
	    end == TUNNEL_END_QUOTA ? POLICY_R_QUOTA_BYTES : POLICY_R_ALLOWED;
	if (end == TUNNEL_END_QUOTA) {
		quota_why(&t->quota, why, sizeof(why));
		r.detail = why;
	}
	if (t->quota_waived)
		r.would_deny = POLICY_R_QUOTA_BYTES;
	r.rule = t->rule;
	r.bytes_up = (int64_t)t->up.bytes;
	r.bytes_down = (int64_t)t->down.bytes;
	r.duration_ms = (int64_t)(util_now_ms() - t->t_start);
	r.end = tunnel_end_name(end);
	sandbox_count(t->sb, &r);
	secrets_audit_redact(t->sb, w->secrets, &sv, &r);
	audit_emit(&r);
	secrets_view_done(&sv);

	event_free(t->cev);
	event_free(t->uev);
	event_free(t->timer);
	tdir_release_pipe(t, &t->up);
	tdir_release_pipe(t, &t->down);
	tdir_held_free(t, &t->up);
	tdir_held_free(t, &t->down);
	if (t->up.pending != NULL)
		evbuffer_free(t->up.pending);
	if (t->down.pending != NULL)
		evbuffer_free(t->down.pending);
	quota_release(&t->quota);
	close(t->cfd);
	close(t->ufd);
	LIST_REMOVE(t, link);
	w->ntunnels--;
	metrics_conn(t->sb != NULL ? &t->sb->msb : NULL, t->lkind, false);
	worker_conn_closed(w, t->sb);
	sandbox_unref(t->sb);
	free(t->strs);
	free(t);
}

void
tunnel_abort_sandbox(struct worker *w, struct sandbox *sb)
{
	struct tunnel	*t, *tn;

	for (t = LIST_FIRST(&w->tunnels); t != NULL; t = tn) {
		tn = LIST_NEXT(t, link);
		if (t->sb == sb)
			tunnel_close(t, TUNNEL_END_SHUTDOWN);
	}
}
