/*
 * audit.c - JSON audit lines, queued by workers, written by one thread.
 *
 * Not here: deciding anything.  Callers build a struct audit_rec from
 * what they know; this file only formats and writes it.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "policy/policy.h"
#include "proxy/audit.h"
#include "proxy/auditchain.h"
#include "proxy/log.h"
#include "proxy/metrics.h"
#include "proxy/secretscan.h"
#include "proxy/util.h"
#include "proxy/watch.h"

#define AUDIT_LINE_STACK_BYTES	2048
#define AUDIT_LINE_MAX_BYTES	24576	/* longest line (detail, path, request
					   ids cut before, each byte escaped) */
#define AUDIT_BATCH_US		20000	/* lines gather this long before a write */
#define AUDIT_FLUSH_BYTES	(256u << 10) /* ... unless this much is queued */

#define AUDIT_RETRY_MS		1000	/* held lines are tried again this often */
#define AUDIT_WARN_MS		10000	/* one stderr line per this, at most */
#define AUDIT_LINE_WAIT_MS	1000	/* a stalled reader, to finish a line */

static struct {
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;
	pthread_mutex_t	 fdmu;		/* fd, own_fd, path (writer vs reload) */
	char		*q;		/* queued lines */
	size_t		 qlen, qcap;
	uint64_t	 dropped;	/* lines lost to a full queue */
	int		 fd;		/* -1: no audit */
	int		 own_fd;	/* fd is a file we opened */
	char		*path;
	int		 reopen;
	int		 stop;
	int		 writer_busy;	/* writer is writing: no signal needed */
	int		 running;
	pthread_t	 thr;
	/* The writer's own state (A.fdmu): */
	char		*held;		/* whole lines a failed write left */
	size_t		 heldlen, heldcap;
	uint64_t	 lost;		/* lines lost, not yet in a line */
	uint64_t	 lost_total;	/* since start, for stderr */
	int		 torn;		/* a piece of a line is in the sink */
	atomic_int	 failing;	/* lines wait or are lost: the sink
					 * does not take them */
	_Atomic uint64_t warned_ms;	/* last stderr line about it */
	/* audit.hash_chain (A.fdmu): */
	int		 chain;		/* chain the lines written */
	int		 chain_new;	/* a new destination: a chain-start
					 * line goes first */
	int		 chain_how;	/* its AUDITCHAIN_*, or -1: not
					 * seeded yet */
	struct auditchain *ch;
	char		*cbuf;		/* the chained copy of a write */
	size_t		 ccap;
	_Atomic uint64_t dropped_total;	/* lines lost since start (metrics) */
} A = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.cv = PTHREAD_COND_INITIALIZER,
	.fdmu = PTHREAD_MUTEX_INITIALIZER,
	.fd = -1,
	.chain_how = -1,
};

static void	*audit_writer(void *arg);
static int	 audit_open(const char *path, int *own);
static int	 audit_write_lines(int fd, const char *buf, size_t len,
		    size_t *done);
static void	 audit_flush(const char *buf, size_t len, uint64_t dropped);
static void	 audit_warn_lost(const char *why);
static void	 audit_hold(const char *buf, size_t len);

void
audit_rec_init(struct audit_rec *r)
{
	memset(r, 0, sizeof(*r));
	r->port = -1;
	r->bytes_up = -1;
	r->bytes_down = -1;
	r->duration_ms = -1;
	r->asn = -1;
	r->refused = -1;
	r->limit = r->per_seconds = r->used = -1;
}

static int
audit_open(const char *path, int *own)
{
	int	fd;

	*own = 0;
	if (path == NULL)
		return -1;
	if (strcmp(path, "-") == 0)
		return STDERR_FILENO;
	/*
	 * O_NONBLOCK: a FIFO or socket whose reader stops must not hold the
	 * writer (and with it a reload, or moatd's exit) in write(2): lines
	 * it does not take are held and counted like on a full disk.  A FIFO
	 * without a reader is an error (ENXIO), not a wait.
	 */
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY |
	    O_NONBLOCK, 0640);
	if (fd == -1) {
		if (errno == ENXIO)
			errno = EPIPE;	/* says "no reader" better */
		return -2;
	}
	*own = 1;
	return fd;
}

/*
 * Says where decisions go, at start and when a reload changes it: moatd
 * run by hand logs no refusal of its own (its audit lines are the
 * record), so the one running it learns here where to look.
 */
