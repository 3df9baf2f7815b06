/*
 * watch.c - audit lines handed from the workers to the admin connections
 * that watch a sandbox (watch.h).
 *
 * One mutex guards the list of watches and every watch's queue: workers
 * hold it for a name comparison and a memcpy per watch, the main thread
 * for a pointer swap.  The list changes in the main thread only, under
 * the mutex, so the main thread reads it without.  One eventfd wakes the
 * main loop, written once per batch (when nothing woke it yet).
 *
 * Not here: the framing, and what happens to a watcher that does not read
 * (admin.c keeps its own buffer bounded and takes lines only while there
 * is room; the rest waits here, bounded, and past that is counted).
 */
#include "config.h"

#include <sys/eventfd.h>
#include <sys/queue.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "proxy/watch.h"

#define WATCH_QUEUE_START	(16u << 10)	/* first allocation */

struct watch {
	char			*name;
	int			 all;
	void			(*ready)(void *);
	void			*arg;
	/* Under W.mu: */
	char			*q;		/* lines offered, not taken */
	size_t			 qlen, qcap;
	uint64_t		 dropped;	/* lines lost since the last take */
	/* The main thread's: the buffer the last take handed out. */
	char			*taken;
	size_t			 takencap;
	LIST_ENTRY(watch)	 link;
};

static struct {
	pthread_mutex_t		 mu;
	LIST_HEAD(, watch)	 list;
	atomic_int		 n;		/* watches: 0 and workers skip */
	atomic_int		 nall;		/* ... of every line: 0 and
						   workers skip allowed ones */
	int			 efd;
	int			 wake_pending;	/* under mu */
	struct event		*ev;
} W = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.list = LIST_HEAD_INITIALIZER(W.list),
	.efd = -1,
};

static void	watch_wake_cb(evutil_socket_t fd, short what, void *arg);

/* The eventfd and its event in base's loop, made with the first watch. */
static int
watch_wake_init(struct event_base *base)
{
	if (W.ev != NULL)
		return 0;
	if ((W.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) == -1)
		return -1;
	if ((W.ev = event_new(base, W.efd, EV_READ | EV_PERSIST,
	    watch_wake_cb, NULL)) == NULL || event_add(W.ev, NULL) == -1) {
		if (W.ev != NULL)
			event_free(W.ev);
		W.ev = NULL;
		close(W.efd);
		W.efd = -1;
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

struct watch *
watch_new(struct event_base *base, const char *name, int all,
    void (*ready)(void *), void *arg)
{
	struct watch	*w;

	if (watch_wake_init(base) == -1)
		return NULL;
	if ((w = calloc(1, sizeof(*w))) == NULL ||
	    (w->name = strdup(name)) == NULL) {
		free(w);
		return NULL;
	}
	w->all = all;
	w->ready = ready;
	w->arg = arg;
	pthread_mutex_lock(&W.mu);
	LIST_INSERT_HEAD(&W.list, w, link);
	atomic_fetch_add(&W.n, 1);
	if (all)
		atomic_fetch_add(&W.nall, 1);
	pthread_mutex_unlock(&W.mu);
	return w;
}

const char *
watch_name(const struct watch *w)
{
	return w->name;
}

void
watch_set_all(struct watch *w, int all)
{
	pthread_mutex_lock(&W.mu);
	if (all && !w->all)
		atomic_fetch_add(&W.nall, 1);
	else if (!all && w->all)
		atomic_fetch_sub(&W.nall, 1);
	w->all = all;
	pthread_mutex_unlock(&W.mu);
}

void
watch_free(struct watch *w)
{
	if (w == NULL)
		return;
	pthread_mutex_lock(&W.mu);
	LIST_REMOVE(w, link);
	atomic_fetch_sub(&W.n, 1);
	if (w->all)
		atomic_fetch_sub(&W.nall, 1);
	pthread_mutex_unlock(&W.mu);
	free(w->q);
	free(w->taken);
	free(w->name);
	free(w);
}

const char *
watch_take(struct watch *w, size_t *len, uint64_t *dropped)
{
	char	*t;
	size_t	 tc;

	pthread_mutex_lock(&W.mu);
	t = w->q;
	tc = w->qcap;
	w->q = w->taken;
	w->qcap = w->takencap;
	w->taken = t;
	w->takencap = tc;
	*len = w->qlen;
	w->qlen = 0;
	*dropped = w->dropped;
	w->dropped = 0;
	pthread_mutex_unlock(&W.mu);
	return w->taken;
}

/* Appends line to w's queue, or counts it lost.  Under W.mu. */
static void
watch_queue(struct watch *w, const char *line, size_t len)
{
	size_t	 nc;
	char	*nq;

	if (w->qlen + len > WATCH_QUEUE_MAX_BYTES) {
		w->dropped++;
		return;
	}
	if (w->qlen + len > w->qcap) {
		for (nc = w->qcap ? w->qcap : WATCH_QUEUE_START;
		    nc < w->qlen + len; nc *= 2)
			;
		if (nc > WATCH_QUEUE_MAX_BYTES)
			nc = WATCH_QUEUE_MAX_BYTES;
		if ((nq = realloc(w->q, nc)) == NULL) {
			w->dropped++;
			return;
		}
		w->q = nq;
		w->qcap = nc;
	}
	memcpy(w->q + w->qlen, line, len);
	w->qlen += len;
}

void
watch_feed(const char *sandbox, int deny, const char *line, size_t len)
{
	struct watch	*w;
	uint64_t	 one = 1;
	int		 any = 0;

	/*
	 * No lock while no one wants the line (moat run's watch takes
	 * refusals only: its allowed traffic costs two atomic loads).  A
	 * watch made meanwhile misses it, as it would a moment earlier.
	 */
	if (atomic_load_explicit(&W.n, memory_order_relaxed) == 0 ||
	    (!deny && atomic_load_explicit(&W.nall,
	    memory_order_relaxed) == 0) || sandbox == NULL)
		return;
	pthread_mutex_lock(&W.mu);
	LIST_FOREACH(w, &W.list, link) {
		if ((!deny && !w->all) || strcmp(w->name, sandbox) != 0)
			continue;
		watch_queue(w, line, len);
		any = 1;
	}
	/* Once per batch: the main thread clears it before it takes. */
	if (any && !W.wake_pending && W.efd != -1) {
		W.wake_pending = 1;
		(void)!write(W.efd, &one, sizeof(one));
	}
	pthread_mutex_unlock(&W.mu);
}

static void
watch_wake_cb(evutil_socket_t fd, short what, void *arg)
{
	struct watch	*w;
	uint64_t	 v;

	(void)what;
	(void)arg;
	(void)!read(fd, &v, sizeof(v));
	pthread_mutex_lock(&W.mu);
	W.wake_pending = 0;
	pthread_mutex_unlock(&W.mu);
	/* Only this thread changes the list; ready() frees no watch. */
	LIST_FOREACH(w, &W.list, link)
		w->ready(w->arg);
}

void
watch_shutdown(void)
{
	pthread_mutex_lock(&W.mu);
	if (W.ev != NULL)
		event_free(W.ev);
	W.ev = NULL;
	if (W.efd != -1)
		close(W.efd);
	W.efd = -1;
	W.wake_pending = 0;
	pthread_mutex_unlock(&W.mu);
}
