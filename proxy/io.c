/*
 * io.c - buffered non-blocking socket: read into an evbuffer when asked,
 * write at once and wait for EPOLLOUT only when the kernel pushes back.
 *
 * Not here: timeouts (the owner's phase timer), TLS (added by tls.c
 * through the same interface), protocol logic.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "certs/ssldl.h"
#include "proxy/io.h"

struct io {
	int		 fd;
	int		 err;		/* errno of the last failure */
	unsigned	 reading:1;	/* read event added */
	unsigned	 writing:1;	/* write event added */
	unsigned	 eof:1;
	unsigned	 want_drained:1;
	size_t		 lowat;
	struct event	*rev;
	struct event	*wev;
	struct evbuffer	*in;
	struct evbuffer	*out;
	void		(*cb)(struct io *, int, void *);
	void		*arg;
	/* TLS */
	SSL		*ssl;
	struct evbuffer	*prefix;	/* bytes read before TLS started */
	unsigned	 handshaking:1;
	unsigned	 read_wants_write:1;	/* SSL_read said WANT_WRITE */
	unsigned	 write_wants_read:1;	/* SSL_write said WANT_READ */
	char		 tls_err[160];
	uint64_t	 nin, nout;	/* bytes through the socket each way */
};

#define IO_TLS_READ_MAX_BYTES	(64u << 10)	/* decrypted per wake-up */

static void	io_read_cb(evutil_socket_t fd, short what, void *arg);
static void	io_write_cb(evutil_socket_t fd, short what, void *arg);
static void	io_tls_readable(struct io *io);
static void	io_tls_writable(struct io *io);
static int	io_tls_handshake(struct io *io);
static int	io_tls_read(struct io *io);
static int	io_tls_write(struct io *io);
static void	io_tls_fail(struct io *io, const char *what);
static BIO	*io_bio_new(struct io *io);

struct io *
io_new(struct event_base *base, int fd, void (*cb)(struct io *, int, void *),
    void *arg)
{
	struct io	*io;

	if ((io = calloc(1, sizeof(*io))) == NULL)
		return NULL;
	io->fd = fd;
	io->cb = cb;
	io->arg = arg;
	io->rev = event_new(base, fd, EV_READ | EV_PERSIST, io_read_cb, io);
	io->wev = event_new(base, fd, EV_WRITE | EV_PERSIST, io_write_cb, io);
	io->in = evbuffer_new();
	io->out = evbuffer_new();
	if (io->rev == NULL || io->wev == NULL || io->in == NULL ||
	    io->out == NULL) {
		io->fd = -1;
		io_free(io);
		errno = ENOMEM;
		return NULL;
	}
	return io;
}

void
io_set_cb(struct io *io, void (*cb)(struct io *, int, void *), void *arg)
{
	io->cb = cb;
	io->arg = arg;
}

int
io_release(struct io *io)
{
	int	fd;

	if (io == NULL)
		return -1;
	fd = io->fd;
	io->fd = -1;
	io_free(io);
	return fd;
}

void
io_free(struct io *io)
{
	if (io == NULL)
		return;
	if (io->rev != NULL)
		event_free(io->rev);
	if (io->wev != NULL)
		event_free(io->wev);
	if (io->in != NULL)
		evbuffer_free(io->in);
	if (io->out != NULL)
		evbuffer_free(io->out);
	if (io->ssl != NULL) {
		/* Best effort close_notify; a blocked socket just drops it. */
		if (!io->handshaking && io->fd >= 0)
			(void)SSL_shutdown(io->ssl);
		SSL_free(io->ssl);
	}
	if (io->prefix != NULL)
		evbuffer_free(io->prefix);
	if (io->fd >= 0)
		close(io->fd);
	free(io);
}

void
io_counts(const struct io *io, uint64_t *in, uint64_t *out)
{
	*in = io->nin;
	*out = io->nout;
}

int
io_fd(const struct io *io)
{
	return io->fd;
}

struct evbuffer *
io_in(struct io *io)
{
	return io->in;
}

