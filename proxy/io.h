/*
 * io.h - a buffered, non-blocking socket for moatd's connection code.
 *
 * Why not bufferevents: a bufferevent write always waits for the next
 * loop iteration and an EPOLLOUT round trip; io writes at once and arms a
 * write event only when the kernel pushes back, which saves two epoll_ctl
 * calls and a loop pass per response on the forward-proxy path.  io also
 * leaves every timeout to its owner (phases have deadlines, not idle
 * timers) and never calls back from inside a function its owner called.
 *
 * Events reported to the callback (one call per event; the callback may
 * free the io, and io touches nothing after calling it):
 *   IO_EV_READ     bytes were appended to io_in()
 *   IO_EV_DRAINED  io_out() fell to the low-water mark (see io_want_drained)
 *   IO_EV_EOF      the peer closed its sending side; reading has stopped
 *   IO_EV_ERROR    a read or write failed; io_errno() tells why (for
 *                  TLS, io_tls_error() has OpenSSL's words)
 *   IO_EV_TLS_UP   the TLS handshake started by io_start_tls() finished
 */
#ifndef MOAT_IO_H
#define MOAT_IO_H

#include <stddef.h>
#include <stdint.h>

#include "certs/ssldl.h"

struct event_base;
struct evbuffer;
struct io;

#define IO_EV_READ	0x01
#define IO_EV_DRAINED	0x02
#define IO_EV_EOF	0x04
#define IO_EV_ERROR	0x08
#define IO_EV_TLS_UP	0x10

#define IO_READ_CHUNK_BYTES	32768	/* most bytes one read(2) asks for */

/*
 * Wraps a connected, non-blocking fd.  Reading starts disabled.
 * Returns the io (caller frees with io_free()), or NULL with errno set
 * (the fd is then still the caller's).
 */
struct io	*io_new(struct event_base *base, int fd,
		    void (*cb)(struct io *, int, void *), void *arg);
/* Replaces the callback and its argument. */
void		 io_set_cb(struct io *io, void (*cb)(struct io *, int, void *),
		    void *arg);
/* Frees the io, its buffers and events, and closes its fd.  NULL is ok. */
void		 io_free(struct io *io);
/*
 * Frees the io but returns its fd open (for handing a socket to a splice
 * tunnel).  Bytes still buffered are dropped: move them out first.
 */
int		 io_release(struct io *io);

int		 io_fd(const struct io *io);
/* Bytes read from and written to the socket so far (TLS: ciphertext). */
void		 io_counts(const struct io *io, uint64_t *in, uint64_t *out);
struct evbuffer	*io_in(struct io *io);
struct evbuffer	*io_out(struct io *io);
/* The errno of the last failure reported with IO_EV_ERROR or -1 returns. */
int		 io_errno(const struct io *io);
/* Whether the peer has closed its side (EOF seen). */
int		 io_eof(const struct io *io);

/* Enables (on != 0) or disables reading.  Idempotent and cheap. */
void		 io_read(struct io *io, int on);
/*
 * Asks for one IO_EV_DRAINED once the output holds at most lowat bytes
 * (checked after each write the event loop makes).  If the output is
 * already that small, nothing is reported: check io_out_len() first.
 */
void		 io_want_drained(struct io *io, size_t lowat);
size_t		 io_out_len(struct io *io);
size_t		 io_in_len(struct io *io);

/*
 * Writes as much of the output as the socket takes now and arms a write
 * event for the rest.  Returns 0, or -1 with errno on a write error (the
 * owner ends the connection).  Never calls the callback.
 */
int		 io_flush(struct io *io);

/*
 * Runs TLS over the io's socket from now on, with ssl (in accept or
 * connect state; the io owns it and frees it).  Bytes already in io_in()
 * are handed to OpenSSL first (a ClientHello that arrived with the CONNECT
 * request), then the socket.  The handshake runs in the read and write
 * paths; IO_EV_TLS_UP says it is done, IO_EV_ERROR that it failed.  Output
 * queued before the handshake is encrypted and sent after it.  Returns 0,
 * or -1 (allocation failure; ssl is freed).
 */
int		 io_start_tls(struct io *io, SSL *ssl);
/* The io's SSL, or NULL. */
SSL		*io_ssl(const struct io *io);
/* Why TLS failed (for logs and error pages), or NULL. */
const char	*io_tls_error(const struct io *io);

#endif /* MOAT_IO_H */
