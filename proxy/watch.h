/*
 * watch.h - a sandbox's audit lines, streamed to the admin clients that
 * ask for them (the admin op "watch", proto/admin_proto.h): `moat run`
 * and `moat attach` print their sandbox's refusals from it.
 *
 * Workers offer every audit line in audit_emit() (watch_feed(): nothing
 * but atomic loads while no one wants the line; else a mutex and a memcpy
 * per watch that wants it).  The main thread, woken through an eventfd,
 * takes what each watch holds (watch_take()) and frames it for its admin
 * connection.  A watch holds at most WATCH_QUEUE_MAX_BYTES of lines: past
 * that, lines are dropped and counted, and the count goes to the watcher
 * after the lines before them, so that a watcher that does not read never
 * slows a worker, nor grows moatd's memory, nor loses a line silently.
 */
#ifndef MOAT_WATCH_H
#define MOAT_WATCH_H

#include <stddef.h>
#include <stdint.h>

#define WATCH_QUEUE_MAX_BYTES	(256u << 10)	/* lines a watch holds */

struct event_base;
struct watch;

/*
 * Main thread.  A watch of the lines whose "sandbox" is name: only the
 * refusals (verdict deny, and the would-denies of audit mode), or with
 * all every line.  ready(arg) is called
 * from base's loop when lines (or a drop count) wait for watch_take(); it
 * must not free a watch.  NULL with errno.
 */
struct watch	*watch_new(struct event_base *base, const char *name, int all,
		    void (*ready)(void *), void *arg);
/* Main thread: the sandbox name, and which lines. */
const char	*watch_name(const struct watch *w);
void		 watch_set_all(struct watch *w, int all);
/* Main thread.  Lines still held are lost.  NULL-safe. */
void		 watch_free(struct watch *w);
/*
 * Main thread: takes every line held for w (whole lines, each ending in
 * "\n"; *len bytes, 0 for none) and the number of lines dropped since
 * the last take, which were all offered after those lines.  The buffer
 * stays valid until the next take or watch_free().
 */
const char	*watch_take(struct watch *w, size_t *len, uint64_t *dropped);

/*
 * Any thread: offers one audit line (with its "\n") of sandbox (NULL:
 * none), a refusal or not.  Never blocks on I/O.
 */
void		 watch_feed(const char *sandbox, int deny, const char *line,
		    size_t len);

/* Main thread, at exit, after every watch is freed: the eventfd. */
void		 watch_shutdown(void);

#endif /* MOAT_WATCH_H */
