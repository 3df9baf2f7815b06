/*
 * tunnel.h - an allowed tunnel (CONNECT, SOCKS5) that needs no inspection:
 * each direction copies its first TUNNEL_SPLICE_AFTER bytes through the
 * worker's scratch buffer, then moves bytes between the two sockets with
 * splice(2) through a pipe, never through user-space buffers.
 *
 * An idle tunnel holds two sockets, two events and this struct: its pipes
 * go back to the worker's pool whenever they are empty, and a buffer is
 * only allocated for bytes read that the other side did not take yet.
 * When no pipe can be had (out of descriptors), a direction copies
 * instead: a tunnel never ends for want of a pipe.  The tunnel ends
 * when both directions have reached EOF and been flushed, on an error, on
 * the idle timeout, at shutdown, or when its client's next read would
 * pass a quota of bytes up (proxy/quota.h: counted as they are read,
 * before they go; that read is not written); it then writes the "close"
 * audit line with the bytes each way and the duration.
 */
#ifndef MOAT_TUNNEL_H
#define MOAT_TUNNEL_H

#include <stdint.h>

#include "policy/policy.h"
#include "proxy/quota.h"

struct evbuffer;
struct sandbox;
struct tunnel;
struct worker;

#define TUNNEL_SPLICE_BYTES	(256u << 10)	/* most bytes one splice moves */
#define TUNNEL_ROUNDS		16		/* reads per direction and wakeup */
/*
 * An opaque tunnel's upstream socket gets its TCP keepalive (60 s, 6 x
 * 10 s, util_tcp_keepalive) once the tunnel (with its first-bytes check)
 * has lived this long: most end before, and the four setsockopt(2) calls
 * were a seventh of a short tunnel's system calls.  A black-holed upstream
 * is found a second later than otherwise, never held to idle_tunnel_ms.
 */
#define TUNNEL_KEEPALIVE_MS	1000
/* Bytes a direction copies before it splices (BENCHMARKS.md). */
#ifndef TUNNEL_SPLICE_AFTER
#define TUNNEL_SPLICE_AFTER	(64u << 10)
#endif

/* What the close audit line needs to say; strings are copied. */
struct tunnel_meta {
	uint64_t		 id;
	struct sandbox		*sb;		/* referenced by the tunnel */
	const char		*sandbox;
	const char		*proto;
	const char		*client;
	const char		*host;
	uint16_t		 port;
	const char		*ip;
	const char		*rule;
	uint64_t		 t_start;	/* ms, monotonic */
	unsigned		 lkind;		/* its listener's kind (metrics) */
	uint64_t		 keepalive_at;	/* ms: when to turn the upstream's
						   keepalive on; 0: it is on */
	struct quota_hold	*quota;		/* the byte quotas its client's
						   bytes count against, taken
						   over (zeroed); NULL: none */
	bool			 quota_waive;	/* audit mode: a quota passed
						   cuts nothing (would_deny on
						   the close line) */
};

/*
 * Starts a tunnel between cfd (client) and ufd (upstream), which it owns
 * from now on even on failure.  to_up and to_client hold bytes already
 * read from one side (or queued for it) that must be written first; their
 * contents are moved out (the caller frees the buffers).  Returns 0, or -1
 * (the sockets are closed and the close is audited).
 */
int	tunnel_start(struct worker *w, int cfd, int ufd, struct evbuffer *to_up,
	    struct evbuffer *to_client, const struct tunnel_meta *m,
	    unsigned idle_ms);
/* Ends a tunnel now (shutdown deadline, sandbox gone). */
void	tunnel_abort(struct tunnel *t);
/* Ends every tunnel of w that belongs to sb. */
void	tunnel_abort_sandbox(struct worker *w, struct sandbox *sb);

/* How a tunnel ended: the "end" field of its close audit line. */
enum tunnel_end {
	TUNNEL_END_EOF = 0,
	TUNNEL_END_IDLE,
	TUNNEL_END_RESET,
	TUNNEL_END_SHUTDOWN,
	TUNNEL_END_INTERNAL,
	TUNNEL_END_QUOTA	/* a quota of bytes up was used up: cut */
};
const char	*tunnel_end_name(enum tunnel_end end);

#endif /* MOAT_TUNNEL_H */