static void
audit_say_where(const char *path)
{
	if (path == NULL)
		log_info("audit: off; decisions are not recorded");
	else if (strcmp(path, "-") == 0)
		log_info("audit: every decision, refusals included, is an "
		    "audit line on stderr");
	else
		log_info("audit: every decision, refusals included, is an "
		    "audit line in %s", path);
}

int
audit_start(const char *path)
{
	int	fd, own;

	fd = audit_open(path, &own);
	if (fd == -2)
		return -1;
	A.fd = fd;
	A.own_fd = own;
	A.path = path ? strdup(path) : NULL;
	/* Read now, while the file can be read (before the user switch). */
	if (A.chain && A.ch != NULL && fd >= 0)
		A.chain_how = auditchain_seed(A.ch, fd, own ? A.path : NULL);
	/* Signals are the main thread's: the writer takes none. */
	if (util_thread_start(&A.thr, audit_writer, NULL) == -1)
		return -1;
	A.running = 1;
	audit_say_where(path);
	return 0;
}

int
audit_set_path(const char *path)
{
	int	 fd, own, oldfd, oldown;
	char	*np = NULL;

	pthread_mutex_lock(&A.fdmu);
	if ((A.path == NULL && path == NULL) ||
	    (A.path != NULL && path != NULL && strcmp(A.path, path) == 0)) {
		pthread_mutex_unlock(&A.fdmu);
		return 0;
	}
	fd = audit_open(path, &own);
	if (fd == -2 || (path != NULL && (np = strdup(path)) == NULL)) {
		if (fd >= 0 && own)
			close(fd);
		pthread_mutex_unlock(&A.fdmu);
		return -1;
	}
	oldfd = A.fd;
	oldown = A.own_fd;
	A.fd = fd;
	A.own_fd = own;
	free(A.path);
	A.path = np;
	A.chain_new = A.chain;
	if (A.chain)
		A.chain_how = auditchain_seed(A.ch, fd, own ? np : NULL);
	pthread_mutex_unlock(&A.fdmu);
	if (oldown)
		close(oldfd);
	audit_say_where(path);
	return 0;
}

int
audit_set_chain(int on)
{
	int	rc = 0;

	pthread_mutex_lock(&A.fdmu);
	if (on && A.ch == NULL && (A.ch = auditchain_new()) == NULL)
		rc = -1;
	else {
		if (on && !A.chain) {
			A.chain_new = 1;
			A.chain_how = A.fd >= 0 ? auditchain_seed(A.ch, A.fd,
			    A.own_fd ? A.path : NULL) : -1;
		}
		A.chain = on;
	}
	pthread_mutex_unlock(&A.fdmu);
	return rc;
}

/*
 * Writes whole lines as audit_write_lines() does, chained when
 * audit.hash_chain is on: the chain goes on only by the lines written,
 * and *done counts the bytes of buf (unchained) that made it.  Under
 * A.fdmu.
 */
static int
audit_put(int fd, const char *buf, size_t len, size_t *done)
{
	ssize_t		 n;
	size_t		 cdone = 0, lines = 0, i;
	const char	*p;
	int		 rc;

	if (!A.chain || A.ch == NULL)
		return audit_write_lines(fd, buf, len, done);
	if ((n = auditchain_apply(A.ch, buf, len, &A.cbuf, &A.ccap)) < 0) {
		*done = 0;
		errno = ENOMEM;
		return -1;
	}
	rc = audit_write_lines(fd, A.cbuf, (size_t)n, &cdone);
	auditchain_commit(A.ch, A.cbuf, cdone);
	if (rc == 0) {
		*done = len;
		return 0;
	}
	for (i = 0; i < cdone; i++)
		lines += A.cbuf[i] == '\n';
	for (p = buf; lines > 0 && (p = memchr(p, '\n',
	    (size_t)(buf + len - p))) != NULL; p++)
		lines--;
	*done = p != NULL && lines == 0 && cdone > 0 ? (size_t)(p - buf) : 0;
	return rc;
}

/*
 * A new destination with the chain on: its chain-start line goes before
 * every line held or queued (it is held first, so that a failing sink
 * writes it first too).  Under A.fdmu.
 */
