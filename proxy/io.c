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
#include <stdlib.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

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
};

static void	io_read_cb(evutil_socket_t fd, short what, void *arg);
static void	io_write_cb(evutil_socket_t fd, short what, void *arg);

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
	if (io->fd >= 0)
		close(io->fd);
	free(io);
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
		if (event_add(io->rev, NULL) == 0)
			io->reading = 1;
	} else if (!on && io->reading) {
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

	if (io->writing || evbuffer_get_length(io->out) == 0)
		return 0;
	n = evbuffer_write(io->out, io->fd);
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

	n = evbuffer_write(io->out, fd);
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
