/*
 * worker.h - one worker thread: its own event base, accept events on its
 * SO_REUSEPORT listening sockets, c-ares channel, connections, tunnels and
 * pipe pool.  Nothing in a worker is shared with another worker; what they
 * share (the config, the audit queue, counters) is read-only, refcounted
 * or atomic.
 *
 * The main thread talks to a worker only through worker_post_*(), which
 * leave a message under the worker's mutex and wake its loop.
 */
#ifndef MOAT_WORKER_H
#define MOAT_WORKER_H

#include <sys/queue.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"

struct event;
struct event_base;
struct listener;
struct resolver;
struct conn;
struct tunnel;

#define WORKER_PIPE_POOL_MAX	64	/* idle pipes a worker keeps */
#define WORKER_ACCEPT_BATCH	64	/* accept(2) calls per wakeup */
#define WORKER_ACCEPT_PAUSE_MS	100	/* pause when out of fds or at the limit */

struct worker_accept {
	struct listener		*l;
	int			 fd;
	struct event		*ev;
};

struct worker {
	int			 idx;
	pthread_t		 thr;
	struct event_base	*base;
	struct resolver		*res;
	struct moat_config	*cfg;		/* current config (a reference) */
	uint64_t		 cfg_gen;	/* bumped at each reload */

	struct worker_accept	*acc;
	size_t			 nacc;
	struct event		*accept_pause;	/* timer re-enabling accepts */
	int			 accepting;

	TAILQ_HEAD(, conn)	 conns;
	size_t			 nconns;
	LIST_HEAD(, tunnel)	 tunnels;
	size_t			 ntunnels;

	int			 pipes[WORKER_PIPE_POOL_MAX][2];
	size_t			 npipes;

	/* Messages from the main thread, under mu. */
	pthread_mutex_t		 mu;
	struct event		*wake;
	struct moat_config	*new_cfg;
	int			 cmd_drain;
	int			 cmd_stop;
	int			 draining;
	int			 stopped;
	int			 done_fd;	/* one byte written when the loop ends */
};

/* Counters shared by all workers. */
extern atomic_size_t	worker_conns_open;	/* client connections + tunnels */
extern atomic_uint_fast64_t worker_next_id;	/* connection ids */

/*
 * Creates worker idx with its event base, resolver and accept events for
 * every listener (TCP: its own SO_REUSEPORT socket; unix: the shared one).
 * Returns NULL with a message in err.
 */
struct worker	*worker_new(int idx, struct moat_config *cfg,
		    struct listener *listeners, char *err, size_t errlen);
/* Starts the thread.  Returns 0, or -1 with errno. */
int		 worker_start(struct worker *w);
/* Joins the thread and frees the worker.  NULL is ok. */
void		 worker_free(struct worker *w);

/* Hands a new config to the worker (it takes a reference). */
void		 worker_post_config(struct worker *w, struct moat_config *cfg);
/* Stop accepting, close idle connections, exit when none is left. */
void		 worker_post_drain(struct worker *w);
/* Close everything now and exit. */
void		 worker_post_stop(struct worker *w);

/* For connections: the current config, and the accounting of closes. */
void		 worker_conn_closed(struct worker *w);
/* A pipe from the pool (or a new one); -1 with errno if none. */
int		 worker_pipe_get(struct worker *w, int p[2]);
/* Returns an empty pipe to the pool (or closes it if the pool is full). */
void		 worker_pipe_put(struct worker *w, int p[2]);

#endif /* MOAT_WORKER_H */