static void
audit_chain_begin(void)
{
	char	line[512], ts[40];
	size_t	n;

	A.chain_new = 0;
	if (!A.chain || A.ch == NULL || A.fd < 0)
		return;
	if (A.chain_how < 0)
		A.chain_how = auditchain_seed(A.ch, A.fd, A.own_fd ? A.path :
		    NULL);
	n = auditchain_start_line(A.chain_how, util_wallclock(ts, sizeof(ts)),
	    line, sizeof(line));
	A.chain_how = -1;
	if (n == 0)
		return;
	if (A.heldlen == 0) {
		audit_hold(line, n);
		return;
	}
	audit_hold(line, n);	/* room at the end, then to the front */
	if (A.heldlen >= n && memcmp(A.held + A.heldlen - n, line, n) == 0) {
		memmove(A.held + n, A.held, A.heldlen - n);
		memcpy(A.held, line, n);
	}
}

void
audit_reopen(void)
{
	pthread_mutex_lock(&A.mu);
	A.reopen = 1;
	pthread_cond_signal(&A.cv);
	pthread_mutex_unlock(&A.mu);
}

/*
 * How much of buf to write to a pipe at once: whole lines up to PIPE_BUF,
 * which a pipe takes whole or not at all, so that a stalled reader leaves
 * no piece of a line in it; a longer line alone.
 */
static size_t
audit_pipe_step(const char *buf, size_t len)
{
	const char	*nl;
	size_t		 step = 0, end;

	while (step < len) {
		if ((nl = memchr(buf + step, '\n', len - step)) == NULL)
			end = len;
		else
			end = (size_t)(nl - buf) + 1;
		if (end > PIPE_BUF && step > 0)
			break;
		step = end;
		if (step >= PIPE_BUF)
			break;
	}
	return step;
}

/*
 * A non-blocking sink (FIFO, socket) took part of a line: waits up to
 * AUDIT_LINE_WAIT_MS for room to finish it.  1 if there is room.
 */
static int
audit_wait_writable(int fd)
{
	struct pollfd	pfd = { .fd = fd, .events = POLLOUT };
	int		n;

	do
		n = poll(&pfd, 1, AUDIT_LINE_WAIT_MS);
	while (n == -1 && errno == EINTR);
	return n == 1 && (pfd.revents & POLLOUT);
}

/*
 * Writes buf (whole lines) to fd.  Returns 0 when all of it was written;
 * else -1 with errno, and *done the bytes of the whole lines that made it.
 * A line is never left cut in a file: after a short write (a full disk)
 * the file is cut back to the end of the last whole line; where that
 * cannot be done (not a regular file), A.torn makes the next write start
 * with a newline, so that the lines after it stay whole.
 */
static int
audit_write_lines(int fd, const char *buf, size_t len, size_t *done)
{
	struct stat	st;
	off_t		start = -1;
	size_t		w = 0, whole;
	ssize_t		n;
	int		saved = 0;

	if (A.torn) {
		if (WRITE_LIT(fd, "\n") != 1) {
			*done = 0;
			return -1;
		}
		A.torn = 0;
	}
	if (fstat(fd, &st) == -1)
		st.st_mode = 0;
	if (S_ISREG(st.st_mode))
		start = st.st_size;	/* O_APPEND: lines go there */
	while (w < len) {
		n = write(fd, buf + w, S_ISFIFO(st.st_mode) ?
		    audit_pipe_step(buf + w, len - w) : len - w);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN && w > 0 &&
		    buf[w - 1] != '\n' && audit_wait_writable(fd))
			continue;	/* finish the line begun */
		if (n <= 0) {
			saved = n == 0 ? ENOSPC : errno;
			break;
		}
		w += (size_t)n;
	}
	if (w == len) {
		*done = len;
		return 0;
	}
	for (whole = w; whole > 0 && buf[whole - 1] != '\n'; whole--)
		;
	if (whole < w && (start < 0 ||
	    ftruncate(fd, start + (off_t)whole) == -1))
		A.torn = 1;
	*done = whole;
	errno = saved;
	return -1;
}

/* One stderr line about lost or waiting lines, at most every
 * AUDIT_WARN_MS (any thread). */
static void
audit_warn_lost(const char *why)
{
	uint64_t	now = util_now_ms(), last;

	last = atomic_load(&A.warned_ms);
	if (last != 0 && now - last < AUDIT_WARN_MS)
		return;
	if (!atomic_compare_exchange_strong(&A.warned_ms, &last, now))
		return;
	log_warnx("audit: %s", why);
}