struct evbuffer *
io_out(struct io *io)
{
	return io->out;
}

int
io_errno(const struct io *io)
{
	return io->err;
}

int
io_eof(const struct io *io)
{
	return io->eof;
}

size_t
io_out_len(struct io *io)
{
	return evbuffer_get_length(io->out);
}

size_t
io_in_len(struct io *io)
{
	return evbuffer_get_length(io->in);
}

void
io_read(struct io *io, int on)
{
	if (on && !io->reading && !io->eof) {
		if (io->handshaking || io->write_wants_read ||
		    event_add(io->rev, NULL) == 0)
			io->reading = 1;
		/* Bytes may wait inside OpenSSL (or in the prefix): no
		 * socket event will announce them. */
		if (io->ssl != NULL && !io->handshaking &&
		    (SSL_has_pending(io->ssl) || (io->prefix != NULL &&
		    evbuffer_get_length(io->prefix) > 0)))
			event_active(io->rev, EV_READ, 0);
	} else if (!on && io->reading) {
		if (!io->handshaking && !io->write_wants_read)
			event_del(io->rev);
		io->reading = 0;
	}
}

void
io_want_drained(struct io *io, size_t lowat)
{
	io->lowat = lowat;
	io->want_drained = 1;
}

int
io_flush(struct io *io)
{
	int	n;

	if (io->ssl != NULL) {
		if (io->handshaking || io->writing || io->write_wants_read)
			return 0;
		return io_tls_write(io);
	}
	if (io->writing || evbuffer_get_length(io->out) == 0)
		return 0;
	n = evbuffer_write(io->out, io->fd);
	if (n > 0)
		io->nout += (uint64_t)n;
	if (n == -1 && errno != EAGAIN && errno != EINTR) {
		io->err = errno;
		return -1;
	}
	if (evbuffer_get_length(io->out) > 0) {
		if (event_add(io->wev, NULL) == -1) {
			io->err = ENOMEM;
			errno = ENOMEM;
			return -1;
		}
		io->writing = 1;
	}
	return 0;
}

/*
 * evbuffer_read() asks the kernel with ioctl(FIONREAD) how much there is
 * before every read: a syscall per read for nothing.  Reserve the space
 * and read into it directly instead.
 */
static int
io_read_some(struct io *io, int fd)
{
	struct evbuffer_iovec	v[2];
	struct iovec		iov[2];
	ssize_t			n;
	int			nv, i;

	nv = evbuffer_reserve_space(io->in, IO_READ_CHUNK_BYTES, v, 2);
	if (nv <= 0) {
		errno = ENOMEM;
		return -1;
	}
	for (i = 0; i < nv; i++) {
		iov[i].iov_base = v[i].iov_base;
		iov[i].iov_len = v[i].iov_len;
	}
	n = readv(fd, iov, nv);
	if (n > 0)
		io->nin += (uint64_t)n;
	if (n <= 0) {
		int saved = errno;

		evbuffer_commit_space(io->in, v, 0);
		errno = saved;
		return (int)n;
	}
	for (i = 0; i < nv && n > 0; i++) {
		size_t take = (size_t)n < v[i].iov_len ? (size_t)n :
		    v[i].iov_len;

		v[i].iov_len = take;
		n -= (ssize_t)take;
	}
	evbuffer_commit_space(io->in, v, i);
	return 1;
}

static void
io_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct io	*io = arg;
	int		 n;

	if (io->ssl != NULL) {
		io_tls_readable(io);
		return;
	}
	n = io_read_some(io, fd);
	if (n > 0) {
		io->cb(io, IO_EV_READ, io->arg);
		return;
	}
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	event_del(io->rev);
	io->reading = 0;
	if (n == 0) {
		io->eof = 1;
		io->cb(io, IO_EV_EOF, io->arg);
	} else {
		io->err = errno;
		io->cb(io, IO_EV_ERROR, io->arg);
	}
}

