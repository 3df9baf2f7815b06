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
#include "proxy/uppool.h"

struct event;
struct event_base;
struct listener;
struct resolver;
struct conn;
struct dns_pending;
struct sandbox;
struct secrets;
struct tls;
struct tunnel;

/*
 * A worker's event base.  NOLOCK: only its thread touches it.  Not
 * EPOLL_USE_CHANGELIST, which defers epoll_ctl to the next dispatch and
 * merges the changes of each descriptor number within a loop turn: with it,
 * a soak of mixed load (scripts/soak.sh) stalled about one 1 MB download in
 * 3,000 for good (the upstream socket full of unread bytes, the client's
 * idle, moatd watching neither), in every build since the flag came in;
 * without it, none in the same soaks.  Descriptor numbers are closed and
 * given out again within one turn all the time here (tunnels end, clients
 * are accepted), which is where deferred changes go wrong.
 */
#define WORKER_BASE_FLAGS	EVENT_BASE_FLAG_NOLOCK

#define WORKER_PIPE_POOL_MAX	64	/* idle pipes a worker keeps */
#define WORKER_PIPE_BYTES	(256 << 10) /* capacity asked for each pipe */
#define WORKER_SCRATCH_BYTES	(64u << 10) /* a tunnel's copy reads (tunnel.c) */
#define WORKER_ACCEPT_BATCH	64	/* accept(2) calls per listener and
					   wakeup: a flood on one listener
					   waits its turn behind the others */
#define WORKER_ACCEPT_PAUSE_MS	100	/* pause when out of fds or at the limit */
#define WORKER_TRIM_MIN_CONNS	256	/* a burst this large ... */
#define WORKER_TRIM_DELAY_MS	1000	/* ... gives memory back this long after
					   it fell to a quarter */
#define WORKER_REFUSE_MAX	4096	/* queued connections closed at a drain,
					 * per listener (its backlog) */

/* A listening socket this worker watches. */
struct worker_accept {
	struct worker			*w;
	struct listener			*l;	/* a reference */
	int				 fd;
	struct event			*ev;
	TAILQ_ENTRY(worker_accept)	 link;
};

enum worker_msg_type {
	WORKER_MSG_ADD_LISTENER = 0,	/* start watching l */
	WORKER_MSG_DEL_SANDBOX		/* drop sb's listeners, end its conns */
};

struct worker_msg {
	enum worker_msg_type		 type;
	struct listener			*l;	/* a reference, or NULL */
	struct sandbox			*sb;	/* a reference, or NULL */
	TAILQ_ENTRY(worker_msg)		 link;
};

struct worker {
	int			 idx;
	pthread_t		 thr;
	struct event_base	*base;
	struct resolver		*res;
	struct moat_config	*cfg;		/* current config (a reference) */
	struct tls		*tls;		/* its TLS contexts, or NULL */
	struct secrets		*secrets;	/* its secret values, or NULL */
	uint64_t		 cfg_gen;	/* bumped at each reload */

	TAILQ_HEAD(, worker_accept) acc;
	struct event		*accept_pause;	/* timer re-enabling accepts */
	int			 accepting;
	struct event		*refused_flush;	/* audits refusals at a
						   sandbox's limit that
						   waited (sandbox.h) */
	int			 spare_fd;	/* given up to refuse a client
						 * when out of descriptors */

	TAILQ_HEAD(, conn)	 conns;
	size_t			 nconns;
	size_t			 peak_conns;	/* since memory was last trimmed */
	struct event		*trim;		/* gives memory back after a burst */
	LIST_HEAD(, tunnel)	 tunnels;
	size_t			 ntunnels;
	LIST_HEAD(, dns_pending) dnsq;		/* DNS queries waiting */

	/* Idle upstream connections for the next client (uppool.c). */
	struct uppool		 uppool;

	int			 pipes[WORKER_PIPE_POOL_MAX][2];
	size_t			 npipes;
	/* What a copying tunnel reads into and writes out of at once; no
	 * byte stays here between two calls of its pump (tunnel.c).  The
	 * bytes the other side did not take go to a buffer of their own,
	 * freed once written: nheld counts those buffers. */
	char			 scratch[WORKER_SCRATCH_BYTES];
	size_t			 nheld;

	/* Messages from the main thread, under mu. */
	pthread_mutex_t		 mu;
	struct event		*wake;
	struct moat_config	*new_cfg;
	struct tls		*new_tls;
	struct secrets		*new_secrets;
	TAILQ_HEAD(, worker_msg) msgs;
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
 * every listener (TCP and UDP: its own SO_REUSEPORT socket; unix: the
 * shared one).
 * Returns NULL with a message in err.
 */
struct worker	*worker_new(int idx, struct moat_config *cfg,
		    struct tls *tls, struct secrets *secrets,
		    struct listener *listeners, char *err, size_t errlen);
/* Starts the thread.  Returns 0, or -1 with errno. */
int		 worker_start(struct worker *w);
/* Joins the thread and frees the worker.  NULL is ok. */
void		 worker_free(struct worker *w);

/* Hands a new config and its TLS contexts (may be NULL) to the worker
 * (it takes references). */
void		 worker_post_config(struct worker *w, struct moat_config *cfg,
		    struct tls *tls, struct secrets *secrets);
/* Stop accepting, close idle connections, exit when none is left. */
void		 worker_post_drain(struct worker *w);
/* Close everything now and exit. */
void		 worker_post_stop(struct worker *w);
/* Start watching a listener (takes its own reference).  0 or -1. */
int		 worker_post_listener(struct worker *w, struct listener *l);
/*
 * Stop watching sb's listeners and end its connections, tunnels and DNS
 * queries (takes its own reference to sb).  0 or -1.
 */
int		 worker_post_sandbox_gone(struct worker *w, struct sandbox *sb);

/*
 * For connections and tunnels: the accounting of closes (the global count
 * and sb's, sandbox.h; sb may be NULL).
 */
void		 worker_conn_closed(struct worker *w, struct sandbox *sb);
/* A DNS query left w->dnsq (a draining worker may be done). */
void		 worker_dns_done(struct worker *w);
/* A pipe from the pool (or a new one); -1 with errno if none. */
int		 worker_pipe_get(struct worker *w, int p[2]);
/* Returns an empty pipe to the pool (or closes it if the pool is full). */
void		 worker_pipe_put(struct worker *w, int p[2]);

#endif /* MOAT_WORKER_H */