/*
 * Appends buf to the held lines, up to the queue's bound: lines past it
 * are lost, and counted.
 */
static void
audit_hold(const char *buf, size_t len)
{
	size_t	keep = len, nc;
	char	*nh;

	if (A.heldlen + keep > AUDIT_QUEUE_MAX_BYTES) {
		keep = A.heldlen >= AUDIT_QUEUE_MAX_BYTES ? 0 :
		    AUDIT_QUEUE_MAX_BYTES - A.heldlen;
		while (keep > 0 && buf[keep - 1] != '\n')
			keep--;
	}
	if (A.heldlen + keep > A.heldcap) {
		for (nc = A.heldcap ? A.heldcap : 65536; nc < A.heldlen + keep;
		    nc *= 2)
			;
		if ((nh = realloc(A.held, nc)) == NULL)
			keep = 0;
		else {
			A.held = nh;
			A.heldcap = nc;
		}
	}
	memcpy(A.held + A.heldlen, buf, keep);
	A.heldlen += keep;
	for (; keep < len; keep++)
		if (buf[keep] == '\n') {
			A.lost++;
			atomic_fetch_add(&A.dropped_total, 1);
		}
}

/*
 * Writes what the writer took from the queue (after the lines held from
 * before), then, once nothing is held, one "audit-dropped" line for every
 * line lost so far.  Under A.fdmu.
 */
static void
audit_flush(const char *buf, size_t len, uint64_t dropped)
{
	char		 line[160], ts[40], msg[256];
	size_t		 done;
	int		 n, failed = 0, saved = 0;

	A.lost += dropped;
	A.lost_total += dropped;
	if (A.fd < 0) {
		A.lost = 0;
		return;
	}
	if (A.chain_new)
		audit_chain_begin();
	if (A.heldlen > 0 && len > 0) {
		audit_hold(buf, len);
		len = 0;
	}
	if (A.heldlen > 0) {
		if (audit_put(A.fd, A.held, A.heldlen, &done) == -1) {
			failed = 1;
			saved = errno;
		}
		memmove(A.held, A.held + done, A.heldlen - done);
		A.heldlen -= done;
	} else if (len > 0 &&
	    audit_put(A.fd, buf, len, &done) == -1) {
		failed = 1;
		saved = errno;
		audit_hold(buf + done, len - done);
	}
	if (!failed && A.lost > 0) {
		n = snprintf(line, sizeof(line), "{\"ts\":\"%s\",\"event\":"
		    "\"audit-dropped\",\"dropped\":%llu}\n",
		    util_wallclock(ts, sizeof(ts)),
		    (unsigned long long)A.lost);
		if (audit_put(A.fd, line, (size_t)n, &done) == -1) {
			failed = 1;
			saved = errno;
		} else
			A.lost = 0;
	}
	if (failed) {
		atomic_store(&A.failing, 1);
		snprintf(msg, sizeof(msg), "cannot write to %s: %s; %zu bytes "
		    "of lines wait, %llu lines lost since start",
		    A.path != NULL ? A.path : "stderr", saved == EAGAIN ?
		    "its reader does not take lines (stalled)" :
		    strerror(saved), A.heldlen,
		    (unsigned long long)A.lost_total);
		audit_warn_lost(msg);
		return;
	}
	if (atomic_exchange(&A.failing, 0)) {
		atomic_store(&A.warned_ms, 0);
		log_warnx("audit: writing again; %llu lines lost since start",
		    (unsigned long long)A.lost_total);
	}
}

int
audit_ok(void)
{
	return !atomic_load(&A.failing);
}

int
audit_refuses(const struct moat_config *cfg)
{
	return cfg != NULL && cfg->audit_deny && atomic_load(&A.failing);
}