static void
io_write_cb(evutil_socket_t fd, short what, void *arg)
{
	struct io	*io = arg;
	int		 n;

	if (io->ssl != NULL) {
		io_tls_writable(io);
		return;
	}
	n = evbuffer_write(io->out, fd);
	if (n > 0)
		io->nout += (uint64_t)n;
	if (n == -1 && errno != EAGAIN && errno != EINTR) {
		io->err = errno;
		event_del(io->wev);
		io->writing = 0;
		io->cb(io, IO_EV_ERROR, io->arg);
		return;
	}
	if (evbuffer_get_length(io->out) == 0) {
		event_del(io->wev);
		io->writing = 0;
	}
	if (io->want_drained && evbuffer_get_length(io->out) <= io->lowat) {
		io->want_drained = 0;
		io->cb(io, IO_EV_DRAINED, io->arg);
	}
}

/* ------------------------------------------------------------------ */
/* TLS                                                                  */
/* ------------------------------------------------------------------ */

/*
 * The BIO under every TLS io: reads first drain the bytes that arrived
 * before TLS started (io->prefix), then the socket; writes go to the
 * socket.  Non-blocking: EAGAIN becomes a retry for OpenSSL.
 */
static int
io_bio_read(BIO *b, char *buf, int len)
{
	struct io	*io = BIO_get_data(b);
	ssize_t		 n;

	BIO_clear_retry_flags(b);
	if (io->prefix != NULL && evbuffer_get_length(io->prefix) > 0)
		return evbuffer_remove(io->prefix, buf, (size_t)len);
	n = recv(io->fd, buf, (size_t)len, 0);
	if (n > 0)
		io->nin += (uint64_t)n;
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		BIO_set_retry_read(b);
	return (int)n;
}

static int
io_bio_write(BIO *b, const char *buf, int len)
{
	struct io	*io = BIO_get_data(b);
	ssize_t		 n;

	BIO_clear_retry_flags(b);
	n = send(io->fd, buf, (size_t)len, MSG_NOSIGNAL);
	if (n > 0)
		io->nout += (uint64_t)n;
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		BIO_set_retry_write(b);
	return (int)n;
}

static long
io_bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	switch (cmd) {
	case BIO_CTRL_FLUSH:
		return 1;
	default:
		return 0;
	}
}

static int
io_bio_create(BIO *b)
{
	BIO_set_init(b, 1);
	return 1;
}

static BIO_METHOD	*io_bio_method;
static pthread_once_t	 io_bio_once = PTHREAD_ONCE_INIT;

static void
io_bio_init(void)
{
	io_bio_method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK,
	    "moat io");
	if (io_bio_method == NULL)
		return;
	BIO_meth_set_read(io_bio_method, io_bio_read);
	BIO_meth_set_write(io_bio_method, io_bio_write);
	BIO_meth_set_ctrl(io_bio_method, io_bio_ctrl);
	BIO_meth_set_create(io_bio_method, io_bio_create);
}

static BIO *
io_bio_new(struct io *io)
{
	BIO	*b;

	pthread_once(&io_bio_once, io_bio_init);
	if (io_bio_method == NULL || (b = BIO_new(io_bio_method)) == NULL)
		return NULL;
	BIO_set_data(b, io);
	return b;
}

int
io_start_tls(struct io *io, SSL *ssl)
{
	BIO	*b;

	if (evbuffer_get_length(io->in) > 0) {
		if ((io->prefix = evbuffer_new()) == NULL) {
			SSL_free(ssl);
			return -1;
		}
		evbuffer_add_buffer(io->prefix, io->in);
	}
	if ((b = io_bio_new(io)) == NULL) {
		SSL_free(ssl);
		return -1;
	}
	SSL_set_bio(ssl, b, b);
	io->ssl = ssl;
	io->handshaking = 1;
	/* The handshake needs reads whatever the owner asked for. */
	if (!io->reading)
		event_add(io->rev, NULL);
	if (io->writing) {
		event_del(io->wev);
		io->writing = 0;
	}
	/* A ClientHello may already be here: start now, from the loop. */
	event_active(io->rev, EV_READ, 0);
	return 0;
}

