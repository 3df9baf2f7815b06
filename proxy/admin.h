/*
 * admin.h - moatd's admin socket: sandboxes registered at run time with
 * their own policy and the listening sockets they hold (see
 * admin_proto.h for the protocol).  Runs in the main thread.
 */
#ifndef MOAT_ADMIN_H
#define MOAT_ADMIN_H

#include <stddef.h>
#include <stdint.h>

struct event_base;
struct listener;
struct worker;

struct tls;
struct moat_config;

struct admin_ctx {
	struct event_base	*base;
	struct worker		**workers;
	size_t			 nworkers;
	/* moatd's current config and interception contexts (main thread). */
	struct moat_config	**cfg;
	struct tls		**tls;
	/* For the ops list and stats: the configured listeners, and the
	 * reloads asked for (SIGHUP; admin_reload() counts those done). */
	struct listener		*listeners;
	uint64_t		 reloads_tried;
};

/*
 * Listens on a Unix socket path (bound now, before privileges are
 * dropped; mode applied as for listeners).  Returns the socket, or -1 with
 * a message in err.
 */
int	admin_bind(const char *path, int mode, char *err, size_t errlen);
/* Serves the bound socket: accepts clients whose uid is root or ours. */
int	admin_serve(struct admin_ctx *ctx, int lfd, const char *path);
/*
 * Serves one already connected socket (moatd --admin-fd): the private
 * moatd of `moat run`.  When it closes, moatd has nothing left to serve
 * and stops (the callback is called).
 */
int	admin_adopt(struct admin_ctx *ctx, int fd, void (*gone)(void *),
	    void *arg);
/* SIGHUP: each registered sandbox reads its own secrets again. */
void	admin_reload(void);
/* Closes every admin connection (unregistering their sandboxes) and the
 * listening socket, removing its path. */
void	admin_shutdown(void);

#endif /* MOAT_ADMIN_H */
