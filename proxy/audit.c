/*
 * audit.c - JSON audit lines, queued by workers, written by one thread.
 *
 * Not here: deciding anything.  Callers build a struct audit_rec from
 * what they know; this file only formats and writes it.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proxy/audit.h"
#include "proxy/log.h"
#include "proxy/util.h"

#define AUDIT_LINE_STACK_BYTES	2048
#define AUDIT_LINE_MAX_BYTES	16384	/* longest line (detail, path cut before) */
#define AUDIT_BATCH_US		20000	/* lines gather this long before a write */
#define AUDIT_FLUSH_BYTES	(256u << 10) /* ... unless this much is queued */

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
} A = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.cv = PTHREAD_COND_INITIALIZER,
	.fdmu = PTHREAD_MUTEX_INITIALIZER,
	.fd = -1,
};

static void	*audit_writer(void *arg);
static int	 audit_open(const char *path, int *own);
static void	 audit_write_all(int fd, const char *buf, size_t len);

void
audit_rec_init(struct audit_rec *r)
{
	memset(r, 0, sizeof(*r));
	r->port = -1;
	r->bytes_up = -1;
	r->bytes_down = -1;
	r->duration_ms = -1;
	r->asn = -1;
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
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY,
	    0640);
	if (fd == -1)
		return -2;
	*own = 1;
	return fd;
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
	/* Signals are the main thread's: the writer takes none. */
	if (util_thread_start(&A.thr, audit_writer, NULL) == -1)
		return -1;
	A.running = 1;
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
	pthread_mutex_unlock(&A.fdmu);
	if (oldown)
		close(oldfd);
	return 0;
}

void
audit_reopen(void)
{
	pthread_mutex_lock(&A.mu);
	A.reopen = 1;
	pthread_cond_signal(&A.cv);
	pthread_mutex_unlock(&A.mu);
}

static void
audit_write_all(int fd, const char *buf, size_t len)
{
	static uint64_t	last_warn_ms;
	ssize_t		n;

	while (len > 0) {
		n = write(fd, buf, len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			uint64_t now = util_now_ms();

			if (now - last_warn_ms > 60000) {
				last_warn_ms = now;
				log_warn("audit: write failed, %zu bytes lost",
				    len);
			}
			return;
		}
		buf += n;
		len -= n;
	}
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

	for (;;) {
		pthread_mutex_lock(&A.mu);
		/*
		 * Wait for the first line, then let more gather for
		 * AUDIT_BATCH_US before writing: a wake-up and a write(2) per
		 * batch, not per request.  A worker signals only when the
		 * queue goes from empty to not empty while the writer sleeps,
		 * or grows past AUDIT_FLUSH_BYTES while the batch gathers.
		 */
		A.writer_busy = 0;
		while (A.qlen == 0 && !A.stop && !A.reopen && A.dropped == 0)
			pthread_cond_wait(&A.cv, &A.mu);
		if (!A.stop && A.qlen < AUDIT_FLUSH_BYTES) {
			struct timespec dl;

			/* A stop (or reopen) ends the wait at once: moatd
			 * exits without sitting out the batch. */
			clock_gettime(CLOCK_MONOTONIC, &dl);
			dl.tv_nsec += AUDIT_BATCH_US * 1000L;
			if (dl.tv_nsec >= 1000000000L) {
				dl.tv_sec++;
				dl.tv_nsec -= 1000000000L;
			}
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
			}
		}
		if (A.fd >= 0 && len > 0)
			audit_write_all(A.fd, buf, len);
		if (A.fd >= 0 && dropped > 0) {
			char line[160], ts[40];
			int n = snprintf(line, sizeof(line),
			    "{\"ts\":\"%s\",\"event\":\"audit-dropped\","
			    "\"dropped\":%llu}\n", util_wallclock(ts, sizeof(ts)),
			    (unsigned long long)dropped);

			audit_write_all(A.fd, line, n);
		}
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

static void
jw_str(struct jw *w, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	char		  esc[6];

	jw_raw(w, "\"", 1);
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			jw_raw(w, esc, 2);
		} else if (c < 0x20 || c >= 0x7f) {
			esc[0] = '\\';
			esc[1] = 'u';
			esc[2] = '0';
			esc[3] = '0';
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 0xf];
			jw_raw(w, esc, 6);
		} else if (w->len + 1 < w->cap)
			w->p[w->len++] = (char)c;
		else
			w->overflow = 1;
	}
	jw_raw(w, "\"", 1);
}