SSL *
io_ssl(const struct io *io)
{
	return io->ssl;
}

const char *
io_tls_error(const struct io *io)
{
	return io->tls_err[0] ? io->tls_err : NULL;
}

static void
io_tls_fail(struct io *io, const char *what)
{
	unsigned long	e = ERR_get_error();
	long		v = SSL_get_verify_result(io->ssl);

	if (v != X509_V_OK)
		snprintf(io->tls_err, sizeof(io->tls_err), "%s: certificate "
		    "verify failed: %s", what, X509_verify_cert_error_string(v));
	else if (e != 0)
		snprintf(io->tls_err, sizeof(io->tls_err), "%s: %s", what,
		    ERR_reason_error_string(e));
	else
		snprintf(io->tls_err, sizeof(io->tls_err), "%s: %s", what,
		    errno ? strerror(errno) : "connection closed");
	ERR_clear_error();
	io->err = EPROTO;
}

/* Syncs the read and write events with what TLS and the owner want. */
static void
io_tls_events(struct io *io)
{
	int	want_r = io->reading || io->handshaking || io->write_wants_read;
	int	want_w = io->read_wants_write || (!io->handshaking &&
		    !io->write_wants_read && evbuffer_get_length(io->out) > 0);

	if (want_r && !event_pending(io->rev, EV_READ, NULL))
		event_add(io->rev, NULL);
	else if (!want_r && event_pending(io->rev, EV_READ, NULL))
		event_del(io->rev);
	if (want_w && !io->writing) {
		event_add(io->wev, NULL);
		io->writing = 1;
	} else if (!want_w && io->writing) {
		event_del(io->wev);
		io->writing = 0;
	}
}

/*
 * One handshake step.  Returns 1 done, 0 in progress, -1 failed (the
 * owner has been told through IO_EV_ERROR: return at once).
 */
static int
io_tls_handshake(struct io *io)
{
	int	rc, e;

	ERR_clear_error();
	rc = SSL_do_handshake(io->ssl);
	if (rc == 1) {
		io->handshaking = 0;
		io->read_wants_write = 0;
		if (io->prefix != NULL && evbuffer_get_length(io->prefix) == 0) {
			evbuffer_free(io->prefix);
			io->prefix = NULL;
		}
		io_tls_events(io);
		/* With read-ahead, the first request may already sit in
		 * OpenSSL's buffer: no socket event will say so. */
		if (SSL_has_pending(io->ssl) || (io->prefix != NULL &&
		    evbuffer_get_length(io->prefix) > 0))
			event_active(io->rev, EV_READ, 0);
		return 1;
	}
	e = SSL_get_error(io->ssl, rc);
	if (e == SSL_ERROR_WANT_READ) {
		io->read_wants_write = 0;
		io_tls_events(io);
		return 0;
	}
	if (e == SSL_ERROR_WANT_WRITE) {
		io->read_wants_write = 1;
		io_tls_events(io);
		return 0;
	}
	io_tls_fail(io, "TLS handshake");
	event_del(io->rev);
	event_del(io->wev);
	io->writing = io->reading = 0;
	io->cb(io, IO_EV_ERROR, io->arg);
	return -1;
}

/*
 * Decrypts what is there (up to IO_TLS_READ_MAX_BYTES) into io->in.
 * Returns 1 bytes came, 0 nothing yet, -1 EOF or error (io->eof / io->err
 * set; events stopped).
 */