static int
timespec_before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec ||
	    (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/*
 * The writer: takes the whole queue under A.mu (workers wait only for a
 * memcpy), then writes it holding A.fdmu alone, so a slow disk stalls no
 * worker; a reload or reopen swaps the fd under A.fdmu.
 */
static void *
audit_writer(void *arg)
{
	char		*buf = NULL, *t;
	size_t		 cap = 0, len, tc;
	uint64_t	 dropped;
	int		 stop, reopen;
	struct timespec	 now, next = { 0, 0 };	/* next write no sooner */

	for (;;) {
		pthread_mutex_lock(&A.mu);
		/*
		 * Wait for the first line, then (see below) let more gather:
		 * a wake-up and a write(2) per batch, not per request, under
		 * load.  A worker signals only when the
		 * queue goes from empty to not empty while the writer sleeps,
		 * or grows past AUDIT_FLUSH_BYTES while the batch gathers.
		 */
		A.writer_busy = 0;
		while (A.qlen == 0 && !A.stop && !A.reopen && A.dropped == 0) {
			struct timespec rt;

			if (A.heldlen == 0 && A.lost == 0) {
				pthread_cond_wait(&A.cv, &A.mu);
				continue;
			}
			/* Lines wait for the sink: try again by and by. */
			clock_gettime(CLOCK_MONOTONIC, &rt);
			rt.tv_sec += AUDIT_RETRY_MS / 1000;
			if (pthread_cond_clockwait(&A.cv, &A.mu,
			    CLOCK_MONOTONIC, &rt) == ETIMEDOUT)
				break;
		}
		/*
		 * At most one write per AUDIT_BATCH_US: a line that finds the
		 * writer idle for longer is written at once (a quiet moatd's
		 * lines are in the file before its answer is), the ones that
		 * follow it gather until AUDIT_BATCH_US after that write.  A
		 * stop (or reopen) ends the wait at once: moatd exits without
		 * sitting out the batch.
		 */
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (!A.stop && A.qlen < AUDIT_FLUSH_BYTES &&
		    timespec_before(&now, &next)) {
			struct timespec dl = next;

			A.writer_busy = 1;
			while (!A.stop && !A.reopen &&
			    A.qlen < AUDIT_FLUSH_BYTES &&
			    pthread_cond_clockwait(&A.cv, &A.mu,
			    CLOCK_MONOTONIC, &dl) != ETIMEDOUT)
				;
		}
		A.writer_busy = 1;
		t = A.q;
		tc = A.qcap;
		A.q = buf;
		A.qcap = cap;
		buf = t;
		cap = tc;
		len = A.qlen;
		A.qlen = 0;
		dropped = A.dropped;
		A.dropped = 0;
		stop = A.stop;
		reopen = A.reopen;
		A.reopen = 0;
		pthread_mutex_unlock(&A.mu);

		pthread_mutex_lock(&A.fdmu);
		if (reopen && A.own_fd && A.path != NULL) {
			int nfd, own;

			nfd = audit_open(A.path, &own);
			if (nfd < 0)
				log_warn("audit: cannot reopen %s, keeping the "
				    "old file", A.path);
			else {
				close(A.fd);
				A.fd = nfd;
				A.chain_new = A.chain;
			}
		}
		audit_flush(buf, len, dropped);
		clock_gettime(CLOCK_MONOTONIC, &next);
		next.tv_nsec += AUDIT_BATCH_US * 1000L;
		if (next.tv_nsec >= 1000000000L) {
			next.tv_sec++;
			next.tv_nsec -= 1000000000L;
		}
		if (stop && (A.heldlen > 0 || A.lost > 0))
			log_warnx("audit: stopping with %zu bytes of lines "
			    "unwritten and %llu lines lost", A.heldlen,
			    (unsigned long long)A.lost);
		pthread_mutex_unlock(&A.fdmu);
		if (stop)
			break;
	}
	free(buf);
	return NULL;
}

/*
 * The line is formatted by hand rather than through jansson: an audit
 * line is a flat object of strings and integers, and building a json_t
 * per field cost a third of moatd's instructions per proxied request
 * (callgrind).  Every string goes through jw_str(), which escapes per
 * RFC 8259 and also escapes every byte >= 0x80, so the line is valid JSON
 * (and plain ASCII) whatever a peer managed to put in a field.
 * tests/unit/test_audit.c parses lines back with jansson.
 */
struct jw {
	char	*p;
	size_t	 len;
	size_t	 cap;
	int	 overflow;
	int	 nfields;
};

/* jw_raw() of a string literal. */
#define JW_LIT(w, s)	jw_raw((w), "" s "", LIT_LEN(s))

static void
jw_raw(struct jw *w, const char *s, size_t n)
{
	if (w->len + n >= w->cap) {
		w->overflow = 1;
		return;
	}
	memcpy(w->p + w->len, s, n);
	w->len += n;
}

/* A byte jw_str() copies as it is: printable ASCII but '"' and '\\'. */
#define JW_PLAIN(c)	((c) >= 0x20 && (c) < 0x7f && (c) != '"' && (c) != '\\')

/* Copies each run of plain bytes at once: most strings are one run. */
static void
jw_str(struct jw *w, const char *s)
{
	static const char	 hex[] = "0123456789abcdef";
	const unsigned char	*p = (const unsigned char *)s, *q;
	char			 esc[6];

	JW_LIT(w, "\"");
	for (;;) {
		for (q = p; JW_PLAIN(*q); q++)
			;
		if (q > p)
			jw_raw(w, (const char *)p, (size_t)(q - p));
		if (*q == '\0')
			break;
		esc[0] = '\\';
		if (*q == '"' || *q == '\\') {
			esc[1] = (char)*q;
			jw_raw(w, esc, 2);
		} else {
			esc[1] = 'u';
			esc[2] = '0';
			esc[3] = '0';
			esc[4] = hex[*q >> 4];
			esc[5] = hex[*q & 0xf];
			jw_raw(w, esc, 6);
		}
		p = q + 1;
	}
	JW_LIT(w, "\"");
}

static inline void
jw_key(struct jw *w, const char *key)
{
	if (w->nfields++ > 0)
		JW_LIT(w, ",");
	JW_LIT(w, "\"");
	jw_raw(w, key, strlen(key));
	JW_LIT(w, "\":");
}

static inline void
jw_kstr(struct jw *w, const char *key, const char *v)
{
	if (v == NULL)
		return;
	jw_key(w, key);
	jw_str(w, v);
}

static inline void
jw_kint(struct jw *w, const char *key, int64_t v)
{
	char	buf[24], *q = buf + sizeof(buf);
	uint64_t u;

	if (v < 0)
		return;
	u = (uint64_t)v;
	do {
		*--q = (char)('0' + u % 10);
		u /= 10;
	} while (u != 0);
	jw_key(w, key);
	jw_raw(w, q, (size_t)(buf + sizeof(buf) - q));
}

/* "2026-11-29T11:30:20.123Z", reformatting the date once per second. */
static void
jw_ts(struct jw *w)
{
	static _Thread_local time_t	sec = -1;
	static _Thread_local char	base[24];
	struct timespec			ts;
	struct tm			tm;
	char				ms[6];
	long				m;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (ts.tv_sec != sec) {
		gmtime_r(&ts.tv_sec, &tm);
		strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
		sec = ts.tv_sec;
	}
	m = ts.tv_nsec / 1000000;
	ms[0] = '.';
	ms[1] = (char)('0' + m / 100);
	ms[2] = (char)('0' + m / 10 % 10);
	ms[3] = (char)('0' + m % 10);
	ms[4] = 'Z';
	jw_key(w, "ts");
	JW_LIT(w, "\"");
	jw_raw(w, base, strlen(base));
	jw_raw(w, ms, 5);
	JW_LIT(w, "\"");
}

/*
 * The fields that repeat what the client sent, with every secret value or
 * placeholder in them written "[secret:NAME]" (before the path is cut, so
 * that no piece of a value survives the cut).  f[i] is what to write;
 * own[i] what to free.  A field that could not be redacted (memory)
 * is written "[redacted]".  f[AUDIT_F_IDS + k] is request id k.
 */
enum {
	AUDIT_F_HOST = 0, AUDIT_F_METHOD, AUDIT_F_PATH, AUDIT_F_DETAIL,
	AUDIT_F_TRACEPARENT, AUDIT_F_IDS
};
#define AUDIT_CLIENT_FIELDS	(AUDIT_F_IDS + MOAT_REQUEST_IDS_MAX)

static void
audit_redact(const struct audit_rec *r, const char *f[AUDIT_CLIENT_FIELDS],
    char *own[AUDIT_CLIENT_FIELDS])
{
	size_t	i;

	f[AUDIT_F_HOST] = r->host;
	f[AUDIT_F_METHOD] = r->method;
	f[AUDIT_F_PATH] = r->path;
	f[AUDIT_F_DETAIL] = r->detail;
	f[AUDIT_F_TRACEPARENT] = r->traceparent;
	for (i = 0; i < MOAT_REQUEST_IDS_MAX; i++)
		f[AUDIT_F_IDS + i] = i < r->nrequest_ids ?
		    r->request_id_values[i] : NULL;
	for (i = 0; i < AUDIT_CLIENT_FIELDS; i++) {
		own[i] = NULL;
		if (f[i] == NULL)
			continue;
		if (r->redact_fail) {
			f[i] = "[redacted]";
			continue;
		}
		if (r->redact == NULL)
			continue;
		own[i] = secretscan_redact(r->redact, f[i], r->redact_name,
		    r->redact_arg);
		if (own[i] != NULL)
			f[i] = own[i];
		else if (errno != 0)
			f[i] = "[redacted]";	/* fail closed */
	}
}

/* Formats r as one line (with "\n") into buf; returns its length or 0. */
static size_t
audit_format(const struct audit_rec *r, char *buf, size_t cap)
{
	struct jw	w = { buf, 0, cap, 0, 0 };
	char		path[AUDIT_PATH_MAX_BYTES + sizeof("...")];
	const char	*f[AUDIT_CLIENT_FIELDS];
	char		*own[AUDIT_CLIENT_FIELDS];
	size_t		i;

	audit_redact(r, f, own);

	JW_LIT(&w, "{");
	jw_ts(&w);
	jw_kstr(&w, "event", r->event);
	jw_kint(&w, "id", (int64_t)r->id);
	jw_kstr(&w, "sandbox", r->sandbox);
	jw_kstr(&w, "proto", r->proto);
	jw_kstr(&w, "client", r->client);
	jw_kstr(&w, "host", f[AUDIT_F_HOST]);
	jw_kint(&w, "port", r->port);
	jw_kstr(&w, "sni", r->sni);
	jw_key(&w, "ip");
	if (r->ip != NULL)
		jw_str(&w, r->ip);
	else
		JW_LIT(&w, "null");
	jw_kstr(&w, "country", r->country);
	jw_kint(&w, "asn", r->asn);
	jw_kstr(&w, "verdict", r->verdict == POLICY_ALLOW ? "allow" : "deny");
	jw_kstr(&w, "reason", policy_reason_str(r->reason));
	jw_key(&w, "rule");
	if (r->rule != NULL)
		jw_str(&w, r->rule);
	else
		JW_LIT(&w, "null");
	if (r->would_deny != POLICY_R_ALLOWED)
		jw_kstr(&w, "would_deny", policy_reason_str(r->would_deny));
	jw_kstr(&w, "method", f[AUDIT_F_METHOD]);
	if (f[AUDIT_F_PATH] != NULL) {
		if (strlen(f[AUDIT_F_PATH]) > AUDIT_PATH_MAX_BYTES) {
			memcpy(path, f[AUDIT_F_PATH], AUDIT_PATH_MAX_BYTES);
			memcpy(path + AUDIT_PATH_MAX_BYTES, "...",
			    sizeof("..."));
			jw_kstr(&w, "path", path);
		} else
			jw_kstr(&w, "path", f[AUDIT_F_PATH]);
	}
	if (r->status > 0)
		jw_kint(&w, "status", r->status);
	jw_kint(&w, "bytes_up", r->bytes_up);
	jw_kint(&w, "bytes_down", r->bytes_down);
	jw_kint(&w, "duration_ms", r->duration_ms);
	if (r->injected != NULL) {
		jw_key(&w, "injected");
		JW_LIT(&w, "[");
		for (i = 0; r->injected[i] != NULL; i++) {
			if (i > 0)
				JW_LIT(&w, ",");
			jw_str(&w, r->injected[i]);
		}
		JW_LIT(&w, "]");
	}
	jw_kstr(&w, "qtype", r->qtype);
	jw_kstr(&w, "answer", r->answer);
	jw_kstr(&w, "end", r->end);
	jw_kint(&w, "refused", r->refused);
	jw_kstr(&w, "quota", r->quota);
	jw_kstr(&w, "secret", r->secret);
	jw_kint(&w, "limit", r->limit);
	jw_kint(&w, "per_seconds", r->per_seconds);
	jw_kint(&w, "used", r->used);
	jw_kstr(&w, "traceparent", f[AUDIT_F_TRACEPARENT]);
	if (r->nrequest_ids > 0) {
		jw_key(&w, "request_id");
		JW_LIT(&w, "{");
		for (i = 0; i < r->nrequest_ids && i < MOAT_REQUEST_IDS_MAX;
		    i++) {
			if (i > 0)
				JW_LIT(&w, ",");
			jw_str(&w, r->request_id_names[i]);
			JW_LIT(&w, ":");
			jw_str(&w, f[AUDIT_F_IDS + i]);
		}
		JW_LIT(&w, "}");
	}
	jw_kstr(&w, "moat_request_id", r->moat_request_id);
	jw_kstr(&w, "detail", f[AUDIT_F_DETAIL]);
	JW_LIT(&w, "}\n");
	for (i = 0; i < AUDIT_CLIENT_FIELDS; i++)
		free(own[i]);
	return w.overflow ? 0 : w.len;
}

size_t
audit_format_line(const struct audit_rec *r, char *buf, size_t cap)
{
	return audit_format(r, buf, cap);
}

void
audit_emit(const struct audit_rec *r)
{
	char	 stack[AUDIT_LINE_STACK_BYTES], *line = stack;
	size_t	 n;

	metrics_audit(r);	/* counts it, by ids: formats nothing */
	if (!A.running)
		return;
	n = audit_format(r, stack, sizeof(stack));
	if (n == 0) {
		/* Long detail or path: one more try with room for it all. */
		size_t cap = AUDIT_LINE_MAX_BYTES;

		if ((line = malloc(cap)) == NULL ||
		    (n = audit_format(r, line, cap)) == 0)
			goto drop;
	}
	/* The sandbox's watchers (moat run, moat attach): the same line. */
	watch_feed(r->sandbox, r->verdict == POLICY_DENY ||
	    r->would_deny != POLICY_R_ALLOWED, line, n);

	pthread_mutex_lock(&A.mu);
	if (A.qlen + n > AUDIT_QUEUE_MAX_BYTES) {
		A.dropped++;
		atomic_fetch_add(&A.dropped_total, 1);
		atomic_store(&A.failing, 1);
		pthread_mutex_unlock(&A.mu);
		audit_warn_lost("the queue is full (the audit sink does not "
		    "take lines: stalled or full); lines are lost and counted "
		    "in an audit-dropped line");
		pthread_mutex_lock(&A.mu);
	} else {
		if (A.qlen + n > A.qcap) {
			size_t nc = A.qcap ? A.qcap : 65536;
			char *nq;

			while (nc < A.qlen + n)
				nc *= 2;
			if ((nq = realloc(A.q, nc)) == NULL) {
				A.dropped++;
				atomic_fetch_add(&A.dropped_total, 1);
			} else {
				A.q = nq;
				A.qcap = nc;
			}
		}
		if (A.qlen + n <= A.qcap) {
			memcpy(A.q + A.qlen, line, n);
			A.qlen += n;
		}
	}
	if (!A.writer_busy ? A.qlen == n :
	    A.qlen >= AUDIT_FLUSH_BYTES && A.qlen - n < AUDIT_FLUSH_BYTES)
		pthread_cond_signal(&A.cv);	/* first line, or a full batch */
	pthread_mutex_unlock(&A.mu);
	if (line != stack)
		free(line);
	return;
 drop:
	if (line != stack)
		free(line);
	atomic_fetch_add(&A.dropped_total, 1);
	pthread_mutex_lock(&A.mu);
	A.dropped++;
	pthread_cond_signal(&A.cv);
	pthread_mutex_unlock(&A.mu);
}

void
audit_stats(uint64_t *queued_bytes, uint64_t *dropped)
{
	pthread_mutex_lock(&A.mu);
	*queued_bytes = A.qlen;
	pthread_mutex_unlock(&A.mu);
	*dropped = atomic_load(&A.dropped_total);
}

void
audit_stop(void)
{
	if (!A.running)
		return;
	pthread_mutex_lock(&A.mu);
	A.stop = 1;
	pthread_cond_signal(&A.cv);
	pthread_mutex_unlock(&A.mu);
	pthread_join(A.thr, NULL);
	A.running = 0;
	if (A.own_fd)
		close(A.fd);
	A.fd = -1;
	free(A.path);
	A.path = NULL;
	free(A.q);
	A.q = NULL;
	A.qlen = A.qcap = 0;
	free(A.held);
	A.held = NULL;
	A.heldlen = A.heldcap = 0;
	A.lost = A.lost_total = 0;
	A.torn = 0;
	auditchain_free(A.ch);
	A.ch = NULL;
	free(A.cbuf);
	A.cbuf = NULL;
	A.ccap = 0;
	A.chain = A.chain_new = 0;
	A.chain_how = -1;
	atomic_store(&A.failing, 0);
}