static void
jw_key(struct jw *w, const char *key)
{
	if (w->nfields++ > 0)
		jw_raw(w, ",", 1);
	jw_raw(w, "\"", 1);
	jw_raw(w, key, strlen(key));
	jw_raw(w, "\":", 2);
}

static void
jw_kstr(struct jw *w, const char *key, const char *v)
{
	if (v == NULL)
		return;
	jw_key(w, key);
	jw_str(w, v);
}

static void
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
	jw_raw(w, "\"", 1);
	jw_raw(w, base, strlen(base));
	jw_raw(w, ms, 5);
	jw_raw(w, "\"", 1);
}

/* Formats r as one line (with "\n") into buf; returns its length or 0. */
static size_t
audit_format(const struct audit_rec *r, char *buf, size_t cap)
{
	struct jw	w = { buf, 0, cap, 0, 0 };
	char		path[AUDIT_PATH_MAX_BYTES + 4];
	size_t		i;

	jw_raw(&w, "{", 1);
	jw_ts(&w);
	jw_kstr(&w, "event", r->event);
	jw_kint(&w, "id", (int64_t)r->id);
	jw_kstr(&w, "sandbox", r->sandbox);
	jw_kstr(&w, "proto", r->proto);
	jw_kstr(&w, "client", r->client);
	jw_kstr(&w, "host", r->host);
	jw_kint(&w, "port", r->port);
	jw_kstr(&w, "sni", r->sni);
	jw_key(&w, "ip");
	if (r->ip != NULL)
		jw_str(&w, r->ip);
	else
		jw_raw(&w, "null", 4);
	jw_kstr(&w, "country", r->country);
	jw_kint(&w, "asn", r->asn);
	jw_kstr(&w, "verdict", r->verdict == POLICY_ALLOW ? "allow" : "deny");
	jw_kstr(&w, "reason", policy_reason_str(r->reason));
	jw_key(&w, "rule");
	if (r->rule != NULL)
		jw_str(&w, r->rule);
	else
		jw_raw(&w, "null", 4);
	jw_kstr(&w, "method", r->method);
	if (r->path != NULL) {
		if (strlen(r->path) > AUDIT_PATH_MAX_BYTES) {
			memcpy(path, r->path, AUDIT_PATH_MAX_BYTES);
			memcpy(path + AUDIT_PATH_MAX_BYTES, "...", 4);
			jw_kstr(&w, "path", path);
		} else
			jw_kstr(&w, "path", r->path);
	}
	if (r->status > 0)
		jw_kint(&w, "status", r->status);
	jw_kint(&w, "bytes_up", r->bytes_up);
	jw_kint(&w, "bytes_down", r->bytes_down);
	jw_kint(&w, "duration_ms", r->duration_ms);
	if (r->injected != NULL) {
		jw_key(&w, "injected");
		jw_raw(&w, "[", 1);
		for (i = 0; r->injected[i] != NULL; i++) {
			if (i > 0)
				jw_raw(&w, ",", 1);
			jw_str(&w, r->injected[i]);
		}
		jw_raw(&w, "]", 1);
	}
	jw_kstr(&w, "qtype", r->qtype);
	jw_kstr(&w, "answer", r->answer);
	jw_kstr(&w, "end", r->end);
	jw_kstr(&w, "detail", r->detail);
	jw_raw(&w, "}\n", 2);
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

	pthread_mutex_lock(&A.mu);
	if (A.qlen + n > AUDIT_QUEUE_MAX_BYTES)
		A.dropped++;
	else {
		if (A.qlen + n > A.qcap) {
			size_t nc = A.qcap ? A.qcap : 65536;
			char *nq;

			while (nc < A.qlen + n)
				nc *= 2;
			if ((nq = realloc(A.q, nc)) == NULL)
				A.dropped++;
			else {
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
	pthread_mutex_lock(&A.mu);
	A.dropped++;
	pthread_cond_signal(&A.cv);
	pthread_mutex_unlock(&A.mu);
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
}