static int
io_tls_read(struct io *io)
{
	struct evbuffer_iovec	v;
	size_t			got = 0;
	int			n, e;

	while (got < IO_TLS_READ_MAX_BYTES) {
		if (evbuffer_reserve_space(io->in, 16384, &v, 1) < 1) {
			io->err = ENOMEM;
			return -1;
		}
		ERR_clear_error();
		n = SSL_read(io->ssl, v.iov_base, (int)v.iov_len);
		if (n > 0) {
			v.iov_len = (size_t)n;
			evbuffer_commit_space(io->in, &v, 1);
			got += (size_t)n;
			continue;
		}
		evbuffer_commit_space(io->in, &v, 0);
		e = SSL_get_error(io->ssl, n);
		if (e == SSL_ERROR_WANT_READ)
			break;
		if (e == SSL_ERROR_WANT_WRITE) {
			io->read_wants_write = 1;
			break;
		}
		if (got > 0) {
			/* Hand over what came first; the next pass (made
			 * now, no socket event will come) reports the end. */
			ERR_clear_error();
			event_active(io->rev, EV_READ, 0);
			return 1;
		}
		/* close_notify, or a peer that just closed (common: treat
		 * it as EOF; the owner's framing says if data is missing). */
		if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL &&
		    errno == 0) || (e == SSL_ERROR_SSL &&
		    ERR_GET_REASON(ERR_peek_error()) ==
		    SSL_R_UNEXPECTED_EOF_WHILE_READING)) {
			ERR_clear_error();
			io->eof = 1;
		} else
			io_tls_fail(io, "TLS read");
		io->reading = 0;
		io_tls_events(io);
		return -1;
	}
	io_tls_events(io);
	if (got >= IO_TLS_READ_MAX_BYTES && SSL_has_pending(io->ssl))
		event_active(io->rev, EV_READ, 0);	/* more, later */
	return got > 0 ? 1 : 0;
}

/* Encrypts and sends io->out.  Returns 0, or -1 on error (errno set). */
static int
io_tls_write(struct io *io)
{
	struct evbuffer_iovec	v;
	size_t			len;
	int			n, e;

	while ((len = evbuffer_get_length(io->out)) > 0) {
		/* One record of up to 16 KiB, even from several chains: a
		 * head and a small body go out in one record, one send(). */
		if (len > 16384)
			len = 16384;
		if ((v.iov_base = evbuffer_pullup(io->out, (ssize_t)len)) ==
		    NULL) {
			errno = ENOMEM;
			return -1;
		}
		v.iov_len = len;
		ERR_clear_error();
		n = SSL_write(io->ssl, v.iov_base, (int)v.iov_len);
		if (n > 0) {
			evbuffer_drain(io->out, (size_t)n);
			continue;
		}
		e = SSL_get_error(io->ssl, n);
		if (e == SSL_ERROR_WANT_WRITE)
			break;
		if (e == SSL_ERROR_WANT_READ) {
			io->write_wants_read = 1;
			break;
		}
		io_tls_fail(io, "TLS write");
		errno = io->err;
		return -1;
	}
	io_tls_events(io);
	return 0;
}

static void
io_tls_readable(struct io *io)
{
	int	rc;

	if (io->handshaking) {
		rc = io_tls_handshake(io);
		if (rc == 1)
			io->cb(io, IO_EV_TLS_UP, io->arg);
		return;
	}
	if (io->write_wants_read) {
		io->write_wants_read = 0;
		if (io_tls_write(io) == -1) {
			io->cb(io, IO_EV_ERROR, io->arg);
			return;
		}
	}
	if (!io->reading)
		return;
	rc = io_tls_read(io);
	if (rc == 1) {
		io->cb(io, IO_EV_READ, io->arg);
		return;
	}
	if (rc == -1)
		io->cb(io, io->eof ? IO_EV_EOF : IO_EV_ERROR, io->arg);
}

static void
io_tls_writable(struct io *io)
{
	int	rc;

	if (io->handshaking) {
		rc = io_tls_handshake(io);
		if (rc == 1)
			io->cb(io, IO_EV_TLS_UP, io->arg);
		return;
	}
	if (io->read_wants_write) {
		io->read_wants_write = 0;
		io_tls_readable(io);
		return;
	}
	if (io_tls_write(io) == -1) {
		io->cb(io, IO_EV_ERROR, io->arg);
		return;
	}
	if (io->want_drained && evbuffer_get_length(io->out) <= io->lowat) {
		io->want_drained = 0;
		io->cb(io, IO_EV_DRAINED, io->arg);
	}
}
